/* llvm_topk.c: topk and topk_idx (ir/ops.def) lowered to compare-selects
 * on the scope's lanes.
 *
 * Both operand lists are sorted, as lift and merge make them (the type
 * checker admits no other operands: docs/spec-format.md).  A list of one
 * against a list of k (a lift merged into an accumulator) is an insertion:
 * k rankings and two selects a slot.  Two lists of k are a bitonic merge:
 * the better of a[t] and b[K-1-t] is the top K of the union as a bitonic
 * sequence, which log2 K rounds of compare-exchanges sort (K the power of
 * two at or above k, the slots past k empty). */
#include "compiler/llvm/llvm_int.h"

#include <math.h>
#include <string.h>

typedef struct {
	LLVMValueRef v, i;
} Slot;

/* Whether x ranks before y: ir_topk_before, lane by lane. */
static LLVMValueRef before(Lower *L, Slot x, Slot y)
{
	LLVMBuilderRef b = L->b;
	LLVMValueRef gt = LLVMBuildFCmp(b, LLVMRealOGT, x.v, y.v, "");
	LLVMValueRef eq = LLVMBuildFCmp(b, LLVMRealOEQ, x.v, y.v, "");
	LLVMValueRef xn = LLVMBuildFCmp(b, LLVMRealUNO, x.v, x.v, ""), yn = LLVMBuildFCmp(b, LLVMRealUNO, y.v, y.v, "");
	/* NaN after every number, two NaNs tied */
	gt = LLVMBuildOr(b, gt, LLVMBuildAnd(b, yn, LLVMBuildNot(b, xn, ""), ""), "");
	eq = LLVMBuildOr(b, eq, LLVMBuildAnd(b, xn, yn, ""), "");
	/* unsigned: the empty slot's -1 after every index */
	LLVMValueRef lt = LLVMBuildICmp(b, LLVMIntULT, x.i, y.i, "");
	return LLVMBuildOr(b, gt, LLVMBuildAnd(b, eq, lt, ""), "topk.before");
}

static Slot pick(Lower *L, LLVMValueRef c, Slot x, Slot y)
{
	return (Slot){LLVMBuildSelect(L->b, c, x.v, y.v, ""), LLVMBuildSelect(L->b, c, x.i, y.i, "")};
}

static int is_empty(Slot s, Slot empty) { return s.v == empty.v && s.i == empty.i; }

/* The single pair of a list that is one pair and empty slots; -1 for
 * any other list, -2 for an empty one. */
static int single(const Slot *s, int n, Slot empty)
{
	int at = -2;
	for (int t = 0; t < n; t++)
		if (!is_empty(s[t], empty)) {
			if (at != -2)
				return -1;
			at = t;
		}
	return at == 0 || at == -2 ? at : -1;
}

static void insert(Lower *L, const Slot *a, Slot x, int k, Slot *out)
{
	LLVMValueRef c[IR_TOPK_MAX];
	for (int t = 0; t < k; t++)
		c[t] = before(L, x, a[t]);
	/* c is monotone over a sorted list: slot t keeps a[t], takes x, or takes a[t - 1] */
	for (int t = 0; t < k; t++) {
		out[t] = pick(L, c[t], x, a[t]);
		if (t)
			out[t] = pick(L, c[t - 1], a[t - 1], out[t]);
	}
}

/* Where one lane runs, the insertion is branched around when x ranks
 * after a's last slot, as nearly every position of a long row does once
 * the list has filled: a ranking and a branch the predictor gets right. */
static void insert_branched(Lower *L, const Slot *a, Slot x, int k, Slot *out)
{
	LLVMBuilderRef b = L->b;
	LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
	LLVMValueRef fn = LLVMGetBasicBlockParent(from);
	LLVMBasicBlockRef ins = LLVMAppendBasicBlockInContext(L->ctx, fn, "topk.insert");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, fn, "topk.join");
	LLVMValueRef in = before(L, x, a[k - 1]);
	LLVMValueRef br = LLVMBuildCondBr(b, in, ins, join);
	LLVMValueRef w[2] = {LLVMMDStringInContext(L->ctx, "branch_weights", 14),
			     LLVMConstInt(LLVMInt32TypeInContext(L->ctx), 1, 0)};
	LLVMValueRef md[3] = {w[0], w[1], LLVMConstInt(LLVMInt32TypeInContext(L->ctx), 64, 0)};
	LLVMSetMetadata(br, LLVMGetMDKindIDInContext(L->ctx, "prof", 4), LLVMMDNodeInContext(L->ctx, md, 3));
	LLVMPositionBuilderAtEnd(b, ins);
	Slot got[IR_TOPK_MAX];
	insert(L, a, x, k, got);
	LLVMBasicBlockRef ins_end = LLVMGetInsertBlock(b);
	LLVMBuildBr(b, join);
	LLVMPositionBuilderAtEnd(b, join);
	for (int t = 0; t < k; t++) {
		LLVMValueRef pv = LLVMBuildPhi(b, LLVMTypeOf(a[t].v), ""), pi = LLVMBuildPhi(b, LLVMTypeOf(a[t].i), "");
		LLVMValueRef vv[2] = {a[t].v, got[t].v}, vi[2] = {a[t].i, got[t].i};
		LLVMBasicBlockRef bb[2] = {from, ins_end};
		LLVMAddIncoming(pv, vv, bb, 2);
		LLVMAddIncoming(pi, vi, bb, 2);
		out[t] = (Slot){pv, pi};
	}
}

static void bitonic(Lower *L, const Slot *a, const Slot *b, int K, Slot *out)
{
	for (int t = 0; t < K; t++)
		out[t] = pick(L, before(L, a[t], b[K - 1 - t]), a[t], b[K - 1 - t]);
	for (int d = K / 2; d >= 1; d /= 2)
		for (int t = 0; t < K; t++) {
			if (t & d)
				continue;
			LLVMValueRef sw = before(L, out[t + d], out[t]);
			Slot hi = pick(L, sw, out[t + d], out[t]), lo = pick(L, sw, out[t], out[t + d]);
			out[t] = hi, out[t + d] = lo;
		}
}

static void list(Lower *L, Expr *v, Expr *i, int K, Slot empty, Slot *out)
{
	LV lv = lower_expr(L, v), li = lower_expr(L, i);
	int n = lower_width(v);
	for (int t = 0; t < K; t++)
		out[t] = t < n ? (Slot){lower_lv_at(lv, t), lower_lv_at(li, t)} : empty;
}

LV lower_topk(Lower *L, Expr *e)
{
	int k = e->k, K = 1;
	while (K < k)
		K *= 2;
	TyKind vk = (TyKind)e->a[0]->ty.kind;
	Slot empty = {lower_const(L, vk, -INFINITY), lower_const(L, TY_I32, -1)};
	Slot a[IR_TOPK_MAX], b[IR_TOPK_MAX], out[IR_TOPK_MAX];
	list(L, e->a[0], e->a[1], K, empty, a);
	list(L, e->a[2], e->a[3], K, empty, b);
	int sa = single(a, K, empty), sb = single(b, K, empty);
	int one_b = sb == 0, one_a = !one_b && sa == 0;
	if (sa == -2 || sb == -2) /* a list of one (a lift) merged with none: itself */
		memcpy(out, sa == -2 ? b : a, k * sizeof *out);
	else if ((one_a || one_b) && L->probe) {
		/* the list changes iff the pair ranks before its last slot */
		LLVMValueRef in = before(L, one_b ? b[0] : a[0], (one_b ? a : b)[k > 1 ? k - 1 : 0]);
		L->changed = L->changed ? LLVMBuildOr(L->b, L->changed, in, "") : in;
		memcpy(out, one_b ? a : b, k * sizeof *out);
	} else if ((one_a || one_b) && L->W == 1 && !LLVMIsConstant(one_b ? b[0].v : a[0].v))
		insert_branched(L, one_b ? a : b, one_b ? b[0] : a[0], k, out);
	else if (one_a || one_b)
		insert(L, one_b ? a : b, one_b ? b[0] : a[0], k, out);
	else
		bitonic(L, a, b, K, out);
	/* both outputs from one ranking: the sibling's value is set here */
	LV r[2] = {lower_lv_new(L, k), lower_lv_new(L, k)};
	for (int t = 0; t < k; t++)
		r[0].c[t] = out[t].v, r[1].c[t] = out[t].i;
	Expr *sib = ir_topk_sibling(L->c->ir, e);
	if (sib)
		lower_preset(L, sib, r[sib->op == EXPR_TOPK_IDX]);
	return r[e->op == EXPR_TOPK_IDX];
}

/* ---- lists in the lanes of one vector (reduce_selected, llvm_reduce.c) ---- */

/* Lane l of x with lane perm[l] of x, for a permutation of W lanes. */
static LLVMValueRef lanes_perm(Lower *L, LLVMValueRef x, const int *perm, int W)
{
	LLVMValueRef m[64];
	for (int l = 0; l < W; l++)
		m[l] = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), (unsigned)perm[l], 0);
	return LLVMBuildShuffleVector(L->b, x, x, LLVMConstVector(m, (unsigned)W), "");
}

/* Lane by lane, whether (v, i) ranks before (pv, pi) where no value is
 * NaN (ir_topk_before without its NaN cases); v alone (i NULL): v > pv. */
static LLVMValueRef before_lanes(Lower *L, LLVMValueRef v, LLVMValueRef i, LLVMValueRef pv, LLVMValueRef pi)
{
	LLVMValueRef gt = LLVMBuildFCmp(L->b, LLVMRealOGT, v, pv, "");
	if (!i)
		return gt;
	LLVMValueRef eq = LLVMBuildFCmp(L->b, LLVMRealOEQ, v, pv, "");
	LLVMValueRef lt = LLVMBuildICmp(L->b, LLVMIntULT, i, pi, "");
	return LLVMBuildOr(L->b, gt, LLVMBuildAnd(L->b, eq, lt, ""), "");
}

/* ---- one list beside the lanes (lists apart, llvm_reduce.c) ---- */

LLVMValueRef lower_topk_enters(Lower *L, LLVMValueRef v, LLVMValueRef i, LLVMValueRef lv, LLVMValueRef li)
{
	/* lv a number: a NaN v compares false, and ranks after it */
	return before_lanes(L, v, i, lv, li);
}

/* x's lanes moved up by one, lane 0 from y's lane 0. */
static LLVMValueRef shift_up(Lower *L, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef m[IR_TOPK_MAX];
	unsigned n = LLVMGetVectorSize(LLVMTypeOf(x));
	for (unsigned l = 0; l < n; l++)
		m[l] = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), l ? l - 1 : n, 0);
	return LLVMBuildShuffleVector(L->b, x, y, LLVMConstVector(m, n), "");
}

static LLVMValueRef splat_of(Lower *L, LLVMValueRef x, unsigned n)
{
	LLVMValueRef z[IR_TOPK_MAX];
	for (unsigned l = 0; l < n; l++)
		z[l] = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), 0, 0);
	LLVMValueRef v = LLVMBuildInsertElement(L->b, LLVMGetUndef(LLVMVectorType(LLVMTypeOf(x), n)), x,
					       LLVMConstInt(LLVMInt32TypeInContext(L->ctx), 0, 0), "");
	return LLVMBuildShuffleVector(L->b, v, LLVMGetUndef(LLVMTypeOf(v)), LLVMConstVector(z, n), "");
}

void lower_topk_insert(Lower *L, LLVMValueRef *v, LLVMValueRef *i, LLVMValueRef x, LLVMValueRef xi)
{
	unsigned n = LLVMGetVectorSize(LLVMTypeOf(*v));
	LLVMValueRef sx = splat_of(L, x, n), si = splat_of(L, xi, n);
	/* monotone over the sorted lanes: slot t takes x where x ranks
	 * before it and not before slot t - 1, slot t - 1's pair where x
	 * ranks before that too, else keeps its own */
	LLVMValueRef c = before_lanes(L, sx, si, *v, *i);
	LLVMValueRef up = shift_up(L, c, LLVMConstNull(LLVMTypeOf(c)));
	LLVMValueRef nv = LLVMBuildSelect(L->b, c, sx, *v, ""), ni = LLVMBuildSelect(L->b, c, si, *i, "");
	*v = LLVMBuildSelect(L->b, up, shift_up(L, *v, *v), nv, "");
	*i = LLVMBuildSelect(L->b, up, shift_up(L, *i, *i), ni, "");
}

/* One compare-exchange step of lanes l and l ^ d: the lane whose
 * first[l] is set keeps the pair that ranks first, its partner the
 * other. */
static void exchange(Lower *L, LLVMValueRef *v, LLVMValueRef *i, int d, const int *first, int W)
{
	int perm[64];
	LLVMValueRef keep[64];
	LLVMTypeRef i1 = LLVMInt1TypeInContext(L->ctx);
	for (int l = 0; l < W; l++) {
		perm[l] = l ^ d;
		/* own pair kept where (it ranks before the partner's) == first[l] */
		keep[l] = LLVMConstInt(i1, !first[l], 0);
	}
	LLVMValueRef pv = lanes_perm(L, *v, perm, W), pi = i ? lanes_perm(L, *i, perm, W) : NULL;
	LLVMValueRef c = LLVMBuildXor(L->b, before_lanes(L, *v, i ? *i : NULL, pv, pi), LLVMConstVector(keep, (unsigned)W), "");
	*v = LLVMBuildSelect(L->b, c, *v, pv, "");
	if (i)
		*i = LLVMBuildSelect(L->b, c, *i, pi, "");
}

/* The bitonic cleaner of a bitonic sequence of W lanes: sorted. */
static void clean(Lower *L, LLVMValueRef *v, LLVMValueRef *i, int W)
{
	int first[64];
	for (int d = W / 2; d >= 1; d /= 2) {
		for (int l = 0; l < W; l++)
			first[l] = !(l & d);
		exchange(L, v, i, d, first, W);
	}
}

void lower_topk_sort(Lower *L, LLVMValueRef *v, LLVMValueRef *i)
{
	int W = L->W, first[64];
	for (int s = 2; s < W; s *= 2)
		for (int d = s / 2; d >= 1; d /= 2) {
			/* runs of s lanes alternately first-ranked and last-ranked
			 * first: each pair of them is a bitonic run of 2s */
			for (int l = 0; l < W; l++)
				first[l] = !(l & d) == !(l & s);
			exchange(L, v, i, d, first, W);
		}
	clean(L, v, i, W);
}

void lower_topk_top(Lower *L, LLVMValueRef *v, LLVMValueRef *i, LLVMValueRef v2, LLVMValueRef i2)
{
	int W = L->W, rev[64];
	for (int l = 0; l < W; l++)
		rev[l] = W - 1 - l;
	/* the better of lane l and lane W-1-l of the other: the top W of the
	 * two, as a bitonic sequence */
	LLVMValueRef rv = lanes_perm(L, v2, rev, W), ri = lanes_perm(L, i2, rev, W);
	LLVMValueRef c = before_lanes(L, *v, *i, rv, ri);
	*v = LLVMBuildSelect(L->b, c, *v, rv, "");
	*i = LLVMBuildSelect(L->b, c, *i, ri, "");
	clean(L, v, i, W);
}

/* ---- pairs as 64-bit keys (reduce_selected's candidates) ---- */

static LLVMValueRef splat_int(LLVMTypeRef vt, unsigned long long v)
{
	LLVMValueRef c[64];
	unsigned n = LLVMGetVectorSize(vt);
	for (unsigned l = 0; l < n; l++)
		c[l] = LLVMConstInt(LLVMGetElementType(vt), v, 0);
	return LLVMConstVector(c, n);
}

LLVMValueRef lower_ord_bits(Lower *L, LLVMValueRef v)
{
	LLVMBuilderRef b = L->b;
	LLVMTypeRef it = LLVMVectorType(LLVMInt32TypeInContext(L->ctx), LLVMGetVectorSize(LLVMTypeOf(v)));
	LLVMValueRef u = LLVMBuildBitCast(b, v, it, "");
	/* negative: every bit flipped; else the sign bit set */
	LLVMValueRef s = LLVMBuildAShr(b, u, splat_int(it, 31), "");
	return LLVMBuildXor(b, u, LLVMBuildOr(b, s, splat_int(it, 0x80000000u), ""), "ord");
}

LLVMValueRef lower_ord_float(Lower *L, LLVMValueRef u)
{
	LLVMBuilderRef b = L->b;
	LLVMTypeRef it = LLVMTypeOf(u);
	LLVMValueRef s = LLVMBuildAShr(b, u, splat_int(it, 31), "");
	LLVMValueRef m = LLVMBuildOr(b, LLVMBuildNot(b, s, ""), splat_int(it, 0x80000000u), "");
	LLVMTypeRef ft = LLVMVectorType(LLVMFloatTypeInContext(L->ctx), LLVMGetVectorSize(it));
	return LLVMBuildBitCast(b, LLVMBuildXor(b, u, m, ""), ft, "");
}

/* A compare-exchange of lanes l and l ^ d of integer vector x, by unsigned
 * max and min: lane l keeps the larger where first[l]. */
static LLVMValueRef exchange_keys(Lower *L, LLVMValueRef x, int d, const int *first, int W)
{
	int perm[64] = {0};
	LLVMValueRef m[64];
	for (int l = 0; l < W; l++)
		perm[l] = l ^ d;
	LLVMValueRef p = lanes_perm(L, x, perm, W), a[2] = {x, p};
	LLVMValueRef hi = lower_intrinsic(L, "llvm.umax", LLVMTypeOf(x), a, 2);
	LLVMValueRef lo = lower_intrinsic(L, "llvm.umin", LLVMTypeOf(x), a, 2);
	for (int l = 0; l < W; l++)
		m[l] = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), (unsigned)(first[l] ? l : W + l), 0);
	return LLVMBuildShuffleVector(L->b, hi, lo, LLVMConstVector(m, (unsigned)W), "");
}

LLVMValueRef lower_sort_keys(Lower *L, LLVMValueRef x, int desc)
{
	int W = (int)LLVMGetVectorSize(LLVMTypeOf(x)), first[64];
	for (int s = 2; s <= W; s *= 2)
		for (int d = s / 2; d >= 1; d /= 2) {
			/* runs of s lanes alternately one way and the other, the
			 * last (s = W) the way asked */
			for (int l = 0; l < W; l++)
				first[l] = (!(l & d)) == ((l & s) ? !desc : desc);
			x = exchange_keys(L, x, d, first, W);
		}
	return x;
}

/* The bitonic cleaner of x's lanes, to descending order. */
static LLVMValueRef clean_keys(Lower *L, LLVMValueRef x)
{
	int W = (int)LLVMGetVectorSize(LLVMTypeOf(x)), first[64];
	for (int d = W / 2; d >= 1; d /= 2) {
		for (int l = 0; l < W; l++)
			first[l] = !(l & d);
		x = exchange_keys(L, x, d, first, W);
	}
	return x;
}

void lower_topk_keys(Lower *L, LLVMValueRef v, LLVMValueRef i, int k, LLVMValueRef *ov, LLVMValueRef *oi)
{
	LLVMBuilderRef b = L->b;
	LLVMContextRef ctx = L->ctx;
	LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx);
	LLVMValueRef ord = lower_ord_bits(L, v), ni = LLVMBuildNot(b, i, "");
	LLVMValueRef half[2];
	for (int h = 0; h < 2; h++) {
		/* key = ord << 32 | ~i: the larger key, the pair that ranks first */
		LLVMValueRef m[16];
		for (int l = 0; l < 16; l++)
			m[l] = LLVMConstInt(i32, (unsigned)(h * 8 + l / 2 + (l & 1) * 16), 0);
		LLVMValueRef kv = LLVMBuildShuffleVector(b, ni, ord, LLVMConstVector(m, 16), "");
		half[h] = LLVMBuildBitCast(b, kv, LLVMVectorType(i64, 8), "keys");
	}
	/* one half descending, the other ascending: a bitonic sequence of 16,
	 * whose larger half the lanes' maxima are */
	half[0] = lower_sort_keys(L, half[0], 1);
	half[1] = lower_sort_keys(L, half[1], 0);
	LLVMValueRef a[2] = {half[0], half[1]};
	LLVMValueRef top = lower_intrinsic(L, "llvm.umax", LLVMTypeOf(half[0]), a, 2);
	LLVMValueRef keys = clean_keys(L, top);
	if (k > 8) {
		LLVMValueRef rest = clean_keys(L, lower_intrinsic(L, "llvm.umin", LLVMTypeOf(half[0]), a, 2));
		LLVMValueRef m[16];
		for (int l = 0; l < 16; l++)
			m[l] = LLVMConstInt(i32, (unsigned)l, 0);
		keys = LLVMBuildShuffleVector(b, keys, rest, LLVMConstVector(m, 16), "");
	}
	int n = (int)LLVMGetVectorSize(LLVMTypeOf(keys));
	LLVMTypeRef v64 = LLVMVectorType(i64, (unsigned)n), v32 = LLVMVectorType(i32, (unsigned)n);
	*oi = LLVMBuildNot(b, LLVMBuildTrunc(b, keys, v32, ""), "");
	*ov = lower_ord_float(L, LLVMBuildTrunc(b, LLVMBuildLShr(b, keys, splat_int(v64, 32), ""), v32, ""));
}
