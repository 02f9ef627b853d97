/* gemm.h - our own blocked, packed matrix product for many rows (the Whisper
 * encoder: 1500 rows), in fp32 or in bf16 with f32 accumulation.
 *
 *   void *s = aligned_alloc(64, k_gemm_scratch_bytes(M, N, K, K_GEMM_F32));
 *   k_gemm(y, N, x, K, (k_w){w, K_F32}, b, M, N, K, K_GEMM_F32, 0, s);
 *
 * y[M,N] (ldy) = x[M,K] (ldx) . w[N,K]^T + b[N], w a PyTorch Linear weight
 * [out, in] as stored (f32, f16 or bf16; row stride K). GotoBLAS-style: rows
 * of x and columns of w are packed into scratch (converted on the way), and
 * a register micro-kernel sweeps the panels: 14 x 32 on AVX-512 (28 zmm
 * accumulators), 6 x 16 on AVX2 (12 ymm accumulators).
 * Sequential: callers slice rows (or columns) across threads, one scratch
 * each. Layout and blocking: gemm.c.
 */
#ifndef ED_KERN_GEMM_H
#define ED_KERN_GEMM_H

#include "kern/kern.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { K_GEMM_F32 = 0, K_GEMM_BF16 = 1 } k_gemm_mode;

/* Epilogue flags (the epi argument), applied to the finished tile in cache:
 *   K_GEMM_GELU: y = gelu_erf(y) (k_gelu's formula), after the bias;
 *   K_GEMM_ACC:  y += x . w^T + b (y's old values are added, e.g. a residual),
 *                before the GELU when both are set. */
enum { K_GEMM_GELU = 1, K_GEMM_ACC = 2 };

/* Scratch bytes k_gemm needs for these sizes (packed panels of w and x). */
size_t k_gemm_scratch_bytes(int M, int N, int K, k_gemm_mode mode);

/* y[M,N] (ldy) = x[M,K] (ldx) . w[N,K]^T + b[N] (b may be NULL). K_GEMM_BF16:
 * x and w are rounded to bf16 (to nearest even) while packing, products
 * accumulate in f32. epi: K_GEMM_GELU | K_GEMM_ACC (above), or 0. Rows of x
 * may overlap (ldx < K: a strided convolution's windows). scratch: k_gemm_scratch_bytes bytes, 64-byte aligned (other
 * alignments work too: the panels are aligned inside it). Returns
 * the instruction set used: 3 = AMX (bf16 mode only: AMX-BF16 tiles, when the
 * CPU has them and the kernel grants the tile state), 2 = AVX-512 (bf16
 * mode: AVX512_BF16), 1 = AVX2 + FMA (bf16 mode: bf16-rounded values in
 * f32 FMAs), 0 = C. */
int k_gemm(float *y, int ldy, const float *x, int ldx, k_w w, const float *b, int M, int N,
           int K, k_gemm_mode mode, int epi, void *scratch);
/* The same on the best instruction set up to isa (0 = C, 1 = AVX2,
 * 2 = AVX-512, 3 = AMX in bf16 mode; fp32 mode stops at 2). */
int k_gemm_isa(int isa, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
               int M, int N, int K, k_gemm_mode mode, int epi, void *scratch);
/* Plain triple loop (double accumulation); in bf16 mode x and w are rounded
 * to bf16 first, as k_gemm does. The scalar twin. */
void k_gemm_ref(float *y, int ldy, const float *x, int ldx, k_w w, const float *b, int M, int N,
                int K, k_gemm_mode mode, int epi);
/* Weights packed once for the AMX path (k_w type K_BF16A, lowp 1): w [N, K]
 * of any type, rounded to bf16, as 32-column panels over the whole K, each
 * ceil(K / 32) chunks of 2 KB ([16 k pairs][32 columns][2], zero padded).
 * k_gemm then reads them in place instead of packing w on every call.
 * Only where k_gemm_has_amx() (the packer uses AVX-512); k_gemm's other
 * paths (and k_gemm_ref) read such a matrix through k_gemm_amx_at. */
size_t k_gemm_amx_bytes(int N, int K);
void k_gemm_amx_pack(void *dst, k_w w, int N, int K);
/* Element (n, k) of a K_BF16A matrix with K columns. */
float k_gemm_amx_at(const void *p, int K, int n, int k);
/* The path k_gemm_isa(isa, ..., mode, ...) takes here: 3 AMX (bf16 mode),
 * 2 AVX-512 (bf16 mode: AVX512_BF16), 1 AVX2 + FMA (bf16 mode as f32
 * products of bf16-rounded values), 0 portable C. */
int k_gemm_path(int isa, k_gemm_mode mode);
/* 1 when a vector path runs mode's products here (AVX2, AVX-512, AMX): the
 * op layer then prefers k_gemm to BLAS (at or near BLIS's speed, and its
 * sums do not depend on the shape of a call: see gemm.c). */
int k_gemm_has(k_gemm_mode mode);
/* 1 when the AMX path (bf16 mode) runs here: AMX-TILE and AMX-BF16, and
 * Linux granted the tile data state (asked once per process, thread-safe). */
int k_gemm_has_amx(void);

/* f32 -> bf16 bits, round to nearest even (NaN stays a quiet NaN). */
static inline uint16_t k_f32_to_bf16(float f) {
    union { float f; uint32_t u; } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40);
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1)) >> 16);
}

/* ---- internal: the pieces gemm.c's driver runs, per instruction set ----
 * Packed x: rows of the K block at a fixed pitch (GEMM_KC_F floats, or
 * GEMM_KC_B bf16 halves), MR-row micro-panels back to back, rows past M zero.
 * Packed w: NR-column micro-panels of kc rows, k-major: [k][NR] floats, or
 * [k/2][NR] pairs (k even in the low half) in bf16 mode; zero padded. */
#define GEMM_MR 14
#define GEMM_NR 32
#define GEMM_MR_AVX2 6    /* the AVX2 tile (gemm_avx2.c); its packed w panels are 16 wide */
#define GEMM_NR_AVX2 16
#ifndef GEMM_KC_AVX2      /* k per block, AVX2 (x micro-panels k-major: xp[k * 6 + r]) */
#define GEMM_KC_AVX2 768
#endif
#ifndef GEMM_WBLOCK_AVX2  /* a packed w block on AVX2 CPUs, inside their L2 (Zen 2-4: 512 KB) */
#define GEMM_WBLOCK_AVX2 (256 << 10)
#endif
#ifndef GEMM_KC_F
#define GEMM_KC_F 384   /* k per block, fp32 (x micro-panel: 21 KB, in L1) */
#endif
#ifndef GEMM_KC_B
#define GEMM_KC_B 768   /* k per block, bf16 (even) */
#endif

typedef struct {
    /* rows [0, M) of x[:, k0 .. k0 + kc), rows to Mp (a multiple of MR) zero */
    void (*pack_x)(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf16);
    /* columns [n0, n0 + nn) of w[:, k0 .. k0 + kc), panels padded to NR */
    void (*pack_w)(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf16);
    /* one MR x NR tile over kk steps (k, or k pairs in bf16 mode) into y
     * (mr x nr valid): acc + (b or 0) + (first ? 0 : y); gelu on the
     * finished tile (the driver passes b for one K block only) */
    void (*kernel)(const void *xp, const void *wp, int kk, float *y, size_t ldy, int mr, int nr,
                   const float *b, int first, int gelu);
    int mr, nr;   /* the tile: rows of an x micro-panel, columns of a w micro-panel */
    int kc;       /* k per block, and the packed x rows' pitch (elements) */
    size_t wblock;   /* bytes of a packed w block (kept in L2), at most W_BLOCK_BYTES */
    int pf_next;     /* fetch the next w block's rows while this block's tiles run */
} gemm_impl;

void gemm_pack_x_avx512(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf16);
void gemm_pack_w_avx512(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf16);
void gemm_kernel_f32_avx512(const void *xp, const void *wp, int kk, float *y, size_t ldy, int mr,
                            int nr, const float *b, int first, int gelu);
void gemm_kernel_bf16_avx512(const void *xp, const void *wp, int kk, float *y, size_t ldy, int mr,
                             int nr, const float *b, int first, int gelu);
/* AVX2 + FMA (gemm_avx2.c): f32 layouts only, 6 x 16 tiles; the _bf
 * packers round to bf16 (bf16 mode in f32 arithmetic). */
void gemm_pack_x_avx2(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf16);
void gemm_pack_x_bf_avx2(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf16);
void gemm_pack_w_avx2(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf16);
void gemm_pack_w_bf_avx2(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf16);
void gemm_kernel_f32_avx2(const void *xp, const void *wp, int kk, float *y, size_t ldy, int mr,
                          int nr, const float *b, int first, int gelu);
/* AMX (gemm_amx.c): the whole product for K > 0, M > 0, N > 0 (its own
 * blocking and layouts, see there); gemm_amx_ok: the path may run (asks
 * Linux for the tile state on the first call); 0 where not built. */
int gemm_amx_ok(void);
size_t gemm_amx_scratch_bytes(int M, int N, int K);
void gemm_run_amx(float *y, int ldy, const float *x, int ldx, k_w w, const float *b, int M,
                  int N, int K, int epi, void *scratch);
/* The fp32 path for few rows against a tall w (gemm_ws.c; AVX-512, w in
 * f32): x transposed into 32-row panels, w broadcast in place, 14 x 32
 * tiles of y^T (AVX2: 6 x 16); the same sums as the packed path, bit for bit. k_gemm takes
 * it where gemm_ws_takes; gemm_packed_isa is k_gemm_isa without it (tests,
 * benchmarks). */
#define GEMM_WS_R 14
#define GEMM_WS_C 32
/* gemm_ws16.c: the same for M <= 16 in one 16-lane panel, tiles of up to
 * 28 rows of w (10 or 20 where the rows' stride puts them into one or two
 * L1 sets; the same sums again); k_gemm's AVX-512 path takes it for those
 * rows. */
#define GEMM_WS16_R 28
void gemm_run_ws16(float *y, int ldy, const float *x, int ldx, const float *w, const float *b,
                   int M, int N, int K, int epi, void *scratch);
int gemm_ws_takes(int M, int N, int K);
size_t gemm_ws_scratch_bytes(int M, int K);
void gemm_run_ws(float *y, int ldy, const float *x, int ldx, const float *w, const float *b,
                 int M, int N, int K, int epi, void *scratch);
/* Both few-row paths prefetch the next tile's rows (contiguous: rows n0 + R
 * ..) into L2 (prefetcht1) while a tile runs, spread over the tile's kernel calls: each call
 * takes its share (at most two lines a k step) from gemm_ws_pf_take. */
typedef struct {
    const char *p;   /* the next tile's first byte */
    size_t lines, done, per;
} gemm_ws_pf;

static inline gemm_ws_pf gemm_ws_pf_start(const float *w, int n0, int R, int N, int K, size_t calls) {
    int nnext = N - n0 - R < R ? N - n0 - R : R;
    gemm_ws_pf f = {(const char *)(w + (size_t)(n0 + R) * K), 0, 0, 0};
    f.lines = nnext > 0 ? ((size_t)nnext * K * 4 + 63) / 64 : 0;
    f.per = (f.lines + calls - 1) / calls;
    return f;
}

/* This call's lines: *at, the count returned (kc: the call's k steps). */
static inline int gemm_ws_pf_take(gemm_ws_pf *f, int kc, const char **at) {
    size_t n = f->lines - f->done < f->per ? f->lines - f->done : f->per;
    if (n > 2 * (size_t)kc) n = 2 * (size_t)kc;
    *at = f->p + f->done * 64;
    f->done += n;
    return (int)n;
}

/* The same on AVX2 + FMA (gemm_ws_avx2.c: 6 x 16 tiles, the packed AVX2
 * path's sums; no K_GEMM_GELU). */
void gemm_run_ws_avx2(float *y, int ldy, const float *x, int ldx, const float *w, const float *b,
                      int M, int N, int K, int epi, void *scratch);
int gemm_packed_isa(int isa, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                    int M, int N, int K, k_gemm_mode mode, int epi, void *scratch);
/* y[mr, nr] (ldy) = gelu_erf(y), AVX-512 (k_gelu's formula). */
void gemm_gelu_tile_avx512(float *y, size_t ldy, int mr, int nr);

#endif
