/* lt_format.h - the touches LibreTranslate gives a text translation after
 * its engine (its improve_translation_formatting), so that its clients get
 * what they would from it. No I/O; tests drive this.
 *
 * Of the source stripped of white space (none left: ""; an empty
 * translation: the source):
 * - its last character one of ! ? . , ; 。 and the translation's another:
 *   the translation's (when one of them) replaced by it, else added; the
 *   source without one and the translation with one: dropped;
 * - a source of one word under 20 characters whose translation repeats a
 *   word (the "salad" of some models: a word count twice the number of
 *   distinct words): the translation's first word alone;
 * - letter case: a source all lowercase (or all uppercase) makes the whole
 *   translation so; else its first character's case is the translation's
 *   first character's. Case is Python's str.islower / isupper over Latin,
 *   Greek and Cyrillic letters (the scripts with case beyond these are
 *   left as they are).
 */
#ifndef SRV_LT_FORMAT_H
#define SRV_LT_FORMAT_H

/* The translation of source as LibreTranslate touches it: malloc'd, NULL
 * when out of memory. */
char *srv_lt_format(const char *source, const char *translation);

#endif
