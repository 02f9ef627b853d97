/* test_bart_ct2.c - CTranslate2 directories of BART-family models
 * (models/bart_ct2.c): the seeded random Marian, M2M100 and BART models of
 * tools/golden_bart_ct2.py, converted by CTranslate2's own converter, give
 * the tokens transformers' generate gives on the same weights (greedy and
 * beam search; CTranslate2's own greedy hypotheses are the same, the
 * script checks) on every kernel set (C, AVX2 or NEON, this CPU's best),
 * through a session and an engine; repetition_penalty with CTranslate2's
 * rules as CTranslate2 gives it (rep_penalty.h); the model reads as a
 * CTranslate2 one; a lying directory is refused.
 */
#include "check.h"
#include "tmpdir.h"
#include "modeldir.h"
#include "rep_penalty.h"
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *g_golden;

static int same_tokens(const encdec_sequence *sq, const cJSON *want) {
    int n = cJSON_GetArraySize(want), ok = sq && sq->n_tokens == n;
    for (int t = 0; ok && t < n; t++) ok = sq->tokens[t].id == cJSON_GetArrayItem(want, t)->valueint;
    if (!ok && sq) {
        fprintf(stderr, "  got:");
        for (int t = 0; t < sq->n_tokens; t++) fprintf(stderr, " %d", sq->tokens[t].id);
        char *w = cJSON_PrintUnformatted(want);
        fprintf(stderr, "\n  want: %s\n", w ? w : "?");
        free(w);
    }
    return ok;
}

/* The kernel sets to check: the portable C set, the 8-lane vector set
 * (AVX2 / NEON) and this CPU's best. */
static const encdec_isa g_sets[] = {ENCDEC_ISA_C,
#if defined(__aarch64__)
                                    ENCDEC_ISA_NEON,
#else
                                    ENCDEC_ISA_AVX2,
#endif
                                    ENCDEC_ISA_AUTO};

static void check_model(const char *name, const cJSON *g, encdec_isa isa) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/../../%s", ED_TEST_DATA, cJSON_GetObjectItem(g, "model_dir")->valuestring);
    encdec_model *m = NULL;
    encdec_model_params mp = encdec_model_default_params();
    mp.isa = isa;
    encdec_status st = encdec_model_load_ex(dir, &mp, &m);
    if (st == ENCDEC_ERR_ARG && isa != ENCDEC_ISA_AUTO) {   /* not on this CPU */
        printf("SKIP %s on %s: %s\n", name, encdec_isa_name(isa), encdec_last_error());
        return;
    }
    CHECK_STATUS(st, ENCDEC_OK, "");
    if (!m) return;
    encdec_model_info info;
    encdec_model_get_info(m, &info);
    CHECK_STR(info.family, "bart");
    CHECK_STR(info.format, "ctranslate2");
    const cJSON *texts = cJSON_GetObjectItem(g, "inputs"), *langs = cJSON_GetObjectItem(g, "langs");
    int B = cJSON_GetArraySize(texts);
    const char *in[8];
    for (int b = 0; b < B && b < 8; b++) in[b] = cJSON_GetArrayItem(texts, b)->valuestring;
    encdec_session *s = NULL;
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = cJSON_GetObjectItem(g, "max_new_tokens")->valueint;
    if (cJSON_IsArray(langs)) {
        p.src_lang = cJSON_GetArrayItem(langs, 0)->valuestring;
        p.tgt_lang = cJSON_GetArrayItem(langs, 1)->valuestring;
    }
    const cJSON *gj = cJSON_GetObjectItem(g, "greedy"), *bj = cJSON_GetObjectItem(g, "beam");
    encdec_result *r = NULL;
    int ok = 0;
    if (s) CHECK_EQ_INT(encdec_generate(s, in, B, &p, &r), ENCDEC_OK);
    for (int b = 0; r && b < B; b++) {
        const encdec_sequence *sq = encdec_result_sequence(r, b);
        ok += same_tokens(sq, cJSON_GetArrayItem(cJSON_GetObjectItem(gj, "tokens"), b));
        CHECK_STR(sq ? sq->text : "", cJSON_GetArrayItem(cJSON_GetObjectItem(gj, "text"), b)->valuestring);
    }
    CHECK_EQ_INT(ok, B);
    encdec_result_free(r);
    r = NULL;
    p.num_beams = cJSON_GetObjectItem(bj, "num_beams")->valueint;
    p.num_return_sequences = cJSON_GetObjectItem(bj, "num_return_sequences")->valueint;
    p.length_penalty = (float)cJSON_GetObjectItem(bj, "length_penalty")->valuedouble;
    p.early_stopping = cJSON_IsTrue(cJSON_GetObjectItem(bj, "early_stopping"));
    /* every input's best hypothesis exact; a lower-ranked one may be another
     * of (nearly) the same score (transformers computed in float32 what is
     * a bfloat16 product here: near ties, within 0.01, fall either way) */
    int okb = 0, nb = cJSON_GetArraySize(cJSON_GetObjectItem(bj, "tokens"));
    if (s) CHECK_EQ_INT(encdec_generate(s, in, B, &p, &r), ENCDEC_OK);
    for (int i = 0; r && i < nb; i++) {
        const encdec_sequence *sq = encdec_result_sequence(r, i);
        int same = same_tokens(sq, cJSON_GetArrayItem(cJSON_GetObjectItem(bj, "tokens"), i));
        double want = cJSON_GetArrayItem(cJSON_GetObjectItem(bj, "scores"), i)->valuedouble;
        if (!same && sq && sq->rank > 0 && fabs(sq->score - want) < 1e-2) {
            printf("  input %d, hypothesis %d: a near tie (score %.5f, transformers' %.5f)\n", sq->input,
                   sq->rank, (double)sq->score, want);
            same = 1;
        }
        okb += same;
    }
    CHECK_EQ_INT(okb, nb);
    encdec_result_free(r);
    printf("%s (%s, CTranslate2 directory, kernels %s): greedy %d of %d, beam %d of %d sequences as "
           "transformers'\n", name, info.model_type, info.isa, ok, B, okb, nb);
    encdec_session_free(s);
    encdec_model_free(m);
}

/* A conversion without the tokenizer files (CTranslate2 users tokenize
 * themselves): it loads with its vocabulary for tokens, generates from
 * token ids what it generates with its tokenizer, and refuses text with a
 * message naming the files it lacks. */
static void check_tokens_only(const cJSON *g) {
    static const char *const files[] = {"model.bin", "config.json", "shared_vocabulary.json", NULL};
    const char *d = md_copy(ED_TEST_DATA "/tiny-random-m2m100-ct2", "tokens-only", files);
    encdec_model *m = NULL;
    CHECK_EQ_INT(encdec_model_load(d, &m), ENCDEC_OK);
    if (!m) return;
    CHECK_EQ_INT(encdec_model_token_id(m, "__de__"), cJSON_GetArrayItem(cJSON_GetArrayItem(
                     cJSON_GetObjectItem(cJSON_GetObjectItem(g, "greedy"), "tokens"), 0), 0)->valueint);
    encdec_engine *e = NULL;
    encdec_engine_params ep = encdec_engine_default_params();
    ep.n_threads = 2;
    CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    const cJSON *ids = cJSON_GetObjectItem(g, "input_ids");
    int ok = 0, B = cJSON_GetArraySize(ids);
    for (int b = 0; e && b < B; b++) {
        const cJSON *w = cJSON_GetArrayItem(ids, b);
        const cJSON *want = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(g, "greedy"), "tokens"), b);
        int n = cJSON_GetArraySize(w), tok[256], pre = cJSON_GetArrayItem(want, 0)->valueint;
        for (int t = 0; t < n && t < 256; t++) tok[t] = cJSON_GetArrayItem(w, t)->valueint;
        encdec_generate_params p = encdec_generate_default_params();
        p.max_new_tokens = cJSON_GetObjectItem(g, "max_new_tokens")->valueint;
        encdec_request *q = NULL;
        encdec_result *r = NULL;
        CHECK_EQ_INT(encdec_engine_generate_ids(e, tok, n, &pre, 1, &p, &q), ENCDEC_OK);
        if (q) CHECK_EQ_INT(encdec_request_wait(q, &r), ENCDEC_OK);
        ok += r && same_tokens(encdec_result_sequence(r, 0), want);
        encdec_result_free(r);
        encdec_request_free(q);
    }
    CHECK_EQ_INT(ok, B);
    encdec_request *q = NULL;
    encdec_generate_params p8 = encdec_generate_default_params();
    p8.max_new_tokens = 8;
    CHECK_EQ_INT(encdec_engine_generate(e, "Hello", &p8, &q), ENCDEC_OK);
    encdec_result *r = NULL;
    if (q) CHECK_STATUS(encdec_request_wait(q, &r), ENCDEC_ERR_TOKENIZER, "no tokenizer files");
    encdec_request_free(q);
    printf("m2m100 without its tokenizer files: %d of %d token inputs as transformers'; text refused\n", ok, B);
    encdec_engine_free(e);
    encdec_model_free(m);
}

/* ---- model.bin rewritten (src/io/ct2.c's layout) ---- */

typedef struct {
    const uint8_t *name, *body;   /* the name's str (u16 length + bytes), then rank..data */
    size_t name_len, body_len;
} ct2_var;

static size_t ct2_str_len(const uint8_t *p) { return 2 + (size_t)(p[0] | p[1] << 8); }
static uint32_t ct2_u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* The variables of b (n bytes) into v (at most cap); *n_head: the bytes
 * before their count; *aliases, *n_alias: the alias list's entries (after
 * its count) and their count; returns the variables' count. */
static int ct2_vars(const uint8_t *b, size_t n, ct2_var *v, int cap, size_t *n_head,
                    const uint8_t **aliases, size_t *aliases_len, uint32_t *n_alias) {
    size_t at = 4;
    at += ct2_str_len(b + at) + 4;   /* spec name, revision */
    *n_head = at;
    int nv = (int)ct2_u32(b + at);
    at += 4;
    for (int i = 0; i < nv && i < cap; i++) {
        v[i].name = b + at, v[i].name_len = ct2_str_len(b + at);
        at += v[i].name_len;
        v[i].body = b + at;
        int rank = b[at];
        at += 1 + 4 * (size_t)rank + 1;
        at += 4 + ct2_u32(b + at);
        v[i].body_len = (size_t)(b + at - v[i].body);
    }
    CHECK(nv <= cap && at + 4 <= n);
    *n_alias = ct2_u32(b + at);
    *aliases = b + at + 4, *aliases_len = n - at - 4;
    return nv < cap ? nv : cap;
}

static int ct2_is(const ct2_var *v, const char *name) {
    return v->name_len == strlen(name) + 3 && !memcmp(v->name + 2, name, strlen(name) + 1);
}

static void put_str(FILE *f, const char *s) {
    size_t n = strlen(s) + 1;
    uint8_t len[2] = {(uint8_t)n, (uint8_t)(n >> 8)};
    fwrite(len, 1, 2, f), fwrite(s, 1, n, f);
}

/* CTranslate2 stores equal variables once, the others as aliases of it (a
 * converted model's zero biases of every layer, say). The m2m100 directory
 * with the fused Q|K|V bias of every self-attention and the fused K|V bias
 * of every cross attention made layer 0's: written once as variables
 * (copies) and once as aliases of layer 0's. Both load, and give the same
 * tokens (the aliased fused tensors were dropped after the first layer's
 * parts were copied, and the next layer read freed memory). */
static void check_aliases(void) {
    static const char *const files[] = {"config.json", "shared_vocabulary.json", "sentencepiece.bpe.model",
                                        "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                                        "added_tokens.json", NULL};
    size_t n, n_head;
    uint8_t *b = md_read_all(ED_TEST_DATA "/tiny-random-m2m100-ct2/model.bin", &n);
    static ct2_var v[1024];
    const uint8_t *al;
    size_t al_len;
    uint32_t n_al;
    int nv = ct2_vars(b, n, v, 1024, &n_head, &al, &al_len, &n_al), L = 0;
    char name[160];
    for (;; L++) {
        snprintf(name, sizeof name, "encoder/layer_%d/self_attention/linear_0/bias", L);
        int found = 0;
        for (int i = 0; i < nv; i++) found |= ct2_is(&v[i], name);
        if (!found) break;
    }
    CHECK(L >= 2);
    const char *fused[3] = {"encoder/layer_%d/self_attention/linear_0/bias",
                            "decoder/layer_%d/self_attention/linear_0/bias",
                            "decoder/layer_%d/attention/linear_1/bias"};
    encdec_result *res[2] = {NULL, NULL};
    for (int alias = 0; alias < 2; alias++) {
        const char *d = md_copy(ED_TEST_DATA "/tiny-random-m2m100-ct2", alias ? "aliased" : "copied", files);
        FILE *f = fopen(tmp_join(d, "model.bin"), "wb");
        CHECK(f != NULL);
        if (!f) return;
        fwrite(b, 1, n_head, f);
        int kept = 0;
        for (int i = 0; i < nv; i++) {   /* the fused biases past layer 0 go when aliased */
            int gone = 0;
            for (int l = 1; l < L && alias; l++)
                for (int j = 0; j < 3; j++) snprintf(name, sizeof name, fused[j], l), gone |= ct2_is(&v[i], name);
            kept += !gone;
        }
        uint8_t cnt[4] = {(uint8_t)kept, (uint8_t)(kept >> 8), (uint8_t)(kept >> 16), (uint8_t)(kept >> 24)};
        fwrite(cnt, 1, 4, f);
        for (int i = 0; i < nv; i++) {
            int j = -1;   /* a fused bias past layer 0: layer 0's body (a copy) or nothing (aliased) */
            for (int l = 1; l < L; l++)
                for (int k = 0; k < 3; k++) snprintf(name, sizeof name, fused[k], l), j = ct2_is(&v[i], name) ? k : j;
            if (j >= 0 && alias) continue;
            fwrite(v[i].name, 1, v[i].name_len, f);
            const ct2_var *src = &v[i];
            for (int k = 0; k < nv && j >= 0; k++)
                if (snprintf(name, sizeof name, fused[j], 0), ct2_is(&v[k], name)) src = &v[k];
            fwrite(src->body, 1, src->body_len, f);
        }
        uint32_t na = n_al + (alias ? 3u * (uint32_t)(L - 1) : 0u);   /* the file's own, and these */
        uint8_t c4[4] = {(uint8_t)na, (uint8_t)(na >> 8), 0, 0};
        fwrite(c4, 1, 4, f);
        fwrite(al, 1, al_len, f);
        for (int l = 1; l < L && alias; l++)
            for (int k = 0; k < 3; k++) {
                char target[160];
                snprintf(name, sizeof name, fused[k], l);
                snprintf(target, sizeof target, fused[k], 0);
                put_str(f, name), put_str(f, target);
            }
        fclose(f);
        encdec_model *m = NULL;
        CHECK_STATUS(encdec_model_load(d, &m), ENCDEC_OK, "");
        if (!m) continue;
        encdec_session *s = NULL;
        encdec_session_params sp = {2};
        CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
        const char *in[2] = {"Hello world.", "The weather is fine today."};
        encdec_generate_params p = encdec_generate_default_params();
        p.max_new_tokens = 12;
        p.tgt_lang = "de";
        if (s) CHECK_EQ_INT(encdec_generate(s, in, 2, &p, &res[alias]), ENCDEC_OK);
        encdec_session_free(s);
        encdec_model_free(m);
    }
    int same = res[0] && res[1];
    for (int i = 0; same && i < 2; i++) {
        const encdec_sequence *a = encdec_result_sequence(res[0], i), *c = encdec_result_sequence(res[1], i);
        same = a && c && a->n_tokens == c->n_tokens && a->n_tokens > 1;
        for (int t = 0; same && t < a->n_tokens; t++) same = a->tokens[t].id == c->tokens[t].id;
    }
    CHECK(same);
    printf("m2m100 with its fused biases as CTranslate2 aliases (%d layers): %s tokens as with copies\n", L,
           same ? "the same" : "NOT the same");
    encdec_result_free(res[0]);
    encdec_result_free(res[1]);
    free(b);
}

/* A CTranslate2 directory that lies: a vocabulary of another size, none at
 * all, a config.json whose tokens the vocabulary lacks. */
static void check_errors(void) {
    static const char *const files[] = {"model.bin", "config.json", "shared_vocabulary.json", "source.spm",
                                        "target.spm", "vocab.json", "tokenizer_config.json", NULL};
    const char *d = md_copy(ED_TEST_DATA "/tiny-random-marian-ct2", "lying", files);
    const char *short_vocab = "[\"</s>\", \"<unk>\"]";
    tmp_write(tmp_join(d, "shared_vocabulary.json"), short_vocab, strlen(short_vocab));
    encdec_model *m = (encdec_model *)&m;
    CHECK_STATUS(encdec_model_load(d, &m), ENCDEC_ERR_CONFIG, "shared_vocabulary: 2 tokens for a model of");
    CHECK(m == NULL);
    remove(tmp_join(d, "shared_vocabulary.json"));
    CHECK_STATUS(encdec_model_load(d, &m), ENCDEC_ERR_CONFIG, "no shared_vocabulary.json or .txt");
    d = md_copy(ED_TEST_DATA "/tiny-random-marian-ct2", "lying-cfg", files);
    const char *cfg = "{\"eos_token\": \"<eos-that-is-not>\", \"decoder_start_token\": \"</s>\"}";
    tmp_write(tmp_join(d, "config.json"), cfg, strlen(cfg));
    CHECK_STATUS(encdec_model_load(d, &m), ENCDEC_ERR_CONFIG, "is not in the vocabulary");
    CHECK(m == NULL);
}

int main(void) {
    if (ed_json_load(ED_TEST_DATA "/bart-golden/ct2.json", &g_golden)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    if (!tmp_new("encdec-test-bart-ct2")) return 2;
    const cJSON *e;
    for (size_t i = 0; i < sizeof g_sets / sizeof g_sets[0]; i++)
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(g_golden, "models")) check_model(e->string, e, g_sets[i]);
    check_tokens_only(cJSON_GetObjectItem(cJSON_GetObjectItem(g_golden, "models"), "m2m100"));
    check_errors();
    check_aliases();
    rp_check("ct2", 1);
    cJSON_Delete(g_golden);
    tmp_remove(tmp_dir);
    return check_done();
}
