/* json.h - reading JSON files with cJSON, with errors that name the file,
 * the key and the byte where parsing stopped.
 *
 *   cJSON *root;  if (ed_json_load(path, &root)) return ...;
 *   int d;  st = ed_json_int(root, "d_model", path, 1, 65536, &d);
 *   cJSON_Delete(root);
 */
#ifndef ED_JSON_H
#define ED_JSON_H

#include "encdec.h"
#include <cjson/cJSON.h>

/* Parses the file; ENCDEC_ERR_IO if unreadable, ENCDEC_ERR_CONFIG if not a
 * JSON object ("config.json: malformed JSON at byte 17"). */
encdec_status ed_json_load(const char *path, cJSON **out);

/* An integer member in [lo, hi]; ENCDEC_ERR_CONFIG if missing, not an
 * integer or out of range. */
encdec_status ed_json_int(const cJSON *obj, const char *key, const char *file,
                          long lo, long hi, int *out);

/* The same, optional: dflt when the key is absent or null. */
encdec_status ed_json_int_opt(const cJSON *obj, const char *key, const char *file,
                              long lo, long hi, int dflt, int *out);
/* An optional boolean: dflt when absent or null; anything but true or false
 * is ENCDEC_ERR_CONFIG. */
encdec_status ed_json_bool_opt(const cJSON *obj, const char *key, const char *file, int dflt,
                               int *out);

/* An optional array of integers in [lo, hi]: *out = NULL, *n = 0 when the
 * key is absent or null. Caller frees *out. */
encdec_status ed_json_int_array(const cJSON *obj, const char *key, const char *file,
                                long lo, long hi, int **out, int *n);

#endif
