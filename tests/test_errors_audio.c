/* test_errors_audio.c - bad and unusual audio through the public API.
 *
 * encdec_audio_load on files written here into a temporary directory (with
 * libsndfile, or by hand where the file must be broken): a missing file, a
 * directory, text named .wav, a WAV cut inside its header or its data, a WAV
 * with no samples, random bytes behind a fLaC magic, a non-finite sample,
 * the max_seconds limit (jfk.wav against 5 s) and bad limits; files that end
 * before their header says (WAV, FLAC: a report, or an error when strict),
 * an empty file, FIFOs with and without a writer, character devices (/dev/zero)
 * against the stream limit (encdec_audio_load_ex). Then
 * encdec_transcribe with tests/data/tiny-random-whisper on audio that must
 * work: 3 s of digital silence (empty text), two hours of 8 kHz 8-bit
 * silence (loaded, resampled, 240 windows, empty text) and 65 s of seeded
 * noise (3 windows, max_tokens honoured per window).
 */
#include "check.h"
#include "tmpdir.h"

#include <math.h>
#include <pthread.h>
#include <time.h>
#include <signal.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL_DIR ED_TEST_DATA "/tiny-random-whisper"
#define JFK ED_SHARED_DIR "/audio/jfk.wav"

#define SILENCE_S (2 * 3600)     /* the long silent recording */

/* Writes n mono float samples at rate Hz as `format` (SF_FORMAT_WAV | ...). */
static void write_sf(const char *path, int format, int rate, const float *x, sf_count_t n) {
    SF_INFO info = {.samplerate = rate, .channels = 1, .format = format};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf || (n && sf_writef_float(sf, x, n) != n)) {
        fprintf(stderr, "%s: %s\n", path, sf_strerror(sf));
        exit(2);
    }
    sf_close(sf);
}

/* Seeded uniform noise in [-amp, amp]. */
static void noise(float *x, size_t n, uint32_t seed, float amp) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 8388608.0f - 1.0f) * amp;
    }
}

/* Loads path; returns the status, *n the sample count (pcm is freed). */
static encdec_status load(const char *path, double max_s, size_t *n) {
    float *pcm = (float *)&pcm;              /* must be reset to NULL on failure */
    size_t dummy;
    if (!n) n = &dummy;
    encdec_status st = encdec_audio_load(path, max_s, &pcm, n);
    if (st) {
        CHECK(pcm == NULL);
        CHECK_EQ_INT(*n, 0);
    } else {
        CHECK(pcm != NULL);
    }
    encdec_free(st ? NULL : pcm);
    return st;
}

static void test_bad_files(void) {
    const char *p = tmp_path("missing.wav");
    CHECK_STATUS(load(p, 0, NULL), ENCDEC_ERR_IO, "missing.wav: No such file or directory");
    CHECK_STATUS(load(tmp_dir, 0, NULL), ENCDEC_ERR_IO, "is a directory");
    CHECK_STATUS(load("", 0, NULL), ENCDEC_ERR_ARG, "empty path");
    CHECK_STATUS(encdec_audio_load(p, 0, NULL, NULL), ENCDEC_ERR_ARG, "NULL output");

    p = tmp_path("x.wav");
    const char *text = "this is not audio, only some text in a file named x.wav\n";
    tmp_write(p, text, strlen(text));
    CHECK_STATUS(load(p, 0, NULL), ENCDEC_ERR_AUDIO, "x.wav: ");

    /* a valid 1 s 16-bit WAV, then cuts of it */
    enum { RATE = 16000 };
    float *x = malloc(RATE * sizeof *x);
    noise(x, RATE, 1, 0.5f);
    p = tmp_path("good.wav");
    write_sf(p, SF_FORMAT_WAV | SF_FORMAT_PCM_16, RATE, x, RATE);
    size_t n = 0;
    CHECK_STATUS(load(p, 0, &n), ENCDEC_OK, "");
    CHECK_EQ_INT(n, RATE);
    FILE *f = fopen(p, "rb");
    uint8_t *whole = malloc(100000);
    size_t len = fread(whole, 1, 100000, f);
    fclose(f);
    CHECK_EQ_INT(len, 44 + 2 * RATE);

    p = tmp_path("cut-header.wav");
    tmp_write(p, whole, 20);
    CHECK_STATUS(load(p, 0, NULL), ENCDEC_ERR_AUDIO, "cut-header.wav: ");
    p = tmp_path("cut-at-data.wav");           /* the data chunk promises 32000 bytes, has none */
    tmp_write(p, whole, 44);
    CHECK_STATUS(load(p, 0, NULL), ENCDEC_ERR_AUDIO, "cut-at-data.wav: contains no audio samples");
    /* Cut inside the data: libsndfile reads the frames that are there. */
    p = tmp_path("cut-data.wav");
    tmp_write(p, whole, 44 + 2 * 1000 + 1);
    CHECK_STATUS(load(p, 0, &n), ENCDEC_OK, "");
    CHECK_EQ_INT(n, 1000);
    free(whole);

    p = tmp_path("empty.wav");
    write_sf(p, SF_FORMAT_WAV | SF_FORMAT_PCM_16, RATE, NULL, 0);
    CHECK_STATUS(load(p, 0, NULL), ENCDEC_ERR_AUDIO, "empty.wav: contains no audio samples");
    p = tmp_path("empty.flac");
    write_sf(p, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, RATE, NULL, 0);
    CHECK_STATUS(load(p, 0, NULL), ENCDEC_ERR_AUDIO, "empty.flac: ");

    p = tmp_path("corrupt.flac");
    uint8_t junk[8192];
    noise(x, sizeof junk, 99, 1.0f);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(x[i] * 127.0f + 128.0f);
    memcpy(junk, "fLaC", 4);
    tmp_write(p, junk, sizeof junk);
    CHECK_STATUS(load(p, 0, NULL), ENCDEC_ERR_AUDIO, "corrupt.flac: ");

    /* Float WAVs may hold anything: encdec.h promises loaded samples in
     * [-1, 1], so 4.0 and NaN must be clipped or refused, not passed on. */
    static const struct { const char *name; float v; } odd[] = {{"loud.wav", 4.0f},
                                                                {"nan.wav", NAN}};
    for (int k = 0; k < 2; k++) {
        noise(x, RATE, 5, 0.5f);
        x[200] = odd[k].v;
        p = tmp_path(odd[k].name);
        write_sf(p, SF_FORMAT_WAV | SF_FORMAT_FLOAT, RATE, x, RATE);
        float *pcm = NULL;
        encdec_status st = encdec_audio_load(p, 0, &pcm, &n);
        if (st == ENCDEC_OK) {
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) bad += !(pcm[i] >= -1.0f && pcm[i] <= 1.0f);
            CHECK_EQ_INT(bad, 0);
        } else {
            CHECK_STATUS(st, ENCDEC_ERR_AUDIO, odd[k].name);
        }
        encdec_free(pcm);
    }
    free(x);
}

static void test_limits(void) {
    CHECK_STATUS(load(JFK, -1, NULL), ENCDEC_ERR_ARG, "maximum duration -1 s");
    CHECK_STATUS(load(JFK, NAN, NULL), ENCDEC_ERR_ARG, "is not a finite number");
    CHECK_STATUS(load(JFK, INFINITY, NULL), ENCDEC_ERR_ARG, "is not a finite number");
    FILE *f = fopen(JFK, "rb");
    if (!f) {
        printf("SKIP part: %s not found\n", JFK);
        return;
    }
    fclose(f);
    CHECK_STATUS(load(JFK, 5, NULL), ENCDEC_ERR_AUDIO, "jfk.wav: the audio is 11.0 s long; the limit is 5 s");
    size_t n = 0;
    CHECK_STATUS(load(JFK, 11.5, &n), ENCDEC_OK, "");
    CHECK_EQ_INT(n, 176000);
}

/* Transcribes pcm; returns the status, the result in *out (caller frees). */
static encdec_status run(encdec_session *s, const float *pcm, size_t n, int max_tokens,
                         encdec_result **out) {
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.max_tokens = max_tokens;
    p.timestamps = 0;   /* consecutive 30 s windows: the counts below */
    return encdec_transcribe(s, pcm, n, &p, out);
}

static void test_transcribe(encdec_session *s) {
    /* 3 s of silence: nothing to decode, an empty transcript */
    float *zero = calloc(48000, sizeof *zero);
    encdec_result *r = NULL;
    CHECK_STATUS(run(s, zero, 48000, 0, &r), ENCDEC_OK, "");
    if (r) {
        CHECK_STR(encdec_result_text(r), "");
        CHECK_EQ_INT(encdec_result_n_tokens(r), 0);
        CHECK_EQ_INT(encdec_result_timings(r)->n_windows, 1);
    }
    encdec_result_free(r);
    free(zero);

    /* Two hours of 8-bit unsigned 8 kHz silence (0x80 = 0), ~58 MB. */
    const char *p = tmp_path("silence.wav");
    SF_INFO info = {.samplerate = 8000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_U8};
    SNDFILE *sf = sf_open(p, SFM_WRITE, &info);
    CHECK(sf != NULL);
    if (!sf) return;
    static uint8_t block[1 << 16];
    memset(block, 0x80, sizeof block);
    sf_count_t total = (sf_count_t)SILENCE_S * 8000, done = 0;
    while (done < total) {
        sf_count_t k = total - done < (sf_count_t)sizeof block ? total - done : (sf_count_t)sizeof block;
        if (sf_write_raw(sf, block, k) != k) break;
        done += k;
    }
    sf_close(sf);
    CHECK_EQ_INT(done, total);
    float *pcm = NULL;
    size_t n = 0;
    CHECK_STATUS(encdec_audio_load(p, 0, &pcm, &n), ENCDEC_OK, "");
    remove(p);
    CHECK((long long)n >= SILENCE_S * 16000LL - 4 && (long long)n <= SILENCE_S * 16000LL + 4);
    if (pcm) {
        size_t nonzero = 0;
        for (size_t i = 0; i < n; i++) nonzero += pcm[i] != 0.0f;
        CHECK_EQ_INT(nonzero, 0);
        r = NULL;
        CHECK_STATUS(run(s, pcm, n, 0, &r), ENCDEC_OK, "");
        if (r) {
            CHECK_STR(encdec_result_text(r), "");
            CHECK_EQ_INT(encdec_result_n_tokens(r), 0);
            CHECK_EQ_INT(encdec_result_timings(r)->n_windows, SILENCE_S / 30);
        }
        encdec_result_free(r);
    }
    encdec_free(pcm);

    /* 65 s of seeded noise, written and read back: three windows, at most
     * max_tokens = 5 tokens in each. */
    enum { N65 = 65 * 16000 };
    float *x = malloc(N65 * sizeof *x);
    noise(x, N65, 2024, 0.3f);
    p = tmp_path("noise-65s.wav");
    write_sf(p, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, x, N65);
    free(x);
    pcm = NULL;
    CHECK_STATUS(encdec_audio_load(p, 0, &pcm, &n), ENCDEC_OK, "");
    CHECK_EQ_INT(n, N65);
    r = NULL;
    CHECK_STATUS(run(s, pcm, n, 5, &r), ENCDEC_OK, "");
    if (r) {
        const encdec_timings *t = encdec_result_timings(r);
        int per[4] = {0}, nt = encdec_result_n_tokens(r), bad_window = 0;
        for (int i = 0; i < nt; i++) {
            int w = encdec_result_token(r, i)->window;
            if (w < 0 || w > 2) bad_window = 1;
            else per[w]++;
        }
        CHECK_EQ_INT(t->n_windows, 3);
        CHECK(t->n_tokens >= nt);   /* every decode's tokens: fallbacks re-decode noise */
        CHECK(!bad_window);
        for (int w = 0; w < 3; w++) CHECK(per[w] >= 1 && per[w] <= 5);
        CHECK(nt <= 15);
    }
    encdec_result_free(r);
    encdec_free(pcm);
}

/* Writes the bytes of `path` into a FIFO (a thread: the writer). */
typedef struct {
    const char *fifo;
    const uint8_t *data;
    size_t len;
} fifo_job;

static void *fifo_writer(void *arg) {
    const fifo_job *j = arg;
    usleep(100000);
    FILE *f = fopen(j->fifo, "wb");
    if (f) {
        fwrite(j->data, 1, j->len, f);
        fclose(f);
    }
    return NULL;
}

static encdec_status load_ex(const char *path, const encdec_audio_params *p, size_t *n,
                             encdec_audio_info *info) {
    float *pcm = NULL;
    encdec_status st = encdec_audio_load_ex(path, p, &pcm, n, info);
    CHECK(st ? pcm == NULL : pcm != NULL);
    encdec_free(pcm);
    return st;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Inputs that lie: files shorter than their headers say (WAV, FLAC: read to
 * where they end and reported, or with strict an error), an empty file,
 * streams (a FIFO with a writer, one without, against the stream limit),
 * character devices (/dev/null, /dev/zero: refused at once), bad options. */
static void test_lying(void) {
    enum { RATE = 16000 };
    float *x = malloc(3 * RATE * sizeof *x);
    noise(x, 3 * RATE, 7, 0.5f);
    const char *p = tmp_path("full.wav");
    write_sf(p, SF_FORMAT_WAV | SF_FORMAT_PCM_16, RATE, x, RATE);
    size_t len, n;
    encdec_audio_info info;
    encdec_audio_params strict = {.strict = 1};
    uint8_t *whole = malloc(200000);
    FILE *f = fopen(p, "rb");
    len = fread(whole, 1, 200000, f);
    fclose(f);
    CHECK_STATUS(load_ex(p, NULL, &n, &info), ENCDEC_OK, "");
    CHECK(!info.truncated && !info.stream && info.sample_rate == RATE && info.channels == 1);
    CHECK_NEAR(info.seconds, 1.0, 1e-9);

    p = tmp_path("cut.wav");                  /* 0.25 s of 1 s */
    tmp_write(p, whole, 44 + 2 * 4000);
    CHECK_STATUS(load_ex(p, NULL, &n, &info), ENCDEC_OK, "");
    CHECK_EQ_INT(n, 4000);
    CHECK_EQ_INT(info.truncated, 1);
    CHECK_NEAR(info.expected_seconds, 1.0, 1e-9);
    CHECK_NEAR(info.seconds, 0.25, 1e-9);
    CHECK_STATUS(load_ex(p, &strict, &n, &info), ENCDEC_ERR_AUDIO,
                 "cut.wav: the file ends early: it holds 0.25 s of the 1.00 s its header promises");

    p = tmp_path("long.flac");                /* 3 s of FLAC, cut in half */
    write_sf(p, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, RATE, x, 3 * RATE);
    f = fopen(p, "rb");
    len = fread(whole, 1, 200000, f);
    fclose(f);
    p = tmp_path("cut.flac");
    tmp_write(p, whole, len / 2);
    CHECK_STATUS(load_ex(p, NULL, &n, &info), ENCDEC_OK, "");
    CHECK(info.truncated && n > RATE / 2 && n < 5 * RATE / 2);
    CHECK_NEAR(info.expected_seconds, 3.0, 1e-9);
    CHECK_STATUS(load_ex(p, &strict, &n, &info), ENCDEC_ERR_AUDIO, "of the 3.00 s its header promises");

    p = tmp_path("zero-bytes.wav");
    tmp_write(p, "", 0);
    CHECK_STATUS(load_ex(p, NULL, &n, NULL), ENCDEC_ERR_AUDIO, "zero-bytes.wav: the file is empty (0 bytes)");

    /* streams */
    p = tmp_path("audio.fifo");
    CHECK_EQ_INT(mkfifo(p, 0600), 0);
    encdec_audio_params wait = {.fifo_wait_s = 0.3};
    CHECK_STATUS(load_ex(p, &wait, &n, &info), ENCDEC_ERR_IO,
                 "audio.fifo: a FIFO that gave no data in 0.3 s (no writer?)");
    f = fopen(tmp_path("full.wav"), "rb");
    len = fread(whole, 1, 200000, f);
    fclose(f);
    fifo_job job = {p, whole, len};
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, fifo_writer, &job), 0);
    CHECK_STATUS(load_ex(p, NULL, &n, &info), ENCDEC_OK, "");
    pthread_join(th, NULL);
    CHECK(n == RATE && info.stream == 1 && !info.truncated);
    encdec_audio_params small = {.max_stream_bytes = 1000};
    CHECK_EQ_INT(pthread_create(&th, NULL, fifo_writer, &job), 0);
    CHECK_STATUS(load_ex(p, &small, &n, &info), ENCDEC_ERR_AUDIO,
                 "audio.fifo: a stream of more than 1000 bytes");
    pthread_join(th, NULL);
    /* character devices never end early (/dev/zero was spooled to the 2 GiB
     * limit before it was refused): refused at once, whatever the limit */
    double t0 = now_s();
    CHECK_STATUS(load_ex("/dev/null", NULL, &n, &info), ENCDEC_ERR_IO, "/dev/null: is a character device");
    CHECK_STATUS(load_ex("/dev/zero", NULL, &n, &info), ENCDEC_ERR_IO, "/dev/zero: is a character device");
    CHECK_STATUS(load_ex("/dev/urandom", NULL, &n, &info), ENCDEC_ERR_IO, "not an audio file");
    CHECK(now_s() - t0 < 1.0);
    encdec_audio_params bad = {.fifo_wait_s = -1};
    CHECK_STATUS(load_ex(p, &bad, &n, &info), ENCDEC_ERR_ARG, "FIFO wait -1 s");
    bad.fifo_wait_s = 0;
    bad.max_seconds = NAN;
    CHECK_STATUS(load_ex(p, &bad, &n, &info), ENCDEC_ERR_ARG, "maximum duration nan s");
    /* finite but near FLT_MAX, resampled: the filter's sums made NaN (fuzz_audio) */
    for (int i = 0; i < RATE; i++) x[i] = (i % 3 ? 3.0e38f : -3.0e38f) * (i % 7 == 0 ? 1 : 0.5f);
    p = tmp_path("huge-float.wav");
    write_sf(p, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 44100, x, RATE);
    float *pcm = NULL;
    CHECK_STATUS(encdec_audio_load_ex(p, NULL, &pcm, &n, NULL), ENCDEC_OK, "");
    size_t out_of_range = 0;
    for (size_t i = 0; pcm && i < n; i++) out_of_range += !(pcm[i] >= -1.0f && pcm[i] <= 1.0f);
    CHECK_EQ_INT(out_of_range, 0);
    CHECK(n > 0);
    encdec_free(pcm);
    free(whole);
    free(x);

    /* a malformed Ogg Vorbis file (found by fuzz_audio): refused; libvorbis
     * leaks 5784 bytes inside itself on it (tests/lsan.supp names the upstream
     * bug and suppresses that module only), and nothing of ours may leak */
    CHECK_STATUS(load_ex(ED_TEST_DATA "/../fuzz/corpus/audio/regress-libvorbis-leak.ogg", NULL, &n,
                         NULL), ENCDEC_ERR_AUDIO, "regress-libvorbis-leak.ogg: Supported file format "
                         "but file is malformed");
}

/* encdec_audio_reader: a piece at a time, the samples written (16 kHz) and
 * those of encdec_audio_load_ex (a 44.1 kHz file resampled), in pieces of
 * any size; the same refusals;
 * a file cut short read to its end with info->truncated; NULL arguments. */
/* Reads path with encdec_audio_reader in pieces of cap samples: 1 when it
 * gives want[n] exactly and then stays at its end; *info what it read. */
static int read_pieces(const char *path, size_t cap, const float *want, size_t n,
                       encdec_audio_info *info) {
    encdec_audio_reader *r = NULL;
    CHECK_STATUS(encdec_audio_reader_open(path, NULL, &r), ENCDEC_OK, "");
    float *buf = malloc(sizeof *buf * cap);
    size_t total = 0, got = 0, differ = 0;
    while (r && buf && !encdec_audio_reader_read(r, buf, cap, &got) && got) {
        for (size_t i = 0; i < got; i++) differ += total + i >= n || buf[i] != want[total + i];
        total += got;
    }
    int end = r && buf && !encdec_audio_reader_read(r, buf, cap, &got) && got == 0;
    encdec_audio_reader_info(r, info);
    free(buf);
    encdec_audio_reader_close(r);
    return r && total == n && !differ && end;
}

static void test_reader(void) {
    const size_t n44 = 44100 * 3, caps[] = {1, 1000, 16000, 100000};
    float *x = malloc(sizeof *x * n44);
    if (!x) return;
    noise(x, n44, 7, 0.5f);
    /* at 16 kHz nothing is resampled: the samples written, exactly (float WAV) */
    char p[512];
    snprintf(p, sizeof p, "%s", tmp_path("reader16k.wav"));
    write_sf(p, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, x, 40000);
    encdec_audio_info info;
    for (int c = 0; c < 4; c++) CHECK(read_pieces(p, caps[c], x, 40000, &info));
    /* at 44.1 kHz: encdec_audio_load_ex's samples */
    snprintf(p, sizeof p, "%s", tmp_path("reader.wav"));
    write_sf(p, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 44100, x, (sf_count_t)n44);
    float *whole = NULL;
    size_t n = 0;
    CHECK_STATUS(encdec_audio_load_ex(p, NULL, &whole, &n, NULL), ENCDEC_OK, "");
    for (int c = 0; c < 4 && whole; c++) {
        CHECK(read_pieces(p, caps[c], whole, n, &info));
        CHECK(info.sample_rate == 44100 && info.channels == 1 && fabs(info.seconds - 3.0) < 0.01);
    }
    encdec_free(whole);
    encdec_audio_reader *r = (encdec_audio_reader *)&r;
    CHECK_STATUS(encdec_audio_reader_open(tmp_path("missing.wav"), NULL, &r), ENCDEC_ERR_IO,
                 "missing.wav");
    CHECK(r == NULL);
    CHECK_STATUS(encdec_audio_reader_open(tmp_dir, NULL, &r), ENCDEC_ERR_IO, "is a directory");
    CHECK_STATUS(encdec_audio_reader_open("", NULL, &r), ENCDEC_ERR_ARG, "empty path");
    CHECK_STATUS(encdec_audio_reader_open(p, NULL, NULL), ENCDEC_ERR_ARG, "out is NULL");
    encdec_audio_params bad = {.max_seconds = -1};
    CHECK_STATUS(encdec_audio_reader_open(p, &bad, &r), ENCDEC_ERR_ARG, "maximum duration -1 s");
    /* over max_seconds: refused as it is read */
    encdec_audio_params lim = {.max_seconds = 1};
    size_t got = 0;
    float buf[4096];
    encdec_status st = encdec_audio_reader_open(p, &lim, &r);
    while (!st && !(st = encdec_audio_reader_read(r, buf, 4096, &got)) && got) {}
    CHECK_EQ_INT(st, ENCDEC_ERR_AUDIO);
    encdec_audio_reader_close(r);
    CHECK_STATUS(encdec_audio_reader_read(NULL, buf, 1, &got), ENCDEC_ERR_ARG, "NULL reader");
    encdec_audio_reader_info(NULL, NULL);
    encdec_audio_reader_close(NULL);
    free(x);
}

int main(void) {
    /* the FIFO writer thread may write after the reader stopped (the stream
     * limit case): EPIPE for it, not the death of the test */
    signal(SIGPIPE, SIG_IGN);
    if (!tmp_new("encdec-errors-audio")) return 2;
    test_bad_files();
    test_limits();
    test_lying();
    test_reader();
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    CHECK_STATUS(encdec_model_load(MODEL_DIR, &m), ENCDEC_OK, "");
    if (m) CHECK_STATUS(encdec_session_new(m, NULL, &s), ENCDEC_OK, "");
    if (s) test_transcribe(s);
    encdec_session_free(s);
    encdec_model_free(m);
    tmp_remove(tmp_dir);
    return check_done();
}
