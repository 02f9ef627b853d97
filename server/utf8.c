/* utf8.c - the server's UTF-8 (utf8.h). */
#include "utf8.h"

#include <string.h>

int srv_utf8_next(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    int len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : (c & 0xF0) == 0xE0 ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || (size_t)len > n) return 0;
    uint32_t v = len == 1 ? c : c & (0x7Fu >> len);
    for (int k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80) return 0;
        v = v << 6 | (p[k] & 0x3F);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)))
        return 0;
    *cp = v;
    return len;
}

size_t srv_utf8_put(char *out, uint32_t c) {
    unsigned char *o = (unsigned char *)out;
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | c >> 6);
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | c >> 12);
        o[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | c >> 18);
    o[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

size_t srv_utf8_bad(const char *s) {
    size_t n = strlen(s);
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = srv_utf8_next(s + i, n - i, &cp);
        if (!k) return i;
        i += (size_t)k;
    }
    return (size_t)-1;
}

void srv_utf8_clean(char *s) {
    size_t n = strlen(s), i = 0, w = 0;
    uint32_t cp;
    while (i < n) {
        int k = srv_utf8_next(s + i, n - i, &cp);
        if (k) {
            memmove(s + w, s + i, (size_t)k);
            w += (size_t)k;
            i += (size_t)k;
            continue;
        }
        i++;   /* the bad byte, and the continuation bytes after it */
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
    }
    s[w] = 0;
}
