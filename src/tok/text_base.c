/* text_base.c - what the text tokenizer kinds share beneath them: an
 * ed_ttok's release, and the vocab.json table of the mapped kinds (Marian's
 * and text_sp.c's), each spelling's id and its text (U+2581 read as a space).
 * It calls no other text_*.c (text_internal.h has the layers).
 */
#include "tok/text_internal.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SPACE_MARK "\xe2\x96\x81"   /* U+2581 */

size_t ttok_unmark(char *dst, const char *s) {
    size_t k = 0;
    for (size_t i = 0; s[i];) {
        if (!strncmp(s + i, SPACE_MARK, 3)) {
            dst[k++] = ' ';
            i += 3;
        } else {
            dst[k++] = s[i++];
        }
    }
    return k;
}

encdec_status ttok_put_text(tok_vocab *v, int id, const char *s, const char *file) {
    char *t = malloc(strlen(s) + 1);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    size_t k = ttok_unmark(t, s);
    int added;
    encdec_status st = tv_put(v, id, t, k, file, &added);
    free(t);
    return st;
}

encdec_status ttok_pieces_put(ttok_pieces *p, const char *s, size_t len) {
    if (p->count == p->cap_at) {
        int cap = p->cap_at ? 2 * p->cap_at : 64;
        size_t *a = realloc(p->at, sizeof *a * (size_t)cap);
        if (!a) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: source tokens");
        p->at = a;
        p->cap_at = cap;
    }
    if (p->n + len + 1 > p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 1024;
        while (cap < p->n + len + 1) cap *= 2;
        char *b = realloc(p->buf, cap);
        if (!b) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: source tokens");
        p->buf = b;
        p->cap = cap;
    }
    p->at[p->count++] = p->n;
    if (len) memcpy(p->buf + p->n, s, len);
    p->buf[p->n + len] = 0;
    p->n += len + 1;
    return ENCDEC_OK;
}

encdec_status ttok_pieces_take(ttok_pieces *p, char ***out) {
    size_t k = p->count ? (size_t)p->count : 1;
    char **o = malloc(k * sizeof *o + p->n + 1);
    if (!o) {
        ttok_pieces_free(p);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: source tokens");
    }
    char *b = (char *)(o + k);
    if (p->n) memcpy(b, p->buf, p->n);
    for (int i = 0; i < p->count; i++) o[i] = b + p->at[i];
    ttok_pieces_free(p);
    *out = o;
    return ENCDEC_OK;
}

void ttok_pieces_free(ttok_pieces *p) {
    free(p->buf);
    free(p->at);
    memset(p, 0, sizeof *p);
}

encdec_status ttok_read_vocab_json(ed_ttok *t, const char *path) {
    cJSON *c;
    encdec_status st = ed_json_load(path, &c);
    if (st) return st;
    const cJSON *e;
    int added;
    cJSON_ArrayForEach(e, c) {
        /* the range first: a cast of 1e300 to int is undefined (the fuzzer's find) */
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble < TV_MAX_ID) ||
            e->valuedouble != floor(e->valuedouble)) {
            st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: the id of \"%.40s\" is not an integer in "
                         "[0, %d)", ed_basename(path), e->string, TV_MAX_ID);
            break;
        }
        st = tv_put(&t->vocab, e->valueint, e->string, strlen(e->string), path, &added);
        if (!st) st = ttok_put_text(&t->text, e->valueint, e->string, path);
        if (st) break;
    }
    cJSON_Delete(c);
    if (!st) st = tv_check(&t->vocab, path);
    if (st) return st;
    t->eos = tv_lookup(&t->vocab, "</s>", 4);
    t->unk = tv_lookup(&t->vocab, "<unk>", 5);
    t->pad = tv_lookup(&t->vocab, "<pad>", 5);
    if (t->eos < 0 || t->unk < 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no \"</s>\" or \"<unk>\"", ed_basename(path));
    return ENCDEC_OK;
}

void ttok_free(ed_ttok *t) {
    if (!t) return;
    bpe_free(t->bpe);
    spm_free(t->src);
    spm_free(t->tgt);
    tv_free(&t->vocab);
    tv_free(&t->srcv);
    tv_free(&t->text);
    free(t->special);
    free(t->added);
    for (int i = 0; i < t->n_langs; i++) free(t->lang_code[i]);
    free(t->lang_code);
    free(t->lang_id);
    free(t->pair[0]);
    free(t->pair[1]);
    nmt_bpe_free(t->nmt);
    moses_tok_free(t->mtok);
    moses_data_free(t->moses);
    free(t);
}
