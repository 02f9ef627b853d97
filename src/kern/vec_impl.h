/* vec_impl.h - the vector forms of softmax, log-sum-exp and the activations,
 * written once over a few lane operations and instantiated per architecture
 * (vec_avx2.c: 8 lanes, vec_neon.c: 4 lanes). Tails shorter than a vector
 * go through poly.h's scalar forms.
 *
 * The including file defines, before including this one:
 *   VF, VF_N           the float vector type and its lanes
 *   VT                 the functions' attribute (a target, or nothing)
 *   vf_set1 vf_load vf_store vf_add vf_sub vf_mul vf_div vf_min vf_max
 *   vf_fma(a, b, c)    a * b + c        vf_fnma(a, b, c)  c - a * b
 *   vf_abs vf_neg      vf_copysign(r, z): |r| with the sign of z
 *   vf_pow2(n)         2^n for integral n in [-127, 128) (the exponent field)
 *   vf_hmax(v)         the largest lane     vf_hsum_d(v): the lanes' sum in double
 *   vf_hsum(v)         the lanes' sum in float, in a fixed order
 *   vf_keep_finite(e, x)  e where x > -inf, else 0
 * attn_flash_impl.h and matmul_f_impl.h, included after this file, use
 * the same operations. */
#include "kern/poly.h"

#include <math.h>

#include "kern/vec_exp_impl.h"

/* erf_poly in lanes (Abramowitz and Stegun 7.1.26 with vexp). */
VT static inline VF verf(VF z) {
    VF a = vf_abs(z);
    VF t = vf_div(vf_set1(1.0f), vf_fma(vf_set1(0.3275911f), a, vf_set1(1.0f)));
    VF p = vf_set1(1.061405429f);
    p = vf_fma(p, t, vf_set1(-1.453152027f));
    p = vf_fma(p, t, vf_set1(1.421413741f));
    p = vf_fma(p, t, vf_set1(-0.284496736f));
    p = vf_fma(p, t, vf_set1(0.254829592f));
    VF e = vexp(vf_mul(vf_neg(a), a));
    return vf_copysign(vf_fnma(vf_mul(p, t), e, vf_set1(1.0f)), z);
}

VT static inline VF vgelu(VF x) {
    VF e = verf(vf_mul(x, vf_set1(0.70710678118654752f)));
    return vf_mul(vf_mul(vf_set1(0.5f), x), vf_add(e, vf_set1(1.0f)));
}

/* max over x[0, n) (NaN-free input; -inf when empty). */
VT static float vmax_n(const float *x, int n) {
    VF m0 = vf_set1(-INFINITY), m1 = m0;
    int i = 0;
    for (; i + 2 * VF_N <= n; i += 2 * VF_N) {
        m0 = vf_max(m0, vf_load(x + i));
        m1 = vf_max(m1, vf_load(x + i + VF_N));
    }
    for (; i + VF_N <= n; i += VF_N) m0 = vf_max(m0, vf_load(x + i));
    float m = vf_hmax(vf_max(m0, m1));
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

VT void K_VEC(k_softmax)(float *x, int n) {
    float mx = vmax_n(x, n);
    VF vm = vf_set1(mx), s0 = vf_set1(0.0f), s1 = s0;
    int i = 0;
    for (; i + 2 * VF_N <= n; i += 2 * VF_N) {
        VF e0 = vexp(vf_sub(vf_load(x + i), vm));
        VF e1 = vexp(vf_sub(vf_load(x + i + VF_N), vm));
        vf_store(x + i, e0);
        vf_store(x + i + VF_N, e1);
        s0 = vf_add(s0, e0);
        s1 = vf_add(s1, e1);
    }
    double sum = vf_hsum_d(s0) + vf_hsum_d(s1);
    for (; i < n; i++) {
        x[i] = exp_poly(x[i] - mx);
        sum += x[i];
    }
    float fi = (float)(1.0 / sum);
    VF inv = vf_set1(fi);
    for (i = 0; i + VF_N <= n; i += VF_N) vf_store(x + i, vf_mul(vf_load(x + i), inv));
    for (; i < n; i++) x[i] *= fi;
}

VT double K_VEC(k_logsumexp)(const float *x, int n, float *mx) {
    float m = vmax_n(x, n);
    *mx = m;
    if (m == -INFINITY) return 0;
    VF vm = vf_set1(m);
    double sum = 0;
    int i = 0;
    for (; i + 256 <= n; i += 256) {   /* blocks of 256 in f32 lanes (terms <= 1), then double */
        VF s0 = vf_set1(0.0f), s1 = s0;
        for (int b = 0; b < 256; b += 2 * VF_N) {
            s0 = vf_add(s0, vexp(vf_sub(vf_load(x + i + b), vm)));
            s1 = vf_add(s1, vexp(vf_sub(vf_load(x + i + b + VF_N), vm)));
        }
        sum += vf_hsum_d(s0) + vf_hsum_d(s1);
    }
    VF s0 = vf_set1(0.0f);
    for (; i + VF_N <= n; i += VF_N) s0 = vf_add(s0, vexp(vf_sub(vf_load(x + i), vm)));
    sum += vf_hsum_d(s0);
    for (; i < n; i++) sum += exp_poly(x[i] - m);
    return log(sum);
}

VT double K_VEC(k_exp_scaled)(float *w, const float *x, int n, float t, float *mx) {
    float m = vmax_n(x, n) / t;   /* division rounds monotonically: the largest x[i] / t */
    *mx = m;
    if (m == -INFINITY) return 0;
    VF vm = vf_set1(m), vt = vf_set1(t);
    double sum = 0;
    int i = 0;
    for (; i + 256 <= n; i += 256) {   /* blocks of 256 in f32 lanes (terms <= 1), then double */
        VF s0 = vf_set1(0.0f), s1 = s0;
        for (int b = 0; b < 256; b += 2 * VF_N) {
            VF x0 = vf_load(x + i + b), x1 = vf_load(x + i + b + VF_N);
            VF e0 = vf_keep_finite(vexp(vf_sub(vf_div(x0, vt), vm)), x0);
            VF e1 = vf_keep_finite(vexp(vf_sub(vf_div(x1, vt), vm)), x1);
            vf_store(w + i + b, e0);
            vf_store(w + i + b + VF_N, e1);
            s0 = vf_add(s0, e0);
            s1 = vf_add(s1, e1);
        }
        sum += vf_hsum_d(s0) + vf_hsum_d(s1);
    }
    VF s0 = vf_set1(0.0f);
    for (; i + VF_N <= n; i += VF_N) {
        VF x0 = vf_load(x + i), e0 = vf_keep_finite(vexp(vf_sub(vf_div(x0, vt), vm)), x0);
        vf_store(w + i, e0);
        s0 = vf_add(s0, e0);
    }
    sum += vf_hsum_d(s0);
    for (; i < n; i++) sum += w[i] = x[i] == -INFINITY ? 0.0f : exp_poly(x[i] / t - m);
    return sum;
}

VT void K_VEC(k_gelu)(float *x, size_t n) {
    size_t i = 0;
    for (; i + VF_N <= n; i += VF_N) vf_store(x + i, vgelu(vf_load(x + i)));
    for (; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erf_poly(x[i] * 0.70710678118654752f));
}

VT void K_VEC(k_gelu_tanh)(float *x, size_t n) {
    size_t i = 0;
    const VF one = vf_set1(1.0f), two = vf_set1(2.0f);
    for (; i + VF_N <= n; i += VF_N) {
        VF v = vf_load(x + i);
        VF v3 = vf_mul(vf_mul(v, v), v);
        VF u = vf_mul(vf_set1(0.7978845608028654f), vf_fma(vf_set1(0.044715f), v3, v));
        VF t = vf_sub(one, vf_div(two, vf_add(vexp(vf_mul(two, u)), one)));
        vf_store(x + i, vf_mul(vf_mul(vf_set1(0.5f), v), vf_add(one, t)));
    }
    for (; i < n; i++) {
        float v = x[i];
        float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        float t = 1.0f - 2.0f / (exp_poly(2.0f * u) + 1.0f);
        x[i] = 0.5f * v * (1.0f + t);
    }
}

VT void K_VEC(k_silu)(float *x, size_t n) {
    size_t i = 0;
    const VF one = vf_set1(1.0f);
    for (; i + VF_N <= n; i += VF_N) {
        VF v = vf_load(x + i);
        vf_store(x + i, vf_div(v, vf_add(one, vexp(vf_neg(v)))));
    }
    for (; i < n; i++) x[i] = x[i] / (1.0f + exp_poly(-x[i]));
}

/* sigmoid and tanh in lanes, as norm_act.c's scalar forms */
VT static inline VF vsigm(VF x) {
    const VF one = vf_set1(1.0f);
    return vf_div(one, vf_add(one, vexp(vf_neg(x))));
}

VT static inline VF vtanh(VF u) {
    const VF one = vf_set1(1.0f), two = vf_set1(2.0f);
    return vf_sub(one, vf_div(two, vf_add(vexp(vf_mul(two, u)), one)));
}

VT void K_VEC(k_lstm_cell)(float *h, float *c, const float *g, int n) {
    int j = 0;
    for (; j + VF_N <= n; j += VF_N) {
        VF cj = vf_fma(vsigm(vf_load(g + 2 * n + j)), vf_load(c + j),
                       vf_mul(vsigm(vf_load(g + j)), vtanh(vf_load(g + 3 * n + j))));
        vf_store(c + j, cj);
        vf_store(h + j, vf_mul(vsigm(vf_load(g + n + j)), vtanh(cj)));
    }
    for (; j < n; j++) {
        float i = 1.0f / (1.0f + exp_poly(-g[j])), o = 1.0f / (1.0f + exp_poly(-g[n + j]));
        float f = 1.0f / (1.0f + exp_poly(-g[2 * n + j]));
        c[j] = f * c[j] + i * (1.0f - 2.0f / (exp_poly(2.0f * g[3 * n + j]) + 1.0f));
        h[j] = o * (1.0f - 2.0f / (exp_poly(2.0f * c[j]) + 1.0f));
    }
}
