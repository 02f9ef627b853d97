/* q8.c - int8 weight matrices (one scale per output row) times activations
 * quantised per row on the fly; see q8.h for the arithmetic and the layout.
 *
 * The AVX-512 VNNI kernel computes tiles of R activation rows (1..6) x B
 * panels (1..4, 16 outputs each): per group of 4 k it loads B 64-byte weight
 * vectors, broadcasts 4 activation bytes per row and issues R x B vpdpbusd
 * into R x B int32 accumulators (at most 24 + 4 + 1 of the 32 registers).
 * Outputs lie across the lanes, so no horizontal sums: the epilogue
 * subtracts the offset constants, converts, scales and stores 16 columns at
 * once (masked at the edges of [n0, n0 + nn)).
 *
 * Few rows (decode, M <= 6): one tile height, so every weight byte is loaded
 * once and used for all rows while in a register. A tile reads 4 panels as
 * 4 sequential streams (measured faster than one interleaved stream of 64
 * outputs: more streams for the hardware prefetchers) and prefetches the
 * next tile's 4 panels at the same offsets (M = 5 at 94% of the read
 * bandwidth instead of 82%), into L2 (prefetcht1; into L1 they held fill
 * buffers the loads wait on: AMD EPYC Zen 4, [51866 x 384], of the read
 * bandwidth, 1 row 80% -> 98% on one thread, 86% -> 102% on two; 5 rows
 * 60% -> 85%, 77% -> 87%; the AVX2 tiles, q8_avx2.c, were measured better
 * with prefetcht0 and keep it). Many rows: the columns go in blocks of about
 * 128 KB of weights (kept in L2), and every chunk of up to 6 rows sweeps the
 * block: weights come from memory once (the first chunk, prefetching as
 * above) and from L2 once per further chunk (prefetching 512 bytes ahead).
 *
 * The portable C version and the scalar twin are plain C; both share the
 * activation quantiser's definition with the AVX-512 one (same amax, same
 * 127/amax, the same round-to-nearest-even and clamp) and the same fmaf
 * epilogue, so all three agree exactly.
 */
#include "kern/poly.h"
#include "kern/q8.h"
#include "kern/q8_impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define K_X86 1
#define Q8_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define Q8_HAS_VNNI (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && \
                     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
#endif

#define Q8_ROWS 6                     /* rows per tile, at most */
#define Q8_BLOCK_BYTES (128 << 10)    /* weights per column block (many rows) */

size_t k_q8_bytes(int N, int K) {
    if (N < 1 || K < 1 || K > K_Q8_MAX_K) return 0;
    size_t Np = rup((size_t)N, 16), Kp = rup((size_t)K, 4);
    return Np * Kp + Np * (sizeof(float) + sizeof(int32_t));
}

/* kk values f / sn -> q8_round, into out[kk] (the loop vectorises once
 * q8_round is inlined: the same division and rounding per element, lane by
 * lane); returns their sum. */
K_CLONED(static, int32_t, q8_quant_chunk, (int8_t *out, const float *f, int kk, float sn),
         (out, f, kk, sn)) {
    int32_t sum = 0;
    for (int k = 0; k < kk; k++) {
        int v = q8_round(f[k] / sn);
        out[k] = (int8_t)v;
        sum += v;
    }
    return sum;
}

/* acc[0] += sum (f - sn q)^2, acc[1] += sum (sn q)^2 over kk values, in
 * double (sn q is exact there), 4 lanes each. */
K_CLONED(static, void, q8_err_chunk, (const float *f, const int8_t *q, int kk, float sn, double *acc),
         (f, q, kk, sn, acc)) {
    double e[4] = {0}, h[4] = {0};
    int k = 0;
    for (; k + 4 <= kk; k += 4)
        for (int j = 0; j < 4; j++) {
            double wh = (double)sn * q[k + j], d = (double)f[k + j] - wh;
            e[j] += d * d;
            h[j] += wh * wh;
        }
    for (; k < kk; k++) {
        double wh = (double)sn * q[k], d = (double)f[k] - wh;
        e[0] += d * d;
        h[0] += wh * wh;
    }
    acc[0] += (e[0] + e[1]) + (e[2] + e[3]);
    acc[1] += (h[0] + h[1]) + (h[2] + h[3]);
}

/* sum f^2 over kk values in double (NaN and Inf carried), 4 lanes. */
K_CLONED(static, double, q8_sq_chunk, (const float *f, int kk), (f, kk)) {
    double l[4] = {0};
    int k = 0;
    for (; k + 4 <= kk; k += 4)
        for (int j = 0; j < 4; j++) l[j] += (double)f[k + j] * f[k + j];
    for (; k < kk; k++) l[0] += (double)f[k] * f[k];
    return (l[0] + l[1]) + (l[2] + l[3]);
}

/* max |f[k]| over kk values, at least m (NaNs skipped), in 16 lanes. */
K_CLONED(static, float, q8_absmax, (const float *f, int kk, float m),
         (f, kk, m)) {
    float l[16] = {0};
    int k = 0;
    for (; k + 16 <= kk; k += 16)
        for (int j = 0; j < 16; j++) {
            float a = fabsf(f[k + j]);
            l[j] = a > l[j] ? a : l[j];
        }
    for (int j = 0; j < 16; j++) m = l[j] > m ? l[j] : m;
    for (; k < kk; k++) {
        float a = fabsf(f[k]);
        if (a > m) m = a;
    }
    return m;
}

k_q8 k_q8_pack(void *dst, k_w w, int N, int K) {
    k_q8 out = {NULL, 0, 0};
    if (!dst || !k_q8_bytes(N, K)) return out;
    memset(dst, 0, k_q8_bytes(N, K));
    out.data = dst, out.N = N, out.K = K;
    if (k_q8_pack_rows(out, w, 0, N, NULL) != 0) out.data = NULL;   /* w: all N rows */
    return out;
}

int k_q8_pack_rows(k_q8 out, k_w w, int n0, int n1, k_q8_norms *nrm) {
    if (!out.data || !w.p || !k_q8_bytes(out.N, out.K) || n0 < 0 || n1 > out.N || n0 > n1 ||
        (w.t != K_F32 && w.t != K_F16 && w.t != K_BF16))
        return -1;
    int K = out.K;
    q8_parts p = parts(out);
    int8_t *q = (int8_t *)out.data;
    float *s = (float *)p.s;
    int32_t *c = (int32_t *)p.c;
    float buf[256];
    for (int n = n0; n < n1; n++) {
        /* two passes over the row, in chunks expanded to f32 */
        float amax = 0.0f;
        double ww = 0, acc[2] = {0, 0};
        for (int k0 = 0; k0 < K; k0 += 256) {
            int kk = K - k0 < 256 ? K - k0 : 256;
            const float *f = buf;
            if (w.t == K_F32) f = (const float *)w.p + (size_t)(n - n0) * K + k0;
            else k_h_to_f32(buf, (const uint16_t *)w.p + (size_t)(n - n0) * K + k0, (size_t)kk, w.t == K_BF16);
            amax = q8_absmax(f, kk, amax);
            if (nrm) ww += q8_sq_chunk(f, kk);
        }
        float sn = amax / 127.0f;
        if (!(sn >= FLT_MIN) || !(sn <= FLT_MAX)) sn = 0.0f;   /* zero (or tiny / non-finite) row */
        s[n] = sn;
        int32_t sum = 0;
        int8_t *panel = q + (size_t)(n / 16) * 16 * p.Kp + (n % 16) * 4;
        for (size_t g = 0; g < (size_t)p.Kp / 4; g++) memset(panel + g * 64, 0, 4);
        c[n] = 0;
        if (sn == 0.0f) acc[0] = ww;   /* the row as zeros */
        for (int k0 = 0; sn != 0.0f && k0 < K; k0 += 256) {
            int kk = K - k0 < 256 ? K - k0 : 256;
            const float *f = buf;
            if (w.t == K_F32) f = (const float *)w.p + (size_t)(n - n0) * K + k0;
            else k_h_to_f32(buf, (const uint16_t *)w.p + (size_t)(n - n0) * K + k0, (size_t)kk, w.t == K_BF16);
            int8_t qv[256];
            sum += q8_quant_chunk(qv, f, kk, sn);
            if (nrm) q8_err_chunk(f, qv, kk, sn, acc);
            int8_t *g = panel + (size_t)(k0 / 4) * 64;   /* k0 is a multiple of 4: groups of 4 k */
            int k = 0;
            for (; k + 4 <= kk; k += 4, g += 64) memcpy(g, qv + k, 4);
            if (k < kk) memcpy(g, qv + k, (size_t)(kk - k));
        }
        c[n] = 128 * sum;
        if (nrm) {
            if (!(ww < INFINITY)) nrm->finite = 0;
            nrm->err = fmax(nrm->err, sqrt(acc[0]));
            nrm->q = fmax(nrm->q, sqrt(acc[1]));
            nrm->w = fmax(nrm->w, sqrt(ww));
        }
    }
    return 0;
}

void k_q8_row(float *dst, k_q8 w, int n) {
    q8_parts p = parts(w);
    const int8_t *panel = p.q + (size_t)(n / 16) * 16 * p.Kp + (n % 16) * 4;
    float sn = p.s[n];
    for (int k = 0; k < w.K; k++) dst[k] = sn * (float)panel[(size_t)(k / 4) * 64 + k % 4];
}

/* ---- activations ---- */

size_t k_q8_scratch_bytes(int M, int K) {
    if (M < 1 || K < 1) return 0;
    return rup(sizeof(float) * (size_t)M, 64) + (size_t)M * xstride(K);
}

static float q8_amax_c(const float *x, int K) {
    float amax = 0.0f;
    for (int k = 0; k < K; k++) {
        float a = fabsf(x[k]);
        if (a > amax) amax = a;
    }
    return amax;
}

double k_q8_quant_err(const float *x, int K) {
    float sx, inv = q8_inv(q8_amax_c(x, K), &sx);
    double e = 0;
    for (int k = 0; k < K; k++) {
        double d = (double)x[k] - (double)sx * q8_round(x[k] * inv);
        e += d * d;
    }
    return sqrt(e);
}

static void q8_quant_rows_c(uint8_t *xq, size_t xs, float *sx, const float *x, int ldx, int M, int K) {
    for (int i = 0; i < M; i++) {
        const float *xi = x + (size_t)i * ldx;
        uint8_t *d = xq + (size_t)i * xs;
        float inv = q8_inv(q8_amax_c(xi, K), &sx[i]);
        for (int k = 0; k < K; k++) d[k] = (uint8_t)(q8_round(xi[k] * inv) + 128);
        memset(d + K, 128, xs - (size_t)K);
    }
}

/* ---- portable C ---- */

/* GCC 12's loop vectorizer, at the -O3 the kernels build with, turned
 * panel_c's group loop into code that loads one group past the last row,
 * beyond the scratch (a fault when the scratch ends at a page: --compute
 * int8 with 2 threads on CPUs without AVX-512 VNNI). Left scalar, the loop
 * is also ~1.4x faster (tiny's 1536 x 384 product: 9.5 against 6.6 GOP/s
 * for 8 rows, AMD EPYC AVX2). test_q8 guards the scratch with a page. */
#if defined(__GNUC__) && !defined(__clang__)
#define Q8_PORTABLE __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define Q8_PORTABLE
#endif

/* R rows (1 or 4, a constant after inlining) against one panel of 16 outputs. */
Q8_PORTABLE static inline __attribute__((always_inline)) void panel_c(const int R, int32_t out[4][16],
                                                          const int8_t *wp, const uint8_t *xq,
                                                          size_t xs, int G) {
    int32_t acc[4][16] = {{0}};   /* local: the int8 loads cannot alias it */
    for (int g = 0; g < G; g++) {
        const int8_t *wg = wp + (size_t)g * 64;
        for (int i = 0; i < R; i++) {
            const uint8_t *xg = xq + (size_t)i * xs + 4 * (size_t)g;
            int x0 = xg[0] - 128, x1 = xg[1] - 128, x2 = xg[2] - 128, x3 = xg[3] - 128;
            for (int j = 0; j < 16; j++)
                acc[i][j] += x0 * wg[4 * j] + x1 * wg[4 * j + 1] + x2 * wg[4 * j + 2] + x3 * wg[4 * j + 3];
        }
    }
    memcpy(out, acc, sizeof(int32_t) * 16 * (size_t)R);
}

/* Per panel, rows in fours (each weight group read once per 4 rows), then one by one. */
Q8_PORTABLE static void matmul_q8_c(float *y, int ldy, const uint8_t *xq, size_t xs, const float *sx, k_q8 w,
                        const float *b, int M, int n0, int nn) {
    q8_parts p = parts(w);
    int G = p.Kp / 4;
    for (int pn = n0 / 16; pn * 16 < n0 + nn; pn++) {
        const int8_t *wp = p.q + (size_t)pn * 16 * p.Kp;
        int lo = n0 - pn * 16 > 0 ? n0 - pn * 16 : 0;
        int hi = n0 + nn - pn * 16 < 16 ? n0 + nn - pn * 16 : 16;
        for (int i0 = 0; i0 < M;) {
            int R = M - i0 >= 4 ? 4 : 1;
            int32_t acc[4][16];
            if (R == 4) panel_c(4, acc, wp, xq + (size_t)i0 * xs, xs, G);
            else panel_c(1, acc, wp, xq + (size_t)i0 * xs, xs, G);
            for (int i = 0; i < R; i++)
                for (int j = lo; j < hi; j++) {
                    int n = pn * 16 + j;
                    y[(size_t)(i0 + i) * ldy + n] = q8_out(acc[i][j], sx[i0 + i], p.s[n], b, n);
                }
            i0 += R;
        }
    }
}

/* ---- AVX-512 VNNI ---- */

#ifdef K_X86
Q8_TARGET static void q8_quant_rows_avx512(uint8_t *xq, size_t xs, float *sx, const float *x,
                                           int ldx, int M, int K) {
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    const __m512i bias = _mm512_set1_epi32(128);
    int kt = K % 16;
    __mmask16 tail = (__mmask16)((1u << kt) - 1);
    for (int i = 0; i < M; i++) {
        const float *xi = x + (size_t)i * ldx;
        uint8_t *d = xq + (size_t)i * xs;
        __m512 m = _mm512_setzero_ps();
        int k = 0;
        /* max(|x|, m): a NaN in x yields m (the second operand), as the C loop ignores it */
        for (; k + 16 <= K; k += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xi + k)), m);
        if (kt) m = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(tail, xi + k)), m);
        float inv = q8_inv(_mm512_reduce_max_ps(m), &sx[i]);
        __m512 iv = _mm512_set1_ps(inv);
        for (k = 0; k + 16 <= K; k += 16) {
            __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xi + k), iv));
            q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), bias);
            _mm_storeu_si128((__m128i *)(d + k), _mm512_cvtepi32_epi8(q));
        }
        if (kt) {
            __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, xi + k), iv));
            q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), bias);
            _mm512_mask_cvtepi32_storeu_epi8(d + k, tail, q);
        }
        memset(d + K, 128, xs - (size_t)K);
    }
}

/* One tile's arguments. */
typedef struct {
    float *y;              /* row 0, absolute column 0 */
    int ldy;
    const uint8_t *xq;     /* row 0 of the tile */
    size_t xs;
    const float *sx;       /* sx of row 0 */
    const int8_t *wp;      /* first panel */
    size_t ps;             /* bytes per panel */
    size_t pf;             /* prefetch distance in bytes */
    int G;                 /* groups of 4 k */
    const float *s, *b;
    const int32_t *c;
    int col;               /* absolute column of the first panel */
    int n0, n1;            /* store columns [n0, n1) only */
} q8_tile_args;

/* R x B named accumulators (GCC keeps an array of vectors in memory):
 * with R, B constant, the unused ones fold away. */
#define Q8_DP(r, j) a##r##j = _mm512_dpbusd_epi32(a##r##j, xb, w##j)
#define Q8_ROW(r)                                                              \
    if (R > r) {                                                               \
        int32_t xv;                                                            \
        memcpy(&xv, xq + r * xs + (size_t)g * 4, 4);                           \
        __m512i xb = _mm512_set1_epi32(xv);                                    \
        Q8_DP(r, 0);                                                           \
        if (B > 1) Q8_DP(r, 1);                                                \
        if (B > 2) Q8_DP(r, 2);                                                \
        if (B > 3) Q8_DP(r, 3);                                                \
    }
#define Q8_STORE(r, j)                                                         \
    if (R > r)                                                                 \
        _mm512_mask_storeu_ps(a->y + (size_t)r * a->ldy + col, mask,           \
                              _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(a##r##j, cv)), \
                                              _mm512_mul_ps(_mm512_set1_ps(a->sx[r]), sw), bv));
#define Q8_EPI(j)                                                              \
    if (B > j) {                                                               \
        int col = a->col + 16 * j;                                             \
        int lo = a->n0 - col > 0 ? a->n0 - col : 0;                            \
        int hi = a->n1 - col < 16 ? a->n1 - col : 16;                          \
        if (hi > lo) {                                                         \
            __mmask16 mask = (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1)); \
            __m512 sw = _mm512_loadu_ps(a->s + col);                           \
            __m512i cv = _mm512_loadu_si512((const void *)(a->c + col));       \
            __m512 bv = a->b ? _mm512_maskz_loadu_ps(mask, a->b + col) : _mm512_setzero_ps(); \
            Q8_STORE(0, j) Q8_STORE(1, j) Q8_STORE(2, j)                       \
            Q8_STORE(3, j) Q8_STORE(4, j) Q8_STORE(5, j)                       \
        }                                                                      \
    }

Q8_TARGET static inline __attribute__((always_inline)) void q8_tile(const int R, const int B,
                                                                    const q8_tile_args *a) {
    const __m512i z = _mm512_setzero_si512();
    __m512i a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
    __m512i a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
    __m512i a40 = z, a41 = z, a42 = z, a43 = z, a50 = z, a51 = z, a52 = z, a53 = z;
    const int8_t *wp = a->wp;
    const uint8_t *xq = a->xq;
    size_t ps = a->ps, xs = a->xs, pf = a->pf;
    int G = a->G;
    for (int g = 0; g < G; g++) {
        const int8_t *wg = wp + (size_t)g * 64;
        __m512i w0 = _mm512_loadu_si512((const void *)wg), w1 = z, w2 = z, w3 = z;
        if (B > 1) w1 = _mm512_loadu_si512((const void *)(wg + ps));
        if (B > 2) w2 = _mm512_loadu_si512((const void *)(wg + 2 * ps));
        if (B > 3) w3 = _mm512_loadu_si512((const void *)(wg + 3 * ps));
        _mm_prefetch((const char *)wg + pf, _MM_HINT_T1);
        if (B > 1) _mm_prefetch((const char *)wg + pf + ps, _MM_HINT_T1);
        if (B > 2) _mm_prefetch((const char *)wg + pf + 2 * ps, _MM_HINT_T1);
        if (B > 3) _mm_prefetch((const char *)wg + pf + 3 * ps, _MM_HINT_T1);
        Q8_ROW(0) Q8_ROW(1) Q8_ROW(2) Q8_ROW(3) Q8_ROW(4) Q8_ROW(5)
    }
    Q8_EPI(0) Q8_EPI(1) Q8_EPI(2) Q8_EPI(3)
}

#define Q8_DEF(R, B) \
    Q8_TARGET static void q8_tile_##R##_##B(const q8_tile_args *a) { q8_tile(R, B, a); }
#define Q8_DEF_R(R) Q8_DEF(R, 1) Q8_DEF(R, 2) Q8_DEF(R, 3) Q8_DEF(R, 4)
Q8_DEF_R(1) Q8_DEF_R(2) Q8_DEF_R(3) Q8_DEF_R(4) Q8_DEF_R(5) Q8_DEF_R(6)
#define Q8_ROW_FNS(R) {q8_tile_##R##_1, q8_tile_##R##_2, q8_tile_##R##_3, q8_tile_##R##_4}
static void (*const q8_tiles[Q8_ROWS][4])(const q8_tile_args *) = {
    Q8_ROW_FNS(1), Q8_ROW_FNS(2), Q8_ROW_FNS(3), Q8_ROW_FNS(4), Q8_ROW_FNS(5), Q8_ROW_FNS(6)};

static void matmul_q8_avx512(float *y, int ldy, const uint8_t *xq, size_t xs, const float *sx,
                             k_q8 w, const float *b, int M, int n0, int nn) {
    q8_parts p = parts(w);
    size_t ps = (size_t)16 * p.Kp;
    int p0 = n0 / 16, p1 = (n0 + nn + 15) / 16;
    int blk = (int)(Q8_BLOCK_BYTES / ps) & ~3;
    if (blk < 4) blk = 4;
    if (M <= Q8_ROWS) blk = p1 - p0;   /* one sweep: the weights are read once anyway */
    int chunks = (M + Q8_ROWS - 1) / Q8_ROWS;
    q8_tile_args a = {0};
    a.ldy = ldy, a.xs = xs, a.ps = ps, a.G = p.Kp / 4, a.s = p.s, a.c = p.c, a.b = b;
    a.n0 = n0, a.n1 = n0 + nn;
    for (int pb = p0; pb < p1; pb += blk) {
        int pe = p1 - pb < blk ? p1 : pb + blk;
        for (int ch = 0, m0 = 0; ch < chunks; ch++) {
            int R = M / chunks + (ch < M % chunks);
            a.y = y + (size_t)m0 * ldy, a.xq = xq + (size_t)m0 * xs, a.sx = sx + m0;
            a.pf = ch == 0 ? 4 * ps : 512;   /* from memory: the next tile; from L2: closer */
            for (int pn = pb; pn < pe; pn += 4) {
                int B = pe - pn < 4 ? pe - pn : 4;
                a.wp = p.q + (size_t)pn * ps, a.col = pn * 16;
                q8_tiles[R - 1][B - 1](&a);
            }
            m0 += R;
        }
    }
}
#endif

/* ---- dispatch ---- */

int k_matmul_q8_isa(int isa, float *y, int ldy, const float *x, int ldx, k_q8 w, const float *b,
                    int M, int n0, int nn, void *scratch) {
    isa = k_isa_at(isa);
    if (!w.data || w.K < 1 || w.K > K_Q8_MAX_K || n0 < 0 || nn < 0 || n0 > w.N || nn > w.N - n0 ||
        M < 0)
        return -1;
    int used = 0;
#ifdef K_X86
    if (isa >= 2 && Q8_HAS_VNNI) used = 2;
#endif
#ifdef K_HAVE_VEC
    if (!used && isa >= 1) used = 1;
#endif
    if (M == 0 || nn == 0) return used;
    float *sx = scratch;
    uint8_t *xq = (uint8_t *)scratch + rup(sizeof(float) * (size_t)M, 64);
    size_t xs = xstride(w.K);
#ifdef K_X86
    if (used == 2) {
        q8_quant_rows_avx512(xq, xs, sx, x, ldx, M, w.K);
        matmul_q8_avx512(y, ldy, xq, xs, sx, w, b, M, n0, nn);
        return 2;
    }
#endif
#ifdef K_HAVE_VEC
    if (used == 1) {
        K_VEC(q8_quant_rows)((int8_t *)xq, xs, sx, x, ldx, M, w.K);
        K_VEC(q8_matmul)(y, ldy, (const int8_t *)xq, xs, sx, w, b, M, n0, nn);
        return 1;
    }
#endif
    q8_quant_rows_c(xq, xs, sx, x, ldx, M, w.K);
    matmul_q8_c(y, ldy, xq, xs, sx, w, b, M, n0, nn);
    return 0;
}

int k_q8_fast(void) {
#ifdef K_HAVE_VEC
    return k_isa_at(1) >= 1;
#else
    return 0;
#endif
}

int k_matmul_q8(float *y, int ldy, const float *x, int ldx, k_q8 w, const float *b, int M,
                int n0, int nn, void *scratch) {
    return k_matmul_q8_isa(2, y, ldy, x, ldx, w, b, M, n0, nn, scratch);
}

/* ---- the scalar twin ---- */

void k_matmul_q8_ref(float *y, int ldy, const float *x, int ldx, k_q8 w, const float *b, int M,
                     int n0, int nn) {
    if (!w.data || w.K < 1 || w.K > K_Q8_MAX_K || n0 < 0 || nn < 0 || n0 > w.N || nn > w.N - n0)
        return;
    q8_parts p = parts(w);
    for (int i = 0; i < M; i++) {
        const float *xi = x + (size_t)i * ldx;
        float sxi, inv = q8_inv(q8_amax_c(xi, w.K), &sxi);
        for (int n = n0; n < n0 + nn; n++) {
            const int8_t *row = p.q + (size_t)(n / 16) * 16 * p.Kp + (n % 16) * 4;
            long long D = 0;
            for (int k = 0; k < w.K; k++)
                D += (long long)q8_round(xi[k] * inv) * row[(size_t)(k / 4) * 64 + k % 4];
            y[(size_t)i * ldy + n] = q8_out(D, sxi, p.s[n], b, n);
        }
    }
}

/* ---- the CUDA backend's row-major layout (q8.h) ---- */

void k_q8_to_dev(void *dst, k_q8 w) {
    q8_parts p = parts(w);
    size_t rb = k_q8_dev_row_bytes(w.K);
    for (int n = 0; n < w.N; n++) {
        char *row = (char *)dst + (size_t)n * rb;
        const int8_t *src = p.q + (size_t)(n / 16) * 16 * p.Kp + (n % 16) * 4;
        memcpy(row, &p.s[n], sizeof(float));
        int8_t *q = (int8_t *)(row + 4);
        for (int k = 0; k < p.Kp; k++) q[k] = k < w.K ? src[(size_t)(k / 4) * 64 + k % 4] : 0;
    }
}

void k_matmul_q8_dev_ref(float *y, int ldy, const float *x, int ldx, const void *w, const float *b,
                         int M, int N, int K) {
    size_t rb = k_q8_dev_row_bytes(K);
    for (int i = 0; i < M; i++) {
        const float *xi = x + (size_t)i * ldx;
        float sxi, inv = q8_inv(q8_amax_c(xi, K), &sxi);
        for (int n = 0; n < N; n++) {
            const char *row = (const char *)w + (size_t)n * rb;
            const int8_t *q = (const int8_t *)(row + 4);
            float sn;
            memcpy(&sn, row, sizeof sn);
            long long D = 0;
            for (int k = 0; k < K; k++) D += (long long)q8_round(xi[k] * inv) * q[k];
            y[(size_t)i * ldy + n] = q8_out(D, sxi, sn, b, n);
        }
    }
}
