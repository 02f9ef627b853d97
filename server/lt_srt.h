/* lt_srt.h - SubRip subtitles as LibreTranslate's file translation reads
 * and writes them (through pysrt; lt_doc.h): cues parsed, their texts the
 * units, the file written again as pysrt saves it. Internal to lt_doc.c
 * and its tests. */
#ifndef SRV_LT_SRT_H
#define SRV_LT_SRT_H

#include <stddef.h>

typedef struct {
    char *index;          /* as written (trimmed); NULL: none (its ordinal is written) */
    long long start, end; /* milliseconds */
    char *position;       /* what follows the end time (trimmed), "" when nothing */
    char *text;           /* its lines joined by spaces */
} srv_cue;

typedef struct {
    srv_cue *cue;
    int n, cap;
    const char *eol;      /* the file's line end: "\n" or "\r\n" */
} srv_srt;

/* Parses text (UTF-8, NUL-terminated, no byte-order mark), at most max
 * cues: 0; -1 out of memory; -2 over max; -3 a cue that is not one (its
 * number and why in msg). s must be freed either way. */
int srv_srt_parse(const char *text, int max, srv_srt *s, char *msg, size_t n);
/* The file with out[i] as cue i's text (wrapped at 40): malloc'd, NULL
 * when out of memory. */
char *srv_srt_write(const srv_srt *s, const char *const *out);
void srv_srt_free(srv_srt *s);

#endif
