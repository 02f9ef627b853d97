/* vec512.h - vec_impl.h's lane operations in 16 float lanes (AVX-512 F),
 * and vexp (vec_exp_impl.h) over them: the one exp in zmm registers that
 * the AVX-512 kernels share (the fused attention's, attn_flash_avx512.c;
 * the softmax of attention by heads, attn_h.c; the GELU epilogue of the
 * f32 GEMM, gemm_f32.c). Included by those files only, after immintrin.h;
 * functions calling vexp need AVX-512 F in their target. */
#ifndef ED_KERN_VEC512_H
#define ED_KERN_VEC512_H

#define VF __m512
#define VF_N 16
#define VT __attribute__((target("avx512f")))

#define vf_set1 _mm512_set1_ps
#define vf_load _mm512_loadu_ps
#define vf_store _mm512_storeu_ps
#define vf_add _mm512_add_ps
#define vf_sub _mm512_sub_ps
#define vf_mul _mm512_mul_ps
#define vf_min _mm512_min_ps
#define vf_max _mm512_max_ps
#define vf_fma _mm512_fmadd_ps
#define vf_fnma _mm512_fnmadd_ps
#define vf_pow2(n) \
    _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23))

#include "kern/vec_exp_impl.h"

#endif
