/* test_bpe_nmt.c - subword-nmt's BPE (tok/bpe_nmt.c) against Argos
 * Translate's own apply_bpe: tests/data/bpe-nmt/golden.json
 * (tools/golden_bpe_nmt.py) holds, for three codes files (learned version
 * 0.2, learned version 0.1, and one crafted with CRLF and CR line ends,
 * duplicates, a product merged at a lower rank than itself, codes that put
 * "</w>" inside units) and one of 80 random codes over "abc" in shuffled
 * ranks (with 100 random texts of three words), the units of a corpus of
 * tricky texts and their joined form. Also: codes files that must be refused, with their line;
 * text that is not UTF-8; the same units from several threads.
 */
#include "check.h"
#include "tok/bpe_nmt.h"
#include "base/json.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The units of one case against the oracle's: count, then each. */
static int same_units(const nmt_units *u, const cJSON *want) {
    if (u->n != cJSON_GetArraySize(want)) return 0;
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, want) {
        size_t n = strlen(e->valuestring);
        if (u->len[i] != n || memcmp(nmt_unit(u, i), e->valuestring, n)) return 0;
        i++;
    }
    return 1;
}

static void check_golden(const cJSON *g) {
    const char *names[4] = {"codes-v02.txt", "codes-v01.txt", "codes-crafted.txt", "codes-random.txt"};
    const int versions[4] = {2, 1, 2, 2};
    int cases = 0;
    for (int f = 0; f < 4; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/bpe-nmt/%s", ED_TEST_DATA, names[f]);
        nmt_bpe *b = NULL;
        encdec_status st = nmt_bpe_load(&b, path);
        CHECK(st == ENCDEC_OK);
        if (st) {
            fprintf(stderr, "%s\n", encdec_last_error());
            continue;
        }
        CHECK_EQ_INT(nmt_bpe_version(b), versions[f]);
        nmt_units u = {0};
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "cases")) {
            if (strcmp(cJSON_GetObjectItem(c, "codes")->valuestring, names[f])) continue;
            const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
            const cJSON *want = cJSON_GetObjectItem(c, "units");
            CHECK(nmt_bpe_segment(b, text, strlen(text), &u) == ENCDEC_OK);
            int ok = same_units(&u, want);
            CHECK(ok);
            if (!ok) {
                fprintf(stderr, "  %s, \"%s\": %d units:", names[f], text, u.n);
                for (int i = 0; i < u.n; i++) fprintf(stderr, " [%s]", nmt_unit(&u, i));
                fprintf(stderr, "\n");
            }
            const char **p = malloc(sizeof *p * (size_t)(u.n + 1));
            for (int i = 0; i < u.n; i++) p[i] = nmt_unit(&u, i);
            char *j = nmt_bpe_join(p, u.n);
            CHECK_STR(j, cJSON_GetObjectItem(c, "join")->valuestring);
            free(j);
            free(p);
            cases++;
        }
        nmt_units_free(&u);
        nmt_bpe_free(b);
    }
    CHECK(cases >= 230);
}

static void refused(const char *codes, encdec_status want, const char *msg) {
    nmt_bpe *b = (nmt_bpe *)1;
    CHECK_STATUS(nmt_bpe_load_mem(&b, codes, strlen(codes), "bpe.model"), want, msg);
    CHECK(b == NULL);
}

static void check_errors(void) {
    refused("a b\nc d e\n", ENCDEC_ERR_TOKENIZER, "bpe.model: line 2 is not a BPE code");
    refused("#version: 0.2\na b\nc\n", ENCDEC_ERR_TOKENIZER, "line 3 is not a BPE code");
    refused("a b\n\nc d\n", ENCDEC_ERR_TOKENIZER, "line 2 is not a BPE code");
    refused("a  b\n", ENCDEC_ERR_TOKENIZER, "line 1 is not a BPE code");
    refused("a\tb\n", ENCDEC_ERR_TOKENIZER, "line 1 is not a BPE code");
    refused("#version: 0.3\na b\n", ENCDEC_ERR_TOKENIZER, "version \"0.3\": only 0.1 and 0.2");
    refused("#version: 0.2.1\n", ENCDEC_ERR_TOKENIZER, "version \"0.2.1\"");
    refused("#version: 0.20\n", ENCDEC_ERR_TOKENIZER, "version \"0.20\"");
    refused("#version:\n", ENCDEC_ERR_TOKENIZER, "version \"#version:\"");
    refused("a b\n\xff\xfe c\n", ENCDEC_ERR_TOKENIZER, "bpe.model: not UTF-8 text (at byte 4)");
    {   /* a buffer with no NUL after it: the message quotes the line within it (fuzz_nmt) */
        static const char bad[] = "a b\nbad";
        char *buf = malloc(sizeof bad - 1);
        memcpy(buf, bad, sizeof bad - 1);
        nmt_bpe *b = NULL;
        CHECK_STATUS(nmt_bpe_load_mem(&b, buf, sizeof bad - 1, "nonul"), ENCDEC_ERR_TOKENIZER,
                     "nonul: line 2 is not a BPE code (two units separated by one space): \"bad\"");
        free(buf);
    }
    CHECK_STATUS(nmt_bpe_load(&(nmt_bpe *){NULL}, ED_TEST_DATA "/bpe-nmt/no-such-file"),
                 ENCDEC_ERR_TOKENIZER, "no-such-file");

    /* versions the oracle reads the same (checked with Argos Translate's
     * apply_bpe): trailing .0 groups, spaces, CRLF; no version line: 0.1 */
    const char *same[3] = {"#version: 0.2.0\nt h\n", "#version:  00.2 \r\nt h\n", "t h\n"};
    const int ver[3] = {2, 2, 1};
    for (int i = 0; i < 3; i++) {
        nmt_bpe *b = NULL;
        CHECK(nmt_bpe_load_mem(&b, same[i], strlen(same[i]), "v") == ENCDEC_OK);
        if (!b) continue;
        CHECK_EQ_INT(nmt_bpe_version(b), ver[i]);
        CHECK_EQ_INT(nmt_bpe_n_codes(b), 1);
        nmt_units u = {0};
        CHECK(nmt_bpe_segment(b, "the", 3, &u) == ENCDEC_OK);
        CHECK_EQ_INT(u.n, 2);   /* the oracle's: th@@ e (0.1's lone end mark dropped) */
        if (u.n == 2) {
            CHECK_STR(nmt_unit(&u, 0), "th@@");
            CHECK_STR(nmt_unit(&u, 1), "e");
        }
        nmt_units_free(&u);
        nmt_bpe_free(b);
    }

    /* an empty codes file: every code point a unit */
    nmt_bpe *b = NULL;
    CHECK(nmt_bpe_load_mem(&b, "", 0, "empty") == ENCDEC_OK);
    nmt_units u = {0};
    if (b) {
        CHECK(nmt_bpe_segment(b, "ab c", 4, &u) == ENCDEC_OK);
        CHECK_EQ_INT(u.n, 3);
        if (u.n == 3) {
            CHECK_STR(nmt_unit(&u, 0), "a@@");
            CHECK_STR(nmt_unit(&u, 1), "b");
            CHECK_STR(nmt_unit(&u, 2), "c");
        }
        CHECK_STATUS(nmt_bpe_segment(b, "a\xc3", 2, &u), ENCDEC_ERR_ARG, "not valid UTF-8 (at byte 1)");
        CHECK_EQ_INT(u.n, 0);
    }
    nmt_units_free(&u);
    nmt_bpe_free(b);
}

/* Several threads segmenting with one codes table: each thread's units
 * equal the ones computed alone. */
typedef struct {
    const nmt_bpe *b;
    const char *text;
    const nmt_units *want;
    int ok;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    nmt_units u = {0};
    j->ok = 1;
    for (int r = 0; r < 200 && j->ok; r++) {
        if (nmt_bpe_segment(j->b, j->text, strlen(j->text), &u) || u.n != j->want->n) j->ok = 0;
        for (int i = 0; i < u.n && j->ok; i++)
            if (strcmp(nmt_unit(&u, i), nmt_unit(j->want, i))) j->ok = 0;
    }
    nmt_units_free(&u);
    return NULL;
}

static void check_threads(void) {
    nmt_bpe *b = NULL;
    CHECK(nmt_bpe_load(&b, ED_TEST_DATA "/bpe-nmt/codes-v02.txt") == ENCDEC_OK);
    if (!b) return;
    const char *texts[3] = {"She sells sea shells by the sea shore .", "naïve café façade Straße",
                            "supercalifragilisticexpialidocious"};
    nmt_units want[3] = {{0}};
    job jobs[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        CHECK(nmt_bpe_segment(b, texts[i], strlen(texts[i]), &want[i]) == ENCDEC_OK);
        jobs[i] = (job){b, texts[i], &want[i], 0};
        pthread_create(&th[i], NULL, run_job, &jobs[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].ok);
        nmt_units_free(&want[i]);
    }
    nmt_bpe_free(b);
}

int main(void) {
    cJSON *g;
    if (ed_json_load(ED_TEST_DATA "/bpe-nmt/golden.json", &g)) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return 1;
    }
    check_golden(g);
    check_errors();
    check_threads();
    cJSON_Delete(g);
    return check_done();
}
