/* fuzz_common.h - libFuzzer harness helpers: the loaders take paths, so each
 * input is written to a per-process file in /dev/shm (or /tmp). */
#ifndef ED_FUZZ_COMMON_H
#define ED_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static inline const char *fuzz_write(const uint8_t *data, size_t size, const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/encdec-fuzz-%d-%s",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fwrite(data, 1, size, f);
    fclose(f);
    return path;
}

/* A per-process model directory (once) holding links to the named files of
 * tests/data/<model>, with config.json written from each fuzz input: the
 * config harnesses fuzz one file while the rest stay valid. Returns the
 * directory, or NULL when the config cannot be written. */
static inline const char *fuzz_config_dir(const char *model, const char *const *files, int n,
                                   const uint8_t *data, size_t size) {
    static char dir[256];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/encdec-fuzz-%s-%d", model, (int)getpid());
        mkdir(dir, 0700);
        for (int i = 0; i < n; i++) {
            char src[512], dst[512];
            snprintf(src, sizeof src, "%s/tests/data/%s/%s", getenv("PWD"), model, files[i]);
            snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
            unlink(dst);
            if (symlink(src, dst) != 0) abort();
        }
    }
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *f = fopen(p, "wb");
    if (!f) return NULL;
    fwrite(data, 1, size, f);
    fclose(f);
    return dir;
}

#endif
