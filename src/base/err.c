/* err.c - status names and the per-thread error message. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char g_msg[1024];

/* Keeps m[0, n) as the message; one too long for the buffer (a 100 KB path
 * in it) keeps its start and its end, where the reason is. */
static void store(const char *m, size_t n) {
    if (n < sizeof g_msg) {
        memmove(g_msg, m, n + 1);
        return;
    }
    enum { HEAD = 300, TAIL = 600 };
    char mid[48];
    int k = snprintf(mid, sizeof mid, "[... %zu bytes ...]", n - HEAD - TAIL);
    memmove(g_msg, m, HEAD);
    memcpy(g_msg + HEAD, mid, (size_t)k);
    memcpy(g_msg + HEAD + k, m + n - TAIL, TAIL);
    g_msg[HEAD + k + TAIL] = 0;
}

/* The message of fmt, ap in full (malloc'd), or NULL. */
static char *format(size_t *len, const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *m = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (m) vsnprintf(m, (size_t)n + 1, fmt, ap);
    *len = m ? (size_t)n : 0;
    return m;
}

encdec_status ed_fail(encdec_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t n;
    char *m = format(&n, fmt, ap);
    va_end(ap);
    if (m) store(m, n);
    else snprintf(g_msg, sizeof g_msg, "%s", fmt);   /* out of memory: the bare format */
    free(m);
    return st;
}

void ed_err_prefix(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t n;
    char *head = format(&n, fmt, ap);
    va_end(ap);
    size_t old = strlen(g_msg);
    char *m = head ? malloc(n + 2 + old + 1) : NULL;
    if (m) {
        memcpy(m, head, n);
        memcpy(m + n, ": ", 2);
        memcpy(m + n + 2, g_msg, old + 1);
        store(m, n + 2 + old);
    }
    free(m);
    free(head);
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
    case ENCDEC_ERR_DEVICE: return "device error";
    }
    return "unknown status";
}
