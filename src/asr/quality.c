/* quality.c - how repetitive a window's text is (see asr_internal.h). */
#include "asr/asr_internal.h"

#include <stdlib.h>
#include <zlib.h>

double asr_compression_ratio(const char *text, size_t len) {
    if (len == 0) return 0.0;
    uLongf cap = compressBound((uLong)len);
    unsigned char stack[4096], *buf = cap <= sizeof stack ? stack : malloc(cap);
    if (!buf) return 0.0;   /* only for texts over 4 KB; a window holds at most 448 tokens */
    double r = 0.0;
    if (compress2(buf, &cap, (const Bytef *)text, (uLong)len, Z_DEFAULT_COMPRESSION) == Z_OK)
        r = (double)len / (double)cap;
    if (buf != stack) free(buf);
    return r;
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

const char *asr_strip(const char *text, size_t *len) {
    size_t a = 0, b = *len;
    while (a < b && is_space((unsigned char)text[a])) a++;
    while (b > a && is_space((unsigned char)text[b - 1])) b--;
    *len = b - a;
    return text + a;
}
