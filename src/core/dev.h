/* dev.h - where a session's work runs: the CPU (a NULL device, the
 * default) or an accelerator the build has a backend for (CUDA: cuda/).
 * Model and API code hold an ed_dev without knowing which backend is
 * behind it; the ops (core/ops.h) run on the device their pool carries
 * (ed_pool_set_device).
 *
 *   ed_dev *d;  ed_dev_open(ED_DEV_CUDA, 0, &d);     weights' and a session's handle
 *   float *x = ed_dev_alloc(d, bytes, "what");         device memory (NULL d: host)
 *   ed_dev_upload(d, x, host, bytes);  ...  ed_dev_free(d, x);  ed_dev_close(d);
 *
 * Each session (and the engine) opens its own handle: one stream, one
 * library handle and one workspace each, so that sessions on one model run
 * side by side; memory from any handle of one device serves them all.
 */
#ifndef ED_CORE_DEV_H
#define ED_CORE_DEV_H

#include "encdec.h"
#include "base/pool.h"
#include <stddef.h>

typedef struct ed_dev ed_dev;
typedef enum { ED_DEV_CPU = 0, ED_DEV_CUDA = 1 } ed_dev_kind;

/* ENCDEC_ERR_ARG for a kind this build lacks (the message says how to
 * build it) or an index the machine lacks; ENCDEC_ERR_DEVICE when the
 * driver refuses. ED_DEV_CPU gives *out NULL and ENCDEC_OK. */
encdec_status ed_dev_open(ed_dev_kind kind, int index, ed_dev **out);
void ed_dev_close(ed_dev *d);
/* "cpu", or the device in words ("NVIDIA H200, sm_90, 140 GiB"). */
const char *ed_dev_name(const ed_dev *d);
/* 1 when this build has a backend for kind. */
int ed_dev_built(ed_dev_kind kind);
/* Devices of kind on this machine (the CPU: 1; none without a backend). */
int ed_dev_count(ed_dev_kind kind);

/* Memory of d (NULL: the host, ed_alloc's, freed with free()). */
void *ed_dev_alloc(ed_dev *d, size_t bytes, const char *what);
/* a x b floats (NULL and a named error on overflow or when memory runs out). */
float *ed_dev_floats(ed_dev *d, size_t a, size_t b, const char *what);
void ed_dev_free(ed_dev *d, void *p);
/* Host memory that d's copies reach at the bus's rate (page-locked; NULL
 * d: ed_alloc's): where a step's logits come down. Freed with
 * ed_dev_host_free on the same d, before d is closed. */
void *ed_dev_host_alloc(ed_dev *d, size_t bytes, const char *what);
void ed_dev_host_free(ed_dev *d, void *p);
/* Host to device and back (plain copies for NULL d); waits. */
encdec_status ed_dev_upload(ed_dev *d, void *dst, const void *src, size_t bytes);
encdec_status ed_dev_download(ed_dev *d, void *dst, const void *src, size_t bytes);
/* d's memory to d's memory (host memory with a NULL d), queued after the
 * work before it. */
void ed_dev_copy(ed_dev *d, void *dst, const void *src, size_t bytes);
/* Waits for the work queued on d; the first failure since the last check,
 * named (ENCDEC_OK on the CPU). */
encdec_status ed_dev_sync(ed_dev *d);

/* The device of a pool's ops (NULL: the CPU). */
static inline ed_dev *ed_pool_dev(const ed_pool *p) { return (ed_dev *)ed_pool_device(p); }

#endif
