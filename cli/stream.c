/* stream.c - encdec stream: live transcription of audio as it comes
 * (encdec_live): raw PCM from standard input or a file (arecord ... |
 * encdec stream --rate 16000 -), or any audio file, as fast as the model
 * goes or at the pace it would be spoken (--realtime). On a terminal the
 * partial text is rewritten in place and each utterance ends its line;
 * otherwise each final piece is a line with its times; --json: an event
 * per line. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char HELP[] =
    "usage: encdec stream [options] AUDIO|-\n"
    "\n"
    "Live transcription: the text of audio as it arrives, within a second or two.\n"
    "Partial text (it may change) is rewritten in place on a terminal; final text never\n"
    "changes: the words two successive decodes agree on, and each utterance whole once\n"
    "silence follows it.\n"
    "\n"
    "  AUDIO                 an audio file (any format transcribe reads), or with --rate,\n"
    "                        raw PCM: s16le mono; - reads standard input\n"
    "                        (arecord -f S16_LE -r 16000 -c 1 | encdec stream --rate 16000 -)\n"
    "  -m, --model PATH      as transcribe takes (default: whisper tiny.en in the cache)\n"
    "  -t, --threads N       the engine's threads (default: CPUs online, at most 8)\n"
    "      --rate HZ         the input is raw s16le mono PCM at HZ (1000..384000)\n"
    "      --realtime        feed a file at the pace it would be spoken (default: a file as\n"
    "                        fast as the model decodes: every step's audio, then its\n"
    "                        decode; raw PCM from a pipe as it comes)\n"
    "      --step S          decode again after S seconds of new audio (default 1.0)\n"
    "      --idle-step S     ... after S seconds while the engine has nothing else to run\n"
    "                        (default 0.5: a stream alone decodes as often as its cores\n"
    "                        allow, and its words are final sooner; 0: --step always)\n"
    "      --max-step S      the most new audio one decode takes (default 3.0): when the\n"
    "                        decodes run slower than audio comes (a busy machine), each\n"
    "                        takes what waited, up to S, and the stream keeps up\n"
    "      --catch-up S      ... up to S instead while the stream is behind and its audio\n"
    "                        comes at speaking pace (a microphone, --realtime) (default\n"
    "                        4.5; 0: --max-step): fewer decodes to catch up\n"
    "      --agreement N     decodes that must agree on a word before it is final (2; 2..5)\n"
    "      --min-silence S   silence that ends an utterance (default 0.6; 0: agreement only)\n"
    "      --vad             Silero VAD judges silence (else the level: --silence-db)\n"
    "      --vad-model DIR   its directory (default: $ENCDEC_VAD, else the cache's)\n"
    "      --silence-db DB   without --vad: quieter 30 ms frames are silence (default -45),\n"
    "                        and those within 8 dB of the stream's noise floor where that\n"
    "                        is higher (its quietest 150 ms of the last 10 s; at most -30)\n"
    "  -l, --language CODE   the spoken language (default: detected once, then kept)\n"
    "      --translate       to English (multilingual models)\n"
    "      --beam-size N     beam search in each decode (default 1: greedy)\n"
    "      --json            one JSON object per event: {\"type\": \"partial\" | \"final\" |\n"
    "                        \"done\", \"text\", \"start\", \"end\" (stream seconds), \"wall\"\n"
    "                        (seconds since the first sample was fed), \"utterance_end\"}\n"
    "      --stats           at the end, on standard error: audio, decodes, steps skipped\n"
    "                        as silence, the most audio held, the real-time factor\n"
    CLI_PRECISION_HELP;

typedef struct {
    const char *model, *input, *language, *vad_dir;
    int threads, rate, realtime, json, stats, vad, translate, beam;
    encdec_live_params lp;
    encdec_model_params mp;   /* --compute, --isa, --device ... */
    encdec_kv_type kv;
} opts;

static int parse(int argc, char **argv, opts *o) {
    cli_args args;
    if (!cli_args_init(&args, argc)) return -1;
    int rc = 1;
    double x;
    for (int i = 1; i < argc && rc > 0; i++) {
        if (cli_positional(&args, argc, argv, &i)) continue;
        cli_openai_spelling(argv[i]);
        int pr = cli_parse_precision(argc, argv, &i, &o->mp, &o->kv);
        if (pr) {
            if (pr < 0) rc = -1;
            continue;
        }
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(HELP, stdout); rc = 0; }
        else if (!strcmp(a, "--realtime")) o->realtime = 1;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--stats")) o->stats = 1;
        else if (!strcmp(a, "--vad")) o->vad = 1;
        else if (!strcmp(a, "--translate")) o->translate = 1;
        else if (!v) {
            cli_err("encdec stream: unknown option or missing value: \"%s\" (see --help)\n", a);
            rc = -1;
        } else {
            int ok = 1;
            i++;
            if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
            else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) ok = cli_parse_int(a, v, 1, 256, &o->threads);
            else if (!strcmp(a, "--rate")) ok = cli_parse_int(a, v, 1000, 384000, &o->rate);
            else if (!strcmp(a, "--agreement")) ok = cli_parse_int(a, v, 2, 5, &o->lp.agreement);
            else if (!strcmp(a, "--beam-size") || !strcmp(a, "--beam")) ok = cli_parse_int(a, v, 1, 16, &o->beam);
            else if (!strcmp(a, "-l") || !strcmp(a, "--language")) o->language = strcmp(v, "auto") ? v : NULL;
            else if (!strcmp(a, "--vad-model")) o->vad_dir = v, o->vad = 1;
            else if (!strcmp(a, "--step")) ok = cli_parse_double(a, v, 0.1, 10, &o->lp.step_s);
            else if (!strcmp(a, "--idle-step")) ok = cli_parse_double(a, v, 0, 10, &o->lp.idle_step_s);
            else if (!strcmp(a, "--max-step")) ok = cli_parse_double(a, v, 0.1, 10, &o->lp.max_step_s);
            else if (!strcmp(a, "--catch-up")) ok = cli_parse_double(a, v, 0, 10, &o->lp.catch_up_s);
            else if (!strcmp(a, "--min-silence")) ok = cli_parse_double(a, v, 0, 30, &o->lp.min_silence_s);
            else if (!strcmp(a, "--silence-db")) {
                if ((ok = cli_parse_double(a, v, -120, 0, &x))) o->lp.silence_db = (float)x;
            } else {
                cli_err("encdec stream: unknown option \"%s\" (see --help)\n", a);
                ok = 0;
            }
            if (!ok) rc = -1;
        }
    }
    int first = cli_args_finish(&args, argc, argv);
    if (rc <= 0) return rc;
    if (first != argc - 1) {
        cli_err("encdec stream: give one input: an audio file, or - (see --help)\n");
        return -1;
    }
    o->input = argv[first];
    if (o->realtime && !strcmp(o->input, "-")) {
        cli_err("encdec stream: --realtime paces a file; standard input comes at its own pace\n");
        return -1;
    }
    return 1;
}

/* ---- output ---- */

typedef struct {
    int tty, json;
    double t0;                   /* when feeding began (ms): --json's "wall" */
    char *line;                  /* a terminal's line: its final text so far */
    size_t len;
} out_state;

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p == '\n') fputs("\\n", stdout);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

static void show(out_state *w, const encdec_live_event *ev) {
    static const char *const kind[] = {"partial", "final", "done"};
    if (w->json) {
        printf("{\"type\": \"%s\", \"text\": ", kind[ev->kind]);
        json_str(ev->text);
        printf(", \"start\": %.2f, \"end\": %.2f, \"wall\": %.3f", ev->start, ev->end,
               (cli_now_ms() - w->t0) / 1e3);
        if (ev->kind == ENCDEC_LIVE_FINAL) printf(", \"utterance_end\": %s", ev->utterance_end ? "true" : "false");
        if (ev->kind == ENCDEC_LIVE_DONE && ev->status)
            printf(", \"error\": \"%s\"", encdec_status_str(ev->status));
        printf("}\n");
    } else if (!w->tty) {
        if (ev->kind == ENCDEC_LIVE_FINAL)
            printf("[%7.2f --> %7.2f]%s\n", ev->start, ev->end, ev->text);
    } else if (ev->kind != ENCDEC_LIVE_DONE) {
        if (ev->kind == ENCDEC_LIVE_FINAL) {
            size_t k = strlen(ev->text);
            char *l = realloc(w->line, w->len + k + 1);
            if (l) {
                memcpy(l + w->len, ev->text, k + 1);
                w->line = l;
                w->len += k;
            }
        }
        /* the line's final text, then the partial dimmed */
        printf("\r\033[K%s", w->line ? w->line : "");
        if (ev->kind == ENCDEC_LIVE_PARTIAL && *ev->text) printf("\033[2m%s\033[0m", ev->text);
        if (ev->kind == ENCDEC_LIVE_FINAL && (ev->utterance_end || w->len > 400)) {
            putchar('\n');
            w->len = 0;
            if (w->line) w->line[0] = 0;
        }
    } else if (w->len) {
        putchar('\n');
    }
    fflush(stdout);
}

/* Every event ready, waiting up to wait_ms for the first; 1 once DONE came. */
static int drain(encdec_live *l, out_state *w, int wait_ms, encdec_status *status) {
    encdec_live_event ev;
    while (encdec_live_next(l, &ev, wait_ms)) {
        show(w, &ev);
        if (ev.kind == ENCDEC_LIVE_DONE) {
            *status = ev.status;
            return 1;
        }
    }
    return 0;
}

/* ---- input ---- */

static void sleep_until(double t_ms) {
    double d = t_ms - cli_now_ms();
    if (d <= 0) return;
    struct timespec ts = {(time_t)(d / 1000), (long)(fmod(d, 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

/* A file read a step at a time (never held whole: a recording of any
 * length in bounded memory), fed a step at a time: after each step its
 * decode (as fast as it goes), or at the wall clock's pace (--realtime). */
static int feed_file(encdec_live *l, const opts *o, out_state *w, encdec_status *st) {
    encdec_audio_reader *r = NULL;
    encdec_status s = encdec_audio_reader_open(o->input, NULL, &r);
    if (s) {   /* (the message names the file) */
        cli_err("encdec stream: %s\n", encdec_last_error());
        return -1;
    }
    size_t chunk = o->realtime ? 1600 : (size_t)(o->lp.step_s * 16000 + 0.5), k = 0, i = 0;
    float *pcm = malloc(sizeof *pcm * chunk);
    if (!pcm) {
        encdec_audio_reader_close(r);
        cli_err("encdec stream: out of memory\n");
        return -1;
    }
    double t0 = cli_now_ms();
    w->t0 = t0;   /* the stream's clock starts with its first sample */
    for (;; i += k) {
        if ((s = encdec_audio_reader_read(r, pcm, chunk, &k)) || !k) break;
        if (o->realtime) sleep_until(t0 + (double)i / 16.0);
        if ((s = encdec_live_feed(l, pcm, k))) break;
        if (drain(l, w, o->realtime ? 0 : -1, st)) break;
    }
    free(pcm);
    encdec_audio_reader_close(r);
    if (s) {
        cli_err("encdec stream: %s\n", encdec_last_error());
        return -1;
    }
    return 0;
}

/* Raw s16le from a descriptor, fed as it comes. A regular file has each
 * step's decode awaited after its audio (as fast as the model goes, as a
 * decoded file is fed), or, with --realtime, is fed at the pace it would
 * be spoken. A pipe (a microphone) is read while the decodes run; only
 * when what the next decode may take (encdec_live_ahead: max_step_s, or
 * catch_up_s for audio at speaking pace) waits for them does the reader
 * wait (the pipe holds what arrives meanwhile). */
static int feed_raw(encdec_live *l, int fd, const opts *o, out_state *w, encdec_status *st) {
    unsigned char b[3200];   /* 0.1 s at 16 kHz */
    float x[1600];
    size_t have = 0;
    struct stat sb;
    int paced = !o->realtime && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    double t0 = cli_now_ms(), fed = 0, step = o->lp.step_s * o->rate, next = step;
    w->t0 = t0;   /* the stream's clock starts with its first sample */
    for (;;) {
        if (o->realtime) sleep_until(t0 + fed * 1000.0 / o->rate);
        ssize_t r = read(fd, b + have, sizeof b - have);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            cli_err("encdec stream: reading: %s\n", strerror(errno));
            return -1;
        }
        if (r == 0) return 0;
        have += (size_t)r;
        size_t k = have / 2;
        for (size_t i = 0; i < k; i++) x[i] = (float)(int16_t)(b[2 * i] | b[2 * i + 1] << 8) / 32768.0f;
        fed += (double)k;
        if (encdec_live_feed(l, x, k)) {
            cli_err("encdec stream: %s\n", encdec_last_error());
            return -1;
        }
        memmove(b, b + 2 * k, have - 2 * k);
        have -= 2 * k;
        int wait = paced && fed >= next;
        if (wait) next += step;
        if (drain(l, w, wait ? -1 : 0, st)) return 0;
        while (!paced && !o->realtime && encdec_live_backlog(l) >= encdec_live_ahead(l))
            if (drain(l, w, 20, st)) return 0;
    }
}

int cli_stream(int argc, char **argv) {
    opts o = {0};
    o.threads = cli_default_threads();
    o.lp = encdec_live_default_params();
    o.mp = encdec_model_default_params();
    int rc = parse(argc, argv, &o);
    if (rc <= 0) return rc == 0 ? 0 : CLI_USAGE_ERR;
    char buf[4096];
    const char *path = cli_model_path(o.model, buf, sizeof buf);
    encdec_model *m = path ? cli_load_model(path, &o.mp, NULL) : NULL;
    if (!m) return 1;
    encdec_vad *vad = NULL;
    if (o.vad && !(vad = cli_load_vad(o.vad_dir))) {
        encdec_model_free(m);
        return 1;
    }
    encdec_engine *e = NULL;
    encdec_engine_params ep = {o.threads, 2, o.kv, 0};
    encdec_live *l = NULL;
    o.lp.vad = vad;
    o.lp.sample_rate = o.rate ? o.rate : 16000;
    o.lp.tp.language = o.language;
    o.lp.tp.translate = o.translate;
    if (o.beam > 1) o.lp.tp.beam_size = o.beam;
    encdec_status s = encdec_engine_new(m, &ep, &e);
    if (!s) s = encdec_live_new(e, &o.lp, &l);
    int failed = 0;
    if (s) {
        cli_err("encdec stream: %s: %s\n", encdec_status_str(s), encdec_last_error());
        failed = 1;
    } else {
        out_state w = {isatty(1), o.json, cli_now_ms(), NULL, 0};
        encdec_status st = ENCDEC_OK;
        double t0 = w.t0;
        int fd = -1;
        if (o.rate) {
            fd = strcmp(o.input, "-") ? open(o.input, O_RDONLY) : 0;
            if (fd < 0) cli_err("encdec stream: %s: %s\n", o.input, strerror(errno));
            failed = fd < 0 ? 1 : feed_raw(l, fd, &o, &w, &st) != 0;
            if (fd > 0) close(fd);
        } else {
            failed = feed_file(l, &o, &w, &st) != 0;
        }
        encdec_live_finish(l);
        drain(l, &w, -1, &st);
        if (st) {
            cli_err("encdec stream: %s: %s\n", encdec_status_str(st), encdec_last_error());
            failed = 1;
        }
        if (o.stats) {
            encdec_live_stats ls;
            encdec_live_get_stats(l, &ls);
            double secs = (cli_now_ms() - t0) / 1e3;
            fprintf(stderr, "encdec stream: %.1f s of audio, %d decodes, %d steps of silence "
                            "skipped, at most %.1f s held, %.2f s (real-time factor %.3f)\n",
                    ls.fed_s, ls.decodes, ls.skipped, ls.max_buffered_s, secs,
                    ls.fed_s > 0 ? secs / ls.fed_s : 0);
        }
        free(w.line);
    }
    encdec_live_free(l);
    encdec_engine_free(e);
    encdec_vad_free(vad);
    encdec_model_free(m);
    return failed;
}
