/* transcribe.c - a transcription's core (api_transcribe_feed*): the public
 * parameters checked and turned into the long-form loop's (asr/asr.h), and
 * its segments into an encdec_result, each handed to the caller's callback
 * as soon as it is final. The callers: a session's encdec_transcribe
 * (transcribe_session.c), the speech alone (transcribe_speech.c), the
 * engine's requests, the batched pipeline. */
#include "api/api.h"
#include "audio/audio.h"
#include "asr/asr_internal.h"
#include "base/err.h"
#include "base/mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BEST_OF 16

encdec_transcribe_params encdec_transcribe_default_params(void) {
    encdec_transcribe_params p;
    memset(&p, 0, sizeof p);
    p.kv_mode = ENCDEC_KV_FULL;
    p.beam_size = 1;
    p.timestamps = 1;
    p.patience = 1.0f;
    p.best_of = 5;
    p.temperature = 0.0f;
    p.temperature_increment = 0.2f;
    p.compression_ratio_threshold = 2.4f;
    p.logprob_threshold = -1.0f;
    p.no_speech_threshold = 0.6f;
    p.condition_on_previous_text = 1;
    p.loop_detection = 1;
    p.silence_threshold_db = -60.0f;
    p.vad_params = encdec_vad_default_params();
    p.repetition_penalty = 1.0f;
    p.hallucination_silence_threshold = NAN;
    p.language_detection_segments = 1;
    p.language_detection_threshold = 0.5f;
    return p;
}

/* The model's language codes, for messages: "en, zh, de, ...". */
static void lang_list(const whisper_model *w, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < w->sp.n_langs && n + 8 < cap; i++) {
        const char *c = wlang_code(i);
        if (c) n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", c);
    }
}

/* The language token for p->language (NULL: -1, detect / English-only). */
static encdec_status language_token(const whisper_model *w, const char *lang, int *tok) {
    *tok = -1;
    if (!lang) return ENCDEC_OK;
    int i = strlen(lang) < 32 ? wlang_find(lang) : -1;
    if (!w->multilingual) {
        if (i != 0)
            return ed_fail(ENCDEC_ERR_ARG, "this model is English-only; language \"%.32s\" is not "
                           "available (use en, or a multilingual model)", lang);
        return ENCDEC_OK;
    }
    if (i < 0 || i >= w->sp.n_langs) {
        char codes[1024];
        lang_list(w, codes, sizeof codes);
        return ed_fail(ENCDEC_ERR_ARG, "unknown language \"%.32s\"; this model knows: %s", lang, codes);
    }
    *tok = w->sp.lang_first + i;
    return ENCDEC_OK;
}

static int bad_float(float x, float lo, float hi) { return !(x >= lo && x <= hi); }

/* The options after the hotwords: NaN and infinities named, ranges given. */
static encdec_status check_more(const encdec_transcribe_params *p) {
    if (bad_float(p->repetition_penalty, 1e-3f, 1e3f))
        return ed_fail(ENCDEC_ERR_ARG, "repetition_penalty %g is out of range 0.001..1000 (1: off)",
                       p->repetition_penalty);
    if (p->no_repeat_ngram_size < 0 || p->no_repeat_ngram_size > 448)
        return ed_fail(ENCDEC_ERR_ARG, "no_repeat_ngram_size %d is out of range 0..448 (0: off)",
                       p->no_repeat_ngram_size);
    if (!isnan(p->hallucination_silence_threshold) &&
        bad_float(p->hallucination_silence_threshold, 0.0f, 1e6f))
        return ed_fail(ENCDEC_ERR_ARG, "hallucination_silence_threshold %g: seconds >= 0, or NAN "
                       "for off", p->hallucination_silence_threshold);
    if (p->chunk_length != 0 && bad_float(p->chunk_length, 1.0f, 30.0f))
        return ed_fail(ENCDEC_ERR_ARG, "chunk_length %g is out of range 1..30 seconds (0: 30)",
                       p->chunk_length);
    if (p->language_detection_segments < 1 || p->language_detection_segments > 100000)
        return ed_fail(ENCDEC_ERR_ARG, "language_detection_segments %d is out of range 1..100000",
                       p->language_detection_segments);
    if (bad_float(p->language_detection_threshold, 0.0f, 1.0f))
        return ed_fail(ENCDEC_ERR_ARG, "language_detection_threshold %g is out of range 0..1",
                       p->language_detection_threshold);
    if (p->n_initial_prompt_tokens < 0 || p->n_initial_prompt_tokens > (1 << 20) ||
        (p->n_initial_prompt_tokens > 0 && !p->initial_prompt_tokens))
        return ed_fail(ENCDEC_ERR_ARG, "initial_prompt_tokens: %d ids (0..%d, not NULL)",
                       p->n_initial_prompt_tokens, 1 << 20);
    if (p->n_initial_prompt_tokens > 0 && p->initial_prompt)
        return ed_fail(ENCDEC_ERR_ARG, "initial_prompt and initial_prompt_tokens both given: one "
                       "or the other");
    if (bad_float(p->min_text_rate, 0.0f, 100.0f))
        return ed_fail(ENCDEC_ERR_ARG, "min_text_rate %g is out of range 0..100 text tokens a "
                       "second (0: off)", p->min_text_rate);
    if (p->vad) return api_vad_check(&p->vad_params);
    return ENCDEC_OK;
}

encdec_status api_transcribe_check(const encdec_model *model, const encdec_transcribe_params *p) {
    const whisper_model *w = model->w;
    int ctx = w->hp.n_text_ctx, lang;
    encdec_status st = language_token(w, p->language, &lang);
    if (st) return st;
    if (p->kv_mode != ENCDEC_KV_FULL && p->kv_mode != ENCDEC_KV_SELF && p->kv_mode != ENCDEC_KV_NONE)
        return ed_fail(ENCDEC_ERR_ARG, "unknown cache mode %d", (int)p->kv_mode);
    if (p->max_tokens < 0 || p->max_tokens > ctx)
        return ed_fail(ENCDEC_ERR_ARG, "max_tokens %d is out of range 0..%d", p->max_tokens, ctx);
    if (p->beam_size < 0 || p->beam_size > API_MAX_BEAMS)
        return ed_fail(ENCDEC_ERR_ARG, "beam_size %d is out of range 0..%d", p->beam_size, API_MAX_BEAMS);
    if (p->best_of < 0 || p->best_of > MAX_BEST_OF)
        return ed_fail(ENCDEC_ERR_ARG, "best_of %d is out of range 0..%d", p->best_of, MAX_BEST_OF);
    if (bad_float(p->patience, 1e-3f, 64.0f) || nearbyint((double)p->patience * (p->beam_size > 1 ? p->beam_size : 1)) < 1)
        return ed_fail(ENCDEC_ERR_ARG, "patience %g is out of range (0, 64] (and beam_size x "
                       "patience must round to at least 1)", p->patience);
    if (bad_float(p->temperature, 0.0f, 1.0f))
        return ed_fail(ENCDEC_ERR_ARG, "temperature %g is out of range 0..1", p->temperature);
    if (bad_float(p->temperature_increment, 0.0f, 1.0f))
        return ed_fail(ENCDEC_ERR_ARG, "temperature_increment %g is out of range 0..1 (0: no fallback)",
                       p->temperature_increment);
    if (p->temperature_increment > 0 &&
        (1.0 - p->temperature) / p->temperature_increment + 1 > ASR_MAX_TEMPS)
        return ed_fail(ENCDEC_ERR_ARG, "temperature_increment %g gives more than %d temperatures "
                       "from %g to 1", p->temperature_increment, ASR_MAX_TEMPS, p->temperature);
    struct { const char *name; float v; } th[] = {
        {"compression_ratio_threshold", p->compression_ratio_threshold},
        {"logprob_threshold", p->logprob_threshold},
        {"no_speech_threshold", p->no_speech_threshold},
        {"silence_threshold_db", p->silence_threshold_db}};
    for (size_t i = 0; i < sizeof th / sizeof th[0]; i++)
        if (isinf(th[i].v))
            return ed_fail(ENCDEC_ERR_ARG, "%s must be a finite number, or NAN for off", th[i].name);
    if (p->translate && !w->multilingual)
        return ed_fail(ENCDEC_ERR_ARG, "this model is English-only; it cannot translate");
    if (p->n_clip_timestamps < 0 || p->n_clip_timestamps > 2 * ASR_MAX_CLIPS ||
        (p->n_clip_timestamps > 0 && !p->clip_timestamps))
        return ed_fail(ENCDEC_ERR_ARG, "clip_timestamps: %d values (0..%d)", p->n_clip_timestamps,
                       2 * ASR_MAX_CLIPS);
    return check_more(p);
}

/* " " + text stripped, encoded (openai-whisper's prompt and prefix). */
static encdec_status encode_text(const whisper_model *w, const char *what, const char *text,
                                 int max, int **ids, int *n) {
    *ids = NULL;
    *n = 0;
    if (!text) return ENCDEC_OK;
    size_t len = strlen(text);
    const char *t = asr_strip(text, &len);
    char *s = malloc(len + 2);
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", what);
    s[0] = ' ';
    memcpy(s + 1, t, len);
    s[len + 1] = 0;
    int cnt = 0;
    encdec_status st = bpe_encode(w->tok, s, NULL, 0, &cnt);
    if (st) {
        free(s);
        return ed_fail(ENCDEC_ERR_ARG, "%s: %s", what, encdec_last_error());
    }
    if (cnt > max) {
        free(s);
        return ed_fail(ENCDEC_ERR_ARG, "%s is %d tokens; at most %d fit", what, cnt, max);
    }
    *ids = malloc(sizeof(int) * (size_t)(cnt > 0 ? cnt : 1));
    if (!*ids) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", what);
    if (!st) st = bpe_encode(w->tok, s, *ids, cnt, n);
    free(s);
    return st;
}

/* The clips in seconds, checked against the audio's length. */
static encdec_status clips(const encdec_transcribe_params *p, double dur, asr_params *a) {
    int n = p->n_clip_timestamps;
    for (int i = 0; i < n; i++) {
        double v = p->clip_timestamps[i];
        if (!isfinite(v) || v < 0)
            return ed_fail(ENCDEC_ERR_ARG, "clip_timestamps[%d] = %g: times are seconds >= 0", i, v);
        if (i > 0 && !(v > p->clip_timestamps[i - 1]))
            return ed_fail(ENCDEC_ERR_ARG, "clip_timestamps must increase: %g after %g", v,
                           p->clip_timestamps[i - 1]);
        if (i % 2 == 0 && v >= dur)
            return ed_fail(ENCDEC_ERR_ARG, "clip_timestamps: a clip starts at %g s, past the end "
                           "of the audio (%.3f s)", v, dur);
    }
    a->n_clips = (n + 1) / 2;
    for (int i = 0; i < a->n_clips; i++) {
        a->clips[2 * i] = p->clip_timestamps[2 * i];
        a->clips[2 * i + 1] = 2 * i + 1 < n ? p->clip_timestamps[2 * i + 1] : -1;
    }
    return ENCDEC_OK;
}

typedef struct {
    encdec_result *r;
    const whisper_model *w;
    const encdec_transcribe_params *p;
    const asr_speech_map *speech;   /* with a VAD: joined speech -> the recording's time */
    int window, last_seek;
    api_view view;            /* the callback's copy of a segment's tokens and words */
} sink_ctx;

/* A segment into the result, then to the caller. */
static encdec_status on_segment(void *user, const asr_segment *g) {
    sink_ctx *c = user;
    encdec_result *r = c->r;
    if (g->seek != c->last_seek) c->window++, c->last_seek = g->seek;
    size_t first_tok = r->n_tokens, first_word = r->n_words, text_off;
    encdec_status st = ENCDEC_OK;
    for (int i = 0; i < g->n_tokens && !st; i++) {
        size_t len = 0;
        const char *b = bpe_token_bytes(c->w->tok, g->tokens[i], &len);
        st = api_result_add_token(r, g->tokens[i], g->logprobs[i], b, b ? len : 0, c->window - 1);
    }
    double start = g->start, end = g->end;
    if (c->speech && g->n_words == 0) {   /* faster-whisper's restore_speech_timestamps */
        start = asr_speech_time(c->speech, g->start, -1, 0);
        end = asr_speech_time(c->speech, g->end, -1, 1);
    }
    for (int i = 0; i < g->n_words && !st; i++) {
        size_t off;
        double ws = g->words[i].start, we = g->words[i].end;
        if (c->speech) {   /* both ends in the span of the word's middle */
            int k = asr_speech_chunk(c->speech, (ws + we) / 2, 0);
            ws = asr_speech_time(c->speech, ws, k, 0);
            we = asr_speech_time(c->speech, we, k, 0);
            if (i == 0) start = ws;
            if (i == g->n_words - 1) end = we;
        }
        st = api_result_add_str(r, g->words[i].text, strlen(g->words[i].text), &off);
        if (!st) st = api_result_add_word(r, off, ws, we, g->words[i].probability);
    }
    if (!st) st = api_result_add_str(r, g->text, strlen(g->text), &text_off);
    encdec_segment seg = {(int)r->n_segs, g->seek, start, end, NULL, g->n_tokens, NULL,
                          g->temperature, g->avg_logprob, g->compression_ratio, g->no_speech_prob,
                          g->n_words, NULL, g->all_failed};
    if (!st) st = api_result_add_segment(r, &seg, text_off, first_tok, first_word);
    if (st || !c->p->on_segment) return st;
    if ((st = api_result_view(r, r->n_segs - 1, &c->view, &seg))) return st;
    if (c->p->on_segment(&seg, c->p->user))
        return ed_fail(ENCDEC_ERR_CANCELLED, "transcription stopped by the caller");
    return ENCDEC_OK;
}

static void on_progress(void *user, double done, double total) {
    const sink_ctx *c = user;
    if (c->p->on_progress) c->p->on_progress(done, total, c->p->user);
}

/* The language, once known: its code and probability (1 when it was
 * given; English-only models: "en", 1). */
static void on_language(void *user, int token, float prob, const float *probs, int n_langs) {
    const sink_ctx *c = user;
    (void)probs;
    (void)n_langs;
    if (!c->p->on_language) return;
    int i = token >= 0 ? token - c->w->sp.lang_first : 0;
    const char *code = wlang_code(i);
    c->p->on_language(code ? code : "en", prob, c->p->user);
}

/* The whole transcript as sequence 0: every segment's text tokens decoded together. */
encdec_status api_result_whisper_text(encdec_result *r, const whisper_model *w) {
    int *ids = malloc(sizeof *ids * (r->n_tokens + 1));
    if (!ids) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result text");
    float sum = 0;
    int n = 0;
    for (size_t i = 0; i < r->n_tokens; i++) {
        if (r->tokens[i].id < w->sp.eot) ids[n++] = r->tokens[i].id;
        sum += r->tokens[i].logprob;
    }
    char *text = bpe_decode(w->tok, ids, n, 1);
    free(ids);
    if (!text) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result text");
    return api_result_add_sequence(r, 0, 0, sum, 0, (int)r->n_tokens, text);
}

static void report(encdec_result *r, const whisper_model *w, const asr_report *rep, size_t n) {
    encdec_timings *t = &r->timings;
    t->mel_ms = rep->mel_ms;
    t->encoder_ms = rep->encoder_ms;
    t->decode_ms = rep->decode_ms;
    t->align_ms = rep->align_ms;
    t->n_windows = rep->n_windows;
    t->n_tokens = rep->n_tokens;
    t->n_steps = rep->n_steps;
    t->n_encodes = rep->n_encodes;
    t->n_decodes = rep->n_decodes;
    t->n_fallbacks = rep->n_fallbacks;
    t->n_loops = rep->n_loops;
    t->audio_seconds = n / (double)MEL_SAMPLE_RATE;
    r->language = rep->language >= 0 ? wlang_code(rep->language - w->sp.lang_first) : "en";
    r->language_prob = rep->detected ? rep->lang_prob : 1.0f;
    if (!rep->detected) return;
    int L = rep->n_langs;   /* most likely first */
    for (int i = 0; i < L; i++) {
        int k = r->n_lang++;
        while (k > 0 && r->lang_prob[k - 1] < rep->lang_probs[i]) {
            r->lang_prob[k] = r->lang_prob[k - 1];
            r->lang_code[k] = r->lang_code[k - 1];
            k--;
        }
        r->lang_prob[k] = rep->lang_probs[i];
        r->lang_code[k] = wlang_code(i);
    }
}

/* The caller's prompt ids, checked against the vocabulary, copied. */
static encdec_status prompt_ids(const whisper_model *w, const encdec_transcribe_params *p,
                                int **ids, int *n) {
    for (int i = 0; i < p->n_initial_prompt_tokens; i++)
        if (p->initial_prompt_tokens[i] < 0 || p->initial_prompt_tokens[i] >= w->hp.n_vocab)
            return ed_fail(ENCDEC_ERR_ARG, "initial_prompt_tokens[%d] = %d is not a token id "
                           "(0..%d)", i, p->initial_prompt_tokens[i], w->hp.n_vocab - 1);
    *ids = malloc(sizeof(int) * (size_t)p->n_initial_prompt_tokens);
    if (!*ids) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: initial_prompt_tokens");
    memcpy(*ids, p->initial_prompt_tokens, sizeof(int) * (size_t)p->n_initial_prompt_tokens);
    *n = p->n_initial_prompt_tokens;
    return ENCDEC_OK;
}

/* params -> the loop's, with the texts encoded into ids[3] (initial prompt,
 * prefix, hotwords: freed by the caller). */
static encdec_status to_asr(const encdec_model *model, const encdec_transcribe_params *p, size_t n,
                            asr_params *a, int *ids[3]) {
    const whisper_model *w = model->w;
    asr_params_default(a);
    a->kv_mode = p->kv_mode;
    encdec_status st = language_token(w, p->language, &a->language);
    if (st) return st;
    a->translate = p->translate;
    a->timestamps = p->timestamps != 0;
    a->max_tokens = p->max_tokens;
    a->beam_size = p->beam_size;
    a->patience = p->patience;
    a->best_of = p->best_of > 0 ? p->best_of : 1;
    a->n_temperatures = 0;   /* T, T + inc, T + 2 inc, ... up to 1 (numpy's arange) */
    for (int i = 0; i < ASR_MAX_TEMPS; i++) {
        double t = p->temperature + i * (double)p->temperature_increment;
        if (t > 1.0 + 1e-6 || (i > 0 && p->temperature_increment <= 0)) break;
        a->temperatures[a->n_temperatures++] = (float)t;
    }
    a->compression_ratio_threshold = p->compression_ratio_threshold;
    a->logprob_threshold = p->logprob_threshold;
    a->no_speech_threshold = p->no_speech_threshold;
    a->condition_on_previous_text = p->condition_on_previous_text;
    a->word_timestamps = p->word_timestamps;
    if (p->prepend_punctuations) a->prepend_punctuations = p->prepend_punctuations;
    if (p->append_punctuations) a->append_punctuations = p->append_punctuations;
    a->loop_detect = p->loop_detection;
    a->keep_last = p->fallback_keep_last != 0;
    a->silence_rms = isnan(p->silence_threshold_db) ? 0.0f : powf(10.0f, p->silence_threshold_db / 20.0f);
    a->seed = p->seed;
    a->repetition_penalty = p->repetition_penalty;
    a->no_repeat_ngram = p->no_repeat_ngram_size;
    a->hallucination_silence = p->hallucination_silence_threshold;
    a->window_frames = p->chunk_length > 0 ? (int)nearbyint(p->chunk_length * 100.0) : 3000;
    a->lang_segments = p->language_detection_segments;
    a->lang_threshold = p->language_detection_threshold;
    a->lang_per_window = p->multilingual != 0;
    a->detect_only = p->detect_language_only != 0;
    a->whole_windows = p->whole_windows != 0;
    a->min_text_rate = p->min_text_rate;
    st = clips(p, n / (double)MEL_SAMPLE_RATE, a);
    int half = w->hp.n_text_ctx / 2;
    if (!st) st = encode_text(w, "initial_prompt", p->initial_prompt, 1 << 20, &ids[0],
                              &a->n_initial_prompt);
    if (!st && p->n_initial_prompt_tokens > 0) st = prompt_ids(w, p, &ids[0], &a->n_initial_prompt);
    if (!st) st = encode_text(w, "prefix", p->prefix, half - 8, &ids[1], &a->n_prefix);
    if (!st && p->hotwords && *p->hotwords)   /* "" is none (faster-whisper: falsy) */
        st = encode_text(w, "hotwords", p->hotwords, 1 << 20, &ids[2], &a->n_hotwords);
    if (a->n_hotwords > half - 1) a->n_hotwords = half - 1;   /* faster-whisper cuts them there */
    a->initial_prompt = ids[0];
    a->prefix = ids[1];
    a->hotwords = ids[2];
    return st;
}

encdec_status api_transcribe_feed(const encdec_model *model, api_asr_prep prep, void *prep_ctx,
                                  asr_feed *feed, const encdec_transcribe_params *params,
                                  encdec_result **out) {
    return api_transcribe_feed_speech(model, prep, prep_ctx, feed, params, NULL, out);
}

encdec_status api_transcribe_feed_speech(const encdec_model *model, api_asr_prep prep,
                                         void *prep_ctx, asr_feed *feed,
                                         const encdec_transcribe_params *params,
                                         const api_speech *sp, encdec_result **out) {
    size_t n_samples = feed ? feed->n : 0;
    encdec_transcribe_params p = params ? *params : encdec_transcribe_default_params();
    const whisper_model *w = model->w;
    asr_params a;
    asr_env env = {w, NULL, NULL, NULL};
    int *ids[3] = {NULL, NULL, NULL};
    encdec_status st = api_transcribe_check(model, &p);
    if (!st) st = to_asr(model, &p, n_samples, &a, ids);
    if (!st && feed) st = prep(prep_ctx, asr_slots_needed(&a), a.kv_mode, &env);
    encdec_result *r = NULL;
    if (!st) {
        r = calloc(1, sizeof *r);
        if (!r) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result");
    }
    double *work = sp && sp->n ? malloc(sizeof(double) * 2 * (size_t)sp->n) : NULL;
    asr_speech_map map;
    if (!st && sp && sp->n && !work) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: speech map");
    if (!st && work) asr_speech_map_init(&map, sp->spans, sp->n, MEL_SAMPLE_RATE, work);
    sink_ctx c = {r, w, &p, work ? &map : NULL, 0, -1, {NULL, NULL, 0}};
    asr_report rep;
    memset(&rep, 0, sizeof rep);
    rep.language = a.language;
    if (!st && feed) {
        asr_sink sink = {on_segment, on_progress, &c, on_language};
        st = asr_transcribe_feed(&env, feed, &a, &sink, &rep);
    } else if (!st) {   /* no speech: nothing to detect the language on */
        on_language(&c, a.language, 1.0f, NULL, 0);
    }
    free(work);
    api_view_free(&c.view);
    for (int i = 0; i < 3; i++) free(ids[i]);
    if (!st) st = api_result_whisper_text(r, w);
    if (!st) {
        report(r, w, &rep, sp ? sp->n_samples : n_samples);
        if (sp) {
            r->timings.speech_seconds = n_samples / (double)MEL_SAMPLE_RATE;
            r->timings.vad_ms = sp->vad_ms;
        }
        api_result_finish(r);
        *out = r;
        return ENCDEC_OK;
    }
    encdec_result_free(r);
    return st;
}
