/* emu.h - inside the CUDA backend's CPU emulation (cmake -DENCDEC_CUDA_EMU=ON,
 * a test build only; never a user's): cuda/cuda.h implemented on the host,
 * so that the device seam above it (core/ops_dev.c, each model's upload and
 * state, the engine's device handle, every test run with
 * ENCDEC_DEVICE=cuda) runs and is checked on a machine without a GPU.
 *
 * What it checks that the CPU build cannot:
 *   - device memory is not host memory: cu_alloc's pages are mapped with no
 *     access, open only while an emulated kernel or copy runs, so a host
 *     read or write of a device buffer (a forgotten download, a table built
 *     in place, a weight read on the host) stops the program naming the
 *     buffer. With protection keys (x86 PKU) the pages carry one key whose
 *     access the calling thread switches at a call's ends and the device
 *     pool's workers hold; without (or ENCDEC_EMU_GUARD=pages), a fault
 *     inside a call opens the 2 MiB around it and all are shut at its end;
 *   - host memory is not device memory: every pointer a kernel takes must
 *     lie inside one device allocation, with the extent its shape implies,
 *     else the call fails (sticky, as a CUDA launch error) naming it;
 *   - a kernel running past its buffer's end meets a guard page.
 * What it does not: speed, the kernels' CUDA code (tests/cuda/test_cuda.c
 * on a GPU), asynchrony (each call runs to its end before it returns).
 *
 * The kernels are the CPU's ops on a pool of the emulated device's own
 * (core/ops.h: the twins cuda.h names), one call at a time process-wide. */
#ifndef ED_CUDA_EMU_H
#define ED_CUDA_EMU_H

#include "base/pool.h"
#include "cuda/cuda.h"

#include <stddef.h>

struct cu_dev {
    int index;
    ed_pool *pool;
    char err[256];   /* the first failure since the last check ("" none) */
    char *stage;     /* cu_stage's ring: device memory */
    size_t stage_off;
    float *scratch;  /* the ops' host scratch, grown on demand */
    size_t scratch_n;
};

/* A kernel's span: one at a time process-wide, the device's pages open to
 * this thread (and the pool's) inside it and shut at its end. */
void emu_enter(void);
void emu_leave(void);
/* 1 when [p, p + bytes) lies inside one device allocation; else records
 * "<what>: not device memory" on g and returns 0. NULL p with 0 bytes: 1. */
int emu_dev_ptr(cu_dev *g, const void *p, size_t bytes, const char *what);
/* 1 when p is inside no device allocation. */
int emu_host_ptr(const void *p);
/* Floats of host scratch for the ops (grown; NULL after a failure). */
float *emu_scratch(cu_dev *g, size_t n);

#endif
