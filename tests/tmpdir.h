/* tmpdir.h - a private temporary directory for tests that write files.
 *
 *   if (!tmp_new("encdec-errors-audio")) return 2;    makes /tmp/encdec-errors-audio-XXXXXX
 *   tmp_write(tmp_path("x.wav"), bytes, n);           a file in it
 *   tmp_remove(tmp_dir);                              the directory and all below it
 *
 * One directory per test program (each test is its own executable). The
 * path helpers return static storage that rotates over 4 buffers, so up to
 * 4 results may be in use at once.
 */
#ifndef ED_TMPDIR_H
#define ED_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_dir[64];        /* the directory made by tmp_new */

/* Makes the fresh directory /tmp/<prefix>-XXXXXX into tmp_dir; returns it,
 * or NULL (after perror) when it cannot. */
static inline const char *tmp_new(const char *prefix) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return NULL;
    }
    return tmp_dir;
}

/* dir/name, in static storage (4 rotating buffers). */
static inline const char *tmp_join(const char *dir, const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* tmp_dir/name, in the same static storage as tmp_join. */
static inline const char *tmp_path(const char *name) { return tmp_join(tmp_dir, name); }

/* Writes n bytes to path (n may be 0); exits 2 when it cannot. */
static inline void tmp_write(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) { perror(path); exit(2); }
    fclose(f);
}

/* Deletes path and, where it is a directory, everything below it; links are
 * removed, not followed. */
static inline void tmp_remove(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        remove(path);
        return;
    }
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p) continue;
        if (unlink(p) != 0) tmp_remove(p);
    }
    closedir(d);
    rmdir(path);
}

#endif
