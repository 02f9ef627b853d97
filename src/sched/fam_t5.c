/* fam_t5.c - the T5 family behind the scheduler (family.h). Two states:
 * `enc` runs one request's encoder and cross product (its buffers grow to
 * the longest input seen); `dec` holds every place's self cache and
 * decoder scratch at a fixed shape (places x slots sequences, n_ctx
 * positions), so that a new request never reallocates what others are
 * decoding with. encode copies the input's cross cache into the place's
 * own; dec's cross table points at the places' caches (input p = place p). */
#include "sched/family.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "models/t5.h"
#include "sched/sched.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const t5_model *m;
    t5_state *enc, *dec;
    kv_cross *xc;        /* [places] each place's input's cache */
    int places, slots, n_ctx;
    kv_dtype cross_type;
} tfam;

static void t_decode(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                     const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    t5_decode(((tfam *)ctx)->dec, R, tok, pos, slot, tab, tab_ld, n_out, out_rows, logits);
}

static encdec_status t_encode(void *ctx, int place, const void *input) {
    tfam *t = ctx;
    const sch_t5_input *in = input;
    const t5_hparams *h = &t->m->hp;
    t5_shape shape = {in->n, in->n, 1, 1, 2};
    encdec_status st = t5_state_reserve(t->enc, &shape);
    if (st) return st;
    int start = 0, len = in->n;
    t5_encode(t->enc, in->ids, &start, &len, 1);
    t5_cross_compute(t->enc);
    kv_cross_free(&t->xc[place]);
    st = kv_cross_init(&t->xc[place], h->n_dec_layer, h->n_head, in->n, h->d_kv, t->cross_type);
    if (st) return st;
    memcpy(t->xc[place].kv, t->enc->cross[0].kv, kv_cross_bytes(&t->enc->cross[0]));
    t->xc[place].n_valid = in->n;
    t->dec->cross[place] = t->xc[place];
    t->dec->cross[place].owned = 0;   /* a view: the place owns it */
    return ENCDEC_OK;
}

static void t_place_free(void *ctx, int place) {
    tfam *t = ctx;
    kv_cross_free(&t->xc[place]);
    memset(&t->dec->cross[place], 0, sizeof t->dec->cross[place]);
    kv_self_release(&t->dec->self, place * t->slots, t->slots);
}

static void t_free(void *ctx) {
    tfam *t = ctx;
    if (!t) return;
    for (int p = 0; t->xc && p < t->places; p++) kv_cross_free(&t->xc[p]);
    t5_state_free(t->enc);
    t5_state_free(t->dec);
    free(t->xc);
    free(t);
}

encdec_status sch_fam_t5(sch_family *f, const void *model, ed_pool *pool, int places, int slots,
                         int n_ctx, kv_dtype cross_type, int isa) {
    const t5_model *m = model;
    tfam *t = calloc(1, sizeof *t);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: engine state");
    *t = (tfam){.m = m, .places = places, .slots = slots, .n_ctx = n_ctx, .cross_type = cross_type};
    int S = places * slots, old = ed_isa_swap(isa);
    encdec_status st = t5_state_new(&t->enc, m, pool, cross_type);
    if (!st) st = t5_state_new(&t->dec, m, pool, cross_type);
    t5_shape shape = {1, 1, places, S, n_ctx};
    if (!st) st = t5_state_reserve(t->dec, &shape);
    ed_isa_swap(old);
    t->xc = ed_calloc(sizeof *t->xc * (size_t)places, "cross caches");
    if (!st && !t->xc) st = ENCDEC_ERR_NOMEM;
    if (st) {
        t_free(t);
        return st;
    }
    for (int q = 0; q < S; q++) t->dec->slot_input[q] = q / slots;
    t->dec->invariant = 1;
    *f = (sch_family){t, m->hp.n_vocab, n_ctx, t->dec->max_rows, t_decode, t_encode, t_place_free,
                      NULL, NULL, 0, 0, t_free};
    return ENCDEC_OK;
}
