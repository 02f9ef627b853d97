/* isa.c - the per-thread instruction-set limit (see isa.h). */
#include "base/isa.h"

static _Thread_local int tls_limit = ED_ISA_ANY;

int ed_isa_limit(void) { return tls_limit; }

int ed_isa_swap(int lim) {
    int old = tls_limit;
    tls_limit = lim;
    return old;
}
