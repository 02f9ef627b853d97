/* gen_stream.c - token-by-token delivery of a generation (gen_stream.h). */
#include "api/gen_stream.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

encdec_status gen_text(const ed_ttok *tok, const int *ids, int n, char **text) {
    return ttok_decode(tok, ids, n, text);
}

encdec_status gen_stream_init(gen_stream *g, const ed_ttok *tok, int eos,
                              const encdec_generate_params *p, int n_out, const int *toks,
                              const float *lps) {
    *g = (gen_stream){tok, p->on_token, p->user, eos, n_out, p->num_return_sequences,
                      p->max_new_tokens, toks, lps, p->end_tokens, p->n_end_tokens, NULL, NULL, NULL};
    g->done = calloc((size_t)n_out, sizeof *g->done);
    g->sent = calloc((size_t)n_out, sizeof *g->sent);
    g->whole = calloc((size_t)n_out, sizeof *g->whole);
    if (!g->done || !g->sent || !g->whole) {
        gen_stream_free(g);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: token stream");
    }
    return ENCDEC_OK;
}

/* Bytes of text that are final: all of it at the sequence's end, else all
 * but the trailing U+FFFD (EF BF BD) a later token may still complete. */
static size_t final_bytes(const char *text, size_t n, int last) {
    if (last) return n;
    while (n >= 3 && !memcmp(text + n - 3, "\xef\xbf\xbd", 3)) n -= 3;
    return n;
}

/* The text token j adds, from it and its neighbour alone, where that is
 * exact: both normal pieces (no byte fallback, sentinel or skipped token
 * between them), the neighbour's text nonempty when decoded alone (its
 * leading-space rule then affects only it) and the pair's text starting
 * with it. What the decoders do with a sequence's ends (the first word's
 * space dropped, sentencepiece's strip of both ends) then cancels out, and
 * the pair's rest is what the whole sequence's text gains. *pair: malloc'd,
 * the piece at pair + *at; 0 when not exact (decode the whole sequence). */
static int local_piece(const gen_stream *g, const int *ids, int j, char **pair, size_t *at) {
    *pair = NULL;
    if (j < 1 || !ttok_is_normal(g->tok, ids[j]) || !ttok_is_normal(g->tok, ids[j - 1])) return 0;
    char *one = NULL;
    if (gen_text(g->tok, ids + j - 1, 1, &one)) return 0;
    size_t n1 = strlen(one);
    int ok = n1 > 0 && !gen_text(g->tok, ids + j - 1, 2, pair) && !strncmp(*pair, one, n1);
    free(one);
    /* a U+FFFD at the end: the whole sequence decides what is held back */
    if (ok && final_bytes(*pair, strlen(*pair), 0) != strlen(*pair)) ok = 0;
    if (!ok) {
        free(*pair);
        *pair = NULL;
        return 0;
    }
    *at = n1;
    return 1;
}

/* 1 when id is one of the caller's end tokens. */
static int an_end(const gen_stream *g, int id) {
    for (int k = 0; k < g->n_ends; k++)
        if (g->ends[k] == id) return 1;
    return 0;
}

int gen_stream_flush(gen_stream *g, const int *len) {
    for (int i = 0; i < g->n_out; i++) {
        const int *ids = g->toks + (size_t)i * g->max_new;
        for (int j = g->done[i]; j < len[i]; j++) {
            int end = an_end(g, ids[j]);
            int last = (g->n_ends ? end : ids[j] == g->eos) || j + 1 == g->max_new;
            char *text = NULL, *piece;
            size_t at;
            if (end) {   /* the sequence ends on it: the text held back goes out, not its */
                if (gen_text(g->tok, ids, j, &text)) return 1;
                size_t s = g->sent[i], full = strlen(text);
                piece = text + (s < full ? s : full);
                g->sent[i] = full;
                int stop = g->fn(i / g->n_ret, i % g->n_ret, ids[j], g->lps[(size_t)i * g->max_new + j],
                                 piece, g->user);
                free(text);
                g->done[i] = j + 1;
                if (stop) return 1;
                continue;
            }
            /* nothing held back: most tokens' text follows from their neighbour;
             * else (and for the first) the whole sequence is decoded again */
            if (g->whole[i] && local_piece(g, ids, j, &text, &at)) {
                piece = text + at;
                g->sent[i] += strlen(piece);
            } else {
                if (gen_text(g->tok, ids, j + 1, &text)) return 1;
                size_t full = strlen(text), n = final_bytes(text, full, last), s = g->sent[i];
                piece = text + (s < n ? s : n);
                piece[s < n ? n - s : 0] = 0;
                if (n > s) g->sent[i] = n;
                g->whole[i] = n == full;
            }
            int stop = g->fn(i / g->n_ret, i % g->n_ret, ids[j], g->lps[(size_t)i * g->max_new + j],
                             piece, g->user);
            free(text);
            g->done[i] = j + 1;
            if (stop) return 1;
        }
    }
    return 0;
}

void gen_stream_free(gen_stream *g) {
    free(g->done);
    free(g->sent);
    free(g->whole);
    g->done = NULL;
    g->sent = NULL;
    g->whole = NULL;
}
