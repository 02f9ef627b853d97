/* test_engine_t5.c - the engine with T5-family models: requests share the
 * decode steps, and a request's output does not depend on what else runs.
 *
 * On the seeded random T5 v1.1 (gated) and umT5 (a bias per layer) of
 * tests/data: twelve requests (three inputs x greedy, sampling with three
 * returns, beam search with four beams and two returns, eight beams) run
 * one at a time (2 threads), all at once on one thread (steps of up to
 * 3 + 9 + 12 + 24 sequences), and through two places on 3 threads (the rest
 * queued): every sequence's tokens, log-probs and score identical,
 * bit for bit, and the same as a session's encdec_generate of that input
 * alone (test_t5_golden pins the session against transformers). Then the
 * engine's refusals.
 */
#include "check.h"
#include "encdec.h"

#include <stdio.h>
#include <string.h>

#define N_IN 3
#define N_KIND 4
#define N_REQ (N_IN * N_KIND)

static const char *g_inputs[N_IN] = {
    "translate English to German: The house is wonderful.",
    "summarize: studies have shown that owning a dog is good for you",
    "Mr. Dashwood had then leisure to consider",
};

static encdec_generate_params params_of(int kind) {
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = 24;
    if (kind == 1) {
        p.do_sample = 1;
        p.temperature = 0.8f;
        p.top_k = 20;
        p.seed = 3;
        p.num_return_sequences = 3;
    } else if (kind == 2) {
        p.num_beams = 4;
        p.num_return_sequences = 2;
        p.length_penalty = 1.0f;
    } else if (kind == 3) {
        p.num_beams = 8;
        p.early_stopping = 1;
    }
    return p;
}

/* a and b: the same sequences, token for token, bit for bit. */
static int same(const encdec_result *a, const encdec_result *b) {
    int n = encdec_result_n_sequences(a);
    if (n != encdec_result_n_sequences(b)) return 0;
    for (int i = 0; i < n; i++) {
        const encdec_sequence *x = encdec_result_sequence(a, i), *y = encdec_result_sequence(b, i);
        if (x->n_tokens != y->n_tokens || memcmp(&x->score, &y->score, sizeof x->score) ||
            strcmp(x->text, y->text))
            return 0;
        for (int k = 0; k < x->n_tokens; k++)
            if (x->tokens[k].id != y->tokens[k].id ||
                memcmp(&x->tokens[k].logprob, &y->tokens[k].logprob, sizeof(float)))
                return 0;
    }
    return 1;
}

static void all_at_once(encdec_engine *e, encdec_result **res) {
    encdec_request *q[N_REQ];
    for (int i = 0; i < N_REQ; i++) {
        encdec_generate_params p = params_of(i % N_KIND);
        CHECK_EQ_INT(encdec_engine_generate(e, g_inputs[i / N_KIND], &p, &q[i]), ENCDEC_OK);
    }
    for (int i = 0; i < N_REQ; i++) {
        res[i] = NULL;
        if (q[i]) CHECK_EQ_INT(encdec_request_wait(q[i], &res[i]), ENCDEC_OK);
        encdec_request_free(q[i]);
    }
}

static void variant(const char *name, encdec_isa isa) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", ED_TEST_DATA, name);
    encdec_model *m = NULL;
    encdec_model_params mp = {ENCDEC_COMPUTE_F32, isa};
    CHECK_EQ_INT(encdec_model_load_ex(dir, &mp, &m), ENCDEC_OK);
    if (!m) return;
    encdec_session *s = NULL;
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    encdec_engine_params ep = {2, 16, ENCDEC_KV_F32, 64};
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    encdec_result *ref[N_REQ], *alone[N_REQ], *mixed[N_REQ], *queued[N_REQ];
    for (int i = 0; i < N_REQ; i++) {
        encdec_generate_params p = params_of(i % N_KIND);
        ref[i] = alone[i] = NULL;
        CHECK_EQ_INT(encdec_generate(s, &g_inputs[i / N_KIND], 1, &p, &ref[i]), ENCDEC_OK);
        encdec_request *q = NULL;
        if (e) CHECK_EQ_INT(encdec_engine_generate(e, g_inputs[i / N_KIND], &p, &q), ENCDEC_OK);
        if (q) CHECK_EQ_INT(encdec_request_wait(q, &alone[i]), ENCDEC_OK);
        encdec_request_free(q);
        if (ref[i] && alone[i]) CHECK(same(ref[i], alone[i]));
    }
    encdec_engine_stats st0, st1;
    /* together on one thread: the products then see every row of a step at
     * once (more than 16: the row-major kernels' choice would change) */
    encdec_engine_free(e);
    ep.n_threads = 1;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    encdec_engine_get_stats(e, &st0);
    if (e) all_at_once(e, mixed);
    encdec_engine_get_stats(e, &st1);
    double per = st1.steps > st0.steps ? (double)(st1.rows - st0.rows) / (st1.steps - st0.steps) : 0;
    fprintf(stderr, "%s (%s): %d requests together, %.2f sequences a step; \"%s\"\n", name,
            encdec_isa_name(isa), N_REQ, per, alone[0] ? encdec_result_text(alone[0]) : "");
    CHECK(per > 3);
    for (int i = 0; e && i < N_REQ; i++) {
        if (alone[i] && mixed[i]) CHECK(same(alone[i], mixed[i]));
        encdec_result_free(mixed[i]);
    }
    encdec_engine_free(e);
    ep.max_active = 2;
    ep.n_threads = 3;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (e) {
        all_at_once(e, queued);
        for (int i = 0; i < N_REQ; i++) {
            if (alone[i] && queued[i]) CHECK(same(alone[i], queued[i]));
            encdec_result_free(queued[i]);
        }
        /* refusals */
        encdec_request *q = NULL;
        encdec_generate_params p = encdec_generate_default_params();
        p.num_beams = 20;
        p.num_return_sequences = 1;
        CHECK_STATUS(encdec_engine_generate(e, g_inputs[0], &p, &q), ENCDEC_ERR_ARG, "at most 17");
        p = encdec_generate_default_params();
        p.max_new_tokens = 100;
        CHECK_STATUS(encdec_engine_generate(e, g_inputs[0], &p, &q), ENCDEC_ERR_ARG, "over the engine");
        p = params_of(0);
        CHECK_STATUS(encdec_engine_generate(e, "", &p, &q), ENCDEC_ERR_ARG, "empty");
        p = encdec_generate_default_params();
        p.kv_mode = ENCDEC_KV_SELF;
        CHECK_STATUS(encdec_engine_generate(e, g_inputs[0], &p, &q), ENCDEC_ERR_ARG, "full cache");
        float pcm[16] = {0};
        CHECK_STATUS(encdec_engine_transcribe(e, pcm, 16, NULL, &q), ENCDEC_ERR_ARG, "text to text");
        CHECK(q == NULL);
        encdec_engine_free(e);
    }
    for (int i = 0; i < N_REQ; i++) {
        encdec_result_free(ref[i]);
        encdec_result_free(alone[i]);
    }
    encdec_session_free(s);
    encdec_model_free(m);
}

int main(void) {
    variant("tiny-random-t5-v1_1", ENCDEC_ISA_AUTO);
    variant("tiny-random-umt5", ENCDEC_ISA_AUTO);
    /* the portable set: BLIS's gemv (one row) and gemm (more) round differently,
     * which the engine's products must not let through */
    variant("tiny-random-t5-v1_1", ENCDEC_ISA_C);
    return check_done();
}
