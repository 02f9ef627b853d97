/* bpe.h - Whisper's byte-level BPE tokenizer (GPT-2 style), with special
 * tokens (<|endoftext|>, <|startoftranscript|>, languages, tasks,
 * <|notimestamps|>, timestamps <|0.00|> ... <|30.00|>).
 *
 *   bpe_tok *t;  bpe_load_dir(&t, "models/whisper-tiny.en");
 *   int ids[64]; int n;  bpe_encode(t, " hello world", ids, 64, &n);
 *   char *s = bpe_decode(t, ids, n);  ...  free(s);  bpe_free(t);
 *
 * Read-only after loading: shareable across threads. Ids equal those of the
 * Hugging Face `tokenizers` library for the same files.
 */
#ifndef ED_BPE_H
#define ED_BPE_H

#include "encdec.h"
#include <stddef.h>
#include <stdint.h>

typedef struct bpe_tok bpe_tok;

/* Loads from a directory, trying in order: tokenizer.json; vocab.json +
 * merges.txt (+ added_tokens.json, tokenizer_config.json,
 * special_tokens_map.json); a CTranslate2 vocabulary.json / vocabulary.txt
 * (tokens in id order; merges from merges.txt if present, else derived from
 * the order: GPT-2 vocabularies list merged tokens by merge rank). The
 * timestamp tokens <|0.00|> ... <|30.00|> follow <|notimestamps|>; they are
 * added when the files lack them. Errors: ENCDEC_ERR_TOKENIZER naming the file. */
encdec_status bpe_load_dir(bpe_tok **out, const char *dir);
/* A vocabulary given as raw token bytes in rank order, ids 0 .. n-1 (a
 * tiktoken-style list: whisper.cpp's ggml files), then the special tokens
 * spelled in specials[n_specials] as ids n, n+1, ...; the timestamps follow
 * a last <|notimestamps|>; merges are derived from the order. Errors:
 * ENCDEC_ERR_TOKENIZER naming file. */
encdec_status bpe_load_bytes(bpe_tok **out, const char *const *tok, const uint32_t *len, int n,
                             const char *const *specials, int n_specials, const char *file);
/* Loads from an in-memory tokenizer.json document (for tests). */
encdec_status bpe_load_json(bpe_tok **out, const char *json, size_t len, const char *name);
void bpe_free(bpe_tok *t);

int bpe_n_vocab(const bpe_tok *t);            /* including special tokens */
/* Id of a token spelled exactly as in the vocabulary (special or regular;
 * byte-level alphabet, "Ġthe" for " the"), or -1. */
int bpe_token_id(const bpe_tok *t, const char *token);
/* The token's raw bytes (byte-level decoded, may be partial UTF-8);
 * *len set. NULL if id is out of range. Borrowed. */
const char *bpe_token_bytes(const bpe_tok *t, int id, size_t *len);
int bpe_is_special(const bpe_tok *t, int id);
/* The token's spelling in the vocabulary ("Ġthe"), NULL if out of range. */
const char *bpe_token_spelling(const bpe_tok *t, int id);

/* Encodes UTF-8 text (special-token spellings are treated as plain text).
 * Writes at most cap ids; *n_out is the full count (may exceed cap).
 * ENCDEC_ERR_ARG on invalid UTF-8. */
encdec_status bpe_encode(const bpe_tok *t, const char *text, int *ids, int cap, int *n_out);

/* Decodes ids to a malloc'd UTF-8 string (caller frees). Special tokens are
 * skipped when skip_special, else written as their spelling; ids out of
 * range are skipped. Invalid byte sequences become U+FFFD (one per maximal
 * ill-formed subsequence, as Hugging Face does). NULL on out of memory. */
char *bpe_decode(const bpe_tok *t, const int *ids, int n, int skip_special);

#endif
