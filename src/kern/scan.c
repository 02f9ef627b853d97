/* scan.c - one pass over weights at load: are they finite, how large. */
#include "kern/kern.h"
#include "kern/poly.h"

#include <math.h>

#define SCAN_LANES 16

/* Independent lanes so the loop vectorises; a NaN makes its lane's sum NaN,
 * an Inf makes its lane's maximum (and sum) Inf, so one test at the end
 * covers every element. */
K_CLONED(, int, k_scan_stats, (const float *x, size_t n, float *amax, double *sumsq),
         (x, n, amax, sumsq)) {
    float m[SCAN_LANES] = {0}, s[SCAN_LANES] = {0};
    size_t i = 0;
    for (; i + SCAN_LANES <= n; i += SCAN_LANES)
        for (int j = 0; j < SCAN_LANES; j++) {
            float v = x[i + j], a = fabsf(v);
            s[j] += v * v;
            m[j] = a > m[j] ? a : m[j];
        }
    for (int j = 0; i < n; i++, j++) {
        float v = x[i], a = fabsf(v);
        s[j] += v * v;
        m[j] = a > m[j] ? a : m[j];
    }
    double ss = 0;
    float mx = 0;
    for (int j = 0; j < SCAN_LANES; j++) {
        ss += s[j];
        mx = m[j] > mx ? m[j] : mx;
    }
    *amax = mx;
    *sumsq = ss;
    return isfinite(ss) && isfinite(mx);
}

int k_scan_stats_ref(const float *x, size_t n, float *amax, double *sumsq) {
    double ss = 0;
    float mx = 0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) ok = 0;
        ss += (double)x[i] * x[i];
        if (fabsf(x[i]) > mx) mx = fabsf(x[i]);
    }
    *amax = mx;
    *sumsq = ss;
    return ok;
}

/* The same lanes over |x| <= lim (a NaN is not). */
K_CLONED(, size_t, k_absmax_within, (const float *x, size_t n, float lim, float *amax),
         (x, n, lim, amax)) {
    float m[SCAN_LANES] = {0};
    int c[SCAN_LANES] = {0};
    size_t i = 0, out = 0;
    for (; i + SCAN_LANES <= n; i += SCAN_LANES) {
        for (int j = 0; j < SCAN_LANES; j++) {
            float a = fabsf(x[i + j]);
            int in = a <= lim;
            m[j] = in && a > m[j] ? a : m[j];
            c[j] += !in;
        }
        if (((i / SCAN_LANES) & 4095) == 4095)   /* the counts stay far from overflow */
            for (int j = 0; j < SCAN_LANES; j++) out += (size_t)c[j], c[j] = 0;
    }
    for (int j = 0; i < n; i++, j++) {
        float a = fabsf(x[i]);
        int in = a <= lim;
        m[j] = in && a > m[j] ? a : m[j];
        c[j] += !in;
    }
    float mx = 0;
    for (int j = 0; j < SCAN_LANES; j++) {
        out += (size_t)c[j];
        mx = m[j] > mx ? m[j] : mx;
    }
    *amax = mx;
    return out;
}

size_t k_absmax_within_ref(const float *x, size_t n, float lim, float *amax) {
    size_t out = 0;
    float mx = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabsf(x[i]) <= lim) mx = fabsf(x[i]) > mx ? fabsf(x[i]) : mx;
        else out++;
    }
    *amax = mx;
    return out;
}

/* The screened greedy pick's two scans (decode/batch.c), in branch-free
 * lanes. */
K_CLONED(, float, k_max_kept, (const float *raw, const float *row, size_t n), (raw, row, n)) {
    float m[SCAN_LANES];
    for (int j = 0; j < SCAN_LANES; j++) m[j] = -INFINITY;
    size_t i = 0;
    for (; i + SCAN_LANES <= n; i += SCAN_LANES)
        for (int j = 0; j < SCAN_LANES; j++) {
            float a = row[i + j], r = raw[i + j], c = ((a == r) & (r != 0)) ? a : -INFINITY;
            m[j] = c > m[j] ? c : m[j];
        }
    for (int j = 0; i < n; i++, j++) {
        float a = row[i], r = raw[i], c = ((a == r) & (r != 0)) ? a : -INFINITY;
        m[j] = c > m[j] ? c : m[j];
    }
    float mx = -INFINITY;
    for (int j = 0; j < SCAN_LANES; j++) mx = m[j] > mx ? m[j] : mx;
    return mx;
}

K_CLONED(, size_t, k_ids_to_refine, (const float *raw, const float *row, size_t n, float cut, int *ids),
         (raw, row, n, cut, ids)) {
    size_t out = 0;
    for (size_t i = 0; i < n; i += SCAN_LANES) {
        size_t m = n - i < SCAN_LANES ? n - i : SCAN_LANES;
        unsigned char keep[SCAN_LANES];
        int any = 0;
        for (size_t j = 0; j < m; j++) {
            float a = row[i + j], r = raw[i + j];
            keep[j] = (a != -INFINITY) & ((a != r) | (r == 0) | (a >= cut));
            any |= keep[j];
        }
        for (size_t j = 0; any && j < m; j++)
            if (keep[j]) ids[out++] = (int)(i + j);
    }
    return out;
}
