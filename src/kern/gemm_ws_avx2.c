/* gemm_ws_avx2.c - k_gemm's few-row fp32 path (gemm_ws.c) on AVX2 + FMA:
 * x transposed once into 16-row panels, 6 rows of w broadcast from the
 * rows as stored (no packing of w), 6 x 16 tiles of y^T (12 ymm
 * accumulators, as the packed AVX2 kernel), the next tile's rows fetched
 * into L2 (prefetcht1) while this one runs, and the line of y that each
 * row of x writes two tiles on (y's rows are a whole output row apart).
 *
 * The sums are the packed AVX2 path's, bit for bit: per K block of
 * GEMM_KC_AVX2 each element's products are added in k order from zero by
 * one fma each; the epilogue (scalar: one tile's outputs are few next to
 * its products) makes acc + (bias or 0, + y's old value with K_GEMM_ACC)
 * for the first block and acc + (0 + the running value) for the others, in
 * the packed kernel's order. No GELU here (the packed path applies k_gelu
 * to whole rows, whose scalar tail is not its vector lanes): gemm.c does
 * not send GELU products this way.
 */
#include "kern/gemm.h"
#include "kern/vec.h"

#if defined(K_HAVE_VEC) && defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#define V2 __attribute__((target("avx2,fma,f16c")))

#define WR 6    /* rows of w in a tile */
#define WC 16   /* rows of x in a panel (two vectors) */
#define KC GEMM_KC_AVX2

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

static inline int rup(int v, int m) { return (v + m - 1) / m * m; }

/* K block (k0, kc), panel p: [kc][16] floats at xt + k0 * Mp + p * kc * 16;
 * rows of x past M zero. */
static void pack_xt(float *xt, const float *x, int ldx, int M, int Mp, int K) {
    for (int k0 = 0; k0 < K; k0 += KC) {
        int kc = K - k0 < KC ? K - k0 : KC;
        for (int m = 0; m < Mp; m++) {
            float *d = xt + (size_t)k0 * Mp + (size_t)(m / WC) * kc * WC + m % WC;
            const float *xr = x + (size_t)m * ldx + k0;
            for (int k = 0; k < kc; k++) d[(size_t)k * WC] = m < M ? xr[k] : 0.0f;
        }
    }
}

/* a[i][0..16) = sum over k < kc of w[i * ldw + k] * xt[k][..], in k order. */
V2 static void tile(const float *xt, const float *w, size_t ldw, int kc, float a[WR][WC],
                    const char *pf, int npf) {
#define DECL(i) __m256 c##i##a = _mm256_setzero_ps(), c##i##b = _mm256_setzero_ps(); \
    const float *w##i = w + (size_t)(i) * ldw;
    ROWS(DECL)
#undef DECL
    for (int k = 0; k < kc; k++) {
        __m256 x0 = _mm256_load_ps(xt), x1 = _mm256_load_ps(xt + 8);
#define FMA(i)                                            \
    {                                                     \
        __m256 wb = _mm256_broadcast_ss(w##i + k);        \
        c##i##a = _mm256_fmadd_ps(wb, x0, c##i##a);       \
        c##i##b = _mm256_fmadd_ps(wb, x1, c##i##b);       \
    }
        ROWS(FMA)
#undef FMA
        if (k < npf) _mm_prefetch(pf + (size_t)k * 64, _MM_HINT_T1);
        if (k + kc < npf) _mm_prefetch(pf + (size_t)(k + kc) * 64, _MM_HINT_T1);
        xt += WC;
    }
#define OUT(i) _mm256_storeu_ps(a[i], c##i##a), _mm256_storeu_ps(a[i] + 8, c##i##b);
    ROWS(OUT)
#undef OUT
}

V2 void gemm_run_ws_avx2(float *y, int ldy, const float *x, int ldx, const float *w,
                         const float *b, int M, int N, int K, int epi, void *scratch) {
    int Mp = rup(M, WC), acc_y = (epi & K_GEMM_ACC) != 0;
    float *xt = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    float *wt = xt + (size_t)Mp * K;   /* a last tile of fewer than 6 rows, zero padded */
    pack_xt(xt, x, ldx, M, Mp, K);
    size_t calls = (size_t)(K + KC - 1) / KC * (size_t)(Mp / WC);
    float a[WR][WC] __attribute__((aligned(32))), v[WR][WC];
    for (int n0 = 0; n0 < N; n0 += WR) {
        int nr = N - n0 < WR ? N - n0 : WR;
        gemm_ws_pf f = gemm_ws_pf_start(w, n0, WR, N, K, calls);
        for (int m0 = 0; m0 < M; m0 += WC) {
            int mr = M - m0 < WC ? M - m0 : WC;
            float *yt = y + (size_t)m0 * ldy + n0;
            for (int k0 = 0; k0 < K; k0 += KC) {
                int kc = K - k0 < KC ? K - k0 : KC;
                const float *ws = w + (size_t)n0 * K + k0;
                size_t ldw = (size_t)K;
                if (nr < WR) {
                    memset(wt, 0, sizeof(float) * WR * KC);
                    for (int i = 0; i < nr; i++)
                        memcpy(wt + (size_t)i * KC, ws + (size_t)i * K, sizeof(float) * (size_t)kc);
                    ws = wt, ldw = KC;
                }
                const char *pf;
                int npf = gemm_ws_pf_take(&f, kc, &pf);
                tile(xt + (size_t)k0 * Mp + (size_t)(m0 / WC) * kc * WC, ws, ldw, kc, a, pf, npf);
                for (int i = 0; i < nr; i++)
                    for (int j = 0; j < mr; j++) {
                        if (k0 == 0) {
                            float bi = b ? b[n0 + i] : 0.0f;
                            float s = acc_y ? bi + yt[(size_t)j * ldy + i] : bi;
                            v[i][j] = a[i][j] + s;
                        } else {
                            v[i][j] = a[i][j] + (0.0f + v[i][j]);
                        }
                    }
            }
            for (int j = 0; j < mr; j++) {
                for (int i = 0; i < nr; i++) yt[(size_t)j * ldy + i] = v[i][j];
                /* the line of this row's outputs 2-3 tiles on: y's rows are
                 * far apart, and no prefetcher follows these writes */
                if (n0 + 16 < N) _mm_prefetch((const char *)(yt + (size_t)j * ldy + 16), _MM_HINT_T0);
            }
        }
    }
}

#endif
