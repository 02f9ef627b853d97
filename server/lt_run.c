/* lt_run.c - units to sentences to engine requests, and back (lt_run.h). */
#include "lt_run.h"
#include "lt_detect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LT_BEAMS 4   /* beam search, as Argos Translate runs these models */

void srv_lt_params(srv *s, const srv_lt_req *r, encdec_generate_params *p) {
    *p = encdec_generate_default_params();
    p->num_return_sequences = 1 + r->alternatives;
    p->num_beams = p->num_return_sequences > LT_BEAMS ? p->num_return_sequences : LT_BEAMS;
    /* LibreTranslate's engine, Argos Translate, runs CTranslate2's translate_batch
     * so: 4 beams (more for more alternatives), length_penalty 0.2, its unknowns
     * replaced, 256 tokens at most and 1 at least (min_decoding_length);
     * CTranslate2's beam ends with that many finished hypotheses, and
     * applies its rules to the logits */
    p->max_new_tokens = 256;
    p->min_new_tokens = 1;
    p->length_penalty = 0.2f;
    p->early_stopping = 1;
    p->replace_unknowns = 1;
    p->ctranslate2_rules = 1;
    encdec_model_info info;
    encdec_model_get_info(s->model, &info);
    if (info.family && !strcmp(info.family, "bart") && p->max_new_tokens > info.n_text_ctx - 1)
        p->max_new_tokens = info.n_text_ctx - 1;
    p->src_lang = r->src >= 0 ? encdec_model_language(s->model, r->src) : NULL;
    p->tgt_lang = r->tgt >= 0 ? encdec_model_language(s->model, r->tgt) : NULL;
}

static int nomem(char *msg, size_t n) {
    snprintf(msg, n, "out of memory");
    return 500;
}

int srv_lt_run_start(srv *s, srv_lt_run *u, const char *const *units, int n_units, int max_sentences,
                     const encdec_generate_params *p, char *msg, size_t n) {
    memset(u, 0, sizeof *u);
    if (!(u->ss = calloc((size_t)n_units + 1, sizeof *u->ss))) return nomem(msg, n);
    int total = 0;
    for (; u->n_unit < n_units; u->n_unit++) {
        int st = srv_lt_sentences(units[u->n_unit], max_sentences - total, &u->ss[u->n_unit]);
        if (st) {
            u->n_unit++;   /* (freed with the others) */
            if (st != -2) return nomem(msg, n);
            snprintf(msg, n, "at most %d sentences to translate a request", max_sentences);
            return 400;
        }
        total += u->ss[u->n_unit].n;
    }
    if (!(u->q = calloc((size_t)total + 1, sizeof *u->q))) return nomem(msg, n);
    for (int k = 0; k < u->n_unit; k++)
        for (int i = 0; i < u->ss[k].n; i++) {
            const srv_span *sp = &u->ss[k].s[i];
            char *c = malloc(sp->len + 1);
            if (!c) return nomem(msg, n);
            memcpy(c, u->ss[k].text + sp->off, sp->len);
            c[sp->len] = 0;
            encdec_status st = encdec_engine_generate(s->engine, c, p, &u->q[u->n_req]);
            free(c);
            if (st) {   /* (its text may be no UTF-8) */
                snprintf(msg, n, "sentence %d: %s", u->n_req, encdec_last_error());
                return st == ENCDEC_ERR_ARG ? 400 : 500;
            }
            u->n_req++;
        }
    return 0;
}

int srv_lt_run_done(void *ctx, double now) {
    (void)now;
    srv_lt_run *u = ctx;
    for (int i = 0; i < u->n_req; i++)
        if (!encdec_request_done(u->q[i])) return 0;
    return 1;
}

int srv_lt_run_collect(srv *s, srv_lt_run *u, int per, char **out, char *msg, size_t n) {
    encdec_result **res = calloc((size_t)u->n_req + 1, sizeof *res);
    const char **sent = calloc((size_t)u->n_req * per + 1, sizeof *sent);
    const char **one = calloc((size_t)u->n_req + 1, sizeof *one);
    int status = !res || !sent || !one ? nomem(msg, n) : 0;
    for (int i = 0; i < u->n_req && !status; i++) {
        encdec_status st = encdec_request_wait(u->q[i], &res[i]);
        if (st) {   /* an input the model cannot take (too long, invalid UTF-8): the client's */
            snprintf(msg, n, "sentence %d: %s", i, encdec_last_error());
            status = st == ENCDEC_ERR_ARG ? 400 : 500;
            break;
        }
        srv_add_tokens(s, encdec_result_timings(res[i])->n_tokens);
        for (int k = 0; k < per; k++) {
            const encdec_sequence *sq = encdec_result_sequence(res[i], k);
            sent[(size_t)i * per + k] = sq && sq->text ? sq->text : "";
        }
    }
    int base = 0;
    for (int x = 0; x < u->n_unit && !status; base += u->ss[x++].n)
        for (int k = 0; k < per && !status; k++) {
            for (int j = 0; j < u->ss[x].n; j++) one[j] = sent[(size_t)(base + j) * per + k];
            if (!(out[(size_t)x * per + k] = srv_lt_rejoin(&u->ss[x], one))) status = nomem(msg, n);
        }
    for (int i = 0; res && i < u->n_req; i++) encdec_result_free(res[i]);
    free(res);
    free(sent);
    free(one);
    return status;
}

/* The language identifier, loaded once at the first call; NULL with *status
 * and msg set when none is installed (400) or it cannot be loaded (500). */
const encdec_langid *srv_lt_langid(srv *s, int *status, char *msg, size_t n) {
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
int srv_lt_detect_source(srv *s, srv_lt_req *r, char *msg, size_t n) {
    int status;
    const encdec_langid *l = srv_lt_langid(s, &status, msg, n);
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

void srv_lt_run_free(srv_lt_run *u) {
    for (int i = 0; i < u->n_req; i++) encdec_request_free(u->q[i]);   /* cancels the rest */
    free(u->q);
    for (int i = 0; u->ss && i < u->n_unit; i++) srv_sentences_free(&u->ss[i]);
    free(u->ss);
    memset(u, 0, sizeof *u);
}
