/* half.h - one 16-bit half (IEEE f16, or bf16) to f32, exactly, in portable
 * C: the scalar paths and references of every kernel that reads halves. */
#ifndef ED_KERN_HALF_H
#define ED_KERN_HALF_H

#include <stdint.h>
#include <string.h>

static inline float k_h2f(uint16_t h, int bf16) {
    uint32_t u;
    if (bf16) {
        u = (uint32_t)h << 16;
    } else {
        uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
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
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
