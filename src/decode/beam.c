/* beam.c - beam search with the semantics of Hugging Face transformers 4.46
 * (GenerationMixin._beam_search, BeamSearchScorer, BeamHypotheses).
 *
 * A beam's history is never copied: step t records, for each slot, the
 * token chosen, its log-prob and the slot it extended (its parent at step
 * t - 1); a hypothesis is a slot and a length, read back through the
 * parents at the end. Running scores are float32 sums as in HF (so that
 * near-ties fall the same way); hypothesis scores are doubles, as HF's
 * Python floats.
 */
#include "decode/task.h"
#include "decode/bias.h"
#include "base/err.h"
#include "base/mem.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BEAM_MAX 1024

typedef struct {
    float score;        /* beam's running score + the token's log-prob */
    int beam, tok;
} cand;

typedef struct {
    double score;       /* sum_logprobs / generated_len ^ length_penalty */
    int n_beam_tok;     /* tokens read back from a beam's history */
    int slot;           /* that beam: the slot after step n_beam_tok - 1 */
    int eos;            /* 1: then eos (the end token eos_tok), with log-prob eos_lp, chosen
                           from beam eos_beam's row */
    int eos_tok, eos_beam;
    float eos_lp;
    long order;         /* insertion order: HF's tie-break when sorting */
} hyp;

typedef struct {
    hyp *h;             /* [n_beams + 1], in insertion order */
    int n;
    double worst;       /* HF's worst_score */
    int done;
} hyp_list;

typedef struct {
    dec_task task;      /* first: the task's rows */
    const dec_model *m;
    const dec_rules *r;
    const dec_beam_params *bp;   /* -> bp_own */
    dec_beam_params bp_own;
    int *out_tok, *out_len;
    float *out_lp, *out_score;
    int t;              /* the step whose logits the next advance reads */
    int G, W, V, N;     /* groups, beams per group, vocabulary, max_new */
    float *logits;      /* [G * W, V]: the prompt's; a step's are where task.logits points,
                           the live groups' beams in order */
    float *score;       /* [G * W] running score of each slot */
    int *tok;           /* [N, G * W] token taken by each slot at step t */
    float *lp;          /* [N, G * W] its (rule-filtered) log-prob */
    int *parent;        /* [N, G * W] the slot in the group it extended */
    cand *cands;        /* [2 * W] */
    int *ended;         /* [W] a step's candidates of the best W that ended */
    int *path;          /* [N] a hypothesis' sequences (bp->rescore) */
    dec_bias bias;      /* bp->prefix: a step's beams toward it */
    int *beam_cand;     /* [W] (bias) the candidate each beam took */
    int *cand_tok;      /* [2 W] (bias) the candidates' tokens */
    unsigned char *cand_end;   /* [2 W] (bias) which ended */
    float *mx, *lse;    /* [W] log_softmax terms of a group's rows */
    hyp_list *lists;    /* [G] */
    hyp *hyps;          /* [G, cap + 1]: the lists' storage */
    int cap;            /* hypotheses a list keeps: W (HF's), or every one that can finish
                           before the group is done (n_finish other than W) */
    int n_finish;       /* bp->n_finish, or W */
    unsigned char *top_ended;   /* [G] bp->exit_top: a step's best candidate ended */
    int *seq, *next, *to, *from;   /* [G * W] step and reorder arguments */
    int *hist;          /* [W, N] a group's beams' tokens so far, for the rules that read
                           them (repetition_penalty, no_repeat_ngram); NULL when none do */
    long n_added;
} beam_run;

encdec_status dec_beam_params_check(const dec_beam_params *bp) {
    if (!bp) return ed_fail(ENCDEC_ERR_ARG, "beam: no parameters");
    if (bp->n_beams < 1 || bp->n_beams > BEAM_MAX)
        return ed_fail(ENCDEC_ERR_ARG, "beam: n_beams must be in [1, %d] (got %d)", BEAM_MAX,
                       bp->n_beams);
    if (bp->n_finish < 0 || bp->n_finish > 64 * BEAM_MAX)
        return ed_fail(ENCDEC_ERR_ARG, "beam: n_finish %d is out of range 0..%d", bp->n_finish,
                       64 * BEAM_MAX);
    if ((bp->n_finish || bp->exit_top || bp->rescore) && bp->early_stopping != 1)
        return ed_fail(ENCDEC_ERR_ARG, "beam: n_finish, exit_top and rescore are for a search "
                       "with early_stopping 1 only (got %d)", bp->early_stopping);
    if (bp->prefix && bp->n_prefix > 0 && !(bp->prefix_beta > 0 && bp->prefix_beta < 1))
        return ed_fail(ENCDEC_ERR_ARG, "beam: prefix_beta %g is not in (0, 1)", (double)bp->prefix_beta);
    int most = bp->n_finish > bp->n_beams ? bp->n_finish : bp->n_beams;
    if (bp->n_return < 1 || bp->n_return > most)
        return ed_fail(ENCDEC_ERR_ARG, "beam: n_return must be in [1, %d] (got %d)", most,
                       bp->n_return);
    if (!isfinite(bp->length_penalty))
        return ed_fail(ENCDEC_ERR_ARG, "beam: length_penalty must be a finite number (got %g)",
                       bp->length_penalty);
    if (bp->early_stopping < 0 || bp->early_stopping > 2)
        return ed_fail(ENCDEC_ERR_ARG,
                       "beam: early_stopping must be 0 (heuristic), 1 (true) or 2 (never) (got %d)",
                       bp->early_stopping);
    return ENCDEC_OK;
}

/* The terms of torch's float32 log_softmax of x[n]: log-prob of x[v] is
 * (x[v] - *mx) - *lse. A row of -inf gives -inf everywhere. */
static void log_softmax_terms(const float *x, int n, float *mx, float *lse) {
    float m;
    double l = k_logsumexp(x, n, &m);
    if (m == -INFINITY) {
        *mx = *lse = 0;
        return;
    }
    *mx = m;
    *lse = (float)l;
}

/* a ranks below b: lower score, or the same score later in beam-major order. */
static int cand_below(const cand *a, const cand *b) {
    if (a->score != b->score) return a->score < b->score;
    return a->beam != b->beam ? a->beam > b->beam : a->tok > b->tok;
}

static int cand_cmp(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    return cand_below(a, b) ? 1 : cand_below(b, a) ? -1 : 0;
}

static void sift_cand(cand *h, int n, int i) {
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && cand_below(&h[c + 1], &h[c])) c++;
        if (!cand_below(&h[c], &h[i])) return;
        cand t = h[c];
        h[c] = h[i];
        h[i] = t;
        i = c;
    }
}

/* The best k of score[j] + log-prob(rows[j, v]) over j < W, v < V into
 * c[k], best first (mx, lse: [W] the rows' log_softmax terms). A min-heap
 * of the best so far: most candidates cost one compare (in scan order a
 * tie never displaces the root, which came first). */
static void top_candidates(cand *c, int k, const float *score, const float *mx,
                           const float *lse, const float *rows, int W, int V) {
    int n = 0;
    float s[256];
    for (int j = 0; j < W; j++) {
        const float *row = rows + (size_t)j * V;
        int v = 0;
        for (; v < V && n < k; v++) {
            c[n++] = (cand){score[j] + ((row[v] - mx[j]) - lse[j]), j, v};
            if (n == k)
                for (int i = k / 2 - 1; i >= 0; i--) sift_cand(c, k, i);
        }
        /* blocks scored in lanes; a block with none above the root is
         * skipped, else its lanes go in order against the current root
         * (which only rises): the same heap as one candidate at a time */
        for (; v < V; v += 256) {
            int nb = V - v < 256 ? V - v : 256;
            if (!k_shifted_above(s, row + v, nb, score[j], mx[j], lse[j], c[0].score)) continue;
            for (int i = 0; i < nb; i++)
                if (s[i] > c[0].score) {
                    c[0] = (cand){s[i], j, v + i};
                    sift_cand(c, k, 0);
                }
        }
    }
    qsort(c, n, sizeof *c, cand_cmp);
}

/* BeamHypotheses.add: keeps the W best; when a (W+1)-th comes in, the
 * worst (the first of equals) leaves. */
static void hyp_add(beam_run *b, hyp_list *l, hyp h, float sum_logprobs, int generated_len) {
    h.score = sum_logprobs / pow(generated_len - b->bp->n_uncounted, b->bp->length_penalty);
    if (l->n >= b->cap && !(h.score > l->worst)) return;
    h.order = b->n_added++;
    l->h[l->n++] = h;
    if (l->n > b->cap) {
        int lo = 0;
        for (int i = 1; i < l->n; i++)
            if (l->h[i].score < l->h[lo].score) lo = i;
        memmove(&l->h[lo], &l->h[lo + 1], (size_t)(l->n - lo - 1) * sizeof *l->h);
        l->n--;
        l->worst = l->h[0].score;
        for (int i = 1; i < l->n; i++)
            if (l->h[i].score < l->worst) l->worst = l->h[i].score;
    } else if (h.score < l->worst) {
        l->worst = h.score;
    }
}

/* BeamHypotheses.is_done after step t; best_sum: the best candidate's
 * score (early_stopping 1: CTranslate2's patience and exit). */
static int hyp_done(const beam_run *b, int g, const hyp_list *l, float best_sum, int t) {
    if (b->bp->early_stopping == 1)
        return b->bp->exit_top ? b->top_ended[g] && l->n >= b->bp->n_return : l->n >= b->n_finish;
    if (l->n < b->W) return 0;
    double lp = b->bp->length_penalty;
    int len = b->bp->early_stopping == 2 && lp > 0 ? b->N : t + 1;
    return l->worst >= best_sum / pow(len - b->bp->n_uncounted, lp);
}

typedef struct {
    beam_run *b;
    float *rows;
    int g, t;
} lsm_job;

/* Beam j of group g before step t: its t tokens, read back through the
 * parents (forced ones included), into out. */
static const int *history(const beam_run *b, int g, int j, int t, int *out) {
    size_t GW = (size_t)b->G * b->W;
    for (int u = t - 1, s = j; u >= 0; u--) {
        size_t i = (size_t)u * GW + (size_t)g * b->W + s;
        out[u] = b->tok[i];
        s = b->parent[i];
    }
    return out;
}

/* One beam's log_softmax terms, then the rules on its row (with its
 * history where they read it). */
static void lsm_row(void *arg, int j) {
    lsm_job *q = arg;
    const beam_run *b = q->b;
    float *row = q->rows + (size_t)j * b->V;
    const int *gen = b->hist ? history(b, q->g, j, q->t, b->hist + (size_t)j * b->N) : NULL;
    if (b->r->ct2 || dec_bias_on(&b->bias, q->g, j, q->t)) {   /* CTranslate2: the rules on the
                                                                  logits, then the log-softmax */
        dec_apply_rules(row, b->V, b->r, gen, q->t);
        if (dec_bias_on(&b->bias, q->g, j, q->t)) {   /* drawn toward the prefix: log-probs */
            dec_bias_row(&b->bias, row, b->V, q->t);
            b->mx[j] = b->lse[j] = 0;
            return;
        }
        log_softmax_terms(row, b->V, &b->mx[j], &b->lse[j]);
        return;
    }
    log_softmax_terms(row, b->V, &b->mx[j], &b->lse[j]);
    if (b->r->repetition_penalty > 0 && b->r->repetition_penalty != 1) {
        /* the penalty scales log-probs: the row becomes them (the same
         * values the candidates would compute from mx and lse) */
        for (int v = 0; v < b->V; v++) row[v] = (row[v] - b->mx[j]) - b->lse[j];
        b->mx[j] = b->lse[j] = 0;
    }
    dec_apply_rules(row, b->V, b->r, gen, q->t);
    if (dec_forced_at(b->r, q->t, b->V)) b->mx[j] = b->lse[j] = 0;   /* its log-prob 0 */
}

/* Beam j of group g takes candidate c (log-prob lp) at step t. */
static void set_beam(beam_run *b, int g, int j, const cand *c, float lp, int t) {
    size_t i = (size_t)t * b->G * b->W + (size_t)g * b->W + j;
    if (b->beam_cand) b->beam_cand[j] = (int)(c - b->cands);
    b->score[(size_t)g * b->W + j] = c->score;
    b->tok[i] = c->tok;
    b->lp[i] = lp;
    b->parent[i] = c->beam;
}

/* BeamSearchScorer.process for group g at step t; rows[W, V]: its beams'
 * logits. As in HF the rules apply to the log-probs: suppressed tokens get
 * -inf after the log_softmax, without renormalising, and the repetition
 * penalty scales log-probs; with r->ct2 (CTranslate2) they apply to the
 * logits before it (lsm_row). */
static void process_group(beam_run *b, int g, float *rows, int t) {
    int W = b->W, V = b->V, K = 2 * W, nb = 0, n_ended = 0;
    lsm_job q = {b, rows, g, t};
    if (b->m->par_for && W > 1) b->m->par_for(b->m->ctx, W, lsm_row, &q);   /* rows: independent */
    else
        for (int j = 0; j < W; j++) lsm_row(&q, j);
    top_candidates(b->cands, K, b->score + (size_t)g * W, b->mx, b->lse, rows, W, V);
    hyp_list *l = &b->lists[g];
    for (int k = 0; k < K && nb < W; k++) {
        const cand *c = &b->cands[k];
        float lp = (rows[(size_t)c->beam * V + c->tok] - b->mx[c->beam]) - b->lse[c->beam];
        if (dec_is_eot(b->r, c->tok)) {
            if (k >= W) continue;   /* an eos ranked below the n_beams best is dropped */
            if (k > 0 && b->r->ct2 && b->r->n_forced > b->bp->n_uncounted && t == b->r->n_forced) {
                /* CTranslate2, at the first step after a target prefix: an eos
                 * but the best becomes a dead beam (token 0, score -1e10),
                 * its remedy for short hypotheses a prefix's one beam offers */
                size_t i = (size_t)t * b->G * W + (size_t)g * W + nb++;
                b->score[(size_t)g * W + nb - 1] = -1e10f;
                b->tok[i] = 0;
                b->lp[i] = -1e10f;
                b->parent[i] = c->beam;
                continue;
            }
            hyp h = {.n_beam_tok = t, .slot = t > 0 ? c->beam : -1, .eos = 1, .eos_tok = c->tok,
                     .eos_beam = c->beam, .eos_lp = lp};
            hyp_add(b, l, h, c->score, t + 1);
            if (k == 0 && b->top_ended) b->top_ended[g] = 1;
            b->ended[n_ended++] = k;
        } else {
            set_beam(b, g, nb++, c, lp, t);
        }
    }
    /* Several end tokens (r->more_eot) can leave fewer than W others among
     * the 2W: as CTranslate2 does, the last ended candidates of the best W
     * then go on as beams too */
    for (int e = n_ended - (W - nb) > 0 ? n_ended - (W - nb) : 0; nb < W && e < n_ended; e++) {
        const cand *c = &b->cands[b->ended[e]];
        set_beam(b, g, nb++, c, (rows[(size_t)c->beam * V + c->tok] - b->mx[c->beam]) - b->lse[c->beam], t);
    }
    l->done = l->done || hyp_done(b, g, l, b->cands[0].score, t);
    if (b->beam_cand) {   /* which beams have left the prefix, as CTranslate2 tells */
        for (int k = 0; k < K; k++)
            b->cand_tok[k] = b->cands[k].tok, b->cand_end[k] = (unsigned char)dec_is_eot(b->r, b->cands[k].tok);
        dec_bias_update(&b->bias, g, t, b->cand_tok, b->cand_end, K, b->beam_cand);
    }
}

/* The next step's rows: every live beam's next token, forking beams whose
 * parent is another slot through one reorder first. */
static encdec_status step_rows(beam_run *b, int t) {
    int n = 0, nr = 0, W = b->W;
    for (int g = 0; g < b->G; g++) {
        if (b->lists[g].done) continue;
        for (int j = 0; j < W; j++) {
            size_t i = (size_t)t * b->G * W + (size_t)g * W + j;
            b->seq[n] = g * W + j;
            b->next[n++] = b->tok[i];
            if (b->parent[i] != j) {
                b->to[nr] = g * W + j;
                b->from[nr++] = g * W + b->parent[i];
            }
        }
    }
    encdec_status st = ENCDEC_OK;
    if (nr > 0) st = b->m->reorder(b->m->ctx, nr, b->to, b->from);
    b->task.n = st ? 0 : n;
    return st;
}

static int hyp_cmp(const void *pa, const void *pb) {
    const hyp *a = pa, *b = pb;
    if (a->score != b->score) return a->score < b->score ? 1 : -1;
    return a->order < b->order ? 1 : a->order > b->order ? -1 : 0;
}

/* Hypothesis h's sequences, token by token (path[t]: the beam whose row
 * chose token t): its count. */
static int hyp_path(const beam_run *b, int g, const hyp *h, int *path) {
    int slot = h->slot;
    for (int t = h->n_beam_tok - 1; t >= 0; t--) {
        size_t i = (size_t)t * b->G * b->W + (size_t)g * b->W + slot;
        slot = b->parent[i];
        path[t] = g * b->W + slot;
    }
    if (h->eos) path[h->n_beam_tok] = g * b->W + h->eos_beam;
    return h->n_beam_tok + (h->eos != 0);
}

/* Writes hypothesis h of group g: its beam's tokens read back through the
 * parents, then eos if it ended with one. */
static void write_hyp(const beam_run *b, int g, const hyp *h, int *tok, float *lp, int *len,
                      float *score, int *path) {
    int slot = h->slot;
    for (int t = h->n_beam_tok - 1; t >= 0; t--) {
        size_t i = (size_t)t * b->G * b->W + (size_t)g * b->W + slot;
        tok[t] = b->tok[i];
        lp[t] = b->lp[i];
        slot = b->parent[i];
    }
    if (path) hyp_path(b, g, h, path);   /* the beams whose rows chose them */
    *len = h->n_beam_tok;
    if (h->eos) {
        tok[*len] = h->eos_tok;
        lp[(*len)++] = h->eos_lp;
    }
    *score = (float)h->score;
}

/* BeamSearchScorer.finalize: unfinished groups' live beams (n_steps tokens)
 * join their hypotheses; each group's best n_return are written. */
static void finalize(beam_run *b, int n_steps, int *out_tok, float *out_lp, int *out_len,
                     float *out_score) {
    int W = b->W, R = b->bp->n_return, N = b->N;
    for (int g = 0; g < b->G; g++) {
        hyp_list *l = &b->lists[g];
        for (int j = 0; !l->done && j < W; j++) {
            hyp h = {.n_beam_tok = n_steps, .slot = j};
            hyp_add(b, l, h, b->score[(size_t)g * W + j], n_steps);
        }
        for (int k = 0; b->bp->rescore && k < l->n; k++) {
            int n = hyp_path(b, g, &l->h[k], b->path);
            l->h[k].score += b->bp->rescore(b->bp->rescore_ctx, g, b->path, n);
        }
        qsort(l->h, l->n, sizeof *l->h, hyp_cmp);
        for (int k = 0; k < R; k++) {
            size_t o = (size_t)g * R + k;
            if (k >= l->n) {   /* fewer finished than asked for */
                out_len[o] = -1;
                out_score[o] = -INFINITY;
                continue;
            }
            write_hyp(b, g, &l->h[k], out_tok + o * N, out_lp + o * N, &out_len[o], &out_score[o],
                      b->task.path ? b->task.path + o * N : NULL);
        }
    }
}

static encdec_status beam_alloc(beam_run *b) {
    size_t GW = (size_t)b->G * b->W, NGW;
    if (!ed_mul_ok(GW, b->N, &NGW))
        return ed_fail(ENCDEC_ERR_NOMEM, "beam: %d groups x %d beams x %d tokens is too large",
                       b->G, b->W, b->N);
    b->logits = dec_alloc_n(GW * b->V, sizeof *b->logits, "beam logits");
    b->score = dec_alloc_n(GW, sizeof *b->score, "beam scores");
    b->tok = dec_alloc_n(NGW, sizeof *b->tok, "beam tokens");
    b->lp = dec_alloc_n(NGW, sizeof *b->lp, "beam log-probs");
    b->parent = dec_alloc_n(NGW, sizeof *b->parent, "beam parents");
    b->cands = dec_alloc_n(2 * (size_t)b->W, sizeof *b->cands, "beam candidates");
    b->ended = dec_alloc_n((size_t)b->W, sizeof *b->ended, "beam candidates");
    b->mx = dec_alloc_n(2 * (size_t)b->W, sizeof *b->mx, "beam log_softmax terms");
    b->lists = dec_alloc_n(b->G, sizeof *b->lists, "beam hypothesis lists");
    b->hyps = dec_alloc_n((size_t)b->G * (b->cap + 1), sizeof *b->hyps, "beam hypotheses");
    if (b->bp->exit_top && !(b->top_ended = calloc((size_t)b->G, 1)))
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: beam search");
    if (b->bp->rescore && !(b->path = dec_alloc_n((size_t)b->N, sizeof *b->path, "beam paths")))
        return ENCDEC_ERR_NOMEM;
    if (b->bp->prefix && b->bp->n_prefix > 0) {
        encdec_status st = dec_bias_init(&b->bias, b->bp->prefix, b->bp->n_prefix, b->bp->prefix_beta, b->G, b->W);
        if (st) return st;
        b->beam_cand = dec_alloc_n(3 * (size_t)b->W, sizeof *b->beam_cand, "beam candidates");
        b->cand_end = malloc(2 * (size_t)b->W);
        if (!b->beam_cand || !b->cand_end) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: beam search");
        b->cand_tok = b->beam_cand + b->W;
    }
    b->seq = dec_alloc_n(4 * GW, sizeof *b->seq, "beam sequence lists");
    if (!b->logits || !b->score || !b->tok || !b->lp || !b->parent || !b->cands || !b->ended || !b->mx ||
        !b->lists || !b->hyps || !b->seq)
        return ENCDEC_ERR_NOMEM;
    b->lse = b->mx + b->W;
    const dec_rules *r = b->r;
    if ((r->repetition_penalty > 0 && r->repetition_penalty != 1) || r->no_repeat_ngram > 0)
        if (!(b->hist = dec_alloc_n((size_t)b->W * b->N, sizeof *b->hist, "beam histories")))
            return ENCDEC_ERR_NOMEM;
    b->next = b->seq + GW;
    b->to = b->next + GW;
    b->from = b->to + GW;
    for (int g = 0; g < b->G; g++)
        b->lists[g] = (hyp_list){b->hyps + (size_t)g * (b->cap + 1), 0, 1e9, 0};
    for (size_t i = 0; i < GW; i++) b->score[i] = i % b->W ? -1e9f : 0;
    return ENCDEC_OK;
}

static void beam_free(beam_run *b) {
    if (!b) return;
    free(b->logits);
    free(b->score);
    free(b->tok);
    free(b->lp);
    free(b->parent);
    free(b->cands);
    free(b->ended);
    free(b->path);
    dec_bias_free(&b->bias);
    free(b->beam_cand);
    free(b->cand_end);
    free(b->mx);
    free(b->lists);
    free(b->hyps);
    free(b->top_ended);
    free(b->hist);
    free(b->seq);
}

static void beam_free_all(beam_run *b) {
    beam_free(b);
    free(b);
}

/* Step t's choices from task.logits for every live group; then the end
 * (outputs written) or the next step's rows. */
static encdec_status hf_advance(dec_task *task) {
    beam_run *b = (beam_run *)task;
    int live = 0, t = b->t;
    for (int g = 0; g < b->G; g++)
        if (!b->lists[g].done) process_group(b, g, task->logits + (size_t)live++ * b->W * b->V, t);
    live = 0;
    for (int g = 0; g < b->G; g++) live += !b->lists[g].done;
    if (t + 1 == b->N || live == 0) {
        finalize(b, t + 1, b->out_tok, b->out_lp, b->out_len, b->out_score);
        task->n = 0;
        return ENCDEC_OK;
    }
    b->t = t + 1;
    return step_rows(b, t);
}

static void hf_destroy(dec_task *task) { beam_free_all((beam_run *)task); }

encdec_status dec_beam_task(dec_task **out, const dec_model *m, int n_groups, float *logits,
                            const dec_rules *r, const dec_beam_params *bp, int *out_tok,
                            float *out_lp, int *out_len, float *out_score) {
    *out = NULL;
    int one = 0;
    encdec_status st = dec_beam_params_check(bp);
    if (st) return st;
    if (n_groups < 1 || n_groups > (1 << 30) / bp->n_beams)
        return ed_fail(ENCDEC_ERR_ARG, "beam: %d groups of %d beams is out of range", n_groups,
                       bp->n_beams);
    st = dec_check_args("beam", m, n_groups * bp->n_beams, &one, 1, r, out_tok, out_lp, out_len,
                        out_score);
    if (st) return st;
    if (m->n_vocab < 2)
        return ed_fail(ENCDEC_ERR_ARG, "beam: need n_vocab >= 2 (got %d)", m->n_vocab);
    if (bp->n_beams > 1 && !m->reorder)
        return ed_fail(ENCDEC_ERR_ARG, "beam: %d beams need a model with reorder", bp->n_beams);
    if (r->hook)
        return ed_fail(ENCDEC_ERR_ARG, "beam: Hugging Face's beam search takes no history rules "
                       "(dec_beam_ow does)");
    int F = r->n_forced > 0 ? r->n_forced : 0;
    if (F >= r->max_new)
        return ed_fail(ENCDEC_ERR_ARG, "beam: %d forced tokens leave no room in %d", F, r->max_new);
    if (bp->n_uncounted < 0 || bp->n_uncounted > F)
        return ed_fail(ENCDEC_ERR_ARG, "beam: n_uncounted %d is out of range 0..%d (the forced tokens)",
                       bp->n_uncounted, F);
    beam_run *b = calloc(1, sizeof *b);
    if (!b) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: beam search");
    *b = (beam_run){.task = {.advance = hf_advance, .destroy = hf_destroy}, .m = m, .r = r,
                    .bp_own = *bp, .out_tok = out_tok, .out_len = out_len, .out_lp = out_lp,
                    .out_score = out_score, .G = n_groups, .W = bp->n_beams, .V = m->n_vocab,
                    .N = r->max_new};
    b->bp = &b->bp_own;
    b->n_finish = bp->n_finish ? bp->n_finish : b->W;
    /* CTranslate2 keeps every finished hypothesis (a rescore may lift any):
     * fewer than n_finish before the last step, which adds W at most (or the
     * live beams join) */
    b->cap = b->n_finish == b->W && !bp->rescore ? b->W : b->n_finish + b->W - 1;
    if ((st = beam_alloc(b))) {
        beam_free_all(b);
        return st;
    }
    /* forced tokens (fed already): steps 0..F-1 of every beam, log-prob 0,
     * each beam its own parent; the scores stay the first step's (beam 0
     * at 0, the others at -1e9), as HF's forcing processors leave them */
    for (int t = 0; t < F; t++)
        for (int i = 0; i < n_groups * b->W; i++) {
            size_t k = (size_t)t * n_groups * b->W + i;
            b->tok[k] = r->forced[t];
            b->lp[k] = 0;
            b->parent[k] = i % b->W;
        }
    b->t = F;
    if (logits) memcpy(b->logits, logits, sizeof(float) * (size_t)n_groups * b->W * b->V);
    b->task.n = n_groups * b->W;   /* the prompt's logits: the first advance chooses */
    b->task.seq = b->seq;
    b->task.tok = b->next;
    b->task.logits = b->logits;
    *out = &b->task;
    return ENCDEC_OK;
}

encdec_status dec_beam(const dec_model *m, int n_groups, const int *prompt, int n_prompt,
                       const dec_rules *r, const dec_beam_params *bp,
                       int *out_tok, float *out_lp, int *out_len, float *out_score) {
    encdec_status st = dec_beam_params_check(bp);
    if (st) return st;
    if (n_groups < 1 || n_groups > (1 << 30) / bp->n_beams)
        return ed_fail(ENCDEC_ERR_ARG, "beam: %d groups of %d beams is out of range", n_groups,
                       bp->n_beams);
    st = dec_check_args("beam", m, n_groups * bp->n_beams, prompt, n_prompt, r, out_tok, out_lp,
                        out_len, out_score);
    if (st) return st;
    dec_task *t;
    if ((st = dec_beam_task(&t, m, n_groups, NULL, r, bp, out_tok, out_lp, out_len, out_score)))
        return st;
    beam_run *b = (beam_run *)t;
    st = dec_feed_all(m, n_groups * bp->n_beams, prompt, n_prompt, b->logits);
    if (!st) st = dec_task_run(t, m);
    dec_task_free(t);
    return st;
}
