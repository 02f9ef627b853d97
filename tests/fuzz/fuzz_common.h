/* fuzz_common.h - libFuzzer harness helpers: the loaders take paths, so each
 * input is written to a per-process file in fuzz_tmp(): $TMPDIR, which
 * tests/fuzz/build.sh points at a directory of the run's own (on /dev/shm
 * where it can) and removes after it; else /dev/shm, else /tmp. Test data
 * is found at FUZZ_DATA_DIR (tests/data, an absolute path build.sh passes),
 * wherever the harness runs from; a harness that cannot find it stops. */
#ifndef ED_FUZZ_COMMON_H
#define ED_FUZZ_COMMON_H

#include "encdec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FUZZ_DATA_DIR
#error "build with -DFUZZ_DATA_DIR=<absolute path of tests/data> (tests/fuzz/build.sh does)"
#endif

/* The directory the harness writes its files in (see above). */
static inline const char *fuzz_tmp(void) {
    const char *t = getenv("TMPDIR");
    if (t && *t && access(t, W_OK) == 0) return t;
    return access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

static inline const char *fuzz_write(const uint8_t *data, size_t size, const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/encdec-fuzz-%d-%s", fuzz_tmp(), (int)getpid(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fwrite(data, 1, size, f);
    fclose(f);
    return path;
}

/* A copy of file `from` at `to` (a test file the harness's directory needs
 * as a real file, not a link); a missing source leaves `to` empty. */
static inline void fuzz_copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[4096];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
    if (a) fclose(a);
    if (b) fclose(b);
}

/* A directory (made once per process) of symlinks to files[0, n) of
 * tests/data/<model>, with file `name` written from each fuzz input: the
 * harnesses fuzz one file while the rest stay valid. Returns the
 * directory, or NULL when the file cannot be written. */
static inline const char *fuzz_model_dir(const char *model, const char *const *files, int n,
                                         const char *name, const uint8_t *data, size_t size) {
    /* one directory per file fuzzed (at most 4 kinds a process): the file
     * written is never one of the links, which would write through to tests/data */
    static char dirs[4][256];
    static const char *names[4];
    int slot = 0;
    while (slot < 3 && names[slot] && strcmp(names[slot], name)) slot++;
    names[slot] = name;
    char *dir = dirs[slot];
    for (int i = 0; i < n; i++)
        if (!strcmp(files[i], name)) abort();
    if (!dir[0]) {
        snprintf(dirs[slot], sizeof dirs[slot], "%s/encdec-fuzz-%s-%s-%d", fuzz_tmp(), model, name,
                 (int)getpid());
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
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) return NULL;
    fwrite(data, 1, size, f);
    fclose(f);
    return dir;
}

/* fuzz_model_dir with config.json fuzzed. */
static inline const char *fuzz_config_dir(const char *model, const char *const *files, int n,
                                          const uint8_t *data, size_t size) {
    return fuzz_model_dir(model, files, n, "config.json", data, size);
}

/* Loads the text model in dir and, when it loads, generates 4 tokens for
 * in[0, n) greedily and with 2 beams, whatever comes back: the text
 * harnesses' run (accept or refuse, never crash). */
static inline void fuzz_text_generate(const char *dir, const char *const *in, int n) {
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    if (encdec_model_load(dir, &m) == ENCDEC_OK && encdec_session_new(m, NULL, &s) == ENCDEC_OK) {
        encdec_generate_params gp = encdec_generate_default_params();
        gp.max_new_tokens = 4;
        for (int beams = 1; beams <= 2; beams++) {
            encdec_result *r = NULL;
            gp.num_beams = beams;
            encdec_generate(s, in, n, &gp, &r);
            encdec_result_free(r);
        }
    }
    encdec_session_free(s);
    encdec_model_free(m);
}

#endif
