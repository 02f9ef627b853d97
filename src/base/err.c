/* err.c - status names and the per-thread error message. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char g_msg[1024];

encdec_status ed_fail(encdec_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    return st;
}

void ed_err_prefix(const char *fmt, ...) {
    char buf[sizeof g_msg];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t h = (size_t)n < sizeof buf - 3 ? (size_t)n : sizeof buf - 3;
    memcpy(buf + h, ": ", 2);
    size_t rest = sizeof buf - h - 2;
    size_t old = strnlen(g_msg, rest - 1);
    memcpy(buf + h + 2, g_msg, old);
    buf[h + 2 + old] = 0;
    memcpy(g_msg, buf, sizeof g_msg);
}

void ed_err_clear(void) { g_msg[0] = 0; }

const char *ed_err_msg(void) { return g_msg; }

const char *encdec_last_error(void) { return g_msg; }

const char *encdec_status_str(encdec_status st) {
    switch (st) {
    case ENCDEC_OK: return "ok";
    case ENCDEC_ERR_ARG: return "invalid argument";
    case ENCDEC_ERR_NOMEM: return "out of memory";
    case ENCDEC_ERR_IO: return "cannot read file";
    case ENCDEC_ERR_NO_MODEL: return "no model found";
    case ENCDEC_ERR_FORMAT: return "malformed file";
    case ENCDEC_ERR_DTYPE: return "unsupported dtype";
    case ENCDEC_ERR_SHAPE: return "tensor shape mismatch";
    case ENCDEC_ERR_CONFIG: return "bad model configuration";
    case ENCDEC_ERR_AUDIO: return "bad audio";
    case ENCDEC_ERR_TOKENIZER: return "bad tokenizer";
    case ENCDEC_ERR_THREADS: return "cannot start threads";
    case ENCDEC_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}
