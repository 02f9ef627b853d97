/* ops.c - slicing kernels over the pool. Every thread gets contiguous work:
 * rows when M is large (encoder), output columns when M is small (decode
 * steps, where the weight read dominates), or a run of fixed tiles (BLAS).
 * Whatever the thread count, every output value is summed in the same order
 * (tests/test_threads.c): slices only decide who computes a value, never
 * which kernel or blocking does. */
#include "core/ops.h"
#include "core/ops_dev.h"
#include "kern/attn_amx.h"
#include "kern/attn_h.h"
#include "kern/gemm.h"
#include "kern/matmul_hp.h"
#include "kern/q8.h"
#include "kern/kern.h"

#include <string.h>

/* Products that BLAS runs (f32 weights where our packed GEMM does not, the
 * halves of mmh_task, every product of the C set) are cut into tiles whose
 * sizes follow the product's shape only, never the thread count, and each
 * tile is one BLAS call; threads take runs of whole tiles. BLIS picks its
 * kernels by the shape of a call (its small-matrix "sup" kernels, which sum
 * in another order, below a size that differs by configuration: 512 rows on
 * Zen 3), so slices that followed the thread count made the bits follow it
 * too. Tiles are numbered column block by column block (a thread's run of
 * tiles reads few columns of w). */
#define OP_TILE_ROWS 256    /* rows of a tile, at most (many-row products) */
#define OP_TILE_COLS 512    /* columns of a tile, at most */
#define OP_TILE_COLS_FEW 128   /* ... for K_MF_ROWS rows or fewer (decode steps) */

typedef struct {
    int rb, cb;   /* rows, columns of a tile (the last ones may be smaller) */
    int nr, nc;   /* tiles down, across */
} op_tiling;

static op_tiling tiling(int M, int N, int max_cols) {
    op_tiling t;
    t.nr = (M + OP_TILE_ROWS - 1) / OP_TILE_ROWS;
    t.rb = (M + t.nr - 1) / t.nr;
    int nc = (N + max_cols - 1) / max_cols;
    t.cb = ((N + nc - 1) / nc + 15) & ~15;
    t.nc = (N + t.cb - 1) / t.cb;
    return t;
}

/* Tile i of t over an M x N product: rows [*r0, *r1), columns [*c0, *c1). */
static void tile_at(const op_tiling *t, int i, int M, int N, int *r0, int *r1, int *c0, int *c1) {
    int c = i / t->nr, r = i % t->nr;
    *r0 = r * t->rb, *r1 = *r0 + t->rb < M ? *r0 + t->rb : M;
    *c0 = c * t->cb, *c1 = *c0 + t->cb < N ? *c0 + t->cb : N;
}

typedef struct {
    float *y;
    const float *x, *w, *b;
    int ldy, ldx, ldw, M, N, K;
} mm_ctx;

static void mm_task(void *arg, int ith, int nth) {
    mm_ctx *c = arg;
    int lo, hi;
    if (c->M <= K_MF_ROWS && k_isa() >= K_ISA_VEC) {   /* our few-row kernel: column slices */
        ed_split(c->N, ith, nth, 16, &lo, &hi);
        if (hi > lo)
            k_matmul_ex(c->y + lo, c->ldy, c->x, c->ldx, c->w + (size_t)lo * c->ldw, c->ldw,
                        c->b ? c->b + lo : NULL, c->M, hi - lo, c->K);
        return;
    }
    op_tiling t = tiling(c->M, c->N, c->M <= K_MF_ROWS ? OP_TILE_COLS_FEW : OP_TILE_COLS);
    ed_split(t.nr * t.nc, ith, nth, 1, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        int r0, r1, c0, c1;
        tile_at(&t, i, c->M, c->N, &r0, &r1, &c0, &c1);
        k_matmul_ex(c->y + (size_t)r0 * c->ldy + c0, c->ldy, c->x + (size_t)r0 * c->ldx, c->ldx,
                    c->w + (size_t)c0 * c->ldw, c->ldw, c->b ? c->b + c0 : NULL, r1 - r0,
                    c1 - c0, c->K);
    }
}

void op_matmul_ex(ed_pool *p, float *y, int ldy, const float *x, int ldx, const float *w,
                  int ldw, const float *b, int M, int N, int K) {
    OP_DEV(p, od_matmul_f(dev_, y, ldy, x, ldx, w, ldw, b, M, N, K));
    mm_ctx c = {y, x, w, b, ldy, ldx, ldw, M, N, K};
    ed_pool_run(p, mm_task, &c);
}

void op_matmul(ed_pool *p, float *y, const float *x, const float *w, const float *b,
               int M, int N, int K) {
    op_matmul_ex(p, y, N, x, K, w, K, b, M, N, K);
}

/* Half-precision weights. */
#define OP_H_SMALL_M 16   /* up to this many rows: k_matmul_h on column slices */
#define OP_H_PANEL_FLOATS (2 << 20)   /* 8 MB: weight rows expanded at a time for big M */

typedef struct {
    ed_pool *p;
    float *y;
    const float *x, *b;
    const uint16_t *w;
    int ldy, ldx, M, N, K, bf16;
} mmh_ctx;

static void mmh_task(void *arg, int ith, int nth) {
    mmh_ctx *c = arg;
    int lo, hi;
    if (c->M <= OP_H_SMALL_M) {
        ed_split(c->N, ith, nth, 16, &lo, &hi);
        if (hi > lo)
            k_matmul_h(c->y + lo, c->ldy, c->x, c->ldx, c->w + (size_t)lo * c->K, c->K, c->bf16,
                       c->b ? c->b + lo : NULL, c->M, hi - lo, c->K);
        return;
    }
    /* BLAS over tiles (above), each tile's columns of w expanded once per
     * run of tiles that share them */
    int cols = OP_H_PANEL_FLOATS / c->K;
    if (cols > OP_TILE_COLS) cols = OP_TILE_COLS;
    if (cols < 16) cols = 16;
    op_tiling t = tiling(c->M, c->N, cols);
    ed_split(t.nr * t.nc, ith, nth, 1, &lo, &hi);
    float *panel = hi > lo ? ed_pool_scratch(c->p, ith, sizeof(float) * (size_t)t.cb * (size_t)c->K)
                           : NULL;
    int have = -1;   /* the column tile whose weights are in panel */
    for (int i = lo; i < hi; i++) {
        int r0, r1, c0, c1;
        tile_at(&t, i, c->M, c->N, &r0, &r1, &c0, &c1);
        float *y = c->y + (size_t)r0 * c->ldy + c0;
        const float *x = c->x + (size_t)r0 * c->ldx, *b = c->b ? c->b + c0 : NULL;
        if (!panel) {   /* no scratch: slower, still right */
            k_matmul_h(y, c->ldy, x, c->ldx, c->w + (size_t)c0 * c->K, c->K, c->bf16, b, r1 - r0,
                       c1 - c0, c->K);
            continue;
        }
        if (have != c0 / t.cb) {
            k_h_to_f32(panel, c->w + (size_t)c0 * c->K, (size_t)(c1 - c0) * c->K, c->bf16);
            have = c0 / t.cb;
        }
        k_matmul_ex(y, c->ldy, x, c->ldx, panel, c->K, b, r1 - r0, c1 - c0, c->K);
    }
}

/* int8 weights: column slices; each thread quantises the rows of x into
 * its scratch (M * K bytes, small next to the product). */
typedef struct {
    ed_pool *p;
    float *y;
    const float *x, *b;
    k_q8 w;
    int ldy, ldx, M;
} mmq_ctx;

static void mmq_task(void *arg, int ith, int nth) {
    mmq_ctx *c = arg;
    int lo, hi;
    ed_split(c->w.N, ith, nth, 16, &lo, &hi);
    if (hi <= lo) return;
    void *scratch = ed_pool_scratch(c->p, ith, k_q8_scratch_bytes(c->M, c->w.K));
    if (scratch) k_matmul_q8(c->y, c->ldy, c->x, c->ldx, c->w, c->b, c->M, lo, hi - lo, scratch);
    else        /* no scratch: one row at a time through the stack */
        for (int m = 0; m < c->M; m++) {
            char small[4096] __attribute__((aligned(64)));
            if (k_q8_scratch_bytes(1, c->w.K) <= sizeof small)
                k_matmul_q8(c->y + (size_t)m * c->ldy, c->ldy, c->x + (size_t)m * c->ldx, c->ldx,
                            c->w, c->b, 1, lo, hi - lo, small);
            else
                k_matmul_q8_ref(c->y + (size_t)m * c->ldy, c->ldy, c->x + (size_t)m * c->ldx,
                                c->ldx, c->w, c->b, 1, lo, hi - lo);
        }
}

/* Many rows, weights f32 / f16 / bf16: our packed GEMM (kern/gemm.h) on row
 * slices, each thread packing into its pool scratch. */
typedef struct {
    ed_pool *p;
    float *y;
    const float *x, *b;
    k_w w;
    int ldy, ldx, M, N, K;
    k_gemm_mode mode;
    int epi;
} gemm_ctx;

/* Rows [lo, ...) of w [N, K] as a matrix of their own (lo: a multiple of
 * 32 for K_BF16A, whose panels are 32 rows). */
static k_w w_rows_from(k_w w, int K, int lo) {
    size_t off = w.t == K_BF16A ? (size_t)(lo / 32) * (size_t)((K + 31) / 32) * 2048
                                : (size_t)lo * K * k_w_size(w.t);
    w.p = (const char *)w.p + off;
    return w;
}

static void gemm_cols(const gemm_ctx *c, int lo, int hi, void *scratch) {
    k_w w = w_rows_from(c->w, c->K, lo);
    const float *b = c->b ? c->b + lo : NULL;
    if (scratch)
        k_gemm(c->y + lo, c->ldy, c->x, c->ldx, w, b, c->M, hi - lo, c->K, c->mode, c->epi,
                   scratch);
    else k_gemm_ref(c->y + lo, c->ldy, c->x, c->ldx, w, b, c->M, hi - lo, c->K, c->mode, c->epi);
}

static void gemm_task(void *arg, int ith, int nth) {
    gemm_ctx *c = arg;
    int lo, hi;
    /* few rows, or rows fewer than the weight's (a decode step's output
     * matrix: 64 rows x 58101): column slices of 32, so that each thread
     * packs only its slice of w (split by rows, every thread would pack all
     * of w once per call: a third of a batched step's time); the sums are
     * the same either way (they follow K's blocking only) */
    if (c->M <= OP_H_SMALL_M || c->N >= 4 * c->M) {
        ed_split(c->N, ith, nth, 32, &lo, &hi);
        if (hi <= lo) return;
        gemm_cols(c, lo, hi, ed_pool_scratch(c->p, ith, k_gemm_scratch_bytes(c->M, hi - lo, c->K, c->mode)));
        return;
    }
    ed_split(c->M, ith, nth, 16, &lo, &hi);
    if (hi <= lo) return;
    float *y = c->y + (size_t)lo * c->ldy;
    const float *x = c->x + (size_t)lo * c->ldx;
    void *scratch = ed_pool_scratch(c->p, ith, k_gemm_scratch_bytes(hi - lo, c->N, c->K, c->mode));
    if (scratch)
        k_gemm(y, c->ldy, x, c->ldx, c->w, c->b, hi - lo, c->N, c->K, c->mode, c->epi, scratch);
    else k_gemm_ref(y, c->ldy, x, c->ldx, c->w, c->b, hi - lo, c->N, c->K, c->mode, c->epi);
}

/* Panel-major halves (decode-only matrices): column slices of 16. The bf16
 * compute mode (bf16 panels marked lowp) runs them on AMX where it can:
 * x rounded to bf16 there, for every M alike (batch-invariant). */
typedef struct {
    ed_pool *p;
    float *y;
    const float *x, *b;
    k_w w;
    int ldy, ldx, M, N, K;
} mmp_ctx;

static void mmp_task(void *arg, int ith, int nth) {
    mmp_ctx *c = arg;
    int lo, hi;
    ed_split(c->N, ith, nth, 16, &lo, &hi);
    if (hi <= lo) return;
    if (c->w.t == K_BF16P && c->w.lowp &&
        k_matmul_hp_lowp(c->y, c->ldy, c->x, c->ldx, c->w.p, c->b, c->M, lo, hi - lo, c->N, c->K) >= 0)
        return;
    size_t xs = k_hp_xs_floats(c->M, c->K);   /* x k-major once a call (NULL: once a block) */
    k_matmul_hp_xs(c->y, c->ldy, c->x, c->ldx, c->w.p, c->w.t == K_BF16P, c->b, c->M, lo, hi - lo,
                   c->N, c->K, xs ? ed_pool_scratch(c->p, ith, sizeof(float) * xs) : NULL);
}

/* y[M, N] (ldy) += t[M, N] (row stride N), then GELU, over row slices. */
typedef struct {
    float *y;
    const float *t;
    int ldy, M, N, epi;
} epi_ctx;

static void epi_task(void *arg, int ith, int nth) {
    epi_ctx *c = arg;
    int lo, hi;
    ed_split(c->M, ith, nth, 1, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        float *y = c->y + (size_t)i * c->ldy;
        if (c->epi & K_GEMM_ACC) k_add(y, c->t + (size_t)i * c->N, (size_t)c->N);
        if (c->epi & K_GEMM_GELU) k_gelu(y, (size_t)c->N);
    }
}

static k_gemm_mode gemm_mode(k_w w) {
    return (w.t == K_BF16 && w.lowp) || w.t == K_BF16A ? K_GEMM_BF16 : K_GEMM_F32;
}

/* From this many rows, f32 weights and N >= 128 (64 a thread), k_gemm's
 * few-row path (kern/gemm_ws.c, gemm_ws16.c, gemm_ws_avx2.c) rather than
 * the few-row kernel (k_matmul_f). Measured on the Xeon as 1.3-3.3x at
 * 8-16 rows (gemm_bench [--avx2] -m 8 -s cols, 2026-11-29), but against
 * the few-row kernel on one thread (gemm_bench's first column splits rows
 * by 14) and with opus-mt's matrices in its 480 MB L3. On the Zen 4 (32 MB
 * L3), end to end, NLLB-600M tokens/s at 8 rows: k_gemm's 32-lane AVX-512
 * form 10.8, its AVX2 form 23.8, the few-row kernel 25.0; 16 rows 68.7 /
 * 116.9 / 80. Up to 16 rows k_gemm's AVX-512 path now takes gemm_ws16.c's
 * 16-lane tiles, which waste no lanes (on the Emerald Rapids Xeon 1.1-1.6x
 * the AVX2 form at 8-16 rows, 2 threads, 2026-12-02). */
#define OP_WS_MIN_M 8

/* The packed GEMM takes this product: many rows, or weights packed for it;
 * few: also a few rows of f32 weights where k_gemm's few-row path runs
 * (not for op_matmul_w_inv's passes, whose sums must be those of one row). */
static int gemm_fits(k_w w, int M, int N, int few) {
    if (w.t == K_BF16A) return 1;
    if (few && w.t == K_F32 && M >= OP_WS_MIN_M && N >= 128 &&
        k_gemm_path(K_ISA_AMX, K_GEMM_F32) >= 1)
        return 1;
    return w.t != K_F16P && w.t != K_BF16P && w.t != K_Q8 && M > OP_H_SMALL_M && k_gemm_has(gemm_mode(w));
}

void op_matmul_w_ex(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                    const float *b, int M, int N, int K, int epi, float *tmp) {
    OP_DEV(p, od_matmul_w(dev_, y, ldy, x, ldx, w, b, M, N, K, epi));
    if (gemm_fits(w, M, N, 1)) {
        gemm_ctx c = {p, y, x, b, w, ldy, ldx, M, N, K, gemm_mode(w), epi};
        ed_pool_run(p, gemm_task, &c);
        return;
    }
    int acc = (epi & K_GEMM_ACC) != 0;
    op_matmul_w(p, acc ? tmp : y, acc ? N : ldy, x, ldx, w, b, M, N, K);
    epi_ctx c = {y, tmp, ldy, M, N, epi};
    if (M * N < 8192) epi_task(&c, 0, 1);
    else ed_pool_run(p, epi_task, &c);
}

typedef struct {
    float *col;
    const float *x;
    int ldx, M, K;
} win_ctx;

static void win_task(void *arg, int ith, int nth) {
    win_ctx *c = arg;
    int lo, hi;
    ed_split(c->M, ith, nth, 1, &lo, &hi);
    for (int i = lo; i < hi; i++)
        memcpy(c->col + (size_t)i * c->K, c->x + (size_t)i * c->ldx, (size_t)c->K * sizeof(float));
}

void op_matmul_win(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                   const float *b, int M, int N, int K, int epi, float *col) {
    OP_DEV(p, od_matmul_win(dev_, y, ldy, x, ldx, w, b, M, N, K, epi, col));
    if (gemm_fits(w, M, N, 1) || ldx >= K) {
        op_matmul_w_ex(p, y, ldy, x, ldx, w, b, M, N, K, epi & K_GEMM_GELU, NULL);
        return;
    }
    win_ctx c = {col, x, ldx, M, K};
    ed_pool_run(p, win_task, &c);
    op_matmul_w_ex(p, y, ldy, col, K, w, b, M, N, K, epi & K_GEMM_GELU, NULL);
}

/* op_matmul_w on the CPU; few: as gemm_fits. */
static void matmul_w(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                     const float *b, int M, int N, int K, int few) {
    if (w.t == K_F16P || w.t == K_BF16P) {
        mmp_ctx c = {p, y, x, b, w, ldy, ldx, M, N, K};
        ed_pool_run(p, mmp_task, &c);
        return;
    }
    if (w.t == K_Q8) {
        mmq_ctx c = {p, y, x, b, {w.p, N, K}, ldy, ldx, M};
        ed_pool_run(p, mmq_task, &c);
        return;
    }
    if (gemm_fits(w, M, N, few)) {
        gemm_ctx c = {p, y, x, b, w, ldy, ldx, M, N, K, gemm_mode(w), 0};
        ed_pool_run(p, gemm_task, &c);
        return;
    }
    if (w.t == K_F32) {
        op_matmul_ex(p, y, ldy, x, ldx, w.p, K, b, M, N, K);
        return;
    }
    mmh_ctx c = {p, y, x, b, w.p, ldy, ldx, M, N, K, w.t == K_BF16};
    ed_pool_run(p, mmh_task, &c);
}

void op_matmul_w(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                 int M, int N, int K) {
    OP_DEV(p, od_matmul_w(dev_, y, ldy, x, ldx, w, b, M, N, K, 0));
    matmul_w(p, y, ldy, x, ldx, w, b, M, N, K, 1);
}

/* k_matmul_inv over column slices, all rows at once (each thread packs x
 * into its scratch). */
typedef struct {
    ed_pool *p;
    float *y;
    const float *x, *w, *b;
    int ldy, ldx, M, N, K;
} inv_ctx;

static void inv_task(void *arg, int ith, int nth) {
    inv_ctx *c = arg;
    int lo, hi;
    ed_split(c->N, ith, nth, 16, &lo, &hi);
    if (hi <= lo) return;
    void *s = ed_pool_scratch(c->p, ith, k_matmul_inv_scratch(c->M, c->K));
    k_matmul_inv(c->y + lo, c->ldy, c->x, c->ldx, c->w + (size_t)lo * c->K, c->K,
                 c->b ? c->b + lo : NULL, c->M, hi - lo, c->K, s);
}

void op_matmul_w_inv(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                     const float *b, int M, int N, int K) {
    OP_DEV(p, od_matmul_w_inv(dev_, y, ldy, x, ldx, w, b, M, N, K));
    if (w.t == K_F16P || w.t == K_BF16P || w.t == K_Q8) {
        matmul_w(p, y, ldy, x, ldx, w, b, M, N, K, 0);
        return;
    }
    if (w.t == K_F32 && k_matmul_inv_scratch(M, K) > 0) {   /* the panel kernel's rows */
        inv_ctx c = {p, y, x, w.p, b, ldy, ldx, M, N, K};
        ed_pool_run(p, inv_task, &c);
        return;
    }
    /* f32 weights: up to 16 rows take k_matmul_f (per row the same sums);
     * without it (the C set), BLIS's gemv for one row and gemm for more
     * differ: one row at a time then. */
    int rows = w.t == K_F32 && k_isa() < K_ISA_VEC ? 1 : OP_INV_ROWS;
    for (int m0 = 0; m0 < M; m0 += rows) {
        int m = M - m0 < rows ? M - m0 : rows;
        matmul_w(p, y + (size_t)m0 * ldy, ldy, x + (size_t)m0 * ldx, ldx, w, b, m, N, K, 0);
    }
}

/* Weights whose products op_matmul_w runs row-invariantly for any M. */
static int w_invariant(k_w w) {
    return w.t == K_F16P || w.t == K_BF16P || w.t == K_Q8 || w.t == K_BF16A;
}

int op_rows_invariant(k_w w) {
    return w_invariant(w) || k_gemm_path(k_isa(), gemm_mode(w)) >= 1;
}

void op_matmul_w_rows(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                      const float *b, int M, int N, int K) {
    OP_DEV(p, od_matmul_w(dev_, y, ldy, x, ldx, w, b, M, N, K, 0));
    if (w_invariant(w) || !op_rows_invariant(w)) {
        op_matmul_w(p, y, ldy, x, ldx, w, b, M, N, K);
        return;
    }
    /* the packed GEMM for every M: its sums follow K's blocking only (rows
     * are split across threads, or columns for few rows; neither changes a
     * value's order of additions) */
    gemm_ctx c = {p, y, x, b, w, ldy, ldx, M, N, K, gemm_mode(w), 0};
    ed_pool_run(p, gemm_task, &c);
}

typedef struct {
    float *y;
    const float *x, *g, *b;
    int M, D;
    float eps;
} ln_ctx;

static void ln_task(void *arg, int ith, int nth) {
    ln_ctx *c = arg;
    int lo, hi;
    ed_split(c->M, ith, nth, 1, &lo, &hi);
    k_layernorm(c->y + (size_t)lo * c->D, c->x + (size_t)lo * c->D, c->g, c->b, hi - lo, c->D, c->eps);
}

void op_layernorm(ed_pool *p, float *y, const float *x, const float *g, const float *b,
                  int M, int D, float eps) {
    OP_DEV(p, od_layernorm(dev_, y, x, g, b, M, D, eps));
    ln_ctx c = {y, x, g, b, M, D, eps};
    if (M < 16) ln_task(&c, 0, 1);
    else ed_pool_run(p, ln_task, &c);
}

typedef struct {
    float *x;
    size_t n;
} gelu_ctx;

/* Slices start at multiples of 16 values, so that a value takes the vector
 * lanes or the scalar tail by its place in the array, not by the thread
 * count or the rows beside it (batch invariance). */
static void gelu_task(void *arg, int ith, int nth) {
    gelu_ctx *c = arg;
    size_t lo = c->n * (size_t)ith / (size_t)nth & ~(size_t)15;
    size_t hi = ith + 1 == nth ? c->n : c->n * (size_t)(ith + 1) / (size_t)nth & ~(size_t)15;
    k_gelu(c->x + lo, hi - lo);
}

void op_gelu(ed_pool *p, float *x, int M, int N) {
    OP_DEV(p, od_ffn_act(dev_, x, N, M, N, 1, 0));
    gelu_ctx c = {x, (size_t)M * (size_t)N};
    if (c.n < 8192) gelu_task(&c, 0, 1);
    else ed_pool_run(p, gelu_task, &c);
}

typedef struct {
    float *y;
    const float *x;
    size_t n;
} add_ctx;

static void add_task(void *arg, int ith, int nth) {
    add_ctx *c = arg;
    size_t lo = c->n * (size_t)ith / (size_t)nth, hi = c->n * (size_t)(ith + 1) / (size_t)nth;
    k_add(c->y + lo, c->x + lo, hi - lo);
}

void op_add(ed_pool *p, float *y, const float *x, size_t n) {
    OP_DEV(p, od_add(dev_, y, x, n));
    add_ctx c = {y, x, n};
    if (n < 8192) add_task(&c, 0, 1);
    else ed_pool_run(p, add_task, &c);
}

/* Attention work items are (head, block of OP_ATTN_ROWS query rows). */
typedef struct {
    float *o;
    const float *q, *k, *v;
    int ldo, ldq, ldk, ldv, Mq, Tk, n_head, dh, causal;
    float scale;
    float *scratch;
    size_t scratch_stride;
} attn_ctx;

static void attn_task(void *arg, int ith, int nth) {
    attn_ctx *c = arg;
    int n_blk = (c->Mq + OP_ATTN_ROWS - 1) / OP_ATTN_ROWS;
    int n_items = n_blk * c->n_head;
    float *s = c->scratch + (size_t)ith * c->scratch_stride;
    for (int it = ith; it < n_items; it += nth) {
        int h = it / n_blk, r0 = (it % n_blk) * OP_ATTN_ROWS;
        int m = c->Mq - r0 < OP_ATTN_ROWS ? c->Mq - r0 : OP_ATTN_ROWS;
        const float *k = c->k + (size_t)h * c->dh, *v = c->v + (size_t)h * c->dh;
        /* A causal block of rows [r0, r0+m) sees keys up to Tk - Mq + r0 + m. */
        int tk = c->causal ? c->Tk - c->Mq + r0 + m : c->Tk;
        k_attention(c->o + (size_t)r0 * c->ldo + (size_t)h * c->dh, c->ldo,
                    c->q + (size_t)r0 * c->ldq + (size_t)h * c->dh, c->ldq, k, c->ldk, v, c->ldv,
                    m, tk, c->dh, c->scale, c->causal, s);
    }
}

/* Long non-causal attention (the Whisper encoder: 1500 x 1500 per head)
 * through our packed GEMM, one head per work item: the head's keys are
 * copied once, pre-scaled, as a [Tk, dh] matrix and its values transposed
 * to [dh, Tk], so both products have the y = x . w^T form k_gemm takes;
 * then per block of ATTN_GEMM_ROWS query rows: scores = q . K^T, softmax,
 * o = P . V. Scratch from the pool; NULL (no memory) falls back. */
#define ATTN_GEMM_ROWS 256   /* query rows per product: K and V^T are packed once per block */
static int attn_gemm_head(const attn_ctx *c, ed_pool *p, int ith, int h, k_gemm_mode mode) {
    int Tk = c->Tk, dh = c->dh, R = ATTN_GEMM_ROWS;
    size_t g1 = k_gemm_scratch_bytes(R, Tk, dh, mode), g2 = k_gemm_scratch_bytes(R, dh, Tk, mode);
    size_t kv = ((size_t)Tk * dh * sizeof(float) + 63) & ~(size_t)63;
    size_t sc = ((size_t)R * Tk * sizeof(float) + 63) & ~(size_t)63;
    char *buf = ed_pool_scratch(p, ith, 2 * kv + sc + (g1 > g2 ? g1 : g2));
    if (!buf) return 0;
    float *kc = (float *)buf, *vt = (float *)(buf + kv), *s = (float *)(buf + 2 * kv);
    void *gs = buf + 2 * kv + sc;
    const float *k = c->k + (size_t)h * dh, *v = c->v + (size_t)h * dh;
    for (int t = 0; t < Tk; t++)
        for (int j = 0; j < dh; j++) {
            kc[(size_t)t * dh + j] = c->scale * k[(size_t)t * c->ldk + j];
            vt[(size_t)j * Tk + t] = v[(size_t)t * c->ldv + j];
        }
    k_w wk = {kc, K_F32, 0}, wv = {vt, K_F32, 0};
    for (int r0 = 0; r0 < c->Mq; r0 += R) {
        int m = c->Mq - r0 < R ? c->Mq - r0 : R;
        k_gemm(s, Tk, c->q + (size_t)r0 * c->ldq + (size_t)h * dh, c->ldq, wk, NULL, m, Tk, dh,
               mode, 0, gs);
        for (int i = 0; i < m; i++) k_softmax(s + (size_t)i * Tk, Tk);
        k_gemm(c->o + (size_t)r0 * c->ldo + (size_t)h * dh, c->ldo, s, Tk, wv, NULL, m, dh, Tk,
               mode, 0, gs);
    }
    return 1;
}

typedef struct {
    attn_ctx a;
    ed_pool *p;
    k_gemm_mode mode;
} attn_gemm_ctx;

/* The fused heads (scores and P stay in L1/L2): bf16 mode on AMX or
 * AVX512_BF16 (kern/attn_amx.h) and f32 on the vector sets
 * (k_attention_flash). Items
 * are (head, part of the query rows): one part per head when the heads
 * divide evenly over the threads, else nth parts (each packs the head's K
 * and V again: 2 Tk dh values against 4 Mq Tk dh / nth flops). No memory
 * for scratch: slower, still right (the reference, or BLAS by blocks). */
static void attn_fused_task(void *arg, int ith, int nth) {
    attn_gemm_ctx *g = arg;
    const attn_ctx *c = &g->a;
    int parts = c->n_head % nth ? nth : 1, items = c->n_head * parts;
    int amx = g->mode == K_GEMM_BF16;
    for (int it = ith; it < items; it += nth) {
        int h = it / parts, lo, hi;
        ed_split(c->Mq, it % parts, parts, 32, &lo, &hi);
        if (hi <= lo) continue;
        size_t hd = (size_t)h * c->dh;
        float *o = c->o + (size_t)lo * c->ldo + hd;
        const float *q = c->q + (size_t)lo * c->ldq + hd, *k = c->k + hd, *v = c->v + hd;
        size_t bytes = amx ? k_attention_bf16_scratch_bytes(hi - lo, c->Tk, c->dh)
                           : k_attention_flash_scratch_bytes(c->Tk, c->dh);
        void *s = ed_pool_scratch(g->p, ith, bytes);
        if (s && amx)
            k_attention_bf16(o, c->ldo, q, c->ldq, k, c->ldk, v, c->ldv, hi - lo, c->Tk, c->dh,
                             c->scale, s);
        else if (s)
            k_attention_flash(o, c->ldo, q, c->ldq, k, c->ldk, v, c->ldv, hi - lo, c->Tk, c->dh,
                              c->scale, s);
        else if (amx)
            k_attention_bf16_ref(o, c->ldo, q, c->ldq, k, c->ldk, v, c->ldv, hi - lo, c->Tk,
                                 c->dh, c->scale);
        else
            for (int r0 = lo; r0 < hi; r0 += OP_ATTN_ROWS) {
                int m = hi - r0 < OP_ATTN_ROWS ? hi - r0 : OP_ATTN_ROWS;
                k_attention(c->o + (size_t)r0 * c->ldo + hd, c->ldo, c->q + (size_t)r0 * c->ldq + hd,
                            c->ldq, k, c->ldk, v, c->ldv, m, c->Tk, c->dh, c->scale, 0,
                            c->scratch + (size_t)ith * c->scratch_stride);
            }
    }
}

/* Attention by heads through k_gemm pays for bf16 products on AVX-512
 * where the fused bf16 kernel does not run (heads wider than
 * K_ATTN_BF16_MAX_DH: AMX and AVX512_BF16 both run it otherwise, 1.5x
 * this path on a Zen 4); f32 runs the fused (flash) kernel on every vector
 * set, in 16 lanes from AVX-512 up: 5% less encoder time than by heads for
 * tiny.en and base (AMD Zen 4, 2 threads, 2026-11-30). */
static int attn_gemm_pays(k_gemm_mode mode) {
    return mode == K_GEMM_BF16 && k_gemm_path(K_ISA_AMX, mode) >= 2;
}

static void attn_gemm_task(void *arg, int ith, int nth) {
    attn_gemm_ctx *c = arg;
    for (int h = ith; h < c->a.n_head; h += nth)
        if (!attn_gemm_head(&c->a, c->p, ith, h, c->mode)) {   /* no scratch: the BLAS kernel */
            int n_blk = (c->a.Mq + OP_ATTN_ROWS - 1) / OP_ATTN_ROWS;
            for (int b = 0; b < n_blk; b++) {
                int r0 = b * OP_ATTN_ROWS, m = c->a.Mq - r0 < OP_ATTN_ROWS ? c->a.Mq - r0 : OP_ATTN_ROWS;
                k_attention(c->a.o + (size_t)r0 * c->a.ldo + (size_t)h * c->a.dh, c->a.ldo,
                            c->a.q + (size_t)r0 * c->a.ldq + (size_t)h * c->a.dh, c->a.ldq,
                            c->a.k + (size_t)h * c->a.dh, c->a.ldk, c->a.v + (size_t)h * c->a.dh,
                            c->a.ldv, m, c->a.Tk, c->a.dh, c->a.scale, 0,
                            c->a.scratch + (size_t)ith * c->a.scratch_stride);
            }
        }
}

void op_attention_lp(ed_pool *p, float *o, int ldo, const float *q, int ldq, const float *k,
                     int ldk, const float *v, int ldv, int Mq, int Tk, int n_head, int dh,
                     float scale, int causal, int bf16, float *scratch, size_t scratch_stride) {
    OP_DEV(p, od_attention(dev_, o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, n_head, dh, scale, causal));
    k_gemm_mode mode = bf16 ? K_GEMM_BF16 : K_GEMM_F32;
    if (!causal && bf16 && Mq >= 64 && Tk >= 64 && dh <= K_ATTN_BF16_MAX_DH && k_attention_bf16_has()) {
        attn_gemm_ctx g = {{o, q, k, v, ldo, ldq, ldk, ldv, Mq, Tk, n_head, dh, causal, scale,
                            scratch, scratch_stride}, p, mode};
        ed_pool_run(p, attn_fused_task, &g);
        return;
    }
    /* the kernel follows the shape alone, never the thread count (a pool
     * with more threads than heads leaves some idle here, but its bits are
     * every pool's: tests/test_threads.c) */
    if (!causal && Mq >= 256 && Tk >= 256 && attn_gemm_pays(mode)) {
        attn_gemm_ctx g = {{o, q, k, v, ldo, ldq, ldk, ldv, Mq, Tk, n_head, dh, causal, scale,
                            scratch, scratch_stride}, p, mode};
        ed_pool_run(p, attn_gemm_task, &g);
        return;
    }
    op_attention(p, o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, n_head, dh, scale, causal, scratch,
                 scratch_stride);
}

void op_attention(ed_pool *p, float *o, int ldo, const float *q, int ldq, const float *k,
                  int ldk, const float *v, int ldv, int Mq, int Tk, int n_head, int dh,
                  float scale, int causal, float *scratch, size_t scratch_stride) {
    OP_DEV(p, od_attention(dev_, o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, n_head, dh, scale, causal));
    if (!causal && Mq >= 256 && Tk >= 256 && attn_gemm_pays(K_GEMM_F32)) {   /* (as above) */
        attn_gemm_ctx g = {{o, q, k, v, ldo, ldq, ldk, ldv, Mq, Tk, n_head, dh, causal, scale,
                            scratch, scratch_stride}, p, K_GEMM_F32};
        ed_pool_run(p, attn_gemm_task, &g);
        return;
    }
    if (!causal && Mq >= 64 && Tk >= 64 && k_attention_flash_has(dh)) {
        attn_gemm_ctx g = {{o, q, k, v, ldo, ldq, ldk, ldv, Mq, Tk, n_head, dh, causal, scale,
                            scratch, scratch_stride}, p, K_GEMM_F32};
        ed_pool_run(p, attn_fused_task, &g);
        return;
    }
    attn_ctx c = {o, q, k, v, ldo, ldq, ldk, ldv, Mq, Tk, n_head, dh, causal, scale,
                  scratch, scratch_stride};
    ed_pool_run(p, attn_task, &c);
}

typedef struct {
    float *o;
    const float *q;
    const kv_cross *c;
    const int *row_cache;
    int ldo, ldq, l, Mq;
    float scale;
    float *scratch;
    size_t scratch_stride;
} xattn_ctx;

/* Items are numbered run by run (rows of one cache), then head, then block
 * of OP_ATTN_ROWS rows from the run's start. */
static void xattn_task(void *arg, int ith, int nth) {
    xattn_ctx *c = arg;
    float *s = c->scratch + (size_t)ith * c->scratch_stride;
    int item = 0;
    for (int r0 = 0; r0 < c->Mq;) {
        int ci = c->row_cache ? c->row_cache[r0] : 0, r1 = r0 + 1;
        if (c->row_cache)
            while (r1 < c->Mq && c->row_cache[r1] == ci) r1++;
        else
            r1 = c->Mq;
        const kv_cross *kc = &c->c[ci];
        int dh = kc->dh, n_blk = (r1 - r0 + OP_ATTN_ROWS - 1) / OP_ATTN_ROWS;
        int n_items = n_blk * kc->n_head;
        for (int it = ((ith - item) % nth + nth) % nth; it < n_items; it += nth) {
            int h = it / n_blk, b0 = r0 + (it % n_blk) * OP_ATTN_ROWS;
            int m = r1 - b0 < OP_ATTN_ROWS ? r1 - b0 : OP_ATTN_ROWS;
            float *o = c->o + (size_t)b0 * c->ldo + (size_t)h * dh;
            const float *q = c->q + (size_t)b0 * c->ldq + (size_t)h * dh;
            const void *k = kv_cross_k(kc, c->l, h), *v = kv_cross_v(kc, c->l, h);
            if (kc->type == KV_F32)
                k_attention_kvf(o, c->ldo, q, c->ldq, k, v, m, kc->n_valid, dh, c->scale, s);
            else
                k_attention_kvh(o, c->ldo, q, c->ldq, k, v, kc->type == KV_BF16, m, kc->n_valid,
                                dh, c->scale, s);
        }
        item += n_items;
        r0 = r1;
    }
}

void op_attention_cross(ed_pool *p, float *o, int ldo, const float *q, int ldq,
                        const kv_cross *c, const int *row_cache, int l, int Mq, float scale,
                        float *scratch, size_t scratch_stride) {
    OP_DEV(p, od_attention_cross(dev_, o, ldo, q, ldq, c, row_cache, l, Mq, scale));
    xattn_ctx x = {o, q, c, row_cache, ldo, ldq, l, Mq, scale, scratch, scratch_stride};
    ed_pool_run(p, xattn_task, &x);
}

typedef struct {
    float *col;
    const float *x;
    int chan_major, C_in, T_in, kw, stride, pad, T_out;
} i2c_ctx;

static void i2c_task(void *arg, int ith, int nth) {
    i2c_ctx *c = arg;
    int lo, hi;
    ed_split(c->T_out, ith, nth, 1, &lo, &hi);
    k_im2col_1d(c->col + (size_t)lo * c->C_in * c->kw, c->x, c->chan_major, c->C_in, c->T_in,
                c->kw, c->stride, c->pad, lo, hi);
}

void op_im2col_1d(ed_pool *p, float *col, const float *x, int x_chan_major, int C_in,
                  int T_in, int kw, int stride, int pad, int T_out) {
    OP_DEV(p, od_im2col_1d(dev_, col, x, x_chan_major, C_in, T_in, kw, stride, pad, T_out));
    i2c_ctx c = {col, x, x_chan_major, C_in, T_in, kw, stride, pad, T_out};
    ed_pool_run(p, i2c_task, &c);
}
