/* transport.c: whether a carrier's tiles may be folded in its
 * certificate's coordinates, the transported fold of the GPU row
 * templates (compiler/cuda/cuda_tf.c) and of the CPU backend's vector
 * lanes (compiler/llvm/llvm_tf.c): where the certificate maps the state
 * into coordinates of known monoids, a tile folds as the sum (product,
 * max, min) of phi(lift(x)) and converts back once, so that no element
 * pays for the merge (Welford's division, online softmax's rescale).
 *
 * Taken as it is, the transport loses float32's precision: Welford's
 * (n, s1, s2) leaves the variance to s2 - s1^2 / n, all cancellation when
 * |mean| >> std, and online softmax's s = sum(exp(x)) overflows past 88.
 * So the tile is folded shifted by its largest element t: each x becomes
 * x - t (in [-(max - min), 0]) and t is added back to the state fields
 * that move with x.  That needs, beyond the certificate:
 *
 * - the fields that move: lift sets them to the element itself, and no
 *   other field of lift reads the element (the CPU's vector lanes, which
 *   shift lifted states, not inputs: to one scalar float value of the
 *   element inputs, x + r, whose inputs no other field reads);
 * - the merge commutes with the shift: merge(a - t, b - t) = merge(a, b) - t
 *   on those fields (unchanged on the others).  Proved for t = b.s0 (the
 *   first moving field of b), for every pair of states: that case gives
 *   every t, since applied to (a + t, b + t) and to (a, b) it leaves
 *   merge(a + t, b + t) - b.s0 - t = merge(a - b.s0, b - b.s0) = merge(a, b) - b.s0;
 * - no assume on the element: the proof may use what it says of x, which
 *   x - t need not keep (an assume on params alone stays true).
 *
 * The prover shows the certificate's three parts (phi a homomorphism,
 * back its inverse, phi(identity) the monoids' identity) and the shift's
 * law together (prove_equal); nothing is transported without the proof.
 * At run time a tile whose range is not finite (an infinity, a NaN) or
 * whose transported state is not finite folds the plain way: the shift
 * then never meets a value the proof's finite reals leave out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/prove/prove.h"
#include "ir/ir.h"

typedef struct {
	Expr **by_var;
} VarMap;

static Expr *map_var(void *ctx, Expr *v) { return ((VarMap *)ctx)->by_var[v->k]; }

static Expr *subst(Carrier *c, Expr *e, VarMap *m) { return ir_subst(c->ir, e, map_var, m); }

static int is_elem(void *ctx, Expr *n) { return n->op == EXPR_VAR && n->k == *(int *)ctx; }

/* Whether n reads one of the element inputs in the set ctx (a mask
 * indexed by var). */
static int reads_moved(void *ctx, Expr *n) { return n->op == EXPR_VAR && ((const char *)ctx)[n->k]; }

/* The state fields that move with the element (lift sets them to it:
 * to the element input q, or, where h is given, to the value h of the
 * element inputs in moved); 0 with the reason where lift reads those
 * inputs elsewhere. */
static int moving_fields(Carrier *c, int q, Expr *h, char *moved, int *mv, char *why, size_t n)
{
	int x = c->elem[q].var, nm = 0;
	for (int f = 0; f < c->nstate; f++) {
		Expr *l = c->lift[f];
		mv[f] = h ? l == h : l->op == EXPR_VAR && l->k == x;
		nm += mv[f];
		if (!mv[f] && (h ? ir_contains(l, reads_moved, moved) : ir_contains(l, is_elem, &x))) {
			if (h) {
				char *hs = ir_str_max(c->ir, h, 80);
				snprintf(why, n, "lift's %s reads the element inputs of %s other than through it, so the tile "
						 "cannot be shifted", c->state[f].name, hs);
				free(hs);
			} else {
				snprintf(why, n, "lift's %s reads %s other than as itself, so the tile cannot be shifted",
					 c->state[f].name, c->elem[q].name);
			}
			return 0;
		}
	}
	if (!nm)
		snprintf(why, n, "no state field is the element itself in lift, so the tile cannot be shifted");
	return nm;
}

static int scalar_f32(Ty t) { return !t.len && t.kind == TY_F32; }

/* Whether the assume reads the element (or an element input of the
 * value h that moves, in moved), which the shift moves: the proof may
 * lean on its facts (x > 0 makes a lift's field positive), which x - t no
 * longer meets.  Params, row and column inputs stay put. */
static int assume_moves(Carrier *c, int q, Expr *h, const char *moved, char *why, size_t n)
{
	int x = c->elem[q].var;
	if (!c->assume || !(h ? ir_contains(c->assume, reads_moved, (void *)moved) : ir_contains(c->assume, is_elem, &x)))
		return 0;
	char *s = ir_str_max(c->ir, c->assume, 120), *hs = h ? ir_str_max(c->ir, h, 60) : NULL;
	if (hs)
		snprintf(why, n, "assume (%s) reads an element input of %s, which the tile's shift moves", s, hs);
	else
		snprintf(why, n, "assume (%s) reads %s, which the tile's shift moves", s, c->elem[q].name);
	free(s);
	free(hs);
	return 1;
}

enum { TR_ELEM, TR_WIDE, TR_LANES };

/* The element input the tile is shifted by: the one scalar float element
 * where there is one input (TR_ELEM); among several, the first scalar
 * float element that a field of lift is (TR_WIDE: the others, such as a
 * vector beside its weight, stay put); -1 with the reason.  TR_LANES (the
 * CPU's vector lanes, which shift the lifted states, not the inputs)
 * takes a field of lift that is a scalar float value of the element
 * inputs, an input itself first, else the first such field's value (x +
 * r, a residual added before a layer norm) into *h, with the inputs it
 * reads set in moved. */
static int moving_element(Carrier *c, int mode, Expr **h, char *moved, char *why, size_t n)
{
	*h = NULL;
	if (mode == TR_ELEM) {
		if (c->nelem == 1 && scalar_f32(c->elem[0].ty))
			return 0;
		snprintf(why, n, "the transported fold takes one scalar float element input");
		return -1;
	}
	for (int q = 0; q < c->nelem; q++)
		if (scalar_f32(c->elem[q].ty))
			for (int f = 0; f < c->nstate; f++)
				if (c->lift[f]->op == EXPR_VAR && c->lift[f]->k == c->elem[q].var)
					return q;
	if (mode == TR_LANES) {
		for (int f = 0; f < c->nstate; f++) {
			Expr *l = c->lift[f];
			if (!scalar_f32(l->ty) || !scalar_f32(c->state[f].ty))
				continue;
			int q0 = -1;
			for (int q = 0; q < c->nelem; q++) {
				int x = c->elem[q].var;
				moved[x] = (char)ir_contains(l, is_elem, &x);
				if (moved[x] && q0 < 0)
					q0 = q;
			}
			if (q0 >= 0) {
				*h = l;
				return q0;
			}
		}
		snprintf(why, n, "no field of lift is a scalar float value of the element inputs, so the tile cannot be "
				 "shifted");
		return -1;
	}
	snprintf(why, n, "no field of lift is a scalar float element input, so the tile cannot be shifted");
	return -1;
}

/* The degree of e in variable v: 0 (free of it), 1 (linear), 2 (any
 * other way). */
static int degree(const Expr *e, int v)
{
	if (e->op == EXPR_VAR)
		return e->k == v;
	if (e->op == EXPR_CONST || e->nargs == 0)
		return 0;
	int d[4] = {0}, most = 0;
	for (int i = 0; i < e->nargs && i < 4; i++) {
		d[i] = degree(e->a[i], v);
		most = d[i] > most ? d[i] : most;
	}
	if (!most)
		return 0;
	switch (e->op) {
	case EXPR_ADD: case EXPR_SUB: case EXPR_NEG: case EXPR_CAST: case EXPR_INDEX:
		return most;
	case EXPR_MUL: case EXPR_DOT:
		return d[0] + d[1] > 1 ? 2 : 1;
	case EXPR_DIV:
		return d[1] ? 2 : d[0];
	case EXPR_WHERE:
		return d[0] ? 2 : most;
	default:
		return 2;
	}
}

/* In the wide form only the moving element is shifted: a field that lift
 * sets to another element input (o_lse's o = po) is summed as it is, which
 * loses nothing where every coordinate is linear in it (p = o exp(lse)),
 * but cancels where one is not (power sums of a vector whose mean is far
 * from 0, whose back takes S2/W - (S1/W)^2).  0 with the reason there. */
static int carried_linear(Carrier *c, int q, char *why, size_t n)
{
	for (int f = 0; f < c->nstate; f++) {
		Expr *l = c->lift[f];
		if (l->op != EXPR_VAR || l->k == c->elem[q].var)
			continue;
		int e = -1;
		for (int i = 0; i < c->nelem; i++)
			if (l->k == c->elem[i].var)
				e = i;
		if (e < 0)
			continue;
		for (int k = 0; k < c->ncert; k++)
			if (degree(c->cert_into[k].e, c->svar[STATE_SELF][f]) > 1) {
				snprintf(why, n, "lift's %s is %s, which the tile does not shift, and coordinate %s is not "
						 "linear in it: its sums would cancel where %s lies far from 0",
					 c->state[f].name, c->elem[e].name, c->cert_into[k].name, c->elem[e].name);
				return 0;
			}
	}
	return 1;
}

/* TR_WIDE: vector fields and coordinates, and element inputs beside the
 * one that moves (the CPU's one-lane tiles); else every field and
 * coordinate a scalar f32, and one element input (TR_ELEM: the GPU) or
 * element inputs whose value moves (TR_LANES: the CPU's vector lanes). */
static int transport(Carrier *c, int mode, int *moving, int *elem, char *why, size_t n)
{
	int wide = mode == TR_WIDE;
	if (!c->has_cert || !c->merge) {
		snprintf(why, n, "no certificate");
		return 0;
	}
	/* no claim of commutativity is asked: the proof below implies it
	 * (phi(a + b) = phi(a) * phi(b) in monoids that commute, and back
	 * inverts phi, so a + b = back(phi(b) * phi(a)) = b + a) */
	if (c->tpl == FAM_SCAN) {
		snprintf(why, n, "a scan");
		return 0;
	}
	if (c->nstate > TRANSPORT_MAX_FIELDS || c->ncert > TRANSPORT_MAX_FIELDS) {
		snprintf(why, n, "more than %d fields or coordinates", (int)TRANSPORT_MAX_FIELDS);
		return 0;
	}
	Expr *h;
	char *moved = calloc(ir_nvars(c->ir) + 1, 1);
	if (!moved)
		abort();
	int q = moving_element(c, mode, &h, moved, why, n);
	if (q < 0 || assume_moves(c, q, h, moved, why, n) ||
	    !moving_fields(c, q, h, moved, moving, why, n)) {
		free(moved);
		return 0;
	}
	free(moved);
	for (int f = 0; f < c->nstate; f++)
		if (wide ? c->state[f].ty.kind != TY_F32 : !scalar_f32(c->state[f].ty)) {
			snprintf(why, n, "state field %s is not %s", c->state[f].name, wide ? "of f32" : "a scalar f32");
			return 0;
		}
	for (int k = 0; k < c->ncert; k++)
		if (wide ? c->cert_into[k].e->ty.kind != TY_F32 : !scalar_f32(c->cert_into[k].e->ty)) {
			snprintf(why, n, "coordinate %s is not %s", c->cert_into[k].name, wide ? "of f32" : "a scalar f32");
			return 0;
		}
	if (wide && !carried_linear(c, q, why, n))
		return 0;
	for (int f = 0; f < c->nstate; f++)
		if (moving[f] && !scalar_f32(c->state[f].ty)) {
			snprintf(why, n, "state field %s moves with %s but is not a scalar f32", c->state[f].name,
				 h ? "the element inputs" : c->elem[q].name);
			return 0;
		}
	if (elem)
		*elem = q;
	int s0 = 0;
	while (!moving[s0])
		s0++;
	VarMap m = {calloc(ir_nvars(c->ir) + 1, sizeof(Expr *))};
	if (!m.by_var)
		abort();
	/* phi(identity): constants, the monoids' identities */
	for (int k = 0; k < c->ncert; k++) {
		for (int f = 0; f < c->nstate; f++)
			m.by_var[c->svar[STATE_SELF][f]] = c->identity[f];
		Expr *u = subst(c, c->cert_into[k].e, &m);
		double want = ir_ops[c->cert_monoid[k]].unit;
		if (u->op != EXPR_CONST || !(u->num == want)) {
			snprintf(why, n, "phi(identity).%s is not the identity of its monoid", c->cert_into[k].name);
			free(m.by_var);
			return 0;
		}
	}
	enum { MAXP = 3 * TRANSPORT_MAX_FIELDS + TRANSPORT_MAX_FIELDS };
	Expr *xs[MAXP], *ys[MAXP], *pa[TRANSPORT_MAX_FIELDS], *pb[TRANSPORT_MAX_FIELDS];
	const char *names[MAXP];
	char label[MAXP][SPEC_MAX_NAME + 16];
	int np = 0;
	Ir *ir = c->ir;
	for (int k = 0; k < c->ncert; k++) {
		for (int f = 0; f < c->nstate; f++)
			m.by_var[c->svar[STATE_SELF][f]] = ir_ref(ir, c->svar[STATE_A][f]);
		pa[k] = subst(c, c->cert_into[k].e, &m);
		for (int f = 0; f < c->nstate; f++)
			m.by_var[c->svar[STATE_SELF][f]] = ir_ref(ir, c->svar[STATE_B][f]);
		pb[k] = subst(c, c->cert_into[k].e, &m);
		for (int f = 0; f < c->nstate; f++)
			m.by_var[c->svar[STATE_SELF][f]] = c->merge[f];
		/* phi(a + b) = phi(a) * phi(b) */
		xs[np] = subst(c, c->cert_into[k].e, &m), ys[np] = ir_bin(ir, c->cert_monoid[k], pa[k], pb[k]);
		snprintf(label[np], sizeof label[np], "phi.%s", c->cert_into[k].name);
		names[np] = label[np], np++;
	}
	for (int f = 0; f < c->nstate; f++)
		m.by_var[c->svar[STATE_SELF][f]] = NULL;
	for (int k = 0; k < c->ncert; k++)
		m.by_var[c->cert_var[k]] = pa[k];
	for (int f = 0; f < c->nstate; f++) { /* back(phi(a)) = a */
		xs[np] = subst(c, c->cert_back[f], &m), ys[np] = ir_ref(ir, c->svar[STATE_A][f]);
		snprintf(label[np], sizeof label[np], "back.%s", c->state[f].name);
		names[np] = label[np], np++;
	}
	for (int k = 0; k < c->ncert; k++)
		m.by_var[c->cert_var[k]] = NULL;
	Expr *t = ir_ref(ir, c->svar[STATE_B][s0]);
	for (int f = 0; f < c->nstate; f++)
		if (moving[f])
			for (int w = STATE_A; w <= STATE_B; w++)
				m.by_var[c->svar[w][f]] = ir_bin(ir, EXPR_SUB, ir_ref(ir, c->svar[w][f]), t);
	for (int f = 0; f < c->nstate; f++) { /* merge(a - t, b - t) + t = merge(a, b), t = b.s0 */
		Expr *sh = subst(c, c->merge[f], &m);
		xs[np] = moving[f] ? ir_bin(ir, EXPR_ADD, sh, t) : sh, ys[np] = c->merge[f];
		snprintf(label[np], sizeof label[np], "shift.%s", c->state[f].name);
		names[np] = label[np], np++;
	}
	free(m.by_var);
	char how[512];
	ProofStatus st = prove_equal(c, xs, ys, names, np, "transported", "the carrier's", how, sizeof how);
	if (st != PROOF_PROVED) {
		snprintf(why, n, "the certificate and the shift are not proved (%s): %s", prove_status_name(st), how);
		return 0;
	}
	char mon[128] = "";
	for (int k = 0; k < c->ncert; k++) {
		size_t l = strlen(mon);
		snprintf(mon + l, sizeof mon - l, "%s%s", k ? ", " : "", ir_ops[c->cert_monoid[k]].printed);
	}
	char *hs = h ? ir_str_max(ir, h, 60) : NULL;
	size_t l = snprintf(why, n, "tiles folded in (%s), shifted by their largest %s on", mon, hs ? hs : "element");
	free(hs);
	for (int f = 0; f < c->nstate && l < n; f++)
		if (moving[f])
			l += snprintf(why + l, n - l, " %s", c->state[f].name);
	return 1;
}

int prove_transport(Carrier *c, int *moving, char *why, size_t n) { return transport(c, TR_ELEM, moving, NULL, why, n); }

int prove_transport_lanes(Carrier *c, int *moving, char *why, size_t n)
{
	return transport(c, TR_LANES, moving, NULL, why, n);
}

int prove_transport_wide(Carrier *c, int *moving, int *elem, char *why, size_t n)
{
	return transport(c, TR_WIDE, moving, elem, why, n);
}

/* ---- a certificate derived from the maximum ----
 *
 * Online softmax's relatives keep a field m, the largest element so far,
 * and fields relative to it (l = sum e^(x - m), s = sum e^(x - m) (x - m)
 * for an entropy), which every merge rescales to the new maximum.  Where
 * the merge's rescale is not the plain a.f * exp(a.m - m) form that the
 * max-rescale tiles take (llvm_tile.c), the tile may still fold in a
 * frame: rebased to m = 0, a state's fields are what its merge with the
 * pivot P0 = (m: 0, the identity's other fields) gives when the merge's
 * maximum is taken as 0, and merges of rebased states are plain sums.
 * So the certificate is
 *   into: m -> m,  f -> merge(a: the state, b: P0).f with max(a.m, b.m) -> 0
 *   back: m -> m,  f -> merge(a: (0, the coordinates), b: P(m)).f with
 *                       max(a.m, b.m) -> m
 * (a field merged by its own max, min or sum keeps itself and that
 * monoid), and prove_transport proves it as it proves a written one:
 * phi a homomorphism into (max, +, ...), back its inverse, and the shift.
 * For a tile shifted by its largest element the exponentials stay at or
 * under 1. */

/* e with its variables mapped by m and the node from replaced by to */
static Expr *repl(Carrier *c, Expr *e, VarMap *m, Expr *from, Expr *to)
{
	return ir_replace(c->ir, e, map_var, m, from, to);
}

static int is_ref(const Expr *e, int var) { return e->op == EXPR_VAR && e->k == var; }

/* The monoid op of a field merged by itself (op(a.f, b.f), either
 * order), else 0. */
static Op own_monoid(const Carrier *c, int f)
{
	const Expr *e = c->merge[f];
	if (e->op != EXPR_ADD && e->op != EXPR_MAX && e->op != EXPR_MIN)
		return (Op)0;
	int a = c->svar[STATE_A][f], b = c->svar[STATE_B][f];
	if ((is_ref(e->a[0], a) && is_ref(e->a[1], b)) || (is_ref(e->a[0], b) && is_ref(e->a[1], a)))
		return (Op)e->op;
	return (Op)0;
}

/* Whether e reads node x. */
static int reads_node(void *ctx, Expr *e) { return e == ctx; }

/* The coordinate variable of field f, made by an earlier derivation for
 * this carrier where there was one (a carrier with no certificate has no
 * other variable of this kind and name), so that compiling a carrier
 * again does not grow its IR. */
static int frame_var(Ir *ir, const char *name, int f)
{
	for (int v = 0; v < ir_nvars(ir); v++) {
		const Var *var = ir_var(ir, v);
		if (var->kind == VAR_SYM && var->slot == f && var->ty.kind == TY_F32 && !var->ty.len &&
		    !strcmp(var->name, name))
			return v;
	}
	return ir_add_var(ir, name, VAR_SYM, 0, f, ty_scalar(TY_F32), TY_F32);
}

int transport_frame(Carrier *c, Carrier *out, char *why, size_t n)
{
	memset(out, 0, sizeof *out);
	if (c->has_cert || !c->merge || c->tpl == FAM_SCAN || c->nelem != 1 || !scalar_f32(c->elem[0].ty) ||
	    c->nstate > TRANSPORT_MAX_FIELDS) {
		snprintf(why, n, "no certificate");
		return 0;
	}
	int x = c->elem[0].var, mf = -1, rel = 0;
	for (int f = 0; f < c->nstate; f++)
		if (!scalar_f32(c->state[f].ty)) {
			snprintf(why, n, "no certificate");
			return 0;
		}
	for (int f = 0; f < c->nstate && mf < 0; f++)
		if (own_monoid(c, f) == EXPR_MAX && is_ref(c->lift[f], x) && c->identity[f]->op == EXPR_CONST &&
		    c->identity[f]->num == -INFINITY)
			mf = f;
	for (int f = 0; f < c->nstate && mf >= 0; f++)
		rel += f != mf && !own_monoid(c, f) && ir_contains(c->merge[f], reads_node, c->merge[mf]);
	if (mf < 0 || !rel) {
		snprintf(why, n, "no certificate");
		return 0;
	}
	int ns = c->nstate;
	Ir *ir = c->ir;
	*out = *c;
	out->cert_into = calloc(ns, sizeof *out->cert_into);
	out->cert_monoid = calloc(ns, sizeof *out->cert_monoid);
	out->cert_var = calloc(ns, sizeof *out->cert_var);
	out->cert_back = calloc(ns, sizeof *out->cert_back);
	Expr **by_var = calloc(ir_nvars(ir) + ns + 1, sizeof *by_var);
	VarMap vm = {by_var};
	if (!out->cert_into || !out->cert_monoid || !out->cert_var || !out->cert_back || !by_var)
		abort();
	Ty f32 = ty_scalar(TY_F32);
	Expr *zero = ir_const(ir, f32, 0);
	for (int f = 0; f < ns; f++)
		out->cert_var[f] = frame_var(ir, c->state[f].name, f);
	for (int f = 0; f < ns; f++) {
		Op own = f == mf ? EXPR_MAX : own_monoid(c, f);
		out->cert_into[f].name = c->state[f].name;
		out->cert_monoid[f] = own ? own : EXPR_ADD;
		if (own) {
			out->cert_into[f].e = ir_ref(ir, c->svar[STATE_SELF][f]);
			out->cert_back[f] = ir_ref(ir, out->cert_var[f]);
			continue;
		}
		/* into: the state merged with the pivot at 0, its maximum 0 */
		memset(by_var, 0, (ir_nvars(ir) + 1) * sizeof *by_var);
		for (int g = 0; g < ns; g++) {
			by_var[c->svar[STATE_A][g]] = ir_ref(ir, c->svar[STATE_SELF][g]);
			by_var[c->svar[STATE_B][g]] = g == mf ? zero : c->identity[g];
		}
		out->cert_into[f].e = repl(c, c->merge[f], &vm, c->merge[mf], zero);
		/* back: the coordinates at 0 merged with the pivot at m */
		Expr *m = ir_ref(ir, out->cert_var[mf]);
		for (int g = 0; g < ns; g++) {
			by_var[c->svar[STATE_A][g]] = g == mf ? zero : ir_ref(ir, out->cert_var[g]);
			by_var[c->svar[STATE_B][g]] = g == mf ? m : c->identity[g];
		}
		out->cert_back[f] = repl(c, c->merge[f], &vm, c->merge[mf], m);
	}
	free(by_var);
	out->ncert = ns;
	out->has_cert = 1;
	return 1;
}

void transport_frame_free(Carrier *out)
{
	free(out->cert_into);
	free(out->cert_monoid);
	free(out->cert_var);
	free(out->cert_back);
	memset(out, 0, sizeof *out);
}
