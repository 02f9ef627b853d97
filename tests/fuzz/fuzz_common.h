/* fuzz_common.h - libFuzzer harness helpers: the loaders take paths, so each
 * input is written to a per-process file in /dev/shm (or /tmp). */
#ifndef ED_FUZZ_COMMON_H
#define ED_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static const char *fuzz_write(const uint8_t *data, size_t size, const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/encdec-fuzz-%d-%s",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fwrite(data, 1, size, f);
    fclose(f);
    return path;
}

#endif
