/* explore_restart.c: strategy 6, fields that restart.
 *
 * A field whose step either grows it or throws it away,
 *   f' = where(C, f + u, R)      (C, u and R free of the state),
 * is a run: the length of the current stretch of positives
 * (where(x > 0, run + 1, 0)), the sum since the last reset.  Over a
 * piece of the row that restarts somewhere the field is whatever the
 * piece made of it; over one that never restarts it grew by the piece's
 * sum of u.  Two fields beside it say which: `cuts`, the restarts the
 * piece holds (merged by a sum), and `lead`, what the field made of the
 * piece up to its first restart from the identity I:
 *   f:    where(b.cuts > 0, b.f, a.f + b.f - I)
 *   lead: where(a.cuts > 0, a.lead, a.lead + b.lead - I)
 * A field that keeps the largest value f took, g' = max(g, f'), merges
 * as max(a.g, b.g, a.f + b.lead - I): the runs that cross the boundary
 * are a's last one grown by b's first, largest where u >= 0 (a longest
 * run, a largest sum of positives); the smallest, by min, where u <= 0.
 * Each field that restarts gets its own pair, and each field that keeps
 * the largest or smallest value of one of them its own cross term.  The
 * candidate is verified as any other (at params of either sign); a field
 * of another form leaves the strategy to the others.  A right loop (step_right) reads its pieces from the
 * other end: the right piece's f carries on into the left one's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/explore/explore_int.h"

typedef struct {
	Expr *keep; /* C: the step grows the field */
	Expr *u;    /* by this */
} Restart;

static int is_self(Ex *x, const Expr *e, int f) { return e->op == EXPR_VAR && e->k == x->f[f].var[STATE_SELF]; }

/* The step of field f the loop runs by: a right loop's adds an element
 * on the left. */
static Expr *step_of(Ex *x, int f) { return x->right ? x->f[f].step_right : x->f[f].step; }

/* Whether field f's step has the form above. */
static int restart_form(Ex *x, int f, Restart *r)
{
	Expr *s = step_of(x, f);
	if (!s || s->op != EXPR_WHERE || ex_has_state(x, s->a[0]))
		return 0;
	for (int side = 0; side < 2; side++) {
		Expr *g = s->a[1 + side], *reset = s->a[2 - side];
		if (ex_has_state(x, reset) || g->op != EXPR_ADD)
			continue;
		for (int o = 0; o < 2; o++)
			if (is_self(x, g->a[o], f) && !ex_has_state(x, g->a[1 - o])) {
				r->keep = side ? ir_un(x->c->ir, EXPR_NOT, s->a[0]) : s->a[0];
				r->u = g->a[1 - o];
				return 1;
			}
	}
	return 0;
}

/* A field named after base and f's name, its vars made. */
static Field *field_new(Ex *x, const char *base, int f, Ty ty)
{
	char want[SPEC_MAX_NAME];
	snprintf(want, sizeof want, "%s_%.40s", base, x->f[f].name);
	Field *d = &x->f[x->n];
	memset(d, 0, sizeof *d);
	ex_fresh_name(x, want, NULL, 0, d->name);
	d->ty = ty;
	d->aux = 1;
	for (int w = 0; w < 4; w++)
		d->var[w] = ex_var(x, d->name, w, x->n, ty);
	return d;
}

static Expr *ref(Ex *x, int f, int which) { return ir_ref(x->c->ir, x->f[f].var[which]); }

/* a + b - I, the identity left out where it is 0 */
static Expr *grown(Ex *x, Expr *a, Expr *b, double I)
{
	Expr *s = ir_bin(x->c->ir, EXPR_ADD, a, b);
	return I == 0 ? s : ir_bin(x->c->ir, EXPR_SUB, s, ir_const(x->c->ir, a->ty, I));
}

/* Which restarting field g's step keeps the largest or smallest value
 * of (max(g, f') or min), -1 where none of those in rs. */
static int extreme_of(Ex *x, int g, const int *rs, int nr)
{
	Expr *s = step_of(x, g);
	if (!s || (s->op != EXPR_MAX && s->op != EXPR_MIN))
		return -1;
	for (int i = 0; i < nr; i++)
		if ((is_self(x, s->a[0], g) && s->a[1] == step_of(x, rs[i])) ||
		    (is_self(x, s->a[1], g) && s->a[0] == step_of(x, rs[i])))
			return i;
	return -1;
}

int ex_restart(Ex *x, Cand *k, int *applies, char *why, size_t n)
{
	Ir *ir = x->c->ir;
	Restart r[EX_MAXF];
	int rs[EX_MAXF], nr = 0;
	*applies = 0;
	/* a right loop's pieces are the same, read from the other end: the
	 * piece whose restarts decide is the left one, the lead its suffix */
	int near = x->right ? STATE_A : STATE_B, far = x->right ? STATE_B : STATE_A;
	for (int i = 0; i < x->n; i++)
		if (ty_is_float(x->f[i].ty) || x->f[i].ty.kind == TY_I32 || x->f[i].ty.kind == TY_I64)
			if (!x->f[i].ty.len && restart_form(x, i, &r[nr]))
				rs[nr++] = i;
	if (!nr)
		return 1;
	*applies = 1;
	if (x->n + 2 * nr > EX_MAXF) {
		snprintf(why, n, "%d fields restart, and their %d fields beside them pass the %d fields explore holds", nr,
			 2 * nr, (int)EX_MAXF);
		return 1;
	}
	/* each restarting field's pair: cuts += !C; lead grows with the field
	 * until the first restart */
	int fc[EX_MAXF], fl[EX_MAXF];
	for (int i = 0; i < nr; i++) {
		int f = rs[i];
		double I = x->f[f].ident;
		Field *cuts = field_new(x, "cuts", f, x->f[f].ty);
		fc[i] = x->n++;
		Expr *one = ir_const(ir, cuts->ty, 1), *zero = ir_const(ir, cuts->ty, 0);
		Expr *cstep = ir_bin(ir, EXPR_ADD, ref(x, fc[i], STATE_SELF),
				     ir_node(ir, EXPR_WHERE, cuts->ty, 0, r[i].keep, zero, one));
		Field *lead = field_new(x, "lead", f, x->f[f].ty);
		fl[i] = x->n++;
		lead->ident = I;
		Expr *open = ir_bin(ir, EXPR_AND, ir_bin(ir, EXPR_EQ, ref(x, fc[i], STATE_SELF), zero), r[i].keep);
		Expr *lstep = ir_node(ir, EXPR_WHERE, lead->ty, 0, open,
				      ir_bin(ir, EXPR_ADD, ref(x, fl[i], STATE_SELF), r[i].u), ref(x, fl[i], STATE_SELF));
		if (x->right)
			cuts->step_right = cstep, lead->step_right = lstep;
		else
			cuts->step = cstep, lead->step = lstep;
		ex_aux_lift(x, cuts, lead);
		ex_aux_lift(x, lead, cuts);
	}
	ex_view_changed(x);
	ex_cand_from_view(x, k);
	for (int g = 0; g < x->n; g++) {
		Expr *gn = ref(x, g, near), *gf = ref(x, g, far);
		int done = 0;
		for (int i = 0; i < nr && !done; i++) {
			double I = x->f[rs[i]].ident;
			Expr *zero = ir_const(ir, x->f[fc[i]].ty, 0);
			if (g == rs[i])
				k->merge[g] = ir_node(ir, EXPR_WHERE, gn->ty, 0, ir_bin(ir, EXPR_GT, ref(x, fc[i], near), zero),
						      gn, grown(x, ref(x, g, STATE_A), ref(x, g, STATE_B), I));
			else if (g == fc[i])
				k->merge[g] = ir_bin(ir, EXPR_ADD, ref(x, g, STATE_A), ref(x, g, STATE_B));
			else if (g == fl[i])
				k->merge[g] = ir_node(ir, EXPR_WHERE, gf->ty, 0, ir_bin(ir, EXPR_GT, ref(x, fc[i], far), zero),
						      gf, grown(x, ref(x, g, STATE_A), ref(x, g, STATE_B), I));
			else
				continue;
			done = 1;
		}
		int e = done ? -1 : extreme_of(x, g, rs, nr);
		if (e >= 0) {
			int f = rs[e];
			double I = x->f[f].ident;
			Op op = (Op)step_of(x, g)->op;
			Expr *cross = x->right ? grown(x, ref(x, fl[e], STATE_A), ref(x, f, STATE_B), I)
					       : grown(x, ref(x, f, STATE_A), ref(x, fl[e], STATE_B), I);
			k->merge[g] = ir_bin(ir, op, ir_bin(ir, op, ref(x, g, STATE_A), ref(x, g, STATE_B)), cross);
			done = 1;
		}
		if (!done) {
			if (nr > 1)
				snprintf(why, n, "%d fields restart, but %s is neither one of them nor the largest or smallest "
						 "value one takes", nr, x->f[g].name);
			else
				snprintf(why, n, "%s restarts, but %s is neither it nor the largest or smallest value it takes",
					 x->f[rs[0]].name, x->f[g].name);
			ex_aux_drop(x);
			return 1;
		}
	}
	Buf names = {0}, aux = {0};
	for (int i = 0; i < nr; i++) {
		buf_printf(&names, "%s%s", i ? (i + 1 < nr ? ", " : " and ") : "", x->f[rs[i]].name);
		buf_printf(&aux, "%s%s and %s", i ? ", " : "", x->f[fc[i]].name, x->f[fl[i]].name);
	}
	char w[1000], *nm = buf_take(&names);
	if (ex_cand_verify(x, k, w, sizeof w)) {
		snprintf(why, n, "%s restart%s, and the merge of %s pieces fails: %s", nm, nr > 1 ? "" : "s",
			 nr > 1 ? "their" : "its", w);
		free(nm);
		buf_free(&aux);
		ex_aux_drop(x);
		return 1;
	}
	if (nr == 1)
		snprintf(why, n, "%s restarts: %s counts the restarts of a piece and %s is %s up to the first", nm,
			 x->f[fc[0]].name, x->f[fl[0]].name, nm);
	else
		snprintf(why, n, "%s restart: cuts_ counts each one's restarts in a piece and lead_ is it up to the first",
			 nm);
	free(x->res->aux);
	x->res->aux = buf_take(&aux);
	free(nm);
	return 0;
}
