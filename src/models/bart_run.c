/* bart_run.c - the BART-family encoder over a packed batch, the cross cache,
 * and the cached decoder pass (see bart.h for the shapes and contracts).
 *
 * A block (attention or feed-forward) is, with x the residual stream:
 *   pre-norm   x = x + block(norm(x))            mBART, M2M100, Pegasus
 *   post-norm  x = norm(x + block(x))            BART, Marian
 * and the pre-norm stacks end with a norm of their own. */
#include "models/bart.h"
#include "base/err.h"
#include "base/mem.h"
#include "core/dev.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

encdec_status bart_state_new(bart_state **out, const bart_model *m, ed_pool *pool, kv_dtype cross_type) {
    *out = NULL;
    void *dv = ed_pool_dev(pool);
    if ((dv != NULL) != (m->dev != NULL))
        return ed_fail(ENCDEC_ERR_ARG, "a %s model's state on the %s", m->dev ? "device" : "host",
                       dv ? "device" : "host");
    bart_state *s = calloc(1, sizeof *s);
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: model state");
    s->dev = dv;
    s->m = m;
    s->pool = pool;
    s->cross_type = cross_type;
    *out = s;
    return ENCDEC_OK;
}

/* The state's activation buffers (on its device when it has one). */
#define BART_BUFS(s)                                                                              \
    {&(s)->enc_out, &(s)->e_x, &(s)->e_n, &(s)->e_qkv, &(s)->e_att, &(s)->e_h, &(s)->xkv,         \
     &(s)->cross_buf, &(s)->d_x, &(s)->d_n, &(s)->d_qkv, &(s)->d_att, &(s)->d_q, &(s)->d_h,       \
     &(s)->d_logits}

static void free_buffers(bart_state *s) {
    float **f[] = BART_BUFS(s);
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        ed_dev_free(s->dev, *f[i]);
        *f[i] = NULL;
    }
    free(s->scores);
    s->scores = NULL;
    int **g[] = {&s->in_start, &s->in_len, &s->e_pos, &s->slot_input, &s->row_input};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        free(*g[i]);
        *g[i] = NULL;
    }
    free(s->cross);
    s->cross = NULL;
    kv_self_free(&s->self);
    memset(&s->cap, 0, sizeof s->cap);
}

void bart_state_free(bart_state *s) {
    if (!s) return;
    free_buffers(s);
    md_xattn_free(&s->xattn, s->dev);
    md_screen_state_free(&s->scr);
    free(s);
}

static int imax(int a, int b) { return a > b ? a : b; }

static int *ialloc(size_t n, const char *what) {
    return ed_calloc((n ? n : 1) * sizeof(int), what);
}

static encdec_status alloc_buffers(bart_state *s, const bart_shape *n) {
    const bart_hparams *h = &s->m->hp;
    size_t T = (size_t)n->n_tokens, d = (size_t)h->d, L2d = (size_t)h->n_dec_layer * 2 * d;
    size_t R = (size_t)imax(imax(n->n_slots, n->n_ctx), n->n_rows);
    s->max_rows = (int)R;
    s->scores_stride = (size_t)OP_ATTN_ROWS * (size_t)imax(n->t_max, n->n_ctx);
    void *dv = s->dev;
    float **f[] = BART_BUFS(s);
    size_t rows[] = {T, T, T, T, T, T, T < BART_XKV_ROWS ? T : BART_XKV_ROWS, T, R, R, R, R, R, R,
                     dv ? R : 0};   /* on a device: the logits on their way */
    size_t cols[] = {d, d, d, 3 * d, d, (size_t)h->enc_ffn, L2d, L2d, d, d, 3 * d, d, d,
                     (size_t)h->dec_ffn, (size_t)h->n_vocab};
    encdec_status st = ENCDEC_OK;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (rows[i] && !(*f[i] = ed_dev_floats(dv, rows[i], cols[i], "model state"))) st = ENCDEC_ERR_NOMEM;
    /* (the host's attention scratch: the device's kernels need none) */
    s->scores = dv ? NULL : ed_alloc_floats((size_t)ed_pool_size(s->pool), s->scores_stride, "model state");
    if (!dv && !s->scores) st = ENCDEC_ERR_NOMEM;
    s->in_start = ialloc((size_t)n->n_inputs, "input table");
    s->in_len = ialloc((size_t)n->n_inputs, "input table");
    s->e_pos = ialloc(T, "input positions");
    s->slot_input = ialloc((size_t)n->n_slots, "sequence table");
    s->row_input = ialloc(R, "row table");
    s->cross = ed_calloc((size_t)(n->n_inputs ? n->n_inputs : 1) * sizeof(kv_cross), "cross cache views");
    if (!s->in_start || !s->in_len || !s->e_pos || !s->slot_input || !s->row_input || !s->cross)
        st = ENCDEC_ERR_NOMEM;
    if (!st) st = kv_self_init_on(&s->self, dv, h->n_dec_layer, n->n_slots, n->n_ctx, h->d);
    return st;
}

encdec_status bart_state_reserve(bart_state *s, const bart_shape *need) {
    const bart_hparams *h = &s->m->hp;
    if (need->t_max > h->n_positions || need->n_ctx > h->n_positions)
        return ed_fail(ENCDEC_ERR_ARG, "%d input and %d output positions: the model has %d "
                       "(max_position_embeddings)", need->t_max, need->n_ctx, h->n_positions);
    bart_shape c = s->cap;
    if (need->n_tokens > c.n_tokens || need->t_max > c.t_max || need->n_inputs > c.n_inputs ||
        need->n_slots > c.n_slots || need->n_ctx > c.n_ctx || need->n_rows > c.n_rows) {
        bart_shape n = {imax(need->n_tokens, c.n_tokens), imax(need->t_max, c.t_max),
                        imax(need->n_inputs, c.n_inputs), imax(need->n_slots, c.n_slots),
                        imax(need->n_ctx, c.n_ctx), imax(need->n_rows, c.n_rows)};
        free_buffers(s);
        encdec_status st = alloc_buffers(s, &n);
        if (st) {
            free_buffers(s);
            return st;
        }
        s->cap = n;
    }
    s->cur = *need;
    return ENCDEC_OK;
}

/* ---- blocks ---- */

/* The products of a pass: the encoder's row-invariant (inputs packed
 * across requests), the decoder's batch-invariant in the engine. */
typedef enum { MM_ROWS, MM_DEC } mm_kind;

static void mm(const bart_state *s, mm_kind k, float *y, int ldy, const float *x, int ldx, k_w w,
               const float *b, int M, int N, int K) {
    if (k == MM_ROWS) op_matmul_w_rows(s->pool, y, ldy, x, ldx, w, b, M, N, K);
    else if (s->invariant) op_matmul_w_inv(s->pool, y, ldy, x, ldx, w, b, M, N, K);
    else op_matmul_w(s->pool, y, ldy, x, ldx, w, b, M, N, K);
}

/* The residual step of one block whose output is in out [M, d]: pre-norm
 * x += out; post-norm dst = norm(x + out) (out is overwritten; dst is x but
 * for the encoder's last block). */
static void residual(const bart_state *s, float *x, float *out, const float *g, const float *b,
                     int M, float *dst) {
    const bart_hparams *h = &s->m->hp;
    if (s->m->var->pre_norm) {
        op_add(s->pool, x, out, (size_t)M * h->d);
    } else {
        op_add(s->pool, out, x, (size_t)M * h->d);
        op_layernorm(s->pool, dst, out, g, b, M, h->d, h->eps);
    }
}

/* The input of a block: norm(x) into n (pre-norm), else x itself. */
static const float *block_in(const bart_state *s, float *n, const float *x, const float *g,
                             const float *b, int M) {
    if (!s->m->var->pre_norm) return x;
    op_layernorm(s->pool, n, x, g, b, M, s->m->hp.d, s->m->hp.eps);
    return n;
}

/* x = (emb[tok] + pos[p] / scale) * scale, then layernorm_embedding (tmp:
 * scratch [R, d]). */
static void embed(const bart_state *s, float *x, float *tmp, k_w emb, int V, const float *pos_tab,
                  const int *tok, const int *pos, int R, const float *lg, const float *lb) {
    const bart_hparams *h = &s->m->hp;
    float *e = lg ? tmp : x;
    op_embed(s->pool, e, emb, V, tok, pos_tab, pos, R, h->d);
    if (h->emb_scale != 1.0f) op_scale(s->pool, e, (size_t)R * h->d, h->emb_scale);
    if (lg) op_layernorm(s->pool, x, e, lg, lb, R, h->d, h->eps);
}

/* The feed-forward block over M rows of x (n: scratch [M, d], hb [M, F]). */
static void ffn(const bart_state *s, mm_kind k, const bart_layer *y, float *x, float *n, float *hb,
                int M, int F, float *dst) {
    const bart_hparams *h = &s->m->hp;
    int d = h->d;
    const float *in = block_in(s, n, x, y->ln2_g, y->ln2_b, M);
    mm(s, k, hb, F, in, d, y->w_fc1, y->b_fc1, M, F, d);
    op_ffn_act(s->pool, hb, F, M, F, h->act, 0);
    mm(s, k, n, d, hb, F, y->w_fc2, y->b_fc2, M, d, F);
    residual(s, x, n, y->ln2_g, y->ln2_b, M, dst);
}

/* ---- encoder ---- */

void bart_encode(bart_state *s, const int *ids, const int *start, const int *len, int B) {
    const bart_model *m = s->m;
    const bart_hparams *h = &m->hp;
    int T = s->cur.n_tokens, d = h->d, H = h->enc_heads, dh = d / H;
    float sc = 1.0f / sqrtf((float)dh);
    memcpy(s->in_start, start, (size_t)B * sizeof *start);
    memcpy(s->in_len, len, (size_t)B * sizeof *len);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < len[b]; t++) s->e_pos[start[b] + t] = t;
    embed(s, s->e_x, s->e_n, m->enc_emb, h->enc_vocab, m->enc_pos, ids, s->e_pos, T, m->enc_lne_g,
          m->enc_lne_b);
    for (int l = 0; l < h->n_enc_layer; l++) {
        const bart_layer *y = &m->enc[l];
        const float *in = block_in(s, s->e_n, s->e_x, y->ln1_g, y->ln1_b, T);
        mm(s, MM_ROWS, s->e_qkv, 3 * d, in, d, y->w_qkv, y->b_qkv, T, 3 * d, d);
        op_attention_seg(s->pool, s->e_att, d, s->e_qkv, 3 * d, s->e_qkv + d, 3 * d,
                         s->e_qkv + 2 * d, 3 * d, B, start, len, H, dh, sc, NULL, 0, 0,
                         s->scores, s->scores_stride);
        mm(s, MM_ROWS, s->e_n, d, s->e_att, d, y->w_o, y->b_o, T, d, d);
        residual(s, s->e_x, s->e_n, y->ln1_g, y->ln1_b, T, s->e_x);
        int last = l == h->n_enc_layer - 1;
        ffn(s, MM_ROWS, y, s->e_x, s->e_n, s->e_h, T, h->enc_ffn, last ? s->enc_out : s->e_x);
    }
    if (m->var->pre_norm) op_layernorm(s->pool, s->enc_out, s->e_x, m->enc_ln_g, m->enc_ln_b, T, d, h->eps);
}

int bart_encode_invariant(const bart_model *m) {
    int ok = op_rows_invariant(m->w_xkv);
    for (int l = 0; l < m->hp.n_enc_layer; l++) {
        const bart_layer *y = &m->enc[l];
        ok = ok && op_rows_invariant(y->w_qkv) && op_rows_invariant(y->w_o) &&
             op_rows_invariant(y->w_fc1) && op_rows_invariant(y->w_fc2);
    }
    return ok;
}

void bart_cross_compute(bart_state *s) {
    const bart_hparams *h = &s->m->hp;
    int T = s->cur.n_tokens, n = h->n_dec_layer * 2 * h->d, H = h->dec_heads;
    for (int b = 0; b < s->cur.n_inputs; b++)
        kv_cross_view(&s->cross[b],
                      (char *)s->cross_buf + (size_t)n * s->in_start[b] * kv_dtype_size(s->cross_type),
                      h->n_dec_layer, H, s->in_len[b], h->d / H, s->cross_type);
    for (int t0 = 0; t0 < T; t0 += BART_XKV_ROWS) {
        int rows = T - t0 < BART_XKV_ROWS ? T - t0 : BART_XKV_ROWS;
        op_matmul_w_rows(s->pool, s->xkv, n, s->enc_out + (size_t)t0 * h->d, h->d, s->m->w_xkv,
                         s->m->b_xkv, rows, n, h->d);
        op_cross_fill(s->pool, s->cross, s->cur.n_inputs, s->in_start, s->in_len, s->xkv,
                      (size_t)n, t0, rows);
    }
}

/* ---- decoder ---- */

static void dec_self(bart_state *s, const bart_layer *y, int l, int R, const int *pos,
                     const int *slot, const int *tab, int tab_ld) {
    const bart_hparams *h = &s->m->hp;
    int d = h->d, H = h->dec_heads, dh = d / H, n_ctx = s->self.n_ctx;
    const float *in = block_in(s, s->d_n, s->d_x, y->ln1_g, y->ln1_b, R);
    mm(s, MM_DEC, s->d_qkv, 3 * d, in, d, y->w_qkv, y->b_qkv, R, 3 * d, d);
    op_kv_self_put(s->pool, &s->self, l, s->d_qkv, 3 * d, d, 2 * d, R, pos, slot);
    op_attention_tab(s->pool, s->d_att, d, s->d_qkv, 3 * d, kv_self_k(&s->self, l, 0),
                     kv_self_v(&s->self, l, 0), (size_t)n_ctx * d, d, R, pos, tab, slot, tab_ld,
                     H, dh, 1.0f / sqrtf((float)dh), NULL, 0, 0, s->scores, s->scores_stride);
    mm(s, MM_DEC, s->d_n, d, s->d_att, d, y->w_o, y->b_o, R, d, d);
    residual(s, s->d_x, s->d_n, y->ln1_g, y->ln1_b, R, s->d_x);
}

static void dec_cross(bart_state *s, const bart_layer *y, int l, int R) {
    const bart_hparams *h = &s->m->hp;
    int d = h->d, dh = d / h->dec_heads;
    const float *in = block_in(s, s->d_n, s->d_x, y->lnx_g, y->lnx_b, R);
    mm(s, MM_DEC, s->d_q, d, in, d, y->w_xq, y->b_xq, R, d, d);
    md_xattn_scores(&s->xattn, s->pool, s->d_q, d, s->cross, s->row_input, l, R, dh,
                    1.0f / sqrtf((float)dh));
    op_attention_cross(s->pool, s->d_att, d, s->d_q, d, s->cross, s->row_input, l, R,
                       1.0f / sqrtf((float)dh), s->scores, s->scores_stride);
    mm(s, MM_DEC, s->d_n, d, s->d_att, d, y->w_xo, y->b_xo, R, d, d);
    residual(s, s->d_x, s->d_n, y->lnx_g, y->lnx_b, R, s->d_x);
}

void bart_decode(bart_state *s, int R, const int *tok, const int *pos, const int *slot,
                 const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    const bart_model *m = s->m;
    const bart_hparams *h = &m->hp;
    int d = h->d, last = h->n_dec_layer - 1;
    for (int r = 0; r < R; r++) s->row_input[r] = s->slot_input[slot[r]];
    embed(s, s->d_x, s->d_n, m->dec_emb, h->n_vocab, m->dec_pos, tok, pos, R, m->dec_lne_g,
          m->dec_lne_b);
    for (int l = 0; l <= last; l++) {
        const bart_layer *y = &m->dec[l];
        dec_self(s, y, l, R, pos, slot, tab, tab_ld);
        dec_cross(s, y, l, R);
        if (!n_out && s->xattn.on && l == s->xattn.layer) break;   /* all such a pass is for */
        if (l < last || m->var->pre_norm) {
            ffn(s, MM_DEC, y, s->d_x, s->d_n, s->d_h, R, h->dec_ffn, s->d_x);
            continue;
        }
        /* post-norm's last block: its norm over the rows that want logits only */
        mm(s, MM_DEC, s->d_h, h->dec_ffn, s->d_x, d, y->w_fc1, y->b_fc1, R, h->dec_ffn, d);
        op_ffn_act(s->pool, s->d_h, h->dec_ffn, R, h->dec_ffn, h->act, 0);
        mm(s, MM_DEC, s->d_n, d, s->d_h, h->dec_ffn, y->w_fc2, y->b_fc2, R, d, h->dec_ffn);
        op_add(s->pool, s->d_x, s->d_n, (size_t)R * d);
        op_layernorm_rows(s->pool, s->d_n, s->d_x, out_rows, n_out, y->ln2_g, y->ln2_b, d, h->eps);
    }
    if (m->var->pre_norm)
        op_layernorm_rows(s->pool, s->d_n, s->d_x, out_rows, n_out, m->dec_ln_g, m->dec_ln_b, d, h->eps);
    encdec_status st = s->xattn.on ? md_xattn_host(&s->xattn, s->pool) : ENCDEC_OK;
    if (st && !s->status) s->status = st;
    if (n_out == 0) return;   /* a pass for its caches or captured scores only */
    float *lg = s->dev ? s->d_logits : logits;
    k_w out = md_screen_pick(&s->scr, s->dev ? NULL : &m->screen, m->lm_head, n_out, s->invariant);
    mm(s, MM_DEC, lg, h->n_vocab, s->d_n, d, out, m->logits_bias, n_out, h->n_vocab, d);
    md_screen_bounds(&s->scr, &m->screen, m->lm_head, m->logits_bias, s->d_n, d, logits, h->n_vocab, n_out);
    st = op_to_host(s->pool, logits, lg, (size_t)n_out * h->n_vocab);
    if (st && !s->status) s->status = st;
    if (s->status) {   /* a device failure: every row ends here (the caller reports it) */
        for (size_t i = 0; i < (size_t)n_out * h->n_vocab; i++) logits[i] = -INFINITY;
        for (int r = 0; r < n_out && h->eos >= 0; r++) logits[(size_t)r * h->n_vocab + h->eos] = 0.0f;
    }
}

/* ---- behind the seam (decode/runner.h) ---- */

static void rn_cross(void *ctx) { bart_cross_compute(ctx); }

static void rn_decode(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                      const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    bart_decode(ctx, R, tok, pos, slot, tab, tab_ld, n_out, out_rows, logits);
}

/* Screened logits (models/screen.h): the runner's switch before each pass,
 * and the last pass's rows' bounds and exact values. */
static void screen_on(void *ctx, int on) { ((bart_state *)ctx)->scr.on = on; }

static float rn_logit_err(void *ctx, int row) { return md_screen_row_err(&((bart_state *)ctx)->scr, row); }

static void rn_logit_exact(void *ctx, int row, const int *ids, int n, float *out) {
    const bart_state *s = ctx;
    int d = s->m->hp.d;
    md_screen_exact(s->m->lm_head, s->m->logits_bias, s->d_n + (size_t)row * d, s->m->hp.n_vocab, d,
                    ids, n, out);
}

static encdec_status s2s_xattn(void *p, int on, int ld);

/* The runner's kept attention (rn_att): the alignment heads' scores. */
static encdec_status rn_scores_on(void *p, int on) { return s2s_xattn(p, on, 0); }
static const float *rn_scores(const void *p, int a, int *ld) {
    const md_xattn *x = &((const bart_state *)p)->xattn;
    *ld = x->ld;
    return md_xattn_head(x, a);
}

rn_model bart_rn_model(bart_state *s, int width) {
    for (int q = 0; q < s->cur.n_slots; q++) s->slot_input[q] = q / width;
    rn_model m = {s, s->m->hp.n_vocab, s->cur.n_slots, s->cur.n_ctx, s->max_rows, s->slot_input,
                  rn_cross, rn_decode, s->pool};
    m.scores_on = rn_scores_on;
    m.scores = rn_scores;
    m.n_heads = s->m->hp.align_heads;
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
    return bart_state_new((bart_state **)out, m, pool, cross_type);
}
static void s2s_free(void *s) { bart_state_free(s); }
static encdec_status s2s_reserve(void *s, const s2s_shape *need) { return bart_state_reserve(s, need); }
static void s2s_encode(void *s, const int *ids, const int *start, const int *len, int B) {
    bart_encode(s, ids, start, len, B);
}
static rn_model s2s_rn(void *s, int width) { return bart_rn_model(s, width); }
static s2s_view s2s_view_of(void *p) {
    bart_state *s = p;
    return (s2s_view){s->cross, s->slot_input, &s->self, &s->invariant, s->max_rows};
}
/* (a device's products are not batch-invariant over many rows: one input a pass there) */
static int s2s_invariant(const void *m) {
    return !((const bart_model *)m)->dev && bart_encode_invariant(m);
}
static encdec_status s2s_status(void *p) {
    bart_state *s = p;
    encdec_status st = op_sync(s->pool);
    if (st && !s->status) s->status = st;
    return s->status;
}

/* The alignment heads' scores (models/xattn.h) of the passes while on. */
static encdec_status s2s_xattn(void *p, int on, int ld) {
    bart_state *s = p;
    const bart_hparams *h = &s->m->hp;
    return md_xattn_on(&s->xattn, s->dev, on, h->align_layer, h->align_heads, s->max_rows,
                       ld > 0 ? ld : s->cap.t_max);
}
static const md_xattn *s2s_xattn_of(const void *p) { return &((const bart_state *)p)->xattn; }

const s2s_ops bart_s2s_ops = {s2s_new,      s2s_free,     s2s_reserve,   s2s_encode,
                              rn_cross,     rn_decode,    s2s_rn,        s2s_view_of,
                              s2s_invariant, s2s_status,  screen_on,     rn_logit_err,
                              rn_logit_exact, s2s_xattn,  s2s_xattn_of};
