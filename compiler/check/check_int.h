/* check_int.h: what check.c, sound.c, special.c and cex.c share. */
#ifndef ASSOC_CHECKINT_H
#define ASSOC_CHECKINT_H

#include <stdint.h>
#include <stdlib.h>

#include "compiler/util/buf.h"
#include "compiler/check/check.h"
#include "compiler/check/draw.h"

/* n zeroed doubles (one where n is 0); out of memory aborts, as the
 * checker does everywhere. */
static inline double *check_doubles(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof *p);
	if (!p)
		abort();
	return p;
}

/* The cases of nfree free bool params that the trials take, each its
 * own: every assignment up to CASES_ALL params (16 cases), past that all
 * true, each false alone, each pair false (up to CASES_PAIRS params: a
 * law that breaks where two flags are off) and all false, so that every
 * param is false in some case; at most CASES_FREE_MAX are free, the rest
 * drawn true.  The case at's mask has bit i set where free param i is
 * true. */
enum { CASES_ALL = 4, CASES_PAIRS = 8, CASES_FREE_MAX = 30 };
int check_case_count(int nfree);
uint32_t check_case_mask(int at, int nfree);

typedef enum { T_ASSOC, T_COMM, T_ID_LEFT, T_ID_RIGHT, T_ID_SELF, T_SOUND, NTRIAL } TrialKind;

typedef struct {
	TrialKind kind;
	Mode mode;
	int typed_only; /* in the spec's types where float64 holds: a failure must hold there too */
	double *l, *le, *r, *re; /* both sides and their error bounds */
} Trial;

typedef struct {
	Machine *m;
	const CheckOpts *o;
	Sample **pool[NDRAW];
	int npool[NDRAW];
	DrawFamily fams[NDRAW]; /* families with samples */
	int nfams;
	int nonempty; /* samples that fold at least one element */
	int span;     /* past every pool sample's last position: place_apart's slots */
	double *tmp, *zero, *l, *le, *r, *re;
	double *lr, *rr; /* the rests of a trial's sides (l, r: its i64 past 2^53, ir_int_exact) */
	uint64_t rng;
	int typed; /* some state field is f32: the spec's types differ from float64 */
	void *work; /* sound.c's buffers while it shrinks a row */
} Ck;

double check_unit_roundoff(Mode mode);
int check_values_agree(double x, double ex, double y, double ey, double u);
int check_trial_eval(Ck *k, Trial *t, Sample **s);
int check_trial_arity(TrialKind kind);
void check_soundness(Ck *k, CheckResult *r);
/* One row held to the soundness trials' rule (s is freed): 1 where it
 * fails, with r's soundness verdict and witness set as check_soundness
 * sets them. */
int check_sound_row(Ck *k, Sample *s, CheckResult *r);
/* The carrier in the spec's types held to `assoc run`'s tolerance
 * (accuracy.c): rows of up to maxlen positions, and its own hard rows. */
typedef struct Accuracy Accuracy;
Accuracy *check_accuracy_new(Ck *k, int maxlen);
/* The reference of a row in float64, and in float32 with its bounds, as
 * sound.c has them already. */
typedef struct {
	const double *refv, *refe, *ref32, *ref32e, *posv, *pose, *pos32, *pos32e; /* refe, pose: float64's bounds */
	const double *refr, *posr; /* the rests of refv's and posv's integers (ir_int_exact) */
} AccRefs;
/* One whole row (s is left as it is), folded in its own tree in the spec's
 * types; refs: its references, or NULL to compute them. */
void check_accuracy_row(Ck *k, Accuracy *a, const Sample *s, const char *kind, const AccRefs *refs);
/* Rows of one large value repeated, a large offset plus small noise, and
 * values over many orders of magnitude, thousands of positions long. */
void check_accuracy_hard_rows(Ck *k, Accuracy *a);
/* r->accuracy and its witness; where a value was NaN or infinite against
 * a finite reference, r's soundness verdict and witness instead. */
void check_accuracy_report(Ck *k, Accuracy *a, CheckResult *r);
void check_accuracy_free(Accuracy *a);
/* The identity at a state that holds the identity's own infinite value in
 * some component (a lift of -inf beside an identity of m = -inf), which
 * the proofs, over finite states, do not reach (edge.c): 1 where e+a or
 * a+e differs from a there, neither side NaN. */
int check_identity_tie(Machine *m, Mode md, const double *a);
/* Lifts of infinite element inputs that tie so: 1 with *detail (and
 * *json unless NULL) set, malloc'd, naming the lifts, the side that
 * differs and what a row of such elements gives; 0 where there is none. */
int check_identity_edge(Machine *m, uint64_t *rng, char **detail, char **json);
/* Rows holding special values (special.c): fills r->special. */
void check_specials(Ck *k, CheckResult *r);
/* The reference output named name (per row or per position), or -1. */
int check_ref_index(Carrier *c, const char *name, int per_row);
void check_shrink(Ck *k, Trial *t, Sample **s, int (*still_fails)(Ck *, Trial *, Sample **));
/* The law o fails at t on s (copied): shrunk, described, o's verdict FAILS. */
void check_fail_law(Ck *k, LawOutcome *o, Trial *t, Sample **s);

/* Counterexample text and JSON in the spec's terms (cex.c). */
void cex_describe(Ck *k, LawOutcome *o, Trial *t, Sample **s, int at, const char *const side[2]);
void cex_state(Buf *b, Machine *m, const double *v, int mark);
void cex_state_json(Buf *b, Machine *m, const double *v);
/* The same with the rests of v's i64 components (ir_int_exact; NULL: none),
 * so that an integer past 2^53 is written as the integer it is. */
void cex_state_exact(Buf *b, Machine *m, const double *v, const double *rest, int mark);
void cex_state_json_exact(Buf *b, Machine *m, const double *v, const double *rest);
void cex_inputs(Buf *b, Machine *m, const Row *r, int lo, int hi);
/* "    row of x = [...]": a witness's whole row, or its length where it
 * is long, after the params' line. */
void cex_row(Buf *b, Machine *m, const Row *r);
/* "params: eps = 1e-05, ...", the values the trials ran at; nothing
 * for a carrier without params.  The JSON form is a member and its
 * comma, "\"params\": {...}, ", to open an object with. */
void cex_params(Buf *b, Machine *m);
void cex_params_line(Buf *b, Machine *m); /* "    params: ...\n" */
void cex_params_json(Buf *b, Machine *m);
/* "l" or "o[3]": the name of state component k. */
void cex_component(Buf *b, Machine *m, int k);
/* A value of an output or a reference: a whole number in full, with its
 * rest (ir_int_exact: 9007199254738942, which 9 digits would show as
 * 9.00719925e+15), where integer; else to digits; NaN as "NaN". */
void cex_value(Buf *b, int integer, double v, double rest, int digits);

#endif
