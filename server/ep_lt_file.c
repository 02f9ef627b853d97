/* ep_lt_file.c - LibreTranslate's POST /translate_file (a multipart form:
 * file, source, target; api_key ignored) and GET /download_file/<name>:
 * the file split into its texts (lt_doc.h), each translated as /translate
 * translates a text (lt_run.h: its sentences engine requests among the
 * others), the file written again and kept (lt_files.h) under a new name,
 * whose URL is the answer ({"translatedFileUrl"}). Errors are
 * LibreTranslate's {"error": message}. */
#include "http.h"
#include "lt.h"
#include "lt_doc.h"
#include "lt_files.h"
#include "lt_run.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FILE_MAX_UNITS 8192       /* texts of a file */
#define FILE_MAX_SENTENCES 16384  /* their sentences */
#define SAMPLE_BYTES 4096         /* what a source "auto" is detected from (LibreTranslate's get_texts) */

typedef struct {
    srv_lt_req r;         /* the languages (r.q: the sample, for a source "auto") */
    srv_doc *doc;
    srv_lt_run run;
    char *sample;
    char base[160];       /* the translated file's name: <name>_<target><ext> */
} file_st;

static void file_free(void *p) {
    file_st *t = p;
    if (!t) return;
    srv_lt_run_free(&t->run);
    srv_doc_free(t->doc);
    free(t->sample);
    srv_lt_free(&t->r);
    free(t);
}

static enum MHD_Result fail(conn *k, struct MHD_Connection *c, int status, const char *message) {
    return srv_send_body(k, c, status, srv_lt_error_body(message), "application/json", NULL);
}

/* argos-translate-files' output name: the upload's secure name, "_" and
 * the target's code before its extension. */
static void out_name(const char *fn, const char *code, char *out, size_t n) {
    char safe[64], ext[16] = "";   /* (the download path stays within a request path's 160 bytes) */
    srv_secure_filename(fn, safe, sizeof safe);
    const char *dot = strrchr(fn, '.');
    snprintf(ext, sizeof ext, "%s", dot ? dot : "");
    char *sdot = strrchr(safe, '.');
    if (!sdot || strcmp(sdot, ext)) {   /* the name lost its extension: "file" + it */
        snprintf(out, n, "file_%s%s", code, ext);
        return;
    }
    *sdot = 0;
    snprintf(out, n, "%s_%s%s", safe[0] ? safe : "file", code, ext);
}

/* The form checked as LibreTranslate checks it, in its order: 0, or an
 * HTTP status with msg set. */
static int check_form(conn *k, file_st *t, char *msg, size_t n) {
    const srv_form *f = &k->form;
    srv_lt_error e;
    if (k->pp_bad || !k->form_on) {
        snprintf(msg, n, "Invalid request: send the file as multipart/form-data (fields file, source, target)");
        return 400;
    }
    if (f->nomem) {
        snprintf(msg, n, "out of memory");
        return 500;
    }
    if (f->too_large) {
        snprintf(msg, n, "the file is larger than the %zu bytes this server accepts", f->max_upload);
        return 413;
    }
    if (f->field_too_long) {
        snprintf(msg, n, "Invalid request: field %s is longer than %d bytes", f->long_field, SRV_MAX_FIELD);
        return 400;
    }
    if (!f->n_file) {
        snprintf(msg, n, "Invalid request: missing file parameter");
        return 400;
    }
    if (!srv_lt_pair(k->s->model, f->lt_source, f->lt_target, &t->r, &e)) {
        snprintf(msg, n, "%s", e.message);
        return e.status;
    }
    if (!f->file_name || !*f->file_name) {
        snprintf(msg, n, "Invalid request: empty file");
        return 400;
    }
    if (!srv_doc_supported(f->file_name)) {
        snprintf(msg, n, "Invalid request: file format not supported");
        return 400;
    }
    return 0;
}

static enum MHD_Result answer(conn *k, struct MHD_Connection *c);

static enum MHD_Result submit(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    file_st *t = calloc(1, sizeof *t);
    if (!t) return fail(k, c, 500, "out of memory");
    k->ep = t;
    k->ep_free = file_free;
    char msg[600];
    int st = check_form(k, t, msg, sizeof msg);
    if (!st)
        st = srv_doc_open(k->form.file_name, k->form.file ? k->form.file : (const unsigned char *)"",
                          k->form.file_len, FILE_MAX_UNITS, &t->doc, msg, sizeof msg);
    if (!st && t->r.auto_src) {   /* detected from the file's first texts */
        if (!(t->sample = srv_doc_sample(t->doc, SAMPLE_BYTES))) {
            snprintf(msg, sizeof msg, "out of memory");
            st = 500;
        } else if (*t->sample) {
            t->r.q[0] = t->sample;
            t->r.n_q = 1;
            st = srv_lt_detect_source(s, &t->r, msg, sizeof msg);
            if (st == 400 && !t->r.has_detected && !s->langid_path) st = 0;   /* the tokenizer's source */
        }
    }
    if (st) return fail(k, c, st, msg);
    srv_form_drop_file(&k->form);   /* the document holds what it needs */
    char code[40];
    encdec_model_info info;
    encdec_model_get_info(s->model, &info);
    if (t->r.tgt >= 0) srv_lt_code(s->model, t->r.tgt, code, sizeof code);
    else snprintf(code, sizeof code, "%s", info.target_language ? info.target_language : "out");
    out_name(k->form.file_name, code, t->base, sizeof t->base);
    encdec_generate_params p;
    srv_lt_params(s, &t->r, &p);
    const char *const *units;
    int n = srv_doc_units(t->doc, &units);
    if ((st = srv_lt_run_start(s, &t->run, units, n, FILE_MAX_SENTENCES, &p, msg, sizeof msg)))
        return fail(k, c, st, msg);
    if (!t->run.n_req) return answer(k, c);   /* nothing to translate: the file as it was */
    srv_park_conn(s, &k->park, c, srv_lt_run_done, &t->run, s->o.timeout_s > 0 ? k->t0 + s->o.timeout_s * 1e3 : 0);
    return MHD_YES;
}

/* {"translatedFileUrl": "http://<host>/download_file/<name>"}, the host
 * the client asked (a proxy's X-Forwarded-Host and -Proto first). */
static char *url_body(struct MHD_Connection *c, const char *name) {
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-Host");
    const char *proto = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-Proto");
    if (!host) host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!proto || (strcmp(proto, "https") && strcmp(proto, "http"))) proto = "http";
    char url[600];
    snprintf(url, sizeof url, "%s://%.300s/download_file/%s", proto, host ? host : "localhost", name);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "translatedFileUrl", url);
    char *b = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return b;
}

static enum MHD_Result answer(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    file_st *t = k->ep;
    if (k->park.gone) {
        k->status = 499;
        return MHD_NO;
    }
    if (k->park.late && !srv_lt_run_done(&t->run, 0))
        return fail(k, c, 504, "the request took longer than the server's limit");
    char msg[600] = "out of memory";
    int n = t->run.n_unit;
    char **out = calloc((size_t)n + 1, sizeof *out);
    int st = out ? srv_lt_run_collect(s, &t->run, 1, out, msg, sizeof msg) : 500;
    unsigned char *bytes = NULL;
    size_t len = 0;
    if (!st) st = srv_doc_write(t->doc, (const char *const *)out, &bytes, &len, msg, sizeof msg);
    for (int i = 0; out && i < n; i++) free(out[i]);
    free(out);
    if (st) return fail(k, c, st, msg);
    char name[256];
    if (srv_files_put(s->files, t->base, bytes, len, srv_now_ms() / 1e3, name, sizeof name))
        return fail(k, c, 500, "the translated file does not fit in the server's store");
    char *body = url_body(c, name);
    return body ? srv_send_body(k, c, 200, body, "application/json", NULL) : fail(k, c, 500, "out of memory");
}

enum MHD_Result srv_ep_translate_file(conn *k, struct MHD_Connection *c) {
    if (!k->s->text)
        return fail(k, c, 404, "the model transcribes speech: /translate_file serves translation models");
    if (k->s->o.no_files || !k->s->files) return fail(k, c, 403, "Files translation are disabled on this server.");
    return k->ep ? answer(k, c) : submit(k, c);
}

/* The type Python's mimetypes gives a name (Flask's send_file). */
static const char *mime_of(const char *name) {
    static const char *const map[][2] = {
        {".txt", "text/plain; charset=utf-8"},
        {".html", "text/html; charset=utf-8"},
        {".srt", "application/x-subrip"},
        {".docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
        {".pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
        {".odt", "application/vnd.oasis.opendocument.text"},
        {".odp", "application/vnd.oasis.opendocument.presentation"},
        {".epub", "application/epub+zip"}};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(dot, map[i][0])) return map[i][1];
    return "application/octet-stream";
}

enum MHD_Result srv_ep_download_file(conn *k, struct MHD_Connection *c) {
    srv *s = k->s;
    if (s->o.no_files || !s->files) return fail(k, c, 400, "Files translation are disabled on this server.");
    const char *name = k->path + 15;   /* after "/download_file/" */
    unsigned char *data = NULL;
    size_t len = 0;
    int st = strchr(name, '/') ? -1 : srv_files_get(s->files, name, srv_now_ms() / 1e3, &data, &len);
    if (st == -2) return fail(k, c, 500, "out of memory");
    if (st) return fail(k, c, 404, "no such file (a translated file is kept 30 minutes)");
    const char *dot = strchr(name, '.');   /* the name the client saves: the uuid's part left out */
    char disp[300];
    snprintf(disp, sizeof disp, "attachment; filename=%s", dot ? dot + 1 : name);
    return srv_send_bytes(k, c, 200, data, len, mime_of(name), "Content-Disposition", disp);
}
