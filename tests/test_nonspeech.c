/* test_nonspeech.c - what is not speech: synthetic music, noise and tones,
 * and real speech beside them, transcribed with the loop detector and
 * without it. The outputs must be the same, token for token, segment for
 * segment (times, temperature, scores bit for bit): the detector may save
 * decoder steps, never change what is transcribed or skipped (every
 * verdict, silence, fallback or acceptance, is openai-whisper's rules' on
 * the whole decode). The steps saved are printed.
 *
 * The signals (16 kHz, seeded, made here): music, a melody of random notes
 * of a scale over chords, a bass line and a kick drum on every beat (what
 * made the detector turn 60 s of music into "1.0 m 1.5 m 1.5 m ..." on
 * whisper base with beams: its early stop skipped the silence rule);
 * noise, white and low-passed; tones, beeps of random pitch and length and
 * a slow sweep; a word and a half of jfk.wav said 20 times over (the model
 * repeats itself there while the window is not silence to it: the detector
 * stops decodes). On tiny.en and, when installed, base, with beams where
 * the old detector misjudged. A synthetic signal is decoded again without
 * the detector only where it stopped a decode: one that stops nothing
 * leaves the decode as it is, which the recordings of speech (jfk.wav,
 * platforms_en.wav) check: they are compared in full whatever happens.
 * Every result here, and tiny.en's on every recording of ../shared/audio,
 * has no segment or word past the end of its audio.
 */
#include "golden.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SR 16000
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static uint32_t g_rng;
static double urand(void) {   /* [0, 1) */
    g_rng = g_rng * 1664525u + 1013904223u;
    return (g_rng >> 8) / 16777216.0;
}

static double note_hz(int semis) { return 220.0 * pow(2.0, semis / 12.0); }

/* seconds of music: 120 bpm, a bar of 4 beats per chord, a melody note
 * per half or whole beat (a major scale around A3), bass on the root. */
static float *music(double seconds, uint32_t seed, size_t *n) {
    g_rng = seed;
    size_t N = (size_t)(seconds * SR);
    float *x = calloc(N, sizeof *x);
    static const int scale[] = {0, 2, 4, 5, 7, 9, 11, 12, 14, 16};
    static const int roots[] = {0, 5, 7, 9};   /* I IV V vi */
    double beat = 0.5;
    int chord = 0;
    for (double t0 = 0; t0 < seconds; t0 += 4 * beat) {
        chord = roots[(int)(urand() * 4)];
        int third = chord + (chord == 9 ? 3 : 4), fifth = chord + 7;
        size_t a = (size_t)(t0 * SR), b = (size_t)((t0 + 4 * beat) * SR);
        for (size_t i = a; i < b && i < N; i++) {
            double t = (i - a) / (double)SR, env = exp(-t * 0.6);
            x[i] += (float)(0.05 * env * (sin(2 * M_PI * note_hz(chord) * t) + sin(2 * M_PI * note_hz(third) * t) +
                                          sin(2 * M_PI * note_hz(fifth) * t)));
            x[i] += (float)(0.12 * env * sin(2 * M_PI * note_hz(chord - 24) * t));   /* bass */
        }
        for (int k = 0; k < 4; k++) {   /* kick: a falling 60 Hz thump */
            size_t s = (size_t)((t0 + k * beat) * SR);
            for (size_t i = s; i < s + SR / 8 && i < N; i++) {
                double t = (i - s) / (double)SR;
                x[i] += (float)(0.4 * exp(-t * 30) * sin(2 * M_PI * (60 + 60 * exp(-t * 40)) * t));
            }
        }
        for (double tn = t0; tn < t0 + 4 * beat;) {   /* melody */
            double len = urand() < 0.5 ? beat / 2 : beat;
            double hz = note_hz(12 + scale[(int)(urand() * 10)]);
            size_t s = (size_t)(tn * SR), e = (size_t)((tn + len) * SR);
            for (size_t i = s; i < e && i < N; i++) {
                double t = (i - s) / (double)SR, env = fmin(1.0, t * 50) * exp(-t * 3);
                x[i] += (float)(0.15 * env * (sin(2 * M_PI * hz * t) + 0.3 * sin(4 * M_PI * hz * t)));
            }
            tn += len;
        }
    }
    *n = N;
    return x;
}

/* white noise (lowpass 0) or noise through a one-pole low-pass */
static float *noise(double seconds, uint32_t seed, int lowpass, size_t *n) {
    g_rng = seed;
    size_t N = (size_t)(seconds * SR);
    float *x = malloc(N * sizeof *x);
    double y = 0, amp = 0.05 + 0.2 * urand();
    for (size_t i = 0; i < N; i++) {
        double v = (urand() * 2 - 1) * amp;
        y = lowpass ? 0.97 * y + 0.03 * v * 6 : v;
        x[i] = (float)y;
    }
    *n = N;
    return x;
}

/* beeps of random pitch (300-3000 Hz) and length (0.1-1 s) with gaps, then
 * a sweep from 100 Hz to 4 kHz over the last third */
static float *tones(double seconds, uint32_t seed, size_t *n) {
    g_rng = seed;
    size_t N = (size_t)(seconds * SR), sweep = N * 2 / 3;
    float *x = calloc(N, sizeof *x);
    for (size_t i = 0; i < sweep;) {
        size_t len = (size_t)((0.1 + 0.9 * urand()) * SR), gap = (size_t)(0.3 * urand() * SR);
        double hz = 300 + 2700 * urand();
        for (size_t k = 0; k < len && i + k < sweep; k++) x[i + k] = (float)(0.3 * sin(2 * M_PI * hz * k / SR));
        i += len + gap;
    }
    double ph = 0, T = (double)(N - sweep) / SR;
    for (size_t i = sweep; i < N; i++) {
        double t = (i - sweep) / (double)SR;
        ph += 2 * M_PI * (100 * pow(40.0, t / T)) / SR;
        x[i] = (float)(0.3 * sin(ph));
    }
    *n = N;
    return x;
}

/* Every token, segment, time and score of a and b the same, bit for bit. */
static int same_output(const encdec_result *a, const encdec_result *b) {
    int n = encdec_result_n_tokens(a);
    if (n != encdec_result_n_tokens(b) || encdec_result_n_segments(a) != encdec_result_n_segments(b))
        return 0;
    for (int i = 0; i < n; i++) {
        const encdec_token *x = encdec_result_token(a, i), *y = encdec_result_token(b, i);
        if (x->id != y->id || memcmp(&x->logprob, &y->logprob, sizeof x->logprob)) return 0;
    }
    for (int i = 0; i < encdec_result_n_segments(a); i++) {
        const encdec_segment *x = encdec_result_segment(a, i), *y = encdec_result_segment(b, i);
        if (x->start != y->start || x->end != y->end || strcmp(x->text, y->text) ||
            memcmp(&x->temperature, &y->temperature, sizeof(float)) ||
            memcmp(&x->avg_logprob, &y->avg_logprob, sizeof(float)) ||
            memcmp(&x->compression_ratio, &y->compression_ratio, sizeof(float)) ||
            x->all_failed != y->all_failed)
            return 0;
    }
    return 1;
}

/* No segment or word of r ends after the audio's end (seconds); a
 * segment starts before it. */
static int within(const encdec_result *r, double end, const char *what) {
    int bad = 0;
    for (int i = 0; i < encdec_result_n_segments(r); i++) {
        const encdec_segment *g = encdec_result_segment(r, i);
        bad += g->end > end || g->start >= end || g->start > g->end;
        for (int k = 0; k < g->n_words; k++)
            bad += g->words[k].end > end || g->words[k].start > g->words[k].end;
        if (bad) {
            fprintf(stderr, "  %s: segment %d [%.2f, %.2f] (or a word of it) past the end of the "
                    "audio at %.2f s\n", what, i, g->start, g->end, end);
            return 0;
        }
    }
    return 1;
}

typedef struct {
    long steps_on, steps_off, loops;
    double ms_on, ms_off;
    int cases, same, silent;   /* silent: nothing stopped, not run without (when_stopped) */
} tally;

/* One case with the detector and without it. when_stopped: the run without
 * it only when the detector stopped a decode (base's cases, each a minute of
 * beams: a detector that stops nothing leaves the decode as it is, what
 * tiny.en's cases compare in full). */
static void one(encdec_session *s, const char *what, const float *pcm, size_t n, int beam,
                int keep_last, int when_stopped, tally *t) {
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.beam_size = beam;
    p.fallback_keep_last = keep_last;
    p.word_timestamps = 1;
    encdec_result *r[2] = {NULL, NULL};
    for (int off = 0; off < 2; off++) {
        p.loop_detection = !off;
        CHECK_EQ_INT(encdec_transcribe(s, pcm, n, &p, &r[off]), ENCDEC_OK);
        if (!off && when_stopped && r[0] && encdec_result_timings(r[0])->n_loops == 0) break;
    }
    if (!r[0]) return;
    const encdec_timings *on = encdec_result_timings(r[0]);
    if (!r[1]) {   /* when_stopped, and nothing stopped */
        CHECK(within(r[0], n / (double)SR, what));
        printf("  %-26s beam %d%s: nothing stopped; steps %5d with the detector; \"%.60s%s\"\n", what,
               beam, keep_last ? ", the last kept" : "", on->n_steps, encdec_result_text(r[0]),
               strlen(encdec_result_text(r[0])) > 60 ? "..." : "");
        t->cases++;
        t->silent++;
        t->steps_on += on->n_steps;
        t->steps_off += on->n_steps;
        t->ms_on += on->decode_ms;
        t->ms_off += on->decode_ms;
        encdec_result_free(r[0]);
        return;
    }
    const encdec_timings *off = encdec_result_timings(r[1]);
    int same = same_output(r[0], r[1]);
    CHECK(within(r[0], n / (double)SR, what));
    char text[64];
    snprintf(text, sizeof text, "%s", encdec_result_text(r[1]));
    printf("  %-26s beam %d%s: %s; steps %5d with the detector, %5d without (%d stopped); "
           "\"%s%s\"\n", what, beam, keep_last ? ", the last kept" : "",
           same ? "the same" : "DIFFERENT", on->n_steps, off->n_steps, on->n_loops, text,
           strlen(encdec_result_text(r[1])) > 60 ? "..." : "");
    if (!same) fprintf(stderr, "    with: \"%s\"\n    without: \"%s\"\n", encdec_result_text(r[0]),
                       encdec_result_text(r[1]));
    CHECK(same);
    t->cases++;
    t->same += same;
    t->steps_on += on->n_steps;
    t->steps_off += off->n_steps;
    t->loops += on->n_loops;
    t->ms_on += on->decode_ms;
    t->ms_off += off->decode_ms;
    encdec_result_free(r[0]);
    encdec_result_free(r[1]);
}

/* A case: a signal, a beam width, a fallback rule. */
typedef enum { MUSIC, WHITE, LOWPASS, TONES, REPEATED, FILE_ } kind;
typedef struct {
    kind k;
    int seed;                 /* synthetic: the seed; FILE_: unused */
    int beam, keep_last;
    const char *file;         /* under ../shared/audio (REPEATED: its first 1.5 s, 20 times) */
} ns_case;

static float *signal_of(const ns_case *c, size_t *n, char *what, size_t cap) {
    static const char *names[] = {"music", "white noise", "low-passed noise", "tones"};
    if (c->k <= TONES) {
        snprintf(what, cap, "%s, seed %d", names[c->k], c->seed);
        return c->k == MUSIC ? music(30.0, 100u + (uint32_t)c->seed, n)
             : c->k == TONES ? tones(30.0, 300u + (uint32_t)c->seed, n)
                             : noise(30.0, 200u + (uint32_t)c->seed, c->k == LOWPASS, n);
    }
    char path[1024];
    float *x = NULL;
    snprintf(path, sizeof path, "%s/audio/%s", ED_SHARED_DIR, c->file);
    if (encdec_audio_load(path, 0, &x, n) != ENCDEC_OK) return NULL;
    if (c->k == FILE_) {
        snprintf(what, cap, "%s", c->file);
        return x;
    }
    /* a word and a half said 20 times over: the model repeats itself, and
     * the window is not silence to it */
    size_t piece = (size_t)(1.5 * SR), m = 20 * piece;
    float *y = malloc(m * sizeof *y);
    for (size_t i = 0; i < m; i++) y[i] = x[i % piece];
    encdec_free(x);
    *n = m;
    snprintf(what, cap, "%s's 1.5 s x 20", c->file);
    return y;
}

static void run_model(const char *dir, const char *name, const ns_case *cs, int n_cases) {
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    CHECK_EQ_INT(encdec_model_load(dir, &m), ENCDEC_OK);
    encdec_session_params sp = {2};
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    if (!s) {
        encdec_model_free(m);
        return;
    }
    printf("%s\n", name);
    tally t = {0};
    for (int i = 0; i < n_cases; i++) {
        size_t n = 0;
        char what[128];
        float *x = signal_of(&cs[i], &n, what, sizeof what);
        CHECK(x != NULL);
        if (x) one(s, what, x, n, cs[i].beam, cs[i].keep_last, cs[i].k != FILE_, &t);
        free(x);
    }
    printf("%s: %d/%d the same with and without the detector (%d stopping nothing, not run "
           "without it); decoder steps %ld against %ld (%.0f%% saved), decoding %.1f s against "
           "%.1f s; %ld decodes stopped\n", name, t.same, t.cases - t.silent, t.silent, t.steps_on,
           t.steps_off,
           t.steps_off ? 100.0 * (t.steps_off - t.steps_on) / t.steps_off : 0.0, t.ms_on / 1e3,
           t.ms_off / 1e3, t.loops);
    encdec_session_free(s);
    encdec_model_free(m);
}

#ifndef ED_SANITIZED
/* Every recording of ../shared/audio (tiny.en, greedy, word times): no time
 * past its end. */
static void every_recording_within(const char *dir) {
    static const char *files[] = {"jfk.wav", "jfk.flac", "jfk.mp3", "platforms_en.wav",
                                  "librispeech/1272-128104-0000.wav", "cards/001.wav",
                                  "cards/002.wav", "cards/003.wav", "cards/004.wav", "cards/005.wav",
                                  "librivox/sense_and_sensibility_01_austen_64kb-0870.wav",
                                  "librivox/sense_and_sensibility_01_austen_64kb-0880.wav",
                                  "librivox/sense_and_sensibility_01_austen_64kb-0890.wav",
                                  "librivox/sense_and_sensibility_01_austen_64kb-0920.wav",
                                  "librivox/sense_and_sensibility_01_austen_64kb-0930.wav"};
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    CHECK_EQ_INT(encdec_model_load(dir, &m), ENCDEC_OK);
    encdec_session_params sp = {2};
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    int ok = 0, n_files = (int)(sizeof files / sizeof files[0]);
    for (int i = 0; s && i < n_files; i++) {
        char path[1024];
        float *x = NULL;
        size_t n = 0;
        snprintf(path, sizeof path, "%s/audio/%s", ED_SHARED_DIR, files[i]);
        CHECK_EQ_INT(encdec_audio_load(path, 0, &x, &n), ENCDEC_OK);
        encdec_transcribe_params p = encdec_transcribe_default_params();
        p.word_timestamps = 1;
        encdec_result *r = NULL;
        if (x) CHECK_EQ_INT(encdec_transcribe(s, x, n, &p, &r), ENCDEC_OK);
        if (r) ok += within(r, n / (double)SR, files[i]);
        encdec_result_free(r);
        encdec_free(x);
    }
    printf("tiny.en: %d/%d recordings of ../shared/audio end no segment or word past their end\n",
           ok, n_files);
    CHECK_EQ_INT(ok, n_files);
    encdec_session_free(s);
    encdec_model_free(m);
}
#endif

int main(void) {
    char tiny[1024], base[1024];
    if (!golden_find_model(tiny, sizeof tiny, "ENCDEC_TINY_EN", "whisper-tiny.en"))
        return check_skip("whisper tiny.en not installed (scripts/fetch-model.sh tiny.en)");
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio");
    /* tiny.en: where the old detector stopped decodes (beams on music, noise
     * and tones), the repeated word (the detector stops there: with
     * openai-whisper's rule it saves most steps; with faster-whisper's, every
     * attempt over the threshold is decoded again whole), speech */
    static const ns_case tiny_cases[] = {
        {MUSIC, 1, 5, 0, NULL},
        {WHITE, 2, 5, 0, NULL},          {TONES, 1, 5, 0, NULL},
        {REPEATED, 0, 1, 1, "jfk.wav"},  {REPEATED, 0, 1, 0, "jfk.wav"},
        {FILE_, 0, 1, 0, "jfk.wav"},     {FILE_, 0, 5, 0, "platforms_en.wav"},
    };
#ifdef ED_SANITIZED
    CHECK_PART(run_model(tiny, "tiny.en", tiny_cases + 3, 1));
    (void)base;
#else
    CHECK_PART(run_model(tiny, "tiny.en", tiny_cases, (int)(sizeof tiny_cases / sizeof tiny_cases[0])));
    /* base: the tones the old detector turned into a sentence, and music
     * (compared without the detector where it stops a decode) */
    static const ns_case base_cases[] = {{TONES, 2, 5, 0, NULL}, {MUSIC, 1, 5, 0, NULL}};
    if (golden_find_model(base, sizeof base, "ENCDEC_BASE", "whisper-base"))
        CHECK_PART(run_model(base, "base", base_cases, 2));
    else
        printf("base: not installed, skipped\n");
    CHECK_PART(every_recording_within(tiny));
#endif
    return check_done();
}
