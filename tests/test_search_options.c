/* test_search_options.c - CTranslate2's search options in
 * encdec_generate_params (patience, length_penalty 0 under its rules,
 * end_tokens, coverage_penalty, return_alternatives) through a session: every case of a run in
 * one encdec_generate call (the beam search's groups side by side), held
 * to what CTranslate2 4.8.5's translate_batch gives on the random Marian's
 * CTranslate2 directory (tests/data/bart-golden/translator-options.json,
 * tools/golden_translator_options.py: the texts, the target language de,
 * every token but a few suppressed). The Python Translator's test holds
 * the engine's path (token lists in) to the same runs.
 *
 *   - tokens as CTranslate2's hypotheses, end tokens stripped as it strips
 *     them; scores within 1e-2 (relative; 3e-2 on the C kernels) or 2e-3 (the random model moves
 *     a late token's log-probability by that much between float32
 *     engines);
 *   - patience: fewer sequences where fewer finished, ranks in order;
 *   - the text: the pieces before the end tokens joined (an end token's
 *     text left out), and on_token's texts adding up to it (greedy);
 *   - return_alternatives without a target prefix (the runs with one, and
 *     prefix_bias_beta, which needs one: the Python Translator's test);
 *   - on the CPU's best kernels (one thread) and the portable C ones (three);
 *   - errors: patience out of range or with early_stopping 0, more returns
 *     than it finishes, an end token past the vocabulary, a coverage
 *     penalty on a greedy search, the bias and the alternatives out of range
 *     or with what they do not combine with.
 */
#include "allowed.h"
#include "check.h"
#include "encdec.h"
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IN 32

static cJSON *golden;
/* the scores' relative tolerance: 1e-2 on the CPU's best kernels; the
 * portable ones' sums move a late token of this random model further (a
 * hypothesis' score by up to 2.3%, the tokens the same) */
static double g_rel = 1e-2;

static const cJSON *run_named(const char *name) {
    const cJSON *runs = cJSON_GetObjectItem(golden, "runs");
    for (int i = 0; i < cJSON_GetArraySize(runs); i++) {
        const cJSON *r = cJSON_GetArrayItem(runs, i);
        if (!strcmp(cJSON_GetObjectItem(r, "name")->valuestring, name)) return r;
    }
    return NULL;
}

static double opt(const cJSON *o, const char *k, double dflt) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* The run's options as the Translator sets them: CTranslate2's rules, its
 * beam ending on finished hypotheses, every token but the allowed ones
 * suppressed, the target language de. */
static encdec_generate_params params_of(const encdec_model *m, const cJSON *o, int *sup, int *ends) {
    encdec_generate_params p = encdec_generate_default_params();
    p.num_beams = (int)opt(o, "beam_size", 2);
    p.num_return_sequences = (int)opt(o, "num_hypotheses", 1);
    p.length_penalty = (float)opt(o, "length_penalty", 1);
    p.patience = (float)opt(o, "patience", 1);
    p.coverage_penalty = (float)opt(o, "coverage_penalty", 0);
    p.return_alternatives = cJSON_IsTrue(cJSON_GetObjectItem(o, "return_alternatives"));
    p.min_alternative_prob = (float)opt(o, "min_alternative_expansion_prob", 0);
    p.early_stopping = 1;
    p.ctranslate2_rules = 1;
    p.max_new_tokens = cJSON_GetObjectItem(golden, "max_decoding_length")->valueint;
    p.min_new_tokens = 1;
    p.tgt_lang = "de";
    p.suppress_tokens = sup;
    p.n_suppress_tokens = suppress_all_but(m, cJSON_GetObjectItem(golden, "allowed"), sup);
    const cJSON *e = cJSON_GetObjectItem(o, "end_token");
    if (cJSON_IsString(e)) ends[0] = encdec_model_token_id(m, e->valuestring), p.n_end_tokens = 1;
    for (int i = 0; cJSON_IsArray(e) && i < cJSON_GetArraySize(e); i++)
        ends[p.n_end_tokens++] = encdec_model_token_id(m, cJSON_GetArrayItem(e, i)->valuestring);
    p.end_tokens = p.n_end_tokens ? ends : NULL;
    return p;
}

static int is_end(const encdec_generate_params *p, int id, int eos) {
    if (!p->n_end_tokens) return id == eos;
    for (int i = 0; i < p->n_end_tokens; i++)
        if (p->end_tokens[i] == id) return 1;
    return 0;
}

/* The first n pieces of h joined as sentencepiece decodes them, the
 * special ones left out. */
static void joined(const cJSON *h, int n, char *out, size_t cap) {
    size_t k = 0;
    for (int j = 0; j < n && j < cJSON_GetArraySize(h); j++)
        for (const char *t = cJSON_GetArrayItem(h, j)->valuestring; *t && k + 1 < cap;) {
            if (!strcmp(t, "</s>") || !strcmp(t, "<pad>")) break;   /* special: no text */
            if (!strncmp(t, "\xe2\x96\x81", 3)) {
                if (k) out[k++] = ' ';
                t += 3;
            } else {
                out[k++] = *t++;
            }
        }
    out[k] = 0;
}

/* on_token's texts, per input (one sequence each), concatenated */
typedef struct {
    char text[MAX_IN][1024];
} streamed;

static int on_tok(int input, int sequence, int id, float lp, const char *text, void *user) {
    (void)sequence, (void)id, (void)lp;
    streamed *s = user;
    if (input >= 0 && input < MAX_IN) strncat(s->text[input], text, sizeof s->text[input] - strlen(s->text[input]) - 1);
    return 0;
}

static void check_run(encdec_session *s, const encdec_model *m, const char *name) {
    const cJSON *run = run_named(name);
    CHECK(run != NULL);
    if (!run) return;
    const cJSON *o = cJSON_GetObjectItem(run, "options"), *res = cJSON_GetObjectItem(run, "results");
    int keep_end = cJSON_IsTrue(cJSON_GetObjectItem(o, "return_end_token"));
    static int sup[1 << 16], ends[8];
    encdec_generate_params p = params_of(m, o, sup, ends);
    const char *in[MAX_IN];
    int n = cJSON_GetArraySize(res), eos = encdec_model_token_id(m, "</s>");
    for (int c = 0; c < n && c < MAX_IN; c++)
        in[c] = cJSON_GetArrayItem(cJSON_GetObjectItem(golden, "texts"),
                                   cJSON_GetObjectItem(cJSON_GetArrayItem(res, c), "source")->valueint)->valuestring;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_generate(s, in, n, &p, &r), ENCDEC_OK);
    int at = 0;
    for (int c = 0; r && c < n; c++) {
        const cJSON *hyps = cJSON_GetObjectItem(cJSON_GetArrayItem(res, c), "hypotheses");
        const cJSON *scores = cJSON_GetObjectItem(cJSON_GetArrayItem(res, c), "scores");
        for (int k = 0; k < cJSON_GetArraySize(hyps); k++) {
            const encdec_sequence *q = encdec_result_sequence(r, at++);
            CHECK(q && q->input == c && q->rank == k);
            if (!q || q->input != c) {
                fprintf(stderr, "  %s case %d: no hypothesis %d\n", name, c, k);
                return;
            }
            const cJSON *h = cJSON_GetArrayItem(hyps, k);
            int len = q->n_tokens;
            while (!keep_end && len > 0 && is_end(&p, q->tokens[len - 1].id, eos)) len--;
            CHECK_EQ_INT(len, cJSON_GetArraySize(h));
            for (int j = 0; j < len && j < cJSON_GetArraySize(h); j++)
                CHECK_EQ_INT(q->tokens[j].id, encdec_model_token_id(m, cJSON_GetArrayItem(h, j)->valuestring));
            /* a greedy sequence's score is its sum; CTranslate2 divides it by its
             * length (the end token counted) ^ length_penalty, as beams do */
            double want = cJSON_GetArrayItem(scores, k)->valuedouble, got = q->score;
            if (p.num_beams == 1 && !p.return_alternatives) got /= pow(q->n_tokens, p.length_penalty);
            CHECK(fabs(got - want) <= 2e-3 + g_rel * fabs(want));
            if (fabs(got - want) > 2e-3 + g_rel * fabs(want))
                fprintf(stderr, "  %s case %d hypothesis %d: score %g, not %g\n", name, c, k, got, want);
            /* the text: the pieces before the end tokens, as sentencepiece
             * joins them (U+2581 a space, none leading) */
            char want_text[1024];
            int n_text = q->n_tokens;
            while (n_text > 0 && is_end(&p, q->tokens[n_text - 1].id, eos)) n_text--;
            joined(h, n_text, want_text, sizeof want_text);
            CHECK(!strcmp(q->text, want_text));
            if (strcmp(q->text, want_text))
                fprintf(stderr, "  %s case %d hypothesis %d: text \"%s\", not \"%s\"\n", name, c, k, q->text, want_text);
        }
        /* patience: nothing past what finished */
        const encdec_sequence *q = encdec_result_sequence(r, at);
        CHECK(!q || q->input != c);
    }
    CHECK_EQ_INT(at, encdec_result_n_sequences(r));
    /* greedy, streamed: the texts on_token gives add up to the sequences' (an
     * end token's text left out there too) */
    if (r && p.num_beams == 1 && !p.return_alternatives) {
        static streamed got;
        memset(&got, 0, sizeof got);
        p.on_token = on_tok;
        p.user = &got;
        encdec_result *r2 = NULL;
        CHECK_EQ_INT(encdec_generate(s, in, n, &p, &r2), ENCDEC_OK);
        for (int c = 0; r2 && c < n; c++) {
            const encdec_sequence *q = encdec_result_sequence(r2, c);
            CHECK(q && !strcmp(q->text, got.text[c]));
            if (q && strcmp(q->text, got.text[c]))
                fprintf(stderr, "  %s case %d: streamed \"%s\", not \"%s\"\n", name, c, got.text[c], q->text);
        }
        encdec_result_free(r2);
    }
    encdec_result_free(r);
}

/* A parameter set the library refuses: the changes from a 4-beam search
 * (patience 1, early_stopping 1) and the message's words. */
typedef struct {
    int beams, early, n_ret, n_end, sample, alts;
    float patience, cover, bias, min_prob;
    const int *ends;
    const char *msg;
} bad_case;

static void test_errors(encdec_session *s) {
    static const int bad[2] = {3, 1 << 20};
    static const bad_case cases[] = {
        {4, 1, 1, 0, 0, 0, 65, 0, 0, 0, NULL, "patience 65 is out of range"},
        {4, 1, 1, 0, 0, 0, -1, 0, 0, 0, NULL, "patience -1 is out of range"},
        {4, 1, 3, 0, 0, 0, 0.5f, 0, 0, 0, NULL, "num_return_sequences 3 is out of range 1..2"},
        {4, 0, 1, 0, 0, 0, 0.5f, 0, 0, 0, NULL, "early_stopping 1"},
        {4, 1, 1, 0, 0, 0, 0.1f, 0, 0, 0, NULL, "no hypothesis"},   /* round(0.4): none */
        {4, 1, 1, 2, 0, 0, 1, 0, 0, 0, bad, "end_tokens[1] is 1048576"},
        {4, 1, 1, 2, 0, 0, 1, 0, 0, 0, NULL, "end_tokens: 2 tokens and no list"},
        {1, 1, 1, 0, 0, 0, 1, 0.2f, 0, 0, NULL, "coverage_penalty ranks"},
        {2, 1, 1, 0, 0, 0, 1, NAN, 0, 0, NULL, "coverage_penalty nan"},
        {2, 1, 1, 0, 0, 0, 1, 0, 1, 0, NULL, "prefix_bias_beta 1 is not in [0, 1)"},
        {2, 1, 1, 0, 0, 1, 1, 0, 0.5f, 0, NULL, "not with return_alternatives"},
        {1, 1, 1, 0, 1, 1, 1, 0, 0, 0, NULL, "return_alternatives continues"},
        {1, 1, 1, 0, 0, 1, 1, 0, 0, 2, NULL, "min_alternative_prob 2"},
        {8, 1, 9, 0, 0, 1, 1, 0, 0, 0, NULL, "9 alternatives x 8 beams"},
    };
    const char *in[1] = {"the cat"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const bad_case *c = &cases[i];
        encdec_generate_params p = encdec_generate_default_params();
        encdec_result *r = NULL;
        p.tgt_lang = "de";
        p.max_new_tokens = 16;
        p.num_beams = c->beams, p.early_stopping = c->early, p.num_return_sequences = c->n_ret;
        p.n_end_tokens = c->n_end, p.end_tokens = c->ends, p.do_sample = c->sample;
        p.return_alternatives = c->alts, p.patience = c->patience, p.coverage_penalty = c->cover;
        p.prefix_bias_beta = c->bias, p.min_alternative_prob = c->min_prob;
        CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, c->msg);
        encdec_result_free(r);
    }
}

int main(void) {
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/bart-golden/translator-options.json", &golden), ENCDEC_OK);
    if (!golden) return check_done();
    /* the CPU's best kernels on one thread, then the portable C ones on three */
    static const struct { encdec_isa isa; int threads; } sets[] = {{ENCDEC_ISA_AUTO, 1}, {ENCDEC_ISA_C, 3}};
    for (size_t k = 0; k < sizeof sets / sizeof *sets; k++) {
        encdec_model *m = NULL;
        encdec_session *s = NULL;
        encdec_model_params mp = encdec_model_default_params();
        mp.isa = sets[k].isa;
        g_rel = sets[k].isa == ENCDEC_ISA_C ? 3e-2 : 1e-2;
        CHECK_EQ_INT(encdec_model_load_ex(ED_TEST_DATA "/tiny-random-marian-ct2", &mp, &m), ENCDEC_OK);
        encdec_session_params sp = encdec_session_default_params();
        sp.n_threads = sets[k].threads;
        if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
        if (s) {
            /* (the runs with a target prefix: the Translator's test, through an engine) */
            const char *runs[] = {"patience-2", "patience-0.5", "length-penalty-0", "end-token",
                                  "end-tokens-greedy", "end-tokens-beam", "coverage", "alternatives-noprefix"};
            for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) check_run(s, m, runs[i]);
            if (k == 0) test_errors(s);
        }
        encdec_session_free(s);
        encdec_model_free(m);
    }
    cJSON_Delete(golden);
    return check_done();
}
