/* err.c - the CLI's error lines (cli_err), kept short whatever a user
 * passed, and the last one for the server's answers: beneath every other
 * cli/ file. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char g_last_err[CLI_ERR_MAX + 1];

const char *cli_last_err(void) { return g_last_err; }

void cli_err(const char *fmt, ...) {
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *m = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (m) vsnprintf(m, (size_t)n + 1, fmt, aq);
    va_end(aq);
    if (!m) return;
    size_t len = strcspn(m, "\n");   /* its first line, without "encdec: " */
    const char *from = !strncmp(m, "encdec: ", 8) ? m + 8 : m;
    len -= (size_t)(from - m);
    snprintf(g_last_err, sizeof g_last_err, "%.*s", (int)(len < CLI_ERR_MAX ? len : CLI_ERR_MAX), from);
    if (n <= CLI_ERR_MAX) fputs(m, stderr);
    else   /* an echoed argument of 100 KB: its start, its end, and the reason after it */
        fprintf(stderr, "%.*s[... %d bytes ...]%s", CLI_ERR_MAX / 3, m, n - CLI_ERR_MAX,
                m + n - (CLI_ERR_MAX - CLI_ERR_MAX / 3));
    free(m);
}
