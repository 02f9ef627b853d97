/* session.c - encdec_session: the per-request state, and transcription.
 *
 * encdec_transcribe cuts the audio into consecutive 30 s windows (the
 * seek-based long-form algorithm comes later). Per window: log-mel, encoder,
 * cross cache (once), the prompt, then greedy decoding through the seam.
 * A window of pure digital silence (every sample exactly 0) is not decoded:
 * it holds no speech, and the model would only hallucinate on it.
 */
#include "api/api.h"
#include "base/err.h"
#include "base/mem.h"
#include "decode/greedy.h"
#include "decode/search.h"
#include "kern/kern.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double api_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

encdec_status encdec_session_new(const encdec_model *m, const encdec_session_params *params,
                                 encdec_session **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_session_new: out is NULL");
    *out = NULL;
    if (!m) return ed_fail(ENCDEC_ERR_ARG, "encdec_session_new: model is NULL");
    if (!k_blas_env_ok())
        return ed_fail(ENCDEC_ERR_CONFIG, "BLIS_ARCH_TYPE is set in the environment; the BLIS "
                       "library encdec uses aborts the process on it: unset it");
    int nt = params ? params->n_threads : 0;
    encdec_kv_type kt = params ? params->cross_kv : ENCDEC_KV_F32;
    if (kt < ENCDEC_KV_F32 || kt > ENCDEC_KV_BF16)
        return ed_fail(ENCDEC_ERR_ARG, "cross_kv %d is not a cache type (0 f32, 1 f16, 2 bf16)",
                       (int)kt);
    if (nt == 0) nt = 1;
    if (nt < 1 || nt > ED_POOL_MAX_THREADS)
        return ed_fail(ENCDEC_ERR_ARG, "thread count %d is out of range 1..%d", nt,
                       ED_POOL_MAX_THREADS);
    encdec_session *s = calloc(1, sizeof *s);
    if (!s) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: session");
    s->model = m;
    s->cross_kv = (kv_dtype)kt;
    encdec_status st = ed_pool_new(&s->pool, nt);
    if (m->family == API_T5) {
        if (!st) st = t5_state_new(&s->t5, m->t5, s->pool, s->cross_kv);
        if (st) {
            encdec_session_free(s);
            return st;
        }
        *out = s;
        return ENCDEC_OK;
    }
    const whisper_hparams *h = &m->w->hp;
    if (!st) st = whisper_state_new(&s->st, m->w, s->pool, 1, s->cross_kv);
    if (!st) {
        rn_model rm = whisper_rn_model(s->st);
        st = rn_init(&s->runner, &rm, ENCDEC_KV_FULL);
    }
    if (!st) {
        s->mel = mel_new(h->n_mels);
        s->mel_buf = ed_alloc((size_t)h->n_mels * MEL_CHUNK_FRAMES * sizeof(float), "mel window");
        s->logits = ed_alloc((size_t)h->n_vocab * sizeof(float), "logits");
        s->toks = ed_alloc((size_t)h->n_text_ctx * sizeof(int), "tokens");
        s->lps = ed_alloc((size_t)h->n_text_ctx * sizeof(float), "log-probabilities");
        if (!s->mel || !s->mel_buf || !s->logits || !s->toks || !s->lps) st = ENCDEC_ERR_NOMEM;
    }
    if (st) {
        encdec_session_free(s);
        return st;
    }
    *out = s;
    return ENCDEC_OK;
}

void encdec_session_free(encdec_session *s) {
    if (!s) return;
    rn_free(&s->runner);
    whisper_state_free(s->st);
    t5_state_free(s->t5);
    ed_pool_free(s->pool);
    mel_free(s->mel);
    free(s->mel_buf);
    free(s->logits);
    free(s->toks);
    free(s->lps);
    free(s);
}

encdec_transcribe_params encdec_transcribe_default_params(void) {
    encdec_transcribe_params p = {ENCDEC_KV_FULL, NULL, 0, 0, 1};
    return p;
}

/* The decoder prompt: <|startoftranscript|> [<|lang|> <|task|>] <|notimestamps|>. */
static encdec_status build_prompt(const whisper_model *w, const encdec_transcribe_params *p,
                                  int *prompt, int *n) {
    const whisper_special *sp = &w->sp;
    *n = 0;
    prompt[(*n)++] = sp->sot;
    const char *lang = p->language ? p->language : "en";
    if (w->multilingual) {
        char spell[64];
        snprintf(spell, sizeof spell, "<|%s|>", lang);
        int id = strlen(lang) < 16 ? bpe_token_id(w->tok, spell) : -1;
        if (id < sp->lang_first || id >= sp->lang_first + sp->n_langs)
            return ed_fail(ENCDEC_ERR_ARG, "unknown language \"%s\" (use a code such as en, de, fr)", lang);
        prompt[(*n)++] = id;
        prompt[(*n)++] = p->translate ? sp->translate : sp->transcribe;
    } else {
        if (strcmp(lang, "en") != 0)
            return ed_fail(ENCDEC_ERR_ARG, "this model is English-only; language \"%s\" is not available", lang);
        if (p->translate)
            return ed_fail(ENCDEC_ERR_ARG, "this model is English-only; it cannot translate");
    }
    if (sp->no_timestamps >= 0) prompt[(*n)++] = sp->no_timestamps;
    return ENCDEC_OK;
}

static encdec_status check_params(const encdec_session *s, const encdec_transcribe_params *p) {
    if (p->kv_mode != ENCDEC_KV_FULL && p->kv_mode != ENCDEC_KV_SELF && p->kv_mode != ENCDEC_KV_NONE)
        return ed_fail(ENCDEC_ERR_ARG, "unknown cache mode %d", (int)p->kv_mode);
    int ctx = s->model->w->hp.n_text_ctx;
    if (p->max_tokens < 0 || p->max_tokens > ctx)
        return ed_fail(ENCDEC_ERR_ARG, "max_tokens %d is out of range 0..%d", p->max_tokens, ctx);
    if (p->beam_size < 0 || p->beam_size > API_MAX_BEAMS)
        return ed_fail(ENCDEC_ERR_ARG, "beam_size %d is out of range 0..%d", p->beam_size, API_MAX_BEAMS);
    return ENCDEC_OK;
}

/* The decoder state holds caches for at least n sequences: grown (state and
 * runner made again) the first time a request needs more, kept after. */
static encdec_status ensure_slots(encdec_session *s, int n) {
    if (s->st->n_slots >= n) return ENCDEC_OK;
    rn_free(&s->runner);
    whisper_state_free(s->st);
    s->st = NULL;
    encdec_status st = whisper_state_new(&s->st, s->model->w, s->pool, n, s->cross_kv);
    if (!st) {
        rn_model rm = whisper_rn_model(s->st);
        st = rn_init(&s->runner, &rm, ENCDEC_KV_FULL);
    }
    return st;
}

static int all_zero(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (x[i] != 0.0f) return 0;
    return 1;
}

/* Appends one window's tokens to r. */
static encdec_status add_tokens(encdec_result *r, const whisper_model *w, const int *toks,
                                const float *lps, int n, int window) {
    encdec_status st = ENCDEC_OK;
    for (int i = 0; i < n && !st; i++) {
        size_t len = 0;
        const char *b = bpe_token_bytes(w->tok, toks[i], &len);
        st = api_result_add_token(r, toks[i], lps[i], b, b ? len : 0, window);
    }
    return st;
}

/* The whole transcript is one sequence. */
static encdec_status finish_text(encdec_result *r, const whisper_model *w) {
    size_t nt = r->n_tokens > 0 ? (size_t)r->n_tokens : 1;
    int *ids = malloc(sizeof *ids * nt);
    if (!ids) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result text");
    float sum = 0;
    for (size_t i = 0; i < r->n_tokens; i++) {
        ids[i] = r->tokens[i].id;
        sum += r->tokens[i].logprob;
    }
    char *text = bpe_decode(w->tok, ids, (int)r->n_tokens, 1);
    free(ids);
    if (!text) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result text");
    return api_result_add_sequence(r, 0, 0, sum, 0, (int)r->n_tokens, text);
}

encdec_status encdec_transcribe(encdec_session *s, const float *pcm, size_t n_samples,
                                const encdec_transcribe_params *params, encdec_result **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_transcribe: out is NULL");
    *out = NULL;
    if (!s) return ed_fail(ENCDEC_ERR_ARG, "encdec_transcribe: session is NULL");
    if (s->model->family != API_WHISPER)
        return ed_fail(ENCDEC_ERR_ARG, "encdec_transcribe: this is a %s model (text to text); "
                       "use encdec_generate", s->model->t5->model_type);
    if (!pcm || n_samples == 0) return ed_fail(ENCDEC_ERR_AUDIO, "the audio has no samples");
    for (size_t i = 0; i < n_samples; i++)
        if (!isfinite(pcm[i]))
            return ed_fail(ENCDEC_ERR_AUDIO, "sample %zu is not a finite number", i);
    encdec_transcribe_params p = params ? *params : encdec_transcribe_default_params();
    encdec_status st = check_params(s, &p);
    const whisper_model *w = s->model->w;
    int prompt[8], n_prompt = 0, beams = p.beam_size > 1 ? p.beam_size : 1;
    if (!st) st = build_prompt(w, &p, prompt, &n_prompt);
    if (!st) st = ensure_slots(s, beams);
    if (st) return st;

    encdec_result *r = calloc(1, sizeof *r);
    if (!r) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result");
    int room = w->hp.n_text_ctx - n_prompt;
    dec_rules rules = {w->suppress, w->n_suppress, w->begin_suppress, w->n_begin_suppress,
                       w->sp.eot, p.max_tokens && p.max_tokens < room ? p.max_tokens : room};
    size_t n_win = (n_samples + MEL_CHUNK_SAMPLES - 1) / MEL_CHUNK_SAMPLES;
    for (size_t wi = 0; wi < n_win && !st; wi++) {
        const float *seg = pcm + wi * MEL_CHUNK_SAMPLES;
        size_t len = n_samples - wi * MEL_CHUNK_SAMPLES;
        if (len > MEL_CHUNK_SAMPLES) len = MEL_CHUNK_SAMPLES;
        r->timings.n_windows++;
        if (all_zero(seg, len)) continue;
        double t0 = api_now_ms();
        st = mel_compute(s->mel, seg, len, s->mel_buf, MEL_CHUNK_FRAMES);
        if (st) break;
        double t1 = api_now_ms();
        whisper_encode(s->st, s->mel_buf);
        rn_begin(&s->runner, p.kv_mode);
        double t2 = api_now_ms();
        dec_model dm = rn_seam(&s->runner);
        int n = 0;
        if (beams > 1) {
            dec_beam_params bp = {beams, 1.0f, 0, 1};
            float score;
            st = dec_beam(&dm, 1, prompt, n_prompt, &rules, &bp, s->toks, s->lps, &n, &score);
            r->timings.n_steps += s->runner.n_steps;
        } else {
            st = dec_greedy(&dm, 0, prompt, n_prompt, &rules, s->logits, s->toks, s->lps, &n);
            r->timings.n_steps += n;
        }
        double t3 = api_now_ms();
        r->timings.mel_ms += t1 - t0;
        r->timings.encoder_ms += t2 - t1;
        r->timings.decode_ms += t3 - t2;
        r->timings.n_tokens += n;
        if (!st) st = add_tokens(r, w, s->toks, s->lps, n, (int)wi);
    }
    if (!st) st = finish_text(r, w);
    if (!st) api_result_finish(r);
    if (st) {
        encdec_result_free(r);
        return st;
    }
    *out = r;
    return ENCDEC_OK;
}

