/* test_audio_av.c - what libsndfile does not read, through FFmpeg (issue:
 * m4a / mp4 / webm refused): AAC in m4a (44.1 kHz stereo) and mp4 (22.05
 * kHz, beside a video track), Opus in webm (48 kHz), made from the first
 * 6 s of ../shared/audio/jfk.wav with Debian's ffmpeg
 * (tests/data/av/README). Checked against that WAV: the length, the level
 * and the waveform (correlation at the best lag within 50 ms: the codecs
 * are lossy, their delays handled by FFmpeg); the same samples from a
 * path, from memory and block by block; a webm cut short reported as
 * truncated (an error with strict); bytes no decoder knows refused with
 * both decoders' reasons; an mp4 opened while another thread opens WAVs
 * (libsndfile's process-wide open error, which that thread resets, made it
 * "bad audio: No Error." in CI). A build without FFmpeg must refuse these
 * files with a message that says why. */
#include "audio/audio.h"
#include "audio/av.h"
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AV ED_TEST_DATA "/av/"
#define RATE 16000

static float *g_ref;
static size_t g_nref;

/* The best normalised correlation of x with the reference over lags of at
 * most 50 ms. */
static double best_corr(const float *x, size_t n) {
    double best = -1;
    size_t m = n < g_nref ? n : g_nref;
    for (int lag = -800; lag <= 800; lag += 4) {
        double sxy = 0, sxx = 0, syy = 0;
        for (size_t i = 1000; i + 1000 < m; i++) {
            long j = (long)i + lag;
            if (j < 0 || (size_t)j >= n) continue;
            sxy += (double)x[j] * g_ref[i];
            sxx += (double)x[j] * x[j];
            syy += (double)g_ref[i] * g_ref[i];
        }
        double c = sxy / sqrt(sxx * syy + 1e-30);
        if (c > best) best = c;
    }
    return best;
}

static double rms(const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrt(s / (double)(n ? n : 1));
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    *len = b && fread(b, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return b;
}

/* gain: the level the fixture was made at (ffmpeg spreads mono to stereo
 * at -3 dB a channel; the mean of the two is then 1/sqrt(2) of it). */
static void check_file(const char *name, int rate, int channels, double gain, double min_corr) {
    char path[512];
    snprintf(path, sizeof path, AV "%s", name);
    float *x = NULL;
    size_t n = 0;
    encdec_audio_info info;
    CHECK_STATUS(encdec_audio_load_ex(path, NULL, &x, &n, &info), ENCDEC_OK, "");
    if (!x) return;
    CHECK_EQ_INT(info.sample_rate, rate);
    CHECK_EQ_INT(info.channels, channels);
    CHECK(!info.truncated);
    CHECK(fabs(n / (double)RATE - 6.0) < 0.06);
    CHECK(fabs(info.seconds - n / (double)RATE) < 1e-9);
    double r = rms(x, n), r0 = rms(g_ref, g_nref), c = best_corr(x, n);
    printf("  %s: %.3f s, rms %.4f (wav %.4f), correlation %.3f\n", name, n / (double)RATE, r, r0, c);
    CHECK(fabs(r - gain * r0) < 0.05 * r0);
    CHECK(c > min_corr);
    /* from memory, and block by block: the same samples */
    size_t len = 0;
    unsigned char *bytes = slurp(path, &len);
    float *y = NULL;
    size_t ny = 0;
    CHECK_STATUS(encdec_audio_load_memory(bytes, len, 0, &y, &ny), ENCDEC_OK, "");
    CHECK(ny == n && y && !memcmp(x, y, n * sizeof *x));
    audio_stream *s = NULL;
    CHECK_STATUS(audio_stream_open(&s, path, RATE, NULL), ENCDEC_OK, "");
    for (int pass = 0; s && pass < 2; pass++) {   /* and again after a rewind */
        float buf[1000];
        size_t at = 0, got = 0, same = 1;
        while (!audio_stream_read(s, buf, 1000, &got) && got) {
            same &= at + got <= n && !memcmp(buf, x + at, got * sizeof *buf);
            at += got;
        }
        CHECK(same && at == n);
        CHECK_STATUS(audio_stream_rewind(s), ENCDEC_OK, "");
    }
    audio_stream_close(s);
    free(bytes);
    encdec_free(y);
    encdec_free(x);
}

static atomic_int g_stop;

static void *open_wavs(void *arg) {   /* WAVs opened and closed until told to stop */
    (void)arg;
    while (!atomic_load(&g_stop)) {
        audio_stream *s = NULL;
        if (audio_stream_open(&s, ED_SHARED_DIR "/audio/jfk.wav", RATE, NULL) == ENCDEC_OK)
            audio_stream_close(s);
    }
    return NULL;
}

/* What only FFmpeg decodes, opened 200 times while another thread opens
 * WAVs through libsndfile: every open goes to FFmpeg. */
static void concurrent_opens(void) {
    pthread_t th;
    if (pthread_create(&th, NULL, open_wavs, NULL) != 0) {
        CHECK(0);
        return;
    }
    int ok = 0;
    for (int i = 0; i < 200; i++) {
        audio_stream *s = NULL;
        encdec_status st = audio_stream_open(&s, AV "jfk6.mp4", RATE, NULL);
        if (st) fprintf(stderr, "  open %d: %s\n", i, encdec_last_error());
        ok += st == ENCDEC_OK;
        audio_stream_close(s);
    }
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);
    printf("jfk6.mp4 opened beside another thread's WAVs: %d of 200\n", ok);
    CHECK_EQ_INT(ok, 200);
}

int main(void) {
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio");
    if (!audio_av_available()) {
        float *x = NULL;
        size_t n = 0;
        CHECK_STATUS(encdec_audio_load(AV "jfk6.m4a", 0, &x, &n), ENCDEC_ERR_AUDIO,
                     "this build has no FFmpeg for m4a, mp4, webm");
        return check_done();
    }
    float *all = NULL;
    size_t n_all = 0;
    CHECK_STATUS(encdec_audio_load(ED_SHARED_DIR "/audio/jfk.wav", 0, &all, &n_all), ENCDEC_OK, "");
    if (!all) return check_done();
    g_ref = all;
    g_nref = n_all < 6 * RATE ? n_all : 6 * RATE;
    check_file("jfk6.m4a", 44100, 2, sqrt(0.5), 0.99);
    check_file("jfk6.mp4", 22050, 1, 1.0, 0.99);
    check_file("jfk6.webm", 48000, 1, 1.0, 0.99);
    concurrent_opens();

    /* a webm cut after 11000 of its bytes: what is there, and the report */
    float *x = NULL;
    size_t n = 0;
    encdec_audio_info info;
    CHECK_STATUS(encdec_audio_load_ex(AV "jfk6-cut.webm", NULL, &x, &n, &info), ENCDEC_OK, "");
    CHECK(info.truncated && fabs(info.expected_seconds - 6.0) < 0.05);
    CHECK(n > RATE && n < 5 * RATE);
    encdec_free(x);
    encdec_audio_params p = encdec_audio_default_params();
    p.strict = 1;
    x = NULL;
    CHECK_STATUS(encdec_audio_load_ex(AV "jfk6-cut.webm", &p, &x, &n, &info), ENCDEC_ERR_AUDIO,
                 "the file ends early");
    /* the limit on length applies as for any file */
    p = encdec_audio_default_params();
    p.max_seconds = 2;
    CHECK_STATUS(encdec_audio_load_ex(AV "jfk6.webm", &p, &x, &n, &info), ENCDEC_ERR_AUDIO,
                 "the limit is 2 s");
    /* bytes neither decoder knows */
    static const char junk[] = "this is not audio, in any container, at all: 0123456789abcdef";
    CHECK_STATUS(encdec_audio_load_memory(junk, sizeof junk, 0, &x, &n), ENCDEC_ERR_AUDIO,
                 "Format not recognised. (nor by FFmpeg:");
    encdec_free(all);
    return check_done();
}
