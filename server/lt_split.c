/* lt_split.c - a /translate text cut into sentences (lt_split.h). */
#include "lt_split.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* A terminator at s[0, n): its bytes, *cjk set for 。！？; 0: none. */
static size_t terminator(const char *s, size_t n, int *cjk) {
    *cjk = 0;
    if (n >= 1 && (s[0] == '.' || s[0] == '!' || s[0] == '?')) return 1;
    if (n >= 3 && !memcmp(s, "\xe2\x80\xa6", 3)) return 3;   /* … */
    if (n >= 3 && (!memcmp(s, "\xe3\x80\x82", 3) || !memcmp(s, "\xef\xbc\x81", 3) ||
                   !memcmp(s, "\xef\xbc\x9f", 3))) {         /* 。！？ */
        *cjk = 1;
        return 3;
    }
    return 0;
}

/* A closing quote or bracket at s[0, n): its bytes, else 0. */
static size_t closer(const char *s, size_t n) {
    if (n >= 1 && strchr("\"')]", s[0]) && s[0]) return 1;
    static const char *const multi[] = {"\xc2\xbb", "\xe2\x80\x9d", "\xe2\x80\x99", "\xe3\x80\x8d",
                                        "\xe3\x80\x8f"};   /* » ” ’ 」 』 */
    for (size_t i = 0; i < sizeof multi / sizeof *multi; i++) {
        size_t k = strlen(multi[i]);
        if (n >= k && !memcmp(s, multi[i], k)) return k;
    }
    return 0;
}

/* The word before s[at] (back to white space) is an abbreviation a '.'
 * ends: one letter, a number of one or two digits, one holding a '.', or
 * one of the list. */
static int abbreviation(const char *s, size_t from, size_t at) {
    static const char *const list[] = {"Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Jr", "Sr", "vs", "etc",
                                       "Inc", "Ltd", "Co", "No", "Nr", "Fig"};
    size_t w = at;
    while (w > from && !is_space((unsigned char)s[w - 1])) w--;
    while (w < at && strchr("(\"'[", s[w])) w++;
    size_t n = at - w;
    if (n == 1 && ((s[w] | 32) >= 'a' && (s[w] | 32) <= 'z')) return 1;
    if (n >= 1 && n <= 2 && s[w] >= '0' && s[w] <= '9' && s[at - 1] >= '0' && s[at - 1] <= '9')
        return 1;   /* an ordinal ("am 3. Oktober"): a missed cut costs less than a wrong one */
    if (n > 0 && memchr(s + w, '.', n)) return 1;
    for (size_t i = 0; i < sizeof list / sizeof *list; i++)
        if (strlen(list[i]) == n && !memcmp(s + w, list[i], n)) return 1;
    return 0;
}

/* Where the sentence that starts at a ends (line [a, b)): past its
 * terminators and closers, or b. */
static size_t sentence_end(const char *s, size_t a, size_t b) {
    for (size_t i = a; i < b;) {
        int cjk, any_cjk = 0, only_dots = 1;
        size_t k = i, t;
        while (k < b && (t = terminator(s + k, b - k, &cjk)) > 0) {
            any_cjk |= cjk;
            only_dots &= s[k] == '.' && t == 1;
            k += t;
        }
        if (k == i) {
            i++;
            continue;
        }
        size_t run = i, run_len = k - i;
        while (k < b && (t = closer(s + k, b - k)) > 0) k += t;
        if (any_cjk || k == b) return k;
        if (!is_space((unsigned char)s[k])) {   /* 3.14, e.g.x, "a.b": within a sentence */
            i = k;
            continue;
        }
        size_t next = k;
        while (next < b && is_space((unsigned char)s[next])) next++;
        if (next == b) return k;
        int lower = s[next] >= 'a' && s[next] <= 'z';
        if (!lower && !(only_dots && run_len == 1 && k == run + 1 && abbreviation(s, a, run))) return k;
        i = k;
    }
    return b;
}

/* 1 when s[0, n) holds a letter: an ASCII one, or a character beyond
 * Latin-1's symbols that is no punctuation, symbol or emoji (U+2000-2BFF,
 * U+3000-303F, U+FF00-FF20, from U+1F000). */
static int has_letter(const char *s, size_t n) {
    for (size_t i = 0, k; i < n; i += k) {
        uint32_t c = 0xFFFD;
        int len = srv_utf8_next(s + i, n - i, &c);
        k = len ? (size_t)len : 1;   /* (a byte of no character: no letter) */
        if (c < 0x80 ? ((c | 32) >= 'a' && (c | 32) <= 'z')
                     : c >= 0xC0 && c != 0xD7 && c != 0xF7 && c != 0xFFFD && !(c >= 0x2000 && c <= 0x2BFF) &&
                           !(c >= 0x3000 && c <= 0x303F) && !(c >= 0xFF00 && c <= 0xFF20) && c < 0x1F000)
            return 1;
    }
    return 0;
}

static int put(srv_sentences *o, size_t off, size_t len, int max) {
    if (o->n >= max) return -2;
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 16;
        srv_span *p = realloc(o->s, sizeof *p * (size_t)cap);
        if (!p) return -1;
        o->s = p;
        o->cap = cap;
    }
    o->s[o->n++] = (srv_span){off, len};
    return 0;
}

int srv_lt_sentences(const char *text, int max, srv_sentences *out) {
    memset(out, 0, sizeof *out);
    out->text = text;
    size_t n = strlen(text);
    for (size_t line = 0; line < n;) {
        const char *nl = memchr(text + line, '\n', n - line);
        size_t b = nl ? (size_t)(nl - text) : n;
        for (size_t a = line; a < b;) {
            while (a < b && is_space((unsigned char)text[a])) a++;
            if (a >= b) break;
            size_t e = sentence_end(text, a, b);
            if (has_letter(text + a, e - a)) {
                int st = put(out, a, e - a, max);
                if (st) return st;
            }
            a = e;
        }
        line = b + 1;
    }
    return 0;
}

char *srv_lt_rejoin(const srv_sentences *ss, const char *const *out) {
    size_t n = strlen(ss->text), cap = n + 1;
    for (int i = 0; i < ss->n; i++) cap += strlen(out[i]);
    char *r = malloc(cap), *w = r;
    if (!r) return NULL;
    size_t at = 0;
    for (int i = 0; i < ss->n; i++) {
        memcpy(w, ss->text + at, ss->s[i].off - at);
        w += ss->s[i].off - at;
        size_t k = strlen(out[i]);
        memcpy(w, out[i], k);
        w += k;
        at = ss->s[i].off + ss->s[i].len;
    }
    memcpy(w, ss->text + at, n - at + 1);
    return r;
}

void srv_sentences_free(srv_sentences *ss) {
    free(ss->s);
    memset(ss, 0, sizeof *ss);
}
