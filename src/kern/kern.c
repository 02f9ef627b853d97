/* kern.c - the kernels behind kern.h: BLAS for products, plain C elsewhere.
 * The *_ref twins are deliberately naive (double accumulation, no BLAS). */
#include "kern/kern.h"
#include "kern/poly.h"
#include "kern/vec.h"

#include <blis.h>
#include <cblas.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

void k_matmul_ex(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                 const float *b, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
#ifdef K_HAVE_VEC
    if (M <= K_MF_ROWS && K > 0 && k_isa() >= K_ISA_VEC) {   /* decode steps: at read bandwidth */
#ifdef __x86_64__
        if (k_isa() >= K_ISA_AVX512) {   /* 16 lanes */
            k_matmul_f_avx512(y, ldy, x, ldx, w, ldw, b, M, N, K);
            return;
        }
#endif
        K_VEC(k_matmul_f)(y, ldy, x, ldx, w, ldw, b, M, N, K);
        return;
    }
#endif
    float beta = 0.0f;
    if (b) {
        for (int i = 0; i < M; i++) memcpy(y + (size_t)i * ldy, b, (size_t)N * sizeof *y);
        beta = 1.0f;
    }
    if (M == 1) {
        if (!b) memset(y, 0, (size_t)N * sizeof *y);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, w, ldw, x, 1, 1.0f, y, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, ldx, w, ldw,
                beta, y, ldy);
}

#if defined(K_HAVE_VEC) && defined(__x86_64__)
/* Rows of a partial panel from which the panel kernel takes them (fewer go
 * to the few-row kernel: on a Zen 3 core 9 rows padded to 16 ran at 0.94x
 * its speed, 12 at 1.18x, 16 at 1.58x). */
#define K_MF_PANEL_MIN 10

/* Rows of M that the panel kernel (AVX2 set only) takes: whole panels of
 * 16, and the rest where it is at least K_MF_PANEL_MIN. */
static int panel_rows(int M) {
    if (k_isa() != K_ISA_VEC) return 0;
    int r = M % 16;
    return r >= K_MF_PANEL_MIN ? M : M - r;
}
#endif

size_t k_matmul_inv_scratch(int M, int K) {
#if defined(K_HAVE_VEC) && defined(__x86_64__)
    int p = panel_rows(M);
    if (p) return k_matmul_fp_scratch_avx2(p, K);
#endif
    (void)K;
    return 0;
}

void k_matmul_inv(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                  const float *b, int M, int N, int K, void *scratch) {
    if (M <= 0 || N <= 0) return;
#if defined(K_HAVE_VEC) && defined(__x86_64__)
    int p = scratch && K > 0 ? panel_rows(M) : 0;
    if (p) {
        k_matmul_fp_avx2(y, ldy, x, ldx, w, ldw, b, p, N, K, scratch);
        y += (size_t)p * ldy, x += (size_t)p * ldx, M -= p;
    }
#endif
    (void)scratch;
    /* the few-row kernels' passes; the C set: BLIS's gemv, one row at a time */
    int rows = 1;
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) rows = K_MF_ROWS;
#endif
    for (int m0 = 0; m0 < M; m0 += rows) {
        int m = M - m0 < rows ? M - m0 : rows;
        k_matmul_ex(y + (size_t)m0 * ldy, ldy, x + (size_t)m0 * ldx, ldx, w, ldw, b, m, N, K);
    }
}

void k_matmul(float *y, const float *x, const float *w, const float *b, int M, int N, int K) {
    k_matmul_ex(y, N, x, K, w, K, b, M, N, K);
}

void k_matmul_ref(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                  const float *b, int M, int N, int K) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = b ? b[j] : 0.0;
            for (int k = 0; k < K; k++) acc += (double)x[(size_t)i * ldx + k] * w[(size_t)j * ldw + k];
            y[(size_t)i * ldy + j] = (float)acc;
        }
}

/* Sums in double over K_NORM_LANES independent lanes (one vector of
 * doubles), so the loops vectorise and no add waits on the previous one. */
K_CLONED(, void, k_layernorm, (float *y, const float *x, const float *g, const float *b, int M,
         int D, float eps),
         (y, x, g, b, M, D, eps)) {
    for (int i = 0; i < M; i++) {
        const float *xi = x + (size_t)i * D;
        float *yi = y + (size_t)i * D;
        double s[K_NORM_LANES] = {0}, q[K_NORM_LANES] = {0}, mean = 0, var = 0;
        int j = 0;
        for (; j + K_NORM_LANES <= D; j += K_NORM_LANES)
            for (int l = 0; l < K_NORM_LANES; l++) s[l] += xi[j + l];
        for (; j < D; j++) mean += xi[j];
        for (int l = 0; l < K_NORM_LANES; l++) mean += s[l];
        mean /= D;
        for (j = 0; j + K_NORM_LANES <= D; j += K_NORM_LANES)
            for (int l = 0; l < K_NORM_LANES; l++) {
                double d = xi[j + l] - mean;
                q[l] += d * d;
            }
        for (; j < D; j++) {
            double d = xi[j] - mean;
            var += d * d;
        }
        for (int l = 0; l < K_NORM_LANES; l++) var += q[l];
        var /= D;
        float m = (float)mean, r = (float)(1.0 / sqrt(var + eps));
        for (j = 0; j < D; j++) yi[j] = (xi[j] - m) * r * g[j] + b[j];
    }
}

static void gelu_c(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erf_poly(x[i] * 0.70710678118654752f));
}

void k_gelu(float *x, size_t n) {
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) {
        K_VEC(k_gelu)(x, n);
        return;
    }
#endif
    gelu_c(x, n);
}

void k_gelu_ref(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0))));
}

void k_add(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

float k_exp(float x) { return exp_poly(x); }

static double logsumexp_c(const float *x, int n, float *mx) {
    float lm[16];
    double ls[K_NORM_LANES] = {0}, sum = 0;
    int i = 0;
    for (int j = 0; j < 16; j++) lm[j] = -INFINITY;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) lm[j] = x[i + j] > lm[j] ? x[i + j] : lm[j];
    float m = -INFINITY;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    for (int j = 0; j < 16; j++) m = lm[j] > m ? lm[j] : m;
    *mx = m;
    if (m == -INFINITY) return 0;
    /* blocks of 256: 16 float lanes (16 terms each, <= 1), then into double */
    for (i = 0; i + 256 <= n; i += 256) {
        float bs[16] = {0};
        for (int b = 0; b < 256; b += 16)
            for (int j = 0; j < 16; j++) bs[j] += exp_poly(x[i + b + j] - m);
        for (int j = 0; j < 16; j++) ls[j % K_NORM_LANES] += bs[j];
    }
    for (; i < n; i++) sum += exp_poly(x[i] - m);
    for (int j = 0; j < K_NORM_LANES; j++) sum += ls[j];
    return log(sum);
}

/* Max and sum are kept in 16 lanes (reductions over one accumulator do not
 * vectorise without reassociation); the lanes are combined in double. */
#define SM_LANES 16
static void softmax_c(float *x, int n) {
    float lm[SM_LANES], ls[SM_LANES];
    int i = 0;
    for (int j = 0; j < SM_LANES; j++) lm[j] = -INFINITY, ls[j] = 0.0f;
    for (; i + SM_LANES <= n; i += SM_LANES)
        for (int j = 0; j < SM_LANES; j++) lm[j] = x[i + j] > lm[j] ? x[i + j] : lm[j];
    float mx = -INFINITY;
    for (int j = 0; j < SM_LANES; j++) mx = lm[j] > mx ? lm[j] : mx;
    for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (i = 0; i < n; i++) x[i] = exp_poly(x[i] - mx);
    for (i = 0; i + SM_LANES <= n; i += SM_LANES)
        for (int j = 0; j < SM_LANES; j++) ls[j] += x[i + j];
    double sum = 0;
    for (int j = 0; j < SM_LANES; j++) sum += ls[j];
    for (; i < n; i++) sum += x[i];
    float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++) x[i] *= inv;
}

double k_logsumexp(const float *x, int n, float *mx) {
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) return K_VEC(k_logsumexp)(x, n, mx);
#endif
    return logsumexp_c(x, n, mx);
}

static double exp_scaled_c(float *w, const float *x, int n, float t, float *mx) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    m /= t;
    *mx = m;
    if (m == -INFINITY) return 0;
    float ls[16] = {0};
    double sum = 0;
    int i = 0;
    for (; i + 16 <= n; i += 16)   /* 16 float lanes (terms <= 1), flushed into double */
        for (int j = 0; j < 16; j++) {
            w[i + j] = x[i + j] == -INFINITY ? 0.0f : exp_poly(x[i + j] / t - m);
            ls[j] += w[i + j];
            if ((i & 255) == 240 && j == 15)
                for (int k = 0; k < 16; k++) sum += ls[k], ls[k] = 0;
        }
    for (int k = 0; k < 16; k++) sum += ls[k];
    for (; i < n; i++) sum += w[i] = x[i] == -INFINITY ? 0.0f : exp_poly(x[i] / t - m);
    return sum;
}

double k_exp_scaled(float *w, const float *x, int n, float t, float *mx) {
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) return K_VEC(k_exp_scaled)(w, x, n, t, mx);
#endif
    return exp_scaled_c(w, x, n, t, mx);
}

void k_softmax(float *x, int n) {
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) {
        K_VEC(k_softmax)(x, n);
        return;
    }
#endif
    softmax_c(x, n);
}

K_CLONED(, int, k_shifted_above, (float *s, const float *x, int n, float base, float mx, float lse,
         float thr),
         (s, x, n, base, mx, lse, thr)) {
    int above = 0;
    for (int i = 0; i < n; i++) {
        s[i] = base + ((x[i] - mx) - lse);
        above += s[i] > thr;
    }
    return above;
}

void k_softmax_ref(float *x, int n) {
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    for (int i = 0; i < n; i++) x[i] = (float)(exp((double)x[i] - mx) / sum);
}

/* Masked-out scores are simply not part of the softmax range: row i has
 * n_i keys and the rest of its scratch row is zero for the second product. */
void k_attention(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                 const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                 int causal, float *s) {
    if (Mq == 1) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, Tk, dh, scale, k, ldk, q, 1, 0.0f, s, 1);
        k_softmax(s, Tk);
        cblas_sgemv(CblasRowMajor, CblasTrans, Tk, dh, 1.0f, v, ldv, s, 1, 0.0f, o, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Mq, Tk, dh, scale, q, ldq, k, ldk,
                0.0f, s, Tk);
    for (int i = 0; i < Mq; i++) {
        float *si = s + (size_t)i * Tk;
        int n = causal ? Tk - Mq + i + 1 : Tk;
        k_softmax(si, n);
        if (n < Tk) memset(si + n, 0, (size_t)(Tk - n) * sizeof *si);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Mq, dh, Tk, 1.0f, s, Tk, v, ldv,
                0.0f, o, ldo);
}

/* The fused long attention: 16 lanes from AVX-512 up where dh allows,
 * else the vector set's. Scratch: enough for either (a pool thread's limit
 * may differ from the caller's). */
#if defined(K_HAVE_VEC) && defined(__x86_64__)
static int flash_avx512(int dh) {
    return k_isa() >= K_ISA_AVX512 && dh > 0 && dh % k_attention_flash_dh_avx512() == 0;
}
#endif

int k_attention_flash_has(int dh) {
#ifdef K_HAVE_VEC
    if (k_isa() >= K_ISA_VEC) return dh > 0 && dh % K_VEC(k_attention_flash_dh)() == 0;
#endif
    (void)dh;
    return 0;
}

size_t k_attention_flash_scratch_bytes(int Tk, int dh) {
#ifdef K_HAVE_VEC
    size_t b = K_VEC(k_attention_flash_scratch)(Tk, dh);
#ifdef __x86_64__
    size_t w = k_attention_flash_scratch_avx512(Tk, dh);
    b = w > b ? w : b;
#endif
    return b;
#else
    (void)Tk, (void)dh;
    return 0;
#endif
}

void k_attention_flash(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                       const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                       void *scratch) {
#ifdef K_HAVE_VEC
    if (!k_attention_flash_has(dh) || Mq <= 0 || Tk <= 0) return;
#ifdef __x86_64__
    if (flash_avx512(dh)) {
        k_attention_flash_avx512(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, scratch);
        return;
    }
#endif
    K_VEC(k_attention_flash)(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, scratch);
#else
    (void)o, (void)ldo, (void)q, (void)ldq, (void)k, (void)ldk, (void)v, (void)ldv, (void)Mq;
    (void)Tk, (void)dh, (void)scale, (void)scratch;
#endif
}

void k_attention_ref(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                     const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                     int causal, float *s) {
    for (int i = 0; i < Mq; i++) {
        int n = causal ? Tk - Mq + i + 1 : Tk;
        double mx = -DBL_MAX, sum = 0;
        for (int t = 0; t < n; t++) {
            double acc = 0;
            for (int j = 0; j < dh; j++) acc += (double)q[(size_t)i * ldq + j] * k[(size_t)t * ldk + j];
            s[t] = (float)(acc * scale);
            if (s[t] > mx) mx = s[t];
        }
        for (int t = 0; t < n; t++) sum += exp(s[t] - mx);
        for (int j = 0; j < dh; j++) {
            double acc = 0;
            for (int t = 0; t < n; t++) acc += exp(s[t] - mx) / sum * v[(size_t)t * ldv + j];
            o[(size_t)i * ldo + j] = (float)acc;
        }
    }
}

void k_im2col_1d(float *col, const float *x, int x_chan_major, int C_in, int T_in,
                 int kw, int stride, int pad, int t0, int t1) {
    for (int t = t0; t < t1; t++) {
        float *row = col + (size_t)(t - t0) * C_in * kw;
        for (int c = 0; c < C_in; c++)
            for (int j = 0; j < kw; j++) {
                int ti = t * stride + j - pad;
                float val = 0.0f;
                if (ti >= 0 && ti < T_in)
                    val = x_chan_major ? x[(size_t)c * T_in + ti] : x[(size_t)ti * C_in + c];
                row[c * kw + j] = val;
            }
    }
}


/* 16 lanes, each the first maximum of its elements; the lanes then meet
 * by value, ties to the lower index: the first maximum, as the plain loop
 * (a NaN is never taken, except at x[0], which then stays). */
K_CLONED(, int, k_argmax, (const float *x, int n),
         (x, n)) {
    int best = 0, i = 1;
    if (n >= 32) {
        float bm[16];
        int bi[16];
        for (int j = 0; j < 16; j++) bm[j] = x[j], bi[j] = j;
        for (i = 16; i + 16 <= n; i += 16)
            for (int j = 0; j < 16; j++) {
                int gt = x[i + j] > bm[j];
                bm[j] = gt ? x[i + j] : bm[j];
                bi[j] = gt ? i + j : bi[j];
            }
        best = bi[0];
        for (int j = 1; j < 16; j++)
            if (bm[j] > x[best] || (bm[j] == x[best] && bi[j] < best)) best = bi[j];
    }
    for (; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}
