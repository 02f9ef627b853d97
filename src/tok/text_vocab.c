/* text_vocab.c - a CTranslate2 directory's vocabulary alone
 * (shared_vocabulary.json or .txt; or source_vocabulary for the inputs'
 * ids and target_vocabulary for the outputs') as a tokenizer (text.h): token
 * spellings <-> ids for token-level generation (CTranslate2's
 * translate_batch, encdec_engine_generate_ids) and for decoding (pieces
 * joined, U+2581 a space, specials skipped, ends stripped). Encoding text
 * needs the model's own tokenizer files: an error naming them. */
#include "tok/text_internal.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dir's <which>_vocabulary.json, else .txt, into p: 1 when there (*json:
 * the JSON one). */
static int vocab_path(const char *dir, const char *which, char *p, size_t cap, int *json) {
    char name[64];
    snprintf(name, sizeof name, "%s_vocabulary.json", which);
    if ((*json = ed_is_file(ed_path_join(p, cap, dir, name)))) return 1;
    snprintf(name, sizeof name, "%s_vocabulary.txt", which);
    return ed_is_file(ed_path_join(p, cap, dir, name));
}

int ttok_is_vocab_dir(const char *dir) {
    char p[4200];
    int json;
    return vocab_path(dir, "shared", p, sizeof p, &json) ||
           (vocab_path(dir, "source", p, sizeof p, &json) && vocab_path(dir, "target", p, sizeof p, &json));
}

/* Token i spelled s (n bytes) into the tables; special when <...> is one of
 * the usual control tokens. src: into the source vocabulary alone. */
static encdec_status put(ed_ttok *t, int i, const char *s, size_t n, const char *file, int src) {
    int added;
    char *z = strndup(s, n);
    if (!z) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: vocabulary");
    encdec_status st = tv_put(src ? &t->srcv : &t->vocab, i, z, n, file, &added);
    if (!st && !src) st = ttok_put_text(&t->text, i, z, file);
    static const char *const sp[] = {"<s>", "</s>", "<pad>", "<unk>", "<mask>", "<blank>"};   /* <blank>: OpenNMT's pad */
    for (size_t k = 0; k < sizeof sp / sizeof *sp && !st && !src; k++)
        if (!strcmp(z, sp[k])) t->special[i] = 1;
    free(z);
    return st;
}

/* The tokens of the file p (a JSON list, or a token a line) into t's
 * target tables, or with src its source vocabulary. */
static encdec_status read_tokens(ed_ttok *t, const char *p, int json, int src) {
    char *text = NULL;
    size_t len = 0;
    encdec_status st = ed_read_file(p, &text, &len);
    if (st) return st;
    cJSON *arr = json ? cJSON_ParseWithLength(text, len) : NULL;
    size_t n = json ? (size_t)cJSON_GetArraySize(arr) : 0;
    if (!json)
        for (size_t i = 0; i < len; i++) n += text[i] == '\n';
    if (json && !cJSON_IsArray(arr)) st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: not a list of tokens", p);
    else if (!src && !(t->special = calloc(n + 1, 1))) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    int i = 0;
    if (!st && json) {
        const cJSON *e;
        cJSON_ArrayForEach(e, arr) {
            if (!cJSON_IsString(e)) {
                st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: entry %d is not a string", p, i);
                break;
            }
            if ((st = put(t, i++, e->valuestring, strlen(e->valuestring), p, src))) break;
        }
    } else if (!st) {
        for (char *line = text, *end; line < text + len && !st; line = end + 1) {
            end = memchr(line, '\n', (size_t)(text + len - line));
            if (!end) end = text + len;
            st = put(t, i++, line, (size_t)(end - line), p, src);
        }
    }
    cJSON_Delete(arr);
    free(text);
    return st ? st : tv_check(src ? &t->srcv : &t->vocab, p);
}

encdec_status ttok_load_vocab(ed_ttok **out, const char *dir) {
    *out = NULL;
    char p[4200], q[4200];
    int json = 0, sjson = 0;
    ed_ttok *t = calloc(1, sizeof *t);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    t->kind = TTOK_VOCAB;
    t->src_lang = -1;
    encdec_status st = ENCDEC_OK;
    if (!vocab_path(dir, "shared", p, sizeof p, &json)) {   /* separate: CTranslate2 writes both */
        if (!vocab_path(dir, "target", p, sizeof p, &json) || !vocab_path(dir, "source", q, sizeof q, &sjson))
            st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no shared_vocabulary, nor source_ and target_vocabulary "
                         "(.json or .txt)", dir);
        else if (!(st = read_tokens(t, q, sjson, 1)))
            t->sep_src = 1;
    }
    if (!st) st = read_tokens(t, p, json, 0);
    if (!st) {
        t->eos = tv_lookup(&t->vocab, "</s>", 4);
        t->unk = tv_lookup(&t->vocab, "<unk>", 5);
        t->pad = tv_lookup(&t->vocab, "<pad>", 5);
        if (t->pad < 0) t->pad = tv_lookup(&t->vocab, "<blank>", 7);
        t->bos = tv_lookup(&t->vocab, "<s>", 3);
        if (t->eos < 0) st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no </s> token", p);
    }
    if (st) {
        ttok_free(t);
        return st;
    }
    *out = t;
    return ENCDEC_OK;
}
