/* bias.h - CTranslate2's biased decoding toward a target prefix
 * (prefix_bias_beta) inside beam search (beam.c).
 *
 * The prefix is not forced: at step t < its length, a beam that has not
 * left it takes log((1 - beta) softmax(logits) + beta [v == prefix[t]])
 * instead of the log-softmax. Whether a beam has left the prefix is kept
 * as CTranslate2 keeps it: per slot of its own layout (slot k holds the
 * k-th best candidate, or, when that one ended, the next of the others),
 * each step flagging slot k from the k-th candidate's token and slot k's
 * flag of the step before, whichever beam that candidate came from. beam.c
 * lays its beams out otherwise (the best candidates that go on, in order),
 * so each of its beams is mapped to the slot holding its candidate.
 */
#ifndef ED_BIAS_H
#define ED_BIAS_H

#include "encdec.h"

typedef struct {
    const int *prefix;    /* [n] the caller's */
    int n;
    float beta;           /* (0, 1) */
    int W;                /* beams per group */
    unsigned char *left;  /* [G, W] slot k of group g has left the prefix (CTranslate2's layout) */
    int *slot;            /* [G, W] beam j's slot (-1: none: it counts as left) */
    int *cand_of;         /* [W] a step's slots' candidates */
} dec_bias;

/* NULL prefix or n 0: no bias (the other calls do nothing). */
encdec_status dec_bias_init(dec_bias *b, const int *prefix, int n, float beta, int G, int W);
void dec_bias_free(dec_bias *b);

/* Whether beam j of group g is biased at step t. */
int dec_bias_on(const dec_bias *b, int g, int j, int t);

/* row[V] (logits, the rules applied) into the biased log-probs of step t,
 * in float as CTranslate2 computes them (a probability below float's
 * smallest normal number is 0: its log -inf). */
void dec_bias_row(const dec_bias *b, float *row, int V, int t);

/* After step t of group g: tok[k] and ended[k] (an end token) of the best
 * n_cand candidates, best first; beam_cand[j] the candidate beam j took. */
void dec_bias_update(dec_bias *b, int g, int t, const int *tok, const unsigned char *ended, int n_cand,
                     const int *beam_cand);

#endif
