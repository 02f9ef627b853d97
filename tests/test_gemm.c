/* test_gemm.c - k_gemm (every instruction set this CPU has: C, AVX-512,
 * AVX512_BF16, AMX-BF16) against k_gemm_ref, its scalar twin, and the paths
 * against each other. The AMX checks run where the CPU has AMX and Linux
 * grants the tile state, and are reported as skipped elsewhere.
 *
 * Tolerance: element (i, j) may differ from the reference by TOL * S(i, j),
 * S = |b_j| + sum_k |x_ik| |w_jk| (the magnitude the f32 sums work at),
 * TOL = 1e-5, in fp32 mode and in bf16 mode (whose reference rounds x and w
 * to bf16 the same way, so only the summation differs); the same with GELU
 * (its slope is below 1.13 and its erf approximation within 1.5e-7).
 * Shapes: ragged edges of every block (M, N, K around 14, 32, 384, 768;
 * K odd; M = 1, N = 1, K = 0), strides ldx > K and ldy > N, several column
 * blocks, all weight types, with and without bias and GELU (AMX: the same
 * shapes, plus edges of its 16-row groups, 32-k chunks and 1536-k blocks,
 * and several threads running it at once); then the encoder's shapes on
 * sampled rows; K_GEMM_ACC (y's old values added, with and without bias and
 * GELU, over several K blocks) and overlapping rows of x (ldx < K, the
 * convolution windows); weights packed at load for AMX (K_BF16A): every
 * element reads back as its bf16 rounding, and products on AMX and C agree
 * with the reference; the few-row fp32 path bit for bit the packed path's.
 * NaN in x's row padding catches reads
 * past K, a sentinel in y's padding catches writes past N. Controls: a
 * perturbed result and a wrong reference must fail the same comparison.
 */
#include "check.h"

#include "kern/gemm.h"
#include "kern/kern.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5
#define SENTINEL 12345.0f

static unsigned long g_seed = 4242;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000000) / 1000000.0f - 1.0f;
}

static void *xalloc(size_t bytes) {   /* 64-byte aligned, as k_gemm wants */
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p) abort();
    return p;
}

/* A weight matrix [N, K] of type t: the stored bits and the f32 values. */
typedef struct {
    k_w w;
    float *f;
} tw;

static uint16_t f2h(float v) {   /* f32 -> f16, truncating (tests only need valid halves) */
    uint32_t u;
    memcpy(&u, &v, 4);
    if (fabsf(v) < 6.2e-5f) return (uint16_t)((u >> 16) & 0x8000);
    return (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
}

static tw make_w(int N, int K, k_wtype t) {
    size_t n = (size_t)N * K;
    tw r = {{NULL, t}, malloc(sizeof(float) * (n ? n : 1))};
    for (size_t i = 0; i < n; i++) r.f[i] = frand();
    if (t == K_F32) {
        float *p = malloc(sizeof(float) * (n ? n : 1));
        memcpy(p, r.f, sizeof(float) * n);
        r.w.p = p;
    } else {
        uint16_t *h = malloc(sizeof(uint16_t) * (n ? n : 1));
        for (size_t i = 0; i < n; i++) h[i] = t == K_BF16 ? k_f32_to_bf16(r.f[i]) : f2h(r.f[i]);
        k_h_to_f32(r.f, h, n, t == K_BF16);
        r.w.p = h;
    }
    return r;
}

static void free_w(tw *w) {
    free((void *)w->w.p);
    free(w->f);
}

/* Worst |y - ref| / (TOL * S) over rows [r0, r1) (y, ref: row strides ldy,
 * ldr; ref row i - r0). Above 1 fails. */
static double worst_ratio(const float *y, int ldy, const float *ref, int ldr, const float *x,
                          int ldx, const float *wf, const float *b, int r0, int r1, int N, int K) {
    double worst = 0;
    for (int i = r0; i < r1; i++)
        for (int j = 0; j < N; j++) {
            double s = b ? fabs(b[j]) : 0;
            for (int k = 0; k < K; k++) s += fabs((double)x[(size_t)i * ldx + k] * wf[(size_t)j * K + k]);
            double d = fabs((double)y[(size_t)i * ldy + j] - ref[(size_t)(i - r0) * ldr + j]);
            double r = d / (TOL * s + 1e-30);
            if (!(r <= worst)) worst = r;   /* NaN -> NaN, fails */
        }
    return worst;
}

static const char *wname(k_wtype t) { return t == K_F32 ? "f32" : t == K_F16 ? "f16" : "bf16"; }

/* One product on one instruction set, all checks. Returns the worst ratio. */
static double run_one(int isa, int M, int N, int K, int ldx, int ldy, tw *w, k_gemm_mode mode,
                      int bias, int gelu, const float *x, const float *b) {
    float *y = malloc(sizeof(float) * ((size_t)M * ldy + 1));
    float *r = malloc(sizeof(float) * ((size_t)M * N + 1));
    for (size_t i = 0; i < (size_t)M * ldy; i++) y[i] = SENTINEL;
    void *s = xalloc(k_gemm_scratch_bytes(M, N, K, mode));
    int used = k_gemm_isa(isa, y, ldy, x, ldx, w->w, bias ? b : NULL, M, N, K, mode, gelu, s);
    int want = k_gemm_path(isa, mode);
    if (want != 3 && w->w.t == K_BF16A) want = 0;   /* AMX-packed weights off AMX: read by C */
    CHECK_EQ_INT(used, want);
    k_gemm_ref(r, N, x, ldx, w->w, bias ? b : NULL, M, N, K, mode, gelu);
    /* the bound's magnitudes: bf16 mode works on rounded values (close enough) */
    double worst = worst_ratio(y, ldy, r, N, x, ldx, w->f, bias ? b : NULL, 0, M, N, K);
    int pad_ok = 1;
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldy; j++) pad_ok &= y[(size_t)i * ldy + j] == SENTINEL;
    CHECK(pad_ok);
    if (!(worst <= 1) || !pad_ok)
        fprintf(stderr, "  isa %d %dx%dx%d ldx %d ldy %d w %s mode %d bias %d gelu %d: worst %.3g\n",
                isa, M, N, K, ldx, ldy, wname(w->w.t), mode, bias, gelu, worst);
    free(y), free(r), free(s);
    return worst;
}

static float *make_x(int M, int K, int ldx) {
    float *x = malloc(sizeof(float) * ((size_t)M * ldx + 1));
    for (int i = 0; i < M; i++)
        for (int k = 0; k < ldx; k++) x[(size_t)i * ldx + k] = k < K ? frand() : NAN;   /* never read */
    return x;
}

/* Ragged shapes, every weight type, mode, bias / GELU, on C, AVX-512 and
 * (bf16 mode, where present) AMX. */
static void test_shapes(void) {
    static const int sh[][5] = {   /* M, N, K, ldx - K, ldy - N */
        {1, 1, 1, 0, 0},      {1, 37, 19, 3, 0},    {2, 33, 1, 0, 5},     {3, 5, 0, 0, 0},
        {13, 31, 17, 1, 1},   {14, 32, 16, 0, 0},   {15, 33, 385, 7, 3},  {16, 64, 383, 0, 0},
        {29, 65, 767, 1, 0},  {28, 96, 768, 0, 0},  {31, 17, 769, 0, 2},  {3, 1, 1000, 2, 0},
        {45, 600, 400, 0, 16}, {1, 100, 1537, 0, 0}, {60, 48, 2, 0, 0},   {43, 3, 64, 0, 0}};
    static const k_wtype types[] = {K_F32, K_F16, K_BF16};
    for (size_t q = 0; q < sizeof sh / sizeof sh[0]; q++) {
        int M = sh[q][0], N = sh[q][1], K = sh[q][2], ldx = K + sh[q][3], ldy = N + sh[q][4];
        float *x = make_x(M, K, ldx), *b = malloc(sizeof(float) * (size_t)N);
        for (int j = 0; j < N; j++) b[j] = frand();
        for (int t = 0; t < 3; t++) {
            tw w = make_w(N, K, types[t]);
            for (int mode = 0; mode < 2; mode++)
                for (int v = 0; v < 4; v++)
                    for (int isa = 0; isa <= 3; isa += isa ? 1 : 2) {
                        if (isa == 3 && (mode == 0 || !k_gemm_has_amx())) continue;
                        CHECK(run_one(isa, M, N, K, ldx, ldy, &w, (k_gemm_mode)mode, v & 1, v >> 1,
                                      x, b) <= 1);
                    }
            free_w(&w);
        }
        free(x), free(b);
    }
}

/* The few-row fp32 path (gemm_ws.c: x transposed, w broadcast in place)
 * against the packed path on the same product, bit for bit: the op layer's
 * promise that sums follow K's blocking only holds whichever path k_gemm
 * takes, AVX-512 and AVX2 (where the CPU has them). Shapes around its
 * edges (rows of x: 1, 16, 17, 32, 33, 128, and past 128 while x^T is at
 * most 512 KB (200 and 256 rows of K 512 take it, 129 of K 1100 not);
 * rows of w around its 14-, 28- (16 rows or fewer: gemm_ws16.c) and
 * 6-row tiles, the 64 it starts at; K across the 384- and 768-k blocks,
 * and rows 2 or 4 KB apart, which gemm_ws16.c takes 20 and 10 at a time),
 * strides, bias, GELU (the AVX2 path leaves it to the packed one),
 * K_GEMM_ACC; also the reference's tolerance and y's padding (run_one). */
static void test_ws_isa(int isa) {
    static const int sh[][5] = {   /* M, N, K, ldx - K, ldy - N */
        {1, 64, 1, 0, 0},      {5, 77, 7, 3, 1},     {16, 64, 383, 0, 0},  {17, 65, 384, 1, 0},
        {32, 70, 385, 0, 5},   {33, 99, 512, 0, 0},  {64, 300, 800, 2, 3}, {100, 141, 1200, 0, 0},
        {128, 128, 96, 0, 0},  {31, 1000, 512, 0, 0}, {9, 67, 769, 0, 0},  {15, 130, 1537, 1, 1},
        {200, 90, 512, 1, 3},  {256, 64, 512, 0, 0},  {129, 70, 1100, 0, 0},
        {16, 85, 1024, 0, 2},  {8, 57, 512, 3, 0},    {11, 112, 2048, 0, 0}};   /* past 128 rows: x^T's bound */
    int checked = 0, ws = 0, same = 0;
    for (size_t q = 0; q < sizeof sh / sizeof sh[0]; q++) {
        int M = sh[q][0], N = sh[q][1], K = sh[q][2], ldx = K + sh[q][3], ldy = N + sh[q][4];
        ws += gemm_ws_takes(M, N, K);
        float *x = make_x(M, K, ldx), *b = malloc(sizeof(float) * (size_t)N);
        for (int j = 0; j < N; j++) b[j] = frand();
        tw w = make_w(N, K, K_F32);
        float *y0 = malloc(sizeof(float) * (size_t)M * ldy), *y1 = malloc(sizeof(float) * (size_t)M * ldy);
        float *yi = malloc(sizeof(float) * (size_t)M * ldy);   /* y's old values for K_GEMM_ACC */
        void *s = xalloc(k_gemm_scratch_bytes(M, N, K, K_GEMM_F32));
        for (size_t i = 0; i < (size_t)M * ldy; i++) yi[i] = frand();
        for (int epi = 0; epi < 4; epi++)
            for (int bias = 0; bias < 2; bias++) {
                memcpy(y0, yi, sizeof(float) * (size_t)M * ldy);
                memcpy(y1, yi, sizeof(float) * (size_t)M * ldy);
                CHECK_EQ_INT(k_gemm_isa(isa, y0, ldy, x, ldx, w.w, bias ? b : NULL, M, N, K, K_GEMM_F32, epi, s), isa);
                CHECK_EQ_INT(gemm_packed_isa(isa, y1, ldy, x, ldx, w.w, bias ? b : NULL, M, N, K, K_GEMM_F32, epi, s), isa);
                int eq = !memcmp(y0, y1, sizeof(float) * (size_t)M * ldy);
                CHECK(eq);
                if (!eq)
                    fprintf(stderr, "  %s ws %dx%dx%d epi %d bias %d: differs from the packed path\n",
                            k_isa_name(isa), M, N, K, epi, bias);
                same += eq, checked++;
            }
        for (int v = 0; v < 4; v++)   /* against the reference, y's padding untouched */
            CHECK(run_one(isa, M, N, K, ldx, ldy, &w, K_GEMM_F32, v & 1, v >> 1, x, b) <= 1);
        free_w(&w);
        free(x), free(b), free(y0), free(y1), free(yi), free(s);
    }
    CHECK(ws >= 13);   /* the shapes do reach the path */
    if (isa == 2) {   /* and its bound past 128 rows */
        CHECK(gemm_ws_takes(256, 64, 512) && gemm_ws_takes(200, 90, 512));
        CHECK(!gemm_ws_takes(129, 70, 1100) && !gemm_ws_takes(257, 64, 512));
    }
    printf("few-row fp32 path on %s: %d of %d products bit for bit the packed path's (%d shapes of %zu take it)\n",
           k_isa_name(isa), same, checked, ws, sizeof sh / sizeof sh[0]);
}

static void test_ws(void) {
    for (int isa = 1; isa <= 2; isa++) {
        if (k_gemm_path(isa, K_GEMM_F32) != isa) {
            printf("SKIP few-row fp32 path on %s: not here\n", k_isa_name(isa));
            continue;
        }
        test_ws_isa(isa);
    }
}

/* K_GEMM_ACC on every path: y starts as y0, the result is compared with
 * k_gemm_ref on a copy of y0 (bound: TOL * (S + |y0|)); and rows of x that
 * overlap (ldx < K), as the strided convolution windows read them. */
static void test_acc_windows(void) {
    static const int sh[][4] = {   /* M, N, K, ldx (0: K) */
        {1, 1, 1, 0}, {15, 33, 385, 0}, {29, 65, 1537, 0}, {40, 48, 0, 0}, {33, 40, 72, 24},
        {50, 37, 1152, 768}, {17, 64, 240, 80}};
    for (size_t q = 0; q < sizeof sh / sizeof sh[0]; q++) {
        int M = sh[q][0], N = sh[q][1], K = sh[q][2], ldx = sh[q][3] ? sh[q][3] : K;
        size_t nx = (size_t)(M - 1) * ldx + K + 1;
        float *x = malloc(sizeof(float) * nx), *b = malloc(sizeof(float) * (size_t)N);
        for (size_t i = 0; i < nx; i++) x[i] = frand();
        for (int j = 0; j < N; j++) b[j] = frand();
        tw w = make_w(N, K, K_F32);
        float *y0 = malloc(sizeof(float) * (size_t)M * N), *y = malloc(sizeof(float) * (size_t)M * N);
        float *r = malloc(sizeof(float) * (size_t)M * N);
        for (size_t i = 0; i < (size_t)M * N; i++) y0[i] = 4 * frand();
        for (int mode = 0; mode < 2; mode++)
            for (int v = 0; v < 4; v++)
                for (int isa = 0; isa <= 3; isa += isa ? 1 : 2) {
                    if (isa == 3 && (mode == 0 || !k_gemm_has_amx())) continue;
                    int epi = (ldx == K ? K_GEMM_ACC : 0) | ((v >> 1) ? K_GEMM_GELU : 0);
                    const float *bb = (v & 1) ? b : NULL;
                    void *s = xalloc(k_gemm_scratch_bytes(M, N, K, (k_gemm_mode)mode));
                    memcpy(y, y0, sizeof(float) * (size_t)M * N);
                    memcpy(r, y0, sizeof(float) * (size_t)M * N);
                    k_gemm_isa(isa, y, N, x, ldx, w.w, bb, M, N, K, (k_gemm_mode)mode, epi, s);
                    k_gemm_ref(r, N, x, ldx, w.w, bb, M, N, K, (k_gemm_mode)mode, epi);
                    double worst = 0;
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++) {
                            double sm = (bb ? fabs(bb[j]) : 0) + ((epi & K_GEMM_ACC) ? fabs(y0[(size_t)i * N + j]) : 0);
                            for (int k = 0; k < K; k++)
                                sm += fabs((double)x[(size_t)i * ldx + k] * w.f[(size_t)j * K + k]);
                            double d = fabs((double)y[(size_t)i * N + j] - r[(size_t)i * N + j]);
                            double rt = d / (TOL * sm + 1e-30);
                            if (!(rt <= worst)) worst = rt;
                        }
                    CHECK(worst <= 1);
                    if (!(worst <= 1))
                        fprintf(stderr, "  acc/windows isa %d %dx%dx%d ldx %d mode %d epi %d: worst %.3g\n",
                                isa, M, N, K, ldx, mode, epi, worst);
                    free(s);
                }
        /* control: without ACC the old values are gone (a product of 0 + y0 would pass) */
        if (K > 0 && ldx == K) {
            void *s = xalloc(k_gemm_scratch_bytes(M, N, K, K_GEMM_F32));
            memcpy(y, y0, sizeof(float) * (size_t)M * N);
            memcpy(r, y0, sizeof(float) * (size_t)M * N);
            k_gemm(y, N, x, ldx, w.w, b, M, N, K, K_GEMM_F32, 0, s);
            k_gemm_ref(r, N, x, ldx, w.w, b, M, N, K, K_GEMM_F32, K_GEMM_ACC);
            double diff = 0;
            for (size_t i = 0; i < (size_t)M * N; i++) diff = fmax(diff, fabs((double)y[i] - r[i]));
            CHECK(diff > 0.1);
            free(s);
        }
        free_w(&w);
        free(x), free(b), free(y0), free(y), free(r);
    }
}

/* K_BF16A: packed once, read in place by the AMX path; other paths and
 * k_w_row read it element by element. */
static void test_amx_packed(void) {
    if (!k_gemm_has_amx()) {
        printf("AMX-packed weights: skipped (no AMX here)\n");
        return;
    }
    static const int sh[][3] = {{1, 1, 1}, {5, 33, 31}, {17, 64, 384}, {40, 70, 1537}, {33, 96, 3100}};
    for (size_t q = 0; q < sizeof sh / sizeof sh[0]; q++) {
        int M = sh[q][0], N = sh[q][1], K = sh[q][2];
        tw w = make_w(N, K, K_F32);
        void *pk = xalloc(k_gemm_amx_bytes(N, K));
        k_gemm_amx_pack(pk, w.w, N, K);
        int exact = 1;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++) {
                uint16_t h = k_f32_to_bf16(w.f[(size_t)n * K + k]);
                uint32_t u = (uint32_t)h << 16;
                float f;
                memcpy(&f, &u, 4);
                exact &= k_gemm_amx_at(pk, K, n, k) == f;
            }
        CHECK(exact);
        k_w a = {pk, K_BF16A, 1};
        float *row = malloc(sizeof(float) * (size_t)K);
        k_w_row(row, a, N - 1, N, K);
        CHECK(row[K - 1] == k_gemm_amx_at(pk, K, N - 1, K - 1) && row[0] == k_gemm_amx_at(pk, K, N - 1, 0));
        free(row);
        float *x = make_x(M, K, K), *b = malloc(sizeof(float) * (size_t)N);
        for (int j = 0; j < N; j++) b[j] = frand();
        tw wa = {a, w.f};
        for (int isa = 0; isa <= 3; isa += 3)
            for (int v = 0; v < 2; v++) {
                double r = run_one(isa, M, N, K, K, N, &wa, K_GEMM_BF16, 1, v, x, b);
                CHECK(r <= 1);
            }
        free(pk), free(x), free(b);
        free_w(&w);
    }
}

/* The encoder's products (1500 rows) on the best instruction set, checked
 * on sampled rows (every edge of the 14-row panels near the ends). */
static void test_encoder(void) {
    static const int sh[][4] = {{384, 384, 0, K_F32}, {1536, 384, 1, K_F16}, {384, 1536, 0, K_BF16},
                                {1152, 384, 0, K_F32}, {384, 1152, 1, K_F32}};
    static const int rows[] = {0, 1, 13, 14, 15, 27, 28, 700, 1483, 1484, 1497, 1498, 1499};
    int M = 1500;
    for (size_t q = 0; q < sizeof sh / sizeof sh[0]; q++) {
        int N = sh[q][0], K = sh[q][1], gelu = sh[q][2];
        tw w = make_w(N, K, (k_wtype)sh[q][3]);
        float *x = make_x(M, K, K), *b = malloc(sizeof(float) * (size_t)N);
        for (int j = 0; j < N; j++) b[j] = frand();
        float *y = malloc(sizeof(float) * (size_t)M * N), *r = malloc(sizeof(float) * (size_t)N);
        for (int run = 0; run < 3; run++) {   /* fp32, bf16 (best: AMX where present), bf16 on isa 2 */
            int mode = run > 0;
            if (run == 2 && !k_gemm_has_amx()) break;
            void *s = xalloc(k_gemm_scratch_bytes(M, N, K, (k_gemm_mode)mode));
            int used = k_gemm_isa(run == 2 ? 2 : 3, y, N, x, K, w.w, b, M, N, K, (k_gemm_mode)mode,
                                  gelu, s);
            double worst = 0;
            for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
                k_gemm_ref(r, N, x + (size_t)rows[i] * K, K, w.w, b, 1, N, K, (k_gemm_mode)mode, gelu);
                double e = worst_ratio(y, N, r, N, x, K, w.f, b, rows[i], rows[i] + 1, N, K);
                if (!(e <= worst)) worst = e;
            }
            printf("encoder %dx%dx%d w %s %s%s: isa %d, worst %.4f of the tolerance\n", M, N, K,
                   wname(w.w.t), mode ? "bf16" : "fp32", gelu ? " +gelu" : "", used, worst);
            CHECK(worst <= 1);
            free(s);
        }
        free(y), free(r), free(x), free(b);
        free_w(&w);
    }
}

/* The C path and each vector path this CPU has (AVX2, AVX-512) agree (both
 * modes, all weight types). */
static void test_c_vs_vector(void) {
    for (int mode = 0; mode < 2; mode++)
        for (int isa = 1; isa <= 2; isa++) {
            if (k_gemm_path(isa, (k_gemm_mode)mode) != isa) continue;   /* not here */
            int M = 97, N = 161, K = 803;
            float *x = make_x(M, K, K), *b = malloc(sizeof(float) * (size_t)N);
            for (int j = 0; j < N; j++) b[j] = frand();
            float *y0 = malloc(sizeof(float) * (size_t)M * N), *y2 = malloc(sizeof(float) * (size_t)M * N);
            void *s = xalloc(k_gemm_scratch_bytes(M, N, K, (k_gemm_mode)mode));
            for (int t = 0; t < 3; t++) {
                tw w = make_w(N, K, (k_wtype)t);
                CHECK_EQ_INT(k_gemm_isa(0, y0, N, x, K, w.w, b, M, N, K, (k_gemm_mode)mode, 1, s), 0);
                CHECK_EQ_INT(k_gemm_isa(isa, y2, N, x, K, w.w, b, M, N, K, (k_gemm_mode)mode, 1, s), isa);
                double worst = worst_ratio(y2, N, y0, N, x, K, w.f, b, 0, M, N, K);
                size_t same = 0;
                for (size_t i = 0; i < (size_t)M * N; i++) same += y0[i] == y2[i];
                printf("C vs %s (%s, w %s, gelu): worst %.4f of the tolerance, %.1f%% identical\n",
                       k_isa_name(isa), mode ? "bf16" : "fp32", wname(w.w.t), worst,
                       100.0 * same / ((double)M * N));
                CHECK(worst <= 1);
                free_w(&w);
            }
            free(x), free(b), free(y0), free(y2), free(s);
        }
}

/* AMX against the reference on the edges of its own blocking (16-row
 * groups, 2 x 2 tiles, 32-k chunks, 1536-k blocks), and against the
 * AVX512_BF16 path (the same rounded inputs, different summation order). */
static void test_amx_shapes(void) {
    static const int sh[][5] = {   /* M, N, K, ldx - K, ldy - N */
        {16, 16, 32, 0, 0},  {17, 16, 33, 0, 0},  {32, 32, 64, 0, 0},  {33, 48, 31, 2, 1},
        {47, 15, 95, 0, 0},  {64, 96, 1536, 0, 0}, {65, 97, 1537, 3, 2}, {31, 33, 3100, 0, 0},
        {100, 200, 300, 1, 7}, {7, 260, 1, 0, 0}};
    for (size_t q = 0; q < sizeof sh / sizeof sh[0]; q++) {
        int M = sh[q][0], N = sh[q][1], K = sh[q][2], ldx = K + sh[q][3], ldy = N + sh[q][4];
        float *x = make_x(M, K, ldx), *b = malloc(sizeof(float) * (size_t)N);
        for (int j = 0; j < N; j++) b[j] = frand();
        for (int t = 0; t < 3; t++) {
            tw w = make_w(N, K, (k_wtype)t);
            for (int v = 0; v < 4; v++)
                CHECK(run_one(3, M, N, K, ldx, ldy, &w, K_GEMM_BF16, v & 1, v >> 1, x, b) <= 1);
            free_w(&w);
        }
        free(x), free(b);
    }
    int M = 97, N = 161, K = 803;
    float *x = make_x(M, K, K), *b = malloc(sizeof(float) * (size_t)N);
    for (int j = 0; j < N; j++) b[j] = frand();
    float *y2 = malloc(sizeof(float) * (size_t)M * N), *y3 = malloc(sizeof(float) * (size_t)M * N);
    void *s = xalloc(k_gemm_scratch_bytes(M, N, K, K_GEMM_BF16));
    for (int t = 0; t < 3; t++) {
        tw w = make_w(N, K, (k_wtype)t);
        CHECK_EQ_INT(k_gemm_isa(2, y2, N, x, K, w.w, b, M, N, K, K_GEMM_BF16, 1, s), 2);
        CHECK_EQ_INT(k_gemm_isa(3, y3, N, x, K, w.w, b, M, N, K, K_GEMM_BF16, 1, s), 3);
        double worst = worst_ratio(y3, N, y2, N, x, K, w.f, b, 0, M, N, K);
        size_t same = 0;
        for (size_t i = 0; i < (size_t)M * N; i++) same += y2[i] == y3[i];
        printf("AVX512_BF16 vs AMX (w %s, gelu): worst %.4f of the tolerance, %.1f%% identical\n",
               wname(w.w.t), worst, 100.0 * same / ((double)M * N));
        CHECK(worst <= 1);
        free_w(&w);
    }
    free(x), free(b), free(y2), free(y3), free(s);
}

/* Several threads in k_gemm's AMX path at once (each loads its own tile
 * configuration; more threads than cores, so the tile state is also saved
 * and restored across switches): every result equals a lone run's bits. */
typedef struct {
    const float *x, *b;
    k_w w;
    float *y;
    int M, N, K, reps, used;
} amx_job;

static void *amx_thread(void *arg) {
    amx_job *j = arg;
    void *s = xalloc(k_gemm_scratch_bytes(j->M, j->N, j->K, K_GEMM_BF16));
    for (int r = 0; r < j->reps; r++)
        j->used = k_gemm(j->y, j->N, j->x, j->K, j->w, j->b, j->M, j->N, j->K, K_GEMM_BF16,
                         (j->reps - 1 - r) & 1, s);   /* GELU on and off; the last run off */
    free(s);
    return NULL;
}

static void test_amx_threads(void) {
    enum { NT = 4 };
    int M = 150, N = 200, K = 420;
    float *x = make_x(M, K, K), *b = malloc(sizeof(float) * (size_t)N);
    for (int j = 0; j < N; j++) b[j] = frand();
    tw w = make_w(N, K, K_BF16);
    float *want = malloc(sizeof(float) * (size_t)M * N);
    void *s = xalloc(k_gemm_scratch_bytes(M, N, K, K_GEMM_BF16));
    k_gemm(want, N, x, K, w.w, b, M, N, K, K_GEMM_BF16, 0, s);
    pthread_t th[NT];
    amx_job jobs[NT];
    for (int t = 0; t < NT; t++) {
        jobs[t] = (amx_job){x, b, w.w, malloc(sizeof(float) * (size_t)M * N), M, N, K, 20, -1};
        CHECK(pthread_create(&th[t], NULL, amx_thread, &jobs[t]) == 0);
    }
    int same = 1;
    for (int t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        CHECK_EQ_INT(jobs[t].used, 3);
        same &= memcmp(jobs[t].y, want, sizeof(float) * (size_t)M * N) == 0;
        free(jobs[t].y);
    }
    CHECK(same);
    printf("AMX on %d threads at once: %s\n", NT, same ? "all equal to a lone run" : "DIFFERENT");
    free(x), free(b), free(want), free(s);
    free_w(&w);
}

static void test_amx(void) {
    if (!k_gemm_has_amx()) {
        printf("AMX: SKIPPED (no AMX-TILE/AMX-BF16 here, or Linux refused the tile state): "
               "bf16 mode runs on path %d (2 AVX512_BF16, 1 AVX2, 0 C)\n", k_gemm_path(K_ISA_AVX512, K_GEMM_BF16));
        return;
    }
    test_amx_shapes();
    test_amx_threads();
}

/* bf16 rounding: ties to even, NaN, infinity, overflow; the packers round
 * as k_f32_to_bf16 does (exact products against w = 1). */
static void test_bf16_rounding(void) {
    union { uint32_t u; float f; } v;
    v.f = 1.0f;
    CHECK_EQ_INT(k_f32_to_bf16(v.f), 0x3f80);
    v.u = 0x3f808000u;   /* 1 + 2^-8: a tie, stays even */
    CHECK_EQ_INT(k_f32_to_bf16(v.f), 0x3f80);
    v.u = 0x3f818000u;   /* tie above an odd one: up */
    CHECK_EQ_INT(k_f32_to_bf16(v.f), 0x3f82);
    v.u = 0x3f808001u;   /* just above the tie: up */
    CHECK_EQ_INT(k_f32_to_bf16(v.f), 0x3f81);
    v.u = 0x7f7fffffu;   /* FLT_MAX rounds to infinity */
    CHECK_EQ_INT(k_f32_to_bf16(v.f), 0x7f80);
    CHECK_EQ_INT(k_f32_to_bf16(INFINITY), 0x7f80);
    CHECK_EQ_INT(k_f32_to_bf16(-INFINITY), 0xff80);
    v.u = 0x7f800001u;   /* signalling NaN: stays a (quiet) NaN */
    CHECK((k_f32_to_bf16(v.f) & 0x7fc0) == 0x7fc0);

    int M = 40, K = 3;   /* each row: one interesting value, then zeros */
    float *x = calloc((size_t)M * K, sizeof(float)), y[40], one[3] = {1.0f, 1.0f, 1.0f};
    for (int i = 0; i < M; i++) {
        v.u = 0x3f800000u + (uint32_t)i * 0x4000u + (i % 3 == 0 ? 0x8000u : 0) + (i % 5 == 0);
        x[(size_t)i * K + (i % K)] = i % 2 ? v.f : -v.f;
    }
    k_w w = {one, K_F32};
    void *s = xalloc(k_gemm_scratch_bytes(M, 1, K, K_GEMM_BF16));
    for (int isa = 0; isa <= 3; isa += isa ? 1 : 2) {
        if (isa == 3 && !k_gemm_has_amx()) continue;
        k_gemm_isa(isa, y, 1, x, K, w, NULL, M, 1, K, K_GEMM_BF16, 0, s);
        int bad = 0;
        for (int i = 0; i < M; i++) {
            uint32_t u = (uint32_t)k_f32_to_bf16(x[(size_t)i * K + (i % K)]) << 16;
            float want;
            memcpy(&want, &u, 4);
            bad += y[i] != want;
        }
        CHECK_EQ_INT(bad, 0);
    }
    free(x), free(s);
}

/* The comparison can fail: a result off by 2 tolerances, or a reference
 * that forgot one bias term, must be caught. */
static void test_controls(void) {
    int M = 20, N = 40, K = 50;
    float *x = make_x(M, K, K), *b = malloc(sizeof(float) * N);
    for (int j = 0; j < N; j++) b[j] = frand();
    tw w = make_w(N, K, K_F32);
    float *y = malloc(sizeof(float) * M * N), *r = malloc(sizeof(float) * M * N);
    void *s = xalloc(k_gemm_scratch_bytes(M, N, K, K_GEMM_F32));
    k_gemm(y, N, x, K, w.w, b, M, N, K, K_GEMM_F32, 0, s);
    k_gemm_ref(r, N, x, K, w.w, b, M, N, K, K_GEMM_F32, 0);
    CHECK(worst_ratio(y, N, r, N, x, K, w.f, b, 0, M, N, K) <= 1);
    double sum = fabs(b[7]);
    for (int k = 0; k < K; k++) sum += fabs((double)x[3 * K + k] * w.f[7 * K + k]);
    float keep = r[3 * N + 7];
    r[3 * N + 7] = (float)(keep + 2 * TOL * sum);   /* off by two tolerances */
    CHECK(worst_ratio(y, N, r, N, x, K, w.f, b, 0, M, N, K) > 1);
    r[3 * N + 7] = keep;
    for (int i = 0; i < M; i++) r[i * N + 11] -= b[11];   /* a reference without b[11] */
    CHECK(worst_ratio(y, N, r, N, x, K, w.f, b, 0, M, N, K) > 1);
    free(x), free(b), free(y), free(r), free(s);
    free_w(&w);
}

/* A scratch that is not 64-byte aligned (a caller's malloc) still works. */
static void test_misaligned_scratch(void) {
    int M = 30, N = 70, K = 45;
    float *x = make_x(M, K, K), *y = malloc(sizeof(float) * M * N), *r = malloc(sizeof(float) * M * N);
    for (int mode = 0; mode < 2; mode++) {
        tw w = make_w(N, K, K_BF16);
        char *s = xalloc(k_gemm_scratch_bytes(M, N, K, (k_gemm_mode)mode) + 64);
        k_gemm(y, N, x, K, w.w, NULL, M, N, K, (k_gemm_mode)mode, 0, s + 16);
        k_gemm_ref(r, N, x, K, w.w, NULL, M, N, K, (k_gemm_mode)mode, 0);
        CHECK(worst_ratio(y, N, r, N, x, K, w.f, NULL, 0, M, N, K) <= 1);
        free(s);
        free_w(&w);
    }
    free(x), free(y), free(r);
}

int main(void) {
    printf("k_gemm paths (0 C, 1 AVX2, 2 AVX-512, 3 AMX): f32 %d, bf16 %d\n", k_gemm_path(K_ISA_AMX, K_GEMM_F32),
           k_gemm_path(K_ISA_AMX, K_GEMM_BF16));
    test_bf16_rounding();
    test_controls();
    test_misaligned_scratch();
    test_shapes();
    test_c_vs_vector();
    test_ws();
    test_amx();
    test_acc_windows();
    test_amx_packed();
    test_encoder();
    return check_done();
}
