/* dev.cu - the device: open and close, memory, copies, the sticky error. */
#include "cuda/dev.h"

extern "C" {
#include "base/err.h"
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cu_note(cu_dev *g, const char *what, cudaError_t e) {
    if (e == cudaSuccess) return 1;
    if (g->err == cudaSuccess) {
        g->err = e;
        snprintf(g->err_msg, sizeof g->err_msg, "%s: %s", what, cudaGetErrorString(e));
    }
    return 0;
}

int cu_note_blas(cu_dev *g, const char *what, cublasStatus_t s) {
    if (s == CUBLAS_STATUS_SUCCESS) return 1;
    if (g->err == cudaSuccess) {
        g->err = cudaErrorUnknown;
        snprintf(g->err_msg, sizeof g->err_msg, "%s: cuBLAS: %s", what, cublasGetStatusString(s));
    }
    return 0;
}

/* The recorded failure as a named error, cleared (a device error is sticky
 * in the driver anyway: the context is then unusable). */
static encdec_status take_error(cu_dev *g) {
    if (g->err == cudaSuccess) return ENCDEC_OK;
    encdec_status st = g->err == cudaErrorMemoryAllocation ? ENCDEC_ERR_NOMEM : ENCDEC_ERR_DEVICE;
    st = ed_fail(st, "CUDA device %d: %s", g->index, g->err_msg);
    g->err = cudaSuccess;
    return st;
}

int cu_device_count(char *why, size_t cap) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (why && cap) snprintf(why, cap, "%s", e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
        return 0;
    }
    return n;
}

encdec_status cu_dev_open(int index, cu_dev **out) {
    *out = NULL;
    char why[160];
    int n = cu_device_count(why, sizeof why);
    if (n == 0) return ed_fail(ENCDEC_ERR_DEVICE, "no CUDA device: %s", why);
    if (index < 0 || index >= n)
        return ed_fail(ENCDEC_ERR_ARG, "CUDA device %d: this machine has %d (0..%d)", index, n, n - 1);
    cu_dev *g = (cu_dev *)calloc(1, sizeof *g);
    if (!g) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: CUDA device handle");
    g->index = index;
    cudaDeviceProp pr;
    if (cu_note(g, "cudaSetDevice", cudaSetDevice(index)) &&
        cu_note(g, "cudaGetDeviceProperties", cudaGetDeviceProperties(&pr, index)) &&
        cu_note(g, "cudaStreamCreate", cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) &&
        cu_note_blas(g, "cublasCreate", cublasCreate(&g->blas)) &&
        cu_note_blas(g, "cublasSetStream", cublasSetStream(g->blas, g->stream))) {
        snprintf(g->name, sizeof g->name, "%s, sm_%d%d, %.0f GiB", pr.name, pr.major, pr.minor,
                 pr.totalGlobalMem / 1073741824.0);
        cu_dev_set_tf32(g, 0);
        if (g->err == cudaSuccess) {
            *out = g;
            return ENCDEC_OK;
        }
    }
    encdec_status st = take_error(g);
    cu_dev_close(g);
    return st;
}

void cu_dev_close(cu_dev *g) {
    if (!g) return;
    if (g->stream) cudaStreamSynchronize(g->stream);
    if (g->ws) cudaFree(g->ws);
    if (g->stage_d) cudaFree(g->stage_d);
    if (g->stage_h) cudaFreeHost(g->stage_h);
    if (g->blas) cublasDestroy(g->blas);
    if (g->stream) cudaStreamDestroy(g->stream);
    free(g);
}

const char *cu_dev_name(const cu_dev *g) { return g->name; }

void cu_dev_set_tf32(cu_dev *g, int on) {
    g->tf32 = on;
    cu_note_blas(g, "cublasSetMathMode",
                 cublasSetMathMode(g->blas, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

void *cu_alloc(cu_dev *g, size_t bytes, const char *what) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        ed_fail(e == cudaErrorMemoryAllocation ? ENCDEC_ERR_NOMEM : ENCDEC_ERR_DEVICE,
                "CUDA device %d: %zu bytes for %s: %s", g->index, bytes, what, cudaGetErrorString(e));
        cudaGetLastError();   /* an allocation failure is not sticky */
        return NULL;
    }
    return p;
}

void cu_free(cu_dev *g, void *p) {
    (void)g;
    if (p) cudaFree(p);
}

void *cu_host_alloc(cu_dev *g, size_t bytes, const char *what) {
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        ed_fail(ENCDEC_ERR_NOMEM, "CUDA device %d: %zu bytes of page-locked host memory for %s: %s",
                g->index, bytes, what, cudaGetErrorString(e));
        cudaGetLastError();
        return NULL;
    }
    return p;
}

void cu_host_free(cu_dev *g, void *p) {
    (void)g;
    if (p) cudaFreeHost(p);
}

encdec_status cu_upload(cu_dev *g, void *dst, const void *src, size_t bytes) {
    if (bytes) cu_note(g, "upload", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g->stream));
    /* src may be gone when the call returns: wait for the copy */
    cu_note(g, "upload", cudaStreamSynchronize(g->stream));
    return take_error(g);
}

encdec_status cu_download(cu_dev *g, void *dst, const void *src, size_t bytes) {
    if (bytes) cu_note(g, "download", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g->stream));
    cu_note(g, "download", cudaStreamSynchronize(g->stream));
    return take_error(g);
}

encdec_status cu_sync(cu_dev *g) {
    cu_note(g, "cudaStreamSynchronize", cudaStreamSynchronize(g->stream));
    return take_error(g);
}

void cu_copy(cu_dev *g, void *dst, const void *src, size_t bytes) {
    if (bytes) cu_note(g, "copy", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, g->stream));
}

void cu_memset0(cu_dev *g, void *p, size_t bytes) {
    if (bytes) cu_note(g, "memset", cudaMemsetAsync(p, 0, bytes, g->stream));
}

void *cu_workspace(cu_dev *g, size_t bytes) {
    if (bytes <= g->ws_bytes) return g->ws;
    if (g->ws) {
        cudaStreamSynchronize(g->stream);   /* the old one may still be read */
        cudaFree(g->ws);
        g->ws = NULL;
        g->ws_bytes = 0;
    }
    if (!cu_note(g, "workspace", cudaMalloc(&g->ws, bytes))) {
        g->ws = NULL;
        return NULL;
    }
    g->ws_bytes = bytes;
    return g->ws;
}

void cu_fail(cu_dev *g, const char *what) { cu_note(g, what, cudaErrorNotSupported); }

void cu_bind(cu_dev *g) {
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != g->index)
        cu_note(g, "cudaSetDevice", cudaSetDevice(g->index));
}

#define STAGE_BYTES ((size_t)4 << 20)

/* Small host arrays (positions, slots, index tables, cache pointers) on
 * their way to a kernel: copied into the pinned ring at once (the caller's
 * array may change when this returns), then queued on the stream, so the
 * kernels queued after see them. A wrap waits for the stream, after which
 * no queued copy or kernel still reads the ring. */
const void *cu_stage(cu_dev *g, const void *host, size_t bytes) {
    if (!bytes) return NULL;
    if (bytes > STAGE_BYTES) {
        cu_fail(g, "stage: more than 4 MiB of indices at once");
        return NULL;
    }
    if (!g->stage_h) {
        if (!cu_note(g, "stage", cudaMallocHost((void **)&g->stage_h, STAGE_BYTES)) ||
            !cu_note(g, "stage", cudaMalloc((void **)&g->stage_d, STAGE_BYTES)))
            return NULL;
        g->stage_off = 0;
    }
    size_t n = (bytes + 255) & ~(size_t)255;
    if (g->stage_off + n > STAGE_BYTES) {
        cu_note(g, "stage", cudaStreamSynchronize(g->stream));
        g->stage_off = 0;
    }
    char *h = g->stage_h + g->stage_off, *d = g->stage_d + g->stage_off;
    g->stage_off += n;
    memcpy(h, host, bytes);
    cu_note(g, "stage", cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, g->stream));
    return d;
}
