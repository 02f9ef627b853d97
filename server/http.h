/* http.h - the pieces of encdec serve's HTTP side shared by its files
 * (server.h has the map): one request's state and its responses (http.c),
 * the watcher that parks connections whose answer is not ready and keeps
 * every connection's deadlines (park.c), the event queue of a streamed
 * answer (sse.c), the endpoints (ep_audio.c, ep_text.c).
 *
 * libmicrohttpd runs in its event-driven mode: a small pool of threads
 * serves every connection, so no handler may block. A request whose answer
 * is not ready suspends its connection and parks it (srv_park); the watcher
 * thread looks at the parked ones every few milliseconds and resumes each
 * when its request is done, its stream has events, its deadline passed or
 * its client hung up; libmicrohttpd then calls the handler (or the stream's
 * reader) again, which answers at once.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include "server.h"
#include "form.h"

#include <microhttpd.h>
#include <stddef.h>

/* ---- park.c: connections waiting for their answer, and every connection's
 * deadlines and counts ---- */

typedef struct srv_park srv_park;
/* 1 when the parked connection should go on now (its answer is ready). */
typedef int (*srv_ready_fn)(void *ctx, double now_ms);

struct srv_park {
    struct MHD_Connection *c;
    srv_ready_fn ready;
    void *ctx;
    double deadline;          /* ms (srv_now_ms); 0: none */
    double next_gone;         /* when to look at the socket for a hang-up next */
    int gone;                 /* resumed because the client hung up */
    int late;                 /* resumed because the deadline passed */
    srv_park *prev, *next;
};

/* Suspends c and parks it (call from the access handler or a content
 * reader only, which then returns at once: MHD_YES, or 0 bytes). The
 * watcher resumes it when ready(ctx) holds, the client hangs up (p->gone)
 * or the deadline passes (p->late); p is the caller's until then. */
void srv_park_conn(srv *s, srv_park *p, struct MHD_Connection *c, srv_ready_fn ready, void *ctx,
                   double deadline);

/* A connection as libmicrohttpd reports it (MHD_OPTION_NOTIFY_CONNECTION):
 * counted, its client's address kept, and cut off (its socket shut down)
 * when its request's headers or body take too long. */
typedef struct srv_conn srv_conn;
void srv_conn_notify(void *cls, struct MHD_Connection *c, void **socket_ctx,
                     enum MHD_ConnectionNotificationCode code);
/* The request's headers are in: 0 when this connection may go on, else
 * the HTTP status to refuse it with (503: over the total or per-client
 * limit) and a message in why[n]. */
int srv_conn_admit(srv *s, struct MHD_Connection *c, char *why, size_t n);
/* Its body is in (no deadline any more) / its answer is sent (the next
 * request's headers are timed from now). */
void srv_conn_body_done(struct MHD_Connection *c);
void srv_conn_request_done(struct MHD_Connection *c);
/* Its socket is a WebSocket's now: no more deadlines from the watcher. */
void srv_conn_upgraded(struct MHD_Connection *c);
/* 1 when the watcher cut this connection off (a deadline). */
int srv_conn_was_cut(struct MHD_Connection *c);

/* Starts / stops the watcher thread (stopping resumes every parked
 * connection as hung up). */
int srv_watch_start(srv *s);
void srv_watch_stop(srv *s);

double srv_now_ms(void);

/* ---- sse.c: the events of a streamed answer ---- */

/* Appended by the requests' threads, taken by the connection's reader. */
typedef struct {
    pthread_mutex_t mu;
    char *pending;            /* events not yet sent */
    size_t len, sent;
} ev_queue;

void evq_init(ev_queue *q);
void evq_destroy(ev_queue *q);
/* Appends ev (taking it; NULL: nothing). */
void evq_push(ev_queue *q, char *ev);
/* Copies up to max bytes not yet sent into buf; how many (0: none wait). */
size_t evq_take(ev_queue *q, char *buf, size_t max);
/* 1 when bytes wait. */
int evq_ready(ev_queue *q);

/* A stream's turn with nothing queued: 1 when its deadline passed (the
 * timeout's error event is queued: the stream ends after it); else the
 * keep-alive comment into buf when --keepalive's seconds passed since the
 * last bytes (*n its length; *last_sent now), or *n = 0 (the caller parks). */
int srv_sse_idle(ev_queue *q, const srv *s, double deadline, double now, double *last_sent,
                 char *buf, size_t max, size_t *n);
#define SRV_SSE_KEEPALIVE ": keep-alive\n\n"   /* an SSE comment: clients skip it */

/* ---- http.c: one request; reply.c: its answers ---- */

enum { R_NONE, R_TRANSCRIBE, R_TRANSLATE, R_MODELS, R_HEALTH, R_METRICS, R_COMPLETIONS,
       R_INFERENCE /* whisper.cpp's: a transcription, translate as a field */,
       R_LOAD /* whisper.cpp's: another model (ep_load.c) */,
       R_REALTIME /* a WebSocket: live transcription (ep_realtime.c) */,
       R_LT_TRANSLATE, R_LT_LANGUAGES, R_LT_DETECT, R_LT_SETTINGS, R_LT_SUGGEST,
       R_LT_FILE, R_LT_DOWNLOAD /* LibreTranslate's (ep_lt.c, ep_lt_file.c) */ };

typedef struct {
    srv *s;
    int route;
    double t0;
    char method[16], path[160];
    struct MHD_PostProcessor *pp;
    int pp_bad;               /* the body could not be parsed */
    srv_form form;
    int form_on;
    int raw;                  /* the body is the audio itself (Content-Type audio/...) */
    uint64_t raw_off;         /* its bytes so far */
    int answered;             /* a response is queued */
    int close;                /* the response closes the connection */
    int status;               /* for the log and the metrics */
    size_t bytes;
    int counted;              /* in s->inflight */
    char *body;               /* a JSON body (completions), up to 1 MB */
    size_t body_len;
    int body_big;
    void *ep;                 /* the endpoint's state while its request runs */
    void (*ep_free)(void *);  /* frees it (when the request ends without an answer) */
    srv_park park;
} conn;

enum MHD_Result srv_send_body(conn *k, struct MHD_Connection *c, int status, char *body,
                              const char *ctype, const char *retry_after);
/* The same with one more header (name, value; NULL: none). */
enum MHD_Result srv_send_body_h(conn *k, struct MHD_Connection *c, int status, char *body,
                                const char *ctype, const char *header, const char *value);
enum MHD_Result srv_send_error(conn *k, struct MHD_Connection *c, const srv_error *e);
enum MHD_Result srv_fail_req(conn *k, struct MHD_Connection *c, int status, const char *type,
                             const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* body[n] (malloc'd, taken) as the response, with one more header (NULL: none). */
enum MHD_Result srv_send_bytes(conn *k, struct MHD_Connection *c, int status, void *body, size_t n,
                               const char *ctype, const char *header, const char *value);
/* A server-sent-events response read from reader(cls, ...); done(cls) runs
 * when it is over and from here holds the request's in-flight count. */
enum MHD_Result srv_send_stream(conn *k, struct MHD_Connection *c,
                                MHD_ContentReaderCallback reader, void *cls,
                                MHD_ContentReaderFreeCallback done);
int srv_model_known(const srv *s, const char *name);
void srv_add_tokens(srv *s, long long n);
/* Tokens answered per second over the last SRV_RATE_SECONDS whole seconds
 * (the metrics). */
#define SRV_RATE_SECONDS 10
double srv_token_rate(srv *s);

/* ---- the endpoints: called for the request's last call, and again each
 * time its parked connection is resumed ---- */
enum MHD_Result srv_ep_audio(conn *k, struct MHD_Connection *c);        /* ep_audio.c */
/* ep_lt.c: LibreTranslate's POST /translate and GET /languages. */
enum MHD_Result srv_ep_translate(conn *k, struct MHD_Connection *c);
enum MHD_Result srv_ep_languages(conn *k, struct MHD_Connection *c);
/* POST /detect: refused in LibreTranslate's shape (encdec detects no text languages). */
enum MHD_Result srv_ep_detect(conn *k, struct MHD_Connection *c);
/* GET /frontend/settings: what LibreTranslate's own page and clients read
 * (no keys, no suggestions; the file formats; the first pair); POST
 * /suggest: refused as a LibreTranslate server with suggestions off. */
enum MHD_Result srv_ep_lt_settings(conn *k, struct MHD_Connection *c);
enum MHD_Result srv_ep_lt_off(conn *k, struct MHD_Connection *c);
/* ep_lt_file.c: POST /translate_file (a form: file, source, target) and
 * GET /download_file/<name>. */
enum MHD_Result srv_ep_translate_file(conn *k, struct MHD_Connection *c);
enum MHD_Result srv_ep_download_file(conn *k, struct MHD_Connection *c);
enum MHD_Result srv_ep_completions(conn *k, struct MHD_Connection *c);  /* ep_text.c */
enum MHD_Result srv_ep_load(conn *k, struct MHD_Connection *c);         /* ep_load.c */
enum MHD_Result srv_ep_realtime(conn *k, struct MHD_Connection *c);     /* ep_realtime.c */

#endif
