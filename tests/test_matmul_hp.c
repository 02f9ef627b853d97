/* test_matmul_hp.c - panel-major half-precision weights (kern/matmul_hp.h):
 * packing and row lookup (exact), and k_matmul_hp on every instruction set
 * this CPU has against its scalar twin k_matmul_hp_ref (on the packed
 * layout) and against k_matmul_h_ref (kern.h, on the row-major original).
 *
 * Tolerance per output: 1e-5 * (sum_k |x_k| |w_k| + |b|) (f32 sums of K
 * products, K <= 1536, against double sums: worst case about K * 2^-24 of
 * that, typically sqrt(K) * 2^-24).
 *
 * Shapes: M in {1, 2, 3, 5, 8, 9, 16, 17, 40}, N in {1, 15, 16, 17, 100,
 * 51866 (M <= 5)}, K in {1, 3, 64, 384, 1536}, both half types; column
 * slices (all, unaligned n0, one column, aligned 16s), ldy > N, ldx > K, b
 * NULL or not; columns outside the slice keep a sentinel. Negative control:
 * a corrupted packed half must make the comparison fail. */
#include "check.h"

#include "kern/kern.h"
#include "kern/matmul_hp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned long g_seed = 777;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000000) / 1000000.0f - 1.0f;
}
static uint16_t hrand(int bf16) {   /* any finite half (incl. subnormals), mostly in [-2, 2] */
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    uint16_t h = (uint16_t)(g_seed >> 40);
    if (bf16) {   /* exponent in [2^-20, 2^1] */
        int e = 107 + (int)((g_seed >> 24) % 21);
        return (uint16_t)((h & 0x807f) | (e << 7));
    }
    int e = (int)((g_seed >> 24) % 17);   /* 0 (subnormal) .. 16 (2^1) */
    return (uint16_t)((h & 0x83ff) | (e << 10));
}

static void *amalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
    if (!p) abort();
    return p;
}

#define SENT (-12345.0f)

static const char *isa_name(int isa) { return k_isa_name(isa); }
static int g_seen[3];   /* versions run */

/* One product: every isa vs k_matmul_hp_ref and k_matmul_h_ref. Returns the
 * number of bad outputs (also counted as failures unless expect_bad). */
static long run_case(const uint16_t *w, const uint16_t *wp, int bf16, int M, int N, int K, int n0,
                     int nn, int ldx, int ldy, int with_b, int expect_bad) {
    float *x = malloc(sizeof(float) * (size_t)M * ldx);
    float *b = with_b ? malloc(sizeof(float) * (size_t)N) : NULL;
    float *y = malloc(sizeof(float) * (size_t)M * ldy), *yr = malloc(sizeof(float) * (size_t)M * ldy);
    float *yh = malloc(sizeof(float) * (size_t)M * N);
    double *scale = malloc(sizeof(double) * (size_t)M * N);
    float *wf = malloc(sizeof(float) * (size_t)K);
    for (size_t i = 0; i < (size_t)M * ldx; i++) x[i] = frand();
    if (b) for (int n = 0; n < N; n++) b[n] = frand();
    /* sum |x||w| + |b| per output, from the row-major original */
    for (int n = n0; n < n0 + nn; n++) {
        k_h_to_f32(wf, w + (size_t)n * K, (size_t)K, bf16);
        for (int i = 0; i < M; i++) {
            double s = b ? fabs(b[n]) : 0.0;
            for (int k = 0; k < K; k++) s += fabs((double)x[(size_t)i * ldx + k] * wf[k]);
            scale[(size_t)i * N + n] = s;
        }
    }
    k_matmul_h_ref(yh, N, x, ldx, w, K, bf16, b, M, N, K);
    for (size_t i = 0; i < (size_t)M * ldy; i++) yr[i] = SENT;
    k_matmul_hp_ref(yr, ldy, x, ldx, wp, bf16, b, M, n0, nn, N, K);
    long bad_total = 0;
    int last = -1;
    for (int isa = 2; isa >= 0; isa--) {
        for (size_t i = 0; i < (size_t)M * ldy; i++) y[i] = SENT;
        int used = k_matmul_hp_isa(isa, y, ldy, x, ldx, wp, bf16, b, M, n0, nn, N, K);
        CHECK(used >= 0 && used <= isa);
        if (used == last || used < 0) continue;   /* this isa is not on this CPU */
        last = used;
        g_seen[used] = 1;
        long bad = 0, bad_ref = 0, outside = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < ldy; j++) {
                size_t o = (size_t)i * ldy + j;
                if (j < n0 || j >= n0 + nn) {
                    outside += y[o] != SENT || yr[o] != SENT;
                    continue;
                }
                double tol = 1e-5 * scale[(size_t)i * N + j] + 1e-30;
                int b1 = !(fabs((double)y[o] - yr[o]) <= tol);
                int b2 = !(fabs((double)y[o] - yh[(size_t)i * N + j]) <= tol);
                bad += b1 || b2, bad_ref += !(fabs((double)yr[o] - yh[(size_t)i * N + j]) <= tol);
                if ((b1 || b2) && !expect_bad && bad == 1)
                    fprintf(stderr, "  %s %s M=%d N=%d K=%d n0=%d nn=%d: y[%d][%d] = %.9g, hp_ref %.9g, h_ref %.9g (tol %g)\n",
                            isa_name(used), bf16 ? "bf16" : "f16", M, N, K, n0, nn, i, j, y[o], yr[o],
                            yh[(size_t)i * N + j], tol);
            }
        if (!expect_bad) {
            CHECK_EQ_INT(bad, 0);
            CHECK_EQ_INT(bad_ref, 0);
            CHECK_EQ_INT(outside, 0);
        }
        bad_total += bad;
    }
    free(x), free(b), free(y), free(yr), free(yh), free(scale), free(wf);
    return bad_total;
}

static uint16_t *make_w(int N, int K, int bf16) {
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)N * K);
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = hrand(bf16);
    return w;
}

/* pack then k_hp_row: every row exactly; padding zero; other types rejected. */
static void test_pack(void) {
    int shapes[][2] = {{1, 1}, {15, 3}, {16, 1}, {17, 64}, {37, 70}, {100, 384}, {33, 1536}};
    for (int bf16 = 0; bf16 < 2; bf16++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int N = shapes[s][0], K = shapes[s][1];
            uint16_t *w = make_w(N, K, bf16);
            size_t bytes = k_hp_bytes(N, K);
            CHECK_EQ_INT(bytes, (size_t)(N + 15) / 16 * 16 * (size_t)((K + 31) / 32 * 32) * 2);
            uint16_t *wp = amalloc(bytes);
            memset(wp, 0xab, bytes);
            CHECK_EQ_INT(k_hp_pack(wp, (k_w){.p = w, .t = bf16 ? K_BF16 : K_F16}, N, K), 0);
            float *row = malloc(sizeof(float) * (size_t)K), *want = malloc(sizeof(float) * (size_t)K);
            long diff = 0, pad = 0;
            for (int n = 0; n < N; n++) {
                k_hp_row(row, wp, bf16, n, N, K);
                k_h_to_f32(want, w + (size_t)n * K, (size_t)K, bf16);
                diff += memcmp(row, want, sizeof(float) * (size_t)K) != 0;
                for (int k = 0; k < K; k++) diff += wp[k_hp_index(bf16, n, k, K)] != w[(size_t)n * K + k];
            }
            for (int n = 0; n < (N + 15) / 16 * 16; n++)
                for (int k = n < N ? K : 0; k < (K + 31) / 32 * 32; k++) pad += wp[k_hp_index(bf16, n, k, K)] != 0;
            CHECK_EQ_INT(diff, 0);
            CHECK_EQ_INT(pad, 0);
            free(w), free(wp), free(row), free(want);
        }
    uint16_t dummy[16 * 4];
    float f[64] = {0};
    CHECK_EQ_INT(k_hp_pack(dummy, (k_w){.p = f, .t = K_F32}, 4, 4), -1);
    CHECK_EQ_INT(k_hp_pack(dummy, (k_w){.p = f, .t = K_Q8}, 4, 4), -1);
    CHECK_EQ_INT(k_hp_pack(NULL, (k_w){.p = f, .t = K_F16}, 4, 4), -1);
    CHECK_EQ_INT(k_hp_bytes(0, 4), 0);
    CHECK_EQ_INT(k_hp_bytes(4, 0), 0);
}

static void test_products(void) {
#ifdef ED_EMULATED   /* qemu-user: fewer shapes, the same edges (tiles, panels, k-blocks) */
    const int Ms[] = {1, 2, 3, 7, 17};
    const int Ns[] = {1, 17, 100};
    const int Ks[] = {3, 64, 1536};
#else
    const int Ms[] = {1, 2, 3, 5, 8, 9, 16, 17, 40};
    const int Ns[] = {1, 15, 16, 17, 100, 51866};
    const int Ks[] = {1, 3, 64, 384, 1536};
#endif
    int cases = 0;
    for (size_t in = 0; in < sizeof Ns / sizeof *Ns; in++)
        for (size_t ik = 0; ik < sizeof Ks / sizeof *Ks; ik++) {
            int N = Ns[in], K = Ks[ik];
            if (N == 51866 && K > 384) continue;   /* the vocabulary matrix: Whisper's K = 384 */
            for (int bf16 = 0; bf16 < 2; bf16++) {
                uint16_t *w = make_w(N, K, bf16), *wp = amalloc(k_hp_bytes(N, K));
                CHECK_EQ_INT(k_hp_pack(wp, (k_w){.p = w, .t = bf16 ? K_BF16 : K_F16}, N, K), 0);
                for (size_t im = 0; im < sizeof Ms / sizeof *Ms; im++) {
                    int M = Ms[im];
                    if (N == 51866 && M > 5) continue;
                    if (N == 51866 && M != 1 && M != 5 && (bf16 || K != 384)) continue;   /* time */
                    if (K == 1536 && N == 100 && M > 9 && bf16) continue;
                    /* slices: all; unaligned start and end; one column; aligned 16s */
                    int sl[4][2] = {{0, N}, {N > 3 ? 3 : 0, N > 8 ? N - 8 : N}, {N - 1, 1},
                                    {N >= 32 ? 16 : 0, N >= 32 ? (N - 16) / 16 * 16 : N}};
                    for (int s = 0; s < 4; s++) {
                        if (N == 51866 && s != 0 && s != 1) continue;
                        int v = (int)(cases % 4);
                        int ldx = K + (v & 1 ? 5 : 0), ldy = N + (v & 2 ? 7 : 0), with_b = (cases % 3) != 0;
                        run_case(w, wp, bf16, M, N, K, sl[s][0], sl[s][1], ldx, ldy, with_b, 0);
                        cases++;
                    }
                }
                free(w), free(wp);
            }
        }
    printf("%d product cases\n", cases);
}

/* A corrupted packed half must be caught (the test can fail), and bad
 * arguments rejected. */
static void test_negative(void) {
    int N = 40, K = 64;
    for (int bf16 = 0; bf16 < 2; bf16++) {
        uint16_t *w = make_w(N, K, bf16), *wp = amalloc(k_hp_bytes(N, K));
        k_hp_pack(wp, (k_w){.p = w, .t = bf16 ? K_BF16 : K_F16}, N, K);
        CHECK_EQ_INT(run_case(w, wp, bf16, 3, N, K, 0, N, K, N, 1, 0), 0);
        wp[k_hp_index(bf16, 17, 5, K)] ^= bf16 ? 0x4000 : 0x3c00;   /* w[17][5]: exponent flip */
        /* compare against the row-major original (the packed ref shares the corruption) */
        CHECK(run_case(w, wp, bf16, 3, N, K, 0, N, K, N, 1, 1) >= 3);
        free(w), free(wp);
    }
    uint16_t wp[16];
    float y[4], x[4];
    CHECK_EQ_INT(k_matmul_hp(y, 4, x, 1, wp, 0, NULL, 1, -1, 1, 1, 1), -1);
    CHECK_EQ_INT(k_matmul_hp(y, 4, x, 1, wp, 0, NULL, 1, 0, 2, 1, 1), -1);
    CHECK_EQ_INT(k_matmul_hp(y, 4, x, 1, wp, 0, NULL, 1, 0, 1, 1, 0), -1);
    CHECK_EQ_INT(k_matmul_hp(y, 4, x, 1, NULL, 0, NULL, 1, 0, 1, 1, 1), -1);
    CHECK(k_matmul_hp(y, 4, x, 1, wp, 0, NULL, 0, 0, 1, 1, 1) >= 0);   /* M = 0: nothing to do */
}

/* Batch invariance: a row's outputs are bitwise the same whatever rows come
 * with it (M = 1 .. 40, any position in the batch), on every ISA path: the
 * property behind "a batch decodes each sequence as it would alone" and
 * behind cached and uncached decoding agreeing. K past one k-block (512),
 * odd K, a column slice. */
static void test_batch_invariance(void) {
#ifdef ED_EMULATED
    const int Ks[] = {64, 1024};
    const int Ms[] = {2, 7, 17};
#else
    const int Ks[] = {64, 513, 1024, 1536};
    const int Ms[] = {2, 5, 8, 9, 16, 17, 40};
#endif
    int N = 100, bad = 0;
    for (int isa = 0; isa <= 2; isa++)
        for (int bf16 = 0; bf16 < 2; bf16++)
            for (size_t ik = 0; ik < sizeof Ks / sizeof *Ks; ik++) {
                int K = Ks[ik];
                uint16_t *w = make_w(N, K, bf16), *wp = amalloc(k_hp_bytes(N, K));
                k_hp_pack(wp, (k_w){.p = w, .t = bf16 ? K_BF16 : K_F16}, N, K);
                float *x = malloc(sizeof(float) * 40 * (size_t)K), *b = malloc(sizeof(float) * (size_t)N);
                float *y1 = malloc(sizeof(float) * 40 * (size_t)N), *yM = malloc(sizeof(float) * 40 * (size_t)N);
                for (size_t i = 0; i < 40 * (size_t)K; i++) x[i] = frand();
                for (int n = 0; n < N; n++) b[n] = frand();
                for (int r = 0; r < 40; r++)
                    k_matmul_hp_isa(isa, y1 + (size_t)r * N, N, x + (size_t)r * K, K, wp, bf16, b, 1, 3, N - 3, N, K);
                for (size_t im = 0; im < sizeof Ms / sizeof *Ms; im++) {
                    int M = Ms[im];
                    for (int r0 = 0; r0 + M <= 40; r0 += 40 - M > 0 ? 40 - M : 1) {   /* first and last rows */
                        k_matmul_hp_isa(isa, yM, N, x + (size_t)r0 * K, K, wp, bf16, b, M, 3, N - 3, N, K);
                        for (int r = 0; r < M; r++)
                            bad += memcmp(yM + (size_t)r * N + 3, y1 + (size_t)(r0 + r) * N + 3,
                                          sizeof(float) * (size_t)(N - 3)) != 0;
                    }
                }
                free(w), free(wp), free(x), free(b), free(y1), free(yM);
            }
    CHECK_EQ_INT(bad, 0);
}

/* k_matmul_hp_xs (x copied k-major once a call, as core/ops.c runs it):
 * bitwise k_matmul_hp's on every ISA path, with rows over one tile and
 * columns over one block (the copy's case: 40 rows x K 1536 is the AVX2
 * drive's 2-panel blocks, 17 rows x 2000 columns the AVX-512 one's), odd K
 * past a k-block, a column slice; and its scratch size. */
static void test_xs(void) {
    static const int cases[][3] = {{40, 1000, 1536}, {13, 300, 700}, {17, 2000, 384}};   /* M, N, K */
    int bad = 0, runs = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int M = cases[c][0], N = cases[c][1], K = cases[c][2];
        for (int bf16 = 0; bf16 < 2; bf16++) {
            uint16_t *w = make_w(N, K, bf16), *wp = amalloc(k_hp_bytes(N, K));
            k_hp_pack(wp, (k_w){.p = w, .t = bf16 ? K_BF16 : K_F16}, N, K);
            float *x = malloc(sizeof(float) * (size_t)M * K), *b = malloc(sizeof(float) * (size_t)N);
            float *y = malloc(sizeof(float) * (size_t)M * N), *yx = malloc(sizeof(float) * (size_t)M * N);
            float *xs = malloc(sizeof(float) * k_hp_xs_floats(M, K));
            for (size_t i = 0; i < (size_t)M * K; i++) x[i] = frand();
            for (int n = 0; n < N; n++) b[n] = frand();
            for (int isa = 0; isa <= 2; isa++) {
                for (size_t i = 0; i < (size_t)M * N; i++) y[i] = yx[i] = SENT;
                int u1 = k_matmul_hp_isa(isa, y, N, x, K, wp, bf16, b, M, 3, N - 3, N, K);
                int u2 = k_matmul_hp_xs_isa(isa, yx, N, x, K, wp, bf16, b, M, 3, N - 3, N, K, xs);
                CHECK_EQ_INT(u2, u1);
                bad += memcmp(y, yx, sizeof(float) * (size_t)M * N) != 0;
                runs++;
            }
            free(w), free(wp), free(x), free(b), free(y), free(yx), free(xs);
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(runs == 18);
    CHECK(k_hp_xs_floats(1, 384) == 0 && k_hp_xs_floats(40, 1536) == 40 * 1536);
}

typedef int (*lowp_fn)(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                       const float *b, int M, int n0, int nn, int N, int K);

/* A path of the bf16 mode's product (x rounded to bf16: AMX, ARM's BFDOT):
 * against its scalar twin (x rounded to bf16, double sums; 1e-5 of
 * sum |x||w|), against the plain row-major product (to the bf16 rounding of
 * x), bitwise batch invariance, K past the blocks held at once (AMX 2048,
 * BFDOT 1024) and not a multiple of 32 (odd too), column slices. `ret`: what
 * the path returns. */
static void test_lowp(const char *name, lowp_fn fn, int has, int ret) {
    if (!has) {
        printf("%s: not on this machine, skipped\n", name);
        return;
    }
    const int Ks[] = {40, 64, 513, 1024, 1025, 2100, 4500};
    const int Ms[] = {1, 3, 8, 16, 17, 40};
    int N = 100, bad = 0, inv = 0;
    double worst = 0;
    for (size_t ik = 0; ik < sizeof Ks / sizeof *Ks; ik++) {
        int K = Ks[ik];
        uint16_t *w = make_w(N, K, 1), *wp = amalloc(k_hp_bytes(N, K));
        CHECK_EQ_INT(k_hp_pack(wp, (k_w){.p = w, .t = K_BF16}, N, K), 0);
        float *x = malloc(sizeof(float) * 40 * (size_t)K), *b = malloc(sizeof(float) * (size_t)N);
        float *y1 = malloc(sizeof(float) * 40 * (size_t)N), *y = malloc(sizeof(float) * 40 * (size_t)N);
        float *yr = malloc(sizeof(float) * 40 * (size_t)N), *wf = malloc(sizeof(float) * (size_t)K);
        for (size_t i = 0; i < 40 * (size_t)K; i++) x[i] = frand();
        for (int n = 0; n < N; n++) b[n] = frand();
        for (int r = 0; r < 40; r++)
            CHECK_EQ_INT(fn(y1 + (size_t)r * N, N, x + (size_t)r * K, K, wp, b, 1, 0, N, N, K), ret);
        k_matmul_hp_amx_ref(yr, N, x, K, wp, b, 40, 0, N, N, K);
        for (int n = 0; n < N; n++) {
            k_h_to_f32(wf, w + (size_t)n * K, (size_t)K, 1);
            for (int r = 0; r < 40; r++) {
                double sc = fabs(b[n]), plain = b[n];
                for (int k = 0; k < K; k++) {
                    sc += fabs((double)x[(size_t)r * K + k] * wf[k]);
                    plain += (double)x[(size_t)r * K + k] * wf[k];
                }
                double got = y1[(size_t)r * N + n];
                bad += !(fabs(got - yr[(size_t)r * N + n]) <= 1e-5 * sc);
                /* x rounded to bf16: 2^-9 relative per term at most */
                bad += !(fabs(got - plain) <= 2.0 / 512 * sc);
                if (fabs(got - plain) / sc > worst) worst = fabs(got - plain) / sc;
            }
        }
        for (size_t im = 0; im < sizeof Ms / sizeof *Ms; im++) {
            int M = Ms[im], n0 = im % 2 ? 5 : 0, nn = im % 2 ? N - 5 - 11 : N;
            for (size_t i = 0; i < (size_t)M * N; i++) y[i] = -7.0f;
            CHECK_EQ_INT(fn(y, N, x + (size_t)(40 - M) * K, K, wp, b, M, n0, nn, N, K), ret);
            for (int r = 0; r < M; r++)
                for (int n = 0; n < N; n++) {
                    float want = n >= n0 && n < n0 + nn ? y1[(size_t)(40 - M + r) * N + n] : -7.0f;
                    inv += memcmp(&y[(size_t)r * N + n], &want, sizeof want) != 0;
                }
        }
        free(w), free(wp), free(x), free(b), free(y1), free(y), free(yr), free(wf);
    }
    printf("%s: worst |y - x.w| / sum |x||w| %.3g (x rounded to bf16)\n", name, worst);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(inv, 0);
    float y[4], x[4];
    uint16_t wp[16];
    CHECK_EQ_INT(fn(y, 4, x, 1, wp, NULL, 1, 0, 2, 1, 1), -1);
    CHECK_EQ_INT(fn(y, 4, x, 1, NULL, NULL, 1, 0, 1, 1, 1), -1);
}

/* k_matmul_hp_lowp gives the path's bits; with neither path (and with the
 * feature masked off on ARM) it declines, and the caller's f32 product runs. */
static void test_lowp_dispatch(void) {
    int N = 40, K = 96;
    uint16_t *w = make_w(N, K, 1), *wp = amalloc(k_hp_bytes(N, K));
    CHECK_EQ_INT(k_hp_pack(wp, (k_w){.p = w, .t = K_BF16}, N, K), 0);
    float *x = malloc(sizeof(float) * 3 * (size_t)K), y[3 * 40], z[3 * 40];
    for (int i = 0; i < 3 * K; i++) x[i] = frand();
    int r = k_matmul_hp_lowp(y, N, x, K, wp, NULL, 3, 0, N, N, K);
    int want = k_matmul_hp_amx_has() ? k_matmul_hp_amx(z, N, x, K, wp, NULL, 3, 0, N, N, K)
                                     : k_matmul_hp_bfdot(z, N, x, K, wp, NULL, 3, 0, N, N, K);
    CHECK(r >= 0 && r == want && memcmp(y, z, sizeof y) == 0);
    if (k_matmul_hp_bfdot_has()) {
        unsigned old = k_feat_mask(0);
        CHECK_EQ_INT(k_matmul_hp_lowp(y, N, x, K, wp, NULL, 3, 0, N, N, K), -1);
        k_feat_mask(old);
    }
    free(w), free(wp), free(x);
}

int main(void) {
    test_lowp("AMX", k_matmul_hp_amx, k_matmul_hp_amx_has(), 3);
    test_lowp("BFDOT", k_matmul_hp_bfdot, k_matmul_hp_bfdot_has(), 1);
    /* the one dispatch point: whichever runs here, the same bits */
    if (k_matmul_hp_amx_has() || k_matmul_hp_bfdot_has()) test_lowp_dispatch();
    test_batch_invariance();
    test_xs();
    test_pack();
    test_negative();
    test_products();
    printf("versions run: c %s, %s %s, avx512 %s\n", g_seen[0] ? "yes" : "no", k_isa_name(K_ISA_VEC),
           g_seen[1] ? "yes" : "no", g_seen[2] ? "yes" : "no");
    if (k_isa_cpu() >= K_ISA_VEC) CHECK(g_seen[1]);
    return check_done();
}
