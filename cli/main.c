/* main.c - the encdec program: dispatches to its commands. */
#include "cli.h"
#include "../server/server.h"

#include <stdio.h>
#include <string.h>

static const char *USAGE =
    "usage: encdec <command> [options]\n"
    "\n"
    "encdec runs encoder-decoder transformers (Whisper; T5, Flan-T5, mT5, umT5; BART,\n"
    "mBART, Marian, M2M100, NLLB, Pegasus) on the CPU (Whisper also on an NVIDIA GPU in\n"
    "a build with CUDA: --device), with a static self-attention cache and a\n"
    "cross-attention cache computed once per input.\n"
    "\n"
    "commands:\n"
    "  transcribe [options] AUDIO...   speech to text (WAV, FLAC, OGG, MP3, m4a...)\n"
    "  generate -m MODEL [options] [TEXT...]\n"
    "                                  text to text (T5 and BART families); inputs\n"
    "                                  from stdin without TEXT, one per line\n"
    "  translate -m MODEL --tgt-lang CODE [options] [TEXT...]\n"
    "                                  generate with languages (NLLB, M2M100, mBART,\n"
    "                                  Marian); --list-languages lists the codes\n"
    "  bench [options] AUDIO           time load, mel, encoder and decoding per cache mode\n"
    "  stream [options] AUDIO|-        live transcription: text as the audio arrives\n"
    "                                  (raw PCM from standard input, or a file)\n"
    "  serve [options]                 an OpenAI-compatible HTTP server (requests share\n"
    "                                  the decode steps)\n"
    "  detect-language [options] [TEXT...]\n"
    "                                  which language a text is in (langdetect's\n"
    "                                  profiles, or lexilang's words with --words)\n"
    "\n"
    "  encdec --help, encdec COMMAND --help, encdec --version\n"
    "\n"
    "The default model for transcribe and bench is whisper tiny.en in\n"
    "~/.cache/encdec/models/whisper-tiny.en ($XDG_CACHE_HOME is honoured; $ENCDEC_MODEL\n"
    "overrides it); scripts/fetch-model.sh installs it.\n";

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
        printf("%s\n", encdec_build_info());
        return 0;
    }
    if (!strcmp(cmd, "transcribe")) return cli_transcribe(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cli_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "generate")) return cli_generate(argc - 1, argv + 1);
    if (!strcmp(cmd, "translate")) return cli_translate(argc - 1, argv + 1);
    if (!strcmp(cmd, "stream")) return cli_stream(argc - 1, argv + 1);
    if (!strcmp(cmd, "detect-language")) return cli_detect_language(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return srv_main(argc - 1, argv + 1);
    fprintf(stderr, "encdec: unknown command \"%.200s\"\n\n%s", cmd, USAGE);
    return CLI_USAGE_ERR;
}
