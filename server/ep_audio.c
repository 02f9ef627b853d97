/* ep_audio.c - POST /v1/audio/transcriptions and /translations (http.h):
 * the form checked, the upload handed to the engine as it was sent (read
 * on the request's thread once it holds its place, so a request that waits
 * costs nothing but its bytes, and one that is cancelled stops at once),
 * the connection parked until the answer is ready, or the answer streamed
 * as server-sent events (a keep-alive comment after --keepalive seconds (15)
 * with nothing to say: a request that waits in the queue keeps its stream open;
 * the deadline ends a stream with an error event). */
#include "http.h"
#include "openai.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    srv *s;
    conn *k;                  /* the request (valid until its answer is out) */
    struct MHD_Connection *c;
    srv_audio_req q;          /* the checked form (strings borrowed from k->form) */
    int translate;
    encdec_request *r;
    /* a stream */
    ev_queue ev;
    int finished;             /* the last event is in ev */
    double deadline, last_sent;
    srv_park park;
} audio_st;

static void audio_free(void *p) {
    audio_st *a = p;
    if (!a) return;
    encdec_request_free(a->r);   /* cancels it if it still runs, waits for its thread */
    evq_destroy(&a->ev);
    free(a);
}

static int request_ready(void *ctx, double now) {
    (void)now;
    return encdec_request_done(((audio_st *)ctx)->r);
}

/* A streamed transcription's segment (on the request's thread). */
static int on_stream_segment(const encdec_segment *g, void *user) {
    audio_st *a = user;
    evq_push(&a->ev, srv_sse_delta(g->text));
    return 0;
}

static int stream_ready(void *ctx, double now) {
    audio_st *a = ctx;
    return evq_ready(&a->ev) || encdec_request_done(a->r) ||
           now - a->last_sent >= a->s->o.keepalive_s * 1e3;
}

/* The request is done: its last event (the whole text, or an error). */
static void stream_finish(audio_st *a) {
    encdec_result *r = NULL;
    encdec_status st = encdec_request_wait(a->r, &r);
    char *ev;
    if (!st) {
        ev = srv_sse_done(encdec_result_text(r));
        srv_add_tokens(a->s, encdec_result_n_tokens(r));
        atomic_fetch_add(&a->s->audio_ms, (long long)(encdec_result_timings(r)->audio_seconds * 1000));
    } else {
        srv_error e = {st == ENCDEC_ERR_AUDIO || st == ENCDEC_ERR_ARG ? 400 : 500, "",
                       st == ENCDEC_ERR_AUDIO || st == ENCDEC_ERR_ARG ? "invalid_request_error"
                                                                       : "server_error",
                       st == ENCDEC_ERR_AUDIO ? "file" : NULL,
                       st == ENCDEC_ERR_AUDIO ? "invalid_audio" : NULL};
        snprintf(e.message, sizeof e.message, "%s%s",
                 st == ENCDEC_ERR_AUDIO ? "the file could not be read as audio: " : "",
                 encdec_last_error());
        ev = srv_sse_error(&e);
        a->k->status = e.status;
    }
    encdec_result_free(r);
    evq_push(&a->ev, ev);
    a->finished = 1;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    audio_st *a = cls;
    for (;;) {
        double now = srv_now_ms();
        size_t n = evq_take(&a->ev, buf, max);
        if (n) {
            a->k->bytes += n;
            a->last_sent = now;
            return (ssize_t)n;
        }
        if (a->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (a->park.gone) {
            encdec_request_cancel(a->r);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (encdec_request_done(a->r)) {
            stream_finish(a);
            continue;
        }
        if (srv_sse_idle(&a->ev, a->s, a->deadline, now, &a->last_sent, buf, max, &n)) {
            encdec_request_cancel(a->r);
            a->finished = 1;
            a->k->status = 504;   /* the log's: the stream itself began with 200 */
            continue;
        }
        if (n) return (ssize_t)n;
        srv_park_conn(a->s, &a->park, a->c, stream_ready, a, a->deadline);
        return 0;
    }
}

static void stream_done(void *cls) {
    audio_st *a = cls;
    atomic_fetch_sub(&a->s->inflight, 1);   /* the stream held the request's count */
    audio_free(a);
}

/* whisper.cpp's fields (form.h) onto the parameters; clip[2]: the
 * offset_t / duration clip's storage. */
static void apply_whisper_cpp(const srv_audio_req *q, encdec_transcribe_params *tp, double *clip) {
    if (!isnan(q->temperature_inc)) tp->temperature_increment = q->temperature_inc;
    if (q->no_timestamps > 0) tp->timestamps = 0;
    if (q->beam_size > 0) tp->beam_size = q->beam_size;
    if (q->best_of > 0) tp->best_of = q->best_of;
    if (!isnan(q->no_speech_thold)) tp->no_speech_threshold = q->no_speech_thold;
    if (!isnan(q->logprob_thold)) tp->logprob_threshold = q->logprob_thold;
    if (q->offset_s > 0 || q->duration_s > 0) {
        clip[0] = q->offset_s;
        clip[1] = q->duration_s > 0 ? q->offset_s + q->duration_s : -1;
        tp->clip_timestamps = clip;
        tp->n_clip_timestamps = q->duration_s > 0 ? 2 : 1;
    }
}

/* The first call after the upload: the form checked, the request submitted. */
static enum MHD_Result submit(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    int translate = k->route == R_TRANSLATE;
    if (k->pp && MHD_destroy_post_processor(k->pp) != MHD_YES) k->pp_bad = 1;
    k->pp = NULL;
    srv_audio_req q;
    srv_error e;
    if (k->pp_bad && !k->form.too_large)
        return srv_fail_req(k, c, 400, "invalid_request_error", NULL, NULL,
                            "the multipart/form-data body is malformed or cut short");
    if (!srv_form_check(&k->form, &q, &e)) return srv_send_error(k, c, &e);
    if (q.translate >= 0) translate = q.translate;   /* whisper.cpp's field */
    if (q.model && !srv_model_known(s, q.model))
        return srv_fail_req(k, c, 404, "invalid_request_error", "model", "model_not_found",
                            "the model '%.100s' does not exist here; this server has '%s'", q.model,
                            s->name);
    if (translate && !s->multilingual)
        return srv_fail_req(k, c, 400, "invalid_request_error", "model", NULL,
                            "the model '%s' is English-only: it cannot translate", s->name);
    if (q.language && encdec_model_find_language(s->model, q.language) < 0)
        return srv_fail_req(k, c, 400, "invalid_request_error", "language", NULL,
                            "unknown language '%.40s' for the model '%s'", q.language, s->name);
    if (q.vad && !s->vad && !s->o.form_only)
        return srv_fail_req(k, c, 400, "invalid_request_error", "vad_filter", NULL,
                            "this server has no VAD model: start it with --vad-model DIR "
                            "(scripts/fetch-model.sh vad installs Silero VAD)");
    if (s->o.form_only)
        return srv_send_body(k, c, 200, strdup("{\"form\": \"ok\"}"), "application/json", NULL);
    audio_st *a = calloc(1, sizeof *a);
    if (!a) return srv_fail_req(k, c, 500, "server_error", NULL, NULL, "out of memory");
    evq_init(&a->ev);
    a->s = s;
    a->k = k;
    a->c = c;
    a->q = q;
    a->translate = translate;
    a->deadline = s->o.timeout_s > 0 ? k->t0 + s->o.timeout_s * 1e3 : 0;
    a->last_sent = srv_now_ms();
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.language = translate && !q.language ? NULL : q.language;
    tp.translate = translate;
    tp.initial_prompt = q.prompt;
    if (q.temperature > 0) tp.temperature = q.temperature;
    tp.word_timestamps = q.words;
    double clip[2];   /* the engine copies it */
    apply_whisper_cpp(&q, &tp, clip);
    if (q.vad) {
        tp.vad = s->vad;
        tp.vad_params = q.vad_params;
    }
    if (q.stream) {
        tp.on_segment = on_stream_segment;
        tp.user = a;
    }
    encdec_audio_params ap = encdec_audio_default_params();
    ap.max_seconds = s->o.max_audio_s;
    encdec_status st = encdec_engine_transcribe_memory(s->engine, q.file, q.file_len, &ap, &tp, &a->r);
    if (st) {
        audio_free(a);
        return srv_fail_req(k, c, st == ENCDEC_ERR_NOMEM ? 500 : 400,
                            st == ENCDEC_ERR_NOMEM ? "server_error" : "invalid_request_error", NULL,
                            NULL, "%s", encdec_last_error());
    }
    srv_form_drop_file(&k->form);   /* the request has its copy */
    a->q.file = NULL;
    a->q.file_len = 0;
    if (q.stream) return srv_send_stream(k, c, stream_read, a, stream_done);
    k->ep = a;
    k->ep_free = audio_free;
    srv_park_conn(s, &k->park, c, request_ready, a, a->deadline);
    return MHD_YES;
}

/* Resumed: the answer, a deadline passed, or the client gone. */
static enum MHD_Result answer(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    audio_st *a = k->ep;
    if (k->park.gone) {
        k->status = 499;   /* the client closed the connection (nginx's code, for the log) */
        return MHD_NO;    /* completed() frees a, which cancels the request */
    }
    if (k->park.late && !encdec_request_done(a->r)) {
        encdec_request_cancel(a->r);
        return srv_fail_req(k, c, 504, "server_error", NULL, "timeout",
                            "the request took longer than the server's limit of %g s", s->o.timeout_s);
    }
    encdec_result *res = NULL;
    encdec_status st = encdec_request_wait(a->r, &res);
    if (st)
        return srv_fail_req(k, c, st == ENCDEC_ERR_AUDIO || st == ENCDEC_ERR_ARG ? 400 : 500,
                            st == ENCDEC_ERR_AUDIO || st == ENCDEC_ERR_ARG ? "invalid_request_error"
                                                                            : "server_error",
                            st == ENCDEC_ERR_AUDIO ? "file" : NULL,
                            st == ENCDEC_ERR_AUDIO ? "invalid_audio" : NULL, "%s%s",
                            st == ENCDEC_ERR_AUDIO ? "the file could not be read as audio: " : "",
                            encdec_last_error());
    srv_add_tokens(s, encdec_result_n_tokens(res));
    atomic_fetch_add(&s->audio_ms, (long long)(encdec_result_timings(res)->audio_seconds * 1000));
    const char *ctype;
    char *body = srv_body(res, &a->q, a->translate ? "translate" : "transcribe", &ctype);
    encdec_result_free(res);
    return srv_send_body(k, c, 200, body, ctype, NULL);
}

enum MHD_Result srv_ep_audio(conn *k, struct MHD_Connection *c) {
    return k->ep ? answer(k, c) : submit(k, c);
}
