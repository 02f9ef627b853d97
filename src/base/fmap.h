/* fmap.h - read-only memory mapping of a whole file.
 *
 *   ed_fmap f;  if (ed_fmap_open(&f, path)) return ...;   use f.data[0 .. f.size);
 *   ed_fmap_close(&f);
 *
 * An empty file maps to data == NULL, size == 0 (not an error here: callers
 * decide). Errors name the path.
 */
#ifndef ED_FMAP_H
#define ED_FMAP_H

#include "encdec.h"
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const uint8_t *data;
    size_t size;
} ed_fmap;

encdec_status ed_fmap_open(ed_fmap *f, const char *path);
void ed_fmap_close(ed_fmap *f);

/* Reads a whole (small) file into a NUL-terminated malloc'd buffer. */
encdec_status ed_read_file(const char *path, char **out, size_t *len);

int ed_is_dir(const char *path);
int ed_is_file(const char *path);
/* Joins dir and name into buf; returns buf. */
char *ed_path_join(char *buf, size_t cap, const char *dir, const char *name);
/* The last path component (borrowed from path). */
const char *ed_basename(const char *path);

#endif
