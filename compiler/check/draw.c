/* draw.c: input families and reachable states for the checker. */
#include "compiler/check/draw.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const draw_family_name[NDRAW] = {"normal", "integer grid", "spread maxima", "wide", "mean 1e8",
				     "large counts", "spec constants"};

enum { ASSUME_TRIES = 64, ROW_TRIES = 16 };

double draw_value(DrawFamily f, TyKind storage, double offset, int width, uint64_t *rng)
{
	double v;
	switch (storage) {
	case TY_BOOL:
		return (double)(rng_next(rng) & 1);
	case TY_I32:
	case TY_I64:
		return f == DRAW_GRID ? rng_int(rng, -3, 3) : rng_int(rng, -100, 100);
	default:
		break;
	}
	/* Vector inputs meet in dot products: scale them so that a dot of two
	 * behaves like one scalar of the family, and keep huge means to scalars. */
	double shrink = width > 1 ? 1 / sqrt((double)width) : 1;
	switch (f) {
	case DRAW_GRID: v = rng_int(rng, -3, 3); break;
	case DRAW_SPREAD:
		v = width > 1 ? rng_normal(rng) * (1 + fabs(offset) / 8) * shrink : offset + rng_normal(rng);
		break;
	case DRAW_WIDE: v = 20 * rng_normal(rng) * shrink; break;
	case DRAW_MEAN:
		/* f8e4m3's 4 significant bits: a unit spread under a mean of 100
		 * would round away, so the spread is 8, a step there */
		v = width > 1		     ? rng_normal(rng) * shrink
		    : storage == TY_F8E4M3 ? 100 + 8 * rng_normal(rng)
					     : (storage == TY_F16 ? 1e3 : 1e8) + rng_normal(rng);
		break;
	default: v = rng_normal(rng) * shrink; break;
	}
	return ir_round(storage, v);
}

/* An input's place among all of them: element, column and row inputs, in
 * that order. */
static int span_at(const Machine *m, int kind, int slot)
{
	const Carrier *c = m->c;
	return kind == VAR_ELEM ? slot : kind == VAR_COL ? c->nelem + slot : c->nelem + c->ncol + slot;
}

/* ---- integer inputs that stand for positions ---- */

/* An integer input compared with i, j or len, or added to or taken from
 * one of them (a class label against j), is a position: drawn from the
 * families' [-100, 100] it would meet j in one row of ten, and a carrier
 * wrong only where it does would pass.  Such inputs are drawn in [0, len)
 * mostly, and just outside it (-1, below, len, past it) now and then:
 * where assume forbids those, rejection redraws them. */

/* The integer input e stands for, through casts, components and constant
 * offsets (label + 1 == j); NULL when it is none. */
static const Var *int_input(const Ir *ir, const Expr *e)
{
	while (e->op == EXPR_CAST || e->op == EXPR_INDEX ||
	       ((e->op == EXPR_ADD || e->op == EXPR_SUB) && (e->a[1]->op == EXPR_CONST || e->a[0]->op == EXPR_CONST)))
		e = e->op == EXPR_CAST || e->op == EXPR_INDEX || e->a[1]->op == EXPR_CONST ? e->a[0] : e->a[1];
	if (e->op != EXPR_VAR)
		return NULL;
	const Var *v = ir_var(ir, e->k);
	return (v->kind == VAR_ELEM || v->kind == VAR_COL || v->kind == VAR_ROW) && ty_is_int(v->ty) ? v : NULL;
}

/* Whether e is i, j or len, or a sum or difference with one of them. */
static int has_index(const Ir *ir, const Expr *e)
{
	if (e->op == EXPR_CAST || e->op == EXPR_NEG)
		return has_index(ir, e->a[0]);
	if (e->op == EXPR_ADD || e->op == EXPR_SUB)
		return has_index(ir, e->a[0]) || has_index(ir, e->a[1]);
	return e->op == EXPR_VAR && ir_var(ir, e->k)->kind == VAR_IDX;
}

typedef struct {
	Machine *m;
	unsigned char *flag; /* by span_at */
} IndexWalk;

static int mark_index(void *ctx, Expr *n)
{
	IndexWalk *w = ctx;
	const Ir *ir = w->m->c->ir;
	if (!(ir_ops[n->op].flags & F_CMP) && n->op != EXPR_ADD && n->op != EXPR_SUB)
		return 0;
	for (int s = 0; s < 2; s++) {
		const Var *v = int_input(ir, n->a[s]);
		if (v && has_index(ir, n->a[1 - s]))
			w->flag[span_at(w->m, v->kind, v->slot)] = 1;
	}
	return 0;
}

static void walk_all(IndexWalk *w, Expr **e, int n)
{
	for (int k = 0; e && k < n; k++)
		if (e[k])
			ir_contains(e[k], mark_index, w);
}

static void walk_defs(IndexWalk *w, const Def *d, int n)
{
	for (int k = 0; d && k < n; k++)
		ir_contains(d[k].e, mark_index, w);
}

const unsigned char *draw_index_inputs(Machine *m)
{
	if (m->index_in)
		return m->index_in;
	Carrier *c = m->c;
	m->index_in = calloc(c->nelem + c->ncol + c->nrow + 1, 1);
	if (!m->index_in)
		abort();
	IndexWalk w = {m, m->index_in};
	walk_all(&w, c->lift, c->nstate);
	walk_all(&w, c->merge, c->nstate);
	walk_all(&w, c->step, c->nstate);
	walk_all(&w, c->step_right, c->nstate);
	walk_all(&w, &c->assume, 1);
	walk_all(&w, &c->mask, 1);
	walk_defs(&w, c->finalize, c->nfinal);
	walk_defs(&w, c->map, c->nmap);
	walk_defs(&w, c->ref, c->nref);
	walk_defs(&w, c->lets, c->nlets);
	return m->index_in;
}

/* ---- the row index ---- */

static int is_row_index(void *ctx, Expr *n) { return n->op == EXPR_VAR && n->k == *(const int *)ctx; }

static int any_reads(Expr *const *e, int n, int var)
{
	for (int k = 0; e && k < n; k++)
		if (e[k] && ir_contains(e[k], is_row_index, &var))
			return 1;
	return 0;
}

static int defs_read(const Def *d, int n, int var)
{
	for (int k = 0; d && k < n; k++)
		if (ir_contains(d[k].e, is_row_index, &var))
			return 1;
	return 0;
}

int draw_negative_i(Machine *m)
{
	if (!m->neg_i) {
		Carrier *c = m->c;
		int i = c->idx[IDX_I];
		int reads = any_reads(c->lift, c->nstate, i) || any_reads(c->merge, c->nstate, i) ||
			    any_reads(&c->assume, 1, i) || any_reads(&c->mask, 1, i) || defs_read(c->finalize, c->nfinal, i) ||
			    defs_read(c->ref, c->nref, i) || defs_read(c->lets, c->nlets, i);
		m->neg_i = reads && !spec_unpageable(c) ? 1 : -1;
	}
	return m->neg_i > 0;
}

/* ---- the spec's own constants ---- */

enum { MAX_CONSTS = 64 };

static void push_constant(Machine *m, double v)
{
	if (!isfinite(v) || v == 0 || m->nconsts == MAX_CONSTS)
		return;
	for (int i = 0; i < m->nconsts; i++)
		if (fabs(m->consts[i]) == fabs(v))
			return;
	m->consts[m->nconsts++] = fabs(v);
}

/* e's value where it holds no input, state or param (a literal, exp(25)
 * where the folder left it): 1 with *v set. */
static int constant_of(const Expr *e, double *v)
{
	if (e->op == EXPR_CONST)
		return *v = e->num, 1;
	if (e->ty.len || e->op == EXPR_VAR || e->nargs == 0 || e->nargs > 3 || (ir_ops[e->op].flags & F_REDUCE) ||
	    e->op == EXPR_DOT || e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX)
		return 0;
	double x[3] = {0, 0, 0};
	for (int i = 0; i < e->nargs; i++)
		if (!constant_of(e->a[i], &x[i]))
			return 0;
	TyKind kind = e->a[0]->ty.kind == TY_NUM ? TY_F64 : (TyKind)e->a[0]->ty.kind;
	*v = ir_eval_op((Op)e->op, kind, e->k, x[0], x[1], x[2]);
	return 1;
}

/* Where e crosses k, taken back through the steps that can be undone
 * (sqrt, exp, log, a constant added or multiplied): sqrt(abs(a.s + b.s)) >
 * exp(25) switches where a.s + b.s is exp(25)^2, and log2(abs(s) + 1) > 70
 * where s is 2^70 - 1; the states must reach those values to be drawn
 * there.  Every value on the way is a constant. */
static void add_preimage(Machine *m, const Expr *e, double k)
{
	for (int depth = 0; depth < 8 && isfinite(k) && !e->ty.len; depth++) {
		double c;
		int s = -1;
		switch (e->op) {
		case EXPR_SQRT: k = k * k; break;
		case EXPR_RSQRT: k = 1 / (k * k); break;
		case EXPR_EXP: k = log(fabs(k)); break;
		case EXPR_EXP2: k = log2(fabs(k)); break;
		case EXPR_EXPM1: k = log1p(fabs(k)); break;
		case EXPR_LOG: k = exp(k); break;
		case EXPR_LOG2: k = exp2(k); break;
		case EXPR_LOG1P: k = expm1(k); break;
		case EXPR_POW: k = e->k ? pow(fabs(k), 1.0 / e->k) : NAN; break;
		case EXPR_ABS: case EXPR_NEG: case EXPR_CAST: break; /* the constants are drawn with either sign */
		case EXPR_ADD: case EXPR_SUB: case EXPR_MUL: case EXPR_DIV:
			s = constant_of(e->a[1], &c) ? 0 : constant_of(e->a[0], &c) ? 1 : -1;
			if (s < 0)
				return;
			if (e->op == EXPR_ADD)
				k -= c;
			else if (e->op == EXPR_SUB)
				k = s == 0 ? k + c : c - k;
			else if (e->op == EXPR_MUL)
				k = c ? k / c : NAN;
			else
				k = s == 0 ? k * c : k ? c / k : NAN;
			break;
		default: return;
		}
		e = s >= 0 ? e->a[s] : e->a[0];
		if (e->op == EXPR_CONST)
			return;
		push_constant(m, k);
	}
}

static int add_constant(void *ctx, Expr *n)
{
	Machine *m = ctx;
	double v;
	if (n->op == EXPR_CONST) {
		if (ty_is_float(n->ty))
			push_constant(m, n->num);
		return 0;
	}
	if (!constant_of(n, &v)) {
		if ((ir_ops[n->op].flags & F_CMP) && ty_is_float(n->a[0]->ty))
			for (int s = 0; s < 2; s++)
				if (constant_of(n->a[s], &v) && !constant_of(n->a[1 - s], &(double){0}))
					add_preimage(m, n->a[1 - s], v);
		return 0;
	}
	if (ty_is_float(n->ty))
		push_constant(m, v);
	return 0;
}

const double *draw_spec_constants(Machine *m, int *n)
{
	if (!m->consts) {
		Carrier *c = m->c;
		m->consts = calloc(MAX_CONSTS, sizeof *m->consts);
		if (!m->consts)
			abort();
		for (int k = 0; k < c->nstate; k++) {
			if (c->lift && c->lift[k])
				ir_contains(c->lift[k], add_constant, m);
			if (c->merge && c->merge[k])
				ir_contains(c->merge[k], add_constant, m);
		}
		for (int k = 0; k < c->nfinal; k++)
			ir_contains(c->finalize[k].e, add_constant, m);
	}
	*n = m->nconsts;
	return m->consts;
}

/* The next value of this storage above (dir > 0) or below v. */
static double next_in(TyKind storage, double v, int dir)
{
	if (storage == TY_F64)
		return nextafter(v, dir * INFINITY);
	if (storage == TY_F32)
		return nextafterf((float)v, dir * INFINITY);
	/* f16, bf16 and f8e4m3: a relative step of their precision, rounded */
	double step = storage == TY_F16 ? 0x1p-10 : storage == TY_BF16 ? 0x1p-7 : 0x1p-3;
	return ir_round(storage, v + dir * fabs(v) * step);
}

/* One value from the spec's constants for an input of this storage: a
 * constant, its negation, half, double, or the next float above or below it
 * (a comparison's two sides).  NAN where the spec has none. */
static double constant_value(Machine *m, TyKind storage, uint64_t *rng)
{
	int n;
	const double *k = draw_spec_constants(m, &n);
	if (!n)
		return NAN;
	double c = k[rng_int(rng, 0, n - 1)];
	if (rng_next(rng) & 1)
		c = -c;
	double v;
	switch (rng_int(rng, 0, 7)) {
	case 0: v = c / 2; break;
	case 1: v = 2 * c; break;
	case 2: v = next_in(storage, ir_round(storage, c), 1); break;
	case 3: v = next_in(storage, ir_round(storage, c), -1); break;
	default: v = c; break;
	}
	v = ir_round(storage, v);
	return isfinite(v) ? v : ir_round(storage, c);
}

/* Float inputs set to the spec's constants, three components in four. */
static void constant_decls(Machine *m, const Decl *d, int n, const int *off, double *dst, uint64_t *rng)
{
	for (int k = 0; k < n; k++)
		for (int t = 0; t < spec_decl_width(&d[k]); t++)
			if (ty_is_float(d[k].ty) && rng_int(rng, 0, 3)) {
				double v = constant_value(m, d[k].storage, rng);
				if (isfinite(v))
					dst[off[k] + t] = v;
			}
}

/* A position of a row of len: in [0, len) seven draws in eight. */
static double draw_position_value(int len, uint64_t *rng)
{
	if (len > 0 && rng_unit(rng) < 0.875)
		return rng_int(rng, 0, len - 1);
	switch (rng_int(rng, 0, 3)) {
	case 0: return -1;
	case 1: return -rng_int(rng, 2, len + 2);
	case 2: return len;
	default: return len + rng_int(rng, 1, 8);
	}
}

/* ix: the index flags of these inputs (NULL: none), len the row's length */
static void draw_decls(const Decl *d, int n, const int *off, double *dst, DrawFamily f, double offset,
		       const unsigned char *ix, int len, uint64_t *rng)
{
	for (int k = 0; k < n; k++)
		for (int t = 0; t < spec_decl_width(&d[k]); t++)
			dst[off[k] + t] = ix && ix[k] ? draw_position_value(len, rng)
						      : draw_value(f, d[k].storage, offset, spec_decl_width(&d[k]), rng);
}

/* Float inputs near the ones at src, each moved by about a tenth of itself
 * (and at least 1/64), into dst. */
static void nudge_decls(const Decl *d, int n, const int *off, const double *src, double *dst, uint64_t *rng)
{
	for (int k = 0; k < n; k++)
		for (int t = 0; t < spec_decl_width(&d[k]); t++) {
			double v = src[off[k] + t];
			if (ty_is_float(d[k].ty))
				v = ir_round(d[k].storage, v + rng_normal(rng) * fmax(fabs(v) / 10, 0x1p-6));
			dst[off[k] + t] = v;
		}
}

/* Wider draws, up to 2^8 times the family's scale: a bound such as w > 2
 * holds for a normal draw once in 40. */
static void widen_decls(const Decl *d, int n, const int *off, double *dst, int t, uint64_t *rng)
{
	double s = ldexp(1, 1 + (t % 8));
	for (int k = 0; k < n; k++)
		for (int u = 0; u < spec_decl_width(&d[k]); u++)
			if (ty_is_float(d[k].ty))
				dst[off[k] + u] = ir_round(d[k].storage, s * rng_normal(rng));
}

/* ---- intervals that assume puts on single inputs and params ---- */

/* Where assume bounds a scalar float input on its own (x > 1000,
 * abs(x - 7) < 0.001, conjunctions of such), draws outside the bounds are
 * moved inside them: rejection alone rarely or never hits them.  Each
 * interval holds every value assume admits, so eval_assume still decides.
 * Params the same, before the inputs (lg <= 0, temp > 1.5): drawn in
 * [0.05, 1] alone, they never met such an assume. */
typedef struct {
	double lo, hi;
} Span;

/* e's value where it does not depend on the position: a literal, or a
 * param where params are known (of_params: they are what is bounded, and
 * not drawn yet). */
static int known(Machine *m, const Expr *e, double *k, int of_params)
{
	if (e->ty.len)
		return 0;
	if (e->op == EXPR_CONST)
		return *k = e->num, 1;
	if (e->op == EXPR_NEG || e->op == EXPR_CAST)
		return known(m, e->a[0], k, of_params) ? (*k = e->op == EXPR_NEG ? -*k : *k, 1) : 0;
	if (of_params || e->op != EXPR_VAR || ir_var(m->c->ir, e->k)->kind != VAR_PARAM)
		return 0;
	*k = m->params[m->poff[ir_var(m->c->ir, e->k)->slot]];
	return 1;
}

/* e as s * v + b, v a scalar float input (of_params: a float or integer
 * param); 0 when it is not of that form. */
static int affine(Machine *m, const Expr *e, const Var **v, double *s, double *b, int of_params)
{
	double k;
	if (e->ty.len)
		return 0;
	if (e->op == EXPR_VAR) {
		*v = ir_var(m->c->ir, e->k);
		*s = 1, *b = 0;
		if (of_params)
			return (*v)->kind == VAR_PARAM && (*v)->ty.kind != TY_BOOL;
		return ((*v)->kind == VAR_ELEM || (*v)->kind == VAR_COL || (*v)->kind == VAR_ROW) && ty_is_float((*v)->ty);
	}
	if (e->op == EXPR_CAST)
		return ty_is_float(e->ty) && ty_is_float(e->a[0]->ty) && affine(m, e->a[0], v, s, b, of_params);
	if (e->op == EXPR_NEG) {
		if (!affine(m, e->a[0], v, s, b, of_params))
			return 0;
		*s = -*s, *b = -*b;
		return 1;
	}
	if (e->op != EXPR_ADD && e->op != EXPR_SUB && e->op != EXPR_MUL && e->op != EXPR_DIV)
		return 0;
	if (known(m, e->a[1], &k, of_params) && affine(m, e->a[0], v, s, b, of_params)) {
		switch (e->op) {
		case EXPR_ADD: *b += k; break;
		case EXPR_SUB: *b -= k; break;
		case EXPR_MUL: *s *= k, *b *= k; break;
		default: *s /= k, *b /= k; break;
		}
	} else if (e->op != EXPR_DIV && known(m, e->a[0], &k, of_params) && affine(m, e->a[1], v, s, b, of_params)) {
		switch (e->op) {
		case EXPR_ADD: *b += k; break;
		case EXPR_SUB: *s = -*s, *b = k - *b; break;
		default: *s *= k, *b *= k; break;
		}
	} else {
		return 0;
	}
	return isfinite(*s) && *s != 0 && isfinite(*b);
}

/* Narrow the spans by what e (true wherever assume is) says of one input
 * (of_params: of one param, the spans by its slot). */
static void narrow(Machine *m, const Expr *e, Span *sp, int of_params)
{
	if (e->op == EXPR_AND) {
		narrow(m, e->a[0], sp, of_params);
		narrow(m, e->a[1], sp, of_params);
		return;
	}
	if (!(ir_ops[e->op].flags & F_CMP) || e->op == EXPR_NE)
		return;
	int op = e->op;
	const Expr *u = e->a[0];
	double k, lo = -INFINITY, hi = INFINITY, s, b;
	if (!known(m, e->a[1], &k, of_params)) { /* k op u: u's side on the left */
		if (!known(m, e->a[0], &k, of_params))
			return;
		u = e->a[1];
		op = op == EXPR_LT ? EXPR_GT : op == EXPR_GT ? EXPR_LT : op == EXPR_LE ? EXPR_GE : op == EXPR_GE ? EXPR_LE : op;
	}
	if (u->op == EXPR_ABS) { /* |u| <= k: u in [-k, k]; |u| >= k is two pieces */
		if (op == EXPR_GT || op == EXPR_GE)
			return;
		u = u->a[0], lo = -k, hi = k;
	} else {
		lo = op == EXPR_LT || op == EXPR_LE ? -INFINITY : k;
		hi = op == EXPR_GT || op == EXPR_GE ? INFINITY : k;
	}
	const Var *v;
	if (isnan(k) || !affine(m, u, &v, &s, &b, of_params))
		return;
	double l = (lo - b) / s, h = (hi - b) / s; /* s * x + b in [lo, hi] */
	Span *x = &sp[of_params ? v->slot : span_at(m, v->kind, v->slot)];
	x->lo = fmax(x->lo, s > 0 ? l : h);
	x->hi = fmin(x->hi, s > 0 ? h : l);
}

/* The n spans that assume puts on its inputs (of_params 0) or on its
 * params (1) by their slot, or NULL where it bounds none on its own. */
static Span *spans_of(Machine *m, int n, int of_params)
{
	if (!m->c->assume || !n)
		return NULL;
	Span *sp = malloc(n * sizeof *sp);
	if (!sp)
		abort();
	for (int i = 0; i < n; i++)
		sp[i] = (Span){-INFINITY, INFINITY};
	narrow(m, m->c->assume, sp, of_params);
	int any = 0;
	for (int i = 0; i < n; i++)
		any |= sp[i].lo > -INFINITY || sp[i].hi < INFINITY;
	if (!any) {
		free(sp);
		return NULL;
	}
	return sp;
}

/* The spans for the current params, or NULL where assume bounds no input on its own. */
static Span *spans_new(Machine *m)
{
	return spans_of(m, m->c->nelem + m->c->ncol + m->c->nrow, 0);
}

/* A draw v moved into s: uniformly where s is bounded, else beyond its one
 * bound by v's own distance from zero, widened with the bound's size. */
static double into_span(Span s, double v, uint64_t *rng)
{
	if (v >= s.lo && v <= s.hi)
		return v;
	if (s.lo > s.hi)
		return v; /* assume is never true: rejection will say so */
	if (isfinite(s.lo) && isfinite(s.hi))
		return s.lo + (s.hi - s.lo) * rng_unit(rng);
	if (isfinite(s.lo))
		return s.lo + fabs(v) * (1 + fabs(s.lo) / 8);
	return s.hi - fabs(v) * (1 + fabs(s.hi) / 8);
}

/* The spans that assume puts on params by their slot, or NULL where it
 * bounds none on its own. */
static Span *param_spans(Machine *m)
{
	return spans_of(m, m->c->nparams, 1);
}

/* An integer param's draw v moved into s, as a whole number there. */
static double int_into_span(Span s, double v, uint64_t *rng)
{
	if ((v >= s.lo && v <= s.hi) || s.lo > s.hi)
		return v;
	v = round(into_span(s, v, rng));
	return v < s.lo ? ceil(s.lo) : v > s.hi ? floor(s.hi) : v;
}

static void fit_decls(Machine *m, const Decl *d, int n, const int *off, int kind, double *dst, const Span *sp,
		      uint64_t *rng)
{
	for (int k = 0; sp && k < n; k++) {
		Span s = sp[span_at(m, kind, k)];
		if (spec_decl_width(&d[k]) == 1 && ty_is_float(d[k].ty) && (s.lo > -INFINITY || s.hi < INFINITY))
			dst[off[k]] = ir_round(d[k].storage, into_span(s, dst[off[k]], rng));
	}
}

/* Redraw the position's own inputs until assume holds: from the family
 * first; then from wider draws, and near the previous position's inputs,
 * which hold it (an interval such as 5 < w < 6 is rarely hit twice by
 * chance, but its neighbourhood is). */
static int draw_position(Machine *m, DrawFamily f, Row *r, int j, double offset, int keep_cols, const Span *sp,
			 uint64_t *rng)
{
	Carrier *c = m->c;
	double *col = r->colv + (size_t)j * m->colw, *el = r->elemv + (size_t)j * m->elemw;
	const unsigned char *ix = draw_index_inputs(m);
	for (int t = 0; t < ASSUME_TRIES; t++) {
		if (!keep_cols)
			draw_decls(c->col, c->ncol, m->coloff, col, f, offset, ix + span_at(m, VAR_COL, 0), r->len, rng);
		draw_decls(c->elem, c->nelem, m->elemoff, el, f, offset, ix + span_at(m, VAR_ELEM, 0), r->len, rng);
		if (f == DRAW_CONSTS) {
			if (!keep_cols)
				constant_decls(m, c->col, c->ncol, m->coloff, col, rng);
			constant_decls(m, c->elem, c->nelem, m->elemoff, el, rng);
		}
		if (t >= ASSUME_TRIES / 4 && j > 0 && t % 2) {
			if (!keep_cols)
				nudge_decls(c->col, c->ncol, m->coloff, col - m->colw, col, rng);
			nudge_decls(c->elem, c->nelem, m->elemoff, el - m->elemw, el, rng);
		} else if (t >= ASSUME_TRIES / 4) {
			if (!keep_cols)
				widen_decls(c->col, c->ncol, m->coloff, col, t, rng);
			widen_decls(c->elem, c->nelem, m->elemoff, el, t, rng);
		}
		if (!keep_cols)
			fit_decls(m, c->col, c->ncol, m->coloff, VAR_COL, col, sp, rng);
		fit_decls(m, c->elem, c->nelem, m->elemoff, VAR_ELEM, el, sp, rng);
		if (eval_assume(m, r, j))
			return 0;
	}
	return -1;
}

int draw_row(Machine *m, DrawFamily f, Row *r, uint64_t *rng) { return draw_row_keep(m, f, r, 0, rng); }

int draw_row_keep(Machine *m, DrawFamily f, Row *r, int keep_cols, uint64_t *rng)
{
	Carrier *c = m->c;
	Span *sp = spans_new(m);
	for (int t = 0; t < ROW_TRIES; t++) {
		double offset = f == DRAW_SPREAD ? 300 * rng_unit(rng) - 150 : 0;
		draw_decls(c->row, c->nrow, m->rowoff, r->rowv, f, offset, draw_index_inputs(m) + span_at(m, VAR_ROW, 0),
			   r->len, rng);
		fit_decls(m, c->row, c->nrow, m->rowoff, VAR_ROW, r->rowv, sp, rng);
		/* With the columns kept and no element inputs, positions have
		 * nothing to draw: only an assume can tell them apart (attention's
		 * rows x keys would otherwise cost a loop of rows x len). */
		int ok = 1, nothing = keep_cols && !c->nelem && !c->assume;
		for (int j = 0; ok && !nothing && j < r->len; j++)
			ok = !draw_position(m, f, r, j, offset, keep_cols, sp, rng);
		if (ok) {
			free(sp);
			return 0;
		}
	}
	free(sp);
	return -1;
}

double draw_param_value(const char *s, char **end)
{
	if (strcmp(s, "true") && strcmp(s, "false"))
		return strtod(s, end);
	if (end)
		*end = (char *)s + strlen(s);
	return s[0] == 't';
}

static int draw_params_unmet(const Machine *m, const unsigned char *drawn, char *msg, size_t n);

/* A misspelt param (tmp for temp) is found at once in the list of the
 * spec's params, which the message gives. */
void draw_param_unknown(const Carrier *c, const char *name, char *msg, size_t n)
{
	int at = snprintf(msg, n, "the spec has no param '%s'", name);
	for (int p = 0; p < c->nparams && at >= 0 && (size_t)at < n; p++)
		at += snprintf(msg + at, n - at, "%s%s", p ? ", " : " (its params: ", c->params[p].name);
	if (at >= 0 && (size_t)at < n)
		snprintf(msg + at, n - at, "%s", c->nparams ? ")" : " (it has none)");
}

int draw_params(Machine *m, const Define *ov, int nov, uint64_t *rng, char *msg, size_t n)
{
	Carrier *c = m->c;
	for (int k = 0; k < nov; k++) {
		int p = 0; /* the param it names (names are unique) */
		while (p < c->nparams && strcmp(c->params[p].name, ov[k].name))
			p++;
		int found = p < c->nparams;
		char *end;
		errno = 0;
		double v = draw_param_value(ov[k].value, &end);
		if (!found) {
			int at = snprintf(msg, n, "--param %s: ", ov[k].name);
			if (at >= 0 && (size_t)at < n)
				draw_param_unknown(c, ov[k].name, msg + at, n - at);
			return -1;
		}
		if (!*ov[k].value || *end) {
			int flag = found && c->params[p].storage == TY_BOOL;
			snprintf(msg, n, flag ? "--param %s=%s: not a bool (true, false, 0 or 1)" : "--param %s=%s: not a number",
				 ov[k].name, ov[k].value);
			return -1;
		}
		if (errno == ERANGE && isinf(v)) { /* "inf" itself is taken as written */
			snprintf(msg, n, "--param %s=%s: beyond a double's range", ov[k].name, ov[k].value);
			return -1;
		}
		TyKind s = c->params[p].storage;
		if (s == TY_F32 && !isinf(v) && isinf((float)v)) { /* inf as written is a value; 1e40 is a typo's */
			snprintf(msg, n, "--param %s=%s: beyond f32's range", ov[k].name, ov[k].value);
			return -1;
		}
		/* params are doubles on their way to every device (AssocValue):
		 * an i64 one past 2^53 would be another integer than written */
		char *iend;
		errno = 0;
		long long exact = s == TY_I64 ? strtoll(ov[k].value, &iend, 10) : 0;
		int held = v == -0x1p63 ? exact == LLONG_MIN : fabs(v) < 0x1p63 && (long long)v == exact;
		if (s == TY_I64 && !*iend && errno != ERANGE && !held) {
			snprintf(msg, n, "--param %s=%s: an i64 past 2^53, which params (doubles) hold only rounded (to %.0f)",
				 ov[k].name, ov[k].value, v);
			return -1;
		}
		if (!ir_holds(s, v)) {
			snprintf(msg, n, "--param %s=%s: not a%s %s", ov[k].name, ov[k].value, s == TY_BOOL ? "" : "n",
				 s == TY_BOOL ? "bool (true, false, 0 or 1)" : "integer in range");
			return -1;
		}
	}
	Span *sp = param_spans(m);
	int held = 0;
	/* drawn: the params no override fixes */
	unsigned char *drawn = calloc(c->nparams + 1, 1);
	if (!drawn)
		abort();
	for (int t = 0; t < ASSUME_TRIES; t++) {
		for (int p = 0; p < c->nparams; p++) {
			double v = 0.05 + 0.95 * rng_unit(rng);
			if (c->params[p].storage == TY_BOOL)
				v = 1;
			else if (ty_is_int(c->params[p].ty))
				v = sp ? int_into_span(sp[p], rng_int(rng, 1, 8), rng) : rng_int(rng, 1, 8);
			else if (sp)
				v = into_span(sp[p], v, rng);
			drawn[p] = 1;
			for (int k = 0; k < nov; k++)
				if (!strcmp(c->params[p].name, ov[k].name))
					v = draw_param_value(ov[k].value, NULL), drawn[p] = 0;
			m->params[m->poff[p]] = ir_round(c->params[p].storage, v);
		}
		if (!c->assume || !c->nparams)
			break;
		/* assume may also constrain inputs; a one-position row tells whether params alone can hold */
		Row *r = eval_row_new(m, 1);
		int ok = draw_row(m, DRAW_NORMAL, r, rng) == 0;
		eval_row_free(r);
		if (ok)
			break;
		/* a part over params alone that no try met: theirs, not the inputs' */
		int unmet = draw_params_unmet(m, drawn, msg, n);
		held |= !unmet;
		if (t == ASSUME_TRIES - 1 && !held) {
			free(sp), free(drawn);
			return -1;
		}
	}
	free(sp), free(drawn);
	return 0; /* where inputs break it, rows will report that assume cannot be satisfied */
}

/* drawn: NULL, or the params drawn (by slot), of which a conjunct false
 * at m's params must read one: it is then the draw's, and msg says so. */
static int conjunct_breaks(const Machine *m, const Expr *e, const unsigned char *fixed, const unsigned char *drawn,
			   char *msg, size_t n)
{
	const Carrier *c = m->c;
	if (e->op == EXPR_AND)
		return conjunct_breaks(m, e->a[0], fixed, drawn, msg, n) ||
		       conjunct_breaks(m, e->a[1], fixed, drawn, msg, n);
	Expr *root = (Expr *)e;
	Prog *p = prog_new(c->ir, &root, 1);
	int leaves = prog_nleaves(p), only_params = leaves > 0, any_drawn = 0;
	for (int i = 0; i < leaves && only_params; i++) {
		const Expr *x = prog_leaf(p, i);
		only_params = x->op == EXPR_VAR && ir_var(c->ir, x->k)->kind == VAR_PARAM &&
			      (!fixed || fixed[ir_var(c->ir, x->k)->slot]);
		if (only_params) {
			prog_leaf_val(p, i, NULL)[0] = m->params[m->poff[ir_var(c->ir, x->k)->slot]];
			any_drawn |= drawn && drawn[ir_var(c->ir, x->k)->slot];
		}
	}
	int broken = 0;
	if (only_params && (!drawn || any_drawn)) {
		prog_run(p, MODE_F32); /* as eval_assume decides it */
		broken = prog_root(p, 0, NULL)[0] == 0;
	}
	if (broken && drawn) {
		/* the params drawn that it reads, each once, for --param */
		char names[512] = "", sets[512] = "";
		int k = 0;
		for (int i = 0; i < leaves; i++) {
			const Var *v = ir_var(c->ir, prog_leaf(p, i)->k);
			int seen = 0;
			for (int q = 0; q < i; q++)
				seen |= ir_var(c->ir, prog_leaf(p, q)->k) == v;
			if (seen || !drawn[v->slot])
				continue;
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", v->name);
			snprintf(sets + strlen(sets), sizeof sets - strlen(sets), "%s--param %s=...", k++ ? " " : "",
				 v->name);
		}
		char *text = ir_str_max(c->ir, e, 200);
		snprintf(msg, n, "no draw of param%s %s satisfies 'assume' (%s): give %s", k > 1 ? "s" : "", names, text,
			 sets);
		free(text);
	} else if (broken) {
		char vals[512] = "", num[40];
		for (int i = 0; i < leaves; i++) {
			const Var *v = ir_var(c->ir, prog_leaf(p, i)->k);
			double x = m->params[m->poff[v->slot]];
			snprintf(num, sizeof num, "%.15g", x); /* as the user wrote it, not to 3 digits */
			if (strtod(num, NULL) != x)
				snprintf(num, sizeof num, "%.17g", x);
			if (c->params[v->slot].storage == TY_BOOL)
				snprintf(num, sizeof num, "%s", x != 0 ? "true" : "false");
			snprintf(vals + strlen(vals), sizeof vals - strlen(vals), "%s%s = %s", i ? ", " : "", v->name, num);
		}
		char *text = ir_str_max(c->ir, e, 200);
		snprintf(msg, n, "param%s %s break%s 'assume' (%s)", leaves > 1 ? "s" : "", vals, leaves > 1 ? "" : "s",
			 text);
		free(text);
	}
	prog_free(p);
	return broken;
}

int draw_params_break_assume(const Machine *m, const unsigned char *fixed, char *msg, size_t n)
{
	return m->c->assume && conjunct_breaks(m, m->c->assume, fixed, NULL, msg, n);
}

static int draw_params_unmet(const Machine *m, const unsigned char *drawn, char *msg, size_t n)
{
	return m->c->assume && conjunct_breaks(m, m->c->assume, NULL, drawn, msg, n);
}

/* ---- samples ---- */

static int seg_len(uint64_t *rng)
{
	double u = rng_unit(rng);
	return u < 0.1 ? 0 : u < 0.7 ? rng_int(rng, 1, 3) : u < 0.95 ? rng_int(rng, 4, 12) : rng_int(rng, 13, 40);
}

/* A state of finite values, or infinities where the identity has them; or,
 * folded from a short row of moderate values (N(0, 1), small integers: no
 * overflow on the way), any infinity, which only the spec's own lift or
 * merge can have made (where(x > 0, x, -inf), log(0)): the laws must hold
 * there too, and the proofs, over finite reals, say nothing of it. */
static int usable(Machine *m, const Sample *s, const double *v, const double *ident)
{
	if (s->whole) /* a NaN where the reference has a number is what the soundness check is for */
		return 1;
	int made = !s->doublings && (s->fam == DRAW_NORMAL || s->fam == DRAW_GRID);
	for (int k = 0; k < m->sw; k++)
		if (isnan(v[k]) || (isinf(v[k]) && v[k] != ident[k] && !made))
			return 0;
	return 1;
}

int draw_sample_eval(Machine *m, Sample *s)
{
	double *t = malloc(4 * m->sw * sizeof *t);
	if (!t)
		abort();
	int ok = 1;
	for (int mode = 0; mode < 2; mode++) {
		uint64_t rng = s->seed;
		eval_fold_exact(m, (Mode)mode, s->row, s->lo, s->hi, s->shape, &rng, s->v[mode], t, s->rest[mode]);
		for (int d = 0; d < s->doublings; d++) {
			memcpy(t, s->v[mode], m->sw * sizeof *t);
			memset(t + m->sw, 0, m->sw * sizeof *t);
			memcpy(t + 3 * m->sw, s->rest[mode], m->sw * sizeof *t);
			eval_merge_exact(m, (Mode)mode, t, t + m->sw, t + 3 * m->sw, t, t + m->sw, t + 3 * m->sw, s->v[mode],
					 t + 2 * m->sw, s->rest[mode]);
		}
		ok &= usable(m, s, s->v[mode], m->ident[mode]);
	}
	free(t);
	return ok ? 0 : -1;
}

static Sample *sample_make(Machine *m, DrawFamily f, int lo, int hi, int doublings, int whole, uint64_t *rng)
{
	Sample *s = calloc(1, sizeof *s);
	if (!s)
		abort();
	s->whole = whole;
	s->fam = f;
	s->lo = lo;
	s->hi = hi;
	s->doublings = doublings;
	s->shape = (Shape)rng_int(rng, 0, NSHAPES - 1);
	s->seed = rng_next(rng);
	s->row = eval_row_new(m, s->hi);
	s->row->i = rng_int(rng, 0, s->hi + 2);
	/* a paged query before its sequence's first key, one row in four */
	if (draw_negative_i(m) && rng_int(rng, 0, 3) == 0)
		s->row->i = -rng_int(rng, 1, s->hi + 8);
	for (int k = 0; k < 2; k++)
		if (!(s->v[k] = calloc(m->sw, sizeof(double))) || !(s->rest[k] = calloc(m->sw, sizeof(double))))
			abort();
	DrawFamily df = f == DRAW_COUNTS ? DRAW_NORMAL : f;
	if (draw_row(m, df, s->row, rng) || draw_sample_eval(m, s)) {
		draw_sample_free(s);
		return NULL;
	}
	return s;
}

Sample *draw_sample_new(Machine *m, DrawFamily f, uint64_t *rng)
{
	int lo = rng_int(rng, 0, 3);
	if (f == DRAW_COUNTS) {
		/* states of up to 1e9 elements; up to 2^29 where a state field
		 * is an integer, so that three merged do not wrap an i32 count */
		int n = rng_int(rng, 1, 3), intf = 0;
		for (int k = 0; k < m->c->nstate; k++)
			intf |= ty_is_int(m->c->state[k].ty);
		int most = (int)floor(log2((intf ? 0x1p29 : 1e9) / n));
		return sample_make(m, f, lo, lo + n, rng_int(rng, 1, most), 0, rng);
	}
	return sample_make(m, f, lo, lo + seg_len(rng), 0, 0, rng);
}

Sample *draw_sample_row(Machine *m, DrawFamily f, int len, uint64_t *rng) { return sample_make(m, f, 0, len, 0, 1, rng); }

/* ---- integers at their type's limits ----
 *
 * The families draw integers in [-100, 100]: an identity wrong only at a
 * type's limit (a minimum whose identity is INT32_MAX - 1, beaten by
 * INT32_MAX alone) holds on all of them.  These samples set the integer
 * inputs that are not positions to the limits and their neighbours; an
 * i64's whole, its rest beside the double that holds it rounded
 * (ir_int_exact): INT64_MIN and INT64_MAX, one in from each, and around
 * 2^53, where doubles stop holding integers one apart. */

static int64_t int_limit(TyKind storage, uint64_t *rng)
{
	int i32 = storage == TY_I32, k = rng_int(rng, 0, i32 ? 5 : 9);
	switch (k) {
	case 0: case 1: return i32 ? INT32_MIN + k : INT64_MIN + k;
	case 2: case 3: return i32 ? INT32_MAX - 3 + k : INT64_MAX - 3 + k;
	case 4: case 5: { /* just past the square root of the limit, and the type's half: x * x wraps negative */
		int64_t r = rng_next(rng) & 1 ? (i32 ? 46341 : INT64_C(3037000500)) : (i32 ? 65535 : INT64_C(4294967295));
		return k & 1 ? -r : r;
	}
	default: return (k & 1 ? -1 : 1) * ((INT64_C(1) << 53) + (k > 7 ? 1 : -1));
	}
}

/* An integer next to 2^bits (of either sign, positive three times in
 * four), where a float of that many significant bits stops holding
 * integers one apart: 2^24 and 2^24 + 1 convert to one f32. */
static int64_t int_near(int bits, uint64_t *rng)
{
	int64_t d = rng_int(rng, 0, 3) ? rng_int(rng, 0, 1) : rng_int(rng, -2, 3);
	int64_t v = (INT64_C(1) << bits) + d;
	return rng_int(rng, 0, 3) ? v : -v;
}

/* The integer inputs of d that are not positions (span: the place of
 * d[0] among all inputs), over len positions of width, with their rests
 * where the row keeps them (rest: NULL for none): each position takes
 * the sample's one limit per input, or one in four another, so that rows
 * of that limit alone (whose fold is the limit) are common.  Where the
 * carrier has several such inputs (small), half of the samples' inputs
 * stand at -1, 0 or 1 instead: x - off wraps to the most negative value
 * at x = INT64_MIN, off = 0 (or x = INT64_MAX, off = -1), where abs
 * leaves it negative, and no pair of limits meets there. */
static void put_limits(Machine *m, const Decl *d, int n, int span, const int *off, int width, double *v,
		      double *rest, int len, int small, int near, uint64_t *rng)
{
	const unsigned char *index = draw_index_inputs(m);
	for (int i = 0; i < n; i++) {
		if (!ty_is_int(d[i].ty) || index[span + i] || (near > 31 && d[i].storage == TY_I32))
			continue;
		int64_t one = near ? int_near(near, rng)
			      : small && rng_int(rng, 0, 1) ? rng_int(rng, -1, 1) : int_limit(d[i].storage, rng);
		for (int j = 0; j < len; j++)
			for (int t = off[i]; t < off[i + 1]; t++) {
				int64_t x = rng_int(rng, 0, 3) ? one : near ? int_near(near, rng) : int_limit(d[i].storage, rng);
				size_t at = (size_t)j * width + t;
				v[at] = (double)x;
				if (rest)
					rest[at] = ir_int_rest(x, v[at]);
			}
	}
}

/* Whether every component of s is finite or the identity's own infinity,
 * in both modes: a float field overflowed by a limit's power is an
 * infinity no merge of moderate states meets. */
static int finite_states(Machine *m, const Sample *s)
{
	for (int mode = 0; mode < 2; mode++)
		for (int k = 0; k < m->sw; k++)
			if (!isfinite(s->v[mode][k]) && s->v[mode][k] != m->ident[mode][k])
				return 0;
	return 1;
}

/* How many inputs of d are integers that are not positions. */
static int plain_ints(Machine *m, const Decl *d, int n, int span)
{
	const unsigned char *index = draw_index_inputs(m);
	int k = 0;
	for (int i = 0; i < n; i++)
		k += ty_is_int(d[i].ty) && !index[span + i];
	return k;
}

int draw_limit_inputs(Machine *m)
{
	Carrier *c = m->c;
	return plain_ints(m, c->elem, c->nelem, 0) + plain_ints(m, c->col, c->ncol, c->nelem) +
	       plain_ints(m, c->row, c->nrow, c->nelem + c->ncol);
}

static int narrowest_cast(void *ctx, Expr *n)
{
	if (n->op == EXPR_CAST && ty_is_float(n->ty) && ty_is_int(n->a[0]->ty)) {
		int *bits = ctx, b = n->ty.kind == TY_F64 ? 53 : n->ty.kind == TY_F32 ? 24 : n->ty.kind == TY_F16 ? 11
				     : n->ty.kind == TY_BF16 ? 8 : 4;
		if (!*bits || b < *bits)
			*bits = b;
	}
	return 0;
}

int draw_rounding_bits(Machine *m)
{
	Carrier *c = m->c;
	int bits = 0;
	if (!draw_limit_inputs(m))
		return 0;
	for (int k = 0; k < c->nstate; k++) {
		if (c->lift && c->lift[k])
			ir_contains(c->lift[k], narrowest_cast, &bits);
		if (c->merge && c->merge[k])
			ir_contains(c->merge[k], narrowest_cast, &bits);
	}
	return bits;
}

static Sample *sample_at(Machine *m, int near, uint64_t *rng)
{
	Carrier *c = m->c;
	int ints = draw_limit_inputs(m);
	if (!ints)
		return NULL;
	Sample *s = draw_sample_new(m, DRAW_GRID, rng);
	if (!s)
		return NULL;
	Row *r = s->row;
	put_limits(m, c->elem, c->nelem, 0, m->elemoff, m->elemw, r->elemv, r->elemrest, r->len, ints > 1, near, rng);
	put_limits(m, c->col, c->ncol, c->nelem, m->coloff, m->colw, r->colv, r->colrest, r->len, ints > 1, near, rng);
	put_limits(m, c->row, c->nrow, c->nelem + c->ncol, m->rowoff, m->roww, r->rowv, r->rowrest, 1, ints > 1, near,
		   rng);
	int ok = 1;
	for (int j = 0; ok && j < r->len; j++)
		ok = eval_assume(m, r, j);
	if (!ok || draw_sample_eval(m, s) || !finite_states(m, s)) {
		draw_sample_free(s);
		return NULL;
	}
	return s;
}

Sample *draw_sample_limits(Machine *m, uint64_t *rng) { return sample_at(m, 0, rng); }

Sample *draw_sample_near(Machine *m, int bits, uint64_t *rng) { return sample_at(m, bits, rng); }

Sample *draw_sample_clone(Machine *m, const Sample *s)
{
	Sample *t = malloc(sizeof *t);
	if (!t)
		abort();
	*t = *s;
	t->placed[0] = t->placed[1] = NULL;
	t->placed_bad[0] = t->placed_bad[1] = 0;
	t->row = eval_row_new(m, s->row->len);
	t->row->i = s->row->i;
	memcpy(t->row->rowv, s->row->rowv, m->roww * sizeof(double));
	memcpy(t->row->colv, s->row->colv, (size_t)s->row->len * m->colw * sizeof(double));
	memcpy(t->row->elemv, s->row->elemv, (size_t)s->row->len * m->elemw * sizeof(double));
	if (s->row->rowrest)
		memcpy(t->row->rowrest, s->row->rowrest, m->roww * sizeof(double));
	if (s->row->colrest)
		memcpy(t->row->colrest, s->row->colrest, (size_t)s->row->len * m->colw * sizeof(double));
	if (s->row->elemrest)
		memcpy(t->row->elemrest, s->row->elemrest, (size_t)s->row->len * m->elemw * sizeof(double));
	for (int k = 0; k < 2; k++) {
		t->v[k] = malloc(m->sw * sizeof(double));
		t->rest[k] = malloc(m->sw * sizeof(double));
		if (!t->v[k] || !t->rest[k])
			abort();
		memcpy(t->v[k], s->v[k], m->sw * sizeof(double));
		memcpy(t->rest[k], s->rest[k], m->sw * sizeof(double));
	}
	return t;
}

int draw_reads_position(Machine *m)
{
	if (!m->reads_j) {
		Carrier *c = m->c;
		int j = c->idx[IDX_J];
		m->reads_j = any_reads(c->lift, c->nstate, j) || any_reads(c->step, c->nstate, j) ||
				     any_reads(c->step_right, c->nstate, j)
				     ? 1
				     : -1;
	}
	return m->reads_j > 0;
}

int draw_samples_overlap(const Sample *s, const Sample *t)
{
	return s->lo < s->hi && t->lo < t->hi && s->lo < t->hi && t->lo < s->hi;
}

/* Position p of row r into position q of row t, every kind of input. */
static void copy_position(const Machine *m, const Row *r, int p, Row *t, int q)
{
	memcpy(t->colv + (size_t)q * m->colw, r->colv + (size_t)p * m->colw, m->colw * sizeof(double));
	memcpy(t->elemv + (size_t)q * m->elemw, r->elemv + (size_t)p * m->elemw, m->elemw * sizeof(double));
	if (r->colrest)
		memcpy(t->colrest + (size_t)q * m->colw, r->colrest + (size_t)p * m->colw, m->colw * sizeof(double));
	if (r->elemrest)
		memcpy(t->elemrest + (size_t)q * m->elemw, r->elemrest + (size_t)p * m->elemw,
		       m->elemw * sizeof(double));
}

Row *draw_row_shifted(const Machine *m, const Row *r, int from, int shift)
{
	int len = r->len + shift;
	Row *n = eval_row_new(m, len);
	n->i = r->i;
	n->len_name = r->len_name ? r->len_name + shift : 0;
	memcpy(n->rowv, r->rowv, m->roww * sizeof(double));
	if (r->rowrest)
		memcpy(n->rowrest, r->rowrest, m->roww * sizeof(double));
	for (int q = 0; q < len; q++) {
		int p = q - shift;
		copy_position(m, r, p >= 0 && p < r->len ? p : from, n, q);
	}
	return n;
}

Sample *draw_sample_at(Machine *m, const Sample *s, int lo)
{
	Sample *t = draw_sample_clone(m, s);
	if (lo == s->lo || s->row->len == 0)
		return t;
	int shift = lo - s->lo;
	Row *n = draw_row_shifted(m, s->row, s->lo < s->row->len ? s->lo : 0, shift);
	eval_row_free(t->row);
	t->row = n;
	t->lo = lo, t->hi = s->hi + shift;
	int ok = 1;
	for (int q = t->lo; ok && q < t->hi; q++) /* an assume that reads j */
		ok = eval_assume(m, n, q);
	if (!ok || draw_sample_eval(m, t)) {
		draw_sample_free(t);
		return NULL;
	}
	return t;
}

void draw_sample_free(Sample *s)
{
	if (!s)
		return;
	eval_row_free(s->row);
	for (int k = 0; k < 2; k++)
		free(s->v[k]), free(s->rest[k]), draw_sample_free(s->placed[k]);
	free(s);
}
