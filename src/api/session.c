/* session.c - encdec_session: the per-request state (thread pool, caches
 * and scratch). Transcription is transcribe.c over asr/; generation is
 * generate.c.
 */
#include "api/api.h"
#include "base/err.h"
#include "core/dev.h"
#include "kern/kern.h"

#include <stdlib.h>

encdec_session_params encdec_session_default_params(void) {
    encdec_session_params p = {.n_threads = 1, .cross_kv = ENCDEC_KV_F32};
    return p;
}

encdec_status encdec_session_new(const encdec_model *m, const encdec_session_params *params,
                                 encdec_session **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_session_new: out is NULL");
    *out = NULL;
    if (!m) return ed_fail(ENCDEC_ERR_ARG, "encdec_session_new: model is NULL");
    char why[512];
    if (k_blas_env_check(why, sizeof why)) return ed_fail(ENCDEC_ERR_CONFIG, "%s", why);
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
    if (!st) ed_pool_set_isa(s->pool, m->isa);
    if (!st) st = api_dev_open(m, &s->dev);
    if (!st) ed_pool_set_device(s->pool, s->dev);
    if (api_is_text(m)) {
        if (!st) st = m->text.ops->state_new(&s->text_st, m->text.model, s->pool, s->cross_kv);
        if (st) {
            encdec_session_free(s);
            return st;
        }
        *out = s;
        return ENCDEC_OK;
    }
    const whisper_hparams *h = &m->w->hp;
    if (!st) st = whisper_state_new(&s->st, api_w_run(m), s->pool, 2, s->cross_kv);   /* greedy + prompt */
    if (!st) {
        rn_model rm = whisper_rn_model(s->st);
        st = rn_init(&s->runner, &rm, ENCDEC_KV_FULL);
    }
    if (!st) {
        s->mel = mel_new(h->n_mels);
        if (!s->mel) st = ENCDEC_ERR_NOMEM;
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
    if (s->text_st) s->model->text.ops->state_free(s->text_st);
    ed_pool_free(s->pool);
    ed_dev_close(s->dev);
    mel_free(s->mel);
    free(s);
}

