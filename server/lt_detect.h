/* lt_detect.h - LibreTranslate's language detection over the library's
 * text language identifier (encdec_langid_*): POST /detect's answer and the
 * source language of a /translate whose source is "auto". No I/O; tests
 * drive this.
 *
 * A text, as LibreTranslate's Detector: under 20 characters, lexilang's
 * guess among the server's languages where it knows a word (confidence
 * round(100 p)); else langdetect's three most likely languages of those
 * the server has ("zh-cn" is "zh", "zh-tw" "zt"), round(100 p) each; none:
 * "en" at 0. Several texts (a list, or a /translate's texts), as its
 * detect_languages: every text's guesses, those of one language merged in
 * the server's order (confidences averaged, lengths summed), most
 * confident first by confidence times length over all the guesses'
 * lengths.
 */
#ifndef SRV_LT_DETECT_H
#define SRV_LT_DETECT_H

#include "encdec.h"

#define SRV_LT_MAX_CODES 256   /* the server's languages LibreTranslate names */

typedef struct {
    char language[40];
    double confidence;        /* 0..100 */
    long text_length;         /* characters of the text(s) it stands for */
} srv_lt_guess;

typedef struct {
    char code[SRV_LT_MAX_CODES][40];
    int n;
} srv_lt_codes;

/* The codes LibreTranslate would list for model m, in its order: every
 * language's (srv_lt_code; Marian's source first), or a one-pair model's
 * source and target. */
void srv_lt_codes_of(const encdec_model *m, srv_lt_codes *c);

/* detect_languages(texts): batch 1 for a list (merged by language), 0 for
 * one text. *out malloc'd (3 a text at most), *n_out >= 1; ENCDEC_ERR_*
 * from the identifier (a text not UTF-8: ENCDEC_ERR_ARG). */
encdec_status srv_lt_detect(const encdec_langid *l, const char *const *texts, int n_texts, int batch,
                            const srv_lt_codes *codes, srv_lt_guess **out, int *n_out);

/* [{"confidence", "language"}] of g[0..n), the codes as LibreTranslate's
 * API spells them (srv_lt_iso). */
char *srv_lt_detect_body(const srv_lt_guess *g, int n);

#endif
