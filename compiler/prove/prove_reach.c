/* prove_reach.c: states that folds of real inputs reach, for disproofs.
 *
 * A region where the two sides of a law differ as rational functions is a
 * disproof only if some reachable state lies in it: the prover's operands
 * range over all reals with the inferred invariants, and a point of the
 * region may break an invariant the prover does not know (max_subarray's
 * q >= s).  The states here are folds of short rows drawn as the trials draw
 * them (small integers for ties, normal values), honouring assume and mask;
 * a witness made of them is a counterexample the generated code can meet. */
#include "compiler/prove/prove_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/check/check_int.h"
#include "compiler/check/draw.h"

enum { REACH_PER_TIER = 192, REACH_TRIES = 24000, SEED_VALS = 96, SEED_STATES = 1024, SEED_PAIRS = 4,
       SEED_TRIES = 12000 };

struct Reach {
	Machine m;
	int n;        /* states in the pool */
	int tier[3];  /* the states of tiers 0..k are the first tier[k] */
	double *st;   /* n states of m.sw components, float64 */
	/* Seeds: folds of rows of one or two elements whose inputs are chosen
	 * values (the spec's constants and their neighbours, a witness's field
	 * values): the states at a carrier's edges, which drawn rows rarely
	 * reach (a sum past its saturation bound, a lift equal to a constant a
	 * merge compares with). */
	double vals[SEED_VALS];
	int nvals;
	int nseed;
	double *seed; /* nseed states of m.sw components */
	/* Where a state depends on its positions (draw_reads_position): the
	 * runs [lo, hi) each state and seed folds, two ints a state.  Every
	 * fold merges states of disjoint runs; a witness of two states of one
	 * position (argmax states tied in m and idx, with different values) is
	 * one no fold meets.  The pool and the seeds hold each state also
	 * folded at positions further on, so that disjoint ones are many. */
	int *span, *seedspan;
	int pos;
	uint64_t rng;
};

/* How far on a position-dependent state is folded again: past the
 * positions of the drawn rows (up to 43) and of the seeds' (up to 2). */
static const int pool_shift[] = {44, 88}, seed_shift[] = {4, 8};
enum { NSHIFT = 2 };

static int finite_state(const double *v, int n)
{
	for (int k = 0; k < n; k++)
		if (!isfinite(v[k]))
			return 0;
	return 1;
}

static void reach_add1(Reach *rs, Sample *s)
{
	int sw = rs->m.sw;
	if (s && finite_state(s->v[MODE_F64], sw)) {
		rs->span[2 * rs->n] = s->lo, rs->span[2 * rs->n + 1] = s->hi;
		memcpy(rs->st + (size_t)rs->n++ * sw, s->v[MODE_F64], sw * sizeof *rs->st);
	}
	draw_sample_free(s);
}

static void reach_add(Reach *rs, Sample *s)
{
	for (int k = 0; s && rs->pos && k < NSHIFT && s->hi > s->lo; k++)
		reach_add1(rs, draw_sample_at(&rs->m, s, s->lo + pool_shift[k]));
	reach_add1(rs, s);
}

/* Folds of drawn rows, in tiers tried in turn: rows of one to three small
 * integers (ties, and witnesses that read well), then the trials' own
 * draws of small integers and of normal values (strict orders).  Only
 * finite states join: the prover's regions are over finite values. */
static void reach_fill(Reach *rs, uint64_t *rng)
{
	static const DrawFamily fams[] = {DRAW_GRID, DRAW_GRID, DRAW_NORMAL};
	int per = REACH_PER_TIER * (rs->pos ? 1 + NSHIFT : 1);
	rs->st = malloc((size_t)3 * per * (rs->m.sw ? rs->m.sw : 1) * sizeof *rs->st);
	rs->span = malloc((size_t)3 * per * 2 * sizeof *rs->span);
	if (!rs->st || !rs->span)
		abort();
	for (int k = 0; k < 3; k++) {
		/* each draw adds up to 1 + NSHIFT states: room for the last */
		int stop = rs->n + per - (rs->pos ? NSHIFT : 0);
		for (int t = 0; t < 4 * REACH_PER_TIER && rs->n < stop; t++)
			reach_add(rs, k ? draw_sample_new(&rs->m, fams[k], rng)
					: draw_sample_row(&rs->m, fams[k], 1 + (int)(rng_next(rng) % 3), rng));
		rs->tier[k] = rs->n;
	}
}

/* ---- seeds ---- */

/* Set input component dst to v where its type holds v; 0 where it does not. */
static int set_input(const Decl *d, double *dst, double v)
{
	double x = ir_round(d->storage, v);
	if (!isfinite(x) || (ty_is_int(d->ty) && !ir_holds((TyKind)d->storage, v)))
		return 0;
	*dst = x;
	return 1;
}

/* Element j's inputs at value v: every one (only = -1) or input only. */
static int set_element(Reach *rs, Row *r, int j, double v, int only)
{
	Machine *m = &rs->m;
	const Carrier *c = m->c;
	int any = 0;
	for (int k = 0; k < c->nelem; k++)
		if (only < 0 || only == k)
			for (int t = 0; t < spec_decl_width(&c->elem[k]); t++)
				any |= set_input(&c->elem[k], r->elemv + (size_t)j * m->elemw + m->elemoff[k] + t, v);
	return any;
}

/* The fold of row r of len elements into the seeds where it is finite
 * and new. */
static void seed_state_at(Reach *rs, Row *r, int lo, int len)
{
	Machine *m = &rs->m;
	if (rs->nseed == SEED_STATES)
		return;
	double *st = rs->seed + (size_t)rs->nseed * m->sw, *e = malloc(m->sw * sizeof *e);
	if (!e)
		abort();
	uint64_t rng = rs->rng;
	eval_fold(m, MODE_F64, r, lo, lo + len, SHAPE_LEFT, &rng, st, e);
	free(e);
	int fresh = finite_state(st, m->sw);
	for (int i = 0; fresh && i < rs->nseed; i++) /* a clamp makes many rows one state */
		fresh = memcmp(rs->seed + (size_t)i * m->sw, st, m->sw * sizeof *st) != 0;
	rs->seedspan[2 * rs->nseed] = lo, rs->seedspan[2 * rs->nseed + 1] = lo + len;
	rs->nseed += fresh;
}

/* The fold of row r's first len positions, and where a state depends on
 * them, of the same inputs further on. */
static void seed_state(Reach *rs, Row *r, int len)
{
	seed_state_at(rs, r, 0, len);
	for (int k = 0; rs->pos && len && k < NSHIFT; k++) {
		Row *t = draw_row_shifted(&rs->m, r, 0, seed_shift[k]);
		int ok = 1;
		for (int j = seed_shift[k]; ok && j < seed_shift[k] + len; j++)
			ok = eval_assume(&rs->m, t, j);
		if (ok)
			seed_state_at(rs, t, seed_shift[k], len);
		eval_row_free(t);
	}
}

/* The fold of a row of len elements at values v[0..len) (NULL: as
 * drawn), into the seeds when the row is one assume admits and the state
 * is finite. */
static void seed_row(Reach *rs, const double *v, int len, int only)
{
	Machine *m = &rs->m;
	if (rs->nseed == SEED_STATES)
		return;
	Row *r = eval_row_new(m, len);
	int ok = draw_row(m, DRAW_GRID, r, &rs->rng) == 0;
	for (int j = 0; ok && j < len; j++)
		ok = (!v || set_element(rs, r, j, v[j], only)) && eval_assume(m, r, j);
	if (ok)
		seed_state(rs, r, len);
	eval_row_free(r);
}

/* Seeds from a new value: a row of it alone (each input at it, and every
 * input at once), and rows of it with values seen before. */
static void seed_value(Reach *rs, double v)
{
	if (!isfinite(v) || rs->nvals == SEED_VALS)
		return;
	for (int i = 0; i < rs->nvals; i++)
		if (rs->vals[i] == v)
			return;
	rs->vals[rs->nvals++] = v;
	int nelem = rs->m.c->nelem;
	seed_row(rs, &v, 1, -1);
	for (int k = 0; nelem > 1 && k < nelem; k++)
		seed_row(rs, &v, 1, k);
	for (int t = 0; t < SEED_PAIRS; t++) {
		double two[2] = {v, rs->vals[rng_int(&rs->rng, 0, rs->nvals - 1)]};
		seed_row(rs, two, 2, -1);
	}
}

/* The spec's constants as seeds: each, its negation, half, double, and
 * the floats next to it. */
static void seed_constants(Reach *rs)
{
	int n;
	const double *k = draw_spec_constants(&rs->m, &n);
	for (int i = 0; i < n; i++)
		for (int sign = 1; sign >= -1; sign -= 2) {
			double c = sign * k[i];
			double near[] = {c, c / 2, 2 * c, nextafterf((float)c, INFINITY), nextafterf((float)c, -INFINITY),
					 nextafter(c, INFINITY), nextafter(c, -INFINITY)};
			for (size_t t = 0; t < sizeof near / sizeof *near; t++)
				seed_value(rs, near[t]);
		}
}

/* Set the integer inputs of d that are not positions (span: the place
 * of d[0] among all inputs) over len positions of width: input `at` (an
 * index among all inputs) to x, the others to 0. */
static void put_ints(Machine *m, const Decl *d, int n, int span, const int *off, int width, double *v, double *rest,
		     int len, int at, int64_t x)
{
	const unsigned char *index = draw_index_inputs(m);
	for (int i = 0; i < n; i++) {
		if (!ty_is_int(d[i].ty) || index[span + i])
			continue;
		int64_t y = span + i == at ? x : 0;
		for (int j = 0; j < len; j++)
			for (int t = off[i]; t < off[i + 1]; t++) {
				size_t k = (size_t)j * width + t;
				v[k] = (double)y;
				if (rest)
					rest[k] = ir_int_rest(y, v[k]);
			}
	}
}

/* Seeds at the integer limits: a row of one position where one integer
 * input that is not a position stands at its type's limit, or next to it,
 * and every other such input at 0.  Integer arithmetic wraps there (abs of
 * the most negative value is that value, x - off at off = 0 is x), which
 * no drawn row reaches. */
static void seed_limits(Reach *rs)
{
	Machine *m = &rs->m;
	const Carrier *c = m->c;
	const Decl *d[3] = {c->elem, c->col, c->row};
	int n[3] = {c->nelem, c->ncol, c->nrow}, span[3] = {0, c->nelem, c->nelem + c->ncol};
	const unsigned char *index = draw_index_inputs(m);
	for (int g = 0; g < 3; g++)
		for (int i = 0; i < n[g]; i++) {
			if (!ty_is_int(d[g][i].ty) || index[span[g] + i])
				continue;
			int i32 = d[g][i].storage == TY_I32;
			int64_t lim[4] = {i32 ? INT32_MIN : INT64_MIN, i32 ? INT32_MIN + 1 : INT64_MIN + 1,
					  i32 ? INT32_MAX - 1 : INT64_MAX - 1, i32 ? INT32_MAX : INT64_MAX};
			for (int k = 0; k < 4 && rs->nseed < SEED_STATES; k++) {
				Row *r = eval_row_new(m, 1);
				int ok = draw_row(m, DRAW_GRID, r, &rs->rng) == 0;
				if (ok) {
					int at = span[g] + i;
					put_ints(m, c->elem, c->nelem, 0, m->elemoff, m->elemw, r->elemv, r->elemrest, 1, at,
						 lim[k]);
					put_ints(m, c->col, c->ncol, c->nelem, m->coloff, m->colw, r->colv, r->colrest, 1, at,
						 lim[k]);
					put_ints(m, c->row, c->nrow, c->nelem + c->ncol, m->rowoff, m->roww, r->rowv, r->rowrest,
						 1, at, lim[k]);
					ok = eval_assume(m, r, 0);
				}
				if (ok)
					seed_state(rs, r, 1);
				eval_row_free(r);
			}
		}
}

void reach_seed(Reach *rs, const double *v, int n)
{
	for (int i = 0; i < n; i++)
		seed_value(rs, v[i]);
}

enum { SEED_MAX_LEN = 1 << 16 };

void reach_seed_lengths(Reach *rs, const Pv *p, const double *val)
{
	int f = prove_positions_field(rs->m.c, 1);
	if (f < 0)
		return;
	for (int v = 0; v < p->nv; v++) {
		double n = val[v];
		if (!p->vop[v] || p->vfield[v] != f || !(n >= 2 && n <= SEED_MAX_LEN) || n != floor(n))
			continue;
		int seen = 0;
		for (int u = 0; u < v; u++)
			seen |= p->vop[u] && p->vfield[u] == f && val[u] == n;
		for (int t = 0; !seen && t < 2; t++)
			seed_row(rs, NULL, (int)n, -1);
	}
}

/* The witness's value of scalar param q where it has one, else NAN. */
static double witness_param(const Pv *p, const double *val, int q)
{
	for (int v = 0; p && val && v < p->nv; v++)
		if (!p->vop[v] && p->vfield[v] == q && !p->c->params[q].ty.len && isfinite(val[v]))
			return ir_round(p->c->params[q].storage, val[v]);
	return NAN;
}

Reach *reach_new_at(Carrier *c, const Pv *p, const double *val)
{
	Reach *rs = calloc(1, sizeof *rs);
	if (!rs)
		abort();
	eval_init(&rs->m, c);
	uint64_t rng = 0x7eac4ULL;
	char msg[160];
	rs->rng = 0x5eed5ULL;
	rs->seed = malloc((size_t)SEED_STATES * (rs->m.sw ? rs->m.sw : 1) * sizeof *rs->seed);
	rs->seedspan = malloc((size_t)SEED_STATES * 2 * sizeof *rs->seedspan);
	if (!rs->seed || !rs->seedspan)
		abort();
	rs->pos = draw_reads_position(&rs->m);
	if (draw_params(&rs->m, NULL, 0, &rng, msg, sizeof msg) == 0) {
		for (int q = 0; q < c->nparams; q++) {
			double v = witness_param(p, val, q);
			if (!isnan(v))
				rs->m.params[rs->m.poff[q]] = v;
		}
		reach_fill(rs, &rng);
		seed_constants(rs);
		seed_limits(rs);
	}
	return rs;
}

Reach *reach_new(Carrier *c) { return reach_new_at(c, NULL, NULL); }

int reach_params_differ(const Reach *rs, const Pv *p, const double *val)
{
	for (int q = 0; q < rs->m.c->nparams; q++) {
		double v = witness_param(p, val, q);
		if (!isnan(v) && rs->m.params[rs->m.poff[q]] != v)
			return 1;
	}
	return 0;
}

void reach_free(Reach *rs)
{
	if (!rs)
		return;
	eval_free(&rs->m);
	free(rs->st);
	free(rs->seed);
	free(rs->span);
	free(rs->seedspan);
	free(rs);
}

int reach_states(const Reach *rs) { return rs->n; }

int reach_by_position(const Reach *rs) { return rs->pos; }

/* The base variables' values for operands a, b, c at states op[0..2],
 * params from the machine's; component 0 of a vector field. */
static void reach_vals(const Reach *rs, const Pv *p, const double *const *op, double *val)
{
	for (int v = 0; v < p->nv; v++) {
		if (p->vop[v])
			val[v] = op[p->vop[v] - 'a'][rs->m.soff[p->vfield[v]]];
		else
			val[v] = rs->m.params[rs->m.poff[p->vfield[v]]];
	}
}

/* Whether val lies in r: its inequalities, and its ties (the eliminated
 * variables equal their forms, up to rounding of the form's arithmetic). */
static int in_region(const Region *r, const double *val, int nv)
{
	for (int v = 0; v < nv; v++)
		if (r->issub >> v & 1) {
			double s = lin_eval_f(&r->sub[v], val);
			if (!(fabs(s - val[v]) <= 1e-12 * (1 + fabs(s))))
				return 0;
		}
	return lin_region_holds(r, val);
}

/* Whether val's bool state fields hold the values of the case being proved. */
static int in_case(const Pv *p, const double *val)
{
	for (int v = 0; v < p->nv; v++)
		if (p->vbool[v] && p->bval[v] >= 0 && (val[v] != 0) != p->bval[v])
			return 0;
	return 1;
}

/* Every leaf of g from the operands' states, vector fields whole. */
static int reach_leaves(const Reach *rs, const Pv *p, Prog *g, const double *const *op)
{
	for (int i = 0; i < prog_nleaves(g); i++) {
		Expr *e = prog_leaf(g, i);
		int v = e->op == EXPR_VAR ? p->var_of[e->k] : -1;
		if (v < 0)
			return 0;
		double *d = prog_leaf_val(g, i, NULL);
		int len = e->ty.len ? e->ty.len : 1;
		const double *src = p->vop[v] ? op[p->vop[v] - 'a'] + rs->m.soff[p->vfield[v]]
					      : rs->m.params + rs->m.poff[p->vfield[v]];
		memcpy(d, src, len * sizeof *d);
	}
	return 1;
}

int reach_differ(double x, double y)
{
	if (isnan(x) || isnan(y))
		return isnan(x) != isnan(y);
	if (x == y)
		return 0;
	if (isinf(x) || isinf(y))
		return 1;
	return fabs(x - y) > 1e-9 * (1 + fabs(x) + fabs(y));
}

/* The first component where g's two roots differ, into out; 0 when none. */
static int roots_differ(Prog *g, const Expr *root, double *out)
{
	const double *l = prog_root(g, 0, NULL), *r = prog_root(g, 1, NULL);
	for (int k = 0; k < (root->ty.len ? root->ty.len : 1); k++)
		if (reach_differ(l[k], r[k])) {
			out[0] = l[k], out[1] = r[k];
			return 1;
		}
	return 0;
}

/* Whether operands of the runs sp (lo, hi each) are states a fold may
 * merge: where a state depends on its positions, those the law reads fold
 * disjoint runs, in the order a, b, c unless the merge is claimed
 * commutative.  Empty runs (the identity's state) go anywhere. */
static int apart(const Reach *rs, const Pv *p, const int *const *sp)
{
	if (!rs->pos)
		return 1;
	unsigned used = 0;
	for (int v = 0; v < p->nv; v++)
		if (p->vop[v])
			used |= 1u << (p->vop[v] - 'a');
	int commutes = (rs->m.c->laws & LAW_COMMUTATIVE) != 0;
	for (int w = 0; w < 3; w++)
		for (int u = 0; u < w; u++) {
			if (!(used >> w & 1) || !(used >> u & 1) || sp[w][0] >= sp[w][1] || sp[u][0] >= sp[u][1])
				continue;
			if (commutes ? sp[u][0] < sp[w][1] && sp[w][0] < sp[u][1] : sp[w][0] < sp[u][1])
				return 0;
		}
	return 1;
}

/* Operands at states op in r where g's roots differ: 1 with val and out set. */
static int at_point(const Reach *rs, Pv *p, const Region *r, Prog *g, const Expr *root, const double *const *op,
		    const int *const *sp, double *val, double *out)
{
	if (!apart(rs, p, sp))
		return 0;
	reach_vals(rs, p, op, val);
	if (!in_case(p, val) || !in_region(r, val, p->nv) || !reach_leaves(rs, p, g, op))
		return 0;
	prog_run(g, MODE_F64);
	return roots_differ(g, root, out);
}

int reach_witness(const Reach *rs, Pv *p, const Region *r, Prog *g, const Expr *root, double *val, double *out)
{
	if (!rs->n)
		return 0;
	uint64_t seed = 0x5eac4ULL;
	for (int t = 0; t < REACH_TRIES; t++) {
		int pick[3], from = rs->tier[t * 3 / REACH_TRIES];
		if (!from)
			continue;
		const double *op[3];
		const int *sp[3];
		for (int w = 0; w < 3; w++) {
			pick[w] = (int)(lin_rand(&seed) % (uint64_t)from);
			op[w] = rs->st + (size_t)pick[w] * rs->m.sw, sp[w] = rs->span + 2 * pick[w];
		}
		if (at_point(rs, p, r, g, root, op, sp, val, out))
			return 1;
	}
	return 0;
}

int reach_seed_witness(const Reach *rs, Pv *p, int nops, const Region *r, Prog *g, const Expr *root, double *val,
		       double *out)
{
	if (!rs->nseed)
		return 0;
	int all = 1; /* every tuple of seeds, where they are few */
	for (int i = 0; i < nops && all <= SEED_TRIES; i++)
		all *= rs->nseed;
	if (all <= SEED_TRIES)
		for (int t = 0; t < all; t++) {
			const double *op[3] = {rs->seed, rs->seed, rs->seed};
			const int *sp[3] = {rs->seedspan, rs->seedspan, rs->seedspan};
			for (int w = 0, u = t; w < nops && w < 3; w++, u /= rs->nseed)
				op[w] = rs->seed + (size_t)(u % rs->nseed) * rs->m.sw, sp[w] = rs->seedspan + 2 * (u % rs->nseed);
			if (at_point(rs, p, r, g, root, op, sp, val, out))
				return 1;
		}
	uint64_t seed = 0x5eed1ULL;
	for (int t = 0; t < SEED_TRIES; t++) {
		const double *op[3];
		const int *sp[3];
		for (int w = 0; w < 3; w++) { /* seeds mostly, drawn folds now and then */
			int pool = rs->n && lin_rand(&seed) % 4 == 0;
			size_t at = (size_t)(lin_rand(&seed) % (uint64_t)(pool ? rs->n : rs->nseed));
			op[w] = (pool ? rs->st : rs->seed) + at * rs->m.sw;
			sp[w] = (pool ? rs->span : rs->seedspan) + 2 * at;
		}
		if (at_point(rs, p, r, g, root, op, sp, val, out))
			return 1;
	}
	return 0;
}

/* ---- witnesses as lifts of single elements ---- */

enum { LIFT_SLOTS = 8, LIFT_FULL = 6 };

/* A scalar float element input that field f's lift is, through casts:
 * its index, or -1. */
static int lifted_input(const Machine *m, int f)
{
	const Carrier *c = m->c;
	const Expr *e = c->lift ? c->lift[f] : NULL;
	while (e && e->op == EXPR_CAST && ty_is_float(e->ty))
		e = e->a[0];
	if (!e || e->op != EXPR_VAR || e->ty.len || !ty_is_float(e->ty))
		return -1;
	const Var *v = ir_var(c->ir, e->k);
	return v->kind == VAR_ELEM && !c->elem[v->slot].ty.len ? v->slot : -1;
}

/* A scalar bool element input that field f's lift is: its index, or -1. */
static int lifted_bool(const Machine *m, int f)
{
	const Carrier *c = m->c;
	const Expr *e = c->lift ? c->lift[f] : NULL;
	if (!e || e->op != EXPR_VAR || e->ty.len || e->ty.kind != TY_BOOL)
		return -1;
	const Var *v = ir_var(c->ir, e->k);
	return v->kind == VAR_ELEM && !c->elem[v->slot].ty.len ? v->slot : -1;
}

typedef struct {
	char op;       /* 'a', 'b' or 'c' */
	int input;     /* the element input it sets */
	double v[3];   /* the value in the input's storage, and the next ones above and below */
	int n;
} LiftSlot;

/* The law's two sides from states a, b, c (e the identity), in float32
 * where the fields are: 0 where lname names no law this knows. */
static int law_sides(Machine *m, const char *lname, double *const *op, double *const *ope, double *l,
		     double *le, double *r, double *re, double *t)
{
	int sw = m->sw;
	double *z = t + 2 * sw, *e = m->ident[MODE_F32];
	memset(z, 0, sw * sizeof *z);
	if (!strcmp(lname, "(a+b)+c")) {
		eval_merge(m, MODE_F32, op[0], ope[0], op[1], ope[1], t, t + sw);
		eval_merge(m, MODE_F32, t, t + sw, op[2], ope[2], l, le);
		eval_merge(m, MODE_F32, op[1], ope[1], op[2], ope[2], t, t + sw);
		eval_merge(m, MODE_F32, op[0], ope[0], t, t + sw, r, re);
	} else if (!strcmp(lname, "a+b")) {
		eval_merge(m, MODE_F32, op[0], ope[0], op[1], ope[1], l, le);
		eval_merge(m, MODE_F32, op[1], ope[1], op[0], ope[0], r, re);
	} else if (!strcmp(lname, "e+a") || !strcmp(lname, "a+e")) {
		if (lname[0] == 'e')
			eval_merge(m, MODE_F32, e, z, op[0], ope[0], l, le);
		else
			eval_merge(m, MODE_F32, op[0], ope[0], e, z, l, le);
		memcpy(r, op[0], sw * sizeof *r);
		memcpy(re, ope[0], sw * sizeof *re);
	} else {
		return 0;
	}
	return 1;
}

/* The first state component where the sides differ beyond the rounding
 * their error bounds allow (integers exactly), or -1. */
static int sides_differ(const Machine *m, const double *l, const double *le, const double *r, const double *re)
{
	const Carrier *c = m->c;
	for (int f = 0; f < c->nstate; f++)
		for (int k = m->soff[f]; k < m->soff[f + 1]; k++) {
			if (isnan(l[k]) || isnan(r[k]) || isinf(l[k]) || isinf(r[k]))
				continue; /* a state the region's reals do not hold */
			if (ty_is_float(c->state[f].ty) ? !check_values_agree(l[k], le[k], r[k], re[k], 0x1p-24)
							: l[k] != r[k])
				return k;
		}
	return -1;
}

/* v as short as reads back as the same value; a float32 as a float32. */
static void fmt_short(double v, char *t, size_t n)
{
	float f = (float)v;
	for (int d = 6; d <= 17; d++) { /* %g's 6 where they do: 1000, not 1e+03 */
		snprintf(t, n, "%.*g", d, v);
		double back = strtod(t, NULL);
		if (!isfinite(v) || ((double)f == v ? (float)back == f : back == v))
			return;
	}
}

int reach_lift_witness(Reach *rs, const Pv *p, const char *lname, const double *val, char **how)
{
	Machine *m = &rs->m;
	const Carrier *c = m->c;
	const char *ops = !strcmp(lname, "(a+b)+c") ? "abc" : !strcmp(lname, "a+b") ? "ab"
			  : !strcmp(lname, "e+a") || !strcmp(lname, "a+e") ? "a" : NULL;
	if (!ops || !c->nelem)
		return 0;
	LiftSlot sl[LIFT_SLOTS];
	int ns = 0;
	for (int v = 0; v < p->nv; v++) {
		int in = p->vop[v] ? lifted_input(m, p->vfield[v]) : -1;
		if (in < 0 || ns == LIFT_SLOTS || !isfinite(val[v]))
			continue;
		LiftSlot *s = &sl[ns++];
		TyKind st = (TyKind)c->elem[in].storage;
		s->op = p->vop[v], s->input = in;
		s->v[0] = ir_round(st, val[v]);
		s->v[1] = st == TY_F64 ? nextafter(s->v[0], INFINITY) : nextafterf((float)s->v[0], INFINITY);
		s->v[2] = st == TY_F64 ? nextafter(s->v[0], -INFINITY) : nextafterf((float)s->v[0], -INFINITY);
		s->n = ns <= LIFT_FULL && (st == TY_F32 || st == TY_F64) ? 3 : 1;
	}
	if (!ns)
		return 0;
	/* the witness's params, where it has them */
	double *saved = malloc((m->pw + 1) * sizeof *saved);
	if (!saved)
		abort();
	memcpy(saved, m->params, m->pw * sizeof *saved);
	for (int v = 0; v < p->nv; v++)
		if (!p->vop[v] && isfinite(val[v]) && !c->params[p->vfield[v]].ty.len)
			m->params[m->poff[p->vfield[v]]] = ir_round(c->params[p->vfield[v]].storage, val[v]);
	int sw = m->sw, nops = (int)strlen(ops), found = 0, total = 1;
	double *buf = calloc((size_t)(4 + 3 + 2 * 3) * sw + 1, sizeof *buf);
	Row *row[3];
	if (!buf)
		abort();
	double *st[3], *ste[3], *l = buf, *le = l + sw, *r = le + sw, *re = r + sw, *t = re + sw;
	/* where a state depends on its positions, each operand lifts its own
	 * (a at 0, b at 1, c at 2), as a fold's states of one position each */
	for (int o = 0; o < 3; o++)
		st[o] = t + (size_t)(3 + 2 * o) * sw, ste[o] = st[o] + sw, row[o] = eval_row_new(m, rs->pos ? o + 1 : 1);
	for (int i = 0; i < ns; i++)
		total *= sl[i].n;
	for (int at = 0; at < total && !found; at++) {
		int ok = 1;
		for (int o = 0; o < nops && ok; o++) {
			uint64_t rng = rs->rng;
			int j = rs->pos ? o : 0;
			double *ev = row[o]->elemv + (size_t)j * m->elemw;
			ok = draw_row(m, DRAW_GRID, row[o], &rng) == 0;
			for (int i = 0, u = at; i < ns; u /= sl[i].n, i++)
				if (sl[i].op == ops[o])
					ev[m->elemoff[sl[i].input]] = sl[i].v[u % sl[i].n];
			for (int v = 0; v < p->nv; v++) /* the case's bools, where a lift is an input */
				if (p->vop[v] == ops[o] && p->vbool[v] && p->bval[v] >= 0 && lifted_bool(m, p->vfield[v]) >= 0)
					ev[m->elemoff[lifted_bool(m, p->vfield[v])]] = p->bval[v];
			ok = ok && eval_assume(m, row[o], j);
			eval_fold(m, MODE_F32, row[o], j, j + 1, SHAPE_LEFT, &rng, st[o], ste[o]);
			for (int v = 0; v < p->nv; v++) /* a state outside the case is no witness of it */
				if (p->vop[v] == ops[o] && p->vbool[v] && p->bval[v] >= 0 &&
				    (st[o][m->soff[p->vfield[v]]] != 0) != p->bval[v])
					ok = 0;
		}
		if (!ok || !law_sides(m, lname, st, ste, l, le, r, re, t))
			continue;
		int k = sides_differ(m, l, le, r, re);
		if (k < 0)
			continue;
		found = 1;
		Buf b = {0};
		int f = 0;
		while (f + 1 < c->nstate && m->soff[f + 1] <= k)
			f++;
		for (int o = 0; o < nops; o++) {
			buf_printf(&b, "%s%c=lift(", o ? ", " : "", ops[o]);
			for (int in = 0, first = 1; in < c->nelem; in++) {
				if (c->elem[in].ty.len)
					continue;
				char num[40];
				const double *ev = row[o]->elemv + (size_t)(rs->pos ? o : 0) * m->elemw;
				if (c->elem[in].ty.kind == TY_BOOL)
					snprintf(num, sizeof num, "%s", ev[m->elemoff[in]] != 0 ? "true" : "false");
				else
					fmt_short(ev[m->elemoff[in]], num, sizeof num);
				buf_printf(&b, "%s%s: %s", first ? "" : ", ", c->elem[in].name, num);
				first = 0;
			}
			if (rs->pos)
				buf_printf(&b, " at j = %d", o);
			buf_printf(&b, ")");
		}
		for (int v = 0; v < p->nv; v++)
			if (!p->vop[v] && c->params[p->vfield[v]].storage != TY_BOOL &&
			    !(p->pfixed && p->pfixed[p->vfield[v]])) {
				char num[40];
				fmt_short(m->params[m->poff[p->vfield[v]]], num, sizeof num);
				buf_printf(&b, ", %s=%s", p->vname[v], num);
			}
		char x[40], y[40];
		if (c->state[f].ty.kind == TY_BOOL) {
			snprintf(x, sizeof x, "%s", l[k] != 0 ? "true" : "false");
			snprintf(y, sizeof y, "%s", r[k] != 0 ? "true" : "false");
		} else {
			fmt_short(l[k], x, sizeof x);
			fmt_short(r[k], y, sizeof y);
		}
		const char *rname = !strcmp(lname, "(a+b)+c") ? "a+(b+c)" : !strcmp(lname, "a+b") ? "b+a" : "a";
		buf_printf(&b, " give %s = %s by %s and %s by %s in the spec's types", c->state[f].name, x, lname, y, rname);
		*how = buf_take(&b);
	}
	for (int o = 0; o < 3; o++)
		eval_row_free(row[o]);
	memcpy(m->params, saved, m->pw * sizeof *saved);
	free(saved);
	free(buf);
	return found;
}

char *reach_identity_edge(Carrier *c)
{
	/* a few rows of a few lifts: no pool of folded states is needed */
	Machine m;
	eval_init(&m, c);
	uint64_t rng = 0x7eac4ULL;
	char msg[160], *detail = NULL;
	if (draw_params(&m, NULL, 0, &rng, msg, sizeof msg) || !check_identity_edge(&m, &rng, &detail, NULL))
		detail = NULL;
	eval_free(&m);
	return detail;
}
