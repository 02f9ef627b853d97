/* greedy.h - greedy decoding with logit rules (suppressed tokens, tokens
 * suppressed at the first position), over the seam of seam.h.
 *
 *   dec_rules r = { sup, n_sup, begin, n_begin, eot, 200 };
 *   st = dec_greedy(&dm, 0, prompt, n_prompt, &r, logits_scratch, toks, lps, &n);
 *
 * Pure decoding logic: testable with a hand-made model that returns fixed
 * logits. No allocation: the caller provides logits[n_vocab] and the
 * outputs [max_new].
 */
#ifndef ED_GREEDY_H
#define ED_GREEDY_H

#include "decode/seam.h"

typedef struct {
    const int *suppress;        /* ids set to -inf at every step */
    int n_suppress;
    const int *begin_suppress;  /* ids set to -inf at the first generated position */
    int n_begin_suppress;
    int eot;                    /* stops decoding (and is part of the output) */
    int max_new;                /* most tokens generated, eot included; >= 1 */
} dec_rules;

/* Applies the rules for generated position `index` (0 = first) in place. */
void dec_apply_rules(float *logits, int n_vocab, const dec_rules *r, int index);

/* log softmax(logits)[id], computed stably. */
float dec_logprob(const float *logits, int n_vocab, int id);

/* Feeds the prompt to sequence seq, then picks the most likely allowed
 * token until eot or max_new tokens. out_tok/out_lp get the tokens and
 * their log-probabilities (under the rule-filtered distribution); *n_out
 * their count. */
encdec_status dec_greedy(const dec_model *m, int seq, const int *prompt, int n_prompt,
                         const dec_rules *r, float *logits, int *out_tok, float *out_lp,
                         int *n_out);

#endif
