/* transcribe_speech.c - a transcription of the speech alone (api.h
 * api_transcribe_speech): the spans of a recording (the VAD's, or the
 * caller's) put end to end and transcribed as one recording, every time of
 * the result mapped back to the recording's. From a stream nothing is held
 * whole: the VAD reads it once (its probabilities: 4 bytes per 32 ms), and
 * the feed reads it again through the spans. */
#include "api/api.h"
#include "audio/audio.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

/* The caller's spans, checked against the audio (n samples). */
encdec_status api_given_spans(const encdec_transcribe_params *p, size_t n, asr_span **out,
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

/* A stream's length in samples (read through once, then rewound). */
encdec_status api_stream_length(audio_stream *as, const atomic_int *cancel, size_t *n) {
    enum { BLOCK = 16384 };
    float *b = ed_alloc(sizeof(float) * BLOCK, "audio block");
    encdec_status st = b ? ENCDEC_OK : ENCDEC_ERR_NOMEM;
    size_t got = 1;
    *n = 0;
    while (!st && got) {
        if (cancel && atomic_load(cancel)) st = ed_fail(ENCDEC_ERR_CANCELLED, "the request was cancelled");
        else st = audio_stream_read(as, b, BLOCK, &got);
        *n += st ? 0 : got;
    }
    free(b);
    return st ? st : audio_stream_rewind(as);
}

static size_t joined_length(const asr_span *sp, int k) {
    size_t total = 0;
    for (int i = 0; i < k; i++) total += sp[i].end - sp[i].start;
    return total;
}

encdec_status api_transcribe_speech(const encdec_model *model, api_asr_prep prep, void *prep_ctx,
                                    const mel_ctx *mel, ed_pool *pool, const float *pcm, size_t n,
                                    const encdec_transcribe_params *p, const atomic_int *cancel,
                                    encdec_result **out) {
    double t0 = ed_now_ms();
    asr_span *sp = NULL;
    int k = 0;
    encdec_status st = ENCDEC_OK;
    if (p->speech) st = api_given_spans(p, n, &sp, &k);
    else st = api_vad_spans(p->vad, pool, pcm, n, NULL, &p->vad_params, cancel, &sp, &k, NULL);
    if (st) return st;
    size_t total = joined_length(sp, k);
    float *joined = ed_alloc(sizeof(float) * (total ? total : 1), "speech");
    if (!joined) {
        free(sp);
        return ENCDEC_ERR_NOMEM;
    }
    for (size_t i = 0, at = 0; i < (size_t)k; i++) {
        memcpy(joined + at, pcm + sp[i].start, sizeof(float) * (sp[i].end - sp[i].start));
        at += sp[i].end - sp[i].start;
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

encdec_status api_transcribe_speech_stream(const encdec_model *model, api_asr_prep prep,
                                           void *prep_ctx, const mel_ctx *mel, ed_pool *pool,
                                           audio_stream *as, const encdec_transcribe_params *p,
                                           const atomic_int *cancel, encdec_result **out) {
    double t0 = ed_now_ms();
    asr_span *sp = NULL;
    int k = 0;
    size_t n = 0;
    encdec_status st = ENCDEC_OK;
    if (p->speech) {
        st = api_stream_length(as, cancel, &n);
        if (!st) st = api_given_spans(p, n, &sp, &k);
    } else {
        st = api_vad_spans(p->vad, pool, NULL, 0, as, &p->vad_params, cancel, &sp, &k, &n);
    }
    if (st) return st;
    if (n == 0) {
        free(sp);
        return ed_fail(ENCDEC_ERR_AUDIO, "the audio has no samples");
    }
    api_speech speech = {sp, k, n, ed_now_ms() - t0};
    asr_feed f;
    int any = joined_length(sp, k) > 0;
    st = any ? asr_feed_stream_spans(&f, as, sp, k, mel, cancel) : ENCDEC_OK;
    if (!st) st = api_transcribe_feed_speech(model, prep, prep_ctx, any ? &f : NULL, p, &speech, out);
    if (any) asr_feed_free(&f);
    free(sp);
    return st;
}
