/* forced.c - teacher-forced passes of a text model over given sequences:
 * encdec_text_attention[_batch] (the decoder's attention over the input for
 * each token, as CTranslate2's return_attention gives it and its
 * replace_unknowns reads it) and encdec_text_score[_batch] (each token's
 * log-probability, its score_batch).
 *
 * On the session, in groups of consecutive pairs: their inputs packed and
 * encoded in one pass, their cross caches filled, the decoder fed each
 * sequence after its start, every position of the group in one pass
 * (rn_feed_rows) of at most `rows` rows, so that the decoder's weights and
 * the output projection are read once for many sequences. Scores: each
 * row's log-softmax read at its next token (exact logits: the session does
 * not screen), `rows` = FORCED_LOGITS / V; one sequence longer than that
 * goes in passes of its positions. Attention: no logits; the family captures
 * its alignment heads' scores (models/xattn.h) and row i becomes the softmax
 * of each head's scores at decoder position i (the step that chose seq[i])
 * over the input's positions, averaged over the heads: CTranslate2's mean
 * of its alignment_heads first heads of its alignment_layer. Nothing of
 * either runs during generation, so a caller that asks only where it needs
 * it (a hypothesis with an unknown token) pays for nothing else. */
#include "api/api.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "decode/greedy.h"
#include "decode/runner.h"

#include <stdlib.h>
#include <string.h>

#define FORCED_MAX_SEQ 4096
#define FORCED_MAX_PAIRS (1 << 20)
#define FORCED_LOGITS (16 << 20)   /* floats of logits a scoring pass holds */
#define FORCED_GROUP_TOKENS 16384  /* input tokens encoded together at most */
#define FORCED_ATT_ROWS 1024       /* positions an attention pass holds */

typedef struct {
    const char *fn;
    int n;                       /* pairs */
    const int *const *ids, *n_ids, *const *seq, *n_seq;
    float *const *out;           /* scores [n_seq]; attention [n_seq, n_ids] */
    int att;
    int rows;                    /* rows of a pass */
    float *logits;               /* [rows, V] (scores) */
    int *in, *which, *counts;    /* [rows] decoder inputs; the group's sequences, their rows */
} forced_job;

/* Pairs [a, b)'s inputs packed into pk (each as generation takes it: cut to
 * the model's positions, its first tokens and its last). */
static encdec_status pack(const s2s_model *m, const forced_job *j, int a, int b, api_packed *pk) {
    memset(pk, 0, sizeof *pk);
    pk->ids = ed_alloc(sizeof(int) * FORCED_GROUP_TOKENS, "input tokens");
    pk->start = ed_alloc(sizeof(int) * (size_t)(b - a), "input table");
    pk->len = ed_alloc(sizeof(int) * (size_t)(b - a), "input table");
    encdec_status st = !pk->ids || !pk->start || !pk->len ? ENCDEC_ERR_NOMEM : ENCDEC_OK;
    for (int i = a; i < b && !st; i++) {
        api_packed one;
        if (!(st = api_pack_ids(m, j->ids[i], j->n_ids[i], 1, &one))) {
            memcpy(pk->ids + pk->n_tokens, one.ids, sizeof(int) * (size_t)one.n_tokens);
            pk->start[i - a] = pk->n_tokens;
            pk->len[i - a] = one.n_tokens;
            pk->n_tokens += one.n_tokens;
            if (one.n_tokens > pk->t_max) pk->t_max = one.n_tokens;
        } else if (j->n > 1) {
            ed_err_prefix("pair %d", i);
        }
        api_packed_free(&one);
    }
    return st;
}

/* One pass over positions [p, p + count) of every sequence of the group (p
 * > 0: one sequence), then its scores or attention. */
static encdec_status pass(encdec_session *s, forced_job *j, dec_runner *rn, const api_packed *pk, int a,
                          int B, int p) {
    const s2s_model *m = &s->model->text;
    size_t V = (size_t)m->n_vocab;
    int rows = 0;
    for (int q = 0; q < B; q++) {
        const int *sq = j->seq[a + q];
        int left = j->n_seq[a + q] - p, n = B > 1 || j->att || left < j->rows ? left : j->rows;
        j->which[q] = q;
        j->counts[q] = n;
        for (int t = 0; t < n; t++) j->in[rows + t] = p + t ? sq[p + t - 1] : m->dec_start;
        rows += n;
    }
    encdec_status st = j->att ? m->ops->xattn(s->text_st, 1, 0) : ENCDEC_OK;
    if (!st) st = rn_feed_rows(rn, B, j->which, j->in, j->counts, j->att ? NULL : j->logits);
    encdec_status off = j->att ? m->ops->xattn(s->text_st, 0, 0) : ENCDEC_OK, dv = m->ops->status(s->text_st);
    if (!st) st = dv ? dv : off;
    for (int q = 0, r = 0; !st && q < B; r += j->counts[q], q++) {
        int pair = a + q, n = j->counts[q];
        if (!j->att) {
            for (int t = 0; t < n; t++)
                j->out[pair][p + t] = dec_logprob(j->logits + (size_t)(r + t) * V, (int)V, j->seq[pair][p + t]);
            continue;
        }
        int k = pk->len[q], n_ids = j->n_ids[pair];
        float *o = k < n_ids ? ed_alloc_floats((size_t)n, (size_t)k, "attention") : j->out[pair];
        if (!o) st = ENCDEC_ERR_NOMEM;
        const md_xattn *x = m->ops->xattn_of(s->text_st);
        api_scores sc = {md_xattn_head(x, 0), (size_t)x->rows * (size_t)x->ld, x->ld, x->heads};
        if (!st) api_mean_softmax(&sc, r, n, k, o);
        if (!st && o != j->out[pair]) api_uncut(o, n, k, n_ids, j->out[pair]);
        if (o != j->out[pair]) free(o);
    }
    return st;
}

/* Pairs [a, b): their inputs encoded together, then their positions. */
static encdec_status group(encdec_session *s, forced_job *j, int a, int b) {
    const s2s_model *m = &s->model->text;
    api_packed pk;
    int B = b - a, n_ctx = 0, total = 0;
    encdec_status st = pack(m, j, a, b, &pk);
    for (int i = a; i < b; i++) {
        n_ctx = j->n_seq[i] > n_ctx ? j->n_seq[i] : n_ctx;
        total += j->n_seq[i];
    }
    dec_runner rn;
    memset(&rn, 0, sizeof rn);
    if (!st) {
        s2s_shape shape = {pk.n_tokens, pk.t_max, B, B, n_ctx, total < j->rows || j->att ? total : j->rows};
        st = m->ops->reserve(s->text_st, &shape);
    }
    if (!st) {
        m->ops->encode(s->text_st, pk.ids, pk.start, pk.len, B);
        rn_model rm = m->ops->rn_model(s->text_st, 1);
        st = rn_init(&rn, &rm, ENCDEC_KV_FULL);
    }
    if (!st) rn_begin(&rn, ENCDEC_KV_FULL);
    /* several sequences (or attention): one pass; one long one: passes of its positions */
    int step = B > 1 || j->att ? j->n_seq[a] : j->rows;
    for (int p = 0; !st && p < (B > 1 ? 1 : j->n_seq[a]); p += step) st = pass(s, j, &rn, &pk, a, B, p);
    rn_free(&rn);
    api_packed_free(&pk);
    return st;
}

static encdec_status check(encdec_session *s, forced_job *j) {
    if (!s) return ed_fail(ENCDEC_ERR_ARG, "%s: session is NULL", j->fn);
    if (!api_is_text(s->model)) return ed_fail(ENCDEC_ERR_ARG, "%s: a Whisper model (speech to text)", j->fn);
    const s2s_model *m = &s->model->text;
    if (j->att && !m->ops->xattn) return ed_fail(ENCDEC_ERR_ARG, "%s: not for %s models", j->fn, m->model_type);
    if (j->n < 1 || j->n > FORCED_MAX_PAIRS)
        return ed_fail(ENCDEC_ERR_ARG, "%s: %d pairs (1..%d)", j->fn, j->n, FORCED_MAX_PAIRS);
    if (!j->ids || !j->n_ids || !j->seq || !j->n_seq || !j->out)
        return ed_fail(ENCDEC_ERR_ARG, "%s: an array is NULL", j->fn);
    encdec_status st = ENCDEC_OK;
    for (int i = 0; i < j->n && !st; i++) {
        const int *sq = j->seq[i];
        int n = j->n_seq[i];
        if (!j->out[i]) st = ed_fail(ENCDEC_ERR_ARG, "%s: out is NULL", j->fn);
        else if (!j->ids[i] || j->n_ids[i] < 1) st = ed_fail(ENCDEC_ERR_ARG, "the input has no tokens");
        else if (!sq || n < 1 || n > FORCED_MAX_SEQ)
            st = ed_fail(ENCDEC_ERR_ARG, "%d sequence tokens (1..%d)", sq ? n : 0, FORCED_MAX_SEQ);
        for (int t = 0; !st && t < n; t++)
            if (sq[t] < 0 || sq[t] >= m->n_vocab)
                st = ed_fail(ENCDEC_ERR_ARG, "sequence token %d is id %d, not below the vocabulary "
                             "size %d", t, sq[t], m->n_vocab);
        if (st && j->n > 1) ed_err_prefix("pair %d", i);
    }
    return st;
}

static encdec_status run(encdec_session *s, forced_job *j) {
    ed_err_clear();
    encdec_status st = check(s, j);
    if (st) return st;
    const s2s_model *m = &s->model->text;
    size_t fit = FORCED_LOGITS / (size_t)m->n_vocab;
    j->rows = j->att ? FORCED_ATT_ROWS : fit < 16 ? 16 : fit > 1024 ? 1024 : (int)fit;
    const char *e = getenv("ENCDEC_FORCED_ROWS");   /* tests: small passes on small models */
    if (e && atoi(e) >= 1 && atoi(e) < j->rows) j->rows = atoi(e);
    int most = 0;   /* a pass's rows: j->rows, or one sequence's whole for attention */
    for (int i = 0; i < j->n; i++) most = j->n_seq[i] > most ? j->n_seq[i] : most;
    most = most > j->rows ? most : j->rows;
    j->logits = j->att ? NULL : ed_alloc_floats((size_t)j->rows, (size_t)m->n_vocab, "logits");
    j->in = ed_alloc(sizeof(int) * (size_t)most, "decoder inputs");
    j->which = ed_alloc(sizeof(int) * (size_t)most, "sequences");
    j->counts = ed_alloc(sizeof(int) * (size_t)most, "sequences");
    if ((!j->att && !j->logits) || !j->in || !j->which || !j->counts) st = ENCDEC_ERR_NOMEM;
    int limit = m->n_positions < FORCED_GROUP_TOKENS ? m->n_positions : FORCED_GROUP_TOKENS;
    for (int a = 0; a < j->n && !st;) {   /* groups: a pass's rows, the inputs' tokens */
        int b = a, rows = 0, toks = 0;
        while (b < j->n && b - a < j->rows) {
            int t = j->n_ids[b] < limit ? j->n_ids[b] : limit;
            if (b > a && (rows + j->n_seq[b] > j->rows || toks + t > FORCED_GROUP_TOKENS)) break;
            rows += j->n_seq[b];
            toks += t;
            b++;
        }
        st = group(s, j, a, b);
        a = b;
    }
    free(j->logits);
    free(j->in);
    free(j->which);
    free(j->counts);
    return st;
}

/* The kernels run under the model's kernel-set limit (base/isa.h). */
static encdec_status run_isa(encdec_session *s, forced_job *j) {
    int old = ed_isa_swap(s && s->model ? s->model->isa : ED_ISA_ANY);
    encdec_status st = run(s, j);
    ed_isa_swap(old);
    return st;
}

encdec_status encdec_text_attention_batch(encdec_session *s, int n, const int *const *ids,
                                          const int *n_ids, const int *const *seq, const int *n_seq,
                                          float *const *out) {
    forced_job j = {"encdec_text_attention", n, ids, n_ids, seq, n_seq, out, 1};
    return run_isa(s, &j);
}

encdec_status encdec_text_attention(encdec_session *s, const int *ids, int n_ids, const int *seq,
                                    int n_seq, float *out) {
    return encdec_text_attention_batch(s, 1, &ids, &n_ids, &seq, &n_seq, &out);
}

encdec_status encdec_text_score_batch(encdec_session *s, int n, const int *const *ids, const int *n_ids,
                                      const int *const *seq, const int *n_seq, float *const *logprobs) {
    forced_job j = {"encdec_text_score", n, ids, n_ids, seq, n_seq, logprobs, 0};
    return run_isa(s, &j);
}

encdec_status encdec_text_score(encdec_session *s, const int *ids, int n_ids, const int *seq, int n_seq,
                                float *logprobs) {
    return encdec_text_score_batch(s, 1, &ids, &n_ids, &seq, &n_seq, &logprobs);
}
