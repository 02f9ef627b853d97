/* matmul_hp_amx.c - the bf16 compute mode's few-row products on Intel AMX,
 * reading the bf16 panels of matmul_hp.h in place.
 *
 * A bf16 panel holds, per pair of k, 16 words of (w[n][k], w[n][k+1]): 16
 * pairs of k are exactly an AMX B tile (16 rows of 64 bytes), so chunk c
 * (32 k) of panel p is one 1 KB tile at p * 16K' + 512c halves. Per group
 * of up to 4 panels (64 outputs) the kernel keeps 4 C tiles (R rows x 16
 * f32), and per chunk loads one A tile (R rows of x, 32 bf16 each) and the
 * group's B tiles, tdpbf16ps each. The C tiles go through a 4 KB stack
 * block to y (+ bias, masked to [n0, n0 + nn)).
 *
 * x is rounded to bf16 to nearest even (as k_gemm's bf16 mode packs it)
 * into a stack buffer, once per call when K <= HPA_KB, else per group and
 * block of HPA_KB k (the C tiles stay in registers across blocks, so the
 * sums are the same). Rows go in chunks of up to 16; the tile unit computes
 * each row of C from that row of A alone, so a row's bits do not depend on
 * M (tested). Tiles: tmm0..3 C, tmm4 A, tmm5..7 B (tmm5 twice per chunk).
 * Weights are read as the panels lie; no software prefetch (measured: the
 * hardware streams four sequential panels as well, and hot matrices lose
 * to the extra instructions).
 */
#include "kern/gemm.h"
#include "kern/half.h"
#include "kern/matmul_hp.h"

#include <string.h>

#define HPA_KB 2048   /* k of x held as bf16 at once: 16 rows x 2048 x 2 = 64 KB of stack */

int k_matmul_hp_amx_has(void) { return k_gemm_has_amx(); }

static int args_ok(const uint16_t *wp, int M, int n0, int nn, int N, int K) {
    return wp && N >= 1 && K >= 1 && M >= 0 && n0 >= 0 && nn >= 0 && n0 <= N && nn <= N - n0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "kern/x86.h"

/* Tiles 0..4 (C, A) R rows, 5..7 (B) 16 rows; all 64 bytes wide. */
K_AMX static void tiles_rows(int R) {
    k_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = (uint8_t)(t < 5 ? R : 16), cfg.colsb[t] = 64;
    K_MEMBAR(&cfg);
    _tile_loadconfig(&cfg);
}

/* R rows of x[:, k0 .. k0 + kk) to bf16 at xb (row stride ldb halves),
 * zero up to the next multiple of 32. */
K_AVX512 static void x_to_bf16(uint16_t *xb, int ldb, const float *x, int ldx, int R, int k0,
                               int kk) {
    int kc = (kk + 31) / 32 * 32;
    for (int r = 0; r < R; r++) {
        const float *s = x + (size_t)r * ldx + k0;
        uint16_t *d = xb + (size_t)r * ldb;
        for (int k = 0; k < kc; k += 32) {
            __m512 a = _mm512_maskz_loadu_ps(k_mask16(kk - k), s + k);
            __m512 b = _mm512_maskz_loadu_ps(k_mask16(kk - k - 16), s + k + 16);
            _mm512_storeu_si512((void *)(d + k), k_to_bf16x32(a, b));
        }
    }
}

/* Rows [m0, m0 + R) of y, panels [p0, p1) of columns [n0, n1). */
K_AMX static void chunk_amx(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                            const float *b, int R, int p0, int p1, int n0, int n1, int K) {
    uint16_t xb[16 * HPA_KB] __attribute__((aligned(64)));
    float cb[16 * 64] __attribute__((aligned(64)));
    size_t ps = (size_t)16 * ((K + 31) / 32 * 32);   /* halves per panel */
    int whole = K <= HPA_KB, ldb = whole ? (K + 31) / 32 * 32 : HPA_KB;
    if (whole) x_to_bf16(xb, ldb, x, ldx, R, 0, K);
    tiles_rows(R);
    for (int p = p0; p < p1; p += 4) {
        int B = p1 - p < 4 ? p1 - p : 4;
        const uint16_t *w = wp + (size_t)p * ps;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int k0 = 0; k0 < K; k0 += HPA_KB) {
            int kk = K - k0 < HPA_KB ? K - k0 : HPA_KB, nch = (kk + 31) / 32;
            const uint16_t *a = xb;
            if (!whole) x_to_bf16(xb, ldb, x, ldx, R, k0, kk);
            else a = xb + k0;
            K_MEMBAR(xb);
            for (int c = 0; c < nch; c++) {
                const uint16_t *wc = w + (size_t)(k0 / 32 + c) * 512;
                _tile_loadd(4, a + (size_t)c * 32, ldb * 2);
                _tile_loadd(5, wc, 64);
                _tile_dpbf16ps(0, 4, 5);
                if (B > 1) {
                    _tile_loadd(6, wc + ps, 64);
                    _tile_dpbf16ps(1, 4, 6);
                }
                if (B > 2) {
                    _tile_loadd(7, wc + 2 * ps, 64);
                    _tile_dpbf16ps(2, 4, 7);
                }
                if (B > 3) {
                    _tile_loadd(5, wc + 3 * ps, 64);
                    _tile_dpbf16ps(3, 4, 5);
                }
            }
        }
        _tile_stored(0, cb, 256);
        _tile_stored(1, cb + 16, 256);
        _tile_stored(2, cb + 32, 256);
        _tile_stored(3, cb + 48, 256);
        K_MEMBAR(cb);
        for (int q = 0; q < B; q++) {
            int col = (p + q) * 16;
            int lo = n0 - col > 0 ? n0 - col : 0, hi = n1 - col < 16 ? n1 - col : 16;
            if (hi <= lo) continue;
            __mmask16 mask = (__mmask16)(k_mask16(hi) & ~k_mask16(lo));
            __m512 bv = b ? _mm512_maskz_loadu_ps(mask, b + col) : _mm512_setzero_ps();
            for (int r = 0; r < R; r++)
                _mm512_mask_storeu_ps(y + (size_t)r * ldy + col, mask,
                                      _mm512_add_ps(_mm512_load_ps(cb + r * 64 + q * 16), bv));
        }
    }
    _tile_release();
}
#endif

int k_matmul_hp_amx(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                    const float *b, int M, int n0, int nn, int N, int K) {
    if (!args_ok(wp, M, n0, nn, N, K) || !k_matmul_hp_amx_has()) return -1;
#if defined(__x86_64__) && defined(__GNUC__)
    if (M == 0 || nn == 0) return 3;
    int p0 = n0 / 16, p1 = (n0 + nn + 15) / 16;
    for (int m0 = 0; m0 < M; m0 += 16) {
        int R = M - m0 < 16 ? M - m0 : 16;
        chunk_amx(y + (size_t)m0 * ldy, ldy, x + (size_t)m0 * ldx, ldx, wp, b, R, p0, p1, n0,
                  n0 + nn, K);
    }
    return 3;
#else
    return -1;
#endif
}

void k_matmul_hp_amx_ref(float *y, int ldy, const float *x, int ldx, const uint16_t *wp,
                         const float *b, int M, int n0, int nn, int N, int K) {
    if (!args_ok(wp, M, n0, nn, N, K)) return;
    for (int i = 0; i < M; i++)
        for (int n = n0; n < n0 + nn; n++) {
            double acc = b ? b[n] : 0.0;
            for (int k = 0; k < K; k++)
                acc += (double)k_h2f(k_f32_to_bf16(x[(size_t)i * ldx + k]), 1) *
                       k_h2f(wp[k_hp_index(1, n, k, K)], 1);
            y[(size_t)i * ldy + n] = (float)acc;
        }
}
