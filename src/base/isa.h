/* isa.h - the instruction-set limit of the calling thread: the kernels
 * (src/kern, k_isa) use no instruction set above it. A model's parameters
 * name the limit; its sessions' pools hand it to their workers for every
 * run, and the API's entry points set it on the calling thread for the
 * call's duration (ed_isa_swap ... ed_isa_swap back). Only an int: what the
 * levels mean is kern/isa.h's business.
 *
 *   int old = ed_isa_swap(lim);  ...work...  ed_isa_swap(old);
 */
#ifndef ED_BASE_ISA_H
#define ED_BASE_ISA_H

#define ED_ISA_ANY 1000   /* no limit (every thread's initial value) */

/* This thread's limit. */
int ed_isa_limit(void);
/* Sets this thread's limit; returns the previous one. */
int ed_isa_swap(int lim);

#endif
