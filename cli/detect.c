/* detect.c - encdec detect-language: which language each text is in, as
 * langdetect (its character n-gram profiles, the default) or lexilang (its
 * word lists, --words) say, from the library's encdec_langid_*. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LANGS 64     /* a detect answer's languages (langdetect has 55) */
#define MAX_ALLOW 128    /* --languages codes */

static const char *USAGE =
    "usage: encdec detect-language [options] [TEXT...]\n"
    "\n"
    "Which language each TEXT is in (without TEXT: each line of standard input), as\n"
    "langdetect says (its character n-gram profiles, 55 languages, its random trials at\n"
    "the seed LibreTranslate fixes: the languages above probability 0.1, most likely\n"
    "first), or with --words as lexilang says (its word lists, 46 languages: the\n"
    "language most of the words belong to). LibreTranslate's /detect asks lexilang\n"
    "first for texts under 20 characters (encdec serve does too). One line per text:\n"
    "CODE PROBABILITY pairs (langdetect; none when no n-gram of the text is known) or\n"
    "CODE CONFIDENCE (--words: \"en 0\" when no word is known).\n"
    "\n"
    "options:\n"
    "      --words            lexilang's word vote instead of langdetect\n"
    "      --languages LIST   --words: the codes to choose among (\"en,fr,de\"; default:\n"
    "                         all of lexilang's)\n"
    "      --json             one JSON object per text: {\"text\", \"languages\":\n"
    "                         [{\"language\", \"probability\"}]}\n"
    "      --langid DIR       the identifier's data (default: $ENCDEC_LANGID, else\n"
    "                         ~/.cache/encdec/models/langdetect, which\n"
    "                         scripts/fetch-model.sh langid installs)\n"
    "  -h, --help             this help\n";

typedef struct {
    int words, json;
    const char *allow[MAX_ALLOW];
    int n_allow;
    char *allow_buf;
} opts;

/* "en,fr,de" into o->allow (o->allow_buf owns the copy); 0 on a bad list. */
static int parse_languages(opts *o, const char *s) {
    free(o->allow_buf);
    o->n_allow = 0;
    if (!(o->allow_buf = strdup(s))) return 0;
    for (char *save = NULL, *t = strtok_r(o->allow_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->n_allow == MAX_ALLOW || strlen(t) > 16) {
            cli_err("encdec detect-language: --languages: at most %d codes of at most 16 characters\n",
                    MAX_ALLOW);
            return 0;
        }
        o->allow[o->n_allow++] = t;
    }
    if (!o->n_allow) cli_err("encdec detect-language: --languages needs a comma-separated list of codes\n");
    return o->n_allow > 0;
}

/* One text's answer on standard output; 0 (message printed) on an error. */
static int detect(const encdec_langid *l, const opts *o, const char *text) {
    encdec_text_language g[MAX_LANGS];
    int n = 0, found = 0;
    encdec_status st = o->words ? encdec_langid_words(l, text, o->n_allow ? o->allow : NULL, o->n_allow, g, &found)
                                : encdec_langid_detect(l, text, g, MAX_LANGS, &n);
    if (st) {
        cli_err("encdec detect-language: \"%.60s\": %s\n", text, encdec_last_error());
        return 0;
    }
    if (o->words) {
        if (!found) g[0] = (encdec_text_language){"en", 0};   /* lexilang's answer then */
        n = 1;
    }
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "text", text);
        cJSON *a = cJSON_AddArrayToObject(j, "languages");
        for (int i = 0; i < n; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "language", g[i].language);
            cJSON_AddNumberToObject(e, "probability", g[i].probability);
            cJSON_AddItemToArray(a, e);
        }
        char *s = cJSON_PrintUnformatted(j);
        if (s) puts(s);
        free(s);
        cJSON_Delete(j);
        return s != NULL;
    }
    for (int i = 0; i < n; i++) printf("%s%s %.*g", i ? " " : "", g[i].language, o->words ? 3 : 8, g[i].probability);
    putchar('\n');
    return 1;
}

int cli_detect_language(int argc, char **argv) {
    opts o = {0};
    const char *given = NULL;
    cli_args p;
    if (!cli_args_init(&p, argc)) return 1;
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        if (cli_positional(&p, argc, argv, &i)) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            free(p.v);
            free(o.allow_buf);
            return 0;
        } else if (!strcmp(a, "--words")) {
            o.words = 1;
        } else if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--languages") || !strcmp(a, "--langid")) {
            if (i + 1 >= argc) {
                cli_err("encdec detect-language: %s needs a value\n", a);
                rc = CLI_USAGE_ERR;
            } else if (!strcmp(a, "--langid")) {
                given = argv[++i];
            } else if (!parse_languages(&o, argv[++i])) {
                rc = CLI_USAGE_ERR;
            }
        } else {
            cli_err("encdec detect-language: unknown option \"%s\" (see encdec detect-language --help)\n", a);
            rc = CLI_USAGE_ERR;
        }
    }
    if (!rc && o.n_allow && !o.words) {
        cli_err("encdec detect-language: --languages is lexilang's: give --words too\n");
        rc = CLI_USAGE_ERR;
    }
    int first = rc ? argc : cli_args_finish(&p, argc, argv);
    char buf[4096];
    const char *dir = rc ? NULL : cli_langid_path(given, buf, sizeof buf);
    if (!rc && !dir) {
        cli_err("encdec detect-language: the language identifier is not at %s\n"
                "  fetch it with:  scripts/fetch-model.sh langid   (from the encdec source tree)\n", buf);
        rc = 1;
    }
    encdec_langid *l = NULL;
    if (!rc && encdec_langid_load(dir, &l)) {
        cli_err("encdec detect-language: cannot load the language identifier %s: %s\n", dir, encdec_last_error());
        rc = 1;
    }
    int failed = 0;
    if (!rc && first < argc) {
        for (int i = first; i < argc; i++) failed |= !detect(l, &o, argv[i]);
    } else if (!rc) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, stdin)) >= 0) {
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
            if (strlen(line) != (size_t)len) {
                cli_err("encdec detect-language: a line of standard input holds a NUL byte\n");
                failed = 1;
                continue;
            }
            failed |= !detect(l, &o, line);
        }
        free(line);
    }
    encdec_langid_free(l);
    free(p.v);
    free(o.allow_buf);
    return rc ? rc : failed;
}
