/* params.c - the transcription parameters' defaults and what they need of
 * a state (asr.h); used by the long-form loop, the window and the API. */
#include "asr/asr.h"

#include <math.h>
#include <string.h>

void asr_params_default(asr_params *p) {
    memset(p, 0, sizeof *p);
    p->kv_mode = ENCDEC_KV_FULL;
    p->language = -1;
    p->timestamps = 1;
    p->patience = 1.0f;
    p->length_penalty = -1.0f;
    p->best_of = 5;
    static const float T[] = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
    for (int i = 0; i < 6; i++) p->temperatures[i] = T[i];
    p->n_temperatures = 6;
    p->compression_ratio_threshold = 2.4f;
    p->logprob_threshold = -1.0f;
    p->no_speech_threshold = 0.6f;
    p->condition_on_previous_text = 1;
    p->prepend_punctuations = "\"'\xe2\x80\x9c\xc2\xbf([{-";
    p->append_punctuations = "\"'.\xe3\x80\x82,\xef\xbc\x8c!\xef\xbc\x81?\xef\xbc\x9f:\xef\xbc\x9a\xe2\x80\x9d)]}\xe3\x80\x81";
    p->loop_detect = 1;
    p->keep_last = 0;
    p->repetition_penalty = 1.0f;
    p->hallucination_silence = NAN;
    p->window_frames = 3000;
    p->lang_segments = 1;
    p->lang_threshold = 0.5f;
}

int asr_slots_needed(const asr_params *p) {
    int n = 1;
    if (p->beam_size > n) n = p->beam_size;
    for (int i = 0; i < p->n_temperatures; i++)
        if (p->temperatures[i] > 0 && p->best_of > n) n = p->best_of;
    return n + 1;
}
