/* form.c - collecting and checking an audio request's fields (form.h). */
#include "form.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const WC_NAMES[SRV_WC_N] = {
    "temperature_inc", "translate", "no_timestamps", "beam_size", "best_of", "no_speech_thold",
    "logprob_thold", "offset_t", "duration"};

int srv_fail(srv_error *e, int status, const char *type, const char *param, const char *code,
             const char *fmt, ...) {
    e->status = status;
    e->type = type;
    e->param = param;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return 0;
}

void srv_form_init(srv_form *f, size_t max_upload) {
    memset(f, 0, sizeof *f);
    f->max_upload = max_upload;
}

void srv_form_free(srv_form *f) {
    char *s[] = {f->file_name, f->model, f->language, f->prompt, f->response_format,
                 f->temperature, f->stream, f->gran[0], f->gran[1], f->gran[2], f->gran[3],
                 f->vad_filter, f->vad_parameters, f->lt_source, f->lt_target};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) free(s[i]);
    for (int i = 0; i < SRV_WC_N; i++) free(f->wc[i]);
    free(f->file);
    memset(f, 0, sizeof *f);
}

void srv_form_drop_file(srv_form *f) {
    free(f->file);
    f->file = NULL;
    f->file_len = f->file_cap = 0;
}

/* Appends data[size] at offset off of a text field (*dst grows). */
static int add_text(srv_form *f, const char *key, char **dst, const char *data, uint64_t off,
                    size_t size) {
    size_t have = *dst ? strlen(*dst) : 0;
    if (off == 0 && *dst) {   /* the field again: the last one counts */
        (*dst)[0] = 0;
        have = 0;
    }
    if (have + size > SRV_MAX_FIELD) {
        f->field_too_long = 1;
        snprintf(f->long_field, sizeof f->long_field, "%.60s", key);
        return 1;
    }
    char *p = realloc(*dst, have + size + 1);
    if (!p) {
        f->nomem = 1;
        return 0;
    }
    memcpy(p + have, data, size);
    p[have + size] = 0;
    *dst = p;
    return 1;
}

static int add_file(srv_form *f, const char *filename, const char *data, uint64_t off,
                    size_t size) {
    if (off == 0) {
        f->n_file++;
        f->file_len = 0;
        free(f->file_name);
        f->file_name = strdup(filename ? filename : "");
        if (!f->file_name) {
            f->nomem = 1;
            return 0;
        }
    }
    if (f->too_large || size == 0) return 1;
    if (f->file_len + size > f->max_upload) {
        f->too_large = 1;   /* keep reading the form, drop the bytes */
        return 1;
    }
    if (f->file_len + size > f->file_cap) {
        size_t cap = f->file_cap ? f->file_cap * 2 : 1 << 16;
        while (cap < f->file_len + size) cap *= 2;
        if (cap > f->max_upload) cap = f->max_upload;
        unsigned char *p = realloc(f->file, cap);
        if (!p) {
            f->nomem = 1;
            return 0;
        }
        f->file = p;
        f->file_cap = cap;
    }
    memcpy(f->file + f->file_len, data, size);
    f->file_len += size;
    return 1;
}

int srv_form_add(srv_form *f, const char *key, const char *filename, const char *data,
                 uint64_t off, size_t size) {
    if (!key) return 1;
    if (!data) size = 0;
    /* libmicrohttpd may announce a part with an empty first piece, then
     * hand its first bytes at offset 0 again: a part starts with its data */
    if (size == 0) return 1;
    if (!strcmp(key, "file")) return add_file(f, filename, data, off, size);
    struct { const char *name; char **dst; } text[] = {
        {"model", &f->model}, {"language", &f->language}, {"prompt", &f->prompt},
        {"response_format", &f->response_format}, {"temperature", &f->temperature},
        {"stream", &f->stream}, {"vad_filter", &f->vad_filter},
        {"vad_parameters", &f->vad_parameters}, {"source", &f->lt_source}, {"target", &f->lt_target},
    };
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        if (!strcmp(key, text[i].name)) return add_text(f, key, text[i].dst, data, off, size);
    for (int i = 0; i < SRV_WC_N; i++)
        if (!strcmp(key, WC_NAMES[i])) return add_text(f, key, &f->wc[i], data, off, size);
    if (!strcmp(key, "timestamp_granularities[]") || !strcmp(key, "timestamp_granularities")) {
        /* a value per part, each possibly in pieces */
        if (off == 0) {
            if (f->n_gran == 4) {
                f->gran_many = 1;
                return 1;
            }
            f->n_gran++;
        }
        if (f->gran_many || f->n_gran == 0) return 1;
        return add_text(f, key, &f->gran[f->n_gran - 1], data, off, size);
    }
    return 1;   /* fields OpenAI has and this server ignores (user, include[], ...) */
}

const char *srv_format_name(srv_format f) {
    static const char *names[] = {"json", "text", "srt", "vtt", "verbose_json"};
    return names[f];
}

/* A boolean form value: true/false/1/0 (any case). */
static int parse_bool(const char *s, int *out) {
    if (!strcasecmp(s, "true") || !strcmp(s, "1")) *out = 1;
    else if (!strcasecmp(s, "false") || !strcmp(s, "0") || !*s) *out = 0;
    else return 0;
    return 1;
}

/* vad_parameters: a JSON object with faster-whisper's VadOptions keys
 * (numbers; neg_threshold may be null). 0 with the error in e. */
static int vad_parameters(const char *js, encdec_vad_params *p, srv_error *e) {
    cJSON *o = cJSON_Parse(js);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return srv_fail(e, 400, "invalid_request_error", "vad_parameters", NULL,
                        "vad_parameters must be a JSON object of VadOptions");
    }
    const cJSON *v;
    int ok = 1;
    cJSON_ArrayForEach(v, o) {
        const char *k = v->string;
        double d = v->valuedouble;
        if (!strcmp(k, "neg_threshold") && cJSON_IsNull(v)) continue;
        if (!cJSON_IsNumber(v)) {
            ok = srv_fail(e, 400, "invalid_request_error", "vad_parameters", NULL,
                          "vad_parameters: %.40s must be a number", k);
            break;
        }
        if (!strcmp(k, "threshold")) p->threshold = (float)d;
        else if (!strcmp(k, "neg_threshold")) p->neg_threshold = (float)d;
        else if (!strcmp(k, "min_speech_duration_ms")) p->min_speech_duration_ms = (int)fmin(fmax(d, -1), 1e9);
        else if (!strcmp(k, "max_speech_duration_s")) p->max_speech_duration_s = (float)d;
        else if (!strcmp(k, "min_silence_duration_ms")) p->min_silence_duration_ms = (int)fmin(fmax(d, -1), 1e9);
        else if (!strcmp(k, "speech_pad_ms")) p->speech_pad_ms = (int)fmin(fmax(d, -1), 1e9);
        else {
            ok = srv_fail(e, 400, "invalid_request_error", "vad_parameters", NULL,
                          "vad_parameters: unknown %.40s (threshold, neg_threshold, "
                          "min_speech_duration_ms, max_speech_duration_s, "
                          "min_silence_duration_ms, speech_pad_ms)", k);
            break;
        }
    }
    cJSON_Delete(o);
    return ok;
}

/* A number field in [lo, hi]: 1 (in *out), 0 absent, -1 bad (e set). */
static int num_field(const char *name, const char *v, double lo, double hi, double *out,
                     srv_error *e) {
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno || !(d >= lo && d <= hi)) {
        srv_fail(e, 400, "invalid_request_error", name, NULL, "%s must be a number from %g to %g "
                 "(got '%.40s')", name, lo, hi, v);
        return -1;
    }
    *out = d;
    return 1;
}

static int bool_field(const char *name, const char *v, int *out, srv_error *e) {
    if (!v || !*v) return 1;
    if (!parse_bool(v, out))
        return srv_fail(e, 400, "invalid_request_error", name, NULL,
                        "%s must be true or false (got '%.40s')", name, v);
    return 1;
}

/* whisper.cpp's fields into q (form.h); 0 with e set when one is bad. */
static int whisper_cpp_fields(const srv_form *f, srv_audio_req *q, srv_error *e) {
    static const struct { int id; double lo, hi; } num[] = {
        {SRV_WC_TEMPERATURE_INC, 0, 1}, {SRV_WC_BEAM_SIZE, 1, 16}, {SRV_WC_BEST_OF, 1, 16},
        {SRV_WC_NO_SPEECH_THOLD, 0, 1}, {SRV_WC_LOGPROB_THOLD, -1e9, 0},
        {SRV_WC_OFFSET_T, 0, 1e10}, {SRV_WC_DURATION, 0, 1e10}};
    double v[SRV_WC_N];
    for (int i = 0; i < SRV_WC_N; i++) v[i] = -1;
    for (size_t i = 0; i < sizeof num / sizeof num[0]; i++)
        if (num_field(WC_NAMES[num[i].id], f->wc[num[i].id], num[i].lo, num[i].hi, &v[num[i].id], e) < 0)
            return 0;
    q->temperature_inc = v[SRV_WC_TEMPERATURE_INC] >= 0 ? (float)v[SRV_WC_TEMPERATURE_INC] : NAN;
    q->beam_size = (int)v[SRV_WC_BEAM_SIZE];
    q->best_of = (int)v[SRV_WC_BEST_OF];
    if ((v[SRV_WC_BEAM_SIZE] >= 0 && v[SRV_WC_BEAM_SIZE] != q->beam_size) ||
        (v[SRV_WC_BEST_OF] >= 0 && v[SRV_WC_BEST_OF] != q->best_of))
        return srv_fail(e, 400, "invalid_request_error", v[SRV_WC_BEAM_SIZE] != q->beam_size ?
                        "beam_size" : "best_of", NULL, "beam_size and best_of are whole numbers");
    q->no_speech_thold = v[SRV_WC_NO_SPEECH_THOLD] >= 0 ? (float)v[SRV_WC_NO_SPEECH_THOLD] : NAN;
    q->logprob_thold = f->wc[SRV_WC_LOGPROB_THOLD] && *f->wc[SRV_WC_LOGPROB_THOLD]
                           ? (float)v[SRV_WC_LOGPROB_THOLD] : NAN;
    q->offset_s = v[SRV_WC_OFFSET_T] > 0 ? v[SRV_WC_OFFSET_T] / 1000 : 0;
    q->duration_s = v[SRV_WC_DURATION] > 0 ? v[SRV_WC_DURATION] / 1000 : 0;
    q->translate = q->no_timestamps = -1;
    return bool_field("translate", f->wc[SRV_WC_TRANSLATE], &q->translate, e) &&
           bool_field("no_timestamps", f->wc[SRV_WC_NO_TIMESTAMPS], &q->no_timestamps, e);
}

int srv_form_check(const srv_form *f, srv_audio_req *q, srv_error *e) {
    memset(q, 0, sizeof *q);
    if (f->nomem) return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory reading the form");
    if (f->too_large)
        return srv_fail(e, 413, "invalid_request_error", "file", "file_too_large",
                        "the file is larger than the %zu bytes this server accepts", f->max_upload);
    if (f->field_too_long)
        return srv_fail(e, 400, "invalid_request_error", NULL, NULL,
                        "the field %s is longer than %d bytes", f->long_field, SRV_MAX_FIELD);
    if (f->n_file == 0)
        return srv_fail(e, 400, "invalid_request_error", "file", NULL,
                        "no file: send the audio as the multipart field 'file'");
    if (f->n_file > 1)
        return srv_fail(e, 400, "invalid_request_error", "file", NULL, "more than one file field");
    if (f->file_len == 0)
        return srv_fail(e, 400, "invalid_request_error", "file", NULL, "the file is empty");
    /* OpenAI requires a model; whisper.cpp's clients send none: the one served */
    q->model = f->model && *f->model ? f->model : NULL;
    q->format = SRV_JSON;
    if (f->response_format && *f->response_format) {
        int k = -1;
        for (int i = 0; i <= SRV_VERBOSE_JSON; i++)
            if (!strcmp(f->response_format, srv_format_name((srv_format)i))) k = i;
        if (k < 0)
            return srv_fail(e, 400, "invalid_request_error", "response_format", NULL,
                            "unknown response_format '%.40s': json, text, srt, vtt or "
                            "verbose_json", f->response_format);
        q->format = (srv_format)k;
    }
    if (f->temperature && *f->temperature) {
        char *end;
        errno = 0;
        double t = strtod(f->temperature, &end);
        if (end == f->temperature || *end || errno || !(t >= 0 && t <= 1))
            return srv_fail(e, 400, "invalid_request_error", "temperature", NULL,
                            "temperature must be a number from 0 to 1 (got '%.40s')",
                            f->temperature);
        q->temperature = (float)t;
    }
    if (f->gran_many)
        return srv_fail(e, 400, "invalid_request_error", "timestamp_granularities", NULL,
                        "more than 4 timestamp_granularities");
    int seg = 0, word = 0;
    for (int i = 0; i < f->n_gran; i++) {
        const char *g = f->gran[i] ? f->gran[i] : "";
        if (!strcmp(g, "segment")) seg = 1;
        else if (!strcmp(g, "word")) word = 1;
        else
            return srv_fail(e, 400, "invalid_request_error", "timestamp_granularities", NULL,
                            "timestamp_granularities must be 'segment' or 'word' (got '%.40s')", g);
    }
    if ((word || seg) && q->format != SRV_VERBOSE_JSON)
        return srv_fail(e, 400, "invalid_request_error", "timestamp_granularities", NULL,
                        "timestamp_granularities needs response_format verbose_json");
    q->words = word;
    q->segments = seg || !word;
    if (f->stream && !parse_bool(f->stream, &q->stream))
        return srv_fail(e, 400, "invalid_request_error", "stream", NULL,
                        "stream must be true or false (got '%.40s')", f->stream);
    if (q->stream && q->format != SRV_JSON && q->format != SRV_TEXT)
        return srv_fail(e, 400, "invalid_request_error", "stream", NULL,
                        "streaming is for the json and text formats (got %s)",
                        srv_format_name(q->format));
    if (f->vad_filter && !parse_bool(f->vad_filter, &q->vad))
        return srv_fail(e, 400, "invalid_request_error", "vad_filter", NULL,
                        "vad_filter must be true or false (got '%.40s')", f->vad_filter);
    q->vad_params = encdec_vad_default_params();
    if (f->vad_parameters && *f->vad_parameters && !vad_parameters(f->vad_parameters, &q->vad_params, e))
        return 0;
    if (!whisper_cpp_fields(f, q, e)) return 0;
    q->language = f->language && *f->language && strcasecmp(f->language, "auto") ? f->language
                                                                                 : NULL;
    q->prompt = f->prompt && *f->prompt ? f->prompt : NULL;
    q->file = f->file;
    q->file_len = f->file_len;
    return 1;
}
