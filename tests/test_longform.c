/* test_longform.c - long-form transcription against openai-whisper's
 * transcribe() (tests/data/longform-golden.json, tools/golden_longform.py):
 * real tiny.en on three recordings of 62-88 s built from ../shared/audio,
 * with its defaults (timestamps, fallback thresholds, conditioning), with
 * word timestamps, with beam search + patience, with an initial prompt and
 * clips; jfk.wav without conditioning, and with a prefix against
 * faster-whisper (encdec places a prefix as it does). Per segment: the tokens exactly (timestamps included), the text,
 * start and end within 0.02 s, its window's average log-probability,
 * compression ratio and no-speech probability within 1e-3; words: the same
 * texts, times within 0.1 s on average. Language detection on the
 * multilingual base: every language's probability within 1e-3.
 *
 * Also: the three cache modes agree token for token and word for word with
 * timestamps and word times on; the loop detector changes nothing on real
 * speech; a segment callback sees every segment as it comes, and can stop.
 * Under the sanitizers (ED_SANITIZED) only the first recording runs.
 */
#include "golden.h"
#include "recordings.h"
#include "tmpdir.h"

#include "base/json.h"

#include <string.h>

#define TIME_TOL 0.02
#define WORD_TOL 0.1
#define PROB_TOL 1e-3

static encdec_model *g_tiny;
static encdec_session *g_sess;

/* The case's options (openai-whisper keyword arguments) as parameters. */
static encdec_transcribe_params params_of(const cJSON *opts, double *clips) {
    encdec_transcribe_params p = encdec_transcribe_default_params();
    const cJSON *o;
    if ((o = cJSON_GetObjectItem(opts, "word_timestamps"))) p.word_timestamps = cJSON_IsTrue(o);
    if ((o = cJSON_GetObjectItem(opts, "beam_size"))) p.beam_size = o->valueint;
    if ((o = cJSON_GetObjectItem(opts, "patience"))) p.patience = (float)o->valuedouble;
    if ((o = cJSON_GetObjectItem(opts, "initial_prompt"))) p.initial_prompt = o->valuestring;
    if ((o = cJSON_GetObjectItem(opts, "prefix"))) p.prefix = o->valuestring;
    if ((o = cJSON_GetObjectItem(opts, "condition_on_previous_text"))) p.condition_on_previous_text = cJSON_IsTrue(o);
    if ((o = cJSON_GetObjectItem(opts, "clip_timestamps"))) {
        char *s = o->valuestring, *end;
        while (*s) {
            clips[p.n_clip_timestamps++] = strtod(s, &end);
            s = *end ? end + 1 : end;
        }
        p.clip_timestamps = clips;
    }
    return p;
}

typedef struct {
    int segs, tok_bad, text_bad, words, word_bad;
    double t_worst, w_sum, w_worst, lp_worst;
} compare;

static void compare_words(const encdec_segment *g, const cJSON *want, compare *c) {
    int nw = cJSON_GetArraySize(want);
    CHECK_EQ_INT(g->n_words, nw);
    for (int k = 0; k < g->n_words && k < nw; k++) {
        const cJSON *w = cJSON_GetArrayItem(want, k);
        c->word_bad += strcmp(g->words[k].word, cJSON_GetObjectItem(w, "word")->valuestring) != 0;
        double ds = fabs(g->words[k].start - cJSON_GetObjectItem(w, "start")->valuedouble);
        double de = fabs(g->words[k].end - cJSON_GetObjectItem(w, "end")->valuedouble);
        c->w_sum += ds + de;
        c->w_worst = fmax(c->w_worst, fmax(ds, de));
        c->words++;
        double dp = fabs(g->words[k].probability - cJSON_GetObjectItem(w, "probability")->valuedouble);
        c->lp_worst = fmax(c->lp_worst, dp);
    }
}

static void compare_result(const encdec_result *r, const cJSON *cs, const char *label) {
    const cJSON *want = cJSON_GetObjectItem(cs, "segments");
    int n = encdec_result_n_segments(r), nw = cJSON_GetArraySize(want);
    compare c = {0};
    CHECK_EQ_INT(n, nw);
    for (int i = 0; i < n && i < nw; i++) {
        const encdec_segment *g = encdec_result_segment(r, i);
        const cJSON *w = cJSON_GetArrayItem(want, i), *toks = cJSON_GetObjectItem(w, "tokens");
        int bad = g->n_tokens != cJSON_GetArraySize(toks);
        for (int k = 0; !bad && k < g->n_tokens; k++)
            bad = g->tokens[k].id != cJSON_GetArrayItem(toks, k)->valueint;
        if (bad) fprintf(stderr, "%s: segment %d tokens differ: \"%s\" vs \"%s\"\n", label, i, g->text,
                         cJSON_GetObjectItem(w, "text")->valuestring);
        c.tok_bad += bad;
        c.text_bad += strcmp(g->text, cJSON_GetObjectItem(w, "text")->valuestring) != 0;
        CHECK_EQ_INT(g->seek, cJSON_GetObjectItem(w, "seek")->valueint);
        c.t_worst = fmax(c.t_worst, fabs(g->start - cJSON_GetObjectItem(w, "start")->valuedouble));
        c.t_worst = fmax(c.t_worst, fabs(g->end - cJSON_GetObjectItem(w, "end")->valuedouble));
        c.lp_worst = fmax(c.lp_worst, fabs(g->avg_logprob - cJSON_GetObjectItem(w, "avg_logprob")->valuedouble));
        c.lp_worst = fmax(c.lp_worst, fabs(g->compression_ratio -
                                           cJSON_GetObjectItem(w, "compression_ratio")->valuedouble));
        c.lp_worst = fmax(c.lp_worst, fabs(g->no_speech_prob - cJSON_GetObjectItem(w, "no_speech_prob")->valuedouble));
        const cJSON *words = cJSON_GetObjectItem(w, "words");
        if (words) compare_words(g, words, &c);
        else CHECK_EQ_INT(g->n_words, 0);
    }
    CHECK_STR(encdec_result_text(r), cJSON_GetObjectItem(cs, "text")->valuestring);
    CHECK_STR(encdec_result_language(r), cJSON_GetObjectItem(cs, "language")->valuestring);
    double w_mean = c.words ? c.w_sum / (2.0 * c.words) : 0;
    printf("  %-24s %2d segments, %3d words: token mismatches %d, text %d, times |diff| %.3g s, "
           "words: mean |diff| %.3g s (worst %.3g), text %d; scores |diff| %.2g\n", label, n, c.words,
           c.tok_bad, c.text_bad, c.t_worst, w_mean, c.w_worst, c.word_bad, c.lp_worst);
    CHECK_EQ_INT(c.tok_bad, 0);
    CHECK_EQ_INT(c.text_bad, 0);
    CHECK(c.t_worst <= TIME_TOL);
    CHECK(w_mean <= WORD_TOL);
    CHECK_EQ_INT(c.word_bad, 0);
    CHECK(c.lp_worst <= PROB_TOL);
}

typedef struct {
    int n, stop_after;
    double last_end;
    int order_bad;
} cb_state;

static int count_segments(const encdec_segment *g, void *user) {
    cb_state *s = user;
    s->order_bad += g->id != s->n || g->start < s->last_end - 1.0 || !g->text || !g->tokens;
    s->last_end = g->end;
    s->n++;
    return s->stop_after > 0 && s->n >= s->stop_after;
}

static void golden_cases(const cJSON *js, int quick) {
    const cJSON *recs = cJSON_GetObjectItem(js, "recordings"), *cs;
    cJSON_ArrayForEach(cs, cJSON_GetObjectItem(js, "cases")) {
        const char *rec_name = cJSON_GetObjectItem(cs, "recording")->valuestring;
        const char *case_name = cJSON_GetObjectItem(cs, "case")->valuestring;
        if (quick && strcmp(rec_name, "talk") != 0) continue;
        const cJSON *rec = NULL, *r;
        cJSON_ArrayForEach(r, recs) if (!strcmp(cJSON_GetObjectItem(r, "name")->valuestring, rec_name)) rec = r;
        float *pcm;
        size_t n;
        CHECK(rec && rec_build(rec, &pcm, &n));
        if (!rec || !pcm) continue;
        double clips[64];
        encdec_transcribe_params p = params_of(cJSON_GetObjectItem(cs, "options"), clips);
        cb_state cb = {0, 0, 0, 0};
        p.on_segment = count_segments;
        p.user = &cb;
        encdec_result *res = NULL;
        CHECK_EQ_INT(encdec_transcribe(g_sess, pcm, n, &p, &res), ENCDEC_OK);
        char label[128];
        snprintf(label, sizeof label, "%s/%s", rec_name, case_name);
        if (res) {
            compare_result(res, cs, label);
            CHECK_EQ_INT(cb.n, encdec_result_n_segments(res));   /* every segment streamed */
            CHECK_EQ_INT(cb.order_bad, 0);
        }
        /* the loop detector never fires on speech: the same result without it */
        if (res && !strcmp(case_name, "default")) {
            encdec_result *off = NULL;
            p.loop_detection = 0;
            p.on_segment = NULL;
            CHECK_EQ_INT(encdec_transcribe(g_sess, pcm, n, &p, &off), ENCDEC_OK);
            if (off) {
                CHECK_STR(encdec_result_text(off), encdec_result_text(res));
                CHECK_EQ_INT(encdec_result_n_tokens(off), encdec_result_n_tokens(res));
                CHECK_EQ_INT(encdec_result_timings(res)->n_loops, 0);
            }
            encdec_result_free(off);
            /* a callback that stops after two segments stops the transcription */
            cb = (cb_state){0, 2, 0, 0};
            p.on_segment = count_segments;
            encdec_result *stopped = NULL;
            CHECK_STATUS(encdec_transcribe(g_sess, pcm, n, &p, &stopped), ENCDEC_ERR_CANCELLED,
                         "stopped by the caller");
            CHECK(stopped == NULL);
            CHECK_EQ_INT(cb.n, 2);
        }
        encdec_result_free(res);
        free(pcm);
    }
}

/* jfk.wav with timestamps and word times in the three cache modes: the
 * same tokens and the same word times. */
static void cache_modes(void) {
    float *pcm;
    size_t n;
    CHECK_EQ_INT(encdec_audio_load(ED_SHARED_DIR "/audio/jfk.wav", 0, &pcm, &n), ENCDEC_OK);
    encdec_result *ref = NULL;
    for (int mode = ENCDEC_KV_FULL; mode <= ENCDEC_KV_NONE; mode++) {
        encdec_transcribe_params p = encdec_transcribe_default_params();
        p.word_timestamps = 1;
        p.kv_mode = (encdec_kv_mode)mode;
        encdec_result *r = NULL;
        CHECK_EQ_INT(encdec_transcribe(g_sess, pcm, n, &p, &r), ENCDEC_OK);
        if (!r) continue;
        if (!ref) {
            ref = r;
            CHECK(encdec_result_n_segments(r) >= 1);
            continue;
        }
        int bad = encdec_result_n_tokens(r) != encdec_result_n_tokens(ref) ||
                  encdec_result_n_segments(r) != encdec_result_n_segments(ref);
        for (int i = 0; !bad && i < encdec_result_n_tokens(r); i++)
            bad = encdec_result_token(r, i)->id != encdec_result_token(ref, i)->id;
        for (int s = 0; !bad && s < encdec_result_n_segments(r); s++) {
            const encdec_segment *a = encdec_result_segment(r, s), *b = encdec_result_segment(ref, s);
            bad = a->n_words != b->n_words || a->start != b->start || a->end != b->end;
            for (int k = 0; !bad && k < a->n_words; k++)
                bad = a->words[k].start != b->words[k].start || a->words[k].end != b->words[k].end ||
                      strcmp(a->words[k].word, b->words[k].word) != 0;
        }
        printf("  cache mode %s: %s\n", mode == ENCDEC_KV_SELF ? "self" : "none",
               bad ? "DIFFERS" : "same tokens, segments and word times as full");
        CHECK_EQ_INT(bad, 0);
        encdec_result_free(r);
    }
    encdec_result_free(ref);
    encdec_free(pcm);
}

/* The first recording played backwards: speech-like sound the model cannot
 * read, so windows fail (low log-probability, loops) and are decoded again
 * at higher temperatures. Each window is encoded once however many decodes
 * it takes: the re-decodes reuse its encoder output, cross cache and prompt. */
static void fallback(const cJSON *js) {
    float *pcm;
    size_t n;
    if (!rec_build(cJSON_GetArrayItem(cJSON_GetObjectItem(js, "recordings"), 0), &pcm, &n)) {
        CHECK(0);
        return;
    }
    for (size_t i = 0; i < n / 2; i++) {
        float t = pcm[i];
        pcm[i] = pcm[n - 1 - i];
        pcm[n - 1 - i] = t;
    }
    encdec_transcribe_params p = encdec_transcribe_default_params();
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_transcribe(g_sess, pcm, n, &p, &r), ENCDEC_OK);
    for (int keep_last = 0; keep_last < 2; keep_last++) {
        p.fallback_keep_last = keep_last;
        if (keep_last) {
            encdec_result_free(r);
            r = NULL;
            CHECK_EQ_INT(encdec_transcribe(g_sess, pcm, n, &p, &r), ENCDEC_OK);
        }
        if (!r) break;
        const encdec_timings *t = encdec_result_timings(r);
        int hot = 0, failed = 0, last = 0;
        for (int i = 0; i < encdec_result_n_segments(r); i++) {
            const encdec_segment *g = encdec_result_segment(r, i);
            hot += g->temperature > 0;
            failed += g->all_failed;
            last += g->all_failed && g->temperature == 1.0f;
        }
        printf("  reversed speech, %s: %d windows, %d encoder passes, %d decodes (%d windows fell "
               "back, %d decodes stopped looping); %d of %d segments from a temperature above 0, "
               "%d where every temperature failed\n", keep_last ? "the last attempt kept" : "the best attempt kept",
               t->n_windows, t->n_encodes, t->n_decodes, t->n_fallbacks, t->n_loops, hot,
               encdec_result_n_segments(r), failed);
        CHECK_EQ_INT(t->n_encodes, t->n_windows);   /* once per window */
        CHECK(t->n_fallbacks >= 1);
        CHECK(t->n_decodes > t->n_windows + 1);
        CHECK(failed >= 1);
        /* openai-whisper's rule keeps the last attempt (1.0); faster-whisper's
         * the best one, here one below 1.0 */
        CHECK(keep_last ? last == failed && hot >= 1 : last < failed);
    }
    encdec_result_free(r);
    p.fallback_keep_last = 0;
    /* without fallback: one decode per window */
    p.temperature_increment = 0;
    r = NULL;
    CHECK_EQ_INT(encdec_transcribe(g_sess, pcm, n, &p, &r), ENCDEC_OK);
    if (r) CHECK_EQ_INT(encdec_result_timings(r)->n_decodes, encdec_result_timings(r)->n_windows);
    encdec_result_free(r);
    free(pcm);
}

/* whole_windows: spans of the talk (the first recording: speech with
 * short pauses) as a live session's buffer holds them, with word times.
 * Where a decode ends inside a segment, openai-whisper's rule decodes the
 * audio after the last word again in a second window; with whole windows
 * the one window is all, its unfinished last segment kept to the span's
 * end. */
static void whole_windows(const cJSON *js, int quick) {
    float *pcm;
    size_t n;
    if (!rec_build(cJSON_GetArrayItem(cJSON_GetObjectItem(js, "recordings"), 0), &pcm, &n)) {
        CHECK(0);
        return;
    }
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.word_timestamps = 1;
    p.temperature_increment = 0;
    /* (start, seconds): spans where tiny.en's decode ended inside a segment
     * on 2026-11-29, and one where it did not */
    static const double spans[][2] = {{18, 5.3}, {6, 9.1}, {33, 7.7}, {3, 11.5}, {0, 5.3}};
    int n_spans = quick ? 2 : (int)(sizeof spans / sizeof spans[0]), twice = 0;
    for (int k = 0; k < n_spans; k++) {
        size_t a = (size_t)(spans[k][0] * 16000), len = (size_t)(spans[k][1] * 16000);
        if (a + len > n) continue;
        int windows[2] = {0, 0}, segs[2] = {0, 0};
        char first[2][2048] = {"", ""};   /* the text of the first window's segments */
        for (int whole = 0; whole < 2; whole++) {
            p.whole_windows = whole;
            encdec_result *r = NULL;
            CHECK_EQ_INT(encdec_transcribe(g_sess, pcm + a, len, &p, &r), ENCDEC_OK);
            if (!r) continue;
            windows[whole] = encdec_result_timings(r)->n_windows;
            for (int i = 0; i < encdec_result_n_segments(r); i++) {
                const encdec_segment *g = encdec_result_segment(r, i);
                if (g->seek != 0) continue;
                segs[whole]++;
                size_t u = strlen(first[whole]);
                snprintf(first[whole] + u, sizeof first[whole] - u, "%s", g->text);
            }
            encdec_result_free(r);
        }
        printf("  talk %g s + %g s: %d windows by openai-whisper's rule, %d whole: %s\n",
               spans[k][0], spans[k][1], windows[0], windows[1], first[1]);
        twice += windows[0] >= 2;
        CHECK_EQ_INT(windows[1], 1);
        /* the first window's complete segments as openai-whisper's rule has
         * them, then at most the unfinished one */
        CHECK(!strncmp(first[1], first[0], strlen(first[0])));
        CHECK(segs[1] == segs[0] || segs[1] == segs[0] + 1);
    }
    CHECK(twice >= 1);   /* the case is met: the checks above can fail */
    free(pcm);
}

/* tiny.en's directory without the alignment heads in its config.json: the
 * loader falls back to OpenAI's heads for tiny.en's shape, which must be the
 * ones the CTranslate2 converter wrote. */
static void default_heads(const char *tiny) {
    if (!tmp_new("encdec-heads")) return;
    char src[1200], dst[1200];
    const char *files[] = {"model.bin", "tokenizer.json", "vocabulary.txt", "vocabulary.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(src, sizeof src, "%s/%s", tiny, files[i]);
        if (access(src, R_OK) == 0) CHECK_EQ_INT(symlink(src, tmp_path(files[i])), 0);
    }
    cJSON *cfg = NULL;
    snprintf(src, sizeof src, "%s/config.json", tiny);
    CHECK_EQ_INT(ed_json_load(src, &cfg), ENCDEC_OK);
    if (!cfg) return;
    cJSON_DeleteItemFromObject(cfg, "alignment_heads");
    char *txt = cJSON_Print(cfg);
    snprintf(dst, sizeof dst, "%s", tmp_path("config.json"));
    tmp_write(dst, txt, strlen(txt));
    free(txt);
    cJSON_Delete(cfg);
    whisper_model *a = NULL, *b = NULL;
    CHECK_EQ_INT(whisper_load(&a, tiny), ENCDEC_OK);
    CHECK_EQ_INT(whisper_load(&b, tmp_dir), ENCDEC_OK);
    if (a && b) {
        CHECK_EQ_INT(a->n_align_heads, 8);
        CHECK_EQ_INT(b->n_align_heads, a->n_align_heads);
        int same = a->n_align_heads == b->n_align_heads;
        for (int i = 0; same && i < 2 * a->n_align_heads; i++) same = a->align_heads[i] == b->align_heads[i];
        CHECK(same);
    }
    whisper_free(a);
    whisper_free(b);
    tmp_remove(tmp_dir);
}

/* The base model's detection against openai-whisper's detect_language. */
static void languages(const cJSON *js) {
    char base[1024];
    if (!golden_find_model(base, sizeof base, "ENCDEC_BASE", "whisper-base")) {
        printf("SKIP (partly): whisper base not installed: language detection\n");
        return;
    }
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_model_load(base, &m), ENCDEC_OK);
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(js, "languages")) {
        const char *audio = cJSON_GetObjectItem(l, "audio")->valuestring;
        char path[1024];
        if (!strncmp(audio, "../shared/", 10)) snprintf(path, sizeof path, "%s/%s", ED_SHARED_DIR, audio + 10);
        else snprintf(path, sizeof path, "%s/../../%s", ED_TEST_DATA, audio);   /* repository-relative */
        float *pcm = NULL;
        size_t n = 0;
        CHECK_EQ_INT(encdec_audio_load(path, 0, &pcm, &n), ENCDEC_OK);
        encdec_transcribe_params p = encdec_transcribe_default_params();
        p.max_tokens = 4;   /* the detection is what is checked */
        encdec_result *r = NULL;
        if (s && pcm) CHECK_EQ_INT(encdec_transcribe(s, pcm, n, &p, &r), ENCDEC_OK);
        if (r) {
            const cJSON *probs = cJSON_GetObjectItem(l, "probs");
            int nl = encdec_result_n_language_probs(r);
            CHECK_EQ_INT(nl, cJSON_GetArraySize(probs));
            double worst = 0;
            const char *best = NULL, *code;
            float pr, best_p = -1;
            for (int i = 0; i < nl; i++) {
                encdec_result_language_prob(r, i, &code, &pr);
                const cJSON *w = cJSON_GetObjectItem(probs, code);
                CHECK(w != NULL);
                if (w) worst = fmax(worst, fabs(pr - w->valuedouble));
                if (w && w->valuedouble > best_p) best_p = (float)w->valuedouble, best = code;
            }
            encdec_result_language_prob(r, 0, &code, &pr);
            printf("  language of %s: %s %.4f; max |p - openai-whisper| over %d languages %.2g\n", audio,
                   code, pr, nl, worst);
            CHECK(worst <= PROB_TOL);
            CHECK_STR(encdec_result_language(r), best);
        }
        encdec_result_free(r);
        encdec_free(pcm);
    }
    encdec_session_free(s);
    encdec_model_free(m);
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
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_model_load(tiny, &g_tiny), ENCDEC_OK);
    if (g_tiny) CHECK_EQ_INT(encdec_session_new(g_tiny, &sp, &g_sess), ENCDEC_OK);
    if (g_sess) {
        int quick = 0;   /* the sanitizers' pass: one recording, no fallback run */
#ifdef ED_SANITIZED
        quick = 1;
#endif
        CHECK_PART(golden_cases(js, quick));
        if (!quick) fallback(js);
        CHECK_PART(cache_modes());
        CHECK_PART(whole_windows(js, quick));
    }
    CHECK_PART(languages(js));
    CHECK_PART(default_heads(tiny));
    encdec_session_free(g_sess);
    encdec_model_free(g_tiny);
    cJSON_Delete(js);
    return check_done();
}
