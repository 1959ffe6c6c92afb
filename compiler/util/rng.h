/* rng.h: deterministic random numbers (splitmix64). */
#ifndef ASSOC_RNG_H
#define ASSOC_RNG_H

#include <stdint.h>

uint64_t rng_next(uint64_t *s);
double rng_unit(uint64_t *s);   /* [0, 1) */
double rng_normal(uint64_t *s);
int rng_int(uint64_t *s, int lo, int hi); /* [lo, hi] */

/* What a seed's draws are for: each its own constant, so that check's
 * draws, run's inputs and paged layouts of one seed are not the same
 * numbers. */
#define RNG_CHECK_TRIALS 0x632be59bd9b4e019ull
#define RNG_CHECK_ROWS 0x50dd5ea1ed0c0ffeull
#define RNG_EXPLORE 0x3c6ef372fe94f82bull
#define RNG_RUN_INPUTS 0x2545f4914f6cdd1dull
#define RNG_PAGED_LAYOUT 0xa54ff53a5f1d36f1ull
#define RNG_RUN_HEAD 0x510e527fade682d1ull
#define RNG_RUN_SEQUENCE 0x9b05688c2b3e6c1full
#define RNG_CHECK_COMMUTES 0x1f83d9abfb41bd6bull
#define RNG_CHECK_NEUTRAL 0x1f9b2d8c6e4a7b35ull

/* The generator state of a (seed, purpose) stream.  Hashed, not
 * seed * step + purpose: a splitmix64 state one step apart is the same
 * stream one draw shifted, which made seed n + 1 draw what seed n drew. */
uint64_t rng_stream(uint64_t seed, uint64_t purpose);

/* The seed of part `index` of a draw (a head, a sequence of a batch):
 * part 0 is seed itself, so that one head draws what a run without heads
 * draws; the others are hashed from all three through rng_stream.  Not
 * seed + step * index: that made seed s at head 1 draw what seed s + step
 * drew at head 0. */
uint64_t rng_seed_at(uint64_t seed, uint64_t purpose, uint64_t index);

#endif
