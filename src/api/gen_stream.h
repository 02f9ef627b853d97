/* gen_stream.h - a generation delivered token by token
 * (encdec_generate_params.on_token): the text each new token adds to its
 * sequence, complete UTF-8 characters only.
 *
 *   gen_stream g;   gen_stream_init(&g, tok, eos, p, n_out, toks, lps);
 *   after every step, with each output's length so far (the task's out_len):
 *       if (gen_stream_flush(&g, len)) stop;     on_token for the tokens new since
 *   gen_stream_free(&g);
 *
 * A token's text is the difference between the decoded texts of its
 * sequence with and without it. The decoder turns the bytes of a character
 * still incomplete (byte-fallback pieces) into U+FFFD, which the next
 * token may complete: trailing U+FFFD are held back until the sequence
 * ends (</s> or max_new_tokens) or text follows them. A normal piece after
 * a normal piece, nothing held back, gets its text from the pair alone
 * (exact there: local_piece); the others decode the whole sequence again,
 * so a stream costs about what its tokens do, not its length squared.
 */
#ifndef ED_API_GEN_STREAM_H
#define ED_API_GEN_STREAM_H

#include "encdec.h"
#include "tok/text.h"

#include <stddef.h>

typedef struct {
    const ed_ttok *tok;
    encdec_token_fn fn;
    void *user;
    int eos, n_out, n_ret, max_new;
    const int *toks;      /* [n_out, max_new] the task's outputs */
    const float *lps;
    const int *ends;      /* [n_ends] the caller's end tokens (encdec_generate_params.end_tokens):
                             no text of theirs, as the sequence's text has none */
    int n_ends;
    int *done;            /* [n_out] tokens delivered */
    size_t *sent;         /* [n_out] text bytes delivered */
    char *whole;          /* [n_out] the text so far is all delivered (nothing held back) */
} gen_stream;

/* The decoded text of generated ids (a malloc'd string). Ids past the
 * tokenizer's pieces (a model's vocabulary padded past them, as flan-t5's
 * 32128 rows for 32100 pieces) add nothing, as in transformers' decode. */
encdec_status gen_text(const ed_ttok *tok, const int *ids, int n, char **text);

/* n_out = inputs x p->num_return_sequences outputs, output i in row i of
 * toks / lps (input i / n_ret, rank i % n_ret). */
encdec_status gen_stream_init(gen_stream *g, const ed_ttok *tok, int eos,
                              const encdec_generate_params *p, int n_out, const int *toks,
                              const float *lps);
/* Calls on_token for every token of output i in [done[i], len[i]); returns
 * nonzero when a call asked to stop (or the text could not be decoded). */
int gen_stream_flush(gen_stream *g, const int *len);
void gen_stream_free(gen_stream *g);

#endif
