/* kvcache.c - allocation and addressing of the self and cross caches. */
#include "core/kvcache.h"
#include "base/err.h"
#include "base/mem.h"
#include "core/dev.h"
#include "kern/attn_h.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t self_layer_floats(const kv_self *c) {
    return (size_t)c->n_slots * c->n_ctx * c->d;
}

encdec_status kv_self_init(kv_self *c, int n_layer, int n_slots, int n_ctx, int d) {
    return kv_self_init_on(c, NULL, n_layer, n_slots, n_ctx, d);
}

encdec_status kv_self_init_on(kv_self *c, void *dev, int n_layer, int n_slots, int n_ctx, int d) {
    memset(c, 0, sizeof *c);
    size_t n;
    if (n_layer <= 0 || n_slots <= 0 || n_ctx <= 0 || d <= 0 ||
        !ed_mul_ok((size_t)n_layer * n_slots, (size_t)n_ctx * d, &n) ||
        !ed_mul_ok(n, sizeof(float), &n))
        return ed_fail(ENCDEC_ERR_ARG, "self cache: bad size %d x %d x %d x %d",
                       n_layer, n_slots, n_ctx, d);
    c->n_layer = n_layer;
    c->n_slots = n_slots;
    c->n_ctx = n_ctx;
    c->d = d;
    /* Not cleared: a cell is read only after its position is written (the
     * index table says which), so the pages of slots and positions never
     * reached are never touched: reserved, not resident (a session sized for
     * best-of 5 holds six slots, most of which only a fallback uses). */
    c->dev = dev;
    c->k = ed_dev_alloc(dev, n, "self-attention K cache");
    c->v = c->k ? ed_dev_alloc(dev, n, "self-attention V cache") : NULL;
    if (!c->v) {
        kv_self_free(c);
        return ENCDEC_ERR_NOMEM;
    }
    return ENCDEC_OK;
}

/* The whole pages inside [p, p + bytes) back to the system (read as zeros
 * if touched again). */
static void release_pages(void *p, size_t bytes) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + pg - 1) & ~(uintptr_t)(pg - 1);
    uintptr_t b = ((uintptr_t)p + bytes) & ~(uintptr_t)(pg - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

void kv_self_release(const kv_self *c, int slot0, int n) {
    if (!c->k || c->dev || slot0 < 0 || n <= 0 || slot0 + n > c->n_slots) return;
    size_t run = (size_t)n * c->n_ctx * c->d * sizeof(float);
    for (int l = 0; l < c->n_layer; l++) {
        release_pages(kv_self_k(c, l, slot0), run);
        release_pages(kv_self_v(c, l, slot0), run);
    }
}

void kv_self_free(kv_self *c) {
    ed_dev_free(c->dev, c->k);
    ed_dev_free(c->dev, c->v);
    c->k = c->v = NULL;
}

float *kv_self_k(const kv_self *c, int l, int slot) {
    return c->k + (size_t)l * self_layer_floats(c) + (size_t)slot * c->n_ctx * c->d;
}

float *kv_self_v(const kv_self *c, int l, int slot) {
    return c->v + (size_t)l * self_layer_floats(c) + (size_t)slot * c->n_ctx * c->d;
}

size_t kv_cross_elems(int n_layer, int n_head, int n_ctx, int dh) {
    return (size_t)n_layer * 2 * n_head * (size_t)n_ctx * dh;
}

encdec_status kv_cross_init(kv_cross *c, int n_layer, int n_head, int n_ctx, int dh,
                            kv_dtype type) {
    return kv_cross_init_on(c, NULL, n_layer, n_head, n_ctx, dh, type);
}

encdec_status kv_cross_init_on(kv_cross *c, void *dev, int n_layer, int n_head, int n_ctx, int dh,
                               kv_dtype type) {
    memset(c, 0, sizeof *c);
    size_t n;
    if (n_layer <= 0 || n_head <= 0 || n_ctx <= 0 || dh <= 0 || type < KV_F32 || type > KV_BF16 ||
        !ed_mul_ok((size_t)n_layer * 2 * n_head, (size_t)n_ctx * dh, &n) ||
        !ed_mul_ok(n, kv_dtype_size(type), &n))
        return ed_fail(ENCDEC_ERR_ARG, "cross cache: bad size %d x %d x %d x %d",
                       n_layer, n_head, n_ctx, dh);
    kv_cross_view(c, NULL, n_layer, n_head, n_ctx, dh, type);
    c->n_valid = 0;
    c->dev = dev;
    c->kv = dev ? ed_dev_alloc(dev, n, "cross-attention K/V cache") : ed_map(n, "cross-attention K/V cache");
    c->owned = n;
    return c->kv ? ENCDEC_OK : ENCDEC_ERR_NOMEM;
}

void kv_cross_free(kv_cross *c) {
    if (c->owned && c->dev) ed_dev_free(c->dev, c->kv);
    else if (c->owned) ed_unmap(c->kv, c->owned);
    c->kv = NULL;
    c->owned = 0;
}

void kv_cross_view(kv_cross *c, void *buf, int n_layer, int n_head, int n_ctx, int dh,
                   kv_dtype type) {
    c->owned = 0;
    c->dev = NULL;
    c->n_layer = n_layer;
    c->n_head = n_head;
    c->n_ctx = n_ctx;
    c->n_valid = n_ctx;
    c->dh = dh;
    c->type = type;
    c->kv = buf;
}

static size_t head_bytes(const kv_cross *c) {
    return (size_t)c->n_ctx * c->dh * kv_dtype_size(c->type);
}

void *kv_cross_k(const kv_cross *c, int l, int h) {
    return (char *)c->kv + ((size_t)l * 2 * c->n_head + (size_t)h) * head_bytes(c);
}

void *kv_cross_v(const kv_cross *c, int l, int h) {
    return (char *)c->kv + ((size_t)l * 2 * c->n_head + (size_t)c->n_head + (size_t)h) * head_bytes(c);
}

void kv_cross_put(const kv_cross *c, int l, int kv, int h, const float *src, size_t ld, int t0,
                  int n) {
    char *dst = kv ? kv_cross_v(c, l, h) : kv_cross_k(c, l, h);
    int dh = c->dh;
    dst += (size_t)t0 * dh * kv_dtype_size(c->type);
    if (c->type != KV_F32) {
        k_f32_to_h_rows((uint16_t *)dst, (size_t)dh, src, ld, n, (size_t)dh, c->type == KV_BF16);
        return;
    }
    for (int t = 0; t < n; t++)
        memcpy((float *)dst + (size_t)t * dh, src + t * ld, (size_t)dh * sizeof(float));
}

size_t kv_cross_bytes(const kv_cross *c) {
    return kv_cross_elems(c->n_layer, c->n_head, c->n_ctx, c->dh) * kv_dtype_size(c->type);
}
