/* test_greedy.c - greedy decoding and its rules with a hand-made model whose
 * logits are scripted per step (no network weights involved). */
#include "check.h"

#include "decode/greedy.h"

#include <string.h>

#define V 6
/* Step i's logits (after the prompt: row 0). Token 5 is eot. */
static const float SCRIPT[4][V] = {
    {0, 0, 9, 1, 0, 8},    /* 2 wins, but 2 is begin-suppressed: 5 (eot) next, also begin-suppressed: 3 */
    {0, 7, 0, 0, 6, 0},    /* 1 is always suppressed: 4 */
    {0, 0, 0, 0, 0, 3},    /* eot */
    {9, 0, 0, 0, 0, 0},
};

typedef struct { int fed, steps, last_tok[8]; } fake;

static encdec_status feed(void *ctx, int seq, const int *t, int n, float *lg) {
    fake *f = ctx;
    f->fed += n;
    memcpy(lg, SCRIPT[0], sizeof SCRIPT[0]);
    return ENCDEC_OK;
}

static encdec_status step(void *ctx, int n, const int *seq, const int *tok, float *lg) {
    fake *f = ctx;
    f->last_tok[f->steps] = tok[0];
    f->steps++;
    memcpy(lg, SCRIPT[f->steps < 4 ? f->steps : 3], sizeof SCRIPT[0]);
    return ENCDEC_OK;
}

int main(void) {
    fake f = {0};
    dec_model dm = {&f, V, feed, step, NULL};
    int sup[1] = {1}, begin[2] = {2, 5}, prompt[3] = {5, 4, 3}, out[8];
    float lp[8], lg[V];
    dec_rules r = {sup, 1, begin, 2, 5, 8};
    int n;
    CHECK_EQ_INT(dec_greedy(&dm, 0, prompt, 3, &r, lg, out, lp, &n), ENCDEC_OK);
    CHECK_EQ_INT(f.fed, 3);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(out[0], 3);
    CHECK_EQ_INT(out[1], 4);
    CHECK_EQ_INT(out[2], 5);
    CHECK_EQ_INT(f.last_tok[0], 3);    /* the chosen token is fed back */
    CHECK_EQ_INT(f.last_tok[1], 4);
    CHECK_EQ_INT(f.steps, 2);          /* no step after eot */
    /* log-probabilities under the filtered distribution: step 0 has {0,1,0,0}
     * allowed at ids 0,3,4 -> log(e^1 / (e^0 + e^1 + e^0)) */
    CHECK_NEAR(lp[0], 1.0 - log(2 + exp(1.0)), 1e-6);
    CHECK_NEAR(lp[2], 3.0 - log(4 + exp(3.0)), 1e-6); /* id 1 suppressed */

    /* max_new stops without eot */
    fake g = {0};
    dm.ctx = &g;
    r.max_new = 1;
    CHECK_EQ_INT(dec_greedy(&dm, 0, prompt, 3, &r, lg, out, lp, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(g.steps, 0);
    r.max_new = 0;
    CHECK_STATUS(dec_greedy(&dm, 0, prompt, 3, &r, lg, out, lp, &n), ENCDEC_ERR_ARG, "max_new");
    CHECK_STATUS(dec_greedy(&dm, 0, prompt, 0, &r, lg, out, lp, &n), ENCDEC_ERR_ARG, "prompt");

    /* rules alone: out-of-range ids are ignored */
    float x[V] = {1, 1, 1, 1, 1, 1};
    int bad[2] = {-1, 99};
    dec_rules rr = {bad, 2, NULL, 0, 5, 1};
    dec_apply_rules(x, V, &rr, NULL, 0);
    for (int i = 0; i < V; i++) CHECK_NEAR(x[i], 1.0, 0);

    /* CTranslate2's repetition penalty (the values worked by hand from its
     * rule): each generated token once, divided when >= 0, multiplied when
     * < 0; tokens never generated untouched */
    float y[V] = {2, -1, 0.5f, 3, -4, 1};
    int gen[5] = {0, 1, 0, 4, 0};
    dec_rules rp = {NULL, 0, NULL, 0, 5, 8};
    rp.repetition_penalty = 2;
    dec_apply_rules(y, V, &rp, gen, 5);
    CHECK_NEAR(y[0], 1.0, 0);          /* three times in gen, penalised once */
    CHECK_NEAR(y[1], -2.0, 0);
    CHECK_NEAR(y[2], 0.5, 0);
    CHECK_NEAR(y[3], 3.0, 0);
    CHECK_NEAR(y[4], -8.0, 0);
    /* n-gram ban: gen 0 1 0 4 0, n = 2: the last token 0 was followed by 1
     * and 4 -> both banned; n = 3: "4 0" never came before -> none; n = 1:
     * every token generated; fewer tokens than n: none */
    float z[V];
    int expect2[V] = {0, 1, 0, 0, 1, 0}, expect1[V] = {1, 1, 0, 0, 1, 0};
    dec_rules rn = {NULL, 0, NULL, 0, 5, 8};
    for (int n_gram = 1; n_gram <= 6; n_gram++) {
        for (int i = 0; i < V; i++) z[i] = (float)i;
        rn.no_repeat_ngram = n_gram;
        dec_apply_rules(z, V, &rn, gen, 5);
        for (int i = 0; i < V; i++) {
            int banned = n_gram == 1 ? expect1[i] : n_gram == 2 ? expect2[i] : 0;
            CHECK(banned ? z[i] == -INFINITY : z[i] == (float)i);
        }
    }
    /* "0 1 0 1 0": n = 3 bans what followed "1 0" once before: 1 */
    int gen2[5] = {0, 1, 0, 1, 0};
    for (int i = 0; i < V; i++) z[i] = 0;
    rn.no_repeat_ngram = 3;
    dec_apply_rules(z, V, &rn, gen2, 5);
    CHECK(z[1] == -INFINITY && z[0] == 0 && z[2] == 0);
    return check_done();
}
