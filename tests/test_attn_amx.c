/* test_attn_amx.c - kern/attn_amx.h: one head of attention with bf16
 * products, its AMX version (where this CPU has it and Linux grants the
 * tile state), its AVX512_BF16 version (vdpbf16ps; where the CPU has it:
 * otherwise those checks are skipped, with a note) and its portable C
 * version, against the scalar twin k_attention_bf16_ref and
 * against the full-f32 k_attention_ref.
 *
 * Cases: Mq 1, 15, 16, 17, 31, 32, 33, 100 x Tk 1, 15, 16, 17, 33, 100, 448
 * x dh 16, 48, 64, 80 (every combination) at scale 1/sqrt(dh) and 1; and
 * with 1500 rows or keys: Mq 1500 with Tk 1, 17, 448 (dh 80), 1500; Mq 1,
 * 33 with Tk 1500; Mq 100, Tk 1500, dh 48 at scale -0.3; and Tk 4100, dh
 * 256, 1 and 17 once each. q, k, v are column slices of a fused
 * [T, 3 H dh] matrix (head 1 of H = 2: rows not contiguous), o a slice of a
 * wider matrix whose other columns hold a sentinel. q in [-2, 2], k and v
 * in [-1, 1]: at scale 1 the scores reach ~+-20, a peaky softmax.
 *
 * Against k_attention_bf16_ref (double, libm exp, the same bf16 roundings),
 * per output (i, d):  |o - ref| <= TOL_ACC + flip(i, d)
 *   TOL_ACC = 2e-5 covers what differs without changing a rounded P:
 *     the order of the f32 sums over keys (P . V in the tile unit or in C,
 *     and l: ~sqrt(Tk) 2^-24 relative for outputs that are convex
 *     combinations of |v| <= 1, 2.3e-6 at Tk 1500), the exp polynomial
 *     (< 2e-7 relative, common to all e of a row but for y's rounding) and
 *     the f32 score sums' effect on e (~sqrt(dh) 2^-24 |a| c, ~5e-6);
 *     observed: at most 2.4e-6 where no weight is at risk.
 *   flip(i, d) bounds the other difference: an e within a relative R =
 *     2^-14 (6e-5) of a point where its bf16 rounding changes may round
 *     the other way in a version; each such key adds
 *     |bf16(e (1 + R)) - bf16(e (1 - R))| |vb[j][d]| / l (one bf16 unit of
 *     its weight), computed here from the double scores. R is more than
 *     10x the e discrepancy estimated above; about 2% of the e are at risk.
 *     Where one of them does round the other way, the bound is tight by
 *     construction (observed worst |o - ref| / bound 0.90).
 * Against k_attention_ref (f32 inputs, no rounding): TOL_BF = 0.01 at
 * |scale| <= 0.5 (1/sqrt(dh), -0.3) and 0.06 at scale 1: rounding q and k
 * to bf16 (2^-9 relative) moves a score by ~2^-9 sqrt(2 dh) rms(q k) |scale|
 * (sigma 0.017 at scale 1, dh 80; 0.002 at 1/sqrt(dh)) and the weights
 * relatively by as much; v's rounding adds up to 2^-9; observed 0.0021
 * and 0.023.
 * Also: o's other columns (the sentinel) stay untouched; Tk = 1 gives v's
 * rounded row (C: exactly; AMX: within 2^-23 |a c| + 2^-22 relative, the
 * maximum's y being the residual of a c minus a c rounded down instead of
 * 0); Tk 0 gives zeros, Mq 0 writes nothing, dh 0 or 257 is refused; two
 * threads at once give the same bits as one after the other; and the bound
 * is shown to catch an error of 1e-3 in one output column (v's column 0
 * shifted: the outputs move by as much, > 10x the bound).
 */
#include "check.h"

#include "kern/attn_amx.h"
#include "kern/gemm.h"
#include "kern/half.h"
#include "kern/kern.h"

#include <float.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TOL_ACC 2e-5
#define RISK 0x1p-14
#define TOL_BF_SMALL 0.01
#define TOL_BF_LARGE 0.06
#define SENTINEL 12345.0f
#define H 2   /* heads in the fused matrices; the tests use head 1 */

static unsigned long long g_seed = 12345;
static float frand(void) {   /* uniform in [-1, 1] */
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000001) / 1000000.0f - 1.0f;
}

static float bf16r(float x) { return k_h2f(k_f32_to_bf16(x), 1); }
static double p_round(double e) {
    float f = (float)e;
    return f < FLT_MIN ? 0.0 : bf16r(f);
}

/* One problem: a fused [T, 3 H dh] matrix (T = max(Mq, Tk)) and o. */
typedef struct {
    int Mq, Tk, dh, ld, ldo;
    float scale;
    float *qkv, *o, *r, *r32, *s32;
    double *tol, *srow;
    void *scratch;
} prob;

static const float *pq(const prob *p) { return p->qkv + p->dh; }
static const float *pk(const prob *p) { return p->qkv + H * p->dh + p->dh; }
static const float *pv(const prob *p) { return p->qkv + 2 * H * p->dh + p->dh; }

static void prob_init(prob *p, int Mq, int Tk, int dh, float scale) {
    int T = Mq > Tk ? Mq : Tk;
    p->Mq = Mq, p->Tk = Tk, p->dh = dh, p->scale = scale;
    p->ld = 3 * H * dh + 5, p->ldo = H * dh + 3;
    p->qkv = malloc(sizeof(float) * (size_t)T * p->ld);
    for (size_t i = 0; i < (size_t)T * p->ld; i++) p->qkv[i] = frand();
    for (int i = 0; i < Mq; i++)
        for (int d = 0; d < dh; d++) p->qkv[(size_t)i * p->ld + dh + d] *= 2.0f;   /* q: [-2, 2] */
    size_t no = (size_t)(Mq ? Mq : 1) * p->ldo;
    p->o = malloc(sizeof(float) * no), p->r = malloc(sizeof(float) * no);
    p->r32 = malloc(sizeof(float) * no);
    p->s32 = malloc(sizeof(float) * (size_t)(Mq ? Mq : 1) * (Tk ? Tk : 1));
    p->tol = malloc(sizeof(double) * (size_t)(Mq ? Mq : 1) * dh);
    p->srow = malloc(sizeof(double) * (size_t)(Tk ? Tk : 1));
    p->scratch = aligned_alloc(64, (k_attention_bf16_scratch_bytes(Mq, Tk, dh) + 63) & ~(size_t)63);
}

static void prob_free(prob *p) {
    free(p->qkv), free(p->o), free(p->r), free(p->r32), free(p->s32), free(p->tol), free(p->srow);
    free(p->scratch);
}

/* The allowed |o - ref| per output (p->tol [Mq][dh]); returns the number
 * of keys at risk of rounding the other way (see the file comment). */
static long allowed(prob *p) {
    const float *q = pq(p), *k = pk(p), *v = pv(p);
    long n_risk = 0;
    for (int i = 0; i < p->Mq; i++) {
        double m = -DBL_MAX, l = 0, *t = p->tol + (size_t)i * p->dh;
        for (int j = 0; j < p->Tk; j++) {
            double a = 0;
            for (int d = 0; d < p->dh; d++)
                a += (double)bf16r(q[(size_t)i * p->ld + d]) * bf16r(k[(size_t)j * p->ld + d]);
            p->srow[j] = p->scale * a;
            if (p->srow[j] > m) m = p->srow[j];
        }
        for (int j = 0; j < p->Tk; j++) l += exp(p->srow[j] - m);
        for (int d = 0; d < p->dh; d++) t[d] = TOL_ACC;
        for (int j = 0; j < p->Tk; j++) {
            double e = exp(p->srow[j] - m);
            double w = fabs(p_round(e * (1 + RISK)) - p_round(e * (1 - RISK)));
            if (w == 0) continue;
            n_risk++;
            for (int d = 0; d < p->dh; d++) t[d] += w * fabs(bf16r(v[(size_t)j * p->ld + d])) / l;
        }
    }
    return n_risk;
}

static double g_worst_clean;   /* worst |o - ref| over outputs with no key at risk */

/* Worst |o - ref| / allowed over the outputs (> 1 fails); *worst the
 * largest |o - ref|. */
static double ratio(const prob *p, const float *o, const float *r, const double *tol,
                    double tol_c, double *worst) {
    double q = 0;
    for (int i = 0; i < p->Mq; i++)
        for (int d = 0; d < p->dh; d++) {
            double x = fabs((double)o[(size_t)i * p->ldo + d] - r[(size_t)i * p->ldo + d]);
            double a = tol ? tol[(size_t)i * p->dh + d] : tol_c;
            if (x != x) x = INFINITY;
            if (x > *worst) *worst = x;
            if (tol && a == TOL_ACC && x > g_worst_clean) g_worst_clean = x;
            if (x / a > q) q = x / a;
        }
    return q;
}

static int sentinel_intact(const prob *p) {
    for (int i = 0; i < p->Mq; i++)
        for (int c = 0; c < p->ldo; c++)
            if ((c < p->dh || c >= 2 * p->dh) && p->o[(size_t)i * p->ldo + c] != SENTINEL) return 0;
    return 1;
}

/* The versions: C, AVX512_BF16 (vdpbf16ps), AMX; those this CPU runs. */
#define N_VER 3
static const int VER[N_VER] = {0, 2, 3};
static int g_has[N_VER];
static double g_worst_ref[N_VER][2], g_worst_f32[N_VER][2];   /* [version][scale 1?] */
static double g_ratio[N_VER];                                  /* worst |o - ref| / bound */
static long g_risk, g_outputs;

/* Runs version isa on p into p->o (head 1's columns); returns the isa used. */
static int run(prob *p, int isa) {
    for (size_t i = 0; i < (size_t)p->Mq * p->ldo; i++) p->o[i] = SENTINEL;
    return k_attention_bf16_isa(isa, p->o + p->dh, p->ldo, pq(p), p->ld, pk(p), p->ld, pv(p), p->ld,
                                p->Mq, p->Tk, p->dh, p->scale, p->scratch);
}

static void attn_case(int Mq, int Tk, int dh, float scale, int with_f32) {
    prob p;
    prob_init(&p, Mq, Tk, dh, scale);
    int large = fabsf(scale) > 0.5f;
    double tol_bf = large ? TOL_BF_LARGE : TOL_BF_SMALL;
    k_attention_bf16_ref(p.r + dh, p.ldo, pq(&p), p.ld, pk(&p), p.ld, pv(&p), p.ld, Mq, Tk, dh,
                         scale);
    if (with_f32)
        k_attention_ref(p.r32 + dh, p.ldo, pq(&p), p.ld, pk(&p), p.ld, pv(&p), p.ld, Mq, Tk, dh,
                        scale, 0, p.s32);
    g_risk += allowed(&p);
    g_outputs += (long)Mq * Tk;
    for (int vi = 0; vi < N_VER; vi++) {
        int isa = VER[vi];
        if (!g_has[vi]) continue;
        int used = run(&p, isa);
        CHECK_EQ_INT(used, isa);
        double q = ratio(&p, p.o + dh, p.r + dh, p.tol, 0, &g_worst_ref[vi][large]);
        if (q > g_ratio[vi]) g_ratio[vi] = q;
        if (!(q <= 1))
            fprintf(stderr, "  isa %d Mq %d Tk %d dh %d scale %g: |o - ref| over the bound (x%.3g)\n",
                    isa, Mq, Tk, dh, scale, q);
        CHECK(q <= 1);
        if (with_f32) {
            q = ratio(&p, p.o + dh, p.r32 + dh, NULL, tol_bf, &g_worst_f32[vi][large]);
            if (!(q <= 1))
                fprintf(stderr, "  isa %d Mq %d Tk %d dh %d scale %g: |o - k_attention_ref| over %g "
                                "(x%.3g)\n", isa, Mq, Tk, dh, scale, tol_bf, q);
            CHECK(q <= 1);
        }
        CHECK(sentinel_intact(&p));
    }
    prob_free(&p);
}

/* Tk = 1: every row's output is v's rounded row. */
static void test_one_key(void) {
    for (int vi = 0; vi < N_VER; vi++) {
        int isa = VER[vi];
        if (!g_has[vi]) continue;
        prob p;
        prob_init(&p, 37, 1, 80, 1.0f);
        run(&p, isa);
        const float *q = pq(&p), *k = pk(&p), *v = pv(&p);
        int bad = 0;
        for (int i = 0; i < p.Mq; i++) {
            double a = 0;
            for (int d = 0; d < p.dh; d++)
                a += (double)bf16r(q[(size_t)i * p.ld + d]) * bf16r(k[d]);
            double rel = isa ? 0x1p-23 * fabs(a * 1.4426950408889634) + 0x1p-22 : 0;
            for (int d = 0; d < p.dh; d++) {
                double want = bf16r(v[d]), got = p.o[(size_t)i * p.ldo + p.dh + d];
                bad += !(fabs(got - want) <= rel * fabs(want));
            }
        }
        CHECK_EQ_INT(bad, 0);
        prob_free(&p);
    }
}

/* Version isa on p's matrices with other sizes, into o's first columns. */
static int run_sizes(prob *p, int isa, int Mq, int Tk, int dh) {
    return k_attention_bf16_isa(isa, p->o, p->ldo, pq(p), p->ld, pk(p), p->ld, pv(p), p->ld, Mq, Tk,
                                dh, 0.125f, p->scratch);
}

/* Tk 0 gives zeros; Mq 0 writes nothing; sizes out of range are refused. */
static void test_edges(void) {
    for (int vi = 0; vi < N_VER; vi++) {
        int isa = VER[vi];
        if (!g_has[vi]) continue;
        prob p;
        prob_init(&p, 5, 0, 48, 0.125f);
        run(&p, isa);
        int bad = 0;
        for (int i = 0; i < 5; i++)
            for (int c = 0; c < p.ldo; c++) {
                float want = c >= p.dh && c < 2 * p.dh ? 0.0f : SENTINEL;
                bad += p.o[(size_t)i * p.ldo + c] != want;
            }
        CHECK_EQ_INT(bad, 0);
        prob_free(&p);
        prob_init(&p, 3, 20, 48, 0.125f);
        p.Mq = 0;
        for (size_t i = 0; i < (size_t)3 * p.ldo; i++) p.o[i] = SENTINEL;
        run_sizes(&p, isa, 0, 20, 48);
        CHECK(p.o[0] == SENTINEL && p.o[p.ldo] == SENTINEL);
        CHECK_EQ_INT(run_sizes(&p, isa, 3, 20, 0), -1);
        CHECK_EQ_INT(run_sizes(&p, isa, 3, 20, 257), -1);
        CHECK(p.o[0] == SENTINEL);
        prob_free(&p);
    }
}

/* The bound catches an error of 1e-3 in one output column: v's column 0
 * shifted by 1e-3 shifts o's (a convex combination) by as much. */
static void test_catches(void) {
    prob p;
    prob_init(&p, 40, 448, 64, 0.125f);
    k_attention_bf16_ref(p.r + p.dh, p.ldo, pq(&p), p.ld, pk(&p), p.ld, pv(&p), p.ld, 40, 448, 64,
                         0.125f);
    allowed(&p);
    for (int j = 0; j < p.Tk; j++) p.qkv[(size_t)j * p.ld + 2 * H * p.dh + p.dh] += 1e-3f;
    for (int vi = 0; vi < N_VER; vi++) {
        int isa = VER[vi];
        if (!g_has[vi]) continue;
        double worst = 0;
        run(&p, isa);
        CHECK(ratio(&p, p.o + p.dh, p.r + p.dh, p.tol, 0, &worst) > 10);
    }
    prob_free(&p);
}

/* Two threads at once, each its own head and scratch (each configures and
 * releases its own tiles): the same bits as one after the other. */
typedef struct {
    prob *p;
    int h, isa;
    float *o;
    void *scratch;
} thread_arg;

static void *thread_run(void *arg) {
    thread_arg *t = arg;
    const prob *p = t->p;
    for (int rep = 0; rep < 3; rep++)
        k_attention_bf16_isa(t->isa, t->o, p->dh, p->qkv + t->h * p->dh, p->ld,
                             p->qkv + (H + t->h) * p->dh, p->ld, p->qkv + (2 * H + t->h) * p->dh,
                             p->ld, p->Mq, p->Tk, p->dh, p->scale, t->scratch);
    return NULL;
}

static void test_threads(void) {
    prob p;
    prob_init(&p, 100, 448, 64, 0.125f);
    size_t no = (size_t)p.Mq * p.dh;
    size_t sb = (k_attention_bf16_scratch_bytes(p.Mq, p.Tk, p.dh) + 63) & ~(size_t)63;
    thread_arg t[2];
    pthread_t th[2];
    float *seq = malloc(sizeof(float) * 2 * no);
    for (int h = 0; h < 2; h++) {
        t[h] = (thread_arg){&p, h, g_has[2] ? 3 : g_has[1] ? 2 : 0, malloc(sizeof(float) * no),
                            aligned_alloc(64, sb)};
        thread_run(&t[h]);
        memcpy(seq + h * no, t[h].o, sizeof(float) * no);
        memset(t[h].o, 0, sizeof(float) * no);
    }
    for (int h = 0; h < 2; h++) CHECK(pthread_create(&th[h], NULL, thread_run, &t[h]) == 0);
    for (int h = 0; h < 2; h++) pthread_join(th[h], NULL);
    for (int h = 0; h < 2; h++) {
        CHECK(memcmp(seq + h * no, t[h].o, sizeof(float) * no) == 0);
        free(t[h].o), free(t[h].scratch);
    }
    free(seq);
    prob_free(&p);
}

int main(void) {
    g_has[0] = 1;   /* (no rows, no keys: the call only says which version would run) */
    for (int vi = 1; vi < N_VER; vi++)
        g_has[vi] = k_attention_bf16_isa(VER[vi], NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0, 0, 1, 1.0f,
                                         NULL) == VER[vi];
    if (!g_has[2])
        printf("no AMX here (or the tile state was refused): AMX checks skipped\n");
    if (!g_has[1])
        printf("no AVX512_BF16 here: the vdpbf16ps checks skipped\n");
    test_one_key();
    test_edges();
    test_catches();
    test_threads();
    const int Mqs[] = {1, 15, 16, 17, 31, 32, 33, 100}, Tks[] = {1, 15, 16, 17, 33, 100, 448};
    const int dhs[] = {16, 48, 64, 80};
    for (size_t a = 0; a < sizeof Mqs / sizeof Mqs[0]; a++)
        for (size_t b = 0; b < sizeof Tks / sizeof Tks[0]; b++)
            for (size_t c = 0; c < sizeof dhs / sizeof dhs[0]; c++) {
                attn_case(Mqs[a], Tks[b], dhs[c], (float)(1.0 / sqrt((double)dhs[c])), 1);
                attn_case(Mqs[a], Tks[b], dhs[c], 1.0f, 1);
            }
    attn_case(1500, 1, 64, 0.125f, 1);
    attn_case(1500, 17, 64, 1.0f, 1);
    attn_case(1500, 448, 80, (float)(1.0 / sqrt(80.0)), 1);
    attn_case(1, 1500, 64, 1.0f, 1);
    attn_case(33, 1500, 64, 0.125f, 1);
    attn_case(100, 1500, 48, -0.3f, 1);
    attn_case(1500, 1500, 64, 0.125f, 0);
    attn_case(33, 4100, 64, 0.125f, 1);
    attn_case(17, 100, 256, 0.0625f, 1);
    attn_case(15, 33, 1, 1.0f, 1);
    attn_case(40, 70, 17, (float)(1.0 / sqrt(17.0)), 1);
    for (int l = 0; l < 2; l++)
        printf("scale %s: worst |o - ref| C %.3g, vdpbf16ps %.3g, AMX %.3g (bound %g + flips); "
               "|o - k_attention_ref| C %.3g, vdpbf16ps %.3g, AMX %.3g (tol %g)\n",
               l ? "1" : "1/sqrt(dh)", g_worst_ref[0][l], g_worst_ref[1][l], g_worst_ref[2][l],
               TOL_ACC, g_worst_f32[0][l], g_worst_f32[1][l], g_worst_f32[2][l],
               l ? TOL_BF_LARGE : TOL_BF_SMALL);
    printf("worst |o - ref| / bound: C %.3g, vdpbf16ps %.3g, AMX %.3g; worst |o - ref| where no "
           "weight is at risk %.3g; %ld of %ld weights within 2^-14 of a bf16 rounding change\n",
           g_ratio[0], g_ratio[1], g_ratio[2], g_worst_clean, g_risk, g_outputs);
    return check_done();
}
