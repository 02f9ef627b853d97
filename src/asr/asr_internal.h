/* asr_internal.h - the pieces of the asr module, each in its own file with
 * its own test: segments (splitting a window at timestamps), quality
 * (compression ratio), lang (language codes and detection), window (one
 * window decoded with fallback), align (word times), words (tokens to
 * words), dtw (the alignment path). */
#ifndef ED_ASR_INTERNAL_H
#define ED_ASR_INTERNAL_H

#include "asr/asr.h"
#include "tok/lang.h"

#include <stddef.h>

/* ---- segments.c ---- */

typedef struct {
    int first, n;             /* tokens [first, first + n) of the window */
    double start, end;        /* seconds from the window's start */
} asr_split;

/* Splits a window's tokens tok[n] (eot excluded) as openai-whisper does:
 * at every pair of consecutive timestamps (ids >= ts_begin); a final lone
 * timestamp after text closes the last segment ("single timestamp
 * ending": nothing more was said in the window). Without a pair, the whole
 * window is one segment ending at its last timestamp, or at the window's
 * content (seg_frames mel frames) without one. out[] needs room for n + 1
 * segments. Returns how many; *advance: mel frames to move the window by
 * (to the last complete segment's end, or the whole content); *single_end:
 * the single-timestamp ending (the words pass keeps the window's end then).
 * whole: the unfinished rest after the last pair is a last segment ending
 * at the content's end, and *advance the whole content. */
int asr_split_segments(const int *tok, int n, int ts_begin, int seg_frames, int whole,
                       asr_split *out, int *advance, int *single_end);

/* ---- quality.c ---- */

/* len(text) / len(zlib.compress(text)) at zlib's default level, as
 * openai-whisper measures repetitiveness; text[len] bytes. 0 for "". */
double asr_compression_ratio(const char *text, size_t len);
/* text without leading and trailing ASCII white space: *len updated, the
 * start returned. */
const char *asr_strip(const char *text, size_t *len);

/* ---- dtw.c ---- */

/* The cheapest monotonic path through cost x[N, M] (row-major) from (0, 0)
 * to (N-1, M-1), each move one step down, right or diagonal; the running
 * costs kept in float32 as openai-whisper's dtw_cpu does (ties: diagonal,
 * then down, then right, by strict comparisons as there). acc[(N+1)(M+1)]
 * and trace[(N+1)(M+1)] are scratch. Writes the path's rows to pi and
 * columns to pj (room for N + M), returns its length. */
int asr_dtw(const double *x, int N, int M, float *acc, signed char *trace, int *pi, int *pj);

/* In place along each of n_rows rows of x[n_rows, n]: the median of the
 * width values around each (width odd; the row reflected at its ends,
 * without repeating the edge). Rows of n <= width / 2 are left alone.
 * tmp[n + width] is scratch. */
void asr_median_filter(float *x, int n_rows, int n, int width, float *tmp);

/* ---- words.c ---- */

typedef struct {
    char *text;               /* malloc'd */
    int n_tok;                /* tokens it covers */
    double start, end;
    float probability;
} asr_wtiming;

/* Splits text tokens ids[n] (the last may be eot) into words as
 * openai-whisper's tokenizer does: subwords at UTF-8 character boundaries,
 * then (unless by_unicode: languages written without spaces) subwords
 * joined into words, a new word starting at a leading space, at
 * punctuation or at a special token. out[n] gets each word's text and
 * token count; returns how many (NULL texts: out of memory, -1). */
int asr_split_words(const bpe_tok *tok, const int *ids, int n, int eot, int by_unicode,
                    asr_wtiming *out);

/* openai-whisper's merge_punctuations: a word that is one of `prepend`'s
 * characters (after a space) joins the next word; one of `append`'s joins
 * the previous word; the emptied word keeps no text and no tokens.
 * Returns 0, or -1 when out of memory. */
int asr_merge_punctuations(asr_wtiming *w, int n, const char *prepend, const char *append);

/* ---- align.c ---- */

typedef struct {
    int first, n;             /* tokens of the window's decode */
    double start, end;        /* seconds of the recording; the words may move them */
    asr_word *words;          /* [n_words]: the aligner's, valid until the next window */
    int n_words;
} asr_wseg;

/* (segments.c) Nothing ends after a window's audio (the recording's or the
 * clip's end; the model's timestamps can run past it): a segment that
 * starts at or after `limit` seconds goes, the others and their words end
 * there at the latest (a word past it keeps its text, at the limit, so the
 * words still spell the segment). Compacts segs; returns how many stay. */
int asr_clamp_segments(asr_wseg *segs, int n, double limit);

typedef struct {
    size_t cap_rows;
    size_t cap_w, cap_cells, cap_dtw, cap_frames;   /* what w, mat | cost, acc | trace and
                                                       tmp hold (each its own need) */
    float *logits;            /* [32, V] one pass's */
    float *qk;                /* [n_heads, 32, frames] one pass's alignment scores */
    float *w;                 /* [n_heads, rows, frames] */
    float *mat;               /* [rows, frames] */
    double *cost;             /* [rows, frames] */
    float *acc;               /* dtw scratch */
    signed char *trace;
    int *pi, *pj;             /* the path */
    int *toks;                /* [rows] the pass's tokens */
    float *tmp;               /* median filter scratch */
    float *probs;             /* [rows] token probabilities */
    asr_wtiming *timing;      /* [rows] */
    int n_timing;
    asr_word *words;          /* [rows] the window's words, handed to segments */
} asr_aligner;

encdec_status asr_aligner_init(asr_aligner *a, const asr_env *env);
/* Its tables for `rows` rows of `frames` frames over H heads: w, mat and
 * cost [rows * frames] (w per head), acc and trace [(rows + 1) *
 * (frames + 1)] (the DTW's), tmp [frames + the filter's width]. Each grows
 * to its own need: a window with fewer cells than an earlier one may still
 * need a longer DTW table or filter row. */
encdec_status asr_aligner_reserve(asr_aligner *a, int H, int rows, int frames);
void asr_aligner_free(asr_aligner *a);

/* Word times for the window's segments (openai-whisper's find_alignment and
 * add_word_timestamps): one decoder pass over <|startoftranscript|> ...
 * <|notimestamps|> + the segments' text tokens + eot, keeping the
 * alignment heads' cross-attention scores (the window's cross cache is
 * still the runner's input); softmax over the window's frames, normalised per
 * frame, median-filtered, averaged over heads; the cheapest path by DTW
 * gives each token a time; tokens grouped into words with punctuation
 * attached; long words clipped at pauses; segment ends moved to their
 * words. tok: the window's decode; last_speech: the end of the last word
 * before this window (asr_words_end of the windows before). */
encdec_status asr_align_window(asr_aligner *a, const asr_env *env, const asr_params *p,
                               const int *sot_seq, int n_sot_seq, const int *tok, asr_wseg *segs,
                               int n_segs, int seek, int seg_frames, double last_speech);

/* The end of the last word of segs[n] (NAN when none has words): the last
 * segment's end when no segment has words. */
double asr_words_end(const asr_wseg *segs, int n);

/* (hallucination.c) openai-whisper's hallucination_silence_threshold, as
 * faster-whisper 1.2.1 applies it to a window whose words are timed: a
 * segment is anomalous when its first 8 words that are not punctuation
 * score 3 or more, or about 1 each (a word scores 1 under probability 0.15,
 * more the shorter than 0.133 s or longer than 2 s it is). When the window's
 * first segment with words is anomalous and starts more than `threshold`
 * after the window, the whole window goes: -1, *next = the frame where that
 * segment starts. Else the first anomalous segment with silence (more than
 * threshold, or the window's edge) or another anomaly on both sides ends
 * the window: the count of segments before it is returned and *next set to
 * its start (at least 1 s into the window; the end of the audio when less
 * than threshold follows it). n: nothing changes. */
typedef struct {
    double threshold;         /* seconds */
    int seek;                 /* the window's first frame */
    double time_offset;       /* its start, seconds */
    double duration;          /* its audio, seconds */
    double window_end;        /* time_offset + the window length (chunk), seconds */
    double last_speech;       /* the end of the last word before the window */
    int content_frames;       /* the recording's frames */
} asr_silence_ctx;
int asr_hallucination_cut(const asr_wseg *segs, int n, const asr_silence_ctx *c, int *next);

#endif
