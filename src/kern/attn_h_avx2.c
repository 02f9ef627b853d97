/* attn_h_avx2.c - k_attention_kv's AVX2 + FMA + F16C version for heads of
 * 64 columns (every Whisper and T5 size): few query rows against one
 * head's K/V block of f32, f16 or bf16, as attn_h.c describes.
 *
 * Scores: per 8 keys, each query row forms 8 per-key vectors of partial
 * products (8 FMAs each), reduced together by a tree of horizontal adds
 * into the 8 scores: no horizontal sum per key. Softmax: k_softmax. Values:
 * per chunk of 64 keys, each query row accumulates its 64 outputs in 8 ymm
 * registers over the chunk, broadcasting its probabilities. K and V lines
 * are read from memory once per call for all query rows (the 8 keys or 64
 * values stay in L1 for the other rows). f32 blocks are read in place;
 * halves are widened in registers for one or two rows, and for more rows
 * expanded once into an f32 copy in L1 that the rows share (one Whisper
 * base greedy step on AVX2: 8-25% less time per layer than expanding
 * always). Every row's sums are the same whichever way. */
#include "kern/attn_h.h"
#include "kern/vec.h"
#include "base/half.h"

#if defined(K_HAVE_VEC) && defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#define V2 __attribute__((target("avx2,fma,f16c")))
#define A2_DH 64
#define A2_VCH 64
#define A2_PF 1024   /* prefetch distance in bytes */
#define A2_DIRECT 2  /* at most this many query rows read halves in place */

/* 8 elements of a K/V block from element i as f32. */
V2 static inline __attribute__((always_inline)) __m256 ld8(const void *p, size_t i, k_wtype t) {
    if (t == K_F32) return _mm256_loadu_ps((const float *)p + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    if (t == K_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

/* Rows [r0, r0 + n) of a [Tk, 64] block into dst[n][64] as f32. */
V2 static void expand(float *dst, const void *p, int r0, int n, k_wtype t) {
    size_t esz = t == K_F32 ? 4 : 2;
    const char *pf = (const char *)p + (size_t)r0 * A2_DH * esz + A2_PF;
    for (size_t x = 0; x < (size_t)n * A2_DH * esz; x += 64) _mm_prefetch(pf + x, _MM_HINT_T0);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < A2_DH; c += 8)
            _mm256_storeu_ps(dst + (size_t)r * A2_DH + c, ld8(p, (size_t)(r0 + r) * A2_DH + c, t));
}

/* The 8 lanes' sums of p[0..7], in order. */
V2 static inline __m256 reduce8(const __m256 p[8]) {
    __m256 a = _mm256_hadd_ps(p[0], p[1]), b = _mm256_hadd_ps(p[2], p[3]);
    __m256 c = _mm256_hadd_ps(p[4], p[5]), d = _mm256_hadd_ps(p[6], p[7]);
    __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);
    return _mm256_add_ps(_mm256_permute2f128_ps(ab, cd, 0x20), _mm256_permute2f128_ps(ab, cd, 0x31));
}

/* Row r's 8 elements from column c, from the source block (direct: f32, or
 * halves converted in registers) or from the expanded f32 copy. */
#define KV_ROW(buf, src, r, c) \
    (direct ? ld8(src, (size_t)(r) * A2_DH + (c), t) : _mm256_load_ps((buf) + (size_t)(r) * A2_DH + (c)))

/* The body for one element type t and mode (both constants after inlining):
 * direct reads K and V from the block itself (no expanded copy: f32 always,
 * halves for one or two query rows, where converting per row costs less
 * than writing and re-reading the copy), else 8 keys or 64 values at a time
 * are expanded to f32 in L1 first and shared by the rows. */
V2 static inline __attribute__((always_inline)) void
kv_body(float *o, int ldo, const float *q, int ldq, const void *k, const void *v, k_wtype t,
        int direct, int Mq, int Tk, float scale, float *s, float *kb, float *vb) {
    const __m256 vs = _mm256_set1_ps(scale);
    size_t esz = t == K_F32 ? 4 : 2;
    for (int t0 = 0; t0 < Tk; t0 += 8) {
        int nk = Tk - t0 < 8 ? Tk - t0 : 8;
        if (direct) {
            const char *pf = (const char *)k + (size_t)t0 * A2_DH * esz + A2_PF;
            for (size_t x = 0; x < (size_t)nk * A2_DH * esz; x += 64) _mm_prefetch(pf + x, _MM_HINT_T0);
        } else {
            expand(kb, k, t0, nk, t);
            if (nk < 8) memset(kb + (size_t)nk * A2_DH, 0, sizeof(float) * (size_t)(8 - nk) * A2_DH);
        }
        for (int i = 0; i < Mq; i++) {
            const float *qi = q + (size_t)i * ldq;
            __m256 q0 = _mm256_loadu_ps(qi), q1 = _mm256_loadu_ps(qi + 8);
            __m256 q2 = _mm256_loadu_ps(qi + 16), q3 = _mm256_loadu_ps(qi + 24);
            __m256 p[8];
            for (int j = 0; j < 8; j++) {
                if (direct && j >= nk) {
                    p[j] = _mm256_setzero_ps();
                    continue;
                }
                int r = direct ? t0 + j : j;
                __m256 a = _mm256_mul_ps(q0, KV_ROW(kb, k, r, 0));
                __m256 b = _mm256_mul_ps(q1, KV_ROW(kb, k, r, 8));
                a = _mm256_fmadd_ps(q2, KV_ROW(kb, k, r, 16), a);
                b = _mm256_fmadd_ps(q3, KV_ROW(kb, k, r, 24), b);
                a = _mm256_fmadd_ps(_mm256_loadu_ps(qi + 32), KV_ROW(kb, k, r, 32), a);
                b = _mm256_fmadd_ps(_mm256_loadu_ps(qi + 40), KV_ROW(kb, k, r, 40), b);
                a = _mm256_fmadd_ps(_mm256_loadu_ps(qi + 48), KV_ROW(kb, k, r, 48), a);
                b = _mm256_fmadd_ps(_mm256_loadu_ps(qi + 56), KV_ROW(kb, k, r, 56), b);
                p[j] = _mm256_add_ps(a, b);
            }
            __m256 sc = _mm256_mul_ps(reduce8(p), vs);
            float *si = s + (size_t)i * Tk + t0;
            if (nk == 8) _mm256_storeu_ps(si, sc);
            else {
                float tmp[8];
                _mm256_storeu_ps(tmp, sc);
                memcpy(si, tmp, sizeof(float) * (size_t)nk);
            }
        }
    }
    for (int i = 0; i < Mq; i++) k_softmax(s + (size_t)i * Tk, Tk);
    for (int r0 = 0; r0 < Tk; r0 += A2_VCH) {
        int n = Tk - r0 < A2_VCH ? Tk - r0 : A2_VCH;
        if (direct) {
            const char *pf = (const char *)v + (size_t)r0 * A2_DH * esz + A2_PF;
            for (size_t x = 0; x < (size_t)n * A2_DH * esz; x += 64) _mm_prefetch(pf + x, _MM_HINT_T0);
        } else {
            expand(vb, v, r0, n, t);
        }
        for (int i = 0; i < Mq; i++) {
            float *oi = o + (size_t)i * ldo;
            const float *pi = s + (size_t)i * Tk + r0;
            __m256 a[8];
            for (int c = 0; c < 8; c++) a[c] = r0 ? _mm256_loadu_ps(oi + 8 * c) : _mm256_setzero_ps();
            for (int r = 0; r < n; r++) {
                __m256 pb = _mm256_broadcast_ss(pi + r);
                int rr = direct ? r0 + r : r;
                for (int c = 0; c < 8; c++) a[c] = _mm256_fmadd_ps(pb, KV_ROW(vb, v, rr, 8 * c), a[c]);
            }
            for (int c = 0; c < 8; c++) _mm256_storeu_ps(oi + 8 * c, a[c]);
        }
    }
}

V2 void k_attention_kv_avx2(float *o, int ldo, const float *q, int ldq, const void *k,
                            const void *v, k_wtype t, int Mq, int Tk, float scale, float *s) {
    float kb[8 * A2_DH] __attribute__((aligned(32)));
    float vb[A2_VCH * A2_DH] __attribute__((aligned(32)));
    if (t == K_F32) kv_body(o, ldo, q, ldq, k, v, K_F32, 1, Mq, Tk, scale, s, kb, vb);
    else if (Mq <= A2_DIRECT && t == K_F16) kv_body(o, ldo, q, ldq, k, v, K_F16, 1, Mq, Tk, scale, s, kb, vb);
    else if (Mq <= A2_DIRECT) kv_body(o, ldo, q, ldq, k, v, K_BF16, 1, Mq, Tk, scale, s, kb, vb);
    else if (t == K_F16) kv_body(o, ldo, q, ldq, k, v, K_F16, 0, Mq, Tk, scale, s, kb, vb);
    else kv_body(o, ldo, q, ldq, k, v, K_BF16, 0, Mq, Tk, scale, s, kb, vb);
}
/* f16: F16C's vcvtps2ph (round to nearest even: the reference's rounding,
 * subnormals, overflow and quiet NaNs alike). bf16: the reference's integer
 * rounding in lanes (a NaN keeps its top half, made quiet); 16 values per
 * round, packed to halves in order. The tail goes through the scalar forms. */
V2 void k_f32_to_h_avx2(uint16_t *dst, const float *src, size_t n, int bf16) {
    size_t i = 0;
    if (bf16) {
        const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
        const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
        const __m256i quiet = _mm256_set1_epi32(0x40);
        __m256i r[2];
        for (; i + 16 <= n; i += 16) {
            for (int j = 0; j < 2; j++) {
                __m256i u = _mm256_loadu_si256((const __m256i *)(src + i + 8 * j));
                __m256i hi = _mm256_srli_epi32(u, 16);
                __m256i v = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(hi, one))), 16);
                __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
                r[j] = _mm256_blendv_epi8(v, _mm256_or_si256(hi, quiet), nan);
            }
            __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xd8);
            _mm256_storeu_si256((__m256i *)(dst + i), p);
        }
        for (; i < n; i++) dst[i] = ed_f2bf(src[i]);
        return;
    }
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) dst[i] = ed_f2h(src[i]);
}
#endif
