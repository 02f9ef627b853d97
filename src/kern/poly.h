/* poly.h - branch-free polynomial approximations shared by the kernel files
 * (private to src/kern), and the per-ISA cloning attribute. */
#ifndef ED_KERN_POLY_H
#define ED_KERN_POLY_H

#include <stdint.h>
#include <string.h>

/* Hot element-wise loops are compiled once per instruction set and the copy
 * picked on every call by k_isa(), like every kernel: one portable binary
 * that uses AVX-512 / AVX2 where present, and that the thread's limit (the
 * model's isa, --isa, the tests' forced sets) reaches. Written
 *
 *     K_CLONED(static, int, name, (const float *x, int n), (x, n)) { body }
 *
 * (storage class, which may be empty, return type, name, parameters,
 * arguments): the body becomes an always-inline function, inlined into an
 * AVX-512 (F/BW/DQ/VL), an AVX2 + FMA + F16C and a baseline x86-64 copy,
 * where the compiler vectorises it for each; `name` calls one. Elsewhere
 * (aarch64: NEON is the baseline) the body is the function itself. */
#include "kern/kern.h"
#if defined(__x86_64__) && defined(__GNUC__)
#define K_CLONED(sc, ret, name, params, args)                                                  \
    static inline __attribute__((always_inline)) ret name##_body params;                       \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"))) static ret     \
        name##_z params { return name##_body args; }                                           \
    __attribute__((target("avx2,fma,f16c"))) static ret name##_y params {                      \
        return name##_body args;                                                               \
    }                                                                                          \
    static ret name##_c params { return name##_body args; }                                    \
    sc ret name params {                                                                       \
        int isa_ = k_isa();                                                                    \
        return isa_ >= K_ISA_AVX512 ? name##_z args : isa_ >= K_ISA_VEC ? name##_y args        \
                                                                        : name##_c args;       \
    }                                                                                          \
    static inline __attribute__((always_inline)) ret name##_body params
#else
#define K_CLONED(sc, ret, name, params, args) sc ret name params
#endif

/* Independent partial sums of the norms' reductions (8 doubles: a zmm). */
#define K_NORM_LANES 8

/* exp(x) for x <= 0 region of softmax inputs (any finite x in [-87, 88]):
 * 2^n * p(r) with r = x - n ln2 (Cody-Waite split), p the degree-6 Taylor
 * polynomial; relative error < 4e-7. Branch-free so loops vectorise. */
static inline float exp_poly(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float t = x * 1.44269504f + 12582912.0f;  /* 1.5 * 2^23: rounds to nearest */
    float n = t - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t e = ((int32_t)n + 127) * (1 << 23);
    float sc;
    memcpy(&sc, &e, sizeof sc);
    return p * sc;
}

/* erf for GELU without libm calls, so the loop vectorises: Abramowitz and
 * Stegun 7.1.26 (|error| <= 1.5e-7) with exp_poly for exp(-z^2); the
 * result is as close to erf as float rounding of erff itself allows. */
static inline float erf_poly(float z) {
    float a = z < 0 ? -z : z;
    float t = 1.0f / (1.0f + 0.3275911f * a);
    float p = 1.061405429f;
    p = p * t - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    float r = 1.0f - p * t * exp_poly(-a * a);
    return z < 0 ? -r : r;
}

#endif
