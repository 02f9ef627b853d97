/* test_moses.c - the Moses text rules (tok/moses_norm.c) against sacremoses
 * itself: tests/data/moses/normalize.json (tools/golden_moses.py) holds what
 * MosesPunctNormalizer(lang).normalize gives for a corpus of tricky texts
 * (every substitution, no-break and Unicode spaces, digits of other
 * scripts, quotes around commas and periods) in twelve languages, so every
 * language rule (English quotes, de/es/fr quotes, the number separators)
 * and the default. Also: invalid UTF-8 refused; several threads at once.
 */
#include "check.h"
#include "tok/moses.h"
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
        CHECK(moses_normalize(lang, text, strlen(text), &got) == ENCDEC_OK);
        if (got && strcmp(got, want)) fprintf(stderr, "  %s: \"%s\"\n", lang, text);
        CHECK_STR(got, want);
        free(got);
        n++;
    }
    CHECK(n >= 300);
}

static void check_errors(void) {
    char *out = (char *)1;
    CHECK_STATUS(moses_normalize("en", "ok \xe2\x80", 5, &out), ENCDEC_ERR_ARG, "not valid UTF-8 (at byte 3)");
    CHECK(out == NULL);
    CHECK_STATUS(moses_normalize(NULL, "x", 1, &out), ENCDEC_ERR_ARG, "NULL");
    /* bytes past n are not read: "a (b)" of "a (b) c" */
    CHECK(moses_normalize("en", "a (b) c", 5, &out) == ENCDEC_OK);
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
            if (moses_normalize(cJSON_GetObjectItem(c, "lang")->valuestring, text, strlen(text), &got) ||
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
    return check_done();
}
