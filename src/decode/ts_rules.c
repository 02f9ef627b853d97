/* ts_rules.c - Whisper's timestamp rules (see ts_rules.h). */
#include "decode/ts_rules.h"
#include "kern/kern.h"

#include <math.h>

static void fill(float *x, int lo, int hi, float v) {
    for (int i = lo; i < hi; i++) x[i] = v;
}

/* The last timestamp of gen[0, n), or -1. */
static int last_timestamp(const int *gen, int n, int ts_begin) {
    for (int i = n - 1; i >= 0; i--)
        if (gen[i] >= ts_begin) return gen[i];
    return -1;
}

void dec_ts_apply(const void *ctx, float *x, int V, const int *gen, int n) {
    const dec_ts_rules *r = ctx;
    int tb = r->ts_begin;
    if (tb <= 0 || tb >= V) return;
    if (r->no_timestamps >= 0 && r->no_timestamps < V) x[r->no_timestamps] = -INFINITY;
    int last_ts = n >= 1 && gen[n - 1] >= tb;
    int penult_ts = n < 2 || gen[n - 2] >= tb;
    if (last_ts) {
        if (penult_ts) fill(x, tb, V, -INFINITY);                 /* a pair: text next */
        else fill(x, 0, r->eot < V ? r->eot : V, -INFINITY);       /* lone: timestamp or eot */
    }
    int t_last = last_timestamp(gen, n, tb);
    if (t_last >= 0) {
        /* never decreasing; a segment is never empty */
        int lo = last_ts && !penult_ts ? t_last : t_last + 1;
        fill(x, tb, lo < V ? lo : V, -INFINITY);
    }
    if (n == 0) {
        fill(x, 0, tb, -INFINITY);
        if (r->max_initial >= 0) fill(x, tb + r->max_initial + 1 < V ? tb + r->max_initial + 1 : V, V,
                                      -INFINITY);
    }
    /* A timestamp when they are together more likely than any single other
     * token (compared in logits: the common normaliser cancels). */
    float mx_ts;
    double lse = k_logsumexp(x + tb, V - tb, &mx_ts);
    if (mx_ts == -INFINITY) return;
    float best_text = -INFINITY;
    for (int i = 0; i < tb; i++)
        if (x[i] > best_text) best_text = x[i];
    if ((double)mx_ts + lse > (double)best_text) fill(x, 0, tb, -INFINITY);
}

dec_hook dec_ts_hook(const dec_ts_rules *ts) {
    dec_hook h = {dec_ts_apply, NULL, ts};
    return h;
}
