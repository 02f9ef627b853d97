/* matmul_hp_avx2.c - k_matmul_hp's AVX2 + FMA + F16C version: the panel
 * layout of matmul_hp.h read by 8-lane vectors.
 *
 * A panel's 16 outputs are two ymm halves. A tile is R activation rows
 * (1..6) x B panels (1 or 2; 2 only for R <= 3): 2RB accumulators (at most
 * 12) + 2B weight vectors + one broadcast fit the 16 registers. Per k each
 * weight half is expanded once (f16: vcvtph2ps of 16 bytes; bf16: one shift
 * or one and of the 32-bit word pairs) and meets a broadcast of x[r][k] for
 * every row in one FMA, k in order; k_hp_drive (matmul_hp_drive.c) runs the
 * tiles over k-blocks, columns and rows. Prefetches go into L2, as the
 * AVX-512 tiles' (prefetcht1; AMD EPYC Zen 4 under the AVX2 cap, [51866 x
 * 384] f16, of the read bandwidth on one thread: 1 row 85-87% -> 87-90%,
 * 5 rows 67-73% -> 76-83%; two threads 92-100% either way). */
#include "kern/matmul_hp.h"

#if defined(K_HAVE_VEC) && defined(__x86_64__)
#include <immintrin.h>


#define V2 __attribute__((target("avx2,fma,f16c")))

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
                                                              const k_hp_tile *a) {
    const __m256 z = _mm256_setzero_ps();
    HP2_DECL(0) HP2_DECL(1) HP2_DECL(2) HP2_DECL(3) HP2_DECL(4) HP2_DECL(5)
    const float *xt = a->xt;
    const uint16_t *w = a->wp;
    size_t ps = a->ps, pf = a->pf;
    int K = a->K, k = 0;
    for (; k + 2 <= K; k += 2) {   /* 2 k = 64 bytes per panel: one prefetch each */
        const uint16_t *wk = w + (size_t)k * 16;
        _mm_prefetch((const char *)(wk + pf), _MM_HINT_T1);
        if (B > 1) _mm_prefetch((const char *)(wk + pf + ps), _MM_HINT_T1);
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

#define HP2_DEF(R, B)                                                                         \
    V2 static void hp2_##R##_##B##_h(const k_hp_tile *a) { hp2_tile(R, B, 0, a); }            \
    V2 static void hp2_##R##_##B##_b(const k_hp_tile *a) { hp2_tile(R, B, 1, a); }
HP2_DEF(1, 1) HP2_DEF(1, 2) HP2_DEF(2, 1) HP2_DEF(2, 2) HP2_DEF(3, 1) HP2_DEF(3, 2)
HP2_DEF(4, 1) HP2_DEF(5, 1) HP2_DEF(6, 1)
#define HP2_T(T)                                                                              \
    {{hp2_1_1_##T, hp2_1_2_##T}, {hp2_2_1_##T, hp2_2_2_##T}, {hp2_3_1_##T, hp2_3_2_##T},       \
     {hp2_4_1_##T, NULL}, {hp2_5_1_##T, NULL}, {hp2_6_1_##T, NULL}}
static const k_hp_tile_fn hp2_tiles[2][K_HP_ROWS][2] = {HP2_T(h), HP2_T(b)};

void k_matmul_hp_avx2(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                      const float *b, int M, int n0, int nn, int K, float *xs) {
    k_hp_drive(hp2_tiles[bf16 != 0], 3, y, ldy, x, ldx, wp, b, M, n0, nn, K, xs);
}
#endif
