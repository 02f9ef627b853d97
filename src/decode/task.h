/* task.h - decoding strategies that advance one step at a time.
 *
 * llama2.c's split: the model computes logits, the strategy picks tokens,
 * the caller owns the loop. A task is one strategy decoding one input's
 * sequences after the prompt; it says which sequences take which token next,
 * the caller runs the decoder over them (alone, or together with other
 * tasks' rows in one pass: the engine's scheduler) and hands the logits
 * back:
 *
 *   dec_task *t;
 *   st = dec_greedy_task(&t, &dm, n_seq, logits, &rules, tok, lp, len, score);
 *   st = dec_task_advance(t);                       picks from the prompt's logits
 *   while (!st && t->n > 0) {                       the rows of the next step
 *       st = dm.step(dm.ctx, t->n, t->seq, t->tok, t->logits);
 *       if (!st) st = dec_task_advance(t);          picks, then the next rows
 *   }
 *   dec_task_free(t);                               outputs are final when t->n == 0
 *
 * dec_task_run is that loop. A new task holds the prompt's logits (t->n > 0,
 * t->seq and t->tok not yet meaningful): its first advance picks from them
 * without a step, so creating a task touches no threads. Before any
 * advance the caller may point t->logits elsewhere (the rows of a merged
 * pass): the task reads the step's logits wherever t->logits points. A task may call its model's reorder (beams
 * taking over other beams' histories) and par_for (per-sequence choices on
 * the model's threads) inside advance, never feed or step: the caller's
 * loop is the only place decoder passes happen. Tasks of different inputs
 * are independent, so a scheduler may interleave them freely.
 *
 * Each strategy's one-call function (dec_greedy_fed, dec_sample_fed,
 * dec_beam_ow, dec_beam) is its task run to the end; the tokens are the same.
 */
#ifndef ED_TASK_H
#define ED_TASK_H

#include "decode/search.h"

typedef struct dec_task dec_task;

struct dec_task {
    int n;               /* sequences in the next step; 0: the task is done */
    const int *seq;      /* [n] their ids (the model's sequences) */
    const int *tok;      /* [n] the token each takes */
    float *logits;       /* [n, n_vocab]: where the step's logits go, row i for seq[i] */
    /* Optional, set by the caller before the end (NULL: not asked): [n_out,
     * max_new] the sequence whose row chose each output token (at the
     * token's position: a kept attention's row, runner.h's rn_att). Beam
     * search writes it (a hypothesis' beams, read back through the
     * parents); the other strategies leave it: output i is sequence i's. */
    int *path;
    /* Optional, set by the caller before the first advance (NULL: none):
     * the strategies that choose each sequence's token on its own (greedy,
     * sampling) call seen(seen_ctx, seq, index, row, n_vocab) with sequence
     * seq's logits for generated position index, the rules applied, before
     * the choice; for different sequences at once (par_for). A screened
     * row is exact only where the choice needed it: ask for exact steps
     * (runner.h's rn_screen 0). The other strategies never call it. */
    void (*seen)(void *ctx, int seq, int index, const float *row, int n_vocab);
    void *seen_ctx;
    /* internal */
    encdec_status (*advance)(dec_task *t);
    void (*destroy)(dec_task *t);
};

/* Consumes t->logits (the last step's) and sets the next rows, or t->n = 0
 * with the outputs written. An error leaves the task done (n = 0). */
encdec_status dec_task_advance(dec_task *t);
/* Runs t to the end over m->step. */
encdec_status dec_task_run(dec_task *t, const dec_model *m);
void dec_task_free(dec_task *t);

/* Greedy for sequences 0..n_seq-1 fed already (dec_greedy_fed's contract;
 * logits[n_seq, V] hold the prompt's logits, then serve as the steps'). The
 * outputs, logits and rules stay the caller's and must outlive the task. */
encdec_status dec_greedy_task(dec_task **out, const dec_model *m, int n_seq, float *logits,
                              const dec_rules *r, int *out_tok, float *out_lp, int *out_len,
                              float *out_score);
/* Sampling after the prompt (dec_sample_fed's contract); sp is copied. */
encdec_status dec_sample_task(dec_task **out, const dec_model *m, int n_groups, int n_per_group,
                              float *logits, const dec_rules *r, const dec_sample_params *sp,
                              int *out_tok, float *out_lp, int *out_len, float *out_score);
/* Any per-sequence choice after the prompt (dec_independent_fed's
 * contract); pick_free(pick_ctx) runs when the task is freed (NULL: none). */
encdec_status dec_independent_task(dec_task **out, const dec_model *m, int n_seq, float *logits,
                                   const dec_rules *r, dec_pick_fn pick, void *pick_ctx, int pure,
                                   void (*pick_free)(void *), int *out_tok, float *out_lp,
                                   int *out_len, float *out_score);
/* Hugging Face's beam search (dec_beam's contract) after the prompt: the
 * G x W sequences fed already, logits[G * W, V] what the prompt gave each
 * (copied; NULL: the caller writes them into the task's t->logits before
 * the first advance). bp is copied. */
encdec_status dec_beam_task(dec_task **out, const dec_model *m, int n_groups, float *logits,
                            const dec_rules *r, const dec_beam_params *bp, int *out_tok,
                            float *out_lp, int *out_len, float *out_score);
/* Alternatives at the first free position (CTranslate2's
 * return_alternatives), after the prompt: for each of n_groups inputs the
 * n_alt most likely tokens after its prompt and forced tokens (the rules
 * applied, the end tokens banned), those of probability min_prob or more,
 * each continued by a greedy search (beam.n_beams 1) or a beam search of
 * its own (beam: its parameters; one hypothesis). Group g's alternative k
 * decodes sequences (g * n_alt + k) * n_beams + [0, n_beams), all fed the
 * prompt already; logits[n_groups * n_alt * n_beams, V] what it gave each
 * (copied). Output g * n_alt + k: the forced tokens, the alternative (its
 * log-prob), its continuation; the score the alternative's log-prob plus
 * the continuation's (a beam's; greedy: the sum of its log-probs over its
 * length ^ beam.length_penalty), as CTranslate2 scores them; out_len -1 for
 * ranks past a group's alternatives. No hook; exact logits (a screening
 * model's screen off: the searches see a seam without one). */
#define DEC_ALT_MAX 64
typedef struct {
    int n_alt;              /* 1..DEC_ALT_MAX */
    float min_prob;         /* 0..1 */
    dec_beam_params beam;   /* n_beams 1: greedy (length_penalty still read) */
} dec_alt_params;

encdec_status dec_alt_task(dec_task **out, const dec_model *m, int n_groups, float *logits,
                           const dec_rules *r, const dec_alt_params *ap, int *out_tok, float *out_lp,
                           int *out_len, float *out_score);

/* openai-whisper's beam search after the prompt (dec_beam_ow's contract);
 * bp is copied, logits0 read during this call only. */
encdec_status dec_beam_ow_task(dec_task **out, const dec_model *m, const float *logits0,
                               const dec_rules *r, const dec_ow_beam_params *bp, int *out_tok,
                               float *out_lp, int *out_len, float *out_sum);

#endif
