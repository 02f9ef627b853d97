/* fam_text.c - a text-to-text family (T5, the BART family: models/s2s.h)
 * behind the scheduler (family.h). Two states of the model's family:
 * `dec` holds every place's self cache and decoder scratch at a fixed
 * shape (places x slots sequences, n_ctx positions), so that a new request
 * never reallocates what others are decoding with; `enc` runs the encoder
 * over one request's input, or over several requests' inputs packed into
 * one pass (its buffers grow to the largest pack seen). Each input's cross
 * cache is then copied into its place's own; dec's cross table points at
 * the places' caches (input p = place p). */
#include "sched/family.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "core/dev.h"
#include "sched/sched.h"

#include <stdlib.h>
#include <string.h>

#define TEXT_MAX_PACK 16          /* inputs in one encoder pass */
#define TEXT_MAX_PACK_ROWS 1024   /* and their tokens (one input alone may have more) */

typedef struct {
    const s2s_model *m;
    ed_pool *pool;            /* the engine's (its device: the states' and caches') */
    void *enc, *dec;          /* the family's states */
    s2s_view dv;              /* dec's tables */
    kv_cross *xc;        /* [places] each place's input's cache */
    int places, slots, n_ctx;
    int frames;               /* a captured score row's length: the longest input */
    kv_dtype cross_type;
    int *ids;            /* a pack's tokens [cap_ids], then start and len [cap_in] each */
    int cap_ids, cap_in;
} tfam;

static void t_decode(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                     const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    tfam *t = ctx;
    t->m->ops->decode(t->dec, R, tok, pos, slot, tab, tab_ld, n_out, out_rows, logits);
}

static void t_screen(void *ctx, int on) {
    tfam *t = ctx;
    t->m->ops->screen(t->dec, on);
}

static float t_logit_err(void *ctx, int row) {
    tfam *t = ctx;
    return t->m->ops->logit_err(t->dec, row);
}

static void t_logit_exact(void *ctx, int row, const int *ids, int n, float *out) {
    tfam *t = ctx;
    t->m->ops->logit_exact(t->dec, row, ids, n, out);
}

/* The alignment heads' scores of the engine's passes (models/xattn.h), n_frames
 * (the model's longest input) a row: what a generation's kept attention
 * reads (decode/runner.h's rn_att, taken by the scheduler). */
static encdec_status t_scores_on(void *ctx, int on) {
    tfam *t = ctx;
    encdec_status st = t->m->ops->xattn(t->dec, on, t->frames);
    if (!st && on && t->m->ops->xattn_of(t->dec)->ld != t->frames)
        st = ed_fail(ENCDEC_ERR_ARG, "attention scores: %d positions a row, not %d",
                     t->m->ops->xattn_of(t->dec)->ld, t->frames);
    return st;
}

static const float *t_scores(const void *ctx, int a) {
    const tfam *t = ctx;
    return md_xattn_head(t->m->ops->xattn_of(t->dec), a);
}

/* The pack's inputs back to back: ids, start and len of each. */
static encdec_status pack(tfam *t, int n, const void *const *inputs, s2s_shape *shape) {
    *shape = (s2s_shape){0, 0, n, 1, 2};
    for (int i = 0; i < n; i++) {
        const sch_text_input *in = inputs[i];
        shape->n_tokens += in->n;
        if (in->n > shape->t_max) shape->t_max = in->n;
    }
    if (shape->n_tokens > t->cap_ids || n > t->cap_in) {
        free(t->ids);
        t->cap_ids = shape->n_tokens > t->cap_ids ? shape->n_tokens : t->cap_ids;
        t->cap_in = n > t->cap_in ? n : t->cap_in;
        t->ids = ed_alloc(sizeof(int) * ((size_t)t->cap_ids + 2 * (size_t)t->cap_in), "encoder inputs");
        if (!t->ids) {
            t->cap_ids = t->cap_in = 0;
            return ENCDEC_ERR_NOMEM;
        }
    }
    int *start = t->ids + t->cap_ids, *len = start + t->cap_in, at = 0;
    for (int i = 0; i < n; i++) {
        const sch_text_input *in = inputs[i];
        memcpy(t->ids + at, in->ids, sizeof(int) * (size_t)in->n);
        start[i] = at;
        len[i] = in->n;
        at += in->n;
    }
    return ENCDEC_OK;
}

/* The encoder over n inputs in one pass (one when the products are not
 * row-invariant here), then each input's cross cache into its place. */
static encdec_status t_encode_many(void *ctx, int n, const int *places, const void *const *inputs) {
    tfam *t = ctx;
    const s2s_model *m = t->m;
    s2s_shape shape;
    encdec_status st = pack(t, n, inputs, &shape);
    if (!st) st = m->ops->reserve(t->enc, &shape);
    if (st) return st;
    int *start = t->ids + t->cap_ids, *len = start + t->cap_in;
    m->ops->encode(t->enc, t->ids, start, len, n);
    m->ops->cross(t->enc);
    const kv_cross *ec = m->ops->view(t->enc).cross;
    void *dev = ed_pool_dev(t->pool);
    for (int i = 0; i < n; i++) {
        int p = places[i];
        kv_cross_free(&t->xc[p]);
        st = kv_cross_init_on(&t->xc[p], dev, m->n_dec_layer, m->n_head, len[i], m->head_dim,
                              t->cross_type);
        if (st) return st;
        ed_dev_copy(dev, t->xc[p].kv, ec[i].kv, kv_cross_bytes(&ec[i]));
        t->xc[p].n_valid = len[i];
        t->dv.cross[p] = t->xc[p];
        t->dv.cross[p].owned = 0;   /* a view: the place owns it */
    }
    return m->ops->status(t->enc);   /* a device's failure, named */
}

static encdec_status t_encode(void *ctx, int place, const void *input) {
    return t_encode_many(ctx, 1, &place, &input);
}

static int t_encode_rows(const void *input) { return ((const sch_text_input *)input)->n; }

static void t_place_free(void *ctx, int place) {
    tfam *t = ctx;
    kv_cross_free(&t->xc[place]);
    memset(&t->dv.cross[place], 0, sizeof t->dv.cross[place]);
    kv_self_release(t->dv.self, place * t->slots, t->slots);
}

static void t_free(void *ctx) {
    tfam *t = ctx;
    if (!t) return;
    for (int p = 0; t->xc && p < t->places; p++) kv_cross_free(&t->xc[p]);
    if (t->enc) t->m->ops->state_free(t->enc);
    if (t->dec) t->m->ops->state_free(t->dec);
    free(t->xc);
    free(t->ids);
    free(t);
}

encdec_status sch_fam_text(sch_family *f, const s2s_model *m, ed_pool *pool, int places, int slots,
                           int n_ctx, kv_dtype cross_type, int isa) {
    tfam *t = calloc(1, sizeof *t);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: engine state");
    *t = (tfam){.m = m, .pool = pool, .places = places, .slots = slots, .n_ctx = n_ctx, .cross_type = cross_type};
    int S = places * slots, old = ed_isa_swap(isa);
    /* inputs of different requests share an encoder pass where each then
     * gets what it gets alone: the weights are read once for all (a short
     * text's products are bound by that read) */
    int many = m->ops->encode_invariant(m->model);
    encdec_status st = m->ops->state_new(&t->enc, m->model, pool, cross_type);
    if (!st) st = m->ops->state_new(&t->dec, m->model, pool, cross_type);
    s2s_shape shape = {1, 1, places, S, n_ctx};
    if (!st) st = m->ops->reserve(t->dec, &shape);
    ed_isa_swap(old);
    t->xc = ed_calloc(sizeof *t->xc * (size_t)places, "cross caches");
    if (!st && !t->xc) st = ENCDEC_ERR_NOMEM;
    if (st) {
        t_free(t);
        return st;
    }
    t->dv = m->ops->view(t->dec);
    for (int q = 0; q < S; q++) t->dv.slot_input[q] = q / slots;
    *t->dv.invariant = 1;
    *f = (sch_family){.ctx = t, .n_vocab = m->n_vocab, .n_ctx = n_ctx,
                      .max_rows = t->dv.max_rows, .decode = t_decode, .encode = t_encode,
                      .encode_many = many ? t_encode_many : NULL, .encode_rows = t_encode_rows,
                      .max_encode = many ? TEXT_MAX_PACK : 1, .max_encode_rows = TEXT_MAX_PACK_ROWS,
                      .place_free = t_place_free, .free = t_free};
    if (m->ops->xattn) {
        t->frames = m->n_positions;
        f->scores_on = t_scores_on;
        f->scores = t_scores;
        f->n_heads = m->align_heads;
        f->n_frames = t->frames;
    }
    if (m->ops->screen) {
        f->screen = t_screen;
        f->logit_err = t_logit_err;
        f->logit_exact = t_logit_exact;
    }
    return ENCDEC_OK;
}
