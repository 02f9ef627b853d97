/* result.c - encdec_result: tokens and sequences, built by transcription
 * and generation, read through the public accessors.
 *
 * Building: api_result_add_token appends to one token array (token texts
 * go to one NUL-separated string buffer); api_result_add_sequence names a
 * run of those tokens as a sequence; api_result_finish turns the offsets
 * into pointers once nothing grows any more.
 */
#include "api/api.h"
#include "base/err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static encdec_status grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return ENCDEC_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need && c < SIZE_MAX / 2) c *= 2;
    if (c > SIZE_MAX / elem) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result");
    void *q = realloc(*p, c * elem);
    if (!q) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result");
    *p = q;
    *cap = c;
    return ENCDEC_OK;
}

encdec_status api_result_add_str(encdec_result *r, const char *text, size_t len, size_t *off) {
    encdec_status st = grow((void **)&r->strs, &r->strs_cap, r->strs_len + len + 1, 1);
    if (st) return st;
    if (len) memcpy(r->strs + r->strs_len, text, len);
    r->strs[r->strs_len + len] = 0;
    *off = r->strs_len;
    r->strs_len += len + 1;
    return ENCDEC_OK;
}

encdec_status api_result_add_token(encdec_result *r, int id, float logprob, const char *text,
                                   size_t len, int window) {
    size_t off;
    encdec_status st = grow((void **)&r->tokens, &r->cap_tokens, r->n_tokens + 1, sizeof *r->tokens);
    if (!st) st = api_result_add_str(r, text, len, &off);
    if (st) return st;
    encdec_token *t = &r->tokens[r->n_tokens++];
    t->id = id;
    t->logprob = logprob;
    t->window = window;
    t->text = (const char *)(uintptr_t)off;   /* an offset until api_result_finish */
    return ENCDEC_OK;
}

encdec_status api_result_add_segment(encdec_result *r, const encdec_segment *seg, size_t text_off,
                                     size_t first_tok, size_t first_word) {
    encdec_status st = grow((void **)&r->segs, &r->cap_segs, r->n_segs + 1, sizeof *r->segs);
    if (st) return st;
    encdec_segment *q = &r->segs[r->n_segs++];
    *q = *seg;
    q->text = (const char *)(uintptr_t)text_off;
    q->tokens = (const encdec_token *)(uintptr_t)first_tok;
    q->words = (const encdec_word *)(uintptr_t)first_word;
    return ENCDEC_OK;
}

encdec_status api_result_add_word(encdec_result *r, size_t off, double start, double end,
                                  float probability) {
    encdec_status st = grow((void **)&r->words, &r->cap_words, r->n_words + 1, sizeof *r->words);
    if (st) return st;
    r->words[r->n_words++] = (encdec_word){(const char *)(uintptr_t)off, start, end, probability};
    return ENCDEC_OK;
}

encdec_status api_result_add_sequence(encdec_result *r, int input, int rank, float score,
                                      int first, int n_tokens, char *text) {
    encdec_status st = grow((void **)&r->seqs, &r->cap_seqs, r->n_seqs + 1, sizeof *r->seqs);
    if (st) {
        free(text);
        return st;
    }
    encdec_sequence *q = &r->seqs[r->n_seqs++];
    q->input = input;
    q->rank = rank;
    q->score = score;
    q->text = text;
    q->n_tokens = n_tokens;
    q->tokens = (const encdec_token *)(uintptr_t)first;   /* an offset until api_result_finish */
    return ENCDEC_OK;
}

/* rows as sequence i's in t, which grows to the result's n_seqs. */
static encdec_status set_rows(api_seq_rows *t, size_t n_seqs, int i, float *rows, int width, const char *what) {
    if (t->n < n_seqs) {
        float **a = realloc(t->rows, sizeof *a * n_seqs);
        int *c = a ? realloc(t->width, sizeof *c * n_seqs) : NULL;
        if (a) t->rows = a;
        if (!a || !c) {
            free(rows);
            return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", what);
        }
        t->width = c;
        for (size_t k = t->n; k < n_seqs; k++) t->rows[k] = NULL, t->width[k] = 0;
        t->n = n_seqs;
    }
    free(t->rows[i]);
    t->rows[i] = rows;
    t->width[i] = width;
    return ENCDEC_OK;
}

static const float *get_rows(const api_seq_rows *t, int i, int *width) {
    int ok = i >= 0 && (size_t)i < t->n && t->rows[i];
    if (width) *width = ok ? t->width[i] : 0;
    return ok ? t->rows[i] : NULL;
}

static void free_rows(api_seq_rows *t) {
    for (size_t i = 0; i < t->n; i++) free(t->rows[i]);
    free(t->rows);
    free(t->width);
}

encdec_status api_result_set_attention(encdec_result *r, int i, float *rows, int cols) {
    return set_rows(&r->att, r->n_seqs, i, rows, cols, "attention");
}

encdec_status api_result_set_logits(encdec_result *r, int i, float *rows, int n_vocab) {
    return set_rows(&r->lgt, r->n_seqs, i, rows, n_vocab, "logits");
}

void api_result_finish(encdec_result *r) {
    for (size_t i = 0; i < r->n_tokens; i++)
        r->tokens[i].text = r->strs + (uintptr_t)r->tokens[i].text;
    for (size_t i = 0; i < r->n_seqs; i++)
        r->seqs[i].tokens = r->tokens + (uintptr_t)r->seqs[i].tokens;
    for (size_t i = 0; i < r->n_words; i++) r->words[i].word = r->strs + (uintptr_t)r->words[i].word;
    for (size_t i = 0; i < r->n_segs; i++) {
        encdec_segment *g = &r->segs[i];
        g->text = r->strs + (uintptr_t)g->text;
        g->tokens = r->tokens + (uintptr_t)g->tokens;
        g->words = g->n_words ? r->words + (uintptr_t)g->words : NULL;
    }
}

encdec_status api_result_view(const encdec_result *r, size_t i, api_view *v, encdec_segment *out) {
    const encdec_segment *g = &r->segs[i];
    size_t first_tok = (uintptr_t)g->tokens, first_word = (uintptr_t)g->words;
    size_t need = (size_t)(g->n_tokens > g->n_words ? g->n_tokens : g->n_words) + 1;
    if (need > v->cap) {
        encdec_token *t = realloc(v->tok, need * sizeof *t);
        if (t) v->tok = t;
        encdec_word *w = t ? realloc(v->words, need * sizeof *w) : NULL;
        if (w) v->words = w;
        if (!t || !w) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: segment");
        v->cap = need;
    }
    for (int k = 0; k < g->n_tokens; k++) {
        v->tok[k] = r->tokens[first_tok + k];
        v->tok[k].text = r->strs + (uintptr_t)r->tokens[first_tok + k].text;
    }
    for (int k = 0; k < g->n_words; k++) {
        v->words[k] = r->words[first_word + k];
        v->words[k].word = r->strs + (uintptr_t)r->words[first_word + k].word;
    }
    *out = *g;
    out->text = r->strs + (uintptr_t)g->text;
    out->tokens = v->tok;
    out->words = g->n_words ? v->words : NULL;
    return ENCDEC_OK;
}

void api_view_free(api_view *v) {
    free(v->tok);
    free(v->words);
    memset(v, 0, sizeof *v);
}

const char *encdec_result_text(const encdec_result *r) {
    return r && r->n_seqs ? r->seqs[0].text : "";
}

int encdec_result_n_tokens(const encdec_result *r) { return r ? (int)r->n_tokens : 0; }

const encdec_token *encdec_result_token(const encdec_result *r, int i) {
    return r && i >= 0 && (size_t)i < r->n_tokens ? &r->tokens[i] : NULL;
}

int encdec_result_n_sequences(const encdec_result *r) { return r ? (int)r->n_seqs : 0; }

const encdec_sequence *encdec_result_sequence(const encdec_result *r, int i) {
    return r && i >= 0 && (size_t)i < r->n_seqs ? &r->seqs[i] : NULL;
}

int encdec_result_n_segments(const encdec_result *r) { return r ? (int)r->n_segs : 0; }

const encdec_segment *encdec_result_segment(const encdec_result *r, int i) {
    return r && i >= 0 && (size_t)i < r->n_segs ? &r->segs[i] : NULL;
}

const char *encdec_result_language(const encdec_result *r) { return r ? r->language : NULL; }

int encdec_result_n_language_probs(const encdec_result *r) { return r ? r->n_lang : 0; }

float encdec_result_language_probability(const encdec_result *r) { return r ? r->language_prob : 0; }

int encdec_result_language_prob(const encdec_result *r, int i, const char **code, float *prob) {
    if (!r || i < 0 || i >= r->n_lang) return -1;
    if (code) *code = r->lang_code[i];
    if (prob) *prob = r->lang_prob[i];
    return 0;
}

const encdec_timings *encdec_result_timings(const encdec_result *r) { return r ? &r->timings : NULL; }

const float *encdec_result_attention(const encdec_result *r, int i, int *n_cols) {
    if (!r) {
        if (n_cols) *n_cols = 0;
        return NULL;
    }
    return get_rows(&r->att, i, n_cols);
}

const float *encdec_result_logits(const encdec_result *r, int i, int *n_vocab) {
    if (!r) {
        if (n_vocab) *n_vocab = 0;
        return NULL;
    }
    return get_rows(&r->lgt, i, n_vocab);
}

void encdec_result_free(encdec_result *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_seqs; i++) free((char *)(uintptr_t)r->seqs[i].text);
    free(r->seqs);
    free(r->segs);
    free(r->words);
    free(r->tokens);
    free(r->strs);
    free_rows(&r->att);
    free_rows(&r->lgt);
    free(r);
}
