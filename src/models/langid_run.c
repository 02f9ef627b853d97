/* langid_run.c - the two detectors of langid.h: langdetect's seeded trials
 * over a text's n-grams, lexilang's count of known words. Built without
 * floating-point contraction (CMakeLists.txt): each product and sum rounds
 * as Python's do. */
#include "models/langid.h"
#include "base/err.h"
#include "base/pyrand.h"
#include "base/utf8.h"
#include "tok/unicode_tables.h"

#include <stdlib.h>
#include <string.h>

#define N_TRIAL 7
#define ALPHA 0.5
#define ALPHA_WIDTH 0.05
#define ITERATION_LIMIT 1000
#define CONV_THRESHOLD 0.99999
#define BASE_FREQ 10000
#define SEED 0   /* DetectorFactory.seed, as LibreTranslate sets it */

/* prob[i] *= alpha / BASE_FREQ + P(gram | language i). */
static void update(const langid_model *m, uint32_t slot, double alpha, double *prob) {
    double dense[LANGID_MAX] = {0};
    for (uint32_t e = m->first[slot]; e < m->first[slot] + m->count[slot]; e++) dense[m->ent[e].lang] = m->ent[e].p;
    double weight = alpha / BASE_FREQ;
    for (int i = 0; i < m->n_lang; i++) prob[i] *= weight + dense[i];
}

/* prob / sum(prob) (summed in order, as Python's sum()); the largest. */
static double normalize(double *prob, int n) {
    double sum = 0, maxp = 0;
    for (int i = 0; i < n; i++) sum += prob[i];
    for (int i = 0; i < n; i++) {
        double p = prob[i] / sum;
        if (maxp < p) maxp = p;
        prob[i] = p;
    }
    return maxp;
}

encdec_status langid_probs(const langid_model *m, const char *text, size_t len, double *p,
                           int *n_features) {
    uint32_t *t = NULL, *ids = NULL;
    size_t n = 0, n_ids = 0;
    *n_features = 0;
    for (int i = 0; i < m->n_lang; i++) p[i] = 0;
    encdec_status st = langid_text(m, text, len, &t, &n);
    if (!st) st = langid_ngrams(m, t, n, &ids, &n_ids);
    free(t);
    if (st || !n_ids) {
        free(ids);
        return st;
    }
    py_rand r;
    py_rand_seed(&r, SEED);
    for (int trial = 0; trial < N_TRIAL; trial++) {
        double prob[LANGID_MAX];
        for (int i = 0; i < m->n_lang; i++) prob[i] = 1.0 / m->n_lang;
        double alpha = ALPHA + py_rand_gauss(&r) * ALPHA_WIDTH;
        for (int i = 0;; i++) {
            update(m, ids[py_rand_below(&r, n_ids)], alpha, prob);
            if (i % 5 == 0 && (normalize(prob, m->n_lang) > CONV_THRESHOLD || i >= ITERATION_LIMIT)) break;
        }
        for (int i = 0; i < m->n_lang; i++) p[i] += prob[i] / N_TRIAL;
    }
    *n_features = n_ids > (size_t)0x7fffffff ? 0x7fffffff : (int)n_ids;
    free(ids);
    return ENCDEC_OK;
}

/* ---- lexilang ----------------------------------------------------------------------------- */

static int py_space(uint32_t c) { return uc_class(c) == UC_SPACE || (c >= 0x1C && c <= 0x1F); }

/* str.lower(), the final sigma included. */
static size_t py_lower(const uint32_t *t, size_t n, uint32_t *out) {
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] != 0x3A3) {
            w += (size_t)uc_lower(t[i], out + w);
            continue;
        }
        size_t j = i;
        while (j > 0 && uc_is_case_ignorable(t[j - 1])) j--;
        int fin = j > 0 && uc_is_cased(t[j - 1]);
        if (fin) {
            j = i + 1;
            while (j < n && uc_is_case_ignorable(t[j])) j++;
            fin = j == n || !uc_is_cased(t[j]);
        }
        out[w++] = fin ? 0x3C2 : 0x3C3;
    }
    return w;
}

static int lexi_cjk(uint32_t c) {
    static const uint32_t r[][2] = {{4352, 4607},   {11904, 42191}, {43072, 43135}, {44032, 55215},
                                    {63744, 64255}, {65072, 65103}, {65381, 65500}, {131072, 196607}};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (c >= r[i][0] && c <= r[i][1]) return 1;
    return 0;
}

static const uint8_t *word_find(const langid_model *m, const char *w) {
    uint32_t h = 2166136261u, mask = m->wcap - 1;
    for (const char *s = w; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    for (h &= mask; m->word[h]; h = (h + 1) & mask)
        if (!strcmp(m->word[h], w)) return m->word_langs[h];
    return NULL;
}

/* Adds a token's languages to the bins (first seen first, as a dict keeps them). */
static void count_token(const langid_model *m, const uint32_t *tok, size_t n, const char *const *allow,
                        int n_allow, int *bins, int *order, int *n_order) {
    char buf[1024];
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w + 4 >= sizeof buf) return;   /* longer than any word of the list */
        w += ed_utf8_put(buf + w, tok[i]);
    }
    buf[w] = 0;
    const uint8_t *langs = n ? word_find(m, buf) : NULL;
    for (; langs && *langs != 0xff; langs++) {
        int ok = !allow;
        for (int k = 0; !ok && k < n_allow; k++) ok = !strcmp(allow[k], m->wlang[*langs]);
        if (!ok) continue;
        if (!bins[*langs]++) order[(*n_order)++] = *langs;
    }
}

static void tokens_count(const langid_model *m, const uint32_t *t, size_t n, const char *const *allow,
                         int n_allow, int *bins, int *order, int *n_order) {
    int cjk = 0;
    size_t spaces = 0;
    for (size_t i = 0; i < n && i < 5; i++) cjk += lexi_cjk(t[i]);
    for (size_t i = 0; i < n; i++) spaces += t[i] == ' ';
    if (cjk > 1 && spaces < 3) {   /* each character a token */
        for (size_t i = 0; i < n; i++) count_token(m, t + i, 1, allow, n_allow, bins, order, n_order);
        return;
    }
    for (size_t a = 0, b = 0; b <= n; b++)
        if (b == n || t[b] == ' ') {
            count_token(m, t + a, b - a, allow, n_allow, bins, order, n_order);
            a = b + 1;
        }
}

encdec_status langid_words(const langid_model *m, const char *text, size_t len,
                           const char *const *allow, int n_allow, const char **lang, double *conf) {
    *lang = NULL;
    *conf = 0;
    uint32_t *t = malloc((len + 1) * sizeof *t), *low = malloc((3 * len + 1) * sizeof *low);
    if (!t || !low) {
        free(t);
        free(low);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory");
    }
    size_t n = 0;
    for (size_t at = 0; at < len;) {
        int k = ed_utf8_next((const uint8_t *)text + at, len - at, &t[n]);
        if (k <= 0) {
            free(t);
            free(low);
            return ed_fail(ENCDEC_ERR_ARG, "the text is not UTF-8 (byte %zu)", at);
        }
        n++;
        at += (size_t)k;
    }
    size_t nl = py_lower(t, n, low), a = 0;
    while (a < nl && py_space(low[a])) a++;
    while (nl > a && py_space(low[nl - 1])) nl--;
    for (size_t i = a; i < nl; i++)
        if (low[i] < 128 && low[i] && strchr("!\"#$%&()*+,/:;<=>?@[\\]^_`{|}~.", (int)low[i])) low[i] = ' ';
    int bins[LANGID_WORD_LANGS] = {0}, order[LANGID_WORD_LANGS], n_order = 0;
    tokens_count(m, low + a, nl - a, allow, allow ? n_allow : 0, bins, order, &n_order);
    free(t);
    free(low);
    if (!n_order) return ENCDEC_OK;
    int best = 0, n_best = 0, top = -1;
    for (int i = 0; i < n_order; i++) best = bins[order[i]] > best ? bins[order[i]] : best;
    for (int i = 0; i < n_order; i++) {
        if (bins[order[i]] != best) continue;
        n_best++;
        if (top < 0 || m->wweight[order[i]] > m->wweight[top]) top = order[i];
    }
    *lang = m->wlang[top];
    *conf = n_best == 1 ? 0.9 : (1.0 / n_best) * 0.9;
    return ENCDEC_OK;
}
