/* fuzz_bart.c - the BART family's files from any bytes: the first byte
 * picks the file of the random Marian test model that the rest replaces
 * (even: config.json, odd: vocab.json; the weights and SentencePiece
 * models stay valid). Loading must accept or refuse, never crash, and a
 * model that loads must generate (4 tokens, greedy and beam 2, a
 * ">>de<<" input included) without crashing whatever sizes, ids, variant,
 * positions or vocabulary the files claim. Finds the model through
 * FUZZ_DATA_DIR. */
#include "encdec.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const char *const files[2][4] = {
        {"model.safetensors", "source.spm", "target.spm", "vocab.json"},
        {"model.safetensors", "source.spm", "target.spm", "config.json"}};
    int vocab = data[0] & 1;
    const char *dir = vocab ? fuzz_model_dir("tiny-random-marian", files[1], 4, "vocab.json", data + 1, size - 1)
                            : fuzz_config_dir("tiny-random-marian", files[0], 4, data + 1, size - 1);
    if (!dir) return 0;
    const char *in[] = {"The children walked to the old market.", ">>de<< Please read!"};
    fuzz_text_generate(dir, in, 2);
    return 0;
}
