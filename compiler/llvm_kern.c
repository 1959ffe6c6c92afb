/* llvm_kern.c: the functions of a CPU kernel (runtime/cpu.h) as LLVM IR:
 * identity, reduce, merge, finalize, map and scan around the carrier's
 * expressions.
 *
 * reduce, for a commutative carrier with scalar fields, runs K
 * accumulators of W lanes over tiles of T vectors: position
 * lo + c*K*T*W + k*T*W + t*W + l is lifted in lane l of vector t of
 * accumulator k's tile; the tile folds on its own (llvm_tile.c's n-ary
 * max-rescale merge, or a tree of the spec's merges), then merges into
 * its accumulator.  Full vectors left over then go one by one into
 * accumulator 0, the accumulators merge pairwise (k with k + s), the lanes
 * halve (l with l + W/2) down to one state, and the last positions
 * (fewer than W) follow one by one.  A max-rescale carrier's range of at
 * most TWO_PASS_BYTES (llvm_int.h) instead takes two passes: the max of
 * the lifted m, then the sum of f * g(m - max) (reduce_two_pass).
 * Any other carrier (non-commutative
 * merge: operand order matters; vector fields) folds left to right in
 * one scalar state.  A masked-out position lifts to the identity.
 * State memory: one 8-byte slot per component, in field order. */
#include <stdlib.h>
#include <string.h>

#include "llvm_int.h"
#include "run.h"

typedef struct {
	Lower L;
	Kern *k;
	LLVMTypeRef i8, i8p, i16, i32, i64, f64, argsty;
	LLVMValueRef args, in, out, params, rows, len, i;
	LLVMValueRef inp[256], outp[256], pv[256]; /* loaded once per function */
	LV *st;       /* scratch: one LV per state field */
	LLVMValueRef lmask; /* a partial last vector: its lanes below the end (masked loads and stores) */
	int nt;             /* map stores: non-temporal, 64-byte aligned (map_stream) */
	LLVMValueRef scratch; /* build_rowmap: pass 2 stores k->rowmap_g of position j at scratch[j] */
	int fused;          /* and the map loads it from there */
	LLVMValueRef ahead; /* pass 2 prefetches the element inputs this many positions ahead (NULL: not) */
	LLVMValueRef map_ahead; /* and so does build_rowmap's map */
} B;

/* ---- small helpers ---- */

static void prefetch_at(B *b, LLVMValueRef j, LLVMValueRef ahead);

static LLVMValueRef ci64(B *b, long long v) { return LLVMConstInt(b->i64, (unsigned long long)v, 1); }

static LLVMValueRef alloca_(B *b, LLVMTypeRef t)
{
	return LLVMBuildAlloca(b->L.ab, t, "");
}

static LLVMTypeRef storage_ty(B *b, TyKind k)
{
	switch (k) {
	case TY_BOOL: return b->i8;
	case TY_F16: case TY_BF16: return b->i16;
	default: return lower_kty(&b->L, k);
	}
}

static LLVMValueRef ptr_at(B *b, LLVMValueRef base, LLVMTypeRef et, LLVMValueRef idx)
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

/* A stored value (scalar or the scope's lanes) to its computing kind. */
static LLVMValueRef from_storage(B *b, LLVMValueRef v, TyKind s, TyKind k)
{
	Lower *L = &b->L;
	switch (s) {
	case TY_F16: v = f16_to_f32(b, v), s = TY_F32; break;
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

/* llvm.masked.load or .store, overloaded on the vector and pointer types. */
static LLVMValueRef masked(B *b, const char *name, LLVMTypeRef vt, LLVMTypeRef pt, LLVMValueRef *a, int n)
{
	LLVMTypeRef tys[2] = {vt, pt};
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(b->L.mod, id, tys, 2);
	return LLVMBuildCall2(b->L.b, LLVMIntrinsicGetType(b->L.ctx, id, tys, 2), f, a, n, "");
}

/* The lanes of a vector at j that lie below hi. */
static LLVMValueRef lanes_below(B *b, LLVMValueRef j, LLVMValueRef hi)
{
	LLVMValueRef iota[64];
	for (int l = 0; l < b->L.W; l++)
		iota[l] = LLVMConstInt(b->i64, l, 0);
	LLVMValueRef jv = lower_splat(&b->L, j);
	jv = LLVMBuildAdd(b->L.b, jv, LLVMConstVector(iota, b->L.W), "");
	return LLVMBuildICmp(b->L.b, LLVMIntSLT, jv, lower_splat(&b->L, hi), "");
}

/* Load the scope's lanes (or one value) of kind s at element index idx of base. */
static LLVMValueRef load_lanes(B *b, LLVMValueRef base, TyKind s, LLVMValueRef idx)
{
	Lower *L = &b->L;
	LLVMTypeRef et = storage_ty(b, s);
	LLVMValueRef p = ptr_at(b, base, et, idx);
	LLVMTypeRef t = L->W > 1 ? LLVMVectorType(et, L->W) : et;
	if (L->W > 1)
		p = LLVMBuildBitCast(L->b, p, LLVMPointerType(t, 0), "");
	if (L->W > 1 && b->lmask) {
		LLVMValueRef a[4] = {p, LLVMConstInt(b->i32, kind_size(s), 0), b->lmask, LLVMConstNull(t)};
		return masked(b, "llvm.masked.load", t, LLVMPointerType(t, 0), a, 4);
	}
	LLVMValueRef v = LLVMBuildLoad2(L->b, t, p, "");
	LLVMSetAlignment(v, (unsigned)kind_size(s));
	return v;
}

static void store_lanes(B *b, LLVMValueRef base, TyKind k, LLVMValueRef idx, LLVMValueRef v)
{
	Lower *L = &b->L;
	if (k == TY_BOOL)
		v = LLVMBuildZExt(L->b, v, L->W > 1 ? LLVMVectorType(b->i8, L->W) : b->i8, "");
	LLVMTypeRef et = storage_ty(b, k);
	LLVMValueRef p = ptr_at(b, base, et, idx);
	if (L->W > 1)
		p = LLVMBuildBitCast(L->b, p, LLVMPointerType(LLVMTypeOf(v), 0), "");
	if (L->W > 1 && b->lmask) {
		LLVMValueRef a[4] = {v, p, LLVMConstInt(b->i32, kind_size(k), 0), b->lmask};
		masked(b, "llvm.masked.store", LLVMTypeOf(v), LLVMTypeOf(p), a, 4);
		return;
	}
	LLVMValueRef s = LLVMBuildStore(L->b, v, p);
	LLVMSetAlignment(s, b->nt ? 64 : (unsigned)kind_size(k));
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

typedef struct {
	LLVMBasicBlockRef head, body, exit;
	LLVMValueRef ivp, iv;
	long long step;
} Loop;

static LLVMValueRef begin_fn(B *b, const char *name, LLVMTypeRef *params, int n)
{
	LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(b->L.ctx), params, n, 0);
	LLVMValueRef f = LLVMAddFunction(b->L.mod, name, ft);
	char w[16];
	snprintf(w, sizeof w, "%d", 32 * (b->k->lanes > 1 ? b->k->lanes : 4));
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
	LLVMValueRef fld[5];
	LLVMTypeRef fty[5] = {LLVMPointerType(b->i8p, 0), LLVMPointerType(b->i8p, 0), LLVMPointerType(b->f64, 0), b->i64, b->i64};
	for (int i = 0; i < 5; i++)
		fld[i] = LLVMBuildLoad2(b->L.b, fty[i], LLVMBuildStructGEP2(b->L.b, b->argsty, a, i, ""), "");
	b->in = fld[0], b->out = fld[1], b->params = fld[2], b->rows = fld[3], b->len = fld[4];
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

static void end_fn(B *b)
{
	LLVMBuildRetVoid(b->L.b);
	LLVMBasicBlockRef start = LLVMGetNextBasicBlock(LLVMGetEntryBasicBlock(b->L.fn));
	LLVMBuildBr(b->L.ab, start);
}

static Loop loop_begin(B *b, LLVMValueRef lo, LLVMValueRef hi, long long step)
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

static void loop_end(B *b, Loop *l)
{
	LLVMBuildStore(b->L.b, LLVMBuildAdd(b->L.b, l->iv, ci64(b, l->step), ""), l->ivp);
	LLVMBuildBr(b->L.b, l->head);
	LLVMPositionBuilderAtEnd(b->L.b, l->exit);
}

/* The loop's final index (where a tail loop starts). */
static LLVMValueRef loop_final(B *b, Loop *l) { return LLVMBuildLoad2(b->L.b, b->i64, l->ivp, ""); }

/* ---- binding inputs ---- */

static LV lv1(B *b, LLVMValueRef v)
{
	LV r = lv_new(&b->L, 1);
	r.c[0] = v;
	return r;
}

static void bind_params(B *b)
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
	int w = decl_width(d);
	LV v = lv_new(L, w);
	LLVMValueRef first = w > 1 ? LLVMBuildMul(L->b, e, ci64(b, w), "") : e;
	for (int t = 0; t < w; t++) {
		LLVMValueRef idx = t ? LLVMBuildAdd(L->b, first, ci64(b, t), "") : first;
		int W = L->W;
		L->W = lanes;
		LLVMValueRef x = from_storage(b, load_lanes(b, base, d->storage, idx), d->storage, (TyKind)d->ty.kind);
		L->W = W;
		v.c[t] = lanes == 1 ? lower_splat(L, x) : x;
	}
	return v;
}

static LLVMValueRef idx32(B *b, LLVMValueRef v) { return LLVMBuildTrunc(b->L.b, v, b->i32, ""); }

/* Bind params, row inputs of row i, and (when j) element and column inputs
 * and the index vars at positions j .. j+W-1. */
static void bind_inputs(B *b, LLVMValueRef j)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	bind_params(b);
	int nin = 0;
	LLVMValueRef rowbase = LLVMBuildMul(L->b, b->i, b->len, "");
	for (int k = 0; k < c->nelem; k++, nin++)
		if (j)
			L->bind[c->elem[k].var] = load_decl(b, &c->elem[k], b->inp[nin], LLVMBuildAdd(L->b, rowbase, j, ""), L->W);
	for (int k = 0; k < c->ncol; k++, nin++)
		if (j)
			L->bind[c->col[k].var] = load_decl(b, &c->col[k], b->inp[nin], j, L->W);
	for (int k = 0; k < c->nrow; k++, nin++)
		L->bind[c->row[k].var] = load_decl(b, &c->row[k], b->inp[nin], b->i, 1);
	L->bind[c->idx[IDX_I]] = lv1(b, lower_splat(L, idx32(b, b->i)));
	L->bind[c->idx[IDX_LEN]] = lv1(b, lower_splat(L, idx32(b, b->len)));
	if (!j)
		return;
	LLVMValueRef jv = lower_splat(L, idx32(b, j));
	if (L->W > 1) {
		LLVMValueRef iota[64];
		for (int l = 0; l < L->W; l++)
			iota[l] = LLVMConstInt(b->i32, l, 0);
		jv = LLVMBuildAdd(L->b, jv, LLVMConstVector(iota, L->W), "");
	}
	L->bind[c->idx[IDX_J]] = lv1(b, jv);
}

/* ---- states ---- */

static TyKind fkind(B *b, int f) { return (TyKind)b->k->c->state[f].ty.kind; }

/* Allocas for one state in the scope's lanes. */
static LV *state_slots(B *b)
{
	Carrier *c = b->k->c;
	LV *s = calloc(c->nstate, sizeof *s);
	if (!s)
		abort();
	for (int f = 0; f < c->nstate; f++) {
		s[f] = lv_new(&b->L, decl_width(&c->state[f]));
		for (int t = 0; t < s[f].n; t++)
			s[f].c[t] = alloca_(b, lower_vty(&b->L, fkind(b, f)));
	}
	return s;
}

static void slots_load(B *b, LV *slots, LV *v)
{
	for (int f = 0; f < b->k->c->nstate; f++) {
		v[f] = lv_new(&b->L, slots[f].n);
		for (int t = 0; t < slots[f].n; t++)
			v[f].c[t] = LLVMBuildLoad2(b->L.b, lower_vty(&b->L, fkind(b, f)), slots[f].c[t], "");
	}
}

static void slots_store(B *b, LV *slots, LV *v)
{
	for (int f = 0; f < b->k->c->nstate; f++)
		for (int t = 0; t < slots[f].n; t++)
			LLVMBuildStore(b->L.b, lv_at(v[f], t), slots[f].c[t]);
}

static LLVMValueRef mem_slot(B *b, LLVMValueRef st, int f, int t, LLVMTypeRef ty)
{
	LLVMValueRef idx = ci64(b, (b->k->soff[f] + t) * 8);
	LLVMValueRef p = LLVMBuildGEP2(b->L.b, b->i8, st, &idx, 1, "");
	return LLVMBuildBitCast(b->L.b, p, LLVMPointerType(ty, 0), "");
}

/* A state in memory (scalars), splat to the scope's lanes. */
static void mem_load(B *b, LLVMValueRef st, LV *v)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++) {
		v[f] = lv_new(&b->L, decl_width(&c->state[f]));
		for (int t = 0; t < v[f].n; t++) {
			LLVMTypeRef ty = lower_kty(&b->L, fkind(b, f));
			v[f].c[t] = lower_splat(&b->L, LLVMBuildLoad2(b->L.b, ty, mem_slot(b, st, f, t, ty), ""));
		}
	}
}

static void mem_store(B *b, LLVMValueRef st, LV *v)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++)
		for (int t = 0; t < decl_width(&c->state[f]); t++) {
			LLVMTypeRef ty = lower_kty(&b->L, fkind(b, f));
			LLVMBuildStore(b->L.b, lv_at(v[f], t), mem_slot(b, st, f, t, ty));
		}
}

/* Field values of exprs[f], converted to the field's kind. */
static void state_exprs(B *b, Expr **ex, LV *out)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++) {
		LV v = lower_expr(&b->L, ex[f]);
		int w = decl_width(&c->state[f]);
		out[f] = lv_new(&b->L, w);
		for (int t = 0; t < w; t++)
			out[f].c[t] = lower_conv(&b->L, lv_at(v, t), (TyKind)ex[f]->ty.kind, fkind(b, f));
	}
}

static void identity(B *b, LV *out)
{
	bind_params(b);
	state_exprs(b, b->k->c->identity, out);
}

/* out = x (+) y in the current scope (inputs bound when mask is used). */
static void merge(B *b, LV *x, LV *y, LV *out)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++) {
		b->L.bind[c->svar[STATE_A][f]] = x[f];
		b->L.bind[c->svar[STATE_B][f]] = y[f];
	}
	state_exprs(b, c->merge, out);
}

/* s = mask ? s (+) lift(j) : s, with inputs bound at j. */
static void step(B *b, LV *s, LV *tmp)
{
	Carrier *c = b->k->c;
	LV *l = tmp, *m = tmp + c->nstate;
	state_exprs(b, c->lift, l);
	merge(b, s, l, m);
	if (c->mask) {
		LLVMValueRef cond = lv_at(lower_expr(&b->L, c->mask), 0);
		for (int f = 0; f < c->nstate; f++)
			for (int t = 0; t < m[f].n; t++)
				m[f].c[t] = LLVMBuildSelect(b->L.b, cond, m[f].c[t], lv_at(s[f], t), "");
	}
	memcpy(s, m, c->nstate * sizeof *s);
}

static LLVMTypeRef *sig(B *b, int n, LLVMTypeRef *t)
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
	LLVMValueRef f = begin_fn(b, "assoc_identity", p, 2);
	lower_scope(&b->L, 1);
	identity(b, b->st);
	mem_store(b, LLVMGetParam(f, 1), b->st);
	end_fn(b);
}

static void build_merge(B *b)
{
	Carrier *c = b->k->c;
	LLVMTypeRef p[4] = {b->i8p, b->i8p, b->i8p, b->i8p};
	LLVMValueRef f = begin_fn(b, "assoc_merge", p, 4);
	lower_scope(&b->L, 1);
	bind_params(b);
	LV *x = calloc(3 * c->nstate, sizeof *x), *y = x + c->nstate, *o = y + c->nstate;
	mem_load(b, LLVMGetParam(f, 1), x);
	mem_load(b, LLVMGetParam(f, 2), y);
	merge(b, x, y, o);
	mem_store(b, LLVMGetParam(f, 3), o);
	free(x);
	end_fn(b);
}

static void store_outputs(B *b, Def *defs, int n, int first, LLVMValueRef at)
{
	for (int k = 0; k < n; k++) {
		LV v = lower_expr(&b->L, defs[k].e);
		int w = lower_width(defs[k].e);
		LLVMValueRef base = b->outp[first + k];
		LLVMValueRef e = w > 1 ? LLVMBuildMul(b->L.b, at, ci64(b, w), "") : at;
		for (int t = 0; t < w; t++)
			store_lanes(b, base, (TyKind)defs[k].e->ty.kind, t ? LLVMBuildAdd(b->L.b, e, ci64(b, t), "") : e,
				    lv_at(v, t));
	}
}

static void bind_self(B *b, LV *s)
{
	Carrier *c = b->k->c;
	for (int f = 0; f < c->nstate; f++)
		b->L.bind[c->svar[STATE_SELF][f]] = s[f];
}

/* The finalize outputs of row b->i's state at st, at flat index at. */
static void finalize_body(B *b, LLVMValueRef st, LLVMValueRef at)
{
	Carrier *c = b->k->c;
	lower_scope(&b->L, 1);
	bind_inputs(b, NULL);
	mem_load(b, st, b->st);
	bind_self(b, b->st);
	store_outputs(b, c->finalize, c->nfinal, 0, at);
}

static void build_finalize(B *b)
{
	LLVMTypeRef p[4];
	sig(b, 4, p);
	p[3] = b->i8p;
	LLVMValueRef f = begin_fn(b, "assoc_finalize", p, 4);
	b->i = LLVMGetParam(f, 1);
	finalize_body(b, LLVMGetParam(f, 3), LLVMGetParam(f, 2));
	end_fn(b);
}

/* Lanes halve: lanes [0, w/2) merge with [w/2, w) until one is left. */
static void halve(B *b, LV *s, LV *tmp)
{
	Carrier *c = b->k->c;
	LV *lo = tmp, *hi = tmp + c->nstate, *m = tmp + 2 * c->nstate;
	for (int w = b->L.W; w > 1; w /= 2) {
		for (int f = 0; f < c->nstate; f++) {
			lo[f] = lv_new(&b->L, s[f].n), hi[f] = lv_new(&b->L, s[f].n);
			for (int t = 0; t < s[f].n; t++) {
				LLVMValueRef v = lv_at(s[f], t);
				if (w == 2) {
					lo[f].c[t] = LLVMBuildExtractElement(b->L.b, v, LLVMConstInt(b->i32, 0, 0), "");
					hi[f].c[t] = LLVMBuildExtractElement(b->L.b, v, LLVMConstInt(b->i32, 1, 0), "");
					continue;
				}
				LLVMValueRef ml[32], mh[32];
				for (int l = 0; l < w / 2; l++)
					ml[l] = LLVMConstInt(b->i32, l, 0), mh[l] = LLVMConstInt(b->i32, l + w / 2, 0);
				lo[f].c[t] = LLVMBuildShuffleVector(b->L.b, v, v, LLVMConstVector(ml, w / 2), "");
				hi[f].c[t] = LLVMBuildShuffleVector(b->L.b, v, v, LLVMConstVector(mh, w / 2), "");
			}
		}
		lower_scope(&b->L, w / 2);
		bind_params(b);
		merge(b, lo, hi, m);
		memcpy(s, m, c->nstate * sizeof *s);
	}
}

/* The lifted states of positions j .. j+W-1 in out (the identity where
 * the mask is false: merging it changes nothing, by the identity law).
 * Returns that condition (NULL: every lane is lifted), id the identity. */
static LLVMValueRef lift_at(B *b, LLVMValueRef j, LV *out, LV *id)
{
	Carrier *c = b->k->c;
	lower_scope(&b->L, b->L.W);
	bind_inputs(b, j);
	state_exprs(b, c->lift, out);
	if (!c->mask && !b->lmask)
		return NULL;
	LLVMValueRef cond = c->mask ? lv_at(lower_expr(&b->L, c->mask), 0) : b->lmask;
	if (c->mask && b->lmask)
		cond = LLVMBuildAnd(b->L.b, cond, b->lmask, "");
	identity(b, id);
	for (int f = 0; f < c->nstate; f++)
		for (int t = 0; t < out[f].n; t++)
			out[f].c[t] = LLVMBuildSelect(b->L.b, cond, out[f].c[t], lv_at(id[f], t), "");
	return cond;
}

/* x > y ? x : y: one vmaxps on x86 (maxnum takes three: it must pick the
 * number when either is NaN); y when x is NaN. */
static LLVMValueRef gt_max(B *b, LLVMValueRef x, LLVMValueRef y)
{
	return LLVMBuildSelect(b->L.b, LLVMBuildFCmp(b->L.b, LLVMRealOGT, x, y, ""), x, y, "");
}

/* Pairwise sum, or the max of v ignoring NaN as maxnum does: each value
 * first meets -inf as y of gt_max, which turns NaN into -inf, so the tree
 * sees no NaN.  A lane of NaN only comes out -inf, not NaN: its F is NaN
 * either way, and merged with any state m is that state's (maxnum drops
 * NaN; the accumulator starts at the identity's m). */
static LLVMValueRef tree(B *b, LLVMValueRef *v, int n, int max)
{
	if (max)
		for (int t = 0; t < n; t++)
			v[t] = gt_max(b, v[t], lower_const(&b->L, TY_F32, -INFINITY));
	for (int s = 1; s < n; s *= 2)
		for (int t = 0; t + s < n; t += 2 * s)
			v[t] = max ? gt_max(b, v[t], v[t + s]) : LLVMBuildFAdd(b->L.b, v[t], v[t + s], "");
	return v[0];
}

/* The n-ary merge of a max-rescale carrier (llvm_tile.c) over T states
 * (a tile's lifted positions and its accumulator):
 * M = max m_t, F = sum f_t g(m_t - M).  An all -inf lane subtracts 0
 * instead of M, so that g(-inf) = 0 stands in for the spec's rule
 * (-inf) - (-inf) = -inf without a select per position; m_t - M is
 * never positive otherwise (NaN aside), so exp needs no overflow side. */
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
	for (int t = 0; t < T; t++) {
		LLVMValueRef d = LLVMBuildFSub(L->b, m[t], Ms, "");
		e[t] = k->mr_g == EXPR_EXP ? math_exp_nonpos(L, d) : math_exp2(L, d);
	}
	out[mi] = lv_new(L, 1);
	out[mi].c[0] = M;
	for (int f = 0; f < k->c->nstate; f++) {
		if (f == mi)
			continue;
		for (int t = 0; t < T; t++)
			v[t] = LLVMBuildFMul(L->b, s[t][f].c[0], e[t], "");
		out[f] = lv_new(L, 1);
		out[f].c[0] = tree(b, v, T, 0);
	}
}

/* Any other carrier: a balanced tree of the spec's merges.  Whatever the
 * lift makes constant folds through the first levels (Welford's counts
 * are 1, 2, 4: its divisions by n become exact multiplications), and the
 * tree is more accurate than a running fold.  The result is in s[0]. */
static void fold_tree(B *b, LV **s, int T, LV *tmp)
{
	int ns = b->k->c->nstate;
	for (int st = 1; st < T; st *= 2)
		for (int t = 0; t + st < T; t += 2 * st) {
			lower_scope(&b->L, b->L.W);
			bind_params(b);
			merge(b, s[t], s[t + st], tmp);
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

static LLVMValueRef aligned_from(B *b, LLVMValueRef lo, LLVMValueRef hi)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	if (!c->nelem)
		return lo;
	LLVMTypeRef et = storage_ty(b, c->elem[0].storage);
	LLVMValueRef at = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, b->i, b->len, ""), lo, "");
	if (decl_width(&c->elem[0]) > 1)
		at = LLVMBuildMul(L->b, at, ci64(b, decl_width(&c->elem[0])), "");
	LLVMValueRef p = LLVMBuildPtrToInt(L->b, ptr_at(b, b->inp[0], et, at), b->i64, "");
	long long size = (long long)kind_size((TyKind)c->elem[0].storage) * decl_width(&c->elem[0]);
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
	b->lmask = lanes_below(b, j, hi);
	lift_at(b, j, lifted, tmp);
	b->lmask = NULL;
	lower_scope(&b->L, W);
	bind_params(b);
	slots_load(b, acc, b->st);
	merge(b, b->st, lifted, tmp);
	slots_store(b, acc, tmp);
}

/* Software prefetch distance of the one-pass reduce loop.  The hardware
 * prefetchers alone leave a single core's stream short of what it can
 * read (Welford, rows of 32768 from memory, one thread: 7.5-8.4 GB/s
 * without, 10.0-10.1 with 8 KiB ahead; 2 KiB gained less), and in cache
 * it costs nothing measurable. */
enum { PREFETCH_BYTES = 8192 };

/* Prefetch the cache lines of the element inputs that n positions from j
 * cover, PREFETCH_BYTES ahead (past the row: the next row, which the
 * thread takes next; prefetches never fault). */
static void prefetch_lines(B *b, LLVMValueRef j, long long n)
{
	Carrier *c = b->k->c;
	if (!c->nelem)
		return;
	long long size = (long long)kind_size((TyKind)c->elem[0].storage) * decl_width(&c->elem[0]);
	long long step = 64 / size > 0 ? 64 / size : 1;
	for (long long t = 0; t < n; t += step)
		prefetch_at(b, j, ci64(b, PREFETCH_BYTES / size + t));
}

/* The vector loop: each accumulator takes a tile of T vectors per
 * iteration.  A max-rescale tile folds together with its accumulator in
 * one n-ary merge; any other tile folds by a tree, then one spec merge
 * into the accumulator.  Either way the accumulator's dependency chain is
 * short per tile, and the tiles' independent work overlaps.  Full vectors
 * left over go one by one into accumulator 0, then a masked one.  Returns
 * where the scalar tail starts (hi: there is none left). */
static LLVMValueRef reduce_vectors(B *b, LV **acc, LLVMValueRef lo, LLVMValueRef hi, LV *tmp)
{
	Kern *k = b->k;
	int ns = k->c->nstate, T = k->tile, W = k->lanes;
	LV *lifted = calloc((size_t)T * ns, sizeof *lifted), *s[65];
	Loop l = loop_begin(b, lo, hi, (long long)k->accs * T * W);
	prefetch_lines(b, l.iv, (long long)k->accs * T * W);
	for (int a = 0; a < k->accs; a++) {
		for (int t = 0; t < T; t++) {
			s[t] = lifted + t * ns;
			lift_at(b, LLVMBuildAdd(b->L.b, l.iv, ci64(b, ((long long)a * T + t) * W), ""), s[t], tmp);
		}
		lower_scope(&b->L, W);
		bind_params(b);
		slots_load(b, acc[a], b->st);
		if (k->mr_field >= 0 && T > 1) {
			/* the accumulator is one more state of the n-ary fold: no
			 * spec merge per tile, and its chain is one max and one fma */
			s[T] = b->st;
			fold_max_rescale(b, s, T + 1, tmp);
		} else {
			fold_tree(b, s, T, tmp);
			lower_scope(&b->L, W);
			bind_params(b);
			merge(b, b->st, s[0], tmp);
		}
		slots_store(b, acc[a], tmp);
	}
	loop_end(b, &l);
	Loop v = loop_begin(b, loop_final(b, &l), hi, W);
	lower_scope(&b->L, W);
	bind_inputs(b, v.iv);
	slots_load(b, acc[0], b->st);
	step(b, b->st, tmp);
	slots_store(b, acc[0], b->st);
	loop_end(b, &v);
	/* the last, partial vector: masked loads, the identity past hi (one
	 * merge, not up to W - 1 scalar ones: short rows are mostly tail) */
	masked_into(b, acc[0], loop_final(b, &v), hi, lifted, tmp);
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
 * k->rowmap_g = g(lift.m - m) back (build_rowmap): g of the lifted m
 * before the mask, which is the map's value wherever the row's m is Ms
 * (not -inf), kept at scratch[j]; then the mask's identity where it is
 * false, as lift_at would have it.  Where the mask holds, lift.m <= Ms
 * (or NaN), so exp's upper clamp (the map's) changes nothing and the sum
 * is the one reduce_two_pass makes without a map. */
static LLVMValueRef kept_g(B *b, LLVMValueRef j, LLVMValueRef Ms, LLVMValueRef cond, LV *id)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	LLVMValueRef ms = lower_splat(L, Ms);
	LLVMValueRef raw = lower_expr(L, k->c->lift[k->mr_field]).c[0];
	LLVMValueRef d = LLVMBuildFSub(L->b, raw, ms, "");
	LLVMValueRef e = k->mr_g == EXPR_EXP ? math_exp(L, d) : math_exp2(L, d);
	store_lanes(b, b->scratch, TY_F32, j, e);
	if (!cond)
		return e;
	d = LLVMBuildFSub(L->b, id[k->mr_field].c[0], ms, "");
	return LLVMBuildSelect(L->b, cond, e, k->mr_g == EXPR_EXP ? math_exp_nonpos(L, d) : math_exp2(L, d), "");
}

/* Prefetch (into L2) the element inputs of row b->i at position j + ahead. */
static void prefetch_at(B *b, LLVMValueRef j, LLVMValueRef ahead)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	LLVMValueRef at = LLVMBuildAdd(L->b, LLVMBuildAdd(L->b, LLVMBuildMul(L->b, b->i, b->len, ""), j, ""), ahead, "");
	LLVMTypeRef i32 = b->i32, pt = b->i8p;
	unsigned id = LLVMLookupIntrinsicID("llvm.prefetch", 13);
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(L->mod, id, &pt, 1);
	LLVMTypeRef ft = LLVMIntrinsicGetType(L->ctx, id, &pt, 1);
	for (int k = 0; k < c->nelem; k++) {
		int w = decl_width(&c->elem[k]);
		LLVMValueRef e = w > 1 ? LLVMBuildMul(L->b, at, ci64(b, w), "") : at;
		LLVMValueRef p = LLVMBuildBitCast(L->b, ptr_at(b, b->inp[k], storage_ty(b, c->elem[k].storage), e), pt, "");
		/* read, locality 2 (prefetcht1: L2), data */
		LLVMValueRef a[4] = {p, LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, 2, 0), LLVMConstInt(i32, 1, 0)};
		LLVMBuildCall2(L->b, ft, f, a, 4, "");
	}
}

/* Pass 1 (Ms NULL): acc[u] = max(acc[u], lifted m) over U vectors at j.
 * Pass 2: acc[f * PASS2_UNROLL + u] += lifted f * g(lifted m - Ms) for each f != m. */
static void two_pass_at(B *b, LLVMValueRef j, int U, LLVMValueRef *acc, LLVMValueRef Ms, LV *lifted, LV *tmp)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	int W = k->lanes, mi = k->mr_field, ns = k->c->nstate;
	for (int u = 0; u < U; u++) {
		lower_scope(L, W);
		LLVMValueRef ju = u ? LLVMBuildAdd(L->b, j, ci64(b, (long long)u * W), "") : j;
		LLVMValueRef cond = lift_at(b, ju, lifted, tmp);
		LLVMValueRef m = lifted[mi].c[0];
		LLVMTypeRef vt = lower_vty(L, TY_F32);
		if (!Ms) {
			LLVMValueRef a = LLVMBuildLoad2(L->b, vt, acc[u], "");
			LLVMBuildStore(L->b, gt_max(b, m, a), acc[u]);
			continue;
		}
		if (b->ahead)
			prefetch_at(b, ju, b->ahead);
		LLVMValueRef e;
		if (b->scratch) {
			e = kept_g(b, ju, Ms, cond, tmp);
		} else {
			LLVMValueRef d = LLVMBuildFSub(L->b, m, lower_splat(L, Ms), "");
			e = k->mr_g == EXPR_EXP ? math_exp_nonpos(L, d) : math_exp2(L, d);
		}
		for (int f = 0; f < ns; f++) {
			if (f == mi)
				continue;
			LLVMValueRef a = LLVMBuildLoad2(L->b, vt, acc[f * PASS2_UNROLL + u], "");
			LLVMValueRef t = LLVMBuildFMul(L->b, lifted[f].c[0], e, "");
			LLVMBuildStore(L->b, LLVMBuildFAdd(L->b, a, t, ""), acc[f * PASS2_UNROLL + u]);
		}
	}
}

/* One pass over [lo, hi): a masked vector up to the input's alignment
 * (aligned_from), U vectors per iteration, then one, then a masked one. */
static void two_pass_loop(B *b, LLVMValueRef lo, LLVMValueRef hi, int U, LLVMValueRef *acc, LLVMValueRef Ms,
			  LV *lifted, LV *tmp)
{
	int W = b->k->lanes;
	lower_scope(&b->L, W);
	LLVMValueRef start = aligned_from(b, lo, hi);
	LLVMBasicBlockRef peel = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "peel");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "aligned");
	LLVMBuildCondBr(b->L.b, LLVMBuildICmp(b->L.b, LLVMIntNE, start, lo, ""), peel, body);
	LLVMPositionBuilderAtEnd(b->L.b, peel);
	b->lmask = lanes_below(b, lo, start);
	two_pass_at(b, lo, 1, acc, Ms, lifted, tmp);
	b->lmask = NULL;
	LLVMBuildBr(b->L.b, body);
	LLVMPositionBuilderAtEnd(b->L.b, body);
	lower_scope(&b->L, W);
	Loop l = loop_begin(b, start, hi, (long long)U * W);
	two_pass_at(b, l.iv, U, acc, Ms, lifted, tmp);
	loop_end(b, &l);
	Loop v = loop_begin(b, loop_final(b, &l), hi, W);
	two_pass_at(b, v.iv, 1, acc, Ms, lifted, tmp);
	loop_end(b, &v);
	LLVMValueRef last = loop_final(b, &v);
	lower_scope(&b->L, W);
	b->lmask = lanes_below(b, last, hi);
	two_pass_at(b, last, 1, acc, Ms, lifted, tmp);
	b->lmask = NULL;
}

/* The state of [lo, hi) in `one` (scalar slots), by two passes: M = max of
 * the lifted m, then F = sum f * g(m - M) with M fixed: one g per position,
 * plain adds, no rescale.  A row whose M is -inf subtracts 0 (as
 * fold_max_rescale: g(-inf) = 0 for the spec's (-inf) - (-inf) = -inf).
 * The result merges with the identity once, n-arily, like an accumulator. */
static void reduce_two_pass(B *b, LLVMValueRef lo, LLVMValueRef hi, LV *one, LV *tmp)
{
	Kern *k = b->k;
	Lower *L = &b->L;
	int W = k->lanes, mi = k->mr_field, ns = k->c->nstate;
	LLVMTypeRef vt;
	LV *lifted = calloc(3 * ns, sizeof *lifted), *id = lifted + ns, *res = id + ns;
	LLVMValueRef acc1[PASS1_UNROLL], *acc2 = calloc((size_t)ns * PASS2_UNROLL, sizeof *acc2);
	lower_scope(L, W);
	vt = lower_vty(L, TY_F32);
	for (int u = 0; u < PASS1_UNROLL; u++) {
		acc1[u] = alloca_(b, vt);
		LLVMBuildStore(L->b, lower_const(L, TY_F32, -INFINITY), acc1[u]);
	}
	two_pass_loop(b, lo, hi, PASS1_UNROLL, acc1, NULL, lifted, tmp);
	lower_scope(L, W);
	LLVMValueRef v[PASS1_UNROLL];
	for (int u = 0; u < PASS1_UNROLL; u++)
		v[u] = LLVMBuildLoad2(L->b, vt, acc1[u], "");
	LLVMValueRef M = hreduce(b, tree(b, v, PASS1_UNROLL, 1), W, 1);
	LLVMValueRef none = LLVMBuildFCmp(L->b, LLVMRealOEQ, M, LLVMConstReal(LLVMTypeOf(M), -INFINITY), "");
	LLVMValueRef Ms = LLVMBuildSelect(L->b, none, LLVMConstReal(LLVMTypeOf(M), 0), M, "");
	for (int f = 0; f < ns; f++)
		for (int u = 0; u < PASS2_UNROLL && f != mi; u++) {
			acc2[f * PASS2_UNROLL + u] = alloca_(b, vt);
			LLVMBuildStore(L->b, lower_const(L, TY_F32, 0), acc2[f * PASS2_UNROLL + u]);
		}
	/* pass 2 is bound by g, not memory: meanwhile the positions that
	 * follow [lo, hi) (the next row, or chunk) come into L2, for the pass 1
	 * that comes next on this thread (runtime/cpu.c runs a task's rows in
	 * order); not past the last row */
	LLVMValueRef n = LLVMBuildSub(L->b, hi, lo, "");
	LLVMValueRef end = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, b->i, b->len, ""), LLVMBuildAdd(L->b, hi, n, ""), "");
	LLVMValueRef in = LLVMBuildICmp(L->b, LLVMIntSLE, end, LLVMBuildMul(L->b, b->rows, b->len, ""), "");
	b->ahead = LLVMBuildSelect(L->b, in, n, ci64(b, 0), "");
	two_pass_loop(b, lo, hi, PASS2_UNROLL, acc2, Ms, lifted, tmp);
	b->ahead = NULL;
	lower_scope(L, W);
	res[mi] = lv_new(L, 1);
	res[mi].c[0] = M;
	for (int f = 0; f < ns; f++) {
		if (f == mi)
			continue;
		for (int u = 0; u < PASS2_UNROLL; u++)
			v[u] = LLVMBuildLoad2(L->b, vt, acc2[f * PASS2_UNROLL + u], "");
		res[f] = lv_new(L, 1);
		res[f].c[0] = hreduce(b, tree(b, v, PASS2_UNROLL, 0), W, 0);
	}
	lower_scope(L, 1);
	identity(b, id);
	LV *s[2] = {id, res};
	fold_max_rescale(b, s, 2, tmp);
	slots_store(b, one, tmp);
	free(acc2);
	free(lifted);
}

static void build_reduce(B *b)
{
	Carrier *c = b->k->c;
	Kern *k = b->k;
	LLVMTypeRef p[5];
	sig(b, 5, p);
	p[4] = b->i8p;
	LLVMValueRef f = begin_fn(b, "assoc_reduce", p, 5);
	b->i = LLVMGetParam(f, 1);
	LLVMValueRef lo = LLVMGetParam(f, 2), hi = LLVMGetParam(f, 3);
	int ns = c->nstate;
	LV *tmp = calloc(4 * ns, sizeof *tmp);
	lower_scope(&b->L, 1);
	LV *one = state_slots(b); /* the scalar state */
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
		reduce_two_pass(b, lo, hi, one, tmp);
		LLVMBuildBr(b->L.b, joined);
		LLVMPositionBuilderAtEnd(b->L.b, online);
	}
	if (k->lanes > 1 || k->accs > 1) {
		lower_scope(&b->L, k->lanes);
		LV **acc = calloc(k->accs, sizeof *acc);
		identity(b, b->st);
		for (int a = 0; a < k->accs; a++) {
			acc[a] = state_slots(b);
			slots_store(b, acc[a], b->st);
		}
		tail = reduce_vectors(b, acc, lo, hi, tmp);
		/* accumulators pairwise, then lanes */
		LV *v = calloc((size_t)k->accs * ns, sizeof *v);
		for (int a = 0; a < k->accs; a++)
			slots_load(b, acc[a], v + a * ns);
		for (int s = 1; s < k->accs; s *= 2)
			for (int a = 0; a + s < k->accs; a += 2 * s) {
				lower_scope(&b->L, k->lanes);
				bind_params(b);
				merge(b, v + a * ns, v + (a + s) * ns, tmp);
				memcpy(v + a * ns, tmp, ns * sizeof *tmp);
			}
		halve(b, v, tmp);
		lower_scope(&b->L, 1);
		slots_store(b, one, v);
		for (int a = 0; a < k->accs; a++)
			free(acc[a]);
		free(acc);
		free(v);
	} else {
		identity(b, b->st);
		slots_store(b, one, b->st);
	}
	if (joined) {
		LLVMBuildBr(b->L.b, joined);
		LLVMPositionBuilderAtEnd(b->L.b, joined);
	}
	lower_scope(&b->L, 1);
	Loop l = loop_begin(b, tail, hi, 1);
	lower_scope(&b->L, 1);
	bind_inputs(b, l.iv);
	slots_load(b, one, b->st);
	step(b, b->st, tmp);
	slots_store(b, one, b->st);
	loop_end(b, &l);
	slots_load(b, one, b->st);
	mem_store(b, LLVMGetParam(f, 4), b->st);
	free(one);
	free(tmp);
	end_fn(b);
}

/* The map outputs of positions iv .. iv+W-1, with the row's state st
 * (scalars) splat to the lanes. */
static void map_at(B *b, LV *st, LLVMValueRef iv, LLVMValueRef rowbase)
{
	Carrier *c = b->k->c;
	lower_scope(&b->L, b->L.W);
	bind_inputs(b, iv);
	for (int fl = 0; fl < c->nstate; fl++) {
		b->st[fl] = lv_new(&b->L, st[fl].n);
		for (int t = 0; t < st[fl].n; t++)
			b->st[fl].c[t] = lower_splat(&b->L, st[fl].c[t]);
	}
	bind_self(b, b->st);
	if (b->fused)
		lower_preset(&b->L, b->k->rowmap_g, lv1(b, load_lanes(b, b->scratch, TY_F32, iv)));
	if (b->map_ahead)
		prefetch_at(b, iv, b->map_ahead);
	store_outputs(b, c->map, c->nmap, c->nfinal, LLVMBuildAdd(b->L.b, rowbase, iv, ""));
}

/* Unrolled, the exps of consecutive vectors of the map interleave
 * (LLVM leaves this loop rolled). */
enum { MAP_UNROLL = 4 };

/* The unrolled map loop from *tail to hi; *tail is where it stopped. */
static void map_unrolled(B *b, LV *st, LLVMValueRef tailp, LLVMValueRef hi, LLVMValueRef rowbase)
{
	int W = b->k->map_lanes;
	lower_scope(&b->L, W);
	Loop l = loop_begin(b, LLVMBuildLoad2(b->L.b, b->i64, tailp, ""), hi, (long long)MAP_UNROLL * W);
	for (int u = 0; u < MAP_UNROLL; u++)
		map_at(b, st, u ? LLVMBuildAdd(b->L.b, l.iv, ci64(b, (long long)u * W), "") : l.iv, rowbase);
	loop_end(b, &l);
	LLVMBuildStore(b->L.b, loop_final(b, &l), tailp);
}

/* One 4-byte output in 16 lanes (Kern.map_stream): a masked vector runs
 * up to the output's first 64-byte aligned position, so that the vectors
 * after it store whole cache lines: non-temporal stores need that, and
 * a plain store that straddles two lines (any 64-byte vector of an array
 * from calloc, 16 bytes past a line) costs two. */
static void map_align(B *b, LV *st, LLVMValueRef tailp, LLVMValueRef hi, LLVMValueRef rowbase)
{
	Lower *L = &b->L;
	int W = b->k->map_lanes;
	LLVMValueRef tail = LLVMBuildLoad2(L->b, b->i64, tailp, "");
	LLVMValueRef out = ptr_at(b, b->outp[b->k->c->nfinal], b->i32, LLVMBuildAdd(L->b, rowbase, tail, ""));
	LLVMValueRef mis = LLVMBuildAnd(L->b, LLVMBuildNeg(L->b, LLVMBuildPtrToInt(L->b, out, b->i64, ""), ""), ci64(b, 63), "");
	LLVMValueRef start = LLVMBuildAdd(L->b, tail, LLVMBuildLShr(L->b, mis, ci64(b, 2), ""), "");
	start = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, start, hi, ""), start, hi, "");
	lower_scope(L, W);
	b->lmask = lanes_below(b, tail, start);
	map_at(b, st, tail, rowbase);
	b->lmask = NULL;
	LLVMBuildStore(L->b, start, tailp);
}

/* Outputs far larger than the last-level cache (MAP_STREAM_BYTES in all)
 * go out with non-temporal stores: no read for ownership, a third less
 * memory traffic for softmax (read x, write y, instead of read x, read y,
 * write y), and the cache keeps the input.  The fence makes the
 * write-combined stores visible before the pool's barrier (or the next
 * store of the caller). */
#define MAP_STREAM_BYTES (64LL << 20)

static void map_stream(B *b, LV *st, LLVMValueRef tailp, LLVMValueRef hi, LLVMValueRef rowbase)
{
	map_align(b, st, tailp, hi, rowbase);
	b->nt = 1;
	map_unrolled(b, st, tailp, hi, rowbase);
	b->nt = 0;
	/* on x86, sfence is the fence for write-combined stores (all stores
	 * before it visible before any after it), and it does not wait for
	 * loads as mfence does (softmax, 2048 x 32768, one thread, medians of
	 * 5 alternated runs: 10.5 -> 11.1 GB/s) */
	if (!strncmp(LLVMGetTarget(b->L.mod), "x86_64", 6))
		lower_intrinsic0(&b->L, "llvm.x86.sse.sfence", NULL, 0);
	else
		LLVMBuildFence(b->L.b, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
}

/* The map loops over [lo, hi): MAP_UNROLL vectors per iteration (streamed
 * for large outputs), then one vector, then one masked vector for the
 * rest; without lanes, one by one.  st holds the row's state as scalars. */
static void map_loops(B *b, LV *st, LLVMValueRef lo, LLVMValueRef hi, int hoist)
{
	int W = b->k->map_lanes;
	LLVMValueRef rowbase = LLVMBuildMul(b->L.b, b->i, b->len, "");
	LLVMValueRef tailp = alloca_(b, b->i64);
	LLVMBuildStore(b->L.b, lo, tailp);
	b->L.hoist = hoist;
	if (W > 1 && b->k->map_stream) {
		LLVMValueRef n = LLVMBuildMul(b->L.b, b->rows, b->len, "");
		LLVMValueRef big = LLVMBuildICmp(b->L.b, LLVMIntSGE, n, ci64(b, MAP_STREAM_BYTES / 4), "");
		LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "stream");
		LLVMBasicBlockRef cb = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "cached");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "rest");
		LLVMBuildCondBr(b->L.b, big, sb, cb);
		LLVMPositionBuilderAtEnd(b->L.b, sb);
		map_stream(b, st, tailp, hi, rowbase);
		LLVMBuildBr(b->L.b, done);
		LLVMPositionBuilderAtEnd(b->L.b, cb);
		map_align(b, st, tailp, hi, rowbase);
		map_unrolled(b, st, tailp, hi, rowbase);
		LLVMBuildBr(b->L.b, done);
		LLVMPositionBuilderAtEnd(b->L.b, done);
	} else if (W > 1) {
		map_unrolled(b, st, tailp, hi, rowbase);
	}
	LLVMValueRef tail = LLVMBuildLoad2(b->L.b, b->i64, tailp, "");
	for (int pass = W > 1 ? 1 : 2; pass < 3; pass++) {
		int last = pass == 2 && W > 1;
		lower_scope(&b->L, W);
		Loop l = loop_begin(b, tail, last ? LLVMBuildAdd(b->L.b, tail, ci64(b, W), "") : hi, W);
		lower_scope(&b->L, W);
		if (last)
			b->lmask = lanes_below(b, l.iv, hi);
		map_at(b, st, l.iv, rowbase);
		b->lmask = NULL;
		loop_end(b, &l);
		tail = loop_final(b, &l);
	}
	b->L.hoist = 0;
}

/* The map's position-invariant f32 operands that is_hoisted (llvm_expr.c)
 * relies on: divisors (div[k] = 1) and subtraction operands (0). */
static int invariant_operands(B *b, Expr *e, Expr **out, int *div, int n, unsigned char *seen)
{
	if (seen[e->id] || n >= 62)
		return n;
	seen[e->id] = 1;
	if ((e->op == EXPR_DIV || e->op == EXPR_SUB) && !e->ty.len && e->ty.kind == TY_F32)
		for (int i = e->op == EXPR_DIV; i < 2; i++)
			if (e->a[i]->ty.kind == TY_F32 && !e->a[i]->ty.len && !lower_varies(&b->L, e->a[i]))
				div[n] = e->op == EXPR_DIV, out[n++] = e->a[i];
	for (int i = 0; i < e->nargs; i++)
		n = invariant_operands(b, e->a[i], out, div, n, seen);
	return n;
}

static LLVMValueRef fcmp_c(B *b, LLVMRealPredicate p, LLVMValueRef x, double v)
{
	return LLVMBuildFCmp(b->L.b, p, x, lower_const(&b->L, TY_F32, v), "");
}

/* The checks of is_hoisted on the row's values, as one i1; NULL when the
 * map has no such operand.  With 64 or more, none is hoisted. */
static LLVMValueRef hoist_ok(B *b, LV *st)
{
	Carrier *c = b->k->c;
	Lower *L = &b->L;
	Expr *d[64];
	int div[64], n = 0;
	unsigned char *seen = calloc(ir_nnodes(c->ir) + 1, 1);
	for (int k = 0; k < c->nmap; k++)
		n = invariant_operands(b, c->map[k].e, d, div, n, seen);
	free(seen);
	if (!n || n >= 62)
		return NULL;
	lower_scope(L, 1);
	bind_inputs(b, NULL);
	bind_self(b, st);
	LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0);
	for (int k = 0; k < n; k++) {
		LLVMValueRef y = lower_expr(L, d[k]).c[0], bad;
		if (div[k]) {
			LLVMValueRef a = lower_intrinsic(L, "llvm.fabs", LLVMTypeOf(y), &y, 1);
			LLVMValueRef tiny = LLVMBuildAnd(L->b, fcmp_c(b, LLVMRealOGT, a, 0), fcmp_c(b, LLVMRealOLT, a, 0x1p-126), "");
			LLVMValueRef huge = LLVMBuildAnd(L->b, fcmp_c(b, LLVMRealOGT, a, 0x1p126), fcmp_c(b, LLVMRealOLT, a, INFINITY), "");
			bad = LLVMBuildOr(L->b, tiny, huge, "");
		} else {
			bad = fcmp_c(b, LLVMRealOEQ, y, -INFINITY);
		}
		ok = LLVMBuildAnd(L->b, ok, LLVMBuildNot(L->b, bad, ""), "");
	}
	return ok;
}

/* The map of positions [lo, hi) of row b->i with the state at stp.  With
 * b->scratch (build_rowmap), the hoisted version reads k->rowmap_g from
 * it, where pass 2 left it: the same value, as the row's m (pass 2's Ms)
 * is not -inf there. */
static void map_body(B *b, LLVMValueRef stp, LLVMValueRef lo, LLVMValueRef hi)
{
	Carrier *c = b->k->c;
	LV *st = calloc(c->nstate, sizeof *st);
	lower_scope(&b->L, 1);
	mem_load(b, stp, st); /* scalars, before the loops */
	LLVMValueRef safe = hoist_ok(b, st);
	if (b->scratch) {
		LLVMValueRef m = st[b->k->mr_field].c[0];
		LLVMValueRef kept = LLVMBuildFCmp(b->L.b, LLVMRealONE, m, LLVMConstReal(LLVMTypeOf(m), -INFINITY), "");
		safe = safe ? LLVMBuildAnd(b->L.b, safe, kept, "") : kept;
	}
	if (!safe) {
		map_loops(b, st, lo, hi, 0);
	} else {
		/* two versions of the loops: LLVM does not unswitch a select */
		LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "hoisted");
		LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "general");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(b->L.ctx, b->L.fn, "done");
		LLVMBuildCondBr(b->L.b, safe, fast, slow);
		LLVMPositionBuilderAtEnd(b->L.b, fast);
		b->fused = b->scratch != NULL;
		map_loops(b, st, lo, hi, 1);
		b->fused = 0;
		LLVMBuildBr(b->L.b, done);
		LLVMPositionBuilderAtEnd(b->L.b, slow);
		map_loops(b, st, lo, hi, 0);
		LLVMBuildBr(b->L.b, done);
		LLVMPositionBuilderAtEnd(b->L.b, done);
	}
	free(st);
}

static void build_map(B *b)
{
	LLVMTypeRef p[5];
	sig(b, 5, p);
	p[4] = b->i8p;
	LLVMValueRef f = begin_fn(b, "assoc_map", p, 5);
	b->i = LLVMGetParam(f, 1);
	map_body(b, LLVMGetParam(f, 4), LLVMGetParam(f, 2), LLVMGetParam(f, 3));
	end_fn(b);
}

/* A whole row of at most TWO_PASS_BYTES (runtime/cpu.h's rowmap): the two
 * passes of reduce_two_pass, pass 2 keeping the map's g(lift.m - m) of
 * each position in scratch, then finalize, then the map reading it back:
 * one g per position instead of two.  Softmax's y = exp(x - m) / l
 * becomes y = kept * (1 / l), and x stays in L2 from pass 1 to the map. */
static void build_rowmap(B *b)
{
	int ns = b->k->c->nstate;
	LLVMTypeRef p[4] = {b->i8p, b->i64, b->i8p, b->i8p};
	LLVMValueRef f = begin_fn(b, "assoc_rowmap", p, 4);
	b->i = LLVMGetParam(f, 1);
	LLVMValueRef st = LLVMGetParam(f, 2), lo = ci64(b, 0);
	LV *tmp = calloc(4 * ns, sizeof *tmp);
	lower_scope(&b->L, 1);
	LV *one = state_slots(b);
	b->scratch = LLVMGetParam(f, 3);
	reduce_two_pass(b, lo, b->len, one, tmp);
	lower_scope(&b->L, 1);
	slots_load(b, one, b->st);
	mem_store(b, st, b->st);
	finalize_body(b, st, b->i);
	/* while the map's stores stream out, the row after next starts to
	 * come in (pass 2 prefetches the next): reads no longer wait for
	 * pass 2 alone, which is too short to fetch a whole row (softmax,
	 * 2048 x 32768, one thread, medians of 7 runs alternated with the
	 * old code: 10.5 -> 11.1 GB/s; the next row here instead, or two rows
	 * ahead in pass 2, gained nothing) */
	LLVMValueRef in = LLVMBuildICmp(b->L.b, LLVMIntSLT, LLVMBuildAdd(b->L.b, b->i, ci64(b, 2), ""), b->rows, "");
	b->map_ahead = LLVMBuildSelect(b->L.b, in, LLVMBuildMul(b->L.b, b->len, ci64(b, 2), ""), ci64(b, 0), "");
	map_body(b, st, lo, b->len);
	b->map_ahead = NULL;
	b->scratch = NULL;
	free(one);
	free(tmp);
	end_fn(b);
}

static void build_scan(B *b)
{
	Carrier *c = b->k->c;
	LLVMTypeRef p[5];
	sig(b, 5, p);
	p[4] = b->i8p;
	LLVMValueRef f = begin_fn(b, "assoc_scan", p, 5);
	b->i = LLVMGetParam(f, 1);
	LV *tmp = calloc(2 * c->nstate, sizeof *tmp);
	lower_scope(&b->L, 1);
	LV *one = state_slots(b);
	mem_load(b, LLVMGetParam(f, 4), b->st);
	slots_store(b, one, b->st);
	LLVMValueRef rowbase = LLVMBuildMul(b->L.b, b->i, b->len, "");
	Loop l = loop_begin(b, LLVMGetParam(f, 2), LLVMGetParam(f, 3), 1);
	lower_scope(&b->L, 1);
	bind_inputs(b, l.iv);
	slots_load(b, one, b->st);
	step(b, b->st, tmp);
	slots_store(b, one, b->st);
	bind_self(b, b->st);
	store_outputs(b, c->finalize, c->nfinal, 0, LLVMBuildAdd(b->L.b, rowbase, l.iv, ""));
	loop_end(b, &l);
	slots_load(b, one, b->st);
	mem_store(b, LLVMGetParam(f, 4), b->st);
	free(one);
	free(tmp);
	end_fn(b);
}

int kern_build(Kern *k, LLVMContextRef ctx, LLVMModuleRef mod)
{
	B b = {.k = k};
	lower_init(&b.L, ctx, mod, k->c);
	b.i8 = LLVMInt8TypeInContext(ctx), b.i16 = LLVMInt16TypeInContext(ctx);
	b.i32 = LLVMInt32TypeInContext(ctx), b.i64 = LLVMInt64TypeInContext(ctx);
	b.f64 = LLVMDoubleTypeInContext(ctx);
	b.i8p = LLVMPointerType(b.i8, 0);
	LLVMTypeRef fields[5] = {LLVMPointerType(b.i8p, 0), LLVMPointerType(b.i8p, 0), LLVMPointerType(b.f64, 0), b.i64,
				 b.i64};
	b.argsty = LLVMStructTypeInContext(ctx, fields, 5, 0);
	b.st = calloc(k->c->nstate, sizeof *b.st);
	if (!b.st)
		abort();
	build_identity(&b);
	build_merge(&b);
	build_reduce(&b);
	build_finalize(&b);
	if (k->c->nmap)
		build_map(&b);
	if (k->rowmap_g)
		build_rowmap(&b);
	build_scan(&b);
	free(b.st);
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
 * exactly what pass 2 of reduce_two_pass computes at each position once
 * the row's m is known, so build_rowmap keeps it for the map.  A lift
 * with a division or a subtraction is left out: the map may hoist those
 * (is_hoisted in llvm_expr.c) and compute a different lift.m. */
static Expr *kept_node(Carrier *c, Expr *e, int mi, Op g)
{
	Expr *s = e->nargs == 1 ? e->a[0] : NULL;
	if (e->op == (int)g && e->ty.kind == TY_F32 && !e->ty.len && s->op == EXPR_SUB && s->a[0] == c->lift[mi] &&
	    s->a[1]->op == EXPR_VAR && s->a[1]->k == c->svar[STATE_SELF][mi] && c->lift[mi]->ty.kind == TY_F32 &&
	    !c->lift[mi]->ty.len && !has_op(c->lift[mi], EXPR_DIV) && !has_op(c->lift[mi], EXPR_SUB))
		return e;
	for (int i = 0; i < e->nargs; i++) {
		Expr *r = kept_node(c, e->a[i], mi, g);
		if (r)
			return r;
	}
	return NULL;
}

/* Lanes and accumulators for c: vectors only where every field, input and
 * output is a scalar and the merge is commutative (lanes reorder it). */
void kern_plan(Kern *k, Carrier *c, int lanes, int accs, int tile)
{
	int scalar = 1;
	for (int f = 0; f < c->nstate; f++)
		scalar &= decl_width(&c->state[f]) == 1;
	for (int i = 0; i < c->nelem; i++)
		scalar &= decl_width(&c->elem[i]) == 1;
	for (int i = 0; i < c->ncol; i++)
		scalar &= decl_width(&c->col[i]) == 1;
	for (int i = 0; i < c->nmap; i++)
		scalar &= lower_width(c->map[i].e) == 1;
	int comm = (c->laws & LAW_COMMUTATIVE) != 0;
	k->c = c;
	k->map_lanes = scalar ? lanes : 1;
	k->map_stream = c->nmap == 1 && k->map_lanes == 16 && lower_width(c->map[0].e) == 1 &&
			(c->map[0].e->ty.kind == TY_F32 || c->map[0].e->ty.kind == TY_I32);
	k->lanes = scalar && comm ? lanes : 1;
	k->accs = scalar && comm ? accs : 1;
	k->mr_field = tile_max_rescale(c, &k->mr_g);
	/* Tiles of 8 vectors by default (one thread, AVX-512, rows of 4096 in
	 * cache, best of 5): logsumexp 2.9 G elements/s (1.7 without tiles;
	 * 16 and 32 no better within the noise, and longer tails); Welford 5.8
	 * (4.2 at 4, 2.3 without).  At 8 the max-rescale tile's maxima and
	 * exps stay in the 32 registers; at 32 a third of its loads are spills. */
	if (tile <= 0)
		tile = 8;
	k->tile = scalar && comm ? tile : 1;
	k->two_pass = 0;
	if (k->mr_field >= 0 && k->tile > 1 && k->lanes > 1) {
		for (int i = 0; i < c->nelem; i++)
			k->two_pass += (int)kind_size((TyKind)c->elem[i].storage);
		for (int i = 0; i < c->ncol; i++)
			k->two_pass += (int)kind_size((TyKind)c->col[i].storage);
	}
	k->rowmap_g = NULL;
	if (k->two_pass && k->map_lanes == k->lanes)
		for (int i = 0; i < c->nmap && !k->rowmap_g; i++)
			k->rowmap_g = kept_node(c, c->map[i].e, k->mr_field, k->mr_g);
	k->soff = calloc(c->nstate + 1, sizeof *k->soff);
	if (!k->soff)
		abort();
	for (int f = 0; f < c->nstate; f++)
		k->soff[f + 1] = k->soff[f] + decl_width(&c->state[f]);
	k->state_bytes = (size_t)k->soff[c->nstate] * 8;
}
