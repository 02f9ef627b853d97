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
/* A model id's spelling into pc (when there is one). */
static encdec_status put_spelling(const ed_ttok *t, int id, ttok_pieces *pc) {
    const char *p = pc ? ttok_token_spelling(t, id) : NULL;
    return pc ? ttok_pieces_put(pc, p ? p : "", p ? strlen(p) : 0) : ENCDEC_OK;
}

static encdec_status marian_encode(const ed_ttok *t, const char *text, size_t len, int tgt, int **ids,
                                   int *n, ttok_pieces *pc) {
    size_t rest = 0;
    int argos = t->kind == TTOK_ARGOS;   /* the pieces alone, as Argos Translate gives them */
    int code = argos ? -1 : tgt >= 0 ? t->lang_id[tgt] : lang_code(t, text, len, &rest);
    int *sp = NULL, ns = 0;
    char **unknown = NULL;   /* an unknown run is looked up as it reads, as MarianTokenizer does */
    encdec_status st = spm_encode_surfaces(t->src, text + rest, len - rest, 0, &sp, &ns, &unknown);
    if (st) return st;
    int *o = malloc(sizeof(int) * ((size_t)ns + 2)), k = 0;
    if (!o) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: input tokens");
    if (!st && code >= 0) {
        o[k++] = code;
        st = put_spelling(t, code, pc);
    }
    for (int i = 0; i < ns && !st; i++) {
        const char *piece = unknown[i] ? unknown[i] : spm_piece(t->src, sp[i]);
        int id = piece ? tv_lookup(t->sep_src ? &t->srcv : &t->vocab, piece, strlen(piece)) : -1;
        o[k++] = id >= 0 ? id : t->sep_src ? tv_lookup(&t->srcv, "<unk>", 5) : t->unk;
        if (pc) st = ttok_pieces_put(pc, piece ? piece : "", piece ? strlen(piece) : 0);
    }
    if (!st && !argos) {
        o[k++] = t->eos;
        st = put_spelling(t, t->eos, pc);
    }
    free(sp);
    free(unknown);
    if (st) {
        free(o);
        return st;
    }
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

/* T5's SentencePiece: its ids and, into pc, each one's piece (an unknown
 * run's text). */
static encdec_status spm_encode_all(const ed_ttok *t, const char *text, size_t len, int **ids, int *n,
                                    ttok_pieces *pc) {
    if (!pc) return spm_encode(t->spm, text, len, 1, ids, n);
    char **unknown = NULL;
    encdec_status st = spm_encode_surfaces(t->spm, text, len, 1, ids, n, &unknown);
    for (int i = 0; i < *n && !st; i++) {
        const char *p = unknown[i] ? unknown[i] : spm_piece(t->spm, (*ids)[i]);
        st = ttok_pieces_put(pc, p ? p : "", p ? strlen(p) : 0);
    }
    free(unknown);
    return st;
}

static encdec_status encode_any(const ed_ttok *t, const char *text, size_t len, int src, int tgt, int **ids,
                                int *n, ttok_pieces *pc) {
    if (src >= t->n_langs || tgt >= t->n_langs) src = tgt = -1;   /* not from ttok_find_lang */
    if (t->spm) return spm_encode_all(t, text, len, ids, n, pc);
    if (t->bpe) {
        encdec_status st = bpe_encode_all(t, text, len, ids, n);
        for (int i = 0; i < *n && !st && pc; i++) st = put_spelling(t, (*ids)[i], pc);
        return st;
    }
    if (t->kind == TTOK_MARIAN || t->kind == TTOK_ARGOS) return marian_encode(t, text, len, tgt, ids, n, pc);
    if (t->kind == TTOK_ARGOS_BPE) return ttok_argos_bpe_encode(t, text, len, ids, n, pc);
    if (t->kind == TTOK_VOCAB)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "this model directory has a vocabulary but no tokenizer "
                       "files (sentencepiece.bpe.model, source.spm + target.spm + vocab.json, "
                       "tokenizer.json, ...): give it tokens (encdec.Translator, "
                       "encdec_engine_generate_ids), or copy the tokenizer files beside it");
    return ttok_sp_encode(t, text, len, src, ids, n, pc);
}

encdec_status ttok_encode_lang(const ed_ttok *t, const char *text, size_t len, int src, int tgt, int **ids,
                               int *n) {
    return encode_any(t, text, len, src, tgt, ids, n, NULL);
}

encdec_status ttok_encode_pieces(const ed_ttok *t, const char *text, size_t len, int src, int tgt, int **ids,
                                 int *n, char ***pieces) {
    ttok_pieces pc = {0};
    *ids = NULL;
    *pieces = NULL;
    encdec_status st = encode_any(t, text, len, src, tgt, ids, n, &pc);
    if (!st && pc.count != *n)
        st = ed_fail(ENCDEC_ERR_TOKENIZER, "%d source tokens spelled for %d ids", pc.count, *n);
    if (!st) return ttok_pieces_take(&pc, pieces);
    ttok_pieces_free(&pc);
    free(*ids);
    *ids = NULL;
    return st;
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
static encdec_status marian_decode(const ed_ttok *t, const int *ids, int n, const char *const *subst,
                                   char **text) {
    size_t cap = 1;
    for (int i = 0; i < n; i++)
        if (subst && subst[i]) cap += strlen(subst[i]);
        else if (ids[i] >= 0 && ids[i] < t->text.n) cap += tv_len(&t->text, ids[i]);
    char *s = malloc(cap), *w = s;
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    for (int i = 0; i < n; i++) {
        int id = ids[i];
        if (subst && subst[i]) {
            w += ttok_unmark(w, subst[i]);
            continue;
        }
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

/* Argos Translate's SentencePieceTokenizer.decode: the pieces (a
 * replacement's as given) as SentencePiece's decode_pieces joins them (a
 * piece the model lacks as it is spelled, its unknown piece " \u2047 ",
 * the spaces that open the text dropped), every U+2581 and "_" a space,
 * then the text's first space dropped; the vocabulary's specials skipped. */
static encdec_status argos_decode(const ed_ttok *t, const int *ids, int n, const char *const *subst,
                                  char **text) {
    static const char mark[] = "\xe2\x96\x81";   /* U+2581 */
    size_t cap = 1;
    for (int i = 0; i < n; i++)
        cap += subst && subst[i] ? strlen(subst[i]) + 8 : ids[i] >= 0 && ids[i] < t->vocab.n ? tv_len(&t->vocab, ids[i]) + 8 : 0;
    char *s = malloc(cap), *w = s;
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    int bos = 1;
    for (int i = 0; i < n; i++) {
        const char *p = subst && subst[i] ? subst[i]
                      : ids[i] >= 0 && ids[i] < t->vocab.n && !t->special[ids[i]] ? tv_spelling(&t->vocab, ids[i])
                                                                                 : NULL;
        if (!p) continue;
        int pid = spm_piece_id(t->tgt, p);
        if (pid >= 0 && spm_is_special(t->tgt, pid) && pid != spm_unk(t->tgt)) continue;   /* <s>, </s> */
        if (pid >= 0 && pid == spm_unk(t->tgt)) p = " \xe2\x81\x87 ";
        if (bos)
            while (!strncmp(p, mark, 3)) p += 3;
        if (*p) bos = 0;
        size_t k = strlen(p);
        memcpy(w, p, k);
        w += k;
    }
    *w = 0;
    char *r = s;   /* U+2581 and "_" as spaces, in place (a 3-byte mark becomes 1 byte) */
    for (w = s; *r;) {
        if (!strncmp(r, mark, 3)) {
            *w++ = ' ';
            r += 3;
        } else {
            *w++ = *r == '_' ? ' ' : *r;
            r++;
        }
    }
    *w = 0;
    if (*s == ' ') memmove(s, s + 1, strlen(s));
    *text = s;
    return ENCDEC_OK;
}

encdec_status ttok_decode(const ed_ttok *t, const int *ids, int n, char **text) {
    return ttok_decode_subst(t, ids, n, NULL, text);
}

/* The ids with each substitute the vocabulary spells as its token (the
 * kinds that decode ids only); NULL when out of memory. */
static int *ids_of_subst(const ed_ttok *t, const int *ids, int n, const char *const *subst) {
    int *v = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; v && i < n; i++) {
        int id = subst && subst[i] ? ttok_token_id(t, subst[i]) : -1;
        v[i] = id >= 0 ? id : ids[i];
    }
    return v;
}

encdec_status ttok_decode_subst(const ed_ttok *t, const int *ids, int n, const char *const *subst,
                                char **text) {
    if (t->kind == TTOK_MARIAN) return marian_decode(t, ids, n, subst, text);
    if (t->kind == TTOK_ARGOS) return argos_decode(t, ids, n, subst, text);
    if (t->kind == TTOK_ARGOS_BPE) return ttok_argos_bpe_decode(t, ids, n, subst, text);
    if (!t->spm && !t->bpe) return ttok_sp_decode(t, ids, n, subst, text);
    int *v = ids_of_subst(t, ids, n, subst), k = 0;
    if (!v) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    encdec_status st = ENCDEC_OK;
    if (t->bpe) {   /* special tokens and ids past the vocabulary skipped */
        *text = bpe_decode(t->bpe, v, n, 1);
        if (!*text) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    } else {
        for (int i = 0, V = spm_n_vocab(t->spm); i < n; i++)
            if (v[i] >= 0 && v[i] < V) v[k++] = v[i];
        st = spm_decode(t->spm, v, k, 1, text);
    }
    free(v);
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

int ttok_source_id(const ed_ttok *t, const char *s) {
    return t->sep_src && s ? tv_lookup(&t->srcv, s, strlen(s)) : ttok_token_id(t, s);
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
