/* langid.h - the language of a text, as the detectors LibreTranslate runs
 * name it: langdetect's character n-gram profiles (55 languages, naive Bayes
 * over 1- to 3-grams sampled in seeded trials) and lexilang's word lists (46
 * languages, for short texts).
 *
 *   langid_model *m;  langid_load("~/.cache/encdec/models/langdetect", &m);
 *   double p[LANGID_MAX];  int n;
 *   langid_probs(m, text, len, p, &n);       p[i]: m->lang[i]'s probability
 *   langid_words(m, text, len, allow, &lang, &conf);
 *   langid_free(m);
 *
 * The directory is what scripts/fetch-model.sh langid installs from PyPI:
 * langdetect 1.0.9's profiles/ (one JSON file a language: n-gram counts and
 * the totals per length) and messages.properties (its character classes),
 * lexilang 1.0.7's words.tsv and weights.tsv (tools/lexilang_convert.py).
 *
 * langid_probs is langdetect's detect_langs() at DetectorFactory.seed 0, the
 * seed LibreTranslate sets: the same text clean-up (URLs and e-mail
 * addresses out, Vietnamese marks composed, spaces collapsed, the first
 * 10,000 characters, Latin letters dropped from a text mostly in another
 * script), the same n-grams (characters normalised by block, capital words
 * skipped), and the same seven trials of Python's Mersenne Twister, draw for
 * draw (base/pyrand.h): the probabilities agree with langdetect's to the
 * last bits of a double. langid_words is lexilang's detect(). The model is
 * read-only: any number of threads may call both at once.
 */
#ifndef ED_LANGID_H
#define ED_LANGID_H

#include "encdec.h"

#include <stddef.h>
#include <stdint.h>

#define LANGID_MAX 64          /* profiles (langdetect has 55) */
#define LANGID_WORD_LANGS 64   /* word-list languages (lexilang has 46) */

typedef struct langid_model langid_model;

struct langid_model {
    int n_lang;
    char lang[LANGID_MAX][16];   /* profiles' names ("en", "zh-cn"), sorted */
    /* the n-gram table: open addressing over keys of up to three code points */
    uint64_t *key;               /* [cap]; 0: empty */
    uint32_t *first;             /* [cap]: the n-gram's first entry in ent */
    uint8_t *count;              /* [cap]: its number of entries */
    uint32_t cap;
    struct { uint8_t lang; double p; } *ent;   /* per n-gram: its languages' probabilities */
    uint32_t n_ent;
    /* messages.properties */
    uint32_t latin1_excluded[8];
    int n_latin1_excluded;
    uint32_t *cjk_from, *cjk_to;  /* [n_cjk], sorted by cjk_from: a kanji, its class's first */
    int n_cjk;
    uint32_t vi_base[32], vi_mark[8], vi_to[8][32];   /* Vietnamese: letter + mark -> one */
    int n_vi_base, n_vi_mark;
    /* lexilang */
    int n_wlang;
    char wlang[LANGID_WORD_LANGS][16];
    double wweight[LANGID_WORD_LANGS];
    char **word;                 /* [wcap] open addressing; NULL empty */
    uint8_t **word_langs;        /* [wcap]: indices into wlang, 0xff-terminated */
    uint32_t wcap;
};

encdec_status langid_load(const char *dir, langid_model **out);
void langid_free(langid_model *m);

/* langdetect's probabilities of the n_lang languages for text[0..len)
 * (UTF-8), each trial's mean. ENCDEC_ERR_ARG for text that is not UTF-8;
 * *n_features 0 (and every p 0) when the text has no n-gram the profiles
 * know (langdetect's "No features in text."). */
encdec_status langid_probs(const langid_model *m, const char *text, size_t len, double *p,
                           int *n_features);

/* lexilang's detect(text, languages): the word lists' language with the most
 * of the text's words (ties to the most spoken), among allow[0..n_allow)
 * (NULL: all). *lang NULL and *conf 0 when no word is known; else *conf is
 * 0.9 over the number of languages tied. */
encdec_status langid_words(const langid_model *m, const char *text, size_t len,
                           const char *const *allow, int n_allow, const char **lang, double *conf);

/* ---- the text rules (langid_text.c) --------------------------------------------------- */

/* langdetect's text to detect: UTF-8 in, code points out (*out malloc'd, its
 * length *n): URLs and e-mail addresses replaced by spaces, Vietnamese
 * letters composed with their marks, runs of spaces made one, the first
 * 10,000 characters, then Latin letters dropped where other scripts
 * outnumber them twice. ENCDEC_ERR_ARG when text is not UTF-8. */
encdec_status langid_text(const langid_model *m, const char *text, size_t len, uint32_t **out,
                          size_t *n);

/* The n-grams of t[0..n) that the profiles know, in langdetect's order:
 * their table slots into ids (malloc'd), their number *n_ids. */
encdec_status langid_ngrams(const langid_model *m, const uint32_t *t, size_t n, uint32_t **ids,
                            size_t *n_ids);

/* The key of n-gram g[0..n) (1 <= n <= 3), and its table slot (UINT32_MAX:
 * not in the profiles). */
uint64_t langid_key(const uint32_t *g, int n);
uint32_t langid_find(const langid_model *m, uint64_t key);

#endif
