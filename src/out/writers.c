/* writers.c - the formats (see out.h) and encdec_result_format. */
#include "out/out.h"
#include "base/err.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void out_put(out_buf *b, const char *s, size_t n) {
    if (b->err) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->err = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

void out_printf(out_buf *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->err = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        out_put(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->err = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    out_put(b, big, (size_t)n);
    free(big);
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* s without leading and trailing white space, with `from` bytes as `to`. */
static void put_stripped(out_buf *b, const char *s, char from, char to) {
    size_t n = strlen(s);
    while (n > 0 && is_space(*s)) s++, n--;
    while (n > 0 && is_space(s[n - 1])) n--;
    for (size_t i = 0; i < n; i++) {
        char c = s[i] == from ? to : s[i];
        out_put(b, &c, 1);
    }
}

void out_txt(out_buf *b, const encdec_result *r) {
    for (int i = 0; i < encdec_result_n_segments(r); i++) {
        put_stripped(b, encdec_result_segment(r, i)->text, 0, 0);
        out_put(b, "\n", 1);
    }
}

void out_tsv(out_buf *b, const encdec_result *r) {
    out_put(b, "start\tend\ttext\n", 15);
    for (int i = 0; i < encdec_result_n_segments(r); i++) {
        const encdec_segment *g = encdec_result_segment(r, i);
        out_printf(b, "%.0f\t%.0f\t", nearbyint(1000 * g->start), nearbyint(1000 * g->end));
        put_stripped(b, g->text, '\t', ' ');
        out_put(b, "\n", 1);
    }
}

static void subtitles(out_buf *b, const encdec_result *r, const encdec_format_options *o, int srt) {
    out_cue *c;
    int n = out_cues(r, o, &c);
    if (n < 0) {
        b->err = 1;
        return;
    }
    if (!srt) out_put(b, "WEBVTT\n\n", 8);
    for (int i = 0; i < n; i++) {
        char s[32], e[32];
        out_timestamp(s, sizeof s, c[i].start, srt, srt ? ',' : '.');
        out_timestamp(e, sizeof e, c[i].end, srt, srt ? ',' : '.');
        if (srt) out_printf(b, "%d\n", i + 1);
        out_printf(b, "%s --> %s\n%s\n\n", s, e, c[i].text);
    }
    out_cues_free(c, n);
}

void out_srt(out_buf *b, const encdec_result *r, const encdec_format_options *o) {
    subtitles(b, r, o, 1);
}

void out_vtt(out_buf *b, const encdec_result *r, const encdec_format_options *o) {
    subtitles(b, r, o, 0);
}

void out_json(out_buf *b, const encdec_result *r) {
    cJSON *j = cJSON_CreateObject();
    int words = 0;
    for (int i = 0; i < encdec_result_n_segments(r); i++) words += encdec_result_segment(r, i)->n_words;
    cJSON_AddStringToObject(j, "text", encdec_result_text(r));
    cJSON *segs = cJSON_AddArrayToObject(j, "segments");
    for (int i = 0; i < encdec_result_n_segments(r); i++) {
        const encdec_segment *g = encdec_result_segment(r, i);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "id", g->id);
        cJSON_AddNumberToObject(e, "seek", g->seek);
        cJSON_AddNumberToObject(e, "start", g->start);
        cJSON_AddNumberToObject(e, "end", g->end);
        cJSON_AddStringToObject(e, "text", g->text);
        cJSON *t = cJSON_AddArrayToObject(e, "tokens");
        for (int k = 0; k < g->n_tokens; k++) cJSON_AddItemToArray(t, cJSON_CreateNumber(g->tokens[k].id));
        cJSON_AddNumberToObject(e, "temperature", g->temperature);
        cJSON_AddNumberToObject(e, "avg_logprob", g->avg_logprob);
        cJSON_AddNumberToObject(e, "compression_ratio", g->compression_ratio);
        cJSON_AddNumberToObject(e, "no_speech_prob", g->no_speech_prob);
        if (g->all_failed) cJSON_AddTrueToObject(e, "all_temperatures_failed");
        if (words > 0) {
            cJSON *ws = cJSON_AddArrayToObject(e, "words");
            for (int k = 0; k < g->n_words; k++) {
                cJSON *w = cJSON_CreateObject();
                cJSON_AddStringToObject(w, "word", g->words[k].word);
                cJSON_AddNumberToObject(w, "start", g->words[k].start);
                cJSON_AddNumberToObject(w, "end", g->words[k].end);
                cJSON_AddNumberToObject(w, "probability", g->words[k].probability);
                cJSON_AddItemToArray(ws, w);
            }
        }
        cJSON_AddItemToArray(segs, e);
    }
    const char *lang = encdec_result_language(r);
    if (lang) cJSON_AddStringToObject(j, "language", lang);
    char *s = cJSON_PrintUnformatted(j);
    if (s) {
        out_put(b, s, strlen(s));
        out_put(b, "\n", 1);
    } else {
        b->err = 1;
    }
    free(s);
    cJSON_Delete(j);
}

static const char *const NAMES[] = {"txt", "srt", "vtt", "tsv", "json"};

int encdec_format_parse(const char *name, encdec_format *f) {
    for (int i = 0; name && i < 5; i++)
        if (!strcmp(name, NAMES[i])) {
            *f = (encdec_format)i;
            return 0;
        }
    return -1;
}

const char *encdec_format_name(encdec_format f) {
    return f >= ENCDEC_FORMAT_TXT && f <= ENCDEC_FORMAT_JSON ? NAMES[f] : "unknown";
}

encdec_format_options encdec_format_default_options(void) {
    encdec_format_options o = {0};
    return o;
}

encdec_status encdec_result_format(const encdec_result *r, encdec_format f,
                                   const encdec_format_options *o, char **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_result_format: out is NULL");
    *out = NULL;
    if (!r) return ed_fail(ENCDEC_ERR_ARG, "encdec_result_format: result is NULL");
    if (o && (o->max_line_width < 0 || o->max_line_count < 0 || o->max_words_per_line < 0))
        return ed_fail(ENCDEC_ERR_ARG, "format options must be >= 0 (0: no limit): line width %d, "
                       "line count %d, words per line %d", o->max_line_width, o->max_line_count,
                       o->max_words_per_line);
    out_buf b = {0};
    out_put(&b, "", 0);
    switch (f) {
    case ENCDEC_FORMAT_TXT: out_txt(&b, r); break;
    case ENCDEC_FORMAT_SRT: out_srt(&b, r, o); break;
    case ENCDEC_FORMAT_VTT: out_vtt(&b, r, o); break;
    case ENCDEC_FORMAT_TSV: out_tsv(&b, r); break;
    case ENCDEC_FORMAT_JSON: out_json(&b, r); break;
    default:
        free(b.s);
        return ed_fail(ENCDEC_ERR_ARG, "unknown output format %d", (int)f);
    }
    if (b.err) {
        free(b.s);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s output", encdec_format_name(f));
    }
    *out = b.s;
    return ENCDEC_OK;
}
