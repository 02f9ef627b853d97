/* test_simt.cpp - the SIMT test build's own guarantees (src/cuda/simt/;
 * built with -DENCDEC_CUDA_SIMT=ON only): kernels written here, as CUDA
 * code, that a GPU runs one way and a mistake would run another.
 *   - a block reduction through shared memory and warp shuffles gives the
 *     sum (barriers and shuffles meet as on the GPU); a missing barrier
 *     before reading another thread's shared value gives stale reads;
 *   - shared memory (static and dynamic) that a block reads before writing
 *     it holds NaN bytes, not another block's or launch's values;
 *   - threads waiting at different meeting points stop the launch, named,
 *     and so do two halves of a block at two different __syncthreads();
 *   - a shuffle that reads a lane which has returned stops the launch;
 *   - launches the GPU refuses (2048 threads, 64 KiB of dynamic shared
 *     memory, a grid.y of 65536) are refused; a host pointer is refused;
 *   - a kernel reading past its buffer meets the guard page (a child);
 *   - the cuBLAS model: each transposition against a plain loop, and a
 *     leading dimension cuBLAS rejects is rejected;
 *   - the warp matrix calls (mma.h): a 16 x 16 x 16 bf16 product with a
 *     column-major B against a loop; a misaligned tile, a warp of 16
 *     lanes and lanes loading different tiles each stop the launch. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

extern "C" {
#include "check.h"
}

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__global__ void k_sum(float *out, const float *x, int n) {
    __shared__ float part[32];
    float v = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (unsigned w = 0; w < blockDim.x / 32; w++) s += part[w];
        out[blockIdx.x] = s;
    }
}

__global__ void k_diverge(float *out) {
    float v = (float)threadIdx.x;
    if (threadIdx.x & 1) __syncthreads();   /* the odd threads at the barrier, */
    v = __shfl_xor_sync(0xffffffffu, v, 1);   /* the even ones at the shuffle */
    out[threadIdx.x] = v;
}

__global__ void k_branches(float *out) {
    if (threadIdx.x < 32) {
        out[threadIdx.x] = 1.0f;
        __syncthreads();
    } else {
        __syncthreads();   /* another barrier: the two halves never meet */
        out[threadIdx.x] = 2.0f;
    }
}

__global__ void k_early(float *out) {
    if (threadIdx.x == 5) return;
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);   /* lane 4 reads lane 5 */
}

__global__ void k_nobarrier(float *out) {
    __shared__ float s[64];
    s[threadIdx.x] = (float)threadIdx.x + 1.0f;
    /* (a __syncthreads() belongs here) */
    out[blockIdx.x * 64 + threadIdx.x] = s[(threadIdx.x + 1) % 64];
}

__global__ void k_touch(float *out, const float *x, int n) { out[0] = x[n]; }

/* Block 0 writes its static and dynamic shared arrays (when asked), every
 * block reads them: a block that did not write reads what the GPU left. */
__global__ void k_unwritten(float *out, int write) {
    __shared__ float s[32];
    CU_SHARED_DYN(float, d);
    if (write && blockIdx.x == 0) s[threadIdx.x] = 1.0f, d[threadIdx.x] = 2.0f;
    __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x];
    out[blockIdx.x * 64 + 32 + threadIdx.x] = d[threadIdx.x];
}

static void *dev(size_t bytes) {
    void *p = NULL;
    CHECK_EQ_INT(cudaMalloc(&p, bytes), cudaSuccess);
    return p;
}

static void reductions() {
    const int n = 1000;
    float h[n], want = 0.0f;
    for (int i = 0; i < n; i++) h[i] = (float)(i % 7) - 3.0f, want += h[i];
    float *x = (float *)dev(sizeof h), *out = (float *)dev(4 * sizeof(float));
    CHECK_EQ_INT(cudaMemcpyAsync(x, h, sizeof h, cudaMemcpyHostToDevice, NULL), cudaSuccess);
    CU_LAUNCH(3, 128, 0, NULL, k_sum)(out, x, n);
    CHECK_EQ_INT(cudaGetLastError(), cudaSuccess);
    float got[3];
    CHECK_EQ_INT(cudaMemcpyAsync(got, out, sizeof got, cudaMemcpyDeviceToHost, NULL), cudaSuccess);
    for (int b = 0; b < 3; b++) CHECK_NEAR(got[b], want, 1e-3);
    cudaFree(x), cudaFree(out);
    printf("a block's sum through shuffles and shared memory: right\n");

    /* a missing barrier shows: some thread reads its neighbour's slot before
     * the neighbour writes it (threads run one after another between
     * meetings, in either order) */
    float *o2 = (float *)dev(256 * sizeof(float)), h2[256];
    int stale = 0;
    for (int rep = 0; rep < 2; rep++) {
        CU_LAUNCH(4, 64, 0, NULL, k_nobarrier)(o2);
        cudaMemcpyAsync(h2, o2, sizeof h2, cudaMemcpyDeviceToHost, NULL);
        for (int i = 0; i < 256; i++) stale += h2[i] != (float)((i % 64 + 1) % 64) + 1.0f;
    }
    CHECK(stale > 0);
    cudaFree(o2);
    printf("a missing barrier: %d stale reads\n", stale);

    /* shared memory a block reads before it writes holds NaN bytes, static
     * and dynamic alike: not block 0's values, not the last launch's */
    float *o3 = (float *)dev(3 * 64 * sizeof(float)), h3[3 * 64];
    int unwritten = 0, written = 0;
    for (int write = 1; write >= 0; write--) {
        CU_LAUNCH(3, 32, 32 * sizeof(float), NULL, k_unwritten)(o3, write);
        CHECK_EQ_INT(cudaGetLastError(), cudaSuccess);
        cudaMemcpyAsync(h3, o3, sizeof h3, cudaMemcpyDeviceToHost, NULL);
        for (int i = 0; i < 3 * 64; i++) {
            int mine = write && i < 64;   /* block 0's own writes */
            if (mine) written += h3[i] == (i < 32 ? 1.0f : 2.0f);
            else unwritten += isnan(h3[i]) != 0;
        }
    }
    CHECK_EQ_INT(written, 64);
    CHECK_EQ_INT(unwritten, 5 * 64);
    cudaFree(o3);
    printf("shared memory read before the block writes it: %d of %d NaN\n", unwritten, 5 * 64);
}

static void misuse() {
    float *out = (float *)dev(64 * sizeof(float)), host[4];
    CU_LAUNCH(1, 64, 0, NULL, k_diverge)(out);
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorLaunchFailure);
    CU_LAUNCH(1, 64, 0, NULL, k_branches)(out);
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorLaunchFailure);
    CU_LAUNCH(1, 32, 0, NULL, k_early)(out);
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorLaunchFailure);
    CU_LAUNCH(1, 2048, 0, NULL, k_early)(out);
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorInvalidConfiguration);
    CU_LAUNCH(1, 32, 64 << 10, NULL, k_early)(out);
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorInvalidConfiguration);
    CU_LAUNCH(dim3(1, 65536), 32, 0, NULL, k_early)(out);
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorInvalidConfiguration);
    CU_LAUNCH(1, 1, 0, NULL, k_touch)(out, host, 0);
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorIllegalAddress);
    CHECK_EQ_INT(cudaMemcpyAsync(out, host, sizeof host, cudaMemcpyDeviceToHost, NULL), cudaErrorInvalidValue);
    cudaGetLastError();

    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {   /* 1000 floats, the 1024th read: past the buffer's pages */
        float *x = (float *)dev(1000 * sizeof(float));
        CU_LAUNCH(1, 1, 0, NULL, k_touch)(out, x, 1024);
        _exit(0);
    }
    close(fds[1]), close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
    cudaFree(out);
    printf("divergent meetings, two barriers in two branches, a shuffle with a lane gone, refused launches, a host pointer, a read "
           "past the buffer: each stopped\n");
}

static void blas() {
    cublasHandle_t h;
    CHECK_EQ_INT(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    const int m = 5, n = 3, k = 7, ld = 9;   /* leading dimensions wider than the rows */
    float A[ld * ld], B[ld * ld], C[ld * n], one = 1.0f, zero = 0.0f;
    for (int i = 0; i < ld * ld; i++) A[i] = (float)((i * 7) % 11) - 5.0f, B[i] = (float)((i * 5) % 13) - 6.0f;
    float *dA = (float *)dev(sizeof A), *dB = (float *)dev(sizeof B), *dC = (float *)dev(sizeof C);
    cudaMemcpyAsync(dA, A, sizeof A, cudaMemcpyHostToDevice, NULL);
    cudaMemcpyAsync(dB, B, sizeof B, cudaMemcpyHostToDevice, NULL);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            CHECK_EQ_INT(cublasSgemm(h, (cublasOperation_t)ta, (cublasOperation_t)tb, m, n, k, &one, dA, ld, dB,
                                     ld, &zero, dC, ld),
                         CUBLAS_STATUS_SUCCESS);
            cudaMemcpyAsync(C, dC, sizeof C, cudaMemcpyDeviceToHost, NULL);
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++) {
                    double s = 0;
                    for (int p = 0; p < k; p++)
                        s += (double)(ta ? A[i * ld + p] : A[p * ld + i]) * (tb ? B[p * ld + j] : B[j * ld + p]);
                    CHECK_NEAR(C[j * ld + i], s, 1e-4);
                }
        }
    /* lda below the rows of A as stored (op N: m): rejected */
    CHECK_EQ_INT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, m - 1, dB, ld, &zero, dC, ld),
                 CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(dA), cudaFree(dB), cudaFree(dC);
    cublasDestroy(h);
    printf("cuBLAS model: the four transpositions as a loop; a short leading dimension rejected\n");
}

/* c[16 x 16] = a[16 x 16] (row-major) . b (16 x 16, column-major: b's
 * column j at b + j * 16), a + off and lane-dependent a when asked. */
__global__ void k_mma(float *c, const __nv_bfloat16 *a, const __nv_bfloat16 *b, int off, int by_lane) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, a + off + (by_lane ? 256 * (threadIdx.x & 1) : 0), 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

static void tensor_cores() {
    __nv_bfloat16 ha[512], hb[256];
    for (int i = 0; i < 512; i++) ha[i] = __float2bfloat16_rn((float)((i * 7) % 13 - 6) / 4);
    for (int i = 0; i < 256; i++) hb[i] = __float2bfloat16_rn((float)((i * 5) % 11 - 5) / 8);
    __nv_bfloat16 *a = (__nv_bfloat16 *)dev(sizeof ha), *b = (__nv_bfloat16 *)dev(sizeof hb);
    float *c = (float *)dev(256 * sizeof(float)), got[256];
    cudaMemcpyAsync(a, ha, sizeof ha, cudaMemcpyHostToDevice, NULL);
    cudaMemcpyAsync(b, hb, sizeof hb, cudaMemcpyHostToDevice, NULL);
    CU_LAUNCH(1, 32, 0, NULL, k_mma)(c, a, b, 0, 0);
    CHECK_EQ_INT(cudaGetLastError(), cudaSuccess);
    cudaMemcpyAsync(got, c, sizeof got, cudaMemcpyDeviceToHost, NULL);
    int bad = 0;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            double s = 0;
            for (int k = 0; k < 16; k++)
                s += (double)__bfloat162float(ha[i * 16 + k]) * __bfloat162float(hb[j * 16 + k]);
            bad += fabs(got[i * 16 + j] - s) > 1e-5;
        }
    CHECK_EQ_INT(bad, 0);
    CU_LAUNCH(1, 32, 0, NULL, k_mma)(c, a, b, 8, 0);    /* 16 bytes: not 256-bit aligned */
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorLaunchFailure);
    CU_LAUNCH(1, 16, 0, NULL, k_mma)(c, a, b, 0, 0);    /* half a warp */
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorLaunchFailure);
    CU_LAUNCH(1, 32, 0, NULL, k_mma)(c, a, b, 0, 1);    /* odd lanes load another tile */
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorLaunchFailure);
    cudaFree(a), cudaFree(b), cudaFree(c);
    printf("warp matrix calls: a bf16 tile product as a loop; a misaligned tile, half a warp and "
           "lanes with different tiles stopped\n");
}

int main() {
    reductions();
    tensor_cores();
    misuse();
    blas();
    return check_done();
}
