/* bpe_load.c - reads the tokenizer files of a Whisper model directory into a
 * bpe_tok: a Hugging Face tokenizer.json; the older vocab.json + merges.txt
 * (+ added_tokens.json, tokenizer_config.json, special_tokens_map.json); or a
 * CTranslate2 vocabulary.txt / vocabulary.json. Every error names the file.
 */
#include "tok/bpe_internal.h"
#include "tok/vocab.h"
#include "base/err.h"
#include "base/fmap.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_CAP 4096

/* Re-labels the pending I/O error (which names the file) as a tokenizer error. */
static encdec_status tokenizer_error(void) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ed_err_msg());
    return ed_fail(ENCDEC_ERR_TOKENIZER, "%s", msg);
}

static encdec_status parse_json(cJSON **out, const char *text, size_t len, const char *file) {
    *out = cJSON_ParseWithLength(text, len);
    if (*out) return ENCDEC_OK;
    const char *at = cJSON_GetErrorPtr();
    if (at && at >= text && at <= text + len)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: malformed JSON near byte %zu", file, (size_t)(at - text));
    return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: malformed JSON", file);
}

static encdec_status read_json(cJSON **out, const char *path) {
    char *text;
    size_t len;
    *out = NULL;
    if (ed_read_file(path, &text, &len)) return tokenizer_error();
    encdec_status st = parse_json(out, text, len, path);
    free(text);
    return st;
}

/* A token id: an integral JSON number in [0, INT_MAX]. */
static int json_id(const cJSON *v, int *id) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > INT_MAX ||
        v->valuedouble != (double)(int)v->valuedouble)
        return 0;
    *id = (int)v->valuedouble;
    return 1;
}

/* {"token": id, ...} */
static encdec_status put_vocab(bpe_tok *t, const cJSON *vocab, int special, const char *file, const char *what) {
    if (!cJSON_IsObject(vocab)) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: %s is not an object", file, what);
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        int id;
        if (!json_id(e, &id))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: %s: token \"%s\" has no valid id", file, what, e->string);
        encdec_status st = bpe_put(t, id, e->string, strlen(e->string), special, file);
        if (st) return st;
    }
    return ENCDEC_OK;
}

/* One merge: "a b" (tokenizers < 0.20) or ["a", "b"]. */
static encdec_status put_merge_item(bpe_tok *t, const cJSON *m, int rank, const char *file) {
    const char *a, *b;
    size_t na, nb;
    if (tv_merge_sides(m, &a, &na, &b, &nb)) return bpe_put_merge(t, a, na, b, nb, file, rank);
    return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", file, rank);
}

static encdec_status load_tokenizer_json(bpe_tok *t, const cJSON *doc, const char *file) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(doc, "model");
    if (!cJSON_IsObject(model)) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no \"model\" object", file);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "BPE") == 0))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model type is not BPE", file);
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(doc, "pre_tokenizer");
    if (cJSON_IsObject(pre)) {
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(pre, "type");
        if (!cJSON_IsString(pt) || strcmp(pt->valuestring, "ByteLevel") != 0)
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: pre_tokenizer is not ByteLevel", file);
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pre, "add_prefix_space")))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: add_prefix_space is not supported", file);
    }
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsArray(merges)) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.merges is not an array", file);
    encdec_status st = put_vocab(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), 0, file, "model.vocab");
    if (st) return st;

    const cJSON *added = cJSON_GetObjectItemCaseSensitive(doc, "added_tokens"), *a;
    if (added && !cJSON_IsArray(added))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: added_tokens is not an array", file);
    cJSON_ArrayForEach(a, added) {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(a, "content");
        int id;
        if (!cJSON_IsString(content) || !json_id(cJSON_GetObjectItemCaseSensitive(a, "id"), &id))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: an added token lacks a content string or an id", file);
        int special = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(a, "special"));
        st = bpe_put(t, id, content->valuestring, strlen(content->valuestring), special, file);
        if (st) return st;
    }
    if ((st = bpe_finish(t, file))) return st;

    int rank = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, merges) {
        if ((st = put_merge_item(t, m, rank++, file))) return st;
    }
    return ENCDEC_OK;
}

encdec_status bpe_load_json(bpe_tok **out, const char *json, size_t len, const char *name) {
    *out = NULL;
    cJSON *doc;
    encdec_status st = parse_json(&doc, json, len, name);
    if (st) return st;
    bpe_tok *t = bpe_alloc();
    st = t ? load_tokenizer_json(t, doc, name) : ENCDEC_ERR_NOMEM;
    cJSON_Delete(doc);
    if (st) {
        bpe_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}

/* ---- line files ------------------------------------------------------------ */

/* Calls fn on each line of path (without "\n" or "\r\n"), numbered from 1. */
static encdec_status for_lines(const char *path, void *ctx,
                               encdec_status (*fn)(void *ctx, const char *s, size_t n, int line)) {
    ed_fmap f;
    if (ed_fmap_open(&f, path)) return tokenizer_error();
    const char *s = (const char *)f.data, *end = s + f.size;
    encdec_status st = ENCDEC_OK;
    for (int line = 1; s < end && !st; line++) {
        const char *nl = memchr(s, '\n', (size_t)(end - s)), *e = nl ? nl : end;
        size_t n = (size_t)(e - s);
        if (n && s[n - 1] == '\r') n--;
        st = fn(ctx, s, n, line);
        s = nl ? nl + 1 : end;
    }
    ed_fmap_close(&f);
    return st;
}

typedef struct {
    bpe_tok *t;
    const char *path;
    int rank;
} line_ctx;

static encdec_status merge_line(void *ctx, const char *s, size_t n, int line) {
    line_ctx *c = ctx;
    if (n == 0 || (line == 1 && n >= 8 && memcmp(s, "#version", 8) == 0)) return ENCDEC_OK;
    const char *sp = memchr(s, ' ', n);
    if (!sp || sp == s || sp == s + n - 1 || memchr(sp + 1, ' ', (size_t)(s + n - sp - 1)))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s:%d: expected two tokens separated by one space", c->path, line);
    return bpe_put_merge(c->t, s, (size_t)(sp - s), sp + 1, (size_t)(s + n - sp - 1), c->path, c->rank++);
}

static encdec_status vocab_line(void *ctx, const char *s, size_t n, int line) {
    line_ctx *c = ctx;
    if (n == 0) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s:%d: empty token", c->path, line);
    return bpe_put(c->t, line - 1, s, n, 0, c->path);
}

static encdec_status load_merges_txt(bpe_tok *t, const char *path) {
    line_ctx c = {t, path, 0};
    return for_lines(path, &c, merge_line);
}

/* ---- vocab.json + merges.txt ---------------------------------------------- */

/* "tok" or {"content": "tok", ...} */
static const char *token_content(const cJSON *v) {
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

static encdec_status put_special(bpe_tok *t, const cJSON *v, const char *file) {
    const char *s = token_content(v);
    if (!s) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: a special token is not a string", file);
    int id = bpe_lookup(t, s, strlen(s));
    if (id >= 0) {
        bpe_set_special(t, id);
        return ENCDEC_OK;
    }
    return bpe_put(t, -1, s, strlen(s), 1, file);
}

/* Added and special tokens of the transformers files: added_tokens.json
 * ({"tok": id}), tokenizer_config.json's added_tokens_decoder ({"id":
 * {"content": ...}}), then special_tokens_map.json, whose tokens without an
 * id get the next ids in transformers' order (bos, eos, unk, sep, pad, cls,
 * mask, additional_special_tokens). */
static encdec_status load_hf_extras(bpe_tok *t, const char *dir) {
    static const char *named[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                  "pad_token", "cls_token", "mask_token"};
    char path[PATH_CAP];
    cJSON *doc = NULL;
    encdec_status st = ENCDEC_OK;
    if (ed_is_file(ed_path_join(path, sizeof path, dir, "added_tokens.json"))) {
        if (!(st = read_json(&doc, path))) st = put_vocab(t, doc, 1, path, "the document");
        cJSON_Delete(doc);
        if (st) return st;
    }
    if (ed_is_file(ed_path_join(path, sizeof path, dir, "tokenizer_config.json"))) {
        if ((st = read_json(&doc, path))) return st;
        const cJSON *dec = cJSON_GetObjectItemCaseSensitive(doc, "added_tokens_decoder"), *e;
        cJSON_ArrayForEach(e, (cJSON_IsObject(dec) ? dec : NULL)) {
            char *end;
            long id = strtol(e->string, &end, 10);
            const char *s = token_content(e);
            if (*end || end == e->string || id < 0 || id > INT_MAX || !s) {
                st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: added_tokens_decoder entry \"%s\" is malformed",
                             path, e->string);
                break;
            }
            int special = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "special"));
            if ((st = bpe_put(t, (int)id, s, strlen(s), special, path))) break;
        }
        cJSON_Delete(doc);
        if (st) return st;
    }
    if (ed_is_file(ed_path_join(path, sizeof path, dir, "special_tokens_map.json"))) {
        if ((st = read_json(&doc, path))) return st;
        for (size_t i = 0; i < sizeof named / sizeof *named && !st; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, named[i]);
            if (v && !cJSON_IsNull(v)) st = put_special(t, v, path);
        }
        const cJSON *extra = cJSON_GetObjectItemCaseSensitive(doc, "additional_special_tokens"), *v;
        cJSON_ArrayForEach(v, (cJSON_IsArray(extra) ? extra : NULL)) {
            if (st) break;
            st = put_special(t, v, path);
        }
        cJSON_Delete(doc);
    }
    return st;
}

static encdec_status load_vocab_merges(bpe_tok *t, const char *dir) {
    char path[PATH_CAP];
    cJSON *doc;
    encdec_status st = read_json(&doc, ed_path_join(path, sizeof path, dir, "vocab.json"));
    if (!st) st = put_vocab(t, doc, 0, path, "the document");
    cJSON_Delete(doc);
    if (!st) st = load_hf_extras(t, dir);
    if (!st) st = bpe_finish(t, path);
    if (!st) st = load_merges_txt(t, ed_path_join(path, sizeof path, dir, "merges.txt"));
    return st;
}

/* ---- CTranslate2 ----------------------------------------------------------- */

/* Tokens in id order, one per line (vocabulary.txt) or a JSON array of
 * strings (vocabulary.json). The <|...|> tokens from <|endoftext|> on are
 * special. Merges come from merges.txt if present, else from the order. */
static encdec_status load_ct2(bpe_tok *t, const char *dir) {
    char path[PATH_CAP];
    encdec_status st;
    if (ed_is_file(ed_path_join(path, sizeof path, dir, "vocabulary.json"))) {
        cJSON *doc, *e;
        if ((st = read_json(&doc, path))) return st;
        int id = 0;
        if (!cJSON_IsArray(doc)) st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: not an array of tokens", path);
        cJSON_ArrayForEach(e, (st ? NULL : doc)) {
            if (!cJSON_IsString(e)) {
                st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: token %d is not a string", path, id);
                break;
            }
            if ((st = bpe_put(t, id++, e->valuestring, strlen(e->valuestring), 0, path))) break;
        }
        cJSON_Delete(doc);
    } else {
        line_ctx c = {t, ed_path_join(path, sizeof path, dir, "vocabulary.txt"), 0};
        st = for_lines(path, &c, vocab_line);
    }
    if (st) return st;
    int eot = bpe_lookup(t, "<|endoftext|>", 13);
    if ((st = bpe_finish(t, path))) return st;
    if (eot >= 0) {
        for (int id = eot; id < bpe_n_vocab(t); id++) {
            size_t n;
            const char *s = bpe_token_bytes(t, id, &n);
            if (n >= 4 && memcmp(s, "<|", 2) == 0 && memcmp(s + n - 2, "|>", 2) == 0) bpe_set_special(t, id);
        }
    }
    char merges[PATH_CAP];
    if (ed_is_file(ed_path_join(merges, sizeof merges, dir, "merges.txt"))) return load_merges_txt(t, merges);
    return bpe_derive_merges(t, path);
}

/* ---- raw bytes in rank order (whisper.cpp's ggml files) ---------------------- */

encdec_status bpe_load_bytes(bpe_tok **out, const char *const *tok, const uint32_t *len, int n,
                             const char *const *specials, int n_specials, const char *file) {
    *out = NULL;
    bpe_tok *t = bpe_alloc();
    if (!t) return ENCDEC_ERR_NOMEM;
    encdec_status st = ENCDEC_OK;
    for (int id = 0; id < n && !st; id++)
        st = bpe_put_bytes(t, id, (const uint8_t *)tok[id], len[id], file);
    for (int i = 0; i < n_specials && !st; i++)
        st = bpe_put(t, n + i, specials[i], strlen(specials[i]), 1, file);
    if (!st) st = bpe_finish(t, file);
    if (!st) st = bpe_derive_merges(t, file);
    if (st) {
        bpe_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}

/* ---- entry ----------------------------------------------------------------- */

encdec_status bpe_load_dir(bpe_tok **out, const char *dir) {
    char path[PATH_CAP];
    *out = NULL;
    if (!dir || !ed_is_dir(dir))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no such directory", dir ? dir : "(null)");
    encdec_status st;
    bpe_tok *t = NULL;
    if (ed_is_file(ed_path_join(path, sizeof path, dir, "tokenizer.json"))) {
        char *text;
        size_t len;
        if (ed_read_file(path, &text, &len)) return tokenizer_error();
        st = bpe_load_json(out, text, len, path);
        free(text);
        return st;
    }
    char merges[PATH_CAP];
    int hf = ed_is_file(ed_path_join(path, sizeof path, dir, "vocab.json")) &&
             ed_is_file(ed_path_join(merges, sizeof merges, dir, "merges.txt"));
    int ct2 = ed_is_file(ed_path_join(path, sizeof path, dir, "vocabulary.txt")) ||
              ed_is_file(ed_path_join(path, sizeof path, dir, "vocabulary.json"));
    if (!hf && !ct2)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no tokenizer.json, vocab.json + merges.txt, "
                       "or vocabulary.txt / vocabulary.json", dir);
    if (!(t = bpe_alloc())) return ENCDEC_ERR_NOMEM;
    st = hf ? load_vocab_merges(t, dir) : load_ct2(t, dir);
    if (st) {
        bpe_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}
