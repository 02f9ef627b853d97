/* bandwidth.h - the read-bandwidth measurement the benchmarks share: every
 * pool thread sums its slice of a buffer far larger than the caches with
 * wide loads and 64 independent lanes.
 *
 *   bench_bw bw = {buf, n};  double gbps = bench_bw_pass(pool, &bw);
 */
#ifndef ED_BENCH_BANDWIDTH_H
#define ED_BENCH_BANDWIDTH_H

#include "stats.h"
#include "base/pool.h"

#include <stddef.h>

typedef struct {
    const float *buf;
    size_t n;
    double sum[256];
} bench_bw;

/* Sum of x[0, n) in 64 lanes, cloned per instruction set like the kernels. */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static double bench_sum_floats(const float *x, size_t n) {
    float acc[64] = {0};
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int j = 0; j < 64; j++) acc[j] += x[i + j];
    double s = 0;
    for (int j = 0; j < 64; j++) s += acc[j];
    return s;
}

static void bench_bw_task(void *arg, int ith, int nth) {
    bench_bw *c = arg;
    size_t lo = c->n * (size_t)ith / (size_t)nth, hi = c->n * (size_t)(ith + 1) / (size_t)nth;
    c->sum[ith] = bench_sum_floats(c->buf + lo, hi - lo);
}

/* One streaming pass over the buffer on every thread of p: GB/s. */
static inline double bench_bw_pass(ed_pool *p, bench_bw *c) {
    double t0 = bench_now_ms();
    ed_pool_run(p, bench_bw_task, c);
    return (double)c->n * sizeof(float) / ((bench_now_ms() - t0) * 1e6);
}

#endif
