/* spm.h - SentencePiece unigram tokenizer of the T5 family (T5, mT5, umT5):
 * normaliser, Viterbi segmentation, special tokens, decoding.
 *
 *   spm_tok *t;  spm_load_dir(&t, "models/flan-t5-small");
 *   int *ids, n;  spm_encode(t, "translate English to German: hi", 31, 1, &ids, &n);
 *   char *s;  spm_decode(t, ids, n, 1, &s);  ...  free(s); free(ids); spm_free(t);
 *
 * Two loaders, each faithful to the reference that reads the same file:
 *   spm_load_model (spiece.model)  = Hugging Face's slow T5Tokenizer(legacy=True),
 *                                    i.e. the `sentencepiece` library per text chunk;
 *   spm_load_json  (tokenizer.json) = the `tokenizers` library (T5TokenizerFast).
 * They agree on ordinary text and differ on corner cases (text ending in </s>,
 * U+2581 in the text, a character the charsmap rewrites followed by combining
 * marks, tabs or other whitespace next to sentinels or without a normalising
 * charsmap, decoding next to special tokens): each loader reproduces its own
 * reference there too.
 *
 * Read-only after loading: one spm_tok may be shared by any number of threads.
 */
#ifndef ED_SPM_H
#define ED_SPM_H

#include "encdec.h"
#include <stddef.h>

typedef struct spm_tok spm_tok;

/* Loads a SentencePiece tokenizer: from a spiece.model protobuf file, or a
 * Hugging Face tokenizer.json whose model is Unigram (or BPE, as NLLB's and
 * mBART's fast tokenizers convert their sentencepiece.bpe.model). T5 conventions: the 100
 * sentinels <extra_id_0>..<extra_id_99> follow the pieces when loading spiece.model
 * (extra_id_0 has the HIGHEST id, n_pieces + 99; as HF T5Tokenizer with extra_ids=100);
 * from tokenizer.json they come from its added_tokens.
 * Errors: ENCDEC_ERR_IO (unreadable), ENCDEC_ERR_FORMAT (truncated or corrupt
 * protobuf), ENCDEC_ERR_TOKENIZER (a model type other than these, an unsupported pipeline
 * step, inconsistent pieces); the message names the file. */
encdec_status spm_load_model(spm_tok **out, const char *path);   /* spiece.model */
/* The same with n_extra sentinels (HF T5Tokenizer's extra_ids) instead of 100. */
encdec_status spm_load_model_ex(spm_tok **out, const char *path, int n_extra);
encdec_status spm_load_json(spm_tok **out, const char *path);    /* tokenizer.json */
/* A model directory: tokenizer.json if present (what HF AutoTokenizer uses), else
 * spiece.model with tokenizer_config.json's "extra_ids" sentinels (100 when it has
 * none); ENCDEC_ERR_TOKENIZER naming both when neither exists. */
encdec_status spm_load_dir(spm_tok **out, const char *dir);
void spm_free(spm_tok *t);

int spm_n_vocab(const spm_tok *t);      /* highest id + 1, sentinels included */
int spm_eos(const spm_tok *t);          /* "</s>" id (1 for T5) */
int spm_pad(const spm_tok *t);          /* "<pad>" id (0 for T5), -1 if none */
int spm_unk(const spm_tok *t);
const char *spm_piece(const spm_tok *t, int id);   /* NULL when out of range; borrowed */
/* Id of a piece or special token spelled exactly so ("▁the", "<extra_id_0>"), or -1. */
int spm_piece_id(const spm_tok *t, const char *piece);
/* 1 for the tokens decoding skips with skip_special (pad, eos, unk, sentinels). */
int spm_is_special(const spm_tok *t, int id);
/* 1 for a normal piece: text of its own (not a byte piece, a control, special,
 * user-defined or added token). */
int spm_is_normal(const spm_tok *t, int id);
/* The id of the i-th token split out of the text before segmentation
 * (tokenizer.json's added_tokens, spiece.model's sentinels and controls), or
 * -1 past the last. */
int spm_split_token(const spm_tok *t, int i);

/* text[0, len) (UTF-8) -> ids, with </s> appended when add_eos. *ids is malloc'd
 * (caller frees); an empty text gives just [eos] (or nothing). Invalid UTF-8 ->
 * ENCDEC_ERR_ARG with a message naming the byte offset. Special-token spellings in
 * the text (<extra_id_N>, </s>, <pad>, <unk>) map to their ids, as HF does.
 * (spiece.model, like T5Tokenizer, appends no second </s> when the text already
 * ends with one; tokenizer.json always appends.) */
encdec_status spm_encode(const spm_tok *t, const char *text, size_t len, int add_eos,
                         int **ids, int *n);
/* spm_encode, and *texts[n] (one allocation: free(*texts)): for each <unk>
 * an unknown run of the text became, that run as sentencepiece's
 * encode(out_type=str) spells the piece (normalised text, U+2581 for its
 * spaces); NULL for every other id (its piece's spelling is its text). */
encdec_status spm_encode_surfaces(const spm_tok *t, const char *text, size_t len, int add_eos, int **ids,
                                  int *n, char ***texts);
/* ids -> text, as HF decode(ids, skip_special_tokens=skip_special): pieces joined,
 * U+2581 -> space, the leading space of the first word dropped, byte-fallback
 * pieces <0xNN> reassembled into bytes (invalid sequences -> U+FFFD), special tokens
 * (pad, eos, unk?, sentinels) skipped when skip_special. *text malloc'd. Out-of-range
 * id -> ENCDEC_ERR_ARG. (A byte piece <0x00> decodes to a NUL byte inside the text.) */
encdec_status spm_decode(const spm_tok *t, const int *ids, int n, int skip_special, char **text);
/* The text of one token for streaming/JSON output (U+2581 -> space, bytes for <0xNN>):
 * *len bytes (len may be NULL), borrowed, NUL-terminated; a byte piece gives its one
 * byte (which may be a partial UTF-8 sequence, or NUL); special tokens give their
 * spelling. NULL when id is out of range. */
const char *spm_token_text(const spm_tok *t, int id, size_t *len);

#endif
