/* runner.c - the seam's feed/step/reorder over a family's decode pass. */
#include "decode/runner.h"
#include "base/err.h"
#include "base/mem.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

encdec_status rn_init(dec_runner *r, const rn_model *m, encdec_kv_mode mode) {
    memset(r, 0, sizeof *r);
    r->m = *m;
    r->mode = mode;
    if (m->n_slots < 1 || m->n_ctx < 1 || m->max_rows < m->n_slots || m->max_rows < m->n_ctx)
        return ed_fail(ENCDEC_ERR_ARG, "runner: %d sequences x %d positions, %d rows", m->n_slots,
                       m->n_ctx, m->max_rows);
    size_t cells = (size_t)m->n_slots * m->n_ctx, R = (size_t)m->max_rows;
    r->hist = ed_alloc(cells * sizeof(int), "token history");
    r->tab = ed_alloc(cells * sizeof(int), "cache index table");
    r->len = ed_calloc((size_t)m->n_slots * sizeof(int), "sequence lengths");
    r->high = ed_calloc((size_t)m->n_slots * sizeof(int), "sequence lengths");
    r->tmp = ed_alloc((cells * 2 + (size_t)m->n_slots) * sizeof(int), "reorder snapshot");
    r->r_tok = ed_alloc(R * sizeof(int), "rows");
    r->r_pos = ed_alloc(R * sizeof(int), "rows");
    r->r_slot = ed_alloc(R * sizeof(int), "rows");
    r->r_out = ed_alloc(R * sizeof(int), "rows");
    if (!r->hist || !r->tab || !r->len || !r->high || !r->tmp || !r->r_tok || !r->r_pos ||
        !r->r_slot || !r->r_out) {
        rn_free(r);
        return ENCDEC_ERR_NOMEM;
    }
    r->tab0 = r->tab;
    return ENCDEC_OK;
}

encdec_status rn_init_view(dec_runner *v, dec_runner *parent, int base, int n, const rn_model *m) {
    memset(v, 0, sizeof *v);
    if (base < 0 || n < 1 || base > parent->m.n_slots - n)
        return ed_fail(ENCDEC_ERR_ARG, "runner view: sequences %d..%d of %d", base, base + n - 1,
                       parent->m.n_slots);
    v->m = *m;
    v->m.n_slots = n;
    v->m.n_ctx = parent->m.n_ctx;
    v->m.slot_input = NULL;
    v->mode = ENCDEC_KV_FULL;
    v->base = base;
    v->view = 1;
    size_t C = (size_t)parent->m.n_ctx, R = (size_t)v->m.max_rows;
    v->hist = parent->hist + (size_t)base * C;
    v->tab = parent->tab + (size_t)base * C;
    v->tab0 = parent->tab0;
    v->len = parent->len + base;
    v->high = parent->high + base;
    v->tmp = ed_alloc(((size_t)n * C * 2 + (size_t)n) * sizeof(int), "reorder snapshot");
    v->r_tok = ed_alloc(R * sizeof(int), "rows");
    v->r_pos = ed_alloc(R * sizeof(int), "rows");
    v->r_slot = ed_alloc(R * sizeof(int), "rows");
    v->r_out = ed_alloc(R * sizeof(int), "rows");
    if (!v->tmp || !v->r_tok || !v->r_pos || !v->r_slot || !v->r_out) {
        rn_free(v);
        return ENCDEC_ERR_NOMEM;
    }
    memset(v->len, 0, (size_t)n * sizeof *v->len);
    memset(v->high, 0, (size_t)n * sizeof *v->high);
    return ENCDEC_OK;
}

encdec_status rn_att_begin(dec_runner *r, int n, const int *cols, int n_pos) {
    rn_att_end(r);
    if (n < 1 || n > r->m.n_slots)
        return ed_fail(ENCDEC_ERR_ARG, "attention: %d sequences of %d", n, r->m.n_slots);
    int ld = 1;
    for (int q = 0; q < n; q++) ld = cols[q] > ld ? cols[q] : ld;
    n_pos = n_pos < 1 || n_pos > r->m.n_ctx ? r->m.n_ctx : n_pos;
    r->att.buf = ed_alloc_floats((size_t)n * (size_t)n_pos, (size_t)ld, "attention");
    r->att.cols = ed_alloc(sizeof(int) * (size_t)n, "attention");
    r->att.high = ed_calloc(sizeof(int) * (size_t)n, "attention");
    if (!r->att.buf || !r->att.cols || !r->att.high) {
        rn_att_end(r);
        return ENCDEC_ERR_NOMEM;
    }
    memcpy(r->att.cols, cols, sizeof(int) * (size_t)n);
    r->att.n = n;
    r->att.ld = ld;
    r->att.n_pos = n_pos;
    return ENCDEC_OK;
}

void rn_att_end(dec_runner *r) {
    free(r->att.buf);
    free(r->att.cols);
    free(r->att.high);
    memset(&r->att, 0, sizeof r->att);
}

void rn_softmax_add(const float *v, int T, double scale, float *o) {
    double mx = -INFINITY, sum = 0;
    for (int t = 0; t < T; t++) mx = v[t] > mx ? v[t] : mx;
    for (int t = 0; t < T; t++) sum += exp((double)v[t] - mx);
    for (int t = 0; t < T; t++) {
        double w = exp((double)v[t] - mx) / sum;
        if (w >= FLT_MIN) o[t] += (float)(w * scale);
    }
}

void rn_att_take(dec_runner *r, const float *const *heads, int n_heads, int ld, int R, const int *pos,
                 const int *slot) {
    rn_att *a = &r->att;
    for (int i = 0; i < R && a->buf; i++) {
        int q = slot[i] - r->base, p = pos[i];
        if (q < 0 || q >= a->n || p < a->high[q] || p >= a->n_pos) continue;
        int T = a->cols[q] < ld ? a->cols[q] : ld;
        float *o = a->buf + ((size_t)q * (size_t)a->n_pos + (size_t)p) * (size_t)a->ld;
        memset(o, 0, sizeof(float) * (size_t)a->cols[q]);
        for (int h = 0; h < n_heads; h++)   /* the heads' mean of each one's softmax */
            rn_softmax_add(heads[h] + (size_t)i * (size_t)ld, T, 1.0 / n_heads, o);
        a->high[q] = p + 1;
    }
}

const float *rn_att_row(const dec_runner *r, int q, int p) {
    const rn_att *a = &r->att;
    if (!a->buf || q < 0 || q >= a->n || p < 0 || p >= a->high[q]) return NULL;
    return a->buf + ((size_t)q * (size_t)a->n_pos + (size_t)p) * (size_t)a->ld;
}

void rn_free(dec_runner *r) {
    rn_att_end(r);
    if (r->view) r->hist = r->tab = r->len = r->high = NULL;   /* the parent's */
    int **p[] = {&r->hist, &r->tab, &r->len, &r->high, &r->tmp, &r->r_tok, &r->r_pos, &r->r_slot,
                 &r->r_out};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        free(*p[i]);
        *p[i] = NULL;
    }
    r->tab0 = NULL;
}

void rn_begin(dec_runner *r, encdec_kv_mode mode) {
    r->mode = mode;
    r->n_steps = 0;
    memset(r->len, 0, (size_t)r->m.n_slots * sizeof *r->len);
    memset(r->high, 0, (size_t)r->m.n_slots * sizeof *r->high);
    if (mode == ENCDEC_KV_FULL) r->m.cross(r->m.ctx);
}

void rn_restart(dec_runner *r, int keep) {
    for (int s = 0; s < r->m.n_slots; s++)
        if (s != keep) r->len[s] = r->high[s] = 0;
    r->n_steps = 0;
}

static int input_of(const dec_runner *r, int seq) {
    return r->m.slot_input ? r->m.slot_input[seq] : 0;
}

static encdec_status check_room(const dec_runner *r, int seq, int n) {
    if (seq < 0 || seq >= r->m.n_slots)
        return ed_fail(ENCDEC_ERR_ARG, "sequence %d out of range 0..%d", seq, r->m.n_slots - 1);
    if (n < 1 || r->len[seq] + n > r->m.n_ctx)
        return ed_fail(ENCDEC_ERR_ARG, "sequence %d: %d + %d tokens exceed the %d decoder positions",
                       seq, r->len[seq], n, r->m.n_ctx);
    /* Cells other sequences may read are never overwritten: after a reorder
     * to a shorter history, a slot would rewrite positions it already holds. */
    if (r->mode != ENCDEC_KV_NONE && r->len[seq] < r->high[seq])
        return ed_fail(ENCDEC_ERR_ARG, "sequence %d: position %d of its cache slot is already "
                       "written; sequences that share history must advance together",
                       seq, r->len[seq]);
    return ENCDEC_OK;
}

/* Rows for tokens[0, n) of seq into rows [at, ...) of (tok, pos, slot),
 * written to its own cache slot (base + seq); in NONE mode preceded by its
 * whole history, recomputed into its own slot too. */
static int rows_into(dec_runner *r, int *r_tok, int *r_pos, int *r_slot, int at, int seq,
                     const int *tokens, int n) {
    size_t C = (size_t)r->m.n_ctx;
    int *h = r->hist + (size_t)seq * C, *tab = r->tab + (size_t)seq * C, slot = r->base + seq;
    if (r->mode == ENCDEC_KV_NONE)
        for (int p = 0; p < r->len[seq]; p++, at++) {
            r_tok[at] = h[p];
            r_pos[at] = p;
            r_slot[at] = slot;
            tab[p] = slot;
        }
    for (int i = 0; i < n; i++, at++) {
        int p = r->len[seq] + i;
        r_tok[at] = tokens[i];
        r_pos[at] = p;
        r_slot[at] = slot;
        h[p] = tokens[i];
        tab[p] = slot;
    }
    r->len[seq] += n;
    if (r->len[seq] > r->high[seq]) r->high[seq] = r->len[seq];
    return at;
}

static int build_rows(dec_runner *r, int at, int seq, const int *tokens, int n) {
    return rows_into(r, r->r_tok, r->r_pos, r->r_slot, at, seq, tokens, n);
}

/* One decode call; whole: it makes every row of the seam's call, so its
 * logits may be screened (rn_screen) and their rows are the seam's. */
static void decode_rows(dec_runner *r, int R, int n_out, float *logits, int whole) {
    r->screened = whole && r->screen && r->m.screen;
    if (r->m.screen) r->m.screen(r->m.ctx, r->screened);
    /* kept attention: the scores of this call (a view's are the engine's to take) */
    int cap = r->att.buf && r->m.scores_on && r->m.n_heads <= RN_ATT_HEADS &&
              r->m.scores_on(r->m.ctx, 1) == ENCDEC_OK;
    r->m.decode(r->m.ctx, R, r->r_tok, r->r_pos, r->r_slot, r->tab0, r->m.n_ctx, n_out, r->r_out,
                logits);
    if (!cap) return;
    const float *heads[RN_ATT_HEADS];
    int ld = 0;
    for (int a = 0; a < r->m.n_heads; a++) heads[a] = r->m.scores(r->m.ctx, a, &ld);
    rn_att_take(r, heads, r->m.n_heads, ld, R, r->r_pos, r->r_slot);
    r->m.scores_on(r->m.ctx, 0);
}

static encdec_status feed_one(dec_runner *r, int seq, const int *tokens, int n, float *logits,
                              int whole) {
    encdec_status st = check_room(r, seq, n);
    if (st) return st;
    if (r->mode != ENCDEC_KV_FULL) r->m.cross(r->m.ctx);
    int R = build_rows(r, 0, seq, tokens, n);
    r->r_out[0] = R - 1;
    decode_rows(r, R, 1, logits, whole);
    return ENCDEC_OK;
}

static encdec_status feed(void *ctx, int seq, const int *tokens, int n, float *logits) {
    return feed_one(ctx, seq, tokens, n, logits, 1);
}

encdec_status rn_feed_logits(dec_runner *r, int seq, const int *tokens, int n, int first,
                             float *logits) {
    if (first < 0 || first >= n)
        return ed_fail(ENCDEC_ERR_ARG, "feed: logits from token %d of %d", first, n);
    encdec_status st = check_room(r, seq, n);
    if (st) return st;
    if (r->mode != ENCDEC_KV_FULL) r->m.cross(r->m.ctx);
    int R = build_rows(r, 0, seq, tokens, n);
    for (int i = first; i < n; i++) r->r_out[i - first] = R - n + i;
    decode_rows(r, R, n - first, logits, 0);
    return ENCDEC_OK;
}

encdec_status rn_feed_rows(dec_runner *r, int n_seq, const int *seq, const int *tokens, const int *n,
                           float *logits) {
    int R = 0;
    for (int i = 0; i < n_seq; i++) {
        encdec_status st = check_room(r, seq[i], n[i]);
        if (st) return st;
        if (n[i] < 1) return ed_fail(ENCDEC_ERR_ARG, "feed rows: sequence %d gets %d tokens", seq[i], n[i]);
        for (int j = 0; j < i; j++)
            if (seq[j] == seq[i]) return ed_fail(ENCDEC_ERR_ARG, "feed rows: sequence %d listed twice", seq[i]);
        R += n[i] + (r->mode == ENCDEC_KV_NONE ? r->len[seq[i]] : 0);
    }
    if (R > r->m.max_rows)
        return ed_fail(ENCDEC_ERR_ARG, "feed rows: %d rows, a pass takes %d", R, r->m.max_rows);
    if (r->mode != ENCDEC_KV_FULL) r->m.cross(r->m.ctx);
    int at = 0, o = 0;
    for (int i = 0; i < n_seq; i++) {
        int end = build_rows(r, at, seq[i], tokens, n[i]);
        for (int k = end - n[i]; logits && k < end; k++) r->r_out[o++] = k;
        tokens += n[i];
        at = end;
    }
    decode_rows(r, at, o, logits, 0);
    return ENCDEC_OK;
}

/* Sequences go in runs whose rows fit the model's max_rows; each run is one
 * pass (one cross-cache fill where the mode recomputes it per pass). */
static encdec_status feed_n(void *ctx, int n_seq, const int *seq, const int *tokens, int n,
                            float *logits) {
    dec_runner *r = ctx;
    for (int i = 0; i < n_seq; i++) {
        encdec_status st = check_room(r, seq[i], n);
        if (st) return st;
        for (int j = 0; j < i; j++)
            if (seq[j] == seq[i])
                return ed_fail(ENCDEC_ERR_ARG, "feed: sequence %d listed twice", seq[i]);
        if (i > 0 && input_of(r, seq[i]) < input_of(r, seq[i - 1]))
            return ed_fail(ENCDEC_ERR_ARG, "feed: sequences must be listed in input order");
    }
    for (int i0 = 0; i0 < n_seq;) {
        int R = 0, i1 = i0;
        while (i1 < n_seq) {
            int rows = n + (r->mode == ENCDEC_KV_NONE ? r->len[seq[i1]] : 0);
            if (i1 > i0 && R + rows > r->m.max_rows) break;
            R += rows, i1++;
        }
        int whole = i0 == 0 && i1 == n_seq;
        if (i1 == i0 + 1) {   /* alone (it may not even fit: feed says so) */
            encdec_status st = feed_one(r, seq[i0], tokens, n, logits + (size_t)i0 * r->m.n_vocab,
                                        whole);
            if (st) return st;
            i0 = i1;
            continue;
        }
        if (r->mode != ENCDEC_KV_FULL) r->m.cross(r->m.ctx);
        R = 0;
        for (int i = i0; i < i1; i++) {
            R = build_rows(r, R, seq[i], tokens, n);
            r->r_out[i - i0] = R - 1;
        }
        decode_rows(r, R, i1 - i0, logits + (size_t)i0 * r->m.n_vocab, whole);
        i0 = i1;
    }
    return ENCDEC_OK;
}

static encdec_status step(void *ctx, int n_seq, const int *seq, const int *token, float *logits) {
    dec_runner *r = ctx;
    if (n_seq < 1 || n_seq > r->m.n_slots)
        return ed_fail(ENCDEC_ERR_ARG, "step of %d sequences (1..%d)", n_seq, r->m.n_slots);
    for (int i = 0; i < n_seq; i++) {
        encdec_status st = check_room(r, seq[i], 1);
        if (st) return st;
        /* rows of one input must be consecutive: sequences listed by input */
        if (i > 0 && input_of(r, seq[i]) < input_of(r, seq[i - 1]))
            return ed_fail(ENCDEC_ERR_ARG, "step: sequences must be listed in input order");
    }
    r->n_steps++;
    if (r->mode == ENCDEC_KV_NONE) {   /* every sequence reruns its own prefix */
        for (int i = 0; i < n_seq; i++) {
            encdec_status st = feed_one(r, seq[i], &token[i], 1, logits + (size_t)i * r->m.n_vocab,
                                        n_seq == 1);
            if (st) return st;
        }
        return ENCDEC_OK;
    }
    if (r->mode == ENCDEC_KV_SELF) r->m.cross(r->m.ctx);
    int R = 0;
    for (int i = 0; i < n_seq; i++) {
        r->r_out[i] = R;
        R = build_rows(r, R, seq[i], &token[i], 1);
    }
    decode_rows(r, R, n_seq, logits, 1);
    return ENCDEC_OK;
}

static encdec_status reorder(void *ctx, int n, const int *seq, const int *src) {
    dec_runner *r = ctx;
    size_t C = (size_t)r->m.n_ctx;
    if (n < 0 || n > r->m.n_slots) return ed_fail(ENCDEC_ERR_ARG, "reorder of %d sequences", n);
    for (int i = 0; i < n; i++) {
        if (seq[i] < 0 || seq[i] >= r->m.n_slots || src[i] < 0 || src[i] >= r->m.n_slots)
            return ed_fail(ENCDEC_ERR_ARG, "reorder: sequence %d <- %d out of range", seq[i], src[i]);
        if (input_of(r, seq[i]) != input_of(r, src[i]))
            return ed_fail(ENCDEC_ERR_ARG, "reorder: sequences %d and %d decode different inputs",
                           seq[i], src[i]);
    }
    /* snapshot the sources first: "all at once" */
    int *th = r->tmp, *tt = r->tmp + (size_t)n * C, *tl = r->tmp + 2 * (size_t)n * C;
    for (int i = 0; i < n; i++) {
        int L = r->len[src[i]];
        tl[i] = L;
        memcpy(th + i * C, r->hist + src[i] * C, (size_t)L * sizeof(int));
        memcpy(tt + i * C, r->tab + src[i] * C, (size_t)L * sizeof(int));
    }
    for (int i = 0; i < n; i++) {
        r->len[seq[i]] = tl[i];
        memcpy(r->hist + seq[i] * C, th + i * C, (size_t)tl[i] * sizeof(int));
        memcpy(r->tab + seq[i] * C, tt + i * C, (size_t)tl[i] * sizeof(int));
    }
    return ENCDEC_OK;
}

typedef struct {
    void (*fn)(void *arg, int i);
    void *arg;
    int n;
} par_job;

static void par_task(void *arg, int ith, int nth) {
    par_job *j = arg;
    for (int i = ith; i < j->n; i += nth) j->fn(j->arg, i);
}

static void par_for(void *ctx, int n, void (*fn)(void *arg, int i), void *arg) {
    dec_runner *r = ctx;
    par_job j = {fn, arg, n};
    if (r->m.pool) ed_pool_run(r->m.pool, par_task, &j);
    else par_task(&j, 0, 1);
}

static float logit_err(void *ctx, int row) {
    dec_runner *r = ctx;
    return r->screened ? r->m.logit_err(r->m.ctx, row) : 0;
}

static void logit_exact(void *ctx, int row, const int *ids, int n, float *out) {
    dec_runner *r = ctx;
    r->m.logit_exact(r->m.ctx, row, ids, n, out);
}

dec_model rn_seam(dec_runner *r) {
    dec_model dm = {r, r->m.n_vocab, feed, step, reorder, feed_n, par_for, NULL, NULL};
    if (r->m.screen) {
        dm.logit_err = logit_err;
        dm.logit_exact = logit_exact;
    }
    return dm;
}

void rn_screen(dec_runner *r, int on) { r->screen = on && r->m.screen; }

encdec_status rn_step_rows(dec_runner *r, int n_seq, const int *seq, const int *token, int at,
                           int *r_tok, int *r_pos, int *r_slot) {
    if (r->mode != ENCDEC_KV_FULL)
        return ed_fail(ENCDEC_ERR_ARG, "step rows: only the full cache mode steps with others");
    if (n_seq < 1 || n_seq > r->m.n_slots)
        return ed_fail(ENCDEC_ERR_ARG, "step of %d sequences (1..%d)", n_seq, r->m.n_slots);
    for (int i = 0; i < n_seq; i++) {
        encdec_status st = check_room(r, seq[i], 1);
        if (st) return st;
    }
    for (int i = 0; i < n_seq; i++) at = rows_into(r, r_tok, r_pos, r_slot, at, seq[i], &token[i], 1);
    r->n_steps++;
    return ENCDEC_OK;
}
