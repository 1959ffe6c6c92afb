/* llvm_expr.c: IR expressions to LLVM IR through the C API, with the
 * spec's scalar semantics (ir_eval_op) exactly: float32 arithmetic without
 * contraction or fast-math, (-inf) - (-inf) = -inf, max/min as fmax/fmin,
 * wrapping integers, ordered comparisons (!= is unordered).  A scope runs
 * W lanes: every scalar becomes a <W x kind> vector; spec vectors are held
 * as one LLVM value per component. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/TargetMachine.h>

#include "compiler/llvm/llvm_int.h"

struct Arena {
	Arena *next;
	size_t used, cap;
	LLVMValueRef v[];
};

LV lower_lv_new(Lower *L, int n)
{
	Arena *a = L->arena;
	if (!a || a->used + n > a->cap) {
		size_t cap = n > 4096 ? (size_t)n : 4096;
		Arena *na = malloc(sizeof *na + cap * sizeof(LLVMValueRef));
		if (!na)
			abort();
		na->next = a, na->used = 0, na->cap = cap;
		L->arena = a = na;
	}
	LV v = {a->v + a->used, n};
	a->used += n;
	return v;
}

LLVMValueRef lower_lv_at(LV v, int t) { return v.n == 1 ? v.c[0] : v.c[t]; }

int lower_width(const Expr *e) { return e->ty.len ? e->ty.len : 1; }

/* ---- state fields that are never NaN ---- */

/* Whether e is never NaN, its vars' facts in var (by var: 1 never NaN),
 * memo by node (0 not yet, 1 may be, 2 never).  A max or min is NaN only
 * where both operands are (maxnum, as max lowers); anything that may
 * make one (inf - inf, 0 * inf, sqrt of a negative, a float param) may
 * be. */
static int never_nan(const Expr *e, const unsigned char *var, unsigned char *memo)
{
	if (memo[e->id])
		return memo[e->id] == 2;
	int r = 0;
	if (!ty_is_float(e->ty))
		r = 1;
	else
		switch (e->op) {
		case EXPR_CONST: r = e->num == e->num; break;
		case EXPR_VAR: r = var[e->k]; break;
		case EXPR_CAST: r = !ty_is_float(e->a[0]->ty) || never_nan(e->a[0], var, memo); break;
		case EXPR_INDEX: case EXPR_NEG: case EXPR_ABS: r = never_nan(e->a[0], var, memo); break;
		case EXPR_MAX: case EXPR_MIN: r = never_nan(e->a[0], var, memo) || never_nan(e->a[1], var, memo); break;
		case EXPR_WHERE: r = never_nan(e->a[1], var, memo) && never_nan(e->a[2], var, memo); break;
		default: r = 0;
		}
	memo[e->id] = r ? 2 : 1;
	return r;
}

/* The float inputs a mask keeps only where they are numbers: x in an
 * ordered comparison of a conjunction's term (x == x, x < t). */
static void mask_numbers(const Carrier *c, const Expr *m, unsigned char *var)
{
	if (!m)
		return;
	if (m->op == EXPR_AND) {
		mask_numbers(c, m->a[0], var);
		mask_numbers(c, m->a[1], var);
		return;
	}
	if (m->op < EXPR_LT || m->op > EXPR_EQ)
		return;
	for (int i = 0; i < 2; i++) {
		const Expr *x = m->a[i];
		if (x->op != EXPR_VAR)
			continue;
		for (int k = 0; k < c->nelem; k++)
			var[c->elem[k].var] |= x->k == c->elem[k].var;
		for (int k = 0; k < c->ncol; k++)
			var[c->col[k].var] |= x->k == c->col[k].var;
		for (int k = 0; k < c->nrow; k++)
			var[c->row[k].var] |= x->k == c->row[k].var;
	}
}

/* L->nan_var: the state fields' vars (a, b, c and bare) of the fields
 * that no fold makes NaN: the identity is not, nor the lift where the
 * mask keeps a position (it is the identity elsewhere), nor the merge of
 * two such states; by a fixed point over the fields, every field taken
 * as never NaN until its merge shows otherwise.  A state comes only from
 * these, so a max of two of them needs no NaN test (lower_nan_free). */
static void nan_facts(Lower *L)
{
	Carrier *c = L->c;
	int nv = ir_nvars(c->ir) + 1, nn = L->nmemo;
	unsigned char *in = calloc(nv, 1), *memo = calloc(nn, 1), *ok = calloc(c->nstate + 1, 1);
	L->nan_var = calloc(nv, 1);
	L->nan_memo = calloc(nn, 1);
	if (!in || !memo || !ok || !L->nan_var || !L->nan_memo)
		abort();
	if (c->identity && c->lift && c->merge) {
		mask_numbers(c, c->mask, in);
		for (int f = 0; f < c->nstate; f++)
			ok[f] = !c->state[f].ty.len && never_nan(c->identity[f], in, memo) && never_nan(c->lift[f], in, memo);
		for (int changed = 1; changed;) {
			changed = 0;
			memset(L->nan_var, 0, nv);
			for (int f = 0; f < c->nstate; f++)
				for (int w = 0; w < 4; w++)
					if (c->svar[w][f] >= 0)
						L->nan_var[c->svar[w][f]] = ok[f];
			memset(memo, 0, nn);
			for (int f = 0; f < c->nstate; f++)
				if (ok[f] && !never_nan(c->merge[f], L->nan_var, memo))
					ok[f] = 0, changed = 1;
		}
	}
	free(in);
	free(memo);
	free(ok);
}

int lower_nan_free(Lower *L, const Expr *e) { return never_nan(e, L->nan_var, L->nan_memo); }

void lower_init(Lower *L, LLVMContextRef ctx, LLVMModuleRef mod, Carrier *c)
{
	memset(L, 0, sizeof *L);
	L->ctx = ctx, L->mod = mod, L->c = c;
	L->b = LLVMCreateBuilderInContext(ctx);
	L->ab = LLVMCreateBuilderInContext(ctx);
	L->nmemo = ir_nnodes(c->ir) + 1;
	L->mgen = calloc(L->nmemo, sizeof *L->mgen);
	L->memo = calloc(L->nmemo, sizeof *L->memo);
	L->bind = calloc(ir_nvars(c->ir) + 1, sizeof *L->bind);
	L->agen = calloc(L->nmemo, sizeof *L->agen);
	L->aux = calloc(L->nmemo, sizeof *L->aux);
	L->varies = calloc(L->nmemo, 1);
	if (!L->mgen || !L->memo || !L->bind || !L->agen || !L->aux || !L->varies)
		abort();
	L->W = 1;
	L->gen = 1;
	L->avx512 = lower_host_avx512();
	L->f16c = lower_host_has("+f16c");
	nan_facts(L);
}

void lower_free(Lower *L)
{
	for (Arena *a = L->arena, *n; a; a = n)
		n = a->next, free(a);
	free(L->mgen);
	free(L->memo);
	free(L->bind);
	free(L->agen);
	free(L->aux);
	free(L->varies);
	free(L->nan_var);
	free(L->nan_memo);
	LLVMDisposeBuilder(L->b);
	LLVMDisposeBuilder(L->ab);
}

void lower_scope(Lower *L, int W)
{
	L->W = W;
	L->gen++;
}

/* ---- types and constants ---- */

LLVMTypeRef lower_kty(Lower *L, TyKind k)
{
	switch (k) {
	case TY_BOOL: return LLVMInt1TypeInContext(L->ctx);
	case TY_I32: return LLVMInt32TypeInContext(L->ctx);
	case TY_I64: return LLVMInt64TypeInContext(L->ctx);
	case TY_F64: case TY_NUM: return LLVMDoubleTypeInContext(L->ctx);
	default: return LLVMFloatTypeInContext(L->ctx);
	}
}

LLVMTypeRef lower_vty(Lower *L, TyKind k)
{
	LLVMTypeRef t = lower_kty(L, k);
	return L->W > 1 ? LLVMVectorType(t, L->W) : t;
}

static int is_float(TyKind k) { return k >= TY_F16; }

static LLVMValueRef scalar_const(Lower *L, TyKind k, double v)
{
	LLVMTypeRef t = lower_kty(L, k);
	if (is_float(k))
		return LLVMConstReal(t, k == TY_F32 || k == TY_F16 || k == TY_BF16 ? (double)(float)v : v);
	return LLVMConstInt(t, (unsigned long long)(long long)v, 1);
}

LLVMValueRef lower_splat(Lower *L, LLVMValueRef s)
{
	if (L->W == 1)
		return s;
	if (LLVMIsConstant(s)) {
		LLVMValueRef e[64];
		for (int i = 0; i < L->W; i++)
			e[i] = s;
		return LLVMConstVector(e, L->W);
	}
	LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), L->W);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(L->ctx);
	LLVMValueRef v = LLVMBuildInsertElement(L->b, LLVMGetUndef(vt), s, LLVMConstInt(i32, 0, 0), "");
	LLVMValueRef zero = LLVMConstNull(LLVMVectorType(i32, L->W));
	return LLVMBuildShuffleVector(L->b, v, LLVMGetUndef(vt), zero, "splat");
}

LLVMValueRef lower_const(Lower *L, TyKind k, double v)
{
	return lower_splat(L, scalar_const(L, k, v));
}

LLVMValueRef lower_intrinsic(Lower *L, const char *name, LLVMTypeRef ty, LLVMValueRef *args, int n)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMTypeRef tys[1] = {ty};
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(L->mod, id, tys, 1);
	LLVMTypeRef ft = LLVMIntrinsicGetType(L->ctx, id, tys, 1);
	return LLVMBuildCall2(L->b, ft, f, args, n, "");
}

LLVMValueRef lower_intrinsic0(Lower *L, const char *name, LLVMValueRef *args, int n)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(L->mod, id, NULL, 0);
	LLVMTypeRef ft = LLVMIntrinsicGetType(L->ctx, id, NULL, 0);
	return LLVMBuildCall2(L->b, ft, f, args, n, "");
}

/* v as int64 when it is a float constant, or a tree of selects whose
 * leaves all are, every value finite and within int64: then each leaf
 * converts at compile time and no saturating conversion runs
 * (where(x < 0, 1, 0) for an integer field); else NULL. */
static LLVMValueRef int_of_consts(Lower *L, LLVMValueRef v)
{
	if (LLVMIsASelectInst(v)) {
		LLVMValueRef x = int_of_consts(L, LLVMGetOperand(v, 1));
		LLVMValueRef y = x ? int_of_consts(L, LLVMGetOperand(v, 2)) : NULL;
		return y ? LLVMBuildSelect(L->b, LLVMGetOperand(v, 0), x, y, "") : NULL;
	}
	int n = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(LLVMTypeOf(v)) : 1;
	LLVMTypeRef t = n > 1 ? LLVMVectorType(LLVMInt64TypeInContext(L->ctx), (unsigned)n) : LLVMInt64TypeInContext(L->ctx);
	if (LLVMIsAConstantAggregateZero(v))
		return LLVMConstNull(t);
	if (!LLVMIsAConstantFP(v) && !LLVMIsAConstantDataVector(v) && !LLVMIsAConstantVector(v))
		return NULL;
	for (int l = 0; l < n; l++) {
		LLVMValueRef e = n > 1 || !LLVMIsAConstantFP(v) ? LLVMGetElementAsConstant(v, (unsigned)l) : v;
		LLVMBool lossy;
		if (!e || !LLVMIsAConstantFP(e))
			return NULL;
		double d = LLVMConstRealGetDouble(e, &lossy);
		if (!(d > -9.2e18 && d < 9.2e18))
			return NULL;
	}
	return LLVMBuildFPToSI(L->b, v, t, "");
}


int lower_host_avx512(void) { return lower_host_has("+avx512f"); }

/* ---- conversions (ir_round's rules) ---- */

LLVMValueRef lower_conv(Lower *L, LLVMValueRef v, TyKind from, TyKind to)
{
	if (from == TY_NUM)
		from = TY_F64;
	if (to == TY_NUM)
		to = TY_F64;
	if (from == TY_F16 || from == TY_BF16 || from == TY_F8E4M3)
		from = TY_F32;
	if (to == TY_F16 || to == TY_BF16 || to == TY_F8E4M3)
		to = TY_F32;
	if (from == to)
		return v;
	LLVMBuilderRef b = L->b;
	LLVMTypeRef t = lower_vty(L, to);
	if (to == TY_BOOL)
		return is_float(from) ? LLVMBuildFCmp(b, LLVMRealUNE, v, lower_const(L, from, 0), "")
				      : LLVMBuildICmp(b, LLVMIntNE, v, lower_const(L, from, 0), "");
	if (is_float(from) && is_float(to))
		return to == TY_F64 ? LLVMBuildFPExt(b, v, t, "") : LLVMBuildFPTrunc(b, v, t, "");
	if (is_float(to))
		return from == TY_BOOL ? LLVMBuildUIToFP(b, v, t, "") : LLVMBuildSIToFP(b, v, t, "");
	LLVMValueRef folded = is_float(from) ? int_of_consts(L, v) : NULL;
	if (folded)
		return to == TY_I64 ? folded : LLVMBuildTrunc(b, folded, t, "");
	if (is_float(from)) {
		/* (int32_t)(uint32_t)(int64_t)v: truncate toward zero through 64 bits;
		 * saturating so that NaN and huge values are defined (0 and the bounds) */
		static const char sat[] = "llvm.fptosi.sat"; /* overloaded on its result and its operand */
		unsigned id = LLVMLookupIntrinsicID(sat, sizeof sat - 1);
		LLVMTypeRef tys[2] = {lower_vty(L, TY_I64), LLVMTypeOf(v)};
		LLVMValueRef w = LLVMBuildCall2(b, LLVMIntrinsicGetType(L->ctx, id, tys, 2),
						LLVMGetIntrinsicDeclaration(L->mod, id, tys, 2), &v, 1, "");
		return to == TY_I64 ? w : LLVMBuildTrunc(b, w, t, "");
	}
	if (from == TY_BOOL)
		return LLVMBuildZExt(b, v, t, "");
	return to == TY_I64 ? LLVMBuildSExt(b, v, t, "") : LLVMBuildTrunc(b, v, t, "");
}

/* ---- one op on one component ---- */

static LLVMValueRef fsub_rule(Lower *L, TyKind k, LLVMValueRef x, LLVMValueRef y)
{
	LLVMBuilderRef b = L->b;
	LLVMValueRef r = LLVMBuildFSub(b, x, y, "");
	if (LLVMIsConstant(x) && LLVMIsConstant(y))
		return r;
	LLVMValueRef ninf = lower_const(L, k, -INFINITY);
	LLVMValueRef both = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, ninf, ""),
					 LLVMBuildFCmp(b, LLVMRealOEQ, y, ninf, ""), "");
	return LLVMBuildSelect(b, both, ninf, r, "subinf");
}

static LLVMValueRef powi(Lower *L, TyKind k, int e, LLVMValueRef x)
{
	/* the interpreter's square-and-multiply, in the same order */
	LLVMValueRef r = NULL, base = x;
	unsigned n = e < 0 ? -(unsigned)e : (unsigned)e;
	for (; n; n >>= 1) {
		if (n & 1)
			r = !r ? base : is_float(k) ? LLVMBuildFMul(L->b, r, base, "") : LLVMBuildMul(L->b, r, base, "");
		if (n > 1)
			base = is_float(k) ? LLVMBuildFMul(L->b, base, base, "") : LLVMBuildMul(L->b, base, base, "");
	}
	if (!r)
		r = lower_const(L, k, 1);
	if (e < 0)
		r = is_float(k) ? LLVMBuildFDiv(L->b, lower_const(L, k, 1), r, "") : lower_const(L, k, 0);
	return r;
}

/* A float64 libm function applied lane by lane: tanh, log1p and expm1
 * of f64 values (llvm.exp and the others on f64 vectors become such
 * calls too).  Float32 ones are llvm_math.c's vector code. */
static LLVMValueRef libm_call(Lower *L, const char *name, TyKind k, LLVMValueRef x)
{
	char nm[32];
	snprintf(nm, sizeof nm, "%s%s", name, k == TY_F64 ? "" : "f");
	LLVMTypeRef st = lower_kty(L, k);
	LLVMTypeRef ft = LLVMFunctionType(st, &st, 1, 0);
	LLVMValueRef f = LLVMGetNamedFunction(L->mod, nm);
	if (!f)
		f = LLVMAddFunction(L->mod, nm, ft);
	if (L->W == 1)
		return LLVMBuildCall2(L->b, ft, f, &x, 1, "");
	LLVMTypeRef i32 = LLVMInt32TypeInContext(L->ctx);
	LLVMValueRef r = LLVMGetUndef(LLVMTypeOf(x));
	for (int i = 0; i < L->W; i++) {
		LLVMValueRef idx = LLVMConstInt(i32, i, 0);
		LLVMValueRef e = LLVMBuildExtractElement(L->b, x, idx, "");
		r = LLVMBuildInsertElement(L->b, r, LLVMBuildCall2(L->b, ft, f, &e, 1, ""), idx, "");
	}
	return r;
}

static LLVMValueRef fmath(Lower *L, Op op, TyKind k, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	int f32 = k != TY_F64;
	switch (op) {
	case EXPR_EXP: return f32 ? math_exp(L, x) : lower_intrinsic(L, "llvm.exp", t, &x, 1);
	case EXPR_EXP2: return f32 ? math_exp2(L, x) : lower_intrinsic(L, "llvm.exp2", t, &x, 1);
	case EXPR_LOG: return f32 ? math_log(L, x) : lower_intrinsic(L, "llvm.log", t, &x, 1);
	case EXPR_LOG2:
		if (!f32)
			return lower_intrinsic(L, "llvm.log2", t, &x, 1);
		return LLVMBuildFMul(L->b, math_log(L, x), lower_const(L, k, 1.4426950408889634), "");
	case EXPR_LOG1P: return f32 ? math_log1p(L, x) : libm_call(L, "log1p", k, x);
	case EXPR_EXPM1: return f32 ? math_expm1(L, x) : libm_call(L, "expm1", k, x);
	case EXPR_TANH: return f32 ? math_tanh(L, x) : libm_call(L, "tanh", k, x);
	case EXPR_SQRT: return lower_intrinsic(L, "llvm.sqrt", t, &x, 1);
	case EXPR_RSQRT:
		return LLVMBuildFDiv(L->b, lower_const(L, k, 1), lower_intrinsic(L, "llvm.sqrt", t, &x, 1), "");
	case EXPR_ABS: return lower_intrinsic(L, "llvm.fabs", t, &x, 1);
	case EXPR_SIGMOID: {
		LLVMValueRef e = fmath(L, EXPR_EXP, k, LLVMBuildFNeg(L->b, x, ""));
		return LLVMBuildFDiv(L->b, lower_const(L, k, 1), LLVMBuildFAdd(L->b, lower_const(L, k, 1), e, ""), "");
	}
	default: return NULL;
	}
}

/* x > y ? x : y (max) or x < y ? x : y, as x86's vmaxps and vminps define
 * them (y where either is NaN, and where both are zeros): on AVX-512 in
 * 16 lanes the instruction itself, one uop on either vector port.  LLVM
 * keeps the compare and blend where neither operand is known nonzero,
 * and the compare into a mask register takes port 5, which the bf16
 * widening and the tiles' other compares need (layer norm's transported
 * tile of 16 vectors: 15 compares and 15 blends for its shift). */
LLVMValueRef lower_sel_max(Lower *L, LLVMValueRef x, LLVMValueRef y, int max)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	if (L->avx512 && LLVMGetTypeKind(t) == LLVMVectorTypeKind && LLVMGetVectorSize(t) == 16 &&
	    LLVMGetTypeKind(LLVMGetElementType(t)) == LLVMFloatTypeKind) {
		LLVMValueRef a[3] = {x, y, LLVMConstInt(LLVMInt32TypeInContext(L->ctx), 4, 0)}; /* current rounding */
		return lower_intrinsic0(L, max ? "llvm.x86.avx512.max.ps.512" : "llvm.x86.avx512.min.ps.512", a, 3);
	}
	return LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, max ? LLVMRealOGT : LLVMRealOLT, x, y, ""), x, y, "");
}

static LLVMValueRef fop(Lower *L, Op op, TyKind k, int e, LLVMValueRef x, LLVMValueRef y, LLVMValueRef z)
{
	LLVMBuilderRef b = L->b;
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef args[3] = {x, y, z};
	switch (op) {
	case EXPR_NEG: return LLVMBuildFNeg(b, x, "");
	case EXPR_ADD: return LLVMBuildFAdd(b, x, y, "");
	case EXPR_SUB: return fsub_rule(L, k, x, y);
	case EXPR_MUL: return LLVMBuildFMul(b, x, y, "");
	case EXPR_DIV: return LLVMBuildFDiv(b, x, y, "");
	case EXPR_POW: return powi(L, k, e, x);
	case EXPR_MAX: return lower_intrinsic(L, "llvm.maxnum", t, args, 2);
	case EXPR_MIN: return lower_intrinsic(L, "llvm.minnum", t, args, 2);
	case EXPR_FMA: return lower_intrinsic(L, "llvm.fma", t, args, 3);
	default: return fmath(L, op, k, x);
	}
}

static LLVMValueRef iop(Lower *L, Op op, TyKind k, int e, LLVMValueRef x, LLVMValueRef y, LLVMValueRef z)
{
	LLVMBuilderRef b = L->b;
	switch (op) {
	case EXPR_NEG: return LLVMBuildNeg(b, x, "");
	case EXPR_ADD: return LLVMBuildAdd(b, x, y, "");
	case EXPR_SUB: return LLVMBuildSub(b, x, y, "");
	case EXPR_MUL: return LLVMBuildMul(b, x, y, "");
	case EXPR_POW: return powi(L, k, e, x);
	case EXPR_MAX: return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, x, y, ""), x, y, "");
	case EXPR_MIN: return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, x, y, ""), x, y, "");
	case EXPR_ABS: return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, x, lower_const(L, k, 0), ""),
					      LLVMBuildNeg(b, x, ""), x, "");
	case EXPR_FMA: return LLVMBuildAdd(b, LLVMBuildMul(b, x, y, ""), z, "");
	default: {
		/* anything else on integers goes through float64, as ir_eval_op does */
		LLVMValueRef fx = lower_conv(L, x, k, TY_F64);
		LLVMValueRef fy = y ? lower_conv(L, y, k, TY_F64) : NULL, fz = z ? lower_conv(L, z, k, TY_F64) : NULL;
		return lower_conv(L, fop(L, op, TY_F64, e, fx, fy, fz), TY_F64, k);
	}
	}
}

static LLVMValueRef cmp(Lower *L, Op op, TyKind k, LLVMValueRef x, LLVMValueRef y)
{
	static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE, LLVMRealOEQ,
					       LLVMRealUNE};
	static const LLVMIntPredicate ip[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE, LLVMIntEQ, LLVMIntNE};
	int i = op - EXPR_LT;
	if (is_float(k))
		return LLVMBuildFCmp(L->b, fp[i], x, y, "");
	return LLVMBuildICmp(L->b, ip[i], x, y, "");
}

/* The kind an op computes in: its operands are converted to it. */
static TyKind operand_kind(const Expr *e)
{
	unsigned fl = ir_ops[e->op].flags;
	if (fl & F_LOGIC)
		return TY_BOOL;
	if (fl & F_CMP) {
		TyKind a = (TyKind)e->a[0]->ty.kind, b = (TyKind)e->a[1]->ty.kind;
		if (a == TY_NUM)
			return b == TY_NUM ? TY_F64 : b;
		if (b == TY_NUM || a == b)
			return a;
		return is_float(a) != is_float(b) ? (is_float(a) ? a : b) : (a > b ? a : b);
	}
	return e->ty.kind == TY_NUM ? TY_F64 : (TyKind)e->ty.kind;
}

static LLVMValueRef op_component(Lower *L, const Expr *e, TyKind k, LLVMValueRef *a)
{
	Op op = (Op)e->op;
	LLVMBuilderRef b = L->b;
	switch (op) {
	case EXPR_NOT: return LLVMBuildNot(b, a[0], "");
	case EXPR_AND: return LLVMBuildAnd(b, a[0], a[1], "");
	case EXPR_OR: return LLVMBuildOr(b, a[0], a[1], "");
	case EXPR_WHERE: return LLVMBuildSelect(b, a[0], a[1], a[2], "");
	default: break;
	}
	if (ir_ops[op].flags & F_CMP)
		return cmp(L, op, k, a[0], a[1]);
	/* maxnum(x, y) is y > x ? y : x where x is never NaN (y NaN: x),
	 * one vmaxps, where maxnum's lowering adds a NaN test of x and a
	 * blend; x > y ? x : y where y is never NaN */
	if ((op == EXPR_MAX || op == EXPR_MIN) && is_float(k)) {
		if (lower_nan_free(L, e->a[0]))
			return lower_sel_max(L, a[1], a[0], op == EXPR_MAX);
		if (lower_nan_free(L, e->a[1]))
			return lower_sel_max(L, a[0], a[1], op == EXPR_MAX);
	}
	if (k == TY_BOOL)
		k = TY_I32; /* arithmetic on bools: not produced by the type checker */
	return is_float(k) ? fop(L, op, k, e->k, a[0], a[1], a[2]) : iop(L, op, k, e->k, a[0], a[1], a[2]);
}

/* exp(x - max(u, v)) with x one of u, v (ir_max_rescale): the rescaling
 * factors of an online max.  One of exp(u - m), exp(v - m) is exp(0), so
 * both come from one exp of the non-positive difference,
 * e = exp(t > 0 ? v - u : u - v) with t = u - v:
 *   exp(u - m) = t > 0 or t is NaN ? exp(u - u) : e,  exp(u - u) in {1, 0, NaN}
 * and symmetrically for v with t' = v - u.  Exact under the spec's rules
 * (-inf - -inf = -inf, fmax ignoring NaN, inf - inf = NaN), case by case:
 * u > v, u < v, u == v finite, both -inf, either NaN, either +inf. */
static LV max_rescale(Lower *L, Expr *e)
{
	Expr *xe;
	int guard;
	Expr *m = ir_max_rescale_at(e, &xe, &guard);
	TyKind k = (TyKind)e->ty.kind;
	LLVMBuilderRef b = L->b;
	LLVMValueRef u = lower_conv(L, lower_expr(L, m->a[0]).c[0], (TyKind)m->a[0]->ty.kind, k);
	LLVMValueRef v = lower_conv(L, lower_expr(L, m->a[1]).c[0], (TyKind)m->a[1]->ty.kind, k);
	LLVMValueRef t = fsub_rule(L, k, u, v), t2 = fsub_rule(L, k, v, u), zero = lower_const(L, k, 0);
	LLVMValueRef tpos = LLVMBuildFCmp(b, LLVMRealUGT, t, zero, "");
	if (L->agen[m->id] != L->gen) {
		L->aux[m->id] = lower_lv_new(L, 1);
		LLVMValueRef d = LLVMBuildSelect(b, tpos, t2, t, "");
		L->aux[m->id].c[0] = k == TY_F64 ? fmath(L, EXPR_EXP, k, d) : math_exp_nonpos(L, d);
		L->agen[m->id] = L->gen;
	}
	int first = xe == m->a[0];
	LLVMValueRef x = first ? u : v, pos = first ? tpos : LLVMBuildFCmp(b, LLVMRealUGT, t2, zero, "");
	if (guard == IR_RESCALE_MAX) /* two -inf: x is m, its rescale 1 (IEEE's NaN picks it, the rule's -inf not) */
		pos = LLVMBuildFCmp(b, LLVMRealUGT, first ? LLVMBuildFSub(b, u, v, "") : LLVMBuildFSub(b, v, u, ""), zero, "");
	/* exp(x - x): 1, NaN for +inf and NaN, 0 for -inf (the -inf rule);
	 * guarded (ir_max_rescale_at), 1 for +inf, and for -inf where the
	 * guard is x == m: NaN only for NaN there */
	LLVMValueRef bad = LLVMBuildFCmp(b, guard == IR_RESCALE_PLAIN ? LLVMRealUGE : LLVMRealUNO, x,
					 guard == IR_RESCALE_PLAIN ? lower_const(L, k, INFINITY) : x, "");
	LLVMValueRef one = LLVMBuildSelect(b, bad, lower_const(L, k, NAN), lower_const(L, k, 1), "");
	if (guard != IR_RESCALE_MAX) {
		LLVMValueRef ninf = LLVMBuildFCmp(b, LLVMRealOEQ, x, lower_const(L, k, -INFINITY), "");
		one = LLVMBuildSelect(b, ninf, lower_const(L, k, 0), one, "");
	}
	LV r = lower_lv_new(L, 1);
	r.c[0] = LLVMBuildSelect(b, pos, one, L->aux[m->id].c[0], "rescale");
	return r;
}

int lower_varies(Lower *L, const Expr *e)
{
	if (!L->varies[e->id]) {
		int v = 0;
		if (e->op == EXPR_VAR) {
			const Var *x = ir_var(L->c->ir, e->k);
			v = x->kind == VAR_ELEM || x->kind == VAR_COL || (x->kind == VAR_IDX && x->slot == IDX_J);
		}
		for (int i = 0; i < e->nargs && !v; i++)
			v = lower_varies(L, e->a[i]);
		L->varies[e->id] = v ? 2 : 1;
	}
	return L->varies[e->id] == 2;
}

/* In the map loop, with y the same at every position of the row and
 * kern_build_map's check (llvm_map.c) on it passed (L->hoist), x - y or
 * y - x is a plain fsub: checked y != -inf, so the rule (-inf) - (-inf)
 * = -inf cannot apply (3 of softmax's 23 instructions per vector).  A
 * division stays one: x * (1 / y) is off by an ulp at one position in
 * ten, so that a `let` the lift and the map both take gave two values
 * (a probability of 1.0000005, an int8 code off by one where x / scale
 * fell on a half), where every other device divides. */
static int is_hoisted(Lower *L, const Expr *e)
{
	if (!L->hoist || e->op != EXPR_SUB || !is_float((TyKind)e->ty.kind) || e->ty.kind == TY_NUM || e->ty.len ||
	    e->a[1]->ty.kind != e->ty.kind || e->a[0]->ty.kind != e->ty.kind || e->a[0]->ty.len || e->a[1]->ty.len)
		return 0;
	return !lower_varies(L, e->a[1]) || !lower_varies(L, e->a[0]);
}

/* A float32 dot product of n >= DOT_CHUNK components in a one-lane scope,
 * as vectors of DOT_CHUNK components: products summed chunk by chunk, then
 * the lanes halved in a tree.  One chain of scalar adds (the order the
 * scalar rule gives) would take n dependent adds, and no vectorizer may
 * reorder it; this order is fixed too, so results do not vary run to
 * run.  Components past the last whole chunk are zeros. */
static LLVMValueRef dot_chunked(Lower *L, Expr *e, LV x, LV y, int n)
{
	LLVMTypeRef vt = LLVMVectorType(lower_kty(L, TY_F32), DOT_CHUNK);
	LLVMValueRef acc = NULL, zero = LLVMConstNull(vt);
	for (int t0 = 0; t0 < n; t0 += DOT_CHUNK) {
		LLVMValueRef a = zero, b = zero;
		for (int t = t0; t < n && t < t0 + DOT_CHUNK; t++) {
			LLVMValueRef at = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), (unsigned)(t - t0), 0);
			a = LLVMBuildInsertElement(L->b, a, lower_conv(L, lower_lv_at(x, t), (TyKind)e->a[0]->ty.kind, TY_F32), at, "");
			b = LLVMBuildInsertElement(L->b, b, lower_conv(L, lower_lv_at(y, t), (TyKind)e->a[1]->ty.kind, TY_F32), at, "");
		}
		LLVMValueRef p = LLVMBuildFMul(L->b, a, b, "");
		acc = acc ? LLVMBuildFAdd(L->b, acc, p, "") : p;
	}
	return lower_halve_sum(L, acc);
}

LLVMValueRef lower_halve_sum(Lower *L, LLVMValueRef acc)
{
	for (int w = DOT_CHUNK / 2; w >= 1; w /= 2) {
		LLVMValueRef lo[DOT_CHUNK / 2], hi[DOT_CHUNK / 2];
		for (int l = 0; l < w; l++) {
			lo[l] = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), (unsigned)l, 0);
			hi[l] = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), (unsigned)(l + w), 0);
		}
		LLVMValueRef u = LLVMGetUndef(LLVMTypeOf(acc));
		acc = LLVMBuildFAdd(L->b, LLVMBuildShuffleVector(L->b, acc, u, LLVMConstVector(lo, (unsigned)w), ""),
				    LLVMBuildShuffleVector(L->b, acc, u, LLVMConstVector(hi, (unsigned)w), ""), "");
	}
	return LLVMBuildExtractElement(L->b, acc, LLVMConstInt(LLVMInt32TypeInContext(L->ctx), 0, 0), "");
}

static LV lower_node(Lower *L, Expr *e)
{
	if (ir_max_rescale_at(e, NULL, NULL))
		return max_rescale(L, e);
	if (is_hoisted(L, e)) {
		LLVMValueRef x = lower_expr(L, e->a[0]).c[0], y = lower_expr(L, e->a[1]).c[0];
		LV v = lower_lv_new(L, 1);
		v.c[0] = LLVMBuildFSub(L->b, x, y, "");
		return v;
	}
	int w = lower_width(e);
	TyKind rk = (TyKind)e->ty.kind;
	switch (e->op) {
	case EXPR_CONST: {
		LV v = lower_lv_new(L, 1);
		v.c[0] = lower_const(L, rk, e->num);
		return v;
	}
	case EXPR_VAR:
		return L->bind[e->k];
	case EXPR_TOPK: case EXPR_TOPK_IDX:
		return lower_topk(L, e);
	case EXPR_INDEX: {
		LV x = lower_expr(L, e->a[0]), v = lower_lv_new(L, 1);
		v.c[0] = lower_lv_at(x, e->k);
		return v;
	}
	case EXPR_CAST: {
		LV x = lower_expr(L, e->a[0]);
		LV v = lower_lv_new(L, x.n);
		for (int t = 0; t < x.n; t++)
			v.c[t] = lower_conv(L, x.c[t], (TyKind)e->a[0]->ty.kind, rk);
		return v; /* a one-component value broadcasts */
	}
	case EXPR_DOT: {
		if (L->dotpre && L->dotpre[e->id * VTILE + L->dotslot]) {
			LV v = lower_lv_new(L, 1);
			v.c[0] = L->dotpre[e->id * VTILE + L->dotslot];
			return v;
		}
		TyKind k = operand_kind(e);
		int n = lower_width(e->a[0]);
		if (L->W == 1 && k == TY_F32 && n > LOOP_MIN && L->wide_dot) {
			LLVMValueRef s = L->wide_dot(L, e);
			if (s) {
				LV v = lower_lv_new(L, 1);
				v.c[0] = s;
				return v;
			}
		}
		LV x = lower_expr(L, e->a[0]), y = lower_expr(L, e->a[1]);
		if (L->W == 1 && k == TY_F32 && n >= DOT_CHUNK) {
			LV v = lower_lv_new(L, 1);
			v.c[0] = dot_chunked(L, e, x, y, n);
			return v;
		}
		LLVMValueRef s = NULL;
		for (int t = 0; t < n; t++) {
			LLVMValueRef u = lower_conv(L, lower_lv_at(x, t), (TyKind)e->a[0]->ty.kind, k);
			LLVMValueRef w = lower_conv(L, lower_lv_at(y, t), (TyKind)e->a[1]->ty.kind, k);
			if (!is_float(k)) { /* wraps in the result's width, as + and * do */
				LLVMValueRef p = LLVMBuildMul(L->b, u, w, "");
				s = s ? LLVMBuildAdd(L->b, s, p, "") : p;
				continue;
			}
			if (s && L->fma) {
				LLVMValueRef args[3] = {u, w, s};
				s = lower_intrinsic(L, "llvm.fmuladd", LLVMTypeOf(u), args, 3);
				continue;
			}
			LLVMValueRef p = LLVMBuildFMul(L->b, u, w, "");
			s = s ? LLVMBuildFAdd(L->b, s, p, "") : p;
		}
		LV v = lower_lv_new(L, 1);
		v.c[0] = s ? s : lower_const(L, k, 0);
		return v;
	}
	default: break;
	}
	TyKind k = operand_kind(e);
	LV a[3];
	int n = 1;
	for (int i = 0; i < e->nargs; i++) {
		a[i] = lower_expr(L, e->a[i]);
		if (a[i].n > n)
			n = a[i].n;
	}
	(void)w;
	LV v = lower_lv_new(L, n);
	for (int t = 0; t < n; t++) {
		LLVMValueRef x[3] = {0};
		for (int i = 0; i < e->nargs; i++) {
			TyKind want = e->op == EXPR_WHERE ? (i == 0 ? TY_BOOL : k) : k;
			x[i] = lower_conv(L, lower_lv_at(a[i], t), (TyKind)e->a[i]->ty.kind, want);
		}
		v.c[t] = op_component(L, e, k, x);
	}
	return v;
}

void lower_preset(Lower *L, Expr *e, LV v)
{
	L->memo[e->id] = v;
	L->mgen[e->id] = L->gen;
}

LV lower_expr(Lower *L, Expr *e)
{
	if (L->mgen[e->id] == L->gen)
		return L->memo[e->id];
	LV v = lower_node(L, e);
	L->memo[e->id] = v;
	L->mgen[e->id] = L->gen;
	return v;
}
