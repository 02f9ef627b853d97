/* server.h - encdec serve: an OpenAI-compatible HTTP server over the
 * engine (encdec_engine_*), on libmicrohttpd. Uses the public header (and
 * the program's option helpers, cli.h), never the library's insides.
 *
 *   serve.c    options, the model and engine, signals, draining, exit
 *   http.c     the daemon, the request's life (refusals, body, endpoint,
 *              access log), models, health, metrics
 *   reply.c    the responses (bodies, errors, streams), the token rate
 *   park.c     the watcher: connections parked while their answer is not
 *              ready; every connection's count and deadlines
 *   sse.c      the event queue of a streamed answer
 *   ep_audio.c the audio endpoints; ep_text.c /v1/completions; ep_load.c
 *              /load (another model in place of the served one);
 *              ep_realtime.c /v1/realtime (live transcription over a
 *              WebSocket: ws.c, on wslay; a thread per session)
 *   form.c     the multipart fields of an audio request, checked
 *   completions.c  /v1/completions' JSON body and response bodies
 *   openai.c   response and error bodies in OpenAI's shapes
 *   (http.h: what these files share)
 *
 * Threads: libmicrohttpd's event-driven mode (epoll) with a small pool of
 * threads serves every connection, however many: none waits. An upload is
 * collected as it arrives; the request is handed to the engine, which reads
 * the audio on the request's own thread once it holds a place; the
 * connection is suspended meanwhile and parked, and one watcher thread
 * resumes it when the answer is ready (or events of a stream wait, or its
 * deadline passed, or its client hung up). The engine decodes every
 * request's steps together.
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
    int max_connections;      /* open connections at most (503 beyond) */
    const char *aliases[SRV_MAX_ALIASES];   /* other model names accepted ("whisper-1") */
    int n_aliases;
    int quiet;                /* no access log */
    int form_only;            /* answer audio requests after checking the form, without
                                 decoding (the fuzz harness of the form path: no engine) */
    int max_per_client;       /* open connections from one address at most (503 beyond); 0: any */
    double header_timeout_s;  /* a request's headers must be in within this (connection cut);
                                 also how long an idle kept-alive connection stays; 0: none */
    double body_timeout_s;    /* its body within this once its headers are in; 0: none */
    int idle_timeout_s;       /* a connection silent this long is closed (libmicrohttpd's) */
    int http_threads;         /* libmicrohttpd's pool (0: 2) */
    int allow_load;           /* POST /load may change the model (ep_load.c) */
    int no_files;             /* POST /translate_file refused (403) */
    int max_live;             /* live sessions (GET /v1/realtime) open at once (503 beyond) */
    double keepalive_s;       /* a stream silent this long gets a comment line (SSE) */
} srv_opts;

typedef struct srv srv;

struct srv {
    srv_opts o;
    /* the model served: changed by /load (ep_load.c) only when no request
     * is in flight (swapping refuses new ones); readers outside a request
     * (models, metrics) take model_mu */
    const encdec_model *model;
    encdec_engine *engine;
    encdec_model_params mp;   /* how models are loaded (-m and /load) */
    encdec_kv_type kv;
    pthread_mutex_t model_mu;
    /* -m's resolution of a path or name (the program's: serve.c sets them);
     * NULL with the reason in model_why() */
    const char *(*model_path)(const char *given, char *buf, size_t cap);
    const char *(*model_why)(void);
    atomic_int loading;       /* a /load at work */
    atomic_int swapping;      /* its swap: new requests get 503 model_loading */
    const encdec_vad *vad;    /* vad_filter's model; NULL: none installed (400) */
    const char *langid_path;  /* the text language identifier's directory (POST /detect, source
                                 "auto"); NULL: none installed */
    encdec_langid *langid;    /* loaded at its first use (langid_mu): 45 MB a server that
                                 never detects does not hold */
    int langid_failed;        /* its load failed (logged once; 500s after) */
    pthread_mutex_t langid_mu;
    struct srv_files *files;  /* /translate_file's results (lt_files.h) */
    char name[256];           /* the model's id: its directory's name */
    int multilingual;
    int text;                 /* a T5-family model: /v1/completions, no audio */
    void *daemon;             /* struct MHD_Daemon */
    int port;                 /* bound */
    atomic_int inflight;      /* audio requests accepted, not yet answered; live sessions open */
    atomic_int live;          /* live sessions open (ep_realtime.c) */
    atomic_int draining;      /* SIGTERM: new requests get 503 */
    atomic_llong by_status[600];
    atomic_llong tokens, audio_ms, requests_done;
    pthread_mutex_t rate_mu;  /* tokens answered per second (the last seconds' buckets) */
    long rate_sec[SRV_RATE_BUCKETS];
    long long rate_tok[SRV_RATE_BUCKETS];
    /* park.c's: under watch_mu */
    pthread_mutex_t watch_mu;
    pthread_t watch_th;
    int watching, watch_stop;
    void *parked;             /* srv_park list: suspended connections */
    void *conns;              /* srv_conn list: every open connection */
    int n_conns;
    long long n_cut;          /* connections cut off at a deadline */
};

/* http.c */
int srv_start(srv *s);        /* 0: listening on s->port */
void srv_stop(srv *s);        /* stops the watcher and the daemon (connections closed) */

int srv_main(int argc, char **argv);
/* A model's id: the last component of its path (reply.c). */
void srv_model_name(const char *path, char *out, size_t cap);

#endif
