/* t5_run.c - the T5 encoder over a packed batch, the cross cache, and the
 * cached decoder pass (see t5.h for the shapes and the contracts). */
#include "models/t5.h"
#include "base/err.h"
#include "base/mem.h"
#include "core/dev.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

encdec_status t5_state_new(t5_state **out, const t5_model *m, ed_pool *pool, kv_dtype cross_type) {
    *out = NULL;
    void *dv = ed_pool_dev(pool);
    if ((dv != NULL) != (m->dev != NULL))
        return ed_fail(ENCDEC_ERR_ARG, "a %s model's state on the %s", m->dev ? "device" : "host",
                       dv ? "device" : "host");
    t5_state *s = calloc(1, sizeof *s);
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: T5 state");
    s->dev = dv;
    s->m = m;
    s->pool = pool;
    s->cross_type = cross_type;
    *out = s;
    return ENCDEC_OK;
}

/* The state's activation buffers (on its device when it has one). */
#define T5_BUFS(s)                                                                                \
    {&(s)->enc_out, &(s)->e_x, &(s)->e_n, &(s)->e_qkv, &(s)->e_att, &(s)->e_h, &(s)->enc_bias,    \
     &(s)->dec_bias, &(s)->xkv, &(s)->cross_buf, &(s)->d_x, &(s)->d_n, &(s)->d_qkv, &(s)->d_att, \
     &(s)->d_q, &(s)->d_h, &(s)->d_logits}

static void free_buffers(t5_state *s) {
    float **f[] = T5_BUFS(s);
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        ed_dev_free(s->dev, *f[i]);
        *f[i] = NULL;
    }
    free(s->scores);
    free(s->bias_h);
    s->scores = s->bias_h = NULL;
    free(s->in_start);
    free(s->in_len);
    free(s->slot_input);
    free(s->row_input);
    free(s->cross);
    s->in_start = s->in_len = s->slot_input = s->row_input = NULL;
    s->cross = NULL;
    kv_self_free(&s->self);
    memset(&s->cap, 0, sizeof s->cap);
    s->enc_bias_len = s->dec_bias_len = 0;
}

void t5_state_free(t5_state *s) {
    if (!s) return;
    free_buffers(s);
    md_screen_state_free(&s->scr);
    md_xattn_free(&s->xattn, s->dev);
    free(s);
}

static int imax(int a, int b) { return a > b ? a : b; }

encdec_status t5_state_reserve(t5_state *s, const t5_shape *need) {
    const t5_hparams *h = &s->m->hp;
    t5_shape c = s->cap;
    if (need->n_tokens > c.n_tokens || need->t_max > c.t_max || need->n_inputs > c.n_inputs ||
        need->n_slots > c.n_slots || need->n_ctx > c.n_ctx || need->n_rows > c.n_rows) {
        t5_shape n = {imax(need->n_tokens, c.n_tokens), imax(need->t_max, c.t_max),
                      imax(need->n_inputs, c.n_inputs), imax(need->n_slots, c.n_slots),
                      imax(need->n_ctx, c.n_ctx), imax(need->n_rows, c.n_rows)};
        free_buffers(s);
        size_t T = (size_t)n.n_tokens, d = (size_t)h->d, I = (size_t)h->inner;
        size_t G = (size_t)h->d_ff * (h->gated ? 2 : 1), L2I = (size_t)h->n_dec_layer * 2 * I;
        size_t nbe = h->bias_every_layer ? (size_t)h->n_enc_layer : 1;
        size_t nbd = h->bias_every_layer ? (size_t)h->n_dec_layer : 1;
        size_t R = (size_t)imax(imax(n.n_slots, n.n_ctx), n.n_rows), H = (size_t)h->n_head;
        int nth = ed_pool_size(s->pool);
        s->max_rows = (int)R;
        s->scores_stride = (size_t)OP_ATTN_ROWS * (size_t)imax(n.t_max, n.n_ctx);
        void *dv = s->dev;
        size_t be = nbe * H * (2 * (size_t)n.t_max - 1), bd = nbd * H * (size_t)n.n_ctx;
        s->enc_out = ed_dev_floats(dv, T, d, "encoder output");
        s->e_x = ed_dev_floats(dv, T, d, "encoder activations");
        s->e_n = ed_dev_floats(dv, T, d, "encoder activations");
        s->e_qkv = ed_dev_floats(dv, T, 3 * I, "encoder Q|K|V");
        s->e_att = ed_dev_floats(dv, T, I, "encoder attention");
        s->e_h = ed_dev_floats(dv, T, G, "encoder feed-forward");
        s->enc_bias = ed_dev_floats(dv, be, 1, "encoder position bias");
        s->dec_bias = ed_dev_floats(dv, bd, 1, "decoder position bias");
        s->xkv = ed_dev_floats(dv, T < T5_XKV_ROWS ? T : T5_XKV_ROWS, L2I, "cross K|V product rows");
        s->cross_buf = ed_dev_floats(dv, T, L2I, "cross cache");
        s->d_x = ed_dev_floats(dv, R, d, "decoder activations");
        s->d_n = ed_dev_floats(dv, R, d, "decoder activations");
        s->d_qkv = ed_dev_floats(dv, R, 3 * I, "decoder Q|K|V");
        s->d_att = ed_dev_floats(dv, R, I, "decoder attention");
        s->d_q = ed_dev_floats(dv, R, I, "decoder cross Q");
        s->d_h = ed_dev_floats(dv, R, G, "decoder feed-forward");
        /* on a device: the logits of a pass and the bias tables' host side */
        s->d_logits = dv ? ed_dev_floats(dv, R, (size_t)h->n_vocab, "logits") : NULL;
        s->bias_h = dv ? ed_alloc_floats(be > bd ? be : bd, 1, "position bias") : NULL;
        s->scores = dv ? NULL : ed_alloc_floats((size_t)nth, s->scores_stride, "attention scores");
        s->in_start = ed_alloc((size_t)n.n_inputs * sizeof(int), "input table");
        s->in_len = ed_alloc((size_t)n.n_inputs * sizeof(int), "input table");
        s->cross = ed_calloc((size_t)n.n_inputs * sizeof(kv_cross), "cross cache views");
        s->slot_input = ed_calloc((size_t)n.n_slots * sizeof(int), "sequence table");
        s->row_input = ed_calloc(R * sizeof(int), "row table");
        float **all[] = T5_BUFS(s);
        encdec_status st = ENCDEC_OK;
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            if (!*all[i] && (all[i] != &s->d_logits || dv)) st = ENCDEC_ERR_NOMEM;
        if (dv ? !s->bias_h : !s->scores) st = ENCDEC_ERR_NOMEM;
        if (!s->in_start || !s->in_len || !s->cross || !s->slot_input || !s->row_input)
            st = ENCDEC_ERR_NOMEM;
        if (!st) st = kv_self_init_on(&s->self, dv, h->n_dec_layer, n.n_slots, n.n_ctx, h->inner);
        if (st) {
            free_buffers(s);
            return st;
        }
        s->cap = n;
    }
    s->cur = *need;
    return ENCDEC_OK;
}

/* Toeplitz bias vectors [n_bias, H, len] from the learned [buckets, H]
 * tables: entry x is key - query = x - centre. */
static void bias_tables(const t5_model *m, float *dst, int len, int centre, int bidirectional,
                        int encoder) {
    const t5_hparams *h = &m->hp;
    int n_layer = encoder ? h->n_enc_layer : h->n_dec_layer;
    int nb = h->bias_every_layer ? n_layer : 1, H = h->n_head;
    for (int l = 0; l < nb; l++) {
        const float *w = encoder ? m->enc[l].rel_bias : m->dec[l].rel_bias;
        for (int x = 0; x < len; x++) {
            int b = t5_bucket(x - centre, bidirectional, h->n_buckets, h->max_distance);
            for (int hd = 0; hd < H; hd++)
                dst[((size_t)l * H + hd) * len + x] = w[(size_t)b * H + hd];
        }
    }
}

/* The device's first failure is kept (sticky). */
static void dev_check(t5_state *s, encdec_status st) {
    if (st && !s->status) s->status = st;
}

/* bias_tables into dst, the state's (device) table: built on the host
 * (the learned tables are the host's), uploaded where the state has a device. */
static void put_bias(t5_state *s, float *dst, int len, int centre, int bidirectional, int encoder) {
    const t5_hparams *h = &s->m->hp;
    int nb = h->bias_every_layer ? (encoder ? h->n_enc_layer : h->n_dec_layer) : 1;
    bias_tables(s->m, s->dev ? s->bias_h : dst, len, centre, bidirectional, encoder);
    if (s->dev)
        dev_check(s, ed_dev_upload(s->dev, dst, s->bias_h, (size_t)nb * h->n_head * len * sizeof(float)));
}

void t5_encode(t5_state *s, const int *ids, const int *start, const int *len, int B) {
    const t5_model *m = s->m;
    const t5_hparams *h = &m->hp;
    int T = s->cur.n_tokens, d = h->d, I = h->inner, F = h->d_ff, G = F * (h->gated ? 2 : 1);
    int tm = s->cur.t_max, blen = 2 * tm - 1;
    memcpy(s->in_start, start, (size_t)B * sizeof *start);
    memcpy(s->in_len, len, (size_t)B * sizeof *len);
    if (s->enc_bias_len != tm) {
        put_bias(s, s->enc_bias, blen, tm - 1, 1, 1);
        s->enc_bias_len = tm;
    }
    op_embed(s->pool, s->e_x, m->emb, m->hp.n_vocab, ids, NULL, NULL, T, d);
    for (int l = 0; l < h->n_enc_layer; l++) {
        const t5_enc_layer *y = &m->enc[l];
        const float *bias = s->enc_bias + (h->bias_every_layer ? (size_t)l * h->n_head * blen : 0);
        op_rmsnorm(s->pool, s->e_n, s->e_x, y->ln1, T, d, h->eps);
        op_matmul_w_rows(s->pool, s->e_qkv, 3 * I, s->e_n, d, y->w_qkv, NULL, T, 3 * I, d);
        op_attention_seg(s->pool, s->e_att, I, s->e_qkv, 3 * I, s->e_qkv + I, 3 * I,
                         s->e_qkv + 2 * I, 3 * I, B, start, len, h->n_head, h->d_kv, 1.0f, bias,
                         (size_t)blen, tm - 1, s->scores, s->scores_stride);
        op_matmul_w_rows(s->pool, s->e_n, d, s->e_att, I, y->w_o, NULL, T, d, I);
        op_add(s->pool, s->e_x, s->e_n, (size_t)T * d);
        op_rmsnorm(s->pool, s->e_n, s->e_x, y->ln2, T, d, h->eps);
        op_matmul_w_rows(s->pool, s->e_h, G, s->e_n, d, y->w_wi, NULL, T, G, d);
        op_ffn_act(s->pool, s->e_h, G, T, F, h->act, h->gated);
        op_matmul_w_rows(s->pool, s->e_n, d, s->e_h, G, y->w_wo, NULL, T, d, F);
        op_add(s->pool, s->e_x, s->e_n, (size_t)T * d);
    }
    op_rmsnorm(s->pool, s->enc_out, s->e_x, m->enc_ln, T, d, h->eps);
}

int t5_encode_invariant(const t5_model *m) {
    int ok = op_rows_invariant(m->w_xkv);
    for (int l = 0; l < m->hp.n_enc_layer; l++) {
        const t5_enc_layer *y = &m->enc[l];
        ok = ok && op_rows_invariant(y->w_qkv) && op_rows_invariant(y->w_o) &&
             op_rows_invariant(y->w_wi) && op_rows_invariant(y->w_wo);
    }
    return ok;
}

void t5_cross_compute(t5_state *s) {
    const t5_hparams *h = &s->m->hp;
    int T = s->cur.n_tokens, n = h->n_dec_layer * 2 * h->inner;
    for (int b = 0; b < s->cur.n_inputs; b++)
        kv_cross_view(&s->cross[b],
                      (char *)s->cross_buf + (size_t)n * s->in_start[b] * kv_dtype_size(s->cross_type),
                      h->n_dec_layer, h->n_head, s->in_len[b], h->d_kv, s->cross_type);
    /* One product for every layer's K and V, in blocks of T5_XKV_ROWS tokens
     * (rows independent of each other: op_matmul_w_rows) */
    for (int t0 = 0; t0 < T; t0 += T5_XKV_ROWS) {
        int rows = T - t0 < T5_XKV_ROWS ? T - t0 : T5_XKV_ROWS;
        op_matmul_w_rows(s->pool, s->xkv, n, s->enc_out + (size_t)t0 * h->d, h->d, s->m->w_xkv,
                         NULL, rows, n, h->d);
        op_cross_fill(s->pool, s->cross, s->cur.n_inputs, s->in_start, s->in_len, s->xkv,
                      (size_t)n, t0, rows);
    }
}

static void dec_self_attention(t5_state *s, int l, int R, const int *pos, const int *slot,
                               const int *tab, int tab_ld) {
    const t5_hparams *h = &s->m->hp;
    int I = h->inner, n_ctx = s->self.n_ctx;
    op_kv_self_put(s->pool, &s->self, l, s->d_qkv, 3 * I, I, 2 * I, R, pos, slot);
    const float *bias = s->dec_bias + (h->bias_every_layer ? (size_t)l * h->n_head * n_ctx : 0);
    op_attention_tab(s->pool, s->d_att, I, s->d_qkv, 3 * I, kv_self_k(&s->self, l, 0),
                     kv_self_v(&s->self, l, 0), (size_t)n_ctx * I, I, R, pos, tab, slot, tab_ld,
                     h->n_head, h->d_kv, 1.0f, bias, (size_t)n_ctx, n_ctx - 1, s->scores,
                     s->scores_stride);
}

/* Each run of rows of one input attends to that input's cross cache (row_input: the
 * rows' inputs, set once per decode call), all in one pool pass. */
static void dec_cross_attention(t5_state *s, int l, int R) {
    md_xattn_scores(&s->xattn, s->pool, s->d_q, s->m->hp.inner, s->cross, s->row_input, l, R,
                    s->m->hp.d_kv, 1.0f);
    op_attention_cross(s->pool, s->d_att, s->m->hp.inner, s->d_q, s->m->hp.inner, s->cross,
                       s->row_input, l, R, 1.0f, s->scores, s->scores_stride);
}

/* The decoder's products: batch-invariant ones in the engine's state. */
static void mm(t5_state *s, float *y, int ldy, const float *x, int ldx, k_w w, int M, int N, int K) {
    if (s->invariant) op_matmul_w_inv(s->pool, y, ldy, x, ldx, w, NULL, M, N, K);
    else op_matmul_w(s->pool, y, ldy, x, ldx, w, NULL, M, N, K);
}

void t5_decode(t5_state *s, int R, const int *tok, const int *pos, const int *slot,
               const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    const t5_model *m = s->m;
    const t5_hparams *h = &m->hp;
    int d = h->d, I = h->inner, F = h->d_ff, G = F * (h->gated ? 2 : 1), n_ctx = s->self.n_ctx;
    if (s->dec_bias_len != n_ctx) {
        put_bias(s, s->dec_bias, n_ctx, n_ctx - 1, 0, 0);
        s->dec_bias_len = n_ctx;
    }
    for (int r = 0; r < R; r++) s->row_input[r] = s->slot_input[slot[r]];
    op_embed(s->pool, s->d_x, m->emb, m->hp.n_vocab, tok, NULL, NULL, R, d);
    for (int l = 0; l < h->n_dec_layer; l++) {
        const t5_dec_layer *y = &m->dec[l];
        op_rmsnorm(s->pool, s->d_n, s->d_x, y->ln1, R, d, h->eps);
        mm(s, s->d_qkv, 3 * I, s->d_n, d, y->w_qkv, R, 3 * I, d);
        dec_self_attention(s, l, R, pos, slot, tab, tab_ld);
        mm(s, s->d_n, d, s->d_att, I, y->w_o, R, d, I);
        op_add(s->pool, s->d_x, s->d_n, (size_t)R * d);

        op_rmsnorm(s->pool, s->d_n, s->d_x, y->lnx, R, d, h->eps);
        mm(s, s->d_q, I, s->d_n, d, y->w_xq, R, I, d);          /* only Q */
        dec_cross_attention(s, l, R);
        if (!n_out && s->xattn.on && l == s->xattn.layer) break;   /* all such a pass is for */
        mm(s, s->d_n, d, s->d_att, I, y->w_xo, R, d, I);
        op_add(s->pool, s->d_x, s->d_n, (size_t)R * d);

        op_rmsnorm(s->pool, s->d_n, s->d_x, y->ln2, R, d, h->eps);
        mm(s, s->d_h, G, s->d_n, d, y->w_wi, R, G, d);
        op_ffn_act(s->pool, s->d_h, G, R, F, h->act, h->gated);
        mm(s, s->d_n, d, s->d_h, G, y->w_wo, R, d, F);
        op_add(s->pool, s->d_x, s->d_n, (size_t)R * d);
    }
    if (s->xattn.on) dev_check(s, md_xattn_host(&s->xattn, s->pool));
    if (n_out == 0) return;   /* a pass for its caches or captured scores only */
    float sc = (float)(1.0 / sqrt((double)d));   /* tied: HF rescales by d_model ** -0.5 */
    op_rmsnorm_rows(s->pool, s->d_n, s->d_x, out_rows, n_out, m->dec_ln, d, h->eps);
    if (h->tied) op_scale(s->pool, s->d_n, (size_t)n_out * d, sc);
    float *lg = s->dev ? s->d_logits : logits;
    k_w out = md_screen_pick(&s->scr, s->dev ? NULL : &m->screen, m->lm_head, n_out, s->invariant);
    mm(s, lg, h->n_vocab, s->d_n, d, out, n_out, h->n_vocab, d);
    md_screen_bounds(&s->scr, &m->screen, m->lm_head, NULL, s->d_n, d, logits, h->n_vocab, n_out);
    dev_check(s, op_to_host(s->pool, logits, lg, (size_t)n_out * h->n_vocab));
    if (s->status) {   /* a device failure: every row ends here (the caller reports it) */
        for (size_t i = 0; i < (size_t)n_out * h->n_vocab; i++) logits[i] = -INFINITY;
        for (int r = 0; r < n_out && h->eos >= 0; r++) logits[(size_t)r * h->n_vocab + h->eos] = 0.0f;
    }
}

encdec_status t5_state_status(const t5_state *s) { return s->status; }

/* ---- behind the seam (decode/runner.h) ---- */

static void rn_cross(void *ctx) { t5_cross_compute(ctx); }

static void rn_decode(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                      const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    t5_decode(ctx, R, tok, pos, slot, tab, tab_ld, n_out, out_rows, logits);
}

/* Screened logits (models/screen.h): the runner's switch before each pass,
 * and the last pass's rows' bounds and exact values. */
static void screen_on(void *ctx, int on) { ((t5_state *)ctx)->scr.on = on; }

static float rn_logit_err(void *ctx, int row) { return md_screen_row_err(&((t5_state *)ctx)->scr, row); }

static void rn_logit_exact(void *ctx, int row, const int *ids, int n, float *out) {
    const t5_state *s = ctx;
    int d = s->m->hp.d;
    md_screen_exact(s->m->lm_head, NULL, s->d_n + (size_t)row * d, s->m->hp.n_vocab, d, ids, n, out);
}

static encdec_status s2s_xattn(void *p, int on, int ld);

/* The runner's kept attention (rn_att): the alignment heads' scores. */
static encdec_status rn_scores_on(void *p, int on) { return s2s_xattn(p, on, 0); }
static const float *rn_scores(const void *p, int a, int *ld) {
    const md_xattn *x = &((const t5_state *)p)->xattn;
    *ld = x->ld;
    return md_xattn_head(x, a);
}

rn_model t5_rn_model(t5_state *s, int width) {
    for (int q = 0; q < s->cur.n_slots; q++) s->slot_input[q] = q / width;
    rn_model m = {s, s->m->hp.n_vocab, s->cur.n_slots, s->cur.n_ctx, s->max_rows, s->slot_input,
                  rn_cross, rn_decode, s->pool};
    m.scores_on = rn_scores_on;
    m.scores = rn_scores;
    m.n_heads = 1;
    s->scr.on = s->scr.screened = 0;
    if (s->m->screen.w.p && !s->dev) {
        m.screen = screen_on;
        m.logit_err = rn_logit_err;
        m.logit_exact = rn_logit_exact;
    }
    return m;
}

/* ---- behind s2s.h ---- */

static encdec_status s2s_new(void **out, const void *m, ed_pool *pool, kv_dtype cross_type) {
    return t5_state_new((t5_state **)out, m, pool, cross_type);
}
static void s2s_free(void *s) { t5_state_free(s); }
static encdec_status s2s_reserve(void *s, const s2s_shape *need) { return t5_state_reserve(s, need); }
static void s2s_encode(void *s, const int *ids, const int *start, const int *len, int B) {
    t5_encode(s, ids, start, len, B);
}
static rn_model s2s_rn(void *s, int width) { return t5_rn_model(s, width); }
static s2s_view s2s_view_of(void *p) {
    t5_state *s = p;
    return (s2s_view){s->cross, s->slot_input, &s->self, &s->invariant, s->max_rows};
}
/* (a device's products are not batch-invariant over many rows: one input a pass there) */
static int s2s_invariant(const void *m) {
    return !((const t5_model *)m)->dev && t5_encode_invariant(m);
}
static encdec_status s2s_status(void *s) {
    t5_state *t = s;
    dev_check(t, op_sync(t->pool));
    return t->status;
}

/* CTranslate2's alignment for its T5 specs: the last layer's first head. */
static encdec_status s2s_xattn(void *p, int on, int ld) {
    t5_state *s = p;
    return md_xattn_on(&s->xattn, s->dev, on, s->m->hp.n_dec_layer - 1, 1, s->max_rows,
                       ld > 0 ? ld : s->cap.t_max);
}
static const md_xattn *s2s_xattn_of(const void *p) { return &((const t5_state *)p)->xattn; }

const s2s_ops t5_s2s_ops = {s2s_new,       s2s_free,    s2s_reserve, s2s_encode,
                            rn_cross,      rn_decode,   s2s_rn,      s2s_view_of,
                            s2s_invariant, s2s_status,  screen_on,   rn_logit_err,
                            rn_logit_exact, s2s_xattn,  s2s_xattn_of};
