/* park.c - the watcher of encdec serve (http.h): the connections parked
 * while their request runs, resumed when their answer can go on; and every
 * open connection, counted by client address and cut off when its
 * request's headers or body take longer than their deadlines (a client
 * that sends a byte a second holds no thread here, but would hold its
 * connection forever).
 *
 * One thread, every WATCH_MS: each parked connection's condition (its
 * ready function, its deadline, and every GONE_MS its socket for a
 * hang-up); every SWEEP_MS, each connection's deadline. Cutting a
 * connection shuts its socket down (libmicrohttpd then closes it); that
 * happens under the same lock as the record's removal, which libmicrohttpd
 * notifies before it closes the socket, so no other connection's socket
 * can be hit. */
#define _GNU_SOURCE   /* POLLRDHUP */
#include "http.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WATCH_MS 5
#define GONE_MS 100
#define SWEEP_MS 250

enum { C_HEAD, C_BODY, C_BUSY, C_UPGRADED };   /* waiting for headers, receiving the body,
                                                answering; a WebSocket's (no deadline) */

struct srv_conn {
    srv *s;
    int fd;
    char ip[INET6_ADDRSTRLEN];
    int state;
    double since;             /* when it entered its state */
    int cut;                  /* shut down by the watcher */
    srv_conn *prev, *next;
};

double srv_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static srv_conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static int fd_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static void address_of(struct MHD_Connection *c, char *ip, size_t n) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(ip, n, "?");
    if (!ci || !ci->client_addr) return;
    const struct sockaddr *a = ci->client_addr;
    if (a->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip, (socklen_t)n);
    else if (a->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, ip, (socklen_t)n);
}

void srv_conn_notify(void *cls, struct MHD_Connection *c, void **socket_ctx,
                     enum MHD_ConnectionNotificationCode code) {
    srv *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        srv_conn *r = calloc(1, sizeof *r);
        if (!r) return;   /* not counted, no deadlines: still served */
        r->s = s;
        r->fd = fd_of(c);
        address_of(c, r->ip, sizeof r->ip);
        r->state = C_HEAD;
        r->since = srv_now_ms();
        pthread_mutex_lock(&s->watch_mu);
        r->next = s->conns;
        if (s->conns) ((srv_conn *)s->conns)->prev = r;
        s->conns = r;
        s->n_conns++;
        pthread_mutex_unlock(&s->watch_mu);
        *socket_ctx = r;
        return;
    }
    srv_conn *r = *socket_ctx;
    if (!r) return;
    pthread_mutex_lock(&s->watch_mu);
    if (r->prev) r->prev->next = r->next;
    else s->conns = r->next;
    if (r->next) r->next->prev = r->prev;
    s->n_conns--;
    pthread_mutex_unlock(&s->watch_mu);
    free(r);
    *socket_ctx = NULL;
}

static void set_state(struct MHD_Connection *c, int state) {
    srv_conn *r = conn_of(c);
    if (!r) return;
    pthread_mutex_lock(&r->s->watch_mu);
    r->state = state;
    r->since = srv_now_ms();
    pthread_mutex_unlock(&r->s->watch_mu);
}

int srv_conn_admit(srv *s, struct MHD_Connection *c, char *why, size_t n) {
    srv_conn *r = conn_of(c);
    set_state(c, C_BODY);
    if (!r) return 0;
    int same = 0, total;
    pthread_mutex_lock(&s->watch_mu);
    total = s->n_conns;
    if (s->o.max_per_client > 0)
        for (srv_conn *q = s->conns; q; q = q->next) same += !strcmp(q->ip, r->ip);
    pthread_mutex_unlock(&s->watch_mu);
    if (total > s->o.max_connections) {
        snprintf(why, n, "%d connections are open, over this server's limit of %d; try again "
                 "shortly", total, s->o.max_connections);
        return 503;
    }
    if (s->o.max_per_client > 0 && same > s->o.max_per_client) {
        snprintf(why, n, "%d connections are open from %s, over this server's limit of %d per "
                 "client; try again shortly", same, r->ip, s->o.max_per_client);
        return 503;
    }
    return 0;
}

void srv_conn_body_done(struct MHD_Connection *c) { set_state(c, C_BUSY); }
void srv_conn_request_done(struct MHD_Connection *c) {
    srv_conn *r = conn_of(c);
    if (!r) return;
    pthread_mutex_lock(&r->s->watch_mu);
    if (r->state != C_UPGRADED) {
        r->state = C_HEAD;
        r->since = srv_now_ms();
    }
    pthread_mutex_unlock(&r->s->watch_mu);
}
void srv_conn_upgraded(struct MHD_Connection *c) { set_state(c, C_UPGRADED); }

int srv_conn_was_cut(struct MHD_Connection *c) {
    srv_conn *r = conn_of(c);
    if (!r) return 0;
    pthread_mutex_lock(&r->s->watch_mu);
    int cut = r->cut;
    pthread_mutex_unlock(&r->s->watch_mu);
    return cut;
}

void srv_park_conn(srv *s, srv_park *p, struct MHD_Connection *c, srv_ready_fn ready, void *ctx,
                   double deadline) {
    MHD_suspend_connection(c);
    p->c = c;
    p->ready = ready;
    p->ctx = ctx;
    p->deadline = deadline;
    p->next_gone = 0;
    p->gone = p->late = 0;
    pthread_mutex_lock(&s->watch_mu);
    p->prev = NULL;
    p->next = s->parked;
    if (s->parked) ((srv_park *)s->parked)->prev = p;
    s->parked = p;
    pthread_mutex_unlock(&s->watch_mu);
}

/* The client closed its side (or the socket broke). */
static int hung_up(struct MHD_Connection *c) {
    int fd = fd_of(c);
    if (fd < 0) return 0;
    struct pollfd p = {fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Resumes the parked connections whose answer can go on (all of them when
 * stopping); under watch_mu. */
static void look_at_parked(srv *s, double now, int stopping) {
    srv_park *p = s->parked;
    while (p) {
        srv_park *next = p->next;
        int go = stopping || p->ready(p->ctx, now);
        if (!go && p->deadline > 0 && now > p->deadline) go = p->late = 1;
        if (!go && now >= p->next_gone) {
            p->next_gone = now + GONE_MS;
            if (hung_up(p->c)) go = p->gone = 1;
        }
        if (stopping) p->gone = 1;
        if (go) {
            if (p->prev) p->prev->next = p->next;
            else s->parked = p->next;
            if (p->next) p->next->prev = p->prev;
            MHD_resume_connection(p->c);
        }
        p = next;
    }
}

/* Cuts the connections whose headers or body are overdue; under watch_mu. */
static void sweep(srv *s, double now) {
    double head = s->o.header_timeout_s * 1e3, body = s->o.body_timeout_s * 1e3;
    for (srv_conn *r = s->conns; r; r = r->next) {
        if (r->cut || r->fd < 0) continue;
        if ((r->state == C_HEAD && head > 0 && now - r->since > head) ||
            (r->state == C_BODY && body > 0 && now - r->since > body)) {
            shutdown(r->fd, SHUT_RDWR);
            r->cut = 1;
            s->n_cut++;
        }
    }
}

static void *watch_main(void *arg) {
    srv *s = arg;
    double last_sweep = 0;
    for (;;) {
        pthread_mutex_lock(&s->watch_mu);
        int stopping = s->watch_stop;
        double now = srv_now_ms();
        look_at_parked(s, now, stopping);
        if (now - last_sweep >= SWEEP_MS) {
            sweep(s, now);
            last_sweep = now;
        }
        pthread_mutex_unlock(&s->watch_mu);
        if (stopping) return NULL;
        usleep(WATCH_MS * 1000);
    }
}

int srv_watch_start(srv *s) {
    s->watch_stop = 0;
    if (pthread_create(&s->watch_th, NULL, watch_main, s) != 0) return -1;
    s->watching = 1;
    return 0;
}

void srv_watch_stop(srv *s) {
    if (!s->watching) return;
    pthread_mutex_lock(&s->watch_mu);
    s->watch_stop = 1;
    pthread_mutex_unlock(&s->watch_mu);
    pthread_join(s->watch_th, NULL);
    s->watching = 0;
}
