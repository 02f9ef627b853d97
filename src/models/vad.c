/* vad.c - Silero VAD v6 (see vad.h): the weights, a state, the frames'
 * probabilities in blocks. */
#include "models/vad.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/json.h"
#include "base/mem.h"
#include "core/ops.h"
#include "io/tensor.h"
#include "kern/kern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 128               /* LSTM units */
#define NQ 129              /* frequency bins of the 256-point transform */
#define WIN 256
#define HOP 128
#define PADDED (VAD_CONTEXT + VAD_FRAME + 2 * HOP)   /* 832: one frame's reflect-padded input */
#define BLOCK 256           /* frames per block of products (8 s) */

struct vad_model {
    ed_wtab *wt;
    const float *basis;     /* [2 NQ, WIN] cosine rows, then sine rows */
    float *w0;              /* [128, 3, NQ]: the file's [128, NQ, 3] tap-major, so that */
    float *w1;              /* [64, 3, 128]   each tap's inputs are one contiguous run */
    float *w2;              /* [64, 3, 64] */
    const float *b0, *b1, *b2;   /* [128], [64], [64] */
    float *w3;              /* [128, 64]: the middle tap (the only one a 1-step input meets) */
    const float *b3;        /* [128] */
    const float *wih, *whh, *bias;   /* [4H, 128], [4H, H], [4H]: gates i, o, f, c */
    const float *wout, *bout;        /* [1, H], [1] */
};

struct vad_state {
    const vad_model *m;
    float h[H], c[H];
    float ctx[VAD_CONTEXT];  /* the last samples of the previous frame */
    float *a;                /* [BLOCK * 4, WIN] the windows */
    float *spec;             /* [BLOCK * 4, 2 NQ] */
    float *col;              /* [BLOCK * 4, NQ * 3] im2col of each layer (the widest) */
    float *x0;               /* [BLOCK * 4, 128] */
    float *x1;               /* [BLOCK * 2, 64] */
    float *x2;               /* [BLOCK, 64] */
    float *x3;               /* [BLOCK, 128] */
    float *gates;            /* [BLOCK, 4H] the input's share of every frame's gates */
    float g[4 * H];
};

static const float *get(const ed_wtab *wt, const char *name, int ndim, int64_t a, int64_t b,
                        int64_t c, encdec_status *st) {
    if (*st) return NULL;
    const ed_tensor *t = wtab_get(wt, name);
    int64_t e[3] = {a, b, c};
    int ok = t && t->dtype == ED_F32 && t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == e[i];
    if (!ok) {
        char want[64], got[64];
        ed_shape_str(want, sizeof want, ndim, e);
        *st = ed_fail(ENCDEC_ERR_SHAPE, "Silero VAD: tensor %s is %s, expected f32 %s", name,
                      !t ? "missing" : ed_shape_str(got, sizeof got, t->ndim, t->shape), want);
        return NULL;
    }
    for (size_t i = 0; i < t->nbytes / 4; i++)
        if (!isfinite(((const float *)t->data)[i])) {
            *st = ed_fail(ENCDEC_ERR_FORMAT, "Silero VAD: tensor %s holds a value that is not a "
                          "finite number (element %zu): the file is corrupt", name, i);
            return NULL;
        }
    return t->data;
}

static encdec_status check_config(const char *dir) {
    char p[4200];
    snprintf(p, sizeof p, "%s/config.json", dir);
    cJSON *js = NULL;
    encdec_status st = ed_json_load(p, &js);
    if (st) return st;
    const cJSON *t = cJSON_GetObjectItem(js, "model_type");
    int version = 0, rate = 0, frame = 0;
    if (!cJSON_IsString(t) || strcmp(t->valuestring, "silero_vad"))
        st = ed_fail(ENCDEC_ERR_CONFIG, "%s: model_type is not \"silero_vad\"", p);
    if (!st) st = ed_json_int(js, "version", p, 1, 100, &version);
    if (!st) st = ed_json_int(js, "sampling_rate", p, 1, 1000000, &rate);
    if (!st) st = ed_json_int(js, "frame_samples", p, 1, 1000000, &frame);
    if (!st && (version != 6 || rate != VAD_RATE || frame != VAD_FRAME))
        st = ed_fail(ENCDEC_ERR_CONFIG, "%s: Silero VAD version %d at %d Hz with frames of %d "
                     "samples; encdec runs version 6 at 16000 Hz, 512 samples", p, version, rate,
                     frame);
    cJSON_Delete(js);
    return st;
}

/* A kernel-3 convolution's weight [cout, cin, 3] as [cout, 3, cin]. */
static float *tap_major(ed_wtab *wt, const float *w, int cout, int cin, encdec_status *st) {
    if (*st) return NULL;
    float *t = wtab_alloc(wt, sizeof(float) * cout * cin * 3, "VAD weights");
    if (!t) {
        *st = ENCDEC_ERR_NOMEM;
        return NULL;
    }
    for (int o = 0; o < cout; o++)
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < cin; i++)
                t[((size_t)o * 3 + k) * cin + i] = w[((size_t)o * cin + i) * 3 + k];
    return t;
}

encdec_status vad_load(const char *path, vad_model **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "vad_load: out is NULL");
    *out = NULL;
    if (!path || !*path) return ed_fail(ENCDEC_ERR_ARG, "vad_load: no path");
    encdec_status st = check_config(path);
    if (st) return st;
    vad_model *m = calloc(1, sizeof *m);
    if (!m) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: VAD model");
    m->wt = wtab_new();
    if (!m->wt) {
        free(m);
        return ENCDEC_ERR_NOMEM;
    }
    st = st_load_dir(m->wt, path);
    m->basis = get(m->wt, "stft.basis", 3, 2 * NQ, 1, WIN, &st);
    const float *w0 = get(m->wt, "conv.0.weight", 3, 128, NQ, 3, &st);
    m->b0 = get(m->wt, "conv.0.bias", 1, 128, 0, 0, &st);
    const float *w1 = get(m->wt, "conv.1.weight", 3, 64, 128, 3, &st);
    m->b1 = get(m->wt, "conv.1.bias", 1, 64, 0, 0, &st);
    const float *w2 = get(m->wt, "conv.2.weight", 3, 64, 64, 3, &st);
    m->b2 = get(m->wt, "conv.2.bias", 1, 64, 0, 0, &st);
    const float *w3 = get(m->wt, "conv.3.weight", 3, 128, 64, 3, &st);
    m->b3 = get(m->wt, "conv.3.bias", 1, 128, 0, 0, &st);
    m->wih = get(m->wt, "lstm.weight_ih", 2, 4 * H, 128, 0, &st);
    m->whh = get(m->wt, "lstm.weight_hh", 2, 4 * H, H, 0, &st);
    m->bias = get(m->wt, "lstm.bias", 1, 4 * H, 0, 0, &st);
    m->wout = get(m->wt, "out.weight", 3, 1, H, 1, &st);
    m->bout = get(m->wt, "out.bias", 1, 1, 0, 0, &st);
    if (!st) {
        m->w0 = tap_major(m->wt, w0, 128, NQ, &st);
        m->w1 = tap_major(m->wt, w1, 64, 128, &st);
        m->w2 = tap_major(m->wt, w2, 64, 64, &st);
        m->w3 = st ? NULL : wtab_alloc(m->wt, sizeof(float) * 128 * 64, "VAD weights");
        if (!st && !m->w3) st = ENCDEC_ERR_NOMEM;
        for (int i = 0; !st && i < 128 * 64; i++) m->w3[i] = w3[i * 3 + 1];
    }
    if (st) {
        vad_free(m);
        return st;
    }
    *out = m;
    return ENCDEC_OK;
}

void vad_free(vad_model *m) {
    if (!m) return;
    wtab_free(m->wt);
    free(m);
}

encdec_status vad_state_new(const vad_model *m, vad_state **out) {
    *out = NULL;
    vad_state *s = calloc(1, sizeof *s);
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: VAD state");
    s->m = m;
    size_t f4 = BLOCK * 4;
    s->a = ed_alloc(sizeof(float) * f4 * WIN, "VAD scratch");
    s->spec = ed_alloc(sizeof(float) * f4 * 2 * NQ, "VAD scratch");
    s->col = ed_alloc(sizeof(float) * f4 * NQ * 3, "VAD scratch");
    s->x0 = ed_alloc(sizeof(float) * f4 * 128, "VAD scratch");
    s->x1 = ed_alloc(sizeof(float) * BLOCK * 2 * 64, "VAD scratch");
    s->x2 = ed_alloc(sizeof(float) * BLOCK * 64, "VAD scratch");
    s->x3 = ed_alloc(sizeof(float) * BLOCK * 128, "VAD scratch");
    s->gates = ed_alloc(sizeof(float) * BLOCK * 4 * H, "VAD scratch");
    if (!s->a || !s->spec || !s->col || !s->x0 || !s->x1 || !s->x2 || !s->x3 || !s->gates) {
        vad_state_free(s);
        return ENCDEC_ERR_NOMEM;
    }
    vad_state_reset(s);
    *out = s;
    return ENCDEC_OK;
}

void vad_state_free(vad_state *s) {
    if (!s) return;
    free(s->a);
    free(s->spec);
    free(s->col);
    free(s->x0);
    free(s->x1);
    free(s->x2);
    free(s->x3);
    free(s->gates);
    free(s);
}

void vad_state_reset(vad_state *s) {
    memset(s->h, 0, sizeof s->h);
    memset(s->c, 0, sizeof s->c);
    memset(s->ctx, 0, sizeof s->ctx);
}

/* y[M, N] = x[M, K] . w[N, K]^T + b, then ReLU when relu: each row's bits
 * whatever M and the pool's size where op_rows_invariant holds (x86's vector
 * sets: how audio is cut into calls changes no probability; elsewhere BLAS's
 * sums may follow M, within rounding). */
static void product(ed_pool *p, float *y, const float *x, const float *w, const float *b, int M,
                    int N, int K, int relu) {
    k_w kw = {w, K_F32, 0};
    op_matmul_w_rows(p, y, N, x, K, kw, b, M, N, K);
    if (relu) k_relu(y, (size_t)M * N);
}

/* Windows 1..4 of frame f's reflect-padded input into a[4, WIN]. */
static void windows(float *a, const float *ctx, const float *x) {
    float in[VAD_CONTEXT + VAD_FRAME], pad[PADDED];
    memcpy(in, ctx, sizeof(float) * VAD_CONTEXT);
    memcpy(in + VAD_CONTEXT, x, sizeof(float) * VAD_FRAME);
    int n = VAD_CONTEXT + VAD_FRAME;
    for (int i = 0; i < PADDED; i++) {
        int j = i - HOP;                      /* reflect: -1 -> 1, n -> n - 2 */
        if (j < 0) j = -j;
        if (j >= n) j = 2 * (n - 1) - j;
        pad[i] = in[j];
    }
    for (int w = 0; w < 4; w++) memcpy(a + (size_t)w * WIN, pad + (w + 1) * HOP, sizeof(float) * WIN);
}

/* The layers before the LSTM for frames [0, nf) of the block: s->x3. */
static void features(vad_state *s, ed_pool *p, const float *pcm, int nf) {
    const vad_model *m = s->m;
    for (int f = 0; f < nf; f++) {
        windows(s->a + (size_t)f * 4 * WIN, s->ctx, pcm + (size_t)f * VAD_FRAME);
        memcpy(s->ctx, pcm + (size_t)f * VAD_FRAME + VAD_FRAME - VAD_CONTEXT, sizeof s->ctx);
    }
    product(p, s->spec, s->a, m->basis, NULL, nf * 4, 2 * NQ, WIN, 0);
    /* conv 0: magnitudes [NQ, 4] per frame (over the real parts, in place),
     * kernel 3, padding 1 */
    for (size_t r = 0; r < (size_t)nf * 4; r++) {
        float *sp = s->spec + r * 2 * NQ;
        for (int q = 0; q < NQ; q++) sp[q] = sqrtf(sp[q] * sp[q] + sp[NQ + q] * sp[NQ + q]);
    }
    for (int f = 0; f < nf; f++)   /* row (f, t): taps t - 1, t, t + 1, each NQ wide */
        for (int t = 0; t < 4; t++) {
            float *row = s->col + ((size_t)f * 4 + t) * NQ * 3;
            for (int k = 0; k < 3; k++) {
                int u = t + k - 1;
                if (u >= 0 && u < 4)
                    memcpy(row + k * NQ, s->spec + ((size_t)f * 4 + u) * 2 * NQ, sizeof(float) * NQ);
                else
                    memset(row + k * NQ, 0, sizeof(float) * NQ);
            }
        }
    product(p, s->x0, s->col, m->w0, m->b0, nf * 4, 128, NQ * 3, 1);
    /* conv 1: stride 2: output t reads inputs 2t - 1 .. 2t + 1 (rows of x0) */
    for (int f = 0; f < nf; f++) {
        const float *in = s->x0 + (size_t)f * 4 * 128;
        float *row = s->col + (size_t)f * 2 * 128 * 3;
        memset(row, 0, sizeof(float) * 128);
        memcpy(row + 128, in, sizeof(float) * 2 * 128);
        memcpy(row + 3 * 128, in + 128, sizeof(float) * 3 * 128);
    }
    product(p, s->x1, s->col, m->w1, m->b1, nf * 2, 64, 128 * 3, 1);
    /* conv 2: one output from inputs -1 (zero), 0, 1 */
    for (int f = 0; f < nf; f++) {
        float *row = s->col + (size_t)f * 64 * 3;
        memset(row, 0, sizeof(float) * 64);
        memcpy(row + 64, s->x1 + (size_t)f * 2 * 64, sizeof(float) * 2 * 64);
    }
    product(p, s->x2, s->col, m->w2, m->b2, nf, 64, 64 * 3, 1);
    product(p, s->x3, s->x2, m->w3, m->b3, nf, 128, 64, 1);   /* conv 3: its middle tap */
    product(p, s->gates, s->x3, m->wih, m->bias, nf, 4 * H, 128, 0);
}

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* One LSTM step on the frame's gates gi[4H] (the input's share), then the
 * frame's probability. */
static float step(vad_state *s, const float *gi) {
    const vad_model *m = s->m;
    k_matmul(s->g, s->h, m->whh, gi, 1, 4 * H, H);   /* gi + whh . h */
    k_lstm_cell(s->h, s->c, s->g, H);
    double z = m->bout[0];
    for (int j = 0; j < H; j++) z += (double)m->wout[j] * (s->h[j] > 0 ? s->h[j] : 0);
    return sigm((float)z);
}

encdec_status vad_probs(vad_state *s, ed_pool *pool, const float *pcm, size_t n_frames,
                        float *probs) {
    if (!s || !pool || (n_frames && (!pcm || !probs)))
        return ed_fail(ENCDEC_ERR_ARG, "vad_probs: NULL state, pool or buffers");
    int old = ed_isa_swap(ed_pool_isa(pool));   /* the recurrent steps run here, not on the pool */
    for (size_t f0 = 0; f0 < n_frames; f0 += BLOCK) {
        int nf = n_frames - f0 < BLOCK ? (int)(n_frames - f0) : BLOCK;
        features(s, pool, pcm + f0 * VAD_FRAME, nf);
        for (int f = 0; f < nf; f++) probs[f0 + f] = step(s, s->gates + (size_t)f * 4 * H);
    }
    ed_isa_swap(old);
    return ENCDEC_OK;
}
