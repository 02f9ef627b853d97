/* clirun.h - running the encdec program from a test and looking at what it
 * printed.
 *
 *   CHECK_EQ_INT(cli_sh("'" ED_CLI_PATH "' generate --beam 0 x 2>&1"), 2);
 *   CHECK(cli_said("--beam expects"));       cli_out holds the output
 */
#ifndef ED_CLIRUN_H
#define ED_CLIRUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char cli_out[1 << 18];   /* what the last command printed (to the pipe) */

/* Runs the shell command line cmd, keeps its standard output in cli_out
 * (redirect 2>&1 in cmd to keep errors too) and returns its exit status,
 * -1 if it did not exit normally. */
static inline int cli_sh(const char *cmd) {
    FILE *p = popen(cmd, "r");
    if (!p) { perror("popen"); exit(2); }
    size_t n = fread(cli_out, 1, sizeof cli_out - 1, p);
    cli_out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* cli_out contains s; prints what it holds when not. */
static inline int cli_said(const char *s) {
    if (strstr(cli_out, s)) return 1;
    fprintf(stderr, "  expected \"%s\" in the output:\n%s\n", s, cli_out);
    return 0;
}

#endif
