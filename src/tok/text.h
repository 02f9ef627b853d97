/* text.h - the tokenizer of a text-to-text model, whatever its files: what
 * generation needs (text to the model's ids with its end token, ids back to
 * text, one token's text) over
 *   - a SentencePiece model whose ids are the model's (T5: spm.h), borrowed;
 *   - Marian's pair: source.spm segments the input and target.spm the
 *     output, both over the model's vocab.json (piece -> id), as
 *     transformers' MarianTokenizer (a leading ">>lang<<" token kept whole;
 *     pieces vocab.json lacks are <unk>; no punctuation normaliser, as
 *     MarianTokenizer without sacremoses);
 *   - BART's byte-level BPE (tok/bpe.h: tokenizer.json, or vocab.json +
 *     merges.txt with special_tokens_map.json), <s> text </s> as
 *     BartTokenizer builds its inputs.
 *
 *   ed_ttok *t;  ttok_load_marian(&t, "models/opus-mt-en-de");
 *   int *ids, n;  ttok_encode(t, "Hello", 5, &ids, &n);      ids end with </s>
 *   char *s;  ttok_decode(t, ids, n, &s);                     specials skipped
 *
 * Read-only after loading: shareable across threads.
 */
#ifndef ED_TOK_TEXT_H
#define ED_TOK_TEXT_H

#include "encdec.h"
#include "tok/spm.h"

#include <stddef.h>

typedef struct ed_ttok ed_ttok;

/* Over spm (borrowed: it must outlive the result). */
encdec_status ttok_wrap_spm(ed_ttok **out, const spm_tok *spm);
/* Marian's files in dir: source.spm, target.spm, vocab.json. Errors:
 * ENCDEC_ERR_TOKENIZER naming the file (a piece of both models vocab.json
 * lacks is no error: it encodes as <unk>, as in transformers). */
encdec_status ttok_load_marian(ed_ttok **out, const char *dir);
/* 1 when dir holds Marian's files. */
int ttok_is_marian_dir(const char *dir);
/* BART's byte-level BPE files in dir (bpe_load_dir's), with bos (-1: none)
 * before every input and "</s>" after it. */
encdec_status ttok_load_bpe(ed_ttok **out, const char *dir, int bos);
/* 1 when dir holds byte-level BPE files (tokenizer.json, or vocab.json +
 * merges.txt). */
int ttok_is_bpe_dir(const char *dir);
void ttok_free(ed_ttok *t);

int ttok_n_vocab(const ed_ttok *t);     /* the ids it knows: 0 .. n-1 */
int ttok_eos(const ed_ttok *t);
/* text[0, len) -> ids with the end token appended; *ids malloc'd. Invalid
 * UTF-8: ENCDEC_ERR_ARG naming the byte. */
encdec_status ttok_encode(const ed_ttok *t, const char *text, size_t len, int **ids, int *n);
/* ids -> text, special tokens skipped, ids past the tokenizer's skipped
 * (a model's vocabulary padded past its tokenizer); *text malloc'd. */
encdec_status ttok_decode(const ed_ttok *t, const int *ids, int n, char **text);
/* One token's text (U+2581 as a space; a special token's spelling), *len
 * bytes, borrowed; NULL when out of range. */
const char *ttok_token_text(const ed_ttok *t, int id, size_t *len);
/* 1 for a normal piece (text of its own: no byte piece, special or added
 * token), whose text next to another normal piece is theirs joined. */
int ttok_is_normal(const ed_ttok *t, int id);

#endif
