/* api.h - the structs behind the public handles (internal to src/api). */
#ifndef ED_API_H
#define ED_API_H

#include "encdec.h"
#include "audio/mel.h"
#include "base/pool.h"
#include "models/whisper.h"
#include "models/whisper_step.h"

struct encdec_model {
    whisper_model *w;
};

struct encdec_session {
    const encdec_model *model;
    ed_pool *pool;
    whisper_state *st;
    whisper_runner runner;
    mel_ctx *mel;
    float *mel_buf;      /* [n_mels, 3000] */
    float *logits;       /* [n_vocab] */
    int *toks;           /* [n_text_ctx] one window's generated tokens */
    float *lps;          /* [n_text_ctx] their log-probabilities */
};

struct encdec_result {
    char *text;
    encdec_token *tokens;
    int n_tokens, cap_tokens;
    char *strs;          /* token texts, NUL-separated; tokens[i].text points in */
    size_t strs_len, strs_cap;
    encdec_timings timings;
};

double api_now_ms(void);

#endif
