/* q8_impl.h - what the int8 kernel files share (private to src/kern): the
 * packed matrix's parts, the activation scratch, the one rounding rule and
 * the one epilogue (q8.h has the arithmetic), and the instruction-set
 * versions q8.c dispatches to. */
#ifndef ED_KERN_Q8_IMPL_H
#define ED_KERN_Q8_IMPL_H

#include "kern/q8.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

static inline size_t rup(size_t a, size_t m) { return (a + m - 1) / m * m; }

/* Where the parts of a packed matrix are. */
typedef struct {
    const int8_t *q;      /* panels */
    const float *s;       /* s[Np] */
    const int32_t *c;     /* c[Np] = 128 * sum_k q */
    int Np, Kp;
} q8_parts;

static inline q8_parts parts(k_q8 w) {
    q8_parts p;
    p.Np = (int)rup((size_t)w.N, 16), p.Kp = (int)rup((size_t)w.K, 4);
    p.q = w.data;
    p.s = (const float *)((const char *)w.data + (size_t)p.Np * p.Kp);
    p.c = (const int32_t *)(p.s + p.Np);
    return p;
}

/* The one rounding rule: nearest, ties to even, clamped to [-127, 127]; NaN
 * goes to -127 (what the AVX-512 conversion and clamp give). */
static inline int q8_round(float v) {
    float r = rintf(v);
    if (r >= -127.0f && r <= 127.0f) return (int)r;
    return r > 0 ? 127 : -127;
}

/* Scratch: float sx[M] (padded to 64 bytes), then M rows of xs bytes: the
 * quantised row, padded to a multiple of 64 with the code of 0. The C and
 * AVX-512 versions store it + 128 (unsigned: vpdpbusd's operand; pad 128),
 * the vector level (AVX2, NEON) as signed bytes (pad 0). */
static inline size_t xstride(int K) { return rup((size_t)K, 64); }

/* 127 / amax, or 0 for rows treated as zero (max |x| below FLT_MIN: 127 /
 * amax would overflow). amax ignores NaN. Sets *sx. */
static inline float q8_inv(float amax, float *sx) {
    if (!(amax >= FLT_MIN) || !(amax <= FLT_MAX)) {
        *sx = amax > FLT_MAX ? amax : 0.0f;   /* inf rows give inf / NaN, like floats would */
        return 0.0f;
    }
    *sx = amax / 127.0f;
    return 127.0f / amax;
}

/* y = fmaf((float)D, sx * s, b): every path's epilogue. */
static inline float q8_out(long long D, float sxi, float sn, const float *b, int n) {
    return fmaf((float)D, sxi * sn, b ? b[n] : 0.0f);
}

/* The vector level's product (q8_avx2.c, q8_neon.c: kern/vec.h names them
 * K_VEC(q8_...)): rows quantised to signed bytes (pad 0) into the scratch
 * by K_VEC(q8_quant_rows), then tiles of up to `rows` activation rows x one
 * 16-output panel, driven by q8_drive. Both sequential. */
typedef struct {
    float *y;              /* row 0, absolute column 0 */
    int ldy;
    const int8_t *xq;      /* row 0 of the tile */
    size_t xs;
    const float *sx;       /* sx of row 0 */
    const int8_t *wp;      /* the panel */
    int G;                 /* groups of 4 k */
    const float *s, *b;
    const int32_t *c;      /* c[Np]: 128 x each output's weight sum (biased activations) */
    int col;               /* absolute column of the panel */
    int n0, n1;            /* store columns [n0, n1) only */
} q8v_tile;
typedef void (*q8v_tile_fn)(const q8v_tile *);

/* Few rows (decode): one sweep over the panels, each weight byte loaded
 * once. Many rows: the columns go in blocks of ~128 KB of weights (L2),
 * each swept by every chunk of at most `rows` rows (chunks as even as can
 * be). tiles[R - 1] computes a tile of R rows. */
static inline void q8_drive(const q8v_tile_fn *tiles, int rows, float *y, int ldy,
                            const int8_t *xq, size_t xs, const float *sx, k_q8 w,
                            const float *b, int M, int n0, int nn) {
    q8_parts p = parts(w);
    size_t ps = (size_t)16 * p.Kp;
    int p0 = n0 / 16, p1 = (n0 + nn + 15) / 16;
    int blk = (int)((128u << 10) / ps);
    if (blk < 1) blk = 1;
    if (M <= rows) blk = p1 - p0;   /* one sweep: the weights are read once anyway */
    int chunks = (M + rows - 1) / rows;
    q8v_tile t = {0};
    t.ldy = ldy, t.xs = xs, t.G = p.Kp / 4, t.s = p.s, t.b = b, t.c = p.c, t.n0 = n0, t.n1 = n0 + nn;
    for (int pb = p0; pb < p1; pb += blk) {
        int pe = p1 - pb < blk ? p1 : pb + blk;
        for (int ch = 0, m0 = 0; ch < chunks; ch++) {
            int R = M / chunks + (ch < M % chunks);
            t.y = y + (size_t)m0 * ldy, t.xq = xq + (size_t)m0 * xs, t.sx = sx + m0;
            for (int pn = pb; pn < pe; pn++) {
                t.wp = p.q + (size_t)pn * ps, t.col = pn * 16;
                tiles[R - 1](&t);
            }
            m0 += R;
        }
    }
}

#include "kern/vec.h"
#ifdef K_HAVE_VEC
void K_VEC(q8_quant_rows)(int8_t *xq, size_t xs, float *sx, const float *x, int ldx, int M, int K);
void K_VEC(q8_matmul)(float *y, int ldy, const int8_t *xq, size_t xs, const float *sx, k_q8 w,
                      const float *b, int M, int n0, int nn);
#endif

#endif
