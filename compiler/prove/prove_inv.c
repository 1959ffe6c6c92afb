/* prove_inv.c: linear invariants between a carrier's scalar fields of
 * float types and i32.
 *
 * Candidates f >= g (fields of one type), f >= 0 and f <= 0 (where the sign
 * invariants leave them open), f >= k and f <= k for the constants k a
 * merge clamps f to and, for an i32, those its lift takes in a branch,
 * are inferred Houdini-style: keep those every
 * lift satisfies, then drop those that merge does not preserve, assuming the
 * survivors on both operands (as many as a region has room for, the
 * candidate itself among them), until none drops.  Each check is a proof,
 * region by region: within a region where the fields are linear forms, the
 * candidate L >= 0 holds iff the region with L < 0 added is infeasible.  A
 * field that is not linear there loses its candidates.  The bool state
 * fields an expression reads are constants of its cases (walk).
 *
 * The survivors hold on every nonempty state: folds of lifts.  The identity
 * need not keep them (it enters the laws only through the identity law),
 * nor a masked element, which contributes the identity.  The induction is
 * over finite reals, as the laws' proofs are, so invariants are kept only
 * when every scalar lift is finite for every input and merge keeps every
 * scalar field finite: no state reaches the laws through an infinity the
 * induction did not see. */
#include "compiler/prove/prove_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* INV_BOOL_SPLIT: bool state fields a walk takes case by case, 2^4 cases */
enum { INV_MAXCAND = 64, WALK_REGIONS = 256, INV_BOOL_SPLIT = 4 };

typedef struct {
	Lin l;     /* L >= 0, over the fields' indices (operand a's variables) */
	int f[2];  /* the fields it names */
	int nf;
	int alive;
} Cand;

typedef int (*Visit)(Pv *p, const Region *r, Val **v, void *ctx);

static void *xmalloc(size_t n)
{
	void *q = malloc(n);
	if (!q)
		abort();
	return q;
}

static int visit_holds(Pv *p, const Region *r, Val **v, void *ctx);

/* Visit every region into which evaluating es[0..n) (n <= 2) splits the
 * space of p's variables under its sign facts and invariants; 1 when all
 * were visited and every visit returned 1. */
static int walk_regions(Pv *p, Expr *const *es, int n, Visit visit, void *ctx)
{
	Region **stack = xmalloc(3 * WALK_REGIONS * sizeof *stack);
	int ns = 1, ok = 1, seen = 0;
	stack[0] = xmalloc(sizeof **stack);
	lin_region_init(p, stack[0]);
	p->overflow = 0;
	while (ns && ok) {
		Region *r = stack[--ns];
		ok = ++seen <= WALK_REGIONS;
		Ev *x = ok ? ev_new(p, r) : NULL;
		Val *v[2] = {0};
		int split = 0;
		int wrapped = 0;
		for (int i = 0; ok && i < n && !split; i++) {
			v[i] = ev_eval(x, es[i]);
			split = v[i]->kind == V_SPLIT;
			/* an order between integer fields holds of their true
			 * values: a lift x + 1 of an i32 input wraps at its
			 * largest value, below a field that lifts to x */
			wrapped |= !split && visit == visit_holds && ev_wraps(x, es[i]);
		}
		if (ok && !split && wrapped)
			ok = 0;
		if (ok && split) {
			const char *desc;
			const Lin *d = ev_split(x, &desc);
			static const int rels[3] = {'<', '=', '>'};
			for (int i = 0; i < 3; i++) {
				Region *ch = xmalloc(sizeof *ch);
				if (!lin_region_assume(p, r, d, rels[i], ch))
					free(ch);
				else if (ns < 3 * WALK_REGIONS)
					stack[ns++] = ch;
				else /* a region left out would be a case unproved */
					free(ch), ok = 0;
			}
		} else if (ok) {
			ok = visit(p, r, v, ctx) && !p->overflow;
		}
		ev_free(x);
		free(r);
	}
	while (ns)
		free(stack[--ns]);
	free(stack);
	return ok && !p->overflow; /* a rational past 64 bits may have split a region wrongly */
}

/* walk_regions in every case of the bool state fields es read (prove.c's
 * cases: each false and true, one with a single value on every nonempty
 * state at it); 0 past INV_BOOL_SPLIT of them. */
static int walk(Pv *p, Expr *const *es, int n, Visit visit, void *ctx)
{
	int split[PV_MAXV], ns = 0, ok = 1, set[PV_MAXV], nset = 0;
	for (int v = 0; v < p->nv; v++) {
		if (!p->vbool[v] || p->bval[v] >= 0 || !pv_reads(p, v, es, n))
			continue;
		set[nset++] = v;
		if (p->bonly[v] >= 0)
			p->bval[v] = p->bonly[v];
		else
			split[ns++] = v;
	}
	if (ns > INV_BOOL_SPLIT)
		ok = 0;
	for (int k = 0; ok && k < 1 << ns; k++) {
		pv_bool_case(p, split, ns, k);
		ok = walk_regions(p, es, n, visit, ctx);
	}
	for (int i = 0; i < nset; i++)
		p->bval[set[i]] = -1;
	return ok;
}

static int is_linear(const Val *v) { return v->kind == V_FIN && v->haslin && !v->nlog; }

/* The candidate holds in r: its fields are linear forms there and L < 0
 * is infeasible. */
static int visit_holds(Pv *p, const Region *r, Val **v, void *ctx)
{
	const Cand *k = ctx;
	Lin d;
	lin_zero(&d);
	d.c[PV_MAXV] = k->l.c[PV_MAXV];
	for (int i = 0; i < k->nf; i++) {
		if (!is_linear(v[i]))
			return 0;
		lin_add(p, &d, &d, &v[i]->lin, k->l.c[k->f[i]]);
	}
	Region *t = xmalloc(sizeof *t);
	int feasible = lin_region_assume(p, r, &d, '<', t);
	free(t);
	return !feasible;
}

static int visit_finite(Pv *p, const Region *r, Val **v, void *ctx)
{
	(void)p, (void)r, (void)ctx;
	return v[0]->kind == V_FIN;
}

static int holds_for(Pv *p, Expr **by_field, const Cand *k)
{
	Expr *es[2] = {by_field[k->f[0]], k->nf > 1 ? by_field[k->f[1]] : NULL};
	return walk(p, es, k->nf, visit_holds, (void *)k);
}

/* Every scalar field of by_field finite in every region (a bool is). */
static int all_finite(Pv *p, Carrier *c, Expr **by_field)
{
	for (int f = 0; f < c->nstate; f++)
		if (!c->state[f].ty.len && c->state[f].ty.kind != TY_BOOL &&
		    !walk(p, &by_field[f], 1, visit_finite, NULL))
			return 0;
	return 1;
}

/* A scalar field of a float type or i32 (an i64's ends are no 64-bit
 * rationals, lin_region_init) */
static int is_num_scalar(const Carrier *c, int f)
{
	return !c->state[f].ty.len && (ty_is_float(c->state[f].ty) || c->state[f].ty.kind == TY_I32);
}

static void add_cand(Cand *k, int *n, int f, int g, int sf)
{
	if (*n == INV_MAXCAND)
		return;
	Cand *x = &k[(*n)++];
	memset(x, 0, sizeof *x);
	lin_zero(&x->l);
	x->l.c[f] = lin_q_int(sf);
	x->f[0] = f;
	x->nf = 1;
	if (g >= 0) {
		x->l.c[g] = lin_q_int(-1);
		x->f[1] = g;
		x->nf = 2;
	}
	x->alive = 1;
}

/* Bounds a merge clamps a field to: the constants max and min take in
 * its merge (max(min(a.s + b.s, 1e12), -1e12)). */
typedef struct {
	Cand *k;
	int *n, f;
} Clamp;

/* f <= k and f >= k, sf * (f - k) >= 0, for a constant k other than 0
 * (the sign candidates' bound) */
static void add_bounds(Clamp *w, const Expr *b)
{
	Q q;
	if (b->op != EXPR_CONST || b->ty.len || b->num == 0 || !lin_q_from_double(b->num, &q))
		return;
	for (int sf = -1; sf <= 1; sf += 2) {
		int at = *w->n;
		add_cand(w->k, w->n, w->f, -1, sf);
		if (*w->n > at)
			w->k[at].l.c[PV_MAXV] = sf > 0 ? lin_q_neg(q) : q;
	}
}

static int add_clamp(void *ctx, Expr *e)
{
	if (e->op == EXPR_MAX || e->op == EXPR_MIN)
		for (int i = 0; i < 2; i++)
			add_bounds(ctx, e->a[i]);
	return 0;
}

/* The constants an integer field's lift takes in a branch: a position or
 * -1 for none (where(x > t, j, -1)) gives at >= -1. */
static int add_lift_const(void *ctx, Expr *e)
{
	if (e->op == EXPR_WHERE)
		for (int i = 1; i < 3; i++)
			add_bounds(ctx, e->a[i]);
	return 0;
}

static int candidates(Pv *p, Cand *k)
{
	Carrier *c = p->c;
	int n = 0;
	/* float fields first: the invariants the laws' proofs assume are
	 * the first live candidates that fit a region (assume_live) */
	for (int i32 = 0; i32 < 2; i32++) {
		for (int f = 0; f < c->nstate; f++) {
			if (!is_num_scalar(c, f) || (c->state[f].ty.kind == TY_I32) != i32)
				continue;
			if (p->vsign[f] & SG_NEG)
				add_cand(k, &n, f, -1, 1);
			if (p->vsign[f] & SG_POS)
				add_cand(k, &n, f, -1, -1);
			for (int g = 0; g < c->nstate; g++)
				if (g != f && is_num_scalar(c, g) && c->state[g].ty.kind == c->state[f].ty.kind)
					add_cand(k, &n, f, g, 1);
		}
		for (int f = 0; f < c->nstate; f++)
			if (is_num_scalar(c, f) && (c->state[f].ty.kind == TY_I32) == i32 && c->merge && c->merge[f]) {
				Clamp w = {k, &n, f};
				ir_contains(c->merge[f], add_clamp, &w);
				if (i32 && c->lift && c->lift[f])
					ir_contains(c->lift[f], add_lift_const, &w);
			}
	}
	return n;
}

/* The prover's variables for lifts: the scalar inputs, params and indices,
 * with the sign facts of assume. */
static int lift_pv(const Pv *p, const uint8_t *vs, Pv *q)
{
	memset(q, 0, sizeof *q);
	q->c = p->c;
	q->ir = p->ir;
	int nvars = ir_nvars(p->ir);
	q->var_of = xmalloc((nvars + 1) * sizeof *q->var_of);
	for (int v = 0; v < nvars; v++) {
		const Var *var = ir_var(p->ir, v);
		q->var_of[v] = -1;
		/* a bool is no real: where(flag, x, 0) must not read it as a number */
		if (var->kind == VAR_STATE || var->kind == VAR_SYM || var->ty.len || var->ty.kind == TY_BOOL)
			continue;
		if (q->nv == PV_MAXV)
			return -1;
		q->vname[q->nv] = var->name;
		q->vsign[q->nv] = vs[v];
		q->vi32[q->nv] = var->ty.kind == TY_I32;
		q->var_of[v] = q->nv++;
	}
	q->isign = (uint8_t *)vs; /* borrowed: p's, freed with it */
	q->int_casts = p->int_casts;
	memcpy(q->pt, p->pt, sizeof q->pt);
	memcpy(q->X, p->X, sizeof q->X);
	memcpy(q->Y, p->Y, sizeof q->Y);
	memcpy(q->E, p->E, sizeof q->E);
	return 0;
}

/* Keep the candidates every lift satisfies; 0 when some scalar lift may be
 * infinite (or is beyond the prover), and then no invariant is kept. */
static int base_case(Pv *p, const uint8_t *vs, Cand *k, int n)
{
	Pv q;
	int ok = lift_pv(p, vs, &q) == 0 && all_finite(&q, p->c, p->c->lift);
	for (int i = 0; ok && i < n; i++)
		k[i].alive = holds_for(&q, p->c->lift, &k[i]);
	free(q.var_of);
	free(q.fm_rows);
	return ok;
}

/* Whether l >= 0 is implied by the invariants already in p and the sign facts. */
static int implied(Pv *p, const Lin *l)
{
	Region *r = xmalloc(sizeof *r), *t = xmalloc(sizeof *t);
	p->overflow = 0;
	lin_region_init(p, r);
	int feasible = lin_region_assume(p, r, l, '<', t);
	free(r);
	free(t);
	return !feasible && !p->overflow;
}

/* Drop from p->inv each invariant that the others imply (t >= s beside
 * t >= p and p >= s). */
static void drop_implied(Pv *p)
{
	Lin all[PV_MAXINV];
	int n = p->ninv, kept = 0;
	memcpy(all, p->inv, n * sizeof *all);
	for (int i = 0; i < n; i++) {
		/* the ones kept so far, and all after i */
		p->ninv = 0;
		for (int j = 0; j < n; j++)
			if (j < kept || j > i)
				p->inv[p->ninv++] = all[j];
		if (!implied(p, &all[i]))
			all[kept++] = all[i];
	}
	memcpy(p->inv, all, kept * sizeof *all);
	p->ninv = kept;
}

/* Assume l beside p's invariants where a region still has room for its
 * own constraints, half of them (an invariant that bounds an i32 field
 * takes the place of the field's range, lin_region_init): 1 where it does. */
static int assume_fits(Pv *p, const Lin *l, Region *r)
{
	if (p->ninv == PV_MAXINV)
		return 0;
	p->inv[p->ninv++] = *l;
	lin_region_init(p, r);
	if (r->ncon <= PV_MAXCON / 2)
		return 1;
	p->ninv--;
	return 0;
}

/* The invariants to assume: the live candidates that the others do not
 * imply, in order, each where it leaves room for a region's own
 * constraints, so that every field's bound is tried (two fields lifted
 * alike, where(x > t, j, -1), each get theirs).  Assuming fewer than hold
 * is sound: it only enlarges the regions. */
static void assume_live(Pv *p, Cand *k, int n, int first)
{
	Region *r = xmalloc(sizeof *r);
	p->ninv = 0;
	if (first >= 0)
		assume_fits(p, &k[first].l, r);
	for (int i = 0; i < n; i++)
		if (i != first && k[i].alive && !implied(p, &k[i].l))
			assume_fits(p, &k[i].l, r);
	free(r);
	drop_implied(p);
}

static void inv_text(Pv *p)
{
	size_t len = 0;
	p->invtext[0] = 0;
	for (int i = 0; i < p->ninv && len + 1 < sizeof p->invtext; i++) {
		const Lin *l = &p->inv[i];
		int f = -1, g = -1;
		for (int v = 0; v < p->c->nstate; v++)
			if (l->c[v].n > 0)
				f = v;
			else if (l->c[v].n < 0)
				g = v;
		const char *sep = i ? ", " : "";
		Q k = l->c[PV_MAXV];
		if (k.n) { /* a bound: f - k >= 0 or k - f >= 0 */
			char num[64];
			int up = f >= 0;
			Q b = up ? lin_q_neg(k) : k;
			if (b.d == 1)
				snprintf(num, sizeof num, "%lld", (long long)b.n);
			else
				snprintf(num, sizeof num, "%lld/%lld", (long long)b.n, (long long)b.d);
			len += snprintf(p->invtext + len, sizeof p->invtext - len, "%s%s %s %s", sep,
					p->c->state[up ? f : g].name, up ? ">=" : "<=", num);
			continue;
		}
		if (f >= 0)
			len += snprintf(p->invtext + len, sizeof p->invtext - len, "%s%s >= %s", sep,
					p->c->state[f].name, g >= 0 ? p->c->state[g].name : "0");
		else
			len += snprintf(p->invtext + len, sizeof p->invtext - len, "%s%s <= 0", sep,
					p->c->state[g].name);
	}
}

void inv_infer(Pv *p, const uint8_t *vs)
{
	Cand *k = xmalloc(INV_MAXCAND * sizeof *k);
	int n = candidates(p, k);
	p->ninv = 0;
	if (n && base_case(p, vs, k, n)) {
		/* Where the live candidates outnumber a region's room, one that
		 * fails under the first of them is tried again under itself
		 * and the others that fit (any <= 1 beside any >= all, all <= 1
		 * in any_all's max and min): each survivor is then preserved
		 * under survivors, which is all the induction needs. */
		for (int changed = 1; changed;) {
			changed = 0;
			assume_live(p, k, n, -1);
			for (int i = 0; i < n; i++) {
				if (!k[i].alive || holds_for(p, p->c->merge, &k[i]))
					continue;
				assume_live(p, k, n, i);
				int ok = holds_for(p, p->c->merge, &k[i]);
				assume_live(p, k, n, -1);
				if (!ok)
					k[i].alive = 0, changed = 1;
			}
		}
		if (p->ninv && !all_finite(p, p->c, p->c->merge))
			p->ninv = 0;
	}
	free(k);
	p->overflow = 0;
	inv_text(p);
}
