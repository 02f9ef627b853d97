/* roofline.c - where encdec's Whisper stands against this machine's own
 * ceilings, per precision mode, all measured in one run.
 *
 *   build/bench/roofline [-m MODEL] [-t THREADS] [-r REPEATS] [--configs LIST]
 *                        [--isa SET[,-EXT...]] [--wer DIR] [--json] AUDIO
 *
 * --isa caps the kernel sets of everything measured, ceilings included (the
 * register peak in ymm registers at avx2 or below), and ,-EXT turns an
 * extension off (encdec_isa_disable_ext): `--isa avx2,-avx-vnni` measures,
 * on an AVX-512 machine, the code an AVX2-only CPU without AVX-VNNI runs
 * (not that CPU: its clock, caches and memory stay this machine's).
 *
 * Ceilings, measured first with the session's kind of thread pool:
 *   - the register peak of f32 FMA and of bf16 dot products (vdpbf16ps),
 *     chains that never touch memory: what the cores can do at all;
 *   - the matrix-product rate per mode, the best of the encoder's shapes
 *     [1500, d] x [d, 3d], [1500, d] x [d, F] and a 1536^3 product: f32 as
 *     the better of BLIS and our kern/gemm.h, bf16 through kern/gemm.h,
 *     int8 through kern/q8.h (its fraction uses the int8 rate);
 *   - the read bandwidth: every thread sums its slice of a 512 MiB buffer.
 * Then for each configuration COMPUTE:CROSSKV (default
 * f32:f32,f32:f16,bf16:bf16,int8:f16), greedy and beam 5 on AUDIO:
 *   encoder ms and GFLOP/s as a fraction of that mode's GEMM ceiling
 *   (FLOPs counted from the hyper-parameters: convs, projections, attention,
 *   MLP, the cross-cache fill);
 *   decode ms per step against its memory-traffic bound: (the decoder's
 *   weight matrices and the output projection as stored in this mode + the
 *   cross K/V of every layer in its storage type) / the read bandwidth.
 * With --wer DIR (../shared/audio), every utterance with a reference is
 * transcribed (greedy) in each configuration: word error rate, and how many
 * transcripts equal the first configuration's.
 */
#pragma GCC optimize("O3")
#include "encdec.h"
#include "bandwidth.h"
#include "stats.h"
#include "wer.h"
#include "api/api.h"
#include "base/isa.h"
#include "base/pool.h"
#include "core/ops.h"
#include "kern/kern.h"
#include "kern/q8.h"
#include "models/whisper.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* ---- ceilings ---- */

/* GFLOP/s of op_matmul_w over the pool with weights in type t (lowp as
 * given), or of BLIS (op_matmul_ex) when blis. int8 weights are packed
 * first (kern/q8.h). */
static double gemm_gflops(ed_pool *p, int M, int N, int K, int reps, k_wtype t, int lowp, int blis) {
    float *x = malloc(sizeof(float) * (size_t)M * K), *w = malloc(sizeof(float) * (size_t)N * K),
          *y = malloc(sizeof(float) * (size_t)M * N);
    void *wq = NULL;
    for (size_t i = 0; i < (size_t)M * K; i++) x[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = (float)(i % 5) * 0.1f;
    k_w kw = {w, K_F32, 0};
    if (t == K_BF16) {
        uint16_t *h = malloc(2 * (size_t)N * K);
        for (size_t i = 0; i < (size_t)N * K; i++) {
            uint32_t u;
            memcpy(&u, &w[i], 4);
            h[i] = (uint16_t)(u >> 16);
        }
        wq = h;
        kw = (k_w){h, K_BF16, lowp};
    } else if (t == K_Q8) {
        wq = aligned_alloc(64, (k_q8_bytes(N, K) + 63) & ~(size_t)63);
        kw = (k_w){k_q8_pack(wq, kw, N, K).data, K_Q8, 0};
    }
    double tm[64];
    for (int r = -1; r < reps; r++) {   /* r = -1: warm-up */
        double t0 = bench_now_ms();
        if (blis) op_matmul_ex(p, y, N, x, K, w, K, NULL, M, N, K);
        else op_matmul_w(p, y, N, x, K, kw, NULL, M, N, K);
        if (r >= 0) tm[r] = bench_now_ms() - t0;
    }
    free(x), free(w), free(y), free(wq);
    return 2.0 * M * N * K / (bench_median(tm, reps) * 1e6);
}

/* Register peaks: 12 independent accumulator chains per thread for ~0.2 s. */
typedef struct {
    int bf16, ymm;   /* ymm: AVX2 registers even where AVX-512 exists */
    double flops[256];
} peak_ctx;

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static double peak_f32(long iters) {
    __m512 a[12], b = _mm512_set1_ps(1e-7f), c = _mm512_set1_ps(0.999f);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], c, b);
    __m512 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return (double)iters * 12 * 16 * 2;
}

/* The same in ymm registers (AVX2 CPUs: 2 FMA pipes x 8 lanes). */
__attribute__((target("avx2,fma"))) static double peak_f32_avx2(long iters) {
    __m256 a[12], b = _mm256_set1_ps(1e-7f), c = _mm256_set1_ps(0.999f);
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], c, b);
    __m256 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, a[i]);
    float out[8];
    _mm256_storeu_ps(out, s);
    volatile float sink = out[0];
    (void)sink;
    return (double)iters * 12 * 8 * 2;
}

__attribute__((target("avx512f,avx512bf16"))) static double peak_bf16(long iters) {
    __m512 a[12];
    __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f80), c = (__m512bh)_mm512_set1_epi16(0x3380);
    for (int i = 0; i < 12; i++) a[i] = _mm512_setzero_ps();
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 12; i++) a[i] = _mm512_dpbf16_ps(a[i], b, c);
    __m512 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return (double)iters * 12 * 32 * 2;
}
#endif

static void peak_task(void *arg, int ith, int nth) {
    peak_ctx *c = arg;
    c->flops[ith] = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (!c->ymm && (c->bf16 ? __builtin_cpu_supports("avx512bf16") : __builtin_cpu_supports("avx512f")))
        c->flops[ith] = c->bf16 ? peak_bf16(20L << 20) : peak_f32(20L << 20);
    else if (!c->bf16 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        c->flops[ith] = peak_f32_avx2(20L << 20);
#endif
}

/* GFLOP/s of all threads together (0: the instructions are missing). */
static double peak_gflops(ed_pool *p, int bf16, int ymm, int reps) {
    peak_ctx c = {bf16, ymm, {0}};
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_ms();
        ed_pool_run(p, peak_task, &c);
        double ms = bench_now_ms() - t0, f = 0;
        for (int i = 0; i < ed_pool_size(p); i++) f += c.flops[i];
        if (f / (ms * 1e6) > best) best = f / (ms * 1e6);
    }
    return best;
}

static double read_gbps(ed_pool *p, int reps) {
    size_t n = (size_t)128 << 20;   /* 512 MiB of floats: far beyond the caches */
    float *buf = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 3);
    bench_bw c = {buf, n, {0}};
    double g[64];
    bench_bw_pass(p, &c);   /* warm-up */
    for (int r = 0; r < reps; r++) g[r] = bench_bw_pass(p, &c);
    free(buf);
    return bench_median(g, reps);
}

/* ---- model costs ---- */

static double encoder_flops(const whisper_hparams *h) {
    double T = h->n_audio_ctx, d = h->d, F = h->ffn, L = h->n_enc_layer;
    double conv = 2 * (2 * T) * d * (h->n_mels * 3) + 2 * T * d * (3 * d);
    double layer = 2 * T * (3 * d) * d + 2 * T * d * d + 2 * 2 * T * T * d + 2 * 2 * T * d * F;
    double cross = 2 * T * (h->n_dec_layer * 2 * d) * d;
    return conv + L * layer + cross;
}

static double mat_bytes(k_w w, int N, int K) {
    return w.t == K_Q8 ? (double)k_q8_bytes(N, K) : (double)N * K * k_w_size(w.t);
}

/* Bytes one full-cache decode step reads: the decoder's weight matrices and
 * the output projection as this model holds them, and the cross K/V of
 * every layer in the cache's element type (kv_bytes each). */
static double decode_bytes(whisper_model *m, double kv_bytes) {
    const whisper_hparams *h = &m->hp;
    int n = whisper_matrices(m, NULL, 0);
    wl_mat *mats = calloc((size_t)n, sizeof *mats);
    whisper_matrices(m, mats, n);
    double b = 0;
    for (int i = 0; i < n; i++) {
        int enc = i < 4 * h->n_enc_layer, xkv = mats[i].w == &m->w_xkv;
        if (!enc && !xkv) b += mat_bytes(*mats[i].w, mats[i].N, mats[i].K);
    }
    free(mats);
    return b + (double)h->n_dec_layer * 2 * h->n_audio_ctx * h->d * kv_bytes;
}

/* ---- configurations ---- */

typedef struct {
    encdec_compute compute;
    encdec_kv_type kv;
    char name[32];
    double enc_ms, tok_ms[2], mb, bound_ms, wer;
    int n_steps[2], same, n_utt, words, edits;
} config;

static int parse_configs(const char *s, config *c, int max) {
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
        char *colon = strchr(tok, ':');
        const char *kv = colon ? colon + 1 : "f32";
        if (colon) *colon = 0;
        config *k = &c[n];
        memset(k, 0, sizeof *k);
        if (!strcmp(tok, "f32")) k->compute = ENCDEC_COMPUTE_F32;
        else if (!strcmp(tok, "bf16")) k->compute = ENCDEC_COMPUTE_BF16;
        else if (!strcmp(tok, "int8")) k->compute = ENCDEC_COMPUTE_INT8;
        else return -1;
        if (!strcmp(kv, "f32")) k->kv = ENCDEC_KV_F32;
        else if (!strcmp(kv, "f16")) k->kv = ENCDEC_KV_F16;
        else if (!strcmp(kv, "bf16")) k->kv = ENCDEC_KV_BF16;
        else return -1;
        snprintf(k->name, sizeof k->name, "%s:%s", tok, kv);
        n++;
    }
    return n;
}

/* Medians over reps of encoder ms per window and decode ms per step. */
static int time_transcribe(encdec_session *s, const float *pcm, size_t n, int beam, int reps,
                           double *enc_ms, double *tok_ms, int *n_steps, char **text) {
    double enc[64], tok[64];
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.beam_size = beam;
    for (int r = 0; r < reps; r++) {
        encdec_result *res = NULL;
        if (encdec_transcribe(s, pcm, n, &tp, &res)) return 0;
        const encdec_timings *t = encdec_result_timings(res);
        enc[r] = t->encoder_ms / (t->n_encodes ? t->n_encodes : 1);   /* + language detection's */
        tok[r] = t->decode_ms / (t->n_steps ? t->n_steps : 1);
        *n_steps = t->n_steps;
        if (r == 0 && text) *text = strdup(encdec_result_text(res));
        encdec_result_free(res);
    }
    if (enc_ms) *enc_ms = bench_median(enc, reps);
    *tok_ms = bench_median(tok, reps);
    return 1;
}

static int run_config(config *c, const char *model, encdec_isa isa, int threads, int reps,
                      const float *pcm, size_t n, double bw, const wer_set *ws, char **first_texts) {
    encdec_model_params mp = {c->compute, isa};
    encdec_session_params sp = {threads, c->kv};
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    if (encdec_model_load_ex(model, &mp, &m) || encdec_session_new(m, &sp, &s)) {
        encdec_model_free(m);
        return 0;
    }
    int ok = time_transcribe(s, pcm, n, 1, reps, &c->enc_ms, &c->tok_ms[0], &c->n_steps[0], NULL) &&
             time_transcribe(s, pcm, n, 5, reps, NULL, &c->tok_ms[1], &c->n_steps[1], NULL);
    double kvb = c->kv == ENCDEC_KV_F32 ? 4 : 2;
    c->mb = decode_bytes(m->w, kvb) / 1e6;
    c->bound_ms = c->mb * 1e6 / (bw * 1e6);
    for (int i = 0; ok && ws && i < ws->n; i++) {
        float *a = NULL;
        size_t na = 0;
        char *text = NULL;
        double tm;
        int steps;
        if (encdec_audio_load(ws->path[i], 0, &a, &na) ||
            !time_transcribe(s, a, na, 1, 1, NULL, &tm, &steps, &text)) {
            ok = 0;
        } else {
            c->n_utt++;
            c->words += wer_words(ws->ref[i]);
            c->edits += wer_edits(text, ws->ref[i]);
            if (!first_texts[i]) first_texts[i] = strdup(text);
            c->same += strcmp(first_texts[i], text) == 0;
        }
        free(text);
        encdec_free(a);
    }
    c->wer = c->words ? (double)c->edits / c->words : 0;
    encdec_session_free(s);
    encdec_model_free(m);
    return ok;
}

/* SET[,-EXT...] as encdec's --isa: the set, or -1; the extensions named
 * after it are turned off for the process. */
static int parse_isa(const char *s) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    char *comma = strchr(buf, ',');
    if (comma) *comma = 0;
    int v = encdec_isa_parse(buf);
    if (v < 0 || !comma) return v;
    char off[128] = "";
    for (char *t = strtok(comma + 1, ","); t; t = strtok(NULL, ",")) {
        if (t[0] != '-') return -1;
        if (*off) strncat(off, ",", sizeof off - strlen(off) - 1);
        strncat(off, t + 1, sizeof off - strlen(off) - 1);
    }
    return encdec_isa_disable_ext(off) ? -1 : v;
}

int main(int argc, char **argv) {
    const char *model = getenv("ENCDEC_MODEL"), *audio = NULL, *wer_dir = NULL, *isa_arg = "auto";
    const char *configs = "f32:f32,f32:f16,bf16:bf16,int8:f16";
    int threads = 2, reps = 5, json = 0, isa = ENCDEC_ISA_AUTO;
    char dflt[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-m") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(a, "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(a, "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--configs") && i + 1 < argc) configs = argv[++i];
        else if (!strcmp(a, "--wer") && i + 1 < argc) wer_dir = argv[++i];
        else if (!strcmp(a, "--isa") && i + 1 < argc) isa = parse_isa(isa_arg = argv[++i]);
        else if (!strcmp(a, "--json")) json = 1;
        else if (a[0] != '-' && !audio) audio = a;
        else {
            fprintf(stderr, "usage: roofline [-m MODEL] [-t THREADS] [-r REPEATS] [--configs "
                            "COMPUTE:KV,...] [--isa SET[,-EXT...]] [--wer DIR] [--json] AUDIO\n");
            return 2;
        }
    }
    if (!model || !*model) {
        const char *home = getenv("HOME");
        snprintf(dflt, sizeof dflt, "%s/.cache/encdec/models/whisper-tiny.en", home ? home : ".");
        model = dflt;
    }
    config cfg[8];
    int n_cfg = parse_configs(configs, cfg, 8);
    if (!audio || threads < 1 || threads > 256 || reps < 1 || reps > 64 || n_cfg <= 0 || isa < 0) {
        fprintf(stderr, "roofline: need AUDIO; 1 <= -t <= 256, 1 <= -r <= 64; configs like "
                        "f32:f32,bf16:bf16,int8:f16; --isa like avx2 or avx2,-avx-vnni\n");
        return 2;
    }
    whisper_model *wm = NULL;
    float *pcm = NULL;
    size_t n = 0;
    if (whisper_load(&wm, model) || encdec_audio_load(audio, 0, &pcm, &n)) {
        fprintf(stderr, "roofline: %s\n", encdec_last_error());
        return 1;
    }
    wer_set *ws = NULL;
    if (wer_dir) {
        ws = calloc(1, sizeof *ws);
        if (!ws || !wer_load(ws, wer_dir)) {
            fprintf(stderr, "roofline: no references under %s\n", wer_dir);
            return 1;
        }
    }
    ed_pool *pool;
    if (ed_pool_new(&pool, threads)) return 1;
    int lim = isa == ENCDEC_ISA_AUTO ? k_isa_cpu() : k_isa_parse(encdec_isa_name(isa));
    if (lim < 0 || lim > k_isa_cpu()) {
        fprintf(stderr, "roofline: this CPU has no kernel set %s\n", encdec_isa_name(isa));
        return 1;
    }
    ed_pool_set_isa(pool, lim);   /* the ceilings run the kernels the configurations will */
    int old_lim = ed_isa_swap(lim), ymm = k_isa() <= K_ISA_VEC;
    const whisper_hparams *h = &wm->hp;
    /* ceilings: the best of the encoder's own shapes and a large square one */
    int shapes[3][3] = {{h->n_audio_ctx, 3 * h->d, h->d}, {h->n_audio_ctx, h->ffn, h->d}, {1536, 1536, 1536}};
    double g_blis = 0, g_f32 = 0, g_bf16 = 0, g_int8 = 0;
    for (int k = 0; k < 3; k++) {
        int M = shapes[k][0], N = shapes[k][1], K = shapes[k][2];
        double g;
        if ((g = gemm_gflops(pool, M, N, K, reps, K_F32, 0, 1)) > g_blis) g_blis = g;
        if ((g = gemm_gflops(pool, M, N, K, reps, K_F32, 0, 0)) > g_f32) g_f32 = g;
        if ((g = gemm_gflops(pool, M, N, K, reps, K_BF16, 1, 0)) > g_bf16) g_bf16 = g;
        if ((g = gemm_gflops(pool, M, N, K, reps, K_Q8, 0, 0)) > g_int8) g_int8 = g;
    }
    double ceil_f32 = g_f32 > g_blis ? g_f32 : g_blis;
    double pk_f32 = peak_gflops(pool, 0, ymm, 3), pk_bf16 = ymm ? 0 : peak_gflops(pool, 1, 0, 3);
    double bw = read_gbps(pool, reps);
    ed_isa_swap(old_lim);
    ed_pool_free(pool);

    char **first = ws ? calloc((size_t)ws->n, sizeof *first) : NULL;
    double flops = encoder_flops(h);
    for (int i = 0; i < n_cfg; i++)
        if (!run_config(&cfg[i], model, (encdec_isa)isa, threads, reps, pcm, n, bw, ws, first)) {
            fprintf(stderr, "roofline: %s: %s\n", cfg[i].name, encdec_last_error());
            return 1;
        }
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "model", model);
        cJSON_AddStringToObject(j, "audio", audio);
        cJSON_AddStringToObject(j, "build", encdec_build_info());
        cJSON_AddStringToObject(j, "isa", isa_arg);
        cJSON_AddNumberToObject(j, "threads", threads);
        cJSON_AddNumberToObject(j, "peak_f32_gflops", pk_f32);
        cJSON_AddNumberToObject(j, "peak_bf16_gflops", pk_bf16);
        cJSON_AddNumberToObject(j, "gemm_blis_gflops", g_blis);
        cJSON_AddNumberToObject(j, "gemm_f32_gflops", g_f32);
        cJSON_AddNumberToObject(j, "gemm_bf16_gflops", g_bf16);
        cJSON_AddNumberToObject(j, "gemm_int8_gops", g_int8);
        cJSON_AddNumberToObject(j, "read_gbps", bw);
        cJSON_AddNumberToObject(j, "encoder_gflop", flops / 1e9);
        cJSON *arr = cJSON_AddArrayToObject(j, "configs");
        for (int i = 0; i < n_cfg; i++) {
            const config *c = &cfg[i];
            double ceil = c->compute == ENCDEC_COMPUTE_BF16 ? g_bf16 : c->compute == ENCDEC_COMPUTE_INT8 ? g_int8 : ceil_f32;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "config", c->name);
            cJSON_AddNumberToObject(o, "encoder_ms", c->enc_ms);
            cJSON_AddNumberToObject(o, "encoder_gflops", flops / (c->enc_ms * 1e6));
            cJSON_AddNumberToObject(o, "encoder_fraction", flops / (c->enc_ms * 1e6) / ceil);
            cJSON_AddNumberToObject(o, "decode_mb_per_step", c->mb);
            cJSON_AddNumberToObject(o, "decode_bound_ms", c->bound_ms);
            cJSON_AddNumberToObject(o, "greedy_ms_per_step", c->tok_ms[0]);
            cJSON_AddNumberToObject(o, "greedy_over_bound", c->tok_ms[0] / c->bound_ms);
            cJSON_AddNumberToObject(o, "beam5_ms_per_step", c->tok_ms[1]);
            cJSON_AddNumberToObject(o, "beam5_over_greedy", c->tok_ms[1] / c->tok_ms[0]);
            if (ws) {
                cJSON_AddNumberToObject(o, "wer", c->wer);
                cJSON_AddNumberToObject(o, "same_as_first", c->same);
                cJSON_AddNumberToObject(o, "utterances", c->n_utt);
            }
            cJSON_AddItemToArray(arr, o);
        }
        char *o = cJSON_PrintUnformatted(j);
        puts(o);
        free(o);
        cJSON_Delete(j);
    } else {
        printf("%s, %d threads, medians of %d, --isa %s\n", encdec_build_info(), threads, reps, isa_arg);
        printf("peaks      f32 FMA %.0f GFLOP/s, bf16 dot %.0f GFLOP/s (registers only)\n", pk_f32, pk_bf16);
        printf("GEMM       f32 %.0f GFLOP/s (BLIS %.0f, ours %.0f), bf16 %.0f, int8 %.0f GOP/s "
               "(best of [%d,%d]x[%d,%d], [%d,%d]x[%d,%d], 1536^3)\n", ceil_f32, g_blis, g_f32, g_bf16,
               g_int8, shapes[0][0], shapes[0][2], shapes[0][2], shapes[0][1], shapes[1][0],
               shapes[1][2], shapes[1][2], shapes[1][1]);
        printf("read       %.1f GB/s\n", bw);
        printf("encoder    %.2f GFLOP per 30 s window\n\n", flops / 1e9);
        printf("%-10s %9s %7s %6s | %8s %8s %6s | %8s %6s", "compute:kv", "enc ms", "GFLOP/s", "ceil",
               "MB/step", "greedy", "/bound", "beam5", "/greedy");
        if (ws) printf(" | %6s %s", "WER", "same");
        printf("\n");
        for (int i = 0; i < n_cfg; i++) {
            const config *c = &cfg[i];
            double ceil = c->compute == ENCDEC_COMPUTE_BF16 ? g_bf16 : c->compute == ENCDEC_COMPUTE_INT8 ? g_int8 : ceil_f32;
            double gf = flops / (c->enc_ms * 1e6);
            printf("%-10s %9.1f %7.0f %5.0f%% | %8.1f %8.2f %5.2fx | %8.2f %5.2fx", c->name, c->enc_ms, gf,
                   100 * gf / ceil, c->mb, c->tok_ms[0], c->tok_ms[0] / c->bound_ms, c->tok_ms[1],
                   c->tok_ms[1] / c->tok_ms[0]);
            if (ws) printf(" | %5.2f%% %d/%d", 100 * c->wer, c->same, c->n_utt);
            printf("\n");
        }
        printf("\nenc ms: per 30 s window incl. the cross K/V fill; ceil: the mode's GEMM ceiling; "
               "greedy, beam5: ms per decode step;\n/bound: over (MB/step / read bandwidth)");
        if (ws) printf("; WER over %d utterances, same: transcripts equal to %s's", ws->n, cfg[0].name);
        printf("\n");
    }
    for (int i = 0; ws && i < ws->n; i++) free(first[i]);
    free(first);
    free(ws);
    encdec_free(pcm);
    whisper_free(wm);
    return 0;
}
