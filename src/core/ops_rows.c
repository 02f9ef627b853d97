/* ops_rows.c - the row moves a forward pass makes besides its products:
 * embedding lookups, the self cache's append, the cross caches' fill from
 * the one K|V product, norms of picked rows, scaling and zeroing. The model
 * code calls these rather than touching its buffers itself, so that it
 * never reads or writes activations directly: the buffers may live where
 * another backend's kernels run (docs/ARCHITECTURE.md, "The CUDA backend";
 * each has a twin in cuda/cuda.h). Element-wise work gives the same bits
 * however it is split. */
#include "core/ops.h"
#include "core/ops_dev.h"
#include "core/dev.h"

#include <string.h>

void op_embed(ed_pool *p, float *x, k_w emb, int n_vocab, const int *tok, const float *pos_emb,
              const int *pos, int R, int d) {
    OP_DEV(p, od_embed(dev_, x, emb, tok, pos_emb, pos, R, d));
    (void)p;   /* R rows of d floats: too little to split */
    for (int r = 0; r < R; r++) {
        float *row = x + (size_t)r * d;
        k_w_row(row, emb, tok[r], n_vocab, d);
        if (pos_emb) k_add(row, pos_emb + (size_t)pos[r] * d, (size_t)d);
    }
}

void op_kv_self_put(ed_pool *p, const kv_self *c, int l, const float *qkv, int ldqkv, int koff,
                    int voff, int R, const int *pos, const int *slot) {
    OP_DEV(p, od_kv_self_put(dev_, c, l, qkv, ldqkv, koff, voff, R, pos, slot));
    (void)p;
    size_t bytes = (size_t)c->d * sizeof(float);
    for (int r = 0; r < R; r++) {
        const float *src = qkv + (size_t)r * ldqkv;
        memcpy(kv_self_k(c, l, slot[r]) + (size_t)pos[r] * c->d, src + koff, bytes);
        memcpy(kv_self_v(c, l, slot[r]) + (size_t)pos[r] * c->d, src + voff, bytes);
    }
}

void op_layernorm_rows(ed_pool *p, float *y, const float *x, const int *rows, int n,
                       const float *g, const float *b, int D, float eps) {
    OP_DEV(p, od_norm_rows(dev_, y, x, rows, n, g, b, D, eps, 0));
    (void)p;
    for (int i = 0; i < n; i++)
        k_layernorm(y + (size_t)i * D, x + (size_t)rows[i] * D, g, b, 1, D, eps);
}

void op_rmsnorm_rows(ed_pool *p, float *y, const float *x, const int *rows, int n, const float *g,
                     int D, float eps) {
    OP_DEV(p, od_norm_rows(dev_, y, x, rows, n, g, NULL, D, eps, 1));
    (void)p;
    for (int i = 0; i < n; i++) k_rmsnorm(y + (size_t)i * D, x + (size_t)rows[i] * D, g, 1, D, eps);
}

void op_scale(ed_pool *p, float *x, size_t n, float s) {
    OP_DEV(p, od_scale(dev_, x, n, s));
    (void)p;
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

void op_zero(ed_pool *p, float *x, size_t n) {
    OP_DEV(p, od_zero(dev_, x, n));
    (void)p;
    memset(x, 0, n * sizeof *x);
}

/* Per block of CROSS_ROWS rows (in cache once the first (layer, K|V, head)
 * block reads them), every block's part of every input among them: src is
 * read in order rather than one dh-float run per row and block. */
#define CROSS_ROWS 16
typedef struct {
    const kv_cross *c;
    const int *start, *len;
    const float *src;
    size_t ld;
    int n, t0, rows, blocks, dh;
} cross_ctx;

static void cross_task(void *arg, int ith, int nth) {
    const cross_ctx *x = arg;
    int lo, hi, H = x->c[0].n_head;
    ed_split(x->rows, ith, nth, CROSS_ROWS, &lo, &hi);
    for (int r0 = lo; r0 < hi; r0 += CROSS_ROWS) {
        int t_a = x->t0 + r0, t_b = x->t0 + (hi - r0 < CROSS_ROWS ? hi : r0 + CROSS_ROWS);
        for (int i = 0; i < x->n; i++) {   /* the inputs among tokens [t_a, t_b) */
            int a = x->start[i] > t_a ? x->start[i] : t_a;
            int e = x->start[i] + x->len[i] < t_b ? x->start[i] + x->len[i] : t_b;
            if (e <= a) continue;
            const float *src = x->src + (size_t)(a - x->t0) * x->ld;
            for (int it = 0; it < x->blocks; it++)
                kv_cross_put(&x->c[i], it / (2 * H), (it / H) % 2, it % H, src + (size_t)it * x->dh,
                             x->ld, a - x->start[i], e - a);
        }
    }
}

void op_cross_fill(ed_pool *p, const kv_cross *c, int n, const int *start, const int *len,
                   const float *src, size_t ld, int t0, int rows) {
    OP_DEV(p, od_cross_fill(dev_, c, n, start, len, src, ld, t0, rows));
    if (n < 1 || rows < 1) return;
    cross_ctx x = {c, start, len, src, ld, n, t0, rows, c[0].n_layer * 2 * c[0].n_head, c[0].dh};
    ed_pool_run(p, cross_task, &x);
}

encdec_status op_from_host(ed_pool *p, float *dst, const float *src, size_t n, const float **in) {
    ed_dev *d = ed_pool_dev(p);
    *in = d ? dst : src;
    return d ? ed_dev_upload(d, dst, src, n * sizeof(float)) : ENCDEC_OK;
}

encdec_status op_to_host(ed_pool *p, float *dst, const float *src, size_t n) {
    ed_dev *d = ed_pool_dev(p);
    if (!d || dst == src) return ENCDEC_OK;
    return ed_dev_download(d, dst, src, n * sizeof(float));
}

encdec_status op_sync(ed_pool *p) { return ed_dev_sync(ed_pool_dev(p)); }
