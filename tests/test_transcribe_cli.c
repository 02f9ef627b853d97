/* test_transcribe_cli.c - `encdec transcribe` as a user drives it, with the
 * real tiny.en: output formats on standard output and as files (named after
 * the input, written whole or not at all), --verbose segment lines, --json,
 * standard input, no progress line off a terminal; and the bad requests
 * that must fail cleanly, before any work and without writing anything:
 * an output directory that cannot be made, absurd line limits, clips past
 * the end, translation or another language on an English-only model, an
 * unknown language on a multilingual one. The transcripts themselves are
 * checked against openai-whisper by test_longform.
 */
#include "check.h"
#include "clirun.h"
#include "golden.h"
#include "tmpdir.h"

#include <cjson/cJSON.h>
#include <sys/stat.h>

static char g_model[1024], g_base[1024];
#define JFK ED_SHARED_DIR "/audio/jfk.wav"

static int run(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' transcribe -m '%s' -t 2 %s 2>&1", ED_CLI_PATH, g_model, args);
    return cli_sh(cmd);
}

static int exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Files in dir (hidden ones too, not . and ..). */
static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

static char *slurp(const char *p) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_stdout_formats(void) {
    CHECK_EQ_INT(run("-f srt " JFK), 0);
    CHECK(!strncmp(cli_out, "1\n00:00:00,000 --> 00:00:07,740\n And so my fellow", 40) ||
          cli_said("1\n00:00:00,000 --> 00:00:07,740\nAnd so my fellow Americans"));
    CHECK(cli_said("\n\n2\n00:00:07,740 --> 00:00:10,740\nask what you can do for your country\n"));
    CHECK_EQ_INT(run("-f vtt " JFK), 0);
    CHECK(!strncmp(cli_out, "WEBVTT\n\n00:00.000 --> 00:07.740\n", 32));
    CHECK_EQ_INT(run("-f tsv " JFK), 0);
    CHECK(!strncmp(cli_out, "start\tend\ttext\n0\t7740\tAnd so my fellow", 36));
    CHECK_EQ_INT(run("-f json " JFK), 0);
    cJSON *j = cJSON_Parse(cli_out);
    CHECK(j && cJSON_GetArraySize(cJSON_GetObjectItem(j, "segments")) == 2);
    cJSON_Delete(j);
    /* words, regrouped into short subtitle lines, highlighted */
    CHECK_EQ_INT(run("--word-timestamps -f srt --max-line-width 20 --max-line-count 2 " JFK), 0);
    CHECK(cli_said("\n\n2\n") && cli_said(" --> "));
    int long_lines = 0;   /* text lines (not the numbers and times) of at most 20 characters */
    for (char *line = strtok(cli_out, "\n"); line; line = strtok(NULL, "\n"))
        long_lines += !strstr(line, "-->") && strlen(line) > 20;
    CHECK_EQ_INT(long_lines, 0);
    CHECK_EQ_INT(run("--word-timestamps -f vtt --highlight-words " JFK), 0);
    CHECK(cli_said("<u>And</u> so my fellow"));
    /* --verbose: each segment with its times as it is final */
    CHECK_EQ_INT(run("-v " JFK), 0);
    CHECK(cli_said("[00:00.000 --> 00:07.740]  And so my fellow Americans"));
    CHECK(cli_said("[00:07.740 --> 00:10.740]  ask what you can do"));
    CHECK(!strchr(cli_out, '\r'));   /* no progress line: stderr is not a terminal */
    if (access("/usr/bin/script", X_OK) == 0) {   /* on a terminal (util-linux's script gives one) */
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "/usr/bin/script -qec \"'%s' transcribe -m '%s' " JFK "\" /dev/null",
                 ED_CLI_PATH, g_model);
        CHECK_EQ_INT(cli_sh(cmd), 0);
        CHECK(cli_said("jfk.wav: 00:11.000 / 00:11.000 (100%)") && cli_said("x real time"));
        snprintf(cmd, sizeof cmd, "/usr/bin/script -qec \"'%s' transcribe -q -m '%s' " JFK "\" /dev/null",
                 ED_CLI_PATH, g_model);
        CHECK_EQ_INT(cli_sh(cmd), 0);
        CHECK(!strstr(cli_out, "real time") && cli_said("And so my fellow"));
    }
    /* --json: openai-whisper's result plus language probabilities, timings, counts */
    CHECK_EQ_INT(run("--json " JFK), 0);
    j = cJSON_Parse(cli_out);
    CHECK(j != NULL);
    if (j) {
        const cJSON *t = cJSON_GetObjectItem(j, "timings");
        CHECK_STR(cJSON_GetObjectItem(j, "language")->valuestring, "en");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "segments")) == 2);
        CHECK_EQ_INT(cJSON_GetObjectItem(t, "n_encodes")->valueint, 1);
        CHECK_EQ_INT(cJSON_GetObjectItem(t, "n_decodes")->valueint, 1);
        CHECK_EQ_INT(cJSON_GetObjectItem(t, "n_windows")->valueint, 1);
        CHECK_NEAR(cJSON_GetObjectItem(t, "audio_seconds")->valuedouble, 11.0, 1e-9);
    }
    cJSON_Delete(j);
}

static void test_files(void) {
    char args[2048];
    const char *out = tmp_path("out"), *bad = tmp_path("bad.wav");
    tmp_write(bad, "RIFF not really", 15);
    /* every format by default, named after the input; nothing for the file that failed */
    snprintf(args, sizeof args, "-o '%s' " JFK " '%s'", out, bad);
    CHECK_EQ_INT(run(args), 1);
    const char *ext[] = {"txt", "srt", "vtt", "tsv", "json"};
    for (int i = 0; i < 5; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/jfk.%s", out, ext[i]);
        CHECK(exists(p));
        snprintf(p, sizeof p, "%s/bad.%s", out, ext[i]);
        CHECK(!exists(p));
    }
    CHECK_EQ_INT(count_files(out), 5);   /* no temporary file left behind */
    char p[600];
    snprintf(p, sizeof p, "%s/jfk.txt", out);
    const char *txt = slurp(p);
    CHECK(txt && !strcmp(txt, "And so my fellow Americans ask not what your country can do for you\n"
                              "ask what you can do for your country\n"));
    /* a list of formats, into a directory made on the way */
    snprintf(args, sizeof args, "-o '%s/a/b' -f srt,json " JFK, tmp_dir);
    CHECK_EQ_INT(run(args), 0);
    snprintf(p, sizeof p, "%s/a/b", tmp_dir);
    CHECK_EQ_INT(count_files(p), 2);
    /* standard input */
    snprintf(args, sizeof args, "'%s' transcribe -m '%s' -o '%s' -f txt - < " JFK " 2>&1", ED_CLI_PATH,
             g_model, out);
    CHECK_EQ_INT(cli_sh(args), 0);
    snprintf(p, sizeof p, "%s/stdin.txt", out);
    CHECK(exists(p));
    snprintf(args, sizeof args, "'%s' transcribe -m '%s' - < " JFK " 2>&1", ED_CLI_PATH, g_model);
    CHECK_EQ_INT(cli_sh(args), 0);
    CHECK(cli_said("And so my fellow Americans ask not"));
    snprintf(args, sizeof args, "'%s' transcribe -m '%s' - < /dev/null 2>&1", ED_CLI_PATH, g_model);
    CHECK_EQ_INT(cli_sh(args), 1);
    CHECK(cli_said("encdec: standard input: bad audio: no data (0 bytes)"));
    /* two inputs named alike in other folders would write the same files:
     * refused before any work, nothing written */
    const char *two = tmp_path("two"), *d1 = tmp_path("d1"), *d2 = tmp_path("d2");
    char l1[600], l2[600];
    mkdir(d1, 0777);
    mkdir(d2, 0777);
    snprintf(l1, sizeof l1, "%s/x.wav", d1);
    snprintf(l2, sizeof l2, "%s/x.wav", d2);
    CHECK(symlink(JFK, l1) == 0 && symlink(ED_SHARED_DIR "/audio/platforms_en.wav", l2) == 0);
    snprintf(args, sizeof args, "-o '%s' -f txt '%s' '%s'", two, l1, l2);
    CHECK_EQ_INT(run(args), 2);
    CHECK(cli_said("would both be written as") && cli_said("/x.*"));
    CHECK_EQ_INT(count_files(two), 0);
    snprintf(args, sizeof args, "-f txt '%s' '%s'", l1, l2);   /* on standard output: fine */
    CHECK_EQ_INT(run(args), 0);
    /* a long input name (245 characters): its outputs are written (the
     * temporary name is short whatever the final one) */
    char name[300], longp[900];
    memset(name, 'n', 245);
    memcpy(name + 241, ".wav", 5);
    snprintf(longp, sizeof longp, "%s/%s", d1, name);
    CHECK(symlink(JFK, longp) == 0);
    snprintf(args, sizeof args, "-o '%s' -f srt '%s'", two, longp);
    CHECK_EQ_INT(run(args), 0);
    CHECK_EQ_INT(count_files(two), 1);
}

/* Several files: decoded at once through the engine (-P 3), printed in
 * their order, the same as one after the other (-P 1); a missing file among
 * them fails alone. */
static void test_parallel(void) {
    const char *files = JFK " " ED_SHARED_DIR "/audio/platforms_en.wav " ED_SHARED_DIR
        "/audio/librispeech/1272-128104-0000.wav " ED_SHARED_DIR "/audio/jfk.flac";
    static char one[sizeof cli_out];
    char args[2048];
    snprintf(args, sizeof args, "-P 1 --beam 3 %s", files);
    CHECK_EQ_INT(run(args), 0);
    memcpy(one, cli_out, sizeof one);
    snprintf(args, sizeof args, "-P 3 --beam 3 %s", files);
    CHECK_EQ_INT(run(args), 0);
    CHECK_STR(cli_out, one);
    CHECK(strstr(one, "jfk.wav: And so my fellow Americans") < strstr(one, "platforms_en.wav: Today"));
    snprintf(args, sizeof args, "-P 2 %s /nonexistent.wav " JFK, files);
    CHECK_EQ_INT(run(args), 1);
    CHECK(cli_said("/nonexistent.wav"));
    CHECK(cli_said("librispeech/1272-128104-0000.wav: Mr. Quilter is the apostle"));
    snprintf(args, sizeof args, "-P 0 " JFK " " JFK);
    CHECK_EQ_INT(run(args), 2);
}

static void test_bad_requests(void) {
    char args[2048];
    int before = count_files(tmp_dir);
    /* an output directory that cannot be: nothing loads, nothing is written */
    snprintf(args, sizeof args, "-o '%s/bad.wav/x' " JFK, tmp_dir);
    CHECK_EQ_INT(run(args), 2);
    CHECK(cli_said("--output-dir") && cli_said("cannot create it"));
    CHECK_EQ_INT(run("-o /dev/null " JFK), 2);
    CHECK(cli_said("not a directory"));
    CHECK_EQ_INT(count_files(tmp_dir), before);
    CHECK_EQ_INT(run("-f srt,vtt " JFK), 2);
    CHECK(cli_said("several output formats need --output-dir"));
    CHECK_EQ_INT(run("-f docx " JFK), 2);
    CHECK(cli_said("--output-format expects txt, srt, vtt, tsv, json"));
    CHECK_EQ_INT(run("--json -f srt " JFK), 2);
    /* absurd limits */
    CHECK_EQ_INT(run("--max-line-width 0 " JFK), 2);
    CHECK(cli_said("--max-line-width expects an integer in 1..100000, got \"0\""));
    CHECK_EQ_INT(run("--max-line-width 999999999999 " JFK), 2);
    CHECK_EQ_INT(run("--max-line-count -2 " JFK), 2);
    CHECK_EQ_INT(run("--best-of 0 " JFK), 2);
    CHECK_EQ_INT(run("--patience 0 " JFK), 2);
    CHECK_EQ_INT(run("--temperature 1.5 " JFK), 2);
    CHECK_EQ_INT(run("--temperature-increment -0.1 " JFK), 2);
    CHECK_EQ_INT(run("--logprob-threshold abc " JFK), 2);
    CHECK_EQ_INT(run("--task summarize " JFK), 2);
    CHECK(cli_said("--task expects transcribe or translate"));
    /* clips */
    CHECK_EQ_INT(run("--clip-timestamps 5,x " JFK), 2);
    CHECK(cli_said("--clip-timestamps expects numbers separated by commas"));
    CHECK_EQ_INT(run("--clip-timestamps 50 " JFK), 1);
    CHECK(cli_said("a clip starts at 50 s, past the end of the audio (11.000 s)"));
    CHECK_EQ_INT(run("--clip-timestamps 5,2 " JFK), 1);
    CHECK(cli_said("clip_timestamps must increase: 2 after 5"));
    CHECK_EQ_INT(run("--clip-timestamps -1 " JFK), 1);
    CHECK(cli_said("times are seconds >= 0"));
    CHECK_EQ_INT(run("--clip-timestamps 7.5 " JFK), 0);   /* from 7.5 s to the end */
    CHECK(cli_said("ask what you can do for your country") && !strstr(cli_out, "fellow"));
    /* languages and tasks the model has not */
    CHECK_EQ_INT(run("--task translate " JFK), 2);
    CHECK(cli_said("English-only; it cannot translate"));
    CHECK_EQ_INT(run("-l de " JFK), 2);
    CHECK(cli_said("English-only; -l de is not available"));
    CHECK_EQ_INT(run("-l English " JFK), 0);
    if (g_base[0]) {
        char cmd[2048];
        /* no Whisper language: refused before the model loads, every code listed */
        snprintf(cmd, sizeof cmd, "'%s' transcribe -m '%s' -l xx " JFK " 2>&1", ED_CLI_PATH, g_base);
        CHECK_EQ_INT(cli_sh(cmd), 2);
        CHECK(cli_said("unknown language \"xx\": give a code or an English name"));
        CHECK(cli_said(", jw, su, yue"));
        /* a Whisper language this model lacks (base has 99: no Cantonese) */
        snprintf(cmd, sizeof cmd, "'%s' transcribe -m '%s' -l yue " JFK " 2>&1", ED_CLI_PATH, g_base);
        CHECK_EQ_INT(cli_sh(cmd), 2);
        CHECK(cli_said("unknown language \"yue\" for this model; it knows: en, zh, de, es"));
        CHECK(strstr(cli_out, ", jw, su\n") != NULL);
    }
    CHECK_EQ_INT(count_files(tmp_dir), before);
}

/* Options anywhere (getopt_long's permutation; "--" ends them) and
 * openai-whisper's spellings (underscores, --beam_size, booleans with a
 * True / False value, -l auto). */
static void test_spellings(void) {
    CHECK_EQ_INT(run(JFK " -f srt --max-line-width 20 --word-timestamps"), 0);
    CHECK(!strncmp(cli_out, "1\n00:00:00,000 --> ", 19) && cli_said("\nAmericans ask not\n"));
    CHECK_EQ_INT(run(JFK " --output_format srt --max_line_width 20 --word_timestamps True"), 0);
    CHECK(!strncmp(cli_out, "1\n00:00:00,000 --> ", 19) && cli_said("\nAmericans ask not\n"));
    CHECK_EQ_INT(run("--word_timestamps=False -f srt --max_line_width=20 " JFK), 0);
    CHECK(cli_said("--max-line-width lays subtitles out from word times; it is ignored with "
                   "--word-timestamps False"));
    /* the width alone turns word times on (what it needs): lines of at most 20 */
    CHECK_EQ_INT(run("-f srt --max-line-width 20 " JFK), 0);
    CHECK(cli_said("\nAmericans ask not\n"));
    CHECK_EQ_INT(run("--beam_size 2 --best_of 2 --temperature_increment_on_fallback 0.5 "
                     "--condition_on_previous_text False --fp16 False -l auto " JFK " --json"), 0);
    cJSON *j = cJSON_Parse(strchr(cli_out, '{') ? strchr(cli_out, '{') : "");
    CHECK(j && cJSON_GetObjectItem(j, "beam")->valueint == 2);
    cJSON_Delete(j);
    CHECK_EQ_INT(run("-- " JFK " -q"), 1);   /* after "--", "-q" is a file name */
    CHECK(cli_said("-q"));
    CHECK_EQ_INT(run(JFK " --word_timestamps=maybe"), 2);
    CHECK(cli_said("--word-timestamps=maybe: expected True or False"));
    CHECK_EQ_INT(run(JFK " --condition_on_previous_text"), 2);
    CHECK(cli_said("--condition-on-previous-text expects True or False"));
    /* what phones and browsers record (FFmpeg), from a file and from standard input */
    CHECK_EQ_INT(run(ED_TEST_DATA "/av/jfk6.m4a " ED_TEST_DATA "/av/jfk6.mp4"), 0);
    CHECK(cli_said("jfk6.m4a: And so my fellow Americans") && cli_said("jfk6.mp4: And so my fellow"));
    CHECK_EQ_INT(run("- < " ED_TEST_DATA "/av/jfk6.webm"), 0);
    CHECK(cli_said("And so my fellow Americans"));
    CHECK_EQ_INT(run(JFK " --no_such_option 1"), 2);
    CHECK(cli_said("unknown option \"--no-such-option\""));
}

/* -m NAME: a folder of the model cache ($XDG_CACHE_HOME/encdec/models), by
 * its name, faster-whisper's size name (whisper-<size>) or its hub id; a
 * name installed nowhere says so and how to install it. */
static void test_model_names(void) {
    char dir[1024], cmd[8192];
    snprintf(dir, sizeof dir, "%.900s/encdec/models", tmp_dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && ln -sfn '%s' '%s/whisper-small'", dir, g_model, dir);
    CHECK_EQ_INT(cli_sh(cmd), 0);
    const char *names[] = {"small", "whisper-small", "Systran/faster-whisper-small"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "XDG_CACHE_HOME='%s' '%s' transcribe -m %s -t 2 " JFK " 2>&1",
                 tmp_dir, ED_CLI_PATH, names[i]);
        CHECK_EQ_INT(cli_sh(cmd), 0);
        CHECK(cli_said("ask not what your country can do for you"));
    }
    /* a size name not installed: downloaded (tests/scripts/test_hub_cli.py); offline, refused */
    snprintf(cmd, sizeof cmd,
             "HF_HUB_OFFLINE=1 XDG_CACHE_HOME='%s' '%s' transcribe -m large-v3 " JFK " 2>&1",
             tmp_dir, ED_CLI_PATH);
    CHECK_EQ_INT(cli_sh(cmd), 1);
    CHECK(cli_said("\"large-v3\" is not installed in "));
    CHECK(cli_said("HF_HUB_OFFLINE is set: not downloading it"));
    snprintf(cmd, sizeof cmd, "XDG_CACHE_HOME='%s' '%s' transcribe -m whisper-nothing " JFK " 2>&1",
             tmp_dir, ED_CLI_PATH);
    CHECK_EQ_INT(cli_sh(cmd), 1);
    CHECK(cli_said("\"whisper-nothing\" is not a path, nor a model installed in "));
    snprintf(cmd, sizeof cmd, "rm -rf '%s/encdec'", tmp_dir);
    cli_sh(cmd);
}

int main(void) {
    if (!golden_find_model(g_model, sizeof g_model, "ENCDEC_TINY_EN", "whisper-tiny.en"))
        return check_skip("whisper tiny.en not installed (scripts/fetch-model.sh tiny.en)");
    if (access(JFK, R_OK) != 0) return check_skip("needs ../shared/audio");
    if (!golden_find_model(g_base, sizeof g_base, "ENCDEC_BASE", "whisper-base")) g_base[0] = 0;
    if (!tmp_new("encdec-transcribe-cli")) return 2;
    CHECK_PART(test_stdout_formats());
    CHECK_PART(test_files());
    CHECK_PART(test_parallel());
    CHECK_PART(test_bad_requests());
    CHECK_PART(test_spellings());
    CHECK_PART(test_model_names());
    tmp_remove(tmp_dir);
    return check_done();
}
