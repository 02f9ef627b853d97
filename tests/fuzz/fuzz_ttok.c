/* fuzz_ttok.c - any bytes as the tokenizer_config.json of a translation
 * model's SentencePiece tokenizer (tok/text_sp.c: the class, added tokens
 * and their ids, language codes, src_lang, M2M100's language lists), beside
 * the real files of tests/data/text-tok/<class> (the first byte picks NLLB,
 * M2M100, Pegasus, or NLLB's fast class with tokenizer.json alone); what
 * loads encodes and decodes a text with a language, and again with each
 * token's spelling (the same ids) written in its place. Seeds: those
 * directories' own configs. */
#include "fuzz_common.h"
#include "tok/text.h"

#define N_DIRS 4
static char g_dirs[N_DIRS][256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char *const names[N_DIRS] = {"nllb", "m2m100", "pegasus", "nllb-fast"};
    static const char *const files[] = {"sentencepiece.bpe.model", "spiece.model", "vocab.json",
                                        "special_tokens_map.json", "tokenizer.json"};
    for (int i = 0; i < N_DIRS; i++) {
        snprintf(g_dirs[i], sizeof g_dirs[i], "%s/encdec-fuzz-ttok-%d-%s",
                 fuzz_tmp(), (int)getpid(), names[i]);
        mkdir(g_dirs[i], 0700);
        for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
            char from[512], to[512];
            snprintf(from, sizeof from, "%s/text-tok/%s/%s", FUZZ_DATA_DIR, names[i], files[f]);
            snprintf(to, sizeof to, "%s/%s", g_dirs[i], files[f]);
            if (access(from, R_OK) == 0) fuzz_copy_file(from, to);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    const char *dir = g_dirs[data[0] % N_DIRS];
    char p[512];
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    FILE *f = fopen(p, "wb");
    if (!f) return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    ed_ttok *t = NULL;
    if (ttok_load_sp(&t, dir, data[0] % N_DIRS == 2 ? "pegasus" : "m2m_100") == ENCDEC_OK) {
        int *ids = NULL, n = 0;
        const char *text = "Hello <mask> world, fra_Latn __de__ <pad>.";
        int lang = ttok_n_langs(t) ? ttok_n_langs(t) - 1 : -1;
        if (ttok_encode_lang(t, text, strlen(text), lang, -1, &ids, &n) == ENCDEC_OK) {
            char *s = NULL;
            if (ttok_decode(t, ids, n, &s) == ENCDEC_OK) free(s);
            for (int i = 0; i < n; i++) ttok_token_text(t, ids[i], NULL);
        }
        /* each token as spelled (the same ids), decoded in place of its id */
        int *ids2 = NULL, n2 = 0;
        char **pieces = NULL;
        if (ttok_encode_pieces(t, text, strlen(text), lang, -1, &ids2, &n2, &pieces) == ENCDEC_OK) {
            if (!ids || n2 != n || memcmp(ids, ids2, sizeof(int) * (size_t)n)) abort();
            char *s = NULL;
            if (ttok_decode_subst(t, ids2, n2, (const char *const *)pieces, &s) == ENCDEC_OK) free(s);
        }
        free(ids2);
        free(pieces);
        free(ids);
        ttok_free(t);
    }
    unlink(p);
    return 0;
}
