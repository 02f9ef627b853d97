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

/* source.c: how path is read. A regular file that can be opened: *buf NULL
 * (libsndfile opens it). A stream (path "-" = standard input unless it is a
 * terminal, a pipe, a FIFO waited for up to p->fifo_wait_s, a character
 * device): its bytes, whole, in *buf[*len] (caller frees), at most
 * p->max_stream_bytes. Errors name the path: missing, unreadable, a
 * directory, a block device, an empty file, no data, too large. */
encdec_status audio_source(const char *path, const encdec_audio_params *p, unsigned char **buf,
                           size_t *len);

/* Resamples mono float PCM (for callers that decode audio themselves). */
encdec_status audio_resample(const float *in, size_t n_in, int rate_in,
                             int rate_out, float **out, size_t *n_out);

#endif
