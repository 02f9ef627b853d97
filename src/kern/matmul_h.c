/* matmul_h.c - matrix products with half-precision weights (f16 or bf16,
 * kept as stored), expanded to f32 in registers: the decode step reads half
 * the bytes of an f32 weight, and a checkpoint stored in f16 is used exactly.
 *
 * k_matmul_h serves few rows (decode: one row per sequence): every weight
 * row is loaded once and multiplied with up to 8 activation rows while it
 * is in registers. Hand-written AVX-512 and AVX2 (+F16C, FMA) versions are
 * picked at run time; the portable one and the _ref twin are plain C.
 */
#include "kern/half.h"
#include "kern/kern.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define K_X86 1
/* AVX2 + FMA + F16C, the three the AVX2 version needs. clang (14) cannot
 * ask for f16c; every AVX2 CPU with FMA has it (Haswell, Zen and later). */
#ifdef __clang__
#define K_HAS_AVX2_SET (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#else
#define K_HAS_AVX2_SET (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && \
                        __builtin_cpu_supports("f16c"))
#endif
#endif


static void h_to_f32_c(float *dst, const uint16_t *src, size_t n, int bf16) {
    for (size_t i = 0; i < n; i++) dst[i] = k_h2f(src[i], bf16);
}

/* The portable version: rows of x in blocks of up to 8 per weight row. */
static void matmul_h_c(float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw,
                       int bf16, const float *b, int M, int N, int K) {
    for (int m0 = 0; m0 < M; m0 += 8) {
        int mm = M - m0 < 8 ? M - m0 : 8;
        for (int n = 0; n < N; n++) {
            float acc[8] = {0};
            const uint16_t *wn = w + (size_t)n * ldw;
            for (int k = 0; k < K; k++) {
                float wk = k_h2f(wn[k], bf16);
                for (int i = 0; i < mm; i++) acc[i] += x[(size_t)(m0 + i) * ldx + k] * wk;
            }
            for (int i = 0; i < mm; i++) y[(size_t)(m0 + i) * ldy + n] = acc[i] + (b ? b[n] : 0.0f);
        }
    }
}

#ifdef K_X86
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512 ld16(const uint16_t *p, int bf16, __mmask16 k) {
    __m256i h = _mm256_maskz_loadu_epi16(k, p);
    if (bf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* Blocks of R = 4 or 8 activation rows (a short block repeats its last row
 * and drops the extra results): R named accumulators stay in registers and
 * each weight vector is expanded once for the block. */
#define H_FMA(i) a##i = _mm512_fmadd_ps(LD(x##i + k), wv, a##i)
#define H_BLOCK(R, BODY)                                                              \
    for (int n = 0; n < N; n++) {                                                     \
        const uint16_t *wn = w + (size_t)n * ldw;                                     \
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                   \
        __m512 a4 = a0, a5 = a0, a6 = a0, a7 = a0;                                    \
        int k = 0;                                                                    \
        for (; k + 16 <= K; k += 16) {                                                \
            __m512 wv = ld16(wn + k, bf16, 0xffff);                                   \
            BODY                                                                      \
        }                                                                             \
        if (kt) {                                                                     \
            __m512 wv = ld16(wn + k, bf16, tail);                                     \
            BODY_TAIL                                                                 \
        }                                                                             \
        float bn = b ? b[n] : 0.0f, r[8];                                             \
        r[0] = _mm512_reduce_add_ps(a0), r[1] = _mm512_reduce_add_ps(a1);             \
        r[2] = _mm512_reduce_add_ps(a2), r[3] = _mm512_reduce_add_ps(a3);             \
        if (R > 4) {                                                                  \
            r[4] = _mm512_reduce_add_ps(a4), r[5] = _mm512_reduce_add_ps(a5);         \
            r[6] = _mm512_reduce_add_ps(a6), r[7] = _mm512_reduce_add_ps(a7);         \
        }                                                                             \
        for (int i = 0; i < mm; i++) y[(size_t)(m0 + i) * ldy + n] = r[i] + bn;       \
    }

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void matmul_h_avx512(
    float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw, int bf16,
    const float *b, int M, int N, int K) {
    int kt = K % 16;
    __mmask16 tail = (__mmask16)((1u << kt) - 1);
    for (int m0 = 0; m0 < M;) {
        int R = M - m0 > 4 ? 8 : 4, mm = M - m0 < R ? M - m0 : R;
        const float *x0, *x1, *x2, *x3, *x4, *x5, *x6, *x7;
#define ROW(i) (x + (size_t)(m0 + (i < mm ? i : mm - 1)) * ldx)
        x0 = ROW(0), x1 = ROW(1), x2 = ROW(2), x3 = ROW(3);
        x4 = ROW(4), x5 = ROW(5), x6 = ROW(6), x7 = ROW(7);
#undef ROW
        if (R == 4) {
#define LD(p) _mm512_loadu_ps(p)
#define BODY_TAIL H_FMA4M
#define H_FMA4M { a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x0 + k), wv, a0); \
                  a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x1 + k), wv, a1); \
                  a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x2 + k), wv, a2); \
                  a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x3 + k), wv, a3); }
            H_BLOCK(4, H_FMA(0); H_FMA(1); H_FMA(2); H_FMA(3);)
#undef BODY_TAIL
        } else {
#define BODY_TAIL H_FMA8M
#define H_FMA8M { H_FMA4M \
                  a4 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x4 + k), wv, a4); \
                  a5 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x5 + k), wv, a5); \
                  a6 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x6 + k), wv, a6); \
                  a7 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x7 + k), wv, a7); }
            H_BLOCK(8, H_FMA(0); H_FMA(1); H_FMA(2); H_FMA(3); H_FMA(4); H_FMA(5); H_FMA(6);
                       H_FMA(7);)
#undef BODY_TAIL
#undef LD
        }
        m0 += mm;
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void h_to_f32_avx512(
    float *dst, const uint16_t *src, size_t n, int bf16) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, ld16(src + i, bf16, 0xffff));
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(dst + i, k, ld16(src + i, bf16, k));
    }
}

/* One activation row against 4 weight rows at a time (greedy decoding):
 * four accumulators share each x load, and one 4-way reduction. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void matmul_h_avx512_m1(
    float *y, const float *x, const uint16_t *w, int ldw, int bf16, const float *b, int N, int K) {
    int kt = K % 16, n = 0;
    __mmask16 tail = (__mmask16)((1u << kt) - 1);
    for (; n + 4 <= N; n += 4) {
        const uint16_t *w0 = w + (size_t)n * ldw;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int k = 0;
        for (; k + 16 <= K; k += 16) {
            __m512 xv = _mm512_loadu_ps(x + k);
            a0 = _mm512_fmadd_ps(xv, ld16(w0 + k, bf16, 0xffff), a0);
            a1 = _mm512_fmadd_ps(xv, ld16(w0 + ldw + k, bf16, 0xffff), a1);
            a2 = _mm512_fmadd_ps(xv, ld16(w0 + 2 * (size_t)ldw + k, bf16, 0xffff), a2);
            a3 = _mm512_fmadd_ps(xv, ld16(w0 + 3 * (size_t)ldw + k, bf16, 0xffff), a3);
        }
        if (kt) {
            __m512 xv = _mm512_maskz_loadu_ps(tail, x + k);
            a0 = _mm512_fmadd_ps(xv, ld16(w0 + k, bf16, tail), a0);
            a1 = _mm512_fmadd_ps(xv, ld16(w0 + ldw + k, bf16, tail), a1);
            a2 = _mm512_fmadd_ps(xv, ld16(w0 + 2 * (size_t)ldw + k, bf16, tail), a2);
            a3 = _mm512_fmadd_ps(xv, ld16(w0 + 3 * (size_t)ldw + k, bf16, tail), a3);
        }
        y[n] = _mm512_reduce_add_ps(a0) + (b ? b[n] : 0.0f);
        y[n + 1] = _mm512_reduce_add_ps(a1) + (b ? b[n + 1] : 0.0f);
        y[n + 2] = _mm512_reduce_add_ps(a2) + (b ? b[n + 2] : 0.0f);
        y[n + 3] = _mm512_reduce_add_ps(a3) + (b ? b[n + 3] : 0.0f);
    }
    if (n < N) matmul_h_avx512(y + n, 0, x, 0, w + (size_t)n * ldw, ldw, bf16, b ? b + n : NULL, 1, N - n, K);
}

__attribute__((target("avx2,fma,f16c"))) static inline __m256 ld8(const uint16_t *p, int bf16) {
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

__attribute__((target("avx2,fma,f16c"))) static void h_to_f32_avx2(float *dst, const uint16_t *src,
                                                                  size_t n, int bf16) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, ld8(src + i, bf16));
    for (; i < n; i++) dst[i] = k_h2f(src[i], bf16);
}

__attribute__((target("avx2,fma,f16c"))) static void matmul_h_avx2(
    float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw, int bf16,
    const float *b, int M, int N, int K) {
    int K8 = K & ~7;
    for (int m0 = 0; m0 < M; m0 += 8) {
        int mm = M - m0 < 8 ? M - m0 : 8;
        for (int n = 0; n < N; n++) {
            const uint16_t *wn = w + (size_t)n * ldw;
            __m256 a[8];
            for (int i = 0; i < 8; i++) a[i] = _mm256_setzero_ps();
            for (int k = 0; k < K8; k += 8) {
                __m256 wv = ld8(wn + k, bf16);
                for (int i = 0; i < mm; i++)
                    a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(x + (size_t)(m0 + i) * ldx + k), wv, a[i]);
            }
            float bn = b ? b[n] : 0.0f;
            for (int i = 0; i < mm; i++) {
                __m128 s = _mm_add_ps(_mm256_castps256_ps128(a[i]), _mm256_extractf128_ps(a[i], 1));
                s = _mm_add_ps(s, _mm_movehl_ps(s, s));
                s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
                float r = _mm_cvtss_f32(s);
                for (int k = K8; k < K; k++) r += x[(size_t)(m0 + i) * ldx + k] * k_h2f(wn[k], bf16);
                y[(size_t)(m0 + i) * ldy + n] = r + bn;
            }
        }
    }
}
#endif

int k_matmul_h_isa(int isa, float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw,
                   int bf16, const float *b, int M, int N, int K) {
    isa = k_isa_at(isa);
    if (M <= 0 || N <= 0) return 1;
#ifdef K_X86
    if (isa >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
        if (M == 1) matmul_h_avx512_m1(y, x, w, ldw, bf16, b, N, K);
        else matmul_h_avx512(y, ldy, x, ldx, w, ldw, bf16, b, M, N, K);
        return 2;
    }
    if (isa >= 1 && K_HAS_AVX2_SET) {
        matmul_h_avx2(y, ldy, x, ldx, w, ldw, bf16, b, M, N, K);
        return 1;
    }
#endif
    matmul_h_c(y, ldy, x, ldx, w, ldw, bf16, b, M, N, K);
    return 0;
}

void k_matmul_h(float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw, int bf16,
                const float *b, int M, int N, int K) {
    k_matmul_h_isa(2, y, ldy, x, ldx, w, ldw, bf16, b, M, N, K);
}

void k_h_to_f32(float *dst, const uint16_t *src, size_t n, int bf16) {
#ifdef K_X86
    int isa = k_isa();
    if (isa >= K_ISA_AVX512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
        h_to_f32_avx512(dst, src, n, bf16);
        return;
    }
    if (isa >= K_ISA_VEC && K_HAS_AVX2_SET) {
        h_to_f32_avx2(dst, src, n, bf16);
        return;
    }
#endif
    h_to_f32_c(dst, src, n, bf16);
}

void k_matmul_h_ref(float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw,
                    int bf16, const float *b, int M, int N, int K) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = b ? b[j] : 0.0;
            for (int k = 0; k < K; k++)
                acc += (double)x[(size_t)i * ldx + k] * k_h2f(w[(size_t)j * ldw + k], bf16);
            y[(size_t)i * ldy + j] = (float)acc;
        }
}
