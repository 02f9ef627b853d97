/* fuzz_common.h - libFuzzer harness helpers: the loaders take paths, so each
 * input is written to a per-process file in /dev/shm (or /tmp). Test data
 * is found at FUZZ_DATA_DIR (tests/data, an absolute path build.sh passes),
 * wherever the harness runs from; a harness that cannot find it stops. */
#ifndef ED_FUZZ_COMMON_H
#define ED_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FUZZ_DATA_DIR
#error "build with -DFUZZ_DATA_DIR=<absolute path of tests/data> (tests/fuzz/build.sh does)"
#endif

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
            snprintf(src, sizeof src, "%s/%s/%s", FUZZ_DATA_DIR, model, files[i]);
            snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
            if (access(src, R_OK) != 0) {   /* else every input would test nothing */
                fprintf(stderr, "fuzz: %s is missing (FUZZ_DATA_DIR)\n", src);
                abort();
            }
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
