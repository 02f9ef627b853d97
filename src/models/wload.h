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
#include "kern/kern.h"
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
/* A weight matrix [a, b] as stored when that is f16 or bf16 (2-byte
 * aligned), or f32 (borrowed when aligned, else converted): the kernels
 * expand halves in registers, so a checkpoint stored in f16 is used exactly
 * and read at half the bytes. {NULL} once failed. */
k_w wl_getw2(wload *L, const char *name, int64_t a, int64_t b);
/* parts[0, count) (n[i] elements each; p NULL = zeros, n 0 = nothing)
 * concatenated into one matrix owned by the table: in their half type when
 * all non-empty parts share it, else in f32. {NULL} once failed. */
k_w wl_fuse(wload *L, const k_w *parts, const size_t *n, int count, const char *what);

/* wl_mat flags */
enum {
    WL_DECODE_ONLY = 1,   /* read only by decode steps (few rows): may go panel-major */
    WL_NOT_INT8 = 2       /* int8 mode leaves it as it is (the convolutions: 3% of the
                           * encoder's work, on the raw log-mel frames) */
};

/* One weight matrix [N, K] of a model, for passes over all of them. */
typedef struct {
    k_w *w;
    int N, K;
    int flags;          /* WL_* */
    const void *orig;   /* set by wl_convert */
} wl_mat;

/* Appends {w, N, K, flags} to out[0, cap) as entry *n (when it fits) and
 * counts it: how the families list their matrices. */
static inline void wl_mat_add(wl_mat *out, int cap, int *n, k_w *w, int N, int K, int flags) {
    if (*n < cap) {
        wl_mat e = {w, N, K, flags, NULL};
        out[*n] = e;
    }
    (*n)++;
}

/* Converts mats[0, n) in place to the storage of compute mode c (bf16:
 * K_BF16 with lowp set; int8: kern/q8.h's K_Q8; f32: left as they are), in
 * memory owned by wt. Matrices sharing storage (a tied embedding and output
 * projection) are converted once and stay shared. *weight_bytes is updated
 * (the originals stop counting). */
encdec_status wl_convert(ed_wtab *wt, wl_mat *mats, int n, encdec_compute c,
                         size_t *weight_bytes);

/* Repacks into the layouts the kernels read, in memory owned by wt: the
 * decode-only matrices of mats[0, n) stored as f16/bf16 halves go
 * panel-major (kern/matmul_hp.h) where the CPU runs that kernel fast; the
 * others, when in the bf16 mode (K_BF16, lowp) and where the AMX path runs,
 * go into k_gemm's AMX layout (K_BF16A). Elsewhere nothing changes. Shared
 * matrices stay shared. */
encdec_status wl_panelize(ed_wtab *wt, wl_mat *mats, int n);

/* The load-time weight check (wcheck.c): every F32/F16/BF16/F64 tensor of wt
 * is read once; a NaN or Inf anywhere, or in a tensor of WL_CHECK_MIN_N
 * elements or more a value above WL_CHECK_RATIO times the tensor's RMS, is
 * ENCDEC_ERR_FORMAT naming the file, tensor, element (row, column) and value.
 * A corrupted value inside the normal range cannot be told from a weight. */
#define WL_CHECK_MIN_N 4096
#define WL_CHECK_RATIO 500.0
encdec_status wl_check(const ed_wtab *wt);

/* n floats owned by the table (for fused weights), NULL once failed. */
float *wl_alloc(wload *L, size_t n, const char *what);
/* Copies n floats of src (NULL: zeros) to dst. */
void wl_put(float *dst, const float *src, size_t n);

/* Opens the weights at path into wt: a directory holding model.safetensors,
 * model.safetensors.index.json (+ shards) or, when allow_ct2, a CTranslate2
 * model.bin; or a .safetensors file; or (gg not NULL: Whisper) a
 * whisper.cpp ggml file, whose hyper-parameters and vocabulary go to *gg.
 * dir gets the directory of the configuration files, *hf 1 for safetensors,
 * 0 for CTranslate2, WL_GGML for ggml (its tensors carry Hugging Face's
 * names), *file the name for messages (static or borrowed from path). */
#define WL_GGML 2
encdec_status wl_open(ed_wtab *wt, const char *path, int allow_ct2, char *dir, size_t cap,
                      int *hf, const char **file, ggml_whisper *gg);

#endif
