/* moses_tok.c - sacremoses' MosesTokenizer.tokenize (moses.h), its
 * substitutions in order as passes over the whole text, each rewriting
 * every match left to right without overlap, as Python's re.sub does:
 * spaces, padding of what is not alphanumeric, multi-dots kept together,
 * commas outside numbers, the language's apostrophes, nonbreaking prefixes,
 * a final ".'", XML escapes. The classes are sacremoses' own (moses_data.c):
 * its Perl property lists with the Indic viramas and nuktas, and the CJK
 * scripts for zh, ja, ko and cjk where sacremoses adds them (the padding
 * and the prefix rule; its apostrophe rules keep the plain lists). */
#include "tok/moses_internal.h"
#include "tok/unicode_tables.h"
#include "base/err.h"

#include <stdio.h>

enum { APOS_EN, APOS_FR_IT, APOS_OTHER };

struct moses_tok {
    const moses_data *d;
    int apos;
    int han, hangul, kana;   /* CJK scripts counted as letters */
    const char **nbp;        /* the language's prefixes, sorted (strcmp) */
    int n_nbp;
    char **num;              /* those marked #NUMERIC_ONLY#, up to their last space, sorted */
    int n_num;
};

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int has(const char *const *set, int n, const char *s) {
    return n && bsearch(&s, set, (size_t)n, sizeof *set, by_str) != NULL;
}

/* Python's re.search(r"[\s]+(\#NUMERIC_ONLY\#)", w). */
static int numeric_only(const char *w) {
    for (const char *p = strstr(w, "#NUMERIC_ONLY#"); p; p = strstr(p + 1, "#NUMERIC_ONLY#")) {
        if (p == w) continue;
        uint32_t cp = 0;   /* the character before: a space? (decoded backwards) */
        const char *q = p - 1;
        while (q > w && ((unsigned char)*q & 0xC0) == 0x80) q--;
        ed_utf8_next((const uint8_t *)q, (size_t)(p - q), &cp);
        if (uc_is_py_space(cp)) return 1;
    }
    return 0;
}

encdec_status moses_tok_new(const moses_data *d, const char *lang, moses_tok **out) {
    *out = NULL;
    if (!d || !lang) return ed_fail(ENCDEC_ERR_ARG, "moses_tok_new: NULL data or language");
    moses_tok *t = calloc(1, sizeof *t);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: Moses tokenizer");
    t->d = d;
    t->apos = !strcmp(lang, "en") ? APOS_EN : !strcmp(lang, "fr") || !strcmp(lang, "it") ? APOS_FR_IT : APOS_OTHER;
    int cjk = !strcmp(lang, "cjk");
    t->hangul = cjk || !strcmp(lang, "ko");
    t->han = cjk || !strcmp(lang, "zh") || !strcmp(lang, "ja");
    t->kana = cjk || !strcmp(lang, "ja");
    const char *code = "en";   /* sacremoses' fallback for a language it lacks */
    for (int i = 0; i < d->n_langs; i++)
        if (!strcmp(d->lang_name[i], lang)) code = d->lang_code[i];
    t->nbp = malloc(sizeof *t->nbp * (size_t)(d->n_pfx + 1));
    t->num = malloc(sizeof *t->num * (size_t)(d->n_pfx + 1));
    if (!t->nbp || !t->num) {
        moses_tok_free(t);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: Moses tokenizer");
    }
    for (int i = 0; i < d->n_pfx; i++) {
        if (strcmp(d->pfx_code[i], code)) continue;
        t->nbp[t->n_nbp++] = d->pfx[i];
        if (!numeric_only(d->pfx[i])) continue;
        const char *sp = strrchr(d->pfx[i], ' ');   /* rpartition(" ")[0] */
        size_t len = sp ? (size_t)(sp - d->pfx[i]) : 0;
        char *s = malloc(len + 1);
        if (!s) {
            moses_tok_free(t);
            return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: Moses tokenizer");
        }
        memcpy(s, d->pfx[i], len);
        s[len] = 0;
        t->num[t->n_num++] = s;
    }
    qsort(t->nbp, (size_t)t->n_nbp, sizeof *t->nbp, by_str);
    qsort(t->num, (size_t)t->n_num, sizeof *t->num, by_str);
    *out = t;
    return ENCDEC_OK;
}

void moses_tok_free(moses_tok *t) {
    if (!t) return;
    for (int i = 0; i < t->n_num; i++) free(t->num[i]);
    free(t->num);
    free(t->nbp);
    free(t);
}

/* ---- the classes ---- */

static int cjk(const moses_tok *t, uint32_t cp) {
    const moses_class *c = t->d->cls;
    return (t->han && moses_in(&c[MC_HAN], cp)) || (t->hangul && moses_in(&c[MC_HANGUL], cp)) ||
           (t->kana && (moses_in(&c[MC_HIRAGANA], cp) || moses_in(&c[MC_KATAKANA], cp)));
}
/* IsAlnum and IsAlpha as the tokenizer's class attributes have them (with
 * the Indic signs); the instance's add the CJK scripts. */
static int is_alnum_i(const moses_tok *t, uint32_t cp) {
    return moses_in(&t->d->cls[MC_ALNUM], cp) || moses_in(&t->d->cls[MC_INDIC], cp) || cjk(t, cp);
}
static int is_alpha(const moses_tok *t, uint32_t cp) {
    return moses_in(&t->d->cls[MC_ALPHA], cp) || moses_in(&t->d->cls[MC_INDIC], cp);
}
static int is_alpha_i(const moses_tok *t, uint32_t cp) { return is_alpha(t, cp) || cjk(t, cp); }
static int is_n(const moses_tok *t, uint32_t cp) { return moses_in(&t->d->cls[MC_N], cp); }

/* ---- passes: in[0 .. n) -> out ---- */

typedef void (*pass_fn)(const moses_tok *t, const char *in, size_t n, moses_buf *out);

/* \s+ -> " " */
static void dedup_space(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    (void)t;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = mb_cp(in, n, i, &cp);
        if (!uc_is_py_space(cp)) {
            mb_put(out, in + i, (size_t)k);
            i += (size_t)k;
            continue;
        }
        mb_put(out, " ", 1);
        while (i < n && (k = mb_cp(in, n, i, &cp)) > 0 && uc_is_py_space(cp)) i += (size_t)k;
    }
}

/* [\000-\037] -> "" */
static void ascii_junk(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    (void)t;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)in[i] >= 0x20) mb_put(out, in + i, 1);
}

/* Python's str.strip(). */
static void strip(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    (void)t;
    size_t b, e;
    moses_strip_bounds(in, n, &b, &e);
    mb_put(out, in + b, e - b);
}

/* ([^{IsAlnum}\s\.'\`\,\-]) -> " \1 " */
static void pad_not_alnum(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = mb_cp(in, n, i, &cp);
        int pad = !is_alnum_i(t, cp) && !uc_is_py_space(cp) && !(cp < 128 && strchr(".'`,-", (int)cp) && cp);
        if (pad) mb_put(out, " ", 1);
        mb_put(out, in + i, (size_t)k);
        if (pad) mb_put(out, " ", 1);
        i += (size_t)k;
    }
}

/* sacremoses' multi-dots, in one pass: \.([\.]+) -> " DOTMULTI\1", then
 * its loop while "DOTMULTI." remains (DOTMULTI\.([^\.]) -> "DOTDOTMULTI \1";
 * DOTMULTI\. -> "DOTDOTMULTI"), which turns "DOTMULTI" and m dots into m
 * "DOT"s, "DOTMULTI", and a space when a character follows: a run of k
 * dots becomes " " + (k - 1) x "DOT" + "DOTMULTI" (+ " "). The loop takes
 * k passes over the text (a long run of dots: quadratic); this is the
 * same text in one; the text's own "DOTMULTI" before a single dot goes
 * the same way. (It differs only where the text itself spells DOTMULTI
 * right after a run of dots: sacremoses' passes then meet.) */
static void multidots(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    (void)t;
    for (size_t i = 0; i < n;) {
        /* the text's own "DOTMULTI" and one dot, or a run of dots */
        int own = n - i >= 9 && !memcmp(in + i, "DOTMULTI.", 9) && (n - i == 9 || in[i + 9] != '.');
        size_t e = own ? i + 8 : i, d = e;
        while (d < n && in[d] == '.') d++;
        size_t m = own ? 1 : d - e - (d > e);   /* the dots after "DOTMULTI" */
        if (m == 0) {
            mb_put(out, in + i++, 1);
            continue;
        }
        if (!own) mb_put(out, " ", 1);
        for (size_t k = 0; k < m; k++) mb_put(out, "DOT", 3);
        mb_put(out, d < n ? "DOTMULTI " : "DOTMULTI", d < n ? 9 : 8);
        i = d;
    }
}

/* A literal from -> to (every occurrence, left to right). */
static void lit(const char *in, size_t n, const char *from, const char *to, moses_buf *out) {
    size_t lf = strlen(from), lt = strlen(to);
    for (size_t i = 0; i < n;) {
        if (n - i >= lf && !memcmp(in + i, from, lf)) {
            mb_put(out, to, lt);
            i += lf;
        } else mb_put(out, in + i++, 1);
    }
}

/* The character classes of the three-character patterns X ' Y (and X , Y). */
enum { K_ANY, K_N, K_NOT_N, K_ALPHA, K_NOT_ALPHA, K_NOT_ALPHA_N, K_S };

static int of(const moses_tok *t, int k, uint32_t cp) {
    switch (k) {
    case K_N: return is_n(t, cp);
    case K_NOT_N: return !is_n(t, cp);
    case K_ALPHA: return is_alpha(t, cp);
    case K_NOT_ALPHA: return !is_alpha(t, cp);
    case K_NOT_ALPHA_N: return !is_alpha(t, cp) && !is_n(t, cp);
    case K_S: return cp == 's';
    default: return 1;
    }
}

/* (X)c(Y) -> "\1" mid "\2", X and Y of the classes kx, ky (K_ANY with
 * no Y: "(X)c" -> "\1" mid; kx < 0: "c(Y)" -> mid "\2"; end: only at the
 * text's end). */
static void tri(const moses_tok *t, const char *in, size_t n, moses_buf *out, int kx, char c, int ky,
                const char *mid, int end) {
    uint32_t x, y;
    size_t lm = strlen(mid);
    for (size_t i = 0; i < n;) {
        int k = mb_cp(in, n, i, &x);
        if (kx < 0) {   /* c(Y) */
            if (in[i] == c && i + 1 < n) {
                int k2 = mb_cp(in, n, i + 1, &y);
                if (of(t, ky, y)) {
                    mb_put(out, mid, lm);
                    mb_put(out, in + i + 1, (size_t)k2);
                    i += 1 + (size_t)k2;
                    continue;
                }
            }
        } else if (of(t, kx, x) && i + (size_t)k < n && in[i + k] == c) {
            size_t j = i + (size_t)k + 1;
            if (ky == K_ANY && (!end || j == n)) {   /* (X)c */
                mb_put(out, in + i, (size_t)k);
                mb_put(out, mid, lm);
                i = j;
                continue;
            }
            if (ky != K_ANY && j < n) {
                int k2 = mb_cp(in, n, j, &y);
                if (of(t, ky, y)) {
                    mb_put(out, in + i, (size_t)k);
                    mb_put(out, mid, lm);
                    mb_put(out, in + j, (size_t)k2);
                    i = j + (size_t)k2;
                    continue;
                }
            }
        }
        mb_put(out, in + i, (size_t)k);
        i += (size_t)k;
    }
}

static void comma_1(const moses_tok *t, const char *in, size_t n, moses_buf *out) { tri(t, in, n, out, K_NOT_N, ',', K_ANY, " , ", 0); }
static void comma_2(const moses_tok *t, const char *in, size_t n, moses_buf *out) { tri(t, in, n, out, -1, ',', K_NOT_N, " , ", 0); }
static void comma_3(const moses_tok *t, const char *in, size_t n, moses_buf *out) { tri(t, in, n, out, K_N, ',', K_ANY, " , ", 1); }

static void apostrophes(const moses_tok *t, const char *in, size_t n, moses_buf *out);

/* The nonbreaking prefixes: a token "P." keeps its period unless none of
 * sacremoses' reasons holds, else becomes "P .". */
static int islower_first(const moses_tok *t, const char *tok) {
    uint32_t cp;
    if (!*tok) return 0;
    mb_cp(tok, strlen(tok), 0, &cp);
    return moses_in(&t->d->cls[MC_LOWER], cp);
}

static int any_alpha(const moses_tok *t, const char *s, size_t n) {
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        i += (size_t)mb_cp(s, n, i, &cp);
        if (is_alpha_i(t, cp)) return 1;
    }
    return 0;
}

static void nonbreaking(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    char *s = malloc(n + 1);   /* the tokens, NUL-separated */
    const char **tok = malloc(sizeof *tok * (n / 2 + 2));
    if (!s || !tok) {
        out->oom = 1;
        free(s);
        free(tok);
        return;
    }
    int nt = 0;
    uint32_t cp;
    size_t o = 0;
    for (size_t i = 0; i < n;) {   /* str.split(): runs of spaces separate */
        int k = mb_cp(in, n, i, &cp);
        if (uc_is_py_space(cp)) {
            i += (size_t)k;
            continue;
        }
        tok[nt++] = s + o;
        while (i < n && (k = mb_cp(in, n, i, &cp)) > 0 && !uc_is_py_space(cp)) {
            memcpy(s + o, in + i, (size_t)k);
            o += (size_t)k, i += (size_t)k;
        }
        s[o++] = 0;
    }
    for (int i = 0; i < nt; i++) {
        if (i) mb_put(out, " ", 1);
        size_t len = strlen(tok[i]);
        if (len < 2 || tok[i][len - 1] != '.') {
            mb_put(out, tok[i], len);
            continue;
        }
        char *prefix = (char *)tok[i];
        prefix[len - 1] = 0;   /* ^(\S+)\.$ */
        int keep = (memchr(prefix, '.', len - 1) && any_alpha(t, prefix, len - 1)) ||
                   (has(t->nbp, t->n_nbp, prefix) && !has((const char *const *)t->num, t->n_num, prefix)) ||
                   (i != nt - 1 && islower_first(t, tok[i + 1]));
        if (!keep && has((const char *const *)t->num, t->n_num, prefix) && i + 1 < nt &&
            tok[i + 1][0] >= '0' && tok[i + 1][0] <= '9')
            keep = 1;
        mb_put(out, prefix, len - 1);
        mb_put(out, keep ? "." : " .", keep ? 1 : 2);
    }
    free(s);
    free(tok);
}

/* \.' ?$ -> " . ' " */
static void trailing_dot_apostrophe(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    (void)t;
    size_t e = n && in[n - 1] == ' ' ? n - 1 : n;
    if (e >= 2 && in[e - 2] == '.' && in[e - 1] == '\'') {
        mb_put(out, in, e - 2);
        mb_put(out, " . ' ", 5);
    } else mb_put(out, in, n);
}

static void escape_xml(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    (void)t;
    for (size_t i = 0; i < n; i++) {
        const char *e = NULL;
        switch (in[i]) {
        case '&': e = "&amp;"; break;
        case '|': e = "&#124;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '\'': e = "&apos;"; break;
        case '"': e = "&quot;"; break;
        case '[': e = "&#91;"; break;
        case ']': e = "&#93;"; break;
        }
        if (e) mb_put(out, e, strlen(e));
        else mb_put(out, in + i, 1);
    }
}

/* The language's apostrophe rules, in sacremoses' order. */
static void apostrophes(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    moses_buf a = {0};
    if (t->apos == APOS_OTHER) {
        lit(in, n, "'", " ' ", out);
        return;
    }
    static const struct { int x, y; const char *mid; } EN[5] = {
        {K_NOT_ALPHA, K_NOT_ALPHA, " ' "}, {K_NOT_ALPHA_N, K_ALPHA, " ' "},
        {K_ALPHA, K_NOT_ALPHA, " ' "}, {K_ALPHA, K_ALPHA, " '"}, {K_N, K_S, " '"}};
    static const struct { int x, y; const char *mid; } FR[4] = {
        {K_NOT_ALPHA, K_NOT_ALPHA, " ' "}, {K_NOT_ALPHA, K_ALPHA, " ' "},
        {K_ALPHA, K_NOT_ALPHA, " ' "}, {K_ALPHA, K_ALPHA, "' "}};
    int nr = t->apos == APOS_EN ? 5 : 4;
    mb_put(&a, in, n);
    for (int r = 0; r < nr && !a.oom; r++) {
        moses_buf b = {0};
        if (t->apos == APOS_EN) tri(t, a.p, a.n, &b, EN[r].x, '\'', EN[r].y, EN[r].mid, 0);
        else tri(t, a.p, a.n, &b, FR[r].x, '\'', FR[r].y, FR[r].mid, 0);
        free(a.p);
        a = b;
    }
    if (a.oom) out->oom = 1;
    else mb_put(out, a.p ? a.p : "", a.n);
    free(a.p);
}

/* Runs pass f over *a (replaced by its output). */
/* Runs pass f from *a into *b (emptied first), then swaps them: the two
 * buffers serve every pass of a text. */
static void run(const moses_tok *t, pass_fn f, moses_buf *a, moses_buf *b) {
    b->n = 0;
    mb_put(b, "", 0);
    if (!a->oom && !b->oom) f(t, a->p, a->n, b);
    if (a->oom) b->oom = 1;
    moses_buf x = *a;
    *a = *b, *b = x;
}

/* restore_multidots, in one pass: its loop (DOTDOTMULTI -> "DOTMULTI."
 * while any is left, then DOTMULTI -> ".") turns j "DOT"s and "DOTMULTI"
 * into j + 1 dots, wherever they stand. */
static void restore_multidots(const moses_tok *t, const char *in, size_t n, moses_buf *out) {
    (void)t;
    size_t from = 0;   /* in[from, i) not written yet */
    for (size_t i = 0; i + 8 <= n;) {
        if (memcmp(in + i, "DOTMULTI", 8)) {
            i++;
            continue;
        }
        size_t s = i;   /* the "DOT"s right before it */
        while (s >= from + 3 && !memcmp(in + s - 3, "DOT", 3)) s -= 3;
        mb_put(out, in + from, s - from);
        for (size_t k = 0; k <= (i - s) / 3; k++) mb_put(out, ".", 1);
        i += 8;
        from = i;
    }
    mb_put(out, in + from, n - from);
}

encdec_status moses_tokenize(const moses_tok *t, const char *text, size_t n, char **out) {
    *out = NULL;
    if (!t || (!text && n)) return ed_fail(ENCDEC_ERR_ARG, "moses_tokenize: NULL tokenizer or text");
    encdec_status st = moses_check_utf8(text, n);
    if (st) return st;
    moses_buf a = {0};
    mb_put(&a, "", 0);
    mb_put(&a, text, n);
    static const pass_fn passes[] = {dedup_space, ascii_junk, strip, pad_not_alnum, multidots, comma_1,
                                     comma_2, comma_3, apostrophes, nonbreaking, dedup_space, strip,
                                     trailing_dot_apostrophe, restore_multidots, escape_xml};
    moses_buf b = {0};
    for (size_t i = 0; i < sizeof passes / sizeof *passes; i++) run(t, passes[i], &a, &b);
    run(t, dedup_space, &a, &b);   /* text.split(), joined by spaces */
    run(t, strip, &a, &b);
    int oom = a.oom || b.oom;
    free(b.p);
    if (oom) {
        free(a.p);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizing text");
    }
    *out = a.p;
    return ENCDEC_OK;
}
