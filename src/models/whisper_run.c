/* whisper_run.c - the Whisper forward passes over a session's state.
 *
 * Everything a pass touches is allocated in whisper_state_new, once: the
 * encoder, the cross-cache fill and every decode step run without
 * allocating. All products go through core/ops (pool-parallel, sequential
 * BLAS per thread).
 */
#include "models/whisper.h"
#include "base/err.h"
#include "base/mem.h"
#include "core/dev.h"
#include "core/ops.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LN_EPS 1e-5f

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

encdec_status whisper_state_new(whisper_state **out, const whisper_model *m, ed_pool *pool,
                                int n_slots, kv_dtype cross_type) {
    *out = NULL;
    const whisper_hparams *h = &m->hp;
    if (n_slots < 1 || n_slots > WHISPER_MAX_SLOTS)
        return ed_fail(ENCDEC_ERR_ARG, "sequence slots %d out of range 1..%d", n_slots,
                       WHISPER_MAX_SLOTS);
    ed_dev *dv = ed_pool_dev(pool);
    if ((dv != NULL) != (m->dev != NULL))
        return ed_fail(ENCDEC_ERR_ARG, "a %s model's state on the %s", m->dev ? "device" : "host",
                       dv ? "device" : "host");
    whisper_state *s = calloc(1, sizeof *s);
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: whisper state");
    s->dev = dv;
    s->m = m;
    s->pool = pool;
    s->n_slots = n_slots;
    s->max_rows = n_slots > h->n_text_ctx ? n_slots : h->n_text_ctx;
    int dh = h->d / h->n_head, nth = ed_pool_size(pool);
    size_t T = (size_t)h->n_audio_ctx, d = (size_t)h->d, F = (size_t)h->ffn;
    size_t R = (size_t)s->max_rows, L = (size_t)h->n_dec_layer;
    encdec_status st = kv_self_init_on(&s->self, dv, h->n_dec_layer, n_slots, h->n_text_ctx, h->d);
    if (!st)
        st = kv_cross_init_on(&s->cross, dv, h->n_dec_layer, h->n_head, h->n_audio_ctx, dh,
                              cross_type);
    if (st) {
        whisper_state_free(s);
        return st;
    }
    s->scores_stride = (size_t)OP_ATTN_ROWS * max_sz(T, (size_t)h->n_text_ctx);
    struct { float **p; size_t n; const char *what; } a[] = {
        {&s->enc_out, T * d, "encoder output"},
        {&s->e_x, T * d, "encoder residual"},
        {&s->e_h, T * max_sz(3 * d, F), "encoder hidden"},
        {&s->e_a, T * d, "encoder attention"},
        {&s->e_mel, (2 * T + 2) * (size_t)h->n_mels, "time-major mel"},
        {&s->e_col, max_sz(2 * T * max_sz((size_t)h->n_mels, d) * 3, L * 2 * d),
         "convolution columns"},   /* and a frame or more of the cross K|V product */
        {&s->e_conv, (2 * T + 2) * d, "conv1 output"},
        {&s->d_x, R * d, "decoder residual"},
        {&s->d_ln, R * d, "decoder norm"},
        {&s->d_qkv, R * 3 * d, "decoder QKV"},
        {&s->d_att, R * d, "decoder attention"},
        {&s->d_h, R * max_sz(F, d), "decoder hidden"},
        {&s->d_q, R * d, "decoder cross query"},
        /* on a device: the mel and the logits on their way */
        {&s->e_in, dv ? (size_t)h->n_mels * 2 * T : 0, "the window's mel"},
        {&s->d_logits, dv ? R * (size_t)h->n_vocab : 0, "logits"},
    };
    s->row_xc = ed_alloc(R * sizeof(int), "decoder rows' cross caches");
    if (!s->row_xc) {
        whisper_state_free(s);
        return ENCDEC_ERR_NOMEM;
    }
    s->scores = dv ? NULL : ed_alloc((size_t)nth * s->scores_stride * sizeof(float), "attention scores");
    if (!dv && !s->scores) {
        whisper_state_free(s);
        return ENCDEC_ERR_NOMEM;
    }
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        if (!a[i].n) continue;
        *a[i].p = ed_dev_alloc(dv, a[i].n * sizeof(float), a[i].what);
        if (!*a[i].p) {
            whisper_state_free(s);
            return ENCDEC_ERR_NOMEM;
        }
    }
    /* The cross K|V product runs in blocks of frames through the convolution
     * columns, idle once the encoder's layers run: all layers' K|V of every
     * frame would take T * L * 2d floats more (37 MB for base, 490 MB for
     * large-v3); e_col holds 3T / L frames of it or more (1125 for tiny, 140
     * for large-v3). */
    size_t xn = L * 2 * d, rows = max_sz(2 * T * max_sz((size_t)h->n_mels, d) * 3, xn) / xn;
    s->xkv = s->e_col;
    s->xkv_rows = (int)(rows < T ? rows : T);
    *out = s;
    return ENCDEC_OK;
}

void whisper_state_free(whisper_state *s) {
    if (!s) return;
    kv_self_free(&s->self);
    kv_cross_free(&s->cross);
    float *bufs[] = {s->enc_out, s->e_x,  s->e_h,   s->e_a,   s->e_mel, s->e_col,    s->e_conv,
                     s->d_x,     s->d_ln, s->d_qkv, s->d_att, s->d_h,   s->d_q, s->e_in,
                     s->d_logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ed_dev_free(s->dev, bufs[i]);
    md_xattn_free(&s->align, s->dev);
    free(s->scores);
    free(s->row_xc);
    free(s);
}

/* The first failure of the device under the state is kept (sticky). */
static void dev_check(whisper_state *s, encdec_status st) {
    if (st && !s->status) s->status = st;
}

/* x[T, d] += attention block of one encoder layer (pre-LayerNorm). */
static void enc_attention(whisper_state *s, const whisper_enc_layer *y) {
    const whisper_hparams *h = &s->m->hp;
    int T = h->n_audio_ctx, d = h->d, dh = d / h->n_head;
    op_layernorm(s->pool, s->e_a, s->e_x, y->ln1_g, y->ln1_b, T, d, LN_EPS);
    op_matmul_w(s->pool, s->e_h, 3 * d, s->e_a, d, y->w_qkv, y->b_qkv, T, 3 * d, d);     /* [T, 3d] */
    /* the bf16 and int8 modes: bf16 products where the CPU has them (ops.c) */
    int lowp = (y->w_qkv.t == K_BF16 && y->w_qkv.lowp) || y->w_qkv.t == K_BF16A ||
               y->w_qkv.t == K_Q8;
    op_attention_lp(s->pool, s->e_a, d, s->e_h, 3 * d, s->e_h + d, 3 * d, s->e_h + 2 * d, 3 * d,
                    T, T, h->n_head, dh, 1.0f / sqrtf((float)dh), 0, lowp, s->scores,
                    s->scores_stride);
    op_matmul_w_ex(s->pool, s->e_x, d, s->e_a, d, y->w_o, y->b_o, T, d, d, K_GEMM_ACC,
                   s->e_h);                                                               /* x += */
}

static void enc_mlp(whisper_state *s, const whisper_enc_layer *y) {
    const whisper_hparams *h = &s->m->hp;
    int T = h->n_audio_ctx, d = h->d, F = h->ffn;
    op_layernorm(s->pool, s->e_a, s->e_x, y->ln2_g, y->ln2_b, T, d, LN_EPS);
    op_matmul_w_ex(s->pool, s->e_h, F, s->e_a, d, y->w_fc1, y->b_fc1, T, F, d, K_GEMM_GELU,
                   NULL);                                                                 /* [T, F] */
    op_matmul_w_ex(s->pool, s->e_x, d, s->e_h, F, y->w_fc2, y->b_fc2, T, d, F, K_GEMM_ACC,
                   s->e_a);                                                               /* x += */
}

void whisper_encode(whisper_state *s, const float *mel) {
    const whisper_model *m = s->m;
    const whisper_hparams *h = &m->hp;
    int T = h->n_audio_ctx, d = h->d;
    int C = h->n_mels;
    dev_check(s, op_from_host(s->pool, s->e_in, mel, (size_t)C * 2 * T, &mel));
    /* Both convolutions (kernel 3, padding 1) read their windows in place:
     * with the input time-major and a zero frame at each end, output t's
     * window is the 3 frames from padded frame t * stride on, 3 * C
     * consecutive floats, and the weights are tap-major [d, 3, C] to match. */
    /* conv1: mel [C, 2T] -> e_mel [2T + 2, C] -> e_conv [2T + 2, d], GELU */
    op_zero(s->pool, s->e_mel, (size_t)C);
    op_zero(s->pool, s->e_mel + (size_t)(2 * T + 1) * C, (size_t)C);
    op_im2col_1d(s->pool, s->e_mel + C, mel, 1, C, 2 * T, 1, 1, 0, 2 * T);   /* transpose */
    op_zero(s->pool, s->e_conv, (size_t)d);
    op_zero(s->pool, s->e_conv + (size_t)(2 * T + 1) * d, (size_t)d);
    op_matmul_win(s->pool, s->e_conv + d, d, s->e_mel, C, m->conv1_w, m->conv1_b, 2 * T, d,
                  3 * C, K_GEMM_GELU, s->e_col);
    /* conv2, stride 2: e_conv -> x [T, d], GELU; then + positions */
    op_matmul_win(s->pool, s->e_x, d, s->e_conv, 2 * d, m->conv2_w, m->conv2_b, T, d, 3 * d,
                  K_GEMM_GELU, s->e_col);
    op_add(s->pool, s->e_x, m->enc_pos, (size_t)T * d);
    for (int l = 0; l < h->n_enc_layer; l++) {
        enc_attention(s, &m->enc[l]);
        enc_mlp(s, &m->enc[l]);
    }
    op_layernorm(s->pool, s->enc_out, s->e_x, m->enc_ln_g, m->enc_ln_b, T, d, LN_EPS);
    dev_check(s, op_sync(s->pool));   /* (a device's encoder ends here: timed, checked) */
}

void whisper_cross_compute_into(whisper_state *s, kv_cross *dst) {
    const whisper_model *m = s->m;
    const whisper_hparams *h = &m->hp;
    int T = h->n_audio_ctx, n = h->n_dec_layer * 2 * h->d;
    /* One product for every layer's K and V, [T, d] x [d, L*2d], in blocks of
     * xkv_rows frames (each row of the product depends on its own row only). */
    for (int t0 = 0; t0 < T; t0 += s->xkv_rows) {
        int rows = T - t0 < s->xkv_rows ? T - t0 : s->xkv_rows;
        op_matmul_w(s->pool, s->xkv, n, s->enc_out + (size_t)t0 * h->d, h->d, m->w_xkv, m->b_xkv,
                    rows, n, h->d);
        int start = 0;
        op_cross_fill(s->pool, dst, 1, &start, &T, s->xkv, (size_t)n, t0, rows);
    }
    dst->n_valid = T;
    dev_check(s, op_sync(s->pool));
}

void whisper_cross_compute(whisper_state *s) { whisper_cross_compute_into(s, &s->cross); }

/* Self-attention of rows [0, R): append each row's K/V to its slot at its
 * position, then every row attends over positions [0, pos] of its sequence,
 * read through the index table (tab[slot * tab_ld + t] holds position t). */
static void dec_self_attention(whisper_state *s, int l, int R, const int *pos, const int *slot,
                               const int *tab, int tab_ld) {
    const whisper_hparams *h = &s->m->hp;
    int d = h->d, dh = d / h->n_head;
    op_kv_self_put(s->pool, &s->self, l, s->d_qkv, 3 * d, d, 2 * d, R, pos, slot);
    op_attention_tab(s->pool, s->d_att, d, s->d_qkv, 3 * d, kv_self_k(&s->self, l, 0),
                     kv_self_v(&s->self, l, 0), (size_t)s->self.n_ctx * d, d, R, pos, tab, slot,
                     tab_ld, h->n_head, dh, 1.0f / sqrtf((float)dh), NULL, 0, 0, s->scores,
                     s->scores_stride);
}

encdec_status whisper_align_capture(whisper_state *s, int on) {
    const whisper_model *m = s->m;
    return md_xattn_on_pairs(&s->align, s->dev, on && m->n_align_heads > 0, m->align_heads, m->n_align_heads,
                             s->max_rows, m->hp.n_audio_ctx);
}

const float *whisper_align_scores(const whisper_state *s, int a) { return md_xattn_head(&s->align, a); }

/* The decoder's products: batch-invariant ones in the engine's state. */
static void mm(whisper_state *s, float *y, int ldy, const float *x, int ldx, k_w w,
               const float *b, int M, int N, int K) {
    if (s->invariant) op_matmul_w_inv(s->pool, y, ldy, x, ldx, w, b, M, N, K);
    else op_matmul_w(s->pool, y, ldy, x, ldx, w, b, M, N, K);
}

void whisper_decode(whisper_state *s, int R, const int *tok, const int *pos, const int *slot,
                    const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    const whisper_model *m = s->m;
    const whisper_hparams *h = &m->hp;
    int d = h->d, F = h->ffn, dh = d / h->n_head;
    float scale = 1.0f / sqrtf((float)dh);
    const kv_cross *xc = &s->cross;   /* row r reads xc[rc[r]] (rc NULL: xc[0]) */
    const int *rc = NULL;
    if (s->slot_xc) {
        for (int r = 0; r < R; r++) s->row_xc[r] = s->slot_xc[slot[r]];
        xc = s->xc;
        rc = s->row_xc;
    }
    op_embed(s->pool, s->d_x, m->tok_emb, h->n_vocab, tok, m->dec_pos, pos, R, d);
    for (int l = 0; l < h->n_dec_layer; l++) {
        const whisper_dec_layer *y = &m->dec[l];
        op_layernorm(s->pool, s->d_ln, s->d_x, y->ln1_g, y->ln1_b, R, d, LN_EPS);
        mm(s, s->d_qkv, 3 * d, s->d_ln, d, y->w_qkv, y->b_qkv, R, 3 * d, d);   /* [R, 3d] */
        dec_self_attention(s, l, R, pos, slot, tab, tab_ld);
        mm(s, s->d_h, d, s->d_att, d, y->w_o, y->b_o, R, d, d);
        op_add(s->pool, s->d_x, s->d_h, (size_t)R * d);

        op_layernorm(s->pool, s->d_ln, s->d_x, y->lnx_g, y->lnx_b, R, d, LN_EPS);
        mm(s, s->d_q, d, s->d_ln, d, y->w_xq, y->b_xq, R, d, d);           /* only Q */
        md_xattn_scores(&s->align, s->pool, s->d_q, d, xc, rc, l, R, dh, scale);
        op_attention_cross(s->pool, s->d_att, d, s->d_q, d, xc, rc, l, R, scale, s->scores,
                           s->scores_stride);
        mm(s, s->d_h, d, s->d_att, d, y->w_xo, y->b_xo, R, d, d);
        op_add(s->pool, s->d_x, s->d_h, (size_t)R * d);

        op_layernorm(s->pool, s->d_ln, s->d_x, y->ln2_g, y->ln2_b, R, d, LN_EPS);
        mm(s, s->d_h, F, s->d_ln, d, y->w_fc1, y->b_fc1, R, F, d);          /* [R, F] */
        op_gelu(s->pool, s->d_h, R, F);
        mm(s, s->d_att, d, s->d_h, F, y->w_fc2, y->b_fc2, R, d, F);
        op_add(s->pool, s->d_x, s->d_att, (size_t)R * d);
    }
    op_layernorm_rows(s->pool, s->d_ln, s->d_x, out_rows, n_out, m->dec_ln_g, m->dec_ln_b, d,
                      LN_EPS);
    float *lg = s->dev ? s->d_logits : logits;
    mm(s, lg, h->n_vocab, s->d_ln, d, m->tok_emb, NULL, n_out, h->n_vocab, d);
    if (s->align.on) dev_check(s, md_xattn_host(&s->align, s->pool));
    dev_check(s, op_to_host(s->pool, logits, lg, (size_t)n_out * h->n_vocab));
    if (s->status) {   /* a device failure: every row ends here (the caller reports it) */
        for (size_t i = 0; i < (size_t)n_out * h->n_vocab; i++) logits[i] = -INFINITY;
        for (int r = 0; r < n_out && m->sp.eot >= 0; r++) logits[(size_t)r * h->n_vocab + m->sp.eot] = 0.0f;
    }
}

encdec_status whisper_state_status(const whisper_state *s) { return s->status; }

/* ---- behind the seam (decode/runner.h) ---- */

static void rn_cross(void *ctx) { whisper_cross_compute(ctx); }

static void rn_decode(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                      const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    whisper_decode(ctx, R, tok, pos, slot, tab, tab_ld, n_out, out_rows, logits);
}

rn_model whisper_rn_model(whisper_state *s) {
    rn_model m = {s, s->m->hp.n_vocab, s->n_slots, s->m->hp.n_text_ctx, s->max_rows, NULL,
                  rn_cross, rn_decode, s->pool};
    return m;
}
