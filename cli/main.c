/* main.c - the encdec program: dispatches to its commands. */
#include "cli.h"

#include <cblas.h>
#include <stdio.h>
#include <string.h>

static const char *USAGE =
    "usage: encdec <command> [options]\n"
    "\n"
    "encdec runs encoder-decoder transformers (Whisper) on the CPU, with a static\n"
    "self-attention cache and a cross-attention cache computed once per input.\n"
    "\n"
    "commands:\n"
    "  transcribe [options] AUDIO...   speech to text (WAV, FLAC, OGG, MP3)\n"
    "  bench [options] AUDIO           time load, mel, encoder and decoding per cache mode\n"
    "\n"
    "  encdec --help, encdec COMMAND --help, encdec --version\n"
    "\n"
    "The default model is whisper tiny.en in ~/.cache/encdec/models/whisper-tiny.en\n"
    "($XDG_CACHE_HOME is honoured; $ENCDEC_MODEL overrides it); scripts/fetch-model.sh\n"
    "installs it.\n";

/* Declared by OpenBLAS; reports whether it was built to start threads. */
int openblas_get_parallel(void);
char *openblas_get_config(void);

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(USAGE, stderr);
        return CLI_USAGE_ERR;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(USAGE, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("encdec %s\nBLAS: %s (%s)\n", ENCDEC_VERSION, openblas_get_config(),
               openblas_get_parallel() ? "threaded" : "sequential");
        return 0;
    }
    if (!strcmp(cmd, "transcribe")) return cli_transcribe(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cli_bench(argc - 1, argv + 1);
    fprintf(stderr, "encdec: unknown command \"%s\"\n\n%s", cmd, USAGE);
    return CLI_USAGE_ERR;
}
