/* ir.h: typed expressions as a hash-consed DAG, and an interpreter for them.
 *
 * Every expression of a spec (lift, merge, finalize, map, reference, ...)
 * lives in one Ir.  Structurally equal nodes are the same node, so pointer
 * equality is expression equality and shared subterms are evaluated once.
 * Node ids grow with creation, and operands are created before their users:
 * sorting nodes by id is a topological order. */
#ifndef ASSOC_IR_H
#define ASSOC_IR_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
	F_INFIX = 1 << 0,
	F_FUNC = 1 << 1,
	F_ASSOC = 1 << 2,
	F_COMM = 1 << 3,
	F_IDEM = 1 << 4,
	F_CMP = 1 << 5,
	F_LOGIC = 1 << 6,
	F_REDUCE = 1 << 7,
	F_MATH = 1 << 8,
};

typedef enum {
#define OP(name, printed, arity, prec, flags, unit) EXPR_##name,
#include "ops.def"
#undef OP
	EXPR_NOPS
} Op;

typedef struct {
	const char *name, *printed;
	int arity, prec, flags;
	double unit;
} OpInfo;

extern const OpInfo ir_ops[EXPR_NOPS];

/* Scalar kinds.  F16, BF16 and F8E4M3 are storage only: values of those
 * inputs are loaded as f32.  TY_NUM is the kind of an untyped numeric literal, which
 * takes the kind of whatever it is combined with. */
typedef enum { TY_BOOL, TY_I32, TY_I64, TY_F16, TY_BF16, TY_F8E4M3, TY_F32, TY_F64, TY_NUM } TyKind;

/* A type: a scalar kind, and for vectors a length and the dim it came from
 * (an index into the Ir's dims, or -1 for a literal length).  Shapes are
 * compared by dim, not by length, so a spec stays valid under -D. */
typedef struct {
	uint8_t kind;
	int32_t len; /* 0: scalar */
	int32_t dim;
} Ty;

typedef enum {
	VAR_ELEM,  /* indexed by row and position */
	VAR_ROW,   /* indexed by row */
	VAR_COL,   /* indexed by position */
	VAR_PARAM, /* runtime scalar */
	VAR_STATE, /* a state field: which = 0 (a), 1 (b), 2 (c), 3 (bare) */
	VAR_IDX,   /* slot 0: i, 1: j, 2: len */
	VAR_SYM,   /* a free symbol made by a pass (the prover's variables) */
} VarKind;

enum { IDX_I, IDX_J, IDX_LEN };
enum { STATE_A, STATE_B, STATE_C, STATE_SELF };

typedef struct {
	char *name;
	VarKind kind;
	int which, slot;
	Ty ty;
	TyKind storage; /* the kind in memory (f16, bf16, f8e4m3 for storage inputs) */
} Var;

typedef struct {
	char *name;
	int size;
} Dim;

typedef struct Expr Expr;
struct Expr {
	uint16_t op;
	uint8_t nargs;
	Ty ty;
	uint32_t id;
	uint32_t depth; /* 1 for a leaf, else 1 + the deepest operand: recursive passes recurse this deep */
	int k;       /* VAR: var index; POW: exponent; INDEX: component; TOPK*: the list's length */
	double num;  /* CONST: the value (every component of a vector) */
	Expr *a[4];
	Expr *next;  /* hash chain */
};

typedef struct Ir Ir;

Ir *ir_new(void);
void ir_free(Ir *ir);
int ir_nnodes(const Ir *ir);

int ir_add_dim(Ir *ir, const char *name, int size);
int ir_ndims(const Ir *ir);
const Dim *ir_dim(const Ir *ir, int d);
int ir_find_dim(const Ir *ir, const char *name);
int ir_add_var(Ir *ir, const char *name, VarKind kind, int which, int slot, Ty ty, TyKind storage);
int ir_nvars(const Ir *ir);
const Var *ir_var(const Ir *ir, int v);

/* Node constructors.  ir_node hash-conses and folds constant operands; the
 * caller gives the result type (the type checker owns the typing rules). */
Expr *ir_node(Ir *ir, Op op, Ty ty, int k, Expr *x, Expr *y, Expr *z);
/* The same for any arity (TOPK's four operands); a[i] NULL past the last. */
Expr *ir_node_n(Ir *ir, Op op, Ty ty, int k, Expr *const a[4]);
/* The node ir_node_n would return, where it exists already; else NULL. */
Expr *ir_find_n(Ir *ir, Op op, Ty ty, int k, Expr *const a[4]);
/* The other output of a topk or topk_idx node (same operands), or NULL. */
Expr *ir_topk_sibling(Ir *ir, const Expr *e);
Expr *ir_const(Ir *ir, Ty ty, double v);
Expr *ir_ref(Ir *ir, int var);
/* Same-typed convenience builders for passes (type of x wins; comparisons give bool). */
Expr *ir_un(Ir *ir, Op op, Expr *x);
Expr *ir_bin(Ir *ir, Op op, Expr *x, Expr *y);

/* Rebuild e with every VAR node v replaced by map(ctx, v) (NULL keeps v). */
typedef Expr *(*IrVarMap)(void *ctx, Expr *var);
Expr *ir_subst(Ir *ir, Expr *e, IrVarMap map, void *ctx);
/* ir_subst, and the node from (wherever e reaches it) replaced by to */
Expr *ir_replace(Ir *ir, Expr *e, IrVarMap map, void *ctx, Expr *from, Expr *to);

/* 1 when e contains a node for which pred holds. */
int ir_contains(Expr *e, int (*pred)(void *ctx, Expr *n), void *ctx);

/* The max node m when e is exp(x - m) with m = max(u, v) and x one of u,
 * v, e and m scalar floats of one kind: a rescaling factor of an online
 * max, where one of exp(u - m), exp(v - m) is exp(0) (the backends take
 * both from one exp).  NULL otherwise. */
Expr *ir_max_rescale(Expr *e);
/* The same, the difference x - m possibly guarded so that a row holding
 * +inf rescales by 1, not by exp(inf - inf):
 *   exp(where(x == inf, 0, x - m))  IR_RESCALE_INF: 1 where x is +inf
 *   exp(where(x == m, 0, x - m))    IR_RESCALE_MAX: 1 where x is m
 * (== either way round); x and the guard in *x and *guard. */
enum { IR_RESCALE_PLAIN, IR_RESCALE_INF, IR_RESCALE_MAX };
Expr *ir_max_rescale_at(Expr *e, Expr **x, int *guard);

/* Types */
Ty ty_scalar(TyKind k);
Ty ty_vec(TyKind k, int len, int dim);
int ty_eq(Ty a, Ty b);
int ty_is_float(Ty t);
int ty_is_int(Ty t);
const char *ty_kind_name(TyKind k);
/* "f32", "f32[d]", "f32[4]"; buf of at least 64 bytes */
const char *ty_str(const Ir *ir, Ty t, char *buf, size_t n);

/* Printer: spec syntax, minimal parentheses.  ir_str returns malloc'd text. */
void ir_print(const Ir *ir, const Expr *e, FILE *out);
char *ir_str(const Ir *ir, const Expr *e);
/* The first max bytes of ir_str, then "..." where it is longer; it costs
 * O(max) where ir_str of a DAG with shared subterms grows exponentially. */
char *ir_str_max(const Ir *ir, const Expr *e, size_t max);
/* Shortest "%.*g" that reads back as the same double. */
void ir_fmt_num(double v, char *buf, size_t n);

/* Scalar semantics of one op, shared by the folder and the interpreter.
 * f32 rounds as float arithmetic does; the spec's rule (-inf) - (-inf) = -inf
 * holds in both.  Integer ops wrap (i32) as the generated code does. */
double ir_eval_op(Op op, TyKind kind, int k, double x, double y, double z);
/* The same for an integer kind on exact operands: where, max, min, abs,
 * casts between integers and the arithmetic above, wrapped to the kind. */
int64_t ir_eval_int(Op op, TyKind kind, int k, int64_t x, int64_t y, int64_t z);
/* A double holds an i64 past 2^53 only rounded.  The interpreter keeps
 * beside such a value v its rest, the integer x - v (under 2^10 in
 * magnitude; 0 for every value a double holds): ir_int_exact(v, rest) is
 * x again (v whole, wrapped into 64 bits as two's complement wraps it),
 * and ir_int_rest(x, v) is the rest of x beside v = (double)x. */
int64_t ir_int_exact(double v, double rest);
double ir_int_rest(int64_t x, double v);
/* 2^e for e in the range of normal doubles, exactly. */
static inline double ir_pow2(int e)
{
	uint64_t u = (uint64_t)(e + 1023) << 52;
	double d;
	memcpy(&d, &u, 8);
	return d;
}
double ir_round(TyKind kind, double v);
/* Whether v is a value of kind as it is: integers whole and in range,
 * booleans 0 or 1, any number for floats (rounding is theirs). */
int ir_holds(TyKind kind, double v);

enum { IR_TOPK_MAX = 16 };

/* The top k (values and indices) of the n pairs (v[i], idx[i]), ranked as
 * TOPK ranks them (see ops.def); slots past n are (-inf, -1).  k <= 16. */
void ir_topk(const double *v, const double *idx, int n, int k, double *outv, double *outi);
/* Whether pair (v, i) ranks before (w, j) in a top-k list. */
static inline int ir_topk_before(double v, double i, double w, double j)
{
	int vn = isnan(v), wn = isnan(w);
	if (vn || wn) { /* NaN after every number */
		if (vn != wn)
			return wn;
	} else if (v != w) {
		return v > w;
	}
	/* an empty slot (-1) after every index */
	return (uint32_t)(int64_t)i < (uint32_t)(int64_t)j;
}

/* Interpreter.  A Prog is a tape for a set of roots; its leaves are the VAR
 * and reduction nodes below them, whose values the caller writes before
 * prog_run.  Each value carries a running error bound (in units of the
 * unit roundoff of its mode) used for magnitude-scaled tolerances. */
typedef enum { MODE_F64, MODE_F32 } Mode;

typedef struct Prog Prog;
Prog *prog_new(Ir *ir, Expr *const *roots, int nroots);
void prog_free(Prog *p);
int prog_nleaves(const Prog *p);
Expr *prog_leaf(const Prog *p, int i);
/* Storage for leaf i (len = max(1, ty.len)); errors alongside when err != NULL. */
double *prog_leaf_val(Prog *p, int i, double **err);
void prog_run(Prog *p, Mode mode);
const double *prog_root(const Prog *p, int r, const double **err);
/* The rests (ir_int_exact) beside leaf i's values, which the caller
 * writes with them (0 as the tape is made: the leaves' values as the
 * doubles hold them), and beside root r's. */
double *prog_leaf_rest(Prog *p, int i);
const double *prog_root_rest(const Prog *p, int r);
/* Index of a leaf node in p, or -1. */
int prog_find_leaf(const Prog *p, const Expr *e);
/* What the last prog_run met at the edges of the float range (see
 * interp.c's range_event): a bit set of these. */
enum { PROG_OVERFLOW = 1, PROG_UNDERFLOW = 2, PROG_ZERO_DIVIDE = 4 };
unsigned prog_range(const Prog *p);
/* With on, a float64 run gives each float32 constant that a literal did
 * not write exactly (0.1, not 0.5) the error of its rounding to float32,
 * so that a comparison with a reference in exact terms allows for it. */
void prog_const_rounding(Prog *p, int on);
/* With on, a float64 run converts an integer to f32 as the spec's types
 * do, rounded past 2^24: a carrier that writes f32(k) computes on the
 * rounded value, ties between neighbours included, and its float64 truth
 * is the same function of its inputs. */
void prog_int_rounding(Prog *p, int on);

#endif
