/* audio.c - audio files to mono float PCM at a target rate, whole: the
 * samples of an audio_stream (stream.c) into one growing buffer (the
 * header's frame count is only a capacity hint: for MP3 it may be an
 * estimate); and a resampler for PCM that callers decoded themselves. */
#include "audio/audio.h"
#include "base/err.h"
#include "base/mem.h"

#include <errno.h>
#include <sndfile.h>
#include <soxr.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Grows *buf (of *cap floats) to hold at least need floats. */
static encdec_status grow(float **buf, size_t *cap, size_t need, const char *name) {
    if (need <= *cap) return ENCDEC_OK;
    size_t n = *cap ? *cap : 65536, bytes;
    while (n < need) {
        if (n > SIZE_MAX / 2) return ed_fail(ENCDEC_ERR_NOMEM, "%s: audio too large", name);
        n *= 2;
    }
    if (!ed_mul_ok(n, sizeof **buf, &bytes))
        return ed_fail(ENCDEC_ERR_NOMEM, "%s: audio too large", name);
    float *p = realloc(*buf, bytes);
    if (!p) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s: audio samples (%zu bytes)", name, bytes);
    *buf = p;
    *cap = n;
    return ENCDEC_OK;
}

/* Every sample of the open stream s into one buffer; s is closed. */
static encdec_status read_all(audio_stream *s, const char *name, float **pcm, size_t *n_samples,
                              encdec_audio_info *info) {
    float *buf = NULL;
    size_t cap = 0, n = 0;
    double hint = audio_stream_hint_samples(s);   /* a capacity hint, capped (may be garbage) */
    encdec_status st = hint > 0 ? grow(&buf, &cap, hint < (1 << 26) ? (size_t)hint + 1024 : 1 << 26, name)
                                : ENCDEC_OK;
    for (;;) {
        if (st || (st = grow(&buf, &cap, n + 65536, name))) break;
        size_t got;
        if ((st = audio_stream_read(s, buf + n, cap - n, &got)) || got == 0) break;
        n += got;
    }
    *info = *audio_stream_info(s);
    audio_stream_close(s);
    if (st) {
        free(buf);
        return st;
    }
    float *fit = realloc(buf, n * sizeof *buf);   /* give back the doubling slack */
    *pcm = fit ? fit : buf;
    *n_samples = n;
    return ENCDEC_OK;
}

static encdec_status check_args(float **pcm, size_t *n_samples, int target_rate,
                                const encdec_audio_params *p, encdec_audio_info *ai) {
    memset(ai, 0, sizeof *ai);
    if (!pcm || !n_samples) return ed_fail(ENCDEC_ERR_ARG, "audio_load: NULL argument");
    if (target_rate <= 0 || target_rate > AUDIO_MAX_RATE)
        return ed_fail(ENCDEC_ERR_ARG, "audio_load: target rate %d Hz is out of range", target_rate);
    if (p && !(p->max_seconds >= 0))
        return ed_fail(ENCDEC_ERR_ARG, "audio_load: max_seconds is %g", p->max_seconds);
    *pcm = NULL;
    *n_samples = 0;
    return ENCDEC_OK;
}

encdec_status audio_load_ex(const char *path, int target_rate, const encdec_audio_params *p,
                            float **pcm, size_t *n_samples, encdec_audio_info *info) {
    encdec_audio_info dummy;
    if (!info) info = &dummy;
    encdec_status st = check_args(pcm, n_samples, target_rate, p, info);
    if (st) return st;
    if (!path) return ed_fail(ENCDEC_ERR_ARG, "audio_load: NULL path");
    audio_stream *s;
    if ((st = audio_stream_open(&s, path, target_rate, p))) return st;
    return read_all(s, strcmp(path, "-") ? path : "standard input", pcm, n_samples, info);
}

encdec_status audio_load(const char *path, int target_rate, double max_seconds,
                         float **pcm, size_t *n_samples) {
    encdec_audio_params p = {.max_seconds = max_seconds};
    return audio_load_ex(path, target_rate, &p, pcm, n_samples, NULL);
}

encdec_status audio_load_memory(const void *data, size_t len, const char *name, int target_rate,
                                double max_seconds, float **pcm, size_t *n_samples) {
    encdec_audio_params p = {.max_seconds = max_seconds};
    return audio_load_memory_ex(data, len, name, target_rate, &p, pcm, n_samples, NULL);
}

encdec_status audio_load_memory_ex(const void *data, size_t len, const char *name,
                                   int target_rate, const encdec_audio_params *p, float **pcm,
                                   size_t *n_samples, encdec_audio_info *info) {
    encdec_audio_info dummy;
    if (!info) info = &dummy;
    encdec_status st = check_args(pcm, n_samples, target_rate, p, info);
    if (st) return st;
    if (!name) name = "(memory)";
    audio_stream *s;
    if ((st = audio_stream_open_memory(&s, data, len, name, target_rate, p))) return st;
    return read_all(s, name, pcm, n_samples, info);
}

encdec_status audio_resample(const float *in, size_t n_in, int rate_in,
                             int rate_out, float **out, size_t *n_out) {
    if ((!in && n_in > 0) || !out || !n_out)
        return ed_fail(ENCDEC_ERR_ARG, "audio_resample: NULL argument");
    if (rate_in <= 0 || rate_in > AUDIO_MAX_RATE || rate_out <= 0 || rate_out > AUDIO_MAX_RATE)
        return ed_fail(ENCDEC_ERR_ARG, "audio_resample: rates %d -> %d Hz are out of range",
                       rate_in, rate_out);
    *out = NULL;
    *n_out = 0;

    /* Room for n_in * rate_out / rate_in samples (soxr emits the rounded
     * count) plus slack; computed in double so huge inputs fail cleanly. */
    double want = (double)n_in * rate_out / rate_in + 16.0;
    size_t cap, bytes;
    if (want >= (double)(SIZE_MAX / sizeof(float)))
        return ed_fail(ENCDEC_ERR_NOMEM, "audio_resample: %zu samples is too many", n_in);
    cap = (size_t)want;
    if (!ed_mul_ok(cap, sizeof **out, &bytes))
        return ed_fail(ENCDEC_ERR_NOMEM, "audio_resample: %zu samples is too many", n_in);
    float *buf = ed_alloc(bytes, "resampled audio");
    if (!buf) return ENCDEC_ERR_NOMEM;
    if (n_in == 0) {
        *out = buf;
        return ENCDEC_OK;
    }
    if (rate_in == rate_out) {
        memcpy(buf, in, n_in * sizeof *in);
        *out = buf;
        *n_out = n_in;
        return ENCDEC_OK;
    }

    /* Streamed in blocks: one call with hours of input makes soxr grow its
     * internal FIFO to the whole input (and copy it on every growth). */
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    soxr_error_t err = NULL;
    soxr_t sx = soxr_create(rate_in, rate_out, 1, &err, &io, &q, NULL);
    size_t pos = 0, done_out = 0;
    while (sx && !err && done_out < cap) {
        size_t chunk = n_in - pos < 65536 ? n_in - pos : 65536, idone = 0, odone = 0;
        /* in == NULL tells soxr the input has ended: it flushes its tail */
        err = soxr_process(sx, chunk ? in + pos : NULL, chunk, &idone, buf + done_out,
                           cap - done_out, &odone);
        pos += idone;
        done_out += odone;
        if (!chunk && !odone) break;
        if (chunk && !idone && !odone && !err) err = "resampler made no progress";
    }
    soxr_delete(sx);
    if (err) {
        free(buf);
        return ed_fail(ENCDEC_ERR_AUDIO, "resampling %d -> %d Hz failed: %s", rate_in, rate_out, err);
    }
    *out = buf;
    *n_out = done_out;
    return ENCDEC_OK;
}
