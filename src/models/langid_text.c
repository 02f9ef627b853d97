/* langid_text.c - langdetect's text rules (langid.h): the text it detects
 * on (its regular expressions for URLs and e-mail addresses as scanners),
 * its character normalisation by Unicode block, its n-grams. */
#include "models/langid.h"
#include "base/err.h"
#include "base/utf8.h"
#include "tok/unicode_tables.h"

#include <stdlib.h>
#include <string.h>

#define MAX_TEXT 10000   /* langdetect's max_text_length */

typedef struct {
    uint32_t *v;
    size_t n;
} cps;

static int is_alnum(uint32_t c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
static int in_set(uint32_t c, const char *extra) { return is_alnum(c) || (c && c < 128 && strchr(extra, (int)c)); }
static int url_char(uint32_t c) { return in_set(c, "-_.?&~;+=/#"); }
static int local_char(uint32_t c) { return in_set(c, "-_."); }
static int domain_char(uint32_t c) { return in_set(c, "-_"); }

/* The end of a match of https?://[-_.?&~;+=/#0-9A-Za-z]{1,2076} at t[i], or 0. */
static size_t url_at(const uint32_t *t, size_t n, size_t i) {
    static const char head[] = "http";
    for (int k = 0; k < 4; k++)
        if (i + (size_t)k >= n || t[i + (size_t)k] != (uint32_t)head[k]) return 0;
    size_t j = i + 4;
    if (j < n && t[j] == 's') j++;
    if (j + 3 > n || t[j] != ':' || t[j + 1] != '/' || t[j + 2] != '/') return 0;
    j += 3;
    size_t e = j;
    while (e < n && e - j < 2076 && url_char(t[e])) e++;
    return e > j ? e : 0;
}

/* The end of a match of [-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255}
 * at t[i] (Python's backtracking: the first part is all of a run up to '@',
 * the second gives a character back to the third when that one would be
 * empty), or 0. run_end[i]: the first index >= i not in the first set. */
static size_t mail_at(const uint32_t *t, size_t n, size_t i, const size_t *run_end) {
    size_t at = run_end[i];
    if (at == i || at - i > 64 || at >= n || t[at] != '@') return 0;
    size_t d = at + 1, a = 0;
    while (d + a < n && a < 255 && domain_char(t[d + a])) a++;
    if (!a) return 0;
    size_t b = 0;
    while (d + a + b < n && b < 255 && local_char(t[d + a + b])) b++;
    if (b) return d + a + b;
    return a >= 2 ? d + a : 0;
}

/* re.sub(pattern, ' ', text) for one of the two scanners; 0 when out of
 * memory. */
static int replace_matches(cps *t, int mail) {
    size_t *run_end = NULL;
    if (mail) {
        run_end = malloc((t->n + 1) * sizeof *run_end);
        if (!run_end) return 0;
        run_end[t->n] = t->n;
        for (size_t i = t->n; i-- > 0;) run_end[i] = local_char(t->v[i]) ? run_end[i + 1] : i;
    }
    size_t w = 0;
    for (size_t i = 0; i < t->n;) {
        size_t e = mail ? mail_at(t->v, t->n, i, run_end) : url_at(t->v, t->n, i);
        if (e) {
            t->v[w++] = ' ';
            i = e;
        } else {
            t->v[w++] = t->v[i++];
        }
    }
    t->n = w;
    free(run_end);
    return 1;
}

static int index_of(const uint32_t *set, int n, uint32_t c) {
    for (int i = 0; i < n; i++)
        if (set[i] == c) return i;
    return -1;
}

/* NGram.normalize_vi: a letter followed by a combining mark, as one. */
static void compose_vi(const langid_model *m, cps *t) {
    size_t w = 0;
    for (size_t i = 0; i < t->n; i++) {
        int a = index_of(m->vi_base, m->n_vi_base, t->v[i]);
        int k = a >= 0 && i + 1 < t->n ? index_of(m->vi_mark, m->n_vi_mark, t->v[i + 1]) : -1;
        if (k >= 0) {
            t->v[w++] = m->vi_to[k][a];
            i++;
        } else {
            t->v[w++] = t->v[i];
        }
    }
    t->n = w;
}

/* Detector.append (the first 10,000 characters, a space after a space
 * dropped), then cleaning_text. */
static void keep_and_clean(cps *t) {
    size_t w = 0, lim = t->n < MAX_TEXT ? t->n : MAX_TEXT;
    uint32_t pre = 0;
    for (size_t i = 0; i < lim; i++) {
        uint32_t c = t->v[i];
        if (c != ' ' || pre != ' ') t->v[w++] = c;
        pre = c;
    }
    t->n = w;
    size_t latin = 0, other = 0;
    for (size_t i = 0; i < t->n; i++) {
        uint32_t c = t->v[i];
        if (c >= 'A' && c <= 'z') latin++;
        else if (c >= 0x300 && !(c >= 0x1E00 && c <= 0x1EFF)) other++;
    }
    if (latin * 2 >= other) return;
    w = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i] < 'A' || t->v[i] > 'z') t->v[w++] = t->v[i];
    t->n = w;
}

encdec_status langid_text(const langid_model *m, const char *text, size_t len, uint32_t **out,
                          size_t *n) {
    *out = NULL;
    *n = 0;
    cps t = {malloc((len + 1) * sizeof(uint32_t)), 0};
    if (!t.v) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    for (size_t at = 0; at < len;) {
        uint32_t cp;
        int k = ed_utf8_next((const uint8_t *)text + at, len - at, &cp);
        if (k <= 0) {
            free(t.v);
            return ed_fail(ENCDEC_ERR_ARG, "the text is not UTF-8 (byte %zu)", at);
        }
        t.v[t.n++] = cp;
        at += (size_t)k;
    }
    if (!replace_matches(&t, 0) || !replace_matches(&t, 1)) {
        free(t.v);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    }
    compose_vi(m, &t);
    keep_and_clean(&t);
    *out = t.v;
    *n = t.n;
    return ENCDEC_OK;
}

/* ---- n-grams ------------------------------------------------------------------------------ */

static uint32_t cjk_class(const langid_model *m, uint32_t c) {
    int lo = 0, hi = m->n_cjk;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (c < m->cjk_from[mid]) hi = mid;
        else if (c > m->cjk_from[mid]) lo = mid + 1;
        else return m->cjk_to[mid];
    }
    return c;
}

/* NGram.normalize: a character by its Unicode block (langdetect's table). */
static uint32_t normalize(const langid_model *m, uint32_t c) {
    if (c <= 0x7F) return (c < 'A' || (c > 'Z' && c < 'a') || c > 'z') ? ' ' : c;
    if (c <= 0xFF) return index_of(m->latin1_excluded, m->n_latin1_excluded, c) >= 0 ? ' ' : c;
    if (c >= 0x180 && c <= 0x24F) return c == 0x219 ? 0x15F : c == 0x21B ? 0x163 : c;   /* Romanian */
    if (c >= 0x2000 && c <= 0x206F) return ' ';                          /* General Punctuation */
    if (c >= 0x600 && c <= 0x6FF) return c == 0x6CC ? 0x64A : c;          /* Farsi yeh */
    if (c >= 0x1E00 && c <= 0x1EFF) return c >= 0x1EA0 ? 0x1EC3 : c;     /* Latin Ext. Additional */
    if (c >= 0x3040 && c <= 0x309F) return 0x3042;                       /* Hiragana */
    if (c >= 0x30A0 && c <= 0x30FF) return 0x30A2;                       /* Katakana */
    if ((c >= 0x3100 && c <= 0x312F) || (c >= 0x31A0 && c <= 0x31BF)) return 0x3105;   /* Bopomofo */
    if (c >= 0x4E00 && c <= 0x9FFF) return cjk_class(m, c);               /* CJK ideographs */
    if (c >= 0xAC00 && c <= 0xD7AF) return 0xAC00;                       /* Hangul syllables */
    return c;
}

encdec_status langid_ngrams(const langid_model *m, const uint32_t *t, size_t n, uint32_t **ids,
                            size_t *n_ids) {
    *ids = malloc((3 * n + 1) * sizeof **ids);
    *n_ids = 0;
    if (!*ids) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    uint32_t g[3] = {' '};
    int len = 1, capital = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = normalize(m, t[i]), last = g[len - 1];
        if (last == ' ') {
            g[0] = ' ';
            len = 1;
            capital = 0;
            if (c == ' ') continue;
        } else if (len == 3) {
            g[0] = g[1];
            g[1] = g[2];
            len = 2;
        }
        g[len++] = c;
        if (!uc_is_upper(c)) capital = 0;
        else if (uc_is_upper(last)) capital = 1;   /* (an upper after a lower keeps the state) */
        if (capital) continue;
        for (int k = 1; k <= 3 && k <= len; k++) {
            if (k == 1 && g[len - 1] == ' ') continue;
            uint32_t s = langid_find(m, langid_key(g + len - k, k));
            if (s != UINT32_MAX) (*ids)[(*n_ids)++] = s;
        }
    }
    return ENCDEC_OK;
}
