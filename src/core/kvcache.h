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
 * It is stored in f32, or in f16 / bf16 halves (a session option) to halve
 * the bytes a decode step streams; the attention kernels expand halves in
 * registers (kern/attn_h.h).
 */
#ifndef ED_KVCACHE_H
#define ED_KVCACHE_H

#include "encdec.h"
#include <stddef.h>

typedef struct {
    int n_layer, n_slots, n_ctx, d;
    float *k;   /* [n_layer, n_slots, n_ctx, d] */
    float *v;   /* [n_layer, n_slots, n_ctx, d] */
    void *dev;  /* the device whose memory k and v are (core/dev.h); NULL: the host */
} kv_self;

encdec_status kv_self_init(kv_self *c, int n_layer, int n_slots, int n_ctx, int d);
/* The same in a device's memory (dev: core/dev.h's ed_dev; NULL: the host). */
encdec_status kv_self_init_on(kv_self *c, void *dev, int n_layer, int n_slots, int n_ctx, int d);
void kv_self_free(kv_self *c);
/* Slots [slot0, slot0 + n) of every layer are not needed any more: their
 * memory goes back to the system (an engine's request that left), whole
 * pages only. The slots may be used again (their cells are written before
 * they are read, as ever). */
void kv_self_release(const kv_self *c, int slot0, int n);
/* Start of slot `slot` of layer l: [n_ctx, d]. */
float *kv_self_k(const kv_self *c, int l, int slot);
float *kv_self_v(const kv_self *c, int l, int slot);

/* Element type of the cross cache (values match encdec_kv_type). */
typedef enum { KV_F32 = 0, KV_F16 = 1, KV_BF16 = 2 } kv_dtype;
static inline size_t kv_dtype_size(kv_dtype t) { return t == KV_F32 ? 4 : 2; }

typedef struct {
    int n_layer, n_head, n_ctx, dh;
    int n_valid;   /* positions filled by the last compute (<= n_ctx) */
    kv_dtype type;
    void *kv;      /* [n_layer, 2, n_head, n_ctx, dh] of type: K then V per layer */
    size_t owned;  /* bytes mapped by kv_cross_init (0: a view) */
    void *dev;     /* the device whose memory kv is (core/dev.h); NULL: the host */
} kv_cross;

encdec_status kv_cross_init(kv_cross *c, int n_layer, int n_head, int n_ctx, int dh,
                            kv_dtype type);
encdec_status kv_cross_init_on(kv_cross *c, void *dev, int n_layer, int n_head, int n_ctx, int dh,
                               kv_dtype type);
void kv_cross_free(kv_cross *c);
/* A cross cache over memory the caller owns (buf: kv_cross_elems elements
 * of type): one input's part of a batch's shared buffer. Not to be passed
 * to kv_cross_free. */
void kv_cross_view(kv_cross *c, void *buf, int n_layer, int n_head, int n_ctx, int dh,
                   kv_dtype type);
size_t kv_cross_elems(int n_layer, int n_head, int n_ctx, int dh);
/* K (V) of layer l, head h: a [n_ctx, dh] block of c->type. */
void *kv_cross_k(const kv_cross *c, int l, int h);
void *kv_cross_v(const kv_cross *c, int l, int h);
/* Stores rows t in [t0, t0 + n) of head h's K (kv 0) or V (kv 1) of layer
 * l from src (row t at src + (t - t0) * ld, dh floats), converting to the
 * cache's type. */
void kv_cross_put(const kv_cross *c, int l, int kv, int h, const float *src, size_t ld, int t0,
                  int n);
size_t kv_cross_bytes(const kv_cross *c);

#endif
