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
/* ed_alloc of a x b floats (at least one), the product checked for overflow
 * ("<what>: size overflows"). */
float *ed_alloc_floats(size_t a, size_t b, const char *what);
/* Big buffers that come and go (a request's caches): zero-filled pages
 * straight from the system and given back on ed_unmap, so that freeing
 * them lowers the resident size (malloc would keep them in its heap once
 * its mmap threshold has grown past their size). bytes > 0. */
void *ed_map(size_t bytes, const char *what);
void ed_unmap(void *p, size_t bytes);
/* *out = a * b; returns 0 on overflow. */
int ed_mul_ok(size_t a, size_t b, size_t *out);
char *ed_strdup(const char *s);

#endif
