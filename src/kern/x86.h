/* x86.h - what the AVX-512 and AMX kernel files share (private to
 * src/kern; include only inside an x86-64 GCC/Clang block, after
 * <immintrin.h>): the target attributes, lane masks, the f32 -> bf16
 * rounding in registers, the 16 x 16 transpose, the 14-row tile epilogue
 * of the AVX-512 GEMM micro-kernels, and the AMX tile configuration. */
#ifndef ED_KERN_X86_H
#define ED_KERN_X86_H

#include <stdint.h>
#include <string.h>

#define K_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define K_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

/* Lanes [0, n) of 16 (n clamped to 0..16). */
static inline __mmask16 k_mask16(int n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* f32 -> bf16 to nearest even, in the high half of each lane, in integers
 * (k_f32_to_bf16's bits; no DAZ/FTZ). _finite: for finite inputs only;
 * the other keeps a NaN a quiet NaN. */
K_AVX512 static inline __m512i k_rne_hi_finite(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    return _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
}

K_AVX512 static inline __m512i k_rne_hi(__m512 v) {
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(k_rne_hi_finite(v), nan, _mm512_castps_si512(v),
                                _mm512_set1_epi32(0x00400000));
}

/* 32 floats (a: elements 0..15, b: 16..31) -> 32 bf16 halves in order. */
K_AVX512 static inline __m512i k_to_bf16x32(__m512 a, __m512 b) {
    const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37,
                                         35, 33, 31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7,
                                         5, 3, 1);
    return _mm512_permutex2var_epi16(k_rne_hi(a), odd, k_rne_hi(b));
}

/* In-register 16 x 16 transpose of 32-bit elements: r[i] lane j <-> r[j]
 * lane i (floats; integer rows go through casts, which cost nothing). */
K_AVX512 static inline __attribute__((always_inline)) void k_tr16(__m512 r[16]) {
    __m512 a[16], b[16];
    for (int i = 0; i < 16; i += 2) {
        a[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        a[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {   /* b[i + c], lane L: rows i..i+3 of column 4L + c */
        b[i] = _mm512_shuffle_ps(a[i], a[i + 2], 0x44);
        b[i + 1] = _mm512_shuffle_ps(a[i], a[i + 2], 0xee);
        b[i + 2] = _mm512_shuffle_ps(a[i + 1], a[i + 3], 0x44);
        b[i + 3] = _mm512_shuffle_ps(a[i + 1], a[i + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) {
        __m512 e0 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0x88);
        __m512 e1 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0xdd);
        __m512 e2 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0x88);
        __m512 e3 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0xdd);
        r[c] = _mm512_shuffle_f32x4(e0, e2, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(e1, e3, 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(e0, e2, 0xdd);
        r[12 + c] = _mm512_shuffle_f32x4(e1, e3, 0xdd);
    }
}

/* The 14 x 32 micro-kernels' store (gemm_f32.c, gemm_bf16.c): accumulators
 * c<i>a, c<i>b of rows i < mr into y (ldy), nr columns, + the bias b (NULL:
 * none) + y's old values unless first. ROWS(X) names the rows. */
#define K_GEMM_TILE_STORE(ROWS)                                                                 \
    do {                                                                                        \
        __mmask16 m0 = k_mask16(nr), m1 = k_mask16(nr - 16);                                    \
        __m512 b0 = _mm512_setzero_ps(), b1 = b0;                                               \
        if (b) b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);       \
        ROWS(K_GEMM_STORE_ROW)                                                                  \
    } while (0)
#define K_GEMM_STORE_ROW(i)                                                                     \
    if ((i) < mr) {                                                                             \
        float *yr = y + (size_t)(i) * ldy;                                                      \
        __m512 s0 = first ? b0 : _mm512_add_ps(b0, _mm512_maskz_loadu_ps(m0, yr));              \
        __m512 s1 = first ? b1 : _mm512_add_ps(b1, _mm512_maskz_loadu_ps(m1, yr + 16));         \
        _mm512_mask_storeu_ps(yr, m0, _mm512_add_ps(c##i##a, s0));                              \
        _mm512_mask_storeu_ps(yr + 16, m1, _mm512_add_ps(c##i##b, s1));                         \
    }

/* GCC's tile intrinsics are asm statements without memory operands: order
 * them against plain loads and stores of p's memory by hand. */
#define K_MEMBAR(p) __asm__ volatile("" : : "r"(p) : "memory")

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} k_tilecfg;

/* Configures all 8 tiles as 16 rows x 64 bytes on this thread (callers
 * release them with _tile_release() before returning). */
K_AMX static inline void k_amx_tiles_16x64(void) {
    k_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    K_MEMBAR(&cfg);
    _tile_loadconfig(&cfg);
}

#endif
