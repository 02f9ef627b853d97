/* reply.c - what the endpoints and http.c answer with: a body, an error in
 * OpenAI's shape, a server-sent-events stream; whether a request names the
 * served model; the answered tokens per second. Beneath the endpoints and
 * http.c (it calls neither). */
#include "http.h"
#include "openai.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- tokens per second: answered tokens in per-second buckets ---- */

void srv_add_tokens(srv *s, long long n) {
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

/* Tokens answered per second over the last SRV_RATE_SECONDS whole seconds. */
double srv_token_rate(srv *s) {
    long now = (long)time(NULL);
    long long sum = 0;
    pthread_mutex_lock(&s->rate_mu);
    for (int b = 0; b < SRV_RATE_BUCKETS; b++)
        if (s->rate_sec[b] < now && s->rate_sec[b] >= now - SRV_RATE_SECONDS) sum += s->rate_tok[b];
    pthread_mutex_unlock(&s->rate_mu);
    return (double)sum / SRV_RATE_SECONDS;
}

/* ---- responses ---- */

enum MHD_Result srv_send_body(conn *k, struct MHD_Connection *c, int status, char *body,
                              const char *ctype, const char *retry_after) {
    return srv_send_body_h(k, c, status, body, ctype, retry_after ? "Retry-After" : NULL,
                           retry_after);
}

enum MHD_Result srv_send_body_h(conn *k, struct MHD_Connection *c, int status, char *body,
                                const char *ctype, const char *header, const char *value) {
    if (!body) {
        static char oom[] = "{\"error\": {\"message\": \"out of memory\", \"type\": \"server_error\", "
                            "\"param\": null, \"code\": null}}";
        body = strdup(oom);
        status = 500;
        ctype = "application/json";
        header = NULL;
        if (!body) return MHD_NO;
    }
    return srv_send_bytes(k, c, status, body, strlen(body), ctype, header, value);
}

enum MHD_Result srv_send_bytes(conn *k, struct MHD_Connection *c, int status, void *body, size_t n,
                               const char *ctype, const char *header, const char *value) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    if (header) MHD_add_response_header(r, header, value);
    if (k->close) MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    k->answered = 1;
    k->status = status;
    k->bytes = n;
    return ok;
}

enum MHD_Result srv_send_stream(conn *k, struct MHD_Connection *c,
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

enum MHD_Result srv_send_error(conn *k, struct MHD_Connection *c, const srv_error *e) {
    return srv_send_body(k, c, e->status, srv_error_body(e), "application/json",
                         e->status == 503 ? "1" : NULL);
}

enum MHD_Result srv_fail_req(conn *k, struct MHD_Connection *c, int status, const char *type,
                             const char *param, const char *code, const char *fmt, ...) {
    srv_error e = {status, "", type, param, code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    return srv_send_error(k, c, &e);
}

int srv_model_known(const srv *s, const char *name) {
    if (!strcmp(name, s->name)) return 1;
    for (int i = 0; i < s->o.n_aliases; i++)
        if (!strcmp(name, s->o.aliases[i])) return 1;
    return 0;
}

void srv_model_name(const char *path, char *out, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    snprintf(out, cap, "%.*s", (int)(n - b), path + b);
}
