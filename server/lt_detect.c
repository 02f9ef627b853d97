/* lt_detect.c - LibreTranslate's language detection (lt_detect.h). */
#include "lt_detect.h"
#include "lt.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHORT_TEXT 20   /* characters: lexilang's first */

void srv_lt_codes_of(const encdec_model *m, srv_lt_codes *c) {
    c->n = 0;
    if (!encdec_model_language(m, 0)) {
        encdec_model_info info;
        encdec_model_get_info(m, &info);
        if (info.source_language) snprintf(c->code[c->n++], sizeof c->code[0], "%s", info.source_language);
        if (info.target_language) snprintf(c->code[c->n++], sizeof c->code[0], "%s", info.target_language);
        return;
    }
    encdec_model_info info;   /* Marian's one source, then its >>xx<< targets */
    encdec_model_get_info(m, &info);
    if (!strcmp(info.model_type, "marian") && info.source_language)
        snprintf(c->code[c->n++], sizeof c->code[0], "%s", info.source_language);
    for (int i = 0; encdec_model_language(m, i) && c->n < SRV_LT_MAX_CODES; i++) {
        char code[40];
        srv_lt_code(m, i, code, sizeof code);
        int dup = 0;
        for (int k = 0; k < c->n && !dup; k++) dup = !strcmp(c->code[k], code);
        if (!dup) snprintf(c->code[c->n++], sizeof c->code[0], "%s", code);
    }
}

static int has_code(const srv_lt_codes *c, const char *code) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->code[i], code)) return 1;
    return 0;
}

static long n_chars(const char *s) {
    long n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Detector.detect(text): 1 to 3 guesses into g. */
static encdec_status detect_one(const encdec_langid *l, const char *text, const srv_lt_codes *codes,
                                srv_lt_guess g[3], int *n) {
    long len = n_chars(text);
    *n = 0;
    encdec_status st;
    if (len < SHORT_TEXT) {
        const char *allow[SRV_LT_MAX_CODES];
        for (int i = 0; i < codes->n; i++) allow[i] = codes->code[i];
        encdec_text_language w;
        int found;
        if ((st = encdec_langid_words(l, text, codes->n ? allow : NULL, codes->n, &w, &found))) return st;
        if (found && w.probability > 0) {
            snprintf(g[0].language, sizeof g[0].language, "%s", w.language);
            g[0].confidence = nearbyint(w.probability * 100);
            g[0].text_length = len;
            *n = 1;
            return ENCDEC_OK;
        }
    }
    encdec_text_language d[64];
    int nd = 0;
    if ((st = encdec_langid_detect(l, text, d, 64, &nd))) return st;
    for (int i = 0; i < nd && *n < 3; i++) {
        const char *code = !strcmp(d[i].language, "zh-cn") ? "zh" : !strcmp(d[i].language, "zh-tw") ? "zt"
                                                                                                       : d[i].language;
        if (!has_code(codes, code)) continue;
        snprintf(g[*n].language, sizeof g[0].language, "%s", code);
        g[*n].confidence = nearbyint(d[i].probability * 100);
        g[*n].text_length = len;
        ++*n;
    }
    if (!*n) {   /* nothing known, or no language of the server's */
        snprintf(g[0].language, sizeof g[0].language, "en");
        g[0].confidence = 0;
        g[0].text_length = len;
        *n = 1;
    }
    return ENCDEC_OK;
}

/* The guesses of one language as one, in the server's order (those of a
 * language it lacks, the "en" of nothing known, out when any is left). */
static int merge(srv_lt_guess *g, int n, const srv_lt_codes *codes) {
    srv_lt_guess *m = malloc((size_t)n * sizeof *m);
    if (!m) return -1;
    int k = 0;
    for (int c = 0; c < codes->n; c++) {
        int first = -1, count = 0;
        double sum = 0;
        long len = 0;
        for (int i = 0; i < n; i++) {
            if (strcmp(g[i].language, codes->code[c])) continue;
            if (first < 0) first = i;
            count++;
            sum += g[i].confidence;
            len += g[i].text_length;
        }
        if (first < 0) continue;
        m[k] = g[first];
        if (count > 1) {
            m[k].confidence = sum / count;
            m[k].text_length = len;
        }
        k++;
    }
    if (k) memcpy(g, m, (size_t)k * sizeof *g);
    free(m);
    return k ? k : n;
}

encdec_status srv_lt_detect(const encdec_langid *l, const char *const *texts, int n_texts, int batch,
                            const srv_lt_codes *codes, srv_lt_guess **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    srv_lt_guess *g = malloc((size_t)(3 * n_texts + 1) * sizeof *g);
    if (!g) return ENCDEC_ERR_NOMEM;
    int n = 0;
    for (int i = 0; i < n_texts; i++) {
        int k;
        encdec_status st = detect_one(l, texts[i], codes, g + n, &k);
        if (st) {
            free(g);
            return st;
        }
        n += k;
    }
    double total = 0;
    for (int i = 0; i < n; i++) total += (double)g[i].text_length;
    if (batch && (n = merge(g, n, codes)) < 0) {
        free(g);
        return ENCDEC_ERR_NOMEM;
    }
    /* most confident first (a stable insertion sort, as Python's sort) */
    for (int i = 1; i < n; i++) {
        srv_lt_guess x = g[i];
        double kx = total > 0 ? x.confidence * (double)x.text_length / total : 0;
        int j = i;
        for (; j > 0; j--) {
            double kj = total > 0 ? g[j - 1].confidence * (double)g[j - 1].text_length / total : 0;
            if (!(kj < kx)) break;
            g[j] = g[j - 1];
        }
        g[j] = x;
    }
    if (!n) {   /* (no text) */
        snprintf(g[0].language, sizeof g[0].language, "en");
        g[0].confidence = 0;
        g[0].text_length = 0;
        n = 1;
    }
    *out = g;
    *n_out = n;
    return ENCDEC_OK;
}

char *srv_lt_detect_body(const srv_lt_guess *g, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "confidence", g[i].confidence);
        cJSON_AddStringToObject(o, "language", srv_lt_iso(g[i].language));
        cJSON_AddItemToArray(a, o);
    }
    char *s = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return s;
}
