/* screen.h - screened logits: the output projection of an f32 model read at
 * a quarter of its bytes by greedy decode steps, with the argmax kept exact.
 *
 *   md_screen sc;
 *   st = md_screen_build(wt, lm_head, V, d, MD_SCREEN_MIN, &sc);   at load; sc.w.p NULL: none
 *   op_matmul_w(pool, y, V, x, d, sc.w, bias, M, V, d);       the screened logits
 *   err = md_screen_err(&sc, x_row, y_row);                   how far any of a row's can be off
 *   md_screen_exact(lm_head, bias, x_row, d, ids, n, out);    the exact logits of a few tokens
 *
 * A step of one greedy sequence reads the whole output projection (NLLB's
 * 256206 x 1024 is 1 GB in f32, 60% of its decoder's bytes), and memory
 * bandwidth sets its pace. The screen is an int8 copy of that matrix
 * (kern/q8.h: a scale per row, the activations quantised per row on the fly,
 * exact int32 sums): a quarter of the bytes. With x^ and w^_n the values the
 * kernel multiplies (x^ . w^_n exactly, then one scaling), its logits differ
 * from the f32 product's by at most
 *   ||x|| * max_n ||w_n - w^_n||                 (the weights' rounding)
 *   + ||x - x^|| * max_n ||w^_n||                (the activations')
 *   + 2 g(K + 1) * ||x|| * max_n ||w_n||         (the f32 product's sums, any order)
 *   + 4 u * (||x|| + ||x - x^||) * max_n ||w^_n|| (the scaling of the exact sum)
 *   + 8 u * max |logit|                          (the bias, the comparisons)
 * (Cauchy-Schwarz; g(k) = k u / (1 - k u), u = 2^-24), so only the tokens
 * within twice that of the best can be the greedy choice: decode/batch.c
 * asks for their f32 logits (md_screen_exact: k_matmul_ex, whose few-row
 * kernel sums a column the same whatever the columns beside it, so these are
 * bit for bit what the f32 product of the pass would have given) and picks
 * among them. The tokens are then the unscreened decode's; the others'
 * values stay screened, so a chosen token's log-probability can be off by
 * the bound. Costs: the copy (a quarter of the f32 matrix's bytes, made at
 * load) and a few dot products a step. */
#ifndef ED_SCREEN_H
#define ED_SCREEN_H

#include "io/tensor.h"
#include "kern/kern.h"

/* Screens pay where one greedy step's rows are at most this many (beyond,
 * the product is no longer bound by reading the matrix). */
#define MD_SCREEN_ROWS 4
/* and where the matrix has at least this many elements (opus-mt's 58101 x
 * 512 has 30 M; smaller ones are read from the caches) */
#define MD_SCREEN_MIN (1 << 20)

typedef struct {
    k_w w;          /* [N, K] int8 (K_Q8, kern/q8.h's layout); {NULL}: no screen */
    double dmax;    /* max over rows n of ||w_n - w^_n|| (w^_n: the row as the kernel has it) */
    double hmax;    /* max over rows n of ||w^_n|| */
    double wmax;    /* max over rows n of ||w_n|| */
    int N, K;
} md_screen;

/* A model state's screened passes: the runner's switch, the last pass's
 * rows' bounds. */
typedef struct {
    int on;                        /* the next pass may screen (rn_model's screen) */
    int screened;                  /* the last pass did */
    float err[MD_SCREEN_ROWS];     /* its rows' bounds */
} md_screen_state;

/* The matrix a pass of n_out logit rows multiplies by: sc's copy where st is
 * on, sc has one (NULL: a device's state, none), n_out <= MD_SCREEN_ROWS and
 * the int8 kernel is fast here; else w. Sets st->screened accordingly. */
k_w md_screen_pick(md_screen_state *st, const md_screen *sc, k_w w, int n_out);
/* After a screened pass: row r's bound from x[r] (ldx) and y[r] (ldy). */
void md_screen_bounds(md_screen_state *st, const md_screen *sc, const float *x, int ldx,
                      const float *y, int ldy, int n_out);
/* Row r's bound after the last pass (0: exact). */
float md_screen_row_err(const md_screen_state *st, int row);

/* The screen of w [N, K] into memory owned by wt, where it pays: w is f32
 * (a half-precision matrix is read at half its bytes already), the CPU runs
 * the int8 product with vector instructions (k_q8_fast), the matrix has at least
 * min_elems elements (MD_SCREEN_MIN; tests: 0) and every weight is finite
 * (a model loaded unchecked may hold others); else sc->w.p = NULL and
 * ENCDEC_OK. */
encdec_status md_screen_build(ed_wtab *wt, k_w w, int N, int K, size_t min_elems, md_screen *sc);
/* The most any screened logit of the row y[N] = x[K] . screen^T + b can
 * differ from the f32 product's exact value (see above); INFINITY where x
 * or y holds a value that is not finite (every token is then refined). */
float md_screen_err(const md_screen *sc, const float *x, const float *y);
/* Bytes of sc's copy (0: none). */
size_t md_screen_bytes(const md_screen *sc);
/* out[i] = x . w[ids[i]] + b[ids[i]] (b may be NULL) as the product of one
 * row gives it: f32 w [N, K] (k_matmul_ex), or halves in panel-major order
 * (k_matmul_hp). */
void md_screen_exact(k_w w, const float *b, const float *x, int N, int K, const int *ids, int n,
                     float *out);

#endif
