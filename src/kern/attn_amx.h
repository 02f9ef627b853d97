/* attn_amx.h - one head of non-causal attention with bf16 products (the
 * Whisper encoder's self attention in the bf16 compute mode), fused: the
 * scores of a block of 32 query rows never leave the core's caches.
 *
 *   void *s = aligned_alloc(64, k_attention_bf16_scratch_bytes(Mq, Tk, dh));
 *   k_attention_bf16(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, 1 / sqrtf(dh), s);
 *
 * o[Mq, dh] (row stride ldo) = softmax(scale * q[Mq, dh] . k[Tk, dh]^T) . v[Tk, dh]
 * with row strides ldq, ldk, ldv (q, k, v are usually column slices of a
 * fused [T, 3 d] QKV matrix). Sequential and reentrant: callers run heads on
 * several threads, each with its own scratch. On Intel AMX (AMX-TILE and
 * AMX-BF16, with the tile state granted by Linux) both products run on
 * tiles; with AVX512_BF16 and no tiles (AMD Zen 4, Cooper Lake) in
 * vdpbf16ps over the same packed tiles; elsewhere a portable C version
 * computes the same quantities.
 *
 * Numerics (every version, and the scalar twin _ref):
 *   qb, kb, vb = q, k, v rounded to bf16, to nearest even (k_f32_to_bf16);
 *   a[i][j]   = qb[i] . kb[j], accumulated in f32 (the products are exact);
 *   s = scale * a (the scores), m[i] = max over j of s[i][j];
 *   e[i][j]   = exp(s - m), evaluated as 2^y with y = a c - a_max c in f32:
 *               c = |scale| log2(e) rounded once, a_max the a of the
 *               maximum (for scale < 0, q's sign is flipped, which is
 *               exact); AMX and vdpbf16ps: y by one fused multiply-add, a_max c rounded
 *               down, so that the maximum's y is in [0, 2^-23 |a_max c|);
 *               C: a c and a_max c rounded to nearest, the maximum's y 0;
 *               2^y = 2^floor(y) p(y - floor(y)), p a degree-5 polynomial
 *               with p(0) = 1 (relative error < 2e-7): the maximum's e is
 *               1 (C), or within 2^-23 |a_max c| + 2^-24 of 1 (AMX, vdpbf16ps); its
 *               P is 1;
 *   l[i]      = sum over j of e in f32 (before rounding);
 *   P         = bf16(e), to nearest even; e below FLT_MIN (2^-126, nothing
 *               next to the maximum's 1) gives 0, as the tile unit reads
 *               bf16 subnormals as zero;
 *   o[i]      = (sum over j of P[i][j] vb[j], f32 accumulation) * (1 / l[i]).
 * The _ref twin computes the same quantities in double (s, m, exp(s - m),
 * l, the sums over j) with the same three bf16 roundings, so the versions
 * differ from it by accumulation order and the exp polynomial, and, where
 * an e lies that close to a bf16 rounding midpoint, by one bf16 unit of
 * P[i][j] (tests/test_attn_amx.c bounds both). Inputs must be finite.
 * Sizes: Mq >= 0 and Tk >= 0 (Tk 0 gives o = 0), 1 <= dh <= K_ATTN_BF16_MAX_DH;
 * o's columns past dh are not written. o must not overlap q, k or v.
 */
#ifndef ED_KERN_ATTN_AMX_H
#define ED_KERN_ATTN_AMX_H

#include <stddef.h>

#define K_ATTN_BF16_MAX_DH 256

/* Scratch bytes for one head with these sizes (any version). */
size_t k_attention_bf16_scratch_bytes(int Mq, int Tk, int dh);

/* 1 when a vector version runs on this CPU: AMX (AMX-TILE, AMX-BF16,
 * AVX-512 F, BW, VL, DQ, BF16, and Linux granted the tile data state), or
 * AVX-512 with BF16 (vdpbf16ps). */
int k_attention_bf16_has(void);

/* One head as described above; scratch: k_attention_bf16_scratch_bytes
 * bytes, 64-byte aligned. Returns the version that ran: 3 = AMX, 2 =
 * AVX512_BF16, 0 = portable C; -1 (nothing done) for sizes out of range. */
int k_attention_bf16(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                     const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                     void *scratch);

/* The same on the best version up to isa (0 = C, 2 = AVX512_BF16, 3 =
 * AMX, when available), for tests and benchmarks; returns the one used
 * (or -1). */
int k_attention_bf16_isa(int isa, float *o, int ldo, const float *q, int ldq, const float *k,
                         int ldk, const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                         void *scratch);

/* The scalar twin: double accumulation and libm exp, the same bf16
 * roundings (of q, k, v and P), no scratch (scores are recomputed). */
void k_attention_bf16_ref(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                          const float *v, int ldv, int Mq, int Tk, int dh, float scale);

#endif
