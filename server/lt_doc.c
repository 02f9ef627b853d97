/* lt_doc.c - the files of POST /translate_file (lt_doc.h): plain text,
 * subtitles (lt_srt.h), HTML (lt_html.h) and the ZIP formats of office
 * documents and e-books (lt_zip.h, in a build with libzip). */
#include "lt_doc.h"
#include "lt_html.h"
#include "lt_srt.h"
#include "utf8.h"
#if ENCDEC_WITH_ZIP
#include "lt_zip.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ENTRY_MAX ((size_t)64 << 20)   /* bytes of a ZIP entry that is translated */

enum { K_TXT, K_ODT, K_ODP, K_DOCX, K_PPTX, K_EPUB, K_HTML, K_SRT, K_N };
/* argos-translate-files' order, as LibreTranslate lists them */
static const char *const EXT[K_N] = {".txt", ".odt", ".odp", ".docx", ".pptx", ".epub", ".html", ".srt"};
static int zipped(int k) { return k >= K_ODT && k <= K_EPUB; }

const char *const *srv_doc_extensions(void) {
    static const char *list[K_N + 1];
    if (!list[0]) {
        int n = 0;
        for (int k = 0; k < K_N; k++)
            if (ENCDEC_WITH_ZIP || !zipped(k)) list[n++] = EXT[k];
        list[n] = NULL;
    }
    return list;
}

/* The format of file name fn (its extension as LibreTranslate compares
 * it: case and all), or -1. */
static int kind_of(const char *fn) {
    const char *dot = strrchr(fn, '.'), *slash = strrchr(fn, '/');
    if (!dot || dot == fn || (slash && dot < slash) || (slash && dot == slash + 1)) return -1;
    for (int k = 0; k < K_N; k++)
        if (!strcmp(dot, EXT[k])) return ENCDEC_WITH_ZIP || !zipped(k) ? k : -1;
    return -1;
}

int srv_doc_supported(const char *fn) { return kind_of(fn) >= 0; }

struct srv_doc {
    int kind;
    char *text;            /* txt, srt, html: the file as text (NUL-terminated) */
    size_t bom;            /* its byte-order mark's bytes (kept before the text) */
    srv_srt srt;
    srv_html *h;           /* html: [1]; ZIP formats: [n_h], one a translated entry */
    int n_h;
    int *entry;            /* ZIP: each h's entry */
    char **entry_text;     /*      and its text */
    unsigned char *bytes;  /* ZIP: the file (the archive reads it) */
    size_t n_bytes;
#if ENCDEC_WITH_ZIP
    srv_zip *zip;
#endif
    const char **units;
    int n_units;
};

static int doc_oom(char *msg, size_t n) {
    snprintf(msg, n, "out of memory");
    return 500;
}

/* Adds h's text nodes to d's units. */
static int doc_add_units(srv_doc *d, const srv_html *h) {
    const char **u = realloc(d->units, sizeof *u * (size_t)(d->n_units + h->n_text + 1));
    if (!u) return -1;
    d->units = u;
    for (int i = 0; i < h->n_text; i++) d->units[d->n_units++] = h->text[i];
    return 0;
}

/* Splits text into d's next part (xml: as XML, else as HTML). */
static int doc_part(srv_doc *d, const char *text, int xml, int max_units, const char *what, char *msg, size_t n) {
    srv_html *h = realloc(d->h, sizeof *h * (size_t)(d->n_h + 1));
    if (!h) return doc_oom(msg, n);
    d->h = h;
    h = &d->h[d->n_h++];
    int st = xml ? srv_html_split_xml(text, max_units - d->n_units, h) : srv_html_split(text, max_units - d->n_units, h);
    if (st == -2) {
        snprintf(msg, n, "%s: more than %d texts to translate in the file", what, max_units);
        return 413;
    }
    if (st || doc_add_units(d, h)) return doc_oom(msg, n);
    return 0;
}

/* txt, srt, html: the file as UTF-8 text. */
static int open_text(srv_doc *d, const unsigned char *data, size_t len, int max_units, char *msg, size_t n) {
    if (memchr(data, 0, len)) {
        snprintf(msg, n, "the file holds a NUL byte: not text");
        return 400;
    }
    if (!(d->text = malloc(len + 1))) return doc_oom(msg, n);
    memcpy(d->text, data, len);
    d->text[len] = 0;
    size_t bad = srv_utf8_bad(d->text);
    if (bad != (size_t)-1) {
        snprintf(msg, n, "the file is not UTF-8 text (byte %zu)", bad);
        return 400;
    }
    d->bom = len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3) ? 3 : 0;
    const char *t = d->text + d->bom;
    if (d->kind == K_HTML) return doc_part(d, t, 0, max_units, "the document", msg, n);
    if (d->kind == K_TXT) {
        if (!(d->units = malloc(sizeof *d->units))) return doc_oom(msg, n);
        d->units[d->n_units++] = t;
        return 0;
    }
    int st = srv_srt_parse(t, max_units, &d->srt, msg, n);
    if (st == -2) snprintf(msg, n, "more than %d subtitles in the file", max_units);
    if (st) return st == -1 ? doc_oom(msg, n) : st == -2 ? 413 : 400;
    if (!(d->units = malloc(sizeof *d->units * (size_t)(d->srt.n + 1)))) return doc_oom(msg, n);
    for (int i = 0; i < d->srt.n; i++) d->units[d->n_units++] = d->srt.cue[i].text;
    return 0;
}

#if ENCDEC_WITH_ZIP
/* What entry name of a kind's archive holds: 0 nothing translated, 1 XML, 2 HTML. */
static int entry_role(int kind, const char *name) {
    size_t l = strlen(name);
    switch (kind) {
    case K_DOCX:
        return !strcmp(name, "word/document.xml") || !strncmp(name, "word/header", 11) ||
               !strncmp(name, "word/footer", 11);
    case K_PPTX: {
        if (strncmp(name, "ppt/slides/slide", 16)) return 0;
        const char *p = name + 16;
        while (*p >= '0' && *p <= '9') p++;
        return !strncmp(p, ".xml", 4);
    }
    case K_ODT:
    case K_ODP: return !strcmp(name, "content.xml");
    case K_EPUB:
        if (!strcmp(name, "OPS/content.opf") || !strcmp(name, "OPS/toc.ncx") || !strcmp(name, "OEBPS/content.opf") ||
            !strcmp(name, "OEBPS/toc.ncx"))
            return 1;
        return (l >= 5 && !strcmp(name + l - 5, ".html")) || (l >= 6 && !strcmp(name + l - 6, ".xhtml")) ? 2 : 0;
    }
    return 0;
}

static int open_zip(srv_doc *d, const unsigned char *data, size_t len, int max_units, char *msg, size_t n) {
    if (!(d->bytes = malloc(len ? len : 1))) return doc_oom(msg, n);
    memcpy(d->bytes, data, len);
    d->n_bytes = len;
    if (srv_zip_open(d->bytes, len, &d->zip, msg, n)) return 400;
    int count = srv_zip_count(d->zip);
    for (int i = 0; i < count; i++) {
        const char *name = srv_zip_name(d->zip, i);
        int role = entry_role(d->kind, name);
        if (!role) continue;
        int *e = realloc(d->entry, sizeof *e * (size_t)(d->n_h + 1));
        char **et = e ? realloc(d->entry_text, sizeof *et * (size_t)(d->n_h + 1)) : NULL;
        if (e) d->entry = e;
        if (et) d->entry_text = et;
        if (!e || !et) return doc_oom(msg, n);
        size_t el;
        char *text;
        if (srv_zip_read(d->zip, i, ENTRY_MAX, &text, &el, msg, n)) return 400;
        d->entry[d->n_h] = i;
        d->entry_text[d->n_h] = text;
        size_t bad = memchr(text, 0, el) ? 0 : srv_utf8_bad(text);
        if (bad != (size_t)-1) {
            free(text);
            snprintf(msg, n, "%.200s is not UTF-8 text (byte %zu)", name, bad);
            return 400;
        }
        int st = doc_part(d, text, role == 1, max_units, name, msg, n);
        if (st) {
            if (d->n_h == 0 || d->entry_text[d->n_h - 1] != text) free(text);
            return st;
        }
    }
    return 0;
}
#endif

int srv_doc_open(const char *fn, const unsigned char *data, size_t len, int max_units, srv_doc **out,
                 char *msg, size_t n) {
    *out = NULL;
    int kind = kind_of(fn);
    if (kind < 0) {
        snprintf(msg, n, "Invalid request: file format not supported");
        return 400;
    }
    srv_doc *d = calloc(1, sizeof *d);
    if (!d) return doc_oom(msg, n);
    d->kind = kind;
    int st;
#if ENCDEC_WITH_ZIP
    st = zipped(kind) ? open_zip(d, data, len, max_units, msg, n) : open_text(d, data, len, max_units, msg, n);
#else
    st = open_text(d, data, len, max_units, msg, n);
#endif
    if (st) {
        srv_doc_free(d);
        return st;
    }
    *out = d;
    return 0;
}

int srv_doc_units(const srv_doc *d, const char *const **units) {
    *units = d->units;
    return d->n_units;
}

char *srv_doc_sample(const srv_doc *d, size_t max) {
    char *s = malloc(max + 1);
    size_t len = 0;
    if (!s) return NULL;
    for (int i = 0; i < d->n_units && len < max; i++) {
        size_t l = strlen(d->units[i]);
        if (len && len < max) s[len++] = '\n';
        if (l > max - len) {   /* cut at a character's start */
            l = max - len;
            while (l && ((unsigned char)d->units[i][l] & 0xC0) == 0x80) l--;
        }
        memcpy(s + len, d->units[i], l);
        len += l;
    }
    s[len] = 0;
    return s;
}

/* bom + body: malloc'd bytes. */
static int with_bom(const srv_doc *d, char *body, unsigned char **bytes, size_t *len) {
    if (!body) return -1;
    size_t l = strlen(body);
    unsigned char *b = malloc(d->bom + l + 1);
    if (b) {
        memcpy(b, d->text, d->bom);
        memcpy(b + d->bom, body, l);
        *bytes = b;
        *len = d->bom + l;
    }
    free(body);
    return b ? 0 : -1;
}

int srv_doc_write(const srv_doc *d, const char *const *out, unsigned char **bytes, size_t *len, char *msg,
                  size_t n) {
    *bytes = NULL;
    int st = 0;
    if (d->kind == K_TXT) {
        st = with_bom(d, strdup(out[0]), bytes, len);
    } else if (d->kind == K_SRT) {
        char *t = srv_srt_write(&d->srt, out);
        st = t ? 0 : -1;
        if (t) {
            *bytes = (unsigned char *)t;
            *len = strlen(t);
        }
    } else if (d->kind == K_HTML) {
        st = with_bom(d, srv_html_join(&d->h[0], out), bytes, len);
    } else {
#if ENCDEC_WITH_ZIP
        int count = srv_zip_count(d->zip);
        char **repl = calloc((size_t)count + 1, sizeof *repl);
        st = repl ? 0 : -1;
        for (int i = 0, at = 0; i < d->n_h && !st; at += d->h[i++].n_text)
            st = !(repl[d->entry[i]] = srv_html_join(&d->h[i], out + at));
        int zst = st ? 0 : srv_zip_write(d->zip, (const char *const *)repl, bytes, len, msg, n);
        for (int i = 0; repl && i < count; i++) free(repl[i]);
        free(repl);
        if (zst) return 500;
#endif
    }
    return st ? doc_oom(msg, n) : 0;
}

void srv_doc_free(srv_doc *d) {
    if (!d) return;
    for (int i = 0; i < d->n_h; i++) srv_html_free(&d->h[i]);
    for (int i = 0; d->entry_text && i < d->n_h; i++) free(d->entry_text[i]);
    free(d->h);
    free(d->entry);
    free(d->entry_text);
#if ENCDEC_WITH_ZIP
    srv_zip_free(d->zip);
#endif
    free(d->bytes);
    srv_srt_free(&d->srt);
    free(d->text);
    free(d->units);
    free(d);
}
