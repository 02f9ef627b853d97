/* seam.h - the one narrow seam between decoding strategies and a model.
 *
 *   dec_model dm = { ctx, n_vocab, feed, step };
 *   dm.feed(dm.ctx, seq, prompt, n_prompt, logits);     prefill: logits of the last token
 *   dm.step(dm.ctx, n_seq, seqs, tokens, logits);       one token for each of n_seq sequences
 *
 * A sequence is a small integer (a cache slot) that the model side owns.
 * Strategies (greedy today; beam search and sampling share this seam) only
 * see logits [n, n_vocab] and never model internals. All sequences a model
 * context serves decode the same input, and read one shared cross cache.
 */
#ifndef ED_SEAM_H
#define ED_SEAM_H

#include "encdec.h"

typedef struct {
    void *ctx;
    int n_vocab;
    /* Appends tokens[0, n) to sequence seq; writes the logits after the last
     * one into logits[n_vocab]. */
    encdec_status (*feed)(void *ctx, int seq, const int *tokens, int n, float *logits);
    /* Appends token[i] to sequence seq[i] for i < n_seq, all in one pass;
     * writes logits[n_seq, n_vocab]. */
    encdec_status (*step)(void *ctx, int n_seq, const int *seq, const int *token, float *logits);
} dec_model;

#endif
