/* explore_cand.c: a candidate carrier written as a spec, and verified: it
 * agrees with the loop on random rows folded in random tree shapes, the
 * law trials hold, and the prover disproves nothing.  Two repairs are
 * tried on the way: a division by a merged count gets the guard
 * `where(D == 0, identity, ...)` (the empty merge is 0/0 otherwise), and a
 * max-rooted field whose finite identity only holds on reachable states
 * gets -inf as its identity, mapped back in finalize. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/check/verdict.h"
#include "compiler/explore/explore_int.h"

void ex_cand_from_view(Ex *x, Cand *k)
{
	memset(k, 0, sizeof *k);
	k->n = x->n;
	for (int f = 0; f < x->n; f++) {
		Field *d = &x->f[f];
		snprintf(k->name[f], sizeof k->name[f], "%s", d->name);
		k->ty[f] = d->ty;
		k->va[f] = d->var[STATE_A], k->vb[f] = d->var[STATE_B], k->vs[f] = d->var[STATE_SELF];
		k->ident[f] = d->ident;
		k->lift[f] = d->lift;
		/* step(identity, x) reads as written: `0 + (x - 0) / 1` is x.  Decided
		 * on samples; the candidate is verified with the simpler lift. */
		double v;
		int q;
		if (ex_lift_const(x, f, &v))
			k->lift[f] = ir_const(x->c->ir, d->ty, v);
		else if ((q = ex_lift_input(x, f)) >= 0)
			k->lift[f] = ir_ref(x->c->ir, x->c->elem[q].var);
	}
	Carrier *c = x->c;
	for (int o = 0; o < c->nfinal && o < EX_MAXOUT; o++) {
		k->finname[k->nfin] = c->finalize[o].name;
		k->fin[k->nfin++] = c->finalize[o].e;
	}
	for (int o = 0; o < c->nmap && o < EX_MAXOUT; o++)
		k->map[k->nmap++] = c->map[o].e;
}

/* ---- the spec text ---- */

static void scalar(Buf *b, const char *s)
{
	int q = !*s || strchr("[]{}#&*!|>'\"%@`,?:", s[0]) || (s[0] == '-' && (s[1] == ' ' || !s[1])) ||
		strstr(s, ": ") || strstr(s, " #") || s[strlen(s) - 1] == ':' || s[0] == ' ' || s[strlen(s) - 1] == ' ' ||
		strpbrk(s, "\n\t\r");
	if (!q) {
		buf_puts(b, s);
		return;
	}
	/* a double-quoted scalar: escapes for quotes, backslashes and the
	 * line breaks of a block summary */
	buf_puts(b, "\"");
	for (; *s; s++)
		if (*s == '\n' || *s == '\t' || *s == '\r')
			buf_printf(b, "\\%c", *s == '\n' ? 'n' : *s == '\t' ? 't' : 'r');
		else
			buf_printf(b, "%s%c", *s == '"' || *s == '\\' ? "\\" : "", *s);
	buf_puts(b, "\"");
}

static void put_expr(Buf *b, const Ir *ir, const Expr *e)
{
	char *t = ir_str(ir, e);
	scalar(b, t);
	free(t);
}

static void put_decls(Buf *b, const Carrier *c, const char *key, const Decl *d, int n)
{
	if (!n)
		return;
	buf_printf(b, "%s:\n", key);
	for (int i = 0; i < n; i++) {
		char t[64];
		Ty ty = d[i].ty;
		ty.kind = (uint8_t)d[i].storage;
		buf_printf(b, "  %s: %s\n", d[i].name, ty_str(c->ir, ty, t, sizeof t));
	}
}

static void put_fields(Buf *b, const Ir *ir, const Cand *k, const char *key, Expr *const *e)
{
	buf_printf(b, "%s:\n", key);
	for (int f = 0; f < k->n; f++) {
		buf_printf(b, "  %s: ", k->name[f]);
		put_expr(b, ir, e[f]);
		buf_puts(b, "\n");
	}
}

char *ex_cand_yaml(Ex *x, const Cand *k)
{
	Carrier *c = x->c;
	Ir *ir = c->ir;
	Buf b = {0};
	buf_printf(&b, "# derived by assoc explore from %s\n", c->file);
	buf_printf(&b, "carrier: %s\n", c->name);
	if (c->summary) {
		buf_puts(&b, "summary: ");
		scalar(&b, c->summary);
		buf_puts(&b, "\n");
	}
	if (ir_ndims(ir)) {
		buf_puts(&b, "dims:\n");
		for (int d = 0; d < ir_ndims(ir); d++)
			buf_printf(&b, "  %s: %d\n", ir_dim(ir, d)->name, ir_dim(ir, d)->size);
	}
	put_decls(&b, c, "params", c->params, c->nparams);
	put_decls(&b, c, "row", c->row, c->nrow);
	put_decls(&b, c, "column", c->col, c->ncol);
	put_decls(&b, c, "element", c->elem, c->nelem);
	if (c->assume) {
		buf_puts(&b, "assume: ");
		put_expr(&b, ir, c->assume);
		buf_puts(&b, "\n");
	}
	if (c->mask) {
		buf_puts(&b, "mask: ");
		put_expr(&b, ir, c->mask);
		buf_puts(&b, "\n");
	}
	buf_puts(&b, "state:\n");
	for (int f = 0; f < k->n; f++) {
		char t[64];
		buf_printf(&b, "  %s: %s\n", k->name[f], ty_str(ir, k->ty[f], t, sizeof t));
	}
	buf_puts(&b, "identity:\n");
	for (int f = 0; f < k->n; f++) {
		buf_printf(&b, "  %s: ", k->name[f]);
		if (k->ty[f].kind == TY_BOOL)
			buf_puts(&b, k->ident[f] != 0 ? "true" : "false");
		else
			buf_num(&b, k->ident[f], 0);
		buf_puts(&b, "\n");
	}
	put_fields(&b, ir, k, "lift", k->lift);
	put_fields(&b, ir, k, "merge", k->merge);
	buf_puts(&b, "finalize:\n");
	for (int o = 0; o < k->nfin; o++) {
		buf_printf(&b, "  %s: ", k->finname[o]);
		put_expr(&b, ir, k->fin[o]);
		buf_puts(&b, "\n");
	}
	if (k->nmap) {
		buf_puts(&b, "map:\n");
		for (int o = 0; o < k->nmap; o++) {
			buf_printf(&b, "  %s: ", c->map[o].name);
			put_expr(&b, ir, k->map[o]);
			buf_puts(&b, "\n");
		}
	}
	/* the outputs' references alone: each is written whole, its helpers
	 * (mx: max(x) beside h: ... x - mx ...) inlined, so a helper written
	 * beside it would be one no reference names */
	int nref = 0;
	for (int i = 0; i < c->nref; i++) {
		int out = 0;
		for (int o = 0; o < k->nfin && !out; o++)
			out = !strcmp(c->ref[i].name, k->finname[o]);
		for (int o = 0; o < c->nmap && !out; o++)
			out = !strcmp(c->ref[i].name, c->map[o].name);
		if (!out)
			continue;
		buf_puts(&b, nref++ ? "  " : "reference:\n  ");
		buf_printf(&b, "%s: ", c->ref[i].name);
		put_expr(&b, ir, c->ref[i].e);
		buf_puts(&b, "\n");
	}
	if (k->commutative)
		buf_puts(&b, "laws: [commutative]\n");
	if (c->tpl_given)
		buf_printf(&b, "template: %s\n", variant_family_name(c->tpl));
	return buf_take(&b);
}

/* ---- checks ---- */

int ex_cand_fits_pairs(Ex *x, Cand *k, char *why, size_t n)
{
	ExEv *e = ex_ev_new(x, k->merge, k->n);
	double v[EX_MAXF * EX_MAXF + EX_MAXF];
	int ok = 1;
	for (int p = 0; ok && p < x->pairs.n; p++) {
		ex_ev_run(x, e, x->pairs.a[p], x->pairs.b[p], NULL, NULL, 0, v);
		for (int f = 0; ok && f < k->n; f++)
			if (!ex_close(v[f], x->pairs.want[p][f])) {
				Buf b = {0};
				buf_printf(&b, "%s: a = ", k->name[f]);
				ex_state_text(x, x->pairs.a[p], x->n, &b);
				buf_puts(&b, ", b = ");
				ex_state_text(x, x->pairs.b[p], x->n, &b);
				buf_puts(&b, " gives ");
				buf_num(&b, v[f], 0);
				buf_puts(&b, ", the loop ");
				buf_num(&b, x->pairs.want[p][f], 0);
				snprintf(why, n, "%s", b.s);
				buf_free(&b);
				ok = 0;
			}
	}
	ex_ev_free(e);
	return ok;
}

static Expr *state_den(Ex *x, Expr *e)
{
	if (e->op == EXPR_DIV && ex_has_state(x, e->a[1]))
		return e->a[1];
	for (int i = 0; i < e->nargs; i++) {
		Expr *d = state_den(x, e->a[i]);
		if (d)
			return d;
	}
	return NULL;
}

/* merge(e, e) must be e: guard fields whose merge divides by a merged
 * quantity that is zero there. */
static void guard_divisions(Ex *x, Cand *k)
{
	ExEv *e = ex_ev_new(x, k->merge, k->n);
	double v[EX_MAXF * EX_MAXF + EX_MAXF];
	ex_ev_run(x, e, k->ident, k->ident, NULL, NULL, 0, v);
	ex_ev_free(e);
	for (int f = 0; f < k->n; f++) {
		if (!isnan(v[f]))
			continue;
		Expr *d = state_den(x, k->merge[f]);
		if (!d)
			continue;
		Ir *ir = x->c->ir;
		Expr *cond = ir_bin(ir, EXPR_EQ, d, ex_num(x, 0));
		k->merge[f] = ir_node(ir, EXPR_WHERE, k->merge[f]->ty, 0, cond, ir_const(ir, k->merge[f]->ty, k->ident[f]),
				      k->merge[f]);
	}
}

static Carrier *load_cand(Ex *x, Cand *k, char **yaml, char *why, size_t n)
{
	*yaml = ex_cand_yaml(x, k);
	Diag d;
	diag_init(&d, x->c->file);
	Carrier *dc = spec_load_buffer(x->c->file, *yaml, strlen(*yaml), NULL, 0, &d);
	if (!dc) {
		char first[300];
		snprintf(why, n, "internal: the derived spec does not load: %s", diag_first(&d, first, sizeof first));
	}
	diag_free(&d);
	return dc;
}

/* The params as drawn, then every numeric scalar param at each of these
 * (bools as drawn): a merge fitted on pairs of one draw may hold only for
 * its sign (a restart grown by x * w, w drawn positive, is wrong at w < 0,
 * where the prover leaves the law open).  An assume that a case breaks
 * leaves no row to draw there. */
static const double param_cases[] = {0, 2, -1, -100, 100};

/* The carrier's outputs on random rows, folded in random shapes, against the loop's. */
static int agrees(Ex *x, Carrier *dc, char *why, size_t n)
{
	static const DrawFamily fams[] = {DRAW_GRID, DRAW_NORMAL, DRAW_SPREAD, DRAW_WIDE};
	Machine md;
	eval_init(&md, dc);
	double *drawn = malloc((size_t)(x->m.pw + 1) * sizeof *drawn);
	double s[EX_MAXF], *want = calloc(2 * (size_t)x->m.finw + 4 * (size_t)md.sw + md.finw + 4, sizeof *want);
	if (!want || !drawn)
		abort();
	memcpy(drawn, x->m.params, x->m.pw * sizeof *drawn);
	int numeric = 0;
	for (int p = 0; p < x->c->nparams; p++)
		numeric |= !x->c->params[p].ty.len && x->c->params[p].ty.kind != TY_BOOL;
	int ncases = numeric ? 1 + (int)(sizeof param_cases / sizeof *param_cases) : 1;
	double *got = want + x->m.finw + 1, *v = got + md.finw + 1, *e = v + md.sw, *ge = e + md.sw;
	uint64_t rng = x->rng ^ 0xa5a5;
	int ok = 1;
	for (int pc = 0; ok && pc < ncases; pc++) {
		for (int p = 0; pc && p < x->c->nparams; p++)
			if (!x->c->params[p].ty.len && x->c->params[p].ty.kind != TY_BOOL)
				x->m.params[x->m.poff[p]] = param_cases[pc - 1];
		memcpy(md.params, x->m.params, x->m.pw * sizeof *md.params);
		for (int t = 0; ok && t < (pc ? 24 : 64); t++) {
			int len = t < 4 ? t : rng_int(&rng, 1, t < 40 ? 9 : 40);
			Row *r = eval_row_new(&x->m, len);
			if (draw_row(&x->m, fams[t % 4], r, &rng) == 0) {
				ex_fold(x, r, s, x->right);
				ex_outputs(x, r, s, want);
				eval_fold(&md, MODE_F64, r, 0, len, SHAPE_RANDOM, &rng, v, e);
				eval_finalize(&md, MODE_F64, r, v, e, got, ge);
				for (int o = 0; ok && o < dc->nfinal && o < x->c->nfinal; o++) {
					int off = x->m.finoff[o];
					if (ex_close(got[md.finoff[o]], want[off]) ||
					    fabs(got[md.finoff[o]] - want[off]) <= 1e-6 * fmax(1, fabs(want[off])))
						continue;
					Buf b = {0};
					buf_printf(&b, "disagrees with the loop");
					for (int p = 0; pc && p < x->c->nparams; p++)
						if (!x->c->params[p].ty.len && x->c->params[p].ty.kind != TY_BOOL)
							buf_printf(&b, "%s %s = %g", p ? "," : " at", x->c->params[p].name,
								   param_cases[pc - 1]);
					buf_printf(&b, " on ");
					ex_row_text(x, r, &b);
					buf_printf(&b, ": %s is ", dc->finalize[o].name);
					buf_num(&b, got[md.finoff[o]], 0);
					buf_puts(&b, ", the loop gives ");
					buf_num(&b, want[off], 0);
					snprintf(why, n, "%s", b.s);
					buf_free(&b);
					ok = 0;
				}
			}
			eval_row_free(r);
		}
	}
	memcpy(x->m.params, drawn, x->m.pw * sizeof *drawn);
	free(drawn);
	free(want);
	eval_free(&md);
	return ok;
}

static ProofStatus status_of(const CarrierVerdict *cv, const char *law)
{
	const VerdictLaw *l = verdict_law(cv, law);
	return l && l->proof ? l->proof->status : PROOF_UNKNOWN;
}

typedef struct {
	int trials_ok, comm_ok;
	int ident_fails; /* the identity law fails, in the trials or by the prover */
	ProofStatus assoc, ident, comm;
} Verdicts;

/* The loaded carrier's verdict (verdict.h), as every command reaches it;
 * 0 when nothing fails but the claim of commutativity (comm_ok says). */
static int laws_hold(Ex *x, Carrier *dc, Verdicts *v, char *why, size_t n)
{
	/* trials see one draw of a bool param; the prover leaves it open, not
	 * split, and proves for every value of the params, as the loop
	 * comparison draws one value of them */
	VerdictOpts o = {.prove = 1, .prove_flags = PROVE_BOOLS_OPEN, .prove_any_params = 1, .one_case = 1};
	check_defaults(&o.check);
	o.check.seed = x->o->seed;
	o.check.trials = x->o->trials;
	o.check.id_trials = x->o->trials < 2000 ? x->o->trials : 2000;
	o.check.special_rows = 0; /* candidates are ranked by their laws alone */
	o.check.params = x->o->params, o.check.nparams = x->o->nparams;
	CarrierVerdict cv;
	char msg[200];
	if (verdict_run(dc, &o, &cv, msg, sizeof msg)) {
		snprintf(why, n, "%s", msg);
		return -1;
	}
	if (cv.prove_error) {
		snprintf(why, n, "the prover failed");
		verdict_free(&cv);
		return -1;
	}
	const VerdictLaw *comm = verdict_law(&cv, "commutative");
	v->comm_ok = !comm || !comm->trial || comm->trial->v != VERDICT_FAILS;
	v->trials_ok = 1;
	for (int i = 0; i < cv.nlaw && v->trials_ok; i++) {
		const LawOutcome *t = cv.law[i].trial;
		if (t && t->v == VERDICT_FAILS && strcmp(t->law, "commutative")) {
			snprintf(why, n, "%s fails in the trials: %s", t->law, t->detail ? t->detail : "");
			v->trials_ok = 0;
			v->ident_fails = !strcmp(t->law, "identity");
		}
	}
	const CheckResult *r = &cv.trials;
	if (v->trials_ok && (r->input_error || r->sound == VERDICT_FAILS)) {
		snprintf(why, n, "%s", r->input_error ? r->input_error : r->sound_detail ? r->sound_detail : "unsound");
		v->trials_ok = 0;
	}
	v->assoc = status_of(&cv, "associative");
	v->ident = status_of(&cv, "identity");
	v->ident_fails |= v->ident == PROOF_DISPROVED;
	v->comm = status_of(&cv, "commutative");
	int bad = !v->trials_ok;
	if (!bad && (v->assoc == PROOF_DISPROVED || v->ident == PROOF_DISPROVED)) {
		const ProofLine *l = verdict_law(&cv, v->assoc == PROOF_DISPROVED ? "associative" : "identity")->proof;
		snprintf(why, n, "the prover disproves %s: %s", l->law, l->how ? l->how : "");
		bad = 1;
	}
	/* the verdict fails on nothing else: what it refuses, a command would */
	if (!bad && !verdict_ok(&cv) && (cv.cause != VERDICT_BY_TRIALS || v->comm_ok)) {
		snprintf(why, n, "%s", cv.why);
		bad = 1;
	}
	verdict_free(&cv);
	return bad ? -1 : 0;
}

/* A max-rooted (min-rooted) field with a finite identity: identity -inf
 * (inf), and finalize maps the empty value back. */
static int repair_identity(Ex *x, Cand *k)
{
	Ir *ir = x->c->ir;
	int changed = 0;
	for (int f = 0; f < k->n; f++) {
		Op op = (Op)k->merge[f]->op;
		if ((op != EXPR_MAX && op != EXPR_MIN) || !isfinite(k->ident[f]))
			continue;
		double old = k->ident[f], unit = op == EXPR_MAX ? -INFINITY : INFINITY;
		k->ident[f] = unit;
		Expr *bare = ir_ref(ir, k->vs[f]);
		Expr *back = ir_node(ir, EXPR_WHERE, bare->ty, 0, ir_bin(ir, EXPR_EQ, bare, ir_const(ir, bare->ty, unit)),
				     ir_const(ir, bare->ty, old), bare);
		changed = 1;
		for (int o = 0; o < k->nfin; o++)
			k->fin[o] = ex_subst_var(x, k->fin[o], k->vs[f], back);
		for (int o = 0; o < k->nmap; o++)
			k->map[o] = ex_subst_var(x, k->map[o], k->vs[f], back);
	}
	return changed;
}

/* e with the identities a derivation leaves behind taken out (0 + t,
 * t - 0, t * 1, t / 1, min(-inf, t), max(inf, t)) and what they leave
 * constant folded, so that the written spec reads as one would write it.
 * Each is exact but for the sign of a zero sum (0 + -0 is +0), and the
 * carrier is verified after. */
static Expr *tidy(Ir *ir, Expr *e, Expr **memo)
{
	if (memo[e->id])
		return memo[e->id];
	Expr *r = e;
	if (e->nargs && e->op != EXPR_TOPK && e->op != EXPR_TOPK_IDX) {
		Expr *a[4] = {0};
		int changed = 0;
		for (int i = 0; i < e->nargs; i++)
			changed |= (a[i] = tidy(ir, e->a[i], memo)) != e->a[i];
		if (changed)
			r = ir_node_n(ir, (Op)e->op, e->ty, e->k, a);
	}
	if (r->nargs == 2) {
		Expr *p = r->a[0], *q = r->a[1];
#define IS(t, v) ((t)->op == EXPR_CONST && (t)->num == (v))
#define SAME(t) (ty_eq((t)->ty, r->ty) ? (t) : r)
		switch (r->op) {
		case EXPR_ADD: r = IS(p, 0) ? SAME(q) : IS(q, 0) ? SAME(p) : r; break;
		case EXPR_SUB: r = IS(q, 0) ? SAME(p) : r; break;
		case EXPR_MUL: r = IS(p, 1) ? SAME(q) : IS(q, 1) ? SAME(p) : r; break;
		case EXPR_DIV: r = IS(q, 1) ? SAME(p) : r; break;
		case EXPR_MIN: r = IS(p, -INFINITY) || IS(q, -INFINITY) ? ir_const(ir, r->ty, -INFINITY) : r; break;
		case EXPR_MAX: r = IS(p, INFINITY) || IS(q, INFINITY) ? ir_const(ir, r->ty, INFINITY) : r; break;
		default: break;
		}
#undef IS
#undef SAME
	}
	return memo[e->id] = r;
}

static int is_var(void *ctx, Expr *e) { return e->op == EXPR_VAR && e->k == *(int *)ctx; }

static int reads(Expr *e, int var) { return e && ir_contains(e, is_var, &var); }

/* Whether field f of k is one explore added (not the loop's own). */
static int aux_field(Ex *x, const Cand *k, int f)
{
	for (int g = 0; g < x->n; g++)
		if (x->f[g].aux && x->f[g].var[STATE_SELF] == k->vs[f])
			return 1;
	return 0;
}

/* The field of k that tells an empty side from one that holds elements:
 * its value is its identity's on no sample state (every side of the
 * sample pairs holds at least one element), so that a merge that fits
 * them may be wrong only where a side is empty.  -1 where none is; a
 * field of the loop's own before an auxiliary one. */
static int empty_marker(Ex *x, const Cand *k)
{
	int best = -1;
	for (int f = 0; f < k->n; f++) {
		const Var *v = ir_var(x->c->ir, k->vs[f]);
		if (v->kind != VAR_STATE || v->slot < 0 || v->slot >= x->n || isnan(k->ident[f]))
			continue;
		int ok = x->pairs.n > 0;
		for (int p = 0; p < x->pairs.n && ok; p++)
			ok = x->pairs.a[p][v->slot] != k->ident[f] && x->pairs.b[p][v->slot] != k->ident[f] &&
			     x->pairs.want[p][v->slot] != k->ident[f];
		if (ok && (best < 0 || aux_field(x, k, best) > aux_field(x, k, f)))
			best = f;
	}
	return best;
}

static Expr *not(Ir *ir, Expr *c) { return c->op == EXPR_NOT ? c->a[0] : ir_un(ir, EXPR_NOT, c); }

/* where(c, x, y), for bools (c && x) || (!c && y): where takes numbers. */
static Expr *choose(Ir *ir, Expr *c, Expr *x, Expr *y)
{
	if (x->ty.kind != TY_BOOL)
		return ir_node(ir, EXPR_WHERE, x->ty, 0, c, x, y);
	return ir_bin(ir, EXPR_OR, ir_bin(ir, EXPR_AND, c, x), ir_bin(ir, EXPR_AND, not(ir, c), y));
}

/* Whether the side whose marker field e is var v is empty: v at its
 * identity (a bool marker, false or true, read as itself). */
static Expr *empty_side(Ir *ir, const Cand *k, int e, int v)
{
	Expr *r = ir_ref(ir, v);
	if (k->ty[e].kind == TY_BOOL)
		return k->ident[e] != 0 ? r : not(ir, r);
	return ir_bin(ir, EXPR_EQ, r, ir_const(ir, k->ty[e], k->ident[e]));
}

/* Each merge made exact on an empty side where the sample states show
 * it is not: where b is empty the merge is a, where a is, b (count
 * changes, first element: a merge fitted on sides that hold elements
 * reads the other side's first or last element, which an empty side
 * does not have).  A merge that already gives a (b) against an empty
 * side, as a sum does, keeps that side unguarded.  0 where k has no
 * marker or no merge needs a guard. */
static int guard_empty(Ex *x, Cand *k)
{
	int e = empty_marker(x, k);
	if (e < 0)
		return 0;
	Ir *ir = x->c->ir;
	double id[EX_MAXF] = {0}, out[3][EX_MAXF * EX_MAXF + EX_MAXF];
	int slot[EX_MAXF * EX_MAXF + EX_MAXF], need[EX_MAXF * EX_MAXF + EX_MAXF] = {0}, any = 0;
	for (int f = 0; f < k->n; f++) {
		const Var *v = ir_var(ir, k->vs[f]);
		slot[f] = v->slot;
		if (v->kind != VAR_STATE || v->slot < 0 || v->slot >= x->n)
			return 0;
		id[v->slot] = k->ident[f];
	}
	ExEv *ev = ex_ev_new(x, k->merge, k->n);
	for (int p = 0; p < x->pairs.n; p++) {
		const double *a = x->pairs.a[p], *b = x->pairs.b[p];
		ex_ev_run(x, ev, a, id, NULL, NULL, 0, out[0]);
		ex_ev_run(x, ev, id, b, NULL, NULL, 0, out[1]);
		ex_ev_run(x, ev, id, id, NULL, NULL, 0, out[2]);
		for (int f = 0; f < k->n; f++) {
			need[f] |= !ex_close(out[0][f], a[slot[f]]);                           /* 1: b empty */
			need[f] |= !ex_close(out[1][f], b[slot[f]]) << 1;                      /* 2: a empty */
			need[f] |= (!ex_close(out[2][f], k->ident[f]) && !(need[f] & 1)) << 1; /* both */
		}
	}
	ex_ev_free(ev);
	Expr *ae = empty_side(ir, k, e, k->va[e]), *be = empty_side(ir, k, e, k->vb[e]);
	for (int f = 0; f < k->n; f++) {
		Expr *m = k->merge[f];
		if (f == e && k->ty[e].kind == TY_BOOL) {
			/* a flag of nonempty states: either side's */
			Expr *a = ir_ref(ir, k->va[e]), *b = ir_ref(ir, k->vb[e]);
			m = ir_bin(ir, k->ident[e] != 0 ? EXPR_AND : EXPR_OR, a, b);
		} else if (need[f]) {
			m = choose(ir, be, ir_ref(ir, k->va[f]), m);
			m = choose(ir, ae, ir_ref(ir, k->vb[f]), m);
		}
		any |= m != k->merge[f];
		k->merge[f] = m;
	}
	return any;
}

/* Mark the loop's own fields (the carrier keeps each) and the fields an
 * output reads, then those a marked field's merge reads. */
static void live_fields(Ex *x, const Cand *k, int *live)
{
	for (int f = 0; f < k->n; f++) {
		live[f] = !aux_field(x, k, f);
		for (int o = 0; o < k->nfin && !live[f]; o++)
			live[f] = reads(k->fin[o], k->vs[f]);
		for (int o = 0; o < k->nmap && !live[f]; o++)
			live[f] = reads(k->map[o], k->vs[f]);
	}
	for (int changed = 1; changed;) {
		changed = 0;
		for (int f = 0; f < k->n; f++)
			for (int g = 0; g < k->n && live[f]; g++)
				if (!live[g] && (reads(k->merge[f], k->va[g]) || reads(k->merge[f], k->vb[g])))
					live[g] = changed = 1;
	}
}

/* An auxiliary field that no output depends on is dropped: a search
 * that succeeds only once one stands beside the loop's fields (on the
 * sample pairs drawn again with it) but merges them without it would
 * carry it for nothing. */
static void drop_dead_aux(Ex *x, Cand *k)
{
	int live[EX_MAXF * EX_MAXF + EX_MAXF], n = 0;
	live_fields(x, k, live);
	for (int f = 0; f < k->n; f++) {
		if (!live[f] && aux_field(x, k, f))
			continue;
		memmove(k->name[n], k->name[f], sizeof k->name[n]);
		k->ty[n] = k->ty[f], k->va[n] = k->va[f], k->vb[n] = k->vb[f], k->vs[n] = k->vs[f];
		k->ident[n] = k->ident[f], k->lift[n] = k->lift[f], k->merge[n] = k->merge[f];
		n++;
	}
	k->n = n;
}

static void tidy_cand(Ex *x, Cand *k)
{
	Ir *ir = x->c->ir;
	Expr **memo = calloc((size_t)ir_nnodes(ir) + 1, sizeof *memo);
	if (!memo)
		abort();
	for (int f = 0; f < k->n; f++) {
		if (k->lift[f])
			k->lift[f] = tidy(ir, k->lift[f], memo);
		if (k->merge[f])
			k->merge[f] = tidy(ir, k->merge[f], memo);
	}
	for (int o = 0; o < k->nfin; o++)
		if (k->fin[o])
			k->fin[o] = tidy(ir, k->fin[o], memo);
	free(memo);
}

int ex_cand_verify(Ex *x, Cand *k, char *why, size_t n)
{
	tidy_cand(x, k);
	drop_dead_aux(x, k);
	guard_divisions(x, k);
	k->commutative = 0;
	char *yaml = NULL;
	Verdicts v = {0};
	int rc = -1;
	int repaired = 0, guarded = 0;
	for (;;) {
		free(yaml);
		Carrier *dc = load_cand(x, k, &yaml, why, n);
		if (!dc)
			break;
		v = (Verdicts){0};
		int agreed = agrees(x, dc, why, n);
		int ok = agreed && laws_hold(x, dc, &v, why, n) == 0;
		spec_carrier_free(dc);
		if (ok) {
			rc = 0;
			break;
		}
		if (!agreed)
			break;
		/* a max-rooted field's finite identity first (repair_identity),
		 * then the guard on empty sides */
		if (!repaired && !guarded && v.trials_ok && v.ident == PROOF_DISPROVED && repair_identity(x, k))
			repaired = 1;
		else if (!guarded && v.ident_fails && guard_empty(x, k))
			guarded = 1;
		else
			break;
	}
	if (rc == 0) {
		/* claim commutativity only where it is proved and the trials agree */
		k->commutative = 1;
		char *cy = NULL, tmp[300];
		Carrier *dc = load_cand(x, k, &cy, tmp, sizeof tmp);
		Verdicts cv = {0};
		if (dc && laws_hold(x, dc, &cv, tmp, sizeof tmp) == 0 && cv.comm_ok && cv.comm == PROOF_PROVED) {
			free(yaml);
			yaml = cy, cy = NULL;
			v.comm = PROOF_PROVED;
		} else {
			k->commutative = 0;
			v.comm = PROOF_UNKNOWN;
		}
		free(cy);
		spec_carrier_free(dc);
		ExploreResult *res = x->res;
		free(res->yaml);
		res->yaml = yaml, yaml = NULL;
		res->assoc = v.assoc, res->ident = v.ident, res->comm = v.comm;
		res->commutative = k->commutative;
	}
	free(yaml);
	return rc;
}
