/* transcribe_session.c - encdec_transcribe and encdec_transcribe_file: a
 * session's transcription, the audio checked, then either the speech alone
 * (transcribe_speech.c, with --vad or the caller's spans) or the whole
 * recording through transcribe.c's feed, on the session's own decoder
 * state. Above both (they call nothing here). */
#include "api/api.h"
#include "audio/audio.h"
#include "asr/asr_internal.h"
#include "base/err.h"
#include "base/isa.h"

#include <math.h>
#include <string.h>

/* The decoder state holds caches for at least n sequences: grown (state and
 * runner made again) the first time a request needs more, kept after. */
static encdec_status ensure_slots(encdec_session *s, int n) {
    if (s->st->n_slots >= n) return ENCDEC_OK;
    rn_free(&s->runner);
    whisper_state_free(s->st);
    s->st = NULL;
    encdec_status st = whisper_state_new(&s->st, api_w_run(s->model), s->pool, n, s->cross_kv);
    if (!st) {
        rn_model rm = whisper_rn_model(s->st);
        st = rn_init(&s->runner, &rm, ENCDEC_KV_FULL);
    }
    return st;
}

static encdec_status check_session(const encdec_session *s, encdec_result **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_transcribe: out is NULL");
    *out = NULL;
    if (!s) return ed_fail(ENCDEC_ERR_ARG, "encdec_transcribe: session is NULL");
    if (s->model->family != API_WHISPER)
        return ed_fail(ENCDEC_ERR_ARG, "encdec_transcribe: this is a %s model (text to text); "
                       "use encdec_generate", s->model->text.model_type);
    return ENCDEC_OK;
}

/* A session's passes: its own state, grown to the sequences asked for. */
typedef struct {
    encdec_session *s;
    asr_local lx;
} session_prep;

static encdec_status prep_session(void *ctx, int n_slots, encdec_kv_mode mode, asr_env *env) {
    session_prep *c = ctx;
    (void)mode;
    encdec_status st = ensure_slots(c->s, n_slots);
    if (st) return st;
    asr_local_init(&c->lx, c->s->st, &c->s->runner);
    env->rn = &c->s->runner;
    env->mel = c->s->mel;
    env->x = &c->lx.x;
    return ENCDEC_OK;
}

static encdec_status transcribe_feed(encdec_session *s, asr_feed *feed,
                                     const encdec_transcribe_params *params, encdec_result **out) {
    session_prep c = {s};
    return api_transcribe_feed(s->model, prep_session, &c, feed, params, out);
}

static encdec_status encdec_transcribe_body(encdec_session *s, const float *pcm, size_t n_samples,
                                const encdec_transcribe_params *params, encdec_result **out) {
    encdec_status st = check_session(s, out);
    if (st) return st;
    if (!pcm || n_samples == 0) return ed_fail(ENCDEC_ERR_AUDIO, "the audio has no samples");
    for (size_t i = 0; i < n_samples; i++)
        if (!isfinite(pcm[i]))
            return ed_fail(ENCDEC_ERR_AUDIO, "sample %zu is not a finite number", i);
    if (params && (params->vad || params->speech) && params->n_clip_timestamps == 0) {
        session_prep c = {s};
        return api_transcribe_speech(s->model, prep_session, &c, s->mel, s->pool, pcm, n_samples,
                                     params, NULL, out);
    }
    asr_feed f;
    st = asr_feed_memory(&f, pcm, n_samples, s->mel, NULL);
    if (!st) st = transcribe_feed(s, &f, params, out);
    asr_feed_free(&f);
    return st;
}

static encdec_status transcribe_file_body(encdec_session *s, const char *path,
                                          const encdec_audio_params *ap,
                                          const encdec_transcribe_params *params,
                                          encdec_result **out, encdec_audio_info *info) {
    encdec_status st = check_session(s, out);
    if (st) return st;
    if (!path || !*path) return ed_fail(ENCDEC_ERR_ARG, "encdec_transcribe_file: empty path");
    if (ap && (!(ap->max_seconds >= 0) || isinf(ap->max_seconds) || !(ap->fifo_wait_s >= 0) ||
               isinf(ap->fifo_wait_s)))
        return ed_fail(ENCDEC_ERR_ARG, "encdec_transcribe_file: max_seconds %g / fifo_wait_s %g "
                       "must be finite numbers >= 0", ap->max_seconds, ap->fifo_wait_s);
    encdec_transcribe_params pc = params ? *params : encdec_transcribe_default_params();
    if ((st = api_transcribe_check(s->model, &pc))) return st;   /* before reading hours of audio */
    audio_stream *as;
    if ((st = audio_stream_open(&as, path, MEL_SAMPLE_RATE, ap))) return st;
    if ((pc.vad || pc.speech) && pc.n_clip_timestamps == 0) {   /* the speech alone */
        session_prep c = {s};
        st = api_transcribe_speech_stream(s->model, prep_session, &c, s->mel, s->pool, as, &pc,
                                          NULL, out);
        if (info) *info = *audio_stream_info(as);
        audio_stream_close(as);
        return st;
    }
    asr_feed f;
    st = asr_feed_stream(&f, as, s->mel, NULL);   /* the first pass: length, log-mel maximum */
    if (info) *info = *audio_stream_info(as);
    if (!st) st = transcribe_feed(s, &f, params, out);
    asr_feed_free(&f);
    audio_stream_close(as);
    return st;
}

encdec_status encdec_transcribe_file(encdec_session *s, const char *path,
                                     const encdec_audio_params *audio,
                                     const encdec_transcribe_params *params, encdec_result **out,
                                     encdec_audio_info *info) {
    if (info) memset(info, 0, sizeof *info);
    int old = ed_isa_swap(s && s->model ? s->model->isa : ED_ISA_ANY);
    encdec_status st = transcribe_file_body(s, path, audio, params, out, info);
    ed_isa_swap(old);
    return st;
}

/* The kernels run under the model's kernel-set limit (base/isa.h). */
encdec_status encdec_transcribe(encdec_session *s, const float *pcm, size_t n_samples,
                                const encdec_transcribe_params *params, encdec_result **out) {
    int old = ed_isa_swap(s && s->model ? s->model->isa : ED_ISA_ANY);
    encdec_status st = encdec_transcribe_body(s, pcm, n_samples, params, out);
    ed_isa_swap(old);
    return st;
}
