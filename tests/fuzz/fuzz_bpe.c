/* fuzz_bpe.c - any bytes as a tokenizer.json; when accepted, the first bytes
 * of the input are also encoded and decoded (valid UTF-8 or refused). */
#include "tok/bpe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bpe_tok *t = NULL;
    if (bpe_load_json(&t, (const char *)data, size, "fuzz.json") == ENCDEC_OK) {
        char text[65];
        size_t n = size < 64 ? size : 64;
        memcpy(text, data, n);
        text[n] = 0;
        int ids[256], n_ids = 0;
        if (bpe_encode(t, text, ids, 256, &n_ids) == ENCDEC_OK) {
            char *s = bpe_decode(t, ids, n_ids < 256 ? n_ids : 256, 0);
            free(s);
        }
        for (int id = -2; id < bpe_n_vocab(t) + 2 && id < 1000; id++) {
            size_t len;
            bpe_token_bytes(t, id, &len);
        }
        bpe_free(t);
    }
    return 0;
}
