/* fuzz_nmt.c - the Moses + BPE side of the translation tokenizers: any
 * bytes as a subword-nmt codes file (tok/bpe_nmt.c); up to the first NUL
 * the codes, after it a text (as much as follows), which is normalised by
 * the Moses punctuation rules of a language the first byte picks
 * (tok/moses_norm.c), tokenized by Moses' tokenizer for that language
 * (tok/moses_tok.c, over scripts/fetch-model.sh moses's data: $ENCDEC_MOSES
 * or the cache's) and then, when the codes load, segmented, joined back
 * and detokenized (tok/moses_detok.c), as Argos Translate decodes; the text
 * is detokenized as it came too. Seeds: tests/data/bpe-nmt's codes with a
 * text. */
#include "tok/bpe_nmt.h"
#include "tok/moses.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LANGS 6
static const char *const LANGS[N_LANGS] = {"en", "de", "fr", "ja", "cs", "xx"};
static moses_data *g_data;
static moses_tok *g_tok[N_LANGS];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    char dir[1024];
    const char *env = getenv("ENCDEC_MOSES"), *home = getenv("HOME");
    if (env && *env) snprintf(dir, sizeof dir, "%s", env);
    else snprintf(dir, sizeof dir, "%s/.cache/encdec/models/sacremoses-0.1.1", home ? home : ".");
    if (moses_data_load(dir, &g_data)) {
        fprintf(stderr, "fuzz_nmt: %s (scripts/fetch-model.sh moses installs Moses' data)\n",
                encdec_last_error());
        exit(1);
    }
    for (int i = 0; i < N_LANGS; i++)
        if (moses_tok_new(g_data, LANGS[i], &g_tok[i])) exit(1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *d = (const char *)data;
    const char *nul = memchr(d, 0, size);
    size_t nc = nul ? (size_t)(nul - d) : size;
    const char *text = nul ? nul + 1 : d;
    size_t nt = nul ? size - nc - 1 : (size < 256 ? size : 256);
    int lang = size ? data[0] % N_LANGS : 0;
    char *norm = NULL, *toks = NULL, *plain = NULL;
    if (moses_detokenize(g_data, LANGS[lang], text, nt, &plain) == ENCDEC_OK) free(plain);
    size_t nn = 0;
    if (moses_normalize(LANGS[lang], text, nt, &norm, &nn) == ENCDEC_OK) {
        text = norm;
        nt = nn;
        if (moses_tokenize(g_tok[lang], text, nt, &toks) == ENCDEC_OK) {
            text = toks;
            nt = strlen(toks);
        }
    }
    nmt_bpe *b = NULL;
    if (nmt_bpe_load_mem(&b, d, nc, "fuzz.codes") == ENCDEC_OK) {
        nmt_units u = {0};
        if (nmt_bpe_segment(b, text, nt, &u) == ENCDEC_OK && u.n) {
            const char **p = malloc(sizeof *p * (size_t)u.n);
            if (p) {
                for (int i = 0; i < u.n; i++) p[i] = nmt_unit(&u, i);
                char *j = nmt_bpe_join(p, u.n);
                if (j && moses_detokenize(g_data, LANGS[lang], j, strlen(j), &plain) == ENCDEC_OK) free(plain);
                free(j);
                free(p);
            }
        }
        nmt_units_free(&u);
        nmt_bpe_free(b);
    }
    free(toks);
    free(norm);
    return 0;
}
