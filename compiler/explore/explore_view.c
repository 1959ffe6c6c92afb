/* explore_view.c: the loop seen by explore: an evaluator over two states
 * and an element, the sequential folds, and the sample pairs whose merge
 * the loop itself defines. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/explore/explore_int.h"

struct ExEv {
	Prog *p;
	int n, nroots;
	int *src, *off;
};

enum { S_A, S_B, S_SELF, S_ELEM, S_ROW, S_COL, S_PARAM, S_I, S_J, S_LEN, S_NONE };

/* The search's own CPU time, not the wall's: on a loaded machine the
 * budget buys the same search, so a seed finds what it found before. */
double ex_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

double ex_elapsed(Ex *x) { return ex_now() - x->t0; }

int ex_var(Ex *x, const char *name, int which, int slot, Ty ty)
{
	Ir *ir = x->c->ir;
	for (int v = 0; v < ir_nvars(ir); v++) {
		const Var *q = ir_var(ir, v);
		if (q->kind == VAR_STATE && q->which == which && q->slot == slot && !strcmp(q->name, name))
			return v;
	}
	return ir_add_var(ir, name, VAR_STATE, which, slot, ty, (TyKind)ty.kind);
}

Expr *ex_num(Ex *x, double v) { return ir_const(x->c->ir, ty_scalar(TY_F32), v); }

ExEv *ex_ev_new(Ex *x, Expr *const *roots, int n)
{
	ExEv *e = calloc(1, sizeof *e);
	if (!e)
		abort();
	e->p = prog_new(x->c->ir, roots, n);
	e->n = prog_nleaves(e->p);
	e->nroots = n;
	e->src = calloc(e->n + 1, sizeof *e->src);
	e->off = calloc(e->n + 1, sizeof *e->off);
	if (!e->src || !e->off)
		abort();
	for (int i = 0; i < e->n; i++) {
		Expr *l = prog_leaf(e->p, i);
		e->src[i] = S_NONE;
		if (l->op != EXPR_VAR)
			continue;
		const Var *v = ir_var(x->c->ir, l->k);
		switch (v->kind) {
		case VAR_STATE:
			e->src[i] = v->which == STATE_A ? S_A : v->which == STATE_B ? S_B : S_SELF;
			e->off[i] = v->slot;
			break;
		case VAR_ELEM: e->src[i] = S_ELEM, e->off[i] = x->m.elemoff[v->slot]; break;
		case VAR_ROW: e->src[i] = S_ROW, e->off[i] = x->m.rowoff[v->slot]; break;
		case VAR_COL: e->src[i] = S_COL, e->off[i] = x->m.coloff[v->slot]; break;
		case VAR_PARAM: e->src[i] = S_PARAM, e->off[i] = x->m.poff[v->slot]; break;
		case VAR_IDX: e->src[i] = S_I + v->slot; break;
		default: break;
		}
	}
	return e;
}

void ex_ev_free(ExEv *e)
{
	if (!e)
		return;
	prog_free(e->p);
	free(e->src);
	free(e->off);
	free(e);
}

static double leaf_value(Ex *x, ExEv *e, int i, const double *a, const double *b, const double *s, const Row *r,
			 int j)
{
	int o = e->off[i];
	switch (e->src[i]) {
	case S_A: return a[o];
	case S_B: return b[o];
	case S_SELF: return s[o];
	case S_ELEM: return r->elemv[(size_t)j * x->m.elemw + o];
	case S_COL: return r->colv[(size_t)j * x->m.colw + o];
	case S_ROW: return r->rowv[o];
	case S_PARAM: return x->m.params[o];
	case S_I: return r ? r->i : 0;
	case S_J: return j;
	case S_LEN: return r ? r->len : 0;
	default: return 0;
	}
}

void ex_ev_run(Ex *x, ExEv *e, const double *a, const double *b, const double *s, const Row *r, int j, double *out)
{
	for (int i = 0; i < e->n; i++)
		prog_leaf_val(e->p, i, NULL)[0] = leaf_value(x, e, i, a, b, s, r, j);
	prog_run(e->p, MODE_F64);
	for (int k = 0; k < e->nroots; k++)
		out[k] = prog_root(e->p, k, NULL)[0];
}

void ex_view_changed(Ex *x)
{
	for (int d = 0; d < 2; d++) {
		ex_ev_free(x->evs[d]);
		x->evs[d] = NULL;
	}
}

static ExEv *step_ev(Ex *x, int right)
{
	if (!x->evs[right]) {
		Expr *roots[EX_MAXF];
		for (int f = 0; f < x->n; f++)
			roots[f] = right ? x->f[f].step_right : x->f[f].step;
		x->evs[right] = ex_ev_new(x, roots, x->n);
	}
	return x->evs[right];
}

void ex_fold(Ex *x, const Row *r, double *s, int right) { ex_fold_range(x, r, 0, r->len, s, right); }

void ex_fold_range(Ex *x, const Row *r, int lo, int hi, double *s, int right)
{
	double t[EX_MAXF];
	for (int f = 0; f < x->n; f++)
		s[f] = x->f[f].ident;
	ExEv *e = step_ev(x, right);
	for (int q = lo; q < hi; q++) {
		int j = right ? hi - 1 - (q - lo) : q;
		if (eval_masked(&x->m, r, j))
			continue;
		ex_ev_run(x, e, NULL, NULL, s, r, j, t);
		memcpy(s, t, x->n * sizeof *s);
	}
}

void ex_outputs(Ex *x, const Row *r, const double *s, double *out)
{
	double se[EX_MAXF] = {0}, *oe = calloc(x->m.finw + 1, sizeof *oe);
	if (!oe)
		abort();
	eval_finalize(&x->m, MODE_F64, r, s, se, out, oe);
	free(oe);
}

int ex_close(double v, double want)
{
	if (isnan(want))
		return 1;
	if (isinf(want) || isinf(v))
		return v == want;
	return fabs(v - want) <= 1e-7 * fmax(1, fabs(want));
}

/* Position j of r given the element and column inputs of position k of src. */
static void copy_position(const Machine *m, Row *r, int j, const Row *src, int k)
{
	memcpy(r->elemv + (size_t)j * m->elemw, src->elemv + (size_t)k * m->elemw, m->elemw * sizeof(double));
	memcpy(r->colv + (size_t)j * m->colw, src->colv + (size_t)k * m->colw, m->colw * sizeof(double));
}

/* r's first two positions' values spread over both parts, [0, l1) and
 * [l1, len): each part holds the one, the other, or both mixed, so that
 * the parts tie with each other and within themselves (a position where
 * assume would not hold keeps its own values). */
static void two_values(Ex *x, Row *r, int l1, uint64_t *rng)
{
	const Machine *m = &x->m;
	Row *src = eval_row_new(m, r->len);
	for (int j = 0; j < r->len; j++)
		copy_position(m, src, j, r, j);
	for (int part = 0; part < 2; part++) {
		int kind = rng_int(rng, 0, 2), lo = part ? l1 : 0, hi = part ? r->len : l1;
		for (int j = lo; j < hi; j++) {
			copy_position(m, r, j, src, kind < 2 ? kind : rng_int(rng, 0, 1));
			if (!eval_assume(&x->m, r, j))
				copy_position(m, r, j, src, j);
		}
	}
	eval_row_free(src);
}

/* Pairs up to p->n == upto; with ties, over rows of two values. */
static void draw_pairs(Ex *x, int upto, int ties)
{
	static const DrawFamily fams[] = {DRAW_GRID, DRAW_NORMAL, DRAW_SPREAD, DRAW_WIDE};
	Pairs *p = &x->pairs;
	for (int t = 0, tries = 4 * (upto - p->n); t < tries && p->n < upto; t++) {
		int l1 = 1 + (int)(rng_next(&x->rng) % (t % 3 ? 3 : 7)), l2 = 1 + (int)(rng_next(&x->rng) % (t % 2 ? 3 : 6));
		Row *r = eval_row_new(&x->m, l1 + l2);
		int ok = draw_row(&x->m, fams[t % 4], r, &x->rng) == 0;
		if (ok && ties)
			two_values(x, r, l1, &x->rng);
		double *a = p->a[p->n], *b = p->b[p->n], *w = p->want[p->n];
		/* the two parts at their places in the row: a merge's lifts see
		 * the positions j of the whole row, and a field that keeps one
		 * (an argmax) must meet them */
		if (ok) {
			ex_fold_range(x, r, 0, l1, a, x->right);
			ex_fold_range(x, r, l1, l1 + l2, b, x->right);
			ex_fold(x, r, w, x->right);
			for (int f = 0; f < x->n; f++)
				ok &= !isnan(a[f]) && !isnan(b[f]) && !isnan(w[f]);
		}
		eval_row_free(r);
		p->n += ok;
	}
}

/* Sample pairs: two reachable states, and the state of their
 * concatenation.  Half are over rows as the families draw them; the other
 * half over rows of two values.  Drawn values tie only on the integer
 * grid, and there a tie of the parts' maxima with the second part's held
 * twice, where a count of the maximum merges by a.k + b.k, came in about
 * one pair in a hundred: half the time generalize took a.k + 1 for it. */
int ex_pairs(Ex *x)
{
	x->pairs.n = 0;
	draw_pairs(x, EX_NPAIR / 2, 0);
	draw_pairs(x, EX_NPAIR, 1);
	return x->pairs.n ? 0 : -1;
}

typedef struct {
	const Ir *ir;
	unsigned mask;
} KindCtx;

static int pred_kind(void *ctx, Expr *n)
{
	KindCtx *k = ctx;
	return n->op == EXPR_VAR && !(k->mask & (1u << ir_var(k->ir, n->k)->kind));
}

int ex_uses_only(Ex *x, Expr *e, unsigned mask)
{
	KindCtx k = {x->c->ir, mask};
	return !ir_contains(e, pred_kind, &k);
}

int ex_has_state(Ex *x, Expr *e) { return !ex_uses_only(x, e, ~(1u << VAR_STATE)); }
int ex_has_elem(Ex *x, Expr *e) { return !ex_uses_only(x, e, ~(1u << VAR_ELEM)); }

/* Lift values of every field on random one-element rows. */
enum { LIFT_SAMPLES = 64 };

/* Sample t of the lifts' rows: 1 to 5 elements, so that a lift that
 * keeps the position (an argmax's j) is seen to vary at the last; *bad
 * (where not NULL) set where draw_row could not draw it. */
static Row *lift_row(Ex *x, int t, uint64_t *rng, int *bad)
{
	static const DrawFamily fams[] = {DRAW_NORMAL, DRAW_GRID, DRAW_WIDE, DRAW_SPREAD};
	Row *r = eval_row_new(&x->m, 1 + t % 5);
	int rc = draw_row(&x->m, fams[t % 4], r, rng);
	if (bad)
		*bad = rc;
	return r;
}

/* The lifts at the last position of lift_row's rows; roots extra
 * expressions evaluated there too (into v after the fields). */
static void lift_samples_with(Ex *x, Expr *const *more, int nmore, double v[LIFT_SAMPLES][EX_MAXF + 1],
			      double in[LIFT_SAMPLES][8])
{
	Expr *roots[EX_MAXF + 1];
	for (int f = 0; f < x->n; f++)
		roots[f] = x->f[f].lift;
	for (int k = 0; k < nmore; k++)
		roots[x->n + k] = more[k];
	ExEv *e = ex_ev_new(x, roots, x->n + nmore);
	uint64_t rng = 0x5eed;
	for (int t = 0; t < LIFT_SAMPLES; t++) {
		int len = 1 + t % 5;
		Row *r = lift_row(x, t, &rng, NULL);
		ex_ev_run(x, e, NULL, NULL, NULL, r, len - 1, v[t]);
		for (int q = 0; q < x->c->nelem && q < 8; q++)
			in[t][q] = r->elemv[(size_t)(len - 1) * x->m.elemw + x->m.elemoff[q]];
		eval_row_free(r);
	}
	ex_ev_free(e);
}

static void lift_samples(Ex *x, double v[LIFT_SAMPLES][EX_MAXF + 1], double in[LIFT_SAMPLES][8])
{
	lift_samples_with(x, NULL, 0, v, in);
}

int ex_lift_disagrees(Ex *x, Buf *why)
{
	for (int f = 0; f < x->norig; f++)
		if (isnan(x->f[f].ident)) /* an identity that is no constant: the step from it is not evaluated here */
			return -1;
	Expr *roots[EX_MAXF];
	for (int f = 0; f < x->norig; f++)
		roots[f] = x->f[f].lift;
	ExEv *e = ex_ev_new(x, roots, x->norig), *st = step_ev(x, x->right);
	uint64_t rng = 0x5eed;
	double id[EX_MAXF];
	for (int f = 0; f < x->n; f++)
		id[f] = x->f[f].ident;
	int bad = -1;
	for (int t = 0; t < LIFT_SAMPLES && bad < 0; t++) {
		int undrawn, len = 1 + t % 5;
		double lv[EX_MAXF], sv[EX_MAXF];
		Row *r = lift_row(x, t, &rng, &undrawn);
		if (undrawn || eval_masked(&x->m, r, len - 1)) {
			eval_row_free(r);
			continue;
		}
		ex_ev_run(x, e, NULL, NULL, NULL, r, len - 1, lv);
		ex_ev_run(x, st, NULL, NULL, id, r, len - 1, sv);
		for (int f = 0; f < x->norig && bad < 0; f++)
			if (!(isnan(lv[f]) && isnan(sv[f])) && !(ex_close(lv[f], sv[f]) && !isnan(lv[f]))) {
				bad = f;
				buf_printf(why, "lift gives %s = ", x->f[f].name);
				buf_num(why, lv[f], 0);
				buf_puts(why, " at ");
				ex_row_text(x, r, why);
				buf_printf(why, " (position %d), but %s from the identity gives ", len - 1,
					   x->right ? "step_right" : "step");
				buf_num(why, sv[f], 0);
			}
		eval_row_free(r);
	}
	ex_ev_free(e);
	return bad;
}

int ex_lift_equal(Ex *x, Expr *e)
{
	double s[LIFT_SAMPLES][EX_MAXF + 1], in[LIFT_SAMPLES][8];
	lift_samples_with(x, &e, 1, s, in);
	int varies = 0, finite = 0;
	for (int t = 0; t < LIFT_SAMPLES; t++)
		varies |= s[t][x->n] != s[0][x->n], finite += isfinite(s[t][x->n]);
	if (!varies || finite < LIFT_SAMPLES / 2)
		return -1;
	for (int f = 0; f < x->n; f++) {
		int same = 1;
		for (int t = 0; same && t < LIFT_SAMPLES; t++)
			same = !isfinite(s[t][x->n]) || ex_close(s[t][f], s[t][x->n]);
		if (same)
			return f;
	}
	return -1;
}

int ex_lift_const(Ex *x, int f, double *v)
{
	double s[LIFT_SAMPLES][EX_MAXF + 1], in[LIFT_SAMPLES][8];
	lift_samples(x, s, in);
	for (int t = 1; t < LIFT_SAMPLES; t++)
		if (s[t][f] != s[0][f] || signbit(s[t][f]) != signbit(s[0][f]))
			return 0;
	*v = s[0][f];
	return isfinite(*v) || ex_uses_only(x, x->f[f].lift, 0);
}

int ex_lift_input(Ex *x, int f)
{
	double s[LIFT_SAMPLES][EX_MAXF + 1], in[LIFT_SAMPLES][8];
	lift_samples(x, s, in);
	for (int q = 0; q < x->c->nelem && q < 8; q++) {
		if (x->c->elem[q].ty.len)
			continue;
		int same = 1;
		for (int t = 0; t < LIFT_SAMPLES; t++)
			same &= s[t][f] == in[t][q];
		if (same)
			return q;
	}
	return -1;
}

void ex_row_text(Ex *x, const Row *r, Buf *b)
{
	Carrier *c = x->c;
	if (c->nelem == 1)
		buf_printf(b, "%s = [", c->elem[0].name);
	else {
		buf_puts(b, "(");
		for (int q = 0; q < c->nelem; q++)
			buf_printf(b, "%s%s", q ? ", " : "", c->elem[q].name);
		buf_puts(b, ") = [");
	}
	for (int j = 0; j < r->len; j++) {
		buf_puts(b, j ? ", " : "");
		buf_puts(b, c->nelem == 1 ? "" : "(");
		for (int q = 0; q < c->nelem; q++) {
			buf_puts(b, q ? ", " : "");
			buf_num(b, r->elemv[(size_t)j * x->m.elemw + x->m.elemoff[q]], 0);
		}
		buf_puts(b, c->nelem == 1 ? "" : ")");
	}
	buf_puts(b, "]");
}

void ex_state_text(Ex *x, const double *s, int n, Buf *b)
{
	buf_puts(b, "{");
	for (int f = 0; f < n; f++) {
		buf_printf(b, "%s%s: ", f ? ", " : "", x->f[f].name);
		buf_num(b, s[f], 0);
	}
	buf_puts(b, "}");
}

typedef struct {
	int v;
	Expr *r;
} OneVar;

static Expr *one_var(void *ctx, Expr *e)
{
	OneVar *o = ctx;
	return e->k == o->v ? o->r : NULL;
}

Expr *ex_subst_var(Ex *x, Expr *e, int v, Expr *r)
{
	OneVar o = {v, r};
	return ir_subst(x->c->ir, e, one_var, &o);
}

typedef struct {
	int n;
	const int *vars;
	Expr *const *repl;
} ManyVars;

static Expr *many_vars(void *ctx, Expr *e)
{
	ManyVars *m = ctx;
	for (int i = 0; i < m->n; i++)
		if (e->k == m->vars[i])
			return m->repl[i];
	return NULL;
}

Expr *ex_subst_vars(Ex *x, Expr *e, int n, const int *vars, Expr *const *repl)
{
	ManyVars m = {n, vars, repl};
	return ir_subst(x->c->ir, e, many_vars, &m);
}

static int name_taken(Ex *x, const char *s, char (*taken)[SPEC_MAX_NAME], int ntaken)
{
	Carrier *c = x->c;
	if (!strcmp(s, "i") || !strcmp(s, "j") || !strcmp(s, "len") || !strcmp(s, "a") || !strcmp(s, "b"))
		return 1;
	const Decl *d[] = {c->params, c->row, c->col, c->elem, c->state};
	int nd[] = {c->nparams, c->nrow, c->ncol, c->nelem, c->nstate};
	for (int k = 0; k < 5; k++)
		for (int i = 0; i < nd[k]; i++)
			if (!strcmp(d[k][i].name, s))
				return 1;
	for (int i = 0; i < c->nlets; i++)
		if (!strcmp(c->lets[i].name, s))
			return 1;
	for (int f = 0; f < x->n; f++)
		if (!strcmp(x->f[f].name, s))
			return 1;
	for (int i = 0; i < ntaken; i++)
		if (!strcmp(taken[i], s))
			return 1;
	return 0;
}

void ex_fresh_name(Ex *x, const char *base, char (*taken)[SPEC_MAX_NAME], int ntaken, char *out)
{
	snprintf(out, SPEC_MAX_NAME, "%s", base);
	for (int k = 2; name_taken(x, out, taken, ntaken); k++)
		snprintf(out, SPEC_MAX_NAME, "%.40s_%d", base, k);
}
