/* test_engine.c - the engine (encdec_engine_*): many transcriptions of one
 * model sharing decode steps.
 *
 * The property: a request's output does not depend on what else the engine
 * runs. Six requests covering every strategy the long-form loop uses
 * (greedy with timestamps and fallback, word timestamps and their
 * alignment pass, beam search, sampling at temperature > 0 with best_of,
 * no timestamps, a 62 s recording of several windows with prompts) run
 * one at a time, then all at once (every step then decodes the sequences of
 * several requests in one pass: the stats must show it), then at once with
 * fewer places than requests (the rest queue): every result's tokens,
 * segment times, word times and log-probs are identical, bit for bit, to
 * the request's alone. The reference for what "alone" decodes is a
 * session's encdec_transcribe (the same text; the golden tests pin the
 * session against openai-whisper). Then: cancelling a running request and
 * a queued one, freeing the engine under running requests, bad input at
 * submit and at wait, threads 1 and 3.
 */
#include "golden.h"
#include "recordings.h"

#include "base/json.h"
#include "kern/kern.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *name;
    const char *file;        /* under ../shared/audio; NULL: the 62 s recording */
    encdec_transcribe_params p;
} req_case;

static float *g_rec;         /* the 62 s recording of longform-golden.json */
static size_t g_rec_n;

static encdec_status submit(encdec_engine *e, const req_case *c, encdec_request **q) {
    if (!c->file) return encdec_engine_transcribe(e, g_rec, g_rec_n, &c->p, q);
    char path[1024];
    snprintf(path, sizeof path, "%s/audio/%s", ED_SHARED_DIR, c->file);
    return encdec_engine_transcribe_file(e, path, NULL, &c->p, q);
}

/* Every token, segment and word of a and b the same, bit for bit. */
static int same_result(const encdec_result *a, const encdec_result *b, const char *name) {
    int bad = 0, n = encdec_result_n_tokens(a);
    if (n != encdec_result_n_tokens(b)) bad++;
    for (int i = 0; !bad && i < n; i++) {
        const encdec_token *x = encdec_result_token(a, i), *y = encdec_result_token(b, i);
        if (x->id != y->id || memcmp(&x->logprob, &y->logprob, sizeof x->logprob)) bad++;
    }
    int ns = encdec_result_n_segments(a);
    if (ns != encdec_result_n_segments(b)) bad++;
    for (int i = 0; !bad && i < ns; i++) {
        const encdec_segment *x = encdec_result_segment(a, i), *y = encdec_result_segment(b, i);
        if (x->start != y->start || x->end != y->end || x->n_words != y->n_words ||
            strcmp(x->text, y->text))
            bad++;
        for (int k = 0; !bad && k < x->n_words; k++)
            if (x->words[k].start != y->words[k].start || x->words[k].end != y->words[k].end ||
                x->words[k].probability != y->words[k].probability ||
                strcmp(x->words[k].word, y->words[k].word))
                bad++;
    }
    if (bad) fprintf(stderr, "  %s: the result differs from the request's alone\n", name);
    return !bad;
}

/* All cases submitted at once, then waited for; res[i] the results. */
static void run_together(encdec_engine *e, const req_case *cs, int n, encdec_result **res) {
    encdec_request *q[16];
    for (int i = 0; i < n; i++) CHECK_EQ_INT(submit(e, &cs[i], &q[i]), ENCDEC_OK);
    for (int i = 0; i < n; i++) {
        res[i] = NULL;
        if (q[i]) CHECK_EQ_INT(encdec_request_wait(q[i], &res[i]), ENCDEC_OK);
        encdec_request_free(q[i]);
    }
}

static void property(const encdec_model *m, const req_case *cs, int n) {
    encdec_engine_params ep = {2, 4, ENCDEC_KV_F32};
    encdec_engine *e;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (!e) return;
    encdec_result *alone[16], *mixed[16], *queued[16];
    encdec_session_params sp = {2};
    encdec_session *s;
    CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    for (int i = 0; i < n; i++) {   /* one at a time */
        encdec_request *q;
        alone[i] = NULL;
        CHECK_EQ_INT(submit(e, &cs[i], &q), ENCDEC_OK);
        CHECK_EQ_INT(encdec_request_wait(q, &alone[i]), ENCDEC_OK);
        encdec_request_free(q);
        /* the session decodes the same text */
        encdec_result *r = NULL;
        char path[1024];
        snprintf(path, sizeof path, "%s/audio/%s", ED_SHARED_DIR, cs[i].file ? cs[i].file : "");
        if (cs[i].file) CHECK_EQ_INT(encdec_transcribe_file(s, path, NULL, &cs[i].p, &r, NULL), ENCDEC_OK);
        else CHECK_EQ_INT(encdec_transcribe(s, g_rec, g_rec_n, &cs[i].p, &r), ENCDEC_OK);
        if (r && alone[i]) {
            CHECK_STR(encdec_result_text(alone[i]), encdec_result_text(r));
            fprintf(stderr, "  %-10s %3d tokens, %2d segments:%.60s\n", cs[i].name,
                    encdec_result_n_tokens(alone[i]), encdec_result_n_segments(alone[i]),
                    encdec_result_text(alone[i]));
        }
        encdec_result_free(r);
    }
    encdec_session_free(s);
    encdec_engine_stats st0, st1;
    encdec_engine_get_stats(e, &st0);
    CHECK_EQ_INT(st0.active, 0);
    run_together(e, cs, n, mixed);
    encdec_engine_get_stats(e, &st1);
    long long steps = st1.steps - st0.steps, rows = st1.rows - st0.rows;
    fprintf(stderr, "  together: %lld steps, %lld rows (%.2f sequences a step)\n", steps, rows,
            steps ? (double)rows / steps : 0);
    CHECK(steps > 0 && rows > steps);   /* steps were shared */
    for (int i = 0; i < n; i++) {
        if (alone[i] && mixed[i]) CHECK(same_result(alone[i], mixed[i], cs[i].name));
        encdec_result_free(mixed[i]);
    }
    encdec_engine_free(e);

    /* two places for all of them: the others wait their turn */
    ep.max_active = 2;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (e) {
        run_together(e, cs, n, queued);
        for (int i = 0; i < n; i++) {
            if (alone[i] && queued[i]) CHECK(same_result(alone[i], queued[i], cs[i].name));
            encdec_result_free(queued[i]);
        }
        encdec_engine_free(e);
    }
    /* other thread counts: the same as alone on this count (the sanitizers'
     * pass: 3, the odd split, alone) */
#ifdef ED_SANITIZED
    for (int nt = 3; nt <= 3; nt += 2) {
#else
    for (int nt = 1; nt <= 3; nt += 2) {
#endif
        ep = (encdec_engine_params){nt, 3, ENCDEC_KV_F32};
        CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
        if (!e) continue;
        encdec_result *one[16], *all[16];
        int k = n < 3 ? n : 3;
        for (int i = 0; i < k; i++) {
            encdec_request *q;
            one[i] = NULL;
            CHECK_EQ_INT(submit(e, &cs[i], &q), ENCDEC_OK);
            CHECK_EQ_INT(encdec_request_wait(q, &one[i]), ENCDEC_OK);
            encdec_request_free(q);
        }
        run_together(e, cs, k, all);
        for (int i = 0; i < k; i++) {
            if (one[i] && all[i]) CHECK(same_result(one[i], all[i], cs[i].name));
            if (one[i] && alone[i]) CHECK_STR(encdec_result_text(one[i]), encdec_result_text(alone[i]));
            encdec_result_free(one[i]);
            encdec_result_free(all[i]);
        }
        encdec_engine_free(e);
    }
    for (int i = 0; i < n; i++) encdec_result_free(alone[i]);
}

/* Under a lower kernel set (the products' kernels then depend on the row
 * count, unless the engine keeps them batch-invariant): alone vs together. */
static void property_isa(const char *tiny, encdec_isa isa, const char *name, const req_case *cs,
                         int n) {
    encdec_model_params mp = {ENCDEC_COMPUTE_F32, isa};
    encdec_model *m = NULL;
    CHECK_EQ_INT(encdec_model_load_ex(tiny, &mp, &m), ENCDEC_OK);
    if (!m) return;
    encdec_engine_params ep = {2, 4, ENCDEC_KV_F32};
    encdec_engine *e;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    encdec_result *one[16], *all[16];
    for (int i = 0; e && i < n; i++) {
        encdec_request *q;
        one[i] = NULL;
        CHECK_EQ_INT(submit(e, &cs[i], &q), ENCDEC_OK);
        CHECK_EQ_INT(encdec_request_wait(q, &one[i]), ENCDEC_OK);
        encdec_request_free(q);
    }
    encdec_engine_stats st0, st1;
    if (e) encdec_engine_get_stats(e, &st0);
    if (e) run_together(e, cs, n, all);
    if (e) encdec_engine_get_stats(e, &st1);
    fprintf(stderr, "  kernel set %s: %d requests alone and together, %.2f sequences a step\n",
            name, n, e ? (double)(st1.rows - st0.rows) / (double)(st1.steps - st0.steps) : 0.0);
    for (int i = 0; e && i < n; i++) {
        if (one[i] && all[i]) CHECK(same_result(one[i], all[i], cs[i].name));
        encdec_result_free(one[i]);
        encdec_result_free(all[i]);
    }
    encdec_engine_free(e);
    encdec_model_free(m);
}

/* Counts segments (from the request's thread; the test's polls it). */
static int on_seg_count(const encdec_segment *s, void *user) {
    (void)s;
    atomic_fetch_add((atomic_int *)user, 1);
    return 0;
}

/* Cancelling: a running request ends CANCELLED and the engine goes on;
 * freeing the engine ends the running ones. */
static void cancelling(const encdec_model *m) {
    encdec_engine_params ep = {2, 1, ENCDEC_KV_F16};
    encdec_engine *e;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (!e) return;
    encdec_transcribe_params p = encdec_transcribe_default_params();
    atomic_int segs = 0;
    p.on_segment = on_seg_count;
    p.user = &segs;
    encdec_request *run, *queued, *after;
    CHECK_EQ_INT(encdec_engine_transcribe(e, g_rec, g_rec_n, &p, &run), ENCDEC_OK);
    CHECK_EQ_INT(encdec_engine_transcribe(e, g_rec, g_rec_n, &p, &queued), ENCDEC_OK);
    while (atomic_load(&segs) == 0) usleep(2000);   /* the first is decoding, the second waits for the place */
    CHECK_EQ_INT(encdec_request_done(queued), 0);
    encdec_request_cancel(queued);
    encdec_request_cancel(run);
    encdec_result *r = NULL;
    CHECK_STATUS(encdec_request_wait(run, &r), ENCDEC_ERR_CANCELLED, "cancelled");
    CHECK(r == NULL);
    CHECK_STATUS(encdec_request_wait(queued, &r), ENCDEC_ERR_CANCELLED, "cancelled");
    CHECK_EQ_INT(encdec_request_done(run), 1);
    encdec_request_free(run);
    encdec_request_free(queued);
    encdec_engine_stats st;
    encdec_engine_get_stats(e, &st);
    CHECK_EQ_INT(st.active, 0);
    CHECK_EQ_INT(st.waiting, 0);
    /* still serving */
    CHECK_EQ_INT(encdec_engine_transcribe_file(e, ED_SHARED_DIR "/audio/jfk.wav", NULL, NULL, &after), ENCDEC_OK);
    CHECK_EQ_INT(encdec_request_wait(after, &r), ENCDEC_OK);
    CHECK(r && strstr(encdec_result_text(r), "ask not what your country can do for you"));
    encdec_result_free(r);
    encdec_request_free(after);
    /* freed under two requests: both end, their handles stay valid */
    CHECK_EQ_INT(encdec_engine_transcribe(e, g_rec, g_rec_n, &p, &run), ENCDEC_OK);
    CHECK_EQ_INT(encdec_engine_transcribe(e, g_rec, g_rec_n, &p, &queued), ENCDEC_OK);
    encdec_engine_free(e);
    CHECK_EQ_INT(encdec_request_done(run), 1);
    CHECK_EQ_INT(encdec_request_done(queued), 1);
    encdec_request_cancel(run);   /* after the engine: nothing to do */
    encdec_result_free(r = NULL);
    if (encdec_request_wait(queued, &r) == ENCDEC_OK) encdec_result_free(r);
    encdec_request_free(run);
    encdec_request_free(queued);
}

static void bad_input(const encdec_model *m) {
    encdec_engine_params ep = {1, 2, ENCDEC_KV_F32};
    encdec_engine *e;
    encdec_request *q = NULL;
    encdec_result *r = NULL;
    CHECK_STATUS(encdec_engine_new(NULL, &ep, &e), ENCDEC_ERR_ARG, "model");
    ep.max_active = 1000;
    CHECK_STATUS(encdec_engine_new(m, &ep, &e), ENCDEC_ERR_ARG, "max_active");
    /* every count the parameters allow is an engine: 256 requests of 17
     * sequences each (their self caches reserved, not touched) */
    ep.max_active = 256;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (e) {
        encdec_transcribe_params p0 = encdec_transcribe_default_params();
        CHECK_EQ_INT(encdec_engine_transcribe(e, g_rec, g_rec_n, &p0, &q), ENCDEC_OK);
        if (q) CHECK_EQ_INT(encdec_request_wait(q, &r), ENCDEC_OK);
        if (r) CHECK(strstr(encdec_result_text(r), "country") != NULL);
        encdec_result_free(r), encdec_request_free(q), encdec_engine_free(e);
        r = NULL, q = NULL, e = NULL;
    }
    ep.max_active = 2;
    ep.n_threads = -1;
    CHECK_STATUS(encdec_engine_new(m, &ep, &e), ENCDEC_ERR_ARG, "thread");
    ep.n_threads = 1;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (!e) return;
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.beam_size = 99;
    CHECK_STATUS(encdec_engine_transcribe(e, g_rec, g_rec_n, &p, &q), ENCDEC_ERR_ARG, "beam_size");
    CHECK(q == NULL);
    p = encdec_transcribe_default_params();
    p.kv_mode = ENCDEC_KV_NONE;
    CHECK_STATUS(encdec_engine_transcribe(e, g_rec, g_rec_n, &p, &q), ENCDEC_ERR_ARG, "full cache");
    p.kv_mode = ENCDEC_KV_FULL;
    p.language = "xx";
    CHECK_STATUS(encdec_engine_transcribe(e, g_rec, g_rec_n, &p, &q), ENCDEC_ERR_ARG, "language");
    float nan_pcm[4] = {0, NAN, 0, 0};
    CHECK_STATUS(encdec_engine_transcribe(e, nan_pcm, 4, NULL, &q), ENCDEC_ERR_AUDIO, "finite");
    CHECK_STATUS(encdec_engine_transcribe(e, g_rec, 0, NULL, &q), ENCDEC_ERR_AUDIO, "no samples");
    CHECK_STATUS(encdec_engine_transcribe_file(e, "", NULL, NULL, &q), ENCDEC_ERR_ARG, "empty path");
    /* an unreadable file fails on the request's thread: told by wait */
    CHECK_EQ_INT(encdec_engine_transcribe_file(e, "/nonexistent/a.wav", NULL, NULL, &q), ENCDEC_OK);
    CHECK_STATUS(encdec_request_wait(q, &r), ENCDEC_ERR_IO, "/nonexistent/a.wav");
    CHECK_STATUS(encdec_request_wait(q, &r), ENCDEC_ERR_IO, "/nonexistent/a.wav");   /* again */
    encdec_request_free(q);
    /* encoded bytes in memory: read on the request's thread, as a file's */
    CHECK_STATUS(encdec_engine_transcribe_memory(e, "x", 0, NULL, NULL, &q), ENCDEC_ERR_AUDIO, "empty");
    CHECK_EQ_INT(encdec_engine_transcribe_memory(e, "not audio at all", 16, NULL, NULL, &q), ENCDEC_OK);
    CHECK_STATUS(encdec_request_wait(q, &r), ENCDEC_ERR_AUDIO, "Format not recognised");
    encdec_request_free(q);
    FILE *f = fopen(ED_SHARED_DIR "/audio/jfk.mp3", "rb");
    static unsigned char mp3[1 << 20];
    size_t n_mp3 = f ? fread(mp3, 1, sizeof mp3, f) : 0;
    if (f) fclose(f);
    CHECK(n_mp3 > 1000);
    encdec_audio_params ap = encdec_audio_default_params();
    ap.max_seconds = 5;   /* 11 s of speech: too long, told by wait */
    CHECK_EQ_INT(encdec_engine_transcribe_memory(e, mp3, n_mp3, &ap, NULL, &q), ENCDEC_OK);
    CHECK_STATUS(encdec_request_wait(q, &r), ENCDEC_ERR_AUDIO, "5");
    encdec_request_free(q);
    CHECK_EQ_INT(encdec_engine_transcribe_memory(e, mp3, n_mp3, NULL, NULL, &q), ENCDEC_OK);
    CHECK_EQ_INT(encdec_request_wait(q, &r), ENCDEC_OK);
    CHECK(r && strstr(encdec_result_text(r), "ask not what your country can do for you"));
    encdec_result_free(r);
    r = NULL;
    encdec_request_free(q);
    CHECK_STATUS(encdec_request_wait(NULL, &r), ENCDEC_ERR_ARG, "NULL");
    encdec_request_free(NULL);
    encdec_request_cancel(NULL);
    CHECK_EQ_INT(encdec_request_done(NULL), 0);
    encdec_engine_free(e);
    encdec_engine_free(NULL);
}

/* A thread waiting on its request (encdec_request_wait joins the request's
 * thread) while another frees the engine: both end (the engine's free once
 * spun for ever when the waiter had started joining first). */
typedef struct {
    encdec_request *q;
    encdec_status st;
    int started;
} waiter;

static void *wait_main(void *arg) {
    waiter *w = arg;
    encdec_result *r = NULL;
    __atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
    w->st = encdec_request_wait(w->q, &r);
    encdec_result_free(r);
    return NULL;
}

static void free_while_waited(const encdec_model *m) {
    encdec_engine_params ep = {2, 2, ENCDEC_KV_F32};
    encdec_engine *e;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (!e) return;
    encdec_transcribe_params p = encdec_transcribe_default_params();
    atomic_int segs = 0;
    p.on_segment = on_seg_count;
    p.user = &segs;
    waiter w[3] = {{0}};
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(encdec_engine_transcribe(e, g_rec, g_rec_n, &p, &w[i].q), ENCDEC_OK);
        pthread_create(&th[i], NULL, wait_main, &w[i]);
    }
    while (atomic_load(&segs) == 0) usleep(2000);   /* decoding; the waiters are joining */
    for (int i = 0; i < 3; i++)
        while (!__atomic_load_n(&w[i].started, __ATOMIC_SEQ_CST)) usleep(1000);
    usleep(20000);
    encdec_engine_free(e);            /* must return: every request ends cancelled */
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].st == ENCDEC_ERR_CANCELLED || w[i].st == ENCDEC_OK);
        CHECK_EQ_INT(encdec_request_done(w[i].q), 1);
        encdec_request_free(w[i].q);
    }
}

int main(void) {
    char tiny[1024];
    if (!golden_find_model(tiny, sizeof tiny, "ENCDEC_TINY_EN", "whisper-tiny.en"))
        return check_skip("whisper tiny.en not installed (scripts/fetch-model.sh tiny.en)");
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio");
    cJSON *js = NULL;
    if (ed_json_load(ED_TEST_DATA "/longform-golden.json", &js)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    CHECK(rec_build(cJSON_GetArrayItem(cJSON_GetObjectItem(js, "recordings"), 0), &g_rec, &g_rec_n));
    cJSON_Delete(js);
    encdec_model *m = NULL;
    CHECK_EQ_INT(encdec_model_load(tiny, &m), ENCDEC_OK);
    if (!m || !g_rec) return check_done();

    encdec_transcribe_params dflt = encdec_transcribe_default_params(), p;
    req_case cs[6];
    int n = 0;
    cs[n++] = (req_case){"jfk", "jfk.wav", dflt};
    p = dflt;
    p.word_timestamps = 1;
    cs[n++] = (req_case){"62s+words", NULL, p};
    p = dflt;
    p.beam_size = 5;
    cs[n++] = (req_case){"beam5", "platforms_en.wav", p};
    p = dflt;
    p.temperature = 0.4f;   /* sampling from the start: best_of 5, then fallback */
    p.seed = 7;
    cs[n++] = (req_case){"sample", "librivox/sense_and_sensibility_01_austen_64kb-0870.wav", p};
    p = dflt;
    p.timestamps = 0;
    p.beam_size = 3;
    p.word_timestamps = 1;
    cs[n++] = (req_case){"beam3-nots", "jfk.flac", p};
    p = dflt;
    p.condition_on_previous_text = 0;
    cs[n++] = (req_case){"greedy", "librispeech/1272-128104-0000.wav", p};
#ifdef ED_SANITIZED
    n = 3;   /* the sanitizers' pass: the 62 s recording, beam search, words */
#endif
    CHECK_PART(property(m, cs, n));
    /* wide: more than 16 rows a step (beams and candidates of three requests) */
    req_case wide[3] = {cs[1], cs[1], cs[1]};
    wide[1].p.beam_size = 10;
    wide[1].p.word_timestamps = 0;
    wide[2].p.temperature = 0.4f;
    wide[2].p.best_of = 10;
    wide[2].p.word_timestamps = 0;
    int n_wide = 3;
#ifdef ED_SANITIZED
    /* beam 10 and best_of 10 together, on jfk.wav: up to 20 rows a step,
     * 19 on average (on the 62 s recording this was half the test's time
     * under ASan) */
    n_wide = 2;
    wide[0] = wide[2];
    wide[0].file = wide[1].file = cs[0].file;
#endif
#if defined(__x86_64__)
    if (k_isa() > K_ISA_VEC) property_isa(tiny, ENCDEC_ISA_AVX2, "avx2", wide, n_wide);
#else
    if (k_isa() > K_ISA_VEC) property_isa(tiny, ENCDEC_ISA_NEON, "neon", wide, n_wide);
#endif
#ifndef ED_SANITIZED
    req_case two[2] = {cs[0], cs[2]};   /* the shortest */
    if (k_isa() > K_ISA_C) property_isa(tiny, ENCDEC_ISA_C, "c", two, 2);
#endif
    CHECK_PART(cancelling(m));
    CHECK_PART(free_while_waited(m));
    CHECK_PART(bad_input(m));
    encdec_model_free(m);
    free(g_rec);
    return check_done();
}
