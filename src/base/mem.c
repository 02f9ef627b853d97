/* mem.c - aligned allocation with named failures. */
#include "base/mem.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *ed_alloc(size_t bytes, const char *what) {
    void *p = NULL;
    size_t n = (bytes + 63) & ~(size_t)63;
    if (n < bytes || n == 0) n = 64;
    if (posix_memalign(&p, 64, n) != 0) {
        ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s (%zu bytes)", what, bytes);
        return NULL;
    }
    return p;
}

void *ed_calloc(size_t bytes, const char *what) {
    void *p = ed_alloc(bytes, what);
    if (p) memset(p, 0, bytes);
    return p;
}

float *ed_alloc_floats(size_t a, size_t b, const char *what) {
    size_t n;
    if (!ed_mul_ok(a, b, &n) || !ed_mul_ok(n, sizeof(float), &n)) {
        ed_fail(ENCDEC_ERR_NOMEM, "%s: size overflows", what);
        return NULL;
    }
    return ed_alloc(n ? n : sizeof(float), what);
}

void *ed_map(size_t bytes, const char *what) {
    void *p = bytes ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                    : MAP_FAILED;
    if (p == MAP_FAILED) {
        ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s (%zu bytes)", what, bytes);
        return NULL;
    }
    return p;
}

void ed_unmap(void *p, size_t bytes) {
    if (p) munmap(p, bytes);
}

int ed_mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

char *ed_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p) {
        ed_fail(ENCDEC_ERR_NOMEM, "out of memory: string (%zu bytes)", n);
        return NULL;
    }
    memcpy(p, s, n);
    return p;
}
