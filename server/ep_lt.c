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
#include "lt_html.h"
#include "lt_split.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LT_BEAMS 4        /* beam search, as Argos Translate runs these models */
#define LT_MAX_NODES 512  /* text nodes of a request's HTML texts, all together */
#define LT_MAX_SENTENCES 1024   /* sentences of a request's texts (or nodes), all together */

typedef struct {
    srv_lt_req r;
    srv_html h[SRV_LT_MAX_Q];   /* format html: each text's markup and text nodes */
    srv_sentences *ss;          /* [n_unit] each unit's sentences: a unit is a text, or a
                                   text node (html) */
    int n_unit;
    encdec_request **q;         /* [n_req]: one a sentence, in the units' order */
    int n_req;
} lt_st;

static void lt_free(void *p) {
    lt_st *t = p;
    if (!t) return;
    for (int i = 0; i < t->n_req; i++) encdec_request_free(t->q[i]);   /* cancels the rest */
    free(t->q);
    for (int i = 0; t->ss && i < t->n_unit; i++) srv_sentences_free(&t->ss[i]);
    free(t->ss);
    for (int i = 0; i < SRV_LT_MAX_Q; i++) srv_html_free(&t->h[i]);
    srv_lt_free(&t->r);
    free(t);
}

/* The units: the request's texts, or their HTML's text nodes (t->h), each
 * cut into its sentences (t->ss); the sentences, each a NUL-terminated copy,
 * into *src (malloc'd, as each entry). 0, or an HTTP status with msg set. */
static int lt_sources(lt_st *t, char ***src, int *n_src, char *msg, size_t n) {
    int units = t->r.n_q;
    if (t->r.html) {
        units = 0;
        for (int i = 0; i < t->r.n_q; i++) {
            int st = srv_html_split(t->r.q[i], LT_MAX_NODES - units, &t->h[i]);
            if (st == -2) {
                snprintf(msg, n, "format html: at most %d texts to translate a request", LT_MAX_NODES);
                return 400;
            }
            if (st) {
                snprintf(msg, n, "out of memory");
                return 500;
            }
            units += t->h[i].n_text;
        }
    }
    t->ss = calloc((size_t)units + 1, sizeof *t->ss);
    if (!t->ss) {
        snprintf(msg, n, "out of memory");
        return 500;
    }
    int total = 0;
    for (int i = 0; i < t->r.n_q; i++) {
        int k = t->r.html ? t->h[i].n_text : 1;
        for (int j = 0; j < k; j++, t->n_unit++) {
            const char *text = t->r.html ? t->h[i].text[j] : t->r.q[i];
            int st = srv_lt_sentences(text, LT_MAX_SENTENCES - total, &t->ss[t->n_unit]);
            if (st == -2) {
                t->n_unit++;
                snprintf(msg, n, "at most %d sentences to translate a request", LT_MAX_SENTENCES);
                return 400;
            }
            if (st) {
                t->n_unit++;
                snprintf(msg, n, "out of memory");
                return 500;
            }
            total += t->ss[t->n_unit].n;
        }
    }
    *src = calloc((size_t)total + 1, sizeof **src);
    t->q = calloc((size_t)total + 1, sizeof *t->q);
    if (!*src || !t->q) {
        snprintf(msg, n, "out of memory");
        return 500;
    }
    *n_src = 0;
    for (int u = 0; u < t->n_unit; u++)
        for (int i = 0; i < t->ss[u].n; i++) {
            const srv_span *sp = &t->ss[u].s[i];
            char *c = malloc(sp->len + 1);
            if (!c) {
                snprintf(msg, n, "out of memory");
                return 500;
            }
            memcpy(c, t->ss[u].text + sp->off, sp->len);
            c[sp->len] = 0;
            (*src)[(*n_src)++] = c;
        }
    return 0;
}

static enum MHD_Result lt_fail(conn *k, struct MHD_Connection *c, int status, const char *message) {
    return srv_send_body(k, c, status, srv_lt_error_body(message), "application/json", NULL);
}

/* The language identifier, loaded once at the first call; NULL with *status
 * and msg set when none is installed (400) or it cannot be loaded (500). */
static const encdec_langid *langid(srv *s, int *status, char *msg, size_t n) {
    pthread_mutex_lock(&s->langid_mu);
    if (!s->langid && !s->langid_failed && s->langid_path) {
        encdec_status st = encdec_langid_load(s->langid_path, &s->langid);
        if (st) {
            s->langid_failed = 1;
            fprintf(stderr, "encdec serve: cannot load the language identifier %s: %s\n", s->langid_path,
                    encdec_last_error());
        }
    }
    const encdec_langid *l = s->langid;
    pthread_mutex_unlock(&s->langid_mu);
    if (!l) {
        *status = s->langid_path ? 500 : 400;
        snprintf(msg, n, s->langid_path ? "the language identifier could not be loaded (the server's log says why)"
                                        : "language detection is not installed on this server "
                                          "(scripts/fetch-model.sh langid): give the source language");
    }
    return l;
}

/* A source "auto": the language detect_languages finds in the texts
 * (LibreTranslate's pt/pb and zh/zt stand in for each other), into r->src
 * and r->detected. 0, or an HTTP status with msg set. */
static int detect_source(srv *s, srv_lt_req *r, char *msg, size_t n) {
    int status;
    const encdec_langid *l = langid(s, &status, msg, n);
    if (!l) return status;
    srv_lt_codes *codes = malloc(sizeof *codes);
    srv_lt_guess *g = NULL;
    int ng = 0;
    encdec_status st = codes ? ENCDEC_OK : ENCDEC_ERR_NOMEM;
    if (!st) {
        srv_lt_codes_of(s->model, codes);
        st = srv_lt_detect(l, r->q, r->n_q, 1, codes, &g, &ng);
    }
    free(codes);
    if (st) {
        snprintf(msg, n, "%s", st == ENCDEC_ERR_ARG ? encdec_last_error() : "out of memory");
        return st == ENCDEC_ERR_ARG ? 400 : 500;
    }
    snprintf(r->detected, sizeof r->detected, "%s", g[0].language);
    r->detected_conf = g[0].confidence;
    r->has_detected = 1;
    free(g);
    encdec_model_info info;
    encdec_model_get_info(s->model, &info);
    if (!encdec_model_language(s->model, 0) || !strcmp(info.model_type, "marian")) {   /* one source */
        if (!info.source_language || !strcmp(r->detected, info.source_language)) return 0;
        snprintf(msg, n, "the text is in %s (detected): this model translates from %s", r->detected,
                 info.source_language);
        return 400;
    }
    static const char *const alias[][2] = {{"pt", "pb"}, {"pb", "pt"}, {"zh", "zt"}, {"zt", "zh"}};
    r->src = srv_lt_find(s->model, r->detected);
    for (size_t i = 0; r->src < 0 && i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(r->detected, alias[i][0])) r->src = srv_lt_find(s->model, alias[i][1]);
    if (r->src >= 0) return 0;
    snprintf(msg, n, "%s (detected) is not supported (GET /languages lists the languages)", r->detected);
    return 400;
}

static int all_done(void *ctx, double now) {
    (void)now;
    lt_st *t = ctx;
    for (int i = 0; i < t->n_req; i++)
        if (!encdec_request_done(t->q[i])) return 0;
    return 1;
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
    int dst = t->r.auto_src ? detect_source(s, &t->r, why, sizeof why) : 0;
    if (dst == 400 && !t->r.has_detected && !s->langid_path)
        dst = 0;   /* no identifier installed: the tokenizer's source, as before one */
    if (dst) {
        lt_free(t);
        return lt_fail(k, c, dst, why);
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
    char **src = NULL;
    char msg[600];
    int n = 0;
    int status = lt_sources(t, &src, &n, msg, sizeof msg);
    t->n_req = 0;
    for (int i = 0; i < n && !status; i++) {
        encdec_status st = encdec_engine_generate(s->engine, src[i], &p, &t->q[i]);
        if (st) {
            snprintf(msg, sizeof msg, "sentence %d: %s", i, encdec_last_error());   /* (its text may be no UTF-8) */
            status = st == ENCDEC_ERR_ARG ? 400 : 500;
        } else {
            t->n_req = i + 1;
        }
    }
    for (int i = 0; src && i < n; i++) free(src[i]);
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

/* Each unit's translations (k of per) from its sentences' (sent[i * per +
 * k], the units' sentences in order) into out[u * per + k] (malloc'd):
 * 0, or -1 out of memory. */
static int units_of(const lt_st *t, const char *const *sent, int per, char **out) {
    const char **one = calloc((size_t)t->n_req + 1, sizeof *one);
    if (!one) return -1;
    int base = 0, bad = 0;
    for (int u = 0; u < t->n_unit && !bad; base += t->ss[u++].n)
        for (int k = 0; k < per && !bad; k++) {
            for (int j = 0; j < t->ss[u].n; j++) one[j] = sent[(size_t)(base + j) * per + k];
            bad = !(out[(size_t)u * per + k] = srv_lt_rejoin(&t->ss[u], one));
        }
    free(one);
    return bad ? -1 : 0;
}

static enum MHD_Result answer(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    lt_st *t = k->ep;
    if (k->park.gone) {
        k->status = 499;
        return MHD_NO;
    }
    if (k->park.late && !all_done(t, 0)) return lt_fail(k, c, 504, "the request took longer than the server's limit");
    int per = 1 + t->r.alternatives;
    size_t n_units = (size_t)t->n_unit * per;
    encdec_result **res = calloc((size_t)t->n_req + 1, sizeof *res);
    const char **sent = calloc((size_t)t->n_req * per + 1, sizeof *sent);
    char **unit = calloc(n_units + 1, sizeof *unit);
    const char **texts = calloc((size_t)t->r.n_q * per + 1, sizeof *texts);
    char **docs = t->r.html ? calloc((size_t)t->r.n_q, sizeof *docs) : NULL;
    enum MHD_Result ret = MHD_YES;
    int failed = !res || !sent || !unit || !texts || (t->r.html && !docs);
    char msg[600] = "out of memory";
    int status = 500;
    for (int i = 0; i < t->n_req && !failed; i++) {
        encdec_status st = encdec_request_wait(t->q[i], &res[i]);
        if (st) {   /* an input the model cannot take (too long, invalid UTF-8): the client's */
            snprintf(msg, sizeof msg, "sentence %d: %s", i, encdec_last_error());
            status = st == ENCDEC_ERR_ARG ? 400 : 500;
            failed = 1;
            break;
        }
        srv_add_tokens(s, encdec_result_timings(res[i])->n_tokens);
        for (int k2 = 0; k2 < per; k2++) {
            const encdec_sequence *sq = encdec_result_sequence(res[i], k2);
            sent[(size_t)i * per + k2] = sq && sq->text ? sq->text : "";
        }
    }
    if (!failed) failed = units_of(t, sent, per, unit) != 0;
    if (docs && !failed) {   /* each HTML text again, its nodes translated (per is 1) */
        for (int i = 0, at = 0; i < t->r.n_q && !failed; at += t->h[i++].n_text)
            failed = !(docs[i] = srv_html_join(&t->h[i], (const char *const *)unit + at));
        for (int i = 0; i < t->r.n_q && !failed; i++) texts[i] = docs[i];
    } else if (!failed) {    /* the units are the texts, touched as LibreTranslate touches them */
        for (size_t i = 0; i < n_units && !failed; i++) {
            char *f = srv_lt_format(t->r.q[i / per], unit[i]);
            char *u = f ? srv_html_unescape(f) : NULL;
            free(f);
            failed = !u;
            free(unit[i]);
            texts[i] = unit[i] = u;
        }
    }
    char *body = failed ? NULL : srv_lt_body(&t->r, texts);
    if (failed || !body) ret = lt_fail(k, c, failed ? status : 500, msg);
    else ret = srv_send_body(k, c, 200, body, "application/json", NULL);
    for (int i = 0; res && i < t->n_req; i++) encdec_result_free(res[i]);
    for (int i = 0; docs && i < t->r.n_q; i++) free(docs[i]);
    for (size_t i = 0; unit && i < n_units; i++) free(unit[i]);
    free(docs);
    free(unit);
    free(sent);
    free(res);
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
    const encdec_langid *l = langid(s, &status, msg, sizeof msg);
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
    char *body = s->text ? srv_lt_settings(s->model) : NULL;
    pthread_mutex_unlock(&s->model_mu);
    if (!s->text) return lt_fail(k, c, 404, "the model transcribes speech: LibreTranslate's API serves translation models");
    if (!body) return lt_fail(k, c, 500, "out of memory");
    return srv_send_body(k, c, 200, body, "application/json", NULL);
}

enum MHD_Result srv_ep_lt_off(conn *k, struct MHD_Connection *c) {
    return lt_fail(k, c, 403, k->route == R_LT_SUGGEST ? "Suggestions are disabled on this server."
                                                      : "Files translation are disabled on this server.");
}

enum MHD_Result srv_ep_languages(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    pthread_mutex_lock(&s->model_mu);
    char *body = s->text ? srv_lt_languages(s->model) : strdup("[]");
    pthread_mutex_unlock(&s->model_mu);
    if (!body) return lt_fail(k, c, 500, "out of memory");
    return srv_send_body(k, c, 200, body, "application/json", NULL);
}
