/* recordings.h - the long test recordings of tests/data/longform-golden.json
 * (tools/golden_longform.py), built from ../shared/audio the same way the
 * oracle built them: 16 kHz mono files as read (s16 / 32768), and gaps of
 * low noise from a seeded LCG (x = x * 1664525 + 1013904223 mod 2^32, value
 * ((x >> 16) % 7 - 3) / 32768).
 *
 *   float *pcm; size_t n;
 *   rec_build(cJSON_GetArrayItem(recordings, 0), &pcm, &n);  ...  free(pcm);
 */
#ifndef ED_RECORDINGS_H
#define ED_RECORDINGS_H

#include "encdec.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void rec_noise(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int)((s >> 16) % 7) - 3) / 32768.0f;
    }
}

/* The recording rec ({"name", "pieces": [{"file"} | {"silence", "seed"}]})
 * into *pcm (malloc'd), *n samples; 0 on failure (message printed). */
static inline int rec_build(const cJSON *rec, float **pcm, size_t *n) {
    size_t cap = 0, len = 0;
    float *out = NULL;
    const cJSON *p;
    *pcm = NULL;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(rec, "pieces")) {
        const cJSON *file = cJSON_GetObjectItem(p, "file");
        float *part = NULL;
        size_t k = 0;
        int own = 1;
        if (cJSON_IsString(file)) {
            char path[1024];
            snprintf(path, sizeof path, "%s/audio/%s", ED_SHARED_DIR, file->valuestring);
            if (encdec_audio_load(path, 0, &part, &k)) {
                fprintf(stderr, "%s: %s\n", path, encdec_last_error());
                free(out);
                return 0;
            }
        } else {
            k = (size_t)lround(cJSON_GetObjectItem(p, "silence")->valuedouble * 16000);
            part = malloc(sizeof(float) * (k + 1));
            if (part) rec_noise(part, k, (uint32_t)cJSON_GetObjectItem(p, "seed")->valueint);
            own = 0;
        }
        if (len + k > cap) {
            cap = (len + k) * 2;
            float *q = realloc(out, sizeof(float) * cap);
            if (!q) abort();
            out = q;
        }
        memcpy(out + len, part, sizeof(float) * k);
        len += k;
        if (own) encdec_free(part);
        else free(part);
    }
    *pcm = out;
    *n = len;
    return out != NULL;
}

#endif
