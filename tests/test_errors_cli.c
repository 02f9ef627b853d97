/* test_errors_cli.c - the encdec program on bad command lines and inputs.
 *
 * Runs the built program (ED_CLI_PATH) through the shell with stderr merged
 * into stdout, and asserts the exit status (0 ok, 1 a file or the model
 * failed, 2 usage) and the message: no arguments, an unknown command or
 * option, no audio file, thread / cache / token options out of range, a
 * missing model, a missing audio file (also next to a good one, which must
 * still be transcribed), the help and version texts, and the hint to
 * scripts/fetch-model.sh when the default model is not installed.
 * The model is tests/data/tiny-random-whisper; audio is written here.
 */
#include "check.h"
#include "clirun.h"
#include "tmpdir.h"

#include "kern/kern.h"

#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define MODEL ED_TEST_DATA "/tiny-random-whisper"

#define g_out cli_out

/* Runs `env-prefix ED_CLI_PATH args 2>&1` (stdin empty), keeps its output in
 * cli_out and returns its exit status (-1 if it did not exit normally). */
static int run_env(const char *env, const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1 </dev/null", env, ED_CLI_PATH, args);
    return cli_sh(cmd);
}

static int run(const char *args) { return run_env("", args); }

#define said cli_said

#define CHECK_RUN(args, want_rc, want_text) do { \
    CHECK_EQ_INT(run(args), want_rc); CHECK(said(want_text)); } while (0)

/* 2 s of seeded noise at 16 kHz. */
static void write_wav(const char *path) {
    enum { N = 32000 };
    static float x[N];
    uint32_t s = 11;
    for (int i = 0; i < N; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = ((float)(s >> 8) / 8388608.0f - 1.0f) * 0.3f;
    }
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf || sf_writef_float(sf, x, N) != N) { fprintf(stderr, "%s: cannot write\n", path); exit(2); }
    sf_close(sf);
}

static void test_usage(void) {
    CHECK_RUN("", 2, "usage: encdec <command>");
    /* BLIS_ARCH_TYPE: BLIS 0.9 reads a number (a name reads as 0, skx) and
     * aborts or faults on a configuration it lacks or the CPU cannot run: a
     * clear error instead; one this CPU runs is used (--version names it) */
    CHECK_EQ_INT(run_env("BLIS_ARCH_TYPE=zen3", "transcribe -m " MODEL " " ED_SHARED_DIR "/audio/jfk.wav"), 1);
    CHECK(said("BLIS_ARCH_TYPE=zen3 is not the number of a BLIS configuration"));
    CHECK(said("(generic)"));
    CHECK_EQ_INT(run_env("BLIS_ARCH_TYPE=999", "transcribe -m " MODEL " " ED_SHARED_DIR "/audio/jfk.wav"), 1);
    CHECK(said("not the number of a BLIS configuration"));
    CHECK_EQ_INT(run_env("BLIS_ARCH_TYPE=zen3", "--version"), 0);
    CHECK(said("unusable: BLIS_ARCH_TYPE"));
    char env[64];
#if defined(__aarch64__)
    snprintf(env, sizeof env, "BLIS_ARCH_TYPE=%d", k_blas_config_id("armsve"));
#else
    snprintf(env, sizeof env, "BLIS_ARCH_TYPE=%d", k_blas_config_id("knl"));
#endif
    CHECK_EQ_INT(run_env(env, "transcribe -m " MODEL " " ED_SHARED_DIR "/audio/jfk.wav"), 1);
    CHECK(said("a BLIS configuration this CPU cannot run"));
    snprintf(env, sizeof env, "BLIS_ARCH_TYPE=%d", k_blas_config_id("generic"));
    CHECK_EQ_INT(run_env(env, "--version"), 0);
    CHECK(said("kernels: generic"));
    CHECK_RUN("frobnicate", 2, "encdec: unknown command \"frobnicate\"");
    CHECK(said("usage: encdec <command>"));
    CHECK_RUN("transcribe", 2, "no audio file given");
    CHECK_RUN("transcribe -m " MODEL, 2, "no audio file given");
    CHECK_RUN("transcribe -t 0 a.wav", 2, "-t expects an integer in 1..256, got \"0\"");
    CHECK_RUN("transcribe -t 10000 a.wav", 2, "1..256");
    CHECK_RUN("transcribe --threads -3 a.wav", 2, "1..256");
    CHECK_RUN("transcribe -t 4x a.wav", 2, "got \"4x\"");
    CHECK_RUN("transcribe --beam 0 a.wav", 2, "--beam expects an integer in 1..16, got \"0\"");
    CHECK_RUN("transcribe --beam 17 a.wav", 2, "1..16");
    /* openai-whisper's names, as given (not encdec's shorter ones) */
    CHECK_RUN("transcribe --beam-size 0 a.wav", 2, "--beam-size expects an integer in 1..16");
    CHECK_RUN("transcribe --beam_size=0 a.wav", 2, "--beam-size expects an integer in 1..16");
    CHECK_RUN("transcribe --temperature_increment_on_fallback 2 a.wav", 2,
              "--temperature-increment-on-fallback expects");
    CHECK_RUN("bench --beam x a.wav", 2, "--beam expects an integer");
    CHECK_RUN("transcribe --compute fp8 a.wav", 2, "--compute expects f32, bf16 or int8, got \"fp8\"");
    CHECK_RUN("transcribe --compute", 2, "--compute expects");
    CHECK_RUN("transcribe --isa sse4 a.wav", 2, "--isa expects auto, c, avx2, avx512, amx or neon");
    CHECK_RUN("transcribe --isa avx2,-foo a.wav", 2, "unknown extension in \"avx2,-foo\"");
    CHECK_RUN("transcribe --isa=auto, a.wav", 2, "after the set, expected ,-EXT");
    CHECK_RUN("bench --isa auto,avx-vnni a.wav", 2, "expected ,-EXT");
    CHECK_RUN("bench --isa avx2,-avx-vnni,-avx-vnnix a.wav", 2, "unknown extension");
    CHECK_RUN("bench --cross-kv=f8 a.wav", 2, "--cross-kv expects f32, f16 or bf16, got \"f8\"");
    CHECK_RUN("bench a.wav --language", 2, "--language needs a language");
    CHECK_RUN("generate --cross-kv q4 x", 2, "--cross-kv expects");
    CHECK_RUN("transcribe -t", 2, "-t expects an integer in 1..256, got \"\"");
    CHECK_RUN("transcribe --kv-cache=bogus a.wav", 2, "--kv-cache expects full, self or none, got \"bogus\"");
    CHECK_RUN("transcribe --kv-cache bogus a.wav", 2, "got \"bogus\"");
    CHECK_RUN("transcribe --max-tokens 0 a.wav", 2, "--max-tokens expects an integer in 1..448, got \"0\"");
    CHECK_RUN("transcribe --max-tokens 9999 a.wav", 2, "got \"9999\"");
    CHECK_RUN("transcribe --max-duration 0 a.wav", 2, "--max-duration expects a number");
    CHECK_RUN("transcribe --max-duration nan a.wav", 2, "--max-duration expects a number");
    CHECK_RUN("transcribe --frobnicate a.wav", 2, "unknown option \"--frobnicate\"");
    CHECK_RUN("transcribe -m", 2, "-m needs a path");
    CHECK_RUN("transcribe -l", 2, "-l needs a language code");
}

static void test_help(void) {
    CHECK_RUN("--help", 0, "--help");
    CHECK_EQ_INT(run("--help"), 0);
    CHECK(said("usage: encdec <command>") && said("scripts/fetch-model.sh"));
    CHECK_RUN("transcribe --help", 0, "--kv-cache MODE");
    CHECK(said("usage: encdec transcribe") && said("--max-tokens"));
    CHECK_RUN("bench --help", 0, "usage: encdec bench");
    CHECK(said("--modes"));
    CHECK_RUN("--version", 0, "encdec 0.1.0");
    CHECK(said("sequential") && !strstr(g_out, "threaded"));
}

static void test_files(void) {
    char args[2048];
    const char *good = tmp_path("good.wav"), *missing = tmp_path("missing.wav");
    write_wav(good);

    snprintf(args, sizeof args, "transcribe -m /nonexistent/model-dir %s", good);
    CHECK_RUN(args, 1, "cannot load model /nonexistent/model-dir: cannot read file");
    /* audio paths are checked before the model loads: no model error then */
    CHECK_RUN("transcribe -m /nonexistent/model-dir a.wav", 1, "a.wav: cannot read file: No such file");
    CHECK(!strstr(g_out, "cannot load model"));
    snprintf(args, sizeof args, "transcribe -m %s %s", tmp_dir, good);   /* a directory, no model */
    CHECK_EQ_INT(run(args), 1);
    CHECK(said("no model found"));
    {   /* ... said once, with the path once */
        const char *a = strstr(g_out, "no model found");
        CHECK(a && !strstr(a + 1, "no model found") && !strstr(g_out, ": no model found:"));
    }

    snprintf(args, sizeof args, "transcribe -m %s %s", MODEL, missing);
    CHECK_EQ_INT(run(args), 1);
    CHECK(said("missing.wav: cannot read file:") && said("No such file or directory"));

    /* the good file after a missing one is still transcribed */
    snprintf(args, sizeof args, "transcribe -m %s --max-tokens 4 %s %s", MODEL, missing, good);
    CHECK_EQ_INT(run(args), 1);
    CHECK(said("missing.wav: cannot read file"));
    char line[300];
    snprintf(line, sizeof line, "\n%s: ", good);
    CHECK(said(line) || (strncmp(g_out, line + 1, strlen(line + 1)) == 0));

    snprintf(args, sizeof args, "transcribe -m %s --max-tokens 4 --json %s", MODEL, good);
    CHECK_EQ_INT(run(args), 0);
    CHECK(said("\"file\":\"") && said("\"n_windows\":1") && said("\"kv_cache\":\"full\""));

    snprintf(args, sizeof args, "transcribe -m %s --max-duration 1 %s", MODEL, good);
    CHECK_EQ_INT(run(args), 1);
    CHECK(said("good.wav: bad audio:") && said("is 2.0 s long; the limit is 1 s"));

    snprintf(args, sizeof args, "transcribe -m %s -l de %s", MODEL, good);
    CHECK_EQ_INT(run(args), 2);
    CHECK(said("this model is English-only; -l de is not available"));
    /* a language no Whisper model knows is a usage error before the model loads
       (no model error though the model is missing); codes and names in any case */
    snprintf(args, sizeof args, "transcribe -m /nonexistent/model-dir -l klingon %s", good);
    CHECK_EQ_INT(run(args), 2);
    CHECK(said("unknown language \"klingon\"") && said(" en, zh, de,") && said(", yue") &&
          !strstr(g_out, "cannot load model"));
    snprintf(args, sizeof args, "bench -m /nonexistent/model-dir -l xx %s", good);
    CHECK_EQ_INT(run(args), 2);
    CHECK(said("unknown language \"xx\"") && !strstr(g_out, "cannot load model"));
    const char *spellings[] = {"DE", "german", "GERMAN", "De"};
    for (int k = 0; k < 4; k++) {
        snprintf(args, sizeof args, "transcribe -m /nonexistent/model-dir -l %s %s", spellings[k], good);
        CHECK_EQ_INT(run(args), 1);
        CHECK(said("cannot load model") && !strstr(g_out, "unknown language"));
    }
    snprintf(args, sizeof args, "transcribe -m %s --translate %s", MODEL, good);
    CHECK_EQ_INT(run(args), 2);
    CHECK(said("it cannot translate"));

    /* no -m, no $ENCDEC_MODEL and an empty cache: say how to fetch the model */
    char env[512];
    snprintf(env, sizeof env, "env -u ENCDEC_MODEL HOME=%s XDG_CACHE_HOME=%s", tmp_dir, tmp_dir);
    snprintf(args, sizeof args, "transcribe %s", good);
    CHECK_EQ_INT(run_env(env, args), 1);
    CHECK(said("scripts/fetch-model.sh"));
    snprintf(line, sizeof line, "%s/encdec/models/whisper-tiny.en", tmp_dir);
    CHECK(said(line));
    snprintf(env, sizeof env, "env -u ENCDEC_MODEL -u XDG_CACHE_HOME HOME=%s", tmp_dir);
    CHECK_EQ_INT(run_env(env, args), 1);
    snprintf(line, sizeof line, "%s/.cache/encdec/models/whisper-tiny.en", tmp_dir);
    CHECK(said(line) && said("scripts/fetch-model.sh"));
    /* $ENCDEC_MODEL is used when set */
    snprintf(env, sizeof env, "env ENCDEC_MODEL=/nonexistent/env-model HOME=%s", tmp_dir);
    CHECK_EQ_INT(run_env(env, args), 1);
    CHECK(said("cannot load model /nonexistent/env-model"));
}

/* Files that lie and special files (issue: inputs that lie): a WAV cut
 * inside its data is transcribed with a warning (--strict: an error); an
 * empty file, a FIFO with a writer (read as a stream) and "-" from a pipe;
 * a 100 KB model path is not echoed whole (its reason still shows); a
 * bench on a missing file fails before it loads any model. */
static void test_lying_inputs(void) {
    char args[2048];
    const char *good = tmp_path("good2.wav"), *cut = tmp_path("cut.wav"), *empty = tmp_path("empty.wav");
    write_wav(good);
    FILE *f = fopen(good, "rb");
    static uint8_t whole[80000];
    size_t len = fread(whole, 1, sizeof whole, f);
    fclose(f);
    CHECK_EQ_INT(len, 44 + 64000);
    tmp_write(cut, whole, 44 + 16000);       /* 0.5 s of the 2 s the header promises */
    snprintf(args, sizeof args, "transcribe -m %s --max-tokens 2 %s", MODEL, cut);
    CHECK_EQ_INT(run(args), 0);
    CHECK(said("warning: ") && said("cut.wav: the file ends early: it holds 0.50 s of the 2.00 s "
                                    "its header promises"));
    snprintf(args, sizeof args, "transcribe -m %s --strict %s", MODEL, cut);
    CHECK_EQ_INT(run(args), 1);
    CHECK(said("cut.wav: bad audio: the file ends early"));
    CHECK(!strstr(g_out, "warning"));
    snprintf(args, sizeof args, "transcribe -m /nonexistent/model %s", good);
    tmp_write(empty, "", 0);
    snprintf(args, sizeof args, "transcribe -m /nonexistent/model %s", empty);
    CHECK_EQ_INT(run(args), 1);   /* checked before the model loads */
    CHECK(said("empty.wav: bad audio: the file is empty (0 bytes)") && !strstr(g_out, "cannot load"));

    /* a FIFO with a writer: a stream; "-" from a pipe */
    const char *fifo = tmp_path("in.fifo");
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "(sleep 0.3; cat '%s' > '%s') & '%s' transcribe -m %s --max-tokens 2 "
             "--json '%s' 2>&1", good, fifo, ED_CLI_PATH, MODEL, fifo);
    CHECK_EQ_INT(cli_sh(cmd), 0);
    CHECK(said("\"audio_seconds\":2,"));
    snprintf(cmd, sizeof cmd, "cat '%s' | '%s' transcribe -m %s --max-tokens 2 --json - 2>&1", good,
             ED_CLI_PATH, MODEL);
    CHECK_EQ_INT(cli_sh(cmd), 0);
    CHECK(said("\"audio_seconds\":2,"));

    /* a 100 KB argument: the message keeps its start and its reason */
    size_t big = 100000;
    char *arg = malloc(big + 1024);
    int k = snprintf(arg, 1024, "'%s' transcribe -m /nonexistent/", ED_CLI_PATH);
    memset(arg + k, 'a', big);
    snprintf(arg + k + big, 1000, " '%s' 2>&1 </dev/null", good);
    CHECK_EQ_INT(cli_sh(arg), 1);
    CHECK(strlen(g_out) < 2000);
    CHECK(said("cannot load model /nonexistent/aaa") && said("bytes ...]") &&
          (said("no such file or directory") || said("File name too long")));
    free(arg);

    /* bench: the audio is read before the model loads */
    CHECK_EQ_INT(run("bench -m /nonexistent/model /nonexistent/a.wav"), 1);
    CHECK(said("/nonexistent/a.wav: No such file") && !strstr(g_out, "cannot load model"));
}

int main(void) {
    struct stat sb;
    if (stat(ED_CLI_PATH, &sb) != 0) return check_skip("the encdec program is not built");
    if (!tmp_new("encdec-errors-cli")) return 2;
    test_usage();
    test_help();
    test_files();
    test_lying_inputs();
    tmp_remove(tmp_dir);
    return check_done();
}
