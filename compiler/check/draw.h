/* draw.h: random inputs for the checker, in families that break wrong
 * merges, honouring `assume` by rejection within the bounds it puts on
 * single inputs. */
#ifndef ASSOC_DRAW_H
#define ASSOC_DRAW_H

#include "compiler/check/eval.h"

typedef enum {
	DRAW_NORMAL,  /* N(0, 1) */
	DRAW_GRID,    /* small integers: ties everywhere */
	DRAW_SPREAD,  /* N(0, 1) shifted by up to +-150 per row: maxima far apart, exp past float32's range */
	DRAW_WIDE,    /* N(0, 20) */
	DRAW_MEAN,    /* 1e8 + N(0, 1): catastrophic cancellation */
	DRAW_COUNTS,  /* a state merged with itself up to 30 times: counts to 1e9 */
	DRAW_CONSTS,  /* float inputs at the spec's own constants and next to them, else N(0, 1) */
	NDRAW
} DrawFamily;

extern const char *const draw_family_name[NDRAW];

/* Fill positions [0, r->len) and the row inputs of r; 0 on success, -1 when
 * assume could not be satisfied. */
int draw_row(Machine *m, DrawFamily f, Row *r, uint64_t *rng);
/* The same, keeping r's column inputs when keep_cols is set (columns are
 * shared by every row of an array). */
int draw_row_keep(Machine *m, DrawFamily f, Row *r, int keep_cols, uint64_t *rng);
/* Per input (elements, columns, rows, in declaration order): 1 where it is
 * an integer compared with, added to or taken from i, j or len, which is
 * drawn as a position of the row.  Computed once and kept in m. */
const unsigned char *draw_index_inputs(Machine *m);
/* Whether rows are drawn with a negative i now and then: the carrier
 * reads i and can read a paged cache, where a sequence with more queries
 * than keys has its first queries before position 0.  Computed once and
 * kept in m. */
int draw_negative_i(Machine *m);
/* The nonzero finite float constants of lift, merge and finalize (where a
 * merge saturates, a lift switches, a comparison holds), each once: the
 * values DRAW_CONSTS draws, with their negations, halves, doubles and
 * neighbours.  Computed once and kept in m. */
const double *draw_spec_constants(Machine *m, int *n);
/* Draw one component of an input (rounded to its storage type). */
double draw_value(DrawFamily f, TyKind storage, double offset, int width, uint64_t *rng);
/* A --param value: a number, or true or false (a bool param's); end as strtod's. */
double draw_param_value(const char *s, char **end);
/* "the spec has no param 'tmp' (its params: temp)", or "... (it has
 * none)": the one wording of a name that is none of c's params, for
 * --param and the library alike. */
void draw_param_unknown(const Carrier *c, const char *name, char *msg, size_t n);
/* Params: overrides where given, else drawn from (0.05, 1] (integers from
 * [1, 8]), moved within the bounds that assume puts on a param alone
 * (lg <= 0, temp > 1.5), honouring assume.  -1 with msg where an override
 * is wrong, or where no draw meets a part of assume over params alone that
 * reads a param drawn ("no draw of param lg satisfies 'assume' (lg <= 0):
 * give --param lg=..."). */
int draw_params(Machine *m, const Define *ov, int nov, uint64_t *rng, char *msg, size_t n);
/* A conjunct of assume that reads params alone, each of them one that
 * fixed marks (by param; NULL: every param), and is false at m's params:
 * no input could make assume hold.  1 with msg "param temp = -1 breaks
 * 'assume' (temp > 0)", else 0 (and 0 without an assume). */
int draw_params_break_assume(const Machine *m, const unsigned char *fixed, char *msg, size_t n);

/* A state with its provenance: the fold of positions [lo, hi) of a row in a
 * tree shape, then merged with itself `doublings` times. */
typedef struct Sample {
	DrawFamily fam;
	Row *row;
	int lo, hi;
	Shape shape;
	uint64_t seed;
	int doublings;
	int whole;    /* a row for the reference: whatever state it folds to is compared, NaN too */
	double *v[2]; /* by Mode */
	double *rest[2]; /* the rests of v's i64 fields (ir_int_exact), by Mode */
	/* the same state folded at positions slot * span on (the check's
	 * commutative trials, check.c's place_apart), kept with the sample:
	 * by slot 1 and 2, NULL until asked; placed_bad: not usable there */
	struct Sample *placed[2];
	unsigned char placed_bad[2];
} Sample;

Sample *draw_sample_new(Machine *m, DrawFamily f, uint64_t *rng);
/* A whole row of length len, folded in a random shape. */
Sample *draw_sample_row(Machine *m, DrawFamily f, int len, uint64_t *rng);
/* A short row of the integer grid whose integer inputs that are not
 * positions stand at their type's limits or next to them (INT32_MIN,
 * INT32_MIN + 1, INT32_MAX - 1, INT32_MAX; an i64's where a double holds
 * them), or just past the square root of the limit, of either sign
 * (46341 and 65535 for an i32, whose squares wrap negative; 3037000500
 * and 2^32 - 1 for an i64); where there are several such inputs, each at
 * -1, 0 or 1 in half of the rows instead.  For the identity and law
 * trials; NULL where the carrier has no such input, assume refuses the
 * row, or a float field overflows on it. */
Sample *draw_sample_limits(Machine *m, uint64_t *rng);
/* How many inputs are integers that are not positions (which
 * draw_sample_limits sets to their type's limits). */
int draw_limit_inputs(Machine *m);
/* Where lift or merge converts an integer to a float and some input is
 * an integer that is not a position: the fewest significant bits of the
 * floats it converts to (24 for f32, 53 for f64); else 0. */
int draw_rounding_bits(Machine *m);
/* The same as draw_sample_limits with those inputs next to 2^bits
 * instead, where neighbours convert to one float: the rows whose states
 * tie once converted.  An i32 input stays drawn where 2^bits is past it. */
Sample *draw_sample_near(Machine *m, int bits, uint64_t *rng);
Sample *draw_sample_clone(Machine *m, const Sample *s);
/* Whether a state depends on the positions it folds: a lift (or a loop's
 * step) reads j.  Every fold merges states of disjoint runs of positions;
 * two such states of one position (idx: j tied with idx: j) are no
 * state pair a fold meets.  Computed once and kept in m. */
int draw_reads_position(Machine *m);
/* A copy of s whose positions start at lo, the inputs as they were (the
 * positions before lo copies of its first, the row as much longer), its
 * states folded there; NULL where they are not usable there. */
Sample *draw_sample_at(Machine *m, const Sample *s, int lo);
/* Row r moved shift positions on (the row as much longer; negative:
 * its first positions dropped), the positions before its own copies of
 * its position `from` (the first folded one, which assume admits). */
Row *draw_row_shifted(const Machine *m, const Row *r, int from, int shift);
/* Whether s and t fold some position in common. */
int draw_samples_overlap(const Sample *s, const Sample *t);
void draw_sample_free(Sample *s);
/* Recompute the states from the provenance; 0 when they are usable
 * (no NaN; infinities only where the identity has them; anything for a
 * whole row). */
int draw_sample_eval(Machine *m, Sample *s);

#endif
