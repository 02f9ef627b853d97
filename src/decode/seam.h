/* seam.h - the one narrow seam between decoding strategies and a model.
 *
 *   dec_model dm = { ctx, n_vocab, feed, step, reorder };
 *   dm.feed(dm.ctx, seq, prompt, n_prompt, logits);     prefill: logits of the last token
 *   dm.step(dm.ctx, n_seq, seqs, tokens, logits);       one token for each of n_seq sequences
 *   dm.reorder(dm.ctx, n, seqs, srcs);                  beams: seqs[i] continues srcs[i]
 *   dm.feed_n(dm.ctx, n_seq, seqs, prompt, n_prompt, logits);   optional: one prefill for many
 *   dm.logit_err(dm.ctx, i), dm.logit_exact(...)      optional: screened logits, refined
 *
 * A sequence is a small integer (a cache slot) that the model side owns.
 * Strategies (greedy, beam search, sampling) only see logits [n, n_vocab]
 * and never model internals. Which input a sequence decodes (and so which
 * cross cache it reads) is the model side's business, fixed before decoding:
 * by convention a strategy decoding G groups of W sequences each uses
 * sequences g * W + j, and the model maps all W of group g to input g.
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
    /* Between steps: for i < n, sequence seq[i] takes over the history (its
     * tokens and self-attention cache) that sequence src[i] had before the
     * call, all at once (a permutation, or several children of one parent).
     * Sequences not named keep theirs. NULL when the model cannot fork. */
    encdec_status (*reorder)(void *ctx, int n, const int *seq, const int *src);
    /* Optional (NULL: feed one sequence at a time): feed for sequences
     * seq[0, n_seq), all given the same tokens[0, n), in as few passes as
     * the model's rows allow; logits[n_seq, n_vocab]. The same logits as
     * n_seq feeds: bitwise where the products are batch-invariant (half
     * weights in panels, the bf16 mode; f32 weights up to 16 rows a pass),
     * else to rounding. */
    encdec_status (*feed_n)(void *ctx, int n_seq, const int *seq, const int *tokens, int n,
                            float *logits);
    /* Optional (NULL: the caller loops): fn(arg, i) for every i < n on the
     * model's threads, returning when all are done (per-sequence token
     * choice over the vocabulary). */
    void (*par_for)(void *ctx, int n, void (*fn)(void *arg, int i), void *arg);
    /* Optional (NULL: every logit exact). Screened logits (models/screen.h):
     * row i of the logits the last feed, feed_n or step wrote may hold raw
     * logits that are off by up to logit_err(ctx, i) (0: that row is exact);
     * logit_exact writes the exact raw logits of tokens ids[0, n) of row i.
     * A model that screens has feed_n (so dec_feed_all's rows are one call's).
     * Only dec_independent's tasks read screened rows (runner.h's rn_screen
     * is asked for greedy decodes): a greedy choice refines the tokens that
     * could win, so it is the exact logits' argmax; a sampled one refines
     * every token of the row. */
    float (*logit_err)(void *ctx, int row);
    void (*logit_exact)(void *ctx, int row, const int *ids, int n, float *out);
} dec_model;

/* Feeds `tokens` to sequences 0..n_seq-1: m->feed_n when there is one. */
encdec_status dec_feed_all(const dec_model *m, int n_seq, const int *tokens, int n, float *logits);

/* Feeds `tokens` once, to sequence 0, and hands its history to sequences
 * 1..n_seq-1 through m->reorder, so they all read the prompt's self-attention
 * rows from one slot; logits[n_seq, n_vocab] are n_seq copies. For sequences
 * that decode one input (best-of samples, beams). Without reorder: as
 * dec_feed_all. */
encdec_status dec_feed_shared(const dec_model *m, int n_seq, const int *tokens, int n, float *logits);

#endif
