/* dev.c - the emulated device (emu.h): open and close, its memory as
 * no-access pages opened only inside kernels, copies, staging, the sticky
 * error. */
#define _GNU_SOURCE
#include "cuda/emu/emu.h"
#include "base/err.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- allocations: each its own mapping, the buffer at its end (256-byte
 * aligned, as cudaMalloc's), one guard page after ---- */

#define MAX_REGIONS 8192
#define CHUNK ((uintptr_t)2 << 20)
#define MAX_OPEN 65536

typedef struct {
    char *map;          /* NULL: a free entry */
    size_t map_len;     /* data pages + the guard page */
    char *p;            /* the buffer cu_alloc returned */
    size_t bytes;
    char what[48];
} region;

static region regions[MAX_REGIONS];
static atomic_int n_regions;   /* entries in use or freed below this */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* allocations and kernels */
static atomic_int in_kernel;
static struct {
    char *p;
    size_t n;
} opened[MAX_OPEN];
static atomic_int n_opened;
static atomic_int opened_all;   /* the list overflowed: shut every region */
static size_t page;
/* >= 0: device pages carry this protection key (x86's PKU), their access
 * switched per thread by a register write at each kernel's ends, no page
 * table touched; -1: they are shut with mprotect and opened a chunk at a
 * time on fault (ENCDEC_EMU_GUARD=pages forces it; CPUs without PKU). */
static int pkey = -1;

/* The last frees, to name a pointer into freed device memory. */
#define N_FREED 512
static region freed[N_FREED];
static int n_freed;

static const region *find_freed(const void *a) {
    const char *c = a;
    for (int k = 0; k < N_FREED; k++) {
        const region *r = &freed[(n_freed - 1 - k + 2 * N_FREED) % N_FREED];
        if (r->map && c >= r->map && c < r->map + r->map_len) return r;
    }
    return NULL;
}

static region *find(const void *a) {
    const char *c = a;
    int n = atomic_load(&n_regions);
    for (int i = 0; i < n; i++) {
        region *r = &regions[i];
        char *m = __atomic_load_n(&r->map, __ATOMIC_ACQUIRE);   /* published last */
        if (m && c >= m && c < m + r->map_len) return r;
    }
    return NULL;
}

static void say(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) (void)!write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    char *a = si->si_addr;
    region *r = find(a);
    char *guard = r ? r->map + r->map_len - page : NULL;
    if (r && a < guard && pkey < 0 && atomic_load(&in_kernel)) {
        char *lo = (char *)((uintptr_t)a & ~(CHUNK - 1)), *hi = lo + CHUNK;
        if (lo < r->map) lo = r->map;
        if (hi > guard) hi = guard;
        if (mprotect(lo, (size_t)(hi - lo), PROT_READ | PROT_WRITE) == 0) {
            int k = atomic_fetch_add(&n_opened, 1);
            if (k < MAX_OPEN) {
                opened[k].p = lo;
                opened[k].n = (size_t)(hi - lo);
            } else {
                atomic_store(&opened_all, 1);
            }
            return;
        }
    }
    if (r && a >= guard)
        say("encdec CUDA emulation: an access %zu bytes past the end of device memory '%s' "
            "(%zu bytes)\n", (size_t)(a - (r->p + r->bytes)), r->what, r->bytes);
    else if (r)
        say("encdec CUDA emulation: the host touched device memory '%s' (%zu bytes) at offset "
            "%zu outside a kernel or copy, or from a thread not running one: a device buffer read or "
            "written as host memory\n",
            r->what, r->bytes, a >= r->p ? (size_t)(a - r->p) : (size_t)0);
    signal(sig, SIG_DFL);   /* the access faults again, now fatally */
}

static void install(void) {
    page = (size_t)sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
#ifdef PKEY_DISABLE_ACCESS
    const char *g = getenv("ENCDEC_EMU_GUARD");
    if (!g || strcmp(g, "pages")) pkey = pkey_alloc(0, PKEY_DISABLE_ACCESS);   /* -1: no PKU */
#endif
}

/* This thread's access to device pages under the protection key. */
static void key_access(int on) {
#ifdef PKEY_DISABLE_ACCESS
    if (pkey >= 0) pkey_set(pkey, on ? 0 : PKEY_DISABLE_ACCESS);
#else
    (void)on;
#endif
}

void emu_enter(void) {
    pthread_mutex_lock(&lock);
    atomic_store(&in_kernel, 1);
    key_access(1);
}

void emu_leave(void) {
    key_access(0);
    int n = atomic_load(&n_opened);
    if (n > MAX_OPEN) n = MAX_OPEN;
    for (int i = 0; i < n; i++) mprotect(opened[i].p, opened[i].n, PROT_NONE);
    if (atomic_load(&opened_all)) {
        int nr = atomic_load(&n_regions);
        for (int i = 0; i < nr; i++)
            if (regions[i].map) mprotect(regions[i].map, regions[i].map_len - page, PROT_NONE);
    }
    atomic_store(&n_opened, 0);
    atomic_store(&opened_all, 0);
    atomic_store(&in_kernel, 0);
    pthread_mutex_unlock(&lock);
}

int emu_dev_ptr(cu_dev *g, const void *p, size_t bytes, const char *what) {
    if (!p && !bytes) return 1;
    region *r = p ? find(p) : NULL;
    if (r && (const char *)p >= r->p && bytes <= (size_t)(r->p + r->bytes - (const char *)p)) return 1;
    char msg[240];
    const region *f = r ? NULL : find_freed(p);
    if (f)
        snprintf(msg, sizeof msg, "%s: %p is freed device memory (it was '%s', %zu bytes)", what, p,
                 f->what, f->bytes);
    else if (r)
        snprintf(msg, sizeof msg, "%s: %zu bytes at offset %zd of device memory '%s' (%zu bytes) "
                 "run past its end", what, bytes, (const char *)p - r->p, r->what, r->bytes);
    else
        snprintf(msg, sizeof msg, "%s: %p is not device memory (a host pointer given to a kernel)",
                 what, p);
    cu_fail(g, msg);
    return 0;
}

int emu_host_ptr(const void *p) { return find(p) == NULL; }

/* ---- the device ---- */

int cu_device_count(char *why, size_t cap) {
    (void)why;
    (void)cap;
    return 1;
}

encdec_status cu_dev_open(int index, cu_dev **out) {
    *out = NULL;
    if (index != 0)
        return ed_fail(ENCDEC_ERR_ARG, "CUDA device %d: this machine has 1 (0..0: the CPU emulation)", index);
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
    cu_dev *g = calloc(1, sizeof *g);
    if (!g) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: CUDA device handle");
    const char *e = getenv("ENCDEC_EMU_THREADS");
    int nth = e && atoi(e) > 0 ? atoi(e) : 2;
    /* the pool's workers run kernels only: they inherit access to the
     * device's pages from this thread (every other thread is denied) */
    key_access(1);
    encdec_status st = ed_pool_new(&g->pool, nth);
    key_access(0);
    if (st) {
        free(g);
        return st;
    }
    *out = g;
    return ENCDEC_OK;
}

void cu_dev_close(cu_dev *g) {
    if (!g) return;
    cu_free(g, g->stage);
    ed_pool_free(g->pool);
    free(g->scratch);
    free(g);
}

const char *cu_dev_name(const cu_dev *g) {
    (void)g;
    return "the CUDA backend's CPU emulation (a test build)";
}

void cu_dev_set_tf32(cu_dev *g, int on) {
    (void)g;
    (void)on;
}

void cu_fail(cu_dev *g, const char *what) {
    if (!g->err[0]) snprintf(g->err, sizeof g->err, "%s", what);
    if (getenv("ENCDEC_EMU_ABORT")) {   /* under a debugger: the caller's stack */
        say("encdec CUDA emulation: %s\n", what);
        abort();
    }
}

static encdec_status take_error(cu_dev *g) {
    if (!g->err[0]) return ENCDEC_OK;
    encdec_status st = ed_fail(ENCDEC_ERR_DEVICE, "CUDA device %d: %s", g->index, g->err);
    g->err[0] = 0;
    return st;
}

void cu_bind(cu_dev *g) { (void)g; }

float *emu_scratch(cu_dev *g, size_t n) {
    if (n <= g->scratch_n) return g->scratch;
    free(g->scratch);
    g->scratch_n = 0;
    g->scratch = malloc(n * sizeof(float));
    if (!g->scratch) {
        cu_fail(g, "out of host memory: scratch");
        return NULL;
    }
    g->scratch_n = n;
    return g->scratch;
}

/* ---- memory ---- */

/* len bytes of no-access pages. From one chunk up, the mapping starts on a
 * chunk's boundary and asks for huge pages: a kernel opens a chunk with one
 * page-table entry to change, not 512, and shuts it again as cheaply (the
 * page tables' work was most of a device test's time with 4 KB pages). */
static char *map_guarded(size_t len) {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    if (len < CHUNK) {
        char *m = mmap(NULL, len, PROT_NONE, flags, -1, 0);
        return m == MAP_FAILED ? NULL : m;
    }
    char *m = mmap(NULL, len + CHUNK, PROT_NONE, flags, -1, 0);
    if (m == MAP_FAILED) return NULL;
    char *a = (char *)(((uintptr_t)m + CHUNK - 1) & ~(CHUNK - 1));
    if (a > m) munmap(m, (size_t)(a - m));
    if (a + len < m + len + CHUNK) munmap(a + len, (size_t)(m + len + CHUNK - (a + len)));
#ifdef MADV_HUGEPAGE
    madvise(a, len - page, MADV_HUGEPAGE);   /* advice: without it, 4 KB pages */
#endif
    return a;
}

void *cu_alloc(cu_dev *g, size_t bytes, const char *what) {
    (void)g;
    size_t data = (bytes + 255 + page - 1) / page * page;
    char *map = map_guarded(data + page);
#ifdef PKEY_DISABLE_ACCESS
    if (map && pkey >= 0 && pkey_mprotect(map, data, PROT_READ | PROT_WRITE, pkey)) {
        munmap(map, data + page);
        map = NULL;
    }
#endif
    if (!map) {
        ed_fail(ENCDEC_ERR_NOMEM, "CUDA device 0: %zu bytes for %s: out of memory", bytes, what);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    int i = 0, n = atomic_load(&n_regions);
    while (i < n && regions[i].map) i++;
    if (i == MAX_REGIONS) {
        pthread_mutex_unlock(&lock);
        munmap(map, data + page);
        ed_fail(ENCDEC_ERR_NOMEM, "CUDA device 0: more than %d allocations", MAX_REGIONS);
        return NULL;
    }
    region *r = &regions[i];
    r->p = map + ((data - bytes) & ~(size_t)255);
    r->bytes = bytes;
    r->map_len = data + page;
    snprintf(r->what, sizeof r->what, "%s", what);
    __atomic_store_n(&r->map, map, __ATOMIC_RELEASE);   /* find() reads without the lock */
    if (i == n) atomic_store(&n_regions, n + 1);
    pthread_mutex_unlock(&lock);
    return r->p;
}

void cu_free(cu_dev *g, void *p) {
    (void)g;
    if (!p) return;
    pthread_mutex_lock(&lock);
    region *r = find(p);
    if (r && r->p == p) {
        char *map = r->map;
        freed[n_freed++ % N_FREED] = *r;
        __atomic_store_n(&r->map, NULL, __ATOMIC_RELEASE);
        munmap(map, r->map_len);
    } else {
        say("encdec CUDA emulation: cu_free of %p, not a device allocation\n", p);
        abort();
    }
    pthread_mutex_unlock(&lock);
}

/* Page-locked host memory: host pages of their own mapping (not malloc's:
 * a free() of them fails at once, as it does on cudaMallocHost's), listed,
 * so that cu_host_free of anything else stops the test. */
#define MAX_PINNED 256
static struct {
    void *p;
    size_t len;
} pinned[MAX_PINNED];

void *cu_host_alloc(cu_dev *g, size_t bytes, const char *what) {
    (void)g;
    size_t len = (bytes ? bytes : 1) + page - 1;
    len -= len % page;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        ed_fail(ENCDEC_ERR_NOMEM, "CUDA device 0: %zu bytes of page-locked host memory for %s: "
                "out of memory", bytes, what);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < MAX_PINNED && pinned[i].p) i++;
    if (i < MAX_PINNED) pinned[i].p = p, pinned[i].len = len;
    pthread_mutex_unlock(&lock);
    if (i == MAX_PINNED) {
        munmap(p, len);
        ed_fail(ENCDEC_ERR_NOMEM, "CUDA device 0: more than %d page-locked allocations", MAX_PINNED);
        return NULL;
    }
    return p;
}

void cu_host_free(cu_dev *g, void *p) {
    (void)g;
    if (!p) return;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < MAX_PINNED && pinned[i].p != p) i++;
    if (i == MAX_PINNED) {
        say("encdec CUDA emulation: cu_host_free of %p, not page-locked host memory\n", p);
        abort();
    }
    munmap(p, pinned[i].len);
    pinned[i].p = NULL;
    pthread_mutex_unlock(&lock);
}

encdec_status cu_upload(cu_dev *g, void *dst, const void *src, size_t bytes) {
    if (bytes && emu_dev_ptr(g, dst, bytes, "upload") && !emu_host_ptr(src))
        cu_fail(g, "upload: the source is device memory");
    else if (bytes) {
        emu_enter();
        memcpy(dst, src, bytes);
        emu_leave();
    }
    return take_error(g);
}

encdec_status cu_download(cu_dev *g, void *dst, const void *src, size_t bytes) {
    if (bytes && emu_dev_ptr(g, src, bytes, "download") && !emu_host_ptr(dst))
        cu_fail(g, "download: the destination is device memory");
    else if (bytes && !g->err[0]) {
        emu_enter();
        memcpy(dst, src, bytes);
        emu_leave();
    }
    return take_error(g);
}

encdec_status cu_sync(cu_dev *g) { return take_error(g); }

void cu_copy(cu_dev *g, void *dst, const void *src, size_t bytes) {
    if (!bytes || !emu_dev_ptr(g, dst, bytes, "copy to") || !emu_dev_ptr(g, src, bytes, "copy from"))
        return;
    emu_enter();
    memmove(dst, src, bytes);
    emu_leave();
}

void cu_memset0(cu_dev *g, void *p, size_t bytes) {
    if (!bytes || !emu_dev_ptr(g, p, bytes, "memset")) return;
    emu_enter();
    memset(p, 0, bytes);
    emu_leave();
}

#define STAGE_BYTES ((size_t)4 << 20)

const void *cu_stage(cu_dev *g, const void *host, size_t bytes) {
    if (!bytes) return NULL;
    if (bytes > STAGE_BYTES) {
        cu_fail(g, "stage: more than 4 MiB of indices at once");
        return NULL;
    }
    if (!emu_host_ptr(host)) {
        cu_fail(g, "stage: the source is device memory");
        return NULL;
    }
    if (!g->stage && !(g->stage = cu_alloc(g, STAGE_BYTES, "stage"))) {
        cu_fail(g, "stage: out of device memory");
        return NULL;
    }
    size_t n = (bytes + 255) & ~(size_t)255;
    if (g->stage_off + n > STAGE_BYTES) g->stage_off = 0;
    char *d = g->stage + g->stage_off;
    g->stage_off += n;
    emu_enter();
    memcpy(d, host, bytes);
    emu_leave();
    return d;
}
