/* forced.c - teacher-forced passes of a text model over a given sequence:
 * encdec_text_attention (the decoder's attention over the input for each
 * token, as CTranslate2's return_attention gives it and its replace_unknowns
 * reads it) and encdec_text_score (each token's log-probability, its
 * score_batch).
 *
 * On the session: the input encoded, its cross cache filled, the decoder fed
 * its start and the sequence. The attention is one pass with the family's
 * capture of its alignment heads' scores on (models/xattn.h); row i is the
 * softmax of each alignment head's scores at decoder position i (the step
 * that chose seq[i]) over the input's positions, averaged over the heads:
 * CTranslate2's mean of its alignment_heads first heads of its
 * alignment_layer. The scores are passes of FORCED_ROWS positions, each
 * row's log-softmax read at the next token (exact logits: the session does
 * not screen). Nothing of either runs during generation, so a caller that
 * asks only where it needs it (a hypothesis with an unknown token) pays
 * for nothing else. */
#include "api/api.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "decode/greedy.h"
#include "decode/runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FORCED_MAX_SEQ 4096
#define FORCED_ROWS 16   /* positions a scoring pass gives logits for */

/* out[R, T] = the heads' mean of softmax(scores) per row. */
static void mean_softmax(const md_xattn *x, int R, int T, float *out) {
    memset(out, 0, sizeof(float) * (size_t)R * (size_t)T);
    for (int a = 0; a < x->heads; a++) {
        const float *sc = md_xattn_head(x, a);
        for (int r = 0; r < R; r++) {
            const float *v = sc + (size_t)r * x->ld;
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t < T; t++) mx = v[t] > mx ? v[t] : mx;
            for (int t = 0; t < T; t++) sum += exp((double)v[t] - mx);
            for (int t = 0; t < T; t++)
                out[(size_t)r * T + t] += (float)(exp((double)v[t] - mx) / sum / x->heads);
        }
    }
}

/* A forced pass: the input of pk encoded, the runner begun on one sequence
 * of n_ctx positions, the decoder's inputs [start, seq[0, n_seq - 1)) in
 * in. Then attention (out_att [n_seq, n_ids]) or scores (out_lp [n_seq]). */
static encdec_status forced(encdec_session *s, const api_packed *pk, const int *seq, int n_seq,
                            float *out_att, float *out_lp) {
    const s2s_model *m = &s->model->text;
    int n_ids = pk->n_tokens, rows = out_att ? n_seq : FORCED_ROWS;
    s2s_shape shape = {n_ids, n_ids, 1, 1, n_seq};
    encdec_status st = m->ops->reserve(s->text_st, &shape);
    int *in = st ? NULL : ed_alloc(sizeof(int) * (size_t)n_seq, "decoder input");
    float *logits = st ? NULL : ed_alloc_floats((size_t)rows, (size_t)m->n_vocab, "logits");
    if (!st && (!in || !logits)) st = ENCDEC_ERR_NOMEM;
    dec_runner rn;
    memset(&rn, 0, sizeof rn);
    if (!st) {
        in[0] = m->dec_start;
        memcpy(in + 1, seq, sizeof(int) * (size_t)(n_seq - 1));
        m->ops->encode(s->text_st, pk->ids, pk->start, pk->len, 1);
        rn_model rm = m->ops->rn_model(s->text_st, 1);
        st = rn_init(&rn, &rm, ENCDEC_KV_FULL);
    }
    if (!st) rn_begin(&rn, ENCDEC_KV_FULL);
    if (!st && out_att) {   /* one pass over every position, the heads captured */
        st = m->ops->xattn(s->text_st, 1);
        if (!st) st = rn_feed_logits(&rn, 0, in, n_seq, n_seq - 1, logits);
        encdec_status off = m->ops->xattn(s->text_st, 0), dv = m->ops->status(s->text_st);
        if (!st) st = dv ? dv : off;
        if (!st) mean_softmax(m->ops->xattn_of(s->text_st), n_seq, n_ids, out_att);
    }
    for (int p = 0; !st && out_lp && p < n_seq; p += FORCED_ROWS) {   /* passes of positions */
        int n = n_seq - p < FORCED_ROWS ? n_seq - p : FORCED_ROWS;
        st = rn_feed_logits(&rn, 0, in + p, n, 0, logits);
        encdec_status dv = m->ops->status(s->text_st);
        if (!st) st = dv;
        for (int i = 0; !st && i < n; i++)
            out_lp[p + i] = dec_logprob(logits + (size_t)i * m->n_vocab, m->n_vocab, seq[p + i]);
    }
    rn_free(&rn);
    free(in);
    free(logits);
    return st;
}

/* The checks both calls share, then the pass; the attention's columns of an
 * input cut to the model's positions (its first tokens and its last) put
 * back in place. */
static encdec_status run(encdec_session *s, const char *fn, const int *ids, int n_ids, const int *seq,
                         int n_seq, float *out_att, float *out_lp) {
    ed_err_clear();
    if (!s) return ed_fail(ENCDEC_ERR_ARG, "%s: session is NULL", fn);
    if (!api_is_text(s->model))
        return ed_fail(ENCDEC_ERR_ARG, "%s: a Whisper model (speech to text)", fn);
    const s2s_model *m = &s->model->text;
    if (out_att && !m->ops->xattn) return ed_fail(ENCDEC_ERR_ARG, "%s: not for %s models", fn, m->model_type);
    if (!(out_att || out_lp) || !seq) return ed_fail(ENCDEC_ERR_ARG, "%s: %s is NULL", fn, seq ? "out" : "seq");
    if (n_seq < 1 || n_seq > FORCED_MAX_SEQ)
        return ed_fail(ENCDEC_ERR_ARG, "%s: %d sequence tokens (1..%d)", fn, n_seq, FORCED_MAX_SEQ);
    for (int i = 0; i < n_seq; i++)
        if (seq[i] < 0 || seq[i] >= m->n_vocab)
            return ed_fail(ENCDEC_ERR_ARG, "sequence token %d is id %d, not below the vocabulary "
                           "size %d", i, seq[i], m->n_vocab);
    api_packed pk;
    encdec_status st = api_pack_ids(m, ids, n_ids, 1, &pk);
    int k = pk.n_tokens;
    float *o = !st && out_att && k < n_ids ? ed_alloc_floats((size_t)n_seq, (size_t)k, "attention") : out_att;
    if (!st && out_att && !o) st = ENCDEC_ERR_NOMEM;
    if (!st) st = forced(s, &pk, seq, n_seq, o, out_lp);
    if (!st && o != out_att)   /* cut: the first k - 1 positions and the last */
        for (int r = 0; r < n_seq; r++) {
            float *y = out_att + (size_t)r * n_ids;
            memset(y, 0, sizeof(float) * (size_t)n_ids);
            memcpy(y, o + (size_t)r * k, sizeof(float) * (size_t)(k - 1));
            y[n_ids - 1] = o[(size_t)r * k + k - 1];
        }
    if (o != out_att) free(o);
    api_packed_free(&pk);
    return st;
}

/* The kernels run under the model's kernel-set limit (base/isa.h). */
encdec_status encdec_text_attention(encdec_session *s, const int *ids, int n_ids, const int *seq,
                                    int n_seq, float *out) {
    int old = ed_isa_swap(s && s->model ? s->model->isa : ED_ISA_ANY);
    encdec_status st = out ? run(s, "encdec_text_attention", ids, n_ids, seq, n_seq, out, NULL)
                           : ed_fail(ENCDEC_ERR_ARG, "encdec_text_attention: out is NULL");
    ed_isa_swap(old);
    return st;
}

encdec_status encdec_text_score(encdec_session *s, const int *ids, int n_ids, const int *seq, int n_seq,
                                float *logprobs) {
    int old = ed_isa_swap(s && s->model ? s->model->isa : ED_ISA_ANY);
    encdec_status st = logprobs ? run(s, "encdec_text_score", ids, n_ids, seq, n_seq, NULL, logprobs)
                                : ed_fail(ENCDEC_ERR_ARG, "encdec_text_score: out is NULL");
    ed_isa_swap(old);
    return st;
}
