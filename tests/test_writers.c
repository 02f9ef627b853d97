/* test_writers.c - encdec_result_format (src/out/) against openai-whisper's
 * writers (WriteTXT, WriteVTT, WriteSRT, WriteTSV; tests/data/
 * whisper-decode-golden.json) on the transcripts of tests/data/
 * longform-golden.json, byte for byte: segment cues, and cues rebuilt from
 * the words with line widths, line counts, words per line and
 * highlighting. Also: the JSON holds what openai-whisper's result holds;
 * format names; bad options.
 */
#include "check.h"

#include "api/api.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

/* A result holding the segments (and words) of a golden case. */
static encdec_result *result_of(const cJSON *cs) {
    encdec_result *r = calloc(1, sizeof *r);
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(cs, "segments")) {
        size_t first_tok = r->n_tokens, first_word = r->n_words, off;
        const cJSON *t, *w;
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(g, "tokens")) api_result_add_token(r, t->valueint, 0, "x", 1, 0);
        int nw = 0;
        cJSON_ArrayForEach(w, cJSON_GetObjectItem(g, "words")) {
            const char *s = cJSON_GetObjectItem(w, "word")->valuestring;
            api_result_add_str(r, s, strlen(s), &off);
            api_result_add_word(r, off, cJSON_GetObjectItem(w, "start")->valuedouble,
                                cJSON_GetObjectItem(w, "end")->valuedouble,
                                (float)cJSON_GetObjectItem(w, "probability")->valuedouble);
            nw++;
        }
        const char *text = cJSON_GetObjectItem(g, "text")->valuestring;
        api_result_add_str(r, text, strlen(text), &off);
        encdec_segment seg = {(int)r->n_segs, cJSON_GetObjectItem(g, "seek")->valueint,
                              cJSON_GetObjectItem(g, "start")->valuedouble,
                              cJSON_GetObjectItem(g, "end")->valuedouble, NULL,
                              cJSON_GetArraySize(cJSON_GetObjectItem(g, "tokens")), NULL, 0,
                              (float)cJSON_GetObjectItem(g, "avg_logprob")->valuedouble,
                              (float)cJSON_GetObjectItem(g, "compression_ratio")->valuedouble,
                              (float)cJSON_GetObjectItem(g, "no_speech_prob")->valuedouble, nw, NULL};
        api_result_add_segment(r, &seg, off, first_tok, first_word);
    }
    api_result_add_sequence(r, 0, 0, 0, 0, (int)r->n_tokens,
                            strdup(cJSON_GetObjectItem(cs, "text")->valuestring));
    r->language = "en";
    api_result_finish(r);
    return r;
}

static const cJSON *find_case(const cJSON *lf, const char *name) {
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(lf, "cases"))
        if (!strcmp(cJSON_GetObjectItem(c, "recording")->valuestring, "talk") &&
            !strcmp(cJSON_GetObjectItem(c, "case")->valuestring, name))
            return c;
    return NULL;
}

static int opt(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : v ? v->valueint : 0;
}

static void test_formats(const cJSON *writers, const cJSON *lf) {
    int n = 0, bad = 0;
    const cJSON *w;
    cJSON_ArrayForEach(w, writers) {
        const cJSON *cs = find_case(lf, cJSON_GetObjectItem(w, "case")->valuestring);
        encdec_format f;
        CHECK(cs && !encdec_format_parse(cJSON_GetObjectItem(w, "format")->valuestring, &f));
        if (!cs) continue;
        const cJSON *o = cJSON_GetObjectItem(w, "options");
        encdec_format_options fo = {opt(o, "max_line_width"), opt(o, "max_line_count"),
                                    opt(o, "max_words_per_line"), opt(o, "highlight_words")};
        encdec_result *r = result_of(cs);
        char *s = NULL;
        CHECK_EQ_INT(encdec_result_format(r, f, &fo, &s), ENCDEC_OK);
        const char *want = cJSON_GetObjectItem(w, "text")->valuestring;
        if (!s || strcmp(s, want)) {
            bad++;
            size_t k = 0;
            while (s && s[k] && s[k] == want[k]) k++;
            fprintf(stderr, "%s %s %s: differs at byte %zu: ...%.60s... vs ...%.60s...\n",
                    cJSON_GetObjectItem(w, "case")->valuestring, encdec_format_name(f),
                    cJSON_PrintUnformatted(o), k, s ? s + (k > 20 ? k - 20 : 0) : "(null)",
                    want + (k > 20 ? k - 20 : 0));
        }
        encdec_free(s);
        encdec_result_free(r);
        n++;
    }
    printf("writers: %d outputs, %d differ from openai-whisper's\n", n, bad);
    CHECK(n >= 15);
    CHECK_EQ_INT(bad, 0);
}

static void test_json(const cJSON *lf) {
    const cJSON *cs = find_case(lf, "words");
    if (!cs) return;
    encdec_result *r = result_of(cs);
    char *s = NULL;
    CHECK_EQ_INT(encdec_result_format(r, ENCDEC_FORMAT_JSON, NULL, &s), ENCDEC_OK);
    cJSON *j = s ? cJSON_Parse(s) : NULL;
    CHECK(j != NULL);
    if (j) {
        CHECK_STR(cJSON_GetObjectItem(j, "text")->valuestring, cJSON_GetObjectItem(cs, "text")->valuestring);
        CHECK_STR(cJSON_GetObjectItem(j, "language")->valuestring, "en");
        const cJSON *a = cJSON_GetObjectItem(j, "segments"), *b = cJSON_GetObjectItem(cs, "segments");
        CHECK_EQ_INT(cJSON_GetArraySize(a), cJSON_GetArraySize(b));
        const char *keys[] = {"seek", "start", "end", "avg_logprob", "compression_ratio", "no_speech_prob"};
        for (int i = 0; i < cJSON_GetArraySize(a) && i < cJSON_GetArraySize(b); i++) {
            const cJSON *x = cJSON_GetArrayItem(a, i), *y = cJSON_GetArrayItem(b, i);
            CHECK_EQ_INT(cJSON_GetObjectItem(x, "id")->valueint, i);
            CHECK_STR(cJSON_GetObjectItem(x, "text")->valuestring, cJSON_GetObjectItem(y, "text")->valuestring);
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
                CHECK_NEAR(cJSON_GetObjectItem(x, keys[k])->valuedouble,
                           cJSON_GetObjectItem(y, keys[k])->valuedouble, 1e-6);
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(x, "tokens")),
                         cJSON_GetArraySize(cJSON_GetObjectItem(y, "tokens")));
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(x, "words")),
                         cJSON_GetArraySize(cJSON_GetObjectItem(y, "words")));
            CHECK(cJSON_IsNumber(cJSON_GetObjectItem(x, "temperature")));
        }
    }
    cJSON_Delete(j);
    encdec_free(s);
    encdec_result_free(r);
}

static void test_args(void) {
    encdec_format f;
    CHECK_EQ_INT(encdec_format_parse("srt", &f), 0);
    CHECK_EQ_INT(f, ENCDEC_FORMAT_SRT);
    CHECK_EQ_INT(encdec_format_parse("SRT", &f), -1);
    CHECK_EQ_INT(encdec_format_parse("docx", &f), -1);
    CHECK_EQ_INT(encdec_format_parse(NULL, &f), -1);
    CHECK_STR(encdec_format_name(ENCDEC_FORMAT_TSV), "tsv");
    CHECK_STR(encdec_format_name((encdec_format)42), "unknown");
    encdec_result *r = calloc(1, sizeof *r);
    api_result_finish(r);
    char *s = NULL;
    encdec_format_options bad = {-1, 0, 0, 0};
    CHECK_STATUS(encdec_result_format(r, ENCDEC_FORMAT_SRT, &bad, &s), ENCDEC_ERR_ARG, "must be >= 0");
    CHECK_STATUS(encdec_result_format(r, (encdec_format)9, NULL, &s), ENCDEC_ERR_ARG, "unknown output format");
    CHECK_STATUS(encdec_result_format(NULL, ENCDEC_FORMAT_TXT, NULL, &s), ENCDEC_ERR_ARG, "result is NULL");
    CHECK_STATUS(encdec_result_format(r, ENCDEC_FORMAT_TXT, NULL, NULL), ENCDEC_ERR_ARG, "out is NULL");
    /* an empty transcript: empty text, an empty subtitle file with its header */
    CHECK_EQ_INT(encdec_result_format(r, ENCDEC_FORMAT_TXT, NULL, &s), ENCDEC_OK);
    CHECK_STR(s, "");
    encdec_free(s);
    CHECK_EQ_INT(encdec_result_format(r, ENCDEC_FORMAT_VTT, NULL, &s), ENCDEC_OK);
    CHECK_STR(s, "WEBVTT\n\n");
    encdec_free(s);
    encdec_result_free(r);
}

int main(void) {
    cJSON *dec = NULL, *lf = NULL;
    if (ed_json_load(ED_TEST_DATA "/whisper-decode-golden.json", &dec) ||
        ed_json_load(ED_TEST_DATA "/longform-golden.json", &lf)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    test_formats(cJSON_GetObjectItem(dec, "writers"), lf);
    test_json(lf);
    test_args();
    cJSON_Delete(dec);
    cJSON_Delete(lf);
    return check_done();
}
