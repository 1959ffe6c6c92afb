/* llvm_reduce.c: a CPU kernel's reduce function (llvm_kern.h).
 *
 * reduce, for a commutative carrier with scalar fields, runs K
 * accumulators of W lanes over tiles of T vectors: position
 * lo + c*K*T*W + k*T*W + t*W + l is lifted in lane l of vector t of
 * accumulator k's tile; the tile folds on its own (llvm_tile.c's n-ary
 * max-rescale merge, llvm_tf.c's transported sums, or a tree of the
 * spec's merges), then merges into its accumulator.  Full vectors left
 * over then go one by one into accumulator 0, the accumulators merge
 * pairwise (k with k + s), the lanes halve (l with l + W/2) down to one
 * state, and the last positions (fewer than W) follow one by one.  A
 * max-rescale carrier's range of at most TWO_PASS_BYTES (llvm_int.h)
 * instead takes two passes: the max of the lifted m, then the sum of
 * f * g(m - max) (kern_reduce_two_pass); fields that merge by themselves
 * (llvm_tile.c) fold alongside, plainly.
 * Any other carrier folds left to right in one scalar state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/llvm/llvm_kern.h"
#include "compiler/devices/run.h"

static int is_state(const Carrier *c, const Expr *e, int which);
static LLVMValueRef *apart_lists(B *b);
static void apart_into(B *b, LLVMValueRef *from, LV *to);
static LLVMValueRef hreduce(B *b, LLVMValueRef v, int W, int max);
static LLVMValueRef differs(B *b, LLVMValueRef x, LLVMValueRef y);

/* Lanes halve: lanes [0, w/2) merge with [w/2, w) until one is left; or,
 * ordered (each lane a segment of the range, in order), lane 2l with lane
 * 2l + 1, so that every merge joins neighbours, a before b. */
static void halve(B *b, LV *s, LV *tmp, int ordered)
{
	Carrier *c = b->k->c;
	LV *lo = tmp, *hi = tmp + c->nstate, *m = tmp + 2 * c->nstate;
	for (int w = b->L.W; w > 1; w /= 2) {
		for (int f = 0; f < c->nstate; f++) {
			lo[f] = lower_lv_new(&b->L, s[f].n), hi[f] = lower_lv_new(&b->L, s[f].n);
			for (int t = 0; t < s[f].n; t++) {
				LLVMValueRef v = lower_lv_at(s[f], t);
				if (w == 2) {
					lo[f].c[t] = LLVMBuildExtractElement(b->L.b, v, LLVMConstInt(b->i32, 0, 0), "");
					hi[f].c[t] = LLVMBuildExtractElement(b->L.b, v, LLVMConstInt(b->i32, 1, 0), "");
					continue;
				}
				LLVMValueRef ml[32], mh[32];
				for (int l = 0; l < w / 2; l++)
					ml[l] = LLVMConstInt(b->i32, ordered ? 2 * l : l, 0),
					mh[l] = LLVMConstInt(b->i32, ordered ? 2 * l + 1 : l + w / 2, 0);
				lo[f].c[t] = LLVMBuildShuffleVector(b->L.b, v, v, LLVMConstVector(ml, w / 2), "");
				hi[f].c[t] = LLVMBuildShuffleVector(b->L.b, v, v, LLVMConstVector(mh, w / 2), "");
			}
		}
		lower_scope(&b->L, w / 2);
		kern_bind_params(b);
		kern_merge(b, lo, hi, m);
		memcpy(s, m, c->nstate * sizeof *s);
	}
}

/* The lifted states of positions j .. j+W-1 in out (the identity where
 * the mask is false: merging it changes nothing, by the identity law).
 * Returns that condition (NULL: every lane is lifted), id the identity. */
static LLVMValueRef lift_bound(B *b, LV *out, LV *id);

static LLVMValueRef lift_at(B *b, LLVMValueRef j, LV *out, LV *id)
{
	lower_scope(&b->L, b->L.W);
	if (!b->row_lanes && b->L.W == 1)
		kern_prefetch_cols(b, j, 1);
	kern_bind_inputs(b, j);
	return lift_bound(b, out, id);
}

/* lift_at's lift of the inputs already bound. */
static LLVMValueRef lift_bound(B *b, LV *out, LV *id)
{
	Carrier *c = b->k->c;
	kern_state_exprs(b, c->lift, out);
	int mask = c->mask && !b->unmasked;
	if (!mask && !b->lmask) {
		kern_apart_lift(b, out, NULL);
		return NULL;
	}
	LLVMValueRef cond = mask ? lower_lv_at(lower_expr(&b->L, c->mask), 0) : b->lmask;
	if (mask && b->lmask)
		cond = LLVMBuildAnd(b->L.b, cond, b->lmask, "");
	kern_identity(b, id);
	for (int f = 0; f < c->nstate; f++)
		for (int t = 0; t < out[f].n; t++)
			out[f].c[t] = LLVMBuildSelect(b->L.b, cond, out[f].c[t], lower_lv_at(id[f], t), "");
	kern_apart_lift(b, out, NULL);
	return cond;
}

/* x > y ? x : y, y when x is NaN: one vmaxps on x86, where maxnum takes
 * three (it must pick the number when either is NaN). */
static LLVMValueRef gt_max(B *b, LLVMValueRef x, LLVMValueRef y)
{
	return lower_sel_max(&b->L, x, y, 1);
}

/* g(d) of the max-rescale carrier for d <= 0, -inf or NaN: g(-inf) (an
 * identity's m, a masked-out lane) is 0 without a subnormal on the way,
 * as every exp gives (llvm_math.c). */
static LLVMValueRef g_of(B *b, LLVMValueRef d)
{
	return b->k->mr_g == EXPR_EXP ? math_exp_nonpos(&b->L, d) : math_exp2(&b->L, d);
}

/* Pairwise sum, or the max of v ignoring NaN as maxnum does: in
 * TREE_CHAINS chains, each value taken as x of gt_max onto its chain's
 * running max (-inf at first), which keeps the running max where the
 * value is NaN and so is never NaN itself; then the chains' maxima by a
 * tree.  n + TREE_CHAINS - 1 vmaxps, where turning each NaN into -inf
 * first and a tree took 2n - 1.  A lane of NaN only comes out -inf, not
 * NaN: its F is NaN either way, and merged with any state m is that
 * state's (maxnum drops NaN; the accumulator starts at the identity's m). */
enum { TREE_CHAINS = 4 };

static LLVMValueRef tree(B *b, LLVMValueRef *v, int n, int max)
{
	if (!max)
		return kern_monoid_tree(&b->L, EXPR_ADD, v, n);
	LLVMValueRef acc[TREE_CHAINS];
	int K = n < TREE_CHAINS ? n : TREE_CHAINS;
	for (int t = 0; t < n; t++)
		acc[t % K] = gt_max(b, v[t], t < K ? lower_const(&b->L, TY_F32, -INFINITY) : acc[t % K]);
	return kern_monoid_tree(&b->L, EXPR_MAX, acc, K);
}

LLVMValueRef kern_monoid_tree(Lower *L, Op op, LLVMValueRef *v, int n)
{
	for (int s = 1; s < n; s *= 2)
		for (int t = 0; t + s < n; t += 2 * s) {
			LLVMValueRef x = v[t], y = v[t + s];
			switch (op) {
			case EXPR_ADD: v[t] = LLVMBuildFAdd(L->b, x, y, ""); break;
			case EXPR_MUL: v[t] = LLVMBuildFMul(L->b, x, y, ""); break;
			default: /* x > y ? x : y (gt_max), x < y ? x : y */
				v[t] = lower_sel_max(L, x, y, op == EXPR_MAX);
			}
		}
	return v[0];
}

/* fold_max_rescale's update of field f, whose lift is a staged column
 * input, as a loop over its components in memory (b->obuf[f]): each the
 * accumulator's term, then a multiply-add of each of the T positions'
 * broadcast component; the very chain fold_max_rescale builds. */
static void fold_loop(B *b, int f, LLVMValueRef *e, int T)
{
	Lower *L = &b->L;
	Carrier *c = b->k->c;
	const Var *v = ir_var(c->ir, c->lift[f]->k);
	int n = spec_decl_width(&c->state[f]), cw = kern_staged_width(c), off = kern_staged_off(c, v->slot);
	LLVMTypeRef vt = lower_vty(L, TY_F32), ft = lower_kty(L, TY_F32);
	LLVMValueRef i = kern_count_open(b, "fold");
	LLVMValueRef p = LLVMBuildGEP2(L->b, vt, b->obuf[f], &i, 1, "");
	LLVMValueRef x = LLVMBuildFMul(L->b, LLVMBuildLoad2(L->b, vt, p, ""), e[T], "");
	LLVMValueRef id = lower_splat(L, LLVMConstReal(ft, c->identity[f]->num));
	for (int t = 0; t < T; t++) {
		LLVMValueRef ki = LLVMBuildAdd(L->b, i, ci64(b, (long long)t * cw + off), "");
		LLVMValueRef kv = lower_splat(L, LLVMBuildLoad2(L->b, ft, LLVMBuildGEP2(L->b, ft, b->colbuf, &ki, 1, ""), ""));
		if (b->tile_cond[t]) /* lift_at's: the identity where the mask is false */
			kv = LLVMBuildSelect(L->b, b->tile_cond[t], kv, id, "");
		LLVMValueRef args[3] = {kv, e[t], x};
		x = lower_intrinsic(L, "llvm.fmuladd", vt, args, 3);
	}
	LLVMBuildStore(L->b, x, p);
	kern_count_close(b, i, n, b->k->loop_unroll);
}

/* The DOT_CHUNK floats at buf[i] as one vector: its address, and its
 * load, aligned as a float, which is all buf promises. */
static LLVMValueRef chunk_ptr(B *b, LLVMValueRef buf, LLVMValueRef i)
{
	LLVMTypeRef ft = lower_kty(&b->L, TY_F32);
	return LLVMBuildBitCast(b->L.b, LLVMBuildGEP2(b->L.b, ft, buf, &i, 1, ""),
				LLVMPointerType(LLVMVectorType(ft, DOT_CHUNK), 0), "");
}

static LLVMValueRef chunk_load(B *b, LLVMValueRef buf, LLVMValueRef i)
{
	LLVMValueRef v = LLVMBuildLoad2(b->L.b, LLVMVectorType(lower_kty(&b->L, TY_F32), DOT_CHUNK), chunk_ptr(b, buf, i), "");
	LLVMSetAlignment(v, 4);
	return v;
}

/* fold_max_rescale's update of field f in one lane (one_lane_chunks):
 * its components in memory (b->obuf[f]) DOT_CHUNK at a time, each
 * position's staged component times its e[t], the accumulator's times
 * e[T], summed by the tree that sums each component unrolled, so the
 * bits are the same. */
static void fold_chunks(B *b, int f, LLVMValueRef *e, int T)
{
	Lower *L = &b->L;
	Carrier *c = b->k->c;
	const Var *v = ir_var(c->ir, c->lift[f]->k);
	int n = spec_decl_width(&c->state[f]), cw = kern_staged_width(c), off = kern_staged_off(c, v->slot);
	LLVMTypeRef ft = lower_kty(L, TY_F32), vt = LLVMVectorType(ft, DOT_CHUNK);
	LLVMValueRef id[DOT_CHUNK], x[VTILE + 1], es[VTILE + 1];
	for (int l = 0; l < DOT_CHUNK; l++)
		id[l] = LLVMConstReal(ft, c->identity[f]->num);
	for (int t = 0; t <= T; t++) { /* e[t] in every lane, outside the loop */
		LLVMValueRef u = LLVMBuildInsertElement(L->b, LLVMGetUndef(vt), e[t], LLVMConstInt(b->i32, 0, 0), "");
		es[t] = LLVMBuildShuffleVector(L->b, u, u, LLVMConstNull(LLVMVectorType(b->i32, DOT_CHUNK)), "");
	}
	LLVMValueRef i = kern_count_open(b, "fold");
	LLVMValueRef at = LLVMBuildMul(L->b, i, ci64(b, DOT_CHUNK), "");
	LLVMValueRef acc = chunk_load(b, b->obuf[f], at);
	for (int t = 0; t < T; t++) {
		LLVMValueRef kv = chunk_load(b, b->colbuf, LLVMBuildAdd(L->b, at, ci64(b, (long long)t * cw + off), ""));
		if (b->tile_cond[t]) /* lift_at's: the identity where the mask is false */
			kv = LLVMBuildSelect(L->b, b->tile_cond[t], kv, LLVMConstVector(id, DOT_CHUNK), "");
		x[t] = LLVMBuildFMul(L->b, kv, es[t], "");
	}
	x[T] = LLVMBuildFMul(L->b, acc, es[T], "");
	LLVMSetAlignment(LLVMBuildStore(L->b, tree(b, x, T + 1, 0), chunk_ptr(b, b->obuf[f], at)), 4);
	kern_count_close(b, i, n / DOT_CHUNK, 2);
}

/* The constant v in x's type, a vector's lanes or a scalar. */
static LLVMValueRef const_like(LLVMValueRef x, double v)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	if (LLVMGetTypeKind(t) != LLVMVectorTypeKind)
		return LLVMConstReal(t, v);
	LLVMValueRef c[64];
	unsigned n = LLVMGetVectorSize(t);
	for (unsigned i = 0; i < n; i++)
		c[i] = LLVMConstReal(LLVMGetElementType(t), v);
	return LLVMConstVector(c, n);
}

/* Whether the guarded rescale (llvm_tile.c) is 1 somewhere g(m - Ms) is
 * not: M, the maximum (a vector's lanes or a scalar), is +inf
 * (MR_GUARD_INF) or infinite (MR_GUARD_MAX) in some lane. */
static LLVMValueRef guard_needed(B *b, LLVMValueRef M)
{
	LLVMBuilderRef lb = b->L.b;
	LLVMValueRef odd = LLVMBuildFCmp(lb, LLVMRealOEQ, M, const_like(M, INFINITY), "");
	if (b->k->mr_guard == MR_GUARD_MAX)
		odd = LLVMBuildOr(lb, odd, LLVMBuildFCmp(lb, LLVMRealOEQ, M, const_like(M, -INFINITY), ""), "");
	if (LLVMGetTypeKind(LLVMTypeOf(odd)) == LLVMVectorTypeKind)
		odd = lower_intrinsic(&b->L, "llvm.vector.reduce.or", LLVMTypeOf(odd), &odd, 1);
	return odd;
}

/* The guarded rescale of a state whose m is m, given e = g(m - Ms): 1
 * where m is +inf (MR_GUARD_INF) or the maximum M (MR_GUARD_MAX, in m's
 * lanes), else e. */
static LLVMValueRef guard_rescale(B *b, LLVMValueRef m, LLVMValueRef M, LLVMValueRef e)
{
	LLVMBuilderRef lb = b->L.b;
	LLVMValueRef at = b->k->mr_guard == MR_GUARD_MAX ? M : const_like(m, INFINITY);
	return LLVMBuildSelect(lb, LLVMBuildFCmp(lb, LLVMRealOEQ, m, at, ""), const_like(e, 1), e, "guarded");
}

/* Whether the fields that fold apart from mi are joins (topk lists, max,
 * min; kern_filter_fits): then a tile none of whose positions would
 * change the accumulator on its own leaves it as it is. */
static int own_joins(const Carrier *c, int mi)
{
	for (int f = 0; f < c->nstate; f++) {
		if (f == mi || !tile_own_fold(c, mi, f))
			continue;
		const Expr *e = c->merge[f];
		int n = e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX ? 4 : e->op == EXPR_MAX || e->op == EXPR_MIN ? 2 : 0;
		if (!n)
			return 0;
		for (int t = 0; t < n; t++)
			if (!is_state(c, e->a[t], t < n / 2 ? STATE_A : STATE_B))
				return 0;
	}
	return 1;
}

/* The lifted value of topk list v (a list of one pair, its other slots
 * the empty -inf, or a mask's select of two such), or NULL where v is
 * not one. */
static LLVMValueRef single_value(Lower *L, LV v)
{
	LLVMValueRef none = lower_const(L, TY_F32, -INFINITY);
	for (int k = 1; k < v.n; k++) {
		LLVMValueRef x = v.c[k];
		if (x != none && !(LLVMIsASelectInst(x) && LLVMGetOperand(x, 1) == none && LLVMGetOperand(x, 2) == none))
			return NULL;
	}
	return v.n ? v.c[0] : NULL;
}

/* Whether any of the first T - 1 states of s (lifted positions) would
 * change the last (the accumulator) merged on its own, in any lane: the
 * fields that fold apart, topk's insertions probed (reduce_filtered).
 * A topk list of k lifted as one pair is asked more: whether its value is
 * below the largest of the lanes' k-th values, Tv.  Some lane then holds
 * k pairs of values above it, and keeps k such while it folds on; the
 * lanes' lists meet only in topk merges (the halving, the accumulators'
 * pairs), whose result is the top k of their union: the pair could never
 * reach it, nor displace a pair that does, so leaving it out changes
 * nothing.  Against the lane's own k-th value most positions of a long
 * row's early part would still enter, each lane's list filling apart
 * (softmax's top 4 beside (m, l), 256 x 65536: a fold in three tiles of
 * four). */
static LLVMValueRef own_changed(B *b, LV **s, int T)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int ns = c->nstate, mi = b->k->mr_field;
	LV *m = calloc(ns, sizeof *m);
	LLVMValueRef any = NULL, *tv = calloc(ns, sizeof *tv);
	for (int f = 0; f < ns; f++)
		if (f != mi && tile_own_fold(c, mi, f) && c->merge[f]->op == EXPR_TOPK) {
			LLVMValueRef last = lower_lv_at(s[T - 1][f], s[T - 1][f].n - 1);
			tv[f] = L->W > 1 ? lower_splat(L, hreduce(b, last, L->W, 1)) : last;
		}
	for (int t = 0; t < T - 1; t++) {
		lower_scope(L, L->W);
		kern_bind_params(b);
		L->probe = 1, L->changed = NULL;
		kern_merge(b, s[T - 1], s[t], m);
		LLVMValueRef ch = NULL;
		L->probe = 0, L->changed = NULL;
		for (int f = 0; f < ns; f++) {
			if (f == mi || !tile_own_fold(c, mi, f))
				continue;
			if (c->merge[f]->op == EXPR_TOPK || c->merge[f]->op == EXPR_TOPK_IDX) {
				/* the value field's test covers its index field */
				if (c->merge[f]->op == EXPR_TOPK_IDX)
					continue;
				LLVMValueRef x = single_value(L, s[t][f]);
				LLVMValueRef d = x ? LLVMBuildFCmp(L->b, LLVMRealUGE, x, tv[f], "")
						   : LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0);
				if (!x && L->W > 1)
					d = lower_splat(L, d);
				ch = ch ? LLVMBuildOr(L->b, ch, d, "") : d;
				continue;
			}
			for (int k = 0; k < m[f].n; k++) {
				LLVMValueRef x = lower_lv_at(m[f], k), y = lower_lv_at(s[T - 1][f], k);
				if (x == y)
					continue;
				LLVMValueRef d = differs(b, x, y);
				ch = ch ? LLVMBuildOr(L->b, ch, d, "") : d;
			}
		}
		if (ch)
			any = any ? LLVMBuildOr(L->b, any, ch, "") : ch;
	}
	free(m);
	free(tv);
	if (!any)
		return LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 0, 0);
	if (LLVMGetTypeKind(LLVMTypeOf(any)) == LLVMVectorTypeKind)
		any = lower_intrinsic(L, "llvm.vector.reduce.or", LLVMTypeOf(any), &any, 1);
	return any;
}

/* Lifted positions s[0 .. T-1] folded onto acc, in order, into out:
 * chains of TILE_CHAIN positions, the first from acc and the others from
 * the identity, each position merged on the right of its chain's state,
 * as an accumulator takes it; then the chains by a tree, earlier on the
 * left.  Where the accumulator may hold later positions (b->any_order:
 * the commutative lanes' streams), the first chain starts at the
 * identity too and the tile's state merges onto acc: a lift on the
 * right of a state of later positions is no step of any left fold
 * (argmax breaking ties by min(a.k, b.k) kept a NaN's position 921 over
 * an inf's at 1033 in its lane, which the left fold reaches first).  A tree over the lifts themselves put a lift on the left of its
 * neighbour's, and a merge that skips a NaN on its right may keep one on
 * its left: argmin_first's pos, where(b.low < a.low || ..., b.pos,
 * a.pos), with a lift of NaN as a kept the NaN's position past a smaller
 * value after it, which the left fold, and check's trees of one-position
 * accumulators, skip.  T + T/TILE_CHAIN - 1 merges (one more where
 * b->any_order), where the tree and the accumulator's merge took T; the
 * identity's constants fold into the first merge of each chain.  Where
 * the identity leaves every lift as it is, bit for bit (k->lift_chains:
 * check_lifts_neutral), a chain from the identity starts at its first
 * lift instead, the same state one merge sooner: T - 1 merges, T where
 * b->any_order (an argmax of |x| with its value: 1.25 merges a vector
 * in tiles of 4, of some 10 compares each, then 1).  s's states are
 * overwritten. */
enum { TILE_CHAIN = 4 };

void kern_fold_chains(B *b, LV *acc, LV **s, int T, LV *out)
{
	int ns = b->k->c->nstate, n = 0;
	LV *e = calloc((size_t)2 * ns, sizeof *e), *tmp = e + ns, *heads[65];
	lower_scope(&b->L, b->L.W);
	kern_identity(b, e);
	for (int g = 0; g < T; g += TILE_CHAIN) {
		LV *x = g || b->any_order ? e : acc;
		int t = g;
		if (x == e && b->k->lift_chains) /* e+s[g] is s[g] */
			x = s[t++];
		for (; t < g + TILE_CHAIN && t < T; t++) {
			lower_scope(&b->L, b->L.W);
			kern_bind_params(b);
			kern_merge(b, x, s[t], tmp);
			memcpy(s[g], tmp, ns * sizeof *tmp);
			x = s[g];
		}
		heads[n++] = s[g];
	}
	kern_fold_tree(b, heads, n, tmp);
	if (b->any_order) {
		lower_scope(&b->L, b->L.W);
		kern_bind_params(b);
		kern_merge(b, acc, heads[0], tmp);
		memcpy(heads[0], tmp, ns * sizeof *tmp);
	}
	memcpy(out, heads[0], ns * sizeof *out);
	free(e);
}

/* The fields of a max-rescale carrier that fold apart (tile_own_fold in
 * llvm_tile.c) of T states into out: s[T - 1] (every caller's
 * accumulator, the earlier range where order matters) and the others
 * after it, in order (kern_fold_chains).  The spec's whole merge is
 * lowered at each step; what the other fields would make of it is dead
 * code. */
static void fold_own(B *b, LV **s, int T, LV *out)
{
	Carrier *c = b->k->c;
	int ns = c->nstate, mi = b->k->mr_field;
	if (!tile_has_own(c, mi))
		return;
	if (T == 1) {
		for (int f = 0; f < ns; f++)
			if (f != mi && tile_own_fold(c, mi, f))
				out[f] = s[0][f];
		return;
	}
	LV *x = calloc((size_t)(T + 1) * ns, sizeof *x), *m = x + (size_t)T * ns;
	for (int t = 0; t < T; t++)
		memcpy(x + (size_t)t * ns, s[t], ns * sizeof *x);
	LLVMBasicBlockRef from = NULL, join = NULL;
	if (own_joins(c, mi)) {
		LLVMValueRef any = own_changed(b, s, T);
		from = LLVMGetInsertBlock(b->L.b);
		LLVMBasicBlockRef fold = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "own_fold");
		join = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "own_kept");
		LLVMValueRef br = LLVMBuildCondBr(b->L.b, any, fold, join);
		LLVMValueRef w[3] = {LLVMMDStringInContext(b->L.ctx, "branch_weights", 14), LLVMConstInt(b->i32, 1, 0),
				     LLVMConstInt(b->i32, 16, 0)};
		LLVMSetMetadata(br, LLVMGetMDKindIDInContext(b->L.ctx, "prof", 4), LLVMMDNodeInContext(b->L.ctx, w, 3));
		LLVMPositionBuilderAtEnd(b->L.b, fold);
	}
	LV *leaf[65];
	for (int t = 0; t < T - 1; t++)
		leaf[t] = x + (size_t)t * ns;
	kern_fold_chains(b, x + (size_t)(T - 1) * ns, leaf, T - 1, m);
	if (join) {
		LLVMBasicBlockRef folded = LLVMGetInsertBlock(b->L.b);
		LLVMBuildBr(b->L.b, join);
		LLVMPositionBuilderAtEnd(b->L.b, join);
		for (int f = 0; f < ns; f++) {
			if (f == mi || !tile_own_fold(c, mi, f))
				continue;
			LV kept = s[T - 1][f], got = m[f];
			m[f] = lower_lv_new(&b->L, kept.n);
			for (int t = 0; t < kept.n; t++) {
				LLVMValueRef in[2] = {lower_lv_at(kept, t), lower_lv_at(got, t)};
				LLVMBasicBlockRef bb[2] = {from, folded};
				m[f].c[t] = LLVMBuildPhi(b->L.b, LLVMTypeOf(in[0]), "");
				LLVMAddIncoming(m[f].c[t], in, bb, 2);
			}
		}
		lower_scope(&b->L, b->L.W);
		kern_bind_params(b);
	}
	for (int f = 0; f < ns; f++)
		if (f != mi && tile_own_fold(c, mi, f))
			out[f] = m[f];
	free(x);
}

/* The n-ary merge of a max-rescale carrier (llvm_tile.c) over T states
 * (a tile's lifted positions and its accumulator):
 * M = max m_t, F = sum f_t g(m_t - M).  An all -inf lane subtracts 0
 * instead of M, so that g(-inf) = 0 stands in for the spec's rule
 * (-inf) - (-inf) = -inf without a select per position; m_t - M is
 * never positive otherwise (NaN aside), so exp needs no overflow side.
 * A guarded merge's rescale differs only where M is infinite, in a tile
 * that holds +inf (or, MR_GUARD_MAX, only -inf): a branch per tile to
 * the selects, not a select per position. */
static void fold_max_rescale(B *b, LV **s, int T, LV *out)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	int mi = k->mr_field;
	LLVMValueRef m[65], e[65], v[65];
	for (int t = 0; t < T; t++)
		m[t] = v[t] = s[t][mi].c[0];
	LLVMValueRef M = tree(b, v, T, 1);
	LLVMValueRef none = LLVMBuildFCmp(L->b, LLVMRealOEQ, M, lower_const(L, TY_F32, -INFINITY), "");
	LLVMValueRef Ms = LLVMBuildSelect(L->b, none, lower_const(L, TY_F32, 0), M, "");
	for (int t = 0; t < T; t++)
		e[t] = g_of(b, LLVMBuildFSub(L->b, m[t], Ms, ""));
	if (k->mr_guard != MR_PLAIN) {
		LLVMBasicBlockRef from = LLVMGetInsertBlock(L->b);
		LLVMBasicBlockRef fix = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "infinite_max");
		LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "rescaled");
		LLVMBuildCondBr(L->b, guard_needed(b, M), fix, join);
		LLVMPositionBuilderAtEnd(L->b, fix);
		LLVMValueRef fixed[65];
		for (int t = 0; t < T; t++)
			fixed[t] = guard_rescale(b, m[t], M, e[t]);
		LLVMBuildBr(L->b, join);
		LLVMPositionBuilderAtEnd(L->b, join);
		for (int t = 0; t < T; t++) {
			LLVMValueRef phi = LLVMBuildPhi(L->b, LLVMTypeOf(e[t]), "");
			LLVMValueRef in[2] = {e[t], fixed[t]};
			LLVMBasicBlockRef bb[2] = {from, fix};
			LLVMAddIncoming(phi, in, bb, 2);
			e[t] = phi;
		}
	}
	out[mi] = lower_lv_new(L, 1);
	out[mi].c[0] = M;
	for (int f = 0; f < k->c->nstate; f++) {
		if (f == mi || tile_own_fold(k->c, mi, f))
			continue;
		int fold = tile_extra_fold(k->c, f);
		if (fold >= 0) { /* a field that merges by itself: its plain sum or max */
			for (int t = 0; t < T; t++)
				v[t] = s[t][f].c[0];
			out[f] = lower_lv_new(L, 1);
			out[f].c[0] = tree(b, v, T, fold == EXPR_MAX);
			continue;
		}
		if (b->obuf && b->obuf[f]) {
			if (L->W == 1)
				fold_chunks(b, f, e, T - 1);
			else
				fold_loop(b, f, e, T - 1);
			out[f] = (LV){0};
			continue;
		}
		int n = spec_decl_width(&k->c->state[f]);
		out[f] = lower_lv_new(L, n);
		for (int i = 0; i < n; i++) {
			if (L->fma) { /* the accumulator's term, then one multiply-add a position */
				LLVMValueRef x = LLVMBuildFMul(L->b, lower_lv_at(s[T - 1][f], i), e[T - 1], "");
				for (int t = 0; t < T - 1; t++) {
					LLVMValueRef args[3] = {lower_lv_at(s[t][f], i), e[t], x};
					x = lower_intrinsic(L, "llvm.fmuladd", LLVMTypeOf(x), args, 3);
				}
				out[f].c[i] = x;
				continue;
			}
			for (int t = 0; t < T; t++)
				v[t] = LLVMBuildFMul(L->b, lower_lv_at(s[t][f], i), e[t], "");
			out[f].c[i] = tree(b, v, T, 0);
		}
	}
	fold_own(b, s, T, out);
}

/* States in order (the ordered fold's chains) by a balanced tree of the
 * spec's merges, earlier on the left.  The result is in s[0]. */
void kern_fold_tree(B *b, LV **s, int T, LV *tmp)
{
	int ns = b->k->c->nstate;
	for (int st = 1; st < T; st *= 2)
		for (int t = 0; t + st < T; t += 2 * st) {
			lower_scope(&b->L, b->L.W);
			kern_bind_params(b);
			kern_merge(b, s[t], s[t + st], tmp);
			memcpy(s[t], tmp, ns * sizeof *tmp);
		}
}

/* The first position from lo (at most hi) where the first element input
 * of row b->i sits at a boundary of one vector (64 bytes at most):
 * vectors from there load whole cache lines (arrays from calloc start 16
 * bytes past one, and a load that straddles two lines costs two).  It is
 * less than a vector past lo, so one masked vector covers the gap; lo
 * when there is no element input, or fewer than ALIGN_MIN positions: on
 * short rows the masked vector costs more than the split loads. */
enum { ALIGN_MIN = 1024 };
_Static_assert((int)PAIR_LEN <= (int)ALIGN_MIN, "rows side by side take no alignment peel");

static LLVMValueRef aligned_from(B *b, LLVMValueRef lo, LLVMValueRef hi)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	if (!c->nelem)
		return lo;
	LLVMTypeRef et = storage_ty(b, c->elem[0].storage);
	LLVMValueRef at = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, b->i, b->len, ""), lo, "");
	if (spec_decl_width(&c->elem[0]) > 1)
		at = LLVMBuildMul(L->b, at, ci64(b, spec_decl_width(&c->elem[0])), "");
	LLVMValueRef p = LLVMBuildPtrToInt(L->b, kern_ptr_at(b, b->inp[0], et, at), b->i64, "");
	long long size = (long long)run_kind_size((TyKind)c->elem[0].storage) * spec_decl_width(&c->elem[0]);
	long long align = 64;
	while (align > 1 && align > size * b->L.W)
		align /= 2;
	LLVMValueRef mis = LLVMBuildAnd(L->b, LLVMBuildNeg(L->b, p, ""), ci64(b, align - 1), "");
	LLVMValueRef start = LLVMBuildAdd(L->b, lo, LLVMBuildUDiv(L->b, mis, ci64(b, size), ""), "");
	start = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, start, hi, ""), start, hi, "");
	LLVMValueRef longer = LLVMBuildICmp(L->b, LLVMIntSGE, LLVMBuildSub(L->b, hi, lo, ""), ci64(b, ALIGN_MIN), "");
	return LLVMBuildSelect(L->b, longer, start, lo, "");
}

/* acc = acc (+) the vector at j, its lanes from hi on masked out. */
static void masked_into(B *b, LV *acc, LLVMValueRef j, LLVMValueRef hi, LV *lifted, LV *tmp)
{
	int W = b->k->lanes;
	lower_scope(&b->L, W);
	b->lmask = kern_lanes_below(b, j, hi);
	lift_at(b, j, lifted, tmp);
	b->lmask = NULL;
	lower_scope(&b->L, W);
	kern_bind_params(b);
	kern_slots_load(b, acc, b->st);
	kern_merge(b, b->st, lifted, tmp);
	kern_slots_store(b, acc, tmp);
}

/* Software prefetch of the one-pass reduce loop: PREFETCH_BYTES ahead,
 * into L1.  The hardware prefetchers alone leave a single core's stream
 * short of what it can read (Welford, rows of 32768 from memory, one
 * thread: 7.5-8.4 GB/s without, 10.0-10.1 with 8 KiB ahead into L2), and
 * with both cores reading, 4 KiB into L1 keeps more lines coming than 8
 * KiB into L2 (Welford, 8192 x 32768, two threads, medians of 5 runs
 * alternated: 20.0 -> 22.4 GB/s; one thread 9.7 -> 10.6).  In cache it
 * costs nothing measurable.  The two-pass loops, whose rows stay in L2
 * for their second pass, prefetch the next rows into L2 instead. */
enum { PREFETCH_BYTES = 4096 };

/* Prefetch the cache lines of the element inputs that n positions from j
 * cover, ahead bytes on (PREFETCH_BYTES; past the row: the next row,
 * which the thread takes next; prefetches never fault). */
static void prefetch_lines(B *b, LLVMValueRef j, long long n, long long ahead)
{
	Carrier *c = b->k->c;
	if (!c->nelem)
		return;
	long long size = (long long)run_kind_size((TyKind)c->elem[0].storage) * spec_decl_width(&c->elem[0]);
	long long step = 64 / size > 0 ? 64 / size : 1;
	for (long long t = 0; t < n; t += step)
		kern_prefetch_at(b, j, ci64(b, ahead / size + t), PREFETCH_L1);
}

/* Rows are read as STREAMS streams side by side (the vectors of one
 * iteration come from STREAMS equal segments of the range, then the rest
 * follows in order): the hardware prefetchers follow each, so a core has
 * more reads in flight than on one stream (a plain read loop on this
 * 2-core AVX-512 host: 9.3 -> 12.4 GB/s on one core, 16.1 -> 22.8 on
 * two; 8 streams no better than 4).  Any order of positions will do, as
 * these loops run only commutative carriers. */
enum { STREAMS = 4 };

/* Streams for an iteration of n vectors: STREAMS, or 1 if n is not a multiple. */
static int streams(int n) { return n % STREAMS ? 1 : STREAMS; }

/* The length of each of S streams over [lo, hi): a multiple of per. */
static LLVMValueRef stream_len(B *b, LLVMValueRef lo, LLVMValueRef hi, int S, long long per)
{
	LLVMValueRef n = LLVMBuildSub(b->L.b, hi, lo, "");
	return LLVMBuildMul(b->L.b, LLVMBuildSDiv(b->L.b, n, ci64(b, S * per), ""), ci64(b, per), "");
}

/* Position j + q * Ls + v: v positions into stream q at j. */
static LLVMValueRef stream_at(B *b, LLVMValueRef j, LLVMValueRef Ls, long long q, long long v)
{
	LLVMValueRef at = q ? LLVMBuildAdd(b->L.b, j, LLVMBuildMul(b->L.b, Ls, ci64(b, q), ""), "") : j;
	return v ? LLVMBuildAdd(b->L.b, at, ci64(b, v), "") : at;
}

/* The vector loop: each accumulator takes a tile of T vectors per
 * iteration, from the row's streams.  A max-rescale tile folds together with its accumulator in
 * one n-ary merge; a transported one (llvm_tf.c) as monoid sums, converted
 * back; any other tile by a tree; either of those then one spec merge
 * into the accumulator.  Either way the accumulator's dependency chain is
 * short per tile, and the tiles' independent work overlaps.  Full vectors
 * left over go one by one into accumulator 0, then a masked one.  Returns
 * where the scalar tail starts (hi: there is none left). */
static LLVMValueRef reduce_vectors(B *b, LV **acc, LLVMValueRef lo, LLVMValueRef hi, LV *tmp)
{
	Kern *k = b->k;
	int ns = k->c->nstate, T = k->tile, W = k->lanes;
	LV *lifted = calloc((size_t)T * ns, sizeof *lifted), *s[65];
	LLVMValueRef cond[65];
	int S = streams(k->accs * T);
	long long per = (long long)k->accs * T * W / S; /* positions of one stream per iteration */
	LLVMValueRef Ls = stream_len(b, lo, hi, S, per);
	/* The lanes' positions j: a vector carried from iteration to
	 * iteration, and each vector's an add of a constant offset to it, where
	 * a broadcast of its position a vector took port 5 on Intel beside the
	 * merges' compares into mask registers */
	lower_scope(&b->L, W);
	LLVMTypeRef jt = LLVMVectorType(b->i32, W);
	LLVMValueRef jvp = alloca_(b, jt);
	LLVMBuildStore(b->L.b, kern_lanes_j(b, lo), jvp);
	Loop l = kern_loop_begin(b, lo, LLVMBuildAdd(b->L.b, lo, Ls, ""), per);
	LLVMValueRef jv = LLVMBuildLoad2(b->L.b, jt, jvp, "");
	for (int q = 0; q < S; q++)
		prefetch_lines(b, stream_at(b, l.iv, Ls, q, 0), per, PREFETCH_BYTES);
	for (int a = 0; a < k->accs; a++) {
		/* the tile's pairs for the lists kept apart tested together */
		b->apart_hold = 1;
		for (int t = 0; t < T; t++) {
			long long u = (long long)a * T + t;
			s[t] = lifted + t * ns;
			LLVMValueRef off = stream_at(b, ci64(b, 0), Ls, u * W / per, u * W % per);
			lower_scope(&b->L, W);
			b->jlanes = LLVMBuildAdd(b->L.b, jv, lower_splat(&b->L, LLVMBuildTrunc(b->L.b, off, b->i32, "")), "");
			cond[t] = lift_at(b, stream_at(b, l.iv, Ls, u * W / per, u * W % per), s[t], tmp);
			b->jlanes = NULL;
		}
		lower_scope(&b->L, W);
		kern_apart_flush(b);
		b->apart_hold = 0;
		lower_scope(&b->L, W);
		kern_bind_params(b);
		kern_slots_load(b, acc[a], b->st);
		b->any_order = 1;
		if (k->mr_field >= 0 && T > 1) {
			/* the accumulator is one more state of the n-ary fold: no
			 * spec merge per tile, and its chain is one max and one fma */
			s[T] = b->st;
			fold_max_rescale(b, s, T + 1, tmp);
		} else if (k->tf) {
			kern_tf_tile(b, s, cond, T, tmp);
		} else {
			kern_fold_chains(b, b->st, s, T, tmp);
		}
		b->any_order = 0;
		kern_slots_store(b, acc[a], tmp);
	}
	/* the other row's map keeps pace: as many of its positions */
	for (long long m = 0; b->riding && m < (per * S > MAP_STEP ? per * S / MAP_STEP : 1); m++)
		kern_ride_step(b);
	lower_scope(&b->L, W);
	LLVMBuildStore(b->L.b, LLVMBuildAdd(b->L.b, jv, lower_splat(&b->L, LLVMConstInt(b->i32, (unsigned long long)per, 0)), ""), jvp);
	kern_loop_end(b, &l);
	Loop v = kern_loop_begin(b, stream_at(b, lo, Ls, S, 0), hi, W);
	lower_scope(&b->L, W);
	kern_step_slots(b, acc[0], v.iv, tmp);
	kern_loop_end(b, &v);
	/* the last, partial vector: masked loads, the identity past hi (one
	 * merge, not up to W - 1 scalar ones: short rows are mostly tail);
	 * none where the vectors reach hi */
	LLVMValueRef last = kern_loop_final(b, &v);
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(b->L.b, LLVMIntSLT, last, hi, ""));
	masked_into(b, acc[0], last, hi, lifted, tmp);
	kern_if_end(b, done);
	free(lifted);
	return hi;
}

/* ---- two passes over a row that fits in L2 (max-rescale carriers) ---- */

/* Independent vectors per iteration: pass 1 is a chain of one max each (a
 * few cycles latency, two per cycle), pass 2 of one exp and one fma. */
enum { PASS1_UNROLL = 8, PASS2_UNROLL = 4 };

/* Lanes of v reduced to a scalar: gt_max (max) or fadd, halving. */
static LLVMValueRef hreduce(B *b, LLVMValueRef v, int W, int max)
{
	for (int w = W; w > 1; w /= 2) {
		LLVMValueRef ml[32], mh[32];
		for (int l = 0; l < w / 2; l++)
			ml[l] = LLVMConstInt(b->i32, l, 0), mh[l] = LLVMConstInt(b->i32, l + w / 2, 0);
		LLVMValueRef lo, hi;
		if (w == 2) {
			lo = LLVMBuildExtractElement(b->L.b, v, ml[0], "");
			hi = LLVMBuildExtractElement(b->L.b, v, mh[0], "");
		} else {
			lo = LLVMBuildShuffleVector(b->L.b, v, v, LLVMConstVector(ml, w / 2), "");
			hi = LLVMBuildShuffleVector(b->L.b, v, v, LLVMConstVector(mh, w / 2), "");
		}
		v = max ? gt_max(b, lo, hi) : LLVMBuildFAdd(b->L.b, lo, hi, "");
	}
	return v;
}

/* g(m - Ms) of pass 2 for positions j .. j+W-1 when the map reads
 * k->rowmap_g = g(lift.m - m) back (kern_build_rowmap): g of the lifted m
 * before the mask, which is the map's value wherever the row's m is Ms
 * (not -inf), kept at scratch[j]; then the mask's identity where it is
 * false, as lift_at would have it.  Where the mask holds, lift.m <= Ms
 * (or NaN), so exp's upper clamp (the map's) changes nothing and the sum
 * is the one kern_reduce_two_pass makes without a map; without a mask
 * that holds at every position, and the clamp is left out. */
static LLVMValueRef kept_g(B *b, LLVMValueRef j, LLVMValueRef Ms, LLVMValueRef cond, LV *id)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	LLVMValueRef ms = lower_splat(L, Ms);
	LLVMValueRef raw = lower_expr(L, k->c->lift[k->mr_field]).c[0];
	LLVMValueRef d = LLVMBuildFSub(L->b, raw, ms, "");
	LLVMValueRef e = k->mr_g != EXPR_EXP ? math_exp2(L, d) : k->c->mask ? math_exp(L, d) : math_exp_nonpos(L, d);
	kern_store_lanes(b, b->scratch, TY_F32, j, e);
	if (!cond)
		return e;
	d = LLVMBuildFSub(L->b, id[k->mr_field].c[0], ms, "");
	return LLVMBuildSelect(L->b, cond, e, g_of(b, d), "");
}

/* Prefetch the element inputs of row b->i at position j + ahead, into L1
 * or L2 (PREFETCH_L1, PREFETCH_L2). */
void kern_prefetch(B *b, LLVMValueRef p, int locality)
{
	Lower *L = &b->L;
	LLVMTypeRef i32 = b->i32, pt = b->i8p;
	unsigned id = LLVMLookupIntrinsicID("llvm.prefetch", 13);
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(L->mod, id, &pt, 1);
	LLVMTypeRef ft = LLVMIntrinsicGetType(L->ctx, id, &pt, 1);
	/* read, locality, data */
	LLVMValueRef a[4] = {LLVMBuildBitCast(L->b, p, pt, ""), LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, (unsigned)locality, 0),
			     LLVMConstInt(i32, 1, 0)};
	LLVMBuildCall2(L->b, ft, f, a, 4, "");
}

void kern_prefetch_at(B *b, LLVMValueRef j, LLVMValueRef ahead, int locality)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	LLVMValueRef at = LLVMBuildAdd(L->b, LLVMBuildAdd(L->b, LLVMBuildMul(L->b, b->i, b->len, ""), j, ""), ahead, "");
	for (int k = 0; k < c->nelem; k++) {
		int w = spec_decl_width(&c->elem[k]);
		LLVMValueRef e = w > 1 ? LLVMBuildMul(L->b, at, ci64(b, w), "") : at;
		kern_prefetch(b, kern_ptr_at(b, b->inp[k], storage_ty(b, c->elem[k].storage), e), locality);
	}
}

/* Prefetch every cache line of the element inputs that positions j ..
 * j + n - 1 of the row cover, ahead bytes on: a position of a vector
 * input spans several lines (o_lse's po, 256 bytes), which
 * kern_prefetch_at's one line a position leaves to the hardware. */
static void prefetch_span(B *b, LLVMValueRef j, long long n, long long ahead)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	LLVMValueRef at = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, b->i, b->len, ""), j, "");
	for (int k = 0; k < c->nelem; k++) {
		long long size = (long long)run_kind_size((TyKind)c->elem[k].storage) * spec_decl_width(&c->elem[k]);
		LLVMValueRef bytes = LLVMBuildMul(L->b, at, ci64(b, size), "");
		LLVMValueRef p = LLVMBuildGEP2(L->b, b->i8, b->inp[k], &bytes, 1, "");
		for (long long o = 0; o < n * size; o += 64) {
			LLVMValueRef off = ci64(b, ahead + o);
			kern_prefetch(b, LLVMBuildGEP2(L->b, b->i8, p, &off, 1, ""), PREFETCH_L1);
		}
	}
}

/* Pass 1 (R->Ms[0] NULL): acc[u] = max(acc[u], lifted m) over U vectors
 * at j, U / S from each of S streams of length Ls, for each of R's rows
 * in turn, so that their chains interleave.
 * Pass 2: acc[f * PASS2_UNROLL + u] += lifted f * g(lifted m - Ms) for each f != m
 * (a field that merges by itself: its plain sum or max, tile_extra_fold). */
static void two_pass_at(B *b, Rows *R, LLVMValueRef j, LLVMValueRef Ls, int S, int U, LV *lifted, LV *tmp)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	int W = k->lanes, mi = k->mr_field, ns = k->c->nstate;
	for (int u = 0; u < U; u++)
		for (int r = 0; r < R->n; r++) {
			LLVMValueRef *acc = R->acc[r], Ms = R->Ms[r];
			b->i = R->i[r], b->scratch = R->scratch[r];
			lower_scope(L, W);
			LLVMValueRef ju = stream_at(b, j, Ls, u / (U / S), (long long)(u % (U / S)) * W);
			LLVMValueRef cond = lift_at(b, ju, lifted, tmp);
			LLVMValueRef m = lifted[mi].c[0];
			LLVMTypeRef vt = lower_vty(L, TY_F32);
			if (!Ms) {
				LLVMValueRef a = LLVMBuildLoad2(L->b, vt, acc[u], "");
				LLVMBuildStore(L->b, gt_max(b, m, a), acc[u]);
				continue;
			}
			if (R->ahead[r])
				kern_prefetch_at(b, ju, R->ahead[r], PREFETCH_L2);
			LLVMValueRef e;
			if (b->scratch) {
				e = kept_g(b, ju, Ms, cond, tmp);
			} else {
				e = g_of(b, LLVMBuildFSub(L->b, m, lower_splat(L, Ms), ""));
			}
			if (R->Mg[r]) /* after kept_g: the map keeps its own g */
				e = guard_rescale(b, m, lower_splat(L, R->Mg[r]), e);
			for (int f = 0; f < ns; f++) {
				if (f == mi)
					continue;
				int fold = tile_extra_fold(k->c, f);
				LLVMValueRef a = LLVMBuildLoad2(L->b, vt, acc[f * PASS2_UNROLL + u], "");
				LLVMValueRef x = lifted[f].c[0], sum;
				if (fold == EXPR_MAX)
					sum = gt_max(b, x, a);
				else
					sum = LLVMBuildFAdd(L->b, a, fold == EXPR_ADD ? x : LLVMBuildFMul(L->b, x, e, ""), "");
				LLVMBuildStore(L->b, sum, acc[f * PASS2_UNROLL + u]);
			}
		}
}

/* One pass over [lo, hi): a masked vector up to the input's alignment
 * (aligned_from; one row only: rows side by side are shorter than
 * ALIGN_MIN, where it is lo), U vectors per iteration from the rows'
 * streams, then one at a time, then a masked one if any positions are
 * left. */
static void two_pass_loop(B *b, Rows *R, LLVMValueRef lo, LLVMValueRef hi, int U, LV *lifted, LV *tmp)
{
	int W = b->k->lanes;
	LLVMValueRef start = lo;
	lower_scope(&b->L, W);
	if (R->n == 1) {
		b->i = R->i[0];
		start = aligned_from(b, lo, hi);
		LLVMBasicBlockRef peel = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "peel");
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "aligned");
		LLVMBuildCondBr(b->L.b, LLVMBuildICmp(b->L.b, LLVMIntNE, start, lo, ""), peel, body);
		LLVMPositionBuilderAtEnd(b->L.b, peel);
		b->lmask = kern_lanes_below(b, lo, start);
		two_pass_at(b, R, lo, NULL, 1, 1, lifted, tmp);
		b->lmask = NULL;
		LLVMBuildBr(b->L.b, body);
		LLVMPositionBuilderAtEnd(b->L.b, body);
	}
	lower_scope(&b->L, W);
	int S = streams(U);
	LLVMValueRef Ls = stream_len(b, start, hi, S, (long long)U * W / S);
	Loop l = kern_loop_begin(b, start, LLVMBuildAdd(b->L.b, start, Ls, ""), (long long)U * W / S);
	two_pass_at(b, R, l.iv, Ls, S, U, lifted, tmp);
	if (b->riding)
		kern_ride_step(b);
	kern_loop_end(b, &l);
	Loop v = kern_loop_begin(b, stream_at(b, start, Ls, S, 0), hi, W);
	two_pass_at(b, R, v.iv, NULL, 1, 1, lifted, tmp);
	kern_loop_end(b, &v);
	LLVMValueRef last = kern_loop_final(b, &v);
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(b->L.b, LLVMIntSLT, last, hi, ""));
	lower_scope(&b->L, W);
	b->lmask = kern_lanes_below(b, last, hi);
	two_pass_at(b, R, last, NULL, 1, 1, lifted, tmp);
	b->lmask = NULL;
	kern_if_end(b, done);
}

/* Pass 2 of kern_reduce_two_pass, with the other row's map (b->ride):
 * along pass 2's main loop where its vectors may
 * (kern_build_rowmap_next), else before pass 2. */
static void pass_two(B *b, Rows *R, LLVMValueRef lo, LLVMValueRef hi, LV *lifted, LV *tmp)
{
	Lower *L = &b->L;
	if (!b->ride) {
		two_pass_loop(b, R, lo, hi, PASS2_UNROLL, lifted, tmp);
		return;
	}
	LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "ride");
	LLVMBasicBlockRef off = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "alone");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "pass2_done");
	LLVMBuildCondBr(L->b, b->ride->on, on, off);
	LLVMPositionBuilderAtEnd(L->b, on);
	kern_ride_begin(b);
	b->riding = 1;
	two_pass_loop(b, R, lo, hi, PASS2_UNROLL, lifted, tmp);
	b->riding = 0;
	kern_ride_end(b);
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, off);
	kern_ride_alone(b);
	two_pass_loop(b, R, lo, hi, PASS2_UNROLL, lifted, tmp);
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, join);
}

/* The state of [lo, hi) of each of R's rows in one[r] (scalar slots), by
 * two passes: M = max of the lifted m, then F = sum f * g(m - M) with M
 * fixed: one g per position, plain adds, no rescale.  A row whose M is
 * -inf subtracts 0 (as fold_max_rescale: g(-inf) = 0 for the spec's
 * (-inf) - (-inf) = -inf).  The result merges with the identity once,
 * n-arily, like an accumulator.  Each row's operations are the same
 * whether it goes alone or beside another: only their order in the
 * instruction stream differs. */
void kern_reduce_two_pass(B *b, Rows *R, LLVMValueRef lo, LLVMValueRef hi, LV **one, LV *tmp)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	int W = k->lanes, mi = k->mr_field, ns = k->c->nstate;
	LLVMTypeRef vt;
	LV *lifted = calloc(3 * ns, sizeof *lifted), *id = lifted + ns, *res = id + ns;
	LLVMValueRef acc1[PAIR][PASS1_UNROLL], *acc2 = calloc((size_t)PAIR * ns * PASS2_UNROLL, sizeof *acc2);
	LLVMValueRef M[PAIR];
	lower_scope(L, W);
	vt = lower_vty(L, TY_F32);
	for (int r = 0; r < R->n; r++) {
		for (int u = 0; u < PASS1_UNROLL; u++) {
			acc1[r][u] = alloca_(b, vt);
			LLVMBuildStore(L->b, lower_const(L, TY_F32, -INFINITY), acc1[r][u]);
		}
		R->acc[r] = acc1[r], R->Ms[r] = NULL, R->Mg[r] = NULL, R->ahead[r] = NULL;
	}
	two_pass_loop(b, R, lo, hi, PASS1_UNROLL, lifted, tmp);
	lower_scope(L, W);
	LLVMValueRef v[PASS1_UNROLL];
	for (int r = 0; r < R->n; r++) {
		for (int u = 0; u < PASS1_UNROLL; u++)
			v[u] = LLVMBuildLoad2(L->b, vt, acc1[r][u], "");
		M[r] = hreduce(b, tree(b, v, PASS1_UNROLL, 1), W, 1);
		LLVMValueRef none = LLVMBuildFCmp(L->b, LLVMRealOEQ, M[r], LLVMConstReal(LLVMTypeOf(M[r]), -INFINITY), "");
		R->Ms[r] = LLVMBuildSelect(L->b, none, LLVMConstReal(LLVMTypeOf(M[r]), 0), M[r], "");
		R->acc[r] = acc2 + (size_t)r * ns * PASS2_UNROLL;
		for (int f = 0; f < ns; f++)
			for (int u = 0; u < PASS2_UNROLL && f != mi; u++) {
				double from = tile_extra_fold(k->c, f) == EXPR_MAX ? -INFINITY : 0;
				R->acc[r][f * PASS2_UNROLL + u] = alloca_(b, vt);
				LLVMBuildStore(L->b, lower_const(L, TY_F32, from), R->acc[r][f * PASS2_UNROLL + u]);
			}
		/* pass 2 is bound by g, not memory: meanwhile the positions that
		 * follow the rows' [lo, hi) (the next rows, or chunk) come into
		 * L2, for the pass 1 that comes next on this thread
		 * (runtime/cpu.c runs a task's rows in order); not past the last row */
		LLVMValueRef n = LLVMBuildMul(L->b, LLVMBuildSub(L->b, hi, lo, ""), ci64(b, R->n), "");
		LLVMValueRef end = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, R->i[r], b->len, ""), LLVMBuildAdd(L->b, hi, n, ""), "");
		LLVMValueRef in = LLVMBuildICmp(L->b, LLVMIntSLE, end, LLVMBuildMul(L->b, b->rows, b->len, ""), "");
		R->ahead[r] = LLVMBuildSelect(L->b, in, n, ci64(b, 0), "");
	}
	if (k->mr_guard == MR_PLAIN) {
		pass_two(b, R, lo, hi, lifted, tmp);
	} else {
		/* a row whose max is infinite (rare) takes a pass 2 that
		 * selects the guarded rescale at each position */
		LLVMValueRef odd = NULL;
		for (int r = 0; r < R->n; r++) {
			LLVMValueRef o = guard_needed(b, M[r]);
			odd = odd ? LLVMBuildOr(L->b, odd, o, "") : o;
		}
		LLVMBasicBlockRef inf = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "infinite_max");
		LLVMBasicBlockRef fin = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "finite_max");
		LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "guard_done");
		LLVMBuildCondBr(L->b, odd, inf, fin);
		LLVMPositionBuilderAtEnd(L->b, inf);
		if (b->ride)
			kern_ride_alone(b);
		for (int r = 0; r < R->n; r++)
			R->Mg[r] = M[r];
		two_pass_loop(b, R, lo, hi, PASS2_UNROLL, lifted, tmp);
		for (int r = 0; r < R->n; r++)
			R->Mg[r] = NULL;
		LLVMBuildBr(L->b, join);
		LLVMPositionBuilderAtEnd(L->b, fin);
		pass_two(b, R, lo, hi, lifted, tmp);
		LLVMBuildBr(L->b, join);
		LLVMPositionBuilderAtEnd(L->b, join);
	}
	for (int r = 0; r < R->n; r++) {
		b->i = R->i[r];
		lower_scope(L, W);
		res[mi] = lower_lv_new(L, 1);
		res[mi].c[0] = M[r];
		for (int f = 0; f < ns; f++) {
			if (f == mi)
				continue;
			int max = tile_extra_fold(k->c, f) == EXPR_MAX;
			for (int u = 0; u < PASS2_UNROLL; u++)
				v[u] = LLVMBuildLoad2(L->b, vt, R->acc[r][f * PASS2_UNROLL + u], "");
			res[f] = lower_lv_new(L, 1);
			res[f].c[0] = hreduce(b, tree(b, v, PASS2_UNROLL, max), W, max);
		}
		lower_scope(L, 1);
		kern_identity(b, id);
		LV *s[2] = {id, res};
		fold_max_rescale(b, s, 2, tmp);
		kern_slots_store(b, one[r], tmp);
	}
	b->scratch = NULL;
	free(acc2);
	free(lifted);
}

/* The state of [lo, hi) of each of R's rows in one[r] (scalar slots) by
 * the vector loops (reduce_vectors), then the accumulators pairwise, then
 * the lanes.  Rows side by side run their loops one after the other, then
 * their merges together: those are chains (Welford's divisions, four
 * halvings deep in 16 lanes) that the other row's fill.  Returns where
 * the scalar tail starts (hi). */
static LLVMValueRef reduce_lanes(B *b, Rows *R, LLVMValueRef lo, LLVMValueRef hi, LV **one, LV *tmp)
{
	Kern *k = b->k;
	int ns = k->c->nstate;
	LV **acc = calloc((size_t)R->n * k->accs, sizeof *acc);
	LLVMValueRef *apart[PAIR] = {0};
	LLVMValueRef tail = hi;
	for (int r = 0; r < R->n; r++) {
		b->i = R->i[r];
		if (k->apart)
			apart[r] = apart_lists(b);
		lower_scope(&b->L, k->lanes);
		kern_identity(b, b->st);
		for (int a = 0; a < k->accs; a++) {
			acc[r * k->accs + a] = kern_state_slots(b);
			kern_slots_store(b, acc[r * k->accs + a], b->st);
		}
		b->apart = apart[r];
		tail = reduce_vectors(b, acc + r * k->accs, lo, hi, tmp);
		b->apart = NULL;
	}
	LV *v = calloc((size_t)k->accs * ns, sizeof *v);
	for (int r = 0; r < R->n; r++) {
		b->i = R->i[r];
		lower_scope(&b->L, k->lanes);
		for (int a = 0; a < k->accs; a++)
			kern_slots_load(b, acc[r * k->accs + a], v + a * ns);
		for (int s = 1; s < k->accs; s *= 2)
			for (int a = 0; a + s < k->accs; a += 2 * s) {
				lower_scope(&b->L, k->lanes);
				kern_bind_params(b);
				kern_merge(b, v + a * ns, v + (a + s) * ns, tmp);
				memcpy(v + a * ns, tmp, ns * sizeof *tmp);
			}
		halve(b, v, tmp, 0);
		lower_scope(&b->L, 1);
		kern_slots_store(b, one[r], v);
		if (apart[r]) /* the lanes' lists are empty: the row's are the state's */
			apart_into(b, apart[r], one[r]);
	}
	for (int r = 0; r < R->n; r++)
		free(apart[r]);
	for (int a = 0; a < R->n * k->accs; a++)
		free(acc[a]);
	free(acc);
	free(v);
	return tail;
}

void kern_reduce_lanes(B *b, Rows *R, LLVMValueRef lo, LLVMValueRef hi, LV **one, LV *tmp)
{
	Lower *L = &b->L;
	if (!b->ride) {
		reduce_lanes(b, R, lo, hi, one, tmp);
		return;
	}
	LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "ride");
	LLVMBasicBlockRef off = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "alone");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "reduced");
	LLVMBuildCondBr(L->b, b->ride->on, on, off);
	LLVMPositionBuilderAtEnd(L->b, on);
	kern_ride_begin(b);
	b->riding = 1;
	reduce_lanes(b, R, lo, hi, one, tmp);
	b->riding = 0;
	kern_ride_end(b);
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, off);
	kern_ride_alone(b);
	reduce_lanes(b, R, lo, hi, one, tmp);
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, join);
}

/* Whether e reads an element or column input. */
static int reads_columns(const Carrier *c, const Expr *e)
{
	if (e->op == EXPR_VAR && (ir_var(c->ir, e->k)->kind == VAR_ELEM || ir_var(c->ir, e->k)->kind == VAR_COL))
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (reads_columns(c, e->a[i]))
			return 1;
	return 0;
}

/* One tile of a loop in W lanes (reduce_tiles: 1; kern_build_reduce_rows:
 * its rows): its T positions lifted, folded into the accumulator's slots. */
static void tile_body(B *b, Loop *l, LV *acc, LV *lifted, LV **s, LV *tmp, int W)
{
	int ns = b->k->c->nstate, T = b->k->tile;
	for (int t = 0; t < T; t++) {
		s[t] = lifted + t * ns;
		b->colslot = b->L.dotslot = t;
		b->tile_cond[t] = lift_at(b, t ? LLVMBuildAdd(b->L.b, l->iv, ci64(b, t), "") : l->iv, s[t], tmp);
	}
	lower_scope(&b->L, W);
	kern_slots_load(b, acc, b->st);
	s[T] = b->st;
	fold_max_rescale(b, s, T + 1, tmp);
	kern_slots_store(b, acc, tmp);
}

/* A tile's positions under a mask of i, j and params: every lane and
 * position kept, none, or some.  Where the mask keeps every one (a causal
 * mask below its diagonal band) the tile may run without it: its select
 * on each lifted component (broadcasts that no longer fold into the
 * multiply-adds, and their registers) cost attention at head dim 128 half
 * its speed.  Where it keeps none (past a causal row's diagonal to the
 * end of its last block of 256) there is nothing to fold.  Branches to
 * the tile's body with the mask left out, positioned there; *some is the
 * block for the body with it, *join where both end (and the tile that
 * keeps none).  0, and no branch, when the mask reads an input. */
static int tile_mask_branch(B *b, Loop *l, int W, LLVMBasicBlockRef *some, LLVMBasicBlockRef *join)
{
	Carrier *c = b->k->c;
	if (!c->mask || reads_columns(c, c->mask))
		return 0;
	LLVMValueRef all = NULL, any = NULL;
	for (int t = 0; t < b->k->tile; t++) {
		/* i, j and params only: values loaded here for the bodies would
		 * be kept across the branch (spilled) */
		lower_scope(&b->L, W);
		kern_bind_inputs(b, NULL);
		LLVMValueRef j = t ? LLVMBuildAdd(b->L.b, l->iv, ci64(b, t), "") : l->iv;
		b->L.bind[c->idx[IDX_J]] = lv1(b, lower_splat(&b->L, LLVMBuildTrunc(b->L.b, j, b->i32, "")));
		LLVMValueRef cond = lower_lv_at(lower_expr(&b->L, c->mask), 0), one = cond, has = cond;
		if (LLVMGetTypeKind(LLVMTypeOf(cond)) == LLVMVectorTypeKind) {
			one = lower_intrinsic(&b->L, "llvm.vector.reduce.and", LLVMTypeOf(cond), &cond, 1);
			has = lower_intrinsic(&b->L, "llvm.vector.reduce.or", LLVMTypeOf(cond), &cond, 1);
		}
		all = all ? LLVMBuildAnd(b->L.b, all, one, "") : one;
		any = any ? LLVMBuildOr(b->L.b, any, has, "") : has;
	}
	LLVMBasicBlockRef kept = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "all_kept");
	LLVMBasicBlockRef mixed = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "mixed");
	*some = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "some_masked");
	*join = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "tile_done");
	LLVMBuildCondBr(b->L.b, all, kept, mixed);
	LLVMPositionBuilderAtEnd(b->L.b, mixed);
	LLVMBuildCondBr(b->L.b, any, *some, *join);
	LLVMPositionBuilderAtEnd(b->L.b, kept);
	return 1;
}

/* The tile's body: without the mask where tile_mask_branch finds it keeps
 * every position, with it where it keeps some. */
static void tile_bodies(B *b, Loop *l, LV *acc, LV *lifted, LV **s, LV *tmp, int W)
{
	LLVMBasicBlockRef some, join;
	int split = tile_mask_branch(b, l, W, &some, &join);
	if (split) {
		b->unmasked = 1;
		tile_body(b, l, acc, lifted, s, tmp, W);
		b->unmasked = 0;
		LLVMBuildBr(b->L.b, join);
		LLVMPositionBuilderAtEnd(b->L.b, some);
	}
	tile_body(b, l, acc, lifted, s, tmp, W);
	if (split) {
		LLVMBuildBr(b->L.b, join);
		LLVMPositionBuilderAtEnd(b->L.b, join);
	}
}

static LLVMValueRef *fields_in_arrays(B *b, LV *acc);
static void dots_ahead(B *b, Expr *e, int T);

/* Whether the one-lane tiles (reduce_tiles) of k take their vectors
 * DOT_CHUNK components at a time (chunks_begin): every float32 column
 * input of 4 or more components (kern_staged_width) a whole number of
 * chunks. */
static int one_lane_chunks(const Kern *k)
{
	const Carrier *c = k->c;
	if (k->mr_field < 0 || k->tile <= 1 || k->lanes > 1 || k->accs > 1 || k->ordered > 1 || !kern_staged_width(c))
		return 0;
	for (int q = 0; q < c->ncol; q++)
		if (c->col[q].ty.kind == TY_F32 && spec_decl_width(&c->col[q]) >= 4 &&
		    spec_decl_width(&c->col[q]) % DOT_CHUNK)
			return 0;
	return 1;
}

/* One lane with vector inputs (attention's rows left over beside the
 * rows as lanes, one row a head): each component of a vector was its own
 * scalar, a tile of 8 positions at d = 128 some 24000 instructions in
 * one block, which LLVM's SLP vectorizer took 3 s over (f16 attention
 * without a mask: 5.5 s to compile) and made into scalar and 2-lane code.
 * Where one_lane_chunks holds, as the rows as lanes do
 * (build_reduce_rows): the row inputs converted once into qbuf, each
 * tile's column inputs into colbuf (kern_stage_columns), and the dot
 * products (dots_chunks) and the fields lifted from a column
 * (fold_chunks) loops over chunks of DOT_CHUNK components, with the very
 * operations and order of the unrolled code.  Before the state's
 * identity is stored in one, whose slots move into arrays; chunks_end
 * after the function's last position. */
static void chunks_begin(B *b, LV *one)
{
	Kern *k = b->k;
	Carrier *c = k->c;
	if (!one_lane_chunks(k))
		return;
	b->obuf = fields_in_arrays(b, one);
	LLVMTypeRef ft = lower_kty(&b->L, TY_F32);
	b->colbuf = LLVMBuildArrayAlloca(b->L.ab, ft, ci64(b, (long long)k->tile * kern_staged_width(c)), "colbuf");
	LLVMSetAlignment(b->colbuf, 64);
	int nq = 0;
	for (int r = 0; r < c->nrow; r++)
		nq += spec_decl_width(&c->row[r]);
	b->qbuf = LLVMBuildArrayAlloca(b->L.ab, ft, ci64(b, nq ? nq : 1), "qbuf");
	LLVMSetAlignment(b->qbuf, 64);
	b->rowv = calloc(c->nrow + 1, sizeof *b->rowv);
	for (int r = 0, at = 0; r < c->nrow; at += spec_decl_width(&c->row[r]), r++) {
		LLVMValueRef base = b->inp[c->nelem + c->ncol + r];
		if (c->row[r].ty.kind != TY_F32) {
			b->rowv[r] = kern_row_lanes_decl(b, &c->row[r], base);
			continue;
		}
		kern_row_lanes_into(b, &c->row[r], base, b->qbuf, at);
		b->rowv[r] = lower_lv_new(&b->L, spec_decl_width(&c->row[r]));
		for (int t = 0; t < b->rowv[r].n; t++) {
			LLVMValueRef idx = ci64(b, at + t);
			b->rowv[r].c[t] = LLVMBuildLoad2(b->L.b, ft, LLVMBuildGEP2(b->L.b, ft, b->qbuf, &idx, 1, ""), "");
		}
	}
}

/* A position left over after the tiles: its columns into colbuf's first
 * slot, which kern_bind_inputs reads. */
static void chunks_step(B *b, LLVMValueRef j)
{
	if (!b->colbuf)
		return;
	kern_stage_columns(b, j, 1);
	b->colslot = 0;
}

static void chunks_end(B *b)
{
	free(b->obuf);
	free(b->rowv);
	b->obuf = NULL, b->rowv = NULL, b->colbuf = b->qbuf = NULL;
}

/* One lane (a carrier with vector fields): tiles of T positions fold
 * into the state n-arily (fold_max_rescale), so the T scores, their g
 * and the dot products behind them are independent work, and the state's
 * vectors are rescaled once a tile.  Position by position, each one waits
 * for the last: attention's (m, l, o) at d = 64 ran a chain of a dot
 * product's horizontal sum, a max, an exp and the update of o per key.
 * Returns where the positions left over (fewer than T) start. */
static LLVMValueRef reduce_tiles(B *b, LV *one, LLVMValueRef lo, LLVMValueRef hi, LV *tmp)
{
	Kern *k = b->k;
	int ns = k->c->nstate, T = k->tile;
	LV *lifted = calloc((size_t)T * ns, sizeof *lifted), *s[VTILE + 1];
	Loop l = kern_loop_begin(b, lo, hi, T);
	if (b->colbuf) { /* chunks_begin's: the tile's columns converted, its dot products */
		kern_stage_columns(b, l.iv, T);
		b->L.dotpre = calloc((size_t)b->L.nmemo * VTILE, sizeof *b->L.dotpre);
		for (int f = 0; f < ns; f++)
			dots_ahead(b, k->c->lift[f], T);
		if (k->c->mask)
			dots_ahead(b, k->c->mask, T);
	}
	/* one body, the mask in it: with tile_bodies' branch, causal rows
	 * here ran 0.104 G pairs/s against 0.155 */
	tile_body(b, &l, one, lifted, s, tmp, 1);
	free(b->L.dotpre);
	b->L.dotpre = NULL;
	b->L.dotslot = b->colslot = 0;
	kern_loop_end(b, &l);
	free(lifted);
	return kern_loop_final(b, &l);
}

/* One lane, transported (kern_plan_tf's wide form: a carrier with vector
 * fields or inputs whose certificate the prover shows, o_lse): tiles of T
 * positions lifted, summed in the certificate's coordinates shifted by
 * their largest moving element, converted back once and merged into the
 * state; one exp a position for the split-KV combine where the merge
 * takes two and a log, each waiting for the last.  A tile the shift
 * cannot take (kern_tf_transported) folds position by position, as
 * without the tiles, in a loop: unrolled, its T merges of vectors took
 * 0.18 s more of the JIT's time for o_lse, and kept the tile's lifted
 * vectors alive past the branch, spilled.  Returns where the positions
 * left over (fewer than T) start. */
static LLVMValueRef reduce_tf_tiles(B *b, LV *one, LLVMValueRef lo, LLVMValueRef hi, LV *tmp)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	int ns = k->c->nstate, T = k->tile;
	LV *lifted = calloc((size_t)(T + 1) * ns, sizeof *lifted), *s[TF_ONE_TILE], *r = lifted + (size_t)T * ns;
	LLVMValueRef cond[TF_ONE_TILE];
	Loop l = kern_loop_begin(b, lo, hi, T);
	prefetch_span(b, l.iv, T, PREFETCH_BYTES);
	for (int t = 0; t < T; t++) {
		s[t] = lifted + t * ns;
		cond[t] = lift_at(b, t ? LLVMBuildAdd(L->b, l.iv, ci64(b, t), "") : l.iv, s[t], tmp);
	}
	lower_scope(L, 1);
	kern_bind_params(b);
	LLVMValueRef ok = kern_tf_transported(b, s, cond, T, r);
	LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "transported");
	LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "tile_steps");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "tile_folded");
	LLVMBuildCondBr(L->b, ok, fast, slow);
	LLVMPositionBuilderAtEnd(L->b, fast);
	lower_scope(L, 1);
	kern_bind_params(b);
	kern_slots_load(b, one, b->st);
	kern_merge(b, b->st, r, tmp);
	kern_slots_store(b, one, tmp);
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, slow);
	lower_scope(L, 1);
	Loop p = kern_loop_begin(b, l.iv, LLVMBuildAdd(L->b, l.iv, ci64(b, T), ""), 1);
	lower_scope(L, 1);
	kern_step_slots(b, one, p.iv, tmp);
	kern_loop_end(b, &p);
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, join);
	lower_scope(L, 1);
	kern_loop_end(b, &l);
	free(lifted);
	return kern_loop_final(b, &l);
}


static int is_state(const Carrier *c, const Expr *e, int which)
{
	if (e->op != EXPR_VAR)
		return 0;
	for (int f = 0; f < c->nstate; f++)
		if (e->k == c->svar[which][f])
			return 1;
	return 0;
}

/* Whether reduce_filtered serves c: a field merged by topk (a list that
 * a long row's positions rarely enter), every other by max or min, all
 * of the two states' fields: joins, under which a lift that leaves a
 * state as it is leaves every later state (merged from it) as it is too;
 * every input a scalar element. */
int kern_filter_fits(const Carrier *c)
{
	int topk = 0;
	for (int f = 0; f < c->nstate; f++) {
		const Expr *e = c->merge[f];
		int n = e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX ? 4 : e->op == EXPR_MAX || e->op == EXPR_MIN ? 2 : 0;
		if (!n)
			return 0;
		topk |= n == 4;
		for (int t = 0; t < n; t++)
			if (!is_state(c, e->a[t], t < n / 2 ? STATE_A : STATE_B))
				return 0;
	}
	for (int i = 0; i < c->nelem; i++)
		topk &= spec_decl_width(&c->elem[i]) == 1;
	return topk && !c->ncol && !c->nrow;
}

/* The lanes where x differs from y bit for bit (x and y vectors or scalars). */
static LLVMValueRef differs(B *b, LLVMValueRef x, LLVMValueRef y)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	int vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
	LLVMTypeRef e = vec ? LLVMGetElementType(t) : t;
	unsigned bits = LLVMGetTypeKind(e) == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(e)
			: LLVMGetTypeKind(e) == LLVMDoubleTypeKind ? 64
			: LLVMGetTypeKind(e) == LLVMHalfTypeKind ? 16 : 32;
	LLVMTypeRef it = LLVMIntTypeInContext(b->L.ctx, bits);
	if (vec)
		it = LLVMVectorType(it, LLVMGetVectorSize(t));
	return LLVMBuildICmp(b->L.b, LLVMIntNE, LLVMBuildBitCast(b->L.b, x, it, ""), LLVMBuildBitCast(b->L.b, y, it, ""), "");
}

/* One lane with a topk field (filter_fits): blocks of FILTER_LANES
 * positions are first lifted side by side and merged each into the state
 * as it stands, topk's insertion only asking whether the pair ranks
 * before the list's last slot (L->probe).  A position that leaves the
 * state as it is leaves every later state as it is (filter_fits' joins),
 * so only the others fold, one by one as before, in order: the results
 * are the one-by-one fold's, bit for bit.  After the list fills, a random
 * row's position enters it rarely (about k/j at position j), so most
 * positions cost a share of one vector test.
 * Returns where the positions left over start. */
static LLVMValueRef reduce_filtered(B *b, LV *one, LLVMValueRef lo, LLVMValueRef hi, LV *tmp)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int ns = c->nstate;
	LV *s = tmp, *lifted = tmp + ns, *m = tmp + 2 * ns, *id = tmp + 3 * ns;
	Loop l = kern_loop_begin(b, lo, hi, FILTER_LANES);
	lower_scope(L, 1);
	kern_slots_load(b, one, s);
	lower_scope(L, FILTER_LANES);
	for (int f = 0; f < ns; f++)
		for (int t = 0; t < s[f].n; t++)
			s[f].c[t] = lower_splat(L, s[f].c[t]);
	L->probe = 1, L->changed = NULL;
	lift_at(b, l.iv, lifted, id);
	kern_merge(b, s, lifted, m);
	LLVMValueRef any = L->changed;
	L->probe = 0, L->changed = NULL;
	for (int f = 0; f < ns; f++)
		for (int t = 0; t < m[f].n; t++) {
			LLVMValueRef x = lower_lv_at(m[f], t), y = lower_lv_at(s[f], t);
			if (x == y)
				continue;
			LLVMValueRef d = differs(b, x, y);
			any = any ? LLVMBuildOr(L->b, any, d, "") : d;
		}
	if (any) { /* the positions of the set bits of any, lowest first */
		LLVMTypeRef mt = LLVMIntTypeInContext(L->ctx, FILTER_LANES);
		LLVMValueRef bits = LLVMBuildBitCast(L->b, any, mt, "");
		LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "filter.one");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "filter.done");
		LLVMValueRef zero = LLVMConstNull(mt);
		LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntNE, bits, zero, ""), body, done);
		LLVMPositionBuilderAtEnd(L->b, body);
		LLVMValueRef left = LLVMBuildPhi(L->b, mt, "");
		LLVMAddIncoming(left, &bits, &pre, 1);
		lower_scope(L, 1);
		LLVMTypeRef ct[1] = {mt};
		LLVMValueRef cttz = LLVMGetIntrinsicDeclaration(L->mod, LLVMLookupIntrinsicID("llvm.cttz", 9), ct, 1);
		LLVMValueRef args[2] = {left, LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0)};
		LLVMValueRef t = LLVMBuildCall2(L->b, LLVMGlobalGetValueType(cttz), cttz, args, 2, "");
		kern_step_slots(b, one, LLVMBuildAdd(L->b, l.iv, LLVMBuildZExt(L->b, t, b->i64, ""), ""), tmp);
		LLVMValueRef rest = LLVMBuildAnd(L->b, left, LLVMBuildSub(L->b, left, LLVMConstInt(mt, 1, 0), ""), "");
		LLVMBasicBlockRef at = LLVMGetInsertBlock(L->b);
		LLVMAddIncoming(left, &rest, &at, 1);
		LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntNE, rest, zero, ""), body, done);
		LLVMPositionBuilderAtEnd(L->b, done);
	}
	lower_scope(L, 1);
	kern_loop_end(b, &l);
	return kern_loop_final(b, &l);
}

/* ---- top-k lists selected from a few candidates ---- */

/* reduce_selected's lanes, its candidates a list at most (past them,
 * reduce_filtered takes the range), and the longest range it takes (32
 * KiB of float32, read again from L1).  Longer ranges go to
 * reduce_filtered, whose one pass is then as fast or faster: a random
 * row's positions rarely enter its list once it has filled
 * (moe_topk_routing, one thread, G elements per CPU-second, this path
 * against that one: rows of 1024, 3.2-3.4 against 1.1; 4096, 2.8-3.1
 * against 2.3; 8192, 2.5-2.9 against 2.8-2.9; 16384, 2.0-3.2 against
 * 3.4; 65536, 1.8-1.9 against 4.3). */
enum { SELECT_LANES = 16, SELECT_CAP = 64, SELECT_MAX = 8192 };
_Static_assert((SELECT_CAP & (SELECT_CAP - 1)) == 0, "the candidates' count wraps at 2 SELECT_CAP");
_Static_assert(SELECT_MAX <= 1 << 16, "select_narrow's offsets fit 16 bits");
/* The most state fields it takes. */
enum { SELECT_FIELDS = 32 };

typedef struct {
	int v, i, k; /* the value and index fields of a topk list, its length */
} SelList;

static int const_is(const Expr *e, double v) { return e->op == EXPR_CONST && e->num == v; }

static int is_field(const Carrier *c, const Expr *e, int which, int f)
{
	return e->op == EXPR_VAR && e->k == c->svar[which][f];
}

/* The field whose merge is the index list of the topk merge m; -1 when
 * none is. */
static int topk_index_field(const Carrier *c, Expr *m)
{
	Expr *ms = ir_topk_sibling(c->ir, m);
	for (int h = 0; h < c->nstate && ms; h++)
		if (c->merge[h] == ms)
			return h;
	return -1;
}

/* The topk lists of a carrier that reduce_filtered serves (filter_fits)
 * in ls, and their number; 0 where reduce_selected does not serve it:
 * each list a value field (float32) and its index field (int32), lifted
 * as a list of one pair of a scalar value, topk(v, i, k), identity
 * (-inf, -1), merged by topk(a.v, a.i, b.v, b.i); any other field
 * scalar, merged by max or min. */
static int select_lists(const Carrier *c, SelList *ls)
{
	int n = 0, idx = 0;
	for (int f = 0; f < c->nstate; f++) {
		Expr *m = c->merge[f], *l = c->lift[f];
		if (m->op == EXPR_TOPK_IDX) {
			idx++;
			continue;
		}
		if (m->op != EXPR_TOPK) {
			if (spec_decl_width(&c->state[f]) != 1)
				return 0;
			continue;
		}
		Expr *lsib = l->op == EXPR_TOPK ? ir_topk_sibling(c->ir, l) : NULL;
		int g = topk_index_field(c, m);
		if (g < 0 || !lsib || c->lift[g] != lsib || l->a[0]->ty.len || l->a[0]->ty.kind != TY_F32 ||
		    !const_is(l->a[2], -INFINITY) || !const_is(l->a[3], -1) || !const_is(c->identity[f], -INFINITY) ||
		    !const_is(c->identity[g], -1) || c->state[f].ty.kind != TY_F32 || c->state[g].ty.kind != TY_I32 ||
		    l->k != m->k || m->k > SELECT_LANES || !is_field(c, m->a[0], STATE_A, f) ||
		    !is_field(c, m->a[1], STATE_A, g) || !is_field(c, m->a[2], STATE_B, f) || !is_field(c, m->a[3], STATE_B, g))
			return 0;
		ls[n++] = (SelList){f, g, m->k};
	}
	return n == idx ? n : 0;
}

int kern_selects(const Carrier *c)
{
	SelList ls[SELECT_FIELDS];
	return lower_host_avx512() && kern_filter_fits(c) && c->nstate <= SELECT_FIELDS && select_lists(c, ls) > 0;
}

/* ---- topk lists apart from the lanes ---- */

/* Whether e reads variable var. */
static int reads_var(const Expr *e, int var)
{
	if (e->op == EXPR_VAR)
		return e->k == var;
	for (int i = 0; i < e->nargs; i++)
		if (reads_var(e->a[i], var))
			return 1;
	return 0;
}

int kern_lists_apart(const Carrier *c, TopkList *ls)
{
	int n = 0, idx = 0;
	TopkList got[APART_MAX];
	for (int f = 0; f < c->nstate; f++) {
		Expr *m = c->merge[f], *l = c->lift[f];
		if (m->op == EXPR_TOPK_IDX)
			idx++;
		if (m->op != EXPR_TOPK)
			continue;
		Expr *lsib = l->op == EXPR_TOPK ? ir_topk_sibling(c->ir, l) : NULL;
		int g = topk_index_field(c, m);
		TyKind vk = (TyKind)c->state[f].ty.kind;
		if (n == APART_MAX || g < 0 || !lsib || c->lift[g] != lsib || l->a[0]->ty.len || l->a[1]->ty.len ||
		    (vk != TY_F32 && vk != TY_F64) || l->a[0]->ty.kind != vk || l->a[1]->ty.kind != TY_I32 ||
		    !const_is(l->a[2], -INFINITY) || !const_is(l->a[3], -1) || !const_is(c->identity[f], -INFINITY) ||
		    !const_is(c->identity[g], -1) || c->state[g].ty.kind != TY_I32 || l->k != m->k ||
		    spec_decl_width(&c->state[f]) != m->k || spec_decl_width(&c->state[g]) != m->k ||
		    !is_field(c, m->a[0], STATE_A, f) || !is_field(c, m->a[1], STATE_A, g) ||
		    !is_field(c, m->a[2], STATE_B, f) || !is_field(c, m->a[3], STATE_B, g))
			return 0;
		got[n++] = (TopkList){f, g, m->k};
	}
	if (n != idx)
		return 0;
	/* the lanes fold the other fields with the lists left empty */
	for (int h = 0; h < c->nstate; h++) {
		if (c->merge[h]->op == EXPR_TOPK || c->merge[h]->op == EXPR_TOPK_IDX)
			continue;
		for (int q = 0; q < n; q++)
			for (int w = 0; w < 2; w++)
				if (reads_var(c->merge[h], c->svar[w][got[q].v]) || reads_var(c->merge[h], c->svar[w][got[q].i]))
					return 0;
	}
	if (ls)
		memcpy(ls, got, n * sizeof *ls);
	return n;
}

static int pow2_at_least(int k)
{
	int K = 1;
	while (K < k)
		K *= 2;
	return K;
}

static LLVMValueRef apart_slot(B *b, int s, int t);

/* A load or store of a list kept apart, volatile: the list stays in
 * memory (the stack, in L1), not promoted to registers.  As values its
 * 2k slots were carried around the vector loop through every
 * insertion's join: softmax beside a list of 16 spent some 80 register
 * moves and spills an iteration of 8 vectors on them. */
static LLVMValueRef apart_access(LLVMValueRef x)
{
	LLVMSetVolatile(x, 1);
	return x;
}

/* Each list kept apart is one sorted list of k pairs, the lanes of a
 * vector of values and one of indices, and its last slot, the
 * threshold, is the pair a position must rank before to enter (the
 * empty (-inf, -1) while the list is not full).  A vector of lifted
 * values is first compared with the threshold's value: a value below it
 * cannot enter, nor can NaN (it ranks after every number, and the list
 * never holds one).  Where some lane's value is at or above it, the
 * vector is tested with topk's own ranking (ties at the threshold's
 * value by index), and the lanes that pass, lowest first, are inserted
 * one at a time, in the lanes of the list (a compare, a shift and two
 * selects), each ranked anew against the list as it stands.  The list
 * only rises, so a lane that ranks after a threshold it saw ranks after
 * every later one.  The lists' merge is a join, the top k of the union
 * of its operands under an order of pairs that is total where indices
 * differ (positions, as j is): any order of insertion gives the
 * one-by-one fold's list, bit for bit.
 * Past the first few vectors of a row of random values nearly every
 * vector costs a compare, and a tile of them (kern_apart_flush) one
 * branch not taken (at position j a value enters with odds of about
 * k/j), whatever k is; the lanes fold the other fields as they would
 * without the lists.  Softmax beside a list of 16, 256 x 65536, 2
 * threads, under a load of about 10: 0.086 of a copy in one lane (34
 * components, over LANES_STATE_MAX in llvm_kern.c), 0.82 kept apart;
 * 0.24 and 2.7-3.1 G elements per CPU-second. */

/* The lanes of list q's lifted pairs (v, i) that rank before its last
 * slot, inserted into it one at a time, lowest first; positioned after. */
static void apart_insert(B *b, int q, LLVMValueRef v, LLVMValueRef i)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	TopkList ls[APART_MAX];
	kern_lists_apart(c, ls);
	TopkList p = ls[q];
	int W = L->W;
	LLVMTypeRef st = lower_kty(L, (TyKind)c->state[p.v].ty.kind), mt = LLVMIntTypeInContext(L->ctx, (unsigned)W);
	LLVMValueRef zero = LLVMConstNull(mt);
	LLVMBasicBlockRef test = LLVMGetInsertBlock(L->b);
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "apart.insert");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "apart.done");
	/* the pairs that enter: ties at the last slot's value by index */
	LLVMValueRef tv = apart_access(LLVMBuildLoad2(L->b, st, apart_slot(b, 2 * q, p.k - 1), ""));
	LLVMValueRef ti = apart_access(LLVMBuildLoad2(L->b, b->i32, apart_slot(b, 2 * q + 1, p.k - 1), ""));
	if (W > 1)
		tv = lower_splat(L, tv), ti = lower_splat(L, ti);
	LLVMValueRef in = lower_topk_enters(L, v, i, tv, ti);
	LLVMValueRef bits = W > 1 ? LLVMBuildBitCast(L->b, in, mt, "") : in;
	LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntNE, bits, zero, ""), body, done);
	LLVMPositionBuilderAtEnd(L->b, body);
	LLVMValueRef left = LLVMBuildPhi(L->b, mt, "");
	LLVMAddIncoming(left, &bits, &test, 1);
	LLVMValueRef x = v, xi = i;
	if (W > 1) {
		LLVMValueRef args[2] = {left, LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0)};
		LLVMValueRef t = lower_intrinsic(L, "llvm.cttz", mt, args, 2);
		LLVMValueRef lane = LLVMBuildIntCast2(L->b, t, b->i32, 0, ""); /* i64 at 64 lanes */
		x = LLVMBuildExtractElement(L->b, v, lane, "");
		xi = LLVMBuildExtractElement(L->b, i, lane, "");
	}
	LLVMTypeRef lt[2] = {LLVMGetAllocatedType(b->apart[2 * q]), LLVMGetAllocatedType(b->apart[2 * q + 1])};
	LLVMValueRef av = apart_access(LLVMBuildLoad2(L->b, lt[0], b->apart[2 * q], ""));
	LLVMValueRef ai = apart_access(LLVMBuildLoad2(L->b, lt[1], b->apart[2 * q + 1], ""));
	lower_topk_insert(L, &av, &ai, x, xi);
	apart_access(LLVMBuildStore(L->b, av, b->apart[2 * q]));
	apart_access(LLVMBuildStore(L->b, ai, b->apart[2 * q + 1]));
	LLVMValueRef rest = LLVMBuildAnd(L->b, left, LLVMBuildSub(L->b, left, LLVMConstInt(mt, 1, 0), ""), "");
	LLVMBasicBlockRef at = LLVMGetInsertBlock(L->b);
	LLVMAddIncoming(left, &rest, &at, 1);
	LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntNE, rest, zero, ""), body, done);
	LLVMPositionBuilderAtEnd(L->b, done);
}

void kern_apart_flush(B *b)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	TopkList ls[APART_MAX];
	int nl = kern_lists_apart(c, ls), W = L->W, n = b->apart_n;
	b->apart_n = 0;
	if (!n)
		return;
	LLVMTypeRef mt = LLVMIntTypeInContext(L->ctx, (unsigned)W);
	for (int q = 0; q < nl; q++) {
		LLVMTypeRef st = lower_kty(L, (TyKind)c->state[ls[q].v].ty.kind);
		/* values >= the last slot's: a superset of the pairs that enter */
		LLVMValueRef tv = apart_access(LLVMBuildLoad2(L->b, st, apart_slot(b, 2 * q, ls[q].k - 1), ""));
		if (W > 1)
			tv = lower_splat(L, tv);
		LLVMValueRef any = NULL;
		for (int t = 0; t < n; t++) {
			LLVMValueRef may = LLVMBuildFCmp(L->b, LLVMRealOGE, b->apart_v[t][q], tv, "");
			may = W > 1 ? LLVMBuildBitCast(L->b, may, mt, "") : may;
			any = any ? LLVMBuildOr(L->b, any, may, "") : may;
		}
		LLVMBasicBlockRef some = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "apart.some");
		LLVMBasicBlockRef none = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "apart.none");
		LLVMValueRef br = LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntNE, any, LLVMConstNull(mt), ""), some, none);
		LLVMValueRef w[3] = {LLVMMDStringInContext(L->ctx, "branch_weights", 14), LLVMConstInt(b->i32, 1, 0),
				     LLVMConstInt(b->i32, 64, 0)};
		LLVMSetMetadata(br, LLVMGetMDKindIDInContext(L->ctx, "prof", 4), LLVMMDNodeInContext(L->ctx, w, 3));
		LLVMPositionBuilderAtEnd(L->b, some);
		for (int t = 0; t < n; t++)
			apart_insert(b, q, b->apart_v[t][q], b->apart_i[t][q]);
		LLVMBuildBr(L->b, none);
		LLVMPositionBuilderAtEnd(L->b, none);
	}
}

void kern_apart_lift(B *b, LV *lifted, LLVMValueRef cond)
{
	if (!b->apart)
		return;
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	TopkList ls[APART_MAX];
	int n = kern_lists_apart(c, ls);
	if (b->apart_n == APART_PEND)
		kern_apart_flush(b);
	for (int q = 0; q < n; q++) {
		TopkList p = ls[q];
		TyKind vk = (TyKind)c->state[p.v].ty.kind;
		LLVMValueRef none_v = lower_const(L, vk, -INFINITY), none_i = lower_const(L, TY_I32, -1);
		LLVMValueRef v = lower_lv_at(lifted[p.v], 0), i = lower_lv_at(lifted[p.i], 0);
		if (cond) {
			v = LLVMBuildSelect(L->b, cond, v, none_v, "");
			i = LLVMBuildSelect(L->b, cond, i, none_i, "");
		}
		lifted[p.v] = lower_lv_new(L, p.k);
		lifted[p.i] = lower_lv_new(L, p.k);
		for (int t = 0; t < p.k; t++)
			lifted[p.v].c[t] = none_v, lifted[p.i].c[t] = none_i;
		b->apart_v[b->apart_n][q] = v, b->apart_i[b->apart_n][q] = i;
	}
	b->apart_n++;
	if (!b->apart_hold)
		kern_apart_flush(b);
}

/* A row's lists kept apart, empty: by list, an alloca of its values and
 * one of its indices, vectors of pow2_at_least(k) lanes (free it). */
static LLVMValueRef *apart_lists(B *b)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	TopkList ls[APART_MAX];
	int n = kern_lists_apart(c, ls);
	LLVMValueRef *a = calloc(2 * (size_t)n, sizeof *a);
	if (!a)
		abort();
	for (int q = 0; q < n; q++) {
		int f[2] = {ls[q].v, ls[q].i};
		unsigned K = (unsigned)pow2_at_least(ls[q].k);
		for (int h = 0; h < 2; h++) {
			TyKind kd = (TyKind)c->state[f[h]].ty.kind;
			LLVMTypeRef vt = LLVMVectorType(lower_kty(L, kd), K);
			LLVMValueRef e[IR_TOPK_MAX], none = h ? LLVMConstInt(b->i32, (unsigned long long)-1, 1)
							     : LLVMConstReal(lower_kty(L, kd), -INFINITY);
			for (unsigned l = 0; l < K; l++)
				e[l] = none;
			a[2 * q + h] = LLVMBuildAlloca(L->ab, vt, "apart");
			LLVMSetAlignment(a[2 * q + h], 64);
			LLVMBuildStore(L->b, LLVMConstVector(e, K), a[2 * q + h]);
		}
	}
	return a;
}

/* Component t of list q's values (h 0) or indices (h 1): slot 2q + h of b->apart. */
static LLVMValueRef apart_slot(B *b, int s, int t)
{
	LLVMValueRef idx[2] = {LLVMConstInt(b->i32, 0, 0), LLVMConstInt(b->i32, (unsigned)t, 0)};
	return LLVMBuildGEP2(b->L.b, LLVMGetAllocatedType(b->apart[s]), b->apart[s], idx, 2, "");
}

/* The lists kept apart, from from into the state's scalar slots to. */
static void apart_into(B *b, LLVMValueRef *from, LV *to)
{
	Carrier *c = b->k->c;
	TopkList ls[APART_MAX];
	int n = kern_lists_apart(c, ls);
	LLVMValueRef *keep = b->apart;
	b->apart = from;
	for (int q = 0; q < n; q++)
		for (int t = 0; t < ls[q].k; t++) {
			int f[2] = {ls[q].v, ls[q].i};
			for (int h = 0; h < 2; h++) {
				LLVMTypeRef ty = lower_kty(&b->L, (TyKind)c->state[f[h]].ty.kind);
				LLVMBuildStore(b->L.b, LLVMBuildLoad2(b->L.b, ty, apart_slot(b, 2 * q + h, t), ""), to[f[h]].c[t]);
			}
		}
	b->apart = keep;
}

/* reduce_selected's passes over a row's range and what they keep. */
typedef struct {
	LLVMValueRef i;     /* the row */
	LLVMValueRef *acc;  /* by field: the lanes' max or min so far (alloca), NULL for lists */
	LLVMValueRef *best; /* by list: each lane's largest value (pass 1) */
	LLVMValueRef *t;    /* by list: the threshold (pass 2) */
	LLVMValueRef *top;  /* by list: its largest value, NaN aside (-inf: none) */
	LLVMValueRef *cv, *ci, *cn; /* by list: the candidates' values and indices (arrays), their count */
} Sel;

typedef struct {
	SelList ls[SELECT_FIELDS];
	int direct[SELECT_FIELDS]; /* by list: the float32 element input (its index in c->elem) whose
				    * value is the lifted value, its position j the index; else -1 */
	int narrow;         /* every list direct, and the host compresses 16-bit lanes: pass 2 keeps
			     * positions as 16-bit offsets from lo (select_narrow) */
	int nl, n;          /* lists, rows */
	int from[SELECT_FIELDS]; /* by field: the list whose largest value it is (a max of the same
				  * lift from -inf), else -1 */
	Sel r[PAIR];
	LV *lifted, *id;
} Sels;

/* Pass 1 or 2 of reduce_selected over the lanes at j of row S->i (under
 * b->lmask). */
static void select_at(B *b, Sels *A, Sel *S, LLVMValueRef j, int pass)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	b->i = S->i;
	lift_at(b, j, A->lifted, A->id);
	LLVMTypeRef vt = lower_vty(L, TY_F32);
	if (pass == 1)
		for (int f = 0; f < c->nstate; f++) {
			if (!S->acc[f])
				continue;
			LLVMTypeRef ft = lower_vty(L, (TyKind)c->state[f].ty.kind);
			L->bind[c->svar[STATE_A][f]] = lv1(b, LLVMBuildLoad2(L->b, ft, S->acc[f], ""));
			L->bind[c->svar[STATE_B][f]] = A->lifted[f];
			LLVMBuildStore(L->b, lower_lv_at(lower_expr(L, c->merge[f]), 0), S->acc[f]);
		}
	for (int q = 0; q < A->nl; q++) {
		LLVMValueRef v = lower_lv_at(A->lifted[A->ls[q].v], 0);
		if (pass == 1) {
			LLVMBuildStore(L->b, gt_max(b, v, LLVMBuildLoad2(L->b, vt, S->best[q], "")), S->best[q]);
			continue;
		}
		/* NaN never enters a list (it ranks after the empty slot) */
		LLVMValueRef in = LLVMBuildFCmp(L->b, LLVMRealOGE, v, lower_splat(L, S->t[q]), "cand");
		LLVMValueRef i = lower_lv_at(A->lifted[A->ls[q].i], 0);
		LLVMValueRef n = LLVMBuildLoad2(L->b, b->i64, S->cn[q], "");
		/* past SELECT_CAP the count alone matters (reduce_filtered
		 * takes the range): the stores stay in the array (2 SELECT_CAP
		 * a power of two, and SELECT_LANES more) */
		LLVMValueRef at = LLVMBuildAnd(L->b, n, ci64(b, 2 * SELECT_CAP - 1), "");
		LLVMValueRef xs[2] = {i, v}, bufs[2] = {S->ci[q], S->cv[q]};
		/* a direct list keeps the positions alone (select_chunk reads
		 * the values back): none past the range */
		if (A->direct[q] >= 0 && b->lmask)
			in = LLVMBuildAnd(L->b, in, b->lmask, "");
		for (int s = 0; s < (A->direct[q] >= 0 ? 1 : 2); s++) {
			LLVMTypeRef t = LLVMTypeOf(xs[s]);
			LLVMValueRef args[3] = {xs[s], LLVMGetUndef(t), in};
			/* the register form: the one that stores is slow on some cores (Zen 4) */
			LLVMValueRef packed = lower_intrinsic(L, "llvm.x86.avx512.mask.compress", t, args, 3);
			LLVMValueRef p = LLVMBuildGEP2(L->b, LLVMGetElementType(t), bufs[s], &at, 1, "");
			LLVMValueRef st = LLVMBuildStore(L->b, packed, LLVMBuildBitCast(L->b, p, LLVMPointerType(t, 0), ""));
			LLVMSetAlignment(st, 4);
		}
		LLVMTypeRef mt = LLVMIntTypeInContext(L->ctx, SELECT_LANES);
		LLVMValueRef bits = LLVMBuildBitCast(L->b, in, mt, "");
		LLVMValueRef pop = lower_intrinsic(L, "llvm.ctpop", mt, &bits, 1);
		LLVMBuildStore(L->b, LLVMBuildAdd(L->b, n, LLVMBuildZExt(L->b, pop, b->i64, ""), ""), S->cn[q]);
	}
}

/* A pass over [lo, hi) of rows r0 .. r1 - 1 side by side: whole
 * vectors, then a masked one.  Pass 1 reads each row first, from memory:
 * it prefetches PREFETCH_BYTES ahead, into the next rows where the rows
 * are short (MoE routing, 256 experts, where three fifths of the time
 * went to pass 1's loads waiting on memory; 2-core Xeon under load, best
 * of 4, G elements/s: 65536 rows on two threads 0.59 -> 0.82, 8192 rows
 * on one 2.5 -> 3.4). */
static void select_pass(B *b, Sels *A, LLVMValueRef lo, LLVMValueRef hi, int pass, int r0, int r1)
{
	lower_scope(&b->L, SELECT_LANES);
	Loop l = kern_loop_begin(b, lo, hi, SELECT_LANES);
	for (int r = r0; r < r1; r++) {
		if (pass == 1) {
			b->i = A->r[r].i;
			prefetch_lines(b, l.iv, SELECT_LANES, PREFETCH_BYTES);
		}
		select_at(b, A, &A->r[r], l.iv, pass);
	}
	kern_loop_end(b, &l);
	lower_scope(&b->L, SELECT_LANES);
	LLVMValueRef last = kern_loop_final(b, &l);
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(b->L.b, LLVMIntSLT, last, hi, ""));
	lower_scope(&b->L, SELECT_LANES);
	b->lmask = kern_lanes_below(b, last, hi);
	for (int r = r0; r < r1; r++)
		select_at(b, A, &A->r[r], last, pass);
	b->lmask = NULL;
	kern_if_end(b, done);
}

/* Pass 2 of row S->i where A->narrow: 32 positions a step, their
 * candidates' offsets from lo compressed as 16-bit lanes, one compress
 * for two vectors (a range is at most SELECT_MAX positions).  One thread
 * on this Zen 4 host, in L1: 0.82 ns per 16 positions, against 1.49 for
 * one compress of 32-bit positions a vector (and 0.90 with no compress
 * at all: the loop's other steps). */
static void narrow_at(B *b, Sels *A, Sel *S, LLVMValueRef *base, LLVMValueRef lo, LLVMValueRef j, LLVMValueRef mask)
{
	Lower *L = &b->L;
	LLVMTypeRef ft = lower_kty(L, TY_F32), vt = LLVMVectorType(ft, 16);
	LLVMTypeRef i16 = LLVMInt16TypeInContext(L->ctx), wt = LLVMVectorType(i16, 32);
	LLVMValueRef iota[32], half[2][16], cat[32];
	for (int l = 0; l < 32; l++) {
		iota[l] = LLVMConstInt(i16, (unsigned)l, 0);
		cat[l] = LLVMConstInt(b->i32, (unsigned)l, 0);
		half[l / 16][l % 16] = cat[l];
	}
	LLVMValueRef rel = LLVMBuildTrunc(L->b, LLVMBuildSub(L->b, j, lo, ""), i16, "");
	LLVMValueRef pos = LLVMBuildInsertElement(L->b, LLVMGetUndef(wt), rel, LLVMConstInt(b->i32, 0, 0), "");
	pos = LLVMBuildShuffleVector(L->b, pos, LLVMGetUndef(wt), LLVMConstNull(LLVMVectorType(b->i32, 32)), "");
	pos = LLVMBuildAdd(L->b, pos, LLVMConstVector(iota, 32), "pos");
	for (int q = 0; q < A->nl; q++) {
		LLVMValueRef t = LLVMBuildInsertElement(L->b, LLVMGetUndef(vt), S->t[q], LLVMConstInt(b->i32, 0, 0), "");
		t = LLVMBuildShuffleVector(L->b, t, LLVMGetUndef(vt), LLVMConstNull(LLVMVectorType(b->i32, 16)), "");
		LLVMValueRef in[2];
		for (int h = 0; h < 2; h++) {
			LLVMValueRef at = LLVMBuildAdd(L->b, j, ci64(b, 16 * h), "");
			LLVMValueRef p = LLVMBuildBitCast(L->b, LLVMBuildGEP2(L->b, ft, base[q], &at, 1, ""), LLVMPointerType(vt, 0), "");
			LLVMValueRef v;
			if (mask) {
				LLVMValueRef m = LLVMBuildShuffleVector(L->b, mask, mask, LLVMConstVector(half[h], 16), "");
				LLVMValueRef a[4] = {p, LLVMConstInt(b->i32, 4, 0), m, LLVMGetUndef(vt)};
				LLVMTypeRef tys[2] = {vt, LLVMPointerType(vt, 0)};
				unsigned id = LLVMLookupIntrinsicID("llvm.masked.load", 16);
				v = LLVMBuildCall2(L->b, LLVMIntrinsicGetType(L->ctx, id, tys, 2), LLVMGetIntrinsicDeclaration(L->mod, id, tys, 2),
						   a, 4, "");
			} else {
				v = LLVMBuildLoad2(L->b, vt, p, "");
				LLVMSetAlignment(v, 4);
			}
			/* NaN never enters a list (it ranks after the empty slot) */
			in[h] = LLVMBuildFCmp(L->b, LLVMRealOGE, v, t, "cand");
		}
		LLVMValueRef k = LLVMBuildShuffleVector(L->b, in[0], in[1], LLVMConstVector(cat, 32), "");
		if (mask)
			k = LLVMBuildAnd(L->b, k, mask, "");
		LLVMValueRef n = LLVMBuildLoad2(L->b, b->i64, S->cn[q], "");
		LLVMValueRef at = LLVMBuildAnd(L->b, n, ci64(b, 2 * SELECT_CAP - 1), "");
		LLVMValueRef args[3] = {pos, LLVMGetUndef(wt), k};
		LLVMValueRef packed = lower_intrinsic(L, "llvm.x86.avx512.mask.compress", wt, args, 3);
		LLVMValueRef p = LLVMBuildGEP2(L->b, i16, LLVMBuildBitCast(L->b, S->ci[q], LLVMPointerType(i16, 0), ""), &at, 1, "");
		LLVMValueRef st = LLVMBuildStore(L->b, packed, LLVMBuildBitCast(L->b, p, LLVMPointerType(wt, 0), ""));
		LLVMSetAlignment(st, 2);
		LLVMTypeRef mt = LLVMInt32TypeInContext(L->ctx);
		LLVMValueRef bits = LLVMBuildBitCast(L->b, k, mt, "");
		LLVMValueRef pop = lower_intrinsic(L, "llvm.ctpop", mt, &bits, 1);
		LLVMBuildStore(L->b, LLVMBuildAdd(L->b, n, LLVMBuildZExt(L->b, pop, b->i64, ""), ""), S->cn[q]);
	}
}

static void select_narrow(B *b, Sels *A, Sel *S, LLVMValueRef lo, LLVMValueRef hi)
{
	Lower *L = &b->L;
	LLVMValueRef base[SELECT_FIELDS], row = LLVMBuildMul(L->b, S->i, b->len, "");
	LLVMTypeRef ft = lower_kty(L, TY_F32);
	for (int q = 0; q < A->nl; q++)
		base[q] = LLVMBuildGEP2(L->b, ft, LLVMBuildBitCast(L->b, b->inp[A->direct[q]], LLVMPointerType(ft, 0), ""), &row, 1, "");
	Loop l = kern_loop_begin(b, lo, hi, 32);
	narrow_at(b, A, S, base, lo, l.iv, NULL);
	kern_loop_end(b, &l);
	LLVMValueRef last = kern_loop_final(b, &l);
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(L->b, LLVMIntSLT, last, hi, ""));
	lower_scope(L, 32);
	LLVMValueRef mask = kern_lanes_below(b, last, hi);
	lower_scope(L, SELECT_LANES);
	narrow_at(b, A, S, base, lo, last, mask);
	kern_if_end(b, done);
	lower_scope(L, SELECT_LANES);
}

/* Chunk ch of list q's candidates, the empty pair past their count, into
 * *v and *i; a direct list's values gathered from its input at the
 * positions. */
static void select_chunk(B *b, Sels *A, Sel *S, int q, int ch, LLVMValueRef lo, LLVMValueRef *v, LLVMValueRef *i)
{
	Lower *L = &b->L;
	LLVMTypeRef vt = lower_vty(L, TY_F32), it = lower_vty(L, TY_I32), ft = lower_kty(L, TY_F32);
	LLVMValueRef at = ci64(b, (long long)ch * SELECT_LANES);
	LLVMValueRef ok = kern_lanes_below(b, at, LLVMBuildLoad2(L->b, b->i64, S->cn[q], ""));
	if (A->narrow) { /* offsets from lo */
		LLVMTypeRef i16 = LLVMInt16TypeInContext(L->ctx), wt = LLVMVectorType(i16, SELECT_LANES);
		LLVMValueRef pw = LLVMBuildGEP2(L->b, i16, LLVMBuildBitCast(L->b, S->ci[q], LLVMPointerType(i16, 0), ""), &at, 1, "");
		LLVMValueRef w = LLVMBuildLoad2(L->b, wt, LLVMBuildBitCast(L->b, pw, LLVMPointerType(wt, 0), ""), "");
		LLVMSetAlignment(w, 2);
		*i = LLVMBuildAdd(L->b, LLVMBuildZExt(L->b, w, it, ""), lower_splat(L, LLVMBuildTrunc(L->b, lo, b->i32, "")), "");
	} else {
		LLVMValueRef pi = LLVMBuildGEP2(L->b, lower_kty(L, TY_I32), S->ci[q], &at, 1, "");
		*i = LLVMBuildLoad2(L->b, it, LLVMBuildBitCast(L->b, pi, LLVMPointerType(it, 0), ""), "");
	}
	LLVMValueRef ninf = lower_const(L, TY_F32, -INFINITY);
	if (A->direct[q] >= 0) {
		LLVMValueRef row = LLVMBuildMul(L->b, S->i, b->len, "");
		LLVMValueRef base = LLVMBuildGEP2(L->b, ft, LLVMBuildBitCast(L->b, b->inp[A->direct[q]], LLVMPointerType(ft, 0), ""),
						  &row, 1, "");
		LLVMValueRef off = LLVMBuildSExt(L->b, *i, lower_vty(L, TY_I64), "");
		LLVMValueRef ptrs = LLVMBuildGEP2(L->b, ft, base, &off, 1, "");
		LLVMValueRef args[4] = {ptrs, LLVMConstInt(b->i32, 4, 0), ok, ninf};
		LLVMTypeRef tys[2] = {vt, LLVMTypeOf(ptrs)};
		unsigned id = LLVMLookupIntrinsicID("llvm.masked.gather", 18);
		LLVMValueRef fn = LLVMGetIntrinsicDeclaration(L->mod, id, tys, 2);
		*v = LLVMBuildCall2(L->b, LLVMIntrinsicGetType(L->ctx, id, tys, 2), fn, args, 4, "");
	} else {
		LLVMValueRef pv = LLVMBuildGEP2(L->b, ft, S->cv[q], &at, 1, "");
		*v = LLVMBuildLoad2(L->b, vt, LLVMBuildBitCast(L->b, pv, LLVMPointerType(vt, 0), ""), "");
		*v = LLVMBuildSelect(L->b, ok, *v, ninf, "");
	}
	*i = LLVMBuildSelect(L->b, ok, *i, lower_const(L, TY_I32, -1), "");
}

/* Lanes t < k of v and i into list q's slots of one. */
static void select_store(B *b, Sels *A, LV *one, int q, LLVMValueRef v, LLVMValueRef i)
{
	for (int t = 0; t < A->ls[q].k; t++) {
		LLVMValueRef lane = LLVMConstInt(b->i32, (unsigned)t, 0);
		LLVMBuildStore(b->L.b, LLVMBuildExtractElement(b->L.b, v, lane, ""), one[A->ls[q].v].c[t]);
		LLVMBuildStore(b->L.b, LLVMBuildExtractElement(b->L.b, i, lane, ""), one[A->ls[q].i].c[t]);
	}
}

/* Whether the lanes of v hold both a -0 and a +0, which the keys of
 * lower_topk_keys would rank by sign where topk ranks them by index. */
static LLVMValueRef zeros_of_both_signs(B *b, LLVMValueRef v)
{
	Lower *L = &b->L;
	LLVMValueRef u = LLVMBuildBitCast(L->b, v, lower_vty(L, TY_I32), ""), any[2];
	for (int s = 0; s < 2; s++) {
		LLVMValueRef z = LLVMBuildICmp(L->b, LLVMIntEQ, u, lower_splat(L, LLVMConstInt(b->i32, s ? 0x80000000u : 0, 0)), "");
		any[s] = lower_intrinsic(L, "llvm.vector.reduce.or", LLVMTypeOf(z), &z, 1);
	}
	return LLVMBuildAnd(L->b, any[0], any[1], "");
}

/* Every row's lists from their candidates into its scalar state one[r].
 * At most SELECT_LANES candidates (nearly every row) are sorted as
 * 64-bit keys (lower_topk_keys): one unsigned max and min a
 * compare-exchange, where pairs compared as topk does take a float
 * compare, an equality, an index compare and two selects each (MoE
 * routing, 256 experts, top 8, one thread, rows in cache, assoc_reduce2:
 * 86 -> 76 ns a row; the lanes' maxima sorted likewise, 74).  More, or
 * zeros of both signs, take the network of pairs: the first SELECT_LANES sorted, any further chunk sorted and
 * merged in (lower_topk_top). */
static void select_lists_out(B *b, Sels *A, LV **one, LLVMValueRef lo)
{
	Lower *L = &b->L;
	int W = SELECT_LANES;
	lower_scope(L, W);
	LLVMTypeRef vt = lower_vty(L, TY_F32), it = lower_vty(L, TY_I32);
	LLVMValueRef lv = alloca_(b, vt), li = alloca_(b, it);
	for (int r = 0; r < A->n; r++)
		for (int q = 0; q < A->nl; q++) {
			lower_scope(L, W);
			Sel *S = &A->r[r];
			LLVMValueRef v, i, ov, oi;
			select_chunk(b, A, S, q, 0, lo, &v, &i);
			LLVMValueRef n = LLVMBuildLoad2(L->b, b->i64, S->cn[q], "");
			LLVMValueRef fast = LLVMBuildAnd(L->b, LLVMBuildICmp(L->b, LLVMIntSLE, n, ci64(b, W), ""),
							 LLVMBuildNot(L->b, zeros_of_both_signs(b, v), ""), "keys");
			LLVMBasicBlockRef kb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "select.keys");
			LLVMBasicBlockRef pb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "select.pairs");
			LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "select.out");
			LLVMBuildCondBr(L->b, fast, kb, pb);
			LLVMPositionBuilderAtEnd(L->b, kb);
			lower_topk_keys(L, v, i, A->ls[q].k, &ov, &oi);
			select_store(b, A, one[r], q, ov, oi);
			LLVMBuildBr(L->b, done);
			LLVMPositionBuilderAtEnd(L->b, pb);
			lower_topk_sort(L, &v, &i);
			LLVMBuildStore(L->b, v, lv);
			LLVMBuildStore(L->b, i, li);
			for (int ch = 1; ch < SELECT_CAP / W; ch++) {
				LLVMBasicBlockRef more = kern_if(b, LLVMBuildICmp(L->b, LLVMIntSGT, n, ci64(b, (long long)ch * W), ""));
				select_chunk(b, A, S, q, ch, lo, &v, &i);
				lower_topk_sort(L, &v, &i);
				lower_topk_top(L, &v, &i, LLVMBuildLoad2(L->b, vt, lv, ""), LLVMBuildLoad2(L->b, it, li, ""));
				LLVMBuildStore(L->b, v, lv);
				LLVMBuildStore(L->b, i, li);
				kern_if_end(b, more);
			}
			select_store(b, A, one[r], q, LLVMBuildLoad2(L->b, vt, lv, ""), LLVMBuildLoad2(L->b, it, li, ""));
			LLVMBuildBr(L->b, done);
			LLVMPositionBuilderAtEnd(L->b, done);
		}
}

/* Field f's lanes (a max or min) merged into one value, halving. */
static LLVMValueRef select_fold_lanes(B *b, int f, LLVMValueRef v)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	for (int w = SELECT_LANES; w > 1; w /= 2) {
		LLVMValueRef half[2];
		for (int h = 0; h < 2; h++) {
			if (w == 2) {
				half[h] = LLVMBuildExtractElement(L->b, v, LLVMConstInt(b->i32, (unsigned)h, 0), "");
				continue;
			}
			LLVMValueRef m[32];
			for (int l = 0; l < w / 2; l++)
				m[l] = LLVMConstInt(b->i32, (unsigned)(l + h * w / 2), 0);
			half[h] = LLVMBuildShuffleVector(L->b, v, v, LLVMConstVector(m, (unsigned)(w / 2)), "");
		}
		lower_scope(L, w / 2);
		L->bind[c->svar[STATE_A][f]] = lv1(b, half[0]);
		L->bind[c->svar[STATE_B][f]] = lv1(b, half[1]);
		v = lower_lv_at(lower_expr(L, c->merge[f]), 0);
	}
	return v;
}

/* Row b->i's state of [lo, hi) into one: from the identity by
 * reduce_filtered, then the positions it leaves one by one. */
static void select_fallback(B *b, LV *one, LLVMValueRef lo, LLVMValueRef hi, LV *tmp)
{
	lower_scope(&b->L, 1);
	kern_identity(b, b->st);
	kern_slots_store(b, one, b->st);
	LLVMValueRef tail = reduce_filtered(b, one, lo, hi, tmp);
	lower_scope(&b->L, 1);
	Loop l = kern_loop_begin(b, tail, hi, 1);
	lower_scope(&b->L, 1);
	kern_step_slots(b, one, l.iv, tmp);
	kern_loop_end(b, &l);
}

/* One lane with topk lists (kern_selects: select_lists, and AVX-512 for
 * its compress): the state of [lo, hi) of each of R's rows in one[r]
 * (scalar slots).  Pass 1 takes each lane's largest value of each list
 * (and folds the max and min fields in the lanes); the k-th largest of
 * the 16, t, is either -inf or the value of k positions or less, so no
 * pair of a smaller value (nor NaN) is among the top k.  Pass 2 keeps the
 * pairs whose value is t or more, compressed into an array: for a row of
 * random values about k + k/4 of them (256 values and k = 8: 10.4 on
 * average, more than 16 in 0.7% of rows), sorted in the lanes by a
 * network.  Equal pairs rank in any order alike, so the lists are the
 * one-by-one fold's, bit for bit, and so are the max and min (joins) but
 * for the sign of a zero.  Rows side by side (assoc_reduce2) run each
 * step together: the networks are chains of some 10 compare-exchanges,
 * which the other row's fill.  A list with more than SELECT_CAP
 * candidates (ties), or a range longer than SELECT_MAX, takes
 * reduce_filtered. */
static void reduce_selected(B *b, Rows *R, LLVMValueRef lo, LLVMValueRef hi, LV **one, LV *tmp)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int ns = c->nstate;
	Sels A = {.n = R->n, .lifted = tmp + 2 * ns, .id = tmp + 3 * ns};
	A.nl = select_lists(c, A.ls);
	/* a list of a float32 element input and its positions keeps the
	 * positions alone, one compress a vector where it took two (MoE
	 * routing, 256 experts, one thread, rows in cache, reduce2 and
	 * finalize: 81 -> 79 ns a row; 73 with select_narrow); not under a
	 * mask, whose lanes lift to the empty pair */
	for (int q = 0; q < A.nl; q++) {
		Expr *l = c->lift[A.ls[q].v], *x = l->a[0], *j = l->a[1];
		const Var *xv = x->op == EXPR_VAR ? ir_var(c->ir, x->k) : NULL;
		A.direct[q] = -1;
		if (!c->mask && xv && xv->kind == VAR_ELEM && xv->storage == TY_F32 && xv->ty.kind == TY_F32 &&
		    !xv->ty.len && j->op == EXPR_VAR && j->k == c->idx[IDX_J])
			A.direct[q] = xv->slot;
	}
	A.narrow = b->k->narrow;
	for (int q = 0; q < A.nl; q++)
		A.narrow &= A.direct[q] >= 0;
	/* a max field of a list's value (moe_topk_routing's m) is the
	 * largest of pass 1's lanes, which the threshold's sort puts first:
	 * maxnum (NaN dropped) from -inf, as the one-by-one fold has it */
	for (int f = 0; f < ns; f++) {
		A.from[f] = -1;
		for (int q = 0; q < A.nl && c->merge[f]->op == EXPR_MAX; q++)
			if (c->lift[f] == c->lift[A.ls[q].v]->a[0] && const_is(c->identity[f], -INFINITY) &&
			    c->state[f].ty.kind == TY_F32)
				A.from[f] = q;
	}
	LLVMValueRef *all = calloc((size_t)R->n * (ns + 7 * A.nl), sizeof *all);
	LLVMBasicBlockRef sel = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "select");
	LLVMBasicBlockRef fil = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "select.filtered");
	LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "select.sort");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "select.done");
	LLVMValueRef len = LLVMBuildSub(L->b, hi, lo, "");
	LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntSLE, len, ci64(b, SELECT_MAX), ""), sel, fil);
	LLVMPositionBuilderAtEnd(L->b, sel);
	lower_scope(L, SELECT_LANES);
	kern_identity(b, A.id);
	LLVMTypeRef vt = lower_vty(L, TY_F32);
	for (int r = 0; r < R->n; r++) {
		Sel *S = &A.r[r];
		LLVMValueRef *p = all + (size_t)r * (ns + 7 * A.nl);
		S->i = R->i[r];
		S->acc = p, S->best = p + ns, S->t = S->best + A.nl, S->cv = S->t + A.nl, S->ci = S->cv + A.nl,
		S->cn = S->ci + A.nl, S->top = S->cn + A.nl;
		for (int f = 0; f < ns; f++) {
			if (c->merge[f]->op == EXPR_TOPK || c->merge[f]->op == EXPR_TOPK_IDX || A.from[f] >= 0)
				continue;
			S->acc[f] = alloca_(b, lower_vty(L, (TyKind)c->state[f].ty.kind));
			LLVMValueRef x = lower_lv_at(A.id[f], 0);
			if (LLVMGetTypeKind(LLVMTypeOf(x)) != LLVMVectorTypeKind)
				x = lower_splat(L, x);
			LLVMBuildStore(L->b, x, S->acc[f]);
		}
		for (int q = 0; q < A.nl; q++) {
			S->best[q] = alloca_(b, vt);
			LLVMBuildStore(L->b, lower_const(L, TY_F32, -INFINITY), S->best[q]);
			S->cn[q] = alloca_(b, b->i64);
			LLVMBuildStore(L->b, ci64(b, 0), S->cn[q]);
			S->cv[q] = LLVMBuildArrayAlloca(L->ab, lower_kty(L, TY_F32), ci64(b, 2 * SELECT_CAP + SELECT_LANES), "cand.v");
			S->ci[q] = LLVMBuildArrayAlloca(L->ab, lower_kty(L, TY_I32), ci64(b, 2 * SELECT_CAP + SELECT_LANES), "cand.i");
			LLVMSetAlignment(S->cv[q], 64);
			LLVMSetAlignment(S->ci[q], 64);
		}
	}
	select_pass(b, &A, lo, hi, 1, 0, A.n);
	lower_scope(L, SELECT_LANES);
	for (int r = 0; r < R->n; r++)
		for (int q = 0; q < A.nl; q++) {
			/* no lane's largest is NaN (gt_max drops it): sorted as
			 * integers of the same order, by max and min */
			LLVMValueRef m = LLVMBuildLoad2(L->b, vt, A.r[r].best[q], "");
			m = lower_ord_float(L, lower_sort_keys(L, lower_ord_bits(L, m), 1));
			A.r[r].top[q] = LLVMBuildExtractElement(L->b, m, LLVMConstInt(b->i32, 0, 0), "");
			A.r[r].t[q] = LLVMBuildExtractElement(L->b, m, LLVMConstInt(b->i32, (unsigned)A.ls[q].k - 1, 0), "threshold");
		}
	/* Pass 2 a row at a time: the candidates are read back from memory
	 * after stores at every 4-byte offset, which no load of a vector
	 * takes from the store queue; it waits for them to reach the cache.
	 * Row by row, the first row's stores drain while the second row's
	 * pass runs, and the second's while the first row's list is sorted
	 * (MoE routing, 256 experts, one thread, rows in cache, reduce2 and
	 * finalize: 87.5 -> 81 ns a row). */
	for (int r = 0; r < A.n; r++)
		if (A.narrow)
			select_narrow(b, &A, &A.r[r], lo, hi);
		else
			select_pass(b, &A, lo, hi, 2, r, r + 1);
	lower_scope(L, 1);
	LLVMValueRef fits = NULL;
	for (int r = 0; r < R->n; r++)
		for (int q = 0; q < A.nl; q++) {
			LLVMValueRef n = LLVMBuildLoad2(L->b, b->i64, A.r[r].cn[q], "");
			LLVMValueRef f = LLVMBuildICmp(L->b, LLVMIntSLE, n, ci64(b, SELECT_CAP), "");
			fits = fits ? LLVMBuildAnd(L->b, fits, f, "") : f;
		}
	LLVMBuildCondBr(L->b, fits, fast, fil);
	LLVMPositionBuilderAtEnd(L->b, fast);
	select_lists_out(b, &A, one, lo);
	for (int r = 0; r < R->n; r++)
		for (int f = 0; f < ns; f++) {
			if (A.from[f] >= 0)
				LLVMBuildStore(L->b, A.r[r].top[A.from[f]], one[r][f].c[0]);
			if (!A.r[r].acc[f])
				continue;
			lower_scope(L, SELECT_LANES);
			LLVMValueRef v = LLVMBuildLoad2(L->b, lower_vty(L, (TyKind)c->state[f].ty.kind), A.r[r].acc[f], "");
			LLVMBuildStore(L->b, select_fold_lanes(b, f, v), one[r][f].c[0]);
		}
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, fil);
	for (int r = 0; r < R->n; r++) {
		b->i = R->i[r];
		select_fallback(b, one[r], lo, hi, tmp);
	}
	LLVMBuildBr(L->b, join);
	LLVMPositionBuilderAtEnd(L->b, join);
	lower_scope(L, 1);
	free(all);
}

/* The ordered fold, for a merge not known to commute (scalar fields):
 * blocks of R*W*W consecutive positions from lo (R = ORDERED_RUNS while
 * they fit, then R = 1), lane l's segment of a block its R*W positions
 * from l*R*W on.  A loop over the block's runs loads W vectors each
 * (kern_load_segments, segments of R*W: run r's vector t holds position
 * l*R*W + r*W + t in lane l).  The W vectors are
 * lifted and taken, ORDERED_CHAIN at a time, on the right of an
 * accumulator, as a device's accumulator takes positions (a merge that
 * skips a NaN on its right keeps one on its left: argmax's
 * where(b.best > a.best, ...) over a lift of NaN merged as it is carried
 * the NaN past the larger values after it, which the left fold, and
 * check's model of a device, skip); the first chain starts at the lanes'
 * state so far (the identity before the first run), the others at the
 * identity, and the chains are folded by a tree of the spec's merges,
 * earlier positions on the left, into the lanes' state.  Chains of 4 take
 * W + W/4 - 1 merges a run where each position onto the identity and then
 * a tree took 2W - 1: on Intel, where compares into mask registers share
 * port 5 with the transpose's shuffles, 2048 x 1024 on one thread (Xeon,
 * best of 5) ran 3.4 -> 3.9 G elements/s for a first-position argmin, 5.5
 * -> 5.7 for argmax (llvm-mca, icelake-server: 253 -> 205 and 136 -> 118
 * cycles a block; a NaN-skipping min, max and mean with four fields 173
 * either way); chains of 8, once the runs carried the lanes' states, 85
 * -> 80 cycles a run for argmax, 97 -> 96 for min and max with their
 * positions (llvm-mca), the first chain and the tree still well inside a
 * run's time.  After the runs the lanes merge neighbour with neighbour
 * (halve, ordered: 4 merges and their shuffles for 16 lanes) into the
 * block's state, merged on the right of the state so far: once a block
 * of R runs, where one run a block took them each time (min and max with
 * the first position of each, llvm-mca, icelake-server: 139 -> 97 cycles
 * of port 5 a run, with the runs' positions indexed from one broadcast;
 * one thread, rows of 16384 in L2, with chains of 8: 6.3-6.5 -> 8.8-9.0 G
 * elements/s; from memory no faster, about 15 GB/s a thread, where lanes
 * in any order read 23 to 25).  The runs are a loop, not unrolled, and both passes keep
 * R, so the segments' lengths, constant: the loads' addresses are
 * offsets from one pointer (with R a value, and so the length, LLVM's
 * strength reduction took 70 ms more of the JIT's time over the loads).
 * A run reads a cache line of each of W segments: it prefetches a W*W
 * share of the next block, so that the next block's first run, which
 * reads from all of it, finds it there.
 * (W segments of the whole range, one a lane, ran at 0.44 to 0.74 of a
 * copy: a first-position argmin, 256 x 65536, 2 threads, the prefetchers
 * following 16 streams a thread.)  The positions from the returned end
 * on (fewer than W*W) follow one by one.  Only associativity is used:
 * every merge has the earlier range on its left.  A max-rescale merge
 * (llvm_tile.c) folds a run n-arily, one g per position, beside the
 * lanes' state in the place of the accumulator (its fields that fold
 * apart take it on their left).  The result depends on [lo, hi) alone,
 * not on the threads. */
enum { ORDERED_RUNS = 8 };

/* The ordered fold's blocks of R runs from lo, each merged on the right
 * of the state in one; returns where they end. */
static LLVMValueRef ordered_pass(B *b, LV *one, LLVMValueRef lo, LLVMValueRef hi, LV *tmp, int R)
{
	Kern *k = b->k;
	Carrier *c = k->c;
	Lower *L = &b->L;
	int ns = c->nstate, W = k->ordered;
	long long ww = (long long)W * W;
	LV *lifted = calloc((size_t)(W + 2) * ns, sizeof *lifted), *s[65], *v = calloc(ns, sizeof *v);
	LV *acc = lifted + (size_t)(W + 1) * ns;
	LLVMValueRef *in = calloc((size_t)(c->nelem + c->ncol) * W + 1, sizeof *in);
	lower_scope(L, W);
	LV *slots = kern_state_slots(b); /* the lanes' states from run to run */
	Loop l = kern_loop_begin(b, lo, hi, R * ww);
	LLVMValueRef seg = ci64(b, R * W);
	lower_scope(L, W);
	kern_bind_params(b);
	kern_identity(b, acc);
	kern_slots_store(b, slots, acc);
	LLVMValueRef r = kern_count_open(b, "run");
	LLVMValueRef at = LLVMBuildAdd(L->b, l.iv, LLVMBuildMul(L->b, r, ci64(b, W), ""), "");
	lower_scope(L, W);
	/* run r of the next block reads from all of it: each run prefetches
	 * a W*W share of it, the next block's first run finds it all there */
	if (R > 1)
		prefetch_lines(b, LLVMBuildAdd(L->b, l.iv, LLVMBuildMul(L->b, LLVMBuildAdd(L->b, r, ci64(b, R), ""), ci64(b, ww), ""), ""),
			       ww, 0);
	else
		prefetch_lines(b, l.iv, ww, PREFETCH_BYTES);
	kern_load_segments(b, at, seg, in);
	for (int t = 0; t < W; t++) {
		s[t] = lifted + t * ns;
		lower_scope(L, W);
		kern_bind_segment(b, at, seg, in, t);
		lift_bound(b, s[t], tmp);
	}
	lower_scope(L, W);
	kern_bind_params(b);
	kern_slots_load(b, slots, acc);
	if (k->mr_field >= 0) {
		s[W] = acc;
		fold_max_rescale(b, s, W + 1, tmp);
		kern_slots_store(b, slots, tmp);
	} else {
		LV *e = lifted + (size_t)W * ns, *heads[64];
		int C = W < ORDERED_CHAIN ? W : ORDERED_CHAIN;
		kern_identity(b, e);
		for (int g = 0; g < W; g += C) {
			/* e+s[g] is s[g] where k->lift_chains: that chain starts there */
			for (int t = g + (g > 0 && k->lift_chains); t < g + C; t++) {
				lower_scope(L, W);
				kern_bind_params(b);
				kern_merge(b, t > g ? s[g] : g == 0 ? acc : e, s[t], tmp);
				memcpy(s[g], tmp, ns * sizeof *tmp);
			}
			heads[g / C] = s[g];
		}
		kern_fold_tree(b, heads, W / C, tmp);
		kern_slots_store(b, slots, heads[0]);
	}
	kern_count_close(b, r, R, 1);
	lower_scope(L, W);
	kern_bind_params(b);
	kern_slots_load(b, slots, v);
	halve(b, v, tmp, 1);
	lower_scope(L, 1);
	kern_bind_params(b);
	LV *x = tmp + 3 * ns;
	kern_slots_load(b, one, x);
	kern_merge(b, x, v, tmp);
	kern_slots_store(b, one, tmp);
	kern_loop_end(b, &l);
	lower_scope(L, 1);
	free(slots);
	free(lifted);
	free(in);
	free(v);
	return kern_loop_final(b, &l);
}

static LLVMValueRef reduce_ordered(B *b, LV *one, LLVMValueRef lo, LLVMValueRef hi, LV *tmp)
{
	lower_scope(&b->L, 1);
	kern_bind_inputs(b, NULL);
	kern_identity(b, b->st);
	kern_slots_store(b, one, b->st);
	return ordered_pass(b, one, ordered_pass(b, one, lo, hi, tmp, ORDERED_RUNS), hi, tmp, 1);
}

/* ---- keys read in place from a paged pool ---- */

/* The loop over pages p0 .. p1 - 1 of the paged functions: in its body
 * each column pointer is moved by the page's distance from where its
 * keys would lie in one run of keys ((table[q] - q) * page_size keys, a
 * key key_stride heads of its width apart), so that key j of [lo, hi),
 * the page's keys, is read where the unpaged loops read key j.  The
 * lookup is one load a page; the loops over its keys are the unpaged
 * ones. */
typedef struct {
	Loop q;
	LLVMValueRef in[256]; /* the column pointers outside it */
} PageLoop;

/* How many keys page index q of the table lies from where its keys
 * would lie in one run: (table[q] - q) * page_size. */
static LLVMValueRef page_shift(B *b, LLVMValueRef table, LLVMValueRef q, LLVMValueRef ps, const char *name)
{
	Lower *L = &b->L;
	LLVMValueRef at = LLVMBuildGEP2(L->b, b->i32, LLVMBuildBitCast(L->b, table, LLVMPointerType(b->i32, 0), ""), &q, 1, "");
	LLVMValueRef page = LLVMBuildSExt(L->b, LLVMBuildLoad2(L->b, b->i32, at, name), b->i64, "");
	return LLVMBuildMul(L->b, LLVMBuildSub(L->b, page, q, ""), ps, "");
}

/* Column k's pointer base moved by shift keys (a key key_stride heads of
 * its width apart). */
static LLVMValueRef page_col(B *b, int k, LLVMValueRef base, LLVMValueRef shift, const char *name)
{
	const Decl *d = &b->k->c->col[k];
	long long key = (long long)b->k->key_stride * spec_decl_width(d) * (long long)run_kind_size(d->storage);
	LLVMValueRef bytes = LLVMBuildMul(b->L.b, shift, ci64(b, key), "");
	return LLVMBuildGEP2(b->L.b, b->i8, base, &bytes, 1, name);
}

static void pages_begin(B *b, PageLoop *pl, LLVMValueRef p0, LLVMValueRef p1, LLVMValueRef table, LLVMValueRef ps,
			LLVMValueRef *lo, LLVMValueRef *hi)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	pl->q = kern_loop_begin(b, p0, p1, 1);
	LLVMValueRef q = pl->q.iv;
	LLVMValueRef shift = page_shift(b, table, q, ps, "page");
	for (int k = 0; k < c->ncol; k++) {
		pl->in[k] = b->inp[c->nelem + k];
		b->inp[c->nelem + k] = page_col(b, k, pl->in[k], shift, "page_keys");
	}
	/* the next page (this one, on the last), which the loops over this
	 * page's keys prefetch (kern_prefetch_cols): key j's column pointer
	 * there is where key j + page_size of the next page lies */
	LLVMValueRef nq = LLVMBuildAdd(L->b, q, ci64(b, 1), "");
	nq = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, nq, p1, ""), nq, q, "");
	LLVMValueRef nshift = page_shift(b, table, nq, ps, "");
	for (int k = 0; k < c->ncol; k++)
		b->page_next[k] = page_col(b, k, pl->in[k], nshift, "next_page_keys");
	b->page_size = ps;
	*lo = LLVMBuildMul(L->b, q, ps, "");
	LLVMValueRef end = LLVMBuildAdd(L->b, *lo, ps, "");
	*hi = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, end, b->len, ""), end, b->len, "");
	/* the call's last key: of page p1 - 1, or the row's last */
	LLVMValueRef last = LLVMBuildMul(L->b, p1, ps, "");
	last = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, last, b->len, ""), last, b->len, "");
	b->page_last_key = LLVMBuildSub(L->b, last, ci64(b, 1), "");
	b->page_table = table;
	for (int k = 0; k < c->ncol; k++)
		b->page_base[k] = pl->in[k];
	lower_scope(L, L->W);
}

static void pages_end(B *b, PageLoop *pl)
{
	Carrier *c = b->k->c;
	for (int k = 0; k < c->ncol; k++)
		b->inp[c->nelem + k] = pl->in[k];
	b->page_size = NULL;
	kern_loop_end(b, &pl->q);
	lower_scope(&b->L, b->L.W);
}

int kern_reduces_pages(const Kern *k)
{
	return !(k->lanes > 1 || k->accs > 1) && !(k->ordered > 1) && !k->select && !kern_filter_fits(k->c);
}

/* name(a, i, lo, hi, st) or, paged, name(a, i, p0, p1, st, table,
 * page_size), with keys as the lanes (llvm_keys.c): rows i .. i + G - 1,
 * the states from st one after the other, as assoc_reduce_rows and
 * assoc_reduce_rows_pages (assoc_reduce and assoc_reduce_pages at G = 1)
 * give them. */
static void build_keys(B *b, const char *name, int G, int paged)
{
	LLVMTypeRef p[7];
	kern_sig(b, paged ? 7 : 5, p);
	p[4] = b->i8p;
	if (paged)
		p[5] = b->i8p;
	b->keys_fn = 1;
	LLVMValueRef f = kern_begin_fn(b, name, p, paged ? 7 : 5);
	b->keys_fn = 0;
	b->i = LLVMGetParam(f, 1);
	lower_scope(&b->L, 1);
	struct Keys *K = kern_keys_begin(b, b->i, G);
	LLVMValueRef lo = LLVMGetParam(f, 2), hi = LLVMGetParam(f, 3);
	PageLoop pl;
	if (paged)
		pages_begin(b, &pl, lo, hi, LLVMGetParam(f, 5), LLVMGetParam(f, 6), &lo, &hi);
	kern_keys_range(b, K, lo, hi);
	if (paged)
		pages_end(b, &pl);
	kern_keys_end(b, K, LLVMGetParam(f, 4));
	kern_end_fn(b);
}

/* assoc_reduce_pages(a, i, p0, p1, st, table, page_size): st = the fold of
 * row i over the keys of pages p0 .. p1 - 1 (key j of the row in slot
 * j % page_size of pool page table[j / page_size], the last page's up to
 * a->len), from the identity: the one-lane path of assoc_reduce (tiles of
 * a max-rescale merge, else key by key) in a loop over the pages, its
 * state carried from page to page.  Only for kern_reduces_pages. */
void kern_build_reduce_pages(B *b)
{
	Carrier *c = b->k->c;
	Kern *k = b->k;
	if (k->keys) {
		build_keys(b, "assoc_reduce_pages", 1, 1);
		return;
	}
	LLVMTypeRef p[7];
	kern_sig(b, 7, p);
	p[4] = b->i8p, p[5] = b->i8p;
	LLVMValueRef f = kern_begin_fn(b, "assoc_reduce_pages", p, 7);
	b->i = LLVMGetParam(f, 1);
	LV *tmp = calloc(4 * c->nstate, sizeof *tmp);
	lower_scope(&b->L, 1);
	LV *one = kern_state_slots(b);
	chunks_begin(b, one);
	kern_identity(b, b->st);
	kern_slots_store(b, one, b->st);
	PageLoop pl;
	LLVMValueRef lo, hi;
	pages_begin(b, &pl, LLVMGetParam(f, 2), LLVMGetParam(f, 3), LLVMGetParam(f, 5), LLVMGetParam(f, 6), &lo, &hi);
	LLVMValueRef tail = k->mr_field >= 0 && k->tile > 1 ? reduce_tiles(b, one, lo, hi, tmp)
			    : k->tf ? reduce_tf_tiles(b, one, lo, hi, tmp) : lo;
	lower_scope(&b->L, 1);
	Loop l = kern_loop_begin(b, tail, hi, 1);
	lower_scope(&b->L, 1);
	chunks_step(b, l.iv);
	kern_step_slots(b, one, l.iv, tmp);
	kern_loop_end(b, &l);
	pages_end(b, &pl);
	kern_slots_load(b, one, b->st);
	kern_mem_store(b, LLVMGetParam(f, 4), b->st);
	chunks_end(b);
	free(one);
	free(tmp);
	kern_end_fn(b);
}

void kern_build_reduce(B *b)
{
	Carrier *c = b->k->c;
	Kern *k = b->k;
	if (k->keys) {
		build_keys(b, "assoc_reduce", 1, 0);
		return;
	}
	LLVMTypeRef p[5];
	kern_sig(b, 5, p);
	p[4] = b->i8p;
	LLVMValueRef f = kern_begin_fn(b, "assoc_reduce", p, 5);
	b->i = LLVMGetParam(f, 1);
	LLVMValueRef lo = LLVMGetParam(f, 2), hi = LLVMGetParam(f, 3);
	int ns = c->nstate;
	LV *tmp = calloc(4 * ns, sizeof *tmp);
	lower_scope(&b->L, 1);
	LV *one = kern_state_slots(b); /* the scalar state */
	LLVMValueRef tail = lo;
	LLVMBasicBlockRef joined = NULL;
	if (k->two_pass) {
		/* rows that fit in L2 (TWO_PASS_BYTES): two passes; else the online fold */
		LLVMValueRef bytes = LLVMBuildMul(b->L.b, LLVMBuildSub(b->L.b, hi, lo, ""), ci64(b, k->two_pass), "");
		LLVMBasicBlockRef tp = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "two_pass");
		LLVMBasicBlockRef online = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "online");
		joined = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "reduced");
		LLVMBuildCondBr(b->L.b, LLVMBuildICmp(b->L.b, LLVMIntSLE, bytes, ci64(b, TWO_PASS_BYTES), ""), tp, online);
		LLVMPositionBuilderAtEnd(b->L.b, tp);
		Rows R = {.n = 1, .i = {b->i}};
		kern_reduce_two_pass(b, &R, lo, hi, &one, tmp);
		b->i = R.i[0];
		LLVMBuildBr(b->L.b, joined);
		LLVMPositionBuilderAtEnd(b->L.b, online);
	}
	if (k->lanes > 1 || k->accs > 1) {
		Rows R = {.n = 1, .i = {b->i}};
		tail = reduce_lanes(b, &R, lo, hi, &one, tmp);
	} else if (k->ordered > 1) {
		tail = reduce_ordered(b, one, lo, hi, tmp);
	} else {
		chunks_begin(b, one);
		kern_identity(b, b->st);
		kern_slots_store(b, one, b->st);
		if (k->mr_field >= 0 && k->tile > 1) {
			tail = reduce_tiles(b, one, lo, hi, tmp);
		} else if (k->tf) {
			tail = reduce_tf_tiles(b, one, lo, hi, tmp);
		} else if (k->select) {
			Rows R = {.n = 1, .i = {b->i}};
			reduce_selected(b, &R, lo, hi, &one, tmp);
			tail = hi;
		} else if (kern_filter_fits(c)) {
			tail = reduce_filtered(b, one, lo, hi, tmp);
		}
	}
	if (joined) {
		LLVMBuildBr(b->L.b, joined);
		LLVMPositionBuilderAtEnd(b->L.b, joined);
	}
	lower_scope(&b->L, 1);
	Loop l = kern_loop_begin(b, tail, hi, 1);
	lower_scope(&b->L, 1);
	chunks_step(b, l.iv);
	kern_step_slots(b, one, l.iv, tmp);
	kern_loop_end(b, &l);
	kern_slots_load(b, one, b->st);
	kern_mem_store(b, LLVMGetParam(f, 4), b->st);
	chunks_end(b);
	free(one);
	free(tmp);
	kern_end_fn(b);
}

/* assoc_reduce2(a, i, st): rows i and i + 1 (kern_reduce_two_pass or
 * reduce_lanes side by side), whole, of fewer than PAIR_LEN positions;
 * their states at st and st + state_bytes, each the one assoc_reduce
 * makes of its row. */
void kern_build_reduce2(B *b)
{
	int ns = b->k->c->nstate;
	LLVMTypeRef p[3] = {b->i8p, b->i64, b->i8p};
	LLVMValueRef f = kern_begin_fn(b, "assoc_reduce2", p, 3);
	LV *tmp = calloc(4 * ns, sizeof *tmp), *one[PAIR];
	Rows R = {.n = PAIR};
	lower_scope(&b->L, 1);
	for (int r = 0; r < PAIR; r++) {
		R.i[r] = LLVMBuildAdd(b->L.b, LLVMGetParam(f, 1), ci64(b, r), "");
		one[r] = kern_state_slots(b);
	}
	if (b->k->two_pass)
		kern_reduce_two_pass(b, &R, ci64(b, 0), b->len, one, tmp);
	else if (b->k->select)
		reduce_selected(b, &R, ci64(b, 0), b->len, one, tmp);
	else
		reduce_lanes(b, &R, ci64(b, 0), b->len, one, tmp);
	for (int r = 0; r < PAIR; r++) {
		lower_scope(&b->L, 1);
		kern_slots_load(b, one[r], b->st);
		kern_mem_store(b, kern_state_at(b, LLVMGetParam(f, 2), r), b->st);
		free(one[r]);
	}
	free(tmp);
	kern_end_fn(b);
}

/* dots_ahead as a loop over the components, the row input's from qbuf:
 * T accumulators, and a load and T broadcasts a component. */
static void dots_loop(B *b, Expr *e, int r, int k, int T)
{
	Lower *L = &b->L;
	Carrier *c = b->k->c;
	int n = spec_decl_width(&c->row[r]), cw = kern_staged_width(c), off = kern_staged_off(c, k), at = 0;
	for (int q = 0; q < r; q++)
		at += spec_decl_width(&c->row[q]);
	LLVMTypeRef vt = lower_vty(L, TY_F32), ft = lower_kty(L, TY_F32);
	LLVMValueRef acc[VTILE];
	for (int t = 0; t < T; t++) {
		acc[t] = LLVMBuildAlloca(L->ab, vt, "");
		LLVMBuildStore(L->b, LLVMConstNull(vt), acc[t]);
	}
	LLVMValueRef u = kern_count_open(b, "dot");
	LLVMValueRef qi = LLVMBuildAdd(L->b, u, ci64(b, at), "");
	LLVMValueRef q = LLVMBuildLoad2(L->b, vt, LLVMBuildGEP2(L->b, vt, b->qbuf, &qi, 1, ""), "");
	for (int t = 0; t < T; t++) {
		LLVMValueRef ki = LLVMBuildAdd(L->b, u, ci64(b, (long long)t * cw + off), "");
		LLVMValueRef kp = LLVMBuildGEP2(L->b, ft, b->colbuf, &ki, 1, "");
		LLVMValueRef kv = lower_splat(L, LLVMBuildLoad2(L->b, ft, kp, ""));
		LLVMValueRef args[3] = {q, kv, LLVMBuildLoad2(L->b, vt, acc[t], "")};
		LLVMBuildStore(L->b, lower_intrinsic(L, "llvm.fmuladd", vt, args, 3), acc[t]);
	}
	kern_count_close(b, u, n, b->k->loop_unroll);
	LLVMValueRef *s = L->dotpre + e->id * VTILE;
	for (int t = 0; t < T; t++)
		s[t] = LLVMBuildLoad2(L->b, vt, acc[t], "");
}

/* dots_ahead in one lane (one_lane_chunks): a loop over chunks of
 * DOT_CHUNK components, the row input's from qbuf, each position's from
 * colbuf, products added chunk by chunk and the lanes halved: the sums
 * of dot_chunked (llvm_expr.c), in its order, so the same bits. */
static void dots_chunks(B *b, Expr *e, int r, int k, int T)
{
	Lower *L = &b->L;
	Carrier *c = b->k->c;
	int n = spec_decl_width(&c->row[r]), cw = kern_staged_width(c), off = kern_staged_off(c, k), at = 0;
	for (int q = 0; q < r; q++)
		at += spec_decl_width(&c->row[q]);
	int row_first = ir_var(c->ir, e->a[0]->k)->kind == VAR_ROW;
	LLVMTypeRef ft = lower_kty(L, TY_F32), vt = LLVMVectorType(ft, DOT_CHUNK);
	LLVMValueRef acc[VTILE], nz[DOT_CHUNK];
	/* -0 + p is p, as dot_chunked's first chunk is */
	for (int l = 0; l < DOT_CHUNK; l++)
		nz[l] = LLVMConstReal(ft, -0.0);
	for (int t = 0; t < T; t++) {
		acc[t] = LLVMBuildAlloca(L->ab, vt, "");
		LLVMBuildStore(L->b, LLVMConstVector(nz, DOT_CHUNK), acc[t]);
	}
	LLVMValueRef u = kern_count_open(b, "dot");
	LLVMValueRef c0 = LLVMBuildMul(L->b, u, ci64(b, DOT_CHUNK), "");
	LLVMValueRef qi = LLVMBuildAdd(L->b, c0, ci64(b, at), "");
	LLVMValueRef q = chunk_load(b, b->qbuf, qi);
	for (int t = 0; t < T; t++) {
		LLVMValueRef kv = chunk_load(b, b->colbuf, LLVMBuildAdd(L->b, c0, ci64(b, (long long)t * cw + off), ""));
		LLVMValueRef p = row_first ? LLVMBuildFMul(L->b, q, kv, "") : LLVMBuildFMul(L->b, kv, q, "");
		LLVMBuildStore(L->b, LLVMBuildFAdd(L->b, LLVMBuildLoad2(L->b, vt, acc[t], ""), p, ""), acc[t]);
	}
	kern_count_close(b, u, n / DOT_CHUNK, 2);
	LLVMValueRef *s = L->dotpre + e->id * VTILE;
	for (int t = 0; t < T; t++)
		s[t] = lower_halve_sum(L, LLVMBuildLoad2(L->b, vt, acc[t], ""));
}

/* The dot products of a row input with a staged column input in e, for
 * the T positions of the tile at once into L->dotpre (lower_node takes
 * them from there): component by component, each of the row's loaded
 * once for all T positions.  Position by position, every product loaded
 * its row component again, the loads the bound of the loop.  Each
 * position's chain is the one lower_node builds, so nothing changes but
 * the order of independent instructions. */
static void dots_ahead(B *b, Expr *e, int T)
{
	Lower *L = &b->L;
	Carrier *c = b->k->c;
	for (int i = 0; i < e->nargs; i++)
		dots_ahead(b, e->a[i], T);
	if (e->op != EXPR_DOT || L->dotpre[e->id * VTILE] || e->ty.kind != TY_F32)
		return;
	int r = -1, k = -1;
	for (int s = 0; s < 2; s++) {
		Expr *x = e->a[s];
		if (x->op != EXPR_VAR || x->ty.kind != TY_F32)
			return;
		const Var *v = ir_var(c->ir, x->k);
		if (v->kind == VAR_ROW)
			r = v->slot;
		else if (v->kind == VAR_COL)
			k = v->slot;
	}
	if (r < 0 || k < 0)
		return;
	LV y[VTILE], x = b->rowv[r];
	if (b->qbuf && L->W == 1) {
		if (spec_decl_width(&c->row[r]) % DOT_CHUNK == 0)
			dots_chunks(b, e, r, k, T);
		return;
	}
	if (b->qbuf) {
		dots_loop(b, e, r, k, T);
		return;
	}
	for (int t = 0; t < T; t++)
		if (!(y[t] = kern_staged_col(b, k, t)).n)
			return;
	LLVMValueRef *s = L->dotpre + e->id * VTILE;
	for (int u = 0; u < x.n; u++)
		for (int t = 0; t < T; t++) {
			if (!u) {
				s[t] = LLVMBuildFMul(L->b, lower_lv_at(x, u), lower_lv_at(y[t], u), "");
				continue;
			}
			LLVMValueRef args[3] = {lower_lv_at(x, u), lower_lv_at(y[t], u), s[t]};
			s[t] = lower_intrinsic(L, "llvm.fmuladd", LLVMTypeOf(s[t]), args, 3);
		}
}

/* The vector fields other than the max whose lift is a staged column input
 * of their width: each in an array on the stack (its slots in acc point
 * into it), for fold_loop.  NULL where there is none. */
static LLVMValueRef *fields_in_arrays(B *b, LV *acc)
{
	Carrier *c = b->k->c;
	LLVMValueRef *a = calloc(c->nstate + 1, sizeof *a);
	int any = 0;
	LLVMTypeRef vt = lower_vty(&b->L, TY_F32);
	for (int f = 0; f < c->nstate; f++) {
		Expr *e = c->lift[f];
		int n = spec_decl_width(&c->state[f]);
		if (f == b->k->mr_field || n < 4 || c->state[f].ty.kind != TY_F32 || e->op != EXPR_VAR ||
		    c->identity[f]->op != EXPR_CONST)
			continue;
		const Var *v = ir_var(c->ir, e->k);
		if (v->kind != VAR_COL || c->col[v->slot].ty.kind != TY_F32 || spec_decl_width(&c->col[v->slot]) != n)
			continue;
		a[f] = LLVMBuildArrayAlloca(b->L.ab, vt, ci64(b, n), "field");
		LLVMSetAlignment(a[f], 64);
		for (int t = 0; t < n; t++) {
			LLVMValueRef idx = ci64(b, t);
			acc[f].c[t] = LLVMBuildGEP2(b->L.ab, vt, a[f], &idx, 1, "");
		}
		any = 1;
	}
	if (!any) {
		free(a);
		return NULL;
	}
	return a;
}

/* assoc_reduce_rows(a, i, lo, hi, st): rows i .. i + group - 1 over
 * [lo, hi), the states one after the other from st.  The rows are the
 * lanes (kern_bind_inputs with b->row_lanes): a position's column inputs
 * (attention's key and value) are one broadcast value, each row's inputs
 * one lane, so the dot product of a query with a key is a chain of vector
 * multiply-adds with no horizontal sum, and the state's vectors update
 * group rows an instruction.  Tiles of positions fold as in reduce_tiles. */
/* And assoc_reduce_rows_pages(a, i, p0, p1, st, table, page_size), with
 * paged: the rows over the keys of pages p0 .. p1 - 1 as
 * assoc_reduce_pages reads them, the loops over a page's keys these. */
static void build_reduce_rows(B *b, int paged)
{
	Kern *k = b->k;
	if (k->keys && k->group < KEYS_ROWS) {
		build_keys(b, paged ? "assoc_reduce_rows_pages" : "assoc_reduce_rows", k->group, paged);
		return;
	}
	/* tile_body and tile_mask_branch read k->tile: this function's, until its end */
	int ns = k->c->nstate, G = k->group, T = k->rows_tile, one_row_tile = k->tile;
	k->tile = T;
	LLVMTypeRef p[7];
	kern_sig(b, paged ? 7 : 5, p);
	p[4] = b->i8p, p[5] = paged ? b->i8p : p[5];
	b->row_lanes = 1;
	LLVMValueRef f = kern_begin_fn(b, paged ? "assoc_reduce_rows_pages" : "assoc_reduce_rows", p, paged ? 7 : 5);
	LLVMValueRef lo = LLVMGetParam(f, 2), hi = LLVMGetParam(f, 3);
	LV *tmp = calloc(4 * ns, sizeof *tmp), *lifted = calloc((size_t)T * ns, sizeof *lifted), *s[VTILE + 1];
	b->i = LLVMGetParam(f, 1);
	b->L.fma = 1;
	lower_scope(&b->L, G);
	b->ilanes = kern_lanes_i(b);
	LV *acc = kern_state_slots(b);
	if (k->loop_unroll && kern_staged_width(k->c))
		b->obuf = fields_in_arrays(b, acc);
	kern_identity(b, b->st);
	kern_slots_store(b, acc, b->st);
	int cw = kern_staged_width(k->c);
	b->colbuf = cw ? LLVMBuildArrayAlloca(b->L.ab, lower_kty(&b->L, TY_F32), ci64(b, (long long)T * cw), "colbuf") : NULL;
	if (cw)
		LLVMSetAlignment(b->colbuf, 64);
	/* the rows' inputs before the loop: the barrier of kern_stage_columns
	 * keeps LICM from hoisting them */
	Carrier *c = k->c;
	b->rowv = calloc(c->nrow + 1, sizeof *b->rowv);
	if (k->loop_unroll && cw) {
		/* float32 row inputs gathered by a loop into qbuf, their vectors
		 * loaded from there (where anything but dots_loop reads them) */
		int nq = 0;
		for (int r = 0; r < c->nrow; r++)
			nq += spec_decl_width(&c->row[r]);
		LLVMTypeRef vt = lower_vty(&b->L, TY_F32);
		b->qbuf = LLVMBuildArrayAlloca(b->L.ab, vt, ci64(b, nq ? nq : 1), "qbuf");
		LLVMSetAlignment(b->qbuf, 64);
		for (int r = 0, at = 0; r < c->nrow; at += spec_decl_width(&c->row[r]), r++) {
			if (c->row[r].ty.kind != TY_F32) {
				b->rowv[r] = kern_row_lanes_decl(b, &c->row[r], b->inp[c->nelem + c->ncol + r]);
				continue;
			}
			kern_row_lanes_into(b, &c->row[r], b->inp[c->nelem + c->ncol + r], b->qbuf, at);
			b->rowv[r] = lower_lv_new(&b->L, spec_decl_width(&c->row[r]));
			for (int t = 0; t < b->rowv[r].n; t++) {
				LLVMValueRef idx = ci64(b, at + t);
				b->rowv[r].c[t] = LLVMBuildLoad2(b->L.b, vt, LLVMBuildGEP2(b->L.b, vt, b->qbuf, &idx, 1, ""), "");
			}
		}
	} else {
		for (int r = 0; r < c->nrow; r++)
			b->rowv[r] = kern_row_lanes_decl(b, &c->row[r], b->inp[c->nelem + c->ncol + r]);
	}
	PageLoop pl;
	if (paged)
		pages_begin(b, &pl, LLVMGetParam(f, 2), LLVMGetParam(f, 3), LLVMGetParam(f, 5), LLVMGetParam(f, 6), &lo, &hi);
	Loop l = kern_loop_begin(b, lo, hi, T);
	if (paged)
		kern_prefetch_keys(b, l.iv, T);
	if (cw) {
		kern_stage_columns(b, l.iv, T);
		b->L.dotpre = calloc((size_t)b->L.nmemo * VTILE, sizeof *b->L.dotpre);
		for (int f = 0; f < ns; f++)
			dots_ahead(b, c->lift[f], T);
		if (c->mask)
			dots_ahead(b, c->mask, T);
	}
	tile_bodies(b, &l, acc, lifted, s, tmp, G);
	free(b->L.dotpre);
	b->L.dotpre = NULL;
	b->L.dotslot = 0;
	kern_loop_end(b, &l);
	Loop e = kern_loop_begin(b, kern_loop_final(b, &l), hi, 1);
	lower_scope(&b->L, G);
	if (cw)
		kern_stage_columns(b, e.iv, 1);
	b->colslot = 0;
	kern_step_slots(b, acc, e.iv, tmp);
	kern_loop_end(b, &e);
	if (paged)
		pages_end(b, &pl);
	kern_slots_load(b, acc, b->st);
	/* each row's state out of its lane: the fields in arrays by a loop
	 * over their components, the others unrolled */
	LLVMValueRef out = LLVMGetParam(f, 4);
	for (int g = 0; g < ns; g++) {
		LLVMTypeRef ty = lower_kty(&b->L, (TyKind)c->state[g].ty.kind), vt = lower_vty(&b->L, (TyKind)c->state[g].ty.kind);
		if (b->obuf && b->obuf[g]) {
			LLVMValueRef t = kern_count_open(b, "scatter");
			LLVMValueRef v = LLVMBuildLoad2(b->L.b, vt, LLVMBuildGEP2(b->L.b, vt, b->obuf[g], &t, 1, ""), "");
			for (int r = 0; r < G; r++)
				LLVMBuildStore(b->L.b, LLVMBuildExtractElement(b->L.b, v, LLVMConstInt(b->i32, r, 0), ""),
					       kern_mem_slot(b, kern_state_at(b, out, r), g, t, ty));
			kern_count_close(b, t, spec_decl_width(&c->state[g]), 0);
			continue;
		}
		for (int r = 0; r < G; r++)
			for (int t = 0; t < b->st[g].n; t++)
				LLVMBuildStore(b->L.b, LLVMBuildExtractElement(b->L.b, lower_lv_at(b->st[g], t), LLVMConstInt(b->i32, r, 0), ""),
					       kern_mem_slot(b, kern_state_at(b, out, r), g, ci64(b, t), ty));
	}
	b->row_lanes = 0, b->ilanes = NULL;
	b->L.fma = 0;
	b->colbuf = NULL;
	b->qbuf = NULL;
	free(b->obuf);
	b->obuf = NULL;
	free(b->rowv);
	b->rowv = NULL;
	free(acc);
	free(lifted);
	free(tmp);
	k->tile = one_row_tile;
	kern_end_fn(b);
}

void kern_build_reduce_rows(B *b) { build_reduce_rows(b, 0); }
void kern_build_reduce_rows_pages(B *b) { build_reduce_rows(b, 1); }
