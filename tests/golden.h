/* golden.h - the Whisper golden tests' shared steps: finding an installed
 * real model, the mel front end, and comparisons of our activations and
 * logits with golden tensors dumped by a reference (tools/golden_*.py).
 *
 *   if (!golden_find_model(dir, sizeof dir, "ENCDEC_BASE", "whisper-base")) return check_skip(...);
 *   CHECK_EQ_INT(golden_mel(wav, m->hp.n_mels, &mel, NULL, NULL), ENCDEC_OK);
 *   golden_check_encoder(s, mel, g);   prints and CHECKs encoder rows and cross K/V
 *
 * Golden tensor names (tools/golden_whisper*.py): mel_frames [n_mels, nf] at
 * mel_frame_idx [nf]; encoder_out [nr, d] at enc_row_idx [nr]; cross_k.<l>
 * and cross_v.<l> [nr, d]; prompt [n_prompt]; tokens [n]; logits [n, V].
 * Everything here adds to the counts of check.h.
 *
 * With ENCDEC_DEVICE=cuda in the environment (scripts/test-cuda.sh, on a
 * GPU), golden_open gives the model's device copy and golden_front a state
 * on the device: the same goldens, the same tolerances, through the CUDA
 * backend (the activations compared are downloaded first).
 */
#ifndef ED_GOLDEN_H
#define ED_GOLDEN_H

#include "check.h"

#include "audio/audio.h"
#include "audio/mel.h"
#include "base/pool.h"
#include "core/dev.h"
#include "decode/greedy.h"
#include "io/tensor.h"
#include "kern/kern.h"
#include "models/whisper.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The device of ENCDEC_DEVICE=cuda[:N] (opened on first use; NULL: the
 * CPU). A test run for the GPU that finds none fails rather than passing
 * on the CPU. */
static inline ed_dev *golden_dev(void) {
    static int done;
    static ed_dev *d;
    if (done) return d;
    done = 1;
    const char *e = getenv("ENCDEC_DEVICE");
    encdec_device kind;
    int idx;
    if (!e || encdec_device_parse(e, &kind, &idx) || kind == ENCDEC_DEVICE_CPU) return NULL;
    if (ed_dev_open(ED_DEV_CUDA, idx, &d)) {
        fprintf(stderr, "ENCDEC_DEVICE=%s: %s\n", e, encdec_last_error());
        exit(1);
    }
    printf("device: %s\n", ed_dev_name(d));
    return d;
}

/* n floats of a state's buffer p as host memory (a copy from the device,
 * in rotating static buffers, on a GPU run; p itself otherwise). */
static inline const float *golden_host(const void *p, size_t bytes) {
    ed_dev *d = golden_dev();
    if (!d) return p;
    static void *buf[4];
    static int k;
    k = (k + 1) % 4;
    free(buf[k]);
    buf[k] = malloc(bytes);
    if (!buf[k] || ed_dev_download(d, buf[k], p, bytes)) {
        fprintf(stderr, "download: %s\n", encdec_last_error());
        exit(1);
    }
    return buf[k];
}

/* The golden tensor `name`; a golden file without it is broken, so the test
 * stops (exit 1) naming it. */
static inline const ed_tensor *golden_need(const ed_wtab *g, const char *name) {
    const ed_tensor *t = wtab_get(g, name);
    if (!t) {
        fprintf(stderr, "golden tensor %s missing\n", name);
        exit(1);
    }
    return t;
}

/* max |a - b| over n, divided by max |b| (a NaN in a: NaN): an error
 * relative to the reference's scale. */
static inline double golden_rel_diff(const float *a, const float *b, size_t n) {
    double worst = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= worst)) worst = d;
        if (fabs(b[i]) > mag) mag = fabs(b[i]);
    }
    return mag > 0 ? worst / mag : worst;
}

/* max |a - b| / max(1, max |b|) over one row (of logits): the text
 * families' measure. */
static inline double golden_row_diff(const float *a, const float *b, size_t n) {
    double mx = 1;
    for (size_t i = 0; i < n; i++)
        if (fabs(b[i]) > mx) mx = fabs(b[i]);
    return check_max_abs_diff(a, b, n, NULL) / mx;
}

/* Through the public API: loads path (CHECKed), its format as
 * encdec_model_info names it, and transcribes jfk.wav (8 tokens at most,
 * no fallback) without error; the values themselves are checked by the
 * caller's golden comparisons on the same model. */
static inline void golden_public_smoke(const char *path, const char *format) {
#ifdef ED_EMULATED
    /* qemu: a window's encoder is most of a minute of soft FMAs; the public
     * path around the model is the same C as natively, where it runs */
    printf("%s: the public API's smoke run natively only\n", format);
    return;
#endif
    encdec_model *em = NULL;
    encdec_session *s = NULL;
    CHECK_EQ_INT(encdec_model_load(path, &em), ENCDEC_OK);
    if (!em) return;
    encdec_model_info mi;
    encdec_model_get_info(em, &mi);
    CHECK_STR(mi.format, format);
    CHECK_STR(mi.family, "whisper");
    CHECK_EQ_INT(encdec_session_new(em, NULL, &s), ENCDEC_OK);
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.max_tokens = 8;
    p.temperature_increment = 0;
    encdec_result *r = NULL;
    CHECK_EQ_INT(encdec_transcribe_file(s, ED_SHARED_DIR "/audio/jfk.wav", NULL, &p, &r, NULL),
                 ENCDEC_OK);
    CHECK(r && encdec_result_n_tokens(r) > 0);
    encdec_result_free(r);
    encdec_session_free(s);
    encdec_model_free(em);
}

/* A real model installed outside the repository: dir gets $env when set,
 * else $HOME/.cache/encdec/models/<name>. Returns 1 when dir/file is
 * readable (golden_find_model: model.bin, the Whisper models' file). */
static inline int golden_find_file(char *dir, size_t cap, const char *env, const char *name,
                                   const char *file) {
    const char *e = getenv(env), *home = getenv("HOME");
    if (e && *e) snprintf(dir, cap, "%s", e);
    else snprintf(dir, cap, "%s/.cache/encdec/models/%s", home ? home : ".", name);
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    return access(p, R_OK) == 0;
}

static inline int golden_find_model(char *dir, size_t cap, const char *env, const char *name) {
    return golden_find_file(dir, cap, env, name, "model.bin");
}

/* Two transcriptions alike: the same tokens, segment and word times, text. */
static inline int golden_same_transcript(const encdec_result *a, const encdec_result *b) {
    if (encdec_result_n_tokens(a) != encdec_result_n_tokens(b) ||
        encdec_result_n_segments(a) != encdec_result_n_segments(b))
        return 0;
    for (int i = 0; i < encdec_result_n_tokens(a); i++)
        if (encdec_result_token(a, i)->id != encdec_result_token(b, i)->id) return 0;
    for (int i = 0; i < encdec_result_n_segments(a); i++) {
        const encdec_segment *x = encdec_result_segment(a, i), *y = encdec_result_segment(b, i);
        if (x->start != y->start || x->end != y->end || x->n_words != y->n_words) return 0;
        for (int k = 0; k < x->n_words; k++)
            if (x->words[k].start != y->words[k].start || x->words[k].end != y->words[k].end) return 0;
    }
    return !strcmp(encdec_result_text(a), encdec_result_text(b));
}

/* Loads wav at 16 kHz (CHECKed) into *mel, the log-mel spectrogram of its
 * first 30 s [n_mels, MEL_CHUNK_FRAMES] (malloc'd, caller frees). The samples
 * go to *pcm, *n (caller frees) when pcm is not NULL. Returns the status of
 * mel_compute, or of the load if that failed (then *mel is all zeros). */
static inline encdec_status golden_mel(const char *wav, int n_mels, float **mel, float **pcm,
                                       size_t *n) {
    float *x;
    size_t nx;
    encdec_status st = audio_load(wav, 16000, 0, &x, &nx);
    CHECK_EQ_INT(st, ENCDEC_OK);
    if (st) {
        x = NULL;
        nx = 0;
        *mel = calloc((size_t)n_mels * MEL_CHUNK_FRAMES, sizeof(float));
    } else {
        mel_ctx *mc = mel_new(n_mels);
        *mel = malloc(sizeof(float) * (size_t)n_mels * MEL_CHUNK_FRAMES);
        st = mel_compute(mc, x, nx, *mel, MEL_CHUNK_FRAMES);
        mel_free(mc);
    }
    if (pcm) {
        *pcm = x;
        *n = nx;
    } else {
        free(x);
    }
    return st;
}

/* Max |diff| of mel [n_mels, MEL_CHUNK_FRAMES] against the golden frames;
 * *n_frames gets how many frames were compared. */
static inline double golden_mel_diff(const float *mel, int n_mels, const ed_wtab *g, int *n_frames) {
    const ed_tensor *gmf = golden_need(g, "mel_frames"), *gmi = golden_need(g, "mel_frame_idx");
    const int *idx = gmi->data;
    const float *want = gmf->data;
    int nf = (int)gmi->shape[0];
    double worst = 0;
    for (int b = 0; b < n_mels; b++)
        for (int k = 0; k < nf; k++) {
            double d = fabs(mel[(size_t)b * MEL_CHUNK_FRAMES + idx[k]] - want[b * nf + k]);
            if (d > worst) worst = d;
        }
    *n_frames = nf;
    return worst;
}

/* Encodes mel on s, then fills its cross cache; prints the max |diff| of the
 * golden encoder rows and of the cross K/V of every decoder layer at those
 * rows, and CHECKs each within 1e-4. */
static inline void golden_check_encoder(whisper_state *s, const float *mel, const ed_wtab *g) {
    const whisper_hparams *h = &s->m->hp;
    int d = h->d, dh = d / h->n_head;
    whisper_encode(s, mel);
    const ed_tensor *ge = golden_need(g, "encoder_out"), *gri = golden_need(g, "enc_row_idx");
    int nr = (int)gri->shape[0];
    const int *rows = gri->data;
    double worst = 0;
    const float *enc = golden_host(s->enc_out, (size_t)h->n_audio_ctx * d * sizeof(float));
    for (int k = 0; k < nr; k++) {
        double dd = check_max_abs_diff(enc + (size_t)rows[k] * d, (const float *)ge->data + (size_t)k * d,
                                       (size_t)d, NULL);
        if (dd > worst) worst = dd;
    }
    printf("encoder output max |diff| %.3g over %d rows\n", worst, nr);
    CHECK(worst < 1e-4);

    whisper_cross_compute(s);
    CHECK_EQ_INT(whisper_state_status(s), ENCDEC_OK);
    kv_cross xc = s->cross;   /* its memory on the host */
    xc.kv = (void *)golden_host(s->cross.kv, kv_cross_bytes(&s->cross));
    worst = 0;
    for (int l = 0; l < h->n_dec_layer; l++)
        for (int kv = 0; kv < 2; kv++) {
            char nm[32];
            snprintf(nm, sizeof nm, "cross_%c.%d", kv ? 'v' : 'k', l);
            const float *want = golden_need(g, nm)->data;                  /* [nr, d] */
            for (int k = 0; k < nr; k++)
                for (int hd = 0; hd < h->n_head; hd++)
                    for (int j = 0; j < dh; j++) {
                        const float *have = kv ? kv_cross_v(&xc, l, hd) : kv_cross_k(&xc, l, hd);
                        double dd = fabs(have[(size_t)rows[k] * dh + j] -
                                         want[(size_t)k * d + hd * dh + j]);
                        if (dd > worst) worst = dd;
                    }
        }
    printf("cross K/V max |diff| %.3g\n", worst);
    CHECK(worst < 1e-4);
}

/* Starts r on s in cache mode `mode` (init, then begin for the encoded
 * input) and puts its decoder seam in *dm; returns the status of init. */
static inline encdec_status golden_runner(dec_runner *r, whisper_state *s, encdec_kv_mode mode,
                                          dec_model *dm) {
    rn_model rm = whisper_rn_model(s);
    encdec_status st = rn_init(r, &rm, mode);
    if (!st) rn_begin(r, mode);
    *dm = rn_seam(r);
    return st;
}

/* The model's suppression rules for a decode of at most max_new tokens. */
static inline dec_rules golden_rules(const whisper_model *m, int max_new) {
    dec_rules r = {m->suppress, m->n_suppress, m->begin_suppress, m->n_begin_suppress, m->sp.eot, max_new};
    return r;
}

/* The real greedy loop (no teacher forcing) through dm, a started runner of
 * a model m: feeds prompt to sequence seq, then decodes at most max_new
 * tokens into out [max_new]; *got gets how many. Returns dec_greedy's status. */
static inline encdec_status golden_greedy(const dec_model *dm, const whisper_model *m, int seq,
                                          const ed_tensor *prompt, int max_new, int *out, int *got) {
    dec_rules rules = golden_rules(m, max_new);
    float *lg = malloc(sizeof(float) * (size_t)m->hp.n_vocab), *lp = malloc(sizeof(float) * (size_t)max_new);
    *got = 0;
    encdec_status st = dec_greedy(dm, seq, prompt->data, (int)prompt->shape[0], &rules, lg, out, lp, got);
    free(lg);
    free(lp);
    return st;
}

/* The host model behind golden_open's device copy (one at a time). */
static whisper_model *golden_host_model;

/* Loads a golden file and the model it was made from (CHECKing both);
 * returns 1, or 0 after printing the error and freeing what was loaded.
 * The model goes with golden_close. */
static inline int golden_open(const char *golden, const char *model_dir, ed_wtab **g,
                              whisper_model **m) {
    *g = wtab_new();
    *m = NULL;
    CHECK_EQ_INT(st_load_file(*g, golden), ENCDEC_OK);
    encdec_status st = whisper_load(m, model_dir);
    CHECK_EQ_INT(st, ENCDEC_OK);
    if (!st && golden_dev()) {   /* the device copy; the host model stays (shared parts) */
        whisper_model *dm = NULL;
        st = whisper_upload(*m, golden_dev(), 0, &dm);
        CHECK_EQ_INT(st, ENCDEC_OK);
        if (!st) {
            golden_host_model = *m;
            *m = dm;
        }
    }
    if (!st) return 1;
    fprintf(stderr, "%s\n", encdec_last_error());
    wtab_free(*g);
    *g = NULL;
    return 0;
}

/* Frees golden_open's model: a device copy, then the host model it shares
 * its tokenizer with; else the model. */
static inline void golden_close(whisper_model *m) {
    if (m && m->dev) {
        whisper_dev_free(m);
        whisper_free(golden_host_model);
        golden_host_model = NULL;
    } else {
        whisper_free(m);
    }
}

/* The front of a golden test: our mel against the golden frames (1e-4),
 * then a 2-thread pool and a 2-slot state whose encoder output and cross K/V
 * are checked (golden_check_encoder). The caller frees *s, then *pool. */
static inline void golden_front(const whisper_model *m, const float *mel, const ed_wtab *g,
                                ed_pool **pool, whisper_state **s) {
    int nf;
    double worst = golden_mel_diff(mel, m->hp.n_mels, g, &nf);
    printf("mel max |diff| %.3g over %d frames x %d bands\n", worst, nf, m->hp.n_mels);
    CHECK(worst < 1e-4);
    CHECK_EQ_INT(ed_pool_new(pool, 2), ENCDEC_OK);
    ed_pool_set_device(*pool, golden_dev());
    CHECK_EQ_INT(whisper_state_new(s, m, *pool, 2, KV_F32), ENCDEC_OK);
    golden_check_encoder(*s, mel, g);
}

/* Teacher-forced greedy decode on s in cache mode `mode`: feeds prompt, then
 * the golden tokens one step at a time (every feed/step CHECKed). Writes our
 * argmax tokens [n] to ours and, when all_logits is not NULL, our raw logits
 * [n, V] to it; returns the max logit |diff| against the golden rows. */
static inline double golden_decode(whisper_state *s, encdec_kv_mode mode, const ed_tensor *prompt,
                                   const ed_tensor *tokens, const ed_tensor *logits, int *ours,
                                   float *all_logits) {
    const whisper_model *m = s->m;
    int V = m->hp.n_vocab, n = (int)tokens->shape[0];
    const int *tok = tokens->data;
    dec_runner r;
    dec_model dm;
    CHECK_EQ_INT(golden_runner(&r, s, mode, &dm), ENCDEC_OK);
    dec_rules rules = golden_rules(m, n);
    float *lg = malloc(sizeof(float) * (size_t)V);
    double worst = 0;
    int seq = 0;
    CHECK_EQ_INT(dm.feed(dm.ctx, seq, prompt->data, (int)prompt->shape[0], lg), ENCDEC_OK);
    for (int i = 0; i < n; i++) {
        double diff = check_max_abs_diff(lg, (const float *)logits->data + (size_t)i * V, (size_t)V, NULL);
        if (diff > worst) worst = diff;
        if (all_logits) memcpy(all_logits + (size_t)i * V, lg, sizeof(float) * (size_t)V);
        dec_apply_rules(lg, V, &rules, NULL, i);
        ours[i] = k_argmax(lg, V);
        if (i + 1 < n) CHECK_EQ_INT(dm.step(dm.ctx, 1, &seq, &tok[i], lg), ENCDEC_OK);
    }
    free(lg);
    rn_free(&r);
    return worst;
}

/* One golden decode in all three cache modes, teacher-forced on the golden
 * tokens: full-cache logits within 2e-4 of the reference and its tokens
 * exact; self and none within 2e-4 of the reference, within 5e-4 of full,
 * and the same tokens as full. label prefixes the printed lines.
 * tok_full [n] and lg_full [n, V] receive the full-cache results. */
static inline void golden_modes(whisper_state *s, const char *label, const ed_tensor *prompt,
                                const ed_tensor *tokens, const ed_tensor *logits,
                                int *tok_full, float *lg_full) {
    int V = s->m->hp.n_vocab, nt = (int)tokens->shape[0];
    CHECK_EQ_INT(logits->shape[1], V);
    double worst = golden_decode(s, ENCDEC_KV_FULL, prompt, tokens, logits, tok_full, lg_full);
    printf("%slogits (full cache) max |diff| %.3g over %d steps\n", label, worst, nt);
    CHECK(worst < 2e-4);
    for (int i = 0; i < nt; i++) CHECK_EQ_INT(tok_full[i], ((const int *)tokens->data)[i]);
    int *tok = calloc((size_t)nt, sizeof(int));
    float *lg = malloc(sizeof(float) * (size_t)nt * V);
    static const encdec_kv_mode others[2] = {ENCDEC_KV_SELF, ENCDEC_KV_NONE};
#if defined(ED_DEVICE_SIMT) || defined(ED_EMULATED)
    /* the CUDA source as fibers (scripts/test-cuda.sh simt) and the ARM64
     * build under qemu: self only. No cache runs the kernels of the full
     * cache's steps and the encoder's products (41 of this test's 57 s as
     * fibers, 8 of 20 s under qemu); the release pass, the emulation and
     * the GPU run it */
    int n_others = 1;
#else
    int n_others = 2;
#endif
    for (int k = 0; k < n_others; k++) {
        double w = golden_decode(s, others[k], prompt, tokens, logits, tok, lg);
        double dd = check_max_abs_diff(lg_full, lg, (size_t)nt * V, NULL);
        printf("%smode %s: vs reference %.3g, vs full %.3g\n", label, k ? "none" : "self", w, dd);
        CHECK(w < 2e-4);
        CHECK(dd < 5e-4);
        CHECK(memcmp(tok_full, tok, sizeof(int) * (size_t)nt) == 0);
    }
    free(tok);
    free(lg);
}

/* Teacher-forced decode through dm against a reference's top-k logits: feeds
 * prompt (CHECKed), then for each of the n steps compares the logits at the
 * ids [n, k] with vals [n, k] and, when lse is not NULL, the logsumexp of the
 * V logits with lse [n], and steps with steps[i] (CHECKed). *worst and
 * *worst_lse get the max |diff| (INFINITY for a NaN). */
static inline void golden_topk(const dec_model *dm, int V, const ed_tensor *prompt, const int *steps,
                               int n, const ed_tensor *ids, const ed_tensor *vals, const ed_tensor *lse,
                               double *worst, double *worst_lse) {
    int k = (int)ids->shape[1];
    float *lg = malloc(sizeof(float) * (size_t)V);
    CHECK_EQ_INT(dm->feed(dm->ctx, 0, prompt->data, (int)prompt->shape[0], lg), ENCDEC_OK);
    *worst = *worst_lse = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < k; j++) {
            int id = ((const int *)ids->data)[i * k + j];
            double d = fabs(lg[id] - ((const float *)vals->data)[i * k + j]);
            if (d > *worst || d != d) *worst = d != d ? INFINITY : d;
        }
        if (lse) {
            double mx = -INFINITY, sum = 0;
            for (int v = 0; v < V; v++) mx = lg[v] > mx ? lg[v] : mx;
            for (int v = 0; v < V; v++) sum += exp(lg[v] - mx);
            double d = fabs(mx + log(sum) - ((const float *)lse->data)[i]);
            if (d > *worst_lse || d != d) *worst_lse = d != d ? INFINITY : d;
        }
        int seq = 0, t = steps[i];
        CHECK_EQ_INT(dm->step(dm->ctx, 1, &seq, &t, lg), ENCDEC_OK);
    }
    free(lg);
}

/* CHECKs em's description against want: family (unless NULL), format, mel
 * bands, multilingual, and the sizes d_model, layers, heads and vocabulary. */
static inline void golden_check_info(const encdec_model *em, const encdec_model_info *want) {
    encdec_model_info info;
    encdec_model_get_info(em, &info);
    if (want->family) CHECK_STR(info.family, want->family);
    CHECK_STR(info.format, want->format);
    CHECK_EQ_INT(info.n_mels, want->n_mels);
    CHECK_EQ_INT(info.multilingual, want->multilingual);
    CHECK_EQ_INT(info.d_model, want->d_model);
    CHECK_EQ_INT(info.n_enc_layer, want->n_enc_layer);
    CHECK_EQ_INT(info.n_dec_layer, want->n_dec_layer);
    CHECK_EQ_INT(info.n_head, want->n_head);
    CHECK_EQ_INT(info.n_vocab, want->n_vocab);
}

/* CHECKs that the result's tokens equal want [n] (the reference's greedy
 * sequence incl. <|endoftext|>); the first mismatch is reported under label. */
/* The public API in the view the Hugging Face goldens hold (openai-whisper's
 * decode() of one window): no timestamps, no temperature fallback. */
static inline encdec_transcribe_params golden_decode_params(void) {
    encdec_transcribe_params p = encdec_transcribe_default_params();
    p.timestamps = 0;
    p.temperature_increment = 0;
    return p;
}

/* The result's tokens against the golden sequence, whose final eot (when
 * it ended with one) the result does not list. */
static inline void golden_check_tokens(const encdec_result *res, const ed_tensor *want, int eot,
                                       const char *label) {
    if (!res || !want) return;
    int nt = encdec_result_n_tokens(res), nw = (int)want->shape[0], bad = -1;
    if (nw > 0 && ((const int *)want->data)[nw - 1] == eot) nw--;
    CHECK_EQ_INT(nt, nw);
    for (int i = 0; i < nt && i < nw; i++)
        if (encdec_result_token(res, i)->id != ((const int *)want->data)[i]) {
            bad = i;
            break;
        }
    if (bad >= 0)
        fprintf(stderr, "%s: token %d is %d, HF has %d\n", label, bad, encdec_result_token(res, bad)->id,
                ((const int *)want->data)[bad]);
    CHECK_EQ_INT(bad, -1);
}

#endif
