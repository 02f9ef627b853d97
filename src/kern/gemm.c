/* gemm.c - k_gemm's driver (blocking, dispatch), the portable C pieces and
 * the scalar twin. The AVX-512 pieces are in gemm_f32.c (packing, fp32
 * micro-kernel, GELU) and gemm_bf16.c (the vdpbf16ps micro-kernel); the
 * AMX path of bf16 mode (its own driver and layouts) in gemm_amx.c.
 *
 * Loops, GotoBLAS style with the roles of BLIS's A and B swapped (the
 * vector dimension is N, so that tiles of y store whole rows):
 *   for k0 (KC):       K blocks; y accumulates across them
 *     for n0 (NC):     pack w[n0.., k0..]: a block that stays in L2
 *       for m (MR):    the x micro-panel (14 x KC, 21 KB) stays in L1; packed
 *                      on first use (n0 = 0), kept for the later n0 blocks
 *         for n (NR):  the 14 x 32 micro-kernel streams a w micro-panel
 * x is packed as rows at a fixed pitch (not transposed): the micro-kernel
 * broadcasts x[i][k] from 14 rows at constant offsets from one pointer.
 * Bias, accumulation (across K blocks, and into y's old values with
 * K_GEMM_ACC) and GELU happen in the micro-kernel's epilogue.
 */
#include "kern/half.h"
#include "kern/gemm.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define GEMM_X86 1
#define HAS_AVX512 (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && \
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
#define HAS_AVX512BF16 (HAS_AVX512 && __builtin_cpu_supports("avx512bf16"))
#endif

#ifndef W_BLOCK_BYTES   /* a packed w block: inside the L2 (2 MB on recent Xeons); the most any path uses */
#define W_BLOCK_BYTES (768 << 10)
#endif

static inline int rup(int v, int m) { return (v + m - 1) / m * m; }

/* k per block: K up to KC (k pairs: even in bf16 mode). */
static int kc_max(int K, int KC, int bf16) {
    int k = bf16 ? rup(K, 2) : K;
    return k < KC ? k : KC;
}

/* Columns of w per block: N in near-equal parts of at most `block` bytes
 * (esz bytes per packed element). */
static int nc_block(int N, int K, int KC, int bf16, size_t esz, size_t block) {
    size_t col = (size_t)kc_max(K, KC, bf16) * esz;
    size_t nb = ((size_t)rup(N, GEMM_NR) * col + block - 1) / block;
    if (nb < 1) nb = 1;
    return rup((int)((N + nb - 1) / nb), GEMM_NR);
}

/* Packed x and w bytes of one layout (KC k per block, esz bytes each). */
static size_t layout_bytes(int M, int N, int K, int KC, int bf16, size_t esz) {
    int Mp = rup(M, GEMM_MR) > rup(M, GEMM_MR_AVX2) ? rup(M, GEMM_MR) : rup(M, GEMM_MR_AVX2);
    size_t xb = (size_t)Mp * KC * esz;
    size_t wb = (size_t)nc_block(N, K, KC, bf16, esz, W_BLOCK_BYTES) * (size_t)kc_max(K, KC, bf16) * esz;
    return ((xb + 63) & ~(size_t)63) + ((wb + 63) & ~(size_t)63) + 64;   /* + 64: see gemm_run */
}

#ifndef GEMM_WS_MAX_M
#define GEMM_WS_MAX_M 128
#endif
/* AVX2's packed path, which fetches each w block while the one before
 * runs, is ahead of the few-row path from about 64 rows on (Zen 3, the
 * 58101 x 512 output matrix: 96 rows 68% of the FMA peak against 53%) */
#ifndef GEMM_WS_MAX_M_AVX2
#define GEMM_WS_MAX_M_AVX2 64
#endif

/* Past GEMM_WS_MAX_M rows the few-row path still leads while x^T (read
 * once for every 14 rows of w) stays in half of a 1 MB L2: AMD EPYC Zen 4,
 * 2 threads on column slices (gemm_bench -m M --shape NxK -s cols,
 * 2026-12-01), GFLOP/s few-row against packed: 256 x 58101 x 512 (64
 * inputs x 4 beams of opus-mt's output matrix) 205-210 / 181-182, 256 x
 * 51865 x 384 206-209 / 178-185, 160 x 58101 x 512 209-211 / 159-166,
 * 256 x 1024 x 512 203-205 / 177-190; one thread, 256 x 512 x 512 95 /
 * 83-89; but 256 x 50264 x 1024 (x^T 1 MB) 136-162 / 180-181, 256 x 512 x
 * 2048 69-78 / 89-90. The packed path's 14-row tiles and w packing at
 * these row counts are what it loses on. */
#ifndef GEMM_WS_XT_BYTES
#define GEMM_WS_XT_BYTES (512 << 10)
#endif

int gemm_ws_takes(int M, int N, int K) {
    return K > 0 && M > 0 && N >= 64 &&
           (M <= GEMM_WS_MAX_M || (size_t)rup(M, GEMM_WS_C) * (size_t)K * 4 <= GEMM_WS_XT_BYTES);
}

size_t gemm_ws_scratch_bytes(int M, int K) {
    size_t tail = (size_t)GEMM_WS16_R * GEMM_KC_F > (size_t)6 * GEMM_KC_AVX2 ? (size_t)GEMM_WS16_R * GEMM_KC_F
                                                                             : (size_t)6 * GEMM_KC_AVX2;
    return (size_t)rup(M, GEMM_WS_C) * (size_t)K * 4 + tail * 4 + 128;   /* + the AVX2 path's */
}

size_t k_gemm_scratch_bytes(int M, int N, int K, k_gemm_mode mode) {
    if (M < 1) M = 1;
    if (N < 1) N = 1;
    if (K < 1) K = 1;
    size_t n = layout_bytes(M, N, K, GEMM_KC_F, 0, 4), a;
    if (gemm_ws_takes(M, N, K) && (a = gemm_ws_scratch_bytes(M, K)) > n) n = a;
    if ((a = layout_bytes(M, N, K, GEMM_KC_AVX2, 0, 4)) > n) n = a;   /* both modes on AVX2 */
    if (mode == K_GEMM_BF16) {
        if ((a = layout_bytes(M, N, K, GEMM_KC_B, 1, 2)) > n) n = a;
        if ((a = gemm_amx_scratch_bytes(M, N, K)) > n) n = a;   /* whether or not this CPU has AMX */
    }
    return n;
}

/* ---- portable C pieces ---- */


/* Element (n, k) of w [N, K]. */
static inline float w_at(k_w w, int K, int n, int k) {
    size_t i = (size_t)n * K + k;
    if (w.t == K_F32) return ((const float *)w.p)[i];
    if (w.t == K_BF16A) return k_gemm_amx_at(w.p, K, n, k);
    return k_h2f(((const uint16_t *)w.p)[i], w.t == K_BF16);
}

static inline float bf2f(uint16_t h) { return k_h2f(h, 1); }

static void pack_x_c(void *xp, const float *x, int ldx, int M, int Mp, int kc, int bf16) {
    for (int r = 0; r < Mp; r++) {
        const float *xr = r < M ? x + (size_t)r * ldx : x;
        if (bf16) {
            uint16_t *d = (uint16_t *)xp + (size_t)r * GEMM_KC_B;
            for (int k = 0; k < rup(kc, 2); k++) d[k] = r < M && k < kc ? k_f32_to_bf16(xr[k]) : 0;
        } else {
            float *d = (float *)xp + (size_t)r * GEMM_KC_F;
            for (int k = 0; k < kc; k++) d[k] = r < M ? xr[k] : 0.0f;
        }
    }
}

static void pack_w_c(void *wp, k_w w, int K, int n0, int nn, int k0, int kc, int bf16) {
    int kcp = bf16 ? rup(kc, 2) : kc;
    for (int j0 = 0; j0 < nn; j0 += GEMM_NR)
        for (int k = 0; k < kcp; k++)
            for (int j = 0; j < GEMM_NR; j++) {
                int n = j0 + j;
                float v = n < nn && k < kc ? w_at(w, K, n0 + n, k0 + k) : 0.0f;
                size_t pan = (size_t)j0 * kcp;   /* panel start, in elements */
                if (bf16)
                    ((uint16_t *)wp)[pan + (size_t)(k / 2) * 2 * GEMM_NR + 2 * j + (k & 1)] =
                        k_f32_to_bf16(v);
                else
                    ((float *)wp)[pan + (size_t)k * GEMM_NR + j] = v;
            }
}

static void kernel_c(const void *xp, const void *wp, int kk, float *y, size_t ldy, int mr, int nr,
                     const float *b, int first, int gelu, int bf16) {
    float acc[GEMM_MR][GEMM_NR];
    memset(acc, 0, sizeof acc);
    for (int k = 0; k < kk; k++)
        for (int i = 0; i < mr; i++) {
            if (bf16) {
                const uint16_t *xi = (const uint16_t *)xp + (size_t)i * GEMM_KC_B + 2 * k;
                const uint16_t *wk = (const uint16_t *)wp + (size_t)k * 2 * GEMM_NR;
                float x0 = bf2f(xi[0]), x1 = bf2f(xi[1]);
                for (int j = 0; j < GEMM_NR; j++)
                    acc[i][j] = acc[i][j] + x0 * bf2f(wk[2 * j]) + x1 * bf2f(wk[2 * j + 1]);
            } else {
                float xv = ((const float *)xp)[(size_t)i * GEMM_KC_F + k];
                const float *wk = (const float *)wp + (size_t)k * GEMM_NR;
                for (int j = 0; j < GEMM_NR; j++) acc[i][j] += xv * wk[j];
            }
        }
    for (int i = 0; i < mr; i++) {
        float *yr = y + (size_t)i * ldy;
        for (int j = 0; j < nr; j++) yr[j] = acc[i][j] + ((b ? b[j] : 0.0f) + (first ? 0.0f : yr[j]));
        if (gelu) k_gelu(yr, (size_t)nr);
    }
}

static void kernel_f32_c(const void *xp, const void *wp, int kk, float *y, size_t ldy, int mr,
                         int nr, const float *b, int first, int gelu) {
    kernel_c(xp, wp, kk, y, ldy, mr, nr, b, first, gelu, 0);
}

static void kernel_bf16_c(const void *xp, const void *wp, int kk, float *y, size_t ldy, int mr,
                          int nr, const float *b, int first, int gelu) {
    kernel_c(xp, wp, kk, y, ldy, mr, nr, b, first, gelu, 1);
}

/* ---- the driver ---- */

static void gemm_bias_only(float *y, int ldy, const float *b, int M, int N, int epi) {
    for (int i = 0; i < M; i++) {   /* K = 0: y = b (or 0) (+ y), then the activation */
        float *yr = y + (size_t)i * ldy;
        for (int j = 0; j < N; j++) yr[j] = (b ? b[j] : 0.0f) + ((epi & K_GEMM_ACC) ? yr[j] : 0.0f);
        if (epi & K_GEMM_GELU) k_gelu(yr, (size_t)N);
    }
}

/* The rows of w that the block after (k0, n0) packs, fetched a share at a
 * time while this block's tiles run: a block's packing then reads its
 * weights from the cache, not from memory (the output matrix of a text
 * model is 100 MB and more, read once a decode step). */
typedef struct {
    const char *row;   /* the row being fetched, at the next block's k0 */
    size_t pitch;      /* bytes from one row to the next */
    int rows, lines;   /* rows left (this one included), 64-byte lines of a row's segment */
    int line, per;     /* the next line of this row, and lines per tile */
} gemm_pf;

static gemm_pf gemm_pf_next(k_w w, int N, int K, int KC, int k0, int n0, int nc, int tiles) {
    gemm_pf f = {NULL, 0, 0, 0, 0, 0};
    int k1 = k0, n1 = n0 + nc;
    if (n1 >= N) k1 = k0 + KC, n1 = 0;
    if (k1 >= K) return f;
    size_t esz = w.t == K_F32 ? 4 : 2;
    int kc = K - k1 < KC ? K - k1 : KC;
    f.rows = N - n1 < nc ? N - n1 : nc;
    f.pitch = (size_t)K * esz;
    f.row = (const char *)w.p + (size_t)n1 * f.pitch + (size_t)k1 * esz;
    f.lines = (int)(((size_t)kc * esz + 63) / 64);
    f.per = (int)(((size_t)f.rows * f.lines + (size_t)tiles - 1) / (size_t)tiles);
    return f;
}

static void gemm_pf_take(gemm_pf *f) {
    for (int i = 0; i < f->per && f->rows > 0; i++) {
        __builtin_prefetch(f->row + (size_t)f->line * 64, 0, 2);
        if (++f->line == f->lines && --f->rows > 0) f->line = 0, f->row += f->pitch;
    }
}

static void gemm_run(const gemm_impl *im, float *y, int ldy, const float *x, int ldx, k_w w,
                     const float *b, int M, int N, int K, int bf, int epi, void *scratch) {
    if (K <= 0) {
        gemm_bias_only(y, ldy, b, M, N, epi);
        return;
    }
    const int MR = im->mr, NR = im->nr, KC = im->kc;
    size_t esz = bf ? 2 : 4, pitch = (size_t)KC * esz;   /* bytes */
    size_t xpan = MR * pitch;
    int Mp = rup(M, MR), nc = nc_block(N, K, KC, bf, esz, im->wblock);
    /* scratch should be 64-byte aligned; a caller's malloc that is not still
     * works (the aligned loads of the panels would fault) */
    char *xp = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    char *wp = xp + (((size_t)Mp * pitch + 63) & ~(size_t)63);
    for (int k0 = 0; k0 < K; k0 += KC) {
        int kc = K - k0 < KC ? K - k0 : KC, kk = bf ? (kc + 1) / 2 : kc;
        int first = k0 == 0 && !(epi & K_GEMM_ACC), last = k0 + kc == K;
        const float *bk = k0 == 0 ? b : NULL;   /* the bias joins the first K block */
        size_t wpan = (size_t)NR * kk * 4;   /* bytes of a w micro-panel */
        for (int n0 = 0; n0 < N; n0 += nc) {
            int nn = N - n0 < nc ? N - n0 : nc;
            im->pack_w(wp, w, K, n0, nn, k0, kc, bf);
            gemm_pf pf = {NULL, 0, 0, 0, 0, 0};
            if (im->pf_next && w.t != K_BF16A)
                pf = gemm_pf_next(w, N, K, KC, k0, n0, nc, (Mp / MR) * ((nn + NR - 1) / NR));
            for (int m = 0; m < M; m += MR) {
                char *xm = xp + (size_t)(m / MR) * xpan;
                int mr = M - m < MR ? M - m : MR;
                /* x panels are packed on first use, then kept for the later
                 * n0 blocks. (Software prefetch of the next panel's rows was
                 * tried: its stalls cost more than it saved.) */
                if (n0 == 0) im->pack_x(xm, x + (size_t)m * ldx + k0, ldx, mr, MR, kc, bf);
                for (int j = 0; j < nn; j += NR) {
                    if (pf.row) gemm_pf_take(&pf);
                    im->kernel(xm, wp + (size_t)(j / NR) * wpan, kk,
                               y + (size_t)m * ldy + n0 + j, (size_t)ldy, mr,
                               nn - j < NR ? nn - j : NR, bk ? bk + n0 + j : NULL, first,
                               (epi & K_GEMM_GELU) && last);
                }
            }
        }
    }
}

int k_gemm_path(int isa, k_gemm_mode mode) {
    isa = k_isa_at(isa);
#ifdef GEMM_X86
    int bf = mode == K_GEMM_BF16;
    if (isa >= 3 && bf && HAS_AVX512BF16 && gemm_amx_ok()) return 3;
    if (isa >= 2 && (bf ? HAS_AVX512BF16 : HAS_AVX512)) return 2;
    if (isa >= 1) return 1;   /* k_isa: AVX2 + FMA + F16C */
#else
    (void)mode;
#endif
    return 0;
}

/* AVX2's 6 x 16 kernel runs at 0.87-1.0x BLIS's on the encoder shapes
 * (gemm_bench -d 512 -m 1500 -t 2, AMD EPYC Zen 2; 0.8-0.9x measured on a
 * Zen 3 before) but its sums follow K's blocking only, while BLIS's kernels
 * change with the shape of each call (Zen 3's below 512 rows), which made
 * the outputs change with the thread count: the op layer prefers it from
 * AVX2 up. */
int k_gemm_has(k_gemm_mode mode) { return k_gemm_path(K_ISA_AVX512, mode) >= 1; }

int k_gemm_has_amx(void) { return k_gemm_path(K_ISA_AMX, K_GEMM_BF16) == 3; }

int gemm_packed_isa(int isa, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
                    int M, int N, int K, k_gemm_mode mode, int epi, void *scratch) {
    int bf = mode == K_GEMM_BF16, used = k_gemm_path(isa, mode);
    int KC = bf ? GEMM_KC_B : GEMM_KC_F;
    gemm_impl im = {pack_x_c, pack_w_c, bf ? kernel_bf16_c : kernel_f32_c, GEMM_MR, GEMM_NR, KC,
                    W_BLOCK_BYTES, 0};
    if (used == 3) {
        if (M > 0 && N > 0) {
            if (K > 0) gemm_run_amx(y, ldy, x, ldx, w, b, M, N, K, epi, scratch);
            else gemm_bias_only(y, ldy, b, M, N, epi);
        }
        return 3;
    }
    if (w.t == K_BF16A) used = 0;   /* (packed for AMX: read by C) */
#ifdef GEMM_X86
    if (used == 2)
        im = (gemm_impl){gemm_pack_x_avx512, gemm_pack_w_avx512,
                         bf ? gemm_kernel_bf16_avx512 : gemm_kernel_f32_avx512, GEMM_MR, GEMM_NR, KC,
                         W_BLOCK_BYTES, 0};
    if (used == 1) {   /* bf16 mode in the f32 layouts: x rounded while packed */
        im = (gemm_impl){bf ? gemm_pack_x_bf_avx2 : gemm_pack_x_avx2,
                         bf ? gemm_pack_w_bf_avx2 : gemm_pack_w_avx2, gemm_kernel_f32_avx2,
                         GEMM_MR_AVX2, GEMM_NR_AVX2, GEMM_KC_AVX2, GEMM_WBLOCK_AVX2, 1};
        bf = 0;
    }
#endif
    if (M > 0 && N > 0) gemm_run(&im, y, ldy, x, ldx, w, b, M, N, K, bf, epi, scratch);
    return used;
}

int k_gemm_isa(int isa, float *y, int ldy, const float *x, int ldx, k_w w, const float *b,
               int M, int N, int K, k_gemm_mode mode, int epi, void *scratch) {
#ifdef GEMM_X86
    if (mode == K_GEMM_F32 && w.t == K_F32 && gemm_ws_takes(M, N, K)) {
        int path = k_gemm_path(isa, mode);
        if (path == 2) {
            (M <= 16 ? gemm_run_ws16 : gemm_run_ws)(y, ldy, x, ldx, w.p, b, M, N, K, epi, scratch);
            return 2;
        }
        if (path == 1 && !(epi & K_GEMM_GELU) && M <= GEMM_WS_MAX_M_AVX2) {   /* (its GELU would not be k_gelu's rows) */
            gemm_run_ws_avx2(y, ldy, x, ldx, w.p, b, M, N, K, epi, scratch);
            return 1;
        }
    }
#endif
    return gemm_packed_isa(isa, y, ldy, x, ldx, w, b, M, N, K, mode, epi, scratch);
}

int k_gemm(float *y, int ldy, const float *x, int ldx, k_w w, const float *b, int M, int N,
           int K, k_gemm_mode mode, int epi, void *scratch) {
    return k_gemm_isa(3, y, ldy, x, ldx, w, b, M, N, K, mode, epi, scratch);
}

void k_gemm_ref(float *y, int ldy, const float *x, int ldx, k_w w, const float *b, int M, int N,
                int K, k_gemm_mode mode, int epi) {
    int bf = mode == K_GEMM_BF16;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = b ? b[j] : 0.0;
            if (epi & K_GEMM_ACC) acc += y[(size_t)i * ldy + j];
            for (int k = 0; k < K; k++) {
                float xv = x[(size_t)i * ldx + k], wv = w_at(w, K, j, k);
                if (bf) xv = bf2f(k_f32_to_bf16(xv)), wv = bf2f(k_f32_to_bf16(wv));
                acc += (double)xv * wv;
            }
            if (epi & K_GEMM_GELU) acc = 0.5 * acc * (1.0 + erf(acc / sqrt(2.0)));
            y[(size_t)i * ldy + j] = (float)acc;
        }
}
