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
 * alone (test_t5_golden pins the session against transformers). Requests
 * submitted together share encoder passes (their inputs packed, where the
 * products are row-invariant: every set but the portable one), so this
 * also holds each input's encoding packed against alone, in f32, bf16 and
 * int8 and on the AVX2 set. Greedy and sampling requests stream their
 * tokens (on_token) meanwhile. Streaming itself: on a session and an
 * engine, every token told once, in order, with its log-prob, the texts
 * joined equal to the sequence's, each a complete UTF-8 piece (byte-piece
 * characters held back until complete, on mT5's tokenizer); stopping from
 * the callback; beams refused. Then the engine's refusals.
 */
#include "check.h"
#include "encdec.h"
#include "api/gen_stream.h"
#include "base/utf8.h"
#include "kern/gemm.h"
#include "kern/kern.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_IN 4
#define N_KIND 4
#define N_REQ (N_IN * N_KIND)

static const char *g_inputs[N_IN] = {
    "translate English to German: The house is wonderful.",
    "summarize: studies have shown that owning a dog is good for you",
    "Mr. Dashwood had then leisure to consider",
    NULL,   /* g_long: over T5_XKV_ROWS tokens, so that its cross K|V product takes two
               blocks alone and straddles a block boundary when packed with the others */
};
static char g_long[4096];

static atomic_long g_streamed;   /* tokens told to count_token, every thread */

static int count_token(int input, int sequence, int id, float lp, const char *text, void *user) {
    (void)input, (void)sequence, (void)id, (void)lp, (void)text, (void)user;
    atomic_fetch_add(&g_streamed, 1);
    return 0;
}

/* Greedy and sampling stream their tokens (on_token, on the engine's
 * watched path), which must not change them. */
static encdec_generate_params params_of(int kind) {
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = 24;
    if (kind < 2) p.on_token = count_token;
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

/* ---- streaming (on_token) ---- */

typedef struct {
    char text[8][4096];      /* [input * 4 + sequence] the deltas joined */
    int ids[8][64], n[8];
    float lps[8][64];
    int bad_utf8, calls, stop_after;
} streamed;

static int valid_utf8(const char *s) {
    size_t n = strlen(s);
    for (size_t at = 0; at < n;) {
        uint32_t cp;
        int k = ed_utf8_next((const uint8_t *)s + at, n - at, &cp);
        if (k <= 0) return 0;
        at += (size_t)k;
    }
    return 1;
}

static int on_token(int input, int sequence, int id, float lp, const char *text, void *user) {
    streamed *s = user;
    int q = input * 4 + sequence;
    if (q < 0 || q >= 8 || s->n[q] >= 64) return 1;
    s->bad_utf8 += !valid_utf8(text);
    if (strlen(s->text[q]) + strlen(text) < sizeof s->text[q]) strcat(s->text[q], text);
    s->lps[q][s->n[q]] = lp;
    s->ids[q][s->n[q]++] = id;
    return ++s->calls == s->stop_after;
}

/* What on_token told equals the result: per sequence, the token ids and
 * log-probs in order, and the deltas joined are the sequence's text. */
static void check_streamed(const streamed *s, const encdec_result *r, int n_ret) {
    CHECK_EQ_INT(s->bad_utf8, 0);
    int told = 0;
    for (int i = 0; r && i < encdec_result_n_sequences(r); i++) {
        const encdec_sequence *q = encdec_result_sequence(r, i);
        int k = q->input * 4 + i % n_ret;
        CHECK_STR(s->text[k], q->text);
        CHECK_EQ_INT(s->n[k], q->n_tokens);
        for (int t = 0; t < q->n_tokens && t < s->n[k]; t++) {
            CHECK_EQ_INT(s->ids[k][t], q->tokens[t].id);
            CHECK(memcmp(&s->lps[k][t], &q->tokens[t].logprob, sizeof(float)) == 0);
        }
        told += s->n[k];
    }
    CHECK_EQ_INT(s->calls, told);
}

/* on_token through a session (two inputs at once) and an engine request:
 * greedy and three samples; stopping from the callback; beams refused. */
static void check_stream(encdec_model *m, encdec_session *s, encdec_engine *e) {
    const char *in[2] = {g_inputs[0], g_inputs[2]};
    for (int kind = 0; kind < 2; kind++) {
        encdec_generate_params p = params_of(kind);
        streamed *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
        p.on_token = on_token;
        p.user = a;
        encdec_result *r = NULL;
        CHECK_EQ_INT(encdec_generate(s, in, 2, &p, &r), ENCDEC_OK);
        check_streamed(a, r, p.num_return_sequences);
        encdec_result_free(r);
        p.user = b;
        encdec_request *q = NULL;
        r = NULL;
        CHECK_EQ_INT(encdec_engine_generate(e, in[1], &p, &q), ENCDEC_OK);
        if (q) CHECK_EQ_INT(encdec_request_wait(q, &r), ENCDEC_OK);
        encdec_request_free(q);
        check_streamed(b, r, p.num_return_sequences);
        /* the engine's input 0 is the session's input 1 */
        for (int k = 0; k < p.num_return_sequences; k++) CHECK_STR(b->text[k], a->text[4 + k]);
        encdec_result_free(r);
        free(a);
        free(b);
    }
    /* a callback that stops after 5 tokens */
    encdec_generate_params p = params_of(0);
    streamed *st = calloc(1, sizeof *st);
    st->stop_after = 5;
    p.on_token = on_token;
    p.user = st;
    encdec_result *r = NULL;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_CANCELLED, "stop");
    CHECK(r == NULL && st->calls == 5);
    memset(st, 0, sizeof *st);
    st->stop_after = 5;
    encdec_request *q = NULL;
    CHECK_EQ_INT(encdec_engine_generate(e, in[0], &p, &q), ENCDEC_OK);
    if (q) CHECK_STATUS(encdec_request_wait(q, &r), ENCDEC_ERR_CANCELLED, "stop");
    encdec_request_free(q);
    CHECK(r == NULL && st->calls >= 5 && st->calls < 24);
    /* beams: refused at once */
    p = params_of(2);
    p.on_token = on_token;
    p.user = st;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "beam");
    q = NULL;
    CHECK_STATUS(encdec_engine_generate(e, in[0], &p, &q), ENCDEC_ERR_ARG, "beam");
    CHECK(q == NULL);
    free(st);
    (void)m;
}

/* Streaming against decoding the whole sequence, where the decoders' context
 * matters: hot sampling (every kind of token: byte pieces, sentinels, </s>'s
 * neighbours, padding ids past the tokenizer, spaces alone) on each tokenizer
 * style (mT5: sentencepiece with byte fallback and sentinels past its
 * pieces; umT5: tokenizer.json; T5 v1.0: spiece.model), 2 inputs x 4
 * samples x 60 tokens x 4 seeds: the pieces joined are the final text. */
static void check_stream_decoders(void) {
    const char *models[] = {"tiny-random-mt5", "tiny-random-umt5", "tiny-random-t5-v1_0"};
    for (int mi = 0; mi < 3; mi++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", ED_TEST_DATA, models[mi]);
        encdec_model *m = NULL;
        encdec_session *s = NULL;
        CHECK_EQ_INT(encdec_model_load(dir, &m), ENCDEC_OK);
        encdec_session_params sp = {1};
        if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
        const char *in[2] = {g_inputs[1], g_inputs[2]};
        for (int seed = 1; s && seed <= 4; seed++) {
            encdec_generate_params p = encdec_generate_default_params();
            p.max_new_tokens = 60;
            p.do_sample = 1;
            p.temperature = 4.0f;
            p.num_return_sequences = 4;
            p.seed = (uint64_t)seed;
            streamed *sd = calloc(1, sizeof *sd);
            p.on_token = on_token;
            p.user = sd;
            encdec_result *r = NULL;
            CHECK_EQ_INT(encdec_generate(s, in, 2, &p, &r), ENCDEC_OK);
            check_streamed(sd, r, 4);
            encdec_result_free(r);
            free(sd);
        }
        encdec_session_free(s);
        encdec_model_free(m);
    }
}

/* Characters spelled by byte pieces (mT5's tokenizer falls back to bytes:
 * 鼈 is 3 pieces, 😀 4): gen_stream holds back a character's first bytes
 * (U+FFFD in the decoded text) until its last arrives, and at the end of a
 * sequence cut inside a character gives the U+FFFD the decoded text has. */
static void check_holdback(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tiny-random-mt5", ED_TEST_DATA);
    spm_tok *t = NULL;
    CHECK_EQ_INT(spm_load_dir(&t, dir), ENCDEC_OK);
    if (!t) return;
    const char *text = "a 老 鼈 😀 é";
    int *ids = NULL, n = 0;
    CHECK_EQ_INT(spm_encode(t, text, strlen(text), 1, &ids, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, 14);   /* a, 老, space, 3 bytes, space, 4 bytes, space, é, </s> */
    const int cuts[2] = {14, 5};   /* all of it; cut after 鼈's 2nd byte */
    ed_ttok *tt = NULL;
    CHECK_EQ_INT(ttok_wrap_spm(&tt, t), ENCDEC_OK);
    for (int c = 0; c < 2 && n == 14; c++) {
        int cut = cuts[c];
        streamed *sd = calloc(1, sizeof *sd);
        encdec_generate_params p = encdec_generate_default_params();
        p.on_token = on_token;
        p.user = sd;
        p.max_new_tokens = cut;
        float lps[14] = {0};
        gen_stream g;
        CHECK_EQ_INT(gen_stream_init(&g, tt, spm_eos(t), &p, 1, ids, lps), ENCDEC_OK);
        int pieces[14];
        for (int k = 1; k <= cut; k++) {   /* one token a step */
            CHECK_EQ_INT(gen_stream_flush(&g, &k), 0);
            pieces[k - 1] = (int)strlen(sd->text[0]);
        }
        gen_stream_free(&g);
        char *whole = NULL;
        CHECK_EQ_INT(gen_text(tt, ids, cut, &whole), ENCDEC_OK);
        CHECK_STR(sd->text[0], whole ? whole : "");
        CHECK_EQ_INT(sd->bad_utf8, 0);
        CHECK_EQ_INT(sd->calls, cut);
        if (cut == n) {
            /* (a space shows with the token after it, as the decoded text has it) */
            CHECK(pieces[4] == pieces[3] && pieces[5] == pieces[3] + 3);
            CHECK(pieces[8] == pieces[7] && pieces[9] == pieces[7] && pieces[10] == pieces[7] + 4);
        } else {
            CHECK(strstr(sd->text[0], "\xef\xbf\xbd") != NULL);   /* the cut character */
        }
        free(whole);
        free(sd);
    }
    free(ids);
    ttok_free(tt);
    spm_free(t);
}

/* requests submitted together and encoder passes they took, where the
 * engine packs inputs (not the portable set) */
static long long g_packable, g_passes;

static void variant(const char *name, encdec_isa isa, encdec_compute compute) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", ED_TEST_DATA, name);
    encdec_model *m = NULL;
    encdec_model_params mp = encdec_model_default_params();   /* ENCDEC_DEVICE=cuda: on the device */
    mp.compute = compute;
    mp.isa = isa;
    /* On a device the sessions' products (cuBLAS) and the engine's
     * batch-invariant ones sum in different orders: a request's result is
     * then compared with itself alone, among others and queued, not with
     * the session's; the kernel sets are the CPU's business. */
    int on_dev = mp.device != ENCDEC_DEVICE_CPU;
    if (on_dev && isa != ENCDEC_ISA_AUTO) return;
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
        if (ref[i] && alone[i] && !on_dev) CHECK(same(ref[i], alone[i]));
        if (ref[i] && alone[i] && on_dev) CHECK(encdec_result_n_sequences(ref[i]) == encdec_result_n_sequences(alone[i]));
    }
    if (e && isa == ENCDEC_ISA_AUTO && compute == ENCDEC_COMPUTE_F32) check_stream(m, s, e);
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
    fprintf(stderr, "%s (%s, %s): %d requests together, %.2f sequences a step, %lld encoder "
            "passes; \"%s\"\n", name, encdec_isa_name(isa), compute == ENCDEC_COMPUTE_F32 ? "f32" : compute == ENCDEC_COMPUTE_BF16 ? "bf16" : "int8", N_REQ, per, st1.encodes - st0.encodes,
            alone[0] ? encdec_result_text(alone[0]) : "");
    CHECK(per > 3);
    if (isa != ENCDEC_ISA_C && !on_dev) {   /* (a device's engine encodes each input alone) */
        g_packable += N_REQ;
        g_passes += st1.encodes - st0.encodes;
    }
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
    snprintf(g_long, sizeof g_long, "summarize:");
    for (int i = 0; i < 12; i++)   /* ~370 tokens */
        snprintf(g_long + strlen(g_long), sizeof g_long - strlen(g_long),
                 " the cat %d sat on the mat and looked at the garden.", i);
    g_inputs[3] = g_long;
    check_holdback();
    check_stream_decoders();
    variant("tiny-random-t5-v1_1", ENCDEC_ISA_AUTO, ENCDEC_COMPUTE_F32);
    variant("tiny-random-umt5", ENCDEC_ISA_AUTO, ENCDEC_COMPUTE_F32);
    /* the packed encoder's other weight layouts: bf16 (AMX-packed where the
     * tiles run) and int8 */
    variant("tiny-random-t5-v1_1", ENCDEC_ISA_AUTO, ENCDEC_COMPUTE_BF16);
    variant("tiny-random-t5-v1_1", ENCDEC_ISA_AUTO, ENCDEC_COMPUTE_INT8);
    /* AVX2's packed GEMM where the CPU has more (an AVX2-only CPU runs it as
     * AUTO) */
    if (k_isa_cpu() > K_ISA_VEC) variant("tiny-random-t5-v1_1", ENCDEC_ISA_AVX2, ENCDEC_COMPUTE_F32);
    /* the portable set: BLIS's gemv (one row) and gemm (more) round differently,
     * which the engine's products must not let through (its encoder passes
     * are not packed there) */
    variant("tiny-random-t5-v1_1", ENCDEC_ISA_C, ENCDEC_COMPUTE_F32);
    /* inputs submitted at once were packed into shared encoder passes (each
     * variant's requests queue while the first encodes: all 60 going one
     * by one would mean no packing at all) */
    fprintf(stderr, "%lld requests submitted together took %lld encoder passes; %ld tokens "
            "streamed\n", g_packable, g_passes, atomic_load(&g_streamed));
    CHECK(atomic_load(&g_streamed) > 0);
    if (g_packable && k_gemm_path(k_isa_cpu(), K_GEMM_F32) >= 1) CHECK(g_passes < g_packable);
    return check_done();
}
