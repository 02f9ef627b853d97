/* audio.h - audio files to 16 kHz mono float PCM (libsndfile + libsoxr).
 *
 *   float *pcm; size_t n;
 *   if (audio_load(path, 16000, 0, &pcm, &n) == ENCDEC_OK) { ...; free(pcm); }
 *
 * Any format libsndfile reads (WAV, FLAC, OGG/Vorbis, MP3, ...). Channels are
 * averaged; the rate is converted with soxr's high-quality resampler; the
 * result is clipped to [-1, 1]. Non-finite samples (float files) are refused.
 * Errors (ENCDEC_ERR_IO / ENCDEC_ERR_AUDIO) name the file: missing, not
 * audio, corrupt, no samples, longer than max_seconds (when > 0).
 */
#ifndef ED_AUDIO_H
#define ED_AUDIO_H

#include "encdec.h"
#include <stddef.h>
#include <stdio.h>

encdec_status audio_load(const char *path, int target_rate, double max_seconds,
                         float **pcm, size_t *n_samples);

/* audio_load from an encoded file held in memory (data[len]: what a pipe
 * or an upload delivered); name is used in messages. */
encdec_status audio_load_memory(const void *data, size_t len, const char *name, int target_rate,
                                double max_seconds, float **pcm, size_t *n_samples);

/* With options and a report (encdec.h encdec_audio_params / _info; p and
 * info may be NULL): path "-" is standard input; streams are read whole
 * (source.c); a file shorter than its header promises is info->truncated,
 * or with p->strict an error. */
encdec_status audio_load_ex(const char *path, int target_rate, const encdec_audio_params *p,
                            float **pcm, size_t *n_samples, encdec_audio_info *info);
encdec_status audio_load_memory_ex(const void *data, size_t len, const char *name,
                                   int target_rate, const encdec_audio_params *p, float **pcm,
                                   size_t *n_samples, encdec_audio_info *info);

/* source.c: how path is read. A regular file that can be opened: *buf and
 * *spooled NULL (libsndfile opens it). A stream (path "-" = standard input
 * unless it is a terminal, a pipe, a FIFO waited for up to p->fifo_wait_s,
 * a character device): its bytes, whole, at most p->max_stream_bytes, in an
 * unlinked temporary file *spooled at its start (caller closes) when
 * spooled is not NULL and one can be made, else in *buf[*len] (caller
 * frees). Errors name the path: missing, unreadable, a directory, a block
 * device, an empty file, no data, too large. */
encdec_status audio_source(const char *path, const encdec_audio_params *p, unsigned char **buf,
                           size_t *len, FILE **spooled);

/* stream.c: an audio file decoded, checked and resampled block by block,
 * for recordings too long to hold (memory: a few blocks). The samples come
 * in order; after the last one, info has the length and the truncation
 * report (the errors are audio_load's: not audio, non-finite samples, too
 * long, cut short with p->strict). Rewind starts again from the first
 * sample (the file or buffer is opened again): the same samples again.
 *
 *   audio_stream *s;  audio_stream_open(&s, path, 16000, &params);
 *   while (!audio_stream_read(s, buf, cap, &got) && got) ...;  audio_stream_close(s);
 */
#define AUDIO_MAX_RATE 1000000     /* Hz; anything above is a corrupt header */
typedef struct audio_stream audio_stream;
encdec_status audio_stream_open(audio_stream **s, const char *path, int target_rate,
                                const encdec_audio_params *p);
/* data[len] stays the caller's and must outlive the stream. */
encdec_status audio_stream_open_memory(audio_stream **s, const void *data, size_t len,
                                       const char *name, int target_rate,
                                       const encdec_audio_params *p);
/* Up to cap samples into dst; *got 0 at the end. */
encdec_status audio_stream_read(audio_stream *s, float *dst, size_t cap, size_t *got);
encdec_status audio_stream_rewind(audio_stream *s);
const encdec_audio_info *audio_stream_info(const audio_stream *s);
/* The header's length in target-rate samples (0 unknown): a hint, not a promise. */
double audio_stream_hint_samples(const audio_stream *s);
void audio_stream_close(audio_stream *s);

/* Resamples mono float PCM (for callers that decode audio themselves). */
encdec_status audio_resample(const float *in, size_t n_in, int rate_in,
                             int rate_out, float **out, size_t *n_out);

#endif
