/* gen_stream.c - token-by-token delivery of a generation (gen_stream.h). */
#include "api/gen_stream.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

encdec_status gen_text(const spm_tok *tok, const int *ids, int n, char **text) {
    int *kept = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)), k = 0, V = spm_n_vocab(tok);
    if (!kept) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    for (int i = 0; i < n; i++)
        if (ids[i] < V) kept[k++] = ids[i];
    encdec_status st = spm_decode(tok, kept, k, 1, text);
    free(kept);
    return st;
}

encdec_status gen_stream_init(gen_stream *g, const spm_tok *tok, int eos,
                              const encdec_generate_params *p, int n_out, const int *toks,
                              const float *lps) {
    *g = (gen_stream){tok, p->on_token, p->user, eos, n_out, p->num_return_sequences,
                      p->max_new_tokens, toks, lps, NULL, NULL};
    g->done = calloc((size_t)n_out, sizeof *g->done);
    g->sent = calloc((size_t)n_out, sizeof *g->sent);
    if (!g->done || !g->sent) {
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

int gen_stream_flush(gen_stream *g, const int *len) {
    for (int i = 0; i < g->n_out; i++) {
        const int *ids = g->toks + (size_t)i * g->max_new;
        for (int j = g->done[i]; j < len[i]; j++) {
            char *text = NULL;
            if (gen_text(g->tok, ids, j + 1, &text)) return 1;
            int last = ids[j] == g->eos || j + 1 == g->max_new;
            size_t n = final_bytes(text, strlen(text), last), at = g->sent[i];
            char *piece = text + (at < n ? at : n);
            piece[at < n ? n - at : 0] = 0;
            int stop = g->fn(i / g->n_ret, i % g->n_ret, ids[j], g->lps[(size_t)i * g->max_new + j],
                             piece, g->user);
            if (n > at) g->sent[i] = n;
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
    g->done = NULL;
    g->sent = NULL;
}
