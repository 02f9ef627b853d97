/* window.c - one window decoded with temperature fallback (see window.h). */
#include "asr/window.h"
#include "asr/asr_internal.h"
#include "base/err.h"
#include "base/mem.h"
#include "decode/loop.h"
#include "decode/search.h"
#include "kern/kern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOOP_MAX_PERIOD 64
#define LOOP_MIN_SPAN 32
#define LOOP_MIN_REPEATS 3

/* The text of tok[n] without special tokens and timestamps, as
 * openai-whisper's Tokenizer.decode; malloc'd (NULL: out of memory). */
static char *window_text(const whisper_model *m, const int *tok, int n) {
    return bpe_decode(m->tok, tok, n, 1);
}

static double text_ratio(const whisper_model *m, const int *tok, int n) {
    char *t = window_text(m, tok, n);
    if (!t) return 0;
    size_t len = strlen(t);
    const char *s = asr_strip(t, &len);
    double r = asr_compression_ratio(s, len);
    free(t);
    return r;
}

/* The hook: timestamp rules (when on) and the loop detector (when on). */
static void hook_apply(const void *ctx, float *x, int V, const int *gen, int n) {
    const asr_work *w = ctx;
    if (w->p->timestamps) dec_ts_apply(&w->ts, x, V, gen, n);
}

static int hook_stop(const void *ctx, const int *gen, int n) {
    const asr_work *w = ctx;
    if (!w->loop_on) return 0;
    const whisper_model *m = w->env->m;
    int period, span = dec_repeat_tail(gen, n, m->sp.eot, LOOP_MAX_PERIOD, &period);
    if (span < LOOP_MIN_SPAN || span < LOOP_MIN_REPEATS * period) return 0;
    double thr = isnan(w->p->compression_ratio_threshold) ? 2.4 : w->p->compression_ratio_threshold;
    return text_ratio(m, gen, n) > thr;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The model's suppressed tokens plus the special tokens openai-whisper
 * never lets a window generate (its no-speech token is read, not sampled). */
static encdec_status build_suppress(asr_work *w) {
    const whisper_model *m = w->env->m;
    const whisper_special *sp = &m->sp;
    int extra[] = {sp->transcribe, sp->translate, sp->sot, sp->sot_prev, sp->sot_lm, sp->no_speech};
    int n_extra = (int)(sizeof extra / sizeof extra[0]);
    w->suppress = ed_alloc(sizeof(int) * (size_t)(m->n_suppress + n_extra), "suppressed tokens");
    if (!w->suppress) return ENCDEC_ERR_NOMEM;
    int n = 0;
    for (int i = 0; i < m->n_suppress; i++) w->suppress[n++] = m->suppress[i];
    for (int i = 0; i < n_extra; i++)
        if (extra[i] >= 0) w->suppress[n++] = extra[i];
    qsort(w->suppress, (size_t)n, sizeof(int), cmp_int);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || w->suppress[u - 1] != w->suppress[i]) w->suppress[u++] = w->suppress[i];
    w->n_suppress = u;
    return ENCDEC_OK;
}

encdec_status asr_work_init(asr_work *w, const asr_env *env, const asr_params *p) {
    memset(w, 0, sizeof *w);
    w->env = env;
    w->p = p;
    const whisper_hparams *h = &env->m->hp;
    w->V = h->n_vocab;
    w->W = asr_slots_needed(p) - 1;
    w->N = h->n_text_ctx;   /* a window never generates more */
    w->prompt_seq = env->rn->m.n_slots - 1;
    if (w->prompt_seq < w->W)
        return ed_fail(ENCDEC_ERR_ARG, "asr: the state holds %d sequences, %d needed",
                       env->rn->m.n_slots, w->W + 1);
    size_t V = (size_t)w->V, W = (size_t)w->W, N = (size_t)w->N;
    w->logits = ed_alloc(sizeof(float) * (W + 1) * V, "window logits");
    w->tok = ed_alloc(sizeof(int) * W * N, "window tokens");
    w->lp = ed_alloc(sizeof(float) * W * N, "window log-probs");
    w->len = ed_alloc(sizeof(int) * W * 3, "window sequence lists");
    w->score = ed_alloc(sizeof(float) * W, "window scores");
    w->att_tok = ed_alloc(sizeof(int) * ASR_MAX_TEMPS * N, "window attempts");
    w->att_lp = ed_alloc(sizeof(float) * ASR_MAX_TEMPS * N, "window attempts");
    w->att = ed_alloc(sizeof *w->att * ASR_MAX_TEMPS, "window attempts");
    if (!w->logits || !w->tok || !w->lp || !w->len || !w->score || !w->att_tok || !w->att_lp ||
        !w->att ||
        build_suppress(w)) {
        asr_work_free(w);
        return ENCDEC_ERR_NOMEM;
    }
    w->logits0 = w->logits + W * V;
    w->seq = w->len + W;
    const whisper_special *sp = &env->m->sp;
    w->ts = (dec_ts_rules){sp->timestamp_begin, sp->eot, sp->no_timestamps, 50};   /* 1.0 s */
    w->hook = (dec_hook){hook_apply, hook_stop, w};
    return ENCDEC_OK;
}

void asr_work_free(asr_work *w) {
    free(w->logits);
    free(w->tok);
    free(w->lp);
    free(w->len);
    free(w->score);
    free(w->att_tok);
    free(w->att_lp);
    free(w->att);
    free(w->suppress);
    memset(w, 0, sizeof *w);
}

encdec_status asr_window_prompt(asr_work *w, const int *head, int n_head, const int *rest,
                                int n_rest, float *no_speech, float *lang_logits) {
    dec_model dm = rn_seam(w->env->rn);
    encdec_status st = dm.feed(dm.ctx, w->prompt_seq, head, n_head, w->logits0);
    if (st) return st;
    int ns = w->env->m->sp.no_speech;
    *no_speech = NAN;
    if (ns >= 0) {
        float mx;
        double lse = k_logsumexp(w->logits0, w->V, &mx);
        *no_speech = (float)exp((double)w->logits0[ns] - mx - lse);
    }
    if (lang_logits) memcpy(lang_logits, w->logits0, sizeof(float) * (size_t)w->V);
    w->n_prompt = n_head + n_rest;
    if (n_rest > 0) st = dm.feed(dm.ctx, w->prompt_seq, rest, n_rest, w->logits0);
    return st;
}

/* Sequences 0..n-1 take the prompt's history; logits rows get its logits. */
static encdec_status share_prompt(asr_work *w, int n) {
    dec_model dm = rn_seam(w->env->rn);
    rn_restart(w->env->rn, w->prompt_seq);
    for (int i = 0; i < n; i++) {
        w->seq[i] = i;
        w->seq[n + i] = w->prompt_seq;
        memcpy(w->logits + (size_t)i * w->V, w->logits0, sizeof(float) * (size_t)w->V);
    }
    return dm.reorder(dm.ctx, n, w->seq, w->seq + n);
}

typedef struct {
    int idx;            /* the sequence chosen */
    int n_text;         /* its tokens without eot */
    double sum;
    int looped;         /* the loop detector stopped it: its figures are a prefix's */
} pick;

/* openai-whisper's MaximumLikelihoodRanker without a length penalty:
 * sum_logprobs / tokens (eot excluded), the first best. Sequence i's tokens
 * are at w->tok + i * max_new (the strategies' layout). The loop detector
 * stops a decode's sequences only all together, before any has ended
 * (decode/search.h), so either none or all of them are stopped ones. */
static pick rank(const asr_work *w, int n_seq, int max_new) {
    pick best = {-1, 0, -INFINITY, 0};
    double best_s = 0;
    for (int i = 0; i < n_seq; i++) {
        int len = w->len[i];
        int eot = len > 0 && w->tok[(size_t)i * max_new + len - 1] == w->env->m->sp.eot;
        int nt = len - eot;
        double s = nt > 0 ? w->score[i] / (double)nt : -INFINITY;
        if (best.idx < 0 || s > best_s) {
            best = (pick){i, nt, w->score[i], !eot && len < max_new};
            best_s = s;
        }
    }
    return best;
}

/* One decode at temperature T into res (tokens borrowed from w); the loop
 * detector may stop its sequences when loop_ok. */
static encdec_status decode_once(asr_work *w, float T, uint64_t seed, const dec_rules *rules,
                                 int loop_ok, asr_window_result *res, asr_report *rep) {
    const asr_params *p = w->p;
    dec_model dm = rn_seam(w->env->rn);
    int beam = T == 0 && p->beam_size > 1;
    int n_seq = T > 0 ? p->best_of : beam ? p->beam_size : 1;
    encdec_status st = share_prompt(w, n_seq);
    if (st) return st;
    w->loop_on = loop_ok;
    dec_task *t = NULL;
    if (beam) {
        dec_ow_beam_params bp = {p->beam_size, p->patience, p->length_penalty};
        st = dec_beam_ow_task(&t, &dm, w->logits0, rules, &bp, w->tok, w->lp, &w->len[0],
                              &w->score[0]);
        n_seq = 1;
    } else if (T == 0) {
        st = dec_greedy_task(&t, &dm, 1, w->logits, rules, w->tok, w->lp, w->len, w->score);
    } else {
        dec_sample_params sp = {T, 0, 1.0f, seed, 1};
        st = dec_sample_task(&t, &dm, 1, n_seq, w->logits, rules, &sp, w->tok, w->lp, w->len,
                             w->score);
    }
    if (!st) st = w->env->x->run(w->env->x->ctx, t);   /* the steps: here, or by the engine */
    dec_task_free(t);
    w->loop_on = 0;
    rep->n_decodes++;
    rep->n_steps += w->env->rn->n_steps;
    if (st) return st;
    pick b = rank(w, n_seq, rules->max_new);
    const int *tok = w->tok + (size_t)b.idx * rules->max_new;
    rep->n_tokens += w->len[b.idx];
    rep->n_loops += b.looped;
    res->tok = tok;
    res->lp = w->lp + (size_t)b.idx * rules->max_new;
    res->n = b.n_text;
    res->sum_logprob = b.sum;
    res->avg_logprob = b.sum / (b.n_text + 1);
    res->compression_ratio = text_ratio(w->env->m, tok, b.n_text);
    res->temperature = T;
    res->looped = b.looped;
    return ENCDEC_OK;
}

/* openai-whisper's verdict on a decode: 1 when it needs the next
 * temperature. A decode the loop detector stopped fails (its text went on
 * repeating: too repetitive); it is stopped only where the silence rule
 * cannot apply (below), which would need the whole decode's figures. */
static int needs_fallback(const asr_params *p, const asr_window_result *r) {
    int fail = r->looped;
    if (!isnan(p->compression_ratio_threshold) && r->compression_ratio > p->compression_ratio_threshold)
        fail = 1;   /* too repetitive */
    if (!isnan(p->logprob_threshold) && r->avg_logprob < p->logprob_threshold)
        fail = 1;   /* too improbable */
    if (!isnan(p->no_speech_threshold) && r->no_speech_prob > p->no_speech_threshold &&
        !isnan(p->logprob_threshold) && r->avg_logprob < p->logprob_threshold)
        fail = 0;   /* silence: the caller skips the window */
    return fail;
}

/* Attempt i's decode kept (tokens copied out of the work's rows, which the
 * next attempt reuses). */
static void keep_attempt(asr_work *w, int i, asr_window_result *res) {
    int *tok = w->att_tok + (size_t)i * w->N;
    float *lp = w->att_lp + (size_t)i * w->N;
    memcpy(tok, res->tok, sizeof *tok * (size_t)res->n);
    memcpy(lp, res->lp, sizeof *lp * (size_t)res->n);
    w->att[i] = *res;
    w->att[i].tok = tok;
    w->att[i].lp = lp;
}

/* Every temperature failed: faster-whisper keeps the attempt with the
 * highest average log-probability among those under the compression
 * threshold, else among all (the first such, as Python's max). A decode the
 * loop detector stopped is above the threshold (its text went on
 * repeating), so it is weighed only when no attempt is under it: then the
 * stopped ones are decoded again whole first, and the choice is made on
 * the figures a decode without the detector has. */
static int best_attempt(const asr_work *w, int n, int *under) {
    const asr_params *p = w->p;
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (int i = 0; i < n; i++) {
            int u = !isnan(p->compression_ratio_threshold) && !w->att[i].looped &&
                    !(w->att[i].compression_ratio > p->compression_ratio_threshold);
            if (pass == 0 && !u) continue;
            if (best < 0 || w->att[i].avg_logprob > w->att[best].avg_logprob) best = i;
            *under = pass == 0;
        }
    return best;
}

static encdec_status pick_best_attempt(asr_work *w, int n, int seek, const dec_rules *rules,
                                       asr_window_result *res, asr_report *rep) {
    const asr_params *p = w->p;
    int under = 0, looped = 0, best = best_attempt(w, n, &under);
    for (int i = 0; i < n; i++) looped += w->att[i].looped;
    if (under || !looped) {
        *res = w->att[best];
        return ENCDEC_OK;
    }
    for (int i = 0; i < n; i++) {   /* none under the threshold: every decode whole */
        if (!w->att[i].looped) continue;
        float ns = w->att[i].no_speech_prob;
        encdec_status st = decode_once(w, p->temperatures[i], asr_seed(p, seek, i), rules, 0, res, rep);
        if (st) return st;
        res->no_speech_prob = ns;
        keep_attempt(w, i, res);
    }
    *res = w->att[best_attempt(w, n, &under)];
    return ENCDEC_OK;
}

uint64_t asr_seed(const asr_params *p, int seek, int attempt) {
    return p->seed ^ ((uint64_t)(unsigned)seek << 20) ^ (uint64_t)attempt;
}

/* A penalty on repeats or an n-gram ban may end a loop the detector would
 * call endless: it then stays off. */
static int rules_change_repeats(const asr_params *p) {
    return (p->repetition_penalty > 0 && p->repetition_penalty != 1) || p->no_repeat_ngram > 0;
}

encdec_status asr_window_decode(asr_work *w, int seek, float no_speech, asr_window_result *res,
                                asr_report *rep) {
    const asr_params *p = w->p;
    const whisper_model *m = w->env->m;
    int sample_len = p->max_tokens > 0 ? p->max_tokens : m->hp.n_text_ctx / 2;
    int room = m->hp.n_text_ctx + 1 - w->n_prompt;   /* openai-whisper stops past n_ctx tokens */
    if (room < 1) return ed_fail(ENCDEC_ERR_ARG, "asr: a prompt of %d tokens leaves no room", w->n_prompt);
    dec_rules rules = {w->suppress, w->n_suppress, m->begin_suppress, m->n_begin_suppress,
                       m->sp.eot, sample_len < room ? sample_len : room, &w->hook, w->forced,
                       w->n_forced, p->repetition_penalty, p->no_repeat_ngram};
    if (w->n_forced >= rules.max_new)
        return ed_fail(ENCDEC_ERR_ARG, "asr: a prefix of %d tokens leaves no room", w->n_forced);
    memset(res, 0, sizeof *res);
    /* The loop detector stops a decode only where its verdict (fail) is the
     * whole decode's: not when the silence rule may apply (that needs the
     * whole decode's log-probability), and not on the last temperature
     * (whose decode is kept, or weighed, whatever it scores). */
    int silence = !isnan(p->no_speech_threshold) && no_speech > p->no_speech_threshold &&
                  !isnan(p->logprob_threshold);
    int n = p->n_temperatures, i;
    for (i = 0; i < n; i++) {
        int loop_ok = p->loop_detect && !silence && i + 1 < n && !rules_change_repeats(p);
        encdec_status st = decode_once(w, p->temperatures[i], asr_seed(p, seek, i), &rules, loop_ok,
                                       res, rep);
        if (st) return st;
        res->no_speech_prob = no_speech;
        if (!needs_fallback(p, res)) break;
        if (n > 1 && !p->keep_last) keep_attempt(w, i, res);
    }
    if (i > 0) rep->n_fallbacks++;
    if (i == n) {   /* every temperature failed */
        if (!p->keep_last && n > 1) {
            encdec_status st = pick_best_attempt(w, n, seek, &rules, res, rep);
            if (st) return st;
        }
        res->all_failed = 1;
    }
    res->attempts = i < n ? i + 1 : n;
    res->last_temperature = p->temperatures[res->attempts - 1];
    return ENCDEC_OK;
}
