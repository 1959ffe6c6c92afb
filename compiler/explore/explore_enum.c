/* explore_enum.c: strategies 4 and 5.
 *
 * Enumeration: merge expressions over the two states' fields, built
 * bottom up from the grammar  a.f b.f 0 1 | -e exp(e) log(e) |
 * e + e, e - e, e * e, e / e, max(e, e), min(e, e) |
 * where(u > v, e, e) with u, v fields  smallest first.  Every
 * term is evaluated on the sample pairs (states the loop itself merges);
 * terms with the same values are kept once (their fingerprint), and a term
 * whose values are a field's merged values is that field's candidate.  The
 * fields are searched together, then the merge is verified as a whole.
 *
 * Auxiliary fields: when no merge exists for the state as given, a field
 * from a small catalogue (a running sum of an input, a running sum with
 * the largest or smallest sum of a run from the loop's fixed end, a
 * count, a running max or min, a count with the element at the fixed
 * end) is added and strategies 3 and 4 run again. */
#include <stdlib.h>
#include <string.h>

#include "compiler/explore/explore_int.h"

enum { NP = 24, MAX_TERMS = 120000, HASH_BITS = 18, MAX_SIZE = 9, SOLS = 3 };

typedef struct {
	uint8_t op;
	uint8_t size;
	int l, r; /* operands (term indices), or the leaf's var / constant */
	int cu, cv; /* where: the compared leaves (u > v) */
} Term;

typedef struct {
	Ex *x;
	Term *t;
	double *v; /* NP values per term */
	int n, np;
	int *hash;
	int bysize[MAX_SIZE + 2]; /* first term of each size */
	int sol[EX_MAXF][SOLS], nsol[EX_MAXF];
	double deadline;
	unsigned tests; /* of full(): the clock is read at every CLOCK_EVERY-th */
	int late;       /* the deadline has passed (it stays passed) */
} En;

static const Op unary[] = {EXPR_NEG, EXPR_EXP, EXPR_LOG};
static const Op binary[] = {EXPR_ADD, EXPR_SUB, EXPR_MUL, EXPR_DIV, EXPR_MAX, EXPR_MIN};

static uint64_t fingerprint(const double *v, int n)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < n; i++) {
		int e;
		double m = frexp(v[i], &e);
		int64_t q = isfinite(v[i]) ? (int64_t)(m * (1ll << 30)) : isnan(v[i]) ? 7 : v[i] > 0 ? 11 : 13;
		h = (h ^ (uint64_t)q) * 1099511628211ull;
		h = (h ^ (uint64_t)(e + 4096)) * 1099511628211ull;
	}
	return h;
}

static int same(const double *a, const double *b, int n)
{
	for (int i = 0; i < n; i++)
		if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i])) ||
		      (isfinite(a[i]) && fabs(a[i] - b[i]) <= 1e-12 * fmax(1, fabs(a[i])))))
			return 0;
	return 1;
}

/* Record the values of the term being built at index e->n; 1 when kept. */
static int keep(En *e)
{
	double *v = e->v + (size_t)e->n * NP;
	for (int i = 0; i < e->np; i++)
		if (isnan(v[i]))
			return 0;
	uint64_t h = fingerprint(v, e->np);
	size_t mask = (1u << HASH_BITS) - 1;
	for (size_t s = h & mask;; s = (s + 1) & mask) {
		int k = e->hash[s];
		if (k < 0) {
			e->hash[s] = e->n;
			break;
		}
		if (same(e->v + (size_t)k * NP, v, e->np))
			return 0;
	}
	/* a solution for some field? */
	for (int f = 0; f < e->x->n; f++) {
		if (e->nsol[f] >= SOLS)
			continue;
		int ok = 1;
		for (int p = 0; ok && p < e->np; p++)
			ok = ex_close(v[p], e->x->pairs.want[p][f]);
		if (ok)
			e->sol[f][e->nsol[f]++] = e->n;
	}
	e->n++;
	return 1;
}

static int all_solved(En *e)
{
	for (int f = 0; f < e->x->n; f++)
		if (!e->nsol[f])
			return 0;
	return 1;
}

static void leaves(En *e)
{
	Ex *x = e->x;
	for (int side = 0; side < 2; side++)
		for (int f = 0; f < x->n; f++) {
			e->t[e->n] = (Term){EXPR_VAR, 1, x->f[f].var[side ? STATE_B : STATE_A], side * 100 + f, 0, 0};
			for (int p = 0; p < e->np; p++)
				e->v[(size_t)e->n * NP + p] = side ? x->pairs.b[p][f] : x->pairs.a[p][f];
			keep(e);
		}
	for (int c = 0; c < 2; c++) {
		e->t[e->n] = (Term){EXPR_CONST, 1, c, 0, 0, 0};
		for (int p = 0; p < e->np; p++)
			e->v[(size_t)e->n * NP + p] = c;
		keep(e);
	}
}

/* A thread's CPU time is a system call, and the enumeration's loops ask
 * before each term: reading it at every test was a fifth of a search's
 * time.  Read every CLOCK_EVERY tests, the budget is passed by at most
 * that many terms' work. */
enum { CLOCK_EVERY = 256 };

static int full(En *e)
{
	if (e->n >= MAX_TERMS || all_solved(e))
		return 1;
	if (!e->late && e->tests++ % CLOCK_EVERY == 0)
		e->late = ex_now() > e->deadline;
	return e->late;
}

static void combine(En *e, Op op, int l, int r, int size)
{
	double *v = e->v + (size_t)e->n * NP, *a = e->v + (size_t)l * NP, *b = r >= 0 ? e->v + (size_t)r * NP : NULL;
	for (int p = 0; p < e->np; p++)
		v[p] = ir_eval_op(op, TY_F64, 0, a[p], b ? b[p] : 0, 0);
	e->t[e->n] = (Term){(uint8_t)op, (uint8_t)size, l, r, 0, 0};
	keep(e);
}

/* where(u > v, l, r): u and v are leaves (fields), which is what selecting
 * merges (argmax-like ties, choosing a side) compare. */
static void combine_where(En *e, int u, int w, int l, int r, int size)
{
	double *v = e->v + (size_t)e->n * NP, *cu = e->v + (size_t)u * NP, *cw = e->v + (size_t)w * NP;
	double *a = e->v + (size_t)l * NP, *b = e->v + (size_t)r * NP;
	for (int p = 0; p < e->np; p++)
		v[p] = cu[p] > cw[p] ? a[p] : b[p];
	e->t[e->n] = (Term){EXPR_WHERE, (uint8_t)size, l, r, u, w};
	keep(e);
}

static void grow_where(En *e, int size)
{
	int nleaf = e->bysize[2];
	for (int ls = 1; ls <= size - 5 && !full(e); ls++) {
		int rs = size - 4 - ls;
		for (int u = 0; u < nleaf && !full(e); u++)
			for (int w = 0; w < nleaf && !full(e); w++) {
				if (u == w || e->t[u].op != EXPR_VAR || e->t[w].op != EXPR_VAR)
					continue;
				for (int i = e->bysize[ls]; i < e->bysize[ls + 1] && !full(e); i++)
					for (int k = e->bysize[rs]; k < e->bysize[rs + 1] && !full(e); k++)
						if (i != k)
							combine_where(e, u, w, i, k, size);
			}
	}
}

static void grow(En *e, int size)
{
	e->bysize[size] = e->n;
	for (size_t u = 0; u < sizeof unary / sizeof *unary && !full(e); u++)
		for (int i = e->bysize[size - 1]; i < e->bysize[size] && !full(e); i++)
			combine(e, unary[u], i, -1, size);
	for (int ls = 1; ls <= size - 2 && !full(e); ls++) {
		int rs = size - 1 - ls;
		for (size_t o = 0; o < sizeof binary / sizeof *binary && !full(e); o++) {
			int comm = ir_ops[binary[o]].flags & F_COMM;
			if (comm && ls > rs)
				continue;
			for (int i = e->bysize[ls]; i < e->bysize[ls + 1] && !full(e); i++)
				for (int k = comm && ls == rs ? i : e->bysize[rs]; k < e->bysize[rs + 1] && !full(e); k++)
					combine(e, binary[o], i, k, size);
		}
	}
	grow_where(e, size);
	e->bysize[size + 1] = e->n;
}

static Expr *to_expr(En *e, int i)
{
	Ex *x = e->x;
	Ir *ir = x->c->ir;
	Term *t = &e->t[i];
	if (t->op == EXPR_VAR) {
		/* a bool field among numbers is 0 or 1 */
		Expr *v = ir_ref(ir, t->l);
		return v->ty.kind != TY_BOOL ? v : ir_node(ir, EXPR_WHERE, ty_scalar(TY_F32), 0, v, ex_num(x, 1), ex_num(x, 0));
	}
	if (t->op == EXPR_CONST)
		return ex_num(x, t->l);
	if (t->op == EXPR_WHERE) {
		Expr *c = ir_bin(ir, EXPR_GT, to_expr(e, t->cu), to_expr(e, t->cv));
		Expr *a = to_expr(e, t->l);
		return ir_node(ir, EXPR_WHERE, a->ty, 0, c, a, to_expr(e, t->r));
	}
	Expr *a = to_expr(e, t->l);
	return t->r < 0 ? ir_un(ir, (Op)t->op, a) : ir_bin(ir, (Op)t->op, a, to_expr(e, t->r));
}

/* Try combinations of the fields' solutions, first ones first. */
static int joint(En *e, Cand *k, char *why, size_t n)
{
	Ex *x = e->x;
	int pick[EX_MAXF] = {0};
	for (int tries = 0; tries < 12; tries++) {
		ex_cand_from_view(x, k);
		for (int f = 0; f < x->n; f++) {
			Term *t = &e->t[e->sol[f][pick[f]]];
			k->merge[f] = x->f[f].ty.kind == TY_BOOL && t->op == EXPR_VAR ? ir_ref(x->c->ir, t->l)
				      : to_expr(e, e->sol[f][pick[f]]);
			if (k->merge[f]->ty.kind != TY_BOOL && x->f[f].ty.kind == TY_BOOL) /* 0 or 1 on the pairs */
				k->merge[f] = ir_bin(x->c->ir, EXPR_NE, k->merge[f], ex_num(x, 0));
		}
		if (ex_cand_fits_pairs(x, k, why, n) && !ex_cand_verify(x, k, why, n))
			return 0;
		int f = 0; /* next combination, odometer order */
		while (f < x->n && ++pick[f] >= e->nsol[f])
			pick[f++] = 0;
		if (f == x->n || ex_now() > e->deadline + 1)
			break;
	}
	return -1;
}

int ex_enumerate(Ex *x, Cand *k, double deadline, char *why, size_t n)
{
	En e = {.x = x, .deadline = deadline};
	e.np = x->pairs.n < NP ? x->pairs.n : NP;
	e.t = malloc(MAX_TERMS * sizeof *e.t);
	e.v = malloc((size_t)(MAX_TERMS + 1) * NP * sizeof *e.v);
	e.hash = malloc(sizeof(int) << HASH_BITS);
	if (!e.t || !e.v || !e.hash)
		abort();
	memset(e.hash, -1, sizeof(int) << HASH_BITS);
	e.bysize[1] = 0;
	leaves(&e);
	int size = 1;
	while (size < MAX_SIZE && !full(&e))
		grow(&e, ++size);
	int rc = 1;
	if (all_solved(&e)) {
		char w[400] = "";
		if (joint(&e, k, w, sizeof w) == 0) {
			snprintf(why, n, "merge expressions of up to %d nodes, %d distinct terms searched", size, e.n);
			rc = 0;
		} else {
			snprintf(why, n, "expressions fit each field but the merge fails: %s", w);
		}
	} else {
		Buf b = {0};
		buf_printf(&b, "no expression of up to %d nodes (%d distinct terms%s) gives", size, e.n,
			   ex_now() > deadline ? ", time budget spent" : "");
		for (int f = 0, first = 1; f < x->n; f++)
			if (!e.nsol[f]) {
				buf_printf(&b, "%s %s", first ? "" : ",", x->f[f].name);
				first = 0;
			}
		snprintf(why, n, "%s", b.s);
		buf_free(&b);
	}
	free(e.t);
	free(e.v);
	free(e.hash);
	return rc;
}

/* ---- auxiliary fields ---- */

/* AUX_RUN_MAX, AUX_RUN_MIN: the running sum of an input and the largest
 * (smallest) sum of a run at the loop's fixed end (its prefixes; for a
 * right loop, its suffixes), two fields added together: the maximum
 * segment sum (Kadane's loop) needs both to merge. */
/* AUX_END: a count and the element at the loop's fixed end (its first
 * element; for a right loop, its last), two fields added together: a
 * count of changes along the row reads where the other side starts. */
typedef enum { AUX_SUM, AUX_COUNT, AUX_MAX, AUX_MIN, AUX_RUN_MAX, AUX_RUN_MIN, AUX_END } AuxKind;

/* Catalogue entry i: (kind, input); -1 past the end. */
static int aux_entry(Ex *x, int i, AuxKind *kind, int *input)
{
	int ns = 0, in[8];
	for (int q = 0; q < x->c->nelem && ns < 8; q++)
		if (!x->c->elem[q].ty.len && ty_is_float(x->c->elem[q].ty))
			in[ns++] = q;
	static const AuxKind order[] = {AUX_SUM, AUX_RUN_MAX, AUX_RUN_MIN, AUX_COUNT, AUX_MAX, AUX_MIN, AUX_END};
	for (int o = 0; o < 7; o++) {
		int per = order[o] == AUX_COUNT ? 1 : ns;
		if (i < per) {
			*kind = order[o];
			*input = order[o] == AUX_COUNT ? -1 : in[i];
			return 0;
		}
		i -= per;
	}
	return -1;
}

/* A field named after base (and input q where the loop has several),
 * its vars made; its steps and lift are the caller's. */
static Field *aux_field_new(Ex *x, const char *base, int q)
{
	char want[SPEC_MAX_NAME];
	if (q >= 0 && x->c->nelem > 1)
		snprintf(want, sizeof want, "%s_%.40s", base, x->c->elem[q].name);
	else
		snprintf(want, sizeof want, "%s", base);
	Field *f = &x->f[x->n];
	memset(f, 0, sizeof *f);
	ex_fresh_name(x, want, NULL, 0, f->name);
	/* a field of an input holds its values in a float (f64 where the
	 * input or the loop's first field is one, else f32); a count is of
	 * the first field's type, an integer where that is one */
	Ty first = x->f[0].ty;
	if (first.kind == TY_BOOL)
		first = ty_scalar(TY_F32);
	if (q >= 0)
		f->ty = ty_scalar(x->c->elem[q].ty.kind == TY_F64 || first.kind == TY_F64 ? TY_F64 : TY_F32);
	else
		f->ty = first;
	f->aux = 1;
	for (int w = 0; w < 4; w++)
		f->var[w] = ex_var(x, f->name, w, x->n, f->ty);
	return f;
}

/* The lift of field f: its step from the identity, its own and that of
 * the field it reads (from, or NULL). */
void ex_aux_lift(Ex *x, Field *f, const Field *from)
{
	int vars[2] = {f->var[STATE_SELF], from ? from->var[STATE_SELF] : -1};
	Expr *at[2] = {ir_const(x->c->ir, f->ty, f->ident), from ? ir_const(x->c->ir, from->ty, from->ident) : NULL};
	f->lift = ex_subst_vars(x, x->right ? f->step_right : f->step, from ? 2 : 1, vars, at);
}

int ex_aux_add(Ex *x, int i, char *name, size_t n)
{
	AuxKind kind;
	int q;
	if (aux_entry(x, i, &kind, &q))
		return -1;
	int run = kind == AUX_RUN_MAX || kind == AUX_RUN_MIN, end = kind == AUX_END;
	if (x->n + run + end >= EX_MAXF)
		return -1;
	static const char *const base[] = {"sum", "count", "max", "min", "sum", "sum", "count"};
	Field *f = aux_field_new(x, base[kind], end ? -1 : q);
	Ir *ir = x->c->ir;
	Expr *self = ir_ref(ir, f->var[STATE_SELF]);
	Expr *in = q >= 0 && !end ? ir_ref(ir, x->c->elem[q].var) : ex_num(x, 1);
	Op op = kind == AUX_MAX ? EXPR_MAX : kind == AUX_MIN ? EXPR_MIN : EXPR_ADD;
	f->ident = kind == AUX_MAX ? -INFINITY : kind == AUX_MIN ? INFINITY : 0;
	if (x->c->step)
		f->step = ir_bin(ir, op, self, in);
	if (x->c->step_right)
		f->step_right = ir_bin(ir, op, in, self);
	ex_aux_lift(x, f, NULL);
	x->n++;
	snprintf(name, n, "%s", f->name);
	if (end || run) {
		/* the second field beside f, which its step reads (before the step) */
		Field *g = aux_field_new(x, end ? (x->right ? "last" : "first") : kind == AUX_RUN_MAX ? "top_run" : "low_run", q);
		Expr *me = ir_ref(ir, g->var[STATE_SELF]);
		Expr *v = ir_ref(ir, x->c->elem[q].var), *st, *st_right;
		if (end) {
			/* the element taken where the count before the step is 0 */
			g->ident = 0;
			st = st_right = ir_node(ir, EXPR_WHERE, g->ty, 0, ir_bin(ir, EXPR_EQ, self, ex_num(x, 0)), v, me);
		} else {
			/* one more element makes one more run from the fixed end, the
			 * whole list: the old sum and the element */
			Op pick = kind == AUX_RUN_MAX ? EXPR_MAX : EXPR_MIN;
			g->ident = kind == AUX_RUN_MAX ? -INFINITY : INFINITY;
			st = ir_bin(ir, pick, me, ir_bin(ir, EXPR_ADD, self, v));
			st_right = ir_bin(ir, pick, me, ir_bin(ir, EXPR_ADD, v, self));
		}
		if (x->c->step)
			g->step = st;
		if (x->c->step_right)
			g->step_right = st_right;
		ex_aux_lift(x, g, f);
		x->n++;
		size_t l = strlen(name);
		snprintf(name + l, n - l, " and %s", g->name);
	}
	ex_view_changed(x);
	return 0;
}

void ex_aux_drop(Ex *x)
{
	x->n = x->norig;
	ex_view_changed(x);
}
