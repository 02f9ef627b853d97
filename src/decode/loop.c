/* loop.c - the periodic tail of a sequence (see loop.h). */
#include "decode/loop.h"

#define LOOP_WINDOW 512

int dec_repeat_tail(const int *gen, int n, int text_end, int max_period, int *period) {
    int t[LOOP_WINDOW], m = 0;
    for (int i = n - 1; i >= 0 && m < LOOP_WINDOW; i--)   /* newest first */
        if (gen[i] < text_end) t[m++] = gen[i];
    int best = 0, best_p = 0;
    for (int p = 1; p <= max_period && 2 * p <= m; p++) {
        int run = 0;
        while (run + p < m && t[run] == t[run + p]) run++;
        if (run >= p && run + p > best) {   /* at least one whole repetition */
            best = run + p;
            best_p = p;
        }
    }
    if (period) *period = best_p;
    return best;
}
