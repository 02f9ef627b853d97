/* fakelm.h - the history hash behind the fake models of the decoding tests
 * (test_beam.c, test_whisper_decode.c) and of their oracles
 * (tools/golden_beam.py, tools/golden_whisper_decode.py): logits are a
 * function of a 64-bit hash of the whole token history.
 *
 *   uint64_t h = fakelm_hash(hist, n);   a = h % 4001, b = 1 + (h >> 17) % 4000 ...
 */
#ifndef ED_FAKELM_H
#define ED_FAKELM_H

#include <stdint.h>

/* h = 0x9E3779B97F4A7C15; per token t: h = ((h ^ (t + 1)) * 0xBF58476D1CE4E5B9)
 * mod 2^64; h ^= h >> 31. */
static inline uint64_t fakelm_hash(const int *tok, int n) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint64_t)(tok[i] + 1)) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    return h;
}

#endif
