/* test_attn_h.c - kern/attn_h.h: the f32 -> f16 / bf16 converters and the
 * few-query cross attention over f16 / bf16 / f32 K/V blocks.
 *
 * Conversions (C and AVX-512 versions, whichever this CPU runs): every
 * half bit pattern survives k_h_to_f32 then k_f32_to_h exactly (NaN stays
 * NaN); f32 -> f16 on every tie between neighbouring halves, one f32 ulp
 * either side of it, overflow, subnormals and random values against a
 * nearest-value search over the table of all f16 values; f32 -> bf16 on
 * ties, neighbours, NaN payloads and random bit patterns against a
 * two-candidate reference.
 *
 * Attention (Mq 1, 2, 5, 6, 7, 16, 17; Tk 1, 7, 1500 (333 under qemu); dh 1, 17, 48, 64, 80;
 * strided q and o; AVX-512 and C versions), against
 *   k_attention_kvh: k_attention_kvh_ref (double, libm exp), and
 *                    k_attention (BLAS) on the expanded K/V;
 *   k_attention_kvf: k_attention and k_attention_ref;
 * max |diff| over outputs that are convex combinations of values in
 * [-1, 1], q in [-2, 2]: <= 1e-6 at scale 1/sqrt(dh) (scores |s| < ~3;
 * observed 2.4e-7) and <= 5e-6 at scale 1 (|s| up to ~25, a peaky softmax;
 * observed 1.7e-6). o's columns past dh stay untouched; Tk 0 gives zeros;
 * o may be q; and the tolerance is shown to see a 1e-4 error in one output
 * column. With Tk = 1 the output is V's row: every half pattern expands
 * exactly, in each version.
 */
#include "check.h"

#include "kern/attn_h.h"
#include "kern/kern.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Outputs are convex combinations of values in [-1, 1]; the tolerance
 * follows the score magnitudes (|s| < 3 at scale 1/sqrt(dh), < 25 at 1). */
#define TOL_SMALL 1e-6
#define TOL_LARGE 5e-6
static double TOL = TOL_SMALL;
#define SENTINEL 12345.0f

static unsigned long long g_seed = 12345;
static uint32_t rnd32(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g_seed >> 32);
}
static float frand(void) { return (float)(rnd32() % 2000001) / 1000000.0f - 1.0f; }
static float *rnd(size_t n) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = frand();
    return p;
}
static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static int h_is_nan(uint16_t h, int bf16) {
    return bf16 ? (h & 0x7f80) == 0x7f80 && (h & 0x7f) : (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

/* ---- conversion references ---- */

static double g_f16_val[0x7c01];   /* value of every non-negative finite f16; [0x7c00] = 65536 */

static void f16_table(void) {
    static float tmp[0x7c00];
    static uint16_t pat[0x7c00];
    for (int i = 0; i < 0x7c00; i++) pat[i] = (uint16_t)i;
    k_h_to_f32(tmp, pat, 0x7c00, 0);
    for (int i = 0; i < 0x7c00; i++) g_f16_val[i] = tmp[i];
    g_f16_val[0x7c00] = 65536.0;   /* where the next value would be: rounds as such to inf */
}

/* Nearest f16 (ties to the even pattern), found by search over the table. */
static uint16_t f16_ref(float x) {
    if (x != x) return 0x7e00;
    uint16_t s = signbit(x) ? 0x8000 : 0;
    double a = fabs((double)x);
    if (a >= 65536.0) return s | 0x7c00;
    int lo = 0, hi = 0x7c00;   /* val[lo] <= a < val[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (g_f16_val[mid] <= a) lo = mid;
        else hi = mid;
    }
    double d0 = a - g_f16_val[lo], d1 = g_f16_val[hi] - a;
    int p = d1 < d0 || (d1 == d0 && (lo & 1)) ? hi : lo;
    return (uint16_t)(s | p);
}

/* Nearest bf16 of the two around x (ties to even); past the largest finite
 * value the next one is 2^128 (inf). */
static uint16_t bf16_ref(float x) {
    if (x != x) return 0x7fc0;
    uint32_t u = f_bits(x);
    uint16_t s = (uint16_t)((u >> 16) & 0x8000), lo = (uint16_t)((u >> 16) & 0x7fff);
    if (lo == 0x7f80) return s | lo;   /* inf */
    double a = fabs((double)x), v0 = fabs((double)bits_f((uint32_t)lo << 16));
    double v1 = lo + 1 == 0x7f80 ? ldexp(1.0, 128) : fabs((double)bits_f((uint32_t)(lo + 1) << 16));
    double d0 = a - v0, d1 = v1 - a;
    return (uint16_t)(s | (d1 < d0 || (d1 == d0 && (lo & 1)) ? lo + 1 : lo));
}

/* Runs k_f32_to_h_isa on x[n] and counts mismatches against the reference
 * (NaN in: any NaN out). */
static int conv_bad(int isa, const float *x, size_t n, int bf16, int *used) {
    uint16_t *h = malloc(n * sizeof *h);
    *used = k_f32_to_h_isa(isa, h, x, n, bf16);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t want = bf16 ? bf16_ref(x[i]) : f16_ref(x[i]);
        int ok = x[i] != x[i] ? h_is_nan(h[i], bf16) : h[i] == want;
        if (!ok && bad++ < 5)
            fprintf(stderr, "  isa %d %s: %.9g (0x%08x) -> 0x%04x, expected 0x%04x\n", isa,
                    bf16 ? "bf16" : "f16", x[i], f_bits(x[i]), h[i], want);
    }
    free(h);
    return bad;
}

static void test_conversions(void) {
    static uint16_t all[65536], back[65536];
    static float f[65536];
    f16_table();
    /* the reference itself, on values it must get right */
    CHECK_EQ_INT(f16_ref(65504.0f), 0x7bff);
    CHECK_EQ_INT(f16_ref(65520.0f), 0x7c00);
    CHECK_EQ_INT(f16_ref(65519.996f), 0x7bff);
    CHECK_EQ_INT(f16_ref(0x1p-25f), 0x0000);
    CHECK_EQ_INT(f16_ref(0x1.000002p-25f), 0x0001);
    CHECK_EQ_INT(f16_ref(0x3p-25f), 0x0002);   /* 1.5 ulp: tie to even */
    CHECK_EQ_INT(f16_ref(-1.0f), 0xbc00);
    CHECK_EQ_INT(bf16_ref(bits_f(0x3f808000)), 0x3f80);   /* tie, even below */
    CHECK_EQ_INT(bf16_ref(bits_f(0x3f818000)), 0x3f82);   /* tie, odd below */
    CHECK_EQ_INT(bf16_ref(FLT_MAX), 0x7f80);

    for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    for (int isa = 0; isa <= 2; isa++)
        for (int bf = 0; bf < 2; bf++) {
            int bad = 0;
            k_h_to_f32(f, all, 65536, bf);
            int used = k_f32_to_h_isa(isa, back, f, 65536, bf);
            CHECK(used <= isa);
            for (int i = 0; i < 65536; i++)
                bad += h_is_nan(all[i], bf) ? !h_is_nan(back[i], bf) : back[i] != all[i];
            CHECK_EQ_INT(bad, 0);
        }
    /* the vector level has its own converters (AVX2 + F16C, NEON) */
    if (k_isa_cpu() >= K_ISA_VEC) CHECK_EQ_INT(k_f32_to_h_isa(1, back, f, 16, 1), 1);

    /* f16: every tie between neighbours (and the overflow tie 65520), one
     * f32 ulp either side, signed; specials; random magnitudes */
    size_t n = 0, cap = 6 * 0x7c00 + 1000 + 200000;
    float *x = malloc(cap * sizeof *x);
    for (int p = 0; p < 0x7c00; p++) {
        float mid = (float)((g_f16_val[p] + g_f16_val[p + 1]) / 2);   /* exact in f32 */
        float s = p & 1 ? -1.0f : 1.0f;
        x[n++] = s * mid, x[n++] = -s * mid;
        x[n++] = s * nextafterf(mid, 0.0f), x[n++] = s * nextafterf(mid, INFINITY);
        x[n++] = s * (float)g_f16_val[p], x[n++] = -s * nextafterf((float)g_f16_val[p], INFINITY);
    }
    const float special[] = {0.0f, -0.0f, 1e-45f, -1e-45f, FLT_MIN, 1e-40f, 0x1p-24f, 0x1p-25f,
                             0x1.8p-24f, 0x1p-14f, 0x1.ff8p-15f, 65504.0f, 65519.996f, 65520.0f,
                             -65520.0f, 65536.0f, 1e10f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY,
                             NAN, -NAN, bits_f(0x7f800001), bits_f(0x7fbfffff)};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[n++] = special[i];
    for (int i = 0; i < 200000; i++)   /* magnitudes 2^-30 .. 2^18 */
        x[n++] = (rnd32() & 1 ? -1.0f : 1.0f) * ldexpf(1.0f + (float)(rnd32() >> 9) * 0x1p-23f, (int)(rnd32() % 49) - 30);
    for (int isa = 0; isa <= 2; isa++) {
        int used;
        CHECK_EQ_INT(conv_bad(isa, x, n, 0, &used), 0);
        /* odd lengths and offsets through the vector tails */
        CHECK_EQ_INT(conv_bad(isa, x + 3, 37, 0, &used), 0);
    }

    /* bf16: ties (both parities), one ulp either side, NaN payloads the
     * rounding would carry into inf, overflow, random bit patterns */
    n = 0;
    free(x);
    cap = 5 * 65536 + 100 + (1 << 21);
    x = malloc(cap * sizeof *x);
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7f80) == 0x7f80) continue;
        x[n++] = bits_f(h << 16 | 0x8000), x[n++] = bits_f(h << 16 | 0x7fff);
        x[n++] = bits_f(h << 16 | 0x8001), x[n++] = bits_f(h << 16 | 0xffff);
        x[n++] = bits_f(h << 16);
    }
    const uint32_t bspecial[] = {0x7f800001, 0xff800001, 0x7f80ffff, 0x7fc00000, 0x7fffffff,
                                 0x7f800000, 0xff800000, 0x7f7fffff, 0x7f7f8000, 0x7f7f7fff,
                                 0x00000001, 0x80008000, 0x00018000};
    for (size_t i = 0; i < sizeof bspecial / sizeof bspecial[0]; i++) x[n++] = bits_f(bspecial[i]);
    for (int i = 0; i < (1 << 21); i++) x[n++] = bits_f(rnd32());
    for (int isa = 0; isa <= 2; isa++) {
        int used;
        CHECK_EQ_INT(conv_bad(isa, x, n, 1, &used), 0);
        CHECK_EQ_INT(conv_bad(isa, x + 5, 29, 1, &used), 0);
    }
    free(x);
}

/* ---- attention ---- */

/* Max |o - r| over the Mq x dh outputs (row strides ldo, ldr). */
static double diff_rows(const float *o, int ldo, const float *r, int ldr, int Mq, int dh) {
    double m = 0;
    for (int i = 0; i < Mq; i++) {
        double d = check_max_abs_diff(o + (size_t)i * ldo, r + (size_t)i * ldr, (size_t)dh, NULL);
        if (d > m) m = d;
    }
    return m;
}

/* o's columns [dh, ldo) must still hold the sentinel. */
static int gaps_intact(const float *o, int ldo, int Mq, int dh) {
    for (int i = 0; i + 1 < Mq; i++)
        for (int j = dh; j < ldo; j++)
            if (o[(size_t)i * ldo + j] != SENTINEL) return 0;
    return 1;
}

static double g_worst[2][4];   /* [scale 1][kvh-ref, kvh-k_attention, kvf-k_attention, kvf-ref] */
static int g_avx512_missing, g_avx2_ran;

static void attn_case(int Mq, int Tk, int dh, float scale) {
    double *worst = g_worst[scale == 1.0f];
    TOL = scale == 1.0f ? TOL_LARGE : TOL_SMALL;
    int ldq = dh + 3, ldo = dh + 5;
    size_t nq = (size_t)(Mq - 1) * ldq + dh, no = (size_t)(Mq - 1) * ldo + dh, nkv = (size_t)Tk * dh;
    float *q = rnd(nq), *kf = rnd(nkv), *vf = rnd(nkv);
    float *ke = malloc(nkv * sizeof *ke), *ve = malloc(nkv * sizeof *ve);
    float *o = malloc(no * sizeof *o), *r = malloc(no * sizeof *r), *r2 = malloc(no * sizeof *r2);
    float *s = malloc((size_t)Mq * Tk * sizeof *s);
    uint16_t *kh = malloc(nkv * sizeof *kh), *vh = malloc(nkv * sizeof *vh);
    for (size_t i = 0; i < nq; i++) q[i] *= 2.0f;   /* wider scores: a peakier softmax */

    for (int bf = 0; bf < 2; bf++) {
        k_f32_to_h(kh, kf, nkv, bf), k_f32_to_h(vh, vf, nkv, bf);
        k_h_to_f32(ke, kh, nkv, bf), k_h_to_f32(ve, vh, nkv, bf);
        k_attention_kvh_ref(r, ldo, q, ldq, kh, vh, bf, Mq, Tk, dh, scale, s);
        k_attention(r2, ldo, q, ldq, ke, dh, ve, dh, Mq, Tk, dh, scale, 0, s);
        for (int isa = 0; isa <= 2; isa++) {
            for (size_t i = 0; i < no; i++) o[i] = SENTINEL;
            int used = k_attention_kv_isa(isa, o, ldo, q, ldq, kh, vh, bf ? K_BF16 : K_F16, Mq, Tk,
                                          dh, scale, s);
            CHECK(used <= isa);
            if (isa == 2 && used != 2) g_avx512_missing = 1;
            if (isa == 1 && dh == 64 && used == 1) g_avx2_ran = 1;
            double d0 = diff_rows(o, ldo, r, ldo, Mq, dh), d1 = diff_rows(o, ldo, r2, ldo, Mq, dh);
            if (d0 > worst[0]) worst[0] = d0;
            if (d1 > worst[1]) worst[1] = d1;
            if (!(d0 <= TOL && d1 <= TOL))
                fprintf(stderr, "  kvh %s isa %d Mq %d Tk %d dh %d scale %g: |o - ref| %.3g, |o - k_attention| %.3g\n",
                        bf ? "bf16" : "f16", used, Mq, Tk, dh, scale, d0, d1);
            CHECK(d0 <= TOL);
            CHECK(d1 <= TOL);
            CHECK(gaps_intact(o, ldo, Mq, dh));
        }
        /* the public entry point */
        k_attention_kvh(o, ldo, q, ldq, kh, vh, bf, Mq, Tk, dh, scale, s);
        CHECK(diff_rows(o, ldo, r2, ldo, Mq, dh) <= TOL);
    }

    k_attention(r2, ldo, q, ldq, kf, dh, vf, dh, Mq, Tk, dh, scale, 0, s);
    k_attention_ref(r, ldo, q, ldq, kf, dh, vf, dh, Mq, Tk, dh, scale, 0, s);
    for (int isa = 0; isa <= 2; isa++) {
        for (size_t i = 0; i < no; i++) o[i] = SENTINEL;
        int used = k_attention_kv_isa(isa, o, ldo, q, ldq, kf, vf, K_F32, Mq, Tk, dh, scale, s);
        CHECK(used <= isa);
        double d2 = diff_rows(o, ldo, r2, ldo, Mq, dh), d3 = diff_rows(o, ldo, r, ldo, Mq, dh);
        if (d2 > worst[2]) worst[2] = d2;
        if (d3 > worst[3]) worst[3] = d3;
        if (!(d2 <= TOL && d3 <= TOL))
            fprintf(stderr, "  kvf isa %d Mq %d Tk %d dh %d scale %g: |o - k_attention| %.3g, |o - ref| %.3g\n",
                    used, Mq, Tk, dh, scale, d2, d3);
        CHECK(d2 <= TOL);
        CHECK(d3 <= TOL);
        CHECK(gaps_intact(o, ldo, Mq, dh));
    }
    k_attention_kvf(o, ldo, q, ldq, kf, vf, Mq, Tk, dh, scale, s);
    CHECK(diff_rows(o, ldo, r2, ldo, Mq, dh) <= TOL);

    /* The tolerance sees an error of 1e-4 in one output column: V's
     * column 0 shifted by 1e-4 shifts o's by as much. */
    if (Tk > 300) {
        for (int t = 0; t < Tk; t++) vf[(size_t)t * dh] += 1e-4f;
        k_attention_kvf(o, ldo, q, ldq, kf, vf, Mq, Tk, dh, scale, s);
        CHECK(diff_rows(o, ldo, r2, ldo, Mq, dh) > 10 * TOL);
    }
    free(q), free(kf), free(vf), free(ke), free(ve), free(o), free(r), free(r2), free(s);
    free(kh), free(vh);
}

/* Batch invariance: each query row's output bitwise the same alone as among
 * Mq rows (the engine's batches decode each sequence as it would alone), on
 * every ISA path and element type: rows the vector versions take in pairs
 * or with an expanded copy against the row by itself; Tk past one value
 * chunk and not a multiple of 8. */
static void test_invariance(void) {
    enum { DH = 64, TK = 203, MQ = 7 };
    float *q = rnd((size_t)MQ * DH), *kf = rnd((size_t)TK * DH), *vf = rnd((size_t)TK * DH);
    uint16_t *kh = malloc(sizeof *kh * TK * DH), *vh = malloc(sizeof *vh * TK * DH);
    float *all = malloc(sizeof(float) * MQ * DH), *one = malloc(sizeof(float) * DH);
    float *s = malloc(sizeof(float) * MQ * TK);
    int bad = 0, runs = 0;
    for (int ty = 0; ty < 3; ty++) {
        k_wtype t = ty == 0 ? K_F32 : ty == 1 ? K_F16 : K_BF16;
        const void *k = kf, *v = vf;
        if (ty) {
            k_f32_to_h(kh, kf, (size_t)TK * DH, ty == 2), k_f32_to_h(vh, vf, (size_t)TK * DH, ty == 2);
            k = kh, v = vh;
        }
        for (int isa = 0; isa <= 2; isa++)
            for (int m = 1; m <= MQ; m++) {
                k_attention_kv_isa(isa, all, DH, q, DH, k, v, t, m, TK, DH, 0.125f, s);
                for (int r = 0; r < m; r++) {
                    k_attention_kv_isa(isa, one, DH, q + (size_t)r * DH, DH, k, v, t, 1, TK, DH, 0.125f, s);
                    bad += memcmp(one, all + (size_t)r * DH, sizeof(float) * DH) != 0;
                    runs++;
                }
            }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(runs, 3 * 3 * MQ * (MQ + 1) / 2);
    free(q), free(kf), free(vf), free(kh), free(vh), free(all), free(one), free(s);
}

/* Edge cases: Tk = 0 gives zeros; Mq = 0 writes nothing; o may alias q. */
static void test_edges(void) {
    int dh = 64, Tk = 33, Mq = 5;
    float o[5 * 64], s[5 * 33], *q = rnd((size_t)Mq * dh), *k = rnd((size_t)Tk * dh),
          *v = rnd((size_t)Tk * dh), *r = malloc(sizeof(float) * (size_t)Mq * dh);
    for (int isa = 0; isa <= 2; isa++) {
        for (int i = 0; i < Mq * dh; i++) o[i] = SENTINEL;
        k_attention_kv_isa(isa, o, dh, q, dh, k, v, K_F32, Mq, 0, dh, 0.125f, s);
        int bad = 0;
        for (int i = 0; i < Mq * dh; i++) bad += o[i] != 0.0f;
        CHECK_EQ_INT(bad, 0);
        for (int i = 0; i < Mq * dh; i++) o[i] = SENTINEL;
        k_attention_kv_isa(isa, o, dh, q, dh, k, v, K_F32, 0, Tk, dh, 0.125f, s);
        bad = 0;
        for (int i = 0; i < Mq * dh; i++) bad += o[i] != SENTINEL;
        CHECK_EQ_INT(bad, 0);
        /* in place: o = q */
        float *qo = malloc(sizeof(float) * (size_t)Mq * dh);
        memcpy(qo, q, sizeof(float) * (size_t)Mq * dh);
        k_attention(r, dh, q, dh, k, dh, v, dh, Mq, Tk, dh, 0.125f, 0, s);
        k_attention_kv_isa(isa, qo, dh, qo, dh, k, v, K_F32, Mq, Tk, dh, 0.125f, s);
        CHECK(check_max_abs_diff(qo, r, (size_t)Mq * dh, NULL) <= TOL);
        free(qo);
        /* an element type it does not know: refused, o untouched */
        for (int i = 0; i < Mq * dh; i++) o[i] = SENTINEL;
        CHECK_EQ_INT(k_attention_kv_isa(isa, o, dh, q, dh, k, v, (k_wtype)99, Mq, Tk, dh, 0.125f, s), -1);
        CHECK(o[0] == SENTINEL);
    }
    free(q), free(k), free(v), free(r);
}

/* With one key the output is that key's V row (weight exactly 1): every
 * half bit pattern must come out as k_h_to_f32 expands it (NaN as NaN;
 * -0 may come out +0 after the accumulation). */
static void test_expand_all(void) {
    enum { DH = 1024 };
    static uint16_t kz[DH], v[DH];
    static float want[DH], o[DH], q[DH], s[1];
    for (int bf = 0; bf < 2; bf++)
        for (int isa = 0; isa <= 2; isa++) {
            int bad = 0;
            for (int p0 = 0; p0 < 65536; p0 += DH) {
                for (int j = 0; j < DH; j++) v[j] = (uint16_t)(p0 + j);
                k_h_to_f32(want, v, DH, bf);
                k_attention_kv_isa(isa, o, DH, q, DH, kz, v, bf ? K_BF16 : K_F16, 1, 1, DH, 0.125f, s);
                for (int j = 0; j < DH; j++)
                    bad += want[j] != want[j] ? o[j] == o[j] : o[j] != want[j];
            }
            CHECK_EQ_INT(bad, 0);
        }
}

/* k_f32_to_h_rows: each row as k_f32_to_h converts it; the gaps between
 * destination rows untouched. */
static void test_rows(void) {
    enum { R = 5, NC = 37, LDD = 40, LDS = 50 };
    float src[R * LDS];
    for (int i = 0; i < R * LDS; i++) src[i] = (float)((i * 7919) % 2001 - 1000) * 0.37f;
    for (int bf = 0; bf < 2; bf++) {
        uint16_t got[R * LDD], want[NC];
        for (int i = 0; i < R * LDD; i++) got[i] = 0xABCD;
        k_f32_to_h_rows(got, LDD, src, LDS, R, NC, bf);
        int ok = 1;
        for (int r = 0; r < R; r++) {
            k_f32_to_h(want, src + r * LDS, NC, bf);
            ok &= memcmp(got + r * LDD, want, sizeof want) == 0;
            for (int i = NC; i < LDD; i++) ok &= got[r * LDD + i] == 0xABCD;
        }
        CHECK(ok);
    }
}

int main(void) {
    test_rows();
    test_invariance();
    test_conversions();
    test_expand_all();
    test_edges();
#ifdef ED_EMULATED   /* qemu: its FMAs are soft; 333 keys still end in a part tile */
    const int Mqs[] = {1, 2, 5, 6, 7, 16, 17}, Tks[] = {1, 7, 333}, dhs[] = {1, 17, 48, 64, 80};
#else
    const int Mqs[] = {1, 2, 5, 6, 7, 16, 17}, Tks[] = {1, 7, 1500}, dhs[] = {1, 17, 48, 64, 80};
#endif
    for (size_t a = 0; a < sizeof Mqs / sizeof Mqs[0]; a++)
        for (size_t b = 0; b < sizeof Tks / sizeof Tks[0]; b++)
            for (size_t c = 0; c < sizeof dhs / sizeof dhs[0]; c++) {
                int dh = dhs[c];
                attn_case(Mqs[a], Tks[b], dh, (float)(1.0 / sqrt((double)dh)));
                if (Tks[b] > 300 && (dh == 64 || dh == 17)) attn_case(Mqs[a], Tks[b], dh, 1.0f);
            }
    for (int l = 0; l < 2; l++)
        printf("scale %s: worst |diff| kvh-ref %.3g, kvh-k_attention %.3g, kvf-k_attention %.3g, "
               "kvf-ref %.3g (tol %g)\n", l ? "1" : "1/sqrt(dh)", g_worst[l][0], g_worst[l][1],
               g_worst[l][2], g_worst[l][3], l ? TOL_LARGE : TOL_SMALL);
    if (g_avx512_missing) printf("no AVX-512 here\n");
    printf("vector version (%s) %s\n", k_isa_name(K_ISA_VEC), g_avx2_ran ? "run (dh 64)" : "not on this CPU");
    if (k_isa_cpu() >= K_ISA_VEC) CHECK(g_avx2_ran);
    return check_done();
}
