/* lt_html.h - LibreTranslate's format "html" (lt.h): a document split into
 * its markup, kept byte for byte, and its text nodes, which are translated
 * one by one and put back. No I/O, no model: ep_lt.c runs the
 * translations; tests and the fuzz harness drive this.
 *
 * The rules:
 * - markup is tags (quoted attribute values may hold '>'), comments,
 *   <!DOCTYPE ...> / <![CDATA[...]]> and <? ... >; a '<' that starts none of
 *   them is text;
 * - a text node's entities are decoded for the model (the markup five,
 *   HTML 4's Latin-1 set (&nbsp; .. &yuml;), its typographic ones (&mdash;
 *   &hellip; &rsquo; &euro; ...) and numeric ones; others stay as
 *   written), its leading and trailing white space kept as it was, and its
 *   translation escaped (& < >, but an "&name;" reference kept) where it
 *   stood; a node without a letter
 *   (white space, numbers, ASCII punctuation) is kept as markup;
 * - nothing is translated inside <script>, <style> (raw text to their end
 *   tag), <code>, <kbd>, <samp>, <var>, <pre>, nor inside an element with
 *   translate="no" or a class "notranslate" (the attribute browsers and
 *   translation services honour), nested elements included.
 */
#ifndef SRV_LT_HTML_H
#define SRV_LT_HTML_H

#include <stddef.h>

typedef struct {
    int text;          /* -1: markup bytes as they were; else the index of a text node */
    size_t off, len;   /* markup: its bytes in the document */
    size_t lead, trail;   /* text: white space before and after it, as it was */
} srv_html_part;

typedef struct {
    const char *doc;       /* the document (borrowed) */
    srv_html_part *part;
    int n_part, cap_part;
    char **text;           /* [n_text] the text nodes, decoded and trimmed (malloc'd) */
    int n_text, cap_text;
    int xml;               /* split as XML (srv_html_split_xml) */
} srv_html;

/* Splits doc (NUL-terminated) into h, at most max_text text nodes: 0; -1
 * out of memory; -2 more text nodes than max_text. h must be freed either
 * way. */
int srv_html_split(const char *doc, int max_text, srv_html *h);
/* The same for an XML document (the parts of office and e-book files:
 * lt_doc.h): no void elements, no raw text, nothing kept but inside
 * <w:instrText> (a Word field's code) and what translate="no" marks; a
 * translation's '&' escaped unless it starts one of XML's five entities. */
int srv_html_split_xml(const char *doc, int max_text, srv_html *h);
/* The document again with out[i] (UTF-8) in place of text node i: malloc'd,
 * NULL when out of memory. */
char *srv_html_join(const srv_html *h, const char *const *out);
void srv_html_free(srv_html *h);
/* s with its entities decoded as a text node's are (Python's html.unescape
 * where these rules know the entity; LibreTranslate unescapes its text
 * translations so): malloc'd, NULL when out of memory. */
char *srv_html_unescape(const char *s);

#endif
