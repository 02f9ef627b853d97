/* sample.c - sampling with temperature, top-k and top-p, in HF's order. */
#include "decode/task.h"
#include "decode/rng.h"
#include "base/err.h"
#include "base/mem.h"
#include "kern/kern.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

typedef struct {
    const dec_sample_params *sp;   /* -> own */
    dec_sample_params own;
    dec_rng *rng;       /* [n_seq]: sequence g*n_per_group + j draws from stream j */
    /* scratch per sequence, so that the sequences' picks run at once
     * (dec_independent_task's pure: each pick touches its own row only) */
    int V;
    float *heap;        /* [n_seq, top_k]: top-k's min-heap of values (top-k only) */
    float *w;           /* [n_seq, V]: exp(x / T - max), the draw's weights */
    int *idx;           /* [n_seq, V]: top-p's token ids (top-p only) */
} sampler;

encdec_status dec_sample_params_check(const dec_sample_params *sp) {
    if (!sp) return ed_fail(ENCDEC_ERR_ARG, "sampling: no parameters");
    if (!(sp->temperature > 0) || isinf(sp->temperature))
        return ed_fail(ENCDEC_ERR_ARG, "sampling: temperature must be a finite number > 0 (got %g)",
                       sp->temperature);
    if (sp->top_k < 0)
        return ed_fail(ENCDEC_ERR_ARG, "sampling: top_k must be >= 0, 0 = off (got %d)", sp->top_k);
    if (!(sp->top_p > 0 && sp->top_p <= 1))
        return ed_fail(ENCDEC_ERR_ARG, "sampling: top_p must be in (0, 1], 1 = off (got %g)",
                       sp->top_p);
    return ENCDEC_OK;
}

static void sift_min(float *h, int n, int i) {
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && h[c + 1] < h[c]) c++;
        if (!(h[c] < h[i])) return;
        float t = h[c];
        h[c] = h[i];
        h[i] = t;
        i = c;
    }
}

/* The k-th largest of x[0, n), 1 <= k <= n. heap[k]: a min-heap of the k
 * largest seen so far; O(n) when few values displace its root. */
static float kth_largest(const float *x, int n, int k, float *heap) {
    for (int i = 0; i < k; i++) heap[i] = x[i];
    for (int i = k / 2 - 1; i >= 0; i--) sift_min(heap, k, i);
    for (int i = k; i < n; i++)
        if (x[i] > heap[0]) {
            heap[0] = x[i];
            sift_min(heap, k, 0);
        }
    return heap[0];
}

/* Top-p on the weights w[n] = exp(x - max) (0 for removed tokens), whose
 * sum is `sum`: HF drops the least likely tokens whose probabilities add
 * up to at most 1 - top_p; walking down from the most likely, that keeps a
 * token while the mass above it is still below top_p (so at least one;
 * ties with the last one kept stay too). The walk is a quickselect,
 * expected O(n). Zeroes the weights of dropped tokens and returns the sum
 * of those kept. idx[n]: scratch. */
static double keep_top_p(float *w, int n, float top_p, double sum, int *idx) {
    /* Tokens of weight <= floor are dropped for sure: all of them together
     * weigh at most n * floor = (1 - top_p) * sum. Most of a long tail goes. */
    double floor = (1 - (double)top_p) * sum / n;
    int lo = 0, hi = 0;
    for (int i = 0; i < n; i++)
        if (w[i] > floor) idx[hi++] = i;
    /* idx[0, lo): kept, heavier than idx[lo, hi); above: their mass */
    double above = 0, need = top_p * sum;
    float cut = 0;
    while (lo < hi && above < need) {
        float pv = w[idx[lo + (hi - lo) / 2]];
        int gt = lo, lt = hi;   /* [lo, gt): > pv, [gt, i): == pv, [lt, hi): < pv */
        double mass_gt = 0, mass_eq = 0;
        for (int i = lo; i < lt;) {
            int id = idx[i];
            if (w[id] > pv) {
                mass_gt += w[id];
                idx[i++] = idx[gt];
                idx[gt++] = id;
            } else if (w[id] < pv) {
                idx[i] = idx[--lt];
                idx[lt] = id;
            } else {
                mass_eq += w[id];
                i++;
            }
        }
        if (above + mass_gt >= need) {
            hi = gt;            /* the cut is among the heavier ones */
        } else {
            above += mass_gt + mass_eq;
            cut = pv;
            lo = lt;
        }
    }
    double kept = 0;
    for (int i = 0; i < n; i++) {
        if (w[i] < cut) w[i] = 0;
        kept += w[i];
    }
    return kept;
}

/* Draws from the weights w[n] (sum: their total) with u in [0, 1): the
 * first token whose cumulative weight passes u * sum; zero weights never do.
 * The walk adds blocks of 8 (a tree: one dependent add a block) and walks
 * the block that passes one by one; if rounding leaves the total at or
 * below the target, the last token of nonzero weight. */
static int draw(const float *w, int n, double sum, double u) {
    double target = u * sum, acc = 0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const float *b = w + i;
        double blk = (((double)b[0] + b[1]) + ((double)b[2] + b[3])) +
                     (((double)b[4] + b[5]) + ((double)b[6] + b[7]));
        if (acc + blk > target) break;
        acc += blk;
    }
    for (; i < n; i++) {
        acc += w[i];
        if (acc > target && w[i] > 0) return i;
    }
    for (i = n - 1; i >= 0; i--)
        if (w[i] > 0) return i;
    return -1;
}

static int pick_sample(void *ctx, int seq, int index, float *x, int n, float *lp) {
    sampler *s = ctx;
    const dec_sample_params *sp = s->sp;
    float *w = s->w + (size_t)seq * s->V;
    float mx0 = 0;
    double lse0 = sp->lp_unscaled ? k_logsumexp(x, n, &mx0) : 0;   /* before any processing */
    float t = sp->temperature;
    int filter = (sp->top_k > 0 && sp->top_k < n) || sp->top_p < 1.0f;
    if (filter && t != 1.0f) {   /* HF's order: the temperature, then the filters */
        for (int i = 0; i < n; i++) x[i] /= t;
        t = 1.0f;
    }
    if (sp->top_k > 0 && sp->top_k < n) {
        float kth = kth_largest(x, n, sp->top_k, s->heap + (size_t)seq * sp->top_k);
        for (int i = 0; i < n; i++)
            if (x[i] < kth) x[i] = -INFINITY;
    }
    float mx;
    double sum = k_exp_scaled(w, x, n, t, &mx);   /* w = exp(x / t - mx) */
    if (mx == -INFINITY) {      /* every token is suppressed */
        *lp = -INFINITY;
        return k_argmax(x, n);
    }
    if (sp->top_p < 1.0f) sum = keep_top_p(w, n, sp->top_p, sum, s->idx + (size_t)seq * s->V);
    int tok = draw(w, n, sum, dec_rng_uniform(&s->rng[seq]));
    if (tok < 0) {   /* no weight above 0: NaN logits (a broken model) made every weight NaN */
        *lp = -INFINITY;
        return k_argmax(x, n);
    }
    float xt = t != 1.0f ? x[tok] / t : x[tok];   /* the token's x / T, as the weights saw it */
    if (sp->lp_unscaled) {
        float x0 = sp->temperature != 1.0f ? xt * sp->temperature : xt;   /* undo 1/T */
        *lp = (float)((double)(x0 - mx0) - lse0);
    } else {
        *lp = (float)((double)(xt - mx) - log(sum));
    }
    return tok;
}

static void sampler_free(void *ctx) {
    sampler *s = ctx;
    if (!s) return;
    free(s->rng);
    free(s->heap);
    free(s->idx);
    free(s->w);
    free(s);
}

/* A sampler for n_groups x n_per_group sequences. */
static encdec_status sampler_new(sampler **out, const dec_model *m, int n_groups, int n_per_group,
                                 const dec_sample_params *sp) {
    *out = NULL;
    encdec_status st = dec_sample_params_check(sp);
    if (st) return st;
    if (n_groups < 1 || n_per_group < 1 || n_groups > INT_MAX / n_per_group)
        return ed_fail(ENCDEC_ERR_ARG, "sampling: %d groups of %d sequences is out of range",
                       n_groups, n_per_group);
    int n_seq = n_groups * n_per_group, V = m && m->n_vocab > 0 ? m->n_vocab : 1;
    sampler *s = calloc(1, sizeof *s);
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: sampler");
    s->own = *sp;
    s->sp = &s->own;
    s->rng = dec_alloc_n(n_seq, sizeof *s->rng, "sampling random streams");
    s->V = V;
    int k = sp->top_k > 0 && sp->top_k < V ? sp->top_k : 1;
    s->heap = dec_alloc_n((size_t)n_seq * k, sizeof *s->heap, "sampling top-k heaps");
    s->w = dec_alloc_n((size_t)n_seq * V, sizeof *s->w, "sampling weights");
    s->idx = dec_alloc_n(sp->top_p < 1.0f ? (size_t)n_seq * V : 1, sizeof *s->idx, "sampling top-p ids");
    if (!s->rng || !s->heap || !s->idx || !s->w) {
        sampler_free(s);
        return ENCDEC_ERR_NOMEM;
    }
    for (int i = 0; i < n_seq; i++) dec_rng_seed(&s->rng[i], sp->seed, (uint64_t)(i % n_per_group));
    *out = s;
    return ENCDEC_OK;
}

encdec_status dec_sample_task(dec_task **out, const dec_model *m, int n_groups, int n_per_group,
                              float *logits, const dec_rules *r, const dec_sample_params *sp,
                              int *out_tok, float *out_lp, int *out_len, float *out_score) {
    *out = NULL;
    sampler *s;
    encdec_status st = sampler_new(&s, m, n_groups, n_per_group, sp);
    if (st) return st;
    return dec_independent_task(out, m, n_groups * n_per_group, logits, r, pick_sample, s, 1,
                                sampler_free, out_tok, out_lp, out_len, out_score);
}

encdec_status dec_sample(const dec_model *m, int n_groups, int n_per_group, const int *prompt,
                         int n_prompt, const dec_rules *r, const dec_sample_params *sp,
                         int *out_tok, float *out_lp, int *out_len, float *out_score) {
    if (!prompt || n_prompt < 1)
        return ed_fail(ENCDEC_ERR_ARG, "sampling: need a prompt of at least one token (got %d)",
                       n_prompt);
    sampler *s;
    encdec_status st = sampler_new(&s, m, n_groups, n_per_group, sp);
    if (st) return st;
    st = dec_independent(m, n_groups * n_per_group, prompt, n_prompt, r, pick_sample,
                                       s, 1, out_tok, out_lp, out_len, out_score);
    sampler_free(s);
    return st;
}

encdec_status dec_sample_fed(const dec_model *m, int n_groups, int n_per_group, float *logits,
                             const dec_rules *r, const dec_sample_params *sp, int *out_tok,
                             float *out_lp, int *out_len, float *out_score) {
    dec_task *t;
    encdec_status st = dec_sample_task(&t, m, n_groups, n_per_group, logits, r, sp, out_tok,
                                       out_lp, out_len, out_score);
    if (st) return st;
    st = dec_task_run(t, m);
    dec_task_free(t);
    return st;
}
