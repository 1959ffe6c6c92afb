/* explore.c: `assoc explore`: is this loop secretly associative?
 *
 * Loop specs
 * ----------
 * A loop spec is a carrier spec that gives, instead of `lift` and `merge`,
 * the sequential loop a user would write: the state after one more element.
 *
 *   step:        the state after one element on the right, s' = step(s, x),
 *                as a loop body over the old state's fields by bare name,
 *                the inputs, params, lets, i, j and len.  An optional `let`
 *                of temporaries comes first; a field updated above is seen
 *                with its new value (as in the loop body).
 *   step_right:  the state after one element on the left, s' = step_right(x, s),
 *                in the same form (a right-to-left loop).  At least one of
 *                step and step_right is given.
 *   inverse:     a list of elements, one expression per element input over
 *                the state's fields, whose fold by `step` from the identity
 *                gives back that state (a weak right inverse).  Needs `step`.
 *   lift:        optional; it defaults to step(identity, x).
 *
 * Everything else (carrier, summary, dims, params, inputs, let, assume,
 * mask, state, identity, finalize, map, reference, template) means what it
 * means in a carrier spec.  `check`, `run` and `emit` refuse a loop spec;
 * `assoc explore LOOP.yaml -o CARRIER.yaml` derives the merge and writes a
 * carrier spec they accept.  Example (specs/loops/running_mean.yaml):
 *
 *   carrier: running_mean
 *   element: {x: f32}
 *   state: {n: f32, mean: f32}
 *   identity: {n: 0, mean: 0}
 *   step:
 *     n: n + 1
 *     mean: mean + (x - mean) / n
 *   reference:
 *     mean: sum(x) / count()
 *
 * What explore does
 * -----------------
 * 1. The homomorphism test: with both step and step_right, random lists are
 *    folded both ways.  By the third homomorphism theorem (Gibbons 1996) a
 *    merge exists exactly when the folds agree; a list where they do not is
 *    reported, and the loop as written cannot be split.
 * 2. Strategies, in order, each candidate verified (agreement with the loop
 *    on random rows in random fold trees, the law trials, the prover)
 *    before it is offered: affine maps (explore_affine.c), the given
 *    inverse (explore_affine.c), generalizing the step (explore_gen.c),
 *    bounded enumeration (explore_enum.c), a field that restarts with the
 *    two fields that say what a piece did (explore_restart.c), and
 *    generalizing and enumeration again with an auxiliary field from a
 *    small catalogue (explore_enum.c).
 * 3. The carrier found is written as a spec (explore_cand.c).
 *
 * The merges explore searches for are checked against the loop itself:
 * sample pairs of reachable states s, t (folds of random rows) with the
 * state the loop reaches over the concatenated rows, which any merge of
 * s and t must give (explore_view.c). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/explore/explore_int.h"

void explore_defaults(ExploreOpts *o)
{
	memset(o, 0, sizeof *o);
	o->seed = 1;
	o->budget = 4;
	o->trials = 3000;
}

void explore_result_free(ExploreResult *r)
{
	free(r->log);
	free(r->yaml);
	free(r->aux);
	free(r->cex);
	memset(r, 0, sizeof *r);
}

static void logline(Ex *x, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void logline(Ex *x, const char *name, const char *fmt, ...)
{
	char buf[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	buf_printf(&x->log, "  %s: %s\n", name, buf);
}

/* ---- the view ---- */

int explore_unfit_field(const Carrier *c)
{
	for (int f = 0; f < c->nstate; f++)
		if (c->state[f].ty.len)
			return f;
	return -1;
}

static int view_init(Ex *x, char *why, size_t n)
{
	Carrier *c = x->c;
	if (c->merge) {
		snprintf(why, n, "%s:%d:%d: error: this spec already has a merge: run 'assoc check %s'", c->file,
			 c->merge_pos.line, c->merge_pos.col, c->file);
		return -1;
	}
	if (c->nstate > EX_MAXF - 2) {
		Pos at = c->state[EX_MAXF - 2].pos; /* the first field past the limit */
		snprintf(why, n, "%s:%d:%d: error: explore handles up to %d state fields, this loop has %d", c->file, at.line,
			 at.col, EX_MAXF - 2, c->nstate);
		return -1;
	}
	int u = explore_unfit_field(c);
	if (u >= 0) {
		char ty[64];
		ty_str(c->ir, c->state[u].ty, ty, sizeof ty);
		snprintf(why, n, "%s:%d:%d: error: explore derives merges for scalar state fields (numbers and bools), and '%s' is %s: "
			 "write this loop's merge in the spec", c->file, c->state[u].pos.line, c->state[u].pos.col,
			 c->state[u].name, ty);
		return -1;
	}
	for (int f = 0; f < c->nstate; f++) {
		Field *d = &x->f[f];
		snprintf(d->name, sizeof d->name, "%s", c->state[f].name);
		d->ty = c->state[f].ty;
		for (int w = 0; w < 4; w++)
			d->var[w] = c->svar[w][f];
		d->ident = c->identity[f]->op == EXPR_CONST ? c->identity[f]->num : NAN;
		d->step = c->step ? c->step[f] : NULL;
		d->step_right = c->step_right ? c->step_right[f] : NULL;
		d->lift = c->lift[f];
	}
	x->n = x->norig = c->nstate;
	x->right = !c->step;
	return 0;
}

/* A loop machine: eval_init needs a merge, which a loop spec lacks. */
static int machine_up(Ex *x, char *why, size_t n)
{
	Carrier *c = x->c;
	Expr **dummy = calloc((size_t)c->nstate + 1, sizeof *dummy);
	if (!dummy)
		abort();
	for (int f = 0; f < c->nstate; f++)
		dummy[f] = ir_ref(c->ir, c->svar[STATE_B][f]);
	c->merge = dummy;
	eval_init(&x->m, c);
	c->merge = NULL;
	free(dummy);
	return draw_params(&x->m, x->o->params, x->o->nparams, &x->rng, why, n);
}

/* ---- the homomorphism test ---- */

static int homomorphism(Ex *x)
{
	static const DrawFamily fams[] = {DRAW_GRID, DRAW_NORMAL, DRAW_WIDE};
	double l[EX_MAXF], r[EX_MAXF];
	int trials = 0;
	for (int len = 1; len <= 8; len++)
		for (int t = 0; t < 30; t++, trials++) {
			Row *row = eval_row_new(&x->m, len);
			if (draw_row(&x->m, fams[t % 3], row, &x->rng)) {
				eval_row_free(row);
				continue;
			}
			ex_fold(x, row, l, 0);
			ex_fold(x, row, r, 1);
			int same = 1;
			for (int f = 0; f < x->n; f++)
				same &= ex_close(l[f], r[f]) || fabs(l[f] - r[f]) <= 1e-6 * fmax(1, fabs(l[f]));
			if (!same) {
				Buf b = {0};
				ex_row_text(x, row, &b);
				buf_puts(&b, ": the left fold (step) gives ");
				ex_state_text(x, l, x->n, &b);
				buf_puts(&b, ", the right fold (step_right) gives ");
				ex_state_text(x, r, x->n, &b);
				x->res->cex = buf_take(&b);
				eval_row_free(row);
				logline(x, "homomorphism test", "the folds disagree on %s: the loop as written cannot be split "
					"(no merge serves both; drop step_right to explore the left loop alone)", x->res->cex);
				return -1;
			}
			eval_row_free(row);
		}
	logline(x, "homomorphism test", "left and right folds agree on %d random lists: a merge exists (third "
		"homomorphism theorem)", trials);
	return 0;
}

/* ---- the strategies ---- */

static int found(Ex *x, const char *name, const char *why)
{
	logline(x, name, "succeeded (%s)", why);
	x->res->strategy = name;
	x->res->status = EXPLORE_FOUND;
	return 1;
}

static int try_general(Ex *x, Cand *k, double deadline)
{
	char why[1200];
	const char *sfx = x->n > x->norig ? " +aux" : "";
	char gname[40], ename[40];
	snprintf(gname, sizeof gname, "generalize%s", sfx);
	snprintf(ename, sizeof ename, "enumerate%s", sfx);
	if (ex_pairs(x)) {
		logline(x, gname, "failed (no sample states: inputs where assume holds could not be drawn)");
		return 0;
	}
	if (!ex_generalize(x, k, why, sizeof why))
		return found(x, x->n > x->norig ? "generalize +aux" : "generalize", why);
	logline(x, gname, "failed (%s)", why);
	if (!ex_enumerate(x, k, deadline, why, sizeof why))
		return found(x, x->n > x->norig ? "enumerate +aux" : "enumerate", why);
	logline(x, ename, "failed (%s)", why);
	x->out_of_time |= ex_now() > deadline;
	return 0;
}

static int cand_has(const Cand *k, const char *name)
{
	for (int f = 0; f < k->n; f++)
		if (!strcmp(k->name[f], name))
			return 1;
	return 0;
}

static void search(Ex *x, Cand *k)
{
	char why[1200];
	double budget = x->o->budget;
	if (!ex_affine(x, k, why, sizeof why) && found(x, "affine", why))
		return;
	logline(x, "affine", "failed (%s)", why);
	if (!ex_inverse(x, k, why, sizeof why) && found(x, "inverse", why))
		return;
	logline(x, "inverse", x->c->ninverse ? "failed (%s)" : "%s", why);
	if (try_general(x, k, x->t0 + budget * 0.4))
		return;
	int applies;
	if (!ex_restart(x, k, &applies, why, sizeof why) && found(x, "restart", why))
		return;
	if (applies)
		logline(x, "restart", "failed (%s)", why);
	for (int i = 0;; i++) {
		char name[SPEC_MAX_NAME];
		if (ex_elapsed(x) > budget) {
			logline(x, "auxiliary fields", "stopped: the time budget (%g s) is spent", budget);
			x->out_of_time = 1;
			return;
		}
		if (ex_aux_add(x, i, name, sizeof name))
			break;
		char *st = ir_str(x->c->ir, x->right ? x->f[x->n - 1].step_right : x->f[x->n - 1].step);
		logline(x, "auxiliary field", "added %s (%s: %s)", name, x->right ? "step_right" : "step", st);
		free(st);
		double left = budget - ex_elapsed(x);
		if (try_general(x, k, ex_now() + left * 0.5)) {
			Buf kept = {0};
			for (int f = x->norig; f < x->n; f++)
				if (cand_has(k, x->f[f].name))
					buf_printf(&kept, "%s%s", kept.len ? " and " : "", x->f[f].name);
				else
					logline(x, "auxiliary field", "%s dropped: no output depends on it", x->f[f].name);
			x->res->aux = kept.len ? buf_take(&kept) : NULL;
			buf_free(&kept);
			return;
		}
		ex_aux_drop(x);
	}
	logline(x, "auxiliary fields", "none of the catalogue (running sum, a sum with its largest or "
	       "smallest run from the fixed end, count, max, min, a count with the element at the fixed end) helps");
}

static const char *proof_word(ProofStatus s) { return prove_status_name(s); }

static void summary(Ex *x)
{
	ExploreResult *r = x->res;
	if (r->status != EXPLORE_FOUND) {
		const char *inv = r->inverse_wrong ? "; the inverse given is wrong" : "";
		if (r->status == EXPLORE_NONE && x->out_of_time)
			buf_printf(&x->log, "  no merge found: the search stopped at the time budget (%g s, --budget)%s\n",
				   x->o->budget, inv);
		else if (r->status == EXPLORE_NONE) /* more time would find nothing more */
			buf_printf(&x->log, "  no merge found: every strategy above ran to its end in %.1f s of the %g s "
					    "budget%s\n", ex_elapsed(x), x->o->budget, inv);
		return;
	}
	buf_printf(&x->log, "  carrier: %s by %s%s%s%s; associative %s, identity %s, commutative %s\n", x->c->name,
		   r->strategy, !r->aux ? "" : strstr(r->aux, " and ") ? " (auxiliary fields " : " (auxiliary field ",
		   r->aux ? r->aux : "", r->aux ? " added)" : "",
		   proof_word(r->assoc), proof_word(r->ident),
		   r->commutative ? "proved" : "not claimed");
}

int explore_run(Carrier *loop, const ExploreOpts *o, ExploreResult *r)
{
	memset(r, 0, sizeof *r);
	Ex *x = calloc(1, sizeof *x);
	Cand *k = calloc(1, sizeof *k);
	if (!x || !k)
		abort();
	x->c = loop, x->o = o, x->res = r, x->t0 = ex_now();
	x->rng = rng_stream(o->seed, RNG_EXPLORE);
	r->status = EXPLORE_NONE;
	r->assoc = r->ident = r->comm = PROOF_UNKNOWN;
	char why[400];
	int rc = 0;
	if (view_init(x, why, sizeof why)) {
		r->status = EXPLORE_INVALID; /* a diagnostic, not a log line */
		buf_printf(&x->log, "%s\n", why);
		goto out;
	}
	if (machine_up(x, why, sizeof why)) {
		buf_printf(&x->log, "%s\n", why);
		rc = -1;
		goto out_m;
	}
	if (loop->lift_pos) { /* a lift the search would take or leave by strategy: it must be the step's */
		Buf b = {0};
		int f = ex_lift_disagrees(x, &b);
		if (f >= 0) {
			char *w = buf_take(&b);
			r->status = EXPLORE_INVALID;
			buf_printf(&x->log, "%s:%d:%d: error: %s: a loop's lift is its %s from the identity; leave 'lift' out "
					    "to take that\n", loop->file, loop->lift_pos[f].line, loop->lift_pos[f].col, w,
				   loop->step ? "step" : "step_right");
			free(w);
			goto out_m;
		}
		free(buf_take(&b));
	}
	if (loop->step && loop->step_right) {
		if (homomorphism(x)) {
			r->status = EXPLORE_NOT_SPLITTABLE;
			goto out_m;
		}
	} else {
		logline(x, "homomorphism test", "skipped (only %s is given; a merge is searched for directly)",
			loop->step ? "step" : "step_right");
	}
	search(x, k);
	summary(x);
out_m:
	ex_aux_drop(x);
	eval_free(&x->m);
out:
	r->seconds = ex_elapsed(x);
	r->log = buf_take(&x->log);
	free(x);
	free(k);
	return rc;
}
