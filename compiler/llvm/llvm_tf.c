/* llvm_tf.c: the transported fold of a tile in the vector lanes
 * (reduce_vectors in llvm_reduce.c), the CPU's form of the GPU templates'
 * tf=1 (compiler/cuda/cuda_tf.c).  Where the prover shows the carrier's
 * certificate and its shift (prove_transport), each lane folds its T
 * positions of a tile as the monoid sums of phi(lift(x - t)), t the
 * lane's largest kept element, converts back once, adds t back to the
 * fields that move with x and merges that state into the accumulator
 * with the spec's merge: one merge and one back a tile instead of a tree
 * of T - 1 merges and one (Welford, rows of 8192 in L3, one thread: 5.0
 * G elements/s by the tree, 5.9 transported).
 *
 * A lane's tile holding an infinity or a NaN makes the sum of its shifted
 * elements non-finite; where that sum or the state converted back is not
 * finite in any lane, the whole tile takes the spec's merges instead
 * (kern_fold_chains), so
 * the shift only ever meets the finite reals the proof covers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/llvm/llvm_kern.h"

/* Tiles of 16 vectors where the transported fold is taken and the tile
 * is not given: one merge and one back (Welford: three divisions) a tile
 * of 256 positions, and the tile's elements still in the 32 registers
 * for the second look, after their maximum.  Welford, one thread, rows of
 * 16384: 5.9, 6.0 and 6.1 G elements/s in tiles of 8, 16 and 32; rows of
 * 1024, 5.4, 5.3 and 4.7 (the longer tail). */
enum { TF_TILE = 16 };

/* The most positions times state components of a one-lane tile. */
enum { TF_ONE_COMPONENTS = 1056 };

/* Whether the reduce folds one position at a time in one lane, where the
 * wide form of the transported fold may take its tiles (a carrier with
 * vector fields or inputs: o_lse). */
static int one_lane_plain(const Kern *k, const Carrier *c)
{
	return k->lanes < 2 && k->accs < 2 && !(k->ordered > 1) && !k->select && !k->keys && k->group <= 1 &&
	       !kern_filter_fits(c) && c->tpl != FAM_SCAN;
}

void kern_plan_tf(Kern *k, Carrier *c, int want, int tile_given)
{
	k->tf = 0;
	memset(&k->frame, 0, sizeof k->frame);
	if (want < 0) {
		snprintf(k->tf_why, sizeof k->tf_why, "turned off (tf=0)");
		return;
	}
	int wide = k->lanes < 2;
	if ((wide && !one_lane_plain(k, c)) || k->mr_field >= 0) {
		snprintf(k->tf_why, sizeof k->tf_why, "%s",
			 k->mr_field >= 0 ? "the tiles fold by the max-rescale merge" : "the reduce has no vector lanes");
		return;
	}
	if (wide && kern_wide_state(c)) {
		snprintf(k->tf_why, sizeof k->tf_why, "a state of %d components, past the %d whose tiles one lane folds",
			 kern_state_components(c), (int)SLP_STATE_MAX);
		return;
	}
	int q;
	if (!(wide ? prove_transport_wide(c, k->tf_moving, &q, k->tf_why, sizeof k->tf_why)
		   : prove_transport_lanes(c, k->tf_moving, k->tf_why, sizeof k->tf_why))) {
		char why[sizeof k->tf_why];
		if (c->has_cert || !transport_frame(c, &k->frame, why, sizeof why))
			return;
		if (!(wide ? prove_transport_wide(&k->frame, k->tf_moving, &q, why, sizeof why)
			   : prove_transport_lanes(&k->frame, k->tf_moving, why, sizeof why))) {
			snprintf(k->tf_why, sizeof k->tf_why, "no certificate, and the one derived from its maximum %.180s", why);
			transport_frame_free(&k->frame);
			return;
		}
		snprintf(k->tf_why, sizeof k->tf_why, "by a certificate derived from its maximum: %.190s", why);
		k->c = &k->frame;
	}
	k->tf = 1;
	/* one lane: a tile's positions times the state's components at most
	 * TF_ONE_COMPONENTS, each component of each position its own value
	 * until LLVM's SLP vectorizer joins them (o_lse, one thread, rows
	 * of 512 from L3, against 15 M positions/s by merges: tiles of 8 at
	 * dv = 64 70 M positions/s, compiled in 0.17 s; of 16, 100 to 117 M
	 * in 0.36 to 0.55 s; dv = 128, tiles of 8, 0.57 to 0.7 s) */
	if (wide) {
		k->tile = TF_ONE_TILE;
		while (k->tile > 2 && k->tile * kern_state_components(c) > TF_ONE_COMPONENTS)
			k->tile /= 2;
	} else if (!tile_given)
		k->tile = TF_TILE;
}

/* v, or x where v is 0 + x: a coordinate summed over the tile need not
 * keep the sign of a zero term (the proof's reals have none), and the
 * add costs an operation a position (Welford's s2 = m2 + n * mean^2,
 * its lifted m2 0). */
static LLVMValueRef drop_zero_term(LLVMValueRef v)
{
	if (!LLVMIsAInstruction(v) || LLVMGetInstructionOpcode(v) != LLVMFAdd)
		return v;
	for (int o = 0; o < 2; o++)
		if (LLVMIsAConstantAggregateZero(LLVMGetOperand(v, o)))
			return LLVMGetOperand(v, 1 - o);
	return v;
}

/* Lanes where |v| is finite. */
static LLVMValueRef finite_lanes(Lower *L, LLVMValueRef v)
{
	LLVMValueRef a = lower_intrinsic(L, "llvm.fabs", LLVMTypeOf(v), &v, 1);
	return LLVMBuildFCmp(L->b, LLVMRealOLT, a, lower_const(L, TY_F32, INFINITY), "");
}

/* Whether e reads nothing but scalar state fields and params. */
static int scalar_of_state(const Carrier *c, const Expr *e)
{
	if (e->ty.len)
		return 0;
	if (e->op == EXPR_VAR) {
		const Var *v = ir_var(c->ir, e->k);
		return v->kind == VAR_PARAM || (v->kind == VAR_STATE && v->which == STATE_SELF);
	}
	for (int i = 0; i < e->nargs; i++)
		if (!scalar_of_state(c, e->a[i]))
			return 0;
	return 1;
}

enum { TF_PARTS = 16 };

/* The largest scalar parts of e over scalar fields (o_lse's exp(lse) in
 * p: o * exp(lse)), each once, into part; constants and bare fields
 * are left out (nothing to compute). */
static void scalar_parts(const Carrier *c, Expr *e, Expr **part, int *n)
{
	if (e->op == EXPR_CONST || e->op == EXPR_VAR)
		return;
	if (scalar_of_state(c, e) && e->ty.kind != TY_BOOL) {
		for (int i = 0; i < *n; i++)
			if (part[i] == e)
				return;
		if (*n < TF_PARTS)
			part[(*n)++] = e;
		return;
	}
	for (int i = 0; i < e->nargs; i++)
		scalar_parts(c, e->a[i], part, n);
}

/* In one lane, the scalar parts of the coordinates for the T positions
 * at once, in vectors of T lanes (e[t]: position t's shifted lift), into
 * v: position by position, o_lse's exp a position was scalar code that
 * LLVM's SLP vectorizer left as it was, a third of a tile's
 * instructions.  Returns how many parts. */
static int parts_at_once(B *b, LV **e, int T, Expr **part, LLVMValueRef *v)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int n = 0;
	if (L->W != 1 || T < 2)
		return 0;
	for (int q = 0; q < c->ncert; q++)
		scalar_parts(c, c->cert_into[q].e, part, &n);
	if (!n)
		return 0;
	lower_scope(L, T);
	kern_bind_params(b);
	for (int f = 0; f < c->nstate; f++) {
		if (c->state[f].ty.len)
			continue;
		LLVMValueRef x = lower_lv_at(e[0][f], 0);
		LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(LLVMTypeOf(x), (unsigned)T));
		for (int t = 0; t < T; t++)
			vec = LLVMBuildInsertElement(L->b, vec, lower_lv_at(e[t][f], 0), LLVMConstInt(b->i32, (unsigned)t, 0), "");
		L->bind[c->svar[STATE_SELF][f]] = lv1(b, vec);
	}
	/* the portable exp: with vscalefps here (exp_avx512), LLVM 14's
	 * instruction selection for AVX-512VL hosts failed ("Do not know how
	 * to split the result of this operator") on the 16 lanes broadcast to
	 * the vector fields' 64-component products */
	int avx512 = L->avx512;
	L->avx512 = 0;
	for (int i = 0; i < n; i++)
		v[i] = lower_lv_at(lower_expr(L, part[i]), 0);
	L->avx512 = avx512;
	lower_scope(L, 1);
	return n;
}

LLVMValueRef kern_tf_transported(B *b, LV **s, LLVMValueRef *cond, int T, LV *r)
{
	Kern *k = b->k;
	Carrier *c = k->c;
	Lower *L = &b->L;
	int ns = c->nstate, s0 = 0;
	while (!k->tf_moving[s0])
		s0++;
	LLVMValueRef ninf = lower_const(L, TY_F32, -INFINITY), zero = lower_const(L, TY_F32, 0);
	LLVMValueRef v[65], d[65], y[65];
	LV yv[TRANSPORT_MAX_FIELDS][65];
	for (int t = 0; t < T; t++) {
		LLVMValueRef x = s[t][s0].c[0];
		v[t] = cond[t] ? LLVMBuildSelect(L->b, cond[t], x, ninf, "") : x;
	}
	/* the shift: the largest kept element (NaN left out: it fails the
	 * check below), 0 in a lane that keeps none */
	LLVMValueRef M = kern_monoid_tree(L, EXPR_MAX, v, T);
	LLVMValueRef sh = LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealOEQ, M, ninf, ""), zero, M, "");
	/* the shifted lift of each position */
	LV *e = calloc((size_t)T * ns, sizeof *e), *et[65];
	for (int t = 0; t < T; t++) {
		et[t] = e + (size_t)t * ns;
		for (int f = 0; f < ns; f++)
			et[t][f] = k->tf_moving[f] ? lv1(b, LLVMBuildFSub(L->b, s[t][f].c[0], sh, "")) : s[t][f];
	}
	Expr *part[TF_PARTS];
	LLVMValueRef partv[TF_PARTS];
	int nparts = parts_at_once(b, et, T, part, partv);
	for (int t = 0; t < T; t++) {
		lower_scope(L, L->W);
		kern_bind_params(b);
		d[t] = et[t][s0].c[0];
		if (cond[t])
			d[t] = LLVMBuildSelect(L->b, cond[t], d[t], zero, "");
		kern_bind_self(b, et[t]);
		for (int i = 0; i < nparts; i++)
			lower_preset(L, part[i], lv1(b, LLVMBuildExtractElement(L->b, partv[i], LLVMConstInt(b->i32, (unsigned)t, 0), "")));
		for (int q = 0; q < c->ncert; q++) {
			LV u = lower_expr(L, c->cert_into[q].e);
			int w = lower_width(c->cert_into[q].e);
			LLVMValueRef unit = lower_const(L, TY_F32, ir_ops[c->cert_monoid[q]].unit);
			yv[q][t] = lower_lv_new(L, w);
			for (int i = 0; i < w; i++) {
				LLVMValueRef x = lower_lv_at(u, i);
				if (c->cert_monoid[q] == EXPR_ADD)
					x = drop_zero_term(x);
				yv[q][t].c[i] = cond[t] ? LLVMBuildSelect(L->b, cond[t], x, unit, "") : x;
			}
		}
	}
	/* an infinity or NaN among the kept elements (or a shifted one past
	 * the float range) makes this sum non-finite */
	LLVMValueRef ok = finite_lanes(L, kern_monoid_tree(L, EXPR_ADD, d, T));
	lower_scope(L, L->W);
	kern_bind_params(b);
	for (int q = 0; q < c->ncert; q++) {
		LV sum = lower_lv_new(L, yv[q][0].n);
		for (int i = 0; i < sum.n; i++) {
			for (int t = 0; t < T; t++)
				y[t] = yv[q][t].c[i];
			sum.c[i] = kern_monoid_tree(L, c->cert_monoid[q], y, T);
		}
		L->bind[c->cert_var[q]] = sum;
	}
	kern_state_exprs(b, c->cert_back, r);
	free(e);
	for (int f = 0; f < ns; f++) {
		if (k->tf_moving[f])
			r[f].c[0] = LLVMBuildFAdd(L->b, r[f].c[0], sh, "");
		for (int i = 0; i < r[f].n; i++)
			ok = LLVMBuildAnd(L->b, ok, finite_lanes(L, r[f].c[i]), "");
	}
	return ok;
}

void kern_tf_tile(B *b, LV **s, LLVMValueRef *cond, int T, LV *tmp)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int ns = c->nstate, W = L->W;
	LV *r = tmp + ns, *acc = tmp + 2 * ns;
	memcpy(acc, b->st, ns * sizeof *acc);
	LLVMValueRef ok = kern_tf_transported(b, s, cond, T, r);
	if (W > 1)
		ok = lower_intrinsic(L, "llvm.vector.reduce.and", LLVMTypeOf(ok), &ok, 1);
	LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "transported");
	LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "tile_merges");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "tile_folded");
	LLVMBuildCondBr(L->b, ok, fast, slow);
	LLVMPositionBuilderAtEnd(L->b, fast);
	lower_scope(L, W);
	kern_bind_params(b);
	kern_merge(b, acc, r, tmp);
	LV via[TRANSPORT_MAX_FIELDS][2];
	for (int f = 0; f < ns; f++)
		via[f][0] = tmp[f];
	LLVMBasicBlockRef from_fast = LLVMGetInsertBlock(L->b);
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, slow);
	kern_fold_chains(b, acc, s, T, tmp);
	for (int f = 0; f < ns; f++)
		via[f][1] = tmp[f];
	LLVMBasicBlockRef from[2] = {from_fast, LLVMGetInsertBlock(L->b)};
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, join);
	lower_scope(L, W);
	for (int f = 0; f < ns; f++) {
		int w = via[f][0].n > via[f][1].n ? via[f][0].n : via[f][1].n;
		tmp[f] = lower_lv_new(L, w);
		for (int i = 0; i < w; i++) {
			LLVMValueRef in[2] = {lower_lv_at(via[f][0], i), lower_lv_at(via[f][1], i)};
			tmp[f].c[i] = LLVMBuildPhi(L->b, LLVMTypeOf(in[0]), "");
			LLVMAddIncoming(tmp[f].c[i], in, from, 2);
		}
	}
}

void kern_plan_free(Kern *k)
{
	free(k->soff);
	k->soff = NULL;
	if (k->frame.has_cert)
		transport_frame_free(&k->frame);
}
