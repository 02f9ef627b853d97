/* test_bench_cli.c - `encdec bench --json` keeps its contract: one JSON
 * object with load_ms, mel_ms, encoder_ms, decode_ms_per_token {full, self,
 * none}, n_tokens, rtf, peak_rss_mb, threads (values checked for sense, not
 * for speed: speed is measured by the benchmark, never asserted), and it
 * refuses bad options. Runs on the real tiny.en; skips without it. */
#include "golden.h"

#include <cjson/cJSON.h>

static char *run(const char *args, int *rc) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' bench %s 2>&1", ED_CLI_PATH, args);
    FILE *p = popen(cmd, "r");
    char *out = calloc(1, 1 << 16);
    size_t n = fread(out, 1, (1 << 16) - 1, p);
    out[n] = 0;
    *rc = pclose(p);
    return out;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    CHECK(cJSON_IsNumber(v));
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

int main(void) {
    char model[1024], args[2048];
    if (!golden_find_model(model, sizeof model, "ENCDEC_TINY_EN", "whisper-tiny.en"))
        return check_skip("whisper tiny.en not installed (scripts/fetch-model.sh tiny.en)");
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio");
    int rc;
    snprintf(args, sizeof args, "-m '%s' -t 2 -r 1 --json '%s/audio/jfk.wav'", model, ED_SHARED_DIR);
    char *out = run(args, &rc);
    CHECK_EQ_INT(rc, 0);
    cJSON *j = cJSON_Parse(out);
    CHECK(cJSON_IsObject(j));
    if (cJSON_IsObject(j)) {
        CHECK(num(j, "load_ms") > 0);
        CHECK(num(j, "mel_ms") > 0);
        CHECK(num(j, "encoder_ms") > 0);
        /* openai-whisper's transcribe() of jfk.wav: 2 segments, 26 tokens with timestamps */
        CHECK_EQ_INT(num(j, "n_tokens"), 26);
        CHECK_EQ_INT(num(j, "n_encodes"), 1);   /* tiny.en: no language detection */
        CHECK(num(j, "rtf") > 0);
        CHECK(num(j, "peak_rss_mb") > 100);      /* 151 MB of f32 weights alone */
        CHECK_EQ_INT(num(j, "threads"), 2);
        CHECK_NEAR(num(j, "audio_s"), 11.0, 1e-9);
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "decode_ms_per_token");
        CHECK(cJSON_IsObject(d));
        const char *modes[3] = {"full", "self", "none"};
        for (int i = 0; i < 3; i++) CHECK(num(d, modes[i]) > 0);
    } else {
        fprintf(stderr, "bench printed: %s\n", out);
    }
    cJSON_Delete(j);
    free(out);

    out = run("-r 0 x.wav", &rc);
    CHECK(WEXITSTATUS(rc) == 2 && strstr(out, "-r expects an integer in 1..1000, got \"0\""));
    free(out);
    out = run("--modes fast x.wav", &rc);
    CHECK(WEXITSTATUS(rc) == 2 && strstr(out, "names none of full, self, none"));
    free(out);
    out = run("", &rc);
    CHECK(WEXITSTATUS(rc) == 2 && strstr(out, "no audio file given"));
    free(out);
    return check_done();
}
