/* screen.c - screened logits (see screen.h). */
#include "models/screen.h"
#include "base/err.h"
#include "base/mem.h"
#include "kern/matmul_hp.h"
#include "kern/q8.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 4096    /* f32 rows quantised, measured and released at a time */
#define HCHUNK 256    /* rows of a half matrix expanded to f32 at a time */

/* The matrices a screen can stand for: f32 (row-major), and halves in
 * panel-major order (kern/matmul_hp.h) multiplied with f32 x (not lowp: the
 * bf16 mode rounds x, on kernels whose columns the refinement does not
 * reproduce). */
static int screenable(k_w w) { return w.t == K_F32 || w.t == K_F16P || (w.t == K_BF16P && !w.lowp); }

/* Rows [n0, n0 + rows) of w into q (buf: HCHUNK * K floats for halves). */
static int pack_part(k_q8 q, k_w w, int n0, int rows, float *buf, k_q8_norms *nrm) {
    int K = q.K;
    if (w.t == K_F32)
        return k_q8_pack_rows(q, (k_w){(const float *)w.p + (size_t)n0 * K, K_F32, 0}, n0, n0 + rows, nrm);
    for (int r = 0; r < rows; r++) k_hp_row(buf + (size_t)r * K, w.p, w.t == K_BF16P, n0 + r, q.N, K);
    return k_q8_pack_rows(q, (k_w){buf, K_F32, 0}, n0, n0 + rows, nrm);
}

encdec_status md_screen_build(ed_wtab *wt, k_w w, int N, int K, size_t min_elems, md_screen *sc) {
    memset(sc, 0, sizeof *sc);
    size_t bytes = k_q8_bytes(N, K);
    if (!screenable(w) || !w.p || !k_q8_fast() || !bytes || (size_t)N * (size_t)K < min_elems)
        return ENCDEC_OK;
    void *dst = wtab_alloc(wt, bytes, "screened logits");
    float *buf = w.t == K_F32 ? NULL : ed_alloc((size_t)HCHUNK * K * sizeof *buf, "screened logits");
    if (!dst || (w.t != K_F32 && !buf)) {
        free(buf);
        return ENCDEC_ERR_NOMEM;
    }
    memset(dst, 0, bytes);
    k_q8 q = {dst, N, K};
    k_q8_norms nrm = {0, 0, 0, 1};
    int chunk = w.t == K_F32 ? CHUNK : HCHUNK;
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int rows = N - n0 < chunk ? N - n0 : chunk;
        if (pack_part(q, w, n0, rows, buf, &nrm) != 0) {
            free(buf);
            return ed_fail(ENCDEC_ERR_SHAPE, "cannot screen a %d x %d output projection", N, K);
        }
        /* f32 rows read from a file leave the process's memory as the copy
         * grows (the load's peak holds one matrix, not both); halves were
         * repacked at load, and stay */
        if (w.t == K_F32)
            wtab_release(wt, (const float *)w.p + (size_t)n0 * K, (size_t)rows * K * sizeof(float));
    }
    free(buf);
    if (!nrm.finite) {   /* a weight that is not finite (loaded unchecked): no screen */
        wtab_drop(wt, dst, bytes);
        memset(sc, 0, sizeof *sc);
        return ENCDEC_OK;
    }
    sc->dmax = nrm.err * (1 + 1e-6);   /* the double sums' rounding */
    sc->hmax = nrm.q * (1 + 1e-6);
    sc->wmax = nrm.w * (1 + 1e-6);
    sc->w = (k_w){dst, K_Q8, 0};
    sc->N = N;
    sc->K = K;
    return ENCDEC_OK;
}

size_t md_screen_bytes(const md_screen *sc) { return sc->w.p ? k_q8_bytes(sc->N, sc->K) : 0; }

/* The logits of a row beyond this many times its dot products' scale,
 * ||x|| max ||w_n|| + 1, hold a masking bias (CTranslate2's Marian
 * conversions: -1e30 for the padding token; others use -1e4 or -inf). */
#define BIG 64.0

float md_screen_err(const md_screen *sc, k_w w, const float *b, const float *x, float *y) {
    double xx = 0, amax = 0, u = ldexp(1.0, -24), k1 = (double)sc->K + 1;
    for (int k = 0; k < sc->K; k++) xx += (double)x[k] * x[k];
    double nx = sqrt(xx);
    if (!(nx < INFINITY)) return INFINITY;   /* an activation not finite: refine all */
    double big = BIG * (nx * fmax(sc->wmax, sc->hmax) + 1);
    /* |y| <= big in double is |y| <= lim in float: the float at or below big */
    float lim = big < FLT_MAX ? (float)big : FLT_MAX, ymax;
    if ((double)lim > big) lim = nextafterf(lim, 0.0f);
    size_t n_big = k_absmax_within(y, (size_t)sc->N, lim, &ymax);   /* one vector pass */
    amax = ymax;
    for (int n = 0; n_big && n < sc->N; n++)
        if (!(fabsf(y[n]) <= lim)) {   /* exact (and -inf, NaN as they are) */
            md_screen_exact(w, b, x, sc->N, sc->K, &n, 1, &y[n]);
            n_big--;
        }
    double ex = k_q8_quant_err(x, sc->K), g = k1 * u / (1 - k1 * u);
    double e = nx * sc->dmax + ex * sc->hmax + 2 * g * nx * sc->wmax + 4 * u * (nx + ex) * sc->hmax +
               8 * u * (amax + nx * sc->wmax);
    if (!(e < 1e30)) return INFINITY;
    return (float)(1.01 * e) + 1e-30f;
}

void md_screen_exact(k_w w, const float *b, const float *x, int N, int K, const int *ids, int n,
                     float *out) {
    for (int i = 0; i < n; i++) {
        const float *bi = b ? b + ids[i] : NULL;
        if (w.t == K_F32)
            k_matmul_ex(&out[i], 1, x, K, (const float *)w.p + (size_t)ids[i] * K, K, bi, 1, 1, K);
        else   /* the panel kernel, whose columns' bits do not depend on the rows and columns
                * beside them; it indexes y by absolute column and writes y[ids[i]] only */
            k_matmul_hp(out + i - ids[i], N, x, K, w.p, w.t == K_BF16P, b, 1, ids[i], 1, N, K);
    }
}

k_w md_screen_pick(md_screen_state *st, const md_screen *sc, k_w w, int n_out, int invariant) {
    int rows_ok = n_out <= MD_SCREEN_ROWS || invariant || w.t == K_F16P || w.t == K_BF16P;
    st->screened = st->on && sc && sc->w.p && n_out >= 1 && rows_ok && k_q8_fast();
    if (st->screened && n_out > st->cap) {
        float *e = realloc(st->err, (size_t)n_out * sizeof *e);
        if (e) st->err = e, st->cap = n_out;
        else st->screened = 0;   /* the f32 pass then, exact */
    }
    return st->screened ? sc->w : w;
}

void md_screen_state_free(md_screen_state *st) {
    free(st->err);
    st->err = NULL;
    st->rows = st->cap = 0;
}

void md_screen_bounds(md_screen_state *st, const md_screen *sc, k_w w, const float *b, const float *x,
                      int ldx, float *y, int ldy, int n_out) {
    st->rows = st->screened ? n_out : 0;
    for (int r = 0; st->screened && r < n_out; r++)
        st->err[r] = md_screen_err(sc, w, b, x + (size_t)r * ldx, y + (size_t)r * ldy);
}

float md_screen_row_err(const md_screen_state *st, int row) {
    return st->screened && row >= 0 && row < st->rows ? st->err[row] : 0;
}
