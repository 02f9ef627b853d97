/* t5_step.h - T5 behind the decoding seam: the three cache modes, several
 * inputs decoded at once, and beams that share history through an index
 * table instead of copies.
 *
 *   t5_state_reserve(state, &shape);  t5_encode(state, ...);
 *   t5_runner r;  t5_runner_init(&r, state, mode, width);   per request
 *   dec_model dm = t5_runner_seam(&r);   ... dec_beam(&dm, n_inputs, ...)
 *   t5_runner_free(&r);
 *
 * Sequences: width per input, sequence g * width + j decodes input g and
 * reads its cross cache (computed once in t5_runner_init for FULL).
 *
 * Index table: tab[seq][t] is the cache slot that holds position t of
 * sequence seq. A sequence writes its new positions into its own slot, and
 * a cell (slot, position) is written once; reorder (beam search) copies
 * the table rows and token histories of the parents (a few ints per
 * position), never the K/V cache itself.
 *
 * FULL: cross cache once, self cache appended one position per step.
 * SELF: the cross K/V of all inputs and layers are recomputed before every
 *       feed and step (what the cross cache saves).
 * NONE: additionally, every sequence reruns its whole prefix from position
 *       0 at every step (nothing reused).
 * All three give the same tokens (tests/test_t5_golden.c).
 */
#ifndef ED_T5_STEP_H
#define ED_T5_STEP_H

#include "decode/seam.h"
#include "models/t5.h"

typedef struct {
    t5_state *st;           /* borrowed */
    encdec_kv_mode mode;
    int n_slots, n_ctx;
    int *hist;              /* [n_slots, n_ctx] tokens fed per sequence */
    int *tab;               /* [n_slots, n_ctx] slot holding each position */
    int *len;               /* [n_slots] positions filled */
    int *high;              /* [n_slots] positions ever written to the slot */
    int *tmp;               /* [n_slots * (2 n_ctx + 1)] reorder snapshot */
    int *r_tok, *r_pos, *r_slot, *r_out;   /* [max_rows] row scratch */
    int n_steps;            /* step calls so far (one per generated position) */
} t5_runner;

/* After t5_state_reserve (n_slots = inputs x width) and t5_encode: maps the
 * sequences to inputs, empties them and, in FULL mode, fills the cross cache. */
encdec_status t5_runner_init(t5_runner *r, t5_state *st, encdec_kv_mode mode, int width);
void t5_runner_free(t5_runner *r);
dec_model t5_runner_seam(t5_runner *r);

#endif
