/* err.h - named errors with a per-thread detail message.
 *
 *   if (fd < 0) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
 *   ...  encdec_last_error() then returns "model.bin: No such file or directory".
 *
 * The message lives in thread-local storage, so sessions on different threads
 * never see each other's errors. Library code never prints and never exits.
 */
#ifndef ED_ERR_H
#define ED_ERR_H

#include "encdec.h"

/* Records the formatted message for this thread and returns st. */
encdec_status ed_fail(encdec_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefixes the current message with "prefix: " (adds context on the way up). */
void ed_err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Clears the message; public entry points call it on entry. */
void ed_err_clear(void);

const char *ed_err_msg(void);

#endif
