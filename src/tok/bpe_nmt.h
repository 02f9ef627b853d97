/* bpe_nmt.h - subword-nmt's BPE (Sennrich et al.) as Argos Translate applies
 * a package's bpe.model (its apply_bpe, without vocabulary or glossaries):
 * a codes file lists merges "a b" one a line in rank order, after an
 * optional "#version: 0.2" line (none: version 0.1). A word (a run of text
 * between spaces) is split into code points, its end marked "</w>" (0.2: on
 * the last code point; 0.1: a unit of its own); then, while some adjacent
 * pair of units is a code, every occurrence of the lowest-ranked one is
 * merged, left to right, without overlap. Every unit but a word's last
 * ends in "@@"; "</w>" is taken out of the last.
 *
 *   nmt_bpe *b;  nmt_bpe_load(&b, "pkg/bpe.model");
 *   nmt_units u = {0};  nmt_bpe_segment(b, "Hello world !", 13, &u);
 *   for (int i = 0; i < u.n; i++) use nmt_unit(&u, i), u.len[i];
 *   nmt_units_free(&u);  nmt_bpe_free(b);
 *
 * Read-only after loading: shareable across threads (no cache: a word's
 * units are computed each time; the result is the same). Units are the
 * oracle's for the same file and text (tests/test_bpe_nmt.c against
 * Argos Translate's apply_bpe, tools/golden_bpe_nmt.py). Cost: a word of n
 * code points takes at most n - 1 merge passes of O(n) each.
 */
#ifndef ED_BPE_NMT_H
#define ED_BPE_NMT_H

#include "encdec.h"

#include <stddef.h>

typedef struct nmt_bpe nmt_bpe;

/* Reads a codes file (UTF-8 text; lines end in \n, \r\n or \r). Errors:
 * ENCDEC_ERR_TOKENIZER naming the file and, for a bad code, its line (not
 * exactly two fields separated by one space), a version other than 0.1 or
 * 0.2, text that is not UTF-8; ENCDEC_ERR_NOMEM. */
encdec_status nmt_bpe_load(nmt_bpe **out, const char *path);
/* The same from n bytes in memory; name is used in messages. */
encdec_status nmt_bpe_load_mem(nmt_bpe **out, const char *buf, size_t n, const char *name);
void nmt_bpe_free(nmt_bpe *b);

int nmt_bpe_version(const nmt_bpe *b);   /* 1 or 2 (0.1, 0.2) */
int nmt_bpe_n_codes(const nmt_bpe *b);   /* lines read as codes, duplicates included */

/* A text's units, one after another in buf, unit i at buf + at[i], len[i]
 * bytes, NUL-terminated. Owned by the caller; zero it before first use. */
typedef struct {
    char *buf;
    size_t used, cap;
    size_t *at, *len;
    int n, n_cap;
} nmt_units;
static inline const char *nmt_unit(const nmt_units *u, int i) { return u->buf + u->at[i]; }
void nmt_units_free(nmt_units *u);

/* Segments n bytes of UTF-8 text: stripped of spaces, CR and LF at both
 * ends, split at each space (empty words skipped), each word's units as
 * above, into *out (replacing what it held). ENCDEC_ERR_ARG on invalid
 * UTF-8; ENCDEC_ERR_NOMEM. */
encdec_status nmt_bpe_segment(const nmt_bpe *b, const char *text, size_t n, nmt_units *out);

/* The units joined by spaces with every "@@ " taken out (Argos Translate's
 * decoding before detokenisation): malloc'd, NULL on out of memory. */
char *nmt_bpe_join(const char *const *units, int n);

#endif
