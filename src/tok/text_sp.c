/* text_sp.c - the SentencePiece tokenizers of the fairseq translation models,
 * as transformers' classes of the same names build them from a model
 * directory (text.h):
 *
 *   NllbTokenizer, MBart50Tokenizer, MBartTokenizer  sentencepiece.bpe.model;
 *       <s> 0, <pad> 1, </s> 2, <unk> 3, then piece i at i + 1 (fairseq's
 *       offset), language codes and <mask> after;
 *   M2M100Tokenizer  sentencepiece.bpe.model + vocab.json (piece -> id; a
 *       piece it lacks is <unk>), then __xx__ language tokens at
 *       len(vocab.json) + i for the built-in list tokenizer_config.json's
 *       language_codes names (special only where additional_special_tokens
 *       lists them: transformers 4.46 no longer adds them itself), and
 *       madeupwordNNNN;
 *   PegasusTokenizer  spiece.model; <pad> 0, </s> 1, <mask_1>, <mask_2>,
 *       <unk_2> ... <unk_102>, then piece i at i + offset (103).
 *
 * tokenizer_config.json's added_tokens_decoder (what save_pretrained writes)
 * gives added tokens their ids where it has them, else added_tokens.json,
 * else the layout above with additional_special_tokens as the language
 * codes. A directory with tokenizer.json and no SentencePiece model (what
 * the fast classes save when they were loaded without one) is read as the
 * fast class: the `tokenizers` pipeline of spm_json.c (BPE for NLLB and
 * mBART, Unigram for Pegasus), whose ids are the model's and whose added
 * tokens are split as that library splits them. Added tokens are split out of the text before segmentation, as the
 * slow classes split them; inputs are [src_lang] text </s> (mBART, and NLLB's
 * legacy_behaviour: text </s> [src_lang]; Pegasus: text </s>). Decoding skips
 * the special tokens, joins the pieces (U+2581 a space) and strips the ends;
 * clean_up_tokenization_spaces as the config says.
 */
#include "tok/text_internal.h"
#include "tok/spm.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the language lists M2M100Tokenizer carries ----------------------------------- */

static const char *const M2M100_CODES[] = {
    "af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb", "cs", "cy", "da",
    "de", "el", "en", "es", "et", "fa", "ff", "fi", "fr", "fy", "ga", "gd", "gl", "gu", "ha", "he",
    "hi", "hr", "ht", "hu", "hy", "id", "ig", "ilo", "is", "it", "ja", "jv", "ka", "kk", "km", "kn",
    "ko", "lb", "lg", "ln", "lo", "lt", "lv", "mg", "mk", "ml", "mn", "mr", "ms", "my", "ne", "nl",
    "no", "ns", "oc", "or", "pa", "pl", "ps", "pt", "ro", "ru", "sd", "si", "sk", "sl", "so", "sq",
    "sr", "ss", "su", "sv", "sw", "ta", "th", "tl", "tn", "tr", "uk", "ur", "uz", "vi", "wo", "xh",
    "yi", "yo", "zh", "zu"};
static const char *const WMT21_CODES[] = {"en", "ha", "is", "ja", "cs", "ru", "zh", "de"};

/* ---- the class ------------------------------------------------------------------------- */

static int class_of(const char *cls, const char *model_type, const char *dir) {
    static const struct { const char *name; int kind; } names[] = {
        {"NllbTokenizer", TTOK_NLLB}, {"MBart50Tokenizer", TTOK_MBART50}, {"MBartTokenizer", TTOK_MBART},
        {"M2M100Tokenizer", TTOK_M2M100}, {"PegasusTokenizer", TTOK_PEGASUS}};
    if (cls) {
        size_t n = strlen(cls);
        if (n > 4 && !strcmp(cls + n - 4, "Fast")) n -= 4;
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if (strlen(names[i].name) == n && !strncmp(cls, names[i].name, n)) return names[i].kind;
        return -1;
    }
    char p[4200];
    if (!strcmp(model_type, "pegasus")) return TTOK_PEGASUS;
    if (!strcmp(model_type, "mbart")) return TTOK_MBART50;
    if (!strcmp(model_type, "m2m_100"))   /* NLLB is an m2m_100 model without vocab.json */
        return ed_is_file(ed_path_join(p, sizeof p, dir, "vocab.json")) ? TTOK_M2M100 : TTOK_NLLB;
    return -1;
}

int ttok_is_sp_dir(const char *dir) {
    char p[4200], q[4200], r[4200];
    return ed_is_file(ed_path_join(p, sizeof p, dir, "sentencepiece.bpe.model")) ||
           ed_is_file(ed_path_join(q, sizeof q, dir, "spiece.model")) ||
           ed_is_file(ed_path_join(r, sizeof r, dir, "tokenizer.json"));
}

/* ---- building the vocabulary ------------------------------------------------------------ */

typedef struct {
    ed_ttok *t;
    const char *file;          /* for messages */
    uint8_t *special;          /* grows with the vocabulary */
    int special_cap;
} build;

static encdec_status put(build *b, int id, const char *s, int special) {
    int added;
    encdec_status st = tv_put(&b->t->vocab, id, s, strlen(s), b->file, &added);
    if (!st) st = ttok_put_text(&b->t->text, id, s, b->file);
    if (st) return st;
    if (id >= b->special_cap) {
        int cap = b->special_cap ? b->special_cap : 1024;
        while (cap <= id) cap *= 2;
        uint8_t *p = realloc(b->special, (size_t)cap);
        if (!p) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
        memset(p + b->special_cap, 0, (size_t)(cap - b->special_cap));
        b->special = p;
        b->special_cap = cap;
    }
    b->special[id] |= (uint8_t)special;
    return ENCDEC_OK;
}

/* An added token: its id, split out of the text. */
static encdec_status put_added(build *b, int id, const char *s, int special) {
    ed_ttok *t = b->t;
    int old = tv_lookup(&t->vocab, s, strlen(s));
    if (old >= 0 && old != id)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: \"%.40s\" has the ids %d and %d", b->file, s, old, id);
    encdec_status st = put(b, id, s, special);
    if (st) return st;
    int *a = realloc(t->added, sizeof(int) * ((size_t)t->n_added + 1));
    if (!a) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    t->added = a;
    t->added[t->n_added++] = id;
    t->added_first[(uint8_t)s[0]] = 1;
    return ENCDEC_OK;
}

/* tokenizer_config.json's added_tokens_decoder {"id": {"content", "special"}};
 * *found = how many. */
static encdec_status read_added_decoder(build *b, const cJSON *cfg, int *found) {
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(cfg, "added_tokens_decoder"), *e;
    *found = 0;
    if (!dec) return ENCDEC_OK;
    cJSON_ArrayForEach(e, dec) {
        char *end;
        long id = strtol(e->string, &end, 10);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (*end || end == e->string || id < 0 || id >= TV_MAX_ID || !cJSON_IsString(c) || !c->valuestring[0])
            return ed_fail(ENCDEC_ERR_TOKENIZER, "tokenizer_config.json: added_tokens_decoder entry "
                           "\"%.20s\" is not an id with a content", e->string);
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "special");
        encdec_status st = put_added(b, (int)id, c->valuestring, !sp || cJSON_IsTrue(sp));
        if (st) return st;
        ++*found;
    }
    return ENCDEC_OK;
}

/* added_tokens.json {"spelling": id}, the older file; special where the
 * token is one of the config's special ones (all of them here are). */
static encdec_status read_added_json(build *b, const char *dir, int *found) {
    char p[4200];
    *found = 0;
    if (!ed_is_file(ed_path_join(p, sizeof p, dir, "added_tokens.json"))) return ENCDEC_OK;
    cJSON *c;
    encdec_status st = ed_json_load(p, &c);
    if (st) return st;
    const cJSON *e;
    cJSON_ArrayForEach(e, c) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble < TV_MAX_ID) ||
            e->valuedouble != (double)(int)e->valuedouble || !e->string[0]) {
            st = ed_fail(ENCDEC_ERR_TOKENIZER, "added_tokens.json: the id of \"%.40s\" is not an "
                         "integer in [0, %d)", e->string, TV_MAX_ID);
            break;
        }
        if ((st = put_added(b, e->valueint, e->string, 1))) break;
        ++*found;
    }
    cJSON_Delete(c);
    return st;
}

/* The pieces of the SentencePiece model at id = piece + offset, where
 * neither the id nor the spelling is taken (added tokens come first). */
static encdec_status put_pieces(build *b, int offset, int first) {
    const spm_tok *sp = b->t->src;
    for (int i = first; i < spm_n_vocab(sp); i++) {
        const char *s = spm_piece(sp, i);
        int id = i + offset;
        if (!s || tv_spelling(&b->t->vocab, id) || tv_lookup(&b->t->vocab, s, strlen(s)) >= 0) continue;
        encdec_status st = put(b, id, s, 0);
        if (st) return st;
    }
    return ENCDEC_OK;
}

/* The configuration's additional_special_tokens (tokenizer_config.json, else
 * special_tokens_map.json): strings, or {"content": ...} objects. */
static const cJSON *extra_specials(const cJSON *cfg, const cJSON *map) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(cfg, "additional_special_tokens");
    if (!cJSON_GetArraySize(a)) a = cJSON_GetObjectItemCaseSensitive(map, "additional_special_tokens");
    return cJSON_IsArray(a) ? a : NULL;
}

static const char *spelling_of(const cJSON *e) {
    if (cJSON_IsString(e)) return e->valuestring;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

/* ---- the classes' layouts ------------------------------------------------------------- */

/* tokenizer.json: its added tokens (special as it says), then its pieces,
 * each at the id it gives. */
static encdec_status json_layout(build *b) {
    const spm_tok *sp = b->t->src;
    encdec_status st = ENCDEC_OK;
    for (int i = 0, id; !st && (id = spm_split_token(sp, i)) >= 0; i++) {
        const char *s = spm_piece(sp, id);
        if (!tv_spelling(&b->t->vocab, id)) st = put_added(b, id, s, spm_is_special(sp, id));
    }
    return st ? st : put_pieces(b, 0, 0);
}

static encdec_status fairseq_layout(build *b, const cJSON *cfg, const cJSON *map, int explicit_ids) {
    static const char *const first[] = {"<s>", "<pad>", "</s>", "<unk>"};
    encdec_status st = ENCDEC_OK;
    for (int i = 0; i < 4 && !st; i++)
        if (!tv_spelling(&b->t->vocab, i)) st = put_added(b, i, first[i], 1);
    if (!st) st = put_pieces(b, 1, 1);
    const cJSON *codes = extra_specials(cfg, map), *e;
    if (st || explicit_ids) return st;
    /* no ids in the files: the codes after the pieces, then <mask> */
    int next = b->t->vocab.n;
    cJSON_ArrayForEach(e, codes) {
        const char *s = spelling_of(e);
        if (s && tv_lookup(&b->t->vocab, s, strlen(s)) < 0 && (st = put_added(b, next++, s, 1))) return st;
    }
    if (tv_lookup(&b->t->vocab, "<mask>", 6) < 0) st = put_added(b, next, "<mask>", 1);
    return st;
}

static encdec_status pegasus_layout(build *b, const cJSON *cfg, int explicit_ids) {
    int offset;
    encdec_status st = ed_json_int_opt(cfg, "offset", "tokenizer_config.json", 0, 1 << 20, 103, &offset);
    if (st) return st;
    if (!explicit_ids) {
        const char *head[] = {"<pad>", "</s>", "<mask_1>", "<mask_2>"};
        for (int i = 0; i < 4 && i < offset + 2 && !st; i++) st = put_added(b, i, head[i], 1);
        char s[32];
        for (int i = 2; i < offset && !st; i++) {
            snprintf(s, sizeof s, "<unk_%d>", i);
            st = put_added(b, i + 2, s, 1);
        }
    }
    return st ? st : put_pieces(b, offset, 0);
}

/* 1 when s is one of the configuration's additional special tokens. */
static int listed(const cJSON *extra, const char *s) {
    const cJSON *e;
    cJSON_ArrayForEach(e, extra) {
        const char *x = spelling_of(e);
        if (x && !strcmp(x, s)) return 1;
    }
    return 0;
}

/* vocab.json, then the language tokens of the built-in list at
 * len(vocab.json) + i: special (skipped by decoding, split out of the text)
 * where the configuration lists them, as transformers then treats them. */
static encdec_status m2m100_vocab(build *b, const char *dir, int *n_json) {
    char p[4200];
    encdec_status st = ttok_read_vocab_json(b->t, ed_path_join(p, sizeof p, dir, "vocab.json"));
    *n_json = b->t->vocab.n;
    for (int i = 0; i < *n_json && !st; i++) st = put(b, i, tv_spelling(&b->t->vocab, i), 0);
    return st;
}

static encdec_status m2m100_layout(build *b, int n_json, const cJSON *cfg, const cJSON *map) {
    encdec_status st = ENCDEC_OK;
    const cJSON *lc = cJSON_GetObjectItemCaseSensitive(cfg, "language_codes");
    const char *list = cJSON_IsString(lc) ? lc->valuestring : "m2m100";
    const char *const *codes = M2M100_CODES;
    int n = (int)(sizeof M2M100_CODES / sizeof *M2M100_CODES), madeup;
    if (!strcmp(list, "wmt21")) {
        codes = WMT21_CODES;
        n = (int)(sizeof WMT21_CODES / sizeof *WMT21_CODES);
    } else if (strcmp(list, "m2m100")) {
        return ed_fail(ENCDEC_ERR_TOKENIZER, "tokenizer_config.json: language_codes \"%.40s\" is not "
                       "\"m2m100\" or \"wmt21\"", list);
    }
    if (!st) st = ed_json_int_opt(cfg, "num_madeup_words", "tokenizer_config.json", 0, 1 << 16, 8, &madeup);
    const cJSON *extra = extra_specials(cfg, map);
    char s[64], *names[128];
    int ids[128];
    for (int i = 0; i < n && !st; i++) {
        snprintf(s, sizeof s, "__%s__", codes[i]);
        names[i] = (char *)codes[i];
        ids[i] = n_json + i;
        st = listed(extra, s) ? put_added(b, n_json + i, s, 1) : put(b, n_json + i, s, 0);
    }
    for (int i = 0; i < madeup && !st; i++) {
        snprintf(s, sizeof s, "madeupword%04d", i);   /* decode as <unk>: skipped */
        st = put(b, n_json + n + i, s, 1);
    }
    return st ? st : ttok_set_langs(b->t, names, ids, n);
}

/* The language codes of NLLB and mBART: the additional special tokens the
 * vocabulary has, in the configuration's order. */
static encdec_status fairseq_langs(build *b, const cJSON *cfg, const cJSON *map) {
    const cJSON *codes = extra_specials(cfg, map), *e;
    int n = cJSON_GetArraySize(codes), k = 0;
    char **names = malloc(sizeof(char *) * (size_t)(n ? n : 1));
    int *ids = malloc(sizeof(int) * (size_t)(n ? n : 1));
    encdec_status st = names && ids ? ENCDEC_OK : ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    if (!st) cJSON_ArrayForEach(e, codes) {
        const char *s = spelling_of(e);
        int id = s ? tv_lookup(&b->t->vocab, s, strlen(s)) : -1;
        if (id >= 0 && strcmp(s, "<mask>")) {
            names[k] = (char *)s;
            ids[k++] = id;
        }
    }
    if (!st) st = ttok_set_langs(b->t, names, ids, k);
    free(names);
    free(ids);
    return st;
}

/* ---- loading ---------------------------------------------------------------------------- */

static encdec_status load_json_opt(const char *dir, const char *name, cJSON **out) {
    char p[4200];
    *out = NULL;
    if (!ed_is_file(ed_path_join(p, sizeof p, dir, name))) return ENCDEC_OK;
    return ed_json_load(p, out);
}

static encdec_status build_sp(ed_ttok *t, const char *dir, const cJSON *cfg, const cJSON *map) {
    build b = {t, "tokenizer_config.json", NULL, 0};
    int n_dec = 0, n_json = 0, n_m2m = 0;
    /* M2M100: vocab.json first; its languages follow its length */
    encdec_status st = t->kind == TTOK_M2M100 ? m2m100_vocab(&b, dir, &n_m2m) : ENCDEC_OK;
    if (!st) st = read_added_decoder(&b, cfg, &n_dec);
    if (!st && !n_dec && t->kind != TTOK_M2M100 && !t->src_json) st = read_added_json(&b, dir, &n_json);
    if (!st) {
        if (t->src_json) st = json_layout(&b);
        else if (t->kind == TTOK_PEGASUS) st = pegasus_layout(&b, cfg, n_dec + n_json > 0);
        else if (t->kind == TTOK_M2M100) st = m2m100_layout(&b, n_m2m, cfg, map);
        else st = fairseq_layout(&b, cfg, map, n_dec + n_json > 0);
    }
    if (!st && t->kind != TTOK_M2M100 && t->kind != TTOK_PEGASUS) st = fairseq_langs(&b, cfg, map);
    /* every id went through put(): special[] covers the vocabulary */
    if (!st) st = tv_check(&t->vocab, "the tokenizer's vocabulary");
    t->special = b.special;
    if (st) return st;
    t->eos = tv_lookup(&t->vocab, "</s>", 4);
    t->unk = tv_lookup(&t->vocab, "<unk>", 5);
    t->pad = tv_lookup(&t->vocab, "<pad>", 5);
    t->bos = tv_lookup(&t->vocab, "<s>", 3);
    if (t->eos < 0 || t->unk < 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: the tokenizer has no \"</s>\" or \"<unk>\"", dir);
    const int always[] = {t->eos, t->unk, t->pad, t->bos};
    for (int i = 0; i < 4; i++)
        if (always[i] >= 0) t->special[always[i]] = 1;
    return ENCDEC_OK;
}

static encdec_status set_src_lang(ed_ttok *t, const cJSON *cfg) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(cfg, "src_lang");
    const char *dflt = t->kind == TTOK_NLLB ? "eng_Latn" : t->kind == TTOK_M2M100 ? "en" : "en_XX";
    const char *code = cJSON_IsString(s) ? s->valuestring : dflt;
    t->src_lang = -1;
    if (t->kind == TTOK_PEGASUS) return ENCDEC_OK;
    int i = ttok_find_lang(t, code);
    if (i < 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "tokenizer_config.json: src_lang \"%.40s\" is not one of "
                       "the tokenizer's %d language codes", code, t->n_langs);
    t->src_lang = i;
    return ENCDEC_OK;
}

encdec_status ttok_load_sp(ed_ttok **out, const char *dir, const char *model_type) {
    *out = NULL;
    cJSON *cfg = NULL, *map = NULL;
    encdec_status st = load_json_opt(dir, "tokenizer_config.json", &cfg);
    if (!st) st = load_json_opt(dir, "special_tokens_map.json", &map);
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(cfg, "tokenizer_class");
    int kind = st ? -1 : class_of(cJSON_IsString(cls) ? cls->valuestring : NULL, model_type ? model_type : "", dir);
    if (!st && kind < 0)
        st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: tokenizer_class %s%.60s%s is none of NllbTokenizer, "
                     "MBart50Tokenizer, MBartTokenizer, M2M100Tokenizer, PegasusTokenizer", dir,
                     cJSON_IsString(cls) ? "\"" : "", cJSON_IsString(cls) ? cls->valuestring : "(none)",
                     cJSON_IsString(cls) ? "\"" : "");
    /* mBART without a class: mBART-cc25's 25 codes, or mBART-50's */
    if (!st && kind == TTOK_MBART50 && !cJSON_IsString(cls) && cJSON_GetArraySize(extra_specials(cfg, map)) <= 25)
        kind = TTOK_MBART;
    ed_ttok *t = st ? NULL : calloc(1, sizeof *t);
    if (!st && !t) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    if (!st) {
        char p[4200];
        t->kind = kind;
        t->src_lang = -1;
        const char *file = kind == TTOK_PEGASUS ? "spiece.model" : "sentencepiece.bpe.model";
        t->src_json = !ed_is_file(ed_path_join(p, sizeof p, dir, file)) &&
                      ed_is_file(ed_path_join(p, sizeof p, dir, "tokenizer.json"));
        if (t->src_json && kind == TTOK_M2M100)   /* (transformers has no fast M2M100 class) */
            st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: M2M100Tokenizer needs sentencepiece.bpe.model and "
                         "vocab.json", dir);
        else if (t->src_json)
            st = spm_load_json(&t->src, p);
        else
            st = spm_load_model_ex(&t->src, ed_path_join(p, sizeof p, dir, file), 0);
    }
    if (!st) st = build_sp(t, dir, cfg, map);
    if (!st) st = ed_json_bool_opt(cfg, "clean_up_tokenization_spaces", "tokenizer_config.json", 0, &t->clean_up);
    int legacy = 0;
    if (!st && kind == TTOK_NLLB) st = ed_json_bool_opt(cfg, "legacy_behaviour", "tokenizer_config.json", 0, &legacy);
    if (!st) {
        t->lang_suffix = kind == TTOK_MBART || legacy;
        st = set_src_lang(t, cfg);
    }
    cJSON_Delete(cfg);
    cJSON_Delete(map);
    if (st) {
        ttok_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}

/* ---- encoding ----------------------------------------------------------------------------- */

/* The added token at text[0, len), the longest, or -1 (*n its length). */
static int added_at(const ed_ttok *t, const char *s, size_t len, size_t *n) {
    int best = -1;
    *n = 0;
    if (!t->added_first[(uint8_t)s[0]]) return -1;   /* most bytes: no token starts here */
    for (int i = 0; i < t->n_added; i++) {
        size_t k = tv_len(&t->vocab, t->added[i]);
        if (k > *n && k <= len && !memcmp(s, tv_spelling(&t->vocab, t->added[i]), k)) {
            best = t->added[i];
            *n = k;
        }
    }
    return best;
}

typedef struct {
    int *p;
    int n, cap;
} idv;

static encdec_status idv_put(idv *v, int id) {
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 64;
        int *p = realloc(v->p, sizeof(int) * (size_t)cap);
        if (!p) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: input tokens");
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = id;
    return ENCDEC_OK;
}

/* A token of the model by id, and into pc (when given) its spelling. */
static encdec_status put_token(const ed_ttok *t, idv *v, int id, ttok_pieces *pc) {
    encdec_status st = idv_put(v, id);
    const char *p = pc && !st ? tv_spelling(&t->vocab, id) : NULL;
    return pc && !st ? ttok_pieces_put(pc, p ? p : "", p ? strlen(p) : 0) : st;
}

/* One chunk between added tokens: its pieces, by spelling to the model's
 * ids (an unknown run as it reads: M2M100Tokenizer's vocab.json may hold
 * it; the others' tables, made of the pieces, do not); into pc (when
 * given) each piece as spelled. */
static encdec_status chunk(const ed_ttok *t, const char *s, size_t n, idv *out, ttok_pieces *pc) {
    if (!n) return ENCDEC_OK;
    int *sp = NULL, ns = 0;
    char **unknown = NULL;
    encdec_status st = spm_encode_surfaces(t->src, s, n, 0, &sp, &ns, &unknown);
    for (int i = 0; i < ns && !st; i++) {
        const char *piece = unknown[i] ? unknown[i] : spm_piece(t->src, sp[i]);
        int id = piece && (unknown[i] || sp[i] != spm_unk(t->src)) ? tv_lookup(&t->vocab, piece, strlen(piece)) : -1;
        st = idv_put(out, id >= 0 ? id : t->unk);
        if (pc && !st) st = ttok_pieces_put(pc, piece ? piece : "", piece ? strlen(piece) : 0);
    }
    free(sp);
    free(unknown);
    return st;
}

encdec_status ttok_sp_encode(const ed_ttok *t, const char *text, size_t len, int src_lang, int **ids,
                             int *n, ttok_pieces *pc) {
    idv v = {0};
    int lang = src_lang >= 0 ? t->lang_id[src_lang] : t->src_lang >= 0 ? t->lang_id[t->src_lang] : -1;
    encdec_status st = lang >= 0 && !t->lang_suffix ? put_token(t, &v, lang, pc) : ENCDEC_OK;
    size_t from = 0;
    for (size_t at = 0; at < len && !st && !t->src_json;) {   /* (tokenizer.json splits its own) */
        size_t k;
        int id = t->n_added ? added_at(t, text + at, len - at, &k) : -1;
        if (id < 0) {
            at++;
            continue;
        }
        st = chunk(t, text + from, at - from, &v, pc);
        if (!st) st = put_token(t, &v, id, pc);
        at += k;
        from = at;
    }
    if (!st) st = chunk(t, text + from, len - from, &v, pc);
    if (!st) st = put_token(t, &v, t->eos, pc);
    if (!st && lang >= 0 && t->lang_suffix) st = put_token(t, &v, lang, pc);
    if (st) {
        free(v.p);
        return st;
    }
    *ids = v.p;
    *n = v.n;
    return ENCDEC_OK;
}

/* ---- decoding ----------------------------------------------------------------------------- */

/* Python's str.isspace for the characters a piece's text can end in. */
static size_t ws_at_end(const char *s, size_t n) {
    if (n && strchr(" \t\n\r\v\f\x1c\x1d\x1e\x1f", s[n - 1])) return 1;
    return 0;
}

static size_t ws_at_start(const char *s, size_t n) {
    return n && strchr(" \t\n\r\v\f\x1c\x1d\x1e\x1f", s[0]) ? 1 : 0;
}

/* transformers' clean_up_tokenization: a space before . ? ! , and before
 * the English contractions dropped. */
static size_t clean_up(char *s, size_t n) {
    static const char *const pat[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"};
    static const char *const rep[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
    for (size_t p = 0; p < sizeof pat / sizeof *pat; p++) {
        size_t pl = strlen(pat[p]), rl = strlen(rep[p]), w = 0;
        for (size_t r = 0; r < n;) {
            if (n - r >= pl && !memcmp(s + r, pat[p], pl)) {
                memcpy(s + w, rep[p], rl);
                w += rl;
                r += pl;
            } else {
                s[w++] = s[r++];
            }
        }
        n = w;
    }
    s[n] = 0;
    return n;
}

/* tokenizer.json: its decoder (spm_decode's `tokenizers` pipeline), the
 * special tokens and ids past the vocabulary skipped, then the clean-up as
 * transformers' fast decode does it. */
static encdec_status json_decode(const ed_ttok *t, const int *ids, int n, const char *const *subst,
                                 char **text) {
    int *v = malloc(sizeof(int) * (size_t)(n ? n : 1)), k = 0;
    if (!v) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    for (int i = 0; i < n; i++) {
        int id = subst && subst[i] ? spm_piece_id(t->src, subst[i]) : -1;   /* (the model's ids) */
        id = id >= 0 ? id : ids[i];
        if (id >= 0 && id < spm_n_vocab(t->src)) v[k++] = id;
    }
    encdec_status st = spm_decode(t->src, v, k, 1, text);
    free(v);
    if (!st && t->clean_up) clean_up(*text, strlen(*text));
    return st;
}

encdec_status ttok_sp_decode(const ed_ttok *t, const int *ids, int n, const char *const *subst, char **text) {
    if (t->src_json) return json_decode(t, ids, n, subst, text);
    size_t cap = 1;
    for (int i = 0; i < n; i++)
        if (subst && subst[i]) cap += strlen(subst[i]);
        else if (ids[i] >= 0 && ids[i] < t->text.n) cap += tv_len(&t->text, ids[i]);
    char *s = malloc(cap);
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: output text");
    size_t w = 0;
    for (int i = 0; i < n; i++) {
        int id = ids[i];
        if (subst && subst[i]) {
            w += ttok_unmark(s + w, subst[i]);
            continue;
        }
        if (id < 0 || id >= t->text.n || t->special[id]) continue;
        size_t k = tv_len(&t->text, id);
        memcpy(s + w, tv_spelling(&t->text, id), k);
        w += k;
    }
    while (ws_at_end(s, w)) w--;
    size_t lead = 0;
    while (ws_at_start(s + lead, w - lead)) lead++;
    memmove(s, s + lead, w - lead);
    w -= lead;
    s[w] = 0;
    if (t->clean_up) clean_up(s, w);
    *text = s;
    return ENCDEC_OK;
}
