/* matmul_f_avx512.c - the few-row f32 product (matmul_f_impl.h) in 16
 * float lanes (AVX-512 F), for k_matmul_ex where k_isa() reaches
 * K_ISA_AVX512: the same tiles as the AVX2 set at twice the lanes (a
 * decode step of up to 16 rows, and the engine's batch-invariant passes of
 * 16, are compute-bound once the weights sit in cache). A row's bits do not
 * depend on the rows beside it, as in the other sets; they differ from the
 * AVX2 set's (16 partial sums per output instead of 8). */
#include "kern/vec.h"

#if defined(K_HAVE_VEC) && defined(__x86_64__)
#include <immintrin.h>

#include "kern/kern.h"

#define VF __m512
#define VF_N 16
#define VT __attribute__((target("avx512f")))

#define vf_set1 _mm512_set1_ps
#define vf_load _mm512_loadu_ps
#define vf_fma _mm512_fmadd_ps

/* The 16 lanes' sum in a fixed order: halves, then the AVX2 set's steps. */
VT static inline float vf_hsum(__m512 v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#undef K_VEC
#define K_VEC(name) name##_avx512
#include "kern/matmul_f_impl.h"
#endif
