/* kern.h - compute kernels: pure functions, output first, sizes explicit, no
 * model knowledge, no allocation, no threads (callers slice the work; see
 * core/ops.h for the pool-parallel wrappers).
 *
 *   k_matmul(y, x, w, b, M, N, K);          y[M,N] = x[M,K] . w[N,K]^T + b[N]
 *   k_layernorm(y, x, g, b, M, D, 1e-5f);
 *   k_attention(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, causal, scratch);
 *
 * Every fast kernel has a scalar twin (*_ref) compiled beside it; the tests
 * check one against the other, and benchmarks time both. Matrix products go
 * through a sequential BLAS (cblas_sgemm): one dispatch point, k_matmul_*.
 */
#ifndef ED_KERN_H
#define ED_KERN_H

#include <stddef.h>
#include <stdint.h>

/* Kernel sets, lowest first. Each dispatch point runs the best version at
 * or below k_isa(): the CPU's best set, capped by the calling thread's
 * limit (base/isa.h: a model's parameter, handed to its pool's threads). */
enum {
    K_ISA_C = 0,        /* portable C (what the compiler makes of it) */
    K_ISA_VEC = 1,      /* x86-64: AVX2 + FMA + F16C; aarch64: NEON */
    K_ISA_AVX512 = 2,   /* AVX-512 F/BW/VL/DQ (+ VNNI, BF16 where a kernel needs them) */
    K_ISA_AMX = 3,      /* AMX-TILE + AMX-BF16 (bf16 mode), where Linux grants the tiles */
};
int k_isa_cpu(void);              /* the best set this CPU has (AMX: by CPUID) */
int k_isa(void);                  /* min(k_isa_cpu(), this thread's limit) */
int k_isa_at(int isa);            /* min(isa, k_isa()): the *_isa entry points' cap */
int k_isa_peak(int reset);        /* the highest k_isa() answered since the last reset
                                     (-1: none); reset: starts again (for tests) */
const char *k_isa_name(int level);   /* "c", "avx2" (aarch64: "neon"), "avx512", "amx" */
int k_isa_parse(const char *name);   /* the level of a name, -1 if none */

/* Optional extensions inside a level, each used by the kernels that gain
 * from it and only where the CPU reports it (aarch64: getauxval(AT_HWCAP)):
 * K_FEAT_DOTPROD (aarch64 sdot: the int8 product), K_FEAT_BF16 (aarch64
 * BFDOT: the bf16 mode's decode product), K_FEAT_AVXVNNI (x86-64
 * AVX-VNNI, vpdpbusd on ymm without AVX-512: the int8 product on Intel
 * client CPUs from Alder Lake, AMD Zen 5). k_feat(f): 1 when the CPU has every extension in f, the
 * level is K_ISA_VEC or higher, and the process-wide mask allows them.
 * k_feat_mask(m) lets only the extensions in m be used (tests force a path
 * off with it to run the one beneath); returns the previous mask. */
enum { K_FEAT_DOTPROD = 1u, K_FEAT_AVXVNNI = 2u, K_FEAT_BF16 = 4u, K_FEAT_ALL = ~0u };
unsigned k_feat_cpu(void);
int k_feat(unsigned f);
unsigned k_feat_mask(unsigned mask);

/* y[M,N] (row stride ldy) = x[M,K] (ldx) . w[N,K]^T (ldw) + b[N] (b may be NULL).
 * w is a PyTorch Linear weight [out, in], row-major. Up to K_MF_ROWS (16)
 * rows on a vector set: our own few-row kernel (kern/matmul_f_impl.h: at
 * read bandwidth, batch-invariant); otherwise BLIS. */
void k_matmul_ex(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                 const float *b, int M, int N, int K);
void k_matmul(float *y, const float *x, const float *w, const float *b, int M, int N, int K);
/* k_matmul_ex for any M with every row's bits those of the row alone
 * (k_matmul_ex at M = 1), whatever M and the row's place: the few-row
 * kernel's passes, or on the AVX2 set the same sums over x packed into
 * scratch for whole panels of 16 rows and a rest of at least 10
 * (kern/matmul_f_impl.h's MF_PANEL part; scratch: k_matmul_inv_scratch(M,
 * K) bytes, 64-byte aligned, NULL when that is 0 or to do without); the C
 * set: one row at a time. */
size_t k_matmul_inv_scratch(int M, int K);
void k_matmul_inv(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                  const float *b, int M, int N, int K, void *scratch);
void k_matmul_ref(float *y, int ldy, const float *x, int ldx, const float *w, int ldw,
                  const float *b, int M, int N, int K);

/* A weight matrix [N, K] (rows are output features): f32, or 16-bit halves
 * (f16 or bf16) expanded to f32 in registers by the kernels, row-major or
 * panel-major (K_F16P / K_BF16P: kern/matmul_hp.h's layout for decode-only
 * matrices), or int8 with a scale per row in kern/q8.h's packed layout (p is
 * a k_q8's data), or bf16 in the AMX tile layout of k_gemm (K_BF16A:
 * kern/gemm.h k_gemm_amx_pack; only where the AMX path runs, lowp set).
 * lowp (bf16 only): products over many rows may round x to bf16 too
 * (kern/gemm.h K_GEMM_BF16): the bf16 compute mode. */
typedef enum { K_F32 = 0, K_F16, K_BF16, K_Q8, K_F16P, K_BF16P, K_BF16A } k_wtype;
typedef struct {
    const void *p;
    k_wtype t;
    int lowp;
} k_w;

/* Bytes per element as stored (int8: the scales add 4 bytes per row). */
static inline size_t k_w_size(k_wtype t) { return t == K_F32 ? 4 : t == K_Q8 ? 1 : 2; }

/* Row n of w [N, K] as f32 into dst[K] (embedding lookups read the same
 * matrix as the output projection, in any type). */
void k_w_row(float *dst, k_w w, int n, int N, int K);

/* y[M,N] (ldy) = x[M,K] (ldx) . w[N,K]^T (ldw, f16 when !bf16, else bf16)
 * + b[N] (may be NULL), for few rows (decode steps; any M works). */
void k_matmul_h(float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw, int bf16,
                const float *b, int M, int N, int K);
void k_matmul_h_ref(float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw,
                    int bf16, const float *b, int M, int N, int K);
/* k_matmul_h on the best instruction set up to isa (0 C, 1 AVX2, 2
 * AVX-512) that this CPU has; returns the one used (for tests). */
int k_matmul_h_isa(int isa, float *y, int ldy, const float *x, int ldx, const uint16_t *w, int ldw,
                   int bf16, const float *b, int M, int N, int K);
/* dst[n] = the f32 values of n f16 (or bf16) halves. */
void k_h_to_f32(float *dst, const uint16_t *src, size_t n, int bf16);

/* Over x[0, n): *amax = max |x|, *sumsq = sum x^2 (f32 lanes: for a
 * magnitude check, not exact); returns 1 when every element is finite, 0
 * when one is NaN or Inf (or the sum overflowed). The load-time weight check. */
int k_scan_stats(const float *x, size_t n, float *amax, double *sumsq);
int k_scan_stats_ref(const float *x, size_t n, float *amax, double *sumsq);
/* Over x[0, n): *amax = max |x| of the elements with |x| <= lim (0 if none);
 * returns how many are not (beyond lim, or NaN). Exact (a maximum). */
size_t k_absmax_within(const float *x, size_t n, float lim, float *amax);
size_t k_absmax_within_ref(const float *x, size_t n, float lim, float *amax);
/* The screened greedy pick's scans of a row before (raw) and after (row)
 * the decoding rules: k_max_kept, the largest row[i] the rules kept as it
 * was (row[i] == raw[i], raw[i] != 0; -inf if none); k_ids_to_refine, into
 * ids in order, each i with row[i] != -inf and (changed, raw[i] == 0 or
 * row[i] >= cut), and their count. */
float k_max_kept(const float *raw, const float *row, size_t n);
size_t k_ids_to_refine(const float *raw, const float *row, size_t n, float cut, int *ids);

/* y[M,D] = (x - mean) / sqrt(var + eps) * g + b, per row; y may alias x. */
void k_layernorm(float *y, const float *x, const float *g, const float *b, int M, int D, float eps);

/* x[n] = x * Phi(x) with the exact erf form, in place. */
void k_gelu(float *x, size_t n);
void k_gelu_ref(float *x, size_t n);

/* y[n] += x[n]. */
void k_add(float *y, const float *x, size_t n);

/* In place, over x[0, n): x = exp(x - max) / sum (polynomial exp,
 * relative error < 1e-6 against the double-precision reference). */
void k_softmax(float *x, int n);
/* Beam candidates: s[i] = base + ((x[i] - mx) - lse) for i < n, rounded as
 * written (no contraction); returns how many of them exceed thr. */
int k_shifted_above(float *s, const float *x, int n, float base, float mx, float lse, float thr);
void k_softmax_ref(float *x, int n);
/* log(sum exp(x[i])) over x[0, n) with *mx = max x (the log-probability of
 * x[v] is x[v] - *mx - ...; see k_logprob): exp_poly (relative error < 4e-7)
 * summed in double over 8 lanes. An empty or all -inf row: *mx = -inf,
 * returns 0. Returns log(sum exp(x - *mx)). */
double k_logsumexp(const float *x, int n, float *mx);
/* A draw's weights: w[i] = exp(x[i] / t - *mx) over x[0, n), t > 0, with
 * *mx = max x / t (the largest x[i] / t, each rounded as divided); w[i] = 0
 * exactly where x[i] = -inf. Returns their sum (>= 1), in double over f32
 * lanes as k_logsumexp sums; an empty or all -inf row: *mx = -inf, returns 0
 * (w untouched). exp_poly's relative error (< 4e-7) per weight. */
double k_exp_scaled(float *w, const float *x, int n, float t, float *mx);
/* The exp used by k_softmax, for finite x (clamped to [-87, 88]). */
float k_exp(float x);

/* Scaled dot-product attention for one head:
 * o[Mq, dh] (ldo) = softmax(scale * q[Mq, dh] . k[Tk, dh]^T) . v[Tk, dh]
 * with row strides ldq, ldk, ldv. causal: query row i sees keys
 * [0, Tk - Mq + i + 1) (the queries are the last Mq positions); else all Tk.
 * scratch: [Mq, Tk] floats. */
void k_attention(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                 const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                 int causal, float *scratch);
void k_attention_ref(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                     const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                     int causal, float *scratch);

/* Long non-causal attention for one head (Whisper's encoder, 1500 x 1500),
 * fused: per block of keys an online softmax, the scores never leave L1
 * (kern/attn_flash_impl.h). Same contract as k_attention with causal 0;
 * agrees with k_attention_ref within 1e-5 (f32 sums in another order). Runs only where
 * k_attention_flash_has(dh) (a vector set, dh a multiple of its tile);
 * elsewhere it does nothing. scratch: k_attention_flash_scratch_bytes. */
int k_attention_flash_has(int dh);
size_t k_attention_flash_scratch_bytes(int Tk, int dh);
void k_attention_flash(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                       const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                       void *scratch);

/* Scaled dot-product attention with an additive bias (T5's relative
 * positions), no causal mask: row i adds bias[i * bias_step + j] to the
 * score of key j (bias_step -1 reads a Toeplitz vector; bias NULL adds none).
 * Otherwise as k_attention. scratch: [Mq, Tk]. */
void k_attention_bias(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                      const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                      const float *bias, ptrdiff_t bias_step, float *scratch);
void k_attention_bias_ref(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                          const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                          const float *bias, ptrdiff_t bias_step, float *scratch);

/* One query row over keys gathered from cache slots through an index table:
 * key j (and value j) is at k + slot[j] * slot_stride + j * ld (likewise v).
 * o[dh] = softmax(scale * q . K^T + bias[j]) . V over j < Tk; bias may be
 * NULL. This is how beams read a shared history without copying it.
 * scratch: [Tk]. */
void k_attention_gather(float *o, const float *q, const float *k, const float *v,
                        size_t slot_stride, int ld, const int *slot, int Tk, int dh,
                        float scale, const float *bias, float *scratch);
void k_attention_gather_ref(float *o, const float *q, const float *k, const float *v,
                            size_t slot_stride, int ld, const int *slot, int Tk, int dh,
                            float scale, const float *bias, float *scratch);
/* The same for nh heads side by side (q, o, each key and value row: nh * dh
 * floats, head h at h * dh; head h's bias at bias + h * bias_hstride), each
 * head bitwise as k_attention_gather gives it alone; a position's rows are
 * read once for all heads. scratch: [nh * Tk]. */
void k_attention_gather_heads(float *o, const float *q, const float *k, const float *v,
                              size_t slot_stride, int ld, const int *slot, int Tk, int nh, int dh,
                              float scale, const float *bias, size_t bias_hstride,
                              float *scratch);

/* T5's RMSNorm: y[M,D] = x / sqrt(mean(x^2) + eps) * g per row (no mean
 * subtraction, no bias); y may alias x. */
void k_rmsnorm(float *y, const float *x, const float *g, int M, int D, float eps);

/* Element-wise activations, in place. gelu_tanh is the tanh approximation
 * (PyTorch's approximate="tanh", HF's gelu_new); silu = x * sigmoid(x). */
void k_relu(float *x, size_t n);
void k_gelu_tanh(float *x, size_t n);
void k_gelu_tanh_ref(float *x, size_t n);
void k_silu(float *x, size_t n);
void k_silu_ref(float *x, size_t n);
/* y[n] *= x[n]. */
void k_mul(float *y, const float *x, size_t n);
/* One LSTM cell update over n units from the pre-activation gates g[4n]
 * (ONNX's order: input, output, forget, cell): c = sigmoid(f) c +
 * sigmoid(i) tanh(g_c), then h = sigmoid(o) tanh(c), with exp_poly in
 * lanes (sigmoid = 1 / (1 + exp(-x)), tanh(u) = 1 - 2 / (exp(2u) + 1):
 * both tails saturate); within 1e-6 of the double-precision reference. */
void k_lstm_cell(float *h, float *c, const float *g, int n);
void k_lstm_cell_ref(float *h, float *c, const float *g, int n);

/* 1-d convolution as a matrix: col[T_out, C_in * kw] from x, where output
 * step t reads input positions t*stride + j - pad (zeros outside [0, T_in)).
 * x is channel-major [C_in, T_in] when x_chan_major, else time-major
 * [T_in, C_in]. Then y = col . W^T with W [C_out, C_in * kw] (PyTorch
 * Conv1d weight [C_out, C_in, kw] flattened). Rows [t0, t1) only. */
void k_im2col_1d(float *col, const float *x, int x_chan_major, int C_in, int T_in,
                 int kw, int stride, int pad, int t0, int t1);

/* "BLIS 0.9.0 (sequential, reentrant; kernels: haswell)": the BLAS behind
 * k_matmul, for --version and benchmarks. Static storage. */
const char *k_blas_info(void);
/* BLIS picks its kernels (a "configuration": haswell, zen3, skx, ...) by
 * the CPU, or by the environment variable BLIS_ARCH_TYPE, which BLIS 0.9
 * reads as the number of a configuration (a name reads as 0, skx) and
 * aborts the process on, or runs into an illegal instruction, when that
 * configuration is missing or above this CPU. Returns 0 when the
 * environment is safe (unset, or the number of a configuration in
 * k_blas_configs), else -1 with the reason in why[cap]. */
int k_blas_env_check(char *why, size_t cap);
/* The configurations this CPU can run that BLIS_ARCH_TYPE may name: up to
 * cap names into names[]; returns their count. Tests force each in turn
 * (kernels that differ between CPUs, run on one). */
int k_blas_configs(const char **names, int cap);
/* BLIS's number of configuration name (BLIS_ARCH_TYPE's value), or -1. */
int k_blas_config_id(const char *name);

/* Index of the maximum of x[0, n) (first on ties). */
int k_argmax(const float *x, int n);

#endif
