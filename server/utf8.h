/* utf8.h - the server's UTF-8: well-formed sequences (no overlong forms,
 * no surrogates, nothing past U+10FFFF), as a client's text must be before
 * it goes back out in a JSON body. */
#ifndef SRV_UTF8_H
#define SRV_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The well-formed sequence at s[0, n) (n >= 1): its length, *cp its code
 * point; 0 when s starts none. */
int srv_utf8_next(const char *s, size_t n, uint32_t *cp);
/* Code point c (<= U+10FFFF) as UTF-8 at out (room for 4): its length. */
size_t srv_utf8_put(char *out, uint32_t c);
/* The offset of s's first byte that starts no well-formed sequence, or
 * (size_t)-1 when all of s is UTF-8. */
size_t srv_utf8_bad(const char *s);
/* s as valid UTF-8, in place: a byte that starts no well-formed sequence
 * goes, with the continuation bytes after it (a value cut by a printf
 * precision loses its partial character). */
void srv_utf8_clean(char *s);

#endif
