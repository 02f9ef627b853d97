/* test_t5_golden.c - the T5 family against Hugging Face transformers, on
 * the four seeded random-weight models of tools/gen_tiny_t5.py (T5 v1.0
 * ReLU + tied embeddings; v1.1 gated-GELU, inner dim != d_model, bf16;
 * mT5 with a byte-fallback vocabulary, f16; umT5 with a bias per layer).
 * Goldens: tools/golden_t5.py (tests/data/t5-golden/<variant>.*).
 *
 * Per variant: tokenizer ids of the inputs; the relative position buckets
 * (4 configurations, 1200 distances) and bias tables; the encoder output of
 * a batch of 3 inputs of different lengths (packed here, padded in HF);
 * teacher-forced logits at every decode step; greedy and beam-search tokens
 * and beam scores, in each cache mode (identical across modes); the public
 * API's texts.
 */
#include "check.h"
#include "modeldir.h"
#include "golden.h"
#include "screen_check.h"

#include "base/isa.h"
#include "base/json.h"
#include "decode/search.h"
#include "kern/q8.h"
#include "models/t5.h"
#include "api/api.h"
#include "decode/runner.h"

#include <stdlib.h>
#include <string.h>

/* The cache modes checked (full, self, none). Under qemu (the ARM64 build)
 * full and self: no cache runs the same kernels, and natively it runs */
#ifdef ED_EMULATED
#define N_MODES 2
#else
#define N_MODES 3
#endif

#define ENC_TOL 1e-4
/* Logits reach ~110 on these peaky models; HF itself (batch vs single,
 * cache vs none, f32 vs f64) moves them by up to 1.2e-5 of the row's largest
 * |logit|. We check |diff| <= LOGIT_TOL x max(1, max |row|). */
#define LOGIT_TOL 3e-5
#define SCORE_TOL 1e-4

typedef struct {
    int B, T_max, N, V;
    int *ids, *start, *len;    /* packed */
    int n_tokens;
    cJSON *js;
    ed_wtab *g;
} golden;

static const char *cli_kv(encdec_kv_mode m) {
    return m == ENCDEC_KV_FULL ? "full" : m == ENCDEC_KV_SELF ? "self" : "none";
}

static const int *gi(const ed_wtab *g, const char *name) {
    return golden_need(g, name)->data;
}
static const float *gf(const ed_wtab *g, const char *name) {
    return golden_need(g, name)->data;
}

/* The inputs: tokenizer ids against HF's, then packed. */
static void check_inputs(const t5_model *m, golden *G) {
    const ed_tensor *ids = golden_need(G->g, "input_ids");
    G->B = (int)ids->shape[0];
    G->T_max = (int)ids->shape[1];
    const int *lens = gi(G->g, "input_len");
    const cJSON *texts = cJSON_GetObjectItem(G->js, "inputs");
    G->ids = calloc((size_t)G->B * G->T_max, sizeof(int));
    G->start = calloc((size_t)G->B, sizeof(int));
    G->len = calloc((size_t)G->B, sizeof(int));
    for (int b = 0; b < G->B; b++) {
        const char *text = cJSON_GetArrayItem(texts, b)->valuestring;
        int *got = NULL, n = 0;
        CHECK_EQ_INT(spm_encode(m->tok, text, strlen(text), 1, &got, &n), ENCDEC_OK);
        CHECK_EQ_INT(n, lens[b]);
        int same = n == lens[b];
        for (int t = 0; same && t < n; t++) same = got[t] == ((const int *)ids->data)[b * G->T_max + t];
        CHECK(same);
        free(got);
        G->start[b] = G->n_tokens;
        G->len[b] = lens[b];
        memcpy(G->ids + G->n_tokens, (const int *)ids->data + b * G->T_max, (size_t)lens[b] * sizeof(int));
        G->n_tokens += lens[b];
    }
}

static void check_buckets(const ed_wtab *g) {
    const ed_tensor *bi = golden_need(g, "buckets_bi"), *ca = golden_need(g, "buckets_causal");
    const int *cfg = gi(g, "buckets_cfg");
    int K = (int)ca->shape[1], bad = 0;
    for (int c = 0; c < (int)bi->shape[0]; c++) {
        for (int x = 0; x < 2 * K - 1; x++)
            bad += t5_bucket(x - (K - 1), 1, cfg[2 * c], cfg[2 * c + 1]) !=
                   ((const int *)bi->data)[c * (2 * K - 1) + x];
        for (int n = 0; n < K; n++)
            bad += t5_bucket(-n, 0, cfg[2 * c], cfg[2 * c + 1]) != ((const int *)ca->data)[c * K + n];
    }
    CHECK_EQ_INT(bad, 0);
}

static void check_encoder(t5_state *s, golden *G) {
    const t5_hparams *h = &s->m->hp;
    t5_encode(s, G->ids, G->start, G->len, G->B);
    const float *want = gf(G->g, "encoder_out");
    double worst = 0;
    for (int b = 0; b < G->B; b++)
        for (int t = 0; t < G->len[b]; t++) {
            double d = check_max_abs_diff(s->enc_out + (size_t)(G->start[b] + t) * h->d,
                                          want + ((size_t)b * G->T_max + t) * h->d, (size_t)h->d, NULL);
            if (d > worst) worst = d;
        }
    printf("  encoder output: max |diff| %.3g\n", worst);
    CHECK_NEAR(worst, 0, ENC_TOL);
    /* the encoder bias table, for the longest input (= the padded length) */
    const ed_tensor *eb = golden_need(G->g, "enc_bias");
    CHECK_EQ_INT(eb->shape[2], 2 * G->T_max - 1);
    CHECK_NEAR(check_max_abs_diff(s->enc_bias, eb->data, eb->nbytes / sizeof(float), NULL), 0, 0);
}

/* Teacher-forced logits at every step, all inputs stepped together. */
static double check_logits(t5_state *s, golden *G, encdec_kv_mode mode) {
    const t5_hparams *h = &s->m->hp;
    const int *gt = gi(G->g, "greedy_tokens"), *gl = gi(G->g, "greedy_len");
    const float *want = gf(G->g, "greedy_logits");
    dec_runner r;
    rn_model rm = t5_rn_model(s, 1);
    CHECK_EQ_INT(rn_init(&r, &rm, mode), ENCDEC_OK);
    rn_begin(&r, mode);
    dec_model dm = rn_seam(&r);
    float *logits = malloc(sizeof(float) * (size_t)G->B * h->n_vocab);
    double worst = 0;
    int seq[16], tok[16], start = h->dec_start;
    for (int b = 0; b < G->B; b++) {
        CHECK_EQ_INT(dm.feed(dm.ctx, b, &start, 1, logits + (size_t)b * h->n_vocab), ENCDEC_OK);
        double d = golden_row_diff(logits + (size_t)b * h->n_vocab, want + (size_t)b * G->N * h->n_vocab,
                            (size_t)h->n_vocab);
        if (d > worst) worst = d;
    }
    for (int n = 1; n < G->N; n++) {
        int k = 0;
        for (int b = 0; b < G->B; b++)
            if (n < gl[b]) {
                seq[k] = b;
                tok[k++] = gt[b * G->N + n - 1];
            }
        if (!k) break;
        CHECK_EQ_INT(dm.step(dm.ctx, k, seq, tok, logits), ENCDEC_OK);
        for (int i = 0; i < k; i++) {
            double d = golden_row_diff(logits + (size_t)i * h->n_vocab,
                                want + ((size_t)seq[i] * G->N + n) * h->n_vocab, (size_t)h->n_vocab);
            if (d > worst) worst = d;
        }
    }
    free(logits);
    rn_free(&r);
    return worst;
}

/* One prefill for all inputs (feed_n) gives every input's logits bitwise
 * as a feed of its own does, and so does the step after it. */
static void check_feed_n(t5_state *s, golden *G, encdec_kv_mode mode) {
    const t5_hparams *h = &s->m->hp;
    const int *gt = gi(G->g, "greedy_tokens");
    size_t V = (size_t)h->n_vocab, B = (size_t)G->B;
    float *one = malloc(sizeof(float) * 2 * B * V), *all = malloc(sizeof(float) * 2 * B * V);
    int seq[16], tok[16], start = h->dec_start;
    for (int b = 0; b < G->B; b++) seq[b] = b, tok[b] = gt[b * G->N];
    for (int pass = 0; pass < 2; pass++) {
        float *out = pass ? all : one;
        dec_runner r;
        rn_model rm = t5_rn_model(s, 1);
        CHECK_EQ_INT(rn_init(&r, &rm, mode), ENCDEC_OK);
        rn_begin(&r, mode);
        dec_model dm = rn_seam(&r);
        CHECK(dm.feed_n != NULL);
        if (pass) CHECK_EQ_INT(dm.feed_n(dm.ctx, G->B, seq, &start, 1, out), ENCDEC_OK);
        else
            for (int b = 0; b < G->B; b++)
                CHECK_EQ_INT(dm.feed(dm.ctx, b, &start, 1, out + b * V), ENCDEC_OK);
        CHECK_EQ_INT(dm.step(dm.ctx, G->B, seq, tok, out + B * V), ENCDEC_OK);
        /* a sequence fed twice, or out of input order, is refused */
        int twice[2] = {0, 0}, back[2] = {1, 0};
        CHECK_EQ_INT(dm.feed_n(dm.ctx, 2, twice, &start, 1, out), ENCDEC_ERR_ARG);
        CHECK_EQ_INT(dm.feed_n(dm.ctx, 2, back, &start, 1, out), ENCDEC_ERR_ARG);
        rn_free(&r);
    }
    CHECK_EQ_INT(memcmp(one, all, sizeof(float) * 2 * B * V), 0);
    free(one);
    free(all);
}

static void check_greedy(t5_state *s, golden *G, encdec_kv_mode mode, int screen) {
    const t5_hparams *h = &s->m->hp;
    const int *gt = gi(G->g, "greedy_tokens"), *gl = gi(G->g, "greedy_len");
    dec_runner r;
    rn_model rm = t5_rn_model(s, 1);
    CHECK_EQ_INT(rn_init(&r, &rm, mode), ENCDEC_OK);
    rn_begin(&r, mode);
    rn_screen(&r, screen);
    dec_model dm = rn_seam(&r);
    dec_rules rules = {NULL, 0, NULL, 0, h->eos, G->N};
    int *toks = calloc((size_t)G->B * G->N, sizeof(int)), *lens = calloc((size_t)G->B, sizeof(int));
    float *lps = calloc((size_t)G->B * G->N, sizeof(float)), *sc = calloc((size_t)G->B, sizeof(float));
    int start = h->dec_start;
    CHECK_EQ_INT(dec_greedy_batch(&dm, G->B, &start, 1, &rules, toks, lps, lens, sc), ENCDEC_OK);
    int bad = 0;
    for (int b = 0; b < G->B; b++) {
        bad += lens[b] != gl[b];
        for (int t = 0; t < gl[b] && t < lens[b]; t++) bad += toks[b * G->N + t] != gt[b * G->N + t];
    }
    CHECK_EQ_INT(bad, 0);
    free(toks), free(lens), free(lps), free(sc);
    rn_free(&r);
}

static void check_beam(t5_state *s, golden *G, encdec_kv_mode mode) {
    const t5_hparams *h = &s->m->hp;
    const cJSON *bj = cJSON_GetObjectItem(G->js, "beam");
    dec_beam_params bp = {cJSON_GetObjectItem(bj, "num_beams")->valueint,
                          (float)cJSON_GetObjectItem(bj, "length_penalty")->valuedouble,
                          cJSON_IsTrue(cJSON_GetObjectItem(bj, "early_stopping")),
                          cJSON_GetObjectItem(bj, "num_return_sequences")->valueint};
    const int *bt = gi(G->g, "beam_tokens"), *bl = gi(G->g, "beam_len");
    const float *bs = gf(G->g, "beam_scores");
    t5_shape shape = {G->n_tokens, G->T_max, G->B, G->B * bp.n_beams, G->N + 1};
    CHECK_EQ_INT(t5_state_reserve(s, &shape), ENCDEC_OK);
    t5_encode(s, G->ids, G->start, G->len, G->B);
    dec_runner r;
    rn_model rm = t5_rn_model(s, bp.n_beams);
    CHECK_EQ_INT(rn_init(&r, &rm, mode), ENCDEC_OK);
    rn_begin(&r, mode);
    dec_model dm = rn_seam(&r);
    dec_rules rules = {NULL, 0, NULL, 0, h->eos, G->N};
    int n_out = G->B * bp.n_return;
    int *toks = calloc((size_t)n_out * G->N, sizeof(int)), *lens = calloc((size_t)n_out, sizeof(int));
    float *lps = calloc((size_t)n_out * G->N, sizeof(float)), *sc = calloc((size_t)n_out, sizeof(float));
    int start = h->dec_start;
    CHECK_EQ_INT(dec_beam(&dm, G->B, &start, 1, &rules, &bp, toks, lps, lens, sc), ENCDEC_OK);
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < n_out; i++) {
        bad += lens[i] != bl[i];
        for (int t = 0; t < bl[i] && t < lens[i]; t++) bad += toks[i * G->N + t] != bt[i * G->N + t];
        double d = fabs(sc[i] - bs[i]);
        if (d > worst) worst = d;
    }
    printf("  beam %d x %d (lp %.2g, early %d), %s: %d token mismatches, score |diff| %.3g\n",
           bp.n_beams, bp.n_return, bp.length_penalty, bp.early_stopping, cli_kv(mode), bad, worst);
    CHECK_EQ_INT(bad, 0);
    CHECK_NEAR(worst, 0, SCORE_TOL);
    free(toks), free(lens), free(lps), free(sc);
    rn_free(&r);
}

/* Through the public API: texts as HF decodes them. */
static void check_api(const char *model_dir, golden *G) {
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_model_load(model_dir, &m), ENCDEC_OK);
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    const cJSON *texts = cJSON_GetObjectItem(G->js, "inputs");
    const char *in[16];
    for (int b = 0; b < G->B; b++) in[b] = cJSON_GetArrayItem(texts, b)->valuestring;
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = G->N;
    CHECK_EQ_INT(encdec_generate(s, in, G->B, &p, &r), ENCDEC_OK);
    const cJSON *gt = cJSON_GetObjectItem(cJSON_GetObjectItem(G->js, "greedy"), "text");
    CHECK_EQ_INT(encdec_result_n_sequences(r), G->B);
    for (int b = 0; b < G->B && r; b++)
        CHECK_STR(encdec_result_sequence(r, b)->text, cJSON_GetArrayItem(gt, b)->valuestring);
    encdec_result_free(r);
    const cJSON *bj = cJSON_GetObjectItem(G->js, "beam");
    p.num_beams = cJSON_GetObjectItem(bj, "num_beams")->valueint;
    p.num_return_sequences = cJSON_GetObjectItem(bj, "num_return_sequences")->valueint;
    p.length_penalty = (float)cJSON_GetObjectItem(bj, "length_penalty")->valuedouble;
    p.early_stopping = cJSON_IsTrue(cJSON_GetObjectItem(bj, "early_stopping"));
    r = NULL;
    CHECK_EQ_INT(encdec_generate(s, in, G->B, &p, &r), ENCDEC_OK);
    const cJSON *bt = cJSON_GetObjectItem(bj, "text");
    int n = G->B * p.num_return_sequences;
    CHECK_EQ_INT(encdec_result_n_sequences(r), n);
    for (int i = 0; i < n && r && i < encdec_result_n_sequences(r); i++) {
        const encdec_sequence *q = encdec_result_sequence(r, i);
        CHECK_STR(q->text, cJSON_GetArrayItem(bt, i)->valuestring);
        CHECK_EQ_INT(q->input, i / p.num_return_sequences);
        CHECK_EQ_INT(q->rank, i % p.num_return_sequences);
    }
    encdec_result_free(r);
    encdec_session_free(s);
    encdec_model_free(m);
}

/* A model's vocabulary padded past its tokenizer (flan-t5: 32128 output
 * rows for 32100 pieces; this T5 v1.1: 928 rows, 900 pieces in
 * transformers' T5TokenizerFast, rows 900.. zero). Decoding may pick a
 * padding id; it adds no text, as in transformers' fast tokenizers' decode
 * (which skips ids it has no piece for), instead of failing the request.
 * A copy of the model whose padding rows are twice the row of greedy's
 * first token (22, the golden's) picks 900 first. */
static void check_padding_ids(const char *model_dir) {
    static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json",
                                        "spiece.model", NULL};
    tmp_new("t5-padding");
    const char *d = md_copy(model_dir, "padded", files);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    size_t n;
    uint8_t *f = md_read_all(path, &n);
    uint64_t hl = 0;
    memcpy(&hl, f, 8);   /* little-endian hosts */
    cJSON *h = cJSON_ParseWithLength((const char *)f + 8, (size_t)hl);
    const cJSON *t = cJSON_GetObjectItem(h, "lm_head.weight");
    CHECK(t && !strcmp(cJSON_GetObjectItem(t, "dtype")->valuestring, "BF16"));
    if (t) {
        uint16_t *w = (uint16_t *)(f + 8 + hl + (size_t)cJSON_GetArrayItem(
                                                    cJSON_GetObjectItem(t, "data_offsets"), 0)->valuedouble);
        int D = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "shape"), 1)->valueint;
        for (int r = 900; r < 928; r++)
            for (int c = 0; c < D; c++) {
                uint16_t v = w[22 * D + c];
                /* twice the value: one more in the exponent (not for 0 or the largest) */
                w[r * D + c] = (v & 0x7f80) && (v & 0x7f80) < 0x7f00 ? (uint16_t)(v + 0x80) : v;
            }
        tmp_write(path, f, n);
    }
    cJSON_Delete(h);
    free(f);
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_model_load(d, &m), ENCDEC_OK);
    encdec_session_params sp = {1};
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    const char *in[1] = {"translate English to German: The house is wonderful."};
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = 12;
    if (s) CHECK_EQ_INT(encdec_generate(s, in, 1, &p, &r), ENCDEC_OK);
    if (r) {
        CHECK(encdec_result_n_tokens(r) > 1);
        CHECK_EQ_INT(encdec_result_token(r, 0)->id, 900);
        int padded = 0;
        for (int i = 0; i < encdec_result_n_tokens(r); i++) {
            const encdec_token *k = encdec_result_token(r, i);
            if (k->id < 900) continue;
            padded++;
            CHECK(k->text == NULL || !*k->text);
        }
        fprintf(stderr, "padding ids: %d of %d tokens; \"%s\"\n", padded,
                encdec_result_n_tokens(r), encdec_result_text(r));
    }
    encdec_result_free(r);
    encdec_session_free(s);
    encdec_model_free(m);
    tmp_remove(tmp_dir);
}

/* The precision modes (compute:cross-kv) on the same golden: teacher-forced
 * logits within the mode's tolerance of HF's f32 ones (relative to the row's
 * largest |logit|, as LOGIT_TOL). Measured on the four models: f16 / bf16
 * cross caches up to 2.1e-3 / 1.5e-2, bf16 weights 0.15, int8 weights 0.35.
 * Random weights at HF's init scale give these models activations with
 * large outliers (logits reach ~110), the worst case for 8-bit inputs;
 * real checkpoints are far tamer (tiny.en in test_precision: int8 moves
 * logits of O(20) by ~1.2 and no transcript). */
static void check_precision(const char *model_dir, golden *G) {
    static const struct {
        encdec_compute c;
        kv_dtype kv;
        const char *name;
        double tol;
    } cfg[] = {
        {ENCDEC_COMPUTE_F32, KV_F16, "f32:f16", 4e-3},
        {ENCDEC_COMPUTE_F32, KV_BF16, "f32:bf16", 3e-2},
        {ENCDEC_COMPUTE_BF16, KV_BF16, "bf16:bf16", 0.25},
        {ENCDEC_COMPUTE_INT8, KV_F16, "int8:f16", 0.5},
    };
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        encdec_model_params mp = encdec_model_default_params();   /* ENCDEC_DEVICE's device */
        mp.compute = cfg[i].c;
        encdec_model *em = NULL;
        CHECK_STATUS(encdec_model_load_ex(model_dir, &mp, &em), ENCDEC_OK, "");
        if (!em) continue;
        ed_pool *pool;
        t5_state *s;
        CHECK_EQ_INT(ed_pool_new(&pool, 2), ENCDEC_OK);
        ed_pool_set_device(pool, em->dev);
        CHECK_EQ_INT(t5_state_new(&s, em->text_dev ? (t5_model *)em->text_dev : em->t5, pool, cfg[i].kv),
                     ENCDEC_OK);
        t5_shape shape = {G->n_tokens, G->T_max, G->B, G->B, G->N + 1};
        CHECK_EQ_INT(t5_state_reserve(s, &shape), ENCDEC_OK);
        t5_encode(s, G->ids, G->start, G->len, G->B);
        double d = check_logits(s, G, ENCDEC_KV_FULL);
        check_feed_n(s, G, ENCDEC_KV_FULL);
        printf("  precision %-9s logits max |diff| / max |row| %.3g (tol %.0e)\n", cfg[i].name, d,
               cfg[i].tol);
        CHECK_NEAR(d, 0, cfg[i].tol);
        t5_state_free(s);
        ed_pool_free(pool);
        encdec_model_free(em);
    }
}

/* Two states of m over pool, the first unscreened, the second screened,
 * decoding the inputs REPS times over (REPS * B rows a step) in lockstep;
 * invariant: the engine's batch-invariant products (t5_state.invariant). */
static void lockstep(t5_model *m, ed_pool *pool, golden *G, int REPS, int invariant) {
    screen_reps x = screen_repeat(G->ids, G->start, G->len, G->n_tokens, G->B, gi(G->g, "greedy_tokens"),
                                  gi(G->g, "greedy_len"), G->N, REPS);
    t5_state *s[2];
    t5_shape shape = {x.n, G->T_max, x.R, x.R, G->N + 1};
    dec_runner r[2];
    dec_model d[2];
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(t5_state_new(&s[i], m, pool, KV_F32), ENCDEC_OK);
        CHECK_EQ_INT(t5_state_reserve(s[i], &shape), ENCDEC_OK);
        s[i]->invariant = invariant;
        t5_encode(s[i], x.ids, x.start, x.len, x.R);
        rn_model rm = t5_rn_model(s[i], 1);
        CHECK_EQ_INT(rn_init(&r[i], &rm, ENCDEC_KV_FULL), ENCDEC_OK);
        rn_begin(&r[i], ENCDEC_KV_FULL);
        d[i] = rn_seam(&r[i]);
    }
    rn_screen(&r[1], 1);
    if (REPS > 1) printf("  %s passes, %d rows:\n", invariant ? "engine" : "session", x.R);
    screen_lockstep(&d[0], &d[1], x.R, G->N, m->hp.dec_start, x.gt, x.gl);
    for (int i = 0; i < 2; i++) {
        rn_free(&r[i]);
        t5_state_free(s[i]);
    }
    screen_reps_free(&x);
}

/* Screened logits (models/screen.h), its size threshold waived for these
 * small models, on the AVX2 set and the CPU's best (once where they are the
 * same): a second state decodes
 * unscreened in lockstep (screen_check.h), the inputs once (a session's
 * steps) and four times over in the engine's batch-invariant passes (and in
 * a session's, for a matrix in halves); then
 * greedy tokens, refined, transformers' in every cache mode. */
static void check_screen(t5_model *m, golden *G) {
    static const int sets[] = {K_ISA_VEC, K_ISA_AMX};
    int last = -1;
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        int old = ed_isa_swap(sets[k]);
        if (k_isa() == last) {   /* the CPU's best is the vector set: once */
            ed_isa_swap(old);
            continue;
        }
        last = k_isa();
        k_w head = m->lm_head;   /* restored at the end */
        if (k_q8_fast()) m->lm_head = screen_matrix(m->wt, head, m->hp.n_vocab, m->hp.d);
        CHECK_EQ_INT(md_screen_build(m->wt, m->lm_head, m->hp.n_vocab, m->hp.d, 0, &m->screen), ENCDEC_OK);
        if (!m->screen.w.p) {
            printf("  screened logits: SKIP (no vector int8 kernel here)\n");
            m->lm_head = head;
            ed_isa_swap(old);
            return;
        }
        if (m->lm_head.t != head.t) printf("  (the output projection in halves, panel-major)\n");
        printf("  kernel set %s:\n", k_isa_name(k_isa()));
        ed_pool *pool;
        CHECK_EQ_INT(ed_pool_new(&pool, 2), ENCDEC_OK);
        ed_pool_set_isa(pool, sets[k]);
        lockstep(m, pool, G, 1, 0);
        lockstep(m, pool, G, 4, 1);
#ifndef ED_EMULATED   /* (qemu: the halves' kernel past a tile's rows is test_matmul_hp's there) */
        if (m->lm_head.t == K_F16P || m->lm_head.t == K_BF16P)   /* any rows: one kernel for halves */
            lockstep(m, pool, G, 4, 0);
#endif
        t5_state *s0;
        t5_shape shape = {G->n_tokens, G->T_max, G->B, G->B, G->N + 1};
        CHECK_EQ_INT(t5_state_new(&s0, m, pool, KV_F32), ENCDEC_OK);
        CHECK_EQ_INT(t5_state_reserve(s0, &shape), ENCDEC_OK);
        t5_encode(s0, G->ids, G->start, G->len, G->B);
        encdec_kv_mode modes[3] = {ENCDEC_KV_FULL, ENCDEC_KV_SELF, ENCDEC_KV_NONE};
        for (int i = 0; i < N_MODES; i++) check_greedy(s0, G, modes[i], 1);
        t5_state_free(s0);
        ed_pool_free(pool);
        memset(&m->screen, 0, sizeof m->screen);   /* (its memory stays the table's) */
        m->lm_head = head;
        ed_isa_swap(old);
    }
}

static void run_variant(const char *variant, const char *model_name) {
    char model_dir[1024], gpath[1024], jpath[1024];
    snprintf(model_dir, sizeof model_dir, "%s/%s", ED_TEST_DATA, model_name);
    snprintf(gpath, sizeof gpath, "%s/t5-golden/%s.safetensors", ED_TEST_DATA, variant);
    snprintf(jpath, sizeof jpath, "%s/t5-golden/%s.json", ED_TEST_DATA, variant);
    printf("%s (%s)\n", variant, model_name);
    golden G;
    memset(&G, 0, sizeof G);
    t5_model *m = NULL;
    encdec_status st = t5_load(&m, model_dir);
    CHECK_STATUS(st, ENCDEC_OK, "");
    G.g = wtab_new();
    CHECK_EQ_INT(st_load_file(G.g, gpath), ENCDEC_OK);
    CHECK_EQ_INT(ed_json_load(jpath, &G.js), ENCDEC_OK);
    if (st || !G.js || !wtab_get(G.g, "input_ids")) {
        t5_free(m);
        wtab_free(G.g);
        cJSON_Delete(G.js);
        return;
    }
    G.N = (int)golden_need(G.g, "greedy_tokens")->shape[1];
    G.V = m->hp.n_vocab;
    check_inputs(m, &G);
    check_buckets(G.g);
    ed_pool *pool;
    CHECK_EQ_INT(ed_pool_new(&pool, 2), ENCDEC_OK);
    t5_state *s;
    CHECK_EQ_INT(t5_state_new(&s, m, pool, KV_F32), ENCDEC_OK);
    t5_shape shape = {G.n_tokens, G.T_max, G.B, G.B, G.N + 1};
    CHECK_EQ_INT(t5_state_reserve(s, &shape), ENCDEC_OK);
    check_encoder(s, &G);
    /* decoder bias by distance: ours is stored reversed (centre = distance 0) */
    const ed_tensor *db = golden_need(G.g, "dec_bias");
    int nb = (int)db->shape[0], H = (int)db->shape[1], nd = (int)db->shape[2], n_ctx = G.N + 1;
    encdec_kv_mode modes[3] = {ENCDEC_KV_FULL, ENCDEC_KV_SELF, ENCDEC_KV_NONE};
    for (int i = 0; i < N_MODES; i++) {
        double d = check_logits(s, &G, modes[i]);
        printf("  logits at every step, %s: max |diff| / max |row| %.3g\n", cli_kv(modes[i]), d);
        CHECK_NEAR(d, 0, LOGIT_TOL);
        check_feed_n(s, &G, modes[i]);
        check_greedy(s, &G, modes[i], 0);
    }
    double worst = 0;
    for (int l = 0; l < nb; l++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < nd && n < n_ctx; n++) {
                double d = fabs(s->dec_bias[((size_t)l * H + h) * n_ctx + (n_ctx - 1 - n)] -
                                ((const float *)db->data)[((size_t)l * H + h) * nd + n]);
                if (d > worst) worst = d;
            }
    CHECK_NEAR(worst, 0, 0);
    for (int i = 0; i < N_MODES; i++) check_beam(s, &G, modes[i]);
    t5_state_free(s);
    ed_pool_free(pool);
    check_screen(m, &G);
    check_api(model_dir, &G);
    check_precision(model_dir, &G);
    free(G.ids), free(G.start), free(G.len);
    cJSON_Delete(G.js);
    wtab_free(G.g);
    t5_free(m);
}

int main(void) {
    run_variant("t5-v1_0", "tiny-random-t5-v1_0");
    run_variant("t5-v1_1", "tiny-random-t5-v1_1");
    run_variant("mt5", "tiny-random-mt5");
    run_variant("umt5", "tiny-random-umt5");
    char dir[200];
    snprintf(dir, sizeof dir, "%s/tiny-random-t5-v1_1", ED_TEST_DATA);
    check_padding_ids(dir);
    return check_done();
}
