/* spm_table.c - the piece table a loader fills: spellings in a tok_vocab of
 * vocab.c, scores and types here, the merges of a BPE model, special
 * spellings, the byte trie the Viterbi search walks, the token texts; and
 * the growing buffers every spm_*.c writes into. The bottom of src/tok/'s
 * SentencePiece layers: it calls none of them (spm_internal.h has the map).
 */
#include "tok/spm_internal.h"
#include "base/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffers --------------------------------------------------------------- */

encdec_status spm_buf_put(spm_buf *b, const void *p, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer text (%zu bytes)", cap);
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
    return ENCDEC_OK;
}

encdec_status spm_ids_put(spm_ids *v, int id) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int *q = realloc(v->p, cap * sizeof *q);
        if (!q) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: token ids (%zu)", cap);
        v->p = q;
        if (v->text) {
            size_t *a = realloc(v->text_at, cap * sizeof *a);
            if (!a) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: token ids (%zu)", cap);
            v->text_at = a;
        }
        v->cap = cap;
    }
    if (v->text) v->text_at[v->n] = SPM_NO_TEXT;
    v->p[v->n++] = id;
    return ENCDEC_OK;
}

encdec_status spm_ids_put_text(spm_ids *v, int id, const char *s, size_t n) {
    encdec_status st = spm_ids_put(v, id);
    if (st || !v->text) return st;
    size_t at = v->text->n;
    st = spm_buf_put(v->text, s, n);
    if (!st) st = spm_buf_put(v->text, "", 1);   /* each text NUL-terminated */
    if (!st) v->text_at[v->n - 1] = at;
    return st;
}

encdec_status spm_ids_grow_text(spm_ids *v, const char *s, size_t n) {
    if (!v->text || !v->n || v->text_at[v->n - 1] == SPM_NO_TEXT) return ENCDEC_OK;
    v->text->n--;   /* the last text is the buffer's end: its NUL dropped, then put back */
    encdec_status st = spm_buf_put(v->text, s, n);
    return st ? st : spm_buf_put(v->text, "", 1);
}

/* ---- the piece table --------------------------------------------------------- */

int spm_lookup(const spm_tok *t, const char *s, size_t n) { return tv_lookup(&t->voc, s, n); }

/* ---- the merge table of a tokenizer.json BPE model ---------------------------- */

static size_t merge_slot(const spm_tok *t, uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t mask = t->merge_cap - 1, i = (size_t)(h >> 20) & mask;
    while (t->merge_key[i] && t->merge_key[i] != key) i = (i + 1) & mask;
    return i;
}

static uint64_t merge_key(int left, int right) {
    return (uint64_t)(uint32_t)(left + 1) << 32 | (uint32_t)(right + 1);
}

encdec_status spm_merges_init(spm_tok *t, size_t n, const char *file) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;   /* at most half full */
    t->merge_key = calloc(cap, sizeof *t->merge_key);
    t->merge_rank = malloc(cap * sizeof *t->merge_rank);
    if (!t->merge_key || !t->merge_rank) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory (merges)", file);
    t->merge_cap = cap;
    return ENCDEC_OK;
}

void spm_merge_put(spm_tok *t, int left, int right, int rank) {
    uint64_t key = merge_key(left, right);
    size_t i = merge_slot(t, key);
    if (!t->merge_key[i]) t->n_merges++;
    t->merge_key[i] = key;
    t->merge_rank[i] = rank;
}

int spm_merge_rank(const spm_tok *t, int left, int right) {
    if (left < 0 || right < 0) return -1;
    size_t i = merge_slot(t, merge_key(left, right));
    return t->merge_key[i] ? t->merge_rank[i] : -1;
}

/* Keeps score, type and special as long as the vocabulary's id arrays. */
static int fit_ids(spm_tok *t) {
    size_t c = (size_t)t->voc.cap;
    double *score = realloc(t->score, c * sizeof *score);
    if (score) t->score = score;
    uint8_t *type = realloc(t->type, c);
    if (type) t->type = type;
    uint8_t *sp = realloc(t->special, c);
    if (sp) t->special = sp;
    if (!score || !type || !sp) return 0;
    for (int i = t->id_cap; i < t->voc.cap; i++) {
        score[i] = 0;
        type[i] = 0;
        sp[i] = 0;
    }
    t->id_cap = t->voc.cap;
    return 1;
}

encdec_status spm_put(spm_tok *t, int id, const char *s, size_t n, double score, int type,
                      const char *file) {
    int added;
    encdec_status st = tv_put(&t->voc, id, s, n, file, &added);
    if (st || !added) return st;
    if (t->id_cap < t->voc.cap && !fit_ids(t))
        return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for the vocabulary", file);
    t->score[id] = score;
    t->type[id] = (uint8_t)type;
    return ENCDEC_OK;
}

encdec_status spm_add_special(spm_tok *t, int id, int lstrip, int rstrip, int normalized,
                              const char *file) {
    const char *s = tv_spelling(&t->voc, id);
    if (!s || tv_len(&t->voc, id) == 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: special token id %d has no spelling", file, id);
    if (t->n_specials % 64 == 0) {
        spm_special *p = realloc(t->specials, ((size_t)t->n_specials + 64) * sizeof *p);
        if (!p) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for special tokens", file);
        t->specials = p;
    }
    t->specials[t->n_specials++] = (spm_special){id, (uint8_t)!!lstrip, (uint8_t)!!rstrip, (uint8_t)!!normalized};
    t->special_first[(uint8_t)s[0]] = 1;
    return ENCDEC_OK;
}

/* ---- the lattice trie -------------------------------------------------------- */

static size_t edge_slot(const spm_tok *t, uint64_t key) {
    size_t mask = t->edge_cap - 1, i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & mask;
    while (t->edges[i].key && t->edges[i].key != key) i = (i + 1) & mask;
    return i;
}

uint32_t spm_trie_next(const spm_tok *t, uint32_t node, uint8_t b) {
    const spm_edge *e = &t->edges[edge_slot(t, ((uint64_t)node << 8 | b) + 1)];
    return e->key ? e->child : 0;
}

/* Inserts spelling s as piece id. A spelling given twice keeps its first id in
 * sentencepiece, its last in `tokenizers` (a hash map filled in id order). */
static int trie_insert(spm_tok *t, const uint8_t *s, size_t n, int id) {
    uint32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = ((uint64_t)node << 8 | s[i]) + 1;
        spm_edge *e = &t->edges[edge_slot(t, key)];
        if (!e->key) {
            if (t->n_nodes == t->node_cap) return 0;      /* sized in spm_finish */
            e->key = key;
            e->child = t->n_nodes;
            t->node_id[t->n_nodes++] = -1;
        }
        node = e->child;
    }
    if (t->node_id[node] < 0 || t->style == SPM_FAST) t->node_id[node] = id;
    return 1;
}

/* Which pieces segmentation may use: sentencepiece searches its normal,
 * user-defined and unused pieces (skipping unused ones); `tokenizers` every
 * entry of the model vocabulary, control tokens and byte pieces included. */
static int in_lattice(const spm_tok *t, int type) {
    if (t->style == SPM_FAST) return type == SPM_NORMAL || type == SPM_UNKNOWN;
    return type == SPM_NORMAL || type == SPM_USER_DEFINED || type == SPM_UNUSED;
}

static encdec_status build_trie(spm_tok *t, const char *file) {
    size_t bytes = 0;
    for (int id = 0; id < t->voc.n; id++)
        if (in_lattice(t, t->type[id])) bytes += tv_len(&t->voc, id);
    if (bytes + 1 > UINT32_MAX / 2) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: vocabulary too large", file);
    t->node_cap = (uint32_t)bytes + 1;
    t->edge_cap = 16;
    while (t->edge_cap < 2 * (bytes + 1)) t->edge_cap *= 2;
    t->node_id = malloc((size_t)t->node_cap * sizeof *t->node_id);
    t->edges = calloc(t->edge_cap, sizeof *t->edges);
    if (!t->node_id || !t->edges) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for the piece trie", file);
    t->node_id[0] = -1;
    t->n_nodes = 1;
    for (int id = 0; id < t->voc.n; id++)
        if (in_lattice(t, t->type[id]) &&
            !trie_insert(t, (const uint8_t *)tv_spelling(&t->voc, id), tv_len(&t->voc, id), id))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: piece trie overflow", file);
    return ENCDEC_OK;
}

/* ---- finishing ----------------------------------------------------------------- */

int spm_byte_of_piece(const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    const char *a = memchr(hex, s[3], 16), *b = memchr(hex, s[4], 16);
    if (!a || !b) return -1;
    return (int)((a - hex) * 16 + (b - hex));
}

/* spm_token_text: ▁ -> space, a byte piece -> its byte. */
static encdec_status build_texts(spm_tok *t, const char *file) {
    t->text_off = malloc(((size_t)t->voc.n + 1) * sizeof *t->text_off);
    t->text = malloc(t->voc.spell_used + 1);
    if (!t->text_off || !t->text) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for token texts", file);
    size_t at = 0;
    for (int id = 0; id < t->voc.n; id++) {
        const char *s = tv_spelling(&t->voc, id);
        size_t n = tv_len(&t->voc, id);
        t->text_off[id] = (uint32_t)at;
        int b = spm_byte_of_piece(s, n);
        if (t->decode_bytes && b >= 0 && t->byte_id[b] == id) {
            t->text[at++] = (char)b;
        } else {
            for (size_t i = 0; i < n; i++) {
                if (i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
                    t->text[at++] = ' ';
                    i += 2;
                } else {
                    t->text[at++] = s[i];
                }
            }
        }
        t->text[at++] = 0;
    }
    t->text_off[t->voc.n] = (uint32_t)at;
    return ENCDEC_OK;
}

encdec_status spm_finish(spm_tok *t, const char *file) {
    encdec_status st = tv_check(&t->voc, file);
    if (st) return st;
    /* as sentencepiece's map: the lowest id keeps a spelling */
    if (!tv_reindex(&t->voc)) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for the vocabulary hash", file);
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    for (int id = 0; id < t->voc.n; id++) {
        int b = spm_byte_of_piece(tv_spelling(&t->voc, id), tv_len(&t->voc, id));
        if (b < 0) continue;
        if (t->style == SPM_SLOW && t->type[id] != SPM_BYTE) continue;
        if (t->byte_id[b] < 0) t->byte_id[b] = id;
    }
    t->min_score = 0;
    t->max_score = 0;
    if (t->style == SPM_SLOW) {
        /* sentencepiece: over NORMAL pieces, in float, from FLT_MAX / FLT_MIN */
        float lo = 3.402823466e+38f, hi = 1.175494351e-38f;
        for (int id = 0; id < t->voc.n; id++)
            if (t->type[id] == SPM_NORMAL) {
                float s = (float)t->score[id];
                if (s < lo) lo = s;
                if (s > hi) hi = s;
            }
        t->min_score = lo;
        t->max_score = hi;
    } else {
        /* tokenizers: over the whole model vocabulary, in double */
        double lo = 1.0 / 0.0;
        for (int id = 0; id < t->voc.n; id++)
            if (in_lattice(t, t->type[id]) && t->score[id] < lo) lo = t->score[id];
        t->min_score = lo;
    }
    st = build_trie(t, file);
    return st ? st : build_texts(t, file);
}
