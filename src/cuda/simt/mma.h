/* mma.h - the SIMT test build's stand-in for CUDA's warp matrix calls
 * (nvcuda::wmma): the 16 x 16 x 16 shapes with f16 / bf16 inputs and f32
 * sums that src/cuda/ uses. A fragment holds its whole tile in every lane
 * (the GPU spreads it over the warp in a layout the program never sees),
 * so a load reads the tile once per lane and a store writes the same
 * values 32 times. Each call is a meeting of the whole warp at one
 * statement (simt::warp_collective), and its pointer and leading dimension
 * are held to the GPU's rules: 256-bit aligned, ldm a multiple of 8
 * elements for halves and 4 for floats. mma_sync sums each output's 16
 * exact products in k order onto the accumulator in f32, once per warp
 * (the other lanes check that they hold the same operands): the tensor
 * core's order inside one step is its own, so the tests allow a tolerance
 * against the CPU, and only a GPU shows that a row's sums do not depend on
 * the other rows of its tile. */
#ifndef ED_CUDA_SIMT_MMA_H
#define ED_CUDA_SIMT_MMA_H

#include "cuda/simt/simt.h"

#include <stdio.h>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int m, int n, int k, typename T, typename Layout = void> struct fragment {
    static_assert(m == 16 && n == 16 && k == 16, "the 16 x 16 x 16 shapes only");
    static constexpr int R = std::is_same<Use, matrix_b>::value ? k : m;
    static constexpr int C = std::is_same<Use, matrix_a>::value ? k : n;
    float v[R * C];   /* row-major, the tile as the program means it */
};

namespace detail {
inline float val(const float *p, size_t i) { return p[i]; }
inline float val(const __half *p, size_t i) { return __half2float(p[i]); }
inline float val(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }

template <typename T> void check(const T *p, unsigned ldm, const char *what) {
    unsigned mult = sizeof(T) == 2 ? 8 : 4;
    if (((uintptr_t)p & 31) != 0 || ldm % mult != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: pointer %p (256-bit aligned?), ldm %u (a multiple of %u?)", what,
                 (const void *)p, ldm, mult);
        simt::kernel_fail(msg);
    }
}

/* Element (r, c) of a tile at p, row-major or column-major, ldm apart. */
template <typename T> void load(float *v, int R, int C, const T *p, unsigned ldm, bool rowm) {
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) v[r * C + c] = val(p, rowm ? (size_t)r * ldm + c : (size_t)c * ldm + r);
}
}   // namespace detail

template <typename Use, int m, int n, int k, typename T, typename L>
inline void fill_fragment(fragment<Use, m, n, k, T, L> &f, float x) {
    simt::warp_collective("wmma::fill_fragment");
    for (float &e : f.v) e = x;
}

template <typename Use, int m, int n, int k, typename T, typename L, typename P>
inline void load_matrix_sync(fragment<Use, m, n, k, T, L> &f, const P *p, unsigned ldm) {
    static_assert(!std::is_same<Use, accumulator>::value, "an accumulator's load names its layout");
    static_assert(std::is_same<T, P>::value, "the fragment's element type is the memory's");
    simt::warp_collective("wmma::load_matrix_sync");
    detail::check(p, ldm, "wmma::load_matrix_sync");
    detail::load(f.v, f.R, f.C, p, ldm, std::is_same<L, row_major>::value);
}

template <int m, int n, int k>
inline void load_matrix_sync(fragment<accumulator, m, n, k, float> &f, const float *p, unsigned ldm,
                             layout_t l) {
    simt::warp_collective("wmma::load_matrix_sync");
    detail::check(p, ldm, "wmma::load_matrix_sync");
    detail::load(f.v, f.R, f.C, p, ldm, l == mem_row_major);
}

template <int m, int n, int k>
inline void store_matrix_sync(float *p, const fragment<accumulator, m, n, k, float> &f, unsigned ldm,
                              layout_t l) {
    simt::warp_collective("wmma::store_matrix_sync");
    detail::check(p, ldm, "wmma::store_matrix_sync");
    for (int r = 0; r < m; r++)
        for (int c = 0; c < n; c++) p[l == mem_row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r] = f.v[r * n + c];
}

template <int m, int n, int k, typename T, typename LA, typename LB>
inline void mma_sync(fragment<accumulator, m, n, k, float> &d, const fragment<matrix_a, m, n, k, T, LA> &a,
                     const fragment<matrix_b, m, n, k, T, LB> &b, const fragment<accumulator, m, n, k, float> &c) {
    simt::warp_collective("wmma::mma_sync");
    simt::mma_slot *s = simt::warp_mma_slot();
    static_assert(sizeof a.v == sizeof s->a && sizeof b.v == sizeof s->b, "16 x 16 tiles");
    if (s->done == 0) {
        memcpy(s->a, a.v, sizeof s->a), memcpy(s->b, b.v, sizeof s->b), memcpy(s->c, c.v, sizeof s->c);
        for (int r = 0; r < m; r++)
            for (int col = 0; col < n; col++) {
                float acc = s->c[r * n + col];
                for (int i = 0; i < k; i++) acc += s->a[r * k + i] * s->b[i * n + col];   /* exact products */
                s->d[r * n + col] = acc;
            }
    } else if (memcmp(s->a, a.v, sizeof s->a) || memcmp(s->b, b.v, sizeof s->b) ||
               memcmp(s->c, c.v, sizeof s->c)) {
        simt::kernel_fail("wmma::mma_sync: the lanes of a warp hold different tiles (loads from "
                          "different addresses?)");
    }
    memcpy(d.v, s->d, sizeof d.v);
    if (++s->done == 32) s->done = 0;
}

}   // namespace wmma
}   // namespace nvcuda

#endif
