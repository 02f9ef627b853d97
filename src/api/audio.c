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
    if (params && (!(params->max_seconds >= 0) || isinf(params->max_seconds)))
        return ed_fail(ENCDEC_ERR_ARG, "maximum duration %g s is not a finite number >= 0",
                       params->max_seconds);
    if (params && (!(params->fifo_wait_s >= 0) || isinf(params->fifo_wait_s)))
        return ed_fail(ENCDEC_ERR_ARG, "FIFO wait %g s is not a finite number >= 0",
                       params->fifo_wait_s);
    return audio_load_ex(path, MEL_SAMPLE_RATE, params, pcm, n_samples, info);
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
