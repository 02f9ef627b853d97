/* screen.c - screened logits (see screen.h). */
#include "models/screen.h"
#include "base/err.h"
#include "base/mem.h"
#include "kern/attn_h.h"
#include "kern/matmul_hp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PANEL 16   /* rows of one panel of kern/matmul_hp.h's layout */

/* Rows [n0, n0 + rows) of w into bf16 (h, row-major), their norms into the
 * running maxima. */
static void to_bf16(const float *w, int n0, int rows, int K, uint16_t *h, float *back, md_screen *sc) {
    for (int r = 0; r < rows; r++) {
        const float *src = w + (size_t)(n0 + r) * K;
        uint16_t *dst = h + (size_t)r * K;
        k_f32_to_h(dst, src, (size_t)K, 1);
        k_h_to_f32(back, dst, (size_t)K, 1);
        /* 16 float lanes (a rounding residual is exact in float; the lanes'
         * sums carry a relative error below K u / 16, and build's margin
         * covers it), then double */
        float dl[16] = {0}, hl[16] = {0};
        int k = 0;
        for (; k + 16 <= K; k += 16)
            for (int l = 0; l < 16; l++) {
                float e = src[k + l] - back[k + l];
                dl[l] += e * e;
                hl[l] += back[k + l] * back[k + l];
            }
        double dd = 0, hh = 0;
        for (int l = 0; l < 16; l++) dd += dl[l], hh += hl[l];
        for (; k < K; k++) {
            double e = (double)src[k] - (double)back[k];
            dd += e * e;
            hh += (double)back[k] * back[k];
        }
        if (!(dd < INFINITY && hh < INFINITY)) sc->dmax = INFINITY;   /* no screen (build) */
        if (sqrt(dd) > sc->dmax) sc->dmax = sqrt(dd);
        if (sqrt(hh) > sc->hmax) sc->hmax = sqrt(hh);
    }
}

encdec_status md_screen_build(ed_wtab *wt, k_w w, int N, int K, size_t min_elems, md_screen *sc) {
    memset(sc, 0, sizeof *sc);
    if (w.t != K_F32 || !w.p || !k_hp_fast() || N < 1 || K < 1 ||
        (size_t)N * (size_t)K < min_elems)
        return ENCDEC_OK;
    size_t kp = k_hp_kpad(K);
    uint16_t *dst = wtab_alloc(wt, k_hp_bytes(N, K), "screened logits");
    uint16_t *h = ed_alloc((size_t)PANEL * K * sizeof *h, "screened logits");
    float *back = ed_alloc((size_t)K * sizeof *back, "screened logits");
    if (!dst || !h || !back) {
        free(h);
        free(back);
        return ENCDEC_ERR_NOMEM;
    }
    for (int n0 = 0; n0 < N; n0 += PANEL) {
        int rows = N - n0 < PANEL ? N - n0 : PANEL;
        to_bf16(w.p, n0, rows, K, h, back, sc);
        /* the f32 rows read leave the process's memory as the copy grows (a
         * file's pages: the load's peak holds one matrix, not both) */
        if ((n0 / PANEL) % 256 == 255 || n0 + rows == N) {
            int first = n0 / (PANEL * 256) * (PANEL * 256);
            wtab_release(wt, (const float *)w.p + (size_t)first * K,
                         (size_t)(n0 + rows - first) * K * sizeof(float));
        }
        k_w part = {h, K_BF16, 0};
        if (k_hp_pack(dst + (size_t)n0 * kp, part, rows, K) != 0) {
            free(h);
            free(back);
            return ed_fail(ENCDEC_ERR_SHAPE, "cannot screen a %d x %d output projection", N, K);
        }
    }
    free(h);
    free(back);
    if (sc->dmax == INFINITY) {   /* a weight that is not finite (loaded unchecked): no screen */
        wtab_drop(wt, dst, k_hp_bytes(N, K));
        memset(sc, 0, sizeof *sc);
        return ENCDEC_OK;
    }
    sc->dmax *= 1 + 1e-3;   /* the float lanes' rounding */
    sc->hmax *= 1 + 1e-3;
    sc->w = (k_w){dst, K_BF16P, 0};
    sc->N = N;
    sc->K = K;
    return ENCDEC_OK;
}

float md_screen_err(const md_screen *sc, const float *x, const float *y) {
    double xx = 0, amax = 0, u = ldexp(1.0, -24), k1 = (double)sc->K + 1;
    for (int k = 0; k < sc->K; k++) xx += (double)x[k] * x[k];
    for (int n = 0; n < sc->N; n++)
        if (fabs((double)y[n]) > amax) amax = fabs((double)y[n]);
    double nx = sqrt(xx), g = k1 * u / (1 - k1 * u);
    double e = nx * sc->dmax + 2 * g * nx * (sc->hmax + sc->dmax) + 8 * u * amax;
    if (!(e < 1e30)) return INFINITY;   /* an activation or logit not finite: refine all */
    return (float)(1.01 * e) + 1e-30f;
}

void md_screen_exact(k_w w, const float *b, const float *x, int K, const int *ids, int n,
                     float *out) {
    const float *W = w.p;
    for (int i = 0; i < n; i++)
        k_matmul_ex(&out[i], 1, x, K, W + (size_t)ids[i] * K, K, b ? b + ids[i] : NULL, 1, 1, K);
}

k_w md_screen_pick(md_screen_state *st, const md_screen *sc, k_w w, int n_out) {
    st->screened = st->on && sc && sc->w.p && n_out <= MD_SCREEN_ROWS && k_hp_fast();
    return st->screened ? sc->w : w;
}

void md_screen_bounds(md_screen_state *st, const md_screen *sc, const float *x, int ldx,
                      const float *y, int ldy, int n_out) {
    for (int r = 0; st->screened && r < n_out; r++)
        st->err[r] = md_screen_err(sc, x + (size_t)r * ldx, y + (size_t)r * ldy);
}

float md_screen_row_err(const md_screen_state *st, int row) {
    return st->screened && row >= 0 && row < MD_SCREEN_ROWS ? st->err[row] : 0;
}
