/* spm_decode.c - ids -> text, as each reference decodes:
 *
 *   SPM_SLOW, HF's slow T5Tokenizer.decode: the ids split at sentinels, which are
 *   joined to the rest with single spaces; each run between them goes through
 *   convert_tokens_to_string: the first token loses one leading U+2581, <pad>,
 *   </s> and <unk> are written as spelled with a space before the first of a
 *   group, the pieces between them decoded by sentencepiece, the result stripped
 *   of whitespace (Python's str.strip). sentencepiece's decoding: U+2581 -> space,
 *   the leading one dropped while the output is still empty, control pieces
 *   invisible, runs of byte pieces decoded as UTF-8 with each invalid byte
 *   becoming U+FFFD.
 *
 *   SPM_FAST, `tokenizers` Tokenizer.decode: the tokens' spellings through the
 *   tokenizer.json decoder chain (Metaspace drops U+2581 in the first token and
 *   turns it into a space elsewhere; ByteFallback turns a run of <0xNN> into its
 *   UTF-8 text, or one U+FFFD per byte when the run is not valid UTF-8).
 *
 * In both, skip_special drops the special tokens (pad, eos, unk, sentinels).
 */
#include "tok/spm_internal.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

#define SPACE_SYMBOL "\xe2\x96\x81"
#define REPLACEMENT "\xef\xbf\xbd"

const char *spm_token_text(const spm_tok *t, int id, size_t *len) {
    if (!t || id < 0 || id >= t->voc.n) return NULL;
    if (len) *len = t->text_off[id + 1] - t->text_off[id] - 1;
    return t->text + t->text_off[id];
}

/* ---- sentencepiece and the slow tokenizer -------------------------------------- */

/* Appends the UTF-8 text of a run of bytes: each byte that does not start a
 * valid character becomes U+FFFD (sentencepiece). */
static encdec_status put_bytes_spm(spm_buf *out, const uint8_t *b, size_t n) {
    encdec_status st = ENCDEC_OK;
    for (size_t at = 0; at < n && !st;) {
        uint32_t cp;
        int k = spm_utf8_next(b + at, n - at, &cp);
        st = k > 0 ? spm_buf_put(out, b + at, (size_t)k) : spm_buf_put(out, REPLACEMENT, 3);
        at += k > 0 ? (size_t)k : 1;
    }
    return st;
}

/* Appends s[0, n) with U+2581 -> space. */
static encdec_status put_unescaped(spm_buf *out, const char *s, size_t n) {
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i < n && !st; i++) {
        if (n - i >= 3 && memcmp(s + i, SPACE_SYMBOL, 3) == 0) {
            st = spm_buf_put(out, " ", 1);
            i += 2;
        } else {
            st = spm_buf_put(out, s + i, 1);
        }
    }
    return st;
}

/* sentencepiece's DecodePieces of ids[0, n) appended to out. When first_rest is
 * set, the first piece is the string first_rest (the first token without its
 * U+2581), looked up again as sentencepiece's PieceToId would. */
static encdec_status sp_decode(const spm_tok *t, const int *ids, size_t n, const char *first_rest, spm_buf *out) {
    size_t start = out->n;
    spm_buf bytes = {0};
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i < n && !st; i++) {
        const char *s = tv_spelling(&t->voc, ids[i]);
        size_t len = tv_len(&t->voc, ids[i]);
        int id = ids[i];
        if (i == 0 && first_rest) {
            s = first_rest;
            len = strlen(s);
            id = spm_lookup(t, s, len);
            if (id < 0) id = t->unk;
        }
        if (t->type[id] == SPM_BYTE) {
            uint8_t b = (uint8_t)spm_byte_of_piece(tv_spelling(&t->voc, id), tv_len(&t->voc, id));
            st = spm_buf_put(&bytes, &b, 1);
            continue;
        }
        if (bytes.n && (st = put_bytes_spm(out, (const uint8_t *)bytes.p, bytes.n))) break;
        bytes.n = 0;
        if (t->type[id] == SPM_CONTROL) continue;
        if (t->type[id] == SPM_UNKNOWN) {       /* <unk> itself: sentencepiece's default unk_surface */
            int is_unk = len == tv_len(&t->voc, t->unk) && memcmp(s, tv_spelling(&t->voc, t->unk), len) == 0;
            st = is_unk ? spm_buf_put(out, " \xe2\x81\x87 ", 5) : spm_buf_put(out, s, len);
            continue;
        }
        if (out->n == start && t->add_dummy_prefix && len >= 3 && memcmp(s, SPACE_SYMBOL, 3) == 0) {
            s += 3;
            len -= 3;
        }
        st = put_unescaped(out, s, len);
    }
    if (!st && bytes.n) st = put_bytes_spm(out, (const uint8_t *)bytes.p, bytes.n);
    free(bytes.p);
    return st;
}

/* Python's str.strip() of out[from, n). */
static void strip_python(spm_buf *out, size_t from) {
    size_t a = from, last = from;
    int seen = 0;
    for (size_t at = from; at < out->n;) {
        uint32_t cp;
        int k = spm_utf8_next((const uint8_t *)out->p + at, out->n - at, &cp);
        size_t len = k > 0 ? (size_t)k : 1;
        if (k <= 0 || !spm_is_ws_python(cp)) {
            if (!seen) a = at;
            seen = 1;
            last = at + len;
        }
        at += len;
    }
    if (!seen) a = last = from;
    memmove(out->p + from, out->p + a, last - a);
    out->n = from + (last - a);
    out->p[out->n] = 0;
}

/* T5Tokenizer.convert_tokens_to_string of ids[0, n) (no sentinels) appended to out. */
static encdec_status tokens_to_string(const spm_tok *t, const int *ids, size_t n, spm_buf *out) {
    size_t from = out->n, run = 0;
    const char *first = tv_spelling(&t->voc, ids[0]);
    const char *rest = strncmp(first, SPACE_SYMBOL, 3) == 0 ? first + 3 : NULL;
    int prev_special = 0;
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i < n && !st; i++) {
        if (!t->special[ids[i]]) {
            prev_special = 0;
            continue;
        }
        if (!prev_special && (st = spm_buf_put(out, " ", 1))) break;
        if (!(st = sp_decode(t, ids + run, i - run, run == 0 ? rest : NULL, out))) {
            const char *sp = tv_spelling(&t->voc, ids[i]);
            st = spm_buf_put(out, sp, tv_len(&t->voc, ids[i]));
        }
        prev_special = 1;
        run = i + 1;
    }
    if (!st) st = sp_decode(t, ids + run, n - run, run == 0 ? rest : NULL, out);
    if (!st) strip_python(out, from);
    return st;
}

/* transformers' PreTrainedTokenizer._decode: sentinels and the texts between
 * them (tokens_to_string) joined by single spaces. */
static encdec_status decode_slow(const spm_tok *t, const int *ids, int n, int skip, spm_buf *out) {
    int *kept = malloc(((size_t)n + 1) * sizeof *kept);
    if (!kept) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: decoding %d ids", n);
    size_t nk = 0, run = 0;
    int parts = 0;
    for (int i = 0; i < n; i++)
        if (!(skip && t->special[ids[i]])) kept[nk++] = ids[i];
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i <= nk && !st; i++) {
        int sentinel = i < nk && t->type[kept[i]] == SPM_ADDED;
        if (i < nk && !sentinel) continue;
        if (run < i) {          /* the text before a sentinel is dropped when empty */
            size_t mark = out->n;
            if (parts && (st = spm_buf_put(out, " ", 1))) break;
            if ((st = tokens_to_string(t, kept + run, i - run, out))) break;
            if (i < nk && out->n == mark + (parts ? 1 : 0)) out->p[out->n = mark] = 0;
            else parts++;
        }
        if (sentinel) {
            if (parts && (st = spm_buf_put(out, " ", 1))) break;
            st = spm_buf_put(out, tv_spelling(&t->voc, kept[i]), tv_len(&t->voc, kept[i]));
            parts++;
        }
        run = i + 1;
    }
    free(kept);
    return st;
}

/* ---- tokenizers' decoder chain ---------------------------------------------------- */

typedef struct {
    spm_buf text;       /* the tokens, one after the other */
    size_t *end;        /* [n] end offsets */
    size_t n, cap;
} toklist;

static encdec_status tl_push(toklist *l, const char *s, size_t n) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        size_t *e = realloc(l->end, cap * sizeof *e);
        if (!e) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: decoding");
        l->end = e;
        l->cap = cap;
    }
    encdec_status st = spm_buf_put(&l->text, s, n);
    if (!st) l->end[l->n++] = l->text.n;
    return st;
}

static const char *tl_get(const toklist *l, size_t i, size_t *n) {
    size_t a = i ? l->end[i - 1] : 0;
    *n = l->end[i] - a;
    return l->text.p + a;
}

/* A token spelled <0xNN> (either case) -> NN, else -1. */
static int byte_token(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static encdec_status flush_bytes(toklist *out, const uint8_t *b, size_t nb) {
    size_t at = 0;
    while (at < nb) {
        uint32_t cp;
        int k = spm_utf8_next(b + at, nb - at, &cp);
        if (k <= 0) break;
        at += (size_t)k;
    }
    if (at == nb) return tl_push(out, (const char *)b, nb);
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i < nb && !st; i++) st = tl_push(out, REPLACEMENT, 3);
    return st;
}

static encdec_status byte_fallback(const toklist *in, toklist *out) {
    spm_buf bytes = {0};
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i <= in->n && !st; i++) {
        size_t n = 0;
        const char *s = i < in->n ? tl_get(in, i, &n) : NULL;
        int b = s ? byte_token(s, n) : -1;
        if (b >= 0) {
            uint8_t c = (uint8_t)b;
            st = spm_buf_put(&bytes, &c, 1);
            continue;
        }
        if (bytes.n) st = flush_bytes(out, (const uint8_t *)bytes.p, bytes.n);
        bytes.n = 0;
        if (s && !st) st = tl_push(out, s, n);
    }
    free(bytes.p);
    return st;
}

/* Replaces pat by rep in each token; Metaspace is this with rep " ", and in the
 * first token with rep "" when it prepends. */
static encdec_status replace_each(const toklist *in, toklist *out, const char *pat, const char *rep,
                                  int first_empty) {
    spm_buf tmp = {0};
    size_t pn = strlen(pat), rn = strlen(rep);
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i < in->n && !st; i++) {
        size_t n;
        const char *s = tl_get(in, i, &n);
        tmp.n = 0;
        st = spm_buf_put(&tmp, "", 0);
        for (size_t k = 0; k < n && !st;) {
            if (pn && n - k >= pn && memcmp(s + k, pat, pn) == 0) {
                st = spm_buf_put(&tmp, rep, i == 0 && first_empty ? 0 : rn);
                k += pn;
            } else {
                st = spm_buf_put(&tmp, s + k++, 1);
            }
        }
        if (!st) st = tl_push(out, tmp.p, tmp.n);
    }
    free(tmp.p);
    return st;
}

/* Strip: up to start leading and stop trailing copies of one character. */
static encdec_status strip_each(const toklist *in, toklist *out, uint32_t c, int start, int stop) {
    char enc[4];
    size_t cl = spm_utf8_put(enc, c);
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i < in->n && !st; i++) {
        size_t n;
        const char *s = tl_get(in, i, &n);
        for (int k = 0; k < start && n >= cl && memcmp(s, enc, cl) == 0; k++) { s += cl; n -= cl; }
        for (int k = 0; k < stop && n >= cl && memcmp(s + n - cl, enc, cl) == 0; k++) n -= cl;
        st = tl_push(out, s, n);
    }
    return st;
}

static encdec_status decode_fast(const spm_tok *t, const int *ids, int n, int skip, spm_buf *out) {
    toklist a = {0}, b = {0};
    encdec_status st = ENCDEC_OK;
    for (int i = 0; i < n && !st; i++)
        if (!(skip && t->special[ids[i]])) st = tl_push(&a, tv_spelling(&t->voc, ids[i]), tv_len(&t->voc, ids[i]));
    for (int k = 0; k < t->n_dec && !st; k++) {
        const spm_dec_step *d = &t->dec[k];
        b.n = b.text.n = 0;
        switch (d->kind) {
        case SPM_D_METASPACE: st = replace_each(&a, &b, d->pattern, " ", d->prepend); break;
        case SPM_D_REPLACE: st = replace_each(&a, &b, d->pattern, d->content, 0); break;
        case SPM_D_BYTEFALLBACK: st = byte_fallback(&a, &b); break;
        case SPM_D_STRIP: st = strip_each(&a, &b, d->strip_cp, d->start, d->stop); break;
        default:                /* Fuse */
            st = a.n ? tl_push(&b, a.text.p, a.text.n) : ENCDEC_OK;
            break;
        }
        toklist swap = a;
        a = b;
        b = swap;
    }
    /* without a decoder, `tokenizers` joins the tokens with spaces */
    for (size_t i = 0; i < a.n && !st; i++) {
        size_t len;
        const char *s = tl_get(&a, i, &len);
        if (i && !t->has_decoder) st = spm_buf_put(out, " ", 1);
        if (!st) st = spm_buf_put(out, s, len);
    }
    free(a.text.p);
    free(a.end);
    free(b.text.p);
    free(b.end);
    return st;
}

encdec_status spm_decode(const spm_tok *t, const int *ids, int n, int skip_special, char **text) {
    if (!text) return ed_fail(ENCDEC_ERR_ARG, "spm_decode: NULL output");
    *text = NULL;
    if (!t || n < 0 || (!ids && n)) return ed_fail(ENCDEC_ERR_ARG, "spm_decode: NULL tokenizer or ids");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->voc.n)
            return ed_fail(ENCDEC_ERR_ARG, "spm_decode: id %d at position %d is out of range [0, %d)",
                           ids[i], i, t->voc.n);
    spm_buf out = {0};
    encdec_status st = spm_buf_put(&out, "", 0);
    if (!st) st = t->style == SPM_SLOW ? decode_slow(t, ids, n, skip_special, &out)
                                       : decode_fast(t, ids, n, skip_special, &out);
    if (st) {
        free(out.p);
        return st;
    }
    *text = out.p;
    return ENCDEC_OK;
}
