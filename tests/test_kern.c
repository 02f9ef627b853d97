/* test_kern.c - every fast kernel against its scalar reference, and the
 * pool-parallel wrappers against the kernels, on seeded random inputs with
 * odd sizes (strides, tails, M = 1 paths). Tolerances: 1e-4 relative to the
 * magnitude of the inputs (f32 BLAS vs double reference). */
#include "check.h"

#include "base/pool.h"
#include "base/half.h"
#include "base/isa.h"
#include "core/ops.h"
#include "kern/gemm.h"
#include "kern/kern.h"
#include "kern/matmul_hp.h"
#include "kern/q8.h"
#include "io/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned long g_seed = 12345;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000000) / 1000000.0f - 1.0f;
}
static float *rnd(size_t n) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

static void test_matmul(ed_pool *pool) {
    int shapes[][3] = {{1, 37, 19}, {5, 64, 33}, {17, 100, 64}, {130, 48, 96}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *b = rnd((size_t)N);
        float *y = malloc(sizeof(float) * (size_t)M * N), *r = malloc(sizeof(float) * (size_t)M * N);
        k_matmul_ref(r, N, x, K, w, K, b, M, N, K);
        k_matmul(y, x, w, b, M, N, K);
        CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-4 * K);
        op_matmul(pool, y, x, w, b, M, N, K);
        CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-4 * K);
        k_matmul_ref(r, N, x, K, w, K, NULL, M, N, K);
        op_matmul(pool, y, x, w, NULL, M, N, K);
        CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-4 * K);
        free(x); free(w); free(b); free(y); free(r);
    }
}

/* Few rows (decode steps) with strides, against the double reference, on
 * every tile shape of the vector sets' few-row kernel (4 or 1 weight rows
 * x 1-3 activation rows, k tails); and batch invariance: each row alone
 * gives the same bits as in a batch of up to 16. */
static void test_matmul_few(void) {
    int shapes[][3] = {{1, 4, 8}, {2, 7, 384}, {3, 9, 5}, {5, 30, 71}, {16, 33, 70}, {7, 1, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        int ldx = K + 5, ldw = K + 3, ldy = N + 2;
        float *x = rnd((size_t)M * ldx), *w = rnd((size_t)N * ldw), *b = rnd((size_t)N);
        float *y = malloc(sizeof(float) * (size_t)M * ldy), *r = malloc(sizeof(float) * (size_t)M * ldy);
        float *y1 = malloc(sizeof(float) * (size_t)N);
        for (int pass = 0; pass < 2; pass++) {
            const float *bb = pass ? b : NULL;
            k_matmul_ref(r, ldy, x, ldx, w, ldw, bb, M, N, K);
            k_matmul_ex(y, ldy, x, ldx, w, ldw, bb, M, N, K);
            double worst = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double e = fabs((double)y[(size_t)i * ldy + j] - r[(size_t)i * ldy + j]);
                    worst = e > worst ? e : worst;
                }
            CHECK(worst < 2e-6 * K);
            for (int i = 0; i < M && k_isa() >= K_ISA_VEC; i++) {   /* BLIS's need not be */
                k_matmul_ex(y1, N, x + (size_t)i * ldx, ldx, w, ldw, bb, 1, N, K);
                CHECK(memcmp(y1, y + (size_t)i * ldy, sizeof(float) * (size_t)N) == 0);
            }
        }
        free(x), free(w), free(b), free(y), free(r), free(y1);
    }
}

/* k_matmul_inv for many rows (the AVX2 set's panels of 16 rows, a rest
 * taken padded or left to the few-row kernel, weight tiles of 6 and their
 * tails, k blocks and tails, K below a vector): every row bit for bit the
 * row alone, with the scratch and without, and the product. */
static void test_matmul_inv_rows(void) {
    int shapes[][3] = {{10, 13, 70}, {16, 6, 8}, {17, 11, 3}, {26, 25, 257}, {33, 7, 1030}, {48, 1, 16}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        int ldx = K + 3, ldw = K + 1, ldy = N + 4;
        float *x = rnd((size_t)M * ldx), *w = rnd((size_t)N * ldw), *b = rnd((size_t)N);
        float *y = malloc(sizeof(float) * (size_t)M * ldy), *y0 = malloc(sizeof(float) * (size_t)M * ldy);
        float *r = malloc(sizeof(float) * (size_t)M * ldy), *y1 = malloc(sizeof(float) * (size_t)N);
        size_t sb = k_matmul_inv_scratch(M, K);
        void *scratch = sb ? aligned_alloc(64, (sb + 63) / 64 * 64) : NULL;
        k_matmul_inv(y, ldy, x, ldx, w, ldw, b, M, N, K, scratch);
        k_matmul_inv(y0, ldy, x, ldx, w, ldw, b, M, N, K, NULL);
        k_matmul_ref(r, ldy, x, ldx, w, ldw, b, M, N, K);
        double worst = 0;
        int differ = 0;
        for (int i = 0; i < M; i++) {
            k_matmul_ex(y1, N, x + (size_t)i * ldx, ldx, w, ldw, b, 1, N, K);
            differ += memcmp(y1, y + (size_t)i * ldy, sizeof(float) * (size_t)N) != 0;
            differ += memcmp(y1, y0 + (size_t)i * ldy, sizeof(float) * (size_t)N) != 0;
            for (int j = 0; j < N; j++) {
                double e = fabs((double)y[(size_t)i * ldy + j] - r[(size_t)i * ldy + j]);
                worst = e > worst ? e : worst;
            }
        }
        if (differ) fprintf(stderr, "k_matmul_inv %dx%dx%d: %d rows differ from alone\n", M, N, K, differ);
        CHECK_EQ_INT(differ, 0);
        CHECK(worst < 2e-6 * K);
        free(x), free(w), free(b), free(y), free(y0), free(r), free(y1), free(scratch);
    }
}

/* Epilogues and windows over the pool: op_matmul_w_ex with K_GEMM_ACC and
 * K_GEMM_GELU, and op_matmul_win over overlapping windows (ldx < K), on
 * few rows (the products' own paths, then a pass of their own / copied
 * windows) and many (fused into the packed GEMM), against k_gemm_ref. */
static void test_matmul_epi(ed_pool *pool) {
    int rows[] = {5, 40};
    for (int q = 0; q < 2; q++)
        for (int epi = 1; epi <= 3; epi++) {
            int M = rows[q], N = 48, K = 96, ldx = 32;   /* windows: 3 frames of 32 */
            float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K), *b = rnd((size_t)N);
            float *y0 = rnd((size_t)M * N), *y = malloc(sizeof(float) * (size_t)M * N);
            float *r = malloc(sizeof(float) * (size_t)M * N), *tmp = malloc(sizeof(float) * (size_t)M * N);
            k_w kw = {w, K_F32, 0};
            memcpy(y, y0, sizeof(float) * (size_t)M * N);
            memcpy(r, y0, sizeof(float) * (size_t)M * N);
            op_matmul_w_ex(pool, y, N, x, K, kw, b, M, N, K, epi, tmp);
            k_gemm_ref(r, N, x, K, kw, b, M, N, K, K_GEMM_F32, epi);
            CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-4 * K);
            float *col = malloc(sizeof(float) * (size_t)M * K);
            op_matmul_win(pool, y, N, x, ldx, kw, b, M, N, K, epi & K_GEMM_GELU, col);
            k_gemm_ref(r, N, x, ldx, kw, b, M, N, K, K_GEMM_F32, epi & K_GEMM_GELU);
            CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-4 * K);
            free(x), free(w), free(b), free(y0), free(y), free(r), free(tmp), free(col);
        }
}

/* Half-precision weights: every f16 bit pattern expands as io's converter
 * does; k_matmul_h (AVX-512 / AVX2 / C, whichever runs here) against its
 * reference with K tails and 1..10 rows; op_matmul_w's column (small M) and
 * panel (large M) paths against the reference on the expanded weights (12 x
 * 200: f32 weights take k_gemm's few-row path capped at its AVX2 form). */
static void test_matmul_h(ed_pool *pool) {
    static uint16_t all[65536];
    static float got[65536], want[65536];
    for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    for (int bf = 0; bf < 2; bf++) {
        k_h_to_f32(got, all, 65536, bf);
        ed_to_f32(want, all, bf ? ED_BF16 : ED_F16, 65536);
        int bad = 0;
        for (int i = 0; i < 65536; i++) bad += memcmp(&got[i], &want[i], 4) != 0 && !(got[i] != got[i] && want[i] != want[i]);
        CHECK_EQ_INT(bad, 0);
    }
    int shapes[][3] = {{1, 37, 19}, {3, 50, 64}, {8, 33, 70}, {10, 17, 129}, {12, 200, 96},
                       {40, 300, 96}, {130, 48, 33}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int bf = 0; bf < 2; bf++) {
            int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            float *x = rnd((size_t)M * K), *wf = rnd((size_t)N * K), *b = rnd((size_t)N);
            uint16_t *w = malloc(sizeof(uint16_t) * (size_t)N * K);
            for (size_t i = 0; i < (size_t)N * K; i++) {   /* round to the half format */
                uint32_t u;
                memcpy(&u, &wf[i], 4);
                w[i] = bf ? (uint16_t)(u >> 16) : (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
                if (!bf && fabsf(wf[i]) < 6.2e-5f) w[i] = 0;
            }
            k_h_to_f32(wf, w, (size_t)N * K, bf);
            float *y = malloc(sizeof(float) * (size_t)M * N), *r = malloc(sizeof(float) * (size_t)M * N);
            k_matmul_ref(r, N, x, K, wf, K, b, M, N, K);
            k_matmul_h_ref(y, N, x, K, w, K, bf, b, M, N, K);
            CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-5 * K);
            for (int isa = 0; isa <= 2; isa++) {   /* every version this CPU can run */
                memset(y, 0, sizeof(float) * (size_t)M * N);
                int used = k_matmul_h_isa(isa, y, N, x, K, w, K, bf, b, M, N, K);
                CHECK(used <= isa);
                CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-4 * K);
            }
            k_w kw = {w, bf ? K_BF16 : K_F16};
            memset(y, 0, sizeof(float) * (size_t)M * N);
            op_matmul_w(pool, y, N, x, K, kw, b, M, N, K);
            CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-4 * K);
            k_w kf = {wf, K_F32};
            op_matmul_w(pool, y, N, x, K, kf, b, M, N, K);
            CHECK(check_max_abs_diff(y, r, (size_t)M * N, NULL) < 1e-4 * K);
            free(x); free(wf); free(b); free(w); free(y); free(r);
        }
}

/* wf's values as f16 (wh) and as bf16 (wb, truncated). */
static void halves_of(const float *wf, uint16_t *wh, uint16_t *wb, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &wf[i], 4);
        wb[i] = (uint16_t)(u >> 16);
        wh[i] = ed_f2h(wf[i]);   /* (subnormal halves included: |w| < 2^-14 happens) */
    }
}

typedef void (*mm_op)(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                      const float *b, int M, int N, int K);

/* How many of the runs {first row, rows} of x give rows other than, bit
 * for bit, the same rows of op's product over all M rows (into all). */
static int runs_differ(ed_pool *pool, mm_op op, k_w w, const float *x, const float *b, int M,
                       int N, int K, const int (*runs)[2], int n_runs, float *all, const char *name) {
    float *part = malloc(sizeof(float) * (size_t)M * N);
    op(pool, all, N, x, K, w, b, M, N, K);
    int bad = 0;
    for (int r = 0; r < n_runs; r++) {
        int a = runs[r][0], m = runs[r][1];
        op(pool, part, N, x + (size_t)a * K, K, w, b, m, N, K);
        int d = memcmp(part, all + (size_t)a * N, sizeof(float) * (size_t)m * N) != 0;
        if (d) fprintf(stderr, "%s: rows %d..%d differ\n", name, a, a + m - 1);
        bad += d;
    }
    free(part);
    return bad;
}

/* Batch invariance (what the engine's merged decode steps need): row r of
 * op_matmul_w_inv over 40 rows is, bit for bit, row r of the product over
 * any run of 1..16 of those rows, for every weight type; the same for
 * op_gelu's rows over the pool (its slices must not move a value between
 * the vector lanes and the scalar tail). */
static void test_matmul_inv(ed_pool *pool) {
    enum { M = 40, N = 100, K = 96 };
    float *x = rnd((size_t)M * K), *wf = rnd((size_t)N * K), *b = rnd(N);
    uint16_t *wh = malloc(sizeof(uint16_t) * N * K), *wb = malloc(sizeof(uint16_t) * N * K);
    halves_of(wf, wh, wb, N * K);
    /* and the panel-major halves, the bf16 mode's (lowp: x may be rounded to
     * bf16, AMX or ARM's BFDOT where the CPU has them) */
    uint16_t *ph = aligned_alloc(64, k_hp_bytes(N, K)), *pb = aligned_alloc(64, k_hp_bytes(N, K));
    CHECK_EQ_INT(k_hp_pack(ph, (k_w){wh, K_F16, 0}, N, K), 0);
    CHECK_EQ_INT(k_hp_pack(pb, (k_w){wb, K_BF16, 0}, N, K), 0);
    k_w ws[] = {{wf, K_F32}, {wh, K_F16}, {wb, K_BF16}, {ph, K_F16P, 0}, {pb, K_BF16P, 1}};
    const char *names[] = {"matmul_inv f32", "matmul_inv f16", "matmul_inv bf16",
                           "matmul_inv f16 panels", "matmul_inv bf16 panels, lowp"};
    float *all = malloc(sizeof(float) * M * N), *ref = malloc(sizeof(float) * M * N);
    const int runs[][2] = {{0, 1}, {3, 5}, {7, 16}, {16, 16}, {23, 9}, {39, 1}, {24, 16}};
    for (size_t t = 0; t < sizeof ws / sizeof ws[0]; t++) {
        CHECK_EQ_INT(runs_differ(pool, op_matmul_w_inv, ws[t], x, b, M, N, K, runs, 7, all, names[t]), 0);
        if (t < 3) continue;   /* the panels: the product (lowp: to x's bf16 rounding) */
        k_gemm_ref(ref, N, x, K, ws[t - 2], b, M, N, K, K_GEMM_F32, 0);
        double big = 1;   /* (a few of these halves are large: relative to the largest) */
        for (int i = 0; i < M * N; i++) big = fabs(ref[i]) > big ? fabs(ref[i]) : big;
        double d = check_max_abs_diff(all, ref, (size_t)M * N, NULL) / big;
        if (!(d < (t == 4 ? 1e-2 : 1e-5))) fprintf(stderr, "%s: off by %g\n", names[t], d);
        CHECK(d < (t == 4 ? 1e-2 : 1e-5));
    }
    free(ph), free(pb), free(ref);
    float *g = rnd(7 * 1536), *g1 = malloc(sizeof(float) * 1536);
    for (int i = 0; i < 7 * 1536; i++) g[i] *= 4;
    memcpy(g1, g + 3 * 1536, sizeof(float) * 1536);
    op_gelu(pool, g, 7, 1536);
    op_gelu(pool, g1, 1, 1536);
    CHECK(memcmp(g1, g + 3 * 1536, sizeof(float) * 1536) == 0);
    free(x); free(wf); free(b); free(wh); free(wb); free(all); free(g); free(g1);
}

/* Row invariance for many rows (what packing several requests' inputs into
 * one encoder pass needs): where op_rows_invariant says so, row r of
 * op_matmul_w_rows over 40 rows is, bit for bit, row r of the product over
 * any run of those rows, short (column slices) or long (row slices), for
 * every weight layout this kernel set reads; and it is the product. */
static void test_matmul_rows(ed_pool *pool) {
    enum { M = 40, N = 100, K = 96 };
    float *x = rnd((size_t)M * K), *wf = rnd((size_t)N * K), *b = rnd(N);
    uint16_t *wh = malloc(sizeof(uint16_t) * N * K), *wb = malloc(sizeof(uint16_t) * N * K);
    halves_of(wf, wh, wb, N * K);
    void *q8 = aligned_alloc(64, (k_q8_bytes(N, K) + 63) / 64 * 64);
    k_q8 q = k_q8_pack(q8, (k_w){wf, K_F32, 0}, N, K);
    void *amx = k_gemm_has_amx() ? aligned_alloc(64, (k_gemm_amx_bytes(N, K) + 63) / 64 * 64) : NULL;
    if (amx) k_gemm_amx_pack(amx, (k_w){wb, K_BF16, 1}, N, K);
    k_w ws[] = {{wf, K_F32, 0}, {wh, K_F16, 0}, {wb, K_BF16, 0}, {wb, K_BF16, 1}, {q.data, K_Q8, 0},
                {amx, K_BF16A, 1}};
    const char *names[] = {"matmul_rows f32", "matmul_rows f16", "matmul_rows bf16",
                           "matmul_rows bf16 lowp", "matmul_rows int8", "matmul_rows bf16 AMX"};
    float *all = malloc(sizeof(float) * M * N), *ref = malloc(sizeof(float) * M * N);
    const int runs[][2] = {{0, 1}, {3, 5}, {7, 16}, {0, 17}, {5, 30}, {23, 17}, {39, 1}, {1, 39}};
    for (size_t t = 0; t < sizeof ws / sizeof ws[0]; t++) {
        if (!ws[t].p || !op_rows_invariant(ws[t])) continue;
        CHECK_EQ_INT(runs_differ(pool, op_matmul_w_rows, ws[t], x, b, M, N, K, runs, 8, all, names[t]), 0);
        k_w w = ws[t].t == K_Q8 ? ws[0] : ws[t].t == K_BF16A ? ws[3] : ws[t];
        k_gemm_ref(ref, N, x, K, w, b, M, N, K, w.lowp ? K_GEMM_BF16 : K_GEMM_F32, 0);
        double d = check_max_abs_diff(all, ref, (size_t)M * N, NULL);
        if (!(d < (ws[t].t == K_Q8 ? 0.3 : 1e-3))) fprintf(stderr, "%s: off by %g\n", names[t], d);
        CHECK(d < (ws[t].t == K_Q8 ? 0.3 : 1e-3));
    }
    /* the portable set packs nothing: it says so */
    if (k_isa() == K_ISA_C) CHECK(!op_rows_invariant(ws[0]));
    free(x); free(wf); free(b); free(wh); free(wb); free(q8); free(amx); free(all); free(ref);
}

/* The T5 kernels: attention with a Toeplitz bias and through an index
 * table, RMSNorm and the activations, against their scalar twins; and the
 * pool wrappers (packed segments, index tables, gated activation) against
 * those kernels. */
static void test_t5_kernels(ed_pool *pool) {
    int dh = 16, Tk = 37, H = 2;
    float *q = rnd((size_t)8 * dh), *k = rnd((size_t)Tk * dh), *v = rnd((size_t)Tk * dh);
    float *bias = rnd((size_t)2 * Tk + 16), s[64 * 64], o[8 * 16], r[8 * 16];
    for (int Mq = 1; Mq <= 5; Mq += 4)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            const float *b = with_bias ? bias + Tk + 4 : NULL;
            k_attention_bias(o, dh, q, dh, k, dh, v, dh, Mq, Tk, dh, 0.7f, b, -1, s);
            k_attention_bias_ref(r, dh, q, dh, k, dh, v, dh, Mq, Tk, dh, 0.7f, b, -1, s);
            CHECK(check_max_abs_diff(o, r, (size_t)Mq * dh, NULL) < 1e-5);
        }
    /* keys of 3 cache slots, read through a table */
    int slots = 3, slot[37];
    float *kc = rnd((size_t)slots * Tk * dh), *vc = rnd((size_t)slots * Tk * dh);
    for (int j = 0; j < Tk; j++) slot[j] = (j * 7) % slots;
    k_attention_gather(o, q, kc, vc, (size_t)Tk * dh, dh, slot, Tk, dh, 1.0f, bias, s);
    k_attention_gather_ref(r, q, kc, vc, (size_t)Tk * dh, dh, slot, Tk, dh, 1.0f, bias, s);
    CHECK(check_max_abs_diff(o, r, (size_t)dh, NULL) < 1e-5);
    /* 3 heads side by side (rows of 3 * dh + 5 floats), each head bitwise as
     * alone, with its own bias row */
    {
        int nh = 3, ld = nh * dh + 5;
        float *kh = rnd((size_t)slots * Tk * ld), *vh = rnd((size_t)slots * Tk * ld);
        float *qh = rnd((size_t)nh * dh), oh[3 * 16], o1[16], sh[3 * 37];
        const float *bh = bias + 2;
        k_attention_gather_heads(oh, qh, kh, vh, (size_t)Tk * ld, ld, slot, Tk, nh, dh, 0.6f, bh,
                                 11, sh);
        int diff = 0;
        for (int h = 0; h < nh; h++) {
            k_attention_gather(o1, qh + h * dh, kh + h * dh, vh + h * dh, (size_t)Tk * ld, ld, slot,
                               Tk, dh, 0.6f, bh + h * 11, s);
            diff += memcmp(o1, oh + h * dh, sizeof o1) != 0;
            k_attention_gather_ref(r, qh + h * dh, kh + h * dh, vh + h * dh, (size_t)Tk * ld, ld,
                                   slot, Tk, dh, 0.6f, bh + h * 11, s);
            CHECK(check_max_abs_diff(oh + h * dh, r, (size_t)dh, NULL) < 1e-5);
        }
        CHECK_EQ_INT(diff, 0);
        free(kh), free(vh), free(qh);
    }

    /* beam candidate scores: as the scalar expression, and the count above */
    {
        float sx[300], sv[300];
        int above = 0;
        for (int i = 0; i < 300; i++) sx[i] = q[i % (8 * 16)] * 9.0f;
        int got = k_shifted_above(sv, sx, 300, -1.25f, 0.5f, 3.0f, -2.0f);
        int diff = 0;
        for (int i = 0; i < 300; i++) {
            float want = -1.25f + ((sx[i] - 0.5f) - 3.0f);
            diff += memcmp(&want, &sv[i], sizeof want) != 0;
            above += want > -2.0f;
        }
        CHECK_EQ_INT(diff, 0);
        CHECK_EQ_INT(got, above);
        CHECK(above > 0 && above < 300);
    }

    /* activations and RMSNorm */
    float *x = rnd(300), *y = malloc(300 * sizeof(float)), *z = malloc(300 * sizeof(float));
    for (int i = 0; i < 300; i++) x[i] *= 8;   /* both tails */
    memcpy(y, x, 300 * sizeof *y), memcpy(z, x, 300 * sizeof *z);
    k_gelu_tanh(y, 300), k_gelu_tanh_ref(z, 300);
    CHECK(check_max_abs_diff(y, z, 300, NULL) < 1e-5);
    memcpy(y, x, 300 * sizeof *y), memcpy(z, x, 300 * sizeof *z);
    k_silu(y, 300), k_silu_ref(z, 300);
    CHECK(check_max_abs_diff(y, z, 300, NULL) < 1e-5);
    {   /* an LSTM cell over 75 units (vector lanes and a tail): h and c */
        float hc[2][75], cc[2][75] = {{0}};
        for (int j = 0; j < 75; j++) cc[0][j] = cc[1][j] = x[j] / 4;
        k_lstm_cell(hc[0], cc[0], x, 75), k_lstm_cell_ref(hc[1], cc[1], x, 75);
        CHECK(check_max_abs_diff(cc[0], cc[1], 75, NULL) < 1e-6);
        CHECK(check_max_abs_diff(hc[0], hc[1], 75, NULL) < 1e-6);
    }
    memcpy(y, x, 300 * sizeof *y);
    k_relu(y, 300);
    int bad = 0;
    for (int i = 0; i < 300; i++) bad += y[i] != (x[i] > 0 ? x[i] : 0.0f);
    CHECK_EQ_INT(bad, 0);
    float *g = rnd(100);
    k_rmsnorm(y, x, g, 3, 100, 1e-6f);
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        double ss = 0;
        for (int j = 0; j < 100; j++) ss += (double)x[i * 100 + j] * x[i * 100 + j];
        for (int j = 0; j < 100; j++) {
            double want = g[j] * x[i * 100 + j] / sqrt(ss / 100 + 1e-6);
            if (fabs(y[i * 100 + j] - want) > worst) worst = fabs(y[i * 100 + j] - want);
        }
    }
    CHECK(worst < 1e-5);

    /* op_ffn_act, gated: h[:, :F] = act(h[:, :F]) * h[:, F:] */
    int M = 40, F = 70;
    float *h = rnd((size_t)M * 2 * F), *h0 = malloc(sizeof(float) * (size_t)M * 2 * F);
    memcpy(h0, h, sizeof(float) * (size_t)M * 2 * F);
    op_ffn_act(pool, h, 2 * F, M, F, OP_ACT_GELU_TANH, 1);
    worst = 0;
    for (int i = 0; i < M; i++) {
        float a[70];
        memcpy(a, h0 + (size_t)i * 2 * F, sizeof a);
        k_gelu_tanh_ref(a, (size_t)F);
        for (int j = 0; j < F; j++) {
            double d = fabs(h[(size_t)i * 2 * F + j] - a[j] * h0[(size_t)i * 2 * F + F + j]);
            if (d > worst) worst = d;
        }
    }
    CHECK(worst < 1e-5);

    /* op_attention_seg: 3 packed segments, each against the reference alone */
    int len[3] = {5, 70, 1}, start[3] = {0, 5, 75}, T = 76, I = H * dh, centre = 69;
    float *qkv = rnd((size_t)T * 3 * I), *out = malloc(sizeof(float) * (size_t)T * I);
    float *tb = rnd((size_t)H * (2 * 70 - 1)), *ref = malloc(sizeof(float) * (size_t)T * I);
    float *scr = malloc(sizeof(float) * 4 * OP_ATTN_ROWS * 80), *s2 = malloc(sizeof(float) * 70 * 70);
    op_attention_seg(pool, out, I, qkv, 3 * I, qkv + I, 3 * I, qkv + 2 * I, 3 * I, 3, start, len, H,
                     dh, 1.0f, tb, 2 * 70 - 1, centre, scr, (size_t)OP_ATTN_ROWS * 80);
    for (int sg = 0; sg < 3; sg++)
        for (int hd = 0; hd < H; hd++) {
            const float *base = qkv + (size_t)start[sg] * 3 * I + hd * dh;
            k_attention_bias_ref(ref + (size_t)start[sg] * I + hd * dh, I, base, 3 * I, base + I, 3 * I,
                                 base + 2 * I, 3 * I, len[sg], len[sg], dh, 1.0f,
                                 tb + (size_t)hd * (2 * 70 - 1) + centre, -1, s2);
        }
    CHECK(check_max_abs_diff(out, ref, (size_t)T * I, NULL) < 1e-5);

    /* op_attention_tab: rows at positions 0..4 of 2 sequences sharing slots */
    int R = 4, pos[4] = {3, 4, 2, 4}, trow[4] = {0, 0, 1, 1}, tab[2 * 8] = {0, 0, 1, 0, 0, 0, 0, 0,
                                                                        0, 1, 1, 1, 1, 0, 0, 0};
    int n_ctx = 8;
    float *kc2 = rnd((size_t)2 * n_ctx * I), *vc2 = rnd((size_t)2 * n_ctx * I);
    float *qr = rnd((size_t)R * I), *o2 = malloc(sizeof(float) * (size_t)R * I), *r2 = malloc(sizeof(float) * (size_t)R * I);
    float *db = rnd((size_t)H * n_ctx);
    op_attention_tab(pool, o2, I, qr, I, kc2, vc2, (size_t)n_ctx * I, I, R, pos, tab, trow, n_ctx, H,
                     dh, 0.5f, db, n_ctx, n_ctx - 1, scr, (size_t)OP_ATTN_ROWS * 80);
    for (int rr = 0; rr < R; rr++)
        for (int hd = 0; hd < H; hd++)
            k_attention_gather_ref(r2 + (size_t)rr * I + hd * dh, qr + (size_t)rr * I + hd * dh,
                                   kc2 + hd * dh, vc2 + hd * dh, (size_t)n_ctx * I, I, tab + trow[rr] * n_ctx,
                                   pos[rr] + 1, dh, 0.5f, db + (size_t)hd * n_ctx + n_ctx - 1 - pos[rr], s2);
    CHECK(check_max_abs_diff(o2, r2, (size_t)R * I, NULL) < 1e-5);
    free(q), free(k), free(v), free(bias), free(kc), free(vc), free(x), free(y), free(z), free(g);
    free(h), free(h0), free(qkv), free(out), free(tb), free(ref), free(scr), free(s2);
    free(kc2), free(vc2), free(qr), free(o2), free(r2), free(db);
}

static void test_attention(ed_pool *pool) {
    /* non-causal, >= 64 rows and keys: the fused kernel on the vector sets;
     * >= 256: the GEMM path where k_gemm has one (AVX-512); 2 or 5 heads of 64
     * over 3 threads: items split by heads, then by rows */
    int cases[][5] = {{1, 7, 0, 3, 16},   {9, 9, 1, 3, 16},    {4, 11, 1, 3, 16},
                      {70, 70, 0, 3, 16}, {70, 90, 1, 3, 16},  {300, 257, 0, 3, 16},
                      {257, 330, 0, 3, 16}, {301, 290, 0, 2, 64}, {97, 400, 0, 5, 64}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int Mq = cases[c][0], Tk = cases[c][1], causal = cases[c][2];
        int H = cases[c][3], dh = cases[c][4], d = H * dh;
        float *q = rnd((size_t)Mq * d), *k = rnd((size_t)Tk * d), *v = rnd((size_t)Tk * d);
        float *o = malloc(sizeof(float) * (size_t)Mq * d), *r = malloc(sizeof(float) * (size_t)Mq * d);
        float *s = malloc(sizeof(float) * (size_t)Mq * Tk * 2);
        for (int h = 0; h < H; h++)
            k_attention_ref(r + h * dh, d, q + h * dh, d, k + h * dh, d, v + h * dh, d, Mq, Tk, dh, 0.25f, causal, s);
        for (int h = 0; h < H; h++)
            k_attention(o + h * dh, d, q + h * dh, d, k + h * dh, d, v + h * dh, d, Mq, Tk, dh, 0.25f, causal, s);
        CHECK(check_max_abs_diff(o, r, (size_t)Mq * d, NULL) < 1e-5);
        size_t stride = (size_t)OP_ATTN_ROWS * Tk;
        float *sc = malloc(sizeof(float) * stride * (size_t)ed_pool_size(pool));
        op_attention(pool, o, d, q, d, k, d, v, d, Mq, Tk, H, dh, 0.25f, causal, sc, stride);
        CHECK(check_max_abs_diff(o, r, (size_t)Mq * d, NULL) < 1e-5);
        free(q); free(k); free(v); free(o); free(r); free(s); free(sc);
    }
    /* causal row i must ignore keys after its position: changing them changes nothing */
    float q[16], k[4 * 16], v[4 * 16], o1[2 * 16], o2[2 * 16], s[8];
    for (int i = 0; i < 16; i++) q[i] = frand();
    for (int i = 0; i < 64; i++) { k[i] = frand(); v[i] = frand(); }
    float q2[32];
    for (int i = 0; i < 32; i++) q2[i] = q[i % 16];
    k_attention(o1, 16, q2, 16, k, 16, v, 16, 2, 3, 16, 1.0f, 1, s);
    for (int i = 32; i < 48; i++) { k[i] += 5; v[i] -= 3; }   /* key 2: seen by row 1 only */
    k_attention(o2, 16, q2, 16, k, 16, v, 16, 2, 3, 16, 1.0f, 1, s);
    CHECK(check_max_abs_diff(o1, o2, 16, NULL) == 0);
    CHECK(check_max_abs_diff(o1 + 16, o2 + 16, 16, NULL) > 1e-3);
}

/* The fused long attention against the reference: ragged row and key
 * counts around its tiles (6 rows, 2 vectors of keys; from AVX-512 up 12
 * rows and 32 keys), groups (192 rows) and key blocks (256); a large scale
 * so that later key blocks raise the running maximum; keys with a row
 * stride; a dh of 16, which the 16-lane set leaves to the 8-lane one. Where
 * the set has no such kernel, has() says so. */
static void test_attention_flash(void) {
    int cases[][3] = {{1, 1, 64}, {5, 3, 64}, {7, 17, 64}, {13, 255, 32}, {193, 257, 64},
                      {200, 530, 64}, {6, 600, 128}, {24, 33, 96}, {12, 40, 16}};
    int have = k_attention_flash_has(64);
    CHECK_EQ_INT(have, k_isa() >= K_ISA_VEC);
    if (!have) return;
    CHECK(!k_attention_flash_has(20));
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int Mq = cases[c][0], Tk = cases[c][1], dh = cases[c][2], ld = dh + 3;
        float *q = rnd((size_t)Mq * ld), *k = rnd((size_t)Tk * ld), *v = rnd((size_t)Tk * ld);
        float *o = malloc(sizeof(float) * (size_t)Mq * ld), *r = malloc(sizeof(float) * (size_t)Mq * ld);
        float *s = malloc(sizeof(float) * (size_t)Tk);
        void *scr = malloc(k_attention_flash_scratch_bytes(Tk, dh));
        for (int t = Tk / 2; t < Tk; t++) k[(size_t)t * ld] += 2.0f;   /* later maxima */
        for (int sc = 0; sc < 2; sc++) {
            float scale = sc ? 2.0f : 0.125f;
            k_attention_ref(r, ld, q, ld, k, ld, v, ld, Mq, Tk, dh, scale, 0, s);
            k_attention_flash(o, ld, q, ld, k, ld, v, ld, Mq, Tk, dh, scale, scr);
            double worst = 0;
            for (int i = 0; i < Mq; i++)
                for (int d = 0; d < dh; d++) {
                    double e = fabs((double)o[(size_t)i * ld + d] - r[(size_t)i * ld + d]);
                    worst = e > worst ? e : worst;
                }
            if (worst >= 1e-5) printf("flash Mq %d Tk %d dh %d scale %g: %.3g\n", Mq, Tk, dh, scale, worst);
            CHECK(worst < 1e-5);
        }
        free(q), free(k), free(v), free(o), free(r), free(s), free(scr);
    }
}

static void test_elementwise(ed_pool *pool) {
    /* GELU: exact erf form; known values */
    float g[4] = {0.0f, 1.0f, -1.0f, 3.0f};
    k_gelu(g, 4);
    CHECK_NEAR(g[0], 0.0, 1e-7);
    CHECK_NEAR(g[1], 0.8413447460685429, 1e-6);
    CHECK_NEAR(g[2], -0.15865525393145707, 1e-6);
    CHECK_NEAR(g[3], 2.995950420707263, 1e-6);
    float *x = rnd(10000), *y = malloc(sizeof(float) * 10000);
    for (int i = 0; i < 10000; i++) y[i] = x[i] * 4;
    k_gelu_ref(y, 10000);
    for (int i = 0; i < 10000; i++) x[i] *= 4;
    op_gelu(pool, x, 100, 100);
    CHECK(check_max_abs_diff(x, y, 10000, NULL) < 1e-6);
    /* LayerNorm of [1,2,3,4] with g=1, b=0.5 */
    float a[4] = {1, 2, 3, 4}, gg[4] = {1, 1, 1, 1}, bb[4] = {.5f, .5f, .5f, .5f}, out[4];
    k_layernorm(out, a, gg, bb, 1, 4, 1e-5f);
    CHECK_NEAR(out[0], 0.5 - 1.3416355, 1e-5);
    CHECK_NEAR(out[3], 0.5 + 1.3416355, 1e-5);
    /* softmax and its exp against the double reference */
    float *e1 = rnd(1500), *e2 = malloc(sizeof(float) * 1500);
    for (int i = 0; i < 1500; i++) e1[i] *= 30, e2[i] = e1[i];
    k_softmax(e1, 1500);
    k_softmax_ref(e2, 1500);
    double rel = 0;
    for (int i = 0; i < 1500; i++) {
        double r = fabs(e1[i] - e2[i]) / (e2[i] > 1e-30 ? e2[i] : 1e-30);
        if (e2[i] > 1e-30 && r > rel) rel = r;
    }
    CHECK(rel < 5e-6);   /* f32 rounding of x - max (|x| <= 30) alone gives 2e-6 */
    double erel = 0;
    for (float t = -87.0f; t <= 88.0f; t += 0.0137f) {
        double r = fabs(k_exp(t) - exp((double)t)) / exp((double)t);
        if (r > erel) erel = r;
    }
    printf("softmax max rel err %.3g, exp max rel err %.3g\n", rel, erel);
    CHECK(erel < 4e-7);
    CHECK_NEAR(k_exp(-1000.0f), exp(-87.0), 1e-40);
    free(e1);
    free(e2);
    /* log-sum-exp over a vocabulary-sized row with -inf entries (suppressed
     * tokens) and an odd tail, against double libm; LayerNorm on a wide row
     * with a large mean (its lane sums) against a double two-pass */
    for (int n = 1; n <= 51869; n = n * 7 + 3) {
        float *lg = rnd((size_t)n), mx;
        for (int i = 0; i < n; i++) lg[i] = (i % 97 == 5) ? -INFINITY : lg[i] * 20;
        double m = -INFINITY, s = 0;
        for (int i = 0; i < n; i++) m = lg[i] > m ? lg[i] : m;
        for (int i = 0; i < n; i++) s += exp((double)lg[i] - m);
        double lse = k_logsumexp(lg, n, &mx);
        CHECK(mx == (float)m);
        if (m > -INFINITY) CHECK_NEAR(lse, log(s), 1e-6);
        free(lg);
    }
    /* a draw's weights: exp(x / t - max) with -inf entries exactly 0, the
     * sum and the shift against double libm, temperatures below and above 1 */
    for (int n = 1; n <= 51869; n = n * 7 + 3)
        for (int k = 0; k < 3; k++) {
            const float ts[3] = {1.0f, 0.2f, 1.7f};
            float t = ts[k], *lg = rnd((size_t)n), *wt = malloc(sizeof(float) * (size_t)n), mx;
            for (int i = 0; i < n; i++) lg[i] = (i % 97 == 5) ? -INFINITY : lg[i] * 20;
            double m = -INFINITY, sum = 0, werr = 0;
            for (int i = 0; i < n; i++) m = lg[i] / t > m ? lg[i] / t : m;
            double got = k_exp_scaled(wt, lg, n, t, &mx);
            CHECK(mx == (float)m);
            for (int i = 0; i < n && m > -INFINITY; i++) {
                double e = lg[i] == -INFINITY ? 0 : exp((double)(lg[i] / t) - m);
                sum += e;
                if (e == 0) CHECK(wt[i] == 0.0f);
                else if (e > 1e-30 && fabs(wt[i] - e) / e > werr) werr = fabs(wt[i] - e) / e;
            }
            if (m > -INFINITY) {
                CHECK(werr < 4e-6);   /* exp_poly's 4e-7, and x / t - mx rounded in f32 (|.| <= 200) */
                CHECK_NEAR(got / sum, 1.0, 1e-6);
            }
            free(lg);
            free(wt);
        }
    {
        float wt[5] = {7, 7, 7, 7, 7}, mxs, none[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        CHECK(k_exp_scaled(wt, none, 5, 0.5f, &mxs) == 0 && mxs == -INFINITY && wt[0] == 7);
    }
    /* argmax: the first maximum, as the plain loop, on rows with many ties
     * (values from a small set), a NaN at x[0] or inside, and odd lengths */
    for (int n = 1; n <= 51869; n = n * 3 + 1)
        for (int v = 0; v < 4; v++) {
            float *ar = malloc(sizeof(float) * (size_t)n);
            for (int i = 0; i < n; i++) ar[i] = (float)((int)(frand() * 8));
            if (v == 1) ar[0] = NAN;
            if (v == 2) ar[n / 2] = NAN;
            if (v == 3) ar[n - 1] = 100;
            int want = 0;
            for (int i = 1; i < n; i++)
                if (ar[i] > ar[want]) want = i;
            CHECK_EQ_INT(k_argmax(ar, n), want);
            free(ar);
        }
    float ninf[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY}, mxi;
    CHECK(k_logsumexp(ninf, 5, &mxi) == 0 && mxi == -INFINITY);
    {
        int D = 1283;
        float *w = rnd((size_t)D), *go = rnd((size_t)D), *bo = rnd((size_t)D), *yo = malloc(sizeof(float) * (size_t)D);
        for (int i = 0; i < D; i++) w[i] = 1000 + 5 * w[i];
        k_layernorm(yo, w, go, bo, 1, D, 1e-5f);
        double mu = 0, var = 0, worst = 0;
        for (int i = 0; i < D; i++) mu += w[i];
        mu /= D;
        for (int i = 0; i < D; i++) var += (w[i] - mu) * (w[i] - mu);
        var /= D;
        for (int i = 0; i < D; i++) {
            double want = (w[i] - mu) / sqrt(var + 1e-5) * go[i] + bo[i];
            worst = fmax(worst, fabs(want - yo[i]));
        }
        CHECK(worst < 2e-4);   /* x - mean in f32 at |x| ~ 1000: ulp 6e-5, over std ~2.9 */
        free(w), free(go), free(bo), free(yo);
    }
    float sm[3] = {1, 2, 3};
    k_softmax(sm, 3);
    CHECK_NEAR(sm[2], 0.66524096, 1e-6);
    CHECK_EQ_INT(k_argmax(sm, 3), 2);
    /* im2col with stride 2, padding 1 on time-major [T=4, C=2] */
    float t[8] = {1, 10, 2, 20, 3, 30, 4, 40}, col[2 * 6];
    k_im2col_1d(col, t, 0, 2, 4, 3, 2, 1, 0, 2);
    float want[12] = {0, 1, 2, 0, 10, 20, 2, 3, 4, 20, 30, 40};
    CHECK(check_max_abs_diff(col, want, 12, NULL) == 0);
    free(x); free(y);
}

static void count_task(void *ctx, int ith, int nth) {
    int *hits = ctx;
    __atomic_fetch_add(&hits[ith], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&hits[nth + 8], 1, __ATOMIC_RELAXED);
}

static void test_pool(void) {
    ed_pool *p;
    CHECK_STATUS(ed_pool_new(&p, 0), ENCDEC_ERR_ARG, "out of range");
    CHECK_STATUS(ed_pool_new(&p, 100000), ENCDEC_ERR_ARG, "out of range");
    CHECK_EQ_INT(ed_pool_new(&p, 4), ENCDEC_OK);
    int hits[32] = {0};
    for (int r = 0; r < 100; r++) ed_pool_run(p, count_task, hits);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(hits[i], 100);
    CHECK_EQ_INT(hits[4 + 8], 400);
    ed_pool_free(p);
    ed_pool_free(NULL);
    int lo, hi, total = 0;
    for (int i = 0; i < 3; i++) {
        ed_split(10, i, 3, 4, &lo, &hi);
        total += hi - lo;
        CHECK(lo % 4 == 0);
    }
    CHECK_EQ_INT(total, 10);
}

/* BLAS called from every pool thread at once must give the same bits every
 * time (a non-reentrant BLAS corrupts its shared buffers here: Debian's
 * sequential OpenBLAS did, a few products in ten thousand). */
static void test_concurrent_blas(void) {
    ed_pool *p;
    CHECK_EQ_INT(ed_pool_new(&p, 6), ENCDEC_OK);
    int M = 96, N = 200, K = 384;
    float *x = rnd((size_t)M * K), *w = rnd((size_t)N * K);
    float *y0 = malloc(sizeof(float) * (size_t)M * N), *y = malloc(sizeof(float) * (size_t)M * N);
    op_matmul(p, y0, x, w, NULL, M, N, K);
    int bad = 0;
#ifdef ED_EMULATED
    const int reps = 100;   /* qemu-user: 3000 products take minutes */
#else
    const int reps = 3000;
#endif
    for (int i = 0; i < reps; i++) {
        op_matmul(p, y, x, w, NULL, M, N, K);
        bad += memcmp(y, y0, sizeof(float) * (size_t)M * N) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    free(x); free(w); free(y0); free(y);
    ed_pool_free(p);
}

static void isa_task(void *ctx, int ith, int nth) {
    (void)nth;
    ((int *)ctx)[ith] = k_isa();
}

/* A pool's limit reaches every thread of a run, the caller's only for the run. */
static void test_isa_limit(ed_pool *pool) {
    int seen[3] = {-1, -1, -1};
    ed_pool_set_isa(pool, K_ISA_C);
    ed_pool_run(pool, isa_task, seen);
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(seen[i], K_ISA_C);
    CHECK_EQ_INT(k_isa(), k_isa_cpu());
    ed_pool_set_isa(pool, ED_ISA_ANY);
    ed_pool_run(pool, isa_task, seen);
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(seen[i], k_isa_cpu());
    CHECK(k_isa_parse(k_isa_name(K_ISA_VEC)) == K_ISA_VEC && k_isa_parse("sse") == -1);
}

/* The screened pick's scans against plain loops: rows the rules changed,
 * zeros, -inf and NaN, cuts below, within and above the values, lengths
 * that leave tails. */
static void test_pick_scans(void) {
    int sizes[] = {1, 17, 100, 1003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        float *raw = rnd((size_t)n), *row = malloc(sizeof(float) * (size_t)n);
        int *ids = malloc(sizeof(int) * (size_t)n), *want = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++) {
            row[i] = raw[i];
            if (i % 7 == 3) row[i] = -INFINITY;
            if (i % 11 == 5) row[i] = raw[i] - 0.5f;
            if (i % 13 == 6) raw[i] = row[i] = 0;
            if (i % 29 == 9) row[i] = NAN;
        }
        float best = -INFINITY;
        for (int i = 0; i < n; i++)
            if (row[i] == raw[i] && raw[i] != 0 && row[i] > best) best = row[i];
        CHECK(k_max_kept(raw, row, (size_t)n) == best);
        float cuts[] = {-INFINITY, -0.2f, 0.3f, 2.0f};
        for (int c = 0; c < 4; c++) {
            int m = 0;
            for (int i = 0; i < n; i++)
                if (row[i] != -INFINITY && (row[i] != raw[i] || raw[i] == 0 || row[i] >= cuts[c])) want[m++] = i;
            size_t got = k_ids_to_refine(raw, row, (size_t)n, cuts[c], ids);
            CHECK(got == (size_t)m && memcmp(ids, want, sizeof(int) * (size_t)m) == 0);
        }
        free(raw), free(row), free(ids), free(want);
    }
}

/* The load-time weight scan against its twin: max, sum of squares, and a
 * NaN / Inf / -Inf anywhere (lane, tail) makes it report "not finite". */
static void test_scan_stats(void) {
    size_t sizes[] = {1, 15, 16, 17, 1000, 8192};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *x = rnd(n), m, mr;
        double ss, sr;
        x[n / 2] = -3.5f;
        CHECK_EQ_INT(k_scan_stats(x, n, &m, &ss), 1);
        CHECK_EQ_INT(k_scan_stats_ref(x, n, &mr, &sr), 1);
        CHECK(m == mr && m == 3.5f);
        CHECK_NEAR(ss, sr, 1e-5 * sr);
        const float bad[] = {NAN, INFINITY, -INFINITY};
        for (int b = 0; b < 3; b++) {
            size_t at = (n - 1) * (size_t)b / 2;
            float keep = x[at];
            x[at] = bad[b];
            CHECK_EQ_INT(k_scan_stats(x, n, &m, &ss), 0);
            CHECK_EQ_INT(k_scan_stats_ref(x, n, &mr, &sr), 0);
            x[at] = keep;
        }
        /* the bounded maximum: values past the limit and NaN counted, not taken */
        x[n - 1] = -2.0f;
        if (n > 2) x[1] = NAN;
        for (int q = 0; q < 3; q++) {
            float lim = q == 0 ? 4.0f : q == 1 ? 3.5f : 1.0f;
            size_t c = k_absmax_within(x, n, lim, &m), cr = k_absmax_within_ref(x, n, lim, &mr);
            CHECK(c == cr && m == mr);
            CHECK(q < 2 ? m == (n > 1 ? 3.5f : 2.0f) : m <= 1.0f);
            CHECK(c >= (size_t)(n > 2) + (size_t)(q == 2));
        }
        free(x);
    }
}

int main(void) {
    ed_pool *pool;
    CHECK_EQ_INT(ed_pool_new(&pool, 3), ENCDEC_OK);
    test_isa_limit(pool);
    /* every kernel set this CPU has, on 3 threads (the pool's and the caller's limit) */
    for (int isa = K_ISA_C; isa <= k_isa_cpu(); isa++) {
        printf("kernel set %s\n", k_isa_name(isa));
        int old = ed_isa_swap(isa);
        ed_pool_set_isa(pool, isa);
        test_matmul(pool);
        test_matmul_few();
        test_matmul_inv_rows();
        test_matmul_epi(pool);
        test_matmul_h(pool);
        test_matmul_inv(pool);
        test_matmul_rows(pool);
        test_t5_kernels(pool);
        test_attention(pool);
        test_attention_flash();
        test_elementwise(pool);
        test_scan_stats();
        test_pick_scans();
        ed_isa_swap(old);
    }
    ed_pool_set_isa(pool, ED_ISA_ANY);
    test_pool();
    test_concurrent_blas();
    ed_pool_free(pool);
    return check_done();
}
