/* ir.c: the expression DAG (hash-consing, constant folding, substitution),
 * types, and the scalar semantics of every op. */
#include "ir.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

const OpInfo ir_ops[EXPR_NOPS] = {
#define OP(name, printed, arity, prec, flags, unit) {#name, printed, arity, prec, flags, unit},
#include "ops.def"
#undef OP
};

enum { CHUNK = 1024 };

typedef struct Chunk Chunk;
struct Chunk {
	Chunk *next;
	int used;
	Expr nodes[CHUNK];
};

struct Ir {
	Chunk *chunks;
	uint32_t nnodes;
	Expr **tab;
	size_t tabsz;
	Var *vars;
	int nvars, capvars;
	Dim *dims;
	int ndims, capdims;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fputs("assoc: out of memory\n", stderr);
		abort();
	}
	return q;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

Ir *ir_new(void)
{
	Ir *ir = xrealloc(NULL, sizeof *ir);
	memset(ir, 0, sizeof *ir);
	ir->tabsz = 1024;
	ir->tab = xrealloc(NULL, ir->tabsz * sizeof *ir->tab);
	memset(ir->tab, 0, ir->tabsz * sizeof *ir->tab);
	return ir;
}

void ir_free(Ir *ir)
{
	if (!ir)
		return;
	for (Chunk *c = ir->chunks, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	for (int i = 0; i < ir->nvars; i++)
		free(ir->vars[i].name);
	for (int i = 0; i < ir->ndims; i++)
		free(ir->dims[i].name);
	free(ir->vars);
	free(ir->dims);
	free(ir->tab);
	free(ir);
}

int ir_nnodes(const Ir *ir) { return (int)ir->nnodes; }

int ir_add_dim(Ir *ir, const char *name, int size)
{
	if (ir->ndims == ir->capdims) {
		ir->capdims = ir->capdims ? 2 * ir->capdims : 8;
		ir->dims = xrealloc(ir->dims, ir->capdims * sizeof *ir->dims);
	}
	ir->dims[ir->ndims] = (Dim){xstrdup(name), size};
	return ir->ndims++;
}

int ir_ndims(const Ir *ir) { return ir->ndims; }
const Dim *ir_dim(const Ir *ir, int d) { return &ir->dims[d]; }

int ir_find_dim(const Ir *ir, const char *name)
{
	for (int i = 0; i < ir->ndims; i++)
		if (!strcmp(ir->dims[i].name, name))
			return i;
	return -1;
}

int ir_add_var(Ir *ir, const char *name, VarKind kind, int which, int slot, Ty ty, TyKind storage)
{
	if (ir->nvars == ir->capvars) {
		ir->capvars = ir->capvars ? 2 * ir->capvars : 16;
		ir->vars = xrealloc(ir->vars, ir->capvars * sizeof *ir->vars);
	}
	ir->vars[ir->nvars] = (Var){xstrdup(name), kind, which, slot, ty, storage};
	return ir->nvars++;
}

int ir_nvars(const Ir *ir) { return ir->nvars; }
const Var *ir_var(const Ir *ir, int v) { return &ir->vars[v]; }

/* ---- types ---- */

Ty ty_scalar(TyKind k) { return (Ty){(uint8_t)k, 0, -1}; }
Ty ty_vec(TyKind k, int len, int dim) { return (Ty){(uint8_t)k, len, dim}; }

int ty_eq(Ty a, Ty b)
{
	return a.kind == b.kind && a.len == b.len && (a.len == 0 || a.dim == b.dim);
}

int ty_is_float(Ty t) { return t.kind >= TY_F16 && t.kind <= TY_NUM; }
int ty_is_int(Ty t) { return t.kind == TY_I32 || t.kind == TY_I64; }

const char *ty_kind_name(TyKind k)
{
	static const char *names[] = {"bool", "i32", "i64", "f16", "bf16", "f8e4m3", "f32", "f64", "number"};
	return names[k];
}

const char *ty_str(const Ir *ir, Ty t, char *buf, size_t n)
{
	if (t.len == 0)
		snprintf(buf, n, "%s", ty_kind_name(t.kind));
	else if (t.dim >= 0)
		snprintf(buf, n, "%s[%s]", ty_kind_name(t.kind), ir->dims[t.dim].name);
	else
		snprintf(buf, n, "%s[%d]", ty_kind_name(t.kind), (int)t.len);
	return buf;
}

/* ---- scalar semantics ---- */

int ir_holds(TyKind kind, double v)
{
	switch (kind) {
	case TY_BOOL: return v == 0 || v == 1;
	case TY_I32: return v == trunc(v) && v >= -0x1p31 && v < 0x1p31;
	case TY_I64: return v == trunc(v) && v >= -0x1p63 && v < 0x1p63;
	default: return 1;
	}
}

/* A whole number as two's complement wraps it into 64 bits (2^63 is
 * INT64_MIN); truncated first, infinities saturate, NaN is 0. */
static int64_t wrap64(double v)
{
	if (!isfinite(v))
		return isnan(v) ? 0 : v < 0 ? INT64_MIN : INT64_MAX;
	v = trunc(v);
	if (v >= -0x1p63 && v < 0x1p63)
		return (int64_t)v;
	double r = fmod(v, 0x1p64); /* exact: v is whole past 2^53 */
	if (r < 0)
		r += 0x1p64;
	return (int64_t)(r >= 0x1p63 ? (uint64_t)(r - 0x1p63) + 0x8000000000000000u : (uint64_t)r);
}

double ir_round(TyKind kind, double v)
{
	switch (kind) {
	case TY_F32:
		return (float)v;
	case TY_BOOL:
		return v != 0;
	case TY_I32:
		return (double)(int32_t)(uint32_t)wrap64(v);
	case TY_I64:
		return (double)wrap64(v);
	case TY_F16: {
		/* round to nearest even with 11 significant bits, range of
		 * binary16; by bits and exact scalings, without frexp, ldexp and
		 * nearbyint, whose calls were a third of drawing attention's
		 * inputs */
		if (isnan(v) || isinf(v) || v == 0)
			return v;
		double a = fabs(v);
		if (a >= 65520.0)
			return copysign(INFINITY, v);
		uint64_t u;
		memcpy(&u, &a, 8);
		int e = (int)(u >> 52) - 1022; /* frexp's: a = m * 2^e, m in [0.5, 1) */
		if (e < -13)
			e = -13; /* subnormals (and subnormal doubles): fixed quantum 2^-24 */
		double x = a * ir_pow2(11 - e);       /* under 2^12, exactly */
		double r = (x + 0x1p52) - 0x1p52;     /* to the nearest integer, ties to even */
		return copysign(r * ir_pow2(e - 11), v);
	}
	case TY_BF16: {
		if (isnan(v) || isinf(v) || v == 0)
			return v;
		float f = (float)v;
		uint32_t u;
		memcpy(&u, &f, 4);
		u += 0x7fff + ((u >> 16) & 1);
		u &= 0xffff0000u;
		memcpy(&f, &u, 4);
		return f;
	}
	case TY_F8E4M3: {
		/* OCP E4M3 "fn": 4 significant bits, normals from 2^-6,
		 * subnormals of quantum 2^-9, no infinities; past 448 it
		 * saturates, as cvt.rn.satfinite does, since a scaled input
		 * that overshoots is 448 to its producer, not NaN */
		if (isnan(v) || v == 0)
			return v;
		double a = fabs(v);
		if (a >= 448)
			return copysign(448, v);
		uint64_t u;
		memcpy(&u, &a, 8);
		int e = (int)(u >> 52) - 1022;
		if (e < -5)
			e = -5;
		double x = a * ir_pow2(4 - e);
		double r = (x + 0x1p52) - 0x1p52;
		return copysign(r * ir_pow2(e - 4), v);
	}
	default:
		return v;
	}
}

static double sub_rule(double x, double y)
{
	/* the spec's one exception to IEEE: rescaling an empty state by
	 * exp(a.m - m) with both maxima -inf must give 0, not NaN */
	if (x == -INFINITY && y == -INFINITY)
		return -INFINITY;
	return x - y;
}

static double powi(double x, int k)
{
	double r = 1, b = x;
	unsigned n = k < 0 ? -(unsigned)k : (unsigned)k;
	for (; n; n >>= 1, b *= b)
		if (n & 1)
			r *= b;
	return k < 0 ? 1 / r : r;
}

static double eval_f64(Op op, int k, double x, double y, double z)
{
	switch (op) {
	case EXPR_CAST: case EXPR_INDEX: return x;
	case EXPR_NEG: return -x;
	case EXPR_NOT: return !x;
	case EXPR_POW: return powi(x, k);
	case EXPR_MUL: return x * y;
	case EXPR_DIV: return x / y;
	case EXPR_ADD: return x + y;
	case EXPR_SUB: return sub_rule(x, y);
	case EXPR_LT: return x < y;
	case EXPR_LE: return x <= y;
	case EXPR_GT: return x > y;
	case EXPR_GE: return x >= y;
	case EXPR_EQ: return x == y;
	case EXPR_NE: return x != y;
	case EXPR_AND: return x != 0 && y != 0;
	case EXPR_OR: return x != 0 || y != 0;
	case EXPR_EXP: return exp(x);
	case EXPR_EXP2: return exp2(x);
	case EXPR_LOG: return log(x);
	case EXPR_LOG2: return log2(x);
	case EXPR_LOG1P: return log1p(x);
	case EXPR_EXPM1: return expm1(x);
	case EXPR_SQRT: return sqrt(x);
	case EXPR_RSQRT: return 1 / sqrt(x);
	case EXPR_ABS: return fabs(x);
	case EXPR_TANH: return tanh(x);
	case EXPR_SIGMOID: return 1 / (1 + exp(-x));
	case EXPR_MAX: return fmax(x, y);
	case EXPR_MIN: return fmin(x, y);
	case EXPR_WHERE: return x != 0 ? y : z;
	case EXPR_FMA: return fma(x, y, z);
	default: return NAN;
	}
}

static double eval_f32(Op op, int k, float x, float y, float z)
{
	switch (op) {
	case EXPR_POW: {
		float r = 1, b = x;
		unsigned n = k < 0 ? -(unsigned)k : (unsigned)k;
		for (; n; n >>= 1, b *= b)
			if (n & 1)
				r *= b;
		return k < 0 ? 1 / r : r;
	}
	case EXPR_MUL: return x * y;
	case EXPR_DIV: return x / y;
	case EXPR_ADD: return x + y;
	case EXPR_SUB: return (float)sub_rule(x, y);
	case EXPR_EXP: return expf(x);
	case EXPR_EXP2: return exp2f(x);
	case EXPR_LOG: return logf(x);
	case EXPR_LOG2: return log2f(x);
	case EXPR_LOG1P: return log1pf(x);
	case EXPR_EXPM1: return expm1f(x);
	case EXPR_SQRT: return sqrtf(x);
	case EXPR_RSQRT: return 1 / sqrtf(x);
	case EXPR_TANH: return tanhf(x);
	case EXPR_SIGMOID: return 1 / (1 + expf(-x));
	case EXPR_FMA: return fmaf(x, y, z);
	default: return (float)eval_f64(op, k, x, y, z);
	}
}

int64_t ir_int_exact(double v, double rest) { return (int64_t)((uint64_t)wrap64(v) + (uint64_t)(int64_t)rest); }

double ir_int_rest(int64_t x, double v) { return (double)(int64_t)((uint64_t)x - (uint64_t)wrap64(v)); }

/* Integer arithmetic as the devices' two's complement: sums, differences,
 * products, fma and powers wrap (in 64 bits, then to the kind); a quotient
 * truncates; abs of the most negative value is that value.  Through
 * float64 a product of two i32 rounded past 2^53 and an i64 sum saturated
 * instead of wrapping. */
int64_t ir_eval_int(Op op, TyKind kind, int k, int64_t x, int64_t y, int64_t z)
{
	uint64_t a = (uint64_t)x, b = (uint64_t)y, r;
	switch (op) {
	case EXPR_ADD: r = a + b; break;
	case EXPR_SUB: r = a - b; break;
	case EXPR_MUL: r = a * b; break;
	case EXPR_NEG: r = 0 - a; break;
	case EXPR_ABS: r = x < 0 ? 0 - a : a; break;
	case EXPR_MAX: r = x > y ? a : b; break;
	case EXPR_MIN: r = x < y ? a : b; break;
	case EXPR_WHERE: r = x != 0 ? b : (uint64_t)z; break;
	case EXPR_CAST: case EXPR_INDEX: r = a; break;
	case EXPR_FMA: r = a * b + (uint64_t)z; break; /* fma in float64 rounded a product past 2^53 */
	case EXPR_POW:
		if (k < 0)
			return 0;
		r = 1;
		for (unsigned n = (unsigned)k; n; n >>= 1, a *= a)
			if (n & 1)
				r *= a;
		break;
	case EXPR_DIV:
		if (b == 0 || (x == INT64_MIN && y == -1)) {
			r = (uint64_t)wrap64(eval_f64(op, k, (double)x, (double)y, (double)z));
			break;
		}
		r = (uint64_t)(x / y);
		break;
	default:
		r = (uint64_t)wrap64(eval_f64(op, k, (double)x, (double)y, (double)z));
		break;
	}
	return kind == TY_I32 ? (int64_t)(int32_t)(uint32_t)r : (int64_t)r;
}

double ir_eval_op(Op op, TyKind kind, int k, double x, double y, double z)
{
	switch (kind) {
	case TY_F32:
		return eval_f32(op, k, (float)x, (float)y, (float)z);
	case TY_I32:
	case TY_I64:
		if (op == EXPR_MAX || op == EXPR_MIN || op == EXPR_ABS || op == EXPR_WHERE || op == EXPR_CAST ||
		    op == EXPR_INDEX)
			return ir_round(kind, eval_f64(op, k, x, y, z)); /* a NaN operand as before: no integer of it */
		return (double)ir_eval_int(op, kind, k, wrap64(x), wrap64(y), wrap64(z));
	default:
		return eval_f64(op, k, x, y, z);
	}
}

/* ---- hash-consing ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static uint64_t node_hash(const Expr *e)
{
	uint64_t bits, h = e->op;
	memcpy(&bits, &e->num, 8);
	h = mix(h, e->ty.kind);
	h = mix(h, (uint64_t)(uint32_t)e->ty.len);
	h = mix(h, (uint64_t)(uint32_t)e->ty.dim);
	h = mix(h, (uint64_t)(uint32_t)e->k);
	h = mix(h, bits);
	for (int i = 0; i < e->nargs; i++)
		h = mix(h, e->a[i]->id);
	return h;
}

static int node_eq(const Expr *x, const Expr *y)
{
	if (x->op != y->op || x->nargs != y->nargs || x->k != y->k || !ty_eq(x->ty, y->ty) ||
	    x->ty.dim != y->ty.dim)
		return 0;
	if (memcmp(&x->num, &y->num, sizeof x->num))
		return 0;
	for (int i = 0; i < x->nargs; i++)
		if (x->a[i] != y->a[i])
			return 0;
	return 1;
}

static void grow(Ir *ir)
{
	size_t nsz = ir->tabsz * 2;
	Expr **nt = xrealloc(NULL, nsz * sizeof *nt);
	memset(nt, 0, nsz * sizeof *nt);
	for (size_t i = 0; i < ir->tabsz; i++)
		for (Expr *e = ir->tab[i], *n; e; e = n) {
			n = e->next;
			size_t h = node_hash(e) & (nsz - 1);
			e->next = nt[h];
			nt[h] = e;
		}
	free(ir->tab);
	ir->tab = nt;
	ir->tabsz = nsz;
}

static Expr *intern(Ir *ir, const Expr *key)
{
	size_t h = node_hash(key) & (ir->tabsz - 1);
	for (Expr *e = ir->tab[h]; e; e = e->next)
		if (node_eq(e, key))
			return e;
	if (!ir->chunks || ir->chunks->used == CHUNK) {
		Chunk *c = xrealloc(NULL, sizeof *c);
		c->next = ir->chunks;
		c->used = 0;
		ir->chunks = c;
	}
	Expr *e = &ir->chunks->nodes[ir->chunks->used++];
	*e = *key;
	e->id = ir->nnodes++;
	e->depth = 1;
	for (int i = 0; i < e->nargs; i++)
		if (e->a[i]->depth >= e->depth)
			e->depth = e->a[i]->depth + 1;
	e->next = ir->tab[h];
	ir->tab[h] = e;
	if (ir->nnodes > ir->tabsz)
		grow(ir);
	return e;
}

Expr *ir_const(Ir *ir, Ty ty, double v)
{
	Expr key = {.op = EXPR_CONST, .ty = ty, .num = v};
	if (isnan(v))
		key.num = NAN; /* one NaN, whatever its payload */
	return intern(ir, &key);
}

Expr *ir_ref(Ir *ir, int var)
{
	Expr key = {.op = EXPR_VAR, .ty = ir->vars[var].ty, .k = var};
	return intern(ir, &key);
}

static int foldable(Op op, Expr *x, Expr *y, Expr *z)
{
	if (op == EXPR_DOT || op == EXPR_TOPK || op == EXPR_TOPK_IDX || (ir_ops[op].flags & F_REDUCE) ||
	    op == EXPR_CONST || op == EXPR_VAR)
		return 0;
	Expr *args[3] = {x, y, z};
	for (int i = 0; i < ir_ops[op].arity; i++)
		if (!args[i] || args[i]->op != EXPR_CONST)
			return 0;
	return 1;
}

Expr *ir_node(Ir *ir, Op op, Ty ty, int k, Expr *x, Expr *y, Expr *z)
{
	if (foldable(op, x, y, z)) {
		/* CAST and INDEX of a constant are the constant in the new type */
		double v = ir_eval_op(op, (TyKind)(x->ty.kind == TY_NUM ? TY_F64 : x->ty.kind), k, x->num,
				      y ? y->num : 0, z ? z->num : 0);
		if (ir_ops[op].flags & (F_CMP | F_LOGIC))
			v = v != 0;
		return ir_const(ir, ty, ty.kind == TY_NUM ? v : ir_round((TyKind)ty.kind, v));
	}
	if ((op == EXPR_AND || op == EXPR_OR) && (x->op == EXPR_CONST) != (y->op == EXPR_CONST)) {
		/* one side fixed (a bool param the prover fixed): it decides, or the other side does */
		Expr *k = x->op == EXPR_CONST ? x : y, *other = k == x ? y : x;
		if ((k->num != 0) == (op == EXPR_OR))
			return ir_const(ir, ty, op == EXPR_OR);
		if (ty_eq(other->ty, ty))
			return other;
	}
	if (op == EXPR_WHERE) { /* a fixed condition, or both branches one node (where(flag, 0, 0)) */
		Expr *pick = x->op == EXPR_CONST ? (x->num != 0 ? y : z) : y == z ? y : NULL;
		if (pick && pick->op == EXPR_CONST)
			return ir_const(ir, ty, ty.kind == TY_NUM ? pick->num : ir_round((TyKind)ty.kind, pick->num));
		if (pick && ty_eq(pick->ty, ty))
			return pick;
	}
	Expr key = {.op = (uint16_t)op, .ty = ty, .k = k};
	Expr *args[3] = {x, y, z};
	for (int i = 0; i < 3 && args[i]; i++)
		key.a[key.nargs++] = args[i];
	return intern(ir, &key);
}

Expr *ir_node_n(Ir *ir, Op op, Ty ty, int k, Expr *const a[4])
{
	if (!a[0] || !a[1] || !a[2] || !a[3])
		return ir_node(ir, op, ty, k, a[0], a[0] ? a[1] : NULL, a[0] && a[1] ? a[2] : NULL);
	if ((op == EXPR_TOPK || op == EXPR_TOPK_IDX) && a[0]->op == EXPR_CONST && a[0]->num == -INFINITY &&
	    a[1]->op == EXPR_CONST && a[1]->num == -1 && a[2]->op == EXPR_CONST && a[2]->num == -INFINITY &&
	    a[3]->op == EXPR_CONST && a[3]->num == -1) /* two empty lists: the empty list */
		return ir_const(ir, ty, op == EXPR_TOPK ? -INFINITY : -1);
	Expr key = {.op = (uint16_t)op, .ty = ty, .k = k, .nargs = 4};
	memcpy(key.a, a, sizeof key.a);
	return intern(ir, &key);
}

Expr *ir_find_n(Ir *ir, Op op, Ty ty, int k, Expr *const a[4])
{
	Expr key = {.op = (uint16_t)op, .ty = ty, .k = k};
	for (int i = 0; i < 4 && a[i]; i++)
		key.a[key.nargs++] = a[i];
	for (Expr *e = ir->tab[node_hash(&key) & (ir->tabsz - 1)]; e; e = e->next)
		if (node_eq(e, &key))
			return e;
	return NULL;
}

/* The other output of a topk merge (topk_idx's for topk's and back), where
 * the Ir has it. */
Expr *ir_topk_sibling(Ir *ir, const Expr *e)
{
	int idx = e->op == EXPR_TOPK;
	Ty t = ty_vec(idx ? TY_I32 : (TyKind)e->a[0]->ty.kind, e->ty.len, e->ty.dim);
	return ir_find_n(ir, idx ? EXPR_TOPK_IDX : EXPR_TOPK, t, e->k, e->a);
}

void ir_topk(const double *v, const double *idx, int n, int k, double *outv, double *outi)
{
	/* insertion into the k best so far: n is at most 2k in the merges */
	int m = 0;
	for (int t = 0; t < n; t++) {
		int p = m < k ? m : k;
		while (p > 0 && ir_topk_before(v[t], idx[t], outv[p - 1], outi[p - 1]))
			p--;
		if (p >= k)
			continue;
		for (int q = (m < k ? m : k - 1); q > p; q--)
			outv[q] = outv[q - 1], outi[q] = outi[q - 1];
		outv[p] = v[t], outi[p] = idx[t];
		if (m < k)
			m++;
	}
	for (; m < k; m++)
		outv[m] = -INFINITY, outi[m] = -1;
}

Expr *ir_un(Ir *ir, Op op, Expr *x)
{
	return ir_node(ir, op, x->ty, 0, x, NULL, NULL);
}

Expr *ir_bin(Ir *ir, Op op, Expr *x, Expr *y)
{
	Ty t = x->ty.kind == TY_NUM || (y->ty.len && !x->ty.len) ? y->ty : x->ty;
	if (ir_ops[op].flags & (F_CMP | F_LOGIC))
		t = ty_vec(TY_BOOL, t.len, t.dim);
	if (op == EXPR_DOT)
		t = ty_scalar((TyKind)t.kind);
	return ir_node(ir, op, t, 0, x, y, NULL);
}

/* ---- substitution ---- */

typedef struct {
	Expr **memo; /* by node id */
	IrVarMap map;
	void *ctx;
	Ir *ir;
	Expr *from, *to; /* a node replaced whole, or NULL */
} Subst;

static Expr *subst_rec(Subst *s, Expr *e)
{
	if (s->memo[e->id])
		return s->memo[e->id];
	Expr *r = e;
	if (e == s->from) {
		r = s->to;
	} else if (e->op == EXPR_VAR) {
		Expr *m = s->map(s->ctx, e);
		if (m)
			r = m;
	} else if (e->nargs) {
		Expr *a[4] = {0};
		int changed = 0;
		for (int i = 0; i < e->nargs; i++) {
			a[i] = subst_rec(s, e->a[i]);
			changed |= a[i] != e->a[i];
		}
		if (changed)
			r = ir_node_n(s->ir, e->op, e->ty, e->k, a);
		else
			r = e;
	}
	s->memo[e->id] = r;
	return r;
}

Expr *ir_subst(Ir *ir, Expr *e, IrVarMap map, void *ctx) { return ir_replace(ir, e, map, ctx, NULL, NULL); }

Expr *ir_replace(Ir *ir, Expr *e, IrVarMap map, void *ctx, Expr *from, Expr *to)
{
	/* nodes created during the walk have larger ids than e; the memo covers e's cone */
	size_t n = e->id + 1;
	Subst s = {xrealloc(NULL, n * sizeof(Expr *)), map, ctx, ir, from, to};
	memset(s.memo, 0, n * sizeof(Expr *));
	Expr *r = subst_rec(&s, e);
	free(s.memo);
	return r;
}

static int contains_rec(Expr *e, int (*pred)(void *, Expr *), void *ctx, unsigned char *seen)
{
	if (seen[e->id])
		return 0;
	seen[e->id] = 1;
	if (pred(ctx, e))
		return 1;
	for (int i = 0; i < e->nargs; i++)
		if (contains_rec(e->a[i], pred, ctx, seen))
			return 1;
	return 0;
}

int ir_contains(Expr *e, int (*pred)(void *ctx, Expr *n), void *ctx)
{
	unsigned char *seen = calloc(e->id + 1, 1);
	if (!seen)
		abort();
	int r = contains_rec(e, pred, ctx, seen);
	free(seen);
	return r;
}

/* e is the literal v (converted or not). */
static int is_literal(const Expr *e, double v)
{
	while (e->op == EXPR_CAST)
		e = e->a[0];
	return e->op == EXPR_CONST && e->num == v;
}

Expr *ir_max_rescale_at(Expr *e, Expr **x, int *guard)
{
	if (e->op != EXPR_EXP || !ty_is_float(e->ty) || e->ty.len)
		return NULL;
	Expr *s = e->a[0], *cond = NULL;
	if (s->op == EXPR_WHERE) {
		if (!is_literal(s->a[1], 0))
			return NULL;
		cond = s->a[0];
		s = s->a[2];
	}
	if (s->op != EXPR_SUB)
		return NULL;
	Expr *m = s->a[1];
	if (m->op != EXPR_MAX || m->ty.len || m->ty.kind != e->ty.kind || (s->a[0] != m->a[0] && s->a[0] != m->a[1]))
		return NULL;
	int g = IR_RESCALE_PLAIN;
	if (cond) {
		if (cond->op != EXPR_EQ || (cond->a[0] != s->a[0] && cond->a[1] != s->a[0]))
			return NULL;
		Expr *y = cond->a[0] == s->a[0] ? cond->a[1] : cond->a[0];
		g = is_literal(y, INFINITY) ? IR_RESCALE_INF : y == m ? IR_RESCALE_MAX : -1;
		if (g < 0)
			return NULL;
	}
	if (x)
		*x = s->a[0];
	if (guard)
		*guard = g;
	return m;
}

Expr *ir_max_rescale(Expr *e) { return ir_max_rescale_at(e, NULL, NULL); }
