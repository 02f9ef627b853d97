/* ws.h - a WebSocket connection (RFC 6455) on the socket libmicrohttpd
 * hands over after a 101 answer: the handshake's key, and messages in and
 * out, framed by wslay (pings answered, close handshake, masking, UTF-8 of
 * text left to the reader). One thread drives a connection. */
#ifndef SRV_WS_H
#define SRV_WS_H

#include <stddef.h>

typedef struct srv_ws srv_ws;

typedef struct {
    int text;                 /* 1: a text message; 0: binary */
    const char *data;         /* valid until the next srv_ws_next (NUL-terminated) */
    size_t len;
} srv_ws_msg;

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key into out[29]:
 * 0, or -1 when the key is not 16 bytes in base64. */
int srv_ws_accept_key(const char *key, char out[29]);

/* A connection on the non-blocking socket fd (the connection's: closed by
 * the caller's MHD_upgrade_action), extra[n] being bytes libmicrohttpd read
 * past the headers. Messages over max_msg bytes close it (1009); no more is
 * read from the socket while max_held bytes of messages wait to be taken
 * (the client's TCP window then holds the rest). */
srv_ws *srv_ws_new(int fd, const char *extra, size_t n, size_t max_msg, size_t max_held);
void srv_ws_free(srv_ws *w);

/* Sends what is queued and reads what came (control frames answered),
 * waiting up to timeout_ms for the socket. 0, or -1 when the connection is
 * closed (by the peer, a protocol error, or after our close was sent). */
int srv_ws_io(srv_ws *w, int timeout_ms);
/* The oldest message received into *m (valid until the next call): 1, or 0
 * when none waits. */
int srv_ws_next(srv_ws *w, srv_ws_msg *m);
/* Queues a text message (copied). -1 when the connection is closing. */
int srv_ws_send_text(srv_ws *w, const char *s, size_t n);
/* 1 once the socket failed or the peer went without a close: nothing can
 * be sent any more. */
int srv_ws_broken(const srv_ws *w);
/* Bytes queued, not yet sent: a client that does not read grows it. */
size_t srv_ws_queued(const srv_ws *w);
/* Queues a close frame (code, reason) and sends what is queued, waiting up
 * to timeout_ms for the peer to take it and answer. */
void srv_ws_close(srv_ws *w, int code, const char *reason, int timeout_ms);

#endif
