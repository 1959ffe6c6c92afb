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

void kern_plan_tf(Kern *k, Carrier *c, int want, int tile_given)
{
	k->tf = 0;
	memset(&k->frame, 0, sizeof k->frame);
	if (want < 0) {
		snprintf(k->tf_why, sizeof k->tf_why, "turned off (tf=0)");
		return;
	}
	if (k->lanes < 2 || k->mr_field >= 0) {
		snprintf(k->tf_why, sizeof k->tf_why, "%s",
			 k->mr_field >= 0 ? "the tiles fold by the max-rescale merge" : "the reduce has no vector lanes");
		return;
	}
	if (!prove_transport(c, k->tf_moving, k->tf_why, sizeof k->tf_why)) {
		char why[sizeof k->tf_why];
		if (c->has_cert || !transport_frame(c, &k->frame, why, sizeof why))
			return;
		if (!prove_transport(&k->frame, k->tf_moving, why, sizeof why)) {
			snprintf(k->tf_why, sizeof k->tf_why, "no certificate, and the one derived from its maximum %.180s", why);
			transport_frame_free(&k->frame);
			return;
		}
		snprintf(k->tf_why, sizeof k->tf_why, "by a certificate derived from its maximum: %.190s", why);
		k->c = &k->frame;
	}
	k->tf = 1;
	if (!tile_given)
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

/* The tile's transported state in r, and the lanes where it may stand
 * for the tile's fold (every sum finite). */
static LLVMValueRef transported(B *b, LV **s, LLVMValueRef *cond, int T, LV *r)
{
	Kern *k = b->k;
	Carrier *c = k->c;
	Lower *L = &b->L;
	int ns = c->nstate, s0 = 0;
	while (!k->tf_moving[s0])
		s0++;
	LLVMValueRef ninf = lower_const(L, TY_F32, -INFINITY), zero = lower_const(L, TY_F32, 0);
	LLVMValueRef v[65], d[65], y[TRANSPORT_MAX_FIELDS][65];
	for (int t = 0; t < T; t++) {
		LLVMValueRef x = s[t][s0].c[0];
		v[t] = cond[t] ? LLVMBuildSelect(L->b, cond[t], x, ninf, "") : x;
	}
	/* the shift: the largest kept element (NaN left out: it fails the
	 * check below), 0 in a lane that keeps none */
	LLVMValueRef M = kern_monoid_tree(L, EXPR_MAX, v, T);
	LLVMValueRef sh = LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealOEQ, M, ninf, ""), zero, M, "");
	LV *e = r; /* the shifted lift of position t, then the result */
	for (int t = 0; t < T; t++) {
		lower_scope(L, L->W);
		kern_bind_params(b);
		for (int f = 0; f < ns; f++)
			e[f] = k->tf_moving[f] ? lv1(b, LLVMBuildFSub(L->b, s[t][f].c[0], sh, "")) : s[t][f];
		d[t] = e[s0].c[0];
		if (cond[t])
			d[t] = LLVMBuildSelect(L->b, cond[t], d[t], zero, "");
		kern_bind_self(b, e);
		for (int q = 0; q < c->ncert; q++) {
			y[q][t] = lower_lv_at(lower_expr(L, c->cert_into[q].e), 0);
			if (c->cert_monoid[q] == EXPR_ADD)
				y[q][t] = drop_zero_term(y[q][t]);
			if (cond[t])
				y[q][t] = LLVMBuildSelect(L->b, cond[t], y[q][t],
							  lower_const(L, TY_F32, ir_ops[c->cert_monoid[q]].unit), "");
		}
	}
	/* an infinity or NaN among the kept elements (or a shifted one past
	 * the float range) makes this sum non-finite */
	LLVMValueRef ok = finite_lanes(L, kern_monoid_tree(L, EXPR_ADD, d, T));
	lower_scope(L, L->W);
	kern_bind_params(b);
	for (int q = 0; q < c->ncert; q++)
		L->bind[c->cert_var[q]] = lv1(b, kern_monoid_tree(L, c->cert_monoid[q], y[q], T));
	kern_state_exprs(b, c->cert_back, r);
	for (int f = 0; f < ns; f++) {
		if (k->tf_moving[f])
			r[f].c[0] = LLVMBuildFAdd(L->b, r[f].c[0], sh, "");
		ok = LLVMBuildAnd(L->b, ok, finite_lanes(L, r[f].c[0]), "");
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
	LLVMValueRef ok = transported(b, s, cond, T, r);
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
	LLVMValueRef via[TRANSPORT_MAX_FIELDS][2];
	for (int f = 0; f < ns; f++)
		via[f][0] = tmp[f].c[0];
	LLVMBasicBlockRef from_fast = LLVMGetInsertBlock(L->b);
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, slow);
	kern_fold_chains(b, acc, s, T, tmp);
	for (int f = 0; f < ns; f++)
		via[f][1] = tmp[f].c[0];
	LLVMBasicBlockRef from[2] = {from_fast, LLVMGetInsertBlock(L->b)};
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, join);
	lower_scope(L, W);
	for (int f = 0; f < ns; f++) {
		tmp[f] = lower_lv_new(L, 1);
		tmp[f].c[0] = LLVMBuildPhi(L->b, LLVMTypeOf(via[f][0]), "");
		LLVMAddIncoming(tmp[f].c[0], via[f], from, 2);
	}
}

void kern_plan_free(Kern *k)
{
	free(k->soff);
	k->soff = NULL;
	if (k->frame.has_cert)
		transport_frame_free(&k->frame);
}
