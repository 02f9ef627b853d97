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
#include <mma.h>
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

/* ---- the same on tensor cores (f16 / bf16 weights, K % 16 == 0:
 * CU_INV_TC) ----
 * x goes to the weight's type once (rows padded with zeros to 16). A warp
 * owns 16 output columns and up to TC_TILES tiles of 16 rows: for each 16
 * k in increasing order, one fragment of its 16 weight rows (read in place;
 * the last strip's N % 16 rows staged in shared memory with zero rows
 * after them, 16 k at a time) and one mma per row tile. Every output's sum is the same chain of mma
 * steps over k whatever M is and wherever its row sits (the rows of a tile
 * do not mix), so the product keeps k_matmul_inv's contract; the weights
 * stream once per 16 * TC_TILES rows instead of once per INV_ROWS. */
#define TC_WARPS 4   /* warps (16-column strips) per block */
#define TC_TILES 4   /* 16-row tiles per warp: 64 rows a block */

/* The weight fragment of columns n0.. (rows of w) at k: in place, or for
 * the last strip (fewer than 16 rows left) through the warp's tile wt,
 * its missing rows zero. */
template <typename H, typename F>
__device__ __forceinline__ void tc_load_w(F &fb, const H *w, H *wt, int n0, int N, int K, int k, int lane) {
    if (n0 + 16 <= N) {
        nvcuda::wmma::load_matrix_sync(fb, w + (size_t)n0 * K + k, K);
        return;
    }
    for (int i = lane; i < 256; i += 32) {   /* wt[r * 16 + c]: row n0 + r, k + c */
        int r = i >> 4, c = i & 15;
        wt[i] = n0 + r < N ? w[(size_t)(n0 + r) * K + k + c] : H{};
    }
    __syncwarp();
    nvcuda::wmma::load_matrix_sync(fb, wt, 16);
    __syncwarp();   /* (read by every lane before the next k's stores) */
}

template <typename H>
__global__ void k_matmul_inv_tc(float *y, int ldy, const H *xh, int Mp, const H *w, const float *b,
                                int M, int N, int K) {
    using namespace nvcuda;
    __shared__ __align__(32) float st[TC_WARPS][16 * 16];
    __shared__ __align__(32) H wt[TC_WARPS][16 * 16];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int n0 = (blockIdx.x * TC_WARPS + warp) * 16, r0 = blockIdx.y * 16 * TC_TILES;
    if (n0 >= N) return;   /* the whole warp */
    int nt = (Mp - r0) / 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[TC_TILES];
    wmma::fragment<wmma::matrix_a, 16, 16, 16, H, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, H, wmma::col_major> fb;
#pragma unroll
    for (int t = 0; t < TC_TILES; t++) wmma::fill_fragment(acc[t], 0.0f);
    for (int k = 0; k < K; k += 16) {
        tc_load_w(fb, w, wt[warp], n0, N, K, k, lane);
#pragma unroll
        for (int t = 0; t < TC_TILES; t++) {
            if (t >= nt) break;   /* (nt is the block's: the warp stays together) */
            wmma::load_matrix_sync(fa, xh + (size_t)(r0 + 16 * t) * K + k, K);
            wmma::mma_sync(acc[t], fa, fb, acc[t]);
        }
    }
#pragma unroll
    for (int t = 0; t < TC_TILES; t++) {
        if (t >= nt) break;
        wmma::store_matrix_sync(st[warp], acc[t], 16, wmma::mem_row_major);
        __syncwarp();
        for (int i = lane; i < 256; i += 32) {
            int r = r0 + 16 * t + (i >> 4), c = n0 + (i & 15);
            if (r < M && c < N) y[(size_t)r * ldy + c] = st[warp][i] + (b ? b[c] : 0.0f);
        }
        __syncwarp();
    }
}

template <typename H>
static void launch_inv_tc(cu_dev *g, float *y, int ldy, const float *x, int ldx, const H *w,
                          const float *b, int M, int N, int K) {
    if (((uintptr_t)w & 31) != 0) {
        cu_fail(g, "matmul (batch-invariant, tensor cores): the weights are not 32-byte aligned");
        return;
    }
    int Mp = (M + 15) & ~15;
    H *xh = (H *)cu_workspace(g, (size_t)Mp * K * sizeof(H));
    if (!xh) return;
    CU_LAUNCH(cu_blocks((size_t)M * K, 256), 256, 0, g->stream, k_to_half<H>)(xh, x, ldx, M, K);
    CU_LAUNCHED(g, "matmul (batch-invariant, tensor cores): input to halves");
    if (Mp > M) cu_note(g, "matmul (batch-invariant, tensor cores): padding rows",
                        cudaMemsetAsync(xh + (size_t)M * K, 0, (size_t)(Mp - M) * K * sizeof(H), g->stream));
    int strips = (N + 15) / 16;
    dim3 grid((unsigned)((strips + TC_WARPS - 1) / TC_WARPS), (unsigned)((Mp + 16 * TC_TILES - 1) / (16 * TC_TILES)));
    CU_LAUNCH(grid, TC_WARPS * 32, 0, g->stream, k_matmul_inv_tc<H>)(y, ldy, xh, Mp, w, b, M, N, K);
    CU_LAUNCHED(g, "matmul (batch-invariant, tensor cores)");
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
    else if (CU_INV_TC(w.t, K) && w.t == CU_F16)
        launch_inv_tc(g, y, ldy, x, ldx, (const __half *)w.p, b, M, N, K);
    else if (CU_INV_TC(w.t, K))
        launch_inv_tc(g, y, ldy, x, ldx, (const __nv_bfloat16 *)w.p, b, M, N, K);
    else if (w.t == CU_F16)
        launch_inv(g, y, ldy, x, ldx, (const __half *)w.p, b, M, N, K, 8);
    else
        launch_inv(g, y, ldy, x, ldx, (const __nv_bfloat16 *)w.p, b, M, N, K, 8);
}
