/* test_q8.c - int8 weights (kern/q8.h): packing, row lookup, and the
 * product on every instruction set this CPU has against the scalar twin
 * (exactly: same quantisation, exact integer sums, same fmaf epilogue) and
 * against the float product x . w^T (within the quantisation bound below).
 *
 * The float bound, per output: with x = sx*qx + ex, w = sw*qw + ew,
 * |ex| <= sx/2 and |ew| <= sw/2 (plus float slop: 0.5001),
 *   |y_q8 - y| <= sum_k (|x_k| |ew| + |w_k| |ex| + |ex| |ew|) + 1e-6 (|y| + |b|),
 * and, statistically, the RMS error over a product of uniform [-1, 1] data
 * is about 0.55% of the RMS output (sqrt(2 (1/3) (1/127)^2 / 12 / (1/9))):
 * the test asks for under 2%, leaving out the rows and columns given an
 * outlier on purpose (their max |.| sets a coarse step for the rest).
 *
 * Scratch bounds: every path reads only the k_q8_scratch_bytes(M, K) it
 * was promised; a guard page right after the scratch makes an over-read
 * fault (GCC 12's -O3 loop vectorizer once made the C path read one group
 * past the last row, which crashed --compute int8 on CPUs without
 * AVX-512 VNNI). Run from two threads at once, as the pool runs it.
 *
 * Negative controls: one corrupted packed byte must make the exact
 * comparison fail; columns outside the slice must keep their sentinel.
 * Also: non-finite activations agree across paths, K = 65536 at the int32
 * limit, argument errors. */
#include "check.h"

#include "kern/kern.h"
#include "kern/q8.h"

#include <float.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static unsigned long g_seed = 4242;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000000) / 1000000.0f - 1.0f;
}

static void *amalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
    if (!p) abort();
    return p;
}

/* Random weights [N, K] of type t (halves rounded from f32 by truncation);
 * *wf gets their f32 values. Row 0 is zero when zero_row; row 1 (if any)
 * has one large entry. */
static void *make_w(k_wtype t, int N, int K, float **wf, int zero_row) {
    size_t n = (size_t)N * K;
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++) f[i] = frand();
    if (zero_row) memset(f, 0, sizeof(float) * (size_t)K);
    if (N > 1) f[K + K / 2] = 7.5f;
    void *w;
    if (t == K_F32) {
        w = f;
        *wf = malloc(n * sizeof(float));
        memcpy(*wf, f, n * sizeof(float));
        return w;
    }
    uint16_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &f[i], 4);
        if (t == K_BF16) h[i] = (uint16_t)(u >> 16);
        else if (fabsf(f[i]) < 6.2e-5f) h[i] = (uint16_t)((u >> 16) & 0x8000);
        else h[i] = (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
    }
    k_h_to_f32(f, h, n, t == K_BF16);
    *wf = f;
    return h;
}

/* k_q8_row against w: within s/2 per element, s = max|w|/127 (zero rows
 * exactly zero), and the largest entry of each row comes back as +-127 s. */
static void test_pack(void) {
    const char *names[3] = {"f32", "f16", "bf16"};
    int shapes[][2] = {{37, 70}, {16, 1}, {5, 3}, {100, 384}};
    for (int t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int N = shapes[s][0], K = shapes[s][1];
            float *wf;
            void *w = make_w((k_wtype)t, N, K, &wf, 1);
            size_t bytes = k_q8_bytes(N, K);
            CHECK(bytes >= (size_t)N * K + (size_t)N * 8);
            void *buf = amalloc(bytes);
            k_q8 q = k_q8_pack(buf, (k_w){.p = w, .t = (k_wtype)t}, N, K);
            CHECK(q.data == buf && q.N == N && q.K == K);
            /* determinism: packing twice gives the same bytes */
            void *buf2 = amalloc(bytes);
            k_q8_pack(buf2, (k_w){.p = w, .t = (k_wtype)t}, N, K);
            CHECK(memcmp(buf, buf2, bytes) == 0);
            /* in parts (k_q8_pack_rows: boundaries inside panels): the same
             * bytes; with no padding rows (N a multiple of 16) over any old
             * bytes, else over zeroed ones (the padding rows are the caller's) */
            memset(buf2, N % 16 ? 0 : 0x5a, bytes);
            k_q8 parts = {buf2, N, K};
            k_q8_norms nrm = {0, 0, 0, 1};
            for (int n0 = 0, step = 7; n0 < N; n0 += step, step = step * 2 + 1)
                CHECK_EQ_INT(k_q8_pack_rows(parts, (k_w){.p = (const char *)w + (size_t)n0 * K * (t ? 2 : 4),
                                                   .t = (k_wtype)t},
                                            n0, n0 + step < N ? n0 + step : N, &nrm), 0);
            CHECK(memcmp(buf, buf2, bytes) == 0);
            CHECK_EQ_INT(k_q8_pack_rows(parts, (k_w){.p = w, .t = (k_wtype)t}, 0, N + 1, NULL), -1);
            CHECK_EQ_INT(k_q8_pack_rows(parts, (k_w){.p = w, .t = K_Q8}, 0, N, NULL), -1);
            float *row = malloc(sizeof(float) * (size_t)K);
            int bad = 0, bad_max = 0, bad_bytes = 0;
            double nmax[3] = {0, 0, 0};
            for (int n = 0; n < N; n++) {
                float amax = 0;
                for (int k = 0; k < K; k++) amax = fmaxf(amax, fabsf(wf[(size_t)n * K + k]));
                double sn = amax / 127.0, rmax = 0;
                k_q8_row(row, q, n);
                for (int k = 0; k < K; k++) {
                    double d = fabs((double)row[k] - wf[(size_t)n * K + k]);
                    if (d > sn * 0.5001 + 1e-30) bad++;
                    rmax = fmax(rmax, fabs(row[k]));
                }
                if (fabs(rmax - 127 * sn) > 1e-5 * amax) bad_max++;
                /* the bytes exactly: nearest, ties to even, of w / (amax / 127) in float */
                float snf = amax / 127.0f;
                const int8_t *panel = (const int8_t *)buf + (size_t)(n / 16) * 16 * (size_t)((K + 3) / 4 * 4) + (n % 16) * 4;
                double e2 = 0, h2 = 0, w2 = 0;   /* the norms k_q8_pack_rows reports */
                for (int k = 0; k < K; k++) {
                    double wk = wf[(size_t)n * K + k], wh = (double)snf * panel[(size_t)(k / 4) * 64 + k % 4];
                    e2 += (wk - wh) * (wk - wh), h2 += wh * wh, w2 += wk * wk;
                }
                nmax[0] = fmax(nmax[0], sqrt(e2)), nmax[1] = fmax(nmax[1], sqrt(h2)), nmax[2] = fmax(nmax[2], sqrt(w2));
                for (int k = 0; snf > 0 && k < K; k++) {
                    float r = rintf(wf[(size_t)n * K + k] / snf);
                    int want = r > 127 ? 127 : r < -127 ? -127 : (int)r;
                    bad_bytes += panel[(size_t)(k / 4) * 64 + k % 4] != want;
                }
            }
            CHECK(nrm.finite == 1 && nmax[0] > 0);
            CHECK(fabs(nrm.err - nmax[0]) <= 1e-12 * nmax[0] && fabs(nrm.q - nmax[1]) <= 1e-12 * nmax[1] &&
                  fabs(nrm.w - nmax[2]) <= 1e-12 * nmax[2]);
            CHECK_EQ_INT(bad_bytes, 0);
            if (bad || bad_max) fprintf(stderr, "pack %s [%d x %d]: %d elements off, %d rows' max off\n", names[t], N, K, bad, bad_max);
            CHECK_EQ_INT(bad, 0);
            CHECK_EQ_INT(bad_max, 0);
            k_q8_row(row, q, 0);   /* the zero row */
            int nz = 0;
            for (int k = 0; k < K; k++) nz += row[k] != 0.0f;
            CHECK_EQ_INT(nz, 0);
            free(row), free(buf), free(buf2), free(w), free(wf);
        }
    /* k_q8_quant_err: ||x - s_x qx|| with the activations' rounding
     * (nearest, ties to even, of x * (127 / amax) in float) */
    enum { KE = 300 };
    float xe[KE];
    for (int k = 0; k < KE; k++) xe[k] = 3.0f * frand();
    xe[17] = 2.5f * 3.0f;   /* the largest, and ties below it */
    double want = 0;
    float amax = 7.5f, inv = 127.0f / amax, sx = amax / 127.0f;
    for (int k = 0; k < KE; k++) {
        double d = (double)xe[k] - (double)sx * rintf(xe[k] * inv);
        want += d * d;
    }
    CHECK(fabs(k_q8_quant_err(xe, KE) - sqrt(want)) <= 1e-12 * sqrt(want));
    CHECK(k_q8_quant_err(xe, KE) > 0 && k_q8_quant_err(xe, KE) < 0.5 * sx * sqrt((double)KE));
    memset(xe, 0, sizeof xe);
    CHECK(k_q8_quant_err(xe, KE) == 0);

    /* a weight that is not finite (Inf, NaN) marks the norms so */
    for (int t = 0; t < 2; t++) {
        float wb[3 * 8];
        for (int i = 0; i < 24; i++) wb[i] = 0.1f * (float)(i % 5) - 0.2f;
        wb[13] = t ? NAN : INFINITY;
        void *bb = amalloc(k_q8_bytes(3, 8));
        memset(bb, 0, k_q8_bytes(3, 8));
        k_q8 qb = {bb, 3, 8};
        k_q8_norms nb = {0, 0, 0, 1};
        CHECK_EQ_INT(k_q8_pack_rows(qb, (k_w){.p = wb, .t = K_F32}, 0, 1, &nb), 0);
        CHECK(nb.finite == 1);
        CHECK_EQ_INT(k_q8_pack_rows(qb, (k_w){.p = wb + 8, .t = K_F32}, 1, 3, &nb), 0);
        CHECK(nb.finite == 0);
        free(bb);
    }

    /* out of range */
    CHECK_EQ_INT(k_q8_bytes(4, 0), 0);
    CHECK_EQ_INT(k_q8_bytes(0, 4), 0);
    CHECK_EQ_INT(k_q8_bytes(4, K_Q8_MAX_K + 1), 0);
    CHECK(k_q8_bytes(1, K_Q8_MAX_K) > 0);
    float one = 1;
    char dummy[64];
    k_q8 bad = k_q8_pack(dummy, (k_w){.p = &one, .t = K_F32}, 1, 0);
    CHECK(bad.data == NULL);
}

/* The float reference and the bound on |q8 - float| per output. */
static void float_ref(double *yf, double *bound, const float *x, int ldx, const float *wf,
                      const float *b, int M, int N, int K) {
    for (int i = 0; i < M; i++) {
        const float *xi = x + (size_t)i * ldx;
        float xmax = 0;
        for (int k = 0; k < K; k++) xmax = fmaxf(xmax, fabsf(xi[k]));
        double ex = 0.5001 * xmax / 127.0;
        for (int n = 0; n < N; n++) {
            const float *wn = wf + (size_t)n * K;
            float wmax = 0;
            for (int k = 0; k < K; k++) wmax = fmaxf(wmax, fabsf(wn[k]));
            double ew = 0.5001 * wmax / 127.0, acc = b ? b[n] : 0.0, bd = 0;
            for (int k = 0; k < K; k++) {
                acc += (double)xi[k] * wn[k];
                bd += fabs(xi[k]) * ew + fabs(wn[k]) * ex + ex * ew;
            }
            yf[(size_t)i * N + n] = acc;
            bound[(size_t)i * N + n] = bd + 1e-6 * (fabs(acc) + (b ? fabs(b[n]) : 0.0)) + 1e-30;
        }
    }
}

static int g_isa_seen[3];

/* One shape: every ISA, full width and column slices, against the twin
 * (exact) and the float product (bound, RMS). */
static void test_shape(int M, int N, int K, k_wtype t, int with_b) {
    int ldx = K + 5, ldy = N + 3;
    float *x = malloc(sizeof(float) * (size_t)M * ldx);
    for (size_t i = 0; i < (size_t)M * ldx; i++) x[i] = frand();
    if (M > 2) memset(x + (size_t)2 * ldx, 0, sizeof(float) * (size_t)K);   /* a zero row */
    if (M > 3) x[(size_t)3 * ldx + K / 3] = 40.0f;                         /* an outlier */
    if (M > 4) x[(size_t)4 * ldx + K] = NAN;                               /* past K: never read */
    float *wf, *b = NULL;
    void *w = make_w(t, N, K, &wf, N > 2);
    if (with_b) {
        b = malloc(sizeof(float) * (size_t)N);
        for (int n = 0; n < N; n++) b[n] = frand();
    }
    void *buf = amalloc(k_q8_bytes(N, K));
    k_q8 q = k_q8_pack(buf, (k_w){.p = w, .t = t}, N, K);
    void *scratch = malloc(k_q8_scratch_bytes(M, K) + 1);
    float *y = malloc(sizeof(float) * (size_t)M * ldy), *r = malloc(sizeof(float) * (size_t)M * ldy);
    double *yf = malloc(sizeof(double) * (size_t)M * N), *bd = malloc(sizeof(double) * (size_t)M * N);
    float_ref(yf, bd, x, ldx, wf, b, M, N, K);

    /* the twin against the float product, full width */
    k_matmul_q8_ref(r, ldy, x, ldx, q, b, M, 0, N);
    int over = 0;
    double se = 0, sy = 0, worst = 0;
    int cnt = 0;
    for (int i = 0; i < M; i++)
        for (int n = 0; n < N; n++) {
            double d = fabs(r[(size_t)i * ldy + n] - yf[(size_t)i * N + n]);
            double y0 = yf[(size_t)i * N + n] - (b ? b[n] : 0.0);
            if (!(d <= bd[(size_t)i * N + n])) over++;
            if (d / bd[(size_t)i * N + n] > worst) worst = d / bd[(size_t)i * N + n];
            if (i != 3 && n != 1) se += d * d, sy += y0 * y0, cnt++;   /* not the outlier row / column */
        }
    if (over) fprintf(stderr, "[%d x %d x %d]: %d outputs beyond the bound (worst %.2fx)\n", M, N, K, over, worst);
    CHECK_EQ_INT(over, 0);
    if (K >= 64 && cnt >= 16 && sy > 0) {   /* enough terms and outputs for a statistic */
        double rel = sqrt(se / sy);
        if (!(rel < 0.02)) fprintf(stderr, "[%d x %d x %d]: RMS error %.4f of RMS output\n", M, N, K, rel);
        CHECK(rel < 0.02);
    }

    /* slices: full, unaligned, aligned, a single column, the last columns */
    int sl[][2] = {{0, N}, {5, N - 9}, {16, 16}, {N / 2, 1}, {N > 20 ? N - 20 : 0, N > 20 ? 20 : N}, {N / 3, N - N / 3}};
    for (size_t s = 0; s < sizeof sl / sizeof sl[0]; s++) {
        int n0 = sl[s][0], nn = sl[s][1];
        if (n0 < 0 || nn < 1 || n0 + nn > N) continue;
        for (int isa = 0; isa <= 2; isa++) {
            for (size_t i = 0; i < (size_t)M * ldy; i++) y[i] = -12345.0f;
            int used = k_matmul_q8_isa(isa, y, ldy, x, ldx, q, b, M, n0, nn, scratch);
            CHECK(used >= 0 && used <= isa);
            if (used >= 0) g_isa_seen[used] = 1;
            int diff = 0, touched = 0;
            for (int i = 0; i < M; i++)
                for (int n = 0; n < ldy; n++) {
                    float v = y[(size_t)i * ldy + n];
                    if (n >= n0 && n < n0 + nn) diff += !(v == r[(size_t)i * ldy + n]);
                    else touched += v != -12345.0f;
                }
            if (diff || touched)
                fprintf(stderr, "[%d x %d x %d] isa %d (used %d) cols [%d, %d): %d differ from the twin, %d outside written\n",
                        M, N, K, isa, used, n0, n0 + nn, diff, touched);
            CHECK_EQ_INT(diff, 0);
            CHECK_EQ_INT(touched, 0);
        }
    }
    /* the twin on a slice agrees with itself on the full width */
    if (N > 9) {
        float *r2 = malloc(sizeof(float) * (size_t)M * ldy);
        k_matmul_q8_ref(r2, ldy, x, ldx, q, b, M, 5, N - 9);
        int diff = 0;
        for (int i = 0; i < M; i++)
            for (int n = 5; n < N - 4; n++) diff += r2[(size_t)i * ldy + n] != r[(size_t)i * ldy + n];
        CHECK_EQ_INT(diff, 0);
        free(r2);
    }
    free(x), free(wf), free(b), free(w), free(buf), free(scratch), free(y), free(r), free(yf), free(bd);
}

/* The exact comparison has teeth: one changed packed weight byte (panel 0,
 * output 3, k = 2) changes output column 3 on every path. */
static void test_negative(void) {
    int M = 2, N = 20, K = 64;
    float *x = malloc(sizeof(float) * M * K), *wf;
    for (int i = 0; i < M * K; i++) x[i] = 0.5f + 0.5f * fabsf(frand());
    void *w = make_w(K_F32, N, K, &wf, 0);
    size_t bytes = k_q8_bytes(N, K);
    int8_t *buf = amalloc(bytes), *bad = amalloc(bytes);
    k_q8 q = k_q8_pack(buf, (k_w){.p = w, .t = K_F32}, N, K);
    memcpy(bad, buf, bytes);
    bad[3 * 4 + 2] = (int8_t)(bad[3 * 4 + 2] > 0 ? bad[3 * 4 + 2] - 9 : bad[3 * 4 + 2] + 9);
    k_q8 qb = {bad, N, K};
    float y[2 * 20], r[2 * 20];
    void *scratch = malloc(k_q8_scratch_bytes(M, K));
    k_matmul_q8_ref(r, N, x, K, q, NULL, M, 0, N);
    for (int isa = 0; isa <= 2; isa++) {
        k_matmul_q8_isa(isa, y, N, x, K, qb, NULL, M, 0, N, scratch);
        int diff = 0;
        for (int i = 0; i < M * N; i++) diff += y[i] != r[i];
        CHECK_EQ_INT(diff, M);   /* column 3 of both rows, nothing else */
    }
    /* non-finite activations: a NaN (quantised to -127) and an infinity in
     * a row give the same outputs on every path (NaN where the twin has NaN) */
    x[5] = NAN, x[K + 7] = INFINITY;
    k_matmul_q8_ref(r, N, x, K, q, NULL, M, 0, N);
    for (int isa = 0; isa <= 2; isa++) {
        k_matmul_q8_isa(isa, y, N, x, K, q, NULL, M, 0, N, scratch);
        int diff = 0, finite = 0;
        for (int i = 0; i < M * N; i++) {
            diff += !(y[i] == r[i] || (y[i] != y[i] && r[i] != r[i]));
            finite += i < N && isfinite(r[i]);
        }
        CHECK_EQ_INT(diff, 0);
        CHECK_EQ_INT(finite, N);   /* the NaN row still has finite outputs */
    }
    /* bad arguments */
    CHECK_EQ_INT(k_matmul_q8(y, N, x, K, q, NULL, M, 10, 11, scratch), -1);
    CHECK_EQ_INT(k_matmul_q8(y, N, x, K, q, NULL, M, -1, 2, scratch), -1);
    k_q8 none = {NULL, N, K};
    CHECK_EQ_INT(k_matmul_q8(y, N, x, K, none, NULL, M, 0, N, scratch), -1);
    free(x), free(wf), free(w), free(buf), free(bad), free(scratch);
}

/* K = K_Q8_MAX_K at the extremes: biased activations all 255 against
 * weights all -127 (and +127): the widest partial sums the kernels form
 * (255 * 127 * 65536 < 2^31), compared with the twin's int64 sums. */
static void test_max_k(void) {
    int M = 2, N = 18, K = K_Q8_MAX_K;
    float *x = malloc(sizeof(float) * (size_t)M * K), *w = malloc(sizeof(float) * (size_t)N * K);
    for (size_t i = 0; i < (size_t)M * K; i++) x[i] = i < (size_t)K ? 1.0f : -1.0f;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) w[(size_t)n * K + k] = n % 2 ? 1.0f : -1.0f;
    void *buf = amalloc(k_q8_bytes(N, K));
    k_q8 q = k_q8_pack(buf, (k_w){.p = w, .t = K_F32}, N, K);
    void *scratch = malloc(k_q8_scratch_bytes(M, K));
    float y[2 * 18], r[2 * 18];
    k_matmul_q8_ref(r, N, x, K, q, NULL, M, 0, N);
    CHECK_NEAR(r[0], -65536.0, 0.05);
    CHECK_NEAR(r[1], 65536.0, 0.05);
    CHECK_NEAR(r[N], 65536.0, 0.05);
    for (int isa = 0; isa <= 2; isa++) {
        k_matmul_q8_isa(isa, y, N, x, K, q, NULL, M, 0, N, scratch);
        int diff = 0;
        for (int i = 0; i < M * N; i++) diff += y[i] != r[i];
        CHECK_EQ_INT(diff, 0);
    }
    free(x), free(w), free(buf), free(scratch);
}

/* One product per M on ISA `isa`, the scratch ending at a PROT_NONE page;
 * compared with the twin. */
typedef struct {
    int isa, bad;
} guard_job;

static void *guard_run(void *arg) {
    guard_job *j = arg;
    int N = 40, K = 384, Ms[] = {1, 4, 5, 6, 8, 9, 33, 1500};
    long pg = sysconf(_SC_PAGESIZE);
    float *w = malloc(sizeof(float) * (size_t)N * K);
    for (int i = 0; i < N * K; i++) w[i] = (float)((i * 7919) % 200 - 100) / 50;
    void *buf = amalloc(k_q8_bytes(N, K));
    k_q8 q = k_q8_pack(buf, (k_w){.p = w, .t = K_F32}, N, K);
    for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
        int M = Ms[mi];
        size_t sb = k_q8_scratch_bytes(M, K), tot = (sb + pg - 1) / pg * pg + pg;
        char *m = mmap(NULL, tot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED || mprotect(m + tot - pg, pg, PROT_NONE)) abort();
        float *x = malloc(sizeof(float) * (size_t)M * K), *y = malloc(sizeof(float) * (size_t)M * N),
              *r = malloc(sizeof(float) * (size_t)M * N);
        for (int i = 0; i < M * K; i++) x[i] = (float)((i * 31) % 100 - 50) / 7;
        k_matmul_q8_isa(j->isa, y, N, x, K, q, NULL, M, 0, N, m + tot - pg - sb);
        k_matmul_q8_ref(r, N, x, K, q, NULL, M, 0, N);
        for (int i = 0; i < M * N; i++) j->bad += y[i] != r[i];
        free(x), free(y), free(r);
        munmap(m, tot);
    }
    free(w), free(buf);
    return NULL;
}

static void test_scratch_guard(void) {
    for (int isa = 0; isa <= 2; isa++) {
        guard_job jobs[2] = {{isa, 0}, {isa, 0}};
        pthread_t th;
        CHECK_EQ_INT(pthread_create(&th, NULL, guard_run, &jobs[1]), 0);
        guard_run(&jobs[0]);
        pthread_join(th, NULL);
        CHECK_EQ_INT(jobs[0].bad + jobs[1].bad, 0);
    }
}

static void run_all(void) {
    test_scratch_guard();
    test_pack();
    test_negative();
    test_max_k();
#ifdef ED_EMULATED   /* qemu-user: fewer shapes (each path still meets edges, blocks and chunks) */
    int Ms[] = {1, 2, 5, 16, 37}, Ks[] = {1, 3, 64, 1536}, Ns[] = {1, 17, 100};
#else
    int Ms[] = {1, 2, 5, 16, 37, 300}, Ks[] = {1, 3, 64, 384, 1536}, Ns[] = {1, 17, 100};
#endif
    int c = 0;
    for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++, c++)
                test_shape(Ms[mi], Ns[ni], Ks[ki], (k_wtype)(c % 3), c % 2);
    test_shape(37, 300, 1536, K_F16, 1);    /* several column blocks of many rows */
    test_shape(7, 300, 384, K_BF16, 0);     /* two row chunks */
#ifndef ED_EMULATED
    test_shape(1, 51866, 384, K_F16, 1);    /* the vocabulary projection */
#endif
}

int main(void) {
    run_all();
    if (k_feat_cpu() & K_FEAT_DOTPROD) {   /* aarch64 sdot: run the path beneath it too */
        printf("again without the dot-product extension (smull + sadalp)\n");
        unsigned old = k_feat_mask(0);
        run_all();
        k_feat_mask(old);
    }
    if (k_feat_cpu() & K_FEAT_AVXVNNI) {   /* x86 AVX-VNNI: run the plain AVX2 tiles too */
        printf("again without AVX-VNNI (vpmaddubsw + vpmaddwd)\n");
        unsigned old = k_feat_mask(0);
        run_all();
        k_feat_mask(old);
    }
    printf("ISAs run: C %s, vector (AVX2 / NEON) %s, AVX-512 VNNI %s\n", g_isa_seen[0] ? "yes" : "no",
           g_isa_seen[1] ? "yes" : "no", g_isa_seen[2] ? "yes" : "no");
    if (k_isa_cpu() >= K_ISA_VEC) CHECK(g_isa_seen[1]);
    return check_done();
}
