/* llvm_tile.c: which fold a tile of lifted positions takes in the CPU
 * backend's reduce loop (llvm_reduce.c), decided from the merge's IR alone.
 *
 * A max-rescale carrier merges a float32 field m by max and every other
 * field f by rescaling both sides to the new maximum:
 *   m = max(a.m, b.m),  f = a.f * g(a.m - m) + b.f * g(b.m - m),  g = exp or exp2
 * (softmax's (m, l), logsumexp, attention's (m, l, o), o a vector or not).
 * For such a merge the fold of n states is, in exact arithmetic,
 *   M = max_i m_i,  F = sum_i f_i * g(m_i - M)
 * so a tile needs one vector max, one g per position and plain adds, and
 * the running state is rescaled once per tile, not once per position.  A
 * vector f (attention's o) takes g of its position's m for every component.
 * Matching is structural (the IR is hash-consed: the max in each g is the
 * very node merge[m]); anything else folds a tile by a tree of the spec's
 * own merges.
 *
 * g's argument may be guarded so that a row holding +inf rescales by 1,
 * not by exp(inf - inf) = NaN:
 *   g(where(s.m == inf, 0, s.m - m))  MR_GUARD_INF: 1 where s.m is +inf
 *   g(where(s.m == m, 0, s.m - m))    MR_GUARD_MAX: 1 where s.m is the
 *                                     maximum, -inf included
 * (either operand order of ==).  Every g of the merge takes the same form.
 *
 * Other scalar fields may merge by themselves, apart from m and the
 * rescale: f = a.f + b.f or max(a.f, b.f) (cross-entropy's picked logit).
 * Their fold of n states is the plain sum or max of the f_i, so a tile
 * folds them alongside, one vector add or max per position.  Fields of
 * any type whose merges read only one another (a top-k list and its
 * indices, an argmax's value and position) fold alongside too, by a tree
 * of their own merges (tile_own_fold). */
#include <stdlib.h>

#include "compiler/llvm/llvm_int.h"

/* The field whose `which` side (a or b) e reads, or -1. */
static int field_of(const Carrier *c, const Expr *e, int which)
{
	if (e->op != EXPR_VAR)
		return -1;
	for (int f = 0; f < c->nstate; f++)
		if (c->svar[which][f] == e->k)
			return f;
	return -1;
}

/* e is the literal v (converted to the field's type or not). */
static int is_literal(const Expr *e, double v)
{
	while (e->op == EXPR_CAST)
		e = e->a[0];
	return e->op == EXPR_CONST && e->num == v;
}

/* The guard of g's argument d, whose difference s.m - M is *diff:
 * MR_PLAIN where d is the difference itself, MR_GUARD_INF or MR_GUARD_MAX
 * where d is where(s.m == inf or M, 0, diff), else -1. */
static int guard_of(const Carrier *c, const Expr *d, int which, int mi, const Expr **diff)
{
	*diff = d;
	if (d->op != EXPR_WHERE)
		return MR_PLAIN;
	const Expr *cond = d->a[0], *z = d->a[1];
	if (!is_literal(z, 0))
		return -1;
	*diff = d->a[2];
	if (cond->op != EXPR_EQ)
		return -1;
	for (int o = 0; o < 2; o++)
		if (field_of(c, cond->a[o], which) == mi) {
			if (is_literal(cond->a[1 - o], INFINITY))
				return MR_GUARD_INF;
			if (cond->a[1 - o] == c->merge[mi])
				return MR_GUARD_MAX;
		}
	return -1;
}

/* e is s.f * g(s.m - M) (either operand order), s the `which` side, its
 * argument guarded or not; g and the guard are set by the first match and
 * must agree after. */
static int rescaled(const Carrier *c, const Expr *e, int which, int f, int mi, Op *g, int *guard)
{
	if (e->op != EXPR_MUL)
		return 0;
	for (int o = 0; o < 2; o++) {
		const Expr *x = e->a[o], *r = e->a[1 - o];
		if (field_of(c, x, which) != f || (r->op != EXPR_EXP && r->op != EXPR_EXP2) || r->ty.kind != TY_F32 ||
		    r->ty.len)
			continue;
		const Expr *s;
		int gd = guard_of(c, r->a[0], which, mi, &s);
		if (gd < 0 || s->op != EXPR_SUB || s->a[1] != c->merge[mi] || field_of(c, s->a[0], which) != mi)
			continue;
		if ((*g != EXPR_NOPS && *g != (Op)r->op) || (*guard >= 0 && *guard != gd))
			return 0;
		*g = (Op)r->op;
		*guard = gd;
		return 1;
	}
	return 0;
}

/* The rescale of field f: a.f * g(..) + b.f * g(..), sides in either order. */
static int field_rescales(const Carrier *c, int f, int mi, Op *g, int *guard)
{
	const Expr *e = c->merge[f];
	if (e->op != EXPR_ADD)
		return 0;
	for (int o = 0; o < 2; o++)
		if (rescaled(c, e->a[o], STATE_A, f, mi, g, guard) && rescaled(c, e->a[1 - o], STATE_B, f, mi, g, guard))
			return 1;
	return 0;
}

int tile_extra_fold(const Carrier *c, int f)
{
	const Expr *e = c->merge[f];
	if (c->state[f].ty.kind != TY_F32 || c->state[f].ty.len || (e->op != EXPR_ADD && e->op != EXPR_MAX))
		return -1;
	if ((field_of(c, e->a[0], STATE_A) == f && field_of(c, e->a[1], STATE_B) == f) ||
	    (field_of(c, e->a[0], STATE_B) == f && field_of(c, e->a[1], STATE_A) == f))
		return e->op;
	return -1;
}

/* The fields (a bit each) whose a or b side e reads, through the other
 * fields' merges it uses (hash-consed: `m` in a merge is merge[m]'s node).
 * seen: by node id, where a node's reads were taken already. */
static unsigned long long reads_of(const Carrier *c, const Expr *e, unsigned char *seen)
{
	if (seen[e->id])
		return 0;
	seen[e->id] = 1;
	unsigned long long r = 0;
	for (int w = STATE_A; w <= STATE_B; w++) {
		int f = field_of(c, e, w);
		if (f >= 0)
			r |= 1ULL << f;
	}
	for (int i = 0; i < e->nargs; i++)
		r |= reads_of(c, e->a[i], seen);
	return r;
}

/* Fields that fold apart: f's merge (not a plain sum or max), and the
 * merges of every field it reads in turn, read neither m (mi) nor
 * anything rescaled by it. */
int tile_own_fold(const Carrier *c, int mi, int f)
{
	if (c->nstate > 64 || f == mi || tile_extra_fold(c, f) >= 0)
		return 0;
	unsigned long long group = 1ULL << f, done = 0;
	while (group != done) {
		for (int g = 0; g < c->nstate; g++) {
			if (!(group & ~done & (1ULL << g)))
				continue;
			done |= 1ULL << g;
			unsigned char *seen = calloc((size_t)ir_nnodes(c->ir) + 1, 1);
			if (!seen)
				abort();
			group |= reads_of(c, c->merge[g], seen);
			free(seen);
		}
		if (group & (1ULL << mi))
			return 0;
	}
	return 1;
}

/* Whether every field but mi is rescaled by mi's maximum, or merges by
 * itself, and one at least is rescaled. */
static int rescaled_by(const Carrier *c, int mi, Op *g, int *guard)
{
	int rescales = 0;
	*g = EXPR_NOPS;
	*guard = -1;
	for (int f = 0; f < c->nstate; f++) {
		if (f == mi)
			continue;
		if (c->state[f].ty.kind == TY_F32 && field_rescales(c, f, mi, g, guard))
			rescales++;
		else if (tile_extra_fold(c, f) < 0 && !tile_own_fold(c, mi, f))
			return 0;
	}
	return rescales > 0;
}

int tile_max_rescale(const Carrier *c, Op *g, int *guard)
{
	if (!c->merge || c->nstate < 2)
		return -1;
	/* m is the first field merged by max whose rescale the others take
	 * (a field before it may merge by max on its own) */
	for (int mi = 0; mi < c->nstate; mi++)
		if (c->state[mi].ty.kind == TY_F32 && tile_extra_fold(c, mi) == EXPR_MAX && rescaled_by(c, mi, g, guard))
			return mi;
	return -1;
}

int tile_has_own(const Carrier *c, int mi)
{
	for (int f = 0; mi >= 0 && f < c->nstate; f++)
		if (tile_own_fold(c, mi, f))
			return 1;
	return 0;
}
