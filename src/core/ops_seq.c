/* ops_seq.c - the pool-sliced operations of the T5 family: RMSNorm, the
 * feed-forward activations, attention over packed segments with a position
 * bias, and decoder attention through a cache index table. */
#include "core/ops.h"
#include "core/ops_dev.h"
#include "kern/kern.h"

typedef struct {
    float *y;
    const float *x, *g;
    int M, D;
    float eps;
} rms_ctx;

static void rms_task(void *arg, int ith, int nth) {
    rms_ctx *c = arg;
    int lo, hi;
    ed_split(c->M, ith, nth, 1, &lo, &hi);
    k_rmsnorm(c->y + (size_t)lo * c->D, c->x + (size_t)lo * c->D, c->g, hi - lo, c->D, c->eps);
}

void op_rmsnorm(ed_pool *p, float *y, const float *x, const float *g, int M, int D, float eps) {
    OP_DEV(p, od_rmsnorm(dev_, y, x, g, M, D, eps));
    rms_ctx c = {y, x, g, M, D, eps};
    if (M < 16) rms_task(&c, 0, 1);
    else ed_pool_run(p, rms_task, &c);
}

typedef struct {
    float *h;
    int ld, M, F, gated;
    op_act act;
} act_ctx;

static void act_task(void *arg, int ith, int nth) {
    act_ctx *c = arg;
    int lo, hi;
    ed_split(c->M, ith, nth, 1, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        float *r = c->h + (size_t)i * c->ld;
        switch (c->act) {
        case OP_ACT_RELU: k_relu(r, (size_t)c->F); break;
        case OP_ACT_GELU: k_gelu(r, (size_t)c->F); break;
        case OP_ACT_GELU_TANH: k_gelu_tanh(r, (size_t)c->F); break;
        case OP_ACT_SILU: k_silu(r, (size_t)c->F); break;
        }
        if (c->gated) k_mul(r, r + c->F, (size_t)c->F);
    }
}

void op_ffn_act(ed_pool *p, float *h, int ld, int M, int F, op_act act, int gated) {
    OP_DEV(p, od_ffn_act(dev_, h, ld, M, F, (int)act, gated));
    act_ctx c = {h, ld, M, F, gated, act};
    if ((size_t)M * (size_t)F < 8192) act_task(&c, 0, 1);
    else ed_pool_run(p, act_task, &c);
}

typedef struct {
    float *o;
    const float *q, *k, *v;
    int ldo, ldq, ldk, ldv, n_seg, n_head, dh;
    const int *start, *len;
    float scale;
    const float *bias;
    size_t bias_hstride;
    int bias_center;
    float *scratch;
    size_t scratch_stride;
} seg_ctx;

static int n_blocks(int rows) { return (rows + OP_ATTN_ROWS - 1) / OP_ATTN_ROWS; }

static void seg_task(void *arg, int ith, int nth) {
    seg_ctx *c = arg;
    float *s = c->scratch + (size_t)ith * c->scratch_stride;
    int item = 0;   /* items are numbered segment by segment, then head, then block */
    for (int sg = 0; sg < c->n_seg; sg++) {
        int T = c->len[sg], nb = n_blocks(T), n_items = nb * c->n_head;
        /* this thread's first item in the segment */
        int first = ((ith - item) % nth + nth) % nth;
        for (int it = first; it < n_items; it += nth) {
            int h = it / nb, r0 = (it % nb) * OP_ATTN_ROWS;
            int m = T - r0 < OP_ATTN_ROWS ? T - r0 : OP_ATTN_ROWS;
            size_t row = (size_t)c->start[sg] + (size_t)r0, col = (size_t)h * c->dh;
            size_t base = (size_t)c->start[sg];
            const float *b = c->bias ? c->bias + (size_t)h * c->bias_hstride + c->bias_center - r0 : NULL;
            k_attention_bias(c->o + row * c->ldo + col, c->ldo, c->q + row * c->ldq + col, c->ldq,
                             c->k + base * c->ldk + col, c->ldk, c->v + base * c->ldv + col, c->ldv,
                             m, T, c->dh, c->scale, b, -1, s);
        }
        item += n_items;
    }
}

void op_attention_seg(ed_pool *p, float *o, int ldo, const float *q, int ldq, const float *k,
                      int ldk, const float *v, int ldv, int n_seg, const int *seg_start,
                      const int *seg_len, int n_head, int dh, float scale, const float *bias,
                      size_t bias_hstride, int bias_center, float *scratch,
                      size_t scratch_stride) {
    OP_DEV(p, od_attention_seg(dev_, o, ldo, q, ldq, k, ldk, v, ldv, n_seg, seg_start, seg_len,
                               n_head, dh, scale, bias, bias_hstride, bias_center));
    seg_ctx c = {o, q, k, v, ldo, ldq, ldk, ldv, n_seg, n_head, dh, seg_start, seg_len, scale,
                 bias, bias_hstride, bias_center, scratch, scratch_stride};
    ed_pool_run(p, seg_task, &c);
}

typedef struct {
    float *o;
    const float *q, *kc, *vc;
    int ldo, ldq, ld, R, n_head, dh, tab_ld;
    size_t slot_stride;
    const int *pos, *tab, *tab_row;
    float scale;
    const float *bias;
    size_t bias_hstride;
    int bias_center;
    float *scratch;
    size_t scratch_stride;
} tab_ctx;

/* Items: (row, group of heads). With at least as many rows as threads a
 * group is all the heads (up to OP_ATTN_ROWS: the scratch), so each
 * position's K and V rows are read once, in order; else one head each. */
static void tab_task(void *arg, int ith, int nth) {
    tab_ctx *c = arg;
    float *s = c->scratch + (size_t)ith * c->scratch_stride;
    int per = c->R >= nth ? (c->n_head < OP_ATTN_ROWS ? c->n_head : OP_ATTN_ROWS) : 1;
    int groups = (c->n_head + per - 1) / per, n_items = c->R * groups;
    for (int it = ith; it < n_items; it += nth) {
        int r = it / groups, h = it % groups * per, p = c->pos[r];
        int nh = c->n_head - h < per ? c->n_head - h : per;
        size_t col = (size_t)h * c->dh;
        const float *b = c->bias ? c->bias + (size_t)h * c->bias_hstride + c->bias_center - p : NULL;
        k_attention_gather_heads(c->o + (size_t)r * c->ldo + col, c->q + (size_t)r * c->ldq + col,
                                 c->kc + col, c->vc + col, c->slot_stride, c->ld,
                                 c->tab + (size_t)c->tab_row[r] * c->tab_ld, p + 1, nh, c->dh,
                                 c->scale, b, c->bias_hstride, s);
    }
}

void op_attention_tab(ed_pool *p, float *o, int ldo, const float *q, int ldq,
                      const float *kc, const float *vc, size_t slot_stride, int ld, int R,
                      const int *pos, const int *tab, const int *tab_row, int tab_ld,
                      int n_head, int dh, float scale, const float *bias,
                      size_t bias_hstride, int bias_center, float *scratch,
                      size_t scratch_stride) {
    OP_DEV(p, od_attention_tab(dev_, o, ldo, q, ldq, kc, vc, slot_stride, ld, R, pos, tab, tab_row, tab_ld, n_head, dh, scale, bias, bias_hstride, bias_center));
    tab_ctx c = {o, q, kc, vc, ldo, ldq, ld, R, n_head, dh, tab_ld, slot_stride, pos, tab,
                 tab_row, scale, bias, bias_hstride, bias_center, scratch, scratch_stride};
    if (R * n_head < 4) tab_task(&c, 0, 1);
    else ed_pool_run(p, tab_task, &c);
}
