/* bart_ct2.c - a CTranslate2 TransformerSpec directory (what
 * ct2-transformers-converter writes for BART, mBART, Marian / OPUS-MT,
 * M2M100 / NLLB and Pegasus) seen as the Hugging Face checkpoint it came
 * from, so that bart_load reads it as it reads one (models/bart.h).
 *
 * The converter (CTranslate2 4.x) writes, per stack s (encoder, decoder):
 *   s/layer_N/self_attention/linear_0 [3d, d] fused Q|K|V, linear_1 the
 *     output, layer_norm {gamma, beta}; decoder .../attention/linear_0 Q,
 *     linear_1 [2d, d] fused K|V, linear_2 the output, layer_norm;
 *     .../ffn/linear_0, linear_1, layer_norm
 *   s/layer_norm (pre-norm stacks), s/layernorm_embedding (BART, mBART)
 *   s/position_encodings/encodings [n_positions, d]: the rows positions use
 *     (learned ones without BART's offset of 2, sinusoids as computed; an
 *     OpenNMT conversion may store none: CTranslate2 computes its own)
 *   decoder/embeddings/weight [V, d] (encoder/embeddings_0 an alias when
 *     shared), decoder/projection/weight (an alias when tied), its bias
 *     (final_logits_bias, when nonzero)
 *   scalars: s/num_heads, s/pre_norm, s/activation (0 relu, 1 gelu_tanh,
 *     2 swish, 3 gelu), s/scale_embeddings (a factor, or a boolean for
 *     sqrt(d); absent in older conversions: sqrt(d)),
 *     decoder/start_from_zero_embedding (Marian: its <pad> row dropped, the
 *     decoder started from a zero vector), decoder/alignment_layer and
 *     alignment_heads (the attention its return_attention gives: passed on
 *     as config keys of those names)
 * and config.json (bos / eos / unk / decoder_start tokens by spelling;
 * add_source_bos / add_source_eos, passed on) with the vocabulary as
 * shared_vocabulary.json (or .txt), or source_ and target_vocabulary
 * (then the encoder's embeddings are its own: Marian's separate pair).
 * Older releases (binary versions before 6, TransformerSpec revisions
 * before 5) wrote no config.json and kept some scalars at the root: read
 * as CTranslate2 4.x reads them (attr, attr_config).
 *
 * Views under Hugging Face's names are added to the same table (no copy);
 * the positions go under "<stack>.embed_positions.table", which bart_load
 * takes as they are for any variant. The variant follows the spec: norm
 * placement and layernorm_embedding (post + embedding norm: bart; post:
 * marian; pre + norm: mbart; pre: m2m_100 when the vocabulary has its
 * language tokens, else pegasus). Marian's zero start becomes a <pad> row of
 * zeros appended to the embeddings (the decoder's start), with a logit
 * bias of -1e30 so that it is never generated, as CTranslate2's vocabulary
 * cannot generate it.
 */
#include "models/bart.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CT2CFG "config.json (CTranslate2)"
#define CT2_POSITIONS 2048   /* rows of a computed position table */

typedef struct {
    ed_wtab *wt;
    int d;
    encdec_status st;
} ct2_map;

static const ed_tensor *need(ct2_map *c, const char *name) {
    const ed_tensor *t = wtab_get(c->wt, name);
    if (!t && !c->st) c->st = ed_fail(ENCDEC_ERR_SHAPE, "model.bin: no tensor %s (not a BART-family "
                                      "TransformerSpec?)", name);
    return t;
}

/* A scalar attribute as an integer (int8 / int16 / int32 / float), or dflt. */
static double scalar(const ed_wtab *wt, const char *name, double dflt) {
    const ed_tensor *t = wtab_get(wt, name);
    if (!t || t->ndim != 0) return dflt;
    switch (t->dtype) {
    case ED_I8: return *(const int8_t *)t->data;
    case ED_I16: { int16_t v; memcpy(&v, t->data, 2); return v; }
    case ED_I32: { int32_t v; memcpy(&v, t->data, 4); return v; }
    case ED_F32: { float v; memcpy(&v, t->data, 4); return v; }
    default: return dflt;
    }
}

/* A stack's attribute: "side/key", else the root's "key" (TransformerSpec
 * revisions before 5, CTranslate2 before 3.0, kept num_heads, pre_norm,
 * activation, embeddings_merge and the alignment there, for both stacks),
 * else dflt (CTranslate2's default). */
static double attr(const ed_wtab *wt, const char *side, const char *key, double dflt) {
    char name[96];
    snprintf(name, sizeof name, "%s/%s", side, key);
    return scalar(wt, wtab_get(wt, name) ? name : key, dflt);
}

/* The same tensor: one variable, or (binary versions before 3, which
 * stored an alias as a copy of its target) equal copies. */
static int same_tensor(const ed_tensor *a, const ed_tensor *b) {
    if (a == b) return 1;
    if (!a || !b || a->dtype != b->dtype || a->ndim != b->ndim || a->nbytes != b->nbytes) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return !memcmp(a->data, b->data, a->nbytes);
}

/* Rows [r0, r0 + n) of src (2-d, or 1-d for a bias) under name: a view of
 * a whole tensor, or a copy of a part (the loader frees a block once it has
 * converted it, which would leave views into its middle dangling). */
static void view(ct2_map *c, const char *name, const ed_tensor *src, int64_t r0, int64_t n) {
    if (c->st || !src) return;
    if (src->ndim < 1 || src->ndim > 2 || r0 + n > src->shape[0]) {
        c->st = ed_fail(ENCDEC_ERR_SHAPE, "model.bin: %s has an unexpected shape", src->name);
        return;
    }
    size_t row = (src->ndim == 2 ? (size_t)src->shape[1] : 1) * ed_dtype_size(src->dtype);
    ed_tensor t = *src;
    t.name = name;
    t.shape[0] = n;
    t.nbytes = row * (size_t)n;
    t.data = (const char *)src->data + row * (size_t)r0;
    if (n != src->shape[0]) {
        void *p = wtab_alloc(c->wt, t.nbytes, name);
        if (!p) {
            c->st = ENCDEC_ERR_NOMEM;
            return;
        }
        memcpy(p, t.data, t.nbytes);
        t.data = p;
    }
    c->st = wtab_add(c->wt, &t);
}

/* A fused tensor once its parts are copied: its memory given back, unless
 * other names read it too (CTranslate2 stores equal variables once, as
 * aliases: the zero biases of a random model's layers are one tensor). */
static void drop_fused(ct2_map *c, const char *src) {
    char w[256], b[256];
    snprintf(w, sizeof w, "%s/weight", src);
    snprintf(b, sizeof b, "%s/bias", src);
    const ed_tensor *tw = wtab_get(c->wt, w), *tb = wtab_get(c->wt, b);
    if (c->st) return;
    if (tb && tb->data && wtab_refs(c->wt, tb->data) == 1) wtab_drop(c->wt, tb->data, tb->nbytes);
    if (tw && tw->data && wtab_refs(c->wt, tw->data) == 1) wtab_drop(c->wt, tw->data, tw->nbytes);
}

/* src's weight and bias as the Hugging Face linear "<hf>.{weight,bias}",
 * rows [part * d, (part + 1) * d) of a fused one (part -1: the whole). */
static void linear(ct2_map *c, const char *src, const char *hf, int part) {
    char w[256], b[256], hw[256], hb[256];
    snprintf(w, sizeof w, "%s/weight", src);
    snprintf(b, sizeof b, "%s/bias", src);
    snprintf(hw, sizeof hw, "%s.weight", hf);
    snprintf(hb, sizeof hb, "%s.bias", hf);
    const ed_tensor *tw = need(c, w), *tb = wtab_get(c->wt, b);
    if (c->st) return;
    int64_t r0 = part < 0 ? 0 : (int64_t)part * c->d, n = part < 0 ? tw->shape[0] : c->d;
    view(c, hw, tw, r0, n);
    if (tb) view(c, hb, tb, r0, n);
}

static void layer_norm(ct2_map *c, const char *src, const char *hf) {
    char g[256], b[256], hw[256], hb[256];
    snprintf(g, sizeof g, "%s/gamma", src);
    snprintf(b, sizeof b, "%s/beta", src);
    snprintf(hw, sizeof hw, "%s.weight", hf);
    snprintf(hb, sizeof hb, "%s.bias", hf);
    const ed_tensor *tg = need(c, g), *tb = need(c, b);
    if (c->st) return;
    view(c, hw, tg, 0, tg->shape[0]);
    view(c, hb, tb, 0, tb->shape[0]);
}

static int n_layers(const ed_wtab *wt, const char *side) {
    char name[128];
    int n = 0;
    for (;; n++) {
        snprintf(name, sizeof name, "%s/layer_%d/ffn/linear_0/weight", side, n);
        if (!wtab_get(wt, name) || n > 512) return n;
    }
}

/* One stack's layers, norms and positions under Hugging Face's names. */
static void stack(ct2_map *c, const char *side, int L) {
    char s[160], h[200];
    for (int l = 0; l < L && !c->st; l++) {
        static const char *const qkv[3] = {"q_proj", "k_proj", "v_proj"};
        snprintf(s, sizeof s, "%s/layer_%d/self_attention/linear_0", side, l);
        for (int i = 0; i < 3; i++) {
            snprintf(h, sizeof h, "model.%s.layers.%d.self_attn.%s", side, l, qkv[i]);
            linear(c, s, h, i);
        }
        drop_fused(c, s);
        snprintf(s, sizeof s, "%s/layer_%d/self_attention/linear_1", side, l);
        snprintf(h, sizeof h, "model.%s.layers.%d.self_attn.out_proj", side, l);
        linear(c, s, h, -1);
        snprintf(s, sizeof s, "%s/layer_%d/self_attention/layer_norm", side, l);
        snprintf(h, sizeof h, "model.%s.layers.%d.self_attn_layer_norm", side, l);
        layer_norm(c, s, h);
        if (!strcmp(side, "decoder")) {
            snprintf(s, sizeof s, "decoder/layer_%d/attention/linear_0", l);
            snprintf(h, sizeof h, "model.decoder.layers.%d.encoder_attn.q_proj", l);
            linear(c, s, h, -1);
            snprintf(s, sizeof s, "decoder/layer_%d/attention/linear_1", l);
            snprintf(h, sizeof h, "model.decoder.layers.%d.encoder_attn.k_proj", l);
            linear(c, s, h, 0);
            snprintf(h, sizeof h, "model.decoder.layers.%d.encoder_attn.v_proj", l);
            linear(c, s, h, 1);
            drop_fused(c, s);
            snprintf(s, sizeof s, "decoder/layer_%d/attention/linear_2", l);
            snprintf(h, sizeof h, "model.decoder.layers.%d.encoder_attn.out_proj", l);
            linear(c, s, h, -1);
            snprintf(s, sizeof s, "decoder/layer_%d/attention/layer_norm", l);
            snprintf(h, sizeof h, "model.decoder.layers.%d.encoder_attn_layer_norm", l);
            layer_norm(c, s, h);
        }
        snprintf(s, sizeof s, "%s/layer_%d/ffn/linear_0", side, l);
        snprintf(h, sizeof h, "model.%s.layers.%d.fc1", side, l);
        linear(c, s, h, -1);
        snprintf(s, sizeof s, "%s/layer_%d/ffn/linear_1", side, l);
        snprintf(h, sizeof h, "model.%s.layers.%d.fc2", side, l);
        linear(c, s, h, -1);
        snprintf(s, sizeof s, "%s/layer_%d/ffn/layer_norm", side, l);
        snprintf(h, sizeof h, "model.%s.layers.%d.final_layer_norm", side, l);
        layer_norm(c, s, h);
    }
    snprintf(s, sizeof s, "%s/layer_norm/gamma", side);
    if (wtab_get(c->wt, s)) {
        snprintf(s, sizeof s, "%s/layer_norm", side);
        snprintf(h, sizeof h, "model.%s.layer_norm", side);
        layer_norm(c, s, h);
    }
    snprintf(s, sizeof s, "%s/layernorm_embedding/gamma", side);
    if (wtab_get(c->wt, s)) {
        snprintf(s, sizeof s, "%s/layernorm_embedding", side);
        snprintf(h, sizeof h, "model.%s.layernorm_embedding", side);
        layer_norm(c, s, h);
    }
    snprintf(s, sizeof s, "%s/position_encodings/encodings", side);
    snprintf(h, sizeof h, "model.%s.embed_positions.table", side);
    const ed_tensor *p = need(c, s);
    if (p) view(c, h, p, 0, p->shape[0]);
}

/* The positions of a side whose spec stores none, as CTranslate2 computes
 * them then (its SinusoidalPositionEncoder, in float): row t is
 * sin((t + 1) w_j) for j < d/2, then cos((t + 1) w_j), with
 * w_j = exp(-j ln(10000) / (d/2 - 1)). CTranslate2 grows its table with
 * the input; here it has n rows (the other side's count where that one is
 * stored), which bound the input and the output as a stored table does. */
static void ct2_sinusoids(ct2_map *c, const char *side, int64_t n) {
    char name[96];
    snprintf(name, sizeof name, "%s/position_encodings/encodings", side);
    int d = c->d, half = d / 2;
    if (c->st || wtab_get(c->wt, name)) return;
    if (half < 2 || d % 2) {
        c->st = ed_fail(ENCDEC_ERR_SHAPE, "model.bin: no position table, and d_model %d has no sinusoids", d);
        return;
    }
    float *t = wtab_alloc(c->wt, sizeof(float) * (size_t)n * (size_t)d, "position table");
    if (!t) {
        c->st = ENCDEC_ERR_NOMEM;
        return;
    }
    const float inc = logf(10000.0f) / (float)(half - 1);
    for (int64_t r = 0; r < n; r++)
        for (int j = 0; j < half; j++) {
            float a = (float)(r + 1) * expf(-inc * (float)j);
            t[r * d + j] = sinf(a);
            t[r * d + half + j] = cosf(a);
        }
    ed_tensor e = {name, NULL, ED_F32, 2, {n, d}, sizeof(float) * (size_t)n * (size_t)d, t};
    c->st = wtab_add(c->wt, &e);
}

/* A side's embedding scale as CTranslate2 reads it (build_embeddings_scale):
 * its scale_embeddings, else an older conversion's
 * embeddings/multiply_by_sqrt_depth; a boolean (int8) true, or no flag at
 * all, means sqrt(d); false, 1; a float is the factor. */
static double ct2_emb_scale(const ed_wtab *wt, const char *side, int d) {
    char name[96];
    snprintf(name, sizeof name, "%s/scale_embeddings", side);
    const ed_tensor *t = wtab_get(wt, name);
    if (!t) {
        snprintf(name, sizeof name, "%s/embeddings/multiply_by_sqrt_depth", side);
        t = wtab_get(wt, name);
    }
    if (!t) return sqrt((double)d);
    if (t->dtype == ED_I8 || t->dtype == ED_BOOL) return scalar(wt, name, 0) ? sqrt((double)d) : 1;
    return scalar(wt, name, 1);
}

/* ---- the vocabulary and the config ---------------------------------------------------- */

/* <which>_vocabulary.json (a list) or .txt (a token per line) as a cJSON
 * list; *out NULL when neither file is there. */
static encdec_status vocab_file(const char *dir, const char *which, cJSON **out) {
    char p[4200], name[64];
    *out = NULL;
    snprintf(name, sizeof name, "%s_vocabulary.json", which);
    if (ed_is_file(ed_path_join(p, sizeof p, dir, name))) {
        cJSON *c = NULL;
        char *text = NULL;
        size_t n = 0;
        encdec_status st = ed_read_file(p, &text, &n);
        if (!st && !(c = cJSON_ParseWithLength(text, n))) st = ed_fail(ENCDEC_ERR_CONFIG, "%s: malformed JSON", name);
        free(text);
        if (!st && !cJSON_IsArray(c)) {
            cJSON_Delete(c);
            st = ed_fail(ENCDEC_ERR_CONFIG, "%s: not a list of tokens", name);
        }
        *out = st ? NULL : c;
        return st;
    }
    snprintf(name, sizeof name, "%s_vocabulary.txt", which);
    if (!ed_is_file(ed_path_join(p, sizeof p, dir, name))) return ENCDEC_OK;
    char *text = NULL;
    size_t n = 0;
    encdec_status st = ed_read_file(p, &text, &n);
    if (st) return st;
    cJSON *a = cJSON_CreateArray();
    for (char *line = text, *end; a && line < text + n; line = end + 1) {
        end = memchr(line, '\n', (size_t)(text + n - line));
        if (!end) end = text + n;
        char keep = *end;
        *end = 0;
        cJSON_AddItemToArray(a, cJSON_CreateString(line));
        *end = keep;
    }
    free(text);
    *out = a;
    return a ? ENCDEC_OK : ed_fail(ENCDEC_ERR_NOMEM, "out of memory: vocabulary");
}

/* The vocabularies as CTranslate2 writes them: shared_vocabulary (*src the
 * same list as *tgt), else source_vocabulary and target_vocabulary. */
static encdec_status vocabularies(const char *dir, cJSON **src, cJSON **tgt) {
    *src = *tgt = NULL;
    encdec_status st = vocab_file(dir, "shared", tgt);
    if (st || *tgt) {
        *src = *tgt;
        return st;
    }
    if ((st = vocab_file(dir, "source", src)) || (st = vocab_file(dir, "target", tgt))) return st;
    if (!*src || !*tgt)
        st = ed_fail(ENCDEC_ERR_CONFIG, "%s: no shared_vocabulary.json or .txt, nor source_ and "
                     "target_vocabulary (a CTranslate2 model's vocabulary)", dir);
    return st;
}

/* A string attribute (int8 bytes, as the spec stores strings) or dflt. */
static const char *string_attr(const ed_wtab *wt, const char *name, const char *dflt, char *buf, size_t cap) {
    const ed_tensor *t = wtab_get(wt, name);
    if (!t || t->dtype != ED_I8 || t->ndim != 1 || !t->nbytes || t->nbytes >= cap) return dflt;
    memcpy(buf, t->data, t->nbytes);
    buf[t->nbytes] = 0;
    return buf;
}

/* The config.json binary versions before 6 did not write, from the
 * attributes they stored instead, as CTranslate2 reads them: unk_token,
 * bos_token and eos_token (<unk>, <s>, </s> when absent); the decoder
 * starts from bos unless with_target_bos is 0 (then eos); with_source_bos
 * and with_source_eos as add_source_bos and add_source_eos;
 * user_decoder_start_tokens (the caller gives the start) is not read. */
static encdec_status attr_config(const ed_wtab *wt, cJSON **out) {
    char unk[64], bos[64], eos[64];
    *out = NULL;
    if (scalar(wt, "user_decoder_start_tokens", 0))
        return ed_fail(ENCDEC_ERR_CONFIG, "model.bin: user_decoder_start_tokens (the caller gives the "
                       "decoder's start token): not read");
    cJSON *c = cJSON_CreateObject();
    const char *b = string_attr(wt, "bos_token", "<s>", bos, sizeof bos),
               *e = string_attr(wt, "eos_token", "</s>", eos, sizeof eos);
    if (!c || !cJSON_AddStringToObject(c, "unk_token", string_attr(wt, "unk_token", "<unk>", unk, sizeof unk)) ||
        !cJSON_AddStringToObject(c, "bos_token", b) || !cJSON_AddStringToObject(c, "eos_token", e) ||
        !cJSON_AddStringToObject(c, "decoder_start_token", scalar(wt, "with_target_bos", 1) ? b : e) ||
        !cJSON_AddBoolToObject(c, "add_source_bos", scalar(wt, "with_source_bos", 0) != 0) ||
        !cJSON_AddBoolToObject(c, "add_source_eos", scalar(wt, "with_source_eos", 0) != 0)) {
        cJSON_Delete(c);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: config");
    }
    *out = c;
    return ENCDEC_OK;
}

static int token_id(const cJSON *vocab, const char *tok) {
    int i = 0;
    if (!tok || !vocab) return -1;
    for (const cJSON *e = vocab->child; e; e = e->next, i++)
        if (cJSON_IsString(e) && !strcmp(e->valuestring, tok)) return i;
    return -1;
}

static const char *cfg_token(const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Marian's zero start: [V + 1, d] embeddings under name with a zero last
 * row (its <pad>), and the projection's bias with -1e30 there. */
static void zero_start(ct2_map *c, int V, int tied, const char *name) {
    const ed_tensor *e = need(c, "decoder/embeddings/weight");
    if (c->st) return;
    size_t row = (size_t)e->shape[1] * ed_dtype_size(e->dtype);
    char *p = wtab_alloc(c->wt, row * (size_t)(V + 1), "embeddings with <pad>");
    float *bias = wtab_alloc(c->wt, sizeof(float) * (size_t)(V + 1), "final_logits_bias");
    if (!p || !bias) {
        c->st = ENCDEC_ERR_NOMEM;
        return;
    }
    memcpy(p, e->data, row * (size_t)V);
    memset(p + row * (size_t)V, 0, row);
    ed_tensor t = *e;
    t.name = name;
    t.shape[0] = V + 1;
    t.nbytes = row * (size_t)(V + 1);
    t.data = p;
    if ((c->st = wtab_add(c->wt, &t))) return;
    const ed_tensor *b = wtab_get(c->wt, "decoder/projection/bias");
    for (int i = 0; i < V; i++) bias[i] = 0;
    if (b && b->ndim == 1 && b->shape[0] == V && (c->st = ed_to_f32(bias, b->data, b->dtype, (size_t)V))) return;
    bias[V] = -1e30f;
    ed_tensor fb = {.name = "final_logits_bias", .file = e->file, .dtype = ED_F32, .ndim = 2,
                    .shape = {1, V + 1}, .nbytes = sizeof(float) * (size_t)(V + 1), .data = bias};
    if ((c->st = wtab_add(c->wt, &fb))) return;
    if (!tied) c->st = ed_fail(ENCDEC_ERR_CONFIG, "model.bin: a Marian model with an untied output "
                               "projection is not read");
}

static const char *act_name(int a) {
    switch (a) {
    case 0: return "relu";
    case 1: return "gelu_new";
    case 2: return "swish";
    case 3: return "gelu";
    default: return NULL;
    }
}

encdec_status bart_ct2_adapt(ed_wtab *wt, const char *dir, cJSON **config) {
    *config = NULL;
    ct2_map c = {wt, 0, ENCDEC_OK};
    const ed_tensor *emb = need(&c, "decoder/embeddings/weight");
    const ed_tensor *enc_emb = wtab_get(wt, "encoder/embeddings_0/weight");
    if (!enc_emb) enc_emb = wtab_get(wt, "encoder/embeddings/weight");   /* revisions before 4 */
    char spec[64], bin[4200];
    uint32_t version = 0, revision = 0;
    if (ct2_header(ed_path_join(bin, sizeof bin, dir, "model.bin"), spec, sizeof spec, &version, &revision) &&
        revision < 2)
        return ed_fail(ENCDEC_ERR_CONFIG, "model.bin: %s revision %u (OpenNMT-tf's names, CTranslate2 "
                       "before 1.0): not read", *spec ? spec : "a TransformerSpec", revision);
    /* revisions before 3 stored no head count: the spec's name told it */
    double heads = strcmp(spec, "TransformerBig") ? 8 : 16;
    const ed_tensor *proj = wtab_get(wt, "decoder/projection/weight");
    if (c.st) return c.st;
    if (emb->ndim != 2)
        return ed_fail(ENCDEC_ERR_SHAPE, "model.bin: decoder/embeddings/weight is not a matrix");
    c.d = (int)emb->shape[1];
    /* positions: as stored, else CTranslate2's sinusoids, as many as the
     * other side stores or CT2_POSITIONS */
    const ed_tensor *pe = wtab_get(wt, "encoder/position_encodings/encodings"),
                    *pd = wtab_get(wt, "decoder/position_encodings/encodings");
    int64_t n_pos = pe && pe->ndim == 2 ? pe->shape[0] : pd && pd->ndim == 2 ? pd->shape[0] : CT2_POSITIONS;
    ct2_sinusoids(&c, "encoder", n_pos);
    ct2_sinusoids(&c, "decoder", n_pos);
    if (c.st) return c.st;
    pe = wtab_get(wt, "encoder/position_encodings/encodings");
    pd = wtab_get(wt, "decoder/position_encodings/encodings");
    if (pe->ndim != 2 || pd->ndim != 2 || pe->shape[1] != c.d || pd->shape[1] != c.d ||
        pe->shape[0] != pd->shape[0])
        return ed_fail(ENCDEC_ERR_SHAPE, "model.bin: the embeddings and positions do not agree");
    /* separate embeddings (separate vocabularies, or one spelled twice): Marian's two,
     * as transformers' share_encoder_decoder_embeddings false names them */
    int separate = enc_emb && !same_tensor(enc_emb, emb);
    if (separate && (enc_emb->ndim != 2 || enc_emb->shape[1] != c.d))
        return ed_fail(ENCDEC_ERR_SHAPE, "model.bin: the encoder's embeddings are not [vocabulary, %d]", c.d);
    int Vs = separate ? (int)enc_emb->shape[0] : (int)emb->shape[0];
    if (scalar(wt, "encoder/multi_query_attention", 0) || scalar(wt, "decoder/alibi", 0) ||
        attr(wt, "encoder", "embeddings_merge", 0) || scalar(wt, "with_relative_position", 0))
        return ed_fail(ENCDEC_ERR_CONFIG, "model.bin: multi-query attention, ALiBi or merged embeddings: "
                       "not a BART-family model");
    int V = (int)emb->shape[0], Le = n_layers(wt, "encoder"), Ld = n_layers(wt, "decoder");
    int tied = !proj || same_tensor(proj, emb);
    int pre = (int)attr(wt, "encoder", "pre_norm", 1), dpre = (int)attr(wt, "decoder", "pre_norm", 1);
    int lne = wtab_get(wt, "encoder/layernorm_embedding/gamma") != NULL;
    int zero = (int)scalar(wt, "decoder/start_from_zero_embedding", 0);
    /* a float (the transformers converter's factor), or a boolean (int8: the
     * spec's default, as the OpenNMT converters leave it), or none (older
     * conversions): one factor for both sides, as transformers has it */
    double scale = ct2_emb_scale(wt, "encoder", c.d);
    if (fabs(scale - ct2_emb_scale(wt, "decoder", c.d)) > 1e-6 * scale)
        return ed_fail(ENCDEC_ERR_CONFIG, "model.bin: the encoder's embeddings are scaled by %g, the "
                       "decoder's by %g: not read", scale, ct2_emb_scale(wt, "decoder", c.d));
    const char *act = act_name((int)attr(wt, "encoder", "activation", 0));
    if (!Le || !Ld || pre != dpre || !act || act != act_name((int)attr(wt, "decoder", "activation", 0)))
        return ed_fail(ENCDEC_ERR_CONFIG, "model.bin: not a BART-family TransformerSpec (layers %d + %d, "
                       "pre_norm %d / %d, activation %s)", Le, Ld, pre, dpre, act ? act : "?");
    if (fabs(scale - 1) > 1e-6 && fabs(scale - sqrt((double)c.d)) > 1e-3 * sqrt((double)c.d))
        return ed_fail(ENCDEC_ERR_CONFIG, "model.bin: scale_embeddings %g is neither 1 nor sqrt(d_model)", scale);
    if (zero && pre) return ed_fail(ENCDEC_ERR_CONFIG, "model.bin: a zero decoder start in a pre-norm model");
    cJSON *vocab = NULL, *src = NULL, *cfg = NULL;   /* vocab: the target's (the decoder's) */
    char p[4200];
    encdec_status st = vocabularies(dir, &src, &vocab);
    if (!st && ed_is_file(ed_path_join(p, sizeof p, dir, "config.json"))) st = ed_json_load(p, &cfg);
    else if (!st) st = attr_config(wt, &cfg);   /* binary versions before 6 */
    if (!st && cJSON_GetArraySize(vocab) != V)
        st = ed_fail(ENCDEC_ERR_CONFIG, "%s_vocabulary: %d tokens for a model of %d", src == vocab ? "shared" : "target",
                     cJSON_GetArraySize(vocab), V);
    if (!st && cJSON_GetArraySize(src) != Vs)
        st = ed_fail(ENCDEC_ERR_CONFIG, "source_vocabulary: %d tokens for an encoder of %d", cJSON_GetArraySize(src), Vs);
    const char *type = !pre ? (lne ? "bart" : "marian") : lne ? "mbart"
                       : token_id(vocab, "__en__") >= 0 || token_id(vocab, "eng_Latn") >= 0 ? "m2m_100" : "pegasus";
    /* Hugging Face's names */
    for (int s = 0; s < 2 && !st; s++) {
        stack(&c, s ? "decoder" : "encoder", s ? Ld : Le);
        st = c.st;
    }
    const char *dec_name = separate ? "model.decoder.embed_tokens.weight" : "model.shared.weight";
    if (!st && separate) view(&c, "model.encoder.embed_tokens.weight", enc_emb, 0, Vs);
    if (!st && zero) {
        zero_start(&c, V, tied, dec_name);
        st = c.st;
    } else if (!st) {
        view(&c, dec_name, emb, 0, V);
        if (!tied) view(&c, "lm_head.weight", proj, 0, V);
        const ed_tensor *b = wtab_get(wt, "decoder/projection/bias");
        if (b && !c.st) {
            ed_tensor t = *b;
            t.name = "final_logits_bias";
            t.ndim = 2;
            t.shape[0] = 1;
            t.shape[1] = b->shape[0];
            c.st = wtab_add(wt, &t);
        }
        st = c.st;
    }
    /* the config transformers would have written */
    int eos = token_id(vocab, cfg_token(cfg, "eos_token")), bos = token_id(vocab, cfg_token(cfg, "bos_token"));
    int start = zero ? V : token_id(vocab, cfg_token(cfg, "decoder_start_token"));
    int pad = zero ? V : token_id(vocab, "<pad>") >= 0 ? token_id(vocab, "<pad>") : token_id(vocab, "<blank>");   /* OpenNMT's */
    if (!st && (eos < 0 || start < 0 || pad < 0))
        st = ed_fail(ENCDEC_ERR_CONFIG, CT2CFG ": its eos_token, decoder_start_token or <pad> is not in the "
                     "vocabulary");
    cJSON *o = st ? NULL : cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "model_type", type);
        cJSON_AddNumberToObject(o, "d_model", c.d);
        cJSON_AddNumberToObject(o, "encoder_layers", Le);
        cJSON_AddNumberToObject(o, "decoder_layers", Ld);
        cJSON_AddNumberToObject(o, "encoder_attention_heads", attr(wt, "encoder", "num_heads", heads));
        cJSON_AddNumberToObject(o, "decoder_attention_heads", attr(wt, "decoder", "num_heads", heads));
        const ed_tensor *fe = wtab_get(wt, "encoder/layer_0/ffn/linear_0/weight");
        const ed_tensor *fd = wtab_get(wt, "decoder/layer_0/ffn/linear_0/weight");
        cJSON_AddNumberToObject(o, "encoder_ffn_dim", fe ? (double)fe->shape[0] : 0);
        cJSON_AddNumberToObject(o, "decoder_ffn_dim", fd ? (double)fd->shape[0] : 0);
        cJSON_AddNumberToObject(o, "vocab_size", separate ? Vs : V + zero);
        if (separate) {
            cJSON_AddBoolToObject(o, "share_encoder_decoder_embeddings", 0);
            cJSON_AddNumberToObject(o, "decoder_vocab_size", V + zero);
        }
        cJSON_AddNumberToObject(o, "max_position_embeddings", (double)pe->shape[0]);
        cJSON_AddBoolToObject(o, "scale_embedding", fabs(scale - 1) > 1e-6);
        cJSON_AddStringToObject(o, "activation_function", act);
        cJSON_AddBoolToObject(o, "tie_word_embeddings", tied);
        cJSON_AddNumberToObject(o, "pad_token_id", pad);
        cJSON_AddNumberToObject(o, "eos_token_id", eos);
        if (bos >= 0) cJSON_AddNumberToObject(o, "bos_token_id", bos);
        else cJSON_AddNullToObject(o, "bos_token_id");
        cJSON_AddNumberToObject(o, "decoder_start_token_id", start);
        cJSON_AddNullToObject(o, "forced_bos_token_id");
        cJSON_AddNullToObject(o, "forced_eos_token_id");
        /* its Translator's source affixes (encdec_model_info's source_bos / source_eos) */
        const char *affix[] = {"add_source_bos", "add_source_eos"};
        for (int i = 0; i < 2; i++)
            cJSON_AddBoolToObject(o, affix[i], cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, affix[i])));
        /* the spec's alignment (CTranslate2's return_attention), where it has one */
        const char *al[] = {"alignment_layer", "alignment_heads"};
        char an[48];
        for (int i = 0; i < 2; i++)
            if (wtab_get(wt, al[i]) || wtab_get(wt, (snprintf(an, sizeof an, "decoder/%s", al[i]), an)))
                cJSON_AddNumberToObject(o, al[i], attr(wt, "decoder", al[i], 0));
        *config = o;
    } else if (!st) {
        st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: config");
    }
    if (src != vocab) cJSON_Delete(src);
    cJSON_Delete(vocab);
    cJSON_Delete(cfg);
    return st;
}
