/* fuzz_completion.c - OpenAI's completions body (server/completions.c): any
 * bytes as the JSON of POST /v1/completions; an accepted one's stop
 * sequences then cut choices made of the bytes' own pieces as tokens
 * (srv_choice_add), streamed as the server streams them (srv_stop_safe),
 * and the response bodies built from them. Checks what the stop sequences
 * promise: a choice's text never holds one, and what streaming holds back
 * of it is the beginning of one. Must
 * accept or refuse, never crash or leak. */
#include "fuzz_common.h"
#include "../../server/completions.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    srv_completion c;
    srv_error e;
    if (srv_completion_parse((const char *)data, size, &c, &e)) {
        int n = c.n_prompts * c.p.num_return_sequences;
        srv_choice *ch = calloc((size_t)n, sizeof *ch);
        /* the body's bytes as token texts, a few bytes at a time, round the choices */
        char piece[8];
        for (size_t i = 0, k = 0; ch && i < size; k++) {
            size_t m = 1 + data[i] % 7;
            m = m < size - i ? m : size - i;
            memcpy(piece, data + i, m);
            piece[m] = 0;
            i += m;
            srv_choice *x = &ch[k % (size_t)n];
            if (!srv_choice_add(&c, x, piece)) abort();
            if (x->text && srv_stop_find(&c, x->text, x->len) != x->len) abort();   /* it was cut */
            size_t safe = srv_stop_safe(&c, x->text ? x->text : "", x->len);
            if (safe > x->len) abort();
            int begins = safe == x->len;   /* what it holds back begins a stop sequence */
            for (int q = 0; q < c.n_stop && !begins; q++)
                begins = x->len - safe < strlen(c.stop[q]) && !memcmp(x->text + safe, c.stop[q], x->len - safe);
            if (!begins) abort();
            if (!x->stopped && safe > x->sent) x->sent = safe;   /* as ep_text.c streams */
        }
        int prompt_tokens[64] = {0};
        encdec_result *res[64] = {0};
        free(srv_completion_body(&c, res, "m", prompt_tokens, ch));
        for (int p = 0; ch && p < c.n_prompts; p++)
            free(srv_completion_chunk(&c, NULL, p, "id", "m", 0, ch + p * c.p.num_return_sequences));
        for (int k = 0; ch && k < n; k++) free(ch[k].text);
        free(ch);
    }
    srv_completion_free(&c);
    return 0;
}
