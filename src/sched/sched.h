/* sched.h - the engine's scheduler: many requests (Whisper transcriptions,
 * or T5-family generations) share one decoder state, and every decode step
 * of all of them is one pass. The family is reached only through
 * sched/family.h.
 *
 *   sch_engine *e;  sch_new(&e, model, &params);          one thread, one pool, one state
 *   per request, on its own thread:
 *     sch_client *c;  sch_client_new(e, &c);               waits for a free place
 *     asr_env env = { model, sch_client_runner(c), mel, sch_client_exec(c) };
 *     asr_transcribe_feed(&env, ...);                      the long-form loop as ever
 *     sch_client_free(c);                                  its caches go back
 *   sch_free(e);
 *
 * The scheduler thread owns the pool, the Whisper state (the self cache of
 * every place's sequences, decoder scratch, encoder scratch) and the index
 * table; a request owns a place: a range of sequences (a runner view, see
 * decode/runner.h rn_init_view) and a cross cache of its own, allocated when
 * it is admitted and freed when it leaves. A request's thread runs the
 * long-form loop (windows, prompts, fallback, words) and hands every pass
 * to the scheduler through its executor (asr.h asr_exec), waiting for it:
 *
 * - encode: the encoder over the window, then the place's cross cache;
 * - a pass (a prompt, an alignment pass): the rows the view built;
 * - a task (a step-able strategy, decode/task.h): joins the running set.
 *
 * Each turn of the scheduler runs every queued pass (in the order they
 * came), one encoder pass (when the steps since the last one have taken as
 * long as it did, or nothing is decoding) over the first queued encode and,
 * where the family packs inputs (T5 where its products are row-invariant:
 * family.h), the ones queued behind it, then ONE decoder pass
 * over the next step of every running task of every request (rows grouped
 * by request, each group reading its own cross cache), then each task's
 * choice; finished tasks wake their requests. So a new request's encoder
 * runs between two steps of the others, decoding and encoding share the
 * time under load, and a short request is not queued behind a long one.
 *
 * A request's output does not depend on what else runs: the state's
 * products are batch-invariant (op_matmul_w_inv; a packed encoder's
 * op_matmul_w_rows), attention is per request, and choices see only their
 * own rows (test_engine and test_engine_t5 check it token for token).
 */
#ifndef ED_SCHED_H
#define ED_SCHED_H

#include "asr/asr.h"
#include "models/s2s.h"
#include "models/whisper.h"

#include <stdatomic.h>

typedef struct sch_engine sch_engine;
typedef struct sch_client sch_client;

typedef struct {
    const whisper_model *whisper;   /* the family: one of the two */
    const s2s_model *text;          /* a text-to-text model (T5, the BART family) */
    int n_ctx;           /* text: decoder positions per sequence (max new tokens + 1) */
    int n_threads;       /* the pool's, 1..ED_POOL_MAX_THREADS */
    int isa;             /* kernel-set limit (base/isa.h) */
    kv_dtype cross_type; /* the cross caches' element type */
    int max_clients;     /* requests admitted at once, 1..256 */
    int slots;           /* sequences per request: max(beam, best_of) + 1 at most */
    void *dev;           /* the passes' device (core/dev.h; NULL: the CPU), borrowed */
} sch_params;

typedef struct {
    long long steps;     /* merged decoder passes */
    long long rows;      /* rows in them (sequences stepped) */
    long long passes;    /* prompt and alignment passes */
    long long encodes;
    int clients;         /* admitted now */
    int waiting;         /* waiting for a place */
    int tasks;           /* stepping now */
    int last_rows;       /* sequences in the last step */
    long long hist[9];   /* steps of <= 1, 2, 4, ... 128 sequences, and more */
} sch_stats;

encdec_status sch_new(sch_engine **out, const sch_params *p);
/* Stops the thread; every client must be freed first. */
void sch_free(sch_engine *e);
void sch_get_stats(sch_engine *e, sch_stats *out);

/* A place for one request: waits until one is free. cancel (may be NULL):
 * the request's flag; once set, waiting and every operation end with
 * ENCDEC_ERR_CANCELLED (a running task at the next step). Fails otherwise
 * only for lack of memory (its cross cache). */
encdec_status sch_client_new(sch_engine *e, const atomic_int *cancel, sch_client **out);
/* After setting a cancel flag: wakes the waiting requests to see it. */
void sch_wake_waiting(sch_engine *e);
void sch_client_free(sch_client *c);
dec_runner *sch_client_runner(sch_client *c);
/* The request's operations, for callers without the asr executor (text
 * models): the encoder over its input into its place's cross caches
 * (Whisper: the window's mel; text: an sch_text_input), and a task stepped to its end with
 * everyone else's. */
encdec_status sch_client_encode(sch_client *c, const void *input);
encdec_status sch_client_run(sch_client *c, dec_task *t);

/* sch_client_run, telling fn after every step of the task, on this
 * thread (never the scheduler's): fn(ctx, l) with l[0, n) a copy of len
 * (the task's output lengths) as the step left it; a step the request's
 * thread was too busy to see is told with the next (fn sees the lengths
 * grow by more than one). fn nonzero: the task stops at its next step and
 * this returns ENCDEC_ERR_CANCELLED. */
encdec_status sch_client_run_watch(sch_client *c, dec_task *t, int (*fn)(void *ctx, const int *len),
                                   void *ctx, const int *len, int n);

typedef struct {
    const int *ids;      /* one input's tokens, </s> included */
    int n;
} sch_text_input;
const asr_exec *sch_client_exec(sch_client *c);
int sch_client_slots(const sch_client *c);

#endif
