/* matmul_f_impl.h - few-row products with row-major f32 weights (decode
 * steps of a model stored in f32, e.g. the hub's Hugging Face checkpoints),
 * written once over vec_impl.h's lane operations and instantiated with
 * them (vec_avx2.c, vec_neon.c); declared in vec.h, dispatched by
 * k_matmul_ex (kern.c) for M <= K_MF_ROWS.
 *
 * The step reads every weight once, so it is a bandwidth problem: tiles of
 * MF_NB = 4 weight rows (4 streams from memory) x up to MF_MB = 3
 * activation rows, 12 accumulators, each weight vector loaded once per
 * tile; the tile's 4 rows (K floats each) stay in L1 while the next
 * activation rows pass over them. Every output is one lane vector summed
 * over k in order, then the same fixed horizontal sum and the scalar k
 * tail, whatever the tile: a row's bits do not depend on how many rows
 * come with it (batch-invariant, as k_matmul_hp).
 *
 * The weight rows MF_PF ahead are prefetched into L2, not L1 (prefetcht1):
 * into L1 the prefetches took the few fill buffers the loads need too, and
 * a tile's reads lagged the more, the more rows it had (AMD EPYC Zen 4,
 * [256206 x 1024], 2 threads, of the streaming read bandwidth: 1 row 89%,
 * 4 rows 69%, 7 rows 58%; into L2 32 rows ahead: 99%, 93-95%, 80-84%;
 * this machine's AVX2 set 87%, 74%, 56% before, 99%, 94%, 82% after). */

#define MF_NB 4
#define MF_MB 3
#define MF_PF 32   /* weight rows ahead to prefetch into L2 (past the matrix: harmless hints) */

VT static inline __attribute__((always_inline)) void mf_tile(
    const int NB, const int MB, float *y, int ldy, const float *x, int ldx, const float *w,
    int ldw, const float *b, int K) {
    VF a[MF_MB][MF_NB];
    for (int i = 0; i < MB; i++)
        for (int j = 0; j < NB; j++) a[i][j] = vf_set1(0.0f);
    int k = 0;
    const float *pf = w + (size_t)MF_PF * ldw;
    for (; k + VF_N <= K; k += VF_N) {
        VF wv[MF_NB];
        for (int j = 0; j < NB; j++) {
            __builtin_prefetch(pf + (size_t)j * ldw + k, 0, 2);
            wv[j] = vf_load(w + (size_t)j * ldw + k);
        }
        for (int i = 0; i < MB; i++) {
            VF xv = vf_load(x + (size_t)i * ldx + k);
            for (int j = 0; j < NB; j++) a[i][j] = vf_fma(xv, wv[j], a[i][j]);
        }
    }
    for (int i = 0; i < MB; i++)
        for (int j = 0; j < NB; j++) {
            float r = vf_hsum(a[i][j]);
            const float *xi = x + (size_t)i * ldx, *wj = w + (size_t)j * ldw;
            for (int t = k; t < K; t++) r += xi[t] * wj[t];
            y[(size_t)i * ldy + j] = r + (b ? b[j] : 0.0f);
        }
}

/* Columns [n, n + NB) for every row, in blocks of up to MF_MB rows. */
VT static inline __attribute__((always_inline)) void mf_cols(
    const int NB, float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
    const float *b, int M, int K) {
    for (int m0 = 0; m0 < M;) {
        int mb = M - m0 < MF_MB ? M - m0 : MF_MB;
        float *ym = y + (size_t)m0 * ldy;
        const float *xm = x + (size_t)m0 * ldx;
        if (mb == 3) mf_tile(NB, 3, ym, ldy, xm, ldx, w, ldw, b, K);
        else if (mb == 2) mf_tile(NB, 2, ym, ldy, xm, ldx, w, ldw, b, K);
        else mf_tile(NB, 1, ym, ldy, xm, ldx, w, ldw, b, K);
        m0 += mb;
    }
}

/* y[M, N] (ldy) = x[M, K] (ldx) . w[N, K]^T (ldw) + b; M, N >= 1. */
VT void K_VEC(k_matmul_f)(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                          const float *b, int M, int N, int K) {
    int n = 0;
    for (; n + MF_NB <= N; n += MF_NB)
        mf_cols(MF_NB, y + n, ldy, x, ldx, w + (size_t)n * ldw, ldw, b ? b + n : NULL, M, K);
    for (; n < N; n++)
        mf_cols(1, y + n, ldy, x, ldx, w + (size_t)n * ldw, ldw, b ? b + n : NULL, M, K);
}

#ifdef MF_PANEL
/* Many rows with the same sums, turned around (k_matmul_inv; the set that
 * defines MF_PANEL: AVX2). Lane l of output (i, j)'s accumulator above is
 * a chain of fmas over k = l, l + VF_N, ... from zero. Here one vector
 * holds that chain for VF_N rows of x at once: x is first transposed into
 * panels of MP_ROWS rows (mp_pack), and a weight w[j][k] is broadcast to
 * the rows. A tile of MP_NB weight rows x 2 vectors of rows keeps 2 MP_NB
 * accumulators in registers and loads 2 + MP_NB values for 2 MP_NB fmas;
 * the lane tile above loads 7 for 12 (the compiler folds the weight loads
 * into its fmas) and streams all of x from L2 for every 4 weight rows: at
 * 16 rows of a 1024 x 1024 product on one Zen 3 core it ran at 46 GFLOP/s,
 * this at 70-78.
 *
 * K is cut in blocks of MP_KB vectors: a block's part of the panel (16 KB)
 * and of the tile's weights (6 KB) stay in L1 while the VF_N lanes pass
 * over them; the lanes' accumulators wait in part[] between blocks
 * (stored and loaded whole: exact). At the end each output's lanes are
 * gathered into a vector for vf_hsum, then the scalar k tail and the bias
 * follow as in mf_tile: the bits are mf_tile's, whatever M. */
#define MP_ROWS (2 * VF_N)   /* rows of x in a panel */
#define MP_NB 6              /* weight rows in a tile */
#define MP_KB 32             /* k vectors in a block */
#ifndef MP_HINT
#define MP_HINT 2            /* the next block's prefetch: prefetcht1, into L2 (t0 and t2 alike) */
#endif

/* Floats of one panel: (K / VF_N) vectors of MP_ROWS rows for each lane. */
static inline size_t mp_panel_floats(int K) {
    return (size_t)(K / VF_N) * VF_N * MP_ROWS;
}

size_t K_VEC(k_matmul_fp_scratch)(int M, int K) {
    return sizeof(float) * mp_panel_floats(K) * (size_t)((M + MP_ROWS - 1) / MP_ROWS);
}

/* Rows [0, M) (M <= MP_ROWS) of x into one panel: block by block of k
 * vectors, lane by lane, vector by vector, the MP_ROWS rows (zero past M). */
VT static void mp_pack(float *xt, const float *x, int ldx, int M, int K) {
    int KV = K / VF_N;
    for (int kc = 0; kc < KV; kc += MP_KB) {
        int kb = KV - kc < MP_KB ? KV - kc : MP_KB;
        float *blk = xt + (size_t)kc * VF_N * MP_ROWS;
        for (int i0 = 0; i0 < MP_ROWS; i0 += VF_N)   /* VF_N rows x VF_N k at a time */
            for (int kk = 0; kk < kb; kk++) {
                VF r[VF_N];
                const float *xk = x + (size_t)i0 * ldx + (size_t)(kc + kk) * VF_N;
                for (int i = 0; i < VF_N; i++)
                    r[i] = i0 + i < M ? vf_load(xk + (size_t)i * ldx) : vf_set1(0.0f);
                vf_transpose8(r);
                for (int l = 0; l < VF_N; l++) vf_store(blk + ((size_t)l * kb + kk) * MP_ROWS + i0, r[l]);
            }
    }
}

/* One tile: NB weight rows (w, ldw) x one panel's rows; part[l][j][i]
 * gets lane l of output (i, j). */
VT static inline __attribute__((always_inline)) void mp_tile(
    const int NB, float part[][MP_NB][MP_ROWS], const float *xt, const float *w, int ldw, int K) {
    int KV = K / VF_N;
    for (int l = 0; l < VF_N; l++)
        for (int j = 0; j < NB; j++)
            for (int i = 0; i < MP_ROWS; i++) part[l][j][i] = 0.0f;
    for (int kc = 0; kc < KV; kc += MP_KB) {
        int kb = KV - kc < MP_KB ? KV - kc : MP_KB;
        const float *blk = xt + (size_t)kc * VF_N * MP_ROWS;
        for (int l = 0; l < VF_N; l++) {
            VF a[MP_NB], c[MP_NB];
            for (int j = 0; j < NB; j++) {
                a[j] = vf_load(part[l][j]);
                c[j] = vf_load(part[l][j] + VF_N);
            }
            const float *xp = blk + (size_t)l * kb * MP_ROWS;
            const float *wl = w + (size_t)kc * VF_N + l;
            /* lane l < NB fetches weight row l's part of the next block
             * (past the last: the next tile's first), a line every 2 k */
            const float *pf = l >= NB ? NULL
                              : kc + kb < KV ? w + (size_t)l * ldw + (size_t)(kc + kb) * VF_N
                                             : w + (size_t)(MP_NB + l) * ldw;
            for (int kk = 0; kk < kb; kk++) {
                VF xa = vf_load(xp + (size_t)kk * MP_ROWS), xc = vf_load(xp + (size_t)kk * MP_ROWS + VF_N);
                if (pf && (kk & 1) == 0) __builtin_prefetch(pf + (size_t)kk * VF_N, 0, MP_HINT);
                for (int j = 0; j < NB; j++) {
                    VF wb = vf_set1(wl[(size_t)j * ldw + (size_t)kk * VF_N]);
                    a[j] = vf_fma(xa, wb, a[j]);
                    c[j] = vf_fma(xc, wb, c[j]);
                }
            }
            for (int j = 0; j < NB; j++) {
                vf_store(part[l][j], a[j]);
                vf_store(part[l][j] + VF_N, c[j]);
            }
        }
    }
}

/* Outputs of a tile: each one's lanes summed as mf_tile sums them. */
VT static void mp_out(float *y, int ldy, float part[][MP_NB][MP_ROWS], const float *x, int ldx,
                      const float *w, int ldw, const float *b, int M, int NB, int K) {
    int k = K / VF_N * VF_N;
    if (k == K) {   /* no k tail: VF_N rows' sums at once, each vf_hsum's tree */
        for (int j = 0; j < NB; j++)
            for (int i0 = 0; i0 < M; i0 += VF_N) {
                VF v[VF_N];
                float o[VF_N];
                for (int l = 0; l < VF_N; l++) v[l] = vf_load(part[l][j] + i0);
                vf_store(o, vf_add(vf_hsum_lanes(v), vf_set1(b ? b[j] : 0.0f)));
                for (int i = i0; i < M && i < i0 + VF_N; i++) y[(size_t)i * ldy + j] = o[i - i0];
            }
        return;
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < NB; j++) {
            float v[VF_N];
            for (int l = 0; l < VF_N; l++) v[l] = part[l][j][i];
            float r = vf_hsum(vf_load(v));
            const float *xi = x + (size_t)i * ldx, *wj = w + (size_t)j * ldw;
            for (int t = k; t < K; t++) r += xi[t] * wj[t];
            y[(size_t)i * ldy + j] = r + (b ? b[j] : 0.0f);
        }
}

/* y[M, N] = x . w^T + b as k_matmul_f computes each row alone; scratch:
 * k_matmul_fp_scratch(M, K) bytes. */
VT void K_VEC(k_matmul_fp)(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                           const float *b, int M, int N, int K, void *scratch) {
    float *xt = scratch;
    size_t pf = mp_panel_floats(K);
    int P = (M + MP_ROWS - 1) / MP_ROWS;
    for (int p = 0; p < P; p++) {
        int m = M - p * MP_ROWS < MP_ROWS ? M - p * MP_ROWS : MP_ROWS;
        mp_pack(xt + (size_t)p * pf, x + (size_t)p * MP_ROWS * ldx, ldx, m, K);
    }
    float part[VF_N][MP_NB][MP_ROWS] __attribute__((aligned(64)));
    for (int n = 0; n < N; n += MP_NB) {
        int nb = N - n < MP_NB ? N - n : MP_NB;
        const float *wn = w + (size_t)n * ldw;
        for (int p = 0; p < P; p++) {
            int m = M - p * MP_ROWS < MP_ROWS ? M - p * MP_ROWS : MP_ROWS;
            const float *xp = xt + (size_t)p * pf;
            switch (nb) {
            case 6: mp_tile(6, part, xp, wn, ldw, K); break;
            case 5: mp_tile(5, part, xp, wn, ldw, K); break;
            case 4: mp_tile(4, part, xp, wn, ldw, K); break;
            case 3: mp_tile(3, part, xp, wn, ldw, K); break;
            case 2: mp_tile(2, part, xp, wn, ldw, K); break;
            default: mp_tile(1, part, xp, wn, ldw, K); break;
            }
            mp_out(y + (size_t)p * MP_ROWS * ldy + n, ldy, part, x + (size_t)p * MP_ROWS * ldx, ldx,
                   wn, ldw, b ? b + n : NULL, m, nb, K);
        }
    }
}
#endif
