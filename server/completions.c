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

void srv_completion_id(char *id, size_t n) {
    static atomic_uint seq;
    snprintf(id, n, "cmpl-%lx%04x", (unsigned long)time(NULL), atomic_fetch_add(&seq, 1) & 0xffff);
}

char *srv_completion_body(const srv_completion *c, encdec_result *const *res, const char *model,
                          const int *prompt_tokens) {
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
            const encdec_sequence *q = encdec_result_sequence(res[i], k);
            cJSON *ch = cJSON_CreateObject();
            cJSON_AddStringToObject(ch, "text", q ? q->text : "");
            cJSON_AddNumberToObject(ch, "index", idx++);
            cJSON_AddNullToObject(ch, "logprobs");
            cJSON_AddStringToObject(ch, "finish_reason", q ? finish_reason(q, c->p.max_new_tokens) : "stop");
            cJSON_AddItemToArray(choices, ch);
            completion += q ? q->n_tokens : 0;
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
                           const char *id, const char *model, int whole) {
    size_t n = 0;
    char *out = calloc(1, 1);
    for (int k = 0; out && k < c->p.num_return_sequences; k++) {
        const encdec_sequence *q = encdec_result_sequence(r, k);
        char *ev = srv_completion_event(id, model, prompt * c->p.num_return_sequences + k,
                                        whole && q ? q->text : "",
                                        q ? finish_reason(q, c->p.max_new_tokens) : "stop");
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
