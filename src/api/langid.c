/* langid.c - the public text language identifier (encdec_langid_*) over
 * models/langid.h. */
#include "api/api.h"
#include "base/err.h"
#include "models/langid.h"

#include <stdlib.h>
#include <string.h>

struct encdec_langid {
    langid_model *m;
};

encdec_status encdec_langid_load(const char *dir, encdec_langid **out) {
    ed_err_clear();
    if (!out || !dir) return ed_fail(ENCDEC_ERR_ARG, "encdec_langid_load: dir or out is NULL");
    *out = NULL;
    encdec_langid *l = calloc(1, sizeof *l);
    if (!l) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: language identifier");
    encdec_status st = langid_load(dir, &l->m);
    if (st) {
        free(l);
        return st;
    }
    *out = l;
    return ENCDEC_OK;
}

void encdec_langid_free(encdec_langid *l) {
    if (!l) return;
    langid_free(l->m);
    free(l);
}

encdec_status encdec_langid_detect(const encdec_langid *l, const char *text,
                                   encdec_text_language *out, int n_max, int *n_out) {
    ed_err_clear();
    if (!l || !text || !n_out || n_max < 0 || (n_max && !out))
        return ed_fail(ENCDEC_ERR_ARG, "encdec_langid_detect: a NULL argument or n_max < 0");
    *n_out = 0;
    double p[LANGID_MAX];
    int features;
    encdec_status st = langid_probs(l->m, text, strlen(text), p, &features);
    if (st || !features) return st;
    /* above 0.1, most likely first; equal ones in the profiles' order (a
     * stable sort, as Python's) */
    int idx[LANGID_MAX], n = 0;
    for (int i = 0; i < l->m->n_lang; i++) {
        if (!(p[i] > 0.1)) continue;
        int at = n++;
        while (at > 0 && p[idx[at - 1]] < p[i]) {
            idx[at] = idx[at - 1];
            at--;
        }
        idx[at] = i;
    }
    for (int i = 0; i < n && i < n_max; i++) out[i] = (encdec_text_language){l->m->lang[idx[i]], p[idx[i]]};
    *n_out = n < n_max ? n : n_max;
    return ENCDEC_OK;
}

encdec_status encdec_langid_words(const encdec_langid *l, const char *text, const char *const *allow,
                                  int n_allow, encdec_text_language *out, int *found) {
    ed_err_clear();
    if (!l || !text || !out || !found || n_allow < 0 || (n_allow && !allow))
        return ed_fail(ENCDEC_ERR_ARG, "encdec_langid_words: a NULL argument or n_allow < 0");
    *found = 0;
    out->language = NULL;
    out->probability = 0;
    const char *lang;
    double conf;
    encdec_status st = langid_words(l->m, text, strlen(text), allow, n_allow, &lang, &conf);
    if (st || !lang) return st;
    *out = (encdec_text_language){lang, conf};
    *found = 1;
    return ENCDEC_OK;
}
