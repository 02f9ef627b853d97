/* test_ct2_int8.c - CTranslate2 int8 models (--quantization int8 and
 * int8_float16) against CTranslate2 itself: tests/data/tiny-random-ct2-int8/
 * holds the random Whisper of tiny-random-whisper as CTranslate2's converter
 * wrote it both ways, and CTranslate2's own logits for each (compute type
 * float32: its dequantization of the int8 weights) on jfk.wav, greedy from
 * [<|startoftranscript|>, <|notimestamps|>] (tools/gen_ct2_int8_fixture.py).
 *
 * encdec reads each int8 weight with its per-row weight_scale as f16
 * q / scale (io/ct2.c). Teacher-forced on CTranslate2's tokens, the logits
 * must agree within 2e-3 of the largest (the f16 rounding of the
 * dequantized weights; measured values printed) and give the same argmax
 * at every step; a scale applied the wrong way round, or to the wrong axis,
 * gives errors of order 1. Then the public API transcribes with each.
 */
#include "golden.h"

#include "base/pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIR ED_TEST_DATA "/tiny-random-ct2-int8"

static void one_type(const char *type, const ed_wtab *g, const float *mel) {
    char path[1024], nm[64];
    snprintf(path, sizeof path, DIR "/%s", type);
    whisper_model *m = NULL;
    CHECK_EQ_INT(whisper_load(&m, path), ENCDEC_OK);
    if (!m) {
        fprintf(stderr, "%s: %s\n", path, encdec_last_error());
        return;
    }
    CHECK_STR(m->format, "ctranslate2");
    CHECK(m->hp.d == 64 && m->hp.n_vocab == 460);
    int V = m->hp.n_vocab;
    ed_pool *pool;
    whisper_state *s;
    CHECK_EQ_INT(ed_pool_new(&pool, 2), ENCDEC_OK);
    CHECK_EQ_INT(whisper_state_new(&s, m, pool, 2, KV_F32), ENCDEC_OK);
    whisper_encode(s, mel);
    whisper_cross_compute(s);
    snprintf(nm, sizeof nm, "%s.tokens", type);
    const ed_tensor *gt = golden_need(g, nm);
    snprintf(nm, sizeof nm, "%s.logits", type);
    const ed_tensor *gl = golden_need(g, nm);
    int nt = (int)gt->shape[0];
    int *ours = calloc((size_t)nt, sizeof(int));
    float *lg = malloc(sizeof(float) * (size_t)nt * V);
    golden_decode(s, ENCDEC_KV_FULL, golden_need(g, "prompt"), gt, gl, ours, lg);
    double d = golden_rel_diff(lg, gl->data, (size_t)nt * V);
    int same = 0;
    for (int i = 0; i < nt; i++) same += k_argmax(lg + (size_t)i * V, V) == ((const int *)gt->data)[i];
    printf("%-13s logits vs CTranslate2: %.2e of the largest, argmax %d/%d\n", type, d, same, nt);
    CHECK(d < 2e-3);
    CHECK_EQ_INT(same, nt);
    free(ours);
    free(lg);
    whisper_state_free(s);
    ed_pool_free(pool);
    whisper_free(m);

    golden_public_smoke(path, "ctranslate2");
}

int main(void) {
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio/jfk.wav");
    ed_wtab *g = wtab_new();
    CHECK_EQ_INT(st_load_file(g, DIR "/golden.safetensors"), ENCDEC_OK);
    float *mel;
    CHECK_EQ_INT(golden_mel(ED_SHARED_DIR "/audio/jfk.wav", 80, &mel, NULL, NULL), ENCDEC_OK);
    one_type("int8", g, mel);
    one_type("int8_float16", g, mel);
    free(mel);
    wtab_free(g);
    return check_done();
}
