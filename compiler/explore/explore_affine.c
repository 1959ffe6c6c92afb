/* explore_affine.c: strategies 1 and 2.
 *
 * Affine: when every field's step is affine in the old state,
 * s' = A(x) s + b(x), a segment is an affine map and the merge composes
 * maps (Horner's rule, linear recurrences, exponential moving averages).
 * The coefficients are read off the IR symbolically.
 *
 * Inverse: a given weak right inverse turns the step into a merge,
 * merge(a, b) = fold(step, a, inverse(b)) (Morita et al., PLDI 2007); the
 * inverse is checked first on reachable states. */
#include <stdlib.h>
#include <string.h>

#include "compiler/explore/explore_int.h"

typedef struct {
	Expr *co[EX_MAXF]; /* coefficient of each old field; NULL: structurally 0 */
	Expr *b;           /* the state-free part; NULL: 0 */
} Lin;

static Expr *add(Ir *ir, Expr *p, Expr *q) { return !p ? q : !q ? p : ir_bin(ir, EXPR_ADD, p, q); }

static Expr *mul(Ir *ir, Expr *p, Expr *q)
{
	if (!p || !q)
		return NULL;
	if (p->op == EXPR_CONST && p->num == 1)
		return q;
	if (q->op == EXPR_CONST && q->num == 1)
		return p;
	return ir_bin(ir, EXPR_MUL, p, q);
}

static int is_one(Expr *e) { return e && e->op == EXPR_CONST && e->num == 1; }

static void scale(Ir *ir, Lin *l, int n, Expr *k, Op op)
{
	for (int g = 0; g < n; g++)
		l->co[g] = !l->co[g] ? NULL : op == EXPR_MUL && is_one(l->co[g]) ? k : ir_bin(ir, op, l->co[g], k);
	l->b = l->b ? ir_bin(ir, op, l->b, k) : NULL;
}

/* e as a linear form in the old fields; -1 with why when it is not one. */
static int lin(Ex *x, Expr *e, Lin *out, char *why, size_t n)
{
	Ir *ir = x->c->ir;
	memset(out, 0, sizeof *out);
	if (!ex_has_state(x, e)) {
		out->b = e;
		return 0;
	}
	Lin p, q;
	char *s;
	switch (e->op) {
	case EXPR_VAR:
		out->co[ir_var(ir, e->k)->slot] = ex_num(x, 1);
		return 0;
	case EXPR_CAST:
		return lin(x, e->a[0], out, why, n);
	case EXPR_ADD:
	case EXPR_SUB:
		if (lin(x, e->a[0], &p, why, n) || lin(x, e->a[1], &q, why, n))
			return -1;
		if (e->op == EXPR_SUB)
			scale(ir, &q, x->n, ex_num(x, -1), EXPR_MUL);
		for (int g = 0; g < x->n; g++)
			out->co[g] = add(ir, p.co[g], q.co[g]);
		out->b = add(ir, p.b, q.b);
		return 0;
	case EXPR_NEG:
		if (lin(x, e->a[0], out, why, n))
			return -1;
		scale(ir, out, x->n, ex_num(x, -1), EXPR_MUL);
		return 0;
	case EXPR_MUL:
	case EXPR_DIV: {
		int left_free = e->op == EXPR_MUL && !ex_has_state(x, e->a[0]);
		Expr *k = left_free ? e->a[0] : e->a[1];
		if (ex_has_state(x, k)) {
			s = ir_str(ir, e);
			snprintf(why, n, "%s of two state terms: %s", e->op == EXPR_MUL ? "a product" : "a division", s);
			free(s);
			return -1;
		}
		if (lin(x, left_free ? e->a[1] : e->a[0], out, why, n))
			return -1;
		scale(ir, out, x->n, k, (Op)e->op);
		return 0;
	}
	default:
		s = ir_str(ir, e);
		snprintf(why, n, "%s of the state: %s", ir_ops[e->op].printed[0] ? ir_ops[e->op].printed : "an operation", s);
		free(s);
		return -1;
	}
}

typedef struct {
	int pat[EX_MAXF][EX_MAXF], bpat[EX_MAXF];
	int ai[EX_MAXF][EX_MAXF], bi[EX_MAXF]; /* carrier field of each entry; -1: the constant 1 */
	int unit[EX_MAXF]; /* row f of A is the identity row for every element (n' = n + 1) */
} Pattern;

static void close_pattern(Pattern *s, int n)
{
	for (int f = 0; f < n; f++)
		s->pat[f][f] = 1;
	for (int changed = 1; changed;) {
		changed = 0;
		for (int f = 0; f < n; f++)
			for (int g = 0; g < n; g++)
				for (int k = 0; k < n; k++) {
					if (s->pat[f][k] && s->pat[k][g] && !s->pat[f][g])
						s->pat[f][g] = changed = 1;
					if (s->pat[f][k] && s->bpat[k] && !s->bpat[f])
						s->bpat[f] = changed = 1;
				}
	}
}

static int new_field(Ex *x, Cand *k, const char *base, Ty ty, double ident, Expr *lift)
{
	int i = k->n++;
	ex_fresh_name(x, base, k->name, i, k->name[i]);
	k->ty[i] = ty;
	k->va[i] = ex_var(x, k->name[i], STATE_A, i, ty);
	k->vb[i] = ex_var(x, k->name[i], STATE_B, i, ty);
	k->vs[i] = ex_var(x, k->name[i], STATE_SELF, i, ty);
	k->ident[i] = ident;
	k->lift[i] = lift ? lift : ex_num(x, 0);
	return i;
}

static Expr *ref(Ex *x, int v) { return ir_ref(x->c->ir, v); }

/* Entry (f, g) of a side's A: a field, or 1 on a unit row's diagonal. */
static Expr *entry(Ex *x, Pattern *s, const int *side, int f, int g)
{
	return s->ai[f][g] < 0 ? ex_num(x, 1) : ref(x, side[s->ai[f][g]]);
}

/* merge: the map of the first segment, then the second's (for a right
 * loop the state is the map applied to what follows, so the order turns). */
static void affine_merge(Ex *x, Cand *k, Pattern *s, int pure)
{
	Ir *ir = x->c->ir;
	int n = x->n;
	const int *fa = x->right ? k->vb : k->va, *sb = x->right ? k->va : k->vb;
	for (int f = 0; f < n; f++) {
		if (s->bpat[f]) {
			Expr *e = ref(x, sb[s->bi[f]]);
			for (int q = 0; q < n && !pure; q++)
				if (s->pat[f][q] && s->bpat[q])
					e = add(ir, e, mul(ir, entry(x, s, sb, f, q), ref(x, fa[s->bi[q]])));
			k->merge[s->bi[f]] = pure ? add(ir, ref(x, fa[s->bi[f]]), e) : e;
		}
		for (int g = 0; g < n && !pure; g++) {
			if (!s->pat[f][g] || s->ai[f][g] < 0)
				continue;
			Expr *e = NULL;
			for (int q = 0; q < n; q++)
				if (s->pat[f][q] && s->pat[q][g])
					e = add(ir, e, mul(ir, entry(x, s, sb, f, q), entry(x, s, fa, q, g)));
			k->merge[s->ai[f][g]] = e;
		}
	}
}

/* finalize and map: each old field is A * identity + b. */
static void affine_outputs(Ex *x, Cand *k, Pattern *s, int pure)
{
	Ir *ir = x->c->ir;
	Expr *back[EX_MAXF];
	int vars[EX_MAXF];
	for (int f = 0; f < x->n; f++) {
		Expr *e = s->bpat[f] ? ref(x, k->vs[s->bi[f]]) : NULL;
		for (int g = 0; g < x->n; g++) {
			double id = x->f[g].ident;
			if (id == 0 || (!pure && !s->pat[f][g]) || (pure && g != f))
				continue;
			Expr *c = ex_num(x, id);
			e = add(ir, pure ? c : mul(ir, entry(x, s, k->vs, f, g), c), e);
		}
		back[f] = e ? e : ex_num(x, 0);
		vars[f] = x->f[f].var[STATE_SELF];
	}
	for (int o = 0; o < k->nfin; o++)
		k->fin[o] = ex_subst_vars(x, k->fin[o], x->n, vars, back);
	for (int o = 0; o < k->nmap; o++)
		k->map[o] = ex_subst_vars(x, k->map[o], x->n, vars, back);
}


int ex_affine(Ex *x, Cand *k, char *why, size_t n)
{
	Lin l[EX_MAXF];
	Pattern s;
	memset(&s, 0, sizeof s);
	int pure = 1;
	for (int f = 0; f < x->n; f++) {
		char w[300];
		Expr *st = x->right ? x->f[f].step_right : x->f[f].step;
		if (lin(x, st, &l[f], w, sizeof w)) {
			snprintf(why, n, "%s is not affine in the state: %s", x->f[f].name, w);
			return 1;
		}
		if (!isfinite(x->f[f].ident)) {
			snprintf(why, n, "%s's identity is not finite", x->f[f].name);
			return 1;
		}
		for (int g = 0; g < x->n; g++) {
			s.pat[f][g] = l[f].co[g] != NULL;
			pure &= g == f ? is_one(l[f].co[g]) : !l[f].co[g];
		}
		s.unit[f] = is_one(l[f].co[f]);
		for (int g = 0; g < x->n; g++)
			s.unit[f] &= g == f || !l[f].co[g];
		s.bpat[f] = l[f].b != NULL;
	}
	ex_cand_from_view(x, k);
	k->n = 0;
	if (pure) {
		/* A = I for every element: the fields accumulate b */
		for (int f = 0; f < x->n; f++) {
			s.bpat[f] = 1;
			s.bi[f] = k->n++;
			k->lift[f] = l[f].b ? l[f].b : ex_num(x, 0);
			k->ident[f] = 0;
		}
	} else {
		close_pattern(&s, x->n);
		k->n = 0;
		for (int f = 0; f < x->n; f++)
			for (int g = 0; g < x->n; g++) {
				if (!s.pat[f][g])
					continue;
				if (s.unit[f]) {
					s.ai[f][g] = -1;
					continue;
				}
				char base[SPEC_MAX_NAME];
				if (x->n == 1)
					snprintf(base, sizeof base, "A");
				else
					snprintf(base, sizeof base, "A_%.20s_%.20s", x->f[f].name, x->f[g].name);
				Expr *lift = l[f].co[g] ? l[f].co[g] : ex_num(x, 0);
				s.ai[f][g] = new_field(x, k, base, x->f[f].ty, f == g, lift);
			}
		for (int f = 0; f < x->n; f++)
			if (s.bpat[f]) {
				char base[SPEC_MAX_NAME];
				snprintf(base, sizeof base, x->n == 1 ? "B" : "B_%.40s", x->f[f].name);
				s.bi[f] = new_field(x, k, base, x->f[f].ty, 0, l[f].b);
			}
	}
	affine_merge(x, k, &s, pure);
	affine_outputs(x, k, &s, pure);
	char w[400];
	if (ex_cand_verify(x, k, w, sizeof w)) {
		snprintf(why, n, "the composed maps fail: %s", w);
		return 1;
	}
	snprintf(why, n, pure ? "every step adds to the state: the merge adds, %d field%s"
			      : "s' = A(x) s + b(x): the merge composes affine maps, %d coefficient field%s",
		 k->n, k->n == 1 ? "" : "s");
	return 0;
}

/* ---- inverse ---- */

/* fold(step, identity, inverse(s)) = s on reachable states; 0 when it holds. */
static int inverse_holds(Ex *x, char *why, size_t n)
{
	Carrier *c = x->c;
	int ne = c->ninverse * c->nelem;
	Expr **roots = calloc(ne + 1, sizeof *roots);
	if (!roots)
		abort();
	for (int k = 0; k < c->ninverse; k++)
		for (int q = 0; q < c->nelem; q++)
			roots[k * c->nelem + q] = c->inverse[k][q];
	ExEv *ev = ex_ev_new(x, roots, ne);
	double *vals = calloc(ne + 1, sizeof *vals), s[EX_MAXF], back[EX_MAXF];
	static const DrawFamily fams[] = {DRAW_GRID, DRAW_NORMAL, DRAW_WIDE};
	uint64_t rng = x->rng ^ 0x1abe1;
	int ok = 1;
	for (int t = 0; ok && t < 60; t++) {
		Row *r = eval_row_new(&x->m, t % 7), *el = eval_row_new(&x->m, c->ninverse);
		if (!draw_row(&x->m, fams[t % 3], r, &rng) && !draw_row(&x->m, DRAW_NORMAL, el, &rng)) {
			ex_fold(x, r, s, 0);
			ex_ev_run(x, ev, NULL, NULL, s, NULL, 0, vals);
			for (int k = 0; k < c->ninverse; k++)
				for (int q = 0; q < c->nelem; q++)
					el->elemv[(size_t)k * x->m.elemw + x->m.elemoff[q]] = vals[k * c->nelem + q];
			ex_fold(x, el, back, 0);
			for (int f = 0; f < x->norig; f++)
				ok &= ex_close(back[f], s[f]) || fabs(back[f] - s[f]) <= 1e-6 * fmax(1, fabs(s[f]));
			if (!ok) {
				Buf b = {0};
				buf_puts(&b, "the state ");
				ex_state_text(x, s, x->norig, &b);
				buf_puts(&b, ", reached from ");
				ex_row_text(x, r, &b);
				buf_puts(&b, ", has inverse ");
				ex_row_text(x, el, &b);
				buf_puts(&b, ", whose fold is ");
				ex_state_text(x, back, x->norig, &b);
				snprintf(why, n, "%s", b.s);
				buf_free(&b);
			}
		}
		eval_row_free(r);
		eval_row_free(el);
	}
	ex_ev_free(ev);
	free(vals);
	free(roots);
	return ok ? 0 : -1;
}

int ex_inverse(Ex *x, Cand *k, char *why, size_t n)
{
	Carrier *c = x->c;
	if (!c->ninverse) {
		snprintf(why, n, "skipped (no inverse given)");
		return 1;
	}
	for (int f = 0; f < x->n; f++)
		if (!ex_uses_only(x, x->f[f].step, 1u << VAR_STATE | 1u << VAR_ELEM | 1u << VAR_PARAM)) {
			snprintf(why, n, "skipped (%s's step uses i, j, len or row or column inputs, which a merge cannot see)",
				 x->f[f].name);
			return 1;
		}
	char w[600];
	if (inverse_holds(x, w, sizeof w)) {
		x->res->inverse_wrong = 1;
		free(x->res->cex);
		x->res->cex = strdup(w);
		snprintf(why, n, "the inverse is wrong: %s", w);
		return 1;
	}
	/* merge(a, b) = step(...step(a, inverse(b)[0])..., inverse(b)[k-1]) */
	Expr *cur[EX_MAXF], *nx[EX_MAXF], *bin[16];
	int vars[EX_MAXF + 16], bvars[EX_MAXF];
	Expr *repl[EX_MAXF + 16], *bref[EX_MAXF];
	for (int f = 0; f < x->n; f++) {
		cur[f] = ir_ref(c->ir, x->f[f].var[STATE_A]);
		bvars[f] = x->f[f].var[STATE_SELF];
		bref[f] = ir_ref(c->ir, x->f[f].var[STATE_B]);
	}
	for (int e = 0; e < c->ninverse; e++) {
		for (int q = 0; q < c->nelem; q++)
			bin[q] = ex_subst_vars(x, c->inverse[e][q], x->n, bvars, bref);
		int nv = 0;
		for (int f = 0; f < x->n; f++)
			vars[nv] = x->f[f].var[STATE_SELF], repl[nv++] = cur[f];
		for (int q = 0; q < c->nelem; q++)
			vars[nv] = c->elem[q].var, repl[nv++] = bin[q];
		for (int f = 0; f < x->n; f++)
			nx[f] = ex_subst_vars(x, x->f[f].step, nv, vars, repl);
		memcpy(cur, nx, sizeof cur);
	}
	ex_cand_from_view(x, k);
	for (int f = 0; f < x->n; f++)
		k->merge[f] = cur[f];
	if (ex_cand_verify(x, k, w, sizeof w)) {
		snprintf(why, n, "the merge fold(step, a, inverse(b)) fails: %s", w);
		return 1;
	}
	snprintf(why, n, "merge(a, b) = fold(step, a, inverse(b)) with %d element%s", c->ninverse,
		 c->ninverse == 1 ? "" : "s");
	return 0;
}
