/* vec.h - the element-wise kernels' vector versions (private to src/kern):
 * softmax, log-sum-exp and the activations, written with intrinsics so that
 * the exp / erf polynomials run in lanes (GCC does not vectorise poly.h's
 * branch-free scalar forms on its own). Each computes poly.h's formulas,
 * lane by lane (rounding may differ by contraction into FMAs: within the
 * scalar twins' stated tolerances). kern.c and norm_act.c dispatch to them
 * at K_ISA_VEC and up; vec_avx2.c (x86-64: AVX2 + FMA). */
#ifndef ED_KERN_VEC_H
#define ED_KERN_VEC_H

#include <stddef.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define K_VEC_AVX2 1
void k_softmax_avx2(float *x, int n);
double k_logsumexp_avx2(const float *x, int n, float *mx);
void k_gelu_avx2(float *x, size_t n);
void k_gelu_tanh_avx2(float *x, size_t n);
void k_silu_avx2(float *x, size_t n);
/* y[mr, nr] (ldy) = gelu(y), the GEMM epilogue's form. */
void k_gelu_tile_avx2(float *y, size_t ldy, int mr, int nr);
#endif

#endif
