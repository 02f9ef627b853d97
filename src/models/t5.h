/* t5.h - the T5 family (T5 v1.0, T5 v1.1 / Flan-T5, mT5, umT5): weights
 * (read-only, shared), and the per-session state that runs the encoder over
 * a batch of inputs and the cached decoder.
 *
 *   t5_model *m;   t5_load(&m, "models/flan-t5-small");
 *   t5_state *s;   t5_state_new(&s, m, pool, KV_F32);
 *   t5_state_reserve(s, &shape);              grow-only: once per request shape
 *   t5_encode(s, ids, start, len, B);         packed encoder over B inputs
 *   t5_cross_compute(s);                      cross K/V of all inputs and layers, once
 *   t5_decode(s, R, tok, pos, slot, ...);     one decoder pass over R rows
 *   rn_model rm = t5_rn_model(s, width);      behind the decoding seam (decode/runner.h)
 *
 * Shapes: d = d_model, I = inner = n_head * d_kv (not always d: flan-t5-small
 * has 6 x 64 = 384 against d 512), F = d_ff, V = vocabulary, L = decoder
 * layers, H = heads, dh = d_kv; Ttot = tokens of all inputs of a request,
 * T_b = tokens of input b. Weight matrices are kept as stored (k_w: f32,
 * f16 or bf16); norms and bias tables are f32. As for Whisper,
 * projections are fused the way the kernels want them: Q|K|V [3I, d], the
 * gated feed-forward's two input projections [2F, d], and the cross K|V of
 * ALL decoder layers [L * 2I, d], so that the cross cache of a request is
 * one matrix product over the encoder output of all its inputs.
 *
 * Position information is T5's relative attention bias: a learned [buckets,
 * H] table read through a bucket of (key - query). It depends on the
 * relative position only, so each layer's bias is a Toeplitz vector per
 * head, computed once per request length (not per step or per row).
 */
#ifndef ED_T5_H
#define ED_T5_H

#include "encdec.h"
#include "base/pool.h"
#include "core/kvcache.h"
#include "core/ops.h"
#include "decode/runner.h"
#include "io/tensor.h"
#include "models/s2s.h"
#include "models/screen.h"
#include "models/xattn.h"
#include "models/wload.h"
#include "tok/spm.h"

/* The cross K|V product of a pass runs in blocks of this many tokens (its
 * output for every packed token at once would take as much memory as the
 * cross caches themselves: 74 KB a token for t5-base). */
#define T5_XKV_ROWS 256

typedef struct {
    const float *ln1;             /* [d] RMSNorm weight, self-attention block */
    k_w w_qkv;                    /* [3I, d] */
    k_w w_o;                      /* [d, I] */
    const float *rel_bias;        /* [buckets, H] or NULL (then layer 0's is used) */
    const float *ln2;             /* [d] feed-forward block */
    k_w w_wi;                     /* [F, d], or [2F, d] when gated: wi_0 rows then wi_1 */
    k_w w_wo;                     /* [d, F] */
} t5_enc_layer;

typedef struct {
    const float *ln1;             /* self-attention, as the encoder's */
    k_w w_qkv, w_o;
    const float *rel_bias;
    const float *lnx;             /* [d] cross-attention block */
    k_w w_xq;                     /* [I, d]; K|V live in t5_model.w_xkv */
    k_w w_xo;                     /* [d, I] */
    const float *ln2;
    k_w w_wi, w_wo;
} t5_dec_layer;

typedef struct {
    int d, d_kv, n_head, inner, d_ff;
    int n_enc_layer, n_dec_layer, n_vocab;
    int n_buckets, max_distance;
    int n_positions;              /* most input tokens accepted (config n_positions, 512) */
    float eps;
    op_act act;
    int gated;                    /* feed_forward_proj "gated-*" */
    int tied;                     /* tie_word_embeddings: lm_head = embedding, output * d^-0.5 */
    int bias_every_layer;         /* umT5: every layer has its own relative bias */
    int pad, eos, dec_start;
} t5_hparams;

typedef struct t5_model {
    t5_hparams hp;
    char model_type[16];          /* "t5", "mt5" or "umt5" */
    char ffn_name[24];            /* feed_forward_proj as configured */
    k_w emb;                      /* [V, d] shared input embedding */
    t5_enc_layer *enc;
    const float *enc_ln;          /* [d] */
    t5_dec_layer *dec;
    const float *dec_ln;          /* [d] */
    k_w lm_head;                  /* [V, d] (= emb when tied) */
    md_screen screen;             /* lm_head's screen (models/screen.h); w.p NULL: none */
    k_w w_xkv;                    /* [L * 2I, d]: layer l's K rows at l*2I, V rows at l*2I + I */
    spm_tok *tok;
    ed_wtab *wt;
    size_t weight_bytes;
    /* a device copy (t5_upload): its device, the block its matrices and
     * vectors live in (the relative-bias tables stay on the host: the
     * Toeplitz vectors are built there and uploaded per shape) */
    void *dev;
    void *dev_mem;
} t5_model;

/* Loads a Hugging Face T5-family directory (config.json, model.safetensors or
 * its sharded index, tokenizer.json or spiece.model), or a .safetensors file
 * with those beside it. Validates the configuration, every tensor's shape and
 * dtype, and the tokenizer against the vocabulary before returning. */
encdec_status t5_load(t5_model **out, const char *path);
void t5_free(t5_model *m);
/* The weight matrices (for wl_convert): fills out[0, cap), returns how many
 * there are. The tied embedding is listed twice (as emb and lm_head). */
int t5_matrices(t5_model *m, wl_mat *out, int cap);

/* The model's weights on dev (core/dev.h's ed_dev; mode: an encdec_compute,
 * matrices in f32, bf16 or int8 as models/mdev.h says):
 * a copy sharing m's tokenizer, whose states run on that device
 * (models/mdev.h). t5_dev_free frees the copy only. */
encdec_status t5_upload(const t5_model *m, void *dev, int mode, t5_model **out);
void t5_dev_free(t5_model *g);
/* lm_head's screen (models/screen.h), where it pays (min_elems: usually
 * MD_SCREEN_MIN): an f32 model on the CPU (after wl_convert; counted in
 * weight_bytes). */
encdec_status t5_screen(t5_model *m, size_t min_elems);

/* Relative position bucket of key - query = rel, as T5 defines it
 * (bidirectional: the encoder; else causal: the decoder). */
int t5_bucket(int rel, int bidirectional, int n_buckets, int max_distance);

/* ---- per-session state ---- */

typedef s2s_shape t5_shape;   /* models/s2s.h */

typedef struct t5_state {
    const t5_model *m;
    ed_pool *pool;           /* borrowed from the session */
    t5_shape cap;            /* what the buffers hold now */
    t5_shape cur;            /* the current request */
    int max_rows;            /* rows one t5_decode call accepts: max(n_slots, n_ctx) */
    /* the current inputs: packed rows [start[b], start[b] + len[b]) */
    int *in_start, *in_len;  /* [n_inputs] */
    int *slot_input;         /* [n_slots] input that each decoder sequence reads */
    int *row_input;          /* [max_rows] input of each row of the current decode call */
    /* encoder */
    float *enc_out;          /* [Ttot, d] */
    float *e_x, *e_n, *e_qkv, *e_att, *e_h;   /* [Ttot, d|d|3I|I|2F] */
    float *enc_bias;         /* [n_bias, H, 2 t_max - 1], centre t_max - 1 */
    float *dec_bias;         /* [n_bias, H, n_ctx], centre n_ctx - 1 (distance 0) */
    int enc_bias_len, dec_bias_len;   /* lengths they were computed for (0: none) */
    /* caches */
    kv_self self;            /* [L, n_slots, n_ctx, I] x 2 */
    float *xkv;              /* [min(Ttot, T5_XKV_ROWS), L * 2I] the fused product of a
                                block of tokens before re-layout */
    kv_dtype cross_type;     /* element type of the cross cache */
    float *cross_buf;        /* room for [L * 2I * Ttot] f32: input b's [L, 2, H, T_b, dh] at L*2I*start[b] */
    kv_cross *cross;         /* [n_inputs] views into cross_buf */
    float *scores;           /* [n_threads, OP_ATTN_ROWS * max(t_max, n_ctx)] */
    size_t scores_stride;
    /* decoder scratch, [max_rows, *] */
    float *d_x, *d_n, *d_qkv, *d_att, *d_q, *d_h;
    int invariant;           /* 1: decoder products batch-invariant (op_matmul_w_inv), the
                                engine's state */
    md_screen_state scr;     /* screened logits (models/screen.h) */
    md_xattn xattn;          /* CTranslate2's alignment heads' scores (models/xattn.h): the
                                last decoder layer's first head, as its converter sets them */
    /* on a device: the model's, the buffers above in its memory, the
     * logits on their way to the host, a bias table's host copy, the
     * device's first failure (sticky) */
    void *dev;
    float *d_logits;
    float *bias_h;
    encdec_status status;
} t5_state;

encdec_status t5_state_new(t5_state **out, const t5_model *m, ed_pool *pool, kv_dtype cross_type);
void t5_state_free(t5_state *s);
/* Makes the buffers fit `need` (allocating only when it grows) and sets it
 * as the current request shape. */
encdec_status t5_state_reserve(t5_state *s, const t5_shape *need);

/* Encoder over B inputs packed back to back: ids[Ttot], input b at rows
 * [start[b], start[b] + len[b]). Each input attends only to itself (the
 * padding mask, without the padding). Result in s->enc_out [Ttot, d]. Also
 * computes the encoder bias table for the longest input, once. The
 * products are op_matmul_w_rows (see t5_encode_invariant). */
void t5_encode(t5_state *s, const int *ids, const int *start, const int *len, int B);

/* 1 when t5_encode and t5_cross_compute give each input of a pack,
 * bitwise, what they give it alone (their products are row-invariant here:
 * core/ops.h op_rows_invariant, under the calling thread's kernel-set
 * limit); then a scheduler may pack the inputs of different requests. */
int t5_encode_invariant(const t5_model *m);

/* Cross K/V of every input and decoder layer from s->enc_out: one
 * [Ttot, d] x [d, L*2I] product, then a re-layout to head-major per input. */
void t5_cross_compute(t5_state *s);

/* One decoder pass over R rows: row r is token tok[r] at position pos[r] of
 * the sequence in slot[r], whose earlier positions t live in the self cache
 * at slot tab[slot[r] * tab_ld + t] (the index table; the rows' own positions
 * are written to their own slot, and tab must already say so). Rows of one
 * slot are consecutive with increasing positions; rows of one input are
 * consecutive. For the n_out rows in out_rows, logits[n_out, V] (n_out 0: none; the
 * text families' passes for their caches or captured attention). */
void t5_decode(t5_state *s, int R, const int *tok, const int *pos, const int *slot,
               const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits);

/* The current request behind decode/runner.h: width sequences per input,
 * sequence g * width + j decoding input g (and reading its cross cache).
 * After t5_state_reserve with n_slots = inputs x width. */
rn_model t5_rn_model(t5_state *s, int width);
/* The device's first failure under s (sticky; ENCDEC_OK on the CPU). */
encdec_status t5_state_status(const t5_state *s);

#endif
