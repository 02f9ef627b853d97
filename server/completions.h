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
    const char *stop[4];            /* OpenAI's stop sequences: a choice's text ends before the
                                       first place one of them begins */
    int n_stop;
    encdec_generate_params p;       /* max_tokens, temperature (0: greedy), top_p, n, seed;
                                       best_of > 1: beam search with that many beams */
} srv_completion;

/* A choice as its tokens come (on_token): its text so far, cut where a stop
 * sequence began (ep_text.c keeps one per choice). */
typedef struct {
    char *text;                     /* malloc'd, NUL-terminated */
    size_t len, sent;               /* its bytes; those streamed */
    int stopped;                    /* a stop sequence cut it: it is final */
    int n_tok;                      /* its tokens */
} srv_choice;

/* 1, or 0 with OpenAI's error in *e (c must be freed either way). */
int srv_completion_parse(const char *body, size_t len, srv_completion *c, srv_error *e);
void srv_completion_free(srv_completion *c);
/* A completion's id, "cmpl-" and hex digits, into id[n]. */
void srv_completion_id(char *id, size_t n);
/* Where in text[0, n) the first of c's stop sequences begins (n: none). */
size_t srv_stop_find(const srv_completion *c, const char *text, size_t n);
/* The bytes of text[0, n) that no stop sequence can begin in whatever
 * follows: n less the longest end of it that begins one. */
size_t srv_stop_safe(const srv_completion *c, const char *text, size_t n);
/* Appends a token's text to a choice and cuts it at a stop sequence:
 * 1, or 0 out of memory. */
int srv_choice_add(const srv_completion *c, srv_choice *ch, const char *text);

/* The response: choices by prompt then n; usage counts tokens. ch (NULL:
 * none) the choices as their tokens came, [n_prompts x n]: their texts
 * instead of the results' (res[i] may then be NULL, the prompt's request
 * ended by the stop sequences); the results' texts are cut at the stop
 * sequences either way. */
char *srv_completion_body(const srv_completion *c, encdec_result *const *res, const char *model,
                          const int *prompt_tokens, const srv_choice *ch);
/* One SSE event ("data: {...}\n\n"): a chunk of choice `index` adding
 * text, with its finish_reason (NULL: the choice goes on). */
char *srv_completion_event(const char *id, const char *model, int index, const char *text,
                           const char *finish_reason);
/* The last events of prompt's choices, one per choice with its
 * finish_reason: with its whole text (whole: beam search, which streams
 * choices only once they are final), or what of it is still held back
 * after the choice's tokens went out one by one (ch: the prompt's choices;
 * one a stop sequence ended has had its last event: none). r may be NULL
 * when every choice stopped. */
char *srv_completion_chunk(const srv_completion *c, const encdec_result *r, int prompt,
                           const char *id, const char *model, int whole, srv_choice *ch);

#endif
