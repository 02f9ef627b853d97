/* vocab.h - the id <-> spelling table under both tokenizers (bpe_*, spm_*):
 * spellings packed in one growing buffer, found by id through offset / length
 * arrays and by spelling through an open-addressing hash.
 *
 *   tok_vocab v = {0};  int added;
 *   tv_put(&v, 7, "hello", 5, "vocab.json", &added);  tv_lookup(&v, "hello", 5) == 7
 *   tv_check(&v, "vocab.json");  ...  tv_free(&v);
 *
 * Ids may come in any order, leaving holes until tv_check. Each tokenizer keeps
 * its own per-id data (flags, scores, types) in arrays it sizes to v.cap.
 * Read-only after loading: lookups may run on any number of threads.
 * Not for use outside src/tok/.
 */
#ifndef ED_TOK_VOCAB_H
#define ED_TOK_VOCAB_H

#include "encdec.h"

#include <stddef.h>
#include <stdint.h>

#define TV_MAX_ID (1 << 24)     /* ids are 0 .. TV_MAX_ID - 1 */
#define TV_HOLE UINT32_MAX      /* off[] of an id not put yet */

typedef struct {
    int n;                      /* ids 0 .. n-1: the highest id put + 1 */
    int cap;                    /* ids with room in off[] and len[] */
    uint32_t *off;              /* [cap] offset into spell, TV_HOLE for a hole */
    uint32_t *len;              /* [cap] spelling length in bytes */
    char *spell;                /* [spell_cap] spellings, each NUL-terminated */
    size_t spell_used, spell_cap;
    int32_t *hash;              /* [hash_cap] ids by spelling, -1 = empty */
    size_t hash_cap, n_hashed;
} tok_vocab;

/* One merge of a tokenizer.json BPE model, "a b" (tokenizers before 0.20)
 * or ["a", "b"]: its sides, borrowed from m (*na, *nb bytes); 0 when it is
 * neither (the string with other than one inner space included). */
struct cJSON;
int tv_merge_sides(const struct cJSON *m, const char **a, size_t *na, const char **b, size_t *nb);

/* Gives id the n-byte spelling s; *added tells whether id was new. Giving an
 * id the spelling it already has changes nothing (*added = 0); a different
 * one, an id outside 0 .. TV_MAX_ID-1 or a buffer past 4 GiB is
 * ENCDEC_ERR_TOKENIZER naming file; ENCDEC_ERR_NOMEM likewise. A spelling put
 * at several ids is found under the first one put, or under the lowest once
 * the hash has been rebuilt (as it grows, or by tv_reindex). */
encdec_status tv_put(tok_vocab *v, int id, const char *s, size_t n, const char *file, int *added);

/* Id of the n-byte spelling s, or -1. Valid at any stage. */
int tv_lookup(const tok_vocab *v, const char *s, size_t n);

/* Ends loading: the vocabulary must be non-empty and have no holes. */
encdec_status tv_check(const tok_vocab *v, const char *file);

/* Rebuilds the hash in id order, so that each spelling is found under its
 * lowest id; 0 on out of memory (the table is unchanged). */
int tv_reindex(tok_vocab *v);

/* Frees the arrays (not v itself); v is then empty. */
void tv_free(tok_vocab *v);

/* The NUL-terminated spelling of id (borrowed), or NULL when id has none. */
static inline const char *tv_spelling(const tok_vocab *v, int id) {
    return id >= 0 && id < v->n && v->off[id] != TV_HOLE ? v->spell + v->off[id] : NULL;
}

/* Its length in bytes (a spelling may hold NUL bytes); id must have one. */
static inline size_t tv_len(const tok_vocab *v, int id) { return v->len[id]; }

#endif
