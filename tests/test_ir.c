/* test_ir.c: the expression DAG, printer, folding and interpreter. */
#include <float.h>
#include <string.h>

#include "compiler/devices/run.h"
#include "ir/ir.h"
#include "testutil.h"

static Ir *ir;
static Expr *x, *y;

static void setup(void)
{
	ir = ir_new();
	x = ir_ref(ir, ir_add_var(ir, "x", VAR_ELEM, 0, 0, ty_scalar(TY_F32), TY_F32));
	y = ir_ref(ir, ir_add_var(ir, "y", VAR_ELEM, 0, 1, ty_scalar(TY_F32), TY_F32));
}

static void teardown(void) { ir_free(ir); }

TestSuite(ir, .init = setup, .fini = teardown);

Test(ir, hash_consing_shares_equal_nodes)
{
	Expr *a = ir_bin(ir, EXPR_ADD, x, ir_un(ir, EXPR_EXP, y));
	Expr *b = ir_bin(ir, EXPR_ADD, x, ir_un(ir, EXPR_EXP, y));
	cr_assert_eq(a, b);
	cr_assert_neq(a, ir_bin(ir, EXPR_ADD, ir_un(ir, EXPR_EXP, y), x), "operand order is kept");
	int n = ir_nnodes(ir);
	(void)ir_bin(ir, EXPR_ADD, x, ir_un(ir, EXPR_EXP, y));
	cr_assert_eq(ir_nnodes(ir), n, "no new node for an existing expression");
}

Test(ir, ids_are_topological)
{
	Expr *e = ir_bin(ir, EXPR_MUL, ir_bin(ir, EXPR_ADD, x, y), x);
	cr_assert_gt(e->id, e->a[0]->id);
	cr_assert_gt(e->a[0]->id, e->a[0]->a[1]->id);
}

Test(ir, constant_folding)
{
	Ty f = ty_scalar(TY_F32);
	Expr *e = ir_node(ir, EXPR_ADD, f, 0, ir_const(ir, f, 2), ir_const(ir, f, 3), NULL);
	cr_assert_eq(e->op, EXPR_CONST);
	cr_assert_float_eq(e->num, 5.0, 0);
	Expr *n = ir_node(ir, EXPR_NEG, f, 0, ir_const(ir, f, INFINITY), NULL, NULL);
	cr_assert(n->op == EXPR_CONST && n->num == -INFINITY);
	Expr *third = ir_node(ir, EXPR_DIV, f, 0, ir_const(ir, f, 1), ir_const(ir, f, 3), NULL);
	cr_assert_eq(third->num, (double)(1.0f / 3.0f), "folded in the node's type");
}

/* where with a fixed condition is its branch, and where(c, u, u) is u
 * (a bool param fixed by the prover, e+e of a where); && and || with one
 * side fixed are decided or the other side.  The vector form keeps its
 * type, so a scalar branch of a vector where is not picked. */
Test(ir, where_folds_a_fixed_choice)
{
	Ty f = ty_scalar(TY_F32), b = ty_scalar(TY_BOOL);
	Expr *c = ir_bin(ir, EXPR_LT, x, y);
	cr_assert_eq(ir_node(ir, EXPR_WHERE, f, 0, ir_const(ir, b, 1), x, y), x);
	cr_assert_eq(ir_node(ir, EXPR_WHERE, f, 0, ir_const(ir, b, 0), x, y), y);
	cr_assert_eq(ir_node(ir, EXPR_WHERE, f, 0, c, x, x), x);
	Expr *z = ir_node(ir, EXPR_WHERE, f, 0, c, ir_const(ir, f, 0), ir_const(ir, f, 0));
	cr_assert(z->op == EXPR_CONST && z->num == 0);
	cr_assert_eq(ir_node(ir, EXPR_WHERE, f, 0, c, x, y)->op, EXPR_WHERE, "an open condition stays");
	Expr *t = ir_const(ir, b, 1), *f0 = ir_const(ir, b, 0);
	cr_assert_eq(ir_node(ir, EXPR_AND, b, 0, t, c, NULL), c, "true && c");
	cr_assert_eq(ir_node(ir, EXPR_OR, b, 0, c, f0, NULL), c, "c || false");
	Expr *ff = ir_node(ir, EXPR_AND, b, 0, c, f0, NULL), *tt = ir_node(ir, EXPR_OR, b, 0, t, c, NULL);
	cr_assert(ff->op == EXPR_CONST && ff->num == 0 && tt->op == EXPR_CONST && tt->num == 1);
	Ty v = ty_vec(TY_F32, 4, -1);
	Expr *w = ir_node(ir, EXPR_WHERE, v, 0, ir_const(ir, b, 1), x, ir_const(ir, v, 2));
	cr_assert_eq(w->op, EXPR_WHERE, "x is a scalar, the where a vector");
}

Test(ir, inf_minus_inf_rule)
{
	cr_assert_eq(ir_eval_op(EXPR_SUB, TY_F64, 0, -INFINITY, -INFINITY, 0), -INFINITY);
	cr_assert_eq(ir_eval_op(EXPR_SUB, TY_F32, 0, -INFINITY, -INFINITY, 0), -INFINITY);
	cr_assert(isnan(ir_eval_op(EXPR_SUB, TY_F64, 0, INFINITY, INFINITY, 0)), "only -inf - -inf is special");
	cr_assert_eq(ir_eval_op(EXPR_EXP, TY_F64, 0, ir_eval_op(EXPR_SUB, TY_F64, 0, -INFINITY, -INFINITY, 0), 0, 0),
		     0.0);
}

Test(ir, integer_wraps_and_rounding)
{
	cr_assert_eq(ir_eval_op(EXPR_ADD, TY_I32, 0, 2147483647.0, 1, 0), -2147483648.0);
	/* 2^60 + 1 and 2^64 + 5 lose their low bits in float64: fma wraps them as a product and a sum */
	cr_assert_eq(ir_eval_op(EXPR_FMA, TY_I32, 0, 0x1p30, 0x1p30, 1), 1);
	cr_assert_eq(ir_eval_op(EXPR_FMA, TY_I64, 0, 0x1p32, 0x1p32, 5), 5);
	cr_assert_eq(ir_round(TY_F32, 0.1), (double)0.1f);
	cr_assert_eq(ir_round(TY_BF16, 1.00390625), 1.0, "bf16 keeps 8 significant bits");
	cr_assert_eq(ir_round(TY_F16, 65519.0), 65504.0);
	cr_assert(isinf(ir_round(TY_F16, 65520.0)));
	cr_assert_eq(ir_round(TY_F16, 1.0 / 3), 0.333251953125);
}

/* i64 values past 2^53, which a double holds only rounded, are exact on
 * the tape: (k + 1) - k is 1 at k = 2^62 + 2^38, a comparison tells k + 1
 * from k, and a cast to f32 rounds the exact k + 1 once, up (through the
 * double, a tie, it rounded to even, down); a leaf's rest (ir_int_exact)
 * goes in with its value.  Through doubles alone the difference was 0. */
Test(ir, i64_values_past_2_53_stay_exact)
{
	Expr *k = ir_ref(ir, ir_add_var(ir, "k", VAR_ELEM, 0, 2, ty_scalar(TY_I64), TY_I64));
	Expr *sum = ir_bin(ir, EXPR_ADD, k, ir_const(ir, ty_scalar(TY_I64), 1));
	Expr *roots[4] = {ir_bin(ir, EXPR_SUB, sum, k), ir_node(ir, EXPR_GT, ty_scalar(TY_BOOL), 0, sum, k, NULL),
			  ir_node(ir, EXPR_CAST, ty_scalar(TY_F32), 0, sum, NULL, NULL), sum};
	Prog *p = prog_new(ir, roots, 4);
	cr_assert_eq(prog_nleaves(p), 1);
	prog_leaf_val(p, 0, NULL)[0] = 0x1p62 + 0x1p38;
	for (Mode md = MODE_F64; md <= MODE_F32; md++) {
		prog_run(p, md);
		cr_expect_eq(prog_root(p, 0, NULL)[0], 1, "mode %d", md);
		cr_expect_eq(prog_root(p, 1, NULL)[0], 1, "mode %d", md);
		cr_expect_eq(ir_int_exact(prog_root(p, 3, NULL)[0], prog_root_rest(p, 3)[0]), ((int64_t)1 << 62) + (1ll << 38) + 1);
	}
	cr_expect_eq(prog_root(p, 2, NULL)[0], 0x1p62 + 0x1p39, "f32 of the exact sum");
	/* INT64_MAX rounds to 2^63, which wraps to INT64_MIN: its rest is -1 */
	int64_t top = INT64_MAX;
	double tv = (double)top;
	cr_assert_eq(ir_int_rest(top, tv), -1);
	cr_assert_eq(ir_int_exact(tv, ir_int_rest(top, tv)), INT64_MAX);
	prog_leaf_val(p, 0, NULL)[0] = tv;
	prog_leaf_rest(p, 0)[0] = -1;
	prog_run(p, MODE_F64);
	cr_expect_eq(ir_int_exact(prog_root(p, 3, NULL)[0], prog_root_rest(p, 3)[0]), INT64_MIN, "wraps");
	cr_expect_eq(prog_root(p, 0, NULL)[0], 1);
	cr_expect_eq(prog_root(p, 1, NULL)[0], 0, "INT64_MIN is below INT64_MAX");
	prog_free(p);
}

/* Every binary16 value, its neighbours and the midpoints between them:
 * ir_round(TY_F16) keeps the values, rounds midpoints to the even one and
 * others to the nearest, and run_f16_bits and run_f16_value (compiler/devices/run.c) are
 * inverses; against the textbook frexp/ldexp/nearbyint forms. */
static double f16_round_plain(double v)
{
	if (isnan(v) || isinf(v) || v == 0)
		return v;
	double a = fabs(v);
	if (a >= 65520.0)
		return copysign(INFINITY, v);
	int e;
	frexp(a, &e);
	e = e < -13 ? -13 : e;
	double q = ldexp(1.0, e - 11);
	return copysign(nearbyint(a / q) * q, v);
}

Test(ir, f16_rounding_and_bits_over_every_value)
{
	int bad = 0;
	for (int h = 0; h < 0x7c00 && bad < 5; h++) { /* the finite positive values; negatives by sign */
		double a = run_f16_value((uint16_t)h), next = run_f16_value((uint16_t)(h + 1));
		if (run_f16_bits(a) != h || run_f16_bits(-a) != (h | 0x8000)) {
			cr_expect_fail("%04x: run_f16_bits %04x, of its negative %04x", h, run_f16_bits(a), run_f16_bits(-a));
			bad++;
		}
		double probe[] = {a, -a, (a + next) / 2, -(a + next) / 2, nextafter((a + next) / 2, 0), nextafter((a + next) / 2, 1e9),
				  nextafter(a, 0), nextafter(a, 1e9), a * 1.0000001};
		for (size_t k = 0; k < sizeof probe / sizeof *probe; k++) {
			double want = f16_round_plain(probe[k]), got = ir_round(TY_F16, probe[k]);
			if (got != want || signbit(got) != signbit(want)) {
				cr_expect_fail("%a: %a, not %a", probe[k], got, want);
				bad++;
			}
		}
	}
	cr_expect(isnan(run_f16_value(0x7e00)) && run_f16_bits(NAN) == 0x7e00 && run_f16_bits(-INFINITY) == 0xfc00);
	cr_expect_eq(ir_round(TY_F16, 0x1p-1074), 0.0, "a subnormal double: under half the least binary16");
	cr_expect_eq(ir_round(TY_F16, 0x1.8p-25), 0x1p-24, "over half of it: the least");
	cr_expect_eq(ir_round(TY_F16, 0x1p-25), 0.0, "half of it: ties to even, 0");
}

Test(ir, printer_minimal_parentheses)
{
	Expr *e = ir_bin(ir, EXPR_MUL, ir_bin(ir, EXPR_ADD, x, y), ir_bin(ir, EXPR_SUB, x, y));
	char *s = ir_str(ir, e);
	cr_assert_str_eq(s, "(x + y) * (x - y)");
	free(s);
	e = ir_bin(ir, EXPR_SUB, x, ir_bin(ir, EXPR_SUB, y, x));
	s = ir_str(ir, e);
	cr_assert_str_eq(s, "x - (y - x)");
	free(s);
	e = ir_node(ir, EXPR_POW, x->ty, 2, ir_un(ir, EXPR_NEG, x), NULL, NULL);
	s = ir_str(ir, e);
	cr_assert_str_eq(s, "(-x)^2");
	free(s);
	e = ir_node(ir, EXPR_MAX, x->ty, 0, x, ir_un(ir, EXPR_EXP, y), NULL);
	s = ir_str(ir, e);
	cr_assert_str_eq(s, "max(x, exp(y))");
	free(s);
}

/* A DAG of 60 doublings prints 2^60 leaves; ir_str_max stops at its bound. */
Test(ir, printer_bounded_on_shared_subterms, .timeout = 10)
{
	Expr *e = x;
	for (int i = 0; i < 60; i++)
		e = ir_bin(ir, EXPR_ADD, e, e);
	char *s = ir_str_max(ir, e, 100);
	cr_assert_eq(strlen(s), 103, "%s", s);
	cr_assert(!strncmp(s, "x + x", 5) && !strcmp(s + 100, "..."), "%s", s);
	free(s);
	s = ir_str_max(ir, x, 100);
	cr_assert_str_eq(s, "x");
	free(s);
}

static Expr *map_x(void *ctx, Expr *v) { return v == x ? (Expr *)ctx : NULL; }

Test(ir, substitution)
{
	Expr *e = ir_bin(ir, EXPR_ADD, x, ir_un(ir, EXPR_EXP, x));
	Expr *to = ir_bin(ir, EXPR_MUL, y, y);
	Expr *r = ir_subst(ir, e, map_x, to);
	cr_assert_eq(r, ir_bin(ir, EXPR_ADD, to, ir_un(ir, EXPR_EXP, to)));
}

Test(ir, interpreter_modes_and_error_bound)
{
	Expr *e = ir_bin(ir, EXPR_DIV, ir_bin(ir, EXPR_ADD, x, y), y);
	Prog *p = prog_new(ir, &e, 1);
	cr_assert_eq(prog_nleaves(p), 2);
	for (int i = 0; i < 2; i++) {
		double *err, *v = prog_leaf_val(p, i, &err);
		v[0] = prog_leaf(p, i) == x ? 1.0 : 3.0;
		err[0] = 0;
	}
	prog_run(p, MODE_F64);
	const double *er, *r = prog_root(p, 0, &er);
	cr_assert_eq(r[0], 4.0 / 3.0);
	cr_assert_gt(er[0], 0);
	cr_assert_lt(er[0], 10, "a few rounding errors of a value near 1");
	prog_run(p, MODE_F32);
	cr_assert_eq(r[0], (double)(4.0f / 3.0f), "f32 nodes round to float");
	prog_free(p);
}

/* Float32 sums and products in MODE_F32 round as the generic ops do, with
 * their bounds; and a product keeps the second-order term of its factors'
 * errors: where both factors are computed as 0 but each may be off by a
 * unit, the product's bound is not 0. */
Test(ir, float32_products_and_sums_round_and_bound)
{
	Expr *e[2] = {ir_bin(ir, EXPR_ADD, x, y), ir_bin(ir, EXPR_MUL, x, y)};
	Prog *p = prog_new(ir, e, 2);
	for (int i = 0; i < 2; i++) {
		double *err, *v = prog_leaf_val(p, i, &err);
		v[0] = prog_leaf(p, i) == x ? 1 + 0x1p-20 : 0x1p-30 * 3;
		err[0] = 0;
	}
	prog_run(p, MODE_F32);
	const double *es, *s = prog_root(p, 0, &es), *em, *m = prog_root(p, 1, &em);
	cr_expect_eq(s[0], (double)((float)(1 + 0x1p-20) + (float)(0x1p-30 * 3)));
	cr_expect_eq(m[0], (double)((float)(1 + 0x1p-20) * (float)(0x1p-30 * 3)));
	cr_expect(es[0] > 0 && es[0] < 4, "one rounding of a value near 1: %g", es[0]);
	cr_expect(em[0] > 0 && em[0] < 1e-8, "one rounding of a value near 3e-9: %g", em[0]);
	for (int i = 0; i < 2; i++) {
		double *err, *v = prog_leaf_val(p, i, &err);
		v[0] = 0, err[0] = 1;
	}
	for (Mode md = MODE_F64; md <= MODE_F32; md++) {
		prog_run(p, md);
		cr_expect_eq(m[0], 0);
		cr_expect_eq(em[0], md == MODE_F32 ? 0x1p-24 : 0x1p-53, "second-order term in mode %d: %g", md, em[0]);
	}
	prog_free(p);
}

Test(ir, vectors_broadcast_and_dot)
{
	int d = ir_add_dim(ir, "d", 4);
	Expr *u = ir_ref(ir, ir_add_var(ir, "u", VAR_COL, 0, 0, ty_vec(TY_F32, 4, d), TY_F32));
	Expr *e = ir_bin(ir, EXPR_DOT, u, ir_bin(ir, EXPR_MUL, u, x));
	cr_assert_eq(e->ty.len, 0);
	Prog *p = prog_new(ir, &e, 1);
	for (int i = 0; i < prog_nleaves(p); i++) {
		double *v = prog_leaf_val(p, i, NULL);
		if (prog_leaf(p, i) == u)
			for (int k = 0; k < 4; k++)
				v[k] = k + 1;
		else
			v[0] = 2;
	}
	prog_run(p, MODE_F64);
	cr_assert_eq(prog_root(p, 0, NULL)[0], 2.0 * (1 + 4 + 9 + 16));
	prog_free(p);
}

/* ir_topk ranks values descending, equal values by ascending index, an
 * empty slot (-1) after every index and NaN after every number. */
Test(ir, topk_ranking_and_ties)
{
	double v[] = {1, 3, 3, -INFINITY, NAN, 3, -INFINITY, 2};
	double ix[] = {0, 5, 2, 7, 4, 9, -1, 1};
	double ov[4], oi[4];
	ir_topk(v, ix, 8, 4, ov, oi);
	double wv[] = {3, 3, 3, 2}, wi[] = {2, 5, 9, 1};
	for (int t = 0; t < 4; t++)
		cr_expect(ov[t] == wv[t] && oi[t] == wi[t], "slot %d: (%g, %g)", t, ov[t], oi[t]);
	/* fewer pairs than slots: the rest are empty; -inf with an index before an empty slot */
	double ov8[8], oi8[8];
	ir_topk(v, ix, 8, 8, ov8, oi8);
	cr_expect(ov8[4] == 1 && oi8[4] == 0);
	cr_expect(ov8[5] == -INFINITY && oi8[5] == 7, "(%g, %g)", ov8[5], oi8[5]);
	cr_expect(ov8[6] == -INFINITY && oi8[6] == -1);
	cr_expect(isnan(ov8[7]) && oi8[7] == 4);
	ir_topk(v, ix, 0, 3, ov, oi);
	for (int t = 0; t < 3; t++)
		cr_expect(ov[t] == -INFINITY && oi[t] == -1);
}

/* The merge of two lists, through the interpreter, and the printer's
 * spellings of its forms; two empty lists fold to the empty list. */
Test(ir, topk_merge_interpreted_and_printed)
{
	Expr *av = ir_ref(ir, ir_add_var(ir, "av", VAR_ROW, 0, 0, ty_vec(TY_F32, 3, -1), TY_F32));
	Expr *ai = ir_ref(ir, ir_add_var(ir, "ai", VAR_ROW, 0, 1, ty_vec(TY_I32, 3, -1), TY_I32));
	Expr *bv = ir_ref(ir, ir_add_var(ir, "bv", VAR_ROW, 0, 2, ty_vec(TY_F32, 3, -1), TY_F32));
	Expr *bi = ir_ref(ir, ir_add_var(ir, "bi", VAR_ROW, 0, 3, ty_vec(TY_I32, 3, -1), TY_I32));
	Expr *args[4] = {av, ai, bv, bi};
	Expr *ev = ir_node_n(ir, EXPR_TOPK, ty_vec(TY_F32, 3, -1), 3, args);
	Expr *ei = ir_node_n(ir, EXPR_TOPK_IDX, ty_vec(TY_I32, 3, -1), 3, args);
	cr_assert_eq(ev->nargs, 4);
	cr_assert_eq(ev, ir_node_n(ir, EXPR_TOPK, ty_vec(TY_F32, 3, -1), 3, args), "hash-consed");
	Expr *roots[2] = {ev, ei};
	Prog *p = prog_new(ir, roots, 2);
	double in[4][3] = {{5, 2, -INFINITY}, {4, 8, -1}, {5, 3, 1}, {1, 6, 0}};
	for (int i = 0; i < prog_nleaves(p); i++)
		for (int q = 0; q < 4; q++)
			if (prog_leaf(p, i) == args[q])
				memcpy(prog_leaf_val(p, i, NULL), in[q], sizeof in[q]);
	prog_run(p, MODE_F32);
	const double *rv = prog_root(p, 0, NULL), *ri = prog_root(p, 1, NULL);
	cr_expect(rv[0] == 5 && ri[0] == 1, "the smaller index first on a tie: %g@%g", rv[0], ri[0]);
	cr_expect(rv[1] == 5 && ri[1] == 4);
	cr_expect(rv[2] == 3 && ri[2] == 6);
	prog_free(p);
	char *s = ir_str(ir, ev);
	cr_expect_str_eq(s, "topk(av, ai, bv, bi)");
	free(s);
	Expr *one[4] = {x, ir_const(ir, ty_scalar(TY_I32), 3), ir_const(ir, ty_scalar(TY_F32), -INFINITY),
			ir_const(ir, ty_scalar(TY_I32), -1)};
	s = ir_str(ir, ir_node_n(ir, EXPR_TOPK_IDX, ty_vec(TY_I32, 8, -1), 8, one));
	cr_expect_str_eq(s, "topk_idx(x, 3, 8)");
	free(s);
	Expr *none[4] = {one[2], one[3], one[2], one[3]};
	Expr *e = ir_node_n(ir, EXPR_TOPK, ty_vec(TY_F32, 8, -1), 8, none);
	cr_expect(e->op == EXPR_CONST && e->num == -INFINITY);
}

/* dot(v, 1): the scalar broadcasts to v's shape, and the dot sums v; two
 * scalars are refused. */
Test(ir, dot_with_a_scalar_sums_the_vector)
{
	Carrier *c = text_ok("carrier: vs\nelement: {x: f32}\nstate:\n  v: f32[3]\nidentity: {v: 0}\n"
			     "lift: {v: x}\nmerge: {v: a.v + b.v}\nfinalize: {s: 'dot(v, 1)', t: 'dot(2, v)'}\n");
	Expr *s = c->finalize[0].e, *t = c->finalize[1].e;
	cr_assert_eq(s->op, EXPR_DOT);
	cr_assert_eq(s->ty.len, 0);
	cr_assert(s->a[1]->op == EXPR_CONST && s->a[1]->ty.len == 3 && s->a[1]->num == 1);
	cr_assert(t->a[0]->op == EXPR_CONST && t->a[0]->ty.len == 3 && t->a[0]->num == 2);
	spec_carrier_free(c);
	char err[512];
	cr_assert_null(load_text("carrier: vs\nelement: {x: f32}\nstate: {s: f32}\nidentity: {s: 0}\n"
				 "lift: {s: 'dot(x, 1)'}\nmerge: {s: a.s + b.s}\n",
				 err, sizeof err));
	cr_assert(strstr(err, "dot needs a vector, got f32 and number"), "%s", err);
}
