/* ep_text.c - POST /v1/completions for T5-family models (http.h): a
 * request per prompt into the engine, the connection parked until all are
 * done, or their tokens streamed as they come (each choice's text, its
 * finish_reason when its prompt ends, then [DONE]; keep-alive comments
 * while nothing comes; the deadline ends it with an error event). With
 * stop sequences, greedy and sampled choices are watched token by token
 * (streamed or not): a choice ends where one begins (streamed text holds
 * back what could begin one), and a prompt's request is cancelled once all
 * its choices ended so. */
#include "http.h"
#include "completions.h"
#include "openai.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct comp_st comp_st;

/* on_token's user: a prompt of a streamed completion */
typedef struct {
    comp_st *cs;
    int prompt;
} comp_tok;

struct comp_st {
    srv_completion cp;
    encdec_request *q[64];
    encdec_result *r[64];
    int n_tok[64];
    comp_tok tok[64];
    srv_choice *ch;           /* [n_prompts x n] the watched choices (watch) */
    int watch;                /* greedy and sampled choices come token by token (stream or stop) */
    char fin[64];             /* stream: the prompt's last events are out */
    char id[48];
    int tokens;               /* stream: choices go out token by token (not beams) */
    int finished;             /* stream: the last event ([DONE] or an error) is in ev */
    ev_queue ev;              /* stream: the requests' threads add tokens */
    srv *s;
    conn *k;
    struct MHD_Connection *c;
    double deadline, last_sent;
    srv_park park;
};

static void comp_free(void *p) {
    comp_st *cs = p;
    if (!cs) return;
    for (int i = 0; i < cs->cp.n_prompts; i++) {
        encdec_request_free(cs->q[i]);   /* cancels the ones still running; no callback after */
        encdec_result_free(cs->r[i]);
    }
    for (int i = 0; cs->ch && i < cs->cp.n_prompts * cs->cp.p.num_return_sequences; i++) free(cs->ch[i].text);
    free(cs->ch);
    srv_completion_free(&cs->cp);
    evq_destroy(&cs->ev);
    free(cs);
}

static int all_done(const comp_st *cs) {
    for (int i = 0; i < cs->cp.n_prompts; i++)
        if (!encdec_request_done(cs->q[i])) return 0;
    return 1;
}

static int any_done(const comp_st *cs) {
    for (int i = 0; i < cs->cp.n_prompts; i++)
        if (!cs->fin[i] && encdec_request_done(cs->q[i])) return 1;
    return 0;
}

static int ready_all(void *ctx, double now) {
    (void)now;
    return all_done(ctx);
}

/* Whether every choice of prompt i ended at a stop sequence. */
static int all_stopped(const comp_st *cs, int i) {
    int n = cs->cp.p.num_return_sequences;
    for (int k = 0; k < n; k++)
        if (!cs->ch[i * n + k].stopped) return 0;
    return 1;
}

/* A token of a watched prompt (on its request's thread): its choice's text
 * grows (cut at a stop sequence); streamed, what no stop sequence can begin
 * in goes out, and a choice that stopped gets its last event. Nonzero (the
 * request cancelled) once every choice of the prompt stopped. */
static int on_comp_token(int input, int sequence, int id, float lp, const char *text, void *user) {
    (void)input, (void)id, (void)lp;
    comp_tok *t = user;
    comp_st *cs = t->cs;
    int index = t->prompt * cs->cp.p.num_return_sequences + sequence;
    srv_choice *ch = &cs->ch[index];
    int was = ch->stopped;
    if (!srv_choice_add(&cs->cp, ch, text)) return 1;   /* out of memory: the request ends in error */
    if (cs->cp.stream && !was) {
        size_t upto = ch->stopped ? ch->len : srv_stop_safe(&cs->cp, ch->text ? ch->text : "", ch->len);
        if (upto > ch->sent) {
            char keep = ch->text[upto];
            ch->text[upto] = 0;
            evq_push(&cs->ev, srv_completion_event(cs->id, cs->s->name, index, ch->text + ch->sent, NULL));
            ch->text[upto] = keep;
            ch->sent = upto;
        }
        if (ch->stopped) evq_push(&cs->ev, srv_completion_event(cs->id, cs->s->name, index, "", "stop"));
    }
    return all_stopped(cs, t->prompt);
}

/* Prompt i's request's end: its result (NULL, OK: every choice stopped, so
 * the request was cancelled). */
static encdec_status prompt_end(comp_st *cs, int i, encdec_result **r) {
    encdec_status st = encdec_request_wait(cs->q[i], r);
    if (st == ENCDEC_ERR_CANCELLED && cs->watch && all_stopped(cs, i)) {
        encdec_result_free(*r);
        *r = NULL;
        return ENCDEC_OK;
    }
    return st;
}

/* The prompts whose requests ended: their last events (an error ends the
 * stream). Returns how many ended now. */
static int comp_reap(comp_st *cs) {
    int ended = 0;
    for (int i = 0; i < cs->cp.n_prompts && !cs->finished; i++) {
        if (cs->fin[i] || !encdec_request_done(cs->q[i])) continue;
        encdec_result *r = NULL;
        encdec_status st = prompt_end(cs, i, &r);
        char *ev;
        if (st) {
            srv_error e = {500, "", "server_error", NULL, NULL};
            snprintf(e.message, sizeof e.message, "prompt %d: %s", i, encdec_last_error());
            ev = srv_sse_error(&e);
            cs->finished = 1;
        } else {
            ev = srv_completion_chunk(&cs->cp, r, i, cs->id, cs->s->name, !cs->tokens,
                                      cs->watch ? cs->ch + i * cs->cp.p.num_return_sequences : NULL);
            if (r) srv_add_tokens(cs->s, encdec_result_timings(r)->n_tokens);
        }
        encdec_result_free(r);
        evq_push(&cs->ev, ev ? ev : srv_sse_error(&(srv_error){500, "out of memory", "server_error", NULL, NULL}));
        cs->fin[i] = 1;
        ended++;
    }
    int all = !cs->finished;
    for (int i = 0; i < cs->cp.n_prompts && all; i++) all = cs->fin[i];
    if (all) {
        evq_push(&cs->ev, strdup("data: [DONE]\n\n"));
        cs->finished = 1;
    }
    return ended;
}

static int stream_ready(void *ctx, double now) {
    comp_st *cs = ctx;
    return evq_ready(&cs->ev) || any_done(cs) || now - cs->last_sent >= cs->s->o.keepalive_s * 1e3;
}

static ssize_t comp_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    comp_st *cs = cls;
    for (;;) {
        double now = srv_now_ms();
        size_t n = evq_take(&cs->ev, buf, max);
        if (n) {
            cs->k->bytes += n;
            cs->last_sent = now;
            return (ssize_t)n;
        }
        if (cs->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (cs->park.gone) return MHD_CONTENT_READER_END_WITH_ERROR;   /* comp_free cancels the rest */
        if (comp_reap(cs)) continue;
        if (srv_sse_idle(&cs->ev, cs->s, cs->deadline, now, &cs->last_sent, buf, max, &n)) {
            cs->finished = 1;
            cs->k->status = 504;
            for (int i = 0; i < cs->cp.n_prompts; i++) encdec_request_cancel(cs->q[i]);
            continue;
        }
        if (n) return (ssize_t)n;
        srv_park_conn(cs->s, &cs->park, cs->c, stream_ready, cs, cs->deadline);
        return 0;
    }
}

static void comp_stream_done(void *cls) {
    comp_st *cs = cls;
    atomic_fetch_sub(&cs->s->inflight, 1);
    comp_free(cs);
}

static enum MHD_Result submit(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    if (k->body_big)
        return srv_fail_req(k, c, 413, "invalid_request_error", NULL, "request_too_large",
                            "the request body is over 1 MB");
    comp_st *cs = calloc(1, sizeof *cs);
    if (!cs) return srv_fail_req(k, c, 500, "server_error", NULL, NULL, "out of memory");
    evq_init(&cs->ev);
    srv_completion_id(cs->id, sizeof cs->id);
    cs->s = s;
    cs->k = k;
    cs->c = c;
    cs->deadline = s->o.timeout_s > 0 ? k->t0 + s->o.timeout_s * 1e3 : 0;
    cs->last_sent = srv_now_ms();
    srv_error e;
    if (!srv_completion_parse(k->body ? k->body : "", k->body_len, &cs->cp, &e)) {
        comp_free(cs);
        return srv_send_error(k, c, &e);
    }
    if (!srv_model_known(s, cs->cp.model)) {
        enum MHD_Result r = srv_fail_req(k, c, 404, "invalid_request_error", "model",
                                         "model_not_found", "the model '%.100s' does not exist "
                                         "here; this server has '%s'", cs->cp.model, s->name);
        comp_free(cs);
        return r;
    }
    cs->tokens = cs->cp.stream && cs->cp.p.num_beams == 1;
    cs->watch = cs->cp.p.num_beams == 1 && (cs->cp.stream || cs->cp.n_stop > 0);
    if (cs->watch && !(cs->ch = calloc((size_t)cs->cp.n_prompts * cs->cp.p.num_return_sequences, sizeof *cs->ch))) {
        comp_free(cs);
        return srv_fail_req(k, c, 500, "server_error", NULL, NULL, "out of memory");
    }
    for (int i = 0; i < cs->cp.n_prompts; i++) {
        encdec_generate_params p = cs->cp.p;
        if (cs->watch) {
            cs->tok[i] = (comp_tok){cs, i};
            p.on_token = on_comp_token;
            p.user = &cs->tok[i];
        }
        encdec_status st = encdec_engine_generate(s->engine, cs->cp.prompts[i], &p, &cs->q[i]);
        if (st) {
            enum MHD_Result r = srv_fail_req(k, c, st == ENCDEC_ERR_ARG ? 400 : 500,
                                             st == ENCDEC_ERR_ARG ? "invalid_request_error"
                                                                  : "server_error",
                                             NULL, NULL, "prompt %d: %s", i, encdec_last_error());
            comp_free(cs);
            return r;
        }
    }
    if (cs->cp.stream) return srv_send_stream(k, c, comp_read, cs, comp_stream_done);
    k->ep = cs;
    k->ep_free = comp_free;
    srv_park_conn(s, &k->park, c, ready_all, cs, cs->deadline);
    return MHD_YES;
}

static enum MHD_Result answer(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    comp_st *cs = k->ep;
    if (k->park.gone) {
        k->status = 499;
        return MHD_NO;   /* completed() frees cs, which cancels the rest */
    }
    if (k->park.late && !all_done(cs))
        return srv_fail_req(k, c, 504, "server_error", NULL, "timeout",
                            "the request took longer than the server's limit of %g s", s->o.timeout_s);
    for (int i = 0; i < cs->cp.n_prompts; i++) {
        encdec_status st = prompt_end(cs, i, &cs->r[i]);
        if (st)
            return srv_fail_req(k, c, 500, "server_error", NULL, NULL, "prompt %d: %s", i,
                                encdec_last_error());
        int n_out = 0;
        for (int j = 0; !cs->r[i] && j < cs->cp.p.num_return_sequences; j++)
            n_out += cs->ch[i * cs->cp.p.num_return_sequences + j].n_tok;
        cs->n_tok[i] = cs->r[i] ? encdec_result_timings(cs->r[i])->n_input_tokens : encdec_request_input_tokens(cs->q[i]);
        srv_add_tokens(s, cs->r[i] ? encdec_result_timings(cs->r[i])->n_tokens : n_out);
    }
    char *body = srv_completion_body(&cs->cp, cs->r, s->name, cs->n_tok, cs->watch ? cs->ch : NULL);
    return srv_send_body(k, c, 200, body, "application/json", NULL);
}

enum MHD_Result srv_ep_completions(conn *k, struct MHD_Connection *c) {
    return k->ep ? answer(k, c) : submit(k, c);
}
