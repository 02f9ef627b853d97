/* test_t5_bench.c - build/bench/t5_bench keeps its contract on a tiny T5
 * model: correctness first (the cache modes agree, or it reports nothing),
 * then one JSON object whose timings make sense (speed itself is measured by
 * the benchmark, never asserted), and the very inputs it ran, which
 * bench/t5_vs_transformers.py hands to transformers. */
#include "check.h"
#include "clirun.h"

#include <cjson/cJSON.h>

#define BENCH "'" ED_BENCH_DIR "/t5_bench'"
#define MODEL ED_TEST_DATA "/tiny-random-t5-v1_1"

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    CHECK(cJSON_IsNumber(v));
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

int main(void) {
    CHECK_EQ_INT(cli_sh(BENCH " -m " MODEL " -t 2 -r 2 -n 8 --json 'Das Haus ist schön.' 'summarize: x' 2>&1"), 0);
    cJSON *j = cJSON_Parse(cli_out);
    CHECK(j != NULL);
    if (j) {
        CHECK(num(j, "encoder_ms") > 0);
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(j, "greedy_ms_per_token");
        CHECK(num(pt, "full") > 0 && num(pt, "self") > 0 && num(pt, "none") > 0);
        CHECK(num(j, "beam4_ms_per_step") > 0);
        CHECK(num(j, "greedy_tokens") >= 1 && num(j, "greedy_tokens") <= 8);
        CHECK(num(j, "batch_tokens") >= num(j, "greedy_tokens"));
        CHECK_EQ_INT(num(j, "batch_inputs"), 2);
        CHECK_EQ_INT(num(j, "threads"), 2);
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "inputs");
        CHECK_EQ_INT(cJSON_GetArraySize(in), 2);
        CHECK_STR(cJSON_GetArrayItem(in, 0)->valuestring, "Das Haus ist schön.");
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "greedy_ids")),
                     num(j, "greedy_tokens"));
        cJSON_Delete(j);
    }
    CHECK_EQ_INT(cli_sh(BENCH " -m " MODEL " -r 0 2>&1"), 2);
    CHECK(cli_said("1 <= -r <= 1000"));
    CHECK_EQ_INT(cli_sh(BENCH " -m /nonexistent 2>&1"), 1);
    CHECK(cli_said("/nonexistent"));
    return check_done();
}
