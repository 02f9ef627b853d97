/* spm_json.c - reads a Hugging Face tokenizer.json of a SentencePiece model
 * into a SPM_FAST spm_tok: Unigram, as T5 / mT5 / umT5 / Pegasus files have
 * it, or BPE, as NLLB's and mBART's fast tokenizers convert theirs. Supported:
 *
 *   model          {"type": "Unigram", "vocab": [[piece, score], ...], "unk_id", "byte_fallback"}
 *                  {"type": "BPE", "vocab": {piece: id}, "merges": ["a b" or ["a", "b"], ...],
 *                   "unk_token", "fuse_unk", "byte_fallback"} (no dropout, no subword
 *                   prefix or suffix, ignore_merges false)
 *   added_tokens   [{"id", "content", "special", "lstrip", "rstrip", "normalized"}]
 *   normalizer     Precompiled (base64 charsmap), Strip, Replace (a String pattern,
 *                  or the Regex " {2,}"), a Sequence of these, or null
 *   pre_tokenizer  Metaspace (prepend_scheme always/first/never, or the older
 *                  add_prefix_space; split), WhitespaceSplit, a Sequence, or null
 *   decoder        Metaspace, ByteFallback, Fuse, Replace (String), Strip, a Sequence, or null
 *
 * Anything else is refused with ENCDEC_ERR_TOKENIZER naming the step. The
 * post_processor is not read: spm_encode's add_eos appends </s>, as T5's
 * TemplateProcessing does.
 */
#include "tok/spm_internal.h"
#include "base/err.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static const char *type_of(const cJSON *o) {
    const cJSON *ty = get(o, "type");
    return cJSON_IsString(ty) ? ty->valuestring : "(no type)";
}

static int flag(const cJSON *o, const char *key, int dflt) {
    const cJSON *v = get(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static int json_int(const cJSON *v, long lo, long hi, int *out) {
    if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
        v->valuedouble != (double)(long)v->valuedouble)
        return 0;
    *out = (int)v->valuedouble;
    return 1;
}

static char *dup_string(const cJSON *v) {
    return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

/* ---- base64 -------------------------------------------------------------------- */

static int b64_value(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes standard base64 (padding optional) into a malloc'd *out; 0 if malformed. */
static int b64_decode(const char *s, uint8_t **out, size_t *n) {
    size_t len = strlen(s);
    while (len && s[len - 1] == '=') len--;
    uint8_t *p = malloc(len / 4 * 3 + 3);
    if (!p) return 0;
    size_t k = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value((uint8_t)s[i]);
        if (v < 0) {
            free(p);
            return 0;
        }
        acc = acc << 6 | (uint32_t)v;
        if (i % 4 == 3) {
            p[k++] = (uint8_t)(acc >> 16);
            p[k++] = (uint8_t)(acc >> 8);
            p[k++] = (uint8_t)acc;
        }
    }
    if (len % 4 == 1) {
        free(p);
        return 0;
    }
    if (len % 4 == 2) p[k++] = (uint8_t)(acc >> 4);
    if (len % 4 == 3) {
        p[k++] = (uint8_t)(acc >> 10);
        p[k++] = (uint8_t)(acc >> 2);
    }
    *out = p;
    *n = k;
    return 1;
}

/* ---- pipeline steps ------------------------------------------------------------- */

static encdec_status oom(const char *file) { return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory", file); }

static encdec_status add_norm(spm_tok *t, spm_norm_step step, const char *file) {
    spm_norm_step *p = realloc(t->norm, ((size_t)t->n_norm + 1) * sizeof *p);
    if (!p) return oom(file);
    t->norm = p;
    t->norm[t->n_norm++] = step;
    return ENCDEC_OK;
}

static encdec_status read_normalizer(spm_tok *t, const cJSON *n, const char *file) {
    if (!n || cJSON_IsNull(n)) return ENCDEC_OK;
    const char *ty = type_of(n);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *e, *list = get(n, "normalizers");
        if (!cJSON_IsArray(list)) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: normalizer Sequence has no list", file);
        cJSON_ArrayForEach(e, list) {
            encdec_status st = read_normalizer(t, e, file);
            if (st) return st;
        }
        return ENCDEC_OK;
    }
    if (strcmp(ty, "Precompiled") == 0) {
        const cJSON *m = get(n, "precompiled_charsmap");
        if (cJSON_IsNull(m) || (cJSON_IsString(m) && !m->valuestring[0])) return ENCDEC_OK;   /* identity */
        uint8_t *blob;
        size_t len;
        if (!cJSON_IsString(m) || !b64_decode(m->valuestring, &blob, &len))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: Precompiled normalizer: precompiled_charsmap is not base64",
                           file);
        if (t->cmap.n_units || t->cmap.norm) {
            free(blob);
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: more than one Precompiled normalizer", file);
        }
        encdec_status st = spm_charsmap_init(&t->cmap, blob, len, file);
        free(blob);
        return st ? st : add_norm(t, (spm_norm_step){.kind = SPM_N_PRECOMPILED}, file);
    }
    if (strcmp(ty, "Strip") == 0)
        return add_norm(t, (spm_norm_step){.kind = SPM_N_STRIP, .left = flag(n, "strip_left", 1),
                                           .right = flag(n, "strip_right", 1)}, file);
    if (strcmp(ty, "Replace") == 0) {
        const cJSON *pat = get(n, "pattern"), *content = get(n, "content");
        const cJSON *str = get(pat, "String"), *re = get(pat, "Regex");
        spm_norm_step step = {.kind = SPM_N_REPLACE};
        if (cJSON_IsString(re) && strcmp(re->valuestring, " {2,}") == 0) step.kind = SPM_N_REPLACE_SPACES;
        else if (!cJSON_IsString(str) || !str->valuestring[0])
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: Replace normalizer: only a String pattern or the Regex \" {2,}\" "
                           "is supported", file);
        if (!cJSON_IsString(content))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: Replace normalizer without content", file);
        step.pattern = step.kind == SPM_N_REPLACE ? strdup(str->valuestring) : NULL;
        step.content = strdup(content->valuestring);
        if (!step.content || (step.kind == SPM_N_REPLACE && !step.pattern)) {
            free(step.pattern);
            free(step.content);
            return oom(file);
        }
        encdec_status st = add_norm(t, step, file);
        if (st) {
            free(step.pattern);
            free(step.content);
        }
        return st;
    }
    return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: normalizer %s is not supported (Precompiled, Strip, Replace, Sequence)",
                   file, ty);
}

/* The replacement character of a Metaspace step, UTF-8, into out[8]. */
static encdec_status metaspace_char(const cJSON *m, char *out, const char *file) {
    const cJSON *r = get(m, "replacement");
    const char *s = cJSON_IsString(r) ? r->valuestring : "\xe2\x96\x81";
    uint32_t cp;
    size_t n = strlen(s);
    if (n == 0 || n >= 8 || spm_utf8_next((const uint8_t *)s, n, &cp) != (int)n)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: Metaspace replacement must be one character", file);
    memcpy(out, s, n + 1);
    return ENCDEC_OK;
}

static encdec_status prepend_scheme(const cJSON *m, int *out, const char *file) {
    const cJSON *ps = get(m, "prepend_scheme");
    if (cJSON_IsString(ps)) {
        if (strcmp(ps->valuestring, "always") == 0) *out = SPM_PREPEND_ALWAYS;
        else if (strcmp(ps->valuestring, "first") == 0) *out = SPM_PREPEND_FIRST;
        else if (strcmp(ps->valuestring, "never") == 0) *out = SPM_PREPEND_NEVER;
        else return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: Metaspace prepend_scheme \"%s\" is unknown", file,
                            ps->valuestring);
        return ENCDEC_OK;
    }
    *out = flag(m, "add_prefix_space", 1) ? SPM_PREPEND_ALWAYS : SPM_PREPEND_NEVER;
    return ENCDEC_OK;
}

static encdec_status read_pretokenizer(spm_tok *t, const cJSON *p, const char *file) {
    if (!p || cJSON_IsNull(p)) return ENCDEC_OK;
    const char *ty = type_of(p);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *e, *list = get(p, "pretokenizers");
        if (!cJSON_IsArray(list))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: pre_tokenizer Sequence has no list", file);
        cJSON_ArrayForEach(e, list) {
            encdec_status st = read_pretokenizer(t, e, file);
            if (st) return st;
        }
        return ENCDEC_OK;
    }
    if (strcmp(ty, "WhitespaceSplit") == 0 && !t->metaspace && !t->ws_split) {
        t->ws_split = 1;
        return ENCDEC_OK;
    }
    if (strcmp(ty, "Metaspace") == 0 && !t->metaspace) {
        t->metaspace = 1;
        t->ms_split = flag(p, "split", 1);
        encdec_status st = metaspace_char(p, t->ms_repl, file);
        return st ? st : prepend_scheme(p, &t->ms_prepend, file);
    }
    return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: pre_tokenizer %s is not supported here (WhitespaceSplit then "
                   "Metaspace, each at most once)", file, ty);
}

static encdec_status add_dec(spm_tok *t, spm_dec_step step, const char *file) {
    spm_dec_step *p = realloc(t->dec, ((size_t)t->n_dec + 1) * sizeof *p);
    if (!p) {
        free(step.pattern);
        free(step.content);
        return oom(file);
    }
    t->dec = p;
    t->dec[t->n_dec++] = step;
    return ENCDEC_OK;
}

static encdec_status read_decoder(spm_tok *t, const cJSON *d, const char *file) {
    if (!d || cJSON_IsNull(d)) return ENCDEC_OK;
    t->has_decoder = 1;
    const char *ty = type_of(d);
    encdec_status st;
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *e, *list = get(d, "decoders");
        if (!cJSON_IsArray(list)) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: decoder Sequence has no list", file);
        cJSON_ArrayForEach(e, list) {
            if ((st = read_decoder(t, e, file))) return st;
        }
        return ENCDEC_OK;
    }
    if (strcmp(ty, "Metaspace") == 0) {
        char r[8];
        int scheme;
        if ((st = metaspace_char(d, r, file)) || (st = prepend_scheme(d, &scheme, file))) return st;
        spm_dec_step step = {.kind = SPM_D_METASPACE, .prepend = scheme != SPM_PREPEND_NEVER, .pattern = strdup(r)};
        return step.pattern ? add_dec(t, step, file) : oom(file);
    }
    if (strcmp(ty, "ByteFallback") == 0) {
        t->decode_bytes = 1;
        return add_dec(t, (spm_dec_step){.kind = SPM_D_BYTEFALLBACK}, file);
    }
    if (strcmp(ty, "Fuse") == 0) return add_dec(t, (spm_dec_step){.kind = SPM_D_FUSE}, file);
    if (strcmp(ty, "Replace") == 0) {
        const cJSON *str = get(get(d, "pattern"), "String");
        spm_dec_step step = {.kind = SPM_D_REPLACE, .pattern = dup_string(str),
                             .content = dup_string(get(d, "content"))};
        if (!step.pattern || !step.content || !step.pattern[0]) {
            free(step.pattern);
            free(step.content);
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: Replace decoder needs a String pattern and a content", file);
        }
        return add_dec(t, step, file);
    }
    if (strcmp(ty, "Strip") == 0) {
        const cJSON *c = get(d, "content");
        spm_dec_step step = {.kind = SPM_D_STRIP};
        uint32_t cp;
        int k = cJSON_IsString(c) && c->valuestring[0]
                    ? spm_utf8_next((const uint8_t *)c->valuestring, strlen(c->valuestring), &cp) : 0;
        if (k <= 0 || c->valuestring[k] || !json_int(get(d, "start"), 0, INT_MAX, &step.start) ||
            !json_int(get(d, "stop"), 0, INT_MAX, &step.stop))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: Strip decoder needs one content character, start and stop",
                           file);
        step.strip_cp = cp;
        return add_dec(t, step, file);
    }
    return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: decoder %s is not supported (Metaspace, ByteFallback, Fuse, "
                   "Replace, Strip, Sequence)", file, ty);
}

/* ---- vocabulary ----------------------------------------------------------------- */

/* A BPE option this reader does not implement: refused unless at its
 * neutral value (null, false, 0 or ""). */
static int neutral(const cJSON *v) {
    return !v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsNumber(v) && v->valuedouble == 0) ||
           (cJSON_IsString(v) && !v->valuestring[0]);
}

static encdec_status read_bpe_vocab(spm_tok *t, const cJSON *model, int *n_model, const char *file) {
    static const char *const unsupported[] = {"dropout", "continuing_subword_prefix", "end_of_word_suffix",
                                              "ignore_merges"};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (!neutral(get(model, unsupported[i])))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: BPE model with %s is not supported", file, unsupported[i]);
    const cJSON *vocab = get(model, "vocab"), *unk = get(model, "unk_token"), *e;
    if (!cJSON_IsObject(vocab) || !vocab->child)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.vocab is not a non-empty object", file);
    if (!cJSON_IsString(unk))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: BPE model without an unk_token", file);
    int top = -1;
    cJSON_ArrayForEach(e, vocab) {
        int id;
        if (!e->string || !e->string[0] || !json_int(e, 0, SPM_MAX_ID - 1, &id))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.vocab[\"%.40s\"] is not an id", file,
                           e->string ? e->string : "");
        int is_unk = !strcmp(e->string, unk->valuestring);
        encdec_status st = spm_put(t, id, e->string, strlen(e->string), 0, is_unk ? SPM_UNKNOWN : SPM_NORMAL, file);
        if (st) return st;
        if (is_unk) t->unk = id;
        if (id > top) top = id;
    }
    if (t->unk < 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: unk_token \"%.40s\" is not in model.vocab", file,
                       unk->valuestring);
    t->bpe = 1;
    t->fuse_unk = flag(model, "fuse_unk", 0);
    t->byte_fallback = flag(model, "byte_fallback", 0);
    t->decode_bytes |= t->byte_fallback;
    *n_model = top + 1;
    return ENCDEC_OK;
}

/* model.merges, once the vocabulary is in place: each pair of pieces and
 * the piece they make must be in it (as tokenizers requires). */
static encdec_status read_merges(spm_tok *t, const cJSON *merges, const char *file) {
    if (!cJSON_IsArray(merges)) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.merges is not an array", file);
    int n = cJSON_GetArraySize(merges), rank = 0;
    if (n >= 1 << 24) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.merges has too many entries", file);
    encdec_status st = spm_merges_init(t, (size_t)n, file);
    const cJSON *m;
    char joined[1024];
    cJSON_ArrayForEach(m, merges) {
        if (st) break;
        const char *a, *b;
        size_t la, lb;
        if (!tv_merge_sides(m, &a, &la, &b, &lb))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", file, rank);
        int l = spm_lookup(t, a, la), r = spm_lookup(t, b, lb), made = -1;
        if (la + lb < sizeof joined) {
            memcpy(joined, a, la);
            memcpy(joined + la, b, lb);
            made = spm_lookup(t, joined, la + lb);
        }
        if (l < 0 || r < 0 || made < 0)
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: merge %d (\"%.*s\" \"%.*s\") has a piece that is not "
                           "in model.vocab", file, rank, (int)(la < 40 ? la : 40), a,
                           (int)(lb < 40 ? lb : 40), b);
        spm_merge_put(t, l, r, rank++);
    }
    return st;
}

static encdec_status read_model(spm_tok *t, const cJSON *model, int *n_model, const char *file) {
    if (!cJSON_IsObject(model)) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no \"model\" object", file);
    const char *ty = type_of(model);
    if (strcmp(ty, "BPE") == 0) return read_bpe_vocab(t, model, n_model, file);
    if (strcmp(ty, "Unigram") != 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model type is %s; only Unigram and BPE models are supported",
                       file, ty);
    const cJSON *vocab = get(model, "vocab"), *e;
    if (!cJSON_IsArray(vocab) || cJSON_GetArraySize(vocab) == 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.vocab is not a non-empty array", file);
    int n = cJSON_GetArraySize(vocab), id = 0;
    if (n >= SPM_MAX_ID) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.vocab has too many entries", file);
    if (!json_int(get(model, "unk_id"), 0, n - 1, &t->unk))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.unk_id is missing or out of range", file);
    t->byte_fallback = flag(model, "byte_fallback", 0);
    t->decode_bytes |= t->byte_fallback;
    cJSON_ArrayForEach(e, vocab) {
        const cJSON *piece = cJSON_GetArrayItem(e, 0), *score = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || !cJSON_IsString(piece) || !cJSON_IsNumber(score) || !piece->valuestring[0])
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model.vocab[%d] is not [\"piece\", score]", file, id);
        encdec_status st = spm_put(t, id, piece->valuestring, strlen(piece->valuestring), score->valuedouble,
                                   id == t->unk ? SPM_UNKNOWN : SPM_NORMAL, file);
        if (st) return st;
        id++;
    }
    *n_model = n;
    return ENCDEC_OK;
}

static encdec_status read_added(spm_tok *t, const cJSON *added, int n_model, const char *file) {
    const cJSON *a;
    if (added && !cJSON_IsArray(added) && !cJSON_IsNull(added))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: added_tokens is not an array", file);
    cJSON_ArrayForEach(a, added) {
        const cJSON *content = get(a, "content");
        int id;
        if (!cJSON_IsString(content) || !content->valuestring[0] || !json_int(get(a, "id"), 0, SPM_MAX_ID - 1, &id))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: an added token lacks a content string or an id", file);
        if (flag(a, "single_word", 0))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: added token \"%s\": single_word is not supported", file,
                           content->valuestring);
        encdec_status st = spm_put(t, id, content->valuestring, strlen(content->valuestring), 0,
                                   id < n_model ? t->type[id] : SPM_ADDED, file);
        if (st) return st;
        t->special[id] = (uint8_t)flag(a, "special", 0);
        /* as tokenizers' AddedToken: normalized defaults to !special */
        int special = t->special[id];
        st = spm_add_special(t, id, flag(a, "lstrip", 0), flag(a, "rstrip", 0), flag(a, "normalized", !special), file);
        if (st) return st;
    }
    return ENCDEC_OK;
}

encdec_status spm_load_json_doc(spm_tok *t, const char *text, size_t len, const char *file) {
    cJSON *doc = cJSON_ParseWithLength(text, len);
    if (!doc) {
        const char *at = cJSON_GetErrorPtr();
        if (at && at >= text && at <= text + len)
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: malformed JSON near byte %zu", file, (size_t)(at - text));
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: malformed JSON", file);
    }
    int n_model = 0;
    encdec_status st = read_model(t, get(doc, "model"), &n_model, file);
    if (!st) st = read_added(t, get(doc, "added_tokens"), n_model, file);
    if (!st) st = read_normalizer(t, get(doc, "normalizer"), file);
    if (!st) st = read_pretokenizer(t, get(doc, "pre_tokenizer"), file);
    if (!st) st = read_decoder(t, get(doc, "decoder"), file);
    if (!st) st = spm_finish(t, file);
    if (!st && t->bpe) st = read_merges(t, get(get(doc, "model"), "merges"), file);
    cJSON_Delete(doc);
    if (st) return st;
    t->eos = spm_lookup(t, "</s>", 4);
    t->pad = spm_lookup(t, "<pad>", 5);
    return ENCDEC_OK;
}
