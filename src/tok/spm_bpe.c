/* spm_bpe.c - the segmentation of a SentencePiece model of type BPE (the
 * sentencepiece.bpe.model of mBART, mBART-50, M2M100 and NLLB), as the
 * `sentencepiece` library encodes, and of the tokenizer.json the `tokenizers`
 * library converts it to (NllbTokenizerFast, MBart50TokenizerFast):
 *
 *   the normalised text becomes one symbol per character (a user-defined
 *   piece matched at a position is one frozen symbol); every adjacent pair
 *   whose concatenation is a piece (normal, user-defined or unused) goes
 *   into a queue ordered by that piece's score, highest first, the leftmost
 *   first on ties; the best pair is merged and its new neighbours queued,
 *   until none is left. A merged piece marked unused is split back into the
 *   two it was made of, recursively. A symbol that is no piece is <unk>
 *   (its bytes as <0xNN> pieces with byte fallback), and a run of unknowns
 *   one <unk>, as the library's output merges them.
 *
 * Scores are compared as floats, as the library stores them. Stale queue
 * entries (a side already merged elsewhere) are recognised by their sizes.
 *
 * From tokenizer.json (merge_cap > 0) the queue holds the pairs of pieces
 * its merges list, ordered by rank, the lowest first, the leftmost on ties,
 * as the `tokenizers` library merges a word; an unknown character is
 * <unk> (its bytes where byte_fallback has them all), a run of them one
 * <unk> where fuse_unk says so.
 */
#include "tok/spm_internal.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t at, len;        /* the symbol's bytes in the text; len 0 = merged away */
    int prev, next;        /* neighbours, -1 at the ends */
    int frozen;            /* a user-defined piece: never merged */
} sym;

typedef struct {
    float score;
    int left, right;
    size_t len;            /* left's + right's at queueing time */
} pair;

/* A merge that made an unused piece: text [at, at + len) from a left part of
 * left_len bytes (the resegmentation's record; the library keeps the last
 * per spelling). */
typedef struct {
    size_t at, len, left_len;
} unmerge;

typedef struct {
    const spm_tok *t;
    const char *s;
    sym *sy;
    pair *heap;
    size_t n_heap, cap_heap;
    unmerge *um;
    size_t n_um, cap_um;
    size_t base;           /* out->n when the run began */
} bpe_run;

/* a before b: higher score, then the leftmost */
static int before(const pair *a, const pair *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static encdec_status heap_push(bpe_run *r, pair p) {
    if (r->n_heap == r->cap_heap) {
        size_t cap = r->cap_heap ? 2 * r->cap_heap : 64;
        pair *h = realloc(r->heap, cap * sizeof *h);
        if (!h) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE queue");
        r->heap = h;
        r->cap_heap = cap;
    }
    size_t i = r->n_heap++;
    while (i > 0 && before(&p, &r->heap[(i - 1) / 2])) {
        r->heap[i] = r->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    r->heap[i] = p;
    return ENCDEC_OK;
}

static pair heap_pop(bpe_run *r) {
    pair top = r->heap[0], last = r->heap[--r->n_heap];
    size_t i = 0, n = r->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&r->heap[c + 1], &r->heap[c])) c++;
        if (!before(&r->heap[c], &last)) break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    if (n) r->heap[i] = last;
    return top;
}

/* A piece the merges may make: normal, user-defined or unused. */
static int mergeable(const spm_tok *t, int id) {
    if (id < 0) return 0;
    int ty = t->type[id];
    return ty == SPM_NORMAL || ty == SPM_USER_DEFINED || ty == SPM_UNUSED;
}

/* tokenizer.json: the pair's merge rank as the queue's score (-rank: the
 * lowest rank first; exact in a float below 2^24 merges) */
static encdec_status queue_ranked(bpe_run *r, int left, int right, size_t len) {
    const sym *a = &r->sy[left], *b = &r->sy[right];
    int rank = spm_merge_rank(r->t, spm_lookup(r->t, r->s + a->at, a->len),
                              spm_lookup(r->t, r->s + b->at, b->len));
    return rank < 0 ? ENCDEC_OK : heap_push(r, (pair){-(float)rank, left, right, len});
}

static encdec_status queue_pair(bpe_run *r, int left, int right) {
    if (left < 0 || right < 0 || r->sy[left].frozen || r->sy[right].frozen) return ENCDEC_OK;
    size_t len = r->sy[left].len + r->sy[right].len;
    if (r->t->merge_cap) return queue_ranked(r, left, right, len);
    int id = spm_lookup(r->t, r->s + r->sy[left].at, len);
    if (!mergeable(r->t, id)) return ENCDEC_OK;
    if (r->t->type[id] == SPM_UNUSED) {
        if (r->n_um == r->cap_um) {
            size_t cap = r->cap_um ? 2 * r->cap_um : 16;
            unmerge *u = realloc(r->um, cap * sizeof *u);
            if (!u) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE merges");
            r->um = u;
            r->cap_um = cap;
        }
        r->um[r->n_um++] = (unmerge){r->sy[left].at, len, r->sy[left].len};
    }
    return heap_push(r, (pair){(float)r->t->score[id], left, right, len});
}

/* The length of the user-defined piece at s[0, n), the longest, or 0. */
static size_t user_prefix(const spm_tok *t, const char *s, size_t n) {
    if (!t->n_user) return 0;
    size_t best = 0;
    uint32_t nd = 0;
    for (size_t k = 0; k < n && k < t->user_max_len && (nd = spm_trie_next(t, nd, (uint8_t)s[k])); k++) {
        int id = t->node_id[nd];
        if (id >= 0 && t->type[id] == SPM_USER_DEFINED) best = k + 1;
    }
    return best;
}

/* The id of a final symbol's spelling: any piece of the model (its
 * reserved ones too), else <unk>. */
static int final_id(const spm_tok *t, const char *s, size_t n) {
    int id = spm_lookup(t, s, n);
    return id < 0 || t->type[id] == SPM_ADDED ? t->unk : id;
}

/* The last record of how the unused piece s[0, n) was made, or NULL. */
static const unmerge *find_unmerge(const bpe_run *r, const char *s, size_t n) {
    for (size_t i = r->n_um; i-- > 0;)
        if (r->um[i].len == n && memcmp(r->s + r->um[i].at, s, n) == 0) return &r->um[i];
    return NULL;
}

static encdec_status emit(const bpe_run *r, const char *s, size_t n, int depth, spm_ids *out) {
    const spm_tok *t = r->t;
    int id = final_id(t, s, n);
    const unmerge *u = t->type[id] == SPM_UNUSED && depth < 64 ? find_unmerge(r, s, n) : NULL;
    if (u) {
        encdec_status st = emit(r, s, u->left_len, depth + 1, out);
        return st ? st : emit(r, s + u->left_len, n - u->left_len, depth + 1, out);
    }
    int all_bytes = 1;   /* tokenizer.json: bytes only when each has its piece */
    for (size_t i = 0; t->style == SPM_FAST && id == t->unk && i < n; i++)
        all_bytes &= t->byte_id[(uint8_t)s[i]] >= 0;
    if (id == t->unk && t->byte_fallback && all_bytes) {
        encdec_status st = ENCDEC_OK;
        for (size_t i = 0; i < n && !st; i++) {
            int b = t->byte_id[(uint8_t)s[i]];
            st = spm_ids_put(out, b >= 0 ? b : t->unk);
        }
        return st;
    }
    /* a run of unknowns is one <unk> (sentencepiece merges them on output;
     * `tokenizers` where fuse_unk) */
    if (id == t->unk && t->fuse_unk && out->n > r->base && out->p[out->n - 1] == t->unk)
        return spm_ids_grow_text(out, s, n);
    return id == t->unk ? spm_ids_put_text(out, id, s, n) : spm_ids_put(out, id);
}

encdec_status spm_bpe(const spm_tok *t, const char *s, size_t n, spm_ids *out) {
    if (n == 0) return ENCDEC_OK;
    bpe_run r = {t, s, malloc(n * sizeof(sym)), NULL, 0, 0, NULL, 0, 0, out->n};
    if (!r.sy) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: segmentation of %zu bytes", n);
    int ns = 0;
    for (size_t at = 0; at < n; ns++) {
        size_t len = user_prefix(t, s + at, n - at);
        int frozen = len > 0;
        if (!len) {
            uint32_t cp;
            int k = spm_utf8_next((const uint8_t *)s + at, n - at, &cp);
            len = k > 0 ? (size_t)k : 1;
        }
        r.sy[ns] = (sym){at, len, ns - 1, at + len < n ? ns + 1 : -1, frozen};
        at += len;
    }
    encdec_status st = ENCDEC_OK;
    for (int i = 0; i + 1 < ns && !st; i++) st = queue_pair(&r, i, i + 1);
    while (r.n_heap && !st) {
        pair p = heap_pop(&r);
        sym *a = &r.sy[p.left], *b = &r.sy[p.right];
        if (!a->len || !b->len || a->len + b->len != p.len) continue;   /* stale */
        a->len += b->len;
        b->len = 0;
        a->next = b->next;
        if (b->next >= 0) r.sy[b->next].prev = p.left;
        st = queue_pair(&r, a->prev, p.left);
        if (!st) st = queue_pair(&r, p.left, a->next);
    }
    for (int i = 0; i >= 0 && !st; i = r.sy[i].next) st = emit(&r, s + r.sy[i].at, r.sy[i].len, 0, out);
    free(r.sy);
    free(r.heap);
    free(r.um);
    return st;
}
