/* hub.c - models by name from the Hugging Face hub, for the CLI and the
 * server (libcurl). The names are faster-whisper's: its size names
 * ("large-v3") stand for its repositories, a repository id ("openai/whisper-base")
 * is taken as it is. A download goes into the cache folder the Python package
 * and scripts/fetch-model.sh use (whisper-<size>, or the id's last part)
 * through <folder>.partial, renamed once every file is there: a failed
 * download leaves nothing that looks like a model. $HF_ENDPOINT names a
 * mirror, $HF_TOKEN is sent (to the hub's host only), $HF_HUB_OFFLINE=1
 * forbids the network. The protocol is python/encdec/_hub.py's. */
#include "cli.h"

#include <cjson/cJSON.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if ENCDEC_WITH_CURL
#include <curl/curl.h>
#include <pthread.h>
#endif

/* faster-whisper 1.2.1's size names and the repositories of its conversions */
static const char *const g_sizes[][2] = {
    {"tiny.en", "Systran/faster-whisper-tiny.en"},
    {"tiny", "Systran/faster-whisper-tiny"},
    {"base.en", "Systran/faster-whisper-base.en"},
    {"base", "Systran/faster-whisper-base"},
    {"small.en", "Systran/faster-whisper-small.en"},
    {"small", "Systran/faster-whisper-small"},
    {"medium.en", "Systran/faster-whisper-medium.en"},
    {"medium", "Systran/faster-whisper-medium"},
    {"large-v1", "Systran/faster-whisper-large-v1"},
    {"large-v2", "Systran/faster-whisper-large-v2"},
    {"large-v3", "Systran/faster-whisper-large-v3"},
    {"large", "Systran/faster-whisper-large-v3"},
    {"distil-large-v2", "Systran/faster-distil-whisper-large-v2"},
    {"distil-medium.en", "Systran/faster-distil-whisper-medium.en"},
    {"distil-small.en", "Systran/faster-distil-whisper-small.en"},
    {"distil-large-v3", "Systran/faster-distil-whisper-large-v3"},
    {"distil-large-v3.5", "distil-whisper/distil-large-v3.5-ct2"},
    {"large-v3-turbo", "mobiuslabsgmbh/faster-whisper-large-v3-turbo"},
    {"turbo", "mobiuslabsgmbh/faster-whisper-large-v3-turbo"},
};
#define N_SIZES (sizeof g_sizes / sizeof g_sizes[0])

/* The size a name of two stands for (large: large-v3, turbo: large-v3-turbo). */
static const char *canonical(const char *size) {
    return !strcmp(size, "large") ? "large-v3" : !strcmp(size, "turbo") ? "large-v3-turbo" : size;
}

int cli_hub_name(const char *name, char *repo, size_t rcap, char *folder, size_t fcap) {
    for (size_t i = 0; i < N_SIZES; i++)
        if (!strcmp(name, g_sizes[i][0]) || !strcmp(name, g_sizes[i][1])) {
            snprintf(repo, rcap, "%s", g_sizes[i][1]);
            snprintf(folder, fcap, "whisper-%s", canonical(g_sizes[i][0]));
            return 1;
        }
    const char *slash = strchr(name, '/');
    if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/') || name[0] == '.' ||
        strlen(name) >= rcap || !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
        return 0;
    snprintf(repo, rcap, "%s", name);
    snprintf(folder, fcap, "%s", slash + 1);
    return 1;
}

#if !ENCDEC_WITH_CURL

const char *cli_hub_download(const char *name, const char *root, char *buf, size_t cap) {
    cli_err("encdec: \"%s\" is not installed in %s, and this encdec was built without libcurl "
            "(libcurl4-openssl-dev): it cannot download it (scripts/fetch-model.sh %s can)\n",
            name, root, name);
    return NULL;
}

#else

/* What encdec reads of a repository besides config.json and the weights. */
static const char *const g_optional[] = {
    "generation_config.json", "tokenizer.json",          "vocab.json",
    "merges.txt",             "added_tokens.json",       "special_tokens_map.json",
    "tokenizer_config.json",  "preprocessor_config.json", "vocabulary.json",
    "vocabulary.txt",         "spiece.model"};

typedef struct {
    CURL *c;
    struct curl_slist *hdr;
    const char *hub, *repo;
    char err[CURL_ERROR_SIZE];
    /* the file being written and the progress line */
    FILE *out;
    const char *file;
    int tty;
    time_t shown;
} hub;

/* a/b into buf: 0, or -1 when it does not fit. */
static int join(char *buf, size_t cap, const char *a, const char *b) {
    return (size_t)snprintf(buf, cap, "%s/%s", a, b) < cap ? 0 : -1;
}

static size_t to_file(char *p, size_t sz, size_t n, void *u) {
    hub *h = u;
    return h->out ? fwrite(p, sz, n, h->out) : sz * n;
}

static int progress(void *u, curl_off_t total, curl_off_t now, curl_off_t ut, curl_off_t un) {
    hub *h = u;
    time_t t = time(NULL);
    if (!h->tty || !h->out || total < (8 << 20) || t == h->shown) return 0;
    h->shown = t;
    fprintf(stderr, "\rencdec: %s: %3d%% of %.1f MB ", h->file, (int)(100 * now / total),
            (double)total / 1e6);
    return 0;
}

/* GET hub/path into file (NULL: the body is dropped). The HTTP status, or
 * -1 when the transfer failed (h->err says why). */
static long get(hub *h, const char *path, const char *file) {
    char url[8192];
    h->out = NULL;
    if (join(url, sizeof url, h->hub, path)) {
        snprintf(h->err, sizeof h->err, "the URL is too long");
        return -1;
    }
    if (file && !(h->out = fopen(file, "wb"))) {
        snprintf(h->err, sizeof h->err, "%s: %s", file, strerror(errno));
        return -1;
    }
    h->err[0] = 0;
    curl_easy_setopt(h->c, CURLOPT_URL, url);
    CURLcode rc = curl_easy_perform(h->c);
    long code = -1;
    if (rc == CURLE_OK) curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &code);
    else if (!h->err[0]) snprintf(h->err, sizeof h->err, "%s", curl_easy_strerror(rc));
    if (h->out && fclose(h->out) != 0 && code == 200) {
        snprintf(h->err, sizeof h->err, "%s: %s", file, strerror(errno));
        code = -1;
    }
    if (h->tty && file) fprintf(stderr, "\r\033[K");
    h->out = NULL;
    if (file && code != 200) unlink(file);
    return code;
}

/* One file of the repository into dir: 1 fetched, 0 absent (404, when not
 * needed), -1 failed (message printed). */
static int fetch(hub *h, const char *dir, const char *f, int needed) {
    char path[4096], dest[4096];
    h->file = f;
    if ((size_t)snprintf(path, sizeof path, "%s/resolve/main/%s", h->repo, f) >= sizeof path ||
        join(dest, sizeof dest, dir, f)) {
        cli_err("encdec: a path of %s is too long\n", h->repo);
        return -1;
    }
    if (!h->tty && (needed || !strncmp(f, "model", 5))) fprintf(stderr, "encdec: downloading %s of %s\n", f, h->repo);
    long code = get(h, path, dest);
    if (code == 200) return 1;
    if (code == 404 && !needed) return 0;
    if (code < 0) cli_err("encdec: downloading %s from %s failed (%s)\n", h->repo, h->hub, h->err);
    else cli_err("encdec: downloading %s of %s failed (HTTP %ld)\n", f, h->repo, code);
    return -1;
}

/* The shards an index names (model.safetensors.index.json's weight_map), fetched. */
static int fetch_shards(hub *h, const char *dir) {
    char path[4096];
    FILE *f = join(path, sizeof path, dir, "model.safetensors.index.json") ? NULL : fopen(path, "rb");
    char *txt = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (txt = malloc((size_t)n + 1)) && fread(txt, 1, (size_t)n, f) == (size_t)n)
        txt[n] = 0;
    else free(txt), txt = NULL;
    if (f) fclose(f);
    cJSON *js = txt ? cJSON_Parse(txt) : NULL;
    free(txt);
    cJSON *map = cJSON_GetObjectItem(js, "weight_map"), *e;
    if (!cJSON_IsObject(map)) {
        cli_err("encdec: %s's model.safetensors.index.json has no weight_map\n", h->repo);
        cJSON_Delete(js);
        return -1;
    }
    int rc = 0;
    cJSON_ArrayForEach(e, map) {
        const char *s = cJSON_GetStringValue(e);
        if (!s || !*s || strchr(s, '/') || s[0] == '.') {
            cli_err("encdec: %s's index names a bad shard\n", h->repo);
            rc = -1;
            break;
        }
        if (join(path, sizeof path, dir, s) == 0 && access(path, F_OK) == 0) continue;   /* named by many tensors: once */
        if (fetch(h, dir, s, 1) < 0) {
            rc = -1;
            break;
        }
    }
    cJSON_Delete(js);
    return rc;
}

/* Every file of the repository into dir: 0, or -1 (message printed). */
static int fetch_all(hub *h, const char *dir) {
    int r;
    if (fetch(h, dir, "config.json", 1) < 0) return -1;
    if ((r = fetch(h, dir, "model.safetensors", 0)) < 0) return -1;
    if (r == 0) {
        if ((r = fetch(h, dir, "model.safetensors.index.json", 0)) < 0) return -1;
        if (r == 1 && fetch_shards(h, dir) < 0) return -1;
        if (r == 0 && (r = fetch(h, dir, "model.bin", 0)) <= 0) {
            if (r == 0) cli_err("encdec: %s has no model.safetensors, index or model.bin\n", h->repo);
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof g_optional / sizeof g_optional[0]; i++)
        if (fetch(h, dir, g_optional[i], 0) < 0) return -1;
    return 0;
}

/* rm -r of a folder this code made (plain files inside). */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            if (join(p, sizeof p, dir, e->d_name) == 0) unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

/* mkdir -p */
static int make_dirs(const char *path) {
    char p[4096];
    if ((size_t)snprintf(p, sizeof p, "%s", path) >= sizeof p) return -1;
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static void curl_start(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Asks the hub whether the repository exists: 0, or -1 (message printed). */
static int exists(hub *h) {
    char path[4096];
    long code = -1;
    if ((size_t)snprintf(path, sizeof path, "api/models/%s", h->repo) < sizeof path)
        code = get(h, path, NULL);
    if (code == 200) return 0;
    if (code < 0)
        cli_err("encdec: cannot reach %s to download %s (%s); give a model directory instead\n",
                h->hub, h->repo, h->err);
    else if (code == 401 || code == 403)
        cli_err("encdec: %s needs a Hugging Face token with access to it (HF_TOKEN; HTTP %ld)\n",
                h->repo, code);
    else if (code == 404)
        cli_err("encdec: no repository %s on the Hugging Face hub (%s)\n", h->repo, h->hub);
    else cli_err("encdec: the Hugging Face hub answered HTTP %ld for %s\n", code, h->repo);
    return -1;
}

static void hub_setup(hub *h) {
    h->c = curl_easy_init();
    curl_easy_setopt(h->c, CURLOPT_FOLLOWLOCATION, 1L);   /* resolve/ redirects to the CDN */
    curl_easy_setopt(h->c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h->c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h->c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(h->c, CURLOPT_LOW_SPEED_LIMIT, 1L);   /* a stalled transfer fails in 60 s */
    curl_easy_setopt(h->c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h->c, CURLOPT_USERAGENT, "encdec/" ENCDEC_VERSION);
    curl_easy_setopt(h->c, CURLOPT_ERRORBUFFER, h->err);
    curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, to_file);
    curl_easy_setopt(h->c, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(h->c, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(h->c, CURLOPT_XFERINFODATA, h);
    curl_easy_setopt(h->c, CURLOPT_NOPROGRESS, 0L);
    const char *tok = getenv("HF_TOKEN");
    if (tok && *tok) {   /* libcurl keeps it from hosts a redirect leads to */
        size_t n = strlen(tok) + 32;
        char *line = malloc(n);
        if (line) {
            snprintf(line, n, "Authorization: Bearer %s", tok);
            h->hdr = curl_slist_append(NULL, line);
            free(line);
            curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, h->hdr);
        }
    }
}

const char *cli_hub_download(const char *name, const char *root, char *buf, size_t cap) {
    char repo[512], folder[512];
    if (!cli_hub_name(name, repo, sizeof repo, folder, sizeof folder)) return NULL;
    const char *off = getenv("HF_HUB_OFFLINE");
    if (off && *off && strcmp(off, "0")) {
        cli_err("encdec: \"%s\" is not installed in %s, and HF_HUB_OFFLINE is set: not "
                "downloading it\n", name, root);
        return NULL;
    }
    char endpoint[2048];
    const char *env = getenv("HF_ENDPOINT");
    snprintf(endpoint, sizeof endpoint, "%s", env && *env ? env : "https://huggingface.co");
    for (size_t n = strlen(endpoint); n > 0 && endpoint[n - 1] == '/'; n--) endpoint[n - 1] = 0;
    pthread_once(&g_curl_once, curl_start);
    hub h = {.hub = endpoint, .repo = repo, .tty = isatty(2)};
    hub_setup(&h);
    char part[4096];
    int ok = h.c && exists(&h) == 0;
    if (ok && ((size_t)snprintf(buf, cap, "%s/%s", root, folder) >= cap ||
               (size_t)snprintf(part, sizeof part, "%s.partial", buf) >= sizeof part)) {
        cli_err("encdec: the cache's path is too long\n");
        ok = 0;
    }
    if (ok) {
        remove_dir(part);
        if (make_dirs(root) != 0 || mkdir(part, 0777) != 0) {
            cli_err("encdec: cannot make %s: %s\n", part, strerror(errno));
            ok = 0;
        }
    }
    if (ok) {
        fprintf(stderr, "encdec: downloading %s from %s into %s\n", repo, endpoint, buf);
        ok = fetch_all(&h, part) == 0;
        if (!ok) remove_dir(part);
    }
    if (ok) {
        if (rename(part, buf) != 0) {
            cli_err("encdec: cannot rename %s: %s\n", part, strerror(errno));
            remove_dir(part);
            ok = 0;
        }
    }
    curl_slist_free_all(h.hdr);
    if (h.c) curl_easy_cleanup(h.c);
    return ok ? buf : NULL;
}

#endif
