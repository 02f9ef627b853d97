/* test_beam.c - beam search and batched greedy against Hugging Face
 * transformers' generate() on a fake model (tests/data/beam_golden.json,
 * written by tools/golden_beam.py, which defines the same model), plus how
 * the strategies drive the seam: one step per position for all live
 * sequences, reorders inside a group, finished groups dropping out, errors.
 */
#include "check.h"
#include "fakelm.h"
#include "decode/search.h"
#include "base/err.h"
#include "base/fmap.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EOS 3
#define MAX_SEQ 64
#define MAX_HIST 48
#define MAX_NEW 24
#define MAX_STEPS 64

/* The fake model: logits are a function of a hash of the whole history,
 * which starts with the token standing for the sequence's input (its
 * group's seed); see tools/golden_beam.py. Records how it is driven. */
typedef struct {
    int V, W;                   /* vocabulary; sequences per group */
    int n_seq;                  /* sequences that exist: ids [0, n_seq) */
    int seed[MAX_SEQ];          /* [n_groups] */
    float eos_bonus[MAX_SEQ];   /* [n_groups] added to the eos logit */
    int hist[MAX_SEQ][MAX_HIST], len[MAX_SEQ];
    int n_feed, n_step, n_reorder, bad;
    int step_n[MAX_STEPS];      /* sequences in each step call */
    int step_min_seq[MAX_STEPS];
    int fail_at;                /* > 0: the fail_at-th seam call fails */
    int n_calls;
} fake;

static void fake_logits(const fake *f, int s, float *out) {
    uint64_t h = fakelm_hash(f->hist[s], f->len[s]);
    int a = (int)(h % 4001), b = 1 + (int)((h >> 17) % 4000);
    for (int v = 0; v < f->V; v++) out[v] = (float)(((a + (long long)b * v) % 4001 - 2000) / 512.0);
    if (EOS < f->V)
        out[EOS] = (float)((2.0 * ((h >> 40) % 2048) + 1 - 2048) / 1024 + f->len[s] / 4.0) +
                   f->eos_bonus[s / f->W];
}

static encdec_status fake_fail(fake *f) {
    if (++f->n_calls == f->fail_at) return ed_fail(ENCDEC_ERR_IO, "fake: call %d fails", f->fail_at);
    return ENCDEC_OK;
}

static int seq_ok(const fake *f, int s) {
    return s >= 0 && s < f->n_seq && f->len[s] < MAX_HIST;
}

static encdec_status fake_feed(void *ctx, int s, const int *tok, int n, float *logits) {
    fake *f = ctx;
    f->n_feed++;
    if (fake_fail(f)) return ENCDEC_ERR_IO;
    if (!seq_ok(f, s) || f->len[s] != 1) f->bad++;  /* only the seed so far */
    for (int i = 0; i < n && f->len[s] < MAX_HIST; i++) f->hist[s][f->len[s]++] = tok[i];
    fake_logits(f, s, logits);
    return ENCDEC_OK;
}

/* All sequences of one step must sit at the same position, each once. */
static encdec_status fake_step(void *ctx, int n, const int *seq, const int *tok, float *logits) {
    fake *f = ctx;
    if (fake_fail(f)) return ENCDEC_ERR_IO;
    int lo = seq[0];
    for (int i = 0; i < n; i++) {
        if (!seq_ok(f, seq[i]) || f->len[seq[i]] != f->len[seq[0]]) {
            f->bad++;
            return ed_fail(ENCDEC_ERR_ARG, "fake: bad step");
        }
        for (int k = 0; k < i; k++) f->bad += seq[k] == seq[i];
        lo = seq[i] < lo ? seq[i] : lo;
    }
    if (f->n_step < MAX_STEPS) {
        f->step_n[f->n_step] = n;
        f->step_min_seq[f->n_step] = lo;
    }
    f->n_step++;
    for (int i = 0; i < n; i++) {
        f->hist[seq[i]][f->len[seq[i]]++] = tok[i];
        fake_logits(f, seq[i], logits + (size_t)i * f->V);
    }
    return ENCDEC_OK;
}

/* All at once: every seq[i] takes src[i]'s history as it was before the call. */
static encdec_status fake_reorder(void *ctx, int n, const int *seq, const int *src) {
    fake *f = ctx;
    static int copy[MAX_SEQ][MAX_HIST], clen[MAX_SEQ];
    f->n_reorder++;
    if (fake_fail(f)) return ENCDEC_ERR_IO;
    for (int i = 0; i < n; i++) {
        if (!seq_ok(f, seq[i]) || !seq_ok(f, src[i]) || seq[i] / f->W != src[i] / f->W) {
            f->bad++;
            return ed_fail(ENCDEC_ERR_ARG, "fake: bad reorder");
        }
        for (int k = 0; k < i; k++) f->bad += seq[k] == seq[i];
        memcpy(copy[i], f->hist[src[i]], sizeof copy[i]);
        clen[i] = f->len[src[i]];
    }
    for (int i = 0; i < n; i++) {
        memcpy(f->hist[seq[i]], copy[i], sizeof copy[i]);
        f->len[seq[i]] = clen[i];
    }
    return ENCDEC_OK;
}

/* n_groups groups of W sequences; group g's history starts with seeds[g]. */
static void fake_init(fake *f, int V, int W, int n_groups, const int *seeds) {
    memset(f, 0, sizeof *f);
    f->V = V;
    f->W = W;
    f->n_seq = n_groups * W;
    for (int g = 0; g < n_groups; g++) f->seed[g] = seeds[g];
    for (int s = 0; s < f->n_seq; s++) {
        f->hist[s][0] = seeds[s / W];
        f->len[s] = 1;
    }
}

static dec_model fake_model(fake *f) {
    return (dec_model){f, f->V, fake_feed, fake_step, fake_reorder};
}

/* ---- the goldens ---- */

static int ints(const cJSON *a, int *out, int cap) {
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) if (n < cap) out[n++] = e->valueint;
    return n;
}

static double num(const cJSON *c, const char *key, double dflt) {
    const cJSON *e = cJSON_GetObjectItem(c, key);
    return e ? e->valuedouble : dflt;
}

typedef struct {
    int V, max_new, n_groups, n_prompt, n_sup, n_begin;
    int seeds[8], prompt[8], sup[8], begin[8];
    dec_rules r;
} golden_case;

static void read_case(const cJSON *c, golden_case *k) {
    k->V = (int)num(c, "vocab", 0);
    k->max_new = (int)num(c, "max_new", 0);
    k->n_groups = ints(cJSON_GetObjectItem(c, "seeds"), k->seeds, 8);
    k->n_prompt = ints(cJSON_GetObjectItem(c, "prompt"), k->prompt, 8);
    k->n_sup = ints(cJSON_GetObjectItem(c, "suppress"), k->sup, 8);
    k->n_begin = ints(cJSON_GetObjectItem(c, "begin_suppress"), k->begin, 8);
    k->r = (dec_rules){k->sup, k->n_sup, k->begin, k->n_begin, EOS, k->max_new};
}

/* Sequence i of the outputs against results[i]: tokens exactly, log-probs
 * and score within 1e-4. Prints the first difference. */
static int same_results(const char *what, int which, const cJSON *results, const int *tok,
                        const float *lp, const int *len, const float *score, int max_new) {
    int i = 0;
    const cJSON *res;
    cJSON_ArrayForEach(res, results) {
        int want[MAX_NEW], n = ints(cJSON_GetObjectItem(res, "tokens"), want, MAX_NEW);
        const cJSON *lps = cJSON_GetObjectItem(res, "lps");
        int ok = len[i] == n && fabs(score[i] - num(res, "score", 0)) <= 1e-4;
        for (int t = 0; ok && t < n; t++)
            ok = tok[i * max_new + t] == want[t] &&
                 fabs(lp[i * max_new + t] - cJSON_GetArrayItem(lps, t)->valuedouble) <= 1e-4;
        if (!ok) {
            fprintf(stderr, "%s case %d, sequence %d: got len %d score %.6f [", what, which, i,
                    len[i], score[i]);
            for (int t = 0; t < len[i]; t++) fprintf(stderr, " %d", tok[i * max_new + t]);
            fprintf(stderr, " ], expected len %d score %.6f [", n, num(res, "score", 0));
            for (int t = 0; t < n; t++) fprintf(stderr, " %d", want[t]);
            fprintf(stderr, " ]\n");
            return 0;
        }
        i++;
    }
    return i > 0;
}

static void test_golden_beam(const cJSON *cases) {
    static int tok[MAX_SEQ * MAX_NEW], len[MAX_SEQ];
    static float lp[MAX_SEQ * MAX_NEW], score[MAX_SEQ];
    static fake f;
    int which = 0, n_ok = 0, n_eos_early = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        golden_case k;
        read_case(c, &k);
        dec_beam_params bp = {(int)num(c, "n_beams", 0), (float)num(c, "length_penalty", 1),
                              (int)num(c, "early_stopping", 0), (int)num(c, "n_return", 1)};
        fake_init(&f, k.V, bp.n_beams, k.n_groups, k.seeds);
        dec_model dm = fake_model(&f);
        encdec_status st = dec_beam(&dm, k.n_groups, k.prompt, k.n_prompt, &k.r, &bp, tok, lp,
                                    len, score);
        CHECK_EQ_INT(st, ENCDEC_OK);
        int ok = !st && same_results("beam", which, cJSON_GetObjectItem(c, "results"), tok, lp,
                                     len, score, k.max_new);
        CHECK(ok);
        n_ok += ok;
        /* how the seam was driven: all beams fed, then at most one step per
         * position, each with whole groups, shrinking as groups finish */
        CHECK_EQ_INT(f.bad, 0);
        CHECK_EQ_INT(f.n_feed, k.n_groups * bp.n_beams);
        CHECK(f.n_step <= k.max_new - 1);
        CHECK(f.n_reorder <= f.n_step);
        for (int i = 0; i < f.n_step && i < MAX_STEPS; i++) {
            CHECK(f.step_n[i] % bp.n_beams == 0);
            CHECK(i == 0 || f.step_n[i] <= f.step_n[i - 1]);
        }
        n_eos_early += f.n_step < k.max_new - 1;
        which++;
    }
    CHECK(which >= 50);
    CHECK(n_eos_early > 0);     /* some calls end before max_new: is_done stops them */
    printf("beam goldens: %d of %d cases match transformers\n", n_ok, which);
}

static void test_golden_greedy(const cJSON *cases) {
    static int tok[MAX_SEQ * MAX_NEW], len[MAX_SEQ];
    static float lp[MAX_SEQ * MAX_NEW], score[MAX_SEQ];
    static fake f;
    int which = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        golden_case k;
        read_case(c, &k);
        fake_init(&f, k.V, 1, k.n_groups, k.seeds);
        dec_model dm = fake_model(&f);
        dm.reorder = NULL;
        CHECK_EQ_INT(dec_greedy_batch(&dm, k.n_groups, k.prompt, k.n_prompt, &k.r, tok, lp, len,
                                      score), ENCDEC_OK);
        CHECK(same_results("greedy", which, cJSON_GetObjectItem(c, "results"), tok, lp, len, score,
                           k.max_new));
        CHECK_EQ_INT(f.bad, 0);
        which++;
    }
    CHECK_EQ_INT(which, 5);
}

/* ---- the seam, driven ---- */

/* n_beams = 1 is greedy (early_stopping 0 or 1): same tokens, score = sum
 * / length (no rules). */
static void test_one_beam_is_greedy(void) {
    static int tok[MAX_SEQ * MAX_NEW], gtok[MAX_SEQ * MAX_NEW], len[MAX_SEQ], glen[MAX_SEQ];
    static float lp[MAX_SEQ * MAX_NEW], glp[MAX_SEQ * MAX_NEW], score[MAX_SEQ], gscore[MAX_SEQ];
    static fake f;
    int seeds[4] = {7, 8, 9, 10}, prompt[1] = {1};
    for (int V = 50; V <= 1000; V += 950)
        for (int es = 0; es <= 1; es++) {   /* "never" (2) may look past an eos */
            dec_rules r = {NULL, 0, NULL, 0, EOS, 20};
            dec_beam_params bp = {1, 1.0f, es, 1};
            fake_init(&f, V, 1, 4, seeds);
            dec_model dm = fake_model(&f);
            dm.reorder = NULL;  /* one beam never forks */
            CHECK_EQ_INT(dec_beam(&dm, 4, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_OK);
            fake_init(&f, V, 1, 4, seeds);
            CHECK_EQ_INT(dec_greedy_batch(&dm, 4, prompt, 1, &r, gtok, glp, glen, gscore), ENCDEC_OK);
            for (int s = 0; s < 4; s++) {
                CHECK_EQ_INT(len[s], glen[s]);
                CHECK(memcmp(tok + s * 20, gtok + s * 20, glen[s] * sizeof *tok) == 0);
                CHECK_NEAR(score[s], gscore[s] / glen[s], 1e-5);
            }
        }
}

/* Batched greedy gives each sequence what dec_greedy gives it alone. */
static void test_batch_is_greedy(void) {
    static int tok[MAX_SEQ * MAX_NEW], len[MAX_SEQ], one[MAX_NEW];
    static float lp[MAX_SEQ * MAX_NEW], score[MAX_SEQ], olp[MAX_NEW], logits[1000];
    static fake f;
    int seeds[5] = {31, 32, 33, 34, 35}, prompt[2] = {1, 6}, sup[2] = {0, 9}, begin[1] = {EOS};
    dec_rules r = {sup, 2, begin, 1, EOS, 9};
    fake_init(&f, 1000, 1, 5, seeds);
    dec_model dm = fake_model(&f);
    CHECK_EQ_INT(dec_greedy_batch(&dm, 5, prompt, 2, &r, tok, lp, len, score), ENCDEC_OK);
    int shorter = 0;
    for (int s = 0; s < 5; s++) {
        fake_init(&f, 1000, 1, 5, seeds);
        int n;
        CHECK_EQ_INT(dec_greedy(&dm, s, prompt, 2, &r, logits, one, olp, &n), ENCDEC_OK);
        CHECK_EQ_INT(len[s], n);
        CHECK(memcmp(tok + s * 9, one, n * sizeof *one) == 0);
        CHECK(memcmp(lp + s * 9, olp, n * sizeof *olp) == 0);
        shorter += n < 9;
    }
    CHECK(shorter > 0 && shorter < 5);  /* some end with eos, some at max_new */
}

/* With eos suppressed nobody finishes early: exactly max_new - 1 steps, all
 * beams of all groups in each, beams forking only inside their group. */
static void test_steps_and_reorders(void) {
    static int tok[MAX_SEQ * MAX_NEW], len[MAX_SEQ];
    static float lp[MAX_SEQ * MAX_NEW], score[MAX_SEQ];
    static fake f;
    int seeds[3] = {41, 42, 43}, prompt[1] = {1}, sup[1] = {EOS};
    dec_rules r = {sup, 1, NULL, 0, EOS, 10};
    dec_beam_params bp = {4, 1.0f, 0, 4};
    fake_init(&f, 50, 4, 3, seeds);
    dec_model dm = fake_model(&f);
    CHECK_EQ_INT(dec_beam(&dm, 3, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_OK);
    CHECK_EQ_INT(f.n_step, 9);
    for (int i = 0; i < 9; i++) CHECK_EQ_INT(f.step_n[i], 12);
    CHECK(f.n_reorder > 0);
    CHECK_EQ_INT(f.bad, 0);
    for (int i = 0; i < 12; i++) {
        CHECK_EQ_INT(len[i], 10);
        CHECK(i % 4 == 0 || score[i] <= score[i - 1]);  /* best first */
        /* the returned sequence is the history the model saw for some beam */
        double sum = 0;
        for (int t = 0; t < 10; t++) sum += lp[i * 10 + t];
        CHECK_NEAR(score[i], sum / 10, 1e-4);
    }
    CHECK(memcmp(tok, tok + 10, 10 * sizeof *tok) != 0);  /* distinct hypotheses */
}

/* Group 0 finishes at once (eos everywhere): it leaves the steps, group 1 goes on. */
static void test_done_group_drops_out(void) {
    static int tok[MAX_SEQ * MAX_NEW], len[MAX_SEQ];
    static float lp[MAX_SEQ * MAX_NEW], score[MAX_SEQ];
    static fake f;
    int seeds[2] = {51, 52}, prompt[1] = {1}, W = 3;
    dec_rules r = {NULL, 0, NULL, 0, EOS, 12};
    dec_beam_params bp = {W, 1.0f, 1, 2};
    fake_init(&f, 50, W, 2, seeds);
    f.eos_bonus[0] = 100;
    dec_model dm = fake_model(&f);
    CHECK_EQ_INT(dec_beam(&dm, 2, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_OK);
    /* step 0 gives one eos hypothesis (only beam 0 expands), step 1 W more:
     * done; the second step call already has group 1 only */
    CHECK(f.n_step >= 3);
    CHECK_EQ_INT(f.step_n[0], 2 * W);
    for (int i = 1; i < f.n_step && i < MAX_STEPS; i++) {
        CHECK_EQ_INT(f.step_n[i], W);
        CHECK(f.step_min_seq[i] >= W);
    }
    CHECK_EQ_INT(len[0], 1);
    CHECK_EQ_INT(tok[0], EOS);
    CHECK_EQ_INT(len[1], 2);
    CHECK_EQ_INT(tok[12 + 1], EOS);
    CHECK(len[2] > 2);
}

static encdec_status fail_after(int fail_at, int which) {
    static int tok[MAX_SEQ * MAX_NEW], len[MAX_SEQ];
    static float lp[MAX_SEQ * MAX_NEW], score[MAX_SEQ];
    static fake f;
    int seeds[2] = {61, 62}, prompt[1] = {1}, sup[1] = {EOS};
    dec_rules r = {sup, 1, NULL, 0, EOS, 8};
    dec_beam_params bp = {3, 1.0f, 0, 1};
    fake_init(&f, 50, which ? 1 : 3, 2, seeds);
    f.fail_at = fail_at;
    dec_model dm = fake_model(&f);
    if (which) return dec_greedy_batch(&dm, 2, prompt, 1, &r, tok, lp, len, score);
    return dec_beam(&dm, 2, prompt, 1, &r, &bp, tok, lp, len, score);
}

static void test_errors(void) {
    int tok[16], len[2], prompt[1] = {1};
    float lp[16], score[2];
    fake f;
    int seeds[2] = {1, 2};
    fake_init(&f, 50, 2, 1, seeds);
    dec_model dm = fake_model(&f);
    dec_rules r = {NULL, 0, NULL, 0, EOS, 8};
    dec_beam_params bp = {2, 1.0f, 1, 1};
    CHECK_EQ_INT(dec_beam_params_check(&bp), ENCDEC_OK);
    bp.n_beams = 0;
    CHECK_STATUS(dec_beam_params_check(&bp), ENCDEC_ERR_ARG, "n_beams");
    CHECK_STATUS(dec_beam(&dm, 1, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_ERR_ARG,
                 "n_beams");
    bp.n_beams = 100000;
    CHECK_STATUS(dec_beam_params_check(&bp), ENCDEC_ERR_ARG, "n_beams");
    bp = (dec_beam_params){2, 1.0f, 1, 3};
    CHECK_STATUS(dec_beam(&dm, 1, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_ERR_ARG,
                 "n_return");
    bp = (dec_beam_params){2, NAN, 1, 1};
    CHECK_STATUS(dec_beam(&dm, 1, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_ERR_ARG,
                 "length_penalty");
    bp = (dec_beam_params){2, 1.0f, 3, 1};
    CHECK_STATUS(dec_beam_params_check(&bp), ENCDEC_ERR_ARG, "early_stopping");
    CHECK_STATUS(dec_beam_params_check(NULL), ENCDEC_ERR_ARG, "parameters");
    bp = (dec_beam_params){2, 1.0f, 1, 1};
    r.max_new = 0;
    CHECK_STATUS(dec_beam(&dm, 1, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_ERR_ARG,
                 "max_new");
    CHECK_STATUS(dec_greedy_batch(&dm, 1, prompt, 1, &r, tok, lp, len, score), ENCDEC_ERR_ARG,
                 "max_new");
    r.max_new = 8;
    CHECK_STATUS(dec_beam(&dm, 1, prompt, 0, &r, &bp, tok, lp, len, score), ENCDEC_ERR_ARG, "prompt");
    CHECK_STATUS(dec_beam(&dm, 0, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_ERR_ARG, "groups");
    CHECK_STATUS(dec_greedy_batch(&dm, 0, prompt, 1, &r, tok, lp, len, score), ENCDEC_ERR_ARG,
                 "sequence");
    CHECK_STATUS(dec_beam(&dm, 1, prompt, 1, &r, &bp, NULL, lp, len, score), ENCDEC_ERR_ARG,
                 "output");
    dm.reorder = NULL;
    CHECK_STATUS(dec_beam(&dm, 1, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_ERR_ARG,
                 "reorder");
    dm = fake_model(&f);
    dm.n_vocab = 1;
    CHECK_STATUS(dec_beam(&dm, 1, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_ERR_ARG,
                 "n_vocab");
    CHECK_EQ_INT(f.n_feed, 0);  /* nothing reached the model */

    /* a failing seam call comes back as is: feed (call 1), reorder or step
     * (later calls), for beam search and for batched greedy */
    for (int at = 1; at <= 9; at++) {
        CHECK_STATUS(fail_after(at, 0), ENCDEC_ERR_IO, "fake: call");
        CHECK_STATUS(fail_after(at, 1), ENCDEC_ERR_IO, "fake: call");
    }
}

/* A 256k vocabulary: one beam still equals greedy, wide beams run. */
static void test_large_vocab(void) {
    enum { V = 262144, N = 4 };
    static int tok[16 * N], gtok[N], len[16], glen[1];
    static float lp[16 * N], glp[N], score[16], gscore[1];
    static fake f;
    int seeds[1] = {71}, prompt[1] = {1};
    dec_rules r = {NULL, 0, NULL, 0, EOS, N};
    dec_beam_params bp = {1, 1.0f, 0, 1};
    fake_init(&f, V, 1, 1, seeds);
    dec_model dm = fake_model(&f);
    CHECK_EQ_INT(dec_beam(&dm, 1, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_OK);
    fake_init(&f, V, 1, 1, seeds);
    CHECK_EQ_INT(dec_greedy_batch(&dm, 1, prompt, 1, &r, gtok, glp, glen, gscore), ENCDEC_OK);
    CHECK_EQ_INT(len[0], glen[0]);
    CHECK(memcmp(tok, gtok, glen[0] * sizeof *tok) == 0);
    bp = (dec_beam_params){16, 1.0f, 0, 16};
    fake_init(&f, V, 16, 1, seeds);
    CHECK_EQ_INT(dec_beam(&dm, 1, prompt, 1, &r, &bp, tok, lp, len, score), ENCDEC_OK);
    CHECK_EQ_INT(f.bad, 0);
    for (int i = 1; i < 16; i++) CHECK(score[i] <= score[i - 1]);
}

int main(void) {
    char *text;
    size_t n;
    encdec_status st = ed_read_file(ED_TEST_DATA "/beam_golden.json", &text, &n);
    CHECK_EQ_INT(st, ENCDEC_OK);
    cJSON *golden = st ? NULL : cJSON_ParseWithLength(text, n);
    if (!st) free(text);
    CHECK(golden != NULL);
    if (golden) {
        CHECK_EQ_INT((int)num(golden, "eos", -1), EOS);
        test_golden_beam(cJSON_GetObjectItem(golden, "beam"));
        test_golden_greedy(cJSON_GetObjectItem(golden, "greedy"));
        cJSON_Delete(golden);
    }
    test_one_beam_is_greedy();
    test_batch_is_greedy();
    test_steps_and_reorders();
    test_done_group_drops_out();
    test_errors();
    test_large_vocab();
    return check_done();
}
