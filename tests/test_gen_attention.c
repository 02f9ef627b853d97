/* test_gen_attention.c - a generation's attention (encdec_generate_params.
 * return_attention: CTranslate2's return_attention, what its
 * replace_unknowns reads), kept as the search decodes and read back along
 * each output's beams.
 *
 * On the seeded random Marian (post-norm), M2M100 (its target language
 * forced first) and T5 v1.1 of tests/data, through an engine: greedy, beam
 * search with two returns, sampling with two, a target prefix holding
 * <unk>, and an input the model's positions cut, submitted together (their
 * steps merge) and alone; every returned sequence's rows equal
 * encdec_text_attention's over its tokens (a separate teacher-forced pass
 * on a session, which tools/golden_translator_attention.py checks against
 * transformers' float64) within 1e-5, its columns the input's as given.
 * Mode 2 gives rows only to sequences holding <unk>. Through a session
 * (two inputs at once, beams; the three cache modes): the same rows as the
 * engine's request of each input. Errors: a mode out of range. T5 against
 * transformers' float64 rows (tools/golden_t5_attention.py): given
 * sequences, and an engine generation's kept rows of its target prefix.
 *
 * The logits rows of a generation (return_logits: CTranslate2's
 * return_logits_vocab for greedy search), on the random Marian: one row a
 * token, over the vocabulary, each greedy token its row's largest; the
 * same rows from a session (three cache modes, two inputs at once) and an
 * engine; no_repeat_ngram_size 1's bans at -inf; a target prefix's rows
 * (fed a token a pass) those of the tokens' own positions; beam search
 * and a mode out of range refused. */
#include "check.h"
#include "encdec.h"
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 64
#define MAX_COLS 80

typedef struct {
    const char *dir;
    int n_ids;                 /* its input: 20 + i % 30 ..., </s> last */
} model_case;

static int seq_tokens(const encdec_sequence *q, int *out) {
    for (int j = 0; j < q->n_tokens; j++) out[j] = q->tokens[j].id;
    return q->n_tokens;
}

/* Every sequence of r with rows: equal to encdec_text_attention's; want_all:
 * every sequence has rows (else: those holding unk, and only those). */
static void check_rows(encdec_session *s, const encdec_result *r, const int *ids, int n_ids, int want_all,
                       int unk) {
    static float ref[MAX_ROWS * MAX_COLS];
    int toks[MAX_ROWS];
    for (int i = 0; i < encdec_result_n_sequences(r); i++) {
        const encdec_sequence *q = encdec_result_sequence(r, i);
        int n = seq_tokens(q, toks), cols = -1, has_unk = 0;
        for (int j = 0; j < n; j++) has_unk |= toks[j] == unk;
        const float *att = encdec_result_attention(r, i, &cols);
        if (!want_all && !has_unk) {
            CHECK(att == NULL && cols == 0);
            continue;
        }
        CHECK(att != NULL);
        CHECK_EQ_INT(cols, n_ids);
        if (!att || cols != n_ids || n < 1) continue;
        CHECK_EQ_INT(encdec_text_attention(s, ids, n_ids, toks, n, ref), ENCDEC_OK);
        float worst = 0;
        for (int k = 0; k < n * n_ids; k++) worst = fmaxf(worst, fabsf(att[k] - ref[k]));
        CHECK(worst < 1e-5f);
        if (worst >= 1e-5f) fprintf(stderr, "  sequence %d: off by %g\n", i, (double)worst);
    }
}

static encdec_generate_params kind(int k, int mode) {
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = 12;
    p.min_new_tokens = 6;
    p.return_attention = mode;
    p.truncate = 1;
    if (k == 1) p.num_beams = 3, p.num_return_sequences = 2;
    if (k == 2) p.do_sample = 1, p.num_return_sequences = 2, p.seed = 7, p.top_k = 20;
    return p;
}

static void test_engine(const model_case *mc) {
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_model_load(mc->dir, &m), ENCDEC_OK);
    if (!m) return;
    int eos = encdec_model_token_id(m, "</s>"), unk = encdec_model_token_id(m, "<unk>");
    CHECK(eos >= 0 && unk >= 0);
    int ids[MAX_COLS];
    for (int i = 0; i < mc->n_ids; i++) ids[i] = 20 + i % 30;
    ids[mc->n_ids - 1] = eos;
    CHECK_EQ_INT(encdec_session_new(m, NULL, &s), ENCDEC_OK);
    encdec_engine_params ep = encdec_engine_default_params();
    ep.n_threads = 2;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (!s || !e) goto done;
    /* greedy, beams, sampling and a prefix with <unk>, all at once (their
     * steps merge), in modes 1 and 2 */
    int prefix[2] = {unk, 25};
    for (int mode = 1; mode <= 2; mode++) {
        encdec_request *q[4] = {0};
        for (int k = 0; k < 4; k++) {
            encdec_generate_params p = kind(k == 3 ? 0 : k, mode);
            CHECK_EQ_INT(encdec_engine_generate_ids(e, ids, mc->n_ids, k == 3 ? prefix : NULL, k == 3 ? 2 : 0,
                                                    &p, &q[k]), ENCDEC_OK);
        }
        for (int k = 0; k < 4; k++) {
            encdec_result *r = NULL;
            if (!q[k]) continue;
            CHECK_EQ_INT(encdec_request_wait(q[k], &r), ENCDEC_OK);
            if (r) check_rows(s, r, ids, mc->n_ids, mode == 1, unk);
            if (r && k == 3) CHECK(encdec_result_attention(r, 0, NULL) != NULL);   /* it holds <unk> */
            encdec_result_free(r);
            encdec_request_free(q[k]);
        }
    }
    /* one request alone */
    encdec_request *one = NULL;
    encdec_generate_params p = kind(1, 1);
    CHECK_EQ_INT(encdec_engine_generate_ids(e, ids, mc->n_ids, NULL, 0, &p, &one), ENCDEC_OK);
    encdec_result *r = NULL;
    if (one) CHECK_EQ_INT(encdec_request_wait(one, &r), ENCDEC_OK);
    if (r) check_rows(s, r, ids, mc->n_ids, 1, unk);
    encdec_result_free(r);
    encdec_request_free(one);
    /* errors */
    p.return_attention = 3;
    CHECK_STATUS(encdec_engine_generate_ids(e, ids, mc->n_ids, NULL, 0, &p, &one), ENCDEC_ERR_ARG,
                 "return_attention 3");
    CHECK_STATUS(encdec_generate(s, (const char *[]){"a"}, 1, &p, &r), ENCDEC_ERR_ARG, "return_attention 3");
done:
    encdec_engine_free(e);
    encdec_session_free(s);
    encdec_model_free(m);
}

/* Text inputs through a session (two at once) against the engine's
 * requests of each, in the three cache modes. */
/* An engine request for a text (in) or for token ids (ids[0, n) and the
 * target prefix pre[0, n_pre)), waited for: its result, NULL on failure. */
static encdec_result *engine_run(encdec_engine *e, const char *in, const int *ids, int n, const int *pre,
                                 int n_pre, const encdec_generate_params *p) {
    encdec_request *q = NULL;
    encdec_result *r = NULL;
    CHECK_EQ_INT(in ? encdec_engine_generate(e, in, p, &q) : encdec_engine_generate_ids(e, ids, n, pre, n_pre, p, &q),
                 ENCDEC_OK);
    if (q) CHECK_EQ_INT(encdec_request_wait(q, &r), ENCDEC_OK);
    encdec_request_free(q);
    return r;
}

static void test_session(const char *dir) {
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_model_load(dir, &m), ENCDEC_OK);
    if (!m) return;
    CHECK_EQ_INT(encdec_session_new(m, NULL, &s), ENCDEC_OK);
    CHECK_EQ_INT(encdec_engine_new(m, NULL, &e), ENCDEC_OK);
    const char *in[2] = {"The house is wonderful.", "cat cat dog"};
    encdec_kv_mode modes[3] = {ENCDEC_KV_FULL, ENCDEC_KV_SELF, ENCDEC_KV_NONE};
    for (int k = 0; s && e && k < 2; k++) {
        encdec_generate_params p = kind(k, 1);
        encdec_result *alone[2] = {0};
        for (int i = 0; i < 2; i++) alone[i] = engine_run(e, in[i], NULL, 0, NULL, 0, &p);
        for (int mi = 0; mi < 3; mi++) {
            p.kv_mode = modes[mi];
            encdec_result *r = NULL;
            CHECK_EQ_INT(encdec_generate(s, in, 2, &p, &r), ENCDEC_OK);
            for (int i = 0; r && i < encdec_result_n_sequences(r); i++) {
                const encdec_sequence *q = encdec_result_sequence(r, i);
                const encdec_result *a = alone[q->input];
                const encdec_sequence *qa = a ? encdec_result_sequence(a, q->rank) : NULL;
                int c1 = -1, c2 = -2;
                const float *x = encdec_result_attention(r, i, &c1);
                const float *y = a ? encdec_result_attention(a, q->rank, &c2) : NULL;
                CHECK(x && y && qa && c1 == c2 && q->n_tokens == qa->n_tokens);
                if (!x || !y || !qa || c1 != c2 || q->n_tokens != qa->n_tokens) continue;
                int same = 1;
                for (int j = 0; j < q->n_tokens; j++) same &= q->tokens[j].id == qa->tokens[j].id;
                CHECK(same);
                float worst = 0;
                for (int t = 0; same && t < q->n_tokens * c1; t++) worst = fmaxf(worst, fabsf(x[t] - y[t]));
                CHECK(worst < 1e-5f);
                for (int j = 0; j < q->n_tokens; j++) {   /* rows over the input: sums of 1 */
                    float sum = 0;
                    for (int t = 0; t < c1; t++) sum += x[j * c1 + t];
                    CHECK(fabsf(sum - 1) < 1e-5f);
                }
            }
            encdec_result_free(r);
        }
        for (int i = 0; i < 2; i++) encdec_result_free(alone[i]);
    }
    encdec_engine_free(e);
    encdec_session_free(s);
    encdec_model_free(m);
}

/* T5 against transformers' float64 (tools/golden_t5_attention.py): the
 * last layer's first head over given sequences (encdec_text_attention), and
 * the same rows kept by an engine's generation that has them as its target
 * prefix, within 1e-4 + 10x each row's sensitivity. */
static void test_t5_golden(void) {
    cJSON *js = NULL;
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/t5-golden/attention.json", &js), ENCDEC_OK);
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_model_load(ED_TEST_DATA "/tiny-random-t5-v1_1", &m), ENCDEC_OK);
    if (m) CHECK_EQ_INT(encdec_session_new(m, NULL, &s), ENCDEC_OK);
    if (m) CHECK_EQ_INT(encdec_engine_new(m, NULL, &e), ENCDEC_OK);
    const cJSON *cases = js ? cJSON_GetObjectItem(js, "cases") : NULL;
    CHECK(cJSON_GetArraySize(cases) >= 4);
    static float att[MAX_ROWS * MAX_COLS];
    int n_checked = 0;
    for (int c = 0; s && e && c < cJSON_GetArraySize(cases); c++) {
        const cJSON *k = cJSON_GetArrayItem(cases, c);
        int *ids = NULL, *seq = NULL, n = 0, ns = 0;
        CHECK_EQ_INT(ed_json_int_array(k, "ids", "attention.json", 0, 1 << 20, &ids, &n), ENCDEC_OK);
        CHECK_EQ_INT(ed_json_int_array(k, "seq", "attention.json", 0, 1 << 20, &seq, &ns), ENCDEC_OK);
        const cJSON *rows = cJSON_GetObjectItem(k, "attention"), *sens = cJSON_GetObjectItem(k, "sensitivity");
        if (!ids || !seq || ns > MAX_ROWS || n > MAX_COLS || cJSON_GetArraySize(rows) != ns) {
            CHECK(0);
            free(ids);
            free(seq);
            continue;
        }
        /* the engine's kept rows of a generation whose prefix is the sequence but its </s> */
        const float *kept = NULL;
        int cols = 0;
        encdec_result *r = NULL;
        encdec_request *q = NULL;
        encdec_generate_params p = kind(0, 1);
        p.min_new_tokens = 0;
        p.max_new_tokens = ns + 2;
        if (ns > 1) {
            CHECK_EQ_INT(encdec_engine_generate_ids(e, ids, n, seq, ns - 1, &p, &q), ENCDEC_OK);
            if (q) CHECK_EQ_INT(encdec_request_wait(q, &r), ENCDEC_OK);
            kept = r ? encdec_result_attention(r, 0, &cols) : NULL;
            CHECK(kept && cols == n);
        }
        CHECK_EQ_INT(encdec_text_attention(s, ids, n, seq, ns, att), ENCDEC_OK);
        for (int j = 0; j < ns; j++) {
            const cJSON *row = cJSON_GetArrayItem(rows, j);
            double tol = 1e-4 + 10 * cJSON_GetArrayItem(sens, j)->valuedouble;
            for (int t = 0; t < n; t++) {
                double want = cJSON_GetArrayItem(row, t)->valuedouble;
                CHECK(fabs(att[j * n + t] - want) <= tol);
                if (kept && cols == n && j < ns - 1) CHECK(fabs(kept[j * n + t] - want) <= tol);
            }
        }
        n_checked++;
        encdec_result_free(r);
        encdec_request_free(q);
        free(ids);
        free(seq);
    }
    CHECK(n_checked >= 4);
    encdec_engine_free(e);
    encdec_session_free(s);
    encdec_model_free(m);
    cJSON_Delete(js);
}

static int argmax(const float *row, int V) {
    int b = 0;
    for (int v = 1; v < V; v++)
        if (row[v] > row[b]) b = v;
    return b;
}

/* Sequence i's rows: one a token, each greedy token its row's argmax, the
 * tokens before it -inf where ban (no_repeat_ngram_size 1); returns them. */
static const float *check_logit_rows(const encdec_result *r, int i, int V, int ban, int from) {
    const encdec_sequence *q = encdec_result_sequence(r, i);
    int w = 0;
    const float *rows = encdec_result_logits(r, i, &w);
    CHECK(rows != NULL && w == V);
    if (!rows || w != V) return NULL;
    int ok = 1;
    for (int j = from; j < q->n_tokens; j++) {
        const float *row = rows + (size_t)j * V;
        ok &= argmax(row, V) == q->tokens[j].id;
        for (int k = 0; ban && k < j; k++) ok &= isinf(row[q->tokens[k].id]) && row[q->tokens[k].id] < 0;
    }
    CHECK(ok);
    return rows;
}

/* The largest difference of a[0, n) and b[0, n) (-inf alike in both: none). */
static float rows_diff(const float *a, const float *b, size_t n) {
    float worst = 0;
    for (size_t k = 0; k < n; k++)
        if (isfinite(a[k]) || isfinite(b[k])) worst = fmaxf(worst, fabsf(a[k] - b[k]));
    return worst;
}

static void test_logits(const char *dir) {
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_model_load(dir, &m), ENCDEC_OK);
    if (!m) return;
    encdec_model_info info;
    encdec_model_get_info(m, &info);
    int V = info.n_vocab;
    /* two threads: the rows of a step's sequences are taken on both at once */
    encdec_session_params sp = {2};
    encdec_engine_params ep = encdec_engine_default_params();
    ep.n_threads = 2;
    CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    const char *in[2] = {"The house is wonderful.", "cat cat dog"};
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = 9;
    p.ctranslate2_rules = 1;
    p.return_logits = 1;
    encdec_result *er[2] = {0};
    for (int i = 0; e && i < 2; i++)
        if ((er[i] = engine_run(e, in[i], NULL, 0, NULL, 0, &p))) check_logit_rows(er[i], 0, V, 0, 0);
    encdec_kv_mode modes[3] = {ENCDEC_KV_FULL, ENCDEC_KV_SELF, ENCDEC_KV_NONE};
    for (int mi = 0; s && mi < 3; mi++) {
        p.kv_mode = modes[mi];
        encdec_result *r = NULL;
        CHECK_EQ_INT(encdec_generate(s, in, 2, &p, &r), ENCDEC_OK);
        for (int i = 0; r && i < 2 && er[i]; i++) {
            const float *a = check_logit_rows(r, i, V, 0, 0), *b = encdec_result_logits(er[i], 0, NULL);
            const encdec_sequence *q = encdec_result_sequence(r, i);
            CHECK_EQ_INT(q->n_tokens, encdec_result_sequence(er[i], 0)->n_tokens);
            CHECK(a && b && rows_diff(a, b, (size_t)q->n_tokens * V) < 1e-3f);
        }
        encdec_result_free(r);
    }
    p.kv_mode = ENCDEC_KV_FULL;
    p.no_repeat_ngram_size = 1;   /* no token twice: those before banned in every row */
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_generate(s, in, 1, &p, &r), ENCDEC_OK);
    if (r) check_logit_rows(r, 0, V, 1, 0);
    encdec_result_free(r);
    p.no_repeat_ngram_size = 0;
    /* a target prefix: its rows those of the positions the prefix tokens take */
    int ids[5] = {5, 9, 20, 33, encdec_model_token_id(m, "</s>")};
    encdec_result *t[2] = {0};
    for (int k = 0; e && k < 2; k++) {
        const encdec_sequence *q0 = k ? encdec_result_sequence(t[0], 0) : NULL;
        int pre[2] = {q0 ? q0->tokens[0].id : 0, q0 ? q0->tokens[1].id : 0};
        if (!(t[k] = engine_run(e, NULL, ids, 5, pre, 2 * k, &p))) break;
    }
    if (t[0] && t[1]) {
        const float *a = check_logit_rows(t[0], 0, V, 0, 0), *b = check_logit_rows(t[1], 0, V, 0, 2);
        int n = encdec_result_sequence(t[0], 0)->n_tokens;
        CHECK_EQ_INT(encdec_result_sequence(t[1], 0)->n_tokens, n);
        CHECK(a && b && rows_diff(a, b, (size_t)n * V) < 1e-3f);
    }
    for (int k = 0; k < 2; k++) encdec_result_free(t[k]);
    /* not asked: none; beam search and a mode out of range refused */
    p.return_logits = 0;
    CHECK_EQ_INT(encdec_generate(s, in, 1, &p, &r), ENCDEC_OK);
    int w = 5;
    CHECK(r && !encdec_result_logits(r, 0, &w) && w == 0);
    encdec_result_free(r);
    p.return_logits = 1;
    p.num_beams = 2;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "return_logits: the logits of greedy or "
                 "sampled sequences only, not with beam search");
    p.num_beams = 1;
    p.return_logits = 2;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "return_logits 2 is not 0 or 1");
    printf("return_logits (%s): rows of the tokens chosen, session and engine alike, bans, a prefix's rows\n",
           strrchr(dir, '/') + 1);
    for (int i = 0; i < 2; i++) encdec_result_free(er[i]);
    encdec_engine_free(e);
    encdec_session_free(s);
    encdec_model_free(m);
}

int main(void) {
    const model_case cases[] = {
        {ED_TEST_DATA "/tiny-random-marian", 9},
        {ED_TEST_DATA "/tiny-random-marian", 70},   /* 64 positions: cut, its columns as given */
        {ED_TEST_DATA "/tiny-random-m2m100", 11},
        {ED_TEST_DATA "/tiny-random-t5-v1_1", 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_engine(&cases[i]);
    test_session(ED_TEST_DATA "/tiny-random-marian");
    test_session(ED_TEST_DATA "/tiny-random-t5-v1_1");
    test_t5_golden();
    test_logits(ED_TEST_DATA "/tiny-random-marian");
    return check_done();
}
