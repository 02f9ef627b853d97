/* ep_realtime.c - GET /v1/realtime: live transcription over a WebSocket, in
 * the shape of OpenAI's Realtime API for transcription sessions
 * (?intent=transcription), above the library's live sessions (encdec_live).
 *
 * The client sends JSON events: session.update (or the beta
 * transcription_session.update) to set the language, the audio's rate and
 * turn detection; input_audio_buffer.append with base64 PCM16 (mono,
 * little-endian, 24 kHz unless the session says another rate);
 * input_audio_buffer.commit and .clear. The server answers with
 * session.created / .updated, and for each utterance (an item):
 * input_audio_buffer.speech_started, conversation.item.input_audio_
 * transcription.delta for each run of words made final (with encdec's
 * audio_start_ms / audio_end_ms: where in the session's audio), then
 * input_audio_buffer.speech_stopped, .committed and conversation.item.
 * input_audio_transcription.completed with the utterance's text; error
 * events for bad messages (the session goes on). With turn_detection
 * server_vad (the default) an utterance ends at silence; with null, at
 * the client's commit. A session that asked for partials also gets
 * encdec.transcription.partial: the words not yet final.
 *
 * One thread per session drives its socket and its live session; audio is
 * read at most encdec_live_ahead's ahead of the decodes (max_step_s, or
 * catch_up_s for a client at speaking pace whose session fell behind: on a
 * busy server the next decode takes all of it; TCP holds the rest), so a
 * client sending faster than real time loses nothing. The session ends
 * with its client, or, when the server drains or changes its model, after
 * the audio it has is transcribed (close 1001 / 1012). */
#include "http.h"
#include "openai.h"
#include "ws.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define RT_MAX_MSG (16u << 20)     /* bytes of one client message (1009 beyond) */
#define RT_MAX_QUEUED (16u << 20)  /* events a client has not read (1008 beyond) */
#define RT_MAX_HELD (2u << 20)   /* bytes of client messages read ahead of the decodes */
#define RT_POLL_MS 20

typedef struct {
    int rate;                 /* of the PCM16 appended */
    char language[32];        /* "" : detected (multilingual models) */
    int manual;               /* turn_detection null: an item ends at commit */
    int silence_ms;           /* server_vad's silence_duration_ms */
    int partials;             /* send encdec.transcription.partial */
} rt_settings;

typedef struct {
    srv *s;
    srv_ws *w;
    struct MHD_UpgradeResponseHandle *urh;
    char *extra;              /* bytes libmicrohttpd read past the headers */
    size_t n_extra;
    rt_settings set;          /* the session's: applied to the next live stream */
    rt_settings cur;          /* the open stream's (set when it opened) */
    int beta;                 /* the client speaks the beta's event names */
    encdec_live *l;           /* the open stream (NULL until audio comes) */
    double base_s;            /* the stream's start in the session's audio */
    double fed_s;             /* audio fed to the stream */
    int n_event, n_item;
    char item[32], prev_item[32];   /* the open item ("" : none) */
    char *text;               /* the open item's final text */
    double item_start;
    int bye;                  /* the session ends (close sent or the client went) */
    atomic_int refs;          /* the request's and the session thread's */
    atomic_int started;       /* the thread runs: it gives the counts back */
} rt;

/* The counts of a session that never started go back with its request. */
static void release(void *p) {
    rt *r = p;
    if (!atomic_load(&r->started) && atomic_exchange(&r->started, -1) == 0) {
        atomic_fetch_sub(&r->s->live, 1);
        atomic_fetch_sub(&r->s->inflight, 1);
    }
    if (atomic_fetch_sub(&r->refs, 1) != 1) return;
    if (r->l) encdec_live_free(r->l);
    srv_ws_free(r->w);
    free(r->text);
    free(r->extra);
    free(r);
}

/* ---- events out ---- */

static void send_event(rt *r, cJSON *ev) {
    char id[32];
    snprintf(id, sizeof id, "event_%d", ++r->n_event);
    cJSON_AddStringToObject(ev, "event_id", id);
    char *s = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    if (!s || srv_ws_send_text(r->w, s, strlen(s))) r->bye = 1;
    free(s);
}

static cJSON *event(const char *type) {
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "type", type);
    return ev;
}

static void send_error(rt *r, const char *type, const char *code, const char *param,
                       const char *client_event, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void send_error(rt *r, const char *type, const char *code, const char *param,
                       const char *client_event, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *ev = event("error"), *e = cJSON_AddObjectToObject(ev, "error");
    cJSON_AddStringToObject(e, "type", type);
    code ? (void)cJSON_AddStringToObject(e, "code", code) : (void)cJSON_AddNullToObject(e, "code");
    cJSON_AddStringToObject(e, "message", msg);
    param ? (void)cJSON_AddStringToObject(e, "param", param) : (void)cJSON_AddNullToObject(e, "param");
    client_event ? (void)cJSON_AddStringToObject(e, "event_id", client_event)
                 : (void)cJSON_AddNullToObject(e, "event_id");
    send_event(r, ev);
}

static cJSON *session_json(const rt *r) {
    const srv *s = r->s;
    cJSON *o = cJSON_CreateObject(), *td;
    if (r->beta) {
        cJSON_AddStringToObject(o, "object", "realtime.transcription_session");
        cJSON_AddStringToObject(o, "input_audio_format", "pcm16");
        cJSON *t = cJSON_AddObjectToObject(o, "input_audio_transcription");
        cJSON_AddStringToObject(t, "model", s->name);
        cJSON_AddStringToObject(t, "language", r->set.language);
        td = r->set.manual ? cJSON_AddNullToObject(o, "turn_detection")
                           : cJSON_AddObjectToObject(o, "turn_detection");
    } else {
        cJSON_AddStringToObject(o, "type", "transcription");
        cJSON_AddStringToObject(o, "object", "realtime.transcription_session");
        cJSON *in = cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "audio"), "input");
        cJSON *f = cJSON_AddObjectToObject(in, "format");
        cJSON_AddStringToObject(f, "type", "audio/pcm");
        cJSON_AddNumberToObject(f, "rate", r->set.rate);
        cJSON *t = cJSON_AddObjectToObject(in, "transcription");
        cJSON_AddStringToObject(t, "model", s->name);
        cJSON_AddStringToObject(t, "language", r->set.language);
        td = r->set.manual ? cJSON_AddNullToObject(in, "turn_detection")
                           : cJSON_AddObjectToObject(in, "turn_detection");
    }
    if (!r->set.manual) {
        cJSON_AddStringToObject(td, "type", "server_vad");
        cJSON_AddNumberToObject(td, "silence_duration_ms", r->set.silence_ms);
    }
    cJSON_AddBoolToObject(o, "partials", r->set.partials);
    return o;
}

static void send_session(rt *r, const char *type) {
    cJSON *ev = event(type);
    cJSON_AddItemToObject(ev, "session", session_json(r));
    send_event(r, ev);
}

/* An extension of encdec's on the text events: the span of the session's
 * audio the text was heard in (milliseconds, as OpenAI's buffer events
 * give times), so that a client can place it, and measure how late it came. */
static void add_span(const rt *r, cJSON *o, const encdec_live_event *ev) {
    cJSON_AddNumberToObject(o, "audio_start_ms", (double)(long long)((r->base_s + ev->start) * 1e3));
    cJSON_AddNumberToObject(o, "audio_end_ms", (double)(long long)((r->base_s + ev->end) * 1e3));
}

/* An event of the open item; span: the live event whose text it carries (NULL: none). */
static void item_event(rt *r, const char *type, const char *key, const char *text,
                       const encdec_live_event *span) {
    cJSON *ev = event(type);
    cJSON_AddStringToObject(ev, "item_id", r->item);
    if (!strncmp(type, "conversation.", 13)) cJSON_AddNumberToObject(ev, "content_index", 0);
    if (key) cJSON_AddStringToObject(ev, key, text);
    if (span) add_span(r, ev, span);
    send_event(r, ev);
}

static void open_item(rt *r, double start) {
    if (r->item[0]) return;
    snprintf(r->item, sizeof r->item, "item_%06d", ++r->n_item);
    r->item_start = r->base_s + start;
    free(r->text);
    r->text = NULL;
    if (r->cur.manual) return;   /* as OpenAI: speech_started only under server VAD */
    cJSON *ev = event("input_audio_buffer.speech_started");
    cJSON_AddNumberToObject(ev, "audio_start_ms", (double)(long long)(r->item_start * 1e3));
    cJSON_AddStringToObject(ev, "item_id", r->item);
    send_event(r, ev);
}

static void append_text(rt *r, const char *t) {
    size_t a = r->text ? strlen(r->text) : 0, b = strlen(t);
    char *n = realloc(r->text, a + b + 1);
    if (!n) return;
    memcpy(n + a, t, b + 1);
    r->text = n;
}

/* The item ends: speech_stopped (server VAD), committed, completed. */
static void close_item(rt *r, double end) {
    if (!r->item[0]) return;
    double end_s = r->base_s + end;
    if (!r->cur.manual) {
        cJSON *ev = event("input_audio_buffer.speech_stopped");
        cJSON_AddNumberToObject(ev, "audio_end_ms", (double)(long long)(end_s * 1e3));
        cJSON_AddStringToObject(ev, "item_id", r->item);
        send_event(r, ev);
    }
    cJSON *ev = event("input_audio_buffer.committed");
    cJSON_AddStringToObject(ev, "item_id", r->item);
    r->prev_item[0] ? (void)cJSON_AddStringToObject(ev, "previous_item_id", r->prev_item)
                    : (void)cJSON_AddNullToObject(ev, "previous_item_id");
    send_event(r, ev);
    const char *t = r->text ? r->text : "";
    while (*t == ' ') t++;
    ev = event("conversation.item.input_audio_transcription.completed");
    cJSON_AddStringToObject(ev, "item_id", r->item);
    cJSON_AddNumberToObject(ev, "content_index", 0);
    cJSON_AddStringToObject(ev, "transcript", t);
    cJSON *u = cJSON_AddObjectToObject(ev, "usage");
    cJSON_AddStringToObject(u, "type", "duration");
    cJSON_AddNumberToObject(u, "seconds", end_s > r->item_start ? end_s - r->item_start : 0);
    send_event(r, ev);
    snprintf(r->prev_item, sizeof r->prev_item, "%s", r->item);
    r->item[0] = 0;
    free(r->text);
    r->text = NULL;
}

/* One event of the live stream. 1: it was DONE. */
static int on_live(rt *r, const encdec_live_event *ev) {
    switch (ev->kind) {
    case ENCDEC_LIVE_PARTIAL:
        if (!ev->text[0]) return 0;
        open_item(r, ev->start);
        if (r->cur.partials) {
            cJSON *o = event("encdec.transcription.partial");
            cJSON_AddStringToObject(o, "item_id", r->item);
            cJSON_AddStringToObject(o, "text", ev->text);
            add_span(r, o, ev);
            send_event(r, o);
        }
        return 0;
    case ENCDEC_LIVE_FINAL:
        open_item(r, ev->start);
        item_event(r, "conversation.item.input_audio_transcription.delta", "delta",
                   r->text ? ev->text : ev->text + (ev->text[0] == ' '), ev);
        append_text(r, ev->text);
        if (ev->utterance_end && !r->cur.manual) close_item(r, ev->end);
        return 0;
    case ENCDEC_LIVE_DONE:
        if (ev->status)
            send_error(r, "server_error", "transcription_failed", NULL, NULL, "%s",
                       encdec_status_str(ev->status));
        return 1;
    }
    return 0;
}

/* The stream is gone (finished, cleared, or stopped by an error): the
 * next audio opens another, its clock after this one's. */
static void drop_stream(rt *r) {
    encdec_live_free(r->l);
    r->l = NULL;
    r->base_s += r->fed_s;
    r->fed_s = 0;
}

/* The stream's events ready now. A DONE here is an error's (a finished
 * stream is awaited by end_stream): what was final is committed, the
 * stream dropped, and the session goes on with the next audio. */
static void pump(rt *r) {
    encdec_live_event ev;
    while (r->l && encdec_live_next(r->l, &ev, 0))
        if (on_live(r, &ev)) {
            close_item(r, r->fed_s);
            drop_stream(r);
        }
}

/* Waits for the decodes while the socket is served: events out as they
 * come, pings answered (a long wait must not look like a dead server).
 * Until the backlog is under encdec_live_ahead's, or (finished) until DONE. */
static void await(rt *r, int until_done) {
    encdec_live_event ev;
    while (r->l) {
        if (encdec_live_next(r->l, &ev, 10)) {
            if (!on_live(r, &ev)) continue;
            if (!until_done) {   /* an error's DONE, as in pump */
                close_item(r, r->fed_s);
                drop_stream(r);
            }
            return;
        }
        if (!until_done && encdec_live_backlog(r->l) < encdec_live_ahead(r->l)) return;
        if (srv_ws_io(r->w, 0) < 0 && srv_ws_broken(r->w)) return;   /* nobody to tell */
    }
}

/* No more audio in this stream: the rest transcribed, the item closed. */
static void end_stream(rt *r, int keep) {
    if (!r->l) return;
    if (keep) {
        encdec_live_finish(r->l);
        await(r, 1);
        if (r->cur.manual && !r->item[0]) open_item(r, r->fed_s);   /* a commit of silence */
        close_item(r, r->fed_s);
    } else {
        r->item[0] = 0;
    }
    drop_stream(r);
}

/* ---- events in ---- */

static int open_stream(rt *r, const char *cid) {
    r->cur = r->set;   /* fixed while the stream is open (its language is pointed at) */
    encdec_live_params p = encdec_live_default_params();
    p.sample_rate = r->cur.rate;
    p.min_silence_s = r->cur.manual ? 0 : r->cur.silence_ms / 1e3;
    p.vad = r->s->vad;
    p.tp.language = r->cur.language[0] ? r->cur.language : NULL;
    if (encdec_live_new(r->s->engine, &p, &r->l)) {
        send_error(r, "invalid_request_error", "invalid_session", NULL, cid, "%s",
                   encdec_last_error());
        return -1;
    }
    return 0;
}

static void append(rt *r, const cJSON *m, const char *cid) {
    const cJSON *a = cJSON_GetObjectItem(m, "audio");
    if (!cJSON_IsString(a))
        return send_error(r, "invalid_request_error", "missing_required_parameter", "audio", cid,
                          "input_audio_buffer.append needs `audio`: base64 of PCM16");
    size_t n = strlen(a->valuestring), got = BASE64_DECODE_LENGTH(n);
    uint8_t *pcm = malloc(got + 1);
    float *x = pcm ? malloc(sizeof *x * (got / 2 + 1)) : NULL;
    struct base64_decode_ctx b;
    base64_decode_init(&b);
    if (!x) {
        send_error(r, "server_error", NULL, NULL, cid, "out of memory");
    } else if (!base64_decode_update(&b, &got, pcm, n, a->valuestring) || !base64_decode_final(&b)) {
        send_error(r, "invalid_request_error", "invalid_value", "audio", cid,
                   "`audio` is not base64");
    } else if (got % 2) {
        send_error(r, "invalid_request_error", "invalid_value", "audio", cid,
                   "`audio` has %zu bytes: PCM16 has 2 a sample", got);
    } else if (got && (r->l || !open_stream(r, cid))) {
        size_t k = got / 2;
        for (size_t i = 0; i < k; i++)
            x[i] = (float)(int16_t)(pcm[2 * i] | pcm[2 * i + 1] << 8) / 32768.0f;
        encdec_live_feed(r->l, x, k);
        r->fed_s += (double)k / r->cur.rate;
    }
    free(x);
    free(pcm);
}

static int known_language(const rt *r, const char *l) {
    if (!l[0]) return 1;
    if (r->s->multilingual) return encdec_model_find_language(r->s->model, l) >= 0;
    return !strcasecmp(l, "en") || !strcasecmp(l, "english");
}

/* A session object's fields (the GA shape, or the beta's), checked whole
 * before any applies. 0, or -1 with an error sent. */
static int update(rt *r, const cJSON *ss, const char *cid) {
    rt_settings n = r->set;
    const cJSON *type = cJSON_GetObjectItem(ss, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "transcription")) {
        send_error(r, "invalid_request_error", "invalid_value", "session.type", cid,
                   "this server runs transcription sessions only (got type '%.64s')",
                   type->valuestring);
        return -1;
    }
    const cJSON *in = cJSON_GetObjectItem(cJSON_GetObjectItem(ss, "audio"), "input");
    const cJSON *fmt = in ? cJSON_GetObjectItem(in, "format") : cJSON_GetObjectItem(ss, "input_audio_format");
    const cJSON *tr = in ? cJSON_GetObjectItem(in, "transcription")
                         : cJSON_GetObjectItem(ss, "input_audio_transcription");
    const cJSON *td = in ? cJSON_GetObjectItem(in, "turn_detection")
                         : cJSON_GetObjectItem(ss, "turn_detection");
    if (fmt) {
        const cJSON *ft = cJSON_IsObject(fmt) ? cJSON_GetObjectItem(fmt, "type") : fmt;
        const cJSON *rate = cJSON_IsObject(fmt) ? cJSON_GetObjectItem(fmt, "rate") : NULL;
        if (!cJSON_IsString(ft) || (strcmp(ft->valuestring, "audio/pcm") && strcmp(ft->valuestring, "pcm16"))) {
            send_error(r, "invalid_request_error", "unsupported_audio_format", "audio.input.format",
                       cid, "the audio must be PCM16 (audio/pcm)");
            return -1;
        }
        if (rate && (!cJSON_IsNumber(rate) || rate->valuedouble < 8000 || rate->valuedouble > 48000 ||
                     rate->valuedouble != (int)rate->valuedouble)) {
            send_error(r, "invalid_request_error", "invalid_value", "audio.input.format.rate", cid,
                       "the rate must be a whole number of Hz in 8000..48000");
            return -1;
        }
        if (rate) n.rate = (int)rate->valuedouble;
    }
    if (tr && !cJSON_IsNull(tr)) {
        const cJSON *model = cJSON_GetObjectItem(tr, "model"), *lang = cJSON_GetObjectItem(tr, "language");
        if (cJSON_IsString(model) && model->valuestring[0] && !srv_model_known(r->s, model->valuestring)) {
            send_error(r, "invalid_request_error", "model_not_found", "transcription.model", cid,
                       "this server serves '%s', not '%.100s'", r->s->name, model->valuestring);
            return -1;
        }
        if (lang && !cJSON_IsNull(lang)) {
            if (!cJSON_IsString(lang) || strlen(lang->valuestring) >= sizeof n.language ||
                !known_language(r, lang->valuestring)) {
                send_error(r, "invalid_request_error", "invalid_value", "transcription.language",
                           cid, "'%.40s' is not a language the model '%s' knows",
                           cJSON_IsString(lang) ? lang->valuestring : "(not a string)", r->s->name);
                return -1;
            }
            snprintf(n.language, sizeof n.language, "%s", lang->valuestring);
        }
    }
    if (td) {
        n.manual = cJSON_IsNull(td);
        const cJSON *sil = cJSON_GetObjectItem(td, "silence_duration_ms");
        if (sil && (!cJSON_IsNumber(sil) || sil->valuedouble < 100 || sil->valuedouble > 10000)) {
            send_error(r, "invalid_request_error", "invalid_value",
                       "turn_detection.silence_duration_ms", cid,
                       "silence_duration_ms must be in 100..10000");
            return -1;
        }
        if (sil) n.silence_ms = (int)sil->valuedouble;
    }
    const cJSON *part = cJSON_GetObjectItem(ss, "partials");
    if (part) n.partials = cJSON_IsTrue(part);
    r->set = n;
    return 0;
}

static void on_message(rt *r, const srv_ws_msg *m) {
    if (!m->text)
        return send_error(r, "invalid_request_error", "invalid_event", NULL, NULL,
                          "send events as JSON text messages (binary came)");
    cJSON *j = cJSON_ParseWithLength(m->data, m->len);
    const cJSON *type = cJSON_GetObjectItem(j, "type"), *id = cJSON_GetObjectItem(j, "event_id");
    const char *cid = cJSON_IsString(id) ? id->valuestring : NULL;
    const char *t = cJSON_IsString(type) ? type->valuestring : NULL;
    if (!cJSON_IsObject(j)) {
        send_error(r, "invalid_request_error", "invalid_json", NULL, NULL,
                   "the message is not a JSON object");
    } else if (!t) {
        send_error(r, "invalid_request_error", "missing_required_parameter", "type", cid,
                   "the event has no `type`");
    } else if (!strcmp(t, "input_audio_buffer.append")) {
        append(r, j, cid);
    } else if (!strcmp(t, "session.update") || !strcmp(t, "transcription_session.update")) {
        const cJSON *ss = cJSON_GetObjectItem(j, "session");
        r->beta = t[0] == 't';
        if (!cJSON_IsObject(ss))
            send_error(r, "invalid_request_error", "missing_required_parameter", "session", cid,
                       "%s needs a `session` object", t);
        else if (!update(r, ss, cid))
            send_session(r, r->beta ? "transcription_session.updated" : "session.updated");
    } else if (!strcmp(t, "input_audio_buffer.commit")) {
        if (!r->l || r->fed_s <= 0)
            send_error(r, "invalid_request_error", "input_audio_buffer_commit_empty", NULL, cid,
                       "the input audio buffer is empty: nothing to commit");
        else
            end_stream(r, 1);
    } else if (!strcmp(t, "input_audio_buffer.clear")) {
        end_stream(r, 0);
        send_event(r, event("input_audio_buffer.cleared"));
    } else {
        send_error(r, "invalid_request_error", "unknown_event", "type", cid,
                   "'%.100s' is not an event of a transcription session", t);
    }
    cJSON_Delete(j);
}

/* ---- the session's thread ---- */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *session_main(void *arg) {
    rt *r = arg;
    srv *s = r->s;
    send_session(r, "session.created");
    double last_heard = now_s();
    int code = 1000;
    const char *why = NULL;
    while (!r->bye) {
        pump(r);
        /* behind (a decode runs, what the next may take waits): no message is
         * taken, the socket is still served (pings) up to RT_MAX_HELD */
        int behind = r->l && encdec_live_backlog(r->l) >= encdec_live_ahead(r->l);
        srv_ws_msg m;
        if (atomic_load(&s->draining) || atomic_load(&s->swapping)) {
            code = atomic_load(&s->draining) ? 1001 : 1012;
            why = code == 1001 ? "the server is shutting down" : "the server is changing its model";
            while (!r->bye) {   /* what the client sent is transcribed first */
                if (r->l && encdec_live_backlog(r->l) >= encdec_live_ahead(r->l)) await(r, 0);
                else if (srv_ws_next(r->w, &m)) on_message(r, &m);
                else break;
            }
            end_stream(r, 1);
            break;
        }
        if (behind) last_heard = now_s();   /* busy with what it sent: not idle */
        if (srv_ws_queued(r->w) > RT_MAX_QUEUED) {
            code = 1008;
            why = "the client does not read its events";
            break;
        }
        if (s->o.idle_timeout_s > 0 && now_s() - last_heard > s->o.idle_timeout_s) {
            code = 1001;
            why = "idle";
            end_stream(r, 1);
            break;
        }
        if (!behind && srv_ws_next(r->w, &m)) {
            last_heard = now_s();
            on_message(r, &m);
            continue;
        }
        if (srv_ws_io(r->w, behind ? 5 : RT_POLL_MS) < 0) {
            /* the client went (nothing to send it), or a close is under way:
             * the client's, or wslay's for a bad frame (sent on the way out) */
            r->bye = srv_ws_broken(r->w) ? 2 : 1;
            break;
        }
    }
    if (r->bye != 2) srv_ws_close(r->w, code, why, 2000);
    if (r->l) encdec_live_free(r->l);
    r->l = NULL;
    MHD_upgrade_action(r->urh, MHD_UPGRADE_ACTION_CLOSE);
    atomic_fetch_sub(&s->live, 1);
    atomic_fetch_sub(&s->inflight, 1);
    release(r);
    return NULL;
}

static void upgraded(void *cls, struct MHD_Connection *c, void *req_cls, const char *extra,
                     size_t n_extra, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
    (void)req_cls;
    rt *r = cls;
    srv_conn_upgraded(c);
    r->urh = urh;
    r->extra = n_extra ? malloc(n_extra) : NULL;
    if (r->extra) memcpy(r->extra, extra, n_extra);
    fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
    r->w = (n_extra && !r->extra) ? NULL : srv_ws_new(sock, r->extra, n_extra, RT_MAX_MSG, RT_MAX_HELD);
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int expect = 0;   /* the thread takes the upgrade's reference */
    if (r->w && atomic_compare_exchange_strong(&r->started, &expect, 1)) {
        if (pthread_create(&th, &at, session_main, r)) {
            atomic_store(&r->started, 0);   /* the request's release gives the counts back */
            MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
            release(r);
        }
    } else {
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        release(r);
    }
    pthread_attr_destroy(&at);
}

/* ---- the handshake ---- */

static int has_token(const char *v, const char *tok) {   /* a comma-separated list's token */
    size_t n = strlen(tok);
    while (v && *v) {
        while (*v == ' ' || *v == '\t' || *v == ',') v++;
        if (!strncasecmp(v, tok, n) && (!v[n] || v[n] == ',' || v[n] == ' ' || v[n] == '\t'))
            return 1;
        v = strchr(v, ',');
    }
    return 0;
}

static enum MHD_Result refuse_version(conn *k, struct MHD_Connection *c) {
    srv_error e = {426, "this server speaks WebSocket version 13", "invalid_request_error", NULL,
                   "upgrade_required"};
    return srv_send_body_h(k, c, 426, srv_error_body(&e), "application/json",
                           "Sec-WebSocket-Version", "13");
}

enum MHD_Result srv_ep_realtime(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
    const char *co = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection");
    const char *ver = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Version");
    const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
    const char *model = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "model");
    const char *intent = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "intent");
    char accept[29];
    if (!has_token(up, "websocket") || !has_token(co, "upgrade"))
        return srv_fail_req(k, c, 400, "invalid_request_error", NULL, "websocket_required",
                            "/v1/realtime is a WebSocket: connect with Upgrade: websocket");
    if (!ver || strcmp(ver, "13")) return refuse_version(k, c);
    if (srv_ws_accept_key(key, accept))
        return srv_fail_req(k, c, 400, "invalid_request_error", NULL, "invalid_websocket_key",
                            "Sec-WebSocket-Key is not 16 bytes in base64");
    if (intent && strcmp(intent, "transcription"))
        return srv_fail_req(k, c, 400, "invalid_request_error", "intent", "invalid_value",
                            "this server runs transcription sessions only (intent=transcription)");
    if (s->text)
        return srv_fail_req(k, c, 404, "invalid_request_error", "model", "model_not_found",
                            "the model '%s' is text to text: it transcribes no speech", s->name);
    if (model && model[0] && !srv_model_known(s, model))
        return srv_fail_req(k, c, 404, "invalid_request_error", "model", "model_not_found",
                            "the model '%.100s' is not served here; this server serves '%s'",
                            model, s->name);
    /* counted first (drains and /load wait for inflight to reach 0: none
     * can pass between a check below and the count), as file requests are */
    atomic_fetch_add(&s->inflight, 1);
    int n = atomic_fetch_add(&s->live, 1);
    const char *code = NULL, *why = NULL;
    if (atomic_load(&s->draining))
        code = "shutting_down", why = "the server is shutting down";
    else if (atomic_load(&s->swapping))
        code = "model_loading", why = "the server is changing its model; try again in a moment";
    else if (n >= s->o.max_live)
        code = "server_overloaded", why = "the live sessions open are this server's limit (--max-live); try again shortly";
    rt *r = code ? NULL : calloc(1, sizeof *r);
    if (!r) {
        atomic_fetch_sub(&s->live, 1);
        atomic_fetch_sub(&s->inflight, 1);
        if (!code) return srv_fail_req(k, c, 500, "server_error", NULL, NULL, "out of memory");
        return srv_fail_req(k, c, 503, "server_error", NULL, code, "%s", why);
    }
    r->s = s;
    r->set = (rt_settings){24000, "", 0, 600, 0};
    atomic_init(&r->refs, 2);            /* the request's and the upgrade's (then the thread's) */
    k->ep = r;                           /* a request that ends before the upgrade frees it */
    k->ep_free = release;
    struct MHD_Response *resp = MHD_create_response_for_upgrade(upgraded, r);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Upgrade", "websocket");
    MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
    MHD_destroy_response(resp);
    k->answered = 1;
    k->status = 101;
    return ok;
}
