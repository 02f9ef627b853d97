/* matmul_hp_avx2.c - k_matmul_hp's AVX2 + FMA + F16C version: the panel
 * layout of matmul_hp.h read by 8-lane vectors.
 *
 * A panel's 16 outputs are two ymm halves. A tile is R activation rows
 * (1..6) x B panels (1 or 2; 2 only for R <= 3): 2RB accumulators (at most
 * 12) + 2B weight vectors + one broadcast fit the 16 registers. Per k each
 * weight half is expanded once (f16: vcvtph2ps of 16 bytes; bf16: one shift
 * or one and of the 32-bit word pairs) and meets a broadcast of x[r][k] for
 * every row in one FMA, k in order. As in the AVX-512 version, x is copied
 * k-major per block of HP2_KB = 512 k (the same blocks for every R, later
 * blocks adding to y), so each row's bits do not depend on how many rows
 * come with it. Few rows: one sweep, each panel read once, the next tile's
 * panels prefetched at the same offsets; more rows: column blocks of ~128 KB
 * of weights, read from memory by the first chunk and from L2 by the others. */
#include "kern/matmul_hp.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#define V2 __attribute__((target("avx2,fma,f16c")))
#define HP2_ROWS 6
#define HP2_KB 512
#define HP2_BLOCK_BYTES (128 << 10)

typedef struct {
    float *y;               /* row 0 of the chunk, absolute column 0 */
    int ldy;
    const float *xt;        /* x for this k-block, k-major: xt[k * R + r] */
    const uint16_t *wp;     /* first panel of the tile, at the k-block */
    size_t ps;              /* halves per panel */
    size_t pf;              /* prefetch distance in halves */
    int K;                  /* k in this block */
    int acc;                /* add to y (a later k-block) */
    const float *b;         /* the bias with the last k-block, else NULL */
    int col;                /* absolute column of the first panel */
    int n0, n1;             /* store columns [n0, n1) only */
} hp2_args;

/* Half h (outputs 8h .. 8h+7) of a panel's weights at k (p points at the
 * k-pair for bf16, at k for f16). */
V2 static inline __attribute__((always_inline)) __m256 hp2_ld(const uint16_t *p, const int BF,
                                                              const int odd, const int h) {
    if (BF) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + 16 * h));
        if (odd) return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    }
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16 * odd + 8 * h)));
}

#define HP2_DECL(r) __m256 c##r##0 = z, c##r##1 = z, c##r##2 = z, c##r##3 = z;
#define HP2_ROW(r, kk)                                                         \
    if (R > r) {                                                               \
        __m256 xb = _mm256_broadcast_ss(xt + (size_t)(kk) * R + r);            \
        c##r##0 = _mm256_fmadd_ps(xb, w0, c##r##0);                            \
        c##r##1 = _mm256_fmadd_ps(xb, w1, c##r##1);                            \
        if (B > 1) c##r##2 = _mm256_fmadd_ps(xb, w2, c##r##2);                 \
        if (B > 1) c##r##3 = _mm256_fmadd_ps(xb, w3, c##r##3);                 \
    }
#define HP2_STEP(kk, wk, odd)                                                  \
    {                                                                          \
        __m256 w0 = hp2_ld(wk, BF, odd, 0), w1 = hp2_ld(wk, BF, odd, 1), w2 = z, w3 = z; \
        if (B > 1) w2 = hp2_ld(wk + ps, BF, odd, 0), w3 = hp2_ld(wk + ps, BF, odd, 1); \
        HP2_ROW(0, kk) HP2_ROW(1, kk) HP2_ROW(2, kk)                           \
        HP2_ROW(3, kk) HP2_ROW(4, kk) HP2_ROW(5, kk)                           \
    }
#define HP2_STORE(r, q)                                                        \
    if (R > r) {                                                               \
        float *yr = a->y + (size_t)r * a->ldy + col;                           \
        __m256 add = a->acc ? _mm256_add_ps(bv, _mm256_maskload_ps(yr, mask)) : bv; \
        _mm256_maskstore_ps(yr, mask, _mm256_add_ps(c##r##q, add));            \
    }
/* accumulators c<r><q>: q = 2 * panel + half */
#define HP2_EPI(q)                                                             \
    {                                                                          \
        int col = a->col + 8 * (q);                                            \
        __m256i lane = _mm256_add_epi32(_mm256_set1_epi32(col), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); \
        __m256i mask = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(a->n1), lane), \
                                        _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(a->n0 - 1))); \
        if (!_mm256_testz_si256(mask, mask)) {                                 \
            __m256 bv = a->b ? _mm256_maskload_ps(a->b + col, mask) : z;       \
            HP2_STORE(0, q) HP2_STORE(1, q) HP2_STORE(2, q)                    \
            HP2_STORE(3, q) HP2_STORE(4, q) HP2_STORE(5, q)                    \
        }                                                                      \
    }

V2 static inline __attribute__((always_inline)) void hp2_tile(const int R, const int B, const int BF,
                                                              const hp2_args *a) {
    const __m256 z = _mm256_setzero_ps();
    HP2_DECL(0) HP2_DECL(1) HP2_DECL(2) HP2_DECL(3) HP2_DECL(4) HP2_DECL(5)
    const float *xt = a->xt;
    const uint16_t *w = a->wp;
    size_t ps = a->ps, pf = a->pf;
    int K = a->K, k = 0;
    for (; k + 2 <= K; k += 2) {   /* 2 k = 64 bytes per panel: one prefetch each */
        const uint16_t *wk = w + (size_t)k * 16;
        _mm_prefetch((const char *)(wk + pf), _MM_HINT_T0);
        if (B > 1) _mm_prefetch((const char *)(wk + pf + ps), _MM_HINT_T0);
        HP2_STEP(k, wk, 0)
        HP2_STEP(k + 1, wk, 1)
    }
    if (k < K) {
        const uint16_t *wk = w + (size_t)k * 16;
        HP2_STEP(k, wk, 0)
    }
    HP2_EPI(0) HP2_EPI(1)
    if (B > 1) {
        HP2_EPI(2) HP2_EPI(3)
    }
}

typedef void (*hp2_fn)(const hp2_args *);
#define HP2_DEF(R, B)                                                                         \
    V2 static void hp2_##R##_##B##_h(const hp2_args *a) { hp2_tile(R, B, 0, a); }             \
    V2 static void hp2_##R##_##B##_b(const hp2_args *a) { hp2_tile(R, B, 1, a); }
HP2_DEF(1, 1) HP2_DEF(1, 2) HP2_DEF(2, 1) HP2_DEF(2, 2) HP2_DEF(3, 1) HP2_DEF(3, 2)
HP2_DEF(4, 1) HP2_DEF(5, 1) HP2_DEF(6, 1)
#define HP2_T(T)                                                                              \
    {{hp2_1_1_##T, hp2_1_2_##T}, {hp2_2_1_##T, hp2_2_2_##T}, {hp2_3_1_##T, hp2_3_2_##T},       \
     {hp2_4_1_##T, NULL}, {hp2_5_1_##T, NULL}, {hp2_6_1_##T, NULL}}
static const hp2_fn hp2_tiles[2][HP2_ROWS][2] = {HP2_T(h), HP2_T(b)};

static void hp2_transpose(float *xt, const float *x, int ldx, int R, int k0, int kk) {
    for (int r = 0; r < R; r++) {
        const float *xr = x + (size_t)r * ldx + k0;
        for (int k = 0; k < kk; k++) xt[(size_t)k * R + r] = xr[k];
    }
}

void k_matmul_hp_avx2(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                      const float *b, int M, int n0, int nn, int K) {
    size_t ps = 16 * (((size_t)K + 31) & ~(size_t)31);
    int p0 = n0 / 16, p1 = (n0 + nn + 15) / 16;
    int chunks = (M + HP2_ROWS - 1) / HP2_ROWS;
    int blk = p1 - p0;   /* one chunk: one sweep */
    if (chunks > 1) {
        blk = (int)(HP2_BLOCK_BYTES / (ps * sizeof(uint16_t))) & ~1;
        if (blk < 2) blk = 2;
    }
    float xt[HP2_ROWS * HP2_KB] __attribute__((aligned(32)));
    hp2_args a;
    memset(&a, 0, sizeof a);
    a.ldy = ldy, a.ps = ps, a.n0 = n0, a.n1 = n0 + nn;
    for (int pb = p0; pb < p1; pb += blk) {
        int pe = p1 - pb < blk ? p1 : pb + blk;
        for (int ch = 0, m0 = 0; ch < chunks; ch++) {
            int R = M / chunks + (ch < M % chunks), bm = R <= 3 ? 2 : 1;
            a.y = y + (size_t)m0 * ldy;
            a.pf = ch == 0 ? (size_t)bm * ps : 256;
            for (int k0 = 0; k0 < K; k0 += HP2_KB) {
                int kk = K - k0 < HP2_KB ? K - k0 : HP2_KB;
                if (R == 1) a.xt = x + (size_t)m0 * ldx + k0;
                else hp2_transpose(xt, x + (size_t)m0 * ldx, ldx, R, k0, kk), a.xt = xt;
                a.K = kk, a.acc = k0 > 0, a.b = k0 + kk == K ? b : NULL;
                for (int pn = pb; pn < pe; pn += bm) {
                    int B = pe - pn < bm ? pe - pn : bm;
                    a.wp = wp + (size_t)pn * ps + (size_t)k0 * 16, a.col = pn * 16;
                    hp2_tiles[bf16 != 0][R - 1][B - 1](&a);
                }
            }
            m0 += R;
        }
    }
}
#endif
