/* gemm_amx.c - k_gemm's bf16 mode on Intel AMX (AMX-TILE + AMX-BF16):
 * tdpbf16ps on 16 x 16 f32 tiles, 2 x 2 of them (32 rows x 32 columns of
 * y) per micro-step, with two A tiles (16 rows of x x 32 k) and two B tiles
 * (16 k pairs x 16 columns of w). Used when the CPU has AMX and Linux grants
 * the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, once per process);
 * gemm.c falls back to the AVX512_BF16 path otherwise.
 *
 * Numerics as the AVX512_BF16 path: x and w rounded to bf16 to nearest even
 * while packing (the same integer rounding as gemm_f32.c's packers), f32
 * accumulation (tdpbf16ps, like vdpbf16ps, treats bf16 denormals as zero),
 * bias and GELU in the epilogue.
 *
 * Layouts (per K block of kc <= GEMM_KC_A, nch = ceil(kc / 32) chunks of
 * 32 k, zero padded):
 *   x: 16-row groups, each nch A tiles of 1 KB back to back (tile (g, c):
 *      16 rows x 32 bf16, row stride 64 bytes); rows past M zero;
 *   w: 32-column panels as gemm_pack_w_avx512 writes them ([k/2][32] pairs,
 *      k even in the low half), kk padded to 16 * nch pairs: chunk c of a
 *      panel is 2 KB, its B tiles at +0 and +64 with a row stride of 128.
 * Loops: for k0 (KC_A) / n0 (a w block that stays in L2) / m (32 rows: the
 * x block, 2 * nch KB; packed on first use, n0 = 0) / 32-column panels; per
 * panel the 2 x 2 tile step over the chunks, tile stores to a 32 x 32 f32
 * block on the stack, then the AVX-512 epilogue (+ bias or y, GELU) into y
 * with masks for the ragged edges (1 or 2 row groups, 1 or 2 column halves).
 * Weights packed at load (K_BF16A, k_gemm_amx_pack) have the same panels,
 * for the whole K at once: panel p, chunk c (of 32 k) at (p * ceil(K / 32)
 * + c) * 2 KB; the loops then read them in place and pack only x.
 * Tiles: tmm0..3 C (C00 C01 C10 C11), tmm4..5 A, tmm6..7 B. Every call
 * loads the tile configuration on its own thread and releases it at the
 * end (callers run k_gemm on several threads at once).
 */
#include "kern/gemm.h"

#include <string.h>

#ifndef GEMM_KC_A
#define GEMM_KC_A 1536  /* k per block (a multiple of 32). Whole K for the encoder: fewer
                         * passes over y beat an x block in L1 (measured: 256, 384, 768 slower) */
#endif
#ifndef AMX_W_BLOCK_BYTES
#define AMX_W_BLOCK_BYTES (768 << 10)
#endif

static inline int rup(int v, int m) { return (v + m - 1) / m * m; }

static int kca_max(int K) { return K < GEMM_KC_A ? rup(K, 32) : GEMM_KC_A; }

/* Columns of w per block: N in near-equal parts of at most AMX_W_BLOCK_BYTES. */
static int nc_amx(int N, int K) {
    size_t col = (size_t)kca_max(K) * 2;
    size_t nb = ((size_t)rup(N, GEMM_NR) * col + AMX_W_BLOCK_BYTES - 1) / AMX_W_BLOCK_BYTES;
    if (nb < 1) nb = 1;
    return rup((int)((N + nb - 1) / nb), GEMM_NR);
}

static size_t x_bytes(int M, int K) { return (size_t)rup(M, 32) * (size_t)kca_max(K) * 2; }

size_t k_gemm_amx_bytes(int N, int K) {
    if (N < 1 || K < 1) return 64;
    return (size_t)(rup(N, 32) / 32) * (size_t)((K + 31) / 32) * 2048;
}

float k_gemm_amx_at(const void *p, int K, int n, int k) {
    size_t off = ((size_t)(n / 32) * (size_t)((K + 31) / 32) + (size_t)(k / 32)) * 1024 +
                 (size_t)((k % 32) / 2) * 64 + (size_t)(n % 32) * 2 + (size_t)(k & 1);
    uint16_t h = ((const uint16_t *)p)[off];
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

size_t gemm_amx_scratch_bytes(int M, int N, int K) {
    if (M < 1) M = 1;
    if (N < 1) N = 1;
    if (K < 1) K = 1;
    size_t wb = (size_t)nc_amx(N, K) * (size_t)kca_max(K) * 2;
    return ((x_bytes(M, K) + 63) & ~(size_t)63) + ((wb + 63) & ~(size_t)63) + 64;
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define GEMM_AMX_BUILT 1
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kern/x86.h"

#define AMX K_AMX
#define MEMBAR K_MEMBAR

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int g_amx;
static pthread_once_t g_amx_once = PTHREAD_ONCE_INIT;

static void amx_init(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    if (!(d & (1u << 22)) || !(d & (1u << 24))) return;   /* AMX-BF16, AMX-TILE */
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512bf16")))
        return;
    /* Linux >= 5.16: tile data is off until the process asks for it; a
     * kernel without AMX support (or a seccomp filter) refuses */
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return;
    g_amx = 1;
}

int gemm_amx_ok(void) {
    pthread_once(&g_amx_once, amx_init);
    return g_amx;
}





/* Rows [0, 16) of a 16-row group (mr valid) of x[:, 0 .. kc) into nch A tiles. */
AMX static void pack_x_group(char *xg, const float *x, int ldx, int mr, int kc, int nch) {
    for (int r = 0; r < 16; r++) {
        char *d = xg + (size_t)r * 64;
        if (r >= mr) {
            for (int c = 0; c < nch; c++) _mm512_store_si512(d + (size_t)c * 1024, _mm512_setzero_si512());
            continue;
        }
        const float *xr = x + (size_t)r * ldx;
        int c = 0;
        for (; (c + 1) * 32 <= kc; c++) {
            __m512 a = _mm512_loadu_ps(xr + c * 32), b = _mm512_loadu_ps(xr + c * 32 + 16);
            _mm512_store_si512(d + (size_t)c * 1024, k_to_bf16x32(a, b));
        }
        for (; c < nch; c++) {
            int k = c * 32;
            __m512 a = _mm512_maskz_loadu_ps(k_mask16(kc - k), xr + k);
            __m512 b = _mm512_maskz_loadu_ps(k_mask16(kc - k - 16), xr + k + 16);
            _mm512_store_si512(d + (size_t)c * 1024, k_to_bf16x32(a, b));
        }
    }
}

/* y[mr, nr] (ldy) = acc (32 x 32, row stride 32) + (b or 0) + (first ? 0 : y). */
AMX static inline void epilogue(const float *acc, float *y, size_t ldy, int mr, int nr,
                                const float *b, int first) {
    __mmask16 m0 = k_mask16(nr), m1 = k_mask16(nr - 16);
    __m512 b0 = _mm512_setzero_ps(), b1 = b0;
    if (b) b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
    for (int i = 0; i < mr; i++) {
        float *yr = y + (size_t)i * ldy;
        const float *ar = acc + (size_t)i * 32;
        __m512 s0 = first ? b0 : _mm512_add_ps(b0, _mm512_maskz_loadu_ps(m0, yr));
        _mm512_mask_storeu_ps(yr, m0, _mm512_add_ps(_mm512_load_ps(ar), s0));
        if (nr > 16) {
            __m512 s1 = first ? b1 : _mm512_add_ps(b1, _mm512_maskz_loadu_ps(m1, yr + 16));
            _mm512_mask_storeu_ps(yr + 16, m1, _mm512_add_ps(_mm512_load_ps(ar + 16), s1));
        }
    }
}

/* The 2 x 2 tile step over nch chunks: a0, a1 the two row groups' A tiles
 * (1 KB apart per chunk), bp the panel (2 KB per chunk). two_m / two_n: the
 * second row group / column half exists (constants after inlining). */
#define AMX_STEP(two_m, two_n)                                         \
    for (int c = 0; c < nch; c++) {                                    \
        _tile_loadd(4, a0 + (size_t)c * 1024, 64);                     \
        _tile_loadd(6, bp + (size_t)c * 2048, 128);                    \
        _tile_dpbf16ps(0, 4, 6);                                       \
        if (two_n) {                                                   \
            _tile_loadd(7, bp + (size_t)c * 2048 + 64, 128);           \
            _tile_dpbf16ps(1, 4, 7);                                   \
        }                                                              \
        if (two_m) {                                                   \
            _tile_loadd(5, a1 + (size_t)c * 1024, 64);                 \
            _tile_dpbf16ps(2, 5, 6);                                   \
            if (two_n) _tile_dpbf16ps(3, 5, 7);                        \
        }                                                              \
    }

AMX static void amx_block(const char *a0, const char *bp, int nch, float *acc) {
    const char *a1 = a0 + (size_t)nch * 1024;
    MEMBAR(acc);   /* the previous epilogue's loads of acc stay before the stores below */
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    AMX_STEP(1, 1)
    _tile_stored(0, acc, 128);
    _tile_stored(1, acc + 16, 128);
    _tile_stored(2, acc + 512, 128);
    _tile_stored(3, acc + 528, 128);
}

AMX static void amx_block_edge(const char *a0, const char *bp, int nch, float *acc, int two_m,
                               int two_n) {
    const char *a1 = a0 + (size_t)nch * 1024;
    MEMBAR(acc);   /* the previous epilogue's loads of acc stay before the stores below */
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    if (two_m) {
        AMX_STEP(1, 0)
    } else if (two_n) {
        AMX_STEP(0, 1)
    } else {
        AMX_STEP(0, 0)
    }
    _tile_stored(0, acc, 128);
    _tile_stored(1, acc + 16, 128);
    _tile_stored(2, acc + 512, 128);
    _tile_stored(3, acc + 528, 128);
}

/* Panels of columns [n0, n0 + nn) of w[:, k0 .. k0 + kc) into pp, nch chunks each. */
AMX static void pack_panels(char *pp, size_t pstride, k_w w, int K, int n0, int nn, int k0, int kc) {
    int nch = (kc + 31) / 32, kk = (kc + 1) / 2;
    for (int j = 0; j < nn; j += GEMM_NR) {
        char *p = pp + (size_t)(j / GEMM_NR) * pstride;
        gemm_pack_w_avx512(p, w, K, n0 + j, nn - j < GEMM_NR ? nn - j : GEMM_NR, k0, kc, 1);
        memset(p + (size_t)kk * 128, 0, (size_t)nch * 2048 - (size_t)kk * 128);
    }
}

AMX void k_gemm_amx_pack(void *dst, k_w w, int N, int K) {
    size_t pstride = (size_t)((K + 31) / 32) * 2048;   /* one panel, all of K */
    for (int k0 = 0; k0 < K; k0 += GEMM_KC_A)
        pack_panels((char *)dst + (size_t)(k0 / 32) * 2048, pstride, w, K, 0, N,
                    k0, K - k0 < GEMM_KC_A ? K - k0 : GEMM_KC_A);
}

AMX void gemm_run_amx(float *y, int ldy, const float *x, int ldx, k_w w, const float *b, int M,
                      int N, int K, int epi, void *scratch) {
    k_amx_tiles_16x64();
    _Alignas(64) float acc[32 * 32];
    int nc = nc_amx(N, K);
    char *xp = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    char *wp = xp + ((x_bytes(M, K) + 63) & ~(size_t)63);
    int pre = w.t == K_BF16A;
    size_t pchunks = (size_t)((K + 31) / 32);
    for (int k0 = 0; k0 < K; k0 += GEMM_KC_A) {
        int kc = K - k0 < GEMM_KC_A ? K - k0 : GEMM_KC_A;
        int nch = (kc + 31) / 32;
        int first = k0 == 0 && !(epi & K_GEMM_ACC), last = k0 + kc == K;
        const float *bk = k0 == 0 ? b : NULL;   /* the bias joins the first K block */
        size_t wpan = (size_t)nch * 2048, xgrp = (size_t)nch * 1024;
        for (int n0 = 0; n0 < N; n0 += nc) {
            int nn = N - n0 < nc ? N - n0 : nc;
            /* the block's panels: packed at load (pstride apart), or now */
            const char *wb = pre ? (const char *)w.p + ((size_t)(n0 / GEMM_NR) * pchunks +
                                                        (size_t)(k0 / 32)) * 2048
                                 : wp;
            size_t pstride = pre ? pchunks * 2048 : wpan;
            if (!pre) pack_panels(wp, wpan, w, K, n0, nn, k0, kc);
            for (int m = 0; m < M; m += 32) {
                char *xm = xp + (size_t)(m / 16) * xgrp;
                int mr = M - m < 32 ? M - m : 32;
                if (n0 == 0) {
                    pack_x_group(xm, x + (size_t)m * ldx + k0, ldx, mr < 16 ? mr : 16, kc, nch);
                    if (mr > 16)
                        pack_x_group(xm + xgrp, x + (size_t)(m + 16) * ldx + k0, ldx, mr - 16, kc, nch);
                }
                MEMBAR(xm);
                /* (Software prefetch of y's tile lines and of the next
                 * block's rows of x, spread over the panels, was tried:
                 * 5-20% slower.) */
                for (int j = 0; j < nn; j += GEMM_NR) {
                    int nr = nn - j < GEMM_NR ? nn - j : GEMM_NR;
                    const char *pp = wb + (size_t)(j / GEMM_NR) * pstride;
                    float *yt = y + (size_t)m * ldy + n0 + j;
                    if (mr > 16 && nr > 16) amx_block(xm, pp, nch, acc);
                    else amx_block_edge(xm, pp, nch, acc, mr > 16, nr > 16);
                    MEMBAR(acc);
                    epilogue(acc, yt, (size_t)ldy, mr, nr, bk ? bk + n0 + j : NULL, first);
                    if ((epi & K_GEMM_GELU) && last) gemm_gelu_tile_avx512(yt, (size_t)ldy, mr, nr);
                }
            }
        }
    }
    _tile_release();
}

#else

int gemm_amx_ok(void) { return 0; }

void k_gemm_amx_pack(void *dst, k_w w, int N, int K) { (void)dst, (void)w, (void)N, (void)K; }

void gemm_run_amx(float *y, int ldy, const float *x, int ldx, k_w w, const float *b, int M,
                  int N, int K, int epi, void *scratch) {
    (void)y, (void)ldy, (void)x, (void)ldx, (void)w, (void)b, (void)M, (void)N, (void)K;
    (void)epi, (void)scratch;
}

#endif
