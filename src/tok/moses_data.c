/* moses_data.c - the folder tools/moses_convert.py writes (moses.h):
 * classes.tsv (each class a line of hexadecimal ranges), langs.tsv (name
 * -> code) and prefixes.tsv (code, prefix), each line checked; every
 * error names the file and line. */
#include "tok/moses_internal.h"
#include "base/err.h"
#include "base/fmap.h"
#include "tok/unicode_tables.h"

#include <stdio.h>

static const char *const CLASS_NAMES[MC_COUNT] = {"IsN", "IsAlnum", "IsAlpha", "IsLower", "IsSc",
                                                   "IsSo", "Han", "Hangul", "Hiragana", "Katakana",
                                                   "Indic"};

int moses_in(const moses_class *c, uint32_t cp) {
    int lo = 0, hi = c->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cp < c->r[mid][0]) hi = mid;
        else if (cp > c->r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

encdec_status moses_check_utf8(const char *s, size_t n) {
    size_t bad = ed_utf8_bad_at(s, n);
    return bad < n ? ed_fail(ENCDEC_ERR_ARG, "text is not valid UTF-8 (at byte %zu)", bad) : ENCDEC_OK;
}

void moses_strip_bounds(const char *s, size_t n, size_t *b, size_t *e) {
    uint32_t cp;
    int k;
    *b = 0, *e = 0;
    while (*b < n && (k = mb_cp(s, n, *b, &cp)) > 0 && uc_is_py_space(cp)) *b += (size_t)k;
    for (size_t i = *b; i < n; i += (size_t)k) {
        k = mb_cp(s, n, i, &cp);
        if (!uc_is_py_space(cp)) *e = i + (size_t)k;
    }
    if (*e < *b) *e = *b;
}

/* A file read whole, split at \n into NUL-terminated lines (in place). */
typedef struct {
    char *buf;
    char **line;
    int n;
    char path[4200];
} tsv;

static encdec_status tsv_read(tsv *t, const char *dir, const char *name) {
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s/%s", dir, name);
    size_t n;
    encdec_status st = ed_read_file(t->path, &t->buf, &n);
    if (st) return st;
    if (memchr(t->buf, 0, n)) return ed_fail(ENCDEC_ERR_CONFIG, "%s: a NUL byte: not Moses data", t->path);
    if ((st = moses_check_utf8(t->buf, n))) return ed_fail(ENCDEC_ERR_CONFIG, "%s: not UTF-8", t->path);
    int lines = 1;
    for (size_t i = 0; i < n; i++) lines += t->buf[i] == '\n';
    t->line = malloc(sizeof *t->line * (size_t)lines);
    if (!t->line) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: Moses data");
    for (char *p = t->buf; p < t->buf + n;) {
        char *e = memchr(p, '\n', (size_t)(t->buf + n - p));
        if (!e) e = t->buf + n;   /* ed_read_file leaves room for the NUL */
        *e = 0;
        t->line[t->n++] = p;
        p = e + 1;
    }
    return ENCDEC_OK;
}

static void tsv_free(tsv *t) {
    free(t->buf);
    free(t->line);
}

/* "lo-hi lo-hi ..." (hexadecimal, sorted, disjoint) into c. */
static encdec_status parse_class(moses_class *c, const char *s, const char *path, int line) {
    int n = 1;
    for (const char *p = s; *p; p++) n += *p == ' ';
    c->r = malloc(sizeof *c->r * (size_t)n);
    if (!c->r) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: Moses data");
    c->n = 0;
    for (const char *p = s; *p;) {
        char *e;
        unsigned long lo = strtoul(p, &e, 16), hi;
        if (e == p || *e != '-') goto bad;
        p = e + 1;
        hi = strtoul(p, &e, 16);
        if (e == p || (*e && *e != ' ') || hi < lo || hi > 0x10FFFF ||
            (c->n && lo <= c->r[c->n - 1][1]))
            goto bad;
        c->r[c->n][0] = (uint32_t)lo, c->r[c->n][1] = (uint32_t)hi, c->n++;
        p = *e ? e + 1 : e;
    }
    return ENCDEC_OK;
bad:
    return ed_fail(ENCDEC_ERR_CONFIG, "%s: line %d: not sorted hexadecimal ranges lo-hi", path, line);
}

static encdec_status read_classes(moses_data *d, const char *dir) {
    tsv t;
    encdec_status st = tsv_read(&t, dir, "classes.tsv");
    for (int i = 0; i < t.n && !st; i++) {
        char *tab = strchr(t.line[i], '\t');
        if (!tab) {
            if (!*t.line[i]) continue;
            st = ed_fail(ENCDEC_ERR_CONFIG, "%s: line %d has no tab", t.path, i + 1);
            break;
        }
        *tab = 0;
        for (int c = 0; c < MC_COUNT; c++)
            if (!strcmp(t.line[i], CLASS_NAMES[c]) && !d->cls[c].r) st = parse_class(&d->cls[c], tab + 1, t.path, i + 1);
    }
    for (int c = 0; c < MC_COUNT && !st; c++)
        if (!d->cls[c].r) st = ed_fail(ENCDEC_ERR_CONFIG, "%s: no class %s", t.path, CLASS_NAMES[c]);
    tsv_free(&t);
    return st;
}

/* "A<TAB>B" lines into two arrays of copies (empty lines skipped). */
static encdec_status read_pairs(const char *dir, const char *name, char ***a, char ***b, int *n) {
    tsv t;
    encdec_status st = tsv_read(&t, dir, name);
    if (!st) {
        *a = calloc((size_t)t.n + 1, sizeof **a);
        *b = calloc((size_t)t.n + 1, sizeof **b);
        if (!*a || !*b) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: Moses data");
    }
    for (int i = 0; i < t.n && !st; i++) {
        if (!*t.line[i]) continue;
        char *tab = strchr(t.line[i], '\t');
        if (!tab || tab == t.line[i] || !tab[1] || strchr(tab + 1, '\t')) {
            st = ed_fail(ENCDEC_ERR_CONFIG, "%s: line %d is not two fields separated by a tab", t.path, i + 1);
            break;
        }
        *tab = 0;
        (*a)[*n] = strdup(t.line[i]);
        (*b)[*n] = strdup(tab + 1);
        if (!(*a)[*n] || !(*b)[*n]) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: Moses data");
        (*n)++;
    }
    tsv_free(&t);
    return st;
}

encdec_status moses_data_load(const char *dir, moses_data **out) {
    *out = NULL;
    if (!dir) return ed_fail(ENCDEC_ERR_ARG, "moses_data_load: NULL folder");
    moses_data *d = calloc(1, sizeof *d);
    if (!d) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: Moses data");
    encdec_status st = read_classes(d, dir);
    if (!st) st = read_pairs(dir, "langs.tsv", &d->lang_name, &d->lang_code, &d->n_langs);
    if (!st) st = read_pairs(dir, "prefixes.tsv", &d->pfx_code, &d->pfx, &d->n_pfx);
    if (!st && !d->n_langs) st = ed_fail(ENCDEC_ERR_CONFIG, "%s/langs.tsv: no language", dir);
    if (st) {
        moses_data_free(d);
        return st;
    }
    *out = d;
    return ENCDEC_OK;
}

static void free_strs(char **s, int n) {
    for (int i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

void moses_data_free(moses_data *d) {
    if (!d) return;
    for (int c = 0; c < MC_COUNT; c++) free(d->cls[c].r);
    free_strs(d->lang_name, d->n_langs);
    free_strs(d->lang_code, d->n_langs);
    free_strs(d->pfx_code, d->n_pfx);
    free_strs(d->pfx, d->n_pfx);
    free(d);
}
