/* q8_mix_bench.c - what an int8 multiply-add costs in AVX2 without VNNI,
 * instruction mixes alone, against f32 FMA on the same core: loops over
 * registers and L1 (nothing from memory), one thread, medians of -r runs.
 *
 *   build/bench/q8_mix_bench [-r REPEATS]
 *
 *   sign   kern/q8_avx2.c's tile: 4 rows x 16 outputs a group of 4 k;
 *          vpsignb moves the weights' signs onto the activations,
 *          vpmaddubsw pairs |w| x (sign(w) x) into int16 (never saturated),
 *          vpmaddwd by ones widens into int32: exact sums;
 *   i16    the activations as int16 pairs, the weights widened per group
 *          by vpmovsxbw and shared by 6 rows, vpmaddwd: exact sums, no sign
 *          moves, half the products per instruction;
 *   nib    biased activations (0..255) split into 4-bit halves, each
 *          vpmaddubsw pair at most 2 x 15 x 127 so int16 sums hold 8
 *          groups exactly, then one vpmaddwd each (x16 for the high half);
 *          2 rows (the registers allow no more);
 *   f32    6 rows x 16 outputs of vfmadd231ps.
 *
 * Multiply-adds per second (GMAC/s) and each mix against f32. Which of the
 * exact mixes is fastest is the machine's pipes' answer, not the
 * instruction count's: on an AMD EPYC Zen 3 the sign mix is 1.33x f32,
 * i16 0.98x and nib 0.89x (docs/BENCHMARKS.md). */
#include "stats.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define V2 __attribute__((target("avx2,fma"), noinline))

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

__attribute__((target("avx2,fma"))) static int32_t hsum(__m256i s) { return _mm256_extract_epi32(s, 0) + _mm256_extract_epi32(s, 5); }

/* 256 multiply-adds an iteration. */
V2 static int32_t mix_sign(const int8_t *x, const int8_t *w, long iters) {
    const __m256i z = _mm256_setzero_si256(), ones = _mm256_set1_epi16(1);
    __m256i c[4][2] = {{z, z}, {z, z}, {z, z}, {z, z}};
    for (long g = 0; g < iters; g++) {
        const int8_t *wp = w + (g & 63) * 64;
        __m256i w0 = _mm256_load_si256((const __m256i *)wp), w1 = _mm256_load_si256((const __m256i *)(wp + 32));
        __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
#pragma GCC unroll 8
        for (int r = 0; r < 4; r++) {
            int32_t xv;
            memcpy(&xv, x + r * 256 + (g & 63) * 4, 4);
            __m256i xb = _mm256_set1_epi32(xv);
            c[r][0] = _mm256_add_epi32(c[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(xb, w0)), ones));
            c[r][1] = _mm256_add_epi32(c[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(a1, _mm256_sign_epi8(xb, w1)), ones));
        }
    }
    __m256i s = z;
    for (int r = 0; r < 4; r++) s = _mm256_add_epi32(s, _mm256_add_epi32(c[r][0], c[r][1]));
    return hsum(s);
}

/* 192 multiply-adds an iteration: 6 rows x 8 outputs x 4 k. */
V2 static int32_t mix_i16(const int16_t *x, const int8_t *w, long iters) {
    const __m256i z = _mm256_setzero_si256();
    __m256i c[6][2] = {{z, z}, {z, z}, {z, z}, {z, z}, {z, z}, {z, z}};
    for (long g = 0; g < iters; g++) {
        const int8_t *wp = w + (g & 63) * 64;
        __m256i w0 = _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i *)wp));
        __m256i w1 = _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i *)(wp + 16)));
#pragma GCC unroll 8
        for (int r = 0; r < 6; r++) {
            long long xv;
            memcpy(&xv, x + r * 256 + (g & 63) * 4, 8);
            __m256i xb = _mm256_set1_epi64x(xv);
            c[r][0] = _mm256_add_epi32(c[r][0], _mm256_madd_epi16(w0, xb));
            c[r][1] = _mm256_add_epi32(c[r][1], _mm256_madd_epi16(w1, xb));
        }
    }
    __m256i s = z;
    for (int r = 0; r < 6; r++) s = _mm256_add_epi32(s, _mm256_add_epi32(c[r][0], c[r][1]));
    return hsum(s);
}

/* 1024 multiply-adds an iteration: 8 groups x 2 rows x 16 outputs x 4 k. */
V2 static int32_t mix_nib(const uint8_t *x, const int8_t *w, long iters) {
    const __m256i z = _mm256_setzero_si256(), ones = _mm256_set1_epi16(1), sixteen = _mm256_set1_epi16(16);
    __m256i d[2][2] = {{z, z}, {z, z}};
    for (long it = 0; it < iters; it++) {
        __m256i h[2][2] = {{z, z}, {z, z}}, l[2][2] = {{z, z}, {z, z}};
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            const int8_t *wp = w + ((it * 8 + g) & 63) * 64;
            __m256i w0 = _mm256_load_si256((const __m256i *)wp), w1 = _mm256_load_si256((const __m256i *)(wp + 32));
#pragma GCC unroll 8
            for (int r = 0; r < 2; r++) {
                int32_t xh, xl;
                memcpy(&xh, x + r * 512 + g * 4, 4);
                memcpy(&xl, x + r * 512 + 256 + g * 4, 4);
                __m256i bh = _mm256_set1_epi32(xh), bl = _mm256_set1_epi32(xl);
                h[r][0] = _mm256_add_epi16(h[r][0], _mm256_maddubs_epi16(bh, w0));
                h[r][1] = _mm256_add_epi16(h[r][1], _mm256_maddubs_epi16(bh, w1));
                l[r][0] = _mm256_add_epi16(l[r][0], _mm256_maddubs_epi16(bl, w0));
                l[r][1] = _mm256_add_epi16(l[r][1], _mm256_maddubs_epi16(bl, w1));
            }
        }
        for (int r = 0; r < 2; r++)
            for (int q = 0; q < 2; q++)
                d[r][q] = _mm256_add_epi32(d[r][q], _mm256_add_epi32(_mm256_madd_epi16(h[r][q], sixteen),
                                                                     _mm256_madd_epi16(l[r][q], ones)));
    }
    return hsum(_mm256_add_epi32(_mm256_add_epi32(d[0][0], d[0][1]), _mm256_add_epi32(d[1][0], d[1][1])));
}

/* 96 multiply-adds an iteration: 6 rows x 16 outputs (12 named
 * accumulators: an array of them was kept in memory by the compiler). */
#define F32_ROW(r)                                                        \
    {                                                                     \
        __m256 xb = _mm256_broadcast_ss(x + (r) * 64 + (g & 63));         \
        c##r##0 = _mm256_fmadd_ps(w0, xb, c##r##0);                       \
        c##r##1 = _mm256_fmadd_ps(w1, xb, c##r##1);                       \
    }
V2 static float mix_f32(const float *x, const float *w, long iters) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
           c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (long g = 0; g < iters; g++) {
        const float *wp = w + (g & 63) * 16;
        __m256 w0 = _mm256_load_ps(wp), w1 = _mm256_load_ps(wp + 8);
        F32_ROW(0) F32_ROW(1) F32_ROW(2) F32_ROW(3) F32_ROW(4) F32_ROW(5)
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c00, c01), _mm256_add_ps(c10, c11)),
                             _mm256_add_ps(_mm256_add_ps(c20, c21), _mm256_add_ps(c30, c31)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c40, c41), _mm256_add_ps(c50, c51)));
    return s[0] + s[5];
}

int main(int argc, char **argv) {
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: q8_mix_bench [-r REPEATS]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 101) {
        fprintf(stderr, "q8_mix_bench: -r must be 1..101\n");
        return 2;
    }
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        printf("q8_mix_bench: this CPU has no AVX2 + FMA\n");
        return 0;
    }
    static int8_t xb[4096] __attribute__((aligned(64))), wb[8192] __attribute__((aligned(64)));
    static int16_t xs[4096] __attribute__((aligned(64)));
    static float wf[2048] __attribute__((aligned(64))), xf[1024] __attribute__((aligned(64)));
    for (int i = 0; i < 4096; i++) xb[i] = (int8_t)(i % 7 - 3), xs[i] = (int16_t)(i % 5 - 2);
    for (int i = 0; i < 8192; i++) wb[i] = (int8_t)(i % 11 - 5);
    for (int i = 0; i < 2048; i++) wf[i] = 1e-6f * (float)(i % 3);
    for (int i = 0; i < 1024; i++) xf[i] = 1e-3f;
    const double macs = 2e8;   /* a run */
    const char *names[4] = {"sign (q8_avx2.c's tile)", "i16 (vpmaddwd pairs)", "nib (4-bit halves)", "f32 FMA"};
    double rate[4][101];
    volatile int32_t sink = 0;
    volatile float fsink = 0;
    for (int r = 0; r < reps; r++) {
        double t = now();
        sink += mix_sign(xb, wb, (long)(macs / 256));
        rate[0][r] = macs / (now() - t) * 1e-9;
        t = now();
        sink += mix_i16(xs, wb, (long)(macs / 192));
        rate[1][r] = macs / (now() - t) * 1e-9;
        t = now();
        sink += mix_nib((const uint8_t *)xb, wb, (long)(macs / 1024));
        rate[2][r] = macs / (now() - t) * 1e-9;
        t = now();
        fsink += mix_f32(xf, wf, (long)(macs / 96));
        rate[3][r] = macs / (now() - t) * 1e-9;
    }
    double med[4];
    for (int k = 0; k < 4; k++) med[k] = bench_median(rate[k], reps);
    printf("one thread, registers and L1, medians of %d\n", reps);
    for (int k = 0; k < 4; k++) printf("  %-26s %7.2f GMAC/s  %.2fx f32\n", names[k], med[k], med[k] / med[3]);
    (void)sink;
    (void)fsink;
    return 0;
}
#else
int main(void) {
    printf("q8_mix_bench: AVX2 mixes; this build is not x86-64\n");
    return 0;
}
#endif
