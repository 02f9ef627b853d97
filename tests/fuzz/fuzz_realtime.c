/* fuzz_realtime.c - GET /v1/realtime's WebSocket: a session opened over
 * loopback with a valid handshake on the server's own handler (server/http.c,
 * ep_realtime.c, ws.c on wslay; no engine: audio is refused with an error
 * event), then the input as the client's side. Its first byte picks how:
 * odd, the rest as raw bytes on the socket (frames of any shape, cut
 * anywhere); even, the rest split at newlines into messages, each sent as a
 * masked frame (text, or binary when the message starts with 0xff), so the
 * JSON events reach the session's parser. The server must answer, close or
 * refuse; never crash, hang or leak. */
#include "fuzz_common.h"
#include "fuzz_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static srv g_srv;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_server_start(&g_srv, "fuzz_realtime");
    return 0;
}

static int send_all(int fd, const void *p, size_t n) {
    return n == 0 || send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n;
}

/* One masked frame (the mask fixed: any is valid). */
static int send_frame(int fd, int opcode, const uint8_t *p, size_t n) {
    uint8_t h[14], mask[4] = {0x12, 0x34, 0x56, 0x78};
    size_t k = 0;
    h[k++] = (uint8_t)(0x80 | opcode);
    if (n < 126) {
        h[k++] = (uint8_t)(0x80 | n);
    } else if (n < 65536) {
        h[k++] = 0x80 | 126;
        h[k++] = (uint8_t)(n >> 8);
        h[k++] = (uint8_t)n;
    } else {
        h[k++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--) h[k++] = (uint8_t)((uint64_t)n >> (8 * i));
    }
    memcpy(h + k, mask, 4);
    k += 4;
    uint8_t *m = malloc(n + 1);
    if (!m) return 0;
    for (size_t i = 0; i < n; i++) m[i] = p[i] ^ mask[i & 3];
    int ok = send_all(fd, h, k) && send_all(fd, m, n);
    free(m);
    return ok;
}

static void session(const uint8_t *data, size_t size) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return;
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)g_srv.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char hello[] =
        "GET /v1/realtime?intent=transcription HTTP/1.1\r\nHost: f\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && send_all(fd, hello, sizeof hello - 1)) {
        if (size > 0 && (data[0] & 1)) {
            send_all(fd, data + 1, size - 1);
        } else if (size > 0) {
            size_t i = 1;
            while (i <= size) {
                size_t j = i;
                while (j < size && data[j] != '\n') j++;
                int bin = j > i && data[i] == 0xff;
                if (!send_frame(fd, bin ? 2 : 1, data + i + bin, j - i - bin)) break;
                i = j + 1;
            }
        }
        shutdown(fd, SHUT_WR);
        char buf[4096];
        while (recv(fd, buf, sizeof buf, 0) > 0) {}
    }
    close(fd);
}

/* Waits for the session to be gone from the server (its thread, its
 * connection), so that nothing of it is alive when the input ends. */
static void settle(void) {
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&g_srv.watch_mu);
        int conns = g_srv.n_conns;
        pthread_mutex_unlock(&g_srv.watch_mu);
        if (conns == 0 && atomic_load(&g_srv.live) == 0 && atomic_load(&g_srv.inflight) == 0) return;
        usleep(500);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    session(data, size);
    settle();
    return 0;
}
