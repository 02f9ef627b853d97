/* out.h - transcripts written out (txt, srt, vtt, tsv, json), from the
 * public result only (include/encdec.h): the layouts of openai-whisper's
 * writers, so files from either tool read the same.
 *
 *   out_buf b = {0};
 *   out_srt(&b, result, &opts);   ...  b.s (NUL-terminated), b.err
 *   free(b.s);
 *
 * Subtitles: a cue per segment; with word times, cues regrouped from the
 * words when line limits are given (out_cues).
 */
#ifndef ED_OUT_H
#define ED_OUT_H

#include "encdec.h"

#include <stddef.h>

typedef struct {
    char *s;        /* NUL-terminated */
    size_t n, cap;
    int err;        /* an allocation failed: s is incomplete */
} out_buf;

void out_put(out_buf *b, const char *s, size_t n);
void out_printf(out_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* openai-whisper's format_timestamp: [hh:]mm:ss<marker>mmm, hours when
 * asked or when non-zero; seconds rounded to the millisecond (half to even). */
void out_timestamp(char *dst, size_t cap, double seconds, int always_hours, char marker);

typedef struct {
    double start, end;
    char *text;     /* malloc'd */
} out_cue;

/* The subtitle cues of r (openai-whisper's SubtitlesWriter.iterate_result);
 * *cues malloc'd, each text too (out_cues_free). Returns the count, or -1
 * when out of memory. */
int out_cues(const encdec_result *r, const encdec_format_options *o, out_cue **cues);
void out_cues_free(out_cue *c, int n);

void out_txt(out_buf *b, const encdec_result *r);
void out_tsv(out_buf *b, const encdec_result *r);
void out_srt(out_buf *b, const encdec_result *r, const encdec_format_options *o);
void out_vtt(out_buf *b, const encdec_result *r, const encdec_format_options *o);
void out_json(out_buf *b, const encdec_result *r);

#endif
