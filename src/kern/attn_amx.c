/* attn_amx.c - k_attention_bf16: one head of attention, both products on
 * AMX tiles (tdpbf16ps), the softmax in AVX-512 between them; a portable C
 * version and the scalar twin. Numerics: attn_amx.h.
 *
 * The AMX version works on the transposed problem, so that the softmax runs
 * down columns of 16 query lanes and needs no horizontal reductions:
 *   S^T[key][query] = K . Q^T       (A: K rows, B: Q^T pairs)
 *   O^T[dim][query] = V^T . P^T     (A: V^T rows, B: P^T pairs)
 * Per call, K and V are rounded and packed once (Tp = Tk rounded up to 32
 * keys, zero rows past Tk; dp = dh rounded up to 32, zero columns):
 *   kp [Tp/16][dp/32] A tiles, 16 keys x 32 dims (row: one key's dims);
 *   vt [Tp/32][dp/16] A tiles, 16 dims x 32 keys (row: one dim over 32
 *      keys, i.e. 16 pairs (v[2p][d], v[2p+1][d])): a 16 x 16 transpose of
 *      32-bit pairs per tile.
 * Then per block of 32 query rows (two groups of 16, "rg"):
 *   qt [2][dp/32] B tiles, 16 dim pairs x 16 queries (transposed likewise);
 *   scores: per 32 keys, 2 x 2 C tiles (2 key groups x 2 query groups) over
 *      the dim chunks, stored to st [2][Tp][16] f32 (one 64-byte row per key
 *      and query group: 192 KB for Tk 1500, in L2); the running maximum per
 *      query lane is taken from the rows just stored (still in L1);
 *   then per range of RANGE x 32 keys:
 *   softmax: per query group, pairs of st rows: y = a c - m c (one fma; m c
 *      rounded down, so y <= 0 but for a rounding residual), e = 2^y
 *      (vreduceps for the fraction, the polynomial, vscalefps), the sums l
 *      in f32 lanes, P^T pairs rounded by vcvtne2ps2bf16 and zipped
 *      (vpermw) into pt [RANGE][2] B tiles (16 key pairs x 16 queries; 8 KB,
 *      so that P.V reads them from L1);
 *   P.V: per 32 output dims, 2 x 2 C tiles (2 dim groups x 2 query groups)
 *      over the range's key chunks, accumulated in ob [dp][32] f32 across
 *      ranges (tile loads and stores);
 *   finally ob scaled by 1 / l (per query lane), transposed back to o's rows.
 * Tiles: tmm0..3 C, tmm4..5 A, tmm6..7 B, all 16 rows x 64 bytes;
 * configured at entry and released at exit on the calling thread.
 * Scratch (64-byte aligned pieces): kp, vt (Tp * dp * 2 bytes each), qt
 * (dp * 64), st (Tp * 128), pt (RANGE * 2 KB), ob (dp * 128): 600 KB for
 * Tk 1500, dh 64.
 *
 * Where the time goes (Mq = Tk = 1500, dh 64, ~0.85 ms on one core; the
 * marginal cost of each part, measured by leaving it out): the softmax
 * 0.31 ms (~10 vector operations per 16 scores, at the rate of the two
 * AVX-512 ports), the scores 0.26 ms (the tile stores do not overlap the
 * tile multiplies), P.V 0.15 ms, packing and the output 0.09 ms.
 * Measured and dropped: the softmax of one block interleaved with the next
 * block's scores (the tile unit and the vector units did not overlap),
 * recomputing the scores instead of storing them (slower), S and P in the
 * untransposed layout (the same speed), software prefetch of the packed
 * tiles (slower; that of the inputs, kept, gains 3%).
 */
#include "kern/attn_amx.h"
#include "kern/gemm.h"
#include "kern/half.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline int rup(int v, int m) { return (v + m - 1) / m * m; }
static inline size_t al64(size_t n) { return (n + 63) & ~(size_t)63; }

/* 2^f ~ 1 + f (C1 + f (C2 + f (C3 + f (C4 + f C5)))) on [0, 1]: a relative
 * minimax fit with the constant term pinned to 1 (error 8.3e-8 in exact
 * arithmetic, < 2e-7 evaluated in f32). (Degree 4 would be 2.9e-6 and 4%
 * faster overall.) */
#define EXP2_C1 0.693151312f
#define EXP2_C2 0.24016445f
#define EXP2_C3 0.0557999143f
#define EXP2_C4 0.00901702908f
#define EXP2_C5 0.00186713052f

/* c = |scale| * log2(e), rounded once. */
static float exp2_scale(float scale) { return (float)(fabs((double)scale) * 1.4426950408889634); }

static inline float bf16r(float x) { return k_h2f(k_f32_to_bf16(x), 1); }

/* P's rounding: bf16 to nearest even; below FLT_MIN zero (as the tile unit
 * and vcvtne2ps2bf16 read it). */
static inline float p_round(float e) { return e < FLT_MIN ? 0.0f : bf16r(e); }

static int sizes_ok(int Mq, int Tk, int dh) {
    return Mq >= 0 && Tk >= 0 && dh >= 1 && dh <= K_ATTN_BF16_MAX_DH;
}

/* ---- the scalar twin ---- */

static double dot_bf16(const float *q, const float *k, int dh) {
    double acc = 0;
    for (int d = 0; d < dh; d++) acc += (double)bf16r(q[d]) * bf16r(k[d]);
    return acc;
}

void k_attention_bf16_ref(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                          const float *v, int ldv, int Mq, int Tk, int dh, float scale) {
    if (!sizes_ok(Mq, Tk, dh)) return;
    for (int i = 0; i < Mq; i++) {
        const float *qi = q + (size_t)i * ldq;
        double m = -DBL_MAX, l = 0, acc[K_ATTN_BF16_MAX_DH] = {0};
        for (int j = 0; j < Tk; j++) {
            double s = scale * dot_bf16(qi, k + (size_t)j * ldk, dh);
            if (s > m) m = s;
        }
        for (int j = 0; j < Tk; j++) {
            double e = exp(scale * dot_bf16(qi, k + (size_t)j * ldk, dh) - m);
            double p = p_round((float)e);
            l += e;
            for (int d = 0; d < dh; d++) acc[d] += p * bf16r(v[(size_t)j * ldv + d]);
        }
        for (int d = 0; d < dh; d++) o[(size_t)i * ldo + d] = Tk ? (float)(acc[d] / l) : 0.0f;
    }
}

/* ---- portable C ---- */

static inline float exp2_c(float y) {
    float n = floorf(y), f = y - n;
    float p = EXP2_C5;
    p = p * f + EXP2_C4;
    p = p * f + EXP2_C3;
    p = p * f + EXP2_C2;
    p = p * f + EXP2_C1;
    p = p * f + 1.0f;
    return ldexpf(p, n < -300.0f ? -300 : (int)n);
}

/* Scratch: kt [dh][Tk] (bf16 K, transposed), vb [Tk][dh], s [Tk], all f32. */
static size_t c_bytes(int Tk, int dh) {
    return 2 * al64((size_t)Tk * dh * sizeof(float)) + al64((size_t)Tk * sizeof(float));
}

/* s[Tk] = a for one row qb[dh] (f32, in order of d); returns the maximum. */
static float scores_c(float *s, const float *qb, const float *kt, int Tk, int dh) {
    for (int j = 0; j < Tk; j++) s[j] = 0.0f;
    for (int d = 0; d < dh; d++)
        for (int j = 0; j < Tk; j++) s[j] += qb[d] * kt[(size_t)d * Tk + j];
    float m = -FLT_MAX;
    for (int j = 0; j < Tk; j++) m = s[j] > m ? s[j] : m;
    return m;
}

static void attn_c(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                   const float *v, int ldv, int Mq, int Tk, int dh, float scale, void *scratch) {
    size_t kvb = al64((size_t)Tk * dh * sizeof(float));
    float *kt = scratch, *vb = (float *)((char *)scratch + kvb), *s = (float *)((char *)vb + kvb);
    float sg = scale < 0 ? -1.0f : 1.0f, c = exp2_scale(scale);
    for (int j = 0; j < Tk; j++)
        for (int d = 0; d < dh; d++) {
            kt[(size_t)d * Tk + j] = bf16r(k[(size_t)j * ldk + d]);
            vb[(size_t)j * dh + d] = bf16r(v[(size_t)j * ldv + d]);
        }
    for (int i = 0; i < Mq; i++) {
        float qb[K_ATTN_BF16_MAX_DH], acc[K_ATTN_BF16_MAX_DH], l = 0.0f;
        for (int d = 0; d < dh; d++) qb[d] = sg * bf16r(q[(size_t)i * ldq + d]), acc[d] = 0.0f;
        float mc = scores_c(s, qb, kt, Tk, dh) * c;
        for (int j = 0; j < Tk; j++) {
            float e = exp2_c(s[j] * c - mc), p = p_round(e);
            l += e;
            for (int d = 0; d < dh; d++) acc[d] += p * vb[(size_t)j * dh + d];
        }
        float inv = 1.0f / l;
        for (int d = 0; d < dh; d++) o[(size_t)i * ldo + d] = acc[d] * inv;
    }
}

/* ---- AMX ---- */

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define ATTN_AMX_BUILT 1
#include <immintrin.h>

#include "kern/x86.h"

#define AMX K_AMX
#define AMX_INLINE AMX static inline __attribute__((always_inline))
/* The pieces both versions use: AVX-512 with BF16, no tiles (AMX's
 * target is a superset, so they inline into the AMX functions). */
#define BF16DP __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define BF16DP_INLINE BF16DP static inline __attribute__((always_inline))

/* Key chunks (of 32) per softmax / P.V step: P^T of a range is 8 KB, read
 * by the tile loads from L1 (measured: 2, 8 and 16 slower; one range of
 * all keys, P^T through L2, 6% slower). */
#define RANGE 4

/* The pieces of the scratch for one call (see the file comment). */
typedef struct {
    int Tk, Tp, dh, dp;         /* keys, dims, and padded to 32 */
    int nd, ng, nj;             /* dim chunks (32), dim groups (16), key chunks (32) */
    char *kp, *vt, *qt, *pt;    /* packed K, V^T (per call); Q^T (per block), P^T (per range) */
    float *st, *ob;                   /* S^T [2][Tp][16]; O^T [dp][32] */
} amx_buf;

static amx_buf amx_layout(void *scratch, int Tk, int dh) {
    amx_buf b;
    b.Tk = Tk, b.dh = dh, b.Tp = rup(Tk, 32), b.dp = rup(dh, 32);
    b.nd = b.dp / 32, b.ng = b.dp / 16, b.nj = b.Tp / 32;
    size_t kv = (size_t)b.Tp * b.dp * 2;
    b.kp = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    b.vt = b.kp + kv;
    b.qt = b.vt + kv;
    b.st = (float *)(b.qt + (size_t)b.dp * 64);
    b.pt = (char *)b.st + (size_t)b.Tp * 128;
    b.ob = (float *)(b.pt + RANGE * 2048);
    return b;
}

static size_t amx_bytes(int Tk, int dh) {
    size_t Tp = (size_t)rup(Tk, 32), dp = (size_t)rup(dh, 32);
    return 2 * Tp * dp * 2 + dp * 64 + Tp * 128 + RANGE * 2048 + dp * 128 + 64;
}



/* x[0, n) (n clamped to 0..32, zeros past it) times sg as 32 bf16 in order:
 * lane p holds the pair (x[2p], x[2p + 1]). */
BF16DP_INLINE __m512i row_bf16x32(const float *x, int n, __m512 sg) {
    const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37,
                                         35, 33, 31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7,
                                         5, 3, 1);
    __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(k_mask16(n), x), sg);
    __m512 b = _mm512_mul_ps(_mm512_maskz_loadu_ps(k_mask16(n - 16), x + 16), sg);
    return _mm512_permutex2var_epi16(k_rne_hi_finite(a), odd, k_rne_hi_finite(b));
}

/* In place: r[i] lane j <- r[j] lane i, 32-bit elements (x86.h's k_tr16). */
BF16DP_INLINE void transpose16(__m512i r[16]) {
    __m512 f[16];
    for (int i = 0; i < 16; i++) f[i] = _mm512_castsi512_ps(r[i]);
    k_tr16(f);
    for (int i = 0; i < 16; i++) r[i] = _mm512_castps_si512(f[i]);
}

/* Software prefetch of rows [0, n) of x (ld), columns [0, dh): q, k and v
 * are column slices of a QKV matrix that is usually in L3 (3% faster). */
BF16DP_INLINE void prefetch_rows(const float *x, int ld, int n, int dh, int to_l1) {
    for (int i = 0; i < n; i++)
        for (int d = 0; d < dh; d += 16) {
            const char *a = (const char *)(x + (size_t)i * ld + d);
            if (to_l1) _mm_prefetch(a, _MM_HINT_T0);
            else _mm_prefetch(a, _MM_HINT_T1);
        }
}

/* kp: k[Tk, dh] (ldk) as A tiles: tile (key group, dim chunk), row n = key
 * n's 32 dims; keys past Tk and dims past dh zero. */
BF16DP static void pack_k(const amx_buf *b, const float *k, int ldk) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int t = 0; t < b->Tp; t++) {
        if (t + 16 < b->Tk) prefetch_rows(k + (size_t)(t + 16) * ldk, ldk, 1, b->dh, 1);
        char *d = b->kp + (size_t)(t / 16) * b->nd * 1024 + (size_t)(t % 16) * 64;
        for (int c = 0; c < b->nd; c++) {
            __m512i z = t < b->Tk ? row_bf16x32(k + (size_t)t * ldk + c * 32, b->dh - c * 32, one)
                                  : _mm512_setzero_si512();
            _mm512_store_si512(d + (size_t)c * 1024, z);
        }
    }
}

/* vt: v[Tk, dh] (ldv) as A tiles of V^T: tile (key chunk, dim group), row
 * d = dim d over the chunk's 32 keys, i.e. 16 pairs (v[2p][d], v[2p+1][d]):
 * built as rows per key pair, then transposed. */
BF16DP static void pack_v(const amx_buf *b, const float *v, int ldv) {
    for (int j = 0; j < b->nj; j++) {
        int next = b->Tk - (j + 1) * 32;   /* rows of the next chunk */
        if (next > 0)
            prefetch_rows(v + (size_t)(j + 1) * 32 * ldv, ldv, next < 32 ? next : 32, b->dh, 1);
        for (int g = 0; g < b->ng; g++) {
            __m512i r[16];
            __mmask16 m = k_mask16(b->dh - g * 16);
            for (int p = 0; p < 16; p++) {
                int t = j * 32 + 2 * p;
                const float *v0 = v + (size_t)t * ldv + g * 16;
                __m512 e = t < b->Tk ? _mm512_maskz_loadu_ps(m, v0) : _mm512_setzero_ps();
                __m512 o = t + 1 < b->Tk ? _mm512_maskz_loadu_ps(m, v0 + ldv) : _mm512_setzero_ps();
                r[p] = _mm512_mask_blend_epi16(0xaaaaaaaau, _mm512_srli_epi32(k_rne_hi_finite(e), 16),
                                               k_rne_hi_finite(o));
            }
            transpose16(r);
            char *d = b->vt + ((size_t)j * b->ng + g) * 1024;
            for (int i = 0; i < 16; i++) _mm512_store_si512(d + i * 64, r[i]);
        }
    }
}

/* qt: rows [0, mr) of q (ldq, mr <= 32) times sg as B tiles of Q^T: tile
 * (query group, dim chunk), row p = dim pair p, lane n = query n's pair;
 * queries past mr zero. */
BF16DP static void pack_q(const amx_buf *b, const float *q, int ldq, int mr, float sg) {
    __m512 s = _mm512_set1_ps(sg);
    for (int rg = 0; rg < 2; rg++)
        for (int c = 0; c < b->nd; c++) {
            __m512i r[16];
            for (int n = 0; n < 16; n++) {
                int i = rg * 16 + n;
                r[n] = i < mr ? row_bf16x32(q + (size_t)i * ldq + c * 32, b->dh - c * 32, s)
                              : _mm512_setzero_si512();
            }
            transpose16(r);
            char *d = b->qt + ((size_t)rg * b->nd + c) * 1024;
            for (int p = 0; p < 16; p++) _mm512_store_si512(d + p * 64, r[p]);
        }
}

/* S^T of the block into st, and per query group the maximum of a over
 * keys [0, Tk) (amax[2], a lane per query). */
AMX static void scores(const amx_buf *b, __m512 amax[2]) {
    __m512 m0 = _mm512_set1_ps(-FLT_MAX), m1 = m0, m2 = m0, m3 = m0;
    size_t tk = (size_t)b->nd * 1024;
    for (int j = 0; j < b->nj; j++) {
        const char *a0 = b->kp + (size_t)(2 * j) * tk, *a1 = a0 + tk, *b0 = b->qt, *b1 = b->qt + tk;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int c = 0; c < b->nd; c++) {
            _tile_loadd(4, a0 + (size_t)c * 1024, 64);
            _tile_loadd(6, b0 + (size_t)c * 1024, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_loadd(7, b1 + (size_t)c * 1024, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_loadd(5, a1 + (size_t)c * 1024, 64);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
        float *s0 = b->st + (size_t)j * 512, *s1 = b->st + ((size_t)b->Tp + (size_t)j * 32) * 16;
        _tile_stored(0, s0, 64);
        _tile_stored(1, s1, 64);
        _tile_stored(2, s0 + 256, 64);
        _tile_stored(3, s1 + 256, 64);
        K_MEMBAR(s0);
        int n = b->Tk - j * 32 < 32 ? b->Tk - j * 32 : 32, r = 0;
        for (; r + 1 < n; r += 2) {
            m0 = _mm512_max_ps(m0, _mm512_load_ps(s0 + r * 16));
            m1 = _mm512_max_ps(m1, _mm512_load_ps(s0 + r * 16 + 16));
            m2 = _mm512_max_ps(m2, _mm512_load_ps(s1 + r * 16));
            m3 = _mm512_max_ps(m3, _mm512_load_ps(s1 + r * 16 + 16));
        }
        if (r < n) {
            m0 = _mm512_max_ps(m0, _mm512_load_ps(s0 + r * 16));
            m2 = _mm512_max_ps(m2, _mm512_load_ps(s1 + r * 16));
        }
    }
    amax[0] = _mm512_max_ps(m0, m1);
    amax[1] = _mm512_max_ps(m2, m3);
}

/* 2^y for finite y up to ~1 (here y < 2^-23 |a_max c|); 0 below ~2^-149. */
BF16DP_INLINE __m512 exp2v(__m512 y) {
    __m512 f = _mm512_reduce_ps(y, 0x09);   /* y - floor(y): round down, no precision exception */
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(EXP2_C5), f, _mm512_set1_ps(EXP2_C4));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EXP2_C3));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EXP2_C2));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EXP2_C1));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, y);   /* p * 2^floor(y) */
}

/* One row of a P^T tile: lane n = (bf16(e0[n]), bf16(e1[n])). */
BF16DP_INLINE __m512i pair_bf16(__m512 e0, __m512 e1) {
    const __m512i zip = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                         24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                         16, 0);
    return _mm512_permutexvar_epi16(zip, (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
}

/* One query group, key pairs [k0, k1) (whole chunks): S^T rows st [Tp][16]
 * -> P^T pairs in pt (the chunks of the range 2 KB apart); e = 2^(a c - mc),
 * keys past Tk 0; *l += e (a lane per query). */
BF16DP static void softmax_range(const amx_buf *b, const float *st, char *pt, int k0, int k1,
                              __m512 mc, __m512 c, __m512 *l) {
    __m512 l0 = *l, l1 = _mm512_setzero_ps(), z = l1;
    int k = k0, kf = b->Tk / 2 < k1 ? b->Tk / 2 : k1;   /* pairs below kf: both keys valid */
    for (; k < kf; k++) {
        __m512 e0 = exp2v(_mm512_fmsub_ps(_mm512_load_ps(st + 32 * k), c, mc));
        __m512 e1 = exp2v(_mm512_fmsub_ps(_mm512_load_ps(st + 32 * k + 16), c, mc));
        l0 = _mm512_add_ps(l0, e0);
        l1 = _mm512_add_ps(l1, e1);
        _mm512_store_si512(pt + (size_t)((k - k0) / 16) * 2048 + (k % 16) * 64, pair_bf16(e0, e1));
    }
    for (; k < k1; k++) {   /* the padding: an odd last key, then zeros */
        __m512 e0 = z;
        if (2 * k < b->Tk) e0 = exp2v(_mm512_fmsub_ps(_mm512_load_ps(st + 32 * k), c, mc));
        l0 = _mm512_add_ps(l0, e0);
        _mm512_store_si512(pt + (size_t)((k - k0) / 16) * 2048 + (k % 16) * 64, pair_bf16(e0, z));
    }
    *l = _mm512_add_ps(l0, l1);
}

/* ob [dp][32] (+)= O^T over key chunks [j0, j1), P^T of the range in pt. */
AMX static void pv_range(const amx_buf *b, int j0, int j1) {
    for (int dd = 0; dd < b->nd; dd++) {
        float *o0 = b->ob + (size_t)dd * 1024;
        if (j0 == 0) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
        } else {
            _tile_loadd(0, o0, 128);
            _tile_loadd(1, o0 + 16, 128);
            _tile_loadd(2, o0 + 512, 128);
            _tile_loadd(3, o0 + 528, 128);
        }
        for (int j = j0; j < j1; j++) {
            const char *a0 = b->vt + ((size_t)j * b->ng + 2 * dd) * 1024;
            const char *b0 = b->pt + (size_t)(j - j0) * 2048;
            _tile_loadd(4, a0, 64);
            _tile_loadd(6, b0, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_loadd(7, b0 + 1024, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_loadd(5, a0 + 1024, 64);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, o0, 128);
        _tile_stored(1, o0 + 16, 128);
        _tile_stored(2, o0 + 512, 128);
        _tile_stored(3, o0 + 528, 128);
    }
}

/* o[mr, dims d0 .. d0 + 32 (below dh)] = ob^T * inv (a lane per query),
 * ob the [32 dims][32 queries] block of those dims. */
BF16DP static void store_o(float *o, int ldo, const float *ob, int mr, int d0, int dh,
                        const __m512 inv[2]) {
    for (int rg = 0; rg < 2 && rg * 16 < mr; rg++)
        for (int h = 0; h < 2 && d0 + h * 16 < dh; h++) {
            __m512i r[16];
            for (int d = 0; d < 16; d++) {
                __m512 x = _mm512_load_ps(ob + (h * 16 + d) * 32 + rg * 16);
                r[d] = _mm512_castps_si512(_mm512_mul_ps(x, inv[rg]));
            }
            transpose16(r);
            __mmask16 m = k_mask16(dh - d0 - h * 16);
            int n = mr - rg * 16 < 16 ? mr - rg * 16 : 16;
            for (int i = 0; i < n; i++)
                _mm512_mask_storeu_ps(o + (size_t)(rg * 16 + i) * ldo + d0 + h * 16, m,
                                      _mm512_castsi512_ps(r[i]));
        }
}

/* The two products of a block, on tiles (AMX) or in vdpbf16ps (_dp). */
typedef void (*scores_fn)(const amx_buf *b, __m512 amax[2]);
typedef void (*pv_fn)(const amx_buf *b, int j0, int j1);

/* One block of mr <= 32 query rows (q, o at its first row), its products
 * by sc and pv. */
BF16DP static void attn_block(const amx_buf *b, float *o, int ldo, const float *q, int ldq,
                              int mr, float scale, scores_fn sc, pv_fn pv) {
    __m512 amax[2], mc[2], l[2], inv[2], c = _mm512_set1_ps(exp2_scale(scale));
    pack_q(b, q, ldq, mr, scale < 0 ? -1.0f : 1.0f);
    K_MEMBAR(b->qt);
    sc(b, amax);
    /* a_max c rounded down: the maximum's y is in [0, 2^-23 |a_max c|) */
    for (int rg = 0; rg < 2; rg++) {
        mc[rg] = _mm512_mul_round_ps(amax[rg], c, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        l[rg] = _mm512_setzero_ps();
    }
    for (int j0 = 0; j0 < b->nj; j0 += RANGE) {
        int j1 = b->nj - j0 < RANGE ? b->nj : j0 + RANGE;
        for (int rg = 0; rg < 2; rg++)
            softmax_range(b, b->st + (size_t)rg * b->Tp * 16, b->pt + rg * 1024, j0 * 16, j1 * 16,
                          mc[rg], c, &l[rg]);
        K_MEMBAR(b->pt);
        pv(b, j0, j1);
    }
    K_MEMBAR(b->ob);
    for (int rg = 0; rg < 2; rg++) inv[rg] = _mm512_div_ps(_mm512_set1_ps(1.0f), l[rg]);
    for (int dd = 0; dd < b->nd; dd++)
        store_o(o, ldo, b->ob + (size_t)dd * 1024, mr, dd * 32, b->dh, inv);
}

/* K and V packed, then the blocks of 32 query rows, their products by sc and pv. */
BF16DP static void attn_blocks(void *scratch, float *o, int ldo, const float *q, int ldq,
                               const float *k, int ldk, const float *v, int ldv, int Mq, int Tk,
                               int dh, float scale, scores_fn sc, pv_fn pv) {
    amx_buf b = amx_layout(scratch, Tk, dh);
    pack_k(&b, k, ldk);
    pack_v(&b, v, ldv);
    for (int r0 = 0; r0 < Mq; r0 += 32) {
        int next = Mq - r0 - 32;   /* the next block's rows of q, into L2 */
        if (next > 0) prefetch_rows(q + (size_t)(r0 + 32) * ldq, ldq, next < 32 ? next : 32, dh, 0);
        attn_block(&b, o + (size_t)r0 * ldo, ldo, q + (size_t)r0 * ldq, ldq,
                   Mq - r0 < 32 ? Mq - r0 : 32, scale, sc, pv);
    }
}

AMX static void attn_amx(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                         const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                         void *scratch) {
    k_amx_tiles_16x64();
    attn_blocks(scratch, o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, scores, pv_range);
    _tile_release();
}

/* ---- AVX-512 BF16: the same layouts, vdpbf16ps in registers ----
 *
 * Where there are no tiles (AMD Zen 4 and later, Intel Cooper Lake), the
 * two products read the packed tiles above as vectors: a row of a B tile
 * (Q^T's or P^T's: 16 queries' pairs) is one zmm, and each 32-bit pair of
 * an A tile's row (a key's dims, or a dim's keys) is broadcast to it. A
 * register tile is 8 rows of A by both query groups (16 accumulators),
 * so each B row loaded feeds 16 vdpbf16ps. The softmax, the packing and
 * the output are the AMX version's; the sums of a and of P . V are f32 in
 * pairs, in the order of the dims (keys) as the tiles take them. */

#define DP_R 8   /* A rows per register tile */

BF16DP_INLINE __m512 dpbf(__m512 acc, const char *a_pair, __m512i b_row) {
    int32_t p;
    memcpy(&p, a_pair, 4);
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_set1_epi32(p), (__m512bh)b_row);
}

/* a[r][g] += A row r (64-byte rows at ar: 16 pairs) . B tile g's 16 rows
 * (b0, b1: a row per pair, 16 query lanes): one tile pair's products. */
BF16DP_INLINE void dp_tile(__m512 a[DP_R][2], const char *ar, const char *b0, const char *b1) {
    for (int p = 0; p < 16; p++) {
        __m512i x0 = _mm512_load_si512(b0 + p * 64), x1 = _mm512_load_si512(b1 + p * 64);
        for (int r = 0; r < DP_R; r++) {
            a[r][0] = dpbf(a[r][0], ar + r * 64 + p * 4, x0);
            a[r][1] = dpbf(a[r][1], ar + r * 64 + p * 4, x1);
        }
    }
}

/* S^T of the block into st and the maximum per query lane, as scores(). */
BF16DP static void scores_dp(const amx_buf *b, __m512 amax[2]) {
    __m512 m0 = _mm512_set1_ps(-FLT_MAX), m1 = m0;
    for (int t0 = 0; t0 < b->Tp; t0 += DP_R) {
        const char *kt = b->kp + (size_t)(t0 / 16) * b->nd * 1024 + (size_t)(t0 % 16) * 64;
        __m512 a[DP_R][2];
        for (int r = 0; r < DP_R; r++) a[r][0] = a[r][1] = _mm512_setzero_ps();
        for (int c = 0; c < b->nd; c++) {
            const char *kc = kt + (size_t)c * 1024, *q0 = b->qt + (size_t)c * 1024,
                       *q1 = b->qt + ((size_t)b->nd + c) * 1024;
            dp_tile(a, kc, q0, q1);
        }
        for (int r = 0; r < DP_R; r++) {
            _mm512_store_ps(b->st + (size_t)(t0 + r) * 16, a[r][0]);
            _mm512_store_ps(b->st + ((size_t)b->Tp + t0 + r) * 16, a[r][1]);
            if (t0 + r < b->Tk) m0 = _mm512_max_ps(m0, a[r][0]), m1 = _mm512_max_ps(m1, a[r][1]);
        }
    }
    amax[0] = m0;
    amax[1] = m1;
}

/* ob [dp][32] (+)= O^T over key chunks [j0, j1), as pv_range(). */
BF16DP static void pv_range_dp(const amx_buf *b, int j0, int j1) {
    for (int d0 = 0; d0 < b->dp; d0 += DP_R) {
        float *ob = b->ob + (size_t)d0 * 32;
        __m512 a[DP_R][2];
        for (int r = 0; r < DP_R; r++) {
            a[r][0] = j0 ? _mm512_load_ps(ob + r * 32) : _mm512_setzero_ps();
            a[r][1] = j0 ? _mm512_load_ps(ob + r * 32 + 16) : _mm512_setzero_ps();
        }
        for (int j = j0; j < j1; j++) {
            const char *vt = b->vt + ((size_t)j * b->ng + d0 / 16) * 1024 + (size_t)(d0 % 16) * 64;
            const char *p0 = b->pt + (size_t)(j - j0) * 2048, *p1 = p0 + 1024;
            dp_tile(a, vt, p0, p1);
        }
        for (int r = 0; r < DP_R; r++) {
            _mm512_store_ps(ob + r * 32, a[r][0]);
            _mm512_store_ps(ob + r * 32 + 16, a[r][1]);
        }
    }
}

BF16DP static void attn_dp(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                           const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                           void *scratch) {
    attn_blocks(scratch, o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, scores_dp, pv_range_dp);
}

static int dp_ok(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bf16");
}

#endif

/* ---- dispatch ---- */

size_t k_attention_bf16_scratch_bytes(int Mq, int Tk, int dh) {
    (void)Mq;
    if (Tk < 1) Tk = 1;
    if (dh < 1) dh = 1;
    size_t n = c_bytes(Tk, dh);
#ifdef ATTN_AMX_BUILT
    size_t a = amx_bytes(Tk, dh);
    if (a > n) n = a;
#endif
    return n;
}

/* The version that runs up to isa: 3 AMX, 2 AVX-512 BF16, 0 C. */
static int version(int isa) {
    isa = k_isa_at(isa);
#ifdef ATTN_AMX_BUILT
    if (isa >= 3 && k_isa() >= K_ISA_AMX && gemm_amx_ok()) return 3;
    if (isa >= 2 && dp_ok()) return 2;
#endif
    return 0;
}

int k_attention_bf16_has(void) { return version(3) >= 2; }

int k_attention_bf16_isa(int isa, float *o, int ldo, const float *q, int ldq, const float *k,
                         int ldk, const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                         void *scratch) {
    if (!sizes_ok(Mq, Tk, dh)) return -1;
    int ver = version(isa);
    if (Tk == 0) {
        for (int i = 0; i < Mq; i++) memset(o + (size_t)i * ldo, 0, (size_t)dh * sizeof *o);
        return ver;
    }
#ifdef ATTN_AMX_BUILT
    if (ver == 3) {
        if (Mq > 0) attn_amx(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, scratch);
        return 3;
    }
    if (ver == 2) {
        if (Mq > 0) attn_dp(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, scratch);
        return 2;
    }
#endif
    attn_c(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, scratch);
    return 0;
}

int k_attention_bf16(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                     const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                     void *scratch) {
    return k_attention_bf16_isa(3, o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh, scale, scratch);
}
