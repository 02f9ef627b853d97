/* matmul_hp.c - half-precision weights in panels of 16 outputs (see
 * matmul_hp.h for the layout), times a few activation rows.
 *
 * The AVX-512 kernel computes tiles of R activation rows (1..16) x B panels
 * (1..4, fewer as R grows: at most 24 accumulators, see hp_bmax): per k it
 * loads B weight vectors, expands each to 16 f32 lanes (f16: vcvtph2ps of
 * 32 bytes; bf16: one shift or one and of the 64-byte word pairs, a single
 * ALU operation on a memory operand), and issues R x B FMAs against a
 * broadcast of x[r][k] (the broadcast folds into the FMA's memory operand
 * when B = 1). Outputs lie across the lanes: no horizontal sums; the
 * epilogue adds the bias and stores 16 columns at once (masked at the edges
 * of [n0, n0 + nn)).
 *
 * x: the chunk's rows are copied k-major into a 32 KB stack buffer, in
 * blocks of 512 k (later blocks add to y), so every broadcast is one pointer
 * plus a constant (per-row pointers spilled at R = 16: ~10% slower). The
 * blocks are the same for every R (one row too, read in place): each row's
 * sums, and so its bits, do not depend on how many rows come with it.
 *
 * Memory: a tile reads B panels as B sequential streams and prefetches the
 * next tile's panels at the same offsets (as kern/q8.c found best), into L2
 * (prefetcht1: into L1 they held fill buffers the loads wait on; AMD EPYC
 * Zen 4, [51866 x 384], f16, of the read bandwidth: 1 row 74% -> 90% on
 * one thread, 91% -> 99% on two; 5 rows 65% -> 80%, 89% -> 96%). M <= 16
 * is one chunk: every weight byte comes from memory once. More rows go in
 * near-equal chunks of up to 16 and the columns in blocks of about 256 KB of
 * weights: the first chunk reads a block from memory, the others from L2
 * (prefetching 512 bytes ahead).
 *
 * The portable C version (rows in fours per panel) and the scalar twin
 * (double sums) are plain C.
 */
#include "kern/half.h"
#include "kern/matmul_hp.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define K_X86 1
#define HP_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#define HP_HAS_AVX512 (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && \
                       __builtin_cpu_supports("avx512vl"))
#endif

#ifndef HP_ROWS
#define HP_ROWS 16                    /* rows per weight pass, at most (<= 16) */
#endif
#define HP_BLOCK_BYTES (256 << 10)    /* weights per column block (more rows than HP_ROWS) */
#define HP_KB 512                     /* k per block, for every R: a row's sums do not depend on M */
#define HP_XT_FLOATS (HP_ROWS * HP_KB) /* x of a chunk, transposed, per k-block (32 KB of stack) */

static inline size_t panels(int N) { return ((size_t)N + 15) / 16; }
static inline size_t kpad(int K) { return k_hp_kpad(K); }

size_t k_hp_bytes(int N, int K) {
    if (N < 1 || K < 1) return 0;
    return panels(N) * 16 * kpad(K) * sizeof(uint16_t);
}

int k_hp_pack(uint16_t *dst, k_w w, int N, int K) {
    if (!dst || !w.p || N < 1 || K < 1 || (w.t != K_F16 && w.t != K_BF16)) return -1;
    const uint16_t *src = w.p;
    int bf16 = w.t == K_BF16;
    size_t np = panels(N), ps = 16 * kpad(K);
    for (size_t p = 0; p < np; p++) {
        uint16_t *d = dst + p * ps;
        int rows = N - (int)p * 16 < 16 ? N - (int)p * 16 : 16;
        if (rows < 16 || K % 32) memset(d, 0, ps * sizeof *d);
        /* written in order, read from the 16 rows as 16 streams (k_hp_index's
         * places, without calling it per element) */
        const uint16_t *s = src + p * 16 * (size_t)K;
        if (bf16) {
            for (int k = 0; k + 1 < K; k += 2)
                for (int j = 0; j < rows; j++) {
                    d[(size_t)k * 16 + 2 * j] = s[(size_t)j * K + k];
                    d[(size_t)k * 16 + 2 * j + 1] = s[(size_t)j * K + k + 1];
                }
            if (K & 1)
                for (int j = 0; j < rows; j++) d[(size_t)(K - 1) * 16 + 2 * j] = s[(size_t)j * K + K - 1];
        } else {
            for (int k = 0; k < K; k++)
                for (int j = 0; j < rows; j++) d[(size_t)k * 16 + j] = s[(size_t)j * K + k];
        }
    }
    return 0;
}


void k_hp_row(float *dst, const uint16_t *wp, int bf16, int n, int N, int K) {
    if (n < 0 || n >= N) return;
    for (int k = 0; k < K; k++) dst[k] = k_h2f(wp[k_hp_index(bf16, n, k, K)], bf16);
}

/* ---- portable C ---- */

/* R rows (1 or 4, a constant after inlining) against one panel. */
static inline __attribute__((always_inline)) void panel_c(const int R, float out[4][16],
                                                          const uint16_t *wp, int bf16,
                                                          const float *x, int ldx, int K) {
    float acc[4][16] = {{0}};
    for (int k = 0; k < K; k++) {
        float w[16];
        const uint16_t *wk = bf16 ? wp + (size_t)(k / 2) * 32 + (k & 1) : wp + (size_t)k * 16;
        for (int j = 0; j < 16; j++) w[j] = k_h2f(wk[(size_t)j * (bf16 ? 2 : 1)], bf16);
        for (int i = 0; i < R; i++) {
            float xv = x[(size_t)i * ldx + k];
            for (int j = 0; j < 16; j++) acc[i][j] += xv * w[j];
        }
    }
    memcpy(out, acc, sizeof(float) * 16 * (size_t)R);
}

static void matmul_hp_c(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                        const float *b, int M, int n0, int nn, int K) {
    for (int pn = n0 / 16; pn * 16 < n0 + nn; pn++) {
        const uint16_t *w = wp + (size_t)pn * 16 * kpad(K);
        int lo = n0 - pn * 16 > 0 ? n0 - pn * 16 : 0;
        int hi = n0 + nn - pn * 16 < 16 ? n0 + nn - pn * 16 : 16;
        for (int i0 = 0; i0 < M;) {
            int R = M - i0 >= 4 ? 4 : 1;
            float acc[4][16];
            if (R == 4) panel_c(4, acc, w, bf16, x + (size_t)i0 * ldx, ldx, K);
            else panel_c(1, acc, w, bf16, x + (size_t)i0 * ldx, ldx, K);
            for (int i = 0; i < R; i++)
                for (int j = lo; j < hi; j++) {
                    int n = pn * 16 + j;
                    y[(size_t)(i0 + i) * ldy + n] = acc[i][j] + (b ? b[n] : 0.0f);
                }
            i0 += R;
        }
    }
}

/* ---- AVX-512 ---- */

/* Panels per tile for R rows: R x B accumulators + B weight vectors fit
 * the 32 registers. */
static inline int hp_bmax(int R) { return R <= 6 ? 4 : R <= 8 ? 3 : R <= 12 ? 2 : 1; }

#ifdef K_X86
typedef struct {
    float *y;               /* row 0 of the chunk, absolute column 0 */
    int ldy;
    const float *xt;        /* the chunk's x for this k-block, k-major: xt[k * R + r] */
    const uint16_t *wp;     /* first panel of the tile, at the k-block */
    size_t ps;              /* halves per panel (16 K) */
    size_t pf;              /* prefetch distance in halves */
    int K;                  /* k in this block */
    int acc;                /* add to y (a later k-block), else start from 0 */
    const float *b;         /* NULL, or the bias (added by the last k-block) */
    int col;                /* absolute column of the first panel */
    int n0, n1;             /* store columns [n0, n1) only */
} hp_tile_args;

/* The 16 outputs' weights at k (p: 2 k = 32 halves in): f16 rows of 16
 * halves; bf16 pairs (k, k + 1) in 32-bit words: k's half is the low one,
 * its f32 value the word shifted left by 16, k + 1's the word with the low
 * half cleared. */
HP_TARGET static inline __attribute__((always_inline)) __m512 hp_ld(const uint16_t *p, const int BF,
                                                                    const int odd) {
    if (BF) {
        __m512i v = _mm512_loadu_si512((const void *)p);
        if (odd) return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    }
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 16 * odd)));
}

/* Named accumulators a<r>_<j> (GCC keeps arrays of vectors in memory);
 * with R, B constant the unused ones fold away. */
#define HP_DECL(r) __m512 a##r##_0 = z, a##r##_1 = z, a##r##_2 = z, a##r##_3 = z;
#define HP_F(r, j) a##r##_##j = _mm512_fmadd_ps(xb, w##j, a##r##_##j)
#define HP_ROW(r, kk)                                                          \
    if (R > r) {                                                               \
        __m512 xb = _mm512_set1_ps(xt[(size_t)(kk) * R + r]);                                  \
        HP_F(r, 0);                                                            \
        if (B > 1) HP_F(r, 1);                                                 \
        if (B > 2) HP_F(r, 2);                                                 \
        if (B > 3) HP_F(r, 3);                                                 \
    }
#define HP_STEP(kk, wk, odd)                                                   \
    {                                                                          \
        __m512 w0 = hp_ld(wk, BF, odd), w1 = z, w2 = z, w3 = z;                \
        if (B > 1) w1 = hp_ld(wk + ps, BF, odd);                               \
        if (B > 2) w2 = hp_ld(wk + 2 * ps, BF, odd);                           \
        if (B > 3) w3 = hp_ld(wk + 3 * ps, BF, odd);                           \
        HP_ROW(0, kk) HP_ROW(1, kk) HP_ROW(2, kk) HP_ROW(3, kk)                \
        HP_ROW(4, kk) HP_ROW(5, kk) HP_ROW(6, kk) HP_ROW(7, kk)                \
        HP_ROW(8, kk) HP_ROW(9, kk) HP_ROW(10, kk) HP_ROW(11, kk)              \
        HP_ROW(12, kk) HP_ROW(13, kk) HP_ROW(14, kk) HP_ROW(15, kk)            \
    }
#define HP_STORE(r, j)                                                         \
    if (R > r)                                                                 \
        _mm512_mask_storeu_ps(a->y + (size_t)r * a->ldy + col, mask,           \
                              _mm512_add_ps(a##r##_##j, a->acc ? _mm512_add_ps(bv, _mm512_maskz_loadu_ps(mask, a->y + (size_t)r * a->ldy + col)) : bv));
#define HP_EPI(j)                                                              \
    if (B > j) {                                                               \
        int col = a->col + 16 * j;                                             \
        int lo = a->n0 - col > 0 ? a->n0 - col : 0;                            \
        int hi = a->n1 - col < 16 ? a->n1 - col : 16;                          \
        if (hi > lo) {                                                         \
            __mmask16 mask = (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1)); \
            __m512 bv = a->b ? _mm512_maskz_loadu_ps(mask, a->b + col) : z;    \
            HP_STORE(0, j) HP_STORE(1, j) HP_STORE(2, j) HP_STORE(3, j)        \
            HP_STORE(4, j) HP_STORE(5, j) HP_STORE(6, j) HP_STORE(7, j)        \
            HP_STORE(8, j) HP_STORE(9, j) HP_STORE(10, j) HP_STORE(11, j)      \
            HP_STORE(12, j) HP_STORE(13, j) HP_STORE(14, j) HP_STORE(15, j)    \
        }                                                                      \
    }

HP_TARGET static inline __attribute__((always_inline)) void hp_tile(const int R, const int B,
                                                                    const int BF,
                                                                    const hp_tile_args *a) {
    const __m512 z = _mm512_setzero_ps();
    HP_DECL(0) HP_DECL(1) HP_DECL(2) HP_DECL(3) HP_DECL(4) HP_DECL(5) HP_DECL(6) HP_DECL(7)
    HP_DECL(8) HP_DECL(9) HP_DECL(10) HP_DECL(11) HP_DECL(12) HP_DECL(13) HP_DECL(14) HP_DECL(15)
    const float *xt = a->xt;
    const uint16_t *w = a->wp;
    size_t ps = a->ps, pf = a->pf;
    int K = a->K, k = 0;
    for (; k + 2 <= K; k += 2) {   /* 2 k = 64 bytes per panel: one prefetch each */
        const uint16_t *wk = w + (size_t)k * 16;
        _mm_prefetch((const char *)(wk + pf), _MM_HINT_T1);
        if (B > 1) _mm_prefetch((const char *)(wk + pf + ps), _MM_HINT_T1);
        if (B > 2) _mm_prefetch((const char *)(wk + pf + 2 * ps), _MM_HINT_T1);
        if (B > 3) _mm_prefetch((const char *)(wk + pf + 3 * ps), _MM_HINT_T1);
        HP_STEP(k, wk, 0)
        HP_STEP(k + 1, wk, 1)
    }
    if (k < K) {
        const uint16_t *wk = w + (size_t)k * 16;
        HP_STEP(k, wk, 0)
    }
    HP_EPI(0) HP_EPI(1) HP_EPI(2) HP_EPI(3)
}

typedef void (*hp_tile_fn)(const hp_tile_args *);
#define HP_DEF(R, B)                                                                           \
    HP_TARGET static void hp_tile_##R##_##B##_h(const hp_tile_args *a) { hp_tile(R, B, 0, a); } \
    HP_TARGET static void hp_tile_##R##_##B##_b(const hp_tile_args *a) { hp_tile(R, B, 1, a); }
#define HP_DEF4(R) HP_DEF(R, 1) HP_DEF(R, 2) HP_DEF(R, 3) HP_DEF(R, 4)
#define HP_DEF3(R) HP_DEF(R, 1) HP_DEF(R, 2) HP_DEF(R, 3)
#define HP_DEF2(R) HP_DEF(R, 1) HP_DEF(R, 2)
#define HP_DEF1(R) HP_DEF(R, 1)
HP_DEF4(1) HP_DEF4(2) HP_DEF4(3) HP_DEF4(4) HP_DEF4(5) HP_DEF4(6)
HP_DEF3(7) HP_DEF3(8)
HP_DEF2(9) HP_DEF2(10) HP_DEF2(11) HP_DEF2(12)
HP_DEF1(13) HP_DEF1(14) HP_DEF1(15) HP_DEF1(16)

#define HP_E(R, B, T) hp_tile_##R##_##B##_##T
#define HP_T4(R, T) {HP_E(R, 1, T), HP_E(R, 2, T), HP_E(R, 3, T), HP_E(R, 4, T)}
#define HP_T3(R, T) {HP_E(R, 1, T), HP_E(R, 2, T), HP_E(R, 3, T), NULL}
#define HP_T2(R, T) {HP_E(R, 1, T), HP_E(R, 2, T), NULL, NULL}
#define HP_T1(R, T) {HP_E(R, 1, T), NULL, NULL, NULL}
#define HP_TABLE(T)                                                                           \
    {HP_T4(1, T), HP_T4(2, T), HP_T4(3, T), HP_T4(4, T), HP_T4(5, T), HP_T4(6, T),              \
     HP_T3(7, T), HP_T3(8, T), HP_T2(9, T), HP_T2(10, T), HP_T2(11, T), HP_T2(12, T),          \
     HP_T1(13, T), HP_T1(14, T), HP_T1(15, T), HP_T1(16, T)}
/* [bf16][R - 1][B - 1] */
static const hp_tile_fn hp_tiles[2][16][4] = {HP_TABLE(h), HP_TABLE(b)};

static void matmul_hp_avx512(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                             int bf16, const float *b, int M, int n0, int nn, int K, float *xs) {
    size_t ps = 16 * kpad(K);
    int p0 = n0 / 16, p1 = (n0 + nn + 15) / 16;
    int chunks = (M + HP_ROWS - 1) / HP_ROWS;
    int blk = p1 - p0;   /* one chunk: one sweep, the weights are read once anyway */
    if (chunks > 1) {
        blk = (int)(HP_BLOCK_BYTES / (ps * sizeof(uint16_t))) / 12 * 12;   /* 12: every bmax divides it */
        if (blk < 12) blk = 12;
    }
    /* several column blocks: x k-major once, not once a block */
    const float *xa = xs && chunks > 1 && p1 - p0 > blk ? k_hp_transpose_chunks(xs, x, ldx, M, chunks, K)
                                                         : NULL;
    float xt[HP_XT_FLOATS] __attribute__((aligned(64)));
    hp_tile_args a;
    memset(&a, 0, sizeof a);
    a.ldy = ldy, a.ps = ps, a.n0 = n0, a.n1 = n0 + nn;
    for (int pb = p0; pb < p1; pb += blk) {
        int pe = p1 - pb < blk ? p1 : pb + blk;
        for (int ch = 0, m0 = 0; ch < chunks; ch++) {
            int R = M / chunks + (ch < M % chunks), bm = hp_bmax(R);
            int kb = HP_KB;   /* the same for every R: xt holds R x kb */
            a.y = y + (size_t)m0 * ldy;
            a.pf = ch == 0 ? (size_t)bm * ps : 256;   /* from memory: the next tile; from L2: closer */
            for (int k0 = 0; k0 < K; k0 += kb) {
                int kk = K - k0 < kb ? K - k0 : kb;
                if (R == 1) a.xt = x + (size_t)m0 * ldx + k0;   /* one row: already k-major */
                else if (xa) a.xt = xa + (size_t)m0 * K + (size_t)k0 * R;
                else k_hp_transpose(xt, x + (size_t)m0 * ldx, ldx, R, k0, kk), a.xt = xt;
                a.K = kk, a.acc = k0 > 0, a.b = k0 + kk == K ? b : NULL;
                for (int pn = pb; pn < pe; pn += bm) {
                    int B = pe - pn < bm ? pe - pn : bm;
                    a.wp = wp + (size_t)pn * ps + (size_t)k0 * 16, a.col = pn * 16;
                    hp_tiles[bf16 != 0][R - 1][B - 1](&a);
                }
            }
            m0 += R;
        }
    }
}
#endif

/* ---- dispatch ---- */

static int hp_args_ok(const uint16_t *wp, int M, int n0, int nn, int N, int K) {
    return wp && N >= 1 && K >= 1 && M >= 0 && n0 >= 0 && nn >= 0 && n0 <= N && nn <= N - n0;
}

/* ---- the vector level's driver (tiles in matmul_hp_avx2.c, matmul_hp_neon.c) ---- */

size_t k_hp_xs_floats(int M, int K) { return M > 1 && K > 0 ? (size_t)M * (size_t)K : 0; }

int k_matmul_hp_isa(int isa, float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                    int bf16, const float *b, int M, int n0, int nn, int N, int K) {
    return k_matmul_hp_xs_isa(isa, y, ldy, x, ldx, wp, bf16, b, M, n0, nn, N, K, NULL);
}

int k_matmul_hp_xs_isa(int isa, float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                       int bf16, const float *b, int M, int n0, int nn, int N, int K, float *xs) {
    isa = k_isa_at(isa);
    if (!hp_args_ok(wp, M, n0, nn, N, K)) return -1;
    int used = 0;
#ifdef K_X86
    if (isa >= 2 && HP_HAS_AVX512) used = 2;
#endif
#ifdef K_HAVE_VEC
    if (!used && isa >= 1) used = 1;   /* k_isa: AVX2 + FMA + F16C, or NEON */
#endif
    if (M == 0 || nn == 0) return used;
#ifdef K_X86
    if (used == 2) {
        matmul_hp_avx512(y, ldy, x, ldx, wp, bf16, b, M, n0, nn, K, xs);
        return 2;
    }
#endif
#ifdef K_HAVE_VEC
    if (used == 1) {
        K_VEC(k_matmul_hp)(y, ldy, x, ldx, wp, bf16, b, M, n0, nn, K, xs);
        return 1;
    }
#endif
    matmul_hp_c(y, ldy, x, ldx, wp, bf16, b, M, n0, nn, K);
    return 0;
}

int k_matmul_hp_lowp(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                     const float *b, int M, int n0, int nn, int N, int K) {
    if (k_matmul_hp_amx_has())
        return k_matmul_hp_amx(y, ldy, x, ldx, wp, b, M, n0, nn, N, K);
    return k_matmul_hp_bfdot(y, ldy, x, ldx, wp, b, M, n0, nn, N, K);
}

int k_hp_fast(void) {
#ifdef K_HAVE_VEC
    return k_isa() >= K_ISA_VEC;
#else
    return 0;
#endif
}

int k_matmul_hp(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                const float *b, int M, int n0, int nn, int N, int K) {
    return k_matmul_hp_isa(2, y, ldy, x, ldx, wp, bf16, b, M, n0, nn, N, K);
}

int k_matmul_hp_xs(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                   const float *b, int M, int n0, int nn, int N, int K, float *xs) {
    return k_matmul_hp_xs_isa(2, y, ldy, x, ldx, wp, bf16, b, M, n0, nn, N, K, xs);
}

/* ---- the scalar twin ---- */

void k_matmul_hp_ref(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                     const float *b, int M, int n0, int nn, int N, int K) {
    if (!hp_args_ok(wp, M, n0, nn, N, K)) return;
    for (int i = 0; i < M; i++)
        for (int n = n0; n < n0 + nn; n++) {
            double acc = b ? b[n] : 0.0;
            for (int k = 0; k < K; k++)
                acc += (double)x[(size_t)i * ldx + k] * k_h2f(wp[k_hp_index(bf16, n, k, K)], bf16);
            y[(size_t)i * ldy + n] = (float)acc;
        }
}
