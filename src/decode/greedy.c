/* greedy.c - argmax decoding. */
#include "decode/greedy.h"
#include "base/err.h"
#include "kern/kern.h"

#include <math.h>
#include <string.h>

/* Each distinct token of pre[0, n_pre) and gen once, from its own logit
 * (the first time it is seen: later copies are skipped, so a token never
 * gets the penalty twice). */
static void penalize(float *logits, int n_vocab, float pen, const int *pre, int n_pre, const int *gen,
                     int n_gen) {
    for (int i = 0; i < n_pre + n_gen; i++) {
        int id = i < n_pre ? pre[i] : gen[i - n_pre], seen = 0;
        if (id < 0 || id >= n_vocab) continue;
        for (int k = 0; k < i && !seen; k++) seen = (k < n_pre ? pre[k] : gen[k - n_pre]) == id;
        if (seen) continue;
        float x = logits[id];
        logits[id] = x < 0 ? x * pen : x / pen;
    }
}

/* Bans every token that followed an earlier occurrence of the sequence's
 * last n - 1 tokens (n = 1: every token generated so far). */
static void ban_ngrams(float *logits, int n_vocab, int n, const int *gen, int n_gen) {
    if (n_gen < n) return;
    const int *tail = gen + n_gen - (n - 1);
    for (int b = 0; b + n <= n_gen; b++) {
        if (memcmp(gen + b, tail, sizeof(int) * (size_t)(n - 1)) != 0) continue;
        int id = gen[b + n - 1];
        if (id >= 0 && id < n_vocab) logits[id] = -INFINITY;
    }
}

void dec_apply_rules(float *logits, int n_vocab, const dec_rules *r, const int *gen, int n_gen) {
    if ((gen || r->pen_prompt) && r->repetition_penalty > 0 && r->repetition_penalty != 1)
        penalize(logits, n_vocab, r->repetition_penalty, r->pen_prompt, r->pen_prompt ? r->n_pen_prompt : 0,
                 gen, gen ? n_gen : 0);
    if (gen && r->no_repeat_ngram > 0) ban_ngrams(logits, n_vocab, r->no_repeat_ngram, gen, n_gen);
    for (int i = 0; i < r->n_suppress; i++)
        if (r->suppress[i] >= 0 && r->suppress[i] < n_vocab) logits[r->suppress[i]] = -INFINITY;
    if (n_gen < r->min_new) {
        if (r->eot >= 0 && r->eot < n_vocab) logits[r->eot] = -INFINITY;
        for (int i = 0; i < r->n_more_eot; i++)
            if (r->more_eot[i] >= 0 && r->more_eot[i] < n_vocab) logits[r->more_eot[i]] = -INFINITY;
    }
    if (dec_forced_at(r, n_gen, n_vocab))
        for (int i = 0; i < n_vocab; i++) logits[i] = i == r->force_last_id ? 0.0f : -INFINITY;
    if (n_gen == 0)
        for (int i = 0; i < r->n_begin_suppress; i++)
            if (r->begin_suppress[i] >= 0 && r->begin_suppress[i] < n_vocab)
                logits[r->begin_suppress[i]] = -INFINITY;
    if (r->hook && r->hook->apply) r->hook->apply(r->hook->ctx, logits, n_vocab, gen, n_gen);
}

int dec_should_stop(const dec_rules *r, const int *gen, int n_gen) {
    return r->hook && r->hook->stop && r->hook->stop(r->hook->ctx, gen, n_gen);
}

float dec_logprob(const float *logits, int n_vocab, int id) {
    float mx;
    double lse = k_logsumexp(logits, n_vocab, &mx);
    return (float)((double)logits[id] - mx - lse);
}

encdec_status dec_greedy(const dec_model *m, int seq, const int *prompt, int n_prompt,
                         const dec_rules *r, float *logits, int *out_tok, float *out_lp,
                         int *n_out) {
    *n_out = 0;
    if (n_prompt < 1 || r->max_new < 1)
        return ed_fail(ENCDEC_ERR_ARG, "greedy: need a prompt and max_new >= 1 (got %d, %d)",
                       n_prompt, r->max_new);
    if (r->n_forced > 0)
        return ed_fail(ENCDEC_ERR_ARG, "greedy: forced tokens need dec_greedy_fed");
    encdec_status st = m->feed(m->ctx, seq, prompt, n_prompt, logits);
    for (int i = 0; !st && i < r->max_new; i++) {
        dec_apply_rules(logits, m->n_vocab, r, out_tok, i);
        int id = k_argmax(logits, m->n_vocab);
        out_tok[i] = id;
        out_lp[i] = dec_logprob(logits, m->n_vocab, id);
        *n_out = i + 1;
        if (dec_is_eot(r, id) || i + 1 == r->max_new || dec_should_stop(r, out_tok, i + 1)) break;
        st = m->step(m->ctx, 1, &seq, &id, logits);
    }
    return st;
}
