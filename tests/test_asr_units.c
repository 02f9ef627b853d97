/* test_asr_units.c - the pieces of src/asr/ on their own:
 *   - DTW paths and the median filter against openai-whisper's timing.py
 *     (dtw_cpu, median_filter), and the compression ratio against its
 *     utils.compression_ratio (tests/data/whisper-decode-golden.json);
 *   - tokens to words (split by spaces or by characters) and punctuation
 *     merged, against its tokenizer and merge_punctuations, with tiny.en's
 *     tokenizer from ../shared/assets;
 *   - a window's tokens to segments and the next seek (segments.c), on
 *     token lists made by hand from transcribe()'s rules;
 *   - language codes and names.
 */
#include "check.h"

#include "asr/asr_internal.h"
#include "base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_dtw(const cJSON *cases) {
    int n_cases = 0, bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *x = cJSON_GetObjectItem(c, "x"), *rows = cJSON_GetObjectItem(c, "rows"),
                    *cols = cJSON_GetObjectItem(c, "cols");
        int N = cJSON_GetArraySize(x), M = cJSON_GetArraySize(cJSON_GetArrayItem(x, 0));
        double *m = malloc(sizeof(double) * (size_t)N * M);
        float *acc = malloc(sizeof(float) * (size_t)(N + 1) * (M + 1));
        signed char *tr = malloc((size_t)(N + 1) * (M + 1));
        int *pi = malloc(sizeof(int) * (size_t)(N + M)), *pj = malloc(sizeof(int) * (size_t)(N + M));
        for (int i = 0; i < N; i++)
            for (int j = 0; j < M; j++)
                m[(size_t)i * M + j] = cJSON_GetArrayItem(cJSON_GetArrayItem(x, i), j)->valuedouble;
        int len = asr_dtw(m, N, M, acc, tr, pi, pj), ok = len == cJSON_GetArraySize(rows);
        for (int k = 0; ok && k < len; k++)
            ok = pi[k] == cJSON_GetArrayItem(rows, k)->valueint && pj[k] == cJSON_GetArrayItem(cols, k)->valueint;
        bad += !ok;
        n_cases++;
        free(m), free(acc), free(tr), free(pi), free(pj);
    }
    printf("dtw: %d paths, %d differ from timing.dtw_cpu\n", n_cases, bad);
    CHECK(n_cases >= 5);
    CHECK_EQ_INT(bad, 0);
}

static void test_medfilt(const cJSON *cases) {
    int n_cases = 0, bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *x = cJSON_GetObjectItem(c, "x"), *y = cJSON_GetObjectItem(c, "y");
        int R = cJSON_GetArraySize(x), n = cJSON_GetArraySize(cJSON_GetArrayItem(x, 0));
        float *v = malloc(sizeof(float) * (size_t)R * n), tmp[128];
        for (int r = 0; r < R; r++)
            for (int i = 0; i < n; i++)
                v[r * n + i] = (float)cJSON_GetArrayItem(cJSON_GetArrayItem(x, r), i)->valuedouble;
        asr_median_filter(v, R, n, 7, tmp);
        for (int r = 0; r < R; r++)
            for (int i = 0; i < n; i++)
                bad += v[r * n + i] != (float)cJSON_GetArrayItem(cJSON_GetArrayItem(y, r), i)->valuedouble;
        n_cases++;
        free(v);
    }
    printf("median filter: %d cases, %d values differ from timing.median_filter\n", n_cases, bad);
    CHECK_EQ_INT(bad, 0);
}

static void test_compression(const cJSON *cases) {
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, cases) {
        const char *t = cJSON_GetObjectItem(c, "text")->valuestring;
        CHECK_NEAR(asr_compression_ratio(t, strlen(t)), cJSON_GetObjectItem(c, "ratio")->valuedouble, 1e-12);
        n++;
    }
    CHECK(n >= 5);
    size_t len = 8;
    const char *s = asr_strip("  a b \n\t", &len);
    CHECK(len == 3 && !strncmp(s, "a b", 3));
}

/* texts and token counts of w[n] against [[text, count], ...] */
static int same_words(const asr_wtiming *w, int n, const cJSON *want) {
    if (n != cJSON_GetArraySize(want)) return 0;
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(want, i);
        if (strcmp(w[i].text, cJSON_GetArrayItem(e, 0)->valuestring) ||
            w[i].n_tok != cJSON_GetArrayItem(e, 1)->valueint)
            return 0;
    }
    return 1;
}

static void test_words(const cJSON *cases) {
    bpe_tok *tok = NULL;
    if (bpe_load_dir(&tok, ED_SHARED_DIR "/assets/whisper-tiny.en-tokenizer")) {
        printf("SKIP (partly): no tiny.en tokenizer in ../shared/assets: words\n");
        return;
    }
    int eot = bpe_token_id(tok, "<|endoftext|>"), n_cases = 0, bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *ids = cJSON_GetObjectItem(c, "ids");
        int n = cJSON_GetArraySize(ids), *t = malloc(sizeof(int) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) t[i] = cJSON_GetArrayItem(ids, i)->valueint;
        t[n] = eot;
        asr_wtiming *w = calloc((size_t)n + 1, sizeof *w);
        int nw = asr_split_words(tok, t, n + 1, eot, cJSON_IsTrue(cJSON_GetObjectItem(c, "by_unicode")), w);
        int ok = nw > 0 && same_words(w, nw, cJSON_GetObjectItem(c, "split"));
        if (ok) {   /* the eot "word" is not merged, as in transcribe() */
            free(w[nw - 1].text);
            ok = !asr_merge_punctuations(w, nw - 1, "\"'\xe2\x80\x9c\xc2\xbf([{-",
                                         "\"'.\xe3\x80\x82,\xef\xbc\x8c!\xef\xbc\x81?\xef\xbc\x9f:\xef\xbc\x9a\xe2\x80\x9d)]}\xe3\x80\x81") &&
                 same_words(w, nw - 1, cJSON_GetObjectItem(c, "merged"));
            nw--;
        }
        if (!ok) fprintf(stderr, "words case %d differs\n", n_cases);
        bad += !ok;
        for (int i = 0; i < nw; i++) free(w[i].text);
        free(w);
        free(t);
        n_cases++;
    }
    printf("words: %d token lists, %d differ from split_to_word_tokens + merge_punctuations\n",
           n_cases, bad);
    CHECK(n_cases >= 8);
    CHECK_EQ_INT(bad, 0);
    bpe_free(tok);
}

/* transcribe()'s splitting, timestamps at 100 + k (<|k * 0.02|>). */
static void test_segments(void) {
    enum { TB = 100 };
    asr_split s[8];
    int adv, single;
    /* two complete segments, then an unfinished one: resume at the last pair */
    int a[] = {TB + 0, 1, 2, TB + 50, TB + 50, 3, TB + 120, TB + 130, 4, 5};
    CHECK_EQ_INT(asr_split_segments(a, 10, TB, 3000, 0, s, &adv, &single), 2);
    CHECK_EQ_INT(single, 0);
    CHECK(s[0].first == 0 && s[0].n == 4 && s[0].start == 0.0 && s[0].end == 50 * 0.02);
    CHECK(s[1].first == 4 && s[1].n == 3 && s[1].start == 50 * 0.02 && s[1].end == 120 * 0.02);
    CHECK_EQ_INT(adv, 120 * 2);   /* the start of the pair that ends the last complete one */
    /* a single timestamp at the end closes the last segment: the whole window */
    int b[] = {TB + 0, 1, TB + 40, TB + 40, 2, TB + 90};
    CHECK_EQ_INT(asr_split_segments(b, 6, TB, 2500, 0, s, &adv, &single), 2);
    CHECK(single && adv == 2500 && s[1].first == 3 && s[1].n == 3 && s[1].end == 90 * 0.02);
    /* no pair: one segment to its last timestamp */
    int c[] = {TB + 10, 1, 2, TB + 70};
    CHECK_EQ_INT(asr_split_segments(c, 4, TB, 3000, 0, s, &adv, &single), 1);
    CHECK(s[0].start == 0 && s[0].end == 70 * 0.02 && adv == 3000 && single);
    /* no timestamps at all: the window's content */
    int d[] = {1, 2, 3};
    CHECK_EQ_INT(asr_split_segments(d, 3, TB, 1234, 0, s, &adv, &single), 1);
    CHECK(s[0].n == 3 && fabs(s[0].end - 12.34) < 1e-12 && adv == 1234 && !single);
    /* a lone <|0.00|> does not set the end */
    int e[] = {TB, 1};
    CHECK_EQ_INT(asr_split_segments(e, 2, TB, 800, 0, s, &adv, &single), 1);
    CHECK(fabs(s[0].end - 8.0) < 1e-12);
    /* whole windows: a's unfinished rest is a third segment to the
     * content's end, and the window moves on by all of it */
    CHECK_EQ_INT(asr_split_segments(a, 10, TB, 3000, 1, s, &adv, &single), 3);
    CHECK(s[1].first == 4 && s[1].n == 3 && s[1].end == 120 * 0.02);
    CHECK(s[2].first == 7 && s[2].n == 3 && s[2].start == 130 * 0.02 && s[2].end == 30.0);
    CHECK(adv == 3000 && !single);
    /* ... and what closed anyway is as without it */
    CHECK_EQ_INT(asr_split_segments(b, 6, TB, 2500, 1, s, &adv, &single), 2);
    CHECK(single && adv == 2500 && s[1].end == 90 * 0.02);
}

/* Times past a window's audio: a 4.75 s clip whose segments the model
 * timed to 20.92 s. */
static void test_clamp(void) {
    asr_word w1[] = {{"a", 3.0, 4.0, 1}, {"b", 4.5, 6.0, 1}, {"c", 7.0, 8.0, 1}};
    asr_word w2[] = {{"d", 9.0, 10.0, 1}};
    asr_wseg g[] = {{0, 2, 0.0, 2.0, NULL, 0}, {2, 3, 2.0, 20.92, w1, 3}, {5, 1, 4.75, 21.0, w2, 1},
                    {6, 1, 9.0, 10.0, NULL, 0}};
    CHECK_EQ_INT(asr_clamp_segments(g, 4, 4.75), 2);
    CHECK(g[0].start == 0.0 && g[0].end == 2.0);   /* untouched */
    CHECK(g[1].first == 2 && g[1].end == 4.75 && g[1].n_words == 3);
    CHECK(w1[0].start == 3.0 && w1[0].end == 4.0);
    CHECK(w1[1].start == 4.5 && w1[1].end == 4.75);
    CHECK(w1[2].start == 4.75 && w1[2].end == 4.75 && !strcmp(w1[2].text, "c"));
    CHECK_EQ_INT(asr_clamp_segments(g, 2, 100.0), 2);   /* nothing past: nothing changes */
    CHECK(g[1].end == 4.75);
}

static void test_languages(void) {
    CHECK_STR(wlang_code(0), "en");
    CHECK_STR(wlang_code(2), "de");
    CHECK_STR(wlang_code(99), "yue");
    CHECK(wlang_code(100) == NULL && wlang_code(-1) == NULL);
    CHECK_EQ_INT(wlang_find("de"), 2);
    CHECK_EQ_INT(wlang_find("German"), 2);
    CHECK_EQ_INT(wlang_find("MANDARIN"), 1);
    CHECK_EQ_INT(wlang_find("xx"), -1);
    CHECK_EQ_INT(wlang_find(""), -1);
    CHECK_EQ_INT(wlang_find(NULL), -1);
    /* the public face of the same table */
    CHECK_STR(encdec_language_code(0), "en");
    CHECK_STR(encdec_language_code(99), "yue");
    CHECK(encdec_language_code(100) == NULL && encdec_language_code(-1) == NULL);
    CHECK_STR(encdec_language_name("DE"), "german");
    CHECK_STR(encdec_language_name("German"), "german");
    CHECK(encdec_language_name("klingon") == NULL && encdec_language_name(NULL) == NULL);
}

/* The aligner's tables follow each window's own need: a window with as
 * many cells (rows x frames) as an earlier one but a longer side needs a
 * bigger DTW table and filter row (a live stream's 30-minute run overran
 * them: heap corruption). The path and filter then run on those tables in
 * full (AddressSanitizer sees an overrun). */
static void test_aligner_tables(void) {
    asr_aligner a;
    memset(&a, 0, sizeof a);
    static const int shapes[][2] = {{40, 375}, {10, 1500}, {300, 50}, {3, 1500}, {449, 1500}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], frames = shapes[s][1];
        CHECK_EQ_INT(asr_aligner_reserve(&a, 6, rows, frames), ENCDEC_OK);
        CHECK(a.cap_w >= (size_t)rows * frames * 6);
        CHECK(a.cap_cells >= (size_t)rows * frames);
        CHECK(a.cap_dtw >= (size_t)(rows + 1) * (frames + 1));
        CHECK(a.cap_frames >= (size_t)frames + 7);
        for (size_t i = 0; i < (size_t)rows * frames; i++) a.cost[i] = (double)((i * 7919) % 1000) / 1000;
        int *pi = malloc(sizeof(int) * (size_t)(rows + frames + 2) * 2), *pj = pi + rows + frames + 2;
        int len = asr_dtw(a.cost, rows, frames, a.acc, a.trace, pi, pj);
        CHECK(len >= frames && len <= rows + frames);
        CHECK(pi[len - 1] == rows - 1 && pj[len - 1] == frames - 1);
        for (size_t i = 0; i < (size_t)rows * frames; i++) a.mat[i] = (float)a.cost[i];
        asr_median_filter(a.mat, rows, frames, 7, a.tmp);
        free(pi);
    }
    asr_aligner_free(&a);
    printf("aligner tables: each grows to its own need, window after window\n");
}

int main(void) {
    cJSON *js = NULL;
    if (ed_json_load(ED_TEST_DATA "/whisper-decode-golden.json", &js)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    test_dtw(cJSON_GetObjectItem(js, "dtw"));
    test_medfilt(cJSON_GetObjectItem(js, "medfilt"));
    test_compression(cJSON_GetObjectItem(js, "compression"));
    test_words(cJSON_GetObjectItem(js, "words"));
    test_segments();
    test_clamp();
    test_languages();
    test_aligner_tables();
    cJSON_Delete(js);
    return check_done();
}
