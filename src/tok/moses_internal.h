/* moses_internal.h - what the Moses text files share (private to src/tok):
 * the loaded data (moses_data.c), a growing output buffer and the one
 * character reader. Not for use outside src/tok/. */
#ifndef ED_TOK_MOSES_INTERNAL_H
#define ED_TOK_MOSES_INTERNAL_H

#include "tok/moses.h"
#include "base/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* sacremoses' character classes (classes.tsv, in this order). */
enum { MC_N, MC_ALNUM, MC_ALPHA, MC_LOWER, MC_SC, MC_SO, MC_HAN, MC_HANGUL, MC_HIRAGANA,
       MC_KATAKANA, MC_INDIC, MC_COUNT };

typedef struct {
    uint32_t (*r)[2];   /* sorted, disjoint code point ranges */
    int n;
} moses_class;

struct moses_data {
    moses_class cls[MC_COUNT];
    char **lang_name, **lang_code;   /* langs.tsv */
    int n_langs;
    char **pfx_code, **pfx;          /* prefixes.tsv, in file order */
    int n_pfx;
};

int moses_in(const moses_class *c, uint32_t cp);

/* Output text: NUL-terminated, growing; oom set on failure (then unchanged). */
typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} moses_buf;

static inline void mb_put(moses_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *t = realloc(b->p, cap);
        if (!t) {
            b->oom = 1;
            return;
        }
        b->p = t, b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* The code point at s[i] of valid UTF-8 s[0 .. n) and its length. */
static inline int mb_cp(const char *s, size_t n, size_t i, uint32_t *cp) {
    return ed_utf8_next((const uint8_t *)s + i, n - i, cp);
}

/* ENCDEC_ERR_ARG unless s[0 .. n) is valid UTF-8. */
encdec_status moses_check_utf8(const char *s, size_t n);

/* Python's str.strip() of valid UTF-8 s[0 .. n): the kept bytes [*b, *e). */
void moses_strip_bounds(const char *s, size_t n, size_t *b, size_t *e);

#endif
