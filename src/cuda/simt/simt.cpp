/* simt.cpp - the runtime under simt.h: a block's threads as fibers, the
 * device memory (guarded mappings), the runtime calls and cuBLAS as a
 * plain column-major model. Everything runs at the call (streams are
 * names only). */
#include "cuda/simt/simt.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

namespace simt {

thread_local uint3 t_tid, t_bid;
thread_local dim3 t_bdim, t_gdim;

/* ---- errors: the sticky last error, and why (stderr) ---- */

static thread_local cudaError_t last_err = cudaSuccess;

static cudaError_t fail(cudaError_t e, const char *fmt, ...) {
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "simt: %s\n", buf);
    if (last_err == cudaSuccess) last_err = e;
    return e;
}

/* ---- device memory: each allocation its own mapping, the buffer at its
 * end (256-byte aligned, as cudaMalloc's), then a page with no access ---- */

#define MAX_ALLOCS 16384
struct alloc {
    char *map;
    size_t map_len;
    char *p;
    size_t bytes;
};
static alloc allocs[MAX_ALLOCS];
static int n_allocs;
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;

static const alloc *find(const void *a, size_t bytes) {
    const char *c = (const char *)a;
    for (int i = 0; i < n_allocs; i++)
        if (allocs[i].map && c >= allocs[i].p && c + bytes <= allocs[i].p + allocs[i].bytes) return &allocs[i];
    return nullptr;
}

static int is_dev(const void *p, size_t bytes) {
    pthread_mutex_lock(&mem_lock);
    int r = find(p, bytes) != nullptr;
    pthread_mutex_unlock(&mem_lock);
    return r;
}

int arg_ok(const void *p, int i) {
    if (!p || is_dev(p, 1)) return 1;
    fail(cudaErrorIllegalAddress, "a kernel's argument %d (%p) is not device memory", i, p);
    return 0;
}

static cudaError_t dev_alloc(void **out, size_t bytes) {
    *out = nullptr;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = bytes ? bytes : 1;
    if (n > ((size_t)1 << 40)) return cudaErrorMemoryAllocation;   /* more than this machine lends */
    size_t data = (n + 255) & ~(size_t)255, len = (data + pg - 1) / pg * pg + pg;
    void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
    mprotect((char *)m + len - pg, pg, PROT_NONE);
    char *p = (char *)m + len - pg - data;
    memset(p, 0xa5, data);   /* not zero: cudaMalloc's memory is not cleared */
    pthread_mutex_lock(&mem_lock);
    int slot = -1;
    for (int i = 0; i < n_allocs && slot < 0; i++)
        if (!allocs[i].map) slot = i;
    if (slot < 0 && n_allocs < MAX_ALLOCS) slot = n_allocs++;
    if (slot >= 0) allocs[slot] = alloc{(char *)m, len, p, n};
    pthread_mutex_unlock(&mem_lock);
    if (slot < 0) {
        munmap(m, len);
        return cudaErrorMemoryAllocation;
    }
    *out = p;
    return cudaSuccess;
}

static cudaError_t dev_free(void *p) {
    if (!p) return cudaSuccess;
    pthread_mutex_lock(&mem_lock);
    alloc *a = nullptr;
    for (int i = 0; i < n_allocs && !a; i++)
        if (allocs[i].map && allocs[i].p == p) a = &allocs[i];
    alloc gone = a ? *a : alloc{};
    if (a) a->map = nullptr;
    pthread_mutex_unlock(&mem_lock);
    if (!a) return fail(cudaErrorInvalidValue, "cudaFree of %p: not an allocation's start", p);
    munmap(gone.map, gone.map_len);
    return cudaSuccess;
}

/* ---- fibers: a block's threads, switched at barriers and shuffles ----
 * The switch saves the callee-saved registers on the old stack and takes
 * the new one's (x86-64 System V; no system call, unlike swapcontext's
 * signal mask: a block of 128 threads meets a dozen times). A new fiber's
 * stack holds six registers and the address of fiber_start, which calls
 * fiber_main(r12) by r13 (16-byte aligned at the call). */
#if !defined(__x86_64__)
#error "the SIMT test build switches fibers on x86-64 only"
#endif
extern "C" void simt_switch(void **save_sp, void *to_sp);
extern "C" void simt_fiber_start();
asm(".text\n"
    ".globl simt_switch\n"
    ".type simt_switch, @function\n"
    "simt_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size simt_switch, .-simt_switch\n"
    ".globl simt_fiber_start\n"
    ".type simt_fiber_start, @function\n"
    "simt_fiber_start:\n"
    "    movq %r12, %rdi\n"
    "    callq *%r13\n"
    "    ud2\n"
    ".size simt_fiber_start, .-simt_fiber_start\n");

enum { F_RUN, F_BAR, F_WARP, F_DONE };
#define STACK_BYTES ((size_t)128 << 10)
#define MAX_THREADS 1024
#define DYN_SHARED_MAX ((size_t)48 << 10)

struct fiber {
    void *sp;   /* saved stack pointer */
    char *stack;
    int state;
    uint3 tid;
};

struct block_run {
    fiber f[MAX_THREADS];
    void *sched_sp;
    int n, cur;
    int live, at_bar;                       /* threads not done; waiting at __syncthreads */
    int warp_live[MAX_THREADS / 32], at_warp[MAX_THREADS / 32];
    uint32_t xchg[2][MAX_THREADS];          /* shuffle values, by linear thread; two in turn */
    int shfl_n[MAX_THREADS];                /* each thread's shuffles so far (its turn) */
    const void *shfl_at[2][MAX_THREADS];    /* where in the code each turn's shuffle is */
    const void *bar_at;                     /* where the first thread at this barrier waits */
    const void *coll_at[MAX_THREADS / 32];  /* where the first lane at a warp-wide call waits */
    void (*body)(void *);
    void *arg;
    int broken;                             /* a thread misused a barrier or shuffle */
    mma_slot mma[MAX_THREADS / 32];         /* each warp's mma_sync in flight (mma.h) */
    alignas(64) char shared_dyn[DYN_SHARED_MAX];
};
static thread_local block_run *br;

void *dyn_shared() { return br->shared_dyn; }

static void enter(int i) {
    fiber *f = &br->f[i];
    br->cur = i;
    t_tid = f->tid;
    simt_switch(&br->sched_sp, f->sp);
}

static void block_wait(int state) {
    fiber *f = &br->f[br->cur];
    f->state = state;
    simt_switch(&f->sp, br->sched_sp);
}

static void release(int state, int warp) {
    int i0 = warp < 0 ? 0 : 32 * warp, i1 = warp < 0 || br->n < 32 * warp + 32 ? br->n : 32 * warp + 32;
    for (int i = i0; i < i1; i++)
        if (br->f[i].state == state) br->f[i].state = F_RUN;
}

/* Everyone this kind of meeting waits for has arrived: let them go. */
static void settle_bar() {
    if (br->at_bar > 0 && br->at_bar == br->live) {
        br->at_bar = 0;
        release(F_BAR, -1);
    }
}
static void settle_warp(int w) {
    if (br->at_warp[w] > 0 && br->at_warp[w] == br->warp_live[w]) {
        br->at_warp[w] = 0;
        release(F_WARP, w);
    }
}

/* One meeting is one statement: threads at different __syncthreads()
 * (one in each branch of an if) do not meet on a GPU either. */
static void same_site(const void *mine, const void *theirs, const char *what) {
    if (mine == theirs) return;
    fail(cudaErrorLaunchFailure, "threads of block (%u, %u, %u) meet at two different %s: %p and %p", t_bid.x,
         t_bid.y, t_bid.z, what, mine, theirs);
    br->broken = 1;
}

void syncthreads() {
    const void *at = __builtin_return_address(0);
    if (br->at_bar == 0) br->bar_at = at;
    else same_site(at, br->bar_at, "__syncthreads()");
    if (++br->at_bar == br->live) {   /* the last to arrive lets everyone go */
        br->at_bar = 0;
        release(F_BAR, -1);
        return;
    }
    block_wait(F_BAR);
}

static void warp_sync() {
    int w = br->cur / 32;
    if (++br->at_warp[w] == br->warp_live[w]) {
        br->at_warp[w] = 0;
        release(F_WARP, w);
        return;
    }
    block_wait(F_WARP);
}

/* __syncwarp() and the tensor-core fragments' calls (mma.h): every lane of
 * a whole warp, none returned, at the same statement. */
void warp_collective(const char *what) {
    const void *at = __builtin_return_address(0);
    int w = br->cur / 32, lanes = br->n - 32 * w < 32 ? br->n - 32 * w : 32;
    if (lanes != 32 || br->warp_live[w] != 32) {
        fail(cudaErrorLaunchFailure, "%s in a warp of %d lanes, %d of them still running", what, lanes,
             br->warp_live[w]);
        br->broken = 1;
    }
    if (br->at_warp[w] == 0) br->coll_at[w] = at;
    else same_site(at, br->coll_at[w], what);
    warp_sync();
}

mma_slot *warp_mma_slot() { return &br->mma[br->cur / 32]; }

void kernel_fail(const char *what) {
    fail(cudaErrorLaunchFailure, "%s", what);
    br->broken = 1;
}

uint32_t shfl_xor_bits(unsigned mask, uint32_t v, int lane_mask) {
    int me = br->cur, w = me / 32, lanes = br->n - 32 * w < 32 ? br->n - 32 * w : 32;
    unsigned want = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    if ((mask & want) != want) {
        fail(cudaErrorLaunchFailure, "__shfl_xor_sync with mask %#x in a warp of %d lanes", mask, lanes);
        br->broken = 1;
    }
    /* Two buffers in turn: a lane may write its next shuffle's value before
     * the slowest has read this one's, never the one after (that needs the
     * slowest at the next meeting, past its read). */
    int turn = br->shfl_n[me]++;
    uint32_t *x = br->xchg[turn & 1];
    x[me] = v;
    br->shfl_at[turn & 1][me] = __builtin_return_address(0);
    warp_sync();
    int src = (me % 32) ^ lane_mask;
    uint32_t r = v;
    if (src < lanes) {
        if (br->shfl_n[32 * w + src] <= turn) {   /* it returned before this shuffle */
            fail(cudaErrorLaunchFailure, "__shfl_xor_sync reads lane %d, which has returned", src);
            br->broken = 1;
        } else {
            same_site(br->shfl_at[turn & 1][me], br->shfl_at[turn & 1][32 * w + src], "shuffles");
            r = x[32 * w + src];
        }
    }
    return r;
}

static void fiber_main(long i) {
    br->body(br->arg);
    fiber *f = &br->f[i];
    f->state = F_DONE;
    br->live--;
    br->warp_live[i / 32]--;
    settle_bar();
    settle_warp(i / 32);
    simt_switch(&f->sp, br->sched_sp);   /* never resumed */
}

/* Runs one block to its end; 0 when its threads could not all finish.
 * Between meetings the threads run one after another, first to last in
 * one block and last to first in the next: a read of another thread's
 * write without a barrier between them then sees the old value in one of
 * the two orders, whichever way round the two threads are. */
static int run_block(int backward) {
    for (;;) {
        int ran = 0, left = 0;
        for (int k = 0; k < br->n; k++) {
            int i = backward ? br->n - 1 - k : k;
            if (br->f[i].state == F_DONE) continue;
            left++;
            if (br->f[i].state != F_RUN) continue;
            enter(i);
            ran = 1;
            if (br->broken) return 0;
        }
        if (!left) return 1;
        if (!ran) {
            int bar = 0, warp = 0;
            for (int i = 0; i < br->n; i++) bar += br->f[i].state == F_BAR, warp += br->f[i].state == F_WARP;
            fail(cudaErrorLaunchFailure,
                 "block (%u, %u, %u): %d threads wait at __syncthreads, %d at a warp's shuffle, %d have "
                 "returned: they never meet",
                 t_bid.x, t_bid.y, t_bid.z, bar, warp, br->n - br->live);
            return 0;
        }
    }
}

static block_run *block_state() {   /* this OS thread's, made on first use */
    if (!br) br = (block_run *)calloc(1, sizeof *br);
    return br;
}

static char *fiber_stack(fiber *f) {
    if (!f->stack) {
        size_t pg = (size_t)sysconf(_SC_PAGESIZE);
        void *m = mmap(nullptr, STACK_BYTES + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return nullptr;
        mprotect(m, pg, PROT_NONE);   /* a stack overflow faults */
        f->stack = (char *)m + pg;
    }
    return f->stack;
}

static thread_local unsigned n_launch;

/* The static __shared__ arrays (simt.h: the section the linker bounds). */
extern "C" char __start_simt_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_simt_shared[] __attribute__((weak, visibility("hidden")));

static void poison_shared(size_t dyn) {
    memset(br->shared_dyn, 0xff, dyn);   /* NaN bytes: the GPU leaves what the block before had */
    uintptr_t a = (uintptr_t)__start_simt_shared, e = (uintptr_t)__stop_simt_shared;
    if (a && e > a) memset(__start_simt_shared, 0xff, e - a);
}

/* One launch at a time in the process: the static __shared__ arrays are one copy. */
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

static void run_locked(const launch_cfg &c, void (*body)(void *), void *arg);

void run(const launch_cfg &c, void (*body)(void *), void *arg) {
    pthread_mutex_lock(&launch_lock);
    run_locked(c, body, arg);
    pthread_mutex_unlock(&launch_lock);
}

static void run_locked(const launch_cfg &c, void (*body)(void *), void *arg) {
    n_launch++;
    size_t nt = (size_t)c.block.x * c.block.y * c.block.z;
    if (nt == 0 || nt > MAX_THREADS || c.block.z > 64 || c.grid.x == 0 || c.grid.y == 0 ||
        c.grid.z == 0 || c.grid.x > 2147483647u || c.grid.y > 65535 || c.grid.z > 65535) {
        fail(cudaErrorInvalidConfiguration, "launch refused: grid (%u, %u, %u), block (%u, %u, %u)",
             c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z);
        return;
    }
    if (c.smem > DYN_SHARED_MAX) {
        fail(cudaErrorInvalidConfiguration, "launch refused: %zu bytes of dynamic shared memory (48 KiB without an opt-in)",
             c.smem);
        return;
    }
    block_run *b = block_state();
    if (!b) {
        fail(cudaErrorMemoryAllocation, "no memory for a block's fibers");
        return;
    }
    b->n = (int)nt;
    b->body = body;
    b->arg = arg;
    t_bdim = c.block;
    t_gdim = c.grid;
    for (unsigned z = 0; z < c.grid.z; z++)
        for (unsigned y = 0; y < c.grid.y; y++)
            for (unsigned x = 0; x < c.grid.x; x++) {
                t_bid = uint3{x, y, z};
                poison_shared(c.smem);
                b->live = (int)nt, b->at_bar = 0, b->broken = 0;
                memset(b->shfl_n, 0, sizeof(int) * nt);
                for (int w = 0; w < MAX_THREADS / 32; w++) {
                    int l = (int)nt - 32 * w;
                    b->warp_live[w] = l <= 0 ? 0 : l < 32 ? l : 32;
                    b->at_warp[w] = 0;
                    b->mma[w].done = 0;
                }
                for (int i = 0; i < (int)nt; i++) {
                    fiber *f = &b->f[i];
                    char *st = fiber_stack(f);
                    if (!st) {
                        fail(cudaErrorMemoryAllocation, "no memory for a thread's stack");
                        return;
                    }
                    f->state = F_RUN;
                    f->tid = uint3{(unsigned)i % c.block.x, (unsigned)(i / c.block.x) % c.block.y,
                                   (unsigned)(i / (c.block.x * c.block.y))};
                    void **sp = (void **)(st + STACK_BYTES - 72);   /* r15 .. rbp, then the return */
                    sp[0] = sp[1] = nullptr;
                    sp[2] = (void *)fiber_main;   /* r13 */
                    sp[3] = (void *)(long)i;      /* r12 */
                    sp[4] = sp[5] = nullptr;
                    sp[6] = (void *)simt_fiber_start;
                    f->sp = sp;
                }
                if (!run_block((x + y + z + n_launch) & 1)) return;
            }
}

}   // namespace simt

using simt::fail;

/* ---- the runtime calls ---- */

static int cur_device;

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int i) {
    if (i != 0) return fail(cudaErrorInvalidDevice, "cudaSetDevice(%d): one device", i);
    cur_device = i;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *i) {
    *i = cur_device;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int i) {
    if (i != 0) return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "the CUDA source on the CPU (SIMT test build)");
    p->major = 9, p->minor = 0;
    p->totalGlobalMem = (size_t)16 << 30;
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    (void)flags;
    *s = (cudaStream_t)calloc(1, 1);
    return *s ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    free(s);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    (void)s;
    return cudaSuccess;   /* every call has ended when it returns */
}
cudaError_t cudaMalloc(void **p, size_t bytes) { return simt::dev_alloc(p, bytes); }
cudaError_t cudaFree(void *p) { return simt::dev_free(p); }
cudaError_t cudaMallocHost(void **p, size_t bytes) {
    *p = malloc(bytes ? bytes : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void *p) {
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    (void)s;
    int dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind == cudaMemcpyDefault || kind == cudaMemcpyHostToHost)
        return fail(cudaErrorInvalidValue, "cudaMemcpyAsync: a copy of kind %d", (int)kind);
    if (dd && !simt::is_dev(dst, bytes))
        return fail(cudaErrorInvalidValue, "cudaMemcpyAsync: the destination (%zu bytes at %p) is not device memory",
                    bytes, dst);
    if (sd && !simt::is_dev(src, bytes))
        return fail(cudaErrorInvalidValue, "cudaMemcpyAsync: the source (%zu bytes at %p) is not device memory",
                    bytes, src);
    if (!dd && simt::is_dev(dst, 1))
        return fail(cudaErrorInvalidValue, "cudaMemcpyAsync: the host destination is device memory");
    if (!sd && simt::is_dev(src, 1))
        return fail(cudaErrorInvalidValue, "cudaMemcpyAsync: the host source is device memory");
    memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s) {
    (void)s;
    if (!simt::is_dev(p, bytes))
        return fail(cudaErrorInvalidValue, "cudaMemsetAsync: %zu bytes at %p are not device memory", bytes, p);
    memset(p, v, bytes);
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    cudaError_t e = simt::last_err;
    simt::last_err = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unknown error";
    }
}

/* ---- cuBLAS: C (m x n, column-major) = alpha op(A) op(B) + beta C ---- */

struct simt_blas {
    cublasMath_t math;
};

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    *h = (cublasHandle_t)calloc(1, sizeof(simt_blas));
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    (void)s;
    return h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = m;
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

static float tf32(float v) {   /* 10 mantissa bits, to nearest (the tensor cores' input) */
    uint32_t u;
    memcpy(&u, &v, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu;
    memcpy(&v, &u, 4);
    return v;
}

static float dot(const float *x, const float *y, int k) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r = 0.0f;
    int p = 0;
    for (; p + 8 <= k; p += 8)
        for (int l = 0; l < 8; l++) s[l] += x[p + l] * y[p + l];
    for (; p < k; p++) r += x[p] * y[p];
    for (int l = 0; l < 8; l++) r += s[l];
    return r;
}

static float elem(const void *p, cudaDataType t, size_t i) {
    if (t == CUDA_R_32F) return ((const float *)p)[i];
    if (t == CUDA_R_16F) return ed_h2f(((const uint16_t *)p)[i]);
    return ed_bf2f(((const uint16_t *)p)[i]);
}

static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           float alpha, const void *A, cudaDataType at, int lda, const void *B,
                           cudaDataType bt, int ldb, float beta, float *C, int ldc, int round_tf32) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    int ar = ta == CUBLAS_OP_N ? m : k, br_ = tb == CUBLAS_OP_N ? k : n;   /* rows as stored */
    if (m < 0 || n < 0 || k < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br_ > 1 ? br_ : 1) ||
        ldc < (m > 1 ? m : 1) || ta == CUBLAS_OP_C || tb == CUBLAS_OP_C) {
        fprintf(stderr, "simt: cuBLAS gemm refused: op %d %d, m %d n %d k %d, lda %d ldb %d ldc %d\n", ta, tb,
                m, n, k, lda, ldb, ldc);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    size_t asz = at == CUDA_R_32F ? 4 : 2, bsz = bt == CUDA_R_32F ? 4 : 2;
    int a_cols = ta == CUBLAS_OP_N ? k : m, b_cols = tb == CUBLAS_OP_N ? n : k;
    if ((k > 0 && (!simt::is_dev(A, ((size_t)(a_cols - 1) * lda + ar) * asz) ||
                   !simt::is_dev(B, ((size_t)(b_cols - 1) * ldb + br_) * bsz))) ||
        !simt::is_dev(C, ((size_t)(n - 1) * ldc + m) * 4)) {
        fprintf(stderr, "simt: cuBLAS gemm: A, B or C is not device memory of the extent its shape implies\n");
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    /* op(A) by rows and op(B) by columns as floats, then dot products (the
     * order of the sums is cuBLAS's own business) */
    float *a = (float *)malloc(sizeof(float) * ((size_t)m * k + 1)), *b = (float *)malloc(sizeof(float) * ((size_t)n * k + 1));
    if (!a || !b) {
        free(a), free(b);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) {
            float v = elem(A, at, ta == CUBLAS_OP_N ? (size_t)p * lda + i : (size_t)i * lda + p);
            a[(size_t)i * k + p] = round_tf32 ? tf32(v) : v;
        }
    for (int j = 0; j < n; j++)
        for (int p = 0; p < k; p++) {
            float v = elem(B, bt, tb == CUBLAS_OP_N ? (size_t)j * ldb + p : (size_t)p * ldb + j);
            b[(size_t)j * k + p] = round_tf32 ? tf32(v) : v;
        }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float *c = C + (size_t)j * ldc + i;
            *c = alpha * dot(a + (size_t)i * k, b + (size_t)j * k, k) + (beta != 0.0f ? beta * *c : 0.0f);   /* beta 0: C is not read */
        }
    free(a), free(b);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc) {
    int t = h && h->math == CUBLAS_TF32_TENSOR_OP_MATH;
    return gemm(h, ta, tb, m, n, k, *alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, *beta, C, ldc, t);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B,
                            cudaDataType bt, int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    (void)algo;
    if (at != bt || ct != CUDA_R_32F || (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    int t = at == CUDA_R_32F && (compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                                 (h && h->math == CUBLAS_TF32_TENSOR_OP_MATH));
    return gemm(h, ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb, *(const float *)beta,
                (float *)C, ldc, t);
}
