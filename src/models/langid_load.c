/* langid_load.c - reading a language identifier's directory (langid.h):
 * langdetect's profiles into one n-gram table, its messages.properties,
 * lexilang's words.tsv and weights.tsv. Every file is checked: a profile
 * without its three totals, a count that is not a whole number, a word line
 * without languages are errors that name the file. */
#include "models/langid.h"
#include "base/err.h"
#include "base/json.h"
#include "base/utf8.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_ENTRIES (1u << 24)   /* n-grams of all profiles together */
#define MAX_WORDS (1u << 22)

typedef struct {
    uint64_t key;
    uint8_t lang;
    double p;
} triple;

typedef struct {
    triple *t;
    size_t n, cap;
} triples;

uint64_t langid_key(const uint32_t *g, int n) {
    uint64_t k = 0;
    for (int i = 0; i < n; i++) k |= (uint64_t)g[i] << (21 * i);
    return k;
}

static uint32_t hash64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k;
}

uint32_t langid_find(const langid_model *m, uint64_t key) {
    uint32_t mask = m->cap - 1;
    for (uint32_t h = hash64(key) & mask;; h = (h + 1) & mask) {
        if (m->key[h] == key) return h;
        if (!m->key[h]) return UINT32_MAX;
    }
}

static uint32_t slot_for(langid_model *m, uint64_t key) {
    uint32_t mask = m->cap - 1, h = hash64(key) & mask;
    while (m->key[h] && m->key[h] != key) h = (h + 1) & mask;
    m->key[h] = key;
    return h;
}

/* A UTF-8 string of 1 to 3 code points (a profile's n-gram) as code points. */
static int gram_of(const char *s, uint32_t g[3]) {
    size_t len = strlen(s), at = 0;
    int n = 0;
    while (at < len) {
        uint32_t cp;
        int k = ed_utf8_next((const uint8_t *)s + at, len - at, &cp);
        if (k <= 0 || cp == 0 || n == 3) return n == 3 && k > 0 ? 4 : -1;
        g[n++] = cp;
        at += (size_t)k;
    }
    return n;
}

static encdec_status profile_load(const char *path, int lang, langid_model *m, triples *tr) {
    cJSON *root;
    encdec_status st = ed_json_load(path, &root);
    if (st) return st;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    const cJSON *freq = cJSON_GetObjectItemCaseSensitive(root, "freq");
    const cJSON *nw = cJSON_GetObjectItemCaseSensitive(root, "n_words"), *it;
    double tot[3];
    if (!cJSON_IsString(name) || !*name->valuestring || strlen(name->valuestring) >= sizeof m->lang[0] ||
        !cJSON_IsObject(freq) || !cJSON_IsArray(nw) || cJSON_GetArraySize(nw) != 3) {
        cJSON_Delete(root);
        return ed_fail(ENCDEC_ERR_FORMAT, "%s: not a langdetect profile (name, freq, n_words[3])", path);
    }
    for (int i = 0; i < 3; i++) {
        it = cJSON_GetArrayItem(nw, i);
        tot[i] = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (!(tot[i] > 0 && tot[i] < 9007199254740992.0 && tot[i] == floor(tot[i]))) {
            cJSON_Delete(root);
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: n_words[%d] is not a positive whole number", path, i);
        }
    }
    for (int i = 0; i < lang; i++)
        if (!strcmp(m->lang[i], name->valuestring)) {
            cJSON_Delete(root);
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: a second profile of %s", path, m->lang[i]);
        }
    snprintf(m->lang[lang], sizeof m->lang[0], "%s", name->valuestring);
    cJSON_ArrayForEach(it, freq) {
        uint32_t g[3];
        int n = gram_of(it->string, g);
        double c = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (n < 0 || !(c >= 0 && c < 9007199254740992.0 && c == floor(c))) {
            encdec_status bad = ed_fail(ENCDEC_ERR_FORMAT, "%s: n-gram \"%.20s\" has no whole count", path,
                                        it->string ? it->string : "");
            cJSON_Delete(root);   /* (after the message: it quotes the n-gram) */
            return bad;
        }
        if (n < 1 || n > 3) continue;   /* langdetect reads 1- to 3-grams only */
        if (tr->n == tr->cap) {
            size_t cap = tr->cap ? 2 * tr->cap : 1 << 16;
            triple *t = cap <= MAX_ENTRIES ? realloc(tr->t, cap * sizeof *t) : NULL;
            if (!t) {
                cJSON_Delete(root);
                return ed_fail(ENCDEC_ERR_NOMEM, "%s: too many n-grams", path);
            }
            tr->t = t;
            tr->cap = cap;
        }
        tr->t[tr->n++] = (triple){langid_key(g, n), (uint8_t)lang, c / tot[n - 1]};
    }
    cJSON_Delete(root);
    return ENCDEC_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The profile files of dir/profiles, sorted (dot files and directories out). */
static encdec_status profile_names(const char *pdir, char ***names, int *n) {
    DIR *d = opendir(pdir);
    if (!d) return ed_fail(ENCDEC_ERR_IO, "%s: %s", pdir, strerror(errno));
    struct dirent *e;
    char **v = calloc(LANGID_MAX + 1, sizeof *v);
    int k = 0;
    encdec_status st = v ? ENCDEC_OK : ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    while (!st && (e = readdir(d))) {
        char path[4096];
        struct stat sb;
        if (e->d_name[0] == '.') continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", pdir, e->d_name) >= sizeof path ||
            stat(path, &sb) || !S_ISREG(sb.st_mode))
            continue;
        if (k == LANGID_MAX) st = ed_fail(ENCDEC_ERR_FORMAT, "%s: more than %d profiles", pdir, LANGID_MAX);
        else if (!(v[k++] = strdup(path))) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    }
    closedir(d);
    if (!st && k < 2) st = ed_fail(ENCDEC_ERR_FORMAT, "%s: fewer than two language profiles", pdir);
    if (st) {
        for (int i = 0; i < k; i++) free(v[i]);
        free(v);
        return st;
    }
    qsort(v, (size_t)k, sizeof *v, by_name);
    *names = v;
    *n = k;
    return ENCDEC_OK;
}

/* The triples as the table: keys, then each n-gram's entries side by side. */
static encdec_status table_build(langid_model *m, const triples *tr) {
    uint32_t cap = 1024;
    while (cap < 2 * tr->n) cap *= 2;
    m->cap = cap;
    m->key = calloc(cap, sizeof *m->key);
    m->first = calloc(cap, sizeof *m->first);
    m->count = calloc(cap, sizeof *m->count);
    m->ent = malloc((tr->n + 1) * sizeof *m->ent);
    uint32_t *slot = malloc((tr->n + 1) * sizeof *slot);
    if (!m->key || !m->first || !m->count || !m->ent || !slot) {
        free(slot);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < tr->n; i++) {
        slot[i] = slot_for(m, tr->t[i].key);
        m->count[slot[i]]++;   /* at most one entry per language: < 256 */
    }
    uint32_t at = 0;
    for (uint32_t h = 0; h < cap; h++) {
        m->first[h] = at;
        at += m->count[h];
        m->count[h] = 0;
    }
    for (size_t i = 0; i < tr->n; i++) {   /* languages in order within an n-gram */
        uint32_t h = slot[i];
        m->ent[m->first[h] + m->count[h]].lang = tr->t[i].lang;
        m->ent[m->first[h] + m->count[h]].p = tr->t[i].p;
        m->count[h]++;
    }
    m->n_ent = at;
    free(slot);
    return ENCDEC_OK;
}

/* ---- messages.properties ------------------------------------------------------------------ */

/* value's \uXXXX escapes as code points (at most cap); -1 when malformed. */
static int unescape(const char *v, uint32_t *out, int cap) {
    int n = 0;
    while (*v) {
        uint32_t cp;
        if (v[0] == '\\' && v[1] == 'u') {
            char hex[5] = {0};
            memcpy(hex, v + 2, 4);
            char *end;
            cp = (uint32_t)strtoul(hex, &end, 16);
            if (end != hex + 4) return -1;
            v += 6;
        } else {
            int k = ed_utf8_next((const uint8_t *)v, strlen(v), &cp);
            if (k <= 0) return -1;
            v += k;
        }
        if (n == cap) return -1;
        out[n++] = cp;
    }
    return n;
}

static int by_cp(const void *a, const void *b) {
    uint32_t x = ((const uint32_t *)a)[0], y = ((const uint32_t *)b)[0];
    return x < y ? -1 : x > y;
}

static encdec_status messages_line(langid_model *m, const char *key, const char *val, uint32_t *buf,
                                   int cap, uint32_t (*pairs)[2], int *n_pairs, const char *path) {
    int n = unescape(val, buf, cap);
    if (n < 0) return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s: a malformed value", path, key);
    if (!strcmp(key, "NGram.LATIN1_EXCLUDE")) {
        if (n > 8) return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s: too long", path, key);
        memcpy(m->latin1_excluded, buf, (size_t)n * sizeof *buf);
        m->n_latin1_excluded = n;
    } else if (!strncmp(key, "NGram.KANJI_", 12)) {   /* a class: each kanji -> its first */
        for (int i = 0; i < n; i++) {
            pairs[*n_pairs][0] = buf[i];
            pairs[*n_pairs][1] = buf[0];
            ++*n_pairs;
        }
    } else if (!strcmp(key, "TO_NORMALIZE_VI_CHARS")) {
        if (n > 32) return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s: too long", path, key);
        memcpy(m->vi_base, buf, (size_t)n * sizeof *buf);
        m->n_vi_base = n;
    } else if (!strcmp(key, "DMARK_CLASS")) {
        if (n > 8) return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s: too long", path, key);
        memcpy(m->vi_mark, buf, (size_t)n * sizeof *buf);
        m->n_vi_mark = n;
    } else if (!strncmp(key, "NORMALIZED_VI_CHARS_", 20)) {   /* _0300 ...: the mark's code point */
        uint32_t mark = (uint32_t)strtoul(key + 20, NULL, 16);
        int row = -1;
        for (int i = 0; i < m->n_vi_mark; i++)
            if (m->vi_mark[i] == mark) row = i;
        if (row < 0 || n > 32) return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s: no such mark", path, key);
        memcpy(m->vi_to[row], buf, (size_t)n * sizeof *buf);
    }
    return ENCDEC_OK;
}

/* The keys langdetect reads; the KANJI classes as a sorted map (one class a
 * kanji in langdetect's file). DMARK_CLASS comes before the rows it names. */
static encdec_status messages_load(const char *path, langid_model *m) {
    FILE *f = fopen(path, "rb");
    if (!f) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
    enum { CAP = 1 << 16 };
    char *line = malloc(CAP * 8);
    uint32_t *buf = malloc(CAP * sizeof *buf);
    uint32_t(*pairs)[2] = malloc(CAP * sizeof *pairs);
    int n_pairs = 0, vi_rows = 0;
    encdec_status st = line && buf && pairs ? ENCDEC_OK : ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    while (!st && fgets(line, CAP * 8, f)) {
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = 0;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        if (!strncmp(line, "NGram.KANJI_", 12) && n_pairs + (int)strlen(eq + 1) > CAP) {
            st = ed_fail(ENCDEC_ERR_FORMAT, "%s: too many kanji", path);
            break;
        }
        vi_rows += !strncmp(line, "NORMALIZED_VI_CHARS_", 20);
        st = messages_line(m, line, eq + 1, buf, CAP - n_pairs, pairs, &n_pairs, path);
    }
    fclose(f);
    if (!st && (!m->n_latin1_excluded || !n_pairs || !m->n_vi_base || vi_rows != m->n_vi_mark))
        st = ed_fail(ENCDEC_ERR_FORMAT, "%s: not langdetect's messages (LATIN1_EXCLUDE, KANJI, VI)", path);
    if (!st) {
        qsort(pairs, (size_t)n_pairs, sizeof *pairs, by_cp);
        m->cjk_from = malloc((size_t)n_pairs * sizeof *m->cjk_from);
        m->cjk_to = malloc((size_t)n_pairs * sizeof *m->cjk_to);
        if (!m->cjk_from || !m->cjk_to) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
        for (int i = 0; !st && i < n_pairs; i++) {
            m->cjk_from[i] = pairs[i][0];
            m->cjk_to[i] = pairs[i][1];
        }
        m->n_cjk = n_pairs;
    }
    free(line);
    free(buf);
    free(pairs);
    return st;
}

/* ---- lexilang ----------------------------------------------------------------------------- */

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static int wlang_index(langid_model *m, const char *code) {
    for (int i = 0; i < m->n_wlang; i++)
        if (!strcmp(m->wlang[i], code)) return i;
    return -1;
}

/* weights.tsv: "code<TAB>weight" a line, every language of the word list. */
static encdec_status weights_load(const char *path, langid_model *m) {
    FILE *f = fopen(path, "rb");
    if (!f) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
    char line[256], code[16];
    double w;
    encdec_status st = ENCDEC_OK;
    while (!st && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%15s %lf", code, &w) != 2 || strlen(code) >= sizeof m->wlang[0] || !(w >= 0))
            st = ed_fail(ENCDEC_ERR_FORMAT, "%s: a line is not \"code weight\"", path);
        else if (m->n_wlang == LANGID_WORD_LANGS || wlang_index(m, code) >= 0)
            st = ed_fail(ENCDEC_ERR_FORMAT, "%s: too many or repeated languages", path);
        else {
            snprintf(m->wlang[m->n_wlang], sizeof m->wlang[0], "%s", code);
            m->wweight[m->n_wlang++] = w;
        }
    }
    fclose(f);
    if (!st && !m->n_wlang) st = ed_fail(ENCDEC_ERR_FORMAT, "%s: no languages", path);
    return st;
}

/* One words.tsv line: "word<TAB>code code ...": the word's languages in
 * lexilang's order. */
static encdec_status word_add(langid_model *m, char *line, const char *path) {
    char *tab = strchr(line, '\t');
    if (!tab || tab == line) return ed_fail(ENCDEC_ERR_FORMAT, "%s: a line is not \"word<TAB>languages\"", path);
    *tab = 0;
    uint8_t ids[LANGID_WORD_LANGS + 1];
    int n = 0;
    for (char *save = NULL, *c = strtok_r(tab + 1, " \n", &save); c; c = strtok_r(NULL, " \n", &save)) {
        int i = wlang_index(m, c);
        if (i < 0 || n == LANGID_WORD_LANGS)
            return ed_fail(ENCDEC_ERR_FORMAT, "%s: word \"%.20s\": unknown language %.8s", path, line, c);
        ids[n++] = (uint8_t)i;
    }
    if (!n) return ed_fail(ENCDEC_ERR_FORMAT, "%s: word \"%.20s\" has no language", path, line);
    ids[n++] = 0xff;
    uint32_t mask = m->wcap - 1, h = hash_str(line) & mask;
    while (m->word[h]) {
        if (!strcmp(m->word[h], line)) return ed_fail(ENCDEC_ERR_FORMAT, "%s: word \"%.20s\" twice", path, line);
        h = (h + 1) & mask;
    }
    m->word[h] = strdup(line);
    m->word_langs[h] = malloc((size_t)n);
    if (!m->word[h] || !m->word_langs[h]) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    memcpy(m->word_langs[h], ids, (size_t)n);
    return ENCDEC_OK;
}

static encdec_status words_load(const char *path, langid_model *m) {
    FILE *f = fopen(path, "rb");
    if (!f) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
    size_t lines = 0, cap = 0;
    char *line = NULL;
    while (getline(&line, &cap, f) > 0) lines++;
    encdec_status st = ENCDEC_OK;
    if (lines > MAX_WORDS) st = ed_fail(ENCDEC_ERR_FORMAT, "%s: more than %u words", path, MAX_WORDS);
    m->wcap = 1024;
    while (m->wcap < 2 * lines) m->wcap *= 2;
    m->word = st ? NULL : calloc(m->wcap, sizeof *m->word);
    m->word_langs = st ? NULL : calloc(m->wcap, sizeof *m->word_langs);
    if (!st && (!m->word || !m->word_langs)) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    rewind(f);
    ssize_t got;
    while (!st && (got = getline(&line, &cap, f)) > 0) {
        if ((size_t)got != strlen(line)) st = ed_fail(ENCDEC_ERR_FORMAT, "%s: a NUL byte", path);
        else st = word_add(m, line, path);
    }
    free(line);
    fclose(f);
    return st;
}

/* ---- the model ---------------------------------------------------------------------------- */

static encdec_status load_all(const char *dir, langid_model *m) {
    char path[4096];
    char **names = NULL;
    int n = 0;
    triples tr = {0};
    snprintf(path, sizeof path, "%s/profiles", dir);
    encdec_status st = profile_names(path, &names, &n);
    for (int i = 0; !st && i < n; i++) st = profile_load(names[i], i, m, &tr);
    m->n_lang = st ? 0 : n;
    if (!st) st = table_build(m, &tr);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    free(tr.t);
    snprintf(path, sizeof path, "%s/messages.properties", dir);
    if (!st) st = messages_load(path, m);
    snprintf(path, sizeof path, "%s/weights.tsv", dir);
    if (!st) st = weights_load(path, m);
    snprintf(path, sizeof path, "%s/words.tsv", dir);
    if (!st) st = words_load(path, m);
    return st;
}

encdec_status langid_load(const char *dir, langid_model **out) {
    *out = NULL;
    langid_model *m = calloc(1, sizeof *m);
    if (!m) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    encdec_status st = load_all(dir, m);
    if (st) {
        langid_free(m);
        return st;
    }
    *out = m;
    return ENCDEC_OK;
}

void langid_free(langid_model *m) {
    if (!m) return;
    free(m->key);
    free(m->first);
    free(m->count);
    free(m->ent);
    free(m->cjk_from);
    free(m->cjk_to);
    for (uint32_t i = 0; m->word && i < m->wcap; i++) {
        free(m->word[i]);
        free(m->word_langs[i]);
    }
    free(m->word);
    free(m->word_langs);
    free(m);
}
