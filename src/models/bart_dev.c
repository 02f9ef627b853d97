/* bart_dev.c - a BART-family model's weights on a device (bart.h
 * bart_upload; the block and the conversions: models/mdev.h). */
#include "models/bart.h"
#include "base/err.h"
#include "base/mem.h"
#include "models/mdev.h"

#include <stdlib.h>
#include <string.h>

static void layer_vectors(bart_layer *y, size_t d, size_t F, int dec, md_vec *out, int cap, int *n) {
    const float **v[] = {&y->ln1_g, &y->ln1_b, &y->b_qkv, &y->b_o, &y->ln2_g, &y->ln2_b, &y->b_fc1,
                         &y->b_fc2, &y->lnx_g, &y->lnx_b, &y->b_xq, &y->b_xo};
    size_t len[] = {d, d, 3 * d, d, d, d, F, d, d, d, d, d};
    for (int i = 0; i < (dec ? 12 : 8); i++) md_vec_add(out, cap, n, v[i], len[i]);
}

/* Every f32 vector the device reads (NULL ones are skipped by md_upload). */
static int bart_vectors(bart_model *m, md_vec *out, int cap) {
    const bart_hparams *h = &m->hp;
    size_t d = (size_t)h->d, P = (size_t)h->n_positions;
    int n = 0;
    md_vec_add(out, cap, &n, &m->enc_pos, P * d);
    md_vec_add(out, cap, &n, &m->dec_pos, P * d);
    const float **v[] = {&m->enc_lne_g, &m->enc_lne_b, &m->dec_lne_g, &m->dec_lne_b,
                         &m->enc_ln_g,  &m->enc_ln_b,  &m->dec_ln_g,  &m->dec_ln_b};
    for (int i = 0; i < 8; i++) md_vec_add(out, cap, &n, v[i], d);
    for (int l = 0; l < h->n_enc_layer; l++) layer_vectors(&m->enc[l], d, (size_t)h->enc_ffn, 0, out, cap, &n);
    for (int l = 0; l < h->n_dec_layer; l++) layer_vectors(&m->dec[l], d, (size_t)h->dec_ffn, 1, out, cap, &n);
    md_vec_add(out, cap, &n, &m->b_xkv, (size_t)h->n_dec_layer * 2 * d);
    md_vec_add(out, cap, &n, &m->logits_bias, (size_t)h->n_vocab);
    return n;
}

static int list_mats(void *g, wl_mat *out, int cap) { return bart_matrices(g, out, cap); }
static int list_vecs(void *g, md_vec *out, int cap) { return bart_vectors(g, out, cap); }

MD_DEFINE_UPLOAD(bart_upload, bart_model, list_mats, list_vecs, bart_dev_free)

void bart_dev_free(bart_model *g) {
    if (!g) return;
    ed_dev_free(g->dev, g->dev_mem);
    free(g->enc);
    free(g->dec);
    free(g);
}
