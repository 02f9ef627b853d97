/* model.c - encdec_model: loading and describing a model. */
#include "api/api.h"
#include "base/err.h"
#include "kern/kern.h"

#include <pthread.h>
#include <stdio.h>

#include <stdlib.h>

encdec_status encdec_model_load(const char *path, encdec_model **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_model_load: out is NULL");
    *out = NULL;
    if (!path || !*path) return ed_fail(ENCDEC_ERR_ARG, "encdec_model_load: empty model path");
    encdec_model *m = calloc(1, sizeof *m);
    if (!m) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: model");
    encdec_status st = whisper_load(&m->w, path);
    if (st) {
        free(m);
        return st;
    }
    *out = m;
    return ENCDEC_OK;
}

void encdec_model_free(encdec_model *m) {
    if (!m) return;
    whisper_free(m->w);
    free(m);
}

void encdec_model_get_info(const encdec_model *m, encdec_model_info *info) {
    const whisper_model *w = m->w;
    const whisper_hparams *h = &w->hp;
    info->family = "whisper";
    info->format = w->format;
    info->n_mels = h->n_mels;
    info->n_audio_ctx = h->n_audio_ctx;
    info->n_text_ctx = h->n_text_ctx;
    info->d_model = h->d;
    info->n_enc_layer = h->n_enc_layer;
    info->n_dec_layer = h->n_dec_layer;
    info->n_head = h->n_head;
    info->n_vocab = h->n_vocab;
    info->multilingual = w->multilingual;
    info->weight_bytes = w->weight_bytes;
}

static char g_build_info[256];

static void build_info_init(void) {
    snprintf(g_build_info, sizeof g_build_info, "encdec %s, %s", ENCDEC_VERSION, k_blas_info());
}

const char *encdec_build_info(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_info_init);
    return g_build_info;
}
