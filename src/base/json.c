/* json.c - cJSON with named errors. */
#include "base/json.h"
#include "base/err.h"
#include "base/fmap.h"

#include <math.h>
#include <stdlib.h>

encdec_status ed_json_load(const char *path, cJSON **out) {
    *out = NULL;
    char *text;
    size_t len;
    encdec_status st = ed_read_file(path, &text, &len);
    if (st) return st;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        if (!root) {
            const char *e = cJSON_GetErrorPtr();
            at = e && e >= text && e <= text + len ? (size_t)(e - text) : at;
        }
        cJSON_Delete(root);
        free(text);
        return root ? ed_fail(ENCDEC_ERR_CONFIG, "%s: expected a JSON object", ed_basename(path))
                    : ed_fail(ENCDEC_ERR_CONFIG, "%s: malformed JSON at byte %zu", ed_basename(path), at);
    }
    free(text);
    *out = root;
    return ENCDEC_OK;
}

static int as_int(const cJSON *v, long lo, long hi, int *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double x = v->valuedouble;
    if (x != floor(x) || x < (double)lo || x > (double)hi) return 0;
    *out = (int)x;
    return 1;
}

encdec_status ed_json_int(const cJSON *obj, const char *key, const char *file,
                          long lo, long hi, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return ed_fail(ENCDEC_ERR_CONFIG, "%s: missing \"%s\"", ed_basename(file), key);
    if (!as_int(v, lo, hi, out))
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: \"%s\" must be an integer in [%ld, %ld]",
                       ed_basename(file), key, lo, hi);
    return ENCDEC_OK;
}

encdec_status ed_json_int_array(const cJSON *obj, const char *key, const char *file,
                                long lo, long hi, int **out, int *n) {
    *out = NULL;
    *n = 0;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!a || cJSON_IsNull(a)) return ENCDEC_OK;
    if (!cJSON_IsArray(a))
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: \"%s\" must be an array", ed_basename(file), key);
    int count = cJSON_GetArraySize(a);
    int *v = malloc(sizeof *v * (size_t)(count ? count : 1));
    if (!v) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", key);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (!as_int(e, lo, hi, &v[i])) {
            free(v);
            return ed_fail(ENCDEC_ERR_CONFIG, "%s: \"%s\"[%d] must be an integer in [%ld, %ld]",
                           ed_basename(file), key, i, lo, hi);
        }
        i++;
    }
    *out = v;
    *n = count;
    return ENCDEC_OK;
}

encdec_status ed_json_int_opt(const cJSON *obj, const char *key, const char *file,
                              long lo, long hi, int dflt, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        *out = dflt;
        return ENCDEC_OK;
    }
    return ed_json_int(obj, key, file, lo, hi, out);
}

encdec_status ed_json_bool_opt(const cJSON *obj, const char *key, const char *file, int dflt,
                               int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = dflt;
    if (!v || cJSON_IsNull(v)) return ENCDEC_OK;
    if (!cJSON_IsBool(v))
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: \"%s\" must be true or false", ed_basename(file), key);
    *out = cJSON_IsTrue(v);
    return ENCDEC_OK;
}
