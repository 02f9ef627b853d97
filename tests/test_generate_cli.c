/* test_generate_cli.c - `encdec generate` end to end: arguments and stdin,
 * plain and JSON output against the HF goldens' texts, cache modes,
 * beams, sampling, and its usage and input errors (exit status + message).
 */
#include "check.h"
#include "clirun.h"
#include "tmpdir.h"
#include "modeldir.h"

#include "base/json.h"

#include <stdlib.h>
#include <string.h>

#define MODEL ED_TEST_DATA "/tiny-random-t5-v1_1"
#define GOLDEN ED_TEST_DATA "/t5-golden/t5-v1_1.json"

#define g_out cli_out

/* Runs `sh -c script` with the CLI's path in $CLI and the model's in $M;
 * output (stdout and stderr) in cli_out; returns the exit status. */
static int sh(const char *script) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "CLI='%s' M='%s' sh -c '%s' 2>&1", ED_CLI_PATH, MODEL, script);
    return cli_sh(cmd);
}

#define said cli_said

#define CHECK_SH(script, want_rc, want_text) do { \
    CHECK_EQ_INT(sh(script), want_rc); CHECK(said(want_text)); } while (0)

static cJSON *g_js;

static const char *input(int i) {
    return cJSON_GetArrayItem(cJSON_GetObjectItem(g_js, "inputs"), i)->valuestring;
}
static const char *greedy_text(int i) {
    return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(g_js, "greedy"), "text"), i)->valuestring;
}
static const char *beam_text(int i) {
    return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(g_js, "beam"), "text"), i)->valuestring;
}

/* The golden inputs as a file, one per line. */
static const char *inputs_file(void) {
    const char *path = tmp_path("inputs.txt");
    char buf[4096] = "";
    for (int i = 0; i < 3; i++) {
        strcat(buf, input(i));
        strcat(buf, "\n");
    }
    tmp_write(path, buf, strlen(buf));
    return path;
}

static void expect_lines(const char **want, int n) {
    char *save = NULL, *copy = strdup(g_out);
    char *line = strtok_r(copy, "\n", &save);
    for (int i = 0; i < n; i++) {
        CHECK_STR(line ? line : "", want[i]);
        line = strtok_r(NULL, "\n", &save);
    }
    CHECK(line == NULL);
    free(copy);
}

static void test_outputs(void) {
    char script[4096];
    const char *f = inputs_file();
    const char *g[3] = {greedy_text(0), greedy_text(1), greedy_text(2)};
    /* stdin, in every cache mode and batch size: the same three lines */
    const char *modes[] = {"", "--kv-cache=full", "--kv-cache self", "--kv-cache=none --batch 2",
                           "--batch 1 -t 1"};
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --max-new-tokens 16 %s < %s",
                 modes[k], f);
        CHECK_EQ_INT(sh(script), 0);
        expect_lines(g, 3);
    }
    /* the screen's switches (ENCDEC_LOGIT_SCREEN_MIN, --no-logit-screen) are
     * taken and change nothing here (this model's output projection is stored
     * in halves: no copy; the golden tests screen the f32 ones) */
    const char *screen[] = {"", "--batch 1", "--no-logit-screen"};
    for (size_t k = 0; k < sizeof screen / sizeof screen[0]; k++) {
        snprintf(script, sizeof script, "ENCDEC_LOGIT_SCREEN_MIN=0 \"$CLI\" generate -m \"$M\" "
                 "--max-new-tokens 16 %s < %s", screen[k], f);
        CHECK_EQ_INT(sh(script), 0);
        expect_lines(g, 3);
    }
    /* arguments instead of stdin */
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --max-new-tokens 16 \"%s\" \"%s\"",
             input(0), input(1));
    CHECK_EQ_INT(sh(script), 0);
    expect_lines(g, 2);
    /* options anywhere among the texts (getopt_long's order), "--" ends them */
    snprintf(script, sizeof script, "\"$CLI\" generate \"%s\" -m \"$M\" \"%s\" --max-new-tokens 16",
             input(0), input(1));
    CHECK_EQ_INT(sh(script), 0);
    expect_lines(g, 2);
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --max-new-tokens 16 -- \"%s\"",
             input(0));
    CHECK_EQ_INT(sh(script), 0);
    expect_lines(g, 1);
    /* beam search, two sequences per input */
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --max-new-tokens 16 --beam 4 "
             "--num-return 2 --length-penalty 0.6 < %s", f);
    CHECK_EQ_INT(sh(script), 0);
    const char *b[6];
    for (int i = 0; i < 6; i++) b[i] = beam_text(i);
    expect_lines(b, 6);
    /* JSON: one object per input */
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --max-new-tokens 16 --json < %s", f);
    CHECK_EQ_INT(sh(script), 0);
    char *save = NULL, *copy = strdup(g_out);
    int n = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
        cJSON *j = cJSON_Parse(line);
        CHECK(j != NULL);
        if (!j) continue;
        CHECK_EQ_INT(cJSON_GetObjectItem(j, "index")->valueint, n + 1);
        CHECK_STR(cJSON_GetObjectItem(j, "input")->valuestring, input(n));
        cJSON *q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "sequences"), 0);
        CHECK_STR(cJSON_GetObjectItem(q, "text")->valuestring, greedy_text(n));
        cJSON *toks = cJSON_GetObjectItem(q, "tokens");
        const cJSON *want = cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(g_js, "greedy"), "tokens"), n);
        CHECK_EQ_INT(cJSON_GetArraySize(toks), cJSON_GetArraySize(want));
        double sum = 0;
        for (int t = 0; t < cJSON_GetArraySize(toks); t++) {
            cJSON *x = cJSON_GetArrayItem(toks, t);
            CHECK_EQ_INT(cJSON_GetObjectItem(x, "id")->valueint, cJSON_GetArrayItem(want, t)->valueint);
            sum += cJSON_GetObjectItem(x, "logprob")->valuedouble;
        }
        CHECK_NEAR(cJSON_GetObjectItem(q, "score")->valuedouble, sum, 1e-3);
        CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "batch_timings"), "encoder_ms") != NULL);
        cJSON_Delete(j);
    }
    CHECK_EQ_INT(n, 3);
    free(copy);
    /* sampling: reproducible by seed */
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --sample --temperature 0.7 --top-k 50 "
             "--top-p 0.9 --seed 1 --num-return 2 < %s", f);
    CHECK_EQ_INT(sh(script), 0);
    char *first = strdup(g_out);
    CHECK_EQ_INT(sh(script), 0);
    CHECK_STR(g_out, first);
    free(first);
    /* --stream: the same lines (transformers' greedy texts), printed as the
     * tokens come; sampled, what the same seed prints without it */
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --max-new-tokens 16 --stream < %s", f);
    CHECK_EQ_INT(sh(script), 0);
    expect_lines(g, 3);
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --sample --seed 4 --batch 1 < %s", f);
    CHECK_EQ_INT(sh(script), 0);
    first = strdup(g_out);
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --sample --seed 4 --stream < %s", f);
    CHECK_EQ_INT(sh(script), 0);
    CHECK_STR(g_out, first);
    free(first);
    /* --patience: N lines an input, the ranks its search did not finish empty,
     * the others the texts --json lists for it, in order */
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --max-new-tokens 6 --beam 2 --patience 2 "
             "--num-return 4 < %s", f);
    CHECK_EQ_INT(sh(script), 0);
    char *plain = strdup(g_out);
    snprintf(script, sizeof script, "\"$CLI\" generate -m \"$M\" --max-new-tokens 6 --beam 2 --patience 2 "
             "--num-return 4 --json < %s", f);
    CHECK_EQ_INT(sh(script), 0);
    char *lines = plain, *jsave = NULL, *jcopy = strdup(g_out);
    int n_in = 0, n_seq = 0;
    for (char *line = strtok_r(jcopy, "\n", &jsave); line; line = strtok_r(NULL, "\n", &jsave), n_in++) {
        cJSON *j = cJSON_Parse(line), *seqs = j ? cJSON_GetObjectItem(j, "sequences") : NULL;
        int k = cJSON_GetArraySize(seqs);
        CHECK(k >= 1 && k <= 4);
        n_seq += k;
        for (int r = 0; r < 4 && lines; r++) {   /* its 4 plain lines */
            char *end = strchr(lines, '\n');
            if (!end) break;
            *end = 0;
            const char *t = r < k ? cJSON_GetObjectItem(cJSON_GetArrayItem(seqs, r), "text")->valuestring : "";
            CHECK_STR(lines, t);
            lines = end + 1;
        }
        cJSON_Delete(j);
    }
    CHECK_EQ_INT(n_in, 3);
    CHECK(n_seq > 6);   /* past the 2 beams: the search kept the finished ones */
    free(jcopy);
    free(plain);
    /* an input that fails among them keeps its line, empty */
    snprintf(script, sizeof script, "printf \"%%s\\n\\n%%s\\n\" \"%s\" \"%s\" | \"$CLI\" generate -m "
             "\"$M\" --max-new-tokens 16 --stream 2>/dev/null", input(0), input(1));
    CHECK_EQ_INT(sh(script), 1);
    CHECK(strstr(g_out, g[0]) == g_out);
    char want[1024];
    snprintf(want, sizeof want, "%s\n\n%s\n", g[0], g[1]);
    CHECK_STR(g_out, want);
}

static void test_errors(void) {
    CHECK_SH("\"$CLI\" generate -m \"$M\" --beam 0 x", 2, "--beam expects an integer in 1..64, got \"0\"");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --stream --beam 2 x", 2, "--stream prints one greedy");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --stream --json x", 2, "not with --json");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --max-new-tokens -1 x", 2,
             "--max-new-tokens expects an integer in 1..4096, got \"-1\"");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --top-p 0 x", 2, "--top-p expects a number");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --temperature -1 x", 2, "--temperature expects a number");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --seed -3 x", 2, "--seed expects an integer");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --num-return 3 --beam 2 x", 2, "--num-return 3 needs --beam 3");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --num-return 5 --beam 2 --patience 2 x", 2, "--num-return 5 needs");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --beam 2 --patience 0 x", 2, "--patience expects a number");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --sample --beam 2 x", 2, "do not combine");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --frobnicate x", 2, "unknown option");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --kv-cache maybe x", 2, "--kv-cache expects full, self or none");
    CHECK_SH("ENCDEC_MODEL= \"$CLI\" generate x", 2, "generate needs a text-to-text model");
    CHECK_SH("\"$CLI\" generate -m /nonexistent x", 1, "/nonexistent");
    CHECK_SH("\"$CLI\" generate -m " ED_TEST_DATA "/tiny-random-whisper x", 1, "use encdec transcribe");
    CHECK_SH("\"$CLI\" generate --help", 0, "usage: encdec generate");
    CHECK_SH("\"$CLI\" --help", 0, "generate -m MODEL");
    /* invalid UTF-8 and an empty line on stdin: those lines fail, named by
     * number; the others are still generated, in order */
    CHECK_SH("printf \"Das Haus ist sch\\303\\266n.\\nbad \\377\\376 line\\n\\nDas Haus ist sch\\303\\266n.\\n\" | "
             "\"$CLI\" generate -m \"$M\" --max-new-tokens 16 2>/dev/null", 1, greedy_text(1));
    const char *want[] = {greedy_text(1), "", "", greedy_text(1)};
    char *save = NULL, *copy = strdup(g_out);
    /* strtok drops empty lines: compare by hand */
    int k = 0;
    for (char *p = copy, *nl; (nl = strchr(p, '\n')); p = nl + 1, k++) {
        *nl = 0;
        if (k < 4) CHECK_STR(p, want[k]);
    }
    CHECK_EQ_INT(k, 4);
    free(copy);
    (void)save;
    CHECK_SH("printf \"ok\\nbad \\377 line\\n\\n\" | \"$CLI\" generate -m \"$M\" --max-new-tokens 4 >/dev/null",
             1, "input 2: invalid argument");
    CHECK(said("UTF-8"));
    CHECK(said("input 3: invalid argument"));
    CHECK(said("empty"));
    CHECK_SH("printf \"bad \\377\\n\" | \"$CLI\" generate -m \"$M\" --json 2>/dev/null", 1, "\"error\"");
    /* an input with a NUL byte is refused, not cut, and said to be one (not
     * "invalid UTF-8"); the lines around it are generated in their places */
    CHECK_SH("printf \"a\\000b\\n\" | \"$CLI\" generate -m \"$M\" >/dev/null", 1,
             "input 1: invalid argument: a NUL byte at offset 1");
    CHECK(!strstr(g_out, "UTF-8"));
    CHECK_SH("printf \"Das Haus ist sch\\303\\266n.\\nx\\000y\\nDas Haus ist sch\\303\\266n.\\n\" | "
             "\"$CLI\" generate -m \"$M\" --max-new-tokens 16 --json 2>/dev/null", 1,
             "{\"index\":2,\"error\":\"invalid argument: a NUL byte at offset 1");
    CHECK(said("{\"index\":1,\"input\":\"Das Haus") && said("{\"index\":3,\"input\":\"Das Haus"));
    /* empty stdin: nothing to do, success */
    CHECK_SH("\"$CLI\" generate -m \"$M\" </dev/null; echo rc=$?", 0, "rc=0");
}

/* `encdec translate` on the mBART-50 model (tokenizer and languages of
 * tools/golden_text_tok.py): the texts transformers' generate gives with the
 * source language's token and the target's forced, through the slow class's
 * files and through tokenizer.json alone (MBart50TokenizerFast's, converted
 * by transformers from the same model); the usage errors. */
static void test_translate(void) {
    cJSON *js = NULL;
    if (ed_json_load(ED_TEST_DATA "/bart-golden/mbart.json", &js)) {
        CHECK(0);
        return;
    }
    const cJSON *api = cJSON_GetObjectItem(js, "api"), *lj = cJSON_GetObjectItem(api, "langs");
    char buf[4096] = "", script[4096];
    for (int i = 0; i < 3; i++) {
        strcat(buf, cJSON_GetArrayItem(cJSON_GetObjectItem(api, "inputs"), i)->valuestring);
        strcat(buf, "\n");
    }
    char f[512];   /* (tmp_path's buffer is reused by the calls below) */
    snprintf(f, sizeof f, "%s", tmp_path("translate.txt"));
    tmp_write(f, buf, strlen(buf));
#define MBART ED_TEST_DATA "/tiny-random-mbart"
    snprintf(script, sizeof script, "\"$CLI\" translate -m %s --src-lang %s --tgt-lang %s --max-new-tokens 16 < %s",
             MBART, cJSON_GetObjectItem(lj, "src_lang")->valuestring,
             cJSON_GetObjectItem(lj, "tgt_lang")->valuestring, f);
    CHECK_EQ_INT(sh(script), 0);
    const cJSON *texts = cJSON_GetObjectItem(cJSON_GetObjectItem(lj, "greedy"), "text");
    const char *want[3];
    for (int i = 0; i < 3; i++) want[i] = cJSON_GetArrayItem(texts, i)->valuestring;
    expect_lines(want, 3);
    static const char *const weights[] = {"config.json", "generation_config.json", "model.safetensors", NULL};
    static const char *const fast_files[] = {"tokenizer.json", "tokenizer_config.json",
                                             "special_tokens_map.json", NULL};
    const char *fast = md_copy(MBART, "mbart-fast", weights);
    for (int i = 0; fast_files[i]; i++) {
        size_t n;
        uint8_t *b = md_read_all(tmp_join(ED_TEST_DATA "/text-tok/mbart50-fast", fast_files[i]), &n);
        tmp_write(tmp_join(fast, fast_files[i]), b, n);
        free(b);
    }
    snprintf(script, sizeof script, "\"$CLI\" translate -m %s --src-lang %s --tgt-lang %s --max-new-tokens 16 < %s",
             fast, cJSON_GetObjectItem(lj, "src_lang")->valuestring,
             cJSON_GetObjectItem(lj, "tgt_lang")->valuestring, f);
    CHECK_EQ_INT(sh(script), 0);
    expect_lines(want, 3);
    CHECK_SH("\"$CLI\" translate -m " MBART " --list-languages", 0, "ar_AR\ncs_CZ\nde_DE\n");
    CHECK_SH("\"$CLI\" translate -m " MBART " x", 2, "translate needs --tgt-lang CODE");
    CHECK_SH("\"$CLI\" translate -m " MBART " --tgt-lang de x", 2,
             "--tgt-lang \"de\" is not one of the model\x27s language codes:\nar_AR\n");
    CHECK_SH("\"$CLI\" generate -m " MBART " --src-lang xx_XX x", 2, "--src-lang \"xx_XX\"");
    CHECK_SH("\"$CLI\" generate -m \"$M\" --tgt-lang de x", 2, "this model has no languages");
    CHECK_SH("\"$CLI\" translate -m \"$M\" --max-new-tokens 2 x", 0, "");   /* T5: nothing to choose */
    cJSON_Delete(js);
}

/* How many of --json's lines in g_out have the token ids want[line]. */
static int lines_as(const cJSON *want) {
    int line = 0, ok = 0;
    char *copy = strdup(g_out);
    for (char *p = copy; p && *p && line < cJSON_GetArraySize(want); line++) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        cJSON *o = cJSON_Parse(p), *ids = cJSON_CreateArray(), *t;
        const cJSON *seq = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "sequences"), 0);
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(seq, "tokens"))
            cJSON_AddItemToArray(ids, cJSON_CreateNumber(cJSON_GetObjectItem(t, "id")->valueint));
        char *got = cJSON_PrintUnformatted(ids), *w = cJSON_PrintUnformatted(cJSON_GetArrayItem(want, line));
        ok += got && w && !strcmp(got, w);
        free(got);
        free(w);
        cJSON_Delete(ids);
        cJSON_Delete(o);
        p = nl ? nl + 1 : NULL;
    }
    free(copy);
    return ok;
}

/* The model's generation config as the search's defaults (the BART golden's
 * "gen_config": beams, length penalty, min_length, no_repeat_ngram_size,
 * max_length), as transformers' generate() takes them; an option given
 * overrides its setting. */
static void test_model_config(void) {
    cJSON *js = NULL;
    if (ed_json_load(ED_TEST_DATA "/bart-golden/bart.json", &js)) {
        CHECK(0);
        return;
    }
    const cJSON *api = cJSON_GetObjectItem(js, "api"), *gc = cJSON_GetObjectItem(api, "gen_config");
    static const char *const files[] = {"config.json", "model.safetensors", "vocab.json", "merges.txt",
                                        "special_tokens_map.json", "tokenizer_config.json", NULL};
    const char *d = md_copy(ED_TEST_DATA "/tiny-random-bart", "gen-config", files);
    char *cfg = cJSON_PrintUnformatted(cJSON_GetObjectItem(gc, "config"));
    tmp_write(tmp_join(d, "generation_config.json"), cfg, strlen(cfg));
    free(cfg);
    char buf[4096] = "", script[4096];
    for (int i = 0; i < 3; i++) {
        strcat(buf, cJSON_GetArrayItem(cJSON_GetObjectItem(api, "inputs"), i)->valuestring);
        strcat(buf, "\n");
    }
    const char *f = tmp_path("summarise.txt");
    tmp_write(f, buf, strlen(buf));
    snprintf(script, sizeof script, "\"$CLI\" generate -m %s --json < %s", d, f);
    CHECK_EQ_INT(sh(script), 0);
    CHECK_EQ_INT(lines_as(cJSON_GetObjectItem(gc, "tokens")), 3);
    /* --beam 1 overrides num_beams: greedy search, other outputs */
    snprintf(script, sizeof script, "\"$CLI\" generate -m %s --beam 1 --json < %s", d, f);
    CHECK_EQ_INT(sh(script), 0);
    CHECK(lines_as(cJSON_GetObjectItem(gc, "tokens")) < 3);
    cJSON_Delete(js);
}

int main(void) {
    if (!tmp_new("encdec-generate-cli")) return 2;
    if (ed_json_load(GOLDEN, &g_js)) {
        fprintf(stderr, "%s: %s\n", GOLDEN, encdec_last_error());
        return 1;
    }
    test_outputs();
    test_errors();
    test_translate();
    test_model_config();
    cJSON_Delete(g_js);
    tmp_remove(tmp_dir);
    return check_done();
}
