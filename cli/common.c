/* common.c - option parsing, model lookup and timing helpers for the CLI. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The cache's models directory into buf. */
static void cache_root(char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, cap, "%s/encdec/models", xdg);
    else snprintf(buf, cap, "%s/.cache/encdec/models", home ? home : ".");
}

/* A name installed in the cache (the folders scripts/fetch-model.sh, the
 * Python package and cli_hub_download make): the name itself, whisper-<name>,
 * or the folder of a downloadable name (faster-whisper's size names and
 * repositories: whisper-<size>; a hub id: its last part). */
static int installed(const char *name, char *buf, size_t cap) {
    char root[3072], repo[512], folder[512];
    cache_root(root, sizeof root);
    const char *fmt[] = {"%s/%s", "%s/whisper-%s", "%s/%s"};
    const char *arg[] = {name, name, cli_hub_name(name, repo, sizeof repo, folder, sizeof folder) ? folder : name};
    for (int i = 0; i < 3; i++) {
        if ((size_t)snprintf(buf, cap, fmt[i], root, arg[i]) >= cap) continue;
        if (is_dir(buf)) return 1;
    }
    return 0;
}

const char *cli_model_path(const char *given, char *buf, size_t cap) {
    if (given) {
        struct stat sb;
        if (stat(given, &sb) == 0 || !*given) return given;
        if (installed(given, buf, cap)) return buf;
        char root[3072], repo[512], folder[512];
        cache_root(root, sizeof root);
        if (cli_hub_name(given, repo, sizeof repo, folder, sizeof folder))
            return cli_hub_download(given, root, buf, cap);   /* NULL: it said why */
        if (given[0] == '/' || given[0] == '.') return given;   /* the loader says why */
        cli_err("encdec: \"%s\" is not a path, nor a model installed in %s, nor a name to "
                "download (faster-whisper's size names, Hugging Face ids owner/name)\n",
                given, root);
        return NULL;
    }
    const char *env = getenv("ENCDEC_MODEL");
    if (env && *env) return env;
    char root[3072];
    cache_root(root, sizeof root);
    snprintf(buf, cap, "%s/whisper-tiny.en", root);
    if (is_dir(buf)) return buf;
    fprintf(stderr,
            "encdec: no model given (-m) and the default model, whisper tiny.en, is not at %s\n"
            "  fetch it with:  scripts/fetch-model.sh tiny.en   (from the encdec source tree)\n"
            "  or:             encdec transcribe -m tiny.en ...  (from the Hugging Face hub)\n",
            buf);
    return NULL;
}

/* A helper model's directory: given, else $env, else the cache's name
 * folder when it is there. */
static const char *cache_dir(const char *given, const char *env_name, const char *name, char *buf,
                             size_t cap) {
    const char *env = getenv(env_name);
    if (given) return given;
    if (env && *env) return env;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, cap, "%s/encdec/models/%s", xdg, name);
    else snprintf(buf, cap, "%s/.cache/encdec/models/%s", home ? home : ".", name);
    return is_dir(buf) ? buf : NULL;
}

const char *cli_vad_path(const char *given, char *buf, size_t cap) {
    return cache_dir(given, "ENCDEC_VAD", "silero-vad-v6", buf, cap);
}

const char *cli_langid_path(const char *given, char *buf, size_t cap) {
    return cache_dir(given, "ENCDEC_LANGID", "langdetect", buf, cap);
}

encdec_vad *cli_load_vad(const char *given) {
    char buf[4096];
    const char *path = cli_vad_path(given, buf, sizeof buf);
    if (!path) {
        cli_err("encdec: --vad: the Silero VAD model is not at %s\n"
                "  fetch it with:  scripts/fetch-model.sh vad   (from the encdec source tree)\n",
                buf);
        return NULL;
    }
    encdec_vad *v = NULL;
    encdec_status st = encdec_vad_load(path, &v);
    if (st) cli_err("encdec: cannot load the VAD model %s: %s\n", path, encdec_last_error());
    return v;
}

int cli_parse_int(const char *opt, const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        cli_err("encdec: %s expects an integer in %ld..%ld, got \"%s\"\n", opt, lo, hi,
                s ? s : "");
        return 0;
    }
    *out = (int)v;
    return 1;
}

int cli_parse_double(const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno || !(v >= lo && v <= hi)) {
        cli_err("encdec: %s expects a number in %g..%g, got \"%s\"\n", opt, lo, hi,
                s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_kv(const char *s, encdec_kv_mode *out) {
    if (s && !strcmp(s, "full")) *out = ENCDEC_KV_FULL;
    else if (s && !strcmp(s, "self")) *out = ENCDEC_KV_SELF;
    else if (s && !strcmp(s, "none")) *out = ENCDEC_KV_NONE;
    else {
        cli_err("encdec: --kv-cache expects full, self or none, got \"%s\"\n", s ? s : "");
        return 0;
    }
    return 1;
}

int cli_parse_compute(const char *s, encdec_compute *out) {
    if (s && !strcmp(s, "f32")) *out = ENCDEC_COMPUTE_F32;
    else if (s && !strcmp(s, "bf16")) *out = ENCDEC_COMPUTE_BF16;
    else if (s && !strcmp(s, "int8")) *out = ENCDEC_COMPUTE_INT8;
    else {
        cli_err("encdec: --compute expects f32, bf16 or int8, got \"%s\"\n", s ? s : "");
        return 0;
    }
    return 1;
}

int cli_parse_kvtype(const char *s, encdec_kv_type *out) {
    if (s && !strcmp(s, "f32")) *out = ENCDEC_KV_F32;
    else if (s && !strcmp(s, "f16")) *out = ENCDEC_KV_F16;
    else if (s && !strcmp(s, "bf16")) *out = ENCDEC_KV_BF16;
    else {
        cli_err("encdec: --cross-kv expects f32, f16 or bf16, got \"%s\"\n", s ? s : "");
        return 0;
    }
    return 1;
}

const char *cli_kvtype_name(encdec_kv_type t) {
    return t == ENCDEC_KV_F16 ? "f16" : t == ENCDEC_KV_BF16 ? "bf16" : "f32";
}

const char *cli_kv_name(encdec_kv_mode m) {
    return m == ENCDEC_KV_FULL ? "full" : m == ENCDEC_KV_SELF ? "self" : "none";
}

int cli_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > 8 ? 8 : (int)n;
}

double cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double cli_peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

int cli_parse_isa(const char *s, encdec_isa *out) {
    /* SET[,-EXT...]: a kernel set, then extensions turned off (process-wide) */
    char set[32] = "";
    const char *comma = s ? strchr(s, ',') : NULL;
    size_t n = s ? (comma ? (size_t)(comma - s) : strlen(s)) : 0;
    if (s && n < sizeof set) memcpy(set, s, n), set[n] = 0;
    int v = s && n < sizeof set ? encdec_isa_parse(set) : -1;
    if (v < 0) {
        cli_err("encdec: --isa expects auto, c, avx2, avx512, amx or neon (then optionally "
                ",-EXT,...), got \"%s\"\n", s ? s : "");
        return 0;
    }
    char off[128] = "";
    for (const char *p = comma; p; p = strchr(p + 1, ',')) {
        size_t k = strcspn(p + 1, ",");
        if (p[1] != '-' || k < 2 || strlen(off) + k + 1 >= sizeof off) {
            cli_err("encdec: --isa: after the set, expected ,-EXT (an extension to turn off: "
                    "avx-vnni, dotprod, bf16), got \"%s\"\n", s);
            return 0;
        }
        if (*off) strcat(off, ",");
        strncat(off, p + 2, k - 1);
    }
    if (encdec_isa_disable_ext(off)) {
        cli_err("encdec: --isa: unknown extension in \"%s\" (known: avx-vnni, dotprod, bf16)\n", s);
        return 0;
    }
    *out = (encdec_isa)v;
    return 1;
}

encdec_model *cli_load_model(const char *path, const encdec_model_params *mp, double *load_ms) {
    encdec_model *m = NULL;
    double t0 = cli_now_ms();
    encdec_status st = encdec_model_load_ex(path, mp, &m);
    if (load_ms) *load_ms = cli_now_ms() - t0;
    if (st) {
        /* the detail names the path and often the status already: say each once */
        const char *d = encdec_last_error(), *what = encdec_status_str(st);
        size_t n = strlen(path);
        if (!strncmp(d, path, n) && d[n] == ':' && d[n + 1] == ' ') d += n + 2;
        if (strstr(d, what))
            cli_err("encdec: cannot load model %s: %s\n", path, d);
        else
            cli_err("encdec: cannot load model %s: %s: %s\n", path, what, d);
        return NULL;
    }
    return m;
}

int cli_parse_precision(int argc, char **argv, int *i, encdec_model_params *mp,
                        encdec_kv_type *kv) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    encdec_compute *c = &mp->compute;
    if (!strcmp(a, "--no-weight-check")) {
        mp->no_weight_check = 1;
        return 1;
    }
    if (!strcmp(a, "--no-logit-screen")) {
        mp->no_logit_screen = 1;
        return 1;
    }
    if (!strncmp(a, "--isa=", 6)) return cli_parse_isa(a + 6, &mp->isa) ? 1 : -1;
    if (!strcmp(a, "--isa")) {
        (*i)++;
        return cli_parse_isa(v, &mp->isa) ? 1 : -1;
    }
    if (!strncmp(a, "--device", 8) && (a[8] == '=' || !a[8])) {
        const char *d = a[8] == '=' ? a + 9 : v;
        if (!a[8]) (*i)++;
        if (encdec_device_parse(d, &mp->device, &mp->device_index)) {
            cli_err("encdec: --device expects cpu, cuda or cuda:N, got \"%s\"\n", d ? d : "");
            return -1;
        }
        return 1;
    }
    if (!strncmp(a, "--compute=", 10)) return cli_parse_compute(a + 10, c) ? 1 : -1;
    if (!strncmp(a, "--cross-kv=", 11)) return cli_parse_kvtype(a + 11, kv) ? 1 : -1;
    if (!strcmp(a, "--compute")) {
        (*i)++;
        return cli_parse_compute(v, c) ? 1 : -1;
    }
    if (!strcmp(a, "--cross-kv")) {
        (*i)++;
        return cli_parse_kvtype(v, kv) ? 1 : -1;
    }
    return 0;
}

unsigned cli_umask(void) {
    static int have;
    static mode_t m;
    if (!have) {
        m = umask(022);
        umask(m);
        have = 1;
    }
    return (unsigned)m;
}

int cli_parse_list(const char *opt, const char *s, double *out, int cap) {
    int n = 0;
    const char *p = s;
    while (p && *p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || n >= cap || (*end && *end != ',')) {
            cli_err("encdec: %s expects numbers separated by commas (at most %d), got \"%s\"\n",
                    opt, cap, s);
            return -1;
        }
        out[n++] = v;
        p = *end ? end + 1 : end;
    }
    return n;
}

/* A language argument that names none of Whisper's languages is a usage
 * error before any model loads; the codes are listed. */
int cli_check_language_name(const char *lang) {
    if (!lang || encdec_language_name(lang)) return 1;
    cli_err("encdec: unknown language \"%.40s\": give a code or an English name "
            "(de, German; case ignored), one of:", lang);
    for (int i = 0; encdec_language_code(i); i++)
        fprintf(stderr, "%s %s", i ? "," : "", encdec_language_code(i));
    fputc('\n', stderr);
    return 0;
}

void cli_openai_spelling(char *a) {
    if (a[0] != '-' || a[1] != '-') return;
    char *end = strchr(a, '=');
    size_t n = end ? (size_t)(end - a) : strlen(a);
    for (size_t k = 2; k < n; k++)
        if (a[k] == '_') a[k] = '-';
}

int cli_bool_word(const char *s) {
    if (!s) return -1;
    static const char *yes[] = {"true", "yes", "1", "on"}, *no[] = {"false", "no", "0", "off"};
    for (int k = 0; k < 4; k++) {
        if (!strcasecmp(s, yes[k])) return 1;
        if (!strcasecmp(s, no[k])) return 0;
    }
    return -1;
}

int cli_positional(cli_args *p, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    if (!strcmp(a, "--")) {   /* the rest are arguments, whatever they look like */
        while (++*i < argc) p->v[p->n++] = argv[*i];
        return 1;
    }
    if (a[0] != '-' || !a[1]) {
        p->v[p->n++] = argv[*i];
        return 1;
    }
    return 0;
}

int cli_args_init(cli_args *p, int argc) {
    p->n = 0;
    p->v = malloc(sizeof *p->v * (size_t)(argc > 0 ? argc : 1));
    if (!p->v) cli_err("encdec: out of memory\n");
    return p->v != NULL;
}

int cli_args_finish(cli_args *p, int argc, char **argv) {
    memcpy(argv + argc - p->n, p->v, sizeof *p->v * (size_t)p->n);
    free(p->v);
    p->v = NULL;
    return argc - p->n;
}
