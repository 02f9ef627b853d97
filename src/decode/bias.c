/* bias.c - biased decoding toward a target prefix (bias.h). */
#include "decode/bias.h"
#include "base/err.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

encdec_status dec_bias_init(dec_bias *b, const int *prefix, int n, float beta, int G, int W) {
    memset(b, 0, sizeof *b);
    if (!prefix || n < 1) return ENCDEC_OK;
    b->left = calloc((size_t)G * W, 1);
    b->slot = malloc(sizeof(int) * ((size_t)G * W + W));
    if (!b->left || !b->slot) {
        dec_bias_free(b);
        return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: biased beam search");
    }
    b->prefix = prefix, b->n = n, b->beta = beta, b->W = W;
    b->cand_of = b->slot + (size_t)G * W;
    for (size_t i = 0; i < (size_t)G * W; i++) b->slot[i] = (int)(i % W);
    return ENCDEC_OK;
}

void dec_bias_free(dec_bias *b) {
    free(b->left);
    free(b->slot);
    memset(b, 0, sizeof *b);
}

int dec_bias_on(const dec_bias *b, int g, int j, int t) {
    if (t >= b->n) return 0;
    int s = b->slot[(size_t)g * b->W + j];
    return s >= 0 && !b->left[(size_t)g * b->W + s];
}

void dec_bias_row(const dec_bias *b, float *row, int V, int t) {
    float mx = -INFINITY, sum = 0;
    for (int v = 0; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    for (int v = 0; v < V; v++) sum += expf(row[v] - mx);
    int id = b->prefix[t];
    for (int v = 0; v < V; v++) {
        float p = expf(row[v] - mx) / sum * (1 - b->beta);
        if (p < FLT_MIN) p = 0;
        if (v == id) p += b->beta;
        row[v] = logf(p);
    }
}

void dec_bias_update(dec_bias *b, int g, int t, const int *tok, const unsigned char *ended, int n_cand,
                     const int *beam_cand) {
    if (!b->n) return;
    int W = b->W, sec = W;
    unsigned char *left = b->left + (size_t)g * W;
    for (int k = 0; k < W && k < n_cand; k++) {
        left[k] = left[k] || t >= b->n || tok[k] != b->prefix[t];
        int c = k;   /* slot k's candidate: the k-th, or the next of the others that goes on */
        for (int j = sec; ended[k] && j < n_cand; j++)
            if (!ended[j]) {
                c = j, sec = j + 1;
                break;
            }
        b->cand_of[k] = c;
    }
    for (int j = 0; j < W; j++) {
        int s = -1;
        for (int k = 0; k < W && k < n_cand && s < 0; k++)
            if (b->cand_of[k] == beam_cand[j]) s = k;
        b->slot[(size_t)g * W + j] = s;
    }
}
