/* whisper_step.h - Whisper behind the decoding seam, in the three cache
 * modes (ENCDEC_KV_FULL, _SELF, _NONE).
 *
 *   whisper_runner r;  whisper_runner_init(&r, state, ENCDEC_KV_FULL);
 *   whisper_encode(state, mel);  whisper_runner_begin(&r);   once per input
 *   dec_model dm = whisper_runner_seam(&r);   ... dec_greedy(&dm, 0, ...)
 *   whisper_runner_free(&r);
 *
 * FULL: the cross cache is filled once in whisper_runner_begin and new
 *       tokens append to the self cache: a step computes only its own row.
 * SELF: as FULL, but every feed/step recomputes the cross K/V of all layers
 *       from the encoder output first (the cost the cross cache removes).
 * NONE: every feed/step recomputes the cross K/V and reruns the whole
 *       prefix of the sequence from position 0 (nothing reused).
 * All three produce the same tokens; tests/test_whisper_golden.c checks it.
 */
#ifndef ED_WHISPER_STEP_H
#define ED_WHISPER_STEP_H

#include "decode/seam.h"
#include "models/whisper.h"

typedef struct {
    whisper_state *st;      /* borrowed */
    encdec_kv_mode mode;
    int *hist;              /* [n_slots, n_ctx] tokens fed per sequence */
    int *len;               /* [n_slots] positions filled */
    int *r_tok, *r_pos, *r_slot, *r_out;   /* [max_rows] row scratch */
} whisper_runner;

encdec_status whisper_runner_init(whisper_runner *r, whisper_state *st, encdec_kv_mode mode);
void whisper_runner_free(whisper_runner *r);
/* A new input was encoded: empties every sequence, fills the cross cache
 * (FULL), and sets the mode for this input. */
void whisper_runner_begin(whisper_runner *r, encdec_kv_mode mode);
dec_model whisper_runner_seam(whisper_runner *r);
/* Positions filled in sequence seq. */
int whisper_runner_len(const whisper_runner *r, int seq);

#endif
