/* gemm_ws16.c - gemm_ws.c's few-row fp32 path for 16 rows of x or fewer
 * (decode steps of up to 16 sequences) on AVX-512: x transposed once into
 * one 16-row panel, so a row of x is a lane and every multiply-add uses all
 * 16; up to 28 rows of w a tile, each element broadcast from the row as
 * stored (into the fma itself), one zmm accumulator a row. gemm_ws.c's
 * 14 x 32 tiles waste half their lanes on 16 rows, and the AVX2 form's
 * 6 x 16 tiles half the width of a full-width AVX-512 FMA unit.
 *
 * A tile's rows are K floats apart, and at every k step each of them has a
 * line in use. Where K * 4 is a multiple of 4 KB all those lines fall into
 * one set of the L1 (64 sets of 12 ways), and 28 rows evicted each line
 * before its 16 k steps had used it (16 x 256 x 1024 in cache, one Xeon
 * core: 62 GFLOP/s against 94 at K 1040). So the tile's height follows the
 * sets the rows spread over: 28 rows where they reach 4 sets or more, 20
 * over 2 sets (K 512: 10 a set), 10 over one (K 1024, 2048, 4096); at K
 * 1024 10 rows ran at 64.9, 20 at 52.9, 28 at 42.9; at K 512 20 rows best
 * (90.7 against 65.5 and 57.1). Copying 28 rows to a padded stride per K
 * block instead: 79.3 against the 10 rows' 121.4 at K 1024, 58.7 against
 * the 20 rows' 121.2 at K 512 (head to head, a quieter hour).
 *
 * The sums are gemm_ws.c's (so the packed AVX-512 path's) bit for bit: the
 * same K blocks of GEMM_KC_F, each element's products added in k order
 * from zero by one fma each, the same epilogue per block; only which lanes
 * and registers hold them differs. */
#include "kern/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#include "kern/x86.h"

#define RMAX GEMM_WS16_R   /* rows of w in a tile, at most */
#define WT_LD GEMM_KC_F    /* the last tile's rows, copied and zero padded */

/* x^T: K block (k0, kc) at xt + k0 * 16, [kc][16] floats; rows past M zero. */
K_AVX512 static void pack_xt(float *xt, const float *x, int ldx, int M, int K) {
    for (int kb = 0; kb < K; kb += 16) {
        int kv = K - kb < 16 ? K - kb : 16;
        __mmask16 m = k_mask16(kv);
        __m512 r[16];
        for (int i = 0; i < 16; i++)
            r[i] = i < M ? _mm512_maskz_loadu_ps(m, x + (size_t)i * ldx + kb) : _mm512_setzero_ps();
        k_tr16(r);
        for (int t = 0; t < kv; t++) _mm512_store_ps(xt + (size_t)(kb + t) * 16, r[t]);
    }
}

/* acc[i] lane j = sum over k < kc of w[i * ldw + k] * xt[k][j], in k order,
 * rows i of the tile in groups of 4 (GROUPS: G4(g) for rows 4g .. 4g + 3,
 * G2(g) for two). Each group has one pointer, its rows at byte offsets 0,
 * L, 2L and 3L from it (L and 3L in registers: base + index * scale), so
 * that 28 rows need 7 registers of addresses, not 28 (with one pointer a
 * row the compiler reloaded 17 of them from the stack at every k step). */
#define WS16_TILE(name, GROUPS)                                                                   \
    K_AVX512 static void name(const float *xt, const float *w, size_t ldw, int kc, __m512 *acc,  \
                              const char *pf, int npf) {                                          \
        const size_t L = ldw * 4, L3 = 3 * L;                                                     \
        const char *w0 = (const char *)w;                                                         \
        GROUPS(DECL4, DECL2)                                                                      \
        for (int k = 0; k < kc; k++) {                                                            \
            __m512 xv = _mm512_load_ps(xt + (size_t)k * 16);                                      \
            GROUPS(FMA4, FMA2)                                                                    \
            if (k < npf) _mm_prefetch(pf + (size_t)k * 64, _MM_HINT_T1);                          \
            if (k + kc < npf) _mm_prefetch(pf + (size_t)(k + kc) * 64, _MM_HINT_T1);              \
        }                                                                                         \
        GROUPS(OUT4, OUT2)                                                                        \
    }
#define AT(q, off) _mm512_set1_ps(*(const float *)((q) + (off)))
#define DECL2(g) __m512 c##g##0 = _mm512_setzero_ps(), c##g##1 = _mm512_setzero_ps(); \
    const char *q##g = w0 + (size_t)(g) * 4 * L;
#define DECL4(g) DECL2(g) __m512 c##g##2 = _mm512_setzero_ps(), c##g##3 = _mm512_setzero_ps();
#define FMA01(g) c##g##0 = _mm512_fmadd_ps(AT(q##g, 0), xv, c##g##0); \
    c##g##1 = _mm512_fmadd_ps(AT(q##g, L), xv, c##g##1);
#define FMA2(g) FMA01(g) q##g += 4;
#define FMA4(g) FMA01(g) c##g##2 = _mm512_fmadd_ps(AT(q##g, 2 * L), xv, c##g##2); \
    c##g##3 = _mm512_fmadd_ps(AT(q##g, L3), xv, c##g##3); q##g += 4;
#define OUT2(g) acc[4 * (g)] = c##g##0, acc[4 * (g) + 1] = c##g##1;
#define OUT4(g) OUT2(g) acc[4 * (g) + 2] = c##g##2, acc[4 * (g) + 3] = c##g##3;
#define T10(A, B) A(0) A(1) B(2)
#define T20(A, B) A(0) A(1) A(2) A(3) A(4)
#define T28(A, B) A(0) A(1) A(2) A(3) A(4) A(5) A(6)
WS16_TILE(tile10, T10)
WS16_TILE(tile20, T20)
WS16_TILE(tile28, T28)

typedef void (*tile_fn)(const float *, const float *, size_t, int, __m512 *, const char *, int);

/* v[i] lane j <-> y[j][i], rows j < mr, columns i < nr (zero elsewhere on
 * the way in): 16 x 16 transposes. */
K_AVX512 static void load_t(__m512 *v, int R, const float *y, size_t ldy, int mr, int nr) {
    for (int h = 0; 16 * h < R; h++) {
        __mmask16 mn = k_mask16(nr - 16 * h);
        __m512 r[16];
        for (int j = 0; j < 16; j++)
            r[j] = j < mr ? _mm512_maskz_loadu_ps(mn, y + (size_t)j * ldy + 16 * h) : _mm512_setzero_ps();
        k_tr16(r);
        for (int i = 0; i < 16 && 16 * h + i < R; i++) v[16 * h + i] = r[i];
    }
}

K_AVX512 static void store_t(const __m512 *v, int R, float *y, size_t ldy, int mr, int nr) {
    for (int h = 0; 16 * h < nr; h++) {
        __mmask16 mn = k_mask16(nr - 16 * h);
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = 16 * h + i < R ? v[16 * h + i] : _mm512_setzero_ps();
        k_tr16(r);
        for (int j = 0; j < mr; j++) _mm512_mask_storeu_ps(y + (size_t)j * ldy + 16 * h, mn, r[j]);
    }
}

typedef struct {
    const float *xt, *w, *b;
    float *wt;
    int M, K, epi, R;
    tile_fn tile;
} ws16;

/* Rows n0 .. n0 + nr of w against every row of x (y at column n0), over
 * every K block, the running values in registers between blocks. */
K_AVX512 static void one(const ws16 *c, float *y, size_t ldy, int n0, int nr, gemm_ws_pf *pf) {
    __m512 v[RMAX], acc[RMAX];
    int R = c->R, K = c->K;
    for (int k0 = 0; k0 < K; k0 += GEMM_KC_F) {
        int kc = K - k0 < GEMM_KC_F ? K - k0 : GEMM_KC_F;
        const float *ws = c->w + (size_t)n0 * K + k0;
        size_t ldw = (size_t)K;
        if (nr < R) {   /* the last tile: its rows zero padded */
            memset(c->wt, 0, (size_t)R * WT_LD * 4);
            for (int i = 0; i < nr; i++) memcpy(c->wt + (size_t)i * WT_LD, ws + (size_t)i * K, (size_t)kc * 4);
            ws = c->wt, ldw = WT_LD;
        }
        const char *at;
        int npf = gemm_ws_pf_take(pf, kc, &at);
        c->tile(c->xt + (size_t)k0 * 16, ws, ldw, kc, acc, at, npf);
        if (k0 == 0) {
            if (c->epi & K_GEMM_ACC) load_t(v, R, y, ldy, c->M, nr);
            for (int i = 0; i < R; i++) {
                __m512 bi = c->b && i < nr ? _mm512_set1_ps(c->b[n0 + i]) : _mm512_setzero_ps();
                __m512 s = (c->epi & K_GEMM_ACC) ? _mm512_add_ps(bi, v[i]) : bi;
                v[i] = _mm512_add_ps(acc[i], s);
            }
        } else {
            for (int i = 0; i < R; i++) v[i] = _mm512_add_ps(acc[i], _mm512_add_ps(_mm512_setzero_ps(), v[i]));
        }
    }
    store_t(v, R, y, ldy, c->M, nr);
    if (c->epi & K_GEMM_GELU) gemm_gelu_tile_avx512(y, ldy, c->M, nr);
}

/* The L1 sets rows K floats apart spread over (at most 64). */
static int sets_spread(int K) {
    size_t s = (size_t)K * 4;
    if (s % 64) return 64;   /* rows at odd offsets within lines */
    int a = (int)(s / 64 % 64), g = 64;
    while (a) {   /* gcd(lines, 64) */
        int t = g % a;
        g = a, a = t;
    }
    return 64 / g;
}

K_AVX512 void gemm_run_ws16(float *y, int ldy, const float *x, int ldx, const float *w,
                            const float *b, int M, int N, int K, int epi, void *scratch) {
    float *xt = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    int spread = sets_spread(K);
    ws16 c = {xt, w, b, xt + (size_t)16 * K, M, K, epi, 28, tile28};
    if (spread == 1) c.R = 10, c.tile = tile10;
    else if (spread == 2) c.R = 20, c.tile = tile20;
    pack_xt(xt, x, ldx, M, K);
    size_t calls = (size_t)(K + GEMM_KC_F - 1) / GEMM_KC_F;
    for (int n0 = 0; n0 < N; n0 += c.R) {
        int nr = N - n0 < c.R ? N - n0 : c.R;
        gemm_ws_pf pf = gemm_ws_pf_start(w, n0, c.R, N, K, calls);
        one(&c, y + n0, (size_t)ldy, n0, nr, &pf);
        /* the lines of y the next tile writes: y's rows are far apart, and
         * no prefetcher follows these writes */
        if (n0 + 2 * c.R <= N)
            for (int j = 0; j < M; j++) {
                _mm_prefetch((const char *)(y + (size_t)j * ldy + n0 + c.R), _MM_HINT_T0);
                _mm_prefetch((const char *)(y + (size_t)j * ldy + n0 + 2 * c.R - 1), _MM_HINT_T0);
            }
    }
}

#endif
