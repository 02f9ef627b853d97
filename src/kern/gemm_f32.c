/* gemm_f32.c - k_gemm's AVX-512 pieces: packing (both modes), the fp32
 * 14 x 32 micro-kernel and the GELU epilogue. Layouts: gemm.h, loops:
 * gemm.c. Only compiled for x86-64; run when the CPU has AVX-512 F/BW/VL/DQ.
 */
#include "kern/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#include "kern/vec512.h"
#include "kern/x86.h"

#define AVX512 K_AVX512

/* Rows 0..13 of the micro-kernel, as named registers. */
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)

static inline __mmask32 mask32(int n) {
    return n >= 32 ? (__mmask32)0xffffffffu : n <= 0 ? (__mmask32)0 : (__mmask32)((1u << n) - 1);
}



AVX512 void gemm_pack_x_avx512(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf16) {
    int kcp = (kc + 1) & ~1;
    for (int r = 0; r < Mp; r++) {
        if (bf16) {
            uint16_t *d = (uint16_t *)xp + (size_t)r * GEMM_KC_B;
            if (r >= M) {
                memset(d, 0, (size_t)kcp * 2);
                continue;
            }
            const float *xr = x + (size_t)r * ldx;
            for (int k = 0; k < kcp; k += 32) {
                __m512 a = _mm512_maskz_loadu_ps(k_mask16(kc - k), xr + k);
                __m512 b = _mm512_maskz_loadu_ps(k_mask16(kc - k - 16), xr + k + 16);
                _mm512_mask_storeu_epi16(d + k, mask32(kcp - k), k_to_bf16x32(a, b));
            }
        } else {
            float *d = (float *)xp + (size_t)r * GEMM_KC_F;
            if (r >= M) {
                memset(d, 0, (size_t)kc * 4);
                continue;
            }
            const float *xr = x + (size_t)r * ldx;
            int k = 0;
            for (; k + 64 <= kc; k += 64) {
                __m512 a = _mm512_loadu_ps(xr + k), b = _mm512_loadu_ps(xr + k + 16);
                __m512 c = _mm512_loadu_ps(xr + k + 32), e = _mm512_loadu_ps(xr + k + 48);
                _mm512_storeu_ps(d + k, a), _mm512_storeu_ps(d + k + 16, b);
                _mm512_storeu_ps(d + k + 32, c), _mm512_storeu_ps(d + k + 48, e);
            }
            for (; k < kc; k += 16) {
                __mmask16 m = k_mask16(kc - k);
                _mm512_mask_storeu_ps(d + k, m, _mm512_maskz_loadu_ps(m, xr + k));
            }
        }
    }
}

/* 16 values of a weight row as f32 (m: the valid ones, the rest 0). */
AVX512 static inline __m512 w16(k_w w, size_t i, __mmask16 m) {
    if (w.t == K_F32) return _mm512_maskz_loadu_ps(m, (const float *)w.p + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w.p + i);
    if (w.t == K_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Blocks of 16 columns x 16 k: load the rows (converted to f32), transpose,
 * store k-major (bf16 mode: pairs of k rounded into one 32-bit lane). */
AVX512 void gemm_pack_w_avx512(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf16) {
    int kk = bf16 ? (kc + 1) / 2 : kc;
    for (int j0 = 0; j0 < nn; j0 += GEMM_NR)
        for (int h = 0; h < GEMM_NR; h += 16) {
            int c0 = j0 + h, nv = nn - c0 < 16 ? nn - c0 : 16;
            float *pf = (float *)wp + (size_t)j0 * kk + h;   /* 32-bit lanes either way */
            for (int kb = 0; kb < kc; kb += 16) {
                int kv = kc - kb < 16 ? kc - kb : 16;
                __mmask16 m = k_mask16(kv);
                __m512 r[16];
                for (int i = 0; i < 16; i++)
                    r[i] = i < nv ? w16(w, (size_t)(n0 + c0 + i) * K + k0 + kb, m)
                                  : _mm512_setzero_ps();
                k_tr16(r);
                if (!bf16) {
                    for (int t = 0; t < kv; t++)
                        _mm512_storeu_ps(pf + (size_t)(kb + t) * GEMM_NR, r[t]);
                } else {
                    const __m512i hi16 = _mm512_set1_epi32((int)0xffff0000u);
                    for (int t = 0; t < kv; t += 2) {   /* k even in the low half */
                        __m512i lo = _mm512_srli_epi32(k_rne_hi(r[t]), 16);
                        __m512i hi = _mm512_and_si512(k_rne_hi(r[t + 1]), hi16);
                        _mm512_storeu_si512(pf + (size_t)(kb + t) / 2 * GEMM_NR,
                                            _mm512_or_si512(lo, hi));
                    }
                }
            }
        }
}

/* x * Phi(x) as k_gelu: erf by Abramowitz-Stegun 7.1.26 (poly.h's erf_poly). */
AVX512 static inline __m512 gelu16(__m512 v) {
    __m512 z = _mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f));
    __m512 a = _mm512_abs_ps(z);
    __m512 d = _mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f));
    __m512 t = _mm512_rcp14_ps(d);   /* one Newton step: ~1e-8 relative */
    t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));
    __m512 p = _mm512_set1_ps(1.061405429f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    __m512 e = vexp(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a));
    __m512 r = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, _mm512_set1_ps(1.0f));
    __mmask16 neg = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
    r = _mm512_mask_sub_ps(r, neg, _mm512_setzero_ps(), r);
    __m512 half_v = _mm512_mul_ps(_mm512_set1_ps(0.5f), v);
    return _mm512_mul_ps(half_v, _mm512_add_ps(_mm512_set1_ps(1.0f), r));
}

AVX512 void gemm_gelu_tile_avx512(float *y, size_t ldy, int mr, int nr) {
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j += 16) {
            float *p = y + (size_t)i * ldy + j;
            __mmask16 m = k_mask16(nr - j);
            _mm512_mask_storeu_ps(p, m, gelu16(_mm512_maskz_loadu_ps(m, p)));
        }
}

/* The 14 x 32 tile: 28 accumulators, per k two w vectors and 14 broadcasts
 * of x (one pointer, constant offsets i * GEMM_KC_F). */
AVX512 void gemm_kernel_f32_avx512(const void *xp, const void *wp, int kk, float *y, size_t ldy,
                                   int mr, int nr, const float *b, int first, int gelu) {
    const float *xv = xp, *wv = wp;
#define DECL(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps();
    ROWS(DECL)
#undef DECL
    for (int i = 0; i < mr; i++) {   /* the tile's lines, into L2 for the stores at the end */
        _mm_prefetch((const char *)(y + (size_t)i * ldy), _MM_HINT_T1);
        _mm_prefetch((const char *)(y + (size_t)i * ldy + nr - 1), _MM_HINT_T1);
    }
    for (int k = 0; k < kk; k++) {
        __m512 w0 = _mm512_load_ps(wv), w1 = _mm512_load_ps(wv + 16);
#define FMA(i)                                                    \
    {                                                             \
        __m512 xb = _mm512_set1_ps(xv[(i) * GEMM_KC_F]);          \
        c##i##a = _mm512_fmadd_ps(xb, w0, c##i##a);               \
        c##i##b = _mm512_fmadd_ps(xb, w1, c##i##b);               \
    }
        ROWS(FMA)
#undef FMA
        xv++;
        wv += GEMM_NR;
    }
    K_GEMM_TILE_STORE(ROWS);
    if (gelu) gemm_gelu_tile_avx512(y, ldy, mr, nr);
}

#endif
