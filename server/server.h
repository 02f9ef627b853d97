/* server.h - encdec serve: an OpenAI-compatible HTTP server over the
 * engine (encdec_engine_*), on libmicrohttpd. Uses the public header (and
 * the program's option helpers, cli.h), never the library's insides.
 *
 *   serve.c    options, the model and engine, signals, draining, exit
 *   http.c     the daemon: routes, the audio endpoints (form, limits,
 *              waiting with disconnect and deadline, streaming), models,
 *              health, metrics, the access log
 *   form.c     the multipart fields of an audio request, checked
 *   completions.c  /v1/completions (T5 family): the JSON body, the bodies
 *   openai.c   response and error bodies in OpenAI's shapes
 *
 * Threads: libmicrohttpd runs a thread per connection; an audio request's
 * connection thread decodes the upload, submits it to the engine and waits
 * (watching the socket for a client that went away, and the deadline);
 * the engine decodes every request's steps together.
 */
#ifndef SRV_SERVER_H
#define SRV_SERVER_H

#include "encdec.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define SRV_MAX_ALIASES 8
#define SRV_RATE_BUCKETS 16

typedef struct {
    const char *host;         /* listen address (default 127.0.0.1) */
    int port;                 /* 0: any free port (printed) */
    int threads;              /* the engine's pool */
    int max_active;           /* requests decoded at once */
    int max_queue;            /* audio requests accepted at once (decoding + waiting); more: 503 */
    size_t max_upload;        /* bytes of an upload (413 beyond) */
    double timeout_s;         /* a request's deadline (504 beyond); 0: none */
    double max_audio_s;       /* longest audio accepted (400 beyond); 0: none */
    int max_connections;      /* libmicrohttpd's connection limit */
    const char *aliases[SRV_MAX_ALIASES];   /* other model names accepted ("whisper-1") */
    int n_aliases;
    int quiet;                /* no access log */
    int form_only;            /* answer audio requests after checking the form, without
                                 decoding (the fuzz harness of the form path: no engine) */
} srv_opts;

typedef struct srv srv;

struct srv {
    srv_opts o;
    const encdec_model *model;
    encdec_engine *engine;
    char name[256];           /* the model's id: its directory's name */
    int multilingual;
    int text;                 /* a T5-family model: /v1/completions, no audio */
    void *daemon;             /* struct MHD_Daemon */
    int port;                 /* bound */
    atomic_int inflight;      /* audio requests accepted, not yet answered */
    atomic_int draining;      /* SIGTERM: new requests get 503 */
    atomic_llong by_status[600];
    atomic_llong tokens, audio_ms, requests_done;
    pthread_mutex_t rate_mu;  /* tokens answered per second (the last seconds' buckets) */
    long rate_sec[SRV_RATE_BUCKETS];
    long long rate_tok[SRV_RATE_BUCKETS];
};

/* http.c */
int srv_start(srv *s);        /* 0: listening on s->port */
void srv_stop(srv *s);        /* stops accepting, waits for connections, frees the daemon */
void srv_quiesce(srv *s);     /* stops accepting new connections */

int srv_main(int argc, char **argv);

#endif
