/* whisper_cfg.h - Whisper hyper-parameters, decoding rules and special tokens
 * from the files beside the weights (internal to the whisper model).
 *
 *   whisper_cfg_hf(m, dir)    config.json (+ generation_config.json)
 *   whisper_cfg_ct2(m, dir)   tensor shapes + num_heads, config.json suppress lists
 *   whisper_cfg_ggml(m, g, file)  a ggml file's hyper-parameters and tokenizer
 *                             (whisper_ggml.c)
 *   whisper_cfg_tokens(m, dir, hf)   special ids from the tokenizer, checks
 *   whisper_cfg_rules_default(m)     openai-whisper's suppressed tokens where the
 *                             files list none
 *   whisper_cfg_align_default(m)     alignment heads where the files have none
 *
 * Each fills fields of m and fails with ENCDEC_ERR_CONFIG naming the file
 * and the key.
 */
#ifndef ED_WHISPER_CFG_H
#define ED_WHISPER_CFG_H

#include "models/whisper.h"

encdec_status whisper_cfg_hf(whisper_model *m, const char *dir);
encdec_status whisper_cfg_ct2(whisper_model *m, const char *dir);
encdec_status whisper_cfg_ggml(whisper_model *m, const ggml_whisper *g, const char *file);
encdec_status whisper_cfg_tokens(whisper_model *m, const char *dir, int hf);
/* The limits every source's hyper-parameters must meet (mel bands, a 30 s
 * window's 1500 positions, heads dividing the width, decoder positions). */
encdec_status whisper_cfg_check(const whisper_hparams *h, const char *file);
/* When no file gave them: the suppressed tokens openai-whisper derives from
 * the tokenizer (the symbols and music notes that stand for no speech,
 * " -" and " '") and, at the first step, " " and <|endoftext|>. */
encdec_status whisper_cfg_rules_default(whisper_model *m);
/* Where the files name no alignment heads: OpenAI's heads for a model of
 * one of its released shapes (tiny ... large-v3-turbo), else every head of
 * the upper half of the decoder layers (CTranslate2's default). */
encdec_status whisper_cfg_align_default(whisper_model *m);

#endif
