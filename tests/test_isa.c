/* test_isa.c - whisper tiny.en end to end on every kernel set this CPU has
 * (encdec_model_params.isa: the portable C kernels, AVX2, AVX-512, AMX),
 * with 1 and with 3 threads.
 *
 * 1. f32: four files of ../shared/audio (two on the portable set, whose
 *    decode is slow) without timestamps give exactly the tokens
 *    transformers' greedy decode gives on the same weights
 *    (tests/data/tiny-en-references.json, tools/golden_tiny_en.py), on
 *    every set and thread count.
 * 2. int8: on every set, 1 and 3 threads give the same tokens (four files,
 *    jfk.wav alone on the portable set, whose int8 is slow; a product's
 *    bits do not depend on the slicing), and jfk.wav's words are the
 *    reference's; on the vector set (AVX2 / NEON), every recording of
 *    ../shared/audio gives the same tokens on 1 and 3 threads (a Zen 3
 *    gave other tokens on 3 than on 1 while BLIS's kernels followed the
 *    slices: tests/test_threads.c forces each BLIS configuration on the
 *    ops underneath).
 * 3. The model reports the set it runs; a set above this CPU's, or of
 *    another architecture, is a named error.
 * (The sanitizers' pass runs 1 and 2 on the portable set and this CPU's
 * best only: its kernels are built without the sanitizers.)
 * 4. No kernel above the model's set runs (k_isa_peak): in 1 on every set,
 *    and, on the set below this CPU's best, through the batched pipeline
 *    and an engine request with the Silero VAD (its recurrent steps on the
 *    caller's thread, its pool made there) where the VAD is installed.
 */
#include "golden.h"

#include "base/json.h"
#include "kern/kern.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_model[1024];
static const char *const g_files[] = {"jfk.wav", "librispeech/1272-128104-0000.wav",
                                      "cards/005.wav", "platforms_en.wav"};
#if defined(ED_SANITIZED) || defined(ED_EMULATED)
#define N_FILES 1   /* sanitizers, or qemu: jfk.wav alone (the C set decodes slowly there) */
#else
#define N_FILES 4
#endif

/* Under qemu-user (the aarch64 check) one tiny.en window takes three
 * minutes of both cores, half the stage: no window there. The model end to
 * end on NEON is test_whisper_golden's and test_t5_golden's under qemu
 * (transformers' logits at every step and greedy tokens, on seeded random
 * models), the kernels every set's against their twins (test_kern, test_q8,
 * test_matmul_hp, test_attn_h); this test keeps its named errors there. */
#if defined(ED_SANITIZED)   /* sanitizers: 3, the odd split, alone */
static const int g_f32_threads[] = {3};
#elif !defined(ED_EMULATED)
static const int g_f32_threads[] = {1, 3};
#endif

static float *g_pcm[N_FILES];
static size_t g_n[N_FILES];

/* The public set of kernel level l on this architecture. */
static encdec_isa set_of(int l) {
#if defined(__aarch64__)
    return l == K_ISA_C ? ENCDEC_ISA_C : ENCDEC_ISA_NEON;
#else
    static const encdec_isa sets[] = {ENCDEC_ISA_C, ENCDEC_ISA_AVX2, ENCDEC_ISA_AVX512, ENCDEC_ISA_AMX};
    return sets[l];
#endif
}

/* Tokens of file f (no timestamps), as a malloc'd array; *n their count. */
static int *transcribe(encdec_session *s, int f, int *n) {
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.timestamps = 0;
    encdec_result *r = NULL;
    *n = 0;
    if (encdec_transcribe(s, g_pcm[f], g_n[f], &p, &r) != ENCDEC_OK) {
        fprintf(stderr, "%s: %s\n", g_files[f], encdec_last_error());
        CHECK(0);
        return NULL;
    }
    *n = encdec_result_n_tokens(r);
    int *ids = malloc(sizeof(int) * (size_t)(*n + 1));
    for (int i = 0; i < *n; i++) ids[i] = encdec_result_token(r, i)->id;
    encdec_result_free(r);
    return ids;
}

static int same_tokens(const int *a, int na, const int *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, sizeof(int) * (size_t)na) == 0);
}

#ifndef ED_EMULATED   /* qemu: no window (above); int8 is the kernel tests' (main) */
static void f32_against_transformers(int level, const cJSON *refs) {
    encdec_model_params mp = {ENCDEC_COMPUTE_F32, set_of(level)};
    encdec_model *m = NULL;
    k_isa_peak(1);
    CHECK_EQ_INT(encdec_model_load_ex(g_model, &mp, &m), ENCDEC_OK);
    if (!m) return;
    encdec_model_info info;
    encdec_model_get_info(m, &info);
    if (level < K_ISA_AMX) CHECK(!strcmp(info.isa, k_isa_name(level)));
    /* the portable set decodes slowly (30 s over the four files on 1 and 3
     * threads): two */
    int nf = level == K_ISA_C && N_FILES > 2 ? 2 : N_FILES;
    for (size_t ti = 0; ti < sizeof g_f32_threads / sizeof g_f32_threads[0]; ti++) {
        int threads = g_f32_threads[ti];
        encdec_session *s = NULL;
        encdec_session_params sp = {threads};
        CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
        int same = 0;
        for (int f = 0; s && f < nf; f++) {
            const cJSON *want = cJSON_GetObjectItem(cJSON_GetObjectItem(refs, g_files[f]), "hf_tokens");
            int nw = cJSON_GetArraySize(want), n, *w = malloc(sizeof(int) * (size_t)(nw + 1));
            for (int i = 0; i < nw; i++) w[i] = cJSON_GetArrayItem(want, i)->valueint;
            int *got = transcribe(s, f, &n);
            int ok = got && same_tokens(got, n, w, nw);
            if (!ok) fprintf(stderr, "  %s, %d threads, %s: not transformers' tokens\n", info.isa, threads, g_files[f]);
            same += ok;
            free(got), free(w);
        }
        printf("f32  %-6s %d thread%s: %d/%d files as transformers\n", info.isa, threads,
               threads > 1 ? "s" : "", same, nf);
        CHECK_EQ_INT(same, nf);
        encdec_session_free(s);
    }
    CHECK(k_isa_peak(0) <= level);   /* the load's packing and every op of the sessions */
    encdec_model_free(m);
}

/* jfk.wav's words on session s (int8, no timestamps), case and punctuation aside. */
static void jfk_words(encdec_session *s) {
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.timestamps = 0;
    encdec_result *r = NULL;
    if (s) CHECK_EQ_INT(encdec_transcribe(s, g_pcm[0], g_n[0], &p, &r), ENCDEC_OK);
    if (r) {
        char norm[512];
        size_t k = 0;
        for (const char *c = encdec_result_text(r); *c && k + 1 < sizeof norm; c++)
            if ((*c >= 'a' && *c <= 'z') || *c == ' ') norm[k++] = *c;
            else if (*c >= 'A' && *c <= 'Z') norm[k++] = (char)(*c - 'A' + 'a');
        norm[k] = 0;
        CHECK(!strcmp(norm, " and so my fellow americans ask not what your country can do for you ask "
                           "what you can do for your country"));
    }
    encdec_result_free(r);
}

static void int8_threads(int level) {
    encdec_model_params mp = {ENCDEC_COMPUTE_INT8, set_of(level)};
    encdec_model *m = NULL;
    CHECK_EQ_INT(encdec_model_load_ex(g_model, &mp, &m), ENCDEC_OK);
    if (!m) return;
#ifndef ED_SANITIZED   /* the sanitizers' pass: the paths (jfk's words below), not the bits */
    /* the portable set's int8 is slow (34 s over the four files): jfk.wav
     * (test_threads checks every product's bits on any thread count) */
    int *tok[2][N_FILES], ntok[2][N_FILES], nf = level == K_ISA_C ? 1 : N_FILES;
    for (int t = 0; t < 2; t++) {
        encdec_session *s = NULL;
        encdec_session_params sp = {t ? 3 : 1};
        CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
        for (int f = 0; f < nf; f++) tok[t][f] = s ? transcribe(s, f, &ntok[t][f]) : NULL;
        encdec_session_free(s);
    }
    int same = 0;
    for (int f = 0; f < nf; f++) {
        same += tok[0][f] && tok[1][f] && same_tokens(tok[0][f], ntok[0][f], tok[1][f], ntok[1][f]);
        free(tok[0][f]), free(tok[1][f]);
    }
    printf("int8 %-6s: %d/%d files the same on 1 and 3 threads\n", k_isa_name(level), same, nf);
    CHECK_EQ_INT(same, nf);
#endif
    encdec_session *s = NULL;
    encdec_session_params sp = {2};
    CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    jfk_words(s);
    encdec_session_free(s);
    encdec_model_free(m);
}
#endif

#if !defined(ED_EMULATED) && !defined(ED_SANITIZED)
/* Every recording under dir (wav, flac, mp3), recursively: paths into
 * out[cap] (malloc'd); returns their count. */
static int find_recordings(const char *dir, char **out, int n, int cap) {
    DIR *d = opendir(dir);
    if (!d) return n;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        char path[1024];
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const char *dot = strrchr(e->d_name, '.');
        if (dot && (!strcmp(dot, ".wav") || !strcmp(dot, ".flac") || !strcmp(dot, ".mp3")))
            out[n++] = strdup(path);
        else if (!dot)
            n = find_recordings(path, out, n, cap);
    }
    closedir(d);
    return n;
}

/* int8 on the vector set: every recording, 1 and 3 threads (the odd split:
 * slices of unequal rows), the same tokens. */
static void int8_every_recording(void) {
    char *paths[64];
    int n = find_recordings(ED_SHARED_DIR "/audio", paths, 0, 64), same = 0;
    encdec_model_params mp = {ENCDEC_COMPUTE_INT8, set_of(K_ISA_VEC)};
    encdec_model *m = NULL;
    CHECK_EQ_INT(encdec_model_load_ex(g_model, &mp, &m), ENCDEC_OK);
    encdec_session *s[2] = {NULL, NULL};
    for (int t = 0; m && t < 2; t++) {
        encdec_session_params sp = {t ? 3 : 1};
        CHECK_EQ_INT(encdec_session_new(m, &sp, &s[t]), ENCDEC_OK);
    }
    encdec_transcribe_params p = encdec_transcribe_default_params();
    for (int f = 0; f < n; f++) {
        float *pcm = NULL;
        size_t len = 0;
        CHECK_EQ_INT(encdec_audio_load(paths[f], 0, &pcm, &len), ENCDEC_OK);
        int *tok[2] = {NULL, NULL}, nt[2] = {0, 0}, ok = pcm != NULL;
        for (int t = 0; ok && t < 2; t++) {
            encdec_result *r = NULL;
            ok = s[t] && encdec_transcribe(s[t], pcm, len, &p, &r) == ENCDEC_OK;
            if (!ok) break;
            nt[t] = encdec_result_n_tokens(r);
            tok[t] = malloc(sizeof(int) * (size_t)(nt[t] + 1));
            for (int i = 0; i < nt[t]; i++) tok[t][i] = encdec_result_token(r, i)->id;
            encdec_result_free(r);
        }
        ok = ok && same_tokens(tok[0], nt[0], tok[1], nt[1]);
        if (!ok) fprintf(stderr, "  int8 %s: %s: other tokens on 1 and 3 threads\n",
                         k_isa_name(K_ISA_VEC), paths[f]);
        same += ok;
        for (int t = 0; t < 2; t++) free(tok[t]);
        encdec_free(pcm);
        free(paths[f]);
    }
    printf("int8 %-6s: %d/%d recordings the same on 1 and 3 threads\n", k_isa_name(K_ISA_VEC),
           same, n);
    CHECK(n >= 14);
    CHECK_EQ_INT(same, n);
    for (int t = 0; t < 2; t++) encdec_session_free(s[t]);
    encdec_model_free(m);
}
#endif

static void bad_sets(void) {
    encdec_model *m = NULL;
#if defined(__aarch64__)   /* NEON is aarch64's top set: none above it */
    encdec_model_params other = {ENCDEC_COMPUTE_F32, ENCDEC_ISA_AVX2};
#else
    for (int l = k_isa_cpu() + 1; l <= K_ISA_AMX; l++) {
        encdec_model_params mp = {ENCDEC_COMPUTE_F32, set_of(l)};
        CHECK_EQ_INT(encdec_model_load_ex(g_model, &mp, &m), ENCDEC_ERR_ARG);
        CHECK(strstr(encdec_last_error(), "lacks") != NULL);
    }
    encdec_model_params other = {ENCDEC_COMPUTE_F32, ENCDEC_ISA_NEON};
#endif
    CHECK_EQ_INT(encdec_model_load_ex(g_model, &other, &m), ENCDEC_ERR_ARG);
    CHECK(strstr(encdec_last_error(), "architecture") != NULL);
    encdec_model_params absurd = {ENCDEC_COMPUTE_F32, (encdec_isa)77};
    CHECK_EQ_INT(encdec_model_load_ex(g_model, &absurd, &m), ENCDEC_ERR_ARG);
    CHECK(m == NULL);
    CHECK_EQ_INT(encdec_isa_parse("avx2"), ENCDEC_ISA_AVX2);
    CHECK_EQ_INT(encdec_isa_parse("sse4"), -1);
    CHECK(encdec_isa_name((encdec_isa)77) == NULL);
}

/* encdec_isa_disable_ext: the named extensions off for the process (the
 * kernels' k_feat says so), an unknown name changes nothing, "" restores;
 * with AVX-VNNI (or sdot) off, int8 gives the same tokens on the level
 * beneath it. */
static void extensions_off(void) {
    unsigned cpu = k_feat_cpu();
    CHECK_EQ_INT(encdec_isa_disable_ext("avx-vnni,dotprod"), 0);
    CHECK(!k_feat(K_FEAT_AVXVNNI) && !k_feat(K_FEAT_DOTPROD));
    CHECK_EQ_INT(k_feat(K_FEAT_BF16), !!(cpu & K_FEAT_BF16));
    CHECK_EQ_INT(encdec_isa_disable_ext("bf16,sse9"), -1);
    CHECK(!k_feat(K_FEAT_AVXVNNI) && !k_feat(K_FEAT_DOTPROD));   /* unchanged */
    CHECK_EQ_INT(encdec_isa_disable_ext(",bf16"), -1);
    CHECK_EQ_INT(encdec_isa_disable_ext(""), 0);
    CHECK_EQ_INT(k_feat(K_FEAT_AVXVNNI), !!(cpu & K_FEAT_AVXVNNI));
    CHECK_EQ_INT(k_feat(K_FEAT_DOTPROD), !!(cpu & K_FEAT_DOTPROD));
    if (!(cpu & (K_FEAT_AVXVNNI | K_FEAT_DOTPROD))) return;
#ifdef ED_EMULATED
    /* qemu: a window takes a minute or more, and int8_threads decodes jfk.wav
     * with the extension on; the path beneath it is test_q8's (every int8
     * kernel against its scalar twin with the extension off, under qemu too) */
    printf("int8 %s with its extension off: left to test_q8 under emulation\n", k_isa_name(K_ISA_VEC));
    return;
#endif
    encdec_model_params mp = {ENCDEC_COMPUTE_INT8, set_of(K_ISA_VEC)};
    encdec_model *m = NULL;
    CHECK_EQ_INT(encdec_model_load_ex(g_model, &mp, &m), ENCDEC_OK);
    encdec_session *s = NULL;
    encdec_session_params sp = {2};
    if (m) CHECK_EQ_INT(encdec_session_new(m, &sp, &s), ENCDEC_OK);
    if (!s) {
        encdec_model_free(m);
        return;
    }
    int n[2], *tok[2];
    for (int off = 0; off < 2; off++) {
        CHECK_EQ_INT(encdec_isa_disable_ext(off ? "avx-vnni,dotprod" : NULL), 0);
        tok[off] = transcribe(s, 0, &n[off]);
    }
    encdec_isa_disable_ext(NULL);
    CHECK(tok[0] && tok[1] && same_tokens(tok[0], n[0], tok[1], n[1]));
    printf("int8 %s: jfk.wav's tokens the same with its extension off\n", k_isa_name(K_ISA_VEC));
    free(tok[0]), free(tok[1]);
    encdec_session_free(s);
    encdec_model_free(m);
}

#if !defined(ED_EMULATED) && !defined(ED_SANITIZED)   /* qemu: no window (above); sanitizers: main */
/* The batched pipeline with the Silero VAD on a model of the set below this
 * CPU's best (jfk.wav between 2 s of silence): the VAD's pool and its steps
 * on the calling thread follow the model's set too, as every op does. */
/* A live session judging silence with the VAD: the VAD runs on the
 * thread that drives the session, under the engine's model's set too. */
static void live_vad_limit(encdec_engine *e, const encdec_vad *v, const float *x, size_t n, int level) {
    encdec_live_params lp = encdec_live_default_params();
    lp.vad = v;
    lp.tp.language = "en";
    /* a decode every 2 s of audio, idle engine or not (the VAD's kernel set
     * is the point, not the pace: 22 decodes at the defaults, 40 s of the
     * sanitizers' pass) */
    lp.step_s = 2;
    lp.idle_step_s = 0;
    encdec_live *l = NULL;
    k_isa_peak(1);
    CHECK_EQ_INT(encdec_live_new(e, &lp, &l), ENCDEC_OK);
    if (!l) return;
    char text[2048] = "";
    encdec_live_event ev;
    for (size_t i = 0; i < n; i += 8000) {   /* half a second at a time */
        CHECK_EQ_INT(encdec_live_feed(l, x + i, n - i < 8000 ? n - i : 8000), ENCDEC_OK);
        while (encdec_live_next(l, &ev, -1))
            if (ev.kind == ENCDEC_LIVE_FINAL) strncat(text, ev.text, sizeof text - strlen(text) - 1);
    }
    CHECK_EQ_INT(encdec_live_finish(l), ENCDEC_OK);
    while (encdec_live_next(l, &ev, -1))
        if (ev.kind == ENCDEC_LIVE_FINAL) strncat(text, ev.text, sizeof text - strlen(text) - 1);
    int peak = k_isa_peak(0);
    encdec_live_stats st;
    encdec_live_get_stats(l, &st);
    printf("a live session with the VAD (%d decodes, %d steps skipped): the highest set run %s\n",
           st.decodes, st.skipped, peak >= 0 ? k_isa_name(peak) : "none");
    CHECK(st.skipped > 0);   /* the VAD did judge the silences */
    CHECK(peak >= K_ISA_C && peak <= level);
    CHECK(strstr(text, "for your country") != NULL);
    encdec_live_free(l);
}

static void batched_vad_limit(void) {
    char vad_dir[1024];
    int level = k_isa_cpu() - 1;
    if (level < K_ISA_C) return;
    if (!golden_find_file(vad_dir, sizeof vad_dir, "ENCDEC_VAD", "silero-vad-v6", "model.safetensors")) {
        printf("Silero VAD not installed: the batched pipeline's set not checked\n");
        return;
    }
    size_t pad = 2 * 16000, n = g_n[0] + 2 * pad;
    float *x = calloc(n, sizeof *x);
    if (x) memcpy(x + pad, g_pcm[0], sizeof *x * g_n[0]);
    encdec_vad *v = NULL;
    encdec_model *m = NULL;
    encdec_engine *e = NULL;
    encdec_model_params mp = {ENCDEC_COMPUTE_F32, set_of(level)};
    encdec_engine_params ep = {2, 4, ENCDEC_KV_F32};
    CHECK_EQ_INT(encdec_vad_load(vad_dir, &v), ENCDEC_OK);
    CHECK_EQ_INT(encdec_model_load_ex(g_model, &mp, &m), ENCDEC_OK);
    if (m) CHECK_EQ_INT(encdec_engine_new(m, &ep, &e), ENCDEC_OK);
    if (x && v && e) {
        encdec_transcribe_params p = encdec_transcribe_default_params();
        p.timestamps = 0;
        p.vad = v;
        encdec_batch_params bp = encdec_batch_default_params();
        encdec_result *r = NULL;
        k_isa_peak(1);
        CHECK_EQ_INT(encdec_engine_transcribe_batched(e, x, n, &p, &bp, &r), ENCDEC_OK);
        int peak = k_isa_peak(0);
        printf("batched with the VAD on the %s set: the highest set run %s\n", k_isa_name(level),
               peak >= 0 ? k_isa_name(peak) : "none");
        CHECK(peak >= K_ISA_C && peak <= level);
        CHECK(r && strstr(encdec_result_text(r), "for your country"));
        encdec_result_free(r);
        r = NULL;
        encdec_request *q = NULL;   /* an engine request with the VAD: its pool on the request's thread */
        k_isa_peak(1);
        CHECK_EQ_INT(encdec_engine_transcribe(e, x, n, &p, &q), ENCDEC_OK);
        if (q) CHECK_EQ_INT(encdec_request_wait(q, &r), ENCDEC_OK);
        peak = k_isa_peak(0);
        printf("an engine request with the VAD: the highest set run %s\n",
               peak >= 0 ? k_isa_name(peak) : "none");
        CHECK(peak >= K_ISA_C && peak <= level);
        CHECK(r && strstr(encdec_result_text(r), "for your country"));
        encdec_result_free(r);
        encdec_request_free(q);
        live_vad_limit(e, v, x, n, level);
    }
    encdec_engine_free(e);
    encdec_model_free(m);
    encdec_vad_free(v);
    free(x);
}
#endif

int main(void) {
    if (!golden_find_model(g_model, sizeof g_model, "ENCDEC_TINY_EN", "whisper-tiny.en"))
        return check_skip("whisper tiny.en not installed (scripts/fetch-model.sh tiny.en)");
    if (access(ED_SHARED_DIR "/audio/jfk.wav", R_OK) != 0) return check_skip("needs ../shared/audio");
    cJSON *js = NULL;
    CHECK_EQ_INT(ed_json_load(ED_TEST_DATA "/tiny-en-references.json", &js), ENCDEC_OK);
    if (!js) return check_done();
    for (int f = 0; f < N_FILES; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/audio/%s", ED_SHARED_DIR, g_files[f]);
        CHECK_EQ_INT(encdec_audio_load(path, 0, &g_pcm[f], &g_n[f]), ENCDEC_OK);
    }
    CHECK_PART(bad_sets());
    CHECK_PART(extensions_off());
    printf("this CPU's best kernel set: %s\n", k_isa_name(k_isa_cpu()));
#ifdef ED_EMULATED
    /* qemu: no window (above); int8's kernels are test_q8's there (each
     * against its scalar twin, the dot-product extension on and off) */
    printf("tiny.en on %s end to end: natively only (under emulation: test_whisper_golden, "
           "test_t5_golden)\n", k_isa_name(k_isa_cpu()));
    (void)js;
#else
    for (int l = K_ISA_C; l <= k_isa_cpu(); l++) {
#ifdef ED_SANITIZED
        /* the sanitizers' pass: the portable set and the CPU's best (the
         * kernels are built without the sanitizers: what they check here is
         * the code around them; every set between is the release pass's) */
        if (l > K_ISA_C && l < k_isa_cpu()) {
            printf("%s: the release pass's (sanitizers: the portable set and this CPU's best)\n",
                   k_isa_name(l));
            continue;
        }
#endif
        CHECK_PART(f32_against_transformers(l, cJSON_GetObjectItem(js, "files")));
        CHECK_PART(int8_threads(l));
    }
#endif
#if !defined(ED_EMULATED) && !defined(ED_SANITIZED)
    if (k_isa_cpu() >= K_ISA_VEC) CHECK_PART(int8_every_recording());
    /* (the sanitizers' pass: the VAD's batched and live paths are
     * test_batched's and test_live's there; the set limit is logic) */
    CHECK_PART(batched_vad_limit());
#endif
    for (int f = 0; f < N_FILES; f++) encdec_free(g_pcm[f]);
    cJSON_Delete(js);
    return check_done();
}
