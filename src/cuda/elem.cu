/* elem.cu - the row and element kernels: norms, activations, embeddings,
 * windows, argmax, the self cache's append and the cross cache's layout. */
#include "cuda/dev.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#define ROW_THREADS 256

__global__ void k_layernorm_rows(float *y, const float *x, const int *rows, const float *gm,
                                 const float *bt, int D, float eps) {
    __shared__ float red[32];
    const float *xr = x + (size_t)(rows ? rows[blockIdx.x] : blockIdx.x) * D;
    float *yr = y + (size_t)blockIdx.x * D;
    float s = 0.0f;
    for (int j = threadIdx.x; j < D; j += blockDim.x) s += xr[j];
    float mean = cu_block_sum(s, red) / D;
    float q = 0.0f;
    for (int j = threadIdx.x; j < D; j += blockDim.x) q += (xr[j] - mean) * (xr[j] - mean);
    float inv = rsqrtf(cu_block_sum(q, red) / D + eps);
    for (int j = threadIdx.x; j < D; j += blockDim.x) yr[j] = (xr[j] - mean) * inv * gm[j] + bt[j];
}

void cu_layernorm(cu_dev *g, float *y, const float *x, const float *gamma, const float *beta,
                  int M, int D, float eps) {
    if (M <= 0) return;
    CU_LAUNCH(M, ROW_THREADS, 0, g->stream, k_layernorm_rows)(y, x, NULL, gamma, beta, D, eps);
    CU_LAUNCHED(g, "layernorm");
}

void cu_layernorm_gather(cu_dev *g, float *y, const float *x, const int *rows, int n,
                         const float *gamma, const float *beta, int D, float eps) {
    if (n <= 0) return;
    CU_LAUNCH(n, ROW_THREADS, 0, g->stream, k_layernorm_rows)(y, x, rows, gamma, beta, D, eps);
    CU_LAUNCHED(g, "layernorm (gathered rows)");
}

__global__ void k_rmsnorm_rows(float *y, const float *x, const int *rows, const float *gm, int D,
                               float eps) {
    __shared__ float red[32];
    const float *xr = x + (size_t)(rows ? rows[blockIdx.x] : blockIdx.x) * D;
    float *yr = y + (size_t)blockIdx.x * D;
    float q = 0.0f;
    for (int j = threadIdx.x; j < D; j += blockDim.x) q += xr[j] * xr[j];
    float inv = rsqrtf(cu_block_sum(q, red) / D + eps);
    for (int j = threadIdx.x; j < D; j += blockDim.x) yr[j] = xr[j] * inv * gm[j];
}

void cu_rmsnorm(cu_dev *g, float *y, const float *x, const float *gamma, int M, int D, float eps) {
    if (M <= 0) return;
    CU_LAUNCH(M, ROW_THREADS, 0, g->stream, k_rmsnorm_rows)(y, x, NULL, gamma, D, eps);
    CU_LAUNCHED(g, "rmsnorm");
}

void cu_rmsnorm_gather(cu_dev *g, float *y, const float *x, const int *rows, int n,
                       const float *gamma, int D, float eps) {
    if (n <= 0) return;
    CU_LAUNCH(n, ROW_THREADS, 0, g->stream, k_rmsnorm_rows)(y, x, rows, gamma, D, eps);
    CU_LAUNCHED(g, "rmsnorm (gathered rows)");
}

__global__ void k_scale_n(float *x, size_t n, float s) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

void cu_scale(cu_dev *g, float *x, size_t n, float s) {
    if (!n) return;
    CU_LAUNCH(cu_blocks(n, 256), 256, 0, g->stream, k_scale_n)(x, n, s);
    CU_LAUNCHED(g, "scale");
}

__global__ void k_add_n(float *y, const float *x, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}

void cu_add(cu_dev *g, float *y, const float *x, size_t n) {
    if (!n) return;
    CU_LAUNCH(cu_blocks(n, 256), 256, 0, g->stream, k_add_n)(y, x, n);
    CU_LAUNCHED(g, "add");
}

__device__ static float act_of(float v, int act) {
    switch (act) {
    case 0: return v > 0.0f ? v : 0.0f;
    case 1: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case 2: return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    default: return v / (1.0f + expf(-v));
    }
}

__global__ void k_ffn_act(float *h, int ld, int M, int F, int act, int gated) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)M * F) return;
    size_t r = i / F, c = i % F;
    float *row = h + r * ld;
    float v = act_of(row[c], act);
    row[c] = gated ? v * row[c + F] : v;
}

void cu_ffn_act(cu_dev *g, float *h, int ld, int M, int F, int act, int gated) {
    size_t n = (size_t)M * F;
    if (!n) return;
    CU_LAUNCH(cu_blocks(n, 256), 256, 0, g->stream, k_ffn_act)(h, ld, M, F, act, gated);
    CU_LAUNCHED(g, "ffn activation");
}

__device__ static float elem(const void *p, int t, size_t i) {
    if (t == CU_F32) return ((const float *)p)[i];
    if (t == CU_F16) return __half2float(((const __half *)p)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

__global__ void k_embed(float *x, const void *emb, int t, const int *tok, const float *pe,
                        const int *pos, int d) {
    int r = blockIdx.x;
    size_t row = (size_t)tok[r] * d;
    /* int8 (the device layout of kern/q8.h): scale times byte, as k_q8_row */
    const char *q8 = t == CU_Q8 ? (const char *)emb + (size_t)tok[r] * (4 + (((size_t)d + 3) & ~(size_t)3)) : NULL;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        float e = q8 ? *(const float *)q8 * (float)((const signed char *)(q8 + 4))[j] : elem(emb, t, row + j);
        x[(size_t)r * d + j] = e + (pe ? pe[(size_t)pos[r] * d + j] : 0.0f);
    }
}

void cu_embed(cu_dev *g, float *x, cu_w emb, const int *tok, const float *pos_emb, const int *pos,
              int R, int d) {
    if (R <= 0) return;
    CU_LAUNCH(R, ROW_THREADS, 0, g->stream, k_embed)(x, emb.p, emb.t, tok, pos_emb, pos, d);
    CU_LAUNCHED(g, "embedding");
}

__global__ void k_windows(float *col, const float *x, int ldx, int M, int K) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)M * K) return;
    col[i] = x[(i / K) * ldx + i % K];
}

void cu_windows(cu_dev *g, float *col, const float *x, int ldx, int M, int K) {
    size_t n = (size_t)M * K;
    if (!n) return;
    CU_LAUNCH(cu_blocks(n, 256), 256, 0, g->stream, k_windows)(col, x, ldx, M, K);
    CU_LAUNCHED(g, "windows");
}

/* 32 x 32 tiles through shared memory (one column of padding: no bank conflicts). */
__global__ void k_transpose(float *y, const float *x, int rows, int cols) {
    __shared__ float tile[32][33];
    int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
    for (int k = threadIdx.y; k < 32; k += blockDim.y)
        if (r0 + k < rows && c < cols) tile[k][threadIdx.x] = x[(size_t)(r0 + k) * cols + c];
    __syncthreads();
    int r = r0 + threadIdx.x, c0 = blockIdx.x * 32;
    for (int k = threadIdx.y; k < 32; k += blockDim.y)
        if (c0 + k < cols && r < rows) y[(size_t)(c0 + k) * rows + r] = tile[threadIdx.x][k];
}

void cu_transpose(cu_dev *g, float *y, const float *x, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    dim3 grid((cols + 31) / 32, (rows + 31) / 32), block(32, 8);
    CU_LAUNCH(grid, block, 0, g->stream, k_transpose)(y, x, rows, cols);
    CU_LAUNCHED(g, "transpose");
}

/* One block per row; ties go to the lowest index (as a left-to-right scan). */
__global__ void k_argmax_rows(int *idx, const float *x, int ldx, int N) {
    __shared__ float bv[ROW_THREADS];
    __shared__ int bi[ROW_THREADS];
    const float *row = x + (size_t)blockIdx.x * ldx;
    float best = -INFINITY;
    int at = -1;
    for (int j = threadIdx.x; j < N; j += blockDim.x)
        if (at < 0 || row[j] > best) best = row[j], at = j;
    bv[threadIdx.x] = best, bi[threadIdx.x] = at;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            float v = bv[threadIdx.x + s];
            int i = bi[threadIdx.x + s];
            if (i >= 0 && (bi[threadIdx.x] < 0 || v > bv[threadIdx.x] ||
                           (v == bv[threadIdx.x] && i < bi[threadIdx.x])))
                bv[threadIdx.x] = v, bi[threadIdx.x] = i;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) idx[blockIdx.x] = bi[0] < 0 ? 0 : bi[0];
}

void cu_argmax(cu_dev *g, int *idx, const float *x, int ldx, int M, int N) {
    if (M <= 0) return;
    CU_LAUNCH(M, ROW_THREADS, 0, g->stream, k_argmax_rows)(idx, x, ldx, N);
    CU_LAUNCHED(g, "argmax");
}

__global__ void k_kv_self_put(float *kc, float *vc, size_t slot_stride, const float *qkv, int ld,
                              int koff, int voff, const int *pos, const int *slot, int d) {
    int r = blockIdx.x;
    size_t at = (size_t)slot[r] * slot_stride + (size_t)pos[r] * d;
    const float *src = qkv + (size_t)r * ld;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        kc[at + j] = src[koff + j];
        vc[at + j] = src[voff + j];
    }
}

void cu_kv_self_put(cu_dev *g, float *kc, float *vc, size_t slot_stride, const float *qkv,
                    int ldqkv, int koff, int voff, int R, const int *pos, const int *slot, int d) {
    if (R <= 0) return;
    CU_LAUNCH(R, ROW_THREADS, 0, g->stream, k_kv_self_put)(kc, vc, slot_stride, qkv, ldqkv, koff, voff, pos,
                                                    slot, d);
    CU_LAUNCHED(g, "self cache append");
}

/* Block (row, it): column block it of src row -> cache (layer, K|V, head) at frame t0 + row. */
__global__ void k_cross_put(void *cache, int t, int H, int n_ctx, int dh, const float *src,
                            size_t ld, int t0) {
    int r = blockIdx.x, it = blockIdx.y;
    int l = it / (2 * H), kv = (it / H) % 2, h = it % H;
    size_t base = ((((size_t)l * 2 + kv) * H + h) * n_ctx + (size_t)(t0 + r)) * dh;
    const float *s = src + (size_t)r * ld + (size_t)it * dh;
    for (int j = threadIdx.x; j < dh; j += blockDim.x) {
        if (t == CU_F32) ((float *)cache)[base + j] = s[j];
        else if (t == CU_F16) ((__half *)cache)[base + j] = __float2half_rn(s[j]);
        else ((__nv_bfloat16 *)cache)[base + j] = __float2bfloat16_rn(s[j]);
    }
}

void cu_cross_put(cu_dev *g, void *cache, cu_type t, int n_layer, int n_head, int n_ctx, int dh,
                  const float *src, size_t ld, int t0, int rows) {
    if (rows <= 0) return;
    dim3 grid(rows, n_layer * 2 * n_head);
    CU_LAUNCH(grid, dh < 128 ? 64 : 128, 0, g->stream, k_cross_put)(cache, t, n_head, n_ctx, dh, src, ld, t0);
    CU_LAUNCHED(g, "cross cache layout");
}
