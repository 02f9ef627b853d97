/* gemm.cu - products on cuBLAS: y = x . w^T + b with the epilogue of
 * kern/gemm.h (GELU, or accumulate into y), f32 or half weights.
 *
 * Row-major y[M, N] = x[M, K] . w[N, K]^T is, read column-major, y^T =
 * w^T' . x^T: cuBLAS's C (N x M, ldc = ldy) = op_T(w as K x N, ld K) .
 * x as K x M (ld ldx). */
#include "cuda/dev.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

void cu_matmul(cu_dev *g, float *y, int ldy, const float *x, int ldx, cu_w w, const float *b,
               int M, int N, int K, int epi) {
    if (M <= 0 || N <= 0) return;
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
            k_to_half<__half><<<cu_blocks(n, 256), 256, 0, g->stream>>>((__half *)xh, x, ldx, M, K);
        else
            k_to_half<__nv_bfloat16><<<cu_blocks(n, 256), 256, 0, g->stream>>>((__nv_bfloat16 *)xh, x,
                                                                               ldx, M, K);
        CU_LAUNCHED(g, "matmul: input to halves");
        cudaDataType ht = w.t == CU_F16 ? CUDA_R_16F : CUDA_R_16BF;
        cu_note_blas(g, "matmul halves",
                     cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w.p, ht, K, xh, ht,
                                  K, &beta, y, CUDA_R_32F, ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    if (b || (epi & CU_EPI_GELU)) {
        size_t n = (size_t)M * N;
        k_bias_act<<<cu_blocks(n, 256), 256, 0, g->stream>>>(y, ldy, b, M, N, !!(epi & CU_EPI_GELU));
        CU_LAUNCHED(g, "matmul epilogue");
    }
}
