/* completions.h - OpenAI's completions request for T5-family models: the
 * JSON body checked into generation parameters, and the response bodies.
 * No I/O: http.c runs the requests. */
#ifndef SRV_COMPLETIONS_H
#define SRV_COMPLETIONS_H

#include "encdec.h"
#include "form.h"

typedef struct {
    void *json;                     /* the parsed body (owns the strings) */
    const char *model;
    const char *prompts[64];
    int n_prompts;
    int stream;
    encdec_generate_params p;       /* max_tokens, temperature (0: greedy), top_p, n, seed;
                                       best_of > 1: beam search with that many beams */
} srv_completion;

/* 1, or 0 with OpenAI's error in *e (c must be freed either way). */
int srv_completion_parse(const char *body, size_t len, srv_completion *c, srv_error *e);
void srv_completion_free(srv_completion *c);
/* A completion's id, "cmpl-" and hex digits, into id[n]. */
void srv_completion_id(char *id, size_t n);
/* The response: choices by prompt then n; usage counts tokens. */
char *srv_completion_body(const srv_completion *c, encdec_result *const *res, const char *model,
                          const int *prompt_tokens);
/* One SSE event ("data: {...}\n\n"): a chunk of choice `index` adding
 * text, with its finish_reason (NULL: the choice goes on). */
char *srv_completion_event(const char *id, const char *model, int index, const char *text,
                           const char *finish_reason);
/* The last events of prompt's choices, one per choice with its
 * finish_reason: with its whole text (whole: beam search, which streams
 * choices only once they are final), or empty after the choice's tokens
 * went out one by one (srv_completion_event). */
char *srv_completion_chunk(const srv_completion *c, const encdec_result *r, int prompt,
                           const char *id, const char *model, int whole);

#endif
