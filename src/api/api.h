/* api.h - the structs behind the public handles (internal to src/api). */
#ifndef ED_API_H
#define ED_API_H

#include "encdec.h"
#include "audio/audio.h"
#include "audio/mel.h"
#include "base/pool.h"
#include "models/whisper.h"
#include "models/t5.h"
#include "models/bart.h"
#include "models/s2s.h"
#include "decode/search.h"
#include "asr/asr.h"
#include "asr/speech.h"

#include <stdatomic.h>

typedef enum { API_WHISPER, API_T5, API_BART } api_family;

#define API_MAX_BEAMS 16   /* Whisper beam search: beam_size 2..16 */

struct encdec_model {
    api_family family;
    whisper_model *w;      /* API_WHISPER */
    t5_model *t5;          /* API_T5 */
    bart_model *bart;      /* API_BART */
    s2s_model text;        /* API_T5, API_BART: generation's view of the model */
    ed_ttok *ttok;         /* its tokenizer (owned) */
    encdec_generate_params gen_defaults;   /* encdec_generate_model_params' (text models) */
    encdec_compute compute;
    int isa;               /* kernel-set limit of its loads and sessions (base/isa.h) */
    /* on a GPU: the handle the weights were uploaded with, the device
     * index each session and engine opens its own handle on, and the
     * device copy of w that their states run (w keeps the tokenizer and
     * rules) */
    struct ed_dev *dev;
    int dev_index;
    whisper_model *w_dev;
    void *text_dev;        /* API_T5, API_BART: the device copy text.model points at */
};

/* gen_config.c: from the generation config in dir (generation_config.json,
 * else config.json): m->text's suppress list (bad_words_ids) and
 * m->gen_defaults (the search settings it names). */
encdec_status api_gen_config(struct encdec_model *m, const char *dir);

/* A text-to-text model (T5, the BART family): generation, not transcription. */
static inline int api_is_text(const encdec_model *m) { return m->family != API_WHISPER; }

/* The Whisper weights a state runs: the device copy, else w. */
static inline const whisper_model *api_w_run(const encdec_model *m) {
    return m->w_dev ? m->w_dev : m->w;
}
/* A session's or engine's own handle on the model's device (NULL *out on
 * the CPU). */
encdec_status api_dev_open(const encdec_model *m, struct ed_dev **out);

struct encdec_session {
    const encdec_model *model;
    ed_pool *pool;
    struct ed_dev *dev;  /* its own handle on the model's device (NULL: the CPU) */
    kv_dtype cross_kv;   /* cross cache storage (session params) */
    void *text_st;       /* API_T5, API_BART: the family's state (model->text.ops);
                            buffers grow to the largest request */
    /* API_WHISPER: */
    whisper_state *st;
    dec_runner runner;   /* the seam over st */
    mel_ctx *mel;
};

/* Per sequence of a result, a matrix of rows [its tokens, width[i]] (or
 * NULL): attention, logits. */
typedef struct {
    float **rows;
    int *width;
    size_t n;
} api_seq_rows;

struct encdec_result {
    encdec_token *tokens;
    size_t n_tokens, cap_tokens;
    char *strs;          /* token, segment and word texts, NUL-separated; pointers in after
                            api_result_finish (offsets before) */
    size_t strs_len, strs_cap;
    encdec_sequence *seqs;   /* texts owned */
    size_t n_seqs, cap_seqs;
    encdec_segment *segs;    /* text: offset in strs, tokens: index in tokens, words: index in
                                words, until api_result_finish */
    size_t n_segs, cap_segs;
    encdec_word *words;      /* word: offset in strs until api_result_finish */
    size_t n_words, cap_words;
    const char *language;    /* static */
    const char *lang_code[128];   /* detection: static codes, most likely first */
    float lang_prob[128];
    int n_lang;
    float language_prob;     /* of the language transcribed (1: given, English-only) */
    encdec_timings timings;
    api_seq_rows att;        /* each sequence's attention rows (generation) */
    api_seq_rows lgt;        /* each sequence's logits rows (generation: return_logits) */
};

const char *api_compute_name(encdec_compute c);
/* The kernel set a thread under limit lim runs ("avx2", ...). */
const char *api_isa_running(int lim);

/* result.c: building a result (see there). */
encdec_status api_result_add_token(encdec_result *r, int id, float logprob, const char *text,
                                   size_t len, int window);
/* Appends text[len] + NUL to the string arena; *off: where it starts. */
encdec_status api_result_add_str(encdec_result *r, const char *text, size_t len, size_t *off);
/* A segment whose tokens are [first_tok, first_tok + n_tokens) of r's and
 * words [first_word, + n_words) of r's (seg's pointers are ignored; text:
 * an offset from api_result_add_str). */
encdec_status api_result_add_segment(encdec_result *r, const encdec_segment *seg, size_t text_off,
                                     size_t first_tok, size_t first_word);
/* A word whose text is at offset off of the arena. */
encdec_status api_result_add_word(encdec_result *r, size_t off, double start, double end,
                                  float probability);
/* Sequence of tokens [first, first + n_tokens); takes text (malloc'd). */
encdec_status api_result_add_sequence(encdec_result *r, int input, int rank, float score,
                                      int first, int n_tokens, char *text);
void api_result_finish(encdec_result *r);
/* Segment i of r (still being built) as a callback shows it: its pointers
 * resolved into r as it is now, tokens and words copied into v's arrays
 * (grown as needed; valid until v is used again). */
typedef struct {
    encdec_token *tok;
    encdec_word *words;
    size_t cap;
} api_view;
encdec_status api_result_view(const encdec_result *r, size_t i, api_view *v, encdec_segment *out);
void api_view_free(api_view *v);

/* transcribe.c: the transcription of a feed wherever its passes run. prep
 * makes room for n_slots sequences and fills env's runner, mel and
 * executor (a session's own state, or an engine's client). */
typedef encdec_status (*api_asr_prep)(void *ctx, int n_slots, encdec_kv_mode mode, asr_env *env);
encdec_status api_transcribe_check(const encdec_model *model, const encdec_transcribe_params *p);
/* generate.c: the pieces a session and the engine share. */
typedef struct {
    int *ids, *start, *len;   /* the inputs packed back to back */
    int n_tokens, t_max;
    char ***pieces;           /* [B] each input's tokens as spelled (ttok_encode_pieces),
                                 when asked (replace_unknowns); else NULL */
    int n_in;
} api_packed;
encdec_status api_generate_check(encdec_generate_params *p);   /* fills defaults */
/* The hypotheses that end a beam search (round(num_beams x patience)), and
 * the search's parameters (p checked). */
int api_beam_finish(const encdec_generate_params *p);
/* The sequences a generation decodes per input: its beams, samples, or
 * alternatives x beams. */
int api_gen_width(const encdec_generate_params *p);
/* Whether greedy steps may read screened logits (models/screen.h). */
int api_gen_screens(const encdec_generate_params *p);
dec_beam_params api_beam_params(const encdec_generate_params *p);
/* The languages of a generation (encdec_generate_params' src_lang and
 * tgt_lang) as the model takes them: a source language index for the
 * tokenizer (src; tgt for Marian's >>xx<< token, -1: none), the decoder's
 * start and the forced first token (-1: none). */
typedef struct {
    int src, tgt, dec_start, forced;
    const int *prefix;         /* the decoder's first tokens after its start, forced (in
                                  place of forced): encdec_engine_generate_ids' target prefix,
                                  or for a text the tokenizer's (ttok_text_prefix) */
    int n_prefix;
} api_langs;
encdec_status api_langs_of(const s2s_model *m, const encdec_generate_params *p, api_langs *out);
/* pieces: each input's tokens as spelled into pk->pieces too. */
encdec_status api_tokenize(const s2s_model *m, const char *const *inputs, int B, int truncate,
                           const api_langs *lg, int pieces, api_packed *pk);
/* One input given as token ids (checked against the vocabulary, truncated
 * as api_tokenize truncates) into pk. */
encdec_status api_pack_ids(const s2s_model *m, const int *ids, int n, int truncate, api_packed *pk);
void api_packed_free(api_packed *pk);
/* attend.c: a generation's attention (encdec_generate_params.return_attention),
 * kept by the generation's runner rn (decode/runner.h's rn_att) as it
 * decodes: input b's tokens cols[b] as encoded (full[b] as given: a cut
 * input's other columns 0; full NULL: cols). */
typedef struct {
    dec_runner *rn;
    const int *cols;
    const int *full;
    const api_packed *pk;   /* the inputs (replace_unknowns reads their tokens) */
} api_attender;
typedef struct {
    int mode;             /* 1: every output; 2: those holding unk */
    int unk;
    int n_out, max_new;
    const int *toks, *lens;   /* the outputs: toks + i * max_new, lens[i] tokens */
    const int *path;      /* [n_out, max_new] the sequence whose row chose each token (dec_task's) */
    const int *input_of;  /* [n_out] each output's input */
} api_attend_job;
/* Before the prompt: rn keeps the rows of sequences [0, n), sequence q
 * reading input q / width, at positions [0, n_pos) (an output's token j
 * reads position j: max_new_tokens of them). */
encdec_status api_attend_begin(const api_attender *at, int n, int width, int n_pos);
/* After the search: out[i] output i's rows [lens[i], its input's full]
 * (malloc'd), or NULL (mode 2 without unk, or no tokens); on error the
 * caller frees what is set. rn keeps nothing more. */
encdec_status api_attend(const api_attender *at, const api_attend_job *j, float **out);
/* out[R, T] = the heads' mean of softmax(scores) of rows [r0, r0 + R):
 * head a's row r at sc + a * head_stride + r * ld. */
typedef struct {
    const float *sc;
    size_t head_stride;
    int ld, heads;
} api_scores;
void api_mean_softmax(const api_scores *s, int r0, int R, int T, float *out);
/* Attention rows [R, k] of an input the model cut to k of its n tokens (the
 * first k - 1 and the last) into y[R, n], the others' columns 0. */
void api_uncut(const float *o, int R, int k, int n, float *y);
/* result.c: sequence i's attention, rows [its tokens, cols]; its logits,
 * rows [its tokens, n_vocab] (taken, freed on failure). */
encdec_status api_result_set_attention(encdec_result *r, int i, float *rows, int cols);
encdec_status api_result_set_logits(encdec_result *r, int i, float *rows, int n_vocab);
/* What a task's runner tells after every choice (streaming): fn(ctx, l)
 * with l[0, n) each output's length so far (a copy of len, the task's, or
 * len itself), on the caller's thread; nonzero: stop (ENCDEC_ERR_CANCELLED). */
typedef struct {
    int (*fn)(void *ctx, const int *len);
    void *ctx;
    const int *len;
    int n;
} api_watch;
/* Runs task t to its end (w: NULL, or told after every choice). */
typedef encdec_status (*api_run_fn)(void *ctx, dec_task *t, const api_watch *w);
/* B inputs encoded, their cross caches filled, dm the seam over their
 * sequences (width each: beams or samples): the decoder start fed, the
 * strategy's task run by run(run_ctx, t, watch), the sequences added to r;
 * p->on_token called for every token on the way (gen_stream.h);
 * p->return_attention's passes on at (attend.c). */
encdec_status api_generate_decode(const s2s_model *m, const encdec_generate_params *p,
                                  const api_langs *lg, int B, const dec_model *dm, api_run_fn run,
                                  void *run_ctx, const api_attender *at, encdec_result *r);

/* transcribe.c: the whole transcript of r's segments as its sequence 0 (every
 * text token decoded together). */
encdec_status api_result_whisper_text(encdec_result *r, const whisper_model *w);
/* engine.c: what the batched transcription reads of an engine. */
const encdec_model *api_engine_model(const encdec_engine *e);
int api_engine_threads(const encdec_engine *e);
/* encdec_engine_transcribe, and on_done(user) called on the request's own
 * thread once it is done (after encdec_request_done turns 1; nothing of the
 * request is touched after the call). */
typedef void (*api_done_fn)(void *user);
encdec_status api_engine_transcribe_told(encdec_engine *e, const float *pcm, size_t n_samples,
                                         const encdec_transcribe_params *params, api_done_fn on_done,
                                         void *user, encdec_request **out);

encdec_status api_transcribe_feed(const encdec_model *model, api_asr_prep prep, void *prep_ctx,
                                  asr_feed *feed, const encdec_transcribe_params *params,
                                  encdec_result **out);

/* A transcription of the speech alone. The speech spans of a recording
 * (samples), its length and the VAD's time. */
typedef struct {
    const asr_span *spans;
    int n;
    size_t n_samples;
    double vad_ms;
} api_speech;
/* transcribe_speech.c: the speech of pcm[n] (p->speech, else p->vad's
 * spans on pool) put end to end and transcribed (prep as
 * api_transcribe_feed's), every time of the result mapped back to pcm's; no
 * speech: a result with no segments. */
encdec_status api_transcribe_speech(const encdec_model *model, api_asr_prep prep, void *prep_ctx,
                                    const mel_ctx *mel, ed_pool *pool, const float *pcm, size_t n,
                                    const encdec_transcribe_params *p, const atomic_int *cancel,
                                    encdec_result **out);
/* The same from a stream at its start, never held whole: read once for
 * the spans (or its length, with the caller's), then through them. */
encdec_status api_transcribe_speech_stream(const encdec_model *model, api_asr_prep prep,
                                           void *prep_ctx, const mel_ctx *mel, ed_pool *pool,
                                           audio_stream *as,
                                           const encdec_transcribe_params *p,
                                           const atomic_int *cancel, encdec_result **out);
/* The caller's spans (p->speech) checked against n samples: *out malloc'd. */
encdec_status api_given_spans(const encdec_transcribe_params *p, size_t n, asr_span **out,
                              int *n_out);
/* A stream's length in samples (read through once, then rewound). */
encdec_status api_stream_length(audio_stream *as, const atomic_int *cancel, size_t *n);
/* vad.c: the parameters checked; the speech spans of pcm[n], or of the
 * stream as (pcm NULL; read from its start, rewound after; *n_samples its
 * length): *spans malloc'd (NULL when none), *n_spans. */
encdec_status api_vad_check(const encdec_vad_params *p);
encdec_status api_vad_spans(const encdec_vad *v, ed_pool *pool, const float *pcm, size_t n,
                            audio_stream *as, const encdec_vad_params *p,
                            const atomic_int *cancel, asr_span **spans, int *n_spans,
                            size_t *n_samples);
/* transcribe.c: api_transcribe_feed over the joined speech of sp (feed NULL:
 * there was none). */
encdec_status api_transcribe_feed_speech(const encdec_model *model, api_asr_prep prep,
                                         void *prep_ctx, asr_feed *feed,
                                         const encdec_transcribe_params *params,
                                         const api_speech *sp, encdec_result **out);

#endif
