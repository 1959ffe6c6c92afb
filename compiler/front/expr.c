/* expr.c: the expression language of specs, parsed by recursive descent
 * straight into typed IR.
 *
 *   or   := and ('||' and)*          and := cmp ('&&' cmp)*
 *   cmp  := add (relop add)?         add := mul (('+'|'-') mul)*
 *   mul  := un (('*'|'/') un)*       un  := ('-'|'!') un | pow
 *   pow  := prim ('^' '-'? INT)?
 *   prim := NUM | inf | NAME | NAME '.' NAME | NAME '(' args ')' | '(' or ')'
 *
 * Typing: a literal takes the kind of what it meets; int meets float gives
 * the float; f32 meets f64 gives f64; a scalar meets a vector by
 * broadcasting; two vectors must have the same dim. */
#include "compiler/front/scope.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	Scope *s;
	Diag *d;
	const YNode *node;
	const char *src;
	size_t pos;   /* cursor */
	int depth;
	int failed;
	Ir *ir;
} P;

typedef struct {
	Expr *e;
	size_t off; /* where the subexpression starts, for messages */
} V;

static Pos at(P *p, size_t off) { return yn_scalar_pos(p->d, p->node, off); }

__attribute__((format(printf, 3, 4))) static V fail(P *p, size_t off, const char *fmt, ...)
{
	if (!p->failed) {
		char msg[512];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		diag_error(p->d, at(p, off), "%s", msg);
	}
	p->failed = 1;
	return (V){NULL, off};
}

static void skip_ws(P *p)
{
	while (p->src[p->pos] && strchr(" \n\r\t", p->src[p->pos])) /* a tab only from an escape */
		p->pos++;
}

static int peek(P *p, const char *tok)
{
	skip_ws(p);
	size_t n = strlen(tok);
	if (strncmp(p->src + p->pos, tok, n))
		return 0;
	/* '<' is not '<=', '!' is not '!=', '=' alone is no token */
	char next = p->src[p->pos + n];
	if (n == 1 && strchr("<>!=", tok[0]) && next == '=')
		return 0;
	return 1;
}

static int accept(P *p, const char *tok)
{
	if (!peek(p, tok))
		return 0;
	p->pos += strlen(tok);
	return 1;
}

int expr_ident_ok(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_') || !(s[0] & 0x7f))
		return 0;
	size_t n = 0;
	for (; *s; s++, n++)
		if (!(isalnum((unsigned char)*s) || *s == '_') || (unsigned char)*s >= 0x80)
			return 0;
	return n <= SPEC_MAX_NAME;
}

/* A lone '=' where a ',', a ')' or an operator was due: the comparison
 * it most likely means is named wherever it stands, inside a call or
 * parentheses as at the top. */
static const char assign_msg[] = "'=' is not an operator; compare with '=='";

static int at_assign(P *p)
{
	skip_ws(p);
	return p->src[p->pos] == '=';
}

static const char *what_tok(P *p, char *buf, size_t n)
{
	skip_ws(p);
	unsigned char c = (unsigned char)p->src[p->pos];
	if (!c)
		return "end of expression";
	if (c == '\'')
		return "a quote (')";
	if (c >= 0x80)
		return "a non-ASCII character";
	if (!isprint(c))
		return "an unprintable character";
	const char *t = p->src + p->pos;
	int len = 1;
	if (isalnum(c) || c == '_')
		while (len < 24 && (isalnum((unsigned char)t[len]) || t[len] == '_' || t[len] == '.'))
			len++;
	snprintf(buf, n, "'%.*s'", len, t);
	return buf;
}

/* ---- typing ---- */

static char *tystr(P *p, Ty t, char *buf) { return (char *)ty_str(p->ir, t, buf, 64); }

static int num_ok(Ty t) { return t.kind != TY_BOOL; }

/* Kind a literal or a wider operand is converted to. */
static TyKind join_kind(TyKind a, TyKind b)
{
	if (a == TY_NUM)
		return b;
	if (b == TY_NUM)
		return a;
	int fa = a >= TY_F16, fb = b >= TY_F16;
	if (fa != fb)
		return fa ? a : b;
	return a > b ? a : b;
}

static const char *lit_range_error(TyKind k, double v, char *buf, size_t n)
{
	if ((k == TY_I32 || k == TY_I64) && !ir_holds(k, v)) {
		if (v != floor(v) || isinf(v))
			return snprintf(buf, n, "%.15g is not an integer", v), buf;
		return snprintf(buf, n, "%.15g is out of range for %s", v, ty_kind_name(k)), buf;
	}
	if (k == TY_F32 && isfinite(v) && fabs(v) > FLT_MAX)
		return snprintf(buf, n, "%.15g overflows f32", v), buf;
	return NULL;
}

/* Whether an expression of untyped literals alone may have a fraction:
 * where(x > 0, 1.5, 0), where(x > 0, 3, 0) / 2 and where(x > 0, 1, 0) * 0.5
 * are no literals, yet float all the same.  A leaf that is no whole number
 * (an infinity too) or an operation that makes fractions ('/', the math
 * functions, a negative power) makes one. */
static int num_fractional(const Expr *e)
{
	if (e->ty.kind != TY_NUM)
		return 0;
	switch ((Op)e->op) {
	case EXPR_CONST: return !isfinite(e->num) || e->num != floor(e->num);
	case EXPR_POW:
		if (e->k < 0)
			return 1;
		break;
	case EXPR_ADD: case EXPR_SUB: case EXPR_MUL: case EXPR_NEG: case EXPR_ABS: case EXPR_MAX: case EXPR_MIN:
	case EXPR_WHERE: case EXPR_FMA: case EXPR_CAST: break;
	default: return 1;
	}
	for (int i = 0; i < e->nargs; i++)
		if (num_fractional(e->a[i]))
			return 1;
	return 0;
}

/* The first literal among the leaves of an untyped expression that kind k
 * does not hold (where(x > 0, 3e9, 0) in an i32), as a message, or NULL. */
static const char *num_leaf_range_error(const Expr *e, TyKind k, char *buf, size_t n)
{
	if (e->ty.kind != TY_NUM)
		return NULL;
	if (e->op == EXPR_CONST)
		return lit_range_error(k, e->num, buf, n);
	for (int i = 0; i < e->nargs; i++) {
		const char *err = num_leaf_range_error(e->a[i], k, buf, n);
		if (err)
			return err;
	}
	return NULL;
}

/* An untyped expression with no fraction rebuilt in integer kind k, its
 * literals k's constants: where(a.c > 0, 1, 0) meeting an i32 is an i32
 * where, not a cast of a number (which the prover takes for a float
 * becoming an integer). */
static Expr *num_retype(Ir *ir, Expr *e, TyKind k)
{
	if (e->ty.kind != TY_NUM)
		return e;
	Ty t = ty_vec(k, e->ty.len, e->ty.dim);
	if (e->op == EXPR_CONST)
		return ir_const(ir, t, ir_round(k, e->num));
	Expr *a[3] = {NULL, NULL, NULL};
	for (int i = 0; i < e->nargs && i < 3; i++)
		a[i] = num_retype(ir, e->a[i], k);
	return ir_node(ir, (Op)e->op, t, e->k, a[0], a[1], a[2]);
}

static TyKind float_of(TyKind k);

Expr *expr_coerce(Carrier *c, Diag *d, Expr *e, Ty to, Pos pos, const char *what)
{
	char b1[64], b2[64], msg[128];
	Ir *ir = c->ir;
	TyKind k = (TyKind)e->ty.kind, tk = (TyKind)to.kind;
	if (tk == TY_F16 || tk == TY_BF16)
		tk = TY_F32, to.kind = TY_F32;
	if (e->ty.len && (!to.len || e->ty.dim != to.dim || e->ty.len != to.len)) {
		diag_error(d, pos, "%s has type %s, expected %s", what, ty_str(ir, e->ty, b1, 64),
			   ty_str(ir, to, b2, 64));
		return NULL;
	}
	int ok = k == tk || (k == TY_NUM && tk != TY_BOOL) || (tk >= TY_F16 && k != TY_BOOL) ||
		 (tk == TY_I64 && k == TY_I32) ||
		 (k == TY_NUM && tk == TY_BOOL && e->op == EXPR_CONST && (e->num == 0 || e->num == 1)); /* 0 and 1 as false and true */
	if (!ok) {
		diag_error(d, pos, "%s has type %s, expected %s%s", what, ty_str(ir, e->ty, b1, 64), ty_str(ir, to, b2, 64),
			   (tk == TY_I32 || tk == TY_I64) && k >= TY_F16 && k <= TY_F64
				   ? " (floats do not convert to integers; '/' and literals with a fraction give floats)"
				   : "");
		return NULL;
	}
	if (e->op == EXPR_CONST) {
		const char *err = lit_range_error(tk, e->num, msg, sizeof msg);
		if (err && k == TY_NUM) {
			diag_error(d, pos, "%s: %s", what, err);
			return NULL;
		}
		return ir_const(ir, to, ir_round(tk, e->num));
	}
	if (k == TY_NUM && (tk == TY_I32 || tk == TY_I64)) {
		if (num_fractional(e)) {
			diag_error(d, pos, "%s has type %s, expected %s (floats do not convert to integers; '/' and "
				   "literals with a fraction give floats)", what, ty_kind_name(float_of(tk)),
				   ty_str(ir, to, b2, 64));
			return NULL;
		}
		const char *err = num_leaf_range_error(e, tk, msg, sizeof msg);
		if (err) {
			diag_error(d, pos, "%s: %s", what, err);
			return NULL;
		}
		e = num_retype(ir, e, tk);
		k = tk;
	}
	if (k != tk)
		e = ir_node(ir, EXPR_CAST, ty_vec(tk, e->ty.len, e->ty.dim), 0, e, NULL, NULL);
	if (to.len && !e->ty.len)
		e = ir_node(ir, EXPR_CAST, to, 0, e, NULL, NULL);
	return e;
}

/* Convert an operand to kind k, keeping its shape. */
static Expr *to_kind(P *p, V v, TyKind k)
{
	Expr *e = v.e;
	if (e->ty.kind == k)
		return e;
	if (e->op == EXPR_CONST) {
		char msg[128];
		const char *err = lit_range_error(k, e->num, msg, sizeof msg);
		if (err && e->ty.kind == TY_NUM) {
			fail(p, v.off, "%s", err);
			return NULL;
		}
		return ir_const(p->ir, ty_vec(k, e->ty.len, e->ty.dim), ir_round(k, e->num));
	}
	if (e->ty.kind == TY_NUM && (k == TY_I32 || k == TY_I64) && !num_fractional(e)) {
		char msg[128];
		const char *err = num_leaf_range_error(e, k, msg, sizeof msg);
		if (err) {
			fail(p, v.off, "%s", err);
			return NULL;
		}
		return num_retype(p->ir, e, k);
	}
	return ir_node(p->ir, EXPR_CAST, ty_vec(k, e->ty.len, e->ty.dim), 0, e, NULL, NULL);
}

/* Shape of x op y (with broadcasting), or -1 on a mismatch. */
static int join_shape(P *p, V x, V y, Ty *shape, const char *opname)
{
	Ty tx = x.e->ty, ty = y.e->ty;
	char b1[64], b2[64];
	if (tx.len && ty.len && (tx.len != ty.len || tx.dim != ty.dim)) {
		fail(p, y.off, "shape mismatch in '%s': %s and %s", opname, tystr(p, tx, b1), tystr(p, ty, b2));
		return -1;
	}
	*shape = tx.len ? tx : ty;
	return 0;
}

static int need_num(P *p, V v, const char *opname)
{
	char b[64];
	if (v.e && !num_ok(v.e->ty)) {
		fail(p, v.off, "'%s' needs numbers, got %s", opname, tystr(p, v.e->ty, b));
		return -1;
	}
	return 0;
}

/* The floating-point kind an integer kind becomes where a value may have
 * a fraction: f32 for i32, f64 for i64 (whose values f32 does not hold). */
static TyKind float_of(TyKind k) { return k == TY_I64 ? TY_F64 : TY_F32; }

/* A literal with a fraction (an untyped constant that is not a whole number). */
static int fractional(const Expr *e)
{
	return e->ty.kind == TY_NUM && e->op == EXPR_CONST && isfinite(e->num) && e->num != floor(e->num);
}

/* Unify numeric operands in place; returns the result type (kind, shape).
 * Integers meeting a float become that float; integers meeting a literal
 * with a fraction become floats too (`j + 0.5` is f32), as a fraction has
 * no integer to round to, and so do integers meeting literals combined into
 * a fraction (`j + where(x > 0, 1, 0) / 2`). */
static int unify(P *p, V *args, int n, const char *opname, Ty *out)
{
	TyKind k = TY_NUM;
	Ty shape = args[0].e->ty;
	int frac = 0;
	for (int i = 0; i < n; i++) {
		if (need_num(p, args[i], opname))
			return -1;
		k = join_kind(k, (TyKind)args[i].e->ty.kind);
		frac |= fractional(args[i].e) || (args[i].e->op != EXPR_CONST && num_fractional(args[i].e));
		if (i && join_shape(p, (V){.e = ir_const(p->ir, shape, 0), .off = args[0].off}, args[i], &shape,
				    opname))
			return -1;
	}
	if (frac && (k == TY_I32 || k == TY_I64))
		k = float_of(k);
	for (int i = 0; i < n; i++)
		if (!(args[i].e = to_kind(p, args[i], k)))
			return -1;
	*out = ty_vec(k, shape.len, shape.dim);
	return 0;
}

/* The depth of the tree built, `let` names expanded, is bounded, not only
 * the nesting of the text: a flat chain `x + x + ... + x` is a tree as deep
 * as it is long, and the prover, the interpreter and the code generators
 * recurse once per level. */
static V bounded(P *p, Expr *e, size_t off)
{
	if (e->depth > SPEC_MAX_TREE_DEPTH)
		return fail(p, off,
			    "expression nested deeper than %d levels (one per operator or call, 'let' names expanded); "
			    "group a long chain with parentheses, as (a + b) + (c + d)",
			    SPEC_MAX_TREE_DEPTH);
	return (V){e, off};
}

static V mk(P *p, Op op, Ty t, int k, V *a, int n, size_t off)
{
	Expr *e = ir_node(p->ir, op, t, k, n > 0 ? a[0].e : NULL, n > 1 ? a[1].e : NULL, n > 2 ? a[2].e : NULL);
	return bounded(p, e, off);
}

static V binary(P *p, Op op, V x, V y)
{
	const char *name = ir_ops[op].printed;
	V a[2] = {x, y};
	Ty t;
	if (!x.e || !y.e)
		return (V){NULL, x.off};
	if (ir_ops[op].flags & F_LOGIC) {
		char b[64];
		for (int i = 0; i < 2; i++)
			if (a[i].e->ty.kind != TY_BOOL)
				return fail(p, a[i].off, "'%s' needs conditions (bool), got %s", name,
					    tystr(p, a[i].e->ty, b));
		if (join_shape(p, x, y, &t, name))
			return (V){NULL, x.off};
		return mk(p, op, ty_vec(TY_BOOL, t.len, t.dim), 0, a, 2, x.off);
	}
	if ((op == EXPR_EQ || op == EXPR_NE) && x.e->ty.kind == TY_BOOL && y.e->ty.kind == TY_BOOL) {
		if (join_shape(p, x, y, &t, name))
			return (V){NULL, x.off};
		return mk(p, op, ty_vec(TY_BOOL, t.len, t.dim), 0, a, 2, x.off);
	}
	if (unify(p, a, 2, name, &t))
		return (V){NULL, x.off};
	if (op == EXPR_DIV && ty_is_int(t)) { /* '/' divides, as in Python: `j / len` is a fraction, not j div len */
		t = ty_vec(float_of((TyKind)t.kind), t.len, t.dim);
		for (int i = 0; i < 2; i++)
			a[i].e = to_kind(p, a[i], (TyKind)t.kind);
	}
	if (ir_ops[op].flags & F_CMP)
		t = ty_vec(TY_BOOL, t.len, t.dim);
	return mk(p, op, t, 0, a, 2, x.off);
}

/* ---- parsing ---- */

/* The first character that is no part of any token (a lone '&' or '|'
 * included), or the end. */
static size_t stray_char(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++) {
		if ((s[i] == '&' || s[i] == '|') && s[i + 1] == s[i]) {
			i++;
			continue;
		}
		if (strchr("%&|?:[]{}@#$~`;\\", s[i]))
			break;
	}
	return i;
}

static V parse_or(P *p);

/* One level deeper, for the token at off. */
static int enter(P *p, size_t off)
{
	if (++p->depth > SPEC_MAX_EXPR_DEPTH) {
		fail(p, off, "expression nested deeper than %d levels", SPEC_MAX_EXPR_DEPTH);
		return -1;
	}
	return 0;
}

static V parse_number(P *p)
{
	size_t start = p->pos, i = p->pos;
	const char *s = p->src;
	while (isdigit((unsigned char)s[i]))
		i++;
	if (s[i] == '.') {
		i++;
		while (isdigit((unsigned char)s[i]))
			i++;
	}
	if (s[i] == 'e' || s[i] == 'E') {
		size_t j = i + 1;
		if (s[j] == '+' || s[j] == '-')
			j++;
		if (isdigit((unsigned char)s[j])) {
			while (isdigit((unsigned char)s[j]))
				j++;
			i = j;
		}
	}
	if (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.')
		return fail(p, i, "unexpected '%c' after number", s[i]);
	char buf[400];
	size_t n = i - start;
	if (n >= sizeof buf)
		return fail(p, start, "numeric literal too long");
	memcpy(buf, s + start, n);
	buf[n] = 0;
	errno = 0;
	double v = strtod(buf, NULL);
	if (isinf(v) || (errno == ERANGE && fabs(v) > 1))
		return fail(p, start, "numeric literal '%s' overflows", buf);
	/* Constants are float64 in the IR: an integer literal beyond 2^53 that
	 * float64 cannot hold would silently become another integer. */
	if (!strpbrk(buf, ".eE") && fabs(v) >= 0x1p53) {
		char exact[400]; /* the double's exact decimal value, which %.0f prints */
		const char *digits = buf;
		while (digits[0] == '0' && digits[1])
			digits++;
		snprintf(exact, sizeof exact, "%.0f", v);
		if (strcmp(exact, digits))
			return fail(p, start, "integer literal '%s' is above 2^53 and not exactly a float64, "
				    "which is how constants are kept; write it as a nearby power of two or within 2^53", buf);
	}
	int nonzero = 0;
	for (size_t k = 0; k < n && buf[k] != 'e' && buf[k] != 'E'; k++)
		nonzero |= buf[k] >= '1' && buf[k] <= '9';
	if (nonzero && (v == 0 || fabs(v) < DBL_MIN))
		return fail(p, start, "numeric literal '%s' underflows", buf);
	p->pos = i;
	return (V){ir_const(p->ir, ty_scalar(TY_NUM), v), start};
}

static size_t scan_name(P *p, char *buf)
{
	size_t i = p->pos, n = 0;
	while (isalnum((unsigned char)p->src[i]) || p->src[i] == '_') {
		if (n < SPEC_MAX_NAME)
			buf[n] = p->src[i];
		n++, i++;
	}
	buf[n < SPEC_MAX_NAME ? n : SPEC_MAX_NAME] = 0;
	return n;
}

/* What kind of thing a name is anywhere in the carrier, for messages. */
static const char *describe(Carrier *c, const char *name)
{
	struct { Decl *d; int n; const char *what; } groups[] = {
		{c->elem, c->nelem, "an element input"}, {c->col, c->ncol, "a column input"},
		{c->row, c->nrow, "a row input"},        {c->params, c->nparams, "a param"},
		{c->state, c->nstate, "a state field"},
	};
	for (size_t g = 0; g < sizeof groups / sizeof *groups; g++)
		for (int i = 0; i < groups[g].n; i++)
			if (groups[g].d[i].name && !strcmp(groups[g].d[i].name, name))
				return groups[g].what;
	for (int i = 0; i < c->nlets; i++)
		if (c->lets[i].name && !strcmp(c->lets[i].name, name))
			return "a let name";
	for (int i = 0; c->finalize_given && i < c->nfinal; i++)
		if (c->finalize[i].name && !strcmp(c->finalize[i].name, name))
			return "a finalize output";
	if (!strcmp(name, "i") || !strcmp(name, "j"))
		return "an index";
	if (!strcmp(name, "len"))
		return "the row's length";
	return NULL;
}

static int var_allowed(Scope *s, const Var *v)
{
	switch (v->kind) {
	case VAR_ELEM: return (s->allow & S_ELEM) != 0;
	case VAR_COL: return (s->allow & S_COL) != 0;
	case VAR_ROW: return (s->allow & S_ROW) != 0;
	case VAR_PARAM: return (s->allow & S_PARAMS) != 0;
	case VAR_IDX: return (s->allow & S_IDX) != 0;
	case VAR_STATE: return (s->allow & S_STATE) && v->which == STATE_SELF;
	default: return 0;
	}
}

/* `true` and `false` are literals, unless the spec names something so (a
 * spec valid before the literals existed keeps its meaning). */
static int is_bool_literal(P *p, const char *name)
{
	if (strcmp(name, "true") && strcmp(name, "false"))
		return 0;
	for (int i = 0; i < p->s->nlocals; i++)
		if (!strcmp(p->s->locals[i].name, name))
			return 0;
	for (int v = 0; v < ir_nvars(p->ir); v++)
		if (!strcmp(ir_var(p->ir, v)->name, name))
			return 0;
	return 1;
}

static V resolve(P *p, const char *name, size_t off)
{
	Scope *s = p->s;
	for (int i = s->nlocals - 1; i >= 0; i--)
		if (!strcmp(s->locals[i].name, name)) {
			s->locals[i].used = 1;
			return (V){s->locals[i].e, off};
		}
	for (int v = 0; v < ir_nvars(p->ir); v++) {
		const Var *var = ir_var(p->ir, v);
		if (strcmp(var->name, name) || var->kind == VAR_SYM)
			continue;
		if (var->kind == VAR_STATE && var->which != STATE_SELF)
			continue;
		if (var_allowed(s, var))
			return (V){ir_ref(p->ir, v), off};
	}
	const char *what = describe(s->c, name);
	if (what && (s->allow & S_AB) && !strcmp(what, "a state field"))
		return fail(p, off, "'%s' is a state field; in merge write a.%s or b.%s, or use it bare only "
				   "after merge defines it", name, name, name);
	if (what)
		return fail(p, off, "'%s' is %s, which %s cannot use (%s may use %s)", name, what, s->section,
			    s->section, s->may);
	return fail(p, off, "unknown name '%s' in %s", name, s->section);
}

static V parse_field(P *p, const char *owner, size_t off)
{
	char name[SPEC_MAX_NAME + 1];
	skip_ws(p);
	size_t at_name = p->pos;
	if (!(isalpha((unsigned char)p->src[p->pos]) || p->src[p->pos] == '_'))
		return fail(p, p->pos, "expected a field name after '%s.'", owner);
	size_t n = scan_name(p, name);
	if (n > SPEC_MAX_NAME)
		return fail(p, at_name, "name longer than %d characters", SPEC_MAX_NAME);
	if ((unsigned char)p->src[p->pos + n] >= 0x80)
		return fail(p, p->pos + n, "a non-ASCII character in the name '%s...' (names are ASCII letters, digits "
					   "and '_')", name);
	p->pos += n;
	if (!(p->s->allow & S_AB))
		return fail(p, off, "'%s.%s' names a merge operand; only merge may use a. and b.", owner, name);
	if (strcmp(owner, "a") && strcmp(owner, "b"))
		return fail(p, off, "unknown operand '%s'; merge operands are a and b", owner);
	Carrier *c = p->s->c;
	for (int f = 0; f < c->nstate; f++)
		if (!strcmp(c->state[f].name, name))
			return (V){ir_ref(p->ir, c->svar[owner[0] == 'a' ? STATE_A : STATE_B][f]), off};
	return fail(p, at_name, "state has no field '%s'", name);
}

typedef struct {
	const char *name;
	Op op;
	int arity;
} Fn;

static const Fn fns[] = {
	{"exp", EXPR_EXP, 1},     {"exp2", EXPR_EXP2, 1},   {"log", EXPR_LOG, 1},
	{"log2", EXPR_LOG2, 1},   {"log1p", EXPR_LOG1P, 1}, {"expm1", EXPR_EXPM1, 1},
	{"sqrt", EXPR_SQRT, 1},   {"rsqrt", EXPR_RSQRT, 1}, {"abs", EXPR_ABS, 1},
	{"tanh", EXPR_TANH, 1},   {"sigmoid", EXPR_SIGMOID, 1}, {"max", EXPR_MAX, 2},
	{"min", EXPR_MIN, 2},     {"where", EXPR_WHERE, 3}, {"dot", EXPR_DOT, 2},
	{"fma", EXPR_FMA, 3},     {"sum", EXPR_SUM, 1},     {"count", EXPR_COUNT, 0},
	{"topk", EXPR_TOPK, 4},   {"topk_idx", EXPR_TOPK_IDX, 4},
};

static V call_reduce(P *p, Op op, const char *name, V *a, int n, size_t off)
{
	if (!(p->s->allow & S_REDUCE))
		return fail(p, off, "%s(%s) reduces over the row and is allowed only in reference", name,
			    n ? "e" : "");
	if (op == EXPR_COUNT)
		return mk(p, op, ty_scalar(TY_I32), 0, a, 0, off);
	if (need_num(p, a[0], name))
		return (V){NULL, off};
	/* literals alone (sum(0.1), sum(where(x > 0, 1, 2))) take the state's
	 * float type, as the lift that makes them does: in float64 the
	 * reference then sums the very 0.100000001 an f32 carrier does, and its
	 * naive float32 version rounds as the carrier's sum does (in f64 it was
	 * exact, and set no tolerance); f64 where every float field is f64 */
	Ty t = a[0].e->ty;
	if (t.kind == TY_NUM) {
		TyKind lk = TY_F64;
		for (int f = 0; f < p->s->c->nstate; f++)
			if (p->s->c->state[f].ty.kind == TY_F32)
				lk = TY_F32;
		t.kind = lk, a[0].e = to_kind(p, a[0], lk);
	}
	if (!a[0].e)
		return (V){NULL, off};
	return mk(p, op, t, 0, a, 1, off);
}

/* k of topk's forms: an integer literal from 1 to IR_TOPK_MAX. */
static int topk_len(P *p, V v, const char *name)
{
	Expr *e = v.e;
	if (e->op != EXPR_CONST || e->ty.kind != TY_NUM || e->num != floor(e->num) || e->num < 1 ||
	    e->num > IR_TOPK_MAX) {
		fail(p, v.off, "%s's k must be an integer literal from 1 to %d", name, IR_TOPK_MAX);
		return 0;
	}
	return (int)e->num;
}

/* A topk list's values: floats (an empty slot holds -inf), a literal
 * taking f32, an integer its float kind. */
static Expr *topk_values(P *p, V v, const char *name)
{
	if (need_num(p, v, name))
		return NULL;
	TyKind k = (TyKind)v.e->ty.kind;
	return k == TY_NUM || k == TY_I32 ? to_kind(p, v, TY_F32) : k == TY_I64 ? to_kind(p, v, TY_F64) : v.e;
}

static Expr *topk_indices(P *p, V v, const char *name)
{
	char b[64];
	TyKind k = (TyKind)v.e->ty.kind;
	if (k != TY_I32 && k != TY_NUM) {
		fail(p, v.off, "%s's indices must be i32, got %s", name, tystr(p, v.e->ty, b));
		return NULL;
	}
	return to_kind(p, v, TY_I32);
}

/* topk(e, k) and topk_idx(e, k) in a reference; topk(v, i, k) (a list of
 * one, for a lift); topk(av, ai, bv, bi) (a merge).  ops.def says what
 * they compute. */
static V call_topk(P *p, Op op, const char *name, V *a, int n, size_t off)
{
	char b1[64], b2[64];
	int idx = op == EXPR_TOPK_IDX, k;
	if (n == 2) {
		if (!(p->s->allow & S_REDUCE))
			return fail(p, off, "%s(e, k) reduces over the row and is allowed only in reference; "
					    "a lift takes %s(value, index, k)", name, name);
		if (a[0].e->ty.len)
			return fail(p, a[0].off, "%s(e, k) ranks scalars, got %s", name, tystr(p, a[0].e->ty, b1));
		if (!(k = topk_len(p, a[1], name)) || !(a[0].e = topk_values(p, a[0], name)))
			return (V){NULL, off};
		Ty t = ty_vec(idx ? TY_I32 : (TyKind)a[0].e->ty.kind, k, -1);
		return mk(p, idx ? EXPR_RTOPK_IDX : EXPR_RTOPK, t, k, a, 1, off);
	}
	if (n == 3) {
		if (a[0].e->ty.len || a[1].e->ty.len)
			return fail(p, a[a[0].e->ty.len ? 0 : 1].off, "%s(value, index, k) takes scalars", name);
		if (!(k = topk_len(p, a[2], name)) || !(a[0].e = topk_values(p, a[0], name)) ||
		    !(a[1].e = topk_indices(p, a[1], name)))
			return (V){NULL, off};
		TyKind vk = (TyKind)a[0].e->ty.kind;
		Expr *args[4] = {a[0].e, a[1].e, ir_const(p->ir, ty_scalar(vk), -INFINITY),
				 ir_const(p->ir, ty_scalar(TY_I32), -1)};
		return bounded(p, ir_node_n(p->ir, op, ty_vec(idx ? TY_I32 : vk, k, -1), k, args), off);
	}
	if (n != 4)
		return fail(p, off, "'%s' takes (e, k) in a reference, (value, index, k) or (av, ai, bv, bi), got %d "
				    "arguments", name, n);
	Ty t;
	V vals[2] = {a[0], a[2]};
	if (unify(p, vals, 2, name, &t))
		return (V){NULL, off};
	if (!t.len)
		return fail(p, off, "%s(av, ai, bv, bi) merges vectors; a list of one is %s(value, index, k)", name,
			    name);
	if (t.len > IR_TOPK_MAX)
		return fail(p, a[0].off, "%s keeps at most %d values, got %s", name, IR_TOPK_MAX, tystr(p, t, b1));
	if (t.kind == TY_NUM || t.kind == TY_I32)
		t.kind = TY_F32;
	else if (t.kind == TY_I64)
		t.kind = TY_F64;
	for (int s = 0; s < 4; s += 2) {
		V v = {vals[s / 2].e, a[s].off};
		if (!(a[s].e = v.e->ty.kind == t.kind ? v.e : to_kind(p, v, (TyKind)t.kind)) ||
		    !(a[s + 1].e = topk_indices(p, a[s + 1], name)))
			return (V){NULL, off};
		Ty vt = a[s].e->ty, it = a[s + 1].e->ty;
		if (vt.len != it.len || vt.dim != it.dim)
			return fail(p, a[s + 1].off, "%s's indices must have the shape of their values: %s and %s", name,
				    tystr(p, vt, b1), tystr(p, it, b2));
	}
	Expr *args[4] = {a[0].e, a[1].e, a[2].e, a[3].e};
	return bounded(p, ir_node_n(p->ir, op, ty_vec(idx ? TY_I32 : (TyKind)t.kind, t.len, t.dim), t.len, args),
		       off);
}

/* f32(e), f64(e): e as that float, an integer or another float; the
 * cast is marked (k = 1) so that a spec written back keeps it: an
 * integer does not become a float by itself where it meets no float. */
static V call_float(P *p, TyKind k, const char *name, V *a, int n, size_t off)
{
	if (n != 1)
		return fail(p, off, "'%s' takes 1 argument, got %d", name, n);
	if (need_num(p, a[0], name))
		return (V){NULL, off};
	Expr *e = a[0].e;
	if (e->ty.kind == k)
		return a[0];
	if (e->op == EXPR_CONST) /* a literal of that type, in range */
		return (V){to_kind(p, a[0], k), off};
	return (V){ir_node(p->ir, EXPR_CAST, ty_vec(k, e->ty.len, e->ty.dim), 1, e, NULL, NULL), off};
}

static V call(P *p, const char *name, V *a, int n, size_t off)
{
	char b1[64], b2[64];
	const Fn *fn = NULL;
	if (!strcmp(name, "f32") || !strcmp(name, "f64"))
		return call_float(p, name[1] == '3' ? TY_F32 : TY_F64, name, a, n, off);
	for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
		if (!strcmp(fns[i].name, name))
			fn = &fns[i];
	if (!fn)
		return fail(p, off, "unknown function '%s'", name);
	if (fn->op == EXPR_TOPK || fn->op == EXPR_TOPK_IDX)
		return call_topk(p, fn->op, name, a, n, off);
	if (n == 1 && (fn->op == EXPR_MAX || fn->op == EXPR_MIN))
		return call_reduce(p, fn->op == EXPR_MAX ? EXPR_RMAX : EXPR_RMIN, name, a, n, off);
	if (n != fn->arity)
		return fail(p, off, "'%s' takes %d argument%s, got %d", name, fn->arity, fn->arity == 1 ? "" : "s",
			    n);
	if (ir_ops[fn->op].flags & F_REDUCE)
		return call_reduce(p, fn->op, name, a, n, off);
	Ty t;
	switch (fn->op) {
	case EXPR_WHERE: {
		if (a[0].e->ty.kind != TY_BOOL)
			return fail(p, a[0].off, "where's condition must be a comparison (bool), got %s",
				    tystr(p, a[0].e->ty, b1));
		if (unify(p, a + 1, 2, name, &t))
			return (V){NULL, off};
		if (a[0].e->ty.len && join_shape(p, a[1], a[0], &t, name))
			return (V){NULL, off};
		if (a[0].e->ty.len)
			t = ty_vec((TyKind)a[1].e->ty.kind, a[0].e->ty.len, a[0].e->ty.dim);
		if (t.len) /* broadcast scalar branches so the node's operands match it */
			for (int i = 1; i < 3; i++)
				if (!a[i].e->ty.len)
					a[i].e = ir_node(p->ir, EXPR_CAST, t, 0, a[i].e, NULL, NULL);
		return mk(p, EXPR_WHERE, t, 0, a, 3, off);
	}
	case EXPR_DOT:
		if (!a[0].e->ty.len && !a[1].e->ty.len)
			return fail(p, a[0].off, "dot needs a vector, got %s and %s", tystr(p, a[0].e->ty, b1),
				    tystr(p, a[1].e->ty, b2));
		if (unify(p, a, 2, name, &t))
			return (V){NULL, off};
		if (t.kind == TY_NUM)
			t.kind = TY_F32;
		for (int i = 0; i < 2; i++) /* dot(v, 1): a scalar broadcasts, and the dot sums v */
			if (!a[i].e->ty.len)
				a[i].e = a[i].e->op == EXPR_CONST ? ir_const(p->ir, t, ir_round((TyKind)t.kind, a[i].e->num))
								 : ir_node(p->ir, EXPR_CAST, t, 0, a[i].e, NULL, NULL);
		return mk(p, EXPR_DOT, ty_scalar((TyKind)t.kind), 0, a, 2, off);
	case EXPR_MAX: case EXPR_MIN: case EXPR_FMA:
		if (unify(p, a, n, name, &t))
			return (V){NULL, off};
		return mk(p, fn->op, t, 0, a, n, off);
	case EXPR_ABS:
		if (need_num(p, a[0], name))
			return (V){NULL, off};
		return mk(p, fn->op, a[0].e->ty, 0, a, 1, off);
	default: /* math functions: integers become floats */
		if (need_num(p, a[0], name))
			return (V){NULL, off};
		if (ty_is_int(a[0].e->ty))
			a[0].e = to_kind(p, a[0], float_of((TyKind)a[0].e->ty.kind));
		return mk(p, fn->op, a[0].e->ty, 0, a, 1, off);
	}
}

static V parse_call(P *p, const char *name, size_t off)
{
	V a[4];
	int n = 0;
	if (!accept(p, ")")) {
		do {
			if (n == 4)
				return fail(p, p->pos, "too many arguments to '%s'", name);
			a[n] = parse_or(p);
			if (!a[n++].e)
				return (V){NULL, off};
		} while (accept(p, ","));
		if (!accept(p, ")")) {
			char b[40];
			if (at_assign(p))
				return fail(p, p->pos, "%s", assign_msg);
			return fail(p, p->pos, "expected ',' or ')' in call to '%s', found %s", name,
				    what_tok(p, b, sizeof b));
		}
	}
	return call(p, name, a, n, off);
}

static V parse_prim(P *p)
{
	char b[40];
	skip_ws(p);
	size_t off = p->pos;
	char c = p->src[off];
	if (accept(p, "(")) {
		if (enter(p, off))
			return (V){NULL, off};
		V v = parse_or(p);
		p->depth--;
		if (!v.e)
			return v;
		if (!accept(p, ")")) {
			if (!p->src[p->pos])
				return fail(p, off, "'(' is never closed");
			if (at_assign(p))
				return fail(p, p->pos, "%s", assign_msg);
			return fail(p, p->pos, "expected ')', found %s", what_tok(p, b, sizeof b));
		}
		v.off = off;
		return v;
	}
	if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)p->src[off + 1])))
		return parse_number(p);
	if (isalpha((unsigned char)c) || c == '_') {
		char name[SPEC_MAX_NAME + 1];
		size_t n = scan_name(p, name);
		if (n > SPEC_MAX_NAME)
			return fail(p, off, "name longer than %d characters", SPEC_MAX_NAME);
		if ((unsigned char)p->src[p->pos + n] >= 0x80)
			return fail(p, p->pos + n, "a non-ASCII character in the name '%s...' (names are ASCII letters, "
						   "digits and '_')", name);
		p->pos += n;
		if (accept(p, "(")) {
			if (enter(p, off))
				return (V){NULL, off};
			V v = parse_call(p, name, off);
			p->depth--;
			return v;
		}
		if (p->src[p->pos] == '.')
			return p->pos++, parse_field(p, name, off);
		if (!strcmp(name, "inf"))
			return (V){ir_const(p->ir, ty_scalar(TY_NUM), INFINITY), off};
		if (is_bool_literal(p, name))
			return (V){ir_const(p->ir, ty_scalar(TY_BOOL), name[0] == 't'), off};
		return resolve(p, name, off);
	}
	if (!c)
		return fail(p, off, "expected an expression, found end of expression");
	return fail(p, off, "expected an expression, found %s", what_tok(p, b, sizeof b));
}

static V parse_pow(P *p)
{
	V x = parse_prim(p);
	if (!x.e || !accept(p, "^"))
		return x;
	skip_ws(p);
	size_t off = p->pos;
	int neg = accept(p, "-");
	skip_ws(p);
	char *end;
	errno = 0;
	long k = isdigit((unsigned char)p->src[p->pos]) ? strtol(p->src + p->pos, &end, 10) : -1;
	if (k < 0 || (*end == '.' || *end == 'e' || *end == 'E'))
		return fail(p, off, "'^' takes an integer literal exponent (x^2); use exp and log for others");
	if (k > 64 || errno)
		return fail(p, off, "exponent %s%.*s is too large (at most 64)", neg ? "-" : "",
			    (int)(end - (p->src + p->pos)) < 30 ? (int)(end - (p->src + p->pos)) : 30, p->src + p->pos);
	p->pos = end - p->src;
	if (peek(p, "^"))
		return fail(p, p->pos, "'^' does not chain; add parentheses");
	if (need_num(p, x, "^"))
		return (V){NULL, x.off};
	if (neg && !ty_is_float(x.e->ty))
		return fail(p, off, "a negative exponent needs a floating-point base");
	return bounded(p, ir_node(p->ir, EXPR_POW, x.e->ty, neg ? -(int)k : (int)k, x.e, NULL, NULL), x.off);
}

static V parse_unary(P *p)
{
	skip_ws(p);
	size_t off = p->pos;
	int neg = accept(p, "-");
	if (neg || accept(p, "!")) {
		if (enter(p, off))
			return (V){NULL, off};
		V x = parse_unary(p);
		p->depth--;
		if (!x.e)
			return x;
		if (neg) {
			if (need_num(p, x, "-"))
				return (V){NULL, off};
			return bounded(p, ir_node(p->ir, EXPR_NEG, x.e->ty, 0, x.e, NULL, NULL), off);
		}
		if (x.e->ty.kind != TY_BOOL) {
			char b[64];
			return fail(p, x.off, "'!' needs a condition (bool), got %s", tystr(p, x.e->ty, b));
		}
		return bounded(p, ir_node(p->ir, EXPR_NOT, x.e->ty, 0, x.e, NULL, NULL), off);
	}
	return parse_pow(p);
}

static V parse_mul(P *p)
{
	V x = parse_unary(p);
	while (x.e) {
		Op op = accept(p, "*") ? EXPR_MUL : accept(p, "/") ? EXPR_DIV : EXPR_NOPS;
		if (op == EXPR_NOPS)
			break;
		x = binary(p, op, x, parse_unary(p));
	}
	return x;
}

static V parse_add(P *p)
{
	V x = parse_mul(p);
	while (x.e) {
		Op op = accept(p, "+") ? EXPR_ADD : accept(p, "-") ? EXPR_SUB : EXPR_NOPS;
		if (op == EXPR_NOPS)
			break;
		x = binary(p, op, x, parse_mul(p));
	}
	return x;
}

static Op relop(P *p)
{
	static const struct { const char *tok; Op op; } ops[] = {
		{"<=", EXPR_LE}, {">=", EXPR_GE}, {"==", EXPR_EQ}, {"!=", EXPR_NE}, {"<", EXPR_LT}, {">", EXPR_GT},
	};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
		if (accept(p, ops[i].tok))
			return ops[i].op;
	return EXPR_NOPS;
}

static V parse_cmp(P *p)
{
	V x = parse_add(p);
	if (!x.e)
		return x;
	Op op = relop(p);
	if (op == EXPR_NOPS)
		return x;
	x = binary(p, op, x, parse_add(p));
	skip_ws(p);
	size_t off = p->pos;
	if (x.e && relop(p) != EXPR_NOPS)
		return fail(p, off, "comparisons do not chain; write (a < b) && (b < c)");
	return x;
}

static V parse_and(P *p)
{
	V x = parse_cmp(p);
	while (x.e && accept(p, "&&"))
		x = binary(p, EXPR_AND, x, parse_cmp(p));
	return x;
}

static V parse_or(P *p)
{
	V x = parse_and(p);
	while (x.e && accept(p, "||"))
		x = binary(p, EXPR_OR, x, parse_and(p));
	return x;
}

Expr *expr_parse(Scope *s, Diag *d, const YNode *node)
{
	if (node->kind != YN_SCALAR) {
		diag_error(d, node->pos, "expected an expression, found a %s", node->kind == YN_MAP ? "mapping" : "list");
		return NULL;
	}
	P p = {.s = s, .d = d, .node = node, .src = node->text, .ir = s->c->ir};
	skip_ws(&p);
	if (!p.src[p.pos]) {
		diag_error(d, node->pos, "empty expression");
		return NULL;
	}
	/* a character no expression has anywhere is named before parsing:
	 * else an operand it cuts short could be reported instead */
	size_t bad = stray_char(p.src);
	if (p.src[bad] == '[') {
		/* x[0]: what someone used to arrays writes first */
		fail(&p, bad, "'[': a vector's components are not indexed in expressions; arithmetic on vectors is "
			      "elementwise, and dot(u, v), topk or a sum over the row reduce them (to use one component, "
			      "make it an input of its own)");
		return NULL;
	}
	if (p.src[bad]) {
		fail(&p, bad, "'%c' is not an operator (operators: + - * / ^ < <= > >= == != && || !)", p.src[bad]);
		return NULL;
	}
	V v = parse_or(&p);
	if (!v.e)
		return NULL;
	skip_ws(&p);
	if (p.src[p.pos]) {
		char b[40];
		if (p.src[p.pos] == ')')
			fail(&p, p.pos, "')' without a matching '('");
		else if (at_assign(&p))
			fail(&p, p.pos, "%s", assign_msg);
		else /* stray characters were named before parsing */
			fail(&p, p.pos, "expected an operator, found %s", what_tok(&p, b, sizeof b));
		return NULL;
	}
	return v.e;
}
