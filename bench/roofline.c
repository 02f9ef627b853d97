/* roofline.c - where encdec's Whisper stands against this machine's own
 * ceilings, all measured in one run with the same BLAS and thread pool.
 *
 *   build/bench/roofline [-m MODEL] [-t THREADS] [-r REPEATS] [--json] AUDIO
 *
 * Ceilings: the fp32 matrix-product rate (op_matmul over the pool, the best
 * of the encoder's shapes [1500, d] x [d, 3d], [1500, d] x [d, F] and a
 * 1536^3 product) and the read bandwidth (every thread sums its slice of a
 * 512 MiB buffer). Model costs come from the
 * loaded hyper-parameters: the encoder's floating-point operations (convs,
 * projections, attention, MLP, the cross-cache fill) and the bytes a decode
 * step must read (decoder weights, the V x d output projection, the cross
 * K/V of every layer; weights in their stored precision). Then transcription timings (medians) give:
 *   encoder GFLOP/s and its fraction of the GEMM ceiling,
 *   decode ms/token against its memory-traffic bound (bytes / bandwidth).
 * The correctness check (identical tokens across cache modes) is `encdec
 * bench`'s; this program measures the full-cache mode only.
 */
#pragma GCC optimize("O3")
#include "encdec.h"
#include "stats.h"
#include "base/pool.h"
#include "core/ops.h"
#include "kern/kern.h"
#include "models/whisper.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- ceilings ---- */

static double gemm_gflops(ed_pool *p, int M, int N, int K, int reps) {
    float *x = malloc(sizeof(float) * (size_t)M * K), *w = malloc(sizeof(float) * (size_t)N * K),
          *y = malloc(sizeof(float) * (size_t)M * N);
    for (size_t i = 0; i < (size_t)M * K; i++) x[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = (float)(i % 5) * 0.1f;
    double t[64];
    op_matmul(p, y, x, w, NULL, M, N, K);   /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_ms();
        op_matmul(p, y, x, w, NULL, M, N, K);
        t[r] = bench_now_ms() - t0;
    }
    free(x), free(w), free(y);
    return 2.0 * M * N * K / (bench_median(t, reps) * 1e6);
}

typedef struct {
    const float *buf;
    size_t n;
    double sum[256];
} bw_ctx;

/* Sum of x[0, n) in 64 lanes: wide loads, enough independent adds to keep
 * the memory system busy; cloned per instruction set like the kernels. */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static double sum_floats(const float *x, size_t n) {
    float acc[64] = {0};
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int j = 0; j < 64; j++) acc[j] += x[i + j];
    double s = 0;
    for (int j = 0; j < 64; j++) s += acc[j];
    return s;
}

static void bw_task(void *arg, int ith, int nth) {
    bw_ctx *c = arg;
    size_t lo = c->n * (size_t)ith / (size_t)nth, hi = c->n * (size_t)(ith + 1) / (size_t)nth;
    c->sum[ith] = sum_floats(c->buf + lo, hi - lo);
}

static double read_gbps(ed_pool *p, int reps) {
    size_t n = (size_t)128 << 20;   /* 512 MiB of floats: far beyond the caches */
    float *buf = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 3);
    bw_ctx c = {buf, n, {0}};
    double t[64];
    ed_pool_run(p, bw_task, &c);
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_ms();
        ed_pool_run(p, bw_task, &c);
        t[r] = bench_now_ms() - t0;
    }
    free(buf);
    return (double)n * sizeof(float) / (bench_median(t, reps) * 1e6);
}

/* ---- model costs ---- */

static double encoder_flops(const whisper_hparams *h) {
    double T = h->n_audio_ctx, d = h->d, F = h->ffn, L = h->n_enc_layer;
    double conv = 2 * (2 * T) * d * (h->n_mels * 3) + 2 * T * d * (3 * d);
    double layer = 2 * T * (3 * d) * d + 2 * T * d * d + 2 * 2 * T * T * d + 2 * 2 * T * d * F;
    double cross = 2 * T * (h->n_dec_layer * 2 * d) * d;
    return conv + L * layer + cross;
}

/* Bytes one full-cache decode step reads: the decoder's weight matrices and
 * the output projection in their stored precision (es bytes per element),
 * the f32 cross K/V of every layer. */
static double decode_bytes(const whisper_hparams *h, double es) {
    double d = h->d, F = h->ffn, L = h->n_dec_layer, T = h->n_audio_ctx;
    double per_layer = (3 * d * d + d * d + d * d + d * d + 2 * d * F) * es;
    return L * per_layer + h->n_vocab * d * es + L * 2 * T * d * 4;
}

int main(int argc, char **argv) {
    const char *model = getenv("ENCDEC_MODEL"), *audio = NULL;
    int threads = 2, reps = 5, json = 0;
    char dflt[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-m") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(a, "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(a, "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--json")) json = 1;
        else if (a[0] != '-' && !audio) audio = a;
        else {
            fprintf(stderr, "usage: roofline [-m MODEL] [-t THREADS] [-r REPEATS] [--json] AUDIO\n");
            return 2;
        }
    }
    if (!model || !*model) {
        const char *home = getenv("HOME");
        snprintf(dflt, sizeof dflt, "%s/.cache/encdec/models/whisper-tiny.en", home ? home : ".");
        model = dflt;
    }
    if (!audio || threads < 1 || threads > 256 || reps < 1 || reps > 64) {
        fprintf(stderr, "roofline: need AUDIO; 1 <= -t <= 256, 1 <= -r <= 64\n");
        return 2;
    }
    whisper_model *wm = NULL;
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_session_params sp = {threads};
    float *pcm = NULL;
    size_t n = 0;
    if (whisper_load(&wm, model) || encdec_model_load(model, &m) || encdec_session_new(m, &sp, &s) ||
        encdec_audio_load(audio, 0, &pcm, &n)) {
        fprintf(stderr, "roofline: %s\n", encdec_last_error());
        return 1;
    }
    ed_pool *pool;
    if (ed_pool_new(&pool, threads)) return 1;
    const whisper_hparams *h = &wm->hp;
    /* the ceiling: the best of the encoder's own shapes and a large square one */
    int shapes[3][3] = {{h->n_audio_ctx, 3 * h->d, h->d}, {h->n_audio_ctx, h->ffn, h->d}, {1536, 1536, 1536}};
    double gf = 0;
    int best = 0;
    for (int k = 0; k < 3; k++) {
        double g = gemm_gflops(pool, shapes[k][0], shapes[k][1], shapes[k][2], reps);
        if (g > gf) gf = g, best = k;
    }
    double bw = read_gbps(pool, reps);

    double enc[64], tok[64];
    int n_tok = 0;
    for (int r = 0; r < reps; r++) {
        encdec_result *res = NULL;
        if (encdec_transcribe(s, pcm, n, NULL, &res)) {
            fprintf(stderr, "roofline: %s\n", encdec_last_error());
            return 1;
        }
        const encdec_timings *t = encdec_result_timings(res);
        enc[r] = t->encoder_ms / (t->n_windows ? t->n_windows : 1);
        tok[r] = t->decode_ms / t->n_tokens;
        n_tok = t->n_tokens;
        encdec_result_free(res);
    }
    double enc_ms = bench_median(enc, reps), tok_ms = bench_median(tok, reps);
    double flops = encoder_flops(h), bytes = decode_bytes(h, (double)k_w_size(wm->tok_emb.t));
    double enc_gf = flops / (enc_ms * 1e6), dec_gbps = bytes / (tok_ms * 1e6);
    double bound_ms = bytes / (bw * 1e6);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "model", model);
        cJSON_AddStringToObject(j, "build", encdec_build_info());
        cJSON_AddNumberToObject(j, "threads", threads);
        cJSON_AddNumberToObject(j, "gemm_gflops_ceiling", gf);
        cJSON_AddNumberToObject(j, "read_gbps_ceiling", bw);
        cJSON_AddNumberToObject(j, "encoder_ms", enc_ms);
        cJSON_AddNumberToObject(j, "encoder_gflop", flops / 1e9);
        cJSON_AddNumberToObject(j, "encoder_gflops", enc_gf);
        cJSON_AddNumberToObject(j, "encoder_fraction_of_ceiling", enc_gf / gf);
        cJSON_AddNumberToObject(j, "decode_ms_per_token", tok_ms);
        cJSON_AddNumberToObject(j, "decode_mb_per_token", bytes / 1e6);
        cJSON_AddNumberToObject(j, "decode_gbps", dec_gbps);
        cJSON_AddNumberToObject(j, "decode_bound_ms", bound_ms);
        cJSON_AddNumberToObject(j, "decode_over_bound", tok_ms / bound_ms);
        cJSON_AddNumberToObject(j, "n_tokens", n_tok);
        char *o = cJSON_PrintUnformatted(j);
        puts(o);
        free(o);
        cJSON_Delete(j);
    } else {
        printf("%s, %d threads, medians of %d\n", encdec_build_info(), threads, reps);
        printf("ceilings   fp32 GEMM %.1f GFLOP/s (best of 3 shapes: [%d,%d] x [%d,%d]), read %.1f GB/s\n",
               gf, shapes[best][0], shapes[best][2], shapes[best][2], shapes[best][1], bw);
        printf("encoder    %.1f ms for %.2f GFLOP: %.1f GFLOP/s = %.0f%% of the GEMM ceiling\n", enc_ms,
               flops / 1e9, enc_gf, 100 * enc_gf / gf);
        printf("decode     %.2f ms/token reading %.1f MB: %.1f GB/s = %.0f%% of the bandwidth; "
               "bound %.2f ms (%.2fx)\n", tok_ms, bytes / 1e6, dec_gbps, 100 * dec_gbps / bw, bound_ms,
               tok_ms / bound_ms);
    }
    ed_pool_free(pool);
    encdec_free(pcm);
    encdec_session_free(s);
    encdec_model_free(m);
    whisper_free(wm);
    return 0;
}
