/* q8.h - int8 weights with one scale per output row, multiplied with
 * activations quantised per row on the fly, through VNNI dot products
 * (vpdpbusd: u8 x s8 -> s32) where the CPU has them.
 *
 *   void *buf = aligned_alloc(64, k_q8_bytes(N, K));
 *   k_q8 q = k_q8_pack(buf, w, N, K);                       once, at load
 *   k_matmul_q8(y, N, x, K, q, b, M, 0, N, scratch);       every step
 *
 * Weights: s[n] = max_k |w[n,k]| / 127 and q[n,k] = round(w[n,k] / s[n])
 * (zero rows: s = 0, q = 0; so are rows whose s would be below FLT_MIN or
 * not finite). Activations: per row i, s_x = max_k |x[i,k]| / 127 and
 * qx[i,k] = round(x[i,k] * (127 / max_k |x[i,k]|)) (rows with max below
 * FLT_MIN: s_x = 0, qx = 0). round: to nearest, ties to even, clamped to
 * [-127, 127]. Then y[i,n] = fmaf((float)D, s_x * s[n], b[n]) with
 * D = sum_k qx[i,k] q[n,k] exact (b NULL: + 0). Every path rounds in exactly
 * that order, so the fast path, the C path and the scalar twin agree bit for
 * bit. Non-finite inputs give non-finite or meaningless outputs (NaN in x
 * quantises to -127), the same on every path.
 *
 * Packed layout (k_q8_bytes(N, K) bytes, 64-byte aligned): N rounded up to
 * Np (multiple of 16), K to Kp (multiple of 4). Output rows in panels of 16;
 * panel p holds Kp/4 groups of 64 bytes, group g = for n in 0..15 the four
 * bytes q[16p + n, 4g .. 4g+3] (padding: 0). One 64-byte load is one VNNI
 * operand: 16 outputs x 4 k, against one broadcast of 4 activation bytes.
 * After the Np * Kp bytes of panels: float s[Np], then int32 c[Np] =
 * 128 * sum_k q[n,k] (activations enter vpdpbusd as unsigned qx + 128; c
 * takes the offset back out).
 *
 * Range: 1 <= K <= K_Q8_MAX_K. With |qx| <= 127 (biased: <= 255) and
 * |q| <= 127, every partial sum the kernels form is at most
 * 255 * 127 * K <= 2,122,383,360 < 2^31 - 1 for K <= 65536, so the int32
 * accumulators never wrap. Outside the range k_q8_bytes returns 0,
 * k_q8_pack returns a view with data NULL, and k_matmul_q8 returns -1. */
#ifndef ED_Q8_H
#define ED_Q8_H

#include "kern/kern.h"

#include <stddef.h>

#define K_Q8_MAX_K 65536

typedef struct {
    const void *data;
    int N, K;
} k_q8;

/* Bytes of the packed matrix (0 when N < 1 or K is out of range). */
size_t k_q8_bytes(int N, int K);

/* Quantises w ([N, K] row-major, row stride K; K_F32, K_F16 or K_BF16) into
 * dst (k_q8_bytes(N, K) bytes, 64-byte aligned) and returns the view.
 * Pure and deterministic. */
k_q8 k_q8_pack(void *dst, k_w w, int N, int K);

/* 1 when k_matmul_q8 runs a vector version here (AVX-512 VNNI, AVX2 or
 * NEON, as the kernel-set mask allows), 0 for the portable C one. */
int k_q8_fast(void);

/* The largest row norms of a matrix and its int8 copy (w^_n = s[n] q[n, :]):
 * ||w_n - w^_n||, ||w^_n|| and ||w_n||, each a sum of squares in double
 * (s[n] q exact there), rounded to nearest in the last step; finite: 0
 * once a row held a weight that is not finite (its norms then mean nothing). */
typedef struct {
    double err, q, w;
    int finite;
} k_q8_norms;

/* Rows [n0, n1) of a matrix, given as w (those n1 - n0 rows only,
 * row-major, row stride K; K_F32, K_F16 or K_BF16), quantised into their
 * places in out (a view of
 * k_q8_bytes(out.N, out.K) bytes whose other rows, and the padding rows of
 * the last panel, are the caller's: zero them once), as k_q8_pack does:
 * so a large matrix can be packed in parts. nrm (NULL: none; set finite = 1
 * and the norms to 0 before the first part) takes the rows' norms in as
 * running maxima. Returns 0, or -1 for bad arguments. */
int k_q8_pack_rows(k_q8 out, k_w w, int n0, int n1, k_q8_norms *nrm);

/* ||x - s_x qx||_2 (in double) for a row x[K] quantised as every path
 * quantises activations (above): how far the kernels' x is from x. */
double k_q8_quant_err(const float *x, int K);

/* The dequantised row n, s[n] * q[n, :], into dst[K] (embedding lookups read
 * the matrix that also serves as the output projection). */
void k_q8_row(float *dst, k_q8 w, int n);

/* Scratch bytes for k_matmul_q8 with M rows (any alignment will do; one
 * scratch per concurrent caller). */
size_t k_q8_scratch_bytes(int M, int K);

/* y[M, N] (row stride ldy) = x[M, K] (ldx) . W^T + b[N] (b may be NULL), as
 * described above, for the output columns [n0, n0 + nn) only: y and b are
 * indexed by absolute column, and nothing outside those columns is written
 * (threads may own neighbouring columns). Any M >= 0; n0, nn need no
 * alignment (16 is best). Sequential. Returns the ISA used: 2 = AVX-512
 * VNNI, 1 = AVX2 (vpmaddubsw on sign-moved operands, q8_avx2.c), 0 = C;
 * -1 when K is out of range or the columns are not in [0, N). */
int k_matmul_q8(float *y, int ldy, const float *x, int ldx, k_q8 w, const float *b, int M,
                int n0, int nn, void *scratch);
/* The same on the best instruction set up to isa (0 C, 1 AVX2, 2 AVX-512
 * VNNI: F, BW, VL and VNNI) this CPU has (for tests and benchmarks);
 * AVX-512 CPUs without VNNI run the AVX2 one. */
int k_matmul_q8_isa(int isa, float *y, int ldy, const float *x, int ldx, k_q8 w, const float *b,
                    int M, int n0, int nn, void *scratch);

/* The scalar twin: the same quantisation of x, int64 dot products read from
 * the packed layout one element at a time, the same scaling. Allocates its
 * own scratch. */
void k_matmul_q8_ref(float *y, int ldy, const float *x, int ldx, k_q8 w, const float *b, int M,
                     int n0, int nn);

/* The row-major layout of the CUDA backend (cuda.h's CU_Q8): row n at
 * n * k_q8_dev_row_bytes(K) bytes, its scale s[n] (a float) and then
 * q[n, 0 .. K) as bytes, zero up to a multiple of 4. */
static inline size_t k_q8_dev_row_bytes(int K) { return 4 + (((size_t)K + 3) & ~(size_t)3); }
/* w (packed) in that layout into dst (N * k_q8_dev_row_bytes(K) bytes): the
 * same q and s, byte for byte. */
void k_q8_to_dev(void *dst, k_q8 w);
/* y = x . W^T + b over that layout, rows quantised as above: k_matmul_q8's
 * values bit for bit (scalar: the CUDA emulation's and the tests' twin). */
void k_matmul_q8_dev_ref(float *y, int ldy, const float *x, int ldx, const void *w, const float *b,
                         int M, int N, int K);

#endif
