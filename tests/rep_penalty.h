/* rep_penalty.h - the repetition-penalty goldens of
 * tools/golden_rep_penalty.py (tests/data/bart-golden/rep_penalty.json):
 * transformers' tokens on the HF test models, CTranslate2's on their
 * CTranslate2 conversions, greedy and beam 4, penalty 1.5. Each peer's
 * rules (encdec_generate_params.ctranslate2_rules) give its tokens; the
 * other peer's rules, swapped in, must miss them somewhere (a control: the
 * goldens tell the two apart). test_bart_golden checks the "hf" side,
 * test_bart_ct2 the "ct2" side.
 */
#ifndef ED_TEST_REP_PENALTY_H
#define ED_TEST_REP_PENALTY_H

#include "check.h"
#include "encdec.h"
#include "base/json.h"

#include <stdio.h>
#include <string.h>

/* Sequences of `texts` generated from dir equal to want's (a list of token
 * lists), with the golden's penalty, beams and rules. */
static inline int rp_matches(const char *dir, const cJSON *g, const cJSON *want, int beams, int ct2) {
    const cJSON *texts = cJSON_GetObjectItem(g, "texts");
    const char *in[8];
    int B = cJSON_GetArraySize(texts), same = 0;
    for (int b = 0; b < B && b < 8; b++) in[b] = cJSON_GetArrayItem(texts, b)->valuestring;
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_model_load(dir, &m), ENCDEC_OK);
    encdec_session_params sp = {2};
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    encdec_generate_params p = encdec_generate_default_params();
    p.max_new_tokens = cJSON_GetObjectItem(g, "max_new_tokens")->valueint;
    p.repetition_penalty = (float)cJSON_GetObjectItem(g, "penalty")->valuedouble;
    p.num_beams = beams;
    p.early_stopping = 1;
    p.ctranslate2_rules = ct2;
    if (s) CHECK_EQ_INT(encdec_generate(s, in, B, &p, &r), ENCDEC_OK);
    for (int b = 0; r && b < B; b++) {
        const encdec_sequence *q = encdec_result_sequence(r, b);
        const cJSON *w = cJSON_GetArrayItem(want, b);
        int ok = q && q->n_tokens == cJSON_GetArraySize(w);
        for (int t = 0; ok && t < q->n_tokens; t++) ok = q->tokens[t].id == cJSON_GetArrayItem(w, t)->valueint;
        same += ok;
    }
    encdec_result_free(r);
    encdec_session_free(s);
    encdec_model_free(m);
    return same;
}

/* side "hf" (ct2 0) or "ct2" (ct2 1): every model's greedy and beam
 * sequences as the peer's; the other rules miss some. */
static inline void rp_check(const char *side, int ct2) {
    cJSON *g = NULL;
    if (ed_json_load(ED_TEST_DATA "/bart-golden/rep_penalty.json", &g)) {
        CHECK(0);
        fprintf(stderr, "%s\n", encdec_last_error());
        return;
    }
    int n = 0, same = 0, swapped = 0, B = cJSON_GetArraySize(cJSON_GetObjectItem(g, "texts"));
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(g, "models")) {
        char dir[512], key[32];
        snprintf(dir, sizeof dir, "%s/../../%s", ED_TEST_DATA,
                 cJSON_GetObjectItem(e, ct2 ? "ct2_dir" : "hf_dir")->valuestring);
        for (int beams = 1; beams <= 4; beams += 3) {
            snprintf(key, sizeof key, "%s_beam%d", side, beams);
            const cJSON *want = cJSON_GetObjectItem(e, key);
            same += rp_matches(dir, g, want, beams, ct2);
            swapped += rp_matches(dir, g, want, beams, !ct2);
            n += B;
        }
    }
    CHECK_EQ_INT(same, n);
    CHECK(swapped < n);
    const char *who = ct2 ? "CTranslate2's" : "transformers'";
    printf("repetition_penalty %.1f, %s rules: %d of %d sequences as %s (the other rules: %d)\n",
           cJSON_GetObjectItem(g, "penalty")->valuedouble, who, same, n, who, swapped);
    cJSON_Delete(g);
}

#endif
