/* verdict.h: the one verdict on a carrier, which every command and the
 * library take: its laws by the symbolic prover and by randomized trials,
 * its soundness against the reference (empty and fully masked rows held
 * to the rule `assoc run` holds them to), and one overall status.
 *
 * Callers differ only in the options: how many trials (check's 20000,
 * emit's 2000, run's few hundred), whether the prover runs, whether bool
 * params are taken case by case. */
#ifndef ASSOC_VERDICT_H
#define ASSOC_VERDICT_H

#include "compiler/check/check.h"
#include "compiler/prove/prove.h"

typedef struct {
	CheckOpts check;   /* seed, trial counts, params fixed by --param, soundness on or off */
	int prove;         /* run the symbolic prover */
	int prove_flags;   /* PROVE_TRACE, PROVE_BOOLS_OPEN */
	int prove_any_params; /* the prover leaves every param free, whatever check.params fixes */
	int one_case;      /* trials with bool params drawn once (check_run), not case by case */
	int strict;        /* a law the prover leaves unknown fails */
	/* more than check.trials: the trials again with this many where the
	 * prover leaves a law unknown, the trials its only evidence (run's
	 * few hundred otherwise miss what emit's 2000 find) */
	int unknown_trials;
} VerdictOpts;

/* The overall status: VERDICT_UNKNOWN is a warning (a law the prover could
 * not decide, which the trials did not break); it fails only under strict. */
typedef enum { VERDICT_OK, VERDICT_UNKNOWN, VERDICT_FAILED } VerdictStatus;

/* What the first failure is. */
typedef enum {
	VERDICT_BY_NONE,
	VERDICT_BY_INPUTS,    /* no inputs to try: none drawn where `assume` holds, or every state folded from them NaN */
	VERDICT_BY_TRIALS,    /* a law failed a randomized trial */
	VERDICT_BY_PROOF,     /* the prover disproved a law (or, under strict, left it unknown) */
	VERDICT_BY_REFERENCE, /* the results disagree with the reference on a row with positions */
	VERDICT_BY_EMPTY_ROW  /* ... on an empty or fully masked row */
} VerdictCause;

/* One law: the trials' outcome (NULL for the certificate, which has no
 * trials) and the prover's (NULL without the prover, or where it has no
 * line for the law). */
typedef struct {
	const char *law; /* "identity", "associative", "commutative", "certificate" */
	const LawOutcome *trial;
	const ProofLine *proof;
} VerdictLaw;

typedef struct {
	CheckResult trials; /* the laws' trials, soundness, empty rows, float32 error */
	ProofReport proof;  /* n == 0 without the prover */
	int prove_error;    /* the prover stopped on an internal error: its laws are unknown */
	char cases[320];    /* which bool-param cases the trials ran ("" without bool params) */
	VerdictLaw law[4];
	int nlaw;
	VerdictStatus status;
	VerdictCause cause;
	/* One line on the first failure, or on the first unknown law, naming
	 * the spec and the law or the output (and its empty row); NULL when
	 * everything holds. */
	char *why;
} CarrierVerdict;

/* The verdict before a run (`assoc run`, bench, tune, and the library
 * before it runs), on few trials: a run is meant to take a moment, and
 * check gives a carrier its 20000; emit's 2000 where the prover leaves a
 * law to the trials alone. */
enum { VERDICT_RUN_TRIALS = 300, VERDICT_RUN_ID_TRIALS = 200, VERDICT_RUN_UNKNOWN_TRIALS = 2000 };
/* Options over check (seed, params; its trials, where fewer, cap them)
 * for a verdict before a run: the trials above, the prover, and no
 * special-values rows (check's warning: a run compares the rows it is
 * given). */
VerdictOpts verdict_run_opts(const CheckOpts *check);

/* 0 when the verdict was reached (whatever it is), -1 on a usage error (a
 * --param that names no param or is not a number) with msg set. */
int verdict_run(Carrier *c, const VerdictOpts *o, CarrierVerdict *v, char *msg, size_t n);
/* The trials and the prover's line for law, or NULL. */
const VerdictLaw *verdict_law(const CarrierVerdict *v, const char *law);
int verdict_ok(const CarrierVerdict *v); /* status is not VERDICT_FAILED */
void verdict_free(CarrierVerdict *v);

#endif
