/* check.h: randomized law trials and soundness against the reference.
 *
 * States are drawn as folds of random rows (so invariants such as l >= 1 or
 * a whole-number count hold), from several input families chosen to break
 * wrong merges: tied maxima, maxima spread over +-80, huge means, huge
 * counts, masked segments, random fold trees.  A failure is minimized and
 * reported in the spec's own terms. */
#ifndef ASSOC_CHECK_H
#define ASSOC_CHECK_H

#include <stdint.h>

#include "compiler/front/spec.h"

typedef struct {
	uint64_t seed;
	int trials;    /* associativity and commutativity trials */
	int id_trials; /* identity trials per mode */
	const Define *params; /* name=value overrides of params */
	int nparams;
	int case_params; /* of those, the last this many are a case's bool params (check_run_cases), not the caller's */
	int no_sound;  /* leave out soundness against the reference */
	int special_rows; /* rows holding NaN, infinities, -0 or values near FLT_MAX (0: none) */
} CheckOpts;

typedef enum { VERDICT_HOLDS, VERDICT_FAILS, VERDICT_NA } Verdict;

typedef struct {
	const char *law; /* "identity", "associative", "commutative" */
	Verdict v;
	int trials;      /* trials run */
	int typed_trials; /* of those, compared in the spec's types too (float32 fields rounded) */
	int skipped;     /* trials drawn again: their merges left the float range */
	double range_at; /* the smallest largest-operand magnitude among those */
	char *detail;    /* when it fails: one line naming the field */
	char *cex;       /* when it fails: the counterexample, several lines */
	char *json;      /* when it fails: the counterexample as a JSON object */
	/* The identity where it holds but at lifts of infinite inputs that tie
	 * with the identity's own infinite value (edge.c): a warning naming
	 * them and what a row of them gives, and its witness as a JSON object;
	 * NULL where there is no such lift. */
	char *except, *except_json;
} LawOutcome;

typedef struct {
	char *name;
	double rel;     /* worst relative error of the carrier in float32 */
	double naive;   /* the same for the reference evaluated naively in float32 */
	const char *family;
	int defined;    /* 0 when no row gave a finite reference */
	int compared;   /* finite reference values compared on rows that are not empty */
	int compared_empty; /* values compared on rows with no unmasked position, neither side NaN */
} ErrOutcome;

/* What the carrier does on rows whose float element and column inputs hold
 * NaN, +-inf, -0 or values near FLT_MAX among ordinary ones.  A warning,
 * never a failure: the laws are over the reals, where a merge may treat a
 * NaN as it likes; but then devices, each grouping the fold its own way,
 * may give different results on such rows. */
typedef struct {
	int inputs;        /* float components of element, column and row inputs (0: nothing to try) */
	int rows;          /* rows drawn holding a special value where `assume` holds */
	int law_fails;     /* not tried: a law fails on ordinary values already */
	Verdict grouping;  /* one accumulator against trees of them, commuted, an identity merged in; NA without rows */
	char *group_detail, *group_cex, *group_json;
	Verdict reference; /* special-ness and values against the reference; NA without one or without rows */
	char *ref_detail, *ref_cex, *ref_json;
} SpecialOutcome;

typedef struct {
	LawOutcome law[3];
	int nlaw;
	Verdict sound;   /* VERDICT_NA without a reference */
	int rows, max_len;
	char *sound_detail, *sound_cex, *sound_json;
	int sound_empty; /* the failing row has no unmasked position (empty, or fully masked) */
	int empty_rows, masked_rows; /* rows compared with no position, and with every position masked */
	char **notes;    /* what outputs are on an empty row */
	int nnotes;
	ErrOutcome *err;
	int nerr;
	/* no sample could be folded, and why: a part of `assume` over params
	 * alone is false at the values given, or no inputs were drawn where
	 * it holds (input_assume set: the params rule out every input), or
	 * every state folded from the inputs drawn holds NaN or an infinity
	 * (a NaN param in every lift) */
	char *input_error;
	int input_assume;
	SpecialOutcome special;
	/* The carrier in the spec's types against the tolerance of `assoc
	 * run` (accuracy.c) on the soundness rows and a few hard ones: FAILS
	 * (a warning) where a finite value is beyond it, with the shrunk row;
	 * NA without a reference or where soundness fails.  NaN or an
	 * infinity where the reference is finite fails soundness instead. */
	Verdict accuracy;
	char *acc_detail, *acc_cex, *acc_json;
	double seconds;
} CheckResult;

void check_defaults(CheckOpts *o);
/* 0 when the checks ran (whatever they found), -1 on a usage error (a
 * param override that names no param or is not a number, or values of
 * the caller's that break a part of `assume` over params alone:
 * "param temp = -1 breaks 'assume' (temp > 0)"), with msg set. */
int check_run(Carrier *c, const CheckOpts *o, CheckResult *r, char *msg, size_t n);
/* check_run once for each case of the bool params that o->params leaves
 * free (every case of up to 4, else all true, each false alone and all
 * false): r is the first case that fails, else
 * the last the assume admits.  cases (empty without bool params) says
 * which: "with flag=false, the first of 2 cases ... that fails". */
int check_run_cases(Carrier *c, const CheckOpts *o, CheckResult *r, char *cases, size_t ncases, char *msg, size_t n);
int check_ok(const CheckResult *r);
/* Whether c's positions may be folded in any order (the CPU's vector
 * lanes, the GPU's row templates), with how that is known, or why not, in
 * why: claimed; else, not for a scan, a+b = b+a over the reals, by the
 * merge's form or proved (prove_equal), and on rows holding NaN, +-inf
 * and -0 the two orders give the same state and outputs, as values (NaN
 * as NaN, -0 as 0).  Deterministic: the rows come from a fixed seed; so
 * the answer is found at c's first call and kept on c (commutes_found),
 * later calls (every kernel's planning, every emulator module) take it. */
int check_commutes(Carrier *c, char *why, size_t n);
/* Whether the identity leaves every lift as it is, e+a = a bit for bit
 * (so that a fold may start from a position's lift instead of merging it
 * onto the identity), with how that is known, or why not, in why: e+a =
 * a proved over the reals (prove_equal), and e+e = e and e+a = a, NaN as
 * NaN and -0 apart from 0, at the lifts of rows holding NaN, +-inf and
 * -0 in both modes, the params case by case.  Deterministic. */
int check_lifts_neutral(Carrier *c, char *why, size_t n);
/* The rule for an output value and its reference where either is not
 * finite, which `assoc run` (runcheck.c) and the trials on rows holding
 * NaN or infinities share: a NaN is matched by a NaN only, an infinity by
 * the same infinity.  1 when they agree, 0 when not, -1 when both are
 * finite (to be compared within a tolerance). */
int check_special_match(double got, double want);
/* |got - want| for an integer output, each value with its rest
 * (ir_int_exact), which `assoc run` and check share: exactly where want
 * is a whole number (an integer reference; a float one may have a
 * fraction), as the double nearest the integers' distance, so that an
 * i64 past 2^53 one away from the reference is 1 away, not 0. */
double check_int_distance(double got, double gotr, double want, double wantr);
/* The same rule on an empty or fully masked row, which `assoc run` and the
 * soundness trials share: there a NaN reference (0/0 over no position) takes
 * any value. */
int check_special_agree(double got, double want);
/* The tolerance `assoc run` holds a float output to (runcheck.c has the
 * reasons), which check's float32 accuracy pass holds the carrier to
 * alike: |got - want| <= 2 * naive_err + 32 float32 ulps of scale, the
 * output's largest magnitude in its row.  naive_err is how far a naive
 * float32 evaluation of the value may be off (check_naive_error). */
double check_tolerance(double naive_err, double scale);
/* naive_err from the naive float32 value naive and its running bound
 * (in float32 units; eval_reference's, which counts a cancelling sum's
 * other orders): its actual error, but at least the bound's share
 * (check_bound_share); the bound alone where naive overflowed.  With
 * fold, naive is instead the carrier's own float32 fold, which stands in
 * where the naive formula overflowed: its actual error, up to 2^-10 of
 * scale (bound unused). */
double check_naive_error(double want, double naive, double bound, double share, double scale, int fold);
/* How far the carrier's own algorithm in float32 may be off where the
 * float64 reference is 0 within its own bound wante, as a naive_err beside
 * the reference's: the running bound fold32e (float32 units) of its
 * float32 left fold, in its share, where its float64 fold (fold, with its
 * bound folde) agrees with the reference as the soundness rows hold it; 0
 * elsewhere.  A value of 0 has no scale for the 32 ulps of the tolerance,
 * and the naive formula's bound may vanish with it: a variance kept by the
 * update w * delta * (x - mean) / sw rounds at u x^2 on one position, where
 * the two-pass reference (x - mean)^2 rounds at u^2 x^2.  Only at 0: a
 * naive sqrt(q/n - (s/n)^2) on rows of a large mean and a small spread has
 * a bound as large as its loss, which must still show.  Only where the
 * carrier is right over the reals: a wrong lift, merge or finalize sets no
 * tolerance of its own. */
double check_own_error(double fold, double folde, double want, double wante, double fold32e, double share);
/* The share of a running bound that counts on a row of n positions:
 * rounding errors of random sign add up as sqrt(n). */
double check_bound_share(int n);
/* The share for a value want of running bound `bound` (float32 units)
 * on n positions: n is at most twice the bound in roundings at want's
 * scale, about the positions whose errors reach it whole.  A sum keeps
 * n (its bound holds about n/2 roundings of its own scale); a state that
 * decays by b a position holds those of about 1/(1 - b) whatever n: an
 * Adam scan's second moment (b = 0.999) at position 941154 of 1000003
 * failed at 1.33 of tolerance in a share of 6/sqrt(941155).
 * Never a larger n: a value whose roundings are larger than its own
 * scale (a cancelling sum) keeps n. */
double check_value_share(int n, double bound, double want);
void check_result_free(CheckResult *r);

#endif
