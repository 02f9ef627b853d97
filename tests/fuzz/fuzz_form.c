/* fuzz_form.c - the server's form path: any bytes as the multipart body of
 * POST /v1/audio/transcriptions, sent over loopback to the server's own
 * handler (server/http.c in form-only mode: libmicrohttpd's streaming
 * multipart parser, the form collector and its checks, the error bodies),
 * and the same bytes cut in pieces straight into the collector
 * (server/form.c). Must answer or refuse, never crash or leak. */
#include "fuzz_common.h"
#include "../../server/form.h"
#include "fuzz_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

static srv g_srv;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_server_start(&g_srv, "fuzz_form");
    return 0;
}

/* The body through HTTP: the response is read and dropped. */
static void over_http(const uint8_t *data, size_t size) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)g_srv.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        char head[320];
        /* one input in four: the audio as the whole body of whisper.cpp's route */
        int raw = size > 0 && (data[0] & 3) == 3;
        int n = snprintf(head, sizeof head,
                         "POST %s HTTP/1.1\r\nHost: f\r\nConnection: close\r\n"
                         "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                         raw ? "/inference?beam_size=2&translate=true&offset_t=100"
                             : "/v1/audio/transcriptions",
                         raw ? "audio/wav" : "multipart/form-data; boundary=XyZ", size);
        if (send(fd, head, (size_t)n, MSG_NOSIGNAL) == n &&
            (size == 0 || send(fd, data, size, MSG_NOSIGNAL) == (ssize_t)size)) {
            char buf[4096];
            while (recv(fd, buf, sizeof buf, 0) > 0) {}
        }
    }
    close(fd);
}

/* The bytes as field pieces: the first byte of each record picks the field
 * (and the piece's length), the rest is its data. */
static void into_form(const uint8_t *data, size_t size) {
    static const char *keys[] = {"file", "model", "language", "prompt", "response_format",
                                 "temperature", "stream", "timestamp_granularities[]", "other",
                                 "beam_size", "temperature_inc", "translate", "offset_t",
                                 "duration", "logprob_thold", "no_timestamps"};
    enum { NK = sizeof keys / sizeof keys[0] };
    srv_form f;
    srv_form_init(&f, 4096);
    uint64_t off[NK] = {0};
    size_t i = 0;
    while (i < size) {
        int k = data[i] % NK, len = data[i] / NK + 1;
        i++;
        size_t n = size - i < (size_t)len ? size - i : (size_t)len;
        if (!srv_form_add(&f, keys[k], k == 0 ? "a.wav" : NULL, (const char *)data + i, off[k], n)) break;
        off[k] = data[i - 1] & 1 ? 0 : off[k] + n;   /* sometimes a new part */
        i += n;
    }
    srv_audio_req q;
    srv_error e;
    srv_form_check(&f, &q, &e);
    srv_form_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    over_http(data, size);
    into_form(data, size);
    return 0;
}
