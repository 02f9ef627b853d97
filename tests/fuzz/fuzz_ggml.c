/* fuzz_ggml.c - any bytes as a whisper.cpp ggml file: the reader must
 * accept or refuse them, never crash; what it accepts goes on through the
 * Whisper loader (hyper-parameters, the tokenizer rebuilt from the listed
 * bytes, the derived rules, the weights' shapes). The seed
 * (corpus/ggml/small.bin, tools/ggml_fuzz_seed.py) is a small file that
 * reaches every stage: a valid vocabulary, one tensor. */
#include "fuzz_common.h"
#include "io/tensor.h"
#include "models/whisper.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_write(data, size, "ggml-model.bin");
    if (!p) return 0;
    ed_wtab *t = wtab_new();
    ggml_whisper g;
    if (t && ggml_load_file(t, p, &g) == ENCDEC_OK) {
        for (int i = 0; i < wtab_count(t); i++) {
            const ed_tensor *x = wtab_at(t, i);
            volatile uint8_t sum = 0;
            for (size_t b = 0; b < x->nbytes; b++) sum += ((const uint8_t *)x->data)[b];
        }
    }
    wtab_free(t);
    whisper_model *m = NULL;
    if (whisper_load(&m, p) == ENCDEC_OK) whisper_free(m);
    unlink(p);
    return 0;
}
