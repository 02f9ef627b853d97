/* matmul_hp.h - half-precision weights (f16 or bf16) in a panel-major
 * layout, for decode steps with a few rows (greedy: 1, beam search: 2..16):
 * every weight byte is loaded once per call and used for all rows while it
 * is in a register, with no horizontal sums, so the product streams the
 * weights at memory bandwidth for M = 1 and for M = 16 alike.
 *
 *   uint16_t *wp = aligned_alloc(64, k_hp_bytes(N, K));
 *   k_hp_pack(wp, w, N, K);                                        once, at load
 *   k_matmul_hp(y, N, x, K, wp, bf16, b, M, 0, N, N, K);           every step
 *
 * Layout: the matrix [N, K] as ceil(N/16) panels of 16 outputs, each of
 * 16 x K' halves (K' = K rounded up to 32, an AMX chunk; outputs past N
 * and columns past K are zero); k_hp_index gives the place of w[n][k].
 *   f16:  for k = 0..K'-1, the 16 halves of outputs 16p..16p+15 at column
 *         k: one 32-byte load, expanded by vcvtph2ps;
 *   bf16: for each pair (k, k+1), k even, 16 32-bit words, word j holding
 *         w[16p+j][k] in its low half and w[16p+j][k+1] in its high half:
 *         one 64-byte load serves two k, each expanded by one shift or and;
 *         16 pairs (32 k) are one AMX B tile (k_matmul_hp_amx).
 * Either way 16 f32 lanes meet a broadcast of x[m][k] for each row m in one
 * FMA, k in order, so every row's sums are the same whatever M is (a batch
 * gives each row the bits it gets alone). Halves are copied exactly: the
 * products equal the row-major k_matmul_h's up to the order of the f32 sums. */
#ifndef ED_MATMUL_HP_H
#define ED_MATMUL_HP_H

#include "kern/kern.h"

#include <stddef.h>
#include <stdint.h>

/* Bytes of the packed matrix: ceil(N/16) * 16 * K' halves, K' = K rounded
 * up to 32 (0 if N or K < 1). */
size_t k_hp_bytes(int N, int K);
/* K' (in halves): K rounded up to 32. */
static inline size_t k_hp_kpad(int K) { return ((size_t)K + 31) & ~(size_t)31; }
/* Index (in halves) of w[n][k] in the packed matrix (inline: the AMX file,
 * which matmul_hp.c calls, reads the layout too). */
static inline size_t k_hp_index(int bf16, int n, int k, int K) {
    size_t at = (size_t)(n / 16) * 16 * k_hp_kpad(K);
    if (bf16) return at + (size_t)(k / 2) * 32 + (size_t)(n % 16) * 2 + (size_t)(k & 1);
    return at + (size_t)k * 16 + (size_t)(n % 16);
}
/* 1 when k_matmul_hp runs a vector version here (AVX-512 or AVX2; the
 * layout pays only then: the portable version is correct but slower than
 * row-major). */
int k_hp_fast(void);

/* Repacks w (K_F16 or K_BF16, row-major [N, K], row stride K) into dst
 * (k_hp_bytes, 64-byte aligned); halves are copied exactly. Returns 0, or
 * -1 for another type (or N, K < 1, or NULL pointers). */
int k_hp_pack(uint16_t *dst, k_w w, int N, int K);

/* Row n as f32 into dst[K] (embedding lookups). */
void k_hp_row(float *dst, const uint16_t *wp, int bf16, int n, int N, int K);

/* y[M, n0:n0+nn] (ldy) = x[M, K] (ldx) . W[n0:n0+nn, :]^T + b[n0:n0+nn]
 * (b may be NULL; y and b are indexed by absolute column; other columns of
 * y are not touched). n0 need not be a multiple of 16 (callers usually split
 * at multiples of 16, so that no panel is read by two threads). Any M >= 1:
 * rows go in chunks of up to 16 per weight pass; with more rows the columns
 * go in blocks of about 256 KB of weights, read from memory by the first
 * chunk and from L2 by the others. Returns the ISA used (2 AVX-512, 1 AVX2, 0 C), or
 * -1 for bad arguments (n0, nn outside [0, N], K < 1, M < 0). Sequential. */
int k_matmul_hp(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                const float *b, int M, int n0, int nn, int N, int K);
/* The same on the best instruction set up to isa (0 C, 1 AVX2 + FMA + F16C,
 * 2 AVX-512 F/BW/VL) that this CPU has. */
int k_matmul_hp_isa(int isa, float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                    int bf16, const float *b, int M, int n0, int nn, int N, int K);
/* k_matmul_hp with scratch xs of k_hp_xs_floats(M, K) floats (or NULL): with
 * more rows than one tile and more columns than one block, x is copied
 * k-major into xs once per call instead of once per column block (the same
 * values: the same bits out). Sequential; xs is the calling thread's. */
size_t k_hp_xs_floats(int M, int K);
int k_matmul_hp_xs(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                   const float *b, int M, int n0, int nn, int N, int K, float *xs);
int k_matmul_hp_xs_isa(int isa, float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                       int bf16, const float *b, int M, int n0, int nn, int N, int K, float *xs);
/* The scalar twin, double accumulation, on the packed layout. */
void k_matmul_hp_ref(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                     const float *b, int M, int n0, int nn, int N, int K);

/* The bf16 compute mode's product on a bf16 panel matrix, on AMX: like
 * k_matmul_hp but x rounded to bf16 to nearest even (as k_gemm's bf16 mode
 * rounds it), exact products, f32 sums in the tile unit; each row's bits
 * do not depend on M. Returns 3, or -1 where AMX is not usable here (see
 * k_matmul_hp_amx_has) or for bad arguments. Sequential; uses 68 KB of
 * stack. matmul_hp_amx.c. */
int k_matmul_hp_amx(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                    const float *b, int M, int n0, int nn, int N, int K);
int k_matmul_hp_amx_has(void);
/* Its scalar twin: double sums of bf16(x) * w. */
void k_matmul_hp_amx_ref(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                         const float *b, int M, int n0, int nn, int N, int K);
/* The same product on ARM64 with the BF16 extension (BFDOT by element, x
 * rounded to bf16 to nearest even; each row's bits do not depend on M; the
 * twin is k_matmul_hp_amx_ref). Returns 1, or -1 where it does not run
 * (k_matmul_hp_bfdot_has: aarch64, the vector set, K_FEAT_BF16) or for bad
 * arguments. Sequential; 16 KB of stack. matmul_hp_bfdot.c. */
int k_matmul_hp_bfdot(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                      const float *b, int M, int n0, int nn, int N, int K);
int k_matmul_hp_bfdot_has(void);
/* The bf16 mode's product on a bf16 panel matrix (x may be rounded to bf16,
 * as k_w.lowp allows), on the best of the above this CPU runs: AMX (3),
 * BFDOT (1); -1 where neither does (the caller then takes k_matmul_hp, f32
 * x). The one dispatch point of the two. */
int k_matmul_hp_lowp(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                     const float *b, int M, int n0, int nn, int N, int K);


/* internal: the vector level's version (matmul_hp_avx2.c, matmul_hp_neon.c;
 * kern/vec.h names it K_VEC(k_matmul_hp); arguments checked, M, nn > 0). Both
 * are tiles of R activation rows (1..K_HP_ROWS) x B panels (1 or 2) run by
 * k_hp_drive: x is copied k-major per block of K_HP_KB k (the same blocks
 * for every R, later blocks adding to y), so each row's bits do not depend on
 * how many rows come with it. Few rows: one sweep, each panel read once, the
 * next tile's panels prefetched at the same offsets; more rows: column blocks
 * of ~128 KB of weights, read from memory by the first chunk and from L2 by
 * the others. */
#define K_HP_ROWS 6
#define K_HP_KB 512
typedef struct {
    float *y;               /* row 0 of the chunk, absolute column 0 */
    int ldy;
    const float *xt;        /* x for this k-block, k-major: xt[k * R + r] */
    const uint16_t *wp;     /* first panel of the tile, at the k-block */
    size_t ps;              /* halves per panel */
    size_t pf;              /* prefetch distance in halves */
    int K;                  /* k in this block */
    int acc;                /* add to y (a later k-block) */
    const float *b;         /* the bias with the last k-block, else NULL */
    int col;                /* absolute column of the first panel */
    int n0, n1;             /* store columns [n0, n1) only */
} k_hp_tile;
typedef void (*k_hp_tile_fn)(const k_hp_tile *);
/* tiles[R - 1][B - 1]: R rows x B panels of one type (f16 or bf16); B = 2 is
 * used for R <= b2_rows (its entry may be NULL above). */
/* x rows [0, R), columns [k0, k0 + kk), into xt[k * R + r] (matmul_hp_drive.c). */
void k_hp_transpose(float *xt, const float *x, int ldx, int R, int k0, int kk);
/* xs: k_hp_xs_floats(M, K) floats or NULL (k_matmul_hp_xs). */
void k_hp_drive(const k_hp_tile_fn tiles[K_HP_ROWS][2], int b2_rows, float *y, int ldy,
                const float *x, int ldx, const uint16_t *wp, const float *b, int M, int n0,
                int nn, int K, float *xs);
/* x's row chunks ([M / chunks] or one more rows each, as the drivers cut
 * them) copied k-major whole into xs: chunk at row m0 at xs + m0 * K,
 * xs[m0 * K + k * R + r]. Returns xs. */
const float *k_hp_transpose_chunks(float *xs, const float *x, int ldx, int M, int chunks, int K);
#include "kern/vec.h"
#ifdef K_HAVE_VEC
void K_VEC(k_matmul_hp)(float *y, int ldy, const float *x, int ldx, const uint16_t *wp, int bf16,
                        const float *b, int M, int n0, int nn, int K, float *xs);
#endif

#endif
