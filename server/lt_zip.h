/* lt_zip.h - the ZIP containers of office documents and e-books
 * (lt_doc.h): their entries read, and the archive written again with some
 * entries' contents replaced, every other entry as it was (its name, order,
 * compression method and time). libzip does the format. No I/O beyond
 * memory; tests and the fuzz harness drive this through lt_doc.h.
 */
#ifndef SRV_LT_ZIP_H
#define SRV_LT_ZIP_H

#include <stddef.h>

typedef struct srv_zip srv_zip;

/* An archive of data[len] (borrowed: it must outlive z): 0, or -1 with
 * msg set (not a ZIP archive, encrypted, out of memory). */
int srv_zip_open(const unsigned char *data, size_t len, srv_zip **z, char *msg, size_t n);
int srv_zip_count(const srv_zip *z);
/* Entry i's name (as stored; "" for a nameless one). */
const char *srv_zip_name(const srv_zip *z, int i);
/* Entry i's contents, NUL-terminated (malloc'd) into *out, at most max
 * bytes: 0, or -1 with msg set (larger, unreadable, out of memory). */
int srv_zip_read(srv_zip *z, int i, size_t max, char **out, size_t *len, char *msg, size_t n);
/* The archive again with entry i's contents replaced by repl[i] (a
 * NUL-terminated text; NULL keeps the entry as it was): malloc'd into
 * *out, *len; 0, or -1 with msg set. */
int srv_zip_write(srv_zip *z, const char *const *repl, unsigned char **out, size_t *len, char *msg,
                  size_t n);
void srv_zip_free(srv_zip *z);

#endif
