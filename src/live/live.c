/* live.c - encdec_live: a live session above the engine (encdec.h says
 * what it promises). It owns a buffer of at most max_buffer_s of 16 kHz
 * audio starting at buf_t0 (seconds of the stream), the final text's tail
 * (the prompt, and the words a decode may echo), and the uncommitted words
 * of the last agreement-1 decodes. One decode at a time is an engine
 * request over a copy of the buffer; the session looks at it when it is
 * fed or asked for events (pump), never waiting unless asked to. */
#include "live/agree.h"
#include "live/floor.h"
#include "api/api.h"
#include "base/err.h"
#include "base/isa.h"

#include <math.h>
#include <soxr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SR 16000
#define MAX_AGREE 5
#define PROMPT_BYTES 200     /* the final text's tail given as each decode's prompt */
#define TAIL_WORDS 8         /* final words kept to catch a decode's echo of them */
#define TRIM_S 12.0          /* a buffer longer than this is cut where final text ends */
#define TRIM_LATE_S 18.0     /* ... or this, where the cut leaves final words in it */
#define SILENCE_KEEP_S 0.5   /* silence kept before new speech */
#define STOPPED_S 2.0        /* a decode's words ending this far before its audio: it stopped */
#define MOVED_S 0.3          /* agreeing decodes that end a last word this far apart: its time is a guess */
#define SKIPPED_S 1.5        /* a word timed over this much speech: the decode skipped some */
#define END_TRIES 2          /* the stream's end decoded again after stopped decodes, at most */

typedef struct {
    encdec_live_event ev;
    char *text;
} queued;

struct encdec_live {
    encdec_engine *e;
    encdec_live_params p;
    char lang[16];               /* the language once a decode found it (tp.language's store) */
    soxr_t sx;                   /* NULL at 16 kHz */
    float *buf;                  /* buffered audio, 16 kHz */
    size_t n, cap;
    live_floor floor;            /* the noise floor of the last 10 s fed (the level rule's) */
    double buf_t0;               /* stream seconds of buf[0] */
    double fed_s;                /* stream seconds fed */
    double t_first;              /* the wall clock (ms) of the first sample fed, or 0 */
    double decoded_to;           /* the end of the audio the last decode saw */
    double heard_to;             /* ... when it left nothing pending (else 0) */
    encdec_request *q;           /* the decode running, or NULL */
    double q_t0;                 /* its audio's start */
    double q_end;
    int q_capped;                /* it stopped max_step_s after the one before: audio waits */
    int q_bare;                  /* it has no prompt (a decode again: the prompted one skipped) */
    live_words hyp[MAX_AGREE];   /* the last `agreement` decodes' words not final, newest first */
    int n_hyp;
    live_words tail;             /* the final text's last words */
    live_words fin;              /* final words still in the buffer (not in the prompt: a
                                    decode given text it also hears skips what it says) */
    double final_end;            /* where the final text ends */
    double seg_cut;              /* the latest segment end at or before final_end (a cut point) */
    char prompt[PROMPT_BYTES + 8];   /* the final text before the buffer: its last bytes */
    int finishing, finished;     /* finish called; DONE queued */
    int end_tries;               /* the stream's end decoded again (END_TRIES) */
    queued *evq;                 /* events not yet taken */
    int nq, capq, headq;
    char *shown;                 /* the text of the event last returned */
    encdec_live_stats st;
};

encdec_live_params encdec_live_default_params(void) {
    encdec_live_params p = {0};
    p.sample_rate = SR;
    p.step_s = 1.0;
    p.idle_step_s = 0.5;
    p.max_step_s = 3.0;
    p.agreement = 2;
    p.min_silence_s = 0.6;
    p.silence_db = -45.0f;
    p.max_buffer_s = 30.0;
    p.tp = encdec_transcribe_default_params();
    p.tp.temperature_increment = 0;   /* a fallback's five samples cost more than a step */
    p.catch_up_s = 4.5;
    return p;
}

/* ---- events ---- */

static int push(encdec_live *l, encdec_live_kind kind, char *text, double start, double end,
                int utt_end, encdec_status status) {
    if (!text && !(text = strdup(""))) return -1;
    if (l->nq == l->capq) {
        int cap = l->capq ? 2 * l->capq : 16;
        queued *q = realloc(l->evq, sizeof *q * (size_t)cap);
        if (!q) {
            free(text);
            return -1;
        }
        l->evq = q;
        l->capq = cap;
    }
    l->evq[l->nq++] = (queued){{kind, text, start, end, utt_end, status}, text};
    if (kind == ENCDEC_LIVE_FINAL) l->st.finals++;
    return 0;
}

static int push_words(encdec_live *l, encdec_live_kind kind, const live_words *w, int from,
                      int to, int utt_end) {
    char *t = live_words_text(w, from, to);
    if (!t) return -1;
    int any = to > from;
    return push(l, kind, t, any ? w->w[from].start : 0, any ? w->w[to - 1].end : 0, utt_end,
                ENCDEC_OK);
}

/* ---- the buffer ---- */

/* Appends text to the prompt, keeping its last PROMPT_BYTES (whole characters). */
static void prompt_add(encdec_live *l, const char *text) {
    size_t pl = strlen(l->prompt), wl = strlen(text);
    if (wl > PROMPT_BYTES) return;
    if (pl + wl > PROMPT_BYTES) {
        size_t drop = pl + wl - PROMPT_BYTES;
        while (drop < pl && ((unsigned char)l->prompt[drop] & 0xC0) == 0x80) drop++;
        memmove(l->prompt, l->prompt + drop, pl - drop + 1);
    }
    strcat(l->prompt, text);
}

/* Drops the buffer's audio before stream time t; the final words it held
 * join the prompt. */
static void cut_at(encdec_live *l, double t) {
    if (t <= l->buf_t0) return;
    size_t k = (size_t)((t - l->buf_t0) * SR + 0.5);
    if (k > l->n) k = l->n;
    memmove(l->buf, l->buf + k, sizeof *l->buf * (l->n - k));
    l->n -= k;
    l->buf_t0 += (double)k / SR;
    int out = 0;
    while (out < l->fin.n && (l->fin.w[out].start + l->fin.w[out].end) / 2 <= l->buf_t0)
        prompt_add(l, l->fin.w[out++].text);
    live_words_drop(&l->fin, out);
}

static int append(encdec_live *l, const float *x, size_t n) {
    if (!n) return 0;
    if (l->n + n > l->cap) {
        size_t cap = l->cap ? l->cap : SR * 4;
        while (cap < l->n + n) cap *= 2;
        float *b = realloc(l->buf, sizeof *b * cap);
        if (!b) return -1;
        l->buf = b;
        l->cap = cap;
    }
    memcpy(l->buf + l->n, x, sizeof *x * n);
    live_floor_feed(&l->floor, x, n);
    l->n += n;
    l->fed_s += (double)n / SR;
    l->st.fed_s = l->fed_s;
    return 0;
}

/* The stream's audio in [t0, t1) judged frame by frame (the VAD's 32 ms
 * frames, else the level's 30 ms): 1 when all of it is silence; *run (may
 * be NULL) gets the longest stretch of silent frames, in seconds. */
static int quiet(const encdec_live *l, double t0, double t1, double *run) {
    if (run) *run = 0;
    if (t0 < l->buf_t0) t0 = l->buf_t0;
    if (t1 <= t0) return 1;
    size_t a = (size_t)((t0 - l->buf_t0) * SR), b = (size_t)((t1 - l->buf_t0) * SR);
    if (b > l->n) b = l->n;
    if (b <= a) return 1;
    int all = 1;
    size_t cur = 0, best = 0;   /* samples */
    if (l->p.vad) {
        /* the VAD's state wants context: up to 0.5 s before the stretch */
        size_t from = a > SR / 2 ? a - SR / 2 : 0;
        float *pr = NULL;
        size_t nf = 0;
        /* on the thread that drives the session: under the model's kernel set, as the decodes */
        int old = ed_isa_swap(api_engine_model(l->e)->isa);
        encdec_status st = encdec_vad_probs(l->p.vad, l->buf + from, b - from, 1, &pr, &nf);
        ed_isa_swap(old);
        if (st != ENCDEC_OK) return 0;
        for (size_t f = (a - from) / 512; f < nf; f++) {
            int q = pr[f] < 0.35f;
            all &= q;
            cur = q ? cur + 512 : 0;
            best = cur > best ? cur : best;
        }
        encdec_free(pr);
    } else {
        const size_t fr = SR * 3 / 100;   /* 30 ms */
        double lim = pow(10.0, live_floor_threshold(&l->floor, l->p.silence_db) / 20.0);
        for (size_t i = a; i < b; i += fr) {
            size_t e = i + fr < b ? i + fr : b;
            double s = 0;
            for (size_t j = i; j < e; j++) s += (double)l->buf[j] * l->buf[j];
            int q = sqrt(s / (double)(e - i)) < lim;
            all &= q;
            cur = q ? cur + (e - i) : 0;
            best = cur > best ? cur : best;
            if (!all && !run) break;
        }
    }
    if (run) *run = (double)best / SR;
    return all;
}

/* 1 when the stream's audio in [t0, t1) is silence (the VAD, else the level). */
static int silent(const encdec_live *l, double t0, double t1) { return quiet(l, t0, t1, NULL); }

/* ---- final text ---- */

/* Makes words [0, k) of the newest hypothesis final (a FINAL event). The
 * older hypotheses lose them too when they agreed on them (agreed), else
 * they are dropped. */
static int commit(encdec_live *l, int k, int utt_end, int agreed) {
    live_words *h = &l->hyp[0];
    if (k <= 0) return 0;
    if (push_words(l, ENCDEC_LIVE_FINAL, h, 0, k, utt_end)) return -1;
    l->final_end = h->w[k - 1].end;
    for (int i = 0; i < k; i++)
        if (live_words_push(&l->tail, h->w[i].text, h->w[i].start, h->w[i].end) ||
            live_words_push(&l->fin, h->w[i].text, h->w[i].start, h->w[i].end))
            return -1;
    if (l->tail.n > TAIL_WORDS) live_words_drop(&l->tail, l->tail.n - TAIL_WORDS);
    live_words_drop(h, k);
    for (int j = 1; j < l->n_hyp; j++)
        if (agreed) live_words_drop(&l->hyp[j], k);
        else live_words_clear(&l->hyp[j]);
    return 0;
}

static double now_ms(void);

/* The most new audio the next decode takes: catch_up_s for a session whose
 * audio comes at the wall clock's pace (fed at most max_step_s ahead of
 * the time since its first sample), else max_step_s. Measured against the
 * wall clock, a source at speaking pace that fell behind (a busy machine)
 * is told from one sent faster than it is spoken (a file), whose decodes
 * stay short: a pause between utterances must end one of them. */
static double step_cap(const encdec_live *l) {
    if (l->p.catch_up_s <= l->p.max_step_s || l->t_first <= 0) return l->p.max_step_s;
    double wall = (now_ms() - l->t_first) / 1e3;
    return l->fed_s <= wall + l->p.max_step_s ? l->p.catch_up_s : l->p.max_step_s;
}

/* The buffer after final text: cut at the last segment end within it
 * (a pause the model saw), else, when the buffer is near its limit, where
 * the final text ends. */
static void trim(encdec_live *l) {
    double len = (double)l->n / SR;
    /* a cut that leaves final words to be heard again waits longer */
    int clean = l->final_end - l->seg_cut <= 1.0;
    if (len > (clean ? TRIM_S : TRIM_LATE_S) && l->seg_cut > l->buf_t0) cut_at(l, l->seg_cut);
    len = (double)l->n / SR;
    if (len > l->p.max_buffer_s - step_cap(l) - 1.0 && l->final_end > l->buf_t0)
        cut_at(l, l->final_end);
}

/* ---- decodes ---- */


/* Starts a decode of the buffer's first n samples, with the final text
 * before the buffer as its prompt unless bare. */
static encdec_status request(encdec_live *l, size_t n, int bare) {
    encdec_transcribe_params tp = l->p.tp;
    tp.word_timestamps = 1;
    tp.initial_prompt = l->prompt[0] && !bare ? l->prompt : NULL;
    tp.initial_prompt_tokens = NULL;
    tp.n_initial_prompt_tokens = 0;
    if (l->lang[0]) tp.language = l->lang;
    tp.on_segment = NULL;
    tp.on_progress = NULL;
    tp.on_language = NULL;
    tp.vad = NULL;
    tp.speech = NULL;
    tp.clip_timestamps = NULL;
    tp.n_clip_timestamps = 0;
    tp.detect_language_only = 0;
    tp.whole_windows = 1;   /* the audio after the last word is the next step's */
    encdec_status s = encdec_engine_transcribe(l->e, l->buf, n, &tp, &l->q);
    if (s) return s;
    l->q_t0 = l->buf_t0;
    l->q_end = l->buf_t0 + (double)n / SR;
    l->q_bare = bare;
    l->st.decodes++;
    return ENCDEC_OK;
}

/* The next decode: the buffer up to at most max_step_s of new audio (a
 * session behind real time decodes longer steps, not more of them; the
 * rest waits for the next). */
static encdec_status submit(encdec_live *l) {
    size_t n = l->n;
    double from = l->decoded_to > l->buf_t0 ? l->decoded_to : l->buf_t0;
    double cap = (from + step_cap(l) - l->buf_t0) * SR;
    l->q_capped = cap < (double)n;
    if (l->q_capped) n = (size_t)cap;
    encdec_status s = request(l, n, 0);
    if (!s) l->decoded_to = l->q_end;
    return s;
}

/* The words of a result in stream time into w; the cut point from its segments. */
static int words_of(encdec_live *l, const encdec_result *r, live_words *w) {
    for (int i = 0; i < encdec_result_n_segments(r); i++) {
        const encdec_segment *sg = encdec_result_segment(r, i);
        for (int j = 0; j < sg->n_words; j++)
            if (live_words_push(w, sg->words[j].word, l->q_t0 + sg->words[j].start,
                                l->q_t0 + sg->words[j].end))
                return -1;
    }
    return 0;
}

/* The latest segment end of r at or before the final text's end. */
static void segment_cut(encdec_live *l, const encdec_result *r) {
    for (int i = 0; i < encdec_result_n_segments(r); i++) {
        double end = l->q_t0 + encdec_result_segment(r, i)->end;
        if (end <= l->final_end + 0.05 && end > l->seg_cut) l->seg_cut = end;
    }
}

/* 1 when a decode failed the thresholds a window's decode is judged by
 * (its text compresses too well: a loop; or it is improbable and not
 * silence): it is no hypothesis (the next step decodes again). */
static int failed(const encdec_live *l, const encdec_result *r) {
    const encdec_transcribe_params *tp = &l->p.tp;
    for (int i = 0; i < encdec_result_n_segments(r); i++) {
        const encdec_segment *sg = encdec_result_segment(r, i);
        if (sg->compression_ratio > tp->compression_ratio_threshold) return 1;
        if (sg->avg_logprob < tp->logprob_threshold &&
            !(sg->no_speech_prob > tp->no_speech_threshold))
            return 1;
    }
    return 0;
}

/* Where an utterance ended inside the first k words of h (words the
 * decodes agree on, followed by at least one more): after the latest word
 * i < k whose gap to the next is min_silence_s or more and holds silence
 * for half of that at a stretch (the VAD's or the level's frames; the
 * words' times are the alignment's, a breath or a word's tail may lie
 * inside the gap). A decode that runs past a pause (a step longer than
 * the pause, or a session behind real time taking several seconds at
 * once) ends with speech again, so the rule on its last word does not see
 * it. Returns i + 1, or 0. */
static int pause_within(const encdec_live *l, const live_words *h, int k) {
    if (l->p.min_silence_s <= 0) return 0;
    for (int i = (k < h->n ? k : h->n - 1) - 1; i >= 0; i--) {
        double a = h->w[i].end, b = h->w[i + 1].start, run;
        if (b - a < l->p.min_silence_s) continue;
        quiet(l, a, b, &run);
        if (run >= l->p.min_silence_s / 2) return i + 1;
    }
    return 0;
}

/* 1 when the decode's words end at `said`, STOPPED_S or more before its
 * audio does, and speech follows them. */
static int stopped_early(const encdec_live *l, double said) {
    return l->q_end - said >= STOPPED_S && !silent(l, said + SILENCE_KEEP_S, l->q_end);
}

/* Where a decode that stopped early (see take) is cut: at the start of
 * the latest final word that begins a second or more before the final
 * text ends. Not at its end: the alignment stretches the last word's end
 * over what was not said, and the words after it would lose their start.
 * The decode hears those final words again and drops them. */
static double stopped_cut(const encdec_live *l) {
    int i = l->tail.n - 1;
    while (i > 0 && l->tail.w[i].start > l->final_end - 1.0) i--;
    return i >= 0 ? l->tail.w[i].start : l->final_end;
}

/* At the stream's end, after a decode that stopped early: the audio from
 * stopped_cut decoded again, rather than its last words lost (at most
 * END_TRIES times). */
static encdec_status decode_end_again(encdec_live *l) {
    cut_at(l, stopped_cut(l));
    l->end_tries++;
    return request(l, l->n, 0);
}

/* 1 when one of w's words is timed over SKIPPED_S or more of speech (not
 * silence: a word before a pause is often timed into it): no word lasts
 * that long; a decode that skipped what it heard (a prompt ending in
 * nearly the words the audio begins with makes Whisper do that) times
 * the word after the skip over the skipped speech. */
static int skipped_speech(const encdec_live *l, const live_words *w) {
    for (int i = live_words_long(w, 0, SKIPPED_S); i >= 0; i = live_words_long(w, i + 1, SKIPPED_S)) {
        double run, len = w->w[i].end - w->w[i].start;
        quiet(l, w->w[i].start, w->w[i].end, &run);
        if (len - run >= SKIPPED_S) return 1;
    }
    return 0;
}

/* 1 when the newest hypothesis's last word ends MOVED_S or more from
 * where an older hypothesis that has it at the same place ends it (the
 * decodes agree on the word, not on its time). */
static int last_moved(const encdec_live *l) {
    const live_words *h = &l->hyp[0];
    int i = h->n - 1;
    for (int j = 1; j < l->n_hyp; j++)
        if (i < l->hyp[j].n && live_word_eq(h->w[i].text, l->hyp[j].w[i].text) &&
            fabs(h->w[i].end - l->hyp[j].w[i].end) >= MOVED_S)
            return 1;
    return 0;
}

/* 1 when w's first word is the final text's last said again, begun
 * where that began (within 0.25 s) and stretched over the pause after it
 * (what it lasts is speech for less than SKIPPED_S: not a skip): an echo
 * its end did not show ("used." final at 48.27-48.69 s, said again at
 * 48.27-49.95 by a decode that timed it up to the next words). */
static int echo_stretched(const encdec_live *l, const live_words *w) {
    if (!live_words_echo(w, &l->tail, 0.25)) return 0;
    const live_word *x = &w->w[0];
    double run, len = x->end - x->start;
    quiet(l, x->start, x->end, &run);
    return len - run < SKIPPED_S;
}

/* A finished decode: its new words, what became final, the partial rest. */
static encdec_status take(encdec_live *l, const encdec_result *r, int last) {
    if (failed(l, r)) {
        l->st.failed++;
        l->heard_to = 0;
        /* the stream ended: what the last good decode left is final */
        if (last && l->n_hyp && l->hyp[0].n && commit(l, l->hyp[0].n, 1, 0)) return ENCDEC_ERR_NOMEM;
        return ENCDEC_OK;
    }
    if (!l->lang[0] && encdec_result_language(r))
        snprintf(l->lang, sizeof l->lang, "%s", encdec_result_language(r));
    live_words nw = {0};
    const live_words *pending = l->n_hyp ? &l->hyp[0] : NULL;
    if (words_of(l, r, &nw)) {
        live_words_free(&nw);
        return ENCDEC_ERR_NOMEM;
    }
    live_words_after(&nw, &l->tail, l->final_end, pending);
    if (echo_stretched(l, &nw)) live_words_drop(&nw, 1);
    if (last && !nw.n && pending && pending->n) {
        /* the last decode said nothing new: what the one before had pending is final */
        live_words_free(&nw);
        if (commit(l, l->hyp[0].n, 1, 0)) return ENCDEC_ERR_NOMEM;
        if (l->end_tries < END_TRIES && stopped_early(l, l->final_end)) return decode_end_again(l);
        return ENCDEC_OK;
    }
    if (!l->q_bare && l->prompt[0] && l->buf_t0 == l->q_t0 &&
        (live_words_skip(&nw, pending) || skipped_speech(l, &nw))) {
        /* the prompt made it skip words it heard: the same audio again without */
        live_words_free(&nw);
        return request(l, (size_t)((l->q_end - l->q_t0) * SR + 0.5), 1);
    }
    /* the newest hypothesis in front; the oldest kept falls off */
    live_words old = l->hyp[l->p.agreement - 1];
    for (int j = l->p.agreement - 1; j > 0; j--) l->hyp[j] = l->hyp[j - 1];
    l->hyp[0] = nw;
    live_words_free(&old);
    if (l->n_hyp < l->p.agreement) l->n_hyp++;
    live_words *h = &l->hyp[0];
    if (push_words(l, ENCDEC_LIVE_PARTIAL, h, 0, h->n, 0)) return ENCDEC_ERR_NOMEM;
    int k, again = 0;
    if (last) {
        k = h->n;   /* the stream ended: everything, unless the decode stopped early */
        if (k && l->end_tries < END_TRIES && stopped_early(l, h->w[k - 1].end)) {
            k--;   /* (its last word's time is stretched: it waits, see below) */
            again = 1;
        }
    } else {
        const live_words *hs[MAX_AGREE];
        for (int j = 0; j < l->n_hyp; j++) hs[j] = &l->hyp[j];
        k = l->n_hyp == l->p.agreement ? live_agree(hs, l->n_hyp) : 0;
        /* the end of an utterance: speech, then min_silence_s of silence, and
         * the decodes agree on all of it (or the silence lasted 3 times that:
         * one decode's word then) */
        if (l->p.min_silence_s > 0 && h->n) {
            /* the audio fed since, unless the decode left some of it out;
             * what came after the decode's audio was not heard by it: all
             * silence, or speech went on */
            double until = l->q_capped ? l->q_end : l->fed_s, quiet = until - h->w[h->n - 1].end;
            if (quiet >= l->p.min_silence_s && (k == h->n || quiet >= 3 * l->p.min_silence_s) &&
                silent(l, until - l->p.min_silence_s, until) &&
                (until <= l->q_end || silent(l, l->q_end, until)))
                k = -h->n;
        }
    }
    /* a decode's last word is the alignment's guess when the decode
     * stopped before its audio's end (see below): timed over the speech
     * it did not transcribe ("Mr." over the 1.8 s of "Quilter is the
     * apostle of the" that follow), it would end the final text late and
     * drop those words from the next decodes. It waits for a decode that
     * goes on past it when the decode stopped early, or when the decodes
     * that agree on it do not agree on its end. */
    if (!last && h->n && k >= h->n && (stopped_early(l, h->w[h->n - 1].end) || last_moved(l)))
        k = h->n - 1;
    int utt = last || k < 0;
    if (k < 0) k = -k;
    int u = utt ? 0 : pause_within(l, h, k);
    if (u > 0) {   /* an utterance ended inside the agreed words: final, its pause a cut point */
        double cut = h->w[u].start - fmin(SILENCE_KEEP_S, (h->w[u].start - h->w[u - 1].end) / 2);
        if (commit(l, u, 1, 1)) return ENCDEC_ERR_NOMEM;
        if (push_words(l, ENCDEC_LIVE_PARTIAL, h, 0, h->n, 0)) return ENCDEC_ERR_NOMEM;
        if (cut > l->seg_cut) l->seg_cut = cut;
        k -= u;
    }
    if (k > 0) {
        if (commit(l, k, utt, !utt)) return ENCDEC_ERR_NOMEM;
        segment_cut(l, r);
        if (push_words(l, ENCDEC_LIVE_PARTIAL, h, 0, h->n, 0)) return ENCDEC_ERR_NOMEM;
        if (utt && !last) {   /* the utterance is over: none of it is needed again */
            l->seg_cut = l->final_end;
            cut_at(l, l->final_end);
        }
    }
    /* a decode whose words stop well before its audio's end, speech going
     * on (Whisper may end a window's text early, the rest left to a next
     * window that a live decode does not have; the next decodes of the same
     * buffer stop there too): the next starts a little before the final
     * text's end (stopped_cut), on words it drops as final */
    double said = h->n && h->w[h->n - 1].end > l->final_end ? h->w[h->n - 1].end : l->final_end;
    if (!last && l->final_end > l->buf_t0 && stopped_early(l, said)) {
        double cut = stopped_cut(l);
        if (cut > l->seg_cut) l->seg_cut = cut;
        cut_at(l, cut);
    }
    if (again) return decode_end_again(l);
    l->heard_to = h->n ? 0 : l->q_end;
    trim(l);
    return ENCDEC_OK;
}

/* 1 when the engine has no request (this session's decode is done): its
 * cores would idle. */
static int engine_idle(encdec_live *l) {
    encdec_engine_stats st;
    encdec_engine_get_stats(l->e, &st);
    return st.requests == 0;
}

/* 1 when the audio since the last decode calls for another one: step_s of
 * it, or idle_step_s while the engine has nothing else to do. */
static int due(encdec_live *l) {
    if (l->q || l->finished || !l->n) return 0;
    double fresh = l->fed_s - l->decoded_to;
    if (l->finishing) return fresh > 0.05 || l->hyp[0].n > 0;
    if (fresh >= l->p.step_s) return 1;
    return l->p.idle_step_s > 0 && fresh >= l->p.idle_step_s && engine_idle(l);
}

/* Skips a step whose audio is silence with nothing pending: no decode, the
 * silence dropped but its last SILENCE_KEEP_S. 1 when it did. */
static int skip_silence(encdec_live *l) {
    int pending = l->n_hyp && l->hyp[0].n;
    double from = l->final_end > l->buf_t0 ? l->final_end : l->buf_t0;
    /* a decode that left nothing pending heard its audio: only what came
     * after it is new (the audio after the final text's last word also
     * holds that word's tail, which the alignment ends early) */
    if (l->heard_to > from) from = l->heard_to;
    if (pending || !silent(l, from, l->fed_s)) return 0;
    cut_at(l, l->fed_s - SILENCE_KEEP_S);
    l->decoded_to = l->fed_s;
    l->st.skipped++;
    return 1;
}

static void finish_done(encdec_live *l, encdec_status s) {
    if (l->finished) return;
    l->finished = 1;
    push(l, ENCDEC_LIVE_DONE, NULL, l->fed_s, l->fed_s, 0, s);
}

/* Takes a finished decode, starts the next one when it is due. */
static void pump(encdec_live *l) {
    if (l->finished) return;
    if (l->q && encdec_request_done(l->q)) {
        encdec_result *r = NULL;
        encdec_status s = encdec_request_wait(l->q, &r);
        encdec_request_free(l->q);
        l->q = NULL;
        int last = l->finishing && l->decoded_to >= l->fed_s - 1e-9;
        if (!s) s = take(l, r, last);
        encdec_result_free(r);
        if (s) return finish_done(l, s);
    }
    if (!l->q && l->finishing && !due(l)) {
        /* what a last decode left pending is final now */
        if (l->n_hyp && l->hyp[0].n && commit(l, l->hyp[0].n, 1, 0))
            return finish_done(l, ENCDEC_ERR_NOMEM);
        return finish_done(l, ENCDEC_OK);
    }
    /* never more than max_buffer_s (a decode keeps its own copy): the
     * pending words become final at the limit, the oldest audio goes */
    if ((double)l->n / SR > l->p.max_buffer_s) {
        if (l->n_hyp && l->hyp[0].n && commit(l, l->hyp[0].n, 0, 0))
            return finish_done(l, ENCDEC_ERR_NOMEM);
        cut_at(l, l->fed_s - l->p.max_buffer_s + l->p.step_s);
    }
    if (due(l) && !skip_silence(l)) {
        encdec_status s = submit(l);
        if (s) return finish_done(l, s);
    }
    double b = (double)l->n / SR;
    l->st.buffered_s = b;
    if (b > l->st.max_buffered_s) l->st.max_buffered_s = b;
}

/* ---- the public calls ---- */

encdec_status encdec_live_new(encdec_engine *e, const encdec_live_params *params,
                              encdec_live **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_live_new: out is NULL");
    *out = NULL;
    encdec_live_params p = params ? *params : encdec_live_default_params();
    if (!e) return ed_fail(ENCDEC_ERR_ARG, "encdec_live_new: no engine");
    if (p.sample_rate < 1000 || p.sample_rate > 384000)
        return ed_fail(ENCDEC_ERR_ARG, "live: sample_rate %d is not in 1000..384000", p.sample_rate);
    if (!(p.step_s >= 0.1 && p.step_s <= 10))
        return ed_fail(ENCDEC_ERR_ARG, "live: step_s %g is not in 0.1..10", p.step_s);
    if (!(p.idle_step_s == 0 || (p.idle_step_s >= 0.1 && p.idle_step_s <= 10)))
        return ed_fail(ENCDEC_ERR_ARG, "live: idle_step_s %g is not 0 or in 0.1..10", p.idle_step_s);
    if (!(p.max_step_s >= 0 && p.max_step_s <= 10))
        return ed_fail(ENCDEC_ERR_ARG, "live: max_step_s %g is not in 0..10", p.max_step_s);
    if (p.agreement < 2 || p.agreement > MAX_AGREE)
        return ed_fail(ENCDEC_ERR_ARG, "live: agreement %d is not in 2..%d", p.agreement, MAX_AGREE);
    if (!(p.min_silence_s >= 0 && p.min_silence_s <= 30))
        return ed_fail(ENCDEC_ERR_ARG, "live: min_silence_s %g is not in 0..30", p.min_silence_s);
    if (!(p.max_buffer_s >= 5 && p.max_buffer_s <= 30))
        return ed_fail(ENCDEC_ERR_ARG, "live: max_buffer_s %g is not in 5..30", p.max_buffer_s);
    if (!(p.catch_up_s >= 0 && p.catch_up_s <= 10))
        return ed_fail(ENCDEC_ERR_ARG, "live: catch_up_s %g is not in 0..10", p.catch_up_s);
    if (!(p.silence_db >= -120 && p.silence_db <= 0))
        return ed_fail(ENCDEC_ERR_ARG, "live: silence_db %g is not in -120..0", p.silence_db);
    encdec_live *l = calloc(1, sizeof *l);
    if (!l) return ed_fail(ENCDEC_ERR_NOMEM, "live: out of memory");
    l->e = e;
    l->p = p;
    if (l->p.max_step_s > p.max_buffer_s / 2) l->p.max_step_s = p.max_buffer_s / 2;
    if (l->p.max_step_s < p.step_s) l->p.max_step_s = p.step_s;
    if (l->p.catch_up_s > p.max_buffer_s / 2) l->p.catch_up_s = p.max_buffer_s / 2;
    if (l->p.catch_up_s < l->p.max_step_s) l->p.catch_up_s = l->p.max_step_s;
    l->final_end = 0;
    if (p.tp.language) snprintf(l->lang, sizeof l->lang, "%s", p.tp.language);
    l->p.tp.language = NULL;   /* l->lang holds it */
    l->p.tp.initial_prompt = NULL;
    if (p.sample_rate != SR) {
        soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
        soxr_quality_spec_t qs = soxr_quality_spec(SOXR_HQ, 0);
        soxr_error_t err = NULL;
        l->sx = soxr_create(p.sample_rate, SR, 1, &err, &io, &qs, NULL);
        if (err || !l->sx) {
            free(l);
            return ed_fail(ENCDEC_ERR_NOMEM, "live: the resampler: %s", err ? err : "failed");
        }
    }
    *out = l;
    return ENCDEC_OK;
}

/* n samples at the session's rate into the buffer (resampled); x NULL: the resampler's rest. */
static encdec_status feed_rate(encdec_live *l, const float *x, size_t n) {
    if (!l->sx) return append(l, x, n) ? ed_fail(ENCDEC_ERR_NOMEM, "live: out of memory") : ENCDEC_OK;
    float out[4096];
    size_t pos = 0;
    for (;;) {
        size_t chunk = x ? (n - pos > 2048 ? 2048 : n - pos) : 0, idone = 0, odone = 0;
        soxr_error_t err = soxr_process(l->sx, x ? x + pos : NULL, chunk, &idone, out, 4096, &odone);
        if (err) return ed_fail(ENCDEC_ERR_AUDIO, "live: resampling: %s", err);
        if (odone && append(l, out, odone)) return ed_fail(ENCDEC_ERR_NOMEM, "live: out of memory");
        pos += idone;
        if (x ? pos >= n && odone < 4096 : odone == 0) return ENCDEC_OK;
    }
}

encdec_status encdec_live_feed(encdec_live *l, const float *pcm, size_t n_samples) {
    ed_err_clear();
    if (!l || (!pcm && n_samples)) return ed_fail(ENCDEC_ERR_ARG, "encdec_live_feed: NULL");
    if (l->finishing) return ed_fail(ENCDEC_ERR_ARG, "encdec_live_feed: the stream was finished");
    if (l->finished) return ENCDEC_OK;   /* an error stopped it: DONE says which */
    for (size_t i = 0; i < n_samples; i++)
        if (!isfinite(pcm[i])) return ed_fail(ENCDEC_ERR_ARG, "encdec_live_feed: sample %zu is not finite", i);
    if (n_samples && l->t_first <= 0) l->t_first = now_ms();
    encdec_status s = feed_rate(l, pcm, n_samples);
    if (s) return s;
    pump(l);
    return ENCDEC_OK;
}

encdec_status encdec_live_finish(encdec_live *l) {
    ed_err_clear();
    if (!l) return ed_fail(ENCDEC_ERR_ARG, "encdec_live_finish: NULL");
    if (l->finishing) return ENCDEC_OK;
    if (l->sx && !l->finished) {
        encdec_status s = feed_rate(l, NULL, 0);
        if (s) finish_done(l, s);
    }
    l->finishing = 1;
    pump(l);
    return ENCDEC_OK;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int encdec_live_next(encdec_live *l, encdec_live_event *ev, int wait_ms) {
    if (!l || !ev) return 0;
    free(l->shown);
    l->shown = NULL;
    double until = now_ms() + wait_ms;
    for (;;) {
        pump(l);
        if (l->headq < l->nq) {
            queued *q = &l->evq[l->headq++];
            *ev = q->ev;
            l->shown = q->text;
            if (l->headq == l->nq) l->headq = l->nq = 0;
            return 1;
        }
        /* nothing will come: done, or no decode runs and no more audio yet */
        if (l->finished || (!l->q && !l->finishing)) return 0;
        if (wait_ms >= 0 && now_ms() >= until) return 0;
        struct timespec ts = {0, 2000000};   /* 2 ms: a decode takes far longer */
        nanosleep(&ts, NULL);
    }
}

double encdec_live_backlog(encdec_live *l) {
    if (!l) return 0;
    pump(l);
    if (l->finished || l->finishing) return 0;
    double b = l->fed_s - l->decoded_to;
    return b > 0 ? b : 0;
}

double encdec_live_ahead(encdec_live *l) { return l ? step_cap(l) : 0; }

void encdec_live_get_stats(const encdec_live *l, encdec_live_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (l) *out = l->st;
}

void encdec_live_free(encdec_live *l) {
    if (!l) return;
    if (l->q) encdec_request_free(l->q);   /* cancels it */
    for (int j = 0; j < MAX_AGREE; j++) live_words_free(&l->hyp[j]);
    live_words_free(&l->tail);
    live_words_free(&l->fin);
    for (int i = l->headq; i < l->nq; i++) free(l->evq[i].text);
    free(l->evq);
    free(l->shown);
    free(l->buf);
    if (l->sx) soxr_delete(l->sx);
    free(l);
}
