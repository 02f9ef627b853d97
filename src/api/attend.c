/* attend.c - the decoder's attention over the input for each token of a
 * generation's returned sequences (encdec_generate_params.return_attention),
 * and the two pieces the teacher-forced calls share with it (forced.c).
 *
 * After the search, the sequences to return are fed again from the
 * decoder's start into sequences of the request (its runner restarted: the
 * self cache of the search is no longer read, the inputs' cross caches
 * stay, so the encoder does not run again), as many a pass as its rows
 * allow, no logits, with the family's alignment heads captured
 * (models/xattn.h); row j of a sequence is the heads' mean softmax over its
 * input's positions at the step that chose token j: what CTranslate2's
 * return_attention gives and its replace_unknowns reads. The passes run
 * where the generation's do (a session's state, or the engine's scheduler,
 * which merges those of requests finishing in one turn). */
#include "api/api.h"
#include "base/err.h"
#include "base/mem.h"
#include "decode/runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void api_mean_softmax(const api_scores *s, int r0, int R, int T, float *out) {
    memset(out, 0, sizeof(float) * (size_t)R * (size_t)T);
    for (int a = 0; a < s->heads; a++) {
        const float *sc = s->sc + (size_t)a * s->head_stride + (size_t)r0 * (size_t)s->ld;
        for (int r = 0; r < R; r++) {
            const float *v = sc + (size_t)r * (size_t)s->ld;
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t < T; t++) mx = v[t] > mx ? v[t] : mx;
            for (int t = 0; t < T; t++) sum += exp((double)v[t] - mx);
            for (int t = 0; t < T; t++)
                out[(size_t)r * T + t] += (float)(exp((double)v[t] - mx) / sum / s->heads);
        }
    }
}

void api_uncut(const float *o, int R, int k, int n, float *y) {
    for (int r = 0; r < R; r++, y += n, o += k) {
        memset(y, 0, sizeof(float) * (size_t)n);
        memcpy(y, o, sizeof(float) * (size_t)(k - 1));
        y[n - 1] = o[k - 1];
    }
}

static int holds(const int *t, int n, int id) {
    for (int i = 0; i < n; i++)
        if (t[i] == id) return 1;
    return 0;
}

/* Outputs [a, b)'s rows in one pass, then their rows of attention. */
static encdec_status one_pass(const api_attender *at, const api_attend_job *j, int a, int b,
                              int *seq, int *tok, int *cnt, float **out) {
    int k = 0, R = 0;
    for (int i = a; i < b; i++) {
        if (!out[i]) continue;
        const int *t = j->toks + (size_t)i * j->max_new;
        seq[k] = j->seq_of[i];
        cnt[k] = j->lens[i];
        tok[R] = j->dec_start;
        memcpy(tok + R + 1, t, sizeof(int) * (size_t)(j->lens[i] - 1));
        R += j->lens[i];
        k++;
    }
    if (!k) return ENCDEC_OK;
    api_scores sc;
    encdec_status st = at->pass(at->ctx, k, seq, tok, cnt, &sc);
    for (int i = a, r = 0; i < b && !st; i++) {
        if (!out[i]) continue;
        int n = j->lens[i], in = j->input_of[i], c = at->cols[in], full = at->full ? at->full[in] : c;
        if (c > sc.ld) return ed_fail(ENCDEC_ERR_ARG, "attention: an input of %d tokens, %d captured", c, sc.ld);
        float *o = full > c ? ed_alloc_floats((size_t)n, (size_t)c, "attention") : out[i];
        if (!o) return ENCDEC_ERR_NOMEM;
        api_mean_softmax(&sc, r, n, c, o);
        if (o != out[i]) {
            api_uncut(o, n, c, full, out[i]);
            free(o);
        }
        r += n;
    }
    return st;
}

encdec_status api_attend(const api_attender *at, const api_attend_job *j, float **out) {
    dec_runner *rn = at->rn;
    int most = rn->m.max_rows, n_steps = rn->n_steps, any = 0;
    encdec_status st = ENCDEC_OK;
    memset(out, 0, sizeof *out * (size_t)j->n_out);   /* the caller frees what is set */
    for (int i = 0; i < j->n_out; i++) {
        const int *t = j->toks + (size_t)i * j->max_new;
        if (j->lens[i] < 1 || (j->mode == 2 && (j->unk < 0 || !holds(t, j->lens[i], j->unk)))) continue;
        if (j->lens[i] > most)
            return ed_fail(ENCDEC_ERR_ARG, "attention: %d tokens, a pass takes %d", j->lens[i], most);
        int in = j->input_of[i], full = at->full ? at->full[in] : at->cols[in];
        out[i] = ed_alloc_floats((size_t)j->lens[i], (size_t)full, "attention");
        if (!out[i]) return ENCDEC_ERR_NOMEM;
        any = 1;
    }
    if (!any) return ENCDEC_OK;
    int *seq = ed_alloc(sizeof(int) * (size_t)j->n_out, "sequences");
    int *cnt = ed_alloc(sizeof(int) * (size_t)j->n_out, "sequences");
    int *tok = ed_alloc(sizeof(int) * (size_t)most, "decoder inputs");
    if (!seq || !cnt || !tok) st = ENCDEC_ERR_NOMEM;
    if (!st) rn_restart(rn, -1);   /* the search's histories are not read again */
    for (int a = 0; a < j->n_out && !st;) {   /* passes: as many sequences as the rows take */
        int b = a, rows = 0;
        for (; b < j->n_out; b++) {
            int n = out[b] ? j->lens[b] : 0;
            if (rows + n > most) break;
            rows += n;
        }
        st = one_pass(at, j, a, b, seq, tok, cnt, out);
        a = b;
    }
    rn->n_steps = n_steps;
    free(seq);
    free(cnt);
    free(tok);
    return st;
}
