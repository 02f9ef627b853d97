/* test_langid.c - the text language identifier (encdec_langid_*) against
 * its oracles, and base/pyrand.h against Python's random.Random
 * (tests/data/langid/golden.json, tools/golden_langid.py):
 *
 * - pyrand: random(), gauss() and _randbelow(n) draws of Random(0), exactly;
 * - langdetect 1.0.9's detect_langs at seed 0 on 133 texts (40 languages'
 *   sentences, texts walking its rules, random strings over the blocks it
 *   normalises): the same languages in the same order, each probability
 *   within 1e-12 (the profiles' order only moves the last bits of a sum);
 * - lexilang 1.0.7's detect on the same texts, with and without a list of
 *   allowed languages: the same language and confidence;
 * - bad input: text that is not UTF-8, NULL arguments, and model
 *   directories with each file missing or malformed (a small model written
 *   here, whose ties and allowed lists are checked by value too).
 *
 * - `encdec detect-language`: langdetect's and lexilang's answers for a
 *   few golden texts as its lines and its JSON, standard input, errors.
 *
 * The real model is scripts/fetch-model.sh langid's ($ENCDEC_LANGID or
 * ~/.cache/encdec/models/langdetect); without it the goldens are skipped.
 */
#include "check.h"
#include "clirun.h"
#include "golden.h"
#include "tmpdir.h"

#include "base/json.h"
#include "base/pyrand.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void pyrand_golden(const cJSON *g) {
    const cJSON *v;
    py_rand r;
    py_rand_seed(&r, 0);
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(g, "random")) CHECK(py_rand_double(&r) == v->valuedouble);
    py_rand_seed(&r, 0);
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(g, "gauss")) CHECK(py_rand_gauss(&r) == v->valuedouble);
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(g, "below")) {
        size_t n = (size_t)cJSON_GetArrayItem(row, 0)->valuedouble;
        py_rand_seed(&r, 0);
        cJSON_ArrayForEach(v, cJSON_GetArrayItem(row, 1)) CHECK_EQ_INT(py_rand_below(&r, n), (long long)v->valuedouble);
    }
}

static int same_langdetect(const encdec_text_language *got, int n, const cJSON *want) {
    if (n != cJSON_GetArraySize(want)) return 0;
    for (int i = 0; i < n; i++) {
        const cJSON *w = cJSON_GetArrayItem(want, i);
        if (strcmp(got[i].language, cJSON_GetArrayItem(w, 0)->valuestring) ||
            fabs(got[i].probability - cJSON_GetArrayItem(w, 1)->valuedouble) > 1e-12)
            return 0;
    }
    return 1;
}

static int same_words(const encdec_text_language *got, int found, const cJSON *want) {
    double wc = cJSON_GetArrayItem(want, 1)->valuedouble;
    if (!found) return wc == 0;   /* lexilang's ("en", 0): nothing known */
    return !strcmp(got->language, cJSON_GetArrayItem(want, 0)->valuestring) && got->probability == wc;
}

static void oracle_golden(const encdec_langid *l, const cJSON *root) {
    const cJSON *allowed = cJSON_GetObjectItem(root, "allowed"), *c, *a;
    const char *allow[16];
    int n_allow = 0;
    cJSON_ArrayForEach(a, allowed) allow[n_allow++] = a->valuestring;
    int n_cases = 0, ld_bad = 0, lx_bad = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        encdec_text_language g[8], w;
        int n = -1, found = -1;
        CHECK_EQ_INT(encdec_langid_detect(l, text, g, 8, &n), ENCDEC_OK);
        if (!same_langdetect(g, n, cJSON_GetObjectItem(c, "langdetect"))) {
            ld_bad++;
            fprintf(stderr, "langdetect differs on \"%.60s\": %d languages, first %s %.17g\n", text, n,
                    n > 0 ? g[0].language : "-", n > 0 ? g[0].probability : 0);
        }
        CHECK_EQ_INT(encdec_langid_words(l, text, NULL, 0, &w, &found), ENCDEC_OK);
        int ok = same_words(&w, found, cJSON_GetObjectItem(c, "lexilang"));
        CHECK_EQ_INT(encdec_langid_words(l, text, allow, n_allow, &w, &found), ENCDEC_OK);
        ok = ok && same_words(&w, found, cJSON_GetObjectItem(c, "lexilang_allowed"));
        if (!ok) {
            lx_bad++;
            fprintf(stderr, "lexilang differs on \"%.60s\"\n", text);
        }
        n_cases++;
    }
    printf("%d texts: langdetect differs on %d, lexilang on %d\n", n_cases, ld_bad, lx_bad);
    CHECK(n_cases >= 100);
    CHECK_EQ_INT(ld_bad, 0);
    CHECK_EQ_INT(lx_bad, 0);
    /* fewer places than languages: the most likely ones */
    encdec_text_language g[1];
    int n;
    CHECK_EQ_INT(encdec_langid_detect(l, "Hello", g, 1, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, 1);
}

static void bad_calls(const encdec_langid *l) {
    encdec_text_language g[4];
    int n = 7, found = 7;
    CHECK_STATUS(encdec_langid_detect(l, "caf\xc3", g, 4, &n), ENCDEC_ERR_ARG, "not UTF-8");
    CHECK_EQ_INT(n, 0);
    CHECK_STATUS(encdec_langid_words(l, "\xff oui", NULL, 0, g, &found), ENCDEC_ERR_ARG, "not UTF-8");
    CHECK_EQ_INT(found, 0);
    CHECK_STATUS(encdec_langid_detect(NULL, "x", g, 4, &n), ENCDEC_ERR_ARG, "NULL");
    CHECK_STATUS(encdec_langid_detect(l, NULL, g, 4, &n), ENCDEC_ERR_ARG, "NULL");
    CHECK_STATUS(encdec_langid_detect(l, "x", NULL, 4, &n), ENCDEC_ERR_ARG, "NULL");
    CHECK_STATUS(encdec_langid_detect(l, "x", g, -1, &n), ENCDEC_ERR_ARG, "n_max");
    CHECK_STATUS(encdec_langid_words(l, "x", NULL, 2, g, &found), ENCDEC_ERR_ARG, "n_allow");
}

/* ---- a small model written here ----------------------------------------------------------- */

static const char *PROFILE_AA = "{\"name\":\"aa\",\"freq\":{\"a\":10,\"ab\":5,\"abc\":2,\"abcd\":1},\"n_words\":[10,5,2]}";
static const char *PROFILE_BB = "{\"name\":\"bb\",\"freq\":{\"b\":8,\"bc\":4,\"c\":2},\"n_words\":[10,4,1]}";
static const char *MESSAGES = "NGram.LATIN1_EXCLUDE=\\u00A0\\u00AB\n"
                              "NGram.KANJI_1_0=\\u4F7C\\u6934\n"
                              "TO_NORMALIZE_VI_CHARS=Aa\n"
                              "DMARK_CLASS=\\u0300\n"
                              "NORMALIZED_VI_CHARS_0300=\\u00C0\\u00E0\n";

static void put(const char *dir, const char *name, const char *text) {
    tmp_write(tmp_join(dir, name), text, strlen(text));
}

static void small_model(const char *dir) {
    mkdir(dir, 0700);
    mkdir(tmp_join(dir, "profiles"), 0700);
    put(dir, "profiles/aa", PROFILE_AA);
    put(dir, "profiles/bb", PROFILE_BB);
    put(dir, "messages.properties", MESSAGES);
    put(dir, "weights.tsv", "aa\t1.0\nbb\t2.5\ncc\t0.5\n");
    put(dir, "words.tsv", "hello\taa bb\nworld\tcc aa\nmot\tcc\n");
}

/* The small model loads; one file changed to `text` (NULL: removed), the
 * load fails with want and a message holding substr. */
static void broken(const char *name, const char *text, encdec_status want, const char *substr) {
    char dir[600];   /* (tmp_path's buffers rotate) */
    snprintf(dir, sizeof dir, "%s", tmp_path("broken"));
    tmp_remove(dir);
    small_model(dir);
    if (text) put(dir, name, text);
    else remove(tmp_join(dir, name));
    encdec_langid *l = (encdec_langid *)1;
    CHECK_STATUS(encdec_langid_load(dir, &l), want, substr);
    CHECK(l == NULL);
}

static void small(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tmp_path("small"));
    small_model(dir);
    encdec_langid *l = NULL;
    CHECK_EQ_INT(encdec_langid_load(dir, &l), ENCDEC_OK);
    if (!l) return;
    encdec_text_language g[4], w;
    int n = 0, found = 0;
    /* "hello": aa and bb tie; bb speaks more (2.5): 0.9 / 2 */
    CHECK_EQ_INT(encdec_langid_words(l, "  HELLO!  ", NULL, 0, &w, &found), ENCDEC_OK);
    CHECK_EQ_INT(found, 1);
    if (found) {
        CHECK_STR(w.language, "bb");
        CHECK(w.probability == 0.45);
    }
    /* "hello world": aa twice */
    CHECK_EQ_INT(encdec_langid_words(l, "hello world", NULL, 0, &w, &found), ENCDEC_OK);
    if (found) {
        CHECK_STR(w.language, "aa");
        CHECK(w.probability == 0.9);
    }
    /* allowed: only cc */
    const char *only_cc[] = {"cc"};
    CHECK_EQ_INT(encdec_langid_words(l, "hello world mot", only_cc, 1, &w, &found), ENCDEC_OK);
    if (found) CHECK_STR(w.language, "cc");
    CHECK_EQ_INT(encdec_langid_words(l, "nothing known", NULL, 0, &w, &found), ENCDEC_OK);
    CHECK_EQ_INT(found, 0);
    /* n-grams: "a" is aa's alone, "b" and "bc" mostly bb's; "zz" none */
    CHECK_EQ_INT(encdec_langid_detect(l, "aa aa aa", g, 4, &n), ENCDEC_OK);
    CHECK(n >= 1 && !strcmp(g[0].language, "aa") && g[0].probability > 0.9);
    CHECK_EQ_INT(encdec_langid_detect(l, "bcb bcb", g, 4, &n), ENCDEC_OK);
    CHECK(n >= 1 && !strcmp(g[0].language, "bb") && g[0].probability > 0.9);
    CHECK_EQ_INT(encdec_langid_detect(l, "zz 42", g, 4, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, 0);
    encdec_langid_free(l);

    CHECK_STATUS(encdec_langid_load(tmp_path("none"), &l), ENCDEC_ERR_IO, "none/profiles");
    broken("profiles/aa", "{\"name\":\"aa\",\"freq\":{\"a\":1}}", ENCDEC_ERR_FORMAT, "not a langdetect profile");
    broken("profiles/aa", "{\"name\":\"aa\",\"freq\":{\"a\":1},\"n_words\":[0,1,1]}", ENCDEC_ERR_FORMAT,
           "n_words[0]");
    broken("profiles/aa", "{\"name\":\"aa\",\"freq\":{\"a\":1.5},\"n_words\":[1,1,1]}", ENCDEC_ERR_FORMAT,
           "no whole count");
    broken("profiles/aa", "{\"name\":\"bb\",\"freq\":{},\"n_words\":[1,1,1]}", ENCDEC_ERR_FORMAT, "a second profile");
    broken("profiles/aa", "{\"name\":", ENCDEC_ERR_CONFIG, "aa");
    broken("profiles/bb", NULL, ENCDEC_ERR_FORMAT, "fewer than two");
    broken("messages.properties", NULL, ENCDEC_ERR_IO, "messages.properties");
    broken("messages.properties", "NGram.LATIN1_EXCLUDE=\\u00A0\n", ENCDEC_ERR_FORMAT, "not langdetect's messages");
    broken("messages.properties", "NGram.LATIN1_EXCLUDE=\\u00Zz\n", ENCDEC_ERR_FORMAT, "malformed value");
    broken("weights.tsv", "aa one\n", ENCDEC_ERR_FORMAT, "code weight");
    broken("weights.tsv", "aa 1\naa 2\n", ENCDEC_ERR_FORMAT, "repeated");
    broken("words.tsv", "hello\taa zz\n", ENCDEC_ERR_FORMAT, "unknown language zz");
    broken("words.tsv", "hello aa\n", ENCDEC_ERR_FORMAT, "word<TAB>languages");
    broken("words.tsv", "hello\taa\nhello\tbb\n", ENCDEC_ERR_FORMAT, "twice");
    broken("words.tsv", NULL, ENCDEC_ERR_IO, "words.tsv");
    tmp_remove(tmp_path("broken"));
}

/* A golden case's text as a single-quoted shell word, or 0 when it holds a
 * quote or is too long. */
static int shell_word(char *out, size_t cap, const char *text) {
    if (strchr(text, '\'') || strlen(text) + 3 > cap) return 0;
    snprintf(out, cap, "'%s'", text);
    return 1;
}

/* encdec detect-language on the golden texts (12 of them, one call each
 * way): the same languages and probabilities (printed to 8 digits),
 * lexilang's with --words. */
static void cli(const char *dir, const cJSON *root) {
    const cJSON *c;
    int n = 0;
    static char cmd[16384], words[12000], want[8192], want_w[2048];
    char word[1500];
    size_t kw = 0, k = 0, kx = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(c, "text"));
        const cJSON *ld = cJSON_GetObjectItem(c, "langdetect"), *lx = cJSON_GetObjectItem(c, "lexilang");
        if (!text || !*text || !cJSON_GetArraySize(ld) || n >= 12 || !shell_word(word, sizeof word, text) ||
            kw + strlen(word) + 2 > sizeof words)
            continue;
        kw += (size_t)snprintf(words + kw, sizeof words - kw, " %s", word);
        const cJSON *g;
        int first = 1;
        cJSON_ArrayForEach(g, ld) {
            k += (size_t)snprintf(want + k, sizeof want - k, "%s%s %.8g", first ? "" : " ",
                                  cJSON_GetArrayItem(g, 0)->valuestring, cJSON_GetArrayItem(g, 1)->valuedouble);
            first = 0;
        }
        k += (size_t)snprintf(want + k, sizeof want - k, "\n");
        kx += (size_t)snprintf(want_w + kx, sizeof want_w - kx, "%s %.3g\n", cJSON_GetArrayItem(lx, 0)->valuestring,
                               cJSON_GetArrayItem(lx, 1)->valuedouble);
        n++;
    }
    snprintf(cmd, sizeof cmd, "ENCDEC_LANGID='%s' '" ED_CLI_PATH "' detect-language%s 2>&1", dir, words);
    CHECK_EQ_INT(cli_sh(cmd), 0);
    CHECK_STR(cli_out, want);
    snprintf(cmd, sizeof cmd, "ENCDEC_LANGID='%s' '" ED_CLI_PATH "' detect-language --words%s 2>&1", dir, words);
    CHECK_EQ_INT(cli_sh(cmd), 0);
    CHECK_STR(cli_out, want_w);
    CHECK_EQ_INT(n, 12);
    snprintf(cmd, sizeof cmd, "printf 'Le train part à huit heures du matin.\\n\\nmerci\\n' | ENCDEC_LANGID='%s' '"
             ED_CLI_PATH "' detect-language --json 2>&1", dir);
    CHECK_EQ_INT(cli_sh(cmd), 0);
    CHECK(cli_said("{\"text\":\"Le train part à huit heures du matin.\",\"languages\":[{\"language\":\"fr\""));
    CHECK(cli_said("{\"text\":\"\",\"languages\":[]}\n"));   /* no n-gram known: none */
    snprintf(cmd, sizeof cmd, "ENCDEC_LANGID='%s' '" ED_CLI_PATH "' detect-language --words --languages de,nl "
             "'dank je wel' 2>&1", dir);
    CHECK_EQ_INT(cli_sh(cmd), 0);
    CHECK_STR(cli_out, "nl 0.9\n");
    snprintf(cmd, sizeof cmd, "ENCDEC_LANGID='%s' '" ED_CLI_PATH "' detect-language $(printf '\\377') 2>&1", dir);
    CHECK_EQ_INT(cli_sh(cmd), 1);
    CHECK(cli_said("not UTF-8"));
    CHECK_EQ_INT(cli_sh("'" ED_CLI_PATH "' detect-language --languages en x 2>&1"), 2);
    CHECK(cli_said("give --words too"));
    CHECK_EQ_INT(cli_sh("ENCDEC_LANGID=/nonexistent '" ED_CLI_PATH "' detect-language x 2>&1"), 1);
    CHECK(cli_said("cannot load the language identifier /nonexistent"));
}

int main(void) {
    cJSON *root = NULL;
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/langid/golden.json", &root), ENCDEC_OK);
    if (!root) return check_done();
    CHECK_PART(pyrand_golden(cJSON_GetObjectItem(root, "pyrand")));
    if (tmp_new("encdec-langid")) {
        CHECK_PART(small());
        tmp_remove(tmp_dir);
    }
    char dir[1024];
    if (!golden_find_file(dir, sizeof dir, "ENCDEC_LANGID", "langdetect", "words.tsv")) {
        printf("the language identifier is not installed (scripts/fetch-model.sh langid): "
               "its goldens not checked\n");
        cJSON_Delete(root);
        return check_done();
    }
    encdec_langid *l = NULL;
    CHECK_EQ_INT(encdec_langid_load(dir, &l), ENCDEC_OK);
    if (l) {
        CHECK_PART(oracle_golden(l, root));
        CHECK_PART(bad_calls(l));
        CHECK_PART(cli(dir, root));
    }
    encdec_langid_free(l);
    cJSON_Delete(root);
    return check_done();
}
