/* pool.h - a small fork-join thread pool, owned by whoever creates it (a
 * session); there is no global pool.
 *
 *   ed_pool *p;  ed_pool_new(&p, 4);          4 = caller + 3 workers
 *   ed_pool_run(p, fn, ctx);                   fn(ctx, ith, nth) on every thread, joined
 *   ed_pool_free(p);
 *
 * ed_pool_run calls fn(ctx, ith, nth) for ith in [0, nth) with the calling
 * thread as ith 0, and returns when all have returned: a task picks its own
 * slice from (ith, nth). Workers wait on a condition variable between runs
 * after a short spin (no spinning while a session is idle). Not reentrant:
 * one run at a time.
 */
#ifndef ED_POOL_H
#define ED_POOL_H

#include "encdec.h"

#define ED_POOL_MAX_THREADS 256

typedef struct ed_pool ed_pool;
typedef void (*ed_pool_fn)(void *ctx, int ith, int nth);

encdec_status ed_pool_new(ed_pool **out, int n_threads);
void ed_pool_free(ed_pool *p);
int ed_pool_size(const ed_pool *p);
void ed_pool_run(ed_pool *p, ed_pool_fn fn, void *ctx);

/* The instruction-set limit (base/isa.h) every thread of a run works under,
 * the caller's included for the run's duration (default: the limit of the
 * thread that made the pool). */
void ed_pool_set_isa(ed_pool *p, int lim);
int ed_pool_isa(const ed_pool *p);

/* The device the ops run on (core/dev.h; NULL, the default: the CPU, on
 * this pool's threads). Borrowed: it must outlive the pool's use. */
void ed_pool_set_device(ed_pool *p, void *dev);
void *ed_pool_device(const ed_pool *p);

/* Thread ith's scratch memory of at least `bytes`, 64-byte aligned, owned by
 * the pool (grown on demand, contents then lost; freed with it); for use
 * inside a task by thread ith only.
 * NULL when it cannot grow (the task must then manage without). */
void *ed_pool_scratch(ed_pool *p, int ith, size_t bytes);

/* Splits [0, n) into nth near-equal ranges aligned to `align`; range ith. */
void ed_split(int n, int ith, int nth, int align, int *lo, int *hi);

#endif
