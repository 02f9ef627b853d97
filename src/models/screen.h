/* screen.h - screened logits: the output projection of an f32 model read at
 * a quarter of its bytes by greedy decode steps, with the argmax kept exact.
 *
 *   md_screen sc;
 *   st = md_screen_build(wt, lm_head, V, d, MD_SCREEN_MIN, &sc);   at load; sc.w.p NULL: none
 *   op_matmul_w(pool, y, V, x, d, sc.w, bias, M, V, d);       the screened logits
 *   err = md_screen_err(&sc, lm_head, bias, x_row, y_row);   how far any of a row's can be off
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

/* A session's f32 pass screens up to this many rows: the unscreened product
 * of so few rows is k_matmul_ex's few-row kernel, whose column sums
 * md_screen_exact reproduces (from 8 rows it is k_gemm's, summed in
 * blocks). Batch-invariant passes (the engine's: every f32 row on the
 * few-row kernel, core/ops.h op_matmul_w_inv) and panel-major halves (one
 * kernel for any M) screen any number: there the int8 product also beats
 * the unscreened one on arithmetic (AVX2, 2 threads, 256206 x 1024: 16 rows
 * 54 ms against 227 ms). */
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
    int on;          /* the next pass may screen (rn_model's screen) */
    int screened;    /* the last pass did */
    float *err;      /* [cap]: its rows' bounds (md_screen_state_free) */
    int rows, cap;   /* its rows; err's room */
} md_screen_state;

/* The matrix a pass of n_out logit rows multiplies by: sc's copy where st is
 * on, sc has one (NULL: a device's state, none), the int8 kernel is fast
 * here and the pass's rows may screen (n_out <= MD_SCREEN_ROWS, or
 * invariant: the pass runs op_matmul_w_inv, or w is panel-major halves);
 * else w. Sets st->screened accordingly (0 too where the bounds' memory
 * cannot be had). */
k_w md_screen_pick(md_screen_state *st, const md_screen *sc, k_w w, int n_out, int invariant);
void md_screen_state_free(md_screen_state *st);
/* After a screened pass of w (the matrix sc stands for) and b: row r's
 * bound from x[r] (ldx) and y[r] (ldy), as md_screen_err (which may make
 * some of y's logits exact). */
void md_screen_bounds(md_screen_state *st, const md_screen *sc, k_w w, const float *b, const float *x,
                      int ldx, float *y, int ldy, int n_out);
/* Row r's bound after the last pass (0: exact). */
float md_screen_row_err(const md_screen_state *st, int row);

/* The screen of w [N, K] into memory owned by wt, where it pays: w is f32
 * (a half-precision matrix is read at half its bytes already), the CPU runs
 * the int8 product with vector instructions (k_q8_fast), the matrix has at least
 * min_elems elements (MD_SCREEN_MIN; tests: 0) and every weight is finite
 * (a model loaded unchecked may hold others); else sc->w.p = NULL and
 * ENCDEC_OK. */
encdec_status md_screen_build(ed_wtab *wt, k_w w, int N, int K, size_t min_elems, md_screen *sc);
/* The row y[N] = x[K] . screen^T + b of a screened pass, sc standing for w:
 * its logits beyond the screen's scale (above 64 (||x|| max_n ||w_n|| + 1):
 * a masking bias, which would make the bound's rounding term as large) or
 * not finite are replaced by their exact values (md_screen_exact: few);
 * returns the most any logit of the row can then differ from its exact
 * value (see above; the max |logit| taken over the others), INFINITY where
 * x is not finite (every token is then refined). */
float md_screen_err(const md_screen *sc, k_w w, const float *b, const float *x, float *y);
/* Bytes of sc's copy (0: none). */
size_t md_screen_bytes(const md_screen *sc);
/* out[i] = x . w[ids[i]] + b[ids[i]] (b may be NULL) as the product of one
 * row gives it: f32 w [N, K] (k_matmul_ex), or halves in panel-major order
 * (k_matmul_hp). */
void md_screen_exact(k_w w, const float *b, const float *x, int N, int K, const int *ids, int n,
                     float *out);

#endif
