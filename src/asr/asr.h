/* asr.h - Whisper transcription of whole recordings: the long-form loop
 * (seek-based 30 s windows, timestamps, segments), each window decoded with
 * temperature fallback, language detection, word alignment.
 *
 *   asr_local lx;  asr_local_init(&lx, state, runner);      a session's passes
 *   asr_env env = { model, runner, mel, &lx.x };            borrowed from the session
 *   asr_params p;  asr_params_default(&p, model);  p.word_timestamps = 1;
 *   asr_sink sink = { on_segment, on_progress, user };
 *   asr_report rep;
 *   st = asr_transcribe(&env, pcm, n, &p, &sink, &rep);
 *
 * The loop follows openai-whisper's transcribe() (facts, not code): the
 * recording's log-mel has one normalisation for the whole file (its maximum
 * found by a first pass over the feed; each window computes its frames from
 * the samples, asr/feed.h); a window starts where the last complete segment ended; its tokens
 * split into segments at timestamp pairs; the previous windows' tokens are
 * the next window's prompt. What openai-whisper recomputes, this keeps: a
 * window's encoder output, cross cache and prompt rows serve every decode
 * of it (each temperature of the fallback, every best-of candidate or beam,
 * the word-alignment pass).
 *
 * Layer: above models/ (the Whisper state) and decode/ (strategies, rules),
 * below api/. No I/O, no allocation per decode step. One call at a time
 * per env (the state and runner are its working memory).
 */
#ifndef ED_ASR_H
#define ED_ASR_H

#include "encdec.h"
#include "asr/feed.h"
#include "audio/mel.h"
#include "decode/runner.h"
#include "decode/task.h"
#include "models/whisper.h"

#include <stdint.h>

#define ASR_MAX_TEMPS 16
#define ASR_MAX_CLIPS 256

/* How a transcription's passes run: on the caller's thread over a state of
 * its own (asr_local, a session), or handed to an engine's scheduler that
 * runs them among other requests' (sched/sched.h). Between the calls the
 * long-form loop owns nothing the passes touch but its runner's histories. */
typedef struct {
    void *ctx;
    /* The encoder over one window's mel [n_mels, 3000]; the next
     * rn_begin of the env's runner makes its cross cache. */
    encdec_status (*encode)(void *ctx, const float *mel);
    /* Steps t to its end (t's model is the env's runner's seam). */
    encdec_status (*run)(void *ctx, dec_task *t);
    /* Feeds tokens[n] (n <= 32) to sequence 0 of the runner, keeping the
     * logits after each ([n, V]) and the alignment heads' cross-attention
     * scores ([n_align_heads, n, n_audio_ctx]). */
    encdec_status (*feed_scores)(void *ctx, const int *tokens, int n, float *logits,
                                 float *scores);
} asr_exec;

typedef struct {
    const whisper_model *m;
    dec_runner *rn;           /* the request's sequences: n_slots >= asr_slots_needed(params) */
    const mel_ctx *mel;
    const asr_exec *x;        /* its passes */
} asr_env;

/* The executor of a session: every pass on the calling thread over st,
 * whose seam rn is. */
typedef struct {
    whisper_state *st;
    dec_runner *rn;
    asr_exec x;
} asr_local;
void asr_local_init(asr_local *l, whisper_state *st, dec_runner *rn);

typedef struct {
    encdec_kv_mode kv_mode;
    int language;             /* <|xx|> token id; -1: detect (multilingual) / English-only */
    int translate;
    int timestamps;           /* 0: <|notimestamps|>, fixed 30 s windows (the decode() mode) */
    int max_tokens;           /* per window; 0: n_text_ctx / 2 (224) */
    int beam_size;            /* <= 1: greedy at temperature 0 */
    float patience;           /* beam: > 0 (1 = plain beam search) */
    float length_penalty;     /* < 0: length normalisation; 0..1: Google NMT's */
    int best_of;              /* candidates sampled at temperature > 0 */
    float temperatures[ASR_MAX_TEMPS];   /* tried in order until one passes */
    int n_temperatures;
    float compression_ratio_threshold;   /* NAN: off */
    float logprob_threshold;             /* NAN: off */
    float no_speech_threshold;           /* NAN: off */
    int condition_on_previous_text;
    const int *initial_prompt;           /* token ids (borrowed), for the first window */
    int n_initial_prompt;
    const int *prefix;                   /* token ids forced at the start of the first window */
    int n_prefix;
    const int *hotwords;                 /* token ids before the previous text in every window's
                                            prompt but one with a prefix (borrowed) */
    int n_hotwords;
    double clips[2 * ASR_MAX_CLIPS];     /* start, end, ... seconds; end < 0: the end of the audio */
    int n_clips;                         /* pairs; 0: the whole recording */
    int word_timestamps;
    const char *prepend_punctuations;    /* UTF-8 characters merged into the next word */
    const char *append_punctuations;     /* ... into the previous word */
    int loop_detect;                     /* stop a decode that repeats itself where that cannot
                                            change the outcome (window.h) */
    int keep_last;                       /* every temperature failed: 1 keeps the last attempt
                                            (openai-whisper), 0 the best (faster-whisper: the
                                            highest average log-probability among those under
                                            the compression threshold, else among all) */
    float silence_rms;                   /* a window of lower RMS with a high no-speech
                                            probability is skipped undecoded; 0: off */
    uint64_t seed;                       /* sampling */
    float repetition_penalty;            /* 1: off; else CTranslate2's rule (decode/greedy.h) */
    int no_repeat_ngram;                 /* > 0: n-grams of a decode never repeat; 0: off */
    float hallucination_silence;         /* seconds (word timestamps only): faster-whisper's
                                            hallucination_silence_threshold; NAN: off */
    int window_frames;                   /* mel frames of audio per window, 1..3000 (the rest
                                            padded: faster-whisper's chunk_length) */
    int lang_segments;                   /* windows language detection may read (>= 1) */
    float lang_threshold;                /* a window whose most likely language is above it
                                            decides at once; else a vote of the windows */
    int lang_per_window;                 /* 1: every window detects its own language
                                            (faster-whisper's multilingual) */
    int detect_only;                     /* 1: stop once the language is known */
    int whole_windows;                   /* 1: each window moves on by its whole length, its
                                            unfinished tail a last segment (encdec.h) */
    float min_text_rate;                 /* text tokens per second of audio: a window of 5 s or
                                            more decoded without timestamps to fewer is decoded
                                            again with them, the rest as timestamps mode's
                                            long-form (encdec.h); 0: off */
} asr_params;

/* openai-whisper's defaults: timestamps, temperatures 0, 0.2 ... 1.0,
 * thresholds 2.4 / -1.0 / 0.6, conditioning, best_of 5, greedy, loop
 * detection on, punctuation sets as openai-whisper's; when every
 * temperature fails, faster-whisper's choice (params.c). */
void asr_params_default(asr_params *p);
/* Sequences the state must hold: max(beam, best_of) + 1 (the prompt's slot). */
int asr_slots_needed(const asr_params *p);

typedef struct {
    const char *text;         /* UTF-8, punctuation attached, leading space kept */
    double start, end;        /* seconds of the recording */
    float probability;        /* mean of its tokens' probabilities */
} asr_word;

typedef struct {
    int seek;                 /* the window's first mel frame (10 ms each) */
    double start, end;        /* seconds of the recording */
    const char *text;         /* the text tokens decoded (UTF-8) */
    const int *tokens;        /* [n_tokens] timestamps included, eot excluded */
    const float *logprobs;    /* [n_tokens] */
    int n_tokens;
    float temperature, avg_logprob, compression_ratio, no_speech_prob;   /* of its window */
    const asr_word *words;    /* [n_words] when word timestamps were asked */
    int n_words;
    int all_failed;           /* every temperature failed: the decode kept by the rule */
} asr_segment;

/* Where results go, as soon as they are final. Every pointer in a segment
 * is valid during the call only. A status other than ENCDEC_OK from
 * segment stops the transcription with that status (its message kept). */
typedef struct {
    encdec_status (*segment)(void *user, const asr_segment *s);
    void (*progress)(void *user, double done_s, double total_s);
    void *user;
    /* once, before the first segment: the language token decoded with (-1:
     * an English-only model), its probability (rep->lang_prob) and, when it
     * was detected, the probabilities of the last window detection read
     * (rep->lang_probs[n_langs]; NULL when it was given) */
    void (*language)(void *user, int token, float prob, const float *probs, int n_langs);
} asr_sink;

typedef struct {
    int language;             /* the language token decoded with; -1: none (English-only) */
    int detected;             /* 1: language came from detection */
    float lang_prob;          /* its probability: the deciding window's, or the best of the
                                 windows that voted for it; 1 when given */
    float lang_probs[128];    /* [n_langs] detection probabilities, model order (when detected) */
    int n_langs;
    double mel_ms, encoder_ms, decode_ms, align_ms;
    int n_windows;            /* windows decoded or skipped */
    int n_encodes;            /* encoder passes (detection included) */
    int n_decodes;            /* decode attempts (fallback re-decodes included) */
    int n_fallbacks;          /* windows decoded more than once */
    int n_loops;              /* decodes stopped by the loop detector */
    int n_tokens, n_steps;    /* generated tokens, decoder steps (all attempts) */
} asr_report;

/* Transcribes pcm[n] (16 kHz mono) with p, sending segments to sink.
 * Errors: ENCDEC_ERR_ARG for unusable parameters (message names them),
 * ENCDEC_ERR_NOMEM, or what the sink returned. */
encdec_status asr_transcribe(const asr_env *env, const float *pcm, size_t n, const asr_params *p,
                             const asr_sink *sink, asr_report *rep);
/* The same from a feed (asr/feed.h): a recording in memory, or an audio
 * stream read in blocks and never held whole (memory bounded by the window,
 * not the recording). */
encdec_status asr_transcribe_feed(const asr_env *env, asr_feed *feed, const asr_params *p,
                                  const asr_sink *sink, asr_report *rep);

#endif
