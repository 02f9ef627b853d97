/* matmul_hp_drive.c - what the half-precision products of every kernel set
 * share beneath them: x's rows copied k-major, and k_hp_drive, the loop of
 * the AVX2 and NEON tiles over row chunks, column blocks and k blocks (see
 * matmul_hp.h). matmul_hp.c's dispatch and the per-set files call it; it
 * calls none of them. */
#include "kern/matmul_hp.h"

#include <string.h>

/* x rows [m0, m0 + R), columns [k0, k0 + kk), into xt[k * R + r]. */
void k_hp_transpose(float *xt, const float *x, int ldx, int R, int k0, int kk) {
    for (int r = 0; r < R; r++) {
        const float *xr = x + (size_t)r * ldx + k0;
        for (int k = 0; k < kk; k++) xt[(size_t)k * R + r] = xr[k];
    }
}

const float *k_hp_transpose_chunks(float *xs, const float *x, int ldx, int M, int chunks, int K) {
    for (int ch = 0, m0 = 0; ch < chunks; ch++) {
        int R = M / chunks + (ch < M % chunks);
        k_hp_transpose(xs + (size_t)m0 * K, x + (size_t)m0 * ldx, ldx, R, 0, K);
        m0 += R;
    }
    return xs;
}

void k_hp_drive(const k_hp_tile_fn tiles[K_HP_ROWS][2], int b2_rows, float *y, int ldy,
                const float *x, int ldx, const uint16_t *wp, const float *b, int M, int n0,
                int nn, int K, float *xs) {
    size_t ps = 16 * (((size_t)K + 31) & ~(size_t)31);
    int p0 = n0 / 16, p1 = (n0 + nn + 15) / 16;
    int chunks = (M + K_HP_ROWS - 1) / K_HP_ROWS;
    int blk = p1 - p0;   /* one chunk: one sweep */
    if (chunks > 1) {
        blk = (int)((128u << 10) / (ps * sizeof(uint16_t))) & ~1;
        if (blk < 2) blk = 2;
    }
    /* several column blocks: x k-major once, not once a block */
    const float *xa = xs && chunks > 1 && p1 - p0 > blk ? k_hp_transpose_chunks(xs, x, ldx, M, chunks, K)
                                                         : NULL;
    float xt[K_HP_ROWS * K_HP_KB] __attribute__((aligned(64)));
    k_hp_tile a;
    memset(&a, 0, sizeof a);
    a.ldy = ldy, a.ps = ps, a.n0 = n0, a.n1 = n0 + nn;
    for (int pb = p0; pb < p1; pb += blk) {
        int pe = p1 - pb < blk ? p1 : pb + blk;
        for (int ch = 0, m0 = 0; ch < chunks; ch++) {
            int R = M / chunks + (ch < M % chunks), bm = R <= b2_rows ? 2 : 1;
            a.y = y + (size_t)m0 * ldy;
            a.pf = ch == 0 ? (size_t)bm * ps : 256;
            for (int k0 = 0; k0 < K; k0 += K_HP_KB) {
                int kk = K - k0 < K_HP_KB ? K - k0 : K_HP_KB;
                if (R == 1) a.xt = x + (size_t)m0 * ldx + k0;
                else if (xa) a.xt = xa + (size_t)m0 * K + (size_t)k0 * R;
                else k_hp_transpose(xt, x + (size_t)m0 * ldx, ldx, R, k0, kk), a.xt = xt;
                a.K = kk, a.acc = k0 > 0, a.b = k0 + kk == K ? b : NULL;
                for (int pn = pb; pn < pe; pn += bm) {
                    int B = pe - pn < bm ? pe - pn : bm;
                    a.wp = wp + (size_t)pn * ps + (size_t)k0 * 16, a.col = pn * 16;
                    tiles[R - 1][B - 1](&a);
                }
            }
            m0 += R;
        }
    }
}
