/* fuzz_t5_config.c - any bytes as the config.json of the random T5 v1.1 test
 * model (weights and tokenizer stay valid): loading must accept or refuse,
 * never crash, and a model that loads must generate (4 tokens, greedy and
 * beam 2) without crashing whatever buckets, distances, ids or activation
 * the config names. Run from the repository root. */
#include "encdec.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];

static void setup(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/encdec-fuzz-t5-config-%d", (int)getpid());
    mkdir(g_dir, 0700);
    const char *files[] = {"model.safetensors", "tokenizer.json", "spiece.model"};
    for (int i = 0; i < 3; i++) {
        char src[512], dst[512];
        snprintf(src, sizeof src, "%s/tests/data/tiny-random-t5-v1_1/%s", getenv("PWD"), files[i]);
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
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    if (encdec_model_load(g_dir, &m) == ENCDEC_OK && encdec_session_new(m, NULL, &s) == ENCDEC_OK) {
        const char *in[] = {"translate English to German: The house is wonderful.", "Das Haus"};
        encdec_generate_params gp = encdec_generate_default_params();
        gp.max_new_tokens = 4;
        encdec_result *r = NULL;
        encdec_generate(s, in, 2, &gp, &r);
        encdec_result_free(r);
        gp.num_beams = 2;
        r = NULL;
        encdec_generate(s, in, 2, &gp, &r);
        encdec_result_free(r);
    }
    encdec_session_free(s);
    encdec_model_free(m);
    return 0;
}
