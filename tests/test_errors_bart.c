/* test_errors_bart.c - bad BART-family models and tokenizers: lying
 * configurations, missing or misshapen tensors, Marian tokenizer files that
 * do not fit the model, inputs past the model's positions. Every failure is
 * a named status whose message says what is wrong, and nothing crashes (the
 * suite also runs under ASan + UBSan).
 */
#include "check.h"
#include "modeldir.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#define MARIAN ED_TEST_DATA "/tiny-random-marian"
#define MBART ED_TEST_DATA "/tiny-random-mbart"

static const char *const FILES[] = {"config.json", "model.safetensors", "source.spm", "target.spm",
                                    "vocab.json", NULL};
static const char *const NO_TOK[] = {"config.json", "model.safetensors", NULL};

#define load md_load

static void test_configs(void) {
    struct {
        const char *key, *json;
        encdec_status want;
        const char *msg;
    } c[] = {
        {"model_type", "\"bort\"", ENCDEC_ERR_NO_MODEL, "model_type \"bort\" is not supported"},
        {"activation_function", "\"swoosh\"", ENCDEC_ERR_CONFIG, "unknown activation_function \"swoosh\""},
        {"activation_function", "7", ENCDEC_ERR_CONFIG, "activation_function must be a string"},
        {"decoder_attention_heads", "3", ENCDEC_ERR_CONFIG, "not a multiple of the attention heads"},
        {"encoder_attention_heads", "1000", ENCDEC_ERR_CONFIG, "encoder_attention_heads"},
        {"d_model", "0", ENCDEC_ERR_CONFIG, "d_model"},
        {"vocab_size", NULL, ENCDEC_ERR_CONFIG, "missing \"vocab_size\""},
        {"eos_token_id", "100000", ENCDEC_ERR_CONFIG, "eos_token_id 100000 is not below the vocabulary"},
        {"pad_token_id", "-4", ENCDEC_ERR_CONFIG, "pad_token_id"},
        {"scale_embedding", "\"yes\"", ENCDEC_ERR_CONFIG, "scale_embedding\" must be true or false"},
        {"decoder_layers", "4", ENCDEC_ERR_SHAPE, "decoder.layers.3.self_attn.q_proj.bias is missing"},
        {"encoder_ffn_dim", "100", ENCDEC_ERR_SHAPE, "fc1.bias has shape"},
        {"d_model", "32", ENCDEC_ERR_SHAPE, "shared.weight has shape"},
        {"tie_word_embeddings", "false", ENCDEC_ERR_SHAPE, "lm_head.weight is missing"},
        {"share_encoder_decoder_embeddings", "false", ENCDEC_ERR_SHAPE,
         "encoder.embed_tokens.weight is missing"},
        {"max_position_embeddings", "16", ENCDEC_OK, NULL},   /* sinusoidal: any length */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "cfg%zu", i);
        const char *d = md_copy(MARIAN, name, FILES);
        md_set_config(d, c[i].key, c[i].json);
        CHECK_STATUS(load(d), c[i].want, c[i].msg ? c[i].msg : "");
    }
    /* learned positions must be there for the positions the config claims */
    const char *d = md_copy(MBART, "pos", NO_TOK);
    md_set_config(d, "max_position_embeddings", "100");
    CHECK_STATUS(load(d), ENCDEC_ERR_SHAPE, "embed_positions.weight has shape [66,64], expected [102,64]");
    /* a model without tokenizer files says which files encdec reads */
    d = md_copy(MBART, "mbart-tok", NO_TOK);
    CHECK_STATUS(load(d), ENCDEC_ERR_TOKENIZER, "no tokenizer beside this mbart model: encdec reads");
    /* mBART's files, one of them lying: a class of another family, a
     * vocabulary larger than the model's */
    static const char *const SP[] = {"config.json", "model.safetensors", "sentencepiece.bpe.model",
                                     "special_tokens_map.json", NULL};
    d = md_copy(MBART, "mbart-class", SP);
    const char *cls = "{\"tokenizer_class\": \"BertTokenizer\"}";
    tmp_write(tmp_join(d, "tokenizer_config.json"), cls, strlen(cls));
    CHECK_STATUS(load(d), ENCDEC_ERR_TOKENIZER, "tokenizer_class \"BertTokenizer\" is none of");
    d = md_copy(MBART, "mbart-big", SP);
    md_set_config(d, "vocab_size", "300");
    CHECK(load(d) != ENCDEC_OK);
}

static void test_tokenizers(void) {
    const char *d = md_copy(MARIAN, "no-vocab", (const char *const[]){"config.json", "model.safetensors",
                                                                     "source.spm", "target.spm", NULL});
    CHECK_STATUS(load(d), ENCDEC_ERR_TOKENIZER, "no tokenizer beside this marian model");
    struct {
        const char *vocab;
        encdec_status want;
        const char *msg;
    } v[] = {
        {"[1, 2]", ENCDEC_ERR_CONFIG, ""},
        {"{\"</s>\": 0, \"<unk>\": 1.5}", ENCDEC_ERR_TOKENIZER, "the id of \"<unk>\" is not an integer"},
        {"{\"</s>\": 0, \"<unk>\": -1}", ENCDEC_ERR_TOKENIZER, "the id of \"<unk>\""},
        /* fuzz_bart's find: an id past int's range (its cast was undefined) */
        {"{\"</s>\": 0, \"<unk>\": 1, \"a\": 6666666666666666666666666666666666666}",
         ENCDEC_ERR_TOKENIZER, "the id of \"a\" is not an integer"},
        {"{\"</s>\": 0, \"<unk>\": 1, \"a\": -1e300}", ENCDEC_ERR_TOKENIZER, "the id of \"a\""},
        {"{\"</s>\": 0, \"<unk>\": 2}", ENCDEC_ERR_TOKENIZER, "vocab.json"},           /* a hole at 1 */
        {"{\"</s>\": 0, \"x\": 1}", ENCDEC_ERR_TOKENIZER, "no \"</s>\" or \"<unk>\""},
        {"{\"</s>\": 1, \"<unk>\": 0}", ENCDEC_ERR_TOKENIZER, "does not fit the model"},  /* eos 0 */
        {"{\"</s>\": 0, \"<unk>\": 1, \"a\": 100000}", ENCDEC_ERR_TOKENIZER, ""},
        {"{\"</s>\": 0, \"<unk>\": 1", ENCDEC_ERR_CONFIG, "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "vocab%zu", i);
        d = md_copy(MARIAN, name, FILES);
        tmp_write(tmp_join(d, "vocab.json"), v[i].vocab, strlen(v[i].vocab));
        CHECK_STATUS(load(d), v[i].want, v[i].msg);
    }
    d = md_copy(MARIAN, "spm", FILES);
    tmp_write(tmp_join(d, "source.spm"), "\x0a\x05garbage", 9);
    CHECK(load(d) != ENCDEC_OK);
    d = md_copy(MARIAN, "spm-empty", FILES);
    tmp_write(tmp_join(d, "target.spm"), "", 0);
    CHECK(load(d) != ENCDEC_OK);
}

static void test_requests(void) {
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_model_load(MARIAN, &m), ENCDEC_OK);
    if (!m) return;
    CHECK_EQ_INT(encdec_session_new(m, NULL, &s), ENCDEC_OK);
    /* 64 positions: an input of 80 pieces is refused, or cut with truncate */
    char long_in[1024] = "";
    for (int i = 0; i < 80; i++) strcat(long_in, "cat ");
    const char *in[1] = {long_in};
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = 8;
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "max_position_embeddings");
    p.truncate = 1;
    CHECK_EQ_INT(encdec_generate(s, in, 1, &p, &r), ENCDEC_OK);
    if (r) CHECK(encdec_result_timings(r)->n_input_tokens == 64);
    encdec_result_free(r);
    r = NULL;
    /* and the decoder's positions: 64 new tokens need 65 */
    p.truncate = 0;
    p.max_new_tokens = 64;
    in[0] = "The house is wonderful.";
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "max_position_embeddings");
    p.max_new_tokens = 63;
    CHECK_EQ_INT(encdec_generate(s, in, 1, &p, &r), ENCDEC_OK);
    encdec_result_free(r);
    r = NULL;
    in[0] = "bad \xff utf-8";
    CHECK_STATUS(encdec_generate(s, in, 1, &p, &r), ENCDEC_ERR_ARG, "input 0");
    /* a text model cannot transcribe */
    float pcm[160] = {0};
    CHECK_STATUS(encdec_transcribe(s, pcm, 160, NULL, &r), ENCDEC_ERR_ARG, "marian model (text to text)");
    /* the attention of a sequence: its tokens and positions checked; rows
     * that sum to 1 over the input */
    int ids[3] = {20, 21, 0}, seq[65] = {0}, bad[2] = {5, 1 << 20};
    float att[65 * 3];
    CHECK_STATUS(encdec_text_attention(s, ids, 3, bad, 2, att), ENCDEC_ERR_ARG, "sequence token 1 is id 1048576");
    CHECK_STATUS(encdec_text_attention(s, ids, 3, seq, 0, att), ENCDEC_ERR_ARG, "0 sequence tokens");
    CHECK_STATUS(encdec_text_attention(s, ids, 0, seq, 2, att), ENCDEC_ERR_ARG, "no tokens");
    CHECK_STATUS(encdec_text_attention(s, ids, 3, seq, 2, NULL), ENCDEC_ERR_ARG, "out is NULL");
    CHECK_STATUS(encdec_text_attention(s, ids, 3, seq, 65, att), ENCDEC_ERR_ARG, "max_position_embeddings");
    CHECK_STATUS(encdec_text_attention(NULL, ids, 3, seq, 2, att), ENCDEC_ERR_ARG, "session is NULL");
    seq[0] = 5;
    CHECK_EQ_INT(encdec_text_attention(s, ids, 3, seq, 2, att), ENCDEC_OK);
    for (int r0 = 0; r0 < 2; r0++) CHECK(fabsf(att[r0 * 3] + att[r0 * 3 + 1] + att[r0 * 3 + 2] - 1) < 1e-5f);
    /* and its tokens' log-probabilities: below 0, the checks alike */
    float lp[20];
    CHECK_STATUS(encdec_text_score(s, ids, 3, seq, 2, NULL), ENCDEC_ERR_ARG, "out is NULL");
    CHECK_STATUS(encdec_text_score(s, ids, 3, bad, 2, lp), ENCDEC_ERR_ARG, "sequence token 1");
    for (int i = 0; i < 20; i++) seq[i] = 5 + i;
    CHECK_EQ_INT(encdec_text_score(s, ids, 3, seq, 20, lp), ENCDEC_OK);   /* two passes of positions */
    for (int i = 0; i < 20; i++) CHECK(lp[i] < 0 && lp[i] > -1000);
    /* in a batch, whatever the passes: 5 pairs of 20 positions in passes of
     * 7 rows (each pair alone, in passes of its positions), then of 64 (3
     * pairs a pass), each as the pair alone in one pass */
    const int *bi[5] = {ids, ids, ids, ids, ids}, *bs[5] = {seq, seq + 1, seq, seq + 2, seq};
    int bn_ids[5] = {3, 3, 2, 3, 3}, bn_seq[5] = {20, 19, 5, 18, 1};
    float blp[5][20], one[20], *bo[5] = {blp[0], blp[1], blp[2], blp[3], blp[4]};
    for (int rows = 7; rows <= 64; rows += 57) {
        char v[16];
        snprintf(v, sizeof v, "%d", rows);
        setenv("ENCDEC_FORCED_ROWS", v, 1);
        CHECK_EQ_INT(encdec_text_score_batch(s, 5, bi, bn_ids, bs, bn_seq, bo), ENCDEC_OK);
        unsetenv("ENCDEC_FORCED_ROWS");
        for (int i = 0; i < 5; i++) {
            CHECK_EQ_INT(encdec_text_score(s, bi[i], bn_ids[i], bs[i], bn_seq[i], one), ENCDEC_OK);
            for (int t = 0; t < bn_seq[i]; t++) CHECK(fabsf(one[t] - blp[i][t]) < 1e-4f);
        }
    }
    CHECK_STATUS(encdec_text_score_batch(s, 5, bi, bn_ids, bs, (int[]){20, 19, 0, 18, 1}, bo),
                 ENCDEC_ERR_ARG, "pair 2: 0 sequence tokens");
    /* the attention alike, with an input the model's 64 positions cut (its
     * first 63 tokens and its last: the others' columns 0) */
    int long_ids[70];
    for (int i = 0; i < 70; i++) long_ids[i] = 20 + i % 30;
    long_ids[69] = 0;
    const int *ai[3] = {ids, long_ids, ids};
    int an_ids[3] = {3, 70, 2}, an_seq[3] = {20, 6, 3};
    static float aatt[3][20 * 70], aone[20 * 70];
    float *ao[3] = {aatt[0], aatt[1], aatt[2]};
    for (int rows = 7; rows <= 64; rows += 57) {
        char v[16];
        snprintf(v, sizeof v, "%d", rows);
        setenv("ENCDEC_FORCED_ROWS", v, 1);
        CHECK_EQ_INT(encdec_text_attention_batch(s, 3, ai, an_ids, (const int *const[]){seq, seq, seq}, an_seq, ao),
                     ENCDEC_OK);
        unsetenv("ENCDEC_FORCED_ROWS");
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(encdec_text_attention(s, ai[i], an_ids[i], seq, an_seq[i], aone), ENCDEC_OK);
            for (int t = 0; t < an_seq[i] * an_ids[i]; t++) CHECK(fabsf(aone[t] - aatt[i][t]) < 1e-5f);
        }
        for (int row = 0; row < 6; row++) {
            float sum = 0;
            for (int t = 0; t < 70; t++) sum += aatt[1][row * 70 + t];
            CHECK(fabsf(sum - 1) < 1e-5f && aatt[1][row * 70 + 63] == 0 && aatt[1][row * 70 + 68] == 0);
        }
    }
    encdec_session_free(s);
    encdec_model_free(m);
}

int main(void) {
    if (!tmp_new("encdec-errors-bart")) return 2;
    test_configs();
    test_tokenizers();
    test_requests();
    tmp_remove(tmp_dir);
    return check_done();
}
