/* hp_bench.c - panel-major half-precision weights (kern/matmul_hp.h) against
 * the machine's read bandwidth and against the row-major k_matmul_h, for the
 * few rows of decode steps (greedy M = 1, beam search M = 2..16).
 *
 *   build/bench/hp_bench [-r REPEATS] [--hot] [--bf16] [-M LIST] [-s LIST] [--isa SET]
 *
 * 1. Read bandwidth: a streaming sum over a 1 GiB buffer (1 and 2 threads),
 *    as q8_bench / roofline.c measure it.
 * 2. For [N x K] = [51866 x 384] (Whisper's vocabulary), [1536 x 384],
 *    [384 x 1536], [1152 x 384]: first correctness (k_matmul_hp on 1 and 2
 *    threads against k_matmul_hp_ref, 1e-5 of sum |x||w| per output, and
 *    k_matmul_h against the same), then M = 1, 2, 5, 8, 16 on 1 and 2
 *    threads (columns split in 16s over the pool): ms per call and the
 *    weight bytes read per second, also as a fraction of the bandwidth
 *    sampled just before each timing sample; beside it k_matmul_h on the
 *    row-major matrix (same column slices).
 *    Cold (default): every call reads another copy of the matrix, cycling
 *    through >= 1 GiB of copies, so the weights come from memory as in a
 *    real decode step. --hot: the same matrix every call.
 * -M 1,5 / -s 0,2: only those rows / shapes (indices into the list above).
 * --isa avx2 (c, neon, avx512): caps the kernel set (an AVX-512 machine
 * measuring the AVX2 code).
 * --bf16 on a CPU with AMX adds k_matmul_hp_amx (the bf16 mode's decode
 * kernel: x rounded to bf16) on the same panels: checked against its
 * scalar twin, then 'amx ms', its 'of bw', and its speed-up over the panel
 * kernel ('vs pnl').
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")   /* the bandwidth loop (the kernels are in the library) */
#endif
#include "bandwidth.h"
#include "stats.h"
#include "base/isa.h"
#include "base/pool.h"
#include "kern/kern.h"
#include "kern/matmul_hp.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COPY_BYTES ((size_t)1 << 30)

static int g_reps = 7, g_hot = 0, g_bf16 = 0, g_amx = 0, g_isa = ED_ISA_ANY;

/* ---- bandwidth (bandwidth.h) ---- */

static bench_bw g_bw;

static double read_gbps(ed_pool *p) { return bench_bw_pass(p, &g_bw); }

/* ---- the products ---- */

typedef struct {
    float *y;
    const float *x;
    int M, N, K, cur, panel;      /* panel: 1 k_matmul_hp, 2 k_matmul_hp_amx (packed copies); 0 k_matmul_h */
    uint16_t *const *w;           /* copies */
    int isa;
    ed_pool *p;                   /* its threads' scratch: x k-major once a call, as core/ops.c */
} mm_ctx;

static void mm_task(void *arg, int ith, int nth) {
    mm_ctx *c = arg;
    int lo, hi;
    ed_split(c->N, ith, nth, 16, &lo, &hi);
    if (hi <= lo) return;
    const uint16_t *w = c->w[c->cur];
    if (c->panel == 2) {
        k_matmul_hp_amx(c->y, c->N, c->x, c->K, w, NULL, c->M, lo, hi - lo, c->N, c->K);
    } else if (c->panel) {
        size_t xs = k_hp_xs_floats(c->M, c->K);
        int isa = k_matmul_hp_xs(c->y, c->N, c->x, c->K, w, g_bf16, NULL, c->M, lo, hi - lo, c->N, c->K,
                                 xs ? ed_pool_scratch(c->p, ith, sizeof(float) * xs) : NULL);
        if (ith == 0) c->isa = isa;
    } else {
        k_matmul_h(c->y + lo, c->N, c->x, c->K, w + (size_t)lo * c->K, c->K, g_bf16, NULL, c->M, hi - lo, c->K);
    }
}

static double sample(ed_pool *p, mm_ctx *c, int calls, int ncopy) {
    double t0 = bench_now_ms();
    for (int i = 0; i < calls; i++) {
        c->cur = g_hot ? 0 : i % ncopy;
        c->p = p;
        ed_pool_run(p, mm_task, c);
    }
    return (bench_now_ms() - t0) / calls;
}

/* Calls per sample: a sweep over the copies (cold, at least 20 ms), or on
 * copy 0 a run of calls lasting about 20 ms (hot). */
static int calls_for(double one_ms, int ncopy) {
    int calls = one_ms > 0 ? (int)(20.0 / one_ms) + 1 : 1000;
    if (calls > 100000) calls = 100000;
    if (!g_hot && calls < ncopy) calls = ncopy;
    return calls;
}

static unsigned long g_seed = 99;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000000) / 1000000.0f - 1.0f;
}

static uint16_t f2h(float f, int bf16) {   /* truncating; |f| <= 1 */
    uint32_t u;
    memcpy(&u, &f, 4);
    if (bf16) return (uint16_t)(u >> 16);
    if (fabsf(f) < 6.2e-5f) return (uint16_t)((u >> 16) & 0x8000);
    return (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
}

static int parse_list(const char *s, int *v, int max) {
    int n = 0;
    while (*s && n < max) {
        char *e;
        v[n++] = (int)strtol(s, &e, 10);
        if (e == s) return -1;
        s = *e == ',' ? e + 1 : e;
    }
    return n;
}

int main(int argc, char **argv) {
    int Ms[16] = {1, 2, 5, 8, 16}, nM = 5, sel[8] = {0, 1, 2, 3}, nsel = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hot")) g_hot = 1;
        else if (!strcmp(argv[i], "--bf16")) g_bf16 = 1;
        else if (!strcmp(argv[i], "-M") && i + 1 < argc) nM = parse_list(argv[++i], Ms, 16);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) nsel = parse_list(argv[++i], sel, 8);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc && k_isa_parse(argv[i + 1]) >= 0)
            g_isa = k_isa_parse(argv[++i]);
        else {
            fprintf(stderr, "usage: hp_bench [-r REPEATS] [--hot] [--bf16] [-M LIST] [-s LIST] [--isa SET]\n");
            return 2;
        }
    }
    if (g_reps < 1 || g_reps > 64 || nM < 1 || nsel < 1) {
        fprintf(stderr, "hp_bench: 1 <= -r <= 64, non-empty lists\n");
        return 2;
    }
    for (int i = 0; i < nM; i++)
        if (Ms[i] < 1 || Ms[i] > 64) return fprintf(stderr, "hp_bench: 1 <= M <= 64\n"), 2;
    for (int i = 0; i < nsel; i++)
        if (sel[i] < 0 || sel[i] > 3) return fprintf(stderr, "hp_bench: shapes 0..3\n"), 2;
    ed_pool *pools[2];
    if (ed_pool_new(&pools[0], 1) || ed_pool_new(&pools[1], 2)) return 1;
    ed_isa_swap(g_isa);
    ed_pool_set_isa(pools[0], g_isa);
    ed_pool_set_isa(pools[1], g_isa);
    printf("kernel set %s\n", k_isa_name(k_isa()));
    g_bw.n = COPY_BYTES / sizeof(float);
    float *bwbuf = malloc(g_bw.n * sizeof(float));
    if (!bwbuf) return 1;
    for (size_t i = 0; i < g_bw.n; i++) bwbuf[i] = (float)(i & 3);
    g_bw.buf = bwbuf;
    double bw[2];
    for (int t = 0; t < 2; t++) {
        double v[64];
        read_gbps(pools[t]);
        for (int r = 0; r < g_reps; r++) v[r] = read_gbps(pools[t]);
        bw[t] = bench_median(v, g_reps);
    }
    printf("read bandwidth (1 GiB streaming sum, median of %d): 1 thread %.1f GB/s, 2 threads %.1f GB/s\n",
           g_reps, bw[0], bw[1]);
    printf("weights: %s, %s; 'of bw': median over the samples of (weight bytes / s) / (the bandwidth\n"
           "sampled just before); 'bw' at the end of a row: the median of those bandwidth samples\n",
           g_bf16 ? "bf16" : "f16",
           g_hot ? "hot (the same matrix every call)" : "cold (each call reads another copy; >= 1 GiB of copies)");

    const int shapes[4][2] = {{51866, 384}, {1536, 384}, {384, 1536}, {1152, 384}};
    int Mmax = 0;
    for (int i = 0; i < nM; i++) Mmax = Ms[i] > Mmax ? Ms[i] : Mmax;
    g_amx = g_bf16 && k_matmul_hp_amx_has();
    printf("\n%-14s %3s %3s | %9s %7s %6s | %9s %7s %6s | %7s", "[N x K]", "M", "thr", "panel ms", "GB/s",
           "of bw", "h ms", "GB/s", "of bw", "speedup");
    if (g_amx) printf(" | %9s %6s %7s", "amx ms", "of bw", "vs pnl");
    printf("\n");
    for (int si = 0; si < nsel; si++) {
        int N = shapes[sel[si]][0], K = shapes[sel[si]][1];
        size_t nk = (size_t)N * K, hb = 2 * nk, pb = k_hp_bytes(N, K);
        int ncopy = g_hot ? 1 : (int)((COPY_BYTES + hb - 1) / hb);
        uint16_t **wr = malloc(sizeof(uint16_t *) * (size_t)ncopy), **wp = malloc(sizeof(uint16_t *) * (size_t)ncopy);
        for (int i = 0; i < ncopy; i++) {
            wr[i] = aligned_alloc(64, (hb + 63) / 64 * 64);
            wp[i] = aligned_alloc(64, (pb + 63) / 64 * 64);
            if (!wr[i] || !wp[i]) return fprintf(stderr, "hp_bench: out of memory\n"), 1;
            if (i == 0) {
                for (size_t j = 0; j < nk; j++) wr[0][j] = f2h(frand(), g_bf16);
                k_hp_pack(wp[0], (k_w){.p = wr[0], .t = g_bf16 ? K_BF16 : K_F16}, N, K);
            } else {
                memcpy(wr[i], wr[0], hb);
                memcpy(wp[i], wp[0], pb);
            }
        }
        float *x = malloc(sizeof(float) * (size_t)Mmax * K), *y = malloc(sizeof(float) * (size_t)Mmax * N);
        float *ref = malloc(sizeof(float) * (size_t)Mmax * N), *wf = malloc(sizeof(float) * nk);
        double *scale = malloc(sizeof(double) * (size_t)Mmax * N);
        for (size_t i = 0; i < (size_t)Mmax * K; i++) x[i] = frand();

        /* correctness: Mmax rows, both kernels, 1 and 2 threads */
        k_h_to_f32(wf, wr[0], nk, g_bf16);
        for (int i = 0; i < Mmax; i++)
            for (int n = 0; n < N; n++) {
                double s = 0;
                for (int k = 0; k < K; k++) s += fabs((double)x[(size_t)i * K + k] * wf[(size_t)n * K + k]);
                scale[(size_t)i * N + n] = s;
            }
        mm_ctx c = {y, x, Mmax, N, K, 0, 1, wp, -1};
        for (int kind = g_amx ? 2 : 1; kind >= 0; kind--)
            for (int t = 0; t < 2; t++) {
                c.panel = kind, c.w = kind ? wp : wr;
                if (kind == 2) k_matmul_hp_amx_ref(ref, N, x, K, wp[0], NULL, Mmax, 0, N, N, K);
                else k_matmul_hp_ref(ref, N, x, K, wp[0], g_bf16, NULL, Mmax, 0, N, N, K);
                for (size_t i = 0; i < (size_t)Mmax * N; i++) y[i] = NAN;
                c.p = pools[t];
                ed_pool_run(pools[t], mm_task, &c);
                size_t bad = 0;
                for (size_t i = 0; i < (size_t)Mmax * N; i++) bad += !(fabs((double)y[i] - ref[i]) <= 1e-5 * scale[i]);
                if (bad) {
                    fprintf(stderr, "hp_bench: [%d x %d] M=%d %d threads: %zu outputs of %s differ from k_matmul_hp_ref\n",
                            N, K, Mmax, t + 1, bad, kind == 2 ? "k_matmul_hp_amx" : kind ? "k_matmul_hp" : "k_matmul_h");
                    return 1;
                }
            }

        for (int mi = 0; mi < nM; mi++)
            for (int t = 0; t < 2; t++) {
                mm_ctx cp = {y, x, Ms[mi], N, K, 0, 1, wp, -1}, ch = {y, x, Ms[mi], N, K, 0, 0, wr, -1};
                mm_ctx ca = {y, x, Ms[mi], N, K, 0, 2, wp, -1};
                int np = calls_for(sample(pools[t], &cp, 1, ncopy), ncopy);
                int nh = calls_for(sample(pools[t], &ch, 1, ncopy), ncopy);
                int na = g_amx ? calls_for(sample(pools[t], &ca, 1, ncopy), ncopy) : 0;
                sample(pools[t], &cp, np, ncopy), sample(pools[t], &ch, nh, ncopy);   /* warm-up */
                if (g_amx) sample(pools[t], &ca, na, ncopy);
                double tp[64], th[64], ta[64], fp[64], fh[64], fa[64], bws[64];
                for (int r = 0; r < g_reps; r++) {   /* paired: bandwidth, panel, row-major, AMX */
                    bws[r] = read_gbps(pools[t]);
                    tp[r] = sample(pools[t], &cp, np, ncopy);
                    th[r] = sample(pools[t], &ch, nh, ncopy);
                    ta[r] = g_amx ? sample(pools[t], &ca, na, ncopy) : 1;
                    fp[r] = (double)pb / (tp[r] * 1e6) / bws[r];
                    fh[r] = (double)hb / (th[r] * 1e6) / bws[r];
                    fa[r] = (double)pb / (ta[r] * 1e6) / bws[r];
                }
                double mp = bench_median(tp, g_reps), mh = bench_median(th, g_reps);
                double ma = bench_median(ta, g_reps);
                char name[32];
                snprintf(name, sizeof name, "[%d x %d]", N, K);
                printf("%-14s %3d %3d | %9.4f %7.1f %5.0f%% | %9.4f %7.1f %5.0f%% | %6.2fx", name,
                       Ms[mi], t + 1, mp, (double)pb / (mp * 1e6), 100 * bench_median(fp, g_reps), mh,
                       (double)hb / (mh * 1e6), 100 * bench_median(fh, g_reps), mh / mp);
                if (g_amx)
                    printf(" | %9.4f %5.0f%% %6.2fx", ma, 100 * bench_median(fa, g_reps), mp / ma);
                printf("  (bw %.1f)\n", bench_median(bws, g_reps));
                fflush(stdout);
                if (cp.isa != 2 && mi == 0 && t == 0) printf("%-14s (k_matmul_hp used isa %d: %s)\n", "", cp.isa, cp.isa == 1 ? "AVX2 / NEON" : "the C path");
            }
        for (int i = 0; i < ncopy; i++) free(wr[i]), free(wp[i]);
        free(wr), free(wp), free(x), free(y), free(ref), free(wf), free(scale);
    }
    free(bwbuf);
    ed_pool_free(pools[0]);
    ed_pool_free(pools[1]);
    return 0;
}
