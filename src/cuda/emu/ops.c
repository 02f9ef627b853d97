/* ops.c - the emulated device's kernels (emu.h): each checks that its
 * pointers are device memory of the extent its shape implies, then runs its
 * CPU twin (core/ops.h, kern/) on the device's own pool inside a kernel span. */
#include "cuda/emu/emu.h"
#include "core/kvcache.h"
#include "core/ops.h"
#include "kern/gemm.h"
#include "base/half.h"
#include "kern/kern.h"
#include "kern/q8.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of an M x N block of 4-byte elements ld apart. */
static size_t blk(int M, int N, int ld) {
    return M <= 0 || N <= 0 ? 0 : ((size_t)(M - 1) * (size_t)ld + (size_t)N) * 4;
}
static size_t wbytes(cu_w w, int N, int K) {
    if (w.t == CU_Q8) return (size_t)N * k_q8_dev_row_bytes(K);
    return (size_t)N * (size_t)K * (w.t == CU_F32 ? 4 : 2);
}
#define DP(g, p, n, what) emu_dev_ptr((g), (p), (n), (what))
#define IDX(n) ((size_t)(n) * sizeof(int))

static k_w kw_of(cu_w w) {
    k_w k = {w.p, w.t == CU_F32 ? K_F32 : w.t == CU_F16 ? K_F16 : K_BF16, 0};
    return k;
}

/* As the device's kernels: a range over CU_ATT_MAX_KEYS fails, named. */
static int keys_fit(cu_dev *g, int n, const char *what) {
    if (n <= CU_ATT_MAX_KEYS) return 1;
    cu_fail(g, what);
    return 0;
}

/* int8 weights (the device layout): the product as k_matmul_q8 (its twin
 * on that layout), then y's old value added and GELU, as op_matmul_w_ex. */
static void matmul_q8(cu_dev *g, float *y, int ldy, const float *x, int ldx, const void *w,
                      const float *b, int M, int N, int K, int epi) {
    float *t = emu_scratch(g, (size_t)M * N);
    if (!t) return;
    emu_enter();
    k_matmul_q8_dev_ref(t, N, x, ldx, w, b, M, N, K);
    for (int i = 0; i < M; i++) {
        float *yr = y + (size_t)i * ldy;
        if (epi & CU_EPI_ACC) k_add(yr, t + (size_t)i * N, (size_t)N);
        else memcpy(yr, t + (size_t)i * N, (size_t)N * sizeof(float));
        if (epi & CU_EPI_GELU) k_gelu(yr, (size_t)N);
    }
    emu_leave();
}

void cu_matmul(cu_dev *g, float *y, int ldy, const float *x, int ldx, cu_w w, const float *b,
               int M, int N, int K, int epi) {
    if (M <= 0) return;
    if (!DP(g, y, blk(M, N, ldy), "matmul y") || !DP(g, x, blk(M, K, ldx), "matmul x") ||
        !DP(g, w.p, wbytes(w, N, K), "matmul w") || !DP(g, b, b ? (size_t)N * 4 : 0, "matmul b"))
        return;
    if (w.t == CU_Q8) {
        matmul_q8(g, y, ldy, x, ldx, w.p, b, M, N, K, epi);
        return;
    }
    int e = ((epi & CU_EPI_GELU) ? K_GEMM_GELU : 0) | ((epi & CU_EPI_ACC) ? K_GEMM_ACC : 0);
    /* [M, N] for the accumulation, then (halves) x in the weight's type, as cublasGemmEx takes it */
    size_t nt = (epi & CU_EPI_ACC) ? (size_t)M * N : 0, nx = w.t == CU_F32 ? 0 : (size_t)M * K;
    float *tmp = nt + nx ? emu_scratch(g, nt + nx) : NULL;
    if (nt + nx && !tmp) return;
    emu_enter();
    if (nx) {
        float *xh = tmp + nt;
        for (int r = 0; r < M; r++)
            for (int c = 0; c < K; c++) {
                float v = x[(size_t)r * ldx + c];
                xh[(size_t)r * K + c] = w.t == CU_F16 ? ed_h2f(ed_f2h(v)) : ed_bf2f(ed_f2bf(v));
            }
        x = xh;
        ldx = K;
    }
    op_matmul_w_ex(g->pool, y, ldy, x, ldx, kw_of(w), b, M, N, K, e, nt ? tmp : NULL);
    emu_leave();
}

void cu_matmul_inv(cu_dev *g, float *y, int ldy, const float *x, int ldx, cu_w w, const float *b,
                   int M, int N, int K) {
    if (M <= 0) return;
    if (!DP(g, y, blk(M, N, ldy), "matmul_inv y") || !DP(g, x, blk(M, K, ldx), "matmul_inv x") ||
        !DP(g, w.p, wbytes(w, N, K), "matmul_inv w") ||
        !DP(g, b, b ? (size_t)N * 4 : 0, "matmul_inv b"))
        return;
    if (w.t == CU_Q8) {
        matmul_q8(g, y, ldy, x, ldx, w.p, b, M, N, K, 0);
        return;
    }
    float *xr = NULL;
    if (CU_INV_TC(w.t, K)) {   /* the tensor-core kernel's input: x in the weight's type */
        xr = malloc(sizeof(float) * (size_t)M * K);
        if (!xr) {
            cu_fail(g, "matmul (batch-invariant): out of host memory");
            return;
        }
    }
    emu_enter();
    if (xr) {
        for (int r = 0; r < M; r++)
            for (int k = 0; k < K; k++) {
                float v = x[(size_t)r * ldx + k];
                xr[(size_t)r * K + k] = w.t == CU_F16 ? ed_h2f(ed_f2h(v)) : ed_bf2f(ed_f2bf(v));
            }
        op_matmul_w_inv(g->pool, y, ldy, xr, K, kw_of(w), b, M, N, K);
    } else {
        op_matmul_w_inv(g->pool, y, ldy, x, ldx, kw_of(w), b, M, N, K);
    }
    emu_leave();
    free(xr);
}

void cu_layernorm(cu_dev *g, float *y, const float *x, const float *gamma, const float *beta,
                  int M, int D, float eps) {
    if (!DP(g, y, blk(M, D, D), "layernorm y") || !DP(g, x, blk(M, D, D), "layernorm x") ||
        !DP(g, gamma, (size_t)D * 4, "layernorm gamma") || !DP(g, beta, (size_t)D * 4, "layernorm beta"))
        return;
    emu_enter();
    op_layernorm(g->pool, y, x, gamma, beta, M, D, eps);
    emu_leave();
}

/* The rows a gather reads: each inside x (whose extent the kernel does not know: its start). */
static int rows_ok(cu_dev *g, const int *rows, int n, const float *x, int D, const char *what) {
    if (!DP(g, rows, IDX(n), what)) return 0;
    emu_enter();
    int ok = 1, worst = 0;
    for (int i = 0; i < n; i++)
        if (rows[i] < 0) ok = 0;
        else if (rows[i] > worst) worst = rows[i];
    emu_leave();
    return ok && DP(g, x, blk(worst + 1, D, D), what);
}

void cu_layernorm_gather(cu_dev *g, float *y, const float *x, const int *rows, int n,
                         const float *gamma, const float *beta, int D, float eps) {
    if (n <= 0 || !DP(g, y, blk(n, D, D), "layernorm_gather y") ||
        !rows_ok(g, rows, n, x, D, "layernorm_gather rows") ||
        !DP(g, gamma, (size_t)D * 4, "layernorm_gather gamma") ||
        !DP(g, beta, (size_t)D * 4, "layernorm_gather beta"))
        return;
    emu_enter();
    op_layernorm_rows(g->pool, y, x, rows, n, gamma, beta, D, eps);
    emu_leave();
}

void cu_rmsnorm_gather(cu_dev *g, float *y, const float *x, const int *rows, int n,
                       const float *gamma, int D, float eps) {
    if (n <= 0 || !DP(g, y, blk(n, D, D), "rmsnorm_gather y") ||
        !rows_ok(g, rows, n, x, D, "rmsnorm_gather rows") ||
        !DP(g, gamma, (size_t)D * 4, "rmsnorm_gather gamma"))
        return;
    emu_enter();
    op_rmsnorm_rows(g->pool, y, x, rows, n, gamma, D, eps);
    emu_leave();
}

void cu_scale(cu_dev *g, float *x, size_t n, float s) {
    if (!n || !DP(g, x, n * 4, "scale")) return;
    emu_enter();
    op_scale(g->pool, x, n, s);
    emu_leave();
}

void cu_rmsnorm(cu_dev *g, float *y, const float *x, const float *gamma, int M, int D, float eps) {
    if (!DP(g, y, blk(M, D, D), "rmsnorm y") || !DP(g, x, blk(M, D, D), "rmsnorm x") ||
        !DP(g, gamma, (size_t)D * 4, "rmsnorm gamma"))
        return;
    emu_enter();
    op_rmsnorm(g->pool, y, x, gamma, M, D, eps);
    emu_leave();
}

void cu_add(cu_dev *g, float *y, const float *x, size_t n) {
    if (!n || !DP(g, y, n * 4, "add y") || !DP(g, x, n * 4, "add x")) return;
    emu_enter();
    op_add(g->pool, y, x, n);
    emu_leave();
}

void cu_ffn_act(cu_dev *g, float *h, int ld, int M, int F, int act, int gated) {
    if (!DP(g, h, blk(M, gated ? 2 * F : F, ld), "ffn_act")) return;
    emu_enter();
    op_ffn_act(g->pool, h, ld, M, F, (op_act)act, gated);
    emu_leave();
}

void cu_embed(cu_dev *g, float *x, cu_w emb, const int *tok, const float *pos_emb,
              const int *pos, int R, int d) {
    if (R <= 0 || !DP(g, x, blk(R, d, d), "embed x") || !DP(g, tok, IDX(R), "embed tokens") ||
        !DP(g, emb.p, 1, "embed table") || (pos_emb && !DP(g, pos, IDX(R), "embed positions")))
        return;
    emu_enter();   /* (the checks below read the device's tokens, not its memory map) */
    int bad = 0;
    for (int r = 0; r < R && !bad; r++) {
        bad = tok[r] < 0 || (pos_emb && pos[r] < 0) ||
              !DP(g, emb.p, wbytes(emb, tok[r] + 1, d), "embed token row") ||
              (pos_emb && !DP(g, pos_emb, blk(pos[r] + 1, d, d), "embed position row"));
        if (bad) break;
        if (emb.t == CU_Q8) {   /* scale times byte, as k_q8_row */
            const char *row = (const char *)emb.p + (size_t)tok[r] * k_q8_dev_row_bytes(d);
            float sn;
            memcpy(&sn, row, sizeof sn);
            for (int j = 0; j < d; j++) x[(size_t)r * d + j] = sn * (float)((const signed char *)(row + 4))[j];
        } else {
            k_w_row(x + (size_t)r * d, kw_of(emb), tok[r], tok[r] + 1, d);
        }
        if (pos_emb) k_add(x + (size_t)r * d, pos_emb + (size_t)pos[r] * d, (size_t)d);
    }
    emu_leave();
    if (bad) cu_fail(g, "embed: a negative token or position");
}

void cu_windows(cu_dev *g, float *col, const float *x, int ldx, int M, int K) {
    if (M <= 0 || !DP(g, col, blk(M, K, K), "windows col") || !DP(g, x, blk(M, K, ldx), "windows x"))
        return;
    emu_enter();
    for (int i = 0; i < M; i++) memcpy(col + (size_t)i * K, x + (size_t)i * ldx, (size_t)K * 4);
    emu_leave();
}

void cu_transpose(cu_dev *g, float *y, const float *x, int rows, int cols) {
    if (!DP(g, y, blk(cols, rows, rows), "transpose y") || !DP(g, x, blk(rows, cols, cols), "transpose x"))
        return;
    emu_enter();
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) y[(size_t)c * rows + r] = x[(size_t)r * cols + c];
    emu_leave();
}

void cu_argmax(cu_dev *g, int *idx, const float *x, int ldx, int M, int N) {
    if (M <= 0 || !DP(g, idx, IDX(M), "argmax idx") || !DP(g, x, blk(M, N, ldx), "argmax x")) return;
    emu_enter();
    for (int m = 0; m < M; m++) idx[m] = k_argmax(x + (size_t)m * ldx, N);
    emu_leave();
}

void cu_attention(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                  const float *v, int ldv, int Mq, int Tk, int n_head, int dh, float scale,
                  int causal) {
    int D = n_head * dh;
    if (Mq <= 0 || n_head <= 0 || (!CU_ATT_TILED(Mq, dh) && !keys_fit(g, Tk, "attention: too many keys")))
        return;
    if (!DP(g, o, blk(Mq, D, ldo), "attention o") || !DP(g, q, blk(Mq, D, ldq), "attention q") ||
        !DP(g, k, blk(Tk, D, ldk), "attention k") || !DP(g, v, blk(Tk, D, ldv), "attention v"))
        return;
    size_t stride = (size_t)OP_ATTN_ROWS * (size_t)Tk;
    float *sc = emu_scratch(g, stride * (size_t)ed_pool_size(g->pool));
    if (!sc) return;
    emu_enter();
    op_attention(g->pool, o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, n_head, dh, scale, causal, sc, stride);
    emu_leave();
}

/* The largest of a device int array's n entries (-1 if any is negative). */
static int dev_max(const int *a, int n);

void cu_attention_seg(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *k,
                      int ldk, const float *v, int ldv, int rows, int n_seg, const int *seg_start,
                      const int *seg_len, int max_len, int n_head, int dh, float scale,
                      const float *bias, size_t bias_hstride, int bias_center) {
    int D = n_head * dh;
    if (rows <= 0 || n_seg <= 0 || n_head <= 0 ||
        !keys_fit(g, max_len, "attention within segments: too many keys"))
        return;
    if (!DP(g, o, blk(rows, D, ldo), "attention_seg o") || !DP(g, q, blk(rows, D, ldq), "attention_seg q") ||
        !DP(g, k, blk(rows, D, ldk), "attention_seg k") || !DP(g, v, blk(rows, D, ldv), "attention_seg v") ||
        !DP(g, seg_start, IDX(n_seg), "attention_seg starts") || !DP(g, seg_len, IDX(n_seg), "attention_seg lengths"))
        return;
    emu_enter();
    int bad = 0, lmax = 0;
    for (int i = 0; i < n_seg; i++) {
        if (seg_start[i] < 0 || seg_len[i] < 0 || seg_len[i] > max_len || seg_start[i] + seg_len[i] > rows)
            bad = 1;
        if (seg_len[i] > lmax) lmax = seg_len[i];
    }
    emu_leave();
    if (bad) {
        cu_fail(g, "attention_seg: a segment outside the pass's rows or over max_len");
        return;
    }
    if (bias && lmax > 0 &&
        (bias_center - (lmax - 1) < 0 ||
         !DP(g, bias, ((size_t)(n_head - 1) * bias_hstride + (size_t)bias_center + (size_t)lmax) * 4,
             "attention_seg bias")))
        return;
    size_t stride = (size_t)OP_ATTN_ROWS * (size_t)(lmax > 0 ? lmax : 1);
    float *sc = emu_scratch(g, stride * (size_t)ed_pool_size(g->pool));
    if (!sc) return;
    emu_enter();
    op_attention_seg(g->pool, o, ldo, q, ldq, k, ldk, v, ldv, n_seg, seg_start, seg_len, n_head, dh,
                     scale, bias, bias_hstride, bias_center, sc, stride);
    emu_leave();
}

static int dev_max(const int *a, int n) {
    emu_enter();
    int m = 0;
    for (int i = 0; i < n && m >= 0; i++) m = a[i] < 0 ? -1 : a[i] > m ? a[i] : m;
    emu_leave();
    return m;
}

void cu_attention_tab(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *kc,
                      const float *vc, size_t slot_stride, int ld, int R, const int *pos,
                      const int *tab, const int *tab_row, int tab_ld, int n_head, int dh,
                      float scale, const float *bias, size_t bias_hstride, int bias_center) {
    int D = n_head * dh;
    if (R <= 0 || n_head <= 0 || !keys_fit(g, tab_ld, "self-attention: too many positions")) return;
    if (!DP(g, o, blk(R, D, ldo), "attention_tab o") || !DP(g, q, blk(R, D, ldq), "attention_tab q") ||
        !DP(g, pos, IDX(R), "attention_tab pos") || !DP(g, tab_row, IDX(R), "attention_tab rows") ||
        !DP(g, kc, 4, "attention_tab k cache") || !DP(g, vc, 4, "attention_tab v cache") ||
        (bias && !DP(g, bias, 4, "attention_tab bias")))
        return;
    int pmax = dev_max(pos, R), tmax = dev_max(tab_row, R);
    if (pmax < 0 || tmax < 0 || pmax >= tab_ld) {
        cu_fail(g, "attention_tab: a position or table row out of range");
        return;
    }
    if (!DP(g, tab, IDX((size_t)(tmax + 1) * tab_ld), "attention_tab table")) return;
    int hb = n_head < OP_ATTN_ROWS ? n_head : OP_ATTN_ROWS;
    size_t stride = (size_t)hb * (size_t)(pmax + 1);
    float *sc = emu_scratch(g, stride * (size_t)ed_pool_size(g->pool));
    if (!sc) return;
    emu_enter();
    op_attention_tab(g->pool, o, ldo, q, ldq, kc, vc, slot_stride, ld, R, pos, tab, tab_row, tab_ld,
                     n_head, dh, scale, bias, bias_hstride, bias_center, sc, stride);
    emu_leave();
}

void cu_kv_self_put(cu_dev *g, float *kc, float *vc, size_t slot_stride, const float *qkv,
                    int ldqkv, int koff, int voff, int R, const int *pos, const int *slot, int d) {
    if (R <= 0 || !DP(g, pos, IDX(R), "kv_self_put pos") || !DP(g, slot, IDX(R), "kv_self_put slot") ||
        !DP(g, qkv, blk(R, (koff > voff ? koff : voff) + d, ldqkv), "kv_self_put qkv"))
        return;
    int pm = dev_max(pos, R), sm = dev_max(slot, R);
    if (pm < 0 || sm < 0) {
        cu_fail(g, "kv_self_put: a negative position or slot");
        return;
    }
    size_t end = ((size_t)sm * slot_stride + (size_t)pm * d + (size_t)d) * 4;
    if (!DP(g, kc, end, "kv_self_put k cache") || !DP(g, vc, end, "kv_self_put v cache")) return;
    emu_enter();
    for (int r = 0; r < R; r++) {
        size_t at = (size_t)slot[r] * slot_stride + (size_t)pos[r] * d;
        memcpy(kc + at, qkv + (size_t)r * ldqkv + koff, (size_t)d * 4);
        memcpy(vc + at, qkv + (size_t)r * ldqkv + voff, (size_t)d * 4);
    }
    emu_leave();
}

void cu_attention_cross(cu_dev *g, float *o, int ldo, const float *q, int ldq,
                        const void *const *caches, const int *n_valid, cu_type t,
                        const int *row_cache, int l, int n_head, const int *n_ctx, int dh,
                        int max_valid, int Mq, float scale) {
    int D = n_head * dh;
    if (Mq <= 0 || n_head <= 0 || !keys_fit(g, max_valid, "cross attention: too many frames")) return;
    if (!DP(g, o, blk(Mq, D, ldo), "attention_cross o") ||
        !DP(g, q, blk(Mq, D, ldq), "attention_cross q") ||
        (row_cache && !DP(g, row_cache, IDX(Mq), "attention_cross rows")))
        return;
    int n = row_cache ? dev_max(row_cache, Mq) + 1 : 1;
    if (n <= 0 || !DP(g, caches, (size_t)n * sizeof(void *), "attention_cross caches") ||
        !DP(g, n_valid, IDX(n), "attention_cross lengths") || !DP(g, n_ctx, IDX(n), "attention_cross frames"))
        return;
    kv_cross *cs = calloc((size_t)n, sizeof *cs);
    void **ptr = calloc((size_t)n, sizeof *ptr);
    int *nv = calloc((size_t)2 * n, sizeof *nv), *nc = nv ? nv + n : NULL, bad = 0;
    if (!cs || !ptr || !nv) {
        free(cs), free(ptr), free(nv);
        cu_fail(g, "attention_cross: out of host memory");
        return;
    }
    emu_enter();
    for (int i = 0; i < n; i++) {
        ptr[i] = (void *)caches[i];
        nv[i] = n_valid[i];
        nc[i] = n_ctx[i];
        if (ptr[i] && (nv[i] < 0 || nv[i] > max_valid || nv[i] > nc[i])) bad = 1;
    }
    emu_leave();
    for (int i = 0; i < n && !bad; i++) {
        if (!ptr[i]) continue;
        size_t per = kv_cross_elems(l + 1, n_head, nc[i], dh) * kv_dtype_size((kv_dtype)t);
        if (!DP(g, ptr[i], per, "attention_cross cache")) bad = 2;
        else kv_cross_view(&cs[i], ptr[i], l + 1, n_head, nc[i], dh, (kv_dtype)t);
        cs[i].n_valid = nv[i];
    }
    size_t stride = (size_t)OP_ATTN_ROWS * (size_t)(max_valid > 0 ? max_valid : 1);
    float *sc = bad ? NULL : emu_scratch(g, stride * (size_t)ed_pool_size(g->pool));
    if (sc) {
        emu_enter();
        op_attention_cross(g->pool, o, ldo, q, ldq, cs, row_cache, l, Mq, scale, sc, stride);
        emu_leave();
    }
    if (bad == 1) cu_fail(g, "attention_cross: a cache's length out of range");
    free(cs), free(ptr), free(nv);
}

void cu_cross_put(cu_dev *g, void *cache, cu_type t, int n_layer, int n_head, int n_ctx, int dh,
                  const float *src, size_t ld, int t0, int rows) {
    if (rows <= 0) return;
    size_t w = (size_t)n_layer * 2 * n_head * dh;
    if (t0 < 0 || t0 + rows > n_ctx ||
        !DP(g, cache, kv_cross_elems(n_layer, n_head, n_ctx, dh) * kv_dtype_size((kv_dtype)t), "cross_put cache") ||
        !DP(g, src, ((size_t)(rows - 1) * ld + w) * 4, "cross_put src")) {
        cu_fail(g, "cross_put: rows outside the cache");
        return;
    }
    kv_cross c;
    kv_cross_view(&c, cache, n_layer, n_head, n_ctx, dh, (kv_dtype)t);
    emu_enter();
    for (size_t it = 0; it < (size_t)n_layer * 2 * n_head; it++)
        kv_cross_put(&c, (int)(it / (2 * (size_t)n_head)), (int)(it / n_head % 2), (int)(it % n_head),
                     src + it * dh, ld, t0, rows);
    emu_leave();
}
