/* dev.h - inside the CUDA backend (C++, its .cu files only): the device
 * handle and the error bookkeeping every call shares. */
#ifndef ED_CUDA_DEV_H
#define ED_CUDA_DEV_H

#include "cuda/cuda.h"
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>

struct cu_dev {
    int index;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *ws;          /* workspace: inputs converted to halves for a product */
    size_t ws_bytes;
    int tf32;
    cudaError_t err;   /* the first failure since the last check, sticky */
    char err_msg[256];
    char name[320];   /* "<device name>, sm_XY, N GiB" */
    /* staging (cu_stage): a pinned host ring and its device twin, bump
     * allocated; the stream is drained when the ring wraps */
    char *stage_h, *stage_d;
    size_t stage_off;
};

/* A launch, kernel last (it may be a template's instance):
 * CU_LAUNCH(grid, block, shared bytes, stream, kernel)(arguments); and a
 * kernel's dynamic shared memory. The SIMT test build (cuda/simt/simt.h)
 * spells both its own way. */
#ifndef CU_LAUNCH
#define CU_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<(grid), (block), (smem), (stream)>>>
#define CU_SHARED_DYN(T, name) extern __shared__ T name[]
#endif

/* Records e (the first failure only) under what; returns e == cudaSuccess. */
int cu_note(cu_dev *g, const char *what, cudaError_t e);
int cu_note_blas(cu_dev *g, const char *what, cublasStatus_t s);
/* After a launch: records a launch error under what. */
#define CU_LAUNCHED(g, what) cu_note((g), (what), cudaGetLastError())
/* A workspace of at least bytes (grown, never shrunk); NULL after a failure. */
void *cu_workspace(cu_dev *g, size_t bytes);

/* Sum (max) of v over the block (blockDim.x a multiple of 32, <= 1024);
 * every thread gets it. red: 32 floats of shared memory. */
__device__ inline float cu_block_sum(float v, float *red) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();   /* red may still be read by a previous call */
    if (lane == 0) red[w] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ inline float cu_block_max(float v, float *red) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) red[w] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static inline int cu_blocks(size_t n, int threads) { return (int)((n + threads - 1) / threads); }

#endif
