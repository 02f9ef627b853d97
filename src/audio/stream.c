/* stream.c - an audio file decoded and resampled block by block (see
 * audio.h audio_stream_*): libsndfile (or, for what it does not read,
 * FFmpeg: av.h) reads interleaved float in blocks,
 * each block is averaged over channels, checked (finite), clipped and fed to
 * libsoxr (high quality); what soxr emits is handed out in order. Memory is
 * a few blocks whatever the length of the recording. The same path serves
 * audio_load (read to the end into one buffer), so a stream and a whole load
 * give the same samples.
 */
#include "audio/audio.h"
#include "audio/av.h"
#include "base/err.h"
#include "base/mem.h"

#include <math.h>
#include <pthread.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CHANNELS 1024
#define MAX_RATE AUDIO_MAX_RATE
#define BLOCK_FRAMES 16384

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

struct audio_stream {
    char *name;                 /* for messages */
    char *path;                 /* a regular file (opened again to rewind), else NULL */
    unsigned char *owned;       /* a stream's bytes, read whole (audio_source) */
    FILE *spool;                /* or their temporary copy */
    membuf mem;
    SNDFILE *sf;
    audio_av *av;               /* FFmpeg's decoder when libsndfile did not know the format */
    SF_INFO sfi;                /* rate, channels, frames (from av when it decodes) */
    int rate;                   /* the target rate */
    encdec_audio_params p;
    soxr_t sx;                  /* NULL when the file is at the target rate */
    float *block, *mono;        /* [BLOCK_FRAMES * channels], [BLOCK_FRAMES] */
    float *out;                 /* [out_cap] soxr's output not yet handed out */
    size_t out_cap, out_at, out_n;
    size_t frames;              /* file frames read so far */
    size_t emitted;             /* target-rate samples handed out */
    int eof, flushed;
    encdec_audio_info info;
    int open_err;               /* libsndfile's error when its open failed (sf_error(NULL)) */
    char open_why[160];         /* and its message */
};

/* Clips to [-1, 1] (NaN to 0), as a 16-bit conversion would. */
static void clip_unit(float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] > 1.0f ? 1.0f : (x[i] < -1.0f ? -1.0f : (x[i] == x[i] ? x[i] : 0.0f));
}

static encdec_status too_long(const char *name, double seconds, double max_seconds, int partial) {
    return ed_fail(ENCDEC_ERR_AUDIO, "%s: the audio is %s%.1f s long; the limit is %g s", name,
                   partial ? "at least " : "", seconds, max_seconds);
}

/* "data : N (should be M)" in libsndfile's log: a WAV / AIFF / ... whose
 * header promises N bytes of audio where the file holds M. Returns N / M
 * when N > M (the dummy sizes that streamed files write, 0 and ~4 GiB, aside),
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

void audio_stream_close(audio_stream *s) {
    if (!s) return;
    if (s->sf) sf_close(s->sf);
    audio_av_close(s->av);
    soxr_delete(s->sx);
    free(s->block);
    free(s->mono);
    free(s->out);
    free(s->owned);
    if (s->spool) fclose(s->spool);
    free(s->name);
    free(s->path);
    free(s);
}

/* A fresh resampler (none at the target rate). */
static encdec_status new_resampler(audio_stream *s) {
    soxr_delete(s->sx);
    s->sx = NULL;
    if (s->sfi.samplerate == s->rate) return ENCDEC_OK;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    soxr_error_t err = NULL;
    s->sx = soxr_create(s->sfi.samplerate, s->rate, 1, &err, &io, &q, NULL);
    if (!s->sx || err)
        return ed_fail(ENCDEC_ERR_AUDIO, "%s: resampling %d -> %d Hz failed: %s", s->name,
                       s->sfi.samplerate, s->rate, err ? err : "no resampler");
    return ENCDEC_OK;
}

/* The header's numbers, checked; the buffers. */
static encdec_status setup(audio_stream *s) {
    SF_INFO *i = &s->sfi;
    if (i->samplerate <= 0 || i->samplerate > MAX_RATE)
        return ed_fail(ENCDEC_ERR_AUDIO, "%s: sample rate %d Hz is out of range", s->name, i->samplerate);
    if (i->channels <= 0 || i->channels > MAX_CHANNELS)
        return ed_fail(ENCDEC_ERR_AUDIO, "%s: %d channels is out of range (1..%d)", s->name,
                       i->channels, MAX_CHANNELS);
    double max_s = s->p.max_seconds;
    if (max_s > 0 && i->frames > 0 && i->frames != SF_COUNT_MAX &&
        (double)i->frames / i->samplerate > max_s)
        return too_long(s->name, (double)i->frames / i->samplerate, max_s, 0);
    s->block = ed_alloc((size_t)BLOCK_FRAMES * (size_t)i->channels * sizeof *s->block, "audio block");
    s->mono = ed_alloc(BLOCK_FRAMES * sizeof *s->mono, "audio block");
    s->out_cap = (size_t)((double)BLOCK_FRAMES * s->rate / i->samplerate) + 4096;
    s->out = ed_alloc(s->out_cap * sizeof *s->out, "resampled block");
    if (!s->block || !s->mono || !s->out) return ENCDEC_ERR_NOMEM;
    s->info.sample_rate = i->samplerate;
    s->info.channels = i->channels;
    return new_resampler(s);
}

/* libsndfile over the bytes in s->mem, from their start. */
static SNDFILE *open_virtual(audio_stream *s, SF_INFO *info) {
    SF_VIRTUAL_IO io = {vm_len, vm_seek, vm_read, vm_write, vm_tell};
    s->mem.pos = 0;
    return sf_open_virtual(&io, SFM_READ, info, &s->mem);
}

/* libsndfile over the temporary copy of a stream, from its start. */
static SNDFILE *open_spool(audio_stream *s, SF_INFO *info) {
    /* libsndfile reads a descriptor, not the FILE, and closes the one it is
     * given when it cannot open it (whatever close_desc says): it gets a
     * copy of its own, which it closes either way */
    int fd = dup(fileno(s->spool));
    if (fd < 0) return NULL;
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return NULL;
    }
    return sf_open_fd(fd, SFM_READ, info, 1);
}

/* libsndfile keeps the error of a failed open in one variable for the
 * whole process (sf_error(NULL), sf_strerror(NULL)), which any open in
 * another thread resets: read after a concurrent open it said "No Error.",
 * and a file only FFmpeg decodes (an .mp4 while the CLI read the next file)
 * failed instead of going to FFmpeg. The library's opens go one at a time,
 * each with its outcome kept in the stream before the next (other code in
 * the process that calls libsndfile is beyond this lock). */
static pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;
enum { FROM_PATH, FROM_SPOOL, FROM_MEMORY };

static SNDFILE *open_sf(audio_stream *s, int from, SF_INFO *info) {
    pthread_mutex_lock(&g_open_mu);
    SNDFILE *f = from == FROM_PATH    ? sf_open(s->path, SFM_READ, info)
                 : from == FROM_SPOOL ? open_spool(s, info)
                                      : open_virtual(s, info);
    s->open_err = f ? SF_ERR_NO_ERROR : sf_error(NULL);
    snprintf(s->open_why, sizeof s->open_why, "%s", f ? "" : sf_strerror(NULL));
    pthread_mutex_unlock(&g_open_mu);
    return f;
}

/* A stream named name at rate with options p; NULL when out of memory. */
static audio_stream *new_stream(const char *name, int rate, const encdec_audio_params *p) {
    audio_stream *s = ed_calloc(sizeof *s, "audio stream");
    if (!s) return NULL;
    s->rate = rate;
    if (p) s->p = *p;
    s->name = strdup(name);
    if (!s->name) {
        free(s);
        ed_fail(ENCDEC_ERR_NOMEM, "out of memory: audio stream");
        return NULL;
    }
    return s;
}

/* FFmpeg over the same source (libsndfile did not know the format), its
 * numbers into s->sfi. */
static encdec_status open_av(audio_stream *s) {
    audio_av_close(s->av);
    s->av = NULL;
    encdec_status st = audio_av_open(&s->av, s->name, s->path, s->mem.p, (size_t)s->mem.n, s->spool);
    if (st) return st;
    memset(&s->sfi, 0, sizeof s->sfi);
    s->sfi.samplerate = audio_av_rate(s->av);
    s->sfi.channels = audio_av_channels(s->av);
    double f = audio_av_frames(s->av);
    s->sfi.frames = f > 0 && f < 9e15 ? (sf_count_t)f : 0;
    return ENCDEC_OK;
}

/* The open's outcome: s checked and set up into *out, or freed. */
static encdec_status opened(audio_stream *s, encdec_status st, audio_stream **out) {
    if (!st && !s->sf) {
        const char *why = s->open_why;
        if (s->open_err != SF_ERR_UNRECOGNISED_FORMAT || !audio_av_available()) {
            st = ed_fail(ENCDEC_ERR_AUDIO, "%s: %s", s->name, why);
        } else if ((st = open_av(s)) == ENCDEC_ERR_AUDIO) {   /* FFmpeg's turn: it did not either */
            char av_why[512];
            size_t pre = strlen(s->name) + 2;
            const char *e = encdec_last_error();
            snprintf(av_why, sizeof av_why, "%s", strlen(e) > pre ? e + pre : e);
            st = ed_fail(ENCDEC_ERR_AUDIO, "%s: %s (nor by FFmpeg: %s)", s->name, why, av_why);
        }
    }
    if (!st) st = setup(s);
    if (st) {
        audio_stream_close(s);
        return st;
    }
    *out = s;
    return ENCDEC_OK;
}

encdec_status audio_stream_open(audio_stream **out, const char *path, int target_rate,
                                const encdec_audio_params *p) {
    *out = NULL;
    audio_stream *s = new_stream(strcmp(path, "-") ? path : "standard input", target_rate, p);
    if (!s) return ENCDEC_ERR_NOMEM;
    size_t len = 0;
    encdec_status st = audio_source(path, p, &s->owned, &len, &s->spool);
    if (!st && s->spool) {   /* a stream, copied whole to a temporary file */
        s->info.stream = 1;
        s->sf = open_sf(s, FROM_SPOOL, &s->sfi);
    } else if (!st && s->owned) {   /* ... or into memory */
        s->mem = (membuf){s->owned, (sf_count_t)len, 0};
        s->info.stream = 1;
        s->sf = open_sf(s, FROM_MEMORY, &s->sfi);
    } else if (!st) {
        s->path = strdup(path);
        if (!s->path) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: audio stream");
        else s->sf = open_sf(s, FROM_PATH, &s->sfi);
    }
    return opened(s, st, out);
}

encdec_status audio_stream_open_memory(audio_stream **out, const void *data, size_t len,
                                       const char *name, int target_rate,
                                       const encdec_audio_params *p) {
    *out = NULL;
    if (!data || len == 0) return ed_fail(ENCDEC_ERR_AUDIO, "%s: no data (0 bytes)", name);
    audio_stream *s = new_stream(name, target_rate, p);
    if (!s) return ENCDEC_ERR_NOMEM;
    s->mem = (membuf){data, (sf_count_t)len, 0};
    s->sf = open_sf(s, FROM_MEMORY, &s->sfi);
    return opened(s, ENCDEC_OK, out);
}

/* The end of the file: errors, the truncation report, soxr's tail. */
static encdec_status at_end(audio_stream *s) {
    s->eof = 1;
    if (s->sf && sf_error(s->sf) != SF_ERR_NO_ERROR)
        return ed_fail(ENCDEC_ERR_AUDIO, "%s: %s", s->name, sf_strerror(s->sf));
    if (s->frames == 0) return ed_fail(ENCDEC_ERR_AUDIO, "%s: contains no audio samples", s->name);
    /* FFmpeg: the container's duration, missed by 2% and half a second */
    double slack = 0.02 * (double)s->sfi.frames + 0.5 * s->sfi.samplerate;
    double promised = s->sf ? promised_frames(s->sf, &s->sfi, s->frames)
                    : (double)s->sfi.frames > (double)s->frames + slack ? (double)s->sfi.frames : 0;
    if (promised > 0) {
        s->info.truncated = 1;
        s->info.expected_seconds = promised / s->sfi.samplerate;
        if (s->p.strict)
            return ed_fail(ENCDEC_ERR_AUDIO, "%s: the file ends early: it holds %.2f s of the "
                           "%.2f s its header promises", s->name,
                           (double)s->frames / s->sfi.samplerate, s->info.expected_seconds);
    }
    return ENCDEC_OK;
}

/* One more block from the file into s->out (through soxr); at the end,
 * soxr's tail, then s->flushed. */
static encdec_status refill(audio_stream *s) {
    s->out_at = s->out_n = 0;
    if (s->eof) {
        if (!s->sx) {
            s->flushed = 1;
            return ENCDEC_OK;
        }
        size_t odone = 0;
        soxr_error_t err = soxr_process(s->sx, NULL, 0, NULL, s->out, s->out_cap, &odone);
        if (err) return ed_fail(ENCDEC_ERR_AUDIO, "%s: resampling failed: %s", s->name, err);
        s->out_n = odone;
        if (!odone) s->flushed = 1;
        clip_unit(s->out, odone);
        return ENCDEC_OK;
    }
    int ch = s->sfi.channels;
    sf_count_t got = s->av ? (sf_count_t)audio_av_read(s->av, s->block, BLOCK_FRAMES)
                           : sf_readf_float(s->sf, s->block, BLOCK_FRAMES);
    if (got < 0 && s->av) return ENCDEC_ERR_AUDIO;   /* recorded, naming the file */
    if (got <= 0) return at_end(s);
    for (sf_count_t i = 0; i < got; i++) {
        const float *f = s->block + (size_t)i * ch;
        double acc = 0;
        for (int c = 0; c < ch; c++) acc += f[c];
        float v = (float)(acc / ch);
        if (!isfinite(v))
            return ed_fail(ENCDEC_ERR_AUDIO, "%s: sample %zu is not a finite number", s->name,
                           s->frames + (size_t)i);
        s->mono[i] = v;
    }
    s->frames += (size_t)got;
    double max_s = s->p.max_seconds;
    if (max_s > 0 && (double)s->frames > max_s * s->sfi.samplerate)
        return too_long(s->name, (double)s->frames / s->sfi.samplerate, max_s, 1);
    /* clipped before the resampler too: values near FLT_MAX would make the
     * filter's sums Inf - Inf = NaN (found by fuzz_audio) */
    clip_unit(s->mono, (size_t)got);
    if (!s->sx) {
        memcpy(s->out, s->mono, (size_t)got * sizeof *s->out);
        s->out_n = (size_t)got;
        return ENCDEC_OK;
    }
    size_t idone = 0, odone = 0;
    soxr_error_t err = soxr_process(s->sx, s->mono, (size_t)got, &idone, s->out, s->out_cap, &odone);
    if (!err && idone != (size_t)got) err = "the resampler did not take a whole block";
    if (err) return ed_fail(ENCDEC_ERR_AUDIO, "%s: resampling %d -> %d Hz failed: %s", s->name,
                            s->sfi.samplerate, s->rate, err);
    clip_unit(s->out, odone);
    s->out_n = odone;
    return ENCDEC_OK;
}

encdec_status audio_stream_read(audio_stream *s, float *dst, size_t cap, size_t *got) {
    *got = 0;
    while (*got < cap) {
        if (s->out_at == s->out_n) {
            if (s->flushed) break;
            encdec_status st = refill(s);
            if (st) return st;
            continue;
        }
        size_t k = s->out_n - s->out_at;
        if (k > cap - *got) k = cap - *got;
        memcpy(dst + *got, s->out + s->out_at, k * sizeof *dst);
        s->out_at += k;
        *got += k;
    }
    s->emitted += *got;
    if (s->flushed && s->out_at == s->out_n) {
        if (s->emitted == 0)
            return ed_fail(ENCDEC_ERR_AUDIO, "%s: contains no audio samples at %d Hz", s->name, s->rate);
        s->info.seconds = (double)s->emitted / s->rate;
    }
    return ENCDEC_OK;
}

encdec_status audio_stream_rewind(audio_stream *s) {
    if (s->av) {   /* FFmpeg's decoder, opened again */
        SF_INFO was = s->sfi;
        encdec_status st = open_av(s);
        if (!st && (s->sfi.samplerate != was.samplerate || s->sfi.channels != was.channels))
            st = ed_fail(ENCDEC_ERR_AUDIO, "%s: the audio changed while it was read", s->name);
        if (st) return st;
        s->frames = s->emitted = s->out_at = s->out_n = 0;
        s->eof = s->flushed = 0;
        return new_resampler(s);
    }
    /* opened again rather than sf_seek: not every decoder seeks */
    sf_close(s->sf);
    SF_INFO again;
    memset(&again, 0, sizeof again);
    s->sf = open_sf(s, s->path ? FROM_PATH : s->spool ? FROM_SPOOL : FROM_MEMORY, &again);
    if (!s->sf || again.samplerate != s->sfi.samplerate || again.channels != s->sfi.channels)
        return ed_fail(ENCDEC_ERR_AUDIO, "%s: the audio changed while it was read", s->name);
    s->frames = s->emitted = s->out_at = s->out_n = 0;
    s->eof = s->flushed = 0;
    return new_resampler(s);
}

const encdec_audio_info *audio_stream_info(const audio_stream *s) { return &s->info; }

double audio_stream_hint_samples(const audio_stream *s) {
    if (s->sfi.frames <= 0 || s->sfi.frames == SF_COUNT_MAX) return 0;
    return (double)s->sfi.frames * s->rate / s->sfi.samplerate;
}
