/* ops_dev.h - inside core/: each op's device branch (ops_dev.c), taken
 * when the pool carries a device (core/dev.h). Arguments are the op's own:
 * activations, caches and weights in the device's memory; the small host
 * arrays (tokens, positions, slots, index tables, the per-row cache
 * numbers) are staged to the device here. Built with a backend only:
 * OP_DEV(p, call) runs call and returns from the op when p has a device,
 * and is nothing in a CPU-only build. */
#ifndef ED_CORE_OPS_DEV_H
#define ED_CORE_OPS_DEV_H

#include "core/ops.h"

#ifdef ENCDEC_HAVE_CUDA
#define OP_DEV(p, call)                                                                            \
    do {                                                                                           \
        void *dev_ = ed_pool_device(p);                                                            \
        if (dev_) {                                                                                \
            call;                                                                                  \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define OD(p) ed_pool_device(p)

void od_matmul_w(void *d, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                 int M, int N, int K, int epi);
void od_matmul_w_inv(void *d, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                     int M, int N, int K);
void od_matmul_f(void *d, float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                 const float *b, int M, int N, int K);
void od_matmul_win(void *d, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                   int M, int N, int K, int epi, float *col);
void od_layernorm(void *d, float *y, const float *x, const float *g, const float *b, int M, int D,
                  float eps);
void od_rmsnorm(void *d, float *y, const float *x, const float *g, int M, int D, float eps);
void od_ffn_act(void *d, float *h, int ld, int M, int F, int act, int gated);
void od_add(void *d, float *y, const float *x, size_t n);
void od_attention(void *d, float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                  const float *v, int ldv, int Mq, int Tk, int n_head, int dh, float scale,
                  int causal);
void od_attention_cross(void *d, float *o, int ldo, const float *q, int ldq, const kv_cross *c,
                        const int *row_cache, int l, int Mq, float scale);
void od_attention_seg(void *d, float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                      const float *v, int ldv, int n_seg, const int *seg_start, const int *seg_len,
                      int n_head, int dh, float scale, const float *bias, size_t bias_hstride,
                      int bias_center);
void od_attention_tab(void *d, float *o, int ldo, const float *q, int ldq, const float *kc,
                      const float *vc, size_t slot_stride, int ld, int R, const int *pos,
                      const int *tab, const int *tab_row, int tab_ld, int n_head, int dh,
                      float scale, const float *bias, size_t bias_hstride, int bias_center);
void od_im2col_1d(void *d, float *col, const float *x, int x_chan_major, int C_in, int T_in,
                  int kw, int stride, int pad, int T_out);
void od_embed(void *d, float *x, k_w emb, const int *tok, const float *pos_emb, const int *pos,
              int R, int dm);
void od_kv_self_put(void *d, const kv_self *c, int l, const float *qkv, int ldqkv, int koff,
                    int voff, int R, const int *pos, const int *slot);
void od_norm_rows(void *d, float *y, const float *x, const int *rows, int n, const float *g,
                  const float *b, int D, float eps, int rms);
void od_scale(void *d, float *x, size_t n, float s);
void od_zero(void *d, float *x, size_t n);
void od_cross_fill(void *d, const kv_cross *c, int n, const int *start, const int *len,
                   const float *src, size_t ld, int t0, int rows);
void od_unsupported(void *d, const char *what);
#else
#define OP_DEV(p, call) ((void)0)
#endif

#endif
