/* test_moses.c - the Moses text rules (tok/moses_*.c) against sacremoses
 * itself (tools/golden_moses.py):
 *
 * - tests/data/moses/normalize.json: what MosesPunctNormalizer(lang).normalize
 *   gives for a corpus of tricky texts (every substitution, no-break and
 *   Unicode spaces, digits of other scripts, quotes around commas and
 *   periods) in twelve languages: every language rule (English quotes,
 *   de/es/fr quotes, the number separators) and the default;
 * - tests/data/moses/tokenize.json: MosesTokenizer(lang).tokenize on those
 *   texts and more (nonbreaking prefixes and #NUMERIC_ONLY#, apostrophes of
 *   en, fr/it and the rest, multi-dots, commas in numbers, XML escapes,
 *   CJK scripts for zh, ja, ko, cjk, Indic signs, control characters) in
 *   17 languages, a full name and an unknown code among them; needs
 *   scripts/fetch-model.sh moses's data ($ENCDEC_MOSES or
 *   ~/.cache/encdec/models/sacremoses-0.1.1), else says so;
 * - tests/data/moses/detokenize.json: MosesDetokenizer(lang).detokenize of
 *   those tokens and of token lists that walk its rules (quotes by count,
 *   possessives, elisions, French spacing, currency, Czech decimals,
 *   Finnish suffixes, CJK, " @-@ ", XML unescapes) in 11 languages; the
 *   same data;
 * - invalid UTF-8 refused; Moses data that lie; several threads at once.
 */
#include "check.h"
#include "golden.h"
#include "tmpdir.h"
#include "tok/moses.h"
#include "base/fmap.h"
#include "base/json.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static cJSON *g_cases;

static void check_golden(void) {
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, g_cases) {
        const char *lang = cJSON_GetObjectItem(c, "lang")->valuestring;
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const char *want = cJSON_GetObjectItem(c, "out")->valuestring;
        char *got = NULL;
        CHECK(moses_normalize(lang, text, strlen(text), &got, NULL) == ENCDEC_OK);
        if (got && strcmp(got, want)) fprintf(stderr, "  %s: \"%s\"\n", lang, text);
        CHECK_STR(got, want);
        free(got);
        n++;
    }
    CHECK(n >= 300);
}

static void check_errors(void) {
    char *out = (char *)1;
    CHECK_STATUS(moses_normalize("en", "ok \xe2\x80", 5, &out, NULL), ENCDEC_ERR_ARG, "not valid UTF-8 (at byte 3)");
    CHECK(out == NULL);
    CHECK_STATUS(moses_normalize(NULL, "x", 1, &out, NULL), ENCDEC_ERR_ARG, "NULL");
    /* bytes past n are not read: "a (b)" of "a (b) c" */
    CHECK(moses_normalize("en", "a (b) c", 5, &out, NULL) == ENCDEC_OK);
    CHECK_STR(out, "a (b)");
    free(out);
}

/* Every case on three threads at once gives the single thread's text. */
static void *run_all(void *arg) {
    int *ok = arg;
    *ok = 1;
    for (int r = 0; r < 5 && *ok; r++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, g_cases) {
            const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
            char *got = NULL;
            if (moses_normalize(cJSON_GetObjectItem(c, "lang")->valuestring, text, strlen(text), &got, NULL) ||
                strcmp(got, cJSON_GetObjectItem(c, "out")->valuestring))
                *ok = 0;
            free(got);
        }
    }
    return NULL;
}

static void check_threads(void) {
    pthread_t th[3];
    int ok[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, run_all, &ok[i]);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK(ok[i]);
    }
}

static void check_tokenize(const moses_data *d) {
    cJSON *g;
    if (ed_json_load(ED_TEST_DATA "/moses/tokenize.json", &g)) {
        CHECK(0);
        return;
    }
    int n = 0, bad = 0;
    const cJSON *c;
    moses_tok *t = NULL;
    const char *tlang = "";
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "cases")) {
        const char *lang = cJSON_GetObjectItem(c, "lang")->valuestring;
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const char *want = cJSON_GetObjectItem(c, "tokens")->valuestring;
        if (strcmp(lang, tlang)) {
            moses_tok_free(t);
            t = NULL;
            CHECK(moses_tok_new(d, lang, &t) == ENCDEC_OK);
            tlang = lang;
        }
        char *got = NULL;
        CHECK(t && moses_tokenize(t, text, strlen(text), &got) == ENCDEC_OK);
        if (got && strcmp(got, want) && bad++ < 20) fprintf(stderr, "  %s: \"%s\"\n", lang, text);
        CHECK_STR(got, want);
        free(got);
        n++;
    }
    moses_tok_free(t);
    CHECK(n >= 800);
    cJSON_Delete(g);
}

static void check_detokenize(const moses_data *d) {
    cJSON *g;
    if (ed_json_load(ED_TEST_DATA "/moses/detokenize.json", &g)) {
        CHECK(0);
        return;
    }
    int n = 0, bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "cases")) {
        const char *lang = cJSON_GetObjectItem(c, "lang")->valuestring;
        const char *toks = cJSON_GetObjectItem(c, "tokens")->valuestring;
        const char *want = cJSON_GetObjectItem(c, "text")->valuestring;
        char *got = NULL;
        CHECK(moses_detokenize(d, lang, toks, strlen(toks), &got) == ENCDEC_OK);
        if (got && strcmp(got, want) && bad++ < 20) fprintf(stderr, "  %s: \"%s\"\n", lang, toks);
        CHECK_STR(got, want);
        free(got);
        n++;
    }
    CHECK(n >= 800);
    char *got = (char *)1;
    CHECK_STATUS(moses_detokenize(d, "en", "a \xc3", 3, &got), ENCDEC_ERR_ARG, "not valid UTF-8 (at byte 2)");
    CHECK(got == NULL);
    /* a NUL byte (fuzz_nmt: an empty token read before its start) */
    got = (char *)1;
    CHECK_STATUS(moses_detokenize(d, "en", "l\0 ' x", 6, &got), ENCDEC_ERR_ARG, "holds a NUL byte");
    CHECK(got == NULL);
    /* Czech "-li" after an elision (sacremoses raises there): Perl's join */
    CHECK(moses_detokenize(d, "cs", "a b' - li c", 11, &got) == ENCDEC_OK);
    CHECK_STR(got, "a b'-li c");
    free(got);
    cJSON_Delete(g);
}

/* A copy of the data folder with one file replaced. */
static void lying_data(const char *dir, const char *file, const char *text, const char *msg) {
    char path[1200];
    const char *files[3] = {"classes.tsv", "langs.tsv", "prefixes.tsv"};
    for (int i = 0; i < 3; i++) {
        char from[1200];
        snprintf(from, sizeof from, "%s/%s", dir, files[i]);
        snprintf(path, sizeof path, "%s/%s", tmp_dir, files[i]);
        char *buf;
        size_t n;
        if (ed_read_file(from, &buf, &n) == ENCDEC_OK) {
            tmp_write(path, buf, n);
            free(buf);
        }
    }
    snprintf(path, sizeof path, "%s/%s", tmp_dir, file);
    if (text) tmp_write(path, text, strlen(text));
    else remove(path);
    moses_data *d = (moses_data *)1;
    CHECK_STATUS(moses_data_load(tmp_dir, &d), text ? ENCDEC_ERR_CONFIG : ENCDEC_ERR_IO, msg);
    CHECK(d == NULL);
}

static void check_data_errors(const char *dir) {
    if (!tmp_new("encdec-test-moses")) {
        CHECK(0);
        return;
    }
    lying_data(dir, "classes.tsv", "IsN\t30-39\n", "classes.tsv: no class IsAlnum");
    lying_data(dir, "classes.tsv", "IsN\t39-30\n", "classes.tsv: line 1: not sorted hexadecimal ranges");
    lying_data(dir, "classes.tsv", "IsN\t30-39 35-40\n", "line 1: not sorted");
    lying_data(dir, "classes.tsv", "IsN 30-39\n", "classes.tsv: line 1 has no tab");
    lying_data(dir, "classes.tsv", "IsN\t30-110000\n", "not sorted hexadecimal ranges");
    lying_data(dir, "langs.tsv", "english\ten\nbad line\n", "langs.tsv: line 2 is not two fields");
    lying_data(dir, "langs.tsv", "", "langs.tsv: no language");
    lying_data(dir, "prefixes.tsv", "en\tMr\ten\n", "prefixes.tsv: line 1 is not two fields");
    lying_data(dir, "prefixes.tsv", "en\t\xff\n", "prefixes.tsv: not UTF-8");
    lying_data(dir, "prefixes.tsv", NULL, "prefixes.tsv");
    tmp_remove(tmp_dir);
}

int main(void) {
    cJSON *g;
    if (ed_json_load(ED_TEST_DATA "/moses/normalize.json", &g)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    g_cases = cJSON_GetObjectItem(g, "cases");
    check_golden();
    check_errors();
    check_threads();
    cJSON_Delete(g);
    char dir[1024];
    if (!golden_find_file(dir, sizeof dir, "ENCDEC_MOSES", "sacremoses-0.1.1", "classes.tsv")) {
        printf("Moses' tokenizer data are not installed (scripts/fetch-model.sh moses): the "
               "tokenizer's goldens not checked\n");
        return check_done();
    }
    moses_data *d = NULL;
    CHECK(moses_data_load(dir, &d) == ENCDEC_OK);
    if (d) check_tokenize(d);
    if (d) check_detokenize(d);
    moses_data_free(d);
    check_data_errors(dir);
    return check_done();
}
