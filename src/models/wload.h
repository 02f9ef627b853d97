/* wload.h - what every model family's loader shares: opening a model's
 * weights, and fetching tensors as f32 checked against expected shapes.
 *
 *   wload L = {m->wt, "model.safetensors", ENCDEC_OK, 0};
 *   const float *w = wl_get2(&L, "encoder.final_layer_norm.weight", d);   NULL once failed
 *   ... many gets ...;  if (L.st) return L.st;     the first failure, message set
 *
 * The status is sticky: after the first failure every call returns NULL, so
 * a loader lists its tensors straight through and checks once at the end.
 */
#ifndef ED_WLOAD_H
#define ED_WLOAD_H

#include "encdec.h"
#include "io/tensor.h"
#include <stddef.h>
#include <stdint.h>

typedef struct {
    ed_wtab *wt;
    const char *file;       /* the weights file named in "missing" errors */
    encdec_status st;       /* sticky: the first failure */
    size_t weight_bytes;    /* f32 bytes of every tensor fetched */
} wload;

/* The tensor, or NULL with ENCDEC_ERR_SHAPE ("... is missing"). */
const ed_tensor *wl_find(wload *L, const char *name);
/* The tensor `name` as f32, checked against shape e[0, ndim). Borrowed when
 * stored as aligned f32, else converted into memory owned by the table. */
const float *wl_get(wload *L, const char *name, int ndim, const int64_t *e);
const float *wl_get1(wload *L, const char *name, int64_t a);
const float *wl_get2(wload *L, const char *name, int64_t a, int64_t b);
const float *wl_get3(wload *L, const char *name, int64_t a, int64_t b, int64_t c);
/* n floats owned by the table (for fused weights), NULL once failed. */
float *wl_alloc(wload *L, size_t n, const char *what);
/* Copies n floats of src (NULL: zeros) to dst. */
void wl_put(float *dst, const float *src, size_t n);

/* Opens the weights at path into wt: a directory holding model.safetensors,
 * model.safetensors.index.json (+ shards) or, when allow_ct2, a CTranslate2
 * model.bin; or a .safetensors file. dir gets the directory of the
 * configuration files, *hf 1 for safetensors (0 for CTranslate2), *file the
 * name for messages (static or borrowed from path). */
encdec_status wl_open(ed_wtab *wt, const char *path, int allow_ct2, char *dir, size_t cap,
                      int *hf, const char **file);

#endif
