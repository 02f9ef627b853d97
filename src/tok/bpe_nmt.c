/* bpe_nmt.c - subword-nmt's BPE codes and their application (bpe_nmt.h).
 *
 * Every side of a code and every merged pair is a symbol of a tok_vocab
 * (interned: one id per spelling), so a unit of a word is an id; a code
 * point no code names stays a unit of its own, kept by its bytes. The codes
 * are a hash from the pair of ids (a, b) to the rank of the first line that
 * names it and the id of a + b. */
#include "tok/bpe_nmt.h"
#include "tok/vocab.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EOW "</w>"
#define EOW_LEN 4

typedef struct {
    uint64_t key;   /* (a << 32 | b) + 1; 0 = empty */
    int rank, ab;
} nmt_code;

struct nmt_bpe {
    tok_vocab sym;
    nmt_code *codes;
    size_t cap, used;   /* cap: a power of two */
    int version, n_lines;
};

static uint64_t pair_key(int a, int b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }

static size_t slot(uint64_t k, size_t cap) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static const nmt_code *find_code(const nmt_bpe *b, int a, int c) {
    uint64_t k = pair_key(a, c);
    for (size_t i = slot(k, b->cap);; i = (i + 1) & (b->cap - 1)) {
        if (b->codes[i].key == k) return &b->codes[i];
        if (!b->codes[i].key) return NULL;
    }
}

static encdec_status grow_codes(nmt_bpe *b) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    nmt_code *t = calloc(cap, sizeof *t);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE codes");
    for (size_t i = 0; i < b->cap; i++) {
        if (!b->codes[i].key) continue;
        size_t j = slot(b->codes[i].key, cap);
        while (t[j].key) j = (j + 1) & (cap - 1);
        t[j] = b->codes[i];
    }
    free(b->codes);
    b->codes = t, b->cap = cap;
    return ENCDEC_OK;
}

/* The id of the n-byte spelling s, added when new. */
static encdec_status intern(nmt_bpe *b, const char *s, size_t n, const char *name, int *id) {
    *id = tv_lookup(&b->sym, s, n);
    if (*id >= 0) return ENCDEC_OK;
    int added;
    *id = b->sym.n;
    return tv_put(&b->sym, *id, s, n, name, &added);
}

/* Line `line` (1-based) "a b": a code of the next rank, unless its pair
 * already has one (the first line wins). */
static encdec_status add_code(nmt_bpe *b, const char *s, size_t n, int line, const char *name) {
    while (n && (*s == ' ' || *s == '\r' || *s == '\n')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\r' || s[n - 1] == '\n')) n--;
    const char *sp = memchr(s, ' ', n);
    if (!sp || sp == s || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
        return ed_fail(ENCDEC_ERR_TOKENIZER,
                       "%s: line %d is not a BPE code (two units separated by one space): \"%.*s\"",
                       name, line, (int)(n < 60 ? n : 60), s);   /* the line is not NUL-terminated */
    size_t na = (size_t)(sp - s), nb = n - na - 1;
    int rank = b->n_lines++, a, c, ab;
    encdec_status st = intern(b, s, na, name, &a);
    if (!st) st = intern(b, sp + 1, nb, name, &c);
    if (st || find_code(b, a, c)) return st;
    char *cat = malloc(na + nb + 1);
    if (!cat) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE codes");
    memcpy(cat, s, na);
    memcpy(cat + na, sp + 1, nb);
    st = intern(b, cat, na + nb, name, &ab);
    free(cat);
    if (!st && (b->used + 1) * 2 > b->cap) st = grow_codes(b);
    if (st) return st;
    uint64_t k = pair_key(a, c);
    size_t i = slot(k, b->cap);
    while (b->codes[i].key) i = (i + 1) & (b->cap - 1);
    b->codes[i] = (nmt_code){k, rank, ab};
    b->used++;
    return ENCDEC_OK;
}

/* "#version: X.Y": its last whitespace-separated field, trailing groups of
 * ".0..." dropped, must read 0.1 or 0.2. */
static encdec_status read_version(nmt_bpe *b, const char *s, size_t n, const char *name) {
    size_t e = n;
    while (e && strchr(" \t\r\n\v\f", s[e - 1])) e--;
    size_t f = e;
    while (f && !strchr(" \t\r\n\v\f", s[f - 1])) f--;
    size_t p = e;
    for (;;) {   /* (\.0+)*$ */
        size_t q = p;
        while (q > f && s[q - 1] == '0') q--;
        if (q == p || q == f || s[q - 1] != '.') break;
        p = q - 1;
    }
    int part[3] = {0, 0, 0}, k = 0, digits = 0, ok = 1;
    for (size_t i = f; i < p && ok; i++) {
        if (s[i] == '.') ok = digits && ++k < 3, digits = 0;
        else if (s[i] >= '0' && s[i] <= '9') part[k] = part[k] * 10 + (s[i] - '0'), digits = 1, ok = part[k] < 1000;
        else ok = 0;
    }
    if (ok && digits && k == 1 && part[0] == 0 && (part[1] == 1 || part[1] == 2)) {
        b->version = part[1];
        return ENCDEC_OK;
    }
    return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: BPE codes of version \"%.*s\": only 0.1 and 0.2 are read",
                   name, (int)(e - f < 40 ? e - f : 40), s + f);
}

static encdec_status check_utf8(const char *buf, size_t n, const char *name) {
    size_t bad = ed_utf8_bad_at(buf, n);
    return bad < n ? ed_fail(ENCDEC_ERR_TOKENIZER, "%s: not UTF-8 text (at byte %zu)", name, bad) : ENCDEC_OK;
}

encdec_status nmt_bpe_load_mem(nmt_bpe **out, const char *buf, size_t n, const char *name) {
    *out = NULL;
    if (!buf && n) return ed_fail(ENCDEC_ERR_ARG, "nmt_bpe_load_mem: NULL buffer");
    nmt_bpe *b = calloc(1, sizeof *b);
    if (!b) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE codes");
    b->version = 1;
    encdec_status st = check_utf8(buf, n, name);
    if (!st) st = grow_codes(b);
    for (size_t i = 0, line = 1; i < n && !st; line++) {
        size_t e = i;   /* lines end in \n, \r\n or \r (Python's universal newlines) */
        while (e < n && buf[e] != '\n' && buf[e] != '\r') e++;
        if (line == 1 && e - i >= 9 && !memcmp(buf + i, "#version:", 9)) st = read_version(b, buf + i, e - i, name);
        else st = add_code(b, buf + i, e - i, (int)line, name);
        i = e < n && buf[e] == '\r' && e + 1 < n && buf[e + 1] == '\n' ? e + 2 : e + 1;
    }
    if (st) {
        nmt_bpe_free(b);
        return st;
    }
    *out = b;
    return ENCDEC_OK;
}

encdec_status nmt_bpe_load(nmt_bpe **out, const char *path) {
    *out = NULL;
    char *buf;
    size_t n;
    encdec_status st = ed_read_file(path, &buf, &n);
    if (st) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s", ed_err_msg());
    st = nmt_bpe_load_mem(out, buf, n, path);
    free(buf);
    return st;
}

void nmt_bpe_free(nmt_bpe *b) {
    if (!b) return;
    tv_free(&b->sym);
    free(b->codes);
    free(b);
}

int nmt_bpe_version(const nmt_bpe *b) { return b->version; }
int nmt_bpe_n_codes(const nmt_bpe *b) { return b->n_lines; }

void nmt_units_free(nmt_units *u) {
    free(u->buf);
    free(u->at);
    free(u->len);
    memset(u, 0, sizeof *u);
}

/* Appends a unit of the n bytes s (then "@@" when more), NUL-terminated. */
static encdec_status put_unit(nmt_units *u, const char *s, size_t n, int more) {
    size_t need = u->used + n + 3;
    if (need > u->cap) {
        size_t cap = u->cap ? u->cap : 256;
        while (cap < need) cap *= 2;
        char *t = realloc(u->buf, cap);
        if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE units");
        u->buf = t, u->cap = cap;
    }
    if (u->n == u->n_cap) {
        int c = u->n_cap ? u->n_cap * 2 : 64;
        size_t *a = realloc(u->at, sizeof *a * (size_t)c);
        if (a) u->at = a;
        size_t *l = a ? realloc(u->len, sizeof *l * (size_t)c) : NULL;
        if (l) u->len = l;
        if (!a || !l) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE units");
        u->n_cap = c;
    }
    u->at[u->n] = u->used;
    if (n) memcpy(u->buf + u->used, s, n);
    if (more) memcpy(u->buf + u->used + n, "@@", 2), n += 2;
    u->buf[u->used + n] = 0;
    u->len[u->n++] = n;
    u->used += n + 1;
    return ENCDEC_OK;
}

/* A unit of a word being merged: a symbol, or (id < 0) bytes no code names. */
typedef struct {
    int id;
    const char *s;
    size_t n;
} nmt_piece;

static const char *piece_text(const nmt_bpe *b, const nmt_piece *p, size_t *n) {
    if (p->id < 0) return *n = p->n, p->s;
    *n = tv_len(&b->sym, p->id);
    return tv_spelling(&b->sym, p->id);
}

/* The merges, as a heap of candidate pairs by (rank, left unit): popping
 * every candidate of the lowest rank in the heap merges that code's
 * occurrences left to right, each checked against the units as they are
 * then (a unit merged into its left neighbour is dead, pv -2; an
 * occurrence overlapping one merged before it is no longer there), which
 * is apply_bpe's pass over the word. A merge makes pairs with its
 * neighbours; none can be the code just merged (its product is longer
 * than either side). They wait in the heap (the pass's candidates were
 * taken out first: a new pair of a lower rank must not cut the pass
 * short), and the next pass takes the lowest rank among all pairs the
 * word has then, old or new. n log n
 * for a word of n code points, where apply_bpe's passes cost n each. */
typedef struct {
    int rank, pos;
} nmt_cand;

static int cand_less(nmt_cand a, nmt_cand b) { return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos); }

static void heap_push(nmt_cand *h, int *n, nmt_cand c) {
    int i = (*n)++;
    while (i > 0 && cand_less(c, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = c;
}

static nmt_cand heap_pop(nmt_cand *h, int *n) {
    nmt_cand top = h[0], last = h[--*n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && cand_less(h[c + 1], h[c])) c++;
        if (!cand_less(h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

/* The code the pair starting at unit i makes now, or NULL. */
static const nmt_code *pair_at(const nmt_bpe *b, const nmt_piece *w, const int *nx, int i) {
    int j = i >= 0 ? nx[i] : -1;
    return j >= 0 && w[i].id >= 0 && w[j].id >= 0 ? find_code(b, w[i].id, w[j].id) : NULL;
}

static void push_pair(const nmt_bpe *b, const nmt_piece *w, const int *nx, int i, nmt_cand *h, int *nh) {
    const nmt_code *c = pair_at(b, w, nx, i);
    if (c) heap_push(h, nh, (nmt_cand){c->rank, i});
}

/* w[0 .. *k) merged; nx, pv: room for *k ints each; h and batch: for 3 * *k. */
static void merge_all(const nmt_bpe *b, nmt_piece *w, int *k, int *nx, int *pv, nmt_cand *h, int *batch) {
    int n = *k, nh = 0;
    for (int i = 0; i < n; i++) nx[i] = i + 1 < n ? i + 1 : -1, pv[i] = i - 1;
    for (int i = 0; i + 1 < n; i++) push_pair(b, w, nx, i, h, &nh);
    while (nh) {
        int r = h[0].rank, nb = 0;
        while (nh && h[0].rank == r) batch[nb++] = heap_pop(h, &nh).pos;   /* the pass's candidates */
        for (int q = 0; q < nb; q++) {   /* new pairs go to the heap, not into this pass */
            int i = batch[q];
            const nmt_code *c = pv[i] != -2 ? pair_at(b, w, nx, i) : NULL;
            if (!c || c->rank != r) continue;   /* gone, or no longer this pair */
            int j = nx[i];
            w[i].id = c->ab;
            nx[i] = nx[j];
            if (nx[j] >= 0) pv[nx[j]] = i;
            pv[j] = -2;
            push_pair(b, w, nx, pv[i], h, &nh);
            push_pair(b, w, nx, i, h, &nh);
        }
    }
    int o = 0;
    for (int i = 0; i >= 0; i = nx[i]) w[o++] = w[i];
    *k = o;
}

/* The last unit's text with every "</w>" taken out, into tmp[cap]. */
static size_t strip_eow(const char *s, size_t n, char *tmp) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (i + EOW_LEN <= n && !memcmp(s + i, EOW, EOW_LEN)) i += EOW_LEN;
        else tmp[o++] = s[i++];
    }
    return o;
}

/* Scratch for one text of n bytes: every word's pieces and their merges. */
typedef struct {
    nmt_piece *w;   /* n + 2 */
    int *nx, *pv;   /* n + 2 each */
    nmt_cand *h;    /* 3 (n + 2) */
    int *batch;     /* 3 (n + 2) */
    char *tmp;      /* n + EOW_LEN + 1 */
} nmt_scratch;

/* One word (n > 0 bytes of valid UTF-8 without spaces): its units into u. */
static encdec_status encode_word(const nmt_bpe *b, const char *s, size_t n, const nmt_scratch *sc,
                                 nmt_units *u) {
    nmt_piece *w = sc->w;
    char *tmp = sc->tmp;
    int k = 0;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int len = ed_utf8_next((const uint8_t *)s + i, n - i, &cp);
        w[k++] = (nmt_piece){-1, s + i, (size_t)len};
        i += (size_t)len;
    }
    if (b->version == 2 && k == 1) return put_unit(u, s, n, 0);   /* no pair: the word as it is */
    if (b->version == 1) w[k++] = (nmt_piece){-1, EOW, EOW_LEN};
    else {   /* the last code point and the end mark, one unit */
        memcpy(tmp, w[k - 1].s, w[k - 1].n);
        memcpy(tmp + w[k - 1].n, EOW, EOW_LEN);
        w[k - 1].s = tmp, w[k - 1].n += EOW_LEN;
    }
    for (int i = 0; i < k; i++) w[i].id = tv_lookup(&b->sym, w[i].s, w[i].n);
    for (int i = 0; i < k; i++)   /* a piece no code names keeps its bytes */
        if (w[i].id >= 0) w[i].s = NULL;
    if (k > 1) merge_all(b, w, &k, sc->nx, sc->pv, sc->h, sc->batch);
    size_t ln;
    const char *last = piece_text(b, &w[k - 1], &ln);
    if (ln == EOW_LEN && !memcmp(last, EOW, EOW_LEN)) k--;   /* 0.1's end mark alone */
    encdec_status st = ENCDEC_OK;
    for (int i = 0; i < k && !st; i++) {
        size_t pn;
        const char *p = piece_text(b, &w[i], &pn);
        if (i < k - 1) st = put_unit(u, p, pn, 1);
        else {
            char *t = malloc(pn + 1);
            if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE units");
            st = put_unit(u, t, strip_eow(p, pn, t), 0);
            free(t);
        }
    }
    return st;
}

encdec_status nmt_bpe_segment(const nmt_bpe *b, const char *text, size_t n, nmt_units *out) {
    out->n = 0, out->used = 0;
    if (!b || (!text && n)) return ed_fail(ENCDEC_ERR_ARG, "nmt_bpe_segment: NULL codes or text");
    size_t bad = ed_utf8_bad_at(text, n);
    if (bad < n) return ed_fail(ENCDEC_ERR_ARG, "text is not valid UTF-8 (at byte %zu)", bad);
    while (n && strchr(" \r\n", *text) && *text) text++, n--;
    while (n && strchr(" \r\n", text[n - 1]) && text[n - 1]) n--;
    nmt_scratch sc = {malloc(sizeof *sc.w * (n + 2)), malloc(sizeof(int) * (n + 2)), malloc(sizeof(int) * (n + 2)),
                      malloc(sizeof *sc.h * 3 * (n + 2)), malloc(sizeof(int) * 3 * (n + 2)),
                      malloc(n + EOW_LEN + 1)};
    encdec_status st = sc.w && sc.nx && sc.pv && sc.h && sc.batch && sc.tmp ? ENCDEC_OK
                                                              : ed_fail(ENCDEC_ERR_NOMEM, "out of memory: BPE units");
    for (size_t i = 0; i < n && !st;) {
        size_t e = i;
        while (e < n && text[e] != ' ') e++;
        if (e > i) st = encode_word(b, text + i, e - i, &sc, out);
        i = e + 1;
    }
    free(sc.w);
    free(sc.nx);
    free(sc.pv);
    free(sc.h);
    free(sc.batch);
    free(sc.tmp);
    return st;
}

char *nmt_bpe_join(const char *const *units, int n) {
    size_t total = 1;
    for (int i = 0; i < n; i++) total += strlen(units[i]) + 1;
    char *s = malloc(total), *o = s;
    if (!s) return NULL;
    for (int i = 0; i < n; i++) {   /* " ".join(units) */
        size_t l = strlen(units[i]);
        memcpy(o, units[i], l);
        o += l;
        if (i + 1 < n) *o++ = ' ';
    }
    *o = 0;
    char *r = s, *d = s;   /* .replace("@@ ", ""), left to right */
    while (*r) {
        if (r[0] == '@' && r[1] == '@' && r[2] == ' ') r += 3;
        else *d++ = *r++;
    }
    *d = 0;
    return s;
}
