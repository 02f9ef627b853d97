/* modeldir.h - throw-away copies of a test model, to break one thing at a
 * time (error tests). Needs tmpdir.h's tmp_new first.
 *
 *   const char *d = md_copy(SRC, "bad-ffn", files);    tmp_dir/bad-ffn with copies
 *   md_set_config(d, "feed_forward_proj", "\"gated-swoosh\"");
 */
#ifndef ED_MODELDIR_H
#define ED_MODELDIR_H

#include "check.h"
#include "tmpdir.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <sys/stat.h>

/* The whole file, NUL-terminated (exits 2 when unreadable). */
static inline uint8_t *md_read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(2); }
    fclose(f);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

/* A fresh directory tmp_dir/name holding copies of src's files named in
 * `files` (NULL-terminated); returns its path (static storage, 8 rotating). */
static inline const char *md_copy(const char *src, const char *name, const char *const *files) {
    static char dir[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(dir[k], sizeof dir[k], "%s/%s", tmp_dir, name);
    if (mkdir(dir[k], 0700) != 0) { perror(dir[k]); exit(2); }
    for (; *files; files++) {
        size_t n;
        uint8_t *b = md_read_all(tmp_join(src, *files), &n);
        tmp_write(tmp_join(dir[k], *files), b, n);
        free(b);
    }
    return dir[k];
}

/* Sets config.json's key to the JSON value `json` (e.g. "96", "\"t5\"");
 * json NULL removes the key. */
static inline void md_set_config(const char *dir, const char *key, const char *json) {
    size_t n;
    char *text = (char *)md_read_all(tmp_join(dir, "config.json"), &n);
    cJSON *c = cJSON_Parse(text);
    cJSON *v = json ? cJSON_Parse(json) : NULL;
    if (!c || (json && !v)) { fprintf(stderr, "md_set_config: bad JSON\n"); exit(2); }
    if (v && cJSON_GetObjectItemCaseSensitive(c, key)) cJSON_ReplaceItemInObjectCaseSensitive(c, key, v);
    else if (v) cJSON_AddItemToObject(c, key, v);
    else cJSON_DeleteItemFromObjectCaseSensitive(c, key);
    char *out = cJSON_Print(c);
    tmp_write(tmp_join(dir, "config.json"), out, strlen(out));
    free(out);
    free(text);
    cJSON_Delete(c);
}

/* Loads path through the public API; a model that loads is freed again.
 * The status, with the message in encdec_last_error(). */
static inline encdec_status md_load(const char *path) {
    static char not_null;
    encdec_model *m = (encdec_model *)&not_null;   /* must be reset to NULL on failure */
    encdec_status st = encdec_model_load(path, &m);
    if (st == ENCDEC_OK) CHECK(m != NULL);
    else CHECK(m == NULL);
    encdec_model_free(st == ENCDEC_OK ? m : NULL);
    return st;
}

#endif
