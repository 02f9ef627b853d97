/* moses_norm.c - sacremoses' punctuation normaliser (moses.h): its
 * substitutions as steps over the whole text, each a pass that rewrites
 * every match left to right without overlap, as Python's re.sub does.
 * Literal patterns are matched as bytes (UTF-8 finds a whole character
 * only at a character's start); the few with classes (\d, \s, [a-zA-Z],
 * [^<]) have a pass of their own. */
#include "tok/moses_internal.h"
#include "tok/unicode_tables.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

#define NBSP "\xc2\xa0"

static int ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

enum { LIT, SPACES, PAREN_PUNCT, DIGIT_PERCENT, LETTER_QUOTE, QUOTE_RUN_EN, DOTS_QUOTE, DIGIT_NBSP };

typedef struct {
    int kind;
    const char *a, *b;   /* LIT: a -> b; LETTER_QUOTE: the quote a; DIGIT_NBSP: the separator a */
} step;

/* One step over in[0 .. n) into out. */
static void run_step(const step *st, const char *in, size_t n, moses_buf *out) {
    size_t la = st->a ? strlen(st->a) : 0;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        const char *s = in + i;
        size_t left = n - i;
        switch (st->kind) {
        case LIT:   /* a -> b */
            if (left >= la && !memcmp(s, st->a, la)) {
                mb_put(out, st->b, strlen(st->b));
                i += la;
                continue;
            }
            break;
        case SPACES:   /* " +" -> " " */
            if (*s == ' ') {
                mb_put(out, " ", 1);
                while (i < n && in[i] == ' ') i++;
                continue;
            }
            break;
        case PAREN_PUNCT:   /* "\) ([.!:?;,])" -> ")\1" */
            if (left >= 3 && s[0] == ')' && s[1] == ' ' && strchr(".!:?;,", s[2]) && s[2]) {
                mb_put(out, s, 1);
                mb_put(out, s + 2, 1);
                i += 3;
                continue;
            }
            break;
        case DIGIT_PERCENT: {   /* "(\d) %" -> "\1%" (by characters) */
            int k = mb_cp(in, n, i, &cp);
            if (uc_is_decimal(cp) && left >= (size_t)k + 2 && s[k] == ' ' && s[k + 1] == '%') {
                mb_put(out, s, (size_t)k);
                mb_put(out, "%", 1);
                i += (size_t)k + 2;
            } else {
                mb_put(out, s, (size_t)k);
                i += (size_t)k;
            }
            continue;
        }
        case LETTER_QUOTE:   /* "([a-zA-Z])Q([a-zA-Z])" -> "\1'\2" */
            if (left >= la + 2 && ascii_letter(s[0]) && !memcmp(s + 1, st->a, la) && ascii_letter(s[1 + la])) {
                mb_put(out, s, 1);
                mb_put(out, "'", 1);
                mb_put(out, s + 1 + la, 1);
                i += la + 2;
                continue;
            }
            break;
        case QUOTE_RUN_EN:   /* '"([,.]+)' -> '\1"' */
            if (left >= 2 && s[0] == '"' && (s[1] == ',' || s[1] == '.')) {
                size_t e = 1;
                while (e < left && (s[e] == ',' || s[e] == '.')) e++;
                mb_put(out, s + 1, e - 1);
                mb_put(out, "\"", 1);
                i += e;
                continue;
            }
            break;
        case DOTS_QUOTE:   /* '(\.+)"(\s*[^<])' -> '"\1\2' */
            if (*s == '.') {
                size_t d = 0;
                while (d < left && s[d] == '.') d++;
                if (d < left && s[d] == '"') {
                    size_t k = d + 1, w = k;   /* \s* greedy, then [^<]: one more character */
                    while (k < left) {
                        int m = mb_cp(in, n, i + k, &cp);
                        if (!uc_is_py_space(cp)) break;
                        k += (size_t)m;
                    }
                    size_t end = 0;
                    if (k < left && s[k] != '<') end = k + (size_t)mb_cp(in, n, i + k, &cp);
                    else if (k > w) end = k;   /* the last space is the [^<] */
                    if (end) {
                        mb_put(out, "\"", 1);
                        mb_put(out, s, d);
                        mb_put(out, s + d + 1, end - d - 1);
                        i += end;
                        continue;
                    }
                }
                mb_put(out, s, d);   /* no match from any of these dots */
                i += d;
                continue;
            }
            break;
        case DIGIT_NBSP: {   /* "(\d)\u00A0(\d)" -> "\1X\2" */
            int k = mb_cp(in, n, i, &cp);
            if (uc_is_decimal(cp) && left > (size_t)k + 2 && !memcmp(s + k, NBSP, 2)) {
                uint32_t c2;
                int k2 = mb_cp(in, n, i + (size_t)k + 2, &c2);
                if (uc_is_decimal(c2)) {
                    mb_put(out, s, (size_t)k);
                    mb_put(out, st->a, la);
                    mb_put(out, s + k + 2, (size_t)k2);
                    i += (size_t)k + 2 + (size_t)k2;
                    continue;
                }
            }
            mb_put(out, s, (size_t)k);
            i += (size_t)k;
            continue;
        }
        }
        mb_put(out, s, 1);
        i++;
    }
}

static const step EXTRA_WHITESPACE[] = {
    {LIT, "\r", ""}, {LIT, "(", " ("}, {LIT, ")", ") "}, {SPACES, NULL, NULL},
    {PAREN_PUNCT, NULL, NULL}, {LIT, "( ", "("}, {LIT, " )", ")"}, {DIGIT_PERCENT, NULL, NULL},
    {LIT, " :", ":"}, {LIT, " ;", ";"},
    /* Penn: */
    {LIT, "`", "'"}, {LIT, "''", " \" "},
    /* Unicode punctuation: */
    {LIT, "\xe2\x80\x9e", "\""}, {LIT, "\xe2\x80\x9c", "\""}, {LIT, "\xe2\x80\x9d", "\""},   /* „ “ ” */
    {LIT, "\xe2\x80\x93", "-"}, {LIT, "\xe2\x80\x94", " - "}, {SPACES, NULL, NULL},         /* – — */
    {LIT, "\xc2\xb4", "'"},                                                                  /* ´ */
    {LETTER_QUOTE, "\xe2\x80\x98", NULL}, {LETTER_QUOTE, "\xe2\x80\x99", NULL},              /* ‘ ’ */
    {LIT, "\xe2\x80\x98", "'"}, {LIT, "\xe2\x80\x9a", "'"}, {LIT, "\xe2\x80\x99", "'"},      /* ‘ ‚ ’ */
    {LIT, "''", "\""}, {LIT, "\xc2\xb4\xc2\xb4", "\""}, {LIT, "\xe2\x80\xa6", "..."},       /* ´´ … */
    /* French quotes: */
    {LIT, NBSP "\xc2\xab" NBSP, "\""}, {LIT, "\xc2\xab" NBSP, "\""}, {LIT, "\xc2\xab", "\""},
    {LIT, NBSP "\xc2\xbb" NBSP, "\""}, {LIT, NBSP "\xc2\xbb", "\""}, {LIT, "\xc2\xbb", "\""},
    /* pseudo-spaces: */
    {LIT, NBSP "%", "%"}, {LIT, "n\xc2\xba" NBSP, "n\xc2\xba "}, {LIT, NBSP ":", ":"},
    {LIT, NBSP "\xc2\xba" "C", " \xc2\xba" "C"}, {LIT, NBSP "cm", " cm"}, {LIT, NBSP "?", "?"},
    {LIT, NBSP "!", "!"}, {LIT, NBSP ";", ";"}, {LIT, "," NBSP, ", "}, {SPACES, NULL, NULL},
};

static int lang_in(const char *lang, const char *const *set, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(lang, set[i])) return 1;
    return 0;
}

encdec_status moses_normalize(const char *lang, const char *text, size_t n, char **out, size_t *out_n) {
    *out = NULL;
    if (out_n) *out_n = 0;
    if (!lang || (!text && n)) return ed_fail(ENCDEC_ERR_ARG, "moses_normalize: NULL language or text");
    encdec_status st = moses_check_utf8(text, n);
    if (st) return st;
    step steps[sizeof EXTRA_WHITESPACE / sizeof *EXTRA_WHITESPACE + 3];
    int ns = (int)(sizeof EXTRA_WHITESPACE / sizeof *EXTRA_WHITESPACE);
    memcpy(steps, EXTRA_WHITESPACE, sizeof EXTRA_WHITESPACE);
    static const char *const quote_before[] = {"de", "es", "fr"};
    static const char *const comma_digits[] = {"de", "es", "cz", "cs", "fr"};
    if (!strcmp(lang, "en")) steps[ns++] = (step){QUOTE_RUN_EN, NULL, NULL};
    else if (lang_in(lang, quote_before, 3)) {
        steps[ns++] = (step){LIT, ",\"", "\","};
        steps[ns++] = (step){DOTS_QUOTE, NULL, NULL};
    }
    steps[ns++] = (step){DIGIT_NBSP, lang_in(lang, comma_digits, 5) ? "," : ".", NULL};

    moses_buf a = {0}, b = {0};
    mb_put(&a, "", 0);
    mb_put(&a, text, n);
    for (int i = 0; i < ns && !a.oom && !b.oom; i++) {
        b.n = 0;
        mb_put(&b, "", 0);
        run_step(&steps[i], a.p, a.n, &b);
        moses_buf t = a;
        a = b, b = t;
    }
    int oom = a.oom || b.oom;
    free(b.p);
    if (oom) {
        free(a.p);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: normalising text");
    }
    size_t s, e;
    moses_strip_bounds(a.p, a.n, &s, &e);
    memmove(a.p, a.p + s, e - s);
    a.p[e - s] = 0;
    *out = a.p;
    if (out_n) *out_n = e - s;
    return ENCDEC_OK;
}
