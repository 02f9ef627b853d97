/* window.h - one 30 s window decoded with temperature fallback.
 *
 *   asr_work w;  asr_work_init(&w, env, p);
 *   ... encoder run and runner begun for the window (the cross cache filled)
 *   asr_window_prompt(&w, env, prev, n_prev, sot_seq, n_sot_seq, rest, n_rest, &no_speech);
 *   asr_window_decode(&w, env, p, seek, &res, rep);   res.tok[0, res.n) ...
 *   asr_work_free(&w);
 *
 * The prompt ([<|startofprev|> previous text] <|startoftranscript|> ...) is
 * fed once per window, into the state's last sequence slot; every decode
 * attempt (each temperature) and every candidate or beam of it reads the
 * prompt's cache rows from there (the runner's index table), so a fallback
 * re-decode costs only its new tokens: no encoder pass, no cross cache, no
 * prompt prefill.
 *
 * Fallback, as openai-whisper's decode_with_fallback: temperatures are
 * tried in order; a decode fails when its compression ratio is above the
 * threshold or its average log-probability below its threshold, unless the
 * window looks silent (no-speech probability above its threshold with a low
 * log-probability). At temperature 0: greedy, or beam search with
 * patience; above: best_of samples, the one with the best length-normalised
 * log-probability wins. When every temperature fails, the attempt kept is
 * faster-whisper's choice (the highest average log-probability among the
 * attempts under the compression threshold, else among all) or, with
 * keep_last, openai-whisper's (the last); the result says so (all_failed).
 *
 * Loop detection (none of the peers has it) saves time and never changes
 * a verdict: a sequence whose text tokens end in a block of at most 64
 * tokens repeated, over at least 32 tokens and 3 repetitions, and whose
 * text so far compresses above the compression threshold, stops at once,
 * and the decode fails as the whole one would (its text goes on
 * repeating). It runs only where that verdict is the whole decode's: never
 * when the window's no-speech probability is above its threshold (the
 * silence rule then needs the whole decode's log-probability), never on
 * the last temperature (kept or weighed whatever it scores), never with a
 * repetition penalty or an n-gram ban (they can end a loop); a beam search
 * stops only when every live beam repeats and none has finished; a sample
 * that stopped could not have outranked one that ended unless its score
 * bound says so (then the attempt is decoded again without stopping); and
 * when every temperature fails, the stopped attempts are decoded again
 * whole before faster-whisper's choice weighs them. Speech that merely
 * repeats a word or a short phrase a few times does not trip it.
 */
#ifndef ED_ASR_WINDOW_H
#define ED_ASR_WINDOW_H

#include "asr/asr.h"
#include "decode/greedy.h"
#include "decode/ts_rules.h"

typedef struct {
    const asr_env *env;
    const asr_params *p;
    int V, W, N;            /* vocabulary, most sequences, most tokens per sequence */
    int prompt_seq;         /* the slot holding the window's prompt */
    int n_prompt;           /* its length */
    float *logits;          /* [W, V] */
    float *logits0;         /* [V] what the prompt gave */
    int *tok;               /* [W, N] */
    float *lp;              /* [W, N] */
    int *len;               /* [W] */
    float *score;           /* [W] */
    int *seq;               /* [2 W] reorder lists */
    const int *forced;      /* [n_forced] the window's forced start (the prefix), fed with the
                               prompt; the decodes begin with them (set by the caller) */
    int n_forced;
    int *suppress;          /* the model's list + the special tokens openai-whisper suppresses */
    int n_suppress;
    dec_ts_rules ts;
    dec_hook hook;
    int loop_on;            /* the loop detector may stop the decode running now */
    int *att_tok;           /* [ASR_MAX_TEMPS, N] the failed attempts' tokens */
    float *att_lp;          /* [ASR_MAX_TEMPS, N] */
    struct asr_window_result_ *att;   /* [ASR_MAX_TEMPS] their results (tokens in att_tok) */
} asr_work;

typedef struct asr_window_result_ {
    const int *tok;         /* [n] the accepted decode, eot excluded (borrowed from the work) */
    const float *lp;        /* [n] */
    int n;
    double sum_logprob, avg_logprob, compression_ratio;
    float no_speech_prob, temperature;   /* temperature: of the decode kept */
    float last_temperature; /* of the last decode tried (the prompt resets after one above 0.5) */
    int looped;             /* the loop detector stopped the accepted decode */
    int all_failed;         /* every temperature failed: the decode kept is the rule's choice */
    int attempts;           /* temperatures tried for this window */
} asr_window_result;

encdec_status asr_work_init(asr_work *w, const asr_env *env, const asr_params *p);
void asr_work_free(asr_work *w);

/* Feeds the prompt: head[n_head] (ending with <|startoftranscript|>: its
 * logits give the no-speech probability, and language detection when
 * lang_logits is not NULL: a copy of that row, [V]), then rest[n_rest]
 * (language, task, <|notimestamps|>, prefix; may be empty). The runner
 * must have begun the window. */
encdec_status asr_window_prompt(asr_work *w, const int *head, int n_head, const int *rest,
                                int n_rest, float *no_speech, float *lang_logits);

/* Decodes the window (after asr_window_prompt) with fallback; seek (the
 * window's first frame) varies the sampling seed between windows
 * (asr_seed: attempt i's). */
uint64_t asr_seed(const asr_params *p, int seek, int attempt);
encdec_status asr_window_decode(asr_work *w, int seek, float no_speech, asr_window_result *res,
                                asr_report *rep);

#endif
