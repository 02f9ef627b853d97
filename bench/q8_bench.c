/* q8_bench.c - int8 weights (kern/q8.h) against the machine's read bandwidth
 * and against the half-precision kernels, correctness first.
 *
 *   build/bench/q8_bench [-r REPEATS] [--hot] [--isa c|avx2|neon|avx512] [--no-avxvnni]
 *
 * --isa caps the kernel set (an AVX-512 machine measuring the AVX2 code);
 * --no-avxvnni keeps the AVX2 level off AVX-VNNI (vpmaddubsw + vpmaddwd).
 *
 * 1. Read bandwidth: a streaming sum over a 1 GiB buffer (1 and 2 threads),
 *    as roofline.c measures it.
 * 2. For [N x K] = [51866 x 384] (vocabulary), [1536 x 384], [384 x 1536]:
 *    k_matmul_q8 must equal k_matmul_q8_ref exactly (M = 1 and 5), then
 *    M = 1 and 5 on 1 and 2 threads (columns split in 16s over the pool):
 *    ms per call and the weight bytes read per second, also as a fraction of
 *    the measured bandwidth for that many threads; beside it the same
 *    product with f16 weights, k_matmul_h on the same column slices.
 *    Cold (default): every call reads another copy of the matrix, cycling
 *    through >= 1 GiB of copies, so the weights come from memory as in a
 *    real decode step (not from the last-level cache). --hot: the same
 *    matrix every call.
 * 3. M = 1500 (encoder rows, split over the threads): int8 GOP/s (2 M N K
 *    per call) against f16 weights expanded to f32 then multiplied by BLAS
 *    (the engine's path for many rows), on the two smaller shapes.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")   /* the bandwidth loop (the kernels are in the library) */
#endif
#include "bandwidth.h"
#include "stats.h"
#include "base/isa.h"
#include "base/pool.h"
#include "kern/kern.h"
#include "kern/q8.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COPY_BYTES ((size_t)1 << 30)

static int g_reps = 7, g_hot = 0, g_isa = ED_ISA_ANY;

/* ---- bandwidth (bandwidth.h) ---- */

static bench_bw g_bw;

static double read_gbps(ed_pool *p) { return bench_bw_pass(p, &g_bw); }

/* ---- the products ---- */

typedef struct {
    float *y;
    const float *x;
    int M, N, K;
    const k_q8 *q;          /* copies */
    void *scratch[2];
    int cur, isa;
} q8_ctx;

/* Few rows: columns split in 16s; many rows: rows split. */
static void q8_task(void *arg, int ith, int nth) {
    q8_ctx *c = arg;
    int lo, hi;
    if (c->M <= 16) {
        ed_split(c->N, ith, nth, 16, &lo, &hi);
        if (hi > lo) {
            int isa = k_matmul_q8(c->y, c->N, c->x, c->K, c->q[c->cur], NULL, c->M, lo, hi - lo, c->scratch[ith]);
            if (ith == 0) c->isa = isa;
        }
    } else {
        ed_split(c->M, ith, nth, 1, &lo, &hi);
        if (hi > lo) {
            int isa = k_matmul_q8(c->y + (size_t)lo * c->N, c->N, c->x + (size_t)lo * c->K, c->K, c->q[c->cur],
                                  NULL, hi - lo, 0, c->N, c->scratch[ith]);
            if (ith == 0) c->isa = isa;
        }
    }
}

/* Calls per sample: a sweep over the copies (cold), or on copy 0 a run of
 * calls lasting about 20 ms (hot). */
static int calls_for(double one_ms, int ncopy) {
    if (!g_hot) return ncopy;
    int calls = one_ms > 0 ? (int)(20.0 / one_ms) + 1 : 1000;
    return calls > 100000 ? 100000 : calls;
}

/* ms per call over one sample of `calls` calls. */
static double sample_q8(ed_pool *p, q8_ctx *c, int calls) {
    double t0 = bench_now_ms();
    for (int i = 0; i < calls; i++) {
        c->cur = g_hot ? 0 : i;
        ed_pool_run(p, q8_task, c);
    }
    return (bench_now_ms() - t0) / calls;
}

typedef struct {
    ed_pool *p;
    float *y;
    const float *x;
    uint16_t *const *h;     /* copies */
    int M, N, K, cur;
    float *panel[2];        /* many rows: each thread's f32 expansion of W */
} h_ctx;

/* Few rows: k_matmul_h on column slices (16s), as the engine runs it. Many
 * rows: each thread expands W to f32 and multiplies its rows with BLAS
 * (k_matmul_ex), as op_matmul_w did for f16 weights when this was written. */
static void h_task(void *arg, int ith, int nth) {
    h_ctx *c = arg;
    int lo, hi;
    if (c->M <= 16) {
        ed_split(c->N, ith, nth, 16, &lo, &hi);
        if (hi > lo)
            k_matmul_h(c->y + lo, c->N, c->x, c->K, c->h[c->cur] + (size_t)lo * c->K, c->K, 0, NULL, c->M,
                       hi - lo, c->K);
        return;
    }
    ed_split(c->M, ith, nth, 4, &lo, &hi);
    if (hi <= lo) return;
    k_h_to_f32(c->panel[ith], c->h[c->cur], (size_t)c->N * c->K, 0);
    k_matmul_ex(c->y + (size_t)lo * c->N, c->N, c->x + (size_t)lo * c->K, c->K, c->panel[ith], c->K, NULL,
                hi - lo, c->N, c->K);
}

static void h_call(h_ctx *c) { ed_pool_run(c->p, h_task, c); }

static double sample_h(h_ctx *c, int calls) {
    double t0 = bench_now_ms();
    for (int i = 0; i < calls; i++) {
        c->cur = g_hot ? 0 : i;
        h_call(c);
    }
    return (bench_now_ms() - t0) / calls;
}

static double median(double *v, int n) { return bench_median(v, n); }

static unsigned long g_seed = 99;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000000) / 1000000.0f - 1.0f;
}

static uint16_t f2h(float f) {   /* f32 -> f16, truncating; |f| <= 1 */
    uint32_t u;
    memcpy(&u, &f, 4);
    if (fabsf(f) < 6.2e-5f) return (uint16_t)((u >> 16) & 0x8000);
    return (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hot")) g_hot = 1;
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc && k_isa_parse(argv[i + 1]) >= 0)
            g_isa = k_isa_parse(argv[++i]);
        else if (!strcmp(argv[i], "--no-avxvnni")) k_feat_mask(K_FEAT_ALL & ~(unsigned)K_FEAT_AVXVNNI);
        else {
            fprintf(stderr, "usage: q8_bench [-r REPEATS] [--hot] [--isa c|avx2|neon|avx512] "
                            "[--no-avxvnni]\n");
            return 2;
        }
    }
    ed_isa_swap(g_isa);
    if (g_reps < 1 || g_reps > 64) {
        fprintf(stderr, "q8_bench: 1 <= -r <= 64\n");
        return 2;
    }
    ed_pool *pools[2];
    if (ed_pool_new(&pools[0], 1) || ed_pool_new(&pools[1], 2)) return 1;
    ed_pool_set_isa(pools[0], g_isa);
    ed_pool_set_isa(pools[1], g_isa);
    printf("kernel set %s%s\n", k_isa_name(k_isa()),
           k_isa() == K_ISA_VEC && k_feat(K_FEAT_AVXVNNI) ? " + AVX-VNNI" : "");
    g_bw.n = COPY_BYTES / sizeof(float);
    float *bwbuf = malloc(g_bw.n * sizeof(float));
    for (size_t i = 0; i < g_bw.n; i++) bwbuf[i] = (float)(i & 3);
    g_bw.buf = bwbuf;
    double bw[2];
    for (int t = 0; t < 2; t++) {
        double v[64];
        read_gbps(pools[t]);
        for (int r = 0; r < g_reps; r++) v[r] = read_gbps(pools[t]);
        bw[t] = median(v, g_reps);
    }
    printf("read bandwidth (1 GiB streaming sum, median of %d): 1 thread %.1f GB/s, 2 threads %.1f GB/s\n",
           g_reps, bw[0], bw[1]);
    printf("(this VM's bandwidth drifts: every row below measures it again between its own samples,\n"
           " and 'of bw' is the median over the repeats of each sample's rate / the bandwidth sample\n"
           " taken just before it)\n");
    printf("weights: %s\n", g_hot ? "hot (the same matrix every call)"
                                  : "cold (each call reads another copy; >= 1 GiB of copies)");

    int shapes[3][2] = {{51866, 384}, {1536, 384}, {384, 1536}};
    int bad = 0;
    printf("\n%-14s %4s %3s | %9s %8s %6s | %9s %8s %6s | %s\n", "[N x K]", "M", "thr", "q8 ms", "GB/s",
           "of bw", "f16 ms", "GB/s", "of bw", "q8 speed-up");
    for (int s = 0; s < 3; s++) {
        int N = shapes[s][0], K = shapes[s][1];
        size_t nk = (size_t)N * K, qb = k_q8_bytes(N, K);
        float *w = malloc(sizeof(float) * nk);
        for (size_t i = 0; i < nk; i++) w[i] = frand();
        int nq = g_hot ? 1 : (int)((COPY_BYTES + qb - 1) / qb);
        int nh = g_hot ? 1 : (int)((COPY_BYTES + 2 * nk - 1) / (2 * nk));
        k_q8 *q = malloc(sizeof(k_q8) * (size_t)nq);
        void **qbuf = malloc(sizeof(void *) * (size_t)nq);
        uint16_t **h = malloc(sizeof(uint16_t *) * (size_t)nh);
        qbuf[0] = aligned_alloc(64, qb);
        q[0] = k_q8_pack(qbuf[0], (k_w){.p = w, .t = K_F32}, N, K);
        for (int i = 1; i < nq; i++) {
            qbuf[i] = aligned_alloc(64, qb);
            memcpy(qbuf[i], qbuf[0], qb);
            q[i] = (k_q8){qbuf[i], N, K};
        }
        for (int i = 0; i < nh; i++) {
            h[i] = malloc(2 * nk);
            if (i == 0) for (size_t j = 0; j < nk; j++) h[0][j] = f2h(w[j]);
            else memcpy(h[i], h[0], 2 * nk);
        }
        int Mmax = s > 0 ? 1500 : 5;
        float *x = malloc(sizeof(float) * (size_t)Mmax * K), *y = malloc(sizeof(float) * (size_t)Mmax * N);
        float *ref = malloc(sizeof(float) * (size_t)5 * N);
        for (size_t i = 0; i < (size_t)Mmax * K; i++) x[i] = frand();
        q8_ctx c = {y, x, 1, N, K, q, {malloc(k_q8_scratch_bytes(Mmax, K)), malloc(k_q8_scratch_bytes(Mmax, K))}, 0, -1};

        /* correctness: exact against the scalar twin, on 1 and 2 threads */
        for (int M = 1; M <= 5; M += 4)
            for (int t = 0; t < 2; t++) {
                c.M = M;
                ed_pool_run(pools[t], q8_task, &c);
                k_matmul_q8_ref(ref, N, x, K, q[0], NULL, M, 0, N);
                int diff = 0;
                for (size_t i = 0; i < (size_t)M * N; i++) diff += y[i] != ref[i];
                if (diff) fprintf(stderr, "q8_bench: [%d x %d] M=%d %d threads: %d outputs differ from k_matmul_q8_ref\n",
                                  N, K, M, t + 1, diff), bad = 1;
            }
        if (bad) return 1;

        for (int M = 1; M <= 5; M += 4)
            for (int t = 0; t < 2; t++) {
                c.M = M;
                h_ctx hc = {pools[t], y, x, h, M, N, K, 0, {NULL, NULL}};
                int cq = calls_for(sample_q8(pools[t], &c, 1), nq), ch = calls_for(sample_h(&hc, 1), nh);
                sample_q8(pools[t], &c, cq), sample_h(&hc, ch);   /* warm-up */
                double tq[64], th[64], fq[64], fh[64], bws[64];
                for (int r = 0; r < g_reps; r++) {   /* paired: bandwidth, q8, f16 */
                    bws[r] = read_gbps(pools[t]);
                    tq[r] = sample_q8(pools[t], &c, cq);
                    th[r] = sample_h(&hc, ch);
                    fq[r] = (double)qb / (tq[r] * 1e6) / bws[r];
                    fh[r] = 2.0 * nk / (th[r] * 1e6) / bws[r];
                }
                double mq = median(tq, g_reps), mh = median(th, g_reps);
                char name[32];
                snprintf(name, sizeof name, "[%d x %d]", N, K);
                printf("%-14s %4d %3d | %9.4f %8.1f %5.0f%% | %9.4f %8.1f %5.0f%% | %.2fx   (bw %.1f)\n", name, M,
                       t + 1, mq, (double)qb / (mq * 1e6), 100 * median(fq, g_reps), mh, 2.0 * nk / (mh * 1e6),
                       100 * median(fh, g_reps), mh / mq, median(bws, g_reps));
            }
        if (s > 0) {   /* encoder rows */
            c.M = Mmax;
            int ncq = nq < 16 ? nq : 16, nch = nh < 16 ? nh : 16;   /* a few copies: compute-bound anyway */
            for (int t = 0; t < 2; t++) {
                h_ctx hc = {pools[t], y, x, h, Mmax, N, K, 0, {malloc(4 * nk), malloc(4 * nk)}};
                int cq = calls_for(sample_q8(pools[t], &c, 1), ncq), ch = calls_for(sample_h(&hc, 1), nch);
                double vq[64], vh[64];
                for (int r = 0; r < g_reps; r++) vq[r] = sample_q8(pools[t], &c, cq), vh[r] = sample_h(&hc, ch);
                double tq = median(vq, g_reps), th = median(vh, g_reps);
                free(hc.panel[0]), free(hc.panel[1]);
                double ops = 2.0 * Mmax * N * K;
                printf("%-14s %4d %3d | %9.3f %6.1f GOP/s     | %9.3f %6.1f GFLOP/s   | %.2fx\n",
                       s == 1 ? "[1536 x 384]" : "[384 x 1536]", Mmax, t + 1, tq, ops / (tq * 1e6), th,
                       ops / (th * 1e6), th / tq);
            }
        }
        printf("%-14s isa %d (2 = AVX-512 VNNI, 0 = C); packed %.1f MB, f16 %.1f MB\n", "", c.isa, qb / 1e6, 2.0 * nk / 1e6);
        for (int i = 0; i < nq; i++) free(qbuf[i]);
        for (int i = 0; i < nh; i++) free(h[i]);
        free(q), free(qbuf), free(h), free(w), free(x), free(y), free(ref), free(c.scratch[0]), free(c.scratch[1]);
    }
    free(bwbuf);
    ed_pool_free(pools[0]);
    ed_pool_free(pools[1]);
    return 0;
}
