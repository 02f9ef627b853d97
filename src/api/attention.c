/* attention.c - encdec_text_attention: the decoder's attention over an
 * input for each token of a sequence, as CTranslate2's return_attention
 * gives it (and its replace_unknowns reads).
 *
 * One teacher-forced pass on the session: the input encoded, its cross
 * cache filled, the decoder fed its start and the sequence's tokens but the
 * last, with the family's capture of its alignment heads' scores on
 * (models/xattn.h). Row i is the softmax of each alignment head's scores
 * at decoder position i (the step that chose seq[i]) over the input's
 * positions, averaged over the heads: CTranslate2's mean of its
 * alignment_heads first heads of its alignment_layer. Nothing of it runs
 * during generation, so a caller that asks for it only where it needs it
 * (a hypothesis with an unknown token) pays for nothing else. */
#include "api/api.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "decode/runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_MAX_SEQ 4096

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

static encdec_status attend(encdec_session *s, const api_packed *pk, const int *seq, int n_seq,
                            float *out) {
    const s2s_model *m = &s->model->text;
    int n_ids = pk->n_tokens;
    s2s_shape shape = {n_ids, n_ids, 1, 1, n_seq};
    encdec_status st = m->ops->reserve(s->text_st, &shape);
    int *in = st ? NULL : ed_alloc(sizeof(int) * (size_t)n_seq, "decoder input");
    float *logits = st ? NULL : ed_alloc_floats(1, (size_t)m->n_vocab, "logits");
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
    if (!st) {
        rn_begin(&rn, ENCDEC_KV_FULL);
        st = m->ops->xattn(s->text_st, 1);
    }
    if (!st) {
        dec_model dm = rn_seam(&rn);
        st = dm.feed(dm.ctx, 0, in, n_seq, logits);
        encdec_status off = m->ops->xattn(s->text_st, 0), dv = m->ops->status(s->text_st);
        if (!st) st = dv ? dv : off;
    }
    if (!st) mean_softmax(m->ops->xattn_of(s->text_st), n_seq, n_ids, out);   /* n_ids: pk's */
    rn_free(&rn);
    free(in);
    free(logits);
    return st;
}

static encdec_status text_attention(encdec_session *s, const int *ids, int n_ids, const int *seq,
                                    int n_seq, float *out) {
    ed_err_clear();
    if (!s) return ed_fail(ENCDEC_ERR_ARG, "encdec_text_attention: session is NULL");
    if (!api_is_text(s->model))
        return ed_fail(ENCDEC_ERR_ARG, "encdec_text_attention: a Whisper model (its alignment is "
                       "its word timestamps)");
    const s2s_model *m = &s->model->text;
    if (!m->ops->xattn) return ed_fail(ENCDEC_ERR_ARG, "encdec_text_attention: not for %s models", m->model_type);
    if (!out || !seq) return ed_fail(ENCDEC_ERR_ARG, "encdec_text_attention: %s is NULL", out ? "seq" : "out");
    if (n_seq < 1 || n_seq > ATTN_MAX_SEQ)
        return ed_fail(ENCDEC_ERR_ARG, "encdec_text_attention: %d sequence tokens (1..%d)", n_seq, ATTN_MAX_SEQ);
    for (int i = 0; i < n_seq; i++)
        if (seq[i] < 0 || seq[i] >= m->n_vocab)
            return ed_fail(ENCDEC_ERR_ARG, "sequence token %d is id %d, not below the vocabulary "
                           "size %d", i, seq[i], m->n_vocab);
    api_packed pk;
    encdec_status st = api_pack_ids(m, ids, n_ids, 1, &pk);
    int k = pk.n_tokens;
    float *o = !st && k < n_ids ? ed_alloc_floats((size_t)n_seq, (size_t)k, "attention") : out;
    if (!st && !o) st = ENCDEC_ERR_NOMEM;
    if (!st) st = attend(s, &pk, seq, n_seq, o);
    if (!st && o != out)   /* truncated: the first k - 1 positions and the last */
        for (int r = 0; r < n_seq; r++) {
            float *y = out + (size_t)r * n_ids;
            memset(y, 0, sizeof(float) * (size_t)n_ids);
            memcpy(y, o + (size_t)r * k, sizeof(float) * (size_t)(k - 1));
            y[n_ids - 1] = o[(size_t)r * k + k - 1];
        }
    if (o != out) free(o);
    api_packed_free(&pk);
    return st;
}

/* The kernels run under the model's kernel-set limit (base/isa.h). */
encdec_status encdec_text_attention(encdec_session *s, const int *ids, int n_ids, const int *seq,
                                    int n_seq, float *out) {
    int old = ed_isa_swap(s && s->model ? s->model->isa : ED_ISA_ANY);
    encdec_status st = text_attention(s, ids, n_ids, seq, n_seq, out);
    ed_isa_swap(old);
    return st;
}
