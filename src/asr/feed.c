/* feed.c - the recording as the long-form loop reads it (see feed.h). */
#include "asr/feed.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PASS_FRAMES 512                          /* frames per mel_frames_log call */
#define HALF_WIN (MEL_N_FFT / 2)                 /* 200: samples a frame sees on each side */
#define RAW_BLOCK 16384                          /* samples of the recording read at once
                                                    through speech spans */
#define STREAM_CAP ((size_t)MEL_CHUNK_SAMPLES + 2 * 16384)   /* a window and a block or two */

static encdec_status cancelled(const atomic_int *cancel) {
    return cancel && atomic_load(cancel) ? ed_fail(ENCDEC_ERR_CANCELLED, "the request was cancelled")
                                         : ENCDEC_OK;
}

/* Frames [t, t_hi) of the signal held in x[x0, x0 + nx) into the running
 * maximum *mx (scratch: [n_mels, PASS_FRAMES]). */
static encdec_status pass_frames(const mel_ctx *mel, const float *x, size_t x0, size_t nx,
                                 size_t n_total, long long *t, long long t_hi, float *scratch,
                                 double *mx, const atomic_int *cancel) {
    while (*t < t_hi) {
        encdec_status st = cancelled(cancel);
        if (st) return st;
        int k = t_hi - *t < PASS_FRAMES ? (int)(t_hi - *t) : PASS_FRAMES;
        double v = mel_frames_log(mel, x, x0, nx, n_total, *t, k, scratch, PASS_FRAMES);
        if (v > *mx) *mx = v;
        *t += k;
    }
    return ENCDEC_OK;
}

/* The frames that see real samples are [0, last_frame(n)]; every later one
 * of the padded log-mel sees only zeros, whose value is log10(1e-10). */
static long long frames_seeing(size_t n) { return (long long)((n + HALF_WIN - 1) / MEL_HOP) + 1; }

static double zero_frame(void) { return log10(1e-10); }

encdec_status asr_feed_memory(asr_feed *f, const float *pcm, size_t n, const mel_ctx *mel,
                              const atomic_int *cancel) {
    memset(f, 0, sizeof *f);
    f->pcm = pcm;
    f->n = n;
    float *scratch = ed_alloc(sizeof(float) * PASS_FRAMES * 128, "mel scratch");
    if (!scratch) return ENCDEC_ERR_NOMEM;
    double t0 = ed_now_ms(), mx = zero_frame();
    long long t = 0;
    encdec_status st = pass_frames(mel, pcm, 0, n, n, &t, frames_seeing(n), scratch, &mx, cancel);
    free(scratch);
    f->log_max = mx;
    f->mel_ms = ed_now_ms() - t0;
    return st;
}

/* Drops the samples before `from` (kept: [from, b0 + bn)). */
static void drop_before(asr_feed *f, size_t from) {
    if (from <= f->b0) return;
    size_t k = from - f->b0 < f->bn ? from - f->b0 : f->bn;
    memmove(f->buf, f->buf + k, (f->bn - k) * sizeof *f->buf);
    f->bn -= k;
    f->b0 += k;
}

/* Up to cap samples of the spans into dst, in order (*got 0: the last span
 * has been read): the recording is read in blocks and what lies between
 * the spans is dropped. */
static encdec_status read_spans(asr_feed *f, float *dst, size_t cap, size_t *got) {
    *got = 0;
    while (*got == 0 && f->span_i < f->n_spans && cap > 0) {
        size_t r = 0, want = cap < RAW_BLOCK ? cap : RAW_BLOCK;
        encdec_status st = audio_stream_read(f->as, f->raw_buf, want, &r);
        if (st) return st;
        if (r == 0)
            return ed_fail(ENCDEC_ERR_AUDIO, "the audio ended at sample %zu, inside or before "
                           "speech span %d [%zu, %zu)", f->raw, f->span_i,
                           f->spans[f->span_i].start, f->spans[f->span_i].end);
        size_t a = f->raw, b = f->raw + r;
        while (f->span_i < f->n_spans && f->spans[f->span_i].start < b) {
            const asr_span *sp = &f->spans[f->span_i];
            size_t lo = sp->start > a ? sp->start : a, hi = sp->end < b ? sp->end : b;
            if (lo < hi) {
                memcpy(dst + *got, f->raw_buf + (lo - a), (hi - lo) * sizeof *dst);
                *got += hi - lo;
            }
            if (sp->end > b) break;
            f->span_i++;
        }
        f->raw = b;
    }
    return ENCDEC_OK;
}

/* Back to the stream's start (and the first span). */
static encdec_status rewind_feed(asr_feed *f) {
    f->raw = 0;
    f->span_i = 0;
    return audio_stream_rewind(f->as);
}

/* Reads from the stream into the free end of the buffer; *end at its end. */
static encdec_status read_more(asr_feed *f, int *end) {
    size_t got = 0;
    encdec_status st = f->spans ? read_spans(f, f->buf + f->bn, f->cap - f->bn, &got)
                                : audio_stream_read(f->as, f->buf + f->bn, f->cap - f->bn, &got);
    if (st) return st;
    f->bn += got;
    *end = got == 0;
    return ENCDEC_OK;
}

encdec_status asr_feed_stream(asr_feed *f, audio_stream *as, const mel_ctx *mel,
                              const atomic_int *cancel) {
    return asr_feed_stream_spans(f, as, NULL, 0, mel, cancel);
}

encdec_status asr_feed_stream_spans(asr_feed *f, audio_stream *as, const asr_span *spans,
                                    int n_spans, const mel_ctx *mel, const atomic_int *cancel) {
    memset(f, 0, sizeof *f);
    f->as = as;
    f->spans = spans;
    f->n_spans = n_spans;
    f->cap = STREAM_CAP;
    f->buf = ed_alloc(f->cap * sizeof *f->buf, "audio window");
    f->raw_buf = spans ? ed_alloc(RAW_BLOCK * sizeof *f->raw_buf, "audio block") : NULL;
    if (!mel) {   /* no first pass: the length is the spans' */
        for (int i = 0; i < n_spans; i++) f->n += spans[i].end - spans[i].start;
        encdec_status st = f->buf && f->raw_buf ? rewind_feed(f) : ENCDEC_ERR_NOMEM;
        if (st) asr_feed_free(f);
        return st;
    }
    float *scratch = ed_alloc(sizeof(float) * PASS_FRAMES * 128, "mel scratch");
    encdec_status st = f->buf && scratch && (f->raw_buf || !spans) ? ENCDEC_OK : ENCDEC_ERR_NOMEM;
    double t0 = ed_now_ms(), mx = zero_frame();
    long long t = 0;
    for (int end = 0; !st && !end;) {
        if ((st = read_more(f, &end))) break;
        size_t have = f->b0 + f->bn;
        /* the frames whose samples are all here (all of them at the end) */
        long long t_hi = end ? frames_seeing(have)
                             : have >= HALF_WIN ? (long long)((have - HALF_WIN) / MEL_HOP) + 1 : 0;
        if ((st = pass_frames(mel, f->buf, f->b0, f->bn, end ? have : (size_t)-1, &t, t_hi, scratch,
                              &mx, cancel)))
            break;
        long long keep = t * MEL_HOP - HALF_WIN;
        if (keep > 0) drop_before(f, (size_t)keep);
        if (!end && f->bn == f->cap) st = ed_fail(ENCDEC_ERR_AUDIO, "asr: audio window overflow");
    }
    free(scratch);
    if (!st) {
        f->n = f->b0 + f->bn;
        f->log_max = mx;
        f->mel_ms = ed_now_ms() - t0;
        f->b0 = f->bn = 0;
        st = rewind_feed(f);
    }
    if (st) asr_feed_free(f);
    return st;
}

encdec_status asr_feed_get(asr_feed *f, size_t a, size_t b, const float **x, size_t *x0,
                           size_t *nx) {
    if (b > f->n) b = f->n;
    if (f->pcm || !f->as) {
        *x = f->pcm;
        *x0 = 0;
        *nx = f->n;
        return ENCDEC_OK;
    }
    if (a < f->b0) {   /* backwards (clips out of order): from the start again */
        encdec_status st = rewind_feed(f);
        if (st) return st;
        f->b0 = f->bn = 0;
    }
    if (b - (a < b ? a : b) + MEL_N_FFT > f->cap) return ed_fail(ENCDEC_ERR_ARG, "asr: %zu samples asked at once", b - a);
    while (f->b0 + f->bn < b) {
        /* a margin behind a: the window's mel reaches HALF_WIN samples before
         * the samples its energy is measured on */
        drop_before(f, a > MEL_N_FFT ? a - MEL_N_FFT : 0);
        if (f->bn == f->cap) drop_before(f, f->b0 + f->bn);   /* a is past all we hold */
        int end;
        encdec_status st = read_more(f, &end);
        if (st) return st;
        if (end && f->b0 + f->bn < b)
            return ed_fail(ENCDEC_ERR_AUDIO, "the audio ended at sample %zu of %zu: it changed "
                           "while it was read", f->b0 + f->bn, f->n);
    }
    *x = f->buf;
    *x0 = f->b0;
    *nx = f->bn;
    return ENCDEC_OK;
}

void asr_feed_free(asr_feed *f) {
    free(f->buf);
    free(f->raw_buf);
    f->buf = f->raw_buf = NULL;
}
