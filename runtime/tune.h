/* tune.h: block-size autotuning and its persistent cache.
 *
 * The candidates are kernel variants (runtime/variant.h) with their split
 * counts, pruned by a model (occupancy from registers and shared memory,
 * parallelism, bytes per thread) before anything is timed.  Every
 * candidate is validated before it is timed; one that fails to compile,
 * launch or validate, or that spills, scores infinity with its reason.
 * The choice is stored in a cache, one record per problem key holding the
 * variant's text (variant_str), and frozen: the same inputs give the same
 * variant and so bit-identical results, run after run. */
#ifndef ASSOC_RT_TUNE_H
#define ASSOC_RT_TUNE_H

#include <stddef.h>

#include "runtime/driver.h"
#include "runtime/variant.h"

enum { TUNE_MAX_CANDIDATES = 256 };

typedef struct {
	Family fam; /* FAM_ATTN: compute-bound kernels the memory model cannot rank; each is timed, none pruned */
	int rows, len;
	int elem_bytes; /* bytes read per element */
	RtDevice dev;
} TuneProblem;

typedef struct {
	int regs, smem, local; /* per thread registers, shared bytes per block, spill bytes */
} TuneResources;

typedef struct {
	void *ctx;
	/* Compile (or fetch) the kernel: its resources; -1 with why on failure. */
	int (*resources)(void *ctx, const Variant *v, TuneResources *r, char *why, size_t n);
	/* Run once and compare with the reference; -1 with why when wrong. */
	int (*validate)(void *ctx, const Variant *v, char *why, size_t n);
	/* Median milliseconds over timed runs after warm-up (L2 flushed between runs). */
	double (*time)(void *ctx, const Variant *v, char *why, size_t n);
	/* Called for each candidate as it is decided (for the progress line). */
	void (*progress)(void *ctx, int done, int total, const Variant *v, double ms, const char *why);
	double bytes; /* bytes moved by one run, for GB/s */
} TuneHooks;

typedef struct {
	Variant var;
	double ms;
	char why[256]; /* empty when timed */
} TuneCandidate;

typedef struct {
	TuneCandidate cand[TUNE_MAX_CANDIDATES];
	int n;
	int best; /* index into cand, -1 when none worked */
	int timed; /* 0 when the model's pick was taken without timing (ASSOC_TUNE=off) */
} TuneResult;

/* Tune over the caller's candidates (the variants of one compiled module,
 * each with its split count; cands is reordered): each one's resources
 * first, then the model keeps the best few (occupancy from registers and
 * shared memory, bytes in flight, busy threads, balanced waves; spills
 * and kernels that fit no SM rule a candidate out), each validated then
 * timed; the fastest wins (ties go to the earlier candidate).  With
 * ASSOC_TUNE=off the model's first valid pick is taken without timing.
 * Every candidate is in res, the ruled-out ones with their reason; 0 when
 * one ran correctly. */
int tune_select_list(const TuneProblem *p, Variant *cands, int n, const TuneHooks *h, TuneResult *res);

/* ---- the cache ---- */

typedef struct {
	char dir[1024];
} TuneCache;

/* dir: NULL for $XDG_CACHE_HOME/assoc/tune or ~/.cache/assoc/tune (created 0700). */
int tc_open(TuneCache *tc, const char *dir, char *err, size_t n);
/* 1 on a hit (value copied), 0 on a miss with the reason in why. */
int tc_get(const TuneCache *tc, const char *key, char *value, size_t n, char *why, size_t wn);
/* Write atomically (temporary file renamed over the entry); -1 with err. */
int tc_put(const TuneCache *tc, const char *key, const char *value, char *err, size_t n);
/* The entry's file name for a key (for tests and diagnostics). */
void tc_path(const TuneCache *tc, const char *key, char *path, size_t n);

#endif
