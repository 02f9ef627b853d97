/* rng.c - xoshiro256** seeded by splitmix64. */
#include "decode/rng.h"

/* splitmix64 (Steele, Lea and Flood): a bijective mix of a Weyl sequence;
 * any x, even 0, gives four well-spread words for the xoshiro state. */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

/* Distinct splitmix64 inputs give distinct outputs, so the four state
 * words are never all zero (the one state xoshiro must avoid). */
void dec_rng_seed(dec_rng *g, uint64_t seed, uint64_t stream) {
    /* Mix the stream through splitmix64 first so that streams s and s + 1
     * of one seed start far apart in splitmix64's sequence, not one step. */
    uint64_t x = stream;
    uint64_t y = seed ^ splitmix64(&x);
    for (int i = 0; i < 4; i++) g->s[i] = splitmix64(&y);
}

uint64_t dec_rng_next(dec_rng *g) {
    uint64_t *s = g->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double dec_rng_uniform(dec_rng *g) {
    return (double)(dec_rng_next(g) >> 11) * 0x1.0p-53;
}
