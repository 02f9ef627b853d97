/* outputs.c - transcripts written as files (txt, srt, vtt, tsv, json) or
 * to standard output, through the library's encdec_result_format.
 *
 * Files are named after the input (talk.wav -> DIR/talk.srt) and written
 * whole or not at all: into a temporary file in DIR, renamed over the name
 * once complete. The directory is made and checked before any model loads.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_out_parse_formats(const char *list, unsigned *mask) {
    *mask = 0;
    if (!list || !*list) return 0;
    if (!strcmp(list, "all")) {
        *mask = (1u << (ENCDEC_FORMAT_JSON + 1)) - 1;
        return 1;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        encdec_format f;
        if (encdec_format_parse(t, &f)) return 0;
        *mask |= 1u << f;
    }
    return *mask != 0;
}

/* mkdir -p of dir (mode 0777 before the umask). */
static int make_dirs(const char *dir) {
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p) return -1;
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0) continue;
        char c = p[i];
        p[i] = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
        p[i] = c;
    }
    return 0;
}

int cli_out_check_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) != 0 && make_dirs(dir) != 0) {
        cli_err("encdec: --output-dir %s: cannot create it: %s\n", dir, strerror(errno));
        return 0;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        cli_err("encdec: --output-dir %s: not a directory\n", dir);
        return 0;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        cli_err("encdec: --output-dir %s: not writable: %s\n", dir, strerror(errno));
        return 0;
    }
    return 1;
}

/* The input's name without folders and its last extension ("-": "stdin"). */
static void base_name(const char *path, char *dst, size_t cap) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    if (!strcmp(path, "-")) b = "stdin";
    snprintf(dst, cap, "%s", b);
    char *dot = strrchr(dst, '.');
    if (dot && dot != dst) *dot = 0;
}

/* text into dir/name atomically: a temporary file renamed when complete. */
static int write_file(const char *dir, const char *name, const char *text) {
    char path[4352], tmp[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.encdec-XXXXXX", dir);   /* short: any name that fits does */
    int fd = mkstemp(tmp);
    if (fd < 0) {
        cli_err("encdec: %s: cannot write: %s\n", path, strerror(errno));
        return 0;
    }
    FILE *f = fdopen(fd, "w");
    size_t n = strlen(text);
    int ok = f && fwrite(text, 1, n, f) == n;
    if (f) ok = fclose(f) == 0 && ok;
    else close(fd);
    if (ok) ok = chmod(tmp, 0666 & ~cli_umask()) == 0 && rename(tmp, path) == 0;
    if (!ok) {
        cli_err("encdec: %s: cannot write: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    return ok;
}

int cli_out_check_names(const cli_outputs *o, char **inputs, int n) {
    if (!o->dir) return 1;
    for (int i = 0; i < n; i++) {
        char a[1024], b[1024];
        base_name(inputs[i], a, sizeof a);
        for (int j = 0; j < i; j++) {
            base_name(inputs[j], b, sizeof b);
            if (strcmp(a, b)) continue;
            cli_err("encdec: %s and %s would both be written as %s/%s.* (one over the other): "
                    "transcribe them into different --output-dir\n", inputs[j], inputs[i], o->dir, a);
            return 0;
        }
    }
    return 1;
}

int cli_out_write(const cli_outputs *o, const char *input, const encdec_result *r) {
    char base[1024];
    base_name(input, base, sizeof base);
    int ok = 1;
    for (int f = ENCDEC_FORMAT_TXT; f <= ENCDEC_FORMAT_JSON && ok; f++) {
        if (!(o->formats & (1u << f))) continue;
        char *text = NULL;
        encdec_status st = encdec_result_format(r, (encdec_format)f, &o->fmt, &text);
        if (st) {
            cli_err("encdec: %s: %s: %s\n", input, encdec_status_str(st), encdec_last_error());
            return 0;
        }
        if (o->dir) {
            char name[1100];
            snprintf(name, sizeof name, "%s.%s", base, encdec_format_name((encdec_format)f));
            ok = write_file(o->dir, name, text);
        } else {
            ok = fputs(text, stdout) >= 0;
        }
        encdec_free(text);
    }
    return ok;
}
