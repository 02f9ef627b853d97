/* whisper_ggml.c - a Whisper model from a whisper.cpp ggml file: the
 * hyper-parameters it states, the tokenizer from its token list, and the
 * decoding rules openai-whisper derives from the tokenizer (ggml files
 * carry no configuration beside the weights).
 *
 * Special tokens: the file lists the regular tokens only (ids 0 .. n-1; a
 * converter may add <|endoftext|> as the last); the rest follow as in every
 * Whisper vocabulary: <|endoftext|>, <|startoftranscript|>, one token per
 * language (99, or 100 from large-v3 on: their count is what the vocabulary
 * size leaves), <|translate|>, <|transcribe|>, <|startoflm|>,
 * <|startofprev|>, <|nospeech|>, <|notimestamps|>, then 1501 timestamps
 * <|0.00|> ... <|30.00|>.
 */
#include "models/whisper_cfg.h"
#include "base/err.h"
#include "tok/bpe.h"
#include "tok/lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_TIMESTAMPS 1501
#define N_TASK_SPECIALS 6   /* translate, transcribe, startoflm, startofprev, nospeech, notimestamps */

static encdec_status hparams(whisper_model *m, const ggml_whisper *g, const char *file) {
    whisper_hparams *h = &m->hp;
    if (g->n_text_state != g->n_audio_state || g->n_text_head != g->n_audio_head)
        return ed_fail(ENCDEC_ERR_CONFIG, "%s: the encoder and decoder differ in width or heads "
                       "(%d/%d, %d/%d); not a Whisper layout", file, g->n_audio_state,
                       g->n_text_state, g->n_audio_head, g->n_text_head);
    h->d = g->n_audio_state;
    h->n_head = g->n_audio_head;
    h->n_enc_layer = g->n_audio_layer;
    h->n_dec_layer = g->n_text_layer;
    h->n_mels = g->n_mels;
    h->n_audio_ctx = g->n_audio_ctx;
    h->n_text_ctx = g->n_text_ctx;
    h->n_vocab = g->n_vocab;
    const ed_tensor *fc1 = wtab_get(m->wt, "model.encoder.layers.0.fc1.weight");
    if (!fc1 || fc1->ndim != 2 || fc1->shape[0] < 1 || fc1->shape[0] > 65536)
        return ed_fail(ENCDEC_ERR_SHAPE, "%s: tensor encoder.blocks.0.mlp.0.weight is missing or "
                       "not a matrix", file);
    h->ffn = (int)fc1->shape[0];
    m->multilingual = h->n_vocab >= 51865;
    return whisper_cfg_check(h, file);
}

static encdec_status tokens(whisper_model *m, const ggml_whisper *g, const char *file) {
    int n = g->n_tokens;
    if (n > 0 && g->tok_len[n - 1] == 13 && !memcmp(g->tok[n - 1], "<|endoftext|>", 13)) n--;
    int n_langs = g->n_vocab - n - 2 - N_TASK_SPECIALS - N_TIMESTAMPS;
    if (n_langs < 0 || n_langs > wlang_count())
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: %d tokens listed for a vocabulary of %d: not "
                       "Whisper's layout (the rest must be 2 + 0..%d languages + %d + %d "
                       "timestamps)", file, g->n_tokens, g->n_vocab, wlang_count(),
                       N_TASK_SPECIALS, N_TIMESTAMPS);
    int ns = 2 + n_langs + N_TASK_SPECIALS;
    char (*sp)[16] = calloc((size_t)ns, sizeof *sp);
    const char **names = calloc((size_t)ns, sizeof *names);
    if (!sp || !names) {
        free(sp);
        free(names);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: special tokens");
    }
    static const char *const TASK[N_TASK_SPECIALS] = {"<|translate|>", "<|transcribe|>",
        "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"};
    int k = 0;
    names[k++] = "<|endoftext|>";
    names[k++] = "<|startoftranscript|>";
    for (int i = 0; i < n_langs; i++, k++) {
        snprintf(sp[k], sizeof sp[k], "<|%s|>", wlang_code(i));
        names[k] = sp[k];
    }
    for (int i = 0; i < N_TASK_SPECIALS; i++) names[k++] = TASK[i];
    encdec_status st = bpe_load_bytes(&m->tok, g->tok, g->tok_len, n, names, ns, file);
    free(sp);
    free(names);
    return st;
}

encdec_status whisper_cfg_ggml(whisper_model *m, const ggml_whisper *g, const char *file) {
    encdec_status st = hparams(m, g, file);
    if (!st) st = tokens(m, g, file);
    return st;
}
