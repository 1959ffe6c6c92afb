/* eval.c: carriers on concrete rows (see eval.h). */
#include "compiler/check/eval.h"

#include <stdlib.h>
#include <string.h>

enum { B_A, B_B, B_SELF, B_ROW, B_COL, B_ELEM, B_PARAM, B_I, B_J, B_LEN, B_RED };

typedef struct {
	int src, off, w;
	int rest; /* an i64 leaf: its rests are bound too */
	double *val, *err, *rr; /* the leaf's storage in the Prog (rr: its rests), found once */
} Bind;

/* The Prog's storage does not move: its leaves' and roots' places are
 * found once, not per leaf at every position. */
struct Bound {
	Prog *p;
	Bind *b;
	int n;
	int *moving, nmoving; /* the leaves that differ from position to position (columns, elements, j) */
	const double **rootv, **roote, **rootr;
};

typedef struct {
	const double *av, *ae, *bv, *be, *sv, *se;
	const double *ar, *br, *sr; /* rests of a, b and the state (NULL: 0) */
	const Row *row;
	int j;
	const double *params;
	const double *red, *rede, *redr;
} Ctx;

struct RefEval {
	int nred;
	Expr **red;       /* reduction nodes, by id */
	int *redoff, redw;
	Bound *arg;       /* per reduction: its argument */
	Bound rowout, posout;
	Expr **rowroots, **posroots;
	int nrow, npos;
	int *rowk, *posk; /* which reference each root is */
	double *memo, *memoe, *memor; /* reductions' values, bounds and rests */
	double *mag;      /* per sum: sum |x| of its terms, for the float32 bound */
	unsigned char *masked; /* by position of the row reduced now, where there is a mask */
	int maskedcap;
};

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);
	if (!p)
		abort();
	return p;
}

/* ---- binding leaves to values ---- */

static int find_red(const RefEval *re, const Expr *e)
{
	for (int k = 0; re && k < re->nred; k++)
		if (re->red[k] == e)
			return k;
	return -1;
}

static Bound bound_new(Machine *m, Expr *const *roots, int n)
{
	Carrier *c = m->c;
	Bound b = {prog_new(c->ir, roots, n), NULL, 0, NULL, 0, NULL, NULL, NULL};
	b.n = prog_nleaves(b.p);
	b.b = xcalloc(b.n, sizeof *b.b);
	b.moving = xcalloc(b.n, sizeof *b.moving);
	b.rootv = xcalloc(n, sizeof *b.rootv);
	b.roote = xcalloc(n, sizeof *b.roote);
	b.rootr = xcalloc(n, sizeof *b.rootr);
	for (int r = 0; r < n; r++) {
		b.rootv[r] = prog_root(b.p, r, &b.roote[r]);
		b.rootr[r] = prog_root_rest(b.p, r);
	}
	for (int i = 0; i < b.n; i++) {
		Expr *e = prog_leaf(b.p, i);
		Bind *x = &b.b[i];
		x->w = e->ty.len ? e->ty.len : 1;
		x->rest = e->ty.kind == TY_I64;
		x->val = prog_leaf_val(b.p, i, &x->err);
		x->rr = prog_leaf_rest(b.p, i);
		if (e->op != EXPR_VAR) {
			int k = find_red(m->ref, e);
			x->src = B_RED;
			x->off = k >= 0 ? m->ref->redoff[k] : 0;
			continue;
		}
		const Var *v = ir_var(c->ir, e->k);
		switch (v->kind) {
		case VAR_STATE:
			x->src = v->which == STATE_A ? B_A : v->which == STATE_B ? B_B : B_SELF;
			x->off = m->soff[v->slot];
			break;
		case VAR_ROW: x->src = B_ROW, x->off = m->rowoff[v->slot]; break;
		case VAR_COL: x->src = B_COL, x->off = m->coloff[v->slot]; break;
		case VAR_ELEM: x->src = B_ELEM, x->off = m->elemoff[v->slot]; break;
		case VAR_PARAM: x->src = B_PARAM, x->off = m->poff[v->slot]; break;
		case VAR_IDX: x->src = B_I + v->slot; break;
		default: x->src = B_PARAM, x->off = 0; break; /* not reached: specs bind no symbols */
		}
		if (x->src == B_COL || x->src == B_ELEM || x->src == B_J)
			b.moving[b.nmoving++] = i;
	}
	return b;
}

static void bound_free(Bound *b)
{
	prog_free(b->p);
	free(b->b);
	free(b->moving);
	free(b->rootv);
	free(b->roote);
	free(b->rootr);
}

/* Leaf d from x; column and element inputs at flat offsets col and elem
 * (those of x->j in bind_at, of position 0 in bind). */
static void bind_leaf(const Bind *d, const Ctx *x, size_t col, size_t elem)
{
	const double *sv = NULL, *se = NULL, *sr = NULL;
	switch (d->src) {
	case B_A: sv = x->av + d->off, se = x->ae + d->off, sr = x->ar; break;
	case B_B: sv = x->bv + d->off, se = x->be + d->off, sr = x->br; break;
	case B_SELF: sv = x->sv + d->off, se = x->se + d->off, sr = x->sr; break;
	case B_RED: sv = x->red + d->off, se = x->rede + d->off, sr = x->redr; break;
	case B_ROW: sv = x->row->rowv + d->off, sr = x->row->rowrest; break;
	case B_PARAM: sv = x->params + d->off; break;
	case B_COL: sv = x->row->colv + col + d->off, sr = x->row->colrest ? x->row->colrest + col : NULL; break;
	case B_ELEM: sv = x->row->elemv + elem + d->off, sr = x->row->elemrest ? x->row->elemrest + elem : NULL; break;
	case B_I: d->val[0] = x->row->i, d->err[0] = 0; return;
	case B_J: d->val[0] = x->j, d->err[0] = 0; return;
	case B_LEN: d->val[0] = x->row->len_name ? x->row->len_name : x->row->len, d->err[0] = 0; return;
	}
	if (d->w == 1) {
		d->val[0] = sv[0], d->err[0] = se ? se[0] : 0;
		if (d->rest)
			d->rr[0] = sr ? sr[d->off] : 0;
		return;
	}
	memcpy(d->val, sv, d->w * sizeof *d->val);
	if (se)
		memcpy(d->err, se, d->w * sizeof *d->err);
	else
		memset(d->err, 0, d->w * sizeof *d->err);
	if (!d->rest)
		return;
	if (sr)
		memcpy(d->rr, sr + d->off, d->w * sizeof *d->rr);
	else
		memset(d->rr, 0, d->w * sizeof *d->rr);
}

static void bind(Bound *b, const Ctx *x)
{
	for (int i = 0; i < b->n; i++)
		bind_leaf(&b->b[i], x, 0, 0);
}

/* Column and element inputs are addressed per position.  With moving
 * only, the leaves that the last bind_at of the same row and inputs left
 * as they are stay: a reduction's loop rebinds its columns, elements and
 * j alone. */
static void bind_at(Machine *m, Bound *b, const Ctx *x, int moving)
{
	size_t col = (size_t)x->j * m->colw, elem = (size_t)x->j * m->elemw;
	if (moving)
		for (int i = 0; i < b->nmoving; i++)
			bind_leaf(&b->b[b->moving[i]], x, col, elem);
	else
		for (int i = 0; i < b->n; i++)
			bind_leaf(&b->b[i], x, col, elem);
}

static void copy_roots(Bound *b, int n, const int *off, double *v, double *e, double *rest)
{
	for (int r = 0; r < n; r++) {
		int w = off[r + 1] - off[r];
		memcpy(v + off[r], b->rootv[r], w * sizeof *v);
		if (e)
			memcpy(e + off[r], b->roote[r], w * sizeof *e);
		if (rest)
			memcpy(rest + off[r], b->rootr[r], w * sizeof *rest);
	}
}

/* In the spec's types a value of an f32 field or output is a float32,
 * whatever its expression: a constant root (an identity's 0.1) is held as
 * written until rounded here, as the devices store it. */
static void round_f32(Mode mode, int n, const int *off, int (*is_f32)(const Carrier *, int), const Carrier *c,
		      double *v)
{
	if (mode != MODE_F32)
		return;
	for (int r = 0; r < n; r++)
		if (is_f32(c, r))
			for (int k = off[r]; k < off[r + 1]; k++)
				v[k] = (float)v[k];
}

static int state_f32(const Carrier *c, int f) { return c->state[f].ty.kind == TY_F32; }
static int final_f32(const Carrier *c, int o) { return c->finalize[o].e->ty.kind == TY_F32; }
static int map_f32(const Carrier *c, int o) { return c->map[o].e->ty.kind == TY_F32; }

/* ---- layout ---- */

static int *offsets(const Decl *d, int n, int *total)
{
	int *off = xcalloc(n + 1, sizeof *off);
	for (int i = 0; i < n; i++)
		off[i + 1] = off[i] + spec_decl_width(&d[i]);
	*total = off[n];
	return off;
}

static int *def_offsets(const Def *d, int n, int *total)
{
	int *off = xcalloc(n + 1, sizeof *off);
	for (int i = 0; i < n; i++)
		off[i + 1] = off[i] + (d[i].e->ty.len ? d[i].e->ty.len : 1);
	*total = off[n];
	return off;
}

static Bound *heap_bound(Machine *m, Expr *const *roots, int n)
{
	Bound *b = xcalloc(1, sizeof *b);
	*b = bound_new(m, roots, n);
	return b;
}

/* ---- the reference ---- */

static void collect_red(Expr *e, unsigned char *seen, Expr ***out, int *n)
{
	if (seen[e->id])
		return;
	seen[e->id] = 1;
	for (int i = 0; i < e->nargs; i++)
		collect_red(e->a[i], seen, out, n);
	if (ir_ops[e->op].flags & F_REDUCE) {
		*out = realloc(*out, (*n + 1) * sizeof **out);
		if (!*out)
			abort();
		(*out)[(*n)++] = e;
	}
}

static int cmp_id(const void *x, const void *y)
{
	const Expr *a = *(Expr *const *)x, *b = *(Expr *const *)y;
	return (a->id > b->id) - (a->id < b->id);
}

static RefEval *ref_new(Machine *m)
{
	Carrier *c = m->c;
	RefEval *re = xcalloc(1, sizeof *re);
	m->ref = re;
	Expr *maxe = NULL;
	for (int k = 0; k < c->nref; k++)
		if (!maxe || c->ref[k].e->id > maxe->id)
			maxe = c->ref[k].e;
	unsigned char *seen = xcalloc(maxe ? maxe->id + 1 : 1, 1);
	for (int k = 0; k < c->nref; k++)
		collect_red(c->ref[k].e, seen, &re->red, &re->nred);
	free(seen);
	if (re->nred)
		qsort(re->red, re->nred, sizeof *re->red, cmp_id);
	re->redoff = xcalloc(re->nred + 1, sizeof *re->redoff);
	for (int k = 0; k < re->nred; k++)
		re->redoff[k + 1] = re->redoff[k] + (re->red[k]->ty.len ? re->red[k]->ty.len : 1);
	re->redw = re->redoff[re->nred];
	re->memo = xcalloc(re->redw, sizeof *re->memo);
	re->memoe = xcalloc(re->redw, sizeof *re->memoe);
	re->memor = xcalloc(re->redw, sizeof *re->memor);
	re->mag = xcalloc(re->redw, sizeof *re->mag);
	re->arg = xcalloc(re->nred, sizeof *re->arg);
	Expr *always = ir_const(c->ir, ty_scalar(TY_BOOL), 1);
	for (int k = 0; k < re->nred; k++) {
		Expr *e = re->red[k];
		Expr *root = e->nargs ? e->a[0] : always;
		re->arg[k] = bound_new(m, &root, 1);
	}
	re->rowroots = xcalloc(c->nref, sizeof(Expr *));
	re->posroots = xcalloc(c->nref, sizeof(Expr *));
	re->rowk = xcalloc(c->nref, sizeof(int));
	re->posk = xcalloc(c->nref, sizeof(int));
	for (int k = 0; k < c->nref; k++) {
		if (c->ref[k].per_row)
			re->rowk[re->nrow] = k, re->rowroots[re->nrow++] = c->ref[k].e;
		else
			re->posk[re->npos] = k, re->posroots[re->npos++] = c->ref[k].e;
	}
	re->rowout = bound_new(m, re->rowroots, re->nrow);
	re->posout = bound_new(m, re->posroots, re->npos);
	return re;
}

static void ref_free(RefEval *re)
{
	if (!re)
		return;
	for (int k = 0; k < re->nred; k++)
		bound_free(&re->arg[k]);
	bound_free(&re->rowout);
	bound_free(&re->posout);
	free(re->arg);
	free(re->red);
	free(re->redoff);
	free(re->memo);
	free(re->memoe);
	free(re->memor);
	free(re->mag);
	free(re->masked);
	free(re->rowroots);
	free(re->posroots);
	free(re->rowk);
	free(re->posk);
	free(re);
}

/* A float32 sum's bound past its own order.  The running bound is that
 * of this left-to-right order, whose partial sums stay small where the
 * terms cancel; another order (a device's tree, or a merge with a single
 * position on its left: Welford's a.mean + delta * b.n / n rounds at |x|
 * there) may not.  The order that takes the terms of one sign first
 * passes through partial sums of up to half of sum |x| and back, n / 4
 * sum |x| in all where the sum cancels whole; so the bound adds n / 4
 * times the part of sum |x| that cancels, sum |x| - |sum x|, and nothing
 * for terms of one sign.  (n times it, the bound of any order, let a
 * sum off by a relative 1e-3 pass where it cancelled to 1/300 of
 * sum |x|; n / 4 keeps Welford's float32 mean, folded from the right,
 * within 0.4 of the tolerance on the soundness rows of 30 seeds.) */
static void add_cancellation(double *err, const double *acc, const double *mag, int w, int n)
{
	for (int t = 0; t < w; t++)
		if (isfinite(mag[t]))
			err[t] += n / 4.0 * fmax(0, mag[t] - fabs(acc[t]));
}

/* Whether integer (v, vr) is above (w, wr), as values and rests (v and w
 * the nearest doubles: the order of the doubles, where they differ, is
 * the integers'). */
static int int_above(double v, double vr, double w, double wr) { return v > w || (v == w && vr > wr); }

/* One reduction over the row's unmasked positions, with the running error
 * of a left-to-right sum (in float32, add_cancellation's too).  A sum of
 * integers is exact, in 64 bits: through float64 one whose partial sums
 * passed 2^53 lost its low bits (2^62 + 1 - 2^62 was 0).  An i32 sum past
 * 2^31 does not wrap there, so that a carrier whose i32 state wraps where
 * its reference does not still fails; an i64 sum wraps as the carrier's
 * does.  A maximum or minimum of integers compares them exactly. */
static void reduce(Machine *m, Mode mode, int k, const Row *r)
{
	RefEval *re = m->ref;
	Expr *e = re->red[k];
	int w = e->ty.len ? e->ty.len : 1, off = re->redoff[k], n = 0;
	int ints = e->ty.kind == TY_I32 || e->ty.kind == TY_I64;
	double *acc = re->memo + off, *err = re->memoe + off, *mag = re->mag + off, *rest = re->memor + off;
	for (int t = 0; t < w; t++)
		acc[t] = ir_ops[e->op].unit, err[t] = 0, mag[t] = 0, rest[t] = 0;
	Ctx x = {.row = r, .params = m->params, .red = re->memo, .rede = re->memoe, .redr = re->memor};
	int topk = e->op == EXPR_RTOPK || e->op == EXPR_RTOPK_IDX;
	double tv[IR_TOPK_MAX + 1], ti[IR_TOPK_MAX + 1], te[IR_TOPK_MAX + 1];
	for (int t = 0; t < IR_TOPK_MAX + 1; t++)
		tv[t] = -INFINITY, ti[t] = -1, te[t] = 0;
	for (int j = 0; j < r->len; j++) {
		if (m->mask && re->masked[j]) /* the devices' decision, whatever the mode */
			continue;
		x.j = j;
		bind_at(m, &re->arg[k], &x, n++ > 0); /* the row's and the reductions' leaves once */
		prog_run(re->arg[k].p, mode);
		const double *ve = re->arg[k].roote[0], *v = re->arg[k].rootv[0], *vr = re->arg[k].rootr[0];
		if (topk) { /* the naive way: the row's pairs ranked one by one into a sorted list */
			int p = w;
			while (p > 0 && ir_topk_before(v[0], j, tv[p - 1], ti[p - 1]))
				p--;
			for (int q = w; q > p; q--)
				tv[q] = tv[q - 1], ti[q] = ti[q - 1], te[q] = te[q - 1];
			tv[p] = v[0], ti[p] = j, te[p] = ve[0];
			continue;
		}
		for (int t = 0; t < w; t++) {
			switch (e->op) {
			case EXPR_SUM:
				if (ints) {
					int64_t s = ir_eval_int(EXPR_ADD, TY_I64, 0, ir_int_exact(acc[t], rest[t]),
								ir_int_exact(v[t], vr[t]), 0);
					acc[t] = (double)s, rest[t] = ir_int_rest(s, acc[t]);
				} else
					acc[t] = mode == MODE_F32 && e->ty.kind == TY_F32 ? (float)(acc[t] + v[t]) : acc[t] + v[t];
				err[t] += ve[t] + fabs(acc[t]);
				mag[t] += fabs(v[t]);
				break;
			case EXPR_COUNT: acc[t] += 1; break;
			case EXPR_RMAX:
				if (ints ? int_above(v[t], vr[t], acc[t], rest[t]) : v[t] > acc[t] || isnan(v[t]))
					acc[t] = v[t], err[t] = ve[t], rest[t] = vr[t];
				break;
			case EXPR_RMIN:
				if (ints ? int_above(acc[t], rest[t], v[t], vr[t]) : v[t] < acc[t] || isnan(v[t]))
					acc[t] = v[t], err[t] = ve[t], rest[t] = vr[t];
				break;
			default: break;
			}
		}
	}
	for (int t = 0; topk && t < w; t++) {
		acc[t] = e->op == EXPR_RTOPK ? tv[t] : ti[t];
		err[t] = e->op == EXPR_RTOPK ? te[t] : 0;
	}
	if (e->op == EXPR_SUM && mode == MODE_F32)
		add_cancellation(err, acc, mag, w, n);
}

void eval_reference(Machine *m, Mode mode, const Row *r, double *rowv, double *rowe, double *posv, double *pose)
{
	eval_reference_exact(m, mode, r, rowv, rowe, NULL, posv, pose, NULL);
}

void eval_reference_exact(Machine *m, Mode mode, const Row *r, double *rowv, double *rowe, double *rowr, double *posv,
			  double *pose, double *posr)
{
	RefEval *re = m->ref;
	if (m->mask && re->nred) { /* once a row, not once a reduction */
		if (r->len > re->maskedcap) {
			free(re->masked);
			re->maskedcap = r->len;
			re->masked = xcalloc(re->maskedcap, 1);
		}
		for (int j = 0; j < r->len; j++)
			re->masked[j] = (unsigned char)eval_masked(m, r, j);
	}
	for (int k = 0; k < re->nred; k++) /* by id: inner reductions first */
		reduce(m, mode, k, r);
	Ctx x = {.row = r, .params = m->params, .red = re->memo, .rede = re->memoe, .redr = re->memor};
	if (re->nrow) {
		bind_at(m, &re->rowout, &x, 0);
		prog_run(re->rowout.p, mode);
		for (int q = 0; q < re->nrow; q++) {
			int k = re->rowk[q], w = m->refoff[k + 1] - m->refoff[k];
			const double *e = re->rowout.roote[q], *v = re->rowout.rootv[q];
			memcpy(rowv + m->refoff[k], v, w * sizeof *v);
			memcpy(rowe + m->refoff[k], e, w * sizeof *e);
			if (rowr)
				memcpy(rowr + m->refoff[k], re->rowout.rootr[q], w * sizeof *rowr);
		}
	}
	for (int j = 0; re->npos && j < r->len; j++) {
		x.j = j;
		bind_at(m, &re->posout, &x, j > 0);
		prog_run(re->posout.p, mode);
		for (int q = 0; q < re->npos; q++) {
			int k = re->posk[q], w = m->refoff[k + 1] - m->refoff[k];
			size_t at = (size_t)j * m->refw + m->refoff[k];
			const double *e = re->posout.roote[q], *v = re->posout.rootv[q];
			memcpy(posv + at, v, w * sizeof *v);
			memcpy(pose + at, e, w * sizeof *e);
			if (posr)
				memcpy(posr + at, re->posout.rootr[q], w * sizeof *posr);
		}
	}
}

/* ---- the carrier ---- */

int eval_init(Machine *m, Carrier *c)
{
	memset(m, 0, sizeof *m);
	m->c = c;
	m->soff = offsets(c->state, c->nstate, &m->sw);
	m->rowoff = offsets(c->row, c->nrow, &m->roww);
	m->coloff = offsets(c->col, c->ncol, &m->colw);
	m->elemoff = offsets(c->elem, c->nelem, &m->elemw);
	m->poff = offsets(c->params, c->nparams, &m->pw);
	m->finoff = def_offsets(c->finalize, c->nfinal, &m->finw);
	m->mapoff = def_offsets(c->map, c->nmap, &m->mapw);
	m->refoff = def_offsets(c->ref, c->nref, &m->refw);
	m->params = xcalloc(m->pw, sizeof *m->params);
	m->scratch = xcalloc(4 * m->sw, sizeof *m->scratch);
	ref_new(m);
	m->lift = heap_bound(m, c->lift, c->nstate);
	m->merge = heap_bound(m, c->merge, c->nstate);
	Expr **fe = xcalloc(c->nfinal + c->nmap + 1, sizeof *fe);
	for (int k = 0; k < c->nfinal; k++)
		fe[k] = c->finalize[k].e;
	m->fin = heap_bound(m, fe, c->nfinal);
	for (int k = 0; k < c->nmap; k++)
		fe[k] = c->map[k].e;
	m->map = c->nmap ? heap_bound(m, fe, c->nmap) : NULL;
	free(fe);
	m->assume = c->assume ? heap_bound(m, &c->assume, 1) : NULL;
	m->mask = c->mask ? heap_bound(m, &c->mask, 1) : NULL;
	for (int mode = 0; mode < 2; mode++) {
		m->ident[mode] = xcalloc(m->sw, sizeof(double));
		Bound b = bound_new(m, c->identity, c->nstate);
		prog_run(b.p, (Mode)mode);
		copy_roots(&b, c->nstate, m->soff, m->ident[mode], NULL, NULL);
		round_f32((Mode)mode, c->nstate, m->soff, state_f32, c, m->ident[mode]);
		bound_free(&b);
	}
	return 0;
}

static void free_heap_bound(Bound *b)
{
	if (!b)
		return;
	bound_free(b);
	free(b);
}

void eval_free(Machine *m)
{
	free_heap_bound(m->lift);
	free_heap_bound(m->merge);
	free_heap_bound(m->fin);
	free_heap_bound(m->map);
	free_heap_bound(m->assume);
	free_heap_bound(m->mask);
	ref_free(m->ref);
	free(m->soff);
	free(m->rowoff);
	free(m->coloff);
	free(m->elemoff);
	free(m->poff);
	free(m->finoff);
	free(m->mapoff);
	free(m->refoff);
	free(m->params);
	free(m->scratch);
	free(m->index_in);
	free(m->consts);
	free(m->ident[0]);
	free(m->ident[1]);
	memset(m, 0, sizeof *m);
}

static int has_i64(const Decl *d, int n)
{
	for (int i = 0; i < n; i++)
		if (d[i].ty.kind == TY_I64)
			return 1;
	return 0;
}

Row *eval_row_new(const Machine *m, int len)
{
	const Carrier *c = m->c;
	Row *r = xcalloc(1, sizeof *r);
	r->len = len;
	r->rowv = xcalloc(m->roww, sizeof(double));
	r->colv = xcalloc((size_t)len * m->colw, sizeof(double));
	r->elemv = xcalloc((size_t)len * m->elemw, sizeof(double));
	if (has_i64(c->row, c->nrow))
		r->rowrest = xcalloc(m->roww, sizeof(double));
	if (has_i64(c->col, c->ncol))
		r->colrest = xcalloc((size_t)len * m->colw, sizeof(double));
	if (has_i64(c->elem, c->nelem))
		r->elemrest = xcalloc((size_t)len * m->elemw, sizeof(double));
	return r;
}

void eval_row_free(Row *r)
{
	if (!r)
		return;
	free(r->rowv);
	free(r->colv);
	free(r->elemv);
	free(r->rowrest);
	free(r->colrest);
	free(r->elemrest);
	free(r);
}

void eval_identity(Machine *m, Mode mode, double *v, double *e)
{
	memcpy(v, m->ident[mode], m->sw * sizeof *v);
	if (e)
		memset(e, 0, m->sw * sizeof *e);
}

/* mask and assume in the spec's types, as every device decides them: a
 * position is kept or dropped, so a comparison that float64 rounds the
 * other way (j < p * 300 at p = 0.3) would keep a position no device
 * keeps, in the interpreter and in the reference alike. */
static int run_cond(Machine *m, Bound *b, const Row *r, int j)
{
	Ctx x = {.row = r, .j = j, .params = m->params};
	bind_at(m, b, &x, 0);
	prog_run(b->p, MODE_F32);
	return b->rootv[0][0] != 0;
}

int eval_masked(Machine *m, const Row *r, int j) { return m->mask && !run_cond(m, m->mask, r, j); }
int eval_assume(Machine *m, const Row *r, int j) { return !m->assume || run_cond(m, m->assume, r, j); }

void eval_lift(Machine *m, Mode mode, const Row *r, int j, double *v, double *e)
{
	eval_lift_exact(m, mode, r, j, v, e, NULL);
}

void eval_lift_exact(Machine *m, Mode mode, const Row *r, int j, double *v, double *e, double *rest)
{
	Bound *b = m->lift;
	Ctx x = {.row = r, .j = j, .params = m->params};
	bind_at(m, b, &x, 0);
	prog_run(b->p, mode);
	copy_roots(b, m->c->nstate, m->soff, v, e, rest);
	round_f32(mode, m->c->nstate, m->soff, state_f32, m->c, v);
}

void eval_merge(Machine *m, Mode mode, const double *av, const double *ae, const double *bv, const double *be,
	     double *v, double *e)
{
	eval_merge_exact(m, mode, av, ae, NULL, bv, be, NULL, v, e, NULL);
}

void eval_merge_exact(Machine *m, Mode mode, const double *av, const double *ae, const double *ar, const double *bv,
		      const double *be, const double *br, double *v, double *e, double *rest)
{
	Bound *b = m->merge;
	Ctx x = {.av = av, .ae = ae, .bv = bv, .be = be, .ar = ar, .br = br, .params = m->params};
	bind(b, &x);
	prog_run(b->p, mode);
	m->range |= prog_range(b->p);
	copy_roots(b, m->c->nstate, m->soff, v, e, rest);
	round_f32(mode, m->c->nstate, m->soff, state_f32, m->c, v);
}

void eval_step_exact(Machine *m, Mode mode, const Row *r, int j, double *v, double *e, double *rest, double *l)
{
	if (eval_masked(m, r, j))
		return;
	int sw = m->sw;
	eval_lift_exact(m, mode, r, j, l, l + sw, l + 2 * sw);
	eval_merge_exact(m, mode, v, e, rest, l, l + sw, l + 2 * sw, v, e, rest);
}

void eval_int_rounding(Machine *m, int on)
{
	Bound *all[] = {m->lift, m->merge, m->fin, m->map, m->assume, m->mask};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (all[i])
			prog_int_rounding(all[i]->p, on);
}

void eval_const_rounding(Machine *m, int on)
{
	Bound *all[] = {m->lift, m->merge, m->fin, m->map, m->assume, m->mask};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (all[i])
			prog_const_rounding(all[i]->p, on);
	RefEval *re = m->ref;
	for (int k = 0; re && k < re->nred; k++)
		prog_const_rounding(re->arg[k].p, on);
	if (re) {
		prog_const_rounding(re->rowout.p, on);
		prog_const_rounding(re->posout.p, on);
	}
}

int eval_fold_split(int lo, int hi, Shape shape, uint64_t *rng)
{
	return shape == SHAPE_LEFT ? hi - 1 : shape == SHAPE_RIGHT ? lo + 1 : shape == SHAPE_BALANCED
		? lo + (hi - lo) / 2 : rng_int(rng, lo + 1, hi - 1);
}

/* eval_fold_exact where rest is not NULL; inside the fold, always: the
 * states merged keep their rests. */
static void fold(Machine *m, Mode mode, const Row *r, int lo, int hi, Shape shape, uint64_t *rng, double *v,
		 double *e, double *rest)
{
	if (hi - lo <= 0) {
		eval_identity(m, mode, v, e);
		memset(rest, 0, m->sw * sizeof *rest);
		return;
	}
	if (hi - lo == 1) {
		if (eval_masked(m, r, lo)) {
			eval_identity(m, mode, v, e);
			memset(rest, 0, m->sw * sizeof *rest);
		} else
			eval_lift_exact(m, mode, r, lo, v, e, rest);
		return;
	}
	int k = eval_fold_split(lo, hi, shape, rng), sw = m->sw;
	double *t = malloc(6 * sw * sizeof *t);
	if (!t)
		abort();
	fold(m, mode, r, lo, k, shape, rng, t, t + sw, t + 4 * sw);
	fold(m, mode, r, k, hi, shape, rng, t + 2 * sw, t + 3 * sw, t + 5 * sw);
	eval_merge_exact(m, mode, t, t + sw, t + 4 * sw, t + 2 * sw, t + 3 * sw, t + 5 * sw, v, e, rest);
	free(t);
}

void eval_fold(Machine *m, Mode mode, const Row *r, int lo, int hi, Shape shape, uint64_t *rng, double *v,
	    double *e)
{
	eval_fold_exact(m, mode, r, lo, hi, shape, rng, v, e, NULL);
}

void eval_fold_exact(Machine *m, Mode mode, const Row *r, int lo, int hi, Shape shape, uint64_t *rng, double *v,
		     double *e, double *rest)
{
	double *own = rest ? NULL : malloc(m->sw * sizeof *own);
	if (!rest && !own)
		abort();
	fold(m, mode, r, lo, hi, shape, rng, v, e, rest ? rest : own);
	free(own);
}

void eval_finalize(Machine *m, Mode mode, const Row *r, const double *sv, const double *se, double *out,
		double *oute)
{
	eval_finalize_exact(m, mode, r, sv, se, NULL, out, oute, NULL);
}

void eval_finalize_exact(Machine *m, Mode mode, const Row *r, const double *sv, const double *se, const double *sr,
			 double *out, double *oute, double *outr)
{
	Bound *b = m->fin;
	Ctx x = {.sv = sv, .se = se, .sr = sr, .row = r, .params = m->params};
	bind(b, &x);
	prog_run(b->p, mode);
	copy_roots(b, m->c->nfinal, m->finoff, out, oute, outr);
	round_f32(mode, m->c->nfinal, m->finoff, final_f32, m->c, out);
}

void eval_map(Machine *m, Mode mode, const Row *r, int j, const double *sv, const double *se, double *out,
	   double *oute)
{
	eval_map_exact(m, mode, r, j, sv, se, NULL, out, oute, NULL);
}

void eval_map_exact(Machine *m, Mode mode, const Row *r, int j, const double *sv, const double *se, const double *sr,
		    double *out, double *oute, double *outr)
{
	Bound *b = m->map;
	Ctx x = {.sv = sv, .se = se, .sr = sr, .row = r, .j = j, .params = m->params};
	bind_at(m, b, &x, 0);
	prog_run(b->p, mode);
	copy_roots(b, m->c->nmap, m->mapoff, out, oute, outr);
	round_f32(mode, m->c->nmap, m->mapoff, map_f32, m->c, out);
}
