/* dtw.c - the alignment path and the median filter (see asr_internal.h). */
#include "asr/asr_internal.h"

#include <math.h>

int asr_dtw(const double *x, int N, int M, float *acc, signed char *trace, int *pi, int *pj) {
    size_t ld = (size_t)M + 1;
    for (size_t i = 0; i < (size_t)(N + 1) * ld; i++) {
        acc[i] = INFINITY;
        trace[i] = -1;
    }
    acc[0] = 0;
    for (int j = 1; j <= M; j++)
        for (int i = 1; i <= N; i++) {
            float c0 = acc[(i - 1) * ld + j - 1], c1 = acc[(i - 1) * ld + j], c2 = acc[i * ld + j - 1];
            float c;
            signed char t;
            if (c0 < c1 && c0 < c2) c = c0, t = 0;
            else if (c1 < c0 && c1 < c2) c = c1, t = 1;
            else c = c2, t = 2;
            acc[i * ld + j] = (float)(x[(size_t)(i - 1) * M + j - 1] + (double)c);
            trace[i * ld + j] = t;
        }
    for (int j = 0; j <= M; j++) trace[j] = 2;        /* the first row leads left */
    for (int i = 0; i <= N; i++) trace[i * ld] = 1;   /* the first column leads up */
    int i = N, j = M, n = 0;
    while (i > 0 || j > 0) {   /* walked backwards, then reversed */
        pi[n] = i - 1;
        pj[n++] = j - 1;
        signed char t = trace[(size_t)i * ld + j];
        if (t == 0) i--, j--;
        else if (t == 1) i--;
        else j--;
    }
    for (int a = 0, b = n - 1; a < b; a++, b--) {
        int ti = pi[a], tj = pj[a];
        pi[a] = pi[b], pj[a] = pj[b];
        pi[b] = ti, pj[b] = tj;
    }
    return n;
}

void asr_median_filter(float *x, int n_rows, int n, int width, float *tmp) {
    int pad = width / 2;
    if (n <= pad) return;
    float win[64];
    if (width > 64) return;
    for (int r = 0; r < n_rows; r++) {
        float *row = x + (size_t)r * n;
        for (int i = 0; i < n + 2 * pad; i++) {   /* reflect: -1 -> 1, n -> n - 2 */
            int k = i - pad;
            if (k < 0) k = -k;
            if (k >= n) k = 2 * (n - 1) - k;
            tmp[i] = row[k];
        }
        for (int i = 0; i < n; i++) {   /* a few values: insertion sort */
            for (int k = 0; k < width; k++) {
                float v = tmp[i + k];
                int at = k;
                while (at > 0 && win[at - 1] > v) {
                    win[at] = win[at - 1];
                    at--;
                }
                win[at] = v;
            }
            row[i] = win[pad];
        }
    }
}
