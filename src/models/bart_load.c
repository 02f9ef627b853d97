/* bart_load.c - from a Hugging Face BART-family directory to a validated
 * bart_model.
 *
 * config.json gives the variant (model_type) and the hyper-parameters, with
 * transformers' defaults per config class; every tensor is then checked
 * against them (names under "model." as the *ForConditionalGeneration
 * classes save them, or without it as the bare models do):
 *   shared.weight [V, d]            (or encoder/decoder.embed_tokens.weight: Marian's
 *                                    separate ones, or a file that kept only an alias)
 *   {encoder,decoder}.embed_positions.weight [n_pos + 2, d]   learned positions
 *   {encoder,decoder}.layernorm_embedding.{weight,bias}       BART, mBART
 *   {encoder,decoder}.layers.N.self_attn.{q,k,v,out}_proj.{weight,bias}
 *   ....self_attn_layer_norm, ....final_layer_norm, ....fc1 [F, d], ....fc2 [d, F]
 *   decoder.layers.N.encoder_attn.{q,k,v,out}_proj, ....encoder_attn_layer_norm
 *   {encoder,decoder}.layer_norm.{weight,bias}                pre-norm variants
 *   lm_head.weight [V, d]           (absent when tied)
 *   final_logits_bias [1, V]        (optional: HF's own default is zeros)
 */
#include "models/bart.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const bart_variant bart_variants[] = {
    /* type      pre ln_emb positions             bias act     scale */
    {"bart",     0,  1,     BART_POS_LEARNED,     1,   "gelu", 0},
    {"mbart",    1,  1,     BART_POS_LEARNED,     1,   "gelu", 0},
    {"marian",   0,  0,     BART_POS_SIN_HALVES,  1,   "gelu", 0},
    {"m2m_100",  1,  0,     BART_POS_SIN_FAIRSEQ, 0,   "relu", 1},
    {"pegasus",  1,  0,     BART_POS_SIN_HALVES,  1,   "gelu", 0},
};

const bart_variant *bart_variant_of(const char *model_type) {
    for (size_t i = 0; i < sizeof bart_variants / sizeof bart_variants[0]; i++)
        if (!strcmp(bart_variants[i].model_type, model_type)) return &bart_variants[i];
    return NULL;
}

#define CFG "config.json"

static encdec_status parse_act(bart_model *m, const char *s) {
    snprintf(m->act_name, sizeof m->act_name, "%s", s);
    op_act *a = &m->hp.act;
    if (!strcmp(s, "gelu")) *a = OP_ACT_GELU;
    else if (!strcmp(s, "relu")) *a = OP_ACT_RELU;
    else if (!strcmp(s, "swish") || !strcmp(s, "silu")) *a = OP_ACT_SILU;
    else if (!strcmp(s, "gelu_new") || !strcmp(s, "gelu_pytorch_tanh") || !strcmp(s, "gelu_fast"))
        *a = OP_ACT_GELU_TANH;
    else
        return ed_fail(ENCDEC_ERR_CONFIG, CFG ": unknown activation_function \"%s\" (known: gelu, "
                       "gelu_new, relu, swish, silu)", s);
    return ENCDEC_OK;
}

/* The special ids: pad / eos / bos from the config (the variant's class
 * defaults otherwise), the decoder start (else bos, as generate() falls
 * back), the forced ones (null: none). */
static encdec_status read_ids(const cJSON *c, bart_hparams *h, const char *mt) {
    int marian = !strcmp(mt, "marian"), pegasus = !strcmp(mt, "pegasus");
    int dpad = marian ? 58100 : pegasus ? 0 : 1, deos = marian ? 0 : pegasus ? 1 : 2;
    int dbos = marian || pegasus ? -1 : 0;
    int dstart = marian ? 58100 : pegasus ? 0 : !strcmp(mt, "mbart") ? -1 : 2;
    int deos_forced = !strcmp(mt, "bart") || marian || pegasus ? deos : -1;
    long V = (1L << 21) - 1;
    struct { const char *key; int dflt; int *dst; } f[] = {
        {"pad_token_id", dpad, &h->pad}, {"eos_token_id", deos, &h->eos},
        {"bos_token_id", dbos, &h->bos}, {"decoder_start_token_id", dstart, &h->dec_start},
        {"forced_bos_token_id", -1, &h->forced_bos}, {"forced_eos_token_id", deos_forced, &h->forced_eos},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        encdec_status st = ed_json_int_opt(c, f[i].key, CFG, 0, V, f[i].dflt, f[i].dst);
        if (st) return st;
        /* explicitly null in the file: none, whatever the class default */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, f[i].key);
        if (v && cJSON_IsNull(v)) *f[i].dst = -1;
    }
    if (h->dec_start < 0) h->dec_start = h->bos;
    if (h->dec_start < 0)
        return ed_fail(ENCDEC_ERR_CONFIG, CFG ": no decoder_start_token_id nor bos_token_id");
    if (h->eos < 0 || h->pad < 0)
        return ed_fail(ENCDEC_ERR_CONFIG, CFG ": eos_token_id and pad_token_id must be set");
    int ids[] = {h->pad, h->eos, h->bos, h->dec_start, h->forced_bos, h->forced_eos};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i] >= h->n_vocab)
            return ed_fail(ENCDEC_ERR_CONFIG, CFG ": %s %d is not below the vocabulary size %d",
                           f[i].key, ids[i], h->n_vocab);
    return ENCDEC_OK;
}

/* config.json's object c (not freed here). */
static encdec_status read_config(bart_model *m, const cJSON *c) {
    encdec_status st = ENCDEC_OK;
    bart_hparams *h = &m->hp;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    if (!cJSON_IsString(mt) || !(m->var = bart_variant_of(mt->valuestring))) {
        st = ed_fail(ENCDEC_ERR_CONFIG, CFG ": model_type must be one of bart, mbart, marian, "
                     "m2m_100, pegasus");
        goto done;
    }
    struct { const char *key; long lo, hi; int dflt; int *dst; } f[] = {
        {"d_model", 1, 16384, 1024, &h->d},
        {"encoder_layers", 1, 256, 12, &h->n_enc_layer},
        {"decoder_layers", 1, 256, 12, &h->n_dec_layer},
        {"encoder_attention_heads", 1, 256, 16, &h->enc_heads},
        {"decoder_attention_heads", 1, 256, 16, &h->dec_heads},
        {"encoder_ffn_dim", 1, 262144, 4096, &h->enc_ffn},
        {"decoder_ffn_dim", 1, 262144, 4096, &h->dec_ffn},
        {"vocab_size", 2, 1 << 21, -1, &h->enc_vocab},
        {"max_position_embeddings", 1, 1 << 20, 1024, &h->n_positions},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0] && !st; i++) {
        if (f[i].dflt == -1) st = ed_json_int(c, f[i].key, CFG, f[i].lo, f[i].hi, f[i].dst);
        else st = ed_json_int_opt(c, f[i].key, CFG, f[i].lo, f[i].hi, f[i].dflt, f[i].dst);
    }
    int scale = 0;
    if (!st) st = ed_json_bool_opt(c, "scale_embedding", CFG, m->var->scale, &scale);
    if (!st) st = ed_json_bool_opt(c, "tie_word_embeddings", CFG, 1, &h->tied);
    h->shared = 1;
    h->n_vocab = h->enc_vocab;
    /* Marian's separate vocabularies (bart_ct2.c gives any CTranslate2 model's so) */
    if (!st) {
        st = ed_json_bool_opt(c, "share_encoder_decoder_embeddings", CFG, 1, &h->shared);
        if (!st) st = ed_json_int_opt(c, "decoder_vocab_size", CFG, 2, 1 << 21, h->enc_vocab, &h->n_vocab);
        if (!st && h->shared) h->n_vocab = h->enc_vocab;
    }
    if (st) goto done;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(c, "activation_function");
    if (act && !cJSON_IsNull(act) && !cJSON_IsString(act)) {
        st = ed_fail(ENCDEC_ERR_CONFIG, CFG ": activation_function must be a string");
        goto done;
    }
    if ((st = parse_act(m, cJSON_IsString(act) ? act->valuestring : m->var->act))) goto done;
    if (h->d % h->enc_heads || h->d % h->dec_heads) {
        st = ed_fail(ENCDEC_ERR_CONFIG, CFG ": d_model %d is not a multiple of the attention heads "
                     "(%d, %d)", h->d, h->enc_heads, h->dec_heads);
        goto done;
    }
    if (m->var->pos != BART_POS_LEARNED && h->d < 4) {
        st = ed_fail(ENCDEC_ERR_CONFIG, CFG ": d_model %d is too small for sinusoidal positions", h->d);
        goto done;
    }
    /* CTranslate2's alignment (bart_ct2.c carries its spec's; not Hugging Face keys) */
    int L = h->n_dec_layer;
    if ((st = ed_json_int_opt(c, "alignment_layer", CFG, -L, L - 1, -1, &h->align_layer))) goto done;
    if ((st = ed_json_int_opt(c, "alignment_heads", CFG, 0, h->dec_heads, 1, &h->align_heads))) goto done;
    if (h->align_layer < 0) h->align_layer += L;
    if (h->align_heads == 0) h->align_heads = h->dec_heads;
    /* CTranslate2's add_source_bos / add_source_eos (its Translator's, for token inputs) */
    if ((st = ed_json_bool_opt(c, "add_source_bos", CFG, 0, &h->src_bos)) ||
        (st = ed_json_bool_opt(c, "add_source_eos", CFG, 0, &h->src_eos)))
        goto done;
    h->eps = 1e-5f;
    h->emb_scale = scale ? sqrtf((float)h->d) : 1.0f;
    st = read_ids(c, h, m->var->model_type);
done:
    return st;
}

/* ---- weights ---- */

typedef struct {
    wload w;
    bart_model *m;
    const char *pfx;     /* "model." or "" */
} loader;

/* "<pfx><side>" into buf: the stack's prefix. */
static const char *stack(loader *L, char *buf, size_t cap, const char *side) {
    snprintf(buf, cap, "%s%s", L->pfx, side);
    return buf;
}

/* A projection "<pfx>.<name>.{weight,bias}" [N, K]. */
static k_w proj(loader *L, const char *pfx, const char *name, int64_t N, int64_t K, const float **b) {
    char w[240], bb[240];
    snprintf(w, sizeof w, "%s.%s.weight", pfx, name);
    snprintf(bb, sizeof bb, "%s.%s.bias", pfx, name);
    *b = wl_get1(&L->w, bb, N);
    return wl_getw2(&L->w, w, N, K);
}

static void norm(loader *L, const char *pfx, const char *name, int64_t d, const float **g,
                 const float **b) {
    char w[240], bb[240];
    snprintf(w, sizeof w, "%s.%s.weight", pfx, name);
    snprintf(bb, sizeof bb, "%s.%s.bias", pfx, name);
    *g = wl_get1(&L->w, w, d);
    *b = wl_get1(&L->w, bb, d);
}

/* Q|K|V of an attention block fused into [3d, d] with its bias [3d]. */
static void fused_qkv(loader *L, const char *pfx, int64_t d, k_w *w, const float **b) {
    k_w parts[3];
    const float *pb[3];
    size_t n[3] = {(size_t)(d * d), (size_t)(d * d), (size_t)(d * d)};
    const char *names[3] = {"q_proj", "k_proj", "v_proj"};
    for (int i = 0; i < 3; i++) parts[i] = proj(L, pfx, names[i], d, d, &pb[i]);
    *w = wl_fuse(&L->w, parts, n, 3, "fused QKV");
    float *fb = wl_alloc(&L->w, (size_t)(3 * d), "fused QKV bias");
    if (L->w.st) return;
    for (int i = 0; i < 3; i++) wl_put(fb + i * d, pb[i], (size_t)d);
    *b = fb;
}

/* One layer of side ("encoder" / "decoder") i; a decoder layer's cross K
 * and V (weights and biases) go to xkv[2i, 2i+1] and b_xkv at row i * 2d. */
static void load_layer(loader *L, const char *side, int i, bart_layer *y, k_w *xkv, size_t *nx,
                       float *b_xkv) {
    int64_t d = L->m->hp.d, dec = side[0] == 'd';
    int64_t F = dec ? L->m->hp.dec_ffn : L->m->hp.enc_ffn;
    char p[200], sa[220];
    snprintf(p, sizeof p, "%s%s.layers.%d", L->pfx, side, i);
    snprintf(sa, sizeof sa, "%s.self_attn", p);
    fused_qkv(L, sa, d, &y->w_qkv, &y->b_qkv);
    y->w_o = proj(L, sa, "out_proj", d, d, &y->b_o);
    norm(L, p, "self_attn_layer_norm", d, &y->ln1_g, &y->ln1_b);
    if (dec) {
        char xa[220];
        const float *bk, *bv;
        snprintf(xa, sizeof xa, "%s.encoder_attn", p);
        y->w_xq = proj(L, xa, "q_proj", d, d, &y->b_xq);
        xkv[2 * i] = proj(L, xa, "k_proj", d, d, &bk);
        xkv[2 * i + 1] = proj(L, xa, "v_proj", d, d, &bv);
        nx[2 * i] = nx[2 * i + 1] = (size_t)(d * d);
        y->w_xo = proj(L, xa, "out_proj", d, d, &y->b_xo);
        norm(L, p, "encoder_attn_layer_norm", d, &y->lnx_g, &y->lnx_b);
        if (!L->w.st) {
            wl_put(b_xkv + (size_t)i * 2 * d, bk, (size_t)d);
            wl_put(b_xkv + (size_t)i * 2 * d + d, bv, (size_t)d);
        }
    }
    y->w_fc1 = proj(L, p, "fc1", F, d, &y->b_fc1);
    y->w_fc2 = proj(L, p, "fc2", d, F, &y->b_fc2);
    norm(L, p, "final_layer_norm", d, &y->ln2_g, &y->ln2_b);
}

/* The sinusoidal tables, row p for position p. Halves (Marian, Pegasus):
 * angle p / 10000^(2i/d) in double, as numpy computes it, then rounded.
 * fairseq (M2M100): float32 throughout, as torch computes it, at position
 * p + pad + 1. */
static void sinusoid(float *t, int n, int d, bart_pos_kind kind, int pad) {
    if (kind == BART_POS_SIN_HALVES) {
        int sentinel = d / 2 + d % 2;
        for (int p = 0; p < n; p++)
            for (int j = 0; j < d; j++) {
                int i = j < sentinel ? j : j - sentinel;
                double a = (double)p / pow(10000.0, 2.0 * i / d);
                t[(size_t)p * d + j] = (float)(j < sentinel ? sin(a) : cos(a));
            }
        return;
    }
    int half = d / 2;
    float e = (float)(log(10000.0) / (half - 1));
    for (int p = 0; p < n; p++) {
        float *row = t + (size_t)p * d;
        float x = (float)(p + pad + 1);
        for (int i = 0; i < half; i++) {
            float a = x * expf((float)i * -e);
            row[i] = sinf(a);
            row[half + i] = cosf(a);
        }
        if (d % 2) row[d - 1] = 0.0f;
    }
}

/* The position table of one side: [n_positions, d], / emb_scale. */
static const float *positions(loader *L, const char *side) {
    const bart_hparams *h = &L->m->hp;
    int n = h->n_positions, d = h->d;
    char name[200];
    snprintf(name, sizeof name, "%s%s.embed_positions.weight", L->pfx, side);
    const float *src = NULL;
    bart_pos_kind kind = L->m->var->pos;
    char table[200];   /* a CTranslate2 model's rows as positions use them (bart_ct2.c) */
    snprintf(table, sizeof table, "%s%s.embed_positions.table", L->pfx, side);
    if (wtab_get(L->w.wt, table)) {
        src = wl_get2(&L->w, table, n, d);
        kind = BART_POS_SIN_HALVES;   /* no offset */
    } else if (kind == BART_POS_LEARNED) src = wl_get2(&L->w, name, (int64_t)n + 2, d);
    else if (kind == BART_POS_SIN_HALVES && wtab_get(L->w.wt, name)) src = wl_get2(&L->w, name, n, d);
    if (L->w.st) return NULL;
    if (src && kind == BART_POS_LEARNED && h->emb_scale == 1.0f) return src + 2 * (size_t)d;
    float *t = wl_alloc(&L->w, (size_t)n * d, "position table");
    if (!t) return NULL;
    if (src) wl_put(t, src + (kind == BART_POS_LEARNED ? 2 * (size_t)d : 0), (size_t)n * d);
    else sinusoid(t, n, d, kind, h->pad);
    if (h->emb_scale != 1.0f)
        for (size_t i = 0; i < (size_t)n * d; i++) t[i] /= h->emb_scale;
    return t;
}

/* The token embeddings: one shared matrix under any of its names, or
 * Marian's two. */
static void embeddings(loader *L) {
    bart_model *m = L->m;
    const bart_hparams *h = &m->hp;
    char sh[200], en[200], de[200];
    snprintf(sh, sizeof sh, "%sshared.weight", L->pfx);
    snprintf(en, sizeof en, "%sencoder.embed_tokens.weight", L->pfx);
    snprintf(de, sizeof de, "%sdecoder.embed_tokens.weight", L->pfx);
    if (!h->shared) {
        m->enc_emb = wl_getw2(&L->w, en, h->enc_vocab, h->d);
        m->dec_emb = wl_getw2(&L->w, de, h->n_vocab, h->d);
        return;
    }
    const char *name = wtab_get(L->w.wt, sh) ? sh : wtab_get(L->w.wt, en) ? en
                       : wtab_get(L->w.wt, de) ? de : sh;
    m->enc_emb = m->dec_emb = wl_getw2(&L->w, name, h->n_vocab, h->d);
}

static void load_weights(loader *L) {
    bart_model *m = L->m;
    const bart_hparams *h = &m->hp;
    int64_t d = h->d, V = h->n_vocab;
    char a[200], b[200];
    m->enc = calloc((size_t)h->n_enc_layer, sizeof *m->enc);
    m->dec = calloc((size_t)h->n_dec_layer, sizeof *m->dec);
    k_w *xkv = calloc((size_t)h->n_dec_layer * 2, sizeof *xkv);
    size_t *nx = calloc((size_t)h->n_dec_layer * 2, sizeof *nx);
    if (!m->enc || !m->dec || !xkv || !nx) L->w.st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: layer tables");
    float *b_xkv = wl_alloc(&L->w, (size_t)h->n_dec_layer * 2 * d, "stacked cross K|V bias");
    embeddings(L);
    m->enc_pos = positions(L, "encoder");
    m->dec_pos = positions(L, "decoder");
    if (m->var->ln_embedding) {
        norm(L, stack(L, a, sizeof a, "encoder"), "layernorm_embedding", d, &m->enc_lne_g, &m->enc_lne_b);
        norm(L, stack(L, b, sizeof b, "decoder"), "layernorm_embedding", d, &m->dec_lne_g, &m->dec_lne_b);
    }
    if (m->var->pre_norm) {
        norm(L, stack(L, a, sizeof a, "encoder"), "layer_norm", d, &m->enc_ln_g, &m->enc_ln_b);
        norm(L, stack(L, b, sizeof b, "decoder"), "layer_norm", d, &m->dec_ln_g, &m->dec_ln_b);
    }
    for (int i = 0; i < h->n_enc_layer && !L->w.st; i++) load_layer(L, "encoder", i, &m->enc[i], NULL, NULL, NULL);
    for (int i = 0; i < h->n_dec_layer && !L->w.st; i++) load_layer(L, "decoder", i, &m->dec[i], xkv, nx, b_xkv);
    if (!L->w.st) m->w_xkv = wl_fuse(&L->w, xkv, nx, 2 * h->n_dec_layer, "stacked cross K|V weights");
    m->b_xkv = b_xkv;
    free(xkv);
    free(nx);
    m->lm_head = h->tied ? m->dec_emb : wl_getw2(&L->w, "lm_head.weight", V, d);
    if (m->var->logits_bias && wtab_get(L->w.wt, "final_logits_bias")) {
        const float *fb = wl_get2(&L->w, "final_logits_bias", 1, V);
        m->logits_bias = fb;
    }
}

encdec_status bart_load(bart_model **out, const char *path) {
    *out = NULL;
    bart_model *m = calloc(1, sizeof *m);
    if (!m) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: model");
    m->wt = wtab_new();
    if (!m->wt) {
        free(m);
        return ENCDEC_ERR_NOMEM;
    }
    char dir[4096], p[4200];
    int hf = 0;
    const char *file = "";
    /* a CTranslate2 directory (model.bin, no safetensors) is read as the
     * checkpoint it was converted from (bart_ct2.c) */
    int ct2 = ed_is_dir(path) && !ed_is_file(ed_path_join(p, sizeof p, path, "model.safetensors")) &&
              !ed_is_file(ed_path_join(p, sizeof p, path, "model.safetensors.index.json"));
    encdec_status st = wl_open(m->wt, path, ct2, dir, sizeof dir, &hf, &file, NULL);
    cJSON *cfg = NULL;
    m->ct2 = !st && !hf;
    if (m->ct2) st = bart_ct2_adapt(m->wt, dir, &cfg);
    else if (!st) st = ed_json_load(ed_path_join(p, sizeof p, dir, CFG), &cfg);
    if (!st) st = read_config(m, cfg);
    cJSON_Delete(cfg);
    if (!st) {
        loader L = {{m->wt, file, ENCDEC_OK, 0}, m, "model."};
        if (!wtab_get(m->wt, "model.encoder.layers.0.fc1.weight") &&
            wtab_get(m->wt, "encoder.layers.0.fc1.weight"))
            L.pfx = "";
        load_weights(&L);
        m->weight_bytes = L.w.weight_bytes;
        st = L.w.st;
    }
    if (st) {
        bart_free(m);
        return st;
    }
    *out = m;
    return ENCDEC_OK;
}

void bart_free(bart_model *m) {
    if (!m) return;
    free(m->enc);
    free(m->dec);
    wtab_free(m->wt);
    free(m);
}

encdec_status bart_screen(bart_model *m, size_t min_elems) {
    encdec_status st = md_screen_build(m->wt, m->lm_head, m->hp.n_vocab, m->hp.d, min_elems, &m->screen);
    m->weight_bytes += md_screen_bytes(&m->screen);
    return st;
}

static void layer_mats(wl_mat *out, int cap, int *n, bart_layer *y, int d, int F, int dec) {
    int fl = dec ? WL_DECODE_ONLY : 0;
    wl_mat_add(out, cap, n, &y->w_qkv, 3 * d, d, fl);
    wl_mat_add(out, cap, n, &y->w_o, d, d, fl);
    if (dec) {
        wl_mat_add(out, cap, n, &y->w_xq, d, d, fl);
        wl_mat_add(out, cap, n, &y->w_xo, d, d, fl);
    }
    wl_mat_add(out, cap, n, &y->w_fc1, F, d, fl);
    wl_mat_add(out, cap, n, &y->w_fc2, d, F, fl);
}

int bart_matrices(bart_model *m, wl_mat *out, int cap) {
    const bart_hparams *h = &m->hp;
    int d = h->d, n = 0;
    /* both embeddings even when they are one matrix: a conversion then
     * updates both (the second is seen as a view of the first), and the
     * memory it frees is used by neither */
    wl_mat_add(out, cap, &n, &m->enc_emb, h->enc_vocab, d, WL_DECODE_ONLY);
    wl_mat_add(out, cap, &n, &m->dec_emb, h->n_vocab, d, WL_DECODE_ONLY);
    for (int l = 0; l < h->n_enc_layer; l++) layer_mats(out, cap, &n, &m->enc[l], d, h->enc_ffn, 0);
    for (int l = 0; l < h->n_dec_layer; l++) layer_mats(out, cap, &n, &m->dec[l], d, h->dec_ffn, 1);
    wl_mat_add(out, cap, &n, &m->w_xkv, h->n_dec_layer * 2 * d, d, 0);
    wl_mat_add(out, cap, &n, &m->lm_head, h->n_vocab, d, WL_DECODE_ONLY);
    return n;
}
