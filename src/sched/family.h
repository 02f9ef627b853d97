/* family.h - what the scheduler needs of a model family: its decoder state
 * for every place, the encoder into one place's cross caches, the merged
 * decoder pass. One implementation per family (fam_whisper.c, fam_text.c);
 * the scheduler (sched.c) calls nothing else of the models.
 *
 * A place is a range of `slots` decoder sequences (place p: slots
 * [p * slots, (p + 1) * slots)) and the cross caches of one request's input.
 */
#ifndef ED_SCHED_FAMILY_H
#define ED_SCHED_FAMILY_H

#include "base/pool.h"
#include "core/kvcache.h"
#include "encdec.h"
#include "models/s2s.h"

typedef struct {
    void *ctx;
    int n_vocab, n_ctx, max_rows;   /* decoder: vocabulary, positions, rows a pass takes */
    /* A decoder pass over rows of any places (global slot ids, tab the root
     * runner's table); batch-invariant (a row's logits do not depend on the
     * other rows). */
    void (*decode)(void *ctx, int R, const int *tok, const int *pos, const int *slot,
                   const int *tab, int tab_ld, int n_out, const int *out_rows, float *logits);
    /* The encoder over a request's input (the family's kind), into place's
     * cross caches. */
    encdec_status (*encode)(void *ctx, int place, const void *input);
    /* The encoder over n inputs packed into one pass (n <= max_encode),
     * input i into places[i]'s caches, each bitwise as encode would make
     * it alone; NULL (max_encode 1) where that is not so or does not pay.
     * encode_rows: an input's rows in the pass; a pack holds at most
     * max_encode_rows (an input alone may hold more). */
    encdec_status (*encode_many)(void *ctx, int n, const int *places, const void *const *inputs);
    int (*encode_rows)(const void *input);
    int max_encode, max_encode_rows;
    /* The place's caches are no longer needed (its request left). */
    void (*place_free)(void *ctx, int place);
    /* The alignment heads (Whisper's; a text model's CTranslate2 ones, each
     * row scored against its own input's cache; NULL: none): capture on/off;
     * head a's scores of the last pass's rows, [rows, n_frames] (row r's
     * first columns its input's). */
    encdec_status (*scores_on)(void *ctx, int on);
    const float *(*scores)(const void *ctx, int a);
    int n_heads, n_frames;
    /* Optional (NULL: exact logits only): screened logits (models/screen.h):
     * screen(ctx, on) before a decode pass; logit_err and logit_exact for
     * row i of the last pass's logits (decode/seam.h). */
    void (*screen)(void *ctx, int on);
    float (*logit_err)(void *ctx, int row);
    void (*logit_exact)(void *ctx, int row, const int *ids, int n, float *out);
    void (*free)(void *ctx);
} sch_family;

/* The families, over S = places x slots sequences, on pool, kernel-set
 * limit isa (their states are made under it). */
encdec_status sch_fam_whisper(sch_family *f, const void *whisper_model, ed_pool *pool, int places,
                              int slots, kv_dtype cross_type, int isa);
encdec_status sch_fam_text(sch_family *f, const s2s_model *model, ed_pool *pool, int places,
                           int slots, int n_ctx, kv_dtype cross_type, int isa);

#endif
