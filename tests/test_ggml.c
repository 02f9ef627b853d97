/* test_ggml.c - whisper.cpp's model files (ggml-*.bin) against Hugging Face
 * transformers: tests/data/tiny-random-ggml/ holds one small random Whisper
 * as whisper.cpp's own converter and quantize tool wrote it (f32, f16,
 * q8_0, q5_0, q5_1, q4_0, q4_1; tools/gen_ggml_fixture.py) and transformers'
 * float64 outputs on jfk.wav (golden.safetensors): for the model itself,
 * and for each quantized file, for the model holding that file's weights
 * as ggml's own Python package (gguf.quants) decodes them, rounded to f16
 * as encdec holds them.
 *
 * Each file loads as a ggml model (hyper-parameters, the special-token
 * layout derived from the vocabulary size, the tokenizer rebuilt from the
 * listed bytes: it encodes as the `tokenizers` library's tokenizer.json of
 * the same corpus does), then the encoder output, the cross K/V (f32, f16)
 * and the logits of 8 teacher-forced steps are compared with the golden,
 * relative to its largest magnitude: every file within float noise (1e-5)
 * of its own reference; the quantized ones' distance from the unquantized
 * model (the quantisation's error) is printed and bounded. A wrong block
 * layout (nibble order, the fifth bits, a scale) gives errors of order 1.
 * Then the public API loads one and transcribes.
 */
#include "golden.h"
#include "modeldir.h"

#include "base/pool.h"
#include "models/whisper_cfg.h"
#include "tok/bpe.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIR ED_TEST_DATA "/tiny-random-ggml"

typedef struct {
    const char *type;
    double quant;   /* bound of the logits' distance from the unquantized model (relative) */
} ftype_case;

static void check_layout(const whisper_model *m) {
    const whisper_hparams *h = &m->hp;
    CHECK_STR(m->format, "ggml");
    CHECK(h->d == 32 && h->n_head == 2 && h->ffn == 64 && h->n_enc_layer == 2 &&
          h->n_dec_layer == 2 && h->n_mels == 80 && h->n_vocab == 2008 && h->n_text_ctx == 448);
    CHECK(!m->multilingual);
    const whisper_special *s = &m->sp;
    CHECK(s->eot == 400 && s->sot == 401 && s->lang_first == 402 && s->n_langs == 99);
    CHECK(s->translate == 501 && s->transcribe == 502 && s->sot_lm == 503 && s->sot_prev == 504);
    CHECK(s->no_speech == 505 && s->no_timestamps == 506 && s->timestamp_begin == 507);
    size_t len;
    const char *last = bpe_token_bytes(m->tok, 2007, &len);
    CHECK(last && len == 9 && !memcmp(last, "<|30.00|>", 9));
    CHECK(bpe_is_special(m->tok, 450) && !bpe_is_special(m->tok, 399));
    /* the rules openai-whisper derives: " " and <|endoftext|> first; symbols */
    CHECK(m->n_begin_suppress == 2 && m->begin_suppress[1] == 400);
    CHECK(m->n_suppress > 5);
}

/* The rebuilt tokenizer encodes as tokenizers' own (tiny-random-whisper's
 * tokenizer.json: the same corpus, the same 400 tokens and merges). */
static void check_tokenizer(const whisper_model *m) {
    bpe_tok *ref;
    CHECK_EQ_INT(bpe_load_dir(&ref, ED_TEST_DATA "/tiny-random-whisper"), ENCDEC_OK);
    if (!ref) return;
    const char *texts[] = {"And so my fellow Americans, ask not what your country can do for you.",
                           " The quick brown fox jumps over the lazy dog 1234!",
                           "Whisper \"quotes\" (brackets) - dashes -- and 'apostrophes'",
                           "naïve café déjà vu", "  two  spaces\nnew line"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int a[256], b[256], na = 0, nb = 0;
        CHECK_EQ_INT(bpe_encode(m->tok, texts[i], a, 256, &na), ENCDEC_OK);
        CHECK_EQ_INT(bpe_encode(ref, texts[i], b, 256, &nb), ENCDEC_OK);
        CHECK(na == nb && na > 3 && !memcmp(a, b, sizeof(int) * (size_t)na));
        char *back = bpe_decode(m->tok, a, na, 1);
        CHECK(back && !strcmp(back, texts[i]));
        free(back);
    }
    bpe_free(ref);
}

static void one_file(const ftype_case *c, const ed_wtab *g, const float *mel) {
    char path[1024];
    snprintf(path, sizeof path, DIR "/ggml-%s.bin", c->type);
    whisper_model *m = NULL;
    CHECK_EQ_INT(whisper_load(&m, path), ENCDEC_OK);
    if (!m) {
        fprintf(stderr, "%s: %s\n", path, encdec_last_error());
        return;
    }
    check_layout(m);
    if (!strcmp(c->type, "f16")) check_tokenizer(m);
    const whisper_hparams *h = &m->hp;
    int d = h->d, dh = d / h->n_head, V = h->n_vocab;
    ed_pool *pool;
    whisper_state *s;
    CHECK_EQ_INT(ed_pool_new(&pool, 2), ENCDEC_OK);
    CHECK_EQ_INT(whisper_state_new(&s, m, pool, 2, KV_F32), ENCDEC_OK);
    whisper_encode(s, mel);
    whisper_cross_compute(s);
    const ed_tensor *ge = golden_need(g, "encoder_out"), *gri = golden_need(g, "enc_row_idx");
    int nr = (int)gri->shape[0];
    const int *rows = gri->data;
    float *have = malloc(sizeof(float) * (size_t)nr * d);
    for (int k = 0; k < nr; k++) memcpy(have + (size_t)k * d, s->enc_out + (size_t)rows[k] * d, sizeof(float) * d);
    double enc = golden_rel_diff(have, ge->data, (size_t)nr * d), cross = 0;
    for (int l = 0; l < h->n_dec_layer; l++)
        for (int kv = 0; kv < 2; kv++) {
            char nm[32];
            snprintf(nm, sizeof nm, "cross_%c.%d", kv ? 'v' : 'k', l);
            for (int k = 0; k < nr; k++)
                for (int hd = 0; hd < h->n_head; hd++) {
                    const float *x = kv ? kv_cross_v(&s->cross, l, hd) : kv_cross_k(&s->cross, l, hd);
                    memcpy(have + (size_t)k * d + hd * dh, x + (size_t)rows[k] * dh, sizeof(float) * dh);
                }
            double r = golden_rel_diff(have, golden_need(g, nm)->data, (size_t)nr * d);
            if (r > cross) cross = r;
        }
    const ed_tensor *gt = golden_need(g, "tokens"), *gl = golden_need(g, "logits");
    int nt = (int)gt->shape[0];
    int *ours = calloc((size_t)nt, sizeof(int));
    float *lg = malloc(sizeof(float) * (size_t)nt * V);
    golden_decode(s, ENCDEC_KV_FULL, golden_need(g, "prompt"), gt, gl, ours, lg);
    double logits = golden_rel_diff(lg, gl->data, (size_t)nt * V);
    int quantized = c->quant > 0;
    if (!quantized) {   /* exact weights: the model's own golden, and its greedy choices */
        const int *raw = golden_need(g, "raw_argmax")->data;
        int same = 0;
        for (int i = 0; i < nt; i++) same += k_argmax(lg + (size_t)i * V, V) == raw[i];
        printf("%-5s encoder %.2e  cross %.2e  logits %.2e  argmax %d/%d\n", c->type, enc,
               cross, logits, same, nt);
        CHECK(enc < 1e-5 && cross < 1e-5 && logits < 1e-5);
        CHECK_EQ_INT(same, nt);
    } else {            /* the weights as gguf decodes them: their own golden */
        char nm[64];
        for (int k = 0; k < nr; k++) memcpy(have + (size_t)k * d, s->enc_out + (size_t)rows[k] * d, sizeof(float) * d);
        snprintf(nm, sizeof nm, "%s.encoder_out", c->type);
        double qenc = golden_rel_diff(have, golden_need(g, nm)->data, (size_t)nr * d);
        snprintf(nm, sizeof nm, "%s.logits", c->type);
        double qlog = golden_rel_diff(lg, golden_need(g, nm)->data, (size_t)nt * V);
        printf("%-5s vs gguf's decoding: encoder %.2e  logits %.2e;  vs the unquantized model: "
               "encoder %.2e  logits %.2e (bound %.0e)\n", c->type, qenc, qlog, enc, logits, c->quant);
        CHECK(qenc < 1e-5 && qlog < 1e-5);
        CHECK(logits < c->quant && enc > 1e-4);   /* quantized, but not beyond its error */
    }
    free(have);
    free(ours);
    free(lg);
    whisper_state_free(s);
    ed_pool_free(pool);
    whisper_free(m);
}

/* The rules derived for files without them (ggml) are openai-whisper's: on
 * tiny.en and base, the derived non-speech list equals the one their
 * CTranslate2 config.json carries (written by faster-whisper's converter from
 * openai-whisper's), special tokens aside (they are added per window). */
static void rules_as_openai(const char *name) {
    char dir[1024];
    if (!golden_find_model(dir, sizeof dir, strcmp(name, "whisper-base") ? "ENCDEC_TINY_EN" : "ENCDEC_BASE", name)) {
        printf("%s not installed: derived rules not compared\n", name);
        return;
    }
    whisper_model *m = NULL;
    CHECK_EQ_INT(whisper_load(&m, dir), ENCDEC_OK);
    if (!m) return;
    int n = 0, *want = malloc(sizeof(int) * (size_t)(m->n_suppress + 1));
    for (int i = 0; i < m->n_suppress; i++)
        if (m->suppress[i] < m->sp.eot) want[n++] = m->suppress[i];
    int b0 = m->begin_suppress[0], b1 = m->begin_suppress[1], nb = m->n_begin_suppress;
    free(m->suppress);
    free(m->begin_suppress);
    m->suppress = m->begin_suppress = NULL;
    m->n_suppress = m->n_begin_suppress = 0;
    CHECK_EQ_INT(whisper_cfg_rules_default(m), ENCDEC_OK);
    CHECK_EQ_INT(m->n_suppress, n);
    CHECK(m->n_suppress == n && !memcmp(m->suppress, want, sizeof(int) * (size_t)n));
    CHECK(m->n_begin_suppress == nb && m->begin_suppress[0] == b0 && m->begin_suppress[1] == b1);
    printf("%s: the derived non-speech list equals the file's (%d tokens)\n", name, n);
    free(want);
    whisper_free(m);
}

/* ---- files that are cut short or lie: a named error each, nothing leaks ---- */

static uint8_t *g_file;   /* ggml-q8_0.bin */
static size_t g_size;

static int32_t i32_at(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}
static void put_i32(uint8_t *p, int32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)((uint32_t)v >> (8 * i));
}

/* Offsets: the vocabulary's count, the first tensor's header. */
static size_t vocab_at(void) { return 48 + 8 + 4 * (size_t)i32_at(g_file + 48) * (size_t)i32_at(g_file + 52); }
static size_t tensor_at(void) {
    size_t p = vocab_at(), n = (size_t)i32_at(g_file + p);
    p += 4;
    for (size_t i = 0; i < n; i++) p += 4 + (size_t)i32_at(g_file + p);
    return p;
}

/* encdec_model_load of g_file with bytes [at, at + 4) set to v (at == SIZE_MAX:
 * unchanged), cut to len bytes. */
static encdec_status load_edited(size_t at, int32_t v, size_t len) {
    uint8_t *f = malloc(g_size);
    memcpy(f, g_file, g_size);
    if (at != SIZE_MAX) put_i32(f + at, v);
    const char *path = tmp_path("edited.bin");
    tmp_write(path, f, len);
    free(f);
    encdec_model *m = NULL;
    encdec_status st = encdec_model_load(path, &m);
    encdec_model_free(m);
    return st;
}

static void lying_files(void) {
    size_t n = g_size, voc = vocab_at(), ten = tensor_at();
    int32_t dims = i32_at(g_file + ten), name_len = i32_at(g_file + ten + 4);
    size_t name_at = ten + 12 + 4 * (size_t)dims, data_at = name_at + (size_t)name_len;
    /* cut short: at every stage, the field named */
    CHECK_STATUS(load_edited(SIZE_MAX, 0, 4), ENCDEC_ERR_FORMAT, "edited.bin: truncated at byte 4: n_vocab");
    CHECK_STATUS(load_edited(SIZE_MAX, 0, 60), ENCDEC_ERR_FORMAT, "truncated at byte 56: mel filters");
    CHECK_STATUS(load_edited(SIZE_MAX, 0, voc + 100), ENCDEC_ERR_FORMAT, "truncated at byte");
    CHECK_STATUS(load_edited(SIZE_MAX, 0, ten + 6), ENCDEC_ERR_FORMAT, "tensor 0 name length needs");
    CHECK_STATUS(load_edited(SIZE_MAX, 0, data_at + 10), ENCDEC_ERR_FORMAT, "data needs");
    CHECK_STATUS(load_edited(SIZE_MAX, 0, n - 1), ENCDEC_ERR_FORMAT, "truncated at byte");
    CHECK_STATUS(load_edited(SIZE_MAX, 0, voc + 4), ENCDEC_ERR_FORMAT, "token 0 length");
    /* a header that lies */
    CHECK_STATUS(load_edited(4, -5, n), ENCDEC_ERR_FORMAT, "n_vocab is -5 at byte 4");
    CHECK_STATUS(load_edited(4 + 4 * 9, 100000, n), ENCDEC_ERR_FORMAT, "n_mels is 100000");
    CHECK_STATUS(load_edited(voc, 1 << 30, n), ENCDEC_ERR_FORMAT, "token count");
    CHECK_STATUS(load_edited(voc + 4, 1 << 20, n), ENCDEC_ERR_FORMAT, "token 0 length");
    CHECK_STATUS(load_edited(ten, 9, n), ENCDEC_ERR_FORMAT, "tensor 0 dimension count is 9");
    CHECK_STATUS(load_edited(ten + 4, 0, n), ENCDEC_ERR_FORMAT, "tensor 0 name length is 0");
    CHECK_STATUS(load_edited(ten + 8, 13, n), ENCDEC_ERR_DTYPE, "has ggml type 13");
    /* the vocabulary size no longer leaves Whisper's specials */
    CHECK_STATUS(load_edited(4, 3000, n), ENCDEC_ERR_TOKENIZER, "not Whisper's layout");
    /* the width says 64: the tensors' shapes do not */
    CHECK_STATUS(load_edited(4 + 4 * 2, 64, n), ENCDEC_ERR_CONFIG, "");
    CHECK_STATUS(load_edited(4 + 4 * 2, 64, n), ENCDEC_ERR_CONFIG, "differ in width");
    /* not ggml: no magic */
    CHECK_STATUS(load_edited(0, 0x12345678, n), ENCDEC_ERR_NO_MODEL, "whisper.cpp ggml file");
    CHECK_STATUS(load_edited(SIZE_MAX, 0, 0), ENCDEC_ERR_NO_MODEL, "edited.bin");
    /* a ggml file is a Whisper model, whatever config.json lies beside it */
    const char *t5cfg = "{\"model_type\": \"t5\"}";
    tmp_write(tmp_path("config.json"), t5cfg, strlen(t5cfg));
    CHECK_EQ_INT(load_edited(SIZE_MAX, 0, n), ENCDEC_OK);
    /* a NaN weight (the token embedding's first q8 block scale) */
    size_t emb = 0;
    for (size_t p = ten; p + 31 < n; p++)
        if (!memcmp(g_file + p, "decoder.token_embedding.weight", 30)) { emb = p + 30; break; }
    CHECK(emb > 0);
    uint8_t *f = malloc(n);
    memcpy(f, g_file, n);
    f[emb] = 0x00, f[emb + 1] = 0x7e;   /* f16 NaN */
    tmp_write(tmp_path("nan.bin"), f, n);
    free(f);
    encdec_model *m = NULL;
    CHECK_STATUS(encdec_model_load(tmp_path("nan.bin"), &m), ENCDEC_ERR_FORMAT,
                 "model.decoder.embed_tokens.weight");
    encdec_model_free(m);
}

/* Through the public API: loads by path, reports the format, transcribes. */
static void public_api(void) {
    golden_public_smoke(DIR "/ggml-q8_0.bin", "ggml");
    encdec_model *em = NULL;
    CHECK_EQ_INT(encdec_model_load(DIR "/ggml-f16.bin", &em), ENCDEC_OK);
    if (!em) return;
    encdec_model_info mi;
    encdec_model_get_info(em, &mi);
    CHECK(mi.n_vocab == 2008 && mi.d_model == 32 && !mi.multilingual);
    encdec_model_free(em);
}

int main(void) {
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio/jfk.wav");
    ed_wtab *g = wtab_new();
    CHECK_EQ_INT(st_load_file(g, DIR "/golden.safetensors"), ENCDEC_OK);
    float *mel;
    CHECK_EQ_INT(golden_mel(ED_SHARED_DIR "/audio/jfk.wav", 80, &mel, NULL, NULL), ENCDEC_OK);
    int nf;
    CHECK(golden_mel_diff(mel, 80, g, &nf) < 1e-4);
    static const ftype_case cases[] = {   /* measured: 1.8e-2, 1.3e-1, 2.1e-1, 3.7e-1, ... */
        {"f32", 0}, {"f16", 0}, {"q8_0", 4e-2}, {"q5_1", 2.5e-1}, {"q5_0", 4e-1}, {"q4_0", 6e-1},
        {"q4_1", 6e-1},
    };
#ifdef ED_EMULATED
    /* qemu: f32, f16 and q5_1 (the fifth bits and the minimum). Every
     * quantized file runs as f16 weights once decoded, on the same kernels;
     * the block decoding is plain C, each format checked natively. */
    static const int run[] = {0, 1, 3};
#else
    static const int run[] = {0, 1, 2, 3, 4, 5, 6};
#endif
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) one_file(&cases[run[i]], g, mel);
    public_api();
    if (tmp_new("encdec-ggml")) {
        g_file = md_read_all(DIR "/ggml-q8_0.bin", &g_size);
        lying_files();
        free(g_file);
        tmp_remove(tmp_dir);
    }
    rules_as_openai("whisper-tiny.en");
    rules_as_openai("whisper-base");
    free(mel);
    wtab_free(g);
    return check_done();
}
