/* whisper_step.c - the seam's feed/step for Whisper, per cache mode. */
#include "models/whisper_step.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

encdec_status whisper_runner_init(whisper_runner *r, whisper_state *st, encdec_kv_mode mode) {
    memset(r, 0, sizeof *r);
    r->st = st;
    r->mode = mode;
    size_t slots = (size_t)st->n_slots, ctx = (size_t)st->m->hp.n_text_ctx, R = (size_t)st->max_rows;
    r->hist = ed_alloc(slots * ctx * sizeof(int), "token history");
    r->len = ed_calloc(slots * sizeof(int), "sequence lengths");
    r->r_tok = ed_alloc(R * sizeof(int), "rows");
    r->r_pos = ed_alloc(R * sizeof(int), "rows");
    r->r_slot = ed_alloc(R * sizeof(int), "rows");
    r->r_out = ed_alloc(R * sizeof(int), "rows");
    if (!r->hist || !r->len || !r->r_tok || !r->r_pos || !r->r_slot || !r->r_out) {
        whisper_runner_free(r);
        return ENCDEC_ERR_NOMEM;
    }
    return ENCDEC_OK;
}

void whisper_runner_free(whisper_runner *r) {
    free(r->hist);
    free(r->len);
    free(r->r_tok);
    free(r->r_pos);
    free(r->r_slot);
    free(r->r_out);
    memset(r, 0, sizeof *r);
}

void whisper_runner_begin(whisper_runner *r, encdec_kv_mode mode) {
    r->mode = mode;
    memset(r->len, 0, (size_t)r->st->n_slots * sizeof *r->len);
    if (mode == ENCDEC_KV_FULL) whisper_cross_compute(r->st);
}

int whisper_runner_len(const whisper_runner *r, int seq) { return r->len[seq]; }

static encdec_status check_room(const whisper_runner *r, int seq, int n) {
    int ctx = r->st->m->hp.n_text_ctx;
    if (seq < 0 || seq >= r->st->n_slots)
        return ed_fail(ENCDEC_ERR_ARG, "sequence %d out of range 0..%d", seq, r->st->n_slots - 1);
    if (n < 1 || r->len[seq] + n > ctx)
        return ed_fail(ENCDEC_ERR_ARG, "sequence %d: %d + %d tokens exceed the %d decoder positions",
                       seq, r->len[seq], n, ctx);
    return ENCDEC_OK;
}

/* Rows for tokens[0, n) of seq; in NONE mode preceded by its whole history. */
static int build_rows(whisper_runner *r, int at, int seq, const int *tokens, int n) {
    int ctx = r->st->m->hp.n_text_ctx;
    int *h = r->hist + (size_t)seq * ctx;
    if (r->mode == ENCDEC_KV_NONE)
        for (int p = 0; p < r->len[seq]; p++, at++) {
            r->r_tok[at] = h[p];
            r->r_pos[at] = p;
            r->r_slot[at] = seq;
        }
    for (int i = 0; i < n; i++, at++) {
        r->r_tok[at] = tokens[i];
        r->r_pos[at] = r->len[seq] + i;
        r->r_slot[at] = seq;
        h[r->len[seq] + i] = tokens[i];
    }
    r->len[seq] += n;
    return at;
}

static encdec_status feed(void *ctx, int seq, const int *tokens, int n, float *logits) {
    whisper_runner *r = ctx;
    encdec_status st = check_room(r, seq, n);
    if (st) return st;
    if (r->mode != ENCDEC_KV_FULL) whisper_cross_compute(r->st);
    int R = build_rows(r, 0, seq, tokens, n);
    r->r_out[0] = R - 1;
    whisper_decode(r->st, R, r->r_tok, r->r_pos, r->r_slot, 1, r->r_out, logits);
    return ENCDEC_OK;
}

static encdec_status step(void *ctx, int n_seq, const int *seq, const int *token, float *logits) {
    whisper_runner *r = ctx;
    for (int i = 0; i < n_seq; i++) {
        encdec_status st = check_room(r, seq[i], 1);
        if (st) return st;
    }
    if (r->mode == ENCDEC_KV_NONE) {   /* every sequence reruns its own prefix */
        for (int i = 0; i < n_seq; i++) {
            encdec_status st = feed(ctx, seq[i], &token[i], 1, logits + (size_t)i * r->st->m->hp.n_vocab);
            if (st) return st;
        }
        return ENCDEC_OK;
    }
    if (r->mode == ENCDEC_KV_SELF) whisper_cross_compute(r->st);
    int R = 0;
    for (int i = 0; i < n_seq; i++) {
        r->r_out[i] = R;
        R = build_rows(r, R, seq[i], &token[i], 1);
    }
    whisper_decode(r->st, R, r->r_tok, r->r_pos, r->r_slot, n_seq, r->r_out, logits);
    return ENCDEC_OK;
}

dec_model whisper_runner_seam(whisper_runner *r) {
    dec_model dm = {r, r->st->m->hp.n_vocab, feed, step, NULL};
    return dm;
}
