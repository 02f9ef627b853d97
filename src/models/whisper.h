/* whisper.h - the Whisper model family: weights (read-only, shared), and the
 * per-session state that runs the encoder and the cached decoder.
 *
 *   whisper_model *m;  whisper_load(&m, "models/whisper-tiny.en");
 *   whisper_state *s;  whisper_state_new(&s, m, pool, n_slots, KV_F32);
 *   whisper_encode(s, mel);                 encoder output of one 30 s window
 *   whisper_cross_compute(s);               cross K/V of all layers, once
 *   whisper_decode(s, R, tok, pos, slot, tab, tab_ld, ...);   per step
 *   rn_model rm = whisper_rn_model(s);      behind the decoding seam (decode/runner.h)
 *
 * Shapes use d = d_model, T = n_audio_ctx (1500), n_ctx = n_text_ctx (448),
 * V = n_vocab, L = decoder layers, H = heads, dh = d / H, F = ffn width.
 * Weights are f32 after loading: borrowed from the file mapping when stored
 * as f32, converted once otherwise (fp16 CTranslate2 files). Projections are
 * stored fused the way the kernels want them: self-attention Q|K|V as one
 * [3d, d] matrix, and the cross-attention K|V of ALL decoder layers as one
 * [L * 2d, d] matrix so that the cross cache is one matrix product.
 */
#ifndef ED_WHISPER_H
#define ED_WHISPER_H

#include "encdec.h"
#include "base/pool.h"
#include "core/kvcache.h"
#include "models/xattn.h"
#include "decode/runner.h"
#include "io/tensor.h"
#include "kern/kern.h"
#include "models/wload.h"
#include "tok/bpe.h"

typedef struct {
    const float *ln1_g, *ln1_b;   /* [d] */
    k_w w_qkv;                    /* [3d, d] */
    const float *b_qkv;           /* [3d] (the K bias is zero) */
    k_w w_o;                      /* [d, d] */
    const float *b_o;             /* [d] */
    const float *ln2_g, *ln2_b;   /* [d] */
    k_w w_fc1;                    /* [F, d] */
    const float *b_fc1;           /* [F] */
    k_w w_fc2;                    /* [d, F] */
    const float *b_fc2;           /* [d] */
} whisper_enc_layer;

typedef struct {
    const float *ln1_g, *ln1_b;   /* self-attention block */
    k_w w_qkv;                    /* [3d, d] */
    const float *b_qkv;           /* [3d] */
    k_w w_o;                      /* [d, d] */
    const float *b_o;             /* [d] */
    const float *lnx_g, *lnx_b;   /* cross-attention block */
    k_w w_xq;                     /* [d, d]; K|V live in whisper_model.w_xkv */
    const float *b_xq;            /* [d] */
    k_w w_xo;                     /* [d, d] */
    const float *b_xo;            /* [d] */
    const float *ln2_g, *ln2_b;   /* MLP block */
    k_w w_fc1;                    /* [F, d] */
    const float *b_fc1;           /* [F] */
    k_w w_fc2;                    /* [d, F] */
    const float *b_fc2;           /* [d] */
} whisper_dec_layer;

typedef struct {
    int n_mels, n_audio_ctx, n_text_ctx, d, n_head, n_enc_layer, n_dec_layer, ffn, n_vocab;
} whisper_hparams;

/* Token ids that the decoding rules need; -1 when the vocabulary has none. */
typedef struct {
    int eot, sot, translate, transcribe, sot_lm, sot_prev, no_speech, no_timestamps;
    int timestamp_begin;   /* <|0.00|> */
    int lang_first;        /* <|en|>: languages follow in Whisper's order */
    int n_langs;
} whisper_special;

typedef struct whisper_model {
    whisper_hparams hp;
    whisper_special sp;
    int multilingual;
    const char *format;                  /* "safetensors", "ctranslate2" or "ggml" */
    k_w conv1_w;                         /* [d, 3, n_mels]: tap-major (see encode) */
    const float *conv1_b;                /* [d] */
    k_w conv2_w;                         /* [d, 3, d] */
    const float *conv2_b;                /* [d] */
    const float *enc_pos;                /* [T, d] */
    whisper_enc_layer *enc;              /* [n_enc_layer] */
    const float *enc_ln_g, *enc_ln_b;    /* [d] */
    k_w tok_emb;                         /* [V, d], also the output projection */
    const float *dec_pos;                /* [n_ctx, d] */
    whisper_dec_layer *dec;              /* [n_dec_layer] */
    const float *dec_ln_g, *dec_ln_b;    /* [d] */
    k_w w_xkv;                           /* [L * 2d, d]: layer l's K rows at l*2d,
                                            its V rows at l*2d + d */
    const float *b_xkv;                  /* [L * 2d] */
    int *suppress;                       /* [n_suppress] ids never generated */
    int n_suppress;
    int *begin_suppress;                 /* [n_begin_suppress] not generated first */
    int n_begin_suppress;
    int *align_heads;                    /* [n_align_heads, 2]: (decoder layer, head) pairs
                                            whose cross attention follows the speech */
    int n_align_heads;
    bpe_tok *tok;
    ed_wtab *wt;                         /* owns mappings and converted weights */
    size_t weight_bytes;                 /* as used for compute (halves stay halves) */
    /* a device copy (whisper_upload): the device (core/dev.h) and its one
     * block of weights; NULL on the host */
    void *dev;
    void *dev_mem;
} whisper_model;

/* Loads a model directory (or a .safetensors file in one). Validates every
 * tensor's presence, dtype and shape against the configuration first. */
encdec_status whisper_load(whisper_model **out, const char *path);
void whisper_free(whisper_model *m);
/* A copy of m's weights on device dev (core/dev.h's ed_dev): matrices in
 * f32, bf16 or int8 by mode (an encdec_compute; models/mdev.h), vectors f32; tokenizer and rules shared with m,
 * which must outlive it. Freed with whisper_dev_free. */
encdec_status whisper_upload(const whisper_model *m, void *dev, int mode, whisper_model **out);
void whisper_dev_free(whisper_model *g);
/* The weight matrices (for wl_convert): fills out[0, cap), returns how many
 * there are. */
int whisper_matrices(whisper_model *m, wl_mat *out, int cap);

/* ---- per-session state ---- */

typedef struct whisper_state {
    const whisper_model *m;
    ed_pool *pool;        /* borrowed from the session */
    int n_slots;          /* sequences that can decode at once */
    int max_rows;         /* rows one whisper_decode call accepts */
    kv_self self;         /* [L, n_slots, n_ctx, d] x 2 */
    kv_cross cross;       /* [L, 2, H, T, dh] */
    float *enc_out;       /* [T, d] encoder output of the current input */
    /* encoder scratch */
    float *e_x;           /* [T, d] residual stream */
    float *e_h;           /* [T, max(3d, F)] */
    float *e_a;           /* [T, d] attention output / LayerNorm output */
    float *e_mel;         /* [2T + 2, n_mels] the mel frames time-major, a zero frame each end */
    float *e_col;         /* [2T, max(n_mels, d) * 3] conv windows where not read in place */
    float *e_conv;        /* [2T + 2, d] conv1 output, a zero frame each end */
    float *xkv;           /* [xkv_rows, L * 2d] all layers' cross K|V of a block of
                             frames before re-layout (e_col's memory) */
    int xkv_rows;
    float *scores;        /* [n_threads, OP_ATTN_ROWS * max(T, n_ctx)] */
    size_t scores_stride;
    /* decoder scratch, [max_rows, *] */
    float *d_x, *d_ln, *d_qkv, *d_att, *d_h, *d_q;
    /* word alignment (whisper_align_capture): while on, whisper_decode
     * keeps the raw cross-attention scores q.k / sqrt(dh) of the model's
     * alignment heads for every row (models/xattn.h) */
    md_xattn align;
    /* several inputs in one pass (the engine's state): sequence (slot) q
     * reads the cross cache xc[slot_xc[q]]; NULL: every row reads `cross` */
    const kv_cross *xc;
    const int *slot_xc;   /* [n_slots] */
    int *row_xc;          /* [max_rows] scratch */
    int invariant;        /* 1: every product batch-invariant (op_matmul_w_inv): a row's
                             logits do not depend on the other rows of its pass */
    /* on a device (the pool's, core/dev.h): every buffer above is its
     * memory but scores (NULL) and row_xc; the mel and the logits pass
     * through e_in and d_logits, the alignment scores through align's host copy */
    void *dev;
    float *e_in;          /* [n_mels, 2T] */
    float *d_logits;      /* [max_rows, V] */
    encdec_status status; /* the device's first failure (sticky): whisper_state_status */
} whisper_state;

/* The most sequence slots a state holds: the engine's 256 requests of 17
 * (16 beams or samples and the prompt's) each. */
#define WHISPER_MAX_SLOTS 8192

/* n_slots: sequences decoded together (1 for greedy). The state can also run
 * the whole context at once (max_rows = max(n_slots, n_ctx)): prompts and the
 * uncached mode need it. */
encdec_status whisper_state_new(whisper_state **out, const whisper_model *m, ed_pool *pool,
                                int n_slots, kv_dtype cross_type);
void whisper_state_free(whisper_state *s);

/* Encoder: mel [n_mels, 2T] -> s->enc_out [T, d]. */
void whisper_encode(whisper_state *s, const float *mel);

/* Cross K/V of every decoder layer from s->enc_out into s->cross: one
 * [T, d] x [d, L*2d] product, then a re-layout to head-major. */
void whisper_cross_compute(whisper_state *s);
/* The same into another input's cache (the engine's, one per request). */
void whisper_cross_compute_into(whisper_state *s, kv_cross *dst);

/* One decoder pass over R rows: row r is token tok[r] at position pos[r] of
 * the sequence in slot[r], whose earlier positions t live in the self cache
 * at slot tab[slot[r] * tab_ld + t] (the index table; a row's own position
 * is written to its own slot, and tab must say so). Rows of one slot are
 * consecutive with increasing, contiguous positions. Every row attends to
 * the cross cache (which must be computed): s->cross, or with s->slot_xc
 * set the cache of its sequence's input (rows of one input consecutive). For the n_out rows listed in
 * out_rows, logits[n_out, V] are written. R <= s->max_rows. */
void whisper_decode(whisper_state *s, int R, const int *tok, const int *pos, const int *slot,
                    const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits);

/* Turns the capture of the alignment heads' scores on (allocating its
 * buffer the first time: n_align_heads x max_rows x T floats) or off. While
 * on, each whisper_decode call writes, for alignment head a and row r, the
 * scores of r's cross-attention query against every encoder position into
 * whisper_align_scores(s, a) + r * T (all rows of the last call). */
encdec_status whisper_align_capture(whisper_state *s, int on);
const float *whisper_align_scores(const whisper_state *s, int a);

/* ENCDEC_OK, or the first device failure of any pass so far, named (its
 * message set when it happened): after one, every decode row gets logits
 * that end it (only <|endoftext|> possible). */
encdec_status whisper_state_status(const whisper_state *s);

/* The state behind decode/runner.h: every sequence reads the one cross cache. */
rn_model whisper_rn_model(whisper_state *s);

#endif
