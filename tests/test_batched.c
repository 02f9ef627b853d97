/* test_batched.c - batched long-form (encdec_engine_transcribe_batched):
 * the speech of a recording in chunks of up to 30 s, decoded together.
 *
 * 1. Each chunk is what it gives alone (the property): 108 s of real
 *    speech (jfk, LibriSpeech, LibriVox) between gaps of low noise, the
 *    VAD's spans (faster-whisper's batched options: 160 ms of silence ends
 *    speech, spans of at most 30 s) joined into chunks by faster-whisper's
 *    collect_chunks rule (written here again); every chunk transcribed
 *    alone by a session (word times on, temperature fallback on) gives the
 *    batched result's segments for it token for token, their texts, and
 *    their segment and word times mapped through the chunk's spans.
 * 2. Batch 1 = batch 4; a file (read in blocks) = memory; callbacks on
 *    the calling thread in order (language once first, progress to the
 *    end); a segment callback that stops it: ENCDEC_ERR_CANCELLED, and the
 *    engine goes on serving (the sanitizers' pass leaves out batch 1 and
 *    the run after the cancel: the parts below use the engine after it;
 *    a device's pass, all of 2 but the callbacks, min_text_rate 1 and
 *    3's cut of one long span: the host's logic, the CPU pass's).
 * 2b. min_text_rate: forced on every chunk, the batched result without
 *    timestamps is each chunk's timestamped transcription alone; at 1 (a
 *    rate speech passes) it changes nothing.
 * 3. Without a VAD: a recording of 30 s or less is one chunk (= the
 *    session's); clips are chunks of their own; one given span longer
 *    than a chunk is cut into equal parts; errors named (batch size,
 *    chunk length, a long recording with nothing to cut it, clips past
 *    the end, cache mode).
 * 4. A multilingual model (base), no language given: the first chunk
 *    detects it and the others are given it; or every chunk detects its
 *    own (language_per_chunk): each as alone.
 * 5. Memory is bounded by the batch: 2 hours of audio (10 minutes in the
 *    sanitizer build) with speech every 20 minutes, from a file, in a
 *    child whose peak RSS is measured (the samples alone would be 460 MB).
 */
#include "check.h"
#include "child.h"
#include "golden.h"
#include "tmpdir.h"

#include <math.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RATE 16000
#define CHUNK (30 * RATE)

static char g_vad[1024], g_tiny[1024], g_base[1024];

static uint32_t g_seed = 7;

/* Run on a device (ENCDEC_DEVICE=cuda: the GPU, or the CPU's emulation of
 * it, where a window costs several times the CPU's): the device's part is
 * the property (each chunk as alone, batched and not, with and without
 * timestamps) and the multilingual chunks; what only the host decides
 * (batch 1 = batch 4, a file = memory, the callbacks that stop it, the
 * engine after a cancel, min_text_rate 1) is the CPU pass's. */
static int on_device(void) {
    const char *dev = getenv("ENCDEC_DEVICE");
    return dev && *dev && strncmp(dev, "cpu", 3);
}

static void noise(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        g_seed = g_seed * 1664525u + 1013904223u;
        x[i] = (float)((int)((g_seed >> 16) % 7) - 3) / 32768.0f;
    }
}

/* The files in order, each followed by low noise of 0.9-2.5 s, reps times. */
static float *recording(const char *const *files, int nf, int reps, size_t *n) {
    size_t len = 0, cap = 0;
    float *out = NULL;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < nf; i++) {
            float *a = NULL;
            size_t na = 0;
            char path[1024];
            snprintf(path, sizeof path, "%s/audio/%s", ED_SHARED_DIR, files[i]);
            if (encdec_audio_load(path, 0, &a, &na)) return NULL;
            size_t gap = (size_t)(RATE * (0.9 + 0.4 * ((i + r) % 5)));
            if (len + na + gap > cap) {
                cap = (len + na + gap) * 2;
                out = realloc(out, sizeof *out * cap);
            }
            memcpy(out + len, a, sizeof *out * na);
            noise(out + len + na, gap);
            len += na + gap;
            encdec_free(a);
        }
    *n = len;
    return out;
}

static const char *SPEECH[] = {
    "jfk.wav", "librispeech/1272-128104-0000.wav",
    "librivox/sense_and_sensibility_01_austen_64kb-0870.wav",
    "librivox/sense_and_sensibility_01_austen_64kb-0880.wav",
    "librivox/sense_and_sensibility_01_austen_64kb-0890.wav",
    "librivox/sense_and_sensibility_01_austen_64kb-0920.wav",
    "librivox/sense_and_sensibility_01_austen_64kb-0930.wav"};

/* ---- the test's own chunks and time map ---- */

typedef struct {
    int first, n;
    size_t len;
} tchunk;

/* faster-whisper's collect_chunks: consecutive spans while their sum fits. */
static int chunks_of(const encdec_span *sp, int k, size_t max, tchunk *out) {
    int n = 0;
    for (int i = 0; i < k; i++) {
        size_t len = sp[i].end - sp[i].start;
        if (n && out[n - 1].len + len <= max) {
            out[n - 1].n++;
            out[n - 1].len += len;
        } else {
            out[n++] = (tchunk){i, 1, len};
        }
    }
    return n;
}

static float *joined(const float *x, const encdec_span *sp, tchunk c) {
    float *j = malloc(sizeof *j * c.len);
    size_t at = 0;
    for (int i = c.first; i < c.first + c.n; i++) {
        memcpy(j + at, x + sp[i].start, sizeof *j * (sp[i].end - sp[i].start));
        at += sp[i].end - sp[i].start;
    }
    return j;
}

/* The span of the chunk that time t (s, of the chunk) falls in: the first
 * whose end in the chunk is past it (the last one past the end). */
static int span_at(const encdec_span *sp, tchunk c, double t) {
    double s = floor(t * RATE), end = 0;
    for (int i = c.first; i < c.first + c.n; i++) {
        end += (double)(sp[i].end - sp[i].start);
        if (end > s) return i;
    }
    return c.first + c.n - 1;
}

/* t (s, of the chunk) in the recording, through span i: faster-whisper's
 * round(silence / rate + t, 2). */
static double rec_time(const encdec_span *sp, tchunk c, int i, double t) {
    double before = 0;
    for (int j = c.first; j < i; j++) before += (double)(sp[j].end - sp[j].start);
    return nearbyint((((double)sp[i].start - before) / RATE + t) * 100) / 100;
}

/* Segments [*at, ...) of r are chunk c's alone result a (times mapped). */
static int chunk_matches(const encdec_result *r, int *at, const encdec_result *a,
                         const encdec_span *sp, tchunk c) {
    for (int s = 0; s < encdec_result_n_segments(a); s++, (*at)++) {
        const encdec_segment *x = encdec_result_segment(a, s), *y = encdec_result_segment(r, *at);
        if (getenv("DEBUG_BATCHED") && y)
            printf("  alone %.2f-%.2f [%s]\n  batch %.2f-%.2f [%s]\n", x->start, x->end, x->text,
                   y->start, y->end, y->text);
        if (!y || x->n_tokens != y->n_tokens || strcmp(x->text, y->text) || x->n_words != y->n_words)
            return 0;
        for (int t = 0; t < x->n_tokens; t++)
            if (x->tokens[t].id != y->tokens[t].id) return 0;
        for (int w = 0; w < x->n_words; w++) {
            const encdec_word *u = &x->words[w], *v = &y->words[w];
            int i = span_at(sp, c, (u->start + u->end) / 2);
            if (strcmp(u->word, v->word) || fabs(rec_time(sp, c, i, u->start) - v->start) > 1e-9 ||
                fabs(rec_time(sp, c, i, u->end) - v->end) > 1e-9)
                return 0;
        }
        if (x->n_words == 0 &&
            fabs(rec_time(sp, c, span_at(sp, c, x->start), x->start) - y->start) > 1e-9)
            return 0;
        if (x->n_words && (y->start != y->words[0].start || y->end != y->words[x->n_words - 1].end))
            return 0;
    }
    return 1;
}

/* Every chunk of r (spans sp[k] of x, chunks of max samples) is what a
 * session gives it alone with p (language: lang0 for the first chunk,
 * lang for the others; ts_min > 0: a chunk of ts_min samples or more with
 * timestamps on and min_text_rate off); returns the chunk count. */
static int each_chunk_alone(encdec_session *s, const float *x, const encdec_span *sp, int k,
                            size_t max, encdec_transcribe_params p, const char *lang0,
                            const char *lang, const encdec_result *r, size_t ts_min) {
    p.vad = NULL;
    encdec_transcribe_params given = p;
    tchunk *ch = malloc(sizeof *ch * (size_t)k);
    int nc = chunks_of(sp, k, max, ch), at = 0, ok = 1;
    p.vad = NULL;
    for (int c = 0; c < nc && ok; c++) {
        float *j = joined(x, sp, ch[c]);
        encdec_result *a = NULL;
        p = given;
        p.whole_windows = !p.timestamps;   /* the batched call's: without timestamps, one decode */
        if (ts_min && ch[c].len >= ts_min) {
            p.timestamps = 1;
            p.min_text_rate = 0;
            p.whole_windows = 0;
        }
        p.language = c ? lang : lang0;
        CHECK_EQ_INT(encdec_transcribe(s, j, ch[c].len, &p, &a), ENCDEC_OK);
        ok = a && chunk_matches(r, &at, a, sp, ch[c]);
        if (!ok) printf("chunk %d (%d spans, %.2f s) differs from its transcription alone\n", c,
                        ch[c].n, ch[c].len / (double)RATE);
        encdec_result_free(a);
        free(j);
    }
    CHECK(ok);
    CHECK_EQ_INT(at, encdec_result_n_segments(r));
    free(ch);
    return nc;
}

/* ---- callbacks ---- */

typedef struct {
    int segments, ids_in_order, languages, language_first, stop_at;
    double progress, total;
    volatile int *flag;   /* set at the first segment */
} calls;

static int on_segment(const encdec_segment *g, void *user) {
    calls *c = user;
    c->ids_in_order &= g->id == c->segments;
    c->language_first &= c->languages == 1;
    c->segments++;
    if (c->flag) __atomic_store_n(c->flag, 1, __ATOMIC_RELAXED);
    return c->stop_at && c->segments >= c->stop_at;
}

static void on_language(const char *code, float prob, void *user) {
    calls *c = user;
    (void)prob;
    c->languages += code != NULL;
}

static void on_progress(double done, double total, void *user) {
    calls *c = user;
    c->ids_in_order &= done >= c->progress;
    c->progress = done;
    c->total = total;
}

static int write_wav(const char *path, const float *x, size_t n) {
    SF_INFO info = {.samplerate = RATE, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return 0;
    int ok = sf_writef_float(sf, x, (sf_count_t)n) == (sf_count_t)n;
    sf_close(sf);
    return ok;
}

/* ---- 1, 2: tiny.en with the VAD ---- */

/* The peer's batched VAD options (160 ms of silence ends speech, spans of
 * at most 30 s). */
static encdec_transcribe_params batched_params(const encdec_vad *v) {
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.vad = v;
    p.vad_params.min_silence_duration_ms = 160;
    p.vad_params.max_speech_duration_s = 30;
    return p;
}

static void with_vad(encdec_engine *e, encdec_session *s, const encdec_vad *v, const float *x,
                     size_t n) {
    encdec_transcribe_params p = batched_params(v);
    p.word_timestamps = 1;
    encdec_batch_params bp = encdec_batch_default_params();
    bp.batch_size = 4;
    calls c = {0, 1, 0, 1, 0, -1, 0, NULL};
    encdec_transcribe_params pc = p;
    pc.on_segment = on_segment;
    pc.on_language = on_language;
    pc.on_progress = on_progress;
    pc.user = &c;
    encdec_result *r = NULL, *r1 = NULL, *rf = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &pc, &bp, &r), ENCDEC_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!r) return;
    encdec_span *sp = NULL;
    int k = 0;
    CHECK_EQ_INT(encdec_vad_speech(v, x, n, &p.vad_params, 2, &sp, &k), ENCDEC_OK);
    int nc = each_chunk_alone(s, x, sp, k, CHUNK, p, NULL, NULL, r, 0);
    const encdec_timings *t = encdec_result_timings(r);
    printf("%.1f s, %d spans in %d chunks, batch 4: %d segments, %d windows, %d fallbacks, "
           "%.2f s (2 threads); each chunk as alone\n", n / (double)RATE, k, nc,
           encdec_result_n_segments(r), t->n_windows, t->n_fallbacks,
           (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    CHECK(nc >= 3);
    CHECK(strstr(encdec_result_text(r), "ask what you can do for your country"));
    CHECK_NEAR(t->audio_seconds, n / (double)RATE, 1e-9);
    /* callbacks: every segment in order, the language once before them, progress to the end */
    CHECK_EQ_INT(c.segments, encdec_result_n_segments(r));
    CHECK(c.ids_in_order && c.language_first);
    CHECK_EQ_INT(c.languages, 1);
    CHECK_NEAR(c.total, n / (double)RATE, 1e-9);
    CHECK(c.progress > c.total - 3 && c.progress <= c.total);
    if (on_device()) {   /* the host's part: the CPU pass's */
        encdec_result_free(r);
        encdec_free(sp);
        return;
    }
#ifndef ED_SANITIZED   /* the sanitizers' pass: batch 3 below is a batch all the same */
    /* batch 1 = batch 4 */
    bp.batch_size = 1;
    CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r1), ENCDEC_OK);
    if (r1) CHECK(golden_same_transcript(r, r1));
#endif
    /* a file, read in blocks = memory */
    bp.batch_size = 3;
    if (tmp_new("encdec-test-batched")) {
        char path[1200];
        snprintf(path, sizeof path, "%s/rec.wav", tmp_dir);
        CHECK(write_wav(path, x, n));
        encdec_audio_info ai;
        CHECK_EQ_INT(encdec_engine_transcribe_batched_file(e, path, NULL, &p, &bp, &rf, &ai),
                     ENCDEC_OK);
        if (rf) CHECK(golden_same_transcript(r, rf));
        CHECK_NEAR(ai.seconds, n / (double)RATE, 1e-3);
        tmp_remove(tmp_dir);
    }
    /* stopped by its callback at the second segment; the engine goes on */
    calls stop = {0, 1, 0, 1, 2, -1, 0, NULL};
    pc.user = &stop;
    encdec_result *rs = NULL;
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, n, &pc, &bp, &rs), ENCDEC_ERR_CANCELLED,
                 "stopped");
    CHECK(rs == NULL && stop.segments == 2);
    /* the cancel flag, set at the first segment: the first chunk's segments, then stopped */
    volatile int flag = 0;
    calls flagged = {0, 1, 0, 1, 0, -1, 0, &flag};
    pc.user = &flagged;
    bp.cancel = &flag;
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, n, &pc, &bp, &rs), ENCDEC_ERR_CANCELLED,
                 "cancelled");
    tchunk *ch = malloc(sizeof *ch * (size_t)k);
    chunks_of(sp, k, CHUNK, ch);
    double end0 = sp[ch[0].first + ch[0].n - 1].end / (double)RATE;
    int first_chunk = 0;
    while (first_chunk < encdec_result_n_segments(r) &&
           encdec_result_segment(r, first_chunk)->start < end0)
        first_chunk++;
    free(ch);
    CHECK(rs == NULL);
    CHECK_EQ_INT(flagged.segments, first_chunk);
    bp.cancel = NULL;
#ifndef ED_SANITIZED
    encdec_result_free(r1);
    r1 = NULL;
    CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r1), ENCDEC_OK);
    if (r1) CHECK(golden_same_transcript(r, r1));
#endif
    encdec_result_free(r);
    encdec_result_free(r1);
    encdec_result_free(rf);
    encdec_free(sp);
}

/* ---- 2b: min_text_rate ----
 * Without timestamps (word times on), a chunk is one decode: one segment
 * at most. A chunk decoded to fewer text tokens a second than
 * min_text_rate stopped early and is transcribed again with timestamps.
 * Forced (a rate no speech reaches), the batched result is each chunk's
 * timestamped transcription alone, token for token, for every chunk of 5 s
 * or more (the shorter one as it was), and says so in its fallbacks; at
 * a rate speech passes (1, the CLI's default when batching) it is the
 * plain result without timestamps. */
static void short_text(encdec_engine *e, encdec_session *s, const encdec_vad *v, const float *x,
                       size_t n) {
    encdec_transcribe_params p = batched_params(v);
    p.timestamps = 0;
    p.word_timestamps = 1;   /* without timestamps a chunk is one decode, word times or not */
    encdec_batch_params bp = encdec_batch_default_params();
    bp.batch_size = 4;
    encdec_span *sp = NULL;
    int k = 0;
    CHECK_EQ_INT(encdec_vad_speech(v, x, n, &p.vad_params, 2, &sp, &k), ENCDEC_OK);
    tchunk *ch = malloc(sizeof *ch * (size_t)(k ? k : 1));
    int nc = chunks_of(sp, k, CHUNK, ch), long_ones = 0;
    for (int c = 0; c < nc; c++) long_ones += ch[c].len >= 5 * RATE;
    CHECK(long_ones >= 2 && long_ones < nc);   /* both kinds met */
    encdec_result *plain = NULL, *slow = NULL, *forced = NULL;
    CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &plain), ENCDEC_OK);
    /* one segment a chunk at most: no second decode from the last word's end */
    if (plain) CHECK(encdec_result_n_segments(plain) <= nc);
#ifndef ED_SANITIZED   /* the sanitizers' pass: the redo's path (rate 100) alone */
    p.min_text_rate = 1.0f;
    if (!on_device()) CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &slow), ENCDEC_OK);
#endif
    if (plain && slow) {
        CHECK(golden_same_transcript(plain, slow));
        CHECK_EQ_INT(encdec_result_timings(slow)->n_fallbacks,
                     encdec_result_timings(plain)->n_fallbacks);
    }
    p.min_text_rate = 100.0f;
    CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &forced), ENCDEC_OK);
    if (forced && plain) {
#ifndef ED_SANITIZED
        CHECK_EQ_INT(each_chunk_alone(s, x, sp, k, CHUNK, p, NULL, NULL, forced, 5 * RATE), nc);
#else
        (void)s;
#endif
        CHECK(encdec_result_timings(forced)->n_fallbacks >=
              encdec_result_timings(plain)->n_fallbacks + long_ones);
        CHECK(encdec_result_n_segments(forced) > encdec_result_n_segments(plain));
        printf("min_text_rate 100: %d chunks redone with timestamps, %d segments (%d without)\n",
               long_ones, encdec_result_n_segments(forced), encdec_result_n_segments(plain));
    }
    p.min_text_rate = -1.0f;
    encdec_result *bad = NULL;
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &bad), ENCDEC_ERR_ARG,
                 "min_text_rate");
    encdec_result_free(plain);
    encdec_result_free(slow);
    encdec_result_free(forced);
    free(ch);
    encdec_free(sp);
}

/* ---- 2c: a chunk that ends lets the next one in ----
 * Batch 2 over three clips: 27.5 s of speech first, then 3 s and 6 s. The
 * third chunk goes in when the second ends, while the first still decodes
 * (taken in order all the same): greedy and one decode a chunk (no
 * timestamps, no fallback), the engine's steps are then about the first
 * chunk's tokens, where waiting for the first chunk's result before the
 * third went in would add the third's tokens after it. The requests
 * decoding never pass the batch, and the text is each chunk's alone. */
typedef struct {
    encdec_engine *e;
    int most;   /* requests not done, the most any callback saw */
} roll_calls;

static int roll_segment(const encdec_segment *g, void *user) {
    (void)g;
    roll_calls *c = user;
    encdec_engine_stats st;
    encdec_engine_get_stats(c->e, &st);
    if (st.requests > c->most) c->most = st.requests;
    return 0;
}

static void rolling(encdec_engine *e, encdec_session *s, const float *x, size_t n) {
    if (on_device()) return;   /* the scheduling is the host's */
    /* recording(): jfk 0-11 s, LibriSpeech 11.9-17.8, 0870 19.1-26.2, 0880
     * 27.9-30.8, 0890 32.9-38.2, 0920 40.7-46.8 */
    static const double clips[] = {0.0, 27.5, 27.6, 31.5, 40.5, 47.2};
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.language = "en";
    p.timestamps = 0;
    p.beam_size = 1;
    p.temperature_increment = 0;
    p.clip_timestamps = clips;
    p.n_clip_timestamps = 6;
    roll_calls c = {e, 0};
    p.on_segment = roll_segment;
    p.user = &c;
    encdec_batch_params bp = encdec_batch_default_params();
    bp.batch_size = 2;
    encdec_engine_stats s0, s1;
    encdec_engine_get_stats(e, &s0);
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r), ENCDEC_OK);
    encdec_engine_get_stats(e, &s1);
    if (!r) return;
    CHECK_EQ_INT(encdec_result_n_segments(r), 3);
    if (encdec_result_n_segments(r) != 3) {
        encdec_result_free(r);
        return;
    }
    int len[3];
    for (int i = 0; i < 3; i++) len[i] = encdec_result_segment(r, i)->n_tokens;
    long long steps = s1.steps - s0.steps;
    printf("rolling: chunks of %d, %d, %d tokens in %lld steps (%lld rows)\n", len[0], len[1],
           len[2], steps, s1.rows - s0.rows);
    CHECK(len[0] > len[1] + len[2] + 10 && len[2] >= 10);   /* the recording's shape */
    /* waiting for the first: >= len[0] + len[2] + 2; at once: len[0] + 1 and
     * the few steps the first takes alone while the third's features are
     * computed */
    CHECK(steps <= len[0] + 3 * len[2] / 4);
    CHECK(c.most <= bp.batch_size);
    /* each chunk as alone */
    p.on_segment = NULL;
    p.clip_timestamps = NULL;
    p.n_clip_timestamps = 0;
    for (int i = 0; i < 3; i++) {
        size_t a = (size_t)(clips[2 * i] * RATE), b = (size_t)(clips[2 * i + 1] * RATE);
        encdec_result *one = NULL;
        CHECK_EQ_INT(encdec_transcribe(s, x + a, b - a, &p, &one), ENCDEC_OK);
        if (one) CHECK_STR(encdec_result_segment(one, 0)->text, encdec_result_segment(r, i)->text);
        encdec_result_free(one);
    }
    encdec_result_free(r);
}

/* ---- 3: without a VAD, and errors ---- */

static void without_vad(encdec_engine *e, encdec_session *s, const float *x, size_t n) {
    encdec_transcribe_params p = encdec_transcribe_default_params();
    encdec_batch_params bp = encdec_batch_default_params();
    encdec_result *r = NULL, *a = NULL;
    /* 11 s alone: one chunk, the session's result */
    size_t nj = 11 * RATE;
    CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, nj, &p, &bp, &r), ENCDEC_OK);
    CHECK_EQ_INT(encdec_transcribe(s, x, nj, &p, &a), ENCDEC_OK);
    if (r && a) CHECK(golden_same_transcript(r, a));
    encdec_result_free(r);
    encdec_result_free(a);
    r = NULL;
    /* clips: chunks of their own */
    double clips[] = {0.0, 11.0, 20.0, 41.5};
    p.clip_timestamps = clips;
    p.n_clip_timestamps = 4;
    CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r), ENCDEC_OK);
    if (r) {
        encdec_span sp[2] = {{0, 11 * RATE}, {20 * RATE, (size_t)(41.5 * RATE)}};
        encdec_transcribe_params q = p;
        q.clip_timestamps = NULL;
        q.n_clip_timestamps = 0;
        CHECK_EQ_INT(each_chunk_alone(s, x, sp, 2, 0, q, NULL, NULL, r, 0), 2);
        CHECK(encdec_result_segment(r, encdec_result_n_segments(r) - 1)->start >= 20.0);
    }
    encdec_result_free(r);
    r = NULL;
    /* one given span of the whole recording: cut into equal parts of at most 30 s
     * (the host's cut: the CPU pass's) */
    p.clip_timestamps = NULL;
    p.n_clip_timestamps = 0;
    encdec_span whole = {0, n};
    p.speech = &whole;
    p.n_speech = 1;
    if (!on_device()) CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r), ENCDEC_OK);
    if (r) {
        int parts = (int)((n + CHUNK - 1) / CHUNK);
        encdec_span *sp = malloc(sizeof *sp * (size_t)parts);
        for (int i = 0; i < parts; i++) sp[i] = (encdec_span){n * i / parts, n * (i + 1) / parts};
        encdec_transcribe_params q = p;
        q.speech = NULL;
        q.n_speech = 0;
        CHECK_EQ_INT(each_chunk_alone(s, x, sp, parts, 0, q, NULL, NULL, r, 0), parts);
        free(sp);
    }
    encdec_result_free(r);
    r = NULL;
    p.speech = NULL;
    p.n_speech = 0;
    /* errors */
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r), ENCDEC_ERR_ARG,
                 "needs speech spans");
    bp.batch_size = 257;
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, nj, &p, &bp, &r), ENCDEC_ERR_ARG, "batch_size");
    bp = encdec_batch_default_params();
    bp.chunk_length = 31;
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, nj, &p, &bp, &r), ENCDEC_ERR_ARG,
                 "chunk_length");
    bp = encdec_batch_default_params();
    double past[] = {200.0, 210.0};
    p.clip_timestamps = past;
    p.n_clip_timestamps = 2;
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r), ENCDEC_ERR_ARG,
                 "clip_timestamps");
    p.clip_timestamps = NULL;
    p.n_clip_timestamps = 0;
    p.kv_mode = ENCDEC_KV_SELF;
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, nj, &p, &bp, &r), ENCDEC_ERR_ARG, "full");
    p.kv_mode = ENCDEC_KV_FULL;
    CHECK_STATUS(encdec_engine_transcribe_batched(e, x, 0, &p, &bp, &r), ENCDEC_ERR_AUDIO, "no samples");
    CHECK_STATUS(encdec_engine_transcribe_batched_file(e, "/nonexistent.wav", NULL, &p, &bp, &r, NULL),
                 ENCDEC_ERR_IO, "nonexistent");
    CHECK(r == NULL);
}

/* ---- 4: a multilingual model ---- */

static void multilingual(const encdec_vad *v) {
    const char *files[] = {"jfk.wav", "librispeech/1272-128104-0000.wav"};
    size_t n = 0;
    float *x = recording(files, 2, 1, &n);
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_model_load(g_base, &m), ENCDEC_OK);
    encdec_session_params sp = {2};
    encdec_engine_params ep = {2, 4, ENCDEC_KV_F32};
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    if (m) CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (x && s && e) {
        encdec_transcribe_params p = encdec_transcribe_default_params();
        p.vad = v;
        p.vad_params.min_silence_duration_ms = 160;
        p.vad_params.max_speech_duration_s = 12;
        encdec_batch_params bp = encdec_batch_default_params();
        bp.chunk_length = 12;
        encdec_result *r = NULL, *r2 = NULL;
        encdec_span *spans = NULL;
        int k = 0;
        CHECK_EQ_INT(encdec_vad_speech(v, x, n, &p.vad_params, 2, &spans, &k), ENCDEC_OK);
        CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r), ENCDEC_OK);
        if (r) {
            CHECK(!strcmp(encdec_result_language(r), "en"));
            CHECK(encdec_result_n_language_probs(r) > 1);
            int nc = each_chunk_alone(s, x, spans, k, 12 * RATE, p, NULL, "en", r, 0);
            printf("base, no language: %d chunks, the first detects \"%s\" for all\n", nc,
                   encdec_result_language(r));
            CHECK(nc >= 2);
        }
        bp.language_per_chunk = 1;
        CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r2), ENCDEC_OK);
        if (r2) each_chunk_alone(s, x, spans, k, 12 * RATE, p, NULL, NULL, r2, 0);
        encdec_result_free(r);
        encdec_result_free(r2);
        encdec_free(spans);
    }
    encdec_engine_free(e);
    encdec_session_free(s);
    encdec_model_free(m);
    free(x);
}

/* ---- 5: memory bounded by the batch ---- */

#ifdef ED_SANITIZED
#define LONG_S (10 * 60)
#else
#define LONG_S (2 * 3600)
#endif
#define LONG_RSS_MB 96

/* LONG_S seconds: low noise, with jfk.wav every 20 minutes (and at 30 s). */
static int write_long(const char *path, const float *jfk, size_t nj) {
    SF_INFO info = {.samplerate = RATE, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return 0;
    float *blk = malloc(sizeof *blk * 60 * RATE);
    int ok = 1;
    for (int minute = 0; minute < LONG_S / 60 && ok; minute++) {
        noise(blk, 60 * RATE);
        if (minute % 20 == 0) memcpy(blk + 30 * RATE, jfk, sizeof *blk * nj);
        ok = sf_writef_float(sf, blk, 60 * RATE) == 60 * RATE;
    }
    free(blk);
    sf_close(sf);
    return ok;
}

typedef struct {
    const char *path;
    const encdec_vad *v;
} long_ctx;

static void long_child(void *ctx, int fd) {
    const long_ctx *c = ctx;
    encdec_model *m = NULL;
    encdec_engine *e = NULL;
    encdec_engine_params ep = {2, 4, ENCDEC_KV_F32};
    if (encdec_model_load(g_tiny, &m) || encdec_engine_new(m, &ep, &e)) _exit(2);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long before = ru.ru_maxrss;
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.vad = c->v;
    p.vad_params.min_silence_duration_ms = 160;
    encdec_batch_params bp = encdec_batch_default_params();
    bp.batch_size = 4;
    encdec_result *r = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    encdec_status st = encdec_engine_transcribe_batched_file(e, c->path, NULL, &p, &bp, &r, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &ru);
    int found = r && strstr(encdec_result_text(r), "ask what you can do") != NULL;
    char line[160];
    int len = snprintf(line, sizeof line, "%.1f %d %d %.1f\n", (ru.ru_maxrss - before) / 1024.0,
                       r ? encdec_result_n_segments(r) : -1, found,
                       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    if (write(fd, line, (size_t)len) != len) _exit(2);
    _exit(st ? 2 : 0);
}

static void bounded(const encdec_vad *v, const float *jfk, size_t nj) {
    if (on_device()) {
        /* the bound is the host's memory, and the run is a forked child, which
         * cannot use the CUDA its parent started */
        printf("ENCDEC_DEVICE=%s: the 2-hour bounded-memory run is the CPU's alone\n",
               getenv("ENCDEC_DEVICE"));
        return;
    }
    if (!tmp_new("encdec-test-batched-long")) return;
    char path[1200];
    snprintf(path, sizeof path, "%s/long.wav", tmp_dir);
    CHECK(write_long(path, jfk, nj));
    long_ctx c = {path, v};
    char line[160];
    int ok = child_run(long_child, &c, line, sizeof line);
    double mb = -1, secs = -1;
    int segs = -1, found = 0;
    sscanf(line, "%lf %d %d %lf", &mb, &segs, &found, &secs);
    printf("%d s from a file, speech every 20 minutes, batch 4: %d segments, %.1f s, peak RSS "
           "+%.1f MB (bound %d; the samples: %d MB)\n", LONG_S, segs, secs, mb, LONG_RSS_MB,
           LONG_S * RATE * 4 >> 20);
    CHECK(ok && found);
    CHECK(segs >= LONG_S / 1200);
    CHECK(mb >= 0 && mb <= LONG_RSS_MB);
    tmp_remove(tmp_dir);
}

int main(void) {
    if (!golden_find_file(g_vad, sizeof g_vad, "ENCDEC_VAD", "silero-vad-v6", "model.safetensors"))
        return check_skip("Silero VAD not installed (scripts/fetch-model.sh vad)");
    if (!golden_find_model(g_tiny, sizeof g_tiny, "ENCDEC_TINY_EN", "whisper-tiny.en"))
        return check_skip("whisper tiny.en not installed");
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio");
    size_t n = 0;
    float *x = recording(SPEECH, 7, 2, &n);
    CHECK(x != NULL);
    encdec_vad *v = NULL;
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_engine *e = NULL;
    CHECK_EQ_INT(encdec_vad_load(g_vad, &v), ENCDEC_OK);
    CHECK_EQ_INT(encdec_model_load(g_tiny, &m), ENCDEC_OK);
    encdec_session_params sp = {2};
    encdec_engine_params ep = {2, 4, ENCDEC_KV_F32};
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    if (m) CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (x && v && s && e) {
        CHECK_PART(with_vad(e, s, v, x, n));
#ifndef ED_DEVICE_EMU
        CHECK_PART(short_text(e, s, v, x, n));
#endif
        CHECK_PART(rolling(e, s, x, n));
#ifndef ED_DEVICE_EMU
        CHECK_PART(without_vad(e, s, x, n));
#endif
    }
    encdec_engine_free(e);
    encdec_session_free(s);
    encdec_model_free(m);
    if (v && golden_find_model(g_base, sizeof g_base, "ENCDEC_BASE", "whisper-base")) CHECK_PART(multilingual(v));
    else printf("whisper base not installed: the multilingual part skipped\n");
#ifdef ED_DEVICE_EMU
    /* the emulated device (scripts/test-cuda.sh emu): the device paths are
     * the batched decode with the VAD, the rolling windows and the
     * multilingual model's; min_text_rate's fallback, the runs without a VAD,
     * the errors and the memory bound are host logic, the release pass's */
    printf("emulated device: short_text, without_vad and bounded are the release pass's\n");
    (void)short_text, (void)without_vad, (void)bounded;
#else
    if (v && x) CHECK_PART(bounded(v, x, 11 * RATE));
#endif
    encdec_vad_free(v);
    free(x);
    return check_done();
}
