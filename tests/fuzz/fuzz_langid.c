/* fuzz_langid.c - the text language identifier (src/models/langid*.c) and
 * LibreTranslate's detection over it (server/lt_detect.c): any bytes as
 * POST /detect's body (JSON when the first byte is even, else a form),
 * its texts detected as the server does on the mBART-50 test model's
 * languages, and the bytes themselves (up to a NUL) through both
 * detectors. Needs the real identifier (scripts/fetch-model.sh langid;
 * $ENCDEC_LANGID or the cache's). Must answer or refuse, never crash or
 * leak. */
#include "fuzz_common.h"
#include "../../server/lt.h"
#include "../../server/lt_detect.h"

static encdec_model *g_model;
static encdec_langid *g_langid;
static srv_lt_codes g_codes;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    char dir[1024];
    const char *env = getenv("ENCDEC_LANGID"), *home = getenv("HOME");
    if (env && *env) snprintf(dir, sizeof dir, "%s", env);
    else snprintf(dir, sizeof dir, "%s/.cache/encdec/models/langdetect", home ? home : ".");
    if (encdec_model_load(FUZZ_DATA_DIR "/tiny-random-mbart", &g_model) || encdec_langid_load(dir, &g_langid)) {
        fprintf(stderr, "fuzz_langid: %s (scripts/fetch-model.sh langid installs the identifier)\n",
                encdec_last_error());
        exit(1);
    }
    srv_lt_codes_of(g_model, &g_codes);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    srv_lt_req r;
    srv_lt_error e;
    if (srv_lt_parse_q((const char *)data + 1, size - 1, !(data[0] & 1), &r, &e)) {
        srv_lt_guess *g = NULL;
        int n = 0;
        if (!srv_lt_detect(g_langid, r.q, r.n_q, r.q_list, &g_codes, &g, &n)) {
            if (n < 1) abort();
            for (int i = 0; i < n; i++)
                if (!(g[i].confidence >= 0 && g[i].confidence <= 100)) abort();
            free(srv_lt_detect_body(g, n));
        }
        free(g);
    }
    srv_lt_free(&r);
    char *text = strndup((const char *)data, size);
    if (!text) return 0;
    encdec_text_language d[64], w;
    int n = 0, found = 0;
    if (!encdec_langid_detect(g_langid, text, d, 64, &n)) {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += d[i].probability;
        if (sum > 1 + 1e-9) abort();
    }
    const char *allow[] = {"en", "fr", "zh"};
    encdec_langid_words(g_langid, text, allow, 3, &w, &found);
    encdec_langid_words(g_langid, text, NULL, 0, &w, &found);
    free(text);
    return 0;
}
