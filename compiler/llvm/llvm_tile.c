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
 * own merges. */
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

/* e is s.f * g(s.m - M) (either operand order), s the `which` side; g is
 * set by the first match and must agree after. */
static int rescaled(const Carrier *c, const Expr *e, int which, int f, int mi, Op *g)
{
	if (e->op != EXPR_MUL)
		return 0;
	for (int o = 0; o < 2; o++) {
		const Expr *x = e->a[o], *r = e->a[1 - o];
		if (field_of(c, x, which) != f || (r->op != EXPR_EXP && r->op != EXPR_EXP2) || r->ty.kind != TY_F32 ||
		    r->ty.len)
			continue;
		const Expr *s = r->a[0];
		if (s->op != EXPR_SUB || s->a[1] != c->merge[mi] || field_of(c, s->a[0], which) != mi)
			continue;
		if (*g != EXPR_NOPS && *g != (Op)r->op)
			return 0;
		*g = (Op)r->op;
		return 1;
	}
	return 0;
}

/* The rescale of field f: a.f * g(..) + b.f * g(..), sides in either order. */
static int field_rescales(const Carrier *c, int f, int mi, Op *g)
{
	const Expr *e = c->merge[f];
	if (e->op != EXPR_ADD)
		return 0;
	for (int o = 0; o < 2; o++)
		if (rescaled(c, e->a[o], STATE_A, f, mi, g) && rescaled(c, e->a[1 - o], STATE_B, f, mi, g))
			return 1;
	return 0;
}

int tile_max_rescale(const Carrier *c, Op *g)
{
	if (!c->merge || c->nstate < 2)
		return -1;
	for (int f = 0; f < c->nstate; f++)
		if (c->state[f].ty.kind != TY_F32)
			return -1;
	int mi = -1;
	for (int f = 0; f < c->nstate && mi < 0; f++) {
		const Expr *e = c->merge[f];
		if (e->op == EXPR_MAX && !c->state[f].ty.len &&
		    ((field_of(c, e->a[0], STATE_A) == f && field_of(c, e->a[1], STATE_B) == f) ||
		     (field_of(c, e->a[0], STATE_B) == f && field_of(c, e->a[1], STATE_A) == f)))
			mi = f;
	}
	if (mi < 0)
		return -1;
	*g = EXPR_NOPS;
	for (int f = 0; f < c->nstate; f++)
		if (f != mi && !field_rescales(c, f, mi, g))
			return -1;
	return mi;
}
