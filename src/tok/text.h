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
 *     BartTokenizer builds its inputs;
 *   - the SentencePiece classes of NLLB, mBART-50, mBART, M2M100 and
 *     Pegasus, with their language codes (text_sp.c).
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
/* The SentencePiece tokenizer of a fairseq translation model in dir, as
 * transformers' class of that name builds it (text_sp.c): NllbTokenizer,
 * MBart50Tokenizer, MBartTokenizer (sentencepiece.bpe.model), M2M100Tokenizer
 * (sentencepiece.bpe.model + vocab.json), PegasusTokenizer (spiece.model);
 * the class is tokenizer_config.json's tokenizer_class, else model_type's
 * ("pegasus"; "mbart": mBART-50, or mBART with 25 codes or fewer;
 * "m2m_100": M2M100 with vocab.json, else NLLB). Added tokens and their ids come from tokenizer_config.json's
 * added_tokens_decoder, else added_tokens.json, else the class's layout.
 * Errors: ENCDEC_ERR_TOKENIZER naming the file; a src_lang that is not one
 * of the codes. */
encdec_status ttok_load_sp(ed_ttok **out, const char *dir, const char *model_type);
/* 1 when dir holds sentencepiece.bpe.model or spiece.model. */
int ttok_is_sp_dir(const char *dir);
/* 1 when dir holds byte-level BPE files (tokenizer.json, or vocab.json +
 * merges.txt). */
int ttok_is_bpe_dir(const char *dir);
/* An Argos Translate package in dir (what LibreTranslate runs): metadata.json
 * (from_code, to_code), sentencepiece.model, and model/ (a CTranslate2
 * directory) whose vocabulary the pieces map onto by spelling (pieces it
 * lacks are <unk>). Inputs are the pieces alone (no </s>: CTranslate2's
 * add_source_eos is off for these models); outputs decode as Argos
 * Translate decodes them (the pieces joined, U+2581 and "_" as spaces, the
 * first space dropped). A multilingual package's target_prefix (metadata.json:
 * the token naming the target language, "__de__", "deu_Latn") starts every
 * output of a text (ttok_text_prefix) and has no text. Errors:
 * ENCDEC_ERR_TOKENIZER / _CONFIG naming the file (a target_prefix the
 * vocabulary lacks). */
encdec_status ttok_load_argos(ed_ttok **out, const char *dir);
int ttok_is_argos_dir(const char *dir);
/* A CTranslate2 directory's shared_vocabulary.json (or .txt) alone, for
 * token-level use (ttok_token_id, ttok_decode): encoding text is
 * ENCDEC_ERR_TOKENIZER naming the files it needs. */
encdec_status ttok_load_vocab(ed_ttok **out, const char *dir);
int ttok_is_vocab_dir(const char *dir);
void ttok_free(ed_ttok *t);

int ttok_n_vocab(const ed_ttok *t);     /* the ids it knows: 0 .. n-1 */
int ttok_eos(const ed_ttok *t);
/* text[0, len) -> ids with the end token appended; *ids malloc'd. Invalid
 * UTF-8: ENCDEC_ERR_ARG naming the byte. */
encdec_status ttok_encode(const ed_ttok *t, const char *text, size_t len, int **ids, int *n);
/* The same with languages, indices from ttok_find_lang or -1 for the
 * default: src is the source language token of NLLB, mBART and M2M100
 * inputs ([src] text </s>; mBART: text </s> [src]); tgt is Marian's >>xx<<
 * token before the text (TTOK_TGT_SOURCE); each is ignored by the kinds
 * that have no such place. */
encdec_status ttok_encode_lang(const ed_ttok *t, const char *text, size_t len, int src, int tgt, int **ids,
                               int *n);

/* ttok_encode_lang, and *pieces[n] (one allocation: free(*pieces)): each
 * id's source token as CTranslate2's token lists spell it (and
 * sentencepiece's encode(out_type=str)): a piece as segmented (one the
 * model's vocabulary lacks too, where the id is <unk>), an unknown run of
 * the text as it reads (normalised, U+2581 for spaces), a special or
 * language token's spelling. */
encdec_status ttok_encode_pieces(const ed_ttok *t, const char *text, size_t len, int src, int tgt, int **ids,
                                 int *n, char ***pieces);

/* Languages: the codes as users write them ("fra_Latn", "fr_XX", "fr";
 * Marian's ">>fr<<" as "fr"), i in [0, ttok_n_langs); NULL / -1 when out
 * of range. ttok_find_lang takes a code or the token's spelling ("__fr__",
 * ">>fr<<"): its index, or -1. */
int ttok_n_langs(const ed_ttok *t);
const char *ttok_lang_code(const ed_ttok *t, int i);
int ttok_lang_token(const ed_ttok *t, int i);
int ttok_find_lang(const ed_ttok *t, const char *code);
/* Where the target language goes: forced as the first generated token
 * (NLLB, mBART-50, M2M100: forced_bos_token_id), as the decoder's start
 * (mBART), before the source text (Marian), or nowhere. */
enum { TTOK_TGT_NONE, TTOK_TGT_FORCED, TTOK_TGT_START, TTOK_TGT_SOURCE };
int ttok_tgt_place(const ed_ttok *t);
/* The tokens every output of a text starts with, as a target prefix that
 * CTranslate2's translate_batch is given (an Argos package's target_prefix):
 * *n of them (0: none), borrowed. */
const int *ttok_text_prefix(const ed_ttok *t, int *n);
/* A one-pair model's languages (Marian's tokenizer_config.json source_lang,
 * target_lang): which 0 or 1; NULL when not named. */
const char *ttok_pair(const ed_ttok *t, int which);
/* 1 when inputs carry a source language token (NLLB, mBART, M2M100). */
int ttok_has_src_lang(const ed_ttok *t);
/* ids -> text, special tokens skipped, ids past the tokenizer's skipped
 * (a model's vocabulary padded past its tokenizer); *text malloc'd. */
encdec_status ttok_decode(const ed_ttok *t, const int *ids, int n, char **text);
/* ttok_decode with subst[i] (NULL: none; subst itself may be NULL) in
 * place of ids[i]: a token's spelling (ttok_encode_pieces'), written as it
 * reads with U+2581 a space whether or not the vocabulary has it, as
 * CTranslate2's replace_unknowns and a SentencePiece detokenizer give it
 * (Marian and the SentencePiece classes of text_sp.c); the kinds that
 * decode ids only (T5's SentencePiece, a tokenizer.json, BART's BPE) take
 * it as the token the vocabulary spells so, and skip it when there is
 * none. */
encdec_status ttok_decode_subst(const ed_ttok *t, const int *ids, int n, const char *const *subst,
                                char **text);
/* A spelling as it reads: s with every U+2581 as a space into dst (room
 * for strlen(s) bytes, not terminated); the bytes written. */
size_t ttok_unmark(char *dst, const char *s);
/* One token's text (U+2581 as a space; a special token's spelling), *len
 * bytes, borrowed; NULL when out of range. */
const char *ttok_token_text(const ed_ttok *t, int id, size_t *len);
/* Tokens by their spelling in the vocabulary ("\u2581Hello", "\u0120the",
 * "eng_Latn", "</s>"), as CTranslate2's token lists spell them: the id or
 * -1; an id's spelling (borrowed) or NULL out of range. */
int ttok_token_id(const ed_ttok *t, const char *s);
/* An input token's id: the encoder's vocabulary where a CTranslate2 model
 * has a separate source vocabulary, else ttok_token_id's. -1: none. */
int ttok_source_id(const ed_ttok *t, const char *s);
const char *ttok_token_spelling(const ed_ttok *t, int id);
/* 1 for a normal piece (text of its own: no byte piece, special or added
 * token), whose text next to another normal piece is theirs joined. */
int ttok_is_normal(const ed_ttok *t, int id);

#endif
