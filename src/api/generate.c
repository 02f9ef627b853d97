/* generate.c - encdec_generate: text to text with a T5- or BART-family
 * model (models/s2s.h: the family behind a table of calls).
 *
 * A request: every input is tokenized (</s> appended), the inputs are packed
 * back to back and encoded in one pass, the cross cache of all of them is
 * filled once, and one strategy (greedy, beam search or sampling) decodes
 * all inputs together: one decoder pass per generated position for every
 * live sequence of every input. Session buffers grow to the largest request
 * seen and are reused.
 */
#include "api/api.h"
#include "api/gen_stream.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/isa.h"
#include "base/mem.h"
#include "decode/task.h"
#include "decode/runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GEN_MAX_NEW 4096
#define GEN_MAX_WIDTH 64
#define GEN_MAX_INPUTS 65536

encdec_generate_params encdec_generate_default_params(void) {
    encdec_generate_params p;
    memset(&p, 0, sizeof p);
    p.kv_mode = ENCDEC_KV_FULL;
    p.max_new_tokens = 128;
    p.num_beams = 1;
    p.length_penalty = 1.0f;
    p.num_return_sequences = 1;
    p.temperature = 1.0f;
    p.top_p = 1.0f;
    return p;
}

int api_beam_finish(const encdec_generate_params *p) {
    if (p->num_beams < 2) return 1;   /* greedy: the one hypothesis */
    return p->patience == 1 || p->patience == 0 ? p->num_beams : (int)lround((double)p->num_beams * p->patience);
}

int api_gen_width(const encdec_generate_params *p) {
    if (p->return_alternatives) return p->num_return_sequences * p->num_beams;
    return p->do_sample ? p->num_return_sequences : p->num_beams;
}

int api_gen_screens(const encdec_generate_params *p) {
    return !p->do_sample && p->num_beams == 1 && !p->return_alternatives && p->prefix_bias_beta == 0 &&
           !p->return_logits;
}

dec_beam_params api_beam_params(const encdec_generate_params *p) {
    int n_finish = api_beam_finish(p);
    dec_beam_params bp = {p->num_beams, p->length_penalty, p->early_stopping, p->num_return_sequences,
                          n_finish == p->num_beams ? 0 : n_finish, 0};
    /* CTranslate2 ends a search without a length penalty as soon as its
     * best candidate ended and the hypotheses asked for are there */
    bp.exit_top = p->ctranslate2_rules && p->early_stopping == 1 && p->length_penalty == 0 &&
                  p->coverage_penalty == 0;
    return bp;
}

encdec_status api_generate_check(encdec_generate_params *p) {
    if (p->kv_mode != ENCDEC_KV_FULL && p->kv_mode != ENCDEC_KV_SELF && p->kv_mode != ENCDEC_KV_NONE)
        return ed_fail(ENCDEC_ERR_ARG, "unknown cache mode %d", (int)p->kv_mode);
    if (p->max_new_tokens == 0) p->max_new_tokens = 128;
    if (p->max_new_tokens < 1 || p->max_new_tokens > GEN_MAX_NEW)
        return ed_fail(ENCDEC_ERR_ARG, "max_new_tokens %d is out of range 1..%d", p->max_new_tokens,
                       GEN_MAX_NEW);
    if (p->num_beams < 1 || p->num_beams > GEN_MAX_WIDTH)
        return ed_fail(ENCDEC_ERR_ARG, "num_beams %d is out of range 1..%d", p->num_beams, GEN_MAX_WIDTH);
    if (p->do_sample && p->num_beams > 1)
        return ed_fail(ENCDEC_ERR_ARG, "sampling with beams is not supported: use num_beams 1 "
                       "with sampling, or beam search without it");
    if (!(p->patience >= 0 && p->patience <= 64))
        return ed_fail(ENCDEC_ERR_ARG, "patience %g is out of range (0, 64] (0: 1)", (double)p->patience);
    if (p->patience == 0) p->patience = 1;
    if (p->patience != 1 && p->num_beams > 1 && p->early_stopping != 1)
        return ed_fail(ENCDEC_ERR_ARG, "patience %g: a beam search that ends on finished hypotheses "
                       "(early_stopping 1), not %d", (double)p->patience, p->early_stopping);
    int n_finish = api_beam_finish(p);
    if (n_finish < 1)
        return ed_fail(ENCDEC_ERR_ARG, "patience %g with %d beams ends a search with no hypothesis",
                       (double)p->patience, p->num_beams);
    if (p->return_alternatives != 0 && p->return_alternatives != 1)
        return ed_fail(ENCDEC_ERR_ARG, "return_alternatives %d is not 0 or 1", p->return_alternatives);
    if (p->return_alternatives && (p->do_sample || p->on_token || p->coverage_penalty != 0))
        return ed_fail(ENCDEC_ERR_ARG, "return_alternatives continues each alternative with a greedy or "
                       "beam search: not with %s", p->do_sample ? "sampling" : p->on_token ? "on_token"
                                                                              : "coverage_penalty");
    if (!(p->prefix_bias_beta >= 0 && p->prefix_bias_beta < 1))
        return ed_fail(ENCDEC_ERR_ARG, "prefix_bias_beta %g is not in [0, 1)", (double)p->prefix_bias_beta);
    if (p->prefix_bias_beta > 0 && (p->do_sample || p->return_alternatives || p->on_token))
        return ed_fail(ENCDEC_ERR_ARG, "prefix_bias_beta draws a beam search toward the prefix: not with %s",
                       p->do_sample ? "sampling" : p->return_alternatives ? "return_alternatives" : "on_token");
    if (!(p->min_alternative_prob >= 0 && p->min_alternative_prob <= 1))
        return ed_fail(ENCDEC_ERR_ARG, "min_alternative_prob %g is not in [0, 1]", (double)p->min_alternative_prob);
    if (p->return_alternatives && p->num_return_sequences * p->num_beams > GEN_MAX_WIDTH)
        return ed_fail(ENCDEC_ERR_ARG, "return_alternatives: %d alternatives x %d beams decode more than %d "
                       "sequences", p->num_return_sequences, p->num_beams, GEN_MAX_WIDTH);
    int most = p->do_sample || p->return_alternatives ? GEN_MAX_WIDTH
               : n_finish < GEN_MAX_WIDTH ? n_finish : GEN_MAX_WIDTH;
    if (p->num_return_sequences < 1 || p->num_return_sequences > most)
        return ed_fail(ENCDEC_ERR_ARG, "num_return_sequences %d is out of range 1..%d%s",
                       p->num_return_sequences, most,
                       !p->do_sample ? " (more sequences need more beams, patience, or sampling)" : "");
    if (p->truncate != 0 && p->truncate != 1)
        return ed_fail(ENCDEC_ERR_ARG, "truncate must be 0 or 1, not %d", p->truncate);
    if (!(p->repetition_penalty >= 0 && p->repetition_penalty <= 1e6))
        return ed_fail(ENCDEC_ERR_ARG, "repetition_penalty %g is not in 0..1e6 (0 or 1: off)",
                       (double)p->repetition_penalty);
    if (p->min_new_tokens < 0 || p->min_new_tokens > GEN_MAX_NEW)
        return ed_fail(ENCDEC_ERR_ARG, "min_new_tokens %d is out of range 0..%d", p->min_new_tokens, GEN_MAX_NEW);
    if (p->forced_eos != 0 && p->forced_eos != 1)
        return ed_fail(ENCDEC_ERR_ARG, "forced_eos %d is not 0 or 1", p->forced_eos);
    if (p->ctranslate2_rules != 0 && p->ctranslate2_rules != 1)
        return ed_fail(ENCDEC_ERR_ARG, "ctranslate2_rules %d is not 0 or 1", p->ctranslate2_rules);
    if (p->no_repeat_ngram_size < 0 || p->no_repeat_ngram_size > 1024)
        return ed_fail(ENCDEC_ERR_ARG, "no_repeat_ngram_size %d is out of range 0..1024", p->no_repeat_ngram_size);
    if (p->n_suppress_tokens < 0 || p->n_suppress_tokens > (1 << 20) || (p->n_suppress_tokens && !p->suppress_tokens))
        return ed_fail(ENCDEC_ERR_ARG, "suppress_tokens: %d tokens%s", p->n_suppress_tokens,
                       p->n_suppress_tokens > 0 ? " and no list" : "");
    if (p->n_end_tokens < 0 || p->n_end_tokens > 1024 || (p->n_end_tokens && !p->end_tokens))
        return ed_fail(ENCDEC_ERR_ARG, "end_tokens: %d tokens%s", p->n_end_tokens,
                       p->n_end_tokens > 0 ? " and no list" : " (0..1024)");
    if (!isfinite(p->coverage_penalty) || fabsf(p->coverage_penalty) > 1e6f)
        return ed_fail(ENCDEC_ERR_ARG, "coverage_penalty %g is not a finite number in -1e6..1e6",
                       (double)p->coverage_penalty);
    if (p->coverage_penalty != 0 && (p->num_beams < 2 || p->early_stopping != 1))
        return ed_fail(ENCDEC_ERR_ARG, "coverage_penalty ranks the finished hypotheses of a beam search "
                       "that ends on them: num_beams 2 or more and early_stopping 1 (a greedy or "
                       "sampled sequence has only its score to change)");
    if (p->return_logits != 0 && p->return_logits != 1)
        return ed_fail(ENCDEC_ERR_ARG, "return_logits %d is not 0 or 1", p->return_logits);
    if (p->return_logits && (p->num_beams > 1 || p->return_alternatives || p->prefix_bias_beta > 0))
        return ed_fail(ENCDEC_ERR_ARG, "return_logits: the logits of greedy or sampled sequences only, "
                       "not with %s", p->num_beams > 1 ? "beam search" : p->return_alternatives
                       ? "return_alternatives" : "prefix_bias_beta (a beam search)");
    if (p->return_attention < 0 || p->return_attention > 2)
        return ed_fail(ENCDEC_ERR_ARG, "return_attention %d is not 0, 1 or 2", p->return_attention);
    if (p->replace_unknowns != 0 && p->replace_unknowns != 1)
        return ed_fail(ENCDEC_ERR_ARG, "replace_unknowns %d is not 0 or 1", p->replace_unknowns);
    if (p->replace_unknowns && p->on_token)
        return ed_fail(ENCDEC_ERR_ARG, "replace_unknowns writes a sequence's <unk> when it is whole: "
                       "not with on_token");
    if (p->on_token && p->num_beams > 1)
        return ed_fail(ENCDEC_ERR_ARG, "on_token streams greedy or sampled tokens: beam search's "
                       "tokens are final only at the end (num_beams %d)", p->num_beams);
    if (p->num_beams > 1) {
        dec_beam_params bp = api_beam_params(p);
        if (p->return_alternatives) bp.n_return = 1;   /* each alternative's */
        return dec_beam_params_check(&bp);
    }
    if (p->do_sample) {
        dec_sample_params sp = {p->temperature, p->top_k, p->top_p, p->seed};
        return dec_sample_params_check(&sp);
    }
    return ENCDEC_OK;
}


encdec_status api_pack_ids(const s2s_model *m, const int *ids, int n, int truncate, api_packed *pk) {
    memset(pk, 0, sizeof *pk);
    if (!ids || n < 1) return ed_fail(ENCDEC_ERR_ARG, "the input has no tokens");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->n_src_vocab)
            return ed_fail(ENCDEC_ERR_ARG, "input token %d is id %d, not below the %svocabulary size %d",
                           i, ids[i], m->n_src_vocab != m->n_vocab ? "source " : "", m->n_src_vocab);
    if (n > m->n_positions && !truncate)
        return ed_fail(ENCDEC_ERR_ARG, "the input has %d tokens; the model accepts at most %d; shorten "
                       "it or allow truncation", n, m->n_positions);
    int k = n > m->n_positions ? m->n_positions : n;
    pk->ids = ed_alloc(sizeof(int) * (size_t)k, "input tokens");
    pk->start = ed_alloc(sizeof(int), "input table");
    pk->len = ed_alloc(sizeof(int), "input table");
    if (!pk->ids || !pk->start || !pk->len) return ENCDEC_ERR_NOMEM;
    memcpy(pk->ids, ids, sizeof(int) * (size_t)k);
    if (k < n) pk->ids[k - 1] = ids[n - 1];   /* the first tokens, and the last (</s>, a language) */
    pk->start[0] = 0;
    pk->len[0] = pk->n_tokens = pk->t_max = k;
    return ENCDEC_OK;
}

void api_packed_free(api_packed *pk) {
    free(pk->ids);
    free(pk->start);
    free(pk->len);
    for (int b = 0; pk->pieces && b < pk->n_in; b++) free(pk->pieces[b]);
    free(pk->pieces);
}

/* "unknown target language "xx"; this model's 202: ace_Arab, ..." */
static encdec_status unknown_lang(const ed_ttok *t, const char *which, const char *code) {
    char list[700];
    size_t k = 0;
    int n = ttok_n_langs(t), i = 0;
    for (; i < n && k + 40 < sizeof list; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? " " : "", ttok_lang_code(t, i));
    if (i < n) snprintf(list + k, sizeof list - k, " ... (%d more)", n - i);
    return ed_fail(ENCDEC_ERR_ARG, "unknown %s language \"%.40s\"; this model's %d codes: %s", which,
                   code, n, list);
}

encdec_status api_langs_of(const s2s_model *m, const encdec_generate_params *p, api_langs *lg) {
    const ed_ttok *t = m->tok;
    *lg = (api_langs){-1, -1, m->dec_start, m->forced_bos, NULL, 0};
    if (p->src_lang) {
        if (!ttok_has_src_lang(t))
            return ed_fail(ENCDEC_ERR_ARG, "src_lang \"%.40s\": this %s model's inputs carry no "
                           "source language%s", p->src_lang, m->model_type,
                           ttok_n_langs(t) ? " (a Marian model knows its source language)" : "");
        if ((lg->src = ttok_find_lang(t, p->src_lang)) < 0) return unknown_lang(t, "source", p->src_lang);
    }
    if (p->tgt_lang) {
        int place = ttok_tgt_place(t), i = ttok_find_lang(t, p->tgt_lang);
        if (place == TTOK_TGT_NONE)
            return ed_fail(ENCDEC_ERR_ARG, "tgt_lang \"%.40s\": this %s model has no target "
                           "languages", p->tgt_lang, m->model_type);
        if (i < 0) return unknown_lang(t, "target", p->tgt_lang);
        if (place == TTOK_TGT_FORCED) lg->forced = ttok_lang_token(t, i);
        else if (place == TTOK_TGT_START) lg->dec_start = ttok_lang_token(t, i);
        else lg->tgt = i;
    }
    /* a multilingual Argos package's target language: a target prefix, as
     * Argos Translate hands it to translate_batch (a caller's token-level
     * prefix replaces it: encdec_engine_generate_ids) */
    lg->prefix = ttok_text_prefix(t, &lg->n_prefix);
    return ENCDEC_OK;
}

encdec_status api_tokenize(const s2s_model *m, const char *const *inputs, int B, int truncate,
                           const api_langs *lg, int pieces, api_packed *pk) {
    memset(pk, 0, sizeof *pk);
    pk->start = ed_alloc((size_t)B * sizeof(int), "input table");
    pk->len = ed_alloc((size_t)B * sizeof(int), "input table");
    pk->pieces = pieces ? ed_calloc((size_t)B * sizeof *pk->pieces, "input table") : NULL;
    if (!pk->start || !pk->len || (pieces && !pk->pieces)) return ENCDEC_ERR_NOMEM;
    pk->n_in = B;
    size_t cap = 0;
    int limit = m->n_positions;
    for (int b = 0; b < B; b++) {
        if (!inputs[b]) return ed_fail(ENCDEC_ERR_ARG, "input %d is NULL", b);
        if (!inputs[b][0]) return ed_fail(ENCDEC_ERR_ARG, "input %d is empty", b);
        int *ids = NULL, n = 0, src = lg ? lg->src : -1, tgt = lg ? lg->tgt : -1;
        size_t len = strlen(inputs[b]);
        encdec_status st = pieces ? ttok_encode_pieces(m->tok, inputs[b], len, src, tgt, &ids, &n, &pk->pieces[b])
                                  : ttok_encode_lang(m->tok, inputs[b], len, src, tgt, &ids, &n);
        if (st) {
            ed_err_prefix("input %d", b);
            return st;
        }
        if (n > limit) {
            if (!truncate) {
                free(ids);
                return ed_fail(ENCDEC_ERR_ARG, "input %d has %d tokens; the model accepts at most %d "
                               "(%s); shorten it or allow truncation", b, n, limit,
                               m->ops == &t5_s2s_ops ? "n_positions" : "max_position_embeddings");
            }
            ids[limit - 1] = m->eos;   /* keep the first tokens, and </s> */
            if (pieces) pk->pieces[b][limit - 1] = pk->pieces[b][n - 1];
            n = limit;
        }
        if ((size_t)pk->n_tokens + (size_t)n > cap) {
            size_t c = cap ? cap * 2 : 1024;
            while (c < (size_t)pk->n_tokens + (size_t)n) c *= 2;
            int *q = realloc(pk->ids, c * sizeof *q);
            if (!q) {
                free(ids);
                return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: input tokens");
            }
            pk->ids = q;
            cap = c;
        }
        memcpy(pk->ids + pk->n_tokens, ids, (size_t)n * sizeof *ids);
        free(ids);
        pk->start[b] = pk->n_tokens;
        pk->len[b] = n;
        pk->n_tokens += n;
        if (n > pk->t_max) pk->t_max = n;
    }
    return ENCDEC_OK;
}

static encdec_status add_token(encdec_result *r, const ed_ttok *tok, int id, float lp) {
    size_t n = 0;
    const char *p = ttok_token_text(tok, id, &n);
    return api_result_add_token(r, id, lp, p, p ? n : 0, 0);
}

static int flush(void *ctx, const int *len) { return gen_stream_flush(ctx, len); }

/* p->return_attention's rows of the outputs (api_attend) into att[n_out],
 * path: each output token's sequence (dec_task's). */
static encdec_status attention(const s2s_model *m, const encdec_generate_params *p, int mode,
                               const api_attender *at, int n_out, const int *toks, const int *lens,
                               const int *path, float **att) {
    int n_ret = p->num_return_sequences;
    int *input_of = ed_alloc(sizeof(int) * (size_t)n_out, "outputs");
    if (!input_of) return ENCDEC_ERR_NOMEM;
    for (int i = 0; i < n_out; i++) input_of[i] = i / n_ret;
    api_attend_job j = {mode, ttok_token_id(m->tok, "<unk>"), n_out, p->max_new_tokens,
                        toks, lens, path, input_of};
    encdec_status st = api_attend(at, &j, att);
    free(input_of);
    return st;
}

/* replace_unknowns: for each <unk> of tk[0, n) (rows att: [n, full]) the
 * input token its row weighs most, as spelled (the input's pieces, else
 * the vocabulary's), into subst[n]; NULL where the token is no <unk>, or
 * that input token is a special one (</s>, a language code). 1 when any is
 * set. */
static int unknowns(const s2s_model *m, const api_attender *at, int in, const int *tk, int n, const float *att,
                    int unk, const char **subst) {
    const api_packed *pk = at->pk;
    int c = at->cols[in], full = at->full ? at->full[in] : c, any = 0;
    const int *src = pk->ids + pk->start[in];
    for (int j = 0; j < n; j++) {
        subst[j] = NULL;
        if (tk[j] != unk) continue;
        const float *row = att + (size_t)j * (size_t)full;
        int pos = 0;
        for (int k = 1; k < full; k++)
            if (row[k] > row[pos]) pos = k;
        /* a cut input's row holds its kept tokens, zeros, then its </s> */
        int s = pos < c - 1 ? pos : pos == full - 1 ? c - 1 : -1;
        if (s < 0 || !(src[s] == unk || ttok_is_normal(m->tok, src[s]))) continue;
        const char *p = pk->pieces ? pk->pieces[in][s] : ttok_token_spelling(m->tok, src[s]);
        const char *u = ttok_token_spelling(m->tok, unk);   /* (an id's spelling, unknown) */
        if (p && *p && !(u && !strcmp(p, u))) subst[j] = p;
        any |= subst[j] != NULL;
    }
    return any;
}

/* Output i's tokens and text into r (subst: replace_unknowns' or NULL). */
/* A sequence's tokens into r, and its text: of the first n_text. */
static encdec_status put_output(encdec_result *r, const s2s_model *m, const int *tk, const float *lp, int n,
                                int n_text, const char *const *subst, char **text) {
    encdec_status st = ENCDEC_OK;
    for (int j = 0; j < n && !st; j++) {
        if (!subst || !subst[j]) {
            st = add_token(r, m->tok, tk[j], lp[j]);
            continue;
        }
        size_t k = 0;   /* the text of the token the vocabulary spells so, else the spelling as it reads */
        const char *known = ttok_token_text(m->tok, ttok_token_id(m->tok, subst[j]), &k);
        char *w = known ? NULL : malloc(strlen(subst[j]) + 1);
        if (!known && !w) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokens");
        if (w) k = ttok_unmark(w, subst[j]);
        st = api_result_add_token(r, tk[j], lp[j], known ? known : w, k, 0);
        free(w);
    }
    return st ? st : ttok_decode_subst(m->tok, tk, n_text, subst, text);
}

/* CTranslate2's coverage penalty of a hypothesis (dec_beam_params.rescore):
 * beta x the sum over the input's tokens of log(min(attention summed over
 * the hypothesis' n tokens, 1)), those it never attends to left out; float
 * sums, as CTranslate2's. */
typedef struct {
    const api_attender *at;
    float beta;
} api_cover;

static double coverage(void *ctx, int g, const int *path, int n) {
    const api_cover *c = ctx;
    int cols = c->at->cols[g];
    float sum[4096];   /* an input's tokens: at most the model's positions */
    if (cols > (int)(sizeof sum / sizeof *sum)) cols = (int)(sizeof sum / sizeof *sum);
    memset(sum, 0, sizeof(float) * (size_t)cols);
    for (int t = 0; t < n; t++) {
        const float *row = rn_att_row(c->at->rn, path[t], t);
        for (int k = 0; row && k < cols; k++) sum[k] += row[k];
    }
    float pen = 0;
    for (int k = 0; k < cols; k++)
        if (sum[k] > 0) pen += logf(sum[k] < 1 ? sum[k] : 1.0f);
    return (double)(c->beta * pen);
}

/* Each output token's sequence as the strategies other than beam search
 * leave it: output i's (a sequence of its input, as the search's). */
static int *paths(int n_out, int n_ret, int width, int max_new) {
    int *path = ed_alloc(sizeof(int) * (size_t)n_out * (size_t)max_new, "attention paths");
    for (int i = 0; path && i < n_out; i++)
        for (int k = 0; k < max_new; k++) path[(size_t)i * max_new + k] = i / n_ret * width + i % n_ret;
    return path;
}

/* return_logits: each sequence's rows as the task shows them (dec_task's
 * seen), grown as its positions come; a sequence whose growth failed is
 * marked. */
typedef struct {
    float **rows;
    int *cap, *bad;   /* [W] rows held; 1: out of memory */
    int V;
} api_logit_log;

static void logit_seen(void *ctx, int seq, int index, const float *row, int V) {
    api_logit_log *l = ctx;
    if (l->bad[seq]) return;
    if (index >= l->cap[seq]) {
        int c = index + 1 > 2 * l->cap[seq] ? index + 1 : 2 * l->cap[seq];
        float *g = realloc(l->rows[seq], sizeof(float) * (size_t)c * (size_t)V);
        if (!g) {
            l->bad[seq] = 1;
            return;
        }
        l->rows[seq] = g;
        l->cap[seq] = c;
    }
    memcpy(l->rows[seq] + (size_t)index * V, row, sizeof(float) * (size_t)V);
}

static encdec_status logit_log_init(api_logit_log *l, int W, int V) {
    l->V = V;
    l->rows = ed_calloc(sizeof *l->rows * (size_t)W, "logits");
    l->cap = ed_calloc(sizeof *l->cap * (size_t)W * 2, "logits");
    if (!l->rows || !l->cap) return ENCDEC_ERR_NOMEM;
    l->bad = l->cap + W;
    return ENCDEC_OK;
}

static void logit_log_free(api_logit_log *l, int W) {
    for (int s = 0; l->rows && s < W; s++) free(l->rows[s]);
    free(l->rows);
    free(l->cap);
}

/* The prompt fed a token a pass to the W sequences, each forced token's
 * row (the logits it is forced over: generated position k - 1 for
 * prompt[k], the rules applied as to a generated one) into the log, as
 * CTranslate2 steps through a target prefix; logits: the last feed's. */
static encdec_status feed_logged(const dec_model *dm, int W, const int *prompt, int n, float *logits,
                                 const dec_rules *r, api_logit_log *ll) {
    size_t V = (size_t)dm->n_vocab;
    float *row = ed_alloc(sizeof(float) * V, "logits");
    encdec_status st = row ? dec_feed_all(dm, W, prompt, 1, logits) : ENCDEC_ERR_NOMEM;
    for (int k = 1; k < n && !st; k++) {
        for (int s = 0; s < W; s++) {
            memcpy(row, logits + (size_t)s * V, sizeof(float) * V);
            dec_apply_rules(row, (int)V, r, prompt + 1, k - 1);
            logit_seen(ll, s, k - 1, row, (int)V);
        }
        st = dec_feed_all(dm, W, prompt + k, 1, logits);
    }
    free(row);
    return st;
}

encdec_status api_generate_decode(const s2s_model *m, const encdec_generate_params *p,
                                  const api_langs *lg, int B, const dec_model *dm, api_run_fn run,
                                  void *run_ctx, const api_attender *at, encdec_result *r) {
    int width = api_gen_width(p);
    int n_ret = p->num_return_sequences, max_new = p->max_new_tokens, W = B * width;
    size_t n_out = (size_t)B * (size_t)n_ret;
    int *toks = ed_alloc(n_out * (size_t)max_new * sizeof(int), "output tokens");
    float *lps = ed_alloc(n_out * (size_t)max_new * sizeof(float), "output log-probabilities");
    int *lens = ed_alloc(n_out * sizeof(int), "output lengths");
    float *scores = ed_alloc(n_out * sizeof(float), "output scores");
    float *logits = dec_alloc_n((size_t)W * (size_t)m->n_vocab, sizeof(float), "decode logits");
    encdec_status st = !toks || !lps || !lens || !scores || !logits ? ENCDEC_ERR_NOMEM : ENCDEC_OK;
    dec_rules rules = {m->suppress, m->n_suppress, NULL, 0, m->eos, max_new};
    rules.repetition_penalty = p->repetition_penalty;
    rules.no_repeat_ngram = p->no_repeat_ngram_size;
    rules.min_new = p->min_new_tokens;
    rules.force_last = p->forced_eos != 0;
    rules.force_last_id = m->forced_eos >= 0 ? m->forced_eos : m->eos;
    for (int i = 0; i < p->n_end_tokens && !st; i++)
        if (p->end_tokens[i] < 0 || p->end_tokens[i] >= m->n_vocab)
            st = ed_fail(ENCDEC_ERR_ARG, "end_tokens[%d] is %d, not below the vocabulary size %d", i,
                         p->end_tokens[i], m->n_vocab);
    if (p->n_end_tokens > 0) {   /* the caller's end tokens instead of </s> */
        rules.eot = p->end_tokens[0];
        rules.more_eot = p->end_tokens + 1;
        rules.n_more_eot = p->n_end_tokens - 1;
    }
    /* the caller's suppressed tokens with the generation config's */
    int n_sup = m->n_suppress + p->n_suppress_tokens;
    int *sup = n_sup > m->n_suppress ? ed_alloc(sizeof(int) * (size_t)n_sup, "suppressed tokens") : NULL;
    if (n_sup > m->n_suppress && !sup) st = ENCDEC_ERR_NOMEM;
    for (int i = 0; sup && i < p->n_suppress_tokens && !st; i++)
        if (p->suppress_tokens[i] < 0 || p->suppress_tokens[i] >= m->n_vocab)
            st = ed_fail(ENCDEC_ERR_ARG, "suppress_tokens[%d] is %d, not below the vocabulary size %d", i,
                         p->suppress_tokens[i], m->n_vocab);
    if (sup && !st) {
        if (m->n_suppress) memcpy(sup, m->suppress, sizeof(int) * (size_t)m->n_suppress);
        memcpy(sup + m->n_suppress, p->suppress_tokens, sizeof(int) * (size_t)p->n_suppress_tokens);
        rules.suppress = sup;
        rules.n_suppress = n_sup;
    }
    /* the decoder start for every sequence (one pass), and the forced first
     * token where the model has one (the target language, BART's <s>), or
     * the caller's target prefix: fed with it, then the first of every
     * output (log-prob 0, counted in max_new_tokens, as transformers'
     * forced_bos_token_id) */
    int bias = p->prefix_bias_beta > 0 && lg->n_prefix > 0;   /* the prefix drawn toward, not forced */
    int n_forced = bias ? 0 : lg->n_prefix ? lg->n_prefix : lg->forced >= 0, n_prompt = 1 + n_forced;
    int *prompt = ed_alloc(sizeof(int) * (size_t)n_prompt, "decoder prompt");
    if (!prompt) st = ENCDEC_ERR_NOMEM;
    if (prompt) {
        prompt[0] = lg->dec_start;
        if (lg->n_prefix && n_forced) memcpy(prompt + 1, lg->prefix, sizeof(int) * (size_t)lg->n_prefix);
        else if (n_forced) prompt[1] = lg->forced;
    }
    rules.ct2 = p->ctranslate2_rules;
    if (prompt && !p->ctranslate2_rules) rules.pen_prompt = prompt, rules.n_pen_prompt = 1;   /* the start */
    if (!st && n_forced) {
        rules.forced = &prompt[1];
        rules.n_forced = n_forced;
        if (max_new <= n_forced)
            st = ed_fail(ENCDEC_ERR_ARG, "max_new_tokens %d: %d token%s forced first (%s), so it needs "
                         "%d or more", max_new, n_forced, n_forced > 1 ? "s are" : " is",
                         lg->n_prefix ? "the target prefix" : "this model's first token", n_forced + 1);
    }
    /* the attention kept from the prompt on (return_attention; replace_unknowns
     * reads it for the outputs that hold <unk>; the coverage penalty for every
     * hypothesis) */
    int mode = p->return_attention ? p->return_attention : p->coverage_penalty != 0 ? 1 : p->replace_unknowns ? 2 : 0;
    int *path = NULL;
    if (!st && mode) {
        if (!at || !m->ops->xattn)
            st = ed_fail(ENCDEC_ERR_ARG, "%s: not for %s models here",
                         p->return_attention ? "return_attention" : p->coverage_penalty != 0 ? "coverage_penalty"
                                                                                               : "replace_unknowns",
                         m->model_type);
        else if (!(path = paths((int)n_out, n_ret, width, max_new)))
            st = ENCDEC_ERR_NOMEM;
        else
            st = api_attend_begin(at, W, width, max_new);
    }
    api_cover cov = {at, p->coverage_penalty};
    /* then the strategy as a task */
    api_logit_log ll = {0};
    if (!st && p->return_logits) st = logit_log_init(&ll, W, m->n_vocab);
    if (!st) st = p->return_logits && n_prompt > 1 ? feed_logged(dm, W, prompt, n_prompt, logits, &rules, &ll)
                                                   : dec_feed_all(dm, W, prompt, n_prompt, logits);
    dec_task *t = NULL;
    if (!st) {
        if (p->return_alternatives) {
            dec_alt_params ap = {n_ret, p->min_alternative_prob, api_beam_params(p)};
            ap.beam.n_return = 1;
            st = dec_alt_task(&t, dm, B, logits, &rules, &ap, toks, lps, lens, scores);
        } else if (p->num_beams > 1 || p->prefix_bias_beta > 0) {
            dec_beam_params bp = api_beam_params(p);
            if (bias) bp.prefix = lg->prefix, bp.n_prefix = lg->n_prefix, bp.prefix_beta = p->prefix_bias_beta;
            if (p->coverage_penalty != 0) bp.rescore = coverage, bp.rescore_ctx = &cov;
            st = dec_beam_task(&t, dm, B, logits, &rules, &bp, toks, lps, lens, scores);
        } else if (p->do_sample) {
            dec_sample_params sp = {p->temperature, p->top_k, p->top_p, p->seed};
            st = dec_sample_task(&t, dm, B, n_ret, logits, &rules, &sp, toks, lps, lens, scores);
        } else {
            st = dec_greedy_task(&t, dm, B, logits, &rules, toks, lps, lens, scores);
        }
    }
    if (t) t->path = path;
    if (t && p->return_logits) t->seen = logit_seen, t->seen_ctx = &ll;
    gen_stream gs = {0};
    api_watch w = {flush, &gs, lens, (int)n_out};
    if (!st && p->on_token) st = gen_stream_init(&gs, m->tok, m->eos, p, (int)n_out, toks, lps);
    if (!st) st = run(run_ctx, t, p->on_token ? &w : NULL);
    gen_stream_free(&gs);
    dec_task_free(t);
    int keep = mode && (p->return_attention || p->replace_unknowns);   /* rows for the outputs */
    float **att = keep && !st ? ed_calloc(sizeof *att * n_out, "attention") : NULL;
    if (keep && !st) st = att ? attention(m, p, mode, at, (int)n_out, toks, lens, path, att) : ENCDEC_ERR_NOMEM;
    if (mode && at) rn_att_end(at->rn);
    free(path);
    const char **subst = p->replace_unknowns && !st ? ed_alloc(sizeof *subst * (size_t)max_new, "tokens") : NULL;
    if (p->replace_unknowns && !subst && !st) st = ENCDEC_ERR_NOMEM;
    int unk = ttok_token_id(m->tok, "<unk>");
    for (size_t i = 0; i < n_out && !st; i++) {
        if (lens[i] < 0) continue;   /* a rank the search did not fill (patience) */
        const int *tk = toks + i * (size_t)max_new;
        int first = (int)r->n_tokens, in = (int)i / n_ret;
        int sub = subst && att[i] && unknowns(m, at, in, tk, lens[i], att[i], unk, subst);
        char *text = NULL;
        /* the caller's end tokens at the end (a beam may go on past one when
         * the candidates run out, as CTranslate2's) are no part of the text,
         * as CTranslate2 leaves them out (</s> has none) */
        int n_text = lens[i];
        while (p->n_end_tokens > 0 && n_text > 0 && dec_is_eot(&rules, tk[n_text - 1])) n_text--;
        st = put_output(r, m, tk, lps + i * (size_t)max_new, lens[i], n_text, sub ? subst : NULL, &text);
        if (!st) st = api_result_add_sequence(r, in, (int)i % n_ret, scores[i], first, lens[i], text);
        if (!st && att && att[i] && p->return_attention) {
            st = api_result_set_attention(r, (int)r->n_seqs - 1, att[i], at->full ? at->full[in] : at->cols[in]);
            att[i] = NULL;
        }
        if (!st && ll.rows && ll.rows[i]) {   /* output i: sequence i's (greedy, sampling) */
            if (ll.bad[i] || ll.cap[i] < lens[i])
                st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: logits (%d x %d)", lens[i], ll.V);
            else
                st = api_result_set_logits(r, (int)r->n_seqs - 1, ll.rows[i], ll.V);
            ll.rows[i] = NULL;
        }
        r->timings.n_tokens += lens[i];
    }
    logit_log_free(&ll, W);
    for (size_t i = 0; att && i < n_out; i++) free(att[i]);
    free(att);
    free(subst);
    free(toks);
    free(lps);
    free(lens);
    free(scores);
    free(logits);
    free(prompt);
    free(sup);
    return st;
}

/* The task run here (dec_task_run's loop), the watch told after every
 * choice. */
static encdec_status run_here(void *ctx, dec_task *t, const api_watch *w) {
    const dec_model *m = ctx;
    encdec_status st = t->n > 0 ? dec_task_advance(t) : ENCDEC_OK;   /* the prompt's logits */
    for (;;) {
        if (!st && w && w->fn(w->ctx, w->len))
            st = ed_fail(ENCDEC_ERR_CANCELLED, "on_token asked to stop");
        if (st || t->n == 0) break;
        st = m->step(m->ctx, t->n, t->seq, t->tok, t->logits);
        if (!st) st = dec_task_advance(t);
    }
    t->n = 0;
    return st;
}

static encdec_status run(encdec_session *s, const api_packed *pk, int B,
                         const encdec_generate_params *p, const api_langs *lg, encdec_result *r) {
    int width = api_gen_width(p);
    const s2s_model *m = &s->model->text;
    s2s_shape shape = {pk->n_tokens, pk->t_max, B, B * width, p->max_new_tokens + 1};
    encdec_status st = m->ops->reserve(s->text_st, &shape);
    if (st) return st;
    dec_runner rn;
    memset(&rn, 0, sizeof rn);
    double t0 = ed_now_ms();
    m->ops->encode(s->text_st, pk->ids, pk->start, pk->len, B);
    rn_model rm = m->ops->rn_model(s->text_st, width);
    st = rn_init(&rn, &rm, p->kv_mode);
    if (!st) rn_begin(&rn, p->kv_mode);
    /* greedy: the model may screen its logits (models/screen.h) */
    rn_screen(&rn, api_gen_screens(p));
    double t1 = ed_now_ms();
    if (!st) {
        dec_model dm = rn_seam(&rn);
        api_attender at = {&rn, pk->len, NULL, pk};
        st = api_generate_decode(m, p, lg, B, &dm, run_here, &dm, &at, r);
    }
    encdec_status dv = m->ops->status(s->text_st);   /* a device's failure, named */
    if (dv) st = dv;
    r->timings.encoder_ms = t1 - t0;
    r->timings.decode_ms = ed_now_ms() - t1;
    r->timings.n_steps = rn.n_steps;
    r->timings.n_input_tokens = pk->n_tokens;
    rn_free(&rn);
    return st;
}

static encdec_status encdec_generate_body(encdec_session *s, const char *const *inputs, int n_inputs,
                              const encdec_generate_params *params, encdec_result **out) {
    ed_err_clear();
    if (!out) return ed_fail(ENCDEC_ERR_ARG, "encdec_generate: out is NULL");
    *out = NULL;
    if (!s) return ed_fail(ENCDEC_ERR_ARG, "encdec_generate: session is NULL");
    if (!api_is_text(s->model))
        return ed_fail(ENCDEC_ERR_ARG, "encdec_generate: this is a Whisper model (speech to text); "
                       "use encdec_transcribe");
    if (!inputs || n_inputs < 1 || n_inputs > GEN_MAX_INPUTS)
        return ed_fail(ENCDEC_ERR_ARG, "encdec_generate: %d inputs (1..%d)", n_inputs, GEN_MAX_INPUTS);
    encdec_generate_params p = params ? *params : encdec_generate_default_params();
    api_langs lg;
    encdec_status st = api_generate_check(&p);
    if (!st) st = api_langs_of(&s->model->text, &p, &lg);
    if (st) return st;
    api_packed pk;
    st = api_tokenize(&s->model->text, inputs, n_inputs, p.truncate, &lg, p.replace_unknowns, &pk);
    encdec_result *r = NULL;
    if (!st) {
        r = calloc(1, sizeof *r);
        if (!r) st = ed_fail(ENCDEC_ERR_NOMEM, "out of memory: result");
    }
    if (!st) st = run(s, &pk, n_inputs, &p, &lg, r);
    api_packed_free(&pk);
    if (st) {
        encdec_result_free(r);
        return st;
    }
    api_result_finish(r);
    *out = r;
    return ENCDEC_OK;
}

/* The kernels run under the model's kernel-set limit (base/isa.h). */
encdec_status encdec_generate(encdec_session *s, const char *const *inputs, int n_inputs,
                              const encdec_generate_params *params, encdec_result **out) {
    int old = ed_isa_swap(s && s->model ? s->model->isa : ED_ISA_ANY);
    encdec_status st = encdec_generate_body(s, inputs, n_inputs, params, out);
    ed_isa_swap(old);
    return st;
}
