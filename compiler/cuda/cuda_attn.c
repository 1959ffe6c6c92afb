/* cuda_attn.c: the attention template's contract and hooks.
 *
 * templates/attention.cuh implements one carrier, the online softmax with a
 * vector output (m, l, o): merge m = max(a.m, b.m), l = a.l e^(a.m - m) +
 * b.l e^(b.m - m), o = a.o e^(a.m - m) + b.o e^(b.m - m), identity (-inf,
 * 0, 0), lift (s, 1, v), where the score s is any expression of dot(q, k)
 * (q a row input, k a column input), i, j, params and scalar row inputs.
 * A carrier is matched to it by roles (the field merged by max, the scalar
 * sum, the vector), then its merge is compared with the contract's under
 * that mapping: structurally (the hash-consed IR nodes are the same), or
 * else by the prover (prove_equal: over every pair of nonempty states the
 * carrier's own fold reaches, which is every state the template's merges
 * make, by induction from the lift).  A disproof refuses the carrier; where
 * the prover can decide neither, random states in float64 are the evidence,
 * and the explain says it is no proof.
 * The score, the mask and the finalize are lowered from the IR as
 * elementwise code on the score tile and on the output fragments.
 *
 * The template also takes a second contract, the weighted sum (ATTN_SUM):
 * a vector field o and at most two scalar fields, every one merged by a
 * plain sum a.x + b.x, identity 0, lift o = w v with the weight w any
 * expression of dot(q, k), i, j, params and scalar row inputs (sigmoid
 * attention's sigmoid(s + bias)), each scalar field's lift an expression
 * of the same and of w (l = w for a sum of the weights, 1 for a count of
 * the keys).  Elementwise weights need no row maximum: P = w, and P V
 * runs on the tensor cores without a rescale.  Its merge is compared with
 * plain sums as the (m, l, o) merge is with that contract's: structurally,
 * else by the prover, else by random states, said to be no proof. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/buf.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cuda/cuda_int.h"
#include "compiler/check/eval.h"
#include "compiler/prove/prove.h"

static const double LOG2E = 1.4426950408889634;

static int is_ref(const Expr *e, int var) { return e->op == EXPR_VAR && e->k == var; }

static int sym_var(Ir *ir, const char *name, int slot)
{
	for (int v = 0; v < ir_nvars(ir); v++)
		if (ir_var(ir, v)->kind == VAR_SYM && !strcmp(ir_var(ir, v)->name, name))
			return v;
	return ir_add_var(ir, name, VAR_SYM, 0, slot, ty_scalar(TY_F32), TY_F32);
}

/* ---- rewriting ---- */

typedef struct {
	Ir *ir;
	Expr *from, *to; /* replace node `from` by `to` */
	int vec_var;     /* scalarize: this vector var becomes `to` */
	int fail;
	Expr **memo;
} Rw;

static Expr *rw(Rw *r, Expr *e)
{
	if (r->memo[e->id])
		return r->memo[e->id];
	Expr *out = e;
	if (e == r->from)
		out = r->to;
	else if (e->op == EXPR_VAR && e->k == r->vec_var)
		out = r->to;
	else if (e->op == EXPR_CONST && e->ty.len)
		out = ir_const(r->ir, ty_scalar((TyKind)e->ty.kind), e->num);
	else if (e->op == EXPR_VAR) {
		if (e->ty.len && r->vec_var >= 0)
			r->fail = 1;
	} else if (e->nargs) {
		if (r->vec_var >= 0 && (e->op == EXPR_DOT || e->op == EXPR_INDEX || e->op == EXPR_TOPK ||
					e->op == EXPR_TOPK_IDX || (ir_ops[e->op].flags & F_REDUCE)))
			r->fail = 1;
		Expr *a[4] = {NULL, NULL, NULL, NULL};
		for (int k = 0; k < e->nargs; k++)
			a[k] = rw(r, e->a[k]);
		Ty ty = e->ty;
		if (r->vec_var >= 0 && ty.len)
			ty = ty_scalar((TyKind)ty.kind);
		out = ir_node_n(r->ir, (Op)e->op, ty, e->k, a);
	}
	r->memo[e->id] = out;
	return out;
}

/* e with node `from` replaced by `to`, or with vector var vec_var replaced
 * by the scalar `to` (every vector node made scalar); NULL when e does
 * something to the vector other than elementwise arithmetic. */
static Expr *rewrite(Ir *ir, Expr *e, Expr *from, int vec_var, Expr *to)
{
	Rw r = {ir, from, to, vec_var, 0, calloc(ir_nnodes(ir) + 1, sizeof(Expr *))};
	if (!r.memo)
		abort();
	Expr *out = rw(&r, e);
	free(r.memo);
	return r.fail ? NULL : out;
}

/* ---- matching ---- */

typedef struct {
	Carrier *c;
	Expr *dot;
	int bad_var; /* a variable the elementwise code cannot reach */
} Scan;

static int find_dot(void *ctx, Expr *e)
{
	Scan *s = ctx;
	if (e->op != EXPR_DOT)
		return 0;
	if (s->dot && s->dot != e)
		return 1; /* two different dot products */
	s->dot = e;
	return 0;
}

/* Variables the score and the mask may use: i, j, len, params, scalar row
 * inputs, the template's own symbols. */
static int outside(void *ctx, Expr *e)
{
	Scan *s = ctx;
	if (e->op != EXPR_VAR)
		return 0;
	const Var *v = ir_var(s->c->ir, e->k);
	int ok = v->kind == VAR_IDX || v->kind == VAR_PARAM || v->kind == VAR_SYM || (v->kind == VAR_ROW && !v->ty.len);
	return !ok;
}

static int state_field(const Carrier *c, int which, const Expr *e)
{
	for (int f = 0; f < c->nstate; f++)
		if (is_ref(e, c->svar[which][f]))
			return f;
	return -1;
}

/* The roles: fm merged by max, fo the vector, fl the other scalar. */
static int roles(Carrier *c, CudaAttn *at, char *why, size_t n)
{
	at->fm = at->fl = at->fo = -1;
	for (int f = 0; f < c->nstate; f++) {
		Expr *e = c->merge[f];
		if (c->state[f].ty.len)
			at->fo = f;
		else if (e->op == EXPR_MAX && ((state_field(c, STATE_A, e->a[0]) == f && state_field(c, STATE_B, e->a[1]) == f) ||
					       (state_field(c, STATE_B, e->a[0]) == f && state_field(c, STATE_A, e->a[1]) == f)))
			at->fm = f;
		else
			at->fl = f;
	}
	if (at->fm < 0 || at->fl < 0 || at->fo < 0 || at->fm == at->fl) {
		snprintf(why, n, "no (max, sum, vector) roles in the state (a field merged by max(a.x, b.x), a scalar "
				 "sum, a vector output)");
		return -1;
	}
	for (int f = 0; f < 3; f++)
		if (c->state[f].ty.kind != TY_F32) {
			snprintf(why, n, "state field '%s' is not f32", c->state[f].name);
			return -1;
		}
	const Expr *im = c->identity[at->fm], *il = c->identity[at->fl], *io = c->identity[at->fo];
	if (im->op != EXPR_CONST || im->num != -INFINITY || il->op != EXPR_CONST || il->num != 0 ||
	    io->op != EXPR_CONST || io->num != 0) {
		snprintf(why, n, "the identity is not (-inf, 0, 0) for (%s, %s, %s)", c->state[at->fm].name,
			 c->state[at->fl].name, c->state[at->fo].name);
		return -1;
	}
	return 0;
}

static int var_slot(const Carrier *c, const Expr *e, VarKind kind)
{
	if (e->op != EXPR_VAR)
		return -1;
	const Var *v = ir_var(c->ir, e->k);
	return v->kind == kind ? v->slot : -1;
}

/* q and k (slots) of the dot product. */
static int qk_of(Carrier *c, CudaAttn *at, const Expr *dot, char *why, size_t n)
{
	Expr *x = dot->a[0], *y = dot->a[1];
	at->q = var_slot(c, x, VAR_ROW), at->k = var_slot(c, y, VAR_COL);
	if (at->q < 0 || at->k < 0)
		at->q = var_slot(c, y, VAR_ROW), at->k = var_slot(c, x, VAR_COL);
	if (at->q < 0 || at->k < 0) {
		snprintf(why, n, "the dot product is not dot(q, k) of a row input and a column input");
		return -1;
	}
	return 0;
}

/* lift (s(dot(q, k)), 1, v); the score and the mask elementwise. */
static int lifts(Carrier *c, CudaAttn *at, char *why, size_t n)
{
	Expr *lo = c->lift[at->fo], *ll = c->lift[at->fl], *lm = c->lift[at->fm];
	at->v = var_slot(c, lo, VAR_COL);
	if (at->v < 0 || ll->op != EXPR_CONST || ll->num != 1) {
		snprintf(why, n, "the lift is not (score, 1, v) with v a column input");
		return -1;
	}
	Scan s = {c, NULL, 0};
	if (ir_contains(lm, find_dot, &s) || !s.dot) {
		snprintf(why, n, "the score '%s' is not an expression of one dot(q, k)", c->state[at->fm].name);
		return -1;
	}
	if (qk_of(c, at, s.dot, why, n))
		return -1;
	Expr *sym = ir_ref(c->ir, sym_var(c->ir, "$dot", 0));
	at->score = rewrite(c->ir, lm, s.dot, -1, sym);
	if (ir_contains(at->score, outside, &s)) {
		snprintf(why, n, "the score uses inputs other than dot(q, k), params, i, j and scalar row inputs");
		return -1;
	}
	if (c->mask && ir_contains(c->mask, outside, &s)) {
		snprintf(why, n, "the mask uses inputs other than params, i, j, len and scalar row inputs");
		return -1;
	}
	return 0;
}

static int shapes(Carrier *c, CudaAttn *at, char *why, size_t n)
{
	const Decl *q = &c->row[at->q], *k = &c->col[at->k], *v = &c->col[at->v];
	int st = (int)q->storage;
	if ((st != TY_F16 && st != TY_BF16 && st != TY_F8E4M3) || (int)k->storage != st || (int)v->storage != st) {
		snprintf(why, n, "q, k and v are not all f16, all bf16 or all f8e4m3 (the tensor cores' inputs)");
		return -1;
	}
	at->bf16 = st == TY_BF16;
	at->f8 = st == TY_F8E4M3;
	at->d = q->ty.len, at->dv = v->ty.len;
	if (at->d % 16 || at->dv % 16 || at->d > 256 || at->dv > 256 || c->state[at->fo].ty.len != at->dv) {
		snprintf(why, n, "head dims %d and %d (the template takes multiples of 16 up to 256)", at->d, at->dv);
		return -1;
	}
	return 0;
}

/* The contract's merge under the mapping, in c's IR. */
static void contract_merge(Carrier *c, const CudaAttn *at, Expr **L, Expr **O)
{
	Ir *ir = c->ir;
	Expr *am = ir_ref(ir, c->svar[STATE_A][at->fm]), *bm = ir_ref(ir, c->svar[STATE_B][at->fm]);
	Expr *m = ir_bin(ir, EXPR_MAX, am, bm);
	Expr *ea = ir_un(ir, EXPR_EXP, ir_bin(ir, EXPR_SUB, am, m)), *eb = ir_un(ir, EXPR_EXP, ir_bin(ir, EXPR_SUB, bm, m));
	Expr *al = ir_ref(ir, c->svar[STATE_A][at->fl]), *bl = ir_ref(ir, c->svar[STATE_B][at->fl]);
	Expr *ao = ir_ref(ir, c->svar[STATE_A][at->fo]), *bo = ir_ref(ir, c->svar[STATE_B][at->fo]);
	*L = ir_bin(ir, EXPR_ADD, ir_bin(ir, EXPR_MUL, al, ea), ir_bin(ir, EXPR_MUL, bl, eb));
	*O = ir_bin(ir, EXPR_ADD, ir_bin(ir, EXPR_MUL, ao, ea), ir_bin(ir, EXPR_MUL, bo, eb));
}

/* A state a fold may reach: the identity; m of a few units, of hundreds,
 * or tied with the other state's (1.5 often); l from 1e-6 to 1e8 over
 * every decade (a row of a million keys sums to that much, a rescaled one
 * to little), so that a merge that differs only past a threshold of l
 * (where(a.l > 1000, ...)) meets it; o of l's magnitude. */
enum { CONTRACT_TRIALS = 2000 };

static double draw_state(uint64_t *rng, double *s, const CudaAttn *at, int dv)
{
	int empty = rng_int(rng, 0, 7) == 0, k = rng_int(rng, 0, 5);
	double m = empty ? -INFINITY : k == 0 ? 1.5 : k == 1 ? 300 * rng_normal(rng) : 4 * rng_normal(rng);
	double l = pow(10, -6 + 14 * rng_unit(rng));
	s[0] = m, s[1] = empty ? 0 : l;
	for (int u = 0; u < dv; u++)
		s[2 + u] = empty ? 0 : l * rng_normal(rng);
	(void)at;
	return m;
}

/* Both merges on random states in float64; 0 when they agree everywhere. */
static int trials(Carrier *c, const CudaAttn *at, Expr *L, Expr *O, int ntrials, char *why, size_t n)
{
	Expr *roots[4] = {c->merge[at->fl], c->merge[at->fo], L, O};
	Prog *p = prog_new(c->ir, roots, 4);
	int dv = at->dv, rc = 0;
	double *st = calloc(2 * (dv + 2), sizeof *st);
	if (!st)
		abort();
	uint64_t rng = 0x5eed;
	for (int t = 0; t < ntrials && !rc; t++) {
		draw_state(&rng, st, at, dv);
		draw_state(&rng, st + dv + 2, at, dv);
		for (int i = 0; i < prog_nleaves(p); i++) {
			Expr *e = prog_leaf(p, i);
			double *err, *val = prog_leaf_val(p, i, &err);
			const Var *v = e->op == EXPR_VAR ? ir_var(c->ir, e->k) : NULL;
			int w = e->ty.len ? e->ty.len : 1;
			if (v && v->kind == VAR_STATE && (v->which == STATE_A || v->which == STATE_B)) {
				const double *s = st + (v->which == STATE_B ? dv + 2 : 0);
				const double *src = v->slot == at->fm ? s : v->slot == at->fl ? s + 1 : s + 2;
				memcpy(val, src, w * sizeof *val);
			} else
				for (int u = 0; u < w; u++)
					val[u] = 0.5 + rng_unit(&rng); /* params (positive, as scales are) */
			memset(err, 0, w * sizeof *err);
		}
		prog_run(p, MODE_F64);
		for (int r = 0; r < 2 && !rc; r++) {
			const double *x = prog_root(p, r, NULL), *y = prog_root(p, r + 2, NULL);
			for (int u = 0; u < (r ? dv : 1) && !rc; u++) {
				double a = x[u], b = y[u];
				int same = (isnan(a) && isnan(b)) || a == b ||
					   fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
				if (!same) {
					snprintf(why, n, "the merge of '%s' differs from the contract's (%.17g against %.17g "
							 "on a random state)",
						 c->state[r ? at->fo : at->fl].name, a, b);
					rc = -1;
				}
			}
		}
	}
	free(st);
	prog_free(p);
	return rc;
}

/* The merge against the contract's by the prover: both fields at once,
 * then field by field where that is no proof (so that a disproof names
 * its field).  Where the prover decides neither way, the random states
 * decide, and the evidence says it is no proof. */
static int merge_proof(Carrier *c, CudaAttn *at, Expr *L, Expr *O, const char *map, char *why, size_t n)
{
	Expr *xs[2] = {c->merge[at->fl], c->merge[at->fo]}, *ys[2] = {L, O};
	const char *names[2] = {c->state[at->fl].name, c->state[at->fo].name};
	char how[400], open[480] = "";
	if (prove_equal(c, xs, ys, names, 2, "the merge", "the contract's", how, sizeof how) == PROOF_PROVED) {
		snprintf(at->evidence, sizeof at->evidence, "merge proved equal to the contract's (%s; %s)", map, how);
		return 0;
	}
	for (int i = 0; i < 2; i++) {
		ProofStatus st = prove_equal(c, &xs[i], &ys[i], &names[i], 1, "the merge", "the contract's", how, sizeof how);
		if (st == PROOF_DISPROVED) {
			snprintf(why, n, "the merge of '%s' differs from the contract's (disproved: %s)", names[i], how);
			return -1;
		}
		if (st == PROOF_UNKNOWN && !open[0])
			snprintf(open, sizeof open, "the prover left '%s' unknown: %s", names[i], how);
	}
	char tw[256];
	if (trials(c, at, L, O, CONTRACT_TRIALS, tw, sizeof tw)) {
		snprintf(why, n, "%s (%s)", tw, open);
		return -1;
	}
	snprintf(at->evidence, sizeof at->evidence,
		 "merge equal to the contract's on %d random states in float64 (%s; numerical evidence, not a proof: %s)",
		 CONTRACT_TRIALS, map, open);
	return 0;
}

/* ---- the weighted-sum contract ---- */

/* The roles: fo the vector, fl the first scalar field, fm the second. */
static int sum_roles(Carrier *c, CudaAttn *at, char *why, size_t n)
{
	int nv = 0, ns = 0;
	at->fm = at->fl = at->fo = -1;
	for (int f = 0; f < c->nstate; f++) {
		if (c->state[f].ty.len)
			at->fo = f, nv++;
		else if (ns++)
			at->fm = f;
		else
			at->fl = f;
	}
	if (nv != 1 || ns > 2) {
		snprintf(why, n, "no (max, sum, vector) roles in the state, nor one vector field and at most two scalar "
				 "sums (this one: %d vector, %d scalar fields)", nv, ns);
		return -1;
	}
	for (int f = 0; f < c->nstate; f++)
		if (c->state[f].ty.kind != TY_F32) {
			snprintf(why, n, "state field '%s' is not f32", c->state[f].name);
			return -1;
		}
	return 0;
}

/* After the merge (whose reason says more when it is not a sum). */
static int sum_identity(Carrier *c, char *why, size_t n)
{
	for (int f = 0; f < c->nstate; f++) {
		const Expr *id = c->identity[f];
		if (id->op != EXPR_CONST || id->num != 0) {
			snprintf(why, n, "a weighted sum's identity is 0, and that of '%s' is not", c->state[f].name);
			return -1;
		}
	}
	return 0;
}

/* o's lift w v (or v w, v / x: w = 1 / x, or v alone: w = 1), w scalar
 * and elementwise in dot(q, k); the scalar fields' lifts elementwise in
 * the same dot and w. */
static int sum_lifts(Carrier *c, CudaAttn *at, char *why, size_t n)
{
	Ir *ir = c->ir;
	Expr *lo = c->lift[at->fo], *w = NULL;
	at->v = var_slot(c, lo, VAR_COL);
	if (at->v >= 0)
		w = ir_const(ir, ty_scalar(TY_F32), 1);
	else if (lo->op == EXPR_MUL) {
		for (int k = 0; k < 2 && !w; k++)
			if ((at->v = var_slot(c, lo->a[k], VAR_COL)) >= 0 && !lo->a[1 - k]->ty.len)
				w = lo->a[1 - k];
	} else if (lo->op == EXPR_DIV && (at->v = var_slot(c, lo->a[0], VAR_COL)) >= 0 && !lo->a[1]->ty.len)
		w = ir_bin(ir, EXPR_DIV, ir_const(ir, lo->a[1]->ty, 1), lo->a[1]);
	if (!w) {
		snprintf(why, n, "the lift of '%s' is not w * v with w a scalar weight and v a column input",
			 c->state[at->fo].name);
		return -1;
	}
	Scan s = {c, NULL, 0};
	if (ir_contains(w, find_dot, &s) || !s.dot) {
		snprintf(why, n, "the weight of '%s' is not an expression of one dot(q, k)", c->state[at->fo].name);
		return -1;
	}
	if (qk_of(c, at, s.dot, why, n))
		return -1;
	Expr *dot = ir_ref(ir, sym_var(ir, "$dot", 0)), *wsym = ir_ref(ir, sym_var(ir, "$w", 2));
	at->weight = rewrite(ir, w, s.dot, -1, dot);
	if (ir_contains(at->weight, outside, &s)) {
		snprintf(why, n, "the weight uses inputs other than dot(q, k), params, i, j and scalar row inputs");
		return -1;
	}
	int fs[2] = {at->fm, at->fl};
	Expr **ws[2] = {&at->wm, &at->wl};
	for (int k = 0; k < 2; k++) {
		if (fs[k] < 0)
			continue;
		Expr *lf = c->lift[fs[k]];
		if (ir_contains(lf, find_dot, &s)) {
			snprintf(why, n, "the lift of '%s' takes another dot product than the weight's", c->state[fs[k]].name);
			return -1;
		}
		*ws[k] = rewrite(ir, rewrite(ir, lf, s.dot, -1, dot), at->weight, -1, wsym);
		if (ir_contains(*ws[k], outside, &s)) {
			snprintf(why, n, "the lift of '%s' uses inputs other than dot(q, k), params, i, j and scalar row "
					 "inputs", c->state[fs[k]].name);
			return -1;
		}
	}
	if (c->mask && ir_contains(c->mask, outside, &s)) {
		snprintf(why, n, "the mask uses inputs other than params, i, j, len and scalar row inputs");
		return -1;
	}
	return 0;
}

static Expr *plain_sum(Carrier *c, int f, int swap)
{
	Expr *a = ir_ref(c->ir, c->svar[STATE_A][f]), *b = ir_ref(c->ir, c->svar[STATE_B][f]);
	return ir_bin(c->ir, EXPR_ADD, swap ? b : a, swap ? a : b);
}

/* Field values a fold may reach, in float64: empty (0), or of either sign
 * over every decade from 1e-6 to 1e8 (so that a merge that leaves the sum
 * past a threshold meets it). */
static void draw_sum_state(uint64_t *rng, double *s, int w)
{
	int empty = rng_int(rng, 0, 7) == 0;
	double scale = pow(10, -6 + 14 * rng_unit(rng));
	for (int u = 0; u < w; u++)
		s[u] = empty ? 0 : scale * rng_normal(rng);
}

/* The merges of fields fs (nf of them) against plain sums on random
 * states in float64; 0 when they agree everywhere. */
static int sum_trials(Carrier *c, const int *fs, int nf, int ntrials, char *why, size_t n)
{
	Expr *roots[6];
	for (int k = 0; k < nf; k++)
		roots[k] = c->merge[fs[k]], roots[nf + k] = plain_sum(c, fs[k], 0);
	Prog *p = prog_new(c->ir, roots, 2 * nf);
	int sw = 0, *off = calloc(c->nstate, sizeof *off), rc = 0;
	if (!off)
		abort();
	for (int f = 0; f < c->nstate; f++)
		off[f] = sw, sw += c->state[f].ty.len ? c->state[f].ty.len : 1;
	double *st = calloc(2 * sw, sizeof *st);
	if (!st)
		abort();
	uint64_t rng = 0x5eed;
	for (int t = 0; t < ntrials && !rc; t++) {
		for (int f = 0; f < c->nstate; f++)
			for (int x = 0; x < 2; x++)
				draw_sum_state(&rng, st + x * sw + off[f], c->state[f].ty.len ? c->state[f].ty.len : 1);
		for (int i = 0; i < prog_nleaves(p); i++) {
			Expr *e = prog_leaf(p, i);
			double *err, *val = prog_leaf_val(p, i, &err);
			const Var *v = e->op == EXPR_VAR ? ir_var(c->ir, e->k) : NULL;
			int w = e->ty.len ? e->ty.len : 1;
			if (v && v->kind == VAR_STATE && (v->which == STATE_A || v->which == STATE_B))
				memcpy(val, st + (v->which == STATE_B ? sw : 0) + off[v->slot], w * sizeof *val);
			else
				for (int u = 0; u < w; u++)
					val[u] = 0.5 + rng_unit(&rng); /* params (positive, as scales are) */
			memset(err, 0, w * sizeof *err);
		}
		prog_run(p, MODE_F64);
		for (int r = 0; r < nf && !rc; r++) {
			const double *x = prog_root(p, r, NULL), *y = prog_root(p, nf + r, NULL);
			int w = c->state[fs[r]].ty.len ? c->state[fs[r]].ty.len : 1;
			for (int u = 0; u < w && !rc; u++) {
				double a = x[u], b = y[u];
				if (!((isnan(a) && isnan(b)) || a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)))) {
					snprintf(why, n, "the merge of '%s' is not a plain sum (%.17g against %.17g on a random "
							 "state)", c->state[fs[r]].name, a, b);
					rc = -1;
				}
			}
		}
	}
	free(st);
	free(off);
	prog_free(p);
	return rc;
}

/* Every field merged by a plain sum: structurally, or by the prover (all
 * fields at once, then field by field, so that a disproof names its
 * field), or, where the prover decides neither way, on random states. */
static int sum_merge(Carrier *c, CudaAttn *at, const char *map, char *why, size_t n)
{
	int all[3] = {at->fo, at->fl, at->fm}, fs[3], nf = 0;
	Expr *xs[3], *ys[3];
	const char *names[3];
	for (int k = 0; k < 3; k++) {
		int f = all[k];
		if (f < 0 || c->merge[f] == plain_sum(c, f, 0) || c->merge[f] == plain_sum(c, f, 1))
			continue;
		fs[nf] = f, xs[nf] = c->merge[f], ys[nf] = plain_sum(c, f, 0), names[nf] = c->state[f].name, nf++;
	}
	if (!nf) {
		snprintf(at->evidence, sizeof at->evidence, "merge structurally plain sums (%s)", map);
		return 0;
	}
	char how[400], open[480] = "";
	if (prove_equal(c, xs, ys, names, nf, "the merge", "a plain sum", how, sizeof how) == PROOF_PROVED) {
		snprintf(at->evidence, sizeof at->evidence, "merge proved equal to plain sums (%s; %s)", map, how);
		return 0;
	}
	for (int i = 0; i < nf; i++) {
		ProofStatus st = prove_equal(c, &xs[i], &ys[i], &names[i], 1, "the merge", "a plain sum", how, sizeof how);
		if (st == PROOF_DISPROVED) {
			snprintf(why, n, "the merge of '%s' is not a plain sum (disproved: %s)", names[i], how);
			return -1;
		}
		if (st == PROOF_UNKNOWN && !open[0])
			snprintf(open, sizeof open, "the prover left '%s' unknown: %s", names[i], how);
	}
	char tw[256];
	if (sum_trials(c, fs, nf, CONTRACT_TRIALS, tw, sizeof tw)) {
		snprintf(why, n, "%s (%s)", tw, open);
		return -1;
	}
	snprintf(at->evidence, sizeof at->evidence,
		 "merge equal to plain sums on %d random states in float64 (%s; numerical evidence, not a proof: %s)",
		 CONTRACT_TRIALS, map, open);
	return 0;
}

/* The weighted-sum contract's roles, lifts, shapes and merge. */
static int sum_match(Carrier *c, CudaAttn *at, char *why, size_t n)
{
	at->sum = 1;
	if (sum_roles(c, at, why, n) || sum_lifts(c, at, why, n) || shapes(c, at, why, n))
		return -1;
	char map[160];
	int k = snprintf(map, sizeof map, "weighted sum: o -> %s", c->state[at->fo].name);
	if (at->fl >= 0)
		k += snprintf(map + k, sizeof map - k, ", sums %s", c->state[at->fl].name);
	if (at->fm >= 0)
		snprintf(map + k, sizeof map - k, ", %s", c->state[at->fm].name);
	return sum_merge(c, at, map, why, n) || sum_identity(c, why, n) ? -1 : 0;
}

/* The (m, l, o) contract's roles, lifts, shapes and merge. */
static int ml_match(Carrier *c, CudaAttn *at, char *why, size_t n)
{
	if (roles(c, at, why, n) || lifts(c, at, why, n) || shapes(c, at, why, n))
		return -1;
	Expr *L, *O;
	contract_merge(c, at, &L, &O);
	char map[160];
	snprintf(map, sizeof map, "m -> %s, l -> %s, o -> %s", c->state[at->fm].name, c->state[at->fl].name,
		 c->state[at->fo].name);
	if (c->merge[at->fl] == L && c->merge[at->fo] == O)
		snprintf(at->evidence, sizeof at->evidence, "merge structurally equal to the contract's (%s)", map);
	else if (merge_proof(c, at, L, O, map, why, n))
		return -1;
	return 0;
}

/* A field merged by max(a.x, b.x): the carrier is measured against the
 * (m, l, o) contract, else against the weighted sum. */
static int has_max_field(const Carrier *c)
{
	for (int f = 0; f < c->nstate; f++) {
		const Expr *e = c->merge[f];
		if (!c->state[f].ty.len && e->op == EXPR_MAX &&
		    ((state_field(c, STATE_A, e->a[0]) == f && state_field(c, STATE_B, e->a[1]) == f) ||
		     (state_field(c, STATE_B, e->a[0]) == f && state_field(c, STATE_A, e->a[1]) == f)))
			return 1;
	}
	return 0;
}

/* A division or a function of the math library. */
static int costly_op(void *ctx, Expr *e)
{
	(void)ctx;
	return e->op == EXPR_DIV || (ir_ops[e->op].flags & F_MATH);
}

/* Whether attn_tile's interval arithmetic over e multiplies intervals
 * (iv_node: a vector node is unknown, not descended into). */
static int iv_muls(const Expr *e)
{
	if (!e || e->ty.len)
		return 0;
	if (e->op == EXPR_MUL)
		return 1;
	for (int k = 0; k < e->nargs; k++)
		if (iv_muls(e->a[k]))
			return 1;
	return 0;
}

int cuda_attn_match(Carrier *c, CudaAttn *at, char *why, size_t n)
{
	memset(at, 0, sizeof *at);
	if (c->nstate < 1 || c->nstate > 3 || c->nelem || c->nmap || c->tpl == FAM_SCAN || !c->merge) {
		/* what the carrier has against what the contracts need */
		snprintf(why, n, "not an attention carrier over rows and columns, which has 3 state fields (m, l, o) or "
				 "1 to 3 (a weighted sum), no element inputs and no map outputs (this one: %d, %d, %d%s)",
			 c->nstate, c->nelem, c->nmap, c->tpl == FAM_SCAN ? ", a scan" : "");
		return -1;
	}
	int max = has_max_field(c);
	if (max && c->nstate != 3) {
		snprintf(why, n, "a field merged by max, so not a weighted sum, and %d state fields, not the 3 of (m, l, o)",
			 c->nstate);
		return -1;
	}
	if (max ? ml_match(c, at, why, n) : sum_match(c, at, why, n))
		return -1;
	/* finalize: scalar outputs of the scalar fields; vector outputs elementwise in o */
	Expr *oc = ir_ref(c->ir, sym_var(c->ir, "$o", 1));
	int ovar = c->svar[STATE_SELF][at->fo];
	for (int k = 0; k < c->nfinal; k++) {
		Expr *e = c->finalize[k].e;
		if (e->ty.len && e->ty.len != at->dv) {
			snprintf(why, n, "finalize output '%s' is not of the value's width", c->finalize[k].name);
			return -1;
		}
		Expr *s = rewrite(c->ir, e, NULL, ovar, oc);
		if (!s || (!e->ty.len && s != e)) {
			snprintf(why, n, "finalize output '%s' is not elementwise in '%s'", c->finalize[k].name,
				 c->state[at->fo].name);
			return -1;
		}
		at->fin[k] = s;
	}
	at->tile_mul = iv_muls(c->mask);
	at->mask_calls = c->mask && ir_contains(c->mask, costly_op, NULL);
	at->heavy = !cuda_attn_linear(c, at) || at->mask_calls;
	return 0;
}

/* ---- hooks ---- */

static const char *mem_type(int kind)
{
	return kind == TY_BOOL ? "unsigned char" : cuda_ctype(kind);
}

/* The end of a finalize hook: `s` counted as used (a weighted sum's by
 * its fields, which NVRTC takes as a use where `(void)s` is not). */
static void end_fin(Buf *b, const CudaAttn *at)
{
	if (!at->sum)
		buf_puts(b, "\t(void)s;\n");
	if (at->sum && at->fm >= 0)
		buf_printf(b, "\t(void)s.f%d;\n", at->fm);
	if (at->sum && at->fl >= 0)
		buf_printf(b, "\t(void)s.f%d;\n", at->fl);
	buf_puts(b, "}\n");
}

/* The scalar fields of a state (m, l) as a local `s`, for the finalize;
 * a weighted sum's in the same slots, where it has them (none: no `s`). */
static void ml_state(Buf *b, const CudaAttn *at)
{
	if (!at->sum) {
		buf_printf(b, "\tstruct { float f%d, f%d; } s;\n\ts.f%d = m;\n\ts.f%d = l;\n", at->fm, at->fl, at->fm, at->fl);
		return;
	}
	if (at->fm < 0 && at->fl < 0)
		return; /* none: the finalize reads o alone */
	buf_puts(b, "\tstruct {\n");
	if (at->fm >= 0)
		buf_printf(b, "\t\tfloat f%d;\n", at->fm);
	if (at->fl >= 0)
		buf_printf(b, "\t\tfloat f%d;\n", at->fl);
	buf_puts(b, "\t} s;\n");
	if (at->fm >= 0)
		buf_printf(b, "\ts.f%d = m;\n", at->fm);
	if (at->fl >= 0)
		buf_printf(b, "\ts.f%d = l;\n", at->fl);
}

static void fin_hooks(Carrier *c, const CudaAttn *at, Buf *b)
{
	struct Fn *f;
	buf_puts(b, "ASC_DEV void attn_fin_row(const Args &A, const ARow &R, float m, float l, int i, long long at)\n{\n");
	ml_state(b, at);
	cuda_fn_begin(&f, c, b);
	for (int k = 0; k < c->nfinal; k++)
		if (!c->finalize[k].e->ty.len) {
			char dst[32];
			snprintf(dst, sizeof dst, "ov%d", k);
			buf_printf(b, "\t%s ov%d;\n", cuda_ctype(at->fin[k]->ty.kind), k);
			cuda_fn_assign(f, dst, at->fin[k], 0);
			buf_printf(b, "\tASC_ST((%s *)A.out[%d] + at, ov%d);\n", mem_type(at->fin[k]->ty.kind), k, k);
		}
	cuda_fn_end(f);
	end_fin(b, at);
	buf_puts(b, "ASC_DEV void attn_fin_vec(const Args &A, const ARow &R, float m, float l, float y1, int i, "
		    "long long at, int u)\n{\n");
	ml_state(b, at);
	cuda_fn_begin(&f, c, b);
	for (int k = 0; k < c->nfinal; k++)
		if (c->finalize[k].e->ty.len) {
			char dst[32];
			snprintf(dst, sizeof dst, "ov%d", k);
			buf_printf(b, "\t%s ov%d;\n", cuda_ctype(at->fin[k]->ty.kind), k);
			cuda_fn_assign(f, dst, at->fin[k], 0);
			buf_printf(b, "\tASC_ST((%s *)A.out[%d] + at * %d + u, ov%d);\n", mem_type(at->fin[k]->ty.kind), k,
				   at->dv, k);
		}
	cuda_fn_end(f);
	end_fin(b, at);
}

/* attn_tile: the mask over a box of (i, j) by interval arithmetic.
 * Numbers are [lN, hN] (doubles), booleans tN / fN (may be true / false). */
typedef struct {
	Carrier *c;
	Buf *b;
	int *memo, n;
} Iv;

static void iv_unknown(Iv *v, const Expr *e, int t)
{
	if (e->ty.kind == TY_BOOL)
		buf_printf(v->b, "\tconst bool t%d = true, f%d = true;\n", t, t);
	else
		buf_printf(v->b, "\tconst double l%d = -(double)ASC_INF, h%d = (double)ASC_INF;\n", t, t);
}

static void iv_const(Iv *v, const Expr *e, int t)
{
	if (e->ty.kind == TY_BOOL) {
		buf_printf(v->b, "\tconst bool t%d = %s, f%d = %s;\n", t, e->num ? "true" : "false", t,
			   e->num ? "false" : "true");
		return;
	}
	char num[64];
	if (isinf(e->num))
		snprintf(num, sizeof num, "%s(double)ASC_INF", e->num < 0 ? "-" : "");
	else
		snprintf(num, sizeof num, "%.17g", e->num);
	buf_printf(v->b, "\tconst double l%d = %s, h%d = %s;\n", t, num, t, num);
}

static void iv_var(Iv *v, const Expr *e, int t)
{
	const Var *x = ir_var(v->c->ir, e->k);
	if (x->kind == VAR_IDX) {
		const char *lo = x->slot == IDX_I ? "i0" : x->slot == IDX_J ? "j0" : "A.len";
		const char *hi = x->slot == IDX_I ? "i1" : x->slot == IDX_J ? "j1" : "A.len";
		buf_printf(v->b, "\tconst double l%d = %s, h%d = %s;\n", t, lo, t, hi);
	} else if (x->kind == VAR_PARAM && e->ty.kind == TY_BOOL)
		buf_printf(v->b, "\tconst bool t%d = A.prm[%d] != 0, f%d = A.prm[%d] == 0;\n", t, x->slot, t, x->slot);
	else if (x->kind == VAR_PARAM)
		buf_printf(v->b, "\tconst double l%d = A.prm[%d], h%d = A.prm[%d];\n", t, x->slot, t, x->slot);
	else
		iv_unknown(v, e, t);
}

static int iv_node(Iv *v, Expr *e);

static void iv_cmp(Iv *v, const Expr *e, int t, int a, int b)
{
	const char *fmt;
	switch (e->op) {
	case EXPR_LT: fmt = "\tconst bool t%1$d = l%2$d < h%3$d, f%1$d = h%2$d >= l%3$d;\n"; break;
	case EXPR_LE: fmt = "\tconst bool t%1$d = l%2$d <= h%3$d, f%1$d = h%2$d > l%3$d;\n"; break;
	case EXPR_GT: fmt = "\tconst bool t%1$d = h%2$d > l%3$d, f%1$d = l%2$d <= h%3$d;\n"; break;
	case EXPR_GE: fmt = "\tconst bool t%1$d = h%2$d >= l%3$d, f%1$d = l%2$d < h%3$d;\n"; break;
	case EXPR_EQ:
		fmt = "\tconst bool t%1$d = l%2$d <= h%3$d && l%3$d <= h%2$d, "
		      "f%1$d = !(l%2$d == h%2$d && l%3$d == h%3$d && l%2$d == l%3$d);\n";
		break;
	default:
		fmt = "\tconst bool f%1$d = l%2$d <= h%3$d && l%3$d <= h%2$d, "
		      "t%1$d = !(l%2$d == h%2$d && l%3$d == h%3$d && l%2$d == l%3$d);\n";
		break;
	}
	buf_printf(v->b, fmt, t, a, b);
}

static void iv_op(Iv *v, Expr *e, int t)
{
	int a = e->nargs > 0 ? iv_node(v, e->a[0]) : 0, b = e->nargs > 1 ? iv_node(v, e->a[1]) : 0;
	int c = e->nargs > 2 ? iv_node(v, e->a[2]) : 0;
	Buf *o = v->b;
	int num_args = e->nargs && e->a[0]->ty.kind != TY_BOOL;
	switch (e->op) {
	case EXPR_NEG: buf_printf(o, "\tconst double l%d = -h%d, h%d = -l%d;\n", t, a, t, a); return;
	case EXPR_ADD: buf_printf(o, "\tdouble l%d = l%d + l%d, h%d = h%d + h%d;\n", t, a, b, t, a, b); break;
	case EXPR_SUB: buf_printf(o, "\tdouble l%d = l%d - h%d, h%d = h%d - l%d;\n", t, a, b, t, a, b); break;
	case EXPR_MUL: buf_printf(o, "\tdouble l%d, h%d;\n\tasc_iv_mul(l%d, h%d, l%d, h%d, l%d, h%d);\n", t, t, a, a, b, b, t, t); return;
	case EXPR_MAX: case EXPR_MIN: {
		const char *fn = e->op == EXPR_MAX ? "fmax" : "fmin";
		buf_printf(o, "\tconst double l%d = %s(l%d, l%d), h%d = %s(h%d, h%d);\n", t, fn, a, b, t, fn, a, b);
		return;
	}
	case EXPR_CAST:
		if (!num_args || e->ty.kind == TY_BOOL)
			break;
		buf_printf(o, "\tconst double l%d = floor(l%d), h%d = ceil(h%d);\n", t, a, t, a);
		return;
	case EXPR_ABS:
		buf_printf(o, "\tconst double l%d = l%d >= 0 ? l%d : h%d <= 0 ? -h%d : 0, h%d = fmax(-l%d, h%d);\n", t, a, a,
			   a, a, t, a, a);
		return;
	case EXPR_LT: case EXPR_LE: case EXPR_GT: case EXPR_GE: case EXPR_EQ: case EXPR_NE:
		if (!num_args)
			break;
		iv_cmp(v, e, t, a, b);
		return;
	case EXPR_AND: buf_printf(o, "\tconst bool t%d = t%d && t%d, f%d = f%d || f%d;\n", t, a, b, t, a, b); return;
	case EXPR_OR: buf_printf(o, "\tconst bool t%d = t%d || t%d, f%d = f%d && f%d;\n", t, a, b, t, a, b); return;
	case EXPR_NOT: buf_printf(o, "\tconst bool t%d = f%d, f%d = t%d;\n", t, a, t, a); return;
	case EXPR_WHERE:
		if (e->ty.kind == TY_BOOL)
			buf_printf(o, "\tconst bool t%1$d = (t%2$d && t%3$d) || (f%2$d && t%4$d), "
				      "f%1$d = (t%2$d && f%3$d) || (f%2$d && f%4$d);\n", t, a, b, c);
		else
			buf_printf(o, "\tconst double l%1$d = !f%2$d ? l%3$d : !t%2$d ? l%4$d : fmin(l%3$d, l%4$d), "
				      "h%1$d = !f%2$d ? h%3$d : !t%2$d ? h%4$d : fmax(h%3$d, h%4$d);\n", t, a, b, c);
		return;
	default:
		iv_unknown(v, e, t);
		return;
	}
	if (e->op == EXPR_ADD || e->op == EXPR_SUB) { /* inf - inf: unknown */
		buf_printf(o, "\tif (l%d != l%d) l%d = -(double)ASC_INF;\n\tif (h%d != h%d) h%d = (double)ASC_INF;\n", t, t, t,
			   t, t, t);
		return;
	}
	iv_unknown(v, e, t);
}

static int iv_node(Iv *v, Expr *e)
{
	if (v->memo[e->id])
		return v->memo[e->id];
	int t = ++v->n;
	if (e->ty.len)
		iv_unknown(v, e, t);
	else if (e->op == EXPR_CONST)
		iv_const(v, e, t);
	else if (e->op == EXPR_VAR)
		iv_var(v, e, t);
	else
		iv_op(v, e, t);
	if (!e->ty.len && e->ty.kind != TY_BOOL) {
		const char *wide = e->ty.kind == TY_I32 ? "2147483648.0" : e->ty.kind == TY_I64 ? "9007199254740992.0" : "0";
		int s = ++v->n;
		buf_printf(v->b, "\tdouble l%d = l%d, h%d = h%d;\n\tasc_iv_settle(l%d, h%d, %s);\n", s, t, s, t, s, s, wide);
		t = s;
	}
	v->memo[e->id] = t;
	return t;
}

static void tile_hook(Carrier *c, Buf *b)
{
	buf_puts(b, "ASC_DEV int attn_tile(const Args &A, int i0, int i1, int j0, int j1)\n{\n");
	if (!c->mask) {
		buf_puts(b, "\treturn 2;\n}\n");
		return;
	}
	Iv v = {c, b, calloc(ir_nnodes(c->ir) + 1, sizeof(int)), 0};
	if (!v.memo)
		abort();
	int r = iv_node(&v, c->mask);
	free(v.memo);
	buf_printf(b, "\treturn !t%d ? 0 : !f%d ? 2 : 1;\n}\n", r, r);
}

/* Variables a slope may use: params and scalar row inputs. */
static int not_slope(void *ctx, Expr *e)
{
	Carrier *c = ctx;
	if (e->op != EXPR_VAR)
		return 0;
	const Var *v = ir_var(c->ir, e->k);
	return !(v->kind == VAR_PARAM || (v->kind == VAR_ROW && !v->ty.len));
}

/* A score linear in the dot, dot * a, dot / a or the dot itself, with a
 * of params and row inputs: a log2(e), the slope in base 2; else NULL.
 * The template then takes the row maxima of full tiles on the dots
 * themselves and folds the slope into the exponent's FFMA. */
static Expr *slope2(Carrier *c, Expr *score)
{
	Ir *ir = c->ir;
	int dot = sym_var(ir, "$dot", 0);
	Expr *l2e = ir_const(ir, ty_scalar(TY_F32), LOG2E);
	if (is_ref(score, dot))
		return l2e;
	if (score->op != EXPR_MUL && score->op != EXPR_DIV)
		return NULL;
	for (int k = 0; k < (score->op == EXPR_MUL ? 2 : 1); k++) {
		Expr *a = score->a[1 - k];
		if (!is_ref(score->a[k], dot) || ir_contains(a, not_slope, c) || a->ty.len)
			continue;
		return score->op == EXPR_MUL ? ir_bin(ir, EXPR_MUL, a, l2e) : ir_bin(ir, EXPR_DIV, l2e, a);
	}
	return NULL;
}

int cuda_attn_linear(Carrier *c, const CudaAttn *at) { return !at->sum && slope2(c, at->score) != NULL; }

/* A weighted sum's hooks: the weight, and the scalar fields' lifts (0
 * where the slot has no field). */
static void sum_hooks(Carrier *c, const CudaAttn *at, Buf *b)
{
	struct Fn *f;
	int sig = at->weight->op == EXPR_SIGMOID; /* the template's own sigmoid, by the SFU */
	buf_printf(b, "#define ATTN_SUM 1\n#define ATTN_SUM_M %d\n#define ATTN_SUM_L %d\n#define ATTN_WSIG %d\n",
		   at->fm >= 0, at->fl >= 0, sig);
	buf_puts(b, "#define ATTN_LIN 0\nASC_DEV float attn_slope2(const Args &A, const ARow &R)\n{\n\treturn 1.0f;\n}\n");
	buf_puts(b, "ASC_DEV float attn_weight(const Args &A, const ARow &R, float y0, int i, int j)\n{\n");
	cuda_fn_begin(&f, c, b);
	cuda_fn_return(f, sig ? at->weight->a[0] : at->weight);
	cuda_fn_end(f);
	buf_puts(b, "}\n");
	const char *name[2] = {"attn_sum_m", "attn_sum_l"};
	Expr *lift[2] = {at->wm, at->wl};
	for (int k = 0; k < 2; k++) {
		buf_printf(b, "ASC_DEV float %s(const Args &A, const ARow &R, float y0, float y2, int i, int j)\n{\n",
			   name[k]);
		if (lift[k]) {
			cuda_fn_begin(&f, c, b);
			cuda_fn_return(f, lift[k]);
			cuda_fn_end(f);
		} else
			buf_puts(b, "\treturn 0.0f;\n");
		buf_puts(b, "}\n");
	}
}

void cuda_attn_hooks(Carrier *c, const CudaAttn *at, Buf *b)
{
	struct Fn *f;
	if (at->f8)
		buf_puts(b, "#define ATTN_F8 1\n");
	buf_printf(b, "#define ATTN_QI %d\n#define ATTN_KI %d\n#define ATTN_VI %d\n", c->nelem + c->ncol + at->q,
		   c->nelem + at->k, c->nelem + at->v);
	buf_puts(b, "struct ARow {\n\tint unused_;\n");
	for (int k = 0; k < c->nrow; k++)
		if (!c->row[k].ty.len)
			buf_printf(b, "\t%s r%d;\n", cuda_ctype(c->row[k].ty.kind), k);
	buf_puts(b, "};\nASC_DEV ARow attn_row(const Args &A, long long at)\n{\n\tARow R;\n\tR.unused_ = 0;\n");
	for (int k = 0; k < c->nrow; k++)
		if (!c->row[k].ty.len) {
			int st = c->row[k].storage;
			const char *cv = cuda_load_cvt(st), *mt = cuda_mem_type(st);
			buf_printf(b, "\tR.r%d = (%s)%s(ASC_LD((const %s *)A.in[%d] + at));\n", k,
				   cuda_ctype(c->row[k].ty.kind), cv, mt, c->nelem + c->ncol + k);
		}
	buf_puts(b, "\treturn R;\n}\n");
	if (at->sum) {
		sum_hooks(c, at, b);
		buf_puts(b, "ASC_DEV bool attn_keep(const Args &A, const ARow &R, int i, int j)\n{\n");
		cuda_mask_body(c, b, c->mask);
		buf_puts(b, "}\n");
		tile_hook(c, b);
		fin_hooks(c, at, b);
		return;
	}
	Expr *a2 = slope2(c, at->score);
	buf_printf(b, "#define ATTN_LIN %d\nASC_DEV float attn_slope2(const Args &A, const ARow &R)\n{\n", a2 != NULL);
	if (a2) {
		cuda_fn_begin(&f, c, b);
		cuda_fn_return(f, a2);
		cuda_fn_end(f);
	} else
		buf_puts(b, "\treturn 1.0f;\n");
	buf_puts(b, "}\nASC_DEV float attn_score2(const Args &A, const ARow &R, float y0, int i, int j)\n{\n");
	if (a2) /* the product full tiles take, so that every tile's maxima agree */
		buf_puts(b, "\treturn y0 * attn_slope2(A, R);\n");
	else {
		cuda_fn_begin(&f, c, b);
		cuda_fn_return(f, ir_bin(c->ir, EXPR_MUL, at->score, ir_const(c->ir, ty_scalar(TY_F32), LOG2E)));
		cuda_fn_end(f);
	}
	buf_puts(b, "}\nASC_DEV bool attn_keep(const Args &A, const ARow &R, int i, int j)\n{\n");
	cuda_mask_body(c, b, c->mask);
	buf_puts(b, "}\n");
	tile_hook(c, b);
	fin_hooks(c, at, b);
}
