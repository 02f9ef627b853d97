/* q8_neon.c - the int8 product in AArch64 NEON: the same packed layout and
 * the same exact int32 sums as q8.c's other versions, so the result is
 * bitwise the scalar twin's (the epilogue is the same fused multiply-add).
 *
 * Activations are quantised to signed bytes (vcvtnq: nearest, ties to even,
 * as rintf; NaN to -127 as q8_round). A panel's 64-byte group (16 outputs x
 * 4 k, four q registers of 4 outputs x 4 k) meets a broadcast of 4
 * activation bytes per row:
 *   - with the dot-product extension (K_FEAT_DOTPROD, ARMv8.2+: Graviton 2+,
 *     Apple M1+, Cortex-A76+): one sdot per register adds the 4 products of
 *     each output into its int32 lane; tiles of up to 6 rows, 24
 *     accumulators;
 *   - without it (Cortex-A53/A72, Raspberry Pi 3/4): smull into 16-bit
 *     products (|w x| <= 127 * 127 fits) and sadalp, which adds pairs into
 *     int32 lanes (2 per output, summed by one addp at the end); tiles of up
 *     to 3 rows, 24 accumulators.
 * q8_drive (q8_impl.h) runs the tiles over the columns and rows. */
#include "kern/q8_impl.h"

#if defined(K_HAVE_VEC) && defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#define Q8N_AI static inline __attribute__((always_inline))
#define Q8N_DOT __attribute__((target("arch=armv8.2-a+dotprod")))

void q8_quant_rows_neon(int8_t *xq, size_t xs, float *sx, const float *x, int ldx, int M, int K) {
    const int32x4_t lo = vdupq_n_s32(-127), hi = vdupq_n_s32(127);
    for (int i = 0; i < M; i++) {
        const float *xi = x + (size_t)i * ldx;
        int8_t *d = xq + (size_t)i * xs;
        float32x4_t m = vdupq_n_f32(0.0f);
        int k = 0;
        /* maxnm: a NaN in x leaves m, as the C loop skips it */
        for (; k + 4 <= K; k += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(xi + k)));
        float amax = vmaxnmvq_f32(m);
        for (; k < K; k++) {
            float a = fabsf(xi[k]);
            if (a > amax) amax = a;
        }
        float inv = q8_inv(amax, &sx[i]);
        float32x4_t iv = vdupq_n_f32(inv);
        k = 0;
        for (; k + 16 <= K; k += 16) {
            int16x4_t h[4];
            for (int j = 0; j < 4; j++) {
                float32x4_t v = vmulq_f32(vld1q_f32(xi + k + 4 * j), iv);
                int32x4_t q = vbslq_s32(vceqq_f32(v, v), vcvtnq_s32_f32(v), lo);   /* NaN: -127 */
                h[j] = vmovn_s32(vminq_s32(vmaxq_s32(q, lo), hi));
            }
            int8x8_t a = vmovn_s16(vcombine_s16(h[0], h[1])), b = vmovn_s16(vcombine_s16(h[2], h[3]));
            vst1q_s8(d + k, vcombine_s8(a, b));
        }
        for (; k < K; k++) d[k] = (int8_t)q8_round(xi[k] * inv);
        memset(d + K, 0, xs - (size_t)K);
    }
}

/* Four activation bytes of row r at group g, in every 32-bit lane. */
Q8N_AI int8x16_t q8n_x(const q8v_tile *t, int r, int g) {
    int32_t v;
    memcpy(&v, t->xq + (size_t)r * t->xs + (size_t)g * 4, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

/* Row r's exact sums D of the panel's outputs 4j .. 4j+3 into y. s[] is
 * padded to a multiple of 16, so its loads stay inside; b is read only for
 * columns in [n0, n1). */
Q8N_AI void q8n_store(const q8v_tile *t, int r, int j, int32x4_t D) {
    int col = t->col + 4 * j;
    float *y = t->y + (size_t)r * t->ldy + col;
    float32x4_t sc = vmulq_f32(vdupq_n_f32(t->sx[r]), vld1q_f32(t->s + col));
    if (col >= t->n0 && col + 4 <= t->n1) {
        float32x4_t bv = t->b ? vld1q_f32(t->b + col) : vdupq_n_f32(0.0f);
        vst1q_f32(y, vfmaq_f32(bv, vcvtq_f32_s32(D), sc));
        return;
    }
    int32_t d[4];
    float s4[4];
    vst1q_s32(d, D);
    vst1q_f32(s4, sc);
    for (int l = 0; l < 4; l++)
        if (col + l >= t->n0 && col + l < t->n1)
            y[l] = fmaf((float)d[l], s4[l], t->b ? t->b[col + l] : 0.0f);
}

Q8N_DOT Q8N_AI void q8n_dot_run(const int R, const q8v_tile *t) {
    int32x4_t c[6][4];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < 4; j++) c[r][j] = vdupq_n_s32(0);
    for (int g = 0; g < t->G; g++) {
        const int8_t *wg = t->wp + (size_t)g * 64;
        int8x16_t w0 = vld1q_s8(wg), w1 = vld1q_s8(wg + 16), w2 = vld1q_s8(wg + 32), w3 = vld1q_s8(wg + 48);
        for (int r = 0; r < R; r++) {
            int8x16_t xb = q8n_x(t, r, g);
            c[r][0] = vdotq_s32(c[r][0], w0, xb);
            c[r][1] = vdotq_s32(c[r][1], w1, xb);
            c[r][2] = vdotq_s32(c[r][2], w2, xb);
            c[r][3] = vdotq_s32(c[r][3], w3, xb);
        }
    }
    for (int r = 0; r < R; r++)
        for (int j = 0; j < 4; j++) q8n_store(t, r, j, c[r][j]);
}

Q8N_AI void q8n_mull_run(const int R, const q8v_tile *t) {
    int32x4_t c[3][8];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < 8; j++) c[r][j] = vdupq_n_s32(0);
    for (int g = 0; g < t->G; g++) {
        const int8_t *wg = t->wp + (size_t)g * 64;
        int8x16_t w[4] = {vld1q_s8(wg), vld1q_s8(wg + 16), vld1q_s8(wg + 32), vld1q_s8(wg + 48)};
        for (int r = 0; r < R; r++) {
            int8x16_t xb = q8n_x(t, r, g);
            for (int j = 0; j < 4; j++) {
                c[r][2 * j] = vpadalq_s16(c[r][2 * j], vmull_s8(vget_low_s8(w[j]), vget_low_s8(xb)));
                c[r][2 * j + 1] = vpadalq_s16(c[r][2 * j + 1], vmull_high_s8(w[j], xb));
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int j = 0; j < 4; j++) q8n_store(t, r, j, vpaddq_s32(c[r][2 * j], c[r][2 * j + 1]));
}

Q8N_DOT static void q8n_dot_1(const q8v_tile *t) { q8n_dot_run(1, t); }
Q8N_DOT static void q8n_dot_2(const q8v_tile *t) { q8n_dot_run(2, t); }
Q8N_DOT static void q8n_dot_3(const q8v_tile *t) { q8n_dot_run(3, t); }
Q8N_DOT static void q8n_dot_4(const q8v_tile *t) { q8n_dot_run(4, t); }
Q8N_DOT static void q8n_dot_5(const q8v_tile *t) { q8n_dot_run(5, t); }
Q8N_DOT static void q8n_dot_6(const q8v_tile *t) { q8n_dot_run(6, t); }
static void q8n_mull_1(const q8v_tile *t) { q8n_mull_run(1, t); }
static void q8n_mull_2(const q8v_tile *t) { q8n_mull_run(2, t); }
static void q8n_mull_3(const q8v_tile *t) { q8n_mull_run(3, t); }
static const q8v_tile_fn q8n_dot[6] = {q8n_dot_1, q8n_dot_2, q8n_dot_3, q8n_dot_4, q8n_dot_5, q8n_dot_6};
static const q8v_tile_fn q8n_mull[3] = {q8n_mull_1, q8n_mull_2, q8n_mull_3};

void q8_matmul_neon(float *y, int ldy, const int8_t *xq, size_t xs, const float *sx, k_q8 w,
                    const float *b, int M, int n0, int nn) {
    if (k_feat(K_FEAT_DOTPROD)) q8_drive(q8n_dot, 6, y, ldy, xq, xs, sx, w, b, M, n0, nn);
    else q8_drive(q8n_mull, 3, y, ldy, xq, xs, sx, w, b, M, n0, nn);
}
#endif
