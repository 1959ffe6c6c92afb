/* cex.c: counterexamples in the spec's own terms: the states (with the
 * inputs they fold), both sides of the law, and the component that differs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/check/check_int.h"

/* A state's inputs are shown where they are few; a whole row, the
 * witness itself, up to the length of the rows of special values. */
enum { VEC_SHOWN = 4, INPUTS_SHOWN = 12, ROW_SHOWN = 24 };

static int field_of(Machine *m, int k)
{
	int f = 0;
	while (f + 1 < m->c->nstate && m->soff[f + 1] <= k)
		f++;
	return f;
}

void cex_component(Buf *b, Machine *m, int k)
{
	int f = field_of(m, k);
	buf_puts(b, m->c->state[f].name);
	if (m->c->state[f].ty.len)
		buf_printf(b, "[%d]", k - m->soff[f]);
}

void cex_value(Buf *b, int integer, double v, double rest, int digits)
{
	if (isnan(v))
		buf_puts(b, "NaN");
	else if (integer && isfinite(v) && v == trunc(v) && fabs(v) <= 0x1p63)
		buf_printf(b, "%lld", (long long)ir_int_exact(v, rest));
	else
		buf_num(b, v, digits);
}

/* A component of a state field or an input f: a bool as a spec writes
 * it, an integer in full (2147483647 and 2147483646, which 9 digits would
 * both round to 2.14748365e+09; an i64 past 2^53 with its rest), a float
 * to digits. */
static void put_component(Buf *b, const Decl *f, double v, double rest, int digits)
{
	if (f->ty.kind == TY_BOOL) /* as a spec writes it, and as the prover's witnesses do */
		buf_puts(b, v != 0 ? "true" : "false");
	else if (!ty_is_float(f->ty) && !isnan(v))
		cex_value(b, 1, v, rest, digits);
	else /* a float, or NaN, as buf_num writes it ("nan") */
		buf_num(b, v, digits);
}

/* {m: 1, o: [0.5, 1, 2, 3, ... (64)]}; `mark` >= 0 also shows that component of a vector */
void cex_state_exact(Buf *b, Machine *m, const double *v, const double *rest, int mark)
{
	Carrier *c = m->c;
	buf_puts(b, "{");
	for (int f = 0; f < c->nstate; f++) {
		const double *x = v + m->soff[f], *xr = rest ? rest + m->soff[f] : NULL;
		int w = m->soff[f + 1] - m->soff[f];
		buf_printf(b, "%s%s: ", f ? ", " : "", c->state[f].name);
		if (!c->state[f].ty.len) {
			put_component(b, &c->state[f], x[0], xr ? xr[0] : 0, 9);
			continue;
		}
		buf_puts(b, "[");
		for (int t = 0; t < w && t < VEC_SHOWN; t++) {
			buf_puts(b, t ? ", " : "");
			put_component(b, &c->state[f], x[t], xr ? xr[t] : 0, 6);
		}
		int local = mark - m->soff[f];
		if (local >= VEC_SHOWN && local < w) {
			buf_printf(b, ", ... [%d]: ", local);
			put_component(b, &c->state[f], x[local], xr ? xr[local] : 0, 9);
		}
		if (w > VEC_SHOWN)
			buf_printf(b, ", ... (%d)", w);
		buf_puts(b, "]");
	}
	buf_puts(b, "}");
}

void cex_state(Buf *b, Machine *m, const double *v, int mark) { cex_state_exact(b, m, v, NULL, mark); }

void cex_state_json_exact(Buf *b, Machine *m, const double *v, const double *rest)
{
	Carrier *c = m->c;
	buf_puts(b, "{");
	for (int f = 0; f < c->nstate; f++) {
		buf_puts(b, f ? ", " : "");
		buf_json_str(b, c->state[f].name);
		buf_puts(b, ": ");
		int w = m->soff[f + 1] - m->soff[f], integer = !ty_is_float(c->state[f].ty);
		if (c->state[f].ty.len)
			buf_puts(b, "[");
		for (int t = 0; t < w; t++) {
			double x = v[m->soff[f] + t], r = rest ? rest[m->soff[f] + t] : 0;
			buf_puts(b, t ? ", " : "");
			if (integer && r != 0) /* past 2^53: the integer, which JSON holds as written */
				buf_printf(b, "%lld", (long long)ir_int_exact(x, r));
			else
				buf_json_num(b, x);
		}
		if (c->state[f].ty.len)
			buf_puts(b, "]");
	}
	buf_puts(b, "}");
}

void cex_state_json(Buf *b, Machine *m, const double *v) { cex_state_json_exact(b, m, v, NULL); }

/* A param's value as --param would give it back: the fewest digits
 * that read as the same value of its storage (1e-05 for an f32's
 * 9.99999975e-06, not float64's 17 digits). */
static void param_text(const Decl *p, double v, char *t, size_t n)
{
	if (p->storage == TY_BOOL) {
		snprintf(t, n, "%s", v ? "true" : "false");
		return;
	}
	for (int d = 1; p->storage == TY_F32 && isfinite(v) && d <= 9; d++) {
		snprintf(t, n, "%.*g", d, v);
		if ((float)strtod(t, NULL) == (float)v)
			return;
	}
	ir_fmt_num(v, t, n);
}

/* "params: eps = 1e-05, causal = true": the values the trials drew (or
 * --param gave), without which a witness of a carrier with params does
 * not say where it fails. */
void cex_params(Buf *b, Machine *m)
{
	Carrier *c = m->c;
	for (int p = 0; p < c->nparams; p++) {
		char t[40];
		param_text(&c->params[p], m->params[m->poff[p]], t, sizeof t);
		buf_printf(b, "%s%s = %s", p ? ", " : "params: ", c->params[p].name, t);
	}
}

void cex_params_line(Buf *b, Machine *m)
{
	if (!m->c->nparams)
		return;
	buf_puts(b, "    ");
	cex_params(b, m);
	buf_puts(b, "\n");
}

void cex_params_json(Buf *b, Machine *m)
{
	Carrier *c = m->c;
	if (!c->nparams)
		return;
	buf_puts(b, "\"params\": {");
	for (int p = 0; p < c->nparams; p++) {
		double v = m->params[m->poff[p]];
		buf_puts(b, p ? ", " : "");
		buf_json_str(b, c->params[p].name);
		buf_puts(b, ": ");
		if (c->params[p].storage == TY_BOOL)
			buf_puts(b, v ? "true" : "false");
		else
			buf_json_num(b, v);
	}
	buf_puts(b, "}, ");
}

static void put_decl_values(Buf *b, const Decl *d, int n, const int *off, int stride, const double *base,
			    const double *rests, int lo, int hi, Machine *m, const Row *r, int per_pos)
{
	for (int k = 0; k < n; k++) {
		if (d[k].ty.len)
			continue;
		buf_printf(b, " %s = ", d[k].name);
		if (!per_pos) {
			put_component(b, &d[k], base[off[k]], rests ? rests[off[k]] : 0, 0);
			continue;
		}
		buf_puts(b, "[");
		for (int j = lo; j < hi; j++) {
			buf_puts(b, j > lo ? ", " : "");
			if (eval_masked(m, r, j))
				buf_puts(b, "masked ");
			size_t at = (size_t)j * stride + off[k];
			put_component(b, &d[k], base[at], rests ? rests[at] : 0, 0);
		}
		buf_puts(b, "]");
	}
}

static int scalars(const Decl *d, int n)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		k += !d[i].ty.len;
	return k;
}

/* Beside scalar inputs shown, the names of the vector inputs that are
 * not: a witness must not read as if the scalars were all it holds. */
static void put_vectors_unshown(Buf *b, const Carrier *c)
{
	const Decl *groups[3] = {c->elem, c->col, c->row};
	int counts[3] = {c->nelem, c->ncol, c->nrow}, n = 0;
	for (int g = 0; g < 3; g++)
		for (int k = 0; k < counts[g]; k++)
			n += groups[g][k].ty.len > 0;
	if (!n)
		return;
	buf_printf(b, " (vector input%s", n > 1 ? "s" : "");
	for (int g = 0, i = 0; g < 3; g++)
		for (int k = 0; k < counts[g]; k++)
			if (groups[g][k].ty.len)
				buf_printf(b, "%s %s", i++ ? "," : "", groups[g][k].name);
	buf_puts(b, " not shown)");
}

/* The inputs of positions lo..hi-1 of r: "   from x = [...]" after a
 * state, or, where the caller has written "row of", " x = [...]". */
static void put_inputs(Buf *b, Machine *m, const Row *r, int lo, int hi, int after_row_of)
{
	Carrier *c = m->c;
	if (hi == lo) {
		buf_puts(b, "   (no elements)");
		return;
	}
	if (!after_row_of)
		buf_puts(b, "   from");
	if (!scalars(c->elem, c->nelem) && !scalars(c->col, c->ncol) && !scalars(c->row, c->nrow))
		buf_printf(b, " %d element%s (vector inputs, not shown)", hi - lo, hi - lo > 1 ? "s" : "");
	put_decl_values(b, c->elem, c->nelem, m->elemoff, m->elemw, r->elemv, r->elemrest, lo, hi, m, r, 1);
	put_decl_values(b, c->col, c->ncol, m->coloff, m->colw, r->colv, r->colrest, lo, hi, m, r, 1);
	put_decl_values(b, c->row, c->nrow, m->rowoff, 0, r->rowv, r->rowrest, lo, hi, m, r, 0);
	if (scalars(c->elem, c->nelem) || scalars(c->col, c->ncol) || scalars(c->row, c->nrow))
		put_vectors_unshown(b, c);
	if (c->mask || draw_negative_i(m)) /* what i is decides the state */
		buf_printf(b, " at positions %d..%d of row i = %d", lo, hi - 1, r->i);
}

/* The inputs a state folds, when they are few and scalar. */
void cex_inputs(Buf *b, Machine *m, const Row *r, int lo, int hi)
{
	if (hi - lo <= INPUTS_SHOWN)
		put_inputs(b, m, r, lo, hi, 0);
}

void cex_row(Buf *b, Machine *m, const Row *r)
{
	cex_params_line(b, m);
	if (r->len > ROW_SHOWN) {
		buf_printf(b, "    a row of %d positions, not shown", r->len);
		return;
	}
	if (!r->len) { /* no positions to list; a row input is still a value it has */
		Carrier *c = m->c;
		buf_puts(b, "    an empty row");
		if (scalars(c->row, c->nrow))
			buf_puts(b, " with");
		put_decl_values(b, c->row, c->nrow, m->rowoff, 0, r->rowv, r->rowrest, 0, 0, m, r, 0);
		return;
	}
	buf_puts(b, "    row of");
	put_inputs(b, m, r, 0, r->len, 1);
}

static void put_sample(Buf *b, Machine *m, const char *name, Sample *s, Mode mode)
{
	buf_printf(b, "    %s = ", name);
	cex_state_exact(b, m, s->v[mode], s->rest[mode], -1);
	cex_inputs(b, m, s->row, s->lo, s->hi);
	if (s->doublings)
		buf_printf(b, ", merged with itself %d time%s", s->doublings, s->doublings > 1 ? "s" : "");
	buf_puts(b, "\n");
}

/* Significant digits that tell x from y: 9, or up to 17 where they agree
 * that far (a sum clamped at 1e30 differs from 1e30 in the 13th). */
static int distinct_digits(double x, double y)
{
	char a[40], b[40];
	for (int d = 9; d < 17; d++) {
		snprintf(a, sizeof a, "%.*g", d, x);
		snprintf(b, sizeof b, "%.*g", d, y);
		if (strcmp(a, b))
			return d;
	}
	return 17;
}

void cex_describe(Ck *k, LawOutcome *o, Trial *t, Sample **s, int at, const char *const side[2])
{
	Machine *m = k->m;
	Buf b = {0}, j = {0}, d = {0};
	static const char *names[] = {"a", "b", "c"};
	const char *mode = t->mode == MODE_F32 ? "float32" : "float64";
	cex_params_line(&b, m);
	if (check_trial_arity(t->kind) < 3 && t->kind != T_COMM) {
		buf_puts(&b, "    e = ");
		cex_state(&b, m, m->ident[t->mode], -1);
		buf_puts(&b, "\n");
	}
	for (int i = 0; i < check_trial_arity(t->kind); i++)
		put_sample(&b, m, names[i], s[i], t->mode);
	for (int i = 0; i < 2; i++) {
		if (i && check_trial_arity(t->kind) < 2)
			break; /* the right side is e or a, shown above */
		buf_printf(&b, "    %s = ", side[i]);
		cex_state_exact(&b, m, i ? t->r : t->l, i ? k->rr : k->lr, at);
		buf_puts(&b, "\n");
	}
	buf_puts(&d, "field ");
	cex_component(&d, m, at);
	buf_puts(&d, " differs: ");
	int digits = distinct_digits(t->l[at], t->r[at]), integer = !ty_is_float(m->c->state[field_of(m, at)].ty);
	cex_value(&d, integer, t->l[at], k->lr[at], digits);
	buf_puts(&d, " vs ");
	cex_value(&d, integer, t->r[at], k->rr[at], digits);
	double gap = fabs(t->l[at] - t->r[at]), scale = fmax(fabs(t->l[at]), fabs(t->r[at]));
	if (integer && isfinite(gap)) { /* past 2^53 equal doubles may be unequal integers */
		int64_t x = ir_int_exact(t->l[at], k->lr[at]), y = ir_int_exact(t->r[at], k->rr[at]);
		gap = (double)(x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x);
	}
	if (isfinite(gap) && scale > 0)
		buf_printf(&d, " (relative gap %.2g", gap / scale);
	else
		buf_puts(&d, " (");
	/* a failure of the spec's types alone says so: the reals' law holds,
	 * the devices' float32 arithmetic breaks it */
	buf_printf(&d, "%s%s)", isfinite(gap) && scale > 0 ? ", " : "",
		   t->typed_only ? "float32 arithmetic in the spec's types; it holds in float64" : mode);
	buf_puts(&j, "{");
	cex_params_json(&j, m);
	buf_printf(&j, "\"mode\": \"%s\", \"lhs_name\": ", mode);
	buf_json_str(&j, side[0]);
	buf_puts(&j, ", \"rhs_name\": ");
	buf_json_str(&j, side[1]);
	for (int i = 0; i < check_trial_arity(t->kind); i++) {
		buf_printf(&j, ", \"%s\": ", names[i]);
		cex_state_json_exact(&j, m, s[i]->v[t->mode], s[i]->rest[t->mode]);
	}
	buf_puts(&j, ", \"lhs\": ");
	cex_state_json_exact(&j, m, t->l, k->lr);
	buf_puts(&j, ", \"rhs\": ");
	cex_state_json_exact(&j, m, t->r, k->rr);
	buf_puts(&j, ", \"field\": \"");
	cex_component(&j, m, at);
	buf_puts(&j, "\"}");
	o->cex = buf_take(&b);
	o->json = buf_take(&j);
	o->detail = buf_take(&d);
}
