/* t5_bench.c - encdec's T5 generation speed, correctness first.
 *
 *   build/bench/t5_bench -m DIR [-t THREADS] [-r REPEATS] [-n MAX_NEW]
 *                        [--compute f32|bf16|int8] [--cross-kv f32|f16|bf16] [--json] [TEXT...]
 *
 * Checks that the three cache modes give identical tokens (greedy and beam
 * 4), then reports medians over the repeats of: encoder ms (one input,
 * incl. the cross-cache fill), decode ms per token for greedy in each cache
 * mode, beam 4 (ms per position, for 4 beams) against greedy, and batch-8
 * greedy throughput (the first input alone, then all; 8 built-in inputs
 * unless TEXT arguments are given). bench/t5_vs_transformers.py runs this
 * and the same model and inputs (read from the --json output) in Hugging
 * Face transformers in one go and prints the ratios.
 */
#include "encdec.h"
#include "stats.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *DEFAULT_INPUTS[8] = {
    "translate English to German: The house is wonderful and the garden is green.",
    "summarize: The quick brown fox jumps over the lazy dog while the cat sleeps.",
    "question: What is the capital of France? context: Paris is the capital of France.",
    "translate English to French: I would like a cup of coffee, please.",
    "cola sentence: The book was written by the author last year.",
    "translate English to Romanian: Where is the train station?",
    "summarize: Encoder-decoder models run the encoder once and the decoder per token.",
    "stsb sentence1: A man is playing a guitar. sentence2: A person plays music.",
};

typedef struct {
    double enc_ms, dec_ms;   /* medians */
    int n_tokens, n_steps;
    int *ids;                /* first run's tokens, all sequences */
    int n_ids;
} run_res;

static int run(encdec_session *s, const char *const *in, int n_in, encdec_generate_params p,
               int reps, run_res *out) {
    double enc[1000], dec[1000];
    memset(out, 0, sizeof *out);
    for (int i = 0; i < reps; i++) {
        encdec_result *r = NULL;
        encdec_status st = encdec_generate(s, in, n_in, &p, &r);
        if (st) {
            fprintf(stderr, "t5_bench: %s: %s\n", encdec_status_str(st), encdec_last_error());
            return 0;
        }
        const encdec_timings *t = encdec_result_timings(r);
        enc[i] = t->encoder_ms;
        dec[i] = t->decode_ms;
        if (i == 0) {
            out->n_tokens = t->n_tokens;
            out->n_steps = t->n_steps;
            out->n_ids = encdec_result_n_tokens(r);
            out->ids = malloc(sizeof(int) * (size_t)(out->n_ids + 1));
            for (int k = 0; k < out->n_ids; k++) out->ids[k] = encdec_result_token(r, k)->id;
        }
        encdec_result_free(r);
    }
    out->enc_ms = bench_median(enc, reps);
    out->dec_ms = bench_median(dec, reps);
    return 1;
}

static int same(const run_res *a, const run_res *b) {
    return a->n_ids == b->n_ids && !memcmp(a->ids, b->ids, sizeof(int) * (size_t)a->n_ids);
}

int main(int argc, char **argv) {
    const char *model = NULL;
    int threads = 1, reps = 5, max_new = 64, json = 0, first = argc;
    encdec_model_params mp = {ENCDEC_COMPUTE_F32};
    encdec_session_params sp = {1, ENCDEC_KV_F32};
    const char *compute = "f32", *kv = "f32";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-m") && v) model = argv[++i];
        else if (!strcmp(a, "-t") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "-r") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "-n") && v) max_new = atoi(argv[++i]);
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--compute") && v) compute = argv[++i];
        else if (!strcmp(a, "--cross-kv") && v) kv = argv[++i];
        else if (a[0] != '-') { first = i; break; }
        else {
            fprintf(stderr, "usage: t5_bench -m DIR [-t THREADS] [-r REPEATS] [-n MAX_NEW] [--compute "
                            "f32|bf16|int8] [--cross-kv f32|f16|bf16] [--json] [TEXT...]\n");
            return 2;
        }
    }
    if (!model || threads < 1 || threads > 256 || reps < 1 || reps > 1000 || max_new < 1 || max_new > 4096) {
        fprintf(stderr, "t5_bench: need -m DIR; 1 <= -t <= 256, 1 <= -r <= 1000, 1 <= -n <= 4096\n");
        return 2;
    }
    mp.compute = !strcmp(compute, "bf16") ? ENCDEC_COMPUTE_BF16 : !strcmp(compute, "int8") ? ENCDEC_COMPUTE_INT8
                 : !strcmp(compute, "f32") ? ENCDEC_COMPUTE_F32 : (encdec_compute)-1;
    sp.cross_kv = !strcmp(kv, "f16") ? ENCDEC_KV_F16 : !strcmp(kv, "bf16") ? ENCDEC_KV_BF16
                  : !strcmp(kv, "f32") ? ENCDEC_KV_F32 : (encdec_kv_type)-1;
    sp.n_threads = threads;
    const char *const *in = first < argc ? (const char *const *)argv + first : DEFAULT_INPUTS;
    int n_in = first < argc ? argc - first : 8;
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    if (encdec_model_load_ex(model, &mp, &m) || encdec_session_new(m, &sp, &s)) {
        fprintf(stderr, "t5_bench: %s\n", encdec_last_error());
        return 1;
    }
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = max_new;
    run_res g[3], beam[3], batch;
    encdec_kv_mode modes[3] = {ENCDEC_KV_FULL, ENCDEC_KV_SELF, ENCDEC_KV_NONE};
    int ok = 1;
    for (int k = 0; k < 3 && ok; k++) {
        p.kv_mode = modes[k];
        p.num_beams = 1;
        ok = run(s, in, 1, p, k ? (reps + 1) / 2 : reps, &g[k]);
        p.num_beams = 4;
        if (ok) ok = run(s, in, 1, p, k ? 1 : reps, &beam[k]);
    }
    p.kv_mode = ENCDEC_KV_FULL;
    p.num_beams = 1;
    if (ok) ok = run(s, in, n_in, p, reps, &batch);
    if (!ok) return 1;
    int ident = same(&g[0], &g[1]) && same(&g[0], &g[2]) && same(&beam[0], &beam[1]) &&
                same(&beam[0], &beam[2]);
    if (!ident) {
        fprintf(stderr, "t5_bench: the cache modes disagree: no timings reported\n");
        return 1;
    }
    double tok_full = g[0].dec_ms / g[0].n_tokens;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "engine", "encdec");
    cJSON_AddStringToObject(j, "build", encdec_build_info());
    cJSON_AddNumberToObject(j, "threads", threads);
    cJSON_AddNumberToObject(j, "max_new_tokens", max_new);
    cJSON_AddNumberToObject(j, "encoder_ms", g[0].enc_ms);
    cJSON *pt = cJSON_AddObjectToObject(j, "greedy_ms_per_token");
    cJSON_AddNumberToObject(pt, "full", tok_full);
    cJSON_AddNumberToObject(pt, "self", g[1].dec_ms / g[1].n_tokens);
    cJSON_AddNumberToObject(pt, "none", g[2].dec_ms / g[2].n_tokens);
    cJSON_AddNumberToObject(j, "greedy_tokens", g[0].n_tokens);
    cJSON_AddNumberToObject(j, "greedy_tokens_per_s", 1000.0 * g[0].n_tokens / (g[0].enc_ms + g[0].dec_ms));
    cJSON_AddNumberToObject(j, "beam4_ms_per_step", beam[0].dec_ms / beam[0].n_steps);
    cJSON_AddNumberToObject(j, "beam4_steps", beam[0].n_steps);
    cJSON_AddNumberToObject(j, "greedy_ms_per_step", g[0].dec_ms / g[0].n_steps);
    cJSON_AddNumberToObject(j, "beam4_total_ms", beam[0].enc_ms + beam[0].dec_ms);
    cJSON_AddNumberToObject(j, "batch_inputs", n_in);
    cJSON_AddNumberToObject(j, "batch_tokens", batch.n_tokens);
    cJSON_AddNumberToObject(j, "batch_tokens_per_s", 1000.0 * batch.n_tokens / (batch.enc_ms + batch.dec_ms));
    cJSON *inp = cJSON_AddArrayToObject(j, "inputs");
    for (int k = 0; k < n_in; k++) cJSON_AddItemToArray(inp, cJSON_CreateString(in[k]));
    cJSON *ids = cJSON_AddArrayToObject(j, "greedy_ids");
    for (int k = 0; k < g[0].n_ids; k++) cJSON_AddItemToArray(ids, cJSON_CreateNumber(g[0].ids[k]));
    if (json) {
        char *t = cJSON_PrintUnformatted(j);
        puts(t);
        free(t);
    } else {
        printf("%s, %d threads, %d new tokens, medians of %d\n", encdec_build_info(), threads, max_new, reps);
        printf("cache modes identical (greedy and beam 4): yes\n");
        printf("encoder (1 input, incl. cross cache): %8.2f ms\n", g[0].enc_ms);
        printf("greedy ms/token  full %.3f  self %.3f (%.1fx)  none %.3f (%.1fx)\n", tok_full,
               g[1].dec_ms / g[1].n_tokens, g[1].dec_ms / g[0].dec_ms, g[2].dec_ms / g[2].n_tokens,
               g[2].dec_ms / g[0].dec_ms);
        printf("beam 4 ms/step   %.3f  (greedy %.3f: %.2fx for 4x the sequences)\n",
               beam[0].dec_ms / beam[0].n_steps, g[0].dec_ms / g[0].n_steps,
               (beam[0].dec_ms / beam[0].n_steps) / (g[0].dec_ms / g[0].n_steps));
        printf("greedy tokens/s  %.1f (1 input)   %.1f (%d inputs batched)\n",
               1000.0 * g[0].n_tokens / (g[0].enc_ms + g[0].dec_ms),
               1000.0 * batch.n_tokens / (batch.enc_ms + batch.dec_ms), n_in);
    }
    cJSON_Delete(j);
    for (int k = 0; k < 3; k++) free(g[k].ids), free(beam[k].ids);
    free(batch.ids);
    encdec_session_free(s);
    encdec_model_free(m);
    return 0;
}
