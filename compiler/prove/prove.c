/* prove.c: the laws of a carrier, proved region by region.
 *
 * The obligations are built by substitution in the IR: (a+b)+c against
 * a+(b+c), e+a and a+e against a, b+a against a+b, and for a certificate
 * phi(a+b) against phi(a)*phi(b) and back(phi(a)) against a.  Operands are
 * nonempty reachable states: finite reals with the sign invariants inferred
 * from lift and merge, and the linear ones of prove_inv.c (q >= s), and
 * bools taken case by case (prove_pairs).  The
 * empty state enters only through the identity laws, which with
 * associativity over nonempty states give it for every reachable state.
 * e+e is folded in the spec's own types, as the generated code computes it. */
#include "compiler/prove/prove_int.h"

#include "compiler/check/draw.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* BOOL_STATE_SPLIT_MAX: bool state fields of a law's operands taken case
 * by case, 2^6 = 64 cases */
enum { MAX_REGIONS = 4096, MAX_FIELDS = 64, WITNESS_TRIES = 4000, MAX_OPEN = 8, BOOL_STATE_SPLIT_MAX = 6 };
static const double TIME_BUDGET = 10.0;

typedef struct {
	char *s;
	size_t len, cap;
} Buf;

static void bprintf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(Buf *b, const char *fmt, ...)
{
	if (!b)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->len + n + 1 > b->cap) {
		b->cap = 2 * (b->len + n + 1);
		b->s = realloc(b->s, b->cap);
		if (!b->s)
			abort();
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = malloc(n + 1);
	if (!s)
		abort();
	va_start(ap, fmt);
	vsnprintf(s, n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---- substitution ---- */

typedef struct {
	Expr **by_var; /* replacement per Ir var, NULL keeps */
} Map;

static Expr *map_var(void *ctx, Expr *v) { return ((Map *)ctx)->by_var[v->k]; }

/* e with state operand w's fields replaced by to[f] (to NULL: leave) and w2's by to2. */
static Expr *subst2(Carrier *c, Expr *e, int w, Expr **to, int w2, Expr **to2)
{
	Map m = {calloc(ir_nvars(c->ir) + 1, sizeof(Expr *))};
	if (!m.by_var)
		abort();
	for (int f = 0; f < c->nstate; f++) {
		if (to)
			m.by_var[c->svar[w][f]] = to[f];
		if (to2)
			m.by_var[c->svar[w2][f]] = to2[f];
	}
	Expr *r = ir_subst(c->ir, e, map_var, &m);
	free(m.by_var);
	return r;
}

/* merge(x, y) per field */
static void merge_of(Carrier *c, Expr **x, Expr **y, Expr **out)
{
	for (int f = 0; f < c->nstate; f++)
		out[f] = subst2(c, c->merge[f], STATE_A, x, STATE_B, y);
}

static void refs(Carrier *c, int w, Expr **out)
{
	for (int f = 0; f < c->nstate; f++)
		out[f] = ir_ref(c->ir, c->svar[w][f]);
}

/* ---- signs: assume facts and the invariants of nonempty states ---- */

/* The values an integer expression may take on the devices, in two's
 * complement: integer +, -, *, negation, abs and powers wrap in their
 * type, so a sum of two positives may be negative and abs of the most
 * negative value is that value.  A result whose true range leaves the type
 * may be any value of it. */
typedef struct {
	__int128 lo, hi;
	uint8_t done;
} IRange;

typedef struct {
	Carrier *c;
	const uint8_t *vs;
	uint8_t *memo;
	IRange *rg;
} SignCtx;

static uint8_t sign_rec(SignCtx *x, Expr *e);

static IRange type_range(Ty t)
{
	IRange r = {0, 1, 1};
	if (t.kind == TY_I32)
		r.lo = INT32_MIN, r.hi = INT32_MAX;
	else if (t.kind == TY_I64)
		r.lo = INT64_MIN, r.hi = INT64_MAX;
	return r;
}

static IRange narrow_by_sign(IRange r, uint8_t s)
{
	if (!(s & SG_NEG) && r.lo < (s & SG_ZERO ? 0 : 1))
		r.lo = s & SG_ZERO ? 0 : 1;
	if (!(s & SG_POS) && r.hi > (s & SG_ZERO ? 0 : -1))
		r.hi = s & SG_ZERO ? 0 : -1;
	return r;
}

static uint8_t sign_of_range(IRange r)
{
	return (uint8_t)((r.lo < 0 ? SG_NEG : 0) | (r.lo <= 0 && r.hi >= 0 ? SG_ZERO : 0) | (r.hi > 0 ? SG_POS : 0));
}

/* e adds and subtracts counts of positions of different operands, each
 * once, and 0s: the runs of one row, whose positions add up to at most
 * INT32_MAX (prove_eval.c's count_sum).  *sub set where it subtracts. */
static int count_terms(Carrier *c, Expr *e, unsigned *sides, int *sub)
{
	if (e->op == EXPR_ADD || e->op == EXPR_SUB) {
		*sub |= e->op == EXPR_SUB;
		return count_terms(c, e->a[0], sides, sub) && count_terms(c, e->a[1], sides, sub);
	}
	if (e->op == EXPR_CONST)
		return e->num == 0;
	if (e->op != EXPR_VAR)
		return 0;
	for (int w = STATE_A; w <= STATE_C; w++)
		for (int f = 0; f < c->nstate; f++)
			if (c->svar[w][f] == e->k) {
				if (*sides >> w & 1 || !prove_counts_positions(c, f))
					return 0;
				*sides |= 1u << w;
				return 1;
			}
	return 0;
}

static IRange range_rec(SignCtx *x, Expr *e);

/* Whether the row index i may be negative: in a paged run a sequence with
 * more queries than keys has its first queries before position 0
 * (docs/spec-format.md, "Paged keys and values").  j and len never are. */
static int row_index_signed(const Carrier *c) { return !spec_unpageable(c); }

/* a op b over the true ranges; the type's whole range where it may leave it */
static IRange range_op(SignCtx *x, Expr *e)
{
	IRange t = type_range(e->ty), a = {0}, b = {0}, r = t;
	if (e->nargs > 0)
		a = range_rec(x, e->a[0]);
	if (e->nargs > 1)
		b = range_rec(x, e->a[1]);
	switch (e->op) {
	case EXPR_CONST:
		if (e->num >= (double)t.lo && e->num <= (double)t.hi)
			r.lo = r.hi = (__int128)e->num;
		return r;
	case EXPR_VAR: {
		const Var *v = ir_var(x->c->ir, e->k);
		unsigned sides = 0;
		int sub = 0;
		if (v->kind == VAR_IDX || (v->kind == VAR_STATE && count_terms(x->c, e, &sides, &sub)))
			r.lo = 0, r.hi = INT32_MAX; /* positions and counts of them */
		if (v->kind == VAR_IDX && v->slot == IDX_I && row_index_signed(x->c))
			r.lo = -(__int128)INT32_MAX; /* a paged query before the sequence's first key */
		return narrow_by_sign(r, x->vs[e->k]);
	}
	case EXPR_CAST:
		if (e->a[0]->ty.kind == TY_BOOL)
			r.lo = 0, r.hi = 1;
		else if (ty_is_int(e->a[0]->ty) && a.lo >= t.lo && a.hi <= t.hi)
			r = a;
		return r;
	case EXPR_NEG: r.lo = -a.hi, r.hi = -a.lo; break;
	case EXPR_ADD: case EXPR_SUB: {
		unsigned sides = 0;
		int sub = 0;
		if (e->op == EXPR_ADD)
			r.lo = a.lo + b.lo, r.hi = a.hi + b.hi;
		else
			r.lo = a.lo - b.hi, r.hi = a.hi - b.lo;
		if (count_terms(x->c, e, &sides, &sub)) { /* no wrap: within the sums' bounds and the positions' */
			__int128 lo = sub ? -(__int128)INT32_MAX : 0;
			r.lo = r.lo > lo ? r.lo : lo;
			r.hi = r.hi < INT32_MAX ? r.hi : INT32_MAX;
			return r;
		}
		break;
	}
	case EXPR_MUL: case EXPR_FMA: {
		__int128 p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
		r.lo = r.hi = p[0];
		for (int i = 1; i < 4; i++)
			r.lo = p[i] < r.lo ? p[i] : r.lo, r.hi = p[i] > r.hi ? p[i] : r.hi;
		if (e->op == EXPR_FMA) {
			if (r.lo < t.lo || r.hi > t.hi)
				return t;
			IRange k = range_rec(x, e->a[2]);
			r.lo += k.lo, r.hi += k.hi;
		}
		break;
	}
	case EXPR_POW: {
		if (e->k < 0)
			return t;
		IRange p = {1, 1, 1};
		for (int i = 0; i < e->k; i++) {
			__int128 q[4] = {p.lo * a.lo, p.lo * a.hi, p.hi * a.lo, p.hi * a.hi};
			p.lo = p.hi = q[0];
			for (int j = 1; j < 4; j++)
				p.lo = q[j] < p.lo ? q[j] : p.lo, p.hi = q[j] > p.hi ? q[j] : p.hi;
			if (p.lo < t.lo || p.hi > t.hi)
				return t;
		}
		r = p;
		break;
	}
	case EXPR_ABS:
		if (a.lo <= t.lo) /* abs of the most negative value is that value */
			return t;
		r.hi = -a.lo > a.hi ? -a.lo : a.hi;
		r.lo = a.lo >= 0 ? a.lo : a.hi <= 0 ? -a.hi : 0;
		break;
	case EXPR_MAX: case EXPR_MIN:
		if (e->op == EXPR_MAX)
			r.lo = a.lo > b.lo ? a.lo : b.lo, r.hi = a.hi > b.hi ? a.hi : b.hi;
		else
			r.lo = a.lo < b.lo ? a.lo : b.lo, r.hi = a.hi < b.hi ? a.hi : b.hi;
		return r;
	case EXPR_WHERE: {
		IRange k = range_rec(x, e->a[2]);
		r.lo = b.lo < k.lo ? b.lo : k.lo, r.hi = b.hi > k.hi ? b.hi : k.hi;
		return r;
	}
	default: /* integer division (INT_MIN / -1 wraps), indices, dot products */
		return t;
	}
	return r.lo < t.lo || r.hi > t.hi ? t : r;
}

static IRange range_rec(SignCtx *x, Expr *e)
{
	if (!ty_is_int(e->ty) || e->ty.len)
		return type_range(e->ty);
	if (!x->rg[e->id].done) {
		x->rg[e->id] = range_op(x, e);
		x->rg[e->id].done = 1;
	}
	return x->rg[e->id];
}

static uint8_t sign_op(SignCtx *x, Expr *e)
{
	uint8_t s[4] = {SG_ANY, SG_ANY, SG_ANY, SG_ANY};
	for (int i = 0; i < e->nargs; i++)
		s[i] = sign_rec(x, e->a[i]);
	/* an integer ring operation: the signs of its range on the devices */
	if (ty_is_int(e->ty) && !e->ty.len &&
	    (e->op == EXPR_NEG || e->op == EXPR_ADD || e->op == EXPR_SUB || e->op == EXPR_MUL || e->op == EXPR_DIV ||
	     e->op == EXPR_FMA || e->op == EXPR_POW || e->op == EXPR_ABS ||
	     (e->op == EXPR_CAST && ty_is_int(e->a[0]->ty)))) /* an i64 narrowed to an i32 wraps */
		return sign_of_range(range_rec(x, e));
	switch (e->op) {
	case EXPR_CONST: return isinf(e->num) ? (e->num > 0 ? SG_POS : SG_NEG) : lin_sign_of_num(e->num);
	case EXPR_VAR: return x->vs[e->k];
	case EXPR_CAST: case EXPR_INDEX: case EXPR_TANH: return s[0];
	case EXPR_NEG: return lin_sign_neg(s[0]);
	case EXPR_ADD: return lin_sign_add(s[0], s[1]);
	case EXPR_SUB: return lin_sign_add(s[0], lin_sign_neg(s[1]));
	case EXPR_MUL: return lin_sign_mul(s[0], s[1]);
	case EXPR_DIV: /* over a zero of either sign (x >= 0 holds at -0): 1 / -0 is -inf */
		return s[1] & SG_ZERO ? SG_ANY : lin_sign_mul(s[0], s[1]);
	case EXPR_FMA: return lin_sign_add(lin_sign_mul(s[0], s[1]), s[2]);
	case EXPR_POW:
		if (e->k % 2)
			return s[0];
		return (uint8_t)((s[0] & SG_ZERO) | (s[0] & (SG_NEG | SG_POS) ? SG_POS : 0));
	case EXPR_EXP: case EXPR_EXP2: case EXPR_RSQRT: case EXPR_SIGMOID: return SG_POS;
	case EXPR_SQRT: return (uint8_t)(s[0] & SG_ZERO ? SG_ZERO | SG_POS : SG_POS);
	case EXPR_ABS: return (uint8_t)(s[0] & SG_ZERO ? SG_ZERO | SG_POS : SG_POS);
	case EXPR_MAX: return lin_sign_max(s[0], s[1]);
	case EXPR_MIN: return lin_sign_neg(lin_sign_max(lin_sign_neg(s[0]), lin_sign_neg(s[1])));
	case EXPR_WHERE: return s[1] | s[2];
	default: return SG_ANY;
	}
}

static uint8_t sign_rec(SignCtx *x, Expr *e)
{
	if (!x->memo[e->id])
		x->memo[e->id] = sign_op(x, e);
	return x->memo[e->id];
}

static uint8_t sign_expr(Carrier *c, Expr *e, const uint8_t *vs)
{
	SignCtx x = {c, vs, calloc(e->id + 1, 1), calloc(e->id + 1, sizeof(IRange))};
	if (!x.memo || !x.rg)
		abort();
	uint8_t s = sign_rec(&x, e);
	free(x.memo);
	free(x.rg);
	return s;
}

/* Facts "v > k", "v >= k" (k >= 0) and mirrored, from the assume conjunction. */
static void assume_facts(Expr *e, uint8_t *vs)
{
	Expr *stack[256];
	int n = 0;
	if (e)
		stack[n++] = e;
	while (n) {
		e = stack[--n];
		if (e->op == EXPR_AND) {
			if (n + 2 <= 256)
				stack[n++] = e->a[0], stack[n++] = e->a[1];
			continue;
		}
		if (!(ir_ops[e->op].flags & F_CMP) || e->op == EXPR_EQ || e->op == EXPR_NE)
			continue;
		int flip = e->a[0]->op == EXPR_CONST;
		Expr *v = e->a[flip], *k = e->a[!flip];
		if (v->op != EXPR_VAR || k->op != EXPR_CONST)
			continue;
		int op = e->op;
		if (flip)
			op = op == EXPR_LT ? EXPR_GT : op == EXPR_LE ? EXPR_GE : op == EXPR_GT ? EXPR_LT : EXPR_LE;
		if ((op == EXPR_GT && k->num >= 0) || (op == EXPR_GE && k->num > 0))
			vs[v->k] &= SG_POS;
		else if (op == EXPR_GE && k->num == 0)
			vs[v->k] &= SG_POS | SG_ZERO;
	}
}

static void infer_signs(Carrier *c, uint8_t *vs, uint8_t *inv)
{
	for (int v = 0; v < ir_nvars(c->ir); v++) {
		const Var *var = ir_var(c->ir, v);
		vs[v] = var->kind != VAR_IDX			      ? SG_ANY
			: var->slot == IDX_LEN			      ? SG_POS
			: var->slot == IDX_I && row_index_signed(c) ? SG_ANY
								      : SG_POS | SG_ZERO;
	}
	assume_facts(c->assume, vs);
	for (int f = 0; f < c->nstate; f++)
		inv[f] = sign_expr(c, c->lift[f], vs);
	for (int round = 0, changed = 1; changed && round < 16; round++) {
		changed = 0;
		for (int f = 0; f < c->nstate; f++)
			vs[c->svar[STATE_A][f]] = vs[c->svar[STATE_B][f]] = inv[f];
		for (int f = 0; f < c->nstate; f++) {
			uint8_t s = sign_expr(c, c->merge[f], vs);
			if (s & ~inv[f])
				inv[f] |= s, changed = 1;
		}
	}
}

/* ---- the prover's variables ---- */

/* A bool state field's one value on every nonempty state, by field: a
 * lift that is a constant, kept by a merge of states that hold it (r:
 * a.r || b.r with lift false), the fields so found constants there; -1
 * where nothing says the field has one value. */
static void bool_only(Carrier *c, int8_t *only)
{
	for (int f = 0; f < c->nstate; f++) {
		const Expr *l = c->lift ? c->lift[f] : NULL;
		only[f] = c->state[f].ty.kind == TY_BOOL && c->merge && l && l->op == EXPR_CONST ? l->num != 0 : -1;
	}
	for (int changed = 1; changed;) {
		changed = 0;
		Map m = {calloc(ir_nvars(c->ir) + 1, sizeof(Expr *))};
		if (!m.by_var)
			abort();
		for (int f = 0; f < c->nstate; f++)
			if (only[f] >= 0)
				m.by_var[c->svar[STATE_A][f]] = m.by_var[c->svar[STATE_B][f]] =
					ir_const(c->ir, c->state[f].ty, only[f]);
		for (int f = 0; f < c->nstate && !changed; f++) {
			if (only[f] < 0)
				continue;
			Expr *v = ir_subst(c->ir, c->merge[f], map_var, &m);
			if (v->op != EXPR_CONST || (v->num != 0) != only[f])
				only[f] = -1, changed = 1;
		}
		free(m.by_var);
	}
}

static int int_to_float(void *ctx, Expr *n)
{
	(void)ctx;
	return n->op == EXPR_CAST && ty_is_float(n->ty) && ty_is_int(n->a[0]->ty);
}

static int pv_init(Pv *p, Carrier *c)
{
	memset(p, 0, sizeof *p);
	p->c = c;
	p->ir = c->ir;
	int nvars = ir_nvars(c->ir);
	p->var_of = malloc((nvars + 1) * sizeof *p->var_of);
	uint8_t *vs = malloc(nvars + 1), inv[MAX_FIELDS];
	int8_t only[MAX_FIELDS];
	if (!p->var_of || !vs)
		abort();
	for (int v = 0; v < nvars; v++)
		p->var_of[v] = -1;
	infer_signs(c, vs, inv);
	bool_only(c, only);
	for (int w = STATE_A; w <= STATE_C; w++)
		for (int f = 0; f < c->nstate && p->nv < PV_MAXV; f++) {
			p->var_of[c->svar[w][f]] = p->nv;
			p->vname[p->nv] = c->state[f].name;
			p->vop[p->nv] = (char)('a' + w);
			p->vfield[p->nv] = f;
			p->vi32[p->nv] = c->state[f].ty.kind == TY_I32;
			p->vbool[p->nv] = c->state[f].ty.kind == TY_BOOL;
			p->bonly[p->nv] = only[f];
			p->vsign[p->nv] = p->vbool[p->nv] ? SG_ANY : inv[f]; /* a bool's sign says nothing */
			p->nv++;
		}
	for (int v = 0; v < PV_MAXV; v++)
		p->bval[v] = -1;
	for (int i = 0; i < c->nparams && p->nv < PV_MAXV; i++) {
		p->bonly[p->nv] = -1;
		p->var_of[c->params[i].var] = p->nv;
		p->vname[p->nv] = c->params[i].name;
		p->vfield[p->nv] = i;
		p->vi32[p->nv] = c->params[i].ty.kind == TY_I32;
		p->vsign[p->nv++] = vs[c->params[i].var];
	}
	/* points drawn from the carrier's own text: the same proof on every
	 * run, but no fixed public points a merge could be built to vanish on */
	uint64_t seed = 0x5eedULL;
	for (int f = 0; f < c->nstate; f++) {
		Expr *es[3] = {c->merge ? c->merge[f] : NULL, c->identity ? c->identity[f] : NULL, c->lift ? c->lift[f] : NULL};
		for (int k = 0; k < 3; k++)
			if (es[k]) {
				char *t = ir_str_max(c->ir, es[k], 1 << 16);
				for (const char *s = t; *s; s++)
					seed = (seed ^ (unsigned char)*s) * 0x100000001b3ULL;
				free(t);
			}
	}
	for (int k = 0; k < PV_K; k++) {
		for (int v = 0; v < PV_MAXV; v++) {
			p->pt[k][v] = lin_rand(&seed) | 1;
			p->X[k][v] = lin_rand(&seed) | 1;
			p->Y[k][v] = lin_rand(&seed) | 1;
		}
		p->E[k] = lin_rand(&seed) | 1;
	}
	int ok = p->nv == 3 * c->nstate + c->nparams;
	if (ok)
		inv_infer(p, vs);
	p->isign = vs;
	for (int f = 0; f < c->nstate && !p->int_casts; f++)
		p->int_casts = (c->merge && c->merge[f] && ir_contains(c->merge[f], int_to_float, NULL)) ||
			       (c->lift && c->lift[f] && ir_contains(c->lift[f], int_to_float, NULL));
	return ok ? 0 : -1;
}

/* The float's run of consecutive integers: 2^bits, its significand's bits. */
static int significand_bits(TyKind k)
{
	return k == TY_F64 ? 53 : k == TY_F32 ? 24 : k == TY_F16 ? 11 : k == TY_BF16 ? 8 : k == TY_F8E4M3 ? 4 : 0;
}

int pv_int_converts_exactly(const Pv *p, Expr *e, TyKind k)
{
	__int128 top = (__int128)1 << significand_bits(k);
	if (e->ty.kind == TY_BOOL)
		return 1;
	if (!p->isign || e->ty.len)
		return e->op == EXPR_CONST && fabs(e->num) <= (double)top;
	SignCtx x = {p->c, p->isign, calloc(e->id + 1, 1), calloc(e->id + 1, sizeof(IRange))};
	if (!x.memo || !x.rg)
		abort();
	IRange r = range_rec(&x, e);
	free(x.memo);
	free(x.rg);
	return r.lo >= -top && r.hi <= top;
}

/* ---- obligations ---- */

typedef struct {
	Expr *l, *r;
	const char *field;
} Pair;

typedef struct {
	Pv *p;
	Buf *trace;
	double t0;
	const char *ops; /* operands named in witnesses: "abc", "ab", "a" */
	const char *lname, *rname;
	int regions;
	int maxdeg, nchecks;
	char *open;      /* the first difference no reachable state shows: the verdict unless one does */
	int nopen;
	int ntopk;       /* fields equal as one top-k of one multiset of lists */
	char cases[1024]; /* "every case of a.r, b.r": the bool state fields a proof took case by case, or "" */
} Job;

typedef struct {
	ProofStatus status;
	char *how;
	char *except; /* a proved identity's exception at infinite lifts (ProofLine) */
} Verdict;

static void verdict(Verdict *v, ProofStatus s, char *how)
{
	free(v->how);
	v->status = s;
	v->how = how;
}

static double grid_value(uint8_t sign, int integer, uint64_t *seed)
{
	static const double any[] = {-2, -1, 0, 1, 2, 3, 0.5, -1.5}, pos[] = {1, 2, 3, 4},
			    nonneg[] = {0, 1, 2, 3};
	const double *g = any;
	int n = integer ? 6 : 8;
	if (sign == SG_POS)
		g = pos, n = 4;
	else if (sign == (SG_POS | SG_ZERO))
		g = nonneg, n = 4;
	else if (sign == SG_NEG || sign == (SG_NEG | SG_ZERO))
		return -grid_value(lin_sign_neg(sign), integer, seed);
	return g[lin_rand(seed) % (uint64_t)n];
}

static int set_leaves(Pv *p, Prog *g, const double *val)
{
	for (int i = 0; i < prog_nleaves(g); i++) {
		Expr *e = prog_leaf(g, i);
		int v = e->op == EXPR_VAR ? p->var_of[e->k] : -1;
		if (v < 0)
			return 0;
		double *d = prog_leaf_val(g, i, NULL);
		for (int j = 0; j < (e->ty.len ? e->ty.len : 1); j++)
			d[j] = val[v];
	}
	return 1;
}

/* v as short as reads back as the same value: 9 significant digits at
 * most for a float32 field's float32, 17 for anything else (-3.60025e+10
 * named no state of the witness); a bool as true or false. */
static void fmt_value(TyKind kind, double v, char *t, size_t n)
{
	if (kind == TY_BOOL) {
		snprintf(t, n, "%s", v != 0 ? "true" : "false");
		return;
	}
	if ((kind == TY_I32 || kind == TY_I64) && v == floor(v) && fabs(v) <= 0x1p63) { /* INT64_MIN whole */
		/* a double of 2^63 stands for INT64_MAX, which it holds rounded */
		if (v == 0x1p63)
			snprintf(t, n, "%s", "9223372036854775807");
		else
			snprintf(t, n, "%.0f", v);
		return;
	}
	float f = (float)v;
	int single = (kind == TY_F32 || kind == TY_F16 || kind == TY_BF16) && (double)f == v;
	for (int d = 6; d <= 17; d++) { /* %g's 6 where they do: 1000, not 1e+03 */
		snprintf(t, n, "%.*g", d, v);
		double back = strtod(t, NULL);
		if (!isfinite(v) || (single ? (float)back == f : back == v))
			return;
	}
}

/* A side's value: a bool as fmt_value writes it. */
static void fmt_side(const Expr *e, double v, char *t, size_t n)
{
	if (e->ty.kind == TY_BOOL || (ty_is_int(e->ty) && !e->ty.len))
		fmt_value((TyKind)e->ty.kind, v, t, n);
	else
		snprintf(t, n, "%.17g", v);
}

static void witness_str(Job *j, const double *val, Buf *b)
{
	Pv *p = j->p;
	for (const char *o = j->ops; *o; o++) {
		bprintf(b, "%s%c={", o == j->ops ? "" : ", ", *o);
		for (int v = 0, first = 1; v < p->nv; v++)
			if (p->vop[v] == *o && !(p->vbool[v] && p->bval[v] >= 0)) { /* a bool's case is named with the law */
				char t[40];
				fmt_value((TyKind)p->c->state[p->vfield[v]].ty.kind, val[v], t, sizeof t);
				bprintf(b, "%s%s: %s", first ? "" : ", ", p->vname[v], t);
				first = 0;
			}
		bprintf(b, "}");
	}
	for (int v = 0; v < p->nv; v++) { /* a fixed param is named with the law, as is a bool's case */
		char t[40];
		if (p->vop[v] || p->c->params[p->vfield[v]].storage == TY_BOOL || (p->pfixed && p->pfixed[p->vfield[v]]))
			continue;
		fmt_value((TyKind)p->c->params[p->vfield[v]].ty.kind, val[v], t, sizeof t);
		bprintf(b, ", %s=%s", p->vname[v], t);
	}
}

static int try_point(Job *j, const Region *r, Prog *g, uint64_t *seed, double scale, double *val, double *out)
{
	Pv *p = j->p;
	for (int v = 0; v < p->nv; v++) {
		const Ty *t = p->vop[v] ? &p->c->state[p->vfield[v]].ty : &p->c->params[p->vfield[v]].ty;
		val[v] = scale * grid_value(p->vsign[v], ty_is_int(*t), seed);
	}
	for (int v = 0; v < p->nv; v++)
		if (p->vbool[v])
			val[v] = p->bval[v] > 0;
	for (int v = 0; v < p->nv; v++)
		if (r->issub >> v & 1)
			val[v] = lin_eval_f(&r->sub[v], val);
	for (int v = 0; v < p->nv; v++) { /* a region's equation can make an integer field a half: no state has it */
		const Ty *t = p->vop[v] ? &p->c->state[p->vfield[v]].ty : &p->c->params[p->vfield[v]].ty;
		if (ty_is_int(*t) && val[v] != trunc(val[v]))
			return 0;
	}
	if (!lin_region_holds(r, val) || !set_leaves(p, g, val))
		return 0;
	prog_run(g, MODE_F64);
	out[0] = prog_root(g, 0, NULL)[0];
	out[1] = prog_root(g, 1, NULL)[0];
	return reach_differ(out[0], out[1]);
}

/* A point of region r where pair's sides differ in float64, drawn from the
 * grid: it shows the difference, but may break an invariant of reachable
 * states that the region does not state. */
static int grid_witness(Job *j, const Region *r, Prog *g, double *val, double *out)
{
	uint64_t seed = 0xfeedULL;
	for (int t = 0; t < WITNESS_TRIES; t++)
		if (try_point(j, r, g, &seed, 1, val, out))
			return 1;
	/* a region past the grid's few units (a.m < -80): the grid scaled */
	static const double scales[] = {10, 100, 1000, 1e6};
	for (size_t k = 0; k < sizeof scales / sizeof *scales; k++)
		for (int t = 0; t < WITNESS_TRIES / 8; t++)
			if (try_point(j, r, g, &seed, scales[k], val, out))
				return 1;
	return 0;
}

static char *witness_how(Job *j, const Region *r, const Pair *pr, const double *val, const double *out)
{
	Buf b = {0};
	if (r->desc[0])
		bprintf(&b, "region %s: ", r->desc);
	witness_str(j, val, &b);
	char x[40], y[40];
	fmt_side(pr->l, out[0], x, sizeof x);
	fmt_side(pr->r, out[1], y, sizeof y);
	bprintf(&b, " gives %s = %s by %s and %s by %s", pr->field, x, j->lname, y, j->rname);
	return b.s;
}

/* The pair's sides differ in region r as rational functions.  A disproof
 * needs operands that folds of real inputs reach: 1 with the verdict in
 * out.  A region that no drawn fold shows different is left open (0), and
 * the search goes on elsewhere: its message is the verdict only if no
 * other region disproves the law. */
static int disprove(Job *j, const Region *r, const Pair *pr, Verdict *out)
{
	Pv *p = j->p;
	Expr *roots[2] = {pr->l, pr->r};
	Prog *g = prog_new(p->ir, roots, 2);
	double val[PV_MAXV], got[2];
	if (!p->reach)
		p->reach = reach_new(p->c);
	const char *where = r->desc[0] ? r->desc : "(all)";
	char *open = NULL;
	int found = reach_witness(p->reach, p, r, g, pr->l, val, got), grid = 0;
	double gval[PV_MAXV], ggot[2];
	if (found) {
		bprintf(j->trace, "      states folded from drawn rows differ there\n");
	} else {
		/* a point of the grid, or none: rows whose elements are its field
		 * values (1000 and 0.5 for where(a.s == 1000 && b.s == 0.5, ...)),
		 * or the spec's constants, may fold to states in the region */
		grid = grid_witness(j, r, g, gval, ggot);
		if (grid) {
			double fv[PV_MAXV];
			int nf = 0;
			for (int v = 0; v < p->nv; v++)
				if (p->vop[v])
					fv[nf++] = gval[v];
			reach_seed(p->reach, fv, nf);
			reach_seed_lengths(p->reach, p, gval);
		}
		found = reach_seed_witness(p->reach, p, (int)strlen(j->ops), r, g, pr->l, val, got);
		if (found)
			bprintf(j->trace, "      states folded from rows of the spec's constants%s differ there\n",
				grid ? " and the grid point's values" : "");
		/* the grid point's params may lie outside the range the states
		 * were folded at (p = -1 where they drew p from (0.05, 1]):
		 * states folded at its params */
		if (!found && grid && reach_params_differ(p->reach, p, gval)) {
			if (!p->reach_at || reach_params_differ(p->reach_at, p, gval)) {
				reach_free(p->reach_at);
				p->reach_at = reach_new_at(p->c, p, gval);
			}
			double fv[PV_MAXV];
			int nf = 0;
			for (int v = 0; v < p->nv; v++)
				if (p->vop[v])
					fv[nf++] = gval[v];
			reach_seed(p->reach_at, fv, nf);
			reach_seed_lengths(p->reach_at, p, gval);
			found = reach_witness(p->reach_at, p, r, g, pr->l, val, got) ||
				reach_seed_witness(p->reach_at, p, (int)strlen(j->ops), r, g, pr->l, val, got);
			if (found)
				bprintf(j->trace, "      states folded at the grid point's params differ there\n");
		}
	}
	char *lifted = NULL;
	if (!found && grid && reach_lift_witness(p->reach, p, j->lname, gval, &lifted)) {
		/* no float lies on 7 * s = 3, but the float32 next to 3/7 does once rounded */
		bprintf(j->trace, "      lifts of single elements at the grid point's values differ there\n");
		verdict(out, PROOF_DISPROVED, r->desc[0] ? xasprintf("region %s: %s", r->desc, lifted) : lifted);
		if (r->desc[0])
			free(lifted);
		found = 1;
	} else if (found) {
		verdict(out, PROOF_DISPROVED, witness_how(j, r, pr, val, got));
	} else if (grid) {
		Buf b = {0};
		bprintf(&b, "%s differs in region %s, at ", pr->field, where);
		witness_str(j, gval, &b);
		char x[40], y[40];
		fmt_side(pr->l, ggot[0], x, sizeof x);
		fmt_side(pr->r, ggot[1], y, sizeof y);
		/* states of one position (two argmax states tied in m and idx)
		 * are no operands a fold merges: only those of disjoint runs count */
		int apart = reach_by_position(p->reach) && strlen(j->ops) > 1;
		bprintf(&b, " (%s by %s, %s by %s), but at no %s folded from %d drawn rows", x, j->lname, y, j->rname,
			apart ? "states of disjoint positions" : "state", reach_states(p->reach));
		/* an invariant may exclude it where the prover inferred some
		 * (others of their kind may hold), or took bool fields case by
		 * case (a case knows nothing of how the bool follows the reals:
		 * pos is s > 0); the assume where there is one (its bounds on
		 * the inputs bound the states); elsewhere nothing points to
		 * either, and the rows merely missed it */
		int in_case = 0;
		for (int v = 0; v < p->nv; v++)
			in_case |= p->vbool[v] && p->bval[v] >= 0;
		bprintf(&b, "%s", p->ninv || in_case ? ": an invariant may exclude the region"
				  : p->c->assume      ? ": the assume may exclude the region"
						      : ": the drawn rows did not reach it");
		open = b.s;
	} else {
		open = xasprintf("%s differs in region %s but no witness was found", pr->field, where);
	}
	prog_free(g);
	if (open) {
		bprintf(j->trace, "      left open: %s\n", open);
		j->nopen++;
		if (j->open)
			free(open);
		else
			j->open = open;
	}
	return found;
}

static void child_desc(Region *ch, const char *parent, const char *split, int rel)
{
	char s[200];
	snprintf(s, sizeof s, "%s", split);
	char *q = strstr(s, " ? ");
	if (q)
		q[1] = (char)rel;
	size_t n = strlen(parent);
	if (n + strlen(s) + 3 > sizeof ch->desc) {
		snprintf(ch->desc, sizeof ch->desc, "%s", parent);
		return; /* too long to print: the constraints still hold, only the label is short */
	}
	memcpy(ch->desc, parent, n);
	strcpy(ch->desc + n, n ? ", " : "");
	strcat(ch->desc, s);
}

static int push_children(Job *j, Ev *x, const Region *r, Region **stack, int *n)
{
	const char *desc;
	const Lin *d = ev_split(x, &desc);
	static const int rels[3] = {'<', '=', '>'};
	for (int i = 0; i < 3; i++) {
		Region *ch = malloc(sizeof *ch);
		if (!ch)
			abort();
		if (!lin_region_assume(j->p, r, d, rels[i], ch) || *n >= 3 * MAX_REGIONS) {
			free(ch);
			continue;
		}
		child_desc(ch, r->desc, desc, rels[i]);
		stack[(*n)++] = ch;
	}
	return 0;
}

/* One region: 1 when every pair is equal, 0 split pushed, -1 verdict set,
 * 2 left open (a difference no reachable state shows). */
static int prove_region(Job *j, const Region *r, const Pair *pr, int n, Region **stack, int *ns, Verdict *out)
{
	Ev *x = ev_new(j->p, r);
	int res = 1;
	char why[160];
	for (int i = 0; i < n && res == 1; i++) {
		Val *l = ev_eval(x, pr[i].l), *rv = ev_eval(x, pr[i].r);
		Val *bad = l->kind == V_SPLIT || l->kind == V_ERR ? l : rv;
		if (bad->kind == V_SPLIT) {
			push_children(j, x, r, stack, ns);
			res = 0;
			break;
		}
		if (bad->kind == V_ERR) {
			verdict(out, PROOF_UNKNOWN, xasprintf("%s (field %s)", bad->why, pr[i].field));
			res = -1;
			break;
		}
		int deg, eq = ev_val_equal(j->p, l, rv, &deg, why, sizeof why);
		if (j->trace) {
			char sl[300], sr[300];
			ev_val_str(j->p, l, sl, sizeof sl);
			ev_val_str(j->p, rv, sr, sizeof sr);
			bprintf(j->trace, "    %s: %s | %s: %s\n", j->lname, sl, j->rname, sr);
			bprintf(j->trace, "      %s %s\n", pr[i].field, eq == 1 ? "equal" : eq ? "undecided" : "DIFFER");
		}
		if (eq < 0) {
			verdict(out, PROOF_UNKNOWN, xasprintf("%s (field %s)", why, pr[i].field));
			res = -1;
		} else if (eq == 0) {
			res = disprove(j, r, &pr[i], out) ? -1 : 2;
		} else {
			j->nchecks++;
			if (deg > j->maxdeg)
				j->maxdeg = deg;
		}
	}
	ev_free(x);
	return res;
}

/* The words that name the invariants a proof assumed, before p->invtext. */
static const char *under(const Pv *p) { return p->ninv ? "; under invariants " : ""; }

static char *proved_how(Job *j)
{
	/* Schwartz-Zippel: a nonzero difference of degree d vanishes at PV_K
	 * independent random points with probability at most (d/p)^PV_K */
	double d = j->maxdeg > 0 ? j->maxdeg : 1;
	double lg = log10(j->nchecks ? j->nchecks : 1) + PV_K * (log10(d) - 61 * log10(2.0));
	if (j->ntopk && !j->nchecks)
		return xasprintf("top-k of one multiset of lists on both sides (%d field%s)", j->ntopk,
				 j->ntopk == 1 ? "" : "s");
	if (j->ntopk)
		return xasprintf("%d region%s; normal forms equal at %d random points mod 2^61-1 (error < 1e%d); "
				 "top-k of one multiset of lists in %d field%s%s%s",
				 j->regions, j->regions == 1 ? "" : "s", PV_K, (int)ceil(lg), j->ntopk,
				 j->ntopk == 1 ? "" : "s", under(j->p), j->p->invtext);
	return xasprintf("%d region%s; normal forms equal at %d random points mod 2^61-1 (error < 1e%d)%s%s",
			 j->regions, j->regions == 1 ? "" : "s", PV_K, (int)ceil(lg), under(j->p), j->p->invtext);
}

/* ---- top-k: a known associative and commutative operation ----
 *
 * topk(av, ai, bv, bi) is the top k of the multiset union of its operand
 * lists (ops.def), so nested merges of one k flatten into one multiset of
 * lists, the identity's lists drop out, and two sides whose multisets are
 * equal are equal, whatever the values: no region is needed. */

enum { TK_MAX = 64 };

typedef struct {
	Expr *v, *i;
} TkPair;

static int tk_empty(const Expr *v, const Expr *i)
{
	return v->op == EXPR_CONST && v->num == -INFINITY && i->op == EXPR_CONST && i->num == -1;
}

/* A state variable as one list: a field merged by topk(a.f, a.g, b.f,
 * b.g) is ranked with g (f the values, g the indices); the pair of the
 * same operand, and TOPK or TOPK_IDX for which of the two e is.  0 when e
 * is neither. */
static int tk_state_pair(Carrier *c, const Expr *e, TkPair *out)
{
	if (e->op != EXPR_VAR)
		return 0;
	const Var *var = ir_var(c->ir, e->k);
	if (var->kind != VAR_STATE)
		return 0;
	int w = var->which;
	for (int f = 0; f < c->nstate; f++) {
		Expr *m = c->merge[f];
		if (m->op != EXPR_TOPK)
			continue;
		for (int g = 0; g < c->nstate; g++) {
			Expr *want[4] = {ir_ref(c->ir, c->svar[STATE_A][f]), ir_ref(c->ir, c->svar[STATE_A][g]),
					 ir_ref(c->ir, c->svar[STATE_B][f]), ir_ref(c->ir, c->svar[STATE_B][g])};
			if (memcmp(m->a, want, sizeof want))
				continue;
			if (e->k != c->svar[w][f] && e->k != c->svar[w][g])
				return 0;
			*out = (TkPair){ir_ref(c->ir, c->svar[w][f]), ir_ref(c->ir, c->svar[w][g])};
			return e->k == c->svar[w][f] ? EXPR_TOPK : EXPR_TOPK_IDX;
		}
	}
	return 0;
}

static int tk_flatten(Expr *v, Expr *i, int k, TkPair *out, int n)
{
	if (n < 0 || tk_empty(v, i))
		return n;
	if (v->op == EXPR_TOPK && i->op == EXPR_TOPK_IDX && v->k == k && i->k == k &&
	    !memcmp(v->a, i->a, sizeof v->a))
		return tk_flatten(v->a[2], v->a[3], k, out, tk_flatten(v->a[0], v->a[1], k, out, n));
	if (n == TK_MAX)
		return -1;
	out[n] = (TkPair){v, i};
	return n + 1;
}

static int tk_cmp(const void *x, const void *y)
{
	const TkPair *a = x, *b = y;
	if (a->v->id != b->v->id)
		return a->v->id < b->v->id ? -1 : 1;
	return (a->i->id > b->i->id) - (a->i->id < b->i->id);
}

/* e as the values (or indices) of the top k of a multiset of lists: the
 * number of lists, -1 when e is not one. */
static int tk_form(Carrier *c, Expr *e, int *op, int *k, TkPair *out)
{
	int n;
	if (e->op == EXPR_TOPK || e->op == EXPR_TOPK_IDX) {
		*op = e->op, *k = e->k;
		n = tk_flatten(e->a[2], e->a[3], e->k, out, tk_flatten(e->a[0], e->a[1], e->k, out, 0));
	} else if ((*op = tk_state_pair(c, e, out))) { /* a state's own (sorted) list */
		*k = e->ty.len;
		return 1;
	} else {
		return -1;
	}
	if (n > 0)
		qsort(out, n, sizeof *out, tk_cmp);
	return n;
}

/* 1 when both sides of a pair are one top-k of one multiset of lists. */
static int tk_equal(Carrier *c, const Pair *pr)
{
	TkPair l[TK_MAX], r[TK_MAX];
	int lop = -1, rop = -2, lk = 0, rk = 0;
	int nl = tk_form(c, pr->l, &lop, &lk, l), nr = tk_form(c, pr->r, &rop, &rk, r);
	if (nl < 0 || nl != nr || lop != rop || lk != rk)
		return 0;
	for (int t = 0; t < nl; t++)
		if (l[t].v != r[t].v || l[t].i != r[t].i)
			return 0;
	return 1;
}

/* All regions of one obligation; 1 when proved, 0 when out has the verdict. */
static int prove_one(Job *j, const Pair *pr, Verdict *out)
{
	if (tk_equal(j->p->c, pr)) {
		bprintf(j->trace, "  %s: one top-k of one multiset of lists on both sides\n", pr->field);
		j->ntopk++;
		return 1;
	}
	Region **stack = malloc(3 * MAX_REGIONS * sizeof *stack);
	if (!stack)
		abort();
	int ns = 1, done = 0;
	stack[0] = malloc(sizeof **stack);
	lin_region_init(j->p, stack[0]);
	while (ns && !done) {
		Region *r = stack[--ns];
		if (j->regions >= MAX_REGIONS || now() - j->t0 > TIME_BUDGET) {
			verdict(out, PROOF_UNKNOWN, j->regions >= MAX_REGIONS
							    ? xasprintf("budget: regions > %d", MAX_REGIONS)
							    : xasprintf("budget: time > %.0f s", TIME_BUDGET));
			free(r);
			break;
		}
		bprintf(j->trace, "  %s, region %s\n", pr->field, r->desc[0] ? r->desc : "(all)");
		int res = prove_region(j, r, pr, 1, stack, &ns, out);
		if (res == 1)
			j->regions++;
		done = res < 0 || j->nopen >= MAX_OPEN;
		free(r);
	}
	while (ns)
		free(stack[--ns]);
	free(stack);
	return out->how == NULL;
}

/* Each field on its own: a field's regions come from its own comparisons
 * only.  A region left open makes the law unknown unless another field or
 * region disproves it. */
static void prove_fields(Job *j, const Pair *pr, int n, Verdict *out)
{
	j->p->overflow = 0;
	int i = 0;
	while (i < n && j->nopen < MAX_OPEN && prove_one(j, &pr[i], out))
		i++;
	if (out->how)
		free(j->open);
	else if (j->open)
		verdict(out, PROOF_UNKNOWN, j->open);
	else
		verdict(out, PROOF_PROVED, proved_how(j));
	j->open = NULL;
	j->nopen = 0;
}

/* Whether a pair reads base variable v. */
static int pairs_read(const Pv *p, const Pair *pr, int n, int v)
{
	for (int i = 0; i < n; i++)
		if (pv_reads(p, v, &pr[i].l, 1) || pv_reads(p, v, &pr[i].r, 1))
			return 1;
	return 0;
}

/* "a.r, b.r", or with the case's values "a.r=true, b.r=false": the bool
 * state fields split. */
static char *case_str(const Pv *p, const int *split, int ns, int values)
{
	Buf b = {0};
	bprintf(&b, "%s", "");
	for (int i = 0; i < ns; i++)
		bprintf(&b, "%s%c.%s%s", i ? ", " : "", p->vop[split[i]], p->vname[split[i]],
			!values ? "" : p->bval[split[i]] ? "=true" : "=false");
	return b.s;
}

/* A bool state field is no real either: where(b.r, ...) proved from one
 * branch says nothing of the other.  The bool fields of the operands a
 * pair reads are taken case by case, each false and true (a field with
 * one value on every nonempty state at that value): within a case they
 * are constants, and what the merge makes of them, || and && of them or
 * a comparison of reals (which the regions decide), is a condition the
 * evaluation decides.  The law is proved when it is in every case,
 * disproved when it is in one (the case named, its witness a state that
 * folds reach, with those bools), and unknown otherwise. */
static void prove_pairs(Job *j, const Pair *pr, int n, Verdict *out)
{
	Pv *p = j->p;
	int split[PV_MAXV] = {0}, ns = 0;
	char said[MAX_FIELDS] = {0};
	Buf only = {0};
	j->regions = j->maxdeg = j->nchecks = j->ntopk = 0;
	j->cases[0] = 0;
	for (int v = 0; v < p->nv; v++) {
		if (!p->vbool[v] || !strchr(j->ops, p->vop[v]) || !pairs_read(p, pr, n, v))
			continue;
		if (p->bonly[v] < 0) {
			split[ns++] = v;
			continue;
		}
		p->bval[v] = p->bonly[v];
		if (!said[p->vfield[v]]++) /* said of the field once, whichever operand */
			bprintf(&only, "%s%s %s", only.s ? ", " : "", p->vname[v], p->bonly[v] ? "true" : "false");
	}
	char *names = case_str(p, split, ns, 0);
	if (ns > BOOL_STATE_SPLIT_MAX) {
		verdict(out, PROOF_UNKNOWN, xasprintf("%d bool state fields of the operands (%s): 2^%d cases, "
						      "past the prover's %d", ns, names, ns, 1 << BOOL_STATE_SPLIT_MAX));
	} else if (!ns) {
		prove_fields(j, pr, n, out);
	} else {
		char *open = NULL;
		for (int k = 0; k < 1 << ns && out->status != PROOF_DISPROVED; k++) {
			pv_bool_case(p, split, ns, k);
			char *what = case_str(p, split, ns, 1);
			bprintf(j->trace, "  case %s\n", what);
			Verdict one = {PROOF_UNKNOWN, NULL, NULL};
			prove_fields(j, pr, n, &one);
			if (one.status == PROOF_DISPROVED)
				verdict(out, PROOF_DISPROVED, xasprintf("%s: %s", what, one.how));
			else if (one.status == PROOF_UNKNOWN && !open)
				open = xasprintf("%s: %s", what, one.how ? one.how : "");
			free(one.how);
			free(what);
		}
		if (out->status == PROOF_DISPROVED)
			free(open);
		else if (open)
			verdict(out, PROOF_UNKNOWN, open);
		else
			verdict(out, PROOF_PROVED, proved_how(j));
		snprintf(j->cases, sizeof j->cases, "every case of %s", names);
	}
	free(names);
	if (only.s) { /* the cases left out are named with the proof */
		char *t = xasprintf("%s on every nonempty state%s%s", only.s, j->cases[0] ? ", " : "", j->cases);
		snprintf(j->cases, sizeof j->cases, "%s", t);
		free(t);
	}
	free(only.s);
	if (j->cases[0] && out->status == PROOF_PROVED) {
		char *s = xasprintf("%s: %s", j->cases, out->how);
		verdict(out, PROOF_PROVED, s);
	}
	for (int v = 0; v < p->nv; v++)
		p->bval[v] = -1;
}

/* ---- the laws ---- */

typedef struct {
	Carrier *c;
	Pv p;
	Buf *trace;
	double t0;
	Expr *A[MAX_FIELDS], *B[MAX_FIELDS], *C[MAX_FIELDS], *E[MAX_FIELDS];
} Ctx;

static Job job(Ctx *x, const char *ops, const char *lname, const char *rname)
{
	return (Job){&x->p, x->trace, x->t0, ops, lname, rname, 0, 0, 0, NULL, 0, 0, ""};
}

static void law_assoc(Ctx *x, Verdict *out)
{
	Carrier *c = x->c;
	Expr *ab[MAX_FIELDS], *bc[MAX_FIELDS], *l[MAX_FIELDS], *r[MAX_FIELDS];
	Pair pr[MAX_FIELDS];
	merge_of(c, x->A, x->B, ab);
	merge_of(c, x->B, x->C, bc);
	merge_of(c, ab, x->C, l);
	merge_of(c, x->A, bc, r);
	for (int f = 0; f < c->nstate; f++)
		pr[f] = (Pair){l[f], r[f], c->state[f].name};
	bprintf(x->trace, "associative: (a+b)+c = a+(b+c) over nonempty states\n");
	Job j = job(x, "abc", "(a+b)+c", "a+(b+c)");
	prove_pairs(&j, pr, c->nstate, out);
}

static void law_comm(Ctx *x, Verdict *out)
{
	Carrier *c = x->c;
	Expr *ab[MAX_FIELDS], *ba[MAX_FIELDS];
	Pair pr[MAX_FIELDS];
	merge_of(c, x->A, x->B, ab);
	merge_of(c, x->B, x->A, ba);
	for (int f = 0; f < c->nstate; f++)
		pr[f] = (Pair){ab[f], ba[f], c->state[f].name};
	bprintf(x->trace, "commutative: a+b = b+a over nonempty states\n");
	Job j = job(x, "ab", "a+b", "b+a");
	prove_pairs(&j, pr, c->nstate, out);
}

static void fmt_num(double v, char *buf, size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "NaN");
	else
		ir_fmt_num(v, buf, n);
}

/* The first node of e's cone whose value at e+e is NaN while its operands are not. */
static char *nan_origin(Carrier *c, Expr *e, Map *m)
{
	Expr *stack[1024], *best = NULL;
	unsigned char *seen = calloc(e->id + 1, 1);
	if (!seen)
		abort();
	int n = 0;
	stack[n++] = e;
	while (n) {
		Expr *t = stack[--n];
		if (seen[t->id])
			continue;
		seen[t->id] = 1;
		Expr *v = ir_subst(c->ir, t, map_var, m);
		int nan = v->op == EXPR_CONST && isnan(v->num), opnan = 0;
		for (int i = 0; i < t->nargs; i++) {
			Expr *a = ir_subst(c->ir, t->a[i], map_var, m);
			opnan |= a->op == EXPR_CONST && isnan(a->num);
			if (n < 1024)
				stack[n++] = t->a[i];
		}
		if (nan && !opnan && (!best || t->id < best->id))
			best = t;
	}
	free(seen);
	if (!best)
		return xasprintf("NaN");
	char va[4][40];
	for (int i = 0; i < best->nargs; i++)
		fmt_num(ir_subst(c->ir, best->a[i], map_var, m)->num, va[i], sizeof va[i]);
	char *s = ir_str_max(c->ir, best, MSG_EXPR), *r;
	if (!best->nargs) /* an operand that is NaN itself: the identity's field */
		r = xasprintf("%s, which is NaN in the identity", s);
	else if (best->nargs == 2 && (ir_ops[best->op].flags & F_INFIX))
		r = xasprintf("%s %s %s in %s", va[0], ir_ops[best->op].printed, va[1], s);
	else
		r = xasprintf("%s(%s) in %s", ir_ops[best->op].printed, best->nargs ? va[0] : "", s);
	free(s);
	return r;
}

static int any_var(void *ctx, Expr *n)
{
	(void)ctx;
	return n->op == EXPR_VAR;
}

/* v, which holds no variable but was not folded (a top-k of constants),
 * evaluated: NULL where it is e's field f, else why not. */
static char *unfolded_field(Carrier *c, Expr *v, const Expr *e, int f)
{
	Prog *g = prog_new(c->ir, &v, 1);
	prog_run(g, MODE_F32);
	const double *got = prog_root(g, 0, NULL);
	char *bad = NULL, x[40], y[40];
	for (int k = 0; k < (v->ty.len ? v->ty.len : 1) && !bad; k++) {
		if (got[k] == e->num || (isnan(got[k]) && isnan(e->num)))
			continue;
		fmt_num(got[k], x, sizeof x);
		fmt_num(e->num, y, sizeof y);
		if (v->ty.len)
			bad = xasprintf("e+e gives %s[%d] = %s, identity %s", c->state[f].name, k, x, y);
		else
			bad = xasprintf("e+e gives %s = %s, identity %s", c->state[f].name, x, y);
	}
	prog_free(g);
	return bad;
}

/* e+e = e, folded in the spec's types: NULL when it holds, else why not
 * (NULL too, with *open set, where the params decide it). */
static char *empty_merge(Ctx *x, char **open)
{
	Carrier *c = x->c;
	Map m = {calloc(ir_nvars(c->ir) + 1, sizeof(Expr *))};
	if (!m.by_var)
		abort();
	for (int f = 0; f < c->nstate; f++)
		m.by_var[c->svar[STATE_A][f]] = m.by_var[c->svar[STATE_B][f]] = x->E[f];
	char *bad = NULL;
	for (int f = 0; f < c->nstate && !bad; f++) {
		Expr *v = ir_subst(c->ir, c->merge[f], map_var, &m);
		char got[40], want[40];
		if (v->op != EXPR_CONST && x->E[f]->op == EXPR_CONST && !ir_contains(v, any_var, NULL)) {
			bad = unfolded_field(c, v, x->E[f], f);
		} else if (v->op != EXPR_CONST) {
			/* it depends on params: not folded here, the trials fold it */
			char *s = ir_str_max(c->ir, v, MSG_EXPR);
			*open = xasprintf("e+e gives %s = %s, which the params decide", c->state[f].name, s);
			free(s);
			break;
		} else if (isnan(v->num)) {
			char *o = nan_origin(c, c->merge[f], &m);
			bad = xasprintf("e+e gives NaN at %s: %s", c->state[f].name, o);
			free(o);
		} else if (v->num != x->E[f]->num) {
			fmt_num(v->num, got, sizeof got);
			fmt_num(x->E[f]->num, want, sizeof want);
			bad = xasprintf("e+e gives %s = %s, identity %s", c->state[f].name, got, want);
		}
		bprintf(x->trace, "  e+e: %s folds to %g\n", c->state[f].name, v->op == EXPR_CONST ? v->num : NAN);
	}
	free(m.by_var);
	return bad;
}

static void law_identity(Ctx *x, Verdict *out)
{
	Carrier *c = x->c;
	Expr *ea[MAX_FIELDS], *ae[MAX_FIELDS];
	Pair pr[MAX_FIELDS];
	bprintf(x->trace, "identity: e+e = e, e+a = a, a+e = a\n");
	char *open = NULL, *bad = empty_merge(x, &open);
	if (bad || open) {
		verdict(out, bad ? PROOF_DISPROVED : PROOF_UNKNOWN, bad ? bad : open);
		return;
	}
	merge_of(c, x->E, x->A, ea);
	merge_of(c, x->A, x->E, ae);
	for (int f = 0; f < c->nstate; f++)
		pr[f] = (Pair){ea[f], x->A[f], c->state[f].name};
	Job j = job(x, "a", "e+a", "a");
	prove_pairs(&j, pr, c->nstate, out);
	if (out->status == PROOF_DISPROVED)
		return;
	int regions = j.regions;
	char cases[sizeof j.cases];
	memcpy(cases, j.cases, sizeof cases);
	for (int f = 0; f < c->nstate; f++)
		pr[f] = (Pair){ae[f], x->A[f], c->state[f].name};
	j = job(x, "a", "a+e", "a");
	Verdict right = {PROOF_UNKNOWN, NULL, NULL};
	prove_pairs(&j, pr, c->nstate, &right);
	/* e+a left unknown: a+e may still disprove the law */
	if (right.status == PROOF_DISPROVED || (out->status == PROOF_PROVED && right.status != PROOF_PROVED))
		verdict(out, right.status, right.how);
	else if (out->status == PROOF_PROVED)
		verdict(out, PROOF_PROVED,
			xasprintf("e+e = e folded; %s%se+a = a and a+e = a in %d regions, normal forms equal%s%s",
				  cases, cases[0] ? ": " : "", regions + j.regions, under(&x->p), x->p.invtext));
	if (out->how != right.how)
		free(right.how);
	/* the regions are over finite states: a lift of an infinite input
	 * that ties with the identity's own infinity is looked at apart */
	if (out->status == PROOF_PROVED) {
		out->except = reach_identity_edge(c);
		if (out->except)
			bprintf(x->trace, "  identity at infinite lifts: %s\n", out->except);
	}
}

/* A law proved over nonempty states reaches the empty state through the
 * identity laws; where those are disproved, the law is proved again with
 * the identity in each place of its operands (the trials draw it there):
 * f kept by where(b.pre == b.n + a.n, a.f, b.f) is associative over
 * nonempty states, but (e+a)+b and e+(a+b) differ.  Each case is the
 * law's two sides over the letters in it, e for the identity. */
typedef struct {
	const char *l, *r;
} Sides;

static const Sides assoc_empty[] = {{"(e+a)+b", "e+(a+b)"}, {"(a+e)+b", "a+(e+b)"}, {"(a+b)+e", "a+(b+e)"},
				    {"(e+e)+a", "e+(e+a)"}, {"(e+a)+e", "e+(a+e)"}, {"(a+e)+e", "a+(e+e)"}};
static const Sides comm_empty[] = {{"e+a", "a+e"}};

/* The fields of side t ("(e+a)+b", "a+e": states e, a, b; one merge of
 * two, or of one and a parenthesized two) in out. */
static void side_of(Ctx *x, const char *t, Expr **out)
{
	Expr **st[3] = {x->E, x->A, x->B}, *in[MAX_FIELDS];
	const char *at = t[0] == '(' ? t + 1 : t;
	Expr **l = st[at[0] == 'e' ? 0 : at[0] == 'a' ? 1 : 2], **r = st[at[2] == 'e' ? 0 : at[2] == 'a' ? 1 : 2];
	if (strlen(t) == 3) {
		merge_of(x->c, l, r, out);
		return;
	}
	if (t[0] == '(') {
		merge_of(x->c, l, r, in);
		merge_of(x->c, in, st[t[6] == 'e' ? 0 : t[6] == 'a' ? 1 : 2], out);
		return;
	}
	Expr **m = st[t[3] == 'e' ? 0 : t[3] == 'a' ? 1 : 2], **n = st[t[5] == 'e' ? 0 : t[5] == 'a' ? 1 : 2];
	merge_of(x->c, m, n, in);
	merge_of(x->c, l, in, out);
}

/* Associativity and commutativity are proved over nonempty states, and
 * the identity's laws carry them to the empty state.  Where those laws are
 * disproved, or not proved, the law is proved again with the identity in
 * each place; what is not proved so is no proof of the law. */
static void with_identity(Ctx *x, const Sides *cases, int n, ProofStatus idst, Verdict *out)
{
	if (out->status != PROOF_PROVED || idst == PROOF_PROVED)
		return;
	const char *whose = idst == PROOF_DISPROVED ? "disproved" : "unknown";
	Carrier *c = x->c;
	for (int k = 0; k < n; k++) {
		Expr *l[MAX_FIELDS], *r[MAX_FIELDS];
		Pair pr[MAX_FIELDS];
		side_of(x, cases[k].l, l);
		side_of(x, cases[k].r, r);
		for (int f = 0; f < c->nstate; f++)
			pr[f] = (Pair){l[f], r[f], c->state[f].name};
		bprintf(x->trace, "  with the identity, whose laws are %s: %s = %s\n", whose, cases[k].l, cases[k].r);
		Job j = job(x, strchr(cases[k].l, 'b') ? "ab" : "a", cases[k].l, cases[k].r);
		Verdict v = {PROOF_UNKNOWN, NULL, NULL};
		prove_pairs(&j, pr, c->nstate, &v);
		if (v.status != PROOF_PROVED) {
			verdict(out, v.status,
				v.status == PROOF_DISPROVED
					? v.how
					: xasprintf("over nonempty states; with the identity, whose laws are %s, "
						    "%s = %s is unknown: %s",
						    whose, cases[k].l, cases[k].r, v.how ? v.how : ""));
			if (v.status != PROOF_DISPROVED)
				free(v.how);
			return;
		}
		free(v.how);
	}
	char *how = xasprintf("%s; and with the identity in each place (its own laws %s)", out->how, whose);
	verdict(out, PROOF_PROVED, how);
}

/* ---- certificates ---- */

static Expr *phi(Carrier *c, int k, Expr **st) { return subst2(c, c->cert_into[k].e, STATE_SELF, st, STATE_SELF, NULL); }

static const char *monoid_name(Op op)
{
	return op == EXPR_ADD ? "+" : op == EXPR_MUL ? "*" : op == EXPR_MAX ? "max" : "min";
}

static char *monoid_str(Carrier *c)
{
	Buf b = {0};
	bprintf(&b, "(");
	for (int k = 0; k < c->ncert; k++)
		bprintf(&b, "%s%s", k ? ", " : "", monoid_name(c->cert_monoid[k]));
	bprintf(&b, ")");
	return b.s;
}

/* phi(e) is the monoid's identity, or one on phi's image: 0 is no
 * identity of max over the reals, but is over values an invariant keeps
 * at or above 0 (max(phi(a).s, 0) = phi(a).s for s = abs(x)).  NULL when
 * it holds; *image set where only the image's proof shows it. */
static char *cert_unit(Ctx *x, int *image, int *sure)
{
	Carrier *c = x->c;
	*image = 0;
	*sure = 1;
	for (int k = 0; k < c->ncert; k++) {
		Expr *v = phi(c, k, x->E);
		Op op = c->cert_monoid[k];
		double u = ir_ops[op].unit;
		if (v->op == EXPR_CONST && v->num == u)
			continue;
		Pair pr = {ir_bin(c->ir, op, phi(c, k, x->A), v), phi(c, k, x->A), c->cert_into[k].name};
		Job j = job(x, "a", "phi(a)*phi(e)", "phi(a)");
		Verdict on = {PROOF_UNKNOWN, NULL, NULL};
		bprintf(x->trace, "  phi(e).%s is not %g: the identity on phi's image?\n",
			c->cert_into[k].name, u);
		prove_pairs(&j, &pr, 1, &on);
		free(on.how);
		if (on.status == PROOF_PROVED) {
			*image = 1;
			continue;
		}
		char *s = ir_str_max(c->ir, v, MSG_EXPR), *r;
		/* a value left in params (0 * exp(-inf * beta), 0 where an
		 * assume keeps beta > 0) may be the identity still */
		*sure = v->op == EXPR_CONST;
		if (*sure)
			r = xasprintf("phi(e).%s = %s, not the identity of %s", c->cert_into[k].name, s, monoid_name(op));
		else
			r = xasprintf("phi(e).%s = %s, which is not shown to be the identity of %s", c->cert_into[k].name, s,
				      monoid_name(op));
		free(s);
		return r;
	}
	return NULL;
}

static void law_cert(Ctx *x, Verdict *out)
{
	Carrier *c = x->c;
	Expr *ab[MAX_FIELDS];
	Pair pr[2 * MAX_FIELDS];
	int n = 0;
	bprintf(x->trace, "certificate: phi(a+b) = phi(a)*phi(b), back(phi(a)) = a, phi(e) = 1\n");
	int image, sure;
	char *bad = cert_unit(x, &image, &sure);
	if (bad) {
		verdict(out, sure ? PROOF_DISPROVED : PROOF_UNKNOWN, bad);
		return;
	}
	merge_of(c, x->A, x->B, ab);
	for (int k = 0; k < c->ncert && n < MAX_FIELDS; k++) {
		Expr *l = phi(c, k, ab), *r = ir_bin(c->ir, c->cert_monoid[k], phi(c, k, x->A), phi(c, k, x->B));
		pr[n++] = (Pair){l, r, c->cert_into[k].name};
	}
	Job j = job(x, "ab", "phi(a+b)", "phi(a)*phi(b)");
	prove_pairs(&j, pr, n, out);
	if (out->status != PROOF_PROVED)
		return;
	int regions = j.regions;
	char cases[sizeof j.cases];
	memcpy(cases, j.cases, sizeof cases);
	Map m = {calloc(ir_nvars(c->ir) + 1, sizeof(Expr *))};
	if (!m.by_var)
		abort();
	for (int k = 0; k < c->ncert; k++)
		m.by_var[c->cert_var[k]] = phi(c, k, x->A);
	for (int f = 0; f < c->nstate; f++)
		pr[f] = (Pair){ir_subst(c->ir, c->cert_back[f], map_var, &m), x->A[f], c->state[f].name};
	free(m.by_var);
	j = job(x, "a", "back(phi(a))", "a");
	verdict(out, PROOF_UNKNOWN, NULL);
	prove_pairs(&j, pr, c->nstate, out);
	if (out->status == PROOF_PROVED)
		verdict(out, PROOF_PROVED,
			xasprintf("%s%sphi(a+b) = phi(a)*phi(b) in %d regions; back(phi(a)) = a in %d; phi(e) is the identity%s%s%s",
				  cases, cases[0] ? ": " : "", regions, j.regions, image ? " on phi's image" : "", under(&x->p),
				  x->p.invtext));
}

/* ---- the report ---- */

const char *prove_status_name(ProofStatus s)
{
	return s == PROOF_PROVED ? "proved" : s == PROOF_DISPROVED ? "disproved" : "unknown";
}

static void add_line(ProofReport *r, const char *law, Verdict *v)
{
	r->line[r->n++] = (ProofLine){law, v->status, v->how ? v->how : xasprintf("no reason"), v->except};
	v->how = v->except = NULL;
}

static void set_all(ProofReport *r, Carrier *c, const char *why)
{
	static const char *laws[] = {"associative", "identity", "commutative", "certificate"};
	for (int i = 0; i < 4; i++) {
		if ((i == 2 && !(c->laws & LAW_COMMUTATIVE)) || (i == 3 && !c->has_cert))
			continue;
		r->line[r->n++] = (ProofLine){laws[i], PROOF_UNKNOWN, xasprintf("%s", why), NULL};
	}
}

static void prove_laws(Ctx *x, ProofReport *r)
{
	Carrier *c = x->c;
	Verdict cert = {PROOF_UNKNOWN, NULL, NULL}, v = {PROOF_UNKNOWN, NULL, NULL};
	if (c->has_cert)
		law_cert(x, &cert);
	char *mon = c->has_cert ? monoid_str(c) : NULL;
	if (cert.status == PROOF_PROVED)
		verdict(&v, PROOF_PROVED, xasprintf("transport into %s", mon));
	else
		law_assoc(x, &v);
	Verdict id = {PROOF_UNKNOWN, NULL, NULL};
	law_identity(x, &id);
	with_identity(x, assoc_empty, 6, id.status, &v);
	add_line(r, "associative", &v);
	add_line(r, "identity", &id);
	if (c->laws & LAW_COMMUTATIVE) {
		verdict(&v, PROOF_UNKNOWN, NULL);
		if (cert.status == PROOF_PROVED)
			verdict(&v, PROOF_PROVED, xasprintf("transport into %s", mon));
		else
			law_comm(x, &v);
		with_identity(x, comm_empty, 1, id.status, &v);
		add_line(r, "commutative", &v);
	}
	if (c->has_cert)
		add_line(r, "certificate", &cert);
	free(mon);
}

/* bools_open: the count of free bool params where it is past
 * BOOL_CASES_MAX, their cases not enumerated; else 0 */
static int prove_case(Carrier *c, const char *fixed, int bools_open, int want_trace, ProofReport *r)
{
	memset(r, 0, sizeof *r);
	if (!c)
		return -1;
	if (c->nstate > MAX_FIELDS) { /* left to the trials, as any law the prover cannot decide */
		char why[96];
		snprintf(why, sizeof why, "%d state fields; the prover takes up to %d", c->nstate, MAX_FIELDS);
		set_all(r, c, why);
		return 0;
	}
	Buf trace = {0};
	Ctx *x = calloc(1, sizeof *x);
	if (!x)
		return -1;
	x->c = c;
	x->t0 = now();
	x->trace = want_trace ? &trace : NULL;
	refs(c, STATE_A, x->A);
	refs(c, STATE_B, x->B);
	refs(c, STATE_C, x->C);
	for (int f = 0; f < c->nstate; f++)
		x->E[f] = c->identity[f];
	if (pv_init(&x->p, c) < 0)
		set_all(r, c, "budget: too many variables");
	else {
		x->p.pfixed = fixed;
		x->p.bools_open = bools_open;
		if (x->p.ninv)
			bprintf(x->trace, "invariants of nonempty states (every lift keeps them, merge preserves them): %s\n",
				x->p.invtext);
		prove_laws(x, r);
	}
	free(x->p.var_of);
	free(x->p.isign);
	free(x->p.fm_rows);
	reach_free(x->p.reach);
	reach_free(x->p.reach_at);
	r->seconds = now() - x->t0;
	r->trace = want_trace ? (trace.s ? trace.s : xasprintf("%s", "")) : NULL;
	free(x);
	return 0;
}

/* ---- params fixed by value ---- */

/* A bool param is no real: where(flag, u, v) proved from one branch says
 * nothing of the other.  So params given a value (check --param) are
 * replaced by it, and the bool params left are proved case by case, every
 * assignment in turn: a law is proved when it is in every case, disproved
 * when it is in one (the case named), and otherwise unknown. */

typedef struct {
	Carrier *c;
	const double *val; /* by param */
	const char *fixed; /* by param: 1 when val holds its value */
} Fix;

static Expr *fix_param(void *ctx, Expr *e)
{
	Fix *f = ctx;
	for (int p = 0; p < f->c->nparams; p++)
		if (f->c->params[p].var == e->k && f->fixed[p])
			return ir_const(f->c->ir, e->ty, ir_round(f->c->params[p].storage, f->val[p]));
	return NULL;
}

static Expr *fix_expr(Fix *f, Expr *e) { return e ? ir_subst(f->c->ir, e, fix_param, f) : NULL; }

static Expr **fix_list(Fix *f, Expr **es, int n)
{
	if (!es)
		return NULL;
	Expr **out = calloc(n ? n : 1, sizeof *out);
	if (!out)
		abort();
	for (int i = 0; i < n; i++)
		out[i] = fix_expr(f, es[i]);
	return out;
}

/* c with the fixed params replaced in everything the prover reads; the
 * copy shares the rest of c.  Freed with unfix. */
static Carrier fixed_copy(Fix *f)
{
	Carrier *c = f->c, k = *c;
	k.identity = fix_list(f, c->identity, c->nstate);
	k.lift = fix_list(f, c->lift, c->nstate);
	k.merge = fix_list(f, c->merge, c->nstate);
	k.assume = fix_expr(f, c->assume);
	k.cert_back = fix_list(f, c->cert_back, c->has_cert ? c->nstate : 0);
	k.cert_into = NULL;
	if (c->has_cert) {
		k.cert_into = calloc(c->ncert ? c->ncert : 1, sizeof *k.cert_into);
		if (!k.cert_into)
			abort();
		for (int i = 0; i < c->ncert; i++) {
			k.cert_into[i] = c->cert_into[i];
			k.cert_into[i].e = fix_expr(f, c->cert_into[i].e);
		}
	}
	return k;
}

static void unfix(Carrier *k)
{
	free(k->identity);
	free(k->lift);
	free(k->merge);
	free(k->cert_back);
	free(k->cert_into);
}

/* "flag=true, scale=0.5": the params fixed, in the spec's order. */
static char *fixed_str(const Carrier *c, const double *val, const char *fixed)
{
	Buf b = {0};
	bprintf(&b, "%s", "");
	for (int p = 0; p < c->nparams; p++) {
		if (!fixed[p])
			continue;
		const char *sep = b.len ? ", " : "";
		if (c->params[p].storage == TY_BOOL)
			bprintf(&b, "%s%s=%s", sep, c->params[p].name, val[p] != 0 ? "true" : "false");
		else
			bprintf(&b, "%s%s=%.17g", sep, c->params[p].name, ir_round(c->params[p].storage, val[p]));
	}
	return b.s;
}

/* Fold case k (named by `what`) into the combined report r. */
static void combine(ProofReport *r, ProofReport *k, const char *what, int first)
{
	if (first) {
		r->n = k->n;
		for (int i = 0; i < k->n; i++) {
			r->line[i] = (ProofLine){k->line[i].law, k->line[i].status,
						 xasprintf("%s: %s", what, k->line[i].how ? k->line[i].how : ""),
						 k->line[i].except ? xasprintf("%s: %s", what, k->line[i].except) : NULL};
		}
		return;
	}
	for (int i = 0; i < r->n && i < k->n; i++) {
		ProofLine *l = &r->line[i], *m = &k->line[i];
		const char *how = m->how ? m->how : "";
		if (!l->except && m->except) /* the first case with an exception says it */
			l->except = xasprintf("%s: %s", what, m->except);
		/* a disproof stands for the law; a proof needs every case; otherwise the first open case says why */
		if (l->status == PROOF_DISPROVED || m->status == PROOF_PROVED) {
			if (l->status == PROOF_PROVED) {
				char *s = xasprintf("%s; %s: %s", l->how, what, how);
				free(l->how);
				l->how = s;
			}
			continue;
		}
		if (m->status == PROOF_DISPROVED || l->status == PROOF_PROVED) {
			free(l->how);
			l->status = m->status;
			l->how = xasprintf("%s: %s", what, how);
		}
	}
}

static int is_var(void *ctx, Expr *n) { return n->op == EXPR_VAR && n->k == *(int *)ctx; }

static int list_uses(Expr *const *es, int n, int var)
{
	for (int i = 0; es && i < n; i++)
		if (es[i] && ir_contains(es[i], is_var, &var))
			return 1;
	return 0;
}

int pv_reads(const Pv *p, int v, Expr *const *es, int n)
{
	return list_uses(es, n, p->c->svar[p->vop[v] - 'a'][p->vfield[v]]);
}

void pv_bool_case(Pv *p, const int *split, int ns, int k)
{
	for (int i = 0; i < ns; i++)
		p->bval[split[i]] = (int8_t)((k >> i) & 1);
}

/* Whether the prover reads param var (a param of the mask or finalize
 * only is neither fixed nor split, nor named in the lines). */
static int prover_uses(const Carrier *c, int var)
{
	int n = c->nstate;
	if (list_uses(c->identity, n, var) || list_uses(c->lift, n, var) || list_uses(c->merge, n, var) ||
	    list_uses(&c->assume, 1, var) || (c->has_cert && list_uses(c->cert_back, n, var)))
		return 1;
	for (int i = 0; c->has_cert && i < c->ncert; i++)
		if (list_uses(&c->cert_into[i].e, 1, var))
			return 1;
	return 0;
}

/* Whether the assume, its fixed params replaced, is false whatever the
 * inputs: a case no input reaches, where every law holds. */
static int assume_excludes(const Carrier *k) { return k->assume && k->assume->op == EXPR_CONST && k->assume->num == 0; }

int prove_carrier_at(Carrier *c, const Define *params, int nparams, int flags, ProofReport *r)
{
	memset(r, 0, sizeof *r);
	if (!c)
		return -1;
	int want_trace = flags & PROVE_TRACE;
	int np = c->nparams;
	double *val = calloc(np ? np : 1, sizeof *val);
	char *fixed = calloc(np ? np : 1, 1);
	int free_bool[BOOL_CASES_MAX], nfree = 0, over = 0, nbool = 0;
	if (!val || !fixed)
		abort();
	for (int k = 0; k < nparams; k++)
		for (int p = 0; p < np; p++)
			if (!strcmp(c->params[p].name, params[k].name)) {
				char *end;
				val[p] = draw_param_value(params[k].value, &end);
				/* a bad value is the trials' to report */
				fixed[p] = *params[k].value && !*end && prover_uses(c, c->params[p].var);
			}
	for (int p = 0; p < np && !(flags & PROVE_BOOLS_OPEN); p++)
		if (c->params[p].storage == TY_BOOL && !fixed[p] && prover_uses(c, c->params[p].var)) {
			nbool++;
			if (nfree < BOOL_CASES_MAX)
				free_bool[nfree++] = p;
			else
				over = 1;
		}
	if (over) /* too many cases: the bool params stay open, and ev_var names one */
		nfree = 0;
	int any = 0;
	for (int p = 0; p < np; p++)
		any |= fixed[p];
	if (!any && !nfree) {
		free(val);
		free(fixed);
		return prove_case(c, NULL, over ? nbool : 0, want_trace, r);
	}
	Buf trace = {0};
	double seconds = 0;
	int ran = 0, same[PROOF_MAX_LINES];
	char *first[PROOF_MAX_LINES] = {0}; /* the first case's hows: a proof alike in every case is said once */
	char *given = fixed_str(c, val, fixed), *names = NULL;
	for (int i = 0; i < nfree; i++) {
		char *t = xasprintf("%s%s%s", names ? names : "", names ? ", " : "", c->params[free_bool[i]].name);
		free(names);
		names = t;
	}
	for (int k = 0; k < 1 << nfree; k++) {
		for (int i = 0; i < nfree; i++) {
			val[free_bool[i]] = (k >> i) & 1;
			fixed[free_bool[i]] = 1;
		}
		Fix f = {c, val, fixed};
		Carrier kc = fixed_copy(&f);
		char *what = fixed_str(c, val, fixed);
		if (assume_excludes(&kc)) {
			bprintf(want_trace ? &trace : NULL, "---- with %s the assume is false: no state to prove\n", what);
			unfix(&kc);
			free(what);
			continue;
		}
		ProofReport one;
		int rc = prove_case(&kc, fixed, over ? nbool : 0, want_trace, &one);
		unfix(&kc);
		if (rc) {
			prove_report_free(r);
			free(trace.s);
			free(what);
			free(val);
			free(fixed);
			free(given);
			free(names);
			for (int i = 0; i < PROOF_MAX_LINES; i++)
				free(first[i]);
			return rc;
		}
		for (int i = 0; i < one.n; i++) {
			const char *h = one.line[i].how ? one.line[i].how : "";
			if (!ran)
				first[i] = xasprintf("%s", h), same[i] = 1;
			else
				same[i] &= first[i] && !strcmp(first[i], h);
		}
		combine(r, &one, what, ran++ == 0);
		if (want_trace)
			bprintf(&trace, "---- with %s\n%s", what, one.trace ? one.trace : "");
		seconds += one.seconds;
		free(what);
		prove_report_free(&one);
	}
	for (int i = 0; i < r->n && ran > 1; i++)
		if (r->line[i].status == PROOF_PROVED && same[i]) {
			free(r->line[i].how);
			r->line[i].how = xasprintf("%s%severy case of %s: %s", given, *given ? "; " : "", names, first[i]);
		}
	for (int i = 0; i < PROOF_MAX_LINES; i++)
		free(first[i]);
	free(given);
	free(names);
	free(val);
	free(fixed);
	if (!ran) { /* the assume holds in no case: the trials report it */
		free(trace.s);
		return prove_case(c, NULL, 0, want_trace, r);
	}
	r->seconds = seconds;
	r->trace = want_trace ? (trace.s ? trace.s : xasprintf("%s", "")) : NULL;
	return 0;
}

int prove_carrier(Carrier *c, int want_trace, ProofReport *r)
{
	return prove_carrier_at(c, NULL, 0, want_trace ? PROVE_TRACE : 0, r);
}

/* The same obligations as the laws' (prove_pairs: regions, normal forms,
 * witnesses folded from drawn rows), for pairs a caller built. */
ProofStatus prove_equal(Carrier *c, Expr *const *x, Expr *const *y, const char *const *names, int n, const char *lname,
			const char *rname, char *how, size_t hn)
{
	Verdict v = {PROOF_UNKNOWN, NULL, NULL};
	Pair pr[MAX_FIELDS];
	Ctx *k = calloc(1, sizeof *k);
	if (!k)
		abort();
	k->c = c;
	k->t0 = now();
	if (n > MAX_FIELDS || c->nstate > MAX_FIELDS)
		verdict(&v, PROOF_UNKNOWN, xasprintf("%d pairs of %d state fields; the prover takes up to %d", n,
						     c->nstate, MAX_FIELDS));
	else if (pv_init(&k->p, c) < 0)
		verdict(&v, PROOF_UNKNOWN, xasprintf("budget: too many variables"));
	else {
		for (int i = 0; i < n; i++)
			pr[i] = (Pair){x[i], y[i], names[i]};
		Job j = job(k, "ab", lname, rname);
		prove_pairs(&j, pr, n, &v);
	}
	snprintf(how, hn, "%s", v.how ? v.how : "no reason");
	free(v.how);
	free(k->p.var_of);
	free(k->p.isign);
	free(k->p.fm_rows);
	reach_free(k->p.reach);
	reach_free(k->p.reach_at);
	free(k);
	return v.status;
}

void prove_report_free(ProofReport *r)
{
	for (int i = 0; i < r->n; i++) {
		free(r->line[i].how);
		free(r->line[i].except);
	}
	free(r->trace);
	memset(r, 0, sizeof *r);
}
