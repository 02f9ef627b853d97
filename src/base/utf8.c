/* utf8.c - decoding one UTF-8 sequence, strictly; checking a text. */
#include "base/utf8.h"

int ed_utf8_next(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0], lo = 0x80, hi = 0xbf;
    int need;
    uint32_t v;
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xc2 && c <= 0xdf) { need = 1; v = c & 0x1fu; }
    else if (c >= 0xe0 && c <= 0xef) {
        need = 2; v = c & 0x0fu;
        if (c == 0xe0) lo = 0xa0;       /* overlong */
        if (c == 0xed) hi = 0x9f;       /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3; v = c & 0x07u;
        if (c == 0xf0) lo = 0x90;       /* overlong */
        if (c == 0xf4) hi = 0x8f;       /* > U+10FFFF */
    } else return -1;
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= n || s[k] < lo || s[k] > hi) return -k;
        v = (v << 6) | (s[k] & 0x3fu);
        lo = 0x80; hi = 0xbf;
    }
    *cp = v;
    return need + 1;
}

size_t ed_utf8_put(char *out, uint32_t cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

size_t ed_utf8_bad_at(const char *s, size_t n) {
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = ed_utf8_next((const uint8_t *)s + i, n - i, &cp);
        if (k <= 0) return i;
        i += (size_t)k;
    }
    return n;
}
