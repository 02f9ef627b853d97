/* wer.h - word error rate against ../shared/audio's reference transcripts,
 * for the benchmarks that compare precision modes.
 *
 *   wer_set set;  wer_load(&set, "../shared/audio");    13 utterances
 *   wer_words(ref) / wer_edits(hyp, ref): WER = sum(edits) / sum(words)
 *   wer_lost_run(hyp, ref): the longest run of ref words hyp lost
 *
 * Normalisation (both sides): ASCII letters lower-cased, digits and
 * apostrophes kept, everything else a word break ("ill-disposed" = "ill
 * disposed", "Americans," = "americans"). Numbers are not spelled out, so
 * "10 of clubs" against "ten of clubs" counts one substitution: the figure is
 * for comparing modes on the same audio, not a leaderboard WER.
 */
#ifndef ED_BENCH_WER_H
#define ED_BENCH_WER_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WER_MAX 64
#define WER_MAX_WORDS 512

typedef struct {
    int n;
    char path[WER_MAX][1024];
    char ref[WER_MAX][1024];
} wer_set;

/* Splits normalised s into words: returns the count, w[i] point into buf. */
static int wer_split(const char *s, char *buf, size_t cap, char **w, int max) {
    size_t j = 0;
    int n = 0, in = 0;
    for (; *s && j + 2 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '\'') {
            if (!in) {
                if (n == max) break;
                w[n++] = buf + j;
                in = 1;
            }
            buf[j++] = (char)tolower(c);
        } else if (in) {
            buf[j++] = 0;
            in = 0;
        }
    }
    buf[j] = 0;
    return n;
}

static int wer_words(const char *ref) {
    char buf[4096], *w[WER_MAX_WORDS];
    return wer_split(ref, buf, sizeof buf, w, WER_MAX_WORDS);
}

/* Word-level Levenshtein distance between hyp and ref. */
static int wer_edits(const char *hyp, const char *ref) {
    char bh[4096], br[4096], *h[WER_MAX_WORDS], *r[WER_MAX_WORDS];
    int nh = wer_split(hyp, bh, sizeof bh, h, WER_MAX_WORDS);
    int nr = wer_split(ref, br, sizeof br, r, WER_MAX_WORDS);
    int prev[WER_MAX_WORDS + 1], cur[WER_MAX_WORDS + 1];
    for (int j = 0; j <= nr; j++) prev[j] = j;
    for (int i = 1; i <= nh; i++) {
        cur[0] = i;
        for (int j = 1; j <= nr; j++) {
            int sub = prev[j - 1] + (strcmp(h[i - 1], r[j - 1]) != 0);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (size_t)(nr + 1));
    }
    return prev[nr];
}

/* The longest run of consecutive ref words that a minimal alignment of
 * hyp to ref deletes: words lost (a phrase never transcribed), where a
 * misheard word is a substitution. Matches and substitutions are taken
 * before deletions where the costs tie. -1 when out of memory. */
static inline int wer_lost_run(const char *hyp, const char *ref) {
    char bh[4096], br[4096], *h[WER_MAX_WORDS], *r[WER_MAX_WORDS];
    int nh = wer_split(hyp, bh, sizeof bh, h, WER_MAX_WORDS);
    int nr = wer_split(ref, br, sizeof br, r, WER_MAX_WORDS);
    int w = nr + 1, *d = malloc(sizeof(int) * (size_t)(nh + 1) * (size_t)w);
    if (!d) return -1;
    for (int j = 0; j <= nr; j++) d[j] = j;
    for (int i = 1; i <= nh; i++) {
        d[i * w] = i;
        for (int j = 1; j <= nr; j++) {
            int sub = d[(i - 1) * w + j - 1] + (strcmp(h[i - 1], r[j - 1]) != 0);
            int del = d[i * w + j - 1] + 1, ins = d[(i - 1) * w + j] + 1;
            d[i * w + j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    }
    int i = nh, j = nr, run = 0, most = 0;
    while (i > 0 || j > 0) {
        if (i > 0 && j > 0 && d[i * w + j] == d[(i - 1) * w + j - 1] + (strcmp(h[i - 1], r[j - 1]) != 0)) {
            i--, j--, run = 0;
        } else if (j > 0 && d[i * w + j] == d[i * w + j - 1] + 1) {
            j--, run++;
            most = run > most ? run : most;
        } else {
            i--, run = 0;
        }
    }
    free(d);
    return most;
}

static void wer_add(wer_set *s, const char *dir, const char *file, const char *ref) {
    if (s->n == WER_MAX) return;
    int a = snprintf(s->path[s->n], sizeof s->path[0], "%s/%s", dir, file);
    int b = snprintf(s->ref[s->n], sizeof s->ref[0], "%s", ref);
    if (a < 0 || b < 0 || (size_t)a >= sizeof s->path[0] || (size_t)b >= sizeof s->ref[0]) return;
    s->n++;
}

/* "<s> words </s> (name)" lines of a sphinx-style transcription file; the
 * audio is sub/name.wav. */
static void wer_load_sphinx(wer_set *s, const char *dir, const char *sub, const char *file) {
    char p[1200], line[2048];
    snprintf(p, sizeof p, "%s/%s/%s", dir, sub, file);
    FILE *f = fopen(p, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *a = strstr(line, "<s>"), *b = strstr(line, "</s>"), *o = strrchr(line, '('),
             *c = strrchr(line, ')');
        if (!a || !b || !o || !c || b < a || c < o) continue;
        *b = 0;
        *c = 0;
        char name[1200];
        snprintf(name, sizeof name, "%s/%s.wav", sub, o + 1);
        wer_add(s, dir, name, a + 3);
    }
    fclose(f);
}

/* Every utterance of dir (../shared/audio) with a reference: the rows of
 * TRANSCRIPTS.tsv that carry their text, and the two sphinx-style lists.
 * Returns the count (0: nothing found). */
static int wer_load(wer_set *s, const char *dir) {
    s->n = 0;
    char p[1200], line[4096];
    snprintf(p, sizeof p, "%s/TRANSCRIPTS.tsv", dir);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    int first = 1;
    while (fgets(line, sizeof line, f)) {
        if (first) { first = 0; continue; }   /* header */
        char *t1 = strchr(line, '\t');
        if (!t1) continue;
        *t1 = 0;
        char *ref = t1 + 1, *t2 = strchr(ref, '\t');
        if (t2) *t2 = 0;
        if (ref[0] == '(' || !strncmp(ref, "see ", 4) || strchr(line, '*')) continue;
        wer_add(s, dir, line, ref);
    }
    fclose(f);
    wer_load_sphinx(s, dir, "librivox", "transcription");
    wer_load_sphinx(s, dir, "cards", "cards.transcription");
    return s->n;
}

#endif
