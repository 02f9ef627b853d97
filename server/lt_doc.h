/* lt_doc.h - the files LibreTranslate's POST /translate_file takes, as its
 * engine (Argos Translate's argos-translate-files) reads them: each split
 * into the texts to translate (units) and the rest, kept, and written again
 * with the units' translations in place. No I/O but memory, no model:
 * ep_lt_file.c runs the translations; tests and the fuzz harness drive this.
 *
 *   .txt    the whole text one unit
 *   .srt    each cue's text, its lines joined by spaces, one unit; written
 *           as pysrt saves (index, "HH:MM:SS,mmm --> HH:MM:SS,mmm" and the
 *           cue's position as it was, its translation wrapped at 40
 *           characters as Python's textwrap.fill wraps, the file's line ends)
 *   .html   each text node (lt_html.h's rules), the markup byte for byte
 *   .docx   the text nodes of word/document.xml, word/header*, word/footer*
 *   .pptx   those of ppt/slides/slide<N>.xml
 *   .odt .odp  those of content.xml
 *   .epub   those of OPS|OEBPS/content.opf and toc.ncx (XML), and of every
 *           *.html / *.xhtml (HTML)
 * The ZIP formats (lt_zip.h) keep every other entry as it was; their XML
 * text nodes follow srv_html_split_xml. Files are UTF-8 (a byte-order mark
 * is kept); PDF (a PDF library's work) is not read.
 */
#ifndef SRV_LT_DOC_H
#define SRV_LT_DOC_H

#include <stddef.h>

typedef struct srv_doc srv_doc;

/* The formats, as LibreTranslate's supportedFilesFormat lists them (the
 * ZIP ones only in a build with libzip): NULL-terminated. */
const char *const *srv_doc_extensions(void);
/* 1 when file name fn ends in one of them. */
int srv_doc_supported(const char *fn);

/* Reads file data[len] named fn (its extension says its format), at most
 * max_units units: 0; else an HTTP status (400: not readable as its format,
 * with why; 413: more units than max_units; 500: out of memory) with msg set. */
int srv_doc_open(const char *fn, const unsigned char *data, size_t len, int max_units, srv_doc **d,
                 char *msg, size_t n);
/* Its units (NUL-terminated, UTF-8; some may be empty) into *units. */
int srv_doc_units(const srv_doc *d, const char *const **units);
/* Its first texts, up to max bytes (LibreTranslate's get_texts: what a
 * source "auto" is detected from): malloc'd. */
char *srv_doc_sample(const srv_doc *d, size_t max);
/* The file again with out[i] in place of unit i: malloc'd into *bytes,
 * *len: 0; else 500 with msg set. */
int srv_doc_write(const srv_doc *d, const char *const *out, unsigned char **bytes, size_t *len, char *msg,
                  size_t n);
void srv_doc_free(srv_doc *d);

/* Python's textwrap.fill(text, width) (its defaults: tabs expanded, white
 * space made spaces, words broken after hyphens and when longer than a
 * line), widths in code points: malloc'd. */
char *srv_wrap_fill(const char *text, int width);

#endif
