/* gemm_bf16.c - k_gemm's bf16 micro-kernel (AVX512_BF16): the fp32 one's
 * 14 x 32 tile with vdpbf16ps, two k per instruction: per pair of k, two
 * w vectors (16 columns x 2 halves each) and 14 broadcasts of one 32-bit
 * pair of x. Packing and GELU: gemm_f32.c.
 */
#include "kern/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#include "kern/x86.h"

#define AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)


AVX512BF16 static inline __m512 dp(__m512 acc, __m512i x, __m512i w) {
    return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
}

AVX512BF16 void gemm_kernel_bf16_avx512(const void *xp, const void *wp, int kk, float *y,
                                        size_t ldy, int mr, int nr, const float *b, int first,
                                        int gelu) {
    const uint16_t *xv = xp;
    const __m512i *wv = wp;
#define DECL(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps();
    ROWS(DECL)
#undef DECL
    for (int i = 0; i < mr; i++) {
        _mm_prefetch((const char *)(y + (size_t)i * ldy), _MM_HINT_T1);
        _mm_prefetch((const char *)(y + (size_t)i * ldy + nr - 1), _MM_HINT_T1);
    }
    for (int k = 0; k < kk; k++) {
        __m512i w0 = _mm512_load_si512(wv), w1 = _mm512_load_si512(wv + 1);
#define DP(i)                                                     \
    {                                                             \
        int32_t p;                                                \
        memcpy(&p, xv + (i) * GEMM_KC_B, 4);                      \
        __m512i xb = _mm512_set1_epi32(p);                        \
        c##i##a = dp(c##i##a, xb, w0);                            \
        c##i##b = dp(c##i##b, xb, w1);                            \
    }
        ROWS(DP)
#undef DP
        xv += 2;
        wv += 2;
    }
    K_GEMM_TILE_STORE(ROWS);
    if (gelu) gemm_gelu_tile_avx512(y, ldy, mr, nr);
}

#endif
