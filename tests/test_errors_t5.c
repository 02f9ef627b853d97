/* test_errors_t5.c - bad T5 models, bad generation requests, and what must
 * hold between requests: every failure is a named status with a message
 * that says what is wrong, and nothing crashes (the suite also runs under
 * ASan + UBSan). Also the properties of generation that goldens cannot pin:
 * batching changes nothing, a seed reproduces sampling, top-k 1 is greedy.
 */
#include "check.h"
#include "modeldir.h"

#include <stdlib.h>
#include <string.h>

#define V10 ED_TEST_DATA "/tiny-random-t5-v1_0"
#define V11 ED_TEST_DATA "/tiny-random-t5-v1_1"
#define MT5 ED_TEST_DATA "/tiny-random-mt5"

static const char *const V10_FILES[] = {"config.json", "model.safetensors", "spiece.model", NULL};
static const char *const V10_NO_TOK[] = {"config.json", "model.safetensors", NULL};

#define load md_load

static void test_models(void) {
    const char *d = md_copy(V10, "ffn", V10_FILES);
    md_set_config(d, "feed_forward_proj", "\"gated-swoosh\"");
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "unknown feed_forward_proj \"gated-swoosh\"");
    d = md_copy(V10, "ffn3", V10_FILES);
    md_set_config(d, "feed_forward_proj", "\"gated-gelu-x\"");
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "unknown feed_forward_proj");

    d = md_copy(V10, "no-tokenizer", V10_NO_TOK);
    CHECK_STATUS(load(d), ENCDEC_ERR_TOKENIZER, "spiece.model");

    d = md_copy(V10, "vocab-small", V10_FILES);   /* 900 tokenizer ids, 500 embedding rows */
    md_set_config(d, "vocab_size", "500");
    CHECK_STATUS(load(d), ENCDEC_ERR_TOKENIZER, "the tokenizer has 900 tokens but the model's vocab_size is 500");
    d = md_copy(V10, "vocab-big", V10_FILES);
    md_set_config(d, "vocab_size", "1000");
    CHECK_STATUS(load(d), ENCDEC_ERR_SHAPE, "shared.weight has shape [904,64], expected [1000,64]");

    /* spiece.model's sentinel count comes from tokenizer_config.json, as in HF */
    d = md_copy(V10, "extra0", V10_FILES);
    tmp_write(tmp_join(d, "tokenizer_config.json"), "{\"extra_ids\": 0}", 16);
    CHECK_EQ_INT(load(d), ENCDEC_OK);
    d = md_copy(V10, "extra200", V10_FILES);
    tmp_write(tmp_join(d, "tokenizer_config.json"), "{\"extra_ids\": 200}", 18);
    CHECK_STATUS(load(d), ENCDEC_ERR_TOKENIZER, "the tokenizer has 1000 tokens");
    d = md_copy(V10, "extra-bad", V10_FILES);
    tmp_write(tmp_join(d, "tokenizer_config.json"), "{\"extra_ids\": -1}", 17);
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "extra_ids");

    d = md_copy(V10, "layers", V10_FILES);
    md_set_config(d, "num_layers", "3");
    CHECK_STATUS(load(d), ENCDEC_ERR_SHAPE, "tensor encoder.block.2.layer.0.layer_norm.weight is missing");
    d = md_copy(V10, "untied", V10_FILES);
    md_set_config(d, "tie_word_embeddings", "false");
    CHECK_STATUS(load(d), ENCDEC_ERR_SHAPE, "lm_head.weight is missing");
    d = md_copy(V10, "dkv", V10_FILES);
    md_set_config(d, "d_kv", "8");
    CHECK_STATUS(load(d), ENCDEC_ERR_SHAPE, "SelfAttention.q.weight has shape [64,64], expected [32,64]");
    d = md_copy(V10, "gated", V10_FILES);
    md_set_config(d, "feed_forward_proj", "\"gated-gelu\"");
    CHECK_STATUS(load(d), ENCDEC_ERR_SHAPE, "DenseReluDense.wi_0.weight is missing");
    d = md_copy(V10, "buckets", V10_FILES);
    md_set_config(d, "relative_attention_max_distance", "8");
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "relative_attention_max_distance 8 must exceed");
    d = md_copy(V10, "buckets2", V10_FILES);
    md_set_config(d, "relative_attention_num_buckets", "2");
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "relative_attention_num_buckets");
    d = md_copy(V10, "eos", V10_FILES);
    md_set_config(d, "eos_token_id", "5");
    CHECK_STATUS(load(d), ENCDEC_ERR_TOKENIZER, "eos_token_id is 5");
    d = md_copy(V10, "eps", V10_FILES);
    md_set_config(d, "layer_norm_epsilon", "-1");
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "layer_norm_epsilon");
    d = md_copy(V10, "heads", V10_FILES);
    md_set_config(d, "num_heads", "100000");
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "num_heads");
    d = md_copy(V10, "dmodel", V10_FILES);
    md_set_config(d, "d_model", NULL);
    CHECK_STATUS(load(d), ENCDEC_ERR_CONFIG, "missing \"d_model\"");
    d = md_copy(V10, "ct2", V10_NO_TOK);
    tmp_write(tmp_join(d, "model.bin"), "x", 1);
    remove(tmp_join(d, "model.safetensors"));
    CHECK_STATUS(load(d), ENCDEC_ERR_NO_MODEL, "model.bin is read for Whisper only");

    /* a truncated weights file */
    d = md_copy(V10, "truncated", V10_FILES);
    size_t n;
    uint8_t *b = md_read_all(tmp_join(d, "model.safetensors"), &n);
    tmp_write(tmp_join(d, "model.safetensors"), b, n / 2);
    free(b);
    CHECK_STATUS(load(d), ENCDEC_ERR_FORMAT, "model.safetensors");
}

typedef struct {
    encdec_model *m;
    encdec_session *s;
} t5;

static int open_model(t5 *t, const char *dir, int threads) {
    encdec_session_params sp = {threads};
    memset(t, 0, sizeof *t);
    if (encdec_model_load(dir, &t->m) || encdec_session_new(t->m, &sp, &t->s)) {
        fprintf(stderr, "%s: %s\n", dir, encdec_last_error());
        CHECK(0);
        return 0;
    }
    return 1;
}

static void close_model(t5 *t) {
    encdec_session_free(t->s);
    encdec_model_free(t->m);
}

static encdec_status gen(t5 *t, const char *const *in, int n, const encdec_generate_params *p) {
    encdec_result *r = NULL;
    encdec_status st = encdec_generate(t->s, in, n, p, &r);
    if (st) CHECK(r == NULL);
    encdec_result_free(r);
    return st;
}

static void test_requests(void) {
    t5 t;
    if (!open_model(&t, V11, 2)) return;
    const char *ok[] = {"translate English to German: The house is wonderful."};
    encdec_generate_params p = encdec_generate_default_params();
    struct { const char *field; int v; const char *msg; } bad[] = {
        {"num_beams", 0, "num_beams 0 is out of range 1..64"},
        {"num_beams", 65, "num_beams 65 is out of range"},
        {"max_new_tokens", -1, "max_new_tokens -1 is out of range 1..4096"},
        {"max_new_tokens", 5000, "max_new_tokens 5000"},
        {"num_return_sequences", 2, "num_return_sequences 2 is out of range 1..1"},
        {"num_return_sequences", 0, "num_return_sequences 0"},
        {"truncate", 2, "truncate must be 0 or 1"},
        {"kv_mode", 7, "unknown cache mode 7"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        encdec_generate_params q = p;
        if (!strcmp(bad[i].field, "num_beams")) q.num_beams = bad[i].v;
        if (!strcmp(bad[i].field, "max_new_tokens")) q.max_new_tokens = bad[i].v;
        if (!strcmp(bad[i].field, "num_return_sequences")) q.num_return_sequences = bad[i].v;
        if (!strcmp(bad[i].field, "truncate")) q.truncate = bad[i].v;
        if (!strcmp(bad[i].field, "kv_mode")) q.kv_mode = (encdec_kv_mode)bad[i].v;
        CHECK_STATUS(gen(&t, ok, 1, &q), ENCDEC_ERR_ARG, bad[i].msg);
    }
    encdec_generate_params q = p;
    q.do_sample = 1;
    q.num_beams = 2;
    CHECK_STATUS(gen(&t, ok, 1, &q), ENCDEC_ERR_ARG, "sampling with beams is not supported");
    q.num_beams = 1;
    q.temperature = 0;
    CHECK_STATUS(gen(&t, ok, 1, &q), ENCDEC_ERR_ARG, "temperature");
    q.temperature = NAN;
    CHECK_STATUS(gen(&t, ok, 1, &q), ENCDEC_ERR_ARG, "temperature");
    q.temperature = 1;
    q.top_p = 1.5f;
    CHECK_STATUS(gen(&t, ok, 1, &q), ENCDEC_ERR_ARG, "top_p");
    q.top_p = 1;
    q.top_k = -1;
    CHECK_STATUS(gen(&t, ok, 1, &q), ENCDEC_ERR_ARG, "top_k");
    q = p;
    q.num_beams = 2;
    q.length_penalty = NAN;
    CHECK_STATUS(gen(&t, ok, 1, &q), ENCDEC_ERR_ARG, "length_penalty");

    const char *utf8[] = {"fine", "bad \xff\xfe here"};
    CHECK_STATUS(gen(&t, utf8, 2, &p), ENCDEC_ERR_ARG, "input 1");
    CHECK(strstr(encdec_last_error(), "UTF-8") != NULL);
    const char *trunc[] = {"ok", "caf\xc3"};   /* a sequence cut at the end */
    CHECK_STATUS(gen(&t, trunc, 2, &p), ENCDEC_ERR_ARG, "UTF-8");
    const char *empty[] = {"x", ""};
    CHECK_STATUS(gen(&t, empty, 2, &p), ENCDEC_ERR_ARG, "input 1 is empty");
    const char *null_in[] = {NULL};
    CHECK_STATUS(gen(&t, null_in, 1, &p), ENCDEC_ERR_ARG, "input 0 is NULL");
    CHECK_STATUS(gen(&t, ok, 0, &p), ENCDEC_ERR_ARG, "0 inputs");
    CHECK_STATUS(encdec_generate(t.s, ok, 1, &p, NULL), ENCDEC_ERR_ARG, "out is NULL");
    encdec_result *r = (encdec_result *)&t;
    CHECK_STATUS(encdec_generate(NULL, ok, 1, &p, &r), ENCDEC_ERR_ARG, "session is NULL");
    CHECK(r == NULL);
    float pcm[16000] = {0};
    r = NULL;
    CHECK_STATUS(encdec_transcribe(t.s, pcm, 16000, NULL, &r), ENCDEC_ERR_ARG, "use encdec_generate");
    /* after all those failures the session still works, and again */
    CHECK_EQ_INT(gen(&t, ok, 1, &p), ENCDEC_OK);
    CHECK_EQ_INT(gen(&t, ok, 1, NULL), ENCDEC_OK);
    close_model(&t);

    /* whisper models refuse generate */
    if (open_model(&t, ED_TEST_DATA "/tiny-random-whisper", 1)) {
        CHECK_STATUS(gen(&t, ok, 1, &p), ENCDEC_ERR_ARG, "use encdec_transcribe");
        close_model(&t);
    }
}

/* mT5's test model accepts 64 input tokens (config n_positions). */
static void test_too_long(void) {
    t5 t;
    if (!open_model(&t, MT5, 1)) return;
    static char text[4000];
    text[0] = 0;
    for (int i = 0; i < 60; i++) strcat(text, "Haus Garten Fluss ");
    const char *in[] = {"short", text};
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = 4;
    CHECK_STATUS(gen(&t, in, 2, &p), ENCDEC_ERR_ARG, "input 1 has");
    CHECK(strstr(encdec_last_error(), "the model accepts at most 64 (n_positions)") != NULL);
    p.truncate = 1;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_generate(t.s, in, 2, &p, &r), ENCDEC_OK);
    CHECK_EQ_INT(encdec_result_n_sequences(r), 2);
    encdec_result_free(r);
    close_model(&t);
}

static char *seq_text(const encdec_result *r, int i) {
    const encdec_sequence *q = encdec_result_sequence(r, i);
    return strdup(q ? q->text : "(none)");
}

/* One generation's texts, joined by '|'. */
static char *texts(t5 *t, const char *const *in, int n, const encdec_generate_params *p) {
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_generate(t->s, in, n, p, &r), ENCDEC_OK);
    static char out[8192];
    out[0] = 0;
    for (int i = 0; i < encdec_result_n_sequences(r); i++) {
        char *s = seq_text(r, i);
        strncat(out, s, sizeof out - strlen(out) - 2);
        strcat(out, "|");
        free(s);
    }
    encdec_result_free(r);
    return strdup(out);
}

static void test_properties(void) {
    t5 t;
    if (!open_model(&t, V11, 2)) return;
    const char *in[] = {"translate English to German: The house is wonderful.", "Das Haus ist schön.",
                        "summarize: the garden was green"};
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = 12;
    /* batching changes nothing: each input alone gives what the batch gave it */
    for (int beams = 1; beams <= 3; beams += 2) {
        p.num_beams = beams;
        char *all = texts(&t, in, 3, &p), joined[8192] = "";
        for (int i = 0; i < 3; i++) {
            char *one = texts(&t, in + i, 1, &p);
            strcat(joined, one);
            free(one);
        }
        CHECK_STR(all, joined);
        free(all);
    }
    p.num_beams = 1;
    char *greedy = texts(&t, in, 3, &p);
    /* sampling: a seed reproduces, another seed differs somewhere, top_k 1 is greedy */
    p.do_sample = 1;
    p.seed = 7;
    p.num_return_sequences = 3;
    char *s1 = texts(&t, in, 3, &p), *s2 = texts(&t, in, 3, &p);
    CHECK_STR(s1, s2);
    p.seed = 8;
    char *s3 = texts(&t, in, 3, &p);
    CHECK(strcmp(s1, s3) != 0);
    p.num_return_sequences = 1;
    p.top_k = 1;
    char *k1 = texts(&t, in, 3, &p);
    CHECK_STR(k1, greedy);
    free(s1), free(s2), free(s3), free(k1), free(greedy);
    /* the result's bookkeeping */
    p = encdec_generate_default_params();
    p.num_beams = 3;
    p.num_return_sequences = 2;
    p.max_new_tokens = 6;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_generate(t.s, in, 2, &p, &r), ENCDEC_OK);
    CHECK_EQ_INT(encdec_result_n_sequences(r), 4);
    int total = 0;
    for (int i = 0; i < 4; i++) {
        const encdec_sequence *q = encdec_result_sequence(r, i);
        CHECK_EQ_INT(q->input, i / 2);
        CHECK_EQ_INT(q->rank, i % 2);
        CHECK(q->n_tokens >= 1 && q->n_tokens <= 6);
        CHECK(q->score <= 0);
        if (i % 2) CHECK(q->score <= encdec_result_sequence(r, i - 1)->score);
        total += q->n_tokens;
    }
    CHECK_EQ_INT(encdec_result_n_tokens(r), total);
    CHECK(encdec_result_sequence(r, 4) == NULL);
    CHECK(encdec_result_sequence(r, -1) == NULL);
    encdec_result_free(r);
    encdec_model_info info;
    encdec_model_get_info(t.m, &info);
    CHECK_STR(info.family, "t5");
    CHECK_STR(info.model_type, "t5");
    CHECK_EQ_INT(info.d_model, 64);
    CHECK_EQ_INT(info.n_dec_layer, 3);
    CHECK_EQ_INT(info.n_vocab, 928);
    close_model(&t);
}

int main(void) {
    if (!tmp_new("encdec-errors-t5")) return 2;
    test_models();
    test_requests();
    test_too_long();
    test_properties();
    tmp_remove(tmp_dir);
    return check_done();
}
