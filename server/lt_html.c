/* lt_html.c - a document's markup and text nodes (lt_html.h). */
#include "lt_html.h"
#include "utf8.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_LEN 15   /* longer tag names are never the ones that stop translation */

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

/* ---- the parts ---- */

static int add_part(srv_html *h, srv_html_part p) {
    if (h->n_part == h->cap_part) {
        int cap = h->cap_part ? 2 * h->cap_part : 32;
        srv_html_part *q = realloc(h->part, sizeof *q * (size_t)cap);
        if (!q) return -1;
        h->part = q;
        h->cap_part = cap;
    }
    h->part[h->n_part++] = p;
    return 0;
}

static int add_markup(srv_html *h, size_t a, size_t b) {
    if (b <= a) return 0;
    if (h->n_part && h->part[h->n_part - 1].text < 0 &&
        h->part[h->n_part - 1].off + h->part[h->n_part - 1].len == a) {
        h->part[h->n_part - 1].len += b - a;   /* one run of markup */
        return 0;
    }
    return add_part(h, (srv_html_part){-1, a, b - a, 0, 0});
}

/* Named entities decoded: HTML 4's Latin-1 set (U+00A0 .. U+00FF in order)
 * and its punctuation and Latin Extended ones, besides the markup five.
 * Others stay as written, and join() keeps a reference it finds in a
 * translation as a reference. */
static const char *const LATIN1[96] = {
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro",
    "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
    "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave",
    "Eacute", "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve",
    "Oacute", "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml",
    "Yacute", "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig",
    "ccedil", "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth",
    "ntilde", "ograve", "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave",
    "uacute", "ucirc", "uuml", "yacute", "thorn", "yuml"};
static const struct {
    const char *name;
    uint32_t c;
} NAMED[] = {
    {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''},
    {"OElig", 338}, {"oelig", 339}, {"Scaron", 352}, {"scaron", 353}, {"Yuml", 376}, {"fnof",
    402}, {"circ", 710}, {"tilde", 732}, {"ensp", 8194}, {"emsp", 8195}, {"thinsp", 8201},
    {"zwnj", 8204}, {"zwj", 8205}, {"lrm", 8206}, {"rlm", 8207}, {"ndash", 8211}, {"mdash",
    8212}, {"lsquo", 8216}, {"rsquo", 8217}, {"sbquo", 8218}, {"ldquo", 8220}, {"rdquo", 8221},
    {"bdquo", 8222}, {"dagger", 8224}, {"Dagger", 8225}, {"bull", 8226}, {"hellip", 8230},
    {"permil", 8240}, {"prime", 8242}, {"Prime", 8243}, {"lsaquo", 8249}, {"rsaquo", 8250},
    {"euro", 8364}, {"trade", 8482}};

/* The length of the entity name at s (letters, then letters or digits),
 * 0 when none. */
static size_t name_len(const char *s, size_t n) {
    size_t i = 0;
    if (n && isalpha((unsigned char)s[0]))
        while (i < n && i < 32 && isalnum((unsigned char)s[i])) i++;
    return i;
}

/* The entity at s[0] == '&' (at most n bytes): its length, its code point
 * in *c; 0 when it is not one decoded here. */
static size_t entity(const char *s, size_t n, uint32_t *c) {
    size_t l = name_len(s + 1, n - 1);
    if (l && 1 + l < n && s[1 + l] == ';') {
        for (int k = 0; k < 96; k++)
            if (strlen(LATIN1[k]) == l && !strncmp(s + 1, LATIN1[k], l)) {
                *c = 0xA0 + (uint32_t)k;
                return l + 2;
            }
        for (size_t k = 0; k < sizeof NAMED / sizeof NAMED[0]; k++)
            if (strlen(NAMED[k].name) == l && !strncmp(s + 1, NAMED[k].name, l)) {
                *c = NAMED[k].c;
                return l + 2;
            }
        return 0;
    }
    if (n < 4 || s[1] != '#') return 0;
    int hex = s[2] == 'x' || s[2] == 'X';
    size_t i = hex ? 3 : 2;
    uint32_t v = 0;
    size_t digits = 0;
    for (; i < n && digits < 8; i++, digits++) {
        int d = isdigit((unsigned char)s[i]) ? s[i] - '0'
                : hex && isxdigit((unsigned char)s[i]) ? tolower((unsigned char)s[i]) - 'a' + 10
                : -1;
        if (d < 0) break;
        v = v * (hex ? 16 : 10) + (uint32_t)d;
    }
    if (!digits || i >= n || s[i] != ';' || v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *c = v;
    return i + 1;
}

/* s[0, n) with its entities decoded: malloc'd (never longer than s). */
static char *decode(const char *s, size_t n) {
    char *out = malloc(n + 1), *w = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t l = s[i] == '&' ? entity(s + i, n - i, &c) : 0;
        if (l) {
            w += srv_utf8_put(w, c);
            i += l;
        } else {
            *w++ = s[i++];
        }
    }
    *w = 0;
    return out;
}

/* 1 when text (UTF-8) holds a letter: an ASCII one, or any character
 * beyond ASCII but the no-break space. Other nodes (white space, numbers,
 * ASCII punctuation) are kept as they are. */
static int has_letter(const char *t) {
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        if (isalpha(*p)) return 1;
        if (*p >= 0x80 && !(p[0] == 0xC2 && p[1] == 0xA0) && (*p & 0xC0) != 0x80) return 1;
    }
    return 0;
}

char *srv_html_unescape(const char *s) { return decode(s, strlen(s)); }

/* The text doc[a, b): a text node to translate, or markup (skipping: inside
 * what is not translated; or nothing to translate in it). */
static int add_text(srv_html *h, size_t a, size_t b, int skipping, int max_text) {
    if (b <= a) return 0;
    size_t lead = 0, trail = 0;
    while (a + lead < b && is_ws(h->doc[a + lead])) lead++;
    while (b - trail > a + lead && is_ws(h->doc[b - trail - 1])) trail++;
    if (skipping || a + lead == b) return add_markup(h, a, b);
    char *t = decode(h->doc + a + lead, b - a - lead - trail);
    if (!t) return -1;
    if (!has_letter(t)) {
        free(t);
        return add_markup(h, a, b);
    }
    if (h->n_text == max_text) {
        free(t);
        return -2;
    }
    if (h->n_text == h->cap_text) {
        int cap = h->cap_text ? 2 * h->cap_text : 16;
        char **q = realloc(h->text, sizeof *q * (size_t)cap);
        if (!q) {
            free(t);
            return -1;
        }
        h->text = q;
        h->cap_text = cap;
    }
    h->text[h->n_text++] = t;   /* freed with h from here */
    return add_part(h, (srv_html_part){h->n_text - 1, a, b - a, lead, trail});
}

/* ---- tags ---- */

typedef struct {
    char name[NAME_MAX_LEN + 1];   /* lower case; "" when longer */
    int closing, self_closed;
    int no_translate;              /* translate="no", or class "notranslate" */
} tag_info;

/* One past the end of the markup at d[i] == '<', or 0 when that '<' starts
 * no markup (it is text). Unterminated markup runs to the end. */
static size_t markup_end(const char *d, size_t i, size_t n) {
    const char *p = d + i + 1, *e;
    if (!strncmp(p, "!--", 3)) {
        e = strstr(p + 3, "-->");
        return e ? (size_t)(e + 3 - d) : n;
    }
    if (!strncmp(p, "![CDATA[", 8)) {
        e = strstr(p + 8, "]]>");
        return e ? (size_t)(e + 3 - d) : n;
    }
    if (*p == '!' || *p == '?') {
        e = strchr(p, '>');
        return e ? (size_t)(e + 1 - d) : n;
    }
    if (*p == '/') p++;
    if (!isalpha((unsigned char)*p)) return 0;
    char q = 0;
    for (; *p; p++) {
        if (q) {
            if (*p == q) q = 0;
        } else if (*p == '"' || *p == '\'') {
            if (p[-1] == '=' || is_ws(p[-1])) q = *p;
        } else if (*p == '>') {
            return (size_t)(p + 1 - d);
        }
    }
    return n;
}

/* 1 when the space-separated list v[0, n) holds word w (any case). */
static int has_word(const char *v, size_t n, const char *w) {
    size_t wl = strlen(w);
    for (size_t i = 0; i + wl <= n; i++)
        if ((i == 0 || is_ws(v[i - 1])) && (i + wl == n || is_ws(v[i + wl])) && !strncasecmp(v + i, w, wl))
            return 1;
    return 0;
}

/* The tag d[a, b) ('<' to '>'). */
static tag_info read_tag(const char *d, size_t a, size_t b) {
    tag_info t = {{0}, 0, 0, 0};
    size_t i = a + 1;
    if (d[i] == '/') {
        t.closing = 1;
        i++;
    }
    size_t s = i;
    while (i < b && !is_ws(d[i]) && d[i] != '/' && d[i] != '>') i++;
    if (i - s <= NAME_MAX_LEN)
        for (size_t k = s; k < i; k++) t.name[k - s] = (char)tolower((unsigned char)d[k]);
    t.self_closed = b - a >= 3 && d[b - 1] == '>' && d[b - 2] == '/';
    while (i < b && !t.closing) {   /* the attributes: name[=value] */
        while (i < b && (is_ws(d[i]) || d[i] == '/')) i++;
        size_t ns = i;
        while (i < b && !is_ws(d[i]) && d[i] != '=' && d[i] != '>' && d[i] != '/') i++;
        size_t nl = i - ns;
        if (!nl) break;
        while (i < b && is_ws(d[i])) i++;
        const char *v = "";
        size_t vl = 0;
        if (i < b && d[i] == '=') {
            i++;
            while (i < b && is_ws(d[i])) i++;
            if (i < b && (d[i] == '"' || d[i] == '\'')) {
                char q = d[i++];
                v = d + i;
                while (i < b && d[i] != q) i++;
                vl = (size_t)(d + i - v);
                if (i < b) i++;
            } else {
                v = d + i;
                while (i < b && !is_ws(d[i]) && d[i] != '>') i++;
                vl = (size_t)(d + i - v);
            }
        }
        if (nl == 9 && !strncasecmp(d + ns, "translate", 9) && vl == 2 && !strncasecmp(v, "no", 2))
            t.no_translate = 1;
        if (nl == 5 && !strncasecmp(d + ns, "class", 5) && has_word(v, vl, "notranslate"))
            t.no_translate = 1;
    }
    return t;
}

static int name_in(const char *name, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(name, *list)) return 1;
    return 0;
}

static const char *const VOID_TAGS[] = {"area", "base", "br", "col", "embed", "hr", "img", "input",
                                        "link", "meta", "param", "source", "track", "wbr", NULL};
static const char *const RAW_TAGS[] = {"script", "style", NULL};
static const char *const KEEP_TAGS[] = {"code", "kbd", "samp", "var", "pre", NULL};
/* XML (srv_html_split_xml): no void or raw elements; WordprocessingML's
 * field codes (PAGE, HYPERLINK "...", TOC \o) are instructions, not text. */
static const char *const NO_TAGS[] = {NULL};
static const char *const XML_KEEP_TAGS[] = {"w:instrtext", NULL};

/* Where the raw text of element name ends: its end tag ("</name", any
 * case) at or after i, else n. */
static size_t raw_end(const char *d, size_t i, size_t n, const char *name) {
    size_t l = strlen(name);
    for (; i + 2 + l <= n; i++)
        if (d[i] == '<' && d[i + 1] == '/' && !strncasecmp(d + i + 2, name, l)) return i;
    return n;
}

/* ---- the public calls ---- */

static int split(const char *doc, int max_text, int xml, srv_html *h) {
    memset(h, 0, sizeof *h);
    h->doc = doc;
    h->xml = xml;
    const char *const *void_tags = xml ? NO_TAGS : VOID_TAGS, *const *raw_tags = xml ? NO_TAGS : RAW_TAGS;
    const char *const *keep_tags = xml ? XML_KEEP_TAGS : KEEP_TAGS;
    size_t n = strlen(doc), i = 0, text_from = 0;
    char skip[NAME_MAX_LEN + 1] = "";   /* the element whose inside is kept */
    int depth = 0, st;
    while (i < n) {
        size_t e = doc[i] == '<' ? markup_end(doc, i, n) : 0;
        if (!e) {
            i++;
            continue;
        }
        if ((st = add_text(h, text_from, i, skip[0] != 0, max_text))) return st;
        if (add_markup(h, i, e)) return -1;
        text_from = e;
        tag_info t = doc[i + 1] == '!' || doc[i + 1] == '?' ? (tag_info){{0}, 1, 0, 0}
                                                            : read_tag(doc, i, e);
        int opens = !t.closing && !t.self_closed && t.name[0] && !name_in(t.name, void_tags);
        if (skip[0] && !strcmp(t.name, skip)) {
            depth += t.closing ? -1 : opens;
            if (depth <= 0) skip[0] = 0;
        } else if (!skip[0] && opens && (t.no_translate || name_in(t.name, keep_tags))) {
            strcpy(skip, t.name);
            depth = 1;
        }
        if (opens && name_in(t.name, raw_tags)) {   /* up to its end tag: markup */
            size_t r = raw_end(doc, e, n, t.name);
            if (add_markup(h, e, r)) return -1;
            text_from = e = r;
        }
        i = e;
    }
    return add_text(h, text_from, n, skip[0] != 0, max_text);
}

int srv_html_split(const char *doc, int max_text, srv_html *h) { return split(doc, max_text, 0, h); }
int srv_html_split_xml(const char *doc, int max_text, srv_html *h) { return split(doc, max_text, 1, h); }

/* 1 when s[0, n) names one of XML's five predefined entities. */
static int xml_entity(const char *s, size_t n) {
    static const char *const five[] = {"amp", "lt", "gt", "quot", "apos"};
    for (int i = 0; i < 5; i++)
        if (strlen(five[i]) == n && !strncmp(s, five[i], n)) return 1;
    return 0;
}

/* Appends s[0, n) to the buffer *b (*len used of *cap): 0, or -1. */
static int put(char **b, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *len + n + 1) c *= 2;
        char *q = realloc(*b, c);
        if (!q) return -1;
        *b = q;
        *cap = c;
    }
    memcpy(*b + *len, s, n);
    *len += n;
    (*b)[*len] = 0;
    return 0;
}

char *srv_html_join(const srv_html *h, const char *const *out) {
    char *b = NULL;
    size_t len = 0, cap = 0;
    int bad = put(&b, &len, &cap, "", 0);
    for (int k = 0; k < h->n_part && !bad; k++) {
        const srv_html_part *p = &h->part[k];
        const char *s = h->doc + p->off;
        if (p->text < 0) {
            bad = put(&b, &len, &cap, s, p->len);
            continue;
        }
        bad = put(&b, &len, &cap, s, p->lead);
        for (const char *t = out[p->text]; *t && !bad; t++) {
            size_t ref = *t == '&' ? name_len(t + 1, strlen(t + 1)) : 0;
            if (ref && t[1 + ref] == ';' && (!h->xml || xml_entity(t + 1, ref))) {
                /* "&name;" as the model wrote it: a reference (XML knows five) */
                bad = put(&b, &len, &cap, t, ref + 2);
                t += ref + 1;
                continue;
            }
            const char *esc = *t == '&' ? "&amp;" : *t == '<' ? "&lt;" : *t == '>' ? "&gt;" : NULL;
            bad = esc ? put(&b, &len, &cap, esc, strlen(esc)) : put(&b, &len, &cap, t, 1);
        }
        if (!bad) bad = put(&b, &len, &cap, s + p->len - p->trail, p->trail);
    }
    if (bad) {
        free(b);
        return NULL;
    }
    return b;
}

void srv_html_free(srv_html *h) {
    for (int i = 0; i < h->n_text; i++) free(h->text[i]);
    free(h->text);
    free(h->part);
    memset(h, 0, sizeof *h);
}
