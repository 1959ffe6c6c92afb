/* llvm_kern.c: the functions of a CPU kernel (runtime/cpu.h) as LLVM IR:
 * identity, reduce, merge, finalize, map, rowmap and scan around the
 * carrier's expressions; here the inputs and outputs, loops, states and
 * the small functions, reduce in llvm_reduce.c, map and rowmap in
 * llvm_map.c.  Any carrier without vectors (non-commutative merge:
 * operand order matters; vector fields) folds left to right in one
 * scalar state.  A masked-out position lifts to the identity.
 * State memory: one 8-byte slot per component, in field order. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>
#include <llvm-c/Target.h>

#include "compiler/check/check.h"
#include "compiler/llvm/llvm_kern.h"
#include "compiler/devices/run.h"


/* ---- small helpers ---- */


LLVMValueRef kern_ptr_at(B *b, LLVMValueRef base, LLVMTypeRef et, LLVMValueRef idx)
{
	LLVMValueRef p = LLVMBuildBitCast(b->L.b, base, LLVMPointerType(et, 0), "");
	return LLVMBuildGEP2(b->L.b, et, p, &idx, 1, "");
}

/* 16-bit float patterns to f32 (bit manipulation that vectorizes) */
static LLVMValueRef f16_to_f32(B *b, LLVMValueRef h)
{
	Lower *L = &b->L;
	LLVMBuilderRef bb = L->b;
	LLVMTypeRef it = lower_vty(L, TY_I32), ft = lower_vty(L, TY_F32);
	if (L->f16c) {
		/* The fence keeps the value in f32 for good: InstCombine
		 * otherwise narrows fabs(fpext h) (and max(x, -x), which it
		 * makes fabs) to a fabs on half values, which x86 without
		 * AVX512-FP16 does a lane at a time, converting each back to
		 * half (an f16 count of abs(x) > t ran at 0.1 of a copy).  The
		 * fence emits no instruction. */
		LLVMTypeRef ht = LLVMHalfTypeInContext(L->ctx);
		LLVMValueRef f = LLVMBuildFPExt(bb, LLVMBuildBitCast(bb, h, L->W > 1 ? LLVMVectorType(ht, L->W) : ht, ""), ft, "");
		return lower_intrinsic(L, "llvm.arithmetic.fence", ft, &f, 1);
	}
	LLVMValueRef u = LLVMBuildZExt(bb, h, it, "");
	LLVMValueRef sign = LLVMBuildShl(bb, LLVMBuildAnd(bb, u, lower_const(L, TY_I32, 0x8000), ""),
					 lower_const(L, TY_I32, 16), "");
	LLVMValueRef em = LLVMBuildAnd(bb, u, lower_const(L, TY_I32, 0x7fff), "");
	LLVMValueRef o = LLVMBuildShl(bb, em, lower_const(L, TY_I32, 13), "");
	LLVMValueRef ex = LLVMBuildAnd(bb, em, lower_const(L, TY_I32, 0x7c00), "");
	LLVMValueRef norm = LLVMBuildAdd(bb, o, lower_const(L, TY_I32, 112 << 23), "");
	LLVMValueRef inf = LLVMBuildAdd(bb, o, lower_const(L, TY_I32, 224 << 23), "");
	LLVMValueRef magic = LLVMBuildBitCast(bb, lower_const(L, TY_I32, 113 << 23), ft, "");
	LLVMValueRef subf = LLVMBuildFSub(bb, LLVMBuildBitCast(bb, LLVMBuildAdd(bb, o, lower_const(L, TY_I32, 113 << 23), ""), ft, ""),
					  magic, "");
	LLVMValueRef sub = LLVMBuildBitCast(bb, subf, it, "");
	LLVMValueRef r = LLVMBuildSelect(bb, LLVMBuildICmp(bb, LLVMIntEQ, ex, lower_const(L, TY_I32, 0x7c00), ""), inf, norm, "");
	r = LLVMBuildSelect(bb, LLVMBuildICmp(bb, LLVMIntEQ, ex, lower_const(L, TY_I32, 0), ""), sub, r, "");
	return LLVMBuildBitCast(bb, LLVMBuildOr(bb, r, sign, ""), ft, "");
}

/* E4M3 bytes to f32 as templates/common.cuh's asc_f8e4m3 does, lane by
 * lane in selects that vectorize: a normal by moving its fields into
 * float's and the bias from 7 to 127, a subnormal m * 2^-9 by an exact
 * int-to-float conversion, S.1111.111 NaN, the sign or'ed on last. */
static LLVMValueRef f8e4m3_to_f32(B *b, LLVMValueRef h)
{
	Lower *L = &b->L;
	LLVMBuilderRef bb = L->b;
	LLVMTypeRef it = lower_vty(L, TY_I32), ft = lower_vty(L, TY_F32);
	LLVMValueRef u = LLVMBuildZExt(bb, h, it, "");
	LLVMValueRef sign = LLVMBuildShl(bb, LLVMBuildAnd(bb, u, lower_const(L, TY_I32, 0x80), ""),
					 lower_const(L, TY_I32, 24), "");
	LLVMValueRef em = LLVMBuildAnd(bb, u, lower_const(L, TY_I32, 0x7f), "");
	LLVMValueRef norm = LLVMBuildAdd(bb, LLVMBuildShl(bb, em, lower_const(L, TY_I32, 20), ""),
					 lower_const(L, TY_I32, 120 << 23), "");
	LLVMValueRef subf = LLVMBuildFMul(bb, LLVMBuildSIToFP(bb, em, ft, ""), lower_const(L, TY_F32, 0x1p-9), "");
	LLVMValueRef sub = LLVMBuildBitCast(bb, subf, it, "");
	LLVMValueRef normal = LLVMBuildICmp(bb, LLVMIntUGE, em, lower_const(L, TY_I32, 8), "");
	LLVMValueRef r = LLVMBuildSelect(bb, normal, norm, sub, "");
	r = LLVMBuildSelect(bb, LLVMBuildICmp(bb, LLVMIntEQ, em, lower_const(L, TY_I32, 0x7f), ""),
			    lower_const(L, TY_I32, 0x7fc00000), r, "");
	return LLVMBuildBitCast(bb, LLVMBuildOr(bb, r, sign, ""), ft, "");
}

/* A stored value (scalar or the scope's lanes) to its computing kind. */
static LLVMValueRef from_storage(B *b, LLVMValueRef v, TyKind s, TyKind k)
{
	Lower *L = &b->L;
	switch (s) {
	case TY_F16: v = f16_to_f32(b, v), s = TY_F32; break;
	case TY_F8E4M3: v = f8e4m3_to_f32(b, v), s = TY_F32; break;
	case TY_BF16:
		v = LLVMBuildShl(L->b, LLVMBuildZExt(L->b, v, lower_vty(L, TY_I32), ""), lower_const(L, TY_I32, 16), "");
		v = LLVMBuildBitCast(L->b, v, lower_vty(L, TY_F32), "");
		s = TY_F32;
		break;
	case TY_BOOL: return LLVMBuildICmp(L->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
	default: break;
	}
	return lower_conv(L, v, s, k);
}

LLVMValueRef kern_from_storage(B *b, LLVMValueRef v, TyKind s, TyKind k) { return from_storage(b, v, s, k); }

/* llvm.masked.load or .store, overloaded on the vector and pointer types. */
static LLVMValueRef masked(B *b, const char *name, LLVMTypeRef vt, LLVMTypeRef pt, LLVMValueRef *a, int n)
{
	LLVMTypeRef tys[2] = {vt, pt};
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(b->L.mod, id, tys, 2);
	return LLVMBuildCall2(b->L.b, LLVMIntrinsicGetType(b->L.ctx, id, tys, 2), f, a, n, "");
}

/* The lanes of a vector at j that lie below hi. */
LLVMValueRef kern_lanes_below(B *b, LLVMValueRef j, LLVMValueRef hi)
{
	LLVMValueRef iota[64];
	for (int l = 0; l < b->L.W; l++)
		iota[l] = LLVMConstInt(b->i64, l, 0);
	LLVMValueRef jv = lower_splat(&b->L, j);
	jv = LLVMBuildAdd(b->L.b, jv, LLVMConstVector(iota, b->L.W), "");
	return LLVMBuildICmp(b->L.b, LLVMIntSLT, jv, lower_splat(&b->L, hi), "");
}

/* Load the scope's lanes (or one value) of kind s at element index idx of base. */
LLVMValueRef kern_load_lanes(B *b, LLVMValueRef base, TyKind s, LLVMValueRef idx)
{
	Lower *L = &b->L;
	LLVMTypeRef et = storage_ty(b, s);
	LLVMValueRef p = kern_ptr_at(b, base, et, idx);
	LLVMTypeRef t = L->W > 1 ? LLVMVectorType(et, L->W) : et;
	if (L->W > 1)
		p = LLVMBuildBitCast(L->b, p, LLVMPointerType(t, 0), "");
	if (L->W > 1 && b->lmask) {
		LLVMValueRef a[4] = {p, LLVMConstInt(b->i32, run_kind_size(s), 0), b->lmask, LLVMConstNull(t)};
		return masked(b, "llvm.masked.load", t, LLVMPointerType(t, 0), a, 4);
	}
	LLVMValueRef v = LLVMBuildLoad2(L->b, t, p, "");
	LLVMSetAlignment(v, (unsigned)run_kind_size(s));
	return v;
}

void kern_store_lanes(B *b, LLVMValueRef base, TyKind k, LLVMValueRef idx, LLVMValueRef v)
{
	Lower *L = &b->L;
	if (k == TY_BOOL)
		v = LLVMBuildZExt(L->b, v, L->W > 1 ? LLVMVectorType(b->i8, L->W) : b->i8, "");
	LLVMTypeRef et = storage_ty(b, k);
	LLVMValueRef p = kern_ptr_at(b, base, et, idx);
	if (L->W > 1)
		p = LLVMBuildBitCast(L->b, p, LLVMPointerType(LLVMTypeOf(v), 0), "");
	if (L->W > 1 && b->lmask) {
		LLVMValueRef a[4] = {v, p, LLVMConstInt(b->i32, run_kind_size(k), 0), b->lmask};
		masked(b, "llvm.masked.store", LLVMTypeOf(v), LLVMTypeOf(p), a, 4);
		return;
	}
	LLVMValueRef s = LLVMBuildStore(L->b, v, p);
	LLVMSetAlignment(s, b->nt ? 64 : (unsigned)run_kind_size(k));
	if (b->nt) {
		LLVMValueRef one = LLVMConstInt(b->i32, 1, 0);
		LLVMSetMetadata(s, LLVMGetMDKindIDInContext(L->ctx, "nontemporal", 11), LLVMMDNodeInContext(L->ctx, &one, 1));
	}
}

static LLVMValueRef in_ptr(B *b, int k)
{
	LLVMValueRef idx = ci64(b, k);
	return LLVMBuildLoad2(b->L.b, b->i8p, LLVMBuildGEP2(b->L.b, b->i8p, b->in, &idx, 1, ""), "");
}

static LLVMValueRef out_ptr(B *b, int k)
{
	LLVMValueRef idx = ci64(b, k);
	return LLVMBuildLoad2(b->L.b, b->i8p, LLVMBuildGEP2(b->L.b, b->i8p, b->out, &idx, 1, ""), "");
}

/* ---- functions and loops ---- */


LLVMValueRef kern_begin_fn(B *b, const char *name, LLVMTypeRef *params, int n)
{
	LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(b->L.ctx), params, n, 0);
	LLVMValueRef f = LLVMAddFunction(b->L.mod, name, ft);
	/* the widest vectors any of the kernel's functions uses: a map keeps
	 * its lanes where the reduce has none (a merge that is not
	 * commutative), and its 512-bit AVX-512 exp must be legal there */
	int lanes = b->k->lanes > b->k->map_lanes ? b->k->lanes : b->k->map_lanes;
	if (b->row_lanes)
		lanes = b->k->group;
	if (b->keys_fn && lanes < 16)
		lanes = 16;
	/* reduce_filtered's blocks (and reduce_selected's) of 16 in one
	 * register, not four of 128 bits */
	if (kern_filter_fits(b->k->c) && lanes < FILTER_LANES)
		lanes = FILTER_LANES;
	char w[16];
	snprintf(w, sizeof w, "%d", 32 * (lanes > 1 ? lanes : 4));
	LLVMAddTargetDependentFunctionAttr(f, "min-legal-vector-width", w);
	LLVMAddTargetDependentFunctionAttr(f, "prefer-vector-width", w);
	LLVMAddTargetDependentFunctionAttr(f, "frame-pointer", "none");
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(b->L.ctx, f, "entry");
	LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(b->L.ctx, f, "start");
	LLVMPositionBuilderAtEnd(b->L.ab, entry);
	LLVMPositionBuilderAtEnd(b->L.b, start);
	b->L.fn = f;
	/* every function takes the CpuArgs first */
	LLVMValueRef a = LLVMBuildBitCast(b->L.b, LLVMGetParam(f, 0), LLVMPointerType(b->argsty, 0), "args");
	LLVMValueRef fld[7];
	LLVMTypeRef fty[7] = {LLVMPointerType(b->i8p, 0), LLVMPointerType(b->i8p, 0), LLVMPointerType(b->f64, 0),
			      b->i64, b->i64, b->i64, b->i64};
	for (int i = 0; i < 7; i++)
		fld[i] = LLVMBuildLoad2(b->L.b, fty[i], LLVMBuildStructGEP2(b->L.b, b->argsty, a, i, ""), "");
	b->in = fld[0], b->out = fld[1], b->params = fld[2], b->rows = fld[3], b->len = fld[4];
	/* no period: one past the last row, which no row index reaches */
	LLVMValueRef none = LLVMBuildICmp(b->L.b, LLVMIntSLE, fld[5], ci64(b, 0), "");
	b->period = LLVMBuildSelect(b->L.b, none, LLVMBuildAdd(b->L.b, b->rows, ci64(b, 1), ""), fld[5], "period");
	b->qpos = fld[6];
	Carrier *c = b->k->c;
	for (int k = 0; k < c->nelem + c->ncol + c->nrow; k++)
		b->inp[k] = in_ptr(b, k);
	for (int k = 0; k < c->nfinal + c->nmap; k++)
		b->outp[k] = out_ptr(b, k);
	for (int p = 0; p < c->nparams; p++) {
		LLVMValueRef idx = ci64(b, p);
		b->pv[p] = LLVMBuildLoad2(b->L.b, b->f64, LLVMBuildGEP2(b->L.b, b->f64, b->params, &idx, 1, ""), "");
	}
	return f;
}

void kern_end_fn(B *b)
{
	LLVMBuildRetVoid(b->L.b);
	LLVMBasicBlockRef start = LLVMGetNextBasicBlock(LLVMGetEntryBasicBlock(b->L.fn));
	LLVMBuildBr(b->L.ab, start);
}

Loop kern_loop_begin(B *b, LLVMValueRef lo, LLVMValueRef hi, long long step)
{
	Loop l = {.step = step};
	LLVMBuilderRef bb = b->L.b;
	l.ivp = alloca_(b, b->i64);
	LLVMBuildStore(bb, lo, l.ivp);
	l.head = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "head");
	l.body = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "body");
	l.exit = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "exit");
	LLVMBuildBr(bb, l.head);
	LLVMPositionBuilderAtEnd(bb, l.head);
	LLVMValueRef iv = LLVMBuildLoad2(bb, b->i64, l.ivp, "j");
	/* iv + step <= hi, so a vector step never reads past hi */
	LLVMValueRef next = LLVMBuildAdd(bb, iv, ci64(b, step), "");
	LLVMBuildCondBr(bb, LLVMBuildICmp(bb, LLVMIntSLE, next, hi, ""), l.body, l.exit);
	LLVMPositionBuilderAtEnd(bb, l.body);
	l.iv = iv;
	return l;
}

void kern_loop_end(B *b, Loop *l)
{
	LLVMBuildStore(b->L.b, LLVMBuildAdd(b->L.b, l->iv, ci64(b, l->step), ""), l->ivp);
	LLVMBuildBr(b->L.b, l->head);
	LLVMPositionBuilderAtEnd(b->L.b, l->exit);
}

LLVMValueRef kern_count_open(B *b, const char *name)
{
	Lower *L = &b->L;
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b), body = LLVMAppendBasicBlockInContext(L->ctx, L->fn, name);
	LLVMBuildBr(L->b, body);
	LLVMPositionBuilderAtEnd(L->b, body);
	LLVMValueRef i = LLVMBuildPhi(L->b, b->i64, ""), zero = ci64(b, 0);
	LLVMAddIncoming(i, &zero, &pre, 1);
	return i;
}

void kern_count_close(B *b, LLVMValueRef i, long long n, int unroll)
{
	Lower *L = &b->L;
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "counted");
	LLVMValueRef next = LLVMBuildAdd(L->b, i, ci64(b, 1), "");
	LLVMBasicBlockRef at = LLVMGetInsertBlock(L->b);
	LLVMAddIncoming(i, &next, &at, 1);
	LLVMValueRef br = LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, next, ci64(b, n), ""), LLVMGetInstructionParent(i), done);
	if (unroll > 0) { /* llvm.loop.unroll.count: a self-referential loop ID */
		LLVMContextRef ctx = L->ctx;
		LLVMMetadataRef tmp = LLVMTemporaryMDNode(ctx, NULL, 0);
		LLVMMetadataRef opt[2] = {LLVMMDStringInContext2(ctx, "llvm.loop.unroll.count", 22),
					  LLVMValueAsMetadata(LLVMConstInt(b->i32, (unsigned long long)unroll, 0))};
		LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(ctx, opt, 2)};
		LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, 2);
		LLVMMetadataReplaceAllUsesWith(tmp, id);
		LLVMSetMetadata(br, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9), LLVMMetadataAsValue(ctx, id));
	}
	LLVMPositionBuilderAtEnd(L->b, done);
}

/* What follows runs only where cond holds, up to kern_if_end; values
 * made there stay there (kern_if_end starts a new lowering scope). */
LLVMBasicBlockRef kern_if(B *b, LLVMValueRef cond)
{
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "then");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "endif");
	LLVMBuildCondBr(b->L.b, cond, then, done);
	LLVMPositionBuilderAtEnd(b->L.b, then);
	return done;
}

void kern_if_end(B *b, LLVMBasicBlockRef done)
{
	LLVMBuildBr(b->L.b, done);
	LLVMPositionBuilderAtEnd(b->L.b, done);
	lower_scope(&b->L, b->L.W);
}

/* The loop's final index (where a tail loop starts). */
LLVMValueRef kern_loop_final(B *b, Loop *l) { return LLVMBuildLoad2(b->L.b, b->i64, l->ivp, ""); }

/* ---- binding inputs ---- */

void kern_bind_params(B *b)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	for (int p = 0; p < c->nparams; p++) {
		LLVMValueRef v = b->pv[p];
		int W = L->W;
		L->W = 1;
		v = lower_conv(L, v, TY_F64, (TyKind)c->params[p].ty.kind);
		L->W = W;
		L->bind[c->params[p].var] = lv1(b, lower_splat(L, v));
	}
}

/* A declaration's components at flat element index e (components e*w .. e*w+w-1). */
static LV load_decl(B *b, const Decl *d, LLVMValueRef base, LLVMValueRef e, int lanes)
{
	Lower *L = &b->L;
	int w = spec_decl_width(d);
	LV v = lower_lv_new(L, w);
	LLVMValueRef first = w > 1 ? LLVMBuildMul(L->b, e, ci64(b, w), "") : e;
	for (int t = 0; t < w; t++) {
		LLVMValueRef idx = t ? LLVMBuildAdd(L->b, first, ci64(b, t), "") : first;
		int W = L->W;
		L->W = lanes;
		LLVMValueRef x = from_storage(b, kern_load_lanes(b, base, d->storage, idx), d->storage, (TyKind)d->ty.kind);
		L->W = W;
		v.c[t] = lanes == 1 ? lower_splat(L, x) : x;
	}
	return v;
}

static LLVMValueRef idx32(B *b, LLVMValueRef v) { return LLVMBuildTrunc(b->L.b, v, b->i32, ""); }

/* The element of a column input that holds key j: j, or in a paged pool
 * read in place (Kern.key_stride), j times the key/value heads. */
static LLVMValueRef key_elem(B *b, LLVMValueRef j)
{
	return b->k->key_stride > 1 ? LLVMBuildMul(b->L.b, j, ci64(b, b->k->key_stride), "") : j;
}

LLVMValueRef kern_key_elem(B *b, LLVMValueRef j) { return key_elem(b, j); }

/* Column input d at keys j .. j + lanes - 1 as load_decl loads them.  Keys
 * a stride apart (a paged pool of several key/value heads) in more than
 * one lane, which only a scalar column meets, are gathered: a contiguous
 * vector would read the other heads' keys. */
static LV load_col(B *b, const Decl *d, LLVMValueRef base, LLVMValueRef j, int lanes)
{
	Lower *L = &b->L;
	int s = b->k->key_stride, w = spec_decl_width(d);
	if (s <= 1 || lanes == 1)
		return load_decl(b, d, base, key_elem(b, j), lanes);
	int W = L->W;
	L->W = lanes;
	LLVMTypeRef et = storage_ty(b, d->storage), vt = LLVMVectorType(et, lanes);
	LLVMValueRef off[64], ones[64];
	for (int l = 0; l < lanes; l++) {
		off[l] = LLVMConstInt(b->i64, (unsigned long long)l * s * w, 0);
		ones[l] = LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0);
	}
	LLVMValueRef first = LLVMBuildMul(L->b, key_elem(b, j), ci64(b, w), "");
	LLVMValueRef mask = b->lmask ? b->lmask : LLVMConstVector(ones, lanes);
	LV v = lower_lv_new(L, w);
	for (int t = 0; t < w; t++) {
		LLVMValueRef at = LLVMBuildAdd(L->b, lower_splat(L, LLVMBuildAdd(L->b, first, ci64(b, t), "")),
					       LLVMConstVector(off, lanes), "");
		LLVMValueRef ptrs = LLVMBuildGEP2(L->b, et, LLVMBuildBitCast(L->b, base, LLVMPointerType(et, 0), ""), &at, 1, "");
		LLVMValueRef args[4] = {ptrs, LLVMConstInt(b->i32, run_kind_size(d->storage), 0), mask, LLVMConstNull(vt)};
		LLVMTypeRef tys[2] = {vt, LLVMTypeOf(ptrs)};
		unsigned id = LLVMLookupIntrinsicID("llvm.masked.gather", 18);
		LLVMValueRef fn = LLVMGetIntrinsicDeclaration(L->mod, id, tys, 2);
		LLVMValueRef x = LLVMBuildCall2(L->b, LLVMIntrinsicGetType(L->ctx, id, tys, 2), fn, args, 4, "");
		v.c[t] = from_storage(b, x, d->storage, (TyKind)d->ty.kind);
	}
	L->W = W;
	return v;
}

/* Rows as lanes (kern_build_reduce_rows) meet each component of a column
 * input as one value broadcast to every lane.  Converted one component
 * at a time, an f16 vector took four instructions a component (a 16-bit
 * load, a move, vcvtph2ps, a broadcast), 61% of attention's loop at head
 * dim 64.  A float32 vector column input is therefore converted a tile
 * of positions at a time with vector instructions into a buffer on the
 * stack (colbuf), from which each component is one broadcast load, which
 * x86 folds into the multiply that uses it. */
static int staged(const Decl *d) { return d->ty.kind == TY_F32 && spec_decl_width(d) >= 4; }

int kern_staged_width(const Carrier *c)
{
	int n = 0;
	for (int k = 0; k < c->ncol; k++)
		n += staged(&c->col[k]) ? spec_decl_width(&c->col[k]) : 0;
	return n;
}

int kern_staged_off(const Carrier *c, int k)
{
	int off = 0;
	for (int q = 0; q < k; q++)
		off += staged(&c->col[q]) ? spec_decl_width(&c->col[q]) : 0;
	return off;
}

static LLVMValueRef colbuf_at(B *b, long long at, LLVMTypeRef t)
{
	LLVMValueRef idx = ci64(b, at);
	LLVMValueRef p = LLVMBuildGEP2(b->L.b, lower_kty(&b->L, TY_F32), b->colbuf, &idx, 1, "");
	return LLVMBuildBitCast(b->L.b, p, LLVMPointerType(t, 0), "");
}

/* Column input k of the tile's position slot, from colbuf, each component
 * broadcast to the lanes; n = 0 when k is not staged. */
LV kern_staged_col(B *b, int k, int slot)
{
	Lower *L = &b->L;
	const Carrier *c = b->k->c;
	LV v = {0};
	if (!staged(&c->col[k]))
		return v;
	int off = slot * kern_staged_width(c) + kern_staged_off(c, k), w = spec_decl_width(&c->col[k]);
	LLVMTypeRef ft = lower_kty(L, TY_F32);
	v = lower_lv_new(L, w);
	for (int t = 0; t < w; t++)
		v.c[t] = lower_splat(L, LLVMBuildLoad2(L->b, ft, colbuf_at(b, off + t, ft), ""));
	return v;
}

/* Software prefetch of the column inputs of n positions from j + a
 * distance, into L1: the vector columns (attention's keys and values, 64
 * bytes or more a position), one prefetch a cache line.  The hardware
 * prefetchers stop at each 4 KiB page, which two such streams cross every
 * few positions.  Decoding one row a head (kern_reduce's tiles), f16, 2
 * threads on Zen 3, runs alternated: 32 heads x 16384 keys, d = 128,
 * 11.6 -> 15.3 GB/s, the copy's speed (4096 bytes ahead: 14.5); 16 x
 * 32768, d = 64, 12.5 -> 14.5.  Rows side by side as lanes gained
 * nothing: their keys feed several rows' arithmetic. */
enum { COL_PREFETCH_BYTES = 2048 };

void kern_prefetch_cols(B *b, LLVMValueRef j, int n)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	for (int k = 0; k < c->ncol; k++) {
		long long w = spec_decl_width(&c->col[k]), size = (long long)run_kind_size((TyKind)c->col[k].storage);
		if (w * size < 64)
			continue;
		if (b->page_size) { /* the same keys of the next page, a page ahead */
			long long key = b->k->key_stride * w * size;
			LLVMValueRef at = LLVMBuildMul(L->b, LLVMBuildAdd(L->b, j, b->page_size, ""), ci64(b, key), "");
			for (long long p = 0; p < n; p++)
				for (long long t = 0; t < w * size; t += 64) {
					LLVMValueRef o = LLVMBuildAdd(L->b, at, ci64(b, p * key + t), "");
					kern_prefetch(b, LLVMBuildGEP2(L->b, b->i8, b->page_next[k], &o, 1, ""), PREFETCH_L1);
				}
			continue;
		}
		/* components from j + ahead on, a line apart, over n positions */
		LLVMValueRef ahead = LLVMBuildAdd(L->b, j, ci64(b, (COL_PREFETCH_BYTES + w * size - 1) / (w * size)), "");
		LLVMValueRef first = LLVMBuildMul(L->b, key_elem(b, ahead), ci64(b, w), "");
		/* keys a stride apart: each key's own lines */
		long long step = b->k->key_stride > 1 ? w : n * w, span = b->k->key_stride > 1 ? (long long)b->k->key_stride * w : 0;
		for (long long p = 0; p * step < n * w; p++)
			for (long long t = 0; t < step; t += 64 / size)
				kern_prefetch(b, kern_ptr_at(b, b->inp[c->nelem + k], storage_ty(b, c->col[k].storage),
							     LLVMBuildAdd(L->b, first, ci64(b, p * span + t), "")),
					      PREFETCH_L1);
	}
}

/* Rows side by side read keys that a hardware prefetcher follows only
 * within a 4 KiB page, which a pool's page of keys ends (one key/value
 * head, pages of 16 at d = 128, f16), or which holds two keys of a head
 * (8 heads a slot).  kern_prefetch_cols's prefetch of the next page's
 * slots, into L1, a page ahead, ran slower than none at all here (its
 * lines 64 KiB ahead at pages of 256).  A fixed distance of keys, each
 * key's page looked up, into L2 (Zen 4, 1 thread, thread time, best of
 * 5, decoding 8 sequences of up to 4096 keys in pages of 16, against the
 * page-ahead prefetch): 4 heads on 1 at d = 128 26.3 -> 20.9 ms (none:
 * 23.6), 64 on 8 at d = 64 14.2 -> 14.0, 32 on 8 at d = 128 29.9 ->
 * 29.5; 16 keys ahead or 32 and 64 alike. */
enum { PAGED_AHEAD = 16 };

void kern_prefetch_keys(B *b, LLVMValueRef j, int n)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	LLVMValueRef ps = b->page_size, table = LLVMBuildBitCast(L->b, b->page_table, LLVMPointerType(b->i32, 0), "");
	for (int p = 0; p < n; p++) {
		/* key j + PAGED_AHEAD + p, or the call's last key past it */
		LLVMValueRef ja = LLVMBuildAdd(L->b, j, ci64(b, PAGED_AHEAD + p), "");
		ja = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSGT, ja, b->page_last_key, ""), b->page_last_key, ja, "");
		LLVMValueRef q = LLVMBuildUDiv(L->b, ja, ps, "");
		LLVMValueRef slot = LLVMBuildSub(L->b, ja, LLVMBuildMul(L->b, q, ps, ""), "");
		LLVMValueRef page = LLVMBuildSExt(L->b, LLVMBuildLoad2(L->b, b->i32, LLVMBuildGEP2(L->b, b->i32, table, &q, 1, ""), ""),
						  b->i64, "");
		LLVMValueRef key = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, page, ps, ""), slot, "");
		for (int k = 0; k < c->ncol; k++) {
			long long w = spec_decl_width(&c->col[k]), size = (long long)run_kind_size((TyKind)c->col[k].storage);
			if (w * size < 64)
				continue;
			LLVMValueRef at = LLVMBuildMul(L->b, key, ci64(b, b->k->key_stride * w * size), "");
			for (long long t = 0; t < w * size; t += 64) {
				LLVMValueRef o = LLVMBuildAdd(L->b, at, ci64(b, t), "");
				kern_prefetch(b, LLVMBuildGEP2(L->b, b->i8, b->page_base[k], &o, 1, ""), PREFETCH_L2);
			}
		}
	}
}

/* The staged column inputs of positions j .. j + n - 1 into colbuf, then
 * a barrier that hands colbuf to an empty asm statement: without it, the
 * loads from colbuf would be forwarded from these stores, back into
 * extracts from vectors. */
void kern_stage_columns(B *b, LLVMValueRef j, int n)
{
	Lower *L = &b->L;
	Carrier *c = b->k->c;
	int W = L->W, cw = kern_staged_width(c);
	for (int p = 0; p < n; p++) {
		LLVMValueRef jp = p ? LLVMBuildAdd(L->b, j, ci64(b, p), "") : j;
		for (int k = 0, off = 0; k < c->ncol; k++) {
			const Decl *d = &c->col[k];
			int w = spec_decl_width(d);
			if (!staged(d))
				continue;
			LLVMValueRef first = LLVMBuildMul(L->b, key_elem(b, jp), ci64(b, w), "");
			for (int t = 0; t < w;) {
				int m = 16;
				while (m > w - t)
					m /= 2;
				L->W = m;
				LLVMValueRef x = kern_load_lanes(b, b->inp[c->nelem + k], d->storage, LLVMBuildAdd(L->b, first, ci64(b, t), ""));
				x = from_storage(b, x, d->storage, TY_F32);
				LLVMValueRef st = LLVMBuildStore(L->b, x, colbuf_at(b, (long long)p * cw + off + t, LLVMTypeOf(x)));
				LLVMSetAlignment(st, 4);
				t += m;
			}
			off += w;
		}
	}
	L->W = W;
	LLVMTypeRef at[2] = {b->i8p, b->i8p};
	int na = b->qbuf ? 2 : 1;
	LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(L->ctx), at, (unsigned)na, 0);
	const char *cons = na == 2 ? "r,r,~{memory}" : "r,~{memory}";
	LLVMValueRef asm_ = LLVMGetInlineAsm(ft, "", 0, (char *)cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMValueRef arg[2] = {LLVMBuildBitCast(L->b, b->colbuf, b->i8p, ""),
			       b->qbuf ? LLVMBuildBitCast(L->b, b->qbuf, b->i8p, "") : NULL};
	LLVMBuildCall2(L->b, ft, asm_, arg, (unsigned)na, "");
}

/* The spec's i of rows b->i .. b->i + W - 1, lane by lane: the row
 * index modulo the period where a view holds several heads' rows
 * (CpuArgs).  Made once, where the function starts: a vector remainder
 * is a division a lane, which LLVM leaves in the loop that uses it. */
LLVMValueRef kern_lanes_i(B *b)
{
	LLVMValueRef iota[64];
	for (int l = 0; l < b->L.W; l++)
		iota[l] = LLVMConstInt(b->i32, l, 0);
	LLVMValueRef v = LLVMBuildAdd(b->L.b, lower_splat(&b->L, idx32(b, b->i)), LLVMConstVector(iota, b->L.W), "");
	v = LLVMBuildURem(b->L.b, v, lower_splat(&b->L, idx32(b, b->period)), "");
	return LLVMBuildAdd(b->L.b, v, lower_splat(&b->L, idx32(b, b->qpos)), "lanes_i");
}

/* A row input with lane l from row b->i + l (kern_build_reduce_rows). */
LV kern_row_lanes_decl(B *b, const Decl *d, LLVMValueRef base)
{
	Lower *L = &b->L;
	int w = spec_decl_width(d), W = L->W;
	LV v = lower_lv_new(L, w);
	for (int t = 0; t < w; t++) {
		LLVMValueRef x = LLVMGetUndef(lower_vty(L, (TyKind)d->ty.kind));
		L->W = 1;
		for (int l = 0; l < W; l++) {
			LLVMValueRef e = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, LLVMBuildAdd(L->b, b->i, ci64(b, l), ""), ci64(b, w), ""),
						      ci64(b, t), "");
			LLVMValueRef y = from_storage(b, kern_load_lanes(b, base, d->storage, e), d->storage, (TyKind)d->ty.kind);
			x = W == 1 ? y : LLVMBuildInsertElement(L->b, x, y, LLVMConstInt(b->i32, l, 0), "");
		}
		L->W = W;
		v.c[t] = x;
	}
	return v;
}

/* kern_row_lanes_decl as a loop over the components, into the vectors of buf
 * from at on (the gather of 16 rows of a 128-component input, unrolled,
 * was a block of thousands of loads that instruction scheduling took a
 * minute over). */
void kern_row_lanes_into(B *b, const Decl *d, LLVMValueRef base, LLVMValueRef buf, int at)
{
	Lower *L = &b->L;
	int w = spec_decl_width(d), W = L->W;
	LLVMTypeRef vt = lower_vty(L, TY_F32);
	LLVMValueRef u = kern_count_open(b, "gather");
	LLVMValueRef x = LLVMGetUndef(vt);
	L->W = 1;
	for (int l = 0; l < W; l++) {
		LLVMValueRef e = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, LLVMBuildAdd(L->b, b->i, ci64(b, l), ""), ci64(b, w), ""), u, "");
		LLVMValueRef y = from_storage(b, kern_load_lanes(b, base, d->storage, e), d->storage, TY_F32);
		x = W == 1 ? y : LLVMBuildInsertElement(L->b, x, y, LLVMConstInt(b->i32, l, 0), "");
	}
	L->W = W;
	LLVMValueRef idx = LLVMBuildAdd(L->b, u, ci64(b, at), "");
	LLVMBuildStore(L->b, x, LLVMBuildGEP2(L->b, vt, buf, &idx, 1, ""));
	kern_count_close(b, u, w, 0);
}

/* v[0 .. W-1], W vectors of W lanes, transposed in place: lane l of
 * v[t] afterwards is lane t of v[l] before.  log2(W) rounds of
 * interleaving v[k] with v[k + W/2] (one two-source shuffle each). */
static void transpose(B *b, LLVMValueRef *v, int W)
{
	LLVMValueRef lo[64], hi[64], n[64];
	for (int l = 0; l < W / 2; l++) {
		lo[2 * l] = LLVMConstInt(b->i32, l, 0), lo[2 * l + 1] = LLVMConstInt(b->i32, W + l, 0);
		hi[2 * l] = LLVMConstInt(b->i32, W / 2 + l, 0), hi[2 * l + 1] = LLVMConstInt(b->i32, W + W / 2 + l, 0);
	}
	LLVMValueRef ml = LLVMConstVector(lo, W), mh = LLVMConstVector(hi, W);
	for (int s = 1; s < W; s *= 2) {
		for (int k = 0; k < W / 2; k++) {
			n[2 * k] = LLVMBuildShuffleVector(b->L.b, v[k], v[k + W / 2], ml, "");
			n[2 * k + 1] = LLVMBuildShuffleVector(b->L.b, v[k], v[k + W / 2], mh, "");
		}
		memcpy(v, n, W * sizeof *v);
	}
}

/* The shuffle of x and y (2n lanes to pick from) by m[0 .. n-1]. */
static LLVMValueRef pick(B *b, LLVMValueRef x, LLVMValueRef y, const int *m, int n)
{
	LLVMValueRef c[64];
	for (int l = 0; l < n; l++)
		c[l] = LLVMConstInt(b->i32, (unsigned)m[l], 0);
	return LLVMBuildShuffleVector(b->L.b, x, y, LLVMConstVector(c, (unsigned)n), "");
}

/* transpose() of the 16 float32 vectors at first + seg*l, l < 16, with
 * part of its shuffling done by the loads.  With l = 4p + q and position
 * t = 4r + s, w[4r + q] holds the 4-float chunk r of vectors q, 4 + q,
 * 8 + q and 12 + q, in that order (loads of 16 bytes, two of them folded
 * into 128-bit inserts, and one 256-bit insert), and each 128-bit chunk
 * of w[4r .. 4r+3] is then transposed as a 4 x 4 by two rounds of in-lane
 * unpacks.  On Intel every 512-bit shuffle goes to port 5 alone, as do
 * the ordered merges' compares into mask registers: 48 such shuffles
 * where transpose() takes 64, and the inserts from memory run on any of
 * ports 0, 1 and 5.  2048 x 1024 on one thread (Xeon, best of 5): argmin
 * 3.86 -> 4.43 G elements/s, argmax 5.48 -> 5.71, a NaN-skipping min, max
 * and mean 4.23 -> 4.68. */
static void load_transposed16(B *b, LLVMValueRef base, LLVMValueRef first, LLVMValueRef seg, LLVMValueRef *out)
{
	Lower *L = &b->L;
	LLVMTypeRef ft = storage_ty(b, TY_F32), c4 = LLVMVectorType(ft, 4);
	static const int cat8[8] = {0, 1, 2, 3, 4, 5, 6, 7}, cat16[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
	int lo_ps[16], hi_ps[16], lo_pd[16], hi_pd[16];
	for (int c = 0; c < 4; c++) {
		int q[4][4] = {{4 * c, 16 + 4 * c, 4 * c + 1, 17 + 4 * c},
			       {4 * c + 2, 18 + 4 * c, 4 * c + 3, 19 + 4 * c},
			       {4 * c, 4 * c + 1, 16 + 4 * c, 17 + 4 * c},
			       {4 * c + 2, 4 * c + 3, 18 + 4 * c, 19 + 4 * c}};
		memcpy(lo_ps + 4 * c, q[0], sizeof q[0]), memcpy(hi_ps + 4 * c, q[1], sizeof q[1]);
		memcpy(lo_pd + 4 * c, q[2], sizeof q[2]), memcpy(hi_pd + 4 * c, q[3], sizeof q[3]);
	}
	for (int r = 0; r < 4; r++) {
		LLVMValueRef a[4];
		for (int q = 0; q < 4; q++) {
			LLVMValueRef ch[4];
			for (int p = 0; p < 4; p++) {
				LLVMValueRef at = LLVMBuildAdd(L->b, first, LLVMBuildMul(L->b, seg, ci64(b, 4 * p + q), ""), "");
				at = LLVMBuildAdd(L->b, at, ci64(b, 4 * r), "");
				LLVMValueRef ptr = LLVMBuildBitCast(L->b, kern_ptr_at(b, base, ft, at), LLVMPointerType(c4, 0), "");
				ch[p] = LLVMBuildLoad2(L->b, c4, ptr, "");
				LLVMSetAlignment(ch[p], 4);
			}
			LLVMValueRef h0 = pick(b, ch[0], ch[1], cat8, 8), h1 = pick(b, ch[2], ch[3], cat8, 8);
			a[q] = pick(b, h0, h1, cat16, 16);
		}
		LLVMValueRef t0 = pick(b, a[0], a[1], lo_ps, 16), t1 = pick(b, a[0], a[1], hi_ps, 16);
		LLVMValueRef t2 = pick(b, a[2], a[3], lo_ps, 16), t3 = pick(b, a[2], a[3], hi_ps, 16);
		out[4 * r] = pick(b, t0, t2, lo_pd, 16);
		out[4 * r + 1] = pick(b, t0, t2, hi_pd, 16);
		out[4 * r + 2] = pick(b, t1, t3, lo_pd, 16);
		out[4 * r + 3] = pick(b, t1, t3, hi_pd, 16);
	}
}

void kern_load_segments(B *b, LLVMValueRef j, LLVMValueRef seg, LLVMValueRef *out)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int W = L->W;
	LLVMValueRef rowbase = LLVMBuildMul(L->b, b->i, b->len, "");
	for (int k = 0; k < c->nelem + c->ncol; k++) {
		const Decl *d = k < c->nelem ? &c->elem[k] : &c->col[k - c->nelem];
		LLVMValueRef *v = out + (size_t)k * W;
		if (k < c->nelem && W == 16 && !b->lmask && d->storage == TY_F32 && d->ty.kind == TY_F32 &&
		    spec_decl_width(d) == 1 && lower_host_has("+avx512f")) {
			load_transposed16(b, b->inp[k], LLVMBuildAdd(L->b, rowbase, j, ""), seg, v);
			continue;
		}
		for (int l = 0; l < W; l++) {
			LLVMValueRef at = LLVMBuildAdd(L->b, j, LLVMBuildMul(L->b, seg, ci64(b, l), ""), "");
			if (k < c->nelem)
				at = LLVMBuildAdd(L->b, rowbase, at, "");
			v[l] = (k < c->nelem ? load_decl(b, d, b->inp[k], at, W) : load_col(b, d, b->inp[k], at, W)).c[0];
		}
		transpose(b, v, W);
	}
}

void kern_bind_segment(B *b, LLVMValueRef j, LLVMValueRef seg, LLVMValueRef *in, int t)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int W = L->W;
	kern_bind_inputs(b, NULL);
	for (int k = 0; k < c->nelem; k++)
		L->bind[c->elem[k].var] = lv1(b, in[(size_t)k * W + t]);
	for (int k = 0; k < c->ncol; k++)
		L->bind[c->col[k].var] = lv1(b, in[(size_t)(c->nelem + k) * W + t]);
	/* j + t + l*seg in lane l, as the splat of j plus a constant vector
	 * where seg is constant: one broadcast a block, not one a position
	 * (a broadcast from a general register takes port 5, which the
	 * transpose and the compares fill) */
	LLVMValueRef iota[64];
	for (int l = 0; l < W; l++)
		iota[l] = LLVMConstInt(b->i32, l, 0);
	LLVMValueRef off = LLVMBuildMul(L->b, lower_splat(L, idx32(b, seg)), LLVMConstVector(iota, W), "");
	off = LLVMBuildAdd(L->b, off, lower_splat(L, LLVMConstInt(b->i32, t, 0)), "");
	L->bind[c->idx[IDX_J]] = lv1(b, LLVMBuildAdd(L->b, lower_splat(L, idx32(b, j)), off, ""));
}

/* Bind params, row inputs of row i, and (when j) element and column inputs
 * and the index vars at positions j .. j+W-1. */
/* Remember where input d (its var bound just now) lies, for kern_wide_dot. */
static void bound_wide(B *b, const Decl *d, LLVMValueRef base, LLVMValueRef first, int lanes)
{
	if (lanes != 1 || spec_decl_width(d) <= LOOP_MIN)
		return;
	b->wide[d->var] = (WideIn){b->L.bind[d->var].c, base, first, d};
}

/* lower_node's dot product of two wide inputs bound one component a value
 * (kern_bind_inputs), in a one-lane scope: a loop over chunks of
 * DOT_CHUNK components loaded from the inputs' memory, the partial chunk
 * after it component by component, zeros past its end.  The sums are
 * those of dot_chunked in llvm_expr.c, in the same order, so the result
 * is bit for bit the unrolled one's. */
static LLVMValueRef kern_wide_dot(Lower *L, Expr *e)
{
	B *b = (B *)L;
	const WideIn *in[2];
	for (int s = 0; s < 2; s++) {
		const Expr *x = e->a[s];
		if (x->op != EXPR_VAR || !b->wide[x->k].c || b->wide[x->k].c != L->bind[x->k].c ||
		    x->ty.kind != b->wide[x->k].d->ty.kind)
			return NULL;
		in[s] = &b->wide[x->k];
	}
	int n = lower_width(e->a[0]), W = L->W;
	LLVMValueRef lmask = b->lmask, first[2];
	for (int s = 0; s < 2; s++)
		first[s] = LLVMBuildMul(L->b, in[s]->first, ci64(b, spec_decl_width(in[s]->d)), "");
	LLVMTypeRef vt = LLVMVectorType(lower_kty(L, TY_F32), DOT_CHUNK);
	LLVMValueRef accp = alloca_(b, vt);
	LLVMBuildStore(L->b, LLVMConstNull(vt), accp);
	b->lmask = NULL;
	L->W = DOT_CHUNK;
	LLVMValueRef u = kern_count_open(b, "wdot"), v[2];
	LLVMValueRef at = LLVMBuildMul(L->b, u, ci64(b, DOT_CHUNK), "");
	for (int s = 0; s < 2; s++) {
		const Decl *d = in[s]->d;
		LLVMValueRef x = kern_load_lanes(b, in[s]->base, d->storage, LLVMBuildAdd(L->b, first[s], at, ""));
		v[s] = lower_conv(L, from_storage(b, x, d->storage, (TyKind)d->ty.kind), (TyKind)d->ty.kind, TY_F32);
	}
	LLVMValueRef p = LLVMBuildFMul(L->b, v[0], v[1], "");
	LLVMBuildStore(L->b, LLVMBuildFAdd(L->b, LLVMBuildLoad2(L->b, vt, accp, ""), p, ""), accp);
	kern_count_close(b, u, n / DOT_CHUNK, 2);
	L->W = 1;
	LLVMValueRef acc = LLVMBuildLoad2(L->b, vt, accp, "");
	if (n % DOT_CHUNK) {
		LLVMValueRef tail[2] = {LLVMConstNull(vt), LLVMConstNull(vt)};
		for (int t = n / DOT_CHUNK * DOT_CHUNK; t < n; t++)
			for (int s = 0; s < 2; s++) {
				const Decl *d = in[s]->d;
				LLVMValueRef x = kern_load_lanes(b, in[s]->base, d->storage, LLVMBuildAdd(L->b, first[s], ci64(b, t), ""));
				x = lower_conv(L, from_storage(b, x, d->storage, (TyKind)d->ty.kind), (TyKind)d->ty.kind, TY_F32);
				tail[s] = LLVMBuildInsertElement(L->b, tail[s], x, LLVMConstInt(b->i32, (unsigned)(t % DOT_CHUNK), 0), "");
			}
		acc = LLVMBuildFAdd(L->b, acc, LLVMBuildFMul(L->b, tail[0], tail[1], ""), "");
	}
	L->W = W;
	b->lmask = lmask;
	return lower_halve_sum(L, acc);
}

void kern_bind_inputs(B *b, LLVMValueRef j)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	kern_bind_params(b);
	int nin = 0;
	LLVMValueRef rowbase = LLVMBuildMul(L->b, b->i, b->len, "");
	for (int k = 0; k < c->nelem; k++, nin++)
		if (j) {
			LLVMValueRef at = LLVMBuildAdd(L->b, rowbase, j, "");
			L->bind[c->elem[k].var] = load_decl(b, &c->elem[k], b->inp[nin], at, L->W);
			bound_wide(b, &c->elem[k], b->inp[nin], at, L->W);
		}
	for (int k = 0; k < c->ncol; k++, nin++)
		if (j) {
			int st = (b->row_lanes || b->colbuf) && staged(&c->col[k]), lanes = b->row_lanes ? 1 : L->W;
			L->bind[c->col[k].var] = st ? kern_staged_col(b, k, b->colslot)
						    : load_col(b, &c->col[k], b->inp[nin], j, lanes);
			if (!st)
				bound_wide(b, &c->col[k], b->inp[nin], key_elem(b, j), lanes);
		}
	for (int k = 0; k < c->nrow; k++, nin++) {
		int plain = !b->rowv && !b->row_lanes;
		L->bind[c->row[k].var] = b->rowv ? b->rowv[k]
					 : b->row_lanes ? kern_row_lanes_decl(b, &c->row[k], b->inp[nin])
							: load_decl(b, &c->row[k], b->inp[nin], b->i, 1);
		if (plain)
			bound_wide(b, &c->row[k], b->inp[nin], b->i, 1);
	}
	L->bind[c->idx[IDX_I]] = lv1(b, b->row_lanes ? b->ilanes
						     : lower_splat(L, idx32(b, LLVMBuildAdd(L->b, LLVMBuildURem(L->b, b->i, b->period, ""), b->qpos, ""))));
	L->bind[c->idx[IDX_LEN]] = lv1(b, lower_splat(L, idx32(b, b->len)));
	if (!j)
		return;
	LLVMValueRef jv = b->jlanes;
	if (!jv)
		jv = L->W > 1 && !b->row_lanes ? kern_lanes_j(b, j) : lower_splat(L, idx32(b, j));
	L->bind[c->idx[IDX_J]] = lv1(b, jv);
}

LLVMValueRef kern_lanes_j(B *b, LLVMValueRef j)
{
	LLVMValueRef iota[64];
	for (int l = 0; l < b->L.W; l++)
		iota[l] = LLVMConstInt(b->i32, l, 0);
	return LLVMBuildAdd(b->L.b, lower_splat(&b->L, idx32(b, j)), LLVMConstVector(iota, b->L.W), "");
}

/* ---- states ---- */

static TyKind fkind(B *b, int f) { return (TyKind)b->k->c->state[f].ty.kind; }

/* Allocas for one state in the scope's lanes. */
LV *kern_state_slots(B *b)
{
	Carrier *c = b->k->c;
	LV *s = calloc(c->nstate, sizeof *s);
	if (!s)
		abort();
	for (int f = 0; f < c->nstate; f++) {
		s[f] = lower_lv_new(&b->L, spec_decl_width(&c->state[f]));
		for (int t = 0; t < s[f].n; t++)
			s[f].c[t] = alloca_(b, lower_vty(&b->L, fkind(b, f)));
	}
	return s;
}

void kern_slots_load(B *b, LV *slots, LV *v)
{
	for (int f = 0; f < b->k->c->nstate; f++) {
		v[f] = lower_lv_new(&b->L, slots[f].n);
		for (int t = 0; t < slots[f].n; t++)
			v[f].c[t] = LLVMBuildLoad2(b->L.b, lower_vty(&b->L, fkind(b, f)), slots[f].c[t], "");
	}
}

void kern_slots_store(B *b, LV *slots, LV *v)
{
	for (int f = 0; f < b->k->c->nstate; f++)
		for (int t = 0; t < slots[f].n && v[f].n; t++) /* n = 0: stored already (fold_loop) */
			LLVMBuildStore(b->L.b, lower_lv_at(v[f], t), slots[f].c[t]);
}

LLVMValueRef kern_mem_slot(B *b, LLVMValueRef st, int f, LLVMValueRef t, LLVMTypeRef ty)
{
	LLVMValueRef idx = LLVMBuildMul(b->L.b, LLVMBuildAdd(b->L.b, t, ci64(b, b->k->soff[f]), ""), ci64(b, 8), "");
	LLVMValueRef p = LLVMBuildGEP2(b->L.b, b->i8, st, &idx, 1, "");
	return LLVMBuildBitCast(b->L.b, p, LLVMPointerType(ty, 0), "");
}

static LLVMValueRef mem_slot(B *b, LLVMValueRef st, int f, int t, LLVMTypeRef ty)
{
	LLVMValueRef idx = ci64(b, (b->k->soff[f] + t) * 8);
	LLVMValueRef p = LLVMBuildGEP2(b->L.b, b->i8, st, &idx, 1, "");
	return LLVMBuildBitCast(b->L.b, p, LLVMPointerType(ty, 0), "");
}

/* The r-th of the states that follow one another from st. */
LLVMValueRef kern_state_at(B *b, LLVMValueRef st, int r)
{
	LLVMValueRef idx = ci64(b, (long long)r * (long long)b->k->state_bytes);
	return r ? LLVMBuildGEP2(b->L.b, b->i8, st, &idx, 1, "") : st;
}

/* Components of a 4-byte vector field that move between a state in
 * memory and scalars as one vector of 8-byte slots (slot_chunk): a field
 * loaded one component at a time was a gather after the SLP vectorizer
 * (MoE routing's finalize: vgatherdps of its 8 values and 8 indices) and
 * stored one at a time an extract and a store each. */
enum { SLOT_CHUNK = 8 };

/* Whether field f's components t .. t + n - 1 (n > 1) move as a vector:
 * 4-byte kinds in one lane, fields of 4 components or more. */
static int slot_chunk(B *b, int f, int n)
{
	TyKind k = fkind(b, f);
	return b->L.W == 1 && n > 1 && spec_decl_width(&b->k->c->state[f]) >= 4 && (k == TY_F32 || k == TY_I32);
}

/* A state in memory (scalars), splat to the scope's lanes. */
void kern_mem_load(B *b, LLVMValueRef st, LV *v)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++) {
		v[f] = lower_lv_new(&b->L, spec_decl_width(&c->state[f]));
		LLVMTypeRef ty = lower_kty(&b->L, fkind(b, f));
		for (int t = 0; t < v[f].n;) {
			int n = v[f].n - t < SLOT_CHUNK ? v[f].n - t : SLOT_CHUNK;
			if (!slot_chunk(b, f, n)) {
				v[f].c[t] = lower_splat(&b->L, LLVMBuildLoad2(b->L.b, ty, mem_slot(b, st, f, t, ty), ""));
				t++;
				continue;
			}
			/* each slot's low 4 bytes: the component */
			LLVMTypeRef wide = LLVMVectorType(b->i64, (unsigned)n);
			LLVMValueRef x = LLVMBuildLoad2(b->L.b, wide, mem_slot(b, st, f, t, wide), "");
			LLVMSetAlignment(x, 8);
			x = LLVMBuildTrunc(b->L.b, x, LLVMVectorType(b->i32, (unsigned)n), "");
			x = LLVMBuildBitCast(b->L.b, x, LLVMVectorType(ty, (unsigned)n), "");
			for (int u = 0; u < n; u++, t++)
				v[f].c[t] = LLVMBuildExtractElement(b->L.b, x, LLVMConstInt(b->i32, (unsigned)u, 0), "");
		}
	}
}

void kern_mem_store(B *b, LLVMValueRef st, LV *v)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++) {
		int w = spec_decl_width(&c->state[f]);
		LLVMTypeRef ty = lower_kty(&b->L, fkind(b, f));
		for (int t = 0; t < w;) {
			int n = w - t < SLOT_CHUNK ? w - t : SLOT_CHUNK;
			if (!slot_chunk(b, f, n)) {
				LLVMBuildStore(b->L.b, lower_lv_at(v[f], t), mem_slot(b, st, f, t, ty));
				t++;
				continue;
			}
			LLVMTypeRef vt = LLVMVectorType(ty, (unsigned)n), wide = LLVMVectorType(b->i64, (unsigned)n);
			LLVMValueRef x = LLVMGetUndef(vt);
			for (int u = 0; u < n; u++)
				x = LLVMBuildInsertElement(b->L.b, x, lower_lv_at(v[f], t + u), LLVMConstInt(b->i32, (unsigned)u, 0), "");
			x = LLVMBuildBitCast(b->L.b, x, LLVMVectorType(b->i32, (unsigned)n), "");
			/* the slots' high 4 bytes zero, which no load reads */
			LLVMValueRef s = LLVMBuildStore(b->L.b, LLVMBuildZExt(b->L.b, x, wide, ""), mem_slot(b, st, f, t, wide));
			LLVMSetAlignment(s, 8);
			t += n;
		}
	}
}

/* Field values of exprs[f], converted to the field's kind. */
void kern_state_exprs(B *b, Expr **ex, LV *out)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++) {
		LV v = lower_expr(&b->L, ex[f]);
		int w = spec_decl_width(&c->state[f]);
		out[f] = lower_lv_new(&b->L, w);
		for (int t = 0; t < w; t++)
			out[f].c[t] = lower_conv(&b->L, lower_lv_at(v, t), (TyKind)ex[f]->ty.kind, fkind(b, f));
	}
}

void kern_identity(B *b, LV *out)
{
	kern_bind_params(b);
	kern_state_exprs(b, b->k->c->identity, out);
}

/* out = x (+) y in the current scope (inputs bound when mask is used). */
void kern_merge(B *b, LV *x, LV *y, LV *out)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++) {
		b->L.bind[c->svar[STATE_A][f]] = x[f];
		b->L.bind[c->svar[STATE_B][f]] = y[f];
	}
	kern_state_exprs(b, c->merge, out);
}

/* s = mask ? s (+) lift(j) : s, with inputs bound at j. */
void kern_step(B *b, LV *s, LV *tmp)
{
	Carrier *c = b->k->c;
	LV *l = tmp, *m = tmp + c->nstate;
	kern_state_exprs(b, c->lift, l);
	if (b->apart)
		kern_apart_lift(b, l, c->mask ? lower_lv_at(lower_expr(&b->L, c->mask), 0) : NULL);
	kern_merge(b, s, l, m);
	if (c->mask) {
		LLVMValueRef cond = lower_lv_at(lower_expr(&b->L, c->mask), 0);
		for (int f = 0; f < c->nstate; f++)
			for (int t = 0; t < m[f].n; t++)
				m[f].c[t] = LLVMBuildSelect(b->L.b, cond, m[f].c[t], lower_lv_at(s[f], t), "");
	}
	memcpy(s, m, c->nstate * sizeof *s);
}

/* The state kept in slots, one position further: inputs bound at j, then
 * kern_step; b->st holds the new state after it too. */
void kern_step_slots(B *b, LV *slots, LLVMValueRef j, LV *tmp)
{
	kern_bind_inputs(b, j);
	kern_slots_load(b, slots, b->st);
	kern_step(b, b->st, tmp);
	kern_slots_store(b, slots, b->st);
}

LLVMTypeRef *kern_sig(B *b, int n, LLVMTypeRef *t)
{
	t[0] = b->i8p;
	for (int i = 1; i < n; i++)
		t[i] = b->i64;
	return t;
}

/* ---- the functions ---- */

static void build_identity(B *b)
{
	LLVMTypeRef p[2] = {b->i8p, b->i8p};
	LLVMValueRef f = kern_begin_fn(b, "assoc_identity", p, 2);
	lower_scope(&b->L, 1);
	kern_identity(b, b->st);
	kern_mem_store(b, LLVMGetParam(f, 1), b->st);
	kern_end_fn(b);
}

static void build_merge(B *b)
{
	Carrier *c = b->k->c;
	LLVMTypeRef p[4] = {b->i8p, b->i8p, b->i8p, b->i8p};
	LLVMValueRef f = kern_begin_fn(b, "assoc_merge", p, 4);
	lower_scope(&b->L, 1);
	kern_bind_params(b);
	LV *x = calloc(3 * c->nstate, sizeof *x), *y = x + c->nstate, *o = y + c->nstate;
	kern_mem_load(b, LLVMGetParam(f, 1), x);
	kern_mem_load(b, LLVMGetParam(f, 2), y);
	kern_merge(b, x, y, o);
	kern_mem_store(b, LLVMGetParam(f, 3), o);
	free(x);
	kern_end_fn(b);
}

void kern_store_outputs(B *b, Def *defs, int n, int first, LLVMValueRef at)
{
	for (int k = 0; k < n; k++) {
		LV v = lower_expr(&b->L, defs[k].e);
		int w = lower_width(defs[k].e);
		LLVMValueRef base = b->outp[first + k];
		LLVMValueRef e = w > 1 ? LLVMBuildMul(b->L.b, at, ci64(b, w), "") : at;
		for (int t = 0; t < w; t++)
			kern_store_lanes(b, base, (TyKind)defs[k].e->ty.kind, t ? LLVMBuildAdd(b->L.b, e, ci64(b, t), "") : e,
				    lower_lv_at(v, t));
	}
}

void kern_bind_self(B *b, LV *s)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++)
		b->L.bind[c->svar[STATE_SELF][f]] = s[f];
}

/* The finalize outputs of row b->i's state at st, at flat index at. */
void kern_finalize_body(B *b, LLVMValueRef st, LLVMValueRef at)
{
	Carrier *c = b->k->c;
	lower_scope(&b->L, 1);
	kern_bind_inputs(b, NULL);
	kern_mem_load(b, st, b->st);
	kern_bind_self(b, b->st);
	kern_store_outputs(b, c->finalize, c->nfinal, 0, at);
}

static void build_finalize(B *b)
{
	LLVMTypeRef p[4];
	kern_sig(b, 4, p);
	p[3] = b->i8p;
	LLVMValueRef f = kern_begin_fn(b, "assoc_finalize", p, 4);
	b->i = LLVMGetParam(f, 1);
	kern_finalize_body(b, LLVMGetParam(f, 3), LLVMGetParam(f, 2));
	kern_end_fn(b);
}

/* A scan's row of at least SCAN_SEG_MIN positions runs as SCAN_SEGS
 * segments side by side: assoc_reduce (vector lanes) folds each segment
 * but the last, their states seed the segments in order (the incoming
 * state first), and one loop then steps every segment's state a position
 * each iteration.  A position's state is one merge deep in a chain (8
 * cycles for y = a*y + x), so one chain a row left the core idle most of
 * the time; four overlap.  The segments reread the row from L2 or memory
 * once more (three quarters of it, by vectors).  Only associativity is
 * used: every merge has the earlier range on its left. */
enum { SCAN_SEGS = 4, SCAN_SEG_MIN = 4096 };

LLVMValueRef kern_odd_lines(B *b, LLVMValueRef q)
{
	LLVMValueRef even = LLVMBuildICmp(b->L.b, LLVMIntEQ, LLVMBuildAnd(b->L.b, q, ci64(b, 1), ""), ci64(b, 0), "");
	LLVMValueRef pos = LLVMBuildICmp(b->L.b, LLVMIntSGT, q, ci64(b, 0), "");
	return LLVMBuildSub(b->L.b, q, LLVMBuildZExt(b->L.b, LLVMBuildAnd(b->L.b, even, pos, ""), b->i64, ""), "");
}

/* Segment states: seed[0] from st, seed[k] = seed[k - 1] + the fold of
 * segment k - 1 (of length seg from lo). */
static void scan_seeds(B *b, LLVMValueRef f, LLVMValueRef lo, LLVMValueRef seg, LV **seed, LV *tmp)
{
	Kern *k = b->k;
	int ns = k->c->nstate;
	LLVMValueRef red = LLVMGetNamedFunction(b->L.mod, "assoc_reduce");
	LLVMTypeRef rt = LLVMGlobalGetValueType(red);
	LLVMValueRef buf = LLVMBuildArrayAlloca(b->L.ab, b->i8, ci64(b, (long long)k->state_bytes), "");
	LLVMSetAlignment(buf, 64);
	LV *x = tmp + ns, *y = tmp + 2 * ns;
	lower_scope(&b->L, 1);
	kern_slots_load(b, seed[0], x);
	for (int s = 1; s < SCAN_SEGS; s++) {
		LLVMValueRef from = LLVMBuildAdd(b->L.b, lo, LLVMBuildMul(b->L.b, seg, ci64(b, s - 1), ""), "");
		LLVMValueRef args[5] = {LLVMGetParam(f, 0), b->i, from, LLVMBuildAdd(b->L.b, from, seg, ""), buf};
		LLVMBuildCall2(b->L.b, rt, red, args, 5, "");
		lower_scope(&b->L, 1);
		kern_bind_params(b);
		kern_slots_load(b, seed[s - 1], x);
		kern_mem_load(b, buf, y);
		kern_merge(b, x, y, tmp);
		kern_slots_store(b, seed[s], tmp);
	}
}

/* A scan of scalar fields in W lanes: each vector of W consecutive
 * positions is lifted (the identity where the mask or the range leaves a
 * lane out), scanned within the vector in log2(W) steps (lane l merges
 * the lane d before it, or the identity, on its left: d = 1, 2, 4, ...),
 * then merged on the right of the state before it, broadcast to every
 * lane; the outputs of all W positions go out as one vector, and the
 * last position's lane (the last lane but in a partial vector),
 * broadcast, carries into the next vector.  A position's
 * chain is then one merge and one broadcast per W positions; scalar, it
 * was one merge per position (4 chains side by side, y = a*y + x at 0.4
 * of a copy, 256 x 65536).  The row is read once, in order.  Only
 * associativity and the identity are used: every merge has the earlier
 * range on its left. */

/* Bytes of element inputs scan_lanes prefetches ahead (llvm_reduce.c's
 * PREFETCH_BYTES for its reduce loops). */
enum { SCAN_AHEAD = 4096 };

/* z, a vector of zeros, as a value LLVM cannot see through: an empty asm
 * in the function's entry block.  Moving lanes up over zeros, LLVM's x86
 * backend takes vexpandps (or vexpandpd, 16 lanes of 4 bytes moved 1 or
 * 2, 4 up), which Zen 5 runs far slower than the two-source vpermt2ps it
 * takes for any other fill: a scan's four steps on 16 lanes, alone in a
 * loop, 20 cycles a vector by expands, 6 by vpermt2ps. */
static LLVMValueRef opaque_zeros(B *b, LLVMValueRef z)
{
	LLVMTypeRef t = LLVMTypeOf(z);
	LLVMTypeRef ft = LLVMFunctionType(t, &t, 1, 0);
	LLVMValueRef asm_ = LLVMGetInlineAsm(ft, "", 0, "=v,0", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
	return LLVMBuildCall2(b->L.ab, ft, asm_, &z, 1, "zeros");
}

/* v's lanes moved d up, the lanes below d taken from id's. */
static LLVMValueRef lanes_up(B *b, LLVMValueRef v, LLVMValueRef id, int d)
{
	LLVMValueRef m[64];
	LLVMTypeRef et = LLVMGetElementType(LLVMTypeOf(id));
	int bits = LLVMGetTypeKind(et) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(et) == 1;
	unsigned long long size = LLVMSizeOfTypeInBits(LLVMGetModuleDataLayout(b->L.mod), LLVMTypeOf(id));
	/* bool lanes live in mask registers, and the asm's operand must fit one vector register */
	if (b->L.avx512 && LLVMIsNull(id) && !bits && (size == 128 || size == 256 || size == 512))
		id = opaque_zeros(b, id);
	for (int l = 0; l < b->L.W; l++)
		m[l] = LLVMConstInt(b->i32, l >= d ? l - d : b->L.W + l, 0);
	return LLVMBuildShuffleVector(b->L.b, v, id, LLVMConstVector(m, b->L.W), "");
}

/* Lane `at` of v in every lane. */
static LLVMValueRef lane_splat(B *b, LLVMValueRef v, int at)
{
	LLVMValueRef m[64];
	for (int l = 0; l < b->L.W; l++)
		m[l] = LLVMConstInt(b->i32, at, 0);
	return LLVMBuildShuffleVector(b->L.b, v, v, LLVMConstVector(m, b->L.W), "");
}

/* The vector at j: the state before it in carry (every lane, slots), its
 * positions' outputs stored, carry moved on past it. */
/* The lifts of the positions bound (scan_vector, scan_tile) into p, the
 * identity (into id) where the mask or the range (b->lmask) leaves one
 * out. */
static void scan_lift(B *b, LV *p, LV *id)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	kern_state_exprs(b, c->lift, p);
	LLVMValueRef cond = c->mask ? lower_lv_at(lower_expr(L, c->mask), 0) : NULL;
	if (b->lmask)
		cond = cond ? LLVMBuildAnd(L->b, cond, b->lmask, "") : b->lmask;
	kern_identity(b, id);
	if (cond)
		for (int f = 0; f < c->nstate; f++)
			p[f].c[0] = LLVMBuildSelect(L->b, cond, p[f].c[0], lower_lv_at(id[f], 0), "");
}

/* p's lanes scanned in place, in log2(W) steps: lane l merges the lane d
 * before it, or the identity id, on its left (d = 1, 2, 4, ...); sh and m
 * hold the steps' operands and results. */
static void scan_across_lanes(B *b, LV *p, const LV *id, LV *sh, LV *m)
{
	Lower *L = &b->L;
	int W = L->W, ns = b->k->c->nstate;
	for (int d = 1; d < W; d *= 2) {
		for (int f = 0; f < ns; f++)
			sh[f] = lv1(b, lanes_up(b, p[f].c[0], lower_lv_at(id[f], 0), d));
		lower_scope(L, W);
		kern_bind_params(b);
		kern_merge(b, sh, p, m);
		memcpy(p, m, ns * sizeof *p);
	}
}

/* last: the lane of the vector's last position (an i32), NULL where it
 * is whole (lane W - 1). */
static void scan_vector(B *b, LLVMValueRef j, LLVMValueRef last, LV *carry, LV *tmp)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int W = L->W, ns = c->nstate;
	LV *p = tmp, *sh = tmp + ns, *m = tmp + 2 * ns, *id = calloc(ns, sizeof *id), *x = calloc(ns, sizeof *x);
	lower_scope(L, W);
	kern_bind_inputs(b, j);
	scan_lift(b, p, id);
	/* each position onto the identity first, as the left fold and check's
	 * trees take it: the steps put a lane's state on the left of the next
	 * lane's, and a merge that skips a NaN on its right keeps one on its
	 * left (where(b.v > a.v, b.at, a.at) with the lift of NaN as a would
	 * keep its position past the larger values after it) */
	lower_scope(L, W);
	kern_bind_params(b);
	kern_merge(b, id, p, m);
	for (int f = 0; f < ns; f++)
		p[f] = m[f];
	scan_across_lanes(b, p, id, sh, m);
	lower_scope(L, W);
	kern_bind_inputs(b, j);
	kern_slots_load(b, carry, x);
	kern_merge(b, x, p, m);
	kern_bind_self(b, m);
	LLVMValueRef at = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, b->i, b->len, ""), j, "");
	kern_store_outputs(b, c->finalize, c->nfinal, 0, at);
	/* a partial vector's lanes past its last position hold its state
	 * merged with the identity on the right, which a merge lawful on
	 * numbers alone takes elsewhere (a mean of -inf to NaN: -inf + (0 -
	 * -inf) * 0), and which the left fold never meets */
	for (int f = 0; f < ns; f++)
		m[f].c[0] = last ? lower_splat(L, LLVMBuildExtractElement(L->b, m[f].c[0], last, ""))
				 : lane_splat(b, m[f].c[0], W - 1);
	kern_slots_store(b, carry, m);
	free(id);
	free(x);
}

int kern_scalar_inputs(const Carrier *c)
{
	for (int i = 0; i < c->nelem; i++)
		if (spec_decl_width(&c->elem[i]) != 1)
			return 0;
	for (int i = 0; i < c->ncol; i++)
		if (spec_decl_width(&c->col[i]) != 1)
			return 0;
	return 1;
}

/* A scan's tiles of W*W positions from j, W blocks of W side by side
 * (lane l the block of positions l*W .. l*W + W - 1): the inputs come in
 * transposed (kern_load_segments, segments of W); each lane folds its
 * block in chains of SCAN_CHAIN positions, each chain left to right from
 * the identity, and then each chain's positions onto the total of the
 * chains before it; the blocks' totals are scanned across the lanes in
 * log2(W) steps and merged on the right of the state before the tile,
 * and that prefix of each block is merged on the left of each of its
 * positions' states; the outputs go back through the transpose to W
 * stores of W consecutive positions.  About 3 merges a position where
 * scan_vector takes 2 + log2(W), none of them more than a chain's length
 * plus 3 deep in a tile: one chain of 16 a block left the core waiting on
 * each merge's divisions.  Welford's running mean and deviation (two
 * divisions a merge), 256 x 65536 on one thread of a Zen 5 under load:
 * 0.89 G elements a CPU-second by vectors, 1.23 in chains of 16, 1.44 of
 * 8, 1.70 of 4, 1.34 of 2.  Only associativity and the identity are
 * used, each position taken on the right of a state, as the left fold
 * takes it. */
enum { SCAN_CHAIN = 4 };

static void scan_tile(B *b, LLVMValueRef j, LV *carry, LV *tmp)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	int W = L->W, ns = c->nstate, nin = c->nelem + c->ncol;
	LV *s = calloc((size_t)(W + 4) * ns, sizeof *s), *id = s + (size_t)W * ns, *x = id + ns, *pre = x + ns,
	   *m = pre + ns;
	LLVMValueRef *in = calloc((size_t)nin * W + 1, sizeof *in), seg = ci64(b, W);
	LLVMValueRef(*out)[64] = calloc((size_t)c->nfinal + 1, sizeof *out);
	int C = W < SCAN_CHAIN ? W : SCAN_CHAIN;
	lower_scope(L, W);
	kern_load_segments(b, j, seg, in);
	for (int t = 0; t < W; t++) {
		LV *st = s + (size_t)t * ns;
		lower_scope(L, W);
		kern_bind_segment(b, j, seg, in, t);
		scan_lift(b, m, id);
		lower_scope(L, W);
		kern_bind_params(b);
		kern_merge(b, t % C ? st - ns : id, m, tmp);
		memcpy(st, tmp, ns * sizeof *tmp);
	}
	/* each chain's positions onto the totals of the chains before it */
	for (int g = C; g < W; g += C) {
		LV *before = s + (size_t)(g - 1) * ns;
		for (int t = g; t < g + C; t++) {
			lower_scope(L, W);
			kern_bind_params(b);
			kern_merge(b, before, s + (size_t)t * ns, tmp);
			memcpy(s + (size_t)t * ns, tmp, ns * sizeof *tmp);
		}
	}
	/* the blocks' totals scanned across the lanes, then moved one lane up
	 * over the identity: lane l the positions of blocks 0 .. l-1 */
	LV *tot = s + (size_t)(W - 1) * ns;
	lower_scope(L, W);
	kern_bind_params(b);
	kern_identity(b, id);
	memcpy(pre, tot, ns * sizeof *pre);
	scan_across_lanes(b, pre, id, x, tmp);
	for (int f = 0; f < ns; f++)
		x[f] = lv1(b, lanes_up(b, pre[f].c[0], lower_lv_at(id[f], 0), 1));
	lower_scope(L, W);
	kern_bind_params(b);
	kern_slots_load(b, carry, m);
	kern_merge(b, m, x, pre);
	/* lane 0's blocks before it are none: the state before the tile
	 * itself, not merged with the identity on its right, which an
	 * infinite mean takes to NaN (mean + (0 - -inf) * 0) where the left
	 * fold, taking positions alone, never meets it */
	LLVMValueRef lane0[64];
	for (int l = 0; l < W; l++)
		lane0[l] = LLVMConstInt(LLVMInt1TypeInContext(L->ctx), l == 0, 0);
	LLVMValueRef first = LLVMConstVector(lane0, (unsigned)W);
	for (int f = 0; f < ns; f++)
		pre[f].c[0] = LLVMBuildSelect(L->b, first, m[f].c[0], pre[f].c[0], "");
	for (int t = 0; t < W; t++) {
		lower_scope(L, W);
		kern_bind_segment(b, j, seg, in, t);
		kern_merge(b, pre, s + (size_t)t * ns, m);
		kern_bind_self(b, m);
		for (int o = 0; o < c->nfinal; o++)
			out[o][t] = lower_lv_at(lower_expr(L, c->finalize[o].e), 0);
		if (t == W - 1) {
			for (int f = 0; f < ns; f++)
				m[f].c[0] = lane_splat(b, m[f].c[0], W - 1);
			kern_slots_store(b, carry, m);
		}
	}
	lower_scope(L, W);
	LLVMValueRef at = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, b->i, b->len, ""), j, "");
	for (int o = 0; o < c->nfinal; o++) {
		transpose(b, out[o], W);
		for (int l = 0; l < W; l++)
			kern_store_lanes(b, b->outp[o], (TyKind)c->finalize[o].e->ty.kind,
					 LLVMBuildAdd(L->b, at, ci64(b, (long long)l * W), ""), out[o][l]);
	}
	free(out);
	free(in);
	free(s);
}

/* Whether a scan in lanes takes tiles of W*W (scan_tile): a merge that
 * divides or calls a function (exp, log, sqrt: slow_op), inputs of one
 * component (kern_load_segments), and at most SCAN_TILE_COMPONENTS state
 * components, as a tile holds W states of each.  A merge of adds and
 * multiplies runs faster by vectors, whose shuffles are fewer than the
 * transposes': one thread under load, G elements a CPU-second by vectors
 * and by tiles, a linear recurrence 1.56 and 0.96, a selective scan
 * 0.86 and 0.55, sums 2.6 and 2.2. */
enum { SCAN_TILE_COMPONENTS = 8 };

static int slow_op(void *ctx, Expr *e)
{
	(void)ctx;
	return (e->op == EXPR_DIV && ty_is_float(e->ty)) || (ir_ops[e->op].flags & F_MATH);
}

static int scan_tiles_fit(const Kern *k)
{
	const Carrier *c = k->c;
	if (k->scan_lanes != 16)
		return 0;
	int slow = 0;
	for (int f = 0; f < c->nstate && !slow; f++)
		slow = ir_contains(c->merge[f], slow_op, NULL);
	if (!slow)
		return 0;
	return kern_scalar_inputs(c) && kern_state_components((Carrier *)c) <= SCAN_TILE_COMPONENTS;
}

/* The positions [from, to) of a vector from from, fewer than its lanes
 * (none: nothing), by masked loads and stores; carry then the state of
 * position to - 1. */
static void scan_partial(B *b, LLVMValueRef from, LLVMValueRef to, LV *carry, LV *tmp)
{
	Lower *L = &b->L;
	LLVMBasicBlockRef done = kern_if(b, LLVMBuildICmp(L->b, LLVMIntSLT, from, to, ""));
	lower_scope(L, b->k->scan_lanes);
	b->lmask = kern_lanes_below(b, from, to);
	LLVMValueRef last = LLVMBuildTrunc(L->b, LLVMBuildSub(L->b, LLVMBuildSub(L->b, to, from, ""), ci64(b, 1), ""), b->i32, "");
	scan_vector(b, from, last, carry, tmp);
	b->lmask = NULL;
	kern_if_end(b, done);
}

/* The whole vectors of [lo, full) in lanes, carry the state before them
 * and then after them; stores non-temporal where b->nt. */
static void scan_full(B *b, LLVMValueRef lo, LLVMValueRef full, LV *carry, LV *tmp)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	int W = k->scan_lanes;
	lower_scope(L, W);
	if (k->scan_tiles) {
		LLVMValueRef n = LLVMBuildSub(L->b, full, lo, "");
		LLVMValueRef tiles = LLVMBuildSub(L->b, full, LLVMBuildSRem(L->b, n, ci64(b, (long long)W * W), ""), "");
		Loop t = kern_loop_begin(b, lo, tiles, (long long)W * W);
		lower_scope(L, W);
		for (int q = 0; q < W; q++) /* each line of the tile's 4-byte inputs, SCAN_AHEAD on */
			kern_prefetch_at(b, t.iv, ci64(b, SCAN_AHEAD / 4 + (long long)q * W), PREFETCH_L1);
		scan_tile(b, t.iv, carry, tmp);
		kern_loop_end(b, &t);
		lo = tiles;
		lower_scope(L, W);
	}
	Loop l = kern_loop_begin(b, lo, full, W);
	lower_scope(L, W);
	long long size = 0;
	for (int e = 0; e < k->c->nelem; e++)
		size += (long long)run_kind_size((TyKind)k->c->elem[e].storage) * spec_decl_width(&k->c->elem[e]);
	if (size) /* a line of each element input a vector, some way ahead */
		kern_prefetch_at(b, l.iv, ci64(b, SCAN_AHEAD / size), PREFETCH_L1);
	scan_vector(b, l.iv, NULL, carry, tmp);
	kern_loop_end(b, &l);
}

/* The stores of a scan are most of its traffic, and a 64-byte store that
 * straddles two lines costs two (arrays from calloc start 16 bytes past
 * a line): where every output is 4 bytes a position, W of them a line,
 * one masked vector runs up to the first output's first aligned position
 * (rows of SCAN_ALIGN_MIN positions or more; on short rows the masked
 * vector costs more than the split stores), and when all the outputs are
 * aligned alike there and they hold MAP_STREAM_BYTES or more in all, the
 * vectors from there go out non-temporal (no read for ownership; the
 * executor fences once per task).  running_max on a 2-core Xeon
 * (AVX-512), best of 3: 256 x 65536 on two threads 1.4 -> 3.5 G
 * elements/s; 2048 x 1024 on one, aligned only, 1.4 -> 2.4. */
enum { SCAN_ALIGN_MIN = 1024 };

static int scan_aligns(const Kern *k)
{
	if (k->scan_lanes * 4 != 64 || !k->c->nfinal)
		return 0;
	for (int i = 0; i < k->c->nfinal; i++)
		if (run_kind_size((TyKind)k->c->finalize[i].e->ty.kind) != 4)
			return 0;
	return 1;
}

static LLVMValueRef out_addr(B *b, int o, LLVMValueRef j)
{
	LLVMValueRef at = LLVMBuildAdd(b->L.b, LLVMBuildMul(b->L.b, b->i, b->len, ""), j, "");
	LLVMTypeRef et = storage_ty(b, (TyKind)b->k->c->finalize[o].e->ty.kind);
	return LLVMBuildPtrToInt(b->L.b, kern_ptr_at(b, b->outp[o], et, at), b->i64, "");
}

/* Where the aligned vectors of [lo, hi) start (lo when they do not). */
static LLVMValueRef scan_aligned_from(B *b, LLVMValueRef lo, LLVMValueRef hi)
{
	Lower *L = &b->L;
	LLVMValueRef mis = LLVMBuildAnd(L->b, LLVMBuildNeg(L->b, out_addr(b, 0, lo), ""), ci64(b, 63), "");
	LLVMValueRef start = LLVMBuildAdd(L->b, lo, LLVMBuildLShr(L->b, mis, ci64(b, 2), ""), "");
	start = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, start, hi, ""), start, hi, "");
	LLVMValueRef longer = LLVMBuildICmp(L->b, LLVMIntSGE, LLVMBuildSub(L->b, hi, lo, ""), ci64(b, SCAN_ALIGN_MIN), "");
	return LLVMBuildSelect(L->b, longer, start, lo, "");
}

/* Whether the vectors from start go out non-temporal: an i1. */
static LLVMValueRef scan_streams(B *b, LLVMValueRef start)
{
	Lower *L = &b->L;
	LLVMValueRef n = LLVMBuildMul(L->b, LLVMBuildMul(L->b, b->rows, b->len, ""), ci64(b, 4LL * b->k->c->nfinal), "");
	LLVMValueRef ok = LLVMBuildICmp(L->b, LLVMIntSGE, n, ci64(b, MAP_STREAM_BYTES), "");
	LLVMValueRef p0 = out_addr(b, 0, start);
	for (int o = 0; o < b->k->c->nfinal; o++) {
		LLVMValueRef low = LLVMBuildAnd(L->b, o ? out_addr(b, o, start) : p0, ci64(b, 63), "");
		ok = LLVMBuildAnd(L->b, ok, LLVMBuildICmp(L->b, LLVMIntEQ, low, ci64(b, 0), ""), "");
	}
	return ok;
}

/* [lo, hi) in lanes, one (scalar slots) the incoming state and then the
 * state after it; a partial vector up to the outputs' alignment where
 * they align (scan_aligned_from), and the last vector partial (masked
 * loads and stores, the identity lifted past the end). */
static void scan_lanes(B *b, LLVMValueRef lo, LLVMValueRef hi, LV *one, LV *tmp)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	int W = k->scan_lanes, ns = k->c->nstate;
	LV *v = calloc(ns, sizeof *v);
	lower_scope(L, 1);
	kern_slots_load(b, one, v);
	lower_scope(L, W);
	LV *carry = kern_state_slots(b);
	for (int f = 0; f < ns; f++)
		v[f].c[0] = lower_splat(L, v[f].c[0]);
	kern_slots_store(b, carry, v);
	LLVMValueRef start = lo;
	if (scan_aligns(k)) {
		start = scan_aligned_from(b, lo, hi);
		scan_partial(b, lo, start, carry, tmp);
	}
	LLVMValueRef full = LLVMBuildSub(L->b, hi, LLVMBuildSRem(L->b, LLVMBuildSub(L->b, hi, start, ""), ci64(b, W), ""), "");
	if (scan_aligns(k)) {
		LLVMValueRef nt = scan_streams(b, start);
		LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "stream");
		LLVMBasicBlockRef cb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "cached");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "rest");
		LLVMBuildCondBr(L->b, nt, sb, cb);
		LLVMPositionBuilderAtEnd(L->b, sb);
		b->nt = 1;
		scan_full(b, start, full, carry, tmp);
		b->nt = 0;
		LLVMBuildBr(L->b, done);
		LLVMPositionBuilderAtEnd(L->b, cb);
		scan_full(b, start, full, carry, tmp);
		LLVMBuildBr(L->b, done);
		LLVMPositionBuilderAtEnd(L->b, done);
	} else
		scan_full(b, start, full, carry, tmp);
	lower_scope(L, W);
	scan_partial(b, full, hi, carry, tmp);
	lower_scope(L, W);
	kern_slots_load(b, carry, v);
	lower_scope(L, 1);
	for (int f = 0; f < ns; f++)
		v[f].c[0] = LLVMBuildExtractElement(L->b, v[f].c[0], LLVMConstInt(b->i32, 0, 0), "");
	kern_slots_store(b, one, v);
	free(carry);
	free(v);
}

/* The long rows of a scan in SCAN_SEGS segments side by side (rows of
 * at least SCAN_SEG_MIN positions); where they end in *fromp. */
static void scan_segments(B *b, LLVMValueRef f, LLVMValueRef lo, LLVMValueRef hi, LV *one, LLVMValueRef fromp, LV *tmp)
{
	Carrier *c = b->k->c;
	LV *seed[SCAN_SEGS];
	LLVMValueRef rowbase = LLVMBuildMul(b->L.b, b->i, b->len, "");
	LLVMValueRef n = LLVMBuildSub(b->L.b, hi, lo, "");
	LLVMBasicBlockRef plain = kern_if(b, LLVMBuildICmp(b->L.b, LLVMIntSGE, n, ci64(b, SCAN_SEG_MIN), ""));
	LLVMValueRef seg = LLVMBuildMul(b->L.b, kern_odd_lines(b, LLVMBuildSDiv(b->L.b, n, ci64(b, SCAN_SEGS * 16), "")),
					ci64(b, 16), "seg");
	seed[0] = one;
	for (int s = 1; s < SCAN_SEGS; s++)
		seed[s] = kern_state_slots(b);
	scan_seeds(b, f, lo, seg, seed, tmp);
	Loop t = kern_loop_begin(b, ci64(b, 0), seg, 1);
	for (int s = 0; s < SCAN_SEGS; s++) {
		LLVMValueRef j = LLVMBuildAdd(b->L.b, LLVMBuildAdd(b->L.b, lo, LLVMBuildMul(b->L.b, seg, ci64(b, s), ""), ""), t.iv, "");
		lower_scope(&b->L, 1);
		kern_step_slots(b, seed[s], j, tmp);
		kern_bind_self(b, b->st);
		kern_store_outputs(b, c->finalize, c->nfinal, 0, LLVMBuildAdd(b->L.b, rowbase, j, ""));
	}
	kern_loop_end(b, &t);
	lower_scope(&b->L, 1);
	kern_slots_load(b, seed[SCAN_SEGS - 1], b->st);
	kern_slots_store(b, one, b->st);
	LLVMBuildStore(b->L.b, LLVMBuildAdd(b->L.b, lo, LLVMBuildMul(b->L.b, seg, ci64(b, SCAN_SEGS), ""), ""), fromp);
	kern_if_end(b, plain);
	for (int s = 1; s < SCAN_SEGS; s++)
		free(seed[s]);
}

static void build_scan(B *b)
{
	Carrier *c = b->k->c;
	LLVMTypeRef p[5];
	kern_sig(b, 5, p);
	p[4] = b->i8p;
	LLVMValueRef f = kern_begin_fn(b, "assoc_scan", p, 5);
	b->i = LLVMGetParam(f, 1);
	LLVMValueRef lo = LLVMGetParam(f, 2), hi = LLVMGetParam(f, 3);
	LV *tmp = calloc(3 * c->nstate, sizeof *tmp);
	lower_scope(&b->L, 1);
	LV *one = kern_state_slots(b);
	kern_mem_load(b, LLVMGetParam(f, 4), b->st);
	kern_slots_store(b, one, b->st);
	LLVMValueRef rowbase = LLVMBuildMul(b->L.b, b->i, b->len, "");
	LLVMValueRef fromp = alloca_(b, b->i64);
	LLVMBuildStore(b->L.b, lo, fromp);
	if (b->k->scan_lanes) {
		scan_lanes(b, lo, hi, one, tmp);
		LLVMBuildStore(b->L.b, hi, fromp);
	} else
		scan_segments(b, f, lo, hi, one, fromp, tmp);
	lower_scope(&b->L, 1);
	Loop l = kern_loop_begin(b, LLVMBuildLoad2(b->L.b, b->i64, fromp, ""), hi, 1);
	lower_scope(&b->L, 1);
	kern_step_slots(b, one, l.iv, tmp);
	kern_bind_self(b, b->st);
	kern_store_outputs(b, c->finalize, c->nfinal, 0, LLVMBuildAdd(b->L.b, rowbase, l.iv, ""));
	kern_loop_end(b, &l);
	kern_slots_load(b, one, b->st);
	kern_mem_store(b, LLVMGetParam(f, 4), b->st);
	free(one);
	free(tmp);
	kern_end_fn(b);
}

int kern_build(Kern *k, LLVMContextRef ctx, LLVMModuleRef mod)
{
	B b = {.k = k};
	lower_init(&b.L, ctx, mod, k->c);
	b.wide = calloc(ir_nvars(k->c->ir) + 1, sizeof *b.wide);
	if (!b.wide)
		abort();
	b.L.wide_dot = kern_wide_dot;
	b.i8 = LLVMInt8TypeInContext(ctx), b.i16 = LLVMInt16TypeInContext(ctx);
	b.i32 = LLVMInt32TypeInContext(ctx), b.i64 = LLVMInt64TypeInContext(ctx);
	b.f64 = LLVMDoubleTypeInContext(ctx);
	b.i8p = LLVMPointerType(b.i8, 0);
	LLVMTypeRef fields[7] = {LLVMPointerType(b.i8p, 0), LLVMPointerType(b.i8p, 0), LLVMPointerType(b.f64, 0), b.i64,
				 b.i64, b.i64, b.i64};
	b.argsty = LLVMStructTypeInContext(ctx, fields, 7, 0);
	b.st = calloc(k->c->nstate, sizeof *b.st);
	if (!b.st)
		abort();
	build_identity(&b);
	build_merge(&b);
	kern_build_reduce(&b);
	build_finalize(&b);
	if (kern_has_reduce2(k))
		kern_build_reduce2(&b);
	if (k->group > 1)
		kern_build_reduce_rows(&b);
	if (k->paged && kern_reduces_pages(k))
		kern_build_reduce_pages(&b);
	if (k->paged && k->group > 1)
		kern_build_reduce_rows_pages(&b);
	if (k->c->nmap)
		kern_build_map(&b);
	if (k->map_stream || k->scan_lanes)
		kern_build_fence(&b);
	if (k->rowmap_g || k->rowmap_lanes) {
		kern_build_rowmap(&b, 0);
		kern_build_rowmap(&b, 1);
		if (k->map_stream)
			kern_build_rowmap_next(&b);
	}
	/* only a scan's runs call it; a reduce carrier's was a third of
	 * attention's optimizing time (d = 128: 0.9 s of 2.5) */
	if (k->c->tpl == FAM_SCAN)
		build_scan(&b);
	free(b.st);
	free(b.wide);
	lower_free(&b.L);
	return 0;
}

static int has_op(const Expr *e, Op op)
{
	if (e->op == (int)op)
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (has_op(e->a[i], op))
			return 1;
	return 0;
}

/* A node of the map tree e that is g(lift.m - m) (the IR is hash-consed:
 * lift.m is the very node c->lift[mi], m the row's own field), float32:
 * exactly what pass 2 of kern_reduce_two_pass computes at each position once
 * the row's m is known, so kern_build_rowmap keeps it for the map.  A lift
 * with a subtraction is left out: the map may hoist it (is_hoisted in
 * llvm_expr.c) and compute lift.m otherwise. */
static Expr *kept_node(Carrier *c, Expr *e, int mi, Op g)
{
	Expr *s = e->nargs == 1 ? e->a[0] : NULL;
	if (e->op == (int)g && e->ty.kind == TY_F32 && !e->ty.len && s->op == EXPR_SUB && s->a[0] == c->lift[mi] &&
	    s->a[1]->op == EXPR_VAR && s->a[1]->k == c->svar[STATE_SELF][mi] && c->lift[mi]->ty.kind == TY_F32 &&
	    !c->lift[mi]->ty.len && !has_op(c->lift[mi], EXPR_SUB))
		return e;
	for (int i = 0; i < e->nargs; i++) {
		Expr *r = kept_node(c, e->a[i], mi, g);
		if (r)
			return r;
	}
	return NULL;
}

int kern_state_components(const Carrier *c)
{
	int n = 0;
	for (int f = 0; f < c->nstate; f++)
		n += spec_decl_width(&c->state[f]);
	return n;
}

int kern_wide_state(const Carrier *c) { return kern_state_components(c) > SLP_STATE_MAX; }

/* Past this many state components, a carrier with a vector field keeps
 * its one-lane fold: each component is a vector of the row's lanes in
 * the vector loop, and the tile's tree of merges holds tiles times as
 * many.  Softmax beside a top-8 list (18 components), 256 x 65536, 2
 * threads: 0.05 of a copy in one lane, 0.50 in lanes, compiled in 1.7 s;
 * beside a top-16 list (34) 0.25-0.59, but compiled in 8 s. */
enum { LANES_STATE_MAX = 24 };

/* The state's components that fold in vector lanes: all but those of
 * the topk lists kept apart (kern_lists_apart), which are not in the
 * lanes' states but one list a row's range beside them. */
static int lanes_components(const Carrier *c)
{
	TopkList ls[APART_MAX];
	int n = 0, nl = kern_lists_apart(c, ls);
	for (int f = 0; f < c->nstate; f++)
		n += spec_decl_width(&c->state[f]);
	for (int q = 0; q < nl; q++)
		n -= 2 * ls[q].k;
	return n;
}

/* Whether a carrier with a vector state field still reduces in lanes, as
 * scalar ones do: every element and column input and every map scalar
 * (a row input, the same at every position, is broadcast to the lanes a
 * component at a time, whatever its width), the state short (its
 * topk lists kept apart not counted: of any length), and no one-lane
 * path of its own (reduce_selected, reduce_filtered).  A top-k list
 * beside softmax's (m, l) otherwise folds position by position in one
 * lane, its exps scalar: 0.03 of a copy, 256 rows of 65536. */
static int short_state_lanes(Carrier *c)
{
	int n = lanes_components(c);
	if (!kern_scalar_inputs(c))
		return 0;
	for (int i = 0; i < c->nmap; i++)
		if (lower_width(c->map[i].e) != 1)
			return 0;
	return n <= LANES_STATE_MAX && c->tpl != FAM_SCAN && !kern_filter_fits(c) && !kern_selects(c);
}

/* Why k's reduce folds one position at a time in one lane (k->one_lane),
 * for assoc bench to say: "" where it runs vectors or one of the one-lane
 * paths that test or sort many positions at once. */
static void one_lane_why(Kern *k, const Carrier *c, int scalar, int comm)
{
	k->one_lane[0] = 0;
	if (k->lanes > 1 || k->ordered > 1 || k->group > 1 || k->select || kern_filter_fits(c) || c->tpl == FAM_SCAN)
		return;
	int n = lanes_components(c), vec_io = 0;
	for (int i = 0; i < c->nelem; i++)
		vec_io |= spec_decl_width(&c->elem[i]) != 1;
	for (int i = 0; i < c->ncol; i++)
		vec_io |= spec_decl_width(&c->col[i]) != 1;
	for (int i = 0; i < c->nmap; i++)
		vec_io |= lower_width(c->map[i].e) != 1;
	if (!comm)
		snprintf(k->one_lane, sizeof k->one_lane, "a merge not known to commute, beside a vector field");
	else if (vec_io)
		snprintf(k->one_lane, sizeof k->one_lane, "a vector input or map output");
	else if (!scalar && n > LANES_STATE_MAX)
		snprintf(k->one_lane, sizeof k->one_lane, "a state of %d components, over the %d that fold in vector lanes", n,
			 (int)LANES_STATE_MAX);
	else
		snprintf(k->one_lane, sizeof k->one_lane, "the host has no vector lanes");
}

void kern_plan_chains(Kern *k)
{
	Carrier *c = k->c;
	k->lift_chains = 0;
	k->chain_why[0] = 0;
	/* the vector lanes' tiles, where they fold by chains of merges: all
	 * but the max-rescale ones, which do only the fields apart; and the
	 * ordered lanes' runs past their first chain */
	int tiles = k->lanes > 1 && k->tile > 1 && (k->mr_field < 0 || tile_has_own(c, k->mr_field));
	if (!tiles && !(k->ordered > ORDERED_CHAIN && k->mr_field < 0))
		return;
	k->lift_chains = check_lifts_neutral(c, k->chain_why, sizeof k->chain_why);
}

/* Lanes and accumulators for c: vectors only where every input and output
 * is a scalar, every field too or the state short (short_state_lanes),
 * and the merge commutative (lanes reorder it), claimed or by its form. */
/* The most lanes of the ordered fold and of a scan in lanes, whose steps
 * shuffle whole vectors lane by lane: at 64 (four AVX-512 registers a
 * value) LLVM's instruction selection took 17 s for selective_scan's
 * ordered fold (1 s at 32), and a scan of five fields (three where's)
 * over 10 minutes, recomputing known bits through the steps' 64-lane
 * compare masks, which AVX-512BW makes legal (0.4 s without it; 0.2 s at
 * 32).  Past the host's 16 lanes more only add steps: the commutative
 * lanes alone take up to 64. */
enum { SHUFFLED_LANES_MAX = 32 };

/* The most state components a tile of lanes holds by default (kern_plan). */
enum { TILE_COMPONENTS = 16 };

void kern_plan(Kern *k, Carrier *c, int lanes, int accs, int tile, int rows, int rows_tile)
{
	int shuffled = lanes < SHUFFLED_LANES_MAX ? lanes : SHUFFLED_LANES_MAX;
	int scalar = 1;
	for (int f = 0; f < c->nstate; f++)
		scalar &= spec_decl_width(&c->state[f]) == 1;
	for (int i = 0; i < c->nelem; i++)
		scalar &= spec_decl_width(&c->elem[i]) == 1;
	for (int i = 0; i < c->ncol; i++)
		scalar &= spec_decl_width(&c->col[i]) == 1;
	for (int i = 0; i < c->nmap; i++)
		scalar &= lower_width(c->map[i].e) == 1;
	int comm = check_commutes(c, k->order, sizeof k->order);
	k->c = c;
	k->map_lanes = scalar ? lanes : 1;
	k->map_stream = c->nmap == 1 && k->map_lanes == 16 && lower_width(c->map[0].e) == 1 &&
			(c->map[0].e->ty.kind == TY_F32 || c->map[0].e->ty.kind == TY_I32);
	int lanes_ok = scalar || short_state_lanes(c);
	k->lanes = lanes_ok && comm ? lanes : 1;
	k->accs = lanes_ok && comm ? accs : 1;
	/* associativity alone: segments in lanes, merged in order */
	k->ordered = scalar && !comm && lanes > 1 ? shuffled : 0;
	k->mr_field = tile_max_rescale(c, &k->mr_g, &k->mr_guard);
	/* Tiles of 8 vectors by default (one thread, AVX-512, rows of 4096 in
	 * cache, best of 5): logsumexp 2.9 G elements/s (1.7 without tiles;
	 * 16 and 32 no better within the noise, and longer tails); Welford 5.8
	 * (4.2 at 4, 2.3 without).  At 8 the max-rescale tile's maxima and
	 * exps stay in the 32 registers; at 32 a third of its loads are spills. */
	int tile_given = tile > 0;
	if (tile <= 0)
		tile = 8;
	k->tile = lanes_ok && comm ? tile : 1;
	/* A tile of lanes lifts its positions before its tree of merges, so
	 * it holds tiles times the state's components: fewer positions a
	 * tile for a larger state, 16 components at most and tiles of at
	 * least 2 (one thread, 16 rows of 16384 in cache, Zen 5, G elements/s
	 * in tiles of 2, 4 and 8: co-moments, 6 components, 4.6, 3.8, 3.9;
	 * 8 bins beside two vector row inputs 4.5, 3.6, 3.2; four bins 11.5,
	 * 11.0, 9.2; NaN-aware statistics, 4 components, 10.8, 11.4, 11.6;
	 * L1, L2 and the peak, 3 components, 13, 19, 20) */
	if (!tile_given && k->lanes > 1 && k->mr_field < 0)
		while (k->tile > 2 && k->tile * lanes_components(c) > TILE_COMPONENTS)
			k->tile /= 2;
	/* tiles of positions in one lane (reduce_tiles), at most VTILE */
	if ((!scalar || (k->lanes == 1 && comm)) && k->mr_field >= 0 && !kern_wide_state(c))
		k->tile = tile > VTILE ? VTILE : tile;
	/* Rows side by side as lanes (kern_build_reduce_rows) where tiles fold
	 * in one lane and every input is a row's or a column's: attention */
	k->group = k->tile > 1 && k->lanes == 1 && k->mr_field >= 0 && !kern_wide_state(c) && !c->nelem ? rows : 1;
	k->rows_tile = rows_tile > VTILE ? VTILE : rows_tile < 1 ? 1 : rows_tile;
	k->select = kern_selects(c);
	k->apart = !scalar && k->lanes > 1 ? kern_lists_apart(c, NULL) : 0;
	k->narrow = k->select && lower_host_has("+avx512vbmi2") && lower_host_has("+avx512bw");
	one_lane_why(k, c, scalar, comm);
	k->two_pass = 0;
	/* fields that fold apart, and vector fields, have no place in the passes */
	if (k->mr_field >= 0 && k->tile > 1 && k->lanes > 1 && scalar && !tile_has_own(c, k->mr_field)) {
		for (int i = 0; i < c->nelem; i++)
			k->two_pass += (int)run_kind_size((TyKind)c->elem[i].storage);
		for (int i = 0; i < c->ncol; i++)
			k->two_pass += (int)run_kind_size((TyKind)c->col[i].storage);
	}
	k->rowmap_g = NULL;
	if (k->two_pass && k->map_lanes == k->lanes)
		for (int i = 0; i < c->nmap && !k->rowmap_g; i++)
			k->rowmap_g = kept_node(c, c->map[i].e, k->mr_field, k->mr_g);
	/* a reduce that reads the row from memory and a map that writes it:
	 * row by row, each has the memory to itself in turn; one row's map
	 * beside the next row's reduce has both directions busy at once, and
	 * the row comes back to the map from L2 */
	k->rowmap_lanes = 0;
	if (!k->two_pass && k->mr_field < 0 && k->lanes > 1 && k->map_stream && !c->nrow && c->tpl != FAM_SCAN)
		for (int i = 0; i < c->nelem; i++)
			k->rowmap_lanes += (int)run_kind_size((TyKind)c->elem[i].storage);
	/* a scan of scalars, its outputs scalars too: in lanes (scan_lanes) */
	k->scan_lanes = 0;
	if (c->tpl == FAM_SCAN && scalar && lanes > 1) {
		k->scan_lanes = shuffled;
		for (int i = 0; i < c->nfinal; i++)
			if (lower_width(c->finalize[i].e) != 1)
				k->scan_lanes = 0;
	}
	k->scan_tiles = scan_tiles_fit(k);
	k->soff = calloc(c->nstate + 1, sizeof *k->soff);
	if (!k->soff)
		abort();
	for (int f = 0; f < c->nstate; f++)
		k->soff[f + 1] = k->soff[f] + spec_decl_width(&c->state[f]);
	k->state_bytes = (size_t)k->soff[c->nstate] * 8;
}
