/* t5_load.c - from a Hugging Face T5-family directory to a validated t5_model.
 *
 * config.json gives the hyper-parameters (HF T5Config / MT5Config /
 * UMT5Config names and defaults); every tensor is then checked against them:
 *   shared.weight [V, d]                          (encoder/decoder embed_tokens: the same)
 *   {encoder,decoder}.block.N.layer.0.SelfAttention.{q,k,v}.weight [I, d], .o.weight [d, I]
 *   ....SelfAttention.relative_attention_bias.weight [buckets, H]   block 0 (umT5: every block)
 *   decoder.block.N.layer.1.EncDecAttention.{q,k,v,o}.weight
 *   ....layer.{1|2}.DenseReluDense.{wi,wo}.weight, or {wi_0,wi_1,wo} when gated
 *   ....layer.M.layer_norm.weight [d], {encoder,decoder}.final_layer_norm.weight
 *   lm_head.weight [V, d]                         (absent when tied)
 * Limits are generous (d_model up to 16384, 256 layers, 1M vocabulary) so
 * that absurd configurations fail here with ENCDEC_ERR_CONFIG, not as huge
 * allocations later.
 */
#include "models/t5.h"
#include "models/wload.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static encdec_status cfg_bool(const cJSON *c, const char *key, int dflt, int *out) {
    return ed_json_bool_opt(c, key, "config.json", dflt, out);
}

/* An optional integer: dflt when absent. */
static encdec_status cfg_int(const cJSON *c, const char *key, long lo, long hi, int dflt, int *out) {
    return ed_json_int_opt(c, key, "config.json", lo, hi, dflt, out);
}

/* feed_forward_proj: "ACT" or "gated-ACT" (HF's rule); gated-gelu means
 * the tanh approximation (HF maps it to gelu_new), plain gelu the exact one. */
static encdec_status parse_ffn(t5_model *m, const char *s) {
    snprintf(m->ffn_name, sizeof m->ffn_name, "%s", s);
    const char *act = s;
    m->hp.gated = strncmp(s, "gated-", 6) == 0;
    if (m->hp.gated) act = s + 6;
    if (!strcmp(act, "relu")) m->hp.act = OP_ACT_RELU;
    else if (!strcmp(act, "gelu")) m->hp.act = m->hp.gated ? OP_ACT_GELU_TANH : OP_ACT_GELU;
    else if (!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh")) m->hp.act = OP_ACT_GELU_TANH;
    else if (!strcmp(act, "silu") || !strcmp(act, "swish")) m->hp.act = OP_ACT_SILU;
    else
        return ed_fail(ENCDEC_ERR_CONFIG, "config.json: unknown feed_forward_proj \"%s\" "
                       "(known: relu, gelu, gelu_new, silu, and gated-* of each)", s);
    return ENCDEC_OK;
}

static encdec_status read_config(t5_model *m, const char *dir) {
    char path[4096];
    cJSON *c;
    encdec_status st = ed_json_load(ed_path_join(path, sizeof path, dir, "config.json"), &c);
    if (st) return st;
    t5_hparams *h = &m->hp;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    const cJSON *ff = cJSON_GetObjectItemCaseSensitive(c, "feed_forward_proj");
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(c, "layer_norm_epsilon");
    if (!cJSON_IsString(mt) || (strcmp(mt->valuestring, "t5") && strcmp(mt->valuestring, "mt5") &&
                                strcmp(mt->valuestring, "umt5"))) {
        st = ed_fail(ENCDEC_ERR_CONFIG, "config.json: model_type must be \"t5\", \"mt5\" or \"umt5\"");
        goto done;
    }
    snprintf(m->model_type, sizeof m->model_type, "%s", mt->valuestring);
    int is_t5 = !strcmp(m->model_type, "t5");
    h->bias_every_layer = !strcmp(m->model_type, "umt5");
    struct { const char *key; long lo, hi; int dflt; int *dst; } f[] = {
        {"d_model", 1, 16384, -1, &h->d},
        {"d_kv", 1, 1024, -1, &h->d_kv},
        {"num_heads", 1, 256, -1, &h->n_head},
        {"d_ff", 1, 262144, -1, &h->d_ff},
        {"num_layers", 1, 256, -1, &h->n_enc_layer},
        {"num_decoder_layers", 1, 256, -2, &h->n_dec_layer},
        {"vocab_size", 2, 1 << 20, -1, &h->n_vocab},
        {"relative_attention_num_buckets", 4, 4096, 32, &h->n_buckets},
        {"relative_attention_max_distance", 2, 1 << 20, 128, &h->max_distance},
        {"n_positions", 1, 1 << 20, 512, &h->n_positions},
        {"pad_token_id", 0, (1 << 20) - 1, 0, &h->pad},
        {"eos_token_id", 0, (1 << 20) - 1, 1, &h->eos},
        {"decoder_start_token_id", 0, (1 << 20) - 1, -3, &h->dec_start},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0] && !st; i++) {
        if (f[i].dflt == -1) st = ed_json_int(c, f[i].key, "config.json", f[i].lo, f[i].hi, f[i].dst);
        else st = cfg_int(c, f[i].key, f[i].lo, f[i].hi, f[i].dflt, f[i].dst);
    }
    if (st) goto done;
    if (h->n_dec_layer == -2) h->n_dec_layer = h->n_enc_layer;    /* HF: defaults to num_layers */
    if (h->dec_start == -3) h->dec_start = h->pad;                 /* HF T5 starts with pad */
    if ((st = cfg_bool(c, "tie_word_embeddings", is_t5, &h->tied))) goto done;
    if ((st = parse_ffn(m, cJSON_IsString(ff) ? ff->valuestring : "relu"))) goto done;
    h->eps = 1e-6f;
    if (eps && !cJSON_IsNull(eps)) {
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0 && eps->valuedouble < 1)) {
            st = ed_fail(ENCDEC_ERR_CONFIG, "config.json: layer_norm_epsilon must be in (0, 1)");
            goto done;
        }
        h->eps = (float)eps->valuedouble;
    }
    if (h->max_distance <= h->n_buckets / 2) {
        st = ed_fail(ENCDEC_ERR_CONFIG, "config.json: relative_attention_max_distance %d must exceed "
                     "half of relative_attention_num_buckets (%d)", h->max_distance, h->n_buckets);
        goto done;
    }
    h->inner = h->n_head * h->d_kv;
    if (h->inner > 65536) {
        st = ed_fail(ENCDEC_ERR_CONFIG, "config.json: num_heads x d_kv = %d is too large", h->inner);
        goto done;
    }
    if (h->pad >= h->n_vocab || h->eos >= h->n_vocab || h->dec_start >= h->n_vocab)
        st = ed_fail(ENCDEC_ERR_CONFIG, "config.json: pad/eos/decoder start ids %d/%d/%d must be "
                     "below vocab_size %d", h->pad, h->eos, h->dec_start, h->n_vocab);
done:
    cJSON_Delete(c);
    return st;
}

/* Q|K|V of one attention block fused into [3I, d], in their stored precision. */
static k_w fused_qkv(wload *L, const char *pfx, int64_t I, int64_t d) {
    char nm[200];
    k_w w[3];
    size_t n[3] = {(size_t)(I * d), (size_t)(I * d), (size_t)(I * d)};
    const char *x = "qkv";
    for (int i = 0; i < 3; i++) {
        snprintf(nm, sizeof nm, "%s.%c.weight", pfx, x[i]);
        w[i] = wl_getw2(L, nm, I, d);
    }
    return wl_fuse(L, w, n, 3, "fused QKV");
}

/* The feed-forward block at pfx ("....layer.1.DenseReluDense"). */
static void load_ffn(wload *L, const t5_model *m, const char *pfx, k_w *wi, k_w *wo) {
    int64_t d = m->hp.d, F = m->hp.d_ff;
    char nm[200];
    if (m->hp.gated) {
        k_w w[2];
        size_t n[2] = {(size_t)(F * d), (size_t)(F * d)};
        snprintf(nm, sizeof nm, "%s.wi_0.weight", pfx);
        w[0] = wl_getw2(L, nm, F, d);
        snprintf(nm, sizeof nm, "%s.wi_1.weight", pfx);
        w[1] = wl_getw2(L, nm, F, d);
        *wi = wl_fuse(L, w, n, 2, "fused gated input projection");
    } else {
        snprintf(nm, sizeof nm, "%s.wi.weight", pfx);
        *wi = wl_getw2(L, nm, F, d);
    }
    snprintf(nm, sizeof nm, "%s.wo.weight", pfx);
    *wo = wl_getw2(L, nm, d, F);
}

static const float *rel_bias(wload *L, const t5_model *m, const char *side, int i) {
    if (i > 0 && !m->hp.bias_every_layer) return NULL;
    char nm[200];
    snprintf(nm, sizeof nm, "%s.block.%d.layer.0.SelfAttention.relative_attention_bias.weight", side, i);
    return wl_get2(L, nm, m->hp.n_buckets, m->hp.n_head);
}

static void load_weights(wload *L, t5_model *m) {
    const t5_hparams *h = &m->hp;
    int64_t d = h->d, I = h->inner, V = h->n_vocab;
    char p[160], nm[200];
    m->enc = calloc((size_t)h->n_enc_layer, sizeof *m->enc);
    m->dec = calloc((size_t)h->n_dec_layer, sizeof *m->dec);
    if (!m->enc || !m->dec) {
        L->st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: layer tables");
        return;
    }
#define N(fmt) (snprintf(nm, sizeof nm, "%s" fmt, p), nm)
    /* shared.weight, or (some conversions keep only one of the tied names)
     * one of its aliases */
    const char *emb = "shared.weight";
    if (!wtab_get(m->wt, emb) && wtab_get(m->wt, "encoder.embed_tokens.weight"))
        emb = "encoder.embed_tokens.weight";
    else if (!wtab_get(m->wt, emb) && wtab_get(m->wt, "decoder.embed_tokens.weight"))
        emb = "decoder.embed_tokens.weight";
    m->emb = wl_getw2(L, emb, V, d);
    for (int i = 0; i < h->n_enc_layer && !L->st; i++) {
        t5_enc_layer *y = &m->enc[i];
        snprintf(p, sizeof p, "encoder.block.%d.layer", i);
        y->ln1 = wl_get1(L, N(".0.layer_norm.weight"), d);
        y->w_qkv = fused_qkv(L, N(".0.SelfAttention"), I, d);
        y->w_o = wl_getw2(L, N(".0.SelfAttention.o.weight"), d, I);
        y->rel_bias = rel_bias(L, m, "encoder", i);
        y->ln2 = wl_get1(L, N(".1.layer_norm.weight"), d);
        load_ffn(L, m, N(".1.DenseReluDense"), &y->w_wi, &y->w_wo);
    }
    m->enc_ln = wl_get1(L, "encoder.final_layer_norm.weight", d);
    k_w *xkv = calloc((size_t)h->n_dec_layer * 2, sizeof *xkv);
    size_t *nx = calloc((size_t)h->n_dec_layer * 2, sizeof *nx);
    if (!xkv || !nx) L->st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: layer tables");
    for (int i = 0; i < h->n_dec_layer && !L->st; i++) {
        t5_dec_layer *y = &m->dec[i];
        snprintf(p, sizeof p, "decoder.block.%d.layer", i);
        y->ln1 = wl_get1(L, N(".0.layer_norm.weight"), d);
        y->w_qkv = fused_qkv(L, N(".0.SelfAttention"), I, d);
        y->w_o = wl_getw2(L, N(".0.SelfAttention.o.weight"), d, I);
        y->rel_bias = rel_bias(L, m, "decoder", i);
        y->lnx = wl_get1(L, N(".1.layer_norm.weight"), d);
        y->w_xq = wl_getw2(L, N(".1.EncDecAttention.q.weight"), I, d);
        xkv[2 * i] = wl_getw2(L, N(".1.EncDecAttention.k.weight"), I, d);
        xkv[2 * i + 1] = wl_getw2(L, N(".1.EncDecAttention.v.weight"), I, d);
        nx[2 * i] = nx[2 * i + 1] = (size_t)(I * d);
        y->w_xo = wl_getw2(L, N(".1.EncDecAttention.o.weight"), d, I);
        y->ln2 = wl_get1(L, N(".2.layer_norm.weight"), d);
        load_ffn(L, m, N(".2.DenseReluDense"), &y->w_wi, &y->w_wo);
    }
#undef N
    if (xkv) m->w_xkv = wl_fuse(L, xkv, nx, 2 * h->n_dec_layer, "stacked cross K|V weights");
    free(xkv);
    free(nx);
    m->dec_ln = wl_get1(L, "decoder.final_layer_norm.weight", d);
    m->lm_head = h->tied ? m->emb : wl_getw2(L, "lm_head.weight", V, d);
}

/* The tokenizer must fit the embedding: every id it can produce is a row. */
static encdec_status check_tokenizer(const t5_model *m) {
    int nv = spm_n_vocab(m->tok);
    if (nv > m->hp.n_vocab)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "the tokenizer has %d tokens but the model's "
                       "vocab_size is %d: tokenizer and weights do not belong together",
                       nv, m->hp.n_vocab);
    if (spm_eos(m->tok) != m->hp.eos)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "the tokenizer's </s> is id %d but config.json's "
                       "eos_token_id is %d", spm_eos(m->tok), m->hp.eos);
    return ENCDEC_OK;
}

encdec_status t5_load(t5_model **out, const char *path) {
    *out = NULL;
    t5_model *m = calloc(1, sizeof *m);
    if (!m) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: model");
    m->wt = wtab_new();
    if (!m->wt) {
        free(m);
        return ENCDEC_ERR_NOMEM;
    }
    char dir[4096];
    int hf = 0;
    const char *file = "";
    encdec_status st = wl_open(m->wt, path, 0, dir, sizeof dir, &hf, &file, NULL);
    if (!st) st = read_config(m, dir);
    if (!st) st = spm_load_dir(&m->tok, dir);
    if (!st) st = check_tokenizer(m);
    if (!st) {
        wload L = {m->wt, file, ENCDEC_OK, 0};
        load_weights(&L, m);
        m->weight_bytes = L.weight_bytes;
        st = L.st;
    }
    if (st) {
        t5_free(m);
        return st;
    }
    *out = m;
    return ENCDEC_OK;
}

encdec_status t5_screen(t5_model *m, size_t min_elems) {
    encdec_status st = md_screen_build(m->wt, m->lm_head, m->hp.n_vocab, m->hp.d, min_elems, &m->screen);
    m->weight_bytes += md_screen_bytes(&m->screen);
    return st;
}

void t5_free(t5_model *m) {
    if (!m) return;
    free(m->enc);
    free(m->dec);
    spm_free(m->tok);
    wtab_free(m->wt);
    free(m);
}

int t5_bucket(int rel, int bidirectional, int n_buckets, int max_distance) {
    int ret = 0, n;
    if (bidirectional) {
        n_buckets /= 2;
        if (rel > 0) ret += n_buckets;
        n = rel < 0 ? -rel : rel;
    } else {
        n = rel < 0 ? -rel : 0;
    }
    int max_exact = n_buckets / 2;
    if (n < max_exact) return ret + n;
    /* float32 throughout, as the reference computes it: the truncation at
     * bucket boundaries depends on it */
    float r = logf((float)n / (float)max_exact) / (float)log((double)max_distance / max_exact) *
              (float)(n_buckets - max_exact);
    long large = max_exact + (long)r;
    if (large > n_buckets - 1) large = n_buckets - 1;
    return ret + (int)large;
}

int t5_matrices(t5_model *m, wl_mat *out, int cap) {
    const t5_hparams *h = &m->hp;
    int d = h->d, I = h->inner, F = h->d_ff, G = h->gated ? 2 * F : F, n = 0;
    wl_mat_add(out, cap, &n, &m->emb, h->n_vocab, d, WL_DECODE_ONLY);
    for (int l = 0; l < h->n_enc_layer; l++) {
        t5_enc_layer *y = &m->enc[l];
        wl_mat_add(out, cap, &n, &y->w_qkv, 3 * I, d, 0);
        wl_mat_add(out, cap, &n, &y->w_o, d, I, 0);
        wl_mat_add(out, cap, &n, &y->w_wi, G, d, 0);
        wl_mat_add(out, cap, &n, &y->w_wo, d, F, 0);
    }
    for (int l = 0; l < h->n_dec_layer; l++) {
        t5_dec_layer *y = &m->dec[l];
        wl_mat_add(out, cap, &n, &y->w_qkv, 3 * I, d, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_o, d, I, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_xq, I, d, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_xo, d, I, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_wi, G, d, WL_DECODE_ONLY);
        wl_mat_add(out, cap, &n, &y->w_wo, d, F, WL_DECODE_ONLY);
    }
    if (h->n_dec_layer) wl_mat_add(out, cap, &n, &m->w_xkv, h->n_dec_layer * 2 * I, d, 0);
    wl_mat_add(out, cap, &n, &m->lm_head, h->n_vocab, d, WL_DECODE_ONLY);
    return n;
}
