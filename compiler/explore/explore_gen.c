/* explore_gen.c: strategy 3, generalizing the step.  A merge must satisfy
 * merge(s, lift(x)) = step(s, x); the step is read as a merge whose second
 * state is one element, and the element's contribution is replaced by the
 * fields of a whole state:
 *   - the old state's fields become a.f;
 *   - an element input that a field lifts to unchanged (lift m = x) becomes b.m;
 *   - a term over the element, params and positions that a field lifts to
 *     (x / tau where lift m = x / tau; j where an argmax's idx lifts to j)
 *     becomes that field of b, found by evaluating both on sample elements
 *     at several positions;
 *   - a constant equal to a field's constant lift (n + 1, lift n = 1) may become b.n;
 *   - the step of another field, used inside this one, becomes that field's merge;
 *   - terms that carry the element may be weighted by a field whose lift is 1
 *     (softmax's b.l, Welford's b.n);
 *   - a field whose lift is 0 (Welford's m2) may gain + b.f, or b.f weighted
 *     by another field of b, or by b's share of a total already merged;
 *   - where none of these fits, each occurrence of an element input may
 *     become its own choice of the fields that lift to it, the steps of
 *     other fields read as written (Kadane's cur, max(x, cur + x), is
 *     max(b.cur, a.cur + b.sum) with a running sum beside it), or read as
 *     this side's values with the other side's own value joined by the
 *     step's root (a drawdown's max(dd, peak - x) is
 *     max(max(a.dd, a.peak - b.min), b.dd) with a running minimum).
 * Each field's variants are tried simplest first against the sample pairs
 * (states the loop itself merges), then the whole merge is verified.  For a
 * right loop the roles of a and b turn. */
#include <stdlib.h>
#include <string.h>

#include "compiler/explore/explore_int.h"

typedef struct {
	Ex *x;
	int f;                  /* the field being generalized */
	Expr *gen[EX_MAXF];     /* merges chosen for fields done */
	int carries[EX_MAXF];   /* the input field f lifts to unchanged, or -1 */
	int isconst[EX_MAXF];
	double lc[EX_MAXF];     /* constant lifts */
	unsigned mask;          /* constant occurrences to replace */
	int occ, direct, bad;
	/* the fields that lift to element input q unchanged, in order;
	 * choosing: each occurrence of an input takes the next digit of code
	 * (mixed radix, a digit a field of carriers[q]), and radix multiplies
	 * up the choices met */
	int choosing, ncarriers[8], carriers[8][EX_MAXF];
	/* choosing: another field's step read inside this one is that field
	 * of this side, its value before the other side (a drawdown's peak
	 * before b's elements, a.peak), and the other side's own value joins
	 * a max- or min-rooted step by its root (max(..., b.dd)) */
	int old_reads, by_root;
	long code, radix;
	/* subterms free of the state met so far, and the field each lifts to (or -1) */
	Expr *seen[64];
	int seen_field[64], nseen;
} Gen;

static Expr **steps(Ex *x, int f) { return x->right ? &x->f[f].step_right : &x->f[f].step; }
static int own(Ex *x) { return x->right ? STATE_B : STATE_A; }
static int other(Ex *x) { return x->right ? STATE_A : STATE_B; }

/* The field whose lift e is, for e a term over the element, params and
 * positions (not a bare input: carriers[] has those), or -1. */
static int lifted_as(Gen *g, Expr *e)
{
	Ex *x = g->x;
	unsigned inputs = 1u << VAR_ELEM | 1u << VAR_COL | 1u << VAR_ROW | 1u << VAR_PARAM | 1u << VAR_IDX;
	if (e->op == EXPR_CONST || !ex_uses_only(x, e, inputs))
		return -1;
	if (e->op == EXPR_VAR && ir_var(x->c->ir, e->k)->kind != VAR_IDX)
		return -1;
	if (!ex_has_elem(x, e) && ex_uses_only(x, e, ~(1u << VAR_IDX)))
		return -1; /* neither the element nor a position: the same for every element */
	for (int k = 0; k < g->nseen; k++)
		if (g->seen[k] == e)
			return g->seen_field[k];
	int q = ex_lift_equal(x, e);
	if (g->nseen < 64)
		g->seen[g->nseen] = e, g->seen_field[g->nseen++] = q;
	return q;
}

static Expr *rewrite(Gen *g, Expr *e, int root)
{
	Ex *x = g->x;
	Ir *ir = x->c->ir;
	for (int q = 0; q < x->n && !root && !g->choosing; q++)
		if (q != g->f && g->gen[q] && e == *steps(x, q))
			return g->gen[q];
	for (int q = 0; q < x->n && !root && g->old_reads; q++)
		if (q != g->f && e == *steps(x, q))
			return ir_ref(ir, x->f[q].var[own(x)]);
	/* the element's part as a lift computes it (x / tau where lift m is
	 * x / tau, j where an argmax's position lifts to j): the other state's field */
	int lq = lifted_as(g, e);
	if (lq >= 0) {
		g->direct = 1;
		return ir_ref(ir, x->f[lq].var[other(x)]);
	}
	if (e->op == EXPR_VAR) {
		const Var *v = ir_var(ir, e->k);
		if (v->kind == VAR_STATE)
			return ir_ref(ir, x->f[v->slot].var[own(x)]);
		if (v->kind == VAR_ELEM && g->choosing && v->slot < 8 && g->ncarriers[v->slot] > 0) {
			int nc = g->ncarriers[v->slot], m = g->carriers[v->slot][g->code % nc];
			g->code /= nc, g->radix *= nc;
			g->direct = 1;
			return ir_ref(ir, x->f[m].var[other(x)]);
		}
		if (v->kind == VAR_ELEM) {
			/* the field's own lift, where it carries the input (max(m, x) -> max(a.m, b.m)) */
			int m = g->carries[g->f] == v->slot ? g->f
				: v->slot < 8 && g->ncarriers[v->slot] ? g->carriers[v->slot][0] : -1;
			if (m < 0) {
				g->bad = 1;
				return e;
			}
			g->direct = 1;
			return ir_ref(ir, x->f[m].var[other(x)]);
		}
		if (v->kind != VAR_PARAM)
			g->bad = 1;
		return e;
	}
	if (e->op == EXPR_CONST) {
		for (int q = 0; q < x->n; q++)
			if (g->isconst[q] && g->lc[q] != 0 && e->num == g->lc[q] &&
			    (x->f[q].ty.kind == TY_BOOL) == (e->ty.kind == TY_BOOL)) {
				int bit = g->occ++;
				return bit < 32 && (g->mask >> bit & 1) ? ir_ref(ir, x->f[q].var[other(x)]) : e;
			}
		return e;
	}
	Expr *a[4] = {0};
	for (int i = 0; i < e->nargs; i++)
		a[i] = rewrite(g, e->a[i], 0);
	return ir_node_n(ir, (Op)e->op, e->ty, e->k, a);
}

/* The top-level sum of e as signed terms, at most 16 of them; -1 when
 * there are more. */
static int flatten(Expr *e, Expr **t, int *sign, int n, int s)
{
	if (e->op == EXPR_ADD || e->op == EXPR_SUB) {
		n = flatten(e->a[0], t, sign, n, s);
		return n < 0 ? n : flatten(e->a[1], t, sign, n, e->op == EXPR_SUB ? -s : s);
	}
	if (n == 16)
		return -1;
	t[n] = e, sign[n] = s;
	return n + 1;
}

/* The top-level sum of e as signed terms; a longer sum is one term. */
static int terms(Expr *e, Expr **t, int *sign)
{
	int n = flatten(e, t, sign, 0, 1);
	if (n < 0)
		t[0] = e, sign[0] = 1, n = 1;
	return n;
}

/* sum + sign * r, or sign * r where sum is the first term (NULL) */
static Expr *add_signed(Ir *ir, Expr *sum, Expr *r, int sign)
{
	if (!sum)
		return sign < 0 ? ir_un(ir, EXPR_NEG, r) : r;
	return ir_bin(ir, sign < 0 ? EXPR_SUB : EXPR_ADD, sum, r);
}

/* What a field that lifts to 0 gains from the other state's own value
 * of it (the plain step sees b's value as 0), by kind:
 *   0: nothing;  1: + b.f (Welford's m2);
 *   2 + 2q: + b.f * b.q;  3 + 2q: + b.f * b.q / merged q, b's share of a
 *   total q already merged (a weighted variance kept as m2 / sw).
 * The kinds are tried on the sample pairs, states folded from several
 * elements, where b's value is not 0. */
static Expr *own_part(Gen *g, int zero)
{
	Ex *x = g->x;
	Ir *ir = x->c->ir;
	Expr *bf = ir_ref(ir, x->f[g->f].var[other(x)]);
	if (zero < 2)
		return bf;
	int q = (zero - 2) / 2, share = (zero - 2) % 2;
	if (q == g->f || (share && !g->gen[q]) || !ty_is_float(x->f[q].ty))
		return NULL;
	Expr *r = ir_bin(ir, EXPR_MUL, bf, ir_ref(ir, x->f[q].var[other(x)]));
	return share ? ir_bin(ir, EXPR_DIV, r, g->gen[q]) : r;
}

/* One variant of field f's merge: constant mask, weight field w (or -1),
 * and what f gains from the other state's f (own_part's kind zero). */
static Expr *variant(Gen *g, unsigned mask, int w, int zero)
{
	Ex *x = g->x;
	Ir *ir = x->c->ir;
	Expr *t[16];
	int sign[16];
	int nt = terms(*steps(x, g->f), t, sign);
	g->mask = mask, g->occ = 0, g->bad = 0;
	Expr *sum = NULL;
	for (int i = 0; i < nt; i++) {
		g->direct = 0;
		Expr *r = rewrite(g, t[i], nt == 1);
		int elem = g->direct || !ex_has_state(x, t[i]);
		if (elem && w >= 0)
			r = ir_bin(ir, EXPR_MUL, r, ir_ref(ir, x->f[w].var[other(x)]));
		sum = add_signed(ir, sum, r, sign[i]);
	}
	if (zero) {
		Expr *part = own_part(g, zero);
		if (!part)
			return NULL;
		Op rop = (Op)(*steps(x, g->f))->op;
		sum = ir_bin(ir, g->by_root && (rop == EXPR_MAX || rop == EXPR_MIN) ? rop : EXPR_ADD, sum, part);
	}
	return g->bad ? NULL : sum;
}

/* The step's terms that read the state's own fields, rewritten over this side's
 * state, plus the same with the two states' fields swapped: a whole
 * state's part as the step writes the old state's (softmax's entropy,
 * whose element term d e^d stands for (b.s + b.l d) e^d, takes
 * (a.s + a.l c) e^c + (b.s + b.l c') e^c', the empty state's guard in c
 * swapped along).  NULL where no term reads the state. */
/* Whether e reads a state field that carries no element input (lift
 * m = x carries it): the element's term of a step reads the state only
 * through such a field's update (d = x - max(m, x)). */
static int reads_own(Gen *g, Expr *e)
{
	if (e->op == EXPR_VAR) {
		const Var *v = ir_var(g->x->c->ir, e->k);
		return v->kind == VAR_STATE && g->carries[v->slot] < 0;
	}
	for (int i = 0; i < e->nargs; i++)
		if (reads_own(g, e->a[i]))
			return 1;
	return 0;
}

static Expr *symmetric(Gen *g)
{
	Ex *x = g->x;
	Ir *ir = x->c->ir;
	Expr *t[16], *own_terms = NULL;
	int sign[16], nt = terms(*steps(x, g->f), t, sign);
	g->mask = 0, g->occ = 0, g->bad = 0;
	for (int i = 0; i < nt; i++) {
		if (!reads_own(g, t[i]))
			continue;
		own_terms = add_signed(ir, own_terms, rewrite(g, t[i], nt == 1), sign[i]);
	}
	if (!own_terms || g->bad || x->n > EX_MAXF)
		return NULL;
	int vars[2 * EX_MAXF];
	Expr *repl[2 * EX_MAXF];
	for (int q = 0; q < x->n; q++) {
		vars[2 * q] = x->f[q].var[STATE_A], repl[2 * q] = ir_ref(ir, x->f[q].var[STATE_B]);
		vars[2 * q + 1] = x->f[q].var[STATE_B], repl[2 * q + 1] = ir_ref(ir, x->f[q].var[STATE_A]);
	}
	return ir_bin(ir, EXPR_ADD, own_terms, ex_subst_vars(x, own_terms, 2 * x->n, vars, repl));
}

/* Does field f's candidate give the loop's merged values on the pairs? */
static int fits(Ex *x, int f, Expr *e)
{
	ExEv *ev = ex_ev_new(x, &e, 1);
	int ok = 1;
	for (int p = 0; ok && p < x->pairs.n; p++) {
		double v;
		ex_ev_run(x, ev, x->pairs.a[p], x->pairs.b[p], NULL, NULL, 0, &v);
		ok = ex_close(v, x->pairs.want[p][f]);
	}
	ex_ev_free(ev);
	return ok;
}

static int by_step_id(Ex *x, int *order)
{
	for (int f = 0; f < x->n; f++)
		order[f] = f;
	for (int i = 1; i < x->n; i++)
		for (int k = i; k > 0 && (*steps(x, order[k]))->id < (*steps(x, order[k - 1]))->id; k--) {
			int t = order[k];
			order[k] = order[k - 1], order[k - 1] = t;
		}
	return x->n;
}

static int generalize_field(Gen *g, int f, char *why, size_t n)
{
	Ex *x = g->x;
	g->f = f;
	g->mask = 0, g->occ = 0;
	Expr *probe = variant(g, 0, -1, 0);
	if (!probe) {
		snprintf(why, n, "%s's step uses an element input that no field lifts to unchanged, or i, j, len or a "
			 "row or column input", x->f[f].name);
		return -1;
	}
	int nocc = g->occ < 5 ? g->occ : 5;
	for (int w = -1; w < x->n; w++) {
		if (w >= 0 && !(g->isconst[w] && g->lc[w] == 1))
			continue;
		for (unsigned mask = 0; mask < 1u << nocc; mask++)
			for (int zero = 0; zero < (g->isconst[f] && g->lc[f] == 0 ? 2 + 2 * x->n : 1); zero++) {
				Expr *e = variant(g, mask, w, zero);
				if (e && fits(x, f, e)) {
					g->gen[f] = e;
					return 0;
				}
			}
	}
	Expr *sym = symmetric(g);
	if (sym && fits(x, f, sym)) {
		g->gen[f] = sym;
		return 0;
	}
	/* each occurrence its own field: the first choice counts them all */
	g->choosing = 1;
	long combos = 1;
	for (int kind = 0; kind < 3; kind++) {
		/* 0: the steps inside read as written; 1: as this side's values,
		 * the own part joined by the root; 2: the same, joined by + */
		g->old_reads = kind > 0, g->by_root = kind == 1;
		combos = 1;
		for (long code = 0; code < combos && code < 4096; code++)
			for (int zero = kind > 0; zero < (g->isconst[f] && g->lc[f] == 0 ? 2 : 1); zero++) {
				g->code = code, g->radix = 1;
				Expr *e = variant(g, 0, -1, zero);
				combos = g->radix;
				if (e && fits(x, f, e)) {
					g->choosing = g->old_reads = g->by_root = 0;
					g->gen[f] = e;
					return 0;
				}
			}
	}
	g->choosing = g->old_reads = g->by_root = 0;
	char *s = ir_str(x->c->ir, probe);
	snprintf(why, n, "no variant of %s's step fits the loop (the plain one is %s)", x->f[f].name, s);
	free(s);
	return -1;
}

int ex_generalize(Ex *x, Cand *k, char *why, size_t n)
{
	Gen g = {.x = x};
	for (int f = 0; f < x->n; f++) {
		g.isconst[f] = ex_lift_const(x, f, &g.lc[f]);
		int q = ex_lift_input(x, f);
		g.carries[f] = q;
		if (q >= 0 && q < 8)
			g.carriers[q][g.ncarriers[q]++] = f;
	}
	int order[EX_MAXF];
	by_step_id(x, order);
	for (int i = 0; i < x->n; i++)
		if (generalize_field(&g, order[i], why, n))
			return 1;
	ex_cand_from_view(x, k);
	for (int f = 0; f < x->n; f++)
		k->merge[f] = g.gen[f];
	char w[400];
	if (ex_cand_verify(x, k, w, sizeof w)) {
		snprintf(why, n, "the generalized step fails: %s", w);
		return 1;
	}
	Buf b = {0};
	buf_printf(&b, "merge(%s) = %s with the element's part taken from a whole state", x->right ? "lift(x), s" : "s, lift(x)",
		   x->right ? "step_right(x, s)" : "step(s, x)");
	snprintf(why, n, "%s", b.s);
	buf_free(&b);
	return 0;
}
