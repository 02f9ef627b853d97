/* spm_load.c - a spm_tok's life: allocated with its style's defaults, freed
 * with everything it holds; and the three loaders' entry points (the file
 * formats are read by spm_proto.c and spm_json.c, the table they fill is
 * spm_table.c's).
 */
#include "tok/spm_internal.h"
#include "base/err.h"
#include "base/json.h"
#include "base/fmap.h"

#include <stdlib.h>
#include <string.h>

/* ---- a tokenizer's life ------------------------------------------------------ */

spm_tok *spm_alloc(int style) {
    spm_tok *t = calloc(1, sizeof *t);
    if (!t) {
        ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
        return NULL;
    }
    t->style = style;
    t->unk = t->eos = t->pad = -1;
    t->add_dummy_prefix = t->remove_extra_ws = t->escape_ws = 1;
    t->fuse_unk = 1;
    return t;
}

void spm_free(spm_tok *t) {
    if (!t) return;
    tv_free(&t->voc);
    free(t->score);
    free(t->type);
    free(t->special);
    free(t->node_id);
    free(t->edges);
    free(t->specials);
    free(t->merge_key);
    free(t->merge_rank);
    spm_charsmap_free(&t->cmap);
    for (int i = 0; i < t->n_norm; i++) {
        free(t->norm[i].pattern);
        free(t->norm[i].content);
    }
    free(t->norm);
    for (int i = 0; i < t->n_dec; i++) {
        free(t->dec[i].pattern);
        free(t->dec[i].content);
    }
    free(t->dec);
    free(t->text);
    free(t->text_off);
    free(t);
}

/* ---- entry points ------------------------------------------------------------- */

encdec_status spm_load_model(spm_tok **out, const char *path) {
    return spm_load_model_ex(out, path, 100);
}

encdec_status spm_load_model_ex(spm_tok **out, const char *path, int n_extra) {
    if (!out || !path) return ed_fail(ENCDEC_ERR_ARG, "spm_load_model: NULL argument");
    *out = NULL;
    if (n_extra < 0 || n_extra > 10000)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: %d sentinel tokens (extra_ids) is out of range 0..10000",
                       path, n_extra);
    ed_fmap f;
    encdec_status st = ed_fmap_open(&f, path);
    if (st) return st;
    spm_tok *t = spm_alloc(SPM_SLOW);
    st = t ? spm_load_proto(t, f.data, f.size, path, n_extra) : ENCDEC_ERR_NOMEM;
    ed_fmap_close(&f);
    if (st) {
        spm_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}

encdec_status spm_load_json(spm_tok **out, const char *path) {
    if (!out || !path) return ed_fail(ENCDEC_ERR_ARG, "spm_load_json: NULL argument");
    *out = NULL;
    char *text;
    size_t len;
    encdec_status st = ed_read_file(path, &text, &len);
    if (st) return st;
    spm_tok *t = spm_alloc(SPM_FAST);
    st = t ? spm_load_json_doc(t, text, len, path) : ENCDEC_ERR_NOMEM;
    free(text);
    if (st) {
        spm_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}

encdec_status spm_load_dir(spm_tok **out, const char *dir) {
    if (!out || !dir) return ed_fail(ENCDEC_ERR_ARG, "spm_load_dir: NULL argument");
    *out = NULL;
    char json[4096], model[4096];
    ed_path_join(json, sizeof json, dir, "tokenizer.json");
    ed_path_join(model, sizeof model, dir, "spiece.model");
    if (ed_is_file(json)) return spm_load_json(out, json);
    if (ed_is_file(model)) {
        /* HF's T5Tokenizer takes its sentinel count from tokenizer_config.json */
        char cfg[4096];
        int n_extra = 100;
        if (ed_is_file(ed_path_join(cfg, sizeof cfg, dir, "tokenizer_config.json"))) {
            cJSON *c;
            encdec_status st = ed_json_load(cfg, &c);
            if (st) return st;
            if (cJSON_GetObjectItemCaseSensitive(c, "extra_ids"))
                st = ed_json_int(c, "extra_ids", "tokenizer_config.json", 0, 10000, &n_extra);
            cJSON_Delete(c);
            if (st) return st;
        }
        return spm_load_model_ex(out, model, n_extra);
    }
    return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no tokenizer: neither tokenizer.json nor spiece.model", dir);
}
