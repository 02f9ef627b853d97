/* bpe_internal.h - how the file readers (bpe_load.c) fill a bpe_tok (bpe.c).
 *
 *   bpe_tok *t = bpe_alloc();
 *   bpe_put(t, id, "Ġthe", 5, 0, file); ...  bpe_finish(t, file);
 *   bpe_put_merge(t, "Ġ", 2, "t", 1, file, rank); ...   (or bpe_derive_merges)
 *
 * Tokens go in first (any order, by id), then bpe_finish checks and packs them,
 * then merges go in by increasing rank. Not for use outside src/tok/.
 */
#ifndef ED_BPE_INTERNAL_H
#define ED_BPE_INTERNAL_H

#include "tok/bpe.h"

/* An empty tokenizer; NULL (message set) on out of memory. */
bpe_tok *bpe_alloc(void);

/* Sets token id (id < 0: the next free id) to the n-byte vocabulary spelling
 * s. Putting the same spelling twice at one id only merges the special flag;
 * a different spelling at a used id is an error naming file. */
encdec_status bpe_put(bpe_tok *t, int id, const char *s, size_t n, int special, const char *file);

/* Id of the n-byte spelling s, or -1. Valid at any stage. */
int bpe_lookup(const bpe_tok *t, const char *s, size_t n);

/* bpe_put of a token given as raw bytes (b[n]): spelled in GPT-2's
 * byte-to-unicode alphabet. */
encdec_status bpe_put_bytes(bpe_tok *t, int id, const uint8_t *b, size_t n, const char *file);

void bpe_set_special(bpe_tok *t, int id);

/* Ends the token stage: appends the timestamp tokens <|0.00|> ... <|30.00|>
 * after a final <|notimestamps|> when the files lack them (Hugging Face
 * tokenizer.json files of the first Whisper releases do), checks that the ids
 * have no holes and that every byte has a token, and computes token bytes. */
encdec_status bpe_finish(bpe_tok *t, const char *file);

/* Adds the merge (a, b) -> ab with the given rank (call in rank order); a, b
 * and ab must be tokens. */
encdec_status bpe_put_merge(bpe_tok *t, const char *a, size_t an, const char *b, size_t bn,
                            const char *file, int rank);

/* Rebuilds the merges of a GPT-2 style vocabulary listed in merge order (the
 * token made by the merge of rank r has the r-th multi-byte id): each regular
 * multi-byte token must split into exactly two tokens under the merges
 * before it. */
encdec_status bpe_derive_merges(bpe_tok *t, const char *file);

#endif
