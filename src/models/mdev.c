/* mdev.c - a model's weights on a device (mdev.h). */
#include "models/mdev.h"
#include "base/err.h"
#include "base/mem.h"
#include "kern/attn_h.h"
#include "kern/q8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t up256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Matrix w [N, K] (f32, f16 or bf16 as stored) into dst as f32 or bf16,
 * through tmp (N * K floats) and half. */
static encdec_status put_matrix(ed_dev *d, void *dst, k_w w, int N, int K, int bf16, float *tmp,
                                uint16_t *half) {
    size_t n = (size_t)N * K;
    if (w.t != K_F32 && w.t != K_F16 && w.t != K_BF16)
        return ed_fail(ENCDEC_ERR_ARG, "a weight matrix in a CPU-only layout cannot go to the device");
    const float *src = w.p;
    if (w.t != K_F32 || bf16) {
        for (int r = 0; r < N; r++) k_w_row(tmp + (size_t)r * K, w, r, N, K);
        src = tmp;
    }
    if (!bf16) return ed_dev_upload(d, dst, src, n * sizeof(float));
    k_f32_to_h(half, src, n, 1);
    return ed_dev_upload(d, dst, half, n * sizeof(uint16_t));
}

/* The first of mats[0, i) with the same storage as mats[i] (-1: none). */
static int shared_mat(const wl_mat *mats, const void *const *orig, int i) {
    for (int j = 0; j < i; j++)
        if (orig[j] == orig[i] && mats[j].N == mats[i].N && mats[j].K == mats[i].K) return j;
    return -1;
}

static int shared_vec(const float *const *orig, int i) {
    for (int j = 0; j < i; j++)
        if (orig[j] == orig[i]) return j;
    return -1;
}

/* Whether matrix i goes as int8 (the int8 mode, as wl_convert: all but the
 * WL_NOT_INT8 ones), and its bytes on the device. */
static int as_q8(const wl_mat *m, int mode) { return mode == ENCDEC_COMPUTE_INT8 && !(m->flags & WL_NOT_INT8); }
static size_t dev_bytes(const wl_mat *m, int mode) {
    if (as_q8(m, mode)) return (size_t)m->N * k_q8_dev_row_bytes(m->K);
    return (size_t)m->N * m->K * (mode == ENCDEC_COMPUTE_BF16 ? 2 : 4);
}

/* Matrix w [N, K] into dst in the device's int8 layout (kern/q8.h): packed
 * as the CPU's int8 mode packs it, then rewritten row-major, so the device
 * holds the CPU's bytes and scales. */
static encdec_status put_q8(ed_dev *d, void *dst, k_w w, int N, int K) {
    if (w.t != K_F32 && w.t != K_F16 && w.t != K_BF16)
        return ed_fail(ENCDEC_ERR_ARG, "a weight matrix in a CPU-only layout cannot go to the device");
    if (K > K_Q8_MAX_K)
        return ed_fail(ENCDEC_ERR_SHAPE, "int8 weights: rows of %d are longer than %d", K, K_Q8_MAX_K);
    size_t pb = k_q8_bytes(N, K), db = (size_t)N * k_q8_dev_row_bytes(K);
    void *packed = ed_alloc(pb, "int8 weights"), *rows = ed_alloc(db ? db : 1, "int8 weights");   /* (64-byte aligned) */
    encdec_status st = packed && rows ? ENCDEC_OK : ENCDEC_ERR_NOMEM;
    if (!st) {
        k_q8_to_dev(rows, k_q8_pack(packed, w, N, K));
        st = ed_dev_upload(d, dst, rows, db);
    }
    free(packed);
    free(rows);
    return st;
}

encdec_status md_upload(ed_dev *d, wl_mat *mats, int nm, md_vec *vecs, int nv, int mode,
                        void **mem, size_t *bytes) {
    int bf16 = mode == ENCDEC_COMPUTE_BF16;
    *mem = NULL;
    *bytes = 0;
    const void **om = ed_calloc((size_t)(nm + 1) * sizeof *om, "weight list");
    const float **ov = ed_calloc((size_t)(nv + 1) * sizeof *ov, "vector list");
    if (!om || !ov) {
        free(om);
        free(ov);
        return ENCDEC_ERR_NOMEM;
    }
    size_t total = 0, big = 0;
    for (int i = 0; i < nm; i++) {
        om[i] = mats[i].w->p;
        size_t n = (size_t)mats[i].N * mats[i].K;
        if (shared_mat(mats, om, i) < 0) total += up256(dev_bytes(&mats[i], mode));
        if (n > big) big = n;
    }
    for (int i = 0; i < nv; i++) {
        ov[i] = *vecs[i].p;
        if (ov[i] && shared_vec(ov, i) < 0) total += up256(vecs[i].n * sizeof(float));
    }
    encdec_status st = ENCDEC_OK;
    char *block = ed_dev_alloc(d, total ? total : 256, "the model's weights");
    float *tmp = ed_alloc((big ? big : 1) * sizeof(float), "weight conversion");
    uint16_t *half = bf16 ? ed_alloc((big ? big : 1) * sizeof(uint16_t), "weight conversion") : NULL;
    if (!block || !tmp || (bf16 && !half)) st = ENCDEC_ERR_NOMEM;
    char *at = block;
    for (int i = 0; !st && i < nm; i++) {
        k_w *w = mats[i].w;
        int j = shared_mat(mats, om, i);
        if (j >= 0) {
            *w = *mats[j].w;
            continue;
        }
        int q8 = as_q8(&mats[i], mode);
        st = q8 ? put_q8(d, at, *w, mats[i].N, mats[i].K)
                : put_matrix(d, at, *w, mats[i].N, mats[i].K, bf16, tmp, half);
        w->p = at;
        w->t = q8 ? K_Q8 : bf16 ? K_BF16 : K_F32;
        w->lowp = bf16;
        at += up256(dev_bytes(&mats[i], mode));
    }
    for (int i = 0; !st && i < nv; i++) {
        if (!ov[i]) continue;
        int j = shared_vec(ov, i);
        if (j >= 0) {
            *vecs[i].p = *vecs[j].p;
            continue;
        }
        st = ed_dev_upload(d, at, ov[i], vecs[i].n * sizeof(float));
        *vecs[i].p = (const float *)at;
        at += up256(vecs[i].n * sizeof(float));
    }
    free(tmp);
    free(half);
    free(om);
    free(ov);
    if (st) {
        ed_dev_free(d, block);
        return st;
    }
    *mem = block;
    *bytes = total;
    return ENCDEC_OK;
}

encdec_status md_upload_lists(ed_dev *d, void *g, md_mats_fn list_mats, md_vecs_fn list_vecs,
                              int mode, void **mem, size_t *bytes) {
    int nm = list_mats(g, NULL, 0), nv = list_vecs(g, NULL, 0);
    wl_mat *mats = ed_alloc((size_t)(nm ? nm : 1) * sizeof *mats, "weight list");
    md_vec *vecs = ed_alloc((size_t)(nv ? nv : 1) * sizeof *vecs, "vector list");
    encdec_status st = mats && vecs ? ENCDEC_OK : ENCDEC_ERR_NOMEM;
    if (!st) {
        list_mats(g, mats, nm);
        list_vecs(g, vecs, nv);
        st = md_upload(d, mats, nm, vecs, nv, mode, mem, bytes);
    }
    free(mats);
    free(vecs);
    return st;
}

void *md_dup(const void *src, size_t n) {
    void *p = ed_alloc(n ? n : 1, "device model layers");
    if (p && n) memcpy(p, src, n);
    return p;
}
