/* whisper_dev.c - a Whisper model's weights on a device (core/dev.h): one
 * block of device memory, every matrix converted once to the device's
 * compute type (f32, or bf16 for the bf16 mode), every vector f32. The copy
 * shares the host model's tokenizer and rules; only its weight pointers
 * differ. */
#include "models/whisper.h"
#include "base/err.h"
#include "base/mem.h"
#include "core/dev.h"
#include "kern/attn_h.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const float **p;
    size_t n;
} vec_ref;

static void vec_add(vec_ref *out, int cap, int *n, const float **p, size_t len) {
    if (*n < cap) out[*n] = (vec_ref){p, len};
    (*n)++;
}

/* Every f32 vector of the model (biases, norms, positions). */
static int whisper_vectors(whisper_model *m, vec_ref *out, int cap) {
    const whisper_hparams *h = &m->hp;
    size_t d = (size_t)h->d, F = (size_t)h->ffn;
    int n = 0;
    vec_add(out, cap, &n, &m->conv1_b, d);
    vec_add(out, cap, &n, &m->conv2_b, d);
    vec_add(out, cap, &n, &m->enc_pos, (size_t)h->n_audio_ctx * d);
    for (int l = 0; l < h->n_enc_layer; l++) {
        whisper_enc_layer *y = &m->enc[l];
        const float **v[] = {&y->ln1_g, &y->ln1_b, &y->b_qkv, &y->b_o,
                             &y->ln2_g, &y->ln2_b, &y->b_fc1, &y->b_fc2};
        size_t len[] = {d, d, 3 * d, d, d, d, F, d};
        for (int i = 0; i < 8; i++) vec_add(out, cap, &n, v[i], len[i]);
    }
    vec_add(out, cap, &n, &m->enc_ln_g, d);
    vec_add(out, cap, &n, &m->enc_ln_b, d);
    vec_add(out, cap, &n, &m->dec_pos, (size_t)h->n_text_ctx * d);
    for (int l = 0; l < h->n_dec_layer; l++) {
        whisper_dec_layer *y = &m->dec[l];
        const float **v[] = {&y->ln1_g, &y->ln1_b, &y->b_qkv, &y->b_o,   &y->lnx_g, &y->lnx_b,
                             &y->b_xq,  &y->b_xo,  &y->ln2_g, &y->ln2_b, &y->b_fc1, &y->b_fc2};
        size_t len[] = {d, d, 3 * d, d, d, d, d, d, d, d, F, d};
        for (int i = 0; i < 12; i++) vec_add(out, cap, &n, v[i], len[i]);
    }
    vec_add(out, cap, &n, &m->dec_ln_g, d);
    vec_add(out, cap, &n, &m->dec_ln_b, d);
    vec_add(out, cap, &n, &m->b_xkv, (size_t)h->n_dec_layer * 2 * d);
    return n;
}

static size_t up256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Matrix w [N, K] (f32, f16 or bf16 as stored) into dst as f32 or bf16,
 * through tmp (N * K floats). */
static encdec_status put_matrix(ed_dev *d, void *dst, k_w w, int N, int K, int bf16, float *tmp,
                                uint16_t *half) {
    size_t n = (size_t)N * K;
    if (w.t != K_F32 && w.t != K_F16 && w.t != K_BF16)
        return ed_fail(ENCDEC_ERR_ARG, "a weight matrix in a CPU-only layout cannot go to the device");
    const float *src = w.p;
    if (w.t != K_F32 || bf16) {
        for (int r = 0; r < N; r++) k_w_row(tmp + (size_t)r * K, w, r, N, K);
        src = tmp;
    }
    if (!bf16) return ed_dev_upload(d, dst, src, n * sizeof(float));
    k_f32_to_h(half, src, n, 1);
    return ed_dev_upload(d, dst, half, n * sizeof(uint16_t));
}

encdec_status whisper_upload(const whisper_model *m, void *dev, int bf16, whisper_model **out) {
    *out = NULL;
    ed_dev *d = dev;
    const whisper_hparams *h = &m->hp;
    whisper_model *g = malloc(sizeof *g);
    if (!g) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: device model");
    *g = *m;
    g->wt = NULL;
    g->dev = d;
    g->dev_mem = NULL;
    g->enc = ed_alloc((size_t)h->n_enc_layer * sizeof *g->enc, "device model layers");
    g->dec = ed_alloc((size_t)h->n_dec_layer * sizeof *g->dec, "device model layers");
    int nm = whisper_matrices(g, NULL, 0), nv = 0;
    wl_mat *mats = ed_alloc((size_t)nm * sizeof *mats, "weight list");
    vec_ref *vecs = NULL;
    encdec_status st = g->enc && g->dec && mats ? ENCDEC_OK : ENCDEC_ERR_NOMEM;
    if (!st) {
        memcpy(g->enc, m->enc, (size_t)h->n_enc_layer * sizeof *g->enc);
        memcpy(g->dec, m->dec, (size_t)h->n_dec_layer * sizeof *g->dec);
        whisper_matrices(g, mats, nm);
        nv = whisper_vectors(g, NULL, 0);
        vecs = ed_alloc((size_t)nv * sizeof *vecs, "vector list");
        if (!vecs) st = ENCDEC_ERR_NOMEM;
        else whisper_vectors(g, vecs, nv);
    }
    size_t total = 0, big = 0, es = bf16 ? 2 : 4;
    for (int i = 0; !st && i < nm; i++) {
        size_t n = (size_t)mats[i].N * mats[i].K;
        total += up256(n * es);
        if (n > big) big = n;
    }
    for (int i = 0; !st && i < nv; i++)
        if (*vecs[i].p) total += up256(vecs[i].n * sizeof(float));
    float *tmp = NULL;
    uint16_t *half = NULL;
    if (!st) {
        g->dev_mem = ed_dev_alloc(d, total, "the model's weights");
        tmp = ed_alloc(big * sizeof(float), "weight conversion");
        half = bf16 ? ed_alloc(big * sizeof(uint16_t), "weight conversion") : NULL;
        if (!g->dev_mem || !tmp || (bf16 && !half)) st = ENCDEC_ERR_NOMEM;
    }
    char *at = g->dev_mem;
    for (int i = 0; !st && i < nm; i++) {
        k_w *w = mats[i].w;
        st = put_matrix(d, at, *w, mats[i].N, mats[i].K, bf16, tmp, half);
        w->p = at;
        w->t = bf16 ? K_BF16 : K_F32;
        w->lowp = bf16;
        at += up256((size_t)mats[i].N * mats[i].K * es);
    }
    for (int i = 0; !st && i < nv; i++) {
        if (!*vecs[i].p) continue;
        st = ed_dev_upload(d, at, *vecs[i].p, vecs[i].n * sizeof(float));
        *vecs[i].p = (const float *)at;
        at += up256(vecs[i].n * sizeof(float));
    }
    free(tmp);
    free(half);
    free(mats);
    free(vecs);
    if (st) {
        whisper_dev_free(g);
        return st;
    }
    g->weight_bytes = total;
    *out = g;
    return ENCDEC_OK;
}

void whisper_dev_free(whisper_model *g) {
    if (!g) return;
    ed_dev_free(g->dev, g->dev_mem);
    free(g->enc);
    free(g->dec);
    free(g);
}
