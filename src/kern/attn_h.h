/* attn_h.h - the decoder's cross attention for few query rows over a K/V
 * cache, with the cache in 16-bit halves (f16 or bf16, half the bytes of
 * f32 per decode step) or in f32.
 *
 *   k_f32_to_h(kh, kf, n, bf16);                      fill the half cache once
 *   k_attention_kvh(o, ldo, q, ldq, kh, vh, bf16, Mq, Tk, dh, scale, scratch);
 *   k_attention_kvf(o, ldo, q, ldq, kf, vf, Mq, Tk, dh, scale, scratch);
 *
 * K and V of one head are contiguous [Tk, dh] blocks (the head-major cross
 * cache of core/kvcache.h); every K/V cache line is read from memory once
 * for all Mq query rows (one per sequence or beam, all reading the same
 * encoder output). The softmax uses the polynomial exp of k_softmax, so
 * results match k_attention's on the same (expanded) K/V to ~1e-6.
 */
#ifndef ED_KERN_ATTN_H_H
#define ED_KERN_ATTN_H_H

#include "kern/kern.h"

#include <stddef.h>
#include <stdint.h>

/* dst[n] = src[n] as f16 (IEEE binary16, round to nearest even, overflow
 * -> inf, subnormals kept, NaN -> quiet NaN) or bf16 (round to nearest
 * even, overflow -> inf, NaN stays NaN). */
void k_f32_to_h(uint16_t *dst, const float *src, size_t n, int bf16);
/* The same on the best instruction set up to isa (0 C, 1 AVX2 + F16C or
 * NEON, 2 AVX-512) that this CPU has; returns the one used (for tests). */
int k_f32_to_h_isa(int isa, uint16_t *dst, const float *src, size_t n, int bf16);
/* k_f32_to_h over rows: dst[r * ldd + i] = src[r * lds + i], i < n, r < rows
 * (a head's columns of a product into a cache block). */
void k_f32_to_h_rows(uint16_t *dst, size_t ldd, const float *src, size_t lds, int rows,
                     size_t n, int bf16);

/* One head of attention, few queries, no mask:
 * o[Mq, dh] (row stride ldo) = softmax(scale * q[Mq, dh] (ldq) . K^T) . V
 * with K, V contiguous [Tk, dh] blocks of f16 (bf16 when bf16 != 0),
 * expanded in registers. Any Mq >= 0, Tk >= 0 (Tk 0: o = 0), dh >= 1;
 * fastest for Mq <= 16 and dh <= 64. o may alias q (same rows and stride).
 * scratch: Mq * Tk floats. */
void k_attention_kvh(float *o, int ldo, const float *q, int ldq, const uint16_t *k,
                     const uint16_t *v, int bf16, int Mq, int Tk, int dh, float scale,
                     float *scratch);
/* The scalar twin: double accumulation, libm exp. */
void k_attention_kvh_ref(float *o, int ldo, const float *q, int ldq, const uint16_t *k,
                         const uint16_t *v, int bf16, int Mq, int Tk, int dh, float scale,
                         float *scratch);

/* The same with f32 K/V (contiguous [Tk, dh] blocks): the few-query path
 * without BLAS. */
void k_attention_kvf(float *o, int ldo, const float *q, int ldq, const float *k,
                     const float *v, int Mq, int Tk, int dh, float scale, float *scratch);

/* k_attention_kvh (t K_F16 / K_BF16) or k_attention_kvf (t K_F32) on the
 * best instruction set up to isa (0 portable C, 1 AVX2 + FMA + F16C or NEON
 * for dh = 64, 2 AVX-512 F/BW/VL) that this CPU has; returns the one used (for tests and benchmarks), -1 (nothing
 * done) for another t. */
int k_attention_kv_isa(int isa, float *o, int ldo, const float *q, int ldq, const void *k,
                       const void *v, k_wtype t, int Mq, int Tk, int dh, float scale,
                       float *scratch);

/* internal: the vector level's version for dh = 64 (attn_h_avx2.c,
 * attn_h_neon.c; kern/vec.h names it K_VEC(k_attention_kv); Mq >= 1, Tk >= 1). */
#include "kern/vec.h"
#ifdef K_HAVE_VEC
void K_VEC(k_attention_kv)(float *o, int ldo, const float *q, int ldq, const void *k,
                           const void *v, k_wtype t, int Mq, int Tk, float scale, float *scratch);
/* k_f32_to_h's vector-level version: the same halves, bit for bit. */
void K_VEC(k_f32_to_h)(uint16_t *dst, const float *src, size_t n, int bf16);
#endif

#endif
