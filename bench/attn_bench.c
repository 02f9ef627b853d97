/* attn_bench.c - a decode step's cross attention over one layer's cache:
 * k_attention (the f32 BLAS path), k_attention_kvf (f32 K/V, few-query
 * kernel) and k_attention_kvh (f16 and bf16 K/V).
 *
 *   build/bench/attn_bench [-r REPEATS] [-l LAYERS] [-t THREADS] [-m MQ,...]
 *                          [--flush MIB] [--isa 0|2]
 *
 * Shape: Whisper tiny's, Tk = 1500 encoder positions, dh = 64, 6 heads; Mq
 * query rows (1 and 5 by default) all read the same K/V. Each variant has
 * its own LAYERS (default 8) layers' worth of K/V, and a timed round calls
 * every layer once, all heads (split over THREADS with the pool, as
 * op_attention_hm does; default 1), so every call finds its K/V outside L2
 * (8 layers: 37 MB of f32, 18 MB of halves; L2 is 2 MB per core here) but
 * possibly in L3. --flush MIB reads that many MiB of other data before each
 * round (not timed): the K/V then comes from DRAM, as when a decode step's
 * weights have pushed it out of L3.
 * Reported: the median over REPEATS rounds of the time per layer, the K/V
 * bytes of a layer (stored type) over that time, and the same for the
 * fastest round (the least disturbed on a shared machine). Rounds run in 3
 * passes over the variants (a warm-up round each time), so a busy machine
 * slows them alike. Before timing, every variant is checked on layer 0
 * against k_attention on the same values (the halves expanded): max |diff|
 * must be < 1e-5.
 */
#include "stats.h"
#include "base/pool.h"
#include "kern/attn_h.h"
#include "kern/kern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_BLAS, V_KVF, V_F16, V_BF16, N_VAR };
static const char *const var_name[N_VAR] = {"k_attention (f32, BLAS)", "k_attention_kvf (f32)",
                                            "k_attention_kvh (f16)", "k_attention_kvh (bf16)"};

typedef struct {
    int var, isa, Mq, Tk, dh, H;
    const void *k, *v;   /* layer: K heads then V heads, each [Tk, dh] */
    const float *q;
    float *o, *scratch;   /* scratch: per thread Mq * Tk */
    float scale;
} run_ctx;

static void heads_task(void *arg, int ith, int nth) {
    run_ctx *c = arg;
    size_t hs = (size_t)c->Tk * c->dh, ld = (size_t)c->H * c->dh;
    float *s = c->scratch + (size_t)ith * c->Mq * c->Tk;
    for (int h = ith; h < c->H; h += nth) {
        float *o = c->o + (size_t)h * c->dh;
        const float *q = c->q + (size_t)h * c->dh;
        if (c->var == V_BLAS) {
            const float *k = (const float *)c->k + h * hs, *v = (const float *)c->v + h * hs;
            k_attention(o, (int)ld, q, (int)ld, k, c->dh, v, c->dh, c->Mq, c->Tk, c->dh, c->scale, 0, s);
        } else if (c->var == V_KVF) {
            const float *k = (const float *)c->k + h * hs, *v = (const float *)c->v + h * hs;
            k_attention_kv_isa(c->isa, o, (int)ld, q, (int)ld, k, v, K_F32, c->Mq, c->Tk, c->dh, c->scale, s);
        } else {
            const uint16_t *k = (const uint16_t *)c->k + h * hs, *v = (const uint16_t *)c->v + h * hs;
            k_attention_kv_isa(c->isa, o, (int)ld, q, (int)ld, k, v, c->var == V_BF16 ? K_BF16 : K_F16,
                               c->Mq, c->Tk, c->dh, c->scale, s);
        }
    }
}

/* Sum of x[0, n) in 16 lanes: reads that evict the caches. */
static double sum_floats(const float *x, size_t n) {
    float acc[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += x[i + j];
    double s = 0;
    for (int j = 0; j < 16; j++) s += acc[j];
    return s;
}

static unsigned long long g_seed = 42;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000001) / 1000000.0f - 1.0f;
}

int main(int argc, char **argv) {
    int reps = 30, L = 8, threads = 1, isa = 2, H = 6, Tk = 1500, dh = 64, flush_mib = 0;
    int mqs[16] = {1, 5}, n_mq = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-l") && i + 1 < argc) L = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--flush") && i + 1 < argc) flush_mib = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            n_mq = 0;
            for (char *p = argv[++i]; *p && n_mq < 16;) {
                mqs[n_mq++] = (int)strtol(p, &p, 10);
                if (*p == ',') p++;
                else break;
            }
        } else {
            fprintf(stderr, "usage: %s [-r REPEATS] [-l LAYERS] [-t THREADS] [-m MQ,...] [--flush MIB] "
                            "[--isa 0|2]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 3 || reps > 1000 || L < 1 || threads < 1 || n_mq < 1 || flush_mib < 0) return 2;
    int max_mq = 0;
    for (int i = 0; i < n_mq; i++) {
        if (mqs[i] < 1 || mqs[i] > 64) return 2;
        if (mqs[i] > max_mq) max_mq = mqs[i];
    }

    size_t hs = (size_t)Tk * dh, layer = 2 * (size_t)H * hs;   /* elements per layer */
    /* K/V per variant: f32 (BLAS), f32 (kvf), f16, bf16; all the same values */
    void *kv[N_VAR];
    size_t esz[N_VAR] = {4, 4, 2, 2};
    for (int var = 0; var < N_VAR; var++) kv[var] = malloc(layer * L * esz[var]);
    float *expd[2] = {malloc(layer * sizeof(float)), malloc(layer * sizeof(float))};
    float *q = malloc((size_t)max_mq * H * dh * sizeof(float));
    float *o = malloc((size_t)max_mq * H * dh * sizeof(float)), *r = malloc((size_t)max_mq * H * dh * sizeof(float));
    float *scratch = malloc((size_t)threads * max_mq * Tk * sizeof(float));
    size_t n_flush = (size_t)flush_mib << 18;   /* floats */
    float *fbuf = n_flush ? malloc(n_flush * sizeof(float)) : NULL;
    ed_pool *pool = NULL;
    int ok = expd[0] && expd[1] && q && o && r && scratch && (!n_flush || fbuf);
    for (int var = 0; var < N_VAR; var++) ok = ok && kv[var];
    if (!ok || ed_pool_new(&pool, threads) != ENCDEC_OK) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    float *kvf = kv[V_BLAS];
    for (size_t i = 0; i < layer * L; i++) kvf[i] = frand();
    memcpy(kv[V_KVF], kvf, layer * L * sizeof(float));
    for (size_t i = 0; i < (size_t)max_mq * H * dh; i++) q[i] = 2.0f * frand();
    for (size_t i = 0; i < n_flush; i++) fbuf[i] = (float)(i & 7);
    for (int b = 0; b < 2; b++) {
        k_f32_to_h(kv[V_F16 + b], kvf, layer * L, b);
        k_h_to_f32(expd[b], kv[V_F16 + b], layer, b);
    }
    float scale = 1.0f / sqrtf((float)dh);
    int used = k_attention_kv_isa(isa, o, dh, q, dh, kvf, kvf, K_F32, 0, Tk, dh, scale, scratch);

    printf("cross attention, one decoder layer: Tk %d, dh %d, %d heads; %d layers cycled "
           "(K/V %.1f MB f32, %.1f MB halves)%s; %d thread%s; kernels: %s; %s; median of %d rounds\n",
           Tk, dh, H, L, layer * L * 4 / 1e6, layer * L * 2 / 1e6,
           n_flush ? ", caches flushed before each round" : "", threads, threads > 1 ? "s" : "",
           used == 2 ? "AVX-512" : "portable C", k_blas_info(), reps);

    int fail = 0;
    static double t[N_VAR][1000];
    double sink = 0;
    for (int mi = 0; mi < n_mq; mi++) {
        int Mq = mqs[mi];
        run_ctx c[N_VAR];
        double md[N_VAR];
        for (int var = 0; var < N_VAR; var++) {
            run_ctx c0 = {var, isa, Mq, Tk, dh, H, NULL, NULL, q, o, scratch, scale};
            c[var] = c0;
            /* correctness, layer 0: against k_attention on the same values */
            c[var].k = kv[var], c[var].v = (const char *)kv[var] + H * hs * esz[var];
            ed_pool_run(pool, heads_task, &c[var]);
            const float *ref_kv = var == V_F16 ? expd[0] : var == V_BF16 ? expd[1] : kvf;
            run_ctx rc = {V_BLAS, isa, Mq, Tk, dh, H, ref_kv, ref_kv + H * hs, q, r, scratch, scale};
            heads_task(&rc, 0, 1);
            md[var] = 0;
            for (size_t i = 0; i < (size_t)Mq * H * dh; i++)
                if (!(fabs((double)o[i] - r[i]) <= md[var])) md[var] = fabs((double)o[i] - r[i]);
            if (!(md[var] < 1e-5)) {
                fprintf(stderr, "%s, Mq %d: max |diff| %.3g against k_attention\n", var_name[var], Mq, md[var]);
                fail = 1;
            }
        }
        /* timing: 3 passes over the variants, each a warm-up round then its
         * share of the rounds over all layers */
        int done[N_VAR] = {0};
        for (int pass = 0; pass < 3; pass++)
            for (int var = 0; var < N_VAR; var++) {
                int n = reps * (pass + 1) / 3 - reps * pass / 3;
                for (int rep = -1; rep < n; rep++) {
                    if (n_flush) sink += sum_floats(fbuf, n_flush);
                    double t0 = bench_now_ms();
                    for (int l = 0; l < L; l++) {
                        c[var].k = (const char *)kv[var] + l * layer * esz[var];
                        c[var].v = (const char *)kv[var] + (l * layer + H * hs) * esz[var];
                        ed_pool_run(pool, heads_task, &c[var]);
                    }
                    if (rep >= 0) t[var][done[var]++] = (bench_now_ms() - t0) / L;
                }
            }
        printf("\nMq %d%*s us/layer  GB/s K/V    x BLAS | fastest round: us  GB/s  x BLAS\n", Mq,
               Mq < 10 ? 25 : 24, "");
        double base = 0, base_min = 0;
        for (int var = 0; var < N_VAR; var++) {
            double ms = bench_median(t[var], reps), mn = t[var][0];   /* sorted */
            if (var == V_BLAS) base = ms, base_min = mn;
            printf("  %-26s %9.1f %9.1f %9.2f | %18.1f %5.1f %7.2f   (max |diff| %.1e)\n",
                   var_name[var], ms * 1e3, layer * esz[var] / (ms * 1e6), base / ms, mn * 1e3,
                   layer * esz[var] / (mn * 1e6), base_min / mn, md[var]);
        }
    }
    if (sink == 42.0) printf(" \n");   /* keeps the flush reads */
    ed_pool_free(pool);
    for (int var = 0; var < N_VAR; var++) free(kv[var]);
    free(expd[0]), free(expd[1]), free(q), free(o), free(r), free(scratch), free(fbuf);
    return fail;
}
