/* agree.h - the words of a live session's hypotheses and the rules that
 * make them final (LocalAgreement-n, whisper_streaming's policy): which
 * words of a new decode are new (after the final text, an echo of its last
 * words dropped), and how many leading words successive decodes agree on.
 * Pure functions over word lists: no model, no audio, no engine. */
#ifndef ED_LIVE_AGREE_H
#define ED_LIVE_AGREE_H

#include <stddef.h>

typedef struct {
    char *text;          /* UTF-8, its leading space kept */
    double start, end;   /* seconds of the stream */
} live_word;

typedef struct {
    live_word *w;
    int n, cap;
} live_words;

void live_words_free(live_words *l);
void live_words_clear(live_words *l);
/* Appends a copy of text: 0, or -1 (no memory). */
int live_words_push(live_words *l, const char *text, double start, double end);
/* Drops the first k words. */
void live_words_drop(live_words *l, int k);
/* The words [from, to) joined (leading spaces as they are), malloc'd; "" when empty. */
char *live_words_text(const live_words *l, int from, int to);

/* 1 when a and b are the same word, case and punctuation aside. */
int live_word_eq(const char *a, const char *b);

/* Of a decode's words, those after the final text (which ends at
 * final_end; tail: its last words), in place. The decode may hold the
 * final text again: where the tail's last words (the most of them, up to
 * 5) recur in it ending within 1 s of final_end, what is up to there goes;
 * when they do not recur, the words whose middle is before final_end go,
 * but from the first of them that begins what the decode before had
 * after the final text (pending, may be NULL): a decode that skipped the
 * final words it heard times the next ones too early, and they are not
 * lost. */
void live_words_after(live_words *hyp, const live_words *tail, double final_end,
                      const live_words *pending);

/* 1 when a decode heard pending's words (the decode before had them after
 * the final text) and left out the first of them, what a prompt ending in
 * nearly the same phrase makes Whisper do ("...what your country can do
 * for you" given, "ask what you can do for your country" heard, "your
 * country." or "country." said, its first word timed over the words it
 * left out): hyp's first word is not pending's first, and either hyp's
 * words are pending's from a word j >= 1 on (as many as both hold), or
 * its first word's time holds two or more of pending's words. pending may
 * be NULL. */
int live_words_skip(const live_words *hyp, const live_words *pending);

/* 1 when hyp's first word is tail's last word again (the same word,
 * begun within max_s of where it began): an echo whatever its end. */
int live_words_echo(const live_words *hyp, const live_words *tail, double max_s);

/* The first word of hyp, from word `from`, that lasts min_s or more
 * (a decode that skipped speech times a word over it), or -1. */
int live_words_long(const live_words *hyp, int from, double min_s);

/* How many leading words every list of hyps[n] has in common (n >= 1). */
int live_agree(const live_words *const *hyps, int n);

#endif
