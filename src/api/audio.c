/* audio.c - the public audio entry point. */
#include "api/api.h"
#include "audio/audio.h"
#include "base/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

encdec_status encdec_audio_load(const char *path, double max_seconds, float **pcm,
                                size_t *n_samples) {
    ed_err_clear();
    if (!pcm || !n_samples) return ed_fail(ENCDEC_ERR_ARG, "encdec_audio_load: NULL output");
    *pcm = NULL;
    *n_samples = 0;
    if (!path || !*path) return ed_fail(ENCDEC_ERR_ARG, "encdec_audio_load: empty path");
    if (!(max_seconds >= 0) || isinf(max_seconds))
        return ed_fail(ENCDEC_ERR_ARG, "maximum duration %g s is not a finite number >= 0", max_seconds);
    return audio_load(path, MEL_SAMPLE_RATE, max_seconds, pcm, n_samples);
}

/* The checks encdec_audio_load_ex makes of params. */
static encdec_status check_params(const encdec_audio_params *params) {
    if (params && (!(params->max_seconds >= 0) || isinf(params->max_seconds)))
        return ed_fail(ENCDEC_ERR_ARG, "maximum duration %g s is not a finite number >= 0",
                       params->max_seconds);
    if (params && (!(params->fifo_wait_s >= 0) || isinf(params->fifo_wait_s)))
        return ed_fail(ENCDEC_ERR_ARG, "FIFO wait %g s is not a finite number >= 0",
                       params->fifo_wait_s);
    return ENCDEC_OK;
}

encdec_audio_params encdec_audio_default_params(void) {
    encdec_audio_params p = {0};
    return p;
}

encdec_status encdec_audio_load_ex(const char *path, const encdec_audio_params *params,
                                   float **pcm, size_t *n_samples, encdec_audio_info *info) {
    ed_err_clear();
    if (info) memset(info, 0, sizeof *info);
    if (!pcm || !n_samples) return ed_fail(ENCDEC_ERR_ARG, "encdec_audio_load: NULL output");
    *pcm = NULL;
    *n_samples = 0;
    if (!path || !*path) return ed_fail(ENCDEC_ERR_ARG, "encdec_audio_load: empty path");
    encdec_status st = check_params(params);
    if (st) return st;
    return audio_load_ex(path, MEL_SAMPLE_RATE, params, pcm, n_samples, info);
}

struct encdec_audio_reader {
    audio_stream *s;
};

encdec_status encdec_audio_reader_open(const char *path, const encdec_audio_params *params,
                                       encdec_audio_reader **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_audio_reader_open: out is NULL");
    *out = NULL;
    if (!path || !*path) return ed_fail(ENCDEC_ERR_ARG, "encdec_audio_reader_open: empty path");
    encdec_status st = check_params(params);
    if (st) return st;
    encdec_audio_params p = params ? *params : encdec_audio_default_params();
    encdec_audio_reader *r = calloc(1, sizeof *r);
    if (!r) return ed_fail(ENCDEC_ERR_NOMEM, "audio: out of memory");
    if ((st = audio_stream_open(&r->s, path, MEL_SAMPLE_RATE, &p))) {
        free(r);
        return st;
    }
    *out = r;
    return ENCDEC_OK;
}

encdec_status encdec_audio_reader_read(encdec_audio_reader *r, float *dst, size_t cap,
                                       size_t *got) {
    ed_err_clear();
    if (got) *got = 0;
    if (!r || !got || (!dst && cap))
        return ed_fail(ENCDEC_ERR_ARG, "encdec_audio_reader_read: NULL reader or output");
    return cap ? audio_stream_read(r->s, dst, cap, got) : ENCDEC_OK;
}

void encdec_audio_reader_info(const encdec_audio_reader *r, encdec_audio_info *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (r) *out = *audio_stream_info(r->s);
}

void encdec_audio_reader_close(encdec_audio_reader *r) {
    if (!r) return;
    audio_stream_close(r->s);
    free(r);
}

void encdec_free(void *p) { free(p); }

encdec_status encdec_audio_load_memory(const void *data, size_t len, double max_seconds,
                                       float **pcm, size_t *n_samples) {
    ed_err_clear();
    if (!pcm || !n_samples) return ed_fail(ENCDEC_ERR_ARG, "encdec_audio_load_memory: NULL output");
    *pcm = NULL;
    *n_samples = 0;
    if (!(max_seconds >= 0) || isinf(max_seconds))
        return ed_fail(ENCDEC_ERR_ARG, "maximum duration %g s is not a finite number >= 0", max_seconds);
    return audio_load_memory(data, len, "audio data", MEL_SAMPLE_RATE, max_seconds, pcm, n_samples);
}
