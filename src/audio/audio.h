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

/* Resamples mono float PCM (for callers that decode audio themselves). */
encdec_status audio_resample(const float *in, size_t n_in, int rate_in,
                             int rate_out, float **out, size_t *n_out);

#endif
