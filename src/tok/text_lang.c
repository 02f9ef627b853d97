/* text_lang.c - the languages of a text-to-text tokenizer (text.h): the
 * codes users write and the tokens they stand for, and where the target
 * language goes for each kind of model. */
#include "tok/text_internal.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

encdec_status ttok_set_langs(ed_ttok *t, char **codes, const int *ids, int n) {
    t->lang_code = calloc((size_t)(n ? n : 1), sizeof *t->lang_code);
    t->lang_id = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!t->lang_code || !t->lang_id) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: languages");
    for (int i = 0; i < n; i++) {
        if (!(t->lang_code[i] = strdup(codes[i]))) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: languages");
        t->lang_id[i] = ids[i];
        t->n_langs = i + 1;
    }
    return ENCDEC_OK;
}

/* Marian's multilingual models: the >>xx<< tokens of vocab.json, as "xx". */
encdec_status ttok_marian_langs(ed_ttok *t) {
    int n = 0;
    for (int id = 0; id < t->vocab.n; id++) {
        const char *s = tv_spelling(&t->vocab, id);
        size_t k = tv_len(&t->vocab, id);
        n += k > 4 && !strncmp(s, ">>", 2) && !strcmp(s + k - 2, "<<");
    }
    char **codes = malloc(sizeof(char *) * (size_t)(n ? n : 1));
    int *ids = malloc(sizeof(int) * (size_t)(n ? n : 1)), k = 0;
    encdec_status st = codes && ids ? ENCDEC_OK : ed_fail(ENCDEC_ERR_NOMEM, "out of memory: languages");
    for (int id = 0; id < t->vocab.n && !st; id++) {
        const char *s = tv_spelling(&t->vocab, id);
        size_t len = tv_len(&t->vocab, id);
        if (!(len > 4 && !strncmp(s, ">>", 2) && !strcmp(s + len - 2, "<<"))) continue;
        if (!(codes[k] = strndup(s + 2, len - 4))) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: languages");
        else ids[k++] = id;
    }
    if (!st) st = ttok_set_langs(t, codes, ids, k);
    for (int i = 0; i < k; i++) free(codes[i]);
    free(codes);
    free(ids);
    return st;
}

int ttok_n_langs(const ed_ttok *t) { return t->n_langs; }

const char *ttok_lang_code(const ed_ttok *t, int i) {
    return i >= 0 && i < t->n_langs ? t->lang_code[i] : NULL;
}

int ttok_lang_token(const ed_ttok *t, int i) { return i >= 0 && i < t->n_langs ? t->lang_id[i] : -1; }

int ttok_find_lang(const ed_ttok *t, const char *code) {
    if (!code) return -1;
    for (int i = 0; i < t->n_langs; i++)
        if (!strcmp(t->lang_code[i], code)) return i;
    /* the token's own spelling: "__fr__", ">>fr<<" */
    for (int i = 0; i < t->n_langs; i++) {
        const char *s = tv_spelling(&t->vocab, t->lang_id[i]);
        if (s && !strcmp(s, code)) return i;
    }
    return -1;
}

int ttok_tgt_place(const ed_ttok *t) {
    if (!t->n_langs) return TTOK_TGT_NONE;
    switch (t->kind) {
    case TTOK_MARIAN: return TTOK_TGT_SOURCE;
    case TTOK_MBART: return TTOK_TGT_START;
    case TTOK_NLLB: case TTOK_MBART50: case TTOK_M2M100: return TTOK_TGT_FORCED;
    default: return TTOK_TGT_NONE;
    }
}

int ttok_has_src_lang(const ed_ttok *t) { return t->src_lang >= 0; }

const char *ttok_pair(const ed_ttok *t, int which) { return which == 0 || which == 1 ? t->pair[which] : NULL; }

const int *ttok_text_prefix(const ed_ttok *t, int *n) {
    *n = t->n_text_prefix;
    return t->n_text_prefix ? t->text_prefix : NULL;
}
