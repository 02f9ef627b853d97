/* words.c - tokens to words, punctuation merged (see asr_internal.h). */
#include "asr/asr_internal.h"

#include <stdlib.h>
#include <string.h>

/* Python's string.punctuation: a subword that is a piece of it starts a word. */
static const char ASCII_PUNCT[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/* Characters of UTF-8 text s; fffd[i] (room for strlen(s)) marks U+FFFD. */
static int chars(const char *s, char *fffd) {
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; n++) {
        int len = *p < 0x80 ? 1 : *p < 0xE0 ? 2 : *p < 0xF0 ? 3 : 4;
        if (fffd) fffd[n] = len == 3 && p[0] == 0xEF && p[1] == 0xBF && p[2] == 0xBD;
        for (int k = 0; k < len && *p; k++) p++;
    }
    return n;
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* s stripped of ASCII white space is a substring of set (Python's `in`;
 * the empty string is in every set). */
static int stripped_in(const char *s, const char *set) {
    size_t a = 0, b = strlen(s);
    while (a < b && is_space(s[a])) a++;
    while (b > a && is_space(s[b - 1])) b--;
    char buf[64];
    if (b - a >= sizeof buf) return 0;
    memcpy(buf, s + a, b - a);
    buf[b - a] = 0;
    return strstr(set, buf) != NULL;
}

static char *concat(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb + 1);
    return s;
}

/* Subwords: the shortest runs of tokens that decode to whole characters,
 * or whose undecodable bytes stay undecodable in the whole text. */
static int split_unicode(const bpe_tok *tok, const int *ids, int n, asr_wtiming *out) {
    char *full = bpe_decode(tok, ids, n, 0);
    if (!full) return -1;
    char *fffd = malloc(strlen(full) + 1), *cur_fffd = NULL;
    int n_full = fffd ? chars(full, fffd) : 0, n_out = 0, offset = 0, start = 0;
    for (int j = 0; fffd && j < n; j++) {
        char *cur = bpe_decode(tok, ids + start, j - start + 1, 0);
        cur_fffd = cur ? realloc(cur_fffd, strlen(cur) + 1) : NULL;
        if (!cur || !cur_fffd) {
            free(cur);
            n_out = -1;
            break;
        }
        int nc = chars(cur, cur_fffd), bad = -1;
        for (int i = 0; i < nc && bad < 0; i++)
            if (cur_fffd[i]) bad = i;
        if (bad < 0 || (offset + bad < n_full && fffd[offset + bad])) {
            out[n_out++] = (asr_wtiming){cur, j - start + 1, 0, 0, 0};
            offset += nc;
            start = j + 1;
        } else {
            free(cur);   /* a character continues in the next token */
        }
    }
    if (!fffd) n_out = -1;
    free(cur_fffd);
    free(fffd);
    free(full);
    return n_out;
}

int asr_split_words(const bpe_tok *tok, const int *ids, int n, int eot, int by_unicode,
                    asr_wtiming *out) {
    int ns = split_unicode(tok, ids, n, out);
    if (ns < 0 || by_unicode) return ns;
    int nw = 0, at = 0;
    for (int i = 0; i < ns; i++) {
        const char *s = out[i].text;
        int special = ids[at] >= eot;
        at += out[i].n_tok;
        if (special || s[0] == ' ' || stripped_in(s, ASCII_PUNCT) || nw == 0) {
            out[nw++] = out[i];
            continue;
        }
        char *joined = concat(out[nw - 1].text, s);   /* continues the previous word */
        if (!joined) {
            for (int k = i; k < ns; k++) free(out[k].text);
            return -1;
        }
        free(out[nw - 1].text);
        free(out[i].text);
        out[nw - 1].text = joined;
        out[nw - 1].n_tok += out[i].n_tok;
    }
    return nw;
}

static int ends_with_space(const char *s) {
    size_t n = strlen(s);
    return n > 0 && s[n - 1] == ' ';
}

/* w[into] gets a + b (texts and token counts); w[from] is emptied. */
static int join(asr_wtiming *w, int into, int from, int from_first) {
    char *t = from_first ? concat(w[from].text, w[into].text) : concat(w[into].text, w[from].text);
    if (!t) return -1;
    free(w[into].text);
    w[into].text = t;
    w[into].n_tok += w[from].n_tok;
    w[from].text[0] = 0;
    w[from].n_tok = 0;
    return 0;
}

int asr_merge_punctuations(asr_wtiming *w, int n, const char *prepend, const char *append) {
    for (int i = n - 2, j = n - 1; i >= 0; i--) {   /* opening marks join the next word */
        if (w[i].text[0] == ' ' && stripped_in(w[i].text, prepend)) {
            if (join(w, j, i, 1)) return -1;
        } else {
            j = i;
        }
    }
    for (int i = 0, j = 1; j < n; j++) {   /* closing marks join the previous word */
        if (!ends_with_space(w[i].text) && strstr(append, w[j].text)) {
            if (join(w, i, j, 0)) return -1;
        } else {
            i = j;
        }
    }
    return 0;
}
