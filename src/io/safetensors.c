/* safetensors.c - the safetensors loader.
 *
 * File layout (little-endian):
 *   u64 N | N bytes of JSON header (may be padded with spaces) | data section
 * The header is an object: "__metadata__" (string map, ignored) and, for
 * every tensor, {"dtype": "F16", "shape": [384, 80, 3], "data_offsets": [b, e]}
 * with b, e relative to the start of the data section.
 *
 * Everything in the header is validated before a single tensor is added;
 * the tensors then point into the mapping, which the table keeps.
 */
#include "io/tensor.h"
#include "base/err.h"
#include "base/mem.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ed_tensor t;
    uint64_t begin, end;    /* [begin, end) within the data section */
} st_entry;

/* A JSON number that is a non-negative integer no larger than 2^53, the
 * range a double (cJSON's number type) represents exactly. */
static int json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double v = j->valuedouble;
    if (!(v >= 0 && v <= 9007199254740992.0) || v != (double)(uint64_t)v) return 0;
    *out = (uint64_t)v;
    return 1;
}

static int dtype_from_name(const char *s, ed_dtype *dt) {
    for (int i = 0; i < ED_DTYPE_COUNT; i++)
        if (strcmp(s, ed_dtype_name((ed_dtype)i)) == 0) {
            *dt = (ed_dtype)i;
            return 1;
        }
    return 0;
}

/* Fills e from one header entry; data stays NULL (set once all entries are
 * known to be valid). dsize = bytes in the data section. */
static encdec_status parse_entry(const char *path, const cJSON *item, uint64_t dsize, st_entry *e) {
    const char *name = item->string;
    memset(e, 0, sizeof *e);
    e->t.name = name;
    e->t.file = path;
    if (!cJSON_IsObject(item))
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s is not a JSON object", path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype))
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s has no dtype string", path, name);
    if (!cJSON_IsArray(shape))
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s has no shape array", path, name);
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s has no data_offsets pair", path, name);
    if (!dtype_from_name(dtype->valuestring, &e->t.dtype))
        return ed_fail(ENCDEC_ERR_DTYPE, "%s: tensor %s has unknown dtype \"%s\"", path, name,
                       dtype->valuestring);

    int ndim = cJSON_GetArraySize(shape);
    if (ndim > ED_MAX_DIMS)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s has %d dims (at most %d supported)",
                       path, name, ndim, ED_MAX_DIMS);
    e->t.ndim = ndim;
    size_t nbytes = ed_dtype_size(e->t.dtype);
    int i = 0;
    for (const cJSON *d = shape->child; d; d = d->next, i++) {
        uint64_t v;
        if (!json_uint(d, &v))
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s: shape[%d] is not a valid dimension",
                           path, name, i);
        e->t.shape[i] = (int64_t)v;
        if (v > SIZE_MAX || !ed_mul_ok(nbytes, (size_t)v, &nbytes))
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s: byte size of shape overflows",
                           path, name);
    }
    e->t.nbytes = nbytes;

    if (!json_uint(offs->child, &e->begin) || !json_uint(offs->child->next, &e->end))
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s: data_offsets are not valid offsets",
                       path, name);
    if (e->begin > e->end || e->end > dsize)
        return ed_fail(ENCDEC_ERR_FORMAT,
                       "%s: tensor %s: data_offsets [%llu,%llu] out of range of the %llu-byte data section",
                       path, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                       (unsigned long long)dsize);
    if (e->end - e->begin != nbytes) {
        char sb[96];
        return ed_fail(ENCDEC_ERR_FORMAT,
                       "%s: tensor %s: data_offsets hold %llu bytes, but %s %s needs %zu",
                       path, name, (unsigned long long)(e->end - e->begin),
                       ed_dtype_name(e->t.dtype), ed_shape_str(sb, sizeof sb, ndim, e->t.shape), nbytes);
    }
    return ENCDEC_OK;
}

static int by_begin(const void *a, const void *b) {
    const st_entry *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Parses and validates the header of the mapped file m into *out (sorted by
 * offset, data pointers set). The entries' names borrow from *root. */
static encdec_status parse_header(const char *path, const ed_fmap *m, cJSON **root,
                                  st_entry **out, int *n_out) {
    *root = NULL;
    *out = NULL;
    *n_out = 0;
    if (m->size < 8)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: file is %zu bytes, too short for a safetensors header",
                       path, m->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | m->data[i];
    if (hlen > m->size - 8)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: header length %llu exceeds the %zu bytes after the length field "
                       "(file size %zu)", path, (unsigned long long)hlen, m->size - 8, m->size);
    const char *hdr = (const char *)m->data + 8, *end = NULL;
    *root = cJSON_ParseWithLengthOpts(hdr, (size_t)hlen, &end, 0);
    if (!*root)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: header is not valid JSON (error near byte %ld of %llu)",
                       path, end ? (long)(end - hdr) : -1L, (unsigned long long)hlen);
    for (const char *p = end; p < hdr + hlen; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != 0)
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: header has trailing bytes after the JSON", path);
    if (!cJSON_IsObject(*root))
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: header is not a JSON object", path);

    int n = cJSON_GetArraySize(*root);
    st_entry *e = calloc(n ? (size_t)n : 1, sizeof *e);
    if (!e) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s header (%d entries)", path, n);
    *out = e;
    uint64_t dsize = m->size - 8 - hlen;
    int k = 0;
    for (const cJSON *item = (*root)->child; item; item = item->next) {
        if (strcmp(item->string, "__metadata__") == 0) continue;
        encdec_status st = parse_entry(path, item, dsize, &e[k]);
        if (st) return st;
        e[k].t.data = m->data + 8 + hlen + e[k].begin;
        k++;
    }
    qsort(e, (size_t)k, sizeof *e, by_begin);
    const st_entry *prev = NULL;            /* sorted: prev has the largest end so far */
    for (int i = 0; i < k; i++) {
        if (e[i].end == e[i].begin) continue;
        if (prev && e[i].begin < prev->end)
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: tensors %s and %s overlap", path,
                           prev->t.name, e[i].t.name);
        prev = &e[i];
    }
    *n_out = k;
    return ENCDEC_OK;
}

encdec_status st_load_file(ed_wtab *t, const char *path) {
    ed_fmap m;
    encdec_status st = ed_fmap_open(&m, path);
    if (st) return st;
    cJSON *root;
    st_entry *e;
    int n;
    st = parse_header(path, &m, &root, &e, &n);
    if (st) {
        cJSON_Delete(root);
        free(e);
        ed_fmap_close(&m);
        return st;
    }
    st = wtab_keep_map(t, m);
    for (int i = 0; i < n && !st; i++) {
        st = wtab_add(t, &e[i].t);
        if (st) ed_err_prefix("%s", path);
    }
    cJSON_Delete(root);
    free(e);
    return st;
}

/* Loads the shards named by an index's weight_map, each once, then checks
 * that every tensor the index lists came from the shard it names. */
static encdec_status load_index(ed_wtab *t, const char *dir, const char *ipath) {
    char *text;
    size_t len;
    encdec_status st = ed_read_file(ipath, &text, &len);
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!root)
        st = ed_fail(ENCDEC_ERR_FORMAT, "%s: not valid JSON", ipath);
    else if (!cJSON_IsObject(root))
        st = ed_fail(ENCDEC_ERR_FORMAT, "%s: not a JSON object", ipath);
    else if (!cJSON_IsObject(wm) || !wm->child)
        st = ed_fail(ENCDEC_ERR_FORMAT, "%s: no weight_map entries", ipath);
    char path[PATH_MAX];
    for (const cJSON *w = st ? NULL : wm->child; w && !st; w = w->next) {
        const char *shard = cJSON_GetStringValue(w);
        if (!shard || !shard[0] || strchr(shard, '/') || strcmp(shard, "..") == 0) {
            st = ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s has a bad shard name", ipath, w->string);
            break;
        }
        int seen = 0;                       /* loaded already by an earlier entry? */
        for (const cJSON *p = wm->child; p != w && !seen; p = p->next)
            seen = strcmp(cJSON_GetStringValue(p), shard) == 0;
        if (seen) continue;
        if (strlen(dir) + strlen(shard) + 2 > sizeof path) {
            st = ed_fail(ENCDEC_ERR_IO, "%s: path too long", dir);
            break;
        }
        st = st_load_file(t, ed_path_join(path, sizeof path, dir, shard));
        if (st) ed_err_prefix("%s", ipath);
    }
    for (const cJSON *w = st ? NULL : wm->child; w && !st; w = w->next) {
        const ed_tensor *x = wtab_get(t, w->string);
        ed_path_join(path, sizeof path, dir, cJSON_GetStringValue(w));
        if (!x || strcmp(x->file, path) != 0)
            st = ed_fail(ENCDEC_ERR_FORMAT, "%s: tensor %s is not in its shard %s", ipath,
                         w->string, cJSON_GetStringValue(w));
    }
    cJSON_Delete(root);
    return st;
}

encdec_status st_load_dir(ed_wtab *t, const char *dir) {
    char path[PATH_MAX];
    if (!ed_is_dir(dir)) return ed_fail(ENCDEC_ERR_IO, "%s: not a directory", dir);
    if (strlen(dir) + 40 > sizeof path) return ed_fail(ENCDEC_ERR_IO, "%s: path too long", dir);
    if (ed_is_file(ed_path_join(path, sizeof path, dir, "model.safetensors")))
        return st_load_file(t, path);
    if (ed_is_file(ed_path_join(path, sizeof path, dir, "model.safetensors.index.json")))
        return load_index(t, dir, path);
    return ed_fail(ENCDEC_ERR_NO_MODEL, "%s: no model.safetensors or model.safetensors.index.json",
                   dir);
}
