/* ops.h - the kernels of kern.h run across a session's pool. Each wrapper
 * slices the work by rows (many rows) or output columns (few rows) so that
 * every thread runs the sequential kernel on its own slice; BLAS starts no
 * threads of its own (we link the sequential, reentrant BLIS).
 *
 *   op_matmul(pool, y, x, w, b, M, N, K);      y[M,N] = x[M,K] . w[N,K]^T + b
 *   op_gelu(pool, x, M, N);
 *
 * Scratch passed in is owned by the caller and sized as documented; nothing
 * here allocates.
 */
#ifndef ED_OPS_H
#define ED_OPS_H

#include "base/pool.h"
#include <stddef.h>

void op_matmul(ed_pool *p, float *y, const float *x, const float *w, const float *b,
               int M, int N, int K);
void op_matmul_ex(ed_pool *p, float *y, int ldy, const float *x, int ldx, const float *w,
                  int ldw, const float *b, int M, int N, int K);
void op_layernorm(ed_pool *p, float *y, const float *x, const float *g, const float *b,
                  int M, int D, float eps);
void op_gelu(ed_pool *p, float *x, int M, int N);

/* Multi-head attention: o[Mq, n_head*dh] (ldo) from q [Mq, *] (ldq), k, v
 * [Tk, *] (ldk, ldv), head h at column h*dh of each. causal as k_attention.
 * scratch: per thread OP_ATTN_ROWS * Tk floats, scratch_stride apart. */
#define OP_ATTN_ROWS 64
void op_attention(ed_pool *p, float *o, int ldo, const float *q, int ldq, const float *k,
                  int ldk, const float *v, int ldv, int Mq, int Tk, int n_head, int dh,
                  float scale, int causal, float *scratch, size_t scratch_stride);

/* Like op_attention but the keys and values of head h are contiguous
 * [Tk, dh] blocks at k + h * head_stride (the cross cache layout). */
void op_attention_hm(ed_pool *p, float *o, int ldo, const float *q, int ldq,
                     const float *k, const float *v, size_t head_stride, int Mq, int Tk,
                     int n_head, int dh, float scale, float *scratch, size_t scratch_stride);

/* col[T_out, C_in*kw] over the pool (see k_im2col_1d). */
void op_im2col_1d(ed_pool *p, float *col, const float *x, int x_chan_major, int C_in,
                  int T_in, int kw, int stride, int pad, int T_out);

#endif
