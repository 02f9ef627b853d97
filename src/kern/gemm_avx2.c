/* gemm_avx2.c - k_gemm's AVX2 + FMA pieces: w packing into 16-column
 * micro-panels and the f32 6 x 16 micro-kernel. Layouts: gemm.h, loops:
 * gemm.c (the same driver as AVX-512's, with this tile).
 *
 * The tile is sized for the 16 ymm registers: 6 rows x 16 columns = 12
 * accumulators, 2 weight vectors of the k-row, 1 broadcast of x[i][k].
 * Per k: 2 loads, 6 broadcasts, 12 FMAs (the FMA ports' 2 per cycle need
 * no more than 2 loads + 6 broadcasts in the same 6 cycles). The epilogue
 * adds the bias and y's old value and stores rows of 16 (masked at the
 * right edge), then GELU over the finished rows (k_gelu's AVX2 lanes).
 *
 * bf16 mode runs the same f32 kernel: x is rounded to bf16 while packed
 * (as AVX-512 BF16 rounds it) and the bf16 weights are widened while
 * packed, so every product is exact and the sums are f32, the arithmetic of
 * vdpbf16ps. The weights still cost half the bytes where they are read from
 * memory (packing, once per block). */
#include "kern/gemm.h"
#include "kern/half.h"
#include "kern/vec.h"

#if defined(K_HAVE_VEC) && defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#define V2 __attribute__((target("avx2,fma,f16c")))

/* Rows [0, M) of x[:, 0 .. kc) as one k-major micro-panel: xp[k * Mp + r]
 * (Mp = GEMM_MR_AVX2; rows past M zero), so that the kernel's broadcasts of
 * a k step read 24 consecutive bytes; bf: each value rounded to bf16
 * (nearest even) and widened back. */
static void pack_x(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf) {
    float *d = xp;
    if (M < Mp) memset(d, 0, sizeof(float) * (size_t)kc * Mp);
    for (int r = 0; r < M; r++) {
        const float *xr = x + (size_t)r * ldx;
        if (!bf)
            for (int k = 0; k < kc; k++) d[(size_t)k * Mp + r] = xr[k];
        else
            for (int k = 0; k < kc; k++) d[(size_t)k * Mp + r] = k_h2f(k_f32_to_bf16(xr[k]), 1);
    }
}

void gemm_pack_x_avx2(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf16) {
    (void)bf16;
    pack_x(xp, x, ldx, M, Mp, kc, 0);
}

void gemm_pack_x_bf_avx2(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf16) {
    (void)bf16;
    pack_x(xp, x, ldx, M, Mp, kc, 1);
}

/* 8 values of row j from column k as f32 (halves widened exactly). */
V2 static inline __m256 ld_row8(k_w w, size_t at) {
    if (w.t == K_F32) return _mm256_loadu_ps((const float *)w.p + at);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w.p + at));
    if (w.t == K_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

/* r[i] (row i, 8 k) -> r[k] (8 rows at column k). */
V2 static inline void transpose8(__m256 r[8]) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Columns [n0, n0 + nn) of w[:, k0 .. k0 + kc) as 16-column panels of kc
 * rows: [k][16] f32, zero padded. Halves are widened exactly; bf: then
 * every value is rounded to bf16 (a no-op for bf16 weights). Whole
 * 8 x 8 blocks are transposed in registers; edges element by element.
 * f32, f16 or bf16 only: k_gemm_isa reads AMX-packed (K_BF16A) weights
 * through its C path. */
V2 static void pack_w(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf) {
    const int NR = GEMM_NR_AVX2;
    for (int j0 = 0; j0 < nn; j0 += NR) {
        float *pan = (float *)wp + (size_t)j0 * kc;
        int nj = nn - j0 < NR ? nn - j0 : NR, k = 0;
        for (; k + 8 <= kc; k += 8)
            for (int h = 0; h < 2; h++) {
                if (8 * h + 8 > nj) break;
                __m256 r[8];
                for (int i = 0; i < 8; i++) r[i] = ld_row8(w, (size_t)(n0 + j0 + 8 * h + i) * K + k0 + k);
                transpose8(r);
                for (int i = 0; i < 8; i++) _mm256_store_ps(pan + (size_t)(k + i) * NR + 8 * h, r[i]);
            }
        int jb = nj & ~7;   /* what the blocks left: columns from jb above k, all from k on */
        for (int kk = jb == NR ? k : 0; kk < kc; kk++)
            for (int j = kk < k ? jb : 0; j < NR; j++) {
                float v = 0.0f;
                if (j < nj) {
                    size_t at = (size_t)(n0 + j0 + j) * K + k0 + kk;
                    v = w.t == K_F32 ? ((const float *)w.p)[at] : k_h2f(((const uint16_t *)w.p)[at], w.t == K_BF16);
                }
                pan[(size_t)kk * NR + j] = v;
            }
        if (bf && w.t != K_BF16)
            for (size_t i = 0; i < (size_t)kc * NR; i++) pan[i] = k_h2f(k_f32_to_bf16(pan[i]), 1);
    }
}

void gemm_pack_w_avx2(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf16) {
    (void)bf16;
    pack_w(wp, w, K, n0, nn, k0, kc, 0);
}

void gemm_pack_w_bf_avx2(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf16) {
    (void)bf16;
    pack_w(wp, w, K, n0, nn, k0, kc, 1);
}

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define DECL(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();
#define FMA(r)                                                                   \
    {                                                                            \
        __m256 xb = _mm256_broadcast_ss(xk + (r));        \
        c##r##0 = _mm256_fmadd_ps(xb, w0, c##r##0);                              \
        c##r##1 = _mm256_fmadd_ps(xb, w1, c##r##1);                              \
    }
#define STORE(r)                                                                 \
    if (r < mr) {                                                                \
        float *yr = y + (size_t)(r) * ldy;                                       \
        __m256 a0 = bv0, a1 = bv1;                                               \
        if (full) {   /* plain loads and stores: masked ones are slow on Zen */  \
            if (!first) a0 = _mm256_add_ps(a0, _mm256_loadu_ps(yr)),             \
                        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(yr + 8));         \
            _mm256_storeu_ps(yr, _mm256_add_ps(c##r##0, a0));                    \
            _mm256_storeu_ps(yr + 8, _mm256_add_ps(c##r##1, a1));                \
        } else {                                                                 \
            if (!first) a0 = _mm256_add_ps(a0, _mm256_maskload_ps(yr, m0)),      \
                        a1 = _mm256_add_ps(a1, _mm256_maskload_ps(yr + 8, m1));  \
            _mm256_maskstore_ps(yr, m0, _mm256_add_ps(c##r##0, a0));             \
            _mm256_maskstore_ps(yr + 8, m1, _mm256_add_ps(c##r##1, a1));         \
        }                                                                        \
    }

V2 static inline __m256i lanes_below(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

V2 void gemm_kernel_f32_avx2(const void *xp, const void *wp, int kk, float *y, size_t ldy, int mr,
                             int nr, const float *b, int first, int gelu) {
    const float *x = xp, *w = wp;
    ROWS(DECL)
    for (int k = 0; k < kk; k++) {
        __m256 w0 = _mm256_load_ps(w + (size_t)k * GEMM_NR_AVX2);
        __m256 w1 = _mm256_load_ps(w + (size_t)k * GEMM_NR_AVX2 + 8);
        const float *xk = x + (size_t)k * GEMM_MR_AVX2;
        ROWS(FMA)
    }
    __m256i m0 = lanes_below(nr), m1 = lanes_below(nr - 8);
    __m256 bv0 = b ? _mm256_maskload_ps(b, m0) : _mm256_setzero_ps();
    __m256 bv1 = b ? _mm256_maskload_ps(b + 8, m1) : _mm256_setzero_ps();
    const int full = nr == GEMM_NR_AVX2;
    ROWS(STORE)
    if (gelu)
        for (int r = 0; r < mr; r++) K_VEC(k_gelu)(y + (size_t)r * ldy, (size_t)nr);
}
#endif
