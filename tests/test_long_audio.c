/* test_long_audio.c - recordings transcribed from the file, never held whole
 * (encdec_transcribe_file: audio decoded in blocks twice, memory bounded by
 * the window), and near-silence that costs little.
 *
 * 1. The same result as encdec_audio_load + encdec_transcribe: a 75 s
 *    stereo 22.05 kHz recording (resampled in blocks, three windows) made
 *    of speech from ../shared/audio, on tests/data/tiny-random-whisper:
 *    every token and every segment time equal.
 * 2. Bounded memory: an hour of near-silence (16-bit dither of +-1 LSB at
 *    8 kHz, a 58 MB file) transcribed in a child process whose peak RSS
 *    (getrusage) may grow by at most 48 MB over what the loaded model
 *    needed (holding the recording would take 230 MB of samples and 115 MB
 *    of log-mel; README: 2 h with tiny.en). Lighter in the sanitizer build
 *    (10 minutes).
 * 3. The file's report: a WAV cut short is transcribed with info.truncated,
 *    an error with strict; a missing file and bad options are errors.
 * 4. With the real tiny.en (skipped without it): 3 minutes of dither are
 *    skipped window by window without a decode (the model's no-speech
 *    probability and the -60 dBFS threshold agree), where openai-whisper's
 *    rule alone decodes (and hallucinates on) them.
 */
#include "check.h"
#include "child.h"
#include "golden.h"
#include "tmpdir.h"

#include <math.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MODEL_DIR ED_TEST_DATA "/tiny-random-whisper"

#ifdef ED_SANITIZED
#define LONG_S (10 * 60)
#else
#define LONG_S 3600
#endif
#define RSS_GROWTH_MB 48

static void write_sf(const char *path, int format, int rate, int ch, const float *x, sf_count_t n) {
    SF_INFO info = {.samplerate = rate, .channels = ch, .format = format};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf || (n && sf_writef_float(sf, x, n) != n)) {
        fprintf(stderr, "%s: %s\n", path, sf_strerror(sf));
        exit(2);
    }
    sf_close(sf);
}

/* seconds of +-1 LSB dither at rate Hz, 16-bit, written in blocks */
static void write_dither(const char *path, int rate, int seconds) {
    SF_INFO info = {.samplerate = rate, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) exit(2);
    short *b = malloc(sizeof *b * (size_t)rate);
    uint32_t s = 3;
    for (int t = 0; t < seconds; t++) {
        for (int i = 0; i < rate; i++) {
            s = s * 1664525u + 1013904223u;
            b[i] = (short)((int)(s >> 30) - 1);   /* -1, 0, 1, 2 -> mostly +-1 */
            if (b[i] > 1) b[i] = 0;
        }
        sf_writef_short(sf, b, rate);
    }
    free(b);
    sf_close(sf);
}

static encdec_session *open_session(const char *dir, encdec_model **m) {
    encdec_session *s = NULL;
    if (encdec_model_load(dir, m) != ENCDEC_OK) return NULL;
    encdec_session_params sp = {2, ENCDEC_KV_F32};
    if (encdec_session_new(*m, &sp, &s) != ENCDEC_OK) return NULL;
    return s;
}

/* 75 s of the speech clips of ../shared/audio, stereo at 22.05 kHz. */
static int write_speech(const char *path) {
    static const char *const clips[] = {"jfk.wav", "platforms_en.wav", "jfk.flac"};
    size_t cap = 22050 * 80, n = 0;
    float *st = calloc(cap * 2, sizeof *st);
    for (int r = 0; r < 3 && n < 22050 * 75; r++)
        for (int c = 0; c < 3 && n < 22050 * 75; c++) {
            char p[512];
            snprintf(p, sizeof p, "%s/audio/%s", ED_SHARED_DIR, clips[c]);
            SF_INFO in = {0};
            SNDFILE *sf = sf_open(p, SFM_READ, &in);
            if (!sf) {
                free(st);
                return 0;
            }
            float *buf = malloc(sizeof *buf * (size_t)in.frames * in.channels);
            sf_count_t got = sf_readf_float(sf, buf, in.frames);
            sf_close(sf);
            /* crude rate change by index (the file only has to be speech-like) */
            for (size_t i = 0; n < cap && i < (size_t)got * 22050 / in.samplerate; i++, n++) {
                float v = buf[(i * in.samplerate / 22050) * in.channels];
                st[2 * n] = v;
                st[2 * n + 1] = 0.5f * v;
            }
            free(buf);
        }
    write_sf(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 22050, 2, st, (sf_count_t)n);
    free(st);
    return 1;
}

static void test_same_as_whole(encdec_session *s) {
    const char *p = tmp_path("speech-22k.wav");
    if (!write_speech(p)) {
        printf("SKIP part 1: ../shared/audio not found\n");
        return;
    }
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.max_tokens = 24;
    float *pcm = NULL;
    size_t n = 0;
    encdec_result *a = NULL, *b = NULL;
    encdec_audio_info info;
    CHECK_STATUS(encdec_audio_load(p, 0, &pcm, &n), ENCDEC_OK, "");
    CHECK_STATUS(encdec_transcribe(s, pcm, n, &tp, &a), ENCDEC_OK, "");
    CHECK_STATUS(encdec_transcribe_file(s, p, NULL, &tp, &b, &info), ENCDEC_OK, "");
    CHECK_NEAR(info.seconds, n / 16000.0, 1e-9);
    CHECK(info.sample_rate == 22050 && info.channels == 2 && !info.truncated && !info.stream);
    if (a && b) {
        CHECK(encdec_result_timings(a)->n_windows >= 3);
        CHECK_EQ_INT(encdec_result_n_tokens(b), encdec_result_n_tokens(a));
        int same = encdec_result_n_tokens(a) == encdec_result_n_tokens(b);
        for (int i = 0; same && i < encdec_result_n_tokens(a); i++)
            same = encdec_result_token(a, i)->id == encdec_result_token(b, i)->id;
        CHECK(same);
        CHECK_EQ_INT(encdec_result_n_segments(b), encdec_result_n_segments(a));
        for (int i = 0; i < encdec_result_n_segments(a) && i < encdec_result_n_segments(b); i++) {
            CHECK(encdec_result_segment(a, i)->start == encdec_result_segment(b, i)->start);
            CHECK(encdec_result_segment(a, i)->end == encdec_result_segment(b, i)->end);
        }
        CHECK_STR(encdec_result_text(b), encdec_result_text(a));
    }
    encdec_result_free(a);
    encdec_result_free(b);
    encdec_free(pcm);
}

/* Part 2 in a child (its own peak RSS): exit 0 within the bound, 1 over
 * it, 2 failed; the growth in MB on the pipe. */
static void long_child(void *ctx, int fd) {
    const char *path = ctx;
    encdec_model *m = NULL;
    encdec_session *s = open_session(MODEL_DIR, &m);
    if (!s) _exit(2);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long before = ru.ru_maxrss;
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.max_tokens = 2;
    tp.temperature_increment = 0;   /* one decode per window: memory, not patience, is tested */
    encdec_result *r = NULL;
    encdec_status st = encdec_transcribe_file(s, path, NULL, &tp, &r, NULL);
    getrusage(RUSAGE_SELF, &ru);
    double mb = (ru.ru_maxrss - before) / 1024.0;
    char line[128];
    int len = snprintf(line, sizeof line, "%.1f %d %d\n", mb, st,
                       r ? encdec_result_timings(r)->n_windows : -1);
    if (write(fd, line, (size_t)len) != len) _exit(2);
    encdec_result_free(r);
    encdec_session_free(s);
    encdec_model_free(m);
    _exit(st ? 2 : mb <= RSS_GROWTH_MB ? 0 : 1);
}

static void test_bounded_memory(void) {
    const char *p = tmp_path("dither-long.wav");
    write_dither(p, 8000, LONG_S);
    char line[128];
    int ok = child_run(long_child, (void *)p, line, sizeof line);
    double mb = -1;
    int st = -1, windows = -1;
    sscanf(line, "%lf %d %d", &mb, &st, &windows);
    printf("%d s of dither at 8 kHz: peak RSS grew by %.1f MB (bound %d MB), %d windows\n", LONG_S,
           mb, RSS_GROWTH_MB, windows);
    CHECK(ok);
    CHECK_EQ_INT(st, ENCDEC_OK);
    CHECK_EQ_INT(windows, LONG_S / 30);
    CHECK(mb >= 0 && mb <= RSS_GROWTH_MB);
    unlink(p);
}

static void test_reports(encdec_session *s) {
    enum { RATE = 16000 };
    float *x = calloc(RATE * 2, sizeof *x);
    for (int i = 0; i < RATE * 2; i++) x[i] = 0.3f * sinf(i * 0.05f);
    const char *full = tmp_path("two-s.wav"), *cut = tmp_path("cut.wav");
    write_sf(full, SF_FORMAT_WAV | SF_FORMAT_PCM_16, RATE, 1, x, RATE * 2);
    free(x);
    FILE *f = fopen(full, "rb");
    static unsigned char whole[70000];
    size_t len = fread(whole, 1, sizeof whole, f);
    fclose(f);
    CHECK_EQ_INT(len, 44 + 4 * RATE);
    tmp_write(cut, whole, 44 + RATE);   /* 0.5 s of 2 */
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.max_tokens = 2;
    encdec_result *r = NULL;
    encdec_audio_info info;
    CHECK_STATUS(encdec_transcribe_file(s, cut, NULL, &tp, &r, &info), ENCDEC_OK, "");
    CHECK(info.truncated == 1);
    CHECK_NEAR(info.expected_seconds, 2.0, 1e-9);
    CHECK_NEAR(info.seconds, 0.5, 1e-9);
    if (r) CHECK_NEAR(encdec_result_timings(r)->audio_seconds, 0.5, 1e-9);
    encdec_result_free(r);
    r = NULL;
    encdec_audio_params strict = {.strict = 1};
    CHECK_STATUS(encdec_transcribe_file(s, cut, &strict, &tp, &r, NULL), ENCDEC_ERR_AUDIO,
                 "cut.wav: the file ends early: it holds 0.50 s of the 2.00 s");
    CHECK(r == NULL);
    CHECK_STATUS(encdec_transcribe_file(s, tmp_path("none.wav"), NULL, &tp, &r, NULL), ENCDEC_ERR_IO,
                 "none.wav: No such file");
    encdec_audio_params bad = {.max_seconds = -1};
    CHECK_STATUS(encdec_transcribe_file(s, full, &bad, &tp, &r, NULL), ENCDEC_ERR_ARG, "max_seconds -1");
    encdec_audio_params limit = {.max_seconds = 1};
    CHECK_STATUS(encdec_transcribe_file(s, full, &limit, &tp, &r, NULL), ENCDEC_ERR_AUDIO,
                 "two-s.wav: the audio is 2.0 s long; the limit is 1 s");
    CHECK_STATUS(encdec_transcribe_file(NULL, full, NULL, &tp, &r, NULL), ENCDEC_ERR_ARG, "session is NULL");
    encdec_transcribe_params badp = tp;   /* checked before the file is read */
    badp.temperature = 2;
    CHECK_STATUS(encdec_transcribe_file(s, tmp_path("none.wav"), NULL, &badp, &r, NULL),
                 ENCDEC_ERR_ARG, "temperature");
    CHECK_STATUS(encdec_transcribe_file(s, "", NULL, &tp, &r, NULL), ENCDEC_ERR_ARG, "empty path");
}

static void test_quiet_windows(void) {
    char dir[1024];
    if (!golden_find_model(dir, sizeof dir, "ENCDEC_TINY_EN", "whisper-tiny.en")) {
        printf("SKIP part 4: whisper tiny.en not installed\n");
        return;
    }
    const char *p = tmp_path("dither-3min.wav");
    write_dither(p, 16000, 180);
    encdec_model *m = NULL;
    encdec_session *s = open_session(dir, &m);
    CHECK(s != NULL);
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    encdec_result *r = NULL;
    CHECK_STATUS(encdec_transcribe_file(s, p, NULL, &tp, &r, NULL), ENCDEC_OK, "");
    if (r) {
        CHECK_EQ_INT(encdec_result_timings(r)->n_windows, 6);
        CHECK_EQ_INT(encdec_result_timings(r)->n_decodes, 0);
        CHECK_STR(encdec_result_text(r), "");
    }
    encdec_result_free(r);
    r = NULL;
    tp.silence_threshold_db = NAN;   /* openai-whisper's rule alone: decoded */
    tp.temperature_increment = 0;
    CHECK_STATUS(encdec_transcribe_file(s, p, NULL, &tp, &r, NULL), ENCDEC_OK, "");
    if (r) CHECK(encdec_result_timings(r)->n_decodes > 0);
    encdec_result_free(r);
    encdec_session_free(s);
    encdec_model_free(m);
}

int main(void) {
    if (!tmp_new("encdec-long-audio")) return 2;
    test_bounded_memory();   /* first: the child's RSS owes nothing to the rest */
    encdec_model *m = NULL;
    encdec_session *s = open_session(MODEL_DIR, &m);
    CHECK(s != NULL);
    if (s) {
        test_same_as_whole(s);
        test_reports(s);
    }
    encdec_session_free(s);
    encdec_model_free(m);
    test_quiet_windows();
    tmp_remove(tmp_dir);
    return check_done();
}
