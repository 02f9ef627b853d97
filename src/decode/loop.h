/* loop.h - repetition in a sequence's history: the signature of Whisper's
 * classic failure, a phrase repeated until the token limit.
 *
 *   int period, span = dec_repeat_tail(gen, n, eot, 64, &period);
 *   if (span >= 32 && span >= 3 * period) ... looping
 *
 * Only text tokens (ids below text_end) count, so timestamps that advance
 * between repetitions do not hide a loop. Pure.
 */
#ifndef ED_LOOP_H
#define ED_LOOP_H

/* The longest tail of the text tokens of gen[0, n) that repeats one block
 * of at most max_period tokens (the block itself included: a tail of span
 * s with period p holds s / p repetitions, the last maybe partial), over
 * the last 512 text tokens. 0 when no block repeats even once; *period
 * (may be NULL) gets the block's length, the shortest for the longest span. */
int dec_repeat_tail(const int *gen, int n, int text_end, int max_period, int *period);

#endif
