/* transcribe.c - `encdec transcribe`: audio files to text or JSON. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *HELP =
    "usage: encdec transcribe [options] AUDIO...\n"
    "\n"
    "Transcribes each audio file (WAV, FLAC, OGG, MP3; any rate and channel count)\n"
    "with greedy decoding or beam search. Audio longer than 30 s is cut into consecutive 30 s windows;\n"
    "a window of digital silence (every sample 0) is skipped, not decoded.\n"
    "\n"
    "options:\n"
    "  -m, --model PATH     model directory (Hugging Face safetensors or CTranslate2 /\n"
    "                       faster-whisper) or .safetensors file; default: whisper tiny.en\n"
    "                       from ~/.cache/encdec/models (or $ENCDEC_MODEL)\n"
    "  -t, --threads N      worker threads, 1..256 (default: CPUs online, at most 8)\n"
    "  -l, --language LANG  spoken language for multilingual models (default en)\n"
    "      --translate      translate to English (multilingual models)\n"
    "      --kv-cache MODE  full: self cache + cross K/V computed once per window (default)\n"
    "                       self: cross K/V recomputed every step; none: no cache at all.\n"
    "                       All three give the same tokens; self/none exist to prove it\n"
    "                       and to measure what the caches save.\n"
CLI_PRECISION_HELP
    "      --beam N         beam search with N beams, 1..16 (default 1: greedy); the\n"
    "                       best hypothesis of each window (Hugging Face's rules)\n"
    "      --max-tokens N   tokens generated per 30 s window, 1..448 (default: no limit\n"
    "                       but the model's context)\n"
    "      --max-duration S reject audio longer than S seconds (default: no limit)\n"
    "      --json           one JSON object per file: text, tokens with log-probabilities,\n"
    "                       timings\n"
    "  -h, --help           this help\n"
    "\n"
    "Output: the transcript (leading space trimmed); with several files, \"FILE: text\"\n"
    "per line. Exit status 0 on success, 1 if any file failed, 2 on a usage error.\n";

typedef struct {
    const char *model;
    int threads, json, max_tokens, translate, beam;
    const char *language;
    double max_duration;
    encdec_kv_mode kv;
    encdec_compute compute;
    encdec_kv_type cross_kv;
} opts;

static int parse(int argc, char **argv, opts *o, int *first_file) {
    *o = (opts){NULL, cli_default_threads(), 0, 0, 0, 1, NULL, 0, ENCDEC_KV_FULL,
                ENCDEC_COMPUTE_F32, ENCDEC_KV_F32};
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) { i++; break; }
        if (a[0] != '-' || !a[1]) break;
        int pr = cli_parse_precision(argc, argv, &i, &o->compute, &o->cross_kv);
        if (pr < 0) return -1;
        if (pr > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(HELP, stdout); return 0; }
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--translate")) o->translate = 1;
        else if (!strncmp(a, "--kv-cache=", 11)) { if (!cli_parse_kv(a + 11, &o->kv)) return -1; }
        else if (!strcmp(a, "--kv-cache")) {
            if (!cli_parse_kv(v, &o->kv)) return -1;
            i++;
        }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!v) { fprintf(stderr, "encdec: %s needs a path\n", a); return -1; }
            o->model = v; i++;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!cli_parse_int(a, v, 1, 256, &o->threads)) return -1;
            i++;
        } else if (!strcmp(a, "-l") || !strcmp(a, "--language")) {
            if (!v) { fprintf(stderr, "encdec: %s needs a language code\n", a); return -1; }
            o->language = v; i++;
        } else if (!strcmp(a, "--beam")) {
            if (!cli_parse_int(a, v, 1, 16, &o->beam)) return -1;
            i++;
        } else if (!strcmp(a, "--max-tokens")) {
            if (!cli_parse_int(a, v, 1, 448, &o->max_tokens)) return -1;
            i++;
        } else if (!strcmp(a, "--max-duration")) {
            if (!cli_parse_double(a, v, 0.001, 1e9, &o->max_duration)) return -1;
            i++;
        } else {
            fprintf(stderr, "encdec: unknown option \"%s\" (see encdec transcribe --help)\n", a);
            return -1;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "encdec: no audio file given (see encdec transcribe --help)\n");
        return -1;
    }
    *first_file = i;
    return 1;
}

static void print_json(const char *file, const encdec_result *r, const opts *o, double load_ms) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "file", file);
    cJSON_AddStringToObject(j, "text", encdec_result_text(r));
    cJSON *toks = cJSON_AddArrayToObject(j, "tokens");
    for (int i = 0; i < encdec_result_n_tokens(r); i++) {
        const encdec_token *t = encdec_result_token(r, i);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "id", t->id);
        cJSON_AddStringToObject(e, "text", t->text);
        cJSON_AddNumberToObject(e, "logprob", t->logprob);
        cJSON_AddNumberToObject(e, "window", t->window);
        cJSON_AddItemToArray(toks, e);
    }
    const encdec_timings *tm = encdec_result_timings(r);
    cJSON *t = cJSON_AddObjectToObject(j, "timings");
    cJSON_AddNumberToObject(t, "load_ms", load_ms);
    cJSON_AddNumberToObject(t, "mel_ms", tm->mel_ms);
    cJSON_AddNumberToObject(t, "encoder_ms", tm->encoder_ms);
    cJSON_AddNumberToObject(t, "decode_ms", tm->decode_ms);
    cJSON_AddNumberToObject(t, "n_windows", tm->n_windows);
    cJSON_AddNumberToObject(t, "n_tokens", tm->n_tokens);
    cJSON_AddStringToObject(j, "kv_cache", cli_kv_name(o->kv));
    cJSON_AddNumberToObject(j, "beam", o->beam);
    cJSON_AddStringToObject(j, "compute", o->compute == ENCDEC_COMPUTE_BF16 ? "bf16" :
                            o->compute == ENCDEC_COMPUTE_INT8 ? "int8" : "f32");
    cJSON_AddStringToObject(j, "cross_kv", cli_kvtype_name(o->cross_kv));
    cJSON_AddNumberToObject(j, "threads", o->threads);
    char *s = cJSON_PrintUnformatted(j);
    if (s) puts(s);
    free(s);
    cJSON_Delete(j);
}

int cli_transcribe(int argc, char **argv) {
    opts o;
    int first;
    int rc = parse(argc, argv, &o, &first);
    if (rc <= 0) return rc == 0 ? 0 : CLI_USAGE_ERR;
    char buf[4096];
    const char *path = cli_model_path(o.model, buf, sizeof buf);
    if (!path) return 1;
    double load_ms;
    encdec_model *m = cli_load_model(path, o.compute, &load_ms);
    if (!m) return 1;
    encdec_session *s = NULL;
    encdec_session_params sp = {o.threads, o.cross_kv};
    encdec_status st = encdec_session_new(m, &sp, &s);
    if (st) {
        fprintf(stderr, "encdec: %s: %s\n", encdec_status_str(st), encdec_last_error());
        encdec_model_free(m);
        return 1;
    }
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.kv_mode = o.kv;
    tp.language = o.language;
    tp.translate = o.translate;
    tp.max_tokens = o.max_tokens;
    tp.beam_size = o.beam;
    int failed = 0, many = argc - first > 1;
    for (int i = first; i < argc; i++) {
        float *pcm = NULL;
        size_t n = 0;
        encdec_result *r = NULL;
        st = encdec_audio_load(argv[i], o.max_duration, &pcm, &n);
        if (!st) st = encdec_transcribe(s, pcm, n, &tp, &r);
        if (st) {
            /* the detail usually starts with the path already: say it once */
            const char *detail = encdec_last_error();
            size_t pl = strlen(argv[i]);
            if (!strncmp(detail, argv[i], pl) && !strncmp(detail + pl, ": ", 2)) detail += pl + 2;
            fprintf(stderr, "encdec: %s: %s: %s\n", argv[i], encdec_status_str(st), detail);
            failed = 1;
        } else if (o.json) {
            print_json(argv[i], r, &o, load_ms);
        } else {
            const char *text = encdec_result_text(r);
            while (*text == ' ') text++;
            if (many) printf("%s: %s\n", argv[i], text);
            else printf("%s\n", text);
        }
        fflush(stdout);
        encdec_result_free(r);
        encdec_free(pcm);
    }
    encdec_session_free(s);
    encdec_model_free(m);
    return failed;
}
