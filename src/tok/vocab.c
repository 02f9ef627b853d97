/* vocab.c - the id <-> spelling table of vocab.h: a spelling buffer that
 * doubles from 64 KiB, id arrays that double from 1024 ids, and a linear-
 * probing FNV-1a hash kept at most half full.
 */
#include "tok/vocab.h"
#include "base/err.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int tv_merge_sides(const cJSON *m, const char **a, size_t *na, const char **b, size_t *nb) {
    if (cJSON_IsString(m)) {
        const char *s = m->valuestring, *sp = strchr(s, ' ');
        if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' ')) return 0;   /* two parts, as tokenizers splits */
        *a = s, *na = (size_t)(sp - s), *b = sp + 1, *nb = strlen(sp + 1);
        return 1;
    }
    const cJSON *x = cJSON_GetArrayItem(m, 0), *y = cJSON_GetArrayItem(m, 1);
    if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) != 2 || !cJSON_IsString(x) || !cJSON_IsString(y)) return 0;
    *a = x->valuestring, *na = strlen(x->valuestring), *b = y->valuestring, *nb = strlen(y->valuestring);
    return 1;
}

static uint64_t hash_str(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;        /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

int tv_lookup(const tok_vocab *v, const char *s, size_t n) {
    if (!v->hash_cap) return -1;
    size_t mask = v->hash_cap - 1;
    for (size_t i = hash_str(s, n) & mask;; i = (i + 1) & mask) {
        int32_t id = v->hash[i];
        if (id < 0) return -1;
        if (v->len[id] == n && memcmp(v->spell + v->off[id], s, n) == 0) return id;
    }
}

static void hash_insert(tok_vocab *v, int id) {
    size_t mask = v->hash_cap - 1;
    size_t i = hash_str(v->spell + v->off[id], v->len[id]) & mask;
    while (v->hash[i] >= 0) i = (i + 1) & mask;
    v->hash[i] = id;
}

/* A new hash of cap slots (a power of two) holding each spelling's lowest id. */
static int rehash(tok_vocab *v, size_t cap) {
    int32_t *h = malloc(cap * sizeof *h);
    if (!h) return 0;
    for (size_t i = 0; i < cap; i++) h[i] = -1;
    free(v->hash);
    v->hash = h;
    v->hash_cap = cap;
    for (int id = 0; id < v->n; id++)
        if (v->off[id] != TV_HOLE && tv_lookup(v, v->spell + v->off[id], v->len[id]) < 0) hash_insert(v, id);
    return 1;
}

int tv_reindex(tok_vocab *v) {
    return rehash(v, v->hash_cap ? v->hash_cap : 1024);
}

static int grow_ids(tok_vocab *v, int need) {
    int cap = v->cap ? v->cap : 1024;
    while (cap < need) cap *= 2;
    uint32_t *off = realloc(v->off, (size_t)cap * sizeof *off);
    if (!off) return 0;
    v->off = off;
    uint32_t *len = realloc(v->len, (size_t)cap * sizeof *len);
    if (!len) return 0;
    v->len = len;
    for (int i = v->cap; i < cap; i++) { off[i] = TV_HOLE; len[i] = 0; }
    v->cap = cap;
    return 1;
}

encdec_status tv_put(tok_vocab *v, int id, const char *s, size_t n, const char *file, int *added) {
    *added = 0;
    if (id < 0 || id >= TV_MAX_ID) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: token id %d is out of range", file, id);
    const char *old = tv_spelling(v, id);
    if (old) {
        if (v->len[id] != n || memcmp(old, s, n) != 0)
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: id %d is given to both \"%s\" and \"%.*s\"",
                           file, id, old, (int)(n < 64 ? n : 64), s);
        return ENCDEC_OK;
    }
    if (id >= v->cap && !grow_ids(v, id + 1)) goto nomem;
    if (v->spell_used + n + 1 > v->spell_cap) {
        size_t cap = v->spell_cap ? v->spell_cap : 1 << 16;
        while (cap < v->spell_used + n + 1) cap *= 2;
        if (cap > TV_HOLE) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: vocabulary too large", file);
        char *p = realloc(v->spell, cap);
        if (!p) goto nomem;
        v->spell = p;
        v->spell_cap = cap;
    }
    v->off[id] = (uint32_t)v->spell_used;
    v->len[id] = (uint32_t)n;
    memcpy(v->spell + v->spell_used, s, n);
    v->spell[v->spell_used + n] = 0;
    v->spell_used += n + 1;
    if (id >= v->n) v->n = id + 1;
    if (2 * (v->n_hashed + 1) > v->hash_cap && !rehash(v, v->hash_cap ? v->hash_cap * 2 : 1024)) goto nomem;
    if (tv_lookup(v, s, n) < 0) hash_insert(v, id);     /* the first id keeps a spelling */
    v->n_hashed++;
    *added = 1;
    return ENCDEC_OK;
nomem:
    return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for the vocabulary", file);
}

encdec_status tv_check(const tok_vocab *v, const char *file) {
    if (v->n == 0) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: the vocabulary is empty", file);
    for (int id = 0; id < v->n; id++)
        if (v->off[id] == TV_HOLE)
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no token has id %d (ids must be 0..%d without holes)",
                           file, id, v->n - 1);
    return ENCDEC_OK;
}

void tv_free(tok_vocab *v) {
    if (!v) return;
    free(v->off);
    free(v->len);
    free(v->spell);
    free(v->hash);
    memset(v, 0, sizeof *v);
}
