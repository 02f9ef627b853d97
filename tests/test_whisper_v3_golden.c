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
#include "golden.h"

#include "base/pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODEL_DIR ED_TEST_DATA "/tiny-random-whisper-v3"

/* The golden tensor "<pfx>.<name>" of decode pfx ("en" or "de"). */
static const ed_tensor *needp(const ed_wtab *g, const char *pfx, const char *name) {
    char nm[64];
    snprintf(nm, sizeof nm, "%s.%s", pfx, name);
    return golden_need(g, nm);
}

/* Teacher-forced decode of golden decode `pfx`: returns the max logit
 * difference against the golden rows and writes our argmax tokens. */
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
    float *lg_full = malloc(sizeof(float) * (size_t)nt * V);
    char label[64];
    snprintf(label, sizeof label, "%s: ", pfx);
    golden_modes(s, label, gp, gt, needp(g, pfx, "logits"), tok_full, lg_full);

    dec_runner r;
    dec_model dm;
    CHECK_EQ_INT(golden_runner(&r, s, ENCDEC_KV_FULL, &dm), ENCDEC_OK);
    int got;
    CHECK_EQ_INT(golden_greedy(&dm, m, 0, gp, nt, tok_other, &got), ENCDEC_OK);
    CHECK(same_tokens(tok_other, gt, got));
    rn_free(&r);
    free(tok_full);
    free(tok_other);
    free(lg_full);
}

/* The public API: the model's description, and encdec_transcribe building
 * the multilingual prompt itself. */
static void check_public(const char *wav, const ed_wtab *g) {
    encdec_model *em;
    CHECK_EQ_INT(encdec_model_load(MODEL_DIR, &em), ENCDEC_OK);
    if (!em) return;
    golden_check_info(em, &(encdec_model_info){.family = "whisper", .format = "safetensors", .n_mels = 128,
                                               .multilingual = 1, .d_model = 64, .n_enc_layer = 2,
                                               .n_dec_layer = 2, .n_head = 4, .n_vocab = 342});

    encdec_session *es;
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_session_new(em, &sp, &es), ENCDEC_OK);
    float *pcm;
    size_t n;
    CHECK_EQ_INT(encdec_audio_load(wav, 0, &pcm, &n), ENCDEC_OK);

    struct { const char *lang; int translate; const char *gold; } cases[] = {
        {"de", 1, "de"}, {"en", 0, "en"}, {"English", 0, "en"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int mode = ENCDEC_KV_FULL; mode <= ENCDEC_KV_NONE; mode++) {
            const ed_tensor *want = needp(g, cases[c].gold, "tokens");
            encdec_transcribe_params tp = golden_decode_params();
            tp.language = cases[c].lang;
            tp.translate = cases[c].translate;
            tp.max_tokens = 20;
            tp.kv_mode = (encdec_kv_mode)mode;
            encdec_result *res = NULL;
            CHECK_EQ_INT(encdec_transcribe(es, pcm, n, &tp, &res), ENCDEC_OK);
            if (!res) continue;
            char label[64];
            snprintf(label, sizeof label, "public API %s/%s mode %d", cases[c].lang ? cases[c].lang : "(default)",
                     cases[c].translate ? "translate" : "transcribe", mode);
            golden_check_tokens(res, want, 300, label);   /* eot */
            CHECK_EQ_INT(encdec_result_timings(res)->n_tokens, want->shape[0]);
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

    ed_wtab *g;
    whisper_model *m;
    if (!golden_open(ED_TEST_DATA "/tiny-random-whisper-v3-golden.safetensors", MODEL_DIR, &g, &m)) return check_done();
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

    /* mel: 128 bands */
    float *mel;
    CHECK_EQ_INT(golden_mel(path, h->n_mels, &mel, NULL, NULL), ENCDEC_OK);
    CHECK_EQ_INT(golden_need(g, "mel_frames")->shape[0], 128);
    /* mel, encoder and cross cache (2 threads) */
    ed_pool *pool;
    whisper_state *s;
    golden_front(m, mel, g, &pool, &s);

    /* both multilingual prompts: logits at every step, tokens, cache modes */
    check_decode(s, g, "en");
    check_decode(s, g, "de");
    /* the two decodes differ, so the prompt's language and task tokens matter */
    CHECK(memcmp(golden_need(g, "en.tokens")->data, golden_need(g, "de.tokens")->data, sizeof(int)) != 0);

    whisper_state_free(s);
    ed_pool_free(pool);
    free(mel);
    golden_close(m);

    check_public(path, g);
    wtab_free(g);
    return check_done();
}
