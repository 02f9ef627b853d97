/* test_sample.c - sampling: reproducible per seed and independent of the
 * batch, equal to greedy in its limits (top_k 1, tiny top_p, temperature
 * near 0), and drawing from the right filtered distribution (chi-square
 * against a reference filter written the plain way, by sorting); the
 * random generator against xoshiro256**'s published first outputs. */
#include "check.h"
#include "decode/rng.h"
#include "decode/search.h"
#include "base/err.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EOS 3
#define MAX_SEQ 16
#define N_DRAW 20000

/* A model whose logits depend on a hash of (the sequence's input, its
 * tokens): distinct per row, eos likelier with length. Or, with fixed set,
 * the same logits at every position. */
typedef struct {
    int V, per_group;           /* vocabulary; sequences per input */
    uint64_t seed[MAX_SEQ];     /* [n_groups] the input of group g */
    uint64_t h[MAX_SEQ];        /* [n_seq] hash of the history */
    int len[MAX_SEQ];
    const float *fixed;         /* [V] or NULL */
    int fail_at, n_calls;
} fake;

static uint64_t mix(uint64_t h, int tok) {
    h = (h ^ (uint64_t)(tok + 1)) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

static void fake_logits(const fake *f, int s, float *out) {
    if (f->fixed) {
        memcpy(out, f->fixed, f->V * sizeof *out);
        return;
    }
    int a = (int)(f->h[s] % 4001), b = 1 + (int)((f->h[s] >> 17) % 4000);
    for (int v = 0; v < f->V; v++) out[v] = (float)(((a + (long long)b * v) % 4001 - 2000) / 512.0);
    if (EOS < f->V) out[EOS] = (float)(((f->h[s] >> 40) % 1024) / 1024.0 - 2 + f->len[s] / 3.0);
}

static encdec_status fake_feed(void *ctx, int s, const int *tok, int n, float *logits) {
    fake *f = ctx;
    if (++f->n_calls == f->fail_at) return ed_fail(ENCDEC_ERR_IO, "fake: call fails");
    f->h[s] = f->seed[s / f->per_group];
    f->len[s] = n;
    for (int i = 0; i < n; i++) f->h[s] = mix(f->h[s], tok[i]);
    fake_logits(f, s, logits);
    return ENCDEC_OK;
}

static encdec_status fake_step(void *ctx, int n, const int *seq, const int *tok, float *logits) {
    fake *f = ctx;
    if (++f->n_calls == f->fail_at) return ed_fail(ENCDEC_ERR_IO, "fake: call fails");
    for (int i = 0; i < n; i++) {
        f->h[seq[i]] = mix(f->h[seq[i]], tok[i]);
        f->len[seq[i]]++;
        fake_logits(f, seq[i], logits + (size_t)i * f->V);
    }
    return ENCDEC_OK;
}

static dec_model fake_init(fake *f, int V, int per_group, int n_groups, const uint64_t *seeds) {
    memset(f, 0, sizeof *f);
    f->V = V;
    f->per_group = per_group;
    for (int g = 0; g < n_groups; g++) f->seed[g] = seeds[g];
    return (dec_model){f, V, fake_feed, fake_step, NULL};
}

typedef struct {
    int tok[MAX_SEQ * 32], len[MAX_SEQ];
    float lp[MAX_SEQ * 32], score[MAX_SEQ];
} outs;

/* par_for on 3 threads, rows dealt round-robin: a step's picks at once,
 * as the engine's pool runs them (each touches its own row and scratch) */
typedef struct {
    void (*fn)(void *arg, int i);
    void *arg;
    int n, ith;
} par_part;

static void *par_thread(void *p) {
    par_part *q = p;
    for (int i = q->ith; i < q->n; i += 3) q->fn(q->arg, i);
    return NULL;
}

static void par_threads(void *ctx, int n, void (*fn)(void *arg, int i), void *arg) {
    (void)ctx;
    pthread_t th[2];
    par_part part[3];
    for (int k = 0; k < 3; k++) part[k] = (par_part){fn, arg, n, k};
    int made[2];
    for (int k = 0; k < 2; k++) made[k] = pthread_create(&th[k], NULL, par_thread, &part[k + 1]) == 0;
    par_thread(&part[0]);
    for (int k = 0; k < 2; k++) {
        if (made[k]) pthread_join(th[k], NULL);
        else par_thread(&part[k + 1]);
    }
}

static int g_threads;   /* run() with par_threads */

static encdec_status run(int n_groups, int per_group, const uint64_t *seeds,
                         const dec_sample_params *sp, int max_new, outs *o) {
    fake f;
    dec_model dm = fake_init(&f, 64, per_group, n_groups, seeds);
    if (g_threads) dm.par_for = par_threads;
    int prompt[2] = {1, 5}, sup[1] = {7};
    dec_rules r = {sup, 1, NULL, 0, EOS, max_new};
    memset(o, 0, sizeof *o);
    return dec_sample(&dm, n_groups, per_group, prompt, 2, &r, sp, o->tok, o->lp, o->len, o->score);
}

static int same_seq(const outs *a, int i, const outs *b, int k, int max_new) {
    return a->len[i] == b->len[k] &&
           memcmp(a->tok + i * max_new, b->tok + k * max_new, a->len[i] * sizeof(int)) == 0 &&
           memcmp(a->lp + i * max_new, b->lp + k * max_new, a->len[i] * sizeof(float)) == 0;
}

static void test_rng(void) {
    dec_rng g = {{1, 2, 3, 4}};
    CHECK(dec_rng_next(&g) == 11520u);
    CHECK(dec_rng_next(&g) == 0u);
    CHECK(dec_rng_next(&g) == 1509978240u);
    CHECK(dec_rng_next(&g) == 1215971899390074240u);
    dec_rng a, b, c;
    dec_rng_seed(&a, 42, 0);
    dec_rng_seed(&b, 42, 0);
    dec_rng_seed(&c, 42, 1);
    int same = 1, differ = 0;
    double sum = 0, lo = 1, hi = 0;
    for (int i = 0; i < 100000; i++) {
        double u = dec_rng_uniform(&a), w = dec_rng_uniform(&c);
        same &= u == dec_rng_uniform(&b);
        differ += u != w;
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    CHECK(same);
    CHECK(differ > 99990);
    CHECK_NEAR(sum / 100000, 0.5, 0.005);
    CHECK(lo >= 0 && lo < 1e-3 && hi < 1 && hi > 0.999);
}

static void test_reproducible(void) {
    static outs a, b, c;
    uint64_t seeds[2] = {11, 12};
    dec_sample_params sp = {1.0f, 0, 1.0f, 1234};
    CHECK_EQ_INT(run(2, 3, seeds, &sp, 24, &a), ENCDEC_OK);
    CHECK_EQ_INT(run(2, 3, seeds, &sp, 24, &b), ENCDEC_OK);
    for (int i = 0; i < 6; i++) CHECK(same_seq(&a, i, &b, i, 24));
    sp.seed = 1235;
    CHECK_EQ_INT(run(2, 3, seeds, &sp, 24, &c), ENCDEC_OK);
    int differ = 0, in_group = 0, eos_end = 0;
    for (int i = 0; i < 6; i++) {
        differ += !same_seq(&a, i, &c, i, 24);
        in_group += i % 3 && !same_seq(&a, i, &a, i - 1, 24);
        eos_end += a.tok[i * 24 + a.len[i] - 1] == EOS;
        double sum = 0;
        for (int t = 0; t < a.len[i]; t++) {
            CHECK(a.lp[i * 24 + t] <= 0);
            CHECK(a.tok[i * 24 + t] != 7);          /* suppressed */
            sum += a.lp[i * 24 + t];
        }
        CHECK_NEAR(a.score[i], sum, 1e-4);
    }
    CHECK_EQ_INT(differ, 6);
    CHECK_EQ_INT(in_group, 4);  /* a group's streams differ */
    CHECK(eos_end > 0);
}

/* An input's samples do not depend on the batch around it. */
static void test_batch_independent(void) {
    static outs batch, alone, first;
    uint64_t seeds[3] = {21, 22, 23}, last[1] = {23}, swapped[2] = {23, 21};
    dec_sample_params sp = {0.8f, 20, 0.95f, 99};
    CHECK_EQ_INT(run(3, 2, seeds, &sp, 20, &batch), ENCDEC_OK);
    CHECK_EQ_INT(run(1, 2, last, &sp, 20, &alone), ENCDEC_OK);
    CHECK_EQ_INT(run(2, 2, swapped, &sp, 20, &first), ENCDEC_OK);
    for (int j = 0; j < 2; j++) {
        CHECK(same_seq(&batch, 4 + j, &alone, j, 20));
        CHECK(same_seq(&batch, 4 + j, &first, j, 20));
        CHECK(same_seq(&batch, j, &first, 2 + j, 20));
    }
}

/* The picks of a step on three threads at once: every sequence the same,
 * bit for bit, as picked one after another (plain temperature; top-k and
 * top-p, whose scratch is per sequence). */
static void test_threads(void) {
    static outs serial, threaded;
    uint64_t seeds[3] = {41, 42, 43};
    const dec_sample_params sps[3] = {{0.7f, 0, 1.0f, 5}, {1.3f, 9, 0.9f, 6}, {1.0f, 0, 0.8f, 7}};
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_INT(run(3, 4, seeds, &sps[k], 20, &serial), ENCDEC_OK);
        g_threads = 1;
        CHECK_EQ_INT(run(3, 4, seeds, &sps[k], 20, &threaded), ENCDEC_OK);
        g_threads = 0;
        for (int i = 0; i < 12; i++) CHECK(same_seq(&serial, i, &threaded, i, 20));
    }
}

/* The limits where sampling must be greedy. */
static void test_greedy_limits(void) {
    static outs g, s;
    uint64_t seeds[2] = {31, 32};
    fake f;
    dec_model dm = fake_init(&f, 64, 3, 2, seeds);
    int prompt[2] = {1, 5}, sup[1] = {7};
    dec_rules r = {sup, 1, NULL, 0, EOS, 24};
    CHECK_EQ_INT(dec_greedy_batch(&dm, 6, prompt, 2, &r, g.tok, g.lp, g.len, g.score), ENCDEC_OK);
    dec_sample_params limits[3] = {{1.0f, 1, 1.0f, 5}, {1.0f, 0, 1e-6f, 6}, {1e-5f, 0, 1.0f, 7}};
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_INT(run(2, 3, seeds, &limits[k], 24, &s), ENCDEC_OK);
        for (int i = 0; i < 6; i++) {
            CHECK_EQ_INT(s.len[i], g.len[i]);
            CHECK(memcmp(s.tok + i * 24, g.tok + i * 24, s.len[i] * sizeof(int)) == 0);
            for (int t = 0; t < s.len[i]; t++) CHECK_NEAR(s.lp[i * 24 + t], 0, 1e-6);
        }
    }
}

/* ---- the distribution ---- */

static const float P[8] = {0.3f, 0.2f, 0.15f, 0.12f, 0.1f, 0.08f, 0.05f, 0};

/* Reference filter, the plain way: temperature, top-k by sorting, top-p by
 * walking the sorted probabilities. want[v]: the probability of v. */
static void reference(const dec_sample_params *sp, double *want) {
    double x[8], p[8];
    int order[8];
    for (int v = 0; v < 8; v++) {
        x[v] = P[v] > 0 ? log(P[v]) / sp->temperature : -INFINITY;
        order[v] = v;  /* P is already sorted, most likely first */
    }
    for (int k = sp->top_k; k > 0 && k < 8; k++) x[order[k]] = -INFINITY;
    double z = 0;
    for (int v = 0; v < 8; v++) z += exp(x[v]);
    for (int v = 0; v < 8; v++) p[v] = exp(x[v]) / z;
    double above = 0;
    for (int k = 0; k < 8; k++) {
        if (above >= sp->top_p) x[order[k]] = -INFINITY;
        above += p[order[k]];
    }
    z = 0;
    for (int v = 0; v < 8; v++) z += exp(x[v]);
    for (int v = 0; v < 8; v++) want[v] = exp(x[v]) / z;
}

/* 20000 draws from one stream; chi-square against the reference at the
 * 0.001 level, zero-probability tokens never drawn, lps exact. */
static void test_distribution(void) {
    static const double chi_crit[8] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};
    static int tok[N_DRAW], len[1];
    static float lp[N_DRAW], score[1], logits[8];
    const dec_sample_params cases[] = {
        {1.0f, 0, 1.0f, 1}, {2.0f, 0, 1.0f, 2}, {0.5f, 0, 1.0f, 3}, {1.0f, 3, 1.0f, 4},
        {1.0f, 0, 0.6f, 5}, {1.0f, 0, 0.45f, 6}, {2.0f, 5, 0.7f, 7}, {0.7f, 6, 0.9f, 8},
    };
    for (int v = 0; v < 8; v++) logits[v] = P[v] > 0 ? logf(P[v]) : -INFINITY;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        fake f;
        uint64_t seed[1] = {0};
        dec_model dm = fake_init(&f, 8, 1, 1, seed);
        f.fixed = logits;
        int prompt[1] = {1};
        dec_rules r = {NULL, 0, NULL, 0, -1, N_DRAW};
        CHECK_EQ_INT(dec_sample(&dm, 1, 1, prompt, 1, &r, &cases[c], tok, lp, len, score), ENCDEC_OK);
        CHECK_EQ_INT(len[0], N_DRAW);
        double want[8], chi = 0;
        int count[8] = {0}, df = -1, lp_ok = 1;
        reference(&cases[c], want);
        for (int i = 0; i < N_DRAW; i++) {
            count[tok[i]]++;
            lp_ok &= fabs(lp[i] - log(want[tok[i]])) < 1e-5;
        }
        for (int v = 0; v < 8; v++) {
            if (want[v] == 0) {
                CHECK_EQ_INT(count[v], 0);
                continue;
            }
            double e = want[v] * N_DRAW;
            chi += (count[v] - e) * (count[v] - e) / e;
            df++;
        }
        if (chi >= chi_crit[df])
            fprintf(stderr, "sampling case %zu: chi-square %.2f with %d degrees of freedom\n", c, chi, df);
        CHECK(df >= 1 && chi < chi_crit[df]);
        CHECK(lp_ok);
    }
    /* and the reference itself, for the two top-p cases worked by hand */
    double want[8];
    reference(&cases[4], want);
    CHECK_NEAR(want[2], 0.15 / 0.65, 1e-6);
    CHECK_NEAR(want[3], 0, 0);
    reference(&cases[5], want);
    CHECK_NEAR(want[1], 0.2 / 0.5, 1e-6);
    CHECK_NEAR(want[2], 0, 0);
}

/* A 256k vocabulary with top-k and top-p, and without filters. */
static void test_large_vocab(void) {
    enum { V = 262144 };
    static float logits[V];
    static int tok[8 * 4], len[8];
    static float lp[8 * 4], score[8];
    for (int v = 0; v < V; v++) logits[v] = (float)((v * 7919 % 8191) / 1024.0);
    dec_sample_params sps[3] = {{1.0f, 50, 0.9f, 1}, {1.0f, 0, 0.9f, 2}, {1.0f, 0, 1.0f, 3}};
    for (int k = 0; k < 3; k++) {
        fake f;
        uint64_t seed[2] = {0, 0};
        dec_model dm = fake_init(&f, V, 4, 2, seed);
        f.fixed = logits;
        int prompt[1] = {1};
        dec_rules r = {NULL, 0, NULL, 0, -1, 4};
        CHECK_EQ_INT(dec_sample(&dm, 2, 4, prompt, 1, &r, &sps[k], tok, lp, len, score), ENCDEC_OK);
        for (int i = 0; i < 8 * 4; i++) {
            CHECK(tok[i] >= 0 && tok[i] < V);
            /* top-k 50: the two largest values have 32 tokens each; the
             * 50th largest is the second, and its ties are kept */
            if (k == 0) CHECK(logits[tok[i]] >= 8189 / 1024.0f);
        }
    }
}

/* NaN logits (a broken model) never give a token outside the vocabulary:
 * NaN at every place of a row of 64 (vector lanes and the scalar tail), and
 * a row of NaN alone. */
static void test_nan_logits(void) {
    static float logits[64];
    static int tok[8 * 6], len[8];
    static float lp[8 * 6], score[8];
    for (int at = -1; at < 64; at++) {
        for (int v = 0; v < 64; v++) logits[v] = at < 0 ? NAN : (float)((v * 37 % 64) / 16.0);
        if (at >= 0) logits[at] = NAN;
        fake f;
        uint64_t seed[2] = {3, 4};
        dec_model dm = fake_init(&f, 64, 4, 2, seed);
        f.fixed = logits;
        int prompt[1] = {1};
        dec_rules r = {NULL, 0, NULL, 0, -1, 6};
        dec_sample_params sp = {0.7f, 0, 1.0f, (uint64_t)(at + 2)};
        CHECK_EQ_INT(dec_sample(&dm, 2, 4, prompt, 1, &r, &sp, tok, lp, len, score), ENCDEC_OK);
        for (int i = 0; i < 8 * 6; i++) CHECK(tok[i] >= 0 && tok[i] < 64);
    }
}

static void test_errors(void) {
    static outs o;
    uint64_t seeds[1] = {1};
    dec_sample_params ok = {1.0f, 0, 1.0f, 0};
    CHECK_EQ_INT(dec_sample_params_check(&ok), ENCDEC_OK);
    const struct { dec_sample_params sp; const char *msg; } bad[] = {
        {{0.0f, 0, 1.0f, 0}, "temperature"}, {{-1.0f, 0, 1.0f, 0}, "temperature"},
        {{NAN, 0, 1.0f, 0}, "temperature"}, {{INFINITY, 0, 1.0f, 0}, "temperature"},
        {{1.0f, -1, 1.0f, 0}, "top_k"}, {{1.0f, 0, 0.0f, 0}, "top_p"},
        {{1.0f, 0, 1.5f, 0}, "top_p"}, {{1.0f, 0, NAN, 0}, "top_p"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_STATUS(dec_sample_params_check(&bad[i].sp), ENCDEC_ERR_ARG, bad[i].msg);
        CHECK_STATUS(run(1, 1, seeds, &bad[i].sp, 4, &o), ENCDEC_ERR_ARG, bad[i].msg);
    }
    CHECK_STATUS(dec_sample_params_check(NULL), ENCDEC_ERR_ARG, "parameters");
    CHECK_STATUS(run(0, 1, seeds, &ok, 4, &o), ENCDEC_ERR_ARG, "groups");
    CHECK_STATUS(run(1, 0, seeds, &ok, 4, &o), ENCDEC_ERR_ARG, "groups");
    CHECK_STATUS(run(1, 1, seeds, &ok, 0, &o), ENCDEC_ERR_ARG, "max_new");
    /* a failing seam call (a feed, then a step) comes back as is */
    for (int at = 1; at <= 4; at++) {
        fake f;
        dec_model dm = fake_init(&f, 64, 2, 1, seeds);
        f.fail_at = at;
        int prompt[1] = {1};
        dec_rules r = {NULL, 0, NULL, 0, -1, 8};
        CHECK_STATUS(dec_sample(&dm, 1, 2, prompt, 1, &r, &ok, o.tok, o.lp, o.len, o.score),
                     ENCDEC_ERR_IO, "fake: call fails");
    }
}

int main(void) {
    test_rng();
    test_reproducible();
    test_batch_independent();
    test_threads();
    test_greedy_limits();
    test_distribution();
    test_large_vocab();
    test_nan_logits();
    test_errors();
    return check_done();
}
