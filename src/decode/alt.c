/* alt.c - alternatives at the first free position (CTranslate2's
 * return_alternatives): each group's most likely next tokens after the
 * prompt and forced tokens, each then continued by its own greedy or beam
 * search (task.h's dec_alt_task).
 *
 * Sequences: group g's alternative k decodes sequences (g * N + k) * Wb +
 * [0, Wb), N alternatives of Wb beams. The alternatives' searches are the
 * strategies' own tasks, each seeing a model whose sequence ids start at
 * its first (a mapped seam) and rules whose forced tokens end with its
 * alternative; one step of this task is the rows of all of them.
 */
#include "decode/task.h"
#include "base/err.h"
#include "base/mem.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct alt_run alt_run;

typedef struct {
    alt_run *a;
    int base;             /* its first sequence */
    dec_model m;          /* the run's model, sequence ids from base */
    dec_rules r;          /* the run's rules; forced: the prompt's forced tokens, then the alternative */
    int *forced;          /* [F + 1] */
    float *logits;        /* [Wb, V]: the alternative's first logits (greedy: its step buffer) */
    int *ids;             /* [2 Wb] mapped sequence lists (reorder) */
    dec_task *task;       /* its search, once the alternative is fed */
    float lp;             /* the alternative's log-prob */
    int out;              /* its output */
} alt_one;

struct alt_run {
    dec_task t;           /* first */
    const dec_model *m;
    const dec_rules *r;
    dec_alt_params ap;
    int G, N, Wb, V, F, phase;
    int *out_tok, *out_len;
    float *out_lp, *out_score;
    float *logits;        /* [G N Wb, V]: the prompt's (copied), then each step's rows unless
                             the caller points t.logits elsewhere (the engine's pass) */
    alt_one *one;         /* [G N] */
    int n_one;            /* alternatives made */
    int *seq, *tok;       /* [G N Wb] a step's rows */
    int *from;            /* [G N Wb] the alternative each row belongs to */
};

/* ---- the mapped seam: an alternative's sequences from 0 ---- */

static encdec_status map_feed(void *ctx, int seq, const int *tokens, int n, float *logits) {
    alt_one *o = ctx;
    return o->a->m->feed(o->a->m->ctx, o->base + seq, tokens, n, logits);
}

static encdec_status map_step(void *ctx, int n, const int *seq, const int *tok, float *logits) {
    alt_one *o = ctx;
    for (int i = 0; i < n; i++) o->ids[i] = o->base + seq[i];
    return o->a->m->step(o->a->m->ctx, n, o->ids, tok, logits);
}

static encdec_status map_reorder(void *ctx, int n, const int *seq, const int *src) {
    alt_one *o = ctx;
    int Wb = o->a->Wb;
    for (int i = 0; i < n; i++) o->ids[i] = o->base + seq[i], o->ids[Wb + i] = o->base + src[i];
    return o->a->m->reorder(o->a->m->ctx, n, o->ids, o->ids + Wb);
}

static void map_par_for(void *ctx, int n, void (*fn)(void *arg, int i), void *arg) {
    alt_one *o = ctx;
    o->a->m->par_for(o->a->m->ctx, n, fn, arg);
}

/* ---- the first free position ---- */

/* The best n tokens of row (log-probs with mx and lse), best first, ties
 * to the lower id: their count (< n where the row has fewer finite ones). */
static int best_tokens(const float *row, int V, int n, int *ids) {
    int k = 0;
    for (int v = 0; v < V; v++) {
        if (row[v] == -INFINITY) continue;
        if (k == n && !(row[v] > row[ids[k - 1]])) continue;
        int i = k < n ? k++ : n - 1;
        while (i > 0 && row[v] > row[ids[i - 1]]) ids[i] = ids[i - 1], i--;
        ids[i] = v;
    }
    return k;
}

/* Group g's alternatives from its prompt's logits: the rules (the forced
 * tokens as history), the end tokens banned (an alternative continues),
 * the n most likely down to min_prob. */
static encdec_status expand(alt_run *a, int g) {
    const dec_rules *r = a->r;
    float *row = a->t.logits + (size_t)g * a->N * a->Wb * a->V;
    dec_apply_rules(row, a->V, r, r->forced, a->F);
    if (r->eot >= 0 && r->eot < a->V) row[r->eot] = -INFINITY;
    for (int i = 0; i < r->n_more_eot; i++)
        if (r->more_eot[i] >= 0 && r->more_eot[i] < a->V) row[r->more_eot[i]] = -INFINITY;
    float mx;
    double lse = k_logsumexp(row, a->V, &mx);
    int ids[DEC_ALT_MAX];
    int n = best_tokens(row, a->V, a->N, ids);
    for (int k = 0; k < n; k++) {
        float lp = (float)((double)row[ids[k]] - mx - lse);
        if (exp(lp) < a->ap.min_prob) break;   /* best first: the rest are below too */
        alt_one *o = &a->one[a->n_one++];
        *o = (alt_one){.a = a, .base = (g * a->N + k) * a->Wb, .lp = lp, .out = g * a->N + k};
        o->forced = dec_alloc_n((size_t)a->F + 1, sizeof *o->forced, "alternatives");
        o->logits = dec_alloc_n((size_t)a->Wb * a->V, sizeof *o->logits, "alternatives");
        o->ids = dec_alloc_n(2 * (size_t)a->Wb, sizeof *o->ids, "alternatives");
        if (!o->forced || !o->logits || !o->ids) return ENCDEC_ERR_NOMEM;
        if (a->F) memcpy(o->forced, r->forced, sizeof(int) * (size_t)a->F);
        o->forced[a->F] = ids[k];
        o->r = *r;
        o->r.forced = o->forced;
        o->r.n_forced = a->F + 1;
        o->m = (dec_model){o, a->V, map_feed, map_step, a->m->reorder ? map_reorder : NULL, NULL,
                           a->m->par_for ? map_par_for : NULL, NULL, NULL};
    }
    return ENCDEC_OK;
}

/* ---- the run ---- */

/* Alternative o's search from its first logits (row: after its token). */
static encdec_status start_search(alt_run *a, alt_one *o, const float *row) {
    for (int j = 0; j < a->Wb; j++) memcpy(o->logits + (size_t)j * a->V, row, sizeof(float) * (size_t)a->V);
    size_t at = (size_t)o->out * o->r.max_new;
    int *tok = a->out_tok + at, *len = a->out_len + o->out;
    float *lp = a->out_lp + at, *score = a->out_score + o->out;
    encdec_status st;
    if (a->Wb == 1) {
        st = dec_greedy_task(&o->task, &o->m, 1, o->logits, &o->r, tok, lp, len, score);
    } else {
        dec_beam_params bp = a->ap.beam;
        bp.n_return = 1;
        bp.n_uncounted = a->F + 1;   /* the continuation's own length, as CTranslate2 scores it */
        st = dec_beam_task(&o->task, &o->m, 1, o->logits, &o->r, &bp, tok, lp, len, score);
    }
    if (!st && a->t.path) o->task->path = a->t.path + at;   /* beams write theirs (from 0) */
    return st;
}

/* Advances every live alternative's search (its rows of the step at
 * t.logits), then lists the next step's rows. */
static encdec_status next_rows(alt_run *a, int first) {
    encdec_status st = ENCDEC_OK;
    int n = 0;
    for (int i = 0; i < a->t.n && !st; i++) {   /* the step's rows, each alternative's together */
        alt_one *o = &a->one[a->from[i]];
        if (i > 0 && a->from[i - 1] == a->from[i]) continue;
        float *rows = a->t.logits + (size_t)i * a->V;   /* wherever the caller pointed them */
        if (first) st = start_search(a, o, rows);
        else o->task->logits = rows;
        if (!st) st = dec_task_advance(o->task);
    }
    for (int k = 0; k < a->n_one && !st; k++) {
        alt_one *o = &a->one[k];
        if (!o->task || o->task->n == 0) continue;
        for (int i = 0; i < o->task->n; i++, n++) {
            a->seq[n] = o->base + o->task->seq[i];
            a->tok[n] = o->task->tok[i];
            a->from[n] = k;
        }
    }
    a->t.n = st ? 0 : n;
    return st;
}

/* The outputs: each alternative's token after the forced ones with its
 * log-prob; its score that log-prob plus the continuation's (the sum of its
 * log-probs, over its length ^ length_penalty); ranks past a group's
 * alternatives empty (out_len -1). */
static void finish(alt_run *a) {
    for (int k = 0; k < a->n_one; k++) {
        alt_one *o = &a->one[k];
        size_t at = (size_t)o->out * a->r->max_new;
        int F = a->F;
        if (!o->task) {   /* at max_new: the alternative alone */
            for (int j = 0; j < F; j++) a->out_tok[at + j] = a->r->forced[j], a->out_lp[at + j] = 0;
            a->out_tok[at + F] = o->forced[F];
            a->out_len[o->out] = F + 1;
        }
        a->out_lp[at + F] = o->lp;
        int n = a->out_len[o->out] - F - 1;   /* the continuation */
        double s = 0;   /* its score: a beam's own; greedy, its sum over its length ^ penalty */
        if (o->task && a->Wb > 1) s = a->out_score[o->out];
        for (int j = 0; o->task && a->Wb == 1 && j < n; j++) s += a->out_lp[at + F + 1 + j];
        if (o->task && a->Wb == 1 && n > 0) s /= pow(n, a->ap.beam.length_penalty);
        a->out_score[o->out] = (float)(o->lp + s);
        if (a->t.path)   /* the alternative's sequences, from its first */
            for (int j = 0; j < a->out_len[o->out]; j++)
                a->t.path[at + j] = o->task && a->Wb > 1 ? o->base + a->t.path[at + j] : o->base;
    }
}

static encdec_status alt_advance(dec_task *t) {
    alt_run *a = (alt_run *)t;
    encdec_status st = ENCDEC_OK;
    if (a->phase == 0) {   /* the prompt's logits: the alternatives, each fed its token */
        a->phase = 1;
        for (int i = 0; i < a->G * a->N; i++) a->out_len[i] = -1;   /* until a search writes it */
        for (int g = 0; g < a->G && !st; g++) st = expand(a, g);
        int n = 0;
        for (int k = 0; k < a->n_one && !st; k++) {
            if (a->F + 1 >= a->r->max_new) continue;   /* nothing after it */
            a->seq[n] = a->one[k].base;
            a->tok[n] = a->one[k].forced[a->F];
            a->from[n++] = k;
        }
        t->n = st ? 0 : n;
    } else {
        st = next_rows(a, a->phase == 1);
        a->phase = 2;
    }
    if (!st && t->n == 0) finish(a);
    return st;
}

static void alt_destroy(dec_task *t) {
    alt_run *a = (alt_run *)t;
    for (int k = 0; a->one && k < a->n_one; k++) {
        dec_task_free(a->one[k].task);
        free(a->one[k].forced);
        free(a->one[k].logits);
        free(a->one[k].ids);
    }
    free(a->one);
    free(a->logits);
    free(a->seq);
    free(a);
}

encdec_status dec_alt_task(dec_task **out, const dec_model *m, int n_groups, float *logits,
                           const dec_rules *r, const dec_alt_params *ap, int *out_tok, float *out_lp,
                           int *out_len, float *out_score) {
    *out = NULL;
    int one = 0, N = ap ? ap->n_alt : 0, Wb = ap ? ap->beam.n_beams : 0;
    if (!ap || N < 1 || N > DEC_ALT_MAX || Wb < 1 || !(ap->min_prob >= 0 && ap->min_prob <= 1))
        return ed_fail(ENCDEC_ERR_ARG, "alternatives: %d alternatives (1..%d) of %d beams, "
                       "min_prob %g in [0, 1]", N, DEC_ALT_MAX, Wb, ap ? ap->min_prob : 0.0);
    if (n_groups < 1 || n_groups > (1 << 24) / (N * Wb))
        return ed_fail(ENCDEC_ERR_ARG, "alternatives: %d groups is out of range", n_groups);
    encdec_status st = dec_check_args("alternatives", m, n_groups * N * Wb, &one, 1, r, out_tok,
                                      out_lp, out_len, out_score);
    if (st) return st;
    if (Wb > 1 && (st = dec_beam_params_check(&ap->beam))) return st;
    if (Wb > 1 && !m->reorder) return ed_fail(ENCDEC_ERR_ARG, "alternatives: beams need a model with reorder");
    if (r->hook) return ed_fail(ENCDEC_ERR_ARG, "alternatives: no history hook");
    int F = r->n_forced > 0 ? r->n_forced : 0;
    if (F >= r->max_new)
        return ed_fail(ENCDEC_ERR_ARG, "alternatives: %d forced tokens leave no room in %d", F, r->max_new);
    alt_run *a = calloc(1, sizeof *a);
    if (!a) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: alternatives");
    size_t S = (size_t)n_groups * N * Wb;
    *a = (alt_run){.t = {.advance = alt_advance, .destroy = alt_destroy}, .m = m, .r = r, .ap = *ap,
                   .G = n_groups, .N = N, .Wb = Wb, .V = m->n_vocab, .F = F, .out_tok = out_tok,
                   .out_len = out_len, .out_lp = out_lp, .out_score = out_score};
    a->logits = dec_alloc_n(S * (size_t)a->V, sizeof *a->logits, "alternatives logits");
    a->one = calloc((size_t)n_groups * N, sizeof *a->one);
    a->seq = dec_alloc_n(3 * S, sizeof *a->seq, "alternatives rows");
    if (!a->logits || !a->one || !a->seq) {
        alt_destroy(&a->t);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: alternatives");
    }
    a->tok = a->seq + S;
    a->from = a->tok + S;
    memcpy(a->logits, logits, sizeof(float) * S * (size_t)a->V);
    a->t.n = (int)S;   /* the prompt's logits: the first advance expands them */
    a->t.seq = a->seq;
    a->t.tok = a->tok;
    a->t.logits = a->logits;
    *out = &a->t;
    return ENCDEC_OK;
}
