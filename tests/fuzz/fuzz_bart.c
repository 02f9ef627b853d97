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
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    if (encdec_model_load(dir, &m) == ENCDEC_OK && encdec_session_new(m, NULL, &s) == ENCDEC_OK) {
        const char *in[] = {"The children walked to the old market.", ">>de<< Please read!"};
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
