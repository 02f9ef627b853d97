/* moses.h - the Moses text rules as sacremoses runs them (0.1.x, the
 * version Argos Translate 1.11 pins), for the translation packages whose
 * tokenizer is Moses + BPE (a bpe.model, tok/bpe_nmt.h): so far the
 * punctuation normaliser.
 *
 *   char *s;  moses_normalize("en", text, strlen(text), &s);  ...  free(s);
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
 * bytes of UTF-8 in; *out malloc'd, NUL-terminated. ENCDEC_ERR_ARG on
 * invalid UTF-8; ENCDEC_ERR_NOMEM. */
encdec_status moses_normalize(const char *lang, const char *text, size_t n, char **out);

#endif
