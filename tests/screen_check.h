/* screen_check.h - the text families' screened-logits check (models/screen.h):
 * two runners over two states of one model decode the same inputs in
 * lockstep, teacher-forced (all inputs stepped together), the first
 * unscreened and the second screened:
 *
 *   rn_screen(&r1, 1);
 *   screen_lockstep(&d0, &d1, B, N, start, greedy_tokens, greedy_len);
 *
 * Every logit of every screened row is within its row's bound of the exact
 * value (logit_exact over the whole vocabulary); the exact values are the
 * unscreened pass's bit for bit; and the screen moved most logits (so it
 * ran). Adds to check.h's counts. */
#ifndef ED_SCREEN_CHECK_H
#define ED_SCREEN_CHECK_H

#include "check.h"

#include "decode/search.h"
#include "io/tensor.h"
#include "kern/matmul_hp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The output projection as a loaded model multiplies by it on a vector
 * kernel set: halves repacked panel-major (models/wload.c's wl_panelize does
 * this at load through the API; the golden tests load by the family's own
 * loader), in memory owned by wt; f32 as it is. */
static inline k_w screen_matrix(ed_wtab *wt, k_w w, int N, int K) {
    if (w.t != K_F16 && w.t != K_BF16) return w;
    uint16_t *dst = wtab_alloc(wt, k_hp_bytes(N, K), "test panel");
    CHECK(dst && k_hp_pack(dst, w, N, K) == 0);
    k_w out = {dst, w.t == K_F16 ? K_F16P : K_BF16P, 0};
    return out;
}

/* B packed inputs (ids of n_tokens, start, len) and their golden greedy
 * tokens (gt [B, N], gl [B]) reps times over: R = reps B inputs. */
typedef struct {
    int *ids, *start, *len, *gt, *gl;
    int R, n;
} screen_reps;

static inline screen_reps screen_repeat(const int *ids, const int *start, const int *len, int n_tokens,
                                        int B, const int *gt0, const int *gl0, int N, int reps) {
    screen_reps r = {NULL, NULL, NULL, NULL, NULL, reps * B, reps * n_tokens};
    r.ids = malloc(sizeof(int) * (size_t)r.n), r.start = malloc(sizeof(int) * (size_t)r.R);
    r.len = malloc(sizeof(int) * (size_t)r.R), r.gt = malloc(sizeof(int) * (size_t)r.R * N);
    r.gl = malloc(sizeof(int) * (size_t)r.R);
    for (int k = 0; k < reps; k++) {
        memcpy(r.ids + (size_t)k * n_tokens, ids, sizeof(int) * (size_t)n_tokens);
        for (int b = 0; b < B; b++) {
            r.start[k * B + b] = start[b] + k * n_tokens;
            r.len[k * B + b] = len[b];
            r.gl[k * B + b] = gl0[b];
            memcpy(r.gt + (size_t)(k * B + b) * N, gt0 + (size_t)b * N, sizeof(int) * (size_t)N);
        }
    }
    return r;
}

static inline void screen_reps_free(screen_reps *r) {
    free(r->ids), free(r->start), free(r->len), free(r->gt), free(r->gl);
}

typedef struct {
    long moved, differ, n;   /* logits the screen changed, exact ones other than ref's, all */
    double worst;            /* the largest deviation as a fraction of its row's bound */
} screen_tally;

/* Row i of d1's last pass (row) against ref, the same row unscreened. */
static inline void screen_row(dec_model *d1, int i, const float *row, const float *ref, float *ex,
                              const int *ids, screen_tally *t) {
    size_t V = (size_t)d1->n_vocab;
    float err = d1->logit_err(d1->ctx, i);
    CHECK(err > 0);
    d1->logit_exact(d1->ctx, i, ids, (int)V, ex);
    for (size_t v = 0; v < V; v++) {
        double dv = fabs((double)row[v] - ex[v]);
        t->moved += dv > 0;
        t->differ += memcmp(&ex[v], &ref[v], sizeof(float)) != 0;
        if (err > 0 && dv / err > t->worst) t->worst = dv / err;
    }
    t->n += (long)V;
}

/* B inputs (sequences 0..B-1), start fed, then the golden greedy tokens
 * gt[b * N + n] (gl[b] of them) as teacher. */
static inline void screen_lockstep(dec_model *d0, dec_model *d1, int B, int N, int start,
                                   const int *gt, const int *gl) {
    size_t V = (size_t)d0->n_vocab;
    float *l0 = malloc(sizeof(float) * (size_t)B * V), *l1 = malloc(sizeof(float) * (size_t)B * V);
    float *ex = malloc(sizeof(float) * V);
    int *ids = malloc(sizeof(int) * V), seq[16], tok[16];
    for (size_t v = 0; v < V; v++) ids[v] = (int)v;
    screen_tally t = {0, 0, 0, 0};
    CHECK_EQ_INT(dec_feed_all(d0, B, &start, 1, l0), ENCDEC_OK);
    CHECK_EQ_INT(dec_feed_all(d1, B, &start, 1, l1), ENCDEC_OK);
    for (int b = 0; b < B; b++) screen_row(d1, b, l1 + b * V, l0 + b * V, ex, ids, &t);
    for (int n = 1; n < N; n++) {
        int k = 0;
        for (int b = 0; b < B && k < 16; b++)
            if (n < gl[b]) {
                seq[k] = b;
                tok[k++] = gt[b * N + n - 1];
            }
        if (!k) break;
        CHECK_EQ_INT(d0->step(d0->ctx, k, seq, tok, l0), ENCDEC_OK);
        CHECK_EQ_INT(d1->step(d1->ctx, k, seq, tok, l1), ENCDEC_OK);
        for (int i = 0; i < k; i++) screen_row(d1, i, l1 + i * V, l0 + i * V, ex, ids, &t);
    }
    printf("  screened logits: %ld of %ld moved by the screen, the worst at %.3f of its bound; "
           "exact values other than the unscreened pass's: %ld\n", t.moved, t.n, t.worst, t.differ);
    CHECK(t.worst <= 1.0);
    CHECK(t.moved > t.n / 10);
    CHECK_EQ_INT((int)t.differ, 0);
    free(l0), free(l1), free(ex), free(ids);
}

#endif
