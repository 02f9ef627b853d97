/* subtitles.c - subtitle cues from segments or words, and the timestamps
 * both they and writers.c print (see out.h): beneath writers.c. */
#include "out/out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void out_timestamp(char *dst, size_t cap, double seconds, int always_hours, char marker) {
    long long ms = (long long)nearbyint((seconds > 0 ? seconds : 0) * 1000.0);
    long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60;
    ms %= 1000;
    if (always_hours || h > 0)
        snprintf(dst, cap, "%02lld:%02lld:%02lld%c%03lld", h, m, s, marker, ms);
    else
        snprintf(dst, cap, "%02lld:%02lld%c%03lld", m, s, marker, ms);
}

typedef struct {
    out_cue *c;
    int n, cap, err;
} cue_list;

/* Appends a cue taking text (malloc'd). */
static void add(cue_list *l, double start, double end, char *text) {
    if (!text) l->err = 1;
    if (l->err) {
        free(text);
        return;
    }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        out_cue *c = realloc(l->c, sizeof *c * (size_t)cap);
        if (!c) {
            l->err = 1;
            free(text);
            return;
        }
        l->c = c;
        l->cap = cap;
    }
    l->c[l->n++] = (out_cue){start, end, text};
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* A copy of s[n] without leading and trailing white space, "-->" as "->". */
static char *clean(const char *s, size_t n) {
    while (n > 0 && is_space(*s)) s++, n--;
    while (n > 0 && is_space(s[n - 1])) n--;
    char *d = malloc(n + 1);
    if (!d) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 2 < n && !memcmp(s + i, "-->", 3)) {
            memcpy(d + k, "->", 2);
            k += 2;
            i += 2;
            continue;
        }
        d[k++] = s[i];
    }
    d[k] = 0;
    return d;
}

/* Characters (code points) of UTF-8 s, as Python's len. */
static int n_chars(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* A word as it sits in a subtitle: its text, possibly stripped and after a
 * line break. */
typedef struct {
    double start, end;
    char *text;
} piece;

typedef struct {
    piece *p;
    int n, cap;
} line_buf;

static int push_piece(line_buf *s, double start, double end, char *text) {
    if (!text) return -1;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        piece *p = realloc(s->p, sizeof *p * (size_t)cap);
        if (!p) {
            free(text);
            return -1;
        }
        s->p = p;
        s->cap = cap;
    }
    s->p[s->n++] = (piece){start, end, text};
    return 0;
}

static char *join_pieces(const piece *p, int n, int underline) {
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(p[i].text) + 7;
    char *s = malloc(len), *d = s;
    if (!s) return NULL;
    for (int i = 0; i < n; i++) {
        const char *t = p[i].text;
        if (i == underline) {   /* leading white space stays outside the tag */
            while (*t && is_space(*t)) *d++ = *t++;
            d += sprintf(d, "<u>%s</u>", t);
        } else {
            d += sprintf(d, "%s", t);
        }
    }
    *d = 0;
    return s;
}

/* A finished subtitle into cues: one cue, or with highlighting one per word
 * (plus the gaps between them, openai-whisper's way). */
static void flush(cue_list *l, line_buf *s, int highlight) {
    if (s->n == 0) return;
    if (!highlight) {
        add(l, s->p[0].start, s->p[s->n - 1].end, join_pieces(s->p, s->n, -1));
    } else {
        char a[32], b[32];
        double last = s->p[0].start;
        for (int i = 0; i < s->n; i++) {
            out_timestamp(a, sizeof a, last, 1, '.');
            out_timestamp(b, sizeof b, s->p[i].start, 1, '.');
            if (strcmp(a, b) != 0) add(l, last, s->p[i].start, join_pieces(s->p, s->n, -1));
            add(l, s->p[i].start, s->p[i].end, join_pieces(s->p, s->n, i));
            last = s->p[i].end;
        }
    }
    for (int i = 0; i < s->n; i++) free(s->p[i].text);
    s->n = 0;
}

static char *dup_str(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* openai-whisper's iterate_subtitles over the words. */
static void from_words(cue_list *l, const encdec_result *r, const encdec_format_options *o) {
    int preserve = o->max_line_count <= 0 || o->max_line_width <= 0;
    int width = o->max_line_width > 0 ? o->max_line_width : 1000;
    int per_line = o->max_words_per_line > 0 ? o->max_words_per_line : 1000;
    int has_count = o->max_line_count > 0;
    line_buf sub = {0};
    int line_len = 0, line_count = 1, n_seg = encdec_result_n_segments(r);
    double last = 0;
    for (int s = 0; s < n_seg; s++) {   /* get_start: the first word's start */
        const encdec_segment *g = encdec_result_segment(r, s);
        if (g->n_words > 0) {
            last = g->words[0].start;
            break;
        }
    }
    for (int s = 0; s < n_seg && !l->err; s++) {
        const encdec_segment *g = encdec_result_segment(r, s);
        for (int chunk = 0; chunk < g->n_words; chunk += per_line) {
            int count = g->n_words - chunk < per_line ? g->n_words - chunk : per_line;
            for (int i = 0; i < count; i++) {
                const encdec_word *w = &g->words[chunk + i];
                int wlen = n_chars(w->word);
                int long_pause = !preserve && w->start - last > 3.0;
                int has_room = line_len + wlen <= width;
                int seg_break = i == 0 && sub.n > 0 && preserve;
                char *text;
                if (line_len > 0 && has_room && !long_pause && !seg_break) {
                    line_len += wlen;   /* the line goes on */
                    text = dup_str(w->word, strlen(w->word));
                } else {
                    const char *t = w->word;
                    size_t tn = strlen(t);
                    while (tn > 0 && is_space(*t)) t++, tn--;
                    while (tn > 0 && is_space(t[tn - 1])) tn--;
                    int brk = 0;
                    if ((sub.n > 0 && has_count && (long_pause || line_count >= o->max_line_count)) ||
                        seg_break) {
                        flush(l, &sub, o->highlight_words);   /* a new subtitle */
                        line_count = 1;
                    } else if (line_len > 0) {
                        line_count++;   /* a new line */
                        brk = 1;
                    }
                    text = malloc(tn + 2);
                    if (text) {
                        if (brk) text[0] = '\n';
                        memcpy(text + brk, t, tn);
                        text[tn + brk] = 0;
                    }
                    line_len = n_chars(text ? text + brk : "");
                }
                if (push_piece(&sub, w->start, w->end, text)) l->err = 1;
                last = w->start;
            }
        }
    }
    if (!l->err) flush(l, &sub, o->highlight_words);
    for (int i = 0; i < sub.n; i++) free(sub.p[i].text);
    free(sub.p);
}

int out_cues(const encdec_result *r, const encdec_format_options *o, out_cue **cues) {
    static const encdec_format_options none = {0, 0, 0, 0};
    if (!o) o = &none;
    cue_list l = {0};
    int words = 0, n_seg = encdec_result_n_segments(r);
    for (int s = 0; s < n_seg; s++) words += encdec_result_segment(r, s)->n_words;
    if (words > 0) {
        from_words(&l, r, o);
    } else {
        for (int s = 0; s < n_seg; s++) {
            const encdec_segment *g = encdec_result_segment(r, s);
            add(&l, g->start, g->end, clean(g->text, strlen(g->text)));
        }
    }
    if (l.err) {
        out_cues_free(l.c, l.n);
        *cues = NULL;
        return -1;
    }
    *cues = l.c;
    return l.n;
}

void out_cues_free(out_cue *c, int n) {
    for (int i = 0; i < n; i++) free(c[i].text);
    free(c);
}
