/* wload.c - opening model weights and fetching checked f32 tensors. */
#include "models/wload.h"
#include "base/err.h"
#include "base/fmap.h"

#include <stdio.h>
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
                        t->dtype == ED_I8 ? " (int8-quantized models are not supported yet)" : "");
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
                      int *hf, const char **file) {
    char p[4096];
    if (ed_is_file(path)) {
        size_t n = strlen(path);
        if (n < 12 || strcmp(path + n - 12, ".safetensors") != 0)
            return ed_fail(ENCDEC_ERR_NO_MODEL, "%s: not a model directory or .safetensors file", path);
        snprintf(dir, cap, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, cap, ".");
        *hf = 1;
        *file = ed_basename(path);
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
