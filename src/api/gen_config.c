/* gen_config.c - what a text model's generation config imposes on every
 * generation: bad_words_ids (Marian's <pad>, as transformers bans it), read
 * from generation_config.json, else config.json, as generate() reads them. */
#include "api/api.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

/* bad_words_ids: a list of token lists; each one-token list bans that token
 * at every step. Longer lists (a token banned after a given prefix) are not
 * applied: *n_long counts them. */
static encdec_status bad_words(const cJSON *c, const char *file, int n_vocab, int **out, int *n,
                               int *n_long) {
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(c, "bad_words_ids"), *e;
    *out = NULL;
    *n = *n_long = 0;
    if (!bw || cJSON_IsNull(bw)) return ENCDEC_OK;
    if (!cJSON_IsArray(bw)) return ed_fail(ENCDEC_ERR_CONFIG, "%s: bad_words_ids is not a list of lists", file);
    int cap = cJSON_GetArraySize(bw);
    int *ids = malloc(sizeof(int) * (size_t)(cap ? cap : 1));
    if (!ids) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: bad_words_ids");
    cJSON_ArrayForEach(e, bw) {
        const cJSON *t = cJSON_GetArrayItem(e, 0);
        int len = cJSON_GetArraySize(e);
        if (!cJSON_IsArray(e) || !len || !cJSON_IsNumber(t) || !(t->valuedouble >= 0 && t->valuedouble < n_vocab)) {
            free(ids);
            return ed_fail(ENCDEC_ERR_CONFIG, "%s: bad_words_ids holds an entry that is not a list of "
                           "token ids below the vocabulary size %d", file, n_vocab);
        }
        if (len == 1) ids[(*n)++] = (int)t->valuedouble;
        else ++*n_long;
    }
    *out = ids;
    return ENCDEC_OK;
}

encdec_status api_gen_config(s2s_model *m, const char *dir) {
    char p[4200];
    const char *name = ed_is_file(ed_path_join(p, sizeof p, dir, "generation_config.json"))
                           ? "generation_config.json" : "config.json";
    ed_path_join(p, sizeof p, dir, name);
    if (!ed_is_file(p)) return ENCDEC_OK;
    cJSON *c;
    encdec_status st = ed_json_load(p, &c);
    if (st) return st;
    st = bad_words(c, name, m->n_vocab, &m->suppress, &m->n_suppress, &m->n_bad_long);
    cJSON_Delete(c);
    return st;
}
