/* fam_whisper.c - Whisper behind the scheduler (family.h): one state for
 * every place (its self cache), a cross cache per place made by encode. */
#include "sched/family.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "models/whisper.h"

#include <stdlib.h>

typedef struct {
    const whisper_model *m;
    whisper_state *st;
    kv_cross *xc;        /* [places] */
    int *slot_xc;        /* [places * slots] */
    int places, slots;
    kv_dtype cross_type;
} wfam;

static void w_decode(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                     const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits) {
    whisper_decode(((wfam *)ctx)->st, R, tok, pos, slot, tab, tab_ld, n_out, out_rows, logits);
}

/* input: the window's mel [n_mels, 3000] */
static encdec_status w_encode(void *ctx, int place, const void *input) {
    wfam *w = ctx;
    const whisper_hparams *h = &w->m->hp;
    if (!w->xc[place].kv) {   /* the place's cache, on its request's first window */
        encdec_status st = kv_cross_init_on(&w->xc[place], w->st->dev, h->n_dec_layer, h->n_head,
                                            h->n_audio_ctx, h->d / h->n_head, w->cross_type);
        if (st) return st;
    }
    whisper_encode(w->st, input);
    whisper_cross_compute_into(w->st, &w->xc[place]);
    return whisper_state_status(w->st);
}

static void w_place_free(void *ctx, int place) {
    wfam *w = ctx;
    kv_cross_free(&w->xc[place]);
    /* its self-cache rows go back to the system: memory follows the
     * requests decoding now, not every place ever used */
    kv_self_release(&w->st->self, place * w->slots, w->slots);
}

static encdec_status w_scores_on(void *ctx, int on) { return whisper_align_capture(((wfam *)ctx)->st, on); }
static const float *w_scores(const void *ctx, int a) { return whisper_align_scores(((const wfam *)ctx)->st, a); }

static void w_free(void *ctx) {
    wfam *w = ctx;
    if (!w) return;
    for (int p = 0; w->xc && p < w->places; p++) kv_cross_free(&w->xc[p]);
    whisper_state_free(w->st);
    free(w->xc);
    free(w->slot_xc);
    free(w);
}

encdec_status sch_fam_whisper(sch_family *f, const void *model, ed_pool *pool, int places,
                              int slots, kv_dtype cross_type, int isa) {
    const whisper_model *m = model;
    wfam *w = calloc(1, sizeof *w);
    if (!w) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: engine state");
    *w = (wfam){.m = m, .places = places, .slots = slots, .cross_type = cross_type};
    int S = places * slots, old = ed_isa_swap(isa);
    encdec_status st = whisper_state_new(&w->st, m, pool, S, cross_type);
    ed_isa_swap(old);
    w->xc = ed_calloc(sizeof *w->xc * (size_t)places, "cross caches");
    w->slot_xc = ed_alloc(sizeof(int) * (size_t)S, "sequence table");
    if (!st && (!w->xc || !w->slot_xc)) st = ENCDEC_ERR_NOMEM;
    if (st) {
        w_free(w);
        return st;
    }
    for (int q = 0; q < S; q++) w->slot_xc[q] = q / slots;
    w->st->xc = w->xc;
    w->st->slot_xc = w->slot_xc;
    w->st->invariant = 1;
    /* one window at a time: its encoder is already 1500 rows of every
     * product (the GEMM's ceiling), so a second window in the pass would
     * save only the weights' packing, and delay the first request's steps */
    *f = (sch_family){.ctx = w, .n_vocab = m->hp.n_vocab, .n_ctx = m->hp.n_text_ctx,
                      .max_rows = w->st->max_rows, .decode = w_decode, .encode = w_encode,
                      .max_encode = 1, .place_free = w_place_free, .scores_on = w_scores_on,
                      .scores = w_scores, .n_heads = m->n_align_heads,
                      .n_frames = m->hp.n_audio_ctx, .free = w_free};
    return ENCDEC_OK;
}
