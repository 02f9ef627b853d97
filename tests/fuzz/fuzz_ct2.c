/* fuzz_ct2.c - any bytes as a CTranslate2 model.bin. */
#include "fuzz_common.h"
#include "io/tensor.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_write(data, size, "model.bin");
    if (!p) return 0;
    ed_wtab *t = wtab_new();
    if (t && ct2_load_file(t, p) == ENCDEC_OK) {
        for (int i = 0; i < wtab_count(t); i++) {
            const ed_tensor *x = wtab_at(t, i);
            volatile uint8_t sum = 0;
            for (size_t b = 0; b < x->nbytes; b++) sum += ((const uint8_t *)x->data)[b];
        }
    }
    wtab_free(t);
    unlink(p);
    return 0;
}
