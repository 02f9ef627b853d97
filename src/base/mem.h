/* mem.h - allocation helpers that report failure as ENCDEC_ERR_NOMEM.
 *
 *   float *x = ed_alloc(n * sizeof *x, "encoder scratch");  if (!x) return ENCDEC_ERR_NOMEM;
 *
 * ed_alloc returns 64-byte aligned, uninitialised memory (free with free()),
 * or NULL after recording "out of memory: <what> (<bytes> bytes)". Sizes are
 * computed with ed_mul_ok so that absurd shapes fail instead of wrapping.
 */
#ifndef ED_MEM_H
#define ED_MEM_H

#include <stddef.h>
#include <stdint.h>

void *ed_alloc(size_t bytes, const char *what);
void *ed_calloc(size_t bytes, const char *what);
/* *out = a * b; returns 0 on overflow. */
int ed_mul_ok(size_t a, size_t b, size_t *out);
char *ed_strdup(const char *s);

#endif
