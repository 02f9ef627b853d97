/* attn_h.c - cross attention for few query rows over a K/V cache in 16-bit
 * halves (f16, bf16) or f32, and the f32 -> half converters that fill it.
 *
 * A decode step has Mq = 1..16 query rows (sequences, beams) that all read
 * the same encoder K/V; with few rows the step is bound by the K/V read,
 * so every K/V cache line is loaded from memory once for all rows and, for
 * halves, expanded to f32 in registers (no f32 copy is written):
 *
 *   1. scores: blocks of 16 keys as 4 sub-blocks of 4 keys; a sub-block's
 *      4 rows (4 x 4 zmm for dh = 64) stay in registers while every query
 *      row is multiplied with them; each row's 4 partial-product vectors
 *      are folded by a transpose-add tree (red4, then red16 per 16 keys)
 *      into 16 contiguous scores, scaled, stored to scratch [Mq, Tk].
 *   2. softmax per row: max, e = exp(s - max) with the polynomial of
 *      k_softmax (poly.h), sum in 16 lanes combined in double; 1 / sum is
 *      applied to the output instead of to every probability.
 *   3. V: each V row (4 zmm) is expanded once and accumulated into up to 6
 *      query rows' 4-register accumulators (broadcast probability, FMA).
 *      More than 6 rows: keys in chunks of 64 (L1-resident) and the row
 *      groups take turns on each chunk, accumulating in o (expanding a
 *      half chunk once to f32 for all groups measured no faster).
 *   More than 16 rows: blocks of 16, each reading K/V again.
 *
 * Both streams are software-prefetched 4 KiB ahead (PF_AHEAD), in both
 * versions.
 *
 * dh > 64 is done in 64-column slices (scores accumulate in scratch, the V
 * pass slices o); dh < 64 masks the unused lanes. Hand-written AVX-512
 * (F/BW/VL) picked at run time; the portable version and the _ref twin are
 * plain C (the portable one uses k_softmax itself).
 */
#include "kern/attn_h.h"
#include "kern/vec.h"
#include "kern/half.h"
#include "kern/kern.h"
#include "kern/poly.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "kern/vec512.h"
#define K_X86 1
#define K_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define K_INLINE static inline __attribute__((always_inline))
#endif

/* Software prefetch distance in bytes along the K and V streams (both
 * versions): from DRAM the hardware prefetcher alone leaves one core at
 * ~11 GB/s here; 4 KiB ahead gives 8-15% (2-16 KiB measured), and nothing
 * changes from L3. */
#define PF_AHEAD 4096

/* ---- conversions ---- */


static void f32_to_h_c(uint16_t *dst, const float *src, size_t n, int bf16) {
    if (bf16)
        for (size_t i = 0; i < n; i++) dst[i] = ed_f2bf(src[i]);
    else
        for (size_t i = 0; i < n; i++) dst[i] = ed_f2h(src[i]);
}

#ifdef K_X86
static int have_avx512(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

K_AVX512 K_INLINE __mmask16 tail_mask(int n) {   /* the first n (clamped to 0..16) lanes */
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* f16: the hardware conversion (vcvtps2ph, round to nearest even). bf16:
 * integer rounding (vcvtneps2bf16 would flush subnormals to zero). */
K_AVX512 static void f32_to_h_avx512(uint16_t *dst, const float *src, size_t n, int bf16) {
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i quiet = _mm512_set1_epi32(0x40);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i >= 16 ? 16 : (int)(n - i));
        __m512 x = _mm512_maskz_loadu_ps(m, src + i);
        __m256i h;
        if (bf16) {
            __m512i u = _mm512_castps_si512(x), hi = _mm512_srli_epi32(u, 16);
            __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(hi, one)));
            r = _mm512_srli_epi32(r, 16);
            __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf);
            r = _mm512_mask_or_epi32(r, nan, hi, quiet);
            h = _mm512_cvtepi32_epi16(r);
        } else {
            h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        _mm256_mask_storeu_epi16(dst + i, m, h);
    }
}
#endif

typedef void (*f32_to_h_fn)(uint16_t *dst, const float *src, size_t n, int bf16);

/* The one dispatch point of the converters: the best at or below isa. */
static f32_to_h_fn f32_to_h_pick(int isa, int *used) {
    isa = k_isa_at(isa);
#ifdef K_X86
    if (isa >= 2 && have_avx512()) return *used = 2, f32_to_h_avx512;
#endif
#ifdef K_HAVE_VEC
    if (isa >= K_ISA_VEC) return *used = 1, K_VEC(k_f32_to_h);
#endif
    return *used = 0, f32_to_h_c;
}

int k_f32_to_h_isa(int isa, uint16_t *dst, const float *src, size_t n, int bf16) {
    int used;
    f32_to_h_pick(isa, &used)(dst, src, n, bf16);
    return used;
}

void k_f32_to_h(uint16_t *dst, const float *src, size_t n, int bf16) {
    k_f32_to_h_isa(2, dst, src, n, bf16);
}

void k_f32_to_h_rows(uint16_t *dst, size_t ldd, const float *src, size_t lds, int rows,
                     size_t n, int bf16) {
    int used;
    f32_to_h_fn f = f32_to_h_pick(2, &used);   /* one dispatch for all rows (a head's 64 each) */
    for (int r = 0; r < rows; r++) f(dst + r * ldd, src + r * lds, n, bf16);
}

/* ---- attention: portable C ---- */

#define C_W 64   /* columns of a K/V row expanded at a time */

/* f16 -> f32 without branches, so the loops vectorise: normal and inf/NaN
 * by moving the bits and rebiasing the exponent, subnormals as m * 2^-24
 * (exact, and no subnormal arithmetic that a flush-to-zero mode would
 * change). */
static inline float h2f_c(uint16_t h) {
    uint32_t a = h & 0x7fff, e = a >> 10;
    uint32_t u = (a << 13) + ((112u + 112u * (e == 31)) << 23), sub_mask = 0u - (e == 0), ub;
    float sub = (float)(a & 0x3ff) * 0x1p-24f, f;
    memcpy(&ub, &sub, sizeof ub);
    u = ((u & ~sub_mask) | (ub & sub_mask)) | (uint32_t)(h & 0x8000) << 16;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Elements [i, i + n) of a K/V block of type t as f32: in place for f32,
 * else expanded into buf. */
static inline const float *row_c(float *buf, const void *p, size_t i, int n, k_wtype t) {
    size_t esz = t == K_F32 ? 4 : 2;
    for (size_t x = 0; x < (size_t)n * esz; x += 64)
        __builtin_prefetch((const char *)p + i * esz + PF_AHEAD + x);
    if (t == K_F32) return (const float *)p + i;
    const uint16_t *h = (const uint16_t *)p + i;
    if (t == K_BF16)
        for (int j = 0; j < n; j++) buf[j] = k_h2f(h[j], 1);
    else
        for (int j = 0; j < n; j++) buf[j] = h2f_c(h[j]);
    return buf;
}

/* Dot product in 8 lanes (a single accumulator does not vectorise). */
static inline float dot8(const float *a, const float *b, int n) {
    float l[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) l[j] += a[i + j] * b[i + j];
    float r = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

/* Key row r is expanded (64 columns at a time) once, then dotted with
 * every query row; likewise value row r is expanded once and accumulated
 * into every output row. The softmax is k_softmax itself. Tk >= 1. */
K_CLONED(static, void, attn_c, (float *o, int ldo, const float *q, int ldq, const void *k,
         const void *v, k_wtype t, int Mq, int Tk, int dh, float scale, float *s),
         (o, ldo, q, ldq, k, v, t, Mq, Tk, dh, scale, s)) {
    float buf[C_W];
    for (int r = 0; r < Tk; r++)
        for (int j0 = 0; j0 < dh; j0 += C_W) {
            int n = dh - j0 < C_W ? dh - j0 : C_W;
            const float *kr = row_c(buf, k, (size_t)r * dh + j0, n, t);
            for (int i = 0; i < Mq; i++) {
                float d = dot8(q + (size_t)i * ldq + j0, kr, n), *si = s + (size_t)i * Tk + r;
                *si = j0 ? *si + d : d;
            }
        }
    for (int i = 0; i < Mq; i++) {
        float *si = s + (size_t)i * Tk;
        for (int r = 0; r < Tk; r++) si[r] *= scale;
        k_softmax(si, Tk);
        memset(o + (size_t)i * ldo, 0, (size_t)dh * sizeof *o);
    }
    for (int r = 0; r < Tk; r++)
        for (int j0 = 0; j0 < dh; j0 += C_W) {
            int n = dh - j0 < C_W ? dh - j0 : C_W;
            const float *vr = row_c(buf, v, (size_t)r * dh + j0, n, t);
            for (int i = 0; i < Mq; i++) {
                float p = s[(size_t)i * Tk + r], *oi = o + (size_t)i * ldo + j0;
                for (int j = 0; j < n; j++) oi[j] += p * vr[j];
            }
        }
}

/* ---- attention: AVX-512 ---- */

#ifdef K_X86
#define QB 16    /* query rows per block (the score tree's temporaries) */
#define VG 6     /* query rows per V group: 6 x 4 accumulators + 4 V registers */
#define VCH 64   /* keys per V chunk when several groups take turns on it */

/* 16 elements of a K/V block from element i, masked, as f32. */
K_AVX512 K_INLINE __m512 ldx(const void *p, size_t i, k_wtype t, __mmask16 m) {
    if (t == K_F32) return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i);
    if (t == K_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* p0..p3: the partial products of keys 0..3 (lane j: columns = j mod 16).
 * Result: 128-bit lane L holds [key0, key1, key2, key3] summed over that
 * lane's 4 columns. */
K_AVX512 K_INLINE __m512 red4(__m512 p0, __m512 p1, __m512 p2, __m512 p3) {
    __m512 a = _mm512_add_ps(_mm512_unpacklo_ps(p0, p1), _mm512_unpackhi_ps(p0, p1));
    __m512 b = _mm512_add_ps(_mm512_unpacklo_ps(p2, p3), _mm512_unpackhi_ps(p2, p3));
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* r0..r3: red4 of keys 0-3, 4-7, 8-11, 12-15. Result: the 16 dot products. */
K_AVX512 K_INLINE __m512 red16(__m512 r0, __m512 r1, __m512 r2, __m512 r3) {
    __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(3, 1, 3, 1)));
    __m512 w = _mm512_add_ps(_mm512_shuffle_f32x4(r2, r3, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(r2, r3, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(u, w, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(u, w, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* s[i, 0..Tk) (row stride lds) = scale * q[i, off..off+w) . K[:, off..off+w)
 * for i < mq <= QB (added to s when acc). w <= 64. Keys past Tk repeat
 * the last one; their scores are not stored. */
K_AVX512 K_INLINE void scores_avx512(float *s, int lds, const float *q, int ldq, const void *k,
                                     int ld, int off, int w, int mq, int Tk, float scale,
                                     int acc, k_wtype t) {
    __m512 tmp[QB][4];
    const __mmask16 m0 = tail_mask(w), m1 = tail_mask(w - 16), m2 = tail_mask(w - 32),
                    m3 = tail_mask(w - 48);
    const __m512 vscale = _mm512_set1_ps(scale);
    for (int t0 = 0; t0 < Tk; t0 += 16) {
        for (int sb = 0; sb < 4; sb++) {
            int r = t0 + 4 * sb, last = Tk - 1;
            size_t b0 = (size_t)(r < last ? r : last) * ld + off;
            size_t b1 = (size_t)(r + 1 < last ? r + 1 : last) * ld + off;
            size_t b2 = (size_t)(r + 2 < last ? r + 2 : last) * ld + off;
            size_t b3 = (size_t)(r + 3 < last ? r + 3 : last) * ld + off;
            {   /* the lines PF_AHEAD bytes on (the rows are one contiguous block) */
                const char *pf = (const char *)k + b0 * (t == K_F32 ? 4 : 2) + PF_AHEAD;
                size_t bytes = (size_t)4 * w * (t == K_F32 ? 4 : 2);
                for (size_t x = 0; x < bytes; x += 64) _mm_prefetch(pf + x, _MM_HINT_T0);
            }
            __m512 k00 = ldx(k, b0, t, m0), k01 = ldx(k, b0 + 16, t, m1);
            __m512 k02 = ldx(k, b0 + 32, t, m2), k03 = ldx(k, b0 + 48, t, m3);
            __m512 k10 = ldx(k, b1, t, m0), k11 = ldx(k, b1 + 16, t, m1);
            __m512 k12 = ldx(k, b1 + 32, t, m2), k13 = ldx(k, b1 + 48, t, m3);
            __m512 k20 = ldx(k, b2, t, m0), k21 = ldx(k, b2 + 16, t, m1);
            __m512 k22 = ldx(k, b2 + 32, t, m2), k23 = ldx(k, b2 + 48, t, m3);
            __m512 k30 = ldx(k, b3, t, m0), k31 = ldx(k, b3 + 16, t, m1);
            __m512 k32 = ldx(k, b3 + 32, t, m2), k33 = ldx(k, b3 + 48, t, m3);
            for (int i = 0; i < mq; i++) {
                const float *qi = q + (size_t)i * ldq + off;
                __m512 q0 = _mm512_maskz_loadu_ps(m0, qi), q1 = _mm512_maskz_loadu_ps(m1, qi + 16);
                __m512 q2 = _mm512_maskz_loadu_ps(m2, qi + 32), q3 = _mm512_maskz_loadu_ps(m3, qi + 48);
                __m512 p0 = _mm512_mul_ps(q0, k00), p1 = _mm512_mul_ps(q0, k10);
                __m512 p2 = _mm512_mul_ps(q0, k20), p3 = _mm512_mul_ps(q0, k30);
                p0 = _mm512_fmadd_ps(q1, k01, p0), p1 = _mm512_fmadd_ps(q1, k11, p1);
                p2 = _mm512_fmadd_ps(q1, k21, p2), p3 = _mm512_fmadd_ps(q1, k31, p3);
                p0 = _mm512_fmadd_ps(q2, k02, p0), p1 = _mm512_fmadd_ps(q2, k12, p1);
                p2 = _mm512_fmadd_ps(q2, k22, p2), p3 = _mm512_fmadd_ps(q2, k32, p3);
                p0 = _mm512_fmadd_ps(q3, k03, p0), p1 = _mm512_fmadd_ps(q3, k13, p1);
                p2 = _mm512_fmadd_ps(q3, k23, p2), p3 = _mm512_fmadd_ps(q3, k33, p3);
                tmp[i][sb] = red4(p0, p1, p2, p3);
            }
        }
        __mmask16 ms = tail_mask(Tk - t0);
        for (int i = 0; i < mq; i++) {
            __m512 x = _mm512_mul_ps(red16(tmp[i][0], tmp[i][1], tmp[i][2], tmp[i][3]), vscale);
            float *si = s + (size_t)i * lds + t0;
            if (acc) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(ms, si));
            _mm512_mask_storeu_ps(si, ms, x);
        }
    }
}

/* x[0, n) = exp(x - max), n >= 1; returns 1 / sum (the sum's 16 lanes
 * combined in double, as k_softmax does). */
K_AVX512 static float softmax_avx512(float *x, int n) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 16 <= n; i += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(x + i));
    __mmask16 mt = tail_mask(n - i);
    if (mt) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), mt, x + i));
    __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 e = vexp(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
        _mm512_storeu_ps(x + i, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (mt) {
        __m512 e = vexp(_mm512_sub_ps(_mm512_maskz_loadu_ps(mt, x + i), vm));
        _mm512_mask_storeu_ps(x + i, mt, e);
        sum = _mm512_mask_add_ps(sum, mt, sum, e);
    }
    float l[16];
    _mm512_storeu_ps(l, sum);
    double tot = 0;
    for (int j = 0; j < 16; j++) tot += l[j];
    return (float)(1.0 / tot);
}

/* o[i, off..off+w) (+)= sum over keys [r0, r1) of s[i, r] * V[r, off..off+w)
 * for the G rows of one group: accumulators start at 0 (first) or from o;
 * with inv the result is scaled by inv[i] (the softmax's 1 / sum). */
K_AVX512 K_INLINE void vpass_avx512(float *o, int ldo, const float *s, int lds, const void *v,
                                    int ld, int off, int w, int r0, int r1, int first,
                                    const float *inv, int G, k_wtype t) {
    /* Named accumulators (arrays of vectors get spilled by gcc 12); rows
     * i >= G fold away. */
    const __mmask16 m0 = tail_mask(w), m1 = tail_mask(w - 16), m2 = tail_mask(w - 32),
                    m3 = tail_mask(w - 48);
    const __m512 z = _mm512_setzero_ps();
#define V_DECL(i) __m512 a##i##0 = z, a##i##1 = z, a##i##2 = z, a##i##3 = z;
#define V_INIT(i)                                                                  \
    if (G > i && !first) {                                                         \
        const float *oi = o + (size_t)i * ldo + off;                               \
        a##i##0 = _mm512_maskz_loadu_ps(m0, oi);                                   \
        a##i##1 = _mm512_maskz_loadu_ps(m1, oi + 16);                              \
        a##i##2 = _mm512_maskz_loadu_ps(m2, oi + 32);                              \
        a##i##3 = _mm512_maskz_loadu_ps(m3, oi + 48);                              \
    }
#define V_FMA(i)                                                                   \
    if (G > i) {                                                                   \
        __m512 p = _mm512_set1_ps(s[(size_t)i * lds + r]);                         \
        a##i##0 = _mm512_fmadd_ps(p, v0, a##i##0);                                 \
        a##i##1 = _mm512_fmadd_ps(p, v1, a##i##1);                                 \
        a##i##2 = _mm512_fmadd_ps(p, v2, a##i##2);                                 \
        a##i##3 = _mm512_fmadd_ps(p, v3, a##i##3);                                 \
    }
#define V_STORE(i)                                                                 \
    if (G > i) {                                                                   \
        float *oi = o + (size_t)i * ldo + off;                                     \
        if (inv) {                                                                 \
            __m512 sc = _mm512_set1_ps(inv[i]);                                    \
            a##i##0 = _mm512_mul_ps(a##i##0, sc), a##i##1 = _mm512_mul_ps(a##i##1, sc); \
            a##i##2 = _mm512_mul_ps(a##i##2, sc), a##i##3 = _mm512_mul_ps(a##i##3, sc); \
        }                                                                          \
        _mm512_mask_storeu_ps(oi, m0, a##i##0);                                    \
        _mm512_mask_storeu_ps(oi + 16, m1, a##i##1);                               \
        _mm512_mask_storeu_ps(oi + 32, m2, a##i##2);                               \
        _mm512_mask_storeu_ps(oi + 48, m3, a##i##3);                               \
    }
#define V_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5)
    V_ALL(V_DECL)
    V_ALL(V_INIT)
    for (int r = r0; r < r1; r++) {
        size_t b = (size_t)r * ld + off;
        {
            const char *pf = (const char *)v + b * (t == K_F32 ? 4 : 2) + PF_AHEAD;
            size_t bytes = (size_t)w * (t == K_F32 ? 4 : 2);
            for (size_t x = 0; x < bytes; x += 64) _mm_prefetch(pf + x, _MM_HINT_T0);
        }
        __m512 v0 = ldx(v, b, t, m0), v1 = ldx(v, b + 16, t, m1);
        __m512 v2 = ldx(v, b + 32, t, m2), v3 = ldx(v, b + 48, t, m3);
        V_ALL(V_FMA)
    }
    V_ALL(V_STORE)
#undef V_DECL
#undef V_INIT
#undef V_FMA
#undef V_STORE
#undef V_ALL
}

/* One copy per element type (and per group size for the V pass), so the
 * type tests and the row loops fold at compile time. */
typedef void (*scores_fn)(float *, int, const float *, int, const void *, int, int, int, int,
                          int, float, int);
typedef void (*vpass_fn)(float *, int, const float *, int, const void *, int, int, int, int,
                         int, int, const float *);

#define SCORES(T)                                                                             \
    K_AVX512 static void scores_##T(float *s, int lds, const float *q, int ldq, const void *k, \
                                    int ld, int off, int w, int mq, int Tk, float scale,      \
                                    int acc) {                                                \
        scores_avx512(s, lds, q, ldq, k, ld, off, w, mq, Tk, scale, acc, T);                  \
    }
SCORES(K_F32)
SCORES(K_F16)
SCORES(K_BF16)
static const scores_fn scores_tab[3] = {scores_K_F32, scores_K_F16, scores_K_BF16};

#define VPASS(T, G)                                                                            \
    K_AVX512 static void vpass_##T##_##G(float *o, int ldo, const float *s, int lds,           \
                                         const void *v, int ld, int off, int w, int r0, int r1, \
                                         int first, const float *inv) {                        \
        vpass_avx512(o, ldo, s, lds, v, ld, off, w, r0, r1, first, inv, G, T);                 \
    }
#define VPASS_T(T) VPASS(T, 1) VPASS(T, 2) VPASS(T, 3) VPASS(T, 4) VPASS(T, 5) VPASS(T, 6)
VPASS_T(K_F32)
VPASS_T(K_F16)
VPASS_T(K_BF16)
#define VPASS_ROW(T) {NULL, vpass_##T##_1, vpass_##T##_2, vpass_##T##_3, vpass_##T##_4, \
                      vpass_##T##_5, vpass_##T##_6}
static const vpass_fn vpass_tab[3][VG + 1] = {VPASS_ROW(K_F32), VPASS_ROW(K_F16), VPASS_ROW(K_BF16)};

/* Tk >= 1. Blocks of QB query rows (one block for a decode step). */
static void attn_avx512(float *o, int ldo, const float *q, int ldq, const void *k, const void *v,
                        k_wtype t, int Mq, int Tk, int dh, float scale, float *s) {
    scores_fn sc = scores_tab[t];
    for (int i0 = 0; i0 < Mq; i0 += QB) {
        int mq = Mq - i0 < QB ? Mq - i0 : QB;
        const float *qb = q + (size_t)i0 * ldq;
        float *ob = o + (size_t)i0 * ldo, inv[QB];
        for (int off = 0; off < dh; off += 64)
            sc(s, Tk, qb, ldq, k, dh, off, dh - off < 64 ? dh - off : 64, mq, Tk, scale, off > 0);
        for (int i = 0; i < mq; i++) inv[i] = softmax_avx512(s + (size_t)i * Tk, Tk);
        int ng = (mq + VG - 1) / VG;
        for (int off = 0; off < dh; off += 64) {
            int w = dh - off < 64 ? dh - off : 64;
            if (ng == 1) {
                vpass_tab[t][mq](ob, ldo, s, Tk, v, dh, off, w, 0, Tk, 1, inv);
                continue;
            }
            for (int r0 = 0; r0 < Tk; r0 += VCH) {
                int r1 = Tk - r0 < VCH ? Tk : r0 + VCH;
                for (int g = 0, i = 0; g < ng; g++) {
                    int gi = (mq - i) / (ng - g);   /* balanced: 16 rows -> 5, 5, 6 */
                    vpass_tab[t][gi](ob + (size_t)i * ldo, ldo, s + (size_t)i * Tk, Tk, v, dh, off,
                                     w, r0, r1, r0 == 0, r1 == Tk ? inv + i : NULL);
                    i += gi;
                }
            }
        }
    }
}
#endif

int k_attention_kv_isa(int isa, float *o, int ldo, const float *q, int ldq, const void *k,
                       const void *v, k_wtype t, int Mq, int Tk, int dh, float scale,
                       float *scratch) {
    isa = k_isa_at(isa);
    int used = 0;
    if (t != K_F32 && t != K_F16 && t != K_BF16) return -1;
#ifdef K_X86
    if (isa >= 2 && have_avx512()) used = 2;
#endif
#ifdef K_HAVE_VEC
    if (!used && isa >= 1 && dh == 64) used = 1;   /* AVX2, NEON: 64-column heads (every model's) */
#endif
    if (Mq <= 0 || dh <= 0) return used;
    if (Tk <= 0) {
        for (int i = 0; i < Mq; i++) memset(o + (size_t)i * ldo, 0, (size_t)dh * sizeof *o);
        return used;
    }
#ifdef K_X86
    if (used == 2) {
        attn_avx512(o, ldo, q, ldq, k, v, t, Mq, Tk, dh, scale, scratch);
        return used;
    }
#endif
#ifdef K_HAVE_VEC
    if (used == 1) {
        K_VEC(k_attention_kv)(o, ldo, q, ldq, k, v, t, Mq, Tk, scale, scratch);
        return used;
    }
#endif
    attn_c(o, ldo, q, ldq, k, v, t, Mq, Tk, dh, scale, scratch);
    return used;
}

void k_attention_kvh(float *o, int ldo, const float *q, int ldq, const uint16_t *k,
                     const uint16_t *v, int bf16, int Mq, int Tk, int dh, float scale,
                     float *scratch) {
    k_attention_kv_isa(2, o, ldo, q, ldq, k, v, bf16 ? K_BF16 : K_F16, Mq, Tk, dh, scale, scratch);
}

void k_attention_kvf(float *o, int ldo, const float *q, int ldq, const float *k,
                     const float *v, int Mq, int Tk, int dh, float scale, float *scratch) {
    k_attention_kv_isa(2, o, ldo, q, ldq, k, v, K_F32, Mq, Tk, dh, scale, scratch);
}

void k_attention_kvh_ref(float *o, int ldo, const float *q, int ldq, const uint16_t *k,
                         const uint16_t *v, int bf16, int Mq, int Tk, int dh, float scale,
                         float *s) {
    for (int i = 0; i < Mq; i++) {
        double mx = -DBL_MAX, sum = 0;
        for (int t = 0; t < Tk; t++) {
            double acc = 0;
            for (int j = 0; j < dh; j++)
                acc += (double)q[(size_t)i * ldq + j] * k_h2f(k[(size_t)t * dh + j], bf16);
            s[t] = (float)(acc * scale);
            if (s[t] > mx) mx = s[t];
        }
        for (int t = 0; t < Tk; t++) sum += exp(s[t] - mx);
        for (int j = 0; j < dh; j++) {
            double acc = 0;
            for (int t = 0; t < Tk; t++) acc += exp(s[t] - mx) / sum * k_h2f(v[(size_t)t * dh + j], bf16);
            o[(size_t)i * ldo + j] = (float)acc;
        }
    }
}
