/* vec_neon.c - softmax, log-sum-exp and activations in 4 float lanes
 * (AArch64 NEON: every ARM64 CPU has it): vec_impl.h over q registers;
 * see vec.h. */
#include "kern/vec.h"

#if defined(K_HAVE_VEC) && defined(__aarch64__)
#include <arm_neon.h>

#define VF float32x4_t
#define VF_N 4
#define VT

#define vf_set1 vdupq_n_f32
#define vf_load vld1q_f32
#define vf_store vst1q_f32
#define vf_add vaddq_f32
#define vf_sub vsubq_f32
#define vf_mul vmulq_f32
#define vf_div vdivq_f32
#define vf_min vminq_f32
#define vf_max vmaxq_f32
#define vf_fma(a, b, c) vfmaq_f32(c, a, b)
#define vf_fnma(a, b, c) vfmsq_f32(c, a, b)
#define vf_abs vabsq_f32
#define vf_neg vnegq_f32
#define vf_copysign(r, z) vbslq_f32(vdupq_n_u32(0x80000000u), z, r)
#define vf_keep_finite(e, x) \
    vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(e), vceqq_f32(x, vdupq_n_f32(-INFINITY))))
#define vf_pow2(n) \
    vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23))

static inline float vf_hmax(float32x4_t v) { return vmaxvq_f32(v); }

static inline double vf_hsum_d(float32x4_t v) {
    return vaddvq_f64(vaddq_f64(vcvt_f64_f32(vget_low_f32(v)), vcvt_high_f64_f32(v)));
}

static inline float vf_hsum(float32x4_t v) { return vaddvq_f32(v); }

#include "kern/vec_impl.h"
#include "kern/attn_flash_impl.h"
#include "kern/matmul_f_impl.h"
#endif
