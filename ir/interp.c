/* interp.c: a tape interpreter for expression DAGs, in float64 or in the
 * spec's own types (f32 rounded after every op), with a running error bound.
 *
 * The error bound of a value is in units of the unit roundoff u of its mode:
 * |computed - exact| <= u * err, given exact leaves (or leaves whose own error
 * the caller supplies).  It is the classic running error analysis (Wilkinson;
 * Higham, "Accuracy and Stability", ch. 3): each op adds |result| for its own
 * rounding (twice that for library functions) to the propagated errors of its
 * operands.  Law checks compare two evaluations against the sum of their bounds.
 *
 * Integers are exact in both modes: beside each i64 value, which a double
 * holds rounded past 2^53, the tape keeps its rest (ir_int_exact), and
 * integer ops, comparisons of integers and their conversions to floats
 * take the exact operands.  A sum of 2^62, 1 and -2^62 is 1, as on the
 * devices, where doubles alone gave 0. */
#include "ir.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	uint16_t op;
	uint8_t kind, nargs;
	uint8_t skind[4]; /* the operands' kinds */
	/* found at prog_new, not per element: the kind computed in by Mode,
	 * whether it is a float's (whose results may be range events), and
	 * whether an operand is an integer (whose rests count) */
	uint8_t ekind[2], efloat[2], int_args;
	int k, len;
	int dst;
	int src[4], slen[4];
} Instr;

struct Prog {
	Ir *ir;
	Expr **nodes; /* reachable, by id */
	int nnodes;
	int *off;     /* by position in nodes */
	Instr *code;
	int ncode;
	Expr **leaves;
	int *leafoff;
	int nleaves;
	int *rootoff;
	int nroots;
	double *val, *err;
	double *rest; /* of integer values: what the exact integer has beyond val (0 elsewhere) */
	int nval;
	unsigned range; /* PROG_* events of the last run */
	int *f32consts; /* offsets of the f32 constants, for prog_const_rounding */
	int nf32consts;
	int const_rounding;
	int int_rounding; /* prog_int_rounding */
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fputs("assoc: out of memory\n", stderr);
		abort();
	}
	return p;
}

static int is_leaf(const Expr *e)
{
	return e->op == EXPR_VAR || (ir_ops[e->op].flags & F_REDUCE);
}

static int cmp_id(const void *x, const void *y)
{
	const Expr *a = *(Expr *const *)x, *b = *(Expr *const *)y;
	return (a->id > b->id) - (a->id < b->id);
}

/* Depth-first collection with an explicit stack: expressions from the
 * prover can be deep, and recursion depth must not depend on input. */
static int collect(Expr *const *roots, int nroots, unsigned char *seen, Expr ***out)
{
	int n = 0, cap = 64, sp = 0, scap = 64;
	Expr **list = xmalloc(cap * sizeof *list), **stack = xmalloc(scap * sizeof *stack);
	for (int r = 0; r < nroots; r++) {
		if (sp == scap)
			stack = realloc(stack, (scap *= 2) * sizeof *stack);
		if (!stack)
			abort();
		stack[sp++] = roots[r];
	}
	while (sp) {
		Expr *e = stack[--sp];
		if (seen[e->id])
			continue;
		seen[e->id] = 1;
		if (n == cap)
			list = realloc(list, (cap *= 2) * sizeof *list);
		list[n++] = e;
		if (is_leaf(e))
			continue;
		for (int i = 0; i < e->nargs; i++) {
			if (sp == scap)
				stack = realloc(stack, (scap *= 2) * sizeof *stack);
			stack[sp++] = e->a[i];
		}
		if (!list || !stack)
			abort();
	}
	free(stack);
	qsort(list, n, sizeof *list, cmp_id);
	*out = list;
	return n;
}

static int width(const Expr *e) { return e->ty.len ? e->ty.len : 1; }

/* A float32 constant that a literal very likely wrote exactly: a whole
 * number below 2^24, or one of at most 16 significant bits (0.5, 0.125,
 * 1.25).  Others (0.1, 1.4426950408889634) were rounded to float32. */
static int exact_literal(double v)
{
	if (!isfinite(v) || v == 0 || (v == nearbyint(v) && fabs(v) < 0x1p24))
		return 1;
	int ex;
	double m = ldexp(frexp(fabs(v), &ex), 16);
	return m == nearbyint(m);
}

static int int_kind(int kind) { return kind == TY_I32 || kind == TY_I64; }

/* The kind an op of kind computes in: in MODE_F32 the spec's types, in
 * MODE_F64 float64 for every float kind. */
static TyKind mode_kind(int kind, Mode mode)
{
	if (mode == MODE_F32 && kind == TY_F32)
		return TY_F32;
	return kind == TY_F32 || kind == TY_NUM ? TY_F64 : (TyKind)kind;
}

static int find(const Prog *p, const Expr *e)
{
	int lo = 0, hi = p->nnodes - 1;
	while (lo <= hi) {
		int m = (lo + hi) / 2;
		if (p->nodes[m]->id == e->id)
			return m;
		if (p->nodes[m]->id < e->id)
			lo = m + 1;
		else
			hi = m - 1;
	}
	return -1;
}

Prog *prog_new(Ir *ir, Expr *const *roots, int nroots)
{
	Prog *p = xmalloc(sizeof *p);
	memset(p, 0, sizeof *p);
	p->ir = ir;
	unsigned char *seen = calloc(ir_nnodes(ir) + 1, 1);
	if (!seen)
		abort();
	p->nnodes = collect(roots, nroots, seen, &p->nodes);
	free(seen);
	p->off = xmalloc(p->nnodes * sizeof *p->off);
	for (int i = 0; i < p->nnodes; i++) {
		p->off[i] = p->nval;
		p->nval += width(p->nodes[i]);
	}
	p->val = xmalloc(p->nval * sizeof *p->val);
	p->err = xmalloc(p->nval * sizeof *p->err);
	p->rest = xmalloc(p->nval * sizeof *p->rest);
	memset(p->val, 0, p->nval * sizeof *p->val);
	memset(p->err, 0, p->nval * sizeof *p->err);
	memset(p->rest, 0, p->nval * sizeof *p->rest);
	p->code = xmalloc(p->nnodes * sizeof *p->code);
	p->leaves = xmalloc(p->nnodes * sizeof *p->leaves);
	p->leafoff = xmalloc(p->nnodes * sizeof *p->leafoff);
	for (int i = 0; i < p->nnodes; i++) {
		Expr *e = p->nodes[i];
		if (is_leaf(e)) {
			p->leaves[p->nleaves] = e;
			p->leafoff[p->nleaves++] = p->off[i];
			continue;
		}
		if (e->op == EXPR_CONST) {
			for (int j = 0; j < width(e); j++)
				p->val[p->off[i] + j] = e->num;
			if (e->ty.kind == TY_F32 && !exact_literal(e->num)) {
				if (!p->f32consts)
					p->f32consts = xmalloc(p->nnodes * sizeof *p->f32consts);
				p->f32consts[p->nf32consts++] = i;
			}
			continue;
		}
		Instr *in = &p->code[p->ncode++];
		*in = (Instr){.op = e->op, .kind = e->ty.kind, .nargs = e->nargs, .k = e->k,
			      .len = width(e), .dst = p->off[i]};
		for (int a = 0; a < e->nargs; a++) {
			int j = find(p, e->a[a]);
			in->src[a] = p->off[j];
			in->slen[a] = width(e->a[a]);
			in->skind[a] = e->a[a]->ty.kind;
			in->int_args |= int_kind(in->skind[a]);
		}
		for (int mode = 0; mode < 2; mode++) {
			in->ekind[mode] = mode_kind(in->kind, (Mode)mode);
			in->efloat[mode] = ty_is_float(ty_scalar((TyKind)in->ekind[mode]));
		}
	}
	p->nroots = nroots;
	p->rootoff = xmalloc(nroots * sizeof *p->rootoff);
	for (int r = 0; r < nroots; r++)
		p->rootoff[r] = p->off[find(p, roots[r])];
	return p;
}

void prog_free(Prog *p)
{
	if (!p)
		return;
	free(p->nodes);
	free(p->off);
	free(p->code);
	free(p->leaves);
	free(p->leafoff);
	free(p->rootoff);
	free(p->val);
	free(p->err);
	free(p->rest);
	free(p->f32consts);
	free(p);
}

int prog_nleaves(const Prog *p) { return p->nleaves; }
Expr *prog_leaf(const Prog *p, int i) { return p->leaves[i]; }

double *prog_leaf_val(Prog *p, int i, double **err)
{
	if (err)
		*err = p->err + p->leafoff[i];
	return p->val + p->leafoff[i];
}

double *prog_leaf_rest(Prog *p, int i) { return p->rest + p->leafoff[i]; }

int prog_find_leaf(const Prog *p, const Expr *e)
{
	for (int i = 0; i < p->nleaves; i++)
		if (p->leaves[i] == e)
			return i;
	return -1;
}

const double *prog_root(const Prog *p, int r, const double **err)
{
	if (err)
		*err = p->err + p->rootoff[r];
	return p->val + p->rootoff[r];
}

const double *prog_root_rest(const Prog *p, int r) { return p->rest + p->rootoff[r]; }

/* An error bound where an unbounded term met a zero (sqrt's bound at 0
 * times 0) is unbounded, not NaN: a NaN bound would fail every comparison. */
static double bounded(double e) { return isnan(e) ? INFINITY : e; }

/* Propagated error of one op plus its own rounding; see the file comment.
 * The rounding of a result in the subnormal range is absolute, not
 * relative: tiny (the smallest subnormal, in units of u) bounds it, so
 * that a product of 1e-320 and 1e30 is not held to 16 digits it lost.
 * Infinite results are exact as far as comparisons go: their mismatches are
 * caught as non-finite values, not by tolerance.  A product keeps the
 * second-order term u ex ey: where a computed factor is 0 (a difference
 * of two rounded means), the first-order terms vanish, and a float32
 * delta^2 of 1e-15 lost to rounding would be held to no tolerance. */
static double err_op(Op op, int k, double x, double y, double ex, double ey, double ez, double r, double tiny,
		     double u)
{
	double ar = fabs(r) + tiny, e;
	if (!isfinite(r))
		return 0;
	switch (op) {
	case EXPR_NEG: case EXPR_ABS: case EXPR_INDEX: return ex;
	case EXPR_CAST: return ex + ar;
	case EXPR_ADD: case EXPR_SUB: e = ex + ey + ar; break;
	case EXPR_MUL: e = ex * fabs(y) + ey * fabs(x) + u * ex * ey + ar; break;
	case EXPR_DIV: e = (ex + ar * ey) / fabs(y) + ar; break;
	case EXPR_FMA: e = ex * fabs(y) + ey * fabs(x) + u * ex * ey + ez + ar; break;
	case EXPR_POW: e = abs(k) * (ar / (x == 0 ? 1 : fabs(x))) * ex + abs(k) * ar; break;
	case EXPR_EXP: e = ar * ex + 2 * ar; break;
	case EXPR_EXP2: e = ar * 0.6931471805599453 * ex + 2 * ar; break;
	case EXPR_EXPM1: e = fabs(r + 1) * ex + 2 * ar; break;
	case EXPR_LOG: e = ex / fabs(x) + 2 * ar; break;
	case EXPR_LOG2: e = ex / (fabs(x) * 0.6931471805599453) + 2 * ar; break;
	case EXPR_LOG1P: e = ex / fabs(1 + x) + 2 * ar; break;
	case EXPR_SQRT: e = ex / (2 * ar) + ar; break;
	case EXPR_RSQRT: e = ar * ex / (2 * fabs(x)) + 2 * ar; break;
	case EXPR_TANH: e = ex * (1 - r * r) + 2 * ar; break;
	case EXPR_SIGMOID: e = ex * r * (1 - r) + 2 * ar; break;
	case EXPR_MAX: case EXPR_MIN: return ex > ey ? ex : ey;
	default: return 0; /* comparisons, logic: exact */
	}
	return bounded(e);
}

/* What a result says of the float range: PROG_OVERFLOW where finite
 * operands gave an infinity, PROG_UNDERFLOW where nonzero ones gave a
 * value below the smallest normal, PROG_ZERO_DIVIDE where a zero was
 * divided by or taken the log of.  Infinities and NaNs the operands
 * already held are not events: a lift's -inf is a value like any other. */
static unsigned range_event(Op op, int nargs, double x, double y, double z, double r, double least)
{
	if (isfinite(r) && fabs(r) >= least)
		return 0;
	if (!isfinite(x) || (nargs > 1 && !isfinite(y)) || (nargs > 2 && !isfinite(z)))
		return 0;
	switch (op) {
	case EXPR_DIV:
		if (y == 0)
			return PROG_ZERO_DIVIDE;
		return isinf(r) ? PROG_OVERFLOW : r != 0 || x != 0 ? PROG_UNDERFLOW : 0;
	case EXPR_LOG: case EXPR_LOG2: case EXPR_LOG1P: case EXPR_RSQRT:
		return isinf(r) ? PROG_ZERO_DIVIDE : 0;
	case EXPR_MUL: case EXPR_FMA: case EXPR_POW:
		if (isinf(r))
			return PROG_OVERFLOW;
		return x != 0 && (op == EXPR_POW || y != 0) && isfinite(r) ? PROG_UNDERFLOW : 0;
	case EXPR_EXP: case EXPR_EXP2: case EXPR_EXPM1:
		return isinf(r) ? PROG_OVERFLOW : isfinite(r) ? PROG_UNDERFLOW : 0;
	case EXPR_ADD: case EXPR_SUB:
		return isinf(r) ? PROG_OVERFLOW : 0; /* a sum in the subnormal range is exact */
	default:
		return 0;
	}
}

/* An integer dot wraps in its own type, as its sums and products written
 * out do (the dot of i32 vectors is an i32, whatever it is stored into). */
static void run_dot(Prog *p, const Instr *in, double *val, double *err, int f32, double tiny)
{
	TyKind kind = (TyKind)in->kind;
	const double *x = val + in->src[0], *y = val + in->src[1];
	const double *ex = err + in->src[0], *ey = err + in->src[1];
	const double *rx = p->rest + in->src[0], *ry = p->rest + in->src[1];
	double s = 0, e = 0, mag = 0;
	int64_t si = 0;
	float sf = 0;
	for (int i = 0; i < in->slen[0]; i++) {
		double q = x[i] * y[i];
		if (f32)
			sf += (float)x[i] * (float)y[i];
		else if (int_kind(kind))
			si = ir_eval_int(EXPR_FMA, kind, 0, ir_int_exact(x[i], rx[i]), ir_int_exact(y[i], ry[i]), si);
		else
			s += q;
		mag += fabs(q);
		e += ex[i] * fabs(y[i]) + ey[i] * fabs(x[i]) + (f32 ? 0x1p-24 : 0x1p-53) * ex[i] * ey[i];
		p->range |= range_event(EXPR_MUL, 2, x[i], y[i], 0, q, f32 ? FLT_MIN : DBL_MIN);
	}
	if (int_kind(kind))
		s = (double)si, p->rest[in->dst] = ir_int_rest(si, s);
	val[in->dst] = f32 ? sf : s;
	err[in->dst] = bounded(e + 2 * in->slen[0] * (mag + tiny));
}

/* The common float64 ops without the per-element dispatch of the generic
 * loop: vector fields make these the inner loops of every law trial. */
static int run_fast(Prog *p, const Instr *in, double *val, double *err)
{
	int s0 = in->slen[0] > 1, s1 = in->slen[1] > 1;
	const double *x = val + in->src[0], *ex = err + in->src[0];
	const double *y = val + in->src[1], *ey = err + in->src[1];
	double *r = val + in->dst, *er = err + in->dst;
	switch (in->op) {
	case EXPR_ADD:
		for (int i = 0; i < in->len; i++) {
			r[i] = x[s0 * i] + y[s1 * i], er[i] = isfinite(r[i]) ? ex[s0 * i] + ey[s1 * i] + fabs(r[i]) : 0;
			if (isinf(r[i]))
				p->range |= range_event(EXPR_ADD, 2, x[s0 * i], y[s1 * i], 0, r[i], DBL_MIN);
		}
		return 1;
	case EXPR_MUL:
		for (int i = 0; i < in->len; i++) {
			double a = x[s0 * i], b = y[s1 * i];
			r[i] = a * b;
			er[i] = isfinite(r[i]) ? bounded(ex[s0 * i] * fabs(b) + ey[s1 * i] * fabs(a) +
							 0x1p-53 * ex[s0 * i] * ey[s1 * i] + fabs(r[i]) + 0x1p-1021) : 0;
			if (!(fabs(r[i]) >= DBL_MIN && isfinite(r[i])))
				p->range |= range_event(EXPR_MUL, 2, a, b, 0, r[i], DBL_MIN);
		}
		return 1;
	case EXPR_CAST:
		for (int i = 0; i < in->len; i++)
			r[i] = x[s0 * i], er[i] = ex[s0 * i];
		return 1;
	default:
		return 0;
	}
}

/* The same ops in float32 (MODE_F32), the generic loop's results and
 * bounds: the law trials in the spec's types and the float32 folds run
 * mostly through these. */
static int run_fast_f32(Prog *p, const Instr *in, double *val, double *err)
{
	int s0 = in->slen[0] > 1, s1 = in->slen[1] > 1;
	const double *x = val + in->src[0], *ex = err + in->src[0];
	const double *y = val + in->src[1], *ey = err + in->src[1];
	double *r = val + in->dst, *er = err + in->dst;
	const double tiny = 0x1p-125;
	switch (in->op) {
	case EXPR_ADD:
		for (int i = 0; i < in->len; i++) {
			double a = x[s0 * i], b = y[s1 * i];
			r[i] = (float)a + (float)b;
			er[i] = isfinite(r[i]) ? bounded(ex[s0 * i] + ey[s1 * i] + fabs(r[i]) + tiny) : 0;
			if (isinf(r[i]))
				p->range |= range_event(EXPR_ADD, 2, a, b, 0, r[i], FLT_MIN);
		}
		return 1;
	case EXPR_MUL:
		for (int i = 0; i < in->len; i++) {
			double a = x[s0 * i], b = y[s1 * i];
			r[i] = (float)a * (float)b;
			er[i] = isfinite(r[i]) ? bounded(ex[s0 * i] * fabs(b) + ey[s1 * i] * fabs(a) +
							 0x1p-24 * ex[s0 * i] * ey[s1 * i] + fabs(r[i]) + tiny) : 0;
			if (!(fabs(r[i]) >= FLT_MIN && isfinite(r[i])))
				p->range |= range_event(EXPR_MUL, 2, a, b, 0, r[i], FLT_MIN);
		}
		return 1;
	case EXPR_CAST:
		if (in->skind[0] == TY_I64)
			return 0; /* from the exact integer, rounded once */
		for (int i = 0; i < in->len; i++) {
			r[i] = (float)x[s0 * i];
			er[i] = isfinite(r[i]) ? ex[s0 * i] + fabs(r[i]) + tiny : 0;
		}
		return 1;
	default:
		return 0;
	}
}

/* Both outputs of the top-k merge come from one ranking; a value keeps
 * the error bound of the operand it was taken from. */
static void run_topk(const Instr *in, double *val, double *err)
{
	double v[64], ix[64], e[64], ov[16], oi[16];
	int n = 0;
	for (int s = 0; s < 4; s += 2)
		for (int t = 0; t < in->slen[s] && n < 64; t++, n++) {
			v[n] = val[in->src[s] + t];
			e[n] = err[in->src[s] + t];
			ix[n] = val[in->src[s + 1] + (in->slen[s + 1] > 1 ? t : 0)];
		}
	ir_topk(v, ix, n, in->len, ov, oi);
	for (int t = 0; t < in->len; t++) {
		if (in->op == EXPR_TOPK_IDX) {
			val[in->dst + t] = oi[t], err[in->dst + t] = 0;
			continue;
		}
		val[in->dst + t] = ov[t], err[in->dst + t] = 0;
		for (int q = 0; q < n; q++)
			if (ix[q] == oi[t] && (v[q] == ov[t] || (isnan(v[q]) && isnan(ov[t])))) {
				err[in->dst + t] = e[q];
				break;
			}
	}
}

unsigned prog_range(const Prog *p) { return p->range; }

void prog_const_rounding(Prog *p, int on) { p->const_rounding = on; }

void prog_int_rounding(Prog *p, int on) { p->int_rounding = on; }

/* An integer converted to f32 in a float64 run, rounded as the spec's
 * f32 rounds it (prog_int_rounding); an i64 from its exact value. */
static void run_int_to_f32(Prog *p, const Instr *in, double *val, double *err)
{
	int s0 = in->slen[0] > 1;
	for (int i = 0; i < in->len; i++) {
		int64_t x = ir_int_exact(val[in->src[0] + s0 * i], p->rest[in->src[0] + s0 * i]);
		val[in->dst + i] = (double)(float)x;
		err[in->dst + i] = err[in->src[0] + s0 * i];
	}
}

/* The ops without a loop of their own, element by element.  An operand
 * that is not an integer has no rest (0), so only an op with an integer
 * operand reads them. */
static void run_generic(Prog *p, const Instr *in, Mode mode, double tiny, double u)
{
	double *val = p->val, *err = p->err, *rest = p->rest;
	TyKind kind = (TyKind)in->ekind[mode];
	Op op = (Op)in->op;
	int f32 = kind == TY_F32, ints = int_kind(kind), rests = in->int_args, isfloat = in->efloat[mode];
	int cast = op == EXPR_CAST, cmp = (ir_ops[op].flags & F_CMP) != 0, where = op == EXPR_WHERE;
	int n1 = in->nargs > 1, n2 = in->nargs > 2;
	int s0 = in->slen[0] > 1, s1 = in->slen[1] > 1, s2 = in->slen[2] > 1;
	double least = f32 ? FLT_MIN : DBL_MIN;
	for (int i = 0; i < in->len; i++) {
		int a0 = in->src[0] + s0 * i, a1 = in->src[1] + s1 * i, a2 = in->src[2] + s2 * i;
		double x = val[a0], y = n1 ? val[a1] : 0, z = n2 ? val[a2] : 0;
		double ex = err[a0], ey = n1 ? err[a1] : 0, ez = n2 ? err[a2] : 0;
		double rx = rests ? rest[a0] : 0, ry = rests && n1 ? rest[a1] : 0, r;
		if (ints) {
			double rz = n2 ? rest[a2] : 0;
			int64_t ri = ir_eval_int(op, kind, in->k, ir_int_exact(x, rx), ir_int_exact(y, ry), ir_int_exact(z, rz));
			r = (double)ri;
			rest[in->dst + i] = ir_int_rest(ri, r);
		} else if (cast && rx != 0) { /* an i64 past 2^53: rounded once, from the integer */
			int64_t xi = ir_int_exact(x, rx);
			r = kind == TY_F32 ? (double)(float)xi : kind == TY_BOOL ? xi != 0 : (double)xi;
		} else if (cmp && (rx != 0 || ry != 0)) {
			int64_t a = ir_int_exact(x, rx), b = ir_int_exact(y, ry);
			r = op == EXPR_LT ? a < b : op == EXPR_LE ? a <= b : op == EXPR_GT ? a > b
			  : op == EXPR_GE ? a >= b : op == EXPR_EQ ? a == b : a != b;
		} else if (cast) {
			r = ir_round(kind, x);
		} else {
			r = ir_eval_op(op, kind, in->k, x, y, z);
		}
		val[in->dst + i] = r;
		if (where)
			err[in->dst + i] = x != 0 ? ey : ez;
		else
			err[in->dst + i] = err_op(op, in->k, x, y, ex, ey, ez, r, tiny, u);
		if (!(isfinite(r) && fabs(r) >= least) && isfloat)
			p->range |= range_event(op, in->nargs, x, y, z, r, least);
	}
}

void prog_run(Prog *p, Mode mode)
{
	double *val = p->val, *err = p->err;
	/* the smallest subnormal in units of the mode's u */
	double tiny = mode == MODE_F64 ? 0x1p-1021 : 0x1p-125, u = mode == MODE_F64 ? 0x1p-53 : 0x1p-24;
	p->range = 0;
	for (int i = 0; i < p->nf32consts; i++) {
		const Expr *e = p->nodes[p->f32consts[i]];
		for (int j = 0; j < width(e); j++)
			err[p->off[p->f32consts[i]] + j] = p->const_rounding && mode == MODE_F64 ? fabs(e->num) * 0x1p29 : 0;
	}
	for (int c = 0; c < p->ncode; c++) {
		const Instr *in = &p->code[c];
		TyKind kind = (TyKind)in->ekind[mode];
		int f32 = kind == TY_F32;
		switch (in->op) {
		case EXPR_DOT:
			run_dot(p, in, val, err, f32, tiny);
			continue;
		case EXPR_TOPK: case EXPR_TOPK_IDX:
			run_topk(in, val, err);
			continue;
		case EXPR_INDEX:
			val[in->dst] = val[in->src[0] + in->k];
			err[in->dst] = err[in->src[0] + in->k];
			p->rest[in->dst] = p->rest[in->src[0] + in->k];
			continue;
		case EXPR_CAST:
			if (p->int_rounding && mode == MODE_F64 && in->kind == TY_F32 && int_kind(in->skind[0])) {
				run_int_to_f32(p, in, val, err);
				continue;
			}
			break;
		default:
			break;
		}
		if (kind == TY_F64 && run_fast(p, in, val, err))
			continue;
		if (f32 && run_fast_f32(p, in, val, err))
			continue;
		run_generic(p, in, mode, tiny, u);
	}
}
