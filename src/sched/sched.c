/* sched.c - the scheduler thread and the requests' executors (sched.h). */
#include "sched/sched.h"
#include "sched/family.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "base/pool.h"
#include "base/clock.h"
#include "core/dev.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_ENCODE = 1, OP_PASS, OP_TASK };

struct sch_client {
    sch_engine *e;
    const void *input;        /* OP_ENCODE: the family's (Whisper: the mel) */
    const atomic_int *cancel; /* nonzero: the request ends (ENCDEC_ERR_CANCELLED) */
    int idx;                  /* its place: sequences [idx * slots, +slots), cache xc[idx] */
    dec_runner view;
    asr_exec x;
    pthread_cond_t cv;        /* its operation is done */
    /* the operation posted (one at a time: the request's thread waits) */
    /* ended: the scheduler's own mark, set while it works unlocked; done:
     * published under mu at the end of the turn, what the request's thread
     * waits for (it may free the client as soon as it sees it) */
    int op, ended, done, fresh;
    int R, n_out;             /* OP_PASS: the view's rows */
    const int *tok, *pos, *slot, *out_rows;
    float *logits, *scores;   /* scores: the alignment heads' (feed_scores), or NULL */
    dec_task *task;           /* OP_TASK */
    encdec_status result;
    encdec_status pass_st;    /* the last feed pass's (v_decode has no status to return) */
    int row0;                 /* its first row in the last step's pass */
    int pass_screened;        /* that pass screened its logits (models/screen.h) */
    /* OP_TASK watched (sch_client_run_watch): the task's lengths, copied
     * into snap under mu after every turn (tick counts the copies) */
    const int *w_len;
    int *w_snap, w_n;
    long w_tick;
    atomic_int halt;          /* the watcher asked to stop */
    char err[512];
    sch_client *next;         /* the queue of encodes and passes */
};

typedef struct {
    sch_client *head, *tail;
} sch_queue;

struct sch_engine {
    sch_params p;
    ed_pool *pool;
    sch_family fam;           /* the model family's state and passes */
    int have_fam;
    dec_runner root;          /* every place's histories and index rows */
    char *used;               /* [max_clients] */
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t wake, admit;
    int stop;
    sch_queue passes, encodes;      /* operations waiting, in order */
    sch_client **cur_ops;     /* [max_clients] the turn's passes */
    sch_client **run, **cur;  /* [max_clients] tasks stepping; the turn's copy */
    sch_client **cur_enc;     /* [max_clients] the turn's encodes (packed when several) */
    int *enc_places;          /* [max_clients] their places, */
    const void **enc_inputs;  /* and inputs, for the family */
    int n_run;
    int *m_tok, *m_pos, *m_slot, *m_out, *m_off;   /* a merged step's rows */
    float *m_logits;          /* [max_clients * slots, V]; ed_dev_host_alloc's on p.dev */
    sch_stats stats;          /* under mu */
    sch_stats turn;           /* the scheduler's counts of its current turn (its own) */
};

/* ---- the scheduler thread ---- */

static void finish(sch_client *c, encdec_status st) {
    c->result = st;
    if (st) snprintf(c->err, sizeof c->err, "%s", ed_err_msg());
    c->ended = 1;
}

/* ---- kept attention (decode/runner.h's rn_att): the requests that keep it
 * have their rows' alignment-head scores taken after each pass ---- */

static int keeps(const sch_client *c) { return c->view.att.buf != NULL; }

/* Capture on for a pass holding rows of any of c[0..n) that keep attention. */
static int att_on(sch_engine *e, sch_client *const *c, int n) {
    sch_family *f = &e->fam;
    int any = 0;
    for (int i = 0; i < n && !any; i++) any = !c[i]->ended && keeps(c[i]);
    return any && f->scores_on && f->n_heads <= RN_ATT_HEADS && f->scores_on(f->ctx, 1) == ENCDEC_OK;
}

/* c's rows [row0, row0 + R) of the pass (pos, slot: the pass's arrays from row0). */
static void att_take(sch_engine *e, sch_client *c, int row0, int R, const int *pos, const int *slot) {
    sch_family *f = &e->fam;
    if (!keeps(c)) return;
    const float *heads[RN_ATT_HEADS];
    for (int a = 0; a < f->n_heads; a++) heads[a] = f->scores(f->ctx, a) + (size_t)row0 * f->n_frames;
    rn_att_take(&c->view, heads, f->n_heads, f->n_frames, R, pos, slot);
}

static void run_op(sch_engine *e, sch_client *c) {
    encdec_status st = ENCDEC_OK;
    sch_family *f = &e->fam;
    if (c->op == OP_ENCODE) {
        st = f->encode(f->ctx, c->idx, c->input);
        e->turn.encodes++;
    } else {
        if (c->scores && !f->scores_on)
            st = ed_fail(ENCDEC_ERR_ARG, "this model has no alignment heads");
        else if (c->scores)
            st = f->scores_on(f->ctx, 1);
        int att = !st && !c->scores && att_on(e, &c, 1);
        if (!st) {
            /* a feed's logits are read in a later turn, after other passes:
             * never screened */
            if (f->screen) f->screen(f->ctx, 0);
            c->pass_screened = 0;
            f->decode(f->ctx, c->R, c->tok, c->pos, c->slot, e->root.tab0, f->n_ctx, c->n_out,
                      c->out_rows, c->logits);
            if (att) {
                att_take(e, c, 0, c->R, c->pos, c->slot);
                f->scores_on(f->ctx, 0);
            }
            size_t T = (size_t)f->n_frames;
            for (int a = 0; c->scores && a < f->n_heads; a++)
                memcpy(c->scores + (size_t)a * c->R * T, f->scores(f->ctx, a),
                       sizeof(float) * (size_t)c->R * T);
            if (c->scores) f->scores_on(f->ctx, 0);
        }
        e->turn.passes++;
    }
    finish(c, st);
}

/* Passes c[0..n) (no alignment scores, their rows and logits within the
 * merged step's) as one decoder pass: the family's passes are
 * batch-invariant, so each request's logits are what its pass alone gives.
 * Requests that arrive together (a batch of translations, the windows of
 * batched long-form) read the decoder's weights once for all their
 * prompts instead of once each. */
static void run_merged(sch_engine *e, sch_client **c, int n) {
    sch_family *f = &e->fam;
    size_t V = (size_t)f->n_vocab;
    int R = 0, O = 0;
    for (int i = 0; i < n; i++) {
        memcpy(e->m_tok + R, c[i]->tok, sizeof(int) * (size_t)c[i]->R);
        memcpy(e->m_pos + R, c[i]->pos, sizeof(int) * (size_t)c[i]->R);
        memcpy(e->m_slot + R, c[i]->slot, sizeof(int) * (size_t)c[i]->R);
        for (int k = 0; k < c[i]->n_out; k++) e->m_out[O + k] = R + c[i]->out_rows[k];
        R += c[i]->R;
        O += c[i]->n_out;
    }
    if (f->screen) f->screen(f->ctx, 0);   /* feeds are never screened (run_op) */
    int att = att_on(e, c, n);
    f->decode(f->ctx, R, e->m_tok, e->m_pos, e->m_slot, e->root.tab0, f->n_ctx, O, e->m_out,
              e->m_logits);
    O = R = 0;
    for (int i = 0; i < n; i++) {
        if (c[i]->n_out)
            memcpy(c[i]->logits, e->m_logits + (size_t)O * V, sizeof(float) * (size_t)c[i]->n_out * V);
        if (att) att_take(e, c[i], R, c[i]->R, e->m_pos + R, e->m_slot + R);
        O += c[i]->n_out;
        R += c[i]->R;
        c[i]->pass_screened = 0;
        finish(c[i], ENCDEC_OK);
    }
    if (att) f->scores_on(f->ctx, 0);
    e->turn.passes++;
}

/* The turn's passes, in order: runs of those run_merged takes merged (while
 * their rows fit one pass and their logits the step's), the others alone. */
static void run_passes(sch_engine *e, sch_client **c, int n) {
    int S = e->p.max_clients * e->p.slots;
    for (int i = 0; i < n;) {
        int j = i, R = 0, O = 0;
        while (j < n && !c[j]->scores && R + c[j]->R <= e->fam.max_rows && O + c[j]->n_out <= S) {
            R += c[j]->R;
            O += c[j]->n_out;
            j++;
        }
        if (j - i >= 2) {
            run_merged(e, c + i, j - i);
            i = j;
        } else {
            run_op(e, c[i++]);
        }
    }
}

/* The turn's encodes: one, or several packed into one pass where the
 * family packs them (each input's caches as alone, family.h). */
static void run_encodes(sch_engine *e, sch_client **c, int n) {
    sch_family *f = &e->fam;
    if (n == 1) {
        run_op(e, c[0]);
        return;
    }
    for (int i = 0; i < n; i++) {
        e->enc_places[i] = c[i]->idx;
        e->enc_inputs[i] = c[i]->input;
    }
    encdec_status st = f->encode_many(f->ctx, n, e->enc_places, e->enc_inputs);
    e->turn.encodes++;
    for (int i = 0; i < n; i++) finish(c[i], st);
}

/* One step of every running task: new tasks first choose from their
 * prompt's logits; the others' rows go through one decoder pass. */
static void step(sch_engine *e, sch_client **cur, int n) {
    size_t V = (size_t)e->fam.n_vocab;
    for (int i = 0; i < n; i++)
        if (cur[i]->fresh) {
            cur[i]->fresh = 0;
            encdec_status st = dec_task_advance(cur[i]->task);
            if (st || cur[i]->task->n == 0) finish(cur[i], st);
        }
    int R = 0;
    for (int i = 0; i < n; i++) {
        sch_client *c = cur[i];
        if (!c->ended && c->cancel && atomic_load(c->cancel))
            finish(c, ed_fail(ENCDEC_ERR_CANCELLED, "the request was cancelled"));
        if (!c->ended && atomic_load(&c->halt))
            finish(c, ed_fail(ENCDEC_ERR_CANCELLED, "the request's watcher asked to stop"));
        if (c->ended) continue;
        dec_task *t = c->task;
        encdec_status st = rn_step_rows(&c->view, t->n, t->seq, t->tok, R, e->m_tok, e->m_pos,
                                        e->m_slot);
        if (st) {
            finish(c, st);
            continue;
        }
        e->m_off[i] = R;
        R += t->n;
    }
    if (R == 0) return;
    for (int r = 0; r < R; r++) e->m_out[r] = r;
    /* greedy tasks only (rn_screen): the family screens the pass where it
     * pays, and each task refines its rows right after it */
    int scr = e->fam.screen != NULL;
    for (int i = 0; i < n && scr; i++) scr = cur[i]->ended || cur[i]->view.screen;
    if (e->fam.screen) e->fam.screen(e->fam.ctx, scr);
    int att = att_on(e, cur, n);
    e->fam.decode(e->fam.ctx, R, e->m_tok, e->m_pos, e->m_slot, e->root.tab0, e->fam.n_ctx, R,
                  e->m_out, e->m_logits);
    for (int i = 0; i < n && att; i++)   /* before the tasks choose (and fork) */
        if (!cur[i]->ended)
            att_take(e, cur[i], e->m_off[i], cur[i]->task->n, e->m_pos + e->m_off[i], e->m_slot + e->m_off[i]);
    if (att) e->fam.scores_on(e->fam.ctx, 0);
    e->turn.steps++;
    e->turn.rows += R;
    e->turn.last_rows = R;
    int b = 0;
    while (b < 8 && R > (1 << b)) b++;
    e->turn.hist[b]++;
    for (int i = 0; i < n; i++) {
        sch_client *c = cur[i];
        if (c->ended) continue;
        c->task->logits = e->m_logits + (size_t)e->m_off[i] * V;
        c->row0 = e->m_off[i];
        c->pass_screened = c->view.screened = scr;
        encdec_status st = dec_task_advance(c->task);
        if (st || c->task->n == 0) finish(c, st);
    }
}

/* Takes the first client of queue q (NULL when empty). */
static sch_client *pop(sch_queue *q) {
    sch_client *c = q->head;
    if (c) {
        q->head = c->next;
        if (!q->head) q->tail = NULL;
        c->next = NULL;
    }
    return c;
}

/* Takes the turn's encodes into cur_enc: the first waiting, and as many
 * more as the family packs into one pass. */
static int pop_encodes(sch_engine *e) {
    const sch_family *f = &e->fam;
    sch_client *c = pop(&e->encodes);
    if (!c) return 0;
    e->cur_enc[0] = c;
    int n = 1, rows = f->encode_rows ? f->encode_rows(c->input) : 0;
    while (n < f->max_encode && e->encodes.head &&
           rows + f->encode_rows(e->encodes.head->input) <= f->max_encode_rows) {
        c = pop(&e->encodes);
        rows += f->encode_rows(c->input);
        e->cur_enc[n++] = c;
    }
    return n;
}

static void push(sch_queue *q, sch_client *c) {
    c->next = NULL;
    if (q->tail) q->tail->next = c;
    else q->head = c;
    q->tail = c;
}

/* The scheduler's turns. Passes (prompts, alignment: a few milliseconds)
 * run first, all of them, in order. Encoder passes (the expensive part of a
 * window) and decode steps share the time: while tasks are decoding, an
 * encoder pass (one input, or several packed: pop_encodes) runs only once
 * the steps since the last one have taken as long as it did, so neither a
 * stream of new requests stalls the decoding ones nor the reverse (without
 * this, every step would wait for an encode: a short request behind a long
 * recording would crawl one token per encoder pass). */
static void *sched_main(void *arg) {
    sch_engine *e = arg;
    ed_isa_swap(e->p.isa);
    double credit = 0;   /* decode time owed to the last encode (< 0: steps first) */
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->stop && !e->passes.head && !e->encodes.head && e->n_run == 0)
            pthread_cond_wait(&e->wake, &e->mu);
        if (!e->passes.head && !e->encodes.head && e->n_run == 0) break;   /* stopping */
        int n_pass = 0;
        for (sch_client *c; (c = pop(&e->passes));) e->cur_ops[n_pass++] = c;
        int n_enc = 0;
        if (e->n_run == 0 || credit >= 0) n_enc = pop_encodes(e);
        int n = e->n_run;
        memcpy(e->cur, e->run, sizeof *e->cur * (size_t)n);
        pthread_mutex_unlock(&e->mu);

        run_passes(e, e->cur_ops, n_pass);
        if (n_enc) {
            double t0 = ed_now_ms();
            run_encodes(e, e->cur_enc, n_enc);
            credit = -(ed_now_ms() - t0);
        }
        if (n > 0) {
            double t0 = ed_now_ms();
            step(e, e->cur, n);
            credit += ed_now_ms() - t0;
        } else {
            credit = 0;
        }

        pthread_mutex_lock(&e->mu);
        e->stats.steps += e->turn.steps;
        e->stats.rows += e->turn.rows;
        e->stats.passes += e->turn.passes;
        e->stats.encodes += e->turn.encodes;
        if (e->turn.steps) e->stats.last_rows = e->turn.last_rows;
        for (int b = 0; b < 9; b++) e->stats.hist[b] += e->turn.hist[b];
        memset(&e->turn, 0, sizeof e->turn);
        for (int i = 0; i < n_pass; i++) {
            e->cur_ops[i]->done = 1;
            pthread_cond_signal(&e->cur_ops[i]->cv);
        }
        for (int i = 0; i < n_enc; i++) {
            e->cur_enc[i]->done = 1;
            pthread_cond_signal(&e->cur_enc[i]->cv);
        }
        int k = 0;
        for (int i = 0; i < e->n_run; i++) {
            sch_client *c = e->run[i];
            if (c->w_len) {   /* a watched task: its lengths as this turn left them */
                memcpy(c->w_snap, c->w_len, sizeof(int) * (size_t)c->w_n);
                c->w_tick++;
            }
            c->done = c->ended;   /* the last look at c, unless it goes on */
            if (c->done || c->w_len) pthread_cond_signal(&c->cv);
            if (!c->done) e->run[k++] = c;
        }
        e->n_run = k;
        e->stats.tasks = k;
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- a request's side ---- */

/* Hands c's operation to the scheduler and waits for it. */
static encdec_status post(sch_client *c, int op) {
    sch_engine *e = c->e;
    if (c->cancel && atomic_load(c->cancel))
        return ed_fail(ENCDEC_ERR_CANCELLED, "the request was cancelled");
    pthread_mutex_lock(&e->mu);
    c->op = op;
    c->done = c->ended = 0;
    c->result = ENCDEC_OK;
    c->next = NULL;
    if (op == OP_TASK) {
        c->fresh = 1;
        e->run[e->n_run++] = c;
        e->stats.tasks = e->n_run;
    } else {
        push(op == OP_ENCODE ? &e->encodes : &e->passes, c);
    }
    pthread_cond_signal(&e->wake);
    while (!c->done) pthread_cond_wait(&c->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return c->result ? ed_fail(c->result, "%s", c->err) : ENCDEC_OK;
}

encdec_status sch_client_run_watch(sch_client *c, dec_task *t, int (*fn)(void *ctx, const int *len),
                                   void *ctx, const int *len, int n) {
    if (t->n <= 0) return fn(ctx, len) ? ed_fail(ENCDEC_ERR_CANCELLED, "stopped") : ENCDEC_OK;
    sch_engine *e = c->e;
    int *snap = ed_alloc(sizeof(int) * 2 * (size_t)n, "watched lengths");
    if (!snap) return ENCDEC_ERR_NOMEM;
    int *mine = snap + n;
    if (c->cancel && atomic_load(c->cancel)) {
        free(snap);
        return ed_fail(ENCDEC_ERR_CANCELLED, "the request was cancelled");
    }
    memcpy(snap, len, sizeof(int) * (size_t)n);
    int stop = 0;
    long seen = 0;
    pthread_mutex_lock(&e->mu);
    c->task = t;
    c->op = OP_TASK;
    c->done = c->ended = 0;
    c->result = ENCDEC_OK;
    c->next = NULL;
    c->fresh = 1;
    c->w_len = len;
    c->w_snap = snap;
    c->w_n = n;
    c->w_tick = 0;
    atomic_store(&c->halt, 0);
    e->run[e->n_run++] = c;
    e->stats.tasks = e->n_run;
    pthread_cond_signal(&e->wake);
    for (;;) {
        if (seen != c->w_tick) {   /* the lengths moved: tell fn, unlocked */
            seen = c->w_tick;
            memcpy(mine, snap, sizeof(int) * (size_t)n);
            pthread_mutex_unlock(&e->mu);
            if (!stop && fn(ctx, mine)) {
                stop = 1;
                atomic_store(&c->halt, 1);
            }
            pthread_mutex_lock(&e->mu);
            continue;
        }
        if (c->done) break;
        pthread_cond_wait(&c->cv, &e->mu);
    }
    c->w_len = NULL;
    c->w_snap = NULL;
    pthread_mutex_unlock(&e->mu);
    c->task = NULL;
    free(snap);
    if (c->result) return ed_fail(c->result, "%s", c->err);
    return stop ? ed_fail(ENCDEC_ERR_CANCELLED, "on_token asked to stop") : ENCDEC_OK;
}

encdec_status sch_client_encode(sch_client *c, const void *input) {
    c->input = input;
    return post(c, OP_ENCODE);
}

encdec_status sch_client_run(sch_client *c, dec_task *t) {
    if (t->n <= 0) return ENCDEC_OK;
    c->task = t;
    encdec_status st = post(c, OP_TASK);
    c->task = NULL;
    return st;
}

static encdec_status x_encode(void *ctx, const float *mel) { return sch_client_encode(ctx, mel); }
static encdec_status x_run(void *ctx, dec_task *t) { return sch_client_run(ctx, t); }

static encdec_status x_feed_scores(void *ctx, const int *tokens, int n, float *logits,
                                   float *scores) {
    sch_client *c = ctx;
    c->scores = scores;
    c->pass_st = ENCDEC_OK;
    encdec_status st = rn_feed_logits(&c->view, 0, tokens, n, 0, logits);
    c->scores = NULL;
    return st ? st : c->pass_st;   /* its message was recorded on this thread by post */
}

/* The view's decoder pass (its feeds): run by the scheduler. */
static void v_decode(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                     const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    sch_client *c = ctx;
    (void)tab;
    (void)tab_ld;
    c->R = R;
    c->tok = tok;
    c->pos = pos;
    c->slot = slot;
    c->n_out = n_out;
    c->out_rows = out_rows;
    c->logits = logits;
    /* a cancelled request (or no room for alignment scores) gets no pass: its
     * logits are zeros, not stale memory, and its next operation (the task
     * or encode that follows every feed) reports the error */
    c->pass_st = post(c, OP_PASS);
    if (c->pass_st) memset(logits, 0, sizeof(float) * (size_t)n_out * (size_t)c->e->fam.n_vocab);
}

/* Screened logits: the scheduler decides per pass (step); the view's rows
 * are the pass's from row0. */
static void v_screen(void *ctx, int on) { (void)ctx, (void)on; }

static float v_logit_err(void *ctx, int row) {
    sch_client *c = ctx;
    sch_family *f = &c->e->fam;
    return c->pass_screened ? f->logit_err(f->ctx, c->row0 + row) : 0;
}

static void v_logit_exact(void *ctx, int row, const int *ids, int n, float *out) {
    sch_client *c = ctx;
    sch_family *f = &c->e->fam;
    f->logit_exact(f->ctx, c->row0 + row, ids, n, out);
}

/* The encode operation fills the place's cross cache: nothing left here. */
static void v_cross(void *ctx) { (void)ctx; }

encdec_status sch_client_new(sch_engine *e, const atomic_int *cancel, sch_client **out) {
    *out = NULL;
    sch_client *c = calloc(1, sizeof *c);
    if (!c) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: request");
    c->e = e;
    c->cancel = cancel;
    c->x = (asr_exec){c, x_encode, x_run, x_feed_scores};
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_lock(&e->mu);
    e->stats.waiting++;
    int idx = -1;
    for (;;) {
        for (int i = 0; i < e->p.max_clients && idx < 0; i++)
            if (!e->used[i]) idx = i;
        if (idx >= 0 || (cancel && atomic_load(cancel))) break;
        pthread_cond_wait(&e->admit, &e->mu);
    }
    if (idx < 0) {   /* cancelled while waiting */
        e->stats.waiting--;
        pthread_mutex_unlock(&e->mu);
        pthread_cond_destroy(&c->cv);
        free(c);
        return ed_fail(ENCDEC_ERR_CANCELLED, "the request was cancelled");
    }
    e->used[idx] = 1;
    e->stats.waiting--;
    e->stats.clients++;
    pthread_mutex_unlock(&e->mu);
    c->idx = idx;
    sch_family *f = &e->fam;
    rn_model rm = {c, f->n_vocab, e->p.slots, f->n_ctx, f->max_rows, NULL, v_cross, v_decode,
                   e->pool};
    if (f->screen) {
        rm.screen = v_screen;
        rm.logit_err = v_logit_err;
        rm.logit_exact = v_logit_exact;
    }
    encdec_status st = rn_init_view(&c->view, &e->root, idx * e->p.slots, e->p.slots, &rm);
    if (st) {
        sch_client_free(c);
        return st;
    }
    *out = c;
    return ENCDEC_OK;
}

void sch_client_free(sch_client *c) {
    if (!c) return;
    sch_engine *e = c->e;
    rn_free(&c->view);
    /* its caches go back (no pass reads them: the request is idle, and the
     * place is not given out again before it is free) */
    e->fam.place_free(e->fam.ctx, c->idx);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_lock(&e->mu);
    e->used[c->idx] = 0;
    e->stats.clients--;
    pthread_cond_signal(&e->admit);
    pthread_mutex_unlock(&e->mu);
    free(c);
}

dec_runner *sch_client_runner(sch_client *c) { return &c->view; }
const asr_exec *sch_client_exec(sch_client *c) { return &c->x; }
int sch_client_slots(const sch_client *c) { return c->e->p.slots; }

/* ---- the engine ---- */

encdec_status sch_new(sch_engine **out, const sch_params *p) {
    *out = NULL;
    if (p->max_clients < 1 || p->max_clients > 256 || p->slots < 2 || p->slots > 1024 ||
        p->max_clients * p->slots > 8192)
        return ed_fail(ENCDEC_ERR_ARG, "engine: %d requests x %d sequences is out of range "
                       "(1..256 requests, 2..1024 sequences, 8192 in all)", p->max_clients, p->slots);
    sch_engine *e = calloc(1, sizeof *e);
    if (!e) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: engine");
    e->p = *p;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->wake, NULL);
    pthread_cond_init(&e->admit, NULL);
    int S = p->max_clients * p->slots;
    encdec_status st = ed_pool_new(&e->pool, p->n_threads);
    if (!st) {
        ed_pool_set_isa(e->pool, p->isa);
        ed_pool_set_device(e->pool, p->dev);
        st = p->text ? sch_fam_text(&e->fam, p->text, e->pool, p->max_clients, p->slots, p->n_ctx,
                                    p->cross_type, p->isa)
                   : sch_fam_whisper(&e->fam, p->whisper, e->pool, p->max_clients, p->slots,
                                     p->cross_type, p->isa);
        e->have_fam = !st;
    }
    if (!st) {
        rn_model rm = {NULL, e->fam.n_vocab, S, e->fam.n_ctx, e->fam.max_rows, NULL, NULL, NULL,
                       e->pool};
        st = rn_init(&e->root, &rm, ENCDEC_KV_FULL);
    }
    if (!st) {
        size_t R = (size_t)e->fam.max_rows;
        e->used = ed_calloc((size_t)p->max_clients, "places");
        e->run = ed_alloc(sizeof *e->run * 4 * (size_t)p->max_clients, "running tasks");
        e->enc_places = ed_alloc(sizeof(int) * (size_t)p->max_clients, "encode places");
        e->enc_inputs = ed_alloc(sizeof(void *) * (size_t)p->max_clients, "encode inputs");
        e->m_tok = ed_alloc(sizeof(int) * 4 * R + sizeof(int) * (size_t)p->max_clients, "rows");
        /* page-locked on a device: every step's logits come down into it */
        e->m_logits = ed_dev_host_alloc(p->dev, sizeof(float) * (size_t)S * (size_t)e->fam.n_vocab,
                                        "step logits");
        if (!e->used || !e->run || !e->m_tok || !e->m_logits || !e->enc_places || !e->enc_inputs)
            st = ENCDEC_ERR_NOMEM;
    }
    if (!st) {
        size_t R = (size_t)e->fam.max_rows;
        e->cur = e->run + p->max_clients;
        e->cur_ops = e->cur + p->max_clients;
        e->cur_enc = e->cur_ops + p->max_clients;
        e->m_pos = e->m_tok + R;
        e->m_slot = e->m_pos + R;
        e->m_out = e->m_slot + R;
        e->m_off = e->m_out + R;
        if (pthread_create(&e->th, NULL, sched_main, e) != 0)
            st = ed_fail(ENCDEC_ERR_THREADS, "engine: the scheduler thread could not start");
        else e->started = 1;
    }
    if (st) {
        sch_free(e);
        return st;
    }
    *out = e;
    return ENCDEC_OK;
}

void sch_free(sch_engine *e) {
    if (!e) return;
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        e->stop = 1;
        pthread_cond_signal(&e->wake);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->th, NULL);
    }
    rn_free(&e->root);
    if (e->have_fam) e->fam.free(e->fam.ctx);
    ed_pool_free(e->pool);
    free(e->used);
    free(e->run);
    free(e->enc_places);
    free(e->enc_inputs);
    free(e->m_tok);
    ed_dev_host_free(e->p.dev, e->m_logits);
    pthread_cond_destroy(&e->wake);
    pthread_cond_destroy(&e->admit);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

void sch_get_stats(sch_engine *e, sch_stats *out) {
    pthread_mutex_lock(&e->mu);
    *out = e->stats;
    pthread_mutex_unlock(&e->mu);
}

void sch_wake_waiting(sch_engine *e) {
    pthread_mutex_lock(&e->mu);
    pthread_cond_broadcast(&e->admit);
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
}
