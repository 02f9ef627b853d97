/* openai.h - response bodies in OpenAI's audio API shapes, from a result
 * of the public API: json, text, srt, vtt, verbose_json, the server-sent
 * events of a streamed transcription, and error bodies. Every function
 * returns a malloc'd NUL-terminated body (NULL: out of memory).
 */
#ifndef SRV_OPENAI_H
#define SRV_OPENAI_H

#include "encdec.h"
#include "form.h"

/* The transcript body in format q->format; *ctype its Content-Type.
 * task: "transcribe" or "translate" (verbose_json). */
char *srv_body(const encdec_result *r, const srv_audio_req *q, const char *task,
               const char **ctype);
/* {"error": {...}} */
char *srv_error_body(const srv_error *e);
/* One SSE event: "data: {"type": "transcript.text.delta", "delta": text}\n\n". */
char *srv_sse_delta(const char *text);
/* The last: "transcript.text.done" with the whole text. */
char *srv_sse_done(const char *text);
/* The error event of a stream that failed after it started. */
char *srv_sse_error(const srv_error *e);

#endif
