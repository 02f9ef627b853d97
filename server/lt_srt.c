/* lt_srt.c - SubRip cues (lt_srt.h) and textwrap.fill (lt_doc.h). */
#include "lt_doc.h"
#include "lt_srt.h"
#include "utf8.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growing string ---- */

typedef struct {
    char *b;
    size_t len, cap;
    int bad;
} sbuf;

static void sput(sbuf *s, const char *p, size_t n) {
    if (s->bad) return;
    if (s->len + n + 1 > s->cap) {
        size_t c = s->cap ? s->cap : 256;
        while (c < s->len + n + 1) c *= 2;
        char *q = realloc(s->b, c);
        if (!q) {
            s->bad = 1;
            return;
        }
        s->b = q;
        s->cap = c;
    }
    memcpy(s->b + s->len, p, n);
    s->len += n;
    s->b[s->len] = 0;
}

static void sputs(sbuf *s, const char *p) { sput(s, p, strlen(p)); }

static char *sdone(sbuf *s) {
    if (!s->bad && !s->b) sput(s, "", 0);
    if (s->bad) {
        free(s->b);
        return NULL;
    }
    return s->b;
}

/* ---- textwrap.fill ---- */

/* textwrap's white space: ASCII's six, nothing else. */
static int tw_space(uint32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
/* Python's [^\d\W] (a letter or '_'), beyond ASCII roughly: what is not
 * Latin-1's or the general and CJK punctuation blocks' signs. */
static int tw_letter(uint32_t c) {
    if (c < 0x80) return isalpha((int)c) || c == '_';
    if (c < 0xC0) return c == 0xAA || c == 0xB5 || c == 0xBA;
    if (c == 0xD7 || c == 0xF7) return 0;
    if (c >= 0x2000 && c <= 0x2BFF) return 0;
    if (c >= 0x3000 && c <= 0x303F) return 0;
    if (c >= 0xFF00 && c <= 0xFF0F) return 0;
    return 1;
}
static int tw_word(uint32_t c) { return tw_letter(c) || (c < 0x80 && isdigit((int)c)); }
static int tw_wpunct(uint32_t c) { return tw_word(c) || (c < 0x80 && strchr("!\"'&.,?", (int)c) && c); }

/* A run of two or more '-' from t[i], then a word character: its length, else 0. */
static size_t dashes(const uint32_t *t, size_t i, size_t n) {
    size_t j = i;
    while (j < n && t[j] == '-') j++;
    return j - i >= 2 && j < n && tw_word(t[j]) ? j - i : 0;
}

/* The end of the chunk that starts at t[i] (textwrap's wordsep_re). */
static size_t chunk_end(const uint32_t *t, size_t i, size_t n) {
    if (tw_space(t[i])) {
        while (i < n && tw_space(t[i])) i++;
        return i;
    }
    size_t d = i > 0 && tw_wpunct(t[i - 1]) ? dashes(t, i, n) : 0;
    if (d) return i + d;   /* an em-dash between words */
    for (size_t j = i + 1;; j++) {
        if (j < n && t[j] == '-') {   /* a hyphenated word: after "xx-" or "x-x-", before "x[-]x" */
            int behind = (j >= 2 && tw_letter(t[j - 1]) && tw_letter(t[j - 2])) ||
                         (j >= 3 && tw_letter(t[j - 1]) && t[j - 2] == '-' && tw_letter(t[j - 3]));
            int ahead = j + 2 < n && tw_letter(t[j + 1]) &&
                        (tw_letter(t[j + 2]) || (t[j + 2] == '-' && j + 3 < n && tw_letter(t[j + 3])));
            if (behind && ahead) return j + 1;
        }
        if (j >= n || tw_space(t[j])) return j;
        if (tw_wpunct(t[j - 1]) && dashes(t, j, n)) return j;
    }
}

typedef struct {
    size_t a, b;   /* code points [a, b) */
} span;

static void put_cps(sbuf *s, const uint32_t *t, size_t a, size_t b) {
    char u[4];
    for (size_t i = a; i < b; i++) sput(s, u, srv_utf8_put(u, t[i]));
}

/* Code points of s, tabs expanded (to columns of 8) and white space made
 * spaces (textwrap's _munge_whitespace): malloc'd, *n of them. */
static uint32_t *munge(const char *s, size_t *n) {
    size_t len = strlen(s), cap = len + 1, k = 0, col = 0;
    uint32_t *t = malloc(sizeof *t * cap);
    for (size_t i = 0; t && i < len;) {
        uint32_t c;
        int l = srv_utf8_next(s + i, len - i, &c);
        if (!l) {
            c = 0xFFFD;
            l = 1;
        }
        i += (size_t)l;
        size_t add = c == '\t' ? 8 - col % 8 : 1;
        if (k + add + 1 > cap) {
            cap = 2 * (k + add + 1);
            uint32_t *q = realloc(t, sizeof *t * cap);
            if (!q) {
                free(t);
                return NULL;
            }
            t = q;
        }
        for (size_t r = 0; r < add; r++) t[k++] = tw_space(c) ? ' ' : c;
        col = c == '\n' || c == '\r' ? 0 : col + add;
    }
    *n = k;
    return t;
}

char *srv_wrap_fill(const char *text, int width) {
    size_t n = 0;
    uint32_t *t = munge(text, &n);
    if (!t) return NULL;
    span *ch = malloc(sizeof *ch * (n + 1));
    sbuf out = {0};
    if (!ch) out.bad = 1;
    size_t nc = 0;
    for (size_t i = 0; ch && i < n; i = ch[nc++].b) ch[nc] = (span){i, chunk_end(t, i, n)};
    size_t k = 0;   /* the next chunk */
    int lines = 0;
    span line[4096];
    while (ch && k < nc) {
        int nl = 0;
        size_t cur = 0, w = (size_t)(width < 1 ? 1 : width);
        if (t[ch[k].a] == ' ' && lines) k++;   /* white space that starts a line (not the first) goes */
        while (k < nc && cur + (ch[k].b - ch[k].a) <= w && nl < 4096) {
            cur += ch[k].b - ch[k].a;
            line[nl++] = ch[k++];
        }
        if (k < nc && ch[k].b - ch[k].a > w) {   /* a word longer than a line: broken */
            size_t left = width < 1 ? 1 : w - cur, end = left, hy = 0;
            for (size_t j = ch[k].a; j < ch[k].a + left && j < ch[k].b; j++)
                if (t[j] == '-') hy = j - ch[k].a;
            if (ch[k].b - ch[k].a > left && hy > 0)
                for (size_t j = ch[k].a; j < ch[k].a + hy; j++)
                    if (t[j] != '-') {
                        end = hy + 1;
                        break;
                    }
            line[nl++] = (span){ch[k].a, ch[k].a + end};
            ch[k].a += end;
        }
        if (nl && t[line[nl - 1].a] == ' ') nl--;   /* and white space that ends one */
        if (nl) {
            if (lines++) sputs(&out, "\n");
            for (int j = 0; j < nl; j++) put_cps(&out, t, line[j].a, line[j].b);
        }
    }
    free(ch);
    free(t);
    return sdone(&out);
}

/* ---- SubRip ---- */

static int srt_fail(char *msg, size_t n, int cue, const char *why) {
    snprintf(msg, n, "the subtitles' cue %d: %s", cue, why);
    return -3;
}

/* s with its white space cut at both ends: malloc'd. */
static char *trim_dup(const char *s, size_t len) {
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = 0;
    }
    return d;
}

/* pysrt's time: four numbers split by ':', '.' or ','. -1 when not one. */
static long long read_time(const char *s) {
    long long v[4];
    int k = 0;
    while (*s == ' ' || *s == '\t') s++;
    for (; k < 4; k++) {
        if (!isdigit((unsigned char)*s)) return -1;
        v[k] = 0;
        for (int d = 0; isdigit((unsigned char)*s); s++, d++) {
            if (d > 9) return -1;
            v[k] = v[k] * 10 + (*s - '0');
        }
        if (k < 3) {
            if (*s != ':' && *s != '.' && *s != ',') return -1;
            s++;
        }
    }
    while (*s == ' ' || *s == '\t') s++;
    if (*s) return -1;
    return ((v[0] * 60 + v[1]) * 60 + v[2]) * 1000 + v[3];
}

/* The time line "start --> end [position]" into c: 0, or -1. */
static int read_times(const char *line, srv_cue *c) {
    const char *arrow = strstr(line, "-->");
    if (!arrow || strstr(arrow + 3, "-->")) return -1;
    char start[64], end[64];
    size_t sl = (size_t)(arrow - line);
    const char *e = arrow + 3;
    while (*e == ' ' || *e == '\t') e++;
    size_t el = strcspn(e, " ");
    if (sl >= sizeof start || el >= sizeof end) return -1;
    memcpy(start, line, sl);
    start[sl] = 0;
    memcpy(end, e, el);
    end[el] = 0;
    c->start = read_time(start);
    c->end = read_time(end);
    if (c->start < 0 || c->end < 0) return -1;
    c->position = trim_dup(e + el, strlen(e + el));
    return c->position ? 0 : -2;
}

static int blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)s[i])) return 0;
    return 1;
}

/* 1 when s[0, n) holds "-->". */
static int has_arrow(const char *s, size_t n) {
    for (size_t i = 0; i + 3 <= n; i++)
        if (!memcmp(s + i, "-->", 3)) return 1;
    return 0;
}

/* The cue of lines [l, l + nl) (l[i] its i-th line, len[i] its bytes). */
static int read_cue(srv_srt *s, const char *const *l, const size_t *len, int nl, char *msg, size_t n) {
    srv_cue c = {0};
    int cue = s->n + 1, first = 0;
    char buf[256];
    if (!has_arrow(l[0], len[0])) {   /* its number */
        if (!(c.index = trim_dup(l[0], len[0]))) return -1;
        first = 1;
    }
    if (first >= nl || len[first] >= sizeof buf) {
        free(c.index);
        return srt_fail(msg, n, cue, "no time line (start --> end)");
    }
    memcpy(buf, l[first], len[first]);
    buf[len[first]] = 0;
    int st = read_times(buf, &c);
    if (st) {
        free(c.index);
        return st == -2 ? -1 : srt_fail(msg, n, cue, "its time line is not start --> end (HH:MM:SS,mmm)");
    }
    sbuf t = {0};
    for (int i = first + 1; i < nl; i++) {   /* the lines, each cut at its end, joined by spaces */
        size_t k = len[i];
        while (k && isspace((unsigned char)l[i][k - 1])) k--;
        if (i > first + 1) sputs(&t, " ");
        sput(&t, l[i], k);
    }
    c.text = sdone(&t);
    srv_cue *q = s->n < s->cap ? s->cue : realloc(s->cue, sizeof *q * (size_t)(s->cap ? 2 * s->cap : 64));
    if (!c.text || !q) {
        free(c.index);
        free(c.position);
        free(c.text);
        return -1;
    }
    if (s->n == s->cap) s->cap = s->cap ? 2 * s->cap : 64;
    s->cue = q;
    s->cue[s->n++] = c;
    return 0;
}

int srv_srt_parse(const char *text, int max, srv_srt *s, char *msg, size_t n) {
    memset(s, 0, sizeof *s);
    const char *nl1 = strchr(text, '\n');
    s->eol = nl1 && nl1 > text && nl1[-1] == '\r' ? "\r\n" : "\n";
    enum { MAXL = 256 };
    const char *l[MAXL];
    size_t len[MAXL];
    int k = 0;
    for (const char *p = text;;) {
        size_t ll = strcspn(p, "\n");
        size_t content = ll && p[ll - 1] == '\r' ? ll - 1 : ll;
        int end = !p[ll];
        if (!blank(p, content)) {
            if (k == MAXL) return srt_fail(msg, n, s->n + 1, "more than 256 lines");
            l[k] = p;
            len[k++] = content;
        }
        if ((blank(p, content) || end) && k) {
            if (s->n == max) return -2;
            int st = read_cue(s, l, len, k, msg, n);
            if (st) return st;
            k = 0;
        }
        if (end) break;
        p += ll + 1;
    }
    return 0;
}

static void put_time(sbuf *b, long long ms) {
    char t[64];
    snprintf(t, sizeof t, "%02lld:%02lld:%02lld,%03lld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, ms % 1000);
    sputs(b, t);
}

char *srv_srt_write(const srv_srt *s, const char *const *out) {
    sbuf b = {0};
    for (int i = 0; i < s->n && !b.bad; i++) {
        const srv_cue *c = &s->cue[i];
        sbuf item = {0};
        char num[24];
        snprintf(num, sizeof num, "%d", i + 1);
        sputs(&item, c->index ? c->index : num);
        sputs(&item, "\n");
        put_time(&item, c->start);
        sputs(&item, " --> ");
        put_time(&item, c->end);
        if (*c->position) {
            sputs(&item, " ");
            sputs(&item, c->position);
        }
        sputs(&item, "\n");
        char *w = srv_wrap_fill(out[i], 40);
        if (!w) item.bad = 1;
        else sputs(&item, w);
        free(w);
        sputs(&item, "\n");
        char *it = sdone(&item);
        if (!it) {
            b.bad = 1;
            break;
        }
        size_t el = strlen(s->eol), ends = 0;   /* its line ends the file's; one more unless it has two */
        for (const char *p = it; *p; p++) {
            if (*p == '\n') sputs(&b, s->eol);
            else sput(&b, p, 1);
        }
        ends = b.len >= 2 * el && !memcmp(b.b + b.len - el, s->eol, el) && !memcmp(b.b + b.len - 2 * el, s->eol, el);
        if (!ends) sputs(&b, s->eol);
        free(it);
    }
    return sdone(&b);
}

void srv_srt_free(srv_srt *s) {
    for (int i = 0; i < s->n; i++) {
        free(s->cue[i].index);
        free(s->cue[i].position);
        free(s->cue[i].text);
    }
    free(s->cue);
    memset(s, 0, sizeof *s);
}
