/* feed.h - the recording as the long-form loop reads it: samples by
 * position, and the one number of the whole file its log-mel needs (the
 * largest log10 mel energy: openai-whisper clamps every frame to it - 8).
 *
 *   asr_feed f;
 *   asr_feed_memory(&f, pcm, n, mel)        the recording in memory; or
 *   asr_feed_stream(&f, stream, mel)        an audio_stream: a first pass for the
 *                                           length and the maximum, then rewound
 *   asr_feed_stream_spans(&f, stream, spans, k, mel)   only the samples of the speech
 *                                           spans, end to end (positions are the joined
 *                                           speech's), still read in blocks
 *   asr_feed_get(&f, a, b, &x, &x0, &nx)    samples [a, b) (b past the end: fewer)
 *   asr_feed_free(&f);
 *
 * From a stream only a window of samples is held (about 31 s at 16 kHz):
 * memory is bounded by the window, not the recording. Requests should move
 * forward (the loop's seek does; MEL_N_FFT samples before the last start
 * are kept); one that goes back further reads the stream again from its
 * start. The first pass computes every
 * frame's mel once (to find the maximum); the windows compute theirs again
 * from the samples (mel_frames_log): the same numbers as one log-mel of the
 * whole recording.
 */
#ifndef ED_ASR_FEED_H
#define ED_ASR_FEED_H

#include "encdec.h"
#include "audio/audio.h"
#include "audio/mel.h"
#include "asr/speech.h"

#include <stdatomic.h>
#include <stddef.h>

typedef struct {
    const float *pcm;        /* in memory: all n samples (borrowed) */
    audio_stream *as;        /* else the stream (borrowed) */
    size_t n;                /* samples in the recording */
    double log_max;          /* largest log10 mel energy over the whole log-mel */
    float *buf;              /* stream: samples [b0, b0 + bn) */
    size_t b0, bn, cap;
    double mel_ms;           /* time of the first pass's mel */
    const asr_span *spans;   /* stream: the spans read through (borrowed), or NULL */
    int n_spans, span_i;     /* the span the stream's position is in or before */
    size_t raw;              /* the stream's position (samples of the recording) */
    float *raw_buf;          /* a block of the recording, before the spans' filter */
} asr_feed;

/* The first pass: the length and the log-mel's maximum. cancel (may be
 * NULL): checked between blocks; once set, the pass ends with
 * ENCDEC_ERR_CANCELLED (an engine's request asked to stop). */
encdec_status asr_feed_memory(asr_feed *f, const float *pcm, size_t n, const mel_ctx *mel,
                              const atomic_int *cancel);
encdec_status asr_feed_stream(asr_feed *f, audio_stream *as, const mel_ctx *mel,
                              const atomic_int *cancel);
/* The same over the samples of spans[n_spans] alone (increasing, not
 * overlapping, within the stream; n_spans > 0), put end to end. A stream
 * that ends inside a span is ENCDEC_ERR_AUDIO. mel NULL: no first pass (the
 * length is the spans'; log_max unset): a reader of the joined samples. */
encdec_status asr_feed_stream_spans(asr_feed *f, audio_stream *as, const asr_span *spans,
                                    int n_spans, const mel_ctx *mel, const atomic_int *cancel);
/* Samples [a, min(b, n)) of the recording: *x holds [*x0, *x0 + *nx), a
 * range that contains them (valid until the next call). */
encdec_status asr_feed_get(asr_feed *f, size_t a, size_t b, const float **x, size_t *x0,
                           size_t *nx);
void asr_feed_free(asr_feed *f);

#endif
