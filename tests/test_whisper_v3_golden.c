/* test_whisper_v3_golden.c - a Whisper large-v3-shaped model against Hugging
 * Face transformers: the seeded random model in tests/data/tiny-random-whisper-v3
 * (tools/gen_tiny_whisper_v3.py: 128 mel bins, multilingual special tokens,
 * BF16 weights in two safetensors shards with model.safetensors.index.json)
 * with goldens from tools/golden_whisper_v3.py.
 *
 * Input: ../shared/audio/jfk.wav through our audio + 128-band mel front end.
 * Tolerances (absolute; values are O(1..10)):
 *   mel frames 1e-4, encoder output 1e-4, cross K/V 1e-4, logits 2e-4 at
 *   every one of the 20 steps of both decodes, and the greedy tokens exactly
 *   (HF's greedy margins are >= 0.055).
 * Decodes: "en" = <|startoftranscript|><|en|><|transcribe|><|notimestamps|>,
 *          "de" = <|startoftranscript|><|de|><|translate|><|notimestamps|>.
 * The cache modes self and none give the full mode's tokens, logits within 5e-4.
 * Public API: encdec_transcribe builds the multilingual prompt itself from
 * params.language / params.translate; with "de" + translate (and "en" +
 * transcribe, and the defaults) it must yield HF's tokens, in all three
 * cache modes.
 */
#include "check.h"

#include "audio/audio.h"
#include "audio/mel.h"
#include "base/pool.h"
#include "decode/greedy.h"
#include "io/tensor.h"
#include "kern/kern.h"
#include "models/whisper.h"
#include "models/whisper_step.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODEL_DIR ED_TEST_DATA "/tiny-random-whisper-v3"

static const ed_tensor *need(const ed_wtab *g, const char *name) {
    const ed_tensor *t = wtab_get(g, name);
    if (!t) {
        fprintf(stderr, "golden tensor %s missing\n", name);
        exit(1);
    }
    return t;
}

static const ed_tensor *needp(const ed_wtab *g, const char *pfx, const char *name) {
    char nm[64];
    snprintf(nm, sizeof nm, "%s.%s", pfx, name);
    return need(g, nm);
}

/* Teacher-forced decode of golden decode `pfx`: returns the max logit
 * difference against the golden rows and writes our argmax tokens. */
static double decode_against(whisper_state *st, encdec_kv_mode mode, const ed_wtab *g,
                             const char *pfx, int *ours, float *all_logits) {
    const whisper_model *m = st->m;
    const ed_tensor *gl = needp(g, pfx, "logits"), *gt = needp(g, pfx, "tokens"),
                    *gp = needp(g, pfx, "prompt");
    int V = m->hp.n_vocab, n = (int)gt->shape[0];
    CHECK_EQ_INT(gl->shape[1], V);
    const int *tokens = gt->data, *prompt = gp->data;
    whisper_runner r;
    CHECK_EQ_INT(whisper_runner_init(&r, st, mode), ENCDEC_OK);
    whisper_runner_begin(&r, mode);
    dec_model dm = whisper_runner_seam(&r);
    dec_rules rules = {m->suppress, m->n_suppress, m->begin_suppress, m->n_begin_suppress,
                       m->sp.eot, n};
    float *lg = malloc(sizeof(float) * (size_t)V);
    double worst = 0;
    int seq = 0;
    CHECK_EQ_INT(dm.feed(dm.ctx, seq, prompt, (int)gp->shape[0], lg), ENCDEC_OK);
    for (int i = 0; i < n; i++) {
        double diff = check_max_abs_diff(lg, (const float *)gl->data + (size_t)i * V, (size_t)V, NULL);
        if (diff > worst) worst = diff;
        if (all_logits) memcpy(all_logits + (size_t)i * V, lg, sizeof(float) * (size_t)V);
        dec_apply_rules(lg, V, &rules, i);
        ours[i] = k_argmax(lg, V);
        if (i + 1 < n) CHECK_EQ_INT(dm.step(dm.ctx, 1, &seq, &tokens[i], lg), ENCDEC_OK);
    }
    free(lg);
    whisper_runner_free(&r);
    return worst;
}

static int same_tokens(const int *a, const ed_tensor *want, int n) {
    return n == (int)want->shape[0] && memcmp(a, want->data, sizeof(int) * (size_t)n) == 0;
}

/* Logits and tokens of one golden decode in all three cache modes, then the
 * real greedy loop (no teacher forcing). */
static void check_decode(whisper_state *s, const ed_wtab *g, const char *pfx) {
    const whisper_model *m = s->m;
    int V = m->hp.n_vocab;
    const ed_tensor *gt = needp(g, pfx, "tokens"), *gp = needp(g, pfx, "prompt");
    int nt = (int)gt->shape[0];
    int *tok_full = calloc((size_t)nt, sizeof(int)), *tok_other = calloc((size_t)nt, sizeof(int));
    float *lg_full = malloc(sizeof(float) * (size_t)nt * V), *lg_other = malloc(sizeof(float) * (size_t)nt * V);

    double worst = decode_against(s, ENCDEC_KV_FULL, g, pfx, tok_full, lg_full);
    printf("%s: logits (full cache) max |diff| %.3g over %d steps\n", pfx, worst, nt);
    CHECK(worst < 2e-4);
    for (int i = 0; i < nt; i++) CHECK_EQ_INT(tok_full[i], ((const int *)gt->data)[i]);
    encdec_kv_mode others[2] = {ENCDEC_KV_SELF, ENCDEC_KV_NONE};
    for (int k = 0; k < 2; k++) {
        double w = decode_against(s, others[k], g, pfx, tok_other, lg_other);
        double dd = check_max_abs_diff(lg_full, lg_other, (size_t)nt * V, NULL);
        printf("%s: mode %s: vs HF %.3g, vs full %.3g\n", pfx, k ? "none" : "self", w, dd);
        CHECK(w < 2e-4);
        CHECK(dd < 5e-4);
        CHECK(memcmp(tok_full, tok_other, sizeof(int) * (size_t)nt) == 0);
    }

    whisper_runner r;
    CHECK_EQ_INT(whisper_runner_init(&r, s, ENCDEC_KV_FULL), ENCDEC_OK);
    whisper_runner_begin(&r, ENCDEC_KV_FULL);
    dec_model dm = whisper_runner_seam(&r);
    dec_rules rules = {m->suppress, m->n_suppress, m->begin_suppress, m->n_begin_suppress, m->sp.eot, nt};
    float *lg = malloc(sizeof(float) * (size_t)V), *lp = malloc(sizeof(float) * (size_t)nt);
    int got = 0;
    CHECK_EQ_INT(dec_greedy(&dm, 0, gp->data, (int)gp->shape[0], &rules, lg, tok_other, lp, &got), ENCDEC_OK);
    CHECK(same_tokens(tok_other, gt, got));
    free(lg);
    free(lp);
    whisper_runner_free(&r);
    free(tok_full);
    free(tok_other);
    free(lg_full);
    free(lg_other);
}

/* The public API: the model's description, and encdec_transcribe building
 * the multilingual prompt itself. */
static void check_public(const char *wav, const ed_wtab *g) {
    encdec_model *em;
    CHECK_EQ_INT(encdec_model_load(MODEL_DIR, &em), ENCDEC_OK);
    if (!em) return;
    encdec_model_info info;
    encdec_model_get_info(em, &info);
    CHECK_STR(info.family, "whisper");
    CHECK_STR(info.format, "safetensors");
    CHECK_EQ_INT(info.n_mels, 128);
    CHECK_EQ_INT(info.multilingual, 1);
    CHECK_EQ_INT(info.d_model, 64);
    CHECK_EQ_INT(info.n_enc_layer, 2);
    CHECK_EQ_INT(info.n_dec_layer, 2);
    CHECK_EQ_INT(info.n_head, 4);
    CHECK_EQ_INT(info.n_vocab, 342);

    encdec_session *es;
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_session_new(em, &sp, &es), ENCDEC_OK);
    float *pcm;
    size_t n;
    CHECK_EQ_INT(encdec_audio_load(wav, 0, &pcm, &n), ENCDEC_OK);

    struct { const char *lang; int translate; const char *gold; } cases[] = {
        {"de", 1, "de"}, {"en", 0, "en"}, {NULL, 0, "en"},  /* NULL = "en" */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int mode = ENCDEC_KV_FULL; mode <= ENCDEC_KV_NONE; mode++) {
            const ed_tensor *want = needp(g, cases[c].gold, "tokens");
            encdec_transcribe_params tp = encdec_transcribe_default_params();
            tp.language = cases[c].lang;
            tp.translate = cases[c].translate;
            tp.max_tokens = 20;
            tp.kv_mode = (encdec_kv_mode)mode;
            encdec_result *res = NULL;
            CHECK_EQ_INT(encdec_transcribe(es, pcm, n, &tp, &res), ENCDEC_OK);
            if (!res) continue;
            int nt = encdec_result_n_tokens(res), nw = (int)want->shape[0], bad = -1;
            CHECK_EQ_INT(nt, nw);
            for (int i = 0; i < nt && i < nw && bad < 0; i++)
                if (encdec_result_token(res, i)->id != ((const int *)want->data)[i]) bad = i;
            if (bad >= 0)
                fprintf(stderr, "public API %s/%s mode %d: token %d is %d, HF has %d\n",
                        cases[c].lang ? cases[c].lang : "(default)",
                        cases[c].translate ? "translate" : "transcribe", mode, bad,
                        encdec_result_token(res, bad)->id, ((const int *)want->data)[bad]);
            CHECK_EQ_INT(bad, -1);
            CHECK_EQ_INT(encdec_result_timings(res)->n_tokens, nw);
            encdec_result_free(res);
        }
    /* a language the model has no token for */
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.language = "it";
    encdec_result *res = NULL;
    CHECK_STATUS(encdec_transcribe(es, pcm, n, &tp, &res), ENCDEC_ERR_ARG, "unknown language");
    if (res) encdec_result_free(res);

    encdec_free(pcm);
    encdec_session_free(es);
    encdec_model_free(em);
}

int main(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/audio/jfk.wav", ED_SHARED_DIR);
    if (access(path, R_OK) != 0) return check_skip("needs ../shared/audio/jfk.wav");

    ed_wtab *g = wtab_new();
    CHECK_EQ_INT(st_load_file(g, ED_TEST_DATA "/tiny-random-whisper-v3-golden.safetensors"), ENCDEC_OK);
    whisper_model *m = NULL;
    encdec_status st = whisper_load(&m, MODEL_DIR);
    CHECK_EQ_INT(st, ENCDEC_OK);
    if (st) {
        fprintf(stderr, "%s\n", encdec_last_error());
        wtab_free(g);
        return check_done();
    }
    const whisper_hparams *h = &m->hp;
    CHECK_EQ_INT(h->n_mels, 128);
    CHECK_EQ_INT(h->d, 64);
    CHECK_EQ_INT(h->n_vocab, 342);
    CHECK_EQ_INT(m->multilingual, 1);
    CHECK_STR(m->format, "safetensors");
    /* special ids as tools/gen_tiny_whisper_v3.py lays them out */
    CHECK_EQ_INT(m->sp.eot, 300);
    CHECK_EQ_INT(m->sp.sot, 301);
    CHECK_EQ_INT(m->sp.lang_first, 302);
    CHECK_EQ_INT(m->sp.n_langs, 8);
    CHECK_EQ_INT(m->sp.translate, 310);
    CHECK_EQ_INT(m->sp.transcribe, 311);
    CHECK_EQ_INT(m->sp.no_timestamps, 315);
    CHECK_EQ_INT(m->sp.timestamp_begin, 316);
    int d = h->d;

    /* mel: 128 bands */
    float *pcm;
    size_t n;
    CHECK_EQ_INT(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_OK);
    mel_ctx *mc = mel_new(h->n_mels);
    float *mel = malloc(sizeof(float) * (size_t)h->n_mels * MEL_CHUNK_FRAMES);
    CHECK_EQ_INT(mel_compute(mc, pcm, n, mel, MEL_CHUNK_FRAMES), ENCDEC_OK);
    const ed_tensor *gmf = need(g, "mel_frames"), *gmi = need(g, "mel_frame_idx");
    CHECK_EQ_INT(gmf->shape[0], 128);
    int nf = (int)gmi->shape[0];
    double worst = 0;
    for (int b = 0; b < h->n_mels; b++)
        for (int k = 0; k < nf; k++) {
            int f = ((const int *)gmi->data)[k];
            double dd = fabs(mel[(size_t)b * MEL_CHUNK_FRAMES + f] - ((const float *)gmf->data)[b * nf + k]);
            if (dd > worst) worst = dd;
        }
    printf("mel max |diff| %.3g over %d frames x %d bands\n", worst, nf, h->n_mels);
    CHECK(worst < 1e-4);

    /* encoder and cross cache, on 2 threads */
    ed_pool *pool;
    CHECK_EQ_INT(ed_pool_new(&pool, 2), ENCDEC_OK);
    whisper_state *s;
    CHECK_EQ_INT(whisper_state_new(&s, m, pool, 2), ENCDEC_OK);
    whisper_encode(s, mel);
    const ed_tensor *ge = need(g, "encoder_out"), *gri = need(g, "enc_row_idx");
    int nr = (int)gri->shape[0];
    const int *rows = gri->data;
    worst = 0;
    for (int k = 0; k < nr; k++) {
        double dd = check_max_abs_diff(s->enc_out + (size_t)rows[k] * d, (const float *)ge->data + (size_t)k * d, (size_t)d, NULL);
        if (dd > worst) worst = dd;
    }
    printf("encoder output max |diff| %.3g over %d rows\n", worst, nr);
    CHECK(worst < 1e-4);

    whisper_cross_compute(s);
    int dh = d / h->n_head;
    worst = 0;
    for (int l = 0; l < h->n_dec_layer; l++)
        for (int kv = 0; kv < 2; kv++) {
            char nm[32];
            snprintf(nm, sizeof nm, "cross_%c.%d", kv ? 'v' : 'k', l);
            const float *want = need(g, nm)->data;
            const float *have = kv ? kv_cross_v(&s->cross, l) : kv_cross_k(&s->cross, l);
            for (int k = 0; k < nr; k++)
                for (int hd = 0; hd < h->n_head; hd++)
                    for (int j = 0; j < dh; j++) {
                        double dd = fabs(have[hd * kv_cross_head_stride(&s->cross) + (size_t)rows[k] * dh + j] -
                                         want[(size_t)k * d + hd * dh + j]);
                        if (dd > worst) worst = dd;
                    }
        }
    printf("cross K/V max |diff| %.3g\n", worst);
    CHECK(worst < 1e-4);

    /* both multilingual prompts: logits at every step, tokens, cache modes */
    check_decode(s, g, "en");
    check_decode(s, g, "de");
    /* the two decodes differ, so the prompt's language and task tokens matter */
    CHECK(memcmp(need(g, "en.tokens")->data, need(g, "de.tokens")->data, sizeof(int)) != 0);

    whisper_state_free(s);
    ed_pool_free(pool);
    mel_free(mc);
    free(mel);
    free(pcm);
    whisper_free(m);

    check_public(path, g);
    wtab_free(g);
    return check_done();
}
