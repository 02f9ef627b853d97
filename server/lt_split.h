/* lt_split.h - a text for LibreTranslate's /translate (lt.h) cut into the
 * sentences it is translated by, as LibreTranslate's engine (Argos
 * Translate) cuts one: its lines apart, each line into sentences; what lies
 * between them (white space, line breaks) and a piece without a letter
 * (numbers, punctuation, symbols, emoji) kept as they were. Translation models are trained
 * on sentences, and a text longer than the model's positions is then
 * translated sentence by sentence rather than refused. No I/O, no model:
 * ep_lt.c runs the translations; tests drive this.
 *
 * A sentence ends after a run of . ! ? ... (U+2026) and any closing quotes
 * or brackets after it, where white space follows and then no lowercase
 * ASCII letter, and not after an abbreviation (a word of one letter, a
 * number of one or two digits as German and others write ordinals ("am
 * 3. Oktober"; so "to 10. Then" is not cut either: a missed cut costs less
 * than a wrong one), or a word holding a '.': "J." "e.g."; Mr Mrs Ms Dr Prof St Jr Sr vs etc Inc Ltd Co
 * No Nr Fig); after CJK's 。！？ whatever follows. Argos Translate cuts with
 * stanza's models where installed: these rules are the common cases of
 * those, not a copy.
 */
#ifndef SRV_LT_SPLIT_H
#define SRV_LT_SPLIT_H

#include <stddef.h>

typedef struct {
    size_t off, len;     /* a sentence's bytes in the text */
} srv_span;

typedef struct {
    const char *text;    /* borrowed */
    srv_span *s;         /* its sentences, in order */
    int n, cap;
} srv_sentences;

/* The sentences of text (NUL-terminated UTF-8), at most max: 0; -1 out of
 * memory; -2 more than max. out must be freed either way. */
int srv_lt_sentences(const char *text, int max, srv_sentences *out);
/* The text again with out[i] in place of sentence i, the rest as it was:
 * malloc'd, NULL when out of memory. */
char *srv_lt_rejoin(const srv_sentences *ss, const char *const *out);
void srv_sentences_free(srv_sentences *ss);

#endif
