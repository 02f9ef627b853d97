/* attend.c - the decoder's attention over the input for each token of a
 * generation's returned sequences (encdec_generate_params.return_attention),
 * and the two pieces the teacher-forced calls share with it (forced.c).
 *
 * The generation's runner keeps, as it decodes, the alignment heads' mean
 * softmax of every row its sequences write (decode/runner.h's rn_att: the
 * session's decode calls, or the engine's passes holding its rows, taken
 * by the scheduler): a (sequence, position) cell is written once, so an
 * output's token j reads the row of position j of the sequence that chose
 * it (its beam's, read back along the parents: dec_task's path). What
 * CTranslate2's return_attention gives and its replace_unknowns reads, at
 * the cost of one head's scores a row and step. */
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
        for (int r = 0; r < R; r++)
            rn_softmax_add(sc + (size_t)r * (size_t)s->ld, T, 1.0 / s->heads, out + (size_t)r * T);
    }
}

void api_uncut(const float *o, int R, int k, int n, float *y) {
    for (int r = 0; r < R; r++, y += n, o += k) {
        memset(y, 0, sizeof(float) * (size_t)n);
        memcpy(y, o, sizeof(float) * (size_t)(k - 1));
        y[n - 1] = o[k - 1];
    }
}

encdec_status api_attend_begin(const api_attender *at, int n, int width, int n_pos) {
    int *cols = ed_alloc(sizeof(int) * (size_t)n, "attention");
    if (!cols) return ENCDEC_ERR_NOMEM;
    for (int q = 0; q < n; q++) cols[q] = at->cols[q / width];
    encdec_status st = rn_att_begin(at->rn, n, cols, n_pos);
    free(cols);
    return st;
}

static int holds(const int *t, int n, int id) {
    for (int i = 0; i < n; i++)
        if (t[i] == id) return 1;
    return 0;
}

/* Output i's rows: row j of its token j's sequence, then uncut. */
static encdec_status rows_of(const api_attender *at, const api_attend_job *j, int i, float **out) {
    int n = j->lens[i], in = j->input_of[i], c = at->cols[in], full = at->full ? at->full[in] : c;
    const int *path = j->path + (size_t)i * j->max_new;
    float *o = ed_alloc_floats((size_t)n, (size_t)c, "attention");
    if (!o) return ENCDEC_ERR_NOMEM;
    for (int t = 0; t < n; t++) {
        const float *row = rn_att_row(at->rn, path[t], t);
        if (!row) {
            free(o);
            return ed_fail(ENCDEC_ERR_NOMEM, "attention: no row kept for position %d of sequence %d", t,
                           path[t]);
        }
        memcpy(o + (size_t)t * c, row, sizeof(float) * (size_t)c);
    }
    if (full > c) {
        *out = ed_alloc_floats((size_t)n, (size_t)full, "attention");
        if (*out) api_uncut(o, n, c, full, *out);
        free(o);
        return *out ? ENCDEC_OK : ENCDEC_ERR_NOMEM;
    }
    *out = o;
    return ENCDEC_OK;
}

encdec_status api_attend(const api_attender *at, const api_attend_job *j, float **out) {
    encdec_status st = ENCDEC_OK;
    memset(out, 0, sizeof *out * (size_t)j->n_out);   /* the caller frees what is set */
    for (int i = 0; i < j->n_out && !st; i++) {
        const int *t = j->toks + (size_t)i * j->max_new;
        if (j->lens[i] < 1 || (j->mode == 2 && (j->unk < 0 || !holds(t, j->lens[i], j->unk)))) continue;
        st = rows_of(at, j, i, &out[i]);
    }
    rn_att_end(at->rn);
    return st;
}
