/* transcribe.c - `encdec transcribe`: audio files to text, subtitles or JSON. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *HELP =
    "usage: encdec transcribe [options] AUDIO...\n"
    "\n"
    "Transcribes each audio file (WAV, FLAC, OGG, MP3; m4a, mp4, webm... through FFmpeg;\n"
    "any rate and channel count; \"-\" reads standard input) as openai-whisper's\n"
    "transcribe() does: 30 s windows, each starting\n"
    "where the last complete segment ended, with timestamps, the text so far as the next\n"
    "window's prompt, and a decode that fails (too repetitive, too improbable) tried again\n"
    "at a higher temperature; silent windows are skipped.\n"
    "\n"
    "model and speed:\n"
    "  -m, --model PATH     model directory (Hugging Face safetensors or CTranslate2 /\n"
    "                       faster-whisper), .safetensors file or whisper.cpp ggml-*.bin\n"
    "                       file, or a model of ~/.cache/encdec/models by name (whisper-base,\n"
    "                       faster-whisper's base, large-v3, Systran/faster-whisper-small);\n"
    "                       a size name or hub id not there is downloaded from the Hugging\n"
    "                       Face hub ($HF_ENDPOINT, $HF_TOKEN; $HF_HUB_OFFLINE=1: never)\n"
    "                       default: whisper tiny.en there (or $ENCDEC_MODEL)\n"
    "  -t, --threads N      worker threads, 1..256 (default: CPUs online, at most 8)\n"
    "  -P, --parallel N     with several files: decode up to N at once, 1..256 (default 4),\n"
    "                       every decoder step one pass for all of them (the engine); results\n"
    "                       are printed in the files' order. 1: one after the other\n"
    CLI_PRECISION_HELP
    "      --kv-cache MODE  full: self cache + cross K/V computed once per window (default)\n"
    "                       self: cross K/V recomputed every step; none: no cache at all.\n"
    "                       All three give the same tokens; self/none exist to prove it\n"
    "                       and to measure what the caches save.\n"
    "\n"
    "what to decode:\n"
    "  -l, --language LANG  spoken language, a code (de) or name (German); default: detected\n"
    "                       from the first 30 s on multilingual models, en otherwise\n"
    "      --task TASK      transcribe (default) or translate (to English; multilingual models)\n"
    "      --translate      the same as --task translate\n"
    "      --language-detection-segments N  30 s windows detection may read (default 1):\n"
    "                       the first whose top language is above the threshold decides,\n"
    "                       else the language most of them put first\n"
    "      --language-detection-threshold X  that threshold, 0..1 (default 0.5)\n"
    "      --multilingual   every window detects its own language (speech that switches)\n"
    "      --detect-language  print the language and its probability (\"en 0.9876\"), no\n"
    "                       transcription\n"
    "      --no-timestamps  no timestamp tokens, one segment a window; windows follow each\n"
    "                       other (with --word-timestamps and without --batch-size the\n"
    "                       next starts at the last word's end, as in openai-whisper)\n"
    "      --min-text-rate X  with --no-timestamps: a window of 5 s or more decoded to fewer\n"
    "                       than X text tokens a second stopped early (Whisper can end its\n"
    "                       text at a pause) and is decoded again with timestamps, the rest\n"
    "                       of its audio after it; default 1 with --batch-size, else 0 (off,\n"
    "                       as openai-whisper)\n"
    "      --word-timestamps  times of each word (cross-attention alignment + DTW)\n"
    "      --initial-prompt TEXT  text the first window continues (names, spelling, style)\n"
    "      --prefix TEXT    text the transcript starts with (the first window; after <|0.00|>\n"
    "                       with timestamps, as faster-whisper places it)\n"
    "      --hotwords TEXT  words to favour (faster-whisper's hotwords): in every window's\n"
    "                       prompt before the previous text, but the one with --prefix\n"
    "      --clip-timestamps LIST  start,end,start,... in seconds: only these parts (an odd\n"
    "                       count ends at the end of the audio)\n"
    "      --no-condition-on-previous-text  each window decoded without the text before it\n"
    "\n"
    "decoding:\n"
    "      --beam N         beam search with N beams at temperature 0, 1..16 (default 1: greedy)\n"
    "      --patience X     beam search: wait for round(N * X) finished hypotheses (default 1)\n"
    "      --best-of N      candidates sampled at temperature > 0, 1..16 (default 5)\n"
    "      --temperature T  the first temperature, 0..1 (default 0)\n"
    "      --temperature-increment X  added on each failed decode, up to 1 (default 0.2;\n"
    "                       0: no fallback)\n"
    "      --compression-ratio-threshold X  a decode compressing better failed (default 2.4)\n"
    "      --logprob-threshold X  one with a lower average log-probability failed (default -1)\n"
    "      --no-speech-threshold X  a window with more no-speech probability and a failed\n"
    "                       log-probability is silence (default 0.6); \"none\" turns any of\n"
    "                       the three thresholds off\n"
    "      --no-loop-detection  decode repeating windows to the end before judging them\n"
    "                       (by default a decode that starts looping stops where that\n"
    "                       cannot change the output: the same text, sooner)\n"
    "      --keep-last-attempt  a window that fails at every temperature keeps its last\n"
    "                       decode (openai-whisper); by default the best one (faster-\n"
    "                       whisper: the highest average log-probability, preferring\n"
    "                       decodes under the compression threshold); JSON marks such\n"
    "                       segments \"all_temperatures_failed\"\n"
    "      --vad            decode only the speech Silero VAD finds (faster-whisper's\n"
    "                       vad_filter: its spans put end to end, times mapped back;\n"
    "                       scripts/fetch-model.sh vad installs the model); its options,\n"
    "                       faster-whisper's VadOptions: --vad-threshold X (0.5),\n"
    "                       --vad-neg-threshold X (threshold - 0.15), --vad-min-speech-ms N\n"
    "                       (0), --vad-max-speech-s X (no limit), --vad-min-silence-ms N\n"
    "                       (2000), --vad-pad-ms N (400); --vad-model DIR (default:\n"
    "                       silero-vad-v6 in the model cache)\n"
    "      --batch-size N   batched long-form (faster-whisper's BatchedInferencePipeline):\n"
    "                       the speech (--vad, implied; its --vad-min-silence-ms 160 unless\n"
    "                       given) cut into chunks of up to 30 s, N decoded at once, every\n"
    "                       decoder step one pass for all; each chunk transcribed as it\n"
    "                       would be alone (fallback, words...), no text carried across\n"
    "                       chunks (with --no-timestamps one decode a chunk); 1..256\n"
    "      --chunk-length S seconds of audio per window, 1..30 (default 30; the window\n"
    "                       padded to 30 s); with --batch-size the longest chunk\n"
    "      --repetition-penalty X  a token already generated in a decode has its logit\n"
    "                       divided by X (multiplied when negative); default 1: off\n"
    "      --no-repeat-ngram-size N  a decode never repeats an N-gram of its tokens (0: off)\n"
    "      --hallucination-silence-threshold S  with --word-timestamps: skip the silence\n"
    "                       (over S seconds) around a segment whose words look made up, and\n"
    "                       resume after it (openai-whisper's option)\n"
    "      --silence-threshold DB  a window quieter than DB dBFS (RMS; default -60) whose\n"
    "                       no-speech probability is high is skipped without decoding;\n"
    "                       \"none\": only openai-whisper's rule\n"
    "      --seed N         sampling seed (default 0)\n"
    "      --max-tokens N   tokens per window, 1..448 (default 224)\n"
    "      --max-duration S reject audio longer than S seconds (default: no limit)\n"
    "      --strict         a file that ends before its header says (cut, still being\n"
    "                       written) is an error (default: a warning, and what is there\n"
    "                       is transcribed)\n"
    "\n"
    "output:\n"
    "  -f, --output-format LIST  txt, srt, vtt, tsv, json, a comma list or all: with\n"
    "                       --output-dir, files named after the input (talk.srt); without it,\n"
    "                       one format on standard output (default: the text)\n"
    "  -o, --output-dir DIR write files there (made if missing); -f defaults to all\n"
    "      --max-line-width N    subtitles from word times: characters per line\n"
    "      --max-line-count N    lines per subtitle\n"
    "      --max-words-per-line N\n"
    "      --highlight-words     underline each word of a subtitle as it is spoken\n"
    "      --json           one JSON object per file on standard output: openai-whisper's\n"
    "                       result (text, segments, language) plus language probabilities,\n"
    "                       settings and timings\n"
    "  -v, --verbose        print each segment with its times as soon as it is final\n"
    "  -q, --quiet          no progress line (shown only when stderr is a terminal)\n"
    "  -h, --help           this help\n"
    "\n"
    "Options and files may come in any order (\"--\" ends the options); openai-whisper's\n"
    "spellings work too (--beam_size 5, --word_timestamps True, -l auto: docs/CLI.md).\n"
    "\n"
    "Output: the transcript (leading space trimmed); with several files, \"FILE: text\"\n"
    "per line. Exit status 0 on success, 1 if any file failed, 2 on a usage error.\n";

typedef struct {
    const char *model;
    int threads, json, verbose, quiet;
    int parallel;             /* several files: requests decoded at once (the engine) */
    double max_duration;
    int strict;               /* a file shorter than its header says is an error */
    encdec_model_params mp;   /* compute mode, kernel set */
    const char *isa_running;  /* the kernel set the loaded model runs */
    encdec_kv_type cross_kv;
    encdec_transcribe_params tp;
    double clips[512];
    cli_outputs out;
    const char *format_list;
    int vad;                  /* --vad: decode only the speech Silero VAD finds */
    int batch;                /* --batch-size: chunks decoded at once (0: sequential) */
    encdec_batch_params bp;
    const char *vad_model;    /* its directory (default: the cache's silero-vad-v6) */
} opts;

/* Option tables: name, field, range. */
typedef struct {
    const char *name;
    int *dst;
    long lo, hi;
} int_opt;

typedef struct {
    const char *name;
    float *dst;
    double lo, hi;
    int none_ok;   /* "none": NAN */
} float_opt;

static int parse_float_opt(const float_opt *f, const char *v) {
    if (f->none_ok && v && !strcmp(v, "none")) {
        *f->dst = NAN;
        return 1;
    }
    double d;
    if (!cli_parse_double(f->name, v, f->lo, f->hi, &d)) return 0;
    *f->dst = (float)d;
    return 1;
}

/* One option at argv[*i] (value after it or after '='): 1 taken, 0 not
 * ours, -1 bad (message printed), 2 help printed. */
static int parse_one(opts *o, int argc, char **argv, int *i) {
    char name[64];
    const char *a = argv[*i], *eq = strchr(a, '='), *v;
    if (eq && a[0] == '-' && a[1] == '-' && (size_t)(eq - a) < sizeof name) {
        memcpy(name, a, (size_t)(eq - a));
        name[eq - a] = 0;
        a = name;
        v = eq + 1;
    } else {
        v = *i + 1 < argc ? argv[*i + 1] : NULL;
        eq = NULL;
    }
#define VALUE() (eq ? 0 : ((*i)++, 0))
    encdec_transcribe_params *p = &o->tp;
    const int_opt ints[] = {
        {"--beam", &p->beam_size, 1, 16}, {"--beam-size", &p->beam_size, 1, 16},
        {"--best-of", &p->best_of, 1, 16},
        {"--max-tokens", &p->max_tokens, 1, 448},
        {"--max-line-width", &o->out.fmt.max_line_width, 1, 100000},
        {"--max-line-count", &o->out.fmt.max_line_count, 1, 100000},
        {"--max-words-per-line", &o->out.fmt.max_words_per_line, 1, 100000},
        {"--vad-min-speech-ms", &p->vad_params.min_speech_duration_ms, 0, 3600000},
        {"--vad-min-silence-ms", &p->vad_params.min_silence_duration_ms, 0, 3600000},
        {"--vad-pad-ms", &p->vad_params.speech_pad_ms, 0, 60000},
        {"--no-repeat-ngram-size", &p->no_repeat_ngram_size, 0, 448},
        {"--language-detection-segments", &p->language_detection_segments, 1, 100000}};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (!strcmp(a, ints[k].name)) {
            if (!cli_parse_int(a, v, ints[k].lo, ints[k].hi, ints[k].dst)) return -1;
            VALUE();
            return 1;
        }
    const float_opt floats[] = {
        {"--patience", &p->patience, 0.001, 64, 0}, {"--temperature", &p->temperature, 0, 1, 0},
        {"--temperature-increment", &p->temperature_increment, 0, 1, 0},
        {"--temperature-increment-on-fallback", &p->temperature_increment, 0, 1, 0},
        {"--compression-ratio-threshold", &p->compression_ratio_threshold, -1e9, 1e9, 1},
        {"--logprob-threshold", &p->logprob_threshold, -1e9, 1e9, 1},
        {"--no-speech-threshold", &p->no_speech_threshold, -1e9, 1e9, 1},
        {"--silence-threshold", &p->silence_threshold_db, -200, 0, 1},
        {"--vad-threshold", &p->vad_params.threshold, 0.001, 0.999, 0},
        {"--vad-neg-threshold", &p->vad_params.neg_threshold, 0.001, 0.999, 0},
        {"--vad-max-speech-s", &p->vad_params.max_speech_duration_s, 0.1, 1e9, 0},
        {"--repetition-penalty", &p->repetition_penalty, 0.001, 1000, 0},
        {"--hallucination-silence-threshold", &p->hallucination_silence_threshold, 0, 1e6, 1},
        {"--language-detection-threshold", &p->language_detection_threshold, 0, 1, 0},
        {"--min-text-rate", &p->min_text_rate, 0, 100, 0}};
    for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++)
        if (!strcmp(a, floats[k].name)) {
            if (!parse_float_opt(&floats[k], v)) return -1;
            VALUE();
            return 1;
        }
    const struct { const char *name; int *dst, val; } flags[] = {
        {"--json", &o->json, 1}, {"--translate", &p->translate, 1},
        {"--no-timestamps", &p->timestamps, 0}, {"--word-timestamps", &p->word_timestamps, 1},
        {"--no-condition-on-previous-text", &p->condition_on_previous_text, 0},
        {"--no-loop-detection", &p->loop_detection, 0},
        {"--keep-last-attempt", &p->fallback_keep_last, 1}, {"--vad", &o->vad, 1},
        {"--multilingual", &p->multilingual, 1},
        {"--detect-language", &p->detect_language_only, 1},
        {"--highlight-words", &o->out.fmt.highlight_words, 1},
        {"-v", &o->verbose, 1}, {"--verbose", &o->verbose, 1},
        {"-q", &o->quiet, 1}, {"--quiet", &o->quiet, 1}, {"--strict", &o->strict, 1}};
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (!strcmp(a, flags[k].name)) {
            /* openai-whisper's form: --word_timestamps True */
            int b = cli_bool_word(v);
            if (eq && b < 0) {
                cli_err("encdec: %s=%s: expected True or False\n", a, v);
                return -1;
            }
            *flags[k].dst = b == 0 ? !flags[k].val : flags[k].val;
            if (b >= 0) VALUE();
            return 1;
        }
    if (!strcmp(a, "--condition-on-previous-text") || !strcmp(a, "--fp16")) {   /* openai-whisper */
        int b = cli_bool_word(v);
        if (b < 0) {
            cli_err("encdec: %s expects True or False, got \"%s\"\n", a, v ? v : "");
            return -1;
        }
        if (a[2] == 'c') p->condition_on_previous_text = b;   /* --fp16: the precision is --compute */
        VALUE();
        return 1;
    }
    const struct { const char *s, *l, **dst, *what; } strs[] = {
        {"-m", "--model", &o->model, "a path"},
        {"-l", "--language", &p->language, "a language code or name"},
        {NULL, "--initial-prompt", &p->initial_prompt, "a text"},
        {NULL, "--prefix", &p->prefix, "a text"},
        {NULL, "--hotwords", &p->hotwords, "a text"},
        {"-o", "--output-dir", &o->out.dir, "a directory"},
        {NULL, "--vad-model", &o->vad_model, "a directory"},
        {"-f", "--output-format", &o->format_list, "txt, srt, vtt, tsv, json, a list or all"}};
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
        if ((strs[k].s && !strcmp(a, strs[k].s)) || !strcmp(a, strs[k].l)) {
            if (!v || !*v) {
                cli_err("encdec: %s needs %s\n", a, strs[k].what);
                return -1;
            }
            *strs[k].dst = v;
            if (strs[k].dst == &p->language && !strcasecmp(v, "auto")) p->language = NULL;
            VALUE();
            return 1;
        }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        fputs(HELP, stdout);
        return 2;
    }
    if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        if (!cli_parse_int(a, v, 1, 256, &o->threads)) return -1;
    } else if (!strcmp(a, "-P") || !strcmp(a, "--parallel")) {
        if (!cli_parse_int(a, v, 1, 256, &o->parallel)) return -1;
    } else if (!strcmp(a, "--batch-size")) {
        if (!cli_parse_int(a, v, 1, 256, &o->batch)) return -1;
    } else if (!strcmp(a, "--chunk-length")) {
        double d;
        if (!cli_parse_double(a, v, 1, 30, &d)) return -1;
        o->bp.chunk_length = o->tp.chunk_length = (float)d;
    } else if (!strcmp(a, "--kv-cache")) {
        if (!cli_parse_kv(v, &p->kv_mode)) return -1;
    } else if (!strcmp(a, "--task")) {
        if (!v || (strcmp(v, "transcribe") && strcmp(v, "translate"))) {
            cli_err("encdec: --task expects transcribe or translate, got \"%s\"\n", v ? v : "");
            return -1;
        }
        p->translate = !strcmp(v, "translate");
    } else if (!strcmp(a, "--seed")) {
        int seed;
        if (!cli_parse_int(a, v, 0, 2147483647, &seed)) return -1;
        p->seed = (uint64_t)seed;
    } else if (!strcmp(a, "--max-duration")) {
        if (!cli_parse_double(a, v, 0.001, 1e9, &o->max_duration)) return -1;
    } else if (!strcmp(a, "--clip-timestamps")) {
        int n = cli_parse_list(a, v, o->clips, 512);
        if (n < 0) return -1;
        p->clip_timestamps = o->clips;
        p->n_clip_timestamps = n;
    } else {
        return 0;
    }
    VALUE();
    return 1;
#undef VALUE
}

static int parse(int argc, char **argv, opts *o, int *first_file) {
    memset(o, 0, sizeof *o);
    o->mp = encdec_model_default_params();
    o->threads = cli_default_threads();
    o->parallel = 4;
    o->tp = encdec_transcribe_default_params();
    o->bp = encdec_batch_default_params();
    o->tp.vad_params.min_silence_duration_ms = -1;   /* not given: set below */
    o->tp.word_timestamps = -1;                      /* not given: set below */
    o->tp.min_text_rate = -1;                        /* not given: set below */
    cli_args files;
    if (!cli_args_init(&files, argc)) return -1;
    for (int i = 1; i < argc; i++) {
        if (cli_positional(&files, argc, argv, &i)) continue;
        cli_openai_spelling(argv[i]);
        const char *a = argv[i];
        int pr = cli_parse_precision(argc, argv, &i, &o->mp, &o->cross_kv);
        int r = pr ? 1 : parse_one(o, argc, argv, &i);
        if (pr < 0 || r < 0 || r == 2 || r == 0) {
            if (r == 0) cli_err("encdec: unknown option \"%s\" (see encdec transcribe --help)\n", a);
            free(files.v);
            return pr < 0 || r != 2 ? -1 : 0;
        }
    }
    int i = cli_args_finish(&files, argc, argv);
    if (i >= argc) {
        cli_err("encdec: no audio file given (see encdec transcribe --help)\n");
        return -1;
    }
    if (o->tp.vad_params.min_silence_duration_ms < 0)   /* faster-whisper's two defaults */
        o->tp.vad_params.min_silence_duration_ms = o->batch ? 160 : 2000;
    const encdec_format_options *fo = &o->out.fmt;
    const char *line_opt = fo->max_line_width ? "--max-line-width" :
                           fo->max_line_count ? "--max-line-count" :
                           fo->max_words_per_line ? "--max-words-per-line" :
                           fo->highlight_words ? "--highlight-words" : NULL;
    if (line_opt && o->tp.word_timestamps == 0)
        cli_err("encdec: warning: %s lays subtitles out from word times; it is ignored with "
                "--word-timestamps False\n", line_opt);
    if (o->tp.word_timestamps < 0) o->tp.word_timestamps = line_opt != NULL;   /* what it needs */
    if (o->tp.hallucination_silence_threshold >= 0 && !o->tp.word_timestamps)
        cli_err("encdec: warning: --hallucination-silence-threshold works from word times; "
                "it is ignored without --word-timestamps\n");
    if (o->batch && o->tp.detect_language_only) {
        cli_err("encdec: --detect-language reads the recording's start; it does not go with "
                "--batch-size\n");
        return -1;
    }
    if (o->tp.min_text_rate < 0) o->tp.min_text_rate = o->batch ? 1.0f : 0.0f;
    if (o->batch) {
        o->vad = 1;
        o->bp.batch_size = o->batch;
        if (o->tp.kv_mode != ENCDEC_KV_FULL) {
            cli_err("encdec: --batch-size decodes with the full cache (--kv-cache full)\n");
            return -1;
        }
    }
    if (o->format_list && !cli_out_parse_formats(o->format_list, &o->out.formats)) {
        cli_err("encdec: --output-format expects txt, srt, vtt, tsv, json, a comma list "
                "of them or all, got \"%s\"\n", o->format_list);
        return -1;
    }
    if (o->out.dir && !o->format_list) cli_out_parse_formats("all", &o->out.formats);
    if (!o->out.dir && o->out.formats && (o->out.formats & (o->out.formats - 1))) {
        cli_err("encdec: several output formats need --output-dir\n");
        return -1;
    }
    if (o->json && o->out.formats && !o->out.dir) {
        cli_err("encdec: --json and --output-format both write to standard output; "
                "give --output-dir for the files\n");
        return -1;
    }
    int stdin_uses = 0;
    for (int k = i; k < argc; k++) stdin_uses += !strcmp(argv[k], "-");
    if (stdin_uses > 1) {
        cli_err("encdec: standard input (\"-\") can be read once\n");
        return -1;
    }
    *first_file = i;
    return 1;
}

/* The language argument against the model's languages: a usage error
 * that lists them. */
static int check_language(const encdec_model *m, const char *lang, int translate) {
    if (translate && !encdec_model_language(m, 1)) {
        cli_err("encdec: this model is English-only; it cannot translate (--task "
                "translate needs a multilingual model)\n");
        return 0;
    }
    if (!lang || encdec_model_find_language(m, lang) >= 0) return 1;
    if (!encdec_model_language(m, 1)) {
        cli_err("encdec: this model is English-only; -l %.40s is not available (use a "
                "multilingual model)\n", lang);
        return 0;
    }
    cli_err("encdec: unknown language \"%.40s\" for this model; it knows:", lang);
    for (int i = 0; encdec_model_language(m, i); i++)
        fprintf(stderr, "%s %s", i ? "," : "", encdec_model_language(m, i));
    fputc('\n', stderr);
    return 0;
}

/* openai-whisper's result from the library, plus what --json adds. */
static void print_json(const char *file, const encdec_result *r, const opts *o, double load_ms) {
    char *s = NULL;
    if (encdec_result_format(r, ENCDEC_FORMAT_JSON, NULL, &s)) return;
    cJSON *j = cJSON_Parse(s);
    encdec_free(s);
    if (!j) return;
    cJSON_AddStringToObject(j, "file", file);
    cJSON_AddNumberToObject(j, "language_probability", encdec_result_language_probability(r));
    cJSON *lp = cJSON_AddObjectToObject(j, "language_probs");
    for (int i = 0; i < encdec_result_n_language_probs(r) && i < 5; i++) {
        const char *code;
        float p;
        encdec_result_language_prob(r, i, &code, &p);
        cJSON_AddNumberToObject(lp, code, p);
    }
    const encdec_timings *tm = encdec_result_timings(r);
    cJSON *t = cJSON_AddObjectToObject(j, "timings");
    cJSON_AddNumberToObject(t, "load_ms", load_ms);
    cJSON_AddNumberToObject(t, "mel_ms", tm->mel_ms);
    cJSON_AddNumberToObject(t, "encoder_ms", tm->encoder_ms);
    cJSON_AddNumberToObject(t, "decode_ms", tm->decode_ms);
    cJSON_AddNumberToObject(t, "align_ms", tm->align_ms);
    cJSON_AddNumberToObject(t, "audio_seconds", tm->audio_seconds);
    cJSON_AddNumberToObject(t, "n_windows", tm->n_windows);
    cJSON_AddNumberToObject(t, "n_encodes", tm->n_encodes);
    cJSON_AddNumberToObject(t, "n_decodes", tm->n_decodes);
    cJSON_AddNumberToObject(t, "n_fallbacks", tm->n_fallbacks);
    cJSON_AddNumberToObject(t, "n_loops", tm->n_loops);
    cJSON_AddNumberToObject(t, "n_tokens", tm->n_tokens);
    cJSON_AddNumberToObject(t, "n_steps", tm->n_steps);
    if (o->batch) cJSON_AddNumberToObject(j, "batch_size", o->batch);
    if (o->vad) {
        cJSON_AddNumberToObject(t, "speech_seconds", tm->speech_seconds);
        cJSON_AddNumberToObject(t, "vad_ms", tm->vad_ms);
    }
    cJSON_AddStringToObject(j, "kv_cache", cli_kv_name(o->tp.kv_mode));
    cJSON_AddNumberToObject(j, "beam", o->tp.beam_size);
    cJSON_AddStringToObject(j, "compute", o->mp.compute == ENCDEC_COMPUTE_BF16 ? "bf16" :
                            o->mp.compute == ENCDEC_COMPUTE_INT8 ? "int8" : "f32");
    if (o->isa_running) cJSON_AddStringToObject(j, "isa", o->isa_running);
    cJSON_AddStringToObject(j, "cross_kv", cli_kvtype_name(o->cross_kv));
    cJSON_AddNumberToObject(j, "threads", o->threads);
    char *out = cJSON_PrintUnformatted(j);
    if (out) puts(out);
    free(out);
    cJSON_Delete(j);
}

/* Every audio path can be read (before the model loads): missing, unreadable,
 * directories, block devices, empty files and a terminal as "-" reported. */
static int check_inputs(int argc, char **argv, int first, int *bad) {
    int ok = 0;
    for (int i = first; i < argc; i++) {
        struct stat sb;
        const char *why = NULL;
        encdec_status st = ENCDEC_ERR_IO;
        if (!strcmp(argv[i], "-")) {
            if (isatty(STDIN_FILENO)) why = "standard input is a terminal, not audio (pipe a file into it)";
        } else if (stat(argv[i], &sb) != 0 || access(argv[i], R_OK) != 0) {
            why = strerror(errno);
        } else if (S_ISDIR(sb.st_mode)) {
            why = "is a directory, not an audio file";
        } else if (S_ISBLK(sb.st_mode)) {
            why = "is a block device, not an audio file";
        } else if (S_ISREG(sb.st_mode) && sb.st_size == 0) {
            why = "the file is empty (0 bytes)";
            st = ENCDEC_ERR_AUDIO;
        }
        bad[i] = why != NULL;
        if (why) cli_err("encdec: %s: %s: %s\n", argv[i], encdec_status_str(st), why);
        else ok++;
    }
    return ok;
}

/* A file's outcome: the warning or error, then its outputs. 1: it succeeded. */
static int report_file(const char *file, encdec_status st, encdec_result *r,
                       const encdec_audio_info *ai, const opts *o, int many, double load_ms);

static int run_file(encdec_session *s, const char *file, const opts *o, int many, double load_ms) {
    encdec_result *r = NULL;
    cli_progress pg;
    cli_progress_init(&pg, file, o->quiet, o->verbose);
    encdec_transcribe_params tp = o->tp;
    tp.on_progress = cli_progress_cb;
    tp.on_segment = cli_segment_cb;
    tp.user = &pg;
    encdec_audio_params ap = {.max_seconds = o->max_duration, .strict = o->strict};
    encdec_audio_info ai;
    /* streamed: memory is bounded by the window, not the recording */
    encdec_status st = encdec_transcribe_file(s, file, &ap, &tp, &r, &ai);
    cli_progress_done(&pg);
    return report_file(file, st, r, &ai, o, many, load_ms);
}

/* Batched long-form: each file's chunks through one engine, the files one
 * after the other (segments and progress on this thread). */
static int run_batched(const encdec_model *m, char **files, const int *bad, int n, const opts *o,
                       double load_ms) {
    encdec_engine_params ep = {o->threads, o->batch, o->cross_kv};
    encdec_engine *e;
    encdec_status st = encdec_engine_new(m, &ep, &e);
    if (st) {
        cli_err("encdec: %s: %s\n", encdec_status_str(st), encdec_last_error());
        return 0;
    }
    int ok = 1;
    encdec_audio_params ap = {.max_seconds = o->max_duration, .strict = o->strict};
    for (int i = 0; i < n; i++) {
        if (bad[i]) {
            ok = 0;
            continue;
        }
        cli_progress pg;
        cli_progress_init(&pg, files[i], o->quiet, o->verbose);
        encdec_transcribe_params tp = o->tp;
        tp.on_progress = cli_progress_cb;
        tp.on_segment = cli_segment_cb;
        tp.user = &pg;
        encdec_result *r = NULL;
        encdec_audio_info ai;
        st = encdec_engine_transcribe_batched_file(e, files[i], &ap, &tp, &o->bp, &r, &ai);
        cli_progress_done(&pg);
        ok &= report_file(files[i], st, r, &ai, o, n > 1, load_ms);
    }
    encdec_engine_free(e);
    return ok;
}

/* Several files through the engine: all submitted, each decoded as a place
 * frees up (o->parallel at once), reported in the files' order. */
static int run_engine(const encdec_model *m, char **files, const int *bad, int n, const opts *o,
                      double load_ms) {
    encdec_engine_params ep = {o->threads, o->parallel, o->cross_kv};
    encdec_engine *e;
    encdec_status st = encdec_engine_new(m, &ep, &e);
    if (st) {
        cli_err("encdec: %s: %s\n", encdec_status_str(st), encdec_last_error());
        return 0;
    }
    encdec_request **q = calloc((size_t)n, sizeof *q);
    int ok = q != NULL;
    encdec_audio_params ap = {.max_seconds = o->max_duration, .strict = o->strict};
    for (int i = 0; q && i < n; i++) {
        if (bad[i]) continue;
        st = encdec_engine_transcribe_file(e, files[i], &ap, &o->tp, &q[i]);
        if (st) ok &= report_file(files[i], st, NULL, NULL, o, 1, load_ms);
    }
    for (int i = 0; q && i < n; i++) {
        if (bad[i]) ok = 0;
        if (!q[i]) continue;
        encdec_result *r = NULL;
        encdec_audio_info ai;
        st = encdec_request_wait(q[i], &r);
        encdec_request_audio_info(q[i], &ai);
        ok &= report_file(files[i], st, r, &ai, o, 1, load_ms);
        encdec_request_free(q[i]);
    }
    free(q);
    encdec_engine_free(e);
    return ok;
}

static int report_file(const char *file, encdec_status st, encdec_result *r,
                       const encdec_audio_info *ai, const opts *o, int many, double load_ms) {
    if (!st && ai && ai->truncated)
        cli_err("encdec: warning: %s: the file ends early: it holds %.2f s of the %.2f s "
                "its header promises; transcribed what is there (--strict: an error)\n",
                strcmp(file, "-") ? file : "standard input", ai->seconds, ai->expected_seconds);
    int ok = !st;
    if (st) {
        /* the detail usually starts with the path already: say it once */
        const char *detail = encdec_last_error(), *name = strcmp(file, "-") ? file : "standard input";
        size_t pl = strlen(name);
        if (!strncmp(detail, name, pl) && !strncmp(detail + pl, ": ", 2)) detail += pl + 2;
        cli_err("encdec: %s: %s: %s\n", name, encdec_status_str(st), detail);
    } else {
        if (o->json) print_json(file, r, o, load_ms);
        if (o->out.formats) ok = cli_out_write(&o->out, file, r);
        if (!o->json && o->tp.detect_language_only) {   /* whisper.cpp's -dl: the language */
            if (many) printf("%s: ", file);
            printf("%s %.4f\n", encdec_result_language(r), encdec_result_language_probability(r));
        } else if (!o->json && !o->out.formats && !o->verbose) {
            const char *text = encdec_result_text(r);
            while (*text == ' ') text++;
            if (many) printf("%s: %s\n", file, text);
            else printf("%s\n", text);
        }
    }
    fflush(stdout);
    encdec_result_free(r);
    return ok;
}

int cli_transcribe(int argc, char **argv) {
    opts o;
    int first;
    int rc = parse(argc, argv, &o, &first);
    if (rc <= 0) return rc == 0 ? 0 : CLI_USAGE_ERR;
    if (o.out.dir && !cli_out_check_dir(o.out.dir)) return CLI_USAGE_ERR;
    if (!cli_out_check_names(&o.out, argv + first, argc - first)) return CLI_USAGE_ERR;
    if (!cli_check_language_name(o.tp.language)) return CLI_USAGE_ERR;
    int *bad = calloc((size_t)argc, sizeof *bad), failed = 0;
    if (!bad) return 1;
    if (check_inputs(argc, argv, first, bad) == 0) {
        free(bad);
        return 1;
    }
    char buf[4096];
    const char *path = cli_model_path(o.model, buf, sizeof buf);
    double load_ms;
    encdec_model *m = path ? cli_load_model(path, &o.mp, &load_ms) : NULL;
    if (!m) {
        free(bad);
        return 1;
    }
    encdec_model_info mi;
    encdec_model_get_info(m, &mi);
    o.isa_running = mi.isa;
    if (!check_language(m, o.tp.language, o.tp.translate)) {
        encdec_model_free(m);
        free(bad);
        return CLI_USAGE_ERR;
    }
    encdec_vad *vad = NULL;
    if (o.vad && !(vad = cli_load_vad(o.vad_model))) {
        encdec_model_free(m);
        free(bad);
        return 1;
    }
    o.tp.vad = vad;
    int n_files = argc - first;
    if (o.batch) {
        failed = !run_batched(m, argv + first, bad + first, n_files, &o, load_ms);
        free(bad);
        encdec_vad_free(vad);
        encdec_model_free(m);
        return failed;
    }
    if (n_files > 1 && o.parallel > 1 && !o.verbose && o.tp.kv_mode == ENCDEC_KV_FULL) {
        failed = !run_engine(m, argv + first, bad + first, n_files, &o, load_ms);
        free(bad);
        encdec_vad_free(vad);
        encdec_model_free(m);
        return failed;
    }
    encdec_session *s = NULL;
    encdec_session_params sp = {o.threads, o.cross_kv};
    encdec_status st = encdec_session_new(m, &sp, &s);
    if (st) {
        cli_err("encdec: %s: %s\n", encdec_status_str(st), encdec_last_error());
        encdec_vad_free(vad);
        encdec_model_free(m);
        free(bad);
        return 1;
    }
    int many = argc - first > 1;
    for (int i = first; i < argc; i++) {
        if (bad[i]) {
            failed = 1;
            continue;
        }
        failed |= !run_file(s, argv[i], &o, many, load_ms);
    }
    free(bad);
    encdec_session_free(s);
    encdec_vad_free(vad);
    encdec_model_free(m);
    return failed;
}
