/* beam_ow.c - beam search with openai-whisper's semantics (see search.h):
 * per-beam candidates, patience, hypotheses ranked by length-normalised
 * log-probability.
 *
 * Beams are sequences 0..W-1 of the seam. Each keeps its tokens and their
 * log-probs in a row of `hist` / `hlp` (copied when a beam takes over
 * another's history: a few hundred ints per step, nothing next to a decoder
 * pass); the K/V rows are shared through dm->reorder, never copied.
 * Running scores are float32 sums, as torch keeps them.
 */
#include "decode/task.h"
#include "base/err.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float score;    /* beam's running score + the token's log-prob */
    float lp;
    int beam, tok, rank;   /* rank: insertion order, for a stable sort */
} ow_cand;

typedef struct {
    float sum;      /* the sum of its log-probs, eot's included */
    int len;        /* tokens, eot included when it has one */
    int *tok;       /* [max_new] */
    float *lp;      /* [max_new] */
} ow_hyp;

typedef struct {
    dec_task task;          /* first: the task's rows */
    const dec_model *m;
    const dec_rules *r;
    dec_ow_beam_params bp;
    int *out_tok, *out_len;
    float *out_lp, *out_sum;
    int t, F;               /* tokens so far (forced included); forced */
    int W, V, N, max_fin;
    float *logits;          /* [W, V] the prompt's (copies); the steps' are wherever task.logits
                               points when advance runs */
    float *mx, *lse;        /* [W] each beam's log-softmax terms */
    float *sum;             /* [W] running scores */
    int *hist, *hist2;      /* [W, N] tokens (hist2: the next step's) */
    float *hlp, *hlp2;      /* [W, N] their log-probs */
    ow_cand *cands;         /* [W * (W + 1)] */
    ow_hyp *fin;            /* [max_fin + W]: finished, in the order they finished */
    int n_fin;
    int *hyp_tok;           /* [(max_fin + W), N] their storage */
    float *hyp_lp;
    int *to, *from, *next;  /* [W] reorder and step arguments */
    int *seq;               /* [W] the step's sequences: 0..W-1 */
    int *ncand;             /* [W] beam j's candidates, at cands + j * (W + 1) (ow_row) */
} ow_run;

encdec_status dec_ow_beam_params_check(const dec_ow_beam_params *bp) {
    if (!bp) return ed_fail(ENCDEC_ERR_ARG, "beam: no parameters");
    if (bp->n_beams < 1 || bp->n_beams > 1024)
        return ed_fail(ENCDEC_ERR_ARG, "beam: n_beams must be in [1, 1024] (got %d)", bp->n_beams);
    if (!(bp->patience > 0) || !(bp->patience <= 64) || nearbyint((double)bp->n_beams * bp->patience) < 1)
        return ed_fail(ENCDEC_ERR_ARG, "beam: patience must be in (0, 64] and keep at least one "
                       "hypothesis (got %g for %d beams)", bp->patience, bp->n_beams);
    if (!(bp->length_penalty <= 1) || isnan(bp->length_penalty))
        return ed_fail(ENCDEC_ERR_ARG, "beam: length_penalty must be in [0, 1], or negative for "
                       "simple length normalisation (got %g)", bp->length_penalty);
    return ENCDEC_OK;
}

static int cand_before(const ow_cand *a, const ow_cand *b) {
    if (a->score != b->score) return a->score > b->score;
    return a->rank < b->rank;
}

static int cand_cmp(const void *pa, const void *pb) {
    const ow_cand *a = pa, *b = pb;
    return cand_before(a, b) ? -1 : cand_before(b, a) ? 1 : 0;
}

/* The k most likely tokens of a row (log-probs lp = x - mx - lse), most
 * likely first, ties to the lower id: appended to c as candidates of beam j. */
static int top_k_row(ow_cand *c, int n, const float *x, int V, int k, int j, float base, float mx,
                     float lse) {
    int first = n;
    for (int v = 0; v < V; v++) {
        float lp = (x[v] - mx) - lse;
        int have = n - first;
        if (have == k && !(lp > c[n - 1].lp)) continue;
        int at = have < k ? n++ : n - 1;   /* replaces the last when full */
        while (at > first && lp > c[at - 1].lp) {
            c[at] = c[at - 1];
            at--;
        }
        c[at] = (ow_cand){base + lp, lp, j, v, 0};
    }
    return n;
}

static void add_hyp(ow_run *b, const int *tok, const float *lp, int len, float sum, int eot) {
    ow_hyp *h = &b->fin[b->n_fin];
    h->tok = b->hyp_tok + (size_t)b->n_fin * b->N;
    h->lp = b->hyp_lp + (size_t)b->n_fin * b->N;
    b->n_fin++;
    memcpy(h->tok, tok, sizeof *tok * (size_t)len);
    memcpy(h->lp, lp, sizeof *lp * (size_t)len);
    h->len = len;
    h->sum = sum;
    if (eot >= 0 && len < b->N) {   /* the finalisation appends eot to live beams */
        h->tok[len] = eot;
        h->lp[len] = 0;
        h->len++;
    }
}

/* One step's candidates for all beams after the rules: new beams into
 * hist2/hlp2/sum/next/from, finished ones into b->fin. t: tokens so far;
 * first: the first step (the beams are copies of beam 0 then). */
static void select_step(ow_run *b, int t, int first) {
    int W = b->W, nc = 0;
    for (int j = 0; j < (first ? 1 : W); j++) {   /* each beam's (ow_row), in beam order */
        memmove(b->cands + nc, b->cands + (size_t)j * (W + 1), sizeof *b->cands * (size_t)b->ncand[j]);
        nc += b->ncand[j];
    }
    for (int i = 0; i < nc; i++) b->cands[i].rank = i;
    qsort(b->cands, (size_t)nc, sizeof *b->cands, cand_cmp);
    int saved = 0, N = b->N;
    for (int i = 0; i < nc && saved < W; i++) {
        const ow_cand *c = &b->cands[i];
        const int *h = b->hist + (size_t)c->beam * N;
        const float *hl = b->hlp + (size_t)c->beam * N;
        if (c->tok == b->r->eot) {   /* newly finished, appended in rank order */
            add_hyp(b, h, hl, t, c->score, -1);
            ow_hyp *f = &b->fin[b->n_fin - 1];
            f->tok[t] = c->tok;
            f->lp[t] = c->lp;
            f->len = t + 1;
            continue;
        }
        int *h2 = b->hist2 + (size_t)saved * N;
        float *hl2 = b->hlp2 + (size_t)saved * N;
        memcpy(h2, h, sizeof *h * (size_t)t);
        memcpy(hl2, hl, sizeof *hl * (size_t)t);
        h2[t] = c->tok;
        hl2[t] = c->lp;
        b->sum[saved] = c->score;
        b->from[saved] = c->beam;
        b->next[saved] = c->tok;
        saved++;
    }
    for (int j = saved; j < W; j++) {   /* fewer candidates than beams: never in practice */
        memcpy(b->hist2 + (size_t)j * N, b->hist2, sizeof(int) * (size_t)(t + 1));
        memcpy(b->hlp2 + (size_t)j * N, b->hlp2, sizeof(float) * (size_t)(t + 1));
        b->sum[j] = -INFINITY;
        b->from[j] = b->from[0];
        b->next[j] = b->next[0];
    }
    /* the newly finished (at most one per beam) join while fewer than max_fin */
    if (b->n_fin > b->max_fin) b->n_fin = b->max_fin;   /* n_fin < max_fin before the step */
    int *sw = b->hist;
    b->hist = b->hist2;
    b->hist2 = sw;
    float *sl = b->hlp;
    b->hlp = b->hlp2;
    b->hlp2 = sl;
}

static double ow_score(const ow_hyp *h, int eot, float length_penalty) {
    int len = h->len - (h->len > 0 && h->tok[h->len - 1] == eot);
    double pen = length_penalty < 0 ? len : pow((5.0 + len) / 6.0, length_penalty);
    return h->sum / pen;
}

/* The live beams join when fewer than W finished (best running score first). */
static void finalize(ow_run *b, int t) {
    int W = b->W;
    while (b->n_fin < W) {
        int best = -1;
        for (int j = 0; j < W; j++)
            if (b->from[j] >= 0 && (best < 0 || b->sum[j] > b->sum[best])) best = j;
        if (best < 0) break;
        add_hyp(b, b->hist + (size_t)best * b->N, b->hlp + (size_t)best * b->N, t, b->sum[best],
                b->r->eot);
        b->from[best] = -1;
    }
}

static void ow_free(ow_run *b) {
    free(b->logits);
    free(b->hist);
    free(b->hist2);
    free(b->hlp);
    free(b->hlp2);
    free(b->cands);
    free(b->fin);
    free(b->hyp_tok);
    free(b->hyp_lp);
    free(b->to);
    free(b);
}

static encdec_status ow_alloc(ow_run *b) {
    size_t W = (size_t)b->W, N = (size_t)b->N, H = (size_t)b->max_fin + W;
    b->logits = dec_alloc_n(W * b->V + 3 * W, sizeof(float), "beam logits");
    b->hist = dec_alloc_n(W * N, sizeof(int), "beam tokens");
    b->hist2 = dec_alloc_n(W * N, sizeof(int), "beam tokens");
    b->hlp = dec_alloc_n(W * N, sizeof(float), "beam log-probs");
    b->hlp2 = dec_alloc_n(W * N, sizeof(float), "beam log-probs");
    b->cands = dec_alloc_n(W * (W + 1), sizeof *b->cands, "beam candidates");
    b->fin = dec_alloc_n(H, sizeof *b->fin, "beam hypotheses");
    b->hyp_tok = dec_alloc_n(H * N, sizeof(int), "beam hypotheses");
    b->hyp_lp = dec_alloc_n(H * N, sizeof(float), "beam hypotheses");
    b->to = dec_alloc_n(5 * W, sizeof(int), "beam step lists");
    if (!b->logits || !b->hist || !b->hist2 || !b->hlp || !b->hlp2 || !b->cands || !b->fin ||
        !b->hyp_tok || !b->hyp_lp || !b->to)
        return ENCDEC_ERR_NOMEM;
    b->mx = b->logits + W * b->V;
    b->lse = b->mx + W;
    b->sum = b->lse + W;
    b->from = b->to + W;
    b->next = b->from + W;
    b->seq = b->next + W;
    b->ncand = b->seq + W;
    return ENCDEC_OK;
}

typedef struct {
    ow_run *b;
    int t;
} ow_job;

/* Beam j's rules (its own history), log-softmax terms and candidates (its
 * W + 1 most likely tokens: the rows of a step in parallel, not a scan of
 * every row's logits after them). */
static void ow_row(void *arg, int j) {
    ow_job *q = arg;
    ow_run *b = q->b;
    float *row = b->task.logits + (size_t)j * b->V;
    dec_apply_rules(row, b->V, b->r, b->hist + (size_t)j * b->N, q->t);
    float mx;
    double l = k_logsumexp(row, b->V, &mx);
    b->mx[j] = mx == -INFINITY ? 0 : mx;
    b->lse[j] = mx == -INFINITY ? 0 : (float)l;
    b->ncand[j] = top_k_row(b->cands + (size_t)j * (b->W + 1), 0, row, b->V, b->W + 1, j, b->sum[j],
                            b->mx[j], b->lse[j]);
}

static void write_out(const ow_hyp *h, int *out_tok, float *out_lp, int *out_len, float *out_sum) {
    memcpy(out_tok, h->tok, sizeof *out_tok * (size_t)h->len);
    memcpy(out_lp, h->lp, sizeof *out_lp * (size_t)h->len);
    *out_len = h->len;
    *out_sum = h->sum;
}

/* The search's result into the caller's outputs: the stopped best beam,
 * or the best hypothesis after the live beams joined. */
static void ow_finish(ow_run *b, int stopped) {
    if (stopped) {
        ow_hyp h = {b->sum[0], b->t, b->hist, b->hlp};
        write_out(&h, b->out_tok, b->out_lp, b->out_len, b->out_sum);
        return;
    }
    for (int j = 0; j < b->W; j++) b->from[j] = j;
    finalize(b, b->t);
    int best = 0;
    double best_s = ow_score(&b->fin[0], b->r->eot, b->bp.length_penalty);
    for (int i = 1; i < b->n_fin; i++) {
        double s = ow_score(&b->fin[i], b->r->eot, b->bp.length_penalty);
        if (s > best_s) {
            best_s = s;
            best = i;
        }
    }
    write_out(&b->fin[best], b->out_tok, b->out_lp, b->out_len, b->out_sum);
}

/* 1 when the search can stop for the hook: no hypothesis has finished
 * (one could win over a live beam's result) and the hook stops every live
 * beam (any of them could become the best). */
static int all_loop(const ow_run *b) {
    if (b->n_fin > 0 || !b->r->hook || !b->r->hook->stop) return 0;
    for (int j = 0; j < b->W; j++)
        if (b->sum[j] > -INFINITY && !dec_should_stop(b->r, b->hist + (size_t)j * b->N, b->t))
            return 0;
    return 1;
}

/* One position: the rules and choices over b->logits, then either the end
 * (task.n = 0, outputs written) or the reorder and the next step's rows. */
static encdec_status ow_position(ow_run *b) {
    const dec_model *m = b->m;
    ow_job q = {b, b->t};
    int rows = b->t == b->F ? 1 : b->W;
    if (m->par_for && rows > 1) m->par_for(m->ctx, rows, ow_row, &q);
    else
        for (int j = 0; j < rows; j++) ow_row(&q, j);
    select_step(b, b->t, b->t == b->F);
    b->t++;
    b->task.n = 0;
    if (b->n_fin >= b->max_fin || b->t == b->N) {
        ow_finish(b, 0);
        return ENCDEC_OK;
    }
    if (all_loop(b)) {   /* nothing finished, and every live beam repeats itself */
        ow_finish(b, 1);
        return ENCDEC_OK;
    }
    int nr = 0;
    for (int j = 0; j < b->W; j++)
        if (b->from[j] != j) {
            b->to[nr] = j;
            b->from[nr++] = b->from[j];
        }
    encdec_status st = nr > 0 ? m->reorder(m->ctx, nr, b->to, b->from) : ENCDEC_OK;
    if (st) return st;
    for (int j = 0; j < b->W; j++) b->from[j] = j;   /* live again after the step */
    b->task.n = b->W;
    return ENCDEC_OK;
}

static encdec_status ow_advance(dec_task *t) { return ow_position((ow_run *)t); }
static void ow_destroy(dec_task *t) { ow_free((ow_run *)t); }

encdec_status dec_beam_ow_task(dec_task **out, const dec_model *m, const float *logits0,
                               const dec_rules *r, const dec_ow_beam_params *bp, int *out_tok,
                               float *out_lp, int *out_len, float *out_sum) {
    *out = NULL;
    int one = 0;
    float score;
    encdec_status st = dec_ow_beam_params_check(bp);
    if (!st) st = dec_check_args("beam", m, bp->n_beams, &one, 1, r, out_tok, out_lp, out_len,
                                 &score);
    if (st) return st;
    if (!logits0 || !out_sum) return ed_fail(ENCDEC_ERR_ARG, "beam: no logits after the prompt");
    if (bp->n_beams > 1 && !m->reorder)
        return ed_fail(ENCDEC_ERR_ARG, "beam: %d beams need a model with reorder", bp->n_beams);
    int F = r->n_forced > 0 ? r->n_forced : 0;
    if (F >= r->max_new)
        return ed_fail(ENCDEC_ERR_ARG, "beam: %d forced tokens leave no room in %d", F, r->max_new);
    ow_run *b = calloc(1, sizeof *b);
    if (!b) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: beam search");
    *b = (ow_run){.task = {.advance = ow_advance, .destroy = ow_destroy}, .m = m, .r = r,
                  .bp = *bp, .out_tok = out_tok, .out_len = out_len, .out_lp = out_lp,
                  .out_sum = out_sum, .t = F, .F = F, .W = bp->n_beams, .V = m->n_vocab,
                  .N = r->max_new, .max_fin = (int)nearbyint((double)bp->n_beams * bp->patience)};
    if ((st = ow_alloc(b))) {
        ow_free(b);
        return st;
    }
    for (int j = 0; j < b->W; j++) {
        memcpy(b->logits + (size_t)j * b->V, logits0, sizeof(float) * (size_t)b->V);
        b->sum[j] = 0;
        b->seq[j] = j;
        for (int k = 0; k < F; k++) {   /* fed already: every history starts with them */
            b->hist[(size_t)j * b->N + k] = r->forced[k];
            b->hlp[(size_t)j * b->N + k] = 0;
        }
    }
    b->task.n = 1;   /* the prompt's logits: the first advance chooses from them */
    b->task.seq = b->seq;
    b->task.tok = b->next;
    b->task.logits = b->logits;
    *out = &b->task;
    return ENCDEC_OK;
}

encdec_status dec_beam_ow(const dec_model *m, const float *logits0, const dec_rules *r,
                          const dec_ow_beam_params *bp, int *out_tok, float *out_lp, int *out_len,
                          float *out_sum) {
    dec_task *t;
    encdec_status st = dec_beam_ow_task(&t, m, logits0, r, bp, out_tok, out_lp, out_len, out_sum);
    if (st) return st;
    st = dec_task_run(t, m);
    dec_task_free(t);
    return st;
}
