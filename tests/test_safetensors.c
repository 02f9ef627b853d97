/* test_safetensors.c - the weight table, dtype conversions and the
 * safetensors loader, on files written here into a temporary directory. */
#include "check.h"
#include "io/tensor.h"
#include "tmpdir.h"

#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A safetensors file: u64 header length, header, data. */
static void write_st(const char *path, const char *header, const void *data, size_t dlen) {
    size_t hlen = strlen(header);
    uint8_t *buf = malloc(8 + hlen + dlen + 1);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, header, hlen);
    if (dlen) memcpy(buf + 8 + hlen, data, dlen);
    tmp_write(path, buf, 8 + hlen + dlen);
    free(buf);
}

/* Loads path into a fresh table and frees it; returns the status. */
static encdec_status load_st(const char *path) {
    ed_wtab *t = wtab_new();
    encdec_status st = st_load_file(t, path);
    wtab_free(t);
    return st;
}

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void test_f16_bf16(void) {
    static const uint16_t h[] = {0x0000, 0x8000, 0x3c00, 0xc000, 0x3555, 0x7bff, 0x0400,
                                 0x0001, 0x03ff, 0x8001, 0x7c00, 0xfc00, 0x7e00, 0x7c01};
    static const float want[] = {0.0f, -0.0f, 1.0f, -2.0f, 0.333251953125f, 65504.0f,
                                 6.103515625e-05f, 5.9604644775390625e-08f,
                                 6.0975551605224609375e-05f, -5.9604644775390625e-08f,
                                 INFINITY, -INFINITY};
    float out[14];
    CHECK_EQ_INT(ed_to_f32(out, h, ED_F16, 14), ENCDEC_OK);
    for (int i = 0; i < 12; i++) CHECK_EQ_INT(f32_bits(out[i]), f32_bits(want[i]));
    CHECK(isnan(out[12]) && isnan(out[13]));

    static const uint16_t b[] = {0x3f80, 0x4049, 0xc0a0, 0x0001, 0x8000, 0x7f80, 0xff80, 0x7fc0};
    CHECK_EQ_INT(ed_to_f32(out, b, ED_BF16, 8), ENCDEC_OK);
    CHECK_EQ_INT(f32_bits(out[0]), f32_bits(1.0f));
    CHECK_EQ_INT(f32_bits(out[1]), f32_bits(3.140625f));
    CHECK_EQ_INT(f32_bits(out[2]), f32_bits(-5.0f));
    CHECK_EQ_INT(f32_bits(out[3]), f32_bits(0x1p-133f));          /* bf16 subnormal */
    CHECK_EQ_INT(f32_bits(out[4]), f32_bits(-0.0f));
    CHECK(isinf(out[5]) && out[5] > 0);
    CHECK(isinf(out[6]) && out[6] < 0);
    CHECK(isnan(out[7]));

    /* unaligned source, F32 copy */
    uint8_t raw[1 + 8];
    float f2[2] = {1.5f, -3.25f};
    memcpy(raw + 1, f2, 8);
    CHECK_EQ_INT(ed_to_f32(out, raw + 1, ED_F32, 2), ENCDEC_OK);
    CHECK(out[0] == 1.5f && out[1] == -3.25f);
    uint8_t rh[3] = {0, 0x00, 0x3c};
    CHECK_EQ_INT(ed_to_f32(out, rh + 1, ED_F16, 1), ENCDEC_OK);
    CHECK(out[0] == 1.0f);
    CHECK_STATUS(ed_to_f32(out, raw, ED_I8, 1), ENCDEC_ERR_DTYPE, "I8");
}

static void test_helpers(void) {
    char buf[32];
    int64_t sh[3] = {384, 80, 3};
    CHECK_STR(ed_shape_str(buf, sizeof buf, 3, sh), "[384,80,3]");
    CHECK_STR(ed_shape_str(buf, sizeof buf, 0, sh), "[]");
    CHECK_STR(ed_shape_str(buf, 6, 3, sh), "[384,");
    CHECK_EQ_INT(ed_dtype_size(ED_F32), 4);
    CHECK_EQ_INT(ed_dtype_size(ED_BF16), 2);
    CHECK_EQ_INT(ed_dtype_size(ED_I64), 8);
    CHECK_EQ_INT(ed_dtype_size(ED_BOOL), 1);
    CHECK_EQ_INT(ed_dtype_size(ED_DTYPE_COUNT), 0);
    CHECK_STR(ed_dtype_name(ED_BF16), "BF16");
    CHECK_STR(ed_dtype_name(ED_U8), "U8");
}

static void test_wtab(void) {
    ed_wtab *t = wtab_new();
    static float vals[600];
    char name[32];
    for (int i = 0; i < 600; i++) {
        vals[i] = (float)i;
        snprintf(name, sizeof name, "layer.%d.w", i);
        ed_tensor x = {.name = name, .file = "mem", .dtype = ED_F32, .ndim = 1,
                       .shape = {1}, .nbytes = 4, .data = &vals[i]};
        CHECK_EQ_INT(wtab_add(t, &x), ENCDEC_OK);
    }
    const ed_tensor *first = wtab_get(t, "layer.0.w");
    CHECK_EQ_INT(wtab_count(t), 600);
    int ok = 1;
    for (int i = 0; i < 600; i++) {
        snprintf(name, sizeof name, "layer.%d.w", i);
        const ed_tensor *x = wtab_get(t, name);
        ok &= x && x == wtab_at(t, i) && *(const float *)x->data == (float)i && strcmp(x->name, name) == 0;
    }
    CHECK(ok);
    CHECK(first == wtab_get(t, "layer.0.w"));           /* stable across growth */
    CHECK(wtab_get(t, "layer.600.w") == NULL);
    CHECK(wtab_at(t, 600) == NULL && wtab_at(t, -1) == NULL);
    CHECK_STR(wtab_get(t, "layer.7.w")->file, "mem");

    ed_tensor dup = {.name = "layer.3.w", .dtype = ED_F32, .ndim = 1, .shape = {1}, .nbytes = 4,
                     .data = vals};
    CHECK_STATUS(wtab_add(t, &dup), ENCDEC_ERR_FORMAT, "duplicate tensor name layer.3.w");
    ed_tensor bad = {.name = "bad", .dtype = ED_F32, .ndim = 1, .shape = {2}, .nbytes = 4, .data = vals};
    CHECK_STATUS(wtab_add(t, &bad), ENCDEC_ERR_FORMAT, "bad holds 4 bytes");
    CHECK_EQ_INT(wtab_alias(t, "tied", "layer.5.w"), ENCDEC_OK);
    CHECK(wtab_get(t, "tied") == wtab_get(t, "layer.5.w"));
    CHECK_EQ_INT(wtab_alias(t, "tied2", "tied"), ENCDEC_OK);
    CHECK(wtab_get(t, "tied2") == wtab_get(t, "layer.5.w"));
    CHECK_STATUS(wtab_alias(t, "x", "nope"), ENCDEC_ERR_FORMAT, "alias x refers to missing tensor nope");
    CHECK_STATUS(wtab_alias(t, "tied", "layer.6.w"), ENCDEC_ERR_FORMAT, "duplicate");
    CHECK_EQ_INT(wtab_count(t), 600);

    /* misaligned data is copied into aligned table memory */
    static uint8_t raw[9];
    float two = 2.0f;
    memcpy(raw + 1, &two, 4);
    ed_tensor mis = {.name = "mis", .dtype = ED_F32, .ndim = 0, .nbytes = 4, .data = raw + 1};
    CHECK_EQ_INT(wtab_add(t, &mis), ENCDEC_OK);
    const ed_tensor *m = wtab_get(t, "mis");
    CHECK(m && (uintptr_t)m->data % 4 == 0 && *(const float *)m->data == 2.0f);
    float *own = wtab_alloc(t, 100, "test");
    CHECK(own && (uintptr_t)own % 64 == 0);
    wtab_free(t);
    wtab_free(NULL);
}

/* Data for the good file: b F16[4] @0, a F32[2,3] @8, c BF16[2] @32,
 * s I32 scalar @36, z F32[0] @40. */
static const char GOOD_HDR[] =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]},"
    "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
    "\"c\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[32,36]},"
    "\"s\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[36,40]},"
    "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[40,40]}}";

static size_t good_data(uint8_t *d) {
    uint16_t b[4] = {0x3c00, 0xc000, 0x0001, 0x7c00};
    float a[6] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
    uint16_t c[2] = {0x3f80, 0xc0a0};
    int32_t s = 7;
    memcpy(d, b, 8);
    memcpy(d + 8, a, 24);
    memcpy(d + 32, c, 4);
    memcpy(d + 36, &s, 4);
    return 40;
}

static void test_good_file(void) {
    uint8_t data[40];
    size_t n = good_data(data);
    char hdr[sizeof GOOD_HDR + 8];
    /* 8 + header length odd: every tensor starts misaligned in the file */
    snprintf(hdr, sizeof hdr, "%s%s", GOOD_HDR, (8 + strlen(GOOD_HDR)) % 2 ? "" : " ");
    const char *path = tmp_path("good.safetensors");
    write_st(path, hdr, data, n);

    ed_wtab *t = wtab_new();
    CHECK_EQ_INT(st_load_file(t, path), ENCDEC_OK);
    CHECK_EQ_INT(wtab_count(t), 5);
    CHECK(wtab_get(t, "__metadata__") == NULL);
    const ed_tensor *a = wtab_get(t, "a"), *b = wtab_get(t, "b"), *c = wtab_get(t, "c");
    const ed_tensor *s = wtab_get(t, "s"), *z = wtab_get(t, "z");
    CHECK(a && b && c && s && z);
    if (a && b && c && s && z) {
        CHECK_EQ_INT(a->dtype, ED_F32);
        CHECK_EQ_INT(a->ndim, 2);
        CHECK_EQ_INT(a->shape[0], 2);
        CHECK_EQ_INT(a->shape[1], 3);
        CHECK_EQ_INT(a->nbytes, 24);
        CHECK_STR(a->file, path);
        CHECK((uintptr_t)a->data % 4 == 0);
        CHECK_NEAR(((const float *)a->data)[5], 2.5, 0);
        CHECK_NEAR(((const float *)a->data)[1], 0.5, 0);
        float f[4];
        CHECK_EQ_INT(b->dtype, ED_F16);
        CHECK_EQ_INT(ed_to_f32(f, b->data, b->dtype, 4), ENCDEC_OK);
        CHECK(f[0] == 1.0f && f[1] == -2.0f && f[2] == 0x1p-24f && isinf(f[3]));
        CHECK_EQ_INT(c->dtype, ED_BF16);
        CHECK_EQ_INT(ed_to_f32(f, c->data, c->dtype, 2), ENCDEC_OK);
        CHECK(f[0] == 1.0f && f[1] == -5.0f);
        CHECK_EQ_INT(s->ndim, 0);
        CHECK_EQ_INT(s->nbytes, 4);
        CHECK_EQ_INT(*(const int32_t *)s->data, 7);
        CHECK_EQ_INT(z->nbytes, 0);
        CHECK_EQ_INT(z->shape[0], 0);
        CHECK(wtab_at(t, 0) == b);             /* table order = storage order */
    }
    /* a second file with a clashing name fails, naming the tensor */
    CHECK_STATUS(st_load_file(t, path), ENCDEC_ERR_FORMAT, "duplicate tensor name");
    wtab_free(t);

    /* cut at every length: each must fail cleanly */
    size_t full = 8 + strlen(hdr) + n;
    uint8_t *whole = malloc(full);
    FILE *fp = fopen(path, "rb");
    CHECK(fp && fread(whole, 1, full, fp) == full);
    if (fp) fclose(fp);
    int all_fail = 1;
    for (size_t cut = 0; cut < full; cut++) {
        tmp_write(tmp_path("cut.safetensors"), whole, cut);
        encdec_status st = load_st(tmp_path("cut.safetensors"));
        all_fail &= st == ENCDEC_ERR_FORMAT;
    }
    CHECK(all_fail);
    free(whole);

    /* st_load_dir picks model.safetensors */
    char sub[128];
    snprintf(sub, sizeof sub, "%s/single", tmp_dir);
    CHECK(mkdir(sub, 0700) == 0);
    snprintf(sub, sizeof sub, "%s/single/model.safetensors", tmp_dir);
    write_st(sub, GOOD_HDR, data, n);
    t = wtab_new();
    snprintf(sub, sizeof sub, "%s/single", tmp_dir);
    CHECK_EQ_INT(st_load_dir(t, sub), ENCDEC_OK);
    CHECK_EQ_INT(wtab_count(t), 5);
    wtab_free(t);
}

#define BAD(name, hdr, dlen, want, substr) do { uint8_t z_[64] = {0}; \
    write_st(tmp_path(name), hdr, z_, dlen); \
    CHECK_STATUS(load_st(tmp_path(name)), want, substr); } while (0)

static void test_bad_files(void) {
    CHECK_STATUS(load_st(tmp_path("missing.safetensors")), ENCDEC_ERR_IO, "No such file");
    tmp_write(tmp_path("empty"), "", 0);
    CHECK_STATUS(load_st(tmp_path("empty")), ENCDEC_ERR_FORMAT, "empty: file is 0 bytes, too short");
    tmp_write(tmp_path("five"), "\x02\0\0\0\0", 5);
    CHECK_STATUS(load_st(tmp_path("five")), ENCDEC_ERR_FORMAT, "too short");
    uint8_t big[1000] = {0x40, 0xe2, 0x01};               /* 123456 */
    tmp_write(tmp_path("biglen"), big, sizeof big);
    CHECK_STATUS(load_st(tmp_path("biglen")), ENCDEC_ERR_FORMAT, "header length 123456 exceeds the 992 bytes after the length field (file size 1000)");
    uint8_t huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'};
    tmp_write(tmp_path("hugelen"), huge, sizeof huge);
    CHECK_STATUS(load_st(tmp_path("hugelen")), ENCDEC_ERR_FORMAT, "(file size 16)");

    BAD("json", "{\"a\":{\"dtype\":", 0, ENCDEC_ERR_FORMAT, "json: header is not valid JSON");
    BAD("arr", "[1,2]", 0, ENCDEC_ERR_FORMAT, "header is not a JSON object");
    BAD("trail", "{} x", 0, ENCDEC_ERR_FORMAT, "trailing bytes");
    BAD("notobj", "{\"w\":5}", 0, ENCDEC_ERR_FORMAT, "tensor w is not a JSON object");
    BAD("nodtype", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, ENCDEC_ERR_FORMAT, "tensor w has no dtype");
    BAD("noshape", "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, ENCDEC_ERR_FORMAT, "tensor w has no shape");
    BAD("nooffs", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, ENCDEC_ERR_FORMAT, "tensor w has no data_offsets");
    BAD("offs3", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, ENCDEC_ERR_FORMAT, "data_offsets");
    BAD("fp8", "{\"x\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, ENCDEC_ERR_DTYPE,
        "fp8: tensor x has unknown dtype \"F8_E4M3\"");
    BAD("negdim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, ENCDEC_ERR_FORMAT, "shape[0]");
    BAD("fracdim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2.5],\"data_offsets\":[0,4]}}", 4, ENCDEC_ERR_FORMAT, "shape[1]");
    BAD("strdim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4, ENCDEC_ERR_FORMAT, "shape[0]");
    BAD("hugedim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}",
        4, ENCDEC_ERR_FORMAT, "overflows");
    BAD("bigdim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}}", 4, ENCDEC_ERR_FORMAT, "shape[0]");
    BAD("rank5", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, ENCDEC_ERR_FORMAT, "5 dims");
    BAD("range", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 8, ENCDEC_ERR_FORMAT,
        "range: tensor w: data_offsets [4,12] out of range of the 8-byte data section");
    BAD("backw", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, ENCDEC_ERR_FORMAT, "out of range");
    BAD("negoff", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8, ENCDEC_ERR_FORMAT, "not valid offsets");
    BAD("mismatch", "{\"w\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,8]}}", 16, ENCDEC_ERR_FORMAT,
        "tensor w: data_offsets hold 8 bytes, but F16 [2,3] needs 12");
    BAD("overlap", "{\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, ENCDEC_ERR_FORMAT,
        "tensors u and v overlap");
    BAD("dupkey", "{\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                  "\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, ENCDEC_ERR_FORMAT,
        "duplicate tensor name u");

    ed_wtab *t = wtab_new();
    CHECK_STATUS(st_load_dir(t, tmp_dir), ENCDEC_ERR_NO_MODEL, "no model.safetensors");
    CHECK_STATUS(st_load_dir(t, tmp_path("nodir")), ENCDEC_ERR_IO, "not a directory");
    CHECK_STATUS(st_load_file(t, tmp_dir), ENCDEC_ERR_IO, "not a regular file");
    CHECK_EQ_INT(wtab_count(t), 0);
    wtab_free(t);
}

static void write_index(const char *dir, const char *map) {
    char path[256], text[512];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    snprintf(text, sizeof text, "{\"metadata\":{\"total_size\":24},\"weight_map\":{%s}}", map);
    tmp_write(path, text, strlen(text));
}

static void test_sharded(void) {
    char dir[128], p1[192], p2[192];
    snprintf(dir, sizeof dir, "%s/sharded", tmp_dir);
    CHECK(mkdir(dir, 0700) == 0);
    snprintf(p1, sizeof p1, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/model-00002-of-00002.safetensors", dir);
    float d1[3] = {1, 2, 3}, d2[2] = {-1, -2};
    write_st(p1, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"c\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]}}", d1, 12);
    write_st(p2, "{\"b\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", d2, 8);
    write_index(dir, "\"a\":\"model-00001-of-00002.safetensors\",\"b\":\"model-00002-of-00002.safetensors\","
                     "\"c\":\"model-00001-of-00002.safetensors\"");
    ed_wtab *t = wtab_new();
    CHECK_EQ_INT(st_load_dir(t, dir), ENCDEC_OK);
    CHECK_EQ_INT(wtab_count(t), 3);
    const ed_tensor *a = wtab_get(t, "a"), *b = wtab_get(t, "b"), *c = wtab_get(t, "c");
    CHECK(a && b && c);
    if (a && b && c) {
        CHECK_STR(a->file, p1);
        CHECK_STR(b->file, p2);
        CHECK_EQ_INT(b->ndim, 2);
        CHECK_EQ_INT(b->shape[1], 2);
        CHECK(((const float *)b->data)[1] == -2.0f);
        CHECK(*(const float *)c->data == 3.0f);
    }
    wtab_free(t);

#define BAD_INDEX(map, want, substr) do { write_index(dir, map); ed_wtab *t_ = wtab_new(); \
    CHECK_STATUS(st_load_dir(t_, dir), want, substr); wtab_free(t_); } while (0)
    BAD_INDEX("\"a\":\"model-00001-of-00002.safetensors\",\"d\":\"model-00002-of-00002.safetensors\"",
              ENCDEC_ERR_FORMAT, "tensor d is not in its shard model-00002-of-00002.safetensors");
    BAD_INDEX("\"a\":\"model-00002-of-00002.safetensors\",\"b\":\"model-00002-of-00002.safetensors\"",
              ENCDEC_ERR_FORMAT, "tensor a is not in its shard");
    BAD_INDEX("\"a\":\"../model-00001-of-00002.safetensors\"", ENCDEC_ERR_FORMAT, "bad shard name");
    BAD_INDEX("\"a\":7", ENCDEC_ERR_FORMAT, "tensor a has a bad shard name");
    BAD_INDEX("\"a\":\"model-00003-of-00003.safetensors\"", ENCDEC_ERR_IO, "No such file");
    BAD_INDEX("", ENCDEC_ERR_FORMAT, "no weight_map entries");
    const char *ip = "{\"weight_map\":";
    snprintf(p1, sizeof p1, "%s/model.safetensors.index.json", dir);
    tmp_write(p1, ip, strlen(ip));
    t = wtab_new();
    CHECK_STATUS(st_load_dir(t, dir), ENCDEC_ERR_FORMAT, "not valid JSON");
    wtab_free(t);
}

int main(void) {
    if (!tmp_new("ed_st")) return 2;
    test_f16_bf16();
    test_helpers();
    test_wtab();
    test_good_file();
    test_bad_files();
    test_sharded();
    tmp_remove(tmp_dir);
    return check_done();
}
