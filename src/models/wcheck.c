/* wcheck.c - the load-time weight check (see wload.h wl_check).
 *
 * One pass over every floating tensor of the table, in blocks widened to f32
 * (kern k_h_to_f32) and scanned by k_scan_stats. A block that is not all
 * finite is scanned again element by element to name the index. The
 * magnitude test compares each tensor's largest |value| to its RMS: in the
 * Whisper checkpoints encdec runs the largest ratio is 44 (base; tiny.en: 31),
 * while a flipped f16 exponent bit in an embedding gives ratios of 700 to
 * 10^6; tensors too small for an RMS to mean anything (norms, biases) get the
 * finite test only.
 */
#include "models/wload.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WC_BLOCK 8192

/* "[r, c]" for element i of a tensor of 2 or more dimensions, else "". */
static const char *where(char *buf, size_t cap, const ed_tensor *t, size_t i) {
    buf[0] = 0;
    if (t->ndim < 2 || t->shape[t->ndim - 1] <= 0) return buf;
    size_t cols = (size_t)t->shape[t->ndim - 1];
    snprintf(buf, cap, " (row %zu, column %zu)", i / cols, i % cols);
    return buf;
}

static encdec_status bad_value(const ed_tensor *t, size_t i, float v, const char *why) {
    char shape[96], pos[64], val[32];
    if (isnan(v)) snprintf(val, sizeof val, "NaN");
    else if (isinf(v)) snprintf(val, sizeof val, "%sInf", v < 0 ? "-" : "+");
    else snprintf(val, sizeof val, "%g", (double)v);
    return ed_fail(ENCDEC_ERR_FORMAT,
                   "%s: tensor %s %s: element %zu%s is %s%s; the file is corrupt (the weights "
                   "are checked at load%s)", ed_basename(t->file), t->name,
                   ed_shape_str(shape, sizeof shape, t->ndim, t->shape), i,
                   where(pos, sizeof pos, t, i), val, why,
                   *why ? "; a model that truly holds such a value loads with no_weight_check, "
                          "--no-weight-check" : "");
}

/* Elements [i0, i0 + n) of t as f32 in buf (or borrowed when aligned f32). */
static const float *block(const ed_tensor *t, size_t i0, size_t n, float *buf) {
    const char *p = (const char *)t->data;
    switch (t->dtype) {
    case ED_F32:
        if (((uintptr_t)p % sizeof(float)) == 0) return (const float *)p + i0;
        memcpy(buf, p + i0 * 4, n * 4);
        return buf;
    case ED_F16:
    case ED_BF16:
        if (((uintptr_t)p % 2) == 0) k_h_to_f32(buf, (const uint16_t *)p + i0, n, t->dtype == ED_BF16);
        else ed_to_f32(buf, p + i0 * 2, t->dtype, n);
        return buf;
    default:   /* ED_F64 */
        for (size_t k = 0; k < n; k++) {
            double d;
            memcpy(&d, p + (i0 + k) * 8, 8);
            buf[k] = (float)d;
        }
        return buf;
    }
}

static encdec_status check_tensor(const ed_tensor *t, float *buf) {
    size_t n = t->nbytes / ed_dtype_size(t->dtype);
    double ss = 0;
    float amax = 0;
    size_t imax = 0;
    for (size_t i0 = 0; i0 < n; i0 += WC_BLOCK) {
        size_t len = n - i0 < WC_BLOCK ? n - i0 : WC_BLOCK;
        const float *x = block(t, i0, len, buf);
        float bm;
        double bs;
        if (!k_scan_stats(x, len, &bm, &bs)) {
            for (size_t k = 0; k < len; k++)
                if (!isfinite(x[k])) return bad_value(t, i0 + k, x[k], "");
            /* all finite: the sum overflowed; the magnitude test below judges */
        }
        if (bm > amax)
            for (size_t k = 0; k < len; k++)
                if (fabsf(x[k]) == bm) {
                    amax = bm;
                    imax = i0 + k;
                    break;
                }
        ss += bs;
    }
    if (n < WL_CHECK_MIN_N) return ENCDEC_OK;
    /* the RMS of the others: one huge value would otherwise make its own scale */
    double rest = ss - (double)amax * amax, rms = sqrt((rest > 0 ? rest : 0) / (double)(n - 1));
    if ((double)amax > WL_CHECK_RATIO * rms || !isfinite(ss)) {
        char why[96];
        snprintf(why, sizeof why, ", %.0f times the RMS of the tensor's other values (%.3g)",
                 rms > 0 ? amax / rms : INFINITY, rms);
        float one;
        return bad_value(t, imax, *block(t, imax, 1, &one), why);
    }
    return ENCDEC_OK;
}

encdec_status wl_check(const ed_wtab *wt) {
    float *buf = ed_alloc(WC_BLOCK * sizeof *buf, "weight check block");
    if (!buf) return ENCDEC_ERR_NOMEM;
    encdec_status st = ENCDEC_OK;
    for (int i = 0; !st && i < wtab_count(wt); i++) {
        const ed_tensor *t = wtab_at(wt, i);
        if (!t->data) continue;   /* converted into another layout and dropped (wtab_drop) */
        if (t->dtype == ED_F32 || t->dtype == ED_F16 || t->dtype == ED_BF16 || t->dtype == ED_F64) {
            st = check_tensor(t, buf);
            wtab_release(wt, t->data, t->nbytes);   /* read again, if at all, when converted */
        }
    }
    free(buf);
    return st;
}
