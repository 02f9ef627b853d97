/* hallucination.c - skipping the silence before a likely hallucination
 * (openai-whisper's and faster-whisper's hallucination_silence_threshold),
 * from a window's word times. */
#include "asr/asr_internal.h"

#include <math.h>
#include <string.h>

#define FPS 100.0   /* mel frames per second */

/* The punctuation a word may be and still not count (the peers test the
 * word as a substring of their default sets put together). */
static const char PUNCT[] = "\"'\xe2\x80\x9c\xc2\xbf([{-\"'.\xe3\x80\x82,\xef\xbc\x8c!\xef\xbc\x81?"
                            "\xef\xbc\x9f:\xef\xbc\x9a\xe2\x80\x9d)]}\xe3\x80\x81";

/* Very improbable, very short or very long words score. */
static double word_score(const asr_word *w) {
    double d = w->end - w->start, s = 0;
    if (w->probability < 0.15f) s += 1.0;
    if (d < 0.133) s += (0.133 - d) * 15;
    if (d > 2.0) s += d - 2.0;
    return s;
}

/* A segment whose first 8 words (punctuation left out) look made up. */
static int anomalous(const asr_wseg *g) {
    if (!g || g->n_words == 0) return 0;
    double score = 0;
    int n = 0;
    for (int i = 0; i < g->n_words && n < 8; i++) {
        if (strstr(PUNCT, g->words[i].text)) continue;
        score += word_score(&g->words[i]);
        n++;
    }
    return score >= 3 || score + 0.01 >= n;
}

static const asr_wseg *next_with_words(const asr_wseg *segs, int from, int n) {
    for (int i = from; i < n; i++)
        if (segs[i].n_words > 0) return &segs[i];
    return NULL;
}

int asr_hallucination_cut(const asr_wseg *segs, int n, const asr_silence_ctx *c, int *next) {
    double thr = c->threshold;
    const asr_wseg *first = next_with_words(segs, 0, n);
    if (first && anomalous(first)) {   /* the window may open on one: skip the silence before it */
        double gap = first->start - c->time_offset;
        if (gap > thr) {
            *next = c->seek + (int)nearbyint(gap * FPS);
            return -1;
        }
    }
    double last_end = c->last_speech;
    for (int i = 0; i < n; i++) {
        const asr_wseg *g = &segs[i];
        if (g->n_words == 0) continue;
        if (anomalous(g)) {   /* one between silences (or more of them) ends the window there */
            const asr_wseg *nx = next_with_words(segs, i + 1, n);
            double next_start = nx ? nx->words[0].start : c->time_offset + c->duration;
            int before = g->start - last_end > thr || g->start < thr || g->start - c->time_offset < 2.0;
            int after = next_start - g->end > thr || anomalous(nx) || c->window_end - g->end < 2.0;
            if (before && after) {
                double from = c->time_offset + 1 > g->start ? c->time_offset + 1 : g->start;
                *next = (int)nearbyint(from * FPS);
                if (c->content_frames / FPS - g->end < thr) *next = c->content_frames;
                return i;
            }
        }
        last_end = g->end;
    }
    return n;
}
