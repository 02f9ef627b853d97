/* model.c - encdec_model: loading and describing a model. */
#include "api/api.h"
#include "asr/asr_internal.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/isa.h"
#include "base/json.h"
#include "base/mem.h"
#include "core/dev.h"
#include "kern/gemm.h"
#include "kern/kern.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The directory of a model path (itself, or a weights file's). */
static void model_dir(const char *path, char *dir, size_t cap) {
    snprintf(dir, cap, "%s", path);
    if (!ed_is_dir(path)) {
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, cap, ".");
    }
}

/* A CTranslate2 model.bin of a sequence-to-sequence Transformer: the
 * spec names CTranslate2 reads as one ("TransformerSpec"; "TransformerBase",
 * "TransformerBig" and "" from before its 1.0). */
static int ct2_transformer(const char *dir) {
    char bin[4200], spec[64];
    return ct2_spec_name(ed_path_join(bin, sizeof bin, dir, "model.bin"), spec, sizeof spec) &&
           (!strcmp(spec, "TransformerSpec") || !strcmp(spec, "TransformerBase") ||
            !strcmp(spec, "TransformerBig") || !*spec);
}

/* The family from config.json's model_type. A directory without one (a
 * CTranslate2 conversion: its spec says which; or no config.json at all)
 * goes to the Whisper loader, whose errors then say what is missing. */
static encdec_status detect_family(const char *path, api_family *fam) {
    char dir[4096], cfg[4200];
    *fam = API_WHISPER;
    if (ed_is_file(path) && ggml_is_file(path)) return ENCDEC_OK;   /* whisper.cpp's: Whisper */
    model_dir(path, dir, sizeof dir);
    if (!ed_is_file(ed_path_join(cfg, sizeof cfg, dir, "config.json"))) {
        if (ct2_transformer(dir)) *fam = API_BART;   /* CTranslate2 before 3.0 wrote none */
        return ENCDEC_OK;
    }
    cJSON *c;
    encdec_status st = ed_json_load(cfg, &c);
    if (st) return st;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    if (cJSON_IsString(mt)) {
        const char *t = mt->valuestring;
        if (!strcmp(t, "t5") || !strcmp(t, "mt5") || !strcmp(t, "umt5")) *fam = API_T5;
        else if (bart_variant_of(t)) *fam = API_BART;
        else if (strcmp(t, "whisper") != 0)
            st = ed_fail(ENCDEC_ERR_NO_MODEL, "%s: model_type \"%.40s\" is not supported "
                         "(whisper, t5, mt5, umt5, bart, mbart, marian, m2m_100, pegasus)", cfg, t);
    } else if (ct2_transformer(dir)) {   /* a CTranslate2 conversion: its spec says which */
        *fam = API_BART;
    }
    cJSON_Delete(c);
    return st;
}

/* A BART-family model's tokenizer, from the files beside it: Marian's pair
 * of SentencePiece models, BART's byte-level BPE, or the SentencePiece
 * classes of NLLB, mBART, M2M100 and Pegasus. */
static encdec_status bart_tokenizer(encdec_model *m, const char *path) {
    char dir[4096];
    model_dir(path, dir, sizeof dir);
    const bart_hparams *h = &m->bart->hp;
    const char *type = m->bart->var->model_type;
    encdec_status st;
    if (m->bart->ct2 && ttok_is_argos_dir(dir)) st = ttok_load_argos(&m->ttok, dir);
    else if (ttok_is_marian_dir(dir)) st = ttok_load_marian(&m->ttok, dir);
    else if (strcmp(type, "bart") && ttok_is_sp_dir(dir)) st = ttok_load_sp(&m->ttok, dir, type);
    else if (ttok_is_bpe_dir(dir)) st = ttok_load_bpe(&m->ttok, dir, h->bos);
    else if (m->bart->ct2 && ttok_is_vocab_dir(dir)) st = ttok_load_vocab(&m->ttok, dir);   /* tokens only */
    else
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no tokenizer beside this %s model: encdec reads "
                       "Marian's source.spm + target.spm + vocab.json, sentencepiece.bpe.model (NLLB, "
                       "mBART, M2M100 with vocab.json), spiece.model (Pegasus), their fast classes' "
                       "tokenizer.json, or BART's byte-level BPE (tokenizer.json, or vocab.json + "
                       "merges.txt)", dir, type);
    if (st) return st;
    if (ttok_n_vocab(m->ttok) > h->n_vocab || ttok_eos(m->ttok) != h->eos)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: the tokenizer (%d ids, </s> %d) does not fit the "
                       "model (vocabulary %d, eos_token_id %d)", dir, ttok_n_vocab(m->ttok),
                       ttok_eos(m->ttok), h->n_vocab, h->eos);
    return ENCDEC_OK;
}

/* Generation's view of a text-to-text model (models/s2s.h), and its tokenizer. */
static encdec_status text_model(encdec_model *m, const char *path) {
    if (m->family == API_T5) {
        const t5_hparams *h = &m->t5->hp;
        m->text = (s2s_model){&t5_s2s_ops, m->t5, NULL, m->t5->model_type, h->n_vocab,
                              h->n_positions, h->eos, h->dec_start, -1, h->n_dec_layer,
                              h->n_head, h->d_kv};
        m->text.forced_eos = -1;
        m->text.n_src_vocab = h->n_vocab;
        m->text.align_heads = 1;   /* CTranslate2's for T5: the last layer's first head */
        encdec_status st = ttok_wrap_spm(&m->ttok, m->t5->tok);
        m->text.tok = m->ttok;
        char dir[4096];
        model_dir(path, dir, sizeof dir);
        return st ? st : api_gen_config(m, dir);
    }
    const bart_hparams *h = &m->bart->hp;
    m->text = (s2s_model){&bart_s2s_ops, m->bart, NULL, m->bart->var->model_type, h->n_vocab,
                          h->n_positions, h->eos, h->dec_start, h->forced_bos, h->n_dec_layer,
                          h->dec_heads, h->d / h->dec_heads};
    m->text.forced_eos = h->forced_eos;
    m->text.n_src_vocab = h->enc_vocab;
    m->text.align_heads = h->align_heads;
    encdec_status st = bart_tokenizer(m, path);
    m->text.tok = m->ttok;
    char dir[4096];
    model_dir(path, dir, sizeof dir);
    return st ? st : api_gen_config(m, dir);
}

/* The family's weight matrices into out[0, cap); returns how many there are. */
static int model_matrices(encdec_model *m, wl_mat *out, int cap) {
    if (m->family == API_T5) return t5_matrices(m->t5, out, cap);
    if (m->family == API_BART) return bart_matrices(m->bart, out, cap);
    return whisper_matrices(m->w, out, cap);
}

/* Every weight checked (wl_check, unless !check); every weight matrix into
 * the compute mode's storage, once; then the
 * decode-only half-precision ones panel-major (kern/matmul_hp.h); then the
 * file mappings' pages go (what is still borrowed comes back on use). */
/* The smallest output projection an f32 model screens (models/screen.h):
 * MD_SCREEN_MIN elements, or the environment's ENCDEC_LOGIT_SCREEN_MIN (the
 * tests' small models set 0). */
static size_t screen_min(void) {
    const char *e = getenv("ENCDEC_LOGIT_SCREEN_MIN");
    char *end;
    unsigned long long v = e && *e ? strtoull(e, &end, 10) : 0;
    return e && *e && !*end ? (size_t)v : MD_SCREEN_MIN;
}

static encdec_status convert(encdec_model *m, encdec_compute c, int check, int screen) {
    ed_wtab *wt = m->family == API_T5 ? m->t5->wt : m->family == API_BART ? m->bart->wt : m->w->wt;
    size_t *bytes = m->family == API_T5 ? &m->t5->weight_bytes
                    : m->family == API_BART ? &m->bart->weight_bytes : &m->w->weight_bytes;
    if (check) {
        encdec_status st = wl_check(wt);
        if (st) return st;
    }
    int n = model_matrices(m, NULL, 0);
    wl_mat *mats = ed_alloc((size_t)n * sizeof *mats, "weight list");
    if (!mats) return ENCDEC_ERR_NOMEM;
    model_matrices(m, mats, n);
    encdec_status st = wl_convert(wt, mats, n, c, bytes);
    if (!st) st = wl_panelize(wt, mats, n);
    if (!st && screen && c == ENCDEC_COMPUTE_F32 && m->family == API_BART) st = bart_screen(m->bart, screen_min());
    if (!st && screen && c == ENCDEC_COMPUTE_F32 && m->family == API_T5) st = t5_screen(m->t5, screen_min());
    if (!st) wtab_drop_maps(wt);
    free(mats);
    return st;
}

static const char *const isa_names[] = {"auto", "c", "avx2", "avx512", "amx", "neon"};

const char *encdec_isa_name(encdec_isa isa) {
    return isa >= ENCDEC_ISA_AUTO && isa <= ENCDEC_ISA_NEON ? isa_names[isa] : NULL;
}

int encdec_isa_parse(const char *name) {
    for (int i = 0; name && i <= ENCDEC_ISA_NEON; i++)
        if (!strcmp(name, isa_names[i])) return i;
    return -1;
}

/* The public set as a kernel level (kern.h K_ISA_*), or an error when this
 * CPU (or architecture) does not have it. */
static const struct {
    const char *name;
    unsigned feat;
} ext_names[] = {{"avx-vnni", K_FEAT_AVXVNNI}, {"dotprod", K_FEAT_DOTPROD}, {"bf16", K_FEAT_BF16}};

int encdec_isa_disable_ext(const char *names) {
    unsigned off = 0;
    for (const char *p = names ? names : ""; *p;) {
        size_t n = strcspn(p, ","), k = 0, count = sizeof ext_names / sizeof ext_names[0];
        while (k < count && !(strlen(ext_names[k].name) == n && !strncmp(p, ext_names[k].name, n))) k++;
        if (k == count) return -1;
        off |= ext_names[k].feat;
        p += n + (p[n] == ',');
    }
    k_feat_mask(K_FEAT_ALL & ~off);
    return 0;
}

static encdec_status isa_limit(encdec_isa isa, int *lim) {
    *lim = ED_ISA_ANY;
    if (isa == ENCDEC_ISA_AUTO) return ENCDEC_OK;
    int level;
    switch (isa) {
    case ENCDEC_ISA_C: level = K_ISA_C; break;
#if defined(__aarch64__)
    case ENCDEC_ISA_NEON: level = K_ISA_VEC; break;
#else
    case ENCDEC_ISA_AVX2: level = K_ISA_VEC; break;
    case ENCDEC_ISA_AVX512: level = K_ISA_AVX512; break;
    case ENCDEC_ISA_AMX: level = K_ISA_AMX; break;
#endif
    default:
        if (!encdec_isa_name(isa))
            return ed_fail(ENCDEC_ERR_ARG, "kernel set %d is not one of 0 auto, 1 c, 2 avx2, "
                           "3 avx512, 4 amx, 5 neon", (int)isa);
        return ed_fail(ENCDEC_ERR_ARG, "kernel set %s is not one of this architecture's (%s)",
                       encdec_isa_name(isa),
#if defined(__aarch64__)
                       "c, neon"
#else
                       "c, avx2, avx512, amx"
#endif
        );
    }
    if (level > k_isa_cpu())
        return ed_fail(ENCDEC_ERR_ARG, "kernel set %s needs instructions this CPU lacks "
                       "(its best set: %s)", encdec_isa_name(isa), k_isa_name(k_isa_cpu()));
    *lim = level;
    return ENCDEC_OK;
}

const char *api_isa_running(int lim) {
    int old = ed_isa_swap(lim), level = k_isa();
    if (level == K_ISA_AMX && !k_gemm_has_amx()) level = K_ISA_AVX512;
    ed_isa_swap(old);
    return k_isa_name(level);
}

int encdec_device_parse(const char *name, encdec_device *dev, int *index) {
    if (!name) return -1;
    if (!strcmp(name, "cpu")) {
        *dev = ENCDEC_DEVICE_CPU;
        *index = 0;
        return 0;
    }
    if (strncmp(name, "cuda", 4)) return -1;
    int i = 0;
    if (name[4] == ':') {
        char *end;
        long v = strtol(name + 5, &end, 10);
        if (end == name + 5 || *end || v < 0 || v > 1024) return -1;
        i = (int)v;
    } else if (name[4]) {
        return -1;
    }
    *dev = ENCDEC_DEVICE_CUDA;
    *index = i;
    return 0;
}

int encdec_device_count(encdec_device dev) {
    return dev == ENCDEC_DEVICE_CPU ? 1 : dev == ENCDEC_DEVICE_CUDA ? ed_dev_count(ED_DEV_CUDA) : 0;
}

encdec_model_params encdec_model_default_params(void) {
    encdec_model_params p = {.compute = ENCDEC_COMPUTE_F32, .isa = ENCDEC_ISA_AUTO};
    const char *e = getenv("ENCDEC_DEVICE");
    if (e && *e) encdec_device_parse(e, &p.device, &p.device_index);   /* else the CPU */
    return p;
}

encdec_status api_dev_open(const encdec_model *m, struct ed_dev **out) {
    *out = NULL;
    return m->dev ? ed_dev_open(ED_DEV_CUDA, m->dev_index, out) : ENCDEC_OK;
}

/* The model's weights onto its device: checked as on the CPU, then each
 * matrix uploaded in the device's type (f32, bf16, or int8 in the device's
 * layout of the CPU's bytes: models/mdev.h; no CPU layouts here), the
 * file's pages dropped. */
static encdec_status to_device(encdec_model *m, const encdec_model_params *p) {
    encdec_status st = ed_dev_open(ED_DEV_CUDA, p->device_index, &m->dev);
    if (st) return st;
    m->dev_index = p->device_index;
    int mode = (int)m->compute;
    ed_wtab *wt = m->family == API_T5 ? m->t5->wt : m->family == API_BART ? m->bart->wt : m->w->wt;
    if (!p->no_weight_check) st = wl_check(wt);
    if (!st && m->family == API_T5) {
        t5_model *g = NULL;
        st = t5_upload(m->t5, m->dev, mode, &g);
        m->text_dev = g;
    } else if (!st && m->family == API_BART) {
        bart_model *g = NULL;
        st = bart_upload(m->bart, m->dev, mode, &g);
        m->text_dev = g;
    } else if (!st) {
        st = whisper_upload(m->w, m->dev, mode, &m->w_dev);
    }
    if (!st && m->text_dev) m->text.model = m->text_dev;
    /* the host's pages of the matrices go (T5's relative-bias tables, read
     * again on the host, come back from the file on their next use) */
    if (!st) wtab_drop_maps(wt);
    return st;
}

encdec_status encdec_model_load_ex(const char *path, const encdec_model_params *params,
                                   encdec_model **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_model_load: out is NULL");
    *out = NULL;
    if (!path || !*path) return ed_fail(ENCDEC_ERR_ARG, "encdec_model_load: empty model path");
    encdec_compute c = params ? params->compute : ENCDEC_COMPUTE_F32;
    if (c < ENCDEC_COMPUTE_F32 || c > ENCDEC_COMPUTE_INT8)
        return ed_fail(ENCDEC_ERR_ARG, "compute mode %d is not one of 0 f32, 1 bf16, 2 int8", (int)c);
    int lim;
    encdec_status st = isa_limit(params ? params->isa : ENCDEC_ISA_AUTO, &lim);
    if (st) return st;
    encdec_model_params dflt = encdec_model_default_params();
    const encdec_model_params *pp = params ? params : &dflt;
    const char *env = getenv("ENCDEC_DEVICE");
    encdec_device ed;
    int ei;
    if (env && *env && encdec_device_parse(env, &ed, &ei))
        return ed_fail(ENCDEC_ERR_ARG, "ENCDEC_DEVICE=%s: expected cpu, cuda or cuda:N", env);
    if (pp->device != ENCDEC_DEVICE_CPU && pp->device != ENCDEC_DEVICE_CUDA)
        return ed_fail(ENCDEC_ERR_ARG, "device %d is not one of 0 cpu, 1 cuda", (int)pp->device);
    if (pp->device == ENCDEC_DEVICE_CUDA && (pp->device_index < 0 || pp->device_index > 1024))
        return ed_fail(ENCDEC_ERR_ARG, "CUDA device index %d out of range", pp->device_index);
    encdec_model *m = calloc(1, sizeof *m);
    if (!m) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: model");
    m->compute = c;
    m->isa = lim;
    int old = ed_isa_swap(lim);   /* the packing at load follows the kernels that will run */
    /* an Argos Translate package: its weights in model/, its tokenizer beside */
    char argos[4200], meta[4200];
    const char *wpath = path;
    if (ed_is_dir(path) && ttok_is_argos_dir(path))
        wpath = ed_path_join(argos, sizeof argos, path, "model");
    else if (ed_is_dir(path) && ed_is_file(ed_path_join(meta, sizeof meta, path, "metadata.json")) &&
             ed_is_dir(ed_path_join(argos, sizeof argos, path, "model")))
        st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: an Argos Translate package without its tokenizer "
                     "(sentencepiece.model or bpe.model) and model/shared_vocabulary.json", path);
    if (!st) st = detect_family(wpath, &m->family);
    if (!st && m->family == API_T5) st = t5_load(&m->t5, wpath);
    else if (!st && m->family == API_BART) st = bart_load(&m->bart, wpath);
    else if (!st) st = whisper_load(&m->w, wpath);
    if (!st && api_is_text(m)) st = text_model(m, path);
    if (!st && pp->device == ENCDEC_DEVICE_CUDA) st = to_device(m, pp);
    else if (!st)
        st = convert(m, c, !(params && params->no_weight_check), !(params && params->no_logit_screen));
    ed_isa_swap(old);
    if (st) {
        encdec_model_free(m);
        return st;
    }
    *out = m;
    return ENCDEC_OK;
}

encdec_status encdec_model_load(const char *path, encdec_model **out) {
    return encdec_model_load_ex(path, NULL, out);
}

const char *api_compute_name(encdec_compute c) {
    return c == ENCDEC_COMPUTE_BF16 ? "bf16" : c == ENCDEC_COMPUTE_INT8 ? "int8" : "f32";
}

void encdec_model_free(encdec_model *m) {
    if (!m) return;
    whisper_dev_free(m->w_dev);
    if (m->text_dev && m->family == API_T5) t5_dev_free(m->text_dev);
    if (m->text_dev && m->family == API_BART) bart_dev_free(m->text_dev);
    ed_dev_close(m->dev);
    whisper_free(m->w);
    t5_free(m->t5);
    bart_free(m->bart);
    ttok_free(m->ttok);
    free(m->text.suppress);
    free(m);
}

/* A text model's description: what the families share from s2s_model, then
 * each one's own numbers. */
static void text_info(const encdec_model *m, encdec_model_info *info) {
    const s2s_model *t = &m->text;
    info->model_type = t->model_type;
    info->format = m->bart && m->bart->ct2 ? "ctranslate2" : "safetensors";
    info->n_text_ctx = t->n_positions;
    info->n_dec_layer = t->n_dec_layer;
    info->n_head = t->n_head;
    info->n_vocab = t->n_vocab;
    info->compute = api_compute_name(m->compute);
    info->isa = api_isa_running(m->isa);
    info->device = "cpu";
    info->source_language = ttok_pair(m->ttok, 0);
    info->target_language = ttok_pair(m->ttok, 1);
    if (m->bart) {
        info->source_bos = m->bart->hp.src_bos;
        info->source_eos = m->bart->hp.src_eos;
    }
    if (m->family == API_T5) {
        info->family = "t5";
        info->d_model = m->t5->hp.d;
        info->n_enc_layer = m->t5->hp.n_enc_layer;
        info->multilingual = strcmp(t->model_type, "t5") != 0;
        info->weight_bytes = m->t5->weight_bytes;
    } else {
        info->family = "bart";
        info->d_model = m->bart->hp.d;
        info->n_enc_layer = m->bart->hp.n_enc_layer;
        info->multilingual = !strcmp(t->model_type, "mbart") || !strcmp(t->model_type, "m2m_100");
        info->weight_bytes = m->bart->weight_bytes;
    }
}

void encdec_model_get_info(const encdec_model *m, encdec_model_info *info) {
    memset(info, 0, sizeof *info);
    if (api_is_text(m)) {
        text_info(m, info);
        return;
    }
    const whisper_model *w = m->w;
    const whisper_hparams *h = &w->hp;
    info->family = "whisper";
    info->model_type = "whisper";
    info->format = w->format;
    info->n_mels = h->n_mels;
    info->n_audio_ctx = h->n_audio_ctx;
    info->n_text_ctx = h->n_text_ctx;
    info->d_model = h->d;
    info->n_enc_layer = h->n_enc_layer;
    info->n_dec_layer = h->n_dec_layer;
    info->n_head = h->n_head;
    info->n_vocab = h->n_vocab;
    info->multilingual = w->multilingual;
    info->weight_bytes = api_w_run(m)->weight_bytes;
    info->compute = api_compute_name(m->compute);
    info->isa = api_isa_running(m->isa);
    info->device = ed_dev_name(m->dev);
}

static char g_build_info[256];

/* "encdec 0.1.0, kernels avx2 (this CPU: avx2 + avx-vnni), BLIS ...": the
 * set the kernels run, and the CPU's best set with the extensions inside
 * its level that kernels use (kern.h K_FEAT_*). */
static void build_info_init(void) {
    unsigned f = k_feat_cpu();
    snprintf(g_build_info, sizeof g_build_info, "encdec %s, kernels %s (this CPU: %s%s%s%s), %s%s",
             ENCDEC_VERSION, api_isa_running(ED_ISA_ANY), k_isa_name(k_isa_cpu()),
             f & K_FEAT_AVXVNNI ? " + avx-vnni" : "", f & K_FEAT_DOTPROD ? " + dotprod" : "",
             f & K_FEAT_BF16 ? " + bf16" : "", k_blas_info(),
             ed_dev_built(ED_DEV_CUDA) ? ", CUDA backend" : "");
}

const char *encdec_build_info(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_info_init);
    return g_build_info;
}

const char *encdec_model_language(const encdec_model *m, int i) {
    if (m && api_is_text(m)) return ttok_lang_code(m->ttok, i);
    if (!m || m->family != API_WHISPER) return NULL;
    if (!m->w->multilingual) return i == 0 ? "en" : NULL;
    return i >= 0 && i < m->w->sp.n_langs ? wlang_code(i) : NULL;
}

int encdec_model_token_id(const encdec_model *m, const char *token) {
    return m && api_is_text(m) ? ttok_token_id(m->ttok, token) : -1;
}

int encdec_model_source_token_id(const encdec_model *m, const char *token) {
    return m && api_is_text(m) ? ttok_source_id(m->ttok, token) : -1;
}

const char *encdec_model_token(const encdec_model *m, int id) {
    return m && api_is_text(m) ? ttok_token_spelling(m->ttok, id) : NULL;
}

const char *encdec_language_name(const char *code) {
    return code && strlen(code) <= 32 ? wlang_name(wlang_find(code)) : NULL;
}

const char *encdec_language_code(int i) { return wlang_code(i); }

int encdec_model_find_language(const encdec_model *m, const char *name) {
    if (m && api_is_text(m)) return ttok_find_lang(m->ttok, name);
    if (!m || m->family != API_WHISPER || !name || strlen(name) > 32) return -1;
    int i = wlang_find(name);
    return encdec_model_language(m, i) ? i : -1;
}
