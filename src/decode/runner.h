/* runner.h - the seam's implementation shared by every model family: token
 * histories, the cache index table, rows, the three cache modes, beams.
 *
 *   rn_model rm = whisper_rn_model(state);        the family: cross + decode
 *   dec_runner r;  rn_init(&r, &rm, ENCDEC_KV_FULL);
 *   rn_begin(&r, mode);                           per input: empties, fills the cross cache
 *   dec_model dm = rn_seam(&r);  ... dec_greedy / dec_beam / dec_sample
 *   rn_free(&r);
 *
 * A family provides two functions over its per-session state: `cross`
 * (fill the cross cache of every input from the encoder output) and
 * `decode` (one decoder pass over rows (token, position, slot) that appends
 * each row's K/V to its slot and reads earlier positions through the index
 * table). The runner owns everything else.
 *
 * Index table: tab[seq][t] is the cache slot that holds position t of
 * sequence seq. A sequence writes its new positions into its own slot and a
 * cell (slot, position) is written once; reorder (beam search) copies the
 * parents' table rows and token histories (a few ints per position), never
 * the K/V cache itself. A write that would overwrite a cell other sequences
 * may read is refused.
 *
 * FULL: cross cache once per input (rn_begin), self cache appended one
 *       position per step.
 * SELF: the cross K/V of all inputs and layers are recomputed before every
 *       feed and step (what the cross cache saves).
 * NONE: additionally, every sequence reruns its whole prefix from position
 *       0 at every step (nothing reused).
 * All three give the same tokens (the golden tests check it per family).
 */
#ifndef ED_RUNNER_H
#define ED_RUNNER_H

#include "base/pool.h"
#include "decode/seam.h"

typedef struct {
    void *ctx;
    int n_vocab;
    int n_slots;               /* sequences the state holds caches for */
    int n_ctx;                 /* positions per sequence */
    int max_rows;              /* rows one decode call accepts (>= n_slots, >= n_ctx) */
    const int *slot_input;     /* [n_slots] input each sequence decodes; NULL: one input */
    void (*cross)(void *ctx);
    void (*decode)(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                   const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits);
    ed_pool *pool;             /* the state's threads (the seam's par_for); NULL: the caller's */
    /* Optional (NULL: exact logits only). screen(ctx, on) before every decode
     * call: on, that pass may write screened logits (models/screen.h);
     * logit_err and logit_exact then answer for row i of its logits (seam.h). */
    void (*screen)(void *ctx, int on);
    float (*logit_err)(void *ctx, int row);
    void (*logit_exact)(void *ctx, int row, const int *ids, int n, float *out);
    /* Optional (NULL: none): the alignment heads' cross-attention scores of
     * the decode calls while on (models/xattn.h); head a's of row i at
     * scores(ctx, a, &ld) + i * ld. What rn_att keeps. */
    encdec_status (*scores_on)(void *ctx, int on);
    const float *(*scores)(const void *ctx, int a, int *ld);
    int n_heads;
} rn_model;

/* A generation's attention, kept as it decodes (encdec_generate_params'
 * return_attention): for each (sequence, position) its rows write, the
 * heads' mean softmax over the sequence's input: the attention of the
 * step that chose the token after that position. A cell of the cache is
 * written once (a beam that takes over another's history reads the
 * other's), so a hypothesis' rows are read along its beams' path. */
#define RN_ATT_HEADS 64
typedef struct {
    float *buf;     /* [n, n_pos, ld] */
    int *cols;      /* [n] each sequence's input columns (<= ld) */
    int *high;      /* [n] positions kept (rows recomputed below it are not: the NONE mode) */
    int n, ld, n_pos;   /* positions kept: the first n_pos */
} rn_att;

typedef struct {
    rn_model m;
    encdec_kv_mode mode;
    int *hist;              /* [n_slots, n_ctx] tokens fed per sequence */
    int *tab;               /* [n_slots, n_ctx] slot holding each position */
    int *len;               /* [n_slots] positions filled */
    int *high;              /* [n_slots] positions ever written to the slot */
    int *tmp;               /* [n_slots * (2 n_ctx + 1)] reorder snapshot */
    int *r_tok, *r_pos, *r_slot, *r_out;   /* [max_rows] row scratch */
    int n_steps;            /* step calls since rn_begin (one per generated position) */
    int screen;             /* rn_screen's: greedy decodes may take screened logits */
    int screened;           /* the last decode call's logits may be screened */
    int base;               /* a view: its sequence q is the parent's base + q (slot ids) */
    int view;
    int *tab0;              /* the whole index table (the parent's for a view): slots are
                               global, decode passes index it by slot */
    rn_att att;             /* kept attention (rn_att_begin), or none */
} dec_runner;

encdec_status rn_init(dec_runner *r, const rn_model *m, encdec_kv_mode mode);
void rn_free(dec_runner *r);
/* A view of sequences [base, base + n) of parent: a runner of its own
 * (sequences 0..n-1, one input, full cache mode) whose histories and index
 * rows live in the parent's tables, so that several views' rows can go
 * through one decode pass (the engine: one view per request, every view
 * over one model state). m: the view's family functions (its decode pass
 * and cross fill); m's n_slots and n_ctx are the view's. Views of disjoint
 * ranges may be used from different threads as long as one decode pass runs
 * at a time. rn_free frees the view's own buffers only. */
encdec_status rn_init_view(dec_runner *v, dec_runner *parent, int base, int n, const rn_model *m);
/* Appends one step's rows (token[i] for sequence seq[i]) to rows [at, at +
 * n_seq) of r_tok / r_pos / r_slot, as the seam's step would before its
 * pass: the caller runs the pass (with other views' rows), tab0 as the
 * index table. Full mode only. */
encdec_status rn_step_rows(dec_runner *r, int n_seq, const int *seq, const int *token, int at,
                           int *r_tok, int *r_pos, int *r_slot);
/* A new input (or batch) was encoded: empties every sequence, sets the mode
 * and, in FULL mode, fills the cross cache. */
void rn_begin(dec_runner *r, encdec_kv_mode mode);
dec_model rn_seam(dec_runner *r);
/* on: the seam's feed, feed_n and step may leave screened logits where one
 * decode call makes all of a call's rows (the family's choice, rn_model's
 * screen). For greedy decodes through dec_independent's tasks only (seam.h);
 * off (the default) for every other strategy. */
void rn_screen(dec_runner *r, int on);
/* Another decode of the same input: every sequence but `keep` (-1: none)
 * is emptied; the cross cache and keep's history (its cache rows, which
 * other sequences may then share through reorder) stay. */
void rn_restart(dec_runner *r, int keep);
/* Attention kept from now on (every decode call of this runner, or, for
 * a view, every pass of the engine holding its rows) for sequences
 * [0, n), sequence q over cols[q] input columns, positions [0, n_pos) (<
 * 1 or past n_ctx: n_ctx); rn_att_end stops and frees it (rn_free too). */
encdec_status rn_att_begin(dec_runner *r, int n, const int *cols, int n_pos);
void rn_att_end(dec_runner *r);
/* Rows [0, R) of a pass (their positions and global slots): head a's
 * scores of row i at heads[a] + i * ld; those of r's kept sequences go in. */
void rn_att_take(dec_runner *r, const float *const *heads, int n_heads, int ld, int R, const int *pos,
                 const int *slot);
/* Sequence q's kept row at position p ([cols[q]]), or NULL. */
const float *rn_att_row(const dec_runner *r, int q, int p);
/* o[0, T) += scale x softmax(v[0, T)), a weight below float's smallest
 * normal number left out (0, as CTranslate2, flushing denormals, has it:
 * a coverage penalty's log would make much of its trace). */
void rn_softmax_add(const float *v, int T, double scale, float *o);
/* feed, with the logits after each of tokens[first, n) (not only the last)
 * into logits[n - first, n_vocab]: for passes that read every position
 * (word alignment). */
encdec_status rn_feed_logits(dec_runner *r, int seq, const int *tokens, int n, int first,
                             float *logits);
/* Several sequences in one pass: seq[i] fed the next n[i] of tokens (in
 * order, each sequence's after the one before), with the logits after every
 * token, in that order, into logits[sum n, n_vocab] (NULL: none, a pass
 * for what the family captures of it): teacher-forced scoring of many
 * sequences at once. The rows must fit max_rows. */
encdec_status rn_feed_rows(dec_runner *r, int n_seq, const int *seq, const int *tokens, const int *n,
                           float *logits);

#endif
