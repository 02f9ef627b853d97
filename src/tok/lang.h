/* lang.h - Whisper's languages: the codes in the tokenizer's order (its
 * <|en|>, <|zh|>, ... tokens), English names, and the other names
 * openai-whisper accepts for some of them. */
#ifndef ED_TOK_LANG_H
#define ED_TOK_LANG_H

/* The code of Whisper's i-th language ("en", "zh", ...; 100 of them, in the
 * tokenizer's order), or NULL past the end. */
const char *wlang_code(int i);
/* Its English name in lower case ("english", "chinese", ...), or NULL. */
const char *wlang_name(int i);
/* The index of a language code or English name ("de", "German", case
 * insensitive), or -1. */
int wlang_find(const char *name);
/* How many there are (100). */
int wlang_count(void);

#endif
