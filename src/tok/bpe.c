/* bpe.c - byte-level BPE (GPT-2 / Whisper): the token tables (spellings in a
 * tok_vocab of vocab.c; special flags, token bytes and merges here),
 * pre-tokenizer, merge loop, encoder and decoder. The file readers live in
 * bpe_load.c.
 *
 * Encoding follows the Hugging Face `tokenizers` pipeline for Whisper:
 *   1. split the text with the GPT-2 regex (implemented by hand in next_piece)
 *   2. map each piece's bytes to single-byte tokens
 *   3. repeatedly apply the lowest-ranked merge among adjacent pairs, leftmost
 *      first on ties (a heap of candidate pairs over a linked list: O(n log n))
 * Token spellings use the GPT-2 byte-to-unicode alphabet ("Ġ" for a space);
 * decoding maps them back to bytes.
 */
#include "tok/bpe_internal.h"
#include "tok/unicode_tables.h"
#include "tok/vocab.h"
#include "base/err.h"
#include "base/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t key;   /* merge_key(left id, right id); 0 = empty slot */
    int32_t rank;
    int32_t id;     /* the merged token */
} bpe_merge;

struct bpe_tok {
    tok_vocab voc;          /* ids 0 .. voc.n-1 and their vocabulary spellings */
    uint8_t *special;       /* [special_cap] special-token flag of each id */
    int special_cap;        /* follows voc.cap */

    char *bytes;            /* decoded token bytes, each NUL-terminated */
    uint32_t *bytes_off;    /* [voc.n + 1] */
    int byte_id[256];       /* token of each single byte */

    bpe_merge *merges;      /* [merge_cap] open addressing by pair */
    size_t merge_cap, n_merges;
};

/* ---- the byte-to-unicode alphabet ------------------------------------------ */

/* GPT-2 keeps the printable Latin-1 bytes as their own code point and moves
 * the other 68 (0x00-0x20, 0x7f-0xa0, 0xad) to U+0100 upwards, in byte order. */
static uint32_t byte_to_cp(int b) {
    if (b <= 0x20) return 256u + (uint32_t)b;
    if (b >= 0x7f && b <= 0xa0) return 256u + 33 + (uint32_t)(b - 0x7f);
    if (b == 0xad) return 256u + 67;
    return (uint32_t)b;
}

/* The byte a code point stands for, or -1. */
static int cp_to_byte(uint32_t cp) {
    if (cp < 256) return byte_to_cp((int)cp) == cp ? (int)cp : -1;
    if (cp < 256 + 33) return (int)cp - 256;
    if (cp < 256 + 67) return (int)cp - 256 - 33 + 0x7f;
    return cp == 256 + 67 ? 0xad : -1;
}

/* ---- building -------------------------------------------------------------- */

bpe_tok *bpe_alloc(void) {
    bpe_tok *t = calloc(1, sizeof *t);
    if (!t) ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    return t;
}

void bpe_free(bpe_tok *t) {
    if (!t) return;
    tv_free(&t->voc);
    free(t->special);
    free(t->bytes);
    free(t->bytes_off);
    free(t->merges);
    free(t);
}

int bpe_lookup(const bpe_tok *t, const char *s, size_t n) { return tv_lookup(&t->voc, s, n); }

encdec_status bpe_put(bpe_tok *t, int id, const char *s, size_t n, int special, const char *file) {
    int added;
    if (id < 0) id = t->voc.n;
    encdec_status st = tv_put(&t->voc, id, s, n, file, &added);
    if (st) return st;
    if (t->special_cap < t->voc.cap) {          /* keep special[] as long as the id arrays */
        uint8_t *sp = realloc(t->special, (size_t)t->voc.cap);
        if (!sp) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for the vocabulary", file);
        memset(sp + t->special_cap, 0, (size_t)(t->voc.cap - t->special_cap));
        t->special = sp;
        t->special_cap = t->voc.cap;
    }
    if (added || special) t->special[id] = special != 0;   /* a second put only adds the flag */
    return ENCDEC_OK;
}

encdec_status bpe_put_bytes(bpe_tok *t, int id, const uint8_t *b, size_t n, const char *file) {
    char stack[256], *sp = n * 2 < sizeof stack ? stack : malloc(n * 2 + 1);
    if (!sp) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for a token", file);
    memset(sp, 0, n * 2 < sizeof stack ? sizeof stack : n * 2 + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {   /* code points below U+0800: one or two bytes */
        uint32_t cp = byte_to_cp(b[i]);
        if (cp < 0x80) sp[k++] = (char)cp;
        else sp[k++] = (char)(0xc0 | cp >> 6), sp[k++] = (char)(0x80 | (cp & 0x3f));
    }
    encdec_status st = bpe_put(t, id, sp, k, 0, file);
    if (sp != stack) free(sp);
    return st;
}

void bpe_set_special(bpe_tok *t, int id) {
    if (id >= 0 && id < t->voc.n) t->special[id] = 1;
}

encdec_status bpe_finish(bpe_tok *t, const char *file) {
    int nt = bpe_lookup(t, "<|notimestamps|>", 16);
    if (nt >= 0 && nt == t->voc.n - 1 && bpe_lookup(t, "<|0.00|>", 8) < 0) {
        for (int i = 0; i <= 1500; i++) {
            char s[32];
            int n = snprintf(s, sizeof s, "<|%d.%02d|>", i / 50, (i % 50) * 2);
            encdec_status st = bpe_put(t, -1, s, (size_t)n, 1, file);
            if (st) return st;
        }
    }
    encdec_status st = tv_check(&t->voc, file);
    if (st) return st;
    size_t total = 0;
    for (int id = 0; id < t->voc.n; id++) total += tv_len(&t->voc, id) + 1;
    /* A token's bytes are never longer than its spelling. */
    t->bytes = malloc(total);
    t->bytes_off = malloc(((size_t)t->voc.n + 1) * sizeof *t->bytes_off);
    if (!t->bytes || !t->bytes_off) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for token bytes", file);
    size_t at = 0;
    for (int id = 0; id < t->voc.n; id++) {
        const uint8_t *s = (const uint8_t *)tv_spelling(&t->voc, id);
        size_t n = tv_len(&t->voc, id), k = 0, start = at;
        t->bytes_off[id] = (uint32_t)at;
        /* As in Hugging Face's ByteLevel decoder: a spelling with a character
         * outside the alphabet (an added token) stands for its own UTF-8. */
        while (k < n) {
            uint32_t cp;
            int len = ed_utf8_next(s + k, n - k, &cp);
            int b = len > 0 ? cp_to_byte(cp) : -1;
            if (b < 0) break;
            t->bytes[at++] = (char)b;
            k += (size_t)len;
        }
        if (k < n) {
            memcpy(t->bytes + start, s, n);
            at = start + n;
        }
        t->bytes[at++] = 0;
    }
    t->bytes_off[t->voc.n] = (uint32_t)at;
    for (int b = 0; b < 256; b++) {
        char s[4];
        size_t n = ed_utf8_put(s, byte_to_cp(b));
        t->byte_id[b] = bpe_lookup(t, s, n);
        if (t->byte_id[b] < 0)
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no token for byte 0x%02x (\"%.*s\")", file, b, (int)n, s);
    }
    return ENCDEC_OK;
}

/* ---- merges ---------------------------------------------------------------- */

/* +1 keeps key 0 free as the empty marker. */
static uint64_t merge_key(int a, int b) { return (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1; }

static size_t merge_slot(const bpe_tok *t, uint64_t key) {
    size_t mask = t->merge_cap - 1, i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & mask;
    while (t->merges[i].key && t->merges[i].key != key) i = (i + 1) & mask;
    return i;
}

static const bpe_merge *merge_get(const bpe_tok *t, int a, int b) {
    if (!t->n_merges) return NULL;
    const bpe_merge *m = &t->merges[merge_slot(t, merge_key(a, b))];
    return m->key ? m : NULL;
}

static int grow_merges(bpe_tok *t) {
    size_t cap = t->merge_cap ? t->merge_cap * 2 : 1 << 16;
    bpe_merge *old = t->merges, *m = calloc(cap, sizeof *m);
    size_t old_cap = t->merge_cap;
    if (!m) return 0;
    t->merges = m;
    t->merge_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key) m[merge_slot(t, old[i].key)] = old[i];
    free(old);
    return 1;
}

/* Later duplicates of a pair replace earlier ones, as in Hugging Face. */
static encdec_status add_merge(bpe_tok *t, int a, int b, int id, int rank, const char *file) {
    if (2 * (t->n_merges + 1) > t->merge_cap && !grow_merges(t))
        return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for merges", file);
    uint64_t key = merge_key(a, b);
    bpe_merge *m = &t->merges[merge_slot(t, key)];
    if (!m->key) t->n_merges++;
    m->key = key;
    m->rank = rank;
    m->id = id;
    return ENCDEC_OK;
}

encdec_status bpe_put_merge(bpe_tok *t, const char *a, size_t an, const char *b, size_t bn,
                            const char *file, int rank) {
    int ia = bpe_lookup(t, a, an), ib = bpe_lookup(t, b, bn);
    if (ia < 0 || ib < 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: merge %d (\"%.*s\" \"%.*s\") uses the unknown token \"%.*s\"",
                       file, rank, (int)an, a, (int)bn, b, ia < 0 ? (int)an : (int)bn, ia < 0 ? a : b);
    char buf[256], *ab = an + bn <= sizeof buf ? buf : malloc(an + bn);
    if (!ab) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory", file);
    memcpy(ab, a, an);
    memcpy(ab + an, b, bn);
    int id = bpe_lookup(t, ab, an + bn);
    encdec_status st = id < 0
        ? ed_fail(ENCDEC_ERR_TOKENIZER, "%s: merge %d (\"%.*s\" \"%.*s\") makes \"%.*s\", which is not in the vocabulary",
                  file, rank, (int)an, a, (int)bn, b, (int)(an + bn), ab)
        : add_merge(t, ia, ib, id, rank, file);
    if (ab != buf) free(ab);
    return st;
}

/* ---- the merge loop -------------------------------------------------------- */

typedef struct {
    int32_t id, prev, next;     /* id -1: merged into its left neighbour */
} bpe_sym;

typedef struct {
    int32_t rank, pos, id;      /* merge sym[pos] with its right neighbour into id */
} bpe_cand;

typedef struct {
    bpe_sym *sym;               /* [cap] */
    bpe_cand *heap;             /* [3 * cap]: n - 1 initial pairs + 2 per merge */
    size_t cap, n_heap;
} bpe_work;

static int cand_less(const bpe_cand *x, const bpe_cand *y) {
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void heap_push(bpe_work *w, bpe_cand c) {
    size_t i = w->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&c, &w->heap[p])) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = c;
}

static bpe_cand heap_pop(bpe_work *w) {
    bpe_cand top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cand_less(&w->heap[c + 1], &w->heap[c])) c++;
        if (!cand_less(&w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

static void push_pair(const bpe_tok *t, bpe_work *w, int pos) {
    int nx = w->sym[pos].next;
    if (nx < 0) return;
    const bpe_merge *m = merge_get(t, w->sym[pos].id, w->sym[nx].id);
    if (m) heap_push(w, (bpe_cand){m->rank, pos, m->id});
}

/* Runs BPE over the n >= 1 bytes s; the result is the list w->sym from 0. */
static int bpe_word(const bpe_tok *t, const uint8_t *s, size_t n, bpe_work *w) {
    if (n > w->cap) {
        size_t cap = n < 64 ? 64 : n;
        free(w->sym);
        free(w->heap);
        w->sym = malloc(cap * sizeof *w->sym);
        w->heap = malloc(3 * cap * sizeof *w->heap);
        w->cap = w->sym && w->heap ? cap : 0;
        if (!w->cap) return 0;
    }
    for (size_t i = 0; i < n; i++)
        w->sym[i] = (bpe_sym){t->byte_id[s[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1};
    w->n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++) push_pair(t, w, (int)i);
    while (w->n_heap) {
        bpe_cand c = heap_pop(w);
        bpe_sym *x = &w->sym[c.pos];
        if (x->id < 0 || x->next < 0) continue;
        const bpe_merge *m = merge_get(t, x->id, w->sym[x->next].id);
        if (!m || m->id != c.id || m->rank != c.rank) continue;   /* stale */
        bpe_sym *y = &w->sym[x->next];
        x->id = c.id;
        x->next = y->next;
        y->id = -1;
        if (x->next >= 0) w->sym[x->next].prev = c.pos;
        if (x->prev >= 0) push_pair(t, w, x->prev);
        push_pair(t, w, c.pos);
    }
    return 1;
}

encdec_status bpe_derive_merges(bpe_tok *t, const char *file) {
    bpe_work w = {0};
    encdec_status st = ENCDEC_OK;
    int rank = 0;
    for (int id = 0; id < t->voc.n && !st; id++) {
        const uint8_t *s = (const uint8_t *)t->bytes + t->bytes_off[id];
        size_t n = t->bytes_off[id + 1] - t->bytes_off[id] - 1;
        if (t->special[id] || n < 2) continue;
        if (!bpe_word(t, s, n, &w)) {
            st = ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory", file);
            break;
        }
        int a = 0, b = w.sym[0].next;
        if (b >= 0 && w.sym[b].next < 0) {
            st = add_merge(t, w.sym[a].id, w.sym[b].id, id, rank++, file);
        } else if (b >= 0 || w.sym[0].id != id) {
            st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: cannot derive a merge for token %d \"%s\" "
                         "(is the vocabulary in merge order?)", file, id, tv_spelling(&t->voc, id));
        }
    }
    free(w.sym);
    free(w.heap);
    return st;
}

/* ---- encoding -------------------------------------------------------------- */

/* The regex class of the code point at s[i] (already valid UTF-8); *len set. */
static int class_at(const uint8_t *s, size_t n, size_t i, size_t *len) {
    uint8_t c = s[i];
    if (c < 0x80) {
        *len = 1;
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return UC_LETTER;
        if (c >= '0' && c <= '9') return UC_NUMBER;
        if (c == ' ' || (c >= '\t' && c <= '\r')) return UC_SPACE;
        return UC_OTHER;
    }
    uint32_t cp = 0;
    int k = ed_utf8_next(s + i, n - i, &cp);
    *len = k > 0 ? (size_t)k : 1;
    return uc_class(cp);
}

/* The end of the pre-token that starts at s[i], i < n: the first alternative
 * of 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * that matches at i. */
static size_t next_piece(const uint8_t *s, size_t n, size_t i) {
    if (s[i] == '\'' && i + 1 < n) {
        uint8_t c = s[i + 1], d = i + 2 < n ? s[i + 2] : 0;
        if (c == 's' || c == 't' || c == 'm' || c == 'd') return i + 2;
        if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return i + 3;
    }
    size_t k = s[i] == ' ' ? i + 1 : i, len;
    int cls = k < n ? class_at(s, n, k, &len) : UC_SPACE;
    if (cls != UC_SPACE) {                /* ` ?` then a run of letters, numbers or others */
        while (k < n && class_at(s, n, k, &len) == cls) k += len;
        return k;
    }
    size_t j = i, last = i;               /* s[i] is white space: find the run */
    while (j < n && class_at(s, n, j, &len) == UC_SPACE) { last = j; j += len; }
    if (j == n || last == i) return j;    /* \s+(?!\S) to the end, or a lone \s+ */
    return last;                          /* leave the last one to the next word */
}

encdec_status bpe_encode(const bpe_tok *t, const char *text, int *ids, int cap, int *n_out) {
    *n_out = 0;
    if (!text) return ed_fail(ENCDEC_ERR_ARG, "bpe_encode: text is NULL");
    const uint8_t *s = (const uint8_t *)text;
    size_t n = strlen(text);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = ed_utf8_next(s + i, n - i, &cp);
        if (k < 0) return ed_fail(ENCDEC_ERR_ARG, "bpe_encode: invalid UTF-8 at byte %zu (0x%02x)", i, s[i]);
        i += (size_t)k;
    }
    bpe_work w = {0};
    int count = 0;
    for (size_t i = 0; i < n;) {
        size_t e = next_piece(s, n, i);
        if (!bpe_word(t, s + i, e - i, &w)) {
            free(w.sym);
            free(w.heap);
            return ed_fail(ENCDEC_ERR_NOMEM, "bpe_encode: out of memory (%zu bytes of text)", n);
        }
        for (int p = 0; p >= 0; p = w.sym[p].next) {
            if (count < cap) ids[count] = w.sym[p].id;
            count++;
        }
        i = e;
    }
    free(w.sym);
    free(w.heap);
    *n_out = count;
    return ENCDEC_OK;
}

/* ---- decoding and lookups -------------------------------------------------- */

char *bpe_decode(const bpe_tok *t, const int *ids, int n, int skip_special) {
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < t->voc.n && !(skip_special && t->special[ids[i]]))
            total += t->bytes_off[ids[i] + 1] - t->bytes_off[ids[i]] - 1;
    uint8_t *raw = malloc(total + 1);
    char *out = malloc(3 * total + 1);     /* one byte becomes at most U+FFFD */
    if (!raw || !out) {
        free(raw);
        free(out);
        return NULL;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->voc.n || (skip_special && t->special[ids[i]])) continue;
        size_t len = t->bytes_off[ids[i] + 1] - t->bytes_off[ids[i]] - 1;
        memcpy(raw + at, t->bytes + t->bytes_off[ids[i]], len);
        at += len;
    }
    size_t o = 0;
    for (size_t i = 0; i < at;) {
        uint32_t cp;
        int k = ed_utf8_next(raw + i, at - i, &cp);
        if (k > 0) {
            memcpy(out + o, raw + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else {
            o += ed_utf8_put(out + o, 0xfffd);
            i += (size_t)-k;
        }
    }
    out[o] = 0;
    free(raw);
    return out;
}

int bpe_n_vocab(const bpe_tok *t) { return t->voc.n; }

int bpe_token_id(const bpe_tok *t, const char *token) {
    return token ? bpe_lookup(t, token, strlen(token)) : -1;
}

const char *bpe_token_bytes(const bpe_tok *t, int id, size_t *len) {
    if (id < 0 || id >= t->voc.n) return NULL;
    *len = t->bytes_off[id + 1] - t->bytes_off[id] - 1;
    return t->bytes + t->bytes_off[id];
}

const char *bpe_token_spelling(const bpe_tok *t, int id) { return tv_spelling(&t->voc, id); }

int bpe_is_special(const bpe_tok *t, int id) {
    return id >= 0 && id < t->voc.n && t->special[id];
}
