/* longform.c - the long-form loop over a whole recording (see asr.h).
 *
 * Per window: the log-mel frames from the current seek, the encoder, the
 * cross cache, the prompt, the decode with fallback (window.c), then the
 * segments (segments.c), word times (align.c) and the next seek. Windows
 * whose no-speech probability is high and log-probability low are skipped
 * whole. Timings and counts go to the report; segments to the sink.
 */
#include "asr/asr_internal.h"
#include "asr/feed.h"
#include "asr/window.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N_FRAMES MEL_CHUNK_FRAMES               /* 3000 mel frames: one window */
#define FRAMES_PER_SECOND (MEL_SAMPLE_RATE / MEL_HOP)   /* 100 */

/* A growing list of ints (the transcript's tokens, for prompts). */
typedef struct {
    int *v;
    size_t n, cap;
} ivec;

static encdec_status ivec_push(ivec *a, const int *x, size_t n) {
    if (n == 0) return ENCDEC_OK;
    if (a->n + n > a->cap) {
        size_t c = a->cap ? a->cap : 256;
        while (c < a->n + n) c *= 2;
        int *q = realloc(a->v, c * sizeof *q);
        if (!q) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: transcript tokens");
        a->v = q;
        a->cap = c;
    }
    memcpy(a->v + a->n, x, n * sizeof *x);
    a->n += n;
    return ENCDEC_OK;
}

typedef struct {
    const asr_env *env;
    const asr_params *p;      /* the caller's, or ts_p */
    asr_params ts_p;          /* the caller's with timestamps, after a short decode (min_text_rate) */
    const asr_sink *sink;
    asr_report *rep;
    asr_feed *feed;           /* the recording's samples, and its log-mel's maximum */
    size_t n;                 /* samples in it */
    int content;              /* mel frames of audio */
    int win;                  /* mel frames of audio per window (the rest padded) */
    float *mel;               /* [n_mels, N_FRAMES] the window */
    int encoded_seek, encoded_size;   /* the window the state's encoder output is for; -1: none */
    asr_work work;
    asr_aligner align;
    ivec all;                 /* tokens of the transcript (prompts are cut from it) */
    size_t prompt_from;       /* prompt_reset_since */
    size_t initial;           /* initial prompt tokens at the start of `all` */
    int sot_seq[4], n_sot_seq;
    asr_split *splits;        /* [n_text_ctx + 1] */
    asr_wseg *segs;           /* [n_text_ctx + 1] */
    int *head;                /* [n_text_ctx] prompt scratch */
    float *lang_logits;       /* [V] */
    double last_speech;       /* word timestamps: the end of the last word */
} lf_run;

/* The window's log-mel in r->mel: frames [seek, seek + computed) of the
 * recording's log-mel (one normalisation for the whole file, as
 * openai-whisper's), then zeros up to N_FRAMES (it pads the mel, not the
 * audio); computed is the window's size, or N_FRAMES for language
 * detection (the frames past the audio are the log-mel's own). Without
 * timestamps the window's own log-mel of its samples (the decode() view,
 * normalised over the window), as encdec always computed it. */
static encdec_status window_mel(lf_run *r, int seek, int computed) {
    int nm = r->env->m->hp.n_mels;
    const float *x;
    size_t x0, nx;
    encdec_status st;
    if (!r->p->timestamps) {
        size_t s0 = (size_t)seek * MEL_HOP, len = (size_t)computed * MEL_HOP;
        if (s0 + len > r->n) len = r->n - s0;
        if ((st = asr_feed_get(r->feed, s0, s0 + len, &x, &x0, &nx))) return st;
        return mel_compute(r->env->mel, x + (s0 - x0), len, r->mel, N_FRAMES);
    }
    size_t a = (size_t)seek * MEL_HOP, b = (size_t)(seek + computed) * MEL_HOP + MEL_N_FFT / 2;
    a = a > MEL_N_FFT / 2 ? a - MEL_N_FFT / 2 : 0;
    if ((st = asr_feed_get(r->feed, a, b, &x, &x0, &nx))) return st;
    mel_frames_log(r->env->mel, x, x0, nx, r->n, seek, computed, r->mel, N_FRAMES);
    mel_frames_finish(r->env->mel, r->mel, computed, N_FRAMES, r->feed->log_max);
    for (int k = 0; k < nm; k++)
        memset(r->mel + (size_t)k * N_FRAMES + computed, 0, sizeof(float) * (size_t)(N_FRAMES - computed));
    return ENCDEC_OK;
}

/* Runs the encoder over r->mel unless it already holds window (seek, size). */
static encdec_status encode(lf_run *r, int seek, int size) {
    if (r->encoded_seek == seek && r->encoded_size == size) return ENCDEC_OK;
    double t0 = ed_now_ms();
    encdec_status st = r->env->x->encode(r->env->x->ctx, r->mel);
    if (st) return st;
    r->rep->encoder_ms += ed_now_ms() - t0;
    r->rep->n_encodes++;
    r->encoded_seek = seek;
    r->encoded_size = size;
    return ENCDEC_OK;
}

static void begin(lf_run *r) {
    double t0 = ed_now_ms();
    rn_begin(r->env->rn, r->p->kv_mode);   /* the cross cache, once per window */
    r->rep->encoder_ms += ed_now_ms() - t0;
}

/* The probabilities of the language tokens after <|startoftranscript|>
 * (probs[L], L languages) over the window just encoded and begun; *best
 * the most likely. The prompt's slot is used: the caller restarts it. */
static encdec_status sot_language(lf_run *r, float *probs, int *best) {
    const whisper_model *m = r->env->m;
    float ns;
    int sot = m->sp.sot;
    encdec_status st = asr_window_prompt(&r->work, &sot, 1, NULL, 0, &ns, r->lang_logits);
    if (st) return st;
    int L = m->sp.n_langs < 128 ? m->sp.n_langs : 128, first = m->sp.lang_first;
    float mx = -INFINITY;
    *best = 0;
    for (int i = 0; i < L; i++) mx = fmaxf(mx, r->lang_logits[first + i]);
    double sum = 0;
    for (int i = 0; i < L; i++) sum += exp((double)r->lang_logits[first + i] - mx);
    for (int i = 0; i < L; i++) {
        probs[i] = (float)(exp((double)r->lang_logits[first + i] - mx) / sum);
        if (r->lang_logits[first + i] > r->lang_logits[first + *best]) *best = i;
    }
    return ENCDEC_OK;
}

/* Language detection (faster-whisper's detect_language): windows of the
 * log-mel from frame `start` (the first clip's), up to p->lang_segments of
 * them; the first whose most likely language is above p->lang_threshold
 * decides; else the language most windows put first (the earliest on a
 * tie), with the best probability it had. The first window is openai-
 * whisper's (frames past the audio are the log-mel's own); the others are
 * padded with zeros as faster-whisper pads them. rep->lang_probs: the last
 * window's. */
static encdec_status detect_language(lf_run *r, int start) {
    const asr_params *p = r->p;
    int votes[128] = {0}, order[128], n_order = 0, chosen = -1, best;
    float top[128] = {0}, chosen_p = 0;
    encdec_status st = ENCDEC_OK;
    int segs = p->lang_segments > 0 ? p->lang_segments : 1;
    for (int i = 0; !st && i < segs && chosen < 0; i++) {
        int seek = start + i * r->win, size = r->content - seek;
        if (i > 0 && size <= 0) break;
        if (size > r->win) size = r->win;
        if (size < 0) size = 0;
        if (i == 0 && r->win == N_FRAMES && p->timestamps) size = N_FRAMES;   /* reused */
        double t0 = ed_now_ms();
        if (!(r->encoded_seek == seek && r->encoded_size == size)) st = window_mel(r, seek, size);
        r->rep->mel_ms += ed_now_ms() - t0;
        if (!st) st = encode(r, seek, size);
        if (st) break;
        begin(r);
        if ((st = sot_language(r, r->rep->lang_probs, &best))) break;
        float pb = r->rep->lang_probs[best];
        if (pb > p->lang_threshold) {
            chosen = best;
            chosen_p = pb;
        } else {
            if (votes[best]++ == 0) order[n_order++] = best;
            if (pb > top[best]) top[best] = pb;
        }
    }
    if (st) return st;
    if (chosen < 0) {   /* the vote (n_order >= 1: one window was read at least) */
        chosen = order[0];
        for (int k = 1; k < n_order; k++)
            if (votes[order[k]] > votes[chosen]) chosen = order[k];
        chosen_p = top[chosen];
    }
    const whisper_model *m = r->env->m;
    r->rep->n_langs = m->sp.n_langs < 128 ? m->sp.n_langs : 128;
    r->rep->language = m->sp.lang_first + chosen;
    r->rep->lang_prob = chosen_p;
    r->rep->detected = 1;
    return ENCDEC_OK;
}

/* Sends the window's kept segments to the sink and their tokens to the
 * transcript. A segment with no duration or no text is dropped. */
static encdec_status emit(lf_run *r, const asr_window_result *res, int n_seg, int seek) {
    const whisper_model *m = r->env->m;
    encdec_status st = ENCDEC_OK;
    for (int i = 0; i < n_seg && !st; i++) {
        const asr_wseg *g = &r->segs[i];
        int n_text = 0;
        for (int k = 0; k < g->n; k++) n_text += res->tok[g->first + k] < m->sp.eot;
        int *text_tok = r->head;
        for (int k = 0, j = 0; k < g->n; k++)
            if (res->tok[g->first + k] < m->sp.eot) text_tok[j++] = res->tok[g->first + k];
        char *text = bpe_decode(m->tok, text_tok, n_text, 1);
        if (!text) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: segment text");
        size_t len = strlen(text);
        asr_strip(text, &len);
        if (g->start != g->end && len > 0) {
            asr_segment s = {seek, g->start, g->end, text, res->tok + g->first, res->lp + g->first,
                             g->n, res->temperature, (float)res->avg_logprob,
                             (float)res->compression_ratio, res->no_speech_prob, g->words,
                             g->n_words, res->all_failed};
            st = ivec_push(&r->all, res->tok + g->first, (size_t)g->n);
            if (!st && r->sink && r->sink->segment) st = r->sink->segment(r->sink->user, &s);
        }
        free(text);
    }
    return st;
}

/* The prompt of the window at the current state: [<|startofprev|>
 * [hotwords] the transcript's last 223 tokens since the reset]
 * <|startoftranscript|> (faster-whisper's get_prompt: the hotwords in every
 * window but one with a prefix; up to 223 of them, the caller's cut). */
static int prompt_head(lf_run *r, int has_prefix) {
    const whisper_model *m = r->env->m;
    int n = 0, max_prev = m->hp.n_text_ctx / 2 - 1;
    size_t have = r->all.n - r->prompt_from;
    int hot = has_prefix ? 0 : r->p->n_hotwords;
    if (have > 0 || hot > 0) r->head[n++] = m->sp.sot_prev;
    if (hot > 0) memcpy(r->head + n, r->p->hotwords, (size_t)hot * sizeof(int));
    n += hot;
    if (have > 0) {
        size_t take = have < (size_t)max_prev ? have : (size_t)max_prev;
        memcpy(r->head + n, r->all.v + r->all.n - take, take * sizeof(int));
        n += (int)take;
    }
    r->head[n++] = m->sp.sot;
    return n;
}

/* The RMS of the window's samples; 0 is digital silence (generated or
 * padded audio): such a window is skipped without decoding: the model can
 * only hallucinate on it (openai-whisper decodes 65 s of zeros to " you you
 * you"), and it costs nothing. Any real recording has noise, so that never
 * changes the transcript of speech. A window quieter than p->silence_rms
 * is skipped after the prompt when the model also calls it silence. */
static double window_rms(const lf_run *r, int seek, int size) {
    size_t a = (size_t)seek * MEL_HOP, b = (size_t)(seek + size) * MEL_HOP, x0, nx;
    if (b > r->n) b = r->n;
    const float *x;
    if (b <= a || asr_feed_get(r->feed, a, b, &x, &x0, &nx)) return 1;   /* decoded: the error comes again */
    double ss = 0;
    for (size_t i = a; i < b; i++) ss += (double)x[i - x0] * x[i - x0];
    return sqrt(ss / (double)(b - a));
}

/* A decode without timestamps that stopped early: fewer text tokens than
 * min_text_rate a second over a window of 5 s or more (the model ended
 * its text at a pause and the rest of the window's speech was never
 * decoded: tiny.en int8 did it on one chunk of 14 of the batched bench
 * recording). */
static int short_text(const lf_run *r, const asr_window_result *res, int size) {
    const asr_params *p = r->p;
    if (p->timestamps || !(p->min_text_rate > 0) || size < 5 * FRAMES_PER_SECOND ||
        r->env->m->sp.timestamp_begin < 0)
        return 0;
    int n_text = 0;
    for (int i = 0; i < res->n; i++) n_text += res->tok[i] < r->env->m->sp.eot;
    return n_text < p->min_text_rate * size / FRAMES_PER_SECOND;
}

static encdec_status run_window(lf_run *r, int seek, int size, int *next);

/* From this window on, timestamps mode: the window again (its log-mel as
 * that mode computes it, the encoder, the prompt, the decode), the rest of
 * its audio in the windows that follow (the seek rule). */
static encdec_status redo_with_timestamps(lf_run *r, int seek, int size, int *next) {
    r->ts_p = *r->p;
    r->ts_p.timestamps = 1;
    r->ts_p.whole_windows = 0;   /* the rest after the last complete segment: the windows after */
    r->p = r->work.p = &r->ts_p;
    r->encoded_seek = -1;
    r->rep->n_windows--;     /* counted again by the window's second run */
    r->rep->n_fallbacks++;   /* a window decoded more than once */
    return run_window(r, seek, size, next);
}

/* One window at seek, size frames of content: decode, segments, words;
 * returns the next seek in *next. */
static encdec_status run_window(lf_run *r, int seek, int size, int *next) {
    const whisper_model *m = r->env->m;
    const asr_params *p = r->p;
    r->rep->n_windows++;
    double rms = window_rms(r, seek, size);
    if (rms == 0) {   /* nothing to hear: not decoded at all */
        *next = seek + size;
        return ENCDEC_OK;
    }
    double t0 = ed_now_ms();
    encdec_status st = ENCDEC_OK;
    if (!(r->encoded_seek == seek && r->encoded_size == size)) st = window_mel(r, seek, size);
    r->rep->mel_ms += ed_now_ms() - t0;
    if (st) return st;
    if ((st = encode(r, seek, size))) return st;
    begin(r);
    if (p->lang_per_window && m->multilingual) {   /* this window's own language */
        float probs[128];
        int best;
        if ((st = sot_language(r, probs, &best))) return st;
        r->sot_seq[1] = m->sp.lang_first + best;
        rn_restart(r->env->rn, -1);
    }
    /* prompt: head, then the language and task, <|notimestamps|>, the prefix */
    int n_head = prompt_head(r, r->rep->n_windows == 1 && p->n_prefix > 0), rest[8 + 232];
    int n_rest = 0, n_forced = 0;
    for (int i = 1; i < r->n_sot_seq; i++) rest[n_rest++] = r->sot_seq[i];
    if (!p->timestamps) rest[n_rest++] = m->sp.no_timestamps;
    if (r->rep->n_windows == 1 && p->n_prefix > 0) {
        /* The prefix starts the transcript (the first window only), as
         * faster-whisper does it: after <|0.00|> when timestamps are on, so
         * that the model reads it as the start of a segment (openai-whisper
         * puts it bare and decodes nothing after it), and part of the
         * window's tokens, as if the model had said it. */
        int at = n_rest;
        if (p->timestamps) rest[n_rest++] = m->sp.timestamp_begin;
        for (int i = 0; i < p->n_prefix && n_rest < 8 + 232; i++) rest[n_rest++] = p->prefix[i];
        n_forced = n_rest - at;
        r->work.forced = rest + at;
    }
    r->work.n_forced = n_forced;
    float no_speech;
    t0 = ed_now_ms();
    st = asr_window_prompt(&r->work, r->head, n_head, rest, n_rest, &no_speech, NULL);
    if (!st && rms < p->silence_rms && !isnan(p->no_speech_threshold) &&
        no_speech > p->no_speech_threshold) {   /* near-silence the model hears as such */
        r->rep->decode_ms += ed_now_ms() - t0;
        *next = seek + size;
        return ENCDEC_OK;
    }
    asr_window_result res;
    if (!st) st = asr_window_decode(&r->work, seek, no_speech, &res, r->rep);
    r->rep->decode_ms += ed_now_ms() - t0;
    if (st) return st;
    /* a silent window is skipped whole */
    int skip = !isnan(p->no_speech_threshold) && res.no_speech_prob > p->no_speech_threshold;
    if (!isnan(p->logprob_threshold) && res.avg_logprob > p->logprob_threshold) skip = 0;
    if (skip) {
        *next = seek + size;
        return ENCDEC_OK;
    }
    if (short_text(r, &res, size)) return redo_with_timestamps(r, seek, size, next);
    int advance, single_end;
    int n_seg = asr_split_segments(res.tok, res.n, m->sp.timestamp_begin, size, p->whole_windows,
                                   r->splits, &advance, &single_end);
    double offset = seek * (double)MEL_HOP / MEL_SAMPLE_RATE;
    for (int i = 0; i < n_seg; i++)
        r->segs[i] = (asr_wseg){r->splits[i].first, r->splits[i].n, offset + r->splits[i].start,
                                offset + r->splits[i].end, NULL, 0};
    *next = seek + advance;
    if (p->word_timestamps) {
        t0 = ed_now_ms();
        st = asr_align_window(&r->align, r->env, p, r->sot_seq, r->n_sot_seq, res.tok, r->segs,
                              n_seg, seek, size, r->last_speech);
        r->rep->align_ms += ed_now_ms() - t0;
        if (st) return st;
        double end = asr_words_end(r->segs, n_seg);   /* where speech stopped */
        if (!single_end && !p->whole_windows && !isnan(end) && end > offset)
            *next = (int)nearbyint(end * FRAMES_PER_SECOND);
        if (!isnan(p->hallucination_silence)) {
            asr_silence_ctx c = {p->hallucination_silence, seek, offset, size / (double)FRAMES_PER_SECOND,
                                 (seek + r->win) / (double)FRAMES_PER_SECOND, r->last_speech, r->content};
            n_seg = asr_hallucination_cut(r->segs, n_seg, &c, next);
            if (n_seg < 0) return ENCDEC_OK;   /* the window's silence skipped, nothing kept */
            end = asr_words_end(r->segs, n_seg);
        }
        if (!isnan(end)) r->last_speech = end;
    }
    n_seg = asr_clamp_segments(r->segs, n_seg, offset + size / (double)FRAMES_PER_SECOND);
    st = emit(r, &res, n_seg, seek);
    if (!p->condition_on_previous_text || res.last_temperature > 0.5f) r->prompt_from = r->all.n;
    return st;
}

static encdec_status check(const asr_env *env, const asr_params *p) {
    const whisper_model *m = env->m;
    if (p->n_temperatures < 1 || p->n_temperatures > ASR_MAX_TEMPS)
        return ed_fail(ENCDEC_ERR_ARG, "asr: %d temperatures (1..%d)", p->n_temperatures, ASR_MAX_TEMPS);
    if (p->timestamps && m->sp.timestamp_begin < 0)
        return ed_fail(ENCDEC_ERR_ARG, "this model's vocabulary has no timestamp tokens; "
                       "transcribe without timestamps");
    if (p->word_timestamps && m->n_align_heads < 1)
        return ed_fail(ENCDEC_ERR_ARG, "word timestamps: the model names no alignment heads");
    if (m->multilingual && m->sp.n_langs < 1)
        return ed_fail(ENCDEC_ERR_ARG, "asr: a multilingual model without language tokens");
    if (asr_slots_needed(p) > env->rn->m.n_slots)
        return ed_fail(ENCDEC_ERR_ARG, "asr: the state holds %d sequences, %d needed",
                       env->rn->m.n_slots, asr_slots_needed(p));
    return ENCDEC_OK;
}

/* Where the first clip starts, in frames (faster-whisper detects the
 * language from there; from 0 when it starts past the audio). */
static int first_clip(const lf_run *r) {
    int f = (int)nearbyint(r->p->clips[0] * FRAMES_PER_SECOND);
    return f > 0 && f < r->content ? f : 0;
}

static void lf_free(lf_run *r) {
    free(r->mel);
    asr_work_free(&r->work);
    asr_aligner_free(&r->align);
    free(r->all.v);
    free(r->splits);
    free(r->segs);
    free(r->head);
    free(r->lang_logits);
}

static encdec_status lf_init(lf_run *r) {
    const whisper_model *m = r->env->m;
    size_t C = (size_t)m->hp.n_text_ctx + 1, nm = (size_t)m->hp.n_mels;
    r->content = (int)(r->n / MEL_HOP);   /* openai-whisper: (n + 30 s) / hop frames, less 3000 */
    r->win = r->p->window_frames >= 1 && r->p->window_frames < N_FRAMES ? r->p->window_frames : N_FRAMES;
    r->encoded_seek = -1;
    r->mel = ed_alloc(sizeof(float) * nm * N_FRAMES, "window mel");
    r->splits = ed_alloc(sizeof *r->splits * C, "segments");
    r->segs = ed_alloc(sizeof *r->segs * C, "segments");
    r->head = ed_alloc(sizeof(int) * C, "prompt");
    r->lang_logits = ed_alloc(sizeof(float) * (size_t)m->hp.n_vocab, "language logits");
    if (!r->mel || !r->splits || !r->segs || !r->head || !r->lang_logits) return ENCDEC_ERR_NOMEM;
    encdec_status st = asr_work_init(&r->work, r->env, r->p);
    if (!st && r->p->word_timestamps) st = asr_aligner_init(&r->align, r->env);
    r->rep->mel_ms += r->feed->mel_ms;   /* the feed's pass over the whole recording */
    return st;
}

encdec_status asr_transcribe(const asr_env *env, const float *pcm, size_t n, const asr_params *p,
                             const asr_sink *sink, asr_report *rep) {
    asr_feed f;
    encdec_status st = asr_feed_memory(&f, pcm, n, env->mel, NULL);
    if (!st) st = asr_transcribe_feed(env, &f, p, sink, rep);
    asr_feed_free(&f);
    return st;
}

encdec_status asr_transcribe_feed(const asr_env *env, asr_feed *feed, const asr_params *p,
                                  const asr_sink *sink, asr_report *rep) {
    memset(rep, 0, sizeof *rep);
    rep->language = -1;
    encdec_status st = check(env, p);
    if (st) return st;
    size_t n = feed->n;
    if (n / MEL_HOP + N_FRAMES > (size_t)INT32_MAX / MEL_HOP)
        return ed_fail(ENCDEC_ERR_AUDIO, "the audio is too long (%zu samples)", n);
    const whisper_model *m = env->m;
    lf_run r = {.env = env, .p = p, .sink = sink, .rep = rep, .feed = feed, .n = n};
    st = lf_init(&r);
    if (!st) st = ivec_push(&r.all, p->initial_prompt, (size_t)p->n_initial_prompt);
    r.initial = r.all.n;
    if (!st && m->multilingual) {
        if (p->language >= 0) rep->language = p->language;
        else st = detect_language(&r, p->n_clips > 0 ? first_clip(&r) : 0);
    }
    if (!rep->detected) rep->lang_prob = 1;
    if (!st && sink && sink->language)
        sink->language(sink->user, rep->language, rep->lang_prob,
                       rep->detected ? rep->lang_probs : NULL, rep->detected ? rep->n_langs : 0);
    if (p->detect_only) {
        lf_free(&r);
        return st;
    }
    r.sot_seq[r.n_sot_seq++] = m->sp.sot;
    if (m->multilingual) {
        r.sot_seq[r.n_sot_seq++] = rep->language;
        r.sot_seq[r.n_sot_seq++] = p->translate ? m->sp.translate : m->sp.transcribe;
    }
    /* the clips, in mel frames: [start, end) pairs */
    int clips[2 * ASR_MAX_CLIPS + 2], n_clips = p->n_clips > 0 ? p->n_clips : 1;
    for (int i = 0; i < n_clips; i++) {
        clips[2 * i] = p->n_clips ? (int)nearbyint(p->clips[2 * i] * FRAMES_PER_SECOND) : 0;
        double e = p->n_clips ? p->clips[2 * i + 1] : -1;
        clips[2 * i + 1] = e < 0 ? r.content : (int)nearbyint(e * FRAMES_PER_SECOND);
    }
    for (int c = 0; !st && c < n_clips; c++) {
        int seek = clips[2 * c], end = clips[2 * c + 1];
        while (!st && seek < end) {
            int size = r.win;
            if (r.content - seek < size) size = r.content - seek;
            if (end - seek < size) size = end - seek;
            int next = seek + size;
            st = run_window(&r, seek, size, &next);
            seek = next > seek ? next : seek + size;   /* never stuck */
            if (!st && sink && sink->progress)
                sink->progress(sink->user, (seek < r.content ? seek : r.content) / (double)FRAMES_PER_SECOND,
                               r.content / (double)FRAMES_PER_SECOND);
        }
    }
    lf_free(&r);
    return st;
}
