/* vec_avx2.c - softmax, log-sum-exp and activations in 8 float lanes
 * (AVX2 + FMA); see vec.h. Tails shorter than a vector go through poly.h's
 * scalar forms. */
#include "kern/vec.h"

#ifdef K_VEC_AVX2
#include "kern/poly.h"

#include <immintrin.h>
#include <math.h>

#define V2 __attribute__((target("avx2,fma")))

/* exp_poly in lanes: clamp, 2^n by the exponent field, degree-6 polynomial. */
V2 static inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 shift = _mm256_set1_ps(12582912.0f);
    __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504f), shift), shift);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* erf_poly in lanes (Abramowitz and Stegun 7.1.26 with exp8). */
V2 static inline __m256 erf8(__m256 z) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 a = _mm256_andnot_ps(sign, z);
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                             _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_set1_ps(1.061405429f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
    __m256 e = exp8(_mm256_mul_ps(_mm256_xor_ps(a, sign), a));
    __m256 r = _mm256_fnmadd_ps(_mm256_mul_ps(p, t), e, _mm256_set1_ps(1.0f));
    return _mm256_or_ps(r, _mm256_and_ps(z, sign));
}

V2 static inline __m256 gelu8(__m256 x) {
    __m256 e = erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
}

static inline float gelu1(float v) { return 0.5f * v * (1.0f + erf_poly(v * 0.70710678118654752f)); }

V2 static float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* The 8 lanes of v added into double. */
V2 static double hsum8d(__m256 v) {
    __m256d a = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(s) + _mm_cvtsd_f64(_mm_unpackhi_pd(s, s));
}

/* max over x[0, n) (NaN-free input; -inf when empty). */
V2 static float max_n(const float *x, int n) {
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
    }
    for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    float m = hmax8(_mm256_max_ps(m0, m1));
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

V2 void k_softmax_avx2(float *x, int n) {
    float mx = max_n(x, n);
    __m256 vm = _mm256_set1_ps(mx), s0 = _mm256_setzero_ps(), s1 = s0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 e0 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        __m256 e1 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
        _mm256_storeu_ps(x + i, e0);
        _mm256_storeu_ps(x + i + 8, e1);
        s0 = _mm256_add_ps(s0, e0);
        s1 = _mm256_add_ps(s1, e1);
    }
    double sum = hsum8d(s0) + hsum8d(s1);
    for (; i < n; i++) {
        x[i] = exp_poly(x[i] - mx);
        sum += x[i];
    }
    __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    float fi = (float)(1.0 / sum);
    for (; i < n; i++) x[i] *= fi;
}

V2 double k_logsumexp_avx2(const float *x, int n, float *mx) {
    float m = max_n(x, n);
    *mx = m;
    if (m == -INFINITY) return 0;
    __m256 vm = _mm256_set1_ps(m);
    double sum = 0;
    int i = 0;
    for (; i + 256 <= n; i += 256) {   /* blocks of 256 in f32 lanes (terms <= 1), then double */
        __m256 s0 = _mm256_setzero_ps(), s1 = s0;
        for (int b = 0; b < 256; b += 16) {
            s0 = _mm256_add_ps(s0, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + b), vm)));
            s1 = _mm256_add_ps(s1, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + b + 8), vm)));
        }
        sum += hsum8d(s0) + hsum8d(s1);
    }
    __m256 s0 = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) s0 = _mm256_add_ps(s0, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
    sum += hsum8d(s0);
    for (; i < n; i++) sum += exp_poly(x[i] - m);
    return log(sum);
}

V2 void k_gelu_avx2(float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) x[i] = gelu1(x[i]);
}

V2 void k_gelu_tile_avx2(float *y, size_t ldy, int mr, int nr) {
    for (int r = 0; r < mr; r++) k_gelu_avx2(y + (size_t)r * ldy, (size_t)nr);
}

V2 void k_gelu_tanh_avx2(float *x, size_t n) {
    size_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 v3 = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
        __m256 u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f),
                                 _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), v3, v));
        __m256 t = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(exp8(_mm256_mul_ps(two, u)), one)));
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(one, t)));
    }
    for (; i < n; i++) {
        float v = x[i];
        float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        float t = 1.0f - 2.0f / (exp_poly(2.0f * u) + 1.0f);
        x[i] = 0.5f * v * (1.0f + t);
    }
}

V2 void k_silu_avx2(float *x, size_t n) {
    size_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(x + i, _mm256_div_ps(v, _mm256_add_ps(one, exp8(_mm256_xor_ps(v, sign)))));
    }
    for (; i < n; i++) x[i] = x[i] / (1.0f + exp_poly(-x[i]));
}
#endif
