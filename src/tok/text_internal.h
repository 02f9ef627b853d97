/* text_internal.h - the ed_ttok structure shared by the text tokenizer files,
 * in layers (each calls only those listed below it):
 *
 *   text.c       the kinds and the calls every kind answers (encode, decode,
 *                one token's text); T5's wrapped SentencePiece, BART's BPE,
 *                Marian's pair of models over vocab.json
 *   text_sp.c    the SentencePiece classes of the fairseq translation
 *                models: NLLB, mBART-50, mBART, M2M100, Pegasus
 *   text_argos.c an Argos Translate package's: its SentencePiece model over
 *                the CTranslate2 vocabulary beside it, or its bpe.model
 *                (Moses' normaliser, tokenizer and detokenizer, subword-nmt
 *                BPE: moses_*.c, bpe_nmt.c)
 *   text_vocab.c a CTranslate2 vocabulary without tokenizer files: tokens only
 *   text_lang.c  language codes: the model's list, lookups, where the target
 *                language goes
 *   text_base.c  an ed_ttok's release; the vocab.json table of the mapped kinds
 *
 * The "mapped" kinds (Marian, Argos and text_sp.c's) segment with a SentencePiece
 * model and map each piece's spelling to the model's id through vocab.
 * Not for use outside src/tok/.
 */
#ifndef ED_TOK_TEXT_INTERNAL_H
#define ED_TOK_TEXT_INTERNAL_H

#include "tok/text.h"
#include "tok/bpe.h"
#include "tok/bpe_nmt.h"
#include "tok/moses.h"
#include "tok/vocab.h"

#include <stdint.h>

enum { TTOK_T5, TTOK_BART, TTOK_MARIAN, TTOK_NLLB, TTOK_MBART50, TTOK_MBART, TTOK_M2M100,
       TTOK_PEGASUS, TTOK_VOCAB /* a CTranslate2 vocabulary alone (text_vocab.c) */,
       TTOK_ARGOS /* an Argos Translate package: one SentencePiece model over it (text_argos.c) */,
       TTOK_ARGOS_BPE /* an Argos Translate package tokenized by bpe.model: Moses + BPE */ };

struct ed_ttok {
    int kind;                  /* TTOK_* */
    const spm_tok *spm;        /* T5: ids are the model's; borrowed */
    bpe_tok *bpe;              /* BART's byte-level BPE (owned); bos below, eos */
    /* the mapped kinds: */
    spm_tok *src, *tgt;        /* owned; src segments; Marian's target.spm is read
                                  (transformers requires it), decoding needs only
                                  the pieces' spellings */
    tok_vocab vocab;           /* piece or token spelling <-> model id */
    tok_vocab srcv;            /* a CTranslate2 model's separate source vocabulary (inputs'
                                  spellings -> encoder ids), when sep_src */
    int sep_src;
    tok_vocab text;            /* each id's text (U+2581 -> space) */
    int eos, unk, pad, bos;
    uint8_t *special;          /* [vocab.n] skipped by decoding (text_sp.c's kinds) */
    int *added;                /* [n_added] ids split out of the text before segmenting */
    int n_added;
    uint8_t added_first[256];  /* 1: some added token's spelling starts with this byte */
    int clean_up;              /* tokenizer_config's clean_up_tokenization_spaces */
    /* languages (text_lang.c) */
    int *lang_id;              /* [n_langs] the language tokens' ids */
    char **lang_code;          /* [n_langs] as users write them ("fr", "fra_Latn", "fr_XX") */
    int n_langs;
    int src_lang;              /* the default source language token, -1: none */
    int lang_suffix;           /* 1: x </s> [lang] (mBART, NLLB's legacy); 0: [lang] x </s> */
    char *pair[2];             /* Marian: tokenizer_config.json's source_lang, target_lang;
                                  Argos: metadata.json's from_code, to_code */
    int src_json;              /* text_sp.c: src is tokenizer.json (the fast class): its ids
                                  are the model's, and it splits its added tokens itself */
    int text_prefix[1];        /* Argos: metadata.json's target_prefix token (special: no text) */
    nmt_bpe *nmt;              /* Argos bpe.model: its codes (owned) */
    moses_data *moses;         /* Moses' data (owned) */
    moses_tok *mtok;           /* Moses' tokenizer for pair[0] (owned) */
    int n_text_prefix;         /* 0: none */
};

/* text_base.c (ttok_free too, declared in text.h) */

/* The source tokens of an encoding as spelled (ttok_encode_pieces), one
 * NUL-terminated text after another. */
typedef struct {
    char *buf;
    size_t n, cap;
    size_t *at;
    int count, cap_at;
} ttok_pieces;
/* s[0, len) as the next token's spelling. */
encdec_status ttok_pieces_put(ttok_pieces *p, const char *s, size_t len);
/* The list as one allocation of count pointers and their texts (*out),
 * p emptied. */
encdec_status ttok_pieces_take(ttok_pieces *p, char ***out);
void ttok_pieces_free(ttok_pieces *p);

/* s with every U+2581 as a space, into v at id. */
encdec_status ttok_put_text(tok_vocab *v, int id, const char *s, const char *file);
/* A JSON {spelling: id} file into t->vocab and t->text. */
encdec_status ttok_read_vocab_json(ed_ttok *t, const char *path);

/* text_lang.c */

/* The language list: codes[i] (copied) for token id ids[i]. */
encdec_status ttok_set_langs(ed_ttok *t, char **codes, const int *ids, int n);
/* Marian's: vocab.json's >>xx<< tokens. */
encdec_status ttok_marian_langs(ed_ttok *t);

/* text_argos.c: a bpe.model package's text (TTOK_ARGOS_BPE) as Argos
 * Translate's BPETokenizer: encode's units (pc as ttok_encode_pieces'),
 * decode's text (subst as ttok_decode_subst's). */
encdec_status ttok_argos_bpe_encode(const ed_ttok *t, const char *text, size_t len, int **ids, int *n,
                                    ttok_pieces *pc);
encdec_status ttok_argos_bpe_decode(const ed_ttok *t, const int *ids, int n, const char *const *subst,
                                    char **text);

/* text_sp.c */
/* pc (NULL: none) gets each id's source token (ttok_encode_pieces). */
encdec_status ttok_sp_encode(const ed_ttok *t, const char *text, size_t len, int src_lang, int **ids,
                             int *n, ttok_pieces *pc);
/* subst (NULL: none) as ttok_decode_subst's. */
encdec_status ttok_sp_decode(const ed_ttok *t, const int *ids, int n, const char *const *subst, char **text);

#endif
