/* ws.c - a WebSocket connection over wslay's event API; the handshake's
 * key with nettle's SHA-1 and base64. */
#include "ws.h"

#include <errno.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <wslay/wslay.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

typedef struct msg {
    int text;
    char *data;
    size_t len;
    struct msg *next;
} msg;

struct srv_ws {
    int fd;
    wslay_event_context_ptr ctx;
    const char *extra;        /* bytes read before us, handed out first */
    size_t n_extra;
    msg *head, *tail;         /* messages received, not yet taken */
    msg *taken;               /* the one the caller holds */
    size_t held, max_held;    /* bytes of the messages waiting; no reading past max_held */
    int failed;               /* the socket failed or the peer went */
};

int srv_ws_accept_key(const char *key, char out[29]) {
    if (!key) return -1;
    size_t n = strlen(key);
    uint8_t raw[32];
    size_t got = sizeof raw;
    struct base64_decode_ctx b;
    base64_decode_init(&b);
    if (n != 24 || !base64_decode_update(&b, &got, raw, n, key) || !base64_decode_final(&b) ||
        got != 16)
        return -1;
    struct sha1_ctx h;
    uint8_t d[SHA1_DIGEST_SIZE];
    sha1_init(&h);
    sha1_update(&h, n, (const uint8_t *)key);
    sha1_update(&h, sizeof WS_GUID - 1, (const uint8_t *)WS_GUID);
    sha1_digest(&h, sizeof d, d);
    base64_encode_raw(out, sizeof d, d);   /* 28 characters */
    out[28] = 0;
    return 0;
}

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
                       void *user) {
    (void)flags;
    srv_ws *w = user;
    if (w->n_extra) {
        size_t n = w->n_extra < len ? w->n_extra : len;
        memcpy(buf, w->extra, n);
        w->extra += n;
        w->n_extra -= n;
        return (ssize_t)n;
    }
    ssize_t r;
    do r = recv(w->fd, buf, len, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (r <= 0) {   /* the peer went (0), or the socket failed */
        w->failed = 1;
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return r;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user) {
    srv_ws *w = user;
    ssize_t r;
    do r = send(w->fd, data, len, MSG_NOSIGNAL | ((flags & WSLAY_MSG_MORE) ? MSG_MORE : 0));
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (r < 0) {
        w->failed = 1;
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return r;
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
                   void *user) {
    srv_ws *w = user;
    if (a->opcode != WSLAY_TEXT_FRAME && a->opcode != WSLAY_BINARY_FRAME) return;
    msg *m = malloc(sizeof *m);
    char *d = m ? malloc(a->msg_length + 1) : NULL;
    if (!d) {
        free(m);
        wslay_event_queue_close(ctx, WSLAY_CODE_INTERNAL_SERVER_ERROR, NULL, 0);
        return;
    }
    if (a->msg_length) memcpy(d, a->msg, a->msg_length);   /* an empty one has no msg */
    d[a->msg_length] = 0;
    *m = (msg){a->opcode == WSLAY_TEXT_FRAME, d, a->msg_length, NULL};
    w->held += a->msg_length;
    if (w->tail) w->tail->next = m;
    else w->head = m;
    w->tail = m;
}

srv_ws *srv_ws_new(int fd, const char *extra, size_t n, size_t max_msg, size_t max_held) {
    srv_ws *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->fd = fd;
    w->max_held = max_held;
    w->extra = extra;
    w->n_extra = n;
    struct wslay_event_callbacks cb = {on_recv, on_send, NULL, NULL, NULL, NULL, on_msg};
    if (wslay_event_context_server_init(&w->ctx, &cb, w)) {
        free(w);
        return NULL;
    }
    wslay_event_config_set_max_recv_msg_length(w->ctx, max_msg);
    return w;
}

static void drop(msg *m) {
    if (!m) return;
    free(m->data);
    free(m);
}

void srv_ws_free(srv_ws *w) {
    if (!w) return;
    drop(w->taken);
    for (msg *m = w->head, *next; m; m = next) {
        next = m->next;
        drop(m);
    }
    wslay_event_context_free(w->ctx);
    free(w);
}

static int closed(const srv_ws *w) {
    return w->failed || (!wslay_event_want_read(w->ctx) && !wslay_event_want_write(w->ctx));
}

/* One round of I/O: waits up to timeout_ms for the socket. -1: closed. */
static int io(srv_ws *w, int timeout_ms) {
    if (closed(w)) return -1;
    int reading = wslay_event_want_read(w->ctx) && w->held < w->max_held;
    if (reading && w->n_extra && wslay_event_recv(w->ctx)) return -1;
    struct pollfd p = {w->fd, 0, 0};
    if (reading) p.events |= POLLIN;
    if (wslay_event_want_write(w->ctx)) p.events |= POLLOUT;
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno != EINTR) return -1;
    if (r <= 0) return 0;
    if ((p.revents & (POLLERR | POLLNVAL)) ||
        ((p.revents & POLLHUP) && !(p.revents & POLLIN)))
        return -1;
    if ((p.revents & POLLIN) && wslay_event_recv(w->ctx)) return -1;
    if ((p.revents & POLLOUT) && wslay_event_send(w->ctx)) return -1;
    return closed(w) ? -1 : 0;
}

int srv_ws_io(srv_ws *w, int timeout_ms) {
    /* what is queued goes out first, as far as the socket takes it now */
    if (!w->failed && wslay_event_want_write(w->ctx) && wslay_event_send(w->ctx)) w->failed = 1;
    return io(w, timeout_ms);
}

int srv_ws_next(srv_ws *w, srv_ws_msg *out) {
    drop(w->taken);
    w->taken = NULL;
    msg *m = w->head;
    if (!m) return 0;
    w->head = m->next;
    if (!w->head) w->tail = NULL;
    w->held -= m->len;
    w->taken = m;
    *out = (srv_ws_msg){m->text, m->data, m->len};
    return 1;
}

int srv_ws_send_text(srv_ws *w, const char *s, size_t n) {
    struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)s, n};
    if (w->failed || wslay_event_queue_msg(w->ctx, &m)) return -1;
    return 0;
}

int srv_ws_broken(const srv_ws *w) { return w->failed; }

size_t srv_ws_queued(const srv_ws *w) { return wslay_event_get_queued_msg_length(w->ctx); }

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void srv_ws_close(srv_ws *w, int code, const char *reason, int timeout_ms) {
    double until = now_ms() + timeout_ms;
    /* the messages queued go first (wslay would send a close before them) */
    while (!closed(w) && wslay_event_want_write(w->ctx) && now_ms() < until) {
        struct pollfd p = {w->fd, POLLOUT, 0};
        if (poll(&p, 1, (int)(until - now_ms()) + 1) <= 0 || (p.revents & (POLLERR | POLLHUP)) ||
            wslay_event_send(w->ctx))
            break;
    }
    if (!w->failed && !wslay_event_get_close_sent(w->ctx))
        wslay_event_queue_close(w->ctx, (uint16_t)code, (const uint8_t *)reason,
                                reason ? strlen(reason) : 0);
    /* our close out, then the peer's answer (or its silence until the deadline) */
    while (!closed(w) && now_ms() < until) {
        if (io(w, (int)(until - now_ms()) + 1) < 0) break;
        for (msg *m = w->head, *next; m; m = next) {   /* what came after our close: dropped */
            next = m->next;
            drop(m);
        }
        w->head = w->tail = NULL;
        w->held = 0;
    }
    /* a lingering close: what the peer still sends is read and dropped until
     * it closes too, so that our close frame is not lost to a reset */
    shutdown(w->fd, SHUT_WR);
    char sink[16384];
    while (now_ms() < until) {
        struct pollfd p = {w->fd, POLLIN, 0};
        if (poll(&p, 1, (int)(until - now_ms()) + 1) <= 0) break;
        ssize_t r = recv(w->fd, sink, sizeof sink, 0);
        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) break;
    }
}
