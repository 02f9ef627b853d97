/* xattn.h - a decoder's cross-attention scores, captured for a few heads:
 * what CTranslate2 returns as a translation's attention (its decoder's
 * alignment_layer, the mean of its first alignment_heads heads), what its
 * replace_unknowns reads, and Whisper's alignment heads (pairs of layer and
 * head across the decoder: word timestamps). The text families' states
 * and Whisper's hold one (bart.h, t5.h, whisper.h); api/attention.c and
 * asr/ turn the scores into rows.
 *
 *   md_xattn x = {0};
 *   md_xattn_on(&x, dev, 1, layer, heads, max_rows, max_input);   the first heads of a layer
 *   md_xattn_on_pairs(&x, dev, 1, pairs, n, max_rows, max_input); or (layer, head) pairs
 *   md_xattn_scores(&x, pool, q, ldq, cross, row_input, l, R, dh, scale);   in a pass, layer l
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
    int heads;          /* the heads captured: head a is (pair[2a], pair[2a + 1]), a layer
                           and a head of it */
    int *pair;          /* [2 * cap]: the heads' pairs, room for cap */
    int layer;          /* the deepest layer captured (a pass that needs nothing else may
                           stop after it) */
    int rows, ld;       /* the buffers' rows a pass and scores a row (the longest input) */
    int cap;            /* heads the buffers hold */
    int last;           /* rows the last pass captured (md_xattn_host copies those) */
    float *buf;         /* [cap, rows, ld], on the state's device */
    float *host;        /* its copy on the host (a device state), else NULL */
} md_xattn;

/* Capture of heads [0, heads) of one layer on (allocating for rows x ld,
 * grown when asked for more) or off. */
encdec_status md_xattn_on(md_xattn *x, void *dev, int on, int layer, int heads, int rows, int ld);
/* The same for the heads pairs[0, 2n): (layer, head) each. */
encdec_status md_xattn_on_pairs(md_xattn *x, void *dev, int on, const int *pairs, int n, int rows, int ld);
/* In decoder layer l of a pass of R rows (q [R, ldq], head h's columns at
 * h * dh; row r reads cross[row_input[r]], row_input NULL: cross[0]): the
 * scores of the captured heads of layer l, when on. */
void md_xattn_scores(md_xattn *x, ed_pool *p, const float *q, int ldq, const kv_cross *cross,
                     const int *row_input, int l, int R, int dh, float scale);
/* After the pass: the scores on the host (a device state's copied). */
encdec_status md_xattn_host(md_xattn *x, ed_pool *p);
/* Head a's scores on the host: [rows, ld], row r's first T valid. */
const float *md_xattn_head(const md_xattn *x, int a);
void md_xattn_free(md_xattn *x, void *dev);

#endif
