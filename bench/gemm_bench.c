/* gemm_bench.c - k_gemm (fp32 and bf16) against BLIS and against this
 * machine's register peak, on the Whisper encoder's shapes (or one shape: --shape NxK).
 *
 *   build/bench/gemm_bench [-d D] [-m ROWS] [-t MAXTHREADS] [-r REPEATS] [-s rows|cols] [--best]
 *                          [--packed] [--avx2] [--shape NxK]   (one product y[M,N] = x[M,K] . w[N,K]^T instead)
 *
 * --packed: k_gemm without its few-row fp32 path (gemm_ws.c), to compare the two;
 * --avx2: every run under the AVX2 limit (an AVX2 machine's kernels on this one; the
 * BLIS column then holds k_matmul_ex's AVX2 few-row kernel up to 16 rows).
 *
 * For 1 .. MAXTHREADS (default 2) threads of an ed_pool:
 *   peak: independent vfmadd231ps (and vdpbf16ps, and AMX tdpbf16ps)
 *         chains that never touch memory, GFLOP/s (flops: 2 per
 *         multiply-add, 4 per bf16 pair; a tdpbf16ps on 16 x 16 f32 tiles
 *         is 16 * 16 * 32 * 2 = 16384);
 *   BLIS: k_matmul_ex (cblas_sgemm) on each thread's slice of rows;
 *   k_gemm fp32, bf16 on AVX512_BF16 (k_gemm_isa 2: vdpbf16ps) and bf16 on
 *         AMX (k_gemm_isa 3, where the CPU has it and Linux grants it):
 *         each thread its slice of rows (-s cols: of columns) and its own
 *         scratch;
 * medians of REPEATS runs (--best: the fastest), and the fraction of the
 * matching peak, measured between the runs (the clock of a shared machine
 * moves with its neighbours' load). AMX: against the tdpbf16ps peak of the
 * long runs before the table, not between the runs: a run of the peak (all
 * tile work, no memory) leaves this machine's clock low for the next
 * milliseconds and roughly halved the k_gemm that followed. Shapes, for d = D (384: tiny): QKV
 * [M, 3d, d], out [M, d, d], fc1 [M, 4d, d] (+GELU timed separately), fc2
 * [M, d, 4d], conv2 [M, d, 3d]. Before timing, every path is checked
 * against k_gemm_ref on sampled rows.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include "encdec.h"
#include "stats.h"
#include "base/pool.h"
#include "kern/gemm.h"
#include "kern/kern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BENCH_X86 1
#endif

/* ---- register peaks (measurement only, not library code) ---- */

#define PEAK_ITERS 20000000L
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
                  X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19)
#define PEAK_CHAINS 20

#ifdef BENCH_X86
/* PEAK_CHAINS independent multiply-add chains of 16 lanes; returns a sum so
 * that nothing is optimised away. Flops: iters * PEAK_CHAINS * 32. */
static volatile float g_one = 1.0f;   /* opaque inputs: no constant folding of the chains */

__attribute__((target("avx512f"), noinline)) static float peak_fma_avx512(long iters) {
    float one = g_one;
    __m512 m = _mm512_set1_ps(0.999999f * one), c = _mm512_set1_ps(1e-6f * one);
#define D(i) __m512 a##i = _mm512_set1_ps(one + (i) * 1e-3f);
    CHAINS(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define F(i) a##i = _mm512_fmadd_ps(a##i, m, c);
        CHAINS(F)
#undef F
        __asm__ volatile("" ::: "memory");
    }
    __m512 s = _mm512_setzero_ps();
#define S(i) s = _mm512_add_ps(s, a##i);
    CHAINS(S)
#undef S
    return _mm512_reduce_add_ps(s);
}

/* The same with vdpbf16ps: 16 lanes x 2 products (x 2 flops) per instruction. */
__attribute__((target("avx512f,avx512bf16"), noinline)) static float peak_dpbf16_avx512(long iters) {
    float one = g_one;
    int bits = 0x3a833a83 * (int)one;   /* two bf16 ~0.001 */
    __m512i x = _mm512_set1_epi32(bits), w = _mm512_set1_epi32(bits);
#define D(i) __m512 a##i = _mm512_set1_ps((i) * 1e-3f * one);
    CHAINS(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define F(i) a##i = _mm512_dpbf16_ps(a##i, (__m512bh)x, (__m512bh)w);
        CHAINS(F)
#undef F
        __asm__ volatile("" ::: "memory");
    }
    __m512 s = _mm512_setzero_ps();
#define S(i) s = _mm512_add_ps(s, a##i);
    CHAINS(S)
#undef S
    return _mm512_reduce_add_ps(s);
}

#ifdef __linux__
#define BENCH_AMX 1
/* AMX: 6 accumulator tiles (tmm0..5) += tmm6 . tmm7, never touching memory
 * inside the loop. Flops: iters * 6 * 16384. Needs k_gemm_has_amx() (the
 * tile permission) first. */
typedef struct {
    unsigned char palette, start_row, reserved[14];
    unsigned short colsb[16];
    unsigned char rows[16];
} bench_tilecfg;

__attribute__((target("amx-tile,amx-bf16"), noinline)) static float peak_amx(long iters) {
    static _Alignas(64) unsigned short ab[16 * 32];
    _Alignas(64) float out[16 * 16];
    bench_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    unsigned short v = (unsigned short)(0x3a83 * (int)g_one);   /* bf16 ~0.001 */
    for (int i = 0; i < 16 * 32; i++) ab[i] = v;
    __asm__ volatile("" : : "r"(&cfg), "r"(ab) : "memory");
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
    _tile_loadd(6, ab, 64);
    _tile_loadd(7, ab, 64);
    for (long it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 6, 7);
        _tile_dpbf16ps(1, 6, 7);
        _tile_dpbf16ps(2, 6, 7);
        _tile_dpbf16ps(3, 6, 7);
        _tile_dpbf16ps(4, 6, 7);
        _tile_dpbf16ps(5, 6, 7);
    }
    _tile_stored(0, out, 64);
    __asm__ volatile("" : : "r"(out) : "memory");
    _tile_release();
    return out[0];
}
#define AMX_CHAINS 6
#endif
#endif

/* AVX2 + FMA: 12 chains of 8 lanes (the ymm registers hold them all).
 * Flops: iters * 12 * 16. */
#define AVX2_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
__attribute__((target("avx2,fma"), noinline)) static float peak_fma_avx2(long iters) {
    float one = g_one;
    __m256 m = _mm256_set1_ps(0.999999f * one), c = _mm256_set1_ps(1e-6f * one);
#define D(i) __m256 a##i = _mm256_set1_ps(one + (i) * 1e-3f);
    AVX2_CHAINS(D)
#undef D
    for (long it = 0; it < iters; it++) {
#define F(i) a##i = _mm256_fmadd_ps(a##i, m, c);
        AVX2_CHAINS(F)
#undef F
        __asm__ volatile("" ::: "memory");
    }
    __m256 s = _mm256_setzero_ps();
#define S(i) s = _mm256_add_ps(s, a##i);
    AVX2_CHAINS(S)
#undef S
    float t[8];
    _mm256_storeu_ps(t, s);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

typedef struct {
    int bf16;   /* 0: fp32 FMA, 1: vdpbf16ps, 2: AMX tdpbf16ps, 3: fp32 FMA in ymm (AVX2) */
    long iters;
    volatile float sink[ED_POOL_MAX_THREADS];
} peak_ctx;

static void peak_task(void *arg, int ith, int nth) {
    peak_ctx *c = arg;
    (void)nth;
#ifdef BENCH_X86
#ifdef BENCH_AMX
    if (c->bf16 == 2) {
        c->sink[ith] = peak_amx(c->iters);
        return;
    }
#endif
    if (c->bf16 == 3) c->sink[ith] = peak_fma_avx2(c->iters);
    else c->sink[ith] = c->bf16 ? peak_dpbf16_avx512(c->iters) : peak_fma_avx512(c->iters);
#else
    (void)c, (void)ith;
#endif
}

/* ms of one run of the chains on all the pool's threads at once, and its flops. */
static double peak_ms(ed_pool *p, int bf16, long iters, double *flops) {
    peak_ctx c = {bf16, iters, {0}};
    double t0 = bench_now_ms();
    ed_pool_run(p, peak_task, &c);
    *flops = (double)iters * PEAK_CHAINS * (bf16 ? 64 : 32) * ed_pool_size(p);
    if (bf16 == 3) *flops = (double)iters * 12 * 16 * ed_pool_size(p);
#ifdef BENCH_AMX
    if (bf16 == 2) *flops = (double)iters * AMX_CHAINS * 16384 * ed_pool_size(p);
#endif
    return bench_now_ms() - t0;
}

/* ---- products ---- */

typedef struct {
    float *y;
    const float *x, *w, *b;
    int M, N, K, mode, gelu, cols, isa;   /* isa: k_gemm_isa's */
    void *scratch[ED_POOL_MAX_THREADS];
} gemm_ctx;

static int g_packed;   /* --packed: k_gemm's packed path only (gemm_packed_isa) */
static int g_isa32 = 2;   /* --avx2: the fp32 column on k_gemm's AVX2 path (1) */

static int gemm_call(int isa, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                     int M, int N, int K, k_gemm_mode mode, int epi, void *scratch) {
    return (g_packed ? gemm_packed_isa : k_gemm_isa)(isa, y, ldy, x, ldx, w, b, M, N, K, mode,
                                                     epi, scratch);
}

static void gemm_task(void *arg, int ith, int nth) {
    gemm_ctx *c = arg;
    int lo, hi;
    k_w w = {c->w, K_F32};
    if (c->cols) {
        ed_split(c->N, ith, nth, GEMM_NR, &lo, &hi);
        w.p = c->w + (size_t)lo * c->K;
        if (hi > lo)
            gemm_call(c->isa, c->y + lo, c->N, c->x, c->K, w, c->b ? c->b + lo : NULL, c->M,
                       hi - lo, c->K, (k_gemm_mode)c->mode, c->gelu, c->scratch[ith]);
    } else {
        ed_split(c->M, ith, nth, GEMM_MR, &lo, &hi);
        if (hi > lo)
            gemm_call(c->isa, c->y + (size_t)lo * c->N, c->N, c->x + (size_t)lo * c->K, c->K, w,
                       c->b, hi - lo, c->N, c->K, (k_gemm_mode)c->mode, c->gelu, c->scratch[ith]);
    }
}

static void blis_task(void *arg, int ith, int nth) {   /* cblas_sgemm on row slices */
    gemm_ctx *c = arg;
    int lo, hi;
    ed_split(c->M, ith, nth, GEMM_MR, &lo, &hi);
    if (hi > lo)
        k_matmul_ex(c->y + (size_t)lo * c->N, c->N, c->x + (size_t)lo * c->K, c->K, c->w, c->K,
                    c->b, hi - lo, c->N, c->K);
}

static int g_best;   /* --best: the fastest run instead of the median */

static double summary(double *v, int n) {
    if (!g_best) return bench_median(v, n);
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* Median GFLOP/s of reps runs: mode -1 = BLIS (k_matmul_ex), else k_gemm_isa
 * (isa). This machine's clock moves with its neighbours' load: each run
 * follows a short run of the matching register peak (fp32 FMA, vdpbf16ps
 * for bf16, tdpbf16ps for bf16 on AMX), whose median GFLOP/s goes to *peak
 * (when not NULL). */
static int g_kind32, g_kind16;   /* the peaks that match k_gemm's fp32 and bf16 paths here */

static double time_gemm(ed_pool *p, gemm_ctx *c, int mode, int isa, int reps, double *peak) {
    double t[64], pk[64], pf = 0;
    double gf = 2.0 * c->M * c->N * c->K / 1e6;
    int kind = mode == 1 ? (isa >= 3 ? 2 : g_kind16) : g_kind32;
    long iters = kind == 2 ? PEAK_ITERS / 100 : PEAK_ITERS / 10;   /* tdpbf16ps: ~16x the work */
    c->mode = mode, c->isa = isa;
    for (int r = -1; r < reps; r++) {   /* r = -1: warm-up */
        if (peak) {
            double ms = peak_ms(p, kind, iters, &pf);
            if (r >= 0) pk[r] = pf / 1e6 / ms;
        }
        double t0 = bench_now_ms();
        ed_pool_run(p, mode < 0 ? blis_task : gemm_task, c);
        if (r >= 0) t[r] = gf / (bench_now_ms() - t0);
    }
    if (peak) *peak = summary(pk, reps);
    return summary(t, reps);
}

static void *scratch_for(int M, int N, int K) {
    size_t a = k_gemm_scratch_bytes(M, N, K, K_GEMM_F32), b = k_gemm_scratch_bytes(M, N, K, K_GEMM_BF16);
    return aligned_alloc(64, ((a > b ? a : b) + 63) & ~(size_t)63);
}

static float *rnd(size_t n, unsigned long *seed) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (float)((*seed >> 33) % 2000000) / 1000000.0f - 1.0f;
    }
    return p;
}

/* k_gemm_isa against k_gemm_ref on a few rows of one product: fp32, bf16
 * on AVX512_BF16 and (where present) on AMX; tolerance 1e-5 of sum |x||w|
 * per element. Returns the worst ratio. */
static double check(ed_pool *p, int M, int N, int K, int cols) {
    unsigned long seed = 7;
    float *x = rnd((size_t)M * K, &seed), *w = rnd((size_t)N * K, &seed), *b = rnd((size_t)N, &seed);
    float *y = malloc(sizeof(float) * (size_t)M * N), *r = malloc(sizeof(float) * (size_t)N);
    gemm_ctx c = {y, x, w, b, M, N, K, 0, 1, cols, 2, {0}};
    int nth = ed_pool_size(p);
    for (int t = 0; t < nth; t++) c.scratch[t] = scratch_for(M, N, K);
    double worst = 0;
    for (int run = 0; run < 3; run++) {   /* fp32, bf16 (isa 2), bf16 (isa 3: AMX) */
        int mode = run > 0;
        if (run == 2 && !k_gemm_has_amx()) break;
        c.mode = mode, c.isa = run == 2 ? 3 : 2;
        ed_pool_run(p, gemm_task, &c);
        int rows[] = {0, 1, 13, 14, M / 2, M - 2, M - 1};
        for (size_t q = 0; q < sizeof rows / sizeof rows[0]; q++) {
            int i = rows[q];
            k_gemm_ref(r, N, x + (size_t)i * K, K, (k_w){w, K_F32}, b, 1, N, K, (k_gemm_mode)mode, 1);
            for (int j = 0; j < N; j++) {
                double s = fabs(b[j]);
                for (int k = 0; k < K; k++) s += fabs((double)x[(size_t)i * K + k] * w[(size_t)j * K + k]);
                double e = fabs((double)y[(size_t)i * N + j] - r[j]) / (1e-5 * s);
                if (!(e <= worst)) worst = e;
            }
        }
    }
    for (int t = 0; t < nth; t++) free(c.scratch[t]);
    free(x), free(w), free(b), free(y), free(r);
    return worst;
}

int main(int argc, char **argv) {
    int d = 384, M = 1500, maxth = 2, reps = 11, cols = 0, oN = 0, oK = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-d") && i + 1 < argc) d = atoi(argv[++i]);
        else if (!strcmp(a, "-m") && i + 1 < argc) M = atoi(argv[++i]);
        else if (!strcmp(a, "-t") && i + 1 < argc) maxth = atoi(argv[++i]);
        else if (!strcmp(a, "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "-s") && i + 1 < argc) cols = !strcmp(argv[++i], "cols");
        else if (!strcmp(a, "--best")) g_best = 1;
        else if (!strcmp(a, "--packed")) g_packed = 1;
        else if (!strcmp(a, "--avx2")) g_isa32 = 1;
        else if (!strcmp(a, "--shape") && i + 1 < argc && sscanf(argv[++i], "%dx%d", &oN, &oK) == 2 &&
                 oN > 0 && oK > 0)
            ;
        else {
            fprintf(stderr, "usage: gemm_bench [-d D] [-m ROWS] [-t MAXTHREADS] [-r REPEATS] "
                            "[-s rows|cols] [--best] [--packed] [--avx2] [--shape NxK]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    if (maxth < 1) maxth = 1;
    if (d < 1 || M < 1) return 2;
    int path32 = k_gemm_path(K_ISA_AVX512, K_GEMM_F32), path16 = k_gemm_path(K_ISA_AVX512, K_GEMM_BF16);
    int has32 = path32 > 0, has16 = path16 > 0, hasamx = k_gemm_has_amx();
    g_kind32 = path32 == 2 ? 0 : 3;   /* zmm or ymm FMA chains */
    g_kind16 = path16 == 2 ? 1 : g_kind32;   /* AVX2's bf16 mode is f32 FMAs */
#ifndef BENCH_AMX
    hasamx = 0;
#endif
    printf("gemm_bench: M = %d, d = %d, %d repeats (%s), %s split; k_gemm fp32 on %s, bf16 on %s, "
           "AMX %s; %s\n",
           M, d, reps, g_best ? "best" : "medians", cols ? "column" : "row", k_isa_name(path32),
           k_isa_name(path16), hasamx ? "yes" : "no", k_blas_info());
    if (!has32) printf("(k_gemm runs its portable C path here; the peaks are not measured)\n");

    struct { const char *name; int N, K, gelu; } sh[] = {
        {"qkv", 3 * d, d, 0}, {"out", d, d, 0}, {"fc1", 4 * d, d, 0}, {"fc1+gelu", 4 * d, d, 1},
        {"fc2", d, 4 * d, 0}, {"conv2", d, 3 * d, 0}};
    int nsh = (int)(sizeof sh / sizeof sh[0]);
    if (oN) sh[0].name = "shape", sh[0].N = oN, sh[0].K = oK, sh[0].gelu = 0, nsh = 1;
    int Nmax = oN > 4 * d ? oN : 4 * d, Kmax = oK > 4 * d ? oK : 4 * d;
    unsigned long seed = 1;
    float *x = rnd((size_t)M * Kmax, &seed), *w = rnd((size_t)Nmax * Kmax, &seed);
    float *b = rnd((size_t)Nmax, &seed);
    float *y = malloc(sizeof(float) * (size_t)M * Nmax);

    for (int nth = 1; nth <= maxth; nth++) {
        ed_pool *p;
        if (ed_pool_new(&p, nth)) return 1;
        if (g_isa32 == 1) ed_pool_set_isa(p, K_ISA_VEC);   /* --avx2: every kernel of the runs */
        double worst = check(p, 397, 200, 301, cols);
        printf("\n== %d thread%s: check vs k_gemm_ref (397x200x301, bias, gelu): worst error %.3f "
               "of the bound (1e-5 sum|x||w|) %s\n",
               nth, nth > 1 ? "s" : "", worst, worst <= 1 ? "ok" : "FAILED");
        if (!(worst <= 1)) return 1;
        double pk32 = 0, pk16 = 0, pkamx = 0, flops;
        if (has32) {   /* long runs: the peaks as such */
            double t[64];
            for (int r = 0; r < reps; r++) t[r] = peak_ms(p, g_kind32, PEAK_ITERS, &flops);
            for (int r = 0; r < reps; r++) t[r] = flops / 1e6 / t[r];
            pk32 = summary(t, reps);
            if (has16 && g_kind16 == 1) {
                for (int r = 0; r < reps; r++) t[r] = peak_ms(p, 1, PEAK_ITERS, &flops);
                for (int r = 0; r < reps; r++) t[r] = flops / 1e6 / t[r];
                pk16 = summary(t, reps);
            }
            if (hasamx) {
                for (int r = 0; r < reps; r++) t[r] = peak_ms(p, 2, PEAK_ITERS / 10, &flops);
                for (int r = 0; r < reps; r++) t[r] = flops / 1e6 / t[r];
                pkamx = summary(t, reps);
            }
        }
        printf("peak (%d thread%s): fp32 FMA (%s) %.1f GFLOP/s, bf16 vdpbf16ps %.1f GFLOP/s, "
               "AMX tdpbf16ps %.1f GFLOP/s\n",
               nth, nth > 1 ? "s" : "", g_kind32 == 3 ? "ymm" : "zmm", pk32, pk16, pkamx);
        printf("GFLOP/s, %s of %d runs; %%peak: against the peak measured between the runs (in brackets)\n",
               g_best ? "best" : "medians", reps);
        printf("%-9s %5s %5s %5s | %7s | %7s %15s %5s | %7s %15s %5s | %7s %15s %5s\n", "shape",
               "M", "N", "K", "BLIS", "fp32", "%peak", "xBLIS", "bf16", "%peak", "xfp32", "amx",
               "%peak", "xfp32");
        gemm_ctx c = {y, x, w, NULL, M, 0, 0, 0, 0, cols, 2, {0}};
        for (int s = 0; s < nsh; s++) {
            c.N = sh[s].N, c.K = sh[s].K, c.gelu = sh[s].gelu;
            for (int t = 0; t < nth; t++) c.scratch[t] = scratch_for(M, c.N, c.K);
            double p32 = 0, p16 = 0;
            double gb = sh[s].gelu ? 0 : time_gemm(p, &c, -1, 2, reps, NULL);
            double g32 = time_gemm(p, &c, 0, g_isa32, reps, has32 ? &p32 : NULL);
            double g16 = has16 ? time_gemm(p, &c, 1, 2, reps, &p16) : 0;
            double gam = hasamx ? time_gemm(p, &c, 1, 3, reps, NULL) : 0, pam = pkamx;
            char bl[16] = "      -", r32[32] = "", r16[32] = "", ram[32] = "", xb[16] = "    -";
            if (gb > 0) snprintf(bl, sizeof bl, "%7.1f", gb), snprintf(xb, sizeof xb, "%5.2f", g32 / gb);
            if (p32 > 0) snprintf(r32, sizeof r32, "%5.1f%% (%6.1f)", 100 * g32 / p32, p32);
            if (p16 > 0) snprintf(r16, sizeof r16, "%5.1f%% (%6.1f)", 100 * g16 / p16, p16);
            if (pam > 0) snprintf(ram, sizeof ram, "%5.1f%% (%6.1f)", 100 * gam / pam, pam);
            printf("%-9s %5d %5d %5d | %7s | %7.1f %15s %5s | %7.1f %15s %5.2f | %7.1f %15s %5.2f\n",
                   sh[s].name, M, c.N, c.K, bl, g32, r32, xb, g16, r16, has16 ? g16 / g32 : 0, gam,
                   ram, hasamx ? gam / g32 : 0);
            for (int t = 0; t < nth; t++) free(c.scratch[t]);
        }
        ed_pool_free(p);
    }
    free(x), free(w), free(b), free(y);
    return 0;
}
