/* xattn.h - a text decoder's cross-attention scores, captured for the first
 * heads of one layer: what CTranslate2 returns as a translation's attention
 * (its decoder's alignment_layer, the mean of its first alignment_heads
 * heads) and what its replace_unknowns reads. The text families' states
 * hold one (bart.h, t5.h); api/attention.c turns the scores into those
 * rows.
 *
 *   md_xattn x = {0};
 *   md_xattn_on(&x, dev, 1, layer, heads, max_rows, max_input);   before a pass
 *   md_xattn_scores(&x, pool, q, ldq, cross, row_input, l, R, dh, scale);   in it, layer l
 *   md_xattn_host(&x, pool);  md_xattn_head(&x, a);                after it
 *
 * Scores, not probabilities: row r of head a is q_r . k_t * scale for the
 * positions t of the input row r reads (its cross cache's valid rows), the
 * logits the attention's softmax takes. Through the ops layer, so a device
 * state captures on its device and copies to the host once a pass. */
#ifndef ED_XATTN_H
#define ED_XATTN_H

#include "base/pool.h"
#include "core/kvcache.h"
#include "encdec.h"

typedef struct {
    int on;
    int layer, heads;   /* the decoder layer, and its heads [0, heads) */
    int rows, ld;       /* the buffers' rows a pass and scores a row (the longest input) */
    int last;           /* rows the last pass captured (md_xattn_host copies those) */
    float *buf;         /* [heads, rows, ld], on the state's device */
    float *host;        /* its copy on the host (a device state), else NULL */
} md_xattn;

/* Capture on (allocating for rows x ld, grown when asked for more) or off. */
encdec_status md_xattn_on(md_xattn *x, void *dev, int on, int layer, int heads, int rows, int ld);
/* In decoder layer l of a pass of R rows (q [R, ldq], head h's columns at
 * h * dh; row r reads cross[row_input[r]]): the scores, when on and l is
 * the captured layer. */
void md_xattn_scores(md_xattn *x, ed_pool *p, const float *q, int ldq, const kv_cross *cross,
                     const int *row_input, int l, int R, int dh, float scale);
/* After the pass: the scores on the host (a device state's copied). */
encdec_status md_xattn_host(md_xattn *x, ed_pool *p);
/* Head a's scores on the host: [rows, ld], row r's first T valid. */
const float *md_xattn_head(const md_xattn *x, int a);
void md_xattn_free(md_xattn *x, void *dev);

#endif
