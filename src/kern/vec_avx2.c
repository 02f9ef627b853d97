/* vec_avx2.c - softmax, log-sum-exp and activations in 8 float lanes
 * (AVX2 + FMA): vec_impl.h over ymm registers; see vec.h. */
#include "kern/vec.h"

#if defined(K_HAVE_VEC) && defined(__x86_64__)
#include <immintrin.h>

#define VF __m256
#define VF_N 8
#define VT __attribute__((target("avx2,fma")))

#define vf_set1 _mm256_set1_ps
#define vf_load _mm256_loadu_ps
#define vf_store _mm256_storeu_ps
#define vf_add _mm256_add_ps
#define vf_sub _mm256_sub_ps
#define vf_mul _mm256_mul_ps
#define vf_div _mm256_div_ps
#define vf_min _mm256_min_ps
#define vf_max _mm256_max_ps
#define vf_fma _mm256_fmadd_ps
#define vf_fnma _mm256_fnmadd_ps
#define vf_abs(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a)
#define vf_neg(a) _mm256_xor_ps(a, _mm256_set1_ps(-0.0f))
#define vf_copysign(r, z) _mm256_or_ps(vf_abs(r), _mm256_and_ps(z, _mm256_set1_ps(-0.0f)))
#define vf_keep_finite(e, x) _mm256_and_ps(e, _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ))
#define vf_pow2(n) \
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))

VT static inline float vf_hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

VT static inline double vf_hsum_d(__m256 v) {
    __m256d a = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(s) + _mm_cvtsd_f64(_mm_unpackhi_pd(s, s));
}

VT static inline float vf_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* vf_hsum of 8 vectors lane by lane: lane i of the result is vf_hsum of
 * (v[0][i], ..., v[7][i]), by the same tree of additions (matmul_f_impl.h's
 * panels sum 8 rows' outputs at once). */
VT static inline __m256 vf_hsum_lanes(const __m256 *v) {
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(v[0], v[4]), _mm256_add_ps(v[2], v[6])),
                         _mm256_add_ps(_mm256_add_ps(v[1], v[5]), _mm256_add_ps(v[3], v[7])));
}

/* r[0..8) as the rows of an 8 x 8 block, transposed in place. */
VT static inline void vf_transpose8(__m256 *r) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

#include "kern/vec_impl.h"
#include "kern/attn_flash_impl.h"
#define MF_PANEL 1   /* k_matmul_fp: measured here only (docs/BENCHMARKS.md) */
#include "kern/matmul_f_impl.h"
#endif
