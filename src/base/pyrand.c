/* pyrand.c - Python's random.Random (pyrand.h): MT19937 as its reference
 * definition (Matsumoto and Nishimura, 1998), with the init_by_array seeding
 * Python applies to the 32-bit words of a whole-number seed. */
#include "base/pyrand.h"

#include <math.h>

#define MT_N 624
#define MT_M 397

static void init_genrand(py_rand *r, uint32_t s) {
    r->mt[0] = s;
    for (int i = 1; i < MT_N; i++)
        r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
    r->i = MT_N;
}

/* init_by_array over one key word: the seed (Python splits a seed into its
 * 32-bit words, least significant first; one word for seeds below 2^32). */
void py_rand_seed(py_rand *r, uint32_t seed) {
    const uint32_t key[1] = {seed};
    const int len = 1;
    init_genrand(r, 19650218u);
    int i = 1, j = 0;
    for (int k = MT_N > len ? MT_N : len; k; k--) {
        r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
        i++;
        j++;
        if (i >= MT_N) {
            r->mt[0] = r->mt[MT_N - 1];
            i = 1;
        }
        if (j >= len) j = 0;
    }
    for (int k = MT_N - 1; k; k--) {
        r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= MT_N) {
            r->mt[0] = r->mt[MT_N - 1];
            i = 1;
        }
    }
    r->mt[0] = 0x80000000u;
    r->i = MT_N;
    r->has_next = 0;
    r->next = 0;
}

static void twist(py_rand *r) {
    for (int k = 0; k < MT_N; k++) {
        uint32_t y = (r->mt[k] & 0x80000000u) | (r->mt[(k + 1) % MT_N] & 0x7fffffffu);
        r->mt[k] = r->mt[(k + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    r->i = 0;
}

static uint32_t next_u32(py_rand *r) {
    if (r->i >= MT_N) twist(r);
    uint32_t y = r->mt[r->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double py_rand_double(py_rand *r) {
    uint32_t a = next_u32(r) >> 5, b = next_u32(r) >> 6;
    return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

double py_rand_gauss(py_rand *r) {
    if (r->has_next) {
        r->has_next = 0;
        return r->next;
    }
    const double two_pi = 2.0 * 3.14159265358979323846;
    double x2pi = py_rand_double(r) * two_pi;
    double g2rad = sqrt(-2.0 * log(1.0 - py_rand_double(r)));
    r->next = sin(x2pi) * g2rad;
    r->has_next = 1;
    return cos(x2pi) * g2rad;
}

size_t py_rand_below(py_rand *r, size_t n) {
    int k = 0;
    while (k < 32 && (n >> k)) k++;   /* n.bit_length() */
    for (;;) {
        size_t v = next_u32(r) >> (32 - k);
        if (v < n) return v;
    }
}
