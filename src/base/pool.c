/* pool.c - fork-join pool on pthreads. A run is published by bumping a
 * generation counter; a pending counter tells the caller when every slice
 * is done. Both sides spin briefly (ED_POOL_SPIN_US) before sleeping on a
 * condition variable: a decode step issues dozens of small runs a few
 * microseconds apart, and a futex wake-up per run would cost more than the
 * work. After a few microseconds the spin yields the core at each check, so
 * a thread sharing its core (another process, or more threads than cores)
 * runs instead of being starved (see docs/ARCHITECTURE.md, "Kernels and
 * threads"). An idle session sleeps. */
#include "base/pool.h"
#include "base/err.h"
#include "base/isa.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ED_RELAX() _mm_pause()
#else
#define ED_RELAX() ((void)0)
#endif

/* How long a thread spins for the next run (worker) or for the end of the
 * current one (caller) before it sleeps. */
#ifndef ED_POOL_SPIN_US
#define ED_POOL_SPIN_US 300
#endif

struct ed_pool {
    int n;                 /* threads including the caller */
    pthread_t *threads;    /* [n - 1] */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    _Atomic unsigned long gen;   /* bumped once per run (under mu) */
    atomic_int pending;          /* workers still running the current fn */
    atomic_int caller_sleeps;    /* the caller waits on `done` */
    atomic_int quit;
    ed_pool_fn fn;               /* published by the release store of gen */
    void *ctx;
    int isa;                     /* instruction-set limit of every run (base/isa.h) */
    void *dev;                   /* where the ops run (core/dev.h); NULL: here */
    void **scratch;        /* [n] per-thread scratch (ed_pool_scratch) */
    size_t *scratch_cap;   /* [n] its size in bytes */
};

typedef struct { ed_pool *p; int ith; } worker_arg;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* One round of waiting: pause for the first ED_POOL_PAUSE_US, then yield
 * the core (a thread of ours, or another process, may need it: spinning on
 * a shared core would steal its time). Returns 0 once ED_POOL_SPIN_US have
 * passed since *t0 (set on the first call). */
#define ED_POOL_PAUSE_US 20
static int spin_round(unsigned i, double *t0) {
    if ((i & 63) != 0) {
        ED_RELAX();
        return 1;
    }
    double t = now_us();
    if (*t0 == 0) *t0 = t;
    if (t - *t0 > ED_POOL_SPIN_US) return 0;
    if (t - *t0 > ED_POOL_PAUSE_US) sched_yield();
    return 1;
}

/* Spins until *gen != seen (returns 1) or the spin budget is spent (0). */
static int spin_gen(ed_pool *p, unsigned long seen) {
    double t0 = 0;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&p->gen, memory_order_acquire) != seen ||
            atomic_load_explicit(&p->quit, memory_order_relaxed))
            return 1;
        if (!spin_round(i, &t0)) return 0;
    }
}

static void *worker_main(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    ed_pool *p = wa.p;
    unsigned long seen = 0;
    for (;;) {
        if (!spin_gen(p, seen)) {
            pthread_mutex_lock(&p->mu);
            while (!atomic_load(&p->quit) && atomic_load(&p->gen) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) return NULL;
        seen = atomic_load_explicit(&p->gen, memory_order_acquire);
        ed_isa_swap(p->isa);
        p->fn(p->ctx, wa.ith, p->n);
        if (atomic_fetch_sub(&p->pending, 1) == 1 &&
            atomic_load(&p->caller_sleeps)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

encdec_status ed_pool_new(ed_pool **out, int n_threads) {
    *out = NULL;
    if (n_threads < 1 || n_threads > ED_POOL_MAX_THREADS)
        return ed_fail(ENCDEC_ERR_ARG, "thread count %d is out of range 1..%d",
                       n_threads, ED_POOL_MAX_THREADS);
    ed_pool *p = calloc(1, sizeof *p);
    if (!p) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: thread pool");
    p->n = n_threads;
    p->isa = ed_isa_limit();  /* the creating thread's, until ed_pool_set_isa */
    p->scratch = calloc((size_t)n_threads, sizeof *p->scratch);
    p->scratch_cap = calloc((size_t)n_threads, sizeof *p->scratch_cap);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (!p->scratch || !p->scratch_cap) {
        p->n = 1;   /* no worker to join */
        ed_pool_free(p);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: thread pool");
    }
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
        if (!p->threads) {
            p->n = 1;   /* no worker to join */
            ed_pool_free(p);
            return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: thread pool");
        }
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        int rc = wa ? 0 : 1;
        if (wa) {
            wa->p = p;
            wa->ith = i;
            rc = pthread_create(&p->threads[i - 1], NULL, worker_main, wa);
            if (rc) free(wa);
        }
        if (rc) {
            p->n = i; /* only join the ones that started */
            ed_pool_free(p);
            return ed_fail(ENCDEC_ERR_THREADS, "cannot start worker thread %d of %d",
                           i, n_threads);
        }
    }
    *out = p;
    return ENCDEC_OK;
}

void ed_pool_free(ed_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i - 1], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    for (int i = 0; p->scratch && p->scratch_cap && i < p->n; i++) free(p->scratch[i]);
    free(p->scratch);
    free(p->scratch_cap);
    free(p->threads);
    free(p);
}

void *ed_pool_scratch(ed_pool *p, int ith, size_t bytes) {
    if (!p || ith < 0 || ith >= p->n) return NULL;
    if (p->scratch_cap[ith] < bytes) {   /* grown 64-byte aligned; contents not kept */
        void *q = NULL;
        size_t n = (bytes + 63) & ~(size_t)63;
        if (n < bytes || posix_memalign(&q, 64, n) != 0) return NULL;
        free(p->scratch[ith]);
        p->scratch[ith] = q;
        p->scratch_cap[ith] = n;
    }
    return p->scratch[ith];
}

int ed_pool_size(const ed_pool *p) { return p ? p->n : 1; }

void ed_pool_set_isa(ed_pool *p, int lim) {
    if (p) p->isa = lim;
}

int ed_pool_isa(const ed_pool *p) { return p ? p->isa : ED_ISA_ANY; }

void ed_pool_run(ed_pool *p, ed_pool_fn fn, void *ctx) {
    if (!p) {
        fn(ctx, 0, 1);
        return;
    }
    int old = ed_isa_swap(p->isa);
    if (p->n == 1) {
        fn(ctx, 0, 1);
        ed_isa_swap(old);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->pending, p->n - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    fn(ctx, 0, p->n);

    double t0 = 0;
    for (unsigned i = 1; atomic_load(&p->pending) > 0; i++)
        if (!spin_round(i, &t0)) break;
    if (atomic_load(&p->pending) > 0) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->caller_sleeps, 1);
        while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done, &p->mu);
        atomic_store(&p->caller_sleeps, 0);
        pthread_mutex_unlock(&p->mu);
    }
    ed_isa_swap(old);
}

void ed_split(int n, int ith, int nth, int align, int *lo, int *hi) {
    if (align < 1) align = 1;
    int blocks = (n + align - 1) / align;
    int b0 = (int)((long long)blocks * ith / nth);
    int b1 = (int)((long long)blocks * (ith + 1) / nth);
    *lo = b0 * align < n ? b0 * align : n;
    *hi = b1 * align < n ? b1 * align : n;
}

void ed_pool_set_device(ed_pool *p, void *dev) { p->dev = dev; }
void *ed_pool_device(const ed_pool *p) { return p ? p->dev : NULL; }
