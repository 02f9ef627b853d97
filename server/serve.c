/* serve.c - encdec serve: options, the model and its engine, the signals
 * (SIGTERM / SIGINT: new requests 503, finish what is in flight, exit 0). */
#include "server.h"
#include "../cli/cli.h"
#include "lt_files.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *HELP =
    "usage: encdec serve [options]\n"
    "\n"
    "An OpenAI-compatible HTTP server for a Whisper or T5-family model: every request\n"
    "shares the engine's decode steps (one pass of the model per step for all the\n"
    "requests being decoded), so a short clip is not queued behind a long recording.\n"
    "\n"
    "  POST /v1/audio/transcriptions   multipart: file, model, language, prompt,\n"
    "                                  response_format (json, text, srt, vtt, verbose_json),\n"
    "                                  temperature, timestamp_granularities[] (segment, word),\n"
    "                                  stream (server-sent events); extensions:\n"
    "                                  vad_filter (true: only the speech Silero VAD finds\n"
    "                                  is decoded, as faster-whisper's), vad_parameters\n"
    "                                  (a JSON object of faster-whisper's VadOptions)\n"
    "  POST /v1/audio/translations     the same, to English (multilingual models)\n"
    "  POST /inference                 whisper.cpp server's: its fields (temperature_inc,\n"
    "                                  translate, no_timestamps, beam_size, best_of,\n"
    "                                  no_speech_thold, logprob_thold, offset_t, duration)\n"
    "                                  also work on the two above; no model field: the\n"
    "                                  served one; Content-Type audio/...: the body is the\n"
    "                                  file, the fields in the query string\n"
    "  POST /v1/completions            T5-family models: JSON prompt (a string or a list),\n"
    "                                  max_tokens, temperature (0: greedy), top_p, n, seed,\n"
    "                                  best_of (beam search with that many beams), stop (up\n"
    "                                  to 4 sequences: a choice ends before one), stream\n"
    "                                  (token by token; with best_of, each choice whole)\n"
    "  POST /translate                 LibreTranslate's (translation models: NLLB, M2M100,\n"
    "                                  mBART-50, Marian): q (a string or a list), source\n"
    "                                  (ISO 639-1 or the model's code; auto: detected),\n"
    "                                  target, format (text or html), alternatives; JSON or a\n"
    "                                  form; each sentence as Argos Translate searches it (4\n"
    "                                  beams, length penalty 0.2, unknown tokens replaced)\n"
    "  GET  /languages                 LibreTranslate's: the model's languages and targets\n"
    "  POST /detect                    LibreTranslate's: q (a string or a list), the languages\n"
    "                                  its detectors (langdetect, lexilang) find, most likely\n"
    "                                  first; source auto on /translate uses them (needs\n"
    "                                  --langid's files; else 400 and the tokenizer's source)\n"
    "  POST /translate_file            LibreTranslate's: a form with file (.txt, .srt, .html,\n"
    "                                  .docx, .pptx, .odt, .odp, .epub), source, target; its\n"
    "                                  texts translated as /translate's, the rest kept;\n"
    "                                  answers translatedFileUrl, GET /download_file/NAME\n"
    "                                  (kept in memory 30 minutes, 256 MB in all)\n"
    "  GET  /frontend/settings         LibreTranslate's (no keys or suggestions: POST\n"
    "                                  /suggest is a 403; the file formats)\n"
    "  POST /load                      whisper.cpp server's: field model, another model in\n"
    "                                  place of this one (with --allow-load)\n"
    "  GET  /v1/realtime               a WebSocket (?intent=transcription): live transcription\n"
    "                                  in OpenAI Realtime's events: session.update,\n"
    "                                  input_audio_buffer.append (base64 PCM16, 24 kHz or the\n"
    "                                  session's rate), .commit, .clear; answered with\n"
    "                                  ...input_audio_transcription.delta / .completed per\n"
    "                                  utterance (docs/SERVER.md)\n"
    "  GET  /v1/models, /health, /metrics (Prometheus)\n"
    "\n"
    "  -m, --model PATH        model directory or file, or a name, as transcribe takes (one\n"
    "                          not installed is downloaded first; default: whisper tiny.en in\n"
    "                          the cache)\n"
    "      --vad-model DIR     the Silero VAD for vad_filter (default: $ENCDEC_VAD, else\n"
    "                          silero-vad-v6 in the cache when fetched: scripts/fetch-model.sh\n"
    "                          vad; without one, vad_filter requests get 400)\n"
    "      --langid DIR        the text language identifier for LibreTranslate's /detect and\n"
    "                          source auto (default: $ENCDEC_LANGID, else langdetect in the\n"
    "                          cache when fetched: scripts/fetch-model.sh langid); loaded at\n"
    "                          its first use\n"
    "      --host ADDR         listen address, IPv4 or IPv6 (default 127.0.0.1)\n"
    "      --port N            TCP port (default 8080; 0: any free one, printed)\n"
    "  -t, --threads N         worker threads of the engine (default: CPUs online, at most 8)\n"
    "      --max-active N      requests decoded at once (default 8); later ones wait\n"
    "      --max-queue N       audio requests accepted at once, decoding or waiting\n"
    "                          (default 64); more are refused with 503 and Retry-After\n"
    "      --max-upload-mb N   largest upload (default 25, as OpenAI's): 413 beyond\n"
    "      --max-audio-seconds S  longest audio accepted (default 10800): 400 beyond\n"
    "      --timeout S         a request's deadline in seconds (default 900; 0: none): 504\n"
    "      --keepalive S       a stream (stream=true) with nothing to send for S seconds\n"
    "                          gets an SSE comment, which proxies count as traffic\n"
    "                          (default 15; 0.1..3600)\n"
    "      --alias NAME        another model name requests may use (default: whisper-1;\n"
    "                          repeatable, up to 8)\n"
    "      --max-connections N open connections at most (default 2048): 503 beyond\n"
    "      --max-connections-per-client N  open connections from one address at most\n"
    "                          (default 128; 0: no limit, e.g. behind a proxy): 503 beyond\n"
    "      --header-timeout S  a request's headers must arrive within S seconds, and a\n"
    "                          kept-alive connection may wait that long for the next\n"
    "                          (default 30; 0: none): the connection is cut\n"
    "      --body-timeout S    its body within S seconds more (default 300; 0: none): cut\n"
    "      --http-threads N    threads serving the connections (default 2; event-driven:\n"
    "                          none waits, however many connections are open)\n"
    "      --max-live N        live sessions (/v1/realtime) open at once (default 8): 503\n"
    "                          beyond; each decodes its audio again every second\n"
    "      --allow-load        POST /load (whisper.cpp's; form field model: a path or name as\n"
    "                          -m takes) may change the model: it loads beside the served\n"
    "                          one, new requests get 503 while those in flight finish, then\n"
    "                          it is served (default: 403, no client changes the model)\n"
    "      --disable-files-translation  POST /translate_file answers 403 (LibreTranslate's\n"
    "                          flag)\n"
    "  -q, --quiet             no access log (one line per request on standard error:\n"
    "                          time, method, path, status, bytes, latency)\n"
    CLI_PRECISION_HELP
    "      --no-logit-screen  text models in f32: no int8 copy of the output projection\n"
    "                       (by default greedy steps read it: the same tokens, a\n"
    "                       quarter of an f32 matrix's bytes)\n"
    "\n"
    "It prints \"listening on http://HOST:PORT\" on standard output when ready. SIGTERM or\n"
    "SIGINT: no new requests (503), the ones in flight finish, then exit status 0.\n";

static int parse(int argc, char **argv, srv_opts *o, const char **model, const char **vad,
                 const char **langid, encdec_model_params *mp, encdec_kv_type *kv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int pr = cli_parse_precision(argc, argv, &i, mp, kv);
        if (pr < 0) return -1;
        if (pr > 0) continue;
        double d;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(HELP, stdout);
            return 1;
        } else if (!strcmp(a, "--allow-load")) {
            o->allow_load = 1;
            continue;
        } else if (!strcmp(a, "--disable-files-translation")) {
            o->no_files = 1;
            continue;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!v) {
                cli_err("encdec serve: %s needs a value\n", a);
                return -1;
            }
            *model = v;
        } else if (!strcmp(a, "--vad-model")) {
            if (!v || !*v) {
                cli_err("encdec serve: --vad-model needs a directory\n");
                return -1;
            }
            *vad = v;
        } else if (!strcmp(a, "--langid")) {
            if (!v || !*v) {
                cli_err("encdec serve: --langid needs a directory\n");
                return -1;
            }
            *langid = v;
        } else if (!strcmp(a, "--host")) {
            if (!v || !*v) {
                cli_err("encdec serve: --host needs an address\n");
                return -1;
            }
            o->host = v;
        } else if (!strcmp(a, "--port")) {
            if (!cli_parse_int(a, v, 0, 65535, &o->port)) return -1;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!cli_parse_int(a, v, 1, 256, &o->threads)) return -1;
        } else if (!strcmp(a, "--max-active")) {
            if (!cli_parse_int(a, v, 1, 256, &o->max_active)) return -1;
        } else if (!strcmp(a, "--max-live")) {
            if (!cli_parse_int(a, v, 1, 4096, &o->max_live)) return -1;
        } else if (!strcmp(a, "--max-queue")) {
            if (!cli_parse_int(a, v, 1, 100000, &o->max_queue)) return -1;
        } else if (!strcmp(a, "--max-connections")) {
            if (!cli_parse_int(a, v, 1, 1000000, &o->max_connections)) return -1;
        } else if (!strcmp(a, "--max-connections-per-client")) {
            if (!cli_parse_int(a, v, 0, 1000000, &o->max_per_client)) return -1;
        } else if (!strcmp(a, "--header-timeout")) {
            if (!cli_parse_double(a, v, 0, 1e6, &o->header_timeout_s)) return -1;
        } else if (!strcmp(a, "--body-timeout")) {
            if (!cli_parse_double(a, v, 0, 1e7, &o->body_timeout_s)) return -1;
        } else if (!strcmp(a, "--http-threads")) {
            if (!cli_parse_int(a, v, 1, 64, &o->http_threads)) return -1;
        } else if (!strcmp(a, "--max-upload-mb")) {
            if (!cli_parse_double(a, v, 0.001, 4096, &d)) return -1;
            o->max_upload = (size_t)(d * 1024 * 1024);
        } else if (!strcmp(a, "--max-audio-seconds")) {
            if (!cli_parse_double(a, v, 1, 1e7, &o->max_audio_s)) return -1;
        } else if (!strcmp(a, "--timeout")) {
            if (!cli_parse_double(a, v, 0, 1e7, &o->timeout_s)) return -1;
        } else if (!strcmp(a, "--keepalive")) {
            if (!cli_parse_double(a, v, 0.1, 3600, &o->keepalive_s)) return -1;
        } else if (!strcmp(a, "--alias")) {
            if (!v || !*v || o->n_aliases >= SRV_MAX_ALIASES) {
                cli_err("encdec serve: --alias needs a name (at most %d)\n", SRV_MAX_ALIASES);
                return -1;
            }
            if (o->n_aliases == 1 && !strcmp(o->aliases[0], "whisper-1") && o->aliases[0] != v)
                o->n_aliases = 0;   /* the first --alias replaces the default */
            o->aliases[o->n_aliases++] = v;
        } else {
            cli_err("encdec serve: unknown option %s (encdec serve --help)\n", a);
            return -1;
        }
        i++;   /* the value */
    }
    return 0;
}

int srv_main(int argc, char **argv) {
    static srv s;   /* the signal-driven shutdown reads it; one server per process */
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.rate_mu, NULL);
    pthread_mutex_init(&s.model_mu, NULL);
    pthread_mutex_init(&s.langid_mu, NULL);
    srv_opts *o = &s.o;
    if (!(s.files = srv_files_new(SRV_FILES_MAX_BYTES))) return 1;
    *o = (srv_opts){.host = "127.0.0.1", .port = 8080, .threads = cli_default_threads(),
                    .max_active = 8, .max_queue = 64, .max_upload = 25u << 20, .timeout_s = 900,
                    .max_audio_s = 10800, .max_connections = 2048, .aliases = {"whisper-1"},
                    .n_aliases = 1, .max_per_client = 128, .header_timeout_s = 30,
                    .body_timeout_s = 300, .idle_timeout_s = 60, .http_threads = 2,
                    .max_live = 8, .keepalive_s = 15};
    const char *given = NULL, *vad_given = NULL, *langid_given = NULL;
    encdec_model_params mp = encdec_model_default_params();
    encdec_kv_type kv = ENCDEC_KV_F32;
    int rc = parse(argc, argv, o, &given, &vad_given, &langid_given, &mp, &kv);
    if (rc) return rc > 0 ? 0 : CLI_USAGE_ERR;
    /* signals go to the thread that waits for them; block them before any thread starts */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    char buf[4096];
    const char *path = cli_model_path(given, buf, sizeof buf);
    double load_ms;
    encdec_model *m = path ? cli_load_model(path, &mp, &load_ms) : NULL;
    if (!m) return 1;
    encdec_model_info mi;
    encdec_model_get_info(m, &mi);
    encdec_vad *vad = NULL;
    char vbuf[4096];
    const char *vpath = cli_vad_path(vad_given, vbuf, sizeof vbuf);
    if (vpath && strcmp(mi.family, "whisper") == 0 && !(vad = cli_load_vad(vpath))) {
        encdec_model_free(m);
        return 1;
    }
    s.vad = vad;
    char lbuf[4096];
    s.langid_path = cli_langid_path(langid_given, lbuf, sizeof lbuf);
    s.model = m;
    s.text = strcmp(mi.family, "whisper") != 0;
    if (s.text && o->n_aliases == 1 && !strcmp(o->aliases[0], "whisper-1"))
        o->n_aliases = 0;   /* the default alias names a speech model */
    s.multilingual = mi.multilingual;
    srv_model_name(path, s.name, sizeof s.name);
    s.mp = mp;
    s.kv = kv;
    s.model_path = cli_model_path;
    s.model_why = cli_last_err;
    encdec_engine_params ep = {o->threads, o->max_active, kv};
    encdec_status st = encdec_engine_new(m, &ep, &s.engine);
    if (st) {
        cli_err("encdec serve: %s: %s\n", encdec_status_str(st), encdec_last_error());
        encdec_vad_free(vad);
        encdec_model_free(m);
        return 1;
    }
    if (srv_start(&s)) {
        encdec_engine_free(s.engine);
        encdec_vad_free(vad);
        encdec_model_free(m);
        return 1;
    }
    pthread_mutex_lock(&s.model_mu);   /* a /load may already be at work */
    printf("encdec serve: %s (%s, %s, %d threads) listening on http://%s:%d\n", s.name,
           mi.compute, mi.isa, o->threads, o->host, s.port);
    pthread_mutex_unlock(&s.model_mu);
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    /* drain: new requests are answered 503 (the socket stays open: a client
     * sees why), the requests in flight finish */
    atomic_store(&s.draining, 1);
    fprintf(stderr, "encdec serve: %s: finishing %d requests in flight\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", atomic_load(&s.inflight));
    while (atomic_load(&s.inflight) > 0 || atomic_load(&s.loading)) usleep(20000);
    srv_stop(&s);
    encdec_engine_free(s.engine);   /* /load may have changed them */
    encdec_vad_free(vad);
    encdec_langid_free(s.langid);
    srv_files_free(s.files);
    encdec_model_free((encdec_model *)s.model);
    fprintf(stderr, "encdec serve: stopped\n");
    return 0;
}
