/* http.c - the HTTP side of encdec serve (server.h, http.h): the daemon in
 * libmicrohttpd's event-driven mode, the request's life (refusals before
 * the body, the body collected, the endpoint, the access log), models,
 * health, metrics. Above the endpoints; the responses they send are
 * reply.c's. */
#include "http.h"
#include "openai.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_URL 8192          /* bytes of a request's path: 414 beyond */
#define MAX_HEADERS 32768     /* bytes of its headers: 431 beyond */
#define MHD_POOL (128 << 10)  /* libmicrohttpd's memory per connection: past ours above */

/* ---- models, health, metrics ---- */

static enum MHD_Result models(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    cJSON *j = cJSON_CreateObject(), *data = cJSON_CreateArray();
    pthread_mutex_lock(&s->model_mu);   /* /load may change the name */
    cJSON_AddStringToObject(j, "object", "list");
    for (int i = -1; i < s->o.n_aliases; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "id", i < 0 ? s->name : s->o.aliases[i]);
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", 0);
        cJSON_AddStringToObject(m, "owned_by", "encdec");
        cJSON_AddItemToArray(data, m);
    }
    pthread_mutex_unlock(&s->model_mu);
    cJSON_AddItemToObject(j, "data", data);
    char *body = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return srv_send_body(k, c, 200, body, "application/json", NULL);
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
    pthread_mutex_lock(&s->model_mu);   /* /load may change the engine */
    encdec_engine_get_stats(s->engine, &st);
    pthread_mutex_unlock(&s->model_mu);
    size_t cap = 8192, n = 0;
    char *b = malloc(cap);
    if (!b) return srv_send_body(k, c, 500, NULL, NULL, NULL);
#define OUT(...) do { int w_ = snprintf(b + n, cap - n, __VA_ARGS__); if (w_ > 0 && (size_t)w_ < cap - n) n += (size_t)w_; } while (0)
    OUT("# HELP encdec_requests_total HTTP requests answered, by status.\n"
        "# TYPE encdec_requests_total counter\n");
    for (int code = 100; code < 600; code++) {
        long long v = atomic_load(&s->by_status[code]);
        if (v) OUT("encdec_requests_total{status=\"%d\"} %lld\n", code, v);
    }
    pthread_mutex_lock(&s->watch_mu);
    int open_conns = s->n_conns;
    long long cut = s->n_cut;
    pthread_mutex_unlock(&s->watch_mu);
    OUT("# HELP encdec_open_connections Connections open now.\n"
        "# TYPE encdec_open_connections gauge\nencdec_open_connections %d\n", open_conns);
    OUT("# HELP encdec_connections_cut_total Connections cut off: headers or body too slow.\n"
        "# TYPE encdec_connections_cut_total counter\nencdec_connections_cut_total %lld\n", cut);
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
        "# TYPE encdec_tokens_per_second gauge\nencdec_tokens_per_second %.2f\n", SRV_RATE_SECONDS,
        srv_token_rate(s));
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
    return srv_send_body(k, c, 200, b, "text/plain; version=0.0.4", NULL);
}

/* ---- routing ---- */

static int route_of(const char *url, int *known_path) {
    struct { const char *path; int route; } r[] = {
        {"/v1/audio/transcriptions", R_TRANSCRIBE}, {"/v1/audio/translations", R_TRANSLATE},
        {"/inference", R_INFERENCE}, {"/load", R_LOAD},
        {"/v1/models", R_MODELS}, {"/health", R_HEALTH}, {"/metrics", R_METRICS},
        {"/v1/completions", R_COMPLETIONS}, {"/v1/realtime", R_REALTIME},
        {"/translate", R_LT_TRANSLATE}, {"/languages", R_LT_LANGUAGES}, {"/detect", R_LT_DETECT},
        {"/frontend/settings", R_LT_SETTINGS}, {"/suggest", R_LT_SUGGEST}, {"/translate_file", R_LT_FILE},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (!strcmp(url, r[i].path)) {
            *known_path = 1;
            return r[i].route;
        }
    *known_path = !strncmp(url, "/download_file/", 15);   /* LibreTranslate's, a name after it */
    if (*known_path) return R_LT_DOWNLOAD;
    return R_NONE;
}

static int is_audio_route(int r) { return r == R_TRANSCRIBE || r == R_TRANSLATE || r == R_INFERENCE; }
static int is_post_route(int r) {
    return is_audio_route(r) || r == R_COMPLETIONS || r == R_LOAD || r == R_LT_TRANSLATE || r == R_LT_DETECT ||
           r == R_LT_SUGGEST || r == R_LT_FILE;
}
/* A body collected whole (JSON, or LibreTranslate's form), up to 1 MB. */
static int whole_body_route(int r) {
    return r == R_COMPLETIONS || r == R_LT_TRANSLATE || r == R_LT_DETECT || r == R_LT_SUGGEST;
}

/* A body that is the audio itself: audio/..., or application/octet-stream. */
static int raw_audio_type(const char *ct) {
    return ct && (!strncasecmp(ct, "audio/", 6) || !strncasecmp(ct, "application/octet-stream", 24));
}

/* A query argument of a raw-audio request: a field of its form. */
static enum MHD_Result query_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
    (void)kind;
    srv_form *f = cls;
    if (key && value && strcmp(key, "file")) srv_form_add(f, key, NULL, value, 0, strlen(value));
    return MHD_YES;
}

/* The request's headers, counted: their bytes, and its Content-Length
 * headers (how many; one that is not a plain decimal number, or two that
 * differ, set bad_length). */
typedef struct {
    size_t bytes;
    int n_length, bad_length;
    unsigned long long length;
} head_sum;

static enum MHD_Result sum_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value) {
    (void)kind;
    head_sum *h = cls;
    h->bytes += strlen(key) + (value ? strlen(value) : 0) + 4;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) return MHD_YES;
    const char *v = value ? value : "";
    while (*v == ' ' || *v == '\t') v++;
    int digits = *v >= '0' && *v <= '9';
    char *end = (char *)v;
    errno = 0;
    unsigned long long n = digits ? strtoull(v, &end, 10) : 0;
    while (*end == ' ' || *end == '\t') end++;
    if (!digits || errno == ERANGE || *end || (h->n_length > 0 && n != h->length)) h->bad_length = 1;
    h->length = n;
    h->n_length++;
    return MHD_YES;
}

/* The form's pieces, as libmicrohttpd's post processor hands them over. */
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

/* A Content-Length that is not a number: libmicrohttpd 0.9.75 has queued
 * its own 400 (an HTML page) and then sends its status line and headers
 * twice. Nothing of it has gone out yet (this is its thread, before any
 * write): the answer goes out here, once, in OpenAI's shape, and the
 * connection is closed without libmicrohttpd's. */
static enum MHD_Result refuse_raw(conn *k, struct MHD_Connection *c, const char *why) {
    srv_error e = {400, "", "invalid_request_error", NULL, "invalid_content_length"};
    snprintf(e.message, sizeof e.message, "%s", why);
    char *body = srv_error_body(&e);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (body && ci) {
        char head[256];
        size_t nb = strlen(body);
        int nh = snprintf(head, sizeof head, "HTTP/1.1 400 Bad Request\r\nContent-Type: "
                          "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", nb);
        if (send(ci->connect_fd, head, (size_t)nh, MSG_NOSIGNAL) == nh) {
            if (send(ci->connect_fd, body, nb, MSG_NOSIGNAL) == (ssize_t)nb) k->bytes = nb;
        }
    }
    free(body);
    k->answered = 1;
    k->status = 400;
    return MHD_NO;
}

/* The first call of a request (its headers are in): its route, the early
 * refusals, the form. */
static enum MHD_Result begin(conn *k, struct MHD_Connection *c, const char *url, const char *method) {
    srv *s = k->s;
    char why[256];
    int refuse = srv_conn_admit(s, c, why, sizeof why);
    if (refuse) {
        k->close = 1;
        return srv_fail_req(k, c, refuse, "server_error", NULL, "server_overloaded", "%s", why);
    }
    head_sum h = {0, 0, 0, 0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, sum_header, &h);
    if (h.bad_length && h.n_length == 1)   /* libmicrohttpd answered already: badly */
        return refuse_raw(k, c, "Content-Length is not a number of bytes");
    if (h.bad_length || h.n_length > 1) {   /* smuggling past a proxy that reads another one */
        k->close = 1;
        return srv_fail_req(k, c, 400, "invalid_request_error", NULL, "invalid_content_length",
                            "the request has more than one Content-Length header");
    }
    if (strlen(url) > MAX_URL) {
        k->close = 1;
        return srv_fail_req(k, c, 414, "invalid_request_error", NULL, "uri_too_long",
                            "the request's path is longer than %d bytes", MAX_URL);
    }
    if (h.bytes > MAX_HEADERS) {
        k->close = 1;
        return srv_fail_req(k, c, 431, "invalid_request_error", NULL, "headers_too_large",
                            "the request's headers are larger than %d bytes", MAX_HEADERS);
    }
    int known;
    k->route = route_of(url, &known);
    int post = !strcmp(method, "POST");
    if (!known)
        return srv_fail_req(k, c, 404, "invalid_request_error", NULL, "not_found",
                            "no route %.100s %.100s", method, url);
    if (post != is_post_route(k->route) || (!post && strcmp(method, "GET") && strcmp(method, "HEAD")))
        return srv_fail_req(k, c, 405, "invalid_request_error", NULL, "method_not_allowed",
                            "%.100s does not take %.16s", url, method);
    if (!post) return MHD_YES;
    if (atomic_load(&s->draining)) {
        k->close = 1;
        return srv_fail_req(k, c, 503, "server_error", NULL, "shutting_down",
                            "the server is shutting down");
    }
    /* counted from here (draining and /load's swap wait for it; the model
     * stays while it is); refused early when full, before the upload */
    int n_in = atomic_fetch_add(&s->inflight, 1);
    k->counted = 1;
    if (atomic_load(&s->swapping) && k->route != R_LOAD)   /* a second /load: 409 */
        return srv_fail_req(k, c, 503, "server_error", NULL, "model_loading",
                            "the server is changing its model; try again in a moment");
    if (k->route == R_COMPLETIONS && !s->text)
        return srv_fail_req(k, c, 404, "invalid_request_error", "model", "model_not_found",
                            "the model '%s' transcribes speech: /v1/completions serves "
                            "text-to-text (T5) models", s->name);
    if (is_audio_route(k->route) && s->text)
        return srv_fail_req(k, c, 404, "invalid_request_error", "model", "model_not_found",
                            "the model '%s' is text to text: use /v1/completions", s->name);
    if (n_in >= s->o.max_queue)
        return srv_fail_req(k, c, 503, "server_error", NULL, "server_overloaded",
                            "%d requests are being served; try again shortly", n_in);
    if (h.n_length && h.length > s->o.max_upload + 65536)   /* room for the other fields */
        return srv_fail_req(k, c, 413, "invalid_request_error", "file", "file_too_large",
                            "the request body of %llu bytes is over this server's limit of %zu bytes",
                            h.length, s->o.max_upload);
    if (whole_body_route(k->route)) return MHD_YES;   /* collected as it comes */
    srv_form_init(&k->form, s->o.max_upload);
    k->form_on = 1;
    if (k->route != R_LT_FILE && raw_audio_type(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"))) {
        k->raw = 1;   /* the body is the file; the other fields come in the query */
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_field, &k->form);
        return MHD_YES;
    }
    k->pp = MHD_create_post_processor(c, 65536, post_iter, k);
    if (!k->pp && k->route == R_LT_FILE) {   /* its endpoint answers in LibreTranslate's shape */
        k->pp_bad = 1;
        return MHD_YES;
    }
    if (!k->pp) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        return srv_fail_req(k, c, 400, "invalid_request_error", NULL, NULL,
                            "send the request as multipart/form-data, or the audio itself as "
                            "the body (Content-Type audio/...; got %.100s)",
                            ct ? ct : "missing");
    }
    return MHD_YES;
}

/* A piece of the body: the form's fields, or the JSON of a completion. */
static void body_piece(conn *k, const char *upload, size_t n) {
    if (k->answered) return;
    if (whole_body_route(k->route)) {
        if (k->body_len + n > (1u << 20)) {
            k->body_big = 1;
        } else if (!k->body_big) {
            char *b = realloc(k->body, k->body_len + n + 1);
            if (b) {
                memcpy(b + k->body_len, upload, n);
                k->body = b;
                k->body_len += n;
                b[k->body_len] = 0;
            } else {
                k->body_big = 1;
            }
        }
    } else if (k->raw) {
        srv_form_add(&k->form, "file", "upload", upload, k->raw_off, n);
        k->raw_off += n;
    } else if (k->pp && !k->pp_bad && MHD_post_process(k->pp, upload, n) != MHD_YES) {
        k->pp_bad = 1;
    }
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
        k->t0 = srv_now_ms();
        snprintf(k->method, sizeof k->method, "%s", method);
        snprintf(k->path, sizeof k->path, "%s", url);
        *ctx = k;
        return begin(k, c, url, method);
    }
    if (*upload_size) {
        body_piece(k, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (k->answered) return MHD_YES;
    if (!k->ep) srv_conn_body_done(c);
    switch (k->route) {
    case R_MODELS: return models(k, c);
    case R_HEALTH:
        if (atomic_load(&k->s->draining))
            return srv_send_body(k, c, 503, strdup("{\"status\": \"draining\"}"), "application/json", NULL);
        return srv_send_body(k, c, 200, strdup("{\"status\": \"ok\"}"), "application/json", NULL);
    case R_METRICS: return metrics(k, c);
    case R_COMPLETIONS: return srv_ep_completions(k, c);
    case R_LT_TRANSLATE: return srv_ep_translate(k, c);
    case R_LT_LANGUAGES: return srv_ep_languages(k, c);
    case R_LT_DETECT: return srv_ep_detect(k, c);
    case R_LT_SETTINGS: return srv_ep_lt_settings(k, c);
    case R_LT_SUGGEST: return srv_ep_lt_off(k, c);
    case R_LT_FILE: return srv_ep_translate_file(k, c);
    case R_LT_DOWNLOAD: return srv_ep_download_file(k, c);
    case R_LOAD: return srv_ep_load(k, c);
    case R_REALTIME:
#if ENCDEC_WITH_WS
        return srv_ep_realtime(k, c);
#else
        return srv_fail_req(k, c, 501, "server_error", NULL, "not_implemented",
                            "this encdec was built without libwslay and nettle: no /v1/realtime");
#endif
    default: return srv_ep_audio(k, c);
    }
}

static void completed(void *cls, struct MHD_Connection *c, void **ctx,
                      enum MHD_RequestTerminationCode why) {
    srv *s = cls;
    conn *k = *ctx;
    srv_conn_request_done(c);
    if (!k) return;
    if (!k->answered && srv_conn_was_cut(c)) k->status = 408;   /* its body came too slowly */
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
                srv_now_ms() - k->t0);
    }
    if (k->ep_free) k->ep_free(k->ep);
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

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The path's %XX escapes decoded in place, but for %00: a NUL would end
 * the path early ("/v1/audio/transcriptions%00junk" would be the
 * transcription route), so it stays as written and routes nowhere. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls, (void)c;
    char *w = s;
    for (const char *r = s; *r; r++) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi | lo)) {
            *w++ = (char)(hi * 16 + lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

/* Room for the connections: the soft limit on open files raised toward the
 * hard one, the connection limit lowered to what fits. */
static void fit_files(srv *s) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    rlim_t want = (rlim_t)s->o.max_connections + 256;
    if (rl.rlim_cur < want) {
        rlim_t old = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) rl.rlim_cur = old;
    }
    if (rl.rlim_cur < want && rl.rlim_cur > 512) {
        int fit = (int)rl.rlim_cur - 256;
        fprintf(stderr, "encdec serve: %d open files at most here: --max-connections %d, not %d\n",
                (int)rl.rlim_cur, fit, s->o.max_connections);
        s->o.max_connections = fit;
    }
}

int srv_start(srv *s) {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    struct sockaddr *addr;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG;
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
    pthread_mutex_init(&s->watch_mu, NULL);
    fit_files(s);
    /* libmicrohttpd's own limits sit past ours, which answer in OpenAI's
     * shape (503 with Retry-After) where it could only refuse */
    unsigned per_ip = s->o.max_per_client > 0 ? (unsigned)s->o.max_per_client + 4 : 0;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)s->o.port, NULL, NULL, handler, s, MHD_OPTION_EXTERNAL_LOGGER, log_mhd,
        s, MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, srv_conn_notify, s,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(s->o.http_threads > 0 ? s->o.http_threads : 2),
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->o.max_connections + 16,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MHD_POOL,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(s->o.idle_timeout_s > 0 ? s->o.idle_timeout_s : 0),
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "encdec serve: cannot listen on %s port %d: %s\n", s->o.host, s->o.port,
                strerror(errno));
        return -1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : s->o.port;
    s->daemon = d;
    if (srv_watch_start(s)) {
        fprintf(stderr, "encdec serve: the watcher thread did not start\n");
        MHD_stop_daemon(d);
        s->daemon = NULL;
        return -1;
    }
    return 0;
}

void srv_stop(srv *s) {
    srv_watch_stop(s);   /* resumes whatever is parked, as hung up */
    if (s->daemon) MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}
