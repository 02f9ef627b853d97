/* test_replace_unknowns.c - a text generation's <unk> written as the input
 * token it attends to most (encdec_generate_params.replace_unknowns), held
 * to what LibreTranslate's engine gives: tools/golden_lt_unknowns.py runs
 * Argos Translate's pipeline (sentencepiece's pieces, CTranslate2's
 * translate_batch with beam 4, length_penalty 0.2 and replace_unknowns,
 * its detokenizer) on the random Marian's CTranslate2 directory, each case
 * generating only <unk>, </s> and six tokens (the rest suppressed), so that
 * a random model's hypotheses hold <unk>; the target language de (the
 * model's >>de<< token first).
 *
 *   - the tokenizer's source tokens as spelled (ttok_encode_pieces) equal
 *     sentencepiece's pieces: an unknown character its own piece as it
 *     reads, a piece the vocabulary lacks as segmented; their ids
 *     MarianTokenizer's (an unknown character that vocab.json holds is
 *     its id there, not <unk>);
 *   - through a session (all cases at once) and an engine (one request a
 *     case, submitted together): the best two hypotheses' tokens are
 *     CTranslate2's, their texts Argos Translate's (white space at the
 *     ends stripped, as MarianTokenizer decodes), a replaced token's text
 *     the piece it became; no attention comes back unless asked;
 *   - off: the same tokens, the <unk> left out of the text;
 *   - errors: a value other than 0 or 1, with on_token.
 */
#include "allowed.h"
#include "check.h"
#include "encdec.h"
#include "tok/text.h"
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CASES 16
#define MAX_TOK 64

static cJSON *golden;
static const cJSON *cases;
static int n_cases;

/* s with U+2581 as spaces and the white space at both ends dropped. */
static void readable(const char *s, char *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; s[i] && k + 1 < cap;) {
        if (!strncmp(s + i, "\xe2\x96\x81", 3)) out[k++] = ' ', i += 3;
        else out[k++] = s[i++];
    }
    out[k] = 0;
    while (k && strchr(" \t\n\r", out[k - 1])) out[--k] = 0;
    size_t lead = strspn(out, " \t\n\r");
    memmove(out, out + lead, k - lead + 1);
}

static void test_pieces(void) {
    ed_ttok *t = NULL;
    CHECK_EQ_INT(ttok_load_marian(&t, ED_TEST_DATA "/tiny-random-marian-ct2"), ENCDEC_OK);
    for (int c = 0; t && c < n_cases; c++) {
        const cJSON *cs = cJSON_GetArrayItem(cases, c), *want = cJSON_GetObjectItem(cs, "pieces");
        const char *text = cJSON_GetObjectItem(cs, "text")->valuestring;
        int *ids = NULL, n = 0;
        char **pieces = NULL;
        int de = ttok_find_lang(t, cJSON_GetObjectItem(golden, "tgt_lang")->valuestring);
        CHECK(de >= 0);
        CHECK_EQ_INT(ttok_encode_pieces(t, text, strlen(text), -1, de, &ids, &n, &pieces), ENCDEC_OK);
        CHECK_EQ_INT(n, cJSON_GetArraySize(want));
        for (int i = 0; pieces && i < n && i < cJSON_GetArraySize(want); i++) {
            const char *w = cJSON_GetArrayItem(want, i)->valuestring;
            CHECK(!strcmp(pieces[i], w));
            if (strcmp(pieces[i], w)) fprintf(stderr, "  case %d piece %d: %s, not %s\n", c, i, pieces[i], w);
        }
        /* the ids, as MarianTokenizer gives them; the same without the pieces */
        const cJSON *wid = cJSON_GetObjectItem(cs, "ids");
        int *plain = NULL, np = 0;
        CHECK_EQ_INT(ttok_encode_lang(t, text, strlen(text), -1, de, &plain, &np), ENCDEC_OK);
        CHECK_EQ_INT(np, cJSON_GetArraySize(wid));
        for (int i = 0; ids && plain && i < n && i < np && i < cJSON_GetArraySize(wid); i++) {
            CHECK_EQ_INT(ids[i], cJSON_GetArrayItem(wid, i)->valueint);
            CHECK_EQ_INT(plain[i], ids[i]);
        }
        free(plain);
        free(ids);
        free(pieces);
    }
    ttok_free(t);
}

/* The search as Argos Translate asks CTranslate2 for it, every token but
 * the allowed suppressed. */
static encdec_generate_params lt_params(const encdec_model *m, int *sup, int replace) {
    encdec_generate_params p = encdec_generate_default_params();
    p.num_beams = 4;
    p.num_return_sequences = 2;
    p.length_penalty = (float)cJSON_GetObjectItem(golden, "length_penalty")->valuedouble;
    p.early_stopping = 1;
    p.ctranslate2_rules = 1;
    p.max_new_tokens = cJSON_GetObjectItem(golden, "max_decoding_length")->valueint;
    p.min_new_tokens = 1;   /* CTranslate2's min_decoding_length */
    p.replace_unknowns = replace;
    p.tgt_lang = cJSON_GetObjectItem(golden, "tgt_lang")->valuestring;   /* its >>de<< first */
    p.suppress_tokens = sup;
    p.n_suppress_tokens = suppress_all_but(m, cJSON_GetObjectItem(golden, "allowed"), sup);
    return p;
}

/* Sequence rank k of case c against the golden's hypothesis k. */
static void check_seq(const encdec_model *m, const encdec_sequence *q, int c, int k, int replace) {
    const cJSON *h = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cases, c), "hypotheses"), k);
    const cJSON *raw = cJSON_GetObjectItem(h, "raw"), *rep = cJSON_GetObjectItem(h, "tokens");
    int n = cJSON_GetArraySize(raw), eos = encdec_model_token_id(m, "</s>");
    int len = q->n_tokens && q->tokens[q->n_tokens - 1].id == eos ? q->n_tokens - 1 : q->n_tokens;
    CHECK_EQ_INT(len, n);
    if (len != n) {
        fprintf(stderr, "  case %d hypothesis %d: %d tokens, not %d\n", c, k, len, n);
        return;
    }
    char want[1024], got[256];
    for (int j = 0; j < n; j++) {
        CHECK_EQ_INT(q->tokens[j].id, encdec_model_token_id(m, cJSON_GetArrayItem(raw, j)->valuestring));
        const char *r = cJSON_GetArrayItem(rep, j)->valuestring;
        if (!replace || !strcmp(r, cJSON_GetArrayItem(raw, j)->valuestring)) continue;
        readable(r, want, sizeof want);   /* a replaced token's text: the piece */
        readable(q->tokens[j].text ? q->tokens[j].text : "", got, sizeof got);
        CHECK(!strcmp(got, want));
    }
    if (replace) {
        readable(cJSON_GetObjectItem(h, "text")->valuestring, want, sizeof want);
    } else {   /* the <unk> left out */
        size_t w = 0;
        want[0] = 0;
        for (int j = 0; j < n; j++) {
            const char *r = cJSON_GetArrayItem(raw, j)->valuestring;
            if (strcmp(r, "<unk>")) w += (size_t)snprintf(want + w, sizeof want - w, "%s", r);
        }
        char tmp[1024];
        readable(want, tmp, sizeof tmp);
        strcpy(want, tmp);
    }
    CHECK(q->text && !strcmp(q->text, want));
    if (!q->text || strcmp(q->text, want))
        fprintf(stderr, "  case %d hypothesis %d: \"%s\", not \"%s\"\n", c, k, q->text ? q->text : "", want);
}

static int no_tokens(int input, int sequence, int id, float logprob, const char *text, void *user) {
    (void)input, (void)sequence, (void)id, (void)logprob, (void)text, (void)user;
    return 0;
}

static void test_generation(void) {
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_model_load(ED_TEST_DATA "/tiny-random-marian-ct2", &m), ENCDEC_OK);
    if (!m) return;
    CHECK_EQ_INT(encdec_session_new(m, NULL, &s), ENCDEC_OK);
    CHECK_EQ_INT(encdec_engine_new(m, NULL, &e), ENCDEC_OK);
    static int sup[4096];
    const char *texts[MAX_CASES];
    for (int c = 0; c < n_cases; c++) texts[c] = cJSON_GetObjectItem(cJSON_GetArrayItem(cases, c), "text")->valuestring;
    for (int replace = 1; s && e && replace >= 0; replace--) {
        encdec_generate_params p = lt_params(m, sup, replace);
        /* a session, every case at once */
        encdec_result *r = NULL;
        CHECK_EQ_INT(encdec_generate(s, texts, n_cases, &p, &r), ENCDEC_OK);
        CHECK(!r || encdec_result_n_sequences(r) == 2 * n_cases);
        for (int i = 0; r && i < encdec_result_n_sequences(r); i++) {
            const encdec_sequence *q = encdec_result_sequence(r, i);
            check_seq(m, q, q->input, q->rank, replace);
            CHECK(encdec_result_attention(r, i, NULL) == NULL);   /* not asked for */
        }
        encdec_result_free(r);
        /* an engine, a request a case, together */
        encdec_request *rq[MAX_CASES] = {0};
        for (int c = 0; c < n_cases; c++) CHECK_EQ_INT(encdec_engine_generate(e, texts[c], &p, &rq[c]), ENCDEC_OK);
        for (int c = 0; c < n_cases; c++) {
            encdec_result *a = NULL;
            if (rq[c]) CHECK_EQ_INT(encdec_request_wait(rq[c], &a), ENCDEC_OK);
            for (int k = 0; a && k < encdec_result_n_sequences(a); k++)
                check_seq(m, encdec_result_sequence(a, k), c, k, replace);
            encdec_result_free(a);
            encdec_request_free(rq[c]);
        }
    }
    /* asked for too: the attention of the sequences holding <unk> */
    encdec_generate_params p = lt_params(m, sup, 1);
    p.return_attention = 2;
    encdec_result *r = NULL;
    if (s) CHECK_EQ_INT(encdec_generate(s, texts, 1, &p, &r), ENCDEC_OK);
    for (int i = 0; r && i < encdec_result_n_sequences(r); i++) {
        const encdec_sequence *q = encdec_result_sequence(r, i);
        int unk = 0;
        for (int j = 0; j < q->n_tokens; j++) unk |= q->tokens[j].id == encdec_model_token_id(m, "<unk>");
        CHECK((encdec_result_attention(r, i, NULL) != NULL) == unk);
        check_seq(m, q, 0, q->rank, 1);
    }
    encdec_result_free(r);
    /* errors */
    p.replace_unknowns = 2;
    CHECK_STATUS(encdec_generate(s, texts, 1, &p, &r), ENCDEC_ERR_ARG, "replace_unknowns 2");
    p = encdec_generate_default_params();
    p.replace_unknowns = 1;
    p.on_token = no_tokens;
    CHECK_STATUS(encdec_generate(s, texts, 1, &p, &r), ENCDEC_ERR_ARG, "not with on_token");
    encdec_engine_free(e);
    encdec_session_free(s);
    encdec_model_free(m);
}

int main(void) {
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/bart-golden/lt-unknowns.json", &golden), ENCDEC_OK);
    cases = golden ? cJSON_GetObjectItem(golden, "cases") : NULL;
    n_cases = cJSON_GetArraySize(cases);
    CHECK(n_cases >= 8 && n_cases <= MAX_CASES);
    if (n_cases > MAX_CASES) n_cases = MAX_CASES;
    test_pieces();
    test_generation();
    cJSON_Delete(golden);
    return check_done();
}
