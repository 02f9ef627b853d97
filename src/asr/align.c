/* align.c - word times from the alignment heads (see asr_internal.h).
 *
 * Memory: the softmaxed scores of every alignment head for the pass's rows
 * ([heads, rows, frames] floats: 11 MB for tiny's 8 heads and 230 rows),
 * the logits of 32 rows at a time, the DTW tables ([rows + 1, frames + 1]).
 * Allocated on the first window that needs them, kept for the next.
 */
#include "asr/asr_internal.h"
#include "base/err.h"
#include "base/mem.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_ROWS 32       /* rows per decoder call: bounds the logits kept at once */
#define MEDFILT_WIDTH 7
#define TOKENS_PER_SECOND 50.0
#define SENTENCE_END ".\xe3\x80\x82!\xef\xbc\x81?\xef\xbc\x9f"

static encdec_status grow(void **p, size_t bytes, const char *what) {
    void *q = realloc(*p, bytes ? bytes : 1);
    if (!q) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s (%zu bytes)", what, bytes);
    *p = q;
    return ENCDEC_OK;
}

encdec_status asr_aligner_init(asr_aligner *a, const asr_env *env) {
    memset(a, 0, sizeof *a);
    const whisper_hparams *h = &env->m->hp;
    size_t rows = (size_t)h->n_text_ctx + 1, V = (size_t)h->n_vocab;
    a->cap_rows = rows;
    a->logits = ed_alloc(sizeof(float) * CHUNK_ROWS * V, "alignment logits");
    a->probs = ed_alloc(sizeof(float) * rows, "alignment probabilities");
    a->timing = ed_calloc(sizeof *a->timing * rows, "word timings");
    a->words = ed_alloc(sizeof *a->words * rows, "words");
    a->pi = ed_alloc(sizeof(int) * (rows + (size_t)h->n_audio_ctx + 2) * 2, "alignment path");
    a->toks = ed_alloc(sizeof(int) * (rows + 8), "alignment tokens");
    a->qk = ed_alloc(sizeof(float) * (size_t)(env->m->n_align_heads > 0 ? env->m->n_align_heads : 1) *
                     CHUNK_ROWS * (size_t)h->n_audio_ctx, "alignment scores");
    if (!a->logits || !a->probs || !a->timing || !a->words || !a->pi || !a->toks || !a->qk) {
        asr_aligner_free(a);
        return ENCDEC_ERR_NOMEM;
    }
    a->pj = a->pi + rows + h->n_audio_ctx + 2;
    return ENCDEC_OK;
}

static void free_timing(asr_aligner *a) {
    for (int i = 0; i < a->n_timing; i++) free(a->timing[i].text);
    a->n_timing = 0;
}

void asr_aligner_free(asr_aligner *a) {
    if (a->timing) free_timing(a);
    free(a->logits);
    free(a->qk);
    free(a->w);
    free(a->mat);
    free(a->cost);
    free(a->acc);
    free(a->trace);
    free(a->pi);
    free(a->toks);
    free(a->tmp);
    free(a->probs);
    free(a->timing);
    free(a->words);
    memset(a, 0, sizeof *a);
}

encdec_status asr_aligner_reserve(asr_aligner *a, int H, int rows, int frames) {
    size_t cells = (size_t)rows * frames, dtw = (size_t)(rows + 1) * (frames + 1);
    size_t filt = (size_t)frames + MEDFILT_WIDTH;
    encdec_status st = ENCDEC_OK;
    if (cells * H > a->cap_w) {
        st = grow((void **)&a->w, sizeof(float) * cells * H, "alignment weights");
        if (!st) a->cap_w = cells * H;
    }
    if (!st && cells > a->cap_cells) {
        st = grow((void **)&a->mat, sizeof(float) * cells, "alignment matrix");
        if (!st) st = grow((void **)&a->cost, sizeof(double) * cells, "alignment costs");
        if (!st) a->cap_cells = cells;
    }
    if (!st && dtw > a->cap_dtw) {
        st = grow((void **)&a->acc, sizeof(float) * dtw, "alignment path costs");
        if (!st) st = grow((void **)&a->trace, dtw, "alignment trace");
        if (!st) a->cap_dtw = dtw;
    }
    if (!st && filt > a->cap_frames) {
        st = grow((void **)&a->tmp, sizeof(float) * filt, "filter");
        if (!st) a->cap_frames = filt;
    }
    return st;
}

/* In place: x[n] = softmax(x[n]), in float as torch's. */
static void softmax_row(float *x, int n) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = fmaxf(mx, x[i]);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += x[i] = expf(x[i] - mx);
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* The pass over tokens[n_all]: per head, each row's scores over the first
 * `frames` positions softmaxed into a->w[head, row, :]; probs[i] = the
 * probability (over text tokens) of text token i after row k + i. */
static encdec_status attention_pass(asr_aligner *a, const asr_env *env, const int *tokens,
                                    int n_all, int k, const int *txt, int n, int frames) {
    const whisper_model *m = env->m;
    int V = m->hp.n_vocab, T = m->hp.n_audio_ctx, H = m->n_align_heads, eot = m->sp.eot;
    rn_restart(env->rn, -1);
    encdec_status st = ENCDEC_OK;
    for (int p0 = 0; !st && p0 < n_all; p0 += CHUNK_ROWS) {
        int rows = n_all - p0 < CHUNK_ROWS ? n_all - p0 : CHUNK_ROWS;
        st = env->x->feed_scores(env->x->ctx, tokens + p0, rows, a->logits, a->qk);
        if (st) break;
        for (int r = 0; r < rows; r++) {
            int i = p0 + r - k;   /* the text token this row predicts */
            if (i < 0 || i >= n) continue;
            const float *lg = a->logits + (size_t)r * V;
            float mx;
            double lse = k_logsumexp(lg, eot, &mx);
            a->probs[i] = (float)exp((double)lg[txt[i]] - mx - lse);
        }
        for (int h = 0; h < H; h++) {
            const float *qk = a->qk + (size_t)h * rows * T;
            for (int r = 0; r < rows; r++) {
                float *dst = a->w + ((size_t)h * n_all + p0 + r) * frames;
                memcpy(dst, qk + (size_t)r * T, sizeof(float) * (size_t)frames);
                softmax_row(dst, frames);
            }
        }
    }
    return st;
}

/* Per head: each frame standardised over the rows, then median-filtered
 * along the frames; the mean over heads into a->mat. */
static void head_matrix(asr_aligner *a, int H, int rows, int frames) {
    memset(a->mat, 0, sizeof(float) * (size_t)rows * frames);
    for (int h = 0; h < H; h++) {
        float *w = a->w + (size_t)h * rows * frames;
        for (int f = 0; f < frames; f++) {
            double s = 0, s2 = 0;
            for (int r = 0; r < rows; r++) s += w[(size_t)r * frames + f];
            double mean = s / rows;
            for (int r = 0; r < rows; r++) {
                double d = w[(size_t)r * frames + f] - mean;
                s2 += d * d;
            }
            float mf = (float)mean, sd = (float)sqrt(s2 / rows);
            for (int r = 0; r < rows; r++) w[(size_t)r * frames + f] = (w[(size_t)r * frames + f] - mf) / sd;
        }
        asr_median_filter(w, rows, frames, MEDFILT_WIDTH, a->tmp);
        for (size_t i = 0; i < (size_t)rows * frames; i++) a->mat[i] += w[i];
    }
    for (size_t i = 0; i < (size_t)rows * frames; i++) a->mat[i] /= (float)H;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* numpy's median of the nonzero durations (0 when none). */
static double median_duration(const asr_wtiming *t, int n) {
    double d[512];
    int k = 0;
    for (int i = 0; i < n && k < 512; i++)
        if (t[i].end - t[i].start != 0) d[k++] = t[i].end - t[i].start;
    if (k == 0) return 0.0;
    qsort(d, (size_t)k, sizeof *d, cmp_double);
    return k % 2 ? d[k / 2] : (d[k / 2 - 1] + d[k / 2]) / 2;
}

static double round2(double x) { return nearbyint(x * 100.0) / 100.0; }

/* A word's text as one of SENTENCE_END's characters (Python's `in`). */
static int sentence_end(const char *w) { return strstr(SENTENCE_END, w) != NULL; }

/* The words of a->timing handed to the segments, with openai-whisper's
 * corrections at pauses and segment edges. */
static void assign(asr_aligner *a, const asr_env *env, asr_wseg *segs, int n_segs, const int *tok,
                   int seek, double med, double max_dur, double last_speech) {
    double offset = seek * (double)MEL_HOP / MEL_SAMPLE_RATE;
    int wi = 0, nw = 0, eot = env->m->sp.eot;
    for (int s = 0; s < n_segs; s++) {
        asr_wseg *g = &segs[s];
        int n_text = 0;
        for (int i = 0; i < g->n; i++) n_text += tok[g->first + i] < eot;
        asr_word *words = a->words + nw;
        int cnt = 0;
        for (int saved = 0; wi < a->n_timing && saved < n_text; wi++) {
            const asr_wtiming *t = &a->timing[wi];
            if (t->text[0])
                words[cnt++] = (asr_word){t->text, round2(offset + t->start), round2(offset + t->end),
                                          t->probability};
            saved += t->n_tok;
        }
        g->words = words;
        g->n_words = cnt;
        nw += cnt;
        if (cnt == 0) continue;
        asr_word *w0 = &words[0], *wl = &words[cnt - 1];
        /* after a pause, the first words are not longer than twice the median */
        if (w0->end - last_speech > med * 4 &&
            (w0->end - w0->start > max_dur || (cnt > 1 && words[1].end - w0->start > max_dur * 2))) {
            if (cnt > 1 && words[1].end - words[1].start > max_dur) {
                double b = fmax(words[1].end / 2, words[1].end - max_dur);
                w0->end = words[1].start = b;
            }
            w0->start = fmax(0, w0->end - max_dur);
        }
        /* the segment's own start when its first word is too long, else the word's */
        if (g->start < w0->end && g->start - 0.5 > w0->start)
            w0->start = fmax(0, fmin(w0->end - med, g->start));
        else
            g->start = w0->start;
        if (g->end > wl->start && g->end + 0.5 < wl->end)
            wl->end = fmax(wl->start + med, g->end);
        else
            g->end = wl->end;
        last_speech = g->end;
    }
}

encdec_status asr_align_window(asr_aligner *a, const asr_env *env, const asr_params *p,
                               const int *sot_seq, int n_sot_seq, const int *tok, asr_wseg *segs,
                               int n_segs, int seek, int seg_frames, double last_speech) {
    const whisper_model *m = env->m;
    int eot = m->sp.eot, H = m->n_align_heads, frames = seg_frames / 2;
    free_timing(a);
    for (int s = 0; s < n_segs; s++) segs[s].n_words = 0, segs[s].words = NULL;
    /* the pass: sot_seq, <|notimestamps|>, the text tokens, eot */
    int *all = a->toks, k = n_sot_seq, n = 0;
    memcpy(all, sot_seq, sizeof(int) * (size_t)k);
    all[k] = m->sp.no_timestamps;
    int *txt = all + k + 1;
    for (int s = 0; s < n_segs; s++)
        for (int i = 0; i < segs[s].n; i++)
            if (tok[segs[s].first + i] < eot) txt[n++] = tok[segs[s].first + i];
    if (n == 0 || frames < 1) return ENCDEC_OK;
    int n_all = k + n + 2;
    txt[n] = eot;
    encdec_status st = asr_aligner_reserve(a, H, n_all, frames);
    if (!st) st = attention_pass(a, env, all, n_all, k, txt, n, frames);
    if (st) return st;
    /* words of the text tokens (and eot, which closes the last one) */
    int by_unicode = 0;
    if (m->multilingual && sot_seq[1] >= m->sp.lang_first) {
        const char *code = wlang_code(sot_seq[1] - m->sp.lang_first);
        static const char *const NO_SPACES[] = {"zh", "ja", "th", "lo", "my", "yue"};
        for (size_t i = 0; code && i < sizeof NO_SPACES / sizeof NO_SPACES[0]; i++)
            by_unicode |= !strcmp(code, NO_SPACES[i]);
    }
    int nw = asr_split_words(m->tok, txt, n + 1, eot, by_unicode, a->timing);
    if (nw < 0) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: words");
    a->n_timing = nw;
    head_matrix(a, H, n_all, frames);
    /* the path through rows k .. k + n (the row of <|notimestamps|> and of each text token) */
    for (int r = 0; r <= n; r++)
        for (int f = 0; f < frames; f++)
            a->cost[(size_t)r * frames + f] = -(double)a->mat[(size_t)(k + r) * frames + f];
    int len = asr_dtw(a->cost, n + 1, frames, a->acc, a->trace, a->pi, a->pj);
    /* the time at which each text index is first reached */
    double *jump = a->cost;   /* [n + 1], the costs are read */
    int nj = 0;
    for (int i = 0; i < len && nj <= n; i++)
        if (i == 0 || a->pi[i] != a->pi[i - 1]) jump[nj++] = a->pj[i] / TOKENS_PER_SECOND;
    int real = nw - 1;   /* the last "word" is eot */
    a->n_timing = real > 0 ? real : 0;
    free(a->timing[nw - 1].text);
    int b = 0;
    for (int w = 0; w < real; w++) {
        asr_wtiming *t = &a->timing[w];
        int e = b + t->n_tok;
        t->start = b < nj ? jump[b] : 0;
        t->end = e < nj ? jump[e] : 0;
        double pr = 0;
        for (int i = b; i < e; i++) pr += a->probs[i];
        t->probability = e > b ? (float)(pr / (e - b)) : 0;
        b = e;
    }
    double med = fmin(0.7, median_duration(a->timing, real)), max_dur = med * 2;
    if (real > 0 && med > 0) {   /* sentence ends not longer than twice the median */
        for (int i = 1; i < real; i++) {
            asr_wtiming *t = &a->timing[i];
            if (t->end - t->start <= max_dur) continue;
            if (sentence_end(t->text)) t->end = t->start + max_dur;
            else if (sentence_end(a->timing[i - 1].text)) t->start = t->end - max_dur;
        }
    }
    if (asr_merge_punctuations(a->timing, real, p->prepend_punctuations, p->append_punctuations))
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: words");
    assign(a, env, segs, n_segs, tok, seek, med, max_dur, last_speech);
    return ENCDEC_OK;
}

double asr_words_end(const asr_wseg *segs, int n) {
    for (int s = n - 1; s >= 0; s--)
        if (segs[s].n_words > 0) return segs[s].words[segs[s].n_words - 1].end;
    return n > 0 ? segs[n - 1].end : NAN;
}
