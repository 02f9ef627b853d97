/* openai.c - OpenAI's response shapes (openai.h). */
#include "openai.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* text without leading and trailing white space, malloc'd */
static char *trimmed(const char *t) {
    if (!t) t = "";
    while (*t == ' ' || *t == '\n' || *t == '\t') t++;
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\n' || t[n - 1] == '\t')) n--;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, t, n);
    s[n] = 0;
    return s;
}

static char *print(cJSON *j) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return s;
}

/* cJSON numbers are doubles: floats go through a decimal of their own
 * precision so that 0.2f prints as 0.2, not 0.200000003. */
static cJSON *num_f(float x) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.7g", (double)x);
    return cJSON_CreateNumber(strtod(buf, NULL));
}

static cJSON *num_t(double t) {   /* seconds, to the millisecond */
    char buf[32];
    snprintf(buf, sizeof buf, "%.3f", t);
    return cJSON_CreateNumber(strtod(buf, NULL));
}

static cJSON *segment_json(const encdec_segment *g) {
    cJSON *s = cJSON_CreateObject(), *toks = cJSON_CreateArray();
    cJSON_AddNumberToObject(s, "id", g->id);
    cJSON_AddNumberToObject(s, "seek", g->seek);
    cJSON_AddItemToObject(s, "start", num_t(g->start));
    cJSON_AddItemToObject(s, "end", num_t(g->end));
    cJSON_AddStringToObject(s, "text", g->text ? g->text : "");
    for (int k = 0; k < g->n_tokens; k++) cJSON_AddItemToArray(toks, cJSON_CreateNumber(g->tokens[k].id));
    cJSON_AddItemToObject(s, "tokens", toks);
    cJSON_AddItemToObject(s, "temperature", num_f(g->temperature));
    cJSON_AddItemToObject(s, "avg_logprob", num_f(g->avg_logprob));
    cJSON_AddItemToObject(s, "compression_ratio", num_f(g->compression_ratio));
    cJSON_AddItemToObject(s, "no_speech_prob", num_f(g->no_speech_prob));
    if (g->all_failed) cJSON_AddTrueToObject(s, "all_temperatures_failed");
    return s;
}

static char *verbose_json(const encdec_result *r, const srv_audio_req *q, const char *task) {
    cJSON *j = cJSON_CreateObject();
    const char *lang = encdec_result_language(r);
    const char *name = encdec_language_name(lang);
    char *text = trimmed(encdec_result_text(r));
    cJSON_AddStringToObject(j, "task", task);
    cJSON_AddStringToObject(j, "language", name ? name : lang ? lang : "");
    cJSON_AddItemToObject(j, "duration", num_t(encdec_result_timings(r)->audio_seconds));
    cJSON_AddStringToObject(j, "text", text ? text : "");
    free(text);
    int n = encdec_result_n_segments(r);
    if (q->segments) {
        cJSON *segs = cJSON_CreateArray();
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(segs, segment_json(encdec_result_segment(r, i)));
        cJSON_AddItemToObject(j, "segments", segs);
    }
    if (q->words) {
        cJSON *words = cJSON_CreateArray();
        for (int i = 0; i < n; i++) {
            const encdec_segment *g = encdec_result_segment(r, i);
            for (int k = 0; k < g->n_words; k++) {
                cJSON *w = cJSON_CreateObject();
                char *word = trimmed(g->words[k].word);
                cJSON_AddStringToObject(w, "word", word ? word : "");
                free(word);
                cJSON_AddItemToObject(w, "start", num_t(g->words[k].start));
                cJSON_AddItemToObject(w, "end", num_t(g->words[k].end));
                cJSON_AddItemToArray(words, w);
            }
        }
        cJSON_AddItemToObject(j, "words", words);
    }
    return print(j);
}

char *srv_body(const encdec_result *r, const srv_audio_req *q, const char *task,
               const char **ctype) {
    *ctype = "application/json";
    if (q->format == SRV_VERBOSE_JSON) return verbose_json(r, q, task);
    if (q->format == SRV_SRT || q->format == SRV_VTT) {
        *ctype = q->format == SRV_SRT ? "application/x-subrip" : "text/vtt";
        char *out = NULL;
        if (encdec_result_format(r, q->format == SRV_SRT ? ENCDEC_FORMAT_SRT : ENCDEC_FORMAT_VTT,
                                 NULL, &out))
            return NULL;
        char *copy = strdup(out);   /* ours to free with free() */
        encdec_free(out);
        return copy;
    }
    char *text = trimmed(encdec_result_text(r));
    if (!text) return NULL;
    if (q->format == SRV_TEXT) {
        *ctype = "text/plain; charset=utf-8";
        size_t n = strlen(text);
        char *t = realloc(text, n + 2);
        if (!t) {
            free(text);
            return NULL;
        }
        t[n] = '\n';
        t[n + 1] = 0;
        return t;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "text", text);
    free(text);
    return print(j);
}

char *srv_error_body(const srv_error *e) {
    cJSON *j = cJSON_CreateObject(), *o = cJSON_CreateObject();
    char msg[sizeof e->message];
    memcpy(msg, e->message, sizeof msg);
    msg[sizeof msg - 1] = 0;
    srv_utf8_clean(msg);
    cJSON_AddStringToObject(o, "message", msg);
    cJSON_AddStringToObject(o, "type", e->type ? e->type : "server_error");
    if (e->param) cJSON_AddStringToObject(o, "param", e->param);
    else cJSON_AddNullToObject(o, "param");
    if (e->code) cJSON_AddStringToObject(o, "code", e->code);
    else cJSON_AddNullToObject(o, "code");
    cJSON_AddItemToObject(j, "error", o);
    return print(j);
}

/* "data: " + s + "\n\n" (s freed) */
static char *data_line(char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *e = malloc(n + 9);
    if (e) snprintf(e, n + 9, "data: %s\n\n", s);
    free(s);
    return e;
}

static char *event(cJSON *j) { return data_line(print(j)); }

char *srv_sse_delta(const char *text) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "type", "transcript.text.delta");
    cJSON_AddStringToObject(j, "delta", text ? text : "");
    return event(j);
}

char *srv_sse_done(const char *text) {
    cJSON *j = cJSON_CreateObject();
    char *t = trimmed(text);
    cJSON_AddStringToObject(j, "type", "transcript.text.done");
    cJSON_AddStringToObject(j, "text", t ? t : "");
    free(t);
    return event(j);
}

char *srv_sse_error(const srv_error *e) { return data_line(srv_error_body(e)); }
