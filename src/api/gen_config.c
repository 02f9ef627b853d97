/* gen_config.c - a text model's generation config, read from
 * generation_config.json, else config.json, as transformers' generate()
 * reads it: what it imposes on every generation (bad_words_ids: Marian's
 * <pad>), and the search settings encdec_generate_model_params starts from
 * (num_beams, length_penalty, early_stopping, max_length / max_new_tokens,
 * min_length, no_repeat_ngram_size, repetition_penalty, forced_eos_token_id);
 * an Argos Translate package's: Argos Translate's search. */
#include "api/api.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"
#include "tok/text.h"

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

/* A number member, absent or null: *out unchanged. */
static encdec_status num(const cJSON *c, const char *file, const char *key, double lo, double hi, int whole,
                         double *out, int *set) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!v || cJSON_IsNull(v)) return ENCDEC_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
        (whole && v->valuedouble != (double)(long)v->valuedouble))
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: %s must be a%s number in %g..%g", file, key,
                       whole ? " whole" : "", lo, hi);
    *out = v->valuedouble;
    *set = 1;
    return ENCDEC_OK;
}

/* The search settings into p (those the file names). */
static encdec_status search(const cJSON *c, const char *file, int max_new, encdec_generate_params *p) {
    double beams = p->num_beams, lp = p->length_penalty, max_len = 0, max_nt = 0, min_len = 0;
    double ngram = 0, rep = 1;
    int s_beams = 0, s_lp = 0, s_max = 0, s_mnt = 0, s_min = 0, s_ngram = 0, s_rep = 0;
    encdec_status st = num(c, file, "num_beams", 1, 64, 1, &beams, &s_beams);
    if (!st) st = num(c, file, "length_penalty", -100, 100, 0, &lp, &s_lp);
    if (!st) st = num(c, file, "max_length", 1, 1 << 20, 1, &max_len, &s_max);
    if (!st) st = num(c, file, "max_new_tokens", 1, 1 << 20, 1, &max_nt, &s_mnt);
    if (!st) st = num(c, file, "min_length", 0, 1 << 20, 1, &min_len, &s_min);
    if (!st) st = num(c, file, "no_repeat_ngram_size", 0, 1024, 1, &ngram, &s_ngram);
    if (!st) st = num(c, file, "repetition_penalty", 1e-6, 1e6, 0, &rep, &s_rep);
    if (st) return st;
    const cJSON *es = cJSON_GetObjectItemCaseSensitive(c, "early_stopping");
    if (cJSON_IsBool(es)) p->early_stopping = cJSON_IsTrue(es);
    else if (cJSON_IsString(es) && !strcmp(es->valuestring, "never")) p->early_stopping = 2;
    else if (es && !cJSON_IsNull(es))
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: early_stopping must be true, false or \"never\"", file);
    p->num_beams = (int)beams;
    p->length_penalty = (float)lp;
    /* max_new_tokens wins over max_length (whose count includes the start) */
    long mn = s_mnt ? (long)max_nt : s_max ? (long)max_len - 1 : p->max_new_tokens;
    if (mn < 1) mn = 1;
    p->max_new_tokens = (int)(mn > max_new ? max_new : mn);
    if (s_min) p->min_new_tokens = min_len > 1 ? (int)min_len - 1 : 0;
    if (p->min_new_tokens >= p->max_new_tokens) p->min_new_tokens = p->max_new_tokens - 1;
    if (s_ngram) p->no_repeat_ngram_size = (int)ngram;
    if (s_rep) p->repetition_penalty = (float)rep;
    return ENCDEC_OK;
}

/* generation_config.json's forced_eos_token_id (transformers reads that
 * file alone where it exists: a key it lacks is none): an id, a list of
 * ids (the first), or null. */
static encdec_status forced_eos(const cJSON *c, const char *file, int n_vocab, int *id) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "forced_eos_token_id");
    if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0);
    *id = -1;
    if (!v || cJSON_IsNull(v)) return ENCDEC_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int)v->valuedouble || v->valuedouble < 0 ||
        v->valuedouble >= n_vocab)
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: forced_eos_token_id is not a token id below %d", file,
                       n_vocab);
    *id = (int)v->valuedouble;
    return ENCDEC_OK;
}

/* An Argos Translate package's search: CTranslate2's translate_batch as
 * Argos Translate calls it (beam 4, length_penalty 0.2, the beam ending on
 * 4 finished hypotheses, its unknowns replaced, CTranslate2's rules and
 * limits: 256 tokens at most, 1 at least), what LibreTranslate gives. */
static void argos_search(encdec_generate_params *p, int most) {
    p->num_beams = 4;
    p->length_penalty = 0.2f;
    p->early_stopping = 1;
    p->max_new_tokens = 256 < most ? 256 : most;
    p->min_new_tokens = 1;
    p->replace_unknowns = 1;
    p->ctranslate2_rules = 1;
}

encdec_status api_gen_config(encdec_model *model, const char *dir) {
    s2s_model *m = &model->text;
    model->gen_defaults = encdec_generate_default_params();
    /* what a request may generate: 4096, and the BART family's positions */
    int most = m->ops == &bart_s2s_ops && m->n_positions - 1 < 4096 ? m->n_positions - 1 : 4096;
    if (ttok_is_argos_dir(dir)) {   /* its model/ holds the CTranslate2 config: no generation config */
        argos_search(&model->gen_defaults, most);
        return ENCDEC_OK;
    }
    char p[4200];
    const char *name = ed_is_file(ed_path_join(p, sizeof p, dir, "generation_config.json"))
                           ? "generation_config.json" : "config.json";
    ed_path_join(p, sizeof p, dir, name);
    if (!ed_is_file(p)) return ENCDEC_OK;
    cJSON *c;
    encdec_status st = ed_json_load(p, &c);
    if (st) return st;
    st = bad_words(c, name, m->n_vocab, &m->suppress, &m->n_suppress, &m->n_bad_long);
    if (!st) st = search(c, name, most, &model->gen_defaults);
    /* config.json's forced_eos_token_id (with its class default) is the
     * model's already (bart_load.c) */
    if (!st && !strcmp(name, "generation_config.json")) st = forced_eos(c, name, m->n_vocab, &m->forced_eos);
    if (!st) model->gen_defaults.forced_eos = m->forced_eos >= 0;
    cJSON_Delete(c);
    return st;
}

encdec_generate_params encdec_generate_model_params(const encdec_model *m) {
    return m && api_is_text(m) ? m->gen_defaults : encdec_generate_default_params();
}
