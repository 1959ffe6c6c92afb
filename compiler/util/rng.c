/* rng.c: deterministic random numbers (splitmix64), so that a seed gives
 * the same trials, inputs and samples on every machine. */
#include <math.h>

#include "compiler/util/rng.h"

uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double rng_unit(uint64_t *s) { return (rng_next(s) >> 11) * 0x1.0p-53; }

double rng_normal(uint64_t *s)
{
	double u = rng_unit(s), v = rng_unit(s);
	return sqrt(-2 * log(u + 0x1.0p-60)) * cos(6.283185307179586 * v);
}

int rng_int(uint64_t *s, int lo, int hi) { return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1)); }

uint64_t rng_stream(uint64_t seed, uint64_t purpose)
{
	uint64_t s = seed ^ purpose;
	return rng_next(&s);
}

uint64_t rng_seed_at(uint64_t seed, uint64_t purpose, uint64_t index)
{
	if (!index)
		return seed;
	uint64_t s = rng_stream(seed, purpose) ^ rng_stream(index, ~purpose);
	return rng_next(&s);
}
