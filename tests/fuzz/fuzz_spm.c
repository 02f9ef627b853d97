/* fuzz_spm.c - any bytes as a tokenizer: a tokenizer.json when the first
 * non-blank byte is '{', else a spiece.model. When accepted, a fixed tricky
 * text and the input's first bytes (valid UTF-8 or refused) are encoded (with
 * the unknown runs' texts too: the same ids), the ids decoded both ways, and
 * every token's text read. */
#include "tok/spm.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void roundtrip(const spm_tok *t, const char *s, size_t n) {
    int *ids = NULL, k = 0;
    if (spm_encode(t, s, n, 1, &ids, &k) == ENCDEC_OK) {
        char *text = NULL;
        if (spm_decode(t, ids, k, 0, &text) == ENCDEC_OK) free(text);
        if (spm_decode(t, ids, k, 1, &text) == ENCDEC_OK) free(text);
        /* the same ids with the unknown runs' texts, each a <unk>'s */
        int *ids2 = NULL, k2 = 0;
        char **unknown = NULL;
        if (spm_encode_surfaces(t, s, n, 1, &ids2, &k2, &unknown) == ENCDEC_OK) {
            if (k2 != k || memcmp(ids, ids2, sizeof(int) * (size_t)k)) abort();
            for (int i = 0; i < k2; i++)
                if (unknown[i] && ids2[i] != spm_unk(t)) abort();   /* (a NUL byte's text is "") */
        }
        free(ids2);
        free(unknown);
    }
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t i = 0;
    while (i < size && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r')) i++;
    int json = i < size && data[i] == '{';
    const char *path = fuzz_write(data, size, json ? "tokenizer.json" : "spiece.model");
    spm_tok *t = NULL;
    if (!path || (json ? spm_load_json(&t, path) : spm_load_model(&t, path)) != ENCDEC_OK) return 0;
    static const char tricky[] = "  Hello <extra_id_0>  wo\xe2\x96\x81rld\t</s> caf\x65\xcc\x81 \xef\xbc\xa1\xcc\x81"
                                 " \xef\xac\x81 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd <0x41> <unk>\x00 ";
    roundtrip(t, tricky, sizeof tricky - 1);
    roundtrip(t, (const char *)data, size < 256 ? size : 256);
    int nv = spm_n_vocab(t), some[16];
    for (int k = 0; k < 16; k++) some[k] = (int)(((size_t)data[(size_t)k * 7 % size] * 131u + (size_t)k) % (size_t)nv);
    char *text = NULL;
    if (spm_decode(t, some, 16, 0, &text) == ENCDEC_OK) free(text);
    for (int id = -1; id <= nv && id < 4096; id++) {
        size_t len;
        spm_token_text(t, id, &len);
        spm_piece(t, id);
    }
    spm_free(t);
    return 0;
}
