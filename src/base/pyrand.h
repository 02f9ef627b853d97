/* pyrand.h - Python's random.Random, bit for bit: the Mersenne Twister
 * (MT19937) seeded as random.seed(n) seeds it for a whole number n, and the
 * draws random(), gauss() and the index of choice(). For models whose
 * reference implementation samples with Python's generator at a fixed seed
 * (langdetect's trials), so that the same seed gives the same draws.
 *
 *   py_rand r;  py_rand_seed(&r, 0);
 *   double a = 0.5 + py_rand_gauss(&r) * 0.05;
 *   size_t i = py_rand_below(&r, n);       random.choice(seq) is seq[i]
 *
 * A state belongs to one caller at a time.
 */
#ifndef ED_PYRAND_H
#define ED_PYRAND_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t mt[624];
    int i;
    int has_next;      /* gauss()'s second value is waiting */
    double next;
} py_rand;

/* random.seed(seed) for a whole number 0 <= seed < 2^32. */
void py_rand_seed(py_rand *r, uint32_t seed);
/* random.random(): [0, 1) with 53 random bits. */
double py_rand_double(py_rand *r);
/* random.gauss(0.0, 1.0) (the Box-Muller pair, its second value kept). */
double py_rand_gauss(py_rand *r);
/* random._randbelow(n) for 0 < n < 2^32: rejection over n.bit_length() bits. */
size_t py_rand_below(py_rand *r, size_t n);

#endif
