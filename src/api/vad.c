/* vad.c - the public speech detector (encdec_vad_*), and a transcription
 * that decodes only the speech it finds (api.h api_transcribe_speech). */
#include "api/api.h"
#include "asr/speech.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"
#include "models/vad.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct encdec_vad {
    vad_model *m;
};

encdec_vad_params encdec_vad_default_params(void) {
    encdec_vad_params p = {0.5f, NAN, 0, INFINITY, 2000, 400};
    return p;
}

encdec_status encdec_vad_load(const char *path, encdec_vad **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_vad_load: out is NULL");
    *out = NULL;
    encdec_vad *v = calloc(1, sizeof *v);
    if (!v) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: VAD");
    encdec_status st = vad_load(path, &v->m);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    return ENCDEC_OK;
}

void encdec_vad_free(encdec_vad *v) {
    if (!v) return;
    vad_free(v->m);
    free(v);
}

encdec_status api_vad_check(const encdec_vad_params *p) {
    if (!(p->threshold > 0 && p->threshold < 1))
        return ed_fail(ENCDEC_ERR_ARG, "VAD threshold %g is out of range (0, 1)", p->threshold);
    if (!isnan(p->neg_threshold) && !(p->neg_threshold > 0 && p->neg_threshold <= p->threshold))
        return ed_fail(ENCDEC_ERR_ARG, "VAD neg_threshold %g is out of range (0, threshold %g]",
                       p->neg_threshold, p->threshold);
    if (p->min_speech_duration_ms < 0 || p->min_silence_duration_ms < 0 || p->speech_pad_ms < 0 ||
        p->speech_pad_ms > 60000 || p->min_speech_duration_ms > 3600000 ||
        p->min_silence_duration_ms > 3600000)
        return ed_fail(ENCDEC_ERR_ARG, "VAD durations must be >= 0 ms (min_speech %d, "
                       "min_silence %d, speech_pad %d)", p->min_speech_duration_ms,
                       p->min_silence_duration_ms, p->speech_pad_ms);
    if (!(p->max_speech_duration_s > 0))
        return ed_fail(ENCDEC_ERR_ARG, "VAD max_speech_duration_s %g must be > 0 (INFINITY: no "
                       "limit)", p->max_speech_duration_s);
    return ENCDEC_OK;
}

/* The frames' probabilities of pcm[n], zero-padded to whole frames (as
 * faster-whisper pads), on pool: *probs malloc'd, *nf. */
static encdec_status frame_probs(const vad_model *m, ed_pool *pool, const float *pcm, size_t n,
                                 float **probs, size_t *nf) {
    *probs = NULL;
    *nf = n / VAD_FRAME + 1;
    vad_state *s = NULL;
    float *p = ed_alloc(sizeof(float) * *nf, "VAD probabilities");
    encdec_status st = p ? vad_state_new(m, &s) : ENCDEC_ERR_NOMEM;
    size_t whole = n / VAD_FRAME;
    if (!st) st = vad_probs(s, pool, pcm, whole, p);
    if (!st) {
        float last[VAD_FRAME] = {0};
        memcpy(last, pcm + whole * VAD_FRAME, sizeof(float) * (n - whole * VAD_FRAME));
        st = vad_probs(s, pool, last, 1, p + whole);
    }
    vad_state_free(s);
    if (st) {
        free(p);
        return st;
    }
    *probs = p;
    return ENCDEC_OK;
}

static encdec_status pool_for(int n_threads, ed_pool **pool) {
    if (n_threads < 1 || n_threads > ED_POOL_MAX_THREADS)
        return ed_fail(ENCDEC_ERR_ARG, "thread count %d is out of range 1..%d", n_threads,
                       ED_POOL_MAX_THREADS);
    return ed_pool_new(pool, n_threads);
}

static encdec_status check_pcm(const encdec_vad *v, const float *pcm, size_t n) {
    if (!v) return ed_fail(ENCDEC_ERR_ARG, "encdec_vad: the VAD is NULL");
    if (!pcm || n == 0) return ed_fail(ENCDEC_ERR_AUDIO, "the audio has no samples");
    for (size_t i = 0; i < n; i++)
        if (!isfinite(pcm[i])) return ed_fail(ENCDEC_ERR_AUDIO, "sample %zu is not a finite number", i);
    return ENCDEC_OK;
}

encdec_status encdec_vad_probs(const encdec_vad *v, const float *pcm, size_t n_samples,
                               int n_threads, float **probs, size_t *n_frames) {
    ed_err_clear();
    if (!probs || !n_frames) return ed_fail(ENCDEC_ERR_ARG, "encdec_vad_probs: an output is NULL");
    *probs = NULL;
    *n_frames = 0;
    ed_pool *pool = NULL;
    encdec_status st = check_pcm(v, pcm, n_samples);
    if (!st) st = pool_for(n_threads, &pool);
    if (!st) st = frame_probs(v->m, pool, pcm, n_samples, probs, n_frames);
    ed_pool_free(pool);
    return st;
}

static void to_opts(const encdec_vad_params *p, asr_speech_opts *o) {
    asr_speech_default(o);
    o->threshold = p->threshold;
    o->neg_threshold = p->neg_threshold;
    o->min_speech_ms = p->min_speech_duration_ms;
    o->max_speech_s = p->max_speech_duration_s;
    o->min_silence_ms = p->min_silence_duration_ms;
    o->pad_ms = p->speech_pad_ms;
}

/* The spans of pcm[n] on pool: *spans malloc'd (NULL when none), *n_spans. */
static encdec_status spans_of(const encdec_vad *v, ed_pool *pool, const float *pcm, size_t n,
                              const encdec_vad_params *p, asr_span **spans, int *n_spans) {
    *spans = NULL;
    *n_spans = 0;
    float *probs;
    size_t nf;
    encdec_status st = api_vad_check(p);
    if (!st) st = frame_probs(v->m, pool, pcm, n, &probs, &nf);
    if (st) return st;
    asr_speech_opts o;
    to_opts(p, &o);
    int k = asr_speech_spans(probs, nf, n, VAD_FRAME, &o, NULL, 0);
    asr_span *sp = k ? ed_alloc(sizeof *sp * (size_t)k, "speech spans") : NULL;
    if (k && !sp) st = ENCDEC_ERR_NOMEM;
    if (!st && k) asr_speech_spans(probs, nf, n, VAD_FRAME, &o, sp, k);
    free(probs);
    if (st) return st;
    *spans = sp;
    *n_spans = k;
    return ENCDEC_OK;
}

encdec_status encdec_vad_speech(const encdec_vad *v, const float *pcm, size_t n_samples,
                                const encdec_vad_params *params, int n_threads, encdec_span **out,
                                int *n_out) {
    ed_err_clear();
    if (!out || !n_out) return ed_fail(ENCDEC_ERR_ARG, "encdec_vad_speech: an output is NULL");
    *out = NULL;
    *n_out = 0;
    encdec_vad_params p = params ? *params : encdec_vad_default_params();
    ed_pool *pool = NULL;
    asr_span *sp = NULL;
    int k = 0;
    encdec_status st = check_pcm(v, pcm, n_samples);
    if (!st) st = pool_for(n_threads, &pool);
    if (!st) st = spans_of(v, pool, pcm, n_samples, &p, &sp, &k);
    ed_pool_free(pool);
    if (st) return st;
    encdec_span *o = k ? ed_alloc(sizeof *o * (size_t)k, "speech spans") : NULL;
    if (k && !o) {
        free(sp);
        return ENCDEC_ERR_NOMEM;
    }
    for (int i = 0; i < k; i++) o[i] = (encdec_span){sp[i].start, sp[i].end};
    free(sp);
    *out = o;
    *n_out = k;
    return ENCDEC_OK;
}

/* The caller's spans, checked against the audio (n samples). */
static encdec_status given_spans(const encdec_transcribe_params *p, size_t n, asr_span **out,
                                 int *n_out) {
    *out = NULL;
    *n_out = 0;
    if (p->n_speech < 0 || p->n_speech > (1 << 24))
        return ed_fail(ENCDEC_ERR_ARG, "n_speech %d is out of range", p->n_speech);
    asr_span *sp = p->n_speech ? ed_alloc(sizeof *sp * (size_t)p->n_speech, "speech spans") : NULL;
    if (p->n_speech && !sp) return ENCDEC_ERR_NOMEM;
    for (int i = 0; i < p->n_speech; i++) {
        const encdec_span *s = &p->speech[i];
        if (!(s->start < s->end) || s->end > n || (i > 0 && s->start < p->speech[i - 1].end)) {
            free(sp);
            return ed_fail(ENCDEC_ERR_ARG, "speech span %d [%zu, %zu) is empty, overlaps the one "
                           "before or passes the audio's %zu samples", i, s->start, s->end, n);
        }
        sp[i] = (asr_span){s->start, s->end};
    }
    *out = sp;
    *n_out = p->n_speech;
    return ENCDEC_OK;
}

encdec_status api_transcribe_speech(const encdec_model *model, api_asr_prep prep, void *prep_ctx,
                                    const mel_ctx *mel, ed_pool *pool, const float *pcm, size_t n,
                                    const encdec_transcribe_params *p, const atomic_int *cancel,
                                    encdec_result **out) {
    double t0 = ed_now_ms();
    asr_span *sp = NULL;
    int k = 0;
    encdec_status st = ENCDEC_OK;
    if (p->speech) st = given_spans(p, n, &sp, &k);
    else st = spans_of(p->vad, pool, pcm, n, &p->vad_params, &sp, &k);
    if (st) return st;
    size_t total = 0;
    for (int i = 0; i < k; i++) total += sp[i].end - sp[i].start;
    float *joined = ed_alloc(sizeof(float) * (total ? total : 1), "speech");
    if (!joined) {
        free(sp);
        return ENCDEC_ERR_NOMEM;
    }
    for (int i = 0, at = 0; i < k; i++) {
        memcpy(joined + at, pcm + sp[i].start, sizeof(float) * (sp[i].end - sp[i].start));
        at += (int)(sp[i].end - sp[i].start);
    }
    api_speech speech = {sp, k, n, ed_now_ms() - t0};
    asr_feed f;
    st = total ? asr_feed_memory(&f, joined, total, mel, cancel) : ENCDEC_OK;
    if (!st) st = api_transcribe_feed_speech(model, prep, prep_ctx, total ? &f : NULL, p, &speech, out);
    if (total) asr_feed_free(&f);
    free(joined);
    free(sp);
    return st;
}
