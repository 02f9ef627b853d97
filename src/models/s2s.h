/* s2s.h - the text-to-text families (T5, the BART family) behind one table
 * of calls, for the code that runs either without knowing which
 * (api/generate.c, api/session.c, the engine's sched/fam_text.c).
 *
 *   const s2s_model *sm = ...;               made by api/model.c at load
 *   void *s;  sm->ops->state_new(&s, sm->model, pool, KV_F32);
 *   sm->ops->reserve(s, &shape);  sm->ops->encode(s, ids, start, len, B);
 *   rn_model rm = sm->ops->rn_model(s, width);      behind decode/runner.h
 *
 * Each family's functions keep their own contracts (t5.h, bart.h); the
 * shapes are one struct.
 */
#ifndef ED_S2S_H
#define ED_S2S_H

#include "encdec.h"
#include "base/pool.h"
#include "core/kvcache.h"
#include "decode/runner.h"
#include "models/xattn.h"
#include "tok/text.h"

/* What one request needs of a state; reserve grows the buffers to fit. */
typedef struct {
    int n_tokens;    /* input tokens of all inputs */
    int t_max;       /* longest input */
    int n_inputs;
    int n_slots;     /* decoder sequences (inputs x beams or samples) */
    int n_ctx;       /* decoder positions per sequence */
    int n_rows;      /* rows one decoder pass takes, when more than n_slots and n_ctx
                        (teacher-forced passes over many sequences; 0: none) */
} s2s_shape;

/* The parts of a state the engine's family rewires (its decoder state
 * reads every place's cross cache). */
typedef struct {
    kv_cross *cross;     /* [n_inputs] the current inputs' cross caches (views) */
    int *slot_input;     /* [n_slots] the input each sequence reads */
    kv_self *self;
    int *invariant;      /* 1: batch-invariant decoder products */
    int max_rows;        /* rows one decoder pass takes */
} s2s_view;

typedef struct {
    encdec_status (*state_new)(void **out, const void *model, ed_pool *pool, kv_dtype cross_type);
    void (*state_free)(void *s);
    encdec_status (*reserve)(void *s, const s2s_shape *need);
    /* packed encoder over B inputs, then (encode_cross) every input's cross K/V */
    void (*encode)(void *s, const int *ids, const int *start, const int *len, int B);
    void (*cross)(void *s);
    void (*decode)(void *s, int R, const int *tok, const int *pos, const int *slot,
                   const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits);
    rn_model (*rn_model)(void *s, int width);
    s2s_view (*view)(void *s);
    /* 1 when inputs packed in one encoder pass get, bitwise, what they get alone */
    int (*encode_invariant)(const void *model);
    /* waits for the state's device (nothing on the CPU) and returns its first
     * failure, named (sticky: a failed device stays failed) */
    encdec_status (*status)(void *s);
    /* Optional (NULL: exact logits only): screened logits (models/screen.h)
     * as rn_model has them: screen(s, on) before a decode; logit_err and
     * logit_exact for row i of the last decode's logits. */
    void (*screen)(void *s, int on);
    float (*logit_err)(void *s, int row);
    void (*logit_exact)(void *s, int row, const int *ids, int n, float *out);
    /* Optional (NULL: none): the decoder's attention as CTranslate2 returns
     * it (models/xattn.h): xattn(s, on, ld) before a pass turns the capture
     * of its alignment heads' scores on or off, ld scores a row (0: the
     * state's longest input; a kept buffer keeps its layout, xattn_of's
     * ld); xattn_of(s) has the last pass's. */
    encdec_status (*xattn)(void *s, int on, int ld);
    const md_xattn *(*xattn_of)(const void *s);
} s2s_ops;

/* A loaded text-to-text model, as generation sees it. */
typedef struct {
    const s2s_ops *ops;
    const void *model;         /* t5_model or bart_model */
    const ed_ttok *tok;
    const char *model_type;    /* config.json's */
    int n_vocab, n_positions, eos, dec_start;
    int forced_bos;            /* the first generated token, forced (mBART-50, M2M100 and
                                  NLLB's target language, BART's <s>); -1: none */
    int n_dec_layer, n_head, head_dim;   /* the cross cache's shape */
    int align_heads;           /* the heads xattn captures (CTranslate2's alignment_heads) */
    int *suppress;             /* the generation config's one-token bad_words_ids: banned at
                                  every step (owned; api/gen_config.c) */
    int n_suppress;
    int n_bad_long;            /* its longer bad_words_ids entries, not applied */
    int forced_eos;            /* forced_eos_token_id (config.json, generation_config.json's
                                  over it), -1: none */
    int n_src_vocab;           /* the encoder's vocabulary: input ids are below it (n_vocab,
                                  the decoder's, but where they are separate: Marian's) */
} s2s_model;

extern const s2s_ops t5_s2s_ops, bart_s2s_ops;

#endif
