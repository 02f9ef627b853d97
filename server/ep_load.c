/* ep_load.c - POST /load (whisper.cpp's server): another model in place of
 * the one served, when the server was started with --allow-load. The form's
 * `model` is a path or a name, resolved as -m is (a name not installed is
 * downloaded). The new model and its engine are made on a thread of their
 * own while the old one goes on serving; then new requests get 503
 * model_loading, the ones in flight finish on the old model, the server's
 * model changes and the old one is freed. A model that cannot be loaded,
 * or is of the other kind (speech / text), leaves the served one as it was. */
#include "http.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    srv *s;
    char given[1024];
    atomic_int refs;          /* the connection's and the thread's */
    atomic_int done;
    int status;               /* the answer: 200, or an error's status */
    char msg[1024];
} load_st;

static void release(void *p) {
    load_st *l = p;
    if (atomic_fetch_sub(&l->refs, 1) == 1) free(l);
}

static int fail(load_st *l, int status, const char *msg) {
    l->status = status;
    snprintf(l->msg, sizeof l->msg, "%s", msg);
    return -1;
}

/* The new model and engine, made while the old ones serve: 0, or -1 (l says why). */
static int make(load_st *l, encdec_model **m, encdec_engine **e, char *name, size_t cap) {
    srv *s = l->s;
    char buf[4096];
    const char *path = s->model_path(l->given, buf, sizeof buf);
    if (!path) return fail(l, 400, s->model_why());
    encdec_status st = encdec_model_load_ex(path, &s->mp, m);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "cannot load model %.400s: %.500s", path, encdec_last_error());
        return fail(l, 400, msg);
    }
    encdec_model_info mi;
    encdec_model_get_info(*m, &mi);
    if ((strcmp(mi.family, "whisper") != 0) != s->text) {
        encdec_model_free(*m);
        return fail(l, 400, s->text ? "this server serves a text-to-text model: it loads no "
                                      "speech model in its place"
                                    : "this server serves a speech model: it loads no "
                                      "text-to-text model in its place");
    }
    encdec_engine_params ep = {s->o.threads, s->o.max_active, s->kv};
    if ((st = encdec_engine_new(*m, &ep, e))) {
        encdec_model_free(*m);
        return fail(l, 500, encdec_last_error());
    }
    srv_model_name(path, name, cap);
    return 0;
}

static void *loader(void *p) {
    load_st *l = p;
    srv *s = l->s;
    encdec_model *m = NULL;
    encdec_engine *e = NULL;
    char name[256];
    if (make(l, &m, &e, name, sizeof name) == 0) {
        /* new requests are refused from here; the ones in flight finish */
        atomic_store(&s->swapping, 1);
        while (atomic_load(&s->inflight) > 0 && !atomic_load(&s->draining)) usleep(10000);
        if (atomic_load(&s->draining)) {   /* SIGTERM meanwhile: the server stops as it was */
            atomic_store(&s->swapping, 0);
            encdec_engine_free(e);
            encdec_model_free(m);
            fail(l, 503, "the server is shutting down");
        } else {
            pthread_mutex_lock(&s->model_mu);
            const encdec_model *old_m = s->model;
            encdec_engine *old_e = s->engine;
            encdec_model_info mi;
            encdec_model_get_info(m, &mi);
            s->model = m;
            s->engine = e;
            s->multilingual = mi.multilingual;
            snprintf(s->name, sizeof s->name, "%s", name);
            pthread_mutex_unlock(&s->model_mu);
            atomic_store(&s->swapping, 0);
            encdec_engine_free(old_e);
            encdec_model_free((encdec_model *)old_m);
            fprintf(stderr, "encdec serve: now serving %s (/load)\n", name);
            l->status = 200;
        }
    }
    atomic_store(&s->loading, 0);
    atomic_store(&l->done, 1);
    release(l);
    return NULL;
}

static int load_ready(void *ctx, double now_ms) {
    (void)now_ms;
    return atomic_load(&((load_st *)ctx)->done);
}

static enum MHD_Result start(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    const char *given = k->form.model;
    if (!s->o.allow_load || !s->model_path)
        return srv_fail_req(k, c, 403, "invalid_request_error", NULL, "load_not_allowed",
                            "this server does not change its model on request: start it with "
                            "--allow-load");
    if (k->form.field_too_long || k->form.nomem || !given || !*given || strlen(given) >= 1024)
        return srv_fail_req(k, c, 400, "invalid_request_error", "model", NULL,
                            "/load takes a form field model: a model's path or name");
    if (atomic_exchange(&s->loading, 1))
        return srv_fail_req(k, c, 409, "invalid_request_error", NULL, "load_in_progress",
                            "another /load is at work");
    load_st *l = calloc(1, sizeof *l);
    if (!l) {
        atomic_store(&s->loading, 0);
        return srv_fail_req(k, c, 500, "server_error", NULL, NULL, "out of memory");
    }
    l->s = s;
    snprintf(l->given, sizeof l->given, "%s", given);
    atomic_init(&l->refs, 2);
    pthread_t th;
    if (pthread_create(&th, NULL, loader, l) != 0) {
        free(l);
        atomic_store(&s->loading, 0);
        return srv_fail_req(k, c, 500, "server_error", NULL, NULL, "cannot start a thread");
    }
    pthread_detach(th);
    /* not one of the requests a swap waits for: uncounted from here */
    if (k->counted) atomic_fetch_sub(&s->inflight, 1), k->counted = 0;
    k->ep = l;
    k->ep_free = release;
    srv_park_conn(s, &k->park, c, load_ready, l, 0);
    return MHD_YES;
}

static enum MHD_Result answer(conn *k, struct MHD_Connection *c) {
    load_st *l = k->ep;
    if (k->park.gone) {
        k->status = 499;
        return MHD_NO;   /* the model changes all the same */
    }
    if (l->status != 200)
        return srv_fail_req(k, c, l->status, l->status >= 500 ? "server_error" : "invalid_request_error",
                            l->status == 400 ? "model" : NULL, NULL, "%s", l->msg);
    cJSON *j = cJSON_CreateObject();
    pthread_mutex_lock(&k->s->model_mu);
    cJSON_AddStringToObject(j, "status", "loaded");
    cJSON_AddStringToObject(j, "model", k->s->name);
    pthread_mutex_unlock(&k->s->model_mu);
    char *body = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return srv_send_body(k, c, 200, body, "application/json", NULL);
}

enum MHD_Result srv_ep_load(conn *k, struct MHD_Connection *c) {
    return k->ep ? answer(k, c) : start(k, c);
}
