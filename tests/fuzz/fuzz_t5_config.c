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
