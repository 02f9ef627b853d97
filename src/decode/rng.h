/* rng.h - a small, fast, reproducible random number generator for sampling:
 * xoshiro256** (Blackman and Vigna, 2018), its state filled by splitmix64.
 *
 *   dec_rng g;  dec_rng_seed(&g, seed, stream);
 *   double u = dec_rng_uniform(&g);          in [0, 1)
 *
 * A (seed, stream) pair names one sequence of numbers, the same on every
 * platform; different streams of one seed are unrelated. Not for
 * cryptography. The state is a plain value: one per sequence, no sharing.
 */
#ifndef ED_RNG_H
#define ED_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} dec_rng;

void dec_rng_seed(dec_rng *g, uint64_t seed, uint64_t stream);

uint64_t dec_rng_next(dec_rng *g);

/* The top 53 bits of the next number, as a double in [0, 1). */
double dec_rng_uniform(dec_rng *g);

#endif
