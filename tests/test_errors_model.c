/* test_errors_model.c - bad models and bad arguments through the public API.
 *
 * Every case copies tests/data/tiny-random-whisper into a private temporary
 * directory, breaks one thing (a missing file, a config value, a byte range
 * or header entry of model.safetensors, a garbage CTranslate2 model.bin) and
 * asserts the status of encdec_model_load and the part of the message that
 * names the file, key or tensor. Then the argument checks of the session and
 * encdec_transcribe (threads, NULL / empty / NaN audio, cache mode,
 * max_tokens, language and task on an English-only model) and the *_free(NULL)
 * no-ops. Runs under ASan/LSan in the sanitizer build: nothing may leak.
 */
#include "check.h"
#include "modeldir.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRC_DIR ED_TEST_DATA "/tiny-random-whisper"

#define read_all md_read_all

static const char *const ALL[] = {"config.json", "generation_config.json", "model.safetensors",
                                  "tokenizer.json", NULL};

static const char *model_dir_with(const char *name, const char *const *files) {
    return md_copy(SRC_DIR, name, files);
}

static const char *model_dir(const char *name) { return model_dir_with(name, ALL); }

#define set_config md_set_config

/* Rewrites dir/file (a copy of model.safetensors) with one header entry
 * changed: the tensor's field set to the JSON value `json`, or, with field
 * NULL, the tensor renamed to `json`. The data section is kept as is. */
static void edit_header(const char *dir, const char *file, const char *tensor,
                        const char *field, const char *json) {
    size_t n;
    uint8_t *f = read_all(tmp_join(SRC_DIR, "model.safetensors"), &n);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | f[i];
    cJSON *root = cJSON_ParseWithLength((const char *)f + 8, (size_t)hlen);
    cJSON *t = cJSON_DetachItemFromObjectCaseSensitive(root, tensor);
    if (!t) { fprintf(stderr, "edit_header: no %s\n", tensor); exit(2); }
    if (field) cJSON_ReplaceItemInObjectCaseSensitive(t, field, cJSON_Parse(json));
    cJSON_AddItemToObject(root, field ? tensor : json, t);
    char *h = cJSON_PrintUnformatted(root);
    size_t nh = strlen(h), nd = n - 8 - (size_t)hlen;
    uint8_t *out = malloc(8 + nh + nd);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)((uint64_t)nh >> (8 * i));
    memcpy(out + 8, h, nh);
    memcpy(out + 8 + nh, f + 8 + hlen, nd);
    tmp_write(tmp_join(dir, file), out, 8 + nh + nd);
    free(out);
    free(h);
    free(f);
    cJSON_Delete(root);
}

#define CONV1_B "model.encoder.conv1.bias"

/* Loads path; a model that loads after all is freed (and the case fails). */
#define load md_load

static void test_paths(void) {
    CHECK_STATUS(load("/nonexistent/encdec-model"), ENCDEC_ERR_IO, "/nonexistent/encdec-model");
    CHECK_STATUS(load(""), ENCDEC_ERR_ARG, "empty model path");
    CHECK_STATUS(encdec_model_load(SRC_DIR, NULL), ENCDEC_ERR_ARG, "out is NULL");

    static const char *const NONE[] = {NULL};
    const char *d = model_dir_with("empty", NONE);
    CHECK_STATUS(load(d), ENCDEC_ERR_NO_MODEL, d);
    CHECK_STATUS(load(d), ENCDEC_ERR_NO_MODEL, "expected model.safetensors");

    /* a file that is not .safetensors */
    static const char *const CFG[] = {"config.json", NULL};
    d = model_dir_with("cfg-only", CFG);
    CHECK_STATUS(load(tmp_join(d, "config.json")), ENCDEC_ERR_NO_MODEL, "config.json: not a model");

    static const char *const ST_ONLY[] = {"model.safetensors", NULL};
    d = model_dir_with("no-config", ST_ONLY);
    CHECK_STATUS(load(d), ENCDEC_ERR_IO, "config.json: No such file");

    static const char *const NO_TOK[] = {"config.json", "generation_config.json",
                                         "model.safetensors", NULL};
    d = model_dir_with("no-tokenizer", NO_TOK);
    CHECK_STATUS(load(d), ENCDEC_ERR_TOKENIZER, "no tokenizer.json");

    /* the intact copy loads, also as a single .safetensors file */
    d = model_dir("good");
    CHECK_STATUS(load(d), ENCDEC_OK, "");
    CHECK_STATUS(load(tmp_join(d, "model.safetensors")), ENCDEC_OK, "");
}

static void test_config(void) {
    /* one JSON file replaced by broken text */
    static const struct { const char *dir, *file, *text; encdec_status want; const char *msg; } broken[] = {
        {"malformed", "config.json", "{\"d_model\": 64,", ENCDEC_ERR_CONFIG, "config.json: malformed JSON"},
        {"array", "config.json", "[1, 2]", ENCDEC_ERR_CONFIG, "config.json: expected a JSON object"},
        {"gen-malformed", "generation_config.json", "{\"eos_token_id\": ", ENCDEC_ERR_CONFIG,
         "generation_config.json: malformed JSON"},
        {"tok-malformed", "tokenizer.json", "{\"model\": [", ENCDEC_ERR_TOKENIZER,
         "tokenizer.json: malformed JSON"},
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        const char *d = model_dir(broken[i].dir);
        tmp_write(tmp_join(d, broken[i].file), broken[i].text, strlen(broken[i].text));
        CHECK_STATUS(load(d), broken[i].want, broken[i].msg);
    }

    /* one config.json key set to a JSON value (NULL: removed) */
    static const struct { const char *dir, *key, *val; encdec_status want; const char *msg; } bad[] = {
        /* a Whisper config relabelled: goes to the T5 loader, which names what is missing */
        {"t5", "model_type", "\"t5\"", ENCDEC_ERR_CONFIG, "config.json: missing \"d_kv\""},
        /* relabelled BART: the BART loader names the first tensor that does not fit */
        {"bart", "model_type", "\"bart\"", ENCDEC_ERR_SHAPE,
         "tensor model.encoder.embed_positions.weight has shape [1500,64], expected [1026,64]"},
        {"bert", "model_type", "\"bert\"", ENCDEC_ERR_NO_MODEL,
         "model_type \"bert\" is not supported (whisper, t5, mt5, umt5, bart, mbart, marian"},
        {"d96", "d_model", "96", ENCDEC_ERR_SHAPE,
         "model.safetensors: tensor model.encoder.conv1.weight has shape [64,80,3], expected [96,80,3]"},
        {"mel81", "num_mel_bins", "81", ENCDEC_ERR_CONFIG, "config.json: 81 mel bins; Whisper uses 80 or 128"},
        /* a valid config, but conv1 is [64,80,3] */
        {"mel128", "num_mel_bins", "128", ENCDEC_ERR_SHAPE,
         "model.encoder.conv1.weight has shape [64,80,3], expected [64,128,3]"},
        /* the config and the tokenizer disagree: the tokenizer check runs first */
        {"vocab461", "vocab_size", "461", ENCDEC_ERR_TOKENIZER,
         "the tokenizer has 460 tokens but the model's vocabulary has 461"},
        {"bad0", "d_model", "-1", ENCDEC_ERR_CONFIG, "\"d_model\" must be an integer in [1, 16384]"},
        {"bad1", "d_model", "1e12", ENCDEC_ERR_CONFIG, "\"d_model\" must be an integer in [1, 16384]"},
        {"bad2", "d_model", "64.5", ENCDEC_ERR_CONFIG, "\"d_model\" must be an integer"},
        {"bad3", "d_model", "\"64\"", ENCDEC_ERR_CONFIG, "\"d_model\" must be an integer"},
        {"bad4", "d_model", "null", ENCDEC_ERR_CONFIG, "\"d_model\" must be an integer"},
        {"bad5", "encoder_layers", "0", ENCDEC_ERR_CONFIG, "\"encoder_layers\" must be an integer in [1, 256]"},
        {"bad6", "decoder_layers", "100000", ENCDEC_ERR_CONFIG, "\"decoder_layers\" must be an integer in [1, 256]"},
        {"bad7", "vocab_size", "2000000000", ENCDEC_ERR_CONFIG, "\"vocab_size\" must be an integer"},
        {"bad8", "encoder_attention_heads", "3", ENCDEC_ERR_CONFIG,
         "encoder and decoder differ in heads or ffn width (3/4"},
        {"bad9", "max_source_positions", "1000", ENCDEC_ERR_CONFIG, "1000 encoder positions"},
        {"bad10", "max_target_positions", "2", ENCDEC_ERR_CONFIG, "2 decoder positions is too few"},
        {"bad11", "suppress_tokens", "[1, 460]", ENCDEC_ERR_CONFIG,
         "\"suppress_tokens\"[1] must be an integer in [0, 459]"},
        {"no-d-model", "d_model", NULL, ENCDEC_ERR_CONFIG, "config.json: missing \"d_model\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *d = model_dir(bad[i].dir);
        set_config(d, bad[i].key, bad[i].val);
        CHECK_STATUS(load(d), bad[i].want, bad[i].msg);
    }

    const char *d = model_dir("heads3");
    set_config(d, "encoder_attention_heads", "3");
    set_config(d, "decoder_attention_heads", "3");
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "config.json: d_model 64 is not a multiple of 3 heads");
}

static void test_safetensors(void) {
    size_t n;
    uint8_t *whole = read_all(tmp_join(SRC_DIR, "model.safetensors"), &n);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | whole[i];

    const char *d = model_dir("st-empty");
    tmp_write(tmp_join(d, "model.safetensors"), "", 0);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "model.safetensors: file is 0 bytes, too short");

    d = model_dir("st-cut4");
    tmp_write(tmp_join(d, "model.safetensors"), whole, 4);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "model.safetensors: file is 4 bytes, too short");

    d = model_dir("st-cut-header");
    tmp_write(tmp_join(d, "model.safetensors"), whole, 8 + (size_t)hlen / 2);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "bytes after the length field");

    /* cut inside the data: the last tensors' offsets run past the end */
    size_t cuts[] = {8 + (size_t)hlen, 8 + (size_t)hlen + 1000, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "st-cut-data%zu", i);
        d = model_dir(name);
        tmp_write(tmp_join(d, "model.safetensors"), whole, cuts[i]);
        CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "out of range of the");
    }

    d = model_dir("st-hlen");
    uint8_t *big = malloc(n);
    memcpy(big, whole, n);
    for (int i = 0; i < 8; i++) big[i] = (uint8_t)((uint64_t)n >> (8 * i));  /* n > n - 8 */
    tmp_write(tmp_join(d, "model.safetensors"), big, n);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "bytes after the length field");
    for (int i = 0; i < 8; i++) big[i] = 0xff;                               /* 2^64 - 1 */
    tmp_write(tmp_join(d, "model.safetensors"), big, n);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "header length 18446744073709551615 exceeds");
    memcpy(big, whole, n);
    big[8] = '[';                                                          /* not JSON */
    tmp_write(tmp_join(d, "model.safetensors"), big, n);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "header is not valid JSON");
    free(big);

    d = model_dir("st-offsets");
    edit_header(d, "model.safetensors", CONV1_B, "data_offsets", "[1000000000,1000000128]");
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT,
                 "tensor " CONV1_B ": data_offsets [1000000000,1000000128] out of range");
    edit_header(d, "model.safetensors", CONV1_B, "data_offsets", "[0,128]");  /* in another tensor */
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "overlap");
    edit_header(d, "model.safetensors", CONV1_B, "shape", "[4294967296,4294967296]");
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "tensor " CONV1_B ": byte size of shape overflows");
    edit_header(d, "model.safetensors", CONV1_B, "shape", "[65]");
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "tensor " CONV1_B ": data_offsets hold 128 bytes, but F16 [65] needs 130");

    d = model_dir("st-dtype");
    edit_header(d, "model.safetensors", CONV1_B, "dtype", "\"F8_E4M3\"");
    CHECK_STATUS(load(d), ENCDEC_ERR_DTYPE, "tensor " CONV1_B " has unknown dtype \"F8_E4M3\"");
    edit_header(d, "model.safetensors", CONV1_B, "dtype", "\"I16\"");    /* same size, not a float */
    CHECK_STATUS(load(d), ENCDEC_ERR_DTYPE, "tensor " CONV1_B " has dtype I16, expected F32, F16 or BF16");

    d = model_dir("st-missing");
    edit_header(d, "model.safetensors", CONV1_B, NULL, CONV1_B ".renamed");
    CHECK_STATUS(load(d), ENCDEC_ERR_SHAPE, "model.safetensors: tensor " CONV1_B " is missing");
    /* loaded as a single file of another name, the message must name that file */
    edit_header(d, "weights.safetensors", CONV1_B, NULL, CONV1_B ".renamed");
    CHECK_STATUS(load(tmp_join(d, "weights.safetensors")), ENCDEC_ERR_SHAPE,
                 "weights.safetensors: tensor " CONV1_B " is missing");
    free(whole);
}

static void test_ct2(void) {
    static const char *const CT2[] = {"config.json", "tokenizer.json", NULL};
    const char *d = model_dir_with("ct2-garbage", CT2);
    uint8_t junk[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (uint8_t)(x >> 24);
    }
    tmp_write(tmp_join(d, "model.bin"), junk, sizeof junk);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "model.bin: CTranslate2 binary version");

    /* a supported version, then a spec name longer than the file */
    static const uint8_t trunc[] = {6, 0, 0, 0, 0xff, 0x7f, 'W', 'h'};
    tmp_write(tmp_join(d, "model.bin"), trunc, sizeof trunc);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "model.bin: truncated at byte 6: spec name");

    tmp_write(tmp_join(d, "model.bin"), "", 0);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "model.bin: truncated at byte 0: binary version");
}

static void set_penalty0(encdec_transcribe_params *p) { p->repetition_penalty = 0; }
static void set_penalty_nan(encdec_transcribe_params *p) { p->repetition_penalty = NAN; }
static void set_ngram(encdec_transcribe_params *p) { p->no_repeat_ngram_size = -2; }
static void set_halluc(encdec_transcribe_params *p) { p->hallucination_silence_threshold = -1; }
static void set_chunk(encdec_transcribe_params *p) { p->chunk_length = 45; }
static void set_segs(encdec_transcribe_params *p) { p->language_detection_segments = 0; }
static void set_thr(encdec_transcribe_params *p) { p->language_detection_threshold = 2; }
static const int prompt_ids[2] = {5, 100000};
static void set_both(encdec_transcribe_params *p) {
    p->initial_prompt = "x";
    p->initial_prompt_tokens = prompt_ids;
    p->n_initial_prompt_tokens = 1;
}
static void set_badid(encdec_transcribe_params *p) {
    p->initial_prompt_tokens = prompt_ids;
    p->n_initial_prompt_tokens = 2;
}
static void set_nullids(encdec_transcribe_params *p) { p->n_initial_prompt_tokens = 3; }

static void test_session_and_transcribe(void) {
    encdec_model_free(NULL);
    encdec_session_free(NULL);
    encdec_result_free(NULL);
    encdec_free(NULL);

    encdec_model *m = NULL;
    CHECK_STATUS(encdec_model_load(SRC_DIR, &m), ENCDEC_OK, "");
    if (!m) return;
    encdec_session *s = NULL;
    CHECK_STATUS(encdec_session_new(NULL, NULL, &s), ENCDEC_ERR_ARG, "model is NULL");
    CHECK_STATUS(encdec_session_new(m, NULL, NULL), ENCDEC_ERR_ARG, "out is NULL");
    encdec_session_params sp = {-1};
    CHECK_STATUS(encdec_session_new(m, &sp, &s), ENCDEC_ERR_ARG, "thread count -1 is out of range 1..256");
    CHECK(s == NULL);
    sp.n_threads = 10000;
    CHECK_STATUS(encdec_session_new(m, &sp, &s), ENCDEC_ERR_ARG, "thread count 10000 is out of range");
    CHECK(s == NULL);
    sp.n_threads = 1;
    sp.cross_kv = (encdec_kv_type)9;
    CHECK_STATUS(encdec_session_new(m, &sp, &s), ENCDEC_ERR_ARG, "cross_kv 9 is not a cache type");
    CHECK(s == NULL);
    sp.cross_kv = ENCDEC_KV_F32;
    {   /* compute modes: an absurd one is refused before anything is read */
        encdec_model *m2 = NULL;
        encdec_model_params mp = {(encdec_compute)-3};
        CHECK_STATUS(encdec_model_load_ex(SRC_DIR, &mp, &m2), ENCDEC_ERR_ARG, "compute mode -3");
        CHECK(m2 == NULL);
        mp.compute = ENCDEC_COMPUTE_INT8;
        CHECK_STATUS(encdec_model_load_ex(SRC_DIR, &mp, &m2), ENCDEC_OK, "");
        encdec_model_info info;
        if (m2) {
            encdec_model_get_info(m2, &info);
            CHECK_STR(info.compute, "int8");
        }
        encdec_model_free(m2);
        encdec_model_get_info(m, &info);
        CHECK_STR(info.compute, "f32");
    }
    sp.n_threads = 0;
    CHECK_STATUS(encdec_session_new(m, &sp, &s), ENCDEC_OK, "");
    if (!s) { encdec_model_free(m); return; }

    enum { N = 16000 };
    float *pcm = malloc(N * sizeof *pcm);
    uint32_t x = 7;
    for (int i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        pcm[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 0.2f;
    }
    encdec_result *r = (encdec_result *)&x;       /* must be reset to NULL on failure */
    CHECK_STATUS(encdec_transcribe(s, NULL, N, NULL, &r), ENCDEC_ERR_AUDIO, "no samples");
    CHECK(r == NULL);
    CHECK_STATUS(encdec_transcribe(s, pcm, 0, NULL, &r), ENCDEC_ERR_AUDIO, "no samples");
    CHECK_STATUS(encdec_transcribe(NULL, pcm, N, NULL, &r), ENCDEC_ERR_ARG, "session is NULL");
    CHECK_STATUS(encdec_transcribe(s, pcm, N, NULL, NULL), ENCDEC_ERR_ARG, "out is NULL");

    float keep = pcm[1234];
    pcm[1234] = NAN;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, NULL, &r), ENCDEC_ERR_AUDIO, "sample 1234 is not a finite number");
    pcm[1234] = INFINITY;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, NULL, &r), ENCDEC_ERR_AUDIO, "sample 1234");
    pcm[1234] = keep;

    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.kv_mode = (encdec_kv_mode)7;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_ERR_ARG, "unknown cache mode 7");
    p = encdec_transcribe_default_params();
    p.max_tokens = -1;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_ERR_ARG, "max_tokens -1 is out of range 0..448");
    p.max_tokens = 100000;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_ERR_ARG, "max_tokens 100000 is out of range");
    p = encdec_transcribe_default_params();
    p.beam_size = 17;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_ERR_ARG, "beam_size 17 is out of range 0..16");
    p.beam_size = -1;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_ERR_ARG, "beam_size -1");
    p = encdec_transcribe_default_params();
    p.language = "de";
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_ERR_ARG, "English-only; language \"de\"");
    p = encdec_transcribe_default_params();
    p.translate = 1;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_ERR_ARG, "English-only; it cannot translate");
    /* faster-whisper's options past the hotwords: absurd values named */
    struct { void (*set)(encdec_transcribe_params *); const char *msg; } bad[] = {
        {set_penalty0, "repetition_penalty 0 is out of range"},
        {set_penalty_nan, "repetition_penalty nan"},
        {set_ngram, "no_repeat_ngram_size -2 is out of range 0..448"},
        {set_halluc, "hallucination_silence_threshold -1: seconds >= 0"},
        {set_chunk, "chunk_length 45 is out of range 1..30"},
        {set_segs, "language_detection_segments 0 is out of range"},
        {set_thr, "language_detection_threshold 2 is out of range 0..1"},
        {set_both, "initial_prompt and initial_prompt_tokens both given"},
        {set_badid, "initial_prompt_tokens[1] = 100000 is not a token id (0.."},
        {set_nullids, "initial_prompt_tokens: 3 ids"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        p = encdec_transcribe_default_params();
        bad[k].set(&p);
        CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_ERR_ARG, bad[k].msg);
    }
    CHECK(r == NULL);

    /* the session still works after all that, and the error is cleared */
    p = encdec_transcribe_default_params();
    p.language = "en";
    p.max_tokens = 3;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_OK, "");
    CHECK_STR(encdec_last_error(), "");
    if (r) {
        CHECK(encdec_result_n_tokens(r) >= 1 && encdec_result_n_tokens(r) <= 3);
        CHECK(encdec_result_token(r, -1) == NULL);
        CHECK(encdec_result_token(r, encdec_result_n_tokens(r)) == NULL);
        CHECK_EQ_INT(encdec_result_timings(r)->n_windows, 1);
        CHECK_EQ_INT(encdec_result_n_sequences(r), 1);
        CHECK_STR(encdec_result_sequence(r, 0)->text, encdec_result_text(r));
    }
    encdec_result_free(r);
    /* beams: the state grows to 4 sequences, then serves greedy again */
    p.beam_size = 4;
    r = NULL;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_OK, "");
    CHECK(r && encdec_result_n_tokens(r) >= 1 && encdec_result_n_tokens(r) <= 3);
    encdec_result_free(r);
    p.beam_size = 1;
    r = NULL;
    CHECK_STATUS(encdec_transcribe(s, pcm, N, &p, &r), ENCDEC_OK, "");
    encdec_result_free(r);
    free(pcm);
    encdec_session_free(s);
    encdec_model_free(m);
}

/* Devices: a kind that is not one, an index out of range, a bad
 * ENCDEC_DEVICE, and CUDA in a build or on a machine without it: each a
 * named usage error, nothing loaded. */
static void test_device(void) {
    const char *dir = ED_TEST_DATA "/tiny-random-whisper";
    encdec_model *m = NULL;
    encdec_model_params mp = encdec_model_default_params();
    CHECK_EQ_INT(mp.device, ENCDEC_DEVICE_CPU);
    mp.device = (encdec_device)7;
    CHECK_STATUS(encdec_model_load_ex(dir, &mp, &m), ENCDEC_ERR_ARG, "device 7");
    mp.device = ENCDEC_DEVICE_CUDA;
    mp.device_index = -1;
    CHECK_STATUS(encdec_model_load_ex(dir, &mp, &m), ENCDEC_ERR_ARG, "index -1");
    mp.device_index = 0;
    if (encdec_device_count(ENCDEC_DEVICE_CUDA) == 0) {
        encdec_status st = encdec_model_load_ex(dir, &mp, &m);
        CHECK(st == ENCDEC_ERR_ARG || st == ENCDEC_ERR_DEVICE);
        CHECK(strstr(encdec_last_error(), "CUDA") != NULL);
        CHECK(m == NULL);
    }
    encdec_device d = ENCDEC_DEVICE_CPU;
    int i = -1;
    CHECK_EQ_INT(encdec_device_parse("cuda:3", &d, &i), 0);
    CHECK(d == ENCDEC_DEVICE_CUDA && i == 3);
    CHECK_EQ_INT(encdec_device_parse("cuda:", &d, &i), -1);
    CHECK_EQ_INT(encdec_device_parse("gpu", &d, &i), -1);
    CHECK_EQ_INT(encdec_device_parse("cuda3", &d, &i), -1);
    CHECK_EQ_INT(encdec_device_count(ENCDEC_DEVICE_CPU), 1);
    setenv("ENCDEC_DEVICE", "gpu", 1);
    CHECK_STATUS(encdec_model_load(dir, &m), ENCDEC_ERR_ARG, "ENCDEC_DEVICE=gpu");
    setenv("ENCDEC_DEVICE", "cpu", 1);
    CHECK_EQ_INT(encdec_model_load(dir, &m), ENCDEC_OK);
    encdec_model_info info;
    if (m) {
        encdec_model_get_info(m, &info);
        CHECK(info.device && !strcmp(info.device, "cpu"));
    }
    encdec_model_free(m);
    unsetenv("ENCDEC_DEVICE");
}

int main(void) {
    if (!tmp_new("encdec-errors-model")) return 2;
    test_device();
    test_paths();
    test_config();
    test_safetensors();
    test_ct2();
    test_session_and_transcribe();
    tmp_remove(tmp_dir);
    return check_done();
}
