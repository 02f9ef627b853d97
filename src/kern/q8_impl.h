/* q8_impl.h - what the int8 kernel files share (private to src/kern): the
 * packed matrix's parts, the activation scratch, the one rounding rule and
 * the one epilogue (q8.h has the arithmetic), and the instruction-set
 * versions q8.c dispatches to. */
#ifndef ED_KERN_Q8_IMPL_H
#define ED_KERN_Q8_IMPL_H

#include "kern/q8.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

static inline size_t rup(size_t a, size_t m) { return (a + m - 1) / m * m; }

/* Where the parts of a packed matrix are. */
typedef struct {
    const int8_t *q;      /* panels */
    const float *s;       /* s[Np] */
    const int32_t *c;     /* c[Np] = 128 * sum_k q */
    int Np, Kp;
} q8_parts;

static inline q8_parts parts(k_q8 w) {
    q8_parts p;
    p.Np = (int)rup((size_t)w.N, 16), p.Kp = (int)rup((size_t)w.K, 4);
    p.q = w.data;
    p.s = (const float *)((const char *)w.data + (size_t)p.Np * p.Kp);
    p.c = (const int32_t *)(p.s + p.Np);
    return p;
}

/* The one rounding rule: nearest, ties to even, clamped to [-127, 127]; NaN
 * goes to -127 (what the AVX-512 conversion and clamp give). */
static inline int q8_round(float v) {
    float r = rintf(v);
    if (r >= -127.0f && r <= 127.0f) return (int)r;
    return r > 0 ? 127 : -127;
}

/* Scratch: float sx[M] (padded to 64 bytes), then M rows of xs bytes: the
 * quantised row, padded to a multiple of 64 with the code of 0. The C and
 * AVX-512 versions store it + 128 (unsigned: vpdpbusd's operand; pad 128),
 * the AVX2 one as signed bytes (pad 0). */
static inline size_t xstride(int K) { return rup((size_t)K, 64); }

/* 127 / amax, or 0 for rows treated as zero (max |x| below FLT_MIN: 127 /
 * amax would overflow). amax ignores NaN. Sets *sx. */
static inline float q8_inv(float amax, float *sx) {
    if (!(amax >= FLT_MIN) || !(amax <= FLT_MAX)) {
        *sx = amax > FLT_MAX ? amax : 0.0f;   /* inf rows give inf / NaN, like floats would */
        return 0.0f;
    }
    *sx = amax / 127.0f;
    return 127.0f / amax;
}

/* y = fmaf((float)D, sx * s, b): every path's epilogue. */
static inline float q8_out(long long D, float sxi, float sn, const float *b, int n) {
    return fmaf((float)D, sxi * sn, b ? b[n] : 0.0f);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define Q8_AVX2 1
/* AVX2 (q8_avx2.c): rows quantised to signed bytes into the scratch, then
 * the product from it; both sequential. */
void q8_quant_rows_avx2(int8_t *xq, size_t xs, float *sx, const float *x, int ldx, int M, int K);
void q8_matmul_avx2(float *y, int ldy, const int8_t *xq, size_t xs, const float *sx, k_q8 w,
                    const float *b, int M, int n0, int nn);
#endif

#endif
