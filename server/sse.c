/* sse.c - the event queue of a streamed answer (http.h): the requests'
 * threads append server-sent events, the connection's reader takes them
 * when the watcher has resumed it. */
#include "http.h"
#include "openai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void evq_init(ev_queue *q) {
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
}

void evq_destroy(ev_queue *q) {
    pthread_mutex_destroy(&q->mu);
    free(q->pending);
}

void evq_push(ev_queue *q, char *ev) {
    if (!ev) return;
    pthread_mutex_lock(&q->mu);
    size_t n = strlen(ev);
    char *p = realloc(q->pending, q->len + n + 1);
    if (p) {
        memcpy(p + q->len, ev, n + 1);
        q->pending = p;
        q->len += n;
    }
    pthread_mutex_unlock(&q->mu);
    free(ev);
}

size_t evq_take(ev_queue *q, char *buf, size_t max) {
    pthread_mutex_lock(&q->mu);
    size_t n = q->len - q->sent < max ? q->len - q->sent : max;
    if (n) memcpy(buf, q->pending + q->sent, n);
    q->sent += n;
    if (q->sent == q->len) q->sent = q->len = 0;   /* all out: the buffer starts over */
    pthread_mutex_unlock(&q->mu);
    return n;
}

int evq_ready(ev_queue *q) {
    pthread_mutex_lock(&q->mu);
    int r = q->len > q->sent;
    pthread_mutex_unlock(&q->mu);
    return r;
}

int srv_sse_idle(ev_queue *q, const srv *s, double deadline, double now, double *last_sent,
                 char *buf, size_t max, size_t *n) {
    *n = 0;
    if (deadline > 0 && now > deadline) {
        srv_error e = {504, "", "server_error", NULL, "timeout"};
        snprintf(e.message, sizeof e.message, "the request took longer than the server's limit "
                 "of %g s", s->o.timeout_s);
        evq_push(q, srv_sse_error(&e));
        return 1;
    }
    if (now - *last_sent >= s->o.keepalive_s * 1e3 && max >= sizeof SRV_SSE_KEEPALIVE - 1) {
        memcpy(buf, SRV_SSE_KEEPALIVE, sizeof SRV_SSE_KEEPALIVE - 1);
        *n = sizeof SRV_SSE_KEEPALIVE - 1;
        *last_sent = now;
    }
    return 0;
}
