/* test_mel.c - the log-mel spectrogram against openai-whisper.
 *
 * tests/data/mel_golden.safetensors is written by tools/golden_mel.py from
 * whisper.audio.log_mel_spectrogram (torch, float32) and whisper's
 * mel_filters.npz. The jfk.wav parts need ED_SHARED_DIR.
 */
#include "audio/audio.h"
#include "audio/mel.h"
#include "check.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#define MEL_TOL 1e-4

/* ---- a minimal safetensors reader (little-endian host) ------------------ */

typedef struct {
    char *buf;        /* the whole file */
    size_t size;
    cJSON *header;
    size_t data_off;  /* start of the data section in buf */
} st_file;

typedef struct {
    const void *data;
    int64_t shape[4];
    int ndim;
    size_t count;     /* elements */
} st_tensor;

static int st_open(st_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->buf = sz > 8 ? malloc((size_t)sz) : NULL;
    int ok = f->buf && fread(f->buf, 1, (size_t)sz, fp) == (size_t)sz;
    fclose(fp);
    if (!ok) return 0;
    f->size = (size_t)sz;
    uint64_t hlen;
    memcpy(&hlen, f->buf, 8);
    if (hlen > f->size - 8) return 0;
    f->header = cJSON_ParseWithLength(f->buf + 8, (size_t)hlen);
    f->data_off = 8 + (size_t)hlen;
    return f->header != NULL;
}

static void st_close(st_file *f) {
    cJSON_Delete(f->header);
    free(f->buf);
}

/* Finds name with the given dtype ("F32", "I32"); 0 if absent or malformed. */
static int st_get(const st_file *f, const char *name, const char *dtype, st_tensor *t) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f->header, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || strcmp(dt->valuestring, dtype) != 0 || !cJSON_IsArray(sh) ||
        cJSON_GetArraySize(sh) > 4 || cJSON_GetArraySize(off) != 2)
        return 0;
    memset(t, 0, sizeof *t);
    t->count = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh) {
        t->shape[t->ndim++] = (int64_t)d->valuedouble;
        t->count *= (size_t)d->valuedouble;
    }
    size_t b = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    size_t e_ = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
    if (e_ < b || e_ - b != t->count * 4 || f->data_off + e_ > f->size) return 0;
    t->data = f->buf + f->data_off + b;
    return 1;
}

/* ---- helpers ------------------------------------------------------------ */

/* Max |got[:, frames[j]] - want[:, j]| over the stored frames. */
static double diff_frames(const float *got, int n_frames, const float *want, const int32_t *frames,
                          int n_sel, int n_mels) {
    double m = 0;
    for (int k = 0; k < n_mels; k++)
        for (int j = 0; j < n_sel; j++) {
            double d = fabs((double)got[(size_t)k * n_frames + frames[j]] - want[(size_t)k * n_sel + j]);
            if (d > m || d != d) m = d != d ? INFINITY : d;
        }
    return m;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ---- tests -------------------------------------------------------------- */

static void test_args(void) {
    CHECK(mel_new(0) == NULL);
    CHECK_STATUS(ENCDEC_ERR_ARG, ENCDEC_ERR_ARG, "n_mels is 0");
    CHECK(mel_new(81) == NULL);
    CHECK_STATUS(ENCDEC_ERR_ARG, ENCDEC_ERR_ARG, "80 or 128");
    mel_free(NULL);
    CHECK(mel_filters(NULL) == NULL);

    mel_ctx *m = mel_new(80);
    float pcm[16] = {0}, out[80 * 2];
    CHECK_STATUS(mel_compute(m, pcm, 16, out, 0), ENCDEC_ERR_ARG, "n_frames is 0");
    CHECK_STATUS(mel_compute(m, pcm, 16, out, -3), ENCDEC_ERR_ARG, "n_frames is -3");
    CHECK_STATUS(mel_compute(NULL, pcm, 16, out, 1), ENCDEC_ERR_ARG, "NULL");
    CHECK_STATUS(mel_compute(m, NULL, 16, out, 1), ENCDEC_ERR_ARG, "NULL");
    CHECK_STATUS(mel_compute(m, pcm, 16, NULL, 1), ENCDEC_ERR_ARG, "NULL");
    CHECK_EQ_INT(mel_compute(m, NULL, 0, out, 2), ENCDEC_OK);   /* no samples: all padding */
    mel_free(m);
}

/* The bank equals mel_filters.npz: the same nonzero entries, the same values. */
static void test_filters(const st_file *g) {
    for (int nm = 80; nm <= 128; nm += 48) {
        char iname[32], vname[32];
        snprintf(iname, sizeof iname, "filt%d_idx", nm);
        snprintf(vname, sizeof vname, "filt%d_val", nm);
        st_tensor ti, tv;
        CHECK(st_get(g, iname, "I32", &ti) && st_get(g, vname, "F32", &tv) && ti.count == tv.count);
        if (ti.count != tv.count) continue;
        size_t total = (size_t)nm * (MEL_N_FFT / 2 + 1);
        float *want = calloc(total, sizeof *want);
        const int32_t *idx = ti.data;
        for (size_t i = 0; i < ti.count; i++)
            if (idx[i] >= 0 && (size_t)idx[i] < total) want[idx[i]] = ((const float *)tv.data)[i];
        mel_ctx *m = mel_new(nm);
        CHECK(m != NULL);
        if (m) {
            const float *got = mel_filters(m);
            size_t nz = 0, where;
            for (size_t i = 0; i < total; i++) nz += got[i] != 0.0f;
            CHECK_EQ_INT(nz, ti.count);
            double d = check_max_abs_diff(got, want, total, &where);
            printf("filters %d: max |ours - mel_filters.npz| = %.3g (at %zu, value %.6g)\n", nm, d,
                   where, want[where]);
            CHECK(d <= 1e-8);
        }
        mel_free(m);
        free(want);
    }
}

/* A seeded chirp + noise, 2.5 s: unpadded (250 frames, reflection at both
 * ends of real signal) and padded to 30 s. */
static void test_synth(const st_file *g) {
    st_tensor pcm, full, sub, frames;
    CHECK(st_get(g, "synth_pcm", "F32", &pcm) && pcm.count == 40000);
    CHECK(st_get(g, "synth_mel80", "F32", &full) && full.count == 80 * 250);
    CHECK(st_get(g, "synth30_mel80", "F32", &sub) && st_get(g, "synth30_frames", "I32", &frames));
    if (pcm.count != 40000 || full.count != 80 * 250 || sub.count != 80 * frames.count) return;

    mel_ctx *m = mel_new(80);
    float *out = malloc((size_t)80 * MEL_CHUNK_FRAMES * sizeof *out);
    CHECK_EQ_INT(mel_compute(m, pcm.data, pcm.count, out, 250), ENCDEC_OK);
    double d = check_max_abs_diff(out, full.data, full.count, NULL);
    printf("synth 80 x 250 (unpadded): max |ours - whisper| = %.3g\n", d);
    CHECK(d <= MEL_TOL);

    CHECK_EQ_INT(mel_compute(m, pcm.data, pcm.count, out, MEL_CHUNK_FRAMES), ENCDEC_OK);
    d = diff_frames(out, MEL_CHUNK_FRAMES, sub.data, frames.data, (int)frames.count, 80);
    printf("synth 80 x 3000 (padded, %zu frames stored): max |ours - whisper| = %.3g\n",
           frames.count, d);
    CHECK(d <= MEL_TOL);
    free(out);
    mel_free(m);
}

/* Zero padding, cutting, and the exact output extent. */
static void test_padding(const st_file *g) {
    st_tensor pcm;
    if (!st_get(g, "synth_pcm", "F32", &pcm)) return;
    const float *x = pcm.data;
    mel_ctx *m = mel_new(80);
    int nf = 300;                        /* 48000 samples: past the 40000 of x */
    size_t len = (size_t)nf * MEL_HOP;
    float *padded = calloc(len, sizeof *padded);
    memcpy(padded, x, pcm.count * sizeof *x);
    float *a = malloc((80 * (size_t)nf + 1) * sizeof *a), *b = malloc(80 * (size_t)nf * sizeof *b);

    /* Samples past n are zeros: n = 40000 equals an explicit zero tail. */
    a[80 * nf] = 12345.0f;               /* canary: nothing written past [80, nf] */
    CHECK_EQ_INT(mel_compute(m, x, pcm.count, a, nf), ENCDEC_OK);
    CHECK_EQ_INT(mel_compute(m, padded, len, b, nf), ENCDEC_OK);
    CHECK(memcmp(a, b, 80 * (size_t)nf * sizeof *a) == 0);
    CHECK(a[80 * nf] == 12345.0f);

    /* Samples past n_frames * HOP are cut before the STFT (reflection at the
     * cut, as Whisper's pad_or_trim then stft). */
    int short_nf = 100;
    CHECK_EQ_INT(mel_compute(m, x, pcm.count, a, short_nf), ENCDEC_OK);
    CHECK_EQ_INT(mel_compute(m, x, (size_t)short_nf * MEL_HOP, b, short_nf), ENCDEC_OK);
    CHECK(memcmp(a, b, 80 * (size_t)short_nf * sizeof *a) == 0);

    /* Silence: every band at log10(1e-10) = -10, the clamp floor is -18,
     * and (-10 + 4) / 4 = -1.5. */
    CHECK_EQ_INT(mel_compute(m, padded + 45000, 0, a, 5), ENCDEC_OK);
    int all = 1;
    for (int i = 0; i < 80 * 5; i++) all &= a[i] == -1.5f;
    CHECK(all);

    /* One frame (fewer samples than the reflect padding): still defined. */
    CHECK_EQ_INT(mel_compute(m, x + 20000, 160, a, 1), ENCDEC_OK);
    CHECK(isfinite(a[0]) && isfinite(a[79]));
    free(padded);
    free(a);
    free(b);
    mel_free(m);
}

static void test_jfk(const st_file *g, const char *shared) {
    char path[1024];
    snprintf(path, sizeof path, "%s/audio/jfk.wav", shared);
    float *pcm = NULL;
    size_t n = 0;
    CHECK_EQ_INT(audio_load(path, MEL_SAMPLE_RATE, 0, &pcm, &n), ENCDEC_OK);
    if (!pcm) return;
    st_tensor frames;
    CHECK(st_get(g, "jfk_frames", "I32", &frames));
    float *out = malloc((size_t)128 * MEL_CHUNK_FRAMES * sizeof *out);
    for (int nm = 80; nm <= 128; nm += 48) {
        char name[32];
        snprintf(name, sizeof name, "jfk_mel%d", nm);
        st_tensor want;
        CHECK(st_get(g, name, "F32", &want) && want.count == (size_t)nm * frames.count);
        if (want.count != (size_t)nm * frames.count) continue;
        mel_ctx *m = mel_new(nm);
        CHECK_EQ_INT(mel_compute(m, pcm, n, out, MEL_CHUNK_FRAMES), ENCDEC_OK);
        double d = diff_frames(out, MEL_CHUNK_FRAMES, want.data, frames.data, (int)frames.count, nm);
        printf("jfk %d x 3000 (%zu frames stored): max |ours - whisper| = %.3g\n", nm,
               frames.count, d);
        CHECK(d <= MEL_TOL);

        int reps = 5;                   /* informational timing, not asserted */
        double t0 = now_ms();
        for (int r = 0; r < reps; r++) mel_compute(m, pcm, n, out, MEL_CHUNK_FRAMES);
        printf("mel %d x 3000: %.1f ms per 30 s window\n", nm, (now_ms() - t0) / reps);
        mel_free(m);
    }
    free(out);
    free(pcm);
}

int main(void) {
    test_args();
    st_file g;
    int ok = st_open(&g, ED_TEST_DATA "/mel_golden.safetensors");
    CHECK(ok);
    if (!ok) {
        st_close(&g);
        return check_done();
    }
    test_filters(&g);
    test_synth(&g);
    test_padding(&g);
    struct stat sb;
    int have_shared = stat(ED_SHARED_DIR "/audio/jfk.wav", &sb) == 0;
    if (have_shared) test_jfk(&g, ED_SHARED_DIR);
    st_close(&g);
    if (check_done()) return 1;
    return have_shared ? 0 : check_skip("jfk.wav not found under ED_SHARED_DIR: jfk goldens not checked");
}
