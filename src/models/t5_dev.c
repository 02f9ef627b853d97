/* t5_dev.c - a T5 model's weights on a device (t5.h t5_upload; the block
 * and the conversions: models/mdev.h). The copy shares the host model's
 * tokenizer; its relative-bias tables stay the host's. */
#include "models/t5.h"
#include "base/err.h"
#include "base/mem.h"
#include "models/mdev.h"

#include <stdlib.h>
#include <string.h>

/* Every f32 vector the device reads (the RMSNorm weights). */
static int t5_vectors(t5_model *m, md_vec *out, int cap) {
    const t5_hparams *h = &m->hp;
    size_t d = (size_t)h->d;
    int n = 0;
    for (int l = 0; l < h->n_enc_layer; l++) {
        md_vec_add(out, cap, &n, &m->enc[l].ln1, d);
        md_vec_add(out, cap, &n, &m->enc[l].ln2, d);
    }
    md_vec_add(out, cap, &n, &m->enc_ln, d);
    for (int l = 0; l < h->n_dec_layer; l++) {
        md_vec_add(out, cap, &n, &m->dec[l].ln1, d);
        md_vec_add(out, cap, &n, &m->dec[l].lnx, d);
        md_vec_add(out, cap, &n, &m->dec[l].ln2, d);
    }
    md_vec_add(out, cap, &n, &m->dec_ln, d);
    return n;
}

static int list_mats(void *g, wl_mat *out, int cap) { return t5_matrices(g, out, cap); }
static int list_vecs(void *g, md_vec *out, int cap) { return t5_vectors(g, out, cap); }

MD_DEFINE_UPLOAD(t5_upload, t5_model, list_mats, list_vecs, t5_dev_free)

void t5_dev_free(t5_model *g) {
    if (!g) return;
    ed_dev_free(g->dev, g->dev_mem);
    free(g->enc);
    free(g->dec);
    free(g);
}
