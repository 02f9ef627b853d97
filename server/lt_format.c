/* lt_format.c - LibreTranslate's touches to a translation (lt_format.h),
 * over code points. */
#include "lt_format.h"
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RAW 0x80000000u   /* a byte that starts no valid UTF-8 character, kept as it was */

typedef struct {
    uint32_t *c;
    size_t n;
} cps;

static int decode(const char *s, cps *o) {
    size_t len = strlen(s);
    o->c = malloc(sizeof *o->c * (len + 1));
    o->n = 0;
    if (!o->c) return -1;
    for (size_t i = 0; i < len;) {
        uint32_t v;
        int k = srv_utf8_next(s + i, len - i, &v);
        if (!k) v = RAW | (unsigned char)s[i], k = 1;
        o->c[o->n++] = v;
        i += (size_t)k;
    }
    return 0;
}

static char *encode(const uint32_t *c, size_t n) {
    char *s = malloc(4 * n + 1), *w = s;
    if (!s) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (c[i] & RAW) *w++ = (char)(c[i] & 0xFF);
        else w += srv_utf8_put(w, c[i]);
    }
    *w = 0;
    return s;
}

/* Python's str.isspace. */
static int is_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* The other case of a Latin, Greek or Cyrillic letter: *lower / *upper its
 * forms, and 1 when c is a cased letter (lowercase: *is_lower). */
static int cased(uint32_t c, uint32_t *lower, uint32_t *upper, int *is_lower) {
    uint32_t lo = c, up = c;
    if (c >= 'A' && c <= 'Z') lo = c + 32;
    else if (c >= 'a' && c <= 'z') up = c - 32;
    else if (c >= 0xC0 && c <= 0xDE && c != 0xD7) lo = c + 32;
    else if (c >= 0xE0 && c <= 0xFE && c != 0xF7) up = c - 32;
    else if (c == 0xDF) up = c;   /* ß: lowercase, its upper two letters: kept */
    else if (c == 0xFF) up = 0x178;
    else if (c == 0x178) lo = 0xFF;
    else if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
        c & 1 ? (up = c - 1) : (lo = c + 1);
    else if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
        c & 1 ? (lo = c + 1) : (up = c - 1);
    else if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) lo = c + 32;
    else if (c >= 0x3B1 && c <= 0x3C9) up = c == 0x3C2 ? 0x3A3 : c - 32;
    else if (c >= 0x410 && c <= 0x42F) lo = c + 32;
    else if (c >= 0x430 && c <= 0x44F) up = c - 32;
    else if (c >= 0x400 && c <= 0x40F) lo = c + 80;
    else if (c >= 0x450 && c <= 0x45F) up = c - 80;
    else return 0;
    *lower = lo, *upper = up;
    *is_lower = lo == c && (up != c || c == 0xDF);
    return 1;
}

/* str.islower (want 1) / str.isupper (0): a cased letter, and all of them so. */
static int all_case(const cps *s, int want_lower) {
    int any = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t lo, up;
        int low;
        if (!cased(s->c[i], &lo, &up, &low)) continue;
        if (low != want_lower) return 0;
        any = 1;
    }
    return any;
}

static uint32_t to_case(uint32_t c, int lower) {
    uint32_t lo, up;
    int low;
    return cased(c, &lo, &up, &low) ? (lower ? lo : up) : c;
}

static int is_punct(uint32_t c) { return c == '!' || c == '?' || c == '.' || c == ',' || c == ';' || c == 0x3002; }

/* The words of t (split at white space): *n of them into w[] as [start, end). */
static size_t words_of(const cps *t, size_t (*w)[2], size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < t->n && n < cap;) {
        while (i < t->n && is_space(t->c[i])) i++;
        if (i >= t->n) break;
        size_t a = i;
        while (i < t->n && !is_space(t->c[i])) i++;
        w[n][0] = a, w[n][1] = i;
        n++;
    }
    return n;
}

static int same_word(const cps *t, const size_t *x, const size_t *y) {
    return x[1] - x[0] == y[1] - y[0] && !memcmp(t->c + x[0], t->c + y[0], sizeof *t->c * (x[1] - x[0]));
}

/* A one-word source's translation where a word comes twice as often as
 * there are distinct words (the "salad"): its first word alone. */
static void salad(cps *t) {
    size_t (*w)[2] = malloc(sizeof *w * (t->n + 1));
    if (!w) return;
    size_t n = words_of(t, w, t->n + 1), distinct = 0, most = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0, earlier = 0;
        for (size_t j = 0; j < n; j++)
            if (same_word(t, w[i], w[j])) k++, earlier |= j < i;
        distinct += !earlier;
        if (k > most) most = k;
    }
    if (n && most >= 2 * distinct) {
        memmove(t->c, t->c + w[0][0], sizeof *t->c * (w[0][1] - w[0][0]));
        t->n = w[0][1] - w[0][0];
    }
    free(w);
}

char *srv_lt_format(const char *source, const char *translation) {
    cps s = {0}, t = {0};
    char *out = NULL;
    if (decode(source, &s) || decode(translation, &t)) goto done;
    size_t a = 0, b = s.n;
    while (a < b && is_space(s.c[a])) a++;
    while (b > a && is_space(s.c[b - 1])) b--;
    memmove(s.c, s.c + a, sizeof *s.c * (b - a));
    s.n = b - a;
    if (!s.n || !t.n) {
        out = encode(s.c, s.n);
        goto done;
    }
    uint32_t sl = s.c[s.n - 1], tl = t.c[t.n - 1];
    if (is_punct(sl) && tl != sl) {
        if (is_punct(tl)) t.n--;
        t.c[t.n++] = sl;   /* (room: the decode's len + 1) */
    } else if (!is_punct(sl) && is_punct(tl)) {
        t.n--;
    }
    int space = 0;
    for (size_t i = 0; i < s.n; i++) space |= s.c[i] == ' ';
    int tspace = 0;
    for (size_t i = 0; i < t.n; i++) tspace |= t.c[i] == ' ';
    if (s.n < 20 && !space && tspace) salad(&t);
    int lower = all_case(&s, 1), upper = !lower && all_case(&s, 0);
    if (lower || upper) {
        for (size_t i = 0; i < t.n; i++) t.c[i] = to_case(t.c[i], lower);
    } else if (!t.n) {
        out = encode(s.c, s.n);
        goto done;
    } else {
        uint32_t lo, up;
        int low;
        if (cased(s.c[0], &lo, &up, &low)) t.c[0] = to_case(t.c[0], low);
    }
    out = encode(t.c, t.n);
done:
    free(s.c);
    free(t.c);
    return out;
}
