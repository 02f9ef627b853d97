/* batch.c - sequences decoded independently but stepped together: the
 * driver behind batched greedy and sampling. */
#include "decode/task.h"
#include "base/err.h"
#include "base/mem.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

encdec_status dec_check_args(const char *who, const dec_model *m, int n_seq, const int *prompt,
                             int n_prompt, const dec_rules *r, const int *out_tok,
                             const float *out_lp, const int *out_len, const float *out_score) {
    if (!m || !m->feed || !m->step || m->n_vocab < 1)
        return ed_fail(ENCDEC_ERR_ARG, "%s: the model needs feed, step and n_vocab >= 1", who);
    if (n_seq < 1) return ed_fail(ENCDEC_ERR_ARG, "%s: need at least one sequence (got %d)", who, n_seq);
    if (!prompt || n_prompt < 1)
        return ed_fail(ENCDEC_ERR_ARG, "%s: need a prompt of at least one token (got %d)", who,
                       n_prompt);
    if (!r || r->max_new < 1)
        return ed_fail(ENCDEC_ERR_ARG, "%s: need rules with max_new >= 1 (got %d)", who,
                       r ? r->max_new : 0);
    if (!out_tok || !out_lp || !out_len || !out_score)
        return ed_fail(ENCDEC_ERR_ARG, "%s: an output buffer is NULL", who);
    if (m->logit_err && (!m->logit_exact || !m->feed_n))
        return ed_fail(ENCDEC_ERR_ARG, "%s: a model that screens its logits needs logit_exact and feed_n",
                       who);
    return ENCDEC_OK;
}

void *dec_alloc_n(size_t n, size_t size, const char *what) {
    size_t bytes;
    if (!ed_mul_ok(n, size, &bytes)) {
        ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s (%zu x %zu bytes)", what, n, size);
        return NULL;
    }
    return ed_alloc(bytes, what);
}

encdec_status dec_feed_shared(const dec_model *m, int n_seq, const int *tokens, int n, float *logits) {
    if (n_seq < 2 || !m->reorder) return dec_feed_all(m, n_seq, tokens, n, logits);
    encdec_status st = m->feed(m->ctx, 0, tokens, n, logits);
    if (st) return st;
    int *to = dec_alloc_n((size_t)n_seq * 2, sizeof *to, "sequence list");
    if (!to) return ENCDEC_ERR_NOMEM;
    int *from = to + n_seq;
    for (int s = 1; s < n_seq; s++) {
        to[s - 1] = s;
        from[s - 1] = 0;
        memcpy(logits + (size_t)s * m->n_vocab, logits, sizeof *logits * (size_t)m->n_vocab);
    }
    st = m->reorder(m->ctx, n_seq - 1, to, from);
    free(to);
    return st;
}

encdec_status dec_feed_all(const dec_model *m, int n_seq, const int *tokens, int n, float *logits) {
    size_t V = (size_t)m->n_vocab;
    if (m->feed_n && n_seq > 1) {
        int *seq = dec_alloc_n((size_t)n_seq, sizeof *seq, "sequence list");
        if (!seq) return ENCDEC_ERR_NOMEM;
        for (int s = 0; s < n_seq; s++) seq[s] = s;
        encdec_status st = m->feed_n(m->ctx, n_seq, seq, tokens, n, logits);
        free(seq);
        return st;
    }
    encdec_status st = ENCDEC_OK;
    for (int s = 0; !st && s < n_seq; s++) st = m->feed(m->ctx, s, tokens, n, logits + (size_t)s * V);
    return st;
}

static int pick_greedy(void *ctx, int seq, int index, float *logits, int n_vocab, float *lp);

/* One step's choices: row i of logits is sequence live[i]'s. */
typedef struct {
    const dec_model *m;
    const dec_rules *r;
    dec_pick_fn pick;
    void *pick_ctx;
    float *logits;
    float *raw;           /* [n_seq, 3 V] scratch for screened rows (NULL: none is):
                             per row its raw logits, exact values, token ids */
    const int *live;
    const int *out_tok;   /* [n_seq, max_new]: each sequence's tokens so far */
    int *tok;
    float *lp;
    int V, t;
    void (*seen)(void *ctx, int seq, int index, const float *row, int n_vocab);   /* dec_task's */
    void *seen_ctx;
} pick_job;

/* The tokens of a screened row (raw logits within err of the exact ones)
 * whose exact value decides the greedy choice, into ids; their count. raw:
 * the row before the rules, row: after them. A token the rules left alone
 * (a rule's change does not depend on the value but penalising zero)
 * keeps its exact value's order within 2 err, so only those within 2 err of
 * the best such one can win; a token the rules changed to a finite value
 * (the repetition penalty, the forced last token) is refined too; one they
 * set to -inf stays there whatever its value. */
static int screen_ids(const float *raw, const float *row, int V, float err, int *ids) {
    float cut = k_max_kept(raw, row, (size_t)V) - 2 * err;
    return (int)k_ids_to_refine(raw, row, (size_t)V, cut, ids);
}

/* Row i of a screened step made exact where the choice needs it (all of it
 * unless the pick is greedy with value-blind rules): the exact raw logits of
 * those tokens, the rules over them again (on the raw copy), into row. */
static void refine(pick_job *j, int i, float *row, float err) {
    size_t V = (size_t)j->V, at = (size_t)i * 3 * V;
    float *raw = j->raw + at, *val = raw + V;
    int *ids = (int *)(val + V);
    const int *gen = j->out_tok + (size_t)j->live[i] * j->r->max_new;
    int n = 0;
    if (j->pick == pick_greedy && !(j->r->hook && j->r->hook->apply))
        n = screen_ids(raw, row, j->V, err, ids);
    else
        for (int v = 0; v < j->V; v++) ids[n++] = v;
    j->m->logit_exact(j->m->ctx, i, ids, n, val);
    for (int k = 0; k < n; k++) raw[ids[k]] = val[k];
    dec_apply_rules(raw, j->V, j->r, gen, j->t);
    for (int k = 0; k < n; k++) row[ids[k]] = raw[ids[k]];
}

static void pick_one(void *arg, int i) {
    pick_job *j = arg;
    float *row = j->logits + (size_t)i * j->V;
    float err = j->raw ? j->m->logit_err(j->m->ctx, i) : 0;
    if (err > 0) memcpy(j->raw + (size_t)i * 3 * j->V, row, sizeof(float) * (size_t)j->V);
    dec_apply_rules(row, j->V, j->r, j->out_tok + (size_t)j->live[i] * j->r->max_new, j->t);
    if (err > 0) refine(j, i, row, err);
    if (j->seen) j->seen(j->seen_ctx, j->live[i], j->t, row, j->V);
    j->tok[i] = j->pick(j->pick_ctx, j->live[i], j->t, row, j->V, &j->lp[i]);
}

encdec_status dec_independent(const dec_model *m, int n_seq, const int *prompt, int n_prompt,
                              const dec_rules *r, dec_pick_fn pick, void *pick_ctx, int pure,
                              int *out_tok, float *out_lp, int *out_len, float *out_score) {
    encdec_status st = dec_check_args("decode", m, n_seq, prompt, n_prompt, r, out_tok, out_lp,
                                      out_len, out_score);
    if (st) return st;
    if (r->n_forced > 0)
        return ed_fail(ENCDEC_ERR_ARG, "decode: forced tokens need the *_fed strategies");
    float *logits = dec_alloc_n((size_t)n_seq * m->n_vocab, sizeof *logits, "decode logits");
    if (!logits) return ENCDEC_ERR_NOMEM;
    st = dec_feed_all(m, n_seq, prompt, n_prompt, logits);
    if (!st) st = dec_independent_fed(m, n_seq, logits, r, pick, pick_ctx, pure, out_tok, out_lp,
                                      out_len, out_score);
    free(logits);
    return st;
}

/* dec_independent_fed as a task: live[i]'s logits are row i of the last
 * feed / step; position t is the next to pick. */
typedef struct {
    dec_task t;
    const dec_model *m;
    const dec_rules *r;
    dec_pick_fn pick;
    void *pick_ctx;
    void (*pick_free)(void *);
    int pure, n_seq, pos, n_live;
    int n_ended;              /* sequences that ended by eot or max_new */
    int *out_tok, *out_len;
    float *out_lp, *out_score;
    int *live, *next, *toks;   /* [n_seq] each: live sequences, their next tokens, choices */
    int *looping;             /* [n_seq] 1 once the hook said stop for that sequence */
    float *lps;
    float *screen;            /* pick_job's raw scratch, made at the first screened row */
} ind_task;

static void ind_destroy(dec_task *t) {
    ind_task *q = (ind_task *)t;
    if (q->pick_free) q->pick_free(q->pick_ctx);
    free(q->live);
    free(q->lps);
    free(q->screen);
    free(q);
}

/* Picks position q->pos for every live sequence from t->logits, then lists
 * the sequences that go on (t.n = 0 when none does). The hook's stop ends
 * the decode when it holds for every live sequence (each since some step)
 * and none has ended: a sequence that ended could be chosen over the
 * others only on their whole decodes' scores. */
static encdec_status ind_advance(dec_task *t) {
    ind_task *q = (ind_task *)t;
    const dec_rules *r = q->r;
    int N = r->max_new, n_live = q->n_live, k = 0, pos = q->pos;
    const dec_model *m = q->m;
    int screened = 0;
    for (int i = 0; m->logit_err && i < n_live && !screened; i++) screened = m->logit_err(m->ctx, i) > 0;
    if (screened && !q->screen) {
        q->screen = dec_alloc_n((size_t)q->n_seq * 3, (size_t)m->n_vocab * sizeof(float),
                                "screened logits");
        if (!q->screen) {
            t->n = 0;
            return ENCDEC_ERR_NOMEM;
        }
    }
    pick_job job = {m, r, q->pick, q->pick_ctx, t->logits, screened ? q->screen : NULL, q->live,
                    q->out_tok, q->toks, q->lps, m->n_vocab, pos, t->seen, t->seen_ctx};
    if (q->pure && q->m->par_for && n_live > 1) q->m->par_for(q->m->ctx, n_live, pick_one, &job);
    else
        for (int i = 0; i < n_live; i++) pick_one(&job, i);
    for (int i = 0; i < n_live; i++) {
        int s = q->live[i], tok = q->toks[i];
        float lp = q->lps[i];
        q->out_tok[(size_t)s * N + pos] = tok;
        q->out_lp[(size_t)s * N + pos] = lp;
        q->out_len[s] = pos + 1;
        q->out_score[s] += lp;
        if (dec_is_eot(r, tok) || pos + 1 >= N) {
            q->n_ended++;
            continue;
        }
        if (!q->looping[s] && q->n_ended == 0)
            q->looping[s] = dec_should_stop(r, q->out_tok + (size_t)s * N, pos + 1);
        q->live[k] = s;
        q->next[k++] = tok;
    }
    int all_loop = k > 0 && q->n_ended == 0;
    for (int i = 0; i < k && all_loop; i++) all_loop = q->looping[q->live[i]];
    if (all_loop) k = 0;
    q->n_live = k;
    q->pos = pos + 1;
    t->n = k;
    return ENCDEC_OK;
}

encdec_status dec_independent_task(dec_task **out, const dec_model *m, int n_seq, float *logits,
                                   const dec_rules *r, dec_pick_fn pick, void *pick_ctx, int pure,
                                   void (*pick_free)(void *), int *out_tok, float *out_lp,
                                   int *out_len, float *out_score) {
    *out = NULL;
    int one = 0;
    encdec_status st = dec_check_args("decode", m, n_seq, &one, 1, r, out_tok, out_lp, out_len,
                                      out_score);
    if (!st && (!pick || !logits)) st = ed_fail(ENCDEC_ERR_ARG, "decode: no pick function or logits");
    int F = r && r->n_forced > 0 ? r->n_forced : 0;
    if (!st && F >= r->max_new)
        st = ed_fail(ENCDEC_ERR_ARG, "decode: %d forced tokens leave no room in %d", F, r->max_new);
    ind_task *q = st ? NULL : calloc(1, sizeof *q);
    if (!st && !q) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: decode task");
    if (!st) {
        q->live = dec_alloc_n((size_t)n_seq * 4, sizeof *q->live, "decode sequence lists");
        q->lps = dec_alloc_n((size_t)n_seq, sizeof *q->lps, "decode log-probs");
        if (!q->live || !q->lps) st = ENCDEC_ERR_NOMEM;
    }
    if (st) {
        if (q) {
            free(q->live);
            free(q->lps);
            free(q);
        }
        if (pick_free) pick_free(pick_ctx);
        return st;
    }
    *q = (ind_task){.t = {.advance = ind_advance, .destroy = ind_destroy}, .m = m, .r = r,
                    .pick = pick, .pick_ctx = pick_ctx, .pick_free = pick_free, .pure = pure,
                    .n_seq = n_seq, .pos = F, .n_live = n_seq,
                    .out_tok = out_tok, .out_len = out_len, .out_lp = out_lp,
                    .out_score = out_score, .live = q->live, .next = q->live + n_seq,
                    .toks = q->live + 2 * n_seq, .looping = q->live + 3 * n_seq, .lps = q->lps};
    memset(q->looping, 0, sizeof *q->looping * (size_t)n_seq);
    int N = r->max_new;
    for (int s = 0; s < n_seq; s++) {
        for (int k = 0; k < F; k++) {   /* fed already: the outputs start with them */
            out_tok[(size_t)s * N + k] = r->forced[k];
            out_lp[(size_t)s * N + k] = 0;
        }
        out_len[s] = F;
        out_score[s] = 0;
        q->live[s] = s;
    }
    q->t.n = n_seq;   /* the prompt's logits: the first advance picks from them */
    q->t.seq = q->live;
    q->t.tok = q->next;
    q->t.logits = logits;
    *out = &q->t;
    return ENCDEC_OK;
}

encdec_status dec_independent_fed(const dec_model *m, int n_seq, float *logits, const dec_rules *r,
                                  dec_pick_fn pick, void *pick_ctx, int pure, int *out_tok,
                                  float *out_lp, int *out_len, float *out_score) {
    dec_task *t;
    encdec_status st = dec_independent_task(&t, m, n_seq, logits, r, pick, pick_ctx, pure, NULL,
                                            out_tok, out_lp, out_len, out_score);
    if (st) return st;
    st = dec_task_run(t, m);
    dec_task_free(t);
    return st;
}

static int pick_greedy(void *ctx, int seq, int index, float *logits, int n_vocab, float *lp) {
    int id = k_argmax(logits, n_vocab);
    *lp = dec_logprob(logits, n_vocab, id);
    return id;
}

encdec_status dec_greedy_batch(const dec_model *m, int n_seq, const int *prompt, int n_prompt,
                               const dec_rules *r, int *out_tok, float *out_lp, int *out_len,
                               float *out_score) {
    return dec_independent(m, n_seq, prompt, n_prompt, r, pick_greedy, NULL, 1, out_tok, out_lp,
                           out_len, out_score);
}

encdec_status dec_greedy_fed(const dec_model *m, int n_seq, float *logits, const dec_rules *r,
                             int *out_tok, float *out_lp, int *out_len, float *out_score) {
    return dec_independent_fed(m, n_seq, logits, r, pick_greedy, NULL, 1, out_tok, out_lp, out_len,
                               out_score);
}

encdec_status dec_greedy_task(dec_task **out, const dec_model *m, int n_seq, float *logits,
                              const dec_rules *r, int *out_tok, float *out_lp, int *out_len,
                              float *out_score) {
    return dec_independent_task(out, m, n_seq, logits, r, pick_greedy, NULL, 1, NULL, out_tok,
                                out_lp, out_len, out_score);
}
