/* cli.h - shared pieces of the encdec program (uses only the public header). */
#ifndef ENCDEC_CLI_H
#define ENCDEC_CLI_H

#include "encdec.h"

#define CLI_USAGE_ERR 2

int cli_transcribe(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_translate(int argc, char **argv);   /* generate, a target language required */
int cli_generate_as(int argc, char **argv, int translate);
int cli_stream(int argc, char **argv);
int cli_detect_language(int argc, char **argv);

/* Resolves the model path: -m value, else $ENCDEC_MODEL, else the default
 * model in the cache ($XDG_CACHE_HOME or ~/.cache)/encdec/models/whisper-tiny.en.
 * Returns NULL after printing how to fetch it when nothing is there. */
const char *cli_model_path(const char *given, char *buf, size_t cap);

/* ---- hub.c: models by name from the Hugging Face hub ---- */
/* 1 when name is downloadable: a faster-whisper size name or one of its
 * repositories (repo: that repository, folder: whisper-<size>), or a hub id
 * "owner/name" (folder: name). */
int cli_hub_name(const char *name, char *repo, size_t rcap, char *folder, size_t fcap);
/* Downloads name into root/<folder> (all or nothing); that path in buf, or
 * NULL with one line that says why ($HF_ENDPOINT, $HF_TOKEN, $HF_HUB_OFFLINE). */
const char *cli_hub_download(const char *name, const char *root, char *buf, size_t cap);

/* Parses an integer option value in [lo, hi]; prints an error and returns 0 if invalid. */
/* fprintf(stderr, ...) for messages that may echo what a user passed: one
 * longer than CLI_ERR_MAX bytes keeps its start and its end (the reason). */
#define CLI_ERR_MAX 900
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The first line of this thread's last cli_err message ("encdec: " left off). */
const char *cli_last_err(void);
int cli_parse_int(const char *opt, const char *s, long lo, long hi, int *out);
int cli_parse_double(const char *opt, const char *s, double lo, double hi, double *out);
int cli_parse_kv(const char *s, encdec_kv_mode *out);
const char *cli_kv_name(encdec_kv_mode m);
int cli_default_threads(void);
/* Loads the model, printing an error on failure. */
int cli_check_language_name(const char *lang);
encdec_model *cli_load_model(const char *path, const encdec_model_params *mp, double *load_ms);
/* --compute f32|bf16|int8 and --cross-kv f32|f16|bf16 (message on error). */
int cli_parse_compute(const char *s, encdec_compute *out);
int cli_parse_kvtype(const char *s, encdec_kv_type *out);
const char *cli_kvtype_name(encdec_kv_type t);
#define CLI_PRECISION_HELP \
    "      --compute MODE   weight matrices: f32 (as stored: f32/f16/bf16, f32 math; default),\n" \
    "                       bf16 (bf16 weights and products, f32 sums), int8\n" \
    "                       (int8 weights, per-channel scales, int8 dot products)\n" \
    "      --cross-kv TYPE  cross-attention cache storage: f32 (default), f16 or bf16\n" \
    CLI_ISA_HELP
#define CLI_ISA_HELP \
    "      --isa SET        kernel set: auto (the CPU's best; default), c, avx2, avx512,\n" \
    "                       amx, neon (for tests and comparisons; --version names auto's);\n" \
    "                       SET,-EXT also turns off an extension: avx-vnni, dotprod, bf16\n" \
    CLI_CHECK_HELP
#define CLI_CHECK_HELP \
    "      --no-weight-check  skip the load-time scan of the weights for NaN, Inf and\n" \
    "                       absurd values (a corrupt file; the scan reads the file once)\n" \
    CLI_DEVICE_HELP
#define CLI_DEVICE_HELP \
    "      --device DEV     cpu (default), cuda or cuda:N: an NVIDIA GPU (a build with\n" \
    "                       -DENCDEC_CUDA=ON; every --compute mode); the\n" \
    "                       environment's ENCDEC_DEVICE sets the default\n"
/* Parses --compute / --cross-kv / --isa / --no-weight-check / --no-logit-screen / --device at argv[*i] (value in argv[*i + 1] or after
 * '='): 1 consumed, 0 not one of them, -1 bad value. */
int cli_parse_precision(int argc, char **argv, int *i, encdec_model_params *mp,
                        encdec_kv_type *kv);
int cli_parse_isa(const char *s, encdec_isa *out);
double cli_now_ms(void);
double cli_peak_rss_mb(void);
/* The process's umask (read once). */
unsigned cli_umask(void);
/* A comma list of numbers ("0,30.5,60") into out[cap]; -1 when malformed. */
int cli_parse_list(const char *opt, const char *s, double *out, int cap);

/* Arguments that are not options, anywhere on the line (GNU getopt_long's
 * permutation: `encdec transcribe a.wav -t 2` is -t 2 for a.wav; "--" ends
 * the options):
 *   cli_args p;  cli_args_init(&p, argc);
 *   for (i = 1; i < argc; i++) { if (cli_positional(&p, argc, argv, &i)) continue; ...option... }
 *   first = cli_args_finish(&p, argc, argv);   argv[first, argc): the arguments, in order
 * The option values kept are pointers to argv's strings, which stay. */
typedef struct {
    char **v;
    int n;
} cli_args;
int cli_args_init(cli_args *p, int argc);
/* 1 when argv[*i] is an argument (or "--": all the rest are, *i moved to argc). */
int cli_positional(cli_args *p, int argc, char **argv, int *i);
int cli_args_finish(cli_args *p, int argc, char **argv);
/* openai-whisper's spelling of a long option in encdec's, in place:
 * underscores in the name become dashes (--output_format, --beam_size=5).
 * Its longer names (--beam-size, --temperature-increment-on-fallback) are
 * options of their own beside encdec's (--beam, --temperature-increment),
 * so that an error names the option as it was given. */
void cli_openai_spelling(char *arg);
/* "True"/"False" (openai-whisper's booleans; also yes/no, 1/0, on/off, any
 * case): 1 or 0; -1 for anything else (NULL included). */
int cli_bool_word(const char *s);

/* The Silero VAD's directory: path given, else $ENCDEC_VAD, else the
 * cache's silero-vad-v6 when it is there (NULL when not; buf[cap] holds it). */
const char *cli_vad_path(const char *given, char *buf, size_t cap);
/* The text language identifier's directory (LibreTranslate's /detect):
 * given, else $ENCDEC_LANGID, else the cache's langdetect when it is there. */
const char *cli_langid_path(const char *given, char *buf, size_t cap);
/* The Silero VAD at path (NULL: as cli_vad_path), or NULL with the reason printed. */
encdec_vad *cli_load_vad(const char *path);

/* ---- outputs.c: transcripts as files or on standard output ---- */
typedef struct {
    unsigned formats;            /* bit f: encdec_format f */
    const char *dir;             /* NULL: standard output */
    encdec_format_options fmt;
} cli_outputs;
/* "txt,srt" / "all" -> bits; 0 when a name is unknown. */
int cli_out_parse_formats(const char *list, unsigned *mask);
/* Makes dir if missing and checks it is a writable directory (message on failure). */
int cli_out_check_dir(const char *dir);
/* 0 (message printed) when two of inputs[n] would write the same files of
 * o's directory (a/x.wav and b/x.wav: x.txt). */
int cli_out_check_names(const cli_outputs *o, char **inputs, int n);
/* Every format of o for the input's result: files named after the input,
 * written whole or not at all; 0 on failure (message printed). */
int cli_out_write(const cli_outputs *o, const char *input, const encdec_result *r);

/* ---- progress.c: the progress line and --verbose segments ---- */
typedef struct {
    const char *file;
    int verbose, tty, shown;
    double t0;
} cli_progress;
void cli_progress_init(cli_progress *p, const char *file, int quiet, int verbose);
void cli_progress_cb(double done, double total, void *user);   /* encdec_progress_fn */
int cli_segment_cb(const encdec_segment *g, void *user);       /* encdec_segment_fn */
void cli_progress_done(cli_progress *p);

#endif
