/* ops.h - the kernels of kern.h run across a session's pool. Each wrapper
 * slices the work by rows (many rows), output columns (few rows) or tiles
 * of a size set by the shape (BLAS) so that every thread runs the sequential
 * kernel on its own slice, and no output's bits depend on the thread count;
 * BLAS starts no threads of its own (we link the sequential, reentrant BLIS).
 *
 *   op_matmul(pool, y, x, w, b, M, N, K);      y[M,N] = x[M,K] . w[N,K]^T + b
 *   op_gelu(pool, x, M, N);
 *
 * Scratch passed in is owned by the caller and sized as documented; nothing
 * here allocates.
 *
 * A pool that carries a device (ed_pool_set_device, core/dev.h) runs every
 * op there instead (core/ops_dev.h: each op's twin in cuda/cuda.h): the
 * buffers, caches and weights are then the device's memory, the small int
 * arrays stay the host's (staged per call), CPU scratch is not used, and
 * the bitwise promises above become the device's: op_matmul_w_inv stays
 * batch-invariant; thread counts do not apply.
 */
#ifndef ED_OPS_H
#define ED_OPS_H

#include "base/pool.h"
#include "core/kvcache.h"
#include "kern/gemm.h"
#include "kern/kern.h"
#include <stddef.h>

void op_matmul(ed_pool *p, float *y, const float *x, const float *w, const float *b,
               int M, int N, int K);
void op_matmul_ex(ed_pool *p, float *y, int ldy, const float *x, int ldx, const float *w,
                  int ldw, const float *b, int M, int N, int K);
/* The same with a weight as stored (kern.h k_w; ldw = K): many rows
 * (encoders, prompts) go to the packed GEMM (kern/gemm.h) on the vector
 * sets, and so do 8-16 rows of f32 weights on AVX2 and AVX-512 (k_gemm's
 * few-row path, gemm_ws.c: decode steps of batches and beams); fewer rows to our
 * few-row kernels over column slices (f32: k_matmul_f, f16/bf16:
 * k_matmul_h); the rest (the C set) to BLAS over tiles of a size
 * set by the shape alone (f16/bf16: each thread expands the tile's columns
 * of w into its pool scratch first). The bits of y never depend on the
 * pool's thread count. */
void op_matmul_w(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                 int M, int N, int K);
/* op_matmul_w, batch-invariant: row r of y depends on row r of x only,
 * bitwise, whatever M is and wherever r sits (what a scheduler that decodes
 * several requests in one pass needs for each request's output to be what
 * it is alone). Products whose kernel choice or summation depends on M
 * (row-major f32 / f16 / bf16 weights) run in passes of at most
 * OP_INV_ROWS rows on the few-row kernels (f32 in the C kernel set: one
 * row a pass, BLIS's gemv; f32 on the AVX2 set from 10 rows: all rows at
 * once through kern.h's k_matmul_inv, the few-row kernel's sums over x
 * packed in each thread's pool scratch);
 * panel-major halves and int8 rows are invariant as they are and run in
 * one pass. */
#define OP_INV_ROWS 16
void op_matmul_w_inv(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                     const float *b, int M, int N, int K);
/* op_matmul_w for many rows (encoders), batch-invariant where
 * op_rows_invariant(w): row r of y is the same bitwise whatever M is and
 * wherever r sits, so inputs packed together encode as they do alone. f32 /
 * f16 / bf16 weights then go through the packed GEMM (kern/gemm.h) on
 * AVX2 and AVX-512, whether or not it is faster than BLAS there (on AVX2
 * it matches BLIS); panel-major, int8 and AMX-packed weights are invariant
 * as they are. Elsewhere (the portable set: BLIS, whose kernels change
 * with the shape) it is op_matmul_w and op_rows_invariant says 0. */
void op_matmul_w_rows(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                      const float *b, int M, int N, int K);
int op_rows_invariant(k_w w);
/* op_matmul_w with an epilogue: epi = K_GEMM_GELU | K_GEMM_ACC (kern/gemm.h:
 * GELU after the bias; ACC: y += x . w^T + b). Fused into the packed GEMM's
 * tile epilogue where that runs (many rows, AVX-512); elsewhere a pass of
 * its own after the product, which then goes through tmp (M x N floats,
 * row stride N; used, and needed, only with K_GEMM_ACC). */
void op_matmul_w_ex(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                    const float *b, int M, int N, int K, int epi, float *tmp);
/* The same over windows: row i of x is the K floats at x + i * ldx, and
 * windows may overlap (ldx < K: a convolution over frames of ldx channels,
 * tap-major weights). The packed GEMM reads them in place; elsewhere they
 * are first copied to col [M, K]. epi: K_GEMM_GELU or 0. */
void op_matmul_win(ed_pool *p, float *y, int ldy, const float *x, int ldx, k_w w,
                   const float *b, int M, int N, int K, int epi, float *col);
void op_layernorm(ed_pool *p, float *y, const float *x, const float *g, const float *b,
                  int M, int D, float eps);
void op_gelu(ed_pool *p, float *x, int M, int N);
/* y[0, n) += x[0, n) over the pool. */
void op_add(ed_pool *p, float *y, const float *x, size_t n);

/* Multi-head attention: o[Mq, n_head*dh] (ldo) from q [Mq, *] (ldq), k, v
 * [Tk, *] (ldk, ldv), head h at column h*dh of each. causal as k_attention.
 * scratch: per thread OP_ATTN_ROWS * Tk floats, scratch_stride apart. */
#define OP_ATTN_ROWS 64
void op_attention(ed_pool *p, float *o, int ldo, const float *q, int ldq, const float *k,
                  int ldk, const float *v, int ldv, int Mq, int Tk, int n_head, int dh,
                  float scale, int causal, float *scratch, size_t scratch_stride);

/* op_attention whose long non-causal products (the encoder's) take bf16
 * inputs when bf16 != 0 (the bf16 and int8 compute modes) and the CPU has
 * bf16 products (AMX or AVX512_BF16); elsewhere f32, as op_attention. */
void op_attention_lp(ed_pool *p, float *o, int ldo, const float *q, int ldq, const float *k,
                     int ldk, const float *v, int ldv, int Mq, int Tk, int n_head, int dh,
                     float scale, int causal, int bf16, float *scratch, size_t scratch_stride);

/* Cross attention of Mq query rows q [Mq, n_head * dh] (ldq) over layer l
 * of cross caches (any element type: f32 or halves expanded in registers),
 * keys [0, n_valid): o [Mq, n_head * dh] (ldo). Row r reads the cache
 * c[row_cache[r]] (row_cache NULL: all read c[0]); rows of one cache are
 * consecutive runs. One pool pass; work items are (run, head, block of
 * OP_ATTN_ROWS rows from the run's start); every K/V line is read once per
 * block. scratch: per thread OP_ATTN_ROWS * (the longest n_valid) floats,
 * scratch_stride apart. */
void op_attention_cross(ed_pool *p, float *o, int ldo, const float *q, int ldq,
                        const kv_cross *c, const int *row_cache, int l, int Mq, float scale,
                        float *scratch, size_t scratch_stride);

/* ---- the T5 family (ops_seq.c) ---- */

void op_rmsnorm(ed_pool *p, float *y, const float *x, const float *g, int M, int D, float eps);

typedef enum { OP_ACT_RELU, OP_ACT_GELU, OP_ACT_GELU_TANH, OP_ACT_SILU } op_act;
/* Feed-forward activation on h[M, ld]: act(h[:, 0:F]) in place; gated:
 * h[:, 0:F] = act(h[:, 0:F]) * h[:, F:2F] (the two input projections come
 * out of one fused product side by side). */
void op_ffn_act(ed_pool *p, float *h, int ld, int M, int F, op_act act, int gated);

/* Attention within packed segments (a batch of inputs of different lengths
 * without padding): segment s is rows [seg_start[s], seg_start[s] + seg_len[s])
 * of q, k, v and o, and its rows attend only to its own keys. bias: per head
 * a Toeplitz vector at bias + h * bias_hstride; query i and key j of a
 * segment add bias[bias_center + j - i] (NULL: none). Work items are
 * (segment, head, block of OP_ATTN_ROWS rows). scratch as op_attention. */
void op_attention_seg(ed_pool *p, float *o, int ldo, const float *q, int ldq, const float *k,
                      int ldk, const float *v, int ldv, int n_seg, const int *seg_start,
                      const int *seg_len, int n_head, int dh, float scale, const float *bias,
                      size_t bias_hstride, int bias_center, float *scratch,
                      size_t scratch_stride);

/* Decoder self-attention through a cache index table: row r is the query at
 * position pos[r] of a sequence whose position t is stored in cache slot
 * tab[tab_row[r] * tab_ld + t]; it attends to positions [0, pos[r]]. Head h
 * of slot s, position t is at kc (vc) + s * slot_stride + t * ld + h * dh.
 * bias: + bias[h * bias_hstride + bias_center - pos[r] + t] (NULL: none).
 * scratch: per thread min(n_head, OP_ATTN_ROWS) * (pos[r] + 1) floats or
 * more, scratch_stride apart. */
void op_attention_tab(ed_pool *p, float *o, int ldo, const float *q, int ldq,
                      const float *kc, const float *vc, size_t slot_stride, int ld, int R,
                      const int *pos, const int *tab, const int *tab_row, int tab_ld,
                      int n_head, int dh, float scale, const float *bias,
                      size_t bias_hstride, int bias_center, float *scratch,
                      size_t scratch_stride);

/* ---- row moves (ops_rows.c): what a forward pass does besides its
 * products, through here so that model code never touches its buffers
 * (another backend may hold them: cuda/cuda.h has each one's twin) ---- */

/* x[r] = row tok[r] of emb [n_vocab, d] (any k_w type) + pos_emb[pos[r]]
 * (pos_emb NULL: none), r < R. */
void op_embed(ed_pool *p, float *x, k_w emb, int n_vocab, const int *tok, const float *pos_emb,
              const int *pos, int R, int d);
/* Row r's K and V (qkv + r * ldqkv + koff, + voff; c->d floats) into layer
 * l of the self cache at position pos[r] of slot slot[r]. */
void op_kv_self_put(ed_pool *p, const kv_self *c, int l, const float *qkv, int ldqkv, int koff,
                    int voff, int R, const int *pos, const int *slot);
/* y[i] = norm(x[rows[i]]), i < n (the rows whose logits a step wants). */
void op_layernorm_rows(ed_pool *p, float *y, const float *x, const int *rows, int n,
                       const float *g, const float *b, int D, float eps);
void op_rmsnorm_rows(ed_pool *p, float *y, const float *x, const int *rows, int n, const float *g,
                     int D, float eps);
void op_scale(ed_pool *p, float *x, size_t n, float s);
void op_zero(ed_pool *p, float *x, size_t n);   /* n floats */
/* The cross caches' fill from the one K|V product of a pass: src rows
 * [0, rows) (ld floats apart; column block it * dh is layer it / (2H), K
 * or V (it / H) % 2, head it % H) are the pass's tokens [t0, t0 + rows);
 * its n inputs are tokens [start[i], start[i] + len[i]), each with its
 * cache c[i] (frame = token - start[i]). One pool pass. */
void op_cross_fill(ed_pool *p, const kv_cross *c, int n, const int *start, const int *len,
                   const float *src, size_t ld, int t0, int rows);

/* Host data into a pass (the mel): *in = src on the CPU; with a device,
 * src copied into dst (the device's memory, n floats) and *in = dst. */
encdec_status op_from_host(ed_pool *p, float *dst, const float *src, size_t n, const float **in);
/* A pass's result (logits, alignment scores) to the host: with a device,
 * src (its memory) copied to dst and the device's first failure since the
 * last check returned, named; on the CPU nothing (src is dst). */
encdec_status op_to_host(ed_pool *p, float *dst, const float *src, size_t n);

/* Waits for the work queued so far (a device's queue; nothing on the CPU,
 * where every op has returned done) and returns the device's first failure
 * since the last check: the end of a pass whose time is measured. */
encdec_status op_sync(ed_pool *p);

/* col[T_out, C_in*kw] over the pool (see k_im2col_1d). */
void op_im2col_1d(ed_pool *p, float *col, const float *x, int x_chan_major, int C_in,
                  int T_in, int kw, int stride, int pad, int T_out);

#endif
