/* eval.h: a carrier evaluated on concrete rows by the IR interpreter:
 * identity, lift, merge, folds in any tree shape, finalize, map, and the
 * naive evaluation of the spec's reference.  The checker's ground truth. */
#ifndef ASSOC_EVAL_H
#define ASSOC_EVAL_H

#include "compiler/front/spec.h"
#include "compiler/util/rng.h"

/* One row of inputs.  Column inputs belong to the row here: each drawn row
 * comes with its own keys and values.  Where a kind of input has an i64
 * among its declarations, its rests (ir_int_exact) lie beside its values,
 * 0 where the double holds the value (NULL: no i64 there). */
typedef struct {
	int i, len;
	int len_name;  /* the value of the name len where the positions are fewer (a scan's prefix); 0: len */
	double *rowv;  /* row inputs */
	double *colv;  /* len x column width */
	double *elemv; /* len x element width */
	double *rowrest, *colrest, *elemrest;
} Row;

typedef enum { SHAPE_LEFT, SHAPE_RIGHT, SHAPE_BALANCED, SHAPE_RANDOM, NSHAPES } Shape;

/* Integers exact: a double holds an i64 past 2^53 only rounded, and the
 * functions below that take and give rests beside the values (rest, ar,
 * br, sr, outr: of each component, ir_int_exact's rest; NULL for none)
 * keep every integer exact from the inputs to the outputs, as the devices
 * do.  Those without (rests of 0 in, none out) hold a state's i64 past
 * 2^53 as the double does, where a fold's next merge loses its low bits;
 * eval_fold keeps them inside the fold.  The reference's sums of integers
 * are exact either way, in 64 bits (reduce in eval.c). */
typedef struct RefEval RefEval;
typedef struct Bound Bound;

typedef struct {
	Carrier *c;
	int sw, *soff;            /* state width and field offsets */
	int roww, colw, elemw, pw;
	int *rowoff, *coloff, *elemoff, *poff;
	int finw, *finoff;        /* finalize outputs */
	int mapw, *mapoff;        /* map outputs */
	int refw, *refoff;        /* reference values, per row or per position */
	double *params;
	Bound *lift, *merge, *fin, *map, *assume, *mask;
	double *ident[2];         /* identity state by mode */
	RefEval *ref;
	double *scratch;
	unsigned range;           /* PROG_* events of the merges since it was last cleared */
	unsigned char *index_in;  /* draw_index_inputs' flags, once computed */
	double *consts;           /* draw_spec_constants' values, once computed (NULL before) */
	int nconsts;
	signed char neg_i;        /* draw_negative_i's answer, once computed (0 before, then 1 or -1) */
	signed char reads_j;      /* draw_reads_position's answer, once computed (0 before, then 1 or -1) */
} Machine;

int eval_init(Machine *m, Carrier *c);
void eval_free(Machine *m);

Row *eval_row_new(const Machine *m, int len);
void eval_row_free(Row *r);

/* Float32 constants rounded as the spec declares them: with on, float64
 * evaluations carry the error of that rounding (prog_const_rounding). */
void eval_const_rounding(Machine *m, int on);
/* With on, the carrier's own programs (not the reference's) convert an
 * integer to f32 rounded in float64 too (prog_int_rounding). */
void eval_int_rounding(Machine *m, int on);
void eval_identity(Machine *m, Mode mode, double *v, double *e);
int eval_masked(Machine *m, const Row *r, int j);
int eval_assume(Machine *m, const Row *r, int j); /* 1 when assume holds (or is absent) */
void eval_lift(Machine *m, Mode mode, const Row *r, int j, double *v, double *e);
void eval_lift_exact(Machine *m, Mode mode, const Row *r, int j, double *v, double *e, double *rest);
void eval_merge(Machine *m, Mode mode, const double *av, const double *ae, const double *bv, const double *be,
	     double *v, double *e);
void eval_merge_exact(Machine *m, Mode mode, const double *av, const double *ae, const double *ar, const double *bv,
		      const double *be, const double *br, double *v, double *e, double *rest);
/* Position j of r merged into the state (v, e, rest) on its right, as a
 * device's thread folds, lifted first; a masked position leaves it as it
 * is.  The merge reads its sides before it writes, so the state is both.
 * l: room for the lift (3 m->sw). */
void eval_step_exact(Machine *m, Mode mode, const Row *r, int j, double *v, double *e, double *rest, double *l);
/* Fold positions [lo, hi) of r; SHAPE_RANDOM draws split points from *rng. */
void eval_fold(Machine *m, Mode mode, const Row *r, int lo, int hi, Shape shape, uint64_t *rng, double *v,
	    double *e);
void eval_fold_exact(Machine *m, Mode mode, const Row *r, int lo, int hi, Shape shape, uint64_t *rng, double *v,
		     double *e, double *rest);
/* Where eval_fold splits [lo, hi) (hi - lo >= 2) into [lo, k) and [k, hi),
 * folding the left part first: a fold's grouping can be retraced by
 * drawing the same splits. */
int eval_fold_split(int lo, int hi, Shape shape, uint64_t *rng);
void eval_finalize(Machine *m, Mode mode, const Row *r, const double *sv, const double *se, double *out,
		double *oute);
void eval_finalize_exact(Machine *m, Mode mode, const Row *r, const double *sv, const double *se, const double *sr,
			 double *out, double *oute, double *outr);
void eval_map(Machine *m, Mode mode, const Row *r, int j, const double *sv, const double *se, double *out,
	   double *oute);
void eval_map_exact(Machine *m, Mode mode, const Row *r, int j, const double *sv, const double *se, const double *sr,
		    double *out, double *oute, double *outr);
/* Reference, naively (sums left to right) in float64, or in the spec's
 * types for MODE_F32, with running error bounds (in float32, a sum whose
 * terms cancel counts its other orders too: add_cancellation in eval.c):
 * per-row values into rowv (refw wide, per-position slots unused);
 * per-position values into posv[j * refw + refoff[k]] for each position. */
void eval_reference(Machine *m, Mode mode, const Row *r, double *rowv, double *rowe, double *posv, double *pose);
void eval_reference_exact(Machine *m, Mode mode, const Row *r, double *rowv, double *rowe, double *rowr, double *posv,
			  double *pose, double *posr);

#endif
