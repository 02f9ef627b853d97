/* test_screen.c - greedy choices over screened logits (decode/batch.c's
 * refinement, models/screen.h's contract) with a hand-made model: its exact
 * logits are a function of (sequence, position, previous token), with
 * near-ties at the top of every row; its screened logits move every value by
 * up to the bound it reports, against the choice (the best pushed down, its
 * rivals up), so that the screened argmax is wrong in most rows. The greedy
 * tokens over the screened model must be those over the exact one, under
 * rules that suppress, ban, penalise and force tokens; a sampled decode (whose
 * rows are refined whole) must equal the exact one draw for draw; and the
 * refinement must ask for few tokens a row. */
#include "check.h"

#include "decode/search.h"
#include "decode/task.h"
#include "kern/q8.h"
#include "models/screen.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define V 3000
#define B 3
#define N_NEW 14
#define ERR 0.01f
#define EOT 7

typedef struct {
    int screened;            /* report ERR and write screened values */
    int n_rows, seq[B], pos[B], prev[B];   /* the last call's rows */
    int len[B];              /* positions fed per sequence */
    long asked, rows;        /* ids refined, screened rows refined */
} fake;

static uint32_t mix(uint32_t h) {
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

static float unit(uint32_t h) { return (float)(mix(h) >> 8) / (float)(1 << 24); }

/* The exact logit of token v after prev at (seq, pos): values in [-4, 2),
 * and 6 tokens near 3, within ERR / 2 of each other (the near-ties). */
static float exact(int seq, int pos, int prev, int v) {
    uint32_t key = (uint32_t)(seq * 7919 + pos * 104729 + prev * 131);
    int tie0 = (int)(mix(key) % (V - 8));
    if (v >= tie0 && v < tie0 + 6) return 3.0f + 0.5f * ERR * unit(key + (uint32_t)v * 3u);
    return -4.0f + 6.0f * unit(key ^ (uint32_t)(v * 2654435761u));
}

/* Screened: every value moved by up to ERR, against the exact order: the
 * row's exact best down by 0.99 ERR, the others up by 0.99 ERR. */
static void row_out(fake *f, int i, float *lg) {
    int s = f->seq[i], p = f->pos[i], q = f->prev[i], best = 0;
    for (int v = 0; v < V; v++) {
        lg[v] = exact(s, p, q, v);
        if (lg[v] > lg[best]) best = v;
    }
    if (!f->screened) return;
    for (int v = 0; v < V; v++) lg[v] += (v == best ? -0.99f : 0.99f) * ERR;
}

static void rows_out(fake *f, float *lg) {
    for (int i = 0; i < f->n_rows; i++) row_out(f, i, lg + (size_t)i * V);
}

static encdec_status feed(void *ctx, int seq, const int *t, int n, float *lg) {
    fake *f = ctx;
    f->len[seq] = n;
    f->n_rows = 1;
    f->seq[0] = seq, f->pos[0] = n, f->prev[0] = t[n - 1];
    rows_out(f, lg);
    return ENCDEC_OK;
}

static encdec_status feed_n(void *ctx, int n_seq, const int *seq, const int *t, int n, float *lg) {
    fake *f = ctx;
    f->n_rows = n_seq;
    for (int i = 0; i < n_seq; i++) {
        f->len[seq[i]] = n;
        f->seq[i] = seq[i], f->pos[i] = n, f->prev[i] = t[n - 1];
    }
    rows_out(f, lg);
    return ENCDEC_OK;
}

static encdec_status step(void *ctx, int n, const int *seq, const int *tok, float *lg) {
    fake *f = ctx;
    f->n_rows = n;
    for (int i = 0; i < n; i++) {
        f->seq[i] = seq[i], f->pos[i] = ++f->len[seq[i]], f->prev[i] = tok[i];
    }
    rows_out(f, lg);
    return ENCDEC_OK;
}

static float logit_err(void *ctx, int row) {
    fake *f = ctx;
    CHECK(row >= 0 && row < f->n_rows);
    return f->screened ? ERR : 0;
}

static void logit_exact(void *ctx, int row, const int *ids, int n, float *out) {
    fake *f = ctx;
    for (int k = 0; k < n; k++) out[k] = exact(f->seq[row], f->pos[row], f->prev[row], ids[k]);
    f->asked += n;
    f->rows++;
}

typedef struct {
    int tok[B * N_NEW], len[B];
    float lp[B * N_NEW], score[B];
} outs;

/* One decode of B sequences (greedy, or sampled with seed 5) over f. */
static void decode(fake *f, const dec_rules *r, int sample, outs *o) {
    dec_model dm = {f, V, feed, step, NULL, feed_n, NULL, logit_err, logit_exact};
    int prompt = 1;
    memset(f->len, 0, sizeof f->len);
    if (sample) {
        dec_sample_params sp = {0.7f, 0, 1.0f, 5, 0};
        CHECK_EQ_INT(dec_sample(&dm, B, 1, &prompt, 1, r, &sp, o->tok, o->lp, o->len, o->score),
                     ENCDEC_OK);
    } else {
        CHECK_EQ_INT(dec_greedy_batch(&dm, B, &prompt, 1, r, o->tok, o->lp, o->len, o->score),
                     ENCDEC_OK);
    }
}

/* How many of the rows the exact decode chose from the screened argmax
 * misses: the test's power (the refinement is what gets them right). */
static int raw_misses(const outs *ref) {
    fake f = {1};
    int miss = 0;
    float lg[V];
    for (int s = 0; s < B; s++)
        for (int t = 0; t < ref->len[s]; t++) {
            f.n_rows = 1;
            f.seq[0] = s, f.pos[0] = t + 1, f.prev[0] = t ? ref->tok[s * N_NEW + t - 1] : 1;
            row_out(&f, 0, lg);
            int best = 0;
            for (int v = 1; v < V; v++) best = lg[v] > lg[best] ? v : best;
            miss += best != ref->tok[s * N_NEW + t];
        }
    return miss;
}

static void compare(const char *what, const dec_rules *r, int sample) {
    fake ex = {0}, sc = {1};
    outs a, b;
    decode(&ex, r, sample, &a);
    decode(&sc, r, sample, &b);
    int bad = 0, n = 0;
    double lp_worst = 0;
    for (int s = 0; s < B; s++) {
        bad += a.len[s] != b.len[s];
        for (int t = 0; t < a.len[s] && t < b.len[s]; t++, n++) {
            bad += a.tok[s * N_NEW + t] != b.tok[s * N_NEW + t];
            double d = fabs((double)a.lp[s * N_NEW + t] - b.lp[s * N_NEW + t]);
            lp_worst = d > lp_worst ? d : lp_worst;
        }
    }
    int miss = sample ? 0 : raw_misses(&a);
    printf("%s: %d tokens, %d differ; the screened argmax alone would miss %d; log-probs within "
           "%.2g; %.1f ids refined a row (%ld rows)\n",
           what, n, bad, miss, lp_worst, sc.rows ? (double)sc.asked / sc.rows : 0.0, sc.rows);
    CHECK_EQ_INT(bad, 0);
    CHECK(sc.rows > 0);
    CHECK(ex.rows == 0);
    if (sample) {   /* whole rows: exact values, the same draws */
        CHECK(sc.asked == sc.rows * V);
        CHECK(lp_worst < 1e-6);
    } else {
        CHECK(miss > n / 2);
        CHECK(sc.asked <= sc.rows * 16);
        CHECK(lp_worst <= 2 * ERR);
    }
}

/* models/screen.h's own contract on a small matrix: under the size
 * threshold or with a weight that is not finite there is no screen; with
 * one, a screened row is within its bound of md_screen_exact's values, with
 * a bias and without; a logit far beyond the row's scale (a masking bias of
 * -1e30, as CTranslate2's Marian conversions hold) or not finite is made
 * exact and leaves the bound as it was; a row whose activations are not
 * finite gets an infinite bound (every token refined). */
static void screen_contract(void) {
    enum { N = 300, K = 40 };
    static float w[N * K], x[K], y[N], ex[N];
    static int ids[N];
    for (int i = 0; i < N * K; i++) w[i] = 0.2f * (unit((uint32_t)i * 7u) - 0.5f);
    for (int k = 0; k < K; k++) x[k] = 3.0f * (unit((uint32_t)k + 99991u) - 0.5f);
    for (int n = 0; n < N; n++) ids[n] = n;
    ed_wtab *wt = wtab_new();
    k_w kw = {w, K_F32, 0};
    md_screen sc;
    CHECK_EQ_INT(md_screen_build(wt, kw, N, K, (size_t)N * K + 1, &sc), ENCDEC_OK);
    CHECK(sc.w.p == NULL);   /* under the threshold */
    CHECK_EQ_INT(md_screen_build(wt, kw, N, K, 0, &sc), ENCDEC_OK);
    if (!sc.w.p) {
        printf("screen contract: SKIP (no vector int8 kernel here)\n");
        wtab_free(wt);
        return;
    }
    CHECK(sc.w.t == K_Q8);
    k_q8 q = {sc.w.p, N, K};
    void *scratch = malloc(k_q8_scratch_bytes(1, K));
    static float b[N];
    for (int n = 0; n < N; n++) b[n] = 2.0f * (unit((uint32_t)n + 4242u) - 0.5f);
    float err0 = 0;
    for (int with_b = 0; with_b < 2; with_b++) {
        const float *bb = with_b ? b : NULL;
        CHECK(k_matmul_q8(y, N, x, K, q, bb, 1, 0, N, scratch) >= 1);
        md_screen_exact(kw, bb, x, N, K, ids, N, ex);
        float err = md_screen_err(&sc, kw, bb, x, y);
        double worst = 0;
        for (int n = 0; n < N; n++) worst = fmax(worst, fabs((double)y[n] - ex[n]) / err);
        printf("screen contract%s: bound %.3g, the worst logit at %.3f of it\n", with_b ? " (a bias)" : "",
               err, worst);
        CHECK(err > 0 && worst <= 1.0 && worst > 0);
        err0 = err;
    }
    /* masks: -1e30 and -inf in the bias, +inf as a screened value */
    b[11] = -1e30f, b[12] = -INFINITY;
    CHECK(k_matmul_q8(y, N, x, K, q, b, 1, 0, N, scratch) >= 1);
    md_screen_exact(kw, b, x, N, K, ids, N, ex);
    y[7] = INFINITY;
    float err = md_screen_err(&sc, kw, b, x, y);
    CHECK(err > 0 && err <= err0 * 1.001f);
    CHECK(memcmp(&y[7], &ex[7], sizeof(float)) == 0 && memcmp(&y[11], &ex[11], sizeof(float)) == 0 &&
          memcmp(&y[12], &ex[12], sizeof(float)) == 0);
    double worst = 0;
    for (int n = 0; n < N; n++)
        if (n != 12) worst = fmax(worst, fabs((double)y[n] - ex[n]) / err);
    printf("screen contract, masked logits made exact: bound %.3g, the worst logit at %.3f of it\n", err, worst);
    CHECK(worst <= 1.0);
    free(scratch);
    x[3] = NAN;
    CHECK(md_screen_err(&sc, kw, b, x, y) == INFINITY);
    x[3] = 0;
    w[5 * K + 2] = INFINITY;   /* a weight loaded unchecked */
    CHECK_EQ_INT(md_screen_build(wt, kw, N, K, 0, &sc), ENCDEC_OK);
    CHECK(sc.w.p == NULL);
    wtab_free(wt);
}

int main(void) {
    screen_contract();
    int sup[3] = {11, 12, 13};
    dec_rules plain = {NULL, 0, NULL, 0, EOT, N_NEW};
    compare("greedy, no rules", &plain, 0);

    dec_rules rules = {sup, 3, NULL, 0, EOT, N_NEW};
    rules.repetition_penalty = 1.3f;
    rules.no_repeat_ngram = 2;
    rules.min_new = 3;
    compare("greedy, suppressions, penalty, n-gram ban, min length", &rules, 0);

    rules.repetition_penalty = 0.8f;   /* a penalty below 1 raises repeated tokens */
    rules.force_last = 1;
    rules.force_last_id = EOT;
    compare("greedy, penalty 0.8, forced last token", &rules, 0);

    /* the exact best of every first row suppressed: the choice falls to a rival */
    static int top[B];
    for (int s = 0; s < B; s++) {
        int best = 0;
        for (int v = 1; v < V; v++) best = exact(s, 1, 1, v) > exact(s, 1, 1, best) ? v : best;
        top[s] = best;
    }
    dec_rules begin = {NULL, 0, top, B, EOT, N_NEW};
    compare("greedy, the best first tokens suppressed", &begin, 0);

    compare("sampled, temperature 0.7", &rules, 1);
    return check_done();
}
