/* edge.c: the identity at lifts of infinite inputs.
 *
 * The proofs are over finite states, and the trials draw finite inputs.
 * A lift of an infinite input can reach the identity's own infinite value
 * (an argmax's m = -inf), and there e+a and a+e may no longer give a: on a
 * tie the merge keeps one side's index, which may be the identity's.  The
 * devices all fold from the identity, so they agree with each other, but a
 * row whose elements are all such values gives the identity's field.  That
 * is an exception to the law, not a failure of it: a warning that names
 * the lifts and what such a row gives.  A NaN on either side is left to
 * the rows of special values (special.c), which report it with its
 * grouping. */
#include <math.h>
#include <string.h>

#include "compiler/check/check_int.h"

enum { EDGE_LEN = 3, EDGE_AT = 1 };

/* The first component where a holds the identity's infinite value, -1
 * where none does. */
static int ties_identity(Machine *m, Mode md, const double *a)
{
	const double *e = m->ident[md];
	for (int k = 0; k < m->sw; k++)
		if (isinf(e[k]) && a[k] == e[k])
			return k;
	return -1;
}

static int has_nan(const double *v, int n)
{
	for (int k = 0; k < n; k++)
		if (isnan(v[k]))
			return 1;
	return 0;
}

/* The first component where x and y differ, neither NaN; -1 where none. */
static int differs(Machine *m, const double *x, const double *y)
{
	for (int k = 0; k < m->sw; k++)
		if (!isnan(x[k]) && !isnan(y[k]) && x[k] != y[k])
			return k;
	return -1;
}

/* e+a into l and a+e into r; the component where one differs from a
 * (side 0 for e+a, 1 for a+e), -1 where neither does. */
static int sides_differ(Machine *m, Mode md, const double *a, double *l, double *r, double *t, int *side)
{
	const double *e = m->ident[md];
	memset(t, 0, m->sw * sizeof *t);
	eval_merge(m, md, e, t, a, t, l, t + m->sw);
	memset(t, 0, m->sw * sizeof *t);
	eval_merge(m, md, a, t, e, t, r, t + m->sw);
	int k = differs(m, l, a);
	*side = 0;
	if (k < 0)
		k = differs(m, r, a), *side = 1;
	return k;
}

int check_identity_tie(Machine *m, Mode md, const double *a)
{
	if (has_nan(a, m->sw) || ties_identity(m, md, a) < 0)
		return 0;
	double *buf = check_doubles(4 * (size_t)m->sw);
	int side, k = sides_differ(m, md, a, buf, buf + m->sw, buf + 2 * m->sw, &side);
	free(buf);
	return k >= 0;
}

/* Element input `only` (-1: every float one) at v in every position of r;
 * 0 where no float input took it. */
static int set_inputs(Machine *m, Row *r, int only, double v)
{
	const Carrier *c = m->c;
	int any = 0;
	for (int in = 0; in < c->nelem; in++) {
		if ((only >= 0 && in != only) || !ty_is_float(c->elem[in].ty))
			continue;
		for (int j = 0; j < r->len; j++)
			for (int t = 0; t < spec_decl_width(&c->elem[in]); t++)
				r->elemv[(size_t)j * m->elemw + m->elemoff[in] + t] = v;
		any = 1;
	}
	return any;
}

/* State component k's value v, an integer field's in full (2147483647,
 * which 9 digits would round). */
static void say_value(Buf *b, Machine *m, int k, double v)
{
	int f = 0;
	while (f + 1 < m->c->nstate && m->soff[f + 1] <= k)
		f++;
	if (!ty_is_float(m->c->state[f].ty) && isfinite(v))
		buf_printf(b, "%.0f", v);
	else
		buf_num(b, v, 9);
}

static void say_inputs(Buf *b, Machine *m, int only, double v)
{
	const Carrier *c = m->c;
	for (int in = 0, n = 0; in < c->nelem; in++)
		if ((only < 0 || in == only) && ty_is_float(c->elem[in].ty))
			buf_printf(b, "%s%s = %s", n++ ? ", " : "", c->elem[in].name, v < 0 ? "-inf" : "inf");
}

/* The components of a at the identity's infinities, "m = -inf". */
static void say_ties(Buf *b, Machine *m, Mode md, const double *a)
{
	const double *e = m->ident[md];
	for (int k = 0, n = 0; k < m->sw; k++)
		if (isinf(e[k]) && a[k] == e[k]) {
			buf_puts(b, n++ ? " and " : "");
			cex_component(b, m, k);
			buf_printf(b, " = %s", e[k] < 0 ? "-inf" : "inf");
		}
}

/* What a row of r's elements gives folded from the identity, as every
 * device folds it, against its lifts folded alone: the first component
 * where they differ, into the text. */
static void say_row(Buf *b, Machine *m, Mode md, const Row *r, int only, double v)
{
	double *acc = check_doubles(6 * (size_t)m->sw), *alone = acc + m->sw, *t = alone + m->sw;
	uint64_t rng = 1;
	eval_identity(m, md, acc, NULL);
	for (int j = 0; j < r->len; j++) {
		eval_fold(m, md, r, j, j + 1, SHAPE_LEFT, &rng, t, t + m->sw);
		memset(t + 2 * m->sw, 0, m->sw * sizeof *t);
		double *next = t + 3 * m->sw;
		eval_merge(m, md, acc, t + 2 * m->sw, t, t + 2 * m->sw, next, t + m->sw);
		memcpy(acc, next, m->sw * sizeof *acc);
	}
	eval_fold(m, md, r, 0, r->len, SHAPE_LEFT, &rng, alone, t);
	int k = differs(m, acc, alone);
	if (k >= 0) {
		buf_puts(b, "; a row whose elements are all ");
		say_inputs(b, m, only, v);
		buf_puts(b, " gives ");
		cex_component(b, m, k);
		buf_puts(b, " = ");
		say_value(b, m, k, acc[k]);
		if (acc[k] == m->ident[md][k])
			buf_puts(b, ", the identity's,");
		buf_puts(b, " where its lifts folded alone give ");
		say_value(b, m, k, alone[k]);
	}
	free(acc);
}

static void describe(Machine *m, Mode md, const Row *r, int only, double v, const double *a, const double *got,
		     int side, int k, char **detail, char **json)
{
	Buf b = {0};
	buf_puts(&b, "holds except at lifts where ");
	say_ties(&b, m, md, a);
	buf_puts(&b, " (");
	say_inputs(&b, m, only, v);
	buf_printf(&b, "): %s gives ", side ? "a+e" : "e+a");
	cex_component(&b, m, k);
	buf_puts(&b, " = ");
	say_value(&b, m, k, got[k]);
	buf_puts(&b, " for a = ");
	cex_state(&b, m, a, -1);
	say_row(&b, m, md, r, only, v);
	if (m->c->nparams) {
		buf_puts(&b, "; ");
		cex_params(&b, m);
	}
	*detail = buf_take(&b);
	if (!json)
		return;
	buf_puts(&b, "{");
	cex_params_json(&b, m);
	buf_printf(&b, "\"side\": \"%s\", \"mode\": \"%s\", \"inputs\": {", side ? "a+e" : "e+a",
		   md == MODE_F32 ? "float32" : "float64");
	const Carrier *c = m->c;
	for (int in = 0, n = 0; in < c->nelem; in++)
		if ((only < 0 || in == only) && ty_is_float(c->elem[in].ty)) {
			buf_puts(&b, n++ ? ", " : "");
			buf_json_str(&b, c->elem[in].name);
			buf_puts(&b, ": ");
			buf_json_num(&b, v);
		}
	buf_puts(&b, "}, \"a\": ");
	cex_state_json(&b, m, a);
	buf_puts(&b, ", \"got\": ");
	cex_state_json(&b, m, got);
	buf_puts(&b, "}");
	*json = buf_take(&b);
}

/* Whether states x and y give different outputs on row r, finalize's or
 * map's at some position, neither NaN: two states that finalize alike
 * ({m: -inf, l: 0} and {m: -inf, l: 1} for a log-sum-exp) are one result. */
static int outputs_differ(Machine *m, Mode md, const Row *r, const double *x, const double *y)
{
	size_t w = (size_t)(m->finw > m->mapw ? m->finw : m->mapw);
	double *buf = check_doubles(4 * w + (size_t)m->sw), *ox = buf, *oy = ox + w, *e = oy + w, *z = e + 2 * w;
	int n = m->finw, differ = 0;
	eval_finalize(m, md, r, x, z, ox, e);
	eval_finalize(m, md, r, y, z, oy, e);
	for (int k = 0; k < n && !differ; k++)
		differ = !isnan(ox[k]) && !isnan(oy[k]) && ox[k] != oy[k];
	for (int j = 0; m->map && j < r->len && !differ; j++) {
		eval_map(m, md, r, j, x, z, ox, e);
		eval_map(m, md, r, j, y, z, oy, e);
		for (int k = 0; k < m->mapw && !differ; k++)
			differ = !isnan(ox[k]) && !isnan(oy[k]) && ox[k] != oy[k];
	}
	free(buf);
	return differ;
}

/* Lift of one position of r (its inputs set) into a; 0 where the assume
 * rules the row out or the mask drops the position. */
static int lift_at(Machine *m, Mode md, const Row *r, double *a, double *ae)
{
	for (int j = 0; j < r->len; j++)
		if (!eval_assume(m, r, j))
			return 0;
	if (eval_masked(m, r, EDGE_AT))
		return 0;
	eval_lift(m, md, r, EDGE_AT, a, ae);
	return 1;
}

int check_identity_edge(Machine *m, uint64_t *rng, char **detail, char **json)
{
	const Carrier *c = m->c;
	static const double inf[2] = {-INFINITY, INFINITY};
	*detail = NULL;
	if (json)
		*json = NULL;
	int found = 0;
	Row *r = eval_row_new(m, EDGE_LEN);
	double *buf = check_doubles(6 * (size_t)m->sw);
	double *a = buf, *ae = a + m->sw, *l = ae + m->sw, *rt = l + m->sw, *t = rt + m->sw;
	for (int md = MODE_F64; md <= MODE_F32 && !found; md++)
		for (int only = -1; only < c->nelem && !found; only++)
			for (int s = 0; s < 2 && !found; s++) {
				if (draw_row(m, DRAW_GRID, r, rng) || !set_inputs(m, r, only, inf[s]) ||
				    !lift_at(m, (Mode)md, r, a, ae) || !check_identity_tie(m, (Mode)md, a))
					continue;
				int side, k = sides_differ(m, (Mode)md, a, l, rt, t, &side);
				if (!outputs_differ(m, (Mode)md, r, a, l) && !outputs_differ(m, (Mode)md, r, a, rt))
					continue;
				if (k < 0 || differs(m, side ? rt : l, a) < 0) /* the outputs differ through the other side */
					side = !side, k = differs(m, side ? rt : l, a);
				describe(m, (Mode)md, r, only, inf[s], a, side ? rt : l, side, k, detail, json);
				found = 1;
			}
	free(buf);
	eval_row_free(r);
	return found;
}
