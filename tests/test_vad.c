/* test_vad.c - Silero VAD v6 in C against onnxruntime running the ONNX
 * graph faster-whisper ships, and the speech spans against faster-whisper's
 * get_speech_timestamps (tests/data/vad-golden.json, tools/golden_vad.py).
 *
 * 1. Every frame's speech probability within 1e-4 of onnxruntime's, on real
 *    speech with gaps of low noise and on loud noise, digital silence and
 *    speech; fed at once on 1 thread, and in uneven blocks (the state
 *    carries across calls) on 3: the same bits.
 * 2. The spans of five option sets (threshold, neg_threshold, minimum
 *    speech and silence, maximum span with its split, padding) equal to
 *    faster-whisper's, sample for sample, from the C probabilities.
 * 3. The map from the joined speech back to the recording.
 * 4. Bad model directories: a named error, nothing loaded.
 * 5. A transcription of speech between silence and noise with the VAD
 *    (tiny.en): a session, the engine and the spans given by the caller
 *    give the same result, from memory and from a file (read in blocks
 *    through the spans, never whole); its times are the recording's; the
 *    file's spans (encdec_vad_speech_file) are the samples'; 20 s of noise
 *    alone decode no window; bad options and spans past the file's end are
 *    named.
 * 6. Silence costs nothing: 2 hours of noise, music-like tones and
 *    silence from a file (10 minutes in the sanitizer build), with the VAD
 *    on: no window decoded, in a child whose peak RSS may grow by at most
 *    32 MB over the loaded model (the recording's samples would be 460 MB);
 *    its time is printed.
 */
#include "check.h"
#include "child.h"
#include "golden.h"
#include "tmpdir.h"

#include <sndfile.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#include "asr/speech.h"
#include "base/json.h"
#include "core/ops.h"
#include "models/vad.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[1024];

/* The recording of the golden file's pieces (tools/golden_vad.py). */
static float *build(const cJSON *pieces, size_t *n) {
    size_t cap = 0, len = 0;
    float *out = NULL;
    const cJSON *p;
    cJSON_ArrayForEach(p, pieces) {
        float *part = NULL;
        size_t k = 0;
        if (cJSON_IsString(p)) {
            char path[1024];
            snprintf(path, sizeof path, "%s/audio/%s", ED_SHARED_DIR, p->valuestring);
            if (encdec_audio_load(path, 0, &part, &k)) return NULL;
        } else {
            k = (size_t)lround(cJSON_GetObjectItem(p, "seconds")->valuedouble * 16000);
            double scale = cJSON_GetObjectItem(p, "scale")->valuedouble;
            uint32_t s = (uint32_t)cJSON_GetObjectItem(p, "seed")->valueint;
            part = malloc(sizeof(float) * (k + 1));
            for (size_t i = 0; i < k; i++) {
                s = s * 1664525u + 1013904223u;
                part[i] = scale ? (float)((int)((s >> 16) % 7) - 3) / 32768.0f * (float)scale : 0.0f;
            }
        }
        if (len + k > cap) {
            cap = (len + k) * 2;
            out = realloc(out, sizeof(float) * cap);
        }
        memcpy(out + len, part, sizeof(float) * k);
        len += k;
        if (cJSON_IsString(p)) encdec_free(part);
        else free(part);
    }
    *n = len;
    return out;
}

/* The probabilities of x[n] (zero-padded to whole frames), fed in blocks of
 * the sizes in step[] (cycled), on pool (may be NULL). */
static float *run(const vad_model *m, ed_pool *pool, const float *x, size_t n, const int *step,
                  int n_step, size_t *n_frames) {
    size_t nf = n / VAD_FRAME + 1;
    float *pad = calloc(nf * VAD_FRAME, sizeof *pad), *probs = malloc(nf * sizeof *probs);
    memcpy(pad, x, n * sizeof *x);
    vad_state *s = NULL;
    CHECK_EQ_INT(vad_state_new(m, &s), ENCDEC_OK);
    for (size_t f = 0, k = 0; s && f < nf; k++) {
        size_t b = (size_t)step[k % (size_t)n_step];
        if (b > nf - f) b = nf - f;
        CHECK_EQ_INT(vad_probs(s, pool, pad + f * VAD_FRAME, b, probs + f), ENCDEC_OK);
        f += b;
    }
    vad_state_free(s);
    free(pad);
    *n_frames = nf;
    return probs;
}

static void spans_as_faster_whisper(const char *name, const float *probs, size_t nf, size_t n,
                                    const cJSON *sets) {
    const cJSON *set;
    int i = 0;
    cJSON_ArrayForEach(set, sets) {
        const cJSON *o = cJSON_GetObjectItem(set, "options"), *want = cJSON_GetObjectItem(set, "spans");
        asr_speech_opts opt;
        asr_speech_default(&opt);
        const cJSON *v;
        if ((v = cJSON_GetObjectItem(o, "threshold"))) opt.threshold = (float)v->valuedouble;
        if ((v = cJSON_GetObjectItem(o, "neg_threshold"))) opt.neg_threshold = (float)v->valuedouble;
        if ((v = cJSON_GetObjectItem(o, "min_speech_duration_ms"))) opt.min_speech_ms = v->valuedouble;
        if ((v = cJSON_GetObjectItem(o, "max_speech_duration_s"))) opt.max_speech_s = v->valuedouble;
        if ((v = cJSON_GetObjectItem(o, "min_silence_duration_ms"))) opt.min_silence_ms = v->valuedouble;
        if ((v = cJSON_GetObjectItem(o, "speech_pad_ms"))) opt.pad_ms = v->valuedouble;
        asr_span got[64];
        int k = asr_speech_spans(probs, nf, n, VAD_FRAME, &opt, got, 64), same = k == cJSON_GetArraySize(want);
        for (int j = 0; same && j < k; j++) {
            const cJSON *w = cJSON_GetArrayItem(want, j);
            same = got[j].start == (size_t)cJSON_GetArrayItem(w, 0)->valuedouble &&
                   got[j].end == (size_t)cJSON_GetArrayItem(w, 1)->valuedouble;
        }
        if (!same) {
            char *js = cJSON_PrintUnformatted(want);
            fprintf(stderr, "  %s, options %d: %d spans, faster-whisper's %s:", name, i, k, js);
            for (int j = 0; j < k && j < 64; j++) fprintf(stderr, " [%zu, %zu]", got[j].start, got[j].end);
            fprintf(stderr, "\n");
            free(js);
        }
        printf("  %s, option set %d: %d spans, %s\n", name, i, k, same ? "faster-whisper's" : "DIFFERENT");
        CHECK(same);
        i++;
    }
}

static void goldens(const vad_model *m) {
    cJSON *js = NULL;
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/vad-golden.json", &js), ENCDEC_OK);
    if (!js) return;
    ed_pool *pool = NULL, *one = NULL;
    CHECK_EQ_INT(ed_pool_new(&pool, 3), ENCDEC_OK);
    CHECK_EQ_INT(ed_pool_new(&one, 1), ENCDEC_OK);
    const cJSON *rec;
    cJSON_ArrayForEach(rec, cJSON_GetObjectItem(js, "recordings")) {
        size_t n = 0, nf = 0, nf2 = 0;
        float *x = build(cJSON_GetObjectItem(rec, "pieces"), &n);
        CHECK(x != NULL);
        if (!x) continue;
        CHECK_EQ_INT(n, cJSON_GetObjectItem(rec, "n_samples")->valueint);
        static const int whole[] = {1 << 20}, uneven[] = {1, 7, 300, 2, 64};
        float *p = run(m, one, x, n, whole, 1, &nf), *q = run(m, pool, x, n, uneven, 5, &nf2);
        const cJSON *want = cJSON_GetObjectItem(rec, "probs");
        CHECK_EQ_INT(nf, cJSON_GetArraySize(want));
        double worst = 0;
        for (size_t i = 0; i < nf && i < (size_t)cJSON_GetArraySize(want); i++)
            worst = fmax(worst, fabs(p[i] - cJSON_GetArrayItem(want, (int)i)->valuedouble));
        int same = nf == nf2 && !memcmp(p, q, nf * sizeof *p);
        printf("%s: %zu frames, max |p - onnxruntime| %.2e; uneven blocks on 3 threads: %s\n",
               rec->string, nf, worst, same ? "the same bits" : "DIFFERENT");
        CHECK(worst <= 1e-4);
        if (op_rows_invariant((k_w){NULL, K_F32, 0})) CHECK(same);   /* NEON: BLAS's sums */
        spans_as_faster_whisper(rec->string, p, nf, n, cJSON_GetObjectItem(rec, "speech"));
        free(p);
        free(q);
        free(x);
    }
    ed_pool_free(pool);
    ed_pool_free(one);
    cJSON_Delete(js);
}

/* faster-whisper's SpeechTimestampsMap on spans [1000, 5000), [9000, 12000):
 * silence 1000 before the first, 4000 more before the second. */
static void time_map(void) {
    asr_span sp[] = {{16000, 80000}, {144000, 192000}};
    double work[4];
    asr_speech_map mp;
    asr_speech_map_init(&mp, sp, 2, 16000, work);
    CHECK_EQ_INT(asr_speech_chunk(&mp, 0.5, 0), 0);
    CHECK_EQ_INT(asr_speech_chunk(&mp, 4.0, 0), 1);    /* the first span ends at 4.0 s joined */
    CHECK_EQ_INT(asr_speech_chunk(&mp, 4.0, 1), 0);    /* ... as an end, it is the first's */
    CHECK_NEAR(asr_speech_time(&mp, 0.5, -1, 0), 1.5, 1e-12);
    CHECK_NEAR(asr_speech_time(&mp, 4.0, -1, 1), 5.0, 1e-12);
    CHECK_NEAR(asr_speech_time(&mp, 4.0, -1, 0), 9.0, 1e-12);
    CHECK_NEAR(asr_speech_time(&mp, 6.5, -1, 0), 11.5, 1e-12);
    CHECK_NEAR(asr_speech_time(&mp, 50.0, -1, 0), 55.0, 1e-12);   /* past the end: the last */
    CHECK_NEAR(asr_speech_time(&mp, 1.234567, 0, 0), 2.23, 1e-12);   /* rounded to 0.01 s */
}

static void bad_models(void) {
    vad_model *m = NULL;
    CHECK_STATUS(vad_load("/nonexistent", &m), ENCDEC_ERR_IO, "config.json");
    CHECK(m == NULL);
    if (!tmp_new("encdec-test-vad")) return;
    const char *d = tmp_path("m");
    char p[600], src[1200];
    mkdir(d, 0777);
    snprintf(p, sizeof p, "%s/config.json", d);
    tmp_write(p, "{\"model_type\": \"silero_vad\", \"version\": 5, \"sampling_rate\": 16000, "
                 "\"frame_samples\": 512}", 88);
    CHECK_STATUS(vad_load(d, &m), ENCDEC_ERR_CONFIG, "version 5");
    tmp_write(p, "{\"model_type\": \"whisper\"}", 25);
    CHECK_STATUS(vad_load(d, &m), ENCDEC_ERR_CONFIG, "silero_vad");
    /* the real config, weights cut short */
    snprintf(src, sizeof src, "%s/config.json", g_dir);
    FILE *f = fopen(src, "rb");
    char buf[4096];
    size_t k = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    tmp_write(p, buf, k);
    snprintf(src, sizeof src, "%s/model.safetensors", g_dir);
    f = fopen(src, "rb");
    static char w[1 << 21];
    k = f ? fread(w, 1, sizeof w, f) : 0;
    if (f) fclose(f);
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    tmp_write(p, w, k / 2);
    encdec_status st = vad_load(d, &m);
    CHECK(st == ENCDEC_ERR_FORMAT && m == NULL);
    /* a weight that is not finite */
    for (size_t i = k - 64; i < k - 60; i++) w[i] = (char)0xff;
    tmp_write(p, w, k);
    CHECK_STATUS(vad_load(d, &m), ENCDEC_ERR_FORMAT, "not a finite number");
    tmp_remove(tmp_dir);
}

/* Every token, segment and word of two results the same, bit for bit. */
static int write_wav(const char *path, const float *x, size_t n) {
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return 0;
    int ok = sf_writef_float(sf, x, (sf_count_t)n) == (sf_count_t)n;
    sf_close(sf);
    return ok;
}

/* The same through files: the session's and the engine's (x[n] written as
 * float WAV: the same samples), the VAD's spans of the file, given spans. */
static void from_file(const encdec_vad *v, encdec_session *s, encdec_engine *e, const float *x,
                      size_t n, const encdec_transcribe_params *p, const encdec_result *want,
                      const encdec_span *spans, int k) {
    if (!tmp_new("encdec-test-vad")) return;
    const char *path = tmp_path("speech.wav");
    CHECK(write_wav(path, x, n));
    encdec_result *r1 = NULL, *r2 = NULL, *r3 = NULL;
    encdec_audio_info info;
    CHECK_EQ_INT(encdec_transcribe_file(s, path, NULL, p, &r1, &info), ENCDEC_OK);
    CHECK_NEAR(info.seconds, n / 16000.0, 1e-9);
    encdec_request *q = NULL;
    CHECK_EQ_INT(encdec_engine_transcribe_file(e, path, NULL, p, &q), ENCDEC_OK);
    if (q) CHECK_EQ_INT(encdec_request_wait(q, &r2), ENCDEC_OK);
    encdec_request_free(q);
    encdec_span *fs = NULL;
    int fk = -1;
    size_t fn = 0;
    CHECK_EQ_INT(encdec_vad_speech_file(v, path, NULL, &p->vad_params, 2, &fs, &fk, &fn), ENCDEC_OK);
    CHECK_EQ_INT(fk, k);
    CHECK_EQ_INT((long)fn, (long)n);
    int same = fk == k;
    for (int i = 0; same && i < k; i++) same = fs[i].start == spans[i].start && fs[i].end == spans[i].end;
    CHECK(same);
    encdec_transcribe_params p3 = *p;
    p3.vad = NULL;
    p3.speech = spans;
    p3.n_speech = k;
    CHECK_EQ_INT(encdec_transcribe_file(s, path, NULL, &p3, &r3, NULL), ENCDEC_OK);
    if (r1 && r2 && r3) {
        CHECK(golden_same_transcript(want, r1));
        CHECK(golden_same_transcript(want, r2));
        CHECK(golden_same_transcript(want, r3));
        CHECK_STR(encdec_result_text(r1), encdec_result_text(want));
        printf("from a file: the session, the engine and given spans as from memory\n");
    }
    encdec_result_free(r1);
    encdec_result_free(r2);
    encdec_result_free(r3);
    encdec_free(fs);
    /* a span past the file's end: named */
    encdec_span past = {n - 100, n + 16000};
    p3.speech = &past;
    p3.n_speech = 1;
    CHECK_STATUS(encdec_transcribe_file(s, path, NULL, &p3, &r3, NULL), ENCDEC_ERR_ARG, "passes");
    CHECK_STATUS(encdec_vad_speech_file(v, tmp_path("missing.wav"), NULL, NULL, 1, &fs, &fk, NULL),
                 ENCDEC_ERR_IO, "missing.wav");
    /* three times over: the joined speech takes two windows, the second
     * read through spans the feed has moved past */
    float *x3 = malloc(sizeof *x3 * n * 3);
    for (int i = 0; i < 3; i++) memcpy(x3 + i * n, x, sizeof *x3 * n);
    const char *path3 = tmp_path("speech3.wav");
    CHECK(write_wav(path3, x3, 3 * n));
    CHECK_EQ_INT(encdec_transcribe(s, x3, 3 * n, p, &r1), ENCDEC_OK);
    CHECK_EQ_INT(encdec_transcribe_file(s, path3, NULL, p, &r2, NULL), ENCDEC_OK);
    if (r1 && r2) {
        CHECK(encdec_result_timings(r1)->n_windows >= 2);
        CHECK(golden_same_transcript(r1, r2));
        printf("three times over: %d windows, from the file as from memory\n",
               encdec_result_timings(r2)->n_windows);
    }
    encdec_result_free(r1);
    encdec_result_free(r2);
    free(x3);
    tmp_remove(tmp_dir);
}

/* A transcription with the VAD: 4 s of silence, jfk.wav, 6 s of low noise,
 * platforms_en.wav. The session, the engine, and the spans given instead
 * of the VAD all give the same result; every time is in the recording's
 * (nothing in the silence); the speech's length is reported. */
static void transcription(const encdec_vad *v, const char *tiny) {
    float *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    CHECK_EQ_INT(encdec_audio_load(ED_SHARED_DIR "/audio/jfk.wav", 0, &a, &na), ENCDEC_OK);
    CHECK_EQ_INT(encdec_audio_load(ED_SHARED_DIR "/audio/platforms_en.wav", 0, &b, &nb), ENCDEC_OK);
    if (!a || !b) return;
    size_t n = 4 * 16000 + na + 6 * 16000 + nb;
    float *x = calloc(n, sizeof *x);
    memcpy(x + 4 * 16000, a, na * sizeof *x);
    uint32_t seed = 9;
    for (size_t i = 4 * 16000 + na; i < 10 * 16000 + na; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((int)((seed >> 16) % 7) - 3) / 32768.0f;
    }
    memcpy(x + 10 * 16000 + na, b, nb * sizeof *x);
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_model_load(tiny, &m), ENCDEC_OK);
    encdec_session_params sp = {2};
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    encdec_engine_params ep = {2, 2, ENCDEC_KV_F32};
    if (m) CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (!s || !e) goto out;
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.vad = v;
    p.vad_params.min_silence_duration_ms = 500;
    p.word_timestamps = 1;
    encdec_result *r1 = NULL, *r2 = NULL, *r3 = NULL;
    CHECK_EQ_INT(encdec_transcribe(s, x, n, &p, &r1), ENCDEC_OK);
    encdec_request *q = NULL;
    CHECK_EQ_INT(encdec_engine_transcribe(e, x, n, &p, &q), ENCDEC_OK);
    if (q) CHECK_EQ_INT(encdec_request_wait(q, &r2), ENCDEC_OK);
    encdec_request_free(q);
    encdec_span *spans = NULL;
    int k = 0;
    CHECK_EQ_INT(encdec_vad_speech(v, x, n, &p.vad_params, 2, &spans, &k), ENCDEC_OK);
    CHECK(k >= 2);   /* jfk.wav's pauses, and the one before platforms_en.wav */
    encdec_transcribe_params p3 = p;
    p3.vad = NULL;
    p3.speech = spans;
    p3.n_speech = k;
    CHECK_EQ_INT(encdec_transcribe(s, x, n, &p3, &r3), ENCDEC_OK);
    if (r1 && r2 && r3) {
        CHECK(golden_same_transcript(r1, r2));
        CHECK(golden_same_transcript(r1, r3));
        const encdec_segment *g0 = encdec_result_segment(r1, 0);
        int ns = encdec_result_n_segments(r1);
        const encdec_segment *gl = encdec_result_segment(r1, ns - 1);
        const encdec_timings *t = encdec_result_timings(r1);
        double speech = 0;
        for (int i = 0; i < k; i++) speech += (double)(spans[i].end - spans[i].start) / 16000;
        printf("with the VAD: %d segments, %.2f .. %.2f s of %.2f s; %.2f s of speech decoded "
               "(VAD %.0f ms); session, engine and given spans the same\n", ns, g0->start, gl->end,
               t->audio_seconds, t->speech_seconds, t->vad_ms);
        CHECK(g0->start >= 3.5 && g0->words[0].start >= 3.5);   /* not in the leading silence */
        CHECK(strstr(encdec_result_text(r1), "ask not what your country"));
        CHECK(strstr(encdec_result_text(r1), "platforms"));
        CHECK_NEAR(t->audio_seconds, n / 16000.0, 1e-9);
        CHECK_NEAR(t->speech_seconds, speech, 1e-9);
        CHECK(gl->end <= n / 16000.0);
        from_file(v, s, e, x, n, &p, r1, spans, k);
    }
    encdec_result_free(r1);
    encdec_result_free(r2);
    encdec_result_free(r3);
    encdec_free(spans);
    /* no speech at all: no segments, nothing decoded */
    encdec_result *r0 = NULL;
    float *quiet = calloc(16000 * 20, sizeof *quiet);
    for (size_t i = 0; i < 16000 * 20; i++) {
        seed = seed * 1664525u + 1013904223u;
        quiet[i] = (float)((int)((seed >> 16) % 7) - 3) / 32768.0f;
    }
    CHECK_EQ_INT(encdec_transcribe(s, quiet, 16000 * 20, &p, &r0), ENCDEC_OK);
    if (r0) {
        CHECK_EQ_INT(encdec_result_n_segments(r0), 0);
        CHECK_EQ_INT(encdec_result_timings(r0)->n_windows, 0);
    }
    encdec_result_free(r0);
    free(quiet);
    /* bad options: named */
    p.vad_params.threshold = 1.5f;
    CHECK_STATUS(encdec_transcribe(s, x, n, &p, &r0), ENCDEC_ERR_ARG, "threshold");
out:
    encdec_engine_free(e);
    encdec_session_free(s);
    encdec_model_free(m);
    free(x);
    encdec_free(a);
    encdec_free(b);
}

#ifdef ED_SANITIZED
#define QUIET_S (10 * 60)
#else
#define QUIET_S (2 * 3600)
#endif
#define QUIET_RSS_MB 32

/* seconds of non-speech at 16 kHz, 16-bit, in blocks: a minute at a time,
 * 20 s of noise (the seeded LCG, +-0.09 of full scale), 20 s of
 * music-like notes (three harmonics of one of 24 semitones from 220 Hz,
 * a new note every half second, an attack and decay), 20 s of silence. */
static int write_non_speech(const char *path, int seconds) {
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return 0;
    short *b = malloc(sizeof *b * 16000);
    uint32_t seed = 5;
    int ok = b != NULL;
    for (int t = 0; ok && t < seconds; t++) {
        int part = (t % 60) / 20;
        for (int i = 0; i < 16000; i++) {
            seed = seed * 1664525u + 1013904223u;
            double v = 0;
            if (part == 0) v = ((int)((seed >> 16) % 7) - 3) * 1000.0;
            if (part == 1) {
                int note = (int)(((uint32_t)(t * 2 + i / 8000) * 2654435761u) >> 27) % 24;
                double f = 220.0 * pow(2.0, note / 12.0), u = (i % 8000) / 16000.0;
                double env = fmin(1.0, u * 50) * exp(-u * 3) * 6000.0;
                for (int h = 1; h <= 3; h++) v += sin(2 * 3.14159265358979 * f * h * u) / h * env;
            }
            b[i] = (short)lrint(v);
        }
        ok = sf_writef_short(sf, b, 16000) == 16000;
    }
    free(b);
    sf_close(sf);
    return ok;
}

typedef struct {
    const char *path;
    const encdec_vad *v;
} quiet_ctx;

/* Part 6 in a child (its own peak RSS): "growth windows segments speech ms
 * seconds" on fd; exit 0, or 2 when the transcription failed. */
static void quiet_child(void *ctx, int fd) {
    const char *path = ((quiet_ctx *)ctx)->path;
    const encdec_vad *v = ((quiet_ctx *)ctx)->v;
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_session_params sp = {2};
    if (encdec_model_load(ED_TEST_DATA "/tiny-random-whisper", &m) ||
        encdec_session_new(m, &sp, &s))
        _exit(2);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long before = ru.ru_maxrss;
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.vad = v;
    encdec_result *r = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    encdec_status st = encdec_transcribe_file(s, path, NULL, &tp, &r, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &ru);
    const encdec_timings *t = r ? encdec_result_timings(r) : NULL;
    char line[160];
    int len = snprintf(line, sizeof line, "%.1f %d %d %.3f %.0f %.1f\n",
                       (ru.ru_maxrss - before) / 1024.0, t ? t->n_windows : -1,
                       r ? encdec_result_n_segments(r) : -1, t ? t->speech_seconds : -1,
                       t ? t->vad_ms : -1,
                       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    if (write(fd, line, (size_t)len) != len) _exit(2);
    _exit(st ? 2 : 0);
}

static void silence_costs_nothing(const encdec_vad *v) {
    if (!tmp_new("encdec-test-vad-quiet")) return;
    const char *path = tmp_path("non-speech.wav");
    CHECK(write_non_speech(path, QUIET_S));
    quiet_ctx c = {path, v};
    char line[160];
    int ok = child_run(quiet_child, &c, line, sizeof line);
    double mb = -1, speech = -1, vad_ms = -1, secs = -1;
    int windows = -1, segments = -1;
    sscanf(line, "%lf %d %d %lf %lf %lf", &mb, &windows, &segments, &speech, &vad_ms, &secs);
    printf("%d s of noise, notes and silence with the VAD: %d windows, %d segments, %.2f s of "
           "speech; %.1f s (VAD %.1f s), peak RSS +%.1f MB (bound %d)\n", QUIET_S, windows,
           segments, speech, secs, vad_ms / 1e3, mb, QUIET_RSS_MB);
    CHECK(ok);
    CHECK_EQ_INT(windows, 0);
    CHECK_EQ_INT(segments, 0);
    CHECK(speech == 0);
    CHECK(mb >= 0 && mb <= QUIET_RSS_MB);
    tmp_remove(tmp_dir);
}

int main(void) {
    if (!golden_find_file(g_dir, sizeof g_dir, "ENCDEC_VAD", "silero-vad-v6", "model.safetensors")) return check_skip("Silero VAD not installed (scripts/fetch-model.sh vad)");
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio");
    vad_model *m = NULL;
    CHECK_EQ_INT(vad_load(g_dir, &m), ENCDEC_OK);
    if (!m) return check_done();
    goldens(m);
    time_map();
    bad_models();
    vad_free(m);
    encdec_vad *v = NULL;
    CHECK_EQ_INT(encdec_vad_load(g_dir, &v), ENCDEC_OK);
    char tiny[1024];
    if (v && golden_find_model(tiny, sizeof tiny, "ENCDEC_TINY_EN", "whisper-tiny.en"))
        transcription(v, tiny);
    else printf("tiny.en not installed: the transcription part skipped\n");
    if (v) silence_costs_nothing(v);
    encdec_vad_free(v);
    return check_done();
}
