/* explore.h: `assoc explore`: from a sequential loop (a loop spec: step,
 * step_right, inverse), find a merge that makes it a carrier, verify it
 * with the trials and the prover, and write the carrier spec. */
#ifndef ASSOC_EXPLORE_H
#define ASSOC_EXPLORE_H

#include <stdint.h>

#include "compiler/prove/prove.h"
#include "compiler/front/spec.h"

typedef struct {
	uint64_t seed;
	double budget;  /* CPU seconds of the calling thread for the whole search */
	int trials;     /* law trials per candidate */
	const Define *params; /* name=value overrides of params */
	int nparams;
} ExploreOpts;

typedef enum {
	EXPLORE_FOUND,          /* a verified carrier, in yaml */
	EXPLORE_NONE,           /* nothing found within the budget */
	EXPLORE_NOT_SPLITTABLE, /* the left and right folds disagree (cex) */
	EXPLORE_INVALID,        /* the spec is not a loop explore can read (why in log) */
} ExploreStatus;

typedef struct {
	ExploreStatus status;
	char *log;       /* what was tried, one line per strategy ("  name: outcome\n") */
	char *yaml;      /* the carrier spec when found */
	const char *strategy; /* the strategy that found it */
	char *aux;       /* auxiliary fields added ("sum"), or NULL */
	char *cex;       /* the folds' counterexample, or the wrong inverse's */
	int inverse_wrong;
	ProofStatus assoc, ident, comm; /* the prover on the found carrier (comm: PROOF_UNKNOWN when not claimed) */
	int commutative; /* laws: [commutative] was proved and written */
	double seconds;
} ExploreResult;

void explore_defaults(ExploreOpts *o);
/* 0 when the loop was explored (whatever came of it), -1 on a usage error
 * (a bad --param) with the reason in r->log. */
int explore_run(Carrier *loop, const ExploreOpts *o, ExploreResult *r);
/* The first state field explore cannot derive a merge for (it takes
 * scalar floats, integers and bools), or -1. */
int explore_unfit_field(const Carrier *c);
void explore_result_free(ExploreResult *r);

#endif
