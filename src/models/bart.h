/* bart.h - the BART family (BART, mBART, Marian / OPUS-MT, M2M100 and
 * NLLB-200, Pegasus): one transformer with learned or sinusoidal absolute
 * positions, layer norms before (pre-norm) or after (post-norm) each block,
 * biased projections; the variants are data (bart_variant: what config.json's
 * model_type implies), never code paths of their own.
 *
 *   bart_model *m;   bart_load(&m, "models/opus-mt-en-de");
 *   bart_state *s;   bart_state_new(&s, m, pool, KV_F32);
 *   bart_state_reserve(s, &shape);              grow-only: once per request shape
 *   bart_encode(s, ids, start, len, B);         packed encoder over B inputs
 *   bart_cross_compute(s);                      cross K/V of all inputs and layers, once
 *   bart_decode(s, R, tok, pos, slot, ...);     one decoder pass over R rows
 *   rn_model rm = bart_rn_model(s, width);      behind the decoding seam (decode/runner.h)
 *
 * Shapes: d = d_model; each stack has its own heads (H_e, H_d) and
 * feed-forward width (F_e, F_d); the attention width is d in both (head
 * d / H). V = the decoder's vocabulary (Marian may have a separate encoder
 * one), L = decoder layers. As for T5 and Whisper, the projections are fused
 * the way the kernels want them: Q|K|V [3d, d] with bias [3d], and the cross
 * K|V of ALL decoder layers [L * 2d, d] with bias [L * 2d], so that a
 * request's cross cache is one matrix product over the encoder output of all
 * its inputs. HF scales the query by head^-0.5 after its bias; here the
 * attention scores are (q . k) * head^-0.5, the same product.
 *
 * Positions: a table per stack, row p for position p (BART's offset of 2 and
 * M2M100's padding index + 1 already applied; computed at load for the
 * sinusoidal kinds), divided by the embedding scale where there is one, so
 * that (token + position / scale) * scale is HF's token * scale + position
 * (exactly when the scale is a power of two: d = 64, 256, 1024, 4096).
 */
#ifndef ED_BART_H
#define ED_BART_H

#include "encdec.h"
#include "base/pool.h"
#include "core/kvcache.h"
#include "core/ops.h"
#include "decode/runner.h"
#include "io/tensor.h"
#include "models/s2s.h"
#include "models/screen.h"
#include "models/wload.h"
#include "models/xattn.h"

struct cJSON;

#define BART_XKV_ROWS 256   /* the cross K|V product runs in blocks of this many tokens */

typedef enum {
    BART_POS_LEARNED,       /* embed_positions.weight [n_pos + 2, d], row p + 2 (BART, mBART) */
    BART_POS_SIN_HALVES,    /* sin(p / 10000^(2i/d)) in columns [0, d/2), cos in the rest
                               (Marian, Pegasus); a stored table is used when present */
    BART_POS_SIN_FAIRSEQ    /* fairseq's: half = d/2, freq_i = exp(-i log(10^4) / (half - 1)),
                               sin | cos of (p + pad + 1) freq_i (M2M100, NLLB) */
} bart_pos_kind;

/* What a model_type implies (the rows of bart_variants in bart_load.c). */
typedef struct {
    const char *model_type;
    int pre_norm;           /* 1: norm -> block -> + residual, and a final norm per stack */
    int ln_embedding;       /* layernorm_embedding after the embeddings (BART, mBART) */
    bart_pos_kind pos;
    int logits_bias;        /* final_logits_bias exists (absent from a file: zeros) */
    const char *act;        /* config default activation_function */
    int scale;              /* config default scale_embedding */
} bart_variant;

typedef struct {
    const float *ln1_g, *ln1_b;        /* self_attn_layer_norm */
    k_w w_qkv;                         /* [3d, d] */
    const float *b_qkv;                /* [3d] */
    k_w w_o;                           /* [d, d] */
    const float *b_o;
    const float *lnx_g, *lnx_b;        /* decoder: encoder_attn_layer_norm */
    k_w w_xq, w_xo;                    /* decoder: cross Q [d, d], output [d, d]; K|V in w_xkv */
    const float *b_xq, *b_xo;
    const float *ln2_g, *ln2_b;        /* final_layer_norm (of the layer) */
    k_w w_fc1;                         /* [F, d] */
    const float *b_fc1;
    k_w w_fc2;                         /* [d, F] */
    const float *b_fc2;
} bart_layer;

typedef struct {
    int d, n_enc_layer, n_dec_layer, enc_heads, dec_heads, enc_ffn, dec_ffn;
    int n_vocab;            /* decoder (output) vocabulary */
    int enc_vocab;          /* encoder's (= n_vocab unless Marian's are separate) */
    int n_positions;        /* max_position_embeddings: most tokens per input and per output */
    float eps;              /* 1e-5 (torch.nn.LayerNorm) */
    float emb_scale;        /* sqrt(d) with scale_embedding, else 1 */
    op_act act;
    int tied;               /* lm_head = the decoder's embedding */
    int shared;             /* the encoder and decoder embeddings are one */
    int pad, eos, bos, dec_start;   /* bos -1: none */
    int forced_bos, forced_eos;     /* config's forced_*_token_id, -1: none */
    int align_layer, align_heads;   /* the decoder's attention as CTranslate2 returns it: its
                                       layer (0..L-1) and its first heads averaged; from a
                                       CTranslate2 directory's spec, else its defaults (the
                                       last layer, one head) */
    int src_bos, src_eos;   /* CTranslate2's add_source_bos / add_source_eos: its Translator
                               adds <s> / </s> to a token input (encdec_model_info) */
} bart_hparams;

typedef struct bart_model {
    bart_hparams hp;
    const bart_variant *var;
    char act_name[24];
    k_w enc_emb, dec_emb;              /* [enc_vocab, d], [V, d]; one when shared */
    const float *enc_pos, *dec_pos;    /* [n_positions, d], row p = position p, / emb_scale */
    const float *enc_lne_g, *enc_lne_b, *dec_lne_g, *dec_lne_b;   /* layernorm_embedding */
    const float *enc_ln_g, *enc_ln_b, *dec_ln_g, *dec_ln_b;       /* pre-norm: final norms */
    bart_layer *enc, *dec;
    k_w w_xkv;                         /* [L * 2d, d]: layer l's K rows at l*2d, V at l*2d + d */
    const float *b_xkv;                /* [L * 2d] */
    k_w lm_head;                       /* [V, d] (= dec_emb when tied) */
    const float *logits_bias;          /* [V] or NULL */
    md_screen screen;                  /* lm_head's screen (models/screen.h); w.p NULL: none */
    ed_wtab *wt;
    size_t weight_bytes;
    int ct2;                           /* read from a CTranslate2 directory (bart_ct2.c) */
    /* a device copy (bart_upload): its device and the block its weights live in */
    void *dev;
    void *dev_mem;
} bart_model;

/* bart_ct2.c: a CTranslate2 TransformerSpec's tensors in wt (names as in
 * model.bin) given Hugging Face's names too, and the config.json
 * transformers would have written (*config, the caller frees), from the
 * spec's attributes and dir's config.json and shared vocabulary. */
encdec_status bart_ct2_adapt(ed_wtab *wt, const char *dir, struct cJSON **config);

/* The variant a config.json model_type names, or NULL. */
const bart_variant *bart_variant_of(const char *model_type);

/* Loads a Hugging Face directory of the family (config.json and
 * model.safetensors, or its sharded index), or a .safetensors file with a
 * config.json beside it. Validates the configuration and every tensor's
 * shape and dtype. The tokenizer is the caller's (api/). */
encdec_status bart_load(bart_model **out, const char *path);
void bart_free(bart_model *m);
/* The weight matrices (for wl_convert); a tied or shared embedding is
 * listed once per use. */
int bart_matrices(bart_model *m, wl_mat *out, int cap);
/* The model's weights on dev (core/dev.h's ed_dev; mode: an encdec_compute,
 * matrices in f32, bf16 or int8 as models/mdev.h says),
 * a copy whose states run there (models/mdev.h). bart_dev_free frees the
 * copy only. */
encdec_status bart_upload(const bart_model *m, void *dev, int mode, bart_model **out);
void bart_dev_free(bart_model *g);
/* lm_head's screen (models/screen.h), where it pays (min_elems: usually
 * MD_SCREEN_MIN): an f32 model on the CPU (after wl_convert; counted in
 * weight_bytes). */
encdec_status bart_screen(bart_model *m, size_t min_elems);

/* ---- per-session state ---- */

typedef s2s_shape bart_shape;   /* models/s2s.h */

typedef struct bart_state {
    const bart_model *m;
    ed_pool *pool;
    bart_shape cap, cur;
    int max_rows;            /* rows one bart_decode call accepts: max(n_slots, n_ctx) */
    int *in_start, *in_len;  /* [n_inputs] the current inputs, packed */
    int *e_pos;              /* [Ttot] each packed token's position in its input */
    int *slot_input;         /* [n_slots] */
    int *row_input;          /* [max_rows] */
    float *enc_out;          /* [Ttot, d] */
    float *e_x, *e_n, *e_qkv, *e_att, *e_h;   /* [Ttot, d|d|3d|d|F_e] */
    kv_self self;            /* [L, n_slots, n_ctx, d] x 2 */
    float *xkv;              /* [min(Ttot, BART_XKV_ROWS), L * 2d] */
    kv_dtype cross_type;
    float *cross_buf;        /* input b's [L, 2, H_d, T_b, head] at L*2d*start[b] */
    kv_cross *cross;         /* [n_inputs] views into cross_buf */
    float *scores;
    size_t scores_stride;
    float *d_x, *d_n, *d_qkv, *d_att, *d_q, *d_h;   /* [max_rows, d|d|3d|d|d|F_d] */
    int invariant;           /* 1: decoder products batch-invariant (the engine's state) */
    md_screen_state scr;     /* screened logits (models/screen.h) */
    md_xattn xattn;          /* the alignment heads' cross-attention scores (models/xattn.h) */
    /* on a device: the model's; the buffers above in its memory; the logits
     * on their way to the host; the device's first failure (sticky) */
    void *dev;
    float *d_logits;
    encdec_status status;
} bart_state;

encdec_status bart_state_new(bart_state **out, const bart_model *m, ed_pool *pool, kv_dtype cross_type);
void bart_state_free(bart_state *s);
encdec_status bart_state_reserve(bart_state *s, const bart_shape *need);

/* Encoder over B inputs packed back to back (ids[Ttot], input b at rows
 * [start[b], start[b] + len[b]), each attending only to itself). Result in
 * s->enc_out. Row-invariant products where bart_encode_invariant. */
void bart_encode(bart_state *s, const int *ids, const int *start, const int *len, int B);
int bart_encode_invariant(const bart_model *m);
/* Cross K/V of every input and decoder layer from s->enc_out. */
void bart_cross_compute(bart_state *s);
/* One decoder pass over R rows (t5.h's t5_decode contract). */
void bart_decode(bart_state *s, int R, const int *tok, const int *pos, const int *slot,
                 const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits);
rn_model bart_rn_model(bart_state *s, int width);

#endif
