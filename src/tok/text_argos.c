/* text_argos.c - an Argos Translate package's tokenizer (text.h) over the
 * vocabulary of the CTranslate2 model beside it (model/shared_vocabulary),
 * each token mapped by its spelling, as Argos Translate hands CTranslate2
 * its tokens; metadata.json's from_code and to_code as the pair. Either
 * its one SentencePiece model (sentencepiece.model, both sides: encoding
 * and decoding are text.c's, the mapped kinds'), or its bpe.model, as
 * Argos Translate's BPETokenizer: encoding normalises and tokenizes the
 * text as Moses does for from_code, then segments it by the codes
 * (ttok_argos_bpe_encode); decoding joins the units ("@@ " taken out) and
 * detokenizes them as Moses does for to_code (ttok_argos_bpe_decode).
 * Moses' data are scripts/fetch-model.sh moses's: $ENCDEC_MOSES, else
 * sacremoses-0.1.1 in the models cache ($XDG_CACHE_HOME/encdec/models or
 * ~/.cache/encdec/models). */
#include "tok/text_internal.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ttok_is_argos_dir(const char *dir) {
    char p[4200], q[4200], b[4200], m[4200];
    return ed_is_file(ed_path_join(p, sizeof p, dir, "metadata.json")) &&
           (ed_is_file(ed_path_join(q, sizeof q, dir, "sentencepiece.model")) ||
            ed_is_file(ed_path_join(b, sizeof b, dir, "bpe.model"))) &&
           ttok_is_vocab_dir(ed_path_join(m, sizeof m, dir, "model"));
}

/* Where Moses' data are: $ENCDEC_MOSES, else the models cache's. */
static const char *moses_dir(char *buf, size_t cap) {
    const char *e = getenv("ENCDEC_MOSES"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (e && *e) snprintf(buf, cap, "%s", e);
    else if (x && *x) snprintf(buf, cap, "%s/encdec/models/sacremoses-0.1.1", x);
    else snprintf(buf, cap, "%s/.cache/encdec/models/sacremoses-0.1.1", h ? h : ".");
    return buf;
}

/* bpe.model's codes, Moses' data and tokenizer for from_code. */
static encdec_status load_bpe_side(ed_ttok *t, const char *dir) {
    char p[4200], md[4200];
    t->kind = TTOK_ARGOS_BPE;
    encdec_status st = nmt_bpe_load(&t->nmt, ed_path_join(p, sizeof p, dir, "bpe.model"));
    if (st) return st;
    moses_dir(md, sizeof md);
    if (!ed_is_file(ed_path_join(p, sizeof p, md, "classes.tsv")))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: this Argos Translate package is tokenized by bpe.model "
                       "(Moses + BPE), and Moses' data are not at %s: scripts/fetch-model.sh moses installs "
                       "them ($ENCDEC_MOSES names another folder)", dir, md);
    st = moses_data_load(md, &t->moses);
    return st ? st : moses_tok_new(t->moses, t->pair[0], &t->mtok);
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
    if (ed_is_file(ed_path_join(p, sizeof p, dir, "sentencepiece.model"))) {
        st = spm_load_model_ex(&t->src, p, 0);
        if (!st) st = spm_load_model_ex(&t->tgt, p, 0);
    }
    if (!st && t->unk < 0) st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s/model: the vocabulary has no <unk>", dir);
    if (!st) st = read_metadata(t, ed_path_join(p, sizeof p, dir, "metadata.json"));
    if (!st && !t->src) st = load_bpe_side(t, dir);
    if (st) {
        ttok_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}

/* The units' ids (the source vocabulary's where the model has one; <unk>
 * where it lacks a unit), no </s>: the tokens alone, as Argos Translate
 * hands them to CTranslate2. */
encdec_status ttok_argos_bpe_encode(const ed_ttok *t, const char *text, size_t len, int **ids, int *n,
                                    ttok_pieces *pc) {
    char *norm = NULL, *toks = NULL;
    size_t nn = 0;
    nmt_units u = {0};
    encdec_status st = moses_normalize(t->pair[0], text, len, &norm, &nn);
    if (!st) st = moses_tokenize(t->mtok, norm, nn, &toks);   /* (a NUL byte goes there, as in Python) */
    if (!st) st = nmt_bpe_segment(t->nmt, toks, strlen(toks), &u);
    int *o = st ? NULL : malloc(sizeof(int) * ((size_t)u.n + 1));
    if (!st && !o) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: input tokens");
    const tok_vocab *v = t->sep_src ? &t->srcv : &t->vocab;
    int unk = t->sep_src ? tv_lookup(&t->srcv, "<unk>", 5) : t->unk;
    for (int i = 0; i < u.n && !st; i++) {
        int id = tv_lookup(v, nmt_unit(&u, i), u.len[i]);
        o[i] = id >= 0 ? id : unk;
        if (pc) st = ttok_pieces_put(pc, nmt_unit(&u, i), u.len[i]);
    }
    if (!st) {
        *ids = o;
        *n = u.n;
        o = NULL;
    }
    free(o);
    nmt_units_free(&u);
    free(toks);
    free(norm);
    return st;
}

/* The tokens' spellings (a substitute's as given; <unk> as spelled, the
 * other specials and the target prefix left out) joined by spaces with
 * "@@ " taken out, then Moses' detokenizer for to_code. */
encdec_status ttok_argos_bpe_decode(const ed_ttok *t, const int *ids, int n, const char *const *subst,
                                    char **text) {
    const char **u = malloc(sizeof *u * (size_t)(n > 0 ? n : 1));
    if (!u) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    int k = 0;
    for (int i = 0; i < n; i++) {
        const char *p = subst && subst[i] ? subst[i] : NULL;
        if (!p && ids[i] >= 0 && ids[i] < t->vocab.n && (!t->special[ids[i]] || ids[i] == t->unk))
            p = tv_spelling(&t->vocab, ids[i]);
        if (p) u[k++] = p;
    }
    char *joined = nmt_bpe_join(u, k);
    free(u);
    if (!joined) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    encdec_status st = moses_detokenize(t->moses, t->pair[1], joined, strlen(joined), text);
    free(joined);
    return st;
}
