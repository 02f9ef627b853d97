/* attn_h_neon.c - k_attention_kv's AArch64 NEON version for heads of 64
 * columns (every Whisper and T5 size): few query rows against one head's
 * K/V block of f32, f16 or bf16, as attn_h.c describes.
 *
 * Scores: per 4 keys, the keys are widened once into 4 x 64 f32 (L1), then
 * each query row forms 4 per-key vectors of partial products (16 FMAs
 * each, in two chains), reduced together by two levels of pairwise adds
 * into the 4 scores. Softmax: k_softmax. Values: per chunk of 64 keys
 * (widened once), each query row accumulates its 64 outputs in 16 q
 * registers over the chunk, by element of its probabilities. K and V lines
 * are read from memory once per call for all query rows. */
#include "kern/attn_h.h"
#include "kern/vec.h"
#include "base/half.h"

#if defined(K_HAVE_VEC) && defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#define AN_DH 64
#define AN_VCH 64

/* 4 elements of a K/V block from element i as f32. */
static inline __attribute__((always_inline)) float32x4_t an_ld4(const void *p, size_t i, k_wtype t) {
    if (t == K_F32) return vld1q_f32((const float *)p + i);
    uint16x4_t h = vld1_u16((const uint16_t *)p + i);
    if (t == K_BF16) return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

/* Rows [r0, r0 + n) of a [Tk, 64] block into dst[n][64] as f32. */
static void an_expand(float *dst, const void *p, int r0, int n, k_wtype t) {
    size_t esz = t == K_F32 ? 4 : 2;
    const char *pf = (const char *)p + (size_t)(r0 + n) * AN_DH * esz;
    for (size_t x = 0; x < (size_t)n * AN_DH * esz; x += 64) __builtin_prefetch(pf + x);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < AN_DH; c += 4)
            vst1q_f32(dst + (size_t)r * AN_DH + c, an_ld4(p, (size_t)(r0 + r) * AN_DH + c, t));
}

void k_attention_kv_neon(float *o, int ldo, const float *q, int ldq, const void *k,
                         const void *v, k_wtype t, int Mq, int Tk, float scale, float *s) {
    float kb[4 * AN_DH] __attribute__((aligned(16)));
    float vb[AN_VCH * AN_DH] __attribute__((aligned(16)));
    for (int t0 = 0; t0 < Tk; t0 += 4) {
        int nk = Tk - t0 < 4 ? Tk - t0 : 4;
        an_expand(kb, k, t0, nk, t);
        if (nk < 4) memset(kb + (size_t)nk * AN_DH, 0, sizeof(float) * (size_t)(4 - nk) * AN_DH);
        for (int i = 0; i < Mq; i++) {
            const float *qi = q + (size_t)i * ldq;
            float32x4_t p[4];
            for (int j = 0; j < 4; j++) {
                const float *kj = kb + (size_t)j * AN_DH;
                float32x4_t a = vmulq_f32(vld1q_f32(qi), vld1q_f32(kj));
                float32x4_t b = vmulq_f32(vld1q_f32(qi + 4), vld1q_f32(kj + 4));
                for (int c = 8; c < AN_DH; c += 8) {
                    a = vfmaq_f32(a, vld1q_f32(qi + c), vld1q_f32(kj + c));
                    b = vfmaq_f32(b, vld1q_f32(qi + c + 4), vld1q_f32(kj + c + 4));
                }
                p[j] = vaddq_f32(a, b);
            }
            float32x4_t sc = vmulq_n_f32(vpaddq_f32(vpaddq_f32(p[0], p[1]), vpaddq_f32(p[2], p[3])), scale);
            float *si = s + (size_t)i * Tk + t0;
            if (nk == 4) vst1q_f32(si, sc);
            else {
                float tmp[4];
                vst1q_f32(tmp, sc);
                memcpy(si, tmp, sizeof(float) * (size_t)nk);
            }
        }
    }
    for (int i = 0; i < Mq; i++) k_softmax(s + (size_t)i * Tk, Tk);
    for (int r0 = 0; r0 < Tk; r0 += AN_VCH) {
        int n = Tk - r0 < AN_VCH ? Tk - r0 : AN_VCH;
        an_expand(vb, v, r0, n, t);
        for (int i = 0; i < Mq; i++) {
            float *oi = o + (size_t)i * ldo;
            const float *pi = s + (size_t)i * Tk + r0;
            float32x4_t a[16];
            for (int c = 0; c < 16; c++) a[c] = r0 ? vld1q_f32(oi + 4 * c) : vdupq_n_f32(0.0f);
            for (int r = 0; r < n; r++) {
                float pr = pi[r];
                const float *vr = vb + (size_t)r * AN_DH;
                for (int c = 0; c < 16; c++) a[c] = vfmaq_n_f32(a[c], vld1q_f32(vr + 4 * c), pr);
            }
            for (int c = 0; c < 16; c++) vst1q_f32(oi + 4 * c, a[c]);
        }
    }
}
/* f16: the FPU's conversion (round to nearest even, IEEE: subnormals,
 * overflow to inf, NaNs quieted with their payload's top bits, as the
 * reference). bf16: the reference's integer rounding in lanes. The tail
 * goes through the scalar forms. */
void k_f32_to_h_neon(uint16_t *dst, const float *src, size_t n, int bf16) {
    size_t i = 0;
    if (bf16) {
        const uint32x4_t bias = vdupq_n_u32(0x7fff), one = vdupq_n_u32(1);
        const uint32x4_t abs = vdupq_n_u32(0x7fffffff), inf = vdupq_n_u32(0x7f800000);
        const uint32x4_t quiet = vdupq_n_u32(0x40);
        for (; i + 4 <= n; i += 4) {
            uint32x4_t u = vreinterpretq_u32_f32(vld1q_f32(src + i)), hi = vshrq_n_u32(u, 16);
            uint32x4_t v = vshrq_n_u32(vaddq_u32(u, vaddq_u32(bias, vandq_u32(hi, one))), 16);
            uint32x4_t nan = vcgtq_u32(vandq_u32(u, abs), inf);
            vst1_u16(dst + i, vmovn_u32(vbslq_u32(nan, vorrq_u32(hi, quiet), v)));
        }
        for (; i < n; i++) dst[i] = ed_f2bf(src[i]);
        return;
    }
    for (; i + 4 <= n; i += 4) vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(src + i))));
    for (; i < n; i++) dst[i] = ed_f2h(src[i]);
}
#endif
