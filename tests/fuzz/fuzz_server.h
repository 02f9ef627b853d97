/* fuzz_server.h - the server the server harnesses drive over loopback:
 * server/http.c on a free port, in form-only mode (no model, no engine: an
 * audio request is checked and answered without decoding; a live session
 * gets an error event for its audio). */
#ifndef ED_FUZZ_SERVER_H
#define ED_FUZZ_SERVER_H

#include "../../server/server.h"

#include <stdio.h>
#include <stdlib.h>

static inline void fuzz_server_start(srv *s, const char *who) {
    s->o = (srv_opts){.host = "127.0.0.1", .threads = 1, .max_active = 1, .max_queue = 64,
                      .max_upload = 1 << 20, .max_connections = 64, .aliases = {"whisper-1"},
                      .n_aliases = 1, .quiet = 1, .form_only = 1, .http_threads = 1,
                      .max_live = 4, .idle_timeout_s = 10};
    snprintf(s->name, sizeof s->name, "fuzz-model");
    pthread_mutex_init(&s->rate_mu, NULL);
    pthread_mutex_init(&s->model_mu, NULL);
    if (srv_start(s)) {
        fprintf(stderr, "%s: the server did not start\n", who);
        exit(1);
    }
}

#endif
