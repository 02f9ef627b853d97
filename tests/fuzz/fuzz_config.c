/* fuzz_config.c - any bytes as the config.json of the random test model
 * (weights, tokenizer and generation config stay valid): whisper_load must
 * accept or refuse, never crash. Finds the model through FUZZ_DATA_DIR. */
#include "fuzz_common.h"
#include "models/whisper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const files[] = {"model.safetensors", "tokenizer.json", "generation_config.json"};
    const char *dir = fuzz_config_dir("tiny-random-whisper", files, 3, data, size);
    whisper_model *m = NULL;
    if (dir && whisper_load(&m, dir) == ENCDEC_OK) whisper_free(m);
    return 0;
}
