/* norm_act.c - RMSNorm and the feed-forward activations of the T5 family;
 * a weight row in any stored type as f32. */
#include "kern/kern.h"
#include "kern/gemm.h"
#include "kern/poly.h"
#include "kern/matmul_hp.h"
#include "kern/q8.h"
#include "kern/vec.h"

#include <math.h>
#include <string.h>

K_CLONED(, void, k_rmsnorm, (float *y, const float *x, const float *g, int M, int D, float eps),
         (y, x, g, M, D, eps)) {
    for (int i = 0; i < M; i++) {   /* lanes as k_layernorm's */
        const float *xi = x + (size_t)i * D;
        float *yi = y + (size_t)i * D;
        double q[K_NORM_LANES] = {0}, ss = 0;
        int j = 0;
        for (; j + K_NORM_LANES <= D; j += K_NORM_LANES)
            for (int l = 0; l < K_NORM_LANES; l++) q[l] += (double)xi[j + l] * xi[j + l];
        for (; j < D; j++) ss += (double)xi[j] * xi[j];
        for (int l = 0; l < K_NORM_LANES; l++) ss += q[l];
        float r = (float)(1.0 / sqrt(ss / D + eps));
        for (j = 0; j < D; j++) yi[j] = g[j] * (xi[j] * r);
    }
}

K_CLONED(, void, k_relu, (float *x, size_t n),
         (x, n)) {
    for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* tanh(u) = 1 - 2 / (exp(2u) + 1): exp_poly clamps, so both tails saturate
 * to +-1 without overflow. */
static void gelu_tanh_c(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        float t = 1.0f - 2.0f / (exp_poly(2.0f * u) + 1.0f);
        x[i] = 0.5f * v * (1.0f + t);
    }
}

void k_gelu_tanh_ref(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        x[i] = (float)(0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))));
    }
}

static void silu_c(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + exp_poly(-x[i]));
}

void k_gelu_tanh(float *x, size_t n) {
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) {
        K_VEC(k_gelu_tanh)(x, n);
        return;
    }
#endif
    gelu_tanh_c(x, n);
}

void k_silu(float *x, size_t n) {
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) {
        K_VEC(k_silu)(x, n);
        return;
    }
#endif
    silu_c(x, n);
}

static inline float sigm_c(float x) { return 1.0f / (1.0f + exp_poly(-x)); }
static inline float tanh_c(float u) { return 1.0f - 2.0f / (exp_poly(2.0f * u) + 1.0f); }

static void lstm_cell_c(float *h, float *c, const float *g, int n) {
    for (int j = 0; j < n; j++) {
        c[j] = sigm_c(g[2 * n + j]) * c[j] + sigm_c(g[j]) * tanh_c(g[3 * n + j]);
        h[j] = sigm_c(g[n + j]) * tanh_c(c[j]);
    }
}

void k_lstm_cell(float *h, float *c, const float *g, int n) {
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) {
        K_VEC(k_lstm_cell)(h, c, g, n);
        return;
    }
#endif
    lstm_cell_c(h, c, g, n);
}

void k_lstm_cell_ref(float *h, float *c, const float *g, int n) {
    for (int j = 0; j < n; j++) {
        double i = 1 / (1 + exp(-(double)g[j])), o = 1 / (1 + exp(-(double)g[n + j]));
        double f = 1 / (1 + exp(-(double)g[2 * n + j]));
        double cj = f * c[j] + i * tanh((double)g[3 * n + j]);
        c[j] = (float)cj;
        h[j] = (float)(o * tanh(cj));
    }
}

void k_silu_ref(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(x[i] / (1.0 + exp(-(double)x[i])));
}

K_CLONED(, void, k_mul, (float *y, const float *x, size_t n),
         (y, x, n)) {
    for (size_t i = 0; i < n; i++) y[i] *= x[i];
}

void k_w_row(float *dst, k_w w, int n, int N, int K) {
    if (w.t == K_Q8) {
        k_q8 q = {w.p, N, K};
        k_q8_row(dst, q, n);
    } else if (w.t == K_F16P || w.t == K_BF16P) {
        k_hp_row(dst, w.p, w.t == K_BF16P, n, N, K);
    } else if (w.t == K_BF16A) {
        for (int k = 0; k < K; k++) dst[k] = k_gemm_amx_at(w.p, K, n, k);
    } else if (w.t == K_F32) {
        memcpy(dst, (const float *)w.p + (size_t)n * K, (size_t)K * sizeof *dst);
    } else {
        k_h_to_f32(dst, (const uint16_t *)w.p + (size_t)n * K, (size_t)K, w.t == K_BF16);
    }
}
