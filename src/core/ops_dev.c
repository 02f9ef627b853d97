/* ops_dev.c - the ops' device branches (core/ops_dev.h): each maps an op's
 * arguments onto its twin in cuda/cuda.h, staging the small host arrays. */
#include "core/ops_dev.h"

#ifdef ENCDEC_HAVE_CUDA
#include "cuda/cuda.h"

#include <stdio.h>
#include <stdlib.h>

#define G(d) ((cu_dev *)(d))

void od_unsupported(void *d, const char *what) { cu_fail(G(d), what); }

/* A weight as the device runs it: plain row-major f32 / f16 / bf16, or
 * int8 in the device's layout (what the models' uploads leave); the CPU's
 * packed layouts are not. */
static int dev_w(void *d, k_w w, cu_w *out) {
    if (w.t != K_F32 && w.t != K_F16 && w.t != K_BF16 && w.t != K_Q8) {
        cu_fail(G(d), "a weight in a CPU-only layout (packed) reached the device");
        return 0;
    }
    out->p = w.p;
    out->t = (cu_type)w.t;
    return 1;
}

static int epi_of(int epi) {
    return ((epi & K_GEMM_GELU) ? CU_EPI_GELU : 0) | ((epi & K_GEMM_ACC) ? CU_EPI_ACC : 0);
}

void od_matmul_w(void *d, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                 int M, int N, int K, int epi) {
    cu_w cw;
    if (M <= 0 || !dev_w(d, w, &cw)) return;
    cu_bind(G(d));
    cu_matmul(G(d), y, ldy, x, ldx, cw, b, M, N, K, epi_of(epi));
}

void od_matmul_w_inv(void *d, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                     int M, int N, int K) {
    cu_w cw;
    if (M <= 0 || !dev_w(d, w, &cw)) return;
    cu_bind(G(d));
    cu_matmul_inv(G(d), y, ldy, x, ldx, cw, b, M, N, K);
}

void od_matmul_f(void *d, float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                 const float *b, int M, int N, int K) {
    if (ldw != K) {
        cu_fail(G(d), "a strided f32 weight reached the device");
        return;
    }
    cu_w cw = {w, CU_F32};
    if (M > 0) cu_matmul(G(d), y, ldy, x, ldx, cw, b, M, N, K, 0);
}

void od_matmul_win(void *d, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                   int M, int N, int K, int epi, float *col) {
    if (ldx < K) {
        cu_windows(G(d), col, x, ldx, M, K);
        x = col;
        ldx = K;
    }
    od_matmul_w(d, y, ldy, x, ldx, w, b, M, N, K, epi & K_GEMM_GELU);
}

void od_layernorm(void *d, float *y, const float *x, const float *g, const float *b, int M, int D,
                  float eps) {
    cu_layernorm(G(d), y, x, g, b, M, D, eps);
}

void od_rmsnorm(void *d, float *y, const float *x, const float *g, int M, int D, float eps) {
    cu_rmsnorm(G(d), y, x, g, M, D, eps);
}

void od_ffn_act(void *d, float *h, int ld, int M, int F, int act, int gated) {
    cu_ffn_act(G(d), h, ld, M, F, act, gated);
}

void od_add(void *d, float *y, const float *x, size_t n) { cu_add(G(d), y, x, n); }

void od_attention(void *d, float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                  const float *v, int ldv, int Mq, int Tk, int n_head, int dh, float scale,
                  int causal) {
    cu_attention(G(d), o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, n_head, dh, scale, causal);
}

/* Row r reads c[row_cache[r]]: the caches' device addresses, valid frames
 * and lengths staged as arrays over the caches the rows name (the others'
 * entries NULL and 0). */
void od_attention_cross(void *d, float *o, int ldo, const float *q, int ldq, const kv_cross *c,
                        const int *row_cache, int l, int Mq, float scale) {
    if (Mq <= 0) return;
    int n = 1;
    if (row_cache)
        for (int r = 0; r < Mq; r++)
            if (row_cache[r] + 1 > n) n = row_cache[r] + 1;
    const void **ptr = calloc((size_t)n, sizeof *ptr);
    int *nv = calloc((size_t)2 * n, sizeof *nv), *nc = nv ? nv + n : NULL;
    if (!ptr || !nv) {
        free(ptr);
        free(nv);
        cu_fail(G(d), "cross attention: out of host memory");
        return;
    }
    /* Only the caches a row reads: the others are an engine's idle places,
     * unset or being freed by their requests' threads as this pass runs
     * (sched.c sch_client_free), never to be touched here. nc marks them
     * first. */
    if (row_cache)
        for (int r = 0; r < Mq; r++) nc[row_cache[r]] = 1;
    else
        nc[0] = 1;
    const kv_cross *c0 = &c[row_cache ? row_cache[0] : 0];
    int max_valid = 0;
    for (int i = 0; i < n; i++) {
        if (!nc[i]) continue;
        ptr[i] = c[i].kv;
        nv[i] = c[i].kv ? c[i].n_valid : 0;
        nc[i] = c[i].kv ? c[i].n_ctx : 0;
        if (nv[i] > max_valid) max_valid = nv[i];
        if (c[i].kv && (c[i].type != c0->type || c[i].n_head != c0->n_head || c[i].dh != c0->dh))
            cu_fail(G(d), "cross caches of different types or shapes in one pass");
    }
    const void *const *dptr = cu_stage(G(d), ptr, (size_t)n * sizeof *ptr);
    const int *dnv = cu_stage(G(d), nv, (size_t)2 * n * sizeof *nv), *dnc = dnv ? dnv + n : NULL;
    const int *drc = row_cache ? cu_stage(G(d), row_cache, (size_t)Mq * sizeof(int)) : NULL;
    free(ptr);
    free(nv);
    if (!dptr || !dnv || (row_cache && !drc)) return;
    cu_attention_cross(G(d), o, ldo, q, ldq, dptr, dnv, (cu_type)c0->type, drc, l, c0->n_head,
                       dnc, c0->dh, max_valid, Mq, scale);
}

/* The pass's rows: up to the last segment's end; the two host tables staged. */
void od_attention_seg(void *d, float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                      const float *v, int ldv, int n_seg, const int *seg_start, const int *seg_len,
                      int n_head, int dh, float scale, const float *bias, size_t bias_hstride,
                      int bias_center) {
    int rows = 0, max_len = 0;
    for (int i = 0; i < n_seg; i++) {
        if (seg_start[i] + seg_len[i] > rows) rows = seg_start[i] + seg_len[i];
        if (seg_len[i] > max_len) max_len = seg_len[i];
    }
    if (rows <= 0) return;
    cu_bind(G(d));
    const int *ds = cu_stage(G(d), seg_start, (size_t)n_seg * sizeof(int));
    const int *dl = cu_stage(G(d), seg_len, (size_t)n_seg * sizeof(int));
    if (!ds || !dl) return;
    cu_attention_seg(G(d), o, ldo, q, ldq, k, ldk, v, ldv, rows, n_seg, ds, dl, max_len, n_head, dh,
                     scale, bias, bias_hstride, bias_center);
}

void od_attention_tab(void *d, float *o, int ldo, const float *q, int ldq, const float *kc,
                      const float *vc, size_t slot_stride, int ld, int R, const int *pos,
                      const int *tab, const int *tab_row, int tab_ld, int n_head, int dh,
                      float scale, const float *bias, size_t bias_hstride, int bias_center) {
    if (R <= 0) return;
    int n_tab = 0;
    for (int r = 0; r < R; r++)
        if (tab_row[r] + 1 > n_tab) n_tab = tab_row[r] + 1;
    const int *dpos = cu_stage(G(d), pos, (size_t)R * sizeof(int));
    const int *dtab = cu_stage(G(d), tab, (size_t)n_tab * tab_ld * sizeof(int));
    const int *drow = cu_stage(G(d), tab_row, (size_t)R * sizeof(int));
    if (!dpos || !dtab || !drow) return;
    cu_attention_tab(G(d), o, ldo, q, ldq, kc, vc, slot_stride, ld, R, dpos, dtab, drow, tab_ld,
                     n_head, dh, scale, bias, bias_hstride, bias_center);
}

void od_im2col_1d(void *d, float *col, const float *x, int x_chan_major, int C_in, int T_in,
                  int kw, int stride, int pad, int T_out) {
    if (!(x_chan_major && kw == 1 && stride == 1 && pad == 0 && T_out == T_in)) {
        cu_fail(G(d), "im2col other than the mel's transpose");
        return;
    }
    cu_transpose(G(d), col, x, C_in, T_in);
}

void od_embed(void *d, float *x, k_w emb, const int *tok, const float *pos_emb, const int *pos,
              int R, int dm) {
    cu_w cw;
    cu_bind(G(d));
    if (R <= 0 || !dev_w(d, emb, &cw)) return;
    const int *dtok = cu_stage(G(d), tok, (size_t)R * sizeof(int));
    const int *dpos = pos_emb ? cu_stage(G(d), pos, (size_t)R * sizeof(int)) : NULL;
    if (!dtok || (pos_emb && !dpos)) return;
    cu_embed(G(d), x, cw, dtok, pos_emb, dpos, R, dm);
}

void od_kv_self_put(void *d, const kv_self *c, int l, const float *qkv, int ldqkv, int koff,
                    int voff, int R, const int *pos, const int *slot) {
    if (R <= 0) return;
    const int *dpos = cu_stage(G(d), pos, (size_t)R * sizeof(int));
    const int *dslot = cu_stage(G(d), slot, (size_t)R * sizeof(int));
    if (!dpos || !dslot) return;
    cu_kv_self_put(G(d), kv_self_k(c, l, 0), kv_self_v(c, l, 0), (size_t)c->n_ctx * c->d, qkv,
                   ldqkv, koff, voff, R, dpos, dslot, c->d);
}

void od_norm_rows(void *d, float *y, const float *x, const int *rows, int n, const float *g,
                  const float *b, int D, float eps, int rms) {
    if (n <= 0) return;
    const int *dr = cu_stage(G(d), rows, (size_t)n * sizeof(int));
    if (!dr) return;
    if (rms) cu_rmsnorm_gather(G(d), y, x, dr, n, g, D, eps);
    else cu_layernorm_gather(G(d), y, x, dr, n, g, b, D, eps);
}

void od_scale(void *d, float *x, size_t n, float s) { cu_scale(G(d), x, n, s); }
void od_zero(void *d, float *x, size_t n) {
    cu_bind(G(d));
    cu_memset0(G(d), x, n * sizeof(float));
}

/* Input i is the pass's tokens [start[i], start[i] + len[i]); the pass's
 * rows are tokens [t0, t0 + rows): each input's share of them goes to its
 * cache at frame token - start[i]. */
void od_cross_fill(void *d, const kv_cross *c, int n, const int *start, const int *len,
                   const float *src, size_t ld, int t0, int rows) {
    for (int i = 0; i < n; i++) {
        int lo = start[i] > t0 ? start[i] : t0;
        int hi = start[i] + len[i] < t0 + rows ? start[i] + len[i] : t0 + rows;
        if (hi <= lo) continue;
        cu_cross_put(G(d), c[i].kv, (cu_type)c[i].type, c[i].n_layer, c[i].n_head, c[i].n_ctx,
                     c[i].dh, src + (size_t)(lo - t0) * ld, ld, lo - start[i], hi - lo);
    }
}
#endif
