/* bench.c - `encdec bench`: load, mel, encoder and per-token decode times
 * for each cache mode, medians over repeats. Correctness first: the three
 * cache modes must produce identical tokens, or the benchmark fails. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *HELP =
    "usage: encdec bench [options] AUDIO\n"
    "\n"
    "Measures, on one audio file: model load ms, mel ms, encoder ms (all passes of a\n"
    "transcription, incl. the cross-cache fill in full mode; a multilingual model\n"
    "without -l also encodes language detection's window, which on audio under 30 s\n"
    "is not the first window's: openai-whisper's features for each), decode ms per\n"
    "token in each cache mode (full, self, none), real-time factor (full mode), peak\n"
    "RSS and threads. Medians over the repeats. First checks that all cache modes\n"
    "produce identical tokens.\n"
    "\n"
    "options:\n"
    "  -m, --model PATH   model (default: whisper tiny.en from the cache)\n"
    "  -t, --threads N    worker threads, 1..256 (default: CPUs online, at most 8)\n"
    "  -r, --repeats N    runs per measurement, 1..1000 (default 5)\n"
    "      --modes LIST   comma-separated cache modes (default full,self,none)\n"
    "      --beam N       beam search with N beams, 1..16 (default 1: greedy);\n"
    "                     decode ms are then per generated position, all beams\n"
    "      --no-timestamps  transcribe without timestamp tokens (one segment a window)\n"
    "      --word-timestamps  with word times\n"
    "      --no-fallback  no temperature fallback (one decode per window)\n"
    "  -l, --language LANG  spoken language, a code (de) or name (German);\n"
    "                     default: detected (multilingual models)\n"
    "      --compute MODE weight matrices: f32 (as stored; default), bf16, int8\n"
    "      --cross-kv TYPE cross-attention cache storage: f32 (default), f16, bf16\n"
    "      --isa SET      kernel set: auto (default), c, avx2, avx512, amx, neon\n"
    "      --no-weight-check  skip the load-time scan of the weights\n"
    "      --device DEV   cpu (default), cuda or cuda:N (an NVIDIA GPU)\n"
    "      --json         one JSON object with load_ms, mel_ms, encoder_ms,\n"
    "                     decode_ms_per_token {full,self,none} (per step with beams),\n"
    "                     n_tokens, n_steps, decode_ms, transcribe_ms (wall time of the\n"
    "                     whole transcription), rtf, n_windows, n_decodes, n_encodes,\n"
    "                     peak_rss_mb, threads, audio_s, model\n"
    "  -h, --help         this help\n";

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    int on, n_tokens, n_steps, n_windows, n_decodes, n_encodes, *tokens;
    double mel, enc, per_tok, wall;
} mode_res;

static int run_mode(encdec_session *s, const float *pcm, size_t n, encdec_kv_mode mode,
                    const encdec_transcribe_params *base, int reps, mode_res *out) {
    encdec_transcribe_params tp = *base;
    tp.kv_mode = mode;
    double *mel = calloc((size_t)reps, sizeof *mel), *enc = calloc((size_t)reps, sizeof *enc),
           *tok = calloc((size_t)reps, sizeof *tok), *wall = calloc((size_t)reps, sizeof *wall);
    int ok = mel && enc && tok && wall;
    for (int i = 0; ok && i < reps; i++) {
        encdec_result *r = NULL;
        double t0 = cli_now_ms();
        encdec_status st = encdec_transcribe(s, pcm, n, &tp, &r);
        wall[i] = cli_now_ms() - t0;
        if (st) {
            cli_err("encdec: bench: %s: %s\n", encdec_status_str(st), encdec_last_error());
            ok = 0;
            break;
        }
        const encdec_timings *t = encdec_result_timings(r);
        mel[i] = t->mel_ms;
        enc[i] = t->encoder_ms;
        tok[i] = t->n_steps ? t->decode_ms / t->n_steps : 0;
        if (i == 0) {
            out->n_tokens = encdec_result_n_tokens(r);
            out->n_steps = t->n_steps;
            out->n_windows = t->n_windows;
            out->n_decodes = t->n_decodes;
            out->n_encodes = t->n_encodes;
            out->tokens = malloc(sizeof(int) * (size_t)(out->n_tokens + 1));
            if (!out->tokens) ok = 0;
            for (int k = 0; ok && k < out->n_tokens; k++) out->tokens[k] = encdec_result_token(r, k)->id;
        }
        encdec_result_free(r);
    }
    if (ok) {
        out->mel = median(mel, reps);
        out->enc = median(enc, reps);
        out->per_tok = median(tok, reps);
        out->wall = median(wall, reps);
    }
    free(mel);
    free(enc);
    free(tok);
    free(wall);
    return ok;
}

int cli_bench(int argc, char **argv) {
    const char *model = NULL, *audio = NULL, *modes = "full,self,none";
    int threads = cli_default_threads(), reps = 5, json = 0, beam = 1;
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    encdec_model_params mp = encdec_model_default_params();
    encdec_kv_type cross_kv = ENCDEC_KV_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int pr = cli_parse_precision(argc, argv, &i, &mp, &cross_kv);
        if (pr < 0) return CLI_USAGE_ERR;
        if (pr > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(HELP, stdout); return 0; }
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--no-timestamps")) tp.timestamps = 0;
        else if (!strcmp(a, "--word-timestamps")) tp.word_timestamps = 1;
        else if (!strcmp(a, "--no-fallback")) tp.temperature_increment = 0;
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!v) { cli_err("encdec: %s needs a path\n", a); return CLI_USAGE_ERR; }
            model = v; i++;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!cli_parse_int(a, v, 1, 256, &threads)) return CLI_USAGE_ERR;
            i++;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repeats")) {
            if (!cli_parse_int(a, v, 1, 1000, &reps)) return CLI_USAGE_ERR;
            i++;
        } else if (!strcmp(a, "--beam")) {
            if (!cli_parse_int(a, v, 1, 16, &beam)) return CLI_USAGE_ERR;
            i++;
        } else if (!strcmp(a, "-l") || !strcmp(a, "--language")) {
            if (!v) { cli_err("encdec: %s needs a language\n", a); return CLI_USAGE_ERR; }
            if (!cli_check_language_name(v)) return CLI_USAGE_ERR;
            tp.language = v; i++;
        } else if (!strcmp(a, "--modes")) {
            if (!v) { cli_err("encdec: --modes needs a list\n"); return CLI_USAGE_ERR; }
            modes = v; i++;
        } else if (a[0] == '-' && a[1]) {
            cli_err("encdec: unknown option \"%s\" (see encdec bench --help)\n", a);
            return CLI_USAGE_ERR;
        } else if (!audio) audio = a;
        else { cli_err("encdec: bench takes one audio file\n"); return CLI_USAGE_ERR; }
    }
    if (!audio) { cli_err("encdec: no audio file given (see encdec bench --help)\n"); return CLI_USAGE_ERR; }
    tp.beam_size = beam;
    mode_res res[3] = {{0}};
    const encdec_kv_mode kinds[3] = {ENCDEC_KV_FULL, ENCDEC_KV_SELF, ENCDEC_KV_NONE};
    for (int k = 0; k < 3; k++) res[k].on = strstr(modes, cli_kv_name(kinds[k])) != NULL;
    if (!res[0].on && !res[1].on && !res[2].on) {
        cli_err("encdec: --modes names none of full, self, none\n");
        return CLI_USAGE_ERR;
    }
    char buf[4096];
    const char *path = cli_model_path(model, buf, sizeof buf);
    if (!path) return 1;

    /* the audio first: a bad path is reported before the model loads */
    float *pcm = NULL;
    size_t n = 0;
    encdec_status st = encdec_audio_load(audio, 0, &pcm, &n);
    if (st) {
        cli_err("encdec: %s: %s\n", encdec_status_str(st), encdec_last_error());
        return 1;
    }
    double *loads = calloc((size_t)reps, sizeof *loads);
    encdec_model *m = NULL;
    for (int i = 0; loads && i < reps; i++) {
        encdec_model_free(m);
        m = cli_load_model(path, &mp, &loads[i]);
        if (!m) { free(loads); encdec_free(pcm); return 1; }
    }
    double load_ms = loads ? median(loads, reps) : 0;
    free(loads);
    encdec_session *s = NULL;
    encdec_session_params sp = {threads, cross_kv};
    st = encdec_session_new(m, &sp, &s);
    int rc = 0;
    if (st) {
        cli_err("encdec: %s: %s\n", encdec_status_str(st), encdec_last_error());
        rc = 1;
    }
    for (int k = 0; !rc && k < 3; k++)
        if (res[k].on && !run_mode(s, pcm, n, kinds[k], &tp, reps, &res[k])) rc = 1;
    /* Correctness before speed: every mode must give the same tokens. */
    int ref = res[0].on ? 0 : res[1].on ? 1 : 2;
    for (int k = 0; !rc && k < 3; k++)
        if (res[k].on && (res[k].n_tokens != res[ref].n_tokens ||
                          memcmp(res[k].tokens, res[ref].tokens, sizeof(int) * (size_t)res[k].n_tokens))) {
            cli_err("encdec: bench: cache mode %s gives different tokens than %s\n",
                    cli_kv_name(kinds[k]), cli_kv_name(kinds[ref]));
            rc = 1;
        }
    if (!rc) {
        double audio_s = (double)n / 16000.0;
        const mode_res *f = &res[ref];
        double rtf = f->wall / 1000.0 / audio_s;
        encdec_model_info info;
        encdec_model_get_info(m, &info);
        if (json) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "model", path);
            cJSON_AddStringToObject(j, "audio", audio);
            cJSON_AddNumberToObject(j, "audio_s", audio_s);
            cJSON_AddNumberToObject(j, "load_ms", load_ms);
            cJSON_AddNumberToObject(j, "mel_ms", f->mel);
            cJSON_AddNumberToObject(j, "encoder_ms", f->enc);
            cJSON *d = cJSON_AddObjectToObject(j, "decode_ms_per_token");
            for (int k = 0; k < 3; k++)
                if (res[k].on) cJSON_AddNumberToObject(d, cli_kv_name(kinds[k]), res[k].per_tok);
                else cJSON_AddNullToObject(d, cli_kv_name(kinds[k]));
            cJSON_AddNumberToObject(j, "n_tokens", f->n_tokens);
            cJSON_AddNumberToObject(j, "n_steps", f->n_steps);
            cJSON_AddNumberToObject(j, "decode_ms", f->per_tok * f->n_steps);
            cJSON_AddNumberToObject(j, "transcribe_ms", f->wall);
            cJSON_AddNumberToObject(j, "n_windows", f->n_windows);
            cJSON_AddNumberToObject(j, "n_decodes", f->n_decodes);
            cJSON_AddNumberToObject(j, "n_encodes", f->n_encodes);
            cJSON_AddNumberToObject(j, "rtf", rtf);
            cJSON_AddNumberToObject(j, "peak_rss_mb", cli_peak_rss_mb());
            cJSON_AddNumberToObject(j, "threads", threads);
            cJSON_AddNumberToObject(j, "beam", beam);
            cJSON_AddStringToObject(j, "compute", info.compute);
            cJSON_AddStringToObject(j, "cross_kv", cli_kvtype_name(cross_kv));
            cJSON_AddNumberToObject(j, "repeats", reps);
            char *out = cJSON_PrintUnformatted(j);
            if (out) puts(out);
            free(out);
            cJSON_Delete(j);
        } else {
            printf("model      %s (%s, d=%d, %d+%d layers, %.0f MB of weights as used)\n", path, info.format,
                   info.d_model, info.n_enc_layer, info.n_dec_layer, info.weight_bytes / 1e6);
            printf("audio      %s (%.2f s), %d threads, beam %d, median of %d runs\n", audio, audio_s,
                   threads, beam, reps);
            printf("precision  compute %s, cross K/V %s\n", info.compute, cli_kvtype_name(cross_kv));
            printf("load       %8.1f ms\n", load_ms);
            printf("mel        %8.1f ms\n", f->mel);
            printf("encoder    %8.1f ms  (%d pass%s%s; incl. cross K/V in full mode: %s)\n", f->enc,
                   f->n_encodes, f->n_encodes == 1 ? "" : "es",
                   f->n_encodes > f->n_windows ? ", language detection's window among them" : "",
                   res[0].on ? "yes" : "n/a");
            for (int k = 0; k < 3; k++)
                if (res[k].on)
                    printf("decode %-4s %7.2f ms/%s  (%d tokens, %d steps)\n", cli_kv_name(kinds[k]),
                           res[k].per_tok, beam > 1 ? "step" : "token", res[k].n_tokens, res[k].n_steps);
            if (res[0].on)
                for (int k = 1; k < 3; k++)
                    if (res[k].on && res[0].per_tok > 0)
                        printf("           %s/full = %.2fx per token\n", cli_kv_name(kinds[k]),
                               res[k].per_tok / res[0].per_tok);
            printf("transcribe %8.1f ms  (%d windows, %d decodes)\n", f->wall, f->n_windows, f->n_decodes);
            printf("rtf        %8.4f  (%.0fx faster than real time)\n", rtf, rtf > 0 ? 1 / rtf : 0);
            printf("peak RSS   %8.1f MB\n", cli_peak_rss_mb());
        }
    }
    for (int k = 0; k < 3; k++) free(res[k].tokens);
    encdec_session_free(s);
    encdec_free(pcm);
    encdec_model_free(m);
    return rc;
}
