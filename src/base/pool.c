/* pool.c - fork-join pool on pthreads: a generation counter wakes workers,
 * a pending counter tells the caller when every slice is done. */
#include "base/pool.h"
#include "base/err.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct ed_pool {
    int n;                 /* threads including the caller */
    pthread_t *threads;    /* [n - 1] */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    unsigned long gen;     /* bumped once per run */
    int pending;           /* workers still running the current fn */
    int quit;
    ed_pool_fn fn;
    void *ctx;
    void **scratch;        /* [n] per-thread scratch (ed_pool_scratch) */
    size_t *scratch_cap;   /* [n] its size in bytes */
};

typedef struct { ed_pool *p; int ith; } worker_arg;

static void *worker_main(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    ed_pool *p = wa.p;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->quit && p->gen == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->gen;
        ed_pool_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);

        fn(ctx, wa.ith, p->n);

        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
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
    p->quit = 1;
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
    if (p->scratch_cap[ith] < bytes) {
        void *q = realloc(p->scratch[ith], bytes);
        if (!q) return NULL;
        p->scratch[ith] = q;
        p->scratch_cap[ith] = bytes;
    }
    return p->scratch[ith];
}

int ed_pool_size(const ed_pool *p) { return p ? p->n : 1; }

void ed_pool_run(ed_pool *p, ed_pool_fn fn, void *ctx) {
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->pending = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    fn(ctx, 0, p->n);

    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void ed_split(int n, int ith, int nth, int align, int *lo, int *hi) {
    if (align < 1) align = 1;
    int blocks = (n + align - 1) / align;
    int b0 = (int)((long long)blocks * ith / nth);
    int b1 = (int)((long long)blocks * (ith + 1) / nth);
    *lo = b0 * align < n ? b0 * align : n;
    *hi = b1 * align < n ? b1 * align : n;
}
