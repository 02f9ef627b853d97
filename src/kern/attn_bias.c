/* attn_bias.c - attention with an additive position bias, and attention
 * through a cache index table (T5's encoder and decoder; beams). */
#include "kern/kern.h"
#include "kern/poly.h"

#include <blis.h>
#include <cblas.h>
#include <float.h>
#include <math.h>

void k_attention_bias(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                      const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                      const float *bias, ptrdiff_t bias_step, float *s) {
    if (Mq == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, Tk, dh, scale, k, ldk, q, 1, 0.0f, s, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Mq, Tk, dh, scale, q, ldq, k, ldk,
                    0.0f, s, Tk);
    for (int i = 0; i < Mq; i++) {
        float *si = s + (size_t)i * Tk;
        if (bias) k_add(si, bias + (ptrdiff_t)i * bias_step, (size_t)Tk);
        k_softmax(si, Tk);
    }
    if (Mq == 1)
        cblas_sgemv(CblasRowMajor, CblasTrans, Tk, dh, 1.0f, v, ldv, s, 1, 0.0f, o, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Mq, dh, Tk, 1.0f, s, Tk, v, ldv,
                    0.0f, o, ldo);
}

void k_attention_bias_ref(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                          const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                          const float *bias, ptrdiff_t bias_step, float *s) {
    for (int i = 0; i < Mq; i++) {
        double mx = -DBL_MAX, sum = 0;
        for (int t = 0; t < Tk; t++) {
            double acc = 0;
            for (int j = 0; j < dh; j++) acc += (double)q[(size_t)i * ldq + j] * k[(size_t)t * ldk + j];
            acc *= scale;
            if (bias) acc += bias[(ptrdiff_t)i * bias_step + t];
            s[t] = (float)acc;
            if (s[t] > mx) mx = s[t];
        }
        for (int t = 0; t < Tk; t++) sum += exp(s[t] - mx);
        for (int j = 0; j < dh; j++) {
            double acc = 0;
            for (int t = 0; t < Tk; t++) acc += exp(s[t] - mx) / sum * v[(size_t)t * ldv + j];
            o[(size_t)i * ldo + j] = (float)acc;
        }
    }
}

/* Dot product in 8 lanes (a single accumulator does not vectorise). */
static inline float dot8(const float *a, const float *b, int n) {
    float l[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) l[j] += a[i + j] * b[i + j];
    float r = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

#define GATHER_AHEAD 4   /* positions whose K rows are prefetched ahead */

static inline void prefetch_floats(const float *p, int n) {
    for (int i = 0; i < n; i += 16) __builtin_prefetch(p + i);
}

/* Heads side by side: position j's K (and V) row holds all nh heads in one
 * run of nh * dh floats, so it is read once, in order, for all of them (the
 * rows are ld apart and come from other slots: prefetched ahead). Each head
 * does exactly what k_attention_gather does alone. */
K_CLONED(, void, k_attention_gather_heads, (float *o, const float *q, const float *k,
         const float *v, size_t slot_stride, int ld, const int *slot, int Tk, int nh, int dh,
         float scale, const float *bias, size_t bias_hstride, float *s),
         (o, q, k, v, slot_stride, ld, slot, Tk, nh, dh, scale, bias, bias_hstride, s)) {
    int span = nh * dh;
    for (int j = 0; j < Tk && j < GATHER_AHEAD; j++)
        prefetch_floats(k + (size_t)slot[j] * slot_stride + (size_t)j * ld, span);
    for (int j = 0; j < Tk; j++) {
        const float *kj = k + (size_t)slot[j] * slot_stride + (size_t)j * ld;
        int ja = j + GATHER_AHEAD;
        if (ja < Tk) prefetch_floats(k + (size_t)slot[ja] * slot_stride + (size_t)ja * ld, span);
        prefetch_floats(v + (size_t)slot[j] * slot_stride + (size_t)j * ld, span);
        for (int h = 0; h < nh; h++)
            s[(size_t)h * Tk + j] = scale * dot8(q + (size_t)h * dh, kj + (size_t)h * dh, dh) +
                                    (bias ? bias[(size_t)h * bias_hstride + j] : 0.0f);
    }
    for (int h = 0; h < nh; h++) k_softmax(s + (size_t)h * Tk, Tk);
    for (int c = 0; c < span; c++) o[c] = 0.0f;
    for (int j = 0; j < Tk; j++) {
        const float *vj = v + (size_t)slot[j] * slot_stride + (size_t)j * ld;
        for (int h = 0; h < nh; h++) {
            float w = s[(size_t)h * Tk + j], *oh = o + (size_t)h * dh;
            const float *vh = vj + (size_t)h * dh;
            for (int c = 0; c < dh; c++) oh[c] += w * vh[c];
        }
    }
}

void k_attention_gather(float *o, const float *q, const float *k, const float *v,
                        size_t slot_stride, int ld, const int *slot, int Tk, int dh, float scale,
                        const float *bias, float *s) {
    k_attention_gather_heads(o, q, k, v, slot_stride, ld, slot, Tk, 1, dh, scale, bias, 0, s);
}

void k_attention_gather_ref(float *o, const float *q, const float *k, const float *v,
                            size_t slot_stride, int ld, const int *slot, int Tk, int dh,
                            float scale, const float *bias, float *s) {
    double mx = -DBL_MAX, sum = 0;
    for (int j = 0; j < Tk; j++) {
        const float *kj = k + (size_t)slot[j] * slot_stride + (size_t)j * ld;
        double acc = 0;
        for (int c = 0; c < dh; c++) acc += (double)q[c] * kj[c];
        s[j] = (float)(acc * scale + (bias ? bias[j] : 0.0));
        if (s[j] > mx) mx = s[j];
    }
    for (int j = 0; j < Tk; j++) sum += exp(s[j] - mx);
    for (int c = 0; c < dh; c++) {
        double acc = 0;
        for (int j = 0; j < Tk; j++)
            acc += exp(s[j] - mx) / sum * v[(size_t)slot[j] * slot_stride + (size_t)j * ld + c];
        o[c] = (float)acc;
    }
}
