/* moses.h - the Moses text rules as sacremoses runs them (0.1.x, the
 * version Argos Translate 1.11 pins), for the translation packages whose
 * tokenizer is Moses + BPE (a bpe.model, tok/bpe_nmt.h): the punctuation
 * normaliser (moses_norm.c), the tokenizer (moses_tok.c) and the
 * detokenizer (moses_detok.c) over the data of scripts/fetch-model.sh moses
 * (moses_data.c).
 *
 *   char *s;  moses_normalize("en", text, strlen(text), &s, NULL);  ...  free(s);
 *   moses_data *d;  moses_data_load("~/.cache/encdec/models/sacremoses-0.1.1", &d);
 *   moses_tok *t;  moses_tok_new(d, "en", &t);
 *   char *toks;  moses_tokenize(t, text, n, &toks);  ...  free(toks);
 *   moses_tok_free(t);
 *   char *text;  moses_detokenize(d, "en", toks, strlen(toks), &text);  ...  free(text);
 *   moses_data_free(d);
 *
 * Each function gives what sacremoses gives for the same text and language
 * (tests/test_moses.c against sacremoses itself, tools/golden_moses.py).
 * Pure: any number of threads.
 */
#ifndef ED_TOK_MOSES_H
#define ED_TOK_MOSES_H

#include "encdec.h"

#include <stddef.h>

/* MosesPunctNormalizer(lang).normalize(text) with its defaults (Penn
 * quotes, quotes before commas, numbers): the substitutions in order over
 * the whole text (spaces around brackets and before : and ;, typographic
 * quotes, dashes, apostrophes and ellipses to ASCII, French guillemets and
 * the no-break spaces around them, the quote moved after a comma or period
 * (English) or before it (de, es, fr), a no-break space between digits to
 * a period (a comma for de, es, cz, cs, fr)), then Python's strip(). n
 * bytes of UTF-8 in; *out malloc'd, NUL-terminated, its length in *out_n
 * (when not NULL: a NUL byte of the text stays, as in Python).
 * ENCDEC_ERR_ARG on invalid UTF-8; ENCDEC_ERR_NOMEM. */
encdec_status moses_normalize(const char *lang, const char *text, size_t n, char **out, size_t *out_n);

/* The data sacremoses' tokenizer reads (tools/moses_convert.py's folder:
 * classes.tsv, prefixes.tsv, langs.tsv). Errors: ENCDEC_ERR_CONFIG naming
 * the file and line; ENCDEC_ERR_IO; ENCDEC_ERR_NOMEM. Read-only after. */
typedef struct moses_data moses_data;
encdec_status moses_data_load(const char *dir, moses_data **out);
void moses_data_free(moses_data *d);

/* MosesTokenizer(lang): the language's nonbreaking prefixes (a name or code
 * sacremoses knows; any other: English's, as sacremoses does), its
 * apostrophe rules (en; fr, it; the rest) and, for zh, ja, ko and cjk, the
 * CJK scripts counted as letters. d must outlive it. */
typedef struct moses_tok moses_tok;
encdec_status moses_tok_new(const moses_data *d, const char *lang, moses_tok **out);
void moses_tok_free(moses_tok *t);

/* MosesTokenizer.tokenize(text) with its defaults (no aggressive dash
 * splits, XML escaping, no protected patterns): the tokens joined by single
 * spaces into *out (malloc'd). ENCDEC_ERR_ARG on invalid UTF-8. */
encdec_status moses_tokenize(const moses_tok *t, const char *text, size_t n, char **out);

/* MosesDetokenizer(lang).detokenize(tokens) with its defaults (XML
 * unescaped): tokens are the n bytes of text split at Python's whitespace;
 * each goes left or right by the language's rules (punctuation, currency
 * and opening brackets, quotes by their count, en contractions and
 * possessives, fr/it/ga elisions and French spacing before ?!:;%\, Czech
 * decimals, Finnish case suffixes after a colon, CJK without spaces but for
 * ko). Where sacremoses 0.1.1 raises (Czech "-li" after an elision: its
 * next() on a list), the dash is joined as Moses' Perl script does. *out
 * malloc'd. ENCDEC_ERR_ARG on invalid UTF-8 or a NUL byte. */
encdec_status moses_detokenize(const moses_data *d, const char *lang, const char *text, size_t n,
                               char **out);

#endif
