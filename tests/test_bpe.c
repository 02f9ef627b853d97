/* test_bpe.c - the Whisper BPE tokenizer against ids from Hugging Face
 * `tokenizers` (tests/data/bpe_golden.json, written by tools/golden_bpe.py),
 * loaded from every file layout we read, plus the errors for bad input.
 */
#include "check.h"

#include "base/json.h"
#include "tok/bpe.h"
#include "base/fmap.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static cJSON *g_golden;

static void load_golden(void) {
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/bpe_golden.json", &g_golden), ENCDEC_OK);
}

static int ids_from_json(const cJSON *arr, int *ids, int cap) {
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        if (n < cap) ids[n] = e->valueint;
        n++;
    }
    return n;
}

/* Every golden string: exact ids, and decode(encode(s)) == s. */
static void check_golden(const bpe_tok *t, const char *label) {
    enum { CAP = 4096 };
    static int want[CAP], got[CAP];
    int n_cases = 0, n_equal = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g_golden, "cases")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const char *decoded = cJSON_GetObjectItem(c, "decoded")->valuestring;
        int nw = ids_from_json(cJSON_GetObjectItem(c, "ids"), want, CAP), ng = -1;
        CHECK_EQ_INT(bpe_encode(t, text, got, CAP, &ng), ENCDEC_OK);
        int same = ng == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0;
        CHECK(same);
        if (!same) {
            fprintf(stderr, "%s: case %d \"%s\": %d ids, expected %d\n  got ", label, n_cases, text, ng, nw);
            for (int i = 0; i < ng && i < CAP; i++) fprintf(stderr, " %d", got[i]);
            fprintf(stderr, "\n  want");
            for (int i = 0; i < nw; i++) fprintf(stderr, " %d", want[i]);
            fprintf(stderr, "\n");
        }
        char *back = bpe_decode(t, got, ng < CAP ? ng : CAP, 0);
        CHECK_STR(back, text);
        CHECK_STR(back, decoded);
        n_equal += same && back && strcmp(back, text) == 0;
        free(back);
        n_cases++;
    }
    printf("%s: %d of %d golden strings equal\n", label, n_equal, n_cases);
    CHECK(n_cases >= 50);

    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g_golden, "decode")) {
        int n = ids_from_json(cJSON_GetObjectItem(c, "ids"), want, CAP);
        char *s = bpe_decode(t, want, n, cJSON_IsTrue(cJSON_GetObjectItem(c, "skip_special")));
        CHECK_STR(s, cJSON_GetObjectItem(c, "text")->valuestring);
        free(s);
    }
}

/* What every Whisper tiny.en tokenizer must agree on, whatever its files. */
static void check_tiny_en(const bpe_tok *t, const char *label) {
    printf("%s\n", label);
    CHECK_EQ_INT(bpe_n_vocab(t), 51864);
    CHECK_EQ_INT(bpe_token_id(t, "<|endoftext|>"), 50256);
    CHECK_EQ_INT(bpe_token_id(t, "<|startoftranscript|>"), 50257);
    CHECK_EQ_INT(bpe_token_id(t, "<|en|>"), 50258);
    CHECK_EQ_INT(bpe_token_id(t, "<|transcribe|>"), 50358);
    CHECK_EQ_INT(bpe_token_id(t, "<|notimestamps|>"), 50362);
    CHECK_EQ_INT(bpe_token_id(t, "<|0.00|>"), 50363);
    CHECK_EQ_INT(bpe_token_id(t, "<|0.02|>"), 50364);
    CHECK_EQ_INT(bpe_token_id(t, "<|30.00|>"), 51863);
    CHECK_EQ_INT(bpe_token_id(t, "Ġthe"), 262);
    CHECK_EQ_INT(bpe_token_id(t, "<|nosuchtoken|>"), -1);
    CHECK(bpe_is_special(t, 50256));
    CHECK(bpe_is_special(t, 50362));
    CHECK(bpe_is_special(t, 51863));
    CHECK(!bpe_is_special(t, 262));
    CHECK(!bpe_is_special(t, -1));
    CHECK(!bpe_is_special(t, 51864));

    size_t len = 0;
    const char *b = bpe_token_bytes(t, 262, &len);
    CHECK(b && len == 4 && memcmp(b, " the", 4) == 0);
    b = bpe_token_bytes(t, 50363, &len);
    CHECK(b && len == 8 && memcmp(b, "<|0.00|>", 8) == 0);
    CHECK(bpe_token_bytes(t, 51864, &len) == NULL);
    CHECK(bpe_token_bytes(t, -1, &len) == NULL);

    /* The JFK sample as Whisper tiny.en transcribes it. */
    static const int jfk[] = {50257, 50362, 843, 523, 616, 5891, 3399, 11, 1265, 407, 644, 534, 1499,
                              460, 466, 329, 345, 11, 1265, 644, 345, 460, 466, 329, 534, 1499, 13, 50256};
    const char *sentence = " And so my fellow Americans, ask not what your country can do for you,"
                           " ask what you can do for your country.";
    int n = (int)(sizeof jfk / sizeof *jfk);
    char *s = bpe_decode(t, jfk, n, 1);
    CHECK_STR(s, sentence);
    free(s);
    s = bpe_decode(t, jfk, n, 0);
    CHECK(s && strncmp(s, "<|startoftranscript|><|notimestamps|> And so", 44) == 0);
    CHECK(s && strlen(s) > 13 && strcmp(s + strlen(s) - 13, "<|endoftext|>") == 0);
    free(s);
    int ids[64], got = 0;
    CHECK_EQ_INT(bpe_encode(t, sentence, ids, 64, &got), ENCDEC_OK);
    CHECK_EQ_INT(got, n - 3);
    CHECK(memcmp(ids, jfk + 2, (size_t)(n - 3) * sizeof *ids) == 0);

    /* A short buffer gets the first cap ids and the full count. */
    int few[3] = {-7, -7, -7};
    CHECK_EQ_INT(bpe_encode(t, sentence, few, 2, &got), ENCDEC_OK);
    CHECK_EQ_INT(got, n - 3);
    CHECK(few[0] == 843 && few[1] == 523 && few[2] == -7);
    CHECK_EQ_INT(bpe_encode(t, "", NULL, 0, &got), ENCDEC_OK);
    CHECK_EQ_INT(got, 0);

    /* Ids out of range are dropped; an empty list decodes to "". */
    int odd[] = {-1, 262, 99999};
    s = bpe_decode(t, odd, 3, 0);
    CHECK_STR(s, " the");
    free(s);
    s = bpe_decode(t, NULL, 0, 1);
    CHECK_STR(s, "");
    free(s);

    /* Invalid UTF-8 is refused with its offset. */
    CHECK_STATUS(bpe_encode(t, "ok \xff", ids, 64, &got), ENCDEC_ERR_ARG, "invalid UTF-8 at byte 3");
    CHECK_STATUS(bpe_encode(t, "\xc3", ids, 64, &got), ENCDEC_ERR_ARG, "invalid UTF-8 at byte 0");
    CHECK_STATUS(bpe_encode(t, "\xed\xa0\x80", ids, 64, &got), ENCDEC_ERR_ARG, "invalid UTF-8");   /* surrogate */
    CHECK_STATUS(bpe_encode(t, "\xc0\xaf", ids, 64, &got), ENCDEC_ERR_ARG, "invalid UTF-8");       /* overlong */
    CHECK_STATUS(bpe_encode(t, "\xf4\x90\x80\x80", ids, 64, &got), ENCDEC_ERR_ARG, "invalid UTF-8");

    check_golden(t, label);
}

static bpe_tok *load_timed(const char *dir, const char *label) {
    bpe_tok *t = NULL;
    double t0 = now_ms();
    encdec_status st = bpe_load_dir(&t, dir);
    double ms = now_ms() - t0;
    if (st) fprintf(stderr, "%s: %s\n", label, encdec_last_error());
    CHECK_EQ_INT(st, ENCDEC_OK);
    if (!st) printf("%s: loaded in %.1f ms\n", label, ms);
    return t;
}

/* ---- temp files ------------------------------------------------------------ */

static char g_tmp[64];

static const char *tmp_path(const char *name) {
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s", g_tmp, name);
    return buf;
}

static void write_file(const char *name, const char *text) {
    FILE *f = fopen(tmp_path(name), "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void link_file(const char *from_dir, const char *name) {
    char src[1024];
    ed_path_join(src, sizeof src, from_dir, name);
    CHECK(symlink(src, tmp_path(name)) == 0);
}

static void clear_tmp(void) {
    static const char *names[] = {"tokenizer.json", "vocab.json", "merges.txt", "special_tokens_map.json",
                                  "vocabulary.txt", "vocabulary.json"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) unlink(tmp_path(names[i]));
}

/* The other layouts, built from the shared files in a temp dir. */
static void check_layouts(const char *hf, const char *fw) {
    bpe_tok *t;
    clear_tmp();
    link_file(hf, "vocab.json");
    link_file(hf, "merges.txt");
    link_file(hf, "special_tokens_map.json");
    if ((t = load_timed(g_tmp, "vocab.json + merges.txt"))) check_tiny_en(t, "vocab.json + merges.txt");
    bpe_free(t);
    if (!fw) return;
    clear_tmp();
    link_file(fw, "vocabulary.txt");
    if ((t = load_timed(g_tmp, "vocabulary.txt, merges derived"))) check_tiny_en(t, "vocabulary.txt, merges derived");
    bpe_free(t);
    link_file(hf, "merges.txt");
    if ((t = load_timed(g_tmp, "vocabulary.txt + merges.txt"))) check_tiny_en(t, "vocabulary.txt + merges.txt");
    bpe_free(t);
}

static void expect_json_error(const char *json, const char *substr) {
    bpe_tok *t = (bpe_tok *)&t;
    CHECK_STATUS(bpe_load_json(&t, json, strlen(json), "mem.json"), ENCDEC_ERR_TOKENIZER, substr);
    CHECK(t == NULL);
    bpe_free(t);
}

static void check_bad_input(void) {
    bpe_tok *t = (bpe_tok *)&t;
    CHECK_STATUS(bpe_load_dir(&t, "/nonexistent/whisper"), ENCDEC_ERR_TOKENIZER, "/nonexistent/whisper: no such directory");
    CHECK(t == NULL);

    clear_tmp();
    CHECK_STATUS(bpe_load_dir(&t, g_tmp), ENCDEC_ERR_TOKENIZER, "no tokenizer.json");
    write_file("tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 0,}");
    CHECK_STATUS(bpe_load_dir(&t, g_tmp), ENCDEC_ERR_TOKENIZER, "tokenizer.json: malformed JSON near byte");
    clear_tmp();
    write_file("vocab.json", "{\"a\": 0}");
    write_file("merges.txt", "#version: 0.2\na b\n");
    CHECK_STATUS(bpe_load_dir(&t, g_tmp), ENCDEC_ERR_TOKENIZER, "vocab.json: no token for byte 0x00");
    clear_tmp();
    write_file("vocabulary.txt", "a\n\nb\n");
    CHECK_STATUS(bpe_load_dir(&t, g_tmp), ENCDEC_ERR_TOKENIZER, "vocabulary.txt:2: empty token");
    clear_tmp();

    /* A minimal valid byte-level vocabulary, then broken variants of it. */
    char vocab[8192];
    size_t at = 0;
    at += (size_t)snprintf(vocab + at, sizeof vocab - at, "{\"model\": {\"type\": \"BPE\", \"vocab\": {");
    for (int b = 0; b < 256; b++) {
        unsigned cp = (b <= 0x20) ? 256u + (unsigned)b : (b >= 0x7f && b <= 0xa0) ? 289u + (unsigned)(b - 0x7f)
                    : b == 0xad ? 323u : (unsigned)b;
        if (b == '"' || b == '\\') at += (size_t)snprintf(vocab + at, sizeof vocab - at, "\"\\%c\": %d, ", b, b);
        else at += (size_t)snprintf(vocab + at, sizeof vocab - at, "\"\\u%04x\": %d, ", cp, b);
    }
    char doc[16384];
    snprintf(doc, sizeof doc, "%s\"ab\": 256}, \"merges\": [[\"a\", \"b\"]]}, "
             "\"added_tokens\": [{\"id\": 257, \"content\": \"<|endoftext|>\", \"special\": true}]}", vocab);
    CHECK_EQ_INT(bpe_load_json(&t, doc, strlen(doc), "mem.json"), ENCDEC_OK);
    if (t) {
        int ids[8], n = 0;
        CHECK_EQ_INT(bpe_encode(t, "abc ab", ids, 8, &n), ENCDEC_OK);
        CHECK(n == 4 && ids[0] == 256 && ids[1] == 'c' && ids[2] == ' ' && ids[3] == 256);
        CHECK_EQ_INT(bpe_n_vocab(t), 258);
        CHECK(bpe_is_special(t, 257));
        bpe_free(t);
    }
    snprintf(doc, sizeof doc, "%s\"ab\": 256}, \"merges\": [\"a c\"]}}", vocab);
    expect_json_error(doc, "mem.json: merge 0 (\"a\" \"c\") makes \"ac\", which is not in the vocabulary");
    snprintf(doc, sizeof doc, "%s\"ab\": 256}, \"merges\": [\"a zz\"]}}", vocab);
    expect_json_error(doc, "uses the unknown token \"zz\"");
    snprintf(doc, sizeof doc, "%s\"ab\": 256}, \"merges\": [\"a  b\"]}}", vocab);
    expect_json_error(doc, "merge 0 is neither");
    snprintf(doc, sizeof doc, "%s\"ab\": 255}, \"merges\": []}}", vocab);
    expect_json_error(doc, "mem.json: id 255 is given to both");
    snprintf(doc, sizeof doc, "%s\"ab\": 300}, \"merges\": []}}", vocab);
    expect_json_error(doc, "mem.json: no token has id 256");
    snprintf(doc, sizeof doc, "%s\"ab\": -3}, \"merges\": []}}", vocab);
    expect_json_error(doc, "token \"ab\" has no valid id");
    expect_json_error("{\"model\": {\"vocab\": {}, \"merges\": []}}", "vocabulary is empty");
    expect_json_error("{\"model\": {\"type\": \"Unigram\"}}", "model type is not BPE");
    expect_json_error("[1, 2]", "no \"model\" object");
    expect_json_error("", "malformed JSON");
}

int main(void) {
    load_golden();
    if (!g_golden) return check_done();
    snprintf(g_tmp, sizeof g_tmp, "/tmp/test_bpe_XXXXXX");
    CHECK(mkdtemp(g_tmp) != NULL);

    const char *hf = ED_SHARED_DIR "/assets/whisper-tiny.en-tokenizer";
    char fw[1024];
    const char *env = getenv("ENCDEC_TINY_EN"), *home = getenv("HOME");
    if (env) snprintf(fw, sizeof fw, "%s", env);
    else snprintf(fw, sizeof fw, "%s/.cache/encdec/models/whisper-tiny.en", home ? home : "");
    int have_hf = ed_is_dir(hf), have_fw = ed_is_dir(fw);

    if (have_hf) {
        bpe_tok *t = load_timed(hf, "HF tokenizer.json");
        if (t) check_tiny_en(t, "HF tokenizer.json");
        bpe_free(t);
        check_layouts(hf, have_fw ? fw : NULL);
    } else {
        printf("SKIP (partly): no %s\n", hf);
    }
    if (have_fw) {
        bpe_tok *t = load_timed(fw, "faster-whisper dir");
        if (t) check_tiny_en(t, "faster-whisper dir");
        bpe_free(t);
    } else {
        printf("SKIP (partly): no %s\n", fw);
    }
    check_bad_input();

    clear_tmp();
    rmdir(g_tmp);
    cJSON_Delete(g_golden);
    return check_done();
}
