/* fuzz_nmt.c - the Moses + BPE side of the translation tokenizers: any
 * bytes as a subword-nmt codes file (tok/bpe_nmt.c); up to the first NUL
 * the codes, after it a text (as much as follows), which is normalised by
 * the Moses punctuation rules of a language the first byte picks
 * (tok/moses_norm.c) and then, when the codes load, segmented and joined
 * back. Seeds: tests/data/bpe-nmt's crafted codes with a text. */
#include "tok/bpe_nmt.h"
#include "tok/moses.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *d = (const char *)data;
    const char *nul = memchr(d, 0, size);
    size_t nc = nul ? (size_t)(nul - d) : size;
    const char *text = nul ? nul + 1 : d;
    size_t nt = nul ? size - nc - 1 : (size < 256 ? size : 256);
    static const char *const langs[] = {"en", "de", "fr", "cs", "xx"};
    char *norm = NULL;
    if (moses_normalize(langs[size ? data[0] % 5 : 0], text, nt, &norm) == ENCDEC_OK) {
        text = norm;
        nt = strlen(norm);
    }
    nmt_bpe *b = NULL;
    if (nmt_bpe_load_mem(&b, d, nc, "fuzz.codes") == ENCDEC_OK) {
        nmt_units u = {0};
        if (nmt_bpe_segment(b, text, nt, &u) == ENCDEC_OK && u.n) {
            const char **p = malloc(sizeof *p * (size_t)u.n);
            if (p) {
                for (int i = 0; i < u.n; i++) p[i] = nmt_unit(&u, i);
                free(nmt_bpe_join(p, u.n));
                free(p);
            }
        }
        nmt_units_free(&u);
        nmt_bpe_free(b);
    }
    free(norm);
    return 0;
}
