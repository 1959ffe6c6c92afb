/* rng.h: deterministic random numbers (splitmix64). */
#ifndef ASSOC_RNG_H
#define ASSOC_RNG_H

#include <stdint.h>

uint64_t rng_next(uint64_t *s);
double rng_unit(uint64_t *s);   /* [0, 1) */
double rng_normal(uint64_t *s);
int rng_int(uint64_t *s, int lo, int hi); /* [lo, hi] */

#endif
