/* whisper_cfg.c - hyper-parameters and decoding rules of a Whisper model.
 *
 * Limits: dimensions are checked against generous bounds (d_model up to
 * 16384, 256 layers, 1M vocabulary) so that absurd configs fail here with
 * ENCDEC_ERR_CONFIG instead of as huge allocations later. The mel window is
 * fixed by the front end (3000 frames), so n_audio_ctx must be 1500.
 */
#include "models/whisper_cfg.h"
#include "audio/mel.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

encdec_status whisper_cfg_check(const whisper_hparams *h, const char *file) {
    if (h->n_mels != 80 && h->n_mels != 128)
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: %d mel bins; Whisper uses 80 or 128", file, h->n_mels);
    if (h->n_audio_ctx * 2 != MEL_CHUNK_FRAMES)
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: %d encoder positions; a 30 s window has %d",
                       file, h->n_audio_ctx, MEL_CHUNK_FRAMES / 2);
    if (h->d % h->n_head != 0)
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: d_model %d is not a multiple of %d heads",
                       file, h->d, h->n_head);
    if (h->n_text_ctx < 4)
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: %d decoder positions is too few", file, h->n_text_ctx);
    return ENCDEC_OK;
}

static encdec_status read_rules(whisper_model *m, const cJSON *obj, const char *file,
                                const char *k_suppress, const char *k_begin) {
    int *a = NULL, *b = NULL, na = 0, nb = 0;
    encdec_status st = ed_json_int_array(obj, k_suppress, file, 0, m->hp.n_vocab - 1, &a, &na);
    if (!st) st = ed_json_int_array(obj, k_begin, file, 0, m->hp.n_vocab - 1, &b, &nb);
    if (st) {
        free(a);
        return st;
    }
    if (a) {
        free(m->suppress);
        m->suppress = a;
        m->n_suppress = na;
    }
    if (b) {
        free(m->begin_suppress);
        m->begin_suppress = b;
        m->n_begin_suppress = nb;
    }
    return ENCDEC_OK;
}

#define MAX_ALIGN_HEADS 256

/* "alignment_heads": [[layer, head], ...] (decoder cross-attention heads
 * whose weights follow the speech, for word times), when obj has it. */
static encdec_status read_align_heads(whisper_model *m, const cJSON *obj, const char *file) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, "alignment_heads");
    if (!a || cJSON_IsNull(a)) return ENCDEC_OK;
    int n = cJSON_GetArraySize(a);
    if (!cJSON_IsArray(a) || n < 1 || n > MAX_ALIGN_HEADS)
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: alignment_heads must be a list of 1..%d "
                       "[layer, head] pairs", file, MAX_ALIGN_HEADS);
    int *h = malloc(sizeof(int) * 2 * (size_t)n);
    if (!h) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: alignment heads");
    int i = 0;
    for (const cJSON *e = a->child; e; e = e->next, i++) {
        const cJSON *l = cJSON_GetArrayItem(e, 0), *hd = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsNumber(l) ||
            !cJSON_IsNumber(hd) || l->valuedouble < 0 || l->valuedouble >= m->hp.n_dec_layer ||
            hd->valuedouble < 0 || hd->valuedouble >= m->hp.n_head ||
            l->valuedouble != (int)l->valuedouble || hd->valuedouble != (int)hd->valuedouble) {
            free(h);
            return ed_fail(ENCDEC_ERR_CONFIG, "%s: alignment_heads[%d] is not a [layer, head] "
                           "pair within %d layers x %d heads", file, i, m->hp.n_dec_layer,
                           m->hp.n_head);
        }
        h[2 * i] = l->valueint;
        h[2 * i + 1] = hd->valueint;
    }
    free(m->align_heads);
    m->align_heads = h;
    m->n_align_heads = n;
    return ENCDEC_OK;
}

/* OpenAI's alignment heads of its released checkpoints (openai-whisper's
 * _ALIGNMENT_HEADS), by shape: decoder layers, heads, width, multilingual,
 * mel bands. large-v1 has large-v2's shape; v2's heads are taken. Pairs are
 * (layer, head), -1 ended. */
static const struct {
    int layers, heads, d, multi, mels;
    signed char pairs[48];
} KNOWN_HEADS[] = {
    {4, 6, 384, 0, 80, {1, 0, 2, 0, 2, 5, 3, 0, 3, 1, 3, 2, 3, 3, 3, 4, -1}},            /* tiny.en */
    {4, 6, 384, 1, 80, {2, 2, 3, 0, 3, 2, 3, 3, 3, 4, 3, 5, -1}},                        /* tiny */
    {6, 8, 512, 0, 80, {3, 3, 4, 7, 5, 1, 5, 5, 5, 7, -1}},                              /* base.en */
    {6, 8, 512, 1, 80, {3, 1, 4, 2, 4, 3, 4, 7, 5, 1, 5, 2, 5, 4, 5, 6, -1}},            /* base */
    {12, 12, 768, 0, 80, {6, 6, 7, 0, 7, 3, 7, 8, 8, 2, 8, 5, 8, 7, 9, 0, 9, 4, 9, 8, 9, 10,
                          10, 0, 10, 1, 10, 2, 10, 3, 10, 6, 10, 11, 11, 2, 11, 4, -1}},  /* small.en */
    {12, 12, 768, 1, 80, {5, 3, 5, 9, 8, 0, 8, 4, 8, 7, 8, 8, 9, 0, 9, 7, 9, 9, 10, 5, -1}}, /* small */
    {24, 16, 1024, 0, 80, {11, 4, 14, 1, 14, 12, 14, 14, 15, 4, 16, 0, 16, 4, 16, 9, 17, 12,
                           17, 14, 18, 7, 18, 10, 18, 15, 20, 0, 20, 3, 20, 9, 20, 14, 21, 12,
                           -1}},                                                         /* medium.en */
    {24, 16, 1024, 1, 80, {13, 15, 15, 4, 15, 15, 16, 1, 20, 0, 23, 4, -1}},             /* medium */
    {32, 20, 1280, 1, 80, {10, 12, 13, 17, 16, 11, 16, 12, 16, 13, 17, 15, 17, 16, 18, 4, 18,
                           11, 18, 19, 19, 11, 21, 2, 21, 3, 22, 3, 22, 9, 22, 12, 23, 5, 23, 7,
                           23, 13, 25, 5, 26, 1, 26, 12, 27, 15, -1}},                   /* large-v2 */
    {32, 20, 1280, 1, 128, {7, 0, 10, 17, 12, 18, 13, 12, 16, 1, 17, 14, 19, 11, 21, 4, 24, 1,
                            25, 6, -1}},                                                 /* large-v3 */
    {4, 20, 1280, 1, 128, {2, 4, 2, 11, 3, 3, 3, 6, 3, 11, 3, 14, -1}},                  /* large-v3-turbo */
};

encdec_status whisper_cfg_align_default(whisper_model *m) {
    if (m->n_align_heads > 0) return ENCDEC_OK;
    const whisper_hparams *h = &m->hp;
    for (size_t k = 0; k < sizeof KNOWN_HEADS / sizeof KNOWN_HEADS[0]; k++) {
        if (KNOWN_HEADS[k].layers != h->n_dec_layer || KNOWN_HEADS[k].heads != h->n_head ||
            KNOWN_HEADS[k].d != h->d || KNOWN_HEADS[k].multi != m->multilingual ||
            KNOWN_HEADS[k].mels != h->n_mels)
            continue;
        const signed char *p = KNOWN_HEADS[k].pairs;
        int n = 0;
        while (p[2 * n] >= 0) n++;
        m->align_heads = malloc(sizeof(int) * 2 * (size_t)n);
        if (!m->align_heads) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: alignment heads");
        for (int i = 0; i < 2 * n; i++) m->align_heads[i] = p[i];
        m->n_align_heads = n;
        return ENCDEC_OK;
    }
    int L0 = h->n_dec_layer / 2, n = (h->n_dec_layer - L0) * h->n_head;
    m->align_heads = malloc(sizeof(int) * 2 * (size_t)n);
    if (!m->align_heads) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: alignment heads");
    for (int l = L0, i = 0; l < h->n_dec_layer; l++)
        for (int k = 0; k < h->n_head; k++, i++) {
            m->align_heads[2 * i] = l;
            m->align_heads[2 * i + 1] = k;
        }
    m->n_align_heads = n;
    return ENCDEC_OK;
}

encdec_status whisper_cfg_hf(whisper_model *m, const char *dir) {
    char path[4096];
    cJSON *c;
    encdec_status st = ed_json_load(ed_path_join(path, sizeof path, dir, "config.json"), &c);
    if (st) return st;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    if (cJSON_IsString(mt) && strcmp(mt->valuestring, "whisper") != 0) {
        st = ed_fail(ENCDEC_ERR_CONFIG, "config.json: model_type \"%s\" is not a Whisper model",
                     mt->valuestring);
        cJSON_Delete(c);
        return st;
    }
    whisper_hparams *h = &m->hp;
    int dec_heads = 0, dec_ffn = 0;
    struct { const char *key; long hi; int *dst; } f[] = {
        {"d_model", 16384, &h->d},
        {"encoder_layers", 256, &h->n_enc_layer},
        {"decoder_layers", 256, &h->n_dec_layer},
        {"encoder_attention_heads", 256, &h->n_head},
        {"decoder_attention_heads", 256, &dec_heads},
        {"encoder_ffn_dim", 65536, &h->ffn},
        {"decoder_ffn_dim", 65536, &dec_ffn},
        {"num_mel_bins", 1024, &h->n_mels},
        {"max_source_positions", 65536, &h->n_audio_ctx},
        {"max_target_positions", 65536, &h->n_text_ctx},
        {"vocab_size", 1 << 20, &h->n_vocab},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0] && !st; i++)
        st = ed_json_int(c, f[i].key, path, 1, f[i].hi, f[i].dst);
    if (!st && (dec_heads != h->n_head || dec_ffn != h->ffn))
        st = ed_fail(ENCDEC_ERR_CONFIG, "config.json: encoder and decoder differ in heads or "
                     "ffn width (%d/%d, %d/%d); not a Whisper layout",
                     h->n_head, dec_heads, h->ffn, dec_ffn);
    if (!st) st = whisper_cfg_check(h, "config.json");
    if (!st) st = read_rules(m, c, path, "suppress_tokens", "begin_suppress_tokens");
    cJSON_Delete(c);
    if (st) return st;
    m->multilingual = h->n_vocab >= 51865;

    if (!ed_is_file(ed_path_join(path, sizeof path, dir, "generation_config.json")))
        return ENCDEC_OK;
    st = ed_json_load(path, &c);
    if (st) return st;
    st = read_rules(m, c, path, "suppress_tokens", "begin_suppress_tokens");
    if (!st) st = read_align_heads(m, c, path);
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(c, "is_multilingual");
    if (cJSON_IsBool(ml)) m->multilingual = cJSON_IsTrue(ml);
    cJSON_Delete(c);
    return st;
}

static int scalar_int(const ed_tensor *t, long *out) {
    if (!t || t->ndim != 0) return 0;
    switch (t->dtype) {
    case ED_I8: *out = *(const int8_t *)t->data; return 1;
    case ED_I16: *out = *(const int16_t *)t->data; return 1;
    case ED_I32: *out = *(const int32_t *)t->data; return 1;
    case ED_I64: *out = (long)*(const int64_t *)t->data; return 1;
    default: return 0;
    }
}

static encdec_status ct2_dim(const whisper_model *m, const char *name, int ndim, int axis,
                             int *out) {
    const ed_tensor *t = wtab_get(m->wt, name);
    if (!t) return ed_fail(ENCDEC_ERR_SHAPE, "model.bin: tensor %s is missing", name);
    if (t->ndim != ndim || t->shape[axis] < 1 || t->shape[axis] > (1 << 20)) {
        char s[96];
        return ed_fail(ENCDEC_ERR_SHAPE, "model.bin: tensor %s has shape %s, expected %d dims",
                       name, ed_shape_str(s, sizeof s, t->ndim, t->shape), ndim);
    }
    *out = (int)t->shape[axis];
    return ENCDEC_OK;
}

static int count_layers(const whisper_model *m, const char *side) {
    char nm[128];
    int n = 0;
    for (;;) {
        snprintf(nm, sizeof nm, "%s/layer_%d/self_attention/linear_0/weight", side, n);
        if (!wtab_get(m->wt, nm) || n >= 256) return n;
        n++;
    }
}

encdec_status whisper_cfg_ct2(whisper_model *m, const char *dir) {
    whisper_hparams *h = &m->hp;
    encdec_status st = ct2_dim(m, "encoder/conv1/weight", 3, 0, &h->d);
    if (!st) st = ct2_dim(m, "encoder/conv1/weight", 3, 1, &h->n_mels);
    if (!st) st = ct2_dim(m, "encoder/position_encodings/encodings", 2, 0, &h->n_audio_ctx);
    if (!st) st = ct2_dim(m, "decoder/position_encodings/encodings", 2, 0, &h->n_text_ctx);
    if (!st) st = ct2_dim(m, "decoder/embeddings/weight", 2, 0, &h->n_vocab);
    if (!st) st = ct2_dim(m, "encoder/layer_0/ffn/linear_0/weight", 2, 0, &h->ffn);
    if (st) return st;
    h->n_enc_layer = count_layers(m, "encoder");
    h->n_dec_layer = count_layers(m, "decoder");
    if (h->n_dec_layer < 1)
        return ed_fail(ENCDEC_ERR_SHAPE, "model.bin: no decoder layers (decoder/layer_0/...)");
    long he = 0, hd = 0;
    if (!scalar_int(wtab_get(m->wt, "encoder/num_heads"), &he) ||
        !scalar_int(wtab_get(m->wt, "decoder/num_heads"), &hd) || he < 1 || he > 256 || he != hd)
        return ed_fail(ENCDEC_ERR_CONFIG, "model.bin: encoder/num_heads and decoder/num_heads "
                       "must be equal integer scalars in 1..256");
    h->n_head = (int)he;
    st = whisper_cfg_check(h, "model.bin");
    if (st) return st;
    m->multilingual = h->n_vocab >= 51865;

    char path[4096];
    if (!ed_is_file(ed_path_join(path, sizeof path, dir, "config.json"))) return ENCDEC_OK;
    cJSON *c;
    st = ed_json_load(path, &c);
    if (st) return st;
    st = read_rules(m, c, path, "suppress_ids", "suppress_ids_begin");
    if (!st) st = read_align_heads(m, c, path);
    cJSON_Delete(c);
    return st;
}

/* HF generation_config.json may name the ids explicitly; they win over the
 * tokenizer's spellings (they are what transformers uses). */
static encdec_status generation_ids(whisper_model *m, const char *dir) {
    char path[4096];
    if (!ed_is_file(ed_path_join(path, sizeof path, dir, "generation_config.json")))
        return ENCDEC_OK;
    cJSON *c;
    encdec_status st = ed_json_load(path, &c);
    if (st) return st;
    struct { const char *key; int *dst; } f[] = {
        {"decoder_start_token_id", &m->sp.sot},
        {"eos_token_id", &m->sp.eot},
        {"no_timestamps_token_id", &m->sp.no_timestamps},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0] && !st; i++)
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(c, f[i].key)))
            st = ed_json_int(c, f[i].key, path, 0, m->hp.n_vocab - 1, f[i].dst);
    cJSON_Delete(c);
    return st;
}

encdec_status whisper_cfg_tokens(whisper_model *m, const char *dir, int hf) {
    int nv = bpe_n_vocab(m->tok);
    if (nv != m->hp.n_vocab)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: the tokenizer has %d tokens but the model's "
                       "vocabulary has %d", dir, nv, m->hp.n_vocab);
    whisper_special *s = &m->sp;
    s->eot = bpe_token_id(m->tok, "<|endoftext|>");
    s->sot = bpe_token_id(m->tok, "<|startoftranscript|>");
    s->translate = bpe_token_id(m->tok, "<|translate|>");
    s->transcribe = bpe_token_id(m->tok, "<|transcribe|>");
    s->sot_lm = bpe_token_id(m->tok, "<|startoflm|>");
    s->sot_prev = bpe_token_id(m->tok, "<|startofprev|>");
    s->no_speech = bpe_token_id(m->tok, "<|nospeech|>");
    if (s->no_speech < 0) s->no_speech = bpe_token_id(m->tok, "<|nocaptions|>");
    s->no_timestamps = bpe_token_id(m->tok, "<|notimestamps|>");
    s->timestamp_begin = bpe_token_id(m->tok, "<|0.00|>");
    s->lang_first = bpe_token_id(m->tok, "<|en|>");
    s->n_langs = 0;
    if (s->lang_first >= 0 && s->translate > s->lang_first)
        s->n_langs = s->translate - s->lang_first;
    if (hf) {
        encdec_status st = generation_ids(m, dir);
        if (st) return st;
    }
    if (s->eot < 0 || s->sot < 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: the tokenizer lacks <|endoftext|> or "
                       "<|startoftranscript|>", dir);
    if (m->multilingual && (s->n_langs < 1 || s->transcribe < 0))
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: a multilingual model needs language and task "
                       "tokens (<|en|> ... <|translate|>, <|transcribe|>)", dir);
    return ENCDEC_OK;
}

/* openai-whisper's non-speech symbols (tokenizer.non_speech_tokens): each
 * alone and after a space, where it is one token; the music notes' first
 * token always. */
static const char *const SYMBOLS[] = {
    "\"", "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@", "[", "\\", "]", "^", "_",
    "`", "{", "|", "}", "~", "\u300c", "\u300d", "\u300e", "\u300f", "<<", ">>", "<<<", ">>>",
    "--", "---", "-(", "-[", "('", "(\"", "((", "))", "(((", ")))", "[[", "]]", "{{", "}}",
    "\u266a\u266a", "\u266a\u266a\u266a"};
static const char *const NOTES[] = {"\u2669", "\u266a", "\u266b", "\u266c", "\u266d",
                                    "\u266e", "\u266f"};

static int cmp_int(const void *a, const void *b) {
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

encdec_status whisper_cfg_rules_default(whisper_model *m) {
    if (m->suppress && m->begin_suppress) return ENCDEC_OK;
    int cap = 2 * (int)(sizeof SYMBOLS / sizeof SYMBOLS[0] + sizeof NOTES / sizeof NOTES[0]) + 2;
    int *out = malloc(sizeof(int) * (size_t)cap), n = 0, ids[16], k;
    if (!out) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: suppressed tokens");
    char buf[32];
    const char *const lead[] = {" -", " '"};
    for (int i = 0; i < 2; i++)
        if (!bpe_encode(m->tok, lead[i], ids, 16, &k) && k >= 1) out[n++] = ids[0];
    int n_sym = (int)(sizeof SYMBOLS / sizeof SYMBOLS[0]), n_notes = (int)(sizeof NOTES / sizeof NOTES[0]);
    for (int i = 0; i < n_sym + n_notes; i++) {
        const char *s = i < n_sym ? SYMBOLS[i] : NOTES[i - n_sym];
        for (int sp = 0; sp < 2; sp++) {
            snprintf(buf, sizeof buf, "%s%s", sp ? " " : "", s);
            if (bpe_encode(m->tok, buf, ids, 16, &k) || k < 1) continue;
            if (k == 1 || i >= n_sym) out[n++] = ids[0];
        }
    }
    qsort(out, (size_t)n, sizeof *out, cmp_int);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (!u || out[i] != out[u - 1]) out[u++] = out[i];
    if (!m->suppress) {
        m->suppress = out;
        m->n_suppress = u;
    } else {
        free(out);
    }
    if (!m->begin_suppress) {
        int *b = malloc(sizeof(int) * 2);
        if (!b) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: suppressed tokens");
        int nb = 0;
        if (!bpe_encode(m->tok, " ", ids, 16, &k) && k == 1) b[nb++] = ids[0];
        b[nb++] = m->sp.eot;
        m->begin_suppress = b;
        m->n_begin_suppress = nb;
    }
    return ENCDEC_OK;
}
