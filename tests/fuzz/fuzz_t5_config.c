/* fuzz_t5_config.c - any bytes as the config.json of the random T5 v1.1 test
 * model (weights and tokenizer stay valid): loading must accept or refuse,
 * never crash, and a model that loads must generate (4 tokens, greedy and
 * beam 2) without crashing whatever buckets, distances, ids or activation
 * the config names. Finds the model through FUZZ_DATA_DIR. */
#include "encdec.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const files[] = {"model.safetensors", "tokenizer.json", "spiece.model"};
    const char *g_dir = fuzz_config_dir("tiny-random-t5-v1_1", files, 3, data, size);
    if (!g_dir) return 0;
    const char *in[] = {"translate English to German: The house is wonderful.", "Das Haus"};
    fuzz_text_generate(g_dir, in, 2);
    return 0;
}
