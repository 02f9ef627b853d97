/* matmul_hp_bfdot.c - the bf16 compute mode's few-row products on ARM64
 * CPUs with the BF16 extension (FEAT_BF16: Graviton 3 and later, Neoverse
 * V1 / N2, Apple M2 and later; K_FEAT_BF16), reading the bf16 panels of
 * matmul_hp.h in place.
 *
 * A bf16 panel holds, per pair of k, 16 words of (w[n][k], w[n][k+1]):
 * four q registers, outputs 4i .. 4i+3 in quarter i. BFDOT by element
 * multiplies such a quarter by one 32-bit pair (x[k], x[k+1]) of x,
 * broadcast from a lane, and adds both products into the four f32 lanes:
 * one instruction per row, quarter and pair of k, where the widening path
 * (matmul_hp_neon.c) spends a widen and an FMA per k. So x goes in as bf16,
 * rounded to nearest even (as k_gemm's bf16 mode and the AMX path round
 * it): per chunk of rows (up to 6) and block of HPB_KB k, the rows are
 * rounded into a stack buffer pair-major (xw[pair][row]: rows 0..3 one q
 * register, 4..5 the next), then every panel of the column range is swept
 * by one tile of R rows x 16 outputs (24 accumulators). BFDOT's sums are
 * the CPU's (the architecture lets it round the pair's sum to odd and
 * flush subnormals), k in order, each row from its own x alone: a row's
 * bits do not depend on M (tested), and its scalar twin is
 * k_matmul_hp_amx_ref's (double sums of bf16(x) * w), within 1e-5 of
 * sum |x||w|.
 */
#include "kern/matmul_hp.h"

#include <string.h>

#define HPB_ROWS 6
#define HPB_KB 1024   /* k of x held as bf16 pairs at once: 512 pairs x 8 words, 16 KB of stack */

#if defined(K_HAVE_VEC) && defined(__aarch64__)
#include <arm_neon.h>

#define BFD __attribute__((target("arch=armv8.2-a+bf16")))
#define BFD_AI BFD static inline __attribute__((always_inline))

/* Rows [R] of x, columns [k0, k0 + kk), as bf16 pairs: xw[p * 8 + r] holds
 * (x[r][k0 + 2p], x[r][k0 + 2p + 1]) (0 past kk); lanes r >= R stay 0. */
BFD static void bfd_pairs(uint32_t *xw, const float *x, int ldx, int R, int k0, int kk) {
    int P = (kk + 1) / 2;
    memset(xw, 0, sizeof(uint32_t) * 8 * (size_t)P);
    for (int r = 0; r < R; r++) {
        const float *xr = x + (size_t)r * ldx + k0;
        for (int p = 0; p < P; p++) {
            bfloat16_t lo = vcvth_bf16_f32(xr[2 * p]);
            bfloat16_t hi = 2 * p + 1 < kk ? vcvth_bf16_f32(xr[2 * p + 1]) : vcvth_bf16_f32(0.0f);
            uint16_t a, b;
            memcpy(&a, &lo, 2);
            memcpy(&b, &hi, 2);
            xw[(size_t)p * 8 + r] = (uint32_t)a | (uint32_t)b << 16;
        }
    }
}

typedef struct {
    float *y;             /* row 0, absolute column 0 */
    int ldy;
    const uint32_t *xw;   /* this block's pairs */
    const uint16_t *wp;   /* the panel, at this block */
    int P;                /* pairs of k in the block */
    int acc;              /* add to y (a later block) */
    const float *b;       /* the bias with the last block, else NULL */
    int col, n0, n1;      /* absolute column of the panel; store [n0, n1) only */
} bfd_tile;

#define BFD_ROW(r)                                                                            \
    if (R > r)                                                                                \
        for (int i = 0; i < 4; i++)                                                           \
            c[r][i] = vbfdotq_laneq_f32(c[r][i], w[i], (r) < 4 ? x0 : x1, (r) & 3);

BFD_AI void bfd_run(const int R, const bfd_tile *t) {
    float32x4_t c[HPB_ROWS][4];
    for (int r = 0; r < HPB_ROWS; r++)
        for (int i = 0; i < 4; i++) c[r][i] = vdupq_n_f32(0.0f);
    const uint16_t *wp = t->wp;
    const uint32_t *xw = t->xw;
    for (int p = 0; p < t->P; p++) {
        const bfloat16_t *wk = (const bfloat16_t *)(wp + (size_t)p * 32);
        bfloat16x8_t w[4] = {vld1q_bf16(wk), vld1q_bf16(wk + 8), vld1q_bf16(wk + 16),
                             vld1q_bf16(wk + 24)};
        bfloat16x8_t x0 = vreinterpretq_bf16_u32(vld1q_u32(xw + (size_t)p * 8));
        bfloat16x8_t x1 = vreinterpretq_bf16_u32(vld1q_u32(xw + (size_t)p * 8 + 4));
        BFD_ROW(0) BFD_ROW(1) BFD_ROW(2) BFD_ROW(3) BFD_ROW(4) BFD_ROW(5)
    }
    for (int r = 0; r < R; r++) {
        float *yr = t->y + (size_t)r * t->ldy;
        for (int i = 0; i < 4; i++) {
            float v[4];
            vst1q_f32(v, c[r][i]);
            for (int l = 0; l < 4; l++) {
                int col = t->col + 4 * i + l;
                if (col < t->n0 || col >= t->n1) continue;
                float add = t->b ? t->b[col] : 0.0f;
                if (t->acc) add += yr[col];
                yr[col] = v[l] + add;
            }
        }
    }
}

BFD static void bfd_1(const bfd_tile *t) { bfd_run(1, t); }
BFD static void bfd_2(const bfd_tile *t) { bfd_run(2, t); }
BFD static void bfd_3(const bfd_tile *t) { bfd_run(3, t); }
BFD static void bfd_4(const bfd_tile *t) { bfd_run(4, t); }
BFD static void bfd_5(const bfd_tile *t) { bfd_run(5, t); }
BFD static void bfd_6(const bfd_tile *t) { bfd_run(6, t); }
static void (*const bfd_tiles[HPB_ROWS])(const bfd_tile *) = {bfd_1, bfd_2, bfd_3,
                                                             bfd_4, bfd_5, bfd_6};

/* Chunks of up to 6 rows (as even as can be); per chunk and block of k, the
 * rows rounded once, then the panels. One chunk: one sweep of the columns;
 * more: the columns in blocks of ~128 KB of weights, read from memory by
 * the first chunk and from L2 by the others. Later k blocks add to y; the
 * bias comes with the last. */
static void bfd_drive(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                      const float *b, int M, int n0, int nn, int K) {
    uint32_t xw[8 * (HPB_KB / 2)] __attribute__((aligned(64)));
    size_t ps = 16 * (((size_t)K + 31) & ~(size_t)31);
    int p0 = n0 / 16, p1 = (n0 + nn + 15) / 16;
    int chunks = (M + HPB_ROWS - 1) / HPB_ROWS, blk = p1 - p0;
    if (chunks > 1) {
        blk = (int)((128u << 10) / (ps * sizeof(uint16_t)));
        if (blk < 1) blk = 1;
    }
    bfd_tile t;
    memset(&t, 0, sizeof t);
    t.ldy = ldy, t.xw = xw, t.n0 = n0, t.n1 = n0 + nn;
    for (int pb = p0; pb < p1; pb += blk) {
        int pe = p1 - pb < blk ? p1 : pb + blk;
        for (int ch = 0, m0 = 0; ch < chunks; ch++) {
            int R = M / chunks + (ch < M % chunks);
            t.y = y + (size_t)m0 * ldy;
            for (int k0 = 0; k0 < K; k0 += HPB_KB) {
                int kk = K - k0 < HPB_KB ? K - k0 : HPB_KB;
                bfd_pairs(xw, x + (size_t)m0 * ldx, ldx, R, k0, kk);
                t.P = (kk + 1) / 2, t.acc = k0 > 0, t.b = k0 + kk == K ? b : NULL;
                for (int pn = pb; pn < pe; pn++) {
                    t.wp = wp + (size_t)pn * ps + (size_t)k0 * 16, t.col = pn * 16;
                    bfd_tiles[R - 1](&t);
                }
            }
            m0 += R;
        }
    }
}
#endif

int k_matmul_hp_bfdot_has(void) {
#if defined(K_HAVE_VEC) && defined(__aarch64__)
    return k_feat(K_FEAT_BF16);
#else
    return 0;
#endif
}

int k_matmul_hp_bfdot(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                      const float *b, int M, int n0, int nn, int N, int K) {
    if (!wp || N < 1 || K < 1 || M < 0 || n0 < 0 || nn < 0 || n0 > N || nn > N - n0 ||
        !k_matmul_hp_bfdot_has())
        return -1;
#if defined(K_HAVE_VEC) && defined(__aarch64__)
    if (M > 0 && nn > 0) bfd_drive(y, ldy, x, ldx, wp, b, M, n0, nn, K);
    return 1;
#else
    (void)y, (void)ldy, (void)x, (void)ldx, (void)b;
    return -1;
#endif
}
