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

#include "compiler/check/draw.h"

enum { REACH_PER_TIER = 192, REACH_TRIES = 24000 };

struct Reach {
	Machine m;
	int n;        /* states in the pool */
	int tier[3];  /* the states of tiers 0..k are the first tier[k] */
	double *st;   /* n states of m.sw components, float64 */
};

static int finite_state(const double *v, int n)
{
	for (int k = 0; k < n; k++)
		if (!isfinite(v[k]))
			return 0;
	return 1;
}

static void reach_add(Reach *rs, Sample *s)
{
	int sw = rs->m.sw;
	if (s && finite_state(s->v[MODE_F64], sw))
		memcpy(rs->st + (size_t)rs->n++ * sw, s->v[MODE_F64], sw * sizeof *rs->st);
	draw_sample_free(s);
}

/* Folds of drawn rows, in tiers tried in turn: rows of one to three small
 * integers (ties, and witnesses that read well), then the trials' own
 * draws of small integers and of normal values (strict orders).  Only
 * finite states join: the prover's regions are over finite values. */
static void reach_fill(Reach *rs, uint64_t *rng)
{
	static const DrawFamily fams[] = {DRAW_GRID, DRAW_GRID, DRAW_NORMAL};
	rs->st = malloc((size_t)3 * REACH_PER_TIER * (rs->m.sw ? rs->m.sw : 1) * sizeof *rs->st);
	if (!rs->st)
		abort();
	for (int k = 0; k < 3; k++) {
		int stop = rs->n + REACH_PER_TIER;
		for (int t = 0; t < 4 * REACH_PER_TIER && rs->n < stop; t++)
			reach_add(rs, k ? draw_sample_new(&rs->m, fams[k], rng)
					: draw_sample_row(&rs->m, fams[k], 1 + (int)(rng_next(rng) % 3), rng));
		rs->tier[k] = rs->n;
	}
}

Reach *reach_new(Carrier *c)
{
	Reach *rs = calloc(1, sizeof *rs);
	if (!rs)
		abort();
	eval_init(&rs->m, c);
	uint64_t rng = 0x7eac4ULL;
	char msg[160];
	if (draw_params(&rs->m, NULL, 0, &rng, msg, sizeof msg) == 0)
		reach_fill(rs, &rng);
	return rs;
}

void reach_free(Reach *rs)
{
	if (!rs)
		return;
	eval_free(&rs->m);
	free(rs->st);
	free(rs);
}

int reach_states(const Reach *rs) { return rs->n; }

/* The base variables' values for operands a, b, c taken from pool states
 * pick[0..2], params from the machine's; component 0 of a vector field. */
static void reach_vals(const Reach *rs, const Pv *p, const int *pick, double *val)
{
	for (int v = 0; v < p->nv; v++) {
		if (p->vop[v])
			val[v] = rs->st[(size_t)pick[p->vop[v] - 'a'] * rs->m.sw + rs->m.soff[p->vfield[v]]];
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

/* Every leaf of g from the picked states, vector fields whole. */
static int reach_leaves(const Reach *rs, const Pv *p, Prog *g, const int *pick)
{
	for (int i = 0; i < prog_nleaves(g); i++) {
		Expr *e = prog_leaf(g, i);
		int v = e->op == EXPR_VAR ? p->var_of[e->k] : -1;
		if (v < 0)
			return 0;
		double *d = prog_leaf_val(g, i, NULL);
		int len = e->ty.len ? e->ty.len : 1;
		const double *src = p->vop[v] ? rs->st + (size_t)pick[p->vop[v] - 'a'] * rs->m.sw + rs->m.soff[p->vfield[v]]
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

int reach_witness(const Reach *rs, Pv *p, const Region *r, Prog *g, const Expr *root, double *val, double *out)
{
	if (!rs->n)
		return 0;
	uint64_t seed = 0x5eac4ULL;
	for (int t = 0; t < REACH_TRIES; t++) {
		int pick[3], from = rs->tier[t * 3 / REACH_TRIES];
		if (!from)
			continue;
		for (int w = 0; w < 3; w++)
			pick[w] = (int)(lin_rand(&seed) % (uint64_t)from);
		reach_vals(rs, p, pick, val);
		if (!in_region(r, val, p->nv) || !reach_leaves(rs, p, g, pick))
			continue;
		prog_run(g, MODE_F64);
		if (roots_differ(g, root, out))
			return 1;
	}
	return 0;
}
