/* fuzz_safetensors.c - any bytes as a .safetensors file: the loader must
 * accept or refuse with a status, never crash, leak or read out of bounds;
 * every tensor it accepts must lie inside the file. */
#include "fuzz_common.h"
#include "io/tensor.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fuzz_write(data, size, "x.safetensors");
    if (!p) return 0;
    ed_wtab *t = wtab_new();
    if (t && st_load_file(t, p) == ENCDEC_OK) {
        for (int i = 0; i < wtab_count(t); i++) {
            const ed_tensor *x = wtab_at(t, i);
            size_t n = 1;
            for (int d = 0; d < x->ndim; d++) n *= (size_t)x->shape[d];
            if (n * ed_dtype_size(x->dtype) != x->nbytes) abort();
            volatile uint8_t sum = 0;   /* touch every byte: ASan checks bounds */
            for (size_t b = 0; b < x->nbytes; b++) sum += ((const uint8_t *)x->data)[b];
        }
    }
    wtab_free(t);
    unlink(p);
    return 0;
}
