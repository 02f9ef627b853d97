/* audio.c - audio files to mono float PCM at a target rate.
 *
 * libsndfile decodes (WAV, FLAC, OGG, MP3, ...) into interleaved float in
 * blocks; each block is averaged over channels into a growing mono buffer
 * (the header's frame count is only a capacity hint: for MP3 it may be an
 * estimate). libsoxr then converts the rate (high quality), streamed in blocks.
 */
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

#define MAX_CHANNELS 1024
#define MAX_RATE 1000000           /* Hz; anything above is a corrupt header */
#define BLOCK_FRAMES 16384

/* Grows *buf (of *cap floats) to hold at least need floats. */
static encdec_status grow(float **buf, size_t *cap, size_t need, const char *path) {
    if (need <= *cap) return ENCDEC_OK;
    size_t n = *cap ? *cap : 65536, bytes;
    while (n < need) {
        if (n > SIZE_MAX / 2) return ed_fail(ENCDEC_ERR_NOMEM, "%s: audio too large", path);
        n *= 2;
    }
    if (!ed_mul_ok(n, sizeof **buf, &bytes))
        return ed_fail(ENCDEC_ERR_NOMEM, "%s: audio too large", path);
    float *p = realloc(*buf, bytes);
    if (!p) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s: audio samples (%zu bytes)", path, bytes);
    *buf = p;
    *cap = n;
    return ENCDEC_OK;
}

static encdec_status too_long(const char *path, double seconds, double max_seconds, int partial) {
    return ed_fail(ENCDEC_ERR_AUDIO, "%s: the audio is %s%.1f s long; the limit is %g s", path,
                   partial ? "at least " : "", seconds, max_seconds);
}

/* Float files may hold values beyond full scale (and resampling can overshoot
 * a full-scale signal slightly): clip to [-1, 1] as a 16-bit conversion, such
 * as OpenAI's ffmpeg-based loader, does. */
static void clip_unit(float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] > 1.0f ? 1.0f : (x[i] < -1.0f ? -1.0f : (x[i] == x[i] ? x[i] : 0.0f));
}

/* Decodes every frame of an open file into mono floats at the file's rate. */
static encdec_status read_mono(SNDFILE *sf, const SF_INFO *info, const char *path,
                               double max_seconds, float **out, size_t *n_out) {
    int ch = info->channels;
    size_t max_frames = SIZE_MAX;
    double limit = max_seconds * info->samplerate;
    if (max_seconds > 0 && limit < 1e18) max_frames = (size_t)limit;
    float *block = ed_alloc((size_t)BLOCK_FRAMES * ch * sizeof *block, "audio block");
    if (!block) return ENCDEC_ERR_NOMEM;

    float *mono = NULL;
    size_t cap = 0, n = 0;
    encdec_status st = ENCDEC_OK;
    /* Start from the header's count (capped: it may be an estimate or garbage). */
    if (info->frames > 0) {
        size_t hint = info->frames < (sf_count_t)(1 << 26) ? (size_t)info->frames : (size_t)1 << 26;
        st = grow(&mono, &cap, hint, path);
    }
    while (st == ENCDEC_OK) {
        sf_count_t got = sf_readf_float(sf, block, BLOCK_FRAMES);
        if (got <= 0) break;
        if ((st = grow(&mono, &cap, n + (size_t)got, path)) != ENCDEC_OK) break;
        for (sf_count_t i = 0; i < got; i++) {
            const float *f = block + (size_t)i * ch;
            double acc = 0;
            for (int c = 0; c < ch; c++) acc += f[c];
            mono[n + (size_t)i] = (float)(acc / ch);
        }
        n += (size_t)got;
        if (n > max_frames) st = too_long(path, (double)n / info->samplerate, max_seconds, 1);
    }
    if (st == ENCDEC_OK && sf_error(sf) != SF_ERR_NO_ERROR)
        st = ed_fail(ENCDEC_ERR_AUDIO, "%s: %s", path, sf_strerror(sf));
    if (st == ENCDEC_OK && n == 0)
        st = ed_fail(ENCDEC_ERR_AUDIO, "%s: contains no audio samples", path);
    free(block);
    if (st != ENCDEC_OK) {
        free(mono);
        return st;
    }
    float *fit = realloc(mono, n * sizeof *mono);   /* give back the doubling slack */
    *out = fit ? fit : mono;
    *n_out = n;
    return ENCDEC_OK;
}

/* "data : N (should be M)" in libsndfile's log: a WAV / AIFF / ... whose
 * header promises N bytes of audio where the file holds M. Returns N / M
 * when N > M (placeholder sizes of streamed files, 0 and ~4 GiB, aside),
 * else 0. */
static double log_promise(SNDFILE *sf) {
    char log[8192];
    sf_command(sf, SFC_GET_LOG_INFO, log, sizeof log);
    for (const char *l = log; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        unsigned long long said, has;
        char tag[8];
        if (sscanf(l, "%7s : %llu (should be %llu)", tag, &said, &has) != 3) continue;
        if (strcmp(tag, "data") && strcmp(tag, "SSND")) continue;
        if (said > has && has > 0 && said < 0xffffff00ull) return (double)said / (double)has;
    }
    return 0;
}

/* The frames the header promised when more than the `got` read, else 0.
 * An MP3's count is exact with a Xing/Info header and an estimate without
 * one: it must miss 2% and half a second to count. */
static double promised_frames(SNDFILE *sf, const SF_INFO *info, size_t got) {
    int major = info->format & SF_FORMAT_TYPEMASK;
    double slack = major == SF_FORMAT_MPEG ? 0.02 * (double)info->frames + 0.5 * info->samplerate : 0;
    if (info->frames > 0 && info->frames != SF_COUNT_MAX &&
        (double)info->frames > (double)got + slack)
        return (double)info->frames;
    double r = major == SF_FORMAT_RAW ? 0 : log_promise(sf);
    return r > 0 ? r * (double)got : 0;
}

/* The open file sf (named path in messages) decoded, checked and resampled. */
static encdec_status decode_open(SNDFILE *sf, SF_INFO *info, const char *path, int target_rate,
                                 const encdec_audio_params *p, float **pcm, size_t *n_samples,
                                 encdec_audio_info *ai) {
    double max_seconds = p ? p->max_seconds : 0;
    encdec_status st = ENCDEC_OK;
    if (info->samplerate <= 0 || info->samplerate > MAX_RATE)
        st = ed_fail(ENCDEC_ERR_AUDIO, "%s: sample rate %d Hz is out of range", path, info->samplerate);
    else if (info->channels <= 0 || info->channels > MAX_CHANNELS)
        st = ed_fail(ENCDEC_ERR_AUDIO, "%s: %d channels is out of range (1..%d)", path,
                     info->channels, MAX_CHANNELS);
    else if (max_seconds > 0 && info->frames > 0 && info->frames != SF_COUNT_MAX &&
             (double)info->frames / info->samplerate > max_seconds)
        st = too_long(path, (double)info->frames / info->samplerate, max_seconds, 0);

    float *mono = NULL;
    size_t n = 0;
    double promised = 0;
    if (st == ENCDEC_OK) st = read_mono(sf, info, path, max_seconds, &mono, &n);
    if (st == ENCDEC_OK) promised = promised_frames(sf, info, n);
    sf_close(sf);
    if (st != ENCDEC_OK) return st;
    if (promised > 0) {
        ai->truncated = 1;
        ai->expected_seconds = promised / info->samplerate;
        if (p && p->strict) {
            free(mono);
            return ed_fail(ENCDEC_ERR_AUDIO, "%s: the file ends early: it holds %.2f s of the "
                           "%.2f s its header promises", path, (double)n / info->samplerate,
                           ai->expected_seconds);
        }
    }
    ai->sample_rate = info->samplerate;
    ai->channels = info->channels;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(mono[i])) {
            free(mono);
            return ed_fail(ENCDEC_ERR_AUDIO, "%s: sample %zu is not a finite number", path, i);
        }

    if (info->samplerate == target_rate) {
        *pcm = mono;
        *n_samples = n;
        clip_unit(*pcm, n);
        ai->seconds = (double)n / target_rate;
        return ENCDEC_OK;
    }
    /* clipped before too: values near FLT_MAX would make the filter's sums
     * Inf - Inf = NaN (found by fuzz_audio) */
    clip_unit(mono, n);
    st = audio_resample(mono, n, info->samplerate, target_rate, pcm, n_samples);
    free(mono);
    if (st == ENCDEC_OK) clip_unit(*pcm, *n_samples);
    if (st != ENCDEC_OK) {
        ed_err_prefix("%s", path);
        return st;
    }
    if (*n_samples == 0) {
        free(*pcm);
        *pcm = NULL;
        return ed_fail(ENCDEC_ERR_AUDIO, "%s: contains no audio samples at %d Hz", path, target_rate);
    }
    ai->seconds = (double)*n_samples / target_rate;
    return ENCDEC_OK;
}

static encdec_status check_args(float **pcm, size_t *n_samples, int target_rate,
                                const encdec_audio_params *p, encdec_audio_info *ai) {
    memset(ai, 0, sizeof *ai);
    if (!pcm || !n_samples) return ed_fail(ENCDEC_ERR_ARG, "audio_load: NULL argument");
    if (target_rate <= 0 || target_rate > MAX_RATE)
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

    /* libsndfile reports a missing file and a non-audio file alike: the
     * source tells them apart, and reads streams into memory. */
    unsigned char *buf;
    size_t len;
    if ((st = audio_source(path, p, &buf, &len))) return st;
    if (buf) {
        const char *name = strcmp(path, "-") ? path : "standard input";
        st = audio_load_memory_ex(buf, len, name, target_rate, p, pcm, n_samples, info);
        info->stream = 1;
        free(buf);
        return st;
    }
    SF_INFO sfi;
    memset(&sfi, 0, sizeof sfi);
    SNDFILE *sf = sf_open(path, SFM_READ, &sfi);
    if (!sf) return ed_fail(ENCDEC_ERR_AUDIO, "%s: %s", path, sf_strerror(NULL));
    return decode_open(sf, &sfi, path, target_rate, p, pcm, n_samples, info);
}

encdec_status audio_load(const char *path, int target_rate, double max_seconds,
                         float **pcm, size_t *n_samples) {
    encdec_audio_params p = {.max_seconds = max_seconds};
    return audio_load_ex(path, target_rate, &p, pcm, n_samples, NULL);
}

/* libsndfile's virtual I/O over a memory buffer. */
typedef struct {
    const unsigned char *p;
    sf_count_t n, pos;
} membuf;

static sf_count_t vm_len(void *u) { return ((membuf *)u)->n; }

static sf_count_t vm_seek(sf_count_t off, int whence, void *u) {
    membuf *m = u;
    sf_count_t to = whence == SEEK_SET ? off : whence == SEEK_CUR ? m->pos + off : m->n + off;
    if (to < 0 || to > m->n) return -1;
    return m->pos = to;
}

static sf_count_t vm_read(void *dst, sf_count_t n, void *u) {
    membuf *m = u;
    if (n > m->n - m->pos) n = m->n - m->pos;
    if (n <= 0) return 0;
    memcpy(dst, m->p + m->pos, (size_t)n);
    m->pos += n;
    return n;
}

static sf_count_t vm_write(const void *src, sf_count_t n, void *u) {
    (void)src, (void)n, (void)u;
    return 0;
}

static sf_count_t vm_tell(void *u) { return ((membuf *)u)->pos; }

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
    if (!data || len == 0) return ed_fail(ENCDEC_ERR_AUDIO, "%s: no data (0 bytes)", name);
    SF_VIRTUAL_IO io = {vm_len, vm_seek, vm_read, vm_write, vm_tell};
    membuf m = {data, (sf_count_t)len, 0};
    SF_INFO sfi;
    memset(&sfi, 0, sizeof sfi);
    SNDFILE *sf = sf_open_virtual(&io, SFM_READ, &sfi, &m);
    if (!sf) return ed_fail(ENCDEC_ERR_AUDIO, "%s: %s", name, sf_strerror(NULL));
    return decode_open(sf, &sfi, name, target_rate, p, pcm, n_samples, info);
}

encdec_status audio_resample(const float *in, size_t n_in, int rate_in,
                             int rate_out, float **out, size_t *n_out) {
    if ((!in && n_in > 0) || !out || !n_out)
        return ed_fail(ENCDEC_ERR_ARG, "audio_resample: NULL argument");
    if (rate_in <= 0 || rate_in > MAX_RATE || rate_out <= 0 || rate_out > MAX_RATE)
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
