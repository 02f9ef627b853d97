/* test_weight_check.c - corrupt weights are a named error at load, not
 * confident garbage.
 *
 * From the real tiny.en CTranslate2 model (float16): a copy of its
 * directory whose model.bin gets, one at a time, a NaN, an Inf and an
 * out-of-range value (1808: what a flipped exponent bit made of an embedding
 * in the report that asked for this check) written into one f16 element of
 * one matrix, and a NaN in a layer norm's 384 values. Each load must fail
 * with ENCDEC_ERR_FORMAT naming the file, the tensor, the element (row and
 * column) and the value; the pristine copy must load; with no_weight_check
 * the NaN model loads (the check is what catches it). The element offsets
 * come from this test's own reading of the model.bin layout (not the
 * library's loader). Skips without tiny.en.
 */
#include "check.h"
#include "golden.h"
#include "tmpdir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint8_t *g_bin;   /* the original model.bin */
static size_t g_len;

static uint32_t rd(const uint8_t *p, int n) {
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Byte offset of variable `name`'s data in model.bin; its columns in *cols. */
static size_t var_offset(const char *name, uint32_t *cols) {
    size_t o = 4;
    o += 2 + rd(g_bin + o, 2);   /* spec name */
    o += 4;                      /* revision */
    uint32_t n = rd(g_bin + o, 4);
    o += 4;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = rd(g_bin + o, 2);
        const char *vn = (const char *)g_bin + o + 2;
        o += 2 + len;
        uint32_t rank = g_bin[o++], last = 1;
        for (uint32_t k = 0; k < rank; k++, o += 4) last = rd(g_bin + o, 4);
        o += 1;   /* dtype id */
        uint32_t nbytes = rd(g_bin + o, 4);
        o += 4;
        if (!strcmp(vn, name)) {
            *cols = last;
            return o;
        }
        o += nbytes;
    }
    fprintf(stderr, "no variable %s in model.bin\n", name);
    exit(2);
}

/* model.bin in dir with f16 element (row, col) of `name` set to h; returns
 * the load status (a model that loads is freed). */
static encdec_status load_with(const char *dir, const char *name, int row, int col, uint16_t h,
                               int no_check) {
    uint32_t cols;
    size_t at = var_offset(name, &cols) + 2 * ((size_t)row * cols + (size_t)col);
    uint8_t keep[2] = {g_bin[at], g_bin[at + 1]};
    g_bin[at] = (uint8_t)(h & 0xff);
    g_bin[at + 1] = (uint8_t)(h >> 8);
    tmp_write(tmp_join(dir, "model.bin"), g_bin, g_len);
    g_bin[at] = keep[0];
    g_bin[at + 1] = keep[1];
    encdec_model_params mp = {ENCDEC_COMPUTE_F32, ENCDEC_ISA_AUTO, no_check};
    encdec_model *m = NULL;
    encdec_status st = encdec_model_load_ex(dir, &mp, &m);
    encdec_model_free(m);
    return st;
}

/* A tensor the loader converted and dropped (a table-owned copy: the
 * convolution of a CTranslate2 float32 model, whose unaligned data was
 * copied) is passed over by the check, not read after it was freed (it
 * was: such models crashed at load). */
static void dropped_tensor(void) {
    ed_wtab *t = wtab_new();
    float *a = wtab_alloc(t, 64 * sizeof(float), "test");
    for (int i = 0; i < 64; i++) a[i] = (float)i;
    ed_tensor x = {.name = "conv", .file = "test", .dtype = ED_F32, .ndim = 1, .shape = {64},
                   .nbytes = 64 * sizeof(float), .data = a};
    CHECK_EQ_INT(wtab_add(t, &x), ENCDEC_OK);
    CHECK_EQ_INT(wl_check(t), ENCDEC_OK);
    wtab_drop(t, a, 64 * sizeof(float));
    CHECK(wtab_get(t, "conv") && wtab_get(t, "conv")->data == NULL);
    CHECK_EQ_INT(wl_check(t), ENCDEC_OK);
    wtab_free(t);
}

int main(void) {
    dropped_tensor();
    char src[1024];
    if (!golden_find_model(src, sizeof src, "ENCDEC_TINY_EN", "whisper-tiny.en"))
        return check_skip("whisper tiny.en not installed (scripts/fetch-model.sh tiny.en)");
    if (!tmp_new("encdec-weight-check")) return 2;
    static const char *const FILES[] = {"config.json", "tokenizer.json", "vocabulary.txt"};
    for (int i = 0; i < 3; i++) {
        char p[1100];
        snprintf(p, sizeof p, "%s/%s", src, FILES[i]);
        if (access(p, R_OK) == 0 && symlink(p, tmp_path(FILES[i])) != 0) {
            perror("symlink");
            return 2;
        }
    }
    char bin[1100];
    snprintf(bin, sizeof bin, "%s/model.bin", src);
    FILE *f = fopen(bin, "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    g_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g_bin = malloc(g_len);
    if (!g_bin || fread(g_bin, 1, g_len, f) != g_len) return 2;
    fclose(f);

    /* f16 bit patterns: NaN 0x7e00, +Inf 0x7c00, 1808 = 0x6710, -1808 0xe710 */
    encdec_status st = load_with(tmp_dir, "decoder/embeddings/weight", 3, 82, 0x7e00, 0);
    CHECK_STATUS(st, ENCDEC_ERR_FORMAT, "model.bin: tensor decoder/embeddings/weight [51864,384]: "
                                        "element 1234 (row 3, column 82) is NaN");
    st = load_with(tmp_dir, "encoder/layer_1/ffn/linear_0/weight", 1000, 5, 0x7c00, 0);
    CHECK_STATUS(st, ENCDEC_ERR_FORMAT, "encoder/layer_1/ffn/linear_0/weight [1536,384]: element "
                                        "384005 (row 1000, column 5) is +Inf");
    st = load_with(tmp_dir, "decoder/layer_2/self_attention/linear_1/weight", 383, 383, 0xe710, 0);
    CHECK_STATUS(st, ENCDEC_ERR_FORMAT, "element 147455 (row 383, column 383) is -1808, ");
    CHECK(strstr(encdec_last_error(), "times the RMS of the tensor's other values") != NULL);
    CHECK(strstr(encdec_last_error(), "the file is corrupt") != NULL);
    CHECK(strstr(encdec_last_error(), "--no-weight-check") != NULL);
    st = load_with(tmp_dir, "encoder/layer_0/ffn/layer_norm/gamma", 0, 17, 0xfe00, 0);
    CHECK_STATUS(st, ENCDEC_ERR_FORMAT, "encoder/layer_0/ffn/layer_norm/gamma [384]: element 17 is NaN");

    /* the check is what catches it: off, the NaN model loads; the pristine copy loads */
    CHECK_EQ_INT(load_with(tmp_dir, "decoder/embeddings/weight", 3, 82, 0x7e00, 1), ENCDEC_OK);
    uint32_t cols;
    size_t at = var_offset("decoder/embeddings/weight", &cols);
    uint16_t orig = (uint16_t)(g_bin[at] | g_bin[at + 1] << 8);
    CHECK_EQ_INT(load_with(tmp_dir, "decoder/embeddings/weight", 0, 0, orig, 0), ENCDEC_OK);

    free(g_bin);
    tmp_remove(tmp_dir);
    return check_done();
}
