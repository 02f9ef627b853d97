/* ep_lt.c - LibreTranslate's API (http.h, lt.h): POST /translate, one engine
 * request per text, or per text node of an HTML text (lt_html.h) (they
 * share the decode steps with everything else the server runs), the
 * connection parked until all are done; GET /languages. Errors are
 * LibreTranslate's {"error": message}. */
#include "http.h"
#include "lt.h"
#include "lt_html.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LT_BEAMS 4        /* beam search, as Argos Translate runs these models */
#define LT_MAX_NODES 512  /* text nodes of a request's HTML texts, all together */

typedef struct {
    srv_lt_req r;
    srv_html h[SRV_LT_MAX_Q];   /* format html: each text's markup and text nodes */
    encdec_request **q;         /* [n_req]: one a text, or one a text node (html) */
    int n_req;
} lt_st;

static void lt_free(void *p) {
    lt_st *t = p;
    if (!t) return;
    for (int i = 0; i < t->n_req; i++) encdec_request_free(t->q[i]);   /* cancels the rest */
    free(t->q);
    for (int i = 0; i < SRV_LT_MAX_Q; i++) srv_html_free(&t->h[i]);
    srv_lt_free(&t->r);
    free(t);
}

/* The texts the engine translates: the request's, or their HTML's text
 * nodes (t->h). 0, or an HTTP status with msg set. */
static int lt_sources(lt_st *t, const char ***src, char *msg, size_t n) {
    int total = t->r.n_q;
    if (t->r.html) {
        total = 0;
        for (int i = 0; i < t->r.n_q; i++) {
            int st = srv_html_split(t->r.q[i], LT_MAX_NODES - total, &t->h[i]);
            if (st == -2) {
                snprintf(msg, n, "format html: at most %d texts to translate a request", LT_MAX_NODES);
                return 400;
            }
            if (st) {
                snprintf(msg, n, "out of memory");
                return 500;
            }
            total += t->h[i].n_text;
        }
    }
    *src = calloc((size_t)total + 1, sizeof **src);
    t->q = calloc((size_t)total + 1, sizeof *t->q);
    if (!*src || !t->q) {
        snprintf(msg, n, "out of memory");
        return 500;
    }
    t->n_req = 0;
    for (int i = 0; i < t->r.n_q; i++) {
        if (!t->r.html) {
            (*src)[t->n_req++] = t->r.q[i];
            continue;
        }
        for (int j = 0; j < t->h[i].n_text; j++) (*src)[t->n_req++] = t->h[i].text[j];
    }
    return 0;
}

static enum MHD_Result lt_fail(conn *k, struct MHD_Connection *c, int status, const char *message) {
    return srv_send_body(k, c, status, srv_lt_error_body(message), "application/json", NULL);
}

static int all_done(void *ctx, double now) {
    (void)now;
    lt_st *t = ctx;
    for (int i = 0; i < t->n_req; i++)
        if (!encdec_request_done(t->q[i])) return 0;
    return 1;
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
    encdec_generate_params p = encdec_generate_default_params();
    p.num_return_sequences = 1 + t->r.alternatives;
    p.num_beams = p.num_return_sequences > LT_BEAMS ? p.num_return_sequences : LT_BEAMS;
    /* LibreTranslate's engine, Argos Translate, runs CTranslate2's translate_batch
     * so: 4 beams (more for more alternatives), length_penalty 0.2, its unknowns
     * replaced, 256 tokens at most and 1 at least (min_decoding_length);
     * CTranslate2's beam ends with that many finished hypotheses, and
     * applies its rules to the logits */
    p.max_new_tokens = 256;
    p.min_new_tokens = 1;
    p.length_penalty = 0.2f;
    p.early_stopping = 1;
    p.replace_unknowns = 1;
    p.ctranslate2_rules = 1;
    encdec_model_info info;
    encdec_model_get_info(s->model, &info);
    if (info.family && !strcmp(info.family, "bart") && p.max_new_tokens > info.n_text_ctx - 1)
        p.max_new_tokens = info.n_text_ctx - 1;
    p.src_lang = t->r.src >= 0 ? encdec_model_language(s->model, t->r.src) : NULL;
    p.tgt_lang = t->r.tgt >= 0 ? encdec_model_language(s->model, t->r.tgt) : NULL;
    const char **src = NULL;
    char msg[600];
    int status = lt_sources(t, &src, msg, sizeof msg);
    int n = t->n_req;
    t->n_req = 0;
    for (int i = 0; i < n && !status; i++) {
        encdec_status st = encdec_engine_generate(s->engine, src[i], &p, &t->q[i]);
        if (st) {
            snprintf(msg, sizeof msg, "text %d: %s", i, encdec_last_error());
            status = st == ENCDEC_ERR_ARG ? 400 : 500;
        } else {
            t->n_req = i + 1;
        }
    }
    free(src);
    if (status) {
        lt_free(t);
        return lt_fail(k, c, status, msg);
    }
    k->ep = t;
    k->ep_free = lt_free;
    srv_park_conn(s, &k->park, c, all_done, t, s->o.timeout_s > 0 ? k->t0 + s->o.timeout_s * 1e3 : 0);
    return MHD_YES;
}

static enum MHD_Result answer(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    lt_st *t = k->ep;
    if (k->park.gone) {
        k->status = 499;
        return MHD_NO;
    }
    if (k->park.late && !all_done(t, 0)) return lt_fail(k, c, 504, "the request took longer than the server's limit");
    int per = 1 + t->r.alternatives, n = t->n_req * per;
    encdec_result **res = calloc((size_t)t->n_req + 1, sizeof *res);
    const char **texts = calloc((size_t)(n > t->r.n_q ? n : t->r.n_q) + 1, sizeof *texts);
    char **docs = t->r.html ? calloc((size_t)t->r.n_q, sizeof *docs) : NULL;
    enum MHD_Result ret = MHD_YES;
    int failed = !res || !texts || (t->r.html && !docs);
    char msg[600] = "out of memory";
    int status = 500;
    for (int i = 0; i < t->n_req && !failed; i++) {
        encdec_status st = encdec_request_wait(t->q[i], &res[i]);
        if (st) {   /* an input the model cannot take (too long, invalid UTF-8): the client's */
            snprintf(msg, sizeof msg, "text %d: %s", i, encdec_last_error());
            status = st == ENCDEC_ERR_ARG ? 400 : 500;
            failed = 1;
            break;
        }
        srv_add_tokens(s, encdec_result_timings(res[i])->n_tokens);
        for (int k2 = 0; k2 < per; k2++) {
            const encdec_sequence *sq = encdec_result_sequence(res[i], k2);
            texts[i * per + k2] = sq && sq->text ? sq->text : "";
        }
    }
    if (docs && !failed) {   /* each HTML text again, its nodes translated */
        for (int i = 0, at = 0; i < t->r.n_q && !failed; at += t->h[i++].n_text)
            failed = !(docs[i] = srv_html_join(&t->h[i], texts + at));
        for (int i = 0; i < t->r.n_q && !failed; i++) texts[i] = docs[i];
    }
    char *body = failed ? NULL : srv_lt_body(&t->r, texts);
    if (failed || !body) ret = lt_fail(k, c, failed ? status : 500, msg);
    else ret = srv_send_body(k, c, 200, body, "application/json", NULL);
    for (int i = 0; res && i < t->n_req; i++) encdec_result_free(res[i]);
    for (int i = 0; docs && i < t->r.n_q; i++) free(docs[i]);
    free(docs);
    free(res);
    free(texts);
    return ret;
}

enum MHD_Result srv_ep_translate(conn *k, struct MHD_Connection *c) {
    if (!k->s->text) return lt_fail(k, c, 404, "the model transcribes speech: /translate serves translation models");
    return k->ep ? answer(k, c) : submit(k, c);
}

enum MHD_Result srv_ep_detect(conn *k, struct MHD_Connection *c) {
    return lt_fail(k, c, 400, "language detection is not available here: give the source language "
                   "(GET /languages lists them)");
}

enum MHD_Result srv_ep_languages(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    pthread_mutex_lock(&s->model_mu);
    char *body = s->text ? srv_lt_languages(s->model) : strdup("[]");
    pthread_mutex_unlock(&s->model_mu);
    if (!body) return lt_fail(k, c, 500, "out of memory");
    return srv_send_body(k, c, 200, body, "application/json", NULL);
}
