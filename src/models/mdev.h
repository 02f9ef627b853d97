/* mdev.h - a model's weights on a device (core/dev.h), for each family's
 * upload (whisper_dev.c, t5_dev.c, bart_dev.c): every matrix of the
 * family's list (wl_mat, as its *_matrices gives it) converted once to the
 * device's compute type (f32; bf16 for the bf16 mode; int8 in the int8
 * mode, kern/q8.h's bytes and scales in its device layout, but for the
 * WL_NOT_INT8 ones, f32), every f32 vector as it is, all in one block of
 * device memory, and the pointers rewritten to it. Matrices or vectors
 * that share storage (a tied embedding and output projection) are uploaded
 * once and stay shared. CPU-only layouts (packed, int8 packed) are
 * refused: the device copy is made from the file's weights, before any CPU
 * conversion. */
#ifndef ED_MODELS_MDEV_H
#define ED_MODELS_MDEV_H

#include "core/dev.h"
#include "models/wload.h"

typedef struct {
    const float **p;   /* the model's field: NULL vectors are skipped */
    size_t n;          /* floats */
} md_vec;

/* Appends {p, n} to out[0, cap) as entry *n_out (when it fits) and counts it. */
static inline void md_vec_add(md_vec *out, int cap, int *n_out, const float **p, size_t n) {
    if (*n_out < cap) out[*n_out] = (md_vec){p, n};
    (*n_out)++;
}

/* Uploads mats[0, nm) and vecs[0, nv) to d (mode: an encdec_compute, the
 * matrices' types as above; bf16: lowp set), rewriting each k_w and vector pointer in place; *mem is the block
 * (ed_dev_free(d, *mem) frees it), *bytes its size. On failure nothing is
 * left allocated and the pointers may be half rewritten (the caller drops
 * its copy). */
encdec_status md_upload(ed_dev *d, wl_mat *mats, int nm, md_vec *vecs, int nv, int mode,
                        void **mem, size_t *bytes);

/* The same over a family's own lists: list_mats(g, out, cap) and
 * list_vecs(g, out, cap) fill their arrays from g (the device copy, its
 * pointers still the host's) and return their counts. */
typedef int (*md_mats_fn)(void *g, wl_mat *out, int cap);
typedef int (*md_vecs_fn)(void *g, md_vec *out, int cap);
encdec_status md_upload_lists(ed_dev *d, void *g, md_mats_fn list_mats, md_vecs_fn list_vecs,
                              int mode, void **mem, size_t *bytes);

/* A copy of n bytes of src (a device copy's own layer table; n 0: a
 * minimal block), NULL and a named error when memory runs out. */
void *md_dup(const void *src, size_t n);

/* Defines encdec_status NAME(const T *m, void *dev, int mode, T **out) (mode:
 * an encdec_compute), a
 * family's upload: a copy of *m with its own layer tables (enc, dec: as
 * many as hp.n_enc_layer, hp.n_dec_layer) whose weights are on dev (its wt
 * NULL, dev and dev_mem set), by MATS and VECS (md_mats_fn, md_vecs_fn);
 * FREE_FN(copy) undoes a failed one. */
#define MD_DEFINE_UPLOAD(NAME, T, MATS, VECS, FREE_FN)                                           \
    encdec_status NAME(const T *m, void *dev, int mode, T **out) {                               \
        *out = NULL;                                                                              \
        T *g = malloc(sizeof *g);                                                                 \
        if (!g) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: device model");                  \
        *g = *m;                                                                                  \
        g->wt = NULL;                                                                             \
        g->dev = dev;                                                                             \
        g->dev_mem = NULL;                                                                        \
        g->enc = md_dup(m->enc, (size_t)m->hp.n_enc_layer * sizeof *g->enc);                      \
        g->dec = md_dup(m->dec, (size_t)m->hp.n_dec_layer * sizeof *g->dec);                      \
        encdec_status st = g->enc && g->dec ? ENCDEC_OK : ENCDEC_ERR_NOMEM;                       \
        if (!st) st = md_upload_lists(dev, g, MATS, VECS, mode, &g->dev_mem, &g->weight_bytes);  \
        if (st) {                                                                                 \
            FREE_FN(g);                                                                           \
            return st;                                                                            \
        }                                                                                         \
        *out = g;                                                                                 \
        return ENCDEC_OK;                                                                         \
    }

#endif
