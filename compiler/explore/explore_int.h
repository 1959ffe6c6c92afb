/* explore_int.h: the pieces of assoc explore (see explore.c): the loop's
 * view (its state fields plus auxiliary ones), an evaluator for expressions
 * over two states and an element, sample pairs of states whose merge the
 * sequential loop defines, candidates, and the strategies. */
#ifndef ASSOC_EXPLORE_INT_H
#define ASSOC_EXPLORE_INT_H

#include "compiler/util/buf.h"
#include "compiler/check/draw.h"
#include "compiler/check/eval.h"
#include "compiler/explore/explore.h"

enum { EX_MAXF = 12, EX_NPAIR = 96, EX_MAXOUT = 32 };

/* A state field of the loop, or an auxiliary field explore added.  Vars
 * live in the loop's Ir; slot is the field's index in the view. */
typedef struct {
	char name[SPEC_MAX_NAME];
	Ty ty;
	int var[4];       /* by STATE_A, STATE_B, (unused), STATE_SELF */
	double ident;
	Expr *step;       /* the new value after one element on the right (or NULL) */
	Expr *step_right; /* after one element on the left (or NULL) */
	Expr *lift;
	int aux;
} Field;

/* Pairs (s, t) of reachable states and the state the loop reaches from s
 * by the elements of t (for a right loop: from t by the elements of s):
 * the values any merge must give. */
typedef struct {
	int n;
	double a[EX_NPAIR][EX_MAXF], b[EX_NPAIR][EX_MAXF], want[EX_NPAIR][EX_MAXF];
} Pairs;

typedef struct ExEv ExEv;

typedef struct {
	Carrier *c;
	const ExploreOpts *o;
	Machine m;       /* the loop's layout, params and input draws */
	Field f[EX_MAXF];
	int n, norig;
	int right;       /* only step_right: the loop runs right to left */
	uint64_t rng;
	double t0;
	Buf log;
	Pairs pairs;
	struct ExEv *evs[2]; /* the left and right steps of the view */
	ExploreResult *res;
	int out_of_time; /* a strategy stopped at the budget rather than at its end */
} Ex;

/* A carrier under test: fields with vars in the loop's Ir, finalize over
 * the fields' bare vars. */
typedef struct {
	int n;
	char name[EX_MAXF * EX_MAXF + EX_MAXF][SPEC_MAX_NAME];
	Ty ty[EX_MAXF * EX_MAXF + EX_MAXF];
	int va[EX_MAXF * EX_MAXF + EX_MAXF], vb[EX_MAXF * EX_MAXF + EX_MAXF], vs[EX_MAXF * EX_MAXF + EX_MAXF];
	double ident[EX_MAXF * EX_MAXF + EX_MAXF];
	Expr *lift[EX_MAXF * EX_MAXF + EX_MAXF], *merge[EX_MAXF * EX_MAXF + EX_MAXF];
	int nfin;
	const char *finname[EX_MAXOUT];
	Expr *fin[EX_MAXOUT];
	int nmap;
	Expr *map[EX_MAXOUT]; /* the loop's map, over the fields' bare vars */
	int commutative;
} Cand;

/* An evaluator: expressions over a. b. and bare fields of the view (by
 * slot), inputs at a position of a row, params. */
ExEv *ex_ev_new(Ex *x, Expr *const *roots, int n);
void ex_ev_free(ExEv *e);
/* roots' values into out; r may be NULL when no input is used */
void ex_ev_run(Ex *x, ExEv *e, const double *a, const double *b, const double *s, const Row *r, int j, double *out);

double ex_now(void);
double ex_elapsed(Ex *x);
int ex_var(Ex *x, const char *name, int which, int slot, Ty ty);
Expr *ex_num(Ex *x, double v);
/* Fold a row with the loop (left, or right for a right loop) into s (view width). */
void ex_fold(Ex *x, const Row *r, double *s, int right);
/* The same over positions [lo, hi) of r, each at its own j. */
void ex_fold_range(Ex *x, const Row *r, int lo, int hi, double *s, int right);
/* The loop's outputs (its finalize, or its fields) from a view state. */
void ex_outputs(Ex *x, const Row *r, const double *s, double *out);
int ex_pairs(Ex *x);
int ex_close(double v, double want);
/* 1 when e uses only vars of the kinds in mask (bit per VarKind) */
int ex_uses_only(Ex *x, Expr *e, unsigned mask);
int ex_has_state(Ex *x, Expr *e);
int ex_has_elem(Ex *x, Expr *e);
/* The first field whose lift, as the spec gives it, differs from the
 * step from the identity on drawn rows (why: where and by how much), or
 * -1 where none does or the identity is not a constant. */
int ex_lift_disagrees(Ex *x, Buf *why);
/* Evaluate a lift field on random elements: 1 when constant (value in *v). */
int ex_lift_const(Ex *x, int f, double *v);
/* The element input (index) that lift of field f equals, or -1. */
int ex_lift_input(Ex *x, int f);
/* The field whose lift equals e (an expression over the element, params
 * and positions that is not constant) wherever e is finite, or -1: x / tau
 * where lift m = x / tau, j where an argmax's position lifts to j. */
int ex_lift_equal(Ex *x, Expr *e);
void ex_row_text(Ex *x, const Row *r, Buf *b);
void ex_state_text(Ex *x, const double *s, int n, Buf *b);
/* e with var v replaced by r; vars[i] by repl[i]. */
Expr *ex_subst_var(Ex *x, Expr *e, int v, Expr *r);
Expr *ex_subst_vars(Ex *x, Expr *e, int n, const int *vars, Expr *const *repl);
/* A field name no input, param, state field or reserved word has (nor taken[0..ntaken)). */
void ex_fresh_name(Ex *x, const char *base, char (*taken)[SPEC_MAX_NAME], int ntaken, char *out);
/* Forget the cached step evaluators (after the view changed). */
void ex_view_changed(Ex *x);

/* Candidates */
void ex_cand_from_view(Ex *x, Cand *k);
/* 0 when the candidate is a lawful carrier that agrees with the loop; fills
 * the result's proof fields; why explains a failure. */
int ex_cand_verify(Ex *x, Cand *k, char *why, size_t n);
char *ex_cand_yaml(Ex *x, const Cand *k);
/* 1 when the merges give the sample pairs' wanted values */
int ex_cand_fits_pairs(Ex *x, Cand *k, char *why, size_t n);

/* Strategies: 0 found (k filled and verified), 1 not applicable or failed (why). */
int ex_affine(Ex *x, Cand *k, char *why, size_t n);
int ex_inverse(Ex *x, Cand *k, char *why, size_t n);
int ex_generalize(Ex *x, Cand *k, char *why, size_t n);
int ex_enumerate(Ex *x, Cand *k, double deadline, char *why, size_t n);
/* A field that restarts (f' = where(C, f + u, R)) with two fields beside
 * it, the restarts and the field up to the first (explore_restart.c):
 * *applies where one does; 0 found, the fields kept in the view. */
int ex_restart(Ex *x, Cand *k, int *applies, char *why, size_t n);
/* Field f's lift: its step (a right loop's step_right) from the
 * identity, its own and that of the field from it reads (or NULL). */
void ex_aux_lift(Ex *x, Field *f, const Field *from);
/* Add an auxiliary field from the catalogue (index i); 0 when added. */
int ex_aux_add(Ex *x, int i, char *name, size_t n);
void ex_aux_drop(Ex *x);

#endif
