/* test_cuda.c - every kernel of the CUDA backend (src/cuda/cuda.h) against
 * its CPU twin (kern/, core/ops) on random inputs: shapes of the models
 * (tiny to large-v3, T5), edge sizes (1 row, 1 column, odd lengths, strides
 * wider than the rows), several batch sizes; f32, f16 and bf16 where the
 * kernel takes them. Results agree to rounding (the summation orders
 * differ): max |gpu - cpu| within tol * (1 + max |cpu|). Then the errors:
 * a device that does not exist, a launch that cannot run.
 *
 * Skips (77), saying why, where there is no CUDA device: it never passes
 * without having run (scripts/test-cuda.sh runs it on a GPU).
 */
#include "check.h"

#include "base/half.h"
#include "base/pool.h"
#include "core/kvcache.h"
#include "core/ops.h"
#include "cuda/cuda.h"
#include "kern/kern.h"
#include "kern/q8.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static cu_dev *g;
static uint32_t g_rng = 12345;

static float urand(void) {   /* [-1, 1) */
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)((g_rng >> 8) / 8388608.0 - 1.0);
}

static float *rnd(size_t n, float scale) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = urand() * scale;
    return x;
}

static void *up(const void *h, size_t bytes) {
    void *d = cu_alloc(g, bytes, "test input");
    CHECK(d != NULL);
    if (d) CHECK_EQ_INT(cu_upload(g, d, h, bytes), ENCDEC_OK);
    return d;
}

static float *down(const float *d, size_t n) {
    float *h = calloc(n ? n : 1, sizeof *h);
    encdec_status st = cu_download(g, h, d, n * sizeof *h);
    if (st) fprintf(stderr, "download: %s\n", encdec_last_error());
    CHECK_EQ_INT(st, ENCDEC_OK);
    return h;
}

/* gpu against cpu over n floats: within tol * (1 + max |cpu|). */
static void near(const char *what, const float *gpu, const float *cpu, size_t n, double tol) {
    double mx = 0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(cpu[i]));
    size_t at;
    double d = check_max_abs_diff(gpu, cpu, n, &at);
    if (!(d <= tol * (1 + mx)))
        fprintf(stderr, "%s: max |gpu - cpu| %.3g at %zu (gpu %g, cpu %g), tol %.3g\n", what, d, at,
                gpu[at], cpu[at], tol * (1 + mx));
    CHECK(d <= tol * (1 + mx));
}

static uint16_t to_half(float v, int t) { return t == CU_F16 ? ed_f2h(v) : ed_f2bf(v); }
static float of_half(uint16_t h, int t) { return t == CU_F16 ? ed_h2f(h) : ed_bf2f(h); }

/* y = x . w^T + b with each epilogue and weight type, y and x strided. */
static void matmul_case(int M, int N, int K, int t, int epi) {
    int ldx = K + 3, ldy = N + 5;
    float *x = rnd((size_t)M * ldx, 1), *w = rnd((size_t)N * K, 0.5f), *b = rnd(N, 1);
    float *y0 = rnd((size_t)M * ldy, 1), *ref = malloc(sizeof(float) * (size_t)M * ldy);
    const void *wsrc = w;
    uint16_t *wh = NULL;
    if (t != CU_F32) {   /* the twin: halves of x and w, products in f32 */
        wh = malloc(sizeof(uint16_t) * (size_t)N * K);
        for (size_t i = 0; i < (size_t)N * K; i++) w[i] = of_half(wh[i] = to_half(w[i], t), t);
        wsrc = wh;
    }
    float *xr = malloc(sizeof(float) * (size_t)M * ldx);
    for (size_t i = 0; i < (size_t)M * ldx; i++) xr[i] = t == CU_F32 ? x[i] : of_half(to_half(x[i], t), t);
    memcpy(ref, y0, sizeof(float) * (size_t)M * ldy);
    float *prod = malloc(sizeof(float) * (size_t)M * N);
    k_matmul_ref(prod, N, xr, ldx, w, K, b, M, N, K);
    for (int r = 0; r < M; r++) {
        if (epi & CU_EPI_GELU) k_gelu_ref(prod + (size_t)r * N, (size_t)N);
        for (int c = 0; c < N; c++)
            ref[(size_t)r * ldy + c] = (epi & CU_EPI_ACC ? ref[(size_t)r * ldy + c] : 0) + prod[(size_t)r * N + c];
    }
    float *dx = up(x, sizeof(float) * (size_t)M * ldx), *db = up(b, sizeof(float) * N);
    float *dy = up(y0, sizeof(float) * (size_t)M * ldy);
    void *dw = up(wsrc, (size_t)N * K * (t == CU_F32 ? 4 : 2));
    cu_w cw = {dw, (cu_type)t};
    cu_matmul(g, dy, ldy, dx, ldx, cw, db, M, N, K, epi);
    float *got = down(dy, (size_t)M * ldy);
    char what[96];
    snprintf(what, sizeof what, "matmul %dx%dx%d type %d epi %d", M, N, K, t, epi);
    near(what, got, ref, (size_t)M * ldy, t == CU_F32 ? 1e-5 : 1e-4);
    cu_free(g, dx), cu_free(g, db), cu_free(g, dy), cu_free(g, dw);
    free(x), free(w), free(b), free(y0), free(ref), free(wh), free(xr), free(prod), free(got);
}

/* The batch-invariant product: as k_matmul_ref (w as stored; x in f32, or
 * rounded to the weight's type where CU_INV_TC), and row r bitwise the
 * same alone (M = 1) and at row 3 of another batch. */
static void matmul_inv_case(int M, int N, int K, int t, int ldx) {
    float *x = rnd((size_t)M * ldx, 1), *w = rnd((size_t)N * K, 0.5f), *b = rnd(N, 1);
    const void *wsrc = w;
    uint16_t *wh = NULL;
    if (t != CU_F32) {
        wh = malloc(sizeof(uint16_t) * (size_t)N * K);
        for (size_t i = 0; i < (size_t)N * K; i++) w[i] = of_half(wh[i] = to_half(w[i], t), t);
        wsrc = wh;
    }
    float *ref = malloc(sizeof(float) * (size_t)M * N), *xr = malloc(sizeof(float) * (size_t)M * ldx);
    for (size_t i = 0; i < (size_t)M * ldx; i++) xr[i] = CU_INV_TC(t, K) ? of_half(to_half(x[i], t), t) : x[i];
    k_matmul_ref(ref, N, xr, ldx, w, K, b, M, N, K);
    float *dx = up(x, sizeof(float) * (size_t)M * ldx), *db = up(b, sizeof(float) * N);
    float *dy = cu_alloc(g, sizeof(float) * (size_t)(M > 5 ? M : 5) * N, "y");   /* 5: below */
    void *dw = up(wsrc, (size_t)N * K * (t == CU_F32 ? 4 : 2));
    cu_w cw = {dw, (cu_type)t};
    cu_matmul_inv(g, dy, N, dx, ldx, cw, db, M, N, K);
    float *all = down(dy, (size_t)M * N);
    char what[96];
    snprintf(what, sizeof what, "matmul (invariant) %dx%dx%d type %d ldx %d", M, N, K, t, ldx);
    near(what, all, ref, (size_t)M * N, CU_INV_TC(t, K) ? 1e-4 : 1e-5);
    int rows[3] = {0, M / 2, M - 1}, diff = 0;
    float *other = rnd((size_t)5 * ldx, 1);
    for (int i = 0; i < 3; i++) {
        int r = rows[i];
        memcpy(other + (size_t)3 * ldx, x + (size_t)r * ldx, sizeof(float) * (size_t)ldx);
        float *d1 = up(x + (size_t)r * ldx, sizeof(float) * (size_t)ldx);
        float *d5 = up(other, sizeof(float) * (size_t)5 * ldx);
        cu_matmul_inv(g, dy, N, d1, ldx, cw, db, 1, N, K);
        float *one = down(dy, (size_t)N);
        cu_matmul_inv(g, dy, N, d5, ldx, cw, db, 5, N, K);
        float *five = down(dy, (size_t)5 * N);
        diff += memcmp(one, all + (size_t)r * N, sizeof(float) * (size_t)N) != 0;
        diff += memcmp(five + (size_t)3 * N, all + (size_t)r * N, sizeof(float) * (size_t)N) != 0;
        free(one), free(five), cu_free(g, d1), cu_free(g, d5);
    }
    if (diff) fprintf(stderr, "%s: a row differs alone or elsewhere in a batch\n", what);
    CHECK_EQ_INT(diff, 0);
    cu_free(g, dx), cu_free(g, db), cu_free(g, dy), cu_free(g, dw);
    free(x), free(w), free(b), free(wh), free(ref), free(xr), free(all), free(other);
}

/* int8 (CU_Q8): the CPU's packed matrix in the device layout; the product,
 * plain, accumulating and with GELU, and the batch-invariant one, against
 * k_matmul_q8 on the CPU: the same bits (exact integer sums, the same
 * float steps), GELU to rounding; the embedding rows as k_q8_row. Rows of
 * zeros and a NaN in x take the CPU's branches. */
static void q8_case(int M, int N, int K, int ldx) {
    float *x = rnd((size_t)M * ldx, 2), *w = rnd((size_t)N * K, 0.5f), *b = rnd(N, 1);
    for (int k = 0; k < K; k++) w[k] = 0.0f;                        /* a zero weight row */
    if (M > 2) {
        for (int k = 0; k < K; k++) x[(size_t)ldx + k] = 0.0f;      /* a zero row of x */
        x[(size_t)2 * ldx + K / 2] = NAN;                            /* a NaN: -127, as the CPU */
    }
    void *packed = aligned_alloc(64, (k_q8_bytes(N, K) + 63) & ~(size_t)63);
    k_w kw = {w, K_F32, 0};
    k_q8 q = k_q8_pack(packed, kw, N, K);
    size_t rb = k_q8_dev_row_bytes(K);
    void *rows = malloc((size_t)N * rb);
    k_q8_to_dev(rows, q);
    float *ref = malloc(sizeof(float) * (size_t)M * N), *y0 = rnd((size_t)M * N, 1);
    void *sc = malloc(k_q8_scratch_bytes(M, K));
    k_matmul_q8(ref, N, x, ldx, q, b, M, 0, N, sc);
    float *dx = up(x, sizeof(float) * (size_t)M * ldx), *db = up(b, sizeof(float) * N);
    float *dy = up(y0, sizeof(float) * (size_t)M * N);
    cu_w cw = {up(rows, (size_t)N * rb), CU_Q8};
    char what[96];
    int same = 1;
    cu_matmul(g, dy, N, dx, ldx, cw, db, M, N, K, 0);
    float *got = down(dy, (size_t)M * N);
    same &= memcmp(got, ref, sizeof(float) * (size_t)M * N) == 0;
    free(got);
    cu_matmul_inv(g, dy, N, dx, ldx, cw, db, M, N, K);
    got = down(dy, (size_t)M * N);
    same &= memcmp(got, ref, sizeof(float) * (size_t)M * N) == 0;
    free(got);
    if (!same) fprintf(stderr, "int8 matmul %dx%dx%d: not the CPU's bits\n", M, N, K);
    CHECK(same);
    /* accumulate into y0, then GELU */
    float *acc = malloc(sizeof(float) * (size_t)M * N);
    for (size_t i = 0; i < (size_t)M * N; i++) acc[i] = y0[i] + ref[i];
    float *dy2 = up(y0, sizeof(float) * (size_t)M * N);
    cu_matmul(g, dy2, N, dx, ldx, cw, db, M, N, K, CU_EPI_ACC);
    got = down(dy2, (size_t)M * N);
    snprintf(what, sizeof what, "int8 matmul %dx%dx%d, accumulated", M, N, K);
    CHECK(memcmp(got, acc, sizeof(float) * (size_t)M * N) == 0);
    free(got);
    cu_matmul(g, dy2, N, dx, ldx, cw, db, M, N, K, CU_EPI_GELU);
    got = down(dy2, (size_t)M * N);
    for (int i = 0; i < M; i++) k_gelu_ref(ref + (size_t)i * N, (size_t)N);
    snprintf(what, sizeof what, "int8 matmul %dx%dx%d, GELU", M, N, K);
    near(what, got, ref, (size_t)M * N, 1e-5);
    free(got);
    /* embedding rows of the same matrix */
    int tok[3] = {0, N - 1, N / 2}, R = N >= 3 ? 3 : 1;
    float *erow = malloc(sizeof(float) * (size_t)3 * K);
    for (int r = 0; r < R; r++) k_q8_row(erow + (size_t)r * K, q, tok[r]);
    int *dtok = up(tok, sizeof tok);
    float *de = cu_alloc(g, sizeof(float) * (size_t)3 * K, "embedding");
    cu_embed(g, de, cw, dtok, NULL, NULL, R, K);
    got = down(de, (size_t)R * K);
    CHECK(memcmp(got, erow, sizeof(float) * (size_t)R * K) == 0);
    free(got);
    cu_free(g, dx), cu_free(g, db), cu_free(g, dy), cu_free(g, dy2), cu_free(g, (void *)cw.p);
    cu_free(g, dtok), cu_free(g, de);
    free(x), free(w), free(b), free(packed), free(rows), free(ref), free(y0), free(sc), free(acc), free(erow);
}

static void matmuls(void) {
    static const int shapes[][3] = {{1, 1, 1}, {1, 51864, 384}, {3, 384, 384}, {17, 1536, 384},
                                    {64, 384, 1536}, {257, 100, 33}, {1500, 512, 512}, {5, 7, 1280}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = CU_F32; t <= CU_BF16; t++)
            for (int epi = 0; epi <= 2; epi++) matmul_case(shapes[i][0], shapes[i][1], shapes[i][2], t, epi);
    printf("matmul: f32, f16, bf16 weights, plain, GELU, accumulate: as k_matmul_ref\n");
    /* (K % 16 == 0 with halves: the tensor-core kernel; 150 rows: three row
     * blocks; 1032 and 100 columns: a last strip of 8 and of 4. The
     * vocabulary's 51864 columns, the same last strip, are the plain and
     * int8 products' shape here, and every golden's: as an invariant case,
     * with its seven launches, it was 45 s of the SIMT build's run) */
    static const int inv[][4] = {{1, 1, 1, 1}, {1, 1032, 384, 384}, {9, 1536, 384, 384},
                                 {37, 384, 1536, 1536}, {64, 100, 33, 35}, {17, 640, 1280, 1283},
                                 {150, 100, 64, 70}, {3, 37, 16, 16}};
    for (size_t i = 0; i < sizeof inv / sizeof inv[0]; i++)
        for (int t = CU_F32; t <= CU_BF16; t++) matmul_inv_case(inv[i][0], inv[i][1], inv[i][2], t, inv[i][3]);
    printf("matmul (batch-invariant): f32, f16, bf16 weights, as k_matmul_ref, each row alone as in any batch\n");
    static const int q8[][4] = {{1, 1, 1, 1}, {1, 51864, 384, 384}, {9, 1536, 384, 390}, {37, 384, 1536, 1536},
                                {64, 100, 33, 35}, {3, 70, 7, 7}};
    for (size_t i = 0; i < sizeof q8 / sizeof q8[0]; i++) q8_case(q8[i][0], q8[i][1], q8[i][2], q8[i][3]);
    printf("matmul (int8): plain, accumulated, batch-invariant: the CPU's k_matmul_q8 bit for bit; GELU; "
           "embedding rows as k_q8_row\n");
}

static void norms(void) {
    static const int shapes[][2] = {{1, 1}, {1, 31}, {5, 384}, {33, 1280}, {1500, 512}, {3, 4097}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int M = shapes[i][0], D = shapes[i][1];
        size_t n = (size_t)M * D;
        float *x = rnd(n, 3), *gm = rnd(D, 1), *bt = rnd(D, 1), *ref = malloc(sizeof(float) * n);
        for (size_t j = 0; j < n; j++) x[j] += 0.5f;   /* a mean away from 0 */
        float *dx = up(x, n * 4), *dg = up(gm, D * 4), *db = up(bt, D * 4);
        float *dy = cu_alloc(g, n * 4, "y");
        k_layernorm(ref, x, gm, bt, M, D, 1e-5f);
        cu_layernorm(g, dy, dx, dg, db, M, D, 1e-5f);
        float *got = down(dy, n);
        near("layernorm", got, ref, n, 1e-5);
        free(got);
        k_rmsnorm(ref, x, gm, M, D, 1e-6f);
        cu_rmsnorm(g, dy, dx, dg, M, D, 1e-6f);
        got = down(dy, n);
        near("rmsnorm", got, ref, n, 1e-5);
        free(got);
        /* picked rows (a step's output rows), the indices staged */
        int nr = M < 3 ? M : 3, rows[3] = {M - 1, 0, M / 2};
        const int *drows = cu_stage(g, rows, sizeof(int) * (size_t)nr);
        op_layernorm_rows(NULL, ref, x, rows, nr, gm, bt, D, 1e-5f);
        cu_layernorm_gather(g, dy, dx, drows, nr, dg, db, D, 1e-5f);
        got = down(dy, (size_t)nr * D);
        near("layernorm of picked rows", got, ref, (size_t)nr * D, 1e-5);
        free(got);
        op_rmsnorm_rows(NULL, ref, x, rows, nr, gm, D, 1e-6f);
        cu_rmsnorm_gather(g, dy, dx, drows, nr, dg, D, 1e-6f);
        got = down(dy, (size_t)nr * D);
        near("rmsnorm of picked rows", got, ref, (size_t)nr * D, 1e-5);
        free(got);
        memcpy(ref, x, n * sizeof(float));
        op_scale(NULL, ref, n, -0.37f);
        cu_scale(g, dx, n, -0.37f);
        got = down(dx, n);
        near("scale", got, ref, n, 0);
        free(got);
        cu_free(g, dx), cu_free(g, dg), cu_free(g, db), cu_free(g, dy);
        free(x), free(gm), free(bt), free(ref);
    }
    /* staging: many small arrays in a row, past the ring's wrap, each intact */
    static int dst[1024];
    int bad = 0;
    for (int it = 0; it < 3000 && !bad; it++) {
        int v[1024];
        for (int j = 0; j < 1024; j++) v[j] = it * 7 + j;
        const int *dv = cu_stage(g, v, sizeof v);
        CHECK(dv != NULL);
        if (!dv) break;
        if (it % 500 == 499) {   /* what the ring holds now is the last array staged */
            CHECK_EQ_INT(cu_download(g, dst, dv, sizeof v), ENCDEC_OK);
            for (int j = 0; j < 1024; j++) bad += dst[j] != it * 7 + j;
        }
    }
    CHECK_EQ_INT(bad, 0);
    printf("layernorm, rmsnorm (all rows, picked rows), scale: as k_layernorm, k_rmsnorm, ops_rows; staging\n");
}

static void elementwise(void) {
    size_t n = 100003;
    float *x = rnd(n, 4), *y = rnd(n, 4), *ref = malloc(sizeof(float) * n);
    float *dx = up(x, n * 4), *dy = up(y, n * 4);
    memcpy(ref, y, n * 4);
    k_add(ref, x, n);
    cu_add(g, dy, dx, n);
    float *got = down(dy, n);
    near("add", got, ref, n, 1e-6);
    free(got);
    /* activations over h[M, 2F] (ld 2F + 3), plain and gated */
    int M = 7, F = 1031, ld = 2 * F + 3;
    size_t hn = (size_t)M * ld;
    float *h = rnd(hn, 4), *hr = malloc(sizeof(float) * hn);
    for (int act = 0; act < 4; act++)
        for (int gated = 0; gated < 2; gated++) {
            memcpy(hr, h, hn * 4);
            for (int r = 0; r < M; r++) {
                float *row = hr + (size_t)r * ld;
                if (act == 0) k_relu(row, F);
                else if (act == 1) k_gelu_ref(row, F);
                else if (act == 2) k_gelu_tanh_ref(row, F);
                else k_silu_ref(row, F);
                if (gated) k_mul(row, row + F, F);
            }
            float *dh = up(h, hn * 4);
            cu_ffn_act(g, dh, ld, M, F, act, gated);
            float *gh = down(dh, hn);
            char what[64];
            snprintf(what, sizeof what, "ffn activation %d gated %d", act, gated);
            near(what, gh, hr, hn, 2e-6);
            cu_free(g, dh), free(gh);
        }
    cu_free(g, dx), cu_free(g, dy);
    free(x), free(y), free(ref), free(h), free(hr);
    printf("add, ReLU, GELU, GELU-tanh, SiLU, gated: as kern/\n");
}

static void rows_and_tables(void) {
    /* embedding rows + positions, f32 and f16 tables */
    int V = 1000, d = 384, R = 9, tok[9] = {0, 999, 5, 5, 17, 256, 1, 2, 998}, pos[9] = {0, 1, 2, 3, 4, 5, 447, 100, 9};
    float *emb = rnd((size_t)V * d, 1), *pe = rnd((size_t)448 * d, 1);
    uint16_t *eh = malloc(sizeof(uint16_t) * (size_t)V * d);
    for (size_t i = 0; i < (size_t)V * d; i++) eh[i] = ed_f2h(emb[i]);
    int *dtok = up(tok, sizeof tok), *dpos = up(pos, sizeof pos);
    float *dpe = up(pe, (size_t)448 * d * 4), *dx = cu_alloc(g, (size_t)R * d * 4, "x");
    float *ref = malloc(sizeof(float) * (size_t)R * d);
    for (int t = CU_F32; t <= CU_F16; t++) {
        void *de = t == CU_F32 ? up(emb, (size_t)V * d * 4) : up(eh, (size_t)V * d * 2);
        for (int r = 0; r < R; r++)
            for (int j = 0; j < d; j++)
                ref[(size_t)r * d + j] = (t == CU_F32 ? emb[(size_t)tok[r] * d + j] : ed_h2f(eh[(size_t)tok[r] * d + j])) +
                                         pe[(size_t)pos[r] * d + j];
        cu_w w = {de, (cu_type)t};
        cu_embed(g, dx, w, dtok, dpe, dpos, R, d);
        float *got = down(dx, (size_t)R * d);
        near("embedding", got, ref, (size_t)R * d, 0);
        free(got), cu_free(g, de);
    }
    /* windows (overlapping) and the transpose */
    int M = 301, K = 3 * 80, ldx = 80;
    size_t xn = (size_t)(M + 2) * ldx;
    float *x = rnd(xn, 1), *col = malloc(sizeof(float) * (size_t)M * K);
    for (int i = 0; i < M; i++) memcpy(col + (size_t)i * K, x + (size_t)i * ldx, (size_t)K * 4);
    float *dxw = up(x, xn * 4), *dcol = cu_alloc(g, (size_t)M * K * 4, "col");
    cu_windows(g, dcol, dxw, ldx, M, K);
    float *got = down(dcol, (size_t)M * K);
    near("windows", got, col, (size_t)M * K, 0);
    free(got);
    int rows = 80, cols = 3001;
    float *mt = rnd((size_t)rows * cols, 1), *tr = malloc(sizeof(float) * (size_t)rows * cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) tr[(size_t)c * rows + r] = mt[(size_t)r * cols + c];
    float *dm = up(mt, (size_t)rows * cols * 4), *dt = cu_alloc(g, (size_t)rows * cols * 4, "t");
    cu_transpose(g, dt, dm, rows, cols);
    got = down(dt, (size_t)rows * cols);
    near("transpose", got, tr, (size_t)rows * cols, 0);
    free(got);
    /* argmax: ties to the first, a row of one, rows wider than the block */
    int AM = 4, AN = 51865;
    float *lg = rnd((size_t)AM * AN, 10);
    lg[7] = 50, lg[9] = 50;                        /* row 0: a tie, 7 first */
    lg[(size_t)1 * AN + AN - 1] = 60;              /* row 1: the last */
    int want[4];
    for (int r = 0; r < AM; r++) want[r] = k_argmax(lg + (size_t)r * AN, AN);
    float *dl = up(lg, (size_t)AM * AN * 4);
    int *di = cu_alloc(g, sizeof want, "idx"), gi[4];
    cu_argmax(g, di, dl, AN, AM, AN);
    CHECK_EQ_INT(cu_download(g, gi, di, sizeof gi), ENCDEC_OK);
    for (int r = 0; r < AM; r++) CHECK_EQ_INT(gi[r], want[r]);
    CHECK_EQ_INT(gi[0], 7);
    cu_free(g, dtok), cu_free(g, dpos), cu_free(g, dpe), cu_free(g, dx), cu_free(g, dxw), cu_free(g, dcol);
    cu_free(g, dm), cu_free(g, dt), cu_free(g, dl), cu_free(g, di);
    free(emb), free(pe), free(eh), free(ref), free(x), free(col), free(mt), free(tr), free(lg);
    printf("embedding, windows, transpose, argmax: as the host's\n");
}

static void attention(void) {
    static const int cases[][5] = {   /* Mq, Tk, heads, dh, causal */
        {1500, 1500, 6, 64, 0}, {1, 1, 1, 64, 0}, {7, 7, 8, 64, 1}, {3, 10, 4, 32, 1},
        {33, 77, 20, 64, 0}, {5, 300, 2, 128, 1},
        /* the tiled kernel (16 rows or more, heads up to 64): causal prompts, as
         * long as the keys and shorter, narrow and odd heads, a tile's edges */
        {40, 40, 3, 64, 1}, {20, 50, 2, 32, 1}, {17, 130, 2, 48, 0}, {64, 64, 1, 64, 1},
        {16, 12000, 1, 64, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int Mq = cases[c][0], Tk = cases[c][1], H = cases[c][2], dh = cases[c][3], causal = cases[c][4];
        int d = H * dh, ldq = 3 * d;   /* q, k, v side by side as a fused QKV */
        float *qkv = rnd((size_t)(Mq > Tk ? Mq : Tk) * ldq, 1), *ref = calloc((size_t)Mq * d, 4);
        float *scratch = malloc(sizeof(float) * (size_t)Mq * Tk);
        float *q = qkv + (size_t)(Tk - (Mq < Tk ? Mq : Tk)) * 0;
        float scale = 1.0f / sqrtf((float)dh);
        for (int h = 0; h < H; h++)
            k_attention_ref(ref + h * dh, d, q + h * dh, ldq, qkv + d + h * dh, ldq, qkv + 2 * d + h * dh, ldq,
                            Mq, Tk, dh, scale, causal, scratch);
        float *dq = up(qkv, sizeof(float) * (size_t)(Mq > Tk ? Mq : Tk) * ldq);
        float *dout = cu_alloc(g, sizeof(float) * (size_t)Mq * d, "o");
        cu_attention(g, dout, d, dq, ldq, dq + d, ldq, dq + 2 * d, ldq, Mq, Tk, H, dh, scale, causal);
        float *got = down(dout, (size_t)Mq * d);
        char what[64];
        snprintf(what, sizeof what, "attention %dx%d h%d dh%d causal %d", Mq, Tk, H, dh, causal);
        near(what, got, ref, (size_t)Mq * d, 1e-5);
        cu_free(g, dq), cu_free(g, dout);
        free(qkv), free(ref), free(scratch), free(got);
    }
    printf("attention (encoder, causal prompts; tiled: 16 rows or more, 12000 keys): as k_attention_ref\n");
}

/* Attention within packed segments (the text encoders' packed inputs), with
 * and without T5's Toeplitz bias, against op_attention_seg on the host; a
 * row of no segment is left alone; a device-to-device copy. */
static void segments(ed_pool *pool) {
    int H = 4, dh = 32, d = H * dh, ldq = 3 * d, rows = 40, n_seg = 3;
    int start[3] = {0, 7, 10}, len[3] = {7, 1, 29};   /* row 39: no segment's */
    int tmax = 29, blen = 2 * tmax - 1;
    float *qkv = rnd((size_t)rows * ldq, 1), *bias = rnd((size_t)H * blen, 2);
    float *scratch = malloc(sizeof(float) * (size_t)OP_ATTN_ROWS * tmax);
    float *dq = up(qkv, sizeof(float) * (size_t)rows * ldq), *db = up(bias, sizeof(float) * (size_t)H * blen);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        float *ref = rnd((size_t)rows * d, 1), *dout = up(ref, sizeof(float) * (size_t)rows * d);
        op_attention_seg(pool, ref, d, qkv, ldq, qkv + d, ldq, qkv + 2 * d, ldq, n_seg, start, len, H,
                         dh, 0.125f, with_bias ? bias : NULL, (size_t)blen, tmax - 1, scratch,
                         (size_t)OP_ATTN_ROWS * tmax);
        int *ds = up(start, sizeof start), *dl = up(len, sizeof len);
        cu_attention_seg(g, dout, d, dq, ldq, dq + d, ldq, dq + 2 * d, ldq, rows, n_seg, ds, dl, tmax, H,
                         dh, 0.125f, with_bias ? db : NULL, (size_t)blen, tmax - 1);
        float *got = down(dout, (size_t)rows * d);
        near(with_bias ? "attention within segments, T5's bias" : "attention within segments", got,
             ref, (size_t)rows * d, 1e-5);
        CHECK(memcmp(got + 39 * d, ref + 39 * d, sizeof(float) * d) == 0);   /* untouched */
        float *dcopy = cu_alloc(g, sizeof(float) * (size_t)rows * d, "copy");
        cu_copy(g, dcopy, dout, sizeof(float) * (size_t)rows * d);
        float *again = down(dcopy, (size_t)rows * d);
        CHECK(memcmp(again, got, sizeof(float) * (size_t)rows * d) == 0);
        cu_free(g, dout), cu_free(g, ds), cu_free(g, dl), cu_free(g, dcopy);
        free(ref), free(got), free(again);
    }
    cu_free(g, dq), cu_free(g, db);
    free(qkv), free(bias), free(scratch);
    printf("attention within packed segments (with T5's bias), device copies: as op_attention_seg\n");
}

/* The decoder's self-attention over slots through an index table, after
 * appending this step's K/V: beams share their history. */
static void self_attention(ed_pool *pool) {
    int S = 4, n_ctx = 448, H = 6, dh = 64, d = H * dh, R = 4;
    size_t slot_stride = (size_t)n_ctx * d, cn = (size_t)S * slot_stride;
    float *kc = rnd(cn, 1), *vc = rnd(cn, 1);
    float *qkv = rnd((size_t)R * 3 * d, 1);
    int pos[4] = {0, 5, 5, 447}, slot[4] = {0, 1, 2, 3}, tab_ld = n_ctx;
    int *tab = malloc(sizeof(int) * (size_t)S * tab_ld);
    for (int s = 0; s < S; s++)
        for (int t = 0; t < tab_ld; t++) tab[s * tab_ld + t] = (t < 3 && s == 2) ? 1 : s;   /* beam 2 forked from 1 */
    float *dkc = up(kc, cn * 4), *dvc = up(vc, cn * 4), *dqkv = up(qkv, (size_t)R * 3 * d * 4);
    int *dpos = up(pos, sizeof pos), *dslot = up(slot, sizeof slot), *dtab = up(tab, sizeof(int) * (size_t)S * tab_ld);
    for (int r = 0; r < R; r++) {   /* the host's append */
        memcpy(kc + slot[r] * slot_stride + (size_t)pos[r] * d, qkv + (size_t)r * 3 * d + d, (size_t)d * 4);
        memcpy(vc + slot[r] * slot_stride + (size_t)pos[r] * d, qkv + (size_t)r * 3 * d + 2 * d, (size_t)d * 4);
    }
    cu_kv_self_put(g, dkc, dvc, slot_stride, dqkv, 3 * d, d, 2 * d, R, dpos, dslot, d);
    float *gk = down(dkc, cn);
    near("self cache append", gk, kc, cn, 0);
    free(gk);
    float *bias = rnd((size_t)H * 2 * n_ctx, 2);
    float *db = up(bias, (size_t)H * 2 * n_ctx * 4);
    size_t sstride = (size_t)OP_ATTN_ROWS * n_ctx;
    float *scratch = malloc(sizeof(float) * sstride), *ref = malloc(sizeof(float) * (size_t)R * d);
    float *dout = cu_alloc(g, (size_t)R * d * 4, "o");
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        op_attention_tab(pool, ref, d, qkv, 3 * d, kc, vc, slot_stride, d, R, pos, tab, slot, tab_ld, H, dh,
                         0.125f, with_bias ? bias : NULL, 2 * n_ctx, n_ctx, scratch, sstride);
        cu_attention_tab(g, dout, d, dqkv, 3 * d, dkc, dvc, slot_stride, d, R, dpos, dtab, dslot, tab_ld, H, dh,
                         0.125f, with_bias ? db : NULL, 2 * n_ctx, n_ctx);
        float *got = down(dout, (size_t)R * d);
        near(with_bias ? "self-attention, bias" : "self-attention", got, ref, (size_t)R * d, 1e-5);
        free(got);
    }
    cu_free(g, dkc), cu_free(g, dvc), cu_free(g, dqkv), cu_free(g, dpos), cu_free(g, dslot), cu_free(g, dtab);
    cu_free(g, db), cu_free(g, dout);
    free(kc), free(vc), free(qkv), free(tab), free(bias), free(scratch), free(ref);
    printf("self cache append, self-attention through the index table: as op_attention_tab\n");
}

/* Two inputs' cross caches (different valid lengths), filled from one
 * [rows, L*2d] product, read by rows of either: each type. */
static void cross_attention(ed_pool *pool) {
    int L = 2, H = 6, dh = 64, d = H * dh, T = 1500, R = 5;
    size_t ld = (size_t)L * 2 * d;
    /* the second cache as a text model's: its own length (frames), not the first's */
    int valid[2] = {1500, 777}, rc[5] = {0, 0, 1, 1, 1}, nctx[2] = {T, 800};
    float *src[2] = {rnd((size_t)T * ld, 1), rnd((size_t)T * ld, 1)};
    float *q = rnd((size_t)R * d, 1), *ref = malloc(sizeof(float) * (size_t)R * d);
    float *dq = up(q, (size_t)R * d * 4), *dout = cu_alloc(g, (size_t)R * d * 4, "o");
    int *drc = up(rc, sizeof rc), *dvalid = up(valid, sizeof valid), *dctx = up(nctx, sizeof nctx);
    size_t sstride = (size_t)OP_ATTN_ROWS * T;
    float *scratch = malloc(sizeof(float) * sstride);
    for (int t = KV_F32; t <= KV_BF16; t++) {
        kv_cross c[2];
        void *dc[2];
        float *dsrc[2];
        for (int i = 0; i < 2; i++) {
            CHECK_EQ_INT(kv_cross_init(&c[i], L, H, nctx[i], dh, (kv_dtype)t), ENCDEC_OK);
            for (int it = 0; it < L * 2 * H; it++)
                kv_cross_put(&c[i], it / (2 * H), (it / H) % 2, it % H, src[i] + (size_t)it * dh, ld, 0, valid[i]);
            c[i].n_valid = valid[i];
            dc[i] = cu_alloc(g, kv_cross_bytes(&c[i]), "cross cache");
            dsrc[i] = up(src[i], (size_t)T * ld * 4);
            cu_memset0(g, dc[i], kv_cross_bytes(&c[i]));
            /* in two blocks of frames, as the model fills it */
            cu_cross_put(g, dc[i], (cu_type)t, L, H, nctx[i], dh, dsrc[i], ld, 0, 100);
            cu_cross_put(g, dc[i], (cu_type)t, L, H, nctx[i], dh, dsrc[i] + 100 * ld, ld, 100, valid[i] - 100);
        }
        size_t bytes = kv_cross_bytes(&c[1]);
        unsigned char *back = malloc(bytes);
        CHECK_EQ_INT(cu_download(g, back, dc[1], bytes), ENCDEC_OK);
        int same = 1;   /* frames past n_valid are zeros on the device, unwritten on the host */
        size_t es = kv_dtype_size((kv_dtype)t);
        for (int blk = 0; blk < L * 2 * H; blk++)
            same &= !memcmp(back + (size_t)blk * nctx[1] * dh * es, (unsigned char *)c[1].kv + (size_t)blk * nctx[1] * dh * es,
                            (size_t)valid[1] * dh * es);
        CHECK(same);
        free(back);
        void **dcs = up(dc, sizeof dc), **dcs1 = up(&dc[1], sizeof dc[1]);   /* (the second alone) */
        for (int l = 0; l < L; l++) {
            op_attention_cross(pool, ref, d, q, d, c, rc, l, R, 0.125f, scratch, sstride);
            cu_attention_cross(g, dout, d, dq, d, (const void *const *)dcs, dvalid, (cu_type)t, drc, l, H, dctx, dh,
                               1500, R, 0.125f);
            float *got = down(dout, (size_t)R * d);
            char what[64];
            snprintf(what, sizeof what, "cross attention type %d layer %d", t, l);
            near(what, got, ref, (size_t)R * d, 1e-5);
            /* the second input's rows alone (its 777 frames the longest: fewer
             * parts of frames): bit for bit what they were beside the first's */
            cu_attention_cross(g, dout, d, dq + 2 * d, d, (const void *const *)dcs1, dvalid + 1, (cu_type)t, NULL,
                               l, H, dctx + 1, dh, 777, R - 2, 0.125f);
            float *alone = down(dout, (size_t)(R - 2) * d);
            CHECK(!memcmp(alone, got + 2 * d, sizeof(float) * (size_t)(R - 2) * d));
            free(alone);
            free(got);
        }
        cu_free(g, dcs), cu_free(g, dcs1);
        for (int i = 0; i < 2; i++) kv_cross_free(&c[i]), cu_free(g, dc[i]), cu_free(g, dsrc[i]);
    }
    cu_free(g, dq), cu_free(g, dout), cu_free(g, drc), cu_free(g, dvalid), cu_free(g, dctx);
    free(src[0]), free(src[1]), free(q), free(ref), free(scratch);
    printf("cross cache layout (f32, f16, bf16), cross attention over two inputs of different lengths: as "
           "op_attention_cross, and a row's output the same without the other input's rows\n");
}

/* Page-locked host memory (where the engine's step logits come down):
 * copies into it and out of it are exact, at an offset too; the petabyte
 * is a named error. */
static void host_memory(void) {
    size_t n = 300000;
    float *x = rnd(n, 1.0f), *h = cu_host_alloc(g, n * sizeof *h, "test logits");
    float *d = up(x, n * sizeof *x);
    CHECK(h != NULL && d != NULL);
    if (h && d) {
        CHECK_EQ_INT(cu_download(g, h, d, n * sizeof *h), ENCDEC_OK);
        CHECK(memcmp(h, x, n * sizeof *h) == 0);
        memset(h, 0, n * sizeof *h);
        CHECK_EQ_INT(cu_download(g, h + 1001, d + 77, 5000 * sizeof *h), ENCDEC_OK);
        CHECK(memcmp(h + 1001, x + 77, 5000 * sizeof *h) == 0 && h[1000] == 0.0f && h[6001] == 0.0f);
        CHECK_EQ_INT(cu_upload(g, d, h + 1001, 5000 * sizeof *h), ENCDEC_OK);
        float *back = down(d, 5000);
        CHECK(memcmp(back, x + 77, 5000 * sizeof *h) == 0);
        free(back);
    }
    if (!getenv("ENCDEC_TEST_SANITIZER")) {
        CHECK(cu_host_alloc(g, (size_t)1 << 50, "a petabyte of logits") == NULL);
        CHECK(strstr(encdec_last_error(), "a petabyte of logits") != NULL);
    }
    cu_host_free(g, h);
    cu_free(g, d);
    free(x);
    printf("page-locked host memory: copies both ways exact, a petabyte named\n");
}

static void errors(void) {
    cu_dev *none = NULL;
    CHECK_STATUS(cu_dev_open(4096, &none), ENCDEC_ERR_ARG, "CUDA device 4096");
    CHECK(none == NULL);
    /* more keys than the plain kernel holds: a named error at the next sync, then the device goes on */
    float *o = cu_alloc(g, 4 * 64, "o"), *q = cu_alloc(g, 4 * 64, "q");
    cu_attention(g, o, 64, q, 64, q, 64, q, 64, 1, 100000, 1, 64, 1.0f, 0);
    CHECK_STATUS(cu_sync(g), ENCDEC_ERR_DEVICE, "too many keys");
    CHECK_EQ_INT(cu_sync(g), ENCDEC_OK);
    if (!getenv("ENCDEC_TEST_SANITIZER")) {   /* compute-sanitizer reports the refusal itself */
        CHECK(cu_alloc(g, (size_t)1 << 50, "a petabyte") == NULL);
        CHECK(strstr(encdec_last_error(), "a petabyte") != NULL);
    }
    cu_free(g, o), cu_free(g, q);
    printf("errors: no such device, a launch that cannot run, an allocation too large: named\n");
}

/* Runs fn(arg) in a child whose standard error comes back: 1 when the
 * child died of signal sig having said what (the emulation's stops). */
static int dies_saying(void (*fn)(void *), void *arg, int sig, const char *what) {
    int fds[2];
    if (pipe(fds) != 0) return 0;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    char msg[512] = {0};
    ssize_t got = read(fds[0], msg, sizeof msg - 1);
    close(fds[0]);
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    int ok = pid > 0 && got > 0 && WIFSIGNALED(status) && WTERMSIG(status) == sig &&
             strstr(msg, what) != NULL;
    if (!ok) fprintf(stderr, "expected signal %d saying \"%s\"; the child said: %s\n", sig, what, msg);
    return ok;
}

static void read_device(void *p) {
    volatile float v = ((float *)p)[3];
    (void)v;
}

static void *read_device_thread(void *p) {
    read_device(p);
    return NULL;
}

/* The same read from another host thread (the engine's own pool, say). */
static void read_device_elsewhere(void *p) {
    pthread_t t;
    if (pthread_create(&t, NULL, read_device_thread, p) == 0) pthread_join(t, NULL);
}

static void free_malloced(void *unused) {
    (void)unused;
    cu_host_free(g, malloc(64));
}

/* The CPU emulation's own guarantees (src/cuda/emu/, a test build): host
 * memory given to a kernel, a kernel's extent past its buffer, and the host
 * touching device memory each stop with the buffer named. */
static void emulation(void) {
    float host[17] = {0}, *dy = cu_alloc(g, 16 * sizeof(float), "probe");
    float *dx = up(host, 16 * sizeof(float));
    cu_add(g, dy, host, 16);
    CHECK_STATUS(cu_sync(g), ENCDEC_ERR_DEVICE, "is not device memory");
    cu_add(g, dy, dx, 17);
    CHECK_STATUS(cu_sync(g), ENCDEC_ERR_DEVICE, "of device memory 'probe' (64 bytes) run past its end");
    cu_add(g, dy, dx, 16);
    CHECK_EQ_INT(cu_sync(g), ENCDEC_OK);
    /* a device buffer read as host memory */
    CHECK(dies_saying(read_device, dy, SIGSEGV, "the host touched device memory 'probe'"));
    CHECK(dies_saying(read_device_elsewhere, dy, SIGSEGV, "the host touched device memory 'probe'"));
    cu_free(g, dy), cu_free(g, dx);
    /* host memory that is not page-locked handed to cu_host_free (on a GPU:
     * cudaFreeHost's error, or worse) */
    CHECK(dies_saying(free_malloced, NULL, SIGABRT, "not page-locked host memory"));
    printf("emulation: a host pointer to a kernel, a kernel past its buffer, the host reading "
           "device memory, malloc's memory freed as page-locked: each stopped, named\n");
}

/* argv[1] "emulation": the emulation's own checks alone. */
int main(int argc, char **argv) {
    char why[200];
    if (cu_device_count(why, sizeof why) == 0) {
        char msg[320];
        snprintf(msg, sizeof msg, "no CUDA device here (%s): scripts/test-cuda.sh runs this on a GPU", why);
        return check_skip(msg);
    }
    CHECK_EQ_INT(cu_dev_open(0, &g), ENCDEC_OK);
    if (!g) return check_done();
    printf("device: %s\n", cu_dev_name(g));
    if (argc > 1 && !strcmp(argv[1], "emulation")) {
        CHECK(strstr(cu_dev_name(g), "emulation") != NULL);
        emulation();
        cu_dev_close(g);
        return check_done();
    }
    ed_pool *pool = NULL;
    CHECK_EQ_INT(ed_pool_new(&pool, 1), ENCDEC_OK);
    matmuls();
    norms();
    elementwise();
    rows_and_tables();
    attention();
    self_attention(pool);
    cross_attention(pool);
    segments(pool);
    host_memory();
    errors();
    if (strstr(cu_dev_name(g), "emulation")) emulation();
    ed_pool_free(pool);
    cu_dev_close(g);
    return check_done();
}
