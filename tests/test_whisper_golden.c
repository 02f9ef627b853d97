/* test_whisper_golden.c - the Whisper forward passes against Hugging Face
 * transformers, on the seeded random model in tests/data/tiny-random-whisper
 * (tools/gen_tiny_whisper.py) with goldens from tools/golden_whisper.py.
 *
 * Input: ../shared/audio/jfk.wav through our audio + mel front end.
 * Tolerances (absolute; values are O(1..10)):
 *   mel frames 1e-4, encoder output 1e-4, cross K/V 1e-4, logits 2e-4
 * (measured: 9e-6, 7e-6, 1.4e-5, 1.3e-5), and the greedy tokens exactly.
 * The cache modes self and none must give the same tokens as full, with
 * logits within 5e-4 of it (measured 0 and 5e-5); two sequences decoding
 * together (one pass, one shared cross cache) must match one alone.
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

static const ed_tensor *need(const ed_wtab *g, const char *name) {
    const ed_tensor *t = wtab_get(g, name);
    if (!t) {
        fprintf(stderr, "golden tensor %s missing\n", name);
        exit(1);
    }
    return t;
}

/* Greedy-decodes with teacher forcing on the golden tokens; returns the max
 * logit difference against the golden rows and writes our argmax tokens. */
static double decode_against(whisper_state *st, encdec_kv_mode mode, const ed_wtab *g,
                             int *ours, float *all_logits) {
    const whisper_model *m = st->m;
    const ed_tensor *gl = need(g, "logits"), *gt = need(g, "tokens"), *gp = need(g, "prompt");
    int V = m->hp.n_vocab, n = (int)gt->shape[0];
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
        size_t at;
        double diff = check_max_abs_diff(lg, (const float *)gl->data + (size_t)i * V, (size_t)V, &at);
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

int main(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/audio/jfk.wav", ED_SHARED_DIR);
    if (access(path, R_OK) != 0) return check_skip("needs ../shared/audio/jfk.wav");

    ed_wtab *g = wtab_new();
    CHECK_EQ_INT(st_load_file(g, ED_TEST_DATA "/tiny-random-whisper-golden.safetensors"), ENCDEC_OK);
    whisper_model *m = NULL;
    encdec_status st = whisper_load(&m, ED_TEST_DATA "/tiny-random-whisper");
    CHECK_EQ_INT(st, ENCDEC_OK);
    if (st) {
        fprintf(stderr, "%s\n", encdec_last_error());
        return check_done();
    }
    CHECK_EQ_INT(m->hp.d, 64);
    CHECK_STR(m->format, "safetensors");
    const whisper_hparams *h = &m->hp;
    int d = h->d, V = h->n_vocab;

    /* mel */
    float *pcm;
    size_t n;
    CHECK_EQ_INT(audio_load(path, 16000, 0, &pcm, &n), ENCDEC_OK);
    mel_ctx *mc = mel_new(h->n_mels);
    float *mel = malloc(sizeof(float) * (size_t)h->n_mels * MEL_CHUNK_FRAMES);
    CHECK_EQ_INT(mel_compute(mc, pcm, n, mel, MEL_CHUNK_FRAMES), ENCDEC_OK);
    const ed_tensor *gmf = need(g, "mel_frames"), *gmi = need(g, "mel_frame_idx");
    int nf = (int)gmi->shape[0];
    double worst = 0;
    for (int b = 0; b < h->n_mels; b++)
        for (int k = 0; k < nf; k++) {
            int f = ((const int *)gmi->data)[k];
            double dd = fabs(mel[(size_t)b * MEL_CHUNK_FRAMES + f] - ((const float *)gmf->data)[b * nf + k]);
            if (dd > worst) worst = dd;
        }
    printf("mel max |diff| %.3g over %d frames\n", worst, nf);
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

    /* logits at every step, tokens, and the three cache modes */
    const ed_tensor *gt = need(g, "tokens");
    int nt = (int)gt->shape[0];
    int *tok_full = calloc((size_t)nt, sizeof(int)), *tok_other = calloc((size_t)nt, sizeof(int));
    float *lg_full = malloc(sizeof(float) * (size_t)nt * V), *lg_other = malloc(sizeof(float) * (size_t)nt * V);
    worst = decode_against(s, ENCDEC_KV_FULL, g, tok_full, lg_full);
    printf("logits (full cache) max |diff| %.3g over %d steps\n", worst, nt);
    CHECK(worst < 2e-4);
    for (int i = 0; i < nt; i++) CHECK_EQ_INT(tok_full[i], ((const int *)gt->data)[i]);
    encdec_kv_mode others[2] = {ENCDEC_KV_SELF, ENCDEC_KV_NONE};
    for (int k = 0; k < 2; k++) {
        decode_against(s, others[k], g, tok_other, lg_other);
        double dd = check_max_abs_diff(lg_full, lg_other, (size_t)nt * V, NULL);
        printf("mode %s vs full: max logit |diff| %.3g\n", k ? "none" : "self", dd);
        CHECK(dd < 5e-4);
        CHECK(memcmp(tok_full, tok_other, sizeof(int) * (size_t)nt) == 0);
    }

    /* the real greedy loop (no teacher forcing) yields the golden tokens */
    {
        whisper_runner r;
        CHECK_EQ_INT(whisper_runner_init(&r, s, ENCDEC_KV_FULL), ENCDEC_OK);
        whisper_runner_begin(&r, ENCDEC_KV_FULL);
        dec_model dm = whisper_runner_seam(&r);
        dec_rules rules = {m->suppress, m->n_suppress, m->begin_suppress, m->n_begin_suppress, m->sp.eot, nt};
        float *lg = malloc(sizeof(float) * (size_t)V), *lp = malloc(sizeof(float) * (size_t)nt);
        int got = 0;
        const ed_tensor *gp = need(g, "prompt");
        CHECK_EQ_INT(dec_greedy(&dm, 1, gp->data, (int)gp->shape[0], &rules, lg, tok_other, lp, &got), ENCDEC_OK);
        CHECK_EQ_INT(got, nt);
        CHECK(memcmp(tok_other, gt->data, sizeof(int) * (size_t)nt) == 0);

        /* Two sequences in one pass over one shared cross cache: slot 0 and
         * slot 1 fed the same tokens give the single-sequence logits. */
        whisper_runner_begin(&r, ENCDEC_KV_FULL);
        float *two = malloc(sizeof(float) * 2 * (size_t)V);
        const int *p = gp->data;
        CHECK_EQ_INT(dm.feed(dm.ctx, 0, p, (int)gp->shape[0], two), ENCDEC_OK);
        CHECK_EQ_INT(dm.feed(dm.ctx, 1, p, (int)gp->shape[0], two), ENCDEC_OK);
        int seqs[2] = {0, 1};
        for (int i = 0; i + 1 < nt && i < 6; i++) {
            int tk[2] = {((const int *)gt->data)[i], ((const int *)gt->data)[i]};
            CHECK_EQ_INT(dm.step(dm.ctx, 2, seqs, tk, two), ENCDEC_OK);
            CHECK(check_max_abs_diff(two, lg_full + (size_t)(i + 1) * V, (size_t)V, NULL) < 1e-3);
            CHECK(check_max_abs_diff(two + V, lg_full + (size_t)(i + 1) * V, (size_t)V, NULL) < 1e-3);
        }
        /* A sequence cannot grow past the decoder's positions. */
        int big[8] = {0};
        CHECK_STATUS(dm.feed(dm.ctx, 0, big, h->n_text_ctx, two), ENCDEC_ERR_ARG, "exceed");
        free(two);
        free(lg);
        free(lp);
        whisper_runner_free(&r);
    }

    free(tok_full);
    free(tok_other);
    free(lg_full);
    free(lg_other);
    whisper_state_free(s);
    ed_pool_free(pool);
    mel_free(mc);
    free(mel);
    free(pcm);
    whisper_free(m);
    wtab_free(g);
    return check_done();
}
