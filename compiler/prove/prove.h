/* prove.h: the symbolic prover of a carrier's laws (associativity, identity,
 * claimed commutativity, and the certificate when the spec gives one).
 *
 * Each law ends proved, disproved (with a witness confirmed numerically) or
 * unknown (with the reason).  Nothing is reported proved without a proof. */
#ifndef ASSOC_PROVE_H
#define ASSOC_PROVE_H

#include "compiler/front/spec.h"

typedef enum { PROOF_PROVED, PROOF_DISPROVED, PROOF_UNKNOWN } ProofStatus;

typedef struct {
	const char *law; /* "associative", "identity", "commutative", "certificate" */
	ProofStatus status;
	char *how;       /* malloc'd: "13 regions; normal forms equal", "transport into (max, +)", ... */
	/* malloc'd, for an identity proved: the lifts of infinite inputs
	 * (outside the proof's finite states) where it does not hold, with a
	 * witness and what a row of them gives, a warning; NULL where none. */
	char *except;
} ProofLine;

enum { PROOF_MAX_LINES = 8 };

typedef struct {
	ProofLine line[PROOF_MAX_LINES];
	int n;
	char *trace;     /* malloc'd full trace for --proof; NULL unless asked */
	double seconds;
} ProofReport;

/* Free bool params taken case by case, by the prover and by the trials
 * (check_run_cases): at most this many, 2^3 cases. */
enum { BOOL_CASES_MAX = 3 };

/* 0 when the laws were examined (whatever the verdicts), -1 on an internal
 * error.  Bool params are taken case by case (up to BOOL_CASES_MAX), and
 * the bool state fields of a law's operands (up to 64 cases a law). */
int prove_carrier(Carrier *c, int want_trace, ProofReport *r);
/* The same with params fixed to the given values (name=value, as for
 * --param: a number, true or false); the lines name the values.  flags:
 * PROVE_TRACE for the trace, PROVE_BOOLS_OPEN to leave free bool params
 * unsplit (their laws unknown), for a caller whose trials see one case. */
enum { PROVE_TRACE = 1, PROVE_BOOLS_OPEN = 2 };
int prove_carrier_at(Carrier *c, const Define *params, int nparams, int flags, ProofReport *r);
void prove_report_free(ProofReport *r);
/* x[i] = y[i] for i < n, expressions of c's IR over the fields of operands
 * a and b and the params, for every pair of nonempty states of c (finite
 * reals under the sign facts and linear invariants of c's lift and merge;
 * a vector field component by component; bool fields case by case) and
 * every value of the params.
 * names[i] names pair i, lname and rname its sides, in a witness.  how
 * gets the proof, the witness (states folded from rows of c where the
 * sides differ) or why neither was found. */
ProofStatus prove_equal(Carrier *c, Expr *const *x, Expr *const *y, const char *const *names, int n, const char *lname,
			const char *rname, char *how, size_t hn);
const char *prove_status_name(ProofStatus s);
/* Whether c's tiles may be folded in its certificate's coordinates,
 * shifted by their largest element (transport.c, which says what that
 * needs): 1 with what the fold does in why, and moving[f] set for the
 * state fields that move with the element; 0 with the reason.  moving
 * holds TRANSPORT_MAX_FIELDS entries. */
enum { TRANSPORT_MAX_FIELDS = 16 };
int prove_transport(Carrier *c, int *moving, char *why, size_t n);
/* The same for the CPU's vector lanes, which shift the lifted states:
 * the fields that move may be lifted to a scalar float value of several
 * element inputs (h: x + r), which no other field of lift reads. */
int prove_transport_lanes(Carrier *c, int *moving, char *why, size_t n);
/* The same for the CPU's one-lane tiles: fields and coordinates may be
 * vectors of f32, and element inputs beside the one that moves (its index
 * in *elem) stay put. */
int prove_transport_wide(Carrier *c, int *moving, int *elem, char *why, size_t n);
/* A certificate for a carrier that has none, where a field m is the
 * largest element (merge max(a.m, b.m), lift the element, identity -inf)
 * and the other fields are kept relative to it (transport.c says how):
 * out is c with that certificate (has_cert set), to prove with
 * prove_transport like a written one; 1, or 0 with the reason.  Free
 * with transport_frame_free. */
int transport_frame(Carrier *c, Carrier *out, char *why, size_t n);
void transport_frame_free(Carrier *out);

#endif
