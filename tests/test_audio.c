/* test_audio.c - audio_load and audio_resample: decoding, down-mixing,
 * resampling, and the errors for bad files.
 *
 * Files the test needs are written under a mkdtemp directory in /tmp; the
 * jfk recordings come from ED_SHARED_DIR (skipped when it is absent).
 */
#include "audio/audio.h"
#include "audio/mel.h"
#include "check.h"

#include <sndfile.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[64];

static void tmp_path(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", g_dir, name);
}

/* Writes n_frames interleaved float frames as a float WAV. */
static int write_wav(const char *path, const float *x, sf_count_t n_frames, int channels, int rate,
                     int subformat) {
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = SF_FORMAT_WAV | subformat};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return 0;
    int ok = n_frames == 0 || sf_writef_float(sf, x, n_frames) == n_frames;
    sf_close(sf);
    return ok;
}

static int write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* ---- tests -------------------------------------------------------------- */

static void test_stereo_downmix(void) {
    enum { N = 1000 };
    static float x[2 * N];
    for (int i = 0; i < N; i++) {
        x[2 * i] = 0.5f * sinf(0.01f * i);
        x[2 * i + 1] = (i % 7) * 0.1f - 0.3f;
    }
    char path[128];
    tmp_path(path, sizeof path, "stereo.wav");
    CHECK(write_wav(path, x, N, 2, 16000, SF_FORMAT_FLOAT));
    float *pcm = NULL;
    size_t n = 0;
    CHECK_EQ_INT(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, N);
    if (pcm && n == N) {
        double md = 0;
        for (int i = 0; i < N; i++) {   /* not fmax(): GCC 12's aarch64 vectoriser crashes on it here */
            double d = fabs(pcm[i] - 0.5 * (x[2 * i] + x[2 * i + 1]));
            if (d > md) md = d;
        }
        CHECK(md <= 1e-7);
    }
    free(pcm);
}

/* 48 kHz stereo (the same 1 kHz sine twice) -> 16 kHz: a third of the samples,
 * and away from the edges the sine itself. */
static void test_resample_48k(void) {
    enum { N = 48000 };
    float *x = malloc(2 * N * sizeof *x);
    for (int i = 0; i < N; i++) x[2 * i] = x[2 * i + 1] = 0.25f * (float)sin(2 * M_PI * 1000.0 * i / 48000);
    char path[128];
    tmp_path(path, sizeof path, "sine48k.wav");
    CHECK(write_wav(path, x, N, 2, 48000, SF_FORMAT_FLOAT));
    float *pcm = NULL;
    size_t n = 0;
    CHECK_EQ_INT(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, 16000);
    if (pcm && n == 16000) {
        double md = 0;
        for (int i = 1000; i < 15000; i++)
            md = fmax(md, fabs(pcm[i] - 0.25 * sin(2 * M_PI * 1000.0 * i / 16000)));
        printf("48 kHz sine -> 16 kHz: max error %.3g\n", md);
        CHECK(md < 1e-3);
    }
    free(pcm);
    free(x);
}

static void test_resample_api(void) {
    float x[4] = {0.1f, 0.2f, 0.3f, 0.4f}, *y = NULL;
    size_t n = 99;
    CHECK_EQ_INT(audio_resample(x, 4, 16000, 16000, &y, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, 4);
    CHECK(y && memcmp(x, y, sizeof x) == 0);
    free(y);
    CHECK_EQ_INT(audio_resample(NULL, 0, 8000, 16000, &y, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, 0);
    free(y);
    CHECK_STATUS(audio_resample(x, 4, 0, 16000, &y, &n), ENCDEC_ERR_ARG, "out of range");
    CHECK_STATUS(audio_resample(x, 4, 16000, -5, &y, &n), ENCDEC_ERR_ARG, "out of range");
    CHECK_STATUS(audio_resample(NULL, 4, 8000, 16000, &y, &n), ENCDEC_ERR_ARG, "NULL");
    CHECK_STATUS(audio_resample(x, 4, 8000, 16000, NULL, &n), ENCDEC_ERR_ARG, "NULL");
}

static void test_silence(void) {
    static float z[1600];
    char path[128];
    tmp_path(path, sizeof path, "silence.wav");
    CHECK(write_wav(path, z, 1600, 1, 16000, SF_FORMAT_PCM_16));
    float *pcm = NULL;
    size_t n = 0;
    CHECK_EQ_INT(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_OK);
    CHECK_EQ_INT(n, 1600);
    int zero = pcm != NULL;
    for (size_t i = 0; pcm && i < n; i++) zero &= pcm[i] == 0.0f;
    CHECK(zero);
    free(pcm);
}

static void test_bad_files(void) {
    char path[128];
    float *pcm = (float *)&pcm;   /* must be reset to NULL on failure */
    size_t n = 7;

    tmp_path(path, sizeof path, "missing.wav");
    CHECK_STATUS(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_ERR_IO, "missing.wav: No such file");
    CHECK(pcm == NULL && n == 0);
    CHECK_STATUS(audio_load(g_dir, 16000, 0, &pcm, &n), ENCDEC_ERR_IO, "directory");

    tmp_path(path, sizeof path, "text.wav");
    const char *text = "hello, this is not audio at all\n";
    CHECK(write_bytes(path, text, strlen(text)));
    CHECK_STATUS(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_ERR_AUDIO, "text.wav: ");

    /* A valid WAV, then its header alone and the header cut in the middle. */
    static float x[1600];
    for (int i = 0; i < 1600; i++) x[i] = 0.1f;
    tmp_path(path, sizeof path, "full.wav");
    CHECK(write_wav(path, x, 1600, 1, 16000, SF_FORMAT_PCM_16));
    unsigned char bytes[64];
    FILE *f = fopen(path, "rb");
    CHECK(f && fread(bytes, 1, sizeof bytes, f) == sizeof bytes);
    if (f) fclose(f);
    CHECK(memcmp(bytes + 36, "data", 4) == 0);    /* the canonical 44-byte header */
    tmp_path(path, sizeof path, "header_only.wav");
    CHECK(write_bytes(path, bytes, 44));
    CHECK_STATUS(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_ERR_AUDIO,
                 "header_only.wav: contains no audio samples");
    tmp_path(path, sizeof path, "cut_header.wav");
    CHECK(write_bytes(path, bytes, 20));
    CHECK_STATUS(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_ERR_AUDIO, "cut_header.wav: ");
    tmp_path(path, sizeof path, "empty_file.wav");
    CHECK(write_bytes(path, bytes, 0));
    CHECK_STATUS(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_ERR_AUDIO, "empty_file.wav: ");

    tmp_path(path, sizeof path, "no_samples.wav");
    CHECK(write_wav(path, x, 0, 1, 16000, SF_FORMAT_PCM_16));
    CHECK_STATUS(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_ERR_AUDIO,
                 "no_samples.wav: contains no audio samples");
    CHECK(pcm == NULL && n == 0);

    /* 1600 samples = 0.1 s. */
    tmp_path(path, sizeof path, "full.wav");
    CHECK_STATUS(audio_load(path, 16000, 0.05, &pcm, &n), ENCDEC_ERR_AUDIO,
                 "full.wav: the audio is 0.1 s long; the limit is 0.05 s");
    CHECK_EQ_INT(audio_load(path, 16000, 0.1, &pcm, &n), ENCDEC_OK);
    free(pcm);

    CHECK_STATUS(audio_load(NULL, 16000, 0, &pcm, &n), ENCDEC_ERR_ARG, "NULL");
    CHECK_STATUS(audio_load(path, 0, 0, &pcm, &n), ENCDEC_ERR_ARG, "target rate 0");
    CHECK_STATUS(audio_load(path, 16000, -1, &pcm, &n), ENCDEC_ERR_ARG, "max_seconds");
}

/* Mean and max |a - b| over bands x frames [0, n_frames) of [n_mels, 3000] mels. */
static void mel_diff(const float *a, const float *b, int n_mels, int n_frames, double *mean, double *max) {
    double s = 0, m = 0;
    for (int k = 0; k < n_mels; k++)
        for (int t = 0; t < n_frames; t++) {
            double d = fabs(a[k * MEL_CHUNK_FRAMES + t] - b[k * MEL_CHUNK_FRAMES + t]);
            s += d;
            m = d > m ? d : m;
        }
    *mean = s / ((double)n_mels * n_frames);
    *max = m;
}

static void test_jfk(const char *shared) {
    char path[1024];
    float *wav = NULL;
    size_t n_wav = 0;
    snprintf(path, sizeof path, "%s/audio/jfk.wav", shared);
    CHECK_EQ_INT(audio_load(path, 16000, 0, &wav, &n_wav), ENCDEC_OK);
    CHECK_EQ_INT(n_wav, 176000);
    if (n_wav != 176000) {
        free(wav);
        return;
    }
    /* int16 / 32768, from the raw file: zeros up to 698, then -1 at 699. */
    int lead_zero = 1;
    for (int i = 0; i < 699; i++) lead_zero &= wav[i] == 0.0f;
    CHECK(lead_zero);
    CHECK(wav[699] == -1.0f / 32768);
    static const int16_t at100k[8] = {16, 991, 2689, 4915, 6815, 7698, 7303, 5808};
    for (int i = 0; i < 8; i++) CHECK(wav[100000 + i] == at100k[i] / 32768.0f);
    static const int16_t last[4] = {358, -251, -608, -456};
    for (int i = 0; i < 4; i++) CHECK(wav[175996 + i] == last[i] / 32768.0f);
    free(wav);

    CHECK_STATUS(audio_load(path, 16000, 10, &wav, &n_wav), ENCDEC_ERR_AUDIO,
                 "jfk.wav: the audio is 11.0 s long; the limit is 10 s");
    CHECK(wav == NULL);
    CHECK_EQ_INT(audio_load(path, 16000, 0, &wav, &n_wav), ENCDEC_OK);

    mel_ctx *m = mel_new(80);
    float *ref = malloc((size_t)80 * MEL_CHUNK_FRAMES * sizeof *ref);
    float *got = malloc((size_t)80 * MEL_CHUNK_FRAMES * sizeof *got);
    CHECK_EQ_INT(mel_compute(m, wav, n_wav, ref, MEL_CHUNK_FRAMES), ENCDEC_OK);

    /* flac: 44.1 kHz stereo 24-bit; mp3: 64 kbps, lossy. Frames 0..1099 hold the speech. */
    static const struct { const char *name; double mean_tol, max_tol; } alt[] = {
        {"jfk.flac", 1e-3, 0.15},
        {"jfk.mp3", 0.03, 1.0},
    };
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/audio/%s", shared, alt[i].name);
        float *pcm = NULL;
        size_t n = 0;
        CHECK_EQ_INT(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_OK);
        printf("%s: %zu samples at 16 kHz (%.3f s)\n", alt[i].name, n, n / 16000.0);
        CHECK(n >= 175000 && n <= 177000);
        if (!pcm) continue;
        CHECK_EQ_INT(mel_compute(m, pcm, n, got, MEL_CHUNK_FRAMES), ENCDEC_OK);
        double mean, max;
        mel_diff(got, ref, 80, 1100, &mean, &max);
        printf("%s vs jfk.wav, mel 80 x 1100: mean |diff| %.3g, max %.3g\n", alt[i].name, mean, max);
        CHECK(mean <= alt[i].mean_tol);
        CHECK(max <= alt[i].max_tol);
        free(pcm);
    }
    free(ref);
    free(got);
    mel_free(m);
    free(wav);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/ed_test_audio_XXXXXX");
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    test_stereo_downmix();
    test_resample_48k();
    test_resample_api();
    test_silence();
    test_bad_files();

    static const char *files[] = {"stereo.wav", "sine48k.wav", "silence.wav", "text.wav", "full.wav",
                                  "header_only.wav", "cut_header.wav", "empty_file.wav",
                                  "no_samples.wav"};
    char path[128];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        tmp_path(path, sizeof path, files[i]);
        unlink(path);
    }
    rmdir(g_dir);

    struct stat sb;
    if (stat(ED_SHARED_DIR "/audio/jfk.wav", &sb) != 0) {
        if (check_done()) return 1;
        return check_skip("jfk recordings not found under ED_SHARED_DIR");
    }
    test_jfk(ED_SHARED_DIR);
    return check_done();
}
