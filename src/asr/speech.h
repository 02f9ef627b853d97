/* speech.h - speech spans from a VAD's frame probabilities, and the map
 * between a recording and its speech put end to end: faster-whisper's
 * get_speech_timestamps, collect_chunks and SpeechTimestampsMap (its rules,
 * as facts: thresholds with hysteresis, the minimum silence that ends
 * speech, the maximum span split at the last silence over 98 ms, the
 * minimum span kept, the padding shared between close spans).
 *
 *   asr_speech_opts o;  asr_speech_default(&o);
 *   int n = asr_speech_spans(probs, n_frames, n_samples, &o, spans, cap);
 *   asr_speech_map mp;  asr_speech_map_init(&mp, spans, n, 16000, work);
 *   double t = asr_speech_time(&mp, 12.3, -1, 0);      time in the speech -> in the recording
 *
 * Pure; no allocation but the caller's arrays.
 */
#ifndef ED_ASR_SPEECH_H
#define ED_ASR_SPEECH_H

#include <stddef.h>

typedef struct {
    float threshold;            /* a frame at or above is speech (0.5) */
    float neg_threshold;        /* below it, silence (NAN: max(threshold - 0.15, 0.01)) */
    double min_speech_ms;       /* spans this short or shorter are dropped (0) */
    double max_speech_s;        /* longer spans are split (INFINITY) */
    double min_silence_ms;      /* silence this long ends a span (2000) */
    double pad_ms;              /* added on each side of a span (400) */
} asr_speech_opts;

void asr_speech_default(asr_speech_opts *o);

typedef struct {
    size_t start, end;          /* samples of the recording, [start, end) */
} asr_span;

/* The speech spans of a recording of n_samples samples whose frames of
 * frame samples have the probabilities probs[n_frames] (n_frames =
 * ceil(n_samples / frame): the last frame zero-padded). Up to cap spans
 * into out; returns how many there are (more than cap: only cap written). */
int asr_speech_spans(const float *probs, size_t n_frames, size_t n_samples, int frame,
                     const asr_speech_opts *o, asr_span *out, int cap);

/* Chunks for batched decoding (faster-whisper's collect_chunks): runs of
 * consecutive spans whose joined length stays within max_len samples; a
 * span longer than max_len is a chunk of its own. Chunk i is spans
 * [first, first + n), samples [offset, offset + len) of the joined speech. */
typedef struct {
    int first, n;
    size_t offset, len;
} asr_chunk;

/* Up to k chunks of spans[k] into out[k]; returns how many. */
int asr_speech_chunks(const asr_span *spans, int k, size_t max_len, asr_chunk *out);

/* The recording's time of a time in the speech spans put end to end. */
typedef struct {
    int n;
    double rate;
    const double *silence;      /* [n] samples cut before span i */
    const double *end;          /* [n] where span i ends in the joined speech */
} asr_speech_map;

/* work: [2 n] doubles, the caller's, alive as long as the map. */
void asr_speech_map_init(asr_speech_map *mp, const asr_span *spans, int n, double rate,
                         double *work);
/* The span a time of the joined speech falls in (faster-whisper's
 * get_chunk_index: the first span ending after it; one ending exactly there
 * when is_end). */
int asr_speech_chunk(const asr_speech_map *mp, double t, int is_end);
/* t (seconds of the joined speech) in the recording: + the silence cut
 * before span `chunk` (-1: the span asr_speech_chunk picks), rounded to
 * 0.01 s as faster-whisper rounds. */
double asr_speech_time(const asr_speech_map *mp, double t, int chunk, int is_end);

#endif
