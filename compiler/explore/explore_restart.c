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
 * The candidate is verified as any other (at params of either sign); a
 * field of another form, or a second that restarts, leaves the strategy
 * to the others.  A right loop (step_right) reads its pieces from the
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

int ex_restart(Ex *x, Cand *k, int *applies, char *why, size_t n)
{
	Ir *ir = x->c->ir;
	Restart r;
	int f = -1;
	*applies = 0;
	if (x->n + 2 > EX_MAXF)
		return 1;
	/* a right loop's pieces are the same, read from the other end: the
	 * piece whose restarts decide is the left one, the lead its suffix */
	int near = x->right ? STATE_A : STATE_B, far = x->right ? STATE_B : STATE_A;
	for (int i = 0; i < x->n && f < 0; i++)
		if (ty_is_float(x->f[i].ty) || x->f[i].ty.kind == TY_I32 || x->f[i].ty.kind == TY_I64)
			if (!x->f[i].ty.len && restart_form(x, i, &r))
				f = i;
	if (f < 0)
		return 1;
	*applies = 1;
	double I = x->f[f].ident;
	/* cuts += !C; lead grows with the field until the first restart */
	Field *cuts = field_new(x, "cuts", f, x->f[f].ty);
	int fc = x->n++;
	Expr *one = ir_const(ir, cuts->ty, 1), *zero = ir_const(ir, cuts->ty, 0);
	Expr *cstep = ir_bin(ir, EXPR_ADD, ref(x, fc, STATE_SELF), ir_node(ir, EXPR_WHERE, cuts->ty, 0, r.keep, zero, one));
	Field *lead = field_new(x, "lead", f, x->f[f].ty);
	int fl = x->n++;
	lead->ident = I;
	Expr *open = ir_bin(ir, EXPR_AND, ir_bin(ir, EXPR_EQ, ref(x, fc, STATE_SELF), zero), r.keep);
	Expr *lstep = ir_node(ir, EXPR_WHERE, lead->ty, 0, open, ir_bin(ir, EXPR_ADD, ref(x, fl, STATE_SELF), r.u),
			      ref(x, fl, STATE_SELF));
	if (x->right)
		cuts->step_right = cstep, lead->step_right = lstep;
	else
		cuts->step = cstep, lead->step = lstep;
	ex_aux_lift(x, cuts, lead);
	ex_aux_lift(x, lead, cuts);
	ex_view_changed(x);
	ex_cand_from_view(x, k);
	for (int g = 0; g < x->n; g++) {
		Expr *gn = ref(x, g, near), *gf = ref(x, g, far), *s = step_of(x, g);
		if (g == f) {
			k->merge[g] = ir_node(ir, EXPR_WHERE, gn->ty, 0, ir_bin(ir, EXPR_GT, ref(x, fc, near), zero), gn,
					      grown(x, ref(x, g, STATE_A), ref(x, g, STATE_B), I));
		} else if (g == fc) {
			k->merge[g] = ir_bin(ir, EXPR_ADD, ref(x, g, STATE_A), ref(x, g, STATE_B));
		} else if (g == fl) {
			k->merge[g] = ir_node(ir, EXPR_WHERE, gf->ty, 0, ir_bin(ir, EXPR_GT, ref(x, fc, far), zero), gf,
					      grown(x, ref(x, g, STATE_A), ref(x, g, STATE_B), I));
		} else if (s && (s->op == EXPR_MAX || s->op == EXPR_MIN) &&
			   ((is_self(x, s->a[0], g) && s->a[1] == step_of(x, f)) ||
			    (is_self(x, s->a[1], g) && s->a[0] == step_of(x, f)))) {
			Expr *cross = x->right ? grown(x, ref(x, fl, STATE_A), ref(x, f, STATE_B), I)
					       : grown(x, ref(x, f, STATE_A), ref(x, fl, STATE_B), I);
			k->merge[g] = ir_bin(ir, (Op)s->op, ir_bin(ir, (Op)s->op, ref(x, g, STATE_A), ref(x, g, STATE_B)),
					     cross);
		} else {
			Restart other;
			if (g < x->norig && restart_form(x, g, &other))
				snprintf(why, n, "%s and %s both restart: one such field is taken, beside the largest or "
						 "smallest value it takes", x->f[f].name, x->f[g].name);
			else
				snprintf(why, n, "%s restarts, but %s is neither it nor the largest or smallest value it "
						 "takes", x->f[f].name, x->f[g].name);
			ex_aux_drop(x);
			return 1;
		}
	}
	char w[1000];
	if (ex_cand_verify(x, k, w, sizeof w)) {
		snprintf(why, n, "%s restarts, and the merge of its pieces fails: %s", x->f[f].name, w);
		ex_aux_drop(x);
		return 1;
	}
	snprintf(why, n, "%s restarts: %s counts the restarts of a piece and %s is %s up to the first", x->f[f].name,
		 cuts->name, lead->name, x->f[f].name);
	free(x->res->aux);
	Buf b = {0};
	buf_printf(&b, "%s and %s", cuts->name, lead->name);
	x->res->aux = buf_take(&b);
	return 0;
}
