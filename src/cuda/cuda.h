/* cuda.h - the CUDA backend's kernels: the GPU twins of kern/ and core/ops,
 * on one device and one stream. Built only with -DENCDEC_CUDA=ON (nvcc, the
 * CUDA runtime and cuBLAS); the default build has none of it.
 *
 *   cu_dev *g = NULL;
 *   if (cu_dev_open(0, &g) != ENCDEC_OK) ... encdec_last_error() says why
 *   float *x = cu_alloc(g, bytes, "what");   cu_upload(g, x, host, bytes);
 *   cu_layernorm(g, y, x, gamma, beta, M, D, 1e-5f);  ...  cu_download(g, ...);
 *   cu_free(g, x);  cu_dev_close(g);
 *
 * Every pointer a kernel takes is device memory (cu_alloc), ints included
 * (positions, slots, index tables: cu_upload them, a few bytes a step).
 * Calls queue work on the device's stream and return at once; cu_download
 * and cu_sync wait for it. A launch or library error is recorded on the
 * device (sticky, the first one) and returned by the next cu_sync /
 * cu_download, named. Shapes are the callers': nothing here checks them
 * beyond what a launch needs.
 *
 * Each kernel's CPU twin (what tests/test_cuda.c compares it with on random
 * shapes) is named beside it. Semantics are the twin's; the summation order
 * is not, so results agree to rounding (f32: ~1e-5 relative), not bitwise.
 */
#ifndef ED_CUDA_H
#define ED_CUDA_H

#include "encdec.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cu_dev cu_dev;

/* Number of CUDA devices; 0 when there is none or no driver, with the
 * runtime's reason in why[cap]. */
int cu_device_count(char *why, size_t cap);
/* Opens device index: its stream, a cuBLAS handle, a workspace. A named
 * error (ENCDEC_ERR_ARG: no such device; ENCDEC_ERR_BACKEND: the driver or
 * library refused) and *out NULL otherwise. */
encdec_status cu_dev_open(int index, cu_dev **out);
void cu_dev_close(cu_dev *g);
/* "NVIDIA H100 80GB HBM3, sm_90, 79 GiB": for logs and benchmarks. */
const char *cu_dev_name(const cu_dev *g);
/* f32 products on tensor cores in TF32 (on: ~1e-3 relative; off, the
 * default: f32 throughout). */
void cu_dev_set_tf32(cu_dev *g, int on);

/* Device memory: NULL and a named error when the device has none left. */
void *cu_alloc(cu_dev *g, size_t bytes, const char *what);
void cu_free(cu_dev *g, void *p);
encdec_status cu_upload(cu_dev *g, void *dst, const void *src, size_t bytes);
/* Waits for the stream, then copies; returns the first error since the last check. */
encdec_status cu_download(cu_dev *g, void *dst, const void *src, size_t bytes);
encdec_status cu_sync(cu_dev *g);
/* Page-locked host memory (cudaMallocHost): the device's copies to and
 * from it run at the bus's rate, without the driver's bounce through its
 * own pinned pages (a decode step's logits come down into it). NULL and a
 * named error when the host has none left; freed with cu_host_free only. */
void *cu_host_alloc(cu_dev *g, size_t bytes, const char *what);
void cu_host_free(cu_dev *g, void *p);
void cu_memset0(cu_dev *g, void *p, size_t bytes);
/* Device memory to device memory, queued. */
void cu_copy(cu_dev *g, void *dst, const void *src, size_t bytes);
/* A small host array (ints, pointers) as device memory for the kernels
 * queued after this call: copied at once (the host array may change on
 * return), valid until another 4 MiB has been staged. NULL for 0 bytes
 * or after a failure (recorded). */
const void *cu_stage(cu_dev *g, const void *host, size_t bytes);
/* Makes g's device the calling thread's (each thread that queues work on g
 * first: the engine's and a session's threads). */
void cu_bind(cu_dev *g);
/* Records a failure that is not the runtime's (a shape or layout this
 * backend does not run), returned by the next cu_sync / cu_download. */
void cu_fail(cu_dev *g, const char *what);

/* Element types of weights and caches (values as kern.h's K_F32, K_F16,
 * K_BF16, K_Q8). CU_Q8 (weights only): int8 rows with a scale each, in
 * kern/q8.h's device layout (row n at n * k_q8_dev_row_bytes(K): the float
 * scale, then the K bytes padded to 4), the int8 mode's: a product
 * quantises each row of x as k_matmul_q8 does and sums exactly, so its
 * values are the CPU's bit for bit. */
typedef enum { CU_F32 = 0, CU_F16 = 1, CU_BF16 = 2, CU_Q8 = 3 } cu_type;
typedef struct {
    const void *p;   /* [N, K] row-major (ldw = K), device memory */
    cu_type t;
} cu_w;

/* y[M, N] (ldy) = x[M, K] (ldx) . w[N, K]^T + b, then epi: CU_EPI_GELU
 * (exact GELU), CU_EPI_ACC (y += the product + b instead of =). f16 / bf16
 * weights: x goes to the weight's type first (the device's workspace) and
 * the product accumulates in f32 (cublasGemmEx). Twin: k_matmul_ref
 * (+ k_gelu_ref). */
enum { CU_EPI_GELU = 1, CU_EPI_ACC = 2 };
void cu_matmul(cu_dev *g, float *y, int ldy, const float *x, int ldx, cu_w w, const float *b,
               int M, int N, int K, int epi);

/* (CU_Q8 weights: y = the int8 product with b inside it, as k_matmul_q8;
 * then y's old value added and GELU, as op_matmul_w_ex does on the CPU.) */

/* The same without epilogue, batch-invariant: row r of y depends on row r
 * of x only, bitwise, whatever M is and wherever r sits (each output's sum
 * runs in an order set by K alone; op_matmul_w_inv's contract). A decode
 * step's kernel. f32 weights, and halves with K % 16 != 0: x in f32, on
 * CUDA cores, the weights streamed once per 8 rows. Halves with K % 16 ==
 * 0 (CU_INV_TC; weights 32-byte aligned, as uploads are): x rounded to
 * the weight's type first, as cu_matmul does, on tensor cores, the
 * weights streamed once per 64 rows. Twin: k_matmul_ref (of x rounded
 * where CU_INV_TC). */
#define CU_INV_TC(t, K) (((t) == CU_F16 || (t) == CU_BF16) && (K) % 16 == 0)
void cu_matmul_inv(cu_dev *g, float *y, int ldy, const float *x, int ldx, cu_w w, const float *b,
                   int M, int N, int K);

/* Twin: k_layernorm. */
void cu_layernorm(cu_dev *g, float *y, const float *x, const float *gamma, const float *beta,
                  int M, int D, float eps);
/* The norm of rows rows[i] of x (D floats apart) into row i of y, i < n.
 * Twin: op_layernorm_rows (op_rmsnorm_rows). */
void cu_layernorm_gather(cu_dev *g, float *y, const float *x, const int *rows, int n,
                         const float *gamma, const float *beta, int D, float eps);
void cu_rmsnorm_gather(cu_dev *g, float *y, const float *x, const int *rows, int n,
                       const float *gamma, int D, float eps);
/* x[0, n) *= s. Twin: op_scale. */
void cu_scale(cu_dev *g, float *x, size_t n, float s);
/* Twin: k_rmsnorm (T5: no mean, no bias). */
void cu_rmsnorm(cu_dev *g, float *y, const float *x, const float *gamma, int M, int D, float eps);
/* y[0, n) += x[0, n). Twin: k_add. */
void cu_add(cu_dev *g, float *y, const float *x, size_t n);
/* Feed-forward activation, as op_ffn_act (act: 0 ReLU, 1 GELU, 2 GELU-tanh,
 * 3 SiLU, the values of op_act); gated: h[:, 0:F] = act(h[:, 0:F]) * h[:, F:2F]. */
void cu_ffn_act(cu_dev *g, float *h, int ld, int M, int F, int act, int gated);
/* Rows r of x[R, d] += pos[p[r]] after tok[r]'s row of the embedding
 * (emb [n_vocab, d] of type t): x[r] = emb[tok[r]] + pos_emb[p[r]]
 * (pos_emb NULL: none). Twin: k_w_row + k_add. */
void cu_embed(cu_dev *g, float *x, cu_w emb, const int *tok, const float *pos_emb,
              const int *pos, int R, int d);
/* Windows: col[M, K] row i = the K floats at x + i * ldx (they may
 * overlap: a convolution over frames). */
void cu_windows(cu_dev *g, float *col, const float *x, int ldx, int M, int K);
/* y[cols, rows] = x[rows, cols]^T (the mel, channel-major, to frames). */
void cu_transpose(cu_dev *g, float *y, const float *x, int rows, int cols);
/* Row-wise argmax of x[M, N] (ldx) into idx[M]; ties to the lowest index.
 * Twin: k_argmax. */
void cu_argmax(cu_dev *g, int *idx, const float *x, int ldx, int M, int N);

/* The per-row attention kernels' longest key range (keys, positions or
 * frames; the scores a block holds: 48 KiB of shared memory, less the
 * query): a call over more fails, named ("too many keys", "... positions",
 * "... frames"). cu_attention's tiled kernel (CU_ATT_TILED) has no limit. */
#define CU_ATT_MAX_KEYS 11776

/* Multi-head attention, head h at column h * dh of q, k, v and o; causal:
 * query i sees keys [0, i + Tk - Mq]. Passes of CU_ATT_TILED shape run
 * the tiled kernel, which takes any number of keys; the others hold at
 * most CU_ATT_MAX_KEYS. Twin: k_attention_ref. */
#define CU_ATT_TILED(Mq, dh) ((Mq) >= 16 && (dh) <= 64)
void cu_attention(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                  const float *v, int ldv, int Mq, int Tk, int n_head, int dh, float scale,
                  int causal);
/* Attention within packed segments, as op_attention_seg: rows [0, rows)
 * of the pass; segment s is rows [seg_start[s], seg_start[s] + seg_len[s])
 * (device arrays, n_seg entries; max_len bounds every seg_len) and attends
 * to its own keys only; bias NULL or per head a Toeplitz vector (query i,
 * key j of a segment: + bias[h * bias_hstride + bias_center + j - i]). Rows
 * of no segment are left as they are. Twin: op_attention_seg. */
void cu_attention_seg(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *k,
                      int ldk, const float *v, int ldv, int rows, int n_seg, const int *seg_start,
                      const int *seg_len, int max_len, int n_head, int dh, float scale,
                      const float *bias, size_t bias_hstride, int bias_center);
/* Decoder self-attention through an index table, as op_attention_tab:
 * row r (query at position pos[r]) reads position t of its sequence from
 * slot tab[tab_row[r] * tab_ld + t]; K of slot s, position t, head h at
 * kc + s * slot_stride + t * ld + h * dh (V likewise); bias NULL or as
 * op_attention_tab's. */
void cu_attention_tab(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *kc,
                      const float *vc, size_t slot_stride, int ld, int R, const int *pos,
                      const int *tab, const int *tab_row, int tab_ld, int n_head, int dh,
                      float scale, const float *bias, size_t bias_hstride, int bias_center);
/* Appends row r's K and V (qkv + r * ldqkv + koff, + voff; d floats) at
 * position pos[r] of slot slot[r]: kc + slot * slot_stride + pos * d. */
void cu_kv_self_put(cu_dev *g, float *kc, float *vc, size_t slot_stride, const float *qkv,
                    int ldqkv, int koff, int voff, int R, const int *pos, const int *slot, int d);
/* Cross attention over cross caches of type t, each laid out as kv_cross's
 * [n_layer, 2, n_head, n_ctx[c], dh] (its own length: a text model's
 * inputs differ): row r reads cache caches[row_cache[r]] (row_cache NULL:
 * caches[0]), layer l, its keys [0, n_valid[that cache]); max_valid bounds
 * every n_valid. caches (device pointers), n_ctx and n_valid: device
 * arrays, one entry per cache. Twin: op_attention_cross. */
void cu_attention_cross(cu_dev *g, float *o, int ldo, const float *q, int ldq,
                        const void *const *caches, const int *n_valid, cu_type t,
                        const int *row_cache, int l, int n_head, const int *n_ctx, int dh,
                        int max_valid, int Mq, float scale);
/* Stores src [rows, L * 2 * n_head * dh] (ld; column block it * dh is
 * layer it / (2H), K or V (it / H) % 2, head it % H) as frames [t0, t0 +
 * rows) of a cross cache of type t. Twin: kv_cross_put per block. */
void cu_cross_put(cu_dev *g, void *cache, cu_type t, int n_layer, int n_head, int n_ctx, int dh,
                  const float *src, size_t ld, int t0, int rows);

#ifdef __cplusplus
}
#endif
#endif
