/* batched.c - a recording's speech in chunks decoded together
 * (encdec_engine_transcribe_batched): the spans (clips, the caller's, or
 * the VAD's), joined into chunks of at most chunk_length seconds
 * (asr_speech_chunks), each chunk an engine request of its own, up to
 * batch_size decoding at once (a chunk that ends makes room for the next at
 * once, whichever chunk it was), their results taken in order (at most
 * AHEAD x batch_size chunks held, done ones by their result alone): every segment's and
 * word's time mapped through its chunk's spans into the result, and to the
 * caller's callbacks on the calling thread.
 *
 * The first chunk goes alone until its language is known when it must be
 * detected (the others are then given it); from a file the chunks' samples
 * are read through the spans as they are submitted (asr_feed without its
 * first pass): what is held is the batch's chunks, never the recording. */
#include "api/api.h"
#include "asr/feed.h"
#include "audio/audio.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "tok/lang.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RATE MEL_SAMPLE_RATE
#define AHEAD 4   /* chunks held: AHEAD x the batch */

encdec_batch_params encdec_batch_default_params(void) {
    encdec_batch_params b = {8, 30.0f, 0, NULL};
    return b;
}

typedef struct {
    encdec_engine *e;
    const whisper_model *w;
    const encdec_transcribe_params *p;   /* the caller's */
    encdec_transcribe_params cp;         /* every chunk's */
    int batch;
    const volatile int *cancel;          /* the caller's, or NULL */
    size_t n;                            /* samples in the recording */
    asr_span *sp;                        /* the spans, samples of the recording */
    int k;
    asr_chunk *ch;
    int n_ch;
    const float *pcm;                    /* memory input, or */
    asr_feed *feed;                      /* the joined speech of a stream */
    float *buf;                          /* one chunk's samples (memory input) */
    int ring;                            /* AHEAD x batch */
    encdec_request **q;                  /* [ring]: chunk i at q[i % ring] */
    double *map_work;                    /* [2 k] */
    encdec_result *r;
    api_view view;
    int windows;                         /* windows of the chunks taken so far */
    double vad_ms;
    /* the first chunk's language, told from its thread */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *lang;
    int lang_known;
    int lang_ready;                      /* the later chunks may go */
    unsigned ended;                      /* requests done so far (under mu) */
} bt_run;

static encdec_status check_batch(const encdec_batch_params *b) {
    if (b->batch_size < 1 || b->batch_size > 256)
        return ed_fail(ENCDEC_ERR_ARG, "batch_size %d is out of range 1..256", b->batch_size);
    if (!(b->chunk_length >= 1.0f && b->chunk_length <= 30.0f))
        return ed_fail(ENCDEC_ERR_ARG, "chunk_length %g is out of range 1..30 seconds",
                       b->chunk_length);
    return ENCDEC_OK;
}

/* The clips (seconds) as spans of the recording. */
static encdec_status clip_spans(const encdec_transcribe_params *p, size_t n, asr_span **out,
                                int *k) {
    int nc = (p->n_clip_timestamps + 1) / 2;
    asr_span *sp = ed_alloc(sizeof *sp * (size_t)nc, "clips");
    if (!sp) return ENCDEC_ERR_NOMEM;
    double dur = n / (double)RATE;
    for (int i = 0; i < nc; i++) {
        double a = p->clip_timestamps[2 * i];
        double b = 2 * i + 1 < p->n_clip_timestamps ? p->clip_timestamps[2 * i + 1] : dur;
        double prev = i ? p->clip_timestamps[2 * i - 1] : 0;
        if (!(a >= prev && b > a && a < dur && isfinite(b))) {
            free(sp);
            return ed_fail(ENCDEC_ERR_ARG, "clip_timestamps: clip %d (%g, %g) is empty, out of "
                           "order or past the audio's %.3f s", i, a, b, dur);
        }
        size_t s0 = (size_t)llround(a * RATE), s1 = (size_t)llround(b * RATE);
        sp[i] = (asr_span){s0, s1 < n ? s1 : n};
    }
    *out = sp;
    *k = nc;
    return ENCDEC_OK;
}

/* Spans longer than max cut into equal parts (no part longer than max). */
static encdec_status split_long(asr_span **sp, int *k, size_t max) {
    size_t total = 0;
    for (int i = 0; i < *k; i++) total += ((*sp)[i].end - (*sp)[i].start + max - 1) / max;
    if (total == (size_t)*k) return ENCDEC_OK;
    if (total > (1u << 24)) return ed_fail(ENCDEC_ERR_ARG, "too many chunks (%zu)", total);
    asr_span *o = ed_alloc(sizeof *o * total, "speech spans");
    if (!o) return ENCDEC_ERR_NOMEM;
    size_t j = 0;
    for (int i = 0; i < *k; i++) {
        size_t a = (*sp)[i].start, len = (*sp)[i].end - a, parts = (len + max - 1) / max;
        for (size_t t = 0; t < parts; t++)
            o[j++] = (asr_span){a + len * t / parts, a + len * (t + 1) / parts};
    }
    free(*sp);
    *sp = o;
    *k = (int)total;
    return ENCDEC_OK;
}

/* The spans of the recording (pcm[n], or the stream as: n found here). */
static encdec_status find_spans(bt_run *b, const encdec_batch_params *bp, const float *pcm,
                                audio_stream *as) {
    const encdec_transcribe_params *p = b->p;
    encdec_status st = ENCDEC_OK;
    int by_vad = !p->n_clip_timestamps && !p->speech && p->vad;
    if (as && !by_vad) st = api_stream_length(as, NULL, &b->n);
    if (!st && !by_vad && b->n == 0) st = ed_fail(ENCDEC_ERR_AUDIO, "the audio has no samples");
    if (st) return st;
    size_t max = (size_t)(bp->chunk_length * RATE);
    if (p->n_clip_timestamps) {
        st = clip_spans(p, b->n, &b->sp, &b->k);
    } else if (p->speech) {
        st = api_given_spans(p, b->n, &b->sp, &b->k);
    } else if (by_vad) {
        encdec_vad_params vp = p->vad_params;
        if (!(vp.max_speech_duration_s <= bp->chunk_length)) vp.max_speech_duration_s = bp->chunk_length;
        ed_pool *pool = NULL;
        double t0 = ed_now_ms();
        st = ed_pool_new(&pool, api_engine_threads(b->e));
        if (!st) st = api_vad_spans(p->vad, pool, pcm, b->n, as, &vp, NULL, &b->sp, &b->k, &b->n);
        ed_pool_free(pool);
        b->vad_ms = ed_now_ms() - t0;
    } else if (b->n <= max) {
        b->sp = ed_alloc(sizeof *b->sp, "speech spans");
        if (!b->sp) return ENCDEC_ERR_NOMEM;
        b->sp[0] = (asr_span){0, b->n};
        b->k = 1;
    } else {
        return ed_fail(ENCDEC_ERR_ARG, "batched transcription of audio longer than %g s (this is "
                       "%.1f s) needs speech spans to cut it into chunks: a VAD (params.vad), "
                       "params.speech or clip_timestamps", bp->chunk_length, b->n / (double)RATE);
    }
    if (!st) st = split_long(&b->sp, &b->k, max);
    if (st) return st;
    b->ch = ed_alloc(sizeof *b->ch * (size_t)(b->k ? b->k : 1), "chunks");
    b->map_work = ed_alloc(sizeof(double) * 2 * (size_t)(b->k ? b->k : 1), "speech map");
    if (!b->ch || !b->map_work) return ENCDEC_ERR_NOMEM;
    b->n_ch = asr_speech_chunks(b->sp, b->k, p->n_clip_timestamps ? 0 : max, b->ch);
    return ENCDEC_OK;
}

static encdec_status stopped(const bt_run *b) {
    if (b->cancel && __atomic_load_n(b->cancel, __ATOMIC_RELAXED))
        return ed_fail(ENCDEC_ERR_CANCELLED, "the batched transcription was cancelled");
    return ENCDEC_OK;
}

/* Waits for request q, checking the caller's cancel flag every 2 ms. */
static encdec_status wait_done(const bt_run *b, encdec_request *q) {
    if (!b->cancel) return ENCDEC_OK;
    struct timespec ts = {0, 2000000L};
    while (!encdec_request_done(q)) {
        encdec_status st = stopped(b);
        if (st) return st;
        nanosleep(&ts, NULL);
    }
    return ENCDEC_OK;
}

/* The first chunk's thread: its language (detected, or given). */
static void on_first_language(const char *code, float prob, void *user) {
    bt_run *b = user;
    (void)prob;
    pthread_mutex_lock(&b->mu);
    b->lang = code;
    b->lang_known = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* A chunk's thread: it is done. */
static void on_chunk_done(void *user) {
    bt_run *b = user;
    pthread_mutex_lock(&b->mu);
    b->ended++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static encdec_status submit(bt_run *b, int i) {
    const asr_chunk *c = &b->ch[i];
    const float *x;
    if (b->feed) {
        const float *f;
        size_t x0, nx;
        encdec_status st = asr_feed_get(b->feed, c->offset, c->offset + c->len, &f, &x0, &nx);
        if (st) return st;
        x = f + (c->offset - x0);
    } else {
        size_t at = 0;
        for (int s = 0; s < c->n; s++) {
            const asr_span *sp = &b->sp[c->first + s];
            memcpy(b->buf + at, b->pcm + sp->start, sizeof(float) * (sp->end - sp->start));
            at += sp->end - sp->start;
        }
        x = b->buf;
    }
    encdec_transcribe_params cp = b->cp;
    if (i == 0) {
        cp.on_language = on_first_language;
        cp.user = b;
    }
    return api_engine_transcribe_told(b->e, x, c->len, &cp, on_chunk_done, b, &b->q[i % b->ring]);
}

/* The later chunks wait for the first one's language when it is detected
 * for all of them (until it is known, or the first chunk has ended). */
static void await_language(bt_run *b) {
    pthread_mutex_lock(&b->mu);
    while (!b->lang_known && !encdec_request_done(b->q[0]) && !stopped(b)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&b->cv, &b->mu, &ts);
    }
    if (b->lang_known) {
        b->cp.language = b->lang;
        b->lang_ready = 1;
    }
    pthread_mutex_unlock(&b->mu);
}

static void sum_timings(encdec_timings *t, const encdec_timings *c) {
    t->mel_ms += c->mel_ms;
    t->encoder_ms += c->encoder_ms;
    t->decode_ms += c->decode_ms;
    t->align_ms += c->align_ms;
    t->n_windows += c->n_windows;
    t->n_tokens += c->n_tokens;
    t->n_steps += c->n_steps;
    t->n_encodes += c->n_encodes;
    t->n_decodes += c->n_decodes;
    t->n_fallbacks += c->n_fallbacks;
    t->n_loops += c->n_loops;
}

/* One segment of chunk i into the result (times through the map), then to
 * the caller. */
static encdec_status take_segment(bt_run *b, const asr_chunk *c, const asr_speech_map *mp,
                                  const encdec_segment *g) {
    encdec_result *r = b->r;
    size_t first_tok = r->n_tokens, first_word = r->n_words, text_off;
    encdec_status st = ENCDEC_OK;
    for (int t = 0; t < g->n_tokens && !st; t++) {
        const encdec_token *tk = &g->tokens[t];
        st = api_result_add_token(r, tk->id, tk->logprob, tk->text, strlen(tk->text),
                                  b->windows + tk->window);
    }
    double start = asr_speech_time(mp, g->start, -1, 0), end = asr_speech_time(mp, g->end, -1, 1);
    for (int t = 0; t < g->n_words && !st; t++) {
        const encdec_word *wd = &g->words[t];
        int span = asr_speech_chunk(mp, (wd->start + wd->end) / 2, 0);   /* both ends in one */
        double ws = asr_speech_time(mp, wd->start, span, 0), we = asr_speech_time(mp, wd->end, span, 0);
        if (t == 0) start = ws;
        if (t == g->n_words - 1) end = we;
        size_t off;
        st = api_result_add_str(r, wd->word, strlen(wd->word), &off);
        if (!st) st = api_result_add_word(r, off, ws, we, wd->probability);
    }
    if (!st) st = api_result_add_str(r, g->text, strlen(g->text), &text_off);
    encdec_segment seg = *g;
    seg.id = (int)r->n_segs;
    seg.seek = g->seek + (int)(c->offset / MEL_HOP);   /* frames of the joined speech */
    seg.start = start;
    seg.end = end;
    if (!st) st = api_result_add_segment(r, &seg, text_off, first_tok, first_word);
    if (st || !b->p->on_segment) return st;
    if ((st = api_result_view(r, r->n_segs - 1, &b->view, &seg))) return st;
    if (b->p->on_segment(&seg, b->p->user))
        return ed_fail(ENCDEC_ERR_CANCELLED, "transcription stopped by the caller");
    return ENCDEC_OK;
}

/* The language the result and the caller are told (once, before the
 * first segment): the first chunk's. */
static void take_language(bt_run *b, const encdec_result *c) {
    encdec_result *r = b->r;
    r->language = c->language;
    r->n_lang = c->n_lang;
    memcpy(r->lang_code, c->lang_code, sizeof r->lang_code);
    memcpy(r->lang_prob, c->lang_prob, sizeof r->lang_prob);
    float prob = r->language_prob = c->language_prob;
    if (b->p->on_language) b->p->on_language(c->language ? c->language : "en", prob, b->p->user);
}

/* Chunk i's result, taken in order. */
static encdec_status take(bt_run *b, int i) {
    encdec_request **qp = &b->q[i % b->ring];
    encdec_result *c = NULL;
    encdec_status st = wait_done(b, *qp);
    if (st) return st;
    st = encdec_request_wait(*qp, &c);
    encdec_request_free(*qp);
    *qp = NULL;
    const asr_chunk *ch = &b->ch[i];
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", encdec_last_error());
        return ed_fail(st, "chunk %d (%.2f-%.2f s): %s", i, b->sp[ch->first].start / (double)RATE,
                       b->sp[ch->first + ch->n - 1].end / (double)RATE, msg);
    }
    if (i == 0) {
        take_language(b, c);
        if (!b->lang_ready) {   /* its language never came before it ended */
            b->cp.language = c->language;
            b->lang_ready = 1;
        }
    }
    asr_speech_map mp;
    asr_speech_map_init(&mp, b->sp + ch->first, ch->n, RATE, b->map_work);
    for (size_t s = 0; s < c->n_segs && !st; s++) st = take_segment(b, ch, &mp, &c->segs[s]);
    sum_timings(&b->r->timings, &c->timings);
    b->windows += c->timings.n_windows;
    encdec_result_free(c);
    if (!st && b->p->on_progress)
        b->p->on_progress(b->sp[ch->first + ch->n - 1].end / (double)RATE, b->n / (double)RATE,
                          b->p->user);
    return st;
}

/* Chunks of [next, sub) still decoding. */
static int decoding(const bt_run *b, int next, int sub) {
    int n = 0;
    for (int i = next; i < sub; i++) n += !encdec_request_done(b->q[i % b->ring]);
    return n;
}

/* Waits until a request ends after `seen` had (or 20 ms: the cancel flag). */
static void await_end(bt_run *b, unsigned seen) {
    pthread_mutex_lock(&b->mu);
    if (b->ended == seen) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&b->cv, &b->mu, &ts);
    }
    pthread_mutex_unlock(&b->mu);
}

/* Every chunk through the engine, batch_size decoding at a time (a chunk
 * that ends lets the next one in, whichever ended), taken in order. */
static encdec_status run_chunks(bt_run *b) {
    encdec_status st = ENCDEC_OK;
    int sub = 0, next = 0;
    while (next < b->n_ch && !st && !(st = stopped(b))) {
        pthread_mutex_lock(&b->mu);
        unsigned seen = b->ended;
        pthread_mutex_unlock(&b->mu);
        while (!st && sub < b->n_ch && sub < next + b->ring && (sub == 0 || b->lang_ready) &&
               decoding(b, next, sub) < b->batch) {
            st = stopped(b);
            if (!st) st = submit(b, sub++);
            if (!st && sub == 1 && !b->lang_ready && b->n_ch > 1) await_language(b);
        }
        if (st) break;
        if (encdec_request_done(b->q[next % b->ring]) || sub == next + b->ring) st = take(b, next++);
        else await_end(b, seen);
    }
    for (int i = 0; i < b->ring; i++)   /* after an error: the rest cancelled */
        if (b->q[i]) {
            encdec_request_cancel(b->q[i]);
            encdec_request_free(b->q[i]);
            b->q[i] = NULL;
        }
    return st;
}

static void no_speech_language(bt_run *b) {
    int i = b->p->language && strlen(b->p->language) < 32 ? wlang_find(b->p->language) : 0;
    const char *code = wlang_code(i >= 0 && b->w->multilingual ? i : 0);
    b->r->language = code ? code : "en";
    b->r->language_prob = 1.0f;
    if (b->p->on_language) b->p->on_language(b->r->language, 1.0f, b->p->user);
}

static encdec_status batched_body(encdec_engine *e, const float *pcm, size_t n, audio_stream *as,
                                  const encdec_transcribe_params *params,
                                  const encdec_batch_params *batch, encdec_result **out) {
    encdec_transcribe_params p = params ? *params : encdec_transcribe_default_params();
    encdec_batch_params bp = batch ? *batch : encdec_batch_default_params();
    if (bp.batch_size == 0) bp.batch_size = 8;
    if (bp.chunk_length == 0) bp.chunk_length = 30.0f;
    const encdec_model *m = api_engine_model(e);
    encdec_status st = check_batch(&bp);
    if (!st) st = api_transcribe_check(m, &p);
    if (!st && p.kv_mode != ENCDEC_KV_FULL)
        st = ed_fail(ENCDEC_ERR_ARG, "the engine decodes with the full cache mode only");
    if (!st && p.detect_language_only)
        st = ed_fail(ENCDEC_ERR_ARG, "detect_language_only: use encdec_transcribe (or an engine "
                     "request), not the batched pipeline");
    if (st) return st;
    bt_run b = {.e = e, .w = m->w, .p = &p, .batch = bp.batch_size, .cancel = bp.cancel, .n = n,
                .pcm = pcm};
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    b.cp = p;
    b.cp.vad = NULL;
    b.cp.speech = NULL;
    b.cp.n_speech = 0;
    b.cp.clip_timestamps = NULL;
    b.cp.n_clip_timestamps = 0;
    b.cp.on_segment = NULL;
    b.cp.on_progress = NULL;
    b.cp.on_language = NULL;
    b.cp.user = NULL;
    b.cp.chunk_length = 0;   /* a chunk is one window */
    /* Without timestamps a chunk's decode is its whole text (the peer's one
     * decode a chunk): it moves on by its whole length. openai-whisper's rule
     * (with word times, the next window at the last word's end) would decode
     * the pause and padding after every chunk's speech again, where tiny.en
     * makes up a word a frame or two long and moves on by those frames ("Mr."
     * 21 times in a 4 s tail). A decode that stopped early is min_text_rate's
     * (redone with timestamps, their rule). */
    if (!p.timestamps) b.cp.whole_windows = 1;
    b.lang_ready = p.language || !b.w->multilingual || bp.language_per_chunk || p.multilingual;
    asr_feed feed;
    int have_feed = 0;
    b.r = calloc(1, sizeof *b.r);
    b.ring = AHEAD * b.batch;
    b.q = calloc((size_t)b.ring, sizeof *b.q);
    if (!b.r || !b.q) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: batched transcription");
    if (!st) st = find_spans(&b, &bp, pcm, as);
    size_t longest = 0, joined = 0;
    for (int i = 0; i < b.n_ch; i++) {
        longest = b.ch[i].len > longest ? b.ch[i].len : longest;
        joined += b.ch[i].len;
    }
    if (!st && b.n_ch && as) {
        st = asr_feed_stream_spans(&feed, as, b.sp, b.k, NULL, NULL);
        have_feed = !st;
        b.feed = have_feed ? &feed : NULL;
    } else if (!st && b.n_ch) {
        b.buf = ed_alloc(sizeof(float) * longest, "chunk samples");
        if (!b.buf) st = ENCDEC_ERR_NOMEM;
    }
    if (!st && b.n_ch) st = run_chunks(&b);
    else if (!st) no_speech_language(&b);
    if (!st) st = api_result_whisper_text(b.r, b.w);
    if (!st) {
        b.r->timings.audio_seconds = b.n / (double)RATE;
        b.r->timings.speech_seconds = joined / (double)RATE;
        b.r->timings.vad_ms = b.vad_ms;
        api_result_finish(b.r);
        *out = b.r;
        b.r = NULL;
    }
    if (have_feed) asr_feed_free(&feed);
    encdec_result_free(b.r);
    api_view_free(&b.view);
    free(b.q);
    free(b.buf);
    free(b.sp);
    free(b.ch);
    free(b.map_work);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
    return st;
}

static encdec_status check_call(encdec_engine *e, encdec_result **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_engine_transcribe_batched: out is NULL");
    *out = NULL;
    if (!e) return ed_fail(ENCDEC_ERR_ARG, "encdec_engine_transcribe_batched: engine is NULL");
    if (api_engine_model(e)->family != API_WHISPER)
        return ed_fail(ENCDEC_ERR_ARG, "encdec_engine_transcribe_batched: this engine's model is "
                       "text to text; use encdec_engine_generate");
    return ENCDEC_OK;
}

/* The caller's thread (the VAD, the mel, the chunks' results) and every pool
 * it makes run under the model's kernel-set limit (base/isa.h). */
static encdec_status batched(encdec_engine *e, const float *pcm, size_t n, audio_stream *as,
                             const encdec_transcribe_params *params,
                             const encdec_batch_params *batch, encdec_result **out) {
    int old = ed_isa_swap(api_engine_model(e)->isa);
    encdec_status st = batched_body(e, pcm, n, as, params, batch, out);
    ed_isa_swap(old);
    return st;
}

encdec_status encdec_engine_transcribe_batched(encdec_engine *e, const float *pcm, size_t n_samples,
                                               const encdec_transcribe_params *params,
                                               const encdec_batch_params *batch,
                                               encdec_result **out) {
    encdec_status st = check_call(e, out);
    if (st) return st;
    if (!pcm || n_samples == 0) return ed_fail(ENCDEC_ERR_AUDIO, "the audio has no samples");
    return batched(e, pcm, n_samples, NULL, params, batch, out);
}

encdec_status encdec_engine_transcribe_batched_file(encdec_engine *e, const char *path,
                                                    const encdec_audio_params *audio,
                                                    const encdec_transcribe_params *params,
                                                    const encdec_batch_params *batch,
                                                    encdec_result **out, encdec_audio_info *info) {
    encdec_status st = check_call(e, out);
    if (st) return st;
    if (info) memset(info, 0, sizeof *info);
    if (!path) return ed_fail(ENCDEC_ERR_ARG, "encdec_engine_transcribe_batched_file: path is NULL");
    audio_stream *as = NULL;
    st = audio_stream_open(&as, path, RATE, audio);
    if (st) return st;
    st = batched(e, NULL, 0, as, params, batch, out);
    if (info) *info = *audio_stream_info(as);
    audio_stream_close(as);
    return st;
}
