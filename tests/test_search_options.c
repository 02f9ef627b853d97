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
 *     them; scores within 1e-2 (relative) or 2e-3 (the random model moves
 *     a late token's log-probability by that much between float32
 *     engines);
 *   - patience: fewer sequences where fewer finished, ranks in order;
 *   - the text: the pieces before the end tokens joined (an end token's
 *     text left out), and on_token's texts adding up to it (greedy);
 *   - return_alternatives without a target prefix (the runs with one, and
 *     prefix_bias_beta, which needs one: the Python Translator's test);
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
            CHECK(fabs(got - want) <= 2e-3 + 1e-2 * fabs(want));
            if (fabs(got - want) > 2e-3 + 1e-2 * fabs(want))
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

static void test_errors(encdec_session *s) {
    encdec_generate_params p = encdec_generate_default_params();
    encdec_result *r = NULL;
    const char *in[1] = {"the cat"};
    p.tgt_lang = "de";
    p.max_new_tokens = 16;
    p.num_beams = 4;
    p.early_stopping = 1;
    p.patience = 65;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "patience 65 is out of range");
    p.patience = -1;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "patience -1 is out of range");
    p.patience = 0.5f;
    p.num_return_sequences = 3;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "num_return_sequences 3 is out of range 1..2");
    p.num_return_sequences = 1;
    p.early_stopping = 0;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "early_stopping 1");
    p.early_stopping = 1;
    p.patience = 0.1f;   /* round(0.4): none */
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "no hypothesis");
    p.patience = 1;
    int bad[2] = {3, 1 << 20};
    p.end_tokens = bad;
    p.n_end_tokens = 2;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "end_tokens[1] is 1048576");
    p.end_tokens = NULL;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "end_tokens: 2 tokens and no list");
    p.n_end_tokens = 0;
    p.num_beams = 1;
    p.coverage_penalty = 0.2f;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "coverage_penalty ranks");
    p.num_beams = 2;
    p.coverage_penalty = NAN;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "coverage_penalty nan");
    p.coverage_penalty = 0;
    p.prefix_bias_beta = 1;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "prefix_bias_beta 1 is not in [0, 1)");
    p.prefix_bias_beta = 0.5f;
    p.return_alternatives = 1;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "not with return_alternatives");
    p.prefix_bias_beta = 0;
    p.do_sample = 1;
    p.num_beams = 1;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "return_alternatives continues");
    p.do_sample = 0;
    p.min_alternative_prob = 2;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "min_alternative_prob 2");
    p.min_alternative_prob = 0;
    p.num_return_sequences = 9;
    p.num_beams = 8;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "9 alternatives x 8 beams");
}

int main(void) {
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/bart-golden/translator-options.json", &golden), ENCDEC_OK);
    if (!golden) return check_done();
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    CHECK_EQ_INT(encdec_model_load(ED_TEST_DATA "/tiny-random-marian-ct2", &m), ENCDEC_OK);
    if (m) CHECK_EQ_INT(encdec_session_new(m, NULL, &s), ENCDEC_OK);
    if (s) {
        /* (the runs with a target prefix: the Translator's test, through an engine) */
        const char *runs[] = {"patience-2", "patience-0.5", "length-penalty-0", "end-token",
                              "end-tokens-greedy", "end-tokens-beam", "coverage", "alternatives-noprefix"};
        for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) check_run(s, m, runs[i]);
        test_errors(s);
    }
    encdec_session_free(s);
    encdec_model_free(m);
    cJSON_Delete(golden);
    return check_done();
}
