/* engine.c - encdec_engine: requests on threads of their own, their passes
 * run by the scheduler (sched/sched.h), their results built as a
 * session's are (api_transcribe_feed). */
#include "api/api.h"
#include "core/dev.h"
#include "audio/audio.h"
#include "base/err.h"
#include "base/clock.h"
#include "base/isa.h"
#include "kern/kern.h"
#include "sched/sched.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct encdec_engine {
    const encdec_model *model;
    sch_engine *sch;
    int slots;
    int max_new;                 /* T5: most tokens a request generates */
    int n_threads, max_active;
    pthread_mutex_t mu;
    pthread_cond_t gone;         /* a request left live */
    encdec_request *live;        /* requests whose threads run or are not yet joined (a list) */
    atomic_int undone;           /* requests started and not done (stats.requests) */
    struct ed_dev *dev;          /* its own handle on the model's device (NULL: the CPU) */
};

struct encdec_request {
    encdec_engine *e;
    encdec_transcribe_params p;  /* texts copied into strs */
    char *strs[6];               /* language, initial_prompt, prefix, punctuations, hotwords */
    double *clips;
    int *prompt_ids;             /* initial_prompt_tokens (copied) */
    encdec_span *speech;         /* the caller's speech spans (copied) */
    float *pcm;                  /* memory input (copied) */
    size_t n;
    char *path;                  /* file input */
    unsigned char *bytes;        /* encoded input in memory (copied) */
    size_t n_bytes;
    encdec_audio_params audio;
    int has_audio;
    encdec_audio_info info;      /* what the file held (file input) */
    int gen;                     /* a T5 generation: */
    char *text;                  /* its input */
    int *ids, n_ids;             /* or its input's tokens (encdec_engine_generate_ids) */
    int *prefix;                 /* the target prefix (langs.prefix points here) */
    int *suppress;               /* gp.suppress_tokens (copied; gp points here) */
    int *ends;                   /* gp.end_tokens (copied; gp points here) */
    int n_input;                 /* its input tokens as encoded */
    encdec_generate_params gp;   /* its language strings resolved into langs and cleared */
    api_langs langs;
    pthread_t th;
    atomic_int cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, waited;
    encdec_status st;
    char err[1024];
    encdec_result *result;
    api_done_fn on_done;         /* told on the request's thread once done (or NULL) */
    void *on_done_user;
    encdec_request *next;        /* in e->live */
};

/* ---- a request's thread ---- */

typedef struct {
    encdec_request *q;
    sch_client *c;
    mel_ctx *mel;
} eng_prep;

static encdec_status prep_engine(void *ctx, int n_slots, encdec_kv_mode mode, asr_env *env) {
    eng_prep *c = ctx;
    if (mode != ENCDEC_KV_FULL)
        return ed_fail(ENCDEC_ERR_ARG, "the engine decodes with the full cache mode only");
    if (n_slots > sch_client_slots(c->c))
        return ed_fail(ENCDEC_ERR_ARG, "the request needs %d sequences; the engine holds %d",
                       n_slots, sch_client_slots(c->c));
    env->rn = sch_client_runner(c->c);
    env->mel = c->mel;
    env->x = sch_client_exec(c->c);
    return ENCDEC_OK;
}

/* With a VAD: the whole recording in memory, its speech alone transcribed
 * (the VAD's products on a pool of the request's own). */
static encdec_status speech_body(encdec_request *q, eng_prep *c, audio_stream *as) {
    ed_pool *pool = NULL;
    encdec_status st = ed_pool_new(&pool, 1);
    if (!st && as)
        st = api_transcribe_speech_stream(q->e->model, prep_engine, c, c->mel, pool, as, &q->p,
                                          &q->cancel, &q->result);
    else if (!st)
        st = api_transcribe_speech(q->e->model, prep_engine, c, c->mel, pool, q->pcm, q->n, &q->p,
                                   &q->cancel, &q->result);
    ed_pool_free(pool);
    return st;
}

/* A transcription: its place first (it waits there, cancellable, in turn
 * with the others), then its audio read and measured (the first pass, which
 * checks for cancellation as it goes), then the windows. */
static encdec_status request_body(encdec_request *q, eng_prep *c) {
    const encdec_model *m = q->e->model;
    c->mel = mel_new(m->w->hp.n_mels);
    if (!c->mel) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: mel");
    encdec_status st = sch_client_new(q->e->sch, &q->cancel, &c->c);
    if (st) return st;
    audio_stream *as = NULL;
    asr_feed f;
    const encdec_audio_params *ap = q->has_audio ? &q->audio : NULL;
    if (q->path) st = audio_stream_open(&as, q->path, MEL_SAMPLE_RATE, ap);
    else if (q->bytes) st = audio_stream_open_memory(&as, q->bytes, q->n_bytes, "the audio",
                                                     MEL_SAMPLE_RATE, ap);
    if (!st && (q->p.vad || q->p.speech) && q->p.n_clip_timestamps == 0) {   /* the speech alone */
        st = speech_body(q, c, as);
        if (as) q->info = *audio_stream_info(as);
        sch_client_free(c->c);
        audio_stream_close(as);
        return st;
    }
    if (!st) st = as ? asr_feed_stream(&f, as, c->mel, &q->cancel)
                     : asr_feed_memory(&f, q->pcm, q->n, c->mel, &q->cancel);
    if (as) q->info = *audio_stream_info(as);
    if (!st) {
        st = api_transcribe_feed(m, prep_engine, c, &f, &q->p, &q->result);
        asr_feed_free(&f);
    }
    sch_client_free(c->c);
    audio_stream_close(as);
    return st;
}

static encdec_status run_posted(void *ctx, dec_task *t, const api_watch *w) {
    if (!w) return sch_client_run(ctx, t);
    return sch_client_run_watch(ctx, t, w->fn, w->ctx, w->len, w->n);
}

/* A text request: its input encoded into its place, then the strategy's
 * steps with everyone else's (api_generate_decode, as a session runs it). */
static encdec_status generate_body(encdec_request *q) {
    const encdec_model *m = q->e->model;
    const char *in[1] = {q->text};
    api_packed pk;
    encdec_status st = q->ids ? api_pack_ids(&m->text, q->ids, q->n_ids, q->gp.truncate, &pk)
                              : api_tokenize(&m->text, in, 1, q->gp.truncate, &q->langs, q->gp.replace_unknowns, &pk);
    sch_client *c = NULL;
    encdec_result *r = NULL;
    if (!st) q->n_input = pk.n_tokens;
    if (!st) st = sch_client_new(q->e->sch, &q->cancel, &c);
    if (!st) {
        r = calloc(1, sizeof *r);
        if (!r) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result");
    }
    double t0 = ed_now_ms(), t1 = t0;
    if (!st) {
        sch_text_input input = {pk.ids, pk.n_tokens};
        st = sch_client_encode(c, &input);
        t1 = ed_now_ms();
    }
    if (!st) {
        dec_runner *rn = sch_client_runner(c);
        rn_begin(rn, ENCDEC_KV_FULL);
        rn_screen(rn, api_gen_screens(&q->gp));   /* greedy: screened steps */
        dec_model dm = rn_seam(rn);
        int full = q->ids && q->n_ids > pk.n_tokens ? q->n_ids : pk.n_tokens;
        api_attender at = {rn, pk.len, &full, &pk};
        st = api_generate_decode(&m->text, &q->gp, &q->langs, 1, &dm, run_posted, c, &at, r);
        r->timings.encoder_ms = t1 - t0;
        r->timings.decode_ms = ed_now_ms() - t1;
        r->timings.n_steps = rn->n_steps;
        r->timings.n_input_tokens = pk.n_tokens;
    }
    sch_client_free(c);
    api_packed_free(&pk);
    if (st) {
        encdec_result_free(r);
        return st;
    }
    api_result_finish(r);
    q->result = r;
    return ENCDEC_OK;
}

static void *request_main(void *arg) {
    encdec_request *q = arg;
    ed_isa_swap(q->e->model->isa);
    eng_prep c = {q, NULL, NULL};
    encdec_status st = q->gen ? generate_body(q) : request_body(q, &c);
    mel_free(c.mel);
    free(q->pcm);                          /* read no more: a done request holds its result */
    q->pcm = NULL;
    atomic_fetch_sub(&q->e->undone, 1);   /* before done: whoever sees it done sees this */
    api_done_fn fn = q->on_done;
    void *user = q->on_done_user;
    pthread_mutex_lock(&q->mu);
    q->st = st;
    if (st) snprintf(q->err, sizeof q->err, "%s", ed_err_msg());
    q->done = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (fn) fn(user);   /* the last use of q here: its owner may free it now */
    return NULL;
}

/* ---- submitting ---- */

static char *dup_str(const char *s, int *fail) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *fail = 1;
    return d;
}

/* The request's own copy of the parameters (the caller's strings may go). */
static encdec_status copy_params(encdec_request *q, const encdec_transcribe_params *params) {
    q->p = params ? *params : encdec_transcribe_default_params();
    int fail = 0;
    const char **f[] = {&q->p.language, &q->p.initial_prompt, &q->p.prefix,
                        &q->p.prepend_punctuations, &q->p.append_punctuations, &q->p.hotwords};
    for (int i = 0; i < 6; i++) *f[i] = q->strs[i] = dup_str(*f[i], &fail);
    if (q->p.n_clip_timestamps > 0 && q->p.clip_timestamps) {
        q->clips = malloc(sizeof(double) * (size_t)q->p.n_clip_timestamps);
        if (q->clips) memcpy(q->clips, q->p.clip_timestamps, sizeof(double) * (size_t)q->p.n_clip_timestamps);
        else fail = 1;
        q->p.clip_timestamps = q->clips;
    }
    if (q->p.initial_prompt_tokens && q->p.n_initial_prompt_tokens > 0 &&
        q->p.n_initial_prompt_tokens <= (1 << 20)) {
        size_t sz = sizeof(int) * (size_t)q->p.n_initial_prompt_tokens;
        q->prompt_ids = malloc(sz);
        if (q->prompt_ids) memcpy(q->prompt_ids, q->p.initial_prompt_tokens, sz);
        else fail = 1;
        q->p.initial_prompt_tokens = q->prompt_ids;
    }
    if (q->p.speech && q->p.n_speech > 0 && q->p.n_speech <= (1 << 24)) {
        q->speech = malloc(sizeof *q->speech * (size_t)q->p.n_speech);
        if (q->speech) memcpy(q->speech, q->p.speech, sizeof *q->speech * (size_t)q->p.n_speech);
        else fail = 1;
        q->p.speech = q->speech;
    }
    return fail ? ed_fail(ENCDEC_ERR_NOMEM, "out of memory: request parameters") : ENCDEC_OK;
}

static void request_release(encdec_request *q) {
    free(q->text);
    free(q->ids);
    free(q->prefix);
    free(q->suppress);
    free(q->ends);
    for (int i = 0; i < 6; i++) free(q->strs[i]);
    free(q->clips);
    free(q->prompt_ids);
    free(q->speech);
    free(q->pcm);
    free(q->path);
    free(q->bytes);
    encdec_result_free(q->result);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

static encdec_status start(encdec_engine *e, encdec_request *q, encdec_request **out) {
    encdec_transcribe_params chk = q->p;
    encdec_status st = ENCDEC_OK;
    if (!q->gen && e->model->family != API_WHISPER)
        st = ed_fail(ENCDEC_ERR_ARG, "encdec_engine_transcribe: this is a %s model (text to "
                     "text); use encdec_engine_generate", e->model->text.model_type);
    if (!st && !q->gen) st = api_transcribe_check(e->model, &chk);
    if (!st && !q->gen && q->p.kv_mode != ENCDEC_KV_FULL)
        st = ed_fail(ENCDEC_ERR_ARG, "the engine decodes with the full cache mode only (kv_mode %d)",
                     (int)q->p.kv_mode);
    if (!st) {
        pthread_mutex_lock(&e->mu);
        atomic_fetch_add(&e->undone, 1);
        if (pthread_create(&q->th, NULL, request_main, q) != 0) {
            atomic_fetch_sub(&e->undone, 1);
            st = ed_fail(ENCDEC_ERR_THREADS, "the request's thread could not start");
        } else {
            q->next = e->live;
            e->live = q;
        }
        pthread_mutex_unlock(&e->mu);
    }
    if (st) {
        request_release(q);
        return st;
    }
    *out = q;
    return ENCDEC_OK;
}

static encdec_status new_request(encdec_engine *e, const encdec_transcribe_params *params,
                                 encdec_request **q, encdec_request **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_engine: out is NULL");
    *out = NULL;
    if (!e) return ed_fail(ENCDEC_ERR_ARG, "encdec_engine: engine is NULL");
    *q = calloc(1, sizeof **q);
    if (!*q) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: request");
    (*q)->e = e;
    pthread_mutex_init(&(*q)->mu, NULL);
    pthread_cond_init(&(*q)->cv, NULL);
    encdec_status st = copy_params(*q, params);
    if (st) request_release(*q);
    return st;
}

encdec_status encdec_engine_transcribe(encdec_engine *e, const float *pcm, size_t n_samples,
                                       const encdec_transcribe_params *params,
                                       encdec_request **out) {
    return api_engine_transcribe_told(e, pcm, n_samples, params, NULL, NULL, out);
}

encdec_status api_engine_transcribe_told(encdec_engine *e, const float *pcm, size_t n_samples,
                                         const encdec_transcribe_params *params, api_done_fn on_done,
                                         void *user, encdec_request **out) {
    encdec_request *q;
    encdec_status st = new_request(e, params, &q, out);
    if (st) return st;
    q->on_done = on_done;
    q->on_done_user = user;
    if (!pcm || n_samples == 0) st = ed_fail(ENCDEC_ERR_AUDIO, "the audio has no samples");
    for (size_t i = 0; !st && i < n_samples; i++)
        if (!isfinite(pcm[i])) st = ed_fail(ENCDEC_ERR_AUDIO, "sample %zu is not a finite number", i);
    if (!st) {
        q->pcm = malloc(sizeof(float) * n_samples);
        if (!q->pcm) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %zu samples", n_samples);
    }
    if (st) {
        request_release(q);
        return st;
    }
    memcpy(q->pcm, pcm, sizeof(float) * n_samples);
    q->n = n_samples;
    return start(e, q, out);
}

/* An encoded input (a file's path, or bytes): the audio parameters checked
 * and kept, the request started; or q released. */
static encdec_status start_encoded(encdec_engine *e, encdec_request *q, encdec_status st,
                                   const char *who, const encdec_audio_params *audio,
                                   encdec_request **out) {
    if (!st && audio &&
        (!(audio->max_seconds >= 0) || isinf(audio->max_seconds) || !(audio->fifo_wait_s >= 0) ||
         isinf(audio->fifo_wait_s)))
        st = ed_fail(ENCDEC_ERR_ARG, "%s: max_seconds %g / fifo_wait_s %g must be finite numbers "
                     ">= 0", who, audio->max_seconds, audio->fifo_wait_s);
    if (st) {
        request_release(q);
        return st;
    }
    if (audio) {
        q->audio = *audio;
        q->has_audio = 1;
    }
    return start(e, q, out);
}

encdec_status encdec_engine_transcribe_file(encdec_engine *e, const char *path,
                                            const encdec_audio_params *audio,
                                            const encdec_transcribe_params *params,
                                            encdec_request **out) {
    encdec_request *q;
    encdec_status st = new_request(e, params, &q, out);
    if (st) return st;
    if (!path || !*path) st = ed_fail(ENCDEC_ERR_ARG, "encdec_engine_transcribe_file: empty path");
    if (!st && !(q->path = strdup(path))) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: path");
    return start_encoded(e, q, st, "encdec_engine_transcribe_file", audio, out);
}

encdec_status encdec_engine_transcribe_memory(encdec_engine *e, const void *data, size_t len,
                                              const encdec_audio_params *audio,
                                              const encdec_transcribe_params *params,
                                              encdec_request **out) {
    encdec_request *q;
    encdec_status st = new_request(e, params, &q, out);
    if (st) return st;
    if (!data || len == 0) st = ed_fail(ENCDEC_ERR_AUDIO, "the audio is empty (0 bytes)");
    if (!st && !(q->bytes = malloc(len))) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %zu bytes", len);
    if (!st) {
        memcpy(q->bytes, data, len);
        q->n_bytes = len;
    }
    return start_encoded(e, q, st, "encdec_engine_transcribe_memory", audio, out);
}

/* A text request's parameters checked into q (st: an error so far). */
static encdec_status gen_params(encdec_engine *e, encdec_request *q, const encdec_generate_params *params,
                                encdec_status st) {
    q->gen = 1;
    q->gp = params ? *params : encdec_generate_default_params();
    if (!st && !api_is_text(e->model))
        st = ed_fail(ENCDEC_ERR_ARG, "encdec_engine_generate: this is a Whisper model (speech to "
                     "text); use encdec_engine_transcribe");
    if (!st) st = api_generate_check(&q->gp);
    if (!st) st = api_langs_of(&e->model->text, &q->gp, &q->langs);
    q->gp.src_lang = q->gp.tgt_lang = NULL;   /* the caller's strings: not kept */
    if (!st && q->gp.n_suppress_tokens) {      /* nor the caller's list */
        q->suppress = malloc(sizeof(int) * (size_t)q->gp.n_suppress_tokens);
        if (!q->suppress) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: suppress_tokens");
        else memcpy(q->suppress, q->gp.suppress_tokens, sizeof(int) * (size_t)q->gp.n_suppress_tokens);
    }
    q->gp.suppress_tokens = q->suppress;
    if (!st && q->gp.n_end_tokens) {
        q->ends = malloc(sizeof(int) * (size_t)q->gp.n_end_tokens);
        if (!q->ends) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: end_tokens");
        else memcpy(q->ends, q->gp.end_tokens, sizeof(int) * (size_t)q->gp.n_end_tokens);
    }
    q->gp.end_tokens = q->ends;
    int width = api_gen_width(&q->gp);
    if (!st && q->gp.kv_mode != ENCDEC_KV_FULL)
        st = ed_fail(ENCDEC_ERR_ARG, "the engine decodes with the full cache mode only (kv_mode %d)",
                     (int)q->gp.kv_mode);
    if (!st && width > e->slots)
        st = ed_fail(ENCDEC_ERR_ARG, "the engine decodes at most %d sequences per request (%s %d)",
                     e->slots, q->gp.return_alternatives ? "alternatives x num_beams"
                               : q->gp.do_sample ? "num_return_sequences" : "num_beams", width);
    if (!st && q->gp.max_new_tokens > e->max_new)
        st = ed_fail(ENCDEC_ERR_ARG, "max_new_tokens %d is over the engine's %d",
                     q->gp.max_new_tokens, e->max_new);
    return st;
}

encdec_status encdec_engine_generate(encdec_engine *e, const char *input,
                                     const encdec_generate_params *params, encdec_request **out) {
    encdec_request *q;
    encdec_status st = new_request(e, NULL, &q, out);
    if (st) return st;
    st = gen_params(e, q, params, st);
    if (!st && (!input || !*input))
        st = ed_fail(ENCDEC_ERR_ARG, "encdec_engine_generate: the input is %s", input ? "empty" : "NULL");
    if (!st && !(q->text = strdup(input))) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: input");
    if (st) {
        request_release(q);
        return st;
    }
    return start(e, q, out);
}

static int *dup_ids(const int *p, int n, encdec_status *st) {
    int *q = n > 0 && !*st ? malloc(sizeof(int) * (size_t)n) : NULL;
    if (q) memcpy(q, p, sizeof(int) * (size_t)n);
    else if (n > 0 && !*st) *st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokens");
    return q;
}

encdec_status encdec_engine_generate_ids(encdec_engine *e, const int *ids, int n_ids, const int *prefix,
                                         int n_prefix, const encdec_generate_params *params,
                                         encdec_request **out) {
    encdec_request *q;
    encdec_status st = new_request(e, NULL, &q, out);
    if (st) return st;
    if (params && params->src_lang)
        st = ed_fail(ENCDEC_ERR_ARG, "src_lang \"%.40s\": the input is tokens; put the language's "
                     "token among them", params->src_lang);
    st = gen_params(e, q, params, st);
    if (!st && (!ids || n_ids < 1 || n_ids > (1 << 20)))
        st = ed_fail(ENCDEC_ERR_ARG, "encdec_engine_generate_ids: %d input tokens (1..%d)", n_ids, 1 << 20);
    if (!st && (n_prefix < 0 || (n_prefix > 0 && !prefix) || n_prefix >= q->gp.max_new_tokens))
        st = ed_fail(ENCDEC_ERR_ARG, "encdec_engine_generate_ids: a target prefix of %d tokens (0..%d: "
                     "fewer than max_new_tokens)", n_prefix, q->gp.max_new_tokens - 1);
    const s2s_model *m = &e->model->text;
    for (int i = 0; !st && i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= m->n_src_vocab)
            st = ed_fail(ENCDEC_ERR_ARG, "input token %d is id %d, not below the %svocabulary size %d", i,
                         ids[i], m->n_src_vocab != m->n_vocab ? "source " : "", m->n_src_vocab);
    for (int i = 0; !st && i < n_prefix; i++)
        if (prefix[i] < 0 || prefix[i] >= m->n_vocab)
            st = ed_fail(ENCDEC_ERR_ARG, "target prefix token %d is id %d, not below the vocabulary "
                         "size %d", i, prefix[i], m->n_vocab);
    if (!st && q->langs.tgt >= 0)
        st = ed_fail(ENCDEC_ERR_ARG, "tgt_lang: this model takes its target language as a token of "
                     "the input; put it among the tokens");
    q->ids = dup_ids(ids, n_ids, &st);
    q->n_ids = n_ids;
    q->prefix = dup_ids(prefix, n_prefix, &st);
    q->langs.prefix = q->prefix;
    q->langs.n_prefix = n_prefix;
    if (st) {
        request_release(q);
        return st;
    }
    return start(e, q, out);
}

/* ---- waiting ---- */

int encdec_request_done(const encdec_request *q) {
    if (!q) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&q->mu);
    int d = q->done;
    pthread_mutex_unlock((pthread_mutex_t *)&q->mu);
    return d;
}

/* Joins q's thread and takes it off the engine's list, once: the first
 * caller does it and returns 1; any other returns 0 at once (the engine
 * outlives the list: encdec_engine_free waits until it is empty). */
static int reap(encdec_request *q) {
    pthread_mutex_lock(&q->mu);
    int first = !q->waited;
    q->waited = 1;
    pthread_mutex_unlock(&q->mu);
    if (!first) return 0;
    pthread_join(q->th, NULL);
    encdec_engine *e = q->e;
    pthread_mutex_lock(&e->mu);
    for (encdec_request **p = &e->live; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    pthread_cond_broadcast(&e->gone);
    pthread_mutex_unlock(&e->mu);
    return 1;
}

encdec_status encdec_request_wait(encdec_request *q, encdec_result **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_request_wait: out is NULL");
    *out = NULL;
    if (!q) return ed_fail(ENCDEC_ERR_ARG, "encdec_request_wait: request is NULL");
    reap(q);
    if (q->st) return ed_fail(q->st, "%s", q->err);
    if (!q->result) return ed_fail(ENCDEC_ERR_ARG, "encdec_request_wait: the result was taken");
    *out = q->result;
    q->result = NULL;
    return ENCDEC_OK;
}

void encdec_request_audio_info(const encdec_request *q, encdec_audio_info *out) {
    memset(out, 0, sizeof *out);
    if (!q || !encdec_request_done(q)) return;
    *out = q->info;
}

int encdec_request_input_tokens(const encdec_request *q) {
    return q && encdec_request_done(q) ? q->n_input : 0;
}

void encdec_request_cancel(encdec_request *q) {
    if (!q || encdec_request_done(q)) return;   /* done: its engine may be gone */
    atomic_store(&q->cancel, 1);
    encdec_engine *e = q->e;
    if (e) sch_wake_waiting(e->sch);
}

void encdec_request_free(encdec_request *q) {
    if (!q) return;
    if (!encdec_request_done(q)) encdec_request_cancel(q);
    reap(q);
    request_release(q);
}

/* ---- the engine ---- */

encdec_engine_params encdec_engine_default_params(void) {
    encdec_engine_params p = {.n_threads = 1, .max_active = 8, .cross_kv = ENCDEC_KV_F32,
                              .max_new_tokens = 0};   /* 512, or fewer: the model's positions */
    return p;
}

encdec_status encdec_engine_new(const encdec_model *m, const encdec_engine_params *params,
                                encdec_engine **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_engine_new: out is NULL");
    *out = NULL;
    if (!m) return ed_fail(ENCDEC_ERR_ARG, "encdec_engine_new: model is NULL");
    encdec_engine_params p = params ? *params : (encdec_engine_params){0};
    if (p.n_threads == 0) p.n_threads = 1;
    if (p.max_active == 0) p.max_active = 8;
    if (p.n_threads < 1 || p.n_threads > ED_POOL_MAX_THREADS)
        return ed_fail(ENCDEC_ERR_ARG, "thread count %d is out of range 1..%d", p.n_threads,
                       ED_POOL_MAX_THREADS);
    if (p.max_active < 1 || p.max_active > 256)
        return ed_fail(ENCDEC_ERR_ARG, "max_active %d is out of range 1..256", p.max_active);
    /* the BART family's decoder has max_position_embeddings positions, the
     * decoder start one of them */
    int most = m->family == API_BART && m->text.n_positions - 1 < 4096 ? m->text.n_positions - 1 : 4096;
    if (p.max_new_tokens == 0) p.max_new_tokens = most < 512 ? most : 512;
    if (p.max_new_tokens < 1 || p.max_new_tokens > most)
        return ed_fail(ENCDEC_ERR_ARG, "max_new_tokens %d is out of range 1..%d%s", p.max_new_tokens,
                       most, most < 4096 ? " (the model's positions)" : "");
    if (p.cross_kv < ENCDEC_KV_F32 || p.cross_kv > ENCDEC_KV_BF16)
        return ed_fail(ENCDEC_ERR_ARG, "cross_kv %d is not a cache type (0 f32, 1 f16, 2 bf16)",
                       (int)p.cross_kv);
    char why[512];
    if (k_blas_env_check(why, sizeof why)) return ed_fail(ENCDEC_ERR_CONFIG, "%s", why);
    encdec_engine *e = calloc(1, sizeof *e);
    if (!e) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: engine");
    e->model = m;
    e->slots = API_MAX_BEAMS + 1;   /* any beam or best_of, and the prompt's sequence */
    e->max_new = p.max_new_tokens;
    e->n_threads = p.n_threads;
    e->max_active = p.max_active;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->gone, NULL);
    encdec_status st = api_dev_open(m, &e->dev);
    sch_params sp = {m->family == API_WHISPER ? api_w_run(m) : NULL,
                     api_is_text(m) ? &m->text : NULL,
                     p.max_new_tokens + 1, p.n_threads, m->isa, (kv_dtype)p.cross_kv,
                     p.max_active, e->slots, e->dev};
    if (!st) st = sch_new(&e->sch, &sp);
    if (st) {
        ed_dev_close(e->dev);
        pthread_cond_destroy(&e->gone);
        pthread_mutex_destroy(&e->mu);
        free(e);
        return st;
    }
    *out = e;
    return ENCDEC_OK;
}

void encdec_engine_free(encdec_engine *e) {
    if (!e) return;
    for (;;) {   /* cancel and join every request still running */
        pthread_mutex_lock(&e->mu);
        encdec_request *q = e->live;
        for (encdec_request *r = q; r; r = r->next) atomic_store(&r->cancel, 1);
        pthread_mutex_unlock(&e->mu);
        if (!q) break;
        sch_wake_waiting(e->sch);
        if (reap(q)) continue;
        /* another thread (encdec_request_wait / _free) is joining q: wait until
           it has taken q off the list */
        pthread_mutex_lock(&e->mu);
        for (;;) {
            encdec_request *r = e->live;
            while (r && r != q) r = r->next;
            if (!r) break;
            pthread_cond_wait(&e->gone, &e->mu);
        }
        pthread_mutex_unlock(&e->mu);
    }
    sch_free(e->sch);
    ed_dev_close(e->dev);
    pthread_cond_destroy(&e->gone);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

const encdec_model *api_engine_model(const encdec_engine *e) { return e->model; }
int api_engine_threads(const encdec_engine *e) { return e->n_threads; }

void encdec_engine_get_stats(encdec_engine *e, encdec_engine_stats *out) {
    memset(out, 0, sizeof *out);
    if (!e) return;
    sch_stats s;
    sch_get_stats(e->sch, &s);
    *out = (encdec_engine_stats){s.steps, s.rows, s.passes, s.encodes, s.clients, s.waiting,
                                 s.tasks, s.last_rows, {0}};
    memcpy(out->batch_hist, s.hist, sizeof out->batch_hist);
    out->requests = atomic_load(&e->undone);
}
