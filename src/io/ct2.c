/* ct2.c - the CTranslate2 model.bin loader.
 *
 * Layout (written by ctranslate2/specs/model_spec.py, all little-endian,
 * "str" = u16 length including a trailing NUL, then the bytes and the NUL):
 *   u32 binary version (6 since CTranslate2 3.0; 5 in 2.12 to 2.24, 4 from
 *       1.6; 2 and 3 before; version 1, without a spec name, is refused)
 *   str spec name ("WhisperSpec")     u32 spec revision (3 for Whisper)
 *   u32 n_variables, then per variable, sorted by name:
 *     str name | u8 rank | u32 dim[rank] | u8 dtype id | u32 n_bytes | bytes
 *     dtype ids: 0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16
 *     (before version 4: u8 item size (4 float32, 2 int16, 1 int8) and u32
 *     element count in place of the id and the byte count)
 *   u32 n_aliases, then per alias: str alias | str target variable (from
 *     version 3; before, an alias was stored as a copy)
 * Variables are packed back to back, so data has no alignment (wtab_add
 * copies misaligned ones). Rank-0 variables are scalar attributes; booleans
 * are stored as int8 and strings as 1-d int8 arrays of their UTF-8 bytes.
 * Tensors are added as they are read: after a failure the table holds the
 * ones before it (valid, incomplete), and the caller frees it.
 *
 * Whisper as converted by faster-whisper (tiny.en, float16; d = 384, 4+4
 * layers, weights are [out, in] like torch.nn.Linear):
 *   encoder/conv1/weight [d,80,3] f16, conv1/bias [d]; conv2/weight [d,d,3]
 *   encoder/position_encodings/encodings [1500,d] (the sinusoids, stored)
 *   encoder/layer_N/self_attention/layer_norm/{gamma,beta} [d]   pre-norm
 *   encoder/layer_N/self_attention/linear_0/{weight [3d,d], bias [3d]}
 *       fused Q|K|V rows; the K third of the bias is zero (Whisper has none)
 *   encoder/layer_N/self_attention/linear_1/{weight [d,d], bias [d]}  out proj
 *   encoder/layer_N/ffn/layer_norm/{gamma,beta}, ffn/linear_0 [4d,d] (+bias),
 *       ffn/linear_1 [d,4d] (+bias)
 *   encoder/layer_norm/{gamma,beta}  final norm
 *   decoder/embeddings/weight [n_vocab,d]
 *   decoder/position_encodings/encodings [448,d] (learned)
 *   decoder/layer_N/self_attention/... as in the encoder (linear_0 fused QKV)
 *   decoder/layer_N/attention/layer_norm, the cross attention:
 *       attention/linear_0 [d,d] = Q, attention/linear_1 [2d,d] = fused K|V
 *       (K half of its bias zero), attention/linear_2 [d,d] = out proj
 *   decoder/layer_N/ffn/... as in the encoder; decoder/layer_norm final norm
 *   alias decoder/projection/weight -> decoder/embeddings/weight (tied; the
 *       output projection has no bias)
 * Quantized models (--quantization int8 / int8_float16 / int8_bfloat16):
 *   every weight matrix (linear layers, the convolutions, the embeddings) is
 *   int8 "X/weight" followed by f32 "X/weight_scale" [rows]: w = q / scale
 *   per row. The pair is read here as one f16 "X/weight" (in memory the
 *   table owns), so the loaders see an f16 model; the scale stays too.
 * Scalars: {encoder,decoder}/num_heads int16 (6); decoder/pre_norm int8 1,
 *   activation int8 3 (GELU), alibi 0, scale_embeddings 0,
 *   start_from_zero_embedding 0, alignment_heads int16, alignment_layer
 *   int16 -1. No attention scale is stored: it is 1/sqrt(d/num_heads).
 */
#include "io/tensor.h"
#include "base/err.h"
#include "base/half.h"
#include "base/mem.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const uint8_t *data;
    size_t pos, size;
    const char *path;
} ct2_reader;

/* Fails unless n more bytes are left; what names the field for the message. */
static encdec_status need(const ct2_reader *r, size_t n, const char *what) {
    if (n <= r->size - r->pos) return ENCDEC_OK;
    return ed_fail(ENCDEC_ERR_FORMAT, "%s: truncated at byte %zu: %s needs %zu bytes, %zu left",
                   r->path, r->pos, what, n, r->size - r->pos);
}

/* Reads an n-byte (1, 2 or 4) little-endian unsigned integer. */
static encdec_status read_uint(ct2_reader *r, int n, uint32_t *v, const char *what) {
    encdec_status st = need(r, (size_t)n, what);
    if (st) return st;
    *v = 0;
    for (int i = n - 1; i >= 0; i--) *v = *v << 8 | r->data[r->pos + (size_t)i];
    r->pos += (size_t)n;
    return ENCDEC_OK;
}

/* Reads a length-prefixed, NUL-terminated string; *s points into the map. */
static encdec_status read_str(ct2_reader *r, const char **s, const char *what) {
    uint32_t len;
    encdec_status st = read_uint(r, 2, &len, what);
    if (st || (st = need(r, len, what))) return st;
    const char *p = (const char *)r->data + r->pos;
    if (len == 0 || p[len - 1] != 0 || strlen(p) != len - 1)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s at byte %zu is not a NUL-terminated string",
                       r->path, what, r->pos);
    r->pos += len;
    *s = p;
    return ENCDEC_OK;
}

static int dtype_from_id(uint32_t id, ed_dtype *dt) {
    static const ed_dtype ids[] = {ED_F32, ED_I8, ED_I16, ED_I32, ED_F16, ED_BF16};
    if (id >= sizeof ids / sizeof ids[0]) return 0;
    *dt = ids[id];
    return 1;
}

/* Before binary version 4: the item size, which CTranslate2 read as the
 * dtype (4 float32, 2 int16, 1 int8). */
static int dtype_from_size(uint32_t size, ed_dtype *dt) {
    switch (size) {
    case 4: *dt = ED_F32; return 1;
    case 2: *dt = ED_I16; return 1;
    case 1: *dt = ED_I8; return 1;
    default: return 0;
    }
}

/* Reads one variable (everything after its name) into x; version: the
 * file's binary version. */
static encdec_status read_var(ct2_reader *r, ed_tensor *x, uint32_t version) {
    char what[64 + 256];
    uint32_t rank, id, nbytes, dim;
    snprintf(what, sizeof what, "variable %.256s rank", x->name);
    encdec_status st = read_uint(r, 1, &rank, what);
    if (st) return st;
    if (rank > ED_MAX_DIMS)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: variable %s has rank %u (at most %d supported)",
                       r->path, x->name, rank, ED_MAX_DIMS);
    x->ndim = (int)rank;
    snprintf(what, sizeof what, "variable %.256s shape", x->name);
    for (uint32_t i = 0; i < rank; i++) {
        if ((st = read_uint(r, 4, &dim, what))) return st;
        x->shape[i] = dim;
    }
    snprintf(what, sizeof what, "variable %.256s dtype", x->name);
    if ((st = read_uint(r, 1, &id, what))) return st;
    if (version >= 4 && !dtype_from_id(id, &x->dtype))
        return ed_fail(ENCDEC_ERR_DTYPE, "%s: variable %s has unknown dtype id %u (byte %zu; "
                       "known: 0..5)", r->path, x->name, id, r->pos - 1);
    if (version < 4 && !dtype_from_size(id, &x->dtype))
        return ed_fail(ENCDEC_ERR_DTYPE, "%s: variable %s has item size %u (byte %zu; binary "
                       "version %u knows 1, 2 and 4)", r->path, x->name, id, r->pos - 1, version);
    snprintf(what, sizeof what, "variable %.256s %s", x->name, version >= 4 ? "byte count" : "element count");
    if ((st = read_uint(r, 4, &nbytes, what))) return st;
    if (version < 4 && (uint64_t)nbytes * ed_dtype_size(x->dtype) > UINT32_MAX)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: variable %s: %u elements of %zu bytes (over 4 GiB)",
                       r->path, x->name, nbytes, ed_dtype_size(x->dtype));
    if (version < 4) nbytes *= (uint32_t)ed_dtype_size(x->dtype);
    size_t want = ed_dtype_size(x->dtype);
    for (int i = 0; i < x->ndim; i++)
        if (!ed_mul_ok(want, (size_t)x->shape[i], &want)) want = SIZE_MAX;
    if (want != nbytes) {
        char sb[96];
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: variable %s holds %u bytes, but %s %s needs %zu",
                       r->path, x->name, nbytes, ed_dtype_name(x->dtype),
                       ed_shape_str(sb, sizeof sb, x->ndim, x->shape), want);
    }
    snprintf(what, sizeof what, "variable %.256s data", x->name);
    if ((st = need(r, nbytes, what))) return st;
    x->nbytes = nbytes;
    x->data = r->data + r->pos;
    r->pos += nbytes;
    return ENCDEC_OK;
}

/* An int8 "X/weight" x and its f32 "X/weight_scale" sc: x becomes the f16
 * weight q / scale (rows: x's first dimension). */
static encdec_status dequantize(ed_wtab *t, ed_tensor *x, const ed_tensor *sc, const char *path) {
    size_t rows = x->ndim ? (size_t)x->shape[0] : 0, n = x->nbytes, cols = rows ? n / rows : 0;
    if (x->ndim < 2 || sc->dtype != ED_F32 || sc->ndim != 1 || (size_t)sc->shape[0] != rows)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s is int8 but %s is not an f32 vector of its %zu "
                       "rows", path, x->name, sc->name, rows);
    uint16_t *h = wtab_alloc(t, n * 2, "dequantized int8 weights");
    if (!h) return ENCDEC_ERR_NOMEM;
    const int8_t *q = x->data;
    const uint8_t *sb = sc->data;
    for (size_t r = 0; r < rows; r++) {
        float s;
        memcpy(&s, sb + 4 * r, 4);
        if (!(s > 0) || s != s || s > 3e38f)
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s row %zu has scale %g (must be positive and "
                           "finite)", path, sc->name, r, (double)s);
        for (size_t c = 0; c < cols; c++) h[r * cols + c] = ed_f2h((float)q[r * cols + c] / s);
    }
    x->dtype = ED_F16;
    x->nbytes = n * 2;
    x->data = h;
    return ENCDEC_OK;
}

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

/* Reads the whole mapped file into t. */
static encdec_status read_model(ct2_reader *r, ed_wtab *t) {
    uint32_t version, revision, n_vars, n_alias;
    const char *spec;
    encdec_status st = read_uint(r, 4, &version, "binary version");
    if (st) return st;
    if (version < 2 || version > 6)
        return ed_fail(ENCDEC_ERR_FORMAT,
                       "%s: CTranslate2 binary version %u is not supported (this reader handles 2 to 6)",
                       r->path, version);
    if ((st = read_str(r, &spec, "spec name")) || (st = read_uint(r, 4, &revision, "spec revision")) ||
        (st = read_uint(r, 4, &n_vars, "variable count")))
        return st;
    ed_tensor held = {0};   /* an int8 X/weight waiting for X/weight_scale (names are sorted) */
    char held_name[512];
    for (uint32_t i = 0; i < n_vars; i++) {
        ed_tensor x = {.file = r->path};
        char what[48];
        snprintf(what, sizeof what, "variable %u name", i);
        if ((st = read_str(r, &x.name, what))) return st;
        if (!*x.name)   /* a flipped length byte lands here: name the place, not "" */
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: variable %u of %u at byte %zu has an empty name",
                           r->path, i, n_vars, r->pos - 3);
        if ((st = read_var(r, &x, version))) return st;
        if (held.name) {
            size_t k = strlen(held.name);
            if (!strncmp(x.name, held.name, k) && !strcmp(x.name + k, "_scale") &&
                (st = dequantize(t, &held, &x, r->path)))
                return st;
            if ((st = wtab_add(t, &held))) {
                ed_err_prefix("%s", r->path);
                return st;
            }
            held.name = NULL;
        }
        if (x.dtype == ED_I8 && x.ndim >= 2 && ends_with(x.name, "/weight") &&
            strlen(x.name) < sizeof held_name) {
            held = x;
            snprintf(held_name, sizeof held_name, "%s", x.name);
            held.name = held_name;
            continue;
        }
        if ((st = wtab_add(t, &x))) {
            ed_err_prefix("%s", r->path);
            return st;
        }
    }
    if (held.name && (st = wtab_add(t, &held))) {
        ed_err_prefix("%s", r->path);
        return st;
    }
    n_alias = 0;
    if (version >= 3 && (st = read_uint(r, 4, &n_alias, "alias count"))) return st;
    for (uint32_t i = 0; i < n_alias; i++) {
        const char *alias, *target;
        char what[48];
        snprintf(what, sizeof what, "alias %u", i);
        if ((st = read_str(r, &alias, what)) || (st = read_str(r, &target, what))) return st;
        if ((st = wtab_alias(t, alias, target))) {
            ed_err_prefix("%s", r->path);
            return st;
        }
    }
    if (r->pos != r->size)
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: %zu unexpected bytes after the aliases", r->path,
                       r->size - r->pos);
    return ENCDEC_OK;
}

int ct2_header(const char *path, char *spec_name, size_t cap, uint32_t *version, uint32_t *revision) {
    ed_fmap m;
    if (ed_fmap_open(&m, path)) return 0;
    ct2_reader r = {m.data, 0, m.size, path};
    const char *spec;
    int ok = !read_uint(&r, 4, version, "binary version") && *version >= 2 &&
             !read_str(&r, &spec, "spec name") && !read_uint(&r, 4, revision, "spec revision");
    if (ok) snprintf(spec_name, cap, "%s", spec);
    ed_fmap_close(&m);
    return ok;
}

int ct2_spec_name(const char *path, char *out, size_t cap) {
    uint32_t version, revision;
    return ct2_header(path, out, cap, &version, &revision);
}

encdec_status ct2_load_file(ed_wtab *t, const char *path) {
    ed_fmap m;
    encdec_status st = ed_fmap_open(&m, path);
    if (st) return st;
    ct2_reader r = {m.data, 0, m.size, path};
    st = wtab_keep_map(t, m);       /* tensors point into it as they are read */
    return st ? st : read_model(&r, t);
}
