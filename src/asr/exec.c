/* exec.c - the session's executor (asr.h asr_local): every pass of a
 * transcription on the calling thread, over a state of its own. */
#include "asr/asr.h"

#include <string.h>

static encdec_status local_encode(void *ctx, const float *mel) {
    whisper_encode(((asr_local *)ctx)->st, mel);
    return whisper_state_status(((asr_local *)ctx)->st);   /* a device's failure, named */
}

static encdec_status local_run(void *ctx, dec_task *t) {
    dec_model dm = rn_seam(((asr_local *)ctx)->rn);
    encdec_status st = dec_task_run(t, &dm);
    encdec_status dv = whisper_state_status(((asr_local *)ctx)->st);
    return dv ? dv : st;   /* a device's failure ended every row: it is the error */
}

static encdec_status local_feed_scores(void *ctx, const int *tokens, int n, float *logits,
                                       float *scores) {
    asr_local *l = ctx;
    const whisper_model *m = l->st->m;
    size_t T = (size_t)m->hp.n_audio_ctx;
    encdec_status st = whisper_align_capture(l->st, 1);
    if (!st) st = rn_feed_logits(l->rn, 0, tokens, n, 0, logits);
    for (int h = 0; !st && h < m->n_align_heads; h++)
        memcpy(scores + (size_t)h * n * T, whisper_align_scores(l->st, h), sizeof(float) * n * T);
    encdec_status st2 = whisper_align_capture(l->st, 0);
    encdec_status dv = whisper_state_status(l->st);
    return dv ? dv : st ? st : st2;
}

void asr_local_init(asr_local *l, whisper_state *st, dec_runner *rn) {
    l->st = st;
    l->rn = rn;
    l->x = (asr_exec){l, local_encode, local_run, local_feed_scores};
}
