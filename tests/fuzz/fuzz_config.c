/* fuzz_config.c - any bytes as the config.json of the random test model
 * (weights, tokenizer and generation config stay valid): whisper_load must
 * accept or refuse, never crash. Run from the repository root. */
#include "models/whisper.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];

static void setup(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/encdec-fuzz-config-%d", (int)getpid());
    mkdir(g_dir, 0700);
    const char *files[] = {"model.safetensors", "tokenizer.json", "generation_config.json"};
    for (int i = 0; i < 3; i++) {
        char src[512], dst[512];
        snprintf(src, sizeof src, "%s/tests/data/tiny-random-whisper/%s", getenv("PWD"), files[i]);
        snprintf(dst, sizeof dst, "%s/%s", g_dir, files[i]);
        unlink(dst);
        if (symlink(src, dst) != 0) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) setup();
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", g_dir);
    FILE *f = fopen(p, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    whisper_model *m = NULL;
    if (whisper_load(&m, g_dir) == ENCDEC_OK) whisper_free(m);
    return 0;
}
