/* completions.c - POST /v1/completions for T5-family models, as OpenAI's
 * (legacy) completions API: a JSON body, one engine request per prompt
 * (they share the decode steps), choices ordered by prompt then n. */
#include "completions.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PROMPTS 64
#define MAX_N 16

/* A number field in [lo, hi] (absent: *out keeps its default). */
static int num_field(const cJSON *j, const char *name, double lo, double hi, double *out,
                     srv_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!v || cJSON_IsNull(v)) return 1;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return srv_fail(e, 400, "invalid_request_error", name, NULL, "%s must be a number from %g to %g",
                        name, lo, hi);
    *out = v->valuedouble;
    return 1;
}

/* OpenAI's stop: a string or a list of up to 4 (null: none), none empty. */
static int parse_stop(const cJSON *j, srv_completion *c, srv_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "stop");
    if (!v || cJSON_IsNull(v)) return 1;
    if (cJSON_IsString(v)) {
        c->stop[c->n_stop++] = v->valuestring;
    } else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) <= 4) {
        const cJSON *it;
        cJSON_ArrayForEach(it, v) {
            if (!cJSON_IsString(it)) break;
            c->stop[c->n_stop++] = it->valuestring;
        }
        if (c->n_stop != cJSON_GetArraySize(v)) c->n_stop = -1;
    } else {
        c->n_stop = -1;
    }
    if (c->n_stop < 0)
        return srv_fail(e, 400, "invalid_request_error", "stop", NULL,
                        "stop must be a string or a list of up to 4 strings");
    for (int i = 0; i < c->n_stop; i++)
        if (!*c->stop[i] || strlen(c->stop[i]) > 256)
            return srv_fail(e, 400, "invalid_request_error", "stop", NULL,
                            "a stop sequence must have 1 to 256 bytes (stop %d has %zu)", i, strlen(c->stop[i]));
    return 1;
}

size_t srv_stop_find(const srv_completion *c, const char *text, size_t n) {
    size_t best = n;
    for (int i = 0; i < c->n_stop; i++) {
        size_t k = strlen(c->stop[i]);
        for (size_t at = 0; at + k <= n && at < best; at++)
            if (!memcmp(text + at, c->stop[i], k)) {
                best = at;
                break;
            }
    }
    return best;
}

size_t srv_stop_safe(const srv_completion *c, const char *text, size_t n) {
    size_t hold = 0;
    for (int i = 0; i < c->n_stop; i++) {
        size_t k = strlen(c->stop[i]);
        for (size_t m = k - 1 < n ? k - 1 : n; m > hold; m--)   /* the longest end that begins it */
            if (!memcmp(text + n - m, c->stop[i], m)) {
                hold = m;
                break;
            }
    }
    return n - hold;
}

int srv_choice_add(const srv_completion *c, srv_choice *ch, const char *text) {
    ch->n_tok++;
    if (ch->stopped || !*text) return 1;
    size_t k = strlen(text);
    char *t = realloc(ch->text, ch->len + k + 1);
    if (!t) return 0;
    memcpy(t + ch->len, text, k + 1);
    ch->text = t;
    /* a stop sequence can only begin where it did not fit before */
    size_t from = ch->len > 256 ? ch->len - 256 : 0;
    ch->len += k;
    size_t at = from + srv_stop_find(c, t + from, ch->len - from);
    if (at < ch->len) {
        ch->len = at;
        t[at] = 0;
        ch->stopped = 1;
    }
    return 1;
}

int srv_completion_parse(const char *body, size_t len, srv_completion *c, srv_error *e) {
    memset(c, 0, sizeof *c);
    cJSON *j = cJSON_ParseWithLength(body, len);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return srv_fail(e, 400, "invalid_request_error", NULL, NULL,
                        "the body is not a JSON object (send Content-Type application/json)");
    }
    c->json = j;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!cJSON_IsString(model) || !*model->valuestring)
        return srv_fail(e, 400, "invalid_request_error", "model", NULL, "you must provide a model parameter");
    c->model = model->valuestring;
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(j, "prompt");
    if (cJSON_IsString(pr)) {
        c->prompts[c->n_prompts++] = pr->valuestring;
    } else if (cJSON_IsArray(pr)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, pr) {
            if (!cJSON_IsString(it))
                return srv_fail(e, 400, "invalid_request_error", "prompt", NULL,
                                "prompt must be a string or a list of strings (token lists are "
                                "not taken)");
            if (c->n_prompts == MAX_PROMPTS)
                return srv_fail(e, 400, "invalid_request_error", "prompt", NULL,
                                "at most %d prompts a request", MAX_PROMPTS);
            c->prompts[c->n_prompts++] = it->valuestring;
        }
    } else {
        return srv_fail(e, 400, "invalid_request_error", "prompt", NULL,
                        "prompt must be a string or a list of strings");
    }
    if (c->n_prompts == 0)
        return srv_fail(e, 400, "invalid_request_error", "prompt", NULL, "prompt is an empty list");
    for (int i = 0; i < c->n_prompts; i++)
        if (!*c->prompts[i])
            return srv_fail(e, 400, "invalid_request_error", "prompt", NULL, "prompt %d is empty", i);
    double max_tokens = 16, temperature = 1, top_p = 1, n = 1, best_of = 0, seed = 0;
    if (!num_field(j, "max_tokens", 1, 4096, &max_tokens, e) ||
        !num_field(j, "temperature", 0, 2, &temperature, e) ||
        !num_field(j, "top_p", 1e-6, 1, &top_p, e) || !num_field(j, "n", 1, MAX_N, &n, e) ||
        !num_field(j, "best_of", 1, MAX_N, &best_of, e) ||
        !num_field(j, "seed", -9.2e18, 9.2e18, &seed, e))
        return 0;
    if (max_tokens != floor(max_tokens) || n != floor(n) || best_of != floor(best_of))
        return srv_fail(e, 400, "invalid_request_error", NULL, NULL,
                        "max_tokens, n and best_of must be whole numbers");
    if (best_of > 0 && best_of < n)
        return srv_fail(e, 400, "invalid_request_error", "best_of", NULL,
                        "best_of (%g) must be at least n (%g)", best_of, n);
    if (!parse_stop(j, c, e)) return 0;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "stream");
    if (st && !cJSON_IsBool(st) && !cJSON_IsNull(st))
        return srv_fail(e, 400, "invalid_request_error", "stream", NULL, "stream must be true or false");
    c->stream = cJSON_IsTrue(st);
    /* OpenAI's semantics where encdec has them: temperature 0 is greedy,
     * above it sampling (top_p); best_of > 1 (an extension: beam search with
     * best_of beams, the n best returned) */
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = (int)max_tokens;
    p.num_return_sequences = (int)n;
    if (best_of > 1) {
        p.num_beams = (int)best_of;
        p.early_stopping = 1;
    } else if (temperature > 0) {
        p.do_sample = 1;
        p.temperature = (float)temperature;
        p.top_p = (float)top_p;
        p.seed = (uint64_t)(long long)seed;
    } else if (n > 1) {
        return srv_fail(e, 400, "invalid_request_error", "n", NULL,
                        "n > 1 needs sampling (temperature > 0) or best_of");
    }
    c->p = p;
    return 1;
}

void srv_completion_free(srv_completion *c) {
    cJSON_Delete(c->json);
    c->json = NULL;
}

static const char *finish_reason(const encdec_sequence *q, int max_new) {
    return q->n_tokens < max_new ? "stop" : "length";
}

/* Choice k of prompt i: its text (cut at a stop sequence) into *text (a
 * malloc'd copy), its finish_reason and tokens. */
static int choice_of(const srv_completion *c, const encdec_result *r, const srv_choice *ch, int k,
                     char **text, const char **finish, int *n_tok) {
    const encdec_sequence *q = r ? encdec_result_sequence(r, k) : NULL;
    const char *t = ch ? (ch->text ? ch->text : "") : q ? q->text : "";
    size_t n = ch ? ch->len : strlen(t), cut = srv_stop_find(c, t, n);
    *text = malloc(cut + 1);
    if (!*text) return 0;
    memcpy(*text, t, cut);
    (*text)[cut] = 0;
    *finish = (ch && ch->stopped) || cut < n ? "stop" : q ? finish_reason(q, c->p.max_new_tokens) : "stop";
    *n_tok = ch ? ch->n_tok : q ? q->n_tokens : 0;
    return 1;
}

void srv_completion_id(char *id, size_t n) {
    static atomic_uint seq;
    snprintf(id, n, "cmpl-%lx%04x", (unsigned long)time(NULL), atomic_fetch_add(&seq, 1) & 0xffff);
}

char *srv_completion_body(const srv_completion *c, encdec_result *const *res, const char *model,
                          const int *prompt_tokens, const srv_choice *chs) {
    cJSON *j = cJSON_CreateObject(), *choices = cJSON_CreateArray();
    char id[48];
    srv_completion_id(id, sizeof id);
    cJSON_AddStringToObject(j, "id", id);
    cJSON_AddStringToObject(j, "object", "text_completion");
    cJSON_AddNumberToObject(j, "created", (double)time(NULL));
    cJSON_AddStringToObject(j, "model", model);
    int completion = 0, prompt = 0, idx = 0;
    for (int i = 0; i < c->n_prompts; i++) {
        prompt += prompt_tokens[i];
        for (int k = 0; k < c->p.num_return_sequences; k++) {
            char *text;
            const char *finish;
            int n_tok;
            if (!choice_of(c, res[i], chs ? &chs[i * c->p.num_return_sequences + k] : NULL, k, &text,
                           &finish, &n_tok)) {
                cJSON_Delete(choices);
                cJSON_Delete(j);
                return NULL;
            }
            cJSON *ch = cJSON_CreateObject();
            cJSON_AddStringToObject(ch, "text", text);
            cJSON_AddNumberToObject(ch, "index", idx++);
            cJSON_AddNullToObject(ch, "logprobs");
            cJSON_AddStringToObject(ch, "finish_reason", finish);
            cJSON_AddItemToArray(choices, ch);
            completion += n_tok;
            free(text);
        }
    }
    cJSON_AddItemToObject(j, "choices", choices);
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", completion);
    cJSON_AddNumberToObject(u, "total_tokens", prompt + completion);
    cJSON_AddItemToObject(j, "usage", u);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

char *srv_completion_event(const char *id, const char *model, int index, const char *text,
                           const char *finish_reason) {
    cJSON *j = cJSON_CreateObject(), *choices = cJSON_CreateArray(), *ch = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", id);
    cJSON_AddStringToObject(j, "object", "text_completion");
    cJSON_AddNumberToObject(j, "created", (double)time(NULL));
    cJSON_AddStringToObject(j, "model", model);
    cJSON_AddStringToObject(ch, "text", text);
    cJSON_AddNumberToObject(ch, "index", index);
    cJSON_AddNullToObject(ch, "logprobs");
    if (finish_reason) cJSON_AddStringToObject(ch, "finish_reason", finish_reason);
    else cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddItemToObject(j, "choices", choices);
    char *body = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!body) return NULL;
    size_t n = strlen(body) + 9;
    char *out = malloc(n);
    if (out) snprintf(out, n, "data: %s\n\n", body);
    free(body);
    return out;
}

char *srv_completion_chunk(const srv_completion *c, const encdec_result *r, int prompt,
                           const char *id, const char *model, int whole, srv_choice *chs) {
    size_t n = 0;
    char *out = calloc(1, 1);
    for (int k = 0; out && k < c->p.num_return_sequences; k++) {
        srv_choice *ch = chs ? &chs[k] : NULL;
        if (ch && ch->stopped) continue;   /* its last event went out when it stopped */
        char *text;
        const char *finish;
        int n_tok;
        if (!choice_of(c, r, whole ? NULL : ch, k, &text, &finish, &n_tok)) {
            free(out);
            return NULL;
        }
        /* streamed token by token: what is still held back (a stop sequence's
         * beginning that nothing completed) */
        size_t from = whole ? 0 : ch ? ch->sent : strlen(text);
        if (ch) ch->sent = ch->len;
        char *ev = srv_completion_event(id, model, prompt * c->p.num_return_sequences + k,
                                        text + (from < strlen(text) ? from : strlen(text)), finish);
        free(text);
        char *o = ev ? realloc(out, n + strlen(ev) + 1) : NULL;
        if (!o) {
            free(ev);
            free(out);
            return NULL;
        }
        out = o;
        memcpy(out + n, ev, strlen(ev) + 1);
        n += strlen(ev);
        free(ev);
    }
    return out;
}
