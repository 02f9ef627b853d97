/* test_spm.c - the SentencePiece unigram tokenizer (src/tok/spm*.c) against
 * tests/data/spm_golden.json (tools/golden_spm.py): ids and decoded texts of
 * every corpus string under the slow reference (HF T5Tokenizer / sentencepiece)
 * for spm_load_model and the fast one (`tokenizers`) for spm_load_json, on the
 * small committed models and the real T5 spiece.model (../shared); then
 * hand-made models with known segmentations, bad files (truncated at every
 * byte of the first 2 KB, corrupted, BPE-typed, non-Unigram JSON), bad input,
 * and the time for a 100 KB text.
 */
#include "check.h"

#include "base/json.h"
#include "tmpdir.h"
#include "tok/spm.h"
#include "base/fmap.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- the golden file ------------------------------------------------------------ */

typedef struct {
    char *s;
    size_t n;
} golden_text;

static cJSON *g_golden;
static golden_text *g_texts;
static int g_n_texts;

static int hexval(char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; }

static void load_golden(void) {
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/spm_golden.json", &g_golden), ENCDEC_OK);
    if (!g_golden) return;
    const cJSON *texts = cJSON_GetObjectItem(g_golden, "texts"), *e;
    g_n_texts = cJSON_GetArraySize(texts);
    g_texts = calloc((size_t)g_n_texts, sizeof *g_texts);
    int i = 0;
    cJSON_ArrayForEach(e, texts) {
        const char *hex = cJSON_GetObjectItem(e, "hex")->valuestring;
        size_t n = strlen(hex) / 2;
        g_texts[i].s = malloc(n + 1);
        for (size_t k = 0; k < n; k++) g_texts[i].s[k] = (char)(hexval(hex[2 * k]) << 4 | hexval(hex[2 * k + 1]));
        g_texts[i].s[n] = 0;
        g_texts[i++].n = n;
    }
    CHECK(g_n_texts >= 150);
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

static void print_ids(const char *label, const int *ids, int n) {
    fprintf(stderr, "  %s", label);
    for (int i = 0; i < n && i < 60; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, n > 60 ? " ...\n" : "\n");
}

/* Encodes text i and compares with want[0, nw). */
static int same_ids(const spm_tok *t, int i, int add_eos, const int *want, int nw, const char *label) {
    int *got = NULL, ng = -1;
    encdec_status st = spm_encode(t, g_texts[i].s, g_texts[i].n, add_eos, &got, &ng);
    int same = st == ENCDEC_OK && ng == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0;
    CHECK(same);
    if (!same) {
        fprintf(stderr, "%s: text %d \"%.60s\" (add_eos %d): %s\n", label, i, g_texts[i].s, add_eos,
                st ? encdec_last_error() : "");
        print_ids("got ", got, ng);
        print_ids("want", want, nw);
    }
    free(got);
    return same;
}

static int same_decode(const spm_tok *t, const int *ids, int n, int skip, const char *want, const char *label) {
    char *got = NULL;
    encdec_status st = spm_decode(t, ids, n, skip, &got);
    int same = st == ENCDEC_OK && got && strcmp(got, want) == 0;
    CHECK(same);
    if (!same) {
        fprintf(stderr, "%s: decode (skip %d) = \"%s\", expected \"%s\" %s\n", label, skip, got ? got : "(null)",
                want, st ? encdec_last_error() : "");
        print_ids("ids", ids, n);
    }
    free(got);
    return same;
}

/* Every golden case of tokenizer `name` in the style of its loader: "slow"
 * for spiece.model, "fast" for tokenizer.json. */
static void check_golden(const spm_tok *t, const char *name, int fast, const char *label) {
    enum { CAP = 8192 };
    static int want[CAP];
    const cJSON *info = cJSON_GetObjectItem(cJSON_GetObjectItem(g_golden, "tokenizers"), name), *c;
    CHECK(info != NULL);
    if (!info) return;
    CHECK_EQ_INT(spm_n_vocab(t), cJSON_GetObjectItem(info, "n_vocab")->valueint);
    CHECK_EQ_INT(spm_eos(t), cJSON_GetObjectItem(info, "eos")->valueint);
    CHECK_EQ_INT(spm_pad(t), cJSON_GetObjectItem(info, "pad")->valueint);
    CHECK_EQ_INT(spm_unk(t), cJSON_GetObjectItem(info, "unk")->valueint);
    int i = 0, n_ok = 0, n_dec_ok = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(info, "cases")) {
        int nw = ids_from_json(cJSON_GetObjectItem(c, fast ? "fast" : "slow"), want, CAP);
        CHECK(nw <= CAP);
        int ok = same_ids(t, i, 1, want, nw, label);
        const cJSON *dec = cJSON_GetObjectItem(c, fast ? "dec_fast" : "dec_slow");
        if (!dec) dec = cJSON_GetObjectItem(c, "dec_slow");       /* stored once when equal */
        int dok = same_decode(t, want, nw, 1, cJSON_GetArrayItem(dec, 0)->valuestring, label);
        dok &= same_decode(t, want, nw, 0, cJSON_GetArrayItem(dec, 1)->valuestring, label);
        /* without </s>: fast[:-1]; slow_noeos where given, else slow[:-1] */
        const cJSON *noeos = fast ? NULL : cJSON_GetObjectItem(c, "slow_noeos");
        nw = noeos ? ids_from_json(noeos, want, CAP) : nw - 1;
        ok &= same_ids(t, i, 0, want, nw, label);
        n_ok += ok;
        n_dec_ok += dok;
        i++;
    }
    int n_dec = 0, n_dec_lists = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(info, "decode")) {
        int n = ids_from_json(cJSON_GetObjectItem(c, "ids"), want, CAP);
        const cJSON *texts = cJSON_GetObjectItem(c, fast ? "fast" : "slow");
        int ok = same_decode(t, want, n, 1, cJSON_GetArrayItem(texts, 0)->valuestring, label);
        ok &= same_decode(t, want, n, 0, cJSON_GetArrayItem(texts, 1)->valuestring, label);
        n_dec += ok;
        n_dec_lists++;
    }
    printf("%s: ids equal for %d of %d texts (with and without </s>), decoded texts for %d; "
           "%d of %d random id lists decode equal\n", label, n_ok, i, n_dec_ok, n_dec, n_dec_lists);
}

static spm_tok *load(int json, const char *path) {
    spm_tok *t = NULL;
    double t0 = now_ms();
    encdec_status st = json ? spm_load_json(&t, path) : spm_load_model(&t, path);
    if (st) fprintf(stderr, "%s: %s\n", path, encdec_last_error());
    CHECK_EQ_INT(st, ENCDEC_OK);
    if (!st) printf("%s: loaded in %.1f ms\n", path, now_ms() - t0);
    return t;
}

/* ---- tokenizer.json pipeline variants ------------------------------------------------ */

/* A copy of v with every "<base>" string replaced by charsmap. */
static cJSON *subst(const cJSON *v, const char *charsmap) {
    if (cJSON_IsString(v) && strcmp(v->valuestring, "<base>") == 0) return cJSON_CreateString(charsmap);
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) return cJSON_Duplicate(v, 1);
    cJSON *copy = cJSON_Duplicate(v, 0), *e;
    const cJSON *child;
    cJSON_ArrayForEach(child, v) {
        e = subst(child, charsmap);
        if (cJSON_IsObject(v)) cJSON_AddItemToObject(copy, child->string, e);
        else cJSON_AddItemToArray(copy, e);
    }
    return copy;
}

/* bytefb.tokenizer.json with each golden variant's patch (tools/golden_spm.py,
 * VARIANTS): other normalizer / pre_tokenizer / decoder steps, byte_fallback,
 * sentinel flags; the ids and decoded texts of `tokenizers` for some texts. */
static void check_variants(void) {
    char *text;
    size_t len;
    if (ed_read_file(ED_TEST_DATA "/spm/bytefb.tokenizer.json", &text, &len)) {
        CHECK(0);
        return;
    }
    cJSON *base = cJSON_ParseWithLength(text, len), *v;
    free(text);
    const cJSON *pre = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(base, "normalizer"), "normalizers"), 0);
    const char *charsmap = cJSON_GetObjectItem(pre, "precompiled_charsmap")->valuestring;
    int n_variants = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(g_golden, "variants")) {
        const char *name = cJSON_GetObjectItem(v, "name")->valuestring;
        const cJSON *patch = cJSON_GetObjectItem(v, "patch"), *c;
        cJSON *doc = cJSON_Duplicate(base, 1);
        static const char *keys[] = {"normalizer", "pre_tokenizer", "decoder"};
        for (int k = 0; k < 3; k++)
            if (cJSON_HasObjectItem(patch, keys[k]))
                cJSON_ReplaceItemInObjectCaseSensitive(doc, keys[k], subst(cJSON_GetObjectItem(patch, keys[k]), charsmap));
        const cJSON *bf = cJSON_GetObjectItem(patch, "byte_fallback"), *flags = cJSON_GetObjectItem(patch, "added"), *f;
        if (bf) cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItem(doc, "model"), "byte_fallback", cJSON_Duplicate(bf, 1));
        cJSON *a;
        cJSON_ArrayForEach(a, cJSON_GetObjectItem(doc, "added_tokens")) {
            if (strncmp(cJSON_GetObjectItem(a, "content")->valuestring, "<extra_id_", 10) != 0) continue;
            cJSON_ArrayForEach(f, flags) cJSON_ReplaceItemInObjectCaseSensitive(a, f->string, cJSON_Duplicate(f, 1));
        }
        char *json = cJSON_PrintUnformatted(doc), path[64];
        cJSON_Delete(doc);
        snprintf(path, sizeof path, "variant-%d.json", n_variants++);
        tmp_write(tmp_path(path), json, strlen(json));
        free(json);
        spm_tok *t = load(1, tmp_path(path));
        int n_ok = 0, n = 0;
        if (!t) continue;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(v, "cases")) {
            enum { CAP = 4096 };
            static int want[CAP];
            int i = cJSON_GetObjectItem(c, "i")->valueint, nw = ids_from_json(cJSON_GetObjectItem(c, "fast"), want, CAP);
            int ok = same_ids(t, i, 1, want, nw, name);
            const cJSON *dec = cJSON_GetObjectItem(c, "dec");
            if (dec) {
                ok &= same_decode(t, want, nw, 1, cJSON_GetArrayItem(dec, 0)->valuestring, name);
                ok &= same_decode(t, want, nw, 0, cJSON_GetArrayItem(dec, 1)->valuestring, name);
            }
            n_ok += ok;
            n++;
        }
        printf("variant %s: %d of %d texts equal\n", name, n_ok, n);
        spm_free(t);
    }
    CHECK(n_variants >= 8);
    cJSON_Delete(base);
}

/* ---- the real T5 vocabulary ------------------------------------------------------- */

static void check_t5(const spm_tok *t) {
    CHECK_EQ_INT(spm_n_vocab(t), 32100);
    CHECK_EQ_INT(spm_piece_id(t, "<extra_id_0>"), 32099);
    CHECK_EQ_INT(spm_piece_id(t, "<extra_id_99>"), 32000);
    CHECK_EQ_INT(spm_piece_id(t, "\xe2\x96\x81"), 3);
    CHECK_EQ_INT(spm_piece_id(t, "<extra_id_100>"), -1);
    CHECK_STR(spm_piece(t, 32099), "<extra_id_0>");
    CHECK_STR(spm_piece(t, 1), "</s>");
    CHECK(spm_piece(t, 32100) == NULL && spm_piece(t, -1) == NULL);
    CHECK(spm_is_special(t, 0) && spm_is_special(t, 1) && spm_is_special(t, 2) && spm_is_special(t, 32000));
    CHECK(!spm_is_special(t, 3) && !spm_is_special(t, 32100));
    size_t len = 9;
    CHECK_STR(spm_token_text(t, 3, &len), " ");
    CHECK_EQ_INT(len, 1);
    int hello = spm_piece_id(t, "\xe2\x96\x81Hello");
    CHECK(hello > 3);
    CHECK_STR(spm_token_text(t, hello, &len), " Hello");
    CHECK(spm_token_text(t, 32100, &len) == NULL);

    /* "translate English to German: ..." as every T5 example shows it */
    static const int want[] = {13959, 1566, 12, 2968, 10, 37, 629, 19, 1627, 5, 1};
    const char *s = "translate English to German: The house is wonderful.";
    int *ids, n;
    CHECK_EQ_INT(spm_encode(t, s, strlen(s), 1, &ids, &n), ENCDEC_OK);
    CHECK(n == 11 && memcmp(ids, want, sizeof want) == 0);
    free(ids);
}

/* The tokenizer.json transformers writes for spiece.model (T5TokenizerFast,
 * extra_ids=100, legacy): rebuilt here from the model file by a minimal protobuf
 * walk of the test's own, as the golden file could not hold the 2.4 MB JSON. */
static uint64_t rd_varint(const uint8_t **p, const uint8_t *end) {
    uint64_t v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    return v;
}

static char *b64(const uint8_t *p, size_t n) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(n / 3 * 4 + 5), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = a[v >> 18];
        *o++ = a[(v >> 12) & 63];
        *o++ = i + 1 < n ? a[(v >> 6) & 63] : '=';
        *o++ = i + 2 < n ? a[v & 63] : '=';
    }
    *o = 0;
    return out;
}

static int write_t5_json(const char *model, const char *out) {
    ed_fmap f;
    if (ed_fmap_open(&f, model)) return 0;
    cJSON *vocab = cJSON_CreateArray(), *added = cJSON_CreateArray();
    char *cmap = NULL;
    int n = 0;
    for (const uint8_t *p = f.data, *end = f.data + f.size; p < end;) {
        uint64_t key = rd_varint(&p, end), len = (key & 7) == 2 ? rd_varint(&p, end) : 0;
        if ((key & 7) != 2 || len > (uint64_t)(end - p)) break;
        const uint8_t *m = p, *mend = p + len;
        p = mend;
        if (key >> 3 == 1) {            /* SentencePiece: piece, score */
            char piece[256] = "";
            float score = 0;
            while (m < mend) {
                uint64_t k = rd_varint(&m, mend);
                if ((k & 7) == 2) {
                    uint64_t l = rd_varint(&m, mend);
                    if (k >> 3 == 1 && l < sizeof piece) memcpy(piece, m, l), piece[l] = 0;
                    m += l;
                } else if ((k & 7) == 5) {
                    memcpy(&score, m, 4);
                    m += 4;
                } else {
                    rd_varint(&m, mend);
                }
            }
            cJSON *e = cJSON_CreateArray();
            cJSON_AddItemToArray(e, cJSON_CreateString(piece));
            cJSON_AddItemToArray(e, cJSON_CreateNumber(score));
            cJSON_AddItemToArray(vocab, e);
            n++;
        } else if (key >> 3 == 3) {     /* NormalizerSpec: precompiled_charsmap */
            while (m < mend) {
                uint64_t k = rd_varint(&m, mend), l = (k & 7) == 2 ? rd_varint(&m, mend) : 0;
                if ((k & 7) != 2) continue;
                if (k >> 3 == 2) cmap = b64(m, l);
                m += l;
            }
        }
    }
    ed_fmap_close(&f);
    for (int i = 0; i < n + 100; i++) {
        char sentinel[32];
        snprintf(sentinel, sizeof sentinel, "<extra_id_%d>", n + 99 - i);
        const char *content = i == 0 ? "<pad>" : i == 1 ? "</s>" : i == 2 ? "<unk>" : sentinel;
        if (i >= 3 && i < n) continue;
        if (i >= n) {
            cJSON *e = cJSON_CreateArray();
            cJSON_AddItemToArray(e, cJSON_CreateString(content));
            cJSON_AddItemToArray(e, cJSON_CreateNumber(0));
            cJSON_AddItemToArray(vocab, e);
        }
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", i);
        cJSON_AddStringToObject(a, "content", content);
        cJSON_AddBoolToObject(a, "special", 1);
        cJSON_AddItemToArray(added, a);
    }
    char head[1024];
#define METASPACE "{\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\": \"always\", \"split\": true}"
    snprintf(head, sizeof head, "{\"version\": \"1.0\", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": ["
             "{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"%%s\"}, "
             "{\"type\": \"Strip\", \"strip_left\": false, \"strip_right\": true}, "
             "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \" {2,}\"}, \"content\": \"\u2581\"}]}, "
             "\"pre_tokenizer\": " METASPACE ", \"decoder\": " METASPACE ", \"added_tokens\": %%s, "
             "\"model\": {\"type\": \"Unigram\", \"unk_id\": 2, \"byte_fallback\": false, \"vocab\": %%s}}");
#undef METASPACE
    char *v = cJSON_PrintUnformatted(vocab), *a = cJSON_PrintUnformatted(added);
    FILE *fp = fopen(out, "wb");
    int ok = fp && cmap && v && a && fprintf(fp, head, cmap, a, v) > 0;
    if (fp) fclose(fp);
    free(v);
    free(a);
    free(cmap);
    cJSON_Delete(vocab);
    cJSON_Delete(added);
    return ok;
}

/* ---- hand-made model files ----------------------------------------------------------- */

typedef struct {
    uint8_t p[4096];
    size_t n;
} pbuf;

static void pb_varint(pbuf *b, uint64_t v) {
    do {
        b->p[b->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void pb_bytes(pbuf *b, int field, const void *p, size_t n) {
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void pb_piece(pbuf *b, const char *piece, float score, int type) {
    pbuf m = {.n = 0};
    pb_bytes(&m, 1, piece, strlen(piece));
    pb_varint(&m, 2 << 3 | 5);
    memcpy(m.p + m.n, &score, 4);
    m.n += 4;
    pb_varint(&m, 3 << 3 | 0);
    pb_varint(&m, (uint64_t)type);
    pb_bytes(b, 1, m.p, m.n);
}

/* pad, eos, unk, then NORMAL pieces (name, score) and a trainer_spec. */
static void make_model(pbuf *b, const char *const *pieces, const float *scores, int n, int model_type,
                       int user_defined_last) {
    b->n = 0;
    pb_piece(b, "<pad>", 0, 3);
    pb_piece(b, "</s>", 0, 3);
    pb_piece(b, "<unk>", 0, 2);
    for (int i = 0; i < n; i++) pb_piece(b, pieces[i], scores[i], i == n - 1 && user_defined_last ? 4 : 1);
    pbuf ts = {.n = 0};
    pb_varint(&ts, 3 << 3);
    pb_varint(&ts, (uint64_t)model_type);
    pb_varint(&ts, 43 << 3);
    pb_varint(&ts, (uint64_t)-1);        /* pad_id -1 as protobuf writes int32: 10 bytes */
    pb_bytes(b, 2, ts.p, ts.n);
    pbuf ns = {.n = 0};
    pb_bytes(&ns, 1, "identity", 8);
    pb_bytes(b, 3, ns.p, ns.n);
}

static void expect_ids(const spm_tok *t, const char *s, const int *want, int nw) {
    int *ids = NULL, n = -1;
    CHECK_EQ_INT(spm_encode(t, s, strlen(s), 0, &ids, &n), ENCDEC_OK);
    int same = n == nw && memcmp(ids, want, (size_t)nw * sizeof *ids) == 0;
    CHECK(same);
    if (!same) {
        fprintf(stderr, "\"%s\":\n", s);
        print_ids("got ", ids, n);
        print_ids("want", want, nw);
    }
    free(ids);
}

static void check_handmade(void) {
    /* ids 3.. : ▁ab ▁a b ▁ c <u> (user-defined) */
    const char *pieces[] = {"\xe2\x96\x81" "ab", "\xe2\x96\x81" "a", "b", "\xe2\x96\x81", "c", "<u>"};
    const float scores[] = {-3.0f, -1.0f, -1.0f, -2.0f, -4.0f, 0};
    pbuf b;
    make_model(&b, pieces, scores, 6, 1, 1);
    tmp_write(tmp_path("hand.model"), b.p, b.n);
    spm_tok *t = load(0, tmp_path("hand.model"));
    if (t) {
        expect_ids(t, "ab", (int[]){4, 5}, 2);              /* -1 -1 beats -3 */
        expect_ids(t, "  ab   c ", (int[]){4, 5, 6, 7}, 4); /* extra spaces dropped */
        expect_ids(t, "axxb", (int[]){4, 2, 5}, 3);         /* an unknown run is one <unk> */
        expect_ids(t, "a<u>c", (int[]){4, 8, 7}, 3);        /* user-defined kept whole */
        expect_ids(t, "a</s>c", (int[]){4, 1, 6, 7}, 4);    /* </s> split out */
        CHECK_EQ_INT(spm_n_vocab(t), 109);
        CHECK_EQ_INT(spm_pad(t), 0);
        int ids[] = {4, 2, 5, 108};
        char *s = NULL;
        CHECK_EQ_INT(spm_decode(t, ids, 4, 0, &s), ENCDEC_OK);
        CHECK_STR(s, "a<unk>b <extra_id_0>");
        free(s);
        spm_free(t);
    }
    /* a BPE model: pairs merge by the score of what they make, whatever the
     * unigram search would prefer; an unknown run is still one <unk> */
    make_model(&b, pieces, scores, 5, 2, 0);
    tmp_write(tmp_path("bpe.model"), b.p, b.n);
    t = load(0, tmp_path("bpe.model"));
    if (t) {
        expect_ids(t, "ab", (int[]){3}, 1);                 /* ▁+a (-1), then ▁a+b (-3) */
        expect_ids(t, "axxb", (int[]){4, 2, 5}, 3);
        expect_ids(t, " c  ab", (int[]){6, 7, 3}, 3);       /* ▁c is no piece */
        spm_free(t);
    }
    /* a WORD model */
    make_model(&b, pieces, scores, 5, 3, 0);
    tmp_write(tmp_path("word.model"), b.p, b.n);
    t = (spm_tok *)&t;
    CHECK_STATUS(spm_load_model(&t, tmp_path("word.model")), ENCDEC_ERR_TOKENIZER,
                 "model_type is WORD (3); only UNIGRAM and BPE models are supported");
    CHECK(t == NULL);
    /* no <unk>, byte pieces without byte_fallback, an empty piece, a bad type */
    pbuf c = {.n = 0};
    pb_piece(&c, "</s>", 0, 3);
    pb_piece(&c, "a", -1, 1);
    tmp_write(tmp_path("nounk.model"), c.p, c.n);
    CHECK_STATUS(spm_load_model(&t, tmp_path("nounk.model")), ENCDEC_ERR_TOKENIZER, "no unknown piece");
    pb_piece(&c, "<unk>", 0, 2);
    pb_piece(&c, "<0x41>", 0, 6);
    tmp_write(tmp_path("byte.model"), c.p, c.n);
    CHECK_STATUS(spm_load_model(&t, tmp_path("byte.model")), ENCDEC_ERR_TOKENIZER, "byte_fallback is off");
    c.n = 0;
    pb_piece(&c, "", 0, 1);
    tmp_write(tmp_path("empty.model"), c.p, c.n);
    CHECK_STATUS(spm_load_model(&t, tmp_path("empty.model")), ENCDEC_ERR_TOKENIZER, "piece 0 is empty");
    c.n = 0;
    pb_piece(&c, "x", 0, 9);
    tmp_write(tmp_path("type.model"), c.p, c.n);
    CHECK_STATUS(spm_load_model(&t, tmp_path("type.model")), ENCDEC_ERR_TOKENIZER, "unknown type 9");
    c.n = 0;
    pb_varint(&c, 1 << 3 | 2);
    pb_varint(&c, 1000);
    tmp_write(tmp_path("long.model"), c.p, c.n);
    CHECK_STATUS(spm_load_model(&t, tmp_path("long.model")), ENCDEC_ERR_FORMAT, "length past the end of the message");
    c.n = 0;
    pb_varint(&c, 9 << 3 | 3);
    tmp_write(tmp_path("group.model"), c.p, c.n);
    CHECK_STATUS(spm_load_model(&t, tmp_path("group.model")), ENCDEC_ERR_FORMAT, "unsupported wire type");
    tmp_write(tmp_path("zero.model"), "", 0);
    CHECK_STATUS(spm_load_model(&t, tmp_path("zero.model")), ENCDEC_ERR_FORMAT, "empty file");
    CHECK(t == NULL);
}

/* ---- bad files --------------------------------------------------------------------- */

/* Loads path cut at n bytes: must load or fail with a named error, never crash. */
static int load_prefix(const uint8_t *data, size_t n, int *n_ok) {
    tmp_write(tmp_path("cut.model"), data, n);
    spm_tok *t = NULL;
    encdec_status st = spm_load_model(&t, tmp_path("cut.model"));
    int fine = st == ENCDEC_OK || ((st == ENCDEC_ERR_FORMAT || st == ENCDEC_ERR_TOKENIZER) &&
                                   strstr(encdec_last_error(), "cut.model"));
    if (!fine) fprintf(stderr, "cut at %zu: %s: %s\n", n, encdec_status_str(st), encdec_last_error());
    if (st == ENCDEC_OK) {
        int *ids = NULL, k = 0;
        fine &= spm_encode(t, "Hello world <extra_id_0>!", 25, 1, &ids, &k) == ENCDEC_OK && k >= 2;
        char *s = NULL;
        fine &= ids && spm_decode(t, ids, k, 1, &s) == ENCDEC_OK;
        free(s);
        free(ids);
        (*n_ok)++;
    }
    spm_free(t);
    return fine;
}

static void check_truncated(const char *path) {
    ed_fmap f;
    if (ed_fmap_open(&f, path)) {
        CHECK(0);
        return;
    }
    int fine = 1, n_ok = 0, n = 0;
    for (size_t cut = 0; cut <= 2048 && cut < f.size; cut++, n++) fine &= load_prefix(f.data, cut, &n_ok);
    for (size_t cut = 4099; cut < f.size; cut += f.size / 13, n++) fine &= load_prefix(f.data, cut, &n_ok);
    fine &= load_prefix(f.data, f.size - 1, &n_ok);
    CHECK(fine);
    printf("%s: %d truncations, %d of them load (cut at a field boundary), the others fail cleanly\n",
           path, n + 1, n_ok);

    /* corrupted bytes (a fixed LCG): never a crash */
    uint8_t *copy = malloc(f.size);
    uint32_t r = 12345;
    int n_corrupt_ok = 0;
    for (int k = 0; k < 40 && copy; k++) {
        memcpy(copy, f.data, f.size);
        for (int j = 0; j < 4; j++) {
            r = r * 1103515245u + 12345u;
            copy[(r >> 8) % (f.size < 4096 ? f.size : 4096)] ^= (uint8_t)(1 + (r >> 24) % 255);
        }
        fine &= load_prefix(copy, f.size, &n_corrupt_ok);
    }
    CHECK(fine);
    free(copy);
    ed_fmap_close(&f);
}

static void expect_json_error(const char *json, const char *substr) {
    tmp_write(tmp_path("bad.json"), json, strlen(json));
    spm_tok *t = (spm_tok *)&t;
    CHECK_STATUS(spm_load_json(&t, tmp_path("bad.json")), ENCDEC_ERR_TOKENIZER, substr);
    CHECK(t == NULL);
}

static void check_bad_files(void) {
    spm_tok *t = (spm_tok *)&t;
    CHECK_STATUS(spm_load_model(&t, "/nonexistent/spiece.model"), ENCDEC_ERR_IO, "/nonexistent/spiece.model");
    CHECK(t == NULL);
    CHECK_STATUS(spm_load_json(&t, "/nonexistent/tokenizer.json"), ENCDEC_ERR_IO, "/nonexistent/tokenizer.json");
    CHECK_STATUS(spm_load_dir(&t, "/nonexistent"), ENCDEC_ERR_TOKENIZER,
                 "/nonexistent: no tokenizer: neither tokenizer.json nor spiece.model");
    /* a JSON model file fed to the protobuf reader fails cleanly */
    CHECK_STATUS(spm_load_model(&t, ED_TEST_DATA "/spm/t5like.tokenizer.json"), ENCDEC_ERR_FORMAT,
                 "t5like.tokenizer.json");
    CHECK_STATUS(spm_load_json(&t, ED_TEST_DATA "/spm/t5like.model"), ENCDEC_ERR_TOKENIZER, "malformed JSON");

    /* a BPE model (NLLB's and mBART's fast tokenizers; test_text_tok has them
     * whole): what it must have, what it may not */
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}",
                      "model.vocab is not a non-empty object");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                      "BPE model without an unk_token");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"vocab\": {\"a\": 0}, "
                      "\"merges\": []}}", "unk_token \"<unk>\" is not in model.vocab");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"unk_token\": \"a\", \"vocab\": {\"a\": -1}}}",
                      "model.vocab[\"a\"] is not an id");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {\"a\": 0}}}",
                      "BPE model with dropout is not supported");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"continuing_subword_prefix\": \"##\"}}",
                      "BPE model with continuing_subword_prefix is not supported");
    const char *bpe_vocab = "\"type\": \"BPE\", \"unk_token\": \"<unk>\", "
                            "\"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2, \"ab\": 3}";
    char bpe[512];
    snprintf(bpe, sizeof bpe, "{\"model\": {%s}}", bpe_vocab);
    expect_json_error(bpe, "model.merges is not an array");
    snprintf(bpe, sizeof bpe, "{\"model\": {%s, \"merges\": [\"a b\", \"b a\"]}}", bpe_vocab);
    expect_json_error(bpe, "merge 1 (\"b\" \"a\") has a piece that is not in model.vocab");
    snprintf(bpe, sizeof bpe, "{\"model\": {%s, \"merges\": [[\"a\", \"c\"]]}}", bpe_vocab);
    expect_json_error(bpe, "merge 0 (\"a\" \"c\") has a piece");
    snprintf(bpe, sizeof bpe, "{\"model\": {%s, \"merges\": [\"a b c\"]}}", bpe_vocab);
    expect_json_error(bpe, "merge 0 is neither \"a b\" nor [\"a\", \"b\"]");
    snprintf(bpe, sizeof bpe, "{\"model\": {%s, \"merges\": [[\"a\"]]}}", bpe_vocab);
    expect_json_error(bpe, "merge 0 is neither");
    /* a good one: "ab" one piece, "c" unknown, a run of them one <unk> with fuse_unk
     * (tokenizers 0.20.3's BPE on the same vocabulary and merge: [3, 1, 0, 2]) */
    snprintf(bpe, sizeof bpe, "{\"model\": {%s, \"fuse_unk\": true, \"merges\": [\"a b\"]}}", bpe_vocab);
    tmp_write(tmp_path("bpe.json"), bpe, strlen(bpe));
    CHECK_EQ_INT(spm_load_json(&t, tmp_path("bpe.json")), ENCDEC_OK);
    if (t) {
        int *ids = NULL, n = 0;
        CHECK_EQ_INT(spm_encode(t, "abaccb", 6, 0, &ids, &n), ENCDEC_OK);
        int want[] = {3, 1, 0, 2};
        CHECK_EQ_INT(n, 4);
        for (int i = 0; i < n && i < 4; i++) CHECK_EQ_INT(ids[i], want[i]);
        free(ids);
        spm_free(t);
    }
    expect_json_error("{\"model\": {\"type\": \"WordPiece\"}}", "model type is WordPiece");
    expect_json_error("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", "model.vocab is not a non-empty array");
    expect_json_error("{\"model\": {\"type\": \"Unigram\", \"unk_id\": 5, \"vocab\": [[\"a\", -1]]}}",
                      "model.unk_id is missing or out of range");
    expect_json_error("{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"a\", -1], [\"b\"]]}}",
                      "model.vocab[1] is not");
    const char *ok_model =
        "\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0], [\"a\", -1]]}";
    char doc[1024];
    snprintf(doc, sizeof doc, "{%s, \"normalizer\": {\"type\": \"NFKC\"}}", ok_model);
    expect_json_error(doc, "normalizer NFKC is not supported");
    snprintf(doc, sizeof doc, "{%s, \"normalizer\": {\"type\": \"Replace\", "
             "\"pattern\": {\"Regex\": \"\\\\s+\"}, \"content\": \" \"}}", ok_model);
    expect_json_error(doc, "only a String pattern or the Regex");
    snprintf(doc, sizeof doc, "{%s, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}", ok_model);
    expect_json_error(doc, "pre_tokenizer ByteLevel is not supported");
    snprintf(doc, sizeof doc, "{%s, \"decoder\": {\"type\": \"WordPiece\"}}", ok_model);
    expect_json_error(doc, "decoder WordPiece is not supported");
    snprintf(doc, sizeof doc, "{%s, \"normalizer\": {\"type\": \"Precompiled\", "
             "\"precompiled_charsmap\": \"!!\"}}", ok_model);
    expect_json_error(doc, "precompiled_charsmap is not base64");
    snprintf(doc, sizeof doc, "{%s, \"added_tokens\": [{\"id\": 1, \"content\": \"b\"}]}", ok_model);
    expect_json_error(doc, "id 1 is given to both \"a\" and \"b\"");
    snprintf(doc, sizeof doc, "{%s, \"added_tokens\": [{\"id\": 3, \"content\": \"<x>\"}]}", ok_model);
    expect_json_error(doc, "no token has id 2");
    expect_json_error("{\"model\": ", "malformed JSON");

    /* a minimal JSON model: no normalizer, no pre-tokenizer, no decoder */
    snprintf(doc, sizeof doc, "{%s, \"added_tokens\": [{\"id\": 2, \"content\": \"<x>\", \"special\": true, "
             "\"rstrip\": true}]}", ok_model);
    tmp_write(tmp_path("min.json"), doc, strlen(doc));
    if ((t = load(1, tmp_path("min.json")))) {
        expect_ids(t, "aa<x> ab", (int[]){1, 1, 2, 1, 0}, 5);
        int ids[] = {1, 2, 1};
        char *s = NULL;
        CHECK_EQ_INT(spm_decode(t, ids, 3, 0, &s), ENCDEC_OK);
        CHECK_STR(s, "a <x> a");        /* no decoder: tokens joined by spaces */
        free(s);
        CHECK_EQ_INT(spm_eos(t), -1);
        int *out = NULL, n = 0;
        CHECK_STATUS(spm_encode(t, "a", 1, 1, &out, &n), ENCDEC_ERR_ARG, "no </s>");
        spm_free(t);
    }
}

/* Directory lookup: tokenizer.json first, then spiece.model. */
static void check_dir(void) {
    const char *d = tmp_path("dir");
    CHECK(mkdir(d, 0700) == 0);
    spm_tok *t = NULL;
    CHECK_STATUS(spm_load_dir(&t, d), ENCDEC_ERR_TOKENIZER, "neither tokenizer.json nor spiece.model");
    CHECK(symlink(ED_TEST_DATA "/spm/t5like.model", tmp_join(d, "spiece.model")) == 0);
    CHECK_EQ_INT(spm_load_dir(&t, d), ENCDEC_OK);
    int *ids = NULL, n = 0;
    /* "▁" alone: sentencepiece drops it (the spiece.model was read), tokenizers keeps it */
    if (t) CHECK(spm_encode(t, "\xe2\x96\x81", 3, 0, &ids, &n) == ENCDEC_OK && n == 0);
    free(ids);
    spm_free(t);
    CHECK(symlink(ED_TEST_DATA "/spm/t5like.tokenizer.json", tmp_join(d, "tokenizer.json")) == 0);
    CHECK_EQ_INT(spm_load_dir(&t, d), ENCDEC_OK);
    if (t) CHECK(spm_encode(t, "\xe2\x96\x81", 3, 0, &ids, &n) == ENCDEC_OK && n == 1);
    free(ids);
    spm_free(t);
}

/* ---- bad input and speed ----------------------------------------------------------------- */

static void check_bad_input(const spm_tok *t) {
    int *ids = (int *)&ids, n = 7;
    CHECK_STATUS(spm_encode(t, "ok \xff", 4, 1, &ids, &n), ENCDEC_ERR_ARG, "invalid UTF-8 at byte offset 3");
    CHECK(ids == NULL && n == 0);
    CHECK_STATUS(spm_encode(t, "\xc3", 1, 1, &ids, &n), ENCDEC_ERR_ARG, "invalid UTF-8 at byte offset 0");
    CHECK_STATUS(spm_encode(t, "ab\xed\xa0\x80", 5, 1, &ids, &n), ENCDEC_ERR_ARG, "byte offset 2");  /* surrogate */
    CHECK_STATUS(spm_encode(t, "\xc0\xaf", 2, 1, &ids, &n), ENCDEC_ERR_ARG, "invalid UTF-8");         /* overlong */
    CHECK_STATUS(spm_encode(t, "a\xf4\x90\x80\x80", 5, 1, &ids, &n), ENCDEC_ERR_ARG, "byte offset 1");
    CHECK_STATUS(spm_encode(t, "abc", 2, 1, NULL, &n), ENCDEC_ERR_ARG, "NULL");
    CHECK_EQ_INT(spm_encode(t, "", 0, 1, &ids, &n), ENCDEC_OK);
    CHECK(n == 1 && ids[0] == spm_eos(t));
    free(ids);
    CHECK_EQ_INT(spm_encode(t, NULL, 0, 0, &ids, &n), ENCDEC_OK);
    CHECK(n == 0 && ids != NULL);
    free(ids);
    char *s = (char *)&s, want[96];
    int bad[] = {5, spm_n_vocab(t)};
    snprintf(want, sizeof want, "id %d at position 1 is out of range [0, %d)", bad[1], bad[1]);
    CHECK_STATUS(spm_decode(t, bad, 2, 1, &s), ENCDEC_ERR_ARG, want);
    CHECK(s == NULL);
    bad[1] = -1;
    CHECK_STATUS(spm_decode(t, bad, 2, 0, &s), ENCDEC_ERR_ARG, "id -1 at position 1");
    CHECK_EQ_INT(spm_decode(t, NULL, 0, 0, &s), ENCDEC_OK);
    CHECK_STR(s, "");
    free(s);
}

/* Times spm_encode and spm_decode on 100 KB of corpus text, and on 100 KB
 * without any space (one word) and of '<' (special-token candidates
 * everywhere): the search must stay linear. */
static void check_speed(const spm_tok *t, const char *label) {
    size_t cap = 110000, n = 0;
    char *big = malloc(cap);
    for (int i = 0; n < 100000; i = (i + 1) % g_n_texts) {
        if (n + g_texts[i].n + 1 > cap) break;
        memcpy(big + n, g_texts[i].s, g_texts[i].n);
        n += g_texts[i].n;
        big[n++] = ' ';
    }
    int *ids = NULL, k = 0;
    double t0 = now_ms();
    encdec_status st = spm_encode(t, big, n, 1, &ids, &k);
    double ms = now_ms() - t0;
    CHECK_EQ_INT(st, ENCDEC_OK);
    CHECK(k > 10000);
    char *s = NULL;
    t0 = now_ms();
    if (!st) CHECK_EQ_INT(spm_decode(t, ids, k, 0, &s), ENCDEC_OK);
    double dms = now_ms() - t0;
    CHECK(s && strlen(s) > 1000);       /* NUL bytes (<0x00> pieces) may end it early */
    printf("%s: %zu bytes of corpus text -> %d ids in %.1f ms (%.1f MB/s); decoded in %.1f ms\n", label, n, k, ms,
           n / ms / 1e3, dms);
    CHECK(ms < 5000);
    free(s);
    free(ids);
    for (int kind = 0; kind < 2; kind++) {
        for (size_t i = 0; i < 100000; i++) big[i] = kind ? '<' : "Donaudampfschiff"[i % 16];
        t0 = now_ms();
        CHECK_EQ_INT(spm_encode(t, big, 100000, 1, &ids, &k), ENCDEC_OK);
        ms = now_ms() - t0;
        printf("%s: 100000 bytes of %s -> %d ids in %.1f ms\n", label, kind ? "'<'" : "one word", k, ms);
        CHECK(ms < 5000);
        free(ids);
    }
    free(big);
}

int main(void) {
    load_golden();
    if (!g_golden) return check_done();
    if (!tmp_new("encdec-test-spm")) return 2;

    static const char *small[] = {"t5like", "bytefb"};
    for (int k = 0; k < 2; k++) {
        char path[512], label[128];
        snprintf(path, sizeof path, ED_TEST_DATA "/spm/%s.model", small[k]);
        snprintf(label, sizeof label, "%s.model (slow)", small[k]);
        spm_tok *t = load(0, path);
        if (t) check_golden(t, small[k], 0, label);
        if (t) check_bad_input(t);
        if (t && k == 1) {          /* byte pieces stand for their byte */
            size_t len = 0;
            const char *b = spm_token_text(t, spm_piece_id(t, "<0x41>"), &len);
            CHECK(b && len == 1 && b[0] == 'A');
            check_speed(t, label);
        }
        spm_free(t);
        snprintf(path, sizeof path, ED_TEST_DATA "/spm/%s.tokenizer.json", small[k]);
        snprintf(label, sizeof label, "%s.tokenizer.json (fast)", small[k]);
        if ((t = load(1, path))) check_golden(t, small[k], 1, label);
        if (t) check_bad_input(t);
        if (t && k == 1) check_speed(t, label);
        spm_free(t);
    }
    check_variants();
    check_handmade();
    check_bad_files();
    check_dir();
    check_truncated(ED_TEST_DATA "/spm/t5like.model");

    const char *t5 = ED_SHARED_DIR "/assets/t5-tokenizer/spiece.model";
    int have_t5 = ed_is_file(t5);
    if (have_t5) {
        spm_tok *t = load(0, t5);
        if (t) {
            check_t5(t);
            check_golden(t, "t5", 0, "t5 spiece.model (slow)");
            check_speed(t, "t5 spiece.model");
        }
        spm_free(t);
        CHECK(write_t5_json(t5, tmp_path("t5.tokenizer.json")));
        if ((t = load(1, tmp_path("t5.tokenizer.json")))) {
            check_t5(t);
            check_golden(t, "t5", 1, "t5 tokenizer.json (fast)");
            check_speed(t, "t5 tokenizer.json");
        }
        spm_free(t);
        check_truncated(t5);
    } else {
        printf("SKIP (partly): no %s\n", t5);
    }
    tmp_remove(tmp_dir);
    for (int i = 0; i < g_n_texts; i++) free(g_texts[i].s);
    free(g_texts);
    cJSON_Delete(g_golden);
    return check_done();
}
