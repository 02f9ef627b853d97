/* moses_detok.c - sacremoses' MosesDetokenizer.detokenize (moses.h): the
 * text padded, " @-@ " joined, the XML escapes undone, then token by token
 * a space before it or not, by the first rule that holds (in sacremoses'
 * order), and the spaces merged. The detokenizer's classes are the plain
 * Perl lists (IsAlpha, IsSc: no Indic signs); CJK is sacremoses' own test
 * (is_cjk: strictly inside one of its ranges). */
#include "tok/moses_internal.h"
#include "tok/unicode_tables.h"
#include "base/err.h"

#include <stdio.h>

/* sacremoses' CJKChars ranges; is_cjk is true strictly between the ends of
 * the first range whose end lies above the character. */
static const uint32_t CJK_RANGES[][2] = {
    {4352, 4607},     {11904, 42191},   {43072, 43135},   {44032, 55215},
    {63744, 64255},   {65072, 65103},   {65381, 65500},   {94208, 101119},
    {110592, 110895}, {110960, 111359}, {131072, 196607}};

static int is_cjk(uint32_t cp) {
    for (size_t i = 0; i < sizeof CJK_RANGES / sizeof *CJK_RANGES; i++)
        if (cp < CJK_RANGES[i][1]) return cp > CJK_RANGES[i][0];
    return 0;
}

typedef struct {
    const moses_data *d;
    const char *lang;
    char **tok;    /* NUL-terminated tokens */
    int n;
    char **qkey;   /* quote_counts: key -> count */
    int *qcount, nq;
    moses_buf out;
    const char *prepend;
} detok;

static uint32_t first_cp(const char *s) {
    uint32_t cp = 0;
    ed_utf8_next((const uint8_t *)s, strlen(s), &cp);
    return cp;
}

static uint32_t last_cp(const char *s) {
    size_t n = strlen(s), i = n - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    uint32_t cp = 0;
    ed_utf8_next((const uint8_t *)s + i, n - i, &cp);
    return cp;
}

/* Whether s is not empty and each of its characters is in class c (when
 * given) or one of the characters of set (UTF-8, when given). */
static int all_of(const char *s, const moses_class *c, const char *set) {
    uint32_t cp;
    size_t n = strlen(s);
    if (!n) return 0;
    for (size_t i = 0; i < n;) {
        int k = ed_utf8_next((const uint8_t *)s + i, n - i, &cp);
        int in = c && moses_in(c, cp);
        if (!in && set) {
            char ch[5] = {0};
            memcpy(ch, s + i, (size_t)k);
            in = strstr(set, ch) != NULL;
        }
        if (!in) return 0;
        i += (size_t)k;
    }
    return 1;
}

static int all_digits(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

static int is_alpha(const detok *t, uint32_t cp) { return moses_in(&t->d->cls[MC_ALPHA], cp); }

/* [{IsAlpha}][']$ */
static int elision(const detok *t, const char *s) {
    size_t n = strlen(s);
    if (n < 2 || s[n - 1] != '\'') return 0;
    char *c = strndup(s, n - 1);
    int r = c && *c && is_alpha(t, last_cp(c));
    free(c);
    return r;
}

/* ^(M1)(M2)?(M3)$ over sacremoses' Finnish case and possessive suffixes. */
static int finnish_suffix(const char *s) {
    static const char *const M1[] = {
        "N", "n", "A", "a", "\xc3\x84", "\xc3\xa4", "ssa", "Ssa", "ss\xc3\xa4", "Ss\xc3\xa4", "sta", "st\xc3\xa4",
        "Sta", "St\xc3\xa4", "hun", "Hun", "hyn", "Hyn", "han", "Han", "h\xc3\xa4n", "H\xc3\xa4n", "h\xc3\xb6n",
        "H\xc3\xb6n", "un", "Un", "yn", "Yn", "an", "An", "\xc3\xa4n", "\xc3\x84n", "\xc3\xb6n", "\xc3\x96n",
        "seen", "Seen", "lla", "Lla", "ll\xc3\xa4", "Ll\xc3\xa4", "lta", "Lta", "lt\xc3\xa4", "Lt\xc3\xa4",
        "lle", "Lle", "ksi", "Ksi", "kse", "Kse", "tta", "Tta", "ine", "Ine"};
    static const char *const M2[] = {"", "ni", "si", "mme", "nne", "nsa"};
    static const char *const M3[] = {"ko", "k\xc3\xb6", "han", "h\xc3\xa4n", "pa", "p\xc3\xa4", "kaan",
                                     "k\xc3\xa4\xc3\xa4n", "kin"};
    size_t n = strlen(s);
    for (size_t a = 0; a < sizeof M1 / sizeof *M1; a++) {
        size_t la = strlen(M1[a]);
        if (la > n || memcmp(s, M1[a], la)) continue;
        for (size_t b = 0; b < sizeof M2 / sizeof *M2; b++) {
            size_t lb = strlen(M2[b]);
            if (la + lb > n || memcmp(s + la, M2[b], lb)) continue;
            for (size_t c = 0; c < sizeof M3 / sizeof *M3; c++)
                if (!strcmp(s + la + lb, M3[c])) return 1;
        }
    }
    return 0;
}

static int *quote_count(detok *t, const char *key) {
    for (int i = 0; i < t->nq; i++)
        if (!strcmp(t->qkey[i], key)) return &t->qcount[i];
    char **k = realloc(t->qkey, sizeof *k * (size_t)(t->nq + 1));
    if (k) t->qkey = k;
    int *c = k ? realloc(t->qcount, sizeof *c * (size_t)(t->nq + 1)) : NULL;
    if (c) t->qcount = c;
    if (!k || !c || !(t->qkey[t->nq] = strdup(key))) {
        t->out.oom = 1;
        return NULL;
    }
    t->qcount[t->nq] = 0;
    return &t->qcount[t->nq++];
}

static void emit(detok *t, const char *pre, const char *tok, const char *next_prepend) {
    mb_put(&t->out, pre, strlen(pre));
    mb_put(&t->out, tok, strlen(tok));
    t->prepend = next_prepend;
}

static int lang_is(const detok *t, const char *l) { return !strcmp(t->lang, l); }

/* Token i by the first rule that holds; returns how many tokens it took. */
static int place(detok *t, int i) {
    const char *tok = t->tok[i], *pre = t->prepend;
    int n = t->n;
    if (is_cjk(first_cp(tok)) && !lang_is(t, "ko")) {
        emit(t, i > 0 && is_cjk(last_cp(t->tok[i - 1])) ? "" : pre, tok, " ");
    } else if (all_of(tok, &t->d->cls[MC_SC], "([{\xc2\xbf\xc2\xa1")) {   /* currency, ( [ { ¿ ¡ */
        emit(t, pre, tok, "");
    } else if (all_of(tok, NULL, ",.?!:;\\%}])")) {
        if (lang_is(t, "fr") && strlen(tok) == 1 && strchr("?!:;\\%", tok[0])) mb_put(&t->out, " ", 1);
        emit(t, "", tok, " ");
    } else if (lang_is(t, "en") && i > 0 && tok[0] == '\'' && tok[1] && is_alpha(t, first_cp(tok + 1))) {
        emit(t, "", tok, " ");
    } else if (lang_is(t, "cs") && i > 1 && all_digits(t->tok[n - 2]) &&
               (!strcmp(t->tok[n - 1], ".") || !strcmp(t->tok[n - 1], ",")) && all_digits(tok)) {
        emit(t, "", tok, " ");   /* (sacremoses reads the list's last two tokens here) */
    } else if ((lang_is(t, "fr") || lang_is(t, "it") || lang_is(t, "ga")) && i <= n - 2 && elision(t, tok) &&
               is_alpha(t, first_cp(t->tok[i + 1]))) {
        emit(t, pre, tok, "");
    } else if (lang_is(t, "cs") && i <= n - 3 && elision(t, tok) &&
               (!strcmp(t->tok[i + 1], "-") || !strcmp(t->tok[i + 1], "\xe2\x80\x93")) &&
               (!strcasecmp(t->tok[i + 2], "li") || !strncasecmp(t->tok[i + 2], "mail", 4))) {
        emit(t, pre, tok, "");
        emit(t, "", t->tok[i + 1], "");   /* Perl's: the dash joined and skipped */
        return 2;
    } else if (all_of(tok, NULL, "'\"\xe2\x80\x9e\xe2\x80\x9c`")) {   /* ' " „ “ ` */
        const char *key = all_of(tok, NULL, "\xe2\x80\x9e\xe2\x80\x9c\xe2\x80\x9d") ? "\"" : tok;
        int *c = quote_count(t, key);
        if (!c) return 1;
        if (lang_is(t, "cs") && !strcmp(tok, "\xe2\x80\x9e")) *c = 0;
        if (lang_is(t, "cs") && !strcmp(tok, "\xe2\x80\x9c")) *c = 1;
        if (*c % 2 == 0) {
            size_t lp = i > 0 ? strlen(t->tok[i - 1]) : 0;
            if (lang_is(t, "en") && !strcmp(tok, "'") && i > 0 && t->tok[i - 1][lp - 1] == 's') {
                emit(t, "", tok, " ");   /* a possessive: The Jones' house */
            } else {
                emit(t, pre, tok, "");
                (*c)++;
            }
        } else {
            emit(t, "", tok, " ");
            (*c)++;
        }
    } else if (lang_is(t, "fi") && t->tok[i > 0 ? i - 1 : n - 1][strlen(t->tok[i > 0 ? i - 1 : n - 1]) - 1] == ':' &&
               finnish_suffix(tok)) {
        emit(t, pre, tok, " ");
    } else {
        emit(t, pre, tok, " ");
    }
    return 1;
}

static void lit(moses_buf *a, const char *from, const char *to) {
    moses_buf b = {0};
    size_t lf = strlen(from), lt = strlen(to);
    mb_put(&b, "", 0);
    for (size_t i = 0; i < a->n && !a->oom;) {
        if (a->n - i >= lf && !memcmp(a->p + i, from, lf)) {
            mb_put(&b, to, lt);
            i += lf;
        } else mb_put(&b, a->p + i++, 1);
    }
    if (a->oom) b.oom = 1;
    free(a->p);
    *a = b;
}

encdec_status moses_detokenize(const moses_data *d, const char *lang, const char *text, size_t n,
                               char **out) {
    *out = NULL;
    if (!d || !lang || (!text && n)) return ed_fail(ENCDEC_ERR_ARG, "moses_detokenize: NULL data, language or text");
    encdec_status st = moses_check_utf8(text, n);
    if (st) return st;
    if (n && memchr(text, 0, n))   /* tokens are C strings here */
        return ed_fail(ENCDEC_ERR_ARG, "text to detokenize holds a NUL byte");
    moses_buf a = {0};
    mb_put(&a, " ", 1);
    mb_put(&a, text, n);
    mb_put(&a, " ", 1);
    lit(&a, " @-@ ", "-");
    static const char *const UNESCAPE[][2] = {
        {"&bar;", "|"}, {"&#124;", "|"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&bra;", "["}, {"&ket;", "]"},
        {"&quot;", "\""}, {"&apos;", "'"}, {"&#91;", "["}, {"&#93;", "]"}, {"&amp;", "&"}};
    for (size_t i = 0; i < sizeof UNESCAPE / sizeof *UNESCAPE; i++) lit(&a, UNESCAPE[i][0], UNESCAPE[i][1]);
    detok t = {.d = d, .lang = lang, .prepend = " "};
    t.tok = a.oom ? NULL : malloc(sizeof *t.tok * (a.n / 2 + 2));
    if (t.tok) {   /* text.split(): NUL-terminate the tokens in place */
        uint32_t cp;
        for (size_t i = 0; i < a.n;) {
            int k = mb_cp(a.p, a.n, i, &cp);
            if (uc_is_py_space(cp)) {
                memset(a.p + i, 0, (size_t)k);
                i += (size_t)k;
                continue;
            }
            t.tok[t.n++] = a.p + i;
            while (i < a.n && (k = mb_cp(a.p, a.n, i, &cp)) > 0 && !uc_is_py_space(cp)) i += (size_t)k;
        }
    }
    static const char *const QUOTES[] = {"'", "\"", "``", "`", "''"};
    for (int q = 0; q < 5 && t.tok; q++) quote_count(&t, QUOTES[q]);
    mb_put(&t.out, "", 0);
    for (int i = 0; t.tok && i < t.n && !t.out.oom;) i += place(&t, i);
    int oom = a.oom || !t.tok || t.out.oom;
    for (int i = 0; i < t.nq; i++) free(t.qkey[i]);
    free(t.qkey);
    free(t.qcount);
    free(t.tok);
    free(a.p);
    if (!oom) {   /* " {2,}" -> " ", then strip() */
        size_t o = 0;
        for (size_t i = 0; i < t.out.n; i++)
            if (!(t.out.p[i] == ' ' && o && t.out.p[o - 1] == ' ')) t.out.p[o++] = t.out.p[i];
        size_t b, e;
        moses_strip_bounds(t.out.p, o, &b, &e);
        memmove(t.out.p, t.out.p + b, e - b);
        t.out.p[e - b] = 0;
    }
    if (oom) {
        free(t.out.p);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: detokenizing text");
    }
    *out = t.out.p;
    return ENCDEC_OK;
}
