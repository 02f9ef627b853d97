/* lt_files.h - the translated files POST /translate_file leaves for GET
 * /download_file/<name>: kept in memory (nothing written to disk), each
 * for 30 minutes as LibreTranslate keeps them, the oldest dropped first
 * beyond a total of bytes. Thread-safe. */
#ifndef SRV_LT_FILES_H
#define SRV_LT_FILES_H

#include <stddef.h>

typedef struct srv_files srv_files;

#define SRV_FILES_TTL_S 1800
#define SRV_FILES_MAX_BYTES ((size_t)256 << 20)

/* A store of at most max_bytes in all: NULL when out of memory. */
srv_files *srv_files_new(size_t max_bytes);
void srv_files_free(srv_files *f);
/* Keeps data[len] (taken: freed by the store, also on failure) under a new
 * name "<uuid>.<base>" written into name[n] (n >= 40 + strlen(base)): 0; -1
 * out of memory or larger than the store. now_s: the clock in seconds. */
int srv_files_put(srv_files *f, const char *base, unsigned char *data, size_t len, double now_s, char *name,
                  size_t n);
/* A copy of the file called name (malloc'd into *data, *len): 0; -1 none
 * (or expired); -2 out of memory. */
int srv_files_get(srv_files *f, const char *name, double now_s, unsigned char **data, size_t *len);

/* Werkzeug's secure_filename, as LibreTranslate names uploads: ASCII
 * letters, digits, '_', '.' and '-' kept, runs of white space (and path
 * separators) one '_', other characters dropped, '.' and '_' cut from both
 * ends; into out[n]. */
void srv_secure_filename(const char *fn, char *out, size_t n);

#endif
