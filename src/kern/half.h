/* half.h - one 16-bit half (IEEE f16, or bf16) to f32, exactly, in portable
 * C: the scalar paths and references of every kernel that reads halves. */
#ifndef ED_KERN_HALF_H
#define ED_KERN_HALF_H

#include "base/half.h"

#include <stdint.h>

static inline float k_h2f(uint16_t h, int bf16) { return bf16 ? ed_bf2f(h) : ed_h2f(h); }

#endif
