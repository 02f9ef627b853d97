/* task.c - the loop every step-able strategy shares (task.h). */
#include "decode/task.h"
#include "base/err.h"

encdec_status dec_task_advance(dec_task *t) {
    if (!t || t->n <= 0) return ed_fail(ENCDEC_ERR_ARG, "decode: advance of a task that is done");
    encdec_status st = t->advance(t);
    if (st) t->n = 0;
    return st;
}

encdec_status dec_task_run(dec_task *t, const dec_model *m) {
    encdec_status st = t->n > 0 ? dec_task_advance(t) : ENCDEC_OK;   /* the prompt's logits */
    while (!st && t->n > 0) {
        st = m->step(m->ctx, t->n, t->seq, t->tok, t->logits);
        if (!st) st = dec_task_advance(t);
    }
    t->n = 0;
    return st;
}

void dec_task_free(dec_task *t) {
    if (t) t->destroy(t);
}
