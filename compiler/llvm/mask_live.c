/* mask_live.c: whether a mask can hold anywhere in a block of positions
 * of a row, by interval arithmetic over the mask's IR, so that the CPU
 * executor (runtime/cpu.c) skips the blocks it rules out: half of causal
 * attention's keys, all but a window's.  Only masks of the indices and
 * params are taken (one that reads an input could hold anywhere).
 *
 * Numbers are intervals [lo, hi] of doubles; booleans are the pair (may be
 * true, may be false).  i, len and params are points, j is [j0, j1 - 1].
 * Integer arithmetic is exact in doubles up to 2^53, past which a node is
 * unknown; a float32 or float64 node is widened by a relative 2^-20 (and
 * 2^-126 absolute), far more than its rounding, so that a comparison the
 * kernel rounds differently at a boundary is never decided here.  Any
 * operation not listed is unknown: a number anywhere, a boolean either. */
#include <math.h>
#include <stdlib.h>

#include "compiler/llvm/mask_live.h"

typedef struct {
	uint16_t op;
	uint8_t kind, nargs, src; /* src for VAR: 0 unknown, 1 i, 2 j, 3 len, 4 param */
	int a[3], slot;
	double num;
} Node;

struct LiveProg {
	int n, root;
	Node *node;
};

typedef struct {
	const Carrier *c;
	LiveProg *p;
	int *at; /* by expr id: node index + 1 */
	int ok, uses_j, cap;
} Build;

static int add(Build *b, Expr *e)
{
	if (b->at[e->id])
		return b->at[e->id] - 1;
	Node x = {.op = e->op, .kind = (uint8_t)e->ty.kind, .nargs = e->nargs, .num = e->num};
	if (e->ty.len)
		b->ok = 0; /* a vector: the mask is a scalar of scalars here */
	if (e->op == EXPR_VAR) {
		const Var *v = ir_var(b->c->ir, e->k);
		if (v->kind == VAR_IDX) {
			x.src = v->slot == IDX_I ? 1 : v->slot == IDX_J ? 2 : 3;
			b->uses_j |= v->slot == IDX_J;
		} else if (v->kind == VAR_PARAM) {
			x.src = 4, x.slot = v->slot;
		} else {
			b->ok = 0; /* an input */
		}
	}
	for (int k = 0; k < e->nargs && k < 3; k++)
		x.a[k] = add(b, e->a[k]);
	if (b->p->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 32;
		b->p->node = realloc(b->p->node, b->cap * sizeof *b->p->node);
		if (!b->p->node)
			abort();
	}
	b->p->node[b->p->n] = x;
	b->at[e->id] = ++b->p->n;
	return b->p->n - 1;
}

LiveProg *mask_live_compile(const Carrier *c)
{
	if (!c->mask)
		return NULL;
	LiveProg *p = calloc(1, sizeof *p);
	Build b = {c, p, calloc(ir_nnodes(c->ir) + 1, sizeof(int)), 1, 0, 0};
	if (!p || !b.at)
		abort();
	p->root = add(&b, c->mask);
	free(b.at);
	if (!b.ok || !b.uses_j) {
		mask_live_free(p);
		return NULL;
	}
	return p;
}

void mask_live_free(LiveProg *p)
{
	if (p) {
		free(p->node);
		free(p);
	}
}

typedef struct {
	double lo, hi;
	int t, f; /* booleans: may be true, may be false */
} Iv;

static const Iv UNKNOWN = {-INFINITY, INFINITY, 1, 1};

static int is_int(int kind) { return kind == TY_I32 || kind == TY_I64; }

/* The interval's final form at a node of kind k: integers beyond 2^53
 * (or NaN) unknown, floats widened past their rounding. */
static Iv settle(Iv v, int k)
{
	if (k == TY_BOOL)
		return v;
	if (isnan(v.lo) || isnan(v.hi))
		return UNKNOWN;
	if (is_int(k)) {
		double most = k == TY_I32 ? 0x1p31 : 0x1p53; /* past it the kernel wraps, or doubles round */
		return fabs(v.lo) >= most || fabs(v.hi) >= most ? UNKNOWN : v;
	}
	v.lo -= fabs(v.lo) * 0x1p-20 + 0x1p-126;
	v.hi += fabs(v.hi) * 0x1p-20 + 0x1p-126;
	return v;
}

static Iv point(double x) { return (Iv){x, x, 1, 1}; }

static Iv mul(Iv a, Iv b)
{
	double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
	Iv v = {p[0], p[0], 1, 1};
	for (int k = 0; k < 4; k++) {
		if (isnan(p[k])) /* 0 * inf */
			return UNKNOWN;
		v.lo = fmin(v.lo, p[k]), v.hi = fmax(v.hi, p[k]);
	}
	return v;
}

/* a < b (or <= with le): may it be true, may it be false */
static Iv less(Iv a, Iv b, int le)
{
	Iv v = UNKNOWN;
	v.t = le ? a.lo <= b.hi : a.lo < b.hi;
	v.f = le ? a.hi > b.lo : a.hi >= b.lo;
	return v;
}

static Iv eval(const LiveProg *g, const Node *x, const Iv *v, const CpuArgs *a, int64_t i, int64_t j0, int64_t j1)
{
	Iv p = x->nargs > 0 ? v[x->a[0]] : UNKNOWN, q = x->nargs > 1 ? v[x->a[1]] : UNKNOWN;
	Iv r = x->nargs > 2 ? v[x->a[2]] : UNKNOWN, o = UNKNOWN;
	switch (x->op) {
	case EXPR_CONST: o = x->kind == TY_BOOL ? (Iv){0, 0, x->num != 0, x->num == 0} : point(x->num); break;
	case EXPR_VAR:
		switch (x->src) {
		case 1: o = point((double)rt_spec_i(a, i)); break;
		case 2: o = (Iv){(double)j0, (double)(j1 - 1), 1, 1}; break;
		case 3: o = point((double)a->len); break;
		case 4:
			o = x->kind == TY_BOOL ? (Iv){0, 0, a->params[x->slot] != 0, a->params[x->slot] == 0}
					       : point(a->params[x->slot]);
			break;
		}
		break;
	case EXPR_CAST: {
		/* a boolean to 0 or 1; between number kinds, where a conversion to
		 * an integer lies within one of the value however it rounds */
		int from = g->node[x->a[0]].kind;
		if (x->kind == TY_BOOL)
			break;
		if (from == TY_BOOL)
			o = (Iv){p.f ? 0 : 1, p.t ? 1 : 0, 1, 1};
		else
			o = is_int(x->kind) ? (Iv){floor(p.lo) - 1, ceil(p.hi) + 1, 1, 1} : p;
		break;
	}
	case EXPR_NEG: o = (Iv){-p.hi, -p.lo, 1, 1}; break;
	case EXPR_ADD: o = (Iv){p.lo + q.lo, p.hi + q.hi, 1, 1}; break;
	case EXPR_SUB: o = (Iv){p.lo - q.hi, p.hi - q.lo, 1, 1}; break;
	case EXPR_MUL: o = mul(p, q); break;
	case EXPR_MAX: o = (Iv){fmax(p.lo, q.lo), fmax(p.hi, q.hi), 1, 1}; break;
	case EXPR_MIN: o = (Iv){fmin(p.lo, q.lo), fmin(p.hi, q.hi), 1, 1}; break;
	case EXPR_ABS:
		o = p.lo >= 0 ? p : p.hi <= 0 ? (Iv){-p.hi, -p.lo, 1, 1} : (Iv){0, fmax(-p.lo, p.hi), 1, 1};
		break;
	case EXPR_LT: o = less(p, q, 0); break;
	case EXPR_LE: o = less(p, q, 1); break;
	case EXPR_GT: o = less(q, p, 0); break;
	case EXPR_GE: o = less(q, p, 1); break;
	case EXPR_EQ:
	case EXPR_NE: {
		int meet = p.lo <= q.hi && q.lo <= p.hi, same = p.lo == p.hi && q.lo == q.hi && p.lo == q.lo;
		o.t = x->op == EXPR_EQ ? meet : !same;
		o.f = x->op == EXPR_EQ ? !same : meet;
		break;
	}
	case EXPR_NOT: o.t = p.f, o.f = p.t; break;
	case EXPR_AND: o.t = p.t && q.t, o.f = p.f || q.f; break;
	case EXPR_OR: o.t = p.t || q.t, o.f = p.f && q.f; break;
	case EXPR_WHERE:
		if (!p.t)
			o = r;
		else if (!p.f)
			o = q;
		else
			o = (Iv){fmin(q.lo, r.lo), fmax(q.hi, r.hi), q.t || r.t, q.f || r.f};
		break;
	default: break;
	}
	return settle(o, x->kind);
}

int mask_live_eval(const void *prog, const CpuArgs *a, int64_t i, int64_t j0, int64_t j1)
{
	const LiveProg *p = prog;
	if (j0 >= j1)
		return 0;
	Iv stack[64] = {{0}}, *v = p->n <= 64 ? stack : malloc(p->n * sizeof *v);
	if (!v)
		abort();
	for (int k = 0; k < p->n; k++)
		v[k] = eval(p, &p->node[k], v, a, i, j0, j1);
	int t = v[p->root].t;
	if (v != stack)
		free(v);
	return t;
}
