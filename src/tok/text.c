/* text.c - a text-to-text model's tokenizer (text.h): the kinds, T5's wrapped
 * SentencePiece, BART's BPE, Marian's pair of models over vocab.json. */
#include "tok/text_internal.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

encdec_status ttok_wrap_spm(ed_ttok **out, const spm_tok *spm) {
    *out = calloc(1, sizeof **out);
    if (!*out) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    (*out)->kind = TTOK_T5;
    (*out)->spm = spm;
    (*out)->src_lang = -1;
    return ENCDEC_OK;
}

int ttok_is_marian_dir(const char *dir) {
    char p[4200];
    return ed_is_file(ed_path_join(p, sizeof p, dir, "source.spm")) &&
           ed_is_file(ed_path_join(p, sizeof p, dir, "target.spm")) &&
           ed_is_file(ed_path_join(p, sizeof p, dir, "vocab.json"));
}

/* tokenizer_config.json's source_lang and target_lang (optional). */
static encdec_status read_pair(ed_ttok *t, const char *dir) {
    char p[4200];
    if (!ed_is_file(ed_path_join(p, sizeof p, dir, "tokenizer_config.json"))) return ENCDEC_OK;
    cJSON *c;
    encdec_status st = ed_json_load(p, &c);
    if (st) return st;
    const char *keys[2] = {"source_lang", "target_lang"};
    for (int i = 0; i < 2 && !st; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, keys[i]);
        if (cJSON_IsString(v) && *v->valuestring && strlen(v->valuestring) < 32 &&
            !(t->pair[i] = strdup(v->valuestring)))
            st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    }
    cJSON_Delete(c);
    return st;
}

encdec_status ttok_load_marian(ed_ttok **out, const char *dir) {
    *out = NULL;
    ed_ttok *t = calloc(1, sizeof *t);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    char p[4200];
    encdec_status st = spm_load_model_ex(&t->src, ed_path_join(p, sizeof p, dir, "source.spm"), 0);
    if (!st) st = spm_load_model_ex(&t->tgt, ed_path_join(p, sizeof p, dir, "target.spm"), 0);
    t->kind = TTOK_MARIAN;
    t->src_lang = -1;
    if (!st) st = ttok_read_vocab_json(t, ed_path_join(p, sizeof p, dir, "vocab.json"));
    if (!st) st = ttok_marian_langs(t);
    if (!st) st = read_pair(t, dir);
    if (st) {
        ttok_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}

int ttok_is_bpe_dir(const char *dir) {
    char p[4200], q[4200];
    return ed_is_file(ed_path_join(p, sizeof p, dir, "tokenizer.json")) ||
           (ed_is_file(ed_path_join(p, sizeof p, dir, "vocab.json")) &&
            ed_is_file(ed_path_join(q, sizeof q, dir, "merges.txt")));
}

encdec_status ttok_load_bpe(ed_ttok **out, const char *dir, int bos) {
    *out = NULL;
    ed_ttok *t = calloc(1, sizeof *t);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    encdec_status st = bpe_load_dir(&t->bpe, dir);
    t->kind = TTOK_BART;
    t->src_lang = -1;
    t->bos = bos;
    if (!st) {
        t->eos = bpe_token_id(t->bpe, "</s>");
        if (t->eos < 0) st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: the tokenizer has no \"</s>\"", dir);
        else if (bos >= bpe_n_vocab(t->bpe))
            st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: bos_token_id %d is past the tokenizer's %d "
                         "tokens", dir, bos, bpe_n_vocab(t->bpe));
    }
    if (st) {
        ttok_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}

int ttok_n_vocab(const ed_ttok *t) {
    return t->spm ? spm_n_vocab(t->spm) : t->bpe ? bpe_n_vocab(t->bpe) : t->vocab.n;
}
int ttok_eos(const ed_ttok *t) { return t->spm ? spm_eos(t->spm) : t->eos; }

/* A Marian target-language token ">>xx<<" at the start of text (the first
 * ">>" to the last "<<" of the line, as MarianTokenizer's pattern), when
 * vocab.json has it: its id, and *rest past it; else -1. */
static int lang_code(const ed_ttok *t, const char *text, size_t len, size_t *rest) {
    if (len < 5 || strncmp(text, ">>", 2)) return -1;
    size_t end = 0;
    for (size_t i = 2; i + 1 < len && text[i] != '\n'; i++)
        if (text[i] == '<' && text[i + 1] == '<') end = i + 2;
    if (!end) return -1;
    int id = tv_lookup(&t->vocab, text, end);
    if (id >= 0) *rest = end;
    return id;
}

/* Marian: the target language's token (tgt, else one the text starts
 * with), the pieces, </s>. */
static encdec_status marian_encode(const ed_ttok *t, const char *text, size_t len, int tgt, int **ids,
                                   int *n) {
    size_t rest = 0;
    int code = tgt >= 0 ? t->lang_id[tgt] : lang_code(t, text, len, &rest);
    int *sp = NULL, ns = 0;
    encdec_status st = spm_encode(t->src, text + rest, len - rest, 0, &sp, &ns);
    if (st) return st;
    int *o = malloc(sizeof(int) * ((size_t)ns + 2)), k = 0;
    if (!o) {
        free(sp);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: input tokens");
    }
    if (code >= 0) o[k++] = code;
    for (int i = 0; i < ns; i++) {
        const char *piece = spm_piece(t->src, sp[i]);
        int id = piece ? tv_lookup(&t->vocab, piece, strlen(piece)) : -1;
        o[k++] = id >= 0 ? id : t->unk;
    }
    o[k++] = t->eos;
    free(sp);
    *ids = o;
    *n = k;
    return ENCDEC_OK;
}

/* BART: <s> (where there is one), the byte-level BPE of the text, </s>. */
static encdec_status bpe_encode_all(const ed_ttok *t, const char *text, size_t len, int **ids, int *n) {
    char *z = malloc(len + 1);   /* bpe_encode reads a C string */
    if (!z) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: input");
    memcpy(z, text, len);
    z[len] = 0;
    int k = 0, b = t->bos >= 0;
    encdec_status st = memchr(text, 0, len) ? ed_fail(ENCDEC_ERR_ARG, "a NUL byte in the text")
                                            : bpe_encode(t->bpe, z, NULL, 0, &k);
    int *o = st ? NULL : malloc(sizeof(int) * ((size_t)k + 2));
    if (!st && !o) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: input tokens");
    if (!st) st = bpe_encode(t->bpe, z, o + b, k, &k);
    free(z);
    if (st) {
        free(o);
        return st;
    }
    if (b) o[0] = t->bos;
    o[b + k] = t->eos;
    *ids = o;
    *n = b + k + 1;
    return ENCDEC_OK;
}

encdec_status ttok_encode_lang(const ed_ttok *t, const char *text, size_t len, int src, int tgt, int **ids,
                               int *n) {
    if (src >= t->n_langs || tgt >= t->n_langs) src = tgt = -1;   /* not from ttok_find_lang */
    if (t->spm) return spm_encode(t->spm, text, len, 1, ids, n);
    if (t->bpe) return bpe_encode_all(t, text, len, ids, n);
    if (t->kind == TTOK_MARIAN) return marian_encode(t, text, len, tgt, ids, n);
    if (t->kind == TTOK_VOCAB)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "this model directory has a vocabulary but no tokenizer "
                       "files (sentencepiece.bpe.model, source.spm + target.spm + vocab.json, "
                       "tokenizer.json, ...): give it tokens (encdec.Translator, "
                       "encdec_engine_generate_ids), or copy the tokenizer files beside it");
    return ttok_sp_encode(t, text, len, src, ids, n);
}

encdec_status ttok_encode(const ed_ttok *t, const char *text, size_t len, int **ids, int *n) {
    return ttok_encode_lang(t, text, len, -1, -1, ids, n);
}

static int marian_special(const ed_ttok *t, int id) {
    return id == t->eos || id == t->unk || id == t->pad;
}

/* Marian, as MarianTokenizer.decode(skip_special_tokens=True): the other
 * pieces through target.spm's decode_pieces (joined, U+2581 a space, a
 * piece the model lacks as it is spelled), then stripped of white space at
 * both ends. */
static encdec_status marian_decode(const ed_ttok *t, const int *ids, int n, char **text) {
    size_t cap = 1;
    for (int i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < t->text.n) cap += tv_len(&t->text, ids[i]);
    char *s = malloc(cap), *w = s;
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    for (int i = 0; i < n; i++) {
        int id = ids[i];
        if (id < 0 || id >= t->text.n || marian_special(t, id)) continue;
        size_t k = tv_len(&t->text, id);
        memcpy(w, tv_spelling(&t->text, id), k);
        w += k;
    }
    while (w > s && (w[-1] == ' ' || w[-1] == '\t' || w[-1] == '\n' || w[-1] == '\r')) w--;
    *w = 0;
    size_t lead = strspn(s, " \t\n\r");
    memmove(s, s + lead, (size_t)(w - s) - lead + 1);
    *text = s;
    return ENCDEC_OK;
}

encdec_status ttok_decode(const ed_ttok *t, const int *ids, int n, char **text) {
    if (t->bpe) {   /* special tokens and ids past the vocabulary skipped */
        *text = bpe_decode(t->bpe, ids, n, 1);
        return *text ? ENCDEC_OK : ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    }
    if (t->kind == TTOK_MARIAN) return marian_decode(t, ids, n, text);
    if (!t->spm) return ttok_sp_decode(t, ids, n, text);
    int *kept = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)), k = 0, V = spm_n_vocab(t->spm);
    if (!kept) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    for (int i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < V) kept[k++] = ids[i];
    encdec_status st = spm_decode(t->spm, kept, k, 1, text);
    free(kept);
    return st;
}

const char *ttok_token_text(const ed_ttok *t, int id, size_t *len) {
    if (t->spm) return spm_token_text(t->spm, id, len);
    if (t->bpe) {
        size_t n = 0;
        const char *p = bpe_token_bytes(t->bpe, id, &n);
        if (len) *len = n;
        return p;
    }
    const char *p = tv_spelling(&t->text, id);
    if (p && len) *len = tv_len(&t->text, id);
    return p;
}

int ttok_token_id(const ed_ttok *t, const char *s) {
    if (!s) return -1;
    if (t->spm) return spm_piece_id(t->spm, s);
    if (t->bpe) return bpe_token_id(t->bpe, s);
    return tv_lookup(&t->vocab, s, strlen(s));
}

const char *ttok_token_spelling(const ed_ttok *t, int id) {
    if (t->spm) return spm_piece(t->spm, id);
    if (t->bpe) return bpe_token_spelling(t->bpe, id);
    return tv_spelling(&t->vocab, id);
}

int ttok_is_normal(const ed_ttok *t, int id) {
    if (t->spm) return spm_is_normal(t->spm, id);
    if (t->bpe) return id >= 0 && id < bpe_n_vocab(t->bpe) && !bpe_is_special(t->bpe, id);
    const char *p = tv_spelling(&t->vocab, id);
    if (t->kind != TTOK_MARIAN) return p && !t->special[id];
    return p && !marian_special(t, id) && strncmp(p, ">>", 2) != 0;
}
