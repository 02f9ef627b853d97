/* utf8.h - strict UTF-8 decoding shared by the tokenizers.
 *
 *   uint32_t cp;  int k = ed_utf8_next(s, n, &cp);   k > 0: a code point of k bytes
 */
#ifndef ED_UTF8_H
#define ED_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes one well-formed UTF-8 sequence at s[0 .. n) (n >= 1): returns its
 * length and sets *cp; on an ill-formed sequence returns -k, where k >= 1 is
 * the length of its maximal prefix (each such prefix becomes one U+FFFD, as in
 * Unicode's "best practice" and Rust's from_utf8_lossy). */
int ed_utf8_next(const uint8_t *s, size_t n, uint32_t *cp);

/* Writes code point cp (<= U+10FFFF) as UTF-8 to out (room for 4); returns
 * its length. */
size_t ed_utf8_put(char *out, uint32_t cp);

/* The offset of the first ill-formed sequence of s[0 .. n), or n when all
 * of it is well-formed UTF-8. */
size_t ed_utf8_bad_at(const char *s, size_t n);

#endif
