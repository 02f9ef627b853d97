/* test_argos.c - Argos Translate packages (what LibreTranslate and Argos
 * users have installed): the seeded random package of tools/gen_tiny_argos.py
 * (an OpenNMT-py-style CTranslate2 TransformerSpec with int8 weights, one
 * SentencePiece model, metadata.json) gives CTranslate2's own hypotheses
 * and scores (tests/data/bart-golden/argos.json: compute_type float32) for
 * Argos Translate's search (beam 4, length_penalty 0.2, replace_unknowns;
 * one and two hypotheses) and greedily, and their texts as Argos Translate
 * decodes them, on every kernel set, the package's search options those
 * encdec_generate_model_params gives it (scores within 0.3%: encdec reads int8
 * weights as f16, CTranslate2 at float32 as their exact quotients); the package's pair is its metadata's;
 * a package that lies or lacks a file is refused, naming what. Its legacy
 * twin (other weights; no position table and no scale_embeddings flag, as
 * older conversions are) gives CTranslate2's answers too: the sinusoids
 * CTranslate2 computes then, and sqrt(d) for the missing flag. Two more
 * twins are written as CTranslate2 before 3.0 wrote its files: binary
 * version 4 with TransformerSpec revision 3 (the attributes at the root,
 * config from them, shared_vocabulary.txt) and binary version 2 of a
 * "TransformerBig" revision 2 (item sizes, no aliases: copies; no
 * attributes: 16 heads by its name, pre-norm, ReLU); CTranslate2 4.x reads
 * both through its compatibility rules, and encdec gives its answers. A
 * version 1 file, a revision 1 spec and an unknown item size are refused
 * by name. A multilingual package (tools/gen_tiny_argos_prefix.py: two
 * language tokens in the vocabulary, metadata.json's target_prefix
 * "__de__") gives CTranslate2's answers with that target prefix
 * (bart-golden/argos-prefix.json), every hypothesis starting with it and no
 * text of it in the translation; a target_prefix the vocabulary lacks is
 * refused.
 */
#include "check.h"
#include "golden.h"
#include "tmpdir.h"
#include "modeldir.h"
#include "base/json.h"
#include "tok/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PKG ED_TEST_DATA "/tiny-random-argos"

static const encdec_isa g_sets[] = {ENCDEC_ISA_C,
#if defined(__aarch64__)
                                    ENCDEC_ISA_NEON,
#else
                                    ENCDEC_ISA_AVX2,
#endif
                                    ENCDEC_ISA_AUTO};

static int ended(const encdec_model *m, const encdec_sequence *sq) {
    const char *last = sq->n_tokens ? encdec_model_token(m, sq->tokens[sq->n_tokens - 1].id) : NULL;
    return last && !strcmp(last, "</s>");
}

/* The sequence's tokens but the </s> it ended with (CTranslate2's
 * hypotheses leave it out) spelled, against a hypothesis (an <unk> stands
 * for the source piece CTranslate2 put in its place). */
static int same_hypothesis(const encdec_model *m, const encdec_sequence *sq, const cJSON *want) {
    int n = cJSON_GetArraySize(want), ok = sq && sq->n_tokens - ended(m, sq) == n;
    for (int t = 0; ok && t < n; t++) {
        const char *got = encdec_model_token(m, sq->tokens[t].id);
        ok = got && (!strcmp(got, cJSON_GetArrayItem(want, t)->valuestring) || !strcmp(got, "<unk>"));
    }
    if (!ok && sq) {
        fprintf(stderr, "  got:");
        for (int t = 0; t < sq->n_tokens; t++) fprintf(stderr, " %s", encdec_model_token(m, sq->tokens[t].id));
        fprintf(stderr, "\n");
    }
    return ok;
}

static int check_search(encdec_session *s, const encdec_model *m, const cJSON *c, const char *name,
                        int beams, int ret, int max_new) {
    const cJSON *g = cJSON_GetObjectItem(c, name);
    const char *in = cJSON_GetObjectItem(c, "text")->valuestring;
    encdec_generate_params p = encdec_generate_model_params(m);   /* Argos Translate's search */
    p.num_beams = beams;
    p.num_return_sequences = ret;
    p.max_new_tokens = max_new;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_generate(s, &in, 1, &p, &r), ENCDEC_OK);
    int ok = r && encdec_result_n_sequences(r) == ret;
    for (int k = 0; ok && k < ret; k++) {
        const encdec_sequence *sq = encdec_result_sequence(r, k);
        double want = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "scores"), k)->valuedouble;
        const char *text = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "texts"), k)->valuestring;
        /* CTranslate2 scores greedy search as beams: over length ^ length_penalty, the
         * end token counted (a sequence cut at max_new has none) */
        int n = sq->n_tokens - ended(m, sq);
        if (beams == 1) want *= pow(n + (n < max_new), 0.2);
        ok = same_hypothesis(m, sq, cJSON_GetArrayItem(cJSON_GetObjectItem(g, "hypotheses"), k)) &&
             fabs(sq->score - want) < 3e-3 * fabs(want) && !strcmp(sq->text, text);
        if (!ok)
            fprintf(stderr, "%s \"%s\" #%d: score %.5f (CTranslate2 %.5f), text \"%s\" (\"%s\")\n", name, in, k,
                    (double)sq->score, want, sq->text, text);
    }
    encdec_result_free(r);
    return ok;
}

/* A package's searches (gold's cases under key) on the kernels isa. */
static void check_package(const char *pkg, const cJSON *gold, const char *key, encdec_isa isa) {
    const cJSON *pre = cJSON_GetObjectItem(gold, "target_prefix");
    encdec_model *m = NULL;
    encdec_model_params mp = encdec_model_default_params();
    mp.isa = isa;
    encdec_status st = encdec_model_load_ex(pkg, &mp, &m);
    if (st == ENCDEC_ERR_ARG && isa != ENCDEC_ISA_AUTO) {
        printf("SKIP kernels %s: %s\n", encdec_isa_name(isa), encdec_last_error());
        return;
    }
    CHECK_STATUS(st, ENCDEC_OK, "");
    if (!m) return;
    encdec_model_info info;
    encdec_model_get_info(m, &info);
    CHECK_STR(info.family, "bart");
    CHECK_STR(info.format, "ctranslate2");
    CHECK_STR(info.source_language ? info.source_language : "", "en");
    CHECK_STR(info.target_language ? info.target_language : "", "de");
    /* the package's search: Argos Translate's (CTranslate2's limit of 256 within
     * the model's positions: 128 where the table is stored) */
    encdec_generate_params d = encdec_generate_model_params(m);
    int most = info.n_text_ctx - 1 < 256 ? info.n_text_ctx - 1 : 256;
    CHECK(d.num_beams == 4 && d.length_penalty == 0.2f && d.early_stopping == 1 && d.min_new_tokens == 1 &&
          d.max_new_tokens == most && d.replace_unknowns && d.ctranslate2_rules && d.num_return_sequences == 1);
    encdec_session *s = NULL;
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    int max_new = cJSON_GetObjectItem(gold, "max_decoding_length")->valueint, n = 0, ok = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(gold, key)) {
        ok += s && check_search(s, m, c, "beam", 4, 1, max_new);
        ok += s && check_search(s, m, c, "beam2", 4, 2, max_new);
        ok += s && check_search(s, m, c, "greedy", 1, 1, max_new);
        n += 3;
        if (pre) {   /* the prefix's spelling in no text */
            const cJSON *t;
            cJSON_ArrayForEach(t, cJSON_GetObjectItem(cJSON_GetObjectItem(c, "beam2"), "texts"))
                CHECK(!strstr(t->valuestring, "de "));
        }
    }
    CHECK_EQ_INT(ok, n);
    CHECK(n > 0 && n == 3 * cJSON_GetArraySize(cJSON_GetObjectItem(gold, key)));
    printf("Argos package %s (%s, kernels %s): %d of %d searches as CTranslate2's\n", strrchr(pkg, '/') + 1,
           info.model_type, info.isa, ok, n);
    encdec_session_free(s);
    encdec_model_free(m);
}

/* The package with one file changed (NULL: removed): the load fails with
 * want naming what. */
static void broken(const char *file, const char *text, encdec_status want, const char *substr) {
    static const char *const files[] = {"metadata.json", "sentencepiece.model", NULL};
    static const char *const model_files[] = {"model.bin", "config.json", "shared_vocabulary.json", NULL};
    static int k;
    char name[32], sub[48], path[700];
    snprintf(name, sizeof name, "pkg%d", k);
    snprintf(sub, sizeof sub, "pkg%d/model", k++);
    const char *d = md_copy(PKG, name, files);
    md_copy(PKG "/model", sub, model_files);
    snprintf(path, sizeof path, "%s/%s", d, file);
    remove(path);
    if (text) tmp_write(path, text, strlen(text));
    encdec_model *m = (encdec_model *)&m;
    CHECK_STATUS(encdec_model_load(d, &m), want, substr);
    CHECK(m == NULL);
}

/* Pieces as Argos Translate decodes them (underscores, spaces at the ends),
 * given as replacements (as replace_unknowns hands them over). */
static void check_decodes(const cJSON *gold) {
    ed_ttok *t = NULL;
    CHECK_EQ_INT(ttok_load_argos(&t, PKG), ENCDEC_OK);
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(gold, "decodes")) {
        const cJSON *pieces = cJSON_GetArrayItem(d, 0);
        int n = cJSON_GetArraySize(pieces), ids[8];
        const char *sub[8];
        for (int i = 0; i < n && i < 8; i++) {
            ids[i] = 0;
            sub[i] = cJSON_GetArrayItem(pieces, i)->valuestring;
        }
        char *text = NULL;
        if (t) CHECK_EQ_INT(ttok_decode_subst(t, ids, n, sub, &text), ENCDEC_OK);
        CHECK_STR(text, cJSON_GetArrayItem(d, 1)->valuestring);
        free(text);
    }
    ttok_free(t);
}

/* The CTranslate2 2.x twin's model.bin with one header field changed:
 * field "version" (the binary version), "revision" (the spec's) or "item"
 * (the first variable's item size) set to v; the load fails naming substr. */
static void old_header(const char *field, uint8_t v, const char *substr) {
    static const char *const files[] = {"metadata.json", "sentencepiece.model", NULL};
    static const char *const model_files[] = {"model.bin", "shared_vocabulary.txt", NULL};
    static int k;
    char name[32], sub[48];
    snprintf(name, sizeof name, "old%d", k);
    snprintf(sub, sizeof sub, "old%d/model", k++);
    const char *d = md_copy(PKG "-ct2v2", name, files);
    const char *md = md_copy(PKG "-ct2v2/model", sub, model_files);
    char path[700];
    snprintf(path, sizeof path, "%s/model.bin", md);
    size_t n = 0;
    uint8_t *b = md_read_all(path, &n);
    size_t pos = 4 + 2 + (size_t)(b[4] | b[5] << 8);   /* after the version and the spec name */
    size_t rev = pos;
    pos += 4 + 4;                                        /* the revision, the variable count */
    pos += 2 + (size_t)(b[pos] | b[pos + 1] << 8);       /* the first variable's name */
    pos += 1 + 4 * (size_t)b[pos];                       /* its rank and shape: its item size */
    b[!strcmp(field, "version") ? 0 : !strcmp(field, "revision") ? rev : pos] = v;
    tmp_write(path, b, n);
    free(b);
    encdec_model *m = (encdec_model *)&m;
    CHECK_STATUS(encdec_model_load(d, &m), !strcmp(field, "revision") ? ENCDEC_ERR_CONFIG
                                           : !strcmp(field, "item") ? ENCDEC_ERR_DTYPE : ENCDEC_ERR_FORMAT,
                 substr);
    CHECK(m == NULL);
}

static void check_errors(void) {
    old_header("version", 1, "binary version 1 is not supported");
    old_header("version", 7, "binary version 7 is not supported");
    old_header("revision", 1, "TransformerBig revision 1");
    old_header("item", 3, "item size 3");
    broken("metadata.json", "{\"from_code\": \"en\", \"to_code\": \"de\", \"target_prefix\": \"__de__\"}",
           ENCDEC_ERR_CONFIG, "target_prefix \"__de__\" is no token of the model's vocabulary");
    broken("metadata.json", "{\"from_code\": \"en\", \"to_code\": \"de\", \"target_prefix\": 5}",
           ENCDEC_ERR_CONFIG, "target_prefix is not a string");
    broken("metadata.json", "{\"from_code\": \"en\"}", ENCDEC_ERR_CONFIG, "to_code is not a language code");
    broken("metadata.json", "{\"from_code\": \"en\", \"to_code\": \"de\", \"type\": \"sbd\"}", ENCDEC_ERR_CONFIG,
           "not a translation");
    broken("metadata.json", "{", ENCDEC_ERR_CONFIG, "metadata.json");
    broken("sentencepiece.model", NULL, ENCDEC_ERR_TOKENIZER, "without its tokenizer (sentencepiece.model or bpe.model)");
    broken("sentencepiece.model", "not a model", ENCDEC_ERR_FORMAT, "sentencepiece.model");
    broken("model/shared_vocabulary.json", "[\"<unk>\", \"</s>\"]", ENCDEC_ERR_CONFIG, "2 tokens for a model of");
}

/* A bpe.model package's tokens as Argos Translate's BPETokenizer.encode
 * gives them, and unit lists as its decode joins and detokenizes them. */
static void check_bpe_tokens(const cJSON *gold) {
    ed_ttok *t = NULL;
    CHECK_EQ_INT(ttok_load_argos(&t, PKG "-bpe"), ENCDEC_OK);
    if (!t) return;
    const cJSON *c;
    int cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(gold, "cases")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "tokens");
        int *ids = NULL, n = 0;
        char **pieces = NULL;
        CHECK_EQ_INT(ttok_encode_pieces(t, text, strlen(text), -1, -1, &ids, &n, &pieces), ENCDEC_OK);
        int ok = n == cJSON_GetArraySize(want);
        for (int i = 0; ok && i < n; i++) ok = !strcmp(pieces[i], cJSON_GetArrayItem(want, i)->valuestring);
        CHECK(ok);
        if (!ok) fprintf(stderr, "  tokens of \"%s\" differ from Argos Translate's\n", text);
        free(ids);
        free(pieces);
        cases++;
    }
    CHECK(cases >= 7);
    {   /* a NUL byte in the text: Moses' tokenizer drops it (its ASCII junk), the rest as without it */
        static const char with[] = "The house\0 is wonderful.", without[] = "The house is wonderful.";
        int *a = NULL, *b = NULL, na = 0, nb = 0;
        CHECK_EQ_INT(ttok_encode(t, with, sizeof with - 1, &a, &na), ENCDEC_OK);
        CHECK_EQ_INT(ttok_encode(t, without, sizeof without - 1, &b, &nb), ENCDEC_OK);
        CHECK(a && b && na == nb && na > 3 && !memcmp(a, b, sizeof(int) * (size_t)na));
        free(a);
        free(b);
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(gold, "decodes")) {
        const cJSON *units = cJSON_GetArrayItem(d, 0);
        int n = cJSON_GetArraySize(units), ids[8];
        const char *sub[8];
        for (int i = 0; i < n && i < 8; i++) {   /* by id where the vocabulary has the unit */
            const char *u = cJSON_GetArrayItem(units, i)->valuestring;
            ids[i] = ttok_token_id(t, u);
            sub[i] = ids[i] >= 0 ? NULL : u;
            if (ids[i] < 0) ids[i] = 0;
        }
        char *text = NULL;
        CHECK_EQ_INT(ttok_decode_subst(t, ids, n, sub, &text), ENCDEC_OK);
        CHECK_STR(text, cJSON_GetArrayItem(d, 1)->valuestring);
        free(text);
    }
    ttok_free(t);
    /* without Moses' data: refused, saying how to install them */
    setenv("ENCDEC_MOSES", "/nonexistent-moses", 1);
    encdec_model *m = (encdec_model *)&m;
    CHECK_STATUS(encdec_model_load(PKG "-bpe", &m), ENCDEC_ERR_TOKENIZER,
                 "tokenized by bpe.model (Moses + BPE), and Moses' data are not at /nonexistent-moses: "
                 "scripts/fetch-model.sh moses installs them");
    CHECK(m == NULL);
    unsetenv("ENCDEC_MOSES");
}

int main(void) {
    cJSON *gold = NULL;
    if (ed_json_load(ED_TEST_DATA "/bart-golden/argos.json", &gold)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    if (!tmp_new("encdec-test-argos")) return 2;
    for (size_t i = 0; i < sizeof g_sets / sizeof g_sets[0]; i++) CHECK_PART(check_package(PKG, gold, "cases", g_sets[i]));
    /* as older conversions are: no position table (CTranslate2's sinusoids, computed)
     * and no scale_embeddings (sqrt(d)) */
    CHECK_PART(check_package(PKG "-legacy", gold, "legacy_cases", ENCDEC_ISA_AUTO));
    /* as CTranslate2 1.6 to 2.11 wrote it, and as CTranslate2 before 1.6 */
    CHECK_PART(check_package(PKG "-ct2v4", gold, "ct2v4_cases", ENCDEC_ISA_AUTO));
    CHECK_PART(check_package(PKG "-ct2v2", gold, "ct2v2_cases", ENCDEC_ISA_AUTO));
    CHECK_PART(check_package(PKG "-ct2v2", gold, "ct2v2_cases", ENCDEC_ISA_C));
    CHECK_PART(check_decodes(gold));
    cJSON *pgold = NULL;   /* a multilingual package: its target_prefix */
    if (ed_json_load(ED_TEST_DATA "/bart-golden/argos-prefix.json", &pgold)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    for (size_t i = 0; i < sizeof g_sets / sizeof g_sets[0]; i++)
        CHECK_PART(check_package(PKG "-prefix", pgold, "cases", g_sets[i]));
    cJSON_Delete(pgold);
    cJSON *bgold = NULL;   /* a package tokenized by bpe.model: Moses + BPE */
    if (ed_json_load(ED_TEST_DATA "/bart-golden/argos-bpe.json", &bgold)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    char mdir[1024];
    if (getenv("ENCDEC_MOSES") || golden_find_file(mdir, sizeof mdir, "ENCDEC_MOSES", "sacremoses-0.1.1", "classes.tsv")) {
        CHECK_PART(check_bpe_tokens(bgold));
        for (size_t i = 0; i < sizeof g_sets / sizeof g_sets[0]; i++)
            CHECK_PART(check_package(PKG "-bpe", bgold, "cases", g_sets[i]));
    } else {
        printf("Moses' data are not installed (scripts/fetch-model.sh moses): the bpe.model package "
               "not checked\n");
    }
    cJSON_Delete(bgold);
    CHECK_PART(check_errors());
    cJSON_Delete(gold);
    tmp_remove(tmp_dir);
    return check_done();
}
