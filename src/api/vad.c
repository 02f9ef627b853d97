/* vad.c - the public speech detector (encdec_vad_*) and the speech spans
 * of a recording in memory or read from a stream (api.h api_vad_spans). */
#include "api/api.h"
#include "audio/audio.h"
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

/* The spans of n samples whose frames have probs[nf]. */
static encdec_status spans_from(const float *probs, size_t nf, size_t n, const encdec_vad_params *p,
                                asr_span **spans, int *n_spans) {
    asr_speech_opts o;
    to_opts(p, &o);
    int k = asr_speech_spans(probs, nf, n, VAD_FRAME, &o, NULL, 0);
    asr_span *sp = k ? ed_alloc(sizeof *sp * (size_t)k, "speech spans") : NULL;
    if (k && !sp) return ENCDEC_ERR_NOMEM;
    if (k) asr_speech_spans(probs, nf, n, VAD_FRAME, &o, sp, k);
    *spans = sp;
    *n_spans = k;
    return ENCDEC_OK;
}

#define STREAM_FRAMES 256   /* frames read from a stream at once */

/* frame_probs of a stream's samples, read in blocks (the network's state
 * carried across them: the same numbers), *n its length; rewound after. */
static encdec_status stream_probs(const vad_model *m, ed_pool *pool, audio_stream *as,
                                  const atomic_int *cancel, float **probs, size_t *nf, size_t *n) {
    *probs = NULL;
    *nf = *n = 0;
    vad_state *s = NULL;
    float *buf = ed_alloc(sizeof(float) * VAD_FRAME * STREAM_FRAMES, "VAD block"), *p = NULL;
    size_t have = 0, cap = 0;
    encdec_status st = buf ? vad_state_new(m, &s) : ENCDEC_ERR_NOMEM;
    for (int end = 0; !st && !end;) {
        size_t got = 0;
        if (cancel && atomic_load(cancel)) st = ed_fail(ENCDEC_ERR_CANCELLED, "the request was cancelled");
        if (!st) st = audio_stream_read(as, buf + have, VAD_FRAME * STREAM_FRAMES - have, &got);
        if (st) break;
        end = got == 0;
        have += got;
        *n += got;
        size_t k = have / VAD_FRAME + (end ? 1 : 0);   /* the last one zero-padded */
        if (*nf + k > cap) {
            cap = (*nf + k) * 2;
            float *q = realloc(p, sizeof(float) * cap);
            if (!q) {
                st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: VAD probabilities");
                break;
            }
            p = q;
        }
        if (end) memset(buf + have, 0, sizeof(float) * (k * VAD_FRAME - have));
        if (k) st = vad_probs(s, pool, buf, k, p + *nf);
        *nf += k;
        have -= have < k * VAD_FRAME ? have : k * VAD_FRAME;
        if (have) memmove(buf, buf + k * VAD_FRAME, sizeof(float) * have);
    }
    vad_state_free(s);
    free(buf);
    if (!st) st = audio_stream_rewind(as);
    if (st) {
        free(p);
        *nf = 0;
        return st;
    }
    *probs = p;
    return ENCDEC_OK;
}

encdec_status api_vad_spans(const encdec_vad *v, ed_pool *pool, const float *pcm, size_t n,
                            audio_stream *as, const encdec_vad_params *p, const atomic_int *cancel,
                            asr_span **spans, int *n_spans, size_t *n_samples) {
    *spans = NULL;
    *n_spans = 0;
    float *probs = NULL;
    size_t nf = 0;
    encdec_status st = api_vad_check(p);
    if (st) return st;
    if (as) st = stream_probs(v->m, pool, as, cancel, &probs, &nf, &n);
    else st = frame_probs(v->m, pool, pcm, n, &probs, &nf);
    if (!st && n == 0) st = ed_fail(ENCDEC_ERR_AUDIO, "the audio has no samples");
    if (!st) st = spans_from(probs, nf, n, p, spans, n_spans);
    free(probs);
    if (n_samples) *n_samples = n;
    return st;
}

/* The public spans of sp[k] (freed). */
static encdec_status public_spans(asr_span *sp, int k, encdec_span **out, int *n_out) {
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
    if (!st) st = api_vad_spans(v, pool, pcm, n_samples, NULL, &p, NULL, &sp, &k, NULL);
    ed_pool_free(pool);
    return st ? st : public_spans(sp, k, out, n_out);
}

encdec_status encdec_vad_speech_file(const encdec_vad *v, const char *path,
                                     const encdec_audio_params *audio,
                                     const encdec_vad_params *params, int n_threads,
                                     encdec_span **out, int *n_out, size_t *n_samples) {
    ed_err_clear();
    if (!out || !n_out) return ed_fail(ENCDEC_ERR_ARG, "encdec_vad_speech_file: an output is NULL");
    *out = NULL;
    *n_out = 0;
    if (n_samples) *n_samples = 0;
    if (!v) return ed_fail(ENCDEC_ERR_ARG, "encdec_vad: the VAD is NULL");
    if (!path || !*path) return ed_fail(ENCDEC_ERR_ARG, "encdec_vad_speech_file: empty path");
    encdec_vad_params p = params ? *params : encdec_vad_default_params();
    ed_pool *pool = NULL;
    audio_stream *as = NULL;
    asr_span *sp = NULL;
    int k = 0;
    encdec_status st = pool_for(n_threads, &pool);
    if (!st) st = audio_stream_open(&as, path, VAD_RATE, audio);
    if (!st) st = api_vad_spans(v, pool, NULL, 0, as, &p, NULL, &sp, &k, n_samples);
    audio_stream_close(as);
    ed_pool_free(pool);
    return st ? st : public_spans(sp, k, out, n_out);
}
