/* tune.h: block-size autotuning and its persistent cache.
 *
 * The candidate space per template is small and structured (threads per
 * row, rows per block, vector width, accumulators per thread, split count,
 * chunk size) and pruned by a model (occupancy from registers and shared
 * memory, parallelism, bytes per thread) before anything is timed.  Every
 * candidate is validated before it is timed; one that fails to compile,
 * launch or validate, or that spills, scores infinity with its reason.
 * The choice is stored in a cache, one record per (configuration, problem
 * key), and frozen: the same inputs give the same configuration and so
 * bit-identical results, run after run. */
#ifndef ASSOC_RT_TUNE_H
#define ASSOC_RT_TUNE_H

#include <stddef.h>

#include "runtime/driver.h"

enum { TUNE_MAX_CANDIDATES = 256 };

/* TUNE_ATTN: compute-bound kernels whose candidates the memory model cannot
 * rank; each is timed (tune_select_list), none pruned. */
typedef enum { TUNE_ROWREDUCE, TUNE_ROWMAP, TUNE_SPLITK, TUNE_SCAN, TUNE_ATTN } TuneTemplate;

typedef struct {
	int threads;        /* threads per row: 32 (a warp) up to 1024 (a block) */
	int rows_per_block; /* rows sharing a block (warp-per-row kernels) */
	int vec;            /* elements per vector load: 1, 2, 4, 8 */
	int acc;            /* independent accumulators per thread */
	int split;          /* blocks per row (splitk), 1 otherwise */
	int chunk;          /* elements per chunk (scan, splitk) */
	int id;             /* the caller's own index of this candidate (a kernel variant) */
} TuneConfig;

typedef struct {
	TuneTemplate tpl;
	int rows, len;
	int elem_bytes;  /* bytes read per element */
	int state_regs;  /* registers one state takes */
	RtDevice dev;
} TuneProblem;

typedef struct {
	int regs, smem, local; /* per thread registers, shared bytes per block, spill bytes */
} TuneResources;

/* A text such as "threads=256 rows=1 vec=4 acc=2 split=1 chunk=0", and back. */
void tune_config_str(const TuneConfig *c, char *buf, size_t n);
int tune_config_parse(const char *s, TuneConfig *c);

/* The candidate space of a problem, in a fixed order. */
int tune_space(const TuneProblem *p, TuneConfig *out, int max);
/* Fraction of the SM's thread slots the configuration can keep resident. */
double tune_occupancy(const TuneProblem *p, const TuneConfig *c, const TuneResources *r);
/* Model score (higher is better); 0 when the model rules the candidate out. */
double tune_model(const TuneProblem *p, const TuneConfig *c, const TuneResources *r);
/* Keep the best `keep` candidates by model score, in score order. */
int tune_prune(const TuneProblem *p, TuneConfig *c, const TuneResources *res, int n, int keep);

typedef struct {
	void *ctx;
	/* Compile (or fetch) the kernel: its resources; -1 with why on failure. */
	int (*resources)(void *ctx, const TuneConfig *c, TuneResources *r, char *why, size_t n);
	/* Run once and compare with the reference; -1 with why when wrong. */
	int (*validate)(void *ctx, const TuneConfig *c, char *why, size_t n);
	/* Median milliseconds over timed runs after warm-up (L2 flushed between runs). */
	double (*time)(void *ctx, const TuneConfig *c, char *why, size_t n);
	/* Called for each candidate as it is decided (for the progress line). */
	void (*progress)(void *ctx, int done, int total, const TuneConfig *c, double ms, const char *why);
	double bytes; /* bytes moved by one run, for GB/s */
} TuneHooks;

typedef struct {
	TuneConfig cfg;
	double ms;
	char why[256]; /* empty when timed */
} TuneCandidate;

typedef struct {
	TuneCandidate cand[TUNE_MAX_CANDIDATES];
	int n;
	int best; /* index into cand, -1 when none worked */
	int timed; /* 0 when the model's pick was taken without timing (ASSOC_TUNE=off) */
} TuneResult;

/* Tune: model-pruned candidates, each validated then timed; the fastest
 * wins (ties go to the earlier candidate).  With ASSOC_TUNE=off the model's
 * first valid pick is taken without timing. */
int tune_select(const TuneProblem *p, const TuneHooks *h, TuneResult *res);
/* The same over the caller's own candidates (for example the variants that
 * one compiled module holds); cands is reordered. */
int tune_select_list(const TuneProblem *p, TuneConfig *cands, int n, const TuneHooks *h, TuneResult *res);

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
