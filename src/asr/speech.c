/* speech.c - speech spans and the map back to the recording (speech.h). */
#include "asr/speech.h"

#include <math.h>

#define RATE 16000.0

void asr_speech_default(asr_speech_opts *o) {
    o->threshold = 0.5f;
    o->neg_threshold = NAN;
    o->min_speech_ms = 0;
    o->max_speech_s = INFINITY;
    o->min_silence_ms = 2000;
    o->pad_ms = 400;
}

/* Appends a span (counts past cap). */
static void add(asr_span *out, int cap, int *n, double start, double end) {
    if (*n < cap) out[*n] = (asr_span){(size_t)start, (size_t)end};
    (*n)++;
}

int asr_speech_spans(const float *probs, size_t n_frames, size_t n_samples, int frame,
                     const asr_speech_opts *o, asr_span *out, int cap) {
    double pad = RATE * o->pad_ms / 1000, min_speech = RATE * o->min_speech_ms / 1000;
    double max_speech = RATE * o->max_speech_s - frame - 2 * pad;
    double min_silence = RATE * o->min_silence_ms / 1000, min_silence_at_max = RATE * 98 / 1000;
    double neg = isnan(o->neg_threshold) ? fmax(o->threshold - 0.15, 0.01) : o->neg_threshold;
    int n = 0, triggered = 0, have = 0;   /* have: the current span has a start */
    double start = 0, temp_end = 0, prev_end = 0, next_start = 0;
    for (size_t i = 0; i < n_frames; i++) {
        double p = probs[i], at = (double)frame * (double)i;
        if (p >= o->threshold && temp_end) {
            temp_end = 0;
            if (next_start < prev_end) next_start = at;
        }
        if (p >= o->threshold && !triggered) {
            triggered = 1;
            start = at;
            have = 1;
            continue;
        }
        if (triggered && at - start > max_speech) {
            if (prev_end) {
                add(out, cap, &n, start, prev_end);
                have = 0;
                if (next_start < prev_end) {   /* silence since, not speech again */
                    triggered = 0;
                } else {
                    start = next_start;
                    have = 1;
                }
                prev_end = next_start = temp_end = 0;
            } else {
                add(out, cap, &n, start, at);
                have = 0;
                prev_end = next_start = temp_end = 0;
                triggered = 0;
                continue;
            }
        }
        if (p < neg && triggered) {
            if (!temp_end) temp_end = at;
            if (at - temp_end > min_silence_at_max) prev_end = temp_end;   /* no cut in short pauses */
            if (at - temp_end < min_silence) continue;
            if (temp_end - start > min_speech) add(out, cap, &n, start, temp_end);
            have = 0;
            prev_end = next_start = temp_end = 0;
            triggered = 0;
            continue;
        }
    }
    if (have && (double)n_samples - start > min_speech) add(out, cap, &n, start, (double)n_samples);
    int k = n < cap ? n : cap;
    /* the padding: each span widened by pad, or by half the silence to the next */
    for (int i = 0; i < k; i++) {
        if (i == 0) out[i].start = (size_t)fmax(0, (double)out[i].start - pad);
        if (i != k - 1) {
            double silence = (double)out[i + 1].start - (double)out[i].end;
            if (silence < 2 * pad) {
                double half = floor(silence / 2);
                out[i].end += (size_t)half;
                out[i + 1].start = (size_t)fmax(0, (double)out[i + 1].start - half);
            } else {
                out[i].end = (size_t)fmin((double)n_samples, (double)out[i].end + pad);
                out[i + 1].start = (size_t)fmax(0, (double)out[i + 1].start - pad);
            }
        } else {
            out[i].end = (size_t)fmin((double)n_samples, (double)out[i].end + pad);
        }
    }
    return n;
}

int asr_speech_chunks(const asr_span *spans, int k, size_t max_len, asr_chunk *out) {
    int n = 0;
    size_t joined = 0;
    for (int i = 0; i < k; i++) {
        size_t len = spans[i].end - spans[i].start;
        asr_chunk *c = n ? &out[n - 1] : NULL;
        if (c && c->len + len <= max_len) {
            c->n++;
            c->len += len;
        } else {
            out[n++] = (asr_chunk){i, 1, joined, len};
        }
        joined += len;
    }
    return n;
}

void asr_speech_map_init(asr_speech_map *mp, const asr_span *spans, int n, double rate,
                         double *work) {
    double *silence = work, *end = work + n, s = 0, prev = 0;
    for (int i = 0; i < n; i++) {
        s += (double)spans[i].start - prev;
        prev = (double)spans[i].end;
        silence[i] = s;
        end[i] = (double)spans[i].end - s;
    }
    *mp = (asr_speech_map){n, rate, silence, end};
}

int asr_speech_chunk(const asr_speech_map *mp, double t, int is_end) {
    double sample = floor(t * mp->rate);
    if (is_end)
        for (int i = 0; i < mp->n; i++)
            if (mp->end[i] == sample) return i;
    int lo = 0, hi = mp->n;   /* bisect_right: the first end past the sample */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (mp->end[mid] > sample) hi = mid;
        else lo = mid + 1;
    }
    return lo < mp->n ? lo : mp->n - 1;
}

double asr_speech_time(const asr_speech_map *mp, double t, int chunk, int is_end) {
    if (mp->n < 1) return t;
    if (chunk < 0) chunk = asr_speech_chunk(mp, t, is_end);
    return nearbyint((mp->silence[chunk] / mp->rate + t) * 100) / 100;
}
