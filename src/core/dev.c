/* dev.c - the device handle over the backends this build has. */
#include "core/dev.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

float *ed_dev_floats(ed_dev *d, size_t a, size_t b, const char *what) {
    size_t n;
    if (!ed_mul_ok(a, b, &n) || !ed_mul_ok(n, sizeof(float), &n)) {
        ed_fail(ENCDEC_ERR_NOMEM, "%s: size overflows", what);
        return NULL;
    }
    return ed_dev_alloc(d, n ? n : sizeof(float), what);
}

#ifdef ENCDEC_HAVE_CUDA
#include "cuda/cuda.h"
#define CU(d) ((cu_dev *)(d))

int ed_dev_built(ed_dev_kind kind) { return kind == ED_DEV_CPU || kind == ED_DEV_CUDA; }

int ed_dev_count(ed_dev_kind kind) {
    return kind == ED_DEV_CPU ? 1 : kind == ED_DEV_CUDA ? cu_device_count(NULL, 0) : 0;
}

encdec_status ed_dev_open(ed_dev_kind kind, int index, ed_dev **out) {
    *out = NULL;
    if (kind == ED_DEV_CPU) return ENCDEC_OK;
    if (kind != ED_DEV_CUDA) return ed_fail(ENCDEC_ERR_ARG, "device kind %d is not cpu or cuda", (int)kind);
    cu_dev *g = NULL;
    encdec_status st = cu_dev_open(index, &g);
    *out = (ed_dev *)g;
    return st;
}

void ed_dev_close(ed_dev *d) { cu_dev_close(CU(d)); }
const char *ed_dev_name(const ed_dev *d) { return d ? cu_dev_name((const cu_dev *)d) : "cpu"; }

void *ed_dev_alloc(ed_dev *d, size_t bytes, const char *what) {
    return d ? cu_alloc(CU(d), bytes, what) : ed_alloc(bytes, what);
}

void ed_dev_free(ed_dev *d, void *p) {
    if (d) cu_free(CU(d), p);
    else free(p);
}

void *ed_dev_host_alloc(ed_dev *d, size_t bytes, const char *what) {
    return d ? cu_host_alloc(CU(d), bytes, what) : ed_alloc(bytes, what);
}

void ed_dev_host_free(ed_dev *d, void *p) {
    if (d) cu_host_free(CU(d), p);
    else free(p);
}

encdec_status ed_dev_upload(ed_dev *d, void *dst, const void *src, size_t bytes) {
    if (d) return cu_upload(CU(d), dst, src, bytes);
    if (bytes) memcpy(dst, src, bytes);
    return ENCDEC_OK;
}

encdec_status ed_dev_download(ed_dev *d, void *dst, const void *src, size_t bytes) {
    if (d) {
        cu_bind(CU(d));
        return cu_download(CU(d), dst, src, bytes);
    }
    if (bytes) memcpy(dst, src, bytes);
    return ENCDEC_OK;
}

void ed_dev_copy(ed_dev *d, void *dst, const void *src, size_t bytes) {
    if (d) {
        cu_bind(CU(d));
        cu_copy(CU(d), dst, src, bytes);
    } else if (bytes) {
        memcpy(dst, src, bytes);
    }
}

encdec_status ed_dev_sync(ed_dev *d) { return d ? cu_sync(CU(d)) : ENCDEC_OK; }

#else   /* a CPU-only build */

int ed_dev_built(ed_dev_kind kind) { return kind == ED_DEV_CPU; }
int ed_dev_count(ed_dev_kind kind) { return kind == ED_DEV_CPU; }

encdec_status ed_dev_open(ed_dev_kind kind, int index, ed_dev **out) {
    (void)index;
    *out = NULL;
    if (kind == ED_DEV_CPU) return ENCDEC_OK;
    return ed_fail(ENCDEC_ERR_ARG, "this build of encdec has no CUDA backend "
                   "(build with cmake -DENCDEC_CUDA=ON and the CUDA toolkit)");
}

void ed_dev_close(ed_dev *d) { (void)d; }
const char *ed_dev_name(const ed_dev *d) { (void)d; return "cpu"; }
void *ed_dev_alloc(ed_dev *d, size_t bytes, const char *what) { (void)d; return ed_alloc(bytes, what); }
void ed_dev_free(ed_dev *d, void *p) { (void)d; free(p); }
void *ed_dev_host_alloc(ed_dev *d, size_t bytes, const char *what) { (void)d; return ed_alloc(bytes, what); }
void ed_dev_host_free(ed_dev *d, void *p) { (void)d; free(p); }

encdec_status ed_dev_upload(ed_dev *d, void *dst, const void *src, size_t bytes) {
    (void)d;
    if (bytes) memcpy(dst, src, bytes);
    return ENCDEC_OK;
}

encdec_status ed_dev_download(ed_dev *d, void *dst, const void *src, size_t bytes) {
    return ed_dev_upload(d, dst, src, bytes);
}

void ed_dev_copy(ed_dev *d, void *dst, const void *src, size_t bytes) {
    (void)d;
    if (bytes) memcpy(dst, src, bytes);
}

encdec_status ed_dev_sync(ed_dev *d) { (void)d; return ENCDEC_OK; }
#endif
