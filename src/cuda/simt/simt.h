/* simt.h - the CUDA backend's own source run on the CPU (cmake
 * -DENCDEC_CUDA_SIMT=ON, a test build only; never a user's).
 *
 * The .cu files of src/cuda/ are compiled as C++ by the host compiler with this folder
 * ahead on the include path: its cuda_runtime.h, cuda_fp16.h, cuda_bf16.h
 * and cublas_v2.h are this header. The kernels then run as written, each
 * thread of a block a fiber of its own (simt.cpp): __syncthreads() and
 * the warp's shuffles are real meeting points, __shared__ is one copy per
 * block (NaN bytes when the block starts), a launch's configuration is
 * held to the GPU's limits (threads per block, grid, shared memory), and
 * cuBLAS is a plain column-major model
 * that checks its arguments as cuBLAS does. So every kernel and every
 * cuBLAS call of the backend is checked against its CPU twin
 * (tests/cuda/test_cuda.c) and the models' goldens on any machine.
 *
 * What it finds: wrong indices and strides, missing or misplaced barriers
 * (threads waiting at different ones stop the launch, named), shuffles
 * with lanes gone, reads and writes past a device buffer (a guard page
 * after each), host pointers given to kernels, launches the GPU refuses,
 * cuBLAS calls with a transposition or leading dimension it rejects. What
 * it does not: speed, races between threads that the fiber order hides,
 * the GPU's float rounding of expf and friends (the C library's here),
 * asynchrony (each call ends before it returns).
 *
 * cuda/emu/ is the other test build: cuda/cuda.h itself on the CPU ops,
 * with device memory closed to the host (the seam above the kernels). */
#ifndef ED_CUDA_SIMT_H
#define ED_CUDA_SIMT_H

#include "base/half.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <tuple>
#include <type_traits>

/* ---- the runtime's types and calls (those src/cuda/ uses) ---- */

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;
typedef struct simt_stream *cudaStream_t;
enum { cudaStreamNonBlocking = 1 };
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
struct cudaDeviceProp {
    char name[256];
    int major, minor;
    size_t totalGlobalMem;
};

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int i);
cudaError_t cudaGetDevice(int *i);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int i);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaMalloc(void **p, size_t bytes);
template <typename T> cudaError_t cudaMalloc(T **p, size_t bytes) { return cudaMalloc((void **)p, bytes); }
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);

/* ---- cuBLAS (the calls src/cuda/gemm.cu and dev.cu make) ---- */

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TENSOR_OP_MATH = 1,
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_TF32_TENSOR_OP_MATH = 3
} cublasMath_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef struct simt_blas *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m);
const char *cublasGetStatusString(cublasStatus_t s);
cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                           int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType at, int lda,
                            const void *B, cudaDataType bt, int ldb, const void *beta, void *C,
                            cudaDataType ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo);

/* ---- the device code's vocabulary ---- */

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};
struct __half {
    uint16_t x;
};
struct alignas(4) __half2 {
    __half x, y;
};
struct __nv_bfloat16 {
    uint16_t x;
};
struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};

static inline float __half2float(__half h) { return ed_h2f(h.x); }
static inline __half __float2half_rn(float f) { return __half{ed_f2h(f)}; }
static inline float __bfloat162float(__nv_bfloat16 h) { return ed_bf2f(h.x); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16{ed_f2bf(f)}; }
static inline float2 __half22float2(__half2 h) { return float2{__half2float(h.x), __half2float(h.y)}; }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) {
    return float2{__bfloat162float(h.x), __bfloat162float(h.y)};
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float __fdiv_rn(float a, float b) { return a / b; }   /* IEEE on the host */
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
/* The sum of c and the four products of a's and b's signed bytes. */
static inline int __dp4a(int a, int b, int c) {
    for (int i = 0; i < 4; i++) c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
    return c;
}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __align__(n) __attribute__((aligned(n)))
/* Every static __shared__ array in one section, which each block starts
 * with set to NaN bytes (0xff: a float NaN, an int -1), as dynamic shared
 * memory: a read before the block's own write shows (on the GPU it holds
 * whatever the last block there left). One launch runs at a time in the
 * process (simt.cpp), one block at a time. */
#define __shared__ static __attribute__((section("simt_shared")))

namespace simt {

/* The running thread's coordinates (the scheduler sets them at each switch). */
extern thread_local uint3 t_tid, t_bid;
extern thread_local dim3 t_bdim, t_gdim;

void syncthreads();
/* A warp-wide meeting of all 32 lanes at one statement (__syncwarp, the
 * fragments' calls of mma.h); what names it in the failure. */
void warp_collective(const char *what);
/* Stops the launch as a kernel's error would, saying what. */
void kernel_fail(const char *what);
/* A warp's mma_sync (mma.h): the first lane through computes the tile,
 * the other 31 check that they hold the same operands and take it. */
struct mma_slot {
    int done;   /* lanes through this mma_sync */
    float a[256], b[256], c[256], d[256];
};
mma_slot *warp_mma_slot();
uint32_t shfl_xor_bits(unsigned mask, uint32_t v, int lane_mask);
void *dyn_shared();

template <typename T> T shfl_xor(unsigned mask, T v, int lane_mask) {
    static_assert(sizeof(T) == 4, "4-byte shuffles only");
    uint32_t b;
    memcpy(&b, &v, 4);
    b = shfl_xor_bits(mask, b, lane_mask);
    memcpy(&v, &b, 4);
    return v;
}

struct launch_cfg {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
};
/* Runs body(arg) as every thread of the grid (records a refused or failed
 * launch as the sticky cudaGetLastError). */
void run(const launch_cfg &c, void (*body)(void *), void *arg);
/* A kernel's pointer argument i: NULL or inside a device allocation (else
 * records the error, naming it, and returns 0). */
int arg_ok(const void *p, int i);

template <typename T> int args_ok(int, const T &) { return 1; }
template <typename T> int args_ok(int i, T *const &p) { return arg_ok((const void *)p, i); }

template <typename... P> struct launcher {
    launch_cfg c;
    void (*k)(P...);
    void operator()(P... a) {
        int i = 0, ok = 1;
        ((ok &= args_ok(i++, a)), ...);
        if (!ok) return;
        std::tuple<P...> t(a...);
        struct pack {
            void (*k)(P...);
            std::tuple<P...> *t;
        } pk{k, &t};
        run(c, [](void *v) {
            pack *p = (pack *)v;
            std::apply(p->k, *p->t);
        }, &pk);
    }
};
template <typename... P>
launcher<P...> launch(dim3 g, dim3 b, size_t smem, cudaStream_t s, void (*k)(P...)) {
    return launcher<P...>{launch_cfg{g, b, smem, s}, k};
}

}   // namespace simt

#define threadIdx (simt::t_tid)
#define blockIdx (simt::t_bid)
#define blockDim (simt::t_bdim)
#define gridDim (simt::t_gdim)
#define __syncthreads() simt::syncthreads()
#define __syncwarp(...) simt::warp_collective("__syncwarp()")
#define __shfl_xor_sync(mask, v, lane) simt::shfl_xor((mask), (v), (lane))

/* The backend's launch and dynamic shared memory (src/cuda/dev.h spells
 * them for nvcc). */
#define CU_LAUNCH(grid, block, smem, stream, ...) simt::launch((grid), (block), (smem), (stream), __VA_ARGS__)
#define CU_SHARED_DYN(T, name) T *name = (T *)simt::dyn_shared()

#endif
