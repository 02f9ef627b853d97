/* fuzz_lt.c - LibreTranslate's request parser (server/lt.c) on the mBART-50
 * test model: any bytes as a JSON body (first byte even) or a urlencoded
 * form (odd), their languages mapped onto the model's codes, and a
 * response body built for the texts it accepted; with format html, each
 * text split into markup and text nodes (server/lt_html.c) and joined again
 * around translations that need escaping; each text cut into sentences
 * (server/lt_split.c) and put back, itself again around its own sentences,
 * and touched as a translation of another (server/lt_format.c).
 * Must accept or refuse, never crash or leak. */
#include "fuzz_common.h"
#include "../../server/lt.h"
#include "../../server/lt_html.h"
#include "../../server/lt_split.h"
#include "../../server/lt_format.h"

static encdec_model *g_model;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    if (encdec_model_load(FUZZ_DATA_DIR "/tiny-random-mbart", &g_model)) {
        fprintf(stderr, "fuzz_lt: %s\n", encdec_last_error());
        exit(1);
    }
    free(srv_lt_languages(g_model));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    srv_lt_req r;
    srv_lt_error e;
    if (srv_lt_parse(g_model, (const char *)data + 1, size - 1, !(data[0] & 1), &r, &e)) {
        const char *texts[SRV_LT_MAX_Q * 9];
        for (int i = 0; i < SRV_LT_MAX_Q * 9; i++) texts[i] = "t";
        free(srv_lt_body(&r, texts));
        char code[40];
        if (r.src >= 0) srv_lt_code(g_model, r.src, code, sizeof code);
        for (int i = 0; r.html && i < r.n_q; i++) {
            srv_html h;
            if (srv_html_split(r.q[i], 512, &h) == 0) {
                const char **out = calloc((size_t)h.n_text + 1, sizeof *out);
                for (int j = 0; out && j < h.n_text; j++) out[j] = j & 1 ? "<&>" : h.text[j];
                if (out) free(srv_html_join(&h, out));
                free(out);
            }
            srv_html_free(&h);
        }
        for (int i = 0; i < r.n_q; i++) {
            srv_sentences ss;
            if (srv_lt_sentences(r.q[i], 1024, &ss) == 0) {
                char **own = calloc((size_t)ss.n + 1, sizeof *own);
                for (int j = 0; own && j < ss.n; j++) own[j] = strndup(r.q[i] + ss.s[j].off, ss.s[j].len);
                char *back = own ? srv_lt_rejoin(&ss, (const char *const *)own) : NULL;
                if (back && strcmp(back, r.q[i])) abort();
                free(back);
                char *f = srv_lt_format(r.q[i], i + 1 < r.n_q ? r.q[i + 1] : r.q[0]);   /* any two texts */
                char *u = f ? srv_html_unescape(f) : NULL;
                free(u);
                free(f);
                for (int j = 0; own && j < ss.n; j++) free(own[j]);
                free(own);
            }
            srv_sentences_free(&ss);
        }
    }
    srv_lt_free(&r);
    return 0;
}
