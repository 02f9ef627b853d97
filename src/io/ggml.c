/* ggml.c - whisper.cpp's Whisper model files (ggml-*.bin).
 *
 * Layout (written by whisper.cpp's models/convert-*-to-ggml.py and its
 * quantize tool; little-endian, no padding anywhere):
 *   u32 magic 0x67676d6c ("ggml")
 *   i32 x 11 hyper-parameters: n_vocab, n_audio_ctx, n_audio_state,
 *       n_audio_head, n_audio_layer, n_text_ctx, n_text_state, n_text_head,
 *       n_text_layer, n_mels, ftype (0 f32, 1 f16, quantized: type + 1000 x
 *       the quantisation version)
 *   i32 n_mel, i32 n_fft, then n_mel x n_fft f32: the mel filter bank
 *       (read over: encdec computes its own, the same)
 *   i32 n_tokens, then per token: u32 length, its bytes (raw bytes, not
 *       GPT-2's alphabet), in id order; the special tokens are not listed
 *       (some converters list <|endoftext|> last)
 *   tensors to the end of the file, each: i32 n_dims, i32 name length,
 *       i32 type, i32 ne[n_dims] (innermost first: a torch [out, in] matrix
 *       has ne = {in, out}), the name, the data.
 * Types: 0 f32, 1 f16, 2 q4_0, 3 q4_1, 6 q5_0, 7 q5_1, 8 q8_0 (blocks of 32
 * values along ne[0], each with an f16 scale d, q4_1 / q5_1 also an f16
 * minimum m; value = d * q (+ m); q4_0 and q5_0 store q + 8 and q + 16;
 * q5_x keeps the fifth bits of the 32 values in a u32). Quantized tensors
 * are expanded here to f16 in memory the table owns (the compute modes then
 * treat them as any f16 model: f32 arithmetic, or bf16 / int8 at load).
 *
 * Names are openai-whisper's ("encoder.blocks.0.attn.query.weight"); they
 * are added under Hugging Face's ("model.encoder.layers.0.self_attn.q_proj.
 * weight"), so the Whisper loader reads a ggml file as an HF checkpoint.
 * The conv biases, stored [n, 1], become [n].
 */
#include "io/tensor.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/half.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGML_MAGIC 0x67676d6cu
#define QK 32   /* values per quantized block */

typedef struct {
    const uint8_t *data;
    size_t pos, size;
    const char *path;
} reader;

static encdec_status need(const reader *r, size_t n, const char *what) {
    if (n <= r->size - r->pos) return ENCDEC_OK;
    return ed_fail(ENCDEC_ERR_FORMAT, "%s: truncated at byte %zu: %s needs %zu bytes, %zu left",
                   r->path, r->pos, what, n, r->size - r->pos);
}

static encdec_status read_i32(reader *r, int32_t *v, const char *what) {
    encdec_status st = need(r, 4, what);
    if (st) return st;
    const uint8_t *p = r->data + r->pos;
    *v = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    r->pos += 4;
    return ENCDEC_OK;
}

/* An i32 in [lo, hi], else a message naming it. */
static encdec_status read_in(reader *r, int32_t *v, int32_t lo, int32_t hi, const char *what) {
    size_t at = r->pos;
    encdec_status st = read_i32(r, v, what);
    if (!st && (*v < lo || *v > hi))
        st = ed_fail(ENCDEC_ERR_FORMAT, "%s: %s is %d at byte %zu (expected %d..%d)", r->path,
                     what, *v, at, lo, hi);
    return st;
}

/* ---- types ---------------------------------------------------------------- */

typedef struct {
    int id;
    const char *name;
    size_t block_bytes;   /* per QK values; 0: not quantized */
} qtype;

static const qtype QTYPES[] = {
    {2, "q4_0", 2 + 16}, {3, "q4_1", 2 + 2 + 16}, {6, "q5_0", 2 + 4 + 16},
    {7, "q5_1", 2 + 2 + 4 + 16}, {8, "q8_0", 2 + 32},
};

static const qtype *find_qtype(int id) {
    for (size_t i = 0; i < sizeof QTYPES / sizeof QTYPES[0]; i++)
        if (QTYPES[i].id == id) return &QTYPES[i];
    return NULL;
}

static float f16_at(const uint8_t *p) { return ed_h2f((uint16_t)(p[0] | p[1] << 8)); }

/* One block of QK values of type id at b into out[QK]. */
static void dequant_block(int id, const uint8_t *b, float *out) {
    float d = f16_at(b), m = 0;
    const uint8_t *qs;
    uint32_t qh = 0;
    switch (id) {
    case 8:   /* q8_0: d, int8 x 32 */
        for (int j = 0; j < QK; j++) out[j] = d * (float)(int8_t)b[2 + j];
        return;
    case 2:   /* q4_0: d, nibbles: value j in the low half of byte j, j + 16 in its high half */
    case 3:   /* q4_1: d, m, the same nibbles */
        if (id == 3) m = f16_at(b + 2);
        qs = b + (id == 3 ? 4 : 2);
        for (int j = 0; j < QK / 2; j++) {
            int lo = qs[j] & 0x0f, hi = qs[j] >> 4;
            if (id == 2) lo -= 8, hi -= 8;
            out[j] = d * (float)lo + m;
            out[j + QK / 2] = d * (float)hi + m;
        }
        return;
    case 6:   /* q5_0: d, qh (the fifth bit of value j in bit j), nibbles as q4 */
    case 7:   /* q5_1: d, m, qh, nibbles */
        if (id == 7) m = f16_at(b + 2);
        b += id == 7 ? 4 : 2;
        qh = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        qs = b + 4;
        for (int j = 0; j < QK / 2; j++) {
            int lo = (qs[j] & 0x0f) | (int)((qh >> j) & 1) << 4;
            int hi = (qs[j] >> 4) | (int)((qh >> (j + QK / 2)) & 1) << 4;
            if (id == 6) lo -= 16, hi -= 16;
            out[j] = d * (float)lo + m;
            out[j + QK / 2] = d * (float)hi + m;
        }
        return;
    }
}

/* ---- names ---------------------------------------------------------------- */

/* openai-whisper's name -> Hugging Face's, into out; 0 when it is not one
 * of Whisper's (kept as it is). */
static int hf_name(const char *in, char *out, size_t cap) {
    static const struct { const char *from, *to; } WHOLE[] = {
        {"encoder.positional_embedding", "model.encoder.embed_positions.weight"},
        {"decoder.positional_embedding", "model.decoder.embed_positions.weight"},
        {"decoder.token_embedding.weight", "model.decoder.embed_tokens.weight"},
        {"encoder.conv1.weight", "model.encoder.conv1.weight"},
        {"encoder.conv1.bias", "model.encoder.conv1.bias"},
        {"encoder.conv2.weight", "model.encoder.conv2.weight"},
        {"encoder.conv2.bias", "model.encoder.conv2.bias"},
        {"encoder.ln_post.weight", "model.encoder.layer_norm.weight"},
        {"encoder.ln_post.bias", "model.encoder.layer_norm.bias"},
        {"decoder.ln.weight", "model.decoder.layer_norm.weight"},
        {"decoder.ln.bias", "model.decoder.layer_norm.bias"},
        {"decoder.proj.weight", "proj_out.weight"},
    };
    static const struct { const char *from, *to; } PART[] = {
        {"attn_ln", "self_attn_layer_norm"}, {"attn.query", "self_attn.q_proj"},
        {"attn.key", "self_attn.k_proj"}, {"attn.value", "self_attn.v_proj"},
        {"attn.out", "self_attn.out_proj"}, {"cross_attn_ln", "encoder_attn_layer_norm"},
        {"cross_attn.query", "encoder_attn.q_proj"}, {"cross_attn.key", "encoder_attn.k_proj"},
        {"cross_attn.value", "encoder_attn.v_proj"}, {"cross_attn.out", "encoder_attn.out_proj"},
        {"mlp_ln", "final_layer_norm"}, {"mlp.0", "fc1"}, {"mlp.2", "fc2"},
    };
    for (size_t i = 0; i < sizeof WHOLE / sizeof WHOLE[0]; i++)
        if (!strcmp(in, WHOLE[i].from)) return snprintf(out, cap, "%s", WHOLE[i].to) > 0;
    /* {encoder,decoder}.blocks.N.PART.{weight,bias} */
    char side[8], rest[128];
    int layer, n = 0;
    if (sscanf(in, "%7[a-z].blocks.%d.%127s%n", side, &layer, rest, &n) != 3 || in[n] ||
        (strcmp(side, "encoder") && strcmp(side, "decoder")) || layer < 0)
        return 0;
    char *dot = strrchr(rest, '.');
    if (!dot || (strcmp(dot, ".weight") && strcmp(dot, ".bias"))) return 0;
    *dot = 0;
    for (size_t i = 0; i < sizeof PART / sizeof PART[0]; i++)
        if (!strcmp(rest, PART[i].from))
            return snprintf(out, cap, "model.%s.layers.%d.%s.%s", side, layer, PART[i].to,
                            dot + 1) > 0;
    return 0;
}

/* ---- the file ------------------------------------------------------------- */

static encdec_status read_hparams(reader *r, ggml_whisper *g) {
    int32_t magic;
    encdec_status st = read_i32(r, &magic, "magic");
    if (st) return st;
    if ((uint32_t)magic != GGML_MAGIC)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: not a whisper.cpp ggml file (magic %08x, expected "
                       "67676d6c)", r->path, (unsigned)magic);
    struct { int32_t *dst; int32_t hi; const char *what; } f[] = {
        {&g->n_vocab, 1 << 20, "n_vocab"}, {&g->n_audio_ctx, 1 << 16, "n_audio_ctx"},
        {&g->n_audio_state, 16384, "n_audio_state"}, {&g->n_audio_head, 256, "n_audio_head"},
        {&g->n_audio_layer, 256, "n_audio_layer"}, {&g->n_text_ctx, 1 << 16, "n_text_ctx"},
        {&g->n_text_state, 16384, "n_text_state"}, {&g->n_text_head, 256, "n_text_head"},
        {&g->n_text_layer, 256, "n_text_layer"}, {&g->n_mels, 1024, "n_mels"},
        {&g->ftype, 1 << 20, "ftype"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0] && !st; i++)
        st = read_in(r, f[i].dst, i == 10 ? 0 : 1, f[i].hi, f[i].what);
    return st;
}

static encdec_status read_filters(reader *r) {
    int32_t n_mel, n_fft;
    encdec_status st = read_in(r, &n_mel, 1, 1024, "mel filter rows");
    if (!st) st = read_in(r, &n_fft, 1, 1 << 16, "mel filter columns");
    if (!st) st = need(r, (size_t)n_mel * (size_t)n_fft * 4, "mel filters");
    if (!st) r->pos += (size_t)n_mel * (size_t)n_fft * 4;
    return st;
}

static encdec_status read_vocab(reader *r, ed_wtab *t, ggml_whisper *g) {
    int32_t n;
    encdec_status st = read_in(r, &n, 1, g->n_vocab, "token count");
    if (st) return st;
    g->tok = wtab_alloc(t, sizeof *g->tok * (size_t)n, "ggml vocabulary");
    g->tok_len = wtab_alloc(t, sizeof *g->tok_len * (size_t)n, "ggml vocabulary");
    if (!g->tok || !g->tok_len) return ENCDEC_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++) {
        int32_t len;
        char what[48];
        snprintf(what, sizeof what, "token %d length", i);
        if ((st = read_in(r, &len, 0, 4096, what))) return st;
        snprintf(what, sizeof what, "token %d", i);
        if ((st = need(r, (size_t)len, what))) return st;
        g->tok[i] = (const char *)r->data + r->pos;
        g->tok_len[i] = (uint32_t)len;
        r->pos += (size_t)len;
    }
    g->n_tokens = n;
    return ENCDEC_OK;
}

/* Reads one tensor header and its data; adds it to t. */
static encdec_status read_tensor(reader *r, ed_wtab *t, int index) {
    int32_t n_dims, name_len, type;
    char what[64];
    size_t at = r->pos;
    snprintf(what, sizeof what, "tensor %d dimension count", index);
    encdec_status st = read_in(r, &n_dims, 1, ED_MAX_DIMS, what);
    snprintf(what, sizeof what, "tensor %d name length", index);
    if (!st) st = read_in(r, &name_len, 1, 255, what);
    snprintf(what, sizeof what, "tensor %d type", index);
    if (!st) st = read_in(r, &type, 0, 1 << 16, what);
    int32_t ne[ED_MAX_DIMS];
    snprintf(what, sizeof what, "tensor %d size", index);
    for (int i = 0; i < n_dims && !st; i++) st = read_in(r, &ne[i], 1, 1 << 24, what);
    snprintf(what, sizeof what, "tensor %d name", index);
    if (!st) st = need(r, (size_t)name_len, what);
    if (st) return st;
    char name[256], hf[320];
    memcpy(name, r->data + r->pos, (size_t)name_len);
    name[name_len] = 0;
    r->pos += (size_t)name_len;
    if (strlen(name) != (size_t)name_len)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %d at byte %zu has a name with a NUL byte",
                       r->path, index, at);
    ed_tensor x = {.file = r->path, .ndim = n_dims};
    size_t count = 1;
    for (int i = 0; i < n_dims; i++) {
        x.shape[i] = ne[n_dims - 1 - i];
        if (!ed_mul_ok(count, (size_t)ne[i], &count))
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s is too large", r->path, name);
    }
    const qtype *q = find_qtype(type);
    size_t bytes;
    if (type == 0 || type == 1) {
        bytes = count * (type == 0 ? 4 : 2);
    } else if (q) {
        if (ne[0] % QK)
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s is %s but its rows of %d values are "
                           "not whole blocks of %d", r->path, name, q->name, ne[0], QK);
        bytes = count / QK * q->block_bytes;
    } else {
        return ed_fail(ENCDEC_ERR_DTYPE, "%s: tensor %s has ggml type %d; this reader takes f32 "
                       "(0), f16 (1), q4_0 (2), q4_1 (3), q5_0 (6), q5_1 (7) and q8_0 (8)",
                       r->path, name, type);
    }
    snprintf(what, sizeof what, "tensor %.40s data", name);
    if ((st = need(r, bytes, what))) return st;
    const uint8_t *src = r->data + r->pos;
    r->pos += bytes;
    if (q) {   /* expanded to f16 */
        uint16_t *h = wtab_alloc(t, count * 2, "dequantized weights");
        if (!h) return ENCDEC_ERR_NOMEM;
        float blk[QK];
        for (size_t b = 0; b < count / QK; b++) {
            dequant_block(type, src + b * q->block_bytes, blk);
            for (int j = 0; j < QK; j++) h[b * QK + (size_t)j] = ed_f2h(blk[j]);
        }
        src = (const uint8_t *)h;
        bytes = count * 2;
    }
    x.dtype = type == 0 ? ED_F32 : ED_F16;
    x.nbytes = bytes;
    x.data = src;
    x.name = hf_name(name, hf, sizeof hf) ? hf : name;
    /* the conv biases: [n, 1] -> [n] */
    if (x.ndim == 2 && x.shape[1] == 1 && strstr(x.name, ".conv") && strstr(x.name, ".bias"))
        x.ndim = 1;
    st = wtab_add(t, &x);
    if (st) ed_err_prefix("%s", r->path);
    return st;
}

encdec_status ggml_load_file(ed_wtab *t, const char *path, ggml_whisper *g) {
    memset(g, 0, sizeof *g);
    ed_fmap m;
    encdec_status st = ed_fmap_open(&m, path);
    if (st) return st;
    reader r = {m.data, 0, m.size, path};
    if ((st = wtab_keep_map(t, m))) return st;
    if ((st = read_hparams(&r, g)) || (st = read_filters(&r)) || (st = read_vocab(&r, t, g)))
        return st;
    for (int i = 0; r.pos < r.size; i++)
        if ((st = read_tensor(&r, t, i))) return st;
    if (wtab_count(t) == 0)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: the file ends after its vocabulary: no tensors",
                       path);
    return ENCDEC_OK;
}

int ggml_is_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint8_t b[4] = {0};
    size_t n = fread(b, 1, 4, f);
    fclose(f);
    return n == 4 && ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                      (uint32_t)b[3] << 24) == GGML_MAGIC;
}
