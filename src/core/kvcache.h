/* kvcache.h - the two decoder caches, and their lifetimes.
 *
 *   kv_self  sc;  kv_self_init(&sc, n_layer, n_slots, n_ctx, d);   once per session
 *   kv_cross cc;  kv_cross_init(&cc, n_layer, n_head, n_audio_ctx, dh);
 *   ... per input: fill cc once (whisper_cross_compute); every sequence
 *   decoding that input reads it; per step: kv_self_k(&sc, l, slot) + pos * d.
 *
 * Self cache: K and V of the tokens of each sequence, appended one position
 * per step into memory allocated once for n_ctx positions. A sequence is a
 * slot; beams are several slots, and share their common history through
 * decode/runner.h's index table (position t of a sequence may live in
 * another slot), so forking a beam copies no K/V.
 *
 * Cross cache: K and V of the encoder output for every decoder layer, computed
 * once per input and then read-only; head-major so each head's keys are one
 * contiguous [T, dh] block that a step streams through. It belongs to the
 * input, not to a sequence: S sequences decoding one input share one copy.
 */
#ifndef ED_KVCACHE_H
#define ED_KVCACHE_H

#include "encdec.h"
#include <stddef.h>

typedef struct {
    int n_layer, n_slots, n_ctx, d;
    float *k;   /* [n_layer, n_slots, n_ctx, d] */
    float *v;   /* [n_layer, n_slots, n_ctx, d] */
} kv_self;

encdec_status kv_self_init(kv_self *c, int n_layer, int n_slots, int n_ctx, int d);
void kv_self_free(kv_self *c);
/* Start of slot `slot` of layer l: [n_ctx, d]. */
float *kv_self_k(const kv_self *c, int l, int slot);
float *kv_self_v(const kv_self *c, int l, int slot);

typedef struct {
    int n_layer, n_head, n_ctx, dh;
    int n_valid;  /* positions filled by the last compute (<= n_ctx) */
    float *kv;    /* [n_layer, 2, n_head, n_ctx, dh]: K then V per layer */
} kv_cross;

encdec_status kv_cross_init(kv_cross *c, int n_layer, int n_head, int n_ctx, int dh);
void kv_cross_free(kv_cross *c);
/* A cross cache over memory the caller owns (buf: n_layer * 2 * n_head *
 * n_ctx * dh floats): one input's part of a batch's shared buffer. Not
 * to be passed to kv_cross_free. */
void kv_cross_view(kv_cross *c, float *buf, int n_layer, int n_head, int n_ctx, int dh);
/* K of layer l, head 0: heads follow at n_ctx * dh floats apart. */
float *kv_cross_k(const kv_cross *c, int l);
float *kv_cross_v(const kv_cross *c, int l);
size_t kv_cross_head_stride(const kv_cross *c);
size_t kv_cross_bytes(const kv_cross *c);

#endif
