/* test_whisper_decode.c - Whisper's decoding rules and strategies against
 * openai-whisper's own code (tests/data/whisper-decode-golden.json, written
 * by tools/golden_whisper_decode.py):
 *   - the timestamp rules (decode/ts_rules.c) on scripted logits: exactly
 *     the entries ApplyTimestampRules sets to -inf;
 *   - greedy and beam search with patience (decode/beam_ow.c) with those
 *     rules, over a fake model whose logits hash the whole history (the
 *     oracle defines the same model): the chosen tokens exactly, their sum
 *     of log-probabilities within 1e-4;
 * and, by hand: the loop detector (decode/loop.c) and the stop hook,
 * dec_feed_shared (one prefill for all sequences), sampling's log-probs
 * before temperature (openai-whisper's avg_logprob).
 */
#include "check.h"
#include "fakelm.h"

#include "base/err.h"
#include "base/json.h"
#include "decode/loop.h"
#include "decode/search.h"
#include "decode/ts_rules.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXV 80
#define MAXS 16
#define MAXH 64

static int V_, EOT_, TS_;

/* ---- the fake model: logits from the hash of [seed] + history ---- */

typedef struct {
    int hist[MAXS][MAXH], len[MAXS], seed;
    int n_feed, n_feed_tokens, n_step, n_reorder;
} fake;

static void fake_row(const fake *f, int s, float *out) {
    uint64_t h = fakelm_hash(f->hist[s], f->len[s]);
    int a = (int)(h % 4001), b = 1 + (int)((h >> 17) % 4000);
    for (int v = 0; v < V_; v++) {
        double x = ((a + (long long)b * v) % 4001 - 2000) / 512.0;
        out[v] = (float)(v >= TS_ ? x - 1.5 : x);
    }
    out[EOT_] = (float)((2.0 * ((h >> 40) % 2048) + 1 - 2048) / 1024 + f->len[s] / 8.0);
}

static encdec_status fake_feed(void *ctx, int s, const int *tok, int n, float *logits) {
    fake *f = ctx;
    f->n_feed++;
    f->n_feed_tokens += n;
    for (int i = 0; i < n; i++) f->hist[s][f->len[s]++] = tok[i];
    fake_row(f, s, logits);
    return ENCDEC_OK;
}

static encdec_status fake_step(void *ctx, int n, const int *seq, const int *tok, float *logits) {
    fake *f = ctx;
    f->n_step++;
    for (int i = 0; i < n; i++) {
        if (f->len[seq[i]] >= MAXH) return ed_fail(ENCDEC_ERR_ARG, "fake: history full");
        f->hist[seq[i]][f->len[seq[i]]++] = tok[i];
        fake_row(f, seq[i], logits + (size_t)i * V_);
    }
    return ENCDEC_OK;
}

static encdec_status fake_reorder(void *ctx, int n, const int *seq, const int *src) {
    fake *f = ctx;
    static int copy[MAXS][MAXH], clen[MAXS];
    f->n_reorder++;
    for (int i = 0; i < n; i++) {
        memcpy(copy[i], f->hist[src[i]], sizeof copy[i]);
        clen[i] = f->len[src[i]];
    }
    for (int i = 0; i < n; i++) {
        memcpy(f->hist[seq[i]], copy[i], sizeof copy[i]);
        f->len[seq[i]] = clen[i];
    }
    return ENCDEC_OK;
}

static dec_model fake_model(fake *f, int seed) {
    memset(f, 0, sizeof *f);
    f->seed = seed;
    for (int s = 0; s < MAXS; s++) f->hist[s][f->len[s]++] = seed;
    return (dec_model){f, V_, fake_feed, fake_step, fake_reorder, NULL, NULL};
}

static int ints(const cJSON *a, int *out, int cap) {
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) if (n < cap) out[n++] = e->valueint;
    return n;
}

/* ---- the cases ---- */

static void test_ts_rules(const cJSON *cases, const dec_ts_rules *ts) {
    int n_cases = 0, bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        int gen[16], masked[MAXV], n = ints(cJSON_GetObjectItem(c, "gen"), gen, 16);
        int nm = ints(cJSON_GetObjectItem(c, "masked"), masked, MAXV);
        float x[MAXV], x0[MAXV];
        const cJSON *lg = cJSON_GetObjectItem(c, "logits");
        for (int v = 0; v < V_; v++) x[v] = x0[v] = (float)cJSON_GetArrayItem(lg, v)->valuedouble;
        dec_ts_apply(ts, x, V_, gen, n);
        char want[MAXV] = {0};
        for (int i = 0; i < nm; i++) want[masked[i]] = 1;
        int ok = 1;
        for (int v = 0; v < V_; v++) ok &= want[v] ? x[v] == -INFINITY : x[v] == x0[v];
        if (!ok) fprintf(stderr, "timestamp rules case %d differs\n", n_cases);
        bad += !ok;
        n_cases++;
    }
    printf("timestamp rules: %d cases, %d differ from ApplyTimestampRules\n", n_cases, bad);
    CHECK(n_cases >= 50);
    CHECK_EQ_INT(bad, 0);
}

static void test_decode(const cJSON *cases, const dec_ts_rules *ts) {
    int n_cases = 0, bad = 0;
    double worst = 0;
    const cJSON *c;
    dec_hook hook = dec_ts_hook(ts);
    cJSON_ArrayForEach(c, cases) {
        int prompt[8], sup[8], want[MAXH];
        int np = ints(cJSON_GetObjectItem(c, "prompt"), prompt, 8);
        int ns = ints(cJSON_GetObjectItem(c, "suppress"), sup, 8);
        int nw = ints(cJSON_GetObjectItem(c, "tokens"), want, MAXH);
        int beam = cJSON_GetObjectItem(c, "beam")->valueint;
        int max_new = cJSON_GetObjectItem(c, "max_new")->valueint;
        dec_rules r = {sup, ns, NULL, 0, EOT_, max_new,
                       cJSON_IsTrue(cJSON_GetObjectItem(c, "timestamps")) ? &hook : NULL};
        fake f;
        dec_model dm = fake_model(&f, cJSON_GetObjectItem(c, "seed")->valueint);
        int W = beam ? beam : 1, tok[MAXS * MAXH], len[MAXS];
        float logits[MAXS * MAXV], lp[MAXS * MAXH], sum[MAXS];
        CHECK_EQ_INT(dec_feed_shared(&dm, W, prompt, np, logits), ENCDEC_OK);
        CHECK_EQ_INT(f.n_feed, 1);   /* the prompt once, shared */
        encdec_status st;
        if (beam) {
            dec_ow_beam_params bp = {beam, (float)cJSON_GetObjectItem(c, "patience")->valuedouble, -1};
            st = dec_beam_ow(&dm, logits, &r, &bp, tok, lp, len, sum);
        } else {
            st = dec_greedy_fed(&dm, 1, logits, &r, tok, lp, len, sum);
        }
        CHECK_EQ_INT(st, ENCDEC_OK);
        int n = len[0] - (len[0] > 0 && tok[len[0] - 1] == EOT_);
        int ok = n == nw;
        for (int i = 0; ok && i < n; i++) ok = tok[i] == want[i];
        double d = fabs(sum[0] - cJSON_GetObjectItem(c, "sum_logprob")->valuedouble);
        worst = fmax(worst, d);
        if (!ok || d > 1e-4) {
            fprintf(stderr, "decode case %d (beam %d): got %d tokens, sum %.6f; want %d, %.6f\n",
                    n_cases, beam, n, sum[0], nw, cJSON_GetObjectItem(c, "sum_logprob")->valuedouble);
            bad++;
        }
        n_cases++;
    }
    printf("greedy / beam search: %d cases, %d differ from openai-whisper; sum |diff| %.2g\n",
           n_cases, bad, worst);
    CHECK(n_cases >= 40);
    CHECK_EQ_INT(bad, 0);
}

static void repeat_row(float *x) {
    for (int v = 0; v < V_; v++) x[v] = v == 7 ? 5.0f : 0.0f;
}

static encdec_status repeat_feed(void *ctx, int s, const int *tok, int n, float *logits) {
    repeat_row(logits);
    return ENCDEC_OK;
}

static encdec_status repeat_step(void *ctx, int n, const int *seq, const int *tok, float *logits) {
    for (int i = 0; i < n; i++) repeat_row(logits + (size_t)i * V_);
    return ENCDEC_OK;
}

/* The periodic tail: by hand, and through the stop hook of greedy. */
static int stop_loops(const void *ctx, const int *gen, int n) {
    int period, span = dec_repeat_tail(gen, n, *(const int *)ctx, 64, &period);
    return span >= 12 && span >= 3 * period;
}

static void test_loop(void) {
    int a[] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}, p;
    CHECK_EQ_INT(dec_repeat_tail(a, 11, 100, 64, &p), 11);   /* period 3, 3 2/3 times */
    CHECK_EQ_INT(p, 3);
    int b[] = {5, 6, 7, 8};
    CHECK_EQ_INT(dec_repeat_tail(b, 4, 100, 64, &p), 0);
    int c[] = {9, 9, 9, 9, 9};
    CHECK_EQ_INT(dec_repeat_tail(c, 5, 100, 64, &p), 5);
    CHECK_EQ_INT(p, 1);
    /* timestamps (>= text_end) between the repeats do not hide the loop */
    int d[] = {4, 200, 5, 201, 4, 202, 5, 203, 4, 204, 5};
    CHECK_EQ_INT(dec_repeat_tail(d, 11, 100, 64, &p), 6);
    CHECK_EQ_INT(p, 2);
    CHECK_EQ_INT(dec_repeat_tail(d, 11, 100, 1, &p), 0);    /* longer than max_period */
    CHECK_EQ_INT(dec_repeat_tail(NULL, 0, 100, 64, &p), 0);

    /* a model that says token 7 forever: the hook stops greedy at the 12th */
    int tok[MAXH], len[1], text_end = 20, prompt[1] = {21};
    float logits[MAXV], lp[MAXH], sum[1];
    dec_model dm = {NULL, V_, repeat_feed, repeat_step, NULL, NULL, NULL};
    dec_hook h = {NULL, stop_loops, &text_end};
    dec_rules r = {NULL, 0, NULL, 0, EOT_, 40, &h};
    CHECK_EQ_INT(dm.feed(dm.ctx, 0, prompt, 1, logits), ENCDEC_OK);
    CHECK_EQ_INT(dec_greedy_fed(&dm, 1, logits, &r, tok, lp, len, sum), ENCDEC_OK);
    CHECK_EQ_INT(len[0], 12);   /* no eot, before the limit: the caller sees a stop */
    CHECK_EQ_INT(tok[11], 7);
    r.hook = NULL;
    CHECK_EQ_INT(dm.feed(dm.ctx, 0, prompt, 1, logits), ENCDEC_OK);
    CHECK_EQ_INT(dec_greedy_fed(&dm, 1, logits, &r, tok, lp, len, sum), ENCDEC_OK);
    CHECK_EQ_INT(len[0], 40);
}

/* A forced start (the caller fed it after the prompt): every output begins
 * with it at log-prob 0, the rules see it, the limit counts it. */
static void test_forced(const dec_ts_rules *ts) {
    dec_hook hook = dec_ts_hook(ts);
    int forced[3] = {TS_, 4, 9}, prompt[4] = {21, TS_, 4, 9};
    for (int beam = 0; beam <= 3; beam += 3) {
        fake f;
        dec_model dm = fake_model(&f, 77);
        int W = beam ? beam : 1, tok[MAXS * MAXH], len[MAXS];
        float logits[MAXS * MAXV], lp[MAXS * MAXH], sum[MAXS];
        dec_rules r = {NULL, 0, NULL, 0, EOT_, 12, &hook, forced, 3};
        CHECK_EQ_INT(dec_feed_shared(&dm, W, prompt, 4, logits), ENCDEC_OK);
        encdec_status st;
        if (beam) {
            dec_ow_beam_params bp = {beam, 1.0f, -1};
            st = dec_beam_ow(&dm, logits, &r, &bp, tok, lp, len, sum);
        } else {
            st = dec_greedy_fed(&dm, 1, logits, &r, tok, lp, len, sum);
        }
        CHECK_EQ_INT(st, ENCDEC_OK);
        CHECK(len[0] > 3 && len[0] <= 12);
        CHECK(tok[0] == TS_ && tok[1] == 4 && tok[2] == 9 && lp[0] == 0 && lp[2] == 0);
        CHECK(lp[3] < 0);
        r.n_forced = 12;
        CHECK_STATUS(beam ? dec_beam_ow(&dm, logits, &r, &(dec_ow_beam_params){beam, 1.0f, -1}, tok, lp, len, sum)
                          : dec_greedy_fed(&dm, 1, logits, &r, tok, lp, len, sum),
                     ENCDEC_ERR_ARG, "forced tokens leave no room");
    }
}

/* Sampling reports log-probs before temperature when asked. */
static void test_sample_lp(void) {
    fake f;
    dec_model dm = fake_model(&f, 3);
    int prompt[1] = {21}, tok[4 * 8], len[4];
    float logits[4 * MAXV], lp[4 * 8], sc[4], lp2[4 * 8], sc2[4];
    dec_rules r = {NULL, 0, NULL, 0, EOT_, 8, NULL};
    dec_sample_params sp = {0.7f, 0, 1.0f, 42, 1};
    CHECK_EQ_INT(dec_feed_shared(&dm, 4, prompt, 1, logits), ENCDEC_OK);
    CHECK_EQ_INT(f.n_feed, 1);
    CHECK_EQ_INT(f.n_reorder, 1);
    CHECK_EQ_INT(dec_sample_fed(&dm, 1, 4, logits, &r, &sp, tok, lp, len, sc), ENCDEC_OK);
    /* replay each sequence with the fake and recompute log_softmax at T = 1 */
    double worst = 0;
    for (int s = 0; s < 4; s++) {
        fake g;
        dec_model d2 = fake_model(&g, 3);
        float row[MAXV];
        d2.feed(d2.ctx, 0, prompt, 1, row);
        for (int t = 0; t < len[s]; t++) {
            float mx = -INFINITY;
            for (int v = 0; v < V_; v++) mx = fmaxf(mx, row[v]);
            double z = 0;
            for (int v = 0; v < V_; v++) z += exp((double)row[v] - mx);
            double want = row[tok[s * 8 + t]] - mx - log(z);
            worst = fmax(worst, fabs(lp[s * 8 + t] - want));
            int k = tok[s * 8 + t];
            d2.step(d2.ctx, 1, (int[]){0}, &k, row);
        }
    }
    printf("sampling at T = 0.7: log-probs under T = 1, max |diff| %.2g\n", worst);
    CHECK(worst < 1e-5);
    /* the same seed reproduces the samples */
    fake h;
    dm = fake_model(&h, 3);
    CHECK_EQ_INT(dec_feed_shared(&dm, 4, prompt, 1, logits), ENCDEC_OK);
    CHECK_EQ_INT(dec_sample_fed(&dm, 1, 4, logits, &r, &sp, tok, lp2, len, sc2), ENCDEC_OK);
    for (int s = 0; s < 4; s++) CHECK_NEAR(sc2[s], sc[s], 0);
}

int main(void) {
    cJSON *js = NULL;
    if (ed_json_load(ED_TEST_DATA "/whisper-decode-golden.json", &js)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    const cJSON *voc = cJSON_GetObjectItem(js, "vocab");
    V_ = cJSON_GetObjectItem(voc, "n_vocab")->valueint;
    EOT_ = cJSON_GetObjectItem(voc, "eot")->valueint;
    TS_ = cJSON_GetObjectItem(voc, "ts_begin")->valueint;
    dec_ts_rules ts = {TS_, EOT_, cJSON_GetObjectItem(voc, "no_timestamps")->valueint,
                       cJSON_GetObjectItem(voc, "max_initial")->valueint};
    test_ts_rules(cJSON_GetObjectItem(js, "ts_rules"), &ts);
    test_decode(cJSON_GetObjectItem(js, "decode"), &ts);
    test_loop();
    test_forced(&ts);
    test_sample_lp();
    cJSON_Delete(js);
    return check_done();
}
