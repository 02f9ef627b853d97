/* q8_avx2.c - the int8 product in AVX2 (and AVX-VNNI where the CPU has it,
 * below): the same packed layout and the same exact int32 sums as q8.c's
 * other versions.
 *
 * AVX2's byte product, vpmaddubsw, multiplies unsigned by signed bytes and
 * adds pairs into int16 with saturation: with q8.c's biased activations
 * (up to 255) a pair could reach 2 x 255 x 127 and saturate. So this version
 * keeps the activations signed and moves the signs onto them: |w| (unsigned,
 * <= 127) times sign(w) * x (signed, |.| <= 127) is w * x, and a pair is at
 * most 2 x 127 x 127 = 32258: never saturated, so every sum is exact.
 * vpmaddwd by ones then widens the pairs into int32 lanes; the epilogue is
 * q8.c's (fmaf of the exact sum), so the result is bitwise the twin's.
 *
 * A panel's 64-byte group (16 outputs x 4 k) is two ymm halves of 8 outputs;
 * a tile is R rows (1..4) x one panel: 2R int32 accumulators, the group's
 * |w| halves shared by the rows, one broadcast of 4 activation bytes per row.
 * q8_drive (q8_impl.h) runs the tiles over the columns and rows. Both tile
 * kinds prefetch the weights Q8_PF bytes ahead, one line per group: the
 * panels lie end to end, so a sweep is one stream. Without it the hardware
 * prefetchers left the loads waiting on memory: the 5-row vocabulary
 * product of Whisper base ([51866 x 384], 2 threads, AVX2 without AVX-VNNI)
 * took 2.25 ms, now 1.40; one row 1.11 -> 0.95 ms; 1500 rows unchanged. */
#include "kern/q8_impl.h"

#if defined(K_HAVE_VEC) && defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#define V2 __attribute__((target("avx2,fma")))
#define Q8A_ROWS 4
#define Q8_PF 2048   /* bytes ahead along the packed weights (1, 2 and 4 KB measured: 2 best) */

V2 void q8_quant_rows_avx2(int8_t *xq, size_t xs, float *sx, const float *x, int ldx, int M,
                           int K) {
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int i = 0; i < M; i++) {
        const float *xi = x + (size_t)i * ldx;
        int8_t *d = xq + (size_t)i * xs;
        __m256 m = _mm256_setzero_ps();
        int k = 0;
        /* max(|x|, m): a NaN in x yields m (the second operand), as the C loop skips it */
        for (; k + 8 <= K; k += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xi + k), absmask), m);
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float amax = _mm_cvtss_f32(h);
        for (; k < K; k++) {
            float a = fabsf(xi[k]);
            if (a > amax) amax = a;
        }
        float inv = q8_inv(amax, &sx[i]);
        __m256 iv = _mm256_set1_ps(inv);
        k = 0;
        for (; k + 32 <= K; k += 32) {
            __m256i q[4];
            for (int j = 0; j < 4; j++) {
                __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xi + k + 8 * j), iv));
                q[j] = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);   /* NaN: INT_MIN -> -127 */
            }
            __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(d + k), _mm256_permutevar8x32_epi32(p, order));
        }
        for (; k < K; k++) d[k] = (int8_t)q8_round(xi[k] * inv);
        memset(d + K, 0, xs - (size_t)K);
    }
}

/* The lanes of columns col .. col + 7 the tile stores: those in [n0, n1). */
V2 static inline __attribute__((always_inline)) __m256i q8_cols(const q8v_tile *t, int col) {
    __m256i lane = _mm256_add_epi32(_mm256_set1_epi32(col), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(t->n1), lane),
                            _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(t->n0 - 1)));
}

#define Q8A_DOT(r)                                                                            \
    if (R > r) {                                                                              \
        int32_t xv;                                                                           \
        memcpy(&xv, xq + (size_t)r * xs + (size_t)g * 4, 4);                                  \
        __m256i xb = _mm256_set1_epi32(xv);                                                   \
        c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(                                \
                      _mm256_maddubs_epi16(a0, _mm256_sign_epi8(xb, w0)), ones));             \
        c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(                                \
                      _mm256_maddubs_epi16(a1, _mm256_sign_epi8(xb, w1)), ones));             \
    }
#define Q8A_STORE(r, h)                                                                       \
    if (R > r)                                                                                \
        _mm256_maskstore_ps(t->y + (size_t)r * t->ldy + col, mask,                            \
                            _mm256_fmadd_ps(_mm256_cvtepi32_ps(c##r##h),                      \
                                            _mm256_mul_ps(_mm256_set1_ps(t->sx[r]), sw), bv));
#define Q8A_EPI(h)                                                                            \
    {                                                                                         \
        int col = t->col + 8 * (h);                                                           \
        __m256i mask = q8_cols(t, col);                                                       \
        if (!_mm256_testz_si256(mask, mask)) {                                                \
            __m256 sw = _mm256_loadu_ps(t->s + col);                                          \
            __m256 bv = t->b ? _mm256_maskload_ps(t->b + col, mask) : _mm256_setzero_ps();    \
            Q8A_STORE(0, h) Q8A_STORE(1, h) Q8A_STORE(2, h) Q8A_STORE(3, h)                   \
        }                                                                                     \
    }

/* s[] is padded to Np (a multiple of 16), so its 8-lane loads stay inside;
 * b is read under the column mask. */
V2 static inline __attribute__((always_inline)) void q8a_tile_run(const int R, const q8v_tile *t) {
    const __m256i z = _mm256_setzero_si256(), ones = _mm256_set1_epi16(1);
    __m256i c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
    const int8_t *wp = t->wp, *xq = t->xq;
    size_t xs = t->xs;
    for (int g = 0; g < t->G; g++) {
        _mm_prefetch((const char *)(wp + (size_t)g * 64 + Q8_PF), _MM_HINT_T0);
        __m256i w0 = _mm256_load_si256((const __m256i *)(wp + (size_t)g * 64));
        __m256i w1 = _mm256_load_si256((const __m256i *)(wp + (size_t)g * 64 + 32));
        __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
        Q8A_DOT(0) Q8A_DOT(1) Q8A_DOT(2) Q8A_DOT(3)
    }
    Q8A_EPI(0) Q8A_EPI(1)
}

V2 static void q8a_tile_1(const q8v_tile *t) { q8a_tile_run(1, t); }
V2 static void q8a_tile_2(const q8v_tile *t) { q8a_tile_run(2, t); }
V2 static void q8a_tile_3(const q8v_tile *t) { q8a_tile_run(3, t); }
V2 static void q8a_tile_4(const q8v_tile *t) { q8a_tile_run(4, t); }
static const q8v_tile_fn q8a_tiles[Q8A_ROWS] = {q8a_tile_1, q8a_tile_2, q8a_tile_3, q8a_tile_4};

/* ---- AVX-VNNI (K_FEAT_AVXVNNI): vpdpbusd on ymm ----
 * vpdpbusd multiplies unsigned by signed bytes and adds each group of four
 * straight into an int32 lane, without the int16 step that forces the
 * sign moves above: so the activations go in biased, x + 128 (one xor of
 * the four bytes before the broadcast), the weights as they are, and the
 * epilogue takes off 128 x the output's weight sum (the packed matrix's
 * c[]), as the AVX-512 version does. Every sum is the same exact int32
 * (|x + 128| <= 255, |w| <= 127: no wrap up to K_Q8_MAX_K), so the result
 * is bitwise the twin's. Per row and group: one broadcast and two vpdpbusd
 * (the plain AVX2 tile: two sign moves, two vpmaddubsw, two vpmaddwd, two
 * adds); 6-row tiles: 12 accumulators, the group's two halves, the
 * broadcast. */
#define VN __attribute__((target("avx2,fma,avxvnni")))
#define Q8V_ROWS 6

#define Q8V_DOT(r)                                                                            \
    if (R > r) {                                                                              \
        uint32_t xv;                                                                          \
        memcpy(&xv, xq + (size_t)r * xs + (size_t)g * 4, 4);                                  \
        __m256i xb = _mm256_set1_epi32((int)(xv ^ 0x80808080u));                             \
        c##r##0 = _mm256_dpbusd_avx_epi32(c##r##0, xb, w0);                                   \
        c##r##1 = _mm256_dpbusd_avx_epi32(c##r##1, xb, w1);                                   \
    }
#define Q8V_STORE(r, h)                                                                       \
    if (R > r)                                                                                \
        _mm256_maskstore_ps(t->y + (size_t)r * t->ldy + col, mask,                            \
                            _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(c##r##h, cv)), \
                                            _mm256_mul_ps(_mm256_set1_ps(t->sx[r]), sw), bv));
#define Q8V_EPI(h)                                                                            \
    {                                                                                         \
        int col = t->col + 8 * (h);                                                           \
        __m256i mask = q8_cols(t, col);                                                       \
        if (!_mm256_testz_si256(mask, mask)) {                                                \
            __m256 sw = _mm256_loadu_ps(t->s + col);                                          \
            __m256i cv = _mm256_loadu_si256((const __m256i *)(t->c + col));                   \
            __m256 bv = t->b ? _mm256_maskload_ps(t->b + col, mask) : _mm256_setzero_ps();    \
            Q8V_STORE(0, h) Q8V_STORE(1, h) Q8V_STORE(2, h) Q8V_STORE(3, h) Q8V_STORE(4, h)    \
            Q8V_STORE(5, h)                                                                   \
        }                                                                                     \
    }

/* c[] is padded to Np like s[]: its 8-lane loads stay inside. */
VN static inline __attribute__((always_inline)) void q8v_tile_run(const int R, const q8v_tile *t) {
    const __m256i z = _mm256_setzero_si256();
    __m256i c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z,
            c41 = z, c50 = z, c51 = z;
    const int8_t *wp = t->wp, *xq = t->xq;
    size_t xs = t->xs;
    for (int g = 0; g < t->G; g++) {
        _mm_prefetch((const char *)(wp + (size_t)g * 64 + Q8_PF), _MM_HINT_T0);
        __m256i w0 = _mm256_load_si256((const __m256i *)(wp + (size_t)g * 64));
        __m256i w1 = _mm256_load_si256((const __m256i *)(wp + (size_t)g * 64 + 32));
        Q8V_DOT(0) Q8V_DOT(1) Q8V_DOT(2) Q8V_DOT(3) Q8V_DOT(4) Q8V_DOT(5)
    }
    Q8V_EPI(0) Q8V_EPI(1)
}

VN static void q8v_tile_1(const q8v_tile *t) { q8v_tile_run(1, t); }
VN static void q8v_tile_2(const q8v_tile *t) { q8v_tile_run(2, t); }
VN static void q8v_tile_3(const q8v_tile *t) { q8v_tile_run(3, t); }
VN static void q8v_tile_4(const q8v_tile *t) { q8v_tile_run(4, t); }
VN static void q8v_tile_5(const q8v_tile *t) { q8v_tile_run(5, t); }
VN static void q8v_tile_6(const q8v_tile *t) { q8v_tile_run(6, t); }
static const q8v_tile_fn q8v_tiles[Q8V_ROWS] = {q8v_tile_1, q8v_tile_2, q8v_tile_3,
                                                q8v_tile_4, q8v_tile_5, q8v_tile_6};

/* The AVX-VNNI tiles where the CPU has them (and the feature mask lets
 * them), else the plain AVX2 ones: one dispatch point, the same results. */
void q8_matmul_avx2(float *y, int ldy, const int8_t *xq, size_t xs, const float *sx, k_q8 w,
                    const float *b, int M, int n0, int nn) {
    if (k_feat(K_FEAT_AVXVNNI)) q8_drive(q8v_tiles, Q8V_ROWS, y, ldy, xq, xs, sx, w, b, M, n0, nn);
    else q8_drive(q8a_tiles, Q8A_ROWS, y, ldy, xq, xs, sx, w, b, M, n0, nn);
}
#endif
