/* gemm.cu - products on cuBLAS: y = x . w^T + b with the epilogue of
 * kern/gemm.h (GELU, or accumulate into y), f32 or half weights.
 *
 * Row-major y[M, N] = x[M, K] . w[N, K]^T is, read column-major, y^T =
 * w^T' . x^T: cuBLAS's C (N x M, ldc = ldy) = op_T(w as K x N, ld K) .
 * x as K x M (ld ldx). */
#include "cuda/dev.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>

#define INV_ROWS 8    /* rows per warp of the batch-invariant and int8 products */
#define INV_WARPS 4   /* warps (output columns) per block */

template <typename H> __device__ H to_half(float v);
template <> __device__ __half to_half<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 to_half<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/* dst[M, K] (dense) = x[M, K] (ldx) in halves. */
template <typename H>
__global__ void k_to_half(H *dst, const float *x, int ldx, int M, int K) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)M * K) return;
    size_t r = i / K, c = i % K;
    dst[i] = to_half<H>(x[r * ldx + c]);
}

__device__ static float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

/* y[r, c] (ldy) = act(y + b[c]) (b NULL: none). */
__global__ void k_bias_act(float *y, int ldy, const float *b, int M, int N, int gelu) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)M * N) return;
    size_t r = i / N, c = i % N;
    float v = y[r * ldy + c] + (b ? b[c] : 0.0f);
    y[r * ldy + c] = gelu ? gelu_erf(v) : v;
}

/* ---- int8 (CU_Q8): kern/q8.h's arithmetic, so the CPU's values ----
 * Row i of x -> xq[i] (Kp bytes: q8_round(x * (127 / max |x|)), 0 past K)
 * and sx[i] = max |x| / 127 (rows with max below FLT_MIN, or not finite:
 * as q8_inv); one block per row. */
__device__ static int q8_round(float v) {
    float r = rintf(v);
    if (r >= -127.0f && r <= 127.0f) return (int)r;
    return r > 0 ? 127 : -127;   /* (NaN: -127, as the CPU's) */
}

__global__ void k_q8_quant_rows(signed char *xq, float *sx, const float *x, int ldx, int K, int Kp) {
    __shared__ float red[32];
    const float *xr = x + (size_t)blockIdx.x * ldx;
    float mx = 0.0f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
        float a = fabsf(xr[k]);
        if (a > mx) mx = a;   /* NaNs skipped */
    }
    mx = cu_block_max(mx, red);
    float inv = 0.0f, s = 0.0f;
    if (mx >= FLT_MIN && mx <= FLT_MAX) {
        s = __fdiv_rn(mx, 127.0f);
        inv = __fdiv_rn(127.0f, mx);
    } else if (mx > FLT_MAX) {
        s = mx;
    }
    if (threadIdx.x == 0) sx[blockIdx.x] = s;
    signed char *d = xq + (size_t)blockIdx.x * Kp;
    for (int k = threadIdx.x; k < Kp; k += blockDim.x) d[k] = (signed char)(k < K ? q8_round(__fmul_rn(xr[k], inv)) : 0);
}

/* As k_matmul_inv, one warp per output column and INV_ROWS rows: each lane
 * sums its 4-byte groups exactly (dp4a), the warp adds the lanes' sums
 * (exact too), and y = fmaf(D, sx * s, b) (+ y's old value, then GELU). */
__global__ void k_matmul_q8(float *y, int ldy, const signed char *xq, const float *sx, const char *w,
                            const float *b, int M, int N, int K, int acc_y, int gelu) {
    int lane = threadIdx.x & 31, n = blockIdx.x * INV_WARPS + (threadIdx.x >> 5);
    int r0 = blockIdx.y * INV_ROWS;
    if (n >= N) return;
    int nr = M - r0 < INV_ROWS ? M - r0 : INV_ROWS, words = (K + 3) / 4;
    size_t rb = 4 + 4 * (size_t)words;
    const char *row = w + (size_t)n * rb;
    const int *wq = (const int *)(row + 4);
    int acc[INV_ROWS];
#pragma unroll
    for (int r = 0; r < INV_ROWS; r++) acc[r] = 0;
    for (int k = lane; k < words; k += 32) {
        int wv = wq[k];
#pragma unroll
        for (int r = 0; r < INV_ROWS; r++) {
            if (r >= nr) break;
            acc[r] = __dp4a(((const int *)(xq + (size_t)(r0 + r) * 4 * words))[k], wv, acc[r]);
        }
    }
    float sn = *(const float *)row;
#pragma unroll
    for (int r = 0; r < INV_ROWS; r++) {
        if (r >= nr) break;   /* (nr is the block's: the warp leaves together) */
        int d = acc[r];
        for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        if (lane == 0) {
            float *yo = y + (size_t)(r0 + r) * ldy + n;
            float v = fmaf((float)d, __fmul_rn(sx[r0 + r], sn), b ? b[n] : 0.0f);
            if (acc_y) v = __fadd_rn(*yo, v);
            *yo = gelu ? gelu_erf(v) : v;
        }
    }
}

static void matmul_q8(cu_dev *g, float *y, int ldy, const float *x, int ldx, const void *w,
                      const float *b, int M, int N, int K, int epi) {
    if (M > 65535 * INV_ROWS) {
        cu_fail(g, "matmul (int8): too many rows");
        return;
    }
    int Kp = (K + 3) & ~3;
    size_t xb = ((size_t)M * Kp + 15) & ~(size_t)15;
    char *ws = (char *)cu_workspace(g, xb + (size_t)M * sizeof(float));
    if (!ws) return;
    signed char *xq = (signed char *)ws;
    float *sx = (float *)(ws + xb);
    CU_LAUNCH(M, 256, 0, g->stream, k_q8_quant_rows)(xq, sx, x, ldx, K, Kp);
    CU_LAUNCHED(g, "matmul (int8): rows quantised");
    dim3 grid((unsigned)((N + INV_WARPS - 1) / INV_WARPS), (unsigned)((M + INV_ROWS - 1) / INV_ROWS));
    CU_LAUNCH(grid, INV_WARPS * 32, 0, g->stream, k_matmul_q8)(y, ldy, xq, sx, (const char *)w, b, M, N, K,
                                                              !!(epi & CU_EPI_ACC), !!(epi & CU_EPI_GELU));
    CU_LAUNCHED(g, "matmul (int8)");
}

void cu_matmul(cu_dev *g, float *y, int ldy, const float *x, int ldx, cu_w w, const float *b,
               int M, int N, int K, int epi) {
    if (M <= 0 || N <= 0) return;
    if (w.t == CU_Q8) {
        matmul_q8(g, y, ldy, x, ldx, w.p, b, M, N, K, epi);
        return;
    }
    const float one = 1.0f, beta = (epi & CU_EPI_ACC) ? 1.0f : 0.0f;
    if (w.t == CU_F32) {
        cu_note_blas(g, "matmul f32",
                     cublasSgemm(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, (const float *)w.p,
                                 K, x, ldx, &beta, y, ldy));
    } else {
        size_t n = (size_t)M * K;
        void *xh = cu_workspace(g, n * 2);
        if (!xh) return;
        if (w.t == CU_F16)
            CU_LAUNCH(cu_blocks(n, 256), 256, 0, g->stream, k_to_half<__half>)((__half *)xh, x, ldx, M, K);
        else
            CU_LAUNCH(cu_blocks(n, 256), 256, 0, g->stream, k_to_half<__nv_bfloat16>)((__nv_bfloat16 *)xh, x,
                                                                               ldx, M, K);
        CU_LAUNCHED(g, "matmul: input to halves");
        cudaDataType ht = w.t == CU_F16 ? CUDA_R_16F : CUDA_R_16BF;
        cu_note_blas(g, "matmul halves",
                     cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w.p, ht, K, xh, ht,
                                  K, &beta, y, CUDA_R_32F, ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    if (b || (epi & CU_EPI_GELU)) {
        size_t n = (size_t)M * N;
        CU_LAUNCH(cu_blocks(n, 256), 256, 0, g->stream, k_bias_act)(y, ldy, b, M, N, !!(epi & CU_EPI_GELU));
        CU_LAUNCHED(g, "matmul epilogue");
    }
}

/* ---- the batch-invariant product (decode steps of several requests) ----
 * One warp per output column n, INV_ROWS rows at a time: lane j sums
 * x[r, k] * w[n, k] over its k (4 consecutive, every 128) in increasing
 * order, then the warp adds the 32 partial sums in a fixed butterfly. Each
 * output's additions depend on K alone, never on M or where the row sits,
 * so a request's logits are the same whatever else shares its pass. The
 * weight row streams once per INV_ROWS rows (a decode step is bound by the
 * weights' bytes, not by arithmetic). */

__device__ static inline void w4(const float *w, int k, float *v) {
    float4 t = *(const float4 *)(w + k);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ static inline void w4(const __half *w, int k, float *v) {
    uint2 t = *(const uint2 *)(w + k);
    float2 a = __half22float2(*(const __half2 *)&t.x), b = __half22float2(*(const __half2 *)&t.y);
    v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}
__device__ static inline void w4(const __nv_bfloat16 *w, int k, float *v) {
    uint2 t = *(const uint2 *)(w + k);
    float2 a = __bfloat1622float2(*(const __nv_bfloat162 *)&t.x);
    float2 b = __bfloat1622float2(*(const __nv_bfloat162 *)&t.y);
    v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}
__device__ static inline float w1(const float *w, int k) { return w[k]; }
__device__ static inline float w1(const __half *w, int k) { return __half2float(w[k]); }
__device__ static inline float w1(const __nv_bfloat16 *w, int k) { return __bfloat162float(w[k]); }

/* vec: K % 4 == 0, ldx % 4 == 0 and x, w 16- (8-) byte aligned. */
template <typename W, bool vec>
__global__ void k_matmul_inv(float *y, int ldy, const float *x, int ldx, const W *w, const float *b,
                             int M, int N, int K) {
    int lane = threadIdx.x & 31, n = blockIdx.x * INV_WARPS + (threadIdx.x >> 5);
    int r0 = blockIdx.y * INV_ROWS;
    if (n >= N) return;
    int nr = M - r0 < INV_ROWS ? M - r0 : INV_ROWS;
    const W *wr = w + (size_t)n * K;
    float acc[INV_ROWS];
#pragma unroll
    for (int r = 0; r < INV_ROWS; r++) acc[r] = 0.0f;
    if (vec) {
        for (int k = lane * 4; k < K; k += 128) {
            float v[4];
            w4(wr, k, v);
#pragma unroll
            for (int r = 0; r < INV_ROWS; r++) {
                if (r >= nr) break;
                float4 t = *(const float4 *)(x + (size_t)(r0 + r) * ldx + k);
                acc[r] = fmaf(t.x, v[0], acc[r]);
                acc[r] = fmaf(t.y, v[1], acc[r]);
                acc[r] = fmaf(t.z, v[2], acc[r]);
                acc[r] = fmaf(t.w, v[3], acc[r]);
            }
        }
    } else {
        for (int k = lane; k < K; k += 32) {
            float v = w1(wr, k);
#pragma unroll
            for (int r = 0; r < INV_ROWS; r++) {
                if (r >= nr) break;
                acc[r] = fmaf(x[(size_t)(r0 + r) * ldx + k], v, acc[r]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < INV_ROWS; r++) {
        if (r >= nr) break;   /* (nr is the block's: the warp leaves together) */
        float s = acc[r];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) y[(size_t)(r0 + r) * ldy + n] = s + (b ? b[n] : 0.0f);
    }
}

template <typename W>
static void launch_inv(cu_dev *g, float *y, int ldy, const float *x, int ldx, const W *w,
                       const float *b, int M, int N, int K, size_t walign) {
    dim3 grid((unsigned)((N + INV_WARPS - 1) / INV_WARPS), (unsigned)((M + INV_ROWS - 1) / INV_ROWS));
    bool vec = K % 4 == 0 && ldx % 4 == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)w & (walign - 1)) == 0;
    if (vec)
        CU_LAUNCH(grid, INV_WARPS * 32, 0, g->stream, k_matmul_inv<W, true>)(y, ldy, x, ldx, w, b, M, N, K);
    else
        CU_LAUNCH(grid, INV_WARPS * 32, 0, g->stream, k_matmul_inv<W, false>)(y, ldy, x, ldx, w, b, M, N, K);
    CU_LAUNCHED(g, "matmul (batch-invariant)");
}

void cu_matmul_inv(cu_dev *g, float *y, int ldy, const float *x, int ldx, cu_w w, const float *b,
                   int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    if (M > 65535 * INV_ROWS) {
        cu_fail(g, "matmul (batch-invariant): too many rows");
        return;
    }
    if (w.t == CU_Q8)   /* exact sums: invariant whatever the rows */
        matmul_q8(g, y, ldy, x, ldx, w.p, b, M, N, K, 0);
    else if (w.t == CU_F32)
        launch_inv(g, y, ldy, x, ldx, (const float *)w.p, b, M, N, K, 16);
    else if (w.t == CU_F16)
        launch_inv(g, y, ldy, x, ldx, (const __half *)w.p, b, M, N, K, 8);
    else
        launch_inv(g, y, ldy, x, ldx, (const __nv_bfloat16 *)w.p, b, M, N, K, 8);
}
