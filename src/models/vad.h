/* vad.h - Silero VAD v6, the speech detector faster-whisper runs before
 * Whisper: the probability that each 32 ms frame of 16 kHz audio is speech.
 *
 *   vad_model *m;  vad_load("~/.cache/encdec/models/silero-vad-v6", &m);
 *   vad_state *s;  vad_state_new(m, &s);
 *   vad_probs(s, pool, pcm, n_frames, probs);      frames of 512 samples, in order
 *   ... more frames: the state (LSTM, the last 64 samples) carries on
 *   vad_state_free(s);  vad_free(m);
 *
 * The network (tools/silero_vad_convert.py has the graph's layers): each
 * frame x[512], after the 64 samples before it (zeros before the first),
 * is reflect-padded by 128 on each side (832 samples); a 256-point
 * transform at hop 128 (the model's basis: 129 cosine and 129 sine rows)
 * gives the magnitudes of windows 1..4 ([129, 4]); four Conv1d (kernel 3,
 * padding 1) + ReLU layers: 129 -> 128 (stride 1), -> 64 (2), -> 64 (2),
 * -> 128 (1) leave one 128-vector; an LSTM of 128 (gates i, o, f, c) steps
 * once per frame; ReLU; a 128 -> 1 projection; sigmoid.
 *
 * Everything but the LSTM is independent per frame and runs as matrix
 * products over blocks of frames on the pool's threads, each row's bits
 * the same however the audio is cut into calls and whatever the pool's
 * size (the vector kernel sets); the LSTM steps frame by frame. The model
 * is read-only and shared; a state belongs to one caller at a time.
 */
#ifndef ED_VAD_H
#define ED_VAD_H

#include "encdec.h"
#include "base/pool.h"

#include <stddef.h>

#define VAD_FRAME 512       /* samples of a frame (32 ms at 16 kHz) */
#define VAD_CONTEXT 64      /* samples of the frame before that each frame also sees */
#define VAD_RATE 16000

typedef struct vad_model vad_model;
typedef struct vad_state vad_state;

/* The converted model at path (a directory with model.safetensors and
 * config.json, as tools/silero_vad_convert.py writes it). Every tensor's
 * shape is checked; a missing or corrupt file is a named error. */
encdec_status vad_load(const char *path, vad_model **out);
void vad_free(vad_model *m);

encdec_status vad_state_new(const vad_model *m, vad_state **out);
void vad_state_free(vad_state *s);
/* Back to the start of a recording: LSTM state and context zero. */
void vad_state_reset(vad_state *s);

/* The speech probabilities of n_frames frames pcm[n_frames * VAD_FRAME]
 * (16 kHz, in [-1, 1]) into probs[n_frames], continuing the recording the
 * state has seen so far; the products run on pool (needed). */
encdec_status vad_probs(vad_state *s, ed_pool *pool, const float *pcm, size_t n_frames,
                        float *probs);

#endif
