/* text_argos.c - an Argos Translate package's tokenizer (text.h): its one
 * SentencePiece model (sentencepiece.model, both sides) over the
 * vocabulary of the CTranslate2 model beside it (model/shared_vocabulary),
 * each piece mapped by its spelling, as Argos Translate hands CTranslate2
 * the pieces; metadata.json's from_code and to_code as the pair. Encoding
 * and decoding are text.c's (the mapped kinds'). */
#include "tok/text_internal.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

int ttok_is_argos_dir(const char *dir) {
    char p[4200], q[4200], m[4200];
    return ed_is_file(ed_path_join(p, sizeof p, dir, "metadata.json")) &&
           ed_is_file(ed_path_join(q, sizeof q, dir, "sentencepiece.model")) &&
           ttok_is_vocab_dir(ed_path_join(m, sizeof m, dir, "model"));
}

/* metadata.json: from_code and to_code (the pair); a target_prefix (the
 * multilingual packages': the token that names the target language) must
 * be a token of the vocabulary. */
static encdec_status read_metadata(ed_ttok *t, const char *path) {
    cJSON *c;
    encdec_status st = ed_json_load(path, &c);
    if (st) return st;
    const char *keys[2] = {"from_code", "to_code"};
    for (int i = 0; i < 2 && !st; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, keys[i]);
        if (!cJSON_IsString(v) || !*v->valuestring || strlen(v->valuestring) >= 32)
            st = ed_fail(ENCDEC_ERR_CONFIG, "%s: %s is not a language code", path, keys[i]);
        else if (!(t->pair[i] = strdup(v->valuestring)))
            st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    }
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(c, "target_prefix");
    if (!st && pre && !cJSON_IsNull(pre) && !cJSON_IsString(pre))
        st = ed_fail(ENCDEC_ERR_CONFIG, "%s: target_prefix is not a string", path);
    if (!st && cJSON_IsString(pre) && *pre->valuestring) {
        int id = tv_lookup(&t->vocab, pre->valuestring, strlen(pre->valuestring));
        if (id < 0)
            st = ed_fail(ENCDEC_ERR_CONFIG, "%s: target_prefix \"%.40s\" is no token of the model's "
                         "vocabulary", path, pre->valuestring);
        else {   /* every output starts with it; a language tag: no text of its own */
            t->text_prefix[0] = id;
            t->n_text_prefix = 1;
            t->special[id] = 1;
        }
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
    if (!st && cJSON_IsString(type) && strcmp(type->valuestring, "translate"))
        st = ed_fail(ENCDEC_ERR_CONFIG, "%s: a package of type \"%.40s\", not a translation", path,
                     type->valuestring);
    cJSON_Delete(c);
    return st;
}

encdec_status ttok_load_argos(ed_ttok **out, const char *dir) {
    *out = NULL;
    char p[4200];
    ed_ttok *t = NULL;
    encdec_status st = ttok_load_vocab(&t, ed_path_join(p, sizeof p, dir, "model"));
    if (st) return st;
    t->kind = TTOK_ARGOS;
    st = spm_load_model_ex(&t->src, ed_path_join(p, sizeof p, dir, "sentencepiece.model"), 0);
    if (!st) st = spm_load_model_ex(&t->tgt, p, 0);
    if (!st && t->unk < 0) st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s/model: the vocabulary has no <unk>", dir);
    if (!st) st = read_metadata(t, ed_path_join(p, sizeof p, dir, "metadata.json"));
    if (st) {
        ttok_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}
