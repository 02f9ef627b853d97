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

/* Rules that read a sequence's history: what the fixed lists cannot say
 * (Whisper's timestamp rules, a repetition detector). gen[0, n_gen) are the
 * tokens the sequence generated so far (the prompt excluded). Either
 * function may be NULL. Pure: called for many sequences at once. */
typedef struct {
    /* Modifies logits[n_vocab] in place, after the suppressions. */
    void (*apply)(const void *ctx, float *logits, int n_vocab, const int *gen, int n_gen);
    /* Nonzero: the sequence may stop now, after gen[n_gen - 1] (it then
     * ends without eot and before max_new tokens: a caller can tell). A
     * decode of one sequence stops; one of several stops when the hook
     * has said so for every live sequence and none has ended (search.h). */
    int (*stop)(const void *ctx, const int *gen, int n_gen);
    const void *ctx;
} dec_hook;

typedef struct {
    const int *suppress;        /* ids set to -inf at every step */
    int n_suppress;
    const int *begin_suppress;  /* ids set to -inf at the first generated position */
    int n_begin_suppress;
    int eot;                    /* stops decoding (and is part of the output) */
    int max_new;                /* most tokens generated, eot included; >= 1 */
    const dec_hook *hook;       /* NULL: none */
    const int *forced;          /* [n_forced] tokens the caller fed after the prompt as if they
                                   were generated (a forced prefix): the rules see them, every
                                   output starts with them (log-prob 0), max_new counts them.
                                   The *_fed strategies take them (dec_independent_fed,
                                   dec_beam_ow); n_forced < max_new */
    int n_forced;
    float repetition_penalty;   /* CTranslate2's (faster-whisper's): a logit of a token the
                                   sequence generated (forced ones included) is divided by it
                                   when >= 0, multiplied when < 0, once however often the token
                                   came; 0 or 1: off */
    int no_repeat_ngram;        /* > 0: a token that would repeat an n-gram of the sequence's
                                   generated tokens is banned (-inf), CTranslate2's rule */
    int min_new;                /* eot banned while fewer tokens were generated (forced ones
                                   included): transformers' min_length - 1 */
    int force_last;             /* 1: the max_new-th token is force_last_id, whatever the
                                   logits (transformers' forced_eos_token_id) */
    int force_last_id;
    const int *pen_prompt;      /* [n_pen_prompt] tokens penalized besides the generated ones
                                   (transformers': the decoder start); NULL: none */
    int n_pen_prompt;
    int ct2;                    /* beam search (beam.c): 1, CTranslate2's order (the rules on
                                   the logits, then the log-softmax); 0, transformers' (the
                                   log-softmax first, the rules on the log-probs: suppressed
                                   tokens -inf unrenormalised, the penalty scales log-probs) */
    const int *more_eot;        /* [n_more_eot] tokens that end a sequence as eot does (and are
                                   banned with it before min_new): CTranslate2's end_token list.
                                   NULL: none */
    int n_more_eot;
} dec_rules;

/* Applies the rules in place to the logits of a sequence that has generated
 * gen[0, n_gen) so far (n_gen = 0: the first position; gen may then be NULL),
 * in CTranslate2's order: the repetition penalty, the n-gram ban, the
 * suppressions, then the hook. */
void dec_apply_rules(float *logits, int n_vocab, const dec_rules *r, const int *gen, int n_gen);

/* 1 when the rules force the token at n_gen (r->force_last at the last
 * position): dec_apply_rules leaves force_last_id at 0 and every other
 * logit at -inf. A search that takes log-probs of the raw logits (beam.c,
 * as transformers' processors see log-probs) gives that token log-prob 0
 * itself, as ForcedEOSTokenLogitsProcessor does. */
static inline int dec_forced_at(const dec_rules *r, int n_gen, int n_vocab) {
    return r->force_last && n_gen == r->max_new - 1 && r->force_last_id >= 0 && r->force_last_id < n_vocab;
}

/* 1 when tok ends a sequence: r->eot, or one of r->more_eot. */
static inline int dec_is_eot(const dec_rules *r, int tok) {
    if (tok == r->eot) return 1;
    for (int i = 0; i < r->n_more_eot; i++)
        if (tok == r->more_eot[i]) return 1;
    return 0;
}

/* Nonzero when r's hook stops the sequence after gen[0, n_gen). */
int dec_should_stop(const dec_rules *r, const int *gen, int n_gen);

/* log softmax(logits)[id], computed stably. */
float dec_logprob(const float *logits, int n_vocab, int id);

/* Feeds the prompt to sequence seq, then picks the most likely allowed
 * token until eot, max_new tokens or the hook's stop. out_tok/out_lp get the tokens and
 * their log-probabilities (under the rule-filtered distribution); *n_out
 * their count. */
encdec_status dec_greedy(const dec_model *m, int seq, const int *prompt, int n_prompt,
                         const dec_rules *r, float *logits, int *out_tok, float *out_lp,
                         int *n_out);

#endif
