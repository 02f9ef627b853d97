/* test_whisper_golden.c - the Whisper forward passes against Hugging Face
 * transformers, on the seeded random model in tests/data/tiny-random-whisper
 * (tools/gen_tiny_whisper.py) with goldens from tools/golden_whisper.py.
 *
 * Input: ../shared/audio/jfk.wav through our audio + mel front end.
 * Tolerances (absolute; values are O(1..10)):
 *   mel frames 1e-4, encoder output 1e-4, cross K/V 1e-4, logits 2e-4
 * (measured: 9e-6, 3e-6, 1.2e-5, 5.1e-5), and the greedy tokens exactly.
 * The cache modes self and none must give the same tokens as full, with
 * logits within 5e-4 of it and within 2e-4 of the reference (measured 0
 * and 5e-5); two sequences decoding
 * together (one pass, one shared cross cache) must match one alone.
 */
#include "golden.h"

#include "base/pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/audio/jfk.wav", ED_SHARED_DIR);
    if (access(path, R_OK) != 0) return check_skip("needs ../shared/audio/jfk.wav");

    ed_wtab *g;
    whisper_model *m;
    if (!golden_open(ED_TEST_DATA "/tiny-random-whisper-golden.safetensors", ED_TEST_DATA "/tiny-random-whisper", &g, &m)) return check_done();
    CHECK_EQ_INT(m->hp.d, 64);
    CHECK_STR(m->format, "safetensors");
    const whisper_hparams *h = &m->hp;
    int V = h->n_vocab;

    /* mel */
    float *mel;
    CHECK_EQ_INT(golden_mel(path, h->n_mels, &mel, NULL, NULL), ENCDEC_OK);
    /* mel, encoder and cross cache (2 threads) */
    ed_pool *pool;
    whisper_state *s;
    golden_front(m, mel, g, &pool, &s);

    /* logits at every step, tokens, and the three cache modes */
    const ed_tensor *gt = golden_need(g, "tokens"), *gp = golden_need(g, "prompt"),
                    *gl = golden_need(g, "logits");
    int nt = (int)gt->shape[0];
    int *tok_full = calloc((size_t)nt, sizeof(int)), *tok_other = calloc((size_t)nt, sizeof(int));
    float *lg_full = malloc(sizeof(float) * (size_t)nt * V);
    golden_modes(s, "", gp, gt, gl, tok_full, lg_full);

    /* the real greedy loop (no teacher forcing) yields the golden tokens */
    {
        dec_runner r;
        dec_model dm;
        CHECK_EQ_INT(golden_runner(&r, s, ENCDEC_KV_FULL, &dm), ENCDEC_OK);
        int got;
        CHECK_EQ_INT(golden_greedy(&dm, m, 1, gp, nt, tok_other, &got), ENCDEC_OK);
        CHECK_EQ_INT(got, nt);
        CHECK(memcmp(tok_other, gt->data, sizeof(int) * (size_t)nt) == 0);

        /* Two sequences in one pass over one shared cross cache: slot 0 and
         * slot 1 fed the same tokens give the single-sequence logits. */
        rn_begin(&r, ENCDEC_KV_FULL);
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
        rn_free(&r);
    }

    free(tok_full);
    free(tok_other);
    free(lg_full);
    whisper_state_free(s);
    ed_pool_free(pool);
    free(mel);
    golden_close(m);
    wtab_free(g);
    return check_done();
}
