/* cputest.h: helpers of the CPU backend's suites (test_cpu.c, test_cpuhost.c). */
#ifndef ASSOC_CPUTEST_H
#define ASSOC_CPUTEST_H

#include <criterion/criterion.h>

#include "compiler/devices/run.h"
#include "compiler/llvm/llvm.h"

/* c compiled for the CPU with options o (NULL: the plan's own). */
static inline LlvmKernel *compiled(Carrier *c, const LlvmOpts *o)
{
	LlvmKernel *k;
	char msg[600];
	cr_assert_eq(llvm_compile(c, o, &k, msg, sizeof msg), 0, "%s: %s", c->name, msg);
	return k;
}

/* d's outputs against its float64 reference, by the shared rule of
 * runcheck_run (compiler/devices/runcheck.c), NaN and infinity included;
 * through checker k where not NULL. */
static inline void expect_ok_by(RunChecker *k, RunData *d, const char *what)
{
	RunCheck rc;
	if (k)
		runchecker_run(k, d, &rc);
	else
		runcheck_run(d, &rc);
	for (int o = 0; o < rc.nout; o++) {
		OutCheck *x = &rc.out[o];
		cr_expect(!x->nan_mismatch, "%s: %s: %d NaN or infinity mismatches (at %zu)", what, x->name,
			  x->nan_mismatch, x->at);
		cr_expect(x->worst_ratio <= 1, "%s: %s: %g of tolerance (worst at %zu, error %g)", what, x->name,
			  x->worst_ratio, x->at, x->max_abs);
	}
	runcheck_free(&rc);
}

static inline void expect_ok(RunData *d, const char *what) { expect_ok_by(NULL, d, what); }

/* A checker of c that keeps rows (runchecker_keep): runs of the same
 * inputs checked one after another through it (threads, splits, lanes)
 * evaluate the float64 reference once. */
static inline RunChecker *kept_checker(Carrier *c)
{
	RunChecker *k = runchecker_new(c);
	runchecker_keep(k);
	return k;
}

#endif
