/* gemm_ws.c - k_gemm's fp32 path for a decode step's shape on AVX-512: a
 * few rows of x (up to GEMM_WS_MAX_M, or while x^T fits gemm_ws_takes's
 * bound) against a tall w (an output matrix: 64 x 58101 x 512), with w
 * read in place instead of packed.
 *
 * The packed path (gemm.c) transposes every w block into 32-column panels
 * on each call; with few rows of x to spread it over, that transpose costs
 * as much as the arithmetic. Here the roles turn: x is transposed once per
 * call (M x K, small) into 32-row panels, and the micro-kernel computes a
 * 14 x 32 tile of y^T: 14 rows of w, each element broadcast straight from
 * the row as stored (14 sequential streams the prefetchers follow), times
 * two vectors of 16 rows of x. The tile is transposed in registers on the
 * way out.
 *
 * The sums are k_gemm's, bit for bit: per K block of GEMM_KC_F, each
 * element's products are added in k order from zero by one fma each, and
 * the block is stored as acc + (bias or 0, + y's old value unless first)
 * in the same order as K_GEMM_TILE_STORE; the GELU is the same function.
 * So the op layer's promises (sums that follow K's blocking only) hold
 * whichever path k_gemm takes.
 */
#include "kern/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#include "kern/x86.h"

#define WS_R GEMM_WS_R   /* rows of w in a tile */
#define WS_C GEMM_WS_C   /* rows of x in a panel (two vectors) */

#ifndef WS_HINT
#define WS_HINT _MM_HINT_T1   /* prefetcht1: 3-10% over prefetcht0 at 32 rows, even above (docs/BENCHMARKS.md) */
#endif

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)

static inline int rup(int v, int m) { return (v + m - 1) / m * m; }

/* x^T in panels: K block (k0, kc), panel p: [kc][32] floats at
 * xt + k0 * Mp + p * kc * 32; rows of x past M are zero. */
K_AVX512 static void ws_pack_x(float *xt, const float *x, int ldx, int M, int Mp, int K) {
    for (int k0 = 0; k0 < K; k0 += GEMM_KC_F) {
        int kc = K - k0 < GEMM_KC_F ? K - k0 : GEMM_KC_F;
        float *blk = xt + (size_t)k0 * Mp;
        for (int m0 = 0; m0 < Mp; m0 += 16) {
            float *pan = blk + (size_t)(m0 / WS_C) * kc * WS_C + m0 % WS_C;
            for (int kb = 0; kb < kc; kb += 16) {
                int kv = kc - kb < 16 ? kc - kb : 16;
                __mmask16 m = k_mask16(kv);
                __m512 r[16];
                for (int i = 0; i < 16; i++)
                    r[i] = m0 + i < M ? _mm512_maskz_loadu_ps(m, x + (size_t)(m0 + i) * ldx + k0 + kb)
                                      : _mm512_setzero_ps();
                k_tr16(r);
                for (int t = 0; t < kv; t++) _mm512_store_ps(pan + (size_t)(kb + t) * WS_C, r[t]);
            }
        }
    }
}

/* The tile: acc[i][0..32) = sum over k < kc of w[i * ldw + k] * xt[k][..],
 * rows i < 14, in k order from zero. */
K_AVX512 static void ws_tile(const float *xt, const float *w, size_t ldw, int kc, __m512 acc[2 * WS_R],
                             const char *pf, int npf) {
#define DECL(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps(); \
    const float *w##i = w + (size_t)(i) * ldw;
    ROWS(DECL)
#undef DECL
    for (int k = 0; k < kc; k++) {
        __m512 x0 = _mm512_load_ps(xt), x1 = _mm512_load_ps(xt + 16);
#define FMA(i)                                            \
    {                                                     \
        __m512 wb = _mm512_set1_ps(w##i[k]);              \
        c##i##a = _mm512_fmadd_ps(wb, x0, c##i##a);       \
        c##i##b = _mm512_fmadd_ps(wb, x1, c##i##b);       \
    }
        ROWS(FMA)
#undef FMA
        if (k < npf) _mm_prefetch(pf + (size_t)k * 64, WS_HINT);
        if (k + kc < npf) _mm_prefetch(pf + (size_t)(k + kc) * 64, WS_HINT);
        xt += WS_C;
    }
#define OUT(i) acc[2 * (i)] = c##i##a, acc[2 * (i) + 1] = c##i##b;
    ROWS(OUT)
#undef OUT
}

/* Rows [0, mr) (at most 32) of y and columns [0, nr) as the tile's layout
 * (v[2i + h] lane j: row 16h + j, column i), zero elsewhere; and back. */
K_AVX512 static void ws_load(__m512 v[2 * WS_R], const float *y, size_t ldy, int mr, int nr) {
    __mmask16 mn = k_mask16(nr);
    for (int h = 0; h < 2; h++) {
        __m512 r[16];
        for (int j = 0; j < 16; j++)
            r[j] = 16 * h + j < mr ? _mm512_maskz_loadu_ps(mn, y + (size_t)(16 * h + j) * ldy)
                                   : _mm512_setzero_ps();
        k_tr16(r);
        for (int i = 0; i < WS_R; i++) v[2 * i + h] = r[i];
    }
}

K_AVX512 static void ws_store(const __m512 v[2 * WS_R], float *y, size_t ldy, int mr, int nr) {
    __mmask16 mn = k_mask16(nr);
    for (int h = 0; h < 2 && 16 * h < mr; h++) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = i < WS_R ? v[2 * i + h] : _mm512_setzero_ps();
        k_tr16(r);
        int rows = mr - 16 * h < 16 ? mr - 16 * h : 16;
        for (int j = 0; j < rows; j++) _mm512_mask_storeu_ps(y + (size_t)(16 * h + j) * ldy, mn, r[j]);
    }
}

/* One tile of y^T (rows n0 .. n0 + nr of w, rows m0 .. m0 + mr of x; yt at
 * y[m0][n0]) over every K block, kept in registers between the blocks: the
 * first block adds (b + y's old values with K_GEMM_ACC, else b or 0), each
 * later one (0 + the running value), which is what K_GEMM_TILE_STORE makes
 * of y between blocks, so the values are the packed path's. */
typedef struct {
    const float *xt, *w, *b;
    float *wt;   /* the last tile's rows, zero padded (GEMM_KC_F apart) */
    int Mp, N, K, epi;
    gemm_ws_pf pf;   /* the next tile's rows, to fetch */
} ws_run;

K_AVX512 static void ws_one(ws_run *r, float *yt, size_t ldy, int n0, int nr, int m0, int mr) {
    __m512 v[2 * WS_R], acc[2 * WS_R];
    for (int k0 = 0; k0 < r->K; k0 += GEMM_KC_F) {
        int kc = r->K - k0 < GEMM_KC_F ? r->K - k0 : GEMM_KC_F;
        const float *wsrc = r->w + (size_t)n0 * r->K + k0;
        size_t ldw = (size_t)r->K;
        if (nr < WS_R) {
            memset(r->wt, 0, (size_t)WS_R * GEMM_KC_F * 4);
            for (int i = 0; i < nr; i++)
                memcpy(r->wt + (size_t)i * GEMM_KC_F, wsrc + (size_t)i * r->K, (size_t)kc * 4);
            wsrc = r->wt, ldw = GEMM_KC_F;
        }
        const char *pf;
        int npf = gemm_ws_pf_take(&r->pf, kc, &pf);
        ws_tile(r->xt + (size_t)k0 * r->Mp + (size_t)(m0 / WS_C) * kc * WS_C, wsrc, ldw, kc, acc,
                pf, npf);
        if (k0 == 0) {
            if (r->epi & K_GEMM_ACC) ws_load(v, yt, ldy, mr, nr);
            for (int i = 0; i < WS_R; i++) {
                __m512 bi = r->b && i < nr ? _mm512_set1_ps(r->b[n0 + i]) : _mm512_setzero_ps();
                for (int h = 0; h < 2; h++) {
                    __m512 s = (r->epi & K_GEMM_ACC) ? _mm512_add_ps(bi, v[2 * i + h]) : bi;
                    v[2 * i + h] = _mm512_add_ps(acc[2 * i + h], s);
                }
            }
        } else {
            for (int j = 0; j < 2 * WS_R; j++)
                v[j] = _mm512_add_ps(acc[j], _mm512_add_ps(_mm512_setzero_ps(), v[j]));
        }
    }
    ws_store(v, yt, ldy, mr, nr);
    /* the lines of y the next tile writes (its last column's: tiles move on
     * by less than a line): y's rows are far apart, and no prefetcher
     * follows these writes */
    if (n0 + 2 * WS_R <= r->N)
        for (int j = 0; j < mr; j++) _mm_prefetch((const char *)(yt + (size_t)j * ldy + 2 * WS_R - 1), _MM_HINT_T0);
    if (r->epi & K_GEMM_GELU) gemm_gelu_tile_avx512(yt, ldy, mr, nr);
}

K_AVX512 void gemm_run_ws(float *y, int ldy, const float *x, int ldx, const float *w,
                          const float *b, int M, int N, int K, int epi, void *scratch) {
    int Mp = rup(M, WS_C);
    float *xt = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    ws_run r = {xt, w, b, xt + (size_t)Mp * K, Mp, N, K, epi, {NULL, 0, 0, 0}};
    ws_pack_x(xt, x, ldx, M, Mp, K);
    size_t calls = (size_t)(K + GEMM_KC_F - 1) / GEMM_KC_F * (size_t)(Mp / WS_C);
    for (int n0 = 0; n0 < N; n0 += WS_R) {
        int nr = N - n0 < WS_R ? N - n0 : WS_R;
        r.pf = gemm_ws_pf_start(w, n0, WS_R, N, K, calls);
        for (int m0 = 0; m0 < M; m0 += WS_C)
            ws_one(&r, y + (size_t)m0 * ldy + n0, (size_t)ldy, n0, nr, m0, M - m0 < WS_C ? M - m0 : WS_C);
    }
}

#endif
