/* xattn.c - cross-attention scores of a few heads (xattn.h). */
#include "models/xattn.h"
#include "base/err.h"
#include "base/mem.h"
#include "core/dev.h"
#include "core/ops.h"

#include <stdlib.h>
#include <string.h>

/* Room for n heads of rows x ld scores (the buffers and the head list,
 * grown when asked for more; kept otherwise: the layout is the capacity's). */
static encdec_status room(md_xattn *x, void *dev, int n, int rows, int ld) {
    if (n < 1 || rows < 1 || ld < 1)
        return ed_fail(ENCDEC_ERR_ARG, "attention capture: %d heads, %d rows, %d positions", n, rows, ld);
    if (x->buf && n <= x->cap && rows <= x->rows && ld <= x->ld) return ENCDEC_OK;
    md_xattn_free(x, dev);
    size_t k, bytes;
    if (!ed_mul_ok((size_t)n * (size_t)rows, (size_t)ld, &k) || !ed_mul_ok(k, sizeof(float), &bytes))
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: attention scores");
    x->buf = ed_dev_alloc(dev, bytes, "attention scores");
    x->pair = x->buf ? ed_alloc(sizeof(int) * 2 * (size_t)n, "attention heads") : NULL;
    if (x->pair && dev) x->host = ed_alloc(bytes, "attention scores");
    if (!x->buf || !x->pair || (dev && !x->host)) {
        md_xattn_free(x, dev);
        return ENCDEC_ERR_NOMEM;
    }
    x->rows = rows;
    x->ld = ld;
    x->cap = n;
    return ENCDEC_OK;
}

/* The n heads now in x->pair: on. */
static void start(md_xattn *x, int n) {
    x->heads = n;
    x->layer = 0;
    for (int a = 0; a < n; a++)
        if (x->pair[2 * a] > x->layer) x->layer = x->pair[2 * a];
    x->last = 0;
    x->on = 1;
}

encdec_status md_xattn_on_pairs(md_xattn *x, void *dev, int on, const int *pairs, int n, int rows, int ld) {
    x->on = 0;
    if (!on) return ENCDEC_OK;
    encdec_status st = room(x, dev, n, rows, ld);
    if (st) return st;
    memcpy(x->pair, pairs, sizeof(int) * 2 * (size_t)n);
    start(x, n);
    return ENCDEC_OK;
}

encdec_status md_xattn_on(md_xattn *x, void *dev, int on, int layer, int heads, int rows, int ld) {
    x->on = 0;
    if (!on) return ENCDEC_OK;
    encdec_status st = room(x, dev, heads, rows, ld);
    if (st) return st;
    for (int a = 0; a < heads; a++) x->pair[2 * a] = layer, x->pair[2 * a + 1] = a;
    start(x, heads);
    return ENCDEC_OK;
}

void md_xattn_scores(md_xattn *x, ed_pool *p, const float *q, int ldq, const kv_cross *cross,
                     const int *row_input, int l, int R, int dh, float scale) {
    if (!x->on) return;
    static const k_wtype types[] = {K_F32, K_F16, K_BF16};   /* by kv_dtype */
    x->last = R < x->rows ? R : x->rows;
    size_t zr = (size_t)x->last * x->ld;   /* the pass's rows only */
    for (int a = 0; a < x->heads; a++) {
        if (x->pair[2 * a] != l) continue;
        int hd = x->pair[2 * a + 1];
        float *ya = x->buf + (size_t)a * x->rows * x->ld;
        op_zero(p, ya, zr);
        for (int r0 = 0; r0 < R && r0 < x->rows;) {   /* runs of rows that read one input */
            int b = row_input ? row_input[r0] : 0, r1 = r0 + 1;
            while (r1 < R && r1 < x->rows && (row_input ? row_input[r1] : 0) == b) r1++;
            const kv_cross *xc = &cross[b];
            int T = xc->n_valid < x->ld ? xc->n_valid : x->ld;
            float *y = ya + (size_t)r0 * x->ld;
            k_w K = {kv_cross_k(xc, l, hd), types[xc->type], 0};
            if (T > 0) op_matmul_w(p, y, x->ld, q + (size_t)r0 * ldq + (size_t)hd * dh, ldq, K, NULL, r1 - r0, T, dh);
            if (T > 0 && scale != 1.0f) op_scale(p, y, (size_t)(r1 - r0) * x->ld, scale);
            r0 = r1;
        }
    }
}

encdec_status md_xattn_host(md_xattn *x, ed_pool *p) {
    encdec_status st = ENCDEC_OK;
    size_t head = (size_t)x->rows * x->ld;
    for (int a = 0; x->host && a < x->heads && !st; a++)   /* each head's rows of the pass */
        st = op_to_host(p, x->host + a * head, x->buf + a * head, (size_t)x->last * x->ld);
    return st;
}

const float *md_xattn_head(const md_xattn *x, int a) {
    return (x->host ? x->host : x->buf) + (size_t)a * x->rows * x->ld;
}

void md_xattn_free(md_xattn *x, void *dev) {
    ed_dev_free(dev, x->buf);
    free(x->host);
    free(x->pair);
    x->buf = x->host = NULL;
    x->pair = NULL;
    x->rows = x->ld = x->heads = x->cap = x->on = 0;
}
