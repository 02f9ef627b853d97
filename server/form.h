/* form.h - the fields of an OpenAI audio request, collected as
 * libmicrohttpd's post processor hands them over (in pieces, in any order)
 * and checked into a request, with OpenAI's error for whatever is wrong.
 *
 *   srv_form f;  srv_form_init(&f, max_upload);
 *   ... srv_form_add(&f, key, filename, data, off, size) per piece
 *   srv_audio_req q;  srv_error e;
 *   if (!srv_form_check(&f, &q, &e)) ... respond e.status with e's body
 *   srv_form_free(&f);
 *
 * No I/O, no model: tests and the fuzz harness drive it directly.
 */
#ifndef SRV_FORM_H
#define SRV_FORM_H

#include "encdec.h"

#include <stddef.h>
#include <stdint.h>

/* An error as OpenAI reports it: the HTTP status, and the body's
 * {"error": {"message", "type", "param", "code"}} (param, code: NULL = null). */
typedef struct {
    int status;
    char message[512];
    const char *type;         /* "invalid_request_error", "server_error", ... */
    const char *param;
    const char *code;
} srv_error;

/* Sets e (message formatted) and returns 0. */
int srv_fail(srv_error *e, int status, const char *type, const char *param, const char *code,
             const char *fmt, ...) __attribute__((format(printf, 6, 7)));

typedef enum { SRV_JSON, SRV_TEXT, SRV_SRT, SRV_VTT, SRV_VERBOSE_JSON } srv_format;

/* whisper.cpp server's fields (its /inference; taken on every audio route):
 * temperature_inc, translate, no_timestamps, beam_size, best_of,
 * no_speech_thold, logprob_thold, offset_t and duration (ms). Others of its
 * fields are ignored, as unknown fields are. */
enum { SRV_WC_TEMPERATURE_INC, SRV_WC_TRANSLATE, SRV_WC_NO_TIMESTAMPS, SRV_WC_BEAM_SIZE,
       SRV_WC_BEST_OF, SRV_WC_NO_SPEECH_THOLD, SRV_WC_LOGPROB_THOLD, SRV_WC_OFFSET_T,
       SRV_WC_DURATION, SRV_WC_N };

#define SRV_MAX_FIELD 4096    /* bytes of a text field */

typedef struct {
    size_t max_upload;        /* bytes of the file field */
    unsigned char *file;      /* the upload */
    size_t file_len, file_cap;
    char *file_name;
    int n_file;               /* file fields seen */
    /* text fields, as sent (NUL-terminated) */
    char *model, *language, *prompt, *response_format, *temperature, *stream;
    char *vad_filter, *vad_parameters;   /* extensions: faster-whisper's vad_filter */
    char *lt_source, *lt_target;         /* LibreTranslate's /translate_file: source, target */
    char *wc[SRV_WC_N];       /* whisper.cpp's /inference fields (srv_wc_names) */
    char *gran[4];            /* timestamp_granularities[] values, in order */
    int n_gran, gran_many;
    int too_large;            /* the file passed max_upload */
    int field_too_long;       /* a text field passed SRV_MAX_FIELD */
    char long_field[64];
    int nomem;
} srv_form;

typedef struct {
    const char *model;        /* borrowed from the form */
    const char *language;     /* NULL: detect */
    const char *prompt;       /* NULL: none */
    srv_format format;
    float temperature;        /* 0..1 */
    int words, segments;      /* granularities asked (verbose_json) */
    int stream;
    int vad;                  /* vad_filter: the speech alone (faster-whisper's) */
    encdec_vad_params vad_params;   /* vad_parameters: a JSON object of VadOptions */
    const unsigned char *file;
    size_t file_len;
    /* whisper.cpp's fields; -1 / NAN: not given */
    float temperature_inc;
    int translate, no_timestamps, beam_size, best_of;
    float no_speech_thold, logprob_thold;
    double offset_s, duration_s;   /* a clip of the audio (offset_t, duration); 0: all */
} srv_audio_req;

void srv_form_init(srv_form *f, size_t max_upload);
void srv_form_free(srv_form *f);
/* Frees the upload (its copy went elsewhere); the text fields stay. */
void srv_form_drop_file(srv_form *f);
/* One piece of field key (data[size] at offset off of the field's value;
 * filename non-NULL for a file part). Returns 0 when the form is beyond
 * repair (stop parsing), else 1. */
int srv_form_add(srv_form *f, const char *key, const char *filename, const char *data,
                 uint64_t off, size_t size);
/* The request the fields make, or 0 with OpenAI's error in *e. */
int srv_form_check(const srv_form *f, srv_audio_req *q, srv_error *e);
const char *srv_format_name(srv_format f);

#endif
