/* attn_flash_avx512.c - the fused long attention (attn_flash_impl.h) in 16
 * float lanes (AVX-512 F; vec512.h's lanes), for k_attention_flash where k_isa() reaches
 * K_ISA_AVX512: tiles of 12 query rows by 32 keys (24 of the 32 zmm
 * registers hold the tile), so each broadcast of a query element feeds two
 * 16-lane multiply-adds as in the AVX2 set, at twice its lanes and twice
 * its rows. The same online softmax and the same exp polynomial in lanes;
 * the sums are in another order than the 8-lane set's (its own blocking of
 * keys into 32-wide panels), within the same bound of k_attention_ref. */
#include "kern/vec.h"

#if defined(K_HAVE_VEC) && defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kern/vec512.h"

VT static inline float vf_hmax(__m512 v) { return _mm512_reduce_max_ps(v); }

/* The lanes' sum in double: two halves of 8 widened, then added. */
VT static inline double vf_hsum_d(__m512 v) {
    __m512d a = _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)),
                              _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    return _mm512_reduce_add_pd(a);
}

#define AF_MR 12
#undef K_VEC
#define K_VEC(name) name##_avx512
#include "kern/attn_flash_impl.h"
#endif
