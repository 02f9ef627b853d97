/* av.c - FFmpeg (libavformat + libavcodec) as an audio decoder (av.h). */
#include "audio/av.h"
#include "base/err.h"

#ifndef ENCDEC_HAVE_AV

int audio_av_available(void) { return 0; }

encdec_status audio_av_open(audio_av **out, const char *name, const char *path,
                            const unsigned char *mem, size_t len, FILE *spool) {
    (void)path, (void)mem, (void)len, (void)spool;
    *out = NULL;
    return ed_fail(ENCDEC_ERR_AUDIO, "%s: format not recognised (this build has no FFmpeg for "
                   "m4a, mp4, webm and the like)", name);
}
int audio_av_rate(const audio_av *a) { (void)a; return 0; }
int audio_av_channels(const audio_av *a) { (void)a; return 0; }
double audio_av_frames(const audio_av *a) { (void)a; return 0; }
long audio_av_read(audio_av *a, float *dst, long max) { (void)a, (void)dst, (void)max; return -1; }
void audio_av_close(audio_av *a) { (void)a; }

#else

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define IO_BUF 65536

struct audio_av {
    const char *name;
    AVFormatContext *fmt;
    AVCodecContext *dec;
    AVPacket *pkt;
    AVFrame *frm;
    AVIOContext *io;            /* custom I/O over mem or spool */
    const unsigned char *mem;
    size_t len, pos;
    FILE *spool;
    int stream, rate, channels;
    double frames;
    int at;                     /* the next sample of frm to hand out; -1: none held */
    int draining, done;
};

static void quiet(void) { av_log_set_level(AV_LOG_QUIET); }

int audio_av_available(void) { return 1; }

static int mem_read(void *opaque, uint8_t *buf, int size) {
    audio_av *a = opaque;
    if (a->spool) {
        size_t got = fread(buf, 1, (size_t)size, a->spool);
        return got ? (int)got : AVERROR_EOF;
    }
    size_t n = a->len - a->pos < (size_t)size ? a->len - a->pos : (size_t)size;
    if (n == 0) return AVERROR_EOF;
    memcpy(buf, a->mem + a->pos, n);
    a->pos += n;
    return (int)n;
}

static int64_t mem_seek(void *opaque, int64_t off, int whence) {
    audio_av *a = opaque;
    whence &= ~AVSEEK_FORCE;
    if (a->spool) {
        if (whence == AVSEEK_SIZE) {
            long here = ftell(a->spool);
            if (fseek(a->spool, 0, SEEK_END) != 0) return -1;
            long size = ftell(a->spool);
            return fseek(a->spool, here, SEEK_SET) == 0 ? size : -1;
        }
        return fseeko(a->spool, (off_t)off, whence) == 0 ? (int64_t)ftello(a->spool) : -1;
    }
    if (whence == AVSEEK_SIZE) return (int64_t)a->len;
    int64_t to = whence == SEEK_SET ? off : whence == SEEK_CUR ? (int64_t)a->pos + off
                                                               : (int64_t)a->len + off;
    if (to < 0 || to > (int64_t)a->len) return -1;
    a->pos = (size_t)to;
    return to;
}

static encdec_status fail(audio_av *a, const char *what, int err) {
    char msg[128];
    av_strerror(err, msg, sizeof msg);
    return ed_fail(ENCDEC_ERR_AUDIO, "%s: %s (%s)", a->name, what, msg);
}

/* The container, its first audio stream and that stream's decoder. */
static encdec_status open_all(audio_av *a, const char *path) {
    a->fmt = avformat_alloc_context();
    if (!a->fmt) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", a->name);
    if (!path) {
        unsigned char *buf = av_malloc(IO_BUF);
        a->io = buf ? avio_alloc_context(buf, IO_BUF, 0, a, mem_read, NULL, mem_seek) : NULL;
        if (!a->io) {
            av_free(buf);
            return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", a->name);
        }
        a->fmt->pb = a->io;
        a->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    }
    int r = avformat_open_input(&a->fmt, path, NULL, NULL);   /* frees fmt on failure */
    if (r < 0) return fail(a, "format not recognised", r);
    if ((r = avformat_find_stream_info(a->fmt, NULL)) < 0) return fail(a, "no stream found", r);
    const AVCodec *codec = NULL;
    a->stream = av_find_best_stream(a->fmt, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
    if (a->stream < 0 || !codec) return fail(a, "no audio stream FFmpeg can decode", a->stream);
    AVStream *st = a->fmt->streams[a->stream];
    a->dec = avcodec_alloc_context3(codec);
    if (!a->dec) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", a->name);
    if ((r = avcodec_parameters_to_context(a->dec, st->codecpar)) < 0 ||
        (r = avcodec_open2(a->dec, codec, NULL)) < 0)
        return fail(a, "its audio codec cannot be opened", r);
    a->rate = a->dec->sample_rate;
    a->channels = a->dec->ch_layout.nb_channels;
    if (a->rate <= 0 || a->channels <= 0)
        return ed_fail(ENCDEC_ERR_AUDIO, "%s: its audio stream names no rate or channels", a->name);
    double secs = st->duration > 0 ? st->duration * av_q2d(st->time_base)
                : a->fmt->duration > 0 ? a->fmt->duration / (double)AV_TIME_BASE : 0;
    a->frames = secs * a->rate;
    a->pkt = av_packet_alloc();
    a->frm = av_frame_alloc();
    if (!a->pkt || !a->frm) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", a->name);
    a->at = -1;
    return ENCDEC_OK;
}

encdec_status audio_av_open(audio_av **out, const char *name, const char *path,
                            const unsigned char *mem, size_t len, FILE *spool) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, quiet);
    *out = NULL;
    audio_av *a = calloc(1, sizeof *a);
    if (!a) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", name);
    a->name = name;
    a->mem = mem;
    a->len = len;
    a->spool = spool;
    if (spool && fseek(spool, 0, SEEK_SET) != 0) {
        free(a);
        return ed_fail(ENCDEC_ERR_IO, "%s: cannot read it again", name);
    }
    encdec_status st = open_all(a, path);
    if (st) {
        audio_av_close(a);
        return st;
    }
    *out = a;
    return ENCDEC_OK;
}

int audio_av_rate(const audio_av *a) { return a->rate; }
int audio_av_channels(const audio_av *a) { return a->channels; }
double audio_av_frames(const audio_av *a) { return a->frames; }

/* Sample i of channel c of the frame, as float. */
static float sample(const AVFrame *f, int c, int i, int channels) {
    int fmt = f->format, planar = av_sample_fmt_is_planar(fmt);
    const uint8_t *p = f->extended_data[planar ? c : 0];
    size_t k = planar ? (size_t)i : (size_t)i * (size_t)channels + (size_t)c;
    switch (av_get_packed_sample_fmt(fmt)) {
    case AV_SAMPLE_FMT_U8: return ((int)p[k] - 128) / 128.0f;
    case AV_SAMPLE_FMT_S16: return ((const int16_t *)p)[k] / 32768.0f;
    case AV_SAMPLE_FMT_S32: return (float)(((const int32_t *)p)[k] / 2147483648.0);
    case AV_SAMPLE_FMT_S64: return (float)(((const int64_t *)p)[k] / 9223372036854775808.0);
    case AV_SAMPLE_FMT_FLT: return ((const float *)p)[k];
    case AV_SAMPLE_FMT_DBL: return (float)((const double *)p)[k];
    default: return 0.0f;
    }
}

/* The next decoded frame into a->frm: 1, 0 at the end, -1 on an error. */
static int next_frame(audio_av *a) {
    for (;;) {
        int r = avcodec_receive_frame(a->dec, a->frm);
        if (r == 0) {
            if (a->frm->sample_rate != a->rate || a->frm->ch_layout.nb_channels != a->channels) {
                ed_fail(ENCDEC_ERR_AUDIO, "%s: the audio changes rate or channels midway", a->name);
                return -1;
            }
            enum AVSampleFormat pk = av_get_packed_sample_fmt(a->frm->format);
            if (pk != AV_SAMPLE_FMT_U8 && pk != AV_SAMPLE_FMT_S16 && pk != AV_SAMPLE_FMT_S32 &&
                pk != AV_SAMPLE_FMT_S64 && pk != AV_SAMPLE_FMT_FLT && pk != AV_SAMPLE_FMT_DBL) {
                ed_fail(ENCDEC_ERR_AUDIO, "%s: samples of an unknown type", a->name);
                return -1;
            }
            return 1;
        }
        if (r == AVERROR_EOF) return 0;
        if (r != AVERROR(EAGAIN)) {
            fail(a, "decoding failed", r);
            return -1;
        }
        if (a->draining) return 0;
        r = av_read_frame(a->fmt, a->pkt);
        if (r < 0) {   /* the end, or a cut / corrupt container: what was read is what there is */
            a->draining = 1;
            avcodec_send_packet(a->dec, NULL);
            continue;
        }
        if (a->pkt->stream_index == a->stream) avcodec_send_packet(a->dec, a->pkt);   /* bad: skipped */
        av_packet_unref(a->pkt);
    }
}

long audio_av_read(audio_av *a, float *dst, long max) {
    long n = 0;
    while (n < max && !a->done) {
        if (a->at < 0 || a->at >= a->frm->nb_samples) {
            if (a->at >= 0) av_frame_unref(a->frm);
            a->at = -1;
            int r = next_frame(a);
            if (r < 0) return -1;
            if (r == 0) {
                a->done = 1;
                break;
            }
            a->at = 0;
            continue;
        }
        long k = a->frm->nb_samples - a->at;
        if (k > max - n) k = max - n;
        for (long i = 0; i < k; i++)
            for (int c = 0; c < a->channels; c++)
                dst[(size_t)(n + i) * (size_t)a->channels + (size_t)c] =
                    sample(a->frm, c, a->at + (int)i, a->channels);
        a->at += (int)k;
        n += k;
    }
    return n;
}

void audio_av_close(audio_av *a) {
    if (!a) return;
    av_frame_free(&a->frm);
    av_packet_free(&a->pkt);
    avcodec_free_context(&a->dec);
    if (a->fmt) avformat_close_input(&a->fmt);
    if (a->io) {
        av_freep(&a->io->buffer);
        avio_context_free(&a->io);
    }
    free(a);
}

#endif
