/* ep_lt.c - LibreTranslate's API (http.h, lt.h): POST /translate, one engine
 * request per sentence (lt_split.h) of a text, or of each text node of an
 * HTML text (lt_html.h) (they share the decode steps with everything else
 * the server runs), the connection parked until all are done, a text's
 * translation touched and unescaped as LibreTranslate does (lt_format.h);
 * GET /languages, /frontend/settings; POST /detect and a source "auto"
 * over the text language identifier (lt_detect.h), loaded at its first
 * use. Errors are LibreTranslate's {"error": message}. */
#include "http.h"
#include "lt.h"
#include "lt_detect.h"
#include "lt_format.h"
#include "lt_doc.h"
#include "lt_html.h"
#include "lt_run.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LT_MAX_NODES 512  /* text nodes of a request's HTML texts, all together */
#define LT_MAX_SENTENCES 1024   /* sentences of a request's texts (or nodes), all together */

typedef struct {
    srv_lt_req r;
    srv_html h[SRV_LT_MAX_Q];   /* format html: each text's markup and text nodes */
    srv_lt_run run;             /* the units: the texts, or their text nodes (html) */
} lt_st;

static void lt_free(void *p) {
    lt_st *t = p;
    if (!t) return;
    srv_lt_run_free(&t->run);
    for (int i = 0; i < SRV_LT_MAX_Q; i++) srv_html_free(&t->h[i]);
    srv_lt_free(&t->r);
    free(t);
}

/* The units (the request's texts, or their HTML's text nodes, split into
 * t->h) submitted: 0, or an HTTP status with msg set. */
static int lt_start(srv *s, lt_st *t, const encdec_generate_params *p, char *msg, size_t n) {
    const char **units = (const char **)t->r.q;
    int n_units = t->r.n_q;
    if (t->r.html) {
        n_units = 0;
        for (int i = 0; i < t->r.n_q; i++) {
            int st = srv_html_split(t->r.q[i], LT_MAX_NODES - n_units, &t->h[i]);
            if (st == -2) {
                snprintf(msg, n, "format html: at most %d texts to translate a request", LT_MAX_NODES);
                return 400;
            }
            if (st) {
                snprintf(msg, n, "out of memory");
                return 500;
            }
            n_units += t->h[i].n_text;
        }
        if (!(units = calloc((size_t)n_units + 1, sizeof *units))) {
            snprintf(msg, n, "out of memory");
            return 500;
        }
        for (int i = 0, at = 0; i < t->r.n_q; i++)
            for (int j = 0; j < t->h[i].n_text; j++) units[at++] = t->h[i].text[j];
    }
    int st = srv_lt_run_start(s, &t->run, units, n_units, LT_MAX_SENTENCES, p, msg, n);
    if (t->r.html) free(units);
    return st;
}

static enum MHD_Result lt_fail(conn *k, struct MHD_Connection *c, int status, const char *message) {
    return srv_send_body(k, c, status, srv_lt_error_body(message), "application/json", NULL);
}

/* Texts of spaces and emoji alone (srv_lt_translatable): LibreTranslate
 * sends them back as they are, without alternatives, "en" at 0 detected
 * for a source "auto". (Its English source then must have a translation
 * to the target, else a 400; here the texts come back whatever the pair.) */
static enum MHD_Result untranslatable(conn *k, struct MHD_Connection *c, lt_st *t) {
    int per = 1 + t->r.alternatives;
    const char **texts = calloc((size_t)t->r.n_q * per + 1, sizeof *texts);
    if (t->r.auto_src) {
        snprintf(t->r.detected, sizeof t->r.detected, "en");
        t->r.detected_conf = 0;
        t->r.has_detected = 1;
    }
    for (int i = 0; texts && i < t->r.n_q; i++)
        for (int j = 0; j < per; j++) texts[(size_t)i * per + j] = j ? "" : t->r.q[i];
    char *body = texts ? srv_lt_body(&t->r, texts) : NULL;
    free(texts);
    lt_free(t);
    return body ? srv_send_body(k, c, 200, body, "application/json", NULL) : lt_fail(k, c, 500, "out of memory");
}

static enum MHD_Result submit(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    if (k->body_big) return lt_fail(k, c, 413, "the request body is over 1 MB");
    lt_st *t = calloc(1, sizeof *t);
    if (!t) return lt_fail(k, c, 500, "out of memory");
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    int json = ct && !strncasecmp(ct, "application/json", 16);
    srv_lt_error e;
    if (!srv_lt_parse(s->model, k->body ? k->body : "", k->body_len, json, &t->r, &e)) {
        lt_free(t);
        return lt_fail(k, c, e.status, e.message);
    }
    if (!srv_lt_translatable(&t->r)) return untranslatable(k, c, t);
    char why[600];
    int dst = t->r.auto_src ? srv_lt_detect_source(s, &t->r, why, sizeof why) : 0;
    if (dst == 400 && !t->r.has_detected && !s->langid_path)
        dst = 0;   /* no identifier installed: the tokenizer's source, as before one */
    if (dst) {
        lt_free(t);
        return lt_fail(k, c, dst, why);
    }
    encdec_generate_params p;
    srv_lt_params(s, &t->r, &p);
    char msg[600];
    int status = lt_start(s, t, &p, msg, sizeof msg);
    if (status) {
        lt_free(t);
        return lt_fail(k, c, status, msg);
    }
    k->ep = t;
    k->ep_free = lt_free;
    srv_park_conn(s, &k->park, c, srv_lt_run_done, &t->run, s->o.timeout_s > 0 ? k->t0 + s->o.timeout_s * 1e3 : 0);
    return MHD_YES;
}

static enum MHD_Result answer(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    lt_st *t = k->ep;
    if (k->park.gone) {
        k->status = 499;
        return MHD_NO;
    }
    if (k->park.late && !srv_lt_run_done(&t->run, 0))
        return lt_fail(k, c, 504, "the request took longer than the server's limit");
    int per = 1 + t->r.alternatives;
    size_t n_units = (size_t)t->run.n_unit * per;
    char **unit = calloc(n_units + 1, sizeof *unit);
    const char **texts = calloc((size_t)t->r.n_q * per + 1, sizeof *texts);
    char **docs = t->r.html ? calloc((size_t)t->r.n_q, sizeof *docs) : NULL;
    char msg[600] = "out of memory";
    int status = !unit || !texts || (t->r.html && !docs) ? 500 : 0;
    if (!status) status = srv_lt_run_collect(s, &t->run, per, unit, msg, sizeof msg);
    if (docs && !status) {   /* each HTML text again, its nodes translated (per is 1) */
        for (int i = 0, at = 0; i < t->r.n_q && !status; at += t->h[i++].n_text)
            if (!(docs[i] = srv_html_join(&t->h[i], (const char *const *)unit + at))) status = 500;
        for (int i = 0; i < t->r.n_q && !status; i++) texts[i] = docs[i];
    } else if (!status) {    /* the units are the texts, touched as LibreTranslate touches them */
        for (size_t i = 0; i < n_units && !status; i++) {
            char *f = srv_lt_format(t->r.q[i / per], unit[i]);
            char *u = f ? srv_html_unescape(f) : NULL;
            free(f);
            if (!u) status = 500;
            free(unit[i]);
            texts[i] = unit[i] = u;
        }
    }
    char *body = status ? NULL : srv_lt_body(&t->r, texts);
    enum MHD_Result ret = status || !body ? lt_fail(k, c, status ? status : 500, status ? msg : "out of memory")
                                          : srv_send_body(k, c, 200, body, "application/json", NULL);
    for (int i = 0; docs && i < t->r.n_q; i++) free(docs[i]);
    for (size_t i = 0; unit && i < n_units; i++) free(unit[i]);
    free(docs);
    free(unit);
    free(texts);
    return ret;
}

enum MHD_Result srv_ep_translate(conn *k, struct MHD_Connection *c) {
    if (!k->s->text) return lt_fail(k, c, 404, "the model transcribes speech: /translate serves translation models");
    return k->ep ? answer(k, c) : submit(k, c);
}

enum MHD_Result srv_ep_detect(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    if (!s->text) return lt_fail(k, c, 404, "the model transcribes speech: /detect serves translation models");
    if (k->body_big) return lt_fail(k, c, 413, "the request body is over 1 MB");
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    int json = ct && !strncasecmp(ct, "application/json", 16);
    srv_lt_req r;
    srv_lt_error e;
    if (!srv_lt_parse_q(k->body ? k->body : "", k->body_len, json, &r, &e)) {
        srv_lt_free(&r);
        return lt_fail(k, c, e.status, e.message);
    }
    char msg[600] = "out of memory";
    int status = 500;
    const encdec_langid *l = srv_lt_langid(s, &status, msg, sizeof msg);
    srv_lt_codes *codes = l ? malloc(sizeof *codes) : NULL;
    srv_lt_guess *g = NULL;
    int n = 0;
    encdec_status st = ENCDEC_ERR_NOMEM;
    if (codes) {
        srv_lt_codes_of(s->model, codes);
        st = srv_lt_detect(l, r.q, r.n_q, r.q_list, codes, &g, &n);
        snprintf(msg, sizeof msg, "%s", st == ENCDEC_ERR_ARG ? encdec_last_error() : "out of memory");
        status = st == ENCDEC_ERR_ARG ? 400 : 500;
    }
    free(codes);
    srv_lt_free(&r);
    char *body = st ? NULL : srv_lt_detect_body(g, n);
    free(g);
    if (!body) return lt_fail(k, c, st ? status : 500, st ? msg : "out of memory");
    return srv_send_body(k, c, 200, body, "application/json", NULL);
}

enum MHD_Result srv_ep_lt_settings(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    pthread_mutex_lock(&s->model_mu);
    char *body = s->text ? srv_lt_settings(s->model, s->o.no_files ? NULL : srv_doc_extensions()) : NULL;
    pthread_mutex_unlock(&s->model_mu);
    if (!s->text) return lt_fail(k, c, 404, "the model transcribes speech: LibreTranslate's API serves translation models");
    if (!body) return lt_fail(k, c, 500, "out of memory");
    return srv_send_body(k, c, 200, body, "application/json", NULL);
}

enum MHD_Result srv_ep_lt_off(conn *k, struct MHD_Connection *c) {
    return lt_fail(k, c, 403, "Suggestions are disabled on this server.");
}

enum MHD_Result srv_ep_languages(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    pthread_mutex_lock(&s->model_mu);
    char *body = s->text ? srv_lt_languages(s->model) : strdup("[]");
    pthread_mutex_unlock(&s->model_mu);
    if (!body) return lt_fail(k, c, 500, "out of memory");
    return srv_send_body(k, c, 200, body, "application/json", NULL);
}
