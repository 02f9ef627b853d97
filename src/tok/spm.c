/* spm.c - text -> ids: special spellings split out, normalisation, the unigram
 * Viterbi search (a BPE-type model's merges: spm_bpe.c), unknown characters. Two pipelines (spm_internal.h):
 *
 *   SPM_SLOW (spiece.model, as HF's slow T5Tokenizer): split at <pad> </s> <unk>
 *   and <extra_id_N> (sentinels swallow the whitespace around them, Python's
 *   str.isspace); each chunk through sentencepiece: normalise, Viterbi over the
 *   whole chunk with float scores; runs of unknown characters merged into one
 *   <unk>, or spelled as <0xNN> byte pieces with byte_fallback.
 *
 *   SPM_FAST (tokenizer.json, as `tokenizers`): split at the added tokens;
 *   each chunk normalised by the file's normalizer chain; Metaspace turns spaces
 *   into U+2581, prepends one and splits before each U+2581; Viterbi per word with
 *   double scores over every vocabulary entry; unknowns fused, byte fallback only
 *   when the JSON model enables it.
 *
 * The search (sentencepiece's "optimized" encoder, which `tokenizers` copies):
 * best[i] is the best segmentation of the first i bytes; from each character
 * start, the trie yields every piece beginning there; a character no piece of
 * its own length covers gets an <unk> edge scoring min_score - 10. O(n * L) for
 * L the longest piece.
 */
#include "tok/spm_internal.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

/* ---- accessors ---------------------------------------------------------------------- */

int spm_n_vocab(const spm_tok *t) { return t->voc.n; }
int spm_eos(const spm_tok *t) { return t->eos; }
int spm_pad(const spm_tok *t) { return t->pad; }
int spm_unk(const spm_tok *t) { return t->unk; }

const char *spm_piece(const spm_tok *t, int id) {
    return tv_spelling(&t->voc, id);
}

int spm_piece_id(const spm_tok *t, const char *piece) {
    return piece ? spm_lookup(t, piece, strlen(piece)) : -1;
}

int spm_is_special(const spm_tok *t, int id) {
    return id >= 0 && id < t->voc.n && t->special[id];
}

int spm_is_normal(const spm_tok *t, int id) {
    return id >= 0 && id < t->voc.n && !t->special[id] && t->type[id] == SPM_NORMAL;
}

int spm_split_token(const spm_tok *t, int i) { return i >= 0 && i < t->n_specials ? t->specials[i].id : -1; }

/* ---- scratch ------------------------------------------------------------------------ */

typedef struct {
    double score;       /* of the best path ending here (SPM_SLOW: a float value) */
    int32_t start;      /* where its last piece starts; -1 = unreached */
    int32_t id;         /* its last piece */
} vnode;

typedef struct {
    size_t a, b;        /* text [a, b) */
    int sp;             /* index into t->specials, or -1 for text */
} seg;

typedef struct {
    seg *p;
    size_t n, cap;
} segs;

typedef struct {
    vnode *node;        /* [cap + 1] */
    size_t *path;       /* [cap + 1] */
    size_t cap;
    spm_buf norm, word;
    segs outer, inner;
} scratch;

static void scratch_free(scratch *w) {
    free(w->node);
    free(w->path);
    free(w->norm.p);
    free(w->word.p);
    free(w->outer.p);
    free(w->inner.p);
}

static encdec_status seg_put(segs *v, size_t a, size_t b, int sp) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        seg *p = realloc(v->p, cap * sizeof *p);
        if (!p) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: text segments");
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = (seg){a, b, sp};
    return ENCDEC_OK;
}

/* ---- special spellings -------------------------------------------------------------- */

static int is_ws(const spm_tok *t, uint32_t cp) {
    return t->style == SPM_SLOW ? spm_is_ws_python(cp) : spm_is_ws_rust(cp);
}

/* Moves [*a, *b) past whitespace at its left (left) or right end. */
static void trim(const spm_tok *t, const char *s, size_t *a, size_t *b, int left) {
    size_t at = *a, last = *a;
    while (at < *b) {
        uint32_t cp;
        int k = spm_utf8_next((const uint8_t *)s + at, *b - at, &cp);
        size_t len = k > 0 ? (size_t)k : 1;
        int ws = k > 0 && is_ws(t, cp);
        if (left && !ws) break;
        at += len;
        if (left) *a = at;
        else if (!ws) last = at;
    }
    if (!left) *b = last;
}

/* Splits s[0, n) at the special spellings (the longest one at the leftmost
 * position first) matched in raw (normalized 0) or normalised text; text next
 * to a token that strips it loses its whitespace on that side. Empty text
 * segments are dropped. */
static encdec_status split_specials(const spm_tok *t, const char *s, size_t n, int normalized, segs *out) {
    out->n = 0;
    size_t at = 0, from = 0;
    encdec_status st = ENCDEC_OK;
    while (at < n && !st) {
        int best = -1;
        size_t best_len = 0;
        if (t->special_first[(uint8_t)s[at]])
            for (int i = 0; i < t->n_specials; i++) {
                int id = t->specials[i].id;
                size_t len = tv_len(&t->voc, id);
                if (t->specials[i].normalized == normalized && len > best_len && len <= n - at &&
                    memcmp(s + at, tv_spelling(&t->voc, id), len) == 0) {
                    best = i;
                    best_len = len;
                }
            }
        if (best < 0) {
            at++;
            continue;
        }
        if (from < at) st = seg_put(out, from, at, -1);
        if (!st) st = seg_put(out, at, at + best_len, best);
        at += best_len;
        from = at;
    }
    if (!st && from < n) st = seg_put(out, from, n, -1);
    if (st) return st;
    /* text segments alternate with tokens: the neighbours of text are tokens */
    for (size_t i = 0; i < out->n; i++) {
        seg *g = &out->p[i];
        if (g->sp >= 0) continue;
        if (i > 0 && t->specials[out->p[i - 1].sp].rstrip) trim(t, s, &g->a, &g->b, 1);
        if (i + 1 < out->n && t->specials[out->p[i + 1].sp].lstrip) trim(t, s, &g->a, &g->b, 0);
    }
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++)
        if (out->p[i].sp >= 0 || out->p[i].a < out->p[i].b) out->p[k++] = out->p[i];
    out->n = k;
    return ENCDEC_OK;
}

/* ---- Viterbi -------------------------------------------------------------------------- */

static size_t char_len(const char *s, size_t n) {
    uint32_t cp;
    int k = spm_utf8_next((const uint8_t *)s, n, &cp);
    return k > 0 ? (size_t)k : 1;
}

/* Appends the ids of an unknown run s[0, n): byte pieces with byte fallback
 * (sentencepiece: <unk> for a byte without a piece; tokenizers: <unk> for the
 * whole run unless every byte has one), else one <unk>. */
static encdec_status put_unknown(const spm_tok *t, const char *s, size_t n, spm_ids *out) {
    int all = 1;
    for (size_t i = 0; i < n; i++) all &= t->byte_id[(uint8_t)s[i]] >= 0;
    if (!t->byte_fallback || (t->style == SPM_FAST && !all)) return spm_ids_put_text(out, t->unk, s, n);
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i < n && !st; i++) {
        int id = t->byte_id[(uint8_t)s[i]];
        st = spm_ids_put(out, id >= 0 ? id : t->unk);
    }
    return st;
}

static encdec_status viterbi(const spm_tok *t, const char *s, size_t n, scratch *w, spm_ids *out) {
    if (t->bpe) return spm_bpe(t, s, n, out);   /* a BPE-type model merges instead */
    if (n == 0) return ENCDEC_OK;
    if (n + 1 > w->cap) {
        size_t cap = n + 1 > 2 * w->cap ? n + 1 : 2 * w->cap;
        free(w->node);
        free(w->path);
        w->node = malloc(cap * sizeof *w->node);
        w->path = malloc(cap * sizeof *w->path);
        w->cap = w->node && w->path ? cap : 0;
        if (!w->cap) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: segmentation of %zu bytes", n);
    }
    const int f32 = t->style == SPM_SLOW;
    vnode *node = w->node;
    for (size_t i = 0; i <= n; i++) node[i] = (vnode){0, -1, -1};
    for (size_t at = 0; at < n;) {
        const double base = node[at].score;
        const size_t mblen = char_len(s + at, n - at);
        int single = 0;
        uint32_t nd = 0;
        for (size_t k = at; k < n && (nd = spm_trie_next(t, nd, (uint8_t)s[k])); k++) {
            int id = t->node_id[nd];
            if (id < 0 || (f32 && t->type[id] == SPM_UNUSED)) continue;
            size_t len = k + 1 - at;
            double score = t->score[id];
            if (f32 && t->type[id] == SPM_USER_DEFINED) score = (double)((float)len * t->max_score) - 0.1;
            double cand = score + base;         /* sentencepiece adds in double too */
            vnode *tg = &node[k + 1];
            if (tg->start < 0 || cand > tg->score) *tg = (vnode){f32 ? (double)(float)cand : cand, (int32_t)at, id};
            if (len == mblen) single = 1;
        }
        if (!single) {
            double cand = f32 ? (double)(((float)t->min_score - 10.0f) + (float)base) : t->min_score - 10.0 + base;
            vnode *tg = &node[at + mblen];
            if (tg->start < 0 || cand > tg->score) *tg = (vnode){cand, (int32_t)at, t->unk};
        }
        at += mblen;
    }
    size_t np = 0;
    for (size_t end = n; end > 0; end = (size_t)node[end].start) w->path[np++] = end;
    size_t unk_from = 0, unk_to = 0;          /* a pending run of unknowns */
    encdec_status st = ENCDEC_OK;
    while (np-- > 0 && !st) {
        size_t e = w->path[np], b = (size_t)node[e].start;
        if (node[e].id == t->unk) {
            if (unk_to == unk_from) unk_from = b;
            unk_to = e;
            continue;
        }
        if (unk_to > unk_from) st = put_unknown(t, s + unk_from, unk_to - unk_from, out);
        unk_from = unk_to = 0;
        if (!st) st = spm_ids_put(out, node[e].id);
    }
    if (!st && unk_to > unk_from) st = put_unknown(t, s + unk_from, unk_to - unk_from, out);
    return st;
}

/* ---- the tokenizer.json pre-tokenizer ------------------------------------------------ */

/* Metaspace: spaces -> the replacement, one prepended, a split before each. */
static encdec_status metaspace(const spm_tok *t, const char *s, size_t n, int may_prepend, scratch *w,
                               spm_ids *out) {
    if (!t->metaspace) return viterbi(t, s, n, w, out);
    const char *r = t->ms_repl;
    size_t rl = strlen(r);
    spm_buf *b = &w->word;
    b->n = 0;
    encdec_status st = spm_buf_put(b, "", 0);
    /* prepended unless the text, spaces replaced, already starts with it */
    if (!st && n && may_prepend && s[0] != ' ' && !(n >= rl && memcmp(s, r, rl) == 0)) st = spm_buf_put(b, r, rl);
    for (size_t i = 0; i < n && !st; i++) st = s[i] == ' ' ? spm_buf_put(b, r, rl) : spm_buf_put(b, s + i, 1);
    if (st) return st;
    if (!t->ms_split) return viterbi(t, b->p, b->n, w, out);
    size_t from = 0;
    for (size_t i = 0; i < b->n && !st;) {
        int at_r = b->n - i >= rl && memcmp(b->p + i, r, rl) == 0;
        if (at_r && i > from) {
            st = viterbi(t, b->p + from, i - from, w, out);
            from = i;
        }
        i += at_r ? rl : 1;
    }
    return st ? st : viterbi(t, b->p + from, b->n - from, w, out);
}

/* Length of the prefix of s[0, n) that is all White_Space (ws) or has none. */
static size_t ws_prefix(const char *s, size_t n, int ws) {
    size_t at = 0;
    while (at < n) {
        uint32_t cp;
        int k = spm_utf8_next((const uint8_t *)s + at, n - at, &cp);
        if ((k > 0 && spm_is_ws_rust(cp)) != ws) break;
        at += k > 0 ? (size_t)k : 1;
    }
    return at;
}

/* The words of a normalised chunk: WhitespaceSplit when configured. With
 * prepend_scheme "first" only a word that starts where the text starts gets
 * the replacement. */
static encdec_status fast_words(const spm_tok *t, const char *s, size_t n, int at_start, scratch *w,
                                spm_ids *out) {
    int first = t->ms_prepend == SPM_PREPEND_ALWAYS || (t->ms_prepend == SPM_PREPEND_FIRST && at_start);
    if (!t->ws_split) return metaspace(t, s, n, first, w, out);
    encdec_status st = ENCDEC_OK;
    for (size_t a = ws_prefix(s, n, 1); a < n && !st; a += ws_prefix(s + a, n - a, 1)) {
        size_t len = ws_prefix(s + a, n - a, 0);
        st = metaspace(t, s + a, len, first && (t->ms_prepend == SPM_PREPEND_ALWAYS || a == 0), w, out);
        a += len;
    }
    return st;
}

/* One chunk between added tokens: normalise, split at the added tokens matched
 * in normalised text, pre-tokenize, segment. */
static encdec_status fast_chunk(const spm_tok *t, const char *s, size_t n, int at_start, scratch *w,
                                spm_ids *out) {
    int origin0;
    encdec_status st = spm_normalize_fast(t, s, n, &w->norm, &origin0);
    if (st) return st;
    at_start &= origin0;
    if ((st = split_specials(t, w->norm.p, w->norm.n, 1, &w->inner))) return st;
    /* w->norm stays intact below: metaspace writes into w->word */
    for (size_t i = 0; i < w->inner.n && !st; i++) {
        seg g = w->inner.p[i];
        if (g.sp >= 0) st = spm_ids_put(out, t->specials[g.sp].id);
        else st = fast_words(t, w->norm.p + g.a, g.b - g.a, at_start && g.a == 0, w, out);
    }
    return st;
}

/* ---- spm_encode ------------------------------------------------------------------------ */

/* texts[n] (one allocation): each id's unknown text (v's) or NULL. */
static encdec_status unknown_texts(const spm_ids *v, char ***texts) {
    size_t bytes = v->text->n;
    char **o = malloc((v->n ? v->n : 1) * sizeof *o + bytes + 1);
    if (!o) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: token texts");
    char *b = (char *)(o + (v->n ? v->n : 1));
    if (bytes) memcpy(b, v->text->p, bytes);
    for (size_t i = 0; i < v->n; i++) o[i] = v->text_at[i] == SPM_NO_TEXT ? NULL : b + v->text_at[i];
    *texts = o;
    return ENCDEC_OK;
}

static encdec_status encode(const spm_tok *t, const char *text, size_t len, int add_eos, int **ids, int *n,
                            char ***texts) {
    if (!ids || !n) return ed_fail(ENCDEC_ERR_ARG, "spm_encode: NULL output");
    *ids = NULL;
    *n = 0;
    if (!t || (!text && len)) return ed_fail(ENCDEC_ERR_ARG, "spm_encode: NULL tokenizer or text");
    /* normalisation may grow the text ~11x; positions must fit int32 */
    if (len > (size_t)1 << 26)
        return ed_fail(ENCDEC_ERR_ARG, "spm_encode: text of %zu bytes is too long (max 64 MiB)", len);
    for (size_t at = 0; at < len;) {
        uint32_t cp;
        int k = spm_utf8_next((const uint8_t *)text + at, len - at, &cp);
        if (k <= 0) return ed_fail(ENCDEC_ERR_ARG, "spm_encode: invalid UTF-8 at byte offset %zu (0x%02x)",
                                   at, (uint8_t)text[at]);
        at += (size_t)k;
    }
    if (add_eos && t->eos < 0) return ed_fail(ENCDEC_ERR_ARG, "spm_encode: the tokenizer has no </s>");
    scratch w = {0};
    spm_buf unknown = {0};
    spm_ids out = {0};
    out.text = texts ? &unknown : NULL;
    encdec_status st = split_specials(t, text, len, 0, &w.outer);
    for (size_t i = 0; i < w.outer.n && !st; i++) {
        seg g = w.outer.p[i];
        if (g.sp >= 0) st = spm_ids_put(&out, t->specials[g.sp].id);
        else if (t->style == SPM_FAST) st = fast_chunk(t, text + g.a, g.b - g.a, g.a == 0, &w, &out);
        else if (!(st = spm_normalize_slow(t, text + g.a, g.b - g.a, &w.norm)))
            st = viterbi(t, w.norm.p, w.norm.n, &w, &out);
    }
    /* T5Tokenizer appends no second </s>; the TemplateProcessing of tokenizer.json does */
    if (!st && add_eos && !(t->style == SPM_SLOW && out.n && out.p[out.n - 1] == t->eos))
        st = spm_ids_put(&out, t->eos);
    if (!st && !out.p && !(out.p = malloc(sizeof *out.p))) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: ids");
    scratch_free(&w);
    if (!st && texts) st = unknown_texts(&out, texts);
    free(unknown.p);
    free(out.text_at);
    if (st) {
        free(out.p);
        return st;
    }
    *ids = out.p;
    *n = (int)out.n;
    return ENCDEC_OK;
}

encdec_status spm_encode(const spm_tok *t, const char *text, size_t len, int add_eos, int **ids, int *n) {
    return encode(t, text, len, add_eos, ids, n, NULL);
}

encdec_status spm_encode_surfaces(const spm_tok *t, const char *text, size_t len, int add_eos, int **ids,
                                  int *n, char ***texts) {
    if (!texts) return ed_fail(ENCDEC_ERR_ARG, "spm_encode_surfaces: NULL texts");
    *texts = NULL;
    return encode(t, text, len, add_eos, ids, n, texts);
}
