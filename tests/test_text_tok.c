/* test_text_tok.c - the SentencePiece tokenizers of the fairseq translation
 * models (tok/text_sp.c, tok/spm_bpe.c) against transformers' own classes:
 * tests/data/text-tok/golden.json (tools/golden_text_tok.py) holds, for NLLB,
 * mBART-50, mBART, M2M100 and Pegasus tokenizers trained there (and NLLB's,
 * mBART-50's and Pegasus's fast classes, from tokenizer.json alone), the
 * input ids of a corpus of tricky strings (default source language), a few
 * inputs in other source languages, language token ids, and decoded texts
 * of those ids and of random id lists. Also: lookups of language codes, and
 * bad files.
 */
#include "check.h"
#include "tmpdir.h"
#include "tok/text.h"
#include "base/fmap.h"
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static cJSON *g_golden;

static int ids_of(const cJSON *arr, int *ids, int cap) {
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) if (n < cap) ids[n++] = e->valueint;
    return n;
}

static void print_ids(const char *what, const int *ids, int n) {
    fprintf(stderr, "  %s:", what);
    for (int i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n");
}

static int same_encode(const ed_ttok *t, const char *text, int src, const int *want, int nw, const char *label) {
    int *ids = NULL, n = 0;
    encdec_status st = ttok_encode_lang(t, text, strlen(text), src, -1, &ids, &n);
    int ok = !st && n == nw && !memcmp(ids, want, sizeof(int) * (size_t)nw);
    if (!ok) {
        fprintf(stderr, "%s: encode \"%s\" %s\n", label, text, st ? encdec_last_error() : "");
        print_ids("got ", ids, n);
        print_ids("want", want, nw);
    }
    free(ids);
    return ok;
}

static int same_decode(const ed_ttok *t, const int *ids, int n, const char *want, const char *label) {
    char *got = NULL;
    encdec_status st = ttok_decode(t, ids, n, &got);
    int ok = !st && !strcmp(got, want);
    if (!ok) {
        fprintf(stderr, "%s: decode = \"%s\", expected \"%s\"\n", label, got ? got : "(null)", want);
        print_ids("ids", ids, n);
    }
    free(got);
    return ok;
}

static void check_tokenizer(const char *name) {
    enum { CAP = 4096 };
    static int want[CAP];
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(g_golden, "tokenizers"), name), *c;
    const cJSON *texts = cJSON_GetObjectItem(g_golden, "texts");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/text-tok/%s", ED_TEST_DATA, name);
    ed_ttok *t = NULL;
    CHECK_EQ_INT(ttok_load_sp(&t, dir, NULL), ENCDEC_OK);
    if (!t || !g) {
        fprintf(stderr, "%s: %s\n", name, encdec_last_error());
        return;
    }
    CHECK_EQ_INT(ttok_eos(t), cJSON_GetObjectItem(g, "eos")->valueint);
    /* the languages: every code the golden names, by code and at its id */
    const cJSON *langs = cJSON_GetObjectItem(g, "lang_ids");
    cJSON_ArrayForEach(c, langs) {
        int i = ttok_find_lang(t, c->string);
        CHECK(i >= 0);
        CHECK_EQ_INT(ttok_lang_token(t, i), c->valueint);
    }
    CHECK_EQ_INT(ttok_find_lang(t, "xx_YY"), -1);
    CHECK_EQ_INT(ttok_tgt_place(t), !strncmp(name, "pegasus", 7) ? TTOK_TGT_NONE
                                    : !strcmp(name, "mbart") ? TTOK_TGT_START : TTOK_TGT_FORCED);
    int i = 0, n_ok = 0, n_dec = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "cases")) {
        const char *text = cJSON_GetArrayItem(texts, i++)->valuestring;
        int nw = ids_of(cJSON_GetObjectItem(c, "ids"), want, CAP);
        n_ok += same_encode(t, text, -1, want, nw, name);
        n_dec += same_decode(t, want, nw, cJSON_GetObjectItem(c, "text")->valuestring, name);
    }
    CHECK_EQ_INT(n_ok, i);
    CHECK_EQ_INT(n_dec, i);
    int n_src = 0, k = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "src_cases")) {
        int nw = ids_of(cJSON_GetArrayItem(c, 2), want, CAP);
        int lang = ttok_find_lang(t, cJSON_GetArrayItem(c, 1)->valuestring);
        n_src += same_encode(t, cJSON_GetArrayItem(c, 0)->valuestring, lang, want, nw, name);
        k++;
    }
    CHECK_EQ_INT(n_src, k);
    int n_list = 0, m = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "decode")) {
        int n = ids_of(cJSON_GetArrayItem(c, 0), want, CAP);
        n_list += same_decode(t, want, n, cJSON_GetArrayItem(c, 1)->valuestring, name);
        m++;
    }
    CHECK_EQ_INT(n_list, m);
    printf("%s: %d of %d texts encode and decode as %s (%d and %d); %d of %d in other source "
           "languages; %d of %d id lists decode equal\n", name, n_ok, i,
           cJSON_GetObjectItem(g, "class")->valuestring, n_ok, n_dec, n_src, k, n_list, m);
    ttok_free(t);
}

/* Files that lie: a tokenizer class of another family, a src_lang the
 * tokenizer lacks, two ids for one token, a hole in the ids. */
static void check_errors(void) {
    static const char *const files[] = {"sentencepiece.bpe.model", "special_tokens_map.json"};
    char src[512], dst[512], p[600];
    snprintf(src, sizeof src, "%s/text-tok/nllb", ED_TEST_DATA);
    snprintf(dst, sizeof dst, "%s", tmp_path("nllb"));
    mkdir(dst, 0755);
    for (int i = 0; i < 2; i++) {
        char a[600], b[600], *data = NULL;
        size_t n = 0;
        snprintf(a, sizeof a, "%s/%s", src, files[i]);
        snprintf(b, sizeof b, "%s/%s", dst, files[i]);
        CHECK_EQ_INT(ed_read_file(a, &data, &n), ENCDEC_OK);
        tmp_write(b, data, n);
        free(data);
    }
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dst);
    struct { const char *json, *err; } cases[] = {
        {"{\"tokenizer_class\": \"T5Tokenizer\"}", "is none of NllbTokenizer"},
        {"{\"tokenizer_class\": \"NllbTokenizer\", \"src_lang\": \"xx_Latn\"}", "src_lang \"xx_Latn\" is not one"},
        {"{\"added_tokens_decoder\": {\"0\": {\"content\": \"<s>\"}, \"7\": {\"content\": \"<s>\"}}}",
         "has the ids 0 and 7"},
        {"{\"added_tokens_decoder\": {\"9999\": {\"content\": \"far\"}}}", "hole"},
        {"{\"added_tokens_decoder\": {\"-1\": {\"content\": \"neg\"}}}", "is not an id with a content"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tmp_write(p, cases[i].json, strlen(cases[i].json));
        ed_ttok *t = (ed_ttok *)&t;
        CHECK_STATUS(ttok_load_sp(&t, dst, "m2m_100"), ENCDEC_ERR_TOKENIZER, cases[i].err);
        CHECK(t == NULL);
    }
    /* no ids in the files (older directories): the class's layout, as the
     * released NLLB and mBART-50 vocabularies have it: the codes right after
     * the pieces (fairseq's offset of 1), <mask> after them; src_lang's
     * token first, and clean_up_tokenization_spaces applied */
    const char *old = "{\"tokenizer_class\": \"NllbTokenizerFast\", \"src_lang\": \"fra_Latn\", "
                      "\"clean_up_tokenization_spaces\": true}";
    tmp_write(p, old, strlen(old));
    ed_ttok *o = NULL;
    CHECK_EQ_INT(ttok_load_sp(&o, dst, NULL), ENCDEC_OK);
    if (o) {
        CHECK_EQ_INT(ttok_n_langs(o), 202);
        CHECK_STR(ttok_lang_code(o, 0), "ace_Arab");
        CHECK_EQ_INT(ttok_lang_token(o, 0), 301);     /* 300 pieces + 1 */
        CHECK_EQ_INT(ttok_lang_token(o, ttok_find_lang(o, "zul_Latn")), 502);
        int *ids = NULL, n = 0, mask[2] = {0};
        CHECK_EQ_INT(ttok_encode(o, "<mask>", 6, &ids, &n), ENCDEC_OK);
        if (ids) {
            CHECK_EQ_INT(n, 3);
            mask[0] = ids[0];
            mask[1] = n > 1 ? ids[1] : -1;
            CHECK_EQ_INT(mask[0], ttok_lang_token(o, ttok_find_lang(o, "fra_Latn")));
            CHECK_EQ_INT(mask[1], 503);
        }
        free(ids);
        char *text = NULL;
        int hi[] = {ttok_lang_token(o, 3), 2};
        CHECK_EQ_INT(ttok_decode(o, hi, 2, &text), ENCDEC_OK);
        CHECK_STR(text, "");
        free(text);
        ids = NULL;   /* transformers' clean-up: " ." -> ".", " 's" -> "'s" */
        CHECK_EQ_INT(ttok_encode(o, "He 's here . Hello , they 're here", 34, &ids, &n), ENCDEC_OK);
        CHECK_EQ_INT(ttok_decode(o, ids, n, &text), ENCDEC_OK);
        CHECK_STR(text, "He's here. Hello, they're here");
        free(text);
        free(ids);
        ttok_free(o);
    }
    const char *bad = "{\"clean_up_tokenization_spaces\": 3}";
    tmp_write(p, bad, strlen(bad));
    ed_ttok *t = (ed_ttok *)&t;
    CHECK_STATUS(ttok_load_sp(&t, dst, "m2m_100"), ENCDEC_ERR_CONFIG, "clean_up_tokenization_spaces");
    CHECK(t == NULL);
}

int main(void) {
    if (ed_json_load(ED_TEST_DATA "/text-tok/golden.json", &g_golden)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    if (!tmp_new("encdec-test-text-tok")) return 2;
    const char *names[] = {"nllb", "mbart50", "mbart", "m2m100", "pegasus",
                           "nllb-fast", "mbart50-fast", "pegasus-fast"};   /* (tokenizer.json alone) */
    for (int i = 0; i < 8; i++) check_tokenizer(names[i]);
    check_errors();
    cJSON_Delete(g_golden);
    tmp_remove(tmp_dir);
    return check_done();
}
