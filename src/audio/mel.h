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

/* The filter bank [n_mels, 201] (borrowed), for tests. */
const float *mel_filters(const mel_ctx *m);

#endif
