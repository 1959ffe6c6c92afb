/* special.c: rows whose float element, column and row inputs hold NaN, +-inf,
 * -0 or values near FLT_MAX among ordinary ones (f8e4m3's: NaN, +-448, -0
 * and subnormals).
 *
 * The laws are proved and tried over the reals.  A device folds a row from
 * accumulators that start at the identity, one thread's over many
 * positions or many threads' over one each, merged in a tree of its own:
 * over the reals every such grouping gives the same result, but on rows
 * holding NaN or infinities a lawful merge can give different ones (a max
 * that skips NaN beside an index taken from whichever side is not
 * greater), and devices then disagree with each other.  The same rows are
 * held to the reference by the rule `assoc run` holds results to
 * (check_special_match).  What these trials find is a warning: a carrier
 * lawful on the reals stays accepted.  Except where a row of moderate
 * inputs (-0 among ordinary values) disagrees with the reference and its
 * state breaks the identity: that row is an input the laws cover. */
#include <fenv.h>
#include <math.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/check/check_int.h"
#include "compiler/prove/prove.h"

enum { LEN_MAX = 12, LONG_LEN_MAX = 24 };

typedef enum { SP_NAN, SP_POS_INF, SP_NEG_INF, SP_NEG_ZERO, SP_HUGE, NSPECIAL } SpecialKind;

/* How often each kind is drawn: NaN and the infinities are what a merge
 * most often mishandles. */
static const int kind_weight[NSPECIAL] = {3, 2, 2, 1, 1};

/* One accumulator over the whole row against a tree of one-position
 * accumulators; a+b against b+a of two such trees (where the carrier
 * claims commutative); a tree with one more identity merged on its left or
 * its right (a thread left without positions) against the tree alone. */
typedef enum { G_TREE, G_COMM, G_ELEFT, G_ERIGHT, NGROUPING } Grouping;

/* The first output that differs: its definition, component and position. */
typedef struct {
	const Def *out;
	int is_map, comp, pos;
	double x, y;
} Diff;

typedef struct {
	Grouping g;
	int split;           /* G_COMM: a folds [0, split), b [split, len) */
	double *sv[2], *se[2]; /* both sides' states and error bounds */
	double *a, *ae, *b, *be;
	double *tmp; /* 4 states for fold_accumulated */
	double *out[2], *oute[2]; /* finalize outputs, then map outputs position by position */
	double *ref, *refe, *pos, *pose;
	Diff d;
} Sp;

static void sp_init(Sp *w, Machine *m)
{
	size_t outw = m->finw + (size_t)LONG_LEN_MAX * m->mapw;
	for (int i = 0; i < 2; i++) {
		w->sv[i] = check_doubles(m->sw), w->se[i] = check_doubles(m->sw);
		w->out[i] = check_doubles(outw), w->oute[i] = check_doubles(outw);
	}
	w->a = check_doubles(m->sw), w->ae = check_doubles(m->sw), w->b = check_doubles(m->sw), w->be = check_doubles(m->sw);
	w->tmp = check_doubles(4 * (size_t)m->sw);
	w->ref = check_doubles(m->refw), w->refe = check_doubles(m->refw);
	w->pos = check_doubles((size_t)LONG_LEN_MAX * m->refw), w->pose = check_doubles((size_t)LONG_LEN_MAX * m->refw);
}

static void sp_free(Sp *w)
{
	for (int i = 0; i < 2; i++) {
		free(w->sv[i]), free(w->se[i]);
		free(w->out[i]), free(w->oute[i]);
	}
	free(w->a), free(w->ae), free(w->b), free(w->be), free(w->tmp);
	free(w->ref), free(w->refe), free(w->pos), free(w->pose);
}

/* ---- drawing rows ---- */

static SpecialKind draw_kind(uint64_t *rng)
{
	int total = 0;
	for (int k = 0; k < NSPECIAL; k++)
		total += kind_weight[k];
	int u = rng_int(rng, 0, total - 1), k = 0;
	while (u >= kind_weight[k])
		u -= kind_weight[k++];
	return (SpecialKind)k;
}

/* f8e4m3 has no infinities: its specials are its ends, +-448, where the
 * others have +-inf, and for a huge value either one near 448 or, half the
 * time, a subnormal (k * 2^-9), the other end of its short range. */
static double special_f8e4m3(SpecialKind kind, uint64_t *rng)
{
	double sign = rng_next(rng) & 1 ? -1 : 1;
	switch (kind) {
	case SP_NAN: return NAN;
	case SP_POS_INF: return 448;
	case SP_NEG_INF: return -448;
	case SP_NEG_ZERO: return -0.0;
	default: break;
	}
	if (rng_next(rng) & 1)
		return sign * rng_int(rng, 1, 7) * 0x1p-9;
	return ir_round(TY_F8E4M3, sign * 448 * (1 - rng_unit(rng) / 2));
}

/* A value of this kind in this storage; a huge one is the largest finite
 * magnitude of the storage (f16's 65504) or up to half below it. */
static double special_value(SpecialKind kind, TyKind storage, uint64_t *rng)
{
	if (storage == TY_F8E4M3)
		return special_f8e4m3(kind, rng);
	switch (kind) {
	case SP_NAN: return NAN;
	case SP_POS_INF: return INFINITY;
	case SP_NEG_INF: return -INFINITY;
	case SP_NEG_ZERO: return -0.0;
	default: break;
	}
	double top = storage == TY_F16 ? 65504 : FLT_MAX, sign = rng_next(rng) & 1 ? -1 : 1;
	double v = ir_round(storage, sign * top * (1 - rng_unit(rng) / 2));
	return isinf(v) ? ir_round(storage, sign * top / 2) : v;
}

static int float_width(const Decl *d, int n)
{
	int w = 0;
	for (int k = 0; k < n; k++)
		w += ty_is_float(d[k].ty) ? spec_decl_width(&d[k]) : 0;
	return w;
}

/* Put specials into the float components of decls at one position, each
 * with probability p, or (p > 1) into exactly one of them; how many.
 * only: the one kind to draw, or -1 for any. */
static int put_specials(const Decl *d, int n, const int *off, double *dst, double p, int only, uint64_t *rng)
{
	int put = 0, one = p > 1 ? rng_int(rng, 0, float_width(d, n) - 1) : -1;
	for (int k = 0, at = 0; k < n; k++)
		for (int t = 0; ty_is_float(d[k].ty) && t < spec_decl_width(&d[k]); t++, at++)
			if (p > 1 ? at == one : rng_unit(rng) < p) {
				SpecialKind kind = only >= 0 ? (SpecialKind)only : draw_kind(rng);
				dst[off[k] + t] = special_value(kind, d[k].storage, rng);
				put++;
			}
	return put;
}

/* Specials at position j of r (see put_specials), kept only where assume
 * still holds: a spec that assumes x >= 0 says that -inf and NaN are not
 * its inputs.  save: room for the position's inputs. */
static int put_at(Machine *m, Row *r, int j, double p, int only, double *save, uint64_t *rng)
{
	Carrier *c = m->c;
	double *col = r->colv + (size_t)j * m->colw, *el = r->elemv + (size_t)j * m->elemw;
	memcpy(save, col, m->colw * sizeof *save);
	memcpy(save + m->colw, el, m->elemw * sizeof *save);
	int n, fc = float_width(c->col, c->ncol), fe = float_width(c->elem, c->nelem);
	if (p > 1 && rng_int(rng, 0, fc + fe - 1) < fc)
		n = put_specials(c->col, c->ncol, m->coloff, col, p, only, rng);
	else if (p > 1)
		n = put_specials(c->elem, c->nelem, m->elemoff, el, p, only, rng);
	else
		n = put_specials(c->col, c->ncol, m->coloff, col, p, only, rng) +
		    put_specials(c->elem, c->nelem, m->elemoff, el, p, only, rng);
	if (n && !eval_assume(m, r, j)) {
		memcpy(col, save, m->colw * sizeof *save);
		memcpy(el, save + m->colw, m->elemw * sizeof *save);
		n = 0;
	}
	return n;
}

/* Specials in the row inputs of r (see put_specials), kept only where
 * assume still holds at each position: a query q holding one infinity
 * scores +inf at some keys, whose exp a softmax's rescaling turns to NaN
 * where the reference's sum is inf. */
static int put_row(Machine *m, Row *r, double p, int only, uint64_t *rng)
{
	Carrier *c = m->c;
	double *save = check_doubles(m->roww);
	memcpy(save, r->rowv, m->roww * sizeof *save);
	int n = put_specials(c->row, c->nrow, m->rowoff, r->rowv, p, only, rng);
	for (int j = 0; n && j < r->len; j++)
		if (!eval_assume(m, r, j)) {
			memcpy(r->rowv, save, m->roww * sizeof *save);
			n = 0;
		}
	free(save);
	return n;
}

/* Specials at random positions of r, sparse, dense or everywhere (a max
 * that skips NaN has only a row of NaN alone to show); one kind only in
 * half the rows, so that a NaN does not hide what an infinity does.  Where
 * none was put (a sparse draw on a short row, or assume refused them), one
 * at one position is tried a few times.  A third of the rows of a carrier
 * with float row inputs hold specials there instead, half of them one
 * alone: among ordinary positions, as a NaN put beside it would hide what
 * it does.  How many were put. */
static int inject(Machine *m, Row *r, uint64_t *rng)
{
	static const double density[] = {0.15, 0.3, 0.6, 1};
	double p = density[rng_int(rng, 0, 3)];
	int only = rng_next(rng) & 1 ? (int)draw_kind(rng) : -1, put = 0;
	Carrier *c = m->c;
	int at_pos = float_width(c->elem, c->nelem) + float_width(c->col, c->ncol);
	if (r->len && float_width(c->row, c->nrow) && (!at_pos || !rng_int(rng, 0, 2)) &&
	    (put = put_row(m, r, rng_next(rng) & 1 ? 2 : p, only, rng)))
		return put;
	if (!at_pos)
		return 0;
	double *save = check_doubles(m->colw + m->elemw);
	for (int j = 0; j < r->len; j++)
		put += put_at(m, r, j, p, only, save, rng);
	for (int tries = 0; !put && r->len && tries < 8; tries++)
		put = put_at(m, r, rng_int(rng, 0, r->len - 1), 2, only, save, rng);
	free(save);
	return put;
}

/* A row of ordinary values from a family with ties (the grid) or without,
 * holding specials; NULL where none could be put. */
static Sample *special_row(Ck *k, int t)
{
	static const DrawFamily fams[] = {DRAW_NORMAL, DRAW_GRID, DRAW_WIDE};
	static const Shape trees[] = {SHAPE_RIGHT, SHAPE_BALANCED, SHAPE_RANDOM, SHAPE_RANDOM};
	int len = rng_int(&k->rng, 0, 7) ? rng_int(&k->rng, 1, LEN_MAX) : rng_int(&k->rng, LEN_MAX + 1, LONG_LEN_MAX);
	Sample *s = draw_sample_row(k->m, fams[t % 3], len, &k->rng);
	if (!s)
		return NULL;
	s->shape = trees[rng_int(&k->rng, 0, 3)];
	if (!inject(k->m, s->row, &k->rng)) {
		draw_sample_free(s);
		return NULL;
	}
	draw_sample_eval(k->m, s);
	return s;
}

/* ---- comparing ---- */

/* Two values the same up to rounding: NaN as NaN, an infinity as the same
 * infinity.  Error bounds that the specials made infinite or NaN (an
 * exp(-inf) on the way to a finite result) give way to a relative
 * tolerance far above float64's rounding and far below a wrong answer. */
static int same_value(double x, double ex, double y, double ey)
{
	int special = check_special_match(x, y);
	if (special >= 0)
		return special;
	if (!isfinite(ex) || !isfinite(ey))
		return fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y));
	return check_values_agree(x, ex, y, ey, check_unit_roundoff(MODE_F64));
}

static int unmasked(Machine *m, const Row *r)
{
	int n = 0;
	for (int j = 0; j < r->len; j++)
		n += !eval_masked(m, r, j);
	return n;
}

/* Finalize and map outputs of a state into out (finalize, then each
 * position's map outputs). */
static void outputs(Machine *m, const Row *r, const double *sv, const double *se, double *out, double *oute)
{
	eval_finalize(m, MODE_F64, r, sv, se, out, oute);
	for (int j = 0; m->map && j < r->len; j++)
		eval_map(m, MODE_F64, r, j, sv, se, out + m->finw + (size_t)j * m->mapw, oute + m->finw + (size_t)j * m->mapw);
}

/* The first output where the two sides differ, into w->d; 0 where none does. */
static int outputs_differ(Machine *m, Sp *w, const Row *r)
{
	Carrier *c = m->c;
	for (int i = 0; i < 2; i++)
		outputs(m, r, w->sv[i], w->se[i], w->out[i], w->oute[i]);
	for (int o = 0; o < c->nfinal; o++)
		for (int t = m->finoff[o]; t < m->finoff[o + 1]; t++)
			if (!same_value(w->out[0][t], w->oute[0][t], w->out[1][t], w->oute[1][t])) {
				w->d = (Diff){&c->finalize[o], 0, t - m->finoff[o], -1, w->out[0][t], w->out[1][t]};
				return 1;
			}
	for (int j = 0; m->map && j < r->len; j++)
		for (int o = 0; o < c->nmap; o++)
			for (int t = m->mapoff[o]; t < m->mapoff[o + 1]; t++) {
				size_t at = m->finw + (size_t)j * m->mapw + t;
				if (!same_value(w->out[0][at], w->oute[0][at], w->out[1][at], w->oute[1][at])) {
					w->d = (Diff){&c->map[o], 1, t - m->mapoff[o], j, w->out[0][at], w->out[1][at]};
					return 1;
				}
			}
	return 0;
}

/* ---- groupings ---- */

/* ((e+p0)+p1)+p2: one accumulator from the identity, left to right (a
 * masked position merges the identity, as in eval_fold). */
static void fold_accumulated(Machine *m, const Row *r, double *v, double *e, double *t)
{
	int sw = m->sw;
	eval_identity(m, MODE_F64, v, e);
	for (int j = 0; j < r->len; j++) {
		if (eval_masked(m, r, j))
			eval_identity(m, MODE_F64, t, t + sw);
		else
			eval_lift(m, MODE_F64, r, j, t, t + sw);
		memcpy(t + 2 * sw, v, sw * sizeof *v);
		memcpy(t + 3 * sw, e, sw * sizeof *e);
		eval_merge(m, MODE_F64, t + 2 * sw, t + 3 * sw, t, t + sw, v, e);
	}
}

/* Positions [lo, hi) grouped as eval_fold groups them (the same splits
 * drawn from *rng), each position merged onto its own identity: (e+p0)+(e+p1). */
static void fold_seeded(Machine *m, const Row *r, int lo, int hi, Shape shape, uint64_t *rng, double *v, double *e)
{
	int sw = m->sw;
	if (hi - lo <= 0 || (hi - lo == 1 && eval_masked(m, r, lo))) {
		eval_identity(m, MODE_F64, v, e);
		return;
	}
	double *t = check_doubles(4 * (size_t)sw);
	if (hi - lo == 1) {
		eval_identity(m, MODE_F64, t, t + sw);
		eval_lift(m, MODE_F64, r, lo, t + 2 * sw, t + 3 * sw);
	} else {
		int k = eval_fold_split(lo, hi, shape, rng);
		fold_seeded(m, r, lo, k, shape, rng, t, t + sw);
		fold_seeded(m, r, k, hi, shape, rng, t + 2 * sw, t + 3 * sw);
	}
	eval_merge(m, MODE_F64, t, t + sw, t + 2 * sw, t + 3 * sw, v, e);
	free(t);
}

static int split_of(const Sp *w, const Row *r)
{
	return w->split < 1 ? 1 : w->split >= r->len ? r->len - 1 : w->split;
}

/* Both sides of w->g on s: the one accumulator and s's tree; a+b and b+a
 * of two trees; an identity merged onto the tree and the tree alone.  A
 * side whose merges overflowed float64 from finite values is no
 * disagreement of groupings but of range (a product of many values near
 * FLT_MAX): 0 then, as where the outputs agree. */
static int grouping_differs(Ck *k, Sp *w, Sample *s)
{
	Machine *m = k->m;
	const Row *r = s->row;
	uint64_t rng = s->seed;
	m->range = 0;
	if (w->g == G_TREE) {
		fold_accumulated(m, r, w->sv[0], w->se[0], w->tmp);
		fold_seeded(m, r, 0, r->len, s->shape, &rng, w->sv[1], w->se[1]);
	} else if (w->g != G_COMM) {
		fold_seeded(m, r, 0, r->len, s->shape, &rng, w->a, w->ae);
		eval_identity(m, MODE_F64, w->b, w->be);
		if (w->g == G_ELEFT)
			eval_merge(m, MODE_F64, w->b, w->be, w->a, w->ae, w->sv[0], w->se[0]);
		else
			eval_merge(m, MODE_F64, w->a, w->ae, w->b, w->be, w->sv[0], w->se[0]);
		memcpy(w->sv[1], w->a, m->sw * sizeof *w->a);
		memcpy(w->se[1], w->ae, m->sw * sizeof *w->ae);
	} else {
		if (r->len < 2)
			return 0;
		int split = split_of(w, r);
		fold_seeded(m, r, 0, split, s->shape, &rng, w->a, w->ae);
		fold_seeded(m, r, split, r->len, s->shape, &rng, w->b, w->be);
		eval_merge(m, MODE_F64, w->a, w->ae, w->b, w->be, w->sv[0], w->se[0]);
		eval_merge(m, MODE_F64, w->b, w->be, w->a, w->ae, w->sv[1], w->se[1]);
	}
	if (m->range & PROG_OVERFLOW)
		return 0;
	return outputs_differ(m, w, r);
}

static int grouping_fails(Ck *k, Trial *t, Sample **s)
{
	(void)t;
	return grouping_differs(k, k->work, s[0]);
}

/* (e+p0)+((e+p1)+(e+p2)): positions lo..hi-1 as fold_seeded groups them,
 * drawing the same splits from *rng. */
static void put_grouping(Buf *b, int lo, int hi, Shape shape, uint64_t *rng, int outer)
{
	if (hi - lo <= 0) {
		buf_puts(b, "e");
		return;
	}
	if (hi - lo == 1) {
		buf_printf(b, outer ? "e+p%d" : "(e+p%d)", lo);
		return;
	}
	int k = eval_fold_split(lo, hi, shape, rng);
	buf_puts(b, outer ? "" : "(");
	put_grouping(b, lo, k, shape, rng, 0);
	buf_puts(b, "+");
	put_grouping(b, k, hi, shape, rng, 0);
	buf_puts(b, outer ? "" : ")");
}

/* ((e+p0)+p1)+p2 */
static void put_accumulated(Buf *b, int len)
{
	for (int j = 1; j < len; j++)
		buf_puts(b, "(");
	buf_puts(b, len ? "e+p0" : "e");
	for (int j = 1; j < len; j++)
		buf_printf(b, ")+p%d", j);
}

static void put_output(Buf *b, const Diff *d)
{
	buf_puts(b, d->out->name);
	if (d->out->e->ty.len)
		buf_printf(b, "[%d]", d->comp);
	if (d->is_map)
		buf_printf(b, " at position %d", d->pos);
}

static void put_value(Buf *b, double v)
{
	if (isnan(v))
		buf_puts(b, "NaN");
	else
		buf_num(b, v, 9);
}

/* The row's scalar inputs as JSON arrays: {"x": [1, "nan"]}. */
static void row_json(Buf *b, Machine *m, const Row *r)
{
	Carrier *c = m->c;
	int first = 1;
	buf_puts(b, "{");
	for (int pass = 0; pass < 2; pass++) {
		const Decl *d = pass ? c->col : c->elem;
		int n = pass ? c->ncol : c->nelem, w = pass ? m->colw : m->elemw;
		const int *off = pass ? m->coloff : m->elemoff;
		const double *v = pass ? r->colv : r->elemv;
		for (int k = 0; k < n; k++) {
			if (d[k].ty.len)
				continue;
			buf_puts(b, first ? "" : ", ");
			first = 0;
			buf_json_str(b, d[k].name);
			buf_puts(b, ": [");
			for (int j = 0; j < r->len; j++) {
				buf_puts(b, j ? ", " : "");
				buf_json_num(b, v[(size_t)j * w + off[k]]);
			}
			buf_puts(b, "]");
		}
	}
	buf_puts(b, "}");
}

static void describe_grouping(Ck *k, Sp *w, Sample *s, SpecialOutcome *o)
{
	Machine *m = k->m;
	const Row *r = s->row;
	Buf d = {0}, b = {0}, j = {0}, side[2] = {{0}, {0}};
	uint64_t rng = s->seed;
	int split = split_of(w, r);
	if (w->g == G_TREE) {
		put_accumulated(&side[0], r->len);
		put_grouping(&side[1], 0, r->len, s->shape, &rng, 1);
	} else if (w->g == G_COMM) {
		buf_puts(&side[0], "a+b");
		buf_puts(&side[1], "b+a");
	} else {
		buf_puts(&side[0], w->g == G_ELEFT ? "e+(" : "(");
		put_grouping(&side[0], 0, r->len, s->shape, &rng, 1);
		buf_puts(&side[0], w->g == G_ERIGHT ? ")+e" : ")");
		rng = s->seed;
		put_grouping(&side[1], 0, r->len, s->shape, &rng, 1);
	}
	put_output(&d, &w->d);
	buf_puts(&d, " is ");
	put_value(&d, w->d.x);
	buf_printf(&d, " as %s but ", side[0].s);
	put_value(&d, w->d.y);
	buf_printf(&d, " as %s (row of length %d, float64)", side[1].s, r->len);
	cex_row(&b, m, r);
	buf_puts(&b, "\n");
	if (w->g == G_ELEFT || w->g == G_ERIGHT) {
		buf_puts(&b, "    e = ");
		cex_state(&b, m, m->ident[MODE_F64], -1);
		buf_puts(&b, "\n");
	}
	if (w->g == G_COMM) {
		const char *name[2] = {"a", "b"};
		const double *st[2] = {w->a, w->b};
		int lo[2] = {0, split}, hi[2] = {split, r->len};
		rng = s->seed;
		for (int i = 0; i < 2; i++) {
			buf_printf(&b, "    %s = ", name[i]);
			put_grouping(&b, lo[i], hi[i], s->shape, &rng, 1);
			buf_puts(&b, " = ");
			cex_state(&b, m, st[i], -1);
			buf_puts(&b, "\n");
		}
	}
	for (int i = 0; i < 2; i++) {
		buf_printf(&b, "    %s = ", side[i].s);
		cex_state(&b, m, w->sv[i], -1);
		buf_puts(&b, "\n");
	}
	static const char *const kind[NGROUPING] = {"tree", "commuted", "identity left", "identity right"};
	buf_puts(&j, "{");
	cex_params_json(&j, m);
	buf_printf(&j, "\"grouping\": \"%s\", \"length\": %d, \"row\": ", kind[w->g], r->len);
	row_json(&j, m, r);
	buf_puts(&j, ", \"output\": ");
	buf_json_str(&j, w->d.out->name);
	buf_printf(&j, ", \"component\": %d, \"position\": %d, \"lhs_name\": ", w->d.comp, w->d.pos);
	buf_json_str(&j, side[0].s);
	buf_puts(&j, ", \"rhs_name\": ");
	buf_json_str(&j, side[1].s);
	buf_puts(&j, ", \"lhs_value\": ");
	buf_json_num(&j, w->d.x);
	buf_puts(&j, ", \"rhs_value\": ");
	buf_json_num(&j, w->d.y);
	if (w->g == G_COMM) {
		buf_puts(&j, ", \"a\": ");
		cex_state_json(&j, m, w->a);
		buf_puts(&j, ", \"b\": ");
		cex_state_json(&j, m, w->b);
	}
	buf_puts(&j, ", \"lhs\": ");
	cex_state_json(&j, m, w->sv[0]);
	buf_puts(&j, ", \"rhs\": ");
	cex_state_json(&j, m, w->sv[1]);
	buf_puts(&j, "}");
	free(side[0].s);
	free(side[1].s);
	o->group_detail = buf_take(&d);
	o->group_cex = buf_take(&b);
	o->group_json = buf_take(&j);
}

/* Try the row's groupings; on the first that differs, shrink the row and
 * describe it.  1 when it differs. */
static int try_groupings(Ck *k, Sp *w, Sample *s, SpecialOutcome *o)
{
	int comm = k->m->c->laws & LAW_COMMUTATIVE;
	for (Grouping g = G_TREE; g < NGROUPING; g++) {
		if (g == G_COMM && !comm)
			continue;
		w->g = g;
		w->split = rng_int(&k->rng, 1, s->row->len > 1 ? s->row->len - 1 : 1);
		if (!grouping_differs(k, w, s))
			continue;
		Sample *own = draw_sample_clone(k->m, s);
		Trial t = {.kind = T_SOUND};
		k->work = w;
		check_shrink(k, &t, &own, grouping_fails);
		grouping_differs(k, w, own);
		describe_grouping(k, w, own, o);
		draw_sample_free(own);
		return 1;
	}
	return 0;
}

/* ---- the reference ---- */

/* The first output that disagrees with the reference by run's rule, into
 * w->d (x the carrier's, y the reference's); 0 where none does.  Where the
 * float64 reference itself overflowed or underflowed (a naive
 * log(sum(exp(x))) at x near FLT_MAX, or sum(exp(x) * v) / sum(exp(x)),
 * inf / inf there), a value it did not give finite has nothing to be held
 * to, whatever the carrier gives. */
static int reference_differs(Ck *k, Sp *w, Sample *s)
{
	Machine *m = k->m;
	Carrier *c = m->c;
	const Row *r = s->row;
	uint64_t rng = s->seed;
	if (c->tpl == FAM_SCAN && !r->len)
		return 0; /* a scan writes nothing on a row of no positions */
	fold_seeded(m, r, 0, r->len, s->shape, &rng, w->sv[0], w->se[0]);
	outputs(m, r, w->sv[0], w->se[0], w->out[0], w->oute[0]);
	feclearexcept(FE_OVERFLOW | FE_UNDERFLOW);
	eval_reference(m, MODE_F64, r, w->ref, w->refe, w->pos, w->pose);
	int range = fetestexcept(FE_OVERFLOW | FE_UNDERFLOW) != 0, empty = !unmasked(m, r);
	for (int o = 0; o < c->nfinal + (m->map ? c->nmap * r->len : 0); o++) {
		int is_map = o >= c->nfinal, j = is_map ? (o - c->nfinal) / c->nmap : -1;
		const Def *def = is_map ? &c->map[(o - c->nfinal) % c->nmap] : &c->finalize[o];
		int q = check_ref_index(c, def->name, !is_map);
		if (q < 0)
			continue;
		int at = is_map ? m->finw + j * m->mapw + m->mapoff[def - c->map] : m->finoff[def - c->finalize];
		int width = m->refoff[q + 1] - m->refoff[q];
		const double *want = is_map ? w->pos + (size_t)j * m->refw + m->refoff[q] : w->ref + m->refoff[q];
		const double *wante = is_map ? w->pose + (size_t)j * m->refw + m->refoff[q] : w->refe + m->refoff[q];
		for (int t = 0; t < width; t++) {
			double got = w->out[0][at + t], ge = w->oute[0][at + t];
			if (range && !isfinite(want[t]))
				continue;
			int special = empty ? check_special_agree(got, want[t]) : check_special_match(got, want[t]);
			if (special == 1 || (special < 0 && same_value(got, ge, want[t], wante[t])))
				continue;
			w->d = (Diff){def, is_map, t, j, got, want[t]};
			return 1;
		}
	}
	return 0;
}

static int reference_fails(Ck *k, Trial *t, Sample **s)
{
	(void)t;
	return reference_differs(k, k->work, s[0]);
}

static void describe_reference(Ck *k, Sp *w, Sample *s, SpecialOutcome *o)
{
	Machine *m = k->m;
	Buf d = {0}, b = {0}, j = {0};
	put_output(&d, &w->d);
	buf_puts(&d, " is ");
	put_value(&d, w->d.x);
	buf_puts(&d, " but the reference gives ");
	put_value(&d, w->d.y);
	buf_printf(&d, " (row of length %d, float64)", s->row->len);
	cex_row(&b, m, s->row);
	buf_puts(&b, "\n    state = ");
	cex_state(&b, m, w->sv[0], -1);
	buf_puts(&b, "\n");
	buf_puts(&j, "{");
	cex_params_json(&j, m);
	buf_printf(&j, "\"length\": %d, \"row\": ", s->row->len);
	row_json(&j, m, s->row);
	buf_puts(&j, ", \"output\": ");
	buf_json_str(&j, w->d.out->name);
	buf_printf(&j, ", \"component\": %d, \"position\": %d, \"got\": ", w->d.comp, w->d.pos);
	buf_json_num(&j, w->d.x);
	buf_puts(&j, ", \"want\": ");
	buf_json_num(&j, w->d.y);
	buf_puts(&j, ", \"state\": ");
	cex_state_json(&j, m, w->sv[0]);
	buf_puts(&j, "}");
	o->ref_detail = buf_take(&d);
	o->ref_cex = buf_take(&b);
	o->ref_json = buf_take(&j);
}

/* Whether every float input of r is finite. */
static int finite_row(Machine *m, const Row *r)
{
	for (int t = 0; t < m->roww; t++)
		if (!isfinite(r->rowv[t]))
			return 0;
	for (size_t t = 0; t < (size_t)r->len * m->colw; t++)
		if (!isfinite(r->colv[t]))
			return 0;
	for (size_t t = 0; t < (size_t)r->len * m->elemw; t++)
		if (!isfinite(r->elemv[t]))
			return 0;
	return 1;
}

/* Whether every float input of r is finite and of moderate size: -0
 * among ordinary values, where the laws, over the reals, must hold (a
 * value near FLT_MAX may overflow a state, which the proofs leave out). */
static int moderate_row(Machine *m, const Row *r)
{
	for (int t = 0; t < m->roww; t++)
		if (!(fabs(r->rowv[t]) < 0x1p20))
			return 0;
	for (size_t t = 0; t < (size_t)r->len * m->colw; t++)
		if (!(fabs(r->colv[t]) < 0x1p20))
			return 0;
	for (size_t t = 0; t < (size_t)r->len * m->elemw; t++)
		if (!(fabs(r->elemv[t]) < 0x1p20))
			return 0;
	return 1;
}

/* The identity at the state of a row of moderate inputs (s) that
 * disagrees with the reference: 1/x at x = -0 (which x >= 0 admits) is
 * -inf, and a maximum from 0 loses it.  Such a row is an input the spec
 * is meant for, so e+a or a+e differing from a there is the identity's
 * failure, not a warning on special values. */
static int identity_breaks(Ck *k, Sample *s, CheckResult *r)
{
	Machine *m = k->m;
	LawOutcome *o = NULL;
	for (int i = 0; i < r->nlaw; i++)
		if (!strcmp(r->law[i].law, "identity"))
			o = &r->law[i];
	if (!o || !moderate_row(m, s->row) || draw_sample_eval(m, s))
		return 0;
	for (int mode = MODE_F64; mode <= MODE_F32; mode++) {
		for (int t = 0; t < m->sw; t++)
			if (isnan(s->v[mode][t]))
				return 0;
		Trial t = {.mode = (Mode)mode, .l = k->l, .le = k->le, .r = k->r, .re = k->re};
		for (t.kind = T_ID_LEFT; t.kind <= T_ID_RIGHT; t.kind++)
			if (check_trial_eval(k, &t, &s) >= 0 && !check_identity_tie(m, t.mode, s->v[mode])) {
				check_fail_law(k, o, &t, &s);
				return 1;
			}
	}
	return 0;
}

/* 1 when the row disagrees with the reference.  Shrunk to finite inputs
 * where the reference is finite, the disagreement is no matter of special
 * values but a wrong result: the soundness trials' failure, in r, where
 * they hold it (2 then).  warned: a row holding NaN or an infinity
 * disagreed already; only rows of finite values (near FLT_MAX, -0) are
 * tried further, for such a failure. */
static int try_reference(Ck *k, Sp *w, Sample *s, CheckResult *r, int warned)
{
	if ((warned && !finite_row(k->m, s->row)) || !reference_differs(k, w, s))
		return 0;
	Sample *own = draw_sample_clone(k->m, s);
	Trial t = {.kind = T_SOUND};
	k->work = w;
	check_shrink(k, &t, &own, reference_fails);
	reference_differs(k, w, own);
	if (r->sound != VERDICT_NA && finite_row(k->m, own->row) && isfinite(w->d.y)) {
		/* where the soundness trials failed already, this row says
		 * nothing more, and nothing of special values */
		int failed = r->sound == VERDICT_FAILS;
		if (!failed) {
			Sample *row = draw_sample_clone(k->m, own);
			row->whole = 1;
			failed = check_sound_row(k, row, r);
		}
		if (failed) {
			draw_sample_free(own);
			return 2;
		}
	}
	if (identity_breaks(k, own, r)) {
		draw_sample_free(own);
		return 2;
	}
	if (!warned)
		describe_reference(k, w, own, &r->special);
	draw_sample_free(own);
	return !warned;
}

void check_specials(Ck *k, CheckResult *r)
{
	Machine *m = k->m;
	Carrier *c = m->c;
	SpecialOutcome *o = &r->special;
	o->grouping = o->reference = VERDICT_NA;
	o->inputs = float_width(c->elem, c->nelem) + float_width(c->col, c->ncol) + float_width(c->row, c->nrow);
	for (int i = 0; i < r->nlaw; i++)
		o->law_fails |= r->law[i].v == VERDICT_FAILS;
	/* where a grouping differs on ordinary values, that it differs on
	 * these says nothing more */
	if (!o->inputs || k->o->special_rows <= 0 || o->law_fails)
		return;
	int ref = c->nref > 0 && !k->o->no_sound, group_bad = 0, ref_bad = 0, finite_bad = 0;
	Sp w;
	sp_init(&w, m);
	/* as the soundness trials: the reference is exact where the spec's
	 * float32 constants are not */
	eval_const_rounding(m, 1);
	/* past a warning on each side, rows go on only while the soundness
	 * trials hold: a row of finite values may still break them */
	for (int t = 0; t < k->o->special_rows && !(group_bad && (!ref || finite_bad ||
							       (ref_bad && r->sound != VERDICT_HOLDS))); t++) {
		Sample *s = special_row(k, t);
		if (!s)
			continue;
		o->rows++;
		group_bad = group_bad || try_groupings(k, &w, s, o);
		if (ref && !finite_bad && (!ref_bad || r->sound == VERDICT_HOLDS)) {
			int bad = try_reference(k, &w, s, r, ref_bad);
			ref_bad |= bad == 1, finite_bad = bad == 2;
		}
		draw_sample_free(s);
	}
	eval_const_rounding(m, 0);
	sp_free(&w);
	k->work = NULL;
	if (!o->rows)
		return;
	o->grouping = group_bad ? VERDICT_FAILS : VERDICT_HOLDS;
	/* a row found wrong on finite inputs is the soundness failure, not
	 * this warning's */
	o->reference = !ref ? VERDICT_NA : ref_bad ? VERDICT_FAILS : finite_bad ? VERDICT_NA : VERDICT_HOLDS;
}

/* ---- commuting, where the carrier does not claim it ---- */

enum { COMMUTE_ROWS = 600 };

/* Whether y is x with the sides a and b swapped: the same operations,
 * a.f in x where y has b.f and the reverse, the operands of commutative
 * operations in either order (topk's lists as pairs).  *budget bounds
 * the calls (either order at every commutative node). */
static int swapped_eq(const Carrier *c, const Expr *x, const Expr *y, int *budget)
{
	if (--*budget < 0)
		return 0;
	if (x->op != y->op || x->nargs != y->nargs || x->ty.kind != y->ty.kind || x->ty.len != y->ty.len ||
	    (x->op != EXPR_VAR && x->k != y->k) || memcmp(&x->num, &y->num, sizeof x->num))
		return 0;
	if (x->op == EXPR_VAR) {
		for (int f = 0; f < c->nstate; f++) {
			if (x->k == c->svar[STATE_A][f])
				return y->k == c->svar[STATE_B][f];
			if (x->k == c->svar[STATE_B][f])
				return y->k == c->svar[STATE_A][f];
		}
		return 1;
	}
	if (x->op == EXPR_TOPK || x->op == EXPR_TOPK_IDX) {
		static const int pairs[4] = {2, 3, 0, 1};
		for (int i = 0; i < 4; i++)
			if (!swapped_eq(c, x->a[i], y->a[pairs[i]], budget))
				return 0;
		return 1;
	}
	if ((ir_ops[x->op].flags & F_COMM) && x->nargs == 2 &&
	    swapped_eq(c, x->a[0], y->a[1], budget) && swapped_eq(c, x->a[1], y->a[0], budget))
		return 1;
	for (int i = 0; i < x->nargs; i++)
		if (!swapped_eq(c, x->a[i], y->a[i], budget))
			return 0;
	return 1;
}

/* Whether c's merge commutes by its form: every field's merge is itself
 * with a and b swapped (sums, products, max and min of the two sides,
 * softmax's rescale, topk lists), which needs no proof, and holds of
 * operations the prover's algebra leaves out.  Merges that commute only
 * in value (where(a.x > b.x, a.x, b.x)) are for the prover. */
static int merge_symmetric(const Carrier *c)
{
	int budget = 1 << 16;
	for (int f = 0; c->merge && f < c->nstate; f++)
		if (!swapped_eq(c, c->merge[f], c->merge[f], &budget))
			return 0;
	return c->merge != NULL;
}

/* b.f for a.f and a.f for b.f (ctx: by variable, NULL to keep it) */
static Expr *swap_var(void *ctx, Expr *v) { return ((Expr **)ctx)[v->k]; }

/* The first state component where a+b and b+a differ as values, else -1. */
static int state_differs(Machine *m, const Sp *w)
{
	for (int t = 0; t < m->sw; t++)
		if (!same_value(w->sv[0][t], w->se[0][t], w->sv[1][t], w->se[1][t]))
			return t;
	return -1;
}

static int commuted_differs(Ck *k, Sp *w, Sample *s)
{
	if (grouping_differs(k, w, s))
		return 1;
	return s->row->len >= 2 && state_differs(k->m, w) >= 0;
}

static int commuted_fails(Ck *k, Trial *t, Sample **s)
{
	(void)t;
	return commuted_differs(k, k->work, s[0]);
}

/* "pos is 0 as a+b but 1 as b+a, a = {...} from x = [nan], b = ..." */
static void describe_commuted(Ck *k, Sp *w, Sample *s, Buf *b)
{
	Machine *m = k->m;
	const Row *r = s->row;
	int split = split_of(w, r), t = state_differs(m, w);
	double x = t >= 0 ? w->sv[0][t] : w->d.x, y = t >= 0 ? w->sv[1][t] : w->d.y;
	if (t >= 0)
		cex_component(b, m, t);
	else
		put_output(b, &w->d);
	buf_puts(b, " is ");
	put_value(b, x);
	buf_puts(b, " as a+b but ");
	put_value(b, y);
	buf_puts(b, " as b+a, where a = ");
	cex_state(b, m, w->a, -1);
	cex_inputs(b, m, r, 0, split);
	buf_puts(b, " and b = ");
	cex_state(b, m, w->b, -1);
	cex_inputs(b, m, r, split, r->len);
	if (m->c->nparams) {
		buf_puts(b, "; ");
		cex_params(b, m);
	}
}

/* A row for the commuting trial: half the time one holding specials
 * (special_row), else an ordinary one of the families (integer inputs
 * drawn negative make sqrt's and log's NaN, wide ones exp's inf); and a
 * third of the time a special in a float row input, where assume lets it
 * be.  NULL where none could be drawn. */
static Sample *commute_row(Ck *k, int t)
{
	static const DrawFamily fams[] = {DRAW_NORMAL, DRAW_GRID, DRAW_WIDE};
	Machine *m = k->m;
	Carrier *c = m->c;
	int inputs = float_width(c->elem, c->nelem) + float_width(c->col, c->ncol);
	Sample *s = inputs && rng_next(&k->rng) & 1 ? special_row(k, t) : NULL;
	if (!s) {
		s = draw_sample_row(m, fams[t % 3], rng_int(&k->rng, 2, LEN_MAX), &k->rng);
		if (!s)
			return NULL;
		s->shape = SHAPE_RANDOM;
	}
	int rw = float_width(c->row, c->nrow);
	if (rw && rng_int(&k->rng, 0, 2) == 0)
		put_row(m, s->row, 2, -1, &k->rng);
	draw_sample_eval(m, s);
	return s;
}

/* A check of rows as commute_row draws them, on m (made here for c), with
 * the params' values ov and the others drawn from the stream of purpose:
 * 0 where a param's type cannot hold its value (no such case; m freed). */
static int rows_open(Ck *k, Machine *m, CheckOpts *o, Carrier *c, const Define *ov, int nov, uint64_t purpose)
{
	eval_init(m, c);
	check_defaults(o);
	*k = (Ck){.m = m, .o = o, .rng = rng_stream(0, purpose)};
	char msg[160];
	if (draw_params(m, ov, nov, &k->rng, msg, sizeof msg)) {
		eval_free(m);
		return 0;
	}
	return 1;
}

/* Rows as commute_row draws them, each folded as a and b and merged both
 * ways, with the params' values ov (the others drawn): 1 with the row in
 * why where the two orders differ; *rows counts those tried. */
static int commute_rows(Carrier *c, const Define *ov, int nov, int nrows, char *why, size_t n, int *rows)
{
	Machine m;
	CheckOpts o;
	Ck k;
	if (!rows_open(&k, &m, &o, c, ov, nov, RNG_CHECK_COMMUTES))
		return 0;
	Sp w;
	sp_init(&w, &m);
	k.work = &w;
	int bad = 0;
	for (int t = 0; t < nrows && !bad; t++) {
		Sample *s = commute_row(&k, t);
		if (!s)
			continue;
		(*rows)++;
		w.g = G_COMM;
		w.split = rng_int(&k.rng, 1, s->row->len > 1 ? s->row->len - 1 : 1);
		if (commuted_differs(&k, &w, s)) {
			Trial tr = {.kind = T_SOUND};
			check_shrink(&k, &tr, &s, commuted_fails);
			commuted_differs(&k, &w, s);
			Buf b = {0};
			describe_commuted(&k, &w, s, &b);
			snprintf(why, n, "a+b = b+a over the reals, but not on %s: %s", s->row->len ? "this row" : "a row", b.s);
			free(b.s);
			bad = 1;
		}
		draw_sample_free(s);
	}
	sp_free(&w);
	eval_free(&m);
	return bad;
}

/* a+b = b+a over the reals: by the merge's form, else by the prover;
 * how gets which, or why not. */
static int commutes_on_reals(Carrier *c, char *how, size_t n)
{
	if (merge_symmetric(c)) {
		snprintf(how, n, "by its form: each field's merge is itself with a and b swapped");
		return 1;
	}
	/* b+a: the merge with the sides' fields swapped */
	Expr **by_var = calloc(ir_nvars(c->ir) + 1, sizeof *by_var);
	if (!by_var)
		abort();
	for (int f = 0; f < c->nstate; f++) {
		by_var[c->svar[STATE_A][f]] = ir_ref(c->ir, c->svar[STATE_B][f]);
		by_var[c->svar[STATE_B][f]] = ir_ref(c->ir, c->svar[STATE_A][f]);
	}
	Expr **ab = calloc(2 * (size_t)c->nstate + 1, sizeof *ab), **ba = ab + c->nstate;
	const char **names = calloc((size_t)c->nstate + 1, sizeof *names);
	if (!ab || !names)
		abort();
	for (int f = 0; f < c->nstate; f++) {
		ab[f] = c->merge[f], ba[f] = ir_subst(c->ir, c->merge[f], swap_var, by_var);
		names[f] = c->state[f].name;
	}
	free(by_var);
	char proof[360];
	ProofStatus st = prove_equal(c, ab, ba, names, c->nstate, "a+b", "b+a", proof, sizeof proof);
	free(ab);
	free(names);
	snprintf(how, n, "%s (%s)", st == PROOF_PROVED ? "proved" : prove_status_name(st), proof);
	return st == PROOF_PROVED;
}

/* Rows of c tried with the params' values ov (the others drawn): 1 with
 * what was found in why; *rows counts the rows tried. */
typedef int RowsTrial(Carrier *c, const Define *ov, int nov, int nrows, char *why, size_t n, int *rows);

/* trial over the params case by case: the bool ones as the trials take
 * them (check_case_mask), and the others drawn in (0, 1] and then set,
 * all alike, to values on either side of the usual thresholds (a merge
 * may pass a NaN on where t >= 2 only).  1 where some case found
 * something (in why); *rows counts the rows tried. */
static int over_param_cases(Carrier *c, RowsTrial *trial, char *why, size_t n, int *rows)
{
	static const char *const values[] = {NULL, "0", "2", "100", "-1", "-100"};
	Define ov[64];
	int nb = 0, nv = 0, bad = 0;
	for (int p = 0; p < c->nparams && nb < CASES_FREE_MAX; p++)
		if (c->params[p].storage == TY_BOOL)
			ov[nb++] = (Define){c->params[p].name, "true"};
	for (int p = 0; p < c->nparams && nb + nv < 64; p++)
		if (c->params[p].storage != TY_BOOL)
			ov[nb + nv++] = (Define){c->params[p].name, NULL};
	int bcases = check_case_count(nb), vcases = nv ? 6 : 1;
	int nrows = COMMUTE_ROWS / (bcases * vcases) > 40 ? COMMUTE_ROWS / (bcases * vcases) : 40;
	for (int at = 0; at < bcases * vcases && !bad; at++) {
		int vc = at / bcases;
		uint32_t mask = check_case_mask(at % bcases, nb);
		for (int f = 0; f < nb; f++)
			ov[f].value = mask >> f & 1 ? "true" : "false";
		for (int f = 0; f < nv; f++)
			ov[nb + f].value = values[vc];
		bad = trial(c, ov, nb + (vc ? nv : 0), nrows, why, n, rows);
	}
	return bad;
}

static int commutes(Carrier *c, char *why, size_t n);

/* The answer is the carrier's, whatever asks (each kernel's planning and
 * each emulator module of a run ask again): found once and kept on it. */
int check_commutes(Carrier *c, char *why, size_t n)
{
	if (!c->commutes_found) {
		char found[512] = {0};
		c->commutes_found = 1 + commutes(c, found, sizeof found);
		memcpy(c->commutes_why, found, sizeof c->commutes_why - 1); /* cut as a caller's 400 bytes cut it */
		c->commutes_why[sizeof c->commutes_why - 1] = 0;
	}
	snprintf(why, n, "%s", c->commutes_why);
	return c->commutes_found - 1;
}

static int commutes(Carrier *c, char *why, size_t n)
{
	if (c->laws & LAW_COMMUTATIVE) {
		snprintf(why, n, "claimed (laws: [commutative])");
		return 1;
	}
	if (!c->merge || c->tpl == FAM_SCAN) {
		snprintf(why, n, "%s", c->merge ? "a scan" : "no merge");
		return 0;
	}
	char how[400];
	if (!commutes_on_reals(c, how, sizeof how)) {
		snprintf(why, n, "a+b = b+a is %s", how);
		return 0;
	}
	int rows = 0, bad = over_param_cases(c, commute_rows, why, n, &rows);
	/* a carrier no row of which could be drawn (assume holds nowhere)
	 * keeps its order: nothing was tried */
	if (!bad && !rows)
		snprintf(why, n, "a+b = b+a %s, but no row could be drawn to try NaN, inf and -0", how);
	else if (!bad)
		snprintf(why, n, "a+b = b+a %s, and alike on rows holding NaN, inf and -0", how);
	return !bad && rows;
}

/* ---- lifts that the identity leaves as they are ---- */

/* The same bits, NaN as NaN: a lift that the identity changes only in
 * the sign of a zero is changed (a sum's 0 + -0). */
static int same_bits(double x, double y)
{
	return isnan(x) ? isnan(y) : x == y && signbit(x) == signbit(y);
}

/* The first component where e+a (into ea) differs from a in mode md, else -1. */
static int identity_moves(Machine *m, Mode md, const double *a, double *ea, double *t)
{
	memset(t, 0, m->sw * sizeof *t);
	eval_merge(m, md, m->ident[md], t, a, t, ea, t + m->sw);
	for (int k = 0; k < m->sw; k++)
		if (!same_bits(ea[k], a[k]))
			return k;
	return -1;
}

/* "m is -inf as e+a but NaN as a, where a = {m: nan}  from x = [nan]" */
static void describe_moved(Machine *m, const Row *r, int j, const double *a, const double *ea, int k, Buf *b)
{
	cex_component(b, m, k);
	buf_puts(b, " is ");
	put_value(b, ea[k]);
	buf_puts(b, " as e+a but ");
	put_value(b, a[k]);
	buf_puts(b, " as a, where a = ");
	cex_state(b, m, a, -1);
	if (r)
		cex_inputs(b, m, r, j, j + 1);
	if (m->c->nparams) {
		buf_puts(b, "; ");
		cex_params(b, m);
	}
}

/* e+e, and e+a for the lift a of every position kept of rows as
 * commute_row draws them (NaN, +-inf, -0 among ordinary values), in both
 * modes, with the params' values ov: 1 with the first that differs in
 * why; *rows counts the rows tried. */
static int neutral_rows(Carrier *c, const Define *ov, int nov, int nrows, char *why, size_t n, int *rows)
{
	Machine m;
	CheckOpts o;
	Ck k;
	if (!rows_open(&k, &m, &o, c, ov, nov, RNG_CHECK_NEUTRAL))
		return 0;
	double *a = check_doubles(4 * (size_t)m.sw), *ea = a + m.sw, *t = ea + m.sw;
	Buf b = {0};
	int bad = 0, at;
	for (int d = MODE_F64; d <= MODE_F32 && !bad; d++)
		if ((at = identity_moves(&m, (Mode)d, m.ident[d], ea, t)) >= 0) {
			describe_moved(&m, NULL, 0, m.ident[d], ea, at, &b);
			bad = 1;
		}
	for (int r = 0; r < nrows && !bad; r++) {
		Sample *s = commute_row(&k, r);
		if (!s)
			continue;
		(*rows)++;
		for (int j = 0; j < s->row->len && !bad; j++) {
			if (!eval_assume(&m, s->row, j) || eval_masked(&m, s->row, j))
				continue;
			for (int d = MODE_F64; d <= MODE_F32 && !bad; d++) {
				eval_lift(&m, (Mode)d, s->row, j, a, t);
				if ((at = identity_moves(&m, (Mode)d, a, ea, t)) >= 0) {
					describe_moved(&m, s->row, j, a, ea, at, &b);
					bad = 1;
				}
			}
		}
		draw_sample_free(s);
	}
	if (bad)
		snprintf(why, n, "e+a is not a: %s", b.s);
	buf_free(&b);
	free(a);
	eval_free(&m);
	return bad;
}

int check_lifts_neutral(Carrier *c, char *why, size_t n)
{
	if (!c->merge || !c->identity || !c->lift || c->tpl == FAM_SCAN) {
		snprintf(why, n, "%s", c->tpl == FAM_SCAN ? "a scan" : "no merge, identity or lift");
		return 0;
	}
	Expr **by_var = calloc(ir_nvars(c->ir) + 1, sizeof *by_var);
	Expr **ea = calloc(2 * (size_t)c->nstate + 1, sizeof *ea), **a = ea + c->nstate;
	const char **names = calloc((size_t)c->nstate + 1, sizeof *names);
	if (!by_var || !ea || !names)
		abort();
	for (int f = 0; f < c->nstate; f++)
		by_var[c->svar[STATE_A][f]] = c->identity[f];
	for (int f = 0; f < c->nstate; f++) {
		ea[f] = ir_subst(c->ir, c->merge[f], swap_var, by_var); /* e+b */
		a[f] = ir_ref(c->ir, c->svar[STATE_B][f]);
		names[f] = c->state[f].name;
	}
	free(by_var);
	char proof[360];
	ProofStatus st = prove_equal(c, ea, a, names, c->nstate, "e+a", "a", proof, sizeof proof);
	free(ea);
	free(names);
	if (st != PROOF_PROVED) {
		snprintf(why, n, "e+a = a is %s (%s)", prove_status_name(st), proof);
		return 0;
	}
	int rows = 0;
	if (over_param_cases(c, neutral_rows, why, n, &rows))
		return 0;
	if (!rows) {
		snprintf(why, n, "e+a = a proved (%s), but no row could be drawn to try NaN, inf and -0", proof);
		return 0;
	}
	snprintf(why, n, "e+a = a proved (%s), and bit for bit at lifts of NaN, inf and -0", proof);
	return 1;
}
