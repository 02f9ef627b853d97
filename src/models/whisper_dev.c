/* whisper_dev.c - a Whisper model's weights on a device (core/dev.h): one
 * block of device memory, every matrix converted once to the device's
 * compute type (f32, or bf16 for the bf16 mode), every vector f32. The copy
 * shares the host model's tokenizer and rules; only its weight pointers
 * differ. */
#include "models/whisper.h"
#include "base/err.h"
#include "base/mem.h"
#include "core/dev.h"
#include "models/mdev.h"

#include <stdlib.h>
#include <string.h>

/* Every f32 vector of the model (biases, norms, positions). */
static int whisper_vectors(whisper_model *m, md_vec *out, int cap) {
    const whisper_hparams *h = &m->hp;
    size_t d = (size_t)h->d, F = (size_t)h->ffn;
    int n = 0;
    md_vec_add(out, cap, &n, &m->conv1_b, d);
    md_vec_add(out, cap, &n, &m->conv2_b, d);
    md_vec_add(out, cap, &n, &m->enc_pos, (size_t)h->n_audio_ctx * d);
    for (int l = 0; l < h->n_enc_layer; l++) {
        whisper_enc_layer *y = &m->enc[l];
        const float **v[] = {&y->ln1_g, &y->ln1_b, &y->b_qkv, &y->b_o,
                             &y->ln2_g, &y->ln2_b, &y->b_fc1, &y->b_fc2};
        size_t len[] = {d, d, 3 * d, d, d, d, F, d};
        for (int i = 0; i < 8; i++) md_vec_add(out, cap, &n, v[i], len[i]);
    }
    md_vec_add(out, cap, &n, &m->enc_ln_g, d);
    md_vec_add(out, cap, &n, &m->enc_ln_b, d);
    md_vec_add(out, cap, &n, &m->dec_pos, (size_t)h->n_text_ctx * d);
    for (int l = 0; l < h->n_dec_layer; l++) {
        whisper_dec_layer *y = &m->dec[l];
        const float **v[] = {&y->ln1_g, &y->ln1_b, &y->b_qkv, &y->b_o,   &y->lnx_g, &y->lnx_b,
                             &y->b_xq,  &y->b_xo,  &y->ln2_g, &y->ln2_b, &y->b_fc1, &y->b_fc2};
        size_t len[] = {d, d, 3 * d, d, d, d, d, d, d, d, F, d};
        for (int i = 0; i < 12; i++) md_vec_add(out, cap, &n, v[i], len[i]);
    }
    md_vec_add(out, cap, &n, &m->dec_ln_g, d);
    md_vec_add(out, cap, &n, &m->dec_ln_b, d);
    md_vec_add(out, cap, &n, &m->b_xkv, (size_t)h->n_dec_layer * 2 * d);
    return n;
}

static int list_mats(void *g, wl_mat *out, int cap) { return whisper_matrices(g, out, cap); }
static int list_vecs(void *g, md_vec *out, int cap) { return whisper_vectors(g, out, cap); }

MD_DEFINE_UPLOAD(whisper_upload, whisper_model, list_mats, list_vecs, whisper_dev_free)

void whisper_dev_free(whisper_model *g) {
    if (!g) return;
    ed_dev_free(g->dev, g->dev_mem);
    free(g->enc);
    free(g->dec);
    free(g);
}
