/* half.h - IEEE half precision (f16) and bfloat16 <-> f32, one value at a
 * time, in portable C: the loaders' conversions and the scalar paths and
 * references of the kernels (kern/half.h). */
#ifndef ED_BASE_HALF_H
#define ED_BASE_HALF_H

#include <stdint.h>
#include <string.h>

/* f16 (1 sign, 5 exponent bits biased by 15, 10 mantissa bits) to f32:
 * exact (subnormals, inf and NaN payloads included). */
static inline float ed_h2f(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0) {
        if (m == 0) u = s;
        else {   /* subnormal: normalise */
            e = 113;
            while (!(m & 0x400)) m <<= 1, e--;
            u = s | (e << 23) | ((m & 0x3ff) << 13);
        }
    } else if (e == 31) {
        u = s | 0x7f800000u | (m << 13);
    } else {
        u = s | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* f32 to f16, rounding to nearest even on the bits; the carry out of the
 * mantissa moves into the exponent (so 65520 and up become inf, 0x3ff
 * subnormals the smallest normal). NaN keeps its top payload bits and
 * turns quiet. */
static inline uint16_t ed_f2h(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t s = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00 | ((a >> 13) & 0x3ff));
    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00);   /* >= 65520 (and inf) */
    if (a < 0x38800000u) {                                  /* below 2^-14: subnormal */
        if (a < 0x33000000u) return (uint16_t)s;            /* <= 2^-25 rounds to 0 */
        uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000, sh = 126 - e;   /* 14..24 */
        uint32_t r = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
        r += rem > half || (rem == half && (r & 1));
        return (uint16_t)(s | r);
    }
    uint32_t r = a - 0x38000000u, h = r >> 13, rem = r & 0x1fff;   /* rebias 127 -> 15 */
    h += rem > 0x1000 || (rem == 0x1000 && (h & 1));
    return (uint16_t)(s | h);
}

/* bf16 is the top half of an f32: exact one way, rounded to nearest even
 * the other (NaN stays a quiet NaN). */
static inline float ed_bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t ed_f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

#endif
