/* api.h - the structs behind the public handles (internal to src/api). */
#ifndef ED_API_H
#define ED_API_H

#include "encdec.h"
#include "audio/mel.h"
#include "base/pool.h"
#include "models/whisper.h"
#include "models/t5.h"

typedef enum { API_WHISPER, API_T5 } api_family;

#define API_MAX_BEAMS 16   /* Whisper beam search: beam_size 2..16 */

struct encdec_model {
    api_family family;
    whisper_model *w;      /* API_WHISPER */
    t5_model *t5;          /* API_T5 */
    encdec_compute compute;
};

struct encdec_session {
    const encdec_model *model;
    ed_pool *pool;
    kv_dtype cross_kv;   /* cross cache storage (session params) */
    t5_state *t5;        /* API_T5: buffers grow to the largest request */
    /* API_WHISPER: */
    whisper_state *st;
    dec_runner runner;   /* the seam over st */
    mel_ctx *mel;
    float *mel_buf;      /* [n_mels, 3000] */
    float *logits;       /* [n_vocab] */
    int *toks;           /* [n_text_ctx] one window's generated tokens */
    float *lps;          /* [n_text_ctx] their log-probabilities */
};

struct encdec_result {
    encdec_token *tokens;
    size_t n_tokens, cap_tokens;
    char *strs;          /* token texts, NUL-separated; tokens[i].text points in */
    size_t strs_len, strs_cap;
    encdec_sequence *seqs;   /* texts owned */
    size_t n_seqs, cap_seqs;
    encdec_timings timings;
};

double api_now_ms(void);
const char *api_compute_name(encdec_compute c);

/* result.c: building a result (see there). */
encdec_status api_result_add_token(encdec_result *r, int id, float logprob, const char *text,
                                   size_t len, int window);
/* Sequence of tokens [first, first + n_tokens); takes text (malloc'd). */
encdec_status api_result_add_sequence(encdec_result *r, int input, int rank, float score,
                                      int first, int n_tokens, char *text);
void api_result_finish(encdec_result *r);

#endif
