/* search.h - decoding strategies over the seam of seam.h: batched greedy,
 * beam search (Hugging Face transformers 4.46 semantics) and sampling.
 *
 *   dec_beam_params bp = { .n_beams = 5, .length_penalty = 1, .early_stopping = 1, .n_return = 1 };
 *   st = dec_beam(&dm, n_inputs, prompt, n_prompt, &rules, &bp, toks, lps, lens, scores);
 *   ... sequence i: toks + i * rules.max_new, lens[i] tokens, scores[i]
 *
 * Strategies see only logits. One call decodes several inputs ("groups")
 * of W sequences each; group g uses sequence ids g * W + j (the model side
 * maps them to inputs). All sequences of a call advance together: one
 * dm->step per generated position, for every sequence still running.
 *
 * Outputs, for all strategies: n_out sequences; sequence i's tokens at
 * out_tok + i * max_new (eos included when it ended with eos), their
 * log-probabilities at out_lp + i * max_new, count out_len[i], and
 * out_score[i] (greedy / sampling: the sum of the token log-probs; beam:
 * the final length-normalised beam score, as HF's sequences_scores).
 * Buffers sized by the caller: n_out * r->max_new (tokens, lps), n_out
 * (len, score).
 *
 * The functions allocate their working memory once per call and free it
 * before returning. They keep no state: calls on different models may run
 * on different threads at once. An error from a seam call is returned as is
 * (the outputs are then undefined).
 */
#ifndef ED_SEARCH_H
#define ED_SEARCH_H

#include "decode/greedy.h"

#include <stdint.h>

/* Greedy for n_seq sequences (ids 0..n_seq-1) at once: every sequence is
 * fed `prompt` (dm->feed), then all unfinished ones take one dm->step
 * together per token; finished ones (eos, or max_new tokens) drop out of
 * the steps. Token for token what dec_greedy gives each sequence alone.
 * n_out = n_seq. */
encdec_status dec_greedy_batch(const dec_model *m, int n_seq, const int *prompt, int n_prompt,
                               const dec_rules *r, int *out_tok, float *out_lp, int *out_len,
                               float *out_score);

/* dec_greedy_batch after the prompt (dec_independent_fed's contract). */
encdec_status dec_greedy_fed(const dec_model *m, int n_seq, float *logits, const dec_rules *r,
                             int *out_tok, float *out_lp, int *out_len, float *out_score);

typedef struct {
    int n_beams;            /* >= 1 */
    float length_penalty;   /* score = sum_logprobs / (generated_len ^ length_penalty), HF */
    int early_stopping;     /* 1: a group is done once it has n_beams finished hypotheses (HF True);
                               0: HF's False heuristic (done when no live beam can beat the worst kept);
                               2: HF's "never" (done when no live beam can, even at max_new tokens) */
    int n_return;           /* 1..max(n_beams, n_finish): best hypotheses returned per group */
    int n_finish;           /* early_stopping 1: a group is done once this many hypotheses
                               finished (CTranslate2's round(beam_size * patience)); 0: n_beams.
                               Other than n_beams, every finished one is kept (CTranslate2's
                               list), not the n_beams best (HF's) */
    int exit_top;           /* early_stopping 1: done instead once the best candidate of a
                               step ended and n_return hypotheses finished (CTranslate2's exit
                               with length_penalty 0 and no coverage penalty) */
    /* Optional (NULL: none): added to each hypothesis' score before the
     * ranking at the end (CTranslate2's coverage penalty): group g's
     * hypothesis of n tokens (its end token included), path[t] the
     * sequence whose row chose token t (dec_task's path). */
    double (*rescore)(void *ctx, int g, const int *path, int n);
    void *rescore_ctx;
    int n_uncounted;        /* the first forced tokens that neither count in the length the
                               penalty divides by nor are a target prefix to CTranslate2's
                               rules (an alternative's first tokens: alt.c) */
    /* CTranslate2's biased decoding (decode/bias.h): prefix[0, n_prefix)
     * (not forced) drawn with prefix_beta in (0, 1); NULL: none */
    const int *prefix;
    int n_prefix;
    float prefix_beta;
} dec_beam_params;

/* Beam search for n_groups inputs at once, HF transformers 4.46 semantics
 * (_beam_search + BeamSearchScorer + BeamHypotheses): group g uses
 * sequences g*n_beams + j, all fed the prompt; a candidate's score is its
 * beam's running score plus log_softmax(logits) with the rules applied
 * afterwards (suppressed tokens -inf, not renormalised); the first step
 * expands beam 0 only (the others start at -1e9); each step takes the top
 * 2*n_beams candidates of a group over n_beams x V, and an eos candidate
 * ranked below n_beams is dropped, one ranked within them becomes a
 * finished hypothesis (n_beams best kept per group, scored with the
 * generated length, eos counted); at max_new tokens the live beams of
 * unfinished groups join the hypotheses. One dm->step per position for all
 * live beams; beams fork through dm->reorder (only the sequences that
 * change are named); groups that are done drop out of the steps.
 * Outputs: n_out = n_groups * n_return, group g's rank k at index
 * g*n_return + k, best first; out_lp: the rule-filtered log-probs; a
 * group with fewer hypotheses than n_return (n_finish > n_beams, the
 * length limit reached first) has out_len -1 at the ranks it lacks.
 * Candidates with equal scores rank by beam, then token (torch.topk leaves
 * that order unspecified). Cost per position: O(n_beams * V) per group
 * (a partial selection, no sort of the vocabulary); memory: the logits of
 * all beams, [n_groups * n_beams, V] floats. Forced tokens (r->forced:
 * fed after the prompt, as HF's forced_bos_token_id forces the first) are
 * the first steps of every beam with log-prob 0, counted in max_new and in
 * the generated length that the length penalty divides by, as in HF.
 * Requires n_vocab >= 2 and dm->reorder when n_beams > 1. */
encdec_status dec_beam(const dec_model *m, int n_groups, const int *prompt, int n_prompt,
                       const dec_rules *r, const dec_beam_params *bp,
                       int *out_tok, float *out_lp, int *out_len, float *out_score);

typedef struct {
    int n_beams;            /* 1..1024 */
    float patience;         /* > 0: search until round(n_beams * patience) hypotheses end */
    float length_penalty;   /* < 0: rank by sum_logprobs / length (openai-whisper's None);
                               0..1: by sum_logprobs / ((5 + length) / 6) ^ length_penalty */
} dec_ow_beam_params;

/* Beam search with openai-whisper's semantics (BeamSearchDecoder and
 * MaximumLikelihoodRanker) for one input, after the prompt: sequences
 * 0..n_beams-1 hold it already (fed once and shared: dec_feed_shared), and
 * logits0[n_vocab] is what it gave. Per step, each beam's logits get the
 * rules (with its own history, r->hook) before the log-softmax, so log-probs
 * are those of the filtered distribution; each beam proposes its
 * n_beams + 1 most likely tokens (ties: lower id first; the first step:
 * beam 0 only, the others being copies); the candidates are ranked by
 * running score (stable: beam order, then token rank) and walked: one
 * ending in eot becomes a finished hypothesis, the others beams until
 * n_beams are kept; the newly finished join the finished ones, best first,
 * up to round(n_beams * patience) (ties to even, as Python). The search ends
 * when that many have finished or at r->max_new tokens; then, when fewer
 * than n_beams finished, the live beams join (best first, eot appended with
 * log-prob 0). The best hypothesis by the length-normalised score wins
 * (length without eot); ties go to the one that finished first. A stop from
 * r->hook on every live beam while none has finished ends the search at
 * once with the best live beam as the result (no eot, fewer than max_new
 * tokens). Outputs: tokens (eot
 * included when it ended with one), their log-probs, count, and *out_sum,
 * the sum of the log-probs (eot's too when it was chosen). Needs dm->reorder
 * for n_beams > 1. */
encdec_status dec_beam_ow(const dec_model *m, const float *logits0, const dec_rules *r,
                          const dec_ow_beam_params *bp, int *out_tok, float *out_lp, int *out_len,
                          float *out_sum);

typedef struct {
    float temperature;      /* > 0 */
    int top_k;              /* 0 = off */
    float top_p;            /* (0, 1]; 1 = off */
    uint64_t seed;
    int lp_unscaled;        /* 1: out_lp (and scores) under the rule-filtered distribution
                               before temperature, top-k and top-p (openai-whisper's
                               avg_logprob); 0: under the processed one (HF) */
} dec_sample_params;

/* Sampling for n_groups x n_per_group sequences (ids g*n_per_group + j),
 * stepped together like dec_greedy_batch. After the rules, logits are
 * processed in HF's order: temperature, top-k (tokens tied with the k-th
 * are kept), top-p (keep the smallest set of most likely tokens whose
 * probability reaches top_p, at least 1 token), then a draw from the
 * softmax. Sequence g*n_per_group+j draws from its own random stream seeded
 * from (seed, j) only, so an input's samples do not depend on which other
 * inputs share the batch or where it sits in it, and a seed reproduces the
 * output exactly. out_lp: log-prob under the processed distribution. */
encdec_status dec_sample(const dec_model *m, int n_groups, int n_per_group, const int *prompt,
                         int n_prompt, const dec_rules *r, const dec_sample_params *sp,
                         int *out_tok, float *out_lp, int *out_len, float *out_score);

/* The same after the prompt (dec_independent_fed's contract for logits). */
encdec_status dec_sample_fed(const dec_model *m, int n_groups, int n_per_group, float *logits,
                             const dec_rules *r, const dec_sample_params *sp, int *out_tok,
                             float *out_lp, int *out_len, float *out_score);

/* Validation shared by the API and CLI: ENCDEC_ERR_ARG with a message that
 * names the field and the value for absurd values. */
encdec_status dec_beam_params_check(const dec_beam_params *bp);
encdec_status dec_ow_beam_params_check(const dec_ow_beam_params *bp);
encdec_status dec_sample_params_check(const dec_sample_params *sp);

/* The engine of dec_greedy_batch and dec_sample, for strategies that pick
 * each sequence's next token on its own: pick(ctx, seq, index, logits,
 * n_vocab, &lp) gets sequence seq's logits[n_vocab] for generated position
 * index (0 = first) with the rules applied, may modify them, and returns
 * the token, with its log-probability in *lp. pure: pick touches nothing
 * but its arguments, so the sequences of a step may pick at once on the
 * model's threads (m->par_for). */
typedef int (*dec_pick_fn)(void *ctx, int seq, int index, float *logits, int n_vocab, float *lp);

encdec_status dec_independent(const dec_model *m, int n_seq, const int *prompt, int n_prompt,
                              const dec_rules *r, dec_pick_fn pick, void *pick_ctx, int pure,
                              int *out_tok, float *out_lp, int *out_len, float *out_score);

/* The same after the prompt: sequences 0..n_seq-1 are fed already and
 * logits[n_seq, n_vocab] (used as scratch from then on) hold what the
 * prompt gave each. The decode stops early when r->hook's stop has held
 * for every live sequence (each since some step of its own) while none has
 * ended by eot or max_new: the live ones end there. */
encdec_status dec_independent_fed(const dec_model *m, int n_seq, float *logits, const dec_rules *r,
                                  dec_pick_fn pick, void *pick_ctx, int pure, int *out_tok,
                                  float *out_lp, int *out_len, float *out_score);

/* Shared by the strategies: ENCDEC_ERR_ARG, the message prefixed with
 * `who`, unless m has feed and step, n_seq >= 1, a prompt is given,
 * r->max_new >= 1 and the four outputs are not NULL. */
encdec_status dec_check_args(const char *who, const dec_model *m, int n_seq, const int *prompt,
                             int n_prompt, const dec_rules *r, const int *out_tok,
                             const float *out_lp, const int *out_len, const float *out_score);

/* ed_alloc of n * size bytes; NULL with ENCDEC_ERR_NOMEM recorded when the
 * product overflows or the allocation fails. */
void *dec_alloc_n(size_t n, size_t size, const char *what);

#endif
