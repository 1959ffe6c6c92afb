/* prove_eval.c: the symbolic value of an IR expression inside one region.
 *
 * Comparisons resolve by the region (or ask for a split); max, min, where
 * and abs select a branch; exp and exp2 of a linear form become monomials in
 * the positive symbols X_v, Y_v, E; log of a positive term becomes a log atom
 * that exp undoes.  Infinities and NaN follow IEEE with the spec's rule
 * (-inf) - (-inf) = -inf, so identity laws are checked over the extended reals. */
#include "compiler/prove/prove_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Ev {
	Pv *p;
	const Region *r;
	Val **memo;
	int n;
	Lin split;
	char desc[200];
};

Ev *ev_new(Pv *p, const Region *r)
{
	Ev *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->p = p;
	x->r = r;
	x->n = ir_nnodes(p->ir);
	x->memo = calloc((size_t)x->n, sizeof *x->memo);
	if (!x->memo)
		abort();
	return x;
}

void ev_free(Ev *x)
{
	if (!x)
		return;
	for (int i = 0; i < x->n; i++)
		free(x->memo[i]);
	free(x->memo);
	free(x);
}

const Lin *ev_split(Ev *x, const char **desc)
{
	*desc = x->desc;
	return &x->split;
}

/* ---- constructors ---- */

static void set_err(Val *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(Val *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	v->kind = V_ERR;
	vsnprintf(v->why, sizeof v->why, fmt, ap);
	va_end(ap);
}

static void set_kind(Val *v, int kind)
{
	memset(v, 0, sizeof *v);
	v->kind = (uint8_t)kind;
	v->sign = kind == V_NEGINF ? SG_NEG : kind == V_POSINF ? SG_POS : SG_ANY;
}

static void lin_rf(Pv *p, const Lin *l, uint64_t *rf)
{
	for (int k = 0; k < PV_K; k++) {
		uint64_t s = lin_md_q(l->c[PV_MAXV]);
		for (int i = 0; i < p->nv; i++)
			if (l->c[i].n)
				s = lin_md_add(s, lin_md_mul(lin_md_q(l->c[i]), p->pt[k][i]));
		rf[k] = s;
	}
}

/* A finite value from a linear form (and the log atoms already in v). */
static void fin_lin(Pv *p, Val *v, const Lin *l, uint8_t sign)
{
	v->kind = V_FIN;
	v->haslin = 1;
	v->isexp = 0;
	v->lin = *l;
	v->hasrf = v->nlog == 0;
	if (v->hasrf)
		lin_rf(p, l, v->rf);
	v->degn = !lin_is_const(l);
	v->degd = 0;
	if (lin_is_const(l) && !v->nlog)
		sign = (uint8_t)(l->c[PV_MAXV].n > 0 ? SG_POS : l->c[PV_MAXV].n < 0 ? SG_NEG : SG_ZERO);
	v->sign = sign;
}

static void set_num(Pv *p, Val *v, double d)
{
	set_kind(v, V_FIN);
	Q q;
	if (lin_q_from_double(d, &q)) {
		Lin l;
		lin_zero(&l);
		l.c[PV_MAXV] = q;
		fin_lin(p, v, &l, 0);
		return;
	}
	int ok = 1;
	v->hasrf = 1;
	for (int k = 0; k < PV_K; k++)
		v->rf[k] = lin_md_double(d, &ok);
	v->sign = lin_sign_of_num(d);
}

static int is_const(const Val *v, Q *q)
{
	if (v->kind != V_FIN || !v->haslin || v->nlog || !lin_is_const(&v->lin))
		return 0;
	*q = v->lin.c[PV_MAXV];
	return 1;
}

/* A finite number that set_num could keep only at the random points, as
 * it has no 64-bit rational (1e30, 1e-30): a constant that no linear form
 * can hold. */
static int big_const(const Val *v) { return v->kind == V_FIN && !v->haslin && !v->degn && !v->degd && v->hasrf; }

static int is_zero(const Val *v) { return v->kind == V_FIN && v->sign == SG_ZERO; }

/* ---- finite arithmetic ---- */

static int add_logs(Val *r, const Val *y, int k)
{
	for (int j = 0; j < y->nlog; j++) {
		int i = 0;
		while (i < r->nlog && memcmp(r->log[i].rf, y->log[j].rf, sizeof r->log[i].rf))
			i++;
		if (i == r->nlog) {
			if (r->nlog == PV_MAXLOG)
				return 0;
			r->log[r->nlog] = y->log[j];
			r->log[r->nlog++].q = 0;
		}
		r->log[i].q += k * y->log[j].q;
		if (!r->log[i].q)
			r->log[i] = r->log[--r->nlog];
	}
	return 1;
}

static void fin_add(Pv *p, Val *r, const Val *x, const Val *y, int k)
{
	uint8_t sign = lin_sign_add(x->sign, k < 0 ? lin_sign_neg(y->sign) : y->sign);
	if (x->haslin && y->haslin) {
		Lin l;
		*r = *x;
		if (!add_logs(r, y, k)) {
			set_err(r, "too many log terms");
			return;
		}
		lin_add(p, &l, &x->lin, &y->lin, lin_q_int(k));
		fin_lin(p, r, &l, sign);
		return;
	}
	if (!x->hasrf || !y->hasrf) {
		set_err(r, "a log term used in arithmetic");
		return;
	}
	set_kind(r, V_FIN);
	r->hasrf = 1;
	for (int i = 0; i < PV_K; i++)
		r->rf[i] = k > 0 ? lin_md_add(x->rf[i], y->rf[i]) : lin_md_sub(x->rf[i], y->rf[i]);
	int a = x->degn + y->degd, b = y->degn + x->degd;
	r->degn = a > b ? a : b;
	r->degd = x->degd + y->degd;
	r->sign = sign;
}

static void fin_scale(Pv *p, Val *r, const Val *x, Q k)
{
	*r = *x;
	if (x->isexp || !x->haslin) {
		uint64_t m = lin_md_q(k);
		for (int i = 0; i < PV_K; i++)
			r->rf[i] = lin_md_mul(x->rf[i], m);
		r->isexp = 0;
	} else {
		if (x->nlog && k.d != 1) {
			set_err(r, "a log term times a fraction");
			return;
		}
		for (int i = 0; i < r->nlog; i++)
			if (k.n > PV_MAXEXP || k.n < -PV_MAXEXP || abs(r->log[i].q) * (k.n < 0 ? -k.n : k.n) > PV_MAXEXP) {
				set_err(r, "a log term times a number beyond %d", PV_MAXEXP);
				return;
			}
		for (int i = 0; i < r->nlog; i++)
			r->log[i].q *= (int)k.n;
		Lin l;
		lin_scale(p, &l, &x->lin, k);
		fin_lin(p, r, &l, 0);
	}
	uint8_t ks = k.n > 0 ? SG_POS : k.n < 0 ? SG_NEG : SG_ZERO;
	r->sign = lin_sign_mul(x->sign, ks);
	if (!k.n)
		set_num(p, r, 0);
}

static void fin_mul(Pv *p, Val *r, const Val *x, const Val *y, int div)
{
	Q q;
	if (is_const(y, &q) && (!div || q.n)) {
		fin_scale(p, r, x, div ? lin_q_div(p, lin_q_int(1), q) : q);
		return;
	}
	if (!div && is_const(x, &q)) {
		fin_scale(p, r, y, q);
		return;
	}
	if (!x->hasrf || !y->hasrf) {
		set_err(r, "a log term used in arithmetic");
		return;
	}
	set_kind(r, V_FIN);
	r->hasrf = 1;
	for (int i = 0; i < PV_K; i++) {
		uint64_t m = y->rf[i];
		if (div) {
			if (!m) {
				set_err(r, "a denominator vanished at a random point");
				return;
			}
			m = lin_md_inv(m);
		}
		r->rf[i] = lin_md_mul(x->rf[i], m);
	}
	r->degn = x->degn + (div ? y->degd : y->degn);
	r->degd = x->degd + (div ? y->degn : y->degd);
	r->sign = lin_sign_mul(x->sign, y->sign);
}

/* exp (base 0) or exp2 (base 2) of lin + logs, as a monomial. */
static void fin_exp(Pv *p, Val *r, const Val *x, int base2)
{
	if (!x->haslin) {
		set_err(r, "%s of a term that is not linear", base2 ? "exp2" : "exp");
		return;
	}
	if (base2 && x->nlog) {
		set_err(r, "exp2 of a log term");
		return;
	}
	Val a = *x;
	set_kind(r, V_FIN);
	for (int i = 0; i <= p->nv; i++) {
		int v = i == p->nv ? PV_MAXV : i;
		Q c = a.lin.c[v];
		if (!c.n)
			continue;
		if (c.d != 1) {
			set_err(r, "%s with a fractional coefficient", base2 ? "exp2" : "exp");
			return;
		}
		if (c.n > PV_MAXEXP || c.n < -PV_MAXEXP) { /* X^c at a point mod p: c beyond this wraps, and the degree with it */
			set_err(r, "%s with a coefficient beyond %d", base2 ? "exp2" : "exp", PV_MAXEXP);
			return;
		}
		*(c.n > 0 ? &r->degn : &r->degd) += (int)(c.n > 0 ? c.n : -c.n);
	}
	for (int k = 0; k < PV_K; k++) {
		uint64_t m = 1;
		for (int i = 0; i <= p->nv; i++) {
			int v = i == p->nv ? PV_MAXV : i;
			Q c = a.lin.c[v];
			if (!c.n)
				continue;
			uint64_t b = v == PV_MAXV ? (base2 ? 2 : p->E[k]) : base2 ? p->Y[k][v] : p->X[k][v];
			m = lin_md_mul(m, lin_md_pow(b, c.n));
		}
		for (int j = 0; j < a.nlog; j++)
			m = lin_md_mul(m, lin_md_pow(a.log[j].rf[k], a.log[j].q));
		r->rf[k] = m;
	}
	for (int j = 0; j < a.nlog; j++) {
		int q = a.log[j].q;
		r->degn += q > 0 ? q * a.log[j].degn : -q * a.log[j].degd;
		r->degd += q > 0 ? q * a.log[j].degd : -q * a.log[j].degn;
	}
	r->hasrf = 1;
	r->sign = SG_POS;
	if (!base2) {
		r->isexp = 1;
		r->lin = a.lin;
		r->nlog = a.nlog;
		memcpy(r->log, a.log, sizeof a.log);
	}
}

static void fin_log(Pv *p, Val *r, const Val *x)
{
	if (x->isexp) {
		Val a = *x;
		a.nlog = x->nlog;
		fin_lin(p, &a, &x->lin, SG_ANY);
		*r = a;
		return;
	}
	if (is_zero(x)) {
		set_kind(r, V_NEGINF);
		return;
	}
	if (x->sign != SG_POS || !x->hasrf) {
		set_err(r, "log of a term not known positive");
		return;
	}
	Q q;
	if (is_const(x, &q) && q.n == 1 && q.d == 1) {
		set_num(p, r, 0);
		return;
	}
	set_kind(r, V_FIN);
	r->nlog = 1;
	r->log[0] = (LogAtom){1, {0}, x->degn, x->degd};
	memcpy(r->log[0].rf, x->rf, sizeof x->rf);
	Lin l;
	lin_zero(&l);
	fin_lin(p, r, &l, SG_ANY);
}

/* ---- infinities and NaN ---- */

static int strict_sign(uint8_t s) { return s == SG_POS ? 1 : s == SG_NEG ? -1 : 0; }

static int inf_sign(const Val *v) { return v->kind == V_POSINF ? 1 : v->kind == V_NEGINF ? -1 : 0; }

static void set_inf(Val *r, int s) { set_kind(r, s > 0 ? V_POSINF : V_NEGINF); }

/* x + k*y when an operand is infinite or NaN. */
static void special_add(Val *r, const Val *x, const Val *y, int k)
{
	int sx = inf_sign(x), sy = inf_sign(y) * k;
	if (x->kind == V_NAN || y->kind == V_NAN)
		set_kind(r, V_NAN);
	else if (k < 0 && sx < 0 && sy > 0)
		set_inf(r, -1); /* the spec's rule: (-inf) - (-inf) = -inf */
	else if (sx && sy && sx != sy)
		set_kind(r, V_NAN);
	else
		set_inf(r, sx ? sx : sy);
}

/* x * y or x / y when an operand is infinite or NaN. */
static void special_mul(Pv *p, Val *r, const Val *x, const Val *y, int div)
{
	int sx = inf_sign(x), sy = inf_sign(y);
	if (x->kind == V_NAN || y->kind == V_NAN || (div && sx && sy)) {
		set_kind(r, V_NAN);
		return;
	}
	if (div && sy) {
		set_num(p, r, 0);
		return;
	}
	const Val *f = sx ? y : x;
	int s = sx ? sx : sy;
	if (f->kind != V_FIN) {
		set_inf(r, s * inf_sign(f));
		return;
	}
	if (is_zero(f)) {
		set_kind(r, V_NAN);
		return;
	}
	if (!strict_sign(f->sign)) {
		set_err(r, "infinity times a term of unknown sign");
		return;
	}
	set_inf(r, s * strict_sign(f->sign));
}

static int finite2(const Val *x, const Val *y) { return x->kind == V_FIN && y->kind == V_FIN; }

static void v_add(Pv *p, Val *r, const Val *x, const Val *y, int k)
{
	if (finite2(x, y))
		fin_add(p, r, x, y, k);
	else
		special_add(r, x, y, k);
}

static void v_mul(Pv *p, Val *r, const Val *x, const Val *y, int div, const char *where)
{
	if (!finite2(x, y)) {
		special_mul(p, r, x, y, div);
		return;
	}
	if (div && y->sign & SG_ZERO) {
		if (y->sign != SG_ZERO) {
			set_err(r, "division by a term not known nonzero in %s", where);
			return;
		}
		if (is_zero(x) || !strict_sign(x->sign))
			set_kind(r, is_zero(x) ? V_NAN : V_ERR);
		else
			set_inf(r, strict_sign(x->sign));
		if (r->kind == V_ERR)
			snprintf(r->why, sizeof r->why, "division by zero of a term of unknown sign");
		return;
	}
	fin_mul(p, r, x, y, div);
}

/* ---- comparisons ---- */

enum { C_LT = -1, C_EQ = 0, C_GT = 1, C_UN = 2, C_ERR = 3, C_SPLIT = 4 };

static int rank(const Val *v) { return v->kind == V_NEGINF ? -1 : v->kind == V_POSINF ? 1 : 0; }

static int decide_lin(Ev *x, const Lin *d, const Val *a, const Val *b)
{
	Q c = d->c[PV_MAXV];
	if (lin_is_const(d))
		return c.n > 0 ? C_GT : c.n < 0 ? C_LT : C_EQ;
	static const int rels[3] = {'<', '=', '>'};
	int ok[3], n = 0, which = 0;
	Region *tmp = malloc(sizeof *tmp);
	if (!tmp)
		abort();
	for (int i = 0; i < 3; i++) {
		ok[i] = lin_region_assume(x->p, x->r, d, rels[i], tmp);
		if (ok[i])
			n++, which = i - 1;
	}
	free(tmp);
	if (n == 1)
		return which;
	if (n == 0)
		return C_ERR;
	x->split = *d;
	char sa[96], sb[96];
	lin_str(x->p, &a->lin, sa, sizeof sa);
	lin_str(x->p, &b->lin, sb, sizeof sb);
	snprintf(x->desc, sizeof x->desc, "%s ? %s", sa, sb);
	return C_SPLIT;
}

static int compare(Ev *x, const Val *a, const Val *b, Val *err)
{
	if (a->kind == V_NAN || b->kind == V_NAN)
		return C_UN;
	if (a->kind == V_BOOL || b->kind == V_BOOL) { /* p == q, p != q on conditions */
		if (a->kind != b->kind) {
			set_err(err, "a comparison of a condition with a number");
			return C_ERR;
		}
		return a->b < b->b ? C_LT : a->b > b->b ? C_GT : C_EQ;
	}
	if (!finite2(a, b)) {
		int ra = rank(a), rb = rank(b);
		return ra < rb ? C_LT : ra > rb ? C_GT : C_EQ;
	}
	Val *d = malloc(sizeof *d);
	if (!d)
		abort();
	fin_add(x->p, d, a, b, -1);
	int r;
	if (d->kind == V_ERR) {
		*err = *d;
		r = C_ERR;
	} else if (d->haslin && !d->nlog) {
		r = decide_lin(x, &d->lin, a, b);
		if (r == C_ERR)
			set_err(err, "an empty region");
	} else if (strict_sign(d->sign) || d->sign == SG_ZERO) {
		r = d->sign == SG_ZERO ? C_EQ : strict_sign(d->sign);
	} else if (big_const(a) || big_const(b)) {
		/* min(a.s + b.s, 1e30) is linear, but 1e30 is no 64-bit rational:
		 * the region cannot state a side of it */
		set_err(err, "comparison with a constant beyond the prover's 64-bit rationals");
		r = C_ERR;
	} else {
		set_err(err, "comparison of non-linear terms");
		r = C_ERR;
	}
	free(d);
	return r;
}

static int cmp_holds(Op op, int c)
{
	if (c == C_UN)
		return op == EXPR_NE;
	switch (op) {
	case EXPR_LT: return c < 0;
	case EXPR_LE: return c <= 0;
	case EXPR_GT: return c > 0;
	case EXPR_GE: return c >= 0;
	case EXPR_EQ: return c == 0;
	default: return c != 0;
	}
}

/* ---- the walk ---- */

static int bad(const Val *v) { return v->kind == V_ERR || v->kind == V_SPLIT; }

static void set_bool(Val *r, int b)
{
	set_kind(r, V_BOOL);
	r->b = (uint8_t)(b != 0);
}

/* Comparison outcome into r: 1 when r now holds an error or a split. */
static int cmp_into(Ev *x, Val *r, const Val *a, const Val *b, int *c)
{
	*c = compare(x, a, b, r);
	if (*c == C_ERR)
		return 1;
	if (*c == C_SPLIT) {
		set_kind(r, V_SPLIT);
		return 1;
	}
	return 0;
}

static void ev_logic(Ev *x, Val *r, Expr *e)
{
	Val *a = ev_eval(x, e->a[0]);
	if (bad(a) || e->op == EXPR_NOT) {
		*r = *a;
		r->b = !a->b;
		return;
	}
	if ((e->op == EXPR_AND) != (a->b != 0)) {
		set_bool(r, a->b);
		return;
	}
	*r = *ev_eval(x, e->a[1]);
}

/* e is 0 or 1 whatever its inputs: the constant, or a where of such. */
static int zero_or_one(const Expr *e)
{
	while (e->op == EXPR_CAST)
		e = e->a[0];
	if (e->op == EXPR_CONST)
		return e->num == 0 || e->num == 1;
	return e->op == EXPR_WHERE && zero_or_one(e->a[1]) && zero_or_one(e->a[2]);
}

/* Whether scalar state field f starts at 0 and merge sums it (a.f + b.f). */
static int sums_from_zero(const Carrier *c, int f)
{
	const Expr *m = c->merge[f], *id = c->identity[f];
	if (c->state[f].ty.len || c->state[f].ty.kind == TY_BOOL || !m || m->op != EXPR_ADD || !id ||
	    id->op != EXPR_CONST || id->num != 0)
		return 0;
	const Expr *x = m->a[0], *y = m->a[1];
	if (x->op != EXPR_VAR || y->op != EXPR_VAR)
		return 0;
	int a = c->svar[STATE_A][f], b = c->svar[STATE_B][f];
	return (x->k == a && y->k == b) || (x->k == b && y->k == a);
}

/* Whether state field f counts positions: an integer that starts at 0,
 * that lift sets to 0 or 1 and merge sums (a.f + b.f), so that a state's
 * count lies in [0, its positions]. */
int prove_counts_positions(const Carrier *c, int f)
{
	return ty_is_int(c->state[f].ty) && zero_or_one(c->lift[f]) && sums_from_zero(c, f);
}

/* e adds and subtracts counts of positions (prove_counts_positions) of
 * different states, each at most once (*sides: the states taken), and 0s
 * (the identity's count). */
static int count_sum(const Pv *p, const Expr *e, unsigned *sides)
{
	if (e->op == EXPR_ADD || e->op == EXPR_SUB)
		return count_sum(p, e->a[0], sides) && count_sum(p, e->a[1], sides);
	if (e->op == EXPR_CONST)
		return e->num == 0;
	int v = e->op == EXPR_VAR ? p->var_of[e->k] : -1;
	if (v < 0 || !p->vop[v] || !prove_counts_positions(p->c, p->vfield[v]))
		return 0;
	unsigned side = 1u << (p->vop[v] - 'a');
	if (*sides & side)
		return 0;
	*sides |= side;
	return 1;
}

int prove_positions_field(const Carrier *c, int any_type)
{
	for (int f = 0; f < c->nstate; f++) {
		const Expr *l = c->lift[f];
		while (l && l->op == EXPR_CAST)
			l = l->a[0];
		if (l && l->op == EXPR_CONST && l->num == 1 && (any_type ? sums_from_zero(c, f) : prove_counts_positions(c, f)))
			return f;
	}
	return -1;
}

/* The states (bit 0: a, 1: b, 2: c) whose fields e reads. */
static unsigned sides_of(const Pv *p, const Expr *e)
{
	if (e->op == EXPR_VAR) {
		int v = p->var_of[e->k];
		return v >= 0 && p->vop[v] ? 1u << (p->vop[v] - 'a') : 0;
	}
	unsigned s = 0;
	for (int i = 0; i < 3 && e->a[i]; i++)
		s |= sides_of(p, e->a[i]);
	return s;
}

/* Whether integer e, linear here, stays within [-INT32_MAX, INT32_MAX]
 * given the region (its invariants bound fields by the count of
 * positions: a trailing run of positives by its run's length) and that
 * the positions of the states e reads, each at least 0, add up to at
 * most INT32_MAX: they are runs of one row.  Only those states: the
 * region has every state nonempty, and counting a state the law does not
 * fold would take a position from the others. */
static int within_positions(Ev *x, Expr *e)
{
	Pv *p = x->p;
	int f = prove_positions_field(p->c, 0);
	unsigned sides = sides_of(p, e);
	if (f < 0 || !sides)
		return 0;
	Val *v = ev_eval(x, e);
	if (v->kind != V_FIN || !v->haslin || v->nlog)
		return 0;
	Region *r = malloc(2 * sizeof *r);
	if (!r)
		abort();
	Lin sum, l;
	lin_zero(&sum);
	int ok = 1;
	r[0] = *x->r;
	for (int w = STATE_A; w <= STATE_C && ok; w++) {
		int k = p->var_of[p->c->svar[w][f]];
		if (k < 0 || !(sides >> (w - STATE_A) & 1))
			continue;
		lin_region_var(&r[0], k, &l);
		lin_add(p, &sum, &sum, &l, lin_q_int(1));
		l.c[PV_MAXV] = lin_q_add(p, l.c[PV_MAXV], lin_q_int(1)); /* n > -1: n >= 0 */
		ok = lin_region_assume(p, &r[0], &l, '>', &r[1]);
		r[0] = r[1];
	}
	sum.c[PV_MAXV] = lin_q_add(p, sum.c[PV_MAXV], lin_q_int(-(int64_t)INT32_MAX - 1));
	if (ok && lin_region_assume(p, &r[0], &sum, '<', &r[1])) {
		r[0] = r[1];
		l = v->lin;
		l.c[PV_MAXV] = lin_q_add(p, l.c[PV_MAXV], lin_q_int(-(int64_t)INT32_MAX));
		ok = !lin_region_assume(p, &r[0], &l, '>', &r[1]);
		l = v->lin;
		l.c[PV_MAXV] = lin_q_add(p, l.c[PV_MAXV], lin_q_int(INT32_MAX));
		ok = ok && !lin_region_assume(p, &r[0], &l, '<', &r[1]);
	}
	free(r);
	return ok && !p->overflow;
}

/* The operations whose two's complement result is the true one mod
 * 2^32 (2^64): fma on integers is a product and a sum, abs a value or
 * its negation (abs of the most negative value is that value). */
static int ring_op(const Expr *e)
{
	return e->op == EXPR_ADD || e->op == EXPR_SUB || e->op == EXPR_MUL || e->op == EXPR_NEG || e->op == EXPR_POW ||
	       e->op == EXPR_FMA || e->op == EXPR_ABS;
}

static int wraps(Ev *x, Expr *e);

/* Whether the operands of e's ring operations in type k (ring_op) take
 * their true values: then two's complement gives e's true value mod 2^32
 * (2^64), which is that value where within_positions bounds it.  An
 * operand that converts an i32 to an i64 carries the i32's wrap into the
 * wider sum ((a.k + a.k) + p - p, p an i64, is a.k over the integers and
 * not on the devices), so it must not wrap itself. */
static int exact_operands(Ev *x, Expr *e, TyKind k)
{
	if (e->ty.kind != k || !ring_op(e))
		return !wraps(x, e);
	for (int i = 0; i < e->nargs; i++)
		if (!exact_operands(x, e->a[i], k))
			return 0;
	return 1;
}

/* Integer arithmetic that may wrap: the prover's integers are unbounded,
 * two's complement ones are not, so an order on a sum of i32 fields
 * (a.k + b.k > 0) can differ from the proof's.  Except for counts of
 * positions of different states, each taken once: the states a merge, a
 * law or a fold meets are runs of one row, and a row has at most
 * INT32_MAX positions (every run takes an int length), so such a sum
 * stays within [-INT32_MAX, INT32_MAX]; and for arithmetic that the
 * region bounds by such counts, its operands exact (within_positions,
 * exact_operands). */
static int wraps(Ev *x, Expr *e)
{
	if (!e || !ty_is_int(e->ty) || e->op == EXPR_VAR || e->op == EXPR_CONST)
		return 0;
	unsigned sides = 0;
	if ((e->op == EXPR_ADD || e->op == EXPR_SUB) && count_sum(x->p, e, &sides))
		return 0;
	if (ring_op(e))
		return !exact_operands(x, e, (TyKind)e->ty.kind) || !within_positions(x, e);
	if (e->op == EXPR_WHERE) { /* the branch the region takes: the other's arithmetic is never computed here */
		Val *cond = ev_eval(x, e->a[0]);
		if (cond->kind == V_BOOL)
			return wraps(x, e->a[0]) || wraps(x, e->a[cond->b ? 1 : 2]);
	}
	for (int i = 0; i < 3; i++)
		if (wraps(x, e->a[i]))
			return 1;
	return 0;
}

int ev_wraps(Ev *x, Expr *e) { return wraps(x, e); }

static int inexact_cast(void *ctx, Expr *n)
{
	return n->op == EXPR_CAST && ty_is_float(n->ty) && ty_is_int(n->a[0]->ty) &&
	       !pv_int_converts_exactly(ctx, n->a[0], (TyKind)n->ty.kind);
}

/* Whether float e holds an integer converted inexactly: the proof's value
 * is the integer, the devices' the float nearest it, where neighbours tie
 * (f32(16777217) == f32(16777216)), so that an order on it may hold on the
 * devices where the proof's is strict. */
static int rounds(Ev *x, Expr *e)
{
	return x->p->int_casts && ty_is_float(e->ty) && ir_contains(e, inexact_cast, x->p);
}

/* Whether the constant k bounds every value of the integer type t from
 * above (top) or below: max(x, -2^63) is x for each i64 x.  Regions bound
 * an i32 (lin_region_init), but i64's ends are no 64-bit rationals, so
 * such a constant could not even be compared; a constant reads as a
 * double, i64's largest, 2^63 - 1, as 2^63. */
static int bounds_type(Ty t, const Expr *k, int top)
{
	if (k->op != EXPR_CONST || !ty_is_int(t))
		return 0;
	double lo = t.kind == TY_I32 ? -0x1p31 : -0x1p63, hi = t.kind == TY_I32 ? 0x1p31 - 1 : 0x1p63;
	return top ? k->num >= hi : k->num <= lo;
}

/* min or max of an integer and a constant past its type's range on the
 * side the op keeps: the integer, or NULL. */
static Expr *past_type(Expr *e)
{
	if (e->op != EXPR_MIN && e->op != EXPR_MAX)
		return NULL;
	for (int i = 0; i < 2; i++)
		if (bounds_type(e->a[1 - i]->ty, e->a[i], e->op == EXPR_MIN))
			return e->a[1 - i];
	return NULL;
}

static void ev_select(Ev *x, Val *r, Expr *e)
{
	Expr *kept = past_type(e);
	if (kept) {
		*r = *ev_eval(x, kept);
		return;
	}
	if (e->op != EXPR_WHERE) {
		/* max, min, abs order their operands: where an operand splits
		 * the region, its parts first (a where's branch decides whether
		 * a sum is bounded by the counts of positions) */
		for (int i = 0; i < 2 && e->a[i]; i++) {
			Val *o = ev_eval(x, e->a[i]);
			if (o->kind == V_SPLIT) {
				*r = *o;
				return;
			}
		}
		if (wraps(x, e->a[0]) || wraps(x, e->a[1])) {
			set_err(r, "an order on integer arithmetic, which may wrap");
			return;
		}
	}
	Val *a = ev_eval(x, e->a[0]);
	if (bad(a)) {
		*r = *a;
		return;
	}
	if (e->op == EXPR_WHERE) {
		*r = *ev_eval(x, e->a[a->b ? 1 : 2]);
		return;
	}
	if (e->op == EXPR_ABS) {
		Val zero;
		int c;
		if (inf_sign(a)) { /* |-inf| = +inf */
			set_inf(r, 1);
			return;
		}
		set_num(x->p, &zero, 0);
		if (cmp_into(x, r, a, &zero, &c))
			return;
		if (c >= 0 || c == C_UN)
			*r = *a;
		else
			fin_scale(x->p, r, a, lin_q_int(-1));
		return;
	}
	Val *b = ev_eval(x, e->a[1]);
	if (bad(b)) {
		*r = *b;
		return;
	}
	int c;
	if (a->kind == V_NAN || b->kind == V_NAN) {
		*r = a->kind == V_NAN ? *b : *a; /* fmax, fmin */
		return;
	}
	if (cmp_into(x, r, a, b, &c))
		return;
	*r = (e->op == EXPR_MAX) == (c >= 0) ? *a : *b;
}

static void ev_var(Ev *x, Val *r, Expr *e)
{
	Pv *p = x->p;
	int v = p->var_of[e->k];
	if (v < 0) {
		set_err(r, "variable %s outside the state", ir_var(p->ir, e->k)->name);
		return;
	}
	if (e->ty.kind == TY_BOOL && p->vbool[v] && p->bval[v] >= 0) { /* a bool state field in its case */
		set_bool(r, p->bval[v]);
		return;
	}
	if (e->ty.kind == TY_BOOL && !p->vop[v] && p->bools_open) { /* too many cases to take each */
		set_err(r, "bool param %s: %d bool params, and the prover takes the cases of at most %d", ir_var(p->ir, e->k)->name,
			p->bools_open, BOOL_CASES_MAX);
		return;
	}
	if (e->ty.kind == TY_BOOL) { /* a real would read as false in where(flag, ...): one branch proved for both */
		set_err(r, "bool %s %s (the algebra here is over the reals)", p->vop[v] ? "state field" : "param",
			ir_var(p->ir, e->k)->name);
		return;
	}
	Lin l;
	lin_region_var(x->r, v, &l);
	set_kind(r, V_FIN);
	fin_lin(p, r, &l, p->vsign[v]);
	r->sign = p->vsign[v];
}

static void ev_const(Ev *x, Val *r, Expr *e)
{
	double d = e->num;
	if (e->ty.kind == TY_BOOL)
		set_bool(r, d != 0);
	else if (isnan(d))
		set_kind(r, V_NAN);
	else if (isinf(d))
		set_inf(r, d > 0 ? 1 : -1);
	else
		set_num(x->p, r, d);
}

static void ev_pow(Ev *x, Val *r, Val *a, int k)
{
	Val *t = malloc(sizeof *t);
	if (!t)
		abort();
	set_num(x->p, r, 1);
	for (int i = 0; i < (k < 0 ? -k : k) && !bad(r); i++) {
		*t = *r;
		v_mul(x->p, r, t, a, 0, "");
	}
	if (k < 0 && !bad(r)) {
		*t = *r;
		set_num(x->p, r, 1);
		Val one = *r;
		v_mul(x->p, r, &one, t, 1, "a negative power");
	}
	free(t);
}

static void ev_unary(Ev *x, Val *r, Expr *e, Val *a)
{
	Pv *p = x->p;
	switch (e->op) {
	case EXPR_NEG:
		if (a->kind == V_FIN)
			fin_scale(p, r, a, lin_q_int(-1));
		else if (inf_sign(a))
			set_inf(r, -inf_sign(a));
		else
			*r = *a;
		return;
	case EXPR_CAST:
		if (a->kind == V_BOOL)
			set_num(p, r, a->b);
		else if (ty_is_int(e->ty) && ty_is_float(e->a[0]->ty))
			set_err(r, "conversion of a float to an integer");
		else if (ty_is_int(e->a[0]->ty) && e->ty.kind != e->a[0]->ty.kind && wraps(x, e->a[0]))
			/* the integer's wrapped value leaves its ring: a float, or
			 * an i64 sum, sees it as the devices give it, not as the
			 * proof's unbounded integer (a.k * b.k of two large counts) */
			set_err(r, "a conversion of integer arithmetic, which may wrap");
		else
			*r = *a;
		return;
	case EXPR_POW:
		if (e->k > 64 || e->k < -64)
			set_err(r, "power too large");
		else
			ev_pow(x, r, a, e->k);
		return;
	case EXPR_EXP:
	case EXPR_EXP2:
		if (a->kind == V_FIN)
			fin_exp(p, r, a, e->op == EXPR_EXP2);
		else if (a->kind == V_NEGINF)
			set_num(p, r, 0);
		else
			*r = *a;
		return;
	case EXPR_LOG:
		if (a->kind == V_FIN)
			fin_log(p, r, a);
		else
			set_kind(r, a->kind == V_POSINF ? V_POSINF : V_NAN);
		return;
	default:
		set_err(r, "unsupported operation %s", ir_ops[e->op].printed[0] ? ir_ops[e->op].printed : ir_ops[e->op].name);
	}
}

static void ev_binary(Ev *x, Val *r, Expr *e, Val *a, Val *b)
{
	switch (e->op) {
	case EXPR_ADD:
	case EXPR_SUB:
		v_add(x->p, r, a, b, e->op == EXPR_ADD ? 1 : -1);
		return;
	case EXPR_MUL:
		v_mul(x->p, r, a, b, 0, "");
		return;
	case EXPR_DIV: {
		if (ty_is_int(e->ty)) {
			set_err(r, "integer division");
			return;
		}
		Val zero, nb;
		if (b->kind == V_FIN && (b->sign & SG_ZERO) && b->sign != SG_ZERO && b->haslin && !b->nlog) {
			/* a denominator of unknown sign that the region orders
			 * against 0 (a.s / max(a.s, b.s) where s > 0), or splits */
			int c;
			set_num(x->p, &zero, 0);
			if (cmp_into(x, r, b, &zero, &c))
				return;
			nb = *b;
			if (c == C_EQ)
				set_num(x->p, &nb, 0);
			else
				nb.sign = (uint8_t)(c == C_GT ? SG_POS : c == C_LT ? SG_NEG : b->sign);
			b = &nb;
		}
		{
			char *s = ir_str_max(x->p->ir, e, MSG_EXPR);
			v_mul(x->p, r, a, b, 1, s);
			free(s);
		}
		return;
	}
	default: {
		int c;
		if (wraps(x, e->a[0]) || wraps(x, e->a[1])) {
			set_err(r, "an order on integer arithmetic, which may wrap");
			return;
		}
		if (rounds(x, e->a[0]) || rounds(x, e->a[1])) {
			set_err(r, "an order on an integer converted to a float, which rounds it (past 2^24 in f32, 2^53 in "
				   "f64): integers apart may convert to one float");
			return;
		}
		if (!cmp_into(x, r, a, b, &c))
			set_bool(r, cmp_holds((Op)e->op, c));
	}
	}
}

static void ev_node(Ev *x, Val *r, Expr *e)
{
	int fl = ir_ops[e->op].flags;
	if (e->op == EXPR_VAR)
		return ev_var(x, r, e);
	if (e->op == EXPR_CONST)
		return ev_const(x, r, e);
	if (e->op == EXPR_AND || e->op == EXPR_OR || e->op == EXPR_NOT)
		return ev_logic(x, r, e);
	if (e->op == EXPR_WHERE || e->op == EXPR_MAX || e->op == EXPR_MIN || e->op == EXPR_ABS)
		return ev_select(x, r, e);
	if (e->op == EXPR_INDEX || e->op == EXPR_DOT || e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX ||
	    (fl & F_REDUCE)) {
		set_err(r, "%s mixes vector components",
			e->op == EXPR_DOT ? "dot" : e->op == EXPR_INDEX ? "an index" : ir_ops[e->op].printed);
		return;
	}
	Val *v[3] = {0};
	for (int i = 0; i < e->nargs; i++) {
		v[i] = ev_eval(x, e->a[i]);
		if (bad(v[i])) {
			*r = *v[i];
			return;
		}
	}
	if (e->op == EXPR_FMA) {
		Val *t = malloc(sizeof *t);
		if (!t)
			abort();
		v_mul(x->p, t, v[0], v[1], 0, "");
		if (bad(t))
			*r = *t;
		else
			v_add(x->p, r, t, v[2], 1);
		free(t);
		return;
	}
	if (e->nargs == 1)
		ev_unary(x, r, e, v[0]);
	else
		ev_binary(x, r, e, v[0], v[1]);
}

Val *ev_eval(Ev *x, Expr *e)
{
	if ((int)e->id < x->n && x->memo[e->id])
		return x->memo[e->id];
	Val *r = calloc(1, sizeof *r);
	if (!r)
		abort();
	ev_node(x, r, e);
	if (x->p->overflow && r->kind != V_ERR)
		set_err(r, "budget: rational coefficients past 64 bits");
	/* a DAG of n shared products has degree 2^n: past the bound the
	 * random points prove nothing (Schwartz-Zippel needs degree << 2^61),
	 * and the int degrees would overflow; operands within it keep every
	 * sum of degrees below 2^31 */
	if (r->kind == V_FIN && (r->degn > PV_MAXDEG || r->degd > PV_MAXDEG))
		set_err(r, "budget: a normal form of degree past %d, from products of shared subterms", PV_MAXDEG);
	if ((int)e->id < x->n)
		x->memo[e->id] = r;
	else
		abort(); /* nodes are built before evaluation starts */
	return r;
}

/* ---- equality and printing ---- */

static int rf_equal(const Val *x, const Val *y)
{
	return !memcmp(x->rf, y->rf, sizeof x->rf);
}

int ev_val_equal(Pv *p, const Val *x, const Val *y, int *deg, char *why, size_t n)
{
	*deg = 0;
	if (x->kind != V_FIN || y->kind != V_FIN) {
		if (x->kind == V_NAN || y->kind == V_NAN)
			return 0;
		return x->kind == y->kind && (x->kind != V_BOOL || x->b == y->b);
	}
	if (x->hasrf && y->hasrf) {
		int a = x->degn + y->degd, b = y->degn + x->degd;
		*deg = a > b ? a : b;
		return rf_equal(x, y);
	}
	/* log atoms: x = y iff exp(x - y) = 1 */
	Val *d = malloc(2 * sizeof *d);
	if (!d)
		abort();
	fin_add(p, d, x, y, -1);
	if (d->kind == V_FIN)
		fin_exp(p, d + 1, d, 0);
	else
		d[1] = d[0];
	int r = -1;
	if (d[1].kind == V_ERR) {
		snprintf(why, n, "%s", d[1].why);
	} else {
		Val one;
		set_num(p, &one, 1);
		*deg = d[1].degn + d[1].degd;
		r = rf_equal(&d[1], &one);
	}
	free(d);
	return r;
}

void ev_val_str(Pv *p, const Val *v, char *buf, size_t n)
{
	static const char *kinds[] = {"", "-inf", "inf", "NaN", "", "", ""};
	char l[200];
	if (v->kind == V_BOOL)
		snprintf(buf, n, "%s", v->b ? "true" : "false");
	else if (v->kind != V_FIN)
		snprintf(buf, n, "%s", kinds[v->kind]);
	else if (v->haslin || v->isexp) {
		lin_str(p, &v->lin, l, sizeof l);
		snprintf(buf, n, "%s%s%s%s", v->isexp ? "exp(" : "", l, v->nlog ? " + logs" : "",
			 v->isexp ? ")" : "");
	} else
		snprintf(buf, n, "rational function of degree %d/%d, %016llx at the first point", v->degn,
			 v->degd, (unsigned long long)v->rf[0]);
}
