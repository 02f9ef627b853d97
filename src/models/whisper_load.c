/* whisper_load.c - from a model directory to a validated whisper_model.
 *
 * Two layouts map onto one set of weights:
 *   Hugging Face:  config.json (+ generation_config.json), model.safetensors
 *                  or its sharded index; names model.encoder.layers.N.self_attn.q_proj.weight ...
 *   CTranslate2:   model.bin (+ config.json with suppress_ids); names
 *                  encoder/layer_N/self_attention/linear_0/weight ..., where
 *                  self-attention Q|K|V and cross-attention K|V come fused.
 * Hyper-parameters come from config.json (HF) or from the tensor shapes and
 * the stored num_heads (CTranslate2); every tensor is then checked against
 * them before anything runs. Loading errors stop at the first problem and
 * name the file, the tensor and what was expected.
 */
#include "models/whisper.h"
#include "models/whisper_cfg.h"
#include "models/wload.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    wload w;                /* tensors, sticky status */
    whisper_model *m;
    int hf;                 /* 1: HF names, 0: CTranslate2 names */
} loader;

#define get1(L, n, a) wl_get1(&(L)->w, n, a)
#define get2(L, n, a, b) wl_get2(&(L)->w, n, a, b)
#define get3(L, n, a, b, c) wl_get3(&(L)->w, n, a, b, c)
#define getw(L, n, a, b) wl_getw2(&(L)->w, n, a, b)
#define alloc_w(L, n, what) wl_alloc(&(L)->w, n, what)
#define put wl_put

/* HF stores Q, K, V separately (K without bias): fuse them into [3d, d],
 * in their stored precision. */
static void hf_fused_qkv(loader *L, const char *pfx, k_w *w, const float **b) {
    int64_t d = L->m->hp.d;
    char nm[160];
    k_w parts[3];
    size_t n[3] = {(size_t)(d * d), (size_t)(d * d), (size_t)(d * d)};
    const float *bq, *bv;
    snprintf(nm, sizeof nm, "%s.q_proj.weight", pfx); parts[0] = getw(L, nm, d, d);
    snprintf(nm, sizeof nm, "%s.k_proj.weight", pfx); parts[1] = getw(L, nm, d, d);
    snprintf(nm, sizeof nm, "%s.v_proj.weight", pfx); parts[2] = getw(L, nm, d, d);
    snprintf(nm, sizeof nm, "%s.q_proj.bias", pfx); bq = get1(L, nm, d);
    snprintf(nm, sizeof nm, "%s.v_proj.bias", pfx); bv = get1(L, nm, d);
    *w = wl_fuse(&L->w, parts, n, 3, "fused QKV");
    float *fb = alloc_w(L, (size_t)3 * d, "fused QKV bias");
    if (L->w.st) return;
    put(fb, bq, d);
    put(fb + d, NULL, d);
    put(fb + 2 * d, bv, d);
    *b = fb;
}

/* A convolution weight [d, C, 3] (PyTorch's [out, in, tap]) reordered
 * tap-major, [d, 3, C], into memory of the table: output t's window is then
 * 3 consecutive input frames of C channels (encode's windows, read in place). */
static k_w conv_weight(loader *L, const char *name, int64_t d, int64_t C) {
    const float *w = get3(L, name, d, C, 3);
    float *r = alloc_w(L, (size_t)(d * 3 * C), "convolution weights");
    if (L->w.st) return (k_w){NULL, K_F32, 0};
    for (int64_t o = 0; o < d; o++)
        for (int64_t c = 0; c < C; c++)
            for (int j = 0; j < 3; j++) r[(o * 3 + j) * C + c] = w[(o * C + c) * 3 + j];
    wtab_drop(L->w.wt, w, (size_t)(d * C * 3) * sizeof(float));
    return (k_w){r, K_F32, 0};
}

static void load_enc_layer(loader *L, int i, whisper_enc_layer *y) {
    int64_t d = L->m->hp.d, F = L->m->hp.ffn;
    char p[96], nm[160];
#define N(fmt) (snprintf(nm, sizeof nm, "%s" fmt, p), nm)
    if (L->hf) {
        snprintf(p, sizeof p, "model.encoder.layers.%d", i);
        y->ln1_g = get1(L, N(".self_attn_layer_norm.weight"), d);
        y->ln1_b = get1(L, N(".self_attn_layer_norm.bias"), d);
        hf_fused_qkv(L, N(".self_attn"), &y->w_qkv, &y->b_qkv);
        y->w_o = getw(L, N(".self_attn.out_proj.weight"), d, d);
        y->b_o = get1(L, N(".self_attn.out_proj.bias"), d);
        y->ln2_g = get1(L, N(".final_layer_norm.weight"), d);
        y->ln2_b = get1(L, N(".final_layer_norm.bias"), d);
        y->w_fc1 = getw(L, N(".fc1.weight"), F, d);
        y->b_fc1 = get1(L, N(".fc1.bias"), F);
        y->w_fc2 = getw(L, N(".fc2.weight"), d, F);
        y->b_fc2 = get1(L, N(".fc2.bias"), d);
    } else {
        snprintf(p, sizeof p, "encoder/layer_%d", i);
        y->ln1_g = get1(L, N("/self_attention/layer_norm/gamma"), d);
        y->ln1_b = get1(L, N("/self_attention/layer_norm/beta"), d);
        y->w_qkv = getw(L, N("/self_attention/linear_0/weight"), 3 * d, d);
        y->b_qkv = get1(L, N("/self_attention/linear_0/bias"), 3 * d);
        y->w_o = getw(L, N("/self_attention/linear_1/weight"), d, d);
        y->b_o = get1(L, N("/self_attention/linear_1/bias"), d);
        y->ln2_g = get1(L, N("/ffn/layer_norm/gamma"), d);
        y->ln2_b = get1(L, N("/ffn/layer_norm/beta"), d);
        y->w_fc1 = getw(L, N("/ffn/linear_0/weight"), F, d);
        y->b_fc1 = get1(L, N("/ffn/linear_0/bias"), F);
        y->w_fc2 = getw(L, N("/ffn/linear_1/weight"), d, F);
        y->b_fc2 = get1(L, N("/ffn/linear_1/bias"), d);
    }
}

/* Decoder layer i; its cross K|V weights go to xkv[2i, 2i+1] (n elements
 * each) for stacking, its biases to b_xkv at row i * 2d. */
static void load_dec_layer(loader *L, int i, whisper_dec_layer *y, k_w *xkv, size_t *n, float *b_xkv) {
    int64_t d = L->m->hp.d, F = L->m->hp.ffn;
    char p[96], nm[160];
    const float *bk = NULL, *bv;
    if (L->hf) {
        snprintf(p, sizeof p, "model.decoder.layers.%d", i);
        y->ln1_g = get1(L, N(".self_attn_layer_norm.weight"), d);
        y->ln1_b = get1(L, N(".self_attn_layer_norm.bias"), d);
        hf_fused_qkv(L, N(".self_attn"), &y->w_qkv, &y->b_qkv);
        y->w_o = getw(L, N(".self_attn.out_proj.weight"), d, d);
        y->b_o = get1(L, N(".self_attn.out_proj.bias"), d);
        y->lnx_g = get1(L, N(".encoder_attn_layer_norm.weight"), d);
        y->lnx_b = get1(L, N(".encoder_attn_layer_norm.bias"), d);
        y->w_xq = getw(L, N(".encoder_attn.q_proj.weight"), d, d);
        y->b_xq = get1(L, N(".encoder_attn.q_proj.bias"), d);
        xkv[2 * i] = getw(L, N(".encoder_attn.k_proj.weight"), d, d);
        xkv[2 * i + 1] = getw(L, N(".encoder_attn.v_proj.weight"), d, d);
        n[2 * i] = n[2 * i + 1] = (size_t)(d * d);
        bv = get1(L, N(".encoder_attn.v_proj.bias"), d);
        y->w_xo = getw(L, N(".encoder_attn.out_proj.weight"), d, d);
        y->b_xo = get1(L, N(".encoder_attn.out_proj.bias"), d);
        y->ln2_g = get1(L, N(".final_layer_norm.weight"), d);
        y->ln2_b = get1(L, N(".final_layer_norm.bias"), d);
        y->w_fc1 = getw(L, N(".fc1.weight"), F, d);
        y->b_fc1 = get1(L, N(".fc1.bias"), F);
        y->w_fc2 = getw(L, N(".fc2.weight"), d, F);
        y->b_fc2 = get1(L, N(".fc2.bias"), d);
    } else {
        snprintf(p, sizeof p, "decoder/layer_%d", i);
        y->ln1_g = get1(L, N("/self_attention/layer_norm/gamma"), d);
        y->ln1_b = get1(L, N("/self_attention/layer_norm/beta"), d);
        y->w_qkv = getw(L, N("/self_attention/linear_0/weight"), 3 * d, d);
        y->b_qkv = get1(L, N("/self_attention/linear_0/bias"), 3 * d);
        y->w_o = getw(L, N("/self_attention/linear_1/weight"), d, d);
        y->b_o = get1(L, N("/self_attention/linear_1/bias"), d);
        y->lnx_g = get1(L, N("/attention/layer_norm/gamma"), d);
        y->lnx_b = get1(L, N("/attention/layer_norm/beta"), d);
        y->w_xq = getw(L, N("/attention/linear_0/weight"), d, d);
        y->b_xq = get1(L, N("/attention/linear_0/bias"), d);
        xkv[2 * i] = getw(L, N("/attention/linear_1/weight"), 2 * d, d);   /* K|V fused */
        n[2 * i] = (size_t)(2 * d * d);
        n[2 * i + 1] = 0;
        const float *bkv = get1(L, N("/attention/linear_1/bias"), 2 * d);
        bk = bkv;
        bv = bkv ? bkv + d : NULL;
        y->w_xo = getw(L, N("/attention/linear_2/weight"), d, d);
        y->b_xo = get1(L, N("/attention/linear_2/bias"), d);
        y->ln2_g = get1(L, N("/ffn/layer_norm/gamma"), d);
        y->ln2_b = get1(L, N("/ffn/layer_norm/beta"), d);
        y->w_fc1 = getw(L, N("/ffn/linear_0/weight"), F, d);
        y->b_fc1 = get1(L, N("/ffn/linear_0/bias"), F);
        y->w_fc2 = getw(L, N("/ffn/linear_1/weight"), d, F);
        y->b_fc2 = get1(L, N("/ffn/linear_1/bias"), d);
    }
#undef N
    if (L->w.st) return;
    size_t row = (size_t)i * 2 * d;
    put(b_xkv + row, bk, d);
    put(b_xkv + row + d, bv, d);
}

static void load_weights(loader *L) {
    whisper_model *m = L->m;
    const whisper_hparams *h = &m->hp;
    int64_t d = h->d;
    m->enc = calloc((size_t)h->n_enc_layer, sizeof *m->enc);
    m->dec = calloc((size_t)h->n_dec_layer, sizeof *m->dec);
    if (!m->enc || !m->dec) {
        L->w.st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: layer tables");
        return;
    }
    const char *hf[] = {"model.encoder.conv1.weight", "model.encoder.conv1.bias",
                        "model.encoder.conv2.weight", "model.encoder.conv2.bias",
                        "model.encoder.embed_positions.weight", "model.encoder.layer_norm.weight",
                        "model.encoder.layer_norm.bias", "model.decoder.embed_tokens.weight",
                        "model.decoder.embed_positions.weight", "model.decoder.layer_norm.weight",
                        "model.decoder.layer_norm.bias"};
    const char *ct[] = {"encoder/conv1/weight", "encoder/conv1/bias", "encoder/conv2/weight",
                        "encoder/conv2/bias", "encoder/position_encodings/encodings",
                        "encoder/layer_norm/gamma", "encoder/layer_norm/beta",
                        "decoder/embeddings/weight", "decoder/position_encodings/encodings",
                        "decoder/layer_norm/gamma", "decoder/layer_norm/beta"};
    const char **nm = L->hf ? hf : ct;
    m->conv1_w = conv_weight(L, nm[0], d, h->n_mels);
    m->conv1_b = get1(L, nm[1], d);
    m->conv2_w = conv_weight(L, nm[2], d, d);
    m->conv2_b = get1(L, nm[3], d);
    m->enc_pos = get2(L, nm[4], h->n_audio_ctx, d);
    m->enc_ln_g = get1(L, nm[5], d);
    m->enc_ln_b = get1(L, nm[6], d);
    m->tok_emb = getw(L, nm[7], h->n_vocab, d);
    m->dec_pos = get2(L, nm[8], h->n_text_ctx, d);
    m->dec_ln_g = get1(L, nm[9], d);
    m->dec_ln_b = get1(L, nm[10], d);
    for (int i = 0; i < h->n_enc_layer && !L->w.st; i++) load_enc_layer(L, i, &m->enc[i]);
    size_t rows = (size_t)h->n_dec_layer * 2 * d;
    float *b_xkv = alloc_w(L, rows, "stacked cross K|V bias");
    k_w *xkv = calloc((size_t)h->n_dec_layer * 2, sizeof *xkv);
    size_t *n = calloc((size_t)h->n_dec_layer * 2, sizeof *n);
    if (!xkv || !n) L->w.st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: layer tables");
    for (int i = 0; i < h->n_dec_layer && !L->w.st; i++)
        load_dec_layer(L, i, &m->dec[i], xkv, n, b_xkv);
    m->w_xkv = wl_fuse(&L->w, xkv, n, 2 * h->n_dec_layer, "stacked cross K|V weights");
    m->b_xkv = b_xkv;
    free(xkv);
    free(n);
    /* The output projection is the token embedding (Whisper ties them; HF's
     * proj_out.weight, when stored, is the same tensor and is not read). */
}

encdec_status whisper_load(whisper_model **out, const char *path) {
    *out = NULL;
    whisper_model *m = calloc(1, sizeof *m);
    if (!m) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: model");
    m->wt = wtab_new();
    if (!m->wt) {
        free(m);
        return ENCDEC_ERR_NOMEM;
    }
    char dir[4096];
    int hf = 0;
    const char *file = "";
    ggml_whisper gg;
    encdec_status st = wl_open(m->wt, path, 1, dir, sizeof dir, &hf, &file, &gg);
    if (!st && hf == WL_GGML) {   /* one file: hyper-parameters, tokenizer and weights */
        m->format = "ggml";
        st = whisper_cfg_ggml(m, &gg, path);
        if (!st) st = whisper_cfg_tokens(m, path, 0);
    } else if (!st) {
        m->format = hf ? "safetensors" : "ctranslate2";
        st = hf ? whisper_cfg_hf(m, dir) : whisper_cfg_ct2(m, dir);
        if (!st) st = bpe_load_dir(&m->tok, dir);
        if (!st) st = whisper_cfg_tokens(m, dir, hf);
    }
    if (!st) st = whisper_cfg_rules_default(m);
    if (!st) st = whisper_cfg_align_default(m);
    if (!st) {
        loader L = {{m->wt, file, ENCDEC_OK, 0}, m, hf};
        load_weights(&L);
        m->weight_bytes = L.w.weight_bytes;
        st = L.w.st;
    }
    if (st) {
        whisper_free(m);
        return st;
    }
    *out = m;
    return ENCDEC_OK;
}

void whisper_free(whisper_model *m) {
    if (!m) return;
    free(m->enc);
    free(m->dec);
    free(m->suppress);
    free(m->begin_suppress);
    free(m->align_heads);
    bpe_free(m->tok);
    wtab_free(m->wt);
    free(m);
}

int whisper_matrices(whisper_model *m, wl_mat *out, int cap) {
    const whisper_hparams *h = &m->hp;
    int d = h->d, F = h->ffn, n = 0;
    wl_mat_add(out, cap, &n, &m->conv1_w, d, 3 * h->n_mels, WL_NOT_INT8);
    wl_mat_add(out, cap, &n, &m->conv2_w, d, 3 * d, WL_NOT_INT8);
    for (int l = 0; l < h->n_enc_layer; l++) {
        whisper_enc_layer *y = &m->enc[l];
        wl_mat_add(out, cap, &n, &y->w_qkv, 3 * d, d, 0);
        wl_mat_add(out, cap, &n, &y->w_o, d, d, 0);
        wl_mat_add(out, cap, &n, &y->w_fc1, F, d, 0);
        wl_mat_add(out, cap, &n, &y->w_fc2, d, F, 0);
    }
    for (int l = 0; l < h->n_dec_layer; l++) {
        whisper_dec_layer *y = &m->dec[l];
        wl_mat_add(out, cap, &n, &y->w_qkv, 3 * d, d, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_o, d, d, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_xq, d, d, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_xo, d, d, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_fc1, F, d, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_fc2, d, F, WL_DECODE_ONLY);
    }
    wl_mat_add(out, cap, &n, &m->w_xkv, h->n_dec_layer * 2 * d, d, 0);
    wl_mat_add(out, cap, &n, &m->tok_emb, h->n_vocab, d, WL_DECODE_ONLY);
    return n;
}
