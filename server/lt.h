/* lt.h - LibreTranslate's API for translation models (NLLB-200, M2M100,
 * mBART-50, Marian / OPUS-MT): POST /translate's body (JSON, or a urlencoded
 * form) checked into requests, the language codes its clients send mapped
 * onto the model's, and the response bodies of /translate and /languages.
 * No I/O: ep_lt.c runs the requests; tests and the fuzz harness drive this.
 *
 * Codes: LibreTranslate's (ISO 639-1: "en", "fr"; its "zh", "zt" for
 * traditional Chinese and "pb", or as its API spells those: "zh-Hans",
 * "zh-Hant", "pt-BR", any letter case) or the model's own ("fra_Latn",
 * "fr_XX", "fr"), in either field; responses and /languages speak as
 * LibreTranslate's API does (ISO 639-1 where the model's code has one, the
 * three spelled out), else the model's code.
 */
#ifndef SRV_LT_H
#define SRV_LT_H

#include "encdec.h"

#include <stddef.h>

#define SRV_LT_MAX_Q 64

typedef struct {
    int status;               /* 400, 404, 500 ... */
    char message[512];        /* LibreTranslate's body: {"error": message} */
} srv_lt_error;

typedef struct {
    void *json;               /* the parsed JSON body, or NULL (a form) */
    char *form;               /* a form body, decoded in place */
    const char *q[SRV_LT_MAX_Q];
    int n_q, q_list;          /* q was a list: so is translatedText */
    int src, tgt;             /* the model's language indices (-1: its default / none) */
    int alternatives;         /* extra translations per text (beam search), 0..8 */
    int html;                 /* format "html": the texts are documents (lt_html.h) */
    int auto_src;             /* source "auto": the caller detects it (lt_detect.h) */
    int has_detected;         /* detectedLanguage goes into the answer: */
    char detected[40];        /*   its language */
    double detected_conf;     /*   and confidence (0..100) */
} srv_lt_req;

/* Parses a body (content type: application/json, else a urlencoded form)
 * and maps its languages onto model m: 1, or 0 with e set. r must be freed
 * either way. */
int srv_lt_parse(const encdec_model *m, const char *body, size_t len, int is_json, srv_lt_req *r,
                 srv_lt_error *e);
void srv_lt_free(srv_lt_req *r);
/* POST /translate_file's fields: source and target mapped onto model m
 * as /translate's (source "auto": r->auto_src): 1, or 0 with e set. r must
 * be freed either way. */
int srv_lt_pair(const encdec_model *m, const char *source, const char *target, srv_lt_req *r, srv_lt_error *e);
/* POST /detect's body: its q alone (a string or a list), checked as
 * /translate's: 1, or 0 with e set. r must be freed either way. */
int srv_lt_parse_q(const char *body, size_t len, int is_json, srv_lt_req *r, srv_lt_error *e);

/* The code a client sees for the model's language i (ISO 639-1 where it
 * has one), into out[n]. */
void srv_lt_code(const encdec_model *m, int i, char *out, size_t n);
/* The model's language index for a client's code (LibreTranslate's, its
 * API's spelling, or the model's own), or -1. */
int srv_lt_find(const encdec_model *m, const char *code);

/* A code of srv_lt_code's as LibreTranslate's API spells it ("zh" is
 * "zh-Hans", "zt" "zh-Hant", "pb" "pt-BR"; the rest as they are). */
const char *srv_lt_iso(const char *code);

/* {"translatedText": text or [texts]} (with "alternatives" when asked, and
 * "detectedLanguage": {"confidence", "language"}, one a text for a list,
 * when r->has_detected):
 * texts[i * (1 + alternatives) + k], k = 0 the translation; an alternative
 * that is empty, the translation or an earlier one is left out, as
 * LibreTranslate lists them. */
char *srv_lt_body(const srv_lt_req *r, const char *const *texts);

/* LibreTranslate's detect_translatable: 0 when every character of every
 * text is a space or in its rough map of emoji (U+1F600-1F64E,
 * 1F300-1F5FE, 1F680-1F6FE, 2600-26FE, 2700-27BE, FE00-FE0E, 1F900-1F9FE,
 * 1F1E6-1F1FE, 20D0-20FE: Python ranges, their ends left out): such texts
 * come back as they are, with no alternatives and "en" at 0 as the
 * language detected. */
int srv_lt_translatable(const srv_lt_req *r);
/* GET /languages: [{"code", "name", "targets"}] of the model. */
char *srv_lt_languages(const encdec_model *m);
/* GET /frontend/settings: {"charLimit": -1, "frontendTimeout", "apiKeys",
 * "keyRequired", "suggestions", "filesTranslation" (files given),
 * "supportedFilesFormat": files (NULL-terminated; NULL: none), "language":
 * {"source", "target": {"code", "name"}}}: the first language /languages
 * lists and its first target. */
char *srv_lt_settings(const encdec_model *m, const char *const *files);
/* {"error": message}. */
char *srv_lt_error_body(const char *message);

#endif
