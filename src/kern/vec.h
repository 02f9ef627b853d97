/* vec.h - the kernels' vector level (K_ISA_VEC, private to src/kern): one
 * set of names per architecture, picked at compile time, so that each
 * dispatch point reads the same on x86-64 and aarch64:
 *
 *   #ifdef K_HAVE_VEC
 *       if (k_isa() >= K_ISA_VEC) return K_VEC(k_softmax)(x, n);
 *   #endif
 *
 * K_VEC(name) is name_avx2 on x86-64 (AVX2 + FMA + F16C, *_avx2.c) and
 * name_neon on aarch64 (NEON, *_neon.c). Each file of a pair computes the
 * same thing with the same order of sums where its header says so.
 *
 * Declared here: softmax, log-sum-exp, the activations (vec_impl.h) and
 * the fused long attention (attn_flash_impl.h; also in 16 lanes,
 * attn_flash_avx512.c) and the few-row f32 product (matmul_f_impl.h; also
 * in 16 lanes, matmul_f_avx512.c), instantiated by vec_avx2.c and
 * vec_neon.c, written with intrinsics so
 * that the exp / erf polynomials run in lanes (GCC does not vectorise
 * poly.h's branch-free scalar forms on its own). Each computes poly.h's
 * formulas lane by lane (rounding may differ by contraction into FMAs:
 * within the scalar twins' stated tolerances). */
#ifndef ED_KERN_VEC_H
#define ED_KERN_VEC_H

#include <stddef.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define K_HAVE_VEC 1
#define K_VEC(name) name##_avx2
#elif defined(__aarch64__) && defined(__GNUC__)
#define K_HAVE_VEC 1
#define K_VEC(name) name##_neon
#endif

#ifdef K_HAVE_VEC
void K_VEC(k_softmax)(float *x, int n);
double K_VEC(k_logsumexp)(const float *x, int n, float *mx);
double K_VEC(k_exp_scaled)(float *w, const float *x, int n, float t, float *mx);
void K_VEC(k_gelu)(float *x, size_t n);
void K_VEC(k_gelu_tanh)(float *x, size_t n);
void K_VEC(k_silu)(float *x, size_t n);
void K_VEC(k_lstm_cell)(float *h, float *c, const float *g, int n);
/* attn_flash_impl.h: k_attention_flash's lanes; _dh: what dh must divide by */
size_t K_VEC(k_attention_flash_scratch)(int Tk, int dh);
void K_VEC(k_attention_flash)(float *o, int ldo, const float *q, int ldq, const float *k,
                              int ldk, const float *v, int ldv, int Mq, int Tk, int dh,
                              float scale, void *scratch);
int K_VEC(k_attention_flash_dh)(void);
/* matmul_f_impl.h: k_matmul_ex for few rows (M <= K_MF_ROWS) */
#define K_MF_ROWS 16
void K_VEC(k_matmul_f)(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                       const float *b, int M, int N, int K);
#ifdef __x86_64__
/* the same sums for any M through x packed in panels of 16 rows
 * (matmul_f_impl.h's MF_PANEL part, AVX2 only); scratch of
 * k_matmul_fp_scratch_avx2(M, K) bytes, 64-byte aligned */
size_t k_matmul_fp_scratch_avx2(int M, int K);
void k_matmul_fp_avx2(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                      const float *b, int M, int N, int K, void *scratch);
/* the same in 16 lanes (matmul_f_avx512.c), where k_isa() >= K_ISA_AVX512 */
void k_matmul_f_avx512(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                       const float *b, int M, int N, int K);
/* the fused long attention in 16 lanes (attn_flash_avx512.c), likewise */
size_t k_attention_flash_scratch_avx512(int Tk, int dh);
void k_attention_flash_avx512(float *o, int ldo, const float *q, int ldq, const float *k,
                              int ldk, const float *v, int ldv, int Mq, int Tk, int dh,
                              float scale, void *scratch);
int k_attention_flash_dh_avx512(void);
#endif
#endif

#endif
