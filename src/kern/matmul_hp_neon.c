/* matmul_hp_neon.c - k_matmul_hp's AArch64 NEON version: the panel layout of
 * matmul_hp.h read by 4-lane vectors.
 *
 * A panel's 16 outputs are four q registers. A tile is R activation rows
 * (1..6) x B panels (1 or 2; 2 only for R <= 2): 4RB accumulators (at most
 * 24) + 4B weight vectors fit the 32 registers. Per k each weight quarter is
 * widened once (f16: fcvtl of 4 halves; bf16: one shift or one and of the
 * 32-bit word pairs) and meets x[r][k] for every row in one fmla by
 * element, k in order; k_hp_drive (matmul_hp_drive.c) runs the tiles over
 * k-blocks, columns and rows, so each row's bits do not depend on how many
 * rows come with it. */
#include "kern/matmul_hp.h"

#if defined(K_HAVE_VEC) && defined(__aarch64__)
#include <arm_neon.h>

#define HPN_AI static inline __attribute__((always_inline))

/* Quarter i (outputs 4i .. 4i+3) of a panel's weights at k (p points at the
 * k-pair for bf16, at k for f16). */
HPN_AI float32x4_t hpn_ld(const uint16_t *p, const int BF, const int odd, const int i) {
    if (BF) {
        uint32x4_t v = vld1q_u32((const uint32_t *)(p + 8 * i));
        return vreinterpretq_f32_u32(odd ? vandq_u32(v, vdupq_n_u32(0xffff0000u)) : vshlq_n_u32(v, 16));
    }
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p + 16 * odd + 4 * i)));
}

HPN_AI void hpn_step(const int R, const int B, const int BF, float32x4_t c[6][8], const float *xk,
                     const uint16_t *wk, size_t ps, const int odd) {
    float32x4_t w[8];
    for (int p = 0; p < B; p++)
        for (int i = 0; i < 4; i++) w[4 * p + i] = hpn_ld(wk + (size_t)p * ps, BF, odd, i);
    for (int r = 0; r < R; r++) {
        float xv = xk[r];
        for (int j = 0; j < 4 * B; j++) c[r][j] = vfmaq_n_f32(c[r][j], w[j], xv);
    }
}

HPN_AI void hpn_store(const k_hp_tile *a, int r, int col, float32x4_t v) {
    float *yr = a->y + (size_t)r * a->ldy + col;
    if (col >= a->n0 && col + 4 <= a->n1) {
        float32x4_t add = a->b ? vld1q_f32(a->b + col) : vdupq_n_f32(0.0f);
        if (a->acc) add = vaddq_f32(add, vld1q_f32(yr));
        vst1q_f32(yr, vaddq_f32(v, add));
        return;
    }
    float t[4];
    vst1q_f32(t, v);
    for (int l = 0; l < 4; l++)
        if (col + l >= a->n0 && col + l < a->n1) {
            float add = a->b ? a->b[col + l] : 0.0f;
            if (a->acc) add += yr[l];
            yr[l] = t[l] + add;
        }
}

HPN_AI void hpn_tile(const int R, const int B, const int BF, const k_hp_tile *a) {
    float32x4_t c[6][8];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < 4 * B; j++) c[r][j] = vdupq_n_f32(0.0f);
    const float *xt = a->xt;
    const uint16_t *w = a->wp;
    size_t ps = a->ps, pf = a->pf;
    int K = a->K, k = 0;
    for (; k + 2 <= K; k += 2) {   /* 2 k = 64 bytes per panel: one prefetch each */
        const uint16_t *wk = w + (size_t)k * 16;
        __builtin_prefetch(wk + pf);
        if (B > 1) __builtin_prefetch(wk + pf + ps);
        hpn_step(R, B, BF, c, xt + (size_t)k * R, wk, ps, 0);
        hpn_step(R, B, BF, c, xt + (size_t)(k + 1) * R, wk, ps, 1);
    }
    if (k < K) hpn_step(R, B, BF, c, xt + (size_t)k * R, w + (size_t)k * 16, ps, 0);
    for (int p = 0; p < B; p++)
        for (int i = 0; i < 4; i++) {
            int col = a->col + 16 * p + 4 * i;
            if (col + 4 <= a->n0 || col >= a->n1) continue;
            for (int r = 0; r < R; r++) hpn_store(a, r, col, c[r][4 * p + i]);
        }
}

#define HPN_DEF(R, B)                                                                         \
    static void hpn_##R##_##B##_h(const k_hp_tile *a) { hpn_tile(R, B, 0, a); }               \
    static void hpn_##R##_##B##_b(const k_hp_tile *a) { hpn_tile(R, B, 1, a); }
HPN_DEF(1, 1) HPN_DEF(1, 2) HPN_DEF(2, 1) HPN_DEF(2, 2) HPN_DEF(3, 1) HPN_DEF(4, 1)
HPN_DEF(5, 1) HPN_DEF(6, 1)
#define HPN_T(T)                                                                              \
    {{hpn_1_1_##T, hpn_1_2_##T}, {hpn_2_1_##T, hpn_2_2_##T}, {hpn_3_1_##T, NULL},              \
     {hpn_4_1_##T, NULL}, {hpn_5_1_##T, NULL}, {hpn_6_1_##T, NULL}}
static const k_hp_tile_fn hpn_tiles[2][K_HP_ROWS][2] = {HPN_T(h), HPN_T(b)};

void k_matmul_hp_neon(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                      const float *b, int M, int n0, int nn, int K, float *xs) {
    k_hp_drive(hpn_tiles[bf16 != 0], 2, y, ldy, x, ldx, wp, b, M, n0, nn, K, xs);
}
#endif
