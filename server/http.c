/* http.c - the HTTP side of encdec serve (server.h). */
#define _GNU_SOURCE   /* POLLRDHUP */
#include "server.h"
#include "completions.h"
#include "form.h"
#include "openai.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { R_NONE, R_TRANSCRIBE, R_TRANSLATE, R_MODELS, R_HEALTH, R_METRICS, R_COMPLETIONS };

typedef struct stream_st stream_st;

/* One request on one connection. */
typedef struct {
    srv *s;
    int route;
    double t0;
    char method[16], path[160];
    struct MHD_PostProcessor *pp;
    int pp_bad;               /* the body could not be parsed */
    srv_form form;
    int form_on;
    int answered;             /* a response is queued */
    int status;
    size_t bytes;
    int counted;              /* in s->inflight */
    char *body;               /* a JSON body (completions), up to 1 MB */
    size_t body_len;
    int body_big;
} conn;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- tokens per second: answered tokens in per-second buckets ---- */

#define RATE_SECONDS 10

static void add_tokens(srv *s, long long n) {
    atomic_fetch_add(&s->tokens, n);
    long now = (long)time(NULL);
    pthread_mutex_lock(&s->rate_mu);
    int b = (int)(now % SRV_RATE_BUCKETS);
    if (s->rate_sec[b] != now) {
        s->rate_sec[b] = now;
        s->rate_tok[b] = 0;
    }
    s->rate_tok[b] += n;
    pthread_mutex_unlock(&s->rate_mu);
}

/* Tokens answered per second over the last RATE_SECONDS whole seconds. */
static double token_rate(srv *s) {
    long now = (long)time(NULL);
    long long sum = 0;
    pthread_mutex_lock(&s->rate_mu);
    for (int b = 0; b < SRV_RATE_BUCKETS; b++)
        if (s->rate_sec[b] < now && s->rate_sec[b] >= now - RATE_SECONDS) sum += s->rate_tok[b];
    pthread_mutex_unlock(&s->rate_mu);
    return (double)sum / RATE_SECONDS;
}

/* ---- responses ---- */

static enum MHD_Result send_body(conn *k, struct MHD_Connection *c, int status, char *body,
                                 const char *ctype, const char *retry_after) {
    if (!body) {
        static char oom[] = "{\"error\": {\"message\": \"out of memory\", \"type\": \"server_error\", "
                            "\"param\": null, \"code\": null}}";
        body = strdup(oom);
        status = 500;
        ctype = "application/json";
        if (!body) return MHD_NO;
    }
    size_t n = strlen(body);
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    k->answered = 1;
    k->status = status;
    k->bytes = n;
    return ok;
}

/* A server-sent-events response read from reader(cls, ...); done(cls)
 * runs when it is over, and from here holds the request's in-flight count
 * (it runs at once, and the answer is MHD_NO, when the response cannot be
 * made). */
static enum MHD_Result send_stream(conn *k, struct MHD_Connection *c,
                                   MHD_ContentReaderCallback reader, void *cls,
                                   MHD_ContentReaderFreeCallback done) {
    k->counted = 0;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader,
                                                                  cls, done);
    if (!resp) {
        done(cls);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    k->answered = 1;
    k->status = 200;
    return ok;
}

static enum MHD_Result send_error(conn *k, struct MHD_Connection *c, const srv_error *e) {
    return send_body(k, c, e->status, srv_error_body(e), "application/json",
                     e->status == 503 ? "1" : NULL);
}

static enum MHD_Result fail(conn *k, struct MHD_Connection *c, int status, const char *type,
                            const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static enum MHD_Result fail(conn *k, struct MHD_Connection *c, int status, const char *type,
                            const char *param, const char *code, const char *fmt, ...) {
    srv_error e = {status, "", type, param, code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    return send_error(k, c, &e);
}

/* ---- models, health, metrics ---- */

static enum MHD_Result models(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    cJSON *j = cJSON_CreateObject(), *data = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "object", "list");
    for (int i = -1; i < s->o.n_aliases; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "id", i < 0 ? s->name : s->o.aliases[i]);
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", 0);
        cJSON_AddStringToObject(m, "owned_by", "encdec");
        cJSON_AddItemToArray(data, m);
    }
    cJSON_AddItemToObject(j, "data", data);
    char *body = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return send_body(k, c, 200, body, "application/json", NULL);
}

static long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return rss * sysconf(_SC_PAGESIZE);
}

static enum MHD_Result metrics(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    encdec_engine_stats st;
    encdec_engine_get_stats(s->engine, &st);
    size_t cap = 8192, n = 0;
    char *b = malloc(cap);
    if (!b) return send_body(k, c, 500, NULL, NULL, NULL);
#define OUT(...) do { int w_ = snprintf(b + n, cap - n, __VA_ARGS__); if (w_ > 0 && (size_t)w_ < cap - n) n += (size_t)w_; } while (0)
    OUT("# HELP encdec_requests_total HTTP requests answered, by status.\n"
        "# TYPE encdec_requests_total counter\n");
    for (int code = 100; code < 600; code++) {
        long long v = atomic_load(&s->by_status[code]);
        if (v) OUT("encdec_requests_total{status=\"%d\"} %lld\n", code, v);
    }
    OUT("# HELP encdec_inflight_requests Audio requests accepted and not yet answered.\n"
        "# TYPE encdec_inflight_requests gauge\nencdec_inflight_requests %d\n",
        atomic_load(&s->inflight));
    OUT("# HELP encdec_queue_length Requests waiting for a place in the engine.\n"
        "# TYPE encdec_queue_length gauge\nencdec_queue_length %d\n", st.waiting);
    OUT("# HELP encdec_active_requests Requests holding a place (decoding).\n"
        "# TYPE encdec_active_requests gauge\nencdec_active_requests %d\n", st.active);
    OUT("# HELP encdec_active_sequences Sequences in the last decode step.\n"
        "# TYPE encdec_active_sequences gauge\nencdec_active_sequences %d\n", st.last_rows);
    OUT("# HELP encdec_decode_steps_total Decoder steps (one pass for every request's sequences).\n"
        "# TYPE encdec_decode_steps_total counter\nencdec_decode_steps_total %lld\n", st.steps);
    OUT("# HELP encdec_decoded_sequences_total Sequences stepped (tokens computed).\n"
        "# TYPE encdec_decoded_sequences_total counter\nencdec_decoded_sequences_total %lld\n", st.rows);
    OUT("# HELP encdec_encoder_passes_total Encoder passes (Whisper: a 30 s window each; T5: one prompt, or several packed).\n"
        "# TYPE encdec_encoder_passes_total counter\nencdec_encoder_passes_total %lld\n", st.encodes);
    OUT("# HELP encdec_generated_tokens_total Tokens in the transcripts answered (rate(): tokens/s).\n"
        "# TYPE encdec_generated_tokens_total counter\nencdec_generated_tokens_total %lld\n",
        atomic_load(&s->tokens));
    OUT("# HELP encdec_tokens_per_second Tokens answered per second over the last %d seconds.\n"
        "# TYPE encdec_tokens_per_second gauge\nencdec_tokens_per_second %.2f\n", RATE_SECONDS,
        token_rate(s));
    OUT("# HELP encdec_audio_seconds_total Seconds of audio transcribed.\n"
        "# TYPE encdec_audio_seconds_total counter\nencdec_audio_seconds_total %.3f\n",
        atomic_load(&s->audio_ms) / 1000.0);
    OUT("# HELP encdec_step_batch_size Sequences per decoder step.\n"
        "# TYPE encdec_step_batch_size histogram\n");
    static const int le[] = {1, 2, 4, 8, 16, 32, 64, 128};
    long long cum = 0;
    for (int i = 0; i < 8; i++) {
        cum += st.batch_hist[i];
        OUT("encdec_step_batch_size_bucket{le=\"%d\"} %lld\n", le[i], cum);
    }
    cum += st.batch_hist[8];
    OUT("encdec_step_batch_size_bucket{le=\"+Inf\"} %lld\nencdec_step_batch_size_sum %lld\n"
        "encdec_step_batch_size_count %lld\n", cum, st.rows, st.steps);
    OUT("# HELP encdec_resident_memory_bytes Resident set size of the server.\n"
        "# TYPE encdec_resident_memory_bytes gauge\nencdec_resident_memory_bytes %ld\n", rss_bytes());
#undef OUT
    return send_body(k, c, 200, b, "text/plain; version=0.0.4", NULL);
}

/* ---- the audio endpoints ---- */

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size) {
    (void)kind;
    (void)content_type;
    (void)transfer_encoding;
    conn *k = cls;
    return srv_form_add(&k->form, key, filename, data, off, size) ? MHD_YES : MHD_NO;
}

/* The client closed its side (or the socket broke). */
static int client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd p = {ci->connect_fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* The events of a streamed response: appended by the requests' threads
 * (and the connection's), sent by the connection's. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *pending;            /* events not yet sent */
    size_t len, sent;
} ev_queue;

static void evq_init(ev_queue *q) {
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
}

static void evq_destroy(ev_queue *q) {
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->pending);
}

/* Appends ev (taking it; NULL: nothing). */
static void evq_push(ev_queue *q, char *ev) {
    if (!ev) return;
    pthread_mutex_lock(&q->mu);
    size_t n = strlen(ev);
    char *p = realloc(q->pending, q->len + n + 1);
    if (p) {
        memcpy(p + q->len, ev, n + 1);
        q->pending = p;
        q->len += n;
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    free(ev);
}

/* Copies up to max bytes not yet sent into buf; how many (0: none wait). */
static size_t evq_take(ev_queue *q, char *buf, size_t max) {
    pthread_mutex_lock(&q->mu);
    size_t n = q->len - q->sent < max ? q->len - q->sent : max;
    if (n) memcpy(buf, q->pending + q->sent, n);
    q->sent += n;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Waits until an event is pushed or ms pass. */
static void evq_wait(ev_queue *q, int ms) {
    pthread_mutex_lock(&q->mu);
    if (q->sent == q->len) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += ms * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&q->cv, &q->mu, &t);
    }
    pthread_mutex_unlock(&q->mu);
}

/* A streamed transcription: segments from the request's thread, events to
 * the connection's. */
struct stream_st {
    ev_queue ev;
    int finished;             /* the last event is in ev (the connection's thread's) */
    encdec_request *q;
    srv *s;
    conn *k;
    struct MHD_Connection *c;
    double deadline;
};

static int on_stream_segment(const encdec_segment *g, void *user) {
    stream_st *ss = user;
    evq_push(&ss->ev, srv_sse_delta(g->text));
    return 0;
}

static void stream_finish(stream_st *ss) {
    encdec_result *r = NULL;
    encdec_status st = encdec_request_wait(ss->q, &r);
    char *ev;
    if (!st) {
        ev = srv_sse_done(encdec_result_text(r));
        add_tokens(ss->s, encdec_result_n_tokens(r));
        atomic_fetch_add(&ss->s->audio_ms, (long long)(encdec_result_timings(r)->audio_seconds * 1000));
    } else {
        srv_error e = {500, "", "server_error", NULL, NULL};
        snprintf(e.message, sizeof e.message, "%s", encdec_last_error());
        ev = srv_sse_error(&e);
    }
    encdec_result_free(r);
    evq_push(&ss->ev, ev);
    ss->finished = 1;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_st *ss = cls;
    for (;;) {
        size_t n = evq_take(&ss->ev, buf, max);
        if (n) {
            ss->k->bytes += n;   /* k lives until the response is sent */
            return (ssize_t)n;
        }
        if (ss->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (encdec_request_done(ss->q)) {
            stream_finish(ss);
            continue;
        }
        if (client_gone(ss->c) || (ss->deadline > 0 && now_ms() > ss->deadline)) {
            encdec_request_cancel(ss->q);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        evq_wait(&ss->ev, 50);
    }
}

/* The response is done with (the connection's request may already be). */
static void stream_free(void *cls) {
    stream_st *ss = cls;
    encdec_request_free(ss->q);   /* cancels it if it still runs, waits for its thread */
    atomic_fetch_sub(&ss->s->inflight, 1);   /* the stream held the request's count */
    evq_destroy(&ss->ev);
    free(ss);
}

static int model_known(const srv *s, const char *name) {
    if (!strcmp(name, s->name)) return 1;
    for (int i = 0; i < s->o.n_aliases; i++)
        if (!strcmp(name, s->o.aliases[i])) return 1;
    return 0;
}

/* Waits for q: 1 done; 0 the client went away or the deadline passed (the
 * request cancelled; *timeout says which). */
static int wait_request(encdec_request *q, struct MHD_Connection *c, double deadline, int *timeout) {
    *timeout = 0;
    while (!encdec_request_done(q)) {
        if (client_gone(c)) {
            encdec_request_cancel(q);
            return 0;
        }
        if (deadline > 0 && now_ms() > deadline) {
            encdec_request_cancel(q);
            *timeout = 1;
            return 0;
        }
        usleep(20000);
    }
    return 1;
}

static enum MHD_Result audio(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    int translate = k->route == R_TRANSLATE;
    if (k->pp && MHD_destroy_post_processor(k->pp) != MHD_YES) k->pp_bad = 1;
    k->pp = NULL;
    srv_audio_req q;
    srv_error e;
    if (k->pp_bad && !k->form.too_large)
        return fail(k, c, 400, "invalid_request_error", NULL, NULL,
                    "the multipart/form-data body is malformed or cut short");
    if (!srv_form_check(&k->form, &q, &e)) return send_error(k, c, &e);
    if (!model_known(s, q.model))
        return fail(k, c, 404, "invalid_request_error", "model", "model_not_found",
                    "the model '%.100s' does not exist here; this server has '%s'", q.model, s->name);
    if (translate && !s->multilingual)
        return fail(k, c, 400, "invalid_request_error", "model", NULL,
                    "the model '%s' is English-only: it cannot translate", s->name);
    if (q.language && encdec_model_find_language(s->model, q.language) < 0)
        return fail(k, c, 400, "invalid_request_error", "language", NULL,
                    "unknown language '%.40s' for the model '%s'", q.language, s->name);
    if (s->o.form_only)
        return send_body(k, c, 200, strdup("{\"form\": \"ok\"}"), "application/json", NULL);
    float *pcm = NULL;
    size_t n = 0;
    encdec_status st = encdec_audio_load_memory(q.file, q.file_len, s->o.max_audio_s, &pcm, &n);
    if (st)
        return fail(k, c, 400, "invalid_request_error", "file", "invalid_audio",
                    "the file could not be read as audio: %s", encdec_last_error());
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.language = translate && !q.language ? NULL : q.language;
    tp.translate = translate;
    tp.initial_prompt = q.prompt;
    if (q.temperature > 0) tp.temperature = q.temperature;
    tp.word_timestamps = q.words;
    stream_st *ss = NULL;
    if (q.stream) {
        ss = calloc(1, sizeof *ss);
        if (!ss) {
            encdec_free(pcm);
            return fail(k, c, 500, "server_error", NULL, NULL, "out of memory");
        }
        evq_init(&ss->ev);
        ss->s = s;
        ss->k = k;
        ss->c = c;
        ss->deadline = s->o.timeout_s > 0 ? k->t0 + s->o.timeout_s * 1e3 : 0;
        tp.on_segment = on_stream_segment;
        tp.user = ss;
    }
    encdec_request *r = NULL;
    st = encdec_engine_transcribe(s->engine, pcm, n, &tp, &r);
    encdec_free(pcm);
    if (st) {
        if (ss) {
            evq_destroy(&ss->ev);
            free(ss);
        }
        return fail(k, c, st == ENCDEC_ERR_ARG ? 400 : 500,
                    st == ENCDEC_ERR_ARG ? "invalid_request_error" : "server_error", NULL, NULL,
                    "%s", encdec_last_error());
    }
    if (ss) {
        ss->q = r;
        return send_stream(k, c, stream_read, ss, stream_free);
    }
    int timeout;
    double deadline = s->o.timeout_s > 0 ? k->t0 + s->o.timeout_s * 1e3 : 0;
    if (!wait_request(r, c, deadline, &timeout)) {
        encdec_request_free(r);
        if (timeout)
            return fail(k, c, 504, "server_error", NULL, "timeout",
                        "the request took longer than the server's limit of %g s", s->o.timeout_s);
        k->status = 499;   /* the client closed the connection (nginx's code, for the log) */
        return MHD_NO;
    }
    encdec_result *res = NULL;
    st = encdec_request_wait(r, &res);
    encdec_request_free(r);
    if (st)
        return fail(k, c, st == ENCDEC_ERR_AUDIO || st == ENCDEC_ERR_ARG ? 400 : 500,
                    st == ENCDEC_ERR_AUDIO || st == ENCDEC_ERR_ARG ? "invalid_request_error"
                                                                    : "server_error",
                    NULL, NULL, "%s", encdec_last_error());
    add_tokens(s, encdec_result_n_tokens(res));
    atomic_fetch_add(&s->audio_ms, (long long)(encdec_result_timings(res)->audio_seconds * 1000));
    const char *ctype;
    char *body = srv_body(res, &q, translate ? "translate" : "transcribe", &ctype);
    encdec_result_free(res);
    return send_body(k, c, 200, body, ctype, NULL);
}

/* ---- completions (T5 family) ---- */

typedef struct comp_st comp_st;

/* on_token's user: a prompt of a streamed completion */
typedef struct {
    comp_st *cs;
    int prompt;
} comp_tok;

struct comp_st {
    srv_completion cp;
    encdec_request *q[64];
    encdec_result *r[64];
    int n_tok[64];
    comp_tok tok[64];
    char fin[64];             /* stream: the prompt's last events are out */
    char id[48];
    int tokens;               /* stream: choices go out token by token (not beams) */
    int finished;             /* stream: the last event ([DONE] or an error) is in ev */
    ev_queue ev;              /* stream: the requests' threads add tokens */
    srv *s;
    struct MHD_Connection *c;
    double deadline;
};

static void comp_free(comp_st *cs) {
    for (int i = 0; i < cs->cp.n_prompts; i++) {
        encdec_request_free(cs->q[i]);   /* cancels the ones still running; no callback after */
        encdec_result_free(cs->r[i]);
    }
    srv_completion_free(&cs->cp);
    evq_destroy(&cs->ev);
    free(cs);
}

/* A token of a streamed prompt (on its request's thread): its text as a
 * chunk of its choice. */
static int on_comp_token(int input, int sequence, int id, float lp, const char *text, void *user) {
    (void)input, (void)id, (void)lp;
    comp_tok *t = user;
    comp_st *cs = t->cs;
    if (*text)
        evq_push(&cs->ev, srv_completion_event(cs->id, cs->s->name,
                                           t->prompt * cs->cp.p.num_return_sequences + sequence,
                                           text, NULL));
    return 0;
}

/* The prompts whose requests ended: their last events (an error ends the
 * stream). Returns how many ended now. */
static int comp_reap(comp_st *cs) {
    int ended = 0;
    for (int i = 0; i < cs->cp.n_prompts && !cs->finished; i++) {
        if (cs->fin[i] || !encdec_request_done(cs->q[i])) continue;
        encdec_result *r = NULL;
        encdec_status st = encdec_request_wait(cs->q[i], &r);
        char *ev;
        if (st) {
            srv_error e = {500, "", "server_error", NULL, NULL};
            snprintf(e.message, sizeof e.message, "prompt %d: %s", i, encdec_last_error());
            ev = srv_sse_error(&e);
            cs->finished = 1;
        } else {
            ev = srv_completion_chunk(&cs->cp, r, i, cs->id, cs->s->name, !cs->tokens);
            add_tokens(cs->s, encdec_result_timings(r)->n_tokens);
        }
        encdec_result_free(r);
        evq_push(&cs->ev, ev ? ev : srv_sse_error(&(srv_error){500, "out of memory", "server_error", NULL, NULL}));
        cs->fin[i] = 1;
        ended++;
    }
    int all = !cs->finished;
    for (int i = 0; i < cs->cp.n_prompts && all; i++) all = cs->fin[i];
    if (all) {
        evq_push(&cs->ev, strdup("data: [DONE]\n\n"));
        cs->finished = 1;
    }
    return ended;
}

/* The stream: each choice's tokens as they come (greedy, sampling) or its
 * whole text once final (beam search), its finish_reason when its prompt
 * ends, then [DONE]. */
static ssize_t comp_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    comp_st *cs = cls;
    for (;;) {
        size_t n = evq_take(&cs->ev, buf, max);
        if (n) return (ssize_t)n;
        if (cs->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (comp_reap(cs)) continue;
        if (client_gone(cs->c) || (cs->deadline > 0 && now_ms() > cs->deadline))
            return MHD_CONTENT_READER_END_WITH_ERROR;   /* comp_free cancels the rest */
        evq_wait(&cs->ev, 20);
    }
}

static void comp_stream_free(void *cls) {
    comp_st *cs = cls;
    atomic_fetch_sub(&cs->s->inflight, 1);
    comp_free(cs);
}

static enum MHD_Result completions(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    if (k->body_big)
        return fail(k, c, 413, "invalid_request_error", NULL, "request_too_large",
                    "the request body is over 1 MB");
    comp_st *cs = calloc(1, sizeof *cs);
    if (!cs) return fail(k, c, 500, "server_error", NULL, NULL, "out of memory");
    evq_init(&cs->ev);
    srv_completion_id(cs->id, sizeof cs->id);
    cs->s = s;
    cs->c = c;
    cs->deadline = s->o.timeout_s > 0 ? k->t0 + s->o.timeout_s * 1e3 : 0;
    srv_error e;
    if (!srv_completion_parse(k->body ? k->body : "", k->body_len, &cs->cp, &e)) {
        comp_free(cs);
        return send_error(k, c, &e);
    }
    if (!model_known(s, cs->cp.model)) {
        enum MHD_Result r = fail(k, c, 404, "invalid_request_error", "model", "model_not_found",
                                 "the model '%.100s' does not exist here; this server has '%s'",
                                 cs->cp.model, s->name);
        comp_free(cs);
        return r;
    }
    cs->tokens = cs->cp.stream && cs->cp.p.num_beams == 1;
    for (int i = 0; i < cs->cp.n_prompts; i++) {
        encdec_generate_params p = cs->cp.p;
        if (cs->tokens) {
            cs->tok[i] = (comp_tok){cs, i};
            p.on_token = on_comp_token;
            p.user = &cs->tok[i];
        }
        encdec_status st = encdec_engine_generate(s->engine, cs->cp.prompts[i], &p, &cs->q[i]);
        if (st) {
            enum MHD_Result r = fail(k, c, st == ENCDEC_ERR_ARG ? 400 : 500,
                                     st == ENCDEC_ERR_ARG ? "invalid_request_error" : "server_error",
                                     NULL, NULL, "prompt %d: %s", i, encdec_last_error());
            comp_free(cs);
            return r;
        }
    }
    if (cs->cp.stream) return send_stream(k, c, comp_read, cs, comp_stream_free);
    for (int i = 0; i < cs->cp.n_prompts; i++) {
        int timeout;
        if (!wait_request(cs->q[i], c, cs->deadline, &timeout)) {
            comp_free(cs);
            if (timeout)
                return fail(k, c, 504, "server_error", NULL, "timeout",
                            "the request took longer than the server's limit of %g s", s->o.timeout_s);
            k->status = 499;
            return MHD_NO;
        }
        encdec_status st = encdec_request_wait(cs->q[i], &cs->r[i]);
        if (st) {
            enum MHD_Result r = fail(k, c, 500, "server_error", NULL, NULL, "prompt %d: %s", i,
                                     encdec_last_error());
            comp_free(cs);
            return r;
        }
        cs->n_tok[i] = encdec_result_timings(cs->r[i])->n_input_tokens;
        add_tokens(s, encdec_result_timings(cs->r[i])->n_tokens);
    }
    char *body = srv_completion_body(&cs->cp, cs->r, s->name, cs->n_tok);
    comp_free(cs);
    return send_body(k, c, 200, body, "application/json", NULL);
}

/* ---- routing ---- */

static int route_of(const char *url, int *known_path) {
    struct { const char *path; int route; } r[] = {
        {"/v1/audio/transcriptions", R_TRANSCRIBE}, {"/v1/audio/translations", R_TRANSLATE},
        {"/v1/models", R_MODELS}, {"/health", R_HEALTH}, {"/metrics", R_METRICS},
        {"/v1/completions", R_COMPLETIONS},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (!strcmp(url, r[i].path)) {
            *known_path = 1;
            return r[i].route;
        }
    *known_path = 0;
    return R_NONE;
}

static int is_post_route(int r) { return r == R_TRANSCRIBE || r == R_TRANSLATE || r == R_COMPLETIONS; }

/* The first call of a request: its route, the early refusals, the form. */
static enum MHD_Result begin(conn *k, struct MHD_Connection *c, const char *url, const char *method) {
    srv *s = k->s;
    int known;
    k->route = route_of(url, &known);
    int post = !strcmp(method, "POST");
    if (!known)
        return fail(k, c, 404, "invalid_request_error", NULL, "not_found", "no route %.100s %.100s",
                    method, url);
    if (post != is_post_route(k->route) || (!post && strcmp(method, "GET") && strcmp(method, "HEAD")))
        return fail(k, c, 405, "invalid_request_error", NULL, "method_not_allowed",
                    "%.100s does not take %.16s", url, method);
    if (k->route == R_COMPLETIONS && !s->text)
        return fail(k, c, 404, "invalid_request_error", "model", "model_not_found",
                    "the model '%s' transcribes speech: /v1/completions serves text-to-text "
                    "(T5) models", s->name);
    if ((k->route == R_TRANSCRIBE || k->route == R_TRANSLATE) && s->text)
        return fail(k, c, 404, "invalid_request_error", "model", "model_not_found",
                    "the model '%s' is text to text: use /v1/completions", s->name);
    if (!post) return MHD_YES;
    if (atomic_load(&s->draining))
        return fail(k, c, 503, "server_error", NULL, "shutting_down", "the server is shutting down");
    /* counted from here (draining waits for it); refused early when full, before the upload */
    int n_in = atomic_fetch_add(&s->inflight, 1);
    k->counted = 1;
    if (n_in >= s->o.max_queue)
        return fail(k, c, 503, "server_error", NULL, "server_overloaded",
                    "%d requests are being served; try again shortly", n_in);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end;
        unsigned long long v = strtoull(cl, &end, 10);
        if (v > s->o.max_upload + 65536)   /* room for the other fields */
            return fail(k, c, 413, "invalid_request_error", "file", "file_too_large",
                        "the request body of %llu bytes is over this server's limit of %zu bytes",
                        v, s->o.max_upload);
    }
    if (k->route == R_COMPLETIONS) return MHD_YES;   /* a JSON body, collected as it comes */
    srv_form_init(&k->form, s->o.max_upload);
    k->form_on = 1;
    k->pp = MHD_create_post_processor(c, 65536, post_iter, k);
    if (!k->pp)
        return fail(k, c, 400, "invalid_request_error", NULL, NULL,
                    "send the request as multipart/form-data (Content-Type %.100s)",
                    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type")
                        ? MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type") : "missing");
    return MHD_YES;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **ctx) {
    (void)version;
    conn *k = *ctx;
    if (!k) {
        k = calloc(1, sizeof *k);
        if (!k) return MHD_NO;
        k->s = cls;
        k->t0 = now_ms();
        snprintf(k->method, sizeof k->method, "%s", method);
        snprintf(k->path, sizeof k->path, "%s", url);
        *ctx = k;
        return begin(k, c, url, method);
    }
    if (*upload_size) {   /* a piece of the body */
        if (k->route == R_COMPLETIONS && !k->answered) {
            if (k->body_len + *upload_size > (1u << 20)) {
                k->body_big = 1;
            } else if (!k->body_big) {
                char *b = realloc(k->body, k->body_len + *upload_size + 1);
                if (b) {
                    memcpy(b + k->body_len, upload, *upload_size);
                    k->body = b;
                    k->body_len += *upload_size;
                    b[k->body_len] = 0;
                } else {
                    k->body_big = 1;
                }
            }
        } else if (!k->answered && k->pp && !k->pp_bad &&
                   MHD_post_process(k->pp, upload, *upload_size) != MHD_YES) {
            k->pp_bad = 1;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (k->answered) return MHD_YES;
    switch (k->route) {
    case R_MODELS: return models(k, c);
    case R_HEALTH:
        if (atomic_load(&k->s->draining))
            return send_body(k, c, 503, strdup("{\"status\": \"draining\"}"), "application/json", NULL);
        return send_body(k, c, 200, strdup("{\"status\": \"ok\"}"), "application/json", NULL);
    case R_METRICS: return metrics(k, c);
    case R_COMPLETIONS: return completions(k, c);
    default: return audio(k, c);
    }
}

static void completed(void *cls, struct MHD_Connection *c, void **ctx,
                      enum MHD_RequestTerminationCode why) {
    (void)c;
    srv *s = cls;
    conn *k = *ctx;
    if (!k) return;
    if (why != MHD_REQUEST_TERMINATED_COMPLETED_OK && k->status == 200) k->status = 499;
    if (!k->answered && !k->status) k->status = 499;
    if (k->status > 0 && k->status < 600) atomic_fetch_add(&s->by_status[k->status], 1);
    if (!s->o.quiet) {
        time_t t = time(NULL);
        struct tm tm;
        char ts[32];
        gmtime_r(&t, &tm);
        strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(stderr, "%s %s %s %d %zu %.1f ms\n", ts, k->method, k->path, k->status, k->bytes,
                now_ms() - k->t0);
    }
    if (k->pp) MHD_destroy_post_processor(k->pp);
    if (k->form_on) srv_form_free(&k->form);
    free(k->body);
    if (k->counted) atomic_fetch_sub(&s->inflight, 1);
    free(k);
    *ctx = NULL;
}

static void log_mhd(void *cls, const char *fmt, va_list ap) {
    srv *s = cls;
    if (s->o.quiet) return;
    fputs("encdec serve: libmicrohttpd: ", stderr);
    vfprintf(stderr, fmt, ap);
}

int srv_start(srv *s) {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC;
    const char *host = strcmp(s->o.host, "localhost") ? s->o.host : "127.0.0.1";
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)s->o.port);
        addr = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)s->o.port);
        addr = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        fprintf(stderr, "encdec serve: --host %s is not an IPv4 or IPv6 address\n", s->o.host);
        return -1;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)s->o.port, NULL, NULL, handler, s, MHD_OPTION_EXTERNAL_LOGGER, log_mhd,
        s, MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->o.max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "encdec serve: cannot listen on %s port %d: %s\n", s->o.host, s->o.port,
                strerror(errno));
        return -1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : s->o.port;
    s->daemon = d;
    return 0;
}

void srv_quiesce(srv *s) {
    if (!s->daemon) return;
    MHD_socket fd = MHD_quiesce_daemon(s->daemon);
    if (fd != MHD_INVALID_SOCKET) close(fd);
}

void srv_stop(srv *s) {
    if (s->daemon) MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}
