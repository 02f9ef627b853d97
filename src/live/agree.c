/* agree.c - word lists of live hypotheses, and LocalAgreement (agree.h). */
#include "live/agree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void live_words_clear(live_words *l) {
    for (int i = 0; i < l->n; i++) free(l->w[i].text);
    l->n = 0;
}

void live_words_free(live_words *l) {
    live_words_clear(l);
    free(l->w);
    l->w = NULL;
    l->cap = 0;
}

int live_words_push(live_words *l, const char *text, double start, double end) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        live_word *w = realloc(l->w, sizeof *w * (size_t)cap);
        if (!w) return -1;
        l->w = w;
        l->cap = cap;
    }
    char *t = strdup(text);
    if (!t) return -1;
    l->w[l->n++] = (live_word){t, start, end};
    return 0;
}

void live_words_drop(live_words *l, int k) {
    if (k <= 0) return;
    if (k > l->n) k = l->n;
    for (int i = 0; i < k; i++) free(l->w[i].text);
    memmove(l->w, l->w + k, sizeof *l->w * (size_t)(l->n - k));
    l->n -= k;
}

char *live_words_text(const live_words *l, int from, int to) {
    size_t len = 0;
    for (int i = from; i < to; i++) len += strlen(l->w[i].text);
    char *s = malloc(len + 1), *p = s;
    if (!s) return NULL;
    for (int i = from; i < to; i++) {
        size_t k = strlen(l->w[i].text);
        memcpy(p, l->w[i].text, k);
        p += k;
    }
    *p = 0;
    return s;
}

/* The next byte of a word that counts: letters folded to lower case,
 * digits, and every byte of a non-ASCII character; 0 at the end. */
static int next_key(const char **s) {
    for (unsigned char c; (c = (unsigned char)**s); (*s)++) {
        if (c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')) return (*s)++, c;
        if (c >= 'A' && c <= 'Z') return (*s)++, c - 'A' + 'a';
    }
    return 0;
}

int live_word_eq(const char *a, const char *b) {
    for (;;) {
        int x = next_key(&a), y = next_key(&b);
        if (x != y) return 0;
        if (!x) return 1;
    }
}

/* 1 when hyp's words [i - m, i) are the tail's last m words. */
static int recurs(const live_words *hyp, int i, const live_words *tail, int m) {
    for (int j = 0; j < m; j++)
        if (!live_word_eq(hyp->w[i - m + j].text, tail->w[tail->n - m + j].text)) return 0;
    return 1;
}

/* 1 when hyp's words [i, k) begin pending's words. */
static int begins(const live_words *hyp, int i, int k, const live_words *pending) {
    if (!pending || k - i > pending->n) return 0;
    for (int j = i; j < k; j++)
        if (!live_word_eq(hyp->w[j].text, pending->w[j - i].text)) return 0;
    return 1;
}

void live_words_after(live_words *hyp, const live_words *tail, double final_end,
                      const live_words *pending) {
    for (int m = tail->n < 5 ? tail->n : 5; m >= 1; m--) {   /* the longest echo first */
        int best = -1;
        double gap = 1.0;
        for (int i = m; i <= hyp->n; i++) {
            double d = fabs(hyp->w[i - 1].end - final_end);
            if (d <= gap && recurs(hyp, i, tail, m)) best = i, gap = d;
        }
        if (best >= 0) {
            live_words_drop(hyp, best);
            return;
        }
    }
    int k = 0;
    while (k < hyp->n && (hyp->w[k].start + hyp->w[k].end) / 2 < final_end) k++;
    for (int i = 0; i < k; i++)
        if (begins(hyp, i, k, pending)) {
            k = i;
            break;
        }
    live_words_drop(hyp, k);
}

int live_words_skip(const live_words *hyp, const live_words *pending) {
    if (!pending || !hyp->n || !pending->n || live_word_eq(hyp->w[0].text, pending->w[0].text))
        return 0;
    for (int j = 1; j < pending->n; j++) {
        int m = hyp->n < pending->n - j ? hyp->n : pending->n - j, i = 0;
        while (i < m && live_word_eq(hyp->w[i].text, pending->w[j + i].text)) i++;
        if (i == m) return 1;
    }
    /* or its first word is timed over two or more of pending's */
    int over = 0;
    for (int j = 0; j < pending->n; j++)
        over += pending->w[j].start >= hyp->w[0].start && pending->w[j].end <= hyp->w[0].end;
    return over >= 2;
}

int live_words_echo(const live_words *hyp, const live_words *tail, double max_s) {
    if (!hyp->n || !tail->n) return 0;
    const live_word *f = &tail->w[tail->n - 1];
    return live_word_eq(hyp->w[0].text, f->text) && fabs(hyp->w[0].start - f->start) <= max_s;
}

int live_words_long(const live_words *hyp, int from, double min_s) {
    for (int i = from < 0 ? 0 : from; i < hyp->n; i++)
        if (hyp->w[i].end - hyp->w[i].start >= min_s) return i;
    return -1;
}

int live_agree(const live_words *const *hyps, int n) {
    int k = 0;
    for (;; k++) {
        for (int h = 0; h < n; h++)
            if (k >= hyps[h]->n || !live_word_eq(hyps[h]->w[k].text, hyps[0]->w[k].text)) return k;
    }
}
