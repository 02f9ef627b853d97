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
