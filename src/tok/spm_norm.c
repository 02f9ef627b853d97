/* spm_norm.c - text normalisation before segmentation, in the two ways the
 * references do it:
 *
 *   sentencepiece (spm_normalize_slow): at each position the LONGEST prefix found
 *   in the precompiled charsmap is replaced (no match copies one character);
 *   leading, trailing and repeated spaces are dropped; a space ("dummy prefix")
 *   starts the text; spaces become U+2581.
 *
 *   tokenizers (spm_normalize_fast): the tokenizer.json steps in order. Its
 *   Precompiled step walks extended grapheme clusters: a cluster shorter than
 *   6 bytes is replaced as a whole by the entry of its SHORTEST prefix found in
 *   the map (so "Ａ" + U+0301 becomes "A", dropping the accent), otherwise each
 *   character of the cluster is looked up alone. Strip uses Rust's White_Space.
 *
 * The charsmap is a darts-clone double array (uint32 units: bit 8 has_leaf,
 * bits 0-7 and 31 the label, bits 10-31 the offset, shifted by 8 when bit 9 is
 * set; a leaf unit's low 31 bits are the value), preceded in the file by its
 * size in bytes (uint32 LE) and followed by the NUL-terminated replacement
 * strings the values point into. Every unit index is bounds-checked.
 */
#include "tok/spm_internal.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 and whitespace ------------------------------------------------------- */


int spm_is_ws_rust(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
           cp == 0x205f || cp == 0x3000;
}

int spm_is_ws_python(uint32_t cp) {
    return spm_is_ws_rust(cp) || (cp >= 0x1c && cp <= 0x1f);
}

/* Length of the (valid) UTF-8 character at s. */
static size_t char_len(const char *s, size_t n) {
    uint32_t cp;
    int k = spm_utf8_next((const uint8_t *)s, n, &cp);
    return k > 0 ? (size_t)k : 1;
}

/* ---- the charsmap ------------------------------------------------------------------ */

encdec_status spm_charsmap_init(spm_charsmap *m, const uint8_t *blob, size_t n, const char *file) {
    memset(m, 0, sizeof *m);
    if (n < 4) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: precompiled_charsmap is shorter than its header", file);
    uint32_t trie = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 | (uint32_t)blob[2] << 16 | (uint32_t)blob[3] << 24;
    if (trie % 4 || trie > n - 4)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: precompiled_charsmap: trie size %u does not fit in %zu bytes",
                       file, trie, n);
    m->n_units = trie / 4;
    m->n_norm = n - 4 - trie;
    m->units = malloc(m->n_units * sizeof *m->units + 1);
    m->norm = malloc(m->n_norm + 1);
    if (!m->units || !m->norm) return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory for the charsmap", file);
    for (size_t i = 0; i < m->n_units; i++) {
        const uint8_t *u = blob + 4 + 4 * i;
        m->units[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    memcpy(m->norm, blob + 4 + trie, m->n_norm);
    m->norm[m->n_norm] = 0;
    return ENCDEC_OK;
}

void spm_charsmap_free(spm_charsmap *m) {
    free(m->units);
    free(m->norm);
    memset(m, 0, sizeof *m);
}

static uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

/* The longest (shortest when shortest) prefix of s[0, n) that is a key of the
 * map: returns its length (0 = none) and points *rep at its replacement. */
static size_t cmap_match(const spm_charsmap *m, const char *s, size_t n, int shortest, const char **rep) {
    if (!m->n_units) return 0;
    size_t best = 0, pos = unit_offset(m->units[0]);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == 0) break;                  /* keys never hold NUL */
        pos ^= c;
        if (pos >= m->n_units) break;
        uint32_t u = m->units[pos];
        if ((u & 0x800000ffu) != c) break;  /* label */
        pos ^= unit_offset(u);
        if ((u >> 8) & 1) {                 /* has_leaf: the value unit is at pos */
            if (pos >= m->n_units) break;
            uint32_t v = m->units[pos] & 0x7fffffffu;
            if (v < m->n_norm) {
                best = i + 1;
                *rep = m->norm + v;
                if (shortest) break;
            }
        }
    }
    return best;
}

/* ---- sentencepiece ------------------------------------------------------------------ */

/* sentencepiece's normalize_prefix: a user-defined piece is kept as is (longest
 * first), else the longest charsmap entry, else one character. Returns the
 * bytes consumed; *rep, *rep_len the replacement. */
static size_t slow_prefix(const spm_tok *t, const char *s, size_t n, const char **rep, size_t *rep_len) {
    for (size_t k = t->user_max_len < n ? t->user_max_len : n; t->n_user && k > 0; k--) {
        int id = spm_lookup(t, s, k);
        if (id >= 0 && t->type[id] == SPM_USER_DEFINED) {
            *rep = s;
            *rep_len = k;
            return k;
        }
    }
    size_t k = cmap_match(&t->cmap, s, n, 0, rep);
    if (k) {
        *rep_len = strlen(*rep);
        return k;
    }
    *rep = s;
    *rep_len = char_len(s, n);
    return *rep_len;
}

#define SPACE_SYMBOL "\xe2\x96\x81"   /* U+2581 */

encdec_status spm_normalize_slow(const spm_tok *t, const char *s, size_t n, spm_buf *out) {
    out->n = 0;
    encdec_status st = spm_buf_put(out, "", 0);
    const char *rep;
    size_t rep_len, at = 0;
    if (st) return st;
    while (t->remove_extra_ws && at < n) {
        size_t k = slow_prefix(t, s + at, n - at, &rep, &rep_len);
        if (rep_len != 1 || rep[0] != ' ') break;
        at += k;
    }
    if (at == n) return ENCDEC_OK;
    const char *space = t->escape_ws ? SPACE_SYMBOL : " ";
    size_t space_len = strlen(space);
    if (t->add_dummy_prefix && (st = spm_buf_put(out, space, space_len))) return st;
    int prev_space = t->remove_extra_ws;
    while (at < n) {
        size_t k = slow_prefix(t, s + at, n - at, &rep, &rep_len);
        if (t->remove_extra_ws && prev_space)
            while (rep_len && rep[0] == ' ') { rep++; rep_len--; }
        if (rep_len) {
            for (size_t i = 0; i < rep_len && !st; i++)
                st = rep[i] == ' ' && t->escape_ws ? spm_buf_put(out, SPACE_SYMBOL, 3) : spm_buf_put(out, rep + i, 1);
            if (st) return st;
            prev_space = rep[rep_len - 1] == ' ';
        }
        at += k;
        if (!t->remove_extra_ws) prev_space = 0;
    }
    while (t->remove_extra_ws && out->n >= space_len && memcmp(out->p + out->n - space_len, space, space_len) == 0)
        out->n -= space_len;
    out->p[out->n] = 0;
    return ENCDEC_OK;
}

/* ---- tokenizers -------------------------------------------------------------------- */

/* The Precompiled normalizer of `tokenizers` (see the top of the file). */
static encdec_status precompiled(const spm_charsmap *m, const char *s, size_t n, spm_buf *out) {
    encdec_status st = ENCDEC_OK;
    size_t at = 0;
    while (at < n && !st) {
        size_t end = at + spm_grapheme_end((const uint8_t *)s + at, n - at);
        const char *rep;
        if (end - at < 6 && cmap_match(m, s + at, end - at, 1, &rep)) {
            st = spm_buf_put(out, rep, strlen(rep));
            at = end;
            continue;
        }
        while (at < end && !st) {
            size_t k = char_len(s + at, end - at);
            st = cmap_match(m, s + at, k, 1, &rep) ? spm_buf_put(out, rep, strlen(rep)) : spm_buf_put(out, s + at, k);
            at += k;
        }
    }
    return st;
}

/* Strip: removes White_Space at the chosen ends. */
static encdec_status strip(const char *s, size_t n, int left, int right, spm_buf *out) {
    size_t a = 0, b = n, at = 0, last_end = 0, first = n;
    while (at < n) {
        uint32_t cp;
        int k = spm_utf8_next((const uint8_t *)s + at, n - at, &cp);
        size_t len = k > 0 ? (size_t)k : 1;
        if (k <= 0 || !spm_is_ws_rust(cp)) {
            if (first == n) first = at;
            last_end = at + len;
        }
        at += len;
    }
    if (left) a = first;
    if (right) b = last_end > a ? last_end : a;
    return spm_buf_put(out, s + a, b - a);
}

/* Replace: every occurrence of a literal pattern, left to right. */
static encdec_status replace(const char *s, size_t n, const char *pat, const char *content, spm_buf *out) {
    size_t pn = strlen(pat), cn = strlen(content), at = 0;
    encdec_status st = ENCDEC_OK;
    while (at < n && !st) {
        if (pn && n - at >= pn && memcmp(s + at, pat, pn) == 0) {
            st = spm_buf_put(out, content, cn);
            at += pn;
        } else {
            st = spm_buf_put(out, s + at, 1);
            at++;
        }
    }
    return st;
}

/* Replace with the regex " {2,}": each run of two or more spaces. */
static encdec_status replace_spaces(const char *s, size_t n, const char *content, spm_buf *out) {
    size_t cn = strlen(content), at = 0;
    encdec_status st = ENCDEC_OK;
    while (at < n && !st) {
        size_t run = 0;
        while (at + run < n && s[at + run] == ' ') run++;
        if (run >= 2) {
            st = spm_buf_put(out, content, cn);
            at += run;
        } else {
            st = spm_buf_put(out, s + at, 1);
            at++;
        }
    }
    return st;
}

/* Whether the first character the step makes from s[0, n) is still aligned
 * with s[0] in tokenizers' offsets: a deletion at the start moves the
 * alignment on, except in Precompiled (which records its changes from offset 0). */
static int keeps_origin(const spm_norm_step *step, const char *s, size_t n) {
    uint32_t cp;
    switch (step->kind) {
    case SPM_N_PRECOMPILED: return 1;
    case SPM_N_STRIP: return !step->left || spm_utf8_next((const uint8_t *)s, n, &cp) <= 0 || !spm_is_ws_rust(cp);
    case SPM_N_REPLACE: return step->content[0] || strncmp(s, step->pattern, n) != 0 || n < strlen(step->pattern);
    default: return step->content[0] || n < 2 || s[0] != ' ' || s[1] != ' ';
    }
}

encdec_status spm_normalize_fast(const spm_tok *t, const char *s, size_t n, spm_buf *out, int *origin0) {
    spm_buf tmp = {0};
    out->n = 0;
    encdec_status st = spm_buf_put(out, s, n);
    *origin0 = 1;
    for (int i = 0; i < t->n_norm && !st; i++) {
        const spm_norm_step *step = &t->norm[i];
        if (out->n && !keeps_origin(step, out->p, out->n)) *origin0 = 0;
        tmp.n = 0;
        if ((st = spm_buf_put(&tmp, "", 0))) break;
        switch (step->kind) {
        case SPM_N_PRECOMPILED: st = precompiled(&t->cmap, out->p, out->n, &tmp); break;
        case SPM_N_STRIP: st = strip(out->p, out->n, step->left, step->right, &tmp); break;
        case SPM_N_REPLACE: st = replace(out->p, out->n, step->pattern, step->content, &tmp); break;
        default: st = replace_spaces(out->p, out->n, step->content, &tmp); break;
        }
        spm_buf swap = *out;
        *out = tmp;
        tmp = swap;
    }
    free(tmp.p);
    return st;
}
