/* wload.c - opening model weights and fetching checked f32 tensors. */
#include "models/wload.h"
#include "base/mem.h"
#include "kern/attn_h.h"
#include "kern/gemm.h"
#include "kern/matmul_hp.h"
#include "kern/q8.h"
#include "base/err.h"
#include "base/fmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ed_tensor *wl_find(wload *L, const char *name) {
    if (L->st) return NULL;
    const ed_tensor *t = wtab_get(L->wt, name);
    if (!t) L->st = ed_fail(ENCDEC_ERR_SHAPE, "%s: tensor %s is missing", L->file, name);
    return t;
}

const float *wl_get(wload *L, const char *name, int ndim, const int64_t *e) {
    const ed_tensor *t = wl_find(L, name);
    if (!t) return NULL;
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == e[i];
    if (!ok) {
        char got[96], want[96];
        L->st = ed_fail(ENCDEC_ERR_SHAPE, "%s: tensor %s has shape %s, expected %s",
                        ed_basename(t->file), name, ed_shape_str(got, sizeof got, t->ndim, t->shape),
                        ed_shape_str(want, sizeof want, ndim, e));
        return NULL;
    }
    if (t->dtype != ED_F32 && t->dtype != ED_F16 && t->dtype != ED_BF16) {
        L->st = ed_fail(ENCDEC_ERR_DTYPE, "%s: tensor %s has dtype %s, expected F32, F16 or BF16%s",
                        ed_basename(t->file), name, ed_dtype_name(t->dtype),
                        t->dtype == ED_I8 ? " (an int8 weight is read with its weight_scale; "
                                            "this one has none)" : "");
        return NULL;
    }
    size_t n = t->nbytes / ed_dtype_size(t->dtype);
    L->weight_bytes += n * sizeof(float);
    if (t->dtype == ED_F32 && ((uintptr_t)t->data % sizeof(float)) == 0) return t->data;
    float *dst = wtab_alloc(L->wt, n * sizeof(float), name);
    if (!dst) {
        L->st = ENCDEC_ERR_NOMEM;
        return NULL;
    }
    ed_to_f32(dst, t->data, t->dtype, n);
    return dst;
}

k_w wl_getw2(wload *L, const char *name, int64_t a, int64_t b) {
    k_w none = {NULL, K_F32};
    const ed_tensor *t = wl_find(L, name);
    if (t && (t->dtype == ED_F16 || t->dtype == ED_BF16) && ((uintptr_t)t->data % 2) == 0 &&
        t->ndim == 2 && t->shape[0] == a && t->shape[1] == b) {
        L->weight_bytes += t->nbytes;
        k_w w = {t->data, t->dtype == ED_F16 ? K_F16 : K_BF16};
        return w;
    }
    const float *f = wl_get2(L, name, a, b);   /* f32, or the error */
    if (!f) return none;
    k_w w = {f, K_F32};
    return w;
}

k_w wl_fuse(wload *L, const k_w *parts, const size_t *n, int count, const char *what) {
    k_w out = {NULL, K_F32};
    if (L->st) return out;
    int t = -1;
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        total += n[i];
        if (!n[i] || !parts[i].p) continue;
        if (t < 0) t = parts[i].t;
        else if (t != (int)parts[i].t) t = K_F32;
    }
    out.t = t < 0 ? K_F32 : (k_wtype)t;
    size_t es = k_w_size(out.t);
    char *dst = wtab_alloc(L->wt, total * es, what);
    if (!dst) {
        L->st = ENCDEC_ERR_NOMEM;
        return out;
    }
    /* the parts' bytes were counted when fetched; count the fused copy instead */
    for (int i = 0; i < count; i++)
        if (parts[i].p) L->weight_bytes -= n[i] * k_w_size(parts[i].t);
    L->weight_bytes += total * es;
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        char *d = dst + at * es;
        if (!parts[i].p) memset(d, 0, n[i] * es);
        else if (parts[i].t == out.t) memcpy(d, parts[i].p, n[i] * es);
        else k_h_to_f32((float *)d, parts[i].p, n[i], parts[i].t == K_BF16);   /* out is f32 */
        at += n[i];
    }
    out.p = dst;
    return out;
}

const float *wl_get1(wload *L, const char *name, int64_t a) {
    int64_t e[1] = {a};
    return wl_get(L, name, 1, e);
}

const float *wl_get2(wload *L, const char *name, int64_t a, int64_t b) {
    int64_t e[2] = {a, b};
    return wl_get(L, name, 2, e);
}

const float *wl_get3(wload *L, const char *name, int64_t a, int64_t b, int64_t c) {
    int64_t e[3] = {a, b, c};
    return wl_get(L, name, 3, e);
}

float *wl_alloc(wload *L, size_t n, const char *what) {
    if (L->st) return NULL;
    float *p = wtab_alloc(L->wt, n * sizeof(float), what);
    if (!p) L->st = ENCDEC_ERR_NOMEM;
    return p;
}

void wl_put(float *dst, const float *src, size_t n) {
    if (src) memcpy(dst, src, n * sizeof *dst);
    else memset(dst, 0, n * sizeof *dst);
}

encdec_status wl_open(ed_wtab *wt, const char *path, int allow_ct2, char *dir, size_t cap,
                      int *hf, const char **file, ggml_whisper *gg) {
    char p[4096];
    if (ed_is_file(path)) {
        size_t n = strlen(path);
        snprintf(dir, cap, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, cap, ".");
        *file = ed_basename(path);
        if (ggml_is_file(path)) {
            if (!gg)
                return ed_fail(ENCDEC_ERR_NO_MODEL, "%s: a whisper.cpp ggml file holds a Whisper "
                               "model; this is the T5 family's loader", path);
            *hf = WL_GGML;
            return ggml_load_file(wt, path, gg);
        }
        if (n < 12 || strcmp(path + n - 12, ".safetensors") != 0)
            return ed_fail(ENCDEC_ERR_NO_MODEL, "%s: not a model directory, a .safetensors file "
                           "or a whisper.cpp ggml file", path);
        *hf = 1;
        return st_load_file(wt, path);
    }
    if (!ed_is_dir(path)) return ed_fail(ENCDEC_ERR_IO, "%s: no such file or directory", path);
    snprintf(dir, cap, "%s", path);
    int has_ct2 = ed_is_file(ed_path_join(p, sizeof p, path, "model.bin"));
    if (has_ct2 && allow_ct2) {
        *hf = 0;
        *file = "model.bin";
        return ct2_load_file(wt, p);
    }
    if (ed_is_file(ed_path_join(p, sizeof p, path, "model.safetensors")) ||
        ed_is_file(ed_path_join(p, sizeof p, path, "model.safetensors.index.json"))) {
        *hf = 1;
        *file = ed_is_file(ed_path_join(p, sizeof p, path, "model.safetensors"))
                    ? "model.safetensors" : "model.safetensors.index.json";
        return st_load_dir(wt, path);
    }
    if (has_ct2)
        return ed_fail(ENCDEC_ERR_NO_MODEL, "%s: a CTranslate2 model.bin is read for Whisper only; "
                       "use this model's Hugging Face safetensors directory", path);
    return ed_fail(ENCDEC_ERR_NO_MODEL,
                   "%s: no model found (expected model.safetensors, "
                   "model.safetensors.index.json or a CTranslate2 model.bin)", path);
}

/* One matrix into bf16 (rows through an f32 buffer) or int8. */
static encdec_status convert_one(ed_wtab *wt, k_w *w, int N, int K, encdec_compute c) {
    if (c == ENCDEC_COMPUTE_BF16) {
        if (w->t == K_BF16) {
            w->lowp = 1;
            return ENCDEC_OK;
        }
        uint16_t *dst = wtab_alloc(wt, (size_t)N * K * 2, "bf16 weights");
        float *row = ed_alloc((size_t)K * sizeof(float), "weight row");
        if (!dst || !row) {
            free(row);
            return ENCDEC_ERR_NOMEM;
        }
        for (int n = 0; n < N; n++) {
            k_w_row(row, *w, n, N, K);
            k_f32_to_h(dst + (size_t)n * K, row, (size_t)K, 1);
        }
        free(row);
        k_w out = {dst, K_BF16, 1};
        *w = out;
        return ENCDEC_OK;
    }
    if (K > K_Q8_MAX_K)
        return ed_fail(ENCDEC_ERR_SHAPE, "int8 weights: rows of %d are longer than %d", K,
                       K_Q8_MAX_K);
    void *dst = wtab_alloc(wt, k_q8_bytes(N, K), "int8 weights");
    if (!dst) return ENCDEC_ERR_NOMEM;
    k_q8 q = k_q8_pack(dst, *w, N, K);
    k_w out = {q.data, K_Q8, 0};
    *w = out;
    return ENCDEC_OK;
}

static size_t mat_bytes(k_w w, int N, int K) {
    return w.t == K_Q8 ? k_q8_bytes(N, K) : w.t == K_BF16A ? k_gemm_amx_bytes(N, K)
                                                        : (size_t)N * K * k_w_size(w.t);
}

encdec_status wl_convert(ed_wtab *wt, wl_mat *mats, int n, encdec_compute c,
                         size_t *weight_bytes) {
    if (c == ENCDEC_COMPUTE_F32) return ENCDEC_OK;
    if (c != ENCDEC_COMPUTE_BF16 && c != ENCDEC_COMPUTE_INT8)
        return ed_fail(ENCDEC_ERR_ARG, "compute mode %d is not one of f32, bf16, int8", (int)c);
    for (int i = 0; i < n; i++) {
        k_w *w = mats[i].w, old = *w;
        int shared = -1;
        for (int j = 0; j < i && shared < 0; j++)
            if (mats[j].orig == old.p) shared = j;
        mats[i].orig = old.p;
        if (shared >= 0) {   /* a second view of a converted matrix */
            *w = *mats[shared].w;
            continue;
        }
        if (c == ENCDEC_COMPUTE_INT8 && (mats[i].flags & WL_NOT_INT8)) continue;
        *weight_bytes -= mat_bytes(old, mats[i].N, mats[i].K);
        encdec_status st = convert_one(wt, w, mats[i].N, mats[i].K, c);
        if (st) return st;
        if (w->p != old.p) wtab_drop(wt, old.p, mat_bytes(old, mats[i].N, mats[i].K));
        *weight_bytes += mat_bytes(*w, mats[i].N, mats[i].K);
    }
    return ENCDEC_OK;
}

/* One matrix of the bf16 mode read by many rows into the AMX layout. */
static encdec_status amx_pack(ed_wtab *wt, k_w *w, int N, int K) {
    void *dst = wtab_alloc(wt, k_gemm_amx_bytes(N, K), "AMX-packed weights");
    if (!dst) return ENCDEC_ERR_NOMEM;
    k_gemm_amx_pack(dst, *w, N, K);
    wtab_drop(wt, w->p, (size_t)N * K * 2);
    k_w out = {dst, K_BF16A, 1};
    *w = out;
    return ENCDEC_OK;
}

encdec_status wl_panelize(ed_wtab *wt, wl_mat *mats, int n) {
    int hp = k_hp_fast(), amx = k_gemm_has_amx();
    if (!hp && !amx) return ENCDEC_OK;
    for (int i = 0; i < n; i++) {
        k_w *w = mats[i].w, old = *w;
        mats[i].orig = old.p;
        int shared = -1;
        for (int j = 0; j < i && shared < 0; j++)
            if (mats[j].orig == old.p) shared = j;
        if (shared >= 0) {
            *w = *mats[shared].w;
            continue;
        }
        if (!(mats[i].flags & WL_DECODE_ONLY)) {
            if (amx && old.t == K_BF16 && old.lowp) {
                encdec_status st = amx_pack(wt, w, mats[i].N, mats[i].K);
                if (st) return st;
            }
            continue;
        }
        if (!hp || (old.t != K_F16 && old.t != K_BF16)) continue;
        uint16_t *dst = wtab_alloc(wt, k_hp_bytes(mats[i].N, mats[i].K), "panel-major weights");
        if (!dst) return ENCDEC_ERR_NOMEM;
        if (k_hp_pack(dst, old, mats[i].N, mats[i].K) != 0)
            return ed_fail(ENCDEC_ERR_SHAPE, "cannot repack a %d x %d weight matrix", mats[i].N,
                           mats[i].K);
        k_w out = {dst, old.t == K_F16 ? K_F16P : K_BF16P, old.lowp};
        *w = out;
        wtab_drop(wt, old.p, (size_t)mats[i].N * mats[i].K * 2);
    }
    return ENCDEC_OK;
}
