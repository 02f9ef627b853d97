/* test_ct2.c - the CTranslate2 model.bin loader: a model.bin built byte by
 * byte here, every truncation of it, corrupt variants, binary versions 2
 * and 3 (item sizes, aliases from 3), and (when present)
 * the real faster-whisper tiny.en model. */
#include "check.h"
#include "io/tensor.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[64];
static char g_path[128];

typedef struct {
    uint8_t b[1024];
    size_t n;
} buf;

static void put(buf *o, const void *p, size_t n) {
    if (o->n + n > sizeof o->b) { fprintf(stderr, "test buffer full\n"); exit(2); }
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void put_u8(buf *o, uint8_t v) { put(o, &v, 1); }
static void put_u16(buf *o, uint16_t v) { uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)}; put(o, x, 2); }
static void put_u32(buf *o, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(o, x, 4);
}
static void put_str(buf *o, const char *s) { put_u16(o, (uint16_t)(strlen(s) + 1)); put(o, s, strlen(s) + 1); }

/* One variable: name, shape, CT2 dtype id, n_bytes, data. */
static void put_var(buf *o, const char *name, int rank, const uint32_t *shape, uint8_t id,
                    const void *data, uint32_t nbytes) {
    put_str(o, name);
    put_u8(o, (uint8_t)rank);
    for (int i = 0; i < rank; i++) put_u32(o, shape[i]);
    put_u8(o, id);
    put_u32(o, nbytes);
    put(o, data, nbytes);
}

enum { CT_F32 = 0, CT_I8 = 1, CT_I16 = 2, CT_I32 = 3, CT_F16 = 4, CT_BF16 = 5 };

/* The hand-built model: version, spec, 6 variables, 1 alias. */
static void build_model(buf *o, uint32_t version) {
    o->n = 0;
    put_u32(o, version);
    put_str(o, "TestSpec");
    put_u32(o, 2);
    put_u32(o, 6);
    int16_t heads = 6;
    put_var(o, "a/num_heads", 0, NULL, CT_I16, &heads, 2);
    uint16_t w[6] = {0x3c00, 0x4000, 0x4200, 0xbc00, 0x0001, 0x7c00};   /* 1 2 3 -1 2^-24 inf */
    put_var(o, "a/w", 2, (uint32_t[]){2, 3}, CT_F16, w, 12);
    float bias[3] = {0.25f, -1.5f, 8.0f};
    put_var(o, "b/bias", 1, (uint32_t[]){3}, CT_F32, bias, 12);
    int8_t q[4] = {-128, -1, 0, 127};
    put_var(o, "b/q", 1, (uint32_t[]){4}, CT_I8, q, 4);
    uint16_t bf[2] = {0x3f80, 0xc0a0};                                   /* 1 -5 */
    put_var(o, "c/bf", 1, (uint32_t[]){2}, CT_BF16, bf, 4);
    int32_t ids[2] = {50257, -7};
    put_var(o, "d/ids", 1, (uint32_t[]){2}, CT_I32, ids, 8);
    put_u32(o, 1);
    put_str(o, "e/proj");
    put_str(o, "a/w");
}

static void write_buf(const void *p, size_t n) {
    FILE *f = fopen(g_path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) { perror(g_path); exit(2); }
    fclose(f);
}

static encdec_status load_bytes(const void *p, size_t n) {
    write_buf(p, n);
    ed_wtab *t = wtab_new();
    encdec_status st = ct2_load_file(t, g_path);
    wtab_free(t);
    return st;
}

static void test_good(void) {
    buf o;
    build_model(&o, 6);
    write_buf(o.b, o.n);
    ed_wtab *t = wtab_new();
    CHECK_EQ_INT(ct2_load_file(t, g_path), ENCDEC_OK);
    CHECK_EQ_INT(wtab_count(t), 6);
    const ed_tensor *h = wtab_get(t, "a/num_heads"), *w = wtab_get(t, "a/w");
    const ed_tensor *b = wtab_get(t, "b/bias"), *q = wtab_get(t, "b/q");
    const ed_tensor *bf = wtab_get(t, "c/bf"), *ids = wtab_get(t, "d/ids");
    CHECK(h && w && b && q && bf && ids);
    if (!(h && w && b && q && bf && ids)) { wtab_free(t); return; }
    CHECK_EQ_INT(h->ndim, 0);
    CHECK_EQ_INT(h->dtype, ED_I16);
    CHECK_EQ_INT(h->nbytes, 2);
    CHECK_EQ_INT(*(const int16_t *)h->data, 6);
    CHECK_STR(h->file, g_path);

    CHECK_EQ_INT(w->dtype, ED_F16);
    CHECK_EQ_INT(w->ndim, 2);
    CHECK_EQ_INT(w->shape[0], 2);
    CHECK_EQ_INT(w->shape[1], 3);
    CHECK_EQ_INT(w->nbytes, 12);
    float f[6];
    CHECK_EQ_INT(ed_to_f32(f, w->data, w->dtype, 6), ENCDEC_OK);
    CHECK(f[0] == 1 && f[1] == 2 && f[2] == 3 && f[3] == -1 && f[4] == 0x1p-24f && isinf(f[5]));

    CHECK_EQ_INT(b->dtype, ED_F32);
    CHECK((uintptr_t)b->data % 4 == 0);
    CHECK(((const float *)b->data)[0] == 0.25f && ((const float *)b->data)[2] == 8.0f);
    CHECK_EQ_INT(q->dtype, ED_I8);
    CHECK_EQ_INT(((const int8_t *)q->data)[0], -128);
    CHECK_EQ_INT(((const int8_t *)q->data)[3], 127);
    CHECK_EQ_INT(bf->dtype, ED_BF16);
    CHECK_EQ_INT(ed_to_f32(f, bf->data, bf->dtype, 2), ENCDEC_OK);
    CHECK(f[0] == 1 && f[1] == -5);
    CHECK_EQ_INT(ids->dtype, ED_I32);
    CHECK((uintptr_t)ids->data % 4 == 0);
    CHECK_EQ_INT(((const int32_t *)ids->data)[0], 50257);
    CHECK_EQ_INT(((const int32_t *)ids->data)[1], -7);

    CHECK(wtab_get(t, "e/proj") == w);
    CHECK(wtab_get(t, "a/w/") == NULL);
    wtab_free(t);

    for (uint32_t v = 4; v <= 5; v++) {       /* same layout */
        build_model(&o, v);
        CHECK_EQ_INT(load_bytes(o.b, o.n), ENCDEC_OK);
    }
}

static void test_truncated(void) {
    buf o;
    build_model(&o, 6);
    int all = 1;
    for (size_t cut = 0; cut < o.n; cut++) {
        encdec_status st = load_bytes(o.b, cut);
        int ok = st == ENCDEC_ERR_FORMAT && strstr(encdec_last_error(), "truncated at byte");
        if (!ok) fprintf(stderr, "cut %zu: %s\n", cut, encdec_last_error());
        all &= ok;
    }
    CHECK(all);
    CHECK_STATUS(load_bytes(o.b, 0), ENCDEC_ERR_FORMAT, "truncated at byte 0: binary version needs 4 bytes, 0 left");
    CHECK_STATUS(load_bytes(o.b, o.n - 3), ENCDEC_ERR_FORMAT, "alias 0 needs");
    uint8_t extra[sizeof o.b + 1];
    memcpy(extra, o.b, o.n);
    extra[o.n] = 0;
    CHECK_STATUS(load_bytes(extra, o.n + 1), ENCDEC_ERR_FORMAT, "1 unexpected bytes after the aliases");
}

/* One variable as binary versions before 4 wrote it: name, shape, item
 * size, element count, data. */
static void put_old_var(buf *o, const char *name, int rank, const uint32_t *shape, uint8_t size,
                        const void *data, uint32_t count) {
    put_str(o, name);
    put_u8(o, (uint8_t)rank);
    for (int i = 0; i < rank; i++) put_u32(o, shape[i]);
    put_u8(o, size);
    put_u32(o, count);
    put(o, data, (size_t)size * count);
}

/* Binary versions 2 and 3: an item size and an element count in place of
 * the dtype id and the byte count; aliases only from 3. */
static void test_old_versions(void) {
    for (uint32_t version = 2; version <= 3; version++) {
        buf o = {{0}, 0};
        int16_t v[3] = {1, -2, 3};
        int8_t q[2] = {-5, 7};
        float f = 0.5f;
        put_u32(&o, version);
        put_str(&o, "TransformerSpec");
        put_u32(&o, 3);
        put_u32(&o, 3);
        const uint32_t s3[1] = {3}, s2[1] = {2};
        put_old_var(&o, "a/f", 0, NULL, 4, &f, 1);    /* item size 4, one element: f32 */
        put_old_var(&o, "a/i16", 1, s3, 2, v, 3);     /* 2: int16, three of them */
        put_old_var(&o, "a/i8", 1, s2, 1, q, 2);      /* 1: int8 */
        if (version >= 3) {
            put_u32(&o, 1);
            put_str(&o, "b/alias");
            put_str(&o, "a/i16");
        }
        write_buf(o.b, o.n);
        ed_wtab *t = wtab_new();
        CHECK_EQ_INT(ct2_load_file(t, g_path), ENCDEC_OK);
        const ed_tensor *x = wtab_get(t, "a/i16"), *y = wtab_get(t, "a/i8"), *z = wtab_get(t, "a/f");
        CHECK(x && x->dtype == ED_I16 && x->nbytes == 6 && x->shape[0] == 3 && !memcmp(x->data, v, 6));
        CHECK(y && y->dtype == ED_I8 && y->nbytes == 2 && !memcmp(y->data, q, 2));
        CHECK(z && z->dtype == ED_F32 && z->ndim == 0 && !memcmp(z->data, &f, 4));
        CHECK(wtab_get(t, "b/alias") == (version >= 3 ? x : NULL));
        wtab_free(t);
        uint32_t bad[] = {3, 8, 0};   /* no such item size */
        for (int i = 0; bad[i]; i++) {
            o.b[4 + 2 + 16 + 4 + 4 + 2 + 4 + 1] = (uint8_t)bad[i];   /* a/f's item size */
            CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_DTYPE, "item size");
        }
        o.b[4 + 2 + 16 + 4 + 4 + 2 + 4 + 1] = 4;
        o.b[4 + 2 + 16 + 4 + 4 + 2 + 4 + 5] = 0x40;   /* 2^30 + 1 floats */
        CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "a/f: 1073741825 elements of 4 bytes (over 4 GiB)");
    }
}

static void test_corrupt(void) {
    buf o;
    build_model(&o, 7);
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "CTranslate2 binary version 7 is not supported");
    build_model(&o, 1);
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "binary version 1 is not supported");

    /* header + one variable, then a patched field */
    const size_t var0 = 4 + 2 + 9 + 4 + 4;      /* version, spec, revision, count */
    int16_t v = 1;
#define ONE_VAR(rank, shape, id, data, nb) do { o.n = 0; put_u32(&o, 6); put_str(&o, "TestSpec"); \
    put_u32(&o, 1); put_u32(&o, 1); put_var(&o, "x/y", rank, shape, id, data, nb); put_u32(&o, 0); } while (0)
    ONE_VAR(0, NULL, CT_I16, &v, 2);
    CHECK_EQ_INT(o.n, var0 + 2 + 4 + 1 + 1 + 4 + 2 + 4);
    CHECK_EQ_INT(load_bytes(o.b, o.n), ENCDEC_OK);
    ONE_VAR(0, NULL, 9, &v, 2);
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_DTYPE, "variable x/y has unknown dtype id 9 (byte 30;");
    o.n = 0;                                    /* an empty name (a flipped length byte) */
    put_u32(&o, 6); put_str(&o, "TestSpec"); put_u32(&o, 1); put_u32(&o, 1);
    put_var(&o, "", 0, NULL, CT_I16, &v, 2);
    put_u32(&o, 0);
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "variable 0 of 1 at byte 23 has an empty name");
    ONE_VAR(0, NULL, CT_F32, &v, 2);
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "variable x/y holds 2 bytes, but F32 [] needs 4");
    uint32_t sh5[5] = {1, 1, 1, 1, 2};
    ONE_VAR(5, sh5, CT_I8, &v, 2);
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "variable x/y has rank 5");
    uint32_t shbig[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
    ONE_VAR(4, shbig, CT_F32, &v, 2);
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "needs");

    ONE_VAR(0, NULL, CT_I16, &v, 2);
    o.b[var0 + 2 + 3] = 'z';                    /* name loses its NUL */
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "variable 0 name at byte 25 is not a NUL-terminated string");
    ONE_VAR(0, NULL, CT_I16, &v, 2);
    o.b[var0 + 2 + 1] = 0;                      /* "x\0y\0" */
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "not a NUL-terminated string");
    ONE_VAR(0, NULL, CT_I16, &v, 2);
    o.b[var0] = 0;                              /* zero-length string */
    o.b[var0 + 1] = 0;
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "not a NUL-terminated string");
    ONE_VAR(0, NULL, CT_I16, &v, 2);
    o.b[var0 + 2 + 4 + 1 + 1 + 3] = 0x80;       /* n_bytes = 2^31 + 2 */
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "holds 2147483650 bytes");

    /* duplicate variable; alias to a missing variable */
    o.n = 0;
    put_u32(&o, 6); put_str(&o, "S"); put_u32(&o, 1); put_u32(&o, 2);
    put_var(&o, "x", 0, NULL, CT_I16, &v, 2);
    put_var(&o, "x", 0, NULL, CT_I16, &v, 2);
    put_u32(&o, 0);
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "duplicate tensor name x");
    o.n = 0;
    put_u32(&o, 6); put_str(&o, "S"); put_u32(&o, 1); put_u32(&o, 1);
    put_var(&o, "x", 0, NULL, CT_I16, &v, 2);
    put_u32(&o, 1); put_str(&o, "y"); put_str(&o, "nope");
    CHECK_STATUS(load_bytes(o.b, o.n), ENCDEC_ERR_FORMAT, "alias y refers to missing tensor nope");

    char missing[160];
    snprintf(missing, sizeof missing, "%s/absent.bin", g_dir);
    ed_wtab *t = wtab_new();
    CHECK_STATUS(ct2_load_file(t, missing), ENCDEC_ERR_IO, "absent.bin: No such file");
    wtab_free(t);
}

static void check_shape(const ed_wtab *t, const char *name, ed_dtype dt, int ndim, int64_t d0,
                        int64_t d1, int64_t d2) {
    const ed_tensor *x = wtab_get(t, name);
    int64_t want[3] = {d0, d1, d2};
    int ok = x && x->dtype == dt && x->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = x->shape[i] == want[i];
    if (!ok) fprintf(stderr, "real model: %s has the wrong dtype or shape\n", name);
    CHECK(ok);
}

/* The faster-whisper tiny.en conversion (float16), when it is installed. */
static void test_real_model(void) {
    char path[512];
    const char *dir = getenv("ENCDEC_TINY_EN"), *home = getenv("HOME");
    if (dir) snprintf(path, sizeof path, "%s/model.bin", dir);
    else snprintf(path, sizeof path, "%s/.cache/encdec/models/whisper-tiny.en/model.bin", home ? home : "");
    if (access(path, R_OK) != 0) {
        printf("note: %s not found, real-model checks skipped\n", path);
        return;
    }
    ed_wtab *t = wtab_new();
    CHECK_EQ_INT(ct2_load_file(t, path), ENCDEC_OK);
    CHECK_EQ_INT(wtab_count(t), 148);
    check_shape(t, "encoder/conv1/weight", ED_F16, 3, 384, 80, 3);
    check_shape(t, "encoder/conv2/weight", ED_F16, 3, 384, 384, 3);
    check_shape(t, "encoder/position_encodings/encodings", ED_F16, 2, 1500, 384, 0);
    check_shape(t, "encoder/layer_0/self_attention/linear_0/weight", ED_F16, 2, 1152, 384, 0);
    check_shape(t, "encoder/layer_3/ffn/linear_1/weight", ED_F16, 2, 384, 1536, 0);
    check_shape(t, "decoder/embeddings/weight", ED_F16, 2, 51864, 384, 0);
    check_shape(t, "decoder/position_encodings/encodings", ED_F16, 2, 448, 384, 0);
    check_shape(t, "decoder/layer_0/attention/linear_0/weight", ED_F16, 2, 384, 384, 0);
    check_shape(t, "decoder/layer_3/attention/linear_1/weight", ED_F16, 2, 768, 384, 0);
    check_shape(t, "decoder/layer_3/attention/linear_2/bias", ED_F16, 1, 384, 0, 0);
    check_shape(t, "encoder/num_heads", ED_I16, 0, 0, 0, 0);
    const ed_tensor *h = wtab_get(t, "decoder/num_heads");
    CHECK(h && h->dtype == ED_I16 && *(const int16_t *)h->data == 6);
    CHECK(wtab_get(t, "decoder/projection/weight") == wtab_get(t, "decoder/embeddings/weight"));
    const ed_tensor *c = wtab_get(t, "encoder/conv1/weight");
    if (c) {
        float f[4];
        CHECK_EQ_INT(ed_to_f32(f, c->data, c->dtype, 4), ENCDEC_OK);
        CHECK(f[0] == 0.028778076171875f && f[1] == 0.0286407470703125f &&
              f[2] == 0.0300445556640625f && f[3] == -0.0222930908203125f);
    }
    int aligned = 1;
    for (int i = 0; i < wtab_count(t); i++) {
        const ed_tensor *x = wtab_at(t, i);
        aligned &= (uintptr_t)x->data % ed_dtype_size(x->dtype) == 0;
    }
    CHECK(aligned);
    wtab_free(t);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/ed_ct2_XXXXXX");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); return 2; }
    snprintf(g_path, sizeof g_path, "%s/model.bin", g_dir);
    test_good();
    test_old_versions();
    test_truncated();
    test_corrupt();
    test_real_model();
    unlink(g_path);
    rmdir(g_dir);
    return check_done();
}
