/* progress.c - what `encdec transcribe` shows while it works: a progress
 * line on a terminal's stderr (position, speed as a multiple of real time),
 * and with --verbose each segment with its times as soon as it is final. */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* [hh:]mm:ss.mmm as openai-whisper prints segment times. */
static void stamp(char *dst, size_t cap, double s) {
    long long ms = (long long)(s * 1000.0 + 0.5);
    long long h = ms / 3600000, m = ms / 60000 % 60, sec = ms / 1000 % 60;
    ms %= 1000;
    if (h > 0) snprintf(dst, cap, "%02lld:%02lld:%02lld.%03lld", h, m, sec, ms);
    else snprintf(dst, cap, "%02lld:%02lld.%03lld", m, sec, ms);
}

void cli_progress_init(cli_progress *p, const char *file, int quiet, int verbose) {
    memset(p, 0, sizeof *p);
    p->file = file;
    p->verbose = verbose;
    p->tty = !quiet && isatty(STDERR_FILENO);
    p->t0 = cli_now_ms();
}

void cli_progress_cb(double done, double total, void *user) {
    cli_progress *p = user;
    if (!p->tty || total <= 0) return;
    double el = (cli_now_ms() - p->t0) / 1000.0;
    char a[32], b[32];
    stamp(a, sizeof a, done);
    stamp(b, sizeof b, total);
    fprintf(stderr, "\r\033[K%s: %s / %s (%3.0f%%)", p->file, a, b, 100.0 * done / total);
    if (el > 0 && done > 0) fprintf(stderr, ", %.1fx real time", done / el);
    fflush(stderr);
    p->shown = 1;
}

int cli_segment_cb(const encdec_segment *g, void *user) {
    cli_progress *p = user;
    if (!p->verbose) return 0;
    if (p->shown) fputs("\r\033[K", stderr), fflush(stderr), p->shown = 0;
    char a[32], b[32];
    stamp(a, sizeof a, g->start);
    stamp(b, sizeof b, g->end);
    printf("[%s --> %s] %s\n", a, b, g->text);
    fflush(stdout);
    return 0;
}

void cli_progress_done(cli_progress *p) {
    if (p->shown) fputs("\r\033[K", stderr), fflush(stderr);
    p->shown = 0;
}
