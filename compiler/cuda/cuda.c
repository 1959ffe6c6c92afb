/* cuda.c: the carrier's expressions lowered to CUDA C device functions.
 *
 * Each function evaluates the DAG of its roots once per node, in id order
 * (a topological order), one temporary per node: `const float t12 = ...;`,
 * vectors as register arrays filled by unrolled loops.  Inputs, state
 * fields and outputs are reached by position (e0, f1, A.in[2], A.out[0]),
 * never by the spec's names.  Semantics follow ir_eval_op: f16 and bf16
 * load as f32; (-inf) - (-inf) = -inf unless an operand is never -inf;
 * exp goes through exp2 with log2(e) folded into a constant factor;
 * integers wrap (through the helpers of templates/common.cuh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/buf.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cuda/cuda_int.h"

static const double LOG2E = 1.4426950408889634;

const char *cuda_ctype(int kind)
{
	switch (kind) {
	case TY_BOOL: return "bool";
	case TY_I32: return "int";
	case TY_I64: return "long long";
	case TY_F64: return "double";
	default: return "float";
	}
}

const char *cuda_mem_type(int kind)
{
	switch (kind) {
	case TY_F16: case TY_BF16: return "unsigned short";
	case TY_BOOL: case TY_F8E4M3: return "unsigned char";
	default: return cuda_ctype(kind);
	}
}

const char *cuda_load_cvt(int storage)
{
	switch (storage) {
	case TY_F16: return "asc_f16";
	case TY_BF16: return "asc_bf16";
	case TY_F8E4M3: return "asc_f8e4m3";
	default: return "";
	}
}

static int is_dbl(int kind) { return kind == TY_F64; }
static int is_flt(int kind)
{
	return kind == TY_F32 || kind == TY_NUM || kind == TY_F16 || kind == TY_BF16 || kind == TY_F8E4M3;
}
static int is_int(int kind) { return kind == TY_I32 || kind == TY_I64; }

/* The wrapping helper (templates/common.cuh) of an integer op, or NULL:
 * the spec's integers wrap, and C++'s signed overflow is undefined. */
static const char *wrap_fn(Op op, int kind)
{
	static const char *const name[][2] = {
		[EXPR_ADD] = {"asc_addi", "asc_addl"}, [EXPR_SUB] = {"asc_subi", "asc_subl"},
		[EXPR_MUL] = {"asc_muli", "asc_mull"}, [EXPR_NEG] = {"asc_negi", "asc_negl"},
		[EXPR_ABS] = {"asc_absi", "asc_absl"}, /* no integer quotient: `/` of integers gives a float */
	};
	if (!is_int(kind) || (size_t)op >= sizeof name / sizeof *name)
		return NULL;
	return name[op][kind == TY_I64]; /* NULL for the ops that cannot overflow */
}

void cuda_literal(Buf *b, int kind, double v)
{
	if (kind == TY_BOOL) {
		buf_puts(b, v != 0 ? "true" : "false");
		return;
	}
	if (kind == TY_I32 || kind == TY_I64) {
		buf_printf(b, "%lld%s", (long long)v, kind == TY_I64 ? "LL" : "");
		return;
	}
	if (isnan(v)) {
		buf_puts(b, is_dbl(kind) ? "(double)__int_as_float(0x7fc00000)" : "__int_as_float(0x7fc00000)");
		return;
	}
	if (isinf(v)) {
		buf_printf(b, "%s%s", v < 0 ? "-" : "", is_dbl(kind) ? "(double)ASC_INF" : "ASC_INF");
		return;
	}
	char t[40];
	snprintf(t, sizeof t, is_dbl(kind) ? "%.17g" : "%.9g", is_dbl(kind) ? v : (double)(float)v);
	if (!strpbrk(t, ".eE"))
		strcat(t, ".0");
	buf_printf(b, "%s%s", t, is_dbl(kind) ? "" : "f");
}

/* ---- a function body ---- */

struct Fn {
	Carrier *c;
	Buf *b;
	int *tmp; /* by node id: 1 + temp number, 0 when not emitted */
	int *resc; /* by id of a max node: 1 + temp of its shared rescaling exp */
	int ntmp;
	const char *st[4]; /* prefix of state fields by which */
};

/* 1 when e can never be -inf (NaN allowed): the guard of the spec's
 * subtraction rule is needed only when both operands can be. */
static int never_neg_inf(const Expr *e)
{
	if (e->ty.kind != TY_F32 && e->ty.kind != TY_F64 && e->ty.kind != TY_NUM)
		return 1;
	switch (e->op) {
	case EXPR_CONST: return e->num != -INFINITY;
	case EXPR_EXP: case EXPR_EXP2: case EXPR_SQRT: case EXPR_RSQRT: case EXPR_ABS: case EXPR_SIGMOID:
	case EXPR_TANH:
		return 1;
	case EXPR_CAST: return e->a[0]->ty.kind != TY_F32 && e->a[0]->ty.kind != TY_F64 ? 1 : never_neg_inf(e->a[0]);
	case EXPR_WHERE: return never_neg_inf(e->a[1]) && never_neg_inf(e->a[2]);
	case EXPR_MAX: case EXPR_MIN: return never_neg_inf(e->a[0]) && never_neg_inf(e->a[1]);
	default: return 0;
	}
}

static void node(struct Fn *f, Expr *e);

/* The C text of component u of e ("u" is the loop variable of a vector
 * statement, or NULL for a scalar one). */
static void operand(struct Fn *f, const Expr *e, const char *u)
{
	Buf *b = f->b;
	const char *sub = e->ty.len && u ? "[u]" : "";
	if (e->op == EXPR_CONST) {
		cuda_literal(b, e->ty.kind, e->num);
		return;
	}
	if (f->tmp[e->id]) {
		buf_printf(b, "t%d%s", f->tmp[e->id] - 1, sub);
		return;
	}
	const Var *v = ir_var(f->c->ir, e->k);
	switch (v->kind) {
	case VAR_ELEM: buf_printf(b, "E.e%d%s", v->slot, sub); return;
	case VAR_ROW: buf_printf(b, "R.r%d%s", v->slot, sub); return;
	case VAR_STATE: buf_printf(b, "%s.f%d%s", f->st[v->which], v->slot, sub); return;
	case VAR_PARAM: buf_printf(b, "((%s)A.prm[%d])", cuda_ctype(v->ty.kind), v->slot); return;
	case VAR_IDX: buf_puts(b, v->slot == IDX_I ? "i" : v->slot == IDX_J ? "j" : "A.len"); return;
	case VAR_SYM: buf_printf(b, "y%d", v->slot); return; /* a template's own value (attention: the dot product) */
	default: buf_puts(b, "0 /* unsupported variable */"); return;
	}
}

static const char *fname(Op op, int dbl)
{
	switch (op) {
	case EXPR_EXP2: return dbl ? "exp2" : "exp2f";
	case EXPR_LOG: return dbl ? "log" : "logf";
	case EXPR_LOG2: return dbl ? "log2" : "log2f";
	case EXPR_LOG1P: return dbl ? "log1p" : "log1pf";
	case EXPR_EXPM1: return dbl ? "expm1" : "expm1f";
	case EXPR_SQRT: return dbl ? "sqrt" : "sqrtf";
	case EXPR_RSQRT: return dbl ? "rsqrt" : "rsqrtf";
	case EXPR_TANH: return dbl ? "tanh" : "tanhf";
	case EXPR_FMA: return dbl ? "fma" : "fmaf";
	default: return "?";
	}
}

/* exp(x) as exp2(x * log2(e)), folding a constant factor or a negation of x
 * into the constant. */
static void lower_exp(struct Fn *f, const Expr *x, const char *u, int dbl, double sign)
{
	Buf *b = f->b;
	double k = sign * LOG2E;
	const Expr *y = x;
	if (x->op == EXPR_NEG)
		y = x->a[0], k = -k;
	else if (x->op == EXPR_MUL && x->a[1]->op == EXPR_CONST && !x->a[1]->ty.len)
		y = x->a[0], k *= x->a[1]->num;
	else if (x->op == EXPR_MUL && x->a[0]->op == EXPR_CONST && !x->a[0]->ty.len)
		y = x->a[1], k *= x->a[0]->num;
	if (y != x)
		node(f, (Expr *)y);
	if (dbl) { /* exp(-x) for sigmoid's 1 / (1 + exp(-x)) */
		buf_puts(b, sign < 0 ? "exp(-(" : "exp((");
		operand(f, x, u);
		buf_puts(b, "))");
		return;
	}
	buf_puts(b, "exp2f(");
	operand(f, y, u);
	buf_puts(b, " * ");
	cuda_literal(b, TY_F32, k);
	buf_puts(b, ")");
}

static void binop(struct Fn *f, const Expr *e, const char *op, const char *u)
{
	buf_puts(f->b, "(");
	operand(f, e->a[0], u);
	buf_printf(f->b, " %s ", op);
	operand(f, e->a[1], u);
	buf_puts(f->b, ")");
}

static void call(struct Fn *f, const Expr *e, const char *fn, const char *u)
{
	buf_printf(f->b, "%s(", fn);
	for (int i = 0; i < e->nargs; i++) {
		if (i)
			buf_puts(f->b, ", ");
		operand(f, e->a[i], u);
	}
	buf_puts(f->b, ")");
}

/* The value of one component of e from its operands. */
static void value(struct Fn *f, const Expr *e, const char *u)
{
	Buf *b = f->b;
	int kind = e->ty.kind, dbl = is_dbl(kind), flt = is_flt(kind);
	const char *wrap = wrap_fn((Op)e->op, kind);
	if (wrap) {
		call(f, e, wrap, u);
		return;
	}
	static const char *infix[] = {[EXPR_MUL] = "*", [EXPR_DIV] = "/", [EXPR_ADD] = "+", [EXPR_SUB] = "-",
				      [EXPR_LT] = "<", [EXPR_LE] = "<=", [EXPR_GT] = ">", [EXPR_GE] = ">=",
				      [EXPR_EQ] = "==", [EXPR_NE] = "!=", [EXPR_AND] = "&&", [EXPR_OR] = "||"};
	switch (e->op) {
	case EXPR_CAST:
		buf_printf(b, "(%s)", cuda_ctype(kind));
		operand(f, e->a[0], u);
		return;
	case EXPR_INDEX:
		operand(f, e->a[0], NULL);
		buf_printf(b, "[%d]", e->k);
		return;
	case EXPR_NEG: buf_puts(b, "(-"); operand(f, e->a[0], u); buf_puts(b, ")"); return;
	case EXPR_NOT: buf_puts(b, "(!"); operand(f, e->a[0], u); buf_puts(b, ")"); return;
	case EXPR_POW:
		if (flt || dbl) {
			buf_printf(b, "%s(", dbl ? "asc_powid" : "asc_powi");
			operand(f, e->a[0], u);
			buf_printf(b, ", %d)", e->k);
		} else { /* wrapping, as the CPU's integers; through double it rounded past 2^53 */
			buf_printf(b, "(%s)asc_powll(", cuda_ctype(kind));
			operand(f, e->a[0], u);
			buf_printf(b, ", %d)", e->k);
		}
		return;
	case EXPR_SUB:
		if ((flt || dbl) && !never_neg_inf(e->a[0]) && !never_neg_inf(e->a[1])) {
			call(f, e, dbl ? "asc_subd" : "asc_sub", u);
			return;
		}
		binop(f, e, "-", u);
		return;
	case EXPR_MUL: case EXPR_DIV: case EXPR_ADD: case EXPR_LT: case EXPR_LE: case EXPR_GT: case EXPR_GE:
	case EXPR_EQ: case EXPR_NE: case EXPR_AND: case EXPR_OR:
		binop(f, e, infix[e->op], u);
		return;
	case EXPR_EXP: lower_exp(f, e->a[0], u, dbl, 1); return;
	case EXPR_SIGMOID:
		buf_puts(b, dbl ? "(1.0 / (1.0 + " : "(1.0f / (1.0f + ");
		lower_exp(f, e->a[0], u, dbl, -1);
		buf_puts(b, "))");
		return;
	case EXPR_ABS:
		call(f, e, dbl ? "fabs" : flt ? "fabsf" : "abs", u);
		return;
	case EXPR_MAX: case EXPR_MIN:
		if (flt || dbl) {
			call(f, e, e->op == EXPR_MAX ? (dbl ? "fmax" : "fmaxf") : (dbl ? "fmin" : "fminf"), u);
			return;
		}
		buf_puts(b, "(");
		operand(f, e->a[0], u);
		buf_puts(b, e->op == EXPR_MAX ? " > " : " < ");
		operand(f, e->a[1], u);
		buf_puts(b, " ? ");
		operand(f, e->a[0], u);
		buf_puts(b, " : ");
		operand(f, e->a[1], u);
		buf_puts(b, ")");
		return;
	case EXPR_WHERE:
		buf_puts(b, "(");
		operand(f, e->a[0], u);
		buf_puts(b, " ? ");
		operand(f, e->a[1], u);
		buf_puts(b, " : ");
		operand(f, e->a[2], u);
		buf_puts(b, ")");
		return;
	case EXPR_FMA:
		if (!flt && !dbl) { /* integers: fmaf would round them to float */
			buf_printf(b, "%s(%s(", wrap_fn(EXPR_ADD, kind), wrap_fn(EXPR_MUL, kind));
			operand(f, e->a[0], u);
			buf_puts(b, ", ");
			operand(f, e->a[1], u);
			buf_puts(b, "), ");
			operand(f, e->a[2], u);
			buf_puts(b, ")");
			return;
		}
		call(f, e, fname((Op)e->op, dbl), u);
		return;
	case EXPR_EXP2: case EXPR_LOG: case EXPR_LOG2: case EXPR_LOG1P: case EXPR_EXPM1: case EXPR_SQRT:
	case EXPR_RSQRT: case EXPR_TANH:
		call(f, e, fname((Op)e->op, dbl), u);
		return;
	default:
		buf_printf(b, "0 /* unsupported op %s */", ir_ops[e->op].name);
		return;
	}
}

/* A column input at position j, into a temporary. */
static void load_col(struct Fn *f, Expr *e)
{
	const Var *v = ir_var(f->c->ir, e->k);
	int w = v->ty.len ? v->ty.len : 1, t = f->ntmp++;
	char src[160];
	snprintf(src, sizeof src, "ASC_LD((const %s *)A.in[%d] + (long long)j * %d + %s)", cuda_mem_type(v->storage),
		 f->c->nelem + v->slot, w, v->ty.len ? "u" : "0");
	f->tmp[e->id] = t + 1;
	cuda_load_expr(f->b, v->storage, v->ty.kind, src, t, v->ty.len);
}

/* exp(x - max(u, v)) with x one of u, v: the rescaling factors of an
 * online max.  One of exp(u - m), exp(v - m) is exp(0), so both come from
 * one exp of the non-positive difference, e = exp(-|u - v|):
 *   exp(u - m) = !(u - v <= 0) ? exp(u - u) : e,  exp(u - u) = asc_one(u),
 * and for v with !(u - v >= 0).  Plain subtraction is right here even for
 * two -inf (the spec's rule would give exp(-inf) = 0; NaN picks asc_one,
 * which is 0 for -inf); +inf and NaN give NaN, as the spec's do.  A
 * guarded difference (ir_max_rescale_at) changes only exp(u - u):
 * asc_one_inf (1 for +inf), asc_one_max (1 but for NaN). */
static int is_max_rescale(Expr *e)
{
	Expr *m = ir_max_rescale_at(e, NULL, NULL);
	int k = e->ty.kind; /* float or double throughout: no conversion between u, v and e */
	return m && (k == TY_F32 || k == TY_NUM || k == TY_F64) && m->a[0]->ty.kind == k && m->a[1]->ty.kind == k;
}

static void max_rescale(struct Fn *f, Expr *e)
{
	Expr *x;
	int guard;
	Expr *m = ir_max_rescale_at(e, &x, &guard);
	int dbl = is_dbl(e->ty.kind), t;
	const char *ty = cuda_ctype(e->ty.kind);
	node(f, m->a[0]);
	node(f, m->a[1]);
	if (!f->resc[m->id]) { /* tN = u - v, tN+1 = exp(-|tN|), once per max node */
		t = f->ntmp;
		f->ntmp += 2;
		buf_printf(f->b, "\tconst %s t%d = ", ty, t);
		operand(f, m->a[0], NULL);
		buf_puts(f->b, " - ");
		operand(f, m->a[1], NULL);
		buf_puts(f->b, ";\n");
		if (dbl) {
			buf_printf(f->b, "\tconst double t%d = exp(-fabs(t%d));\n", t + 1, t);
		} else {
			buf_printf(f->b, "\tconst float t%d = exp2f(-fabsf(t%d) * ", t + 1, t);
			cuda_literal(f->b, TY_F32, LOG2E);
			buf_puts(f->b, ");\n");
		}
		f->resc[m->id] = t + 1;
	}
	static const char *const one[3][2] = {{"asc_one", "asc_oned"}, {"asc_one_inf", "asc_one_infd"},
					      {"asc_one_max", "asc_one_maxd"}};
	int d = f->resc[m->id] - 1, first = x == m->a[0];
	t = f->ntmp++;
	buf_printf(f->b, "\tconst %s t%d = !(t%d %s 0) ? %s(", ty, t, d, first ? "<=" : ">=", one[guard][dbl]);
	operand(f, first ? m->a[0] : m->a[1], NULL);
	buf_printf(f->b, ") : t%d;\n", d + 1);
	f->tmp[e->id] = t + 1;
}

/* One K-slot list of topk's operands (v, i) into arrays nv, ni: a
 * vector's components, or a scalar pair and empty slots. */
static int lower_len(const Expr *e) { return e->ty.len ? e->ty.len : 1; }

static void topk_list(struct Fn *f, const Expr *v, const Expr *i, const char *nv, const char *ni, int n)
{
	Buf *b = f->b;
	if (v->ty.len) {
		buf_printf(b, "#pragma unroll\n\t\tfor (int u = 0; u < %d; u++) {\n\t\t\t%s[u] = ", n, nv);
		operand(f, v, "u");
		buf_printf(b, ";\n\t\t\t%s[u] = ", ni);
		operand(f, i, "u");
		buf_puts(b, ";\n\t\t}\n");
		return;
	}
	buf_printf(b, "\t\t%s[0] = ", nv);
	operand(f, v, NULL);
	buf_printf(b, ";\n\t\t%s[0] = ", ni);
	operand(f, i, NULL);
	buf_puts(b, ";\n");
	if (n > 1) {
		buf_printf(b, "#pragma unroll\n\t\tfor (int u = 1; u < %d; u++)\n\t\t\t%s[u] = ", n, nv);
		cuda_literal(b, v->ty.kind, -INFINITY);
		buf_printf(b, ", %s[u] = -1;\n", ni);
	}
}

/* topk and topk_idx: both outputs of one asc_topk (templates/common.cuh),
 * the longer operand list as its sorted K slots and the other inserted. */
static void topk_node(struct Fn *f, Expr *e)
{
	Buf *b = f->b;
	int K = e->k, swap = lower_len(e->a[2]) > lower_len(e->a[0]);
	int nb = lower_len(e->a[swap ? 0 : 2]);
	const char *ty = cuda_ctype(e->a[0]->ty.kind);
	int tv = f->ntmp++, ti = f->ntmp++;
	buf_printf(b, "\t%s t%d[%d];\n\tint t%d[%d];\n\t{\n\t\t%s av[%d], bv[%d];\n\t\tint ai[%d], bi[%d];\n", ty, tv,
		   K, ti, K, ty, K, nb, K, nb);
	topk_list(f, e->a[swap ? 2 : 0], e->a[swap ? 3 : 1], "av", "ai", K);
	topk_list(f, e->a[swap ? 0 : 2], e->a[swap ? 1 : 3], "bv", "bi", nb);
	buf_printf(b, "\t\tasc_topk<%d, %d>(av, ai, bv, bi, t%d, t%d);\n\t}\n", K, nb, tv, ti);
	Expr *sib = ir_topk_sibling(f->c->ir, e);
	f->tmp[e->id] = (e->op == EXPR_TOPK ? tv : ti) + 1;
	if (sib)
		f->tmp[sib->id] = (e->op == EXPR_TOPK ? ti : tv) + 1;
}

static void node(struct Fn *f, Expr *e)
{
	if (f->tmp[e->id] || e->op == EXPR_CONST)
		return;
	if (is_max_rescale(e)) {
		max_rescale(f, e);
		return;
	}
	if (e->op == EXPR_VAR) {
		if (ir_var(f->c->ir, e->k)->kind == VAR_COL)
			load_col(f, e);
		return;
	}
	for (int i = 0; i < e->nargs; i++)
		node(f, e->a[i]);
	if (e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX) {
		topk_node(f, e);
		return;
	}
	Buf *b = f->b;
	int t = f->ntmp++;
	const char *ty = cuda_ctype(e->ty.kind);
	if (e->op == EXPR_DOT && is_int(e->ty.kind)) { /* wrapping in the dot's own type, as the interpreter */
		buf_printf(b, "\t%s t%d = 0;\n#pragma unroll\n\tfor (int u = 0; u < %d; u++)\n\t\tt%d = %s(t%d, %s(", ty,
			   t, e->a[0]->ty.len, t, wrap_fn(EXPR_ADD, e->ty.kind), t, wrap_fn(EXPR_MUL, e->ty.kind));
		operand(f, e->a[0], "u");
		buf_puts(b, ", ");
		operand(f, e->a[1], "u");
		buf_puts(b, "));\n");
	} else if (e->op == EXPR_DOT) {
		buf_printf(b, "\t%s t%d = 0;\n#pragma unroll\n\tfor (int u = 0; u < %d; u++)\n\t\tt%d = t%d + ", ty, t,
			   e->a[0]->ty.len, t, t);
		operand(f, e->a[0], "u");
		buf_puts(b, " * ");
		operand(f, e->a[1], "u");
		buf_puts(b, ";\n");
	} else if (e->ty.len) {
		buf_printf(b, "\t%s t%d[%d];\n#pragma unroll\n\tfor (int u = 0; u < %d; u++)\n\t\tt%d[u] = ", ty, t,
			   e->ty.len, e->ty.len, t);
		value(f, e, "u");
		buf_puts(b, ";\n");
	} else {
		buf_printf(b, "\tconst %s t%d = ", ty, t);
		value(f, e, NULL);
		buf_puts(b, ";\n");
	}
	f->tmp[e->id] = t + 1;
}

/* Statement storing component-wise: "dst = e" for a scalar or a vector. */
static void assign(struct Fn *f, const char *dst, Expr *e, int len)
{
	node(f, e);
	if (len) {
		buf_printf(f->b, "#pragma unroll\n\tfor (int u = 0; u < %d; u++)\n\t\t%s[u] = ", len, dst);
		operand(f, e, "u");
	} else {
		buf_printf(f->b, "\t%s = ", dst);
		operand(f, e, NULL);
	}
	buf_puts(f->b, ";\n");
}

void cuda_fn_begin(struct Fn **fp, Carrier *c, Buf *b)
{
	struct Fn *f = calloc(1, sizeof *f);
	if (!f || !(f->tmp = calloc(ir_nnodes(c->ir) + 2, sizeof *f->tmp)) ||
	    !(f->resc = calloc(ir_nnodes(c->ir) + 2, sizeof *f->resc)))
		abort();
	f->c = c;
	f->b = b;
	f->st[STATE_A] = "a", f->st[STATE_B] = "b", f->st[STATE_C] = "c", f->st[STATE_SELF] = "s";
	*fp = f;
}

void cuda_fn_end(struct Fn *f)
{
	free(f->tmp);
	free(f->resc);
	free(f);
}

void cuda_fn_assign(struct Fn *f, const char *dst, Expr *e, int len) { assign(f, dst, e, len); }

void cuda_fn_return(struct Fn *f, Expr *e)
{
	node(f, e);
	buf_puts(f->b, "\treturn ");
	operand(f, e, NULL);
	buf_puts(f->b, ";\n");
}

void cuda_mask_body(Carrier *c, Buf *b, Expr *mask)
{
	if (!mask) {
		buf_puts(b, "\treturn true;\n");
		return;
	}
	struct Fn *f;
	cuda_fn_begin(&f, c, b);
	cuda_fn_return(f, mask);
	cuda_fn_end(f);
}

/* `tN = convert(src)` for a scalar, or a vector filled component by component. */
void cuda_load_expr(Buf *b, int storage, int kind, const char *src, int t, int len)
{
	const char *ty = cuda_ctype(kind);
	const char *cv = cuda_load_cvt(storage);
	if (len)
		buf_printf(b, "\t%s t%d[%d];\n#pragma unroll\n\tfor (int u = 0; u < %d; u++)\n\t\tt%d[u] = (%s)%s(%s);\n",
			   ty, t, len, len, t, ty, cv, src);
	else
		buf_printf(b, "\tconst %s t%d = (%s)%s(%s);\n", ty, t, ty, cv, src);
}
