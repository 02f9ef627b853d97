/* tensor.c - the weight table and dtype helpers.
 *
 * A table is four things: the tensors (each allocated on its own, so a
 * pointer from wtab_get stays valid while more are added), an open-addressing
 * hash from name to tensor index (aliases are extra keys for an existing
 * index), the file mappings the tensors point into, and the blocks the table
 * owns (aligned copies, converted data).
 *
 * Alignment: model code reads tensor data as float / uint16_t arrays, and
 * both file formats put tensors at arbitrary byte offsets (CTranslate2 packs
 * every variable right after its header). wtab_add therefore copies data
 * that is not aligned to its element size into table-owned, 64-byte aligned
 * memory; aligned data keeps pointing into the mapping. Every tensor in a
 * table can thus be read through a pointer of its element type.
 */
#include "io/tensor.h"
#include "base/err.h"
#include "base/half.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    char *key;      /* owned; NULL = empty slot */
    int idx;        /* into tensors */
} wslot;

struct ed_wtab {
    ed_tensor **tensors;    /* [n_tensors], each malloc'd */
    int n_tensors, cap_tensors;
    wslot *slots;           /* [cap_slots], cap_slots a power of two, <= half full */
    int n_keys, cap_slots;
    char **files;           /* [n_files] interned file names */
    int n_files, cap_files;
    ed_fmap *maps;          /* [n_maps] */
    int n_maps, cap_maps;
    void **blocks;          /* [n_blocks] from ed_alloc */
    int n_blocks, cap_blocks;
};

/* Returns arr (elements of size elem, *cap of them, n used) with room for one
 * more, possibly moved; NULL on out of memory (arr is then still valid). */
static void *grow(void *arr, int *cap, int n, size_t elem, const char *what) {
    if (n < *cap) return arr;
    int nc = *cap ? *cap * 2 : 16;
    void *p = realloc(arr, (size_t)nc * elem);
    if (!p) {
        ed_fail(ENCDEC_ERR_NOMEM, "out of memory: weight table %s", what);
        return NULL;
    }
    *cap = nc;
    return p;
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;      /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The slot holding key, or the empty slot where it would go. */
static wslot *find_slot(const ed_wtab *t, const char *key) {
    size_t mask = (size_t)t->cap_slots - 1;
    for (size_t i = hash_str(key) & mask;; i = (i + 1) & mask) {
        wslot *s = &t->slots[i];
        if (!s->key || strcmp(s->key, key) == 0) return s;
    }
}

static int rehash(ed_wtab *t) {
    int nc = t->cap_slots ? t->cap_slots * 2 : 64;
    wslot *old = t->slots;
    int oc = t->cap_slots;
    t->slots = calloc((size_t)nc, sizeof *t->slots);
    if (!t->slots) {
        t->slots = old;
        ed_fail(ENCDEC_ERR_NOMEM, "out of memory: weight table index");
        return 0;
    }
    t->cap_slots = nc;
    for (int i = 0; i < oc; i++)
        if (old[i].key) *find_slot(t, old[i].key) = old[i];
    free(old);
    return 1;
}

/* Inserts key -> idx; *out_key gets the table's copy of the key. */
static encdec_status put_key(ed_wtab *t, const char *key, int idx, const char **out_key) {
    if (2 * (t->n_keys + 1) > t->cap_slots && !rehash(t)) return ENCDEC_ERR_NOMEM;
    wslot *s = find_slot(t, key);
    if (s->key) return ed_fail(ENCDEC_ERR_FORMAT, "duplicate tensor name %s", key);
    s->key = ed_strdup(key);
    if (!s->key) return ENCDEC_ERR_NOMEM;
    s->idx = idx;
    t->n_keys++;
    if (out_key) *out_key = s->key;
    return ENCDEC_OK;
}

static const char *intern_file(ed_wtab *t, const char *file) {
    for (int i = t->n_files - 1; i >= 0; i--)
        if (strcmp(t->files[i], file) == 0) return t->files[i];
    char **files = grow(t->files, &t->cap_files, t->n_files, sizeof *files, "file names");
    if (!files) return NULL;
    t->files = files;
    char *s = ed_strdup(file);
    if (s) t->files[t->n_files++] = s;
    return s;
}

ed_wtab *wtab_new(void) {
    ed_wtab *t = calloc(1, sizeof *t);
    if (!t) ed_fail(ENCDEC_ERR_NOMEM, "out of memory: weight table");
    return t;
}

void wtab_free(ed_wtab *t) {
    if (!t) return;
    for (int i = 0; i < t->n_tensors; i++) free(t->tensors[i]);
    free(t->tensors);
    for (int i = 0; i < t->cap_slots; i++) free(t->slots[i].key);
    free(t->slots);
    for (int i = 0; i < t->n_files; i++) free(t->files[i]);
    free(t->files);
    for (int i = 0; i < t->n_maps; i++) ed_fmap_close(&t->maps[i]);
    free(t->maps);
    for (int i = 0; i < t->n_blocks; i++) free(t->blocks[i]);
    free(t->blocks);
    free(t);
}

/* Checks that the tensor's fields agree with each other. */
static encdec_status check_tensor(const ed_tensor *x) {
    const char *name = x->name ? x->name : "";
    if (!name[0]) return ed_fail(ENCDEC_ERR_FORMAT, "empty tensor name");
    if ((unsigned)x->dtype >= ED_DTYPE_COUNT)
        return ed_fail(ENCDEC_ERR_DTYPE, "tensor %s has invalid dtype %d", name, (int)x->dtype);
    if (x->ndim < 0 || x->ndim > ED_MAX_DIMS)
        return ed_fail(ENCDEC_ERR_FORMAT, "tensor %s has %d dims (at most %d)", name, x->ndim, ED_MAX_DIMS);
    size_t n = ed_dtype_size(x->dtype);
    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] < 0 || !ed_mul_ok(n, (size_t)x->shape[i], &n))
            return ed_fail(ENCDEC_ERR_FORMAT, "tensor %s has a bad shape", name);
    if (n != x->nbytes)
        return ed_fail(ENCDEC_ERR_FORMAT, "tensor %s holds %zu bytes, its shape needs %zu",
                       name, x->nbytes, n);
    if (n && !x->data) return ed_fail(ENCDEC_ERR_FORMAT, "tensor %s has no data", name);
    return ENCDEC_OK;
}

encdec_status wtab_add(ed_wtab *t, const ed_tensor *tensor) {
    encdec_status st = check_tensor(tensor);
    if (st) return st;
    ed_tensor **tensors = grow(t->tensors, &t->cap_tensors, t->n_tensors, sizeof *tensors, "tensors");
    if (!tensors) return ENCDEC_ERR_NOMEM;
    t->tensors = tensors;
    ed_tensor *x = malloc(sizeof *x);
    if (!x) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: weight table entry");
    *x = *tensor;
    x->file = intern_file(t, tensor->file ? tensor->file : "");
    if (!x->file) {
        free(x);
        return ENCDEC_ERR_NOMEM;
    }
    size_t esize = ed_dtype_size(x->dtype);
    if (x->nbytes && (uintptr_t)x->data % esize != 0) {
        void *copy = wtab_alloc(t, x->nbytes, x->name);
        if (!copy) {
            free(x);
            return ENCDEC_ERR_NOMEM;
        }
        memcpy(copy, x->data, x->nbytes);
        wtab_release(t, x->data, x->nbytes);   /* the file's pages: read once */
        x->data = copy;
    }
    st = put_key(t, tensor->name, t->n_tensors, &x->name);
    if (st) {
        free(x);
        return st;
    }
    t->tensors[t->n_tensors++] = x;
    return ENCDEC_OK;
}

encdec_status wtab_alias(ed_wtab *t, const char *name, const char *target) {
    if (!name[0]) return ed_fail(ENCDEC_ERR_FORMAT, "empty alias name for %s", target);
    const wslot *s = t->cap_slots ? find_slot(t, target) : NULL;
    if (!s || !s->key)
        return ed_fail(ENCDEC_ERR_FORMAT, "alias %s refers to missing tensor %s", name, target);
    return put_key(t, name, s->idx, NULL);
}

int wtab_refs(const ed_wtab *t, const void *p) {
    int n = 0;
    for (int i = 0; p && i < t->cap_slots; i++)
        n += t->slots[i].key && t->tensors[t->slots[i].idx]->data == p;
    return n;
}

encdec_status wtab_keep_map(ed_wtab *t, ed_fmap map) {
    ed_fmap *maps = grow(t->maps, &t->cap_maps, t->n_maps, sizeof *maps, "mappings");
    if (!maps) {
        ed_fmap_close(&map);
        return ENCDEC_ERR_NOMEM;
    }
    t->maps = maps;
    t->maps[t->n_maps++] = map;
    return ENCDEC_OK;
}

void *wtab_alloc(ed_wtab *t, size_t bytes, const char *what) {
    void **blocks = grow(t->blocks, &t->cap_blocks, t->n_blocks, sizeof *blocks, "blocks");
    if (!blocks) return NULL;
    t->blocks = blocks;
    void *p = ed_alloc(bytes, what);
    if (p) t->blocks[t->n_blocks++] = p;
    return p;
}

const ed_tensor *wtab_get(const ed_wtab *t, const char *name) {
    if (!t || !name || !t->cap_slots) return NULL;
    const wslot *s = find_slot(t, name);
    return s->key ? t->tensors[s->idx] : NULL;
}

/* Counts stored tensors; aliases are not counted (they resolve by name only). */
int wtab_count(const ed_wtab *t) { return t ? t->n_tensors : 0; }

const ed_tensor *wtab_at(const ed_wtab *t, int i) {
    return (t && i >= 0 && i < t->n_tensors) ? t->tensors[i] : NULL;
}

/* ---- dtypes ---- */

static const struct { const char *name; size_t size; } dtype_info[ED_DTYPE_COUNT] = {
    [ED_F32] = {"F32", 4}, [ED_F16] = {"F16", 2}, [ED_BF16] = {"BF16", 2},
    [ED_F64] = {"F64", 8}, [ED_I8] = {"I8", 1},   [ED_U8] = {"U8", 1},
    [ED_I16] = {"I16", 2}, [ED_I32] = {"I32", 4}, [ED_I64] = {"I64", 8},
    [ED_BOOL] = {"BOOL", 1},
};

size_t ed_dtype_size(ed_dtype dt) {
    return (unsigned)dt < ED_DTYPE_COUNT ? dtype_info[dt].size : 0;
}

const char *ed_dtype_name(ed_dtype dt) {
    return (unsigned)dt < ED_DTYPE_COUNT ? dtype_info[dt].name : "?";
}

const char *ed_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t n = 0;
    if (!cap) return buf;
    buf[0] = 0;
    for (int i = 0; i <= ndim && n < cap; i++) {      /* snprintf truncates safely */
        int w = i < ndim ? snprintf(buf + n, cap - n, "%s%lld", i ? "," : "[", (long long)shape[i])
                         : snprintf(buf + n, cap - n, "%s]", ndim ? "" : "[");
        if (w < 0) break;
        n += (size_t)w;
    }
    return buf;
}

encdec_status ed_to_f32(float *dst, const void *src, ed_dtype dt, size_t n) {
    const uint8_t *s = src;
    switch (dt) {
    case ED_F32:
        if (n) memcpy(dst, src, n * sizeof *dst);
        return ENCDEC_OK;
    case ED_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, sizeof h);
            dst[i] = ed_h2f(h);
        }
        return ENCDEC_OK;
    case ED_BF16:
        for (size_t i = 0; i < n; i++) {     /* bf16 is the top half of an f32 */
            uint16_t h;
            memcpy(&h, s + 2 * i, sizeof h);
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&dst[i], &bits, sizeof bits);
        }
        return ENCDEC_OK;
    default:
        return ed_fail(ENCDEC_ERR_DTYPE, "cannot convert %s to F32", ed_dtype_name(dt));
    }
}

void wtab_drop_maps(ed_wtab *t) {
    for (int i = 0; i < t->n_maps; i++)
        if (t->maps[i].data) madvise((void *)t->maps[i].data, t->maps[i].size, MADV_DONTNEED);
}

void wtab_release(const ed_wtab *t, const void *p, size_t bytes) {
    const uint8_t *a = p, *b = a + bytes;
    for (int i = 0; i < t->n_maps; i++) {
        const uint8_t *m0 = t->maps[i].data, *m1 = m0 + t->maps[i].size;
        if (!m0 || a < m0 || b > m1) continue;
        uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t lo = ((uintptr_t)a + pg - 1) & ~(pg - 1), hi = (uintptr_t)b & ~(pg - 1);
        if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
        return;
    }
}

void wtab_drop(ed_wtab *t, const void *p, size_t bytes) {
    for (int i = 0; i < t->n_blocks; i++)
        if (t->blocks[i] == p) {
            free(t->blocks[i]);
            t->blocks[i] = t->blocks[--t->n_blocks];
            for (int j = 0; j < t->n_tensors; j++)   /* no entry may point into it */
                if (t->tensors[j]->data == p) t->tensors[j]->data = NULL;
            return;
        }
    wtab_release(t, p, bytes);
}
