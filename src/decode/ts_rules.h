/* ts_rules.h - Whisper's timestamp rules, as a history hook (greedy.h's
 * dec_hook) behind the decoding seam.
 *
 *   dec_ts_rules ts = { .ts_begin = 50364, .eot = 50256, .no_timestamps = 50363,
 *                       .max_initial = 50 };
 *   dec_hook h = dec_ts_hook(&ts);   rules.hook = &h;
 *
 * The rules of openai-whisper's ApplyTimestampRules, applied to one
 * sequence's logits given the tokens it generated so far (gen[0, n)):
 *   - <|notimestamps|> is never generated;
 *   - timestamps come in pairs, except directly before eot: after a lone
 *     timestamp (the one before it was text) only a timestamp or eot may
 *     follow; after a pair (or a timestamp as the first token) only text;
 *   - timestamps never decrease, and a segment has a nonzero length: after
 *     a lone timestamp t the next must be >= t, otherwise > the last one;
 *   - the first token is a timestamp, at most max_initial (1.0 s = 50);
 *   - when the total probability of the timestamps (log-sum-exp of their
 *     log-probabilities) beats every other token's, a timestamp is forced.
 * Text tokens are ids < eot; timestamps are ids >= ts_begin. The rules run
 * after the suppressions, as openai-whisper's filters do. Pure: no state,
 * safe for many sequences at once.
 */
#ifndef ED_TS_RULES_H
#define ED_TS_RULES_H

#include "decode/greedy.h"

typedef struct {
    int ts_begin;        /* <|0.00|>; timestamps are the ids from here to n_vocab - 1 */
    int eot;             /* <|endoftext|>: ids below it are text */
    int no_timestamps;   /* <|notimestamps|>, suppressed; -1: none */
    int max_initial;     /* highest timestamp index allowed first; -1: no limit */
} dec_ts_rules;

/* The rules above on logits[n_vocab], for a sequence that generated
 * gen[0, n_gen). ctx: a dec_ts_rules. */
void dec_ts_apply(const void *ctx, float *logits, int n_vocab, const int *gen, int n_gen);

/* A hook that applies dec_ts_apply (no stop rule); borrows ts. */
dec_hook dec_ts_hook(const dec_ts_rules *ts);

#endif
