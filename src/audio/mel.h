/* mel.h - Whisper's log-mel spectrogram.
 *
 *   mel_ctx *m = mel_new(80);                      (or 128)
 *   float *out = malloc(80 * 3000 * sizeof *out);  [n_mels, 3000]
 *   mel_compute(m, pcm + start, n, out, 3000);      one 30 s window
 *   mel_free(m);
 *
 * As Whisper: 16 kHz input, periodic Hann window of 400, hop 160, |STFT|^2
 * with reflect padding (center), the last frame dropped, Slaney-style mel
 * filters on 201 bins (0..8 kHz), log10(max(x, 1e-10)), clamp to max - 8
 * over the window, then (x + 4) / 4. Samples past n are zeros (the 30 s
 * padding). A mel_ctx holds the filters and the window: read-only after
 * mel_new, shareable. mel_compute allocates its own scratch (not on a decode
 * path).
 */
#ifndef ED_MEL_H
#define ED_MEL_H

#include "encdec.h"
#include <stddef.h>

#define MEL_SAMPLE_RATE 16000
#define MEL_N_FFT 400
#define MEL_HOP 160
#define MEL_CHUNK_SAMPLES (30 * MEL_SAMPLE_RATE)   /* 480000 */
#define MEL_CHUNK_FRAMES (MEL_CHUNK_SAMPLES / MEL_HOP) /* 3000 */

typedef struct mel_ctx mel_ctx;

mel_ctx *mel_new(int n_mels);   /* n_mels 80 or 128; NULL + message otherwise */
void mel_free(mel_ctx *m);

/* out[n_mels, n_frames] for the samples pcm[0, n) padded with zeros to
 * n_frames * MEL_HOP samples (n may be less or more: extra samples are
 * ignored beyond what the frames see, as Whisper pads to 30 s then cuts).
 * The maximum for the max-8 clamp is taken over the n_frames frames. */
encdec_status mel_compute(const mel_ctx *m, const float *pcm, size_t n,
                          float *out, int n_frames);

/* For a recording too long to hold: the log10 mel energies (before the
 * max-8 clamp and the scaling) of frames [t0, t0 + nt) of the whole signal
 * of n_total samples (zeros after it, reflected before its start as the
 * STFT's centre padding does), given its samples [x0, x0 + nx) in x, which
 * must hold every real sample those frames see. Into out[k * ld + c] for
 * frame t0 + c; returns the largest value. Frame by frame the same numbers
 * as mel_compute of the whole signal padded with 30 s of zeros. */
double mel_frames_log(const mel_ctx *m, const float *x, size_t x0, size_t nx, size_t n_total,
                      long long t0, int nt, float *out, size_t ld);
/* Then the clamp to log_max - 8 (log_max: the largest over the whole
 * signal's frames) and (x + 4) / 4, in place over nt columns. */
void mel_frames_finish(const mel_ctx *m, float *out, int nt, size_t ld, double log_max);

/* The filter bank [n_mels, 201] (borrowed), for tests. */
const float *mel_filters(const mel_ctx *m);

#endif
