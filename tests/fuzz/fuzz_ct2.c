/* fuzz_ct2.c - any bytes as a CTranslate2 model.bin: the reader (every
 * tensor's bytes read), and then the BART family's loader on it
 * (models/bart_ct2.c's view of a TransformerSpec as a Hugging Face
 * checkpoint, and bart_load's checks), beside the config.json and
 * shared_vocabulary.json of the Marian test model. Seeds: a Whisper
 * conversion's head, and a 1-layer float16 TransformerSpec written by
 * CTranslate2's own spec code (tests/fuzz/corpus/ct2/transformer-tiny). */
#include "fuzz_common.h"
#include "io/tensor.h"
#include "models/bart.h"

#include <stdlib.h>

static char g_dir[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    snprintf(g_dir, sizeof g_dir, "%s/encdec-fuzz-ct2-%d", fuzz_tmp(),
             (int)getpid());
    mkdir(g_dir, 0700);
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", g_dir);
    fuzz_copy_file(FUZZ_DATA_DIR "/tiny-random-marian-ct2/config.json", p);
    snprintf(p, sizeof p, "%s/shared_vocabulary.json", g_dir);
    fuzz_copy_file(FUZZ_DATA_DIR "/tiny-random-marian-ct2/shared_vocabulary.json", p);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_write(data, size, "model.bin");
    if (!p) return 0;
    ed_wtab *t = wtab_new();
    int ok = t && ct2_load_file(t, p) == ENCDEC_OK;
    if (ok) {
        for (int i = 0; i < wtab_count(t); i++) {
            const ed_tensor *x = wtab_at(t, i);
            volatile uint8_t sum = 0;
            for (size_t b = 0; b < x->nbytes; b++) sum += ((const uint8_t *)x->data)[b];
        }
    }
    wtab_free(t);
    if (ok) {   /* the same bytes as the model.bin of a BART-family directory */
        char m[512];
        snprintf(m, sizeof m, "%s/model.bin", g_dir);
        rename(p, m);
        bart_model *b = NULL;
        if (bart_load(&b, g_dir) == ENCDEC_OK) bart_free(b);
        unlink(m);
    }
    unlink(p);
    return 0;
}
