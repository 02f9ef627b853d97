/* lt_run.h - texts translated as LibreTranslate's engine translates them
 * (Argos Translate over CTranslate2): each text (a unit) cut into its
 * sentences (lt_split.h), one engine request a sentence (sharing the
 * decode steps with everything else the server runs), the sentences'
 * translations joined again. ep_lt.c (/translate) and ep_lt_file.c
 * (/translate_file) run their units through it. */
#ifndef SRV_LT_RUN_H
#define SRV_LT_RUN_H

#include "http.h"
#include "lt.h"
#include "lt_split.h"

typedef struct {
    srv_sentences *ss;          /* [n_unit] each unit's sentences */
    int n_unit;
    encdec_request **q;         /* [n_req]: one a sentence, in the units' order */
    int n_req;
} srv_lt_run;

/* Argos Translate's search for r (its languages; 1 + r->alternatives
 * translations a sentence). */
void srv_lt_params(srv *s, const srv_lt_req *r, encdec_generate_params *p);
/* Submits units[n_units] (at most max_sentences sentences in all): 0, or an
 * HTTP status with msg set. u must be freed either way. */
int srv_lt_run_start(srv *s, srv_lt_run *u, const char *const *units, int n_units, int max_sentences,
                     const encdec_generate_params *p, char *msg, size_t n);
/* 1 when every request is done (srv_park's test; ctx is the run). */
int srv_lt_run_done(void *ctx, double now);
/* The units' translations, per a unit (the engine's 1 + alternatives):
 * out[u * per + k] (malloc'd, the caller frees them): 0, or an HTTP status
 * with msg set. */
int srv_lt_run_collect(srv *s, srv_lt_run *u, int per, char **out, char *msg, size_t n);
void srv_lt_run_free(srv_lt_run *u);

/* The text language identifier, loaded once at the first call; NULL with
 * *status and msg set when none is installed (400) or it cannot be loaded
 * (500). */
const encdec_langid *srv_lt_langid(srv *s, int *status, char *msg, size_t n);
/* A source "auto": the language the identifier finds in r's texts
 * (LibreTranslate's pt/pb and zh/zt stand in for each other), into r->src
 * and r->detected. 0, or an HTTP status with msg set. */
int srv_lt_detect_source(srv *s, srv_lt_req *r, char *msg, size_t n);

#endif
