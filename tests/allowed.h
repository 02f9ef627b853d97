/* allowed.h - the goldens that let a random model generate only a few
 * tokens (tools/golden_lt_unknowns.py, tools/golden_translator_options.py):
 * every other token of the model as suppress_tokens. */
#ifndef ED_TEST_ALLOWED_H
#define ED_TEST_ALLOWED_H

#include "encdec.h"

#include <cjson/cJSON.h>
#include <string.h>

/* The ids of m's tokens not spelled as one of allowed's strings into sup
 * (room for every token): their count. */
static inline int suppress_all_but(const encdec_model *m, const cJSON *allowed, int *sup) {
    int n = 0;
    for (int id = 0; encdec_model_token(m, id); id++) {
        int ok = 0;
        for (int a = 0; a < cJSON_GetArraySize(allowed); a++)
            ok |= !strcmp(encdec_model_token(m, id), cJSON_GetArrayItem(allowed, a)->valuestring);
        if (!ok) sup[n++] = id;
    }
    return n;
}

#endif
