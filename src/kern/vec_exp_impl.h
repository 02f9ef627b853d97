/* vec_exp_impl.h - exp in lanes (vexp), the one lane function that
 * vec_impl.h's sets (8 lanes, 4 on NEON) and vec512.h's 16 lanes share;
 * included after the lane operations (vec_impl.h's list) are defined. */
#include "kern/poly.h"

/* exp_poly in lanes: clamp, 2^n by the exponent field, degree-6 polynomial. */
VT static inline VF vexp(VF x) {
    x = vf_min(vf_max(x, vf_set1(-87.0f)), vf_set1(88.0f));
    const VF shift = vf_set1(12582912.0f);
    VF n = vf_sub(vf_fma(x, vf_set1(1.44269504f), shift), shift);
    VF r = vf_fnma(n, vf_set1(0.693359375f), x);
    r = vf_fma(n, vf_set1(2.12194440e-4f), r);
    VF p = vf_set1(1.0f / 720);
    p = vf_fma(p, r, vf_set1(1.0f / 120));
    p = vf_fma(p, r, vf_set1(1.0f / 24));
    p = vf_fma(p, r, vf_set1(1.0f / 6));
    p = vf_fma(p, r, vf_set1(0.5f));
    p = vf_fma(p, r, vf_set1(1.0f));
    p = vf_fma(p, r, vf_set1(1.0f));
    return vf_mul(p, vf_pow2(n));
}
