/* runcheck.c: a device's outputs against the float64 reference.
 *
 * Tolerance (FlashAttention's rule, with a floor): a value may be off from
 * the float64 reference by twice what a naive float32 evaluation of the
 * same value may be off (the larger of its actual error and its running
 * error bound, that bound in a share of 6/sqrt(n) on rows of n > 36
 * positions, n the prefix's p + 1 at a scan's position p and at most the
 * positions whose errors reach the value (compare_row, check_value_share):
 * a naive sum that happens to land exactly must
 * not make the tolerance vanish), plus 32 float32 ulps of the output's
 * scale in its row (its largest magnitude there).  The running bound of a
 * sum whose terms cancel counts what another order may lose (eval.c's
 * add_cancellation): n / 4 times sum |x| - |sum x|, the bound of the
 * order that takes the terms of one sign first.  The naive left-to-right
 * sum of a row of mean near 0 (an integer grid's, exact) keeps its partial
 * sums small, while a device's tree, or Welford's merge with a single
 * position on its left, rounds at the scale of |x|; without that term a
 * lawful float32 mean fell outside the tolerance.  Integer outputs must
 * match exactly: the reference and the fold keep every integer exact (an
 * i64 past 2^53 with its rest beside the double, eval.h), and an output's
 * distance from it is that of the integers, not of the doubles nearest
 * them.
 *
 * Where the float64 reference is 0 (within its own bound) the output has
 * no scale for the 32 ulps, and the naive formula's bound may vanish with
 * it while the carrier's algorithm rounds at the scale of its inputs: a
 * variance kept as the variance itself (w * delta * (x - mean) / sw) is
 * off by u x^2 on a row of one position, where the two-pass reference
 * (x - mean)^2, exact but for mean's rounding squared, holds it to
 * u^2 x^2.  There a value beyond that tolerance is held to the carrier's
 * float32 left fold's running bound too, in the same share, where the
 * carrier's float64 left fold agrees with the float64 reference within
 * both their bounds (check_own_error): a carrier wrong over the reals (a
 * merge that squares delta, var x^2 on one position) gets none.  Not
 * elsewhere: a naive sqrt(q/n - (s/n)^2) on rows of a large mean has a
 * running bound as large as what it loses.
 *
 * Where the device rounded attention's softmax weights P to the inputs'
 * type before P V (RunData.p_round), the naive implementation is that of
 * FlashAttention's tests in the same precision: scores and sums in float32,
 * P rounded to f16/bf16 (or, for FP8 attention, e4m3, whose 3 mantissa
 * bits move a weight by up to 2^-4 of itself), P V accumulated in
 * float32.  Each type's bound is its own: e4m3's does not widen f16's.  A naive float32
 * evaluation of the spec keeps P in float32 and would hold such a kernel
 * to a precision its algorithm does not have.
 *
 * Where the reference's naive float32 evaluation overflowed and float64's
 * did not (a sum of exp over scores of hundreds), the carrier's own
 * float32 fold, which rescales as it goes, is the naive version, its error
 * taken up to 2^-10 of the output's scale.  The naive versions built from
 * the spec's lift and finalize (that one, and the P-rounded attention)
 * count toward the tolerance only up to such a bound: otherwise a wrong
 * finalize would set its own.
 *
 * Where the float64 reference overflowed or underflowed in a row (a sum of
 * exp over logits of 800, or of -1e4 padding) and so is infinite or NaN,
 * a finite result has nothing to be held to: it is counted as not
 * compared, and neither passes nor fails.  So is any result on an empty
 * (or fully masked) row where the reference is NaN (a mean's 0 / 0): the
 * reference leaves it undefined, as check's soundness has it.  Elsewhere a
 * NaN or an infinity on either side must be matched by the same on the
 * other: a NaN reference (a row holding a NaN) takes a NaN only, and such
 * matches are counted, as they say nothing of a value's size. */
#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/check/check.h"
#include "compiler/check/eval.h"
#include "compiler/devices/run.h"

/* The reference and the carrier's left fold of one row, with error bounds
 * and the rests of their integers (ir_int_exact). */
typedef struct {
	double *refv, *refe, *posv, *pose; /* reference: per row, per position */
	double *fin, *fine, *map, *mape;   /* fold: finalize (per position for scans), map */
	double *refr, *posr, *finr, *mapr;
} Vals;

typedef struct {
	Machine *m;
	RunData *d;
	Row *row;
	Vals v[2];                  /* by Mode: float64 truth, naive float32 */
	double *pfin, *pfine, *pscr; /* the naive attention with P rounded (p_round): finalized, bound */
	double *pv, *dv;             /* its o, and the bound of P's rounding in o */
	double *want, *wante, *wantr, *naive, *bound; /* one output of one row: positions x width */
	double *s, *se, *sr, *t, *te;
	double *l, *le; /* a lift's values and bounds, its rests after them (eval_step_exact) */
	int need_fold; /* some output has no reference: compare it with the float64 fold */
	int ref_range; /* the row's float64 reference overflowed or underflowed somewhere */
	int capped;    /* the output compared now holds naive values from the spec's own fold (NAIVE_CAP) */
	int first;     /* the row's first unmasked position; its length when it has none */
	int folded[2]; /* by Mode: v[md].fin and .map hold this row's fold */
} Ctx;

/* Where the values of the output compared now are in the carrier's left
 * folds (Vals.fin, or Vals.map where map): value k of a row at off +
 * (k / w) * stride + k % w. */
typedef struct {
	int map, off, stride, w;
} FoldAt;

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p)
		abort();
	return p;
}

/* The naive attention with P rounded (naive_rounded_p) is the spec's
 * own lift and finalize, not its reference: its distance from the
 * reference counts toward the tolerance up to this many times its bound
 * (P's rounding and float32's running bound), beyond which it can only be
 * the spec that is wrong (a finalize of o / l * 1.2 passed as its own
 * naive version). */
enum { NAIVE_CAP = 4 };
/* The bound of a naive value taken from the carrier's float32 fold where
 * the reference's float32 evaluation overflowed (check_outputs). */
#define FOLD_NAIVE (-1.0)

/* How far the naive float32 evaluation may be off (check_naive_error).
 * FOLD_NAIVE: no error bound, the fold's actual error, up to a float32
 * result whose scores of hundreds moved each weight by 2^-10 (an error of
 * the spec itself beyond).  Else where the naive float32 formula
 * overflowed where float64 did not (a sum of exp past 88), its running
 * bound stands in, whole (the share assumes an actual error beside it);
 * without one, the floor alone.  The rule is check's too
 * (check_naive_error), which holds carriers to it. */
static double naive_error(double want, double naive, double bound, double share, double scale, int capped)
{
	double err = check_naive_error(want, naive, bound, share, scale, bound == FOLD_NAIVE);
	/* the naive with P rounded is built from the spec's own lift and
	 * finalize: a wrong finalize must not widen its own tolerance */
	if (bound != FOLD_NAIVE && capped && err > NAIVE_CAP * 0x1p-24 * bound)
		err = NAIVE_CAP * 0x1p-24 * bound;
	return err;
}

/* empty: the value is that of no position (an empty or fully masked row,
 * or a scan's prefix of masked positions); own: the carrier's own float32
 * error (check_own_error), 0 where not taken; gotr, wantr: the rests of
 * an integer output's values */
static void compare_value(OutCheck *oc, double got, double gotr, double want, double wantr, double naive,
			  double bound, double own, double share, double scale, int exact, int range, int capped,
			  int empty, size_t at)
{
	oc->compared++;
	if (range && !isfinite(want) && isfinite(got)) {
		/* log(sum(exp(x))) over x = -1e4 is -inf in float64, or inf/inf a
		 * NaN: no reference to hold a finite result to */
		oc->out_of_range++;
		return;
	}
	if (empty && isnan(want) && !isnan(got)) {
		oc->empty_nan++; /* an empty row's 0 / 0: check takes any value there */
		return;
	}
	int special = check_special_match(got, want);
	if (special >= 0) {
		if (!special)
			oc->at = oc->nan_mismatch++ ? oc->at : at; /* the first: at says where, a NaN before a ratio */
		else if (isnan(want))
			oc->nan_both++;
		else
			oc->inf_both++;
		return;
	}
	double err = exact ? check_int_distance(got, gotr, want, wantr) : fabs(got - want);
	double naive_only = naive_error(want, naive, bound, share, scale, capped);
	double naive_err = fmax(naive_only, own);
	if (!exact && isfinite(naive_only)) {
		double actual = isfinite(naive) ? fabs(naive - want) : 0;
		if (actual >= naive_only && actual > oc->naive_worst)
			oc->naive_worst = actual, oc->naive_at = at;
		else if (actual < naive_only && naive_only > oc->bound_worst)
			oc->bound_worst = naive_only, oc->bound_at = at;
	}
	if (!exact && isfinite(want))
		oc->want_scale = fmax(oc->want_scale, fabs(want));
	double tol = exact ? 0 : check_tolerance(naive_err, scale);
	double ratio = err == 0 ? 0 : tol > 0 ? err / tol : INFINITY;
	if (err > oc->max_abs)
		oc->max_abs = err;
	if (want != 0 && err / fabs(want) > oc->max_rel)
		oc->max_rel = err / fabs(want);
	if (ratio > oc->worst_ratio) {
		oc->worst_ratio = ratio;
		if (!oc->nan_mismatch)
			oc->at = at;
	}
}

/* The running bound adds up |rounding errors| over a row's n positions,
 * where errors of random sign add up as sqrt(n) (Higham and Mary, 2019:
 * beyond 6 sqrt(n) u with probability under 1e-7); so past 36 positions it
 * is a floor only in that share (check_bound_share).  In full it let a
 * variance 20% off pass on rows whose mean is 1000 times their spread.
 * n is at most the positions whose errors reach the value (check_value_share):
 * a state that decays holds fewer than its row or prefix. */
static double value_share(int n, double bound, double want) { return check_value_share(n, bound, want); }

/* An output's scale: the largest finite magnitude of its n wanted values. */
static double scale_of(const double *want, int n)
{
	double s = 0;
	for (int k = 0; k < n; k++)
		if (isfinite(want[k]))
			s = fmax(s, fabs(want[k]));
	return s;
}

static void fold_row(Ctx *x, Mode md);

/* The carrier's own float32 error at value k of the output at fa
 * (check_own_error), from its left folds in both modes: folded once a row,
 * and only for a row with a value beyond the naive float32 evaluation's
 * tolerance. */
static double own_error(Ctx *x, const FoldAt *fa, int k, double share)
{
	for (int md = 0; md < 2; md++)
		if (!x->folded[md])
			fold_row(x, (Mode)md), x->folded[md] = 1;
	size_t at = (size_t)fa->off + (size_t)(k / fa->w) * fa->stride + k % fa->w;
	const Vals *f = &x->v[MODE_F64], *h = &x->v[MODE_F32];
	if (fa->map)
		return check_own_error(f->map[at], f->mape[at], x->want[k], x->wante[k], h->mape[at], share);
	return check_own_error(f->fin[at], f->fine[at], x->want[k], x->wante[k], h->fine[at], share);
}

/* Compare positions [0, npos) of one output of one row: got at flat index
 * base; fa: where the carrier's folds hold it, NULL where they are what
 * it is compared with. */
static void compare_row(Ctx *x, OutCheck *oc, const Buffer *got, size_t base, int npos, int w, int exact,
			const FoldAt *fa)
{
	double scale = scale_of(x->want, npos * w);
	for (int k = 0; k < npos * w; k++) {
		/* a scan's position p is of the prefix 0..p: its running bound
		 * adds up the errors of p + 1 positions, not of the row's (at len
		 * 100000 a share of 0.019 failed an Adam scan at position 38, where
		 * 1 - b2^(p+1) cancels, as accurate as float32 is there), and of
		 * fewer where the state decays (check_value_share); attention
		 * with P rounded keeps the bound whole: it carries the bound of that
		 * rounding, and tensor cores' accumulation is not modelled here */
		double share = x->pfin ? 1 : value_share(x->d->scan ? k / w + 1 : x->d->len, x->bound[k], x->want[k]);
		int empty = x->d->scan ? k / w < x->first : x->first >= x->d->len;
		double gr, g = run_buffer_get_exact(got, base * w + k, &gr), own = 0;
		/* FOLD_NAIVE: the fold is the naive version already, and its
		 * running bound, through exp of scores of hundreds, says nothing */
		if (fa && !exact && x->bound[k] != FOLD_NAIVE && isfinite(g) && isfinite(x->want[k]) &&
		    fabs(g - x->want[k]) > check_tolerance(naive_error(x->want[k], x->naive[k], x->bound[k], share, scale,
									 x->capped), scale))
			own = own_error(x, fa, k, share);
		compare_value(oc, g, gr, x->want[k], x->wantr[k], x->naive[k], x->bound[k], own, share, scale, exact,
			      x->ref_range, x->capped, empty, base * w + k);
	}
}

static int ref_of(Carrier *c, const char *name, int per_row)
{
	for (int q = 0; q < c->nref; q++)
		if (c->ref[q].per_row == per_row && !strcmp(c->ref[q].name, name))
			return q;
	return -1;
}

/* Left fold of the row in one mode: finalize after the whole row, or
 * after every position for scans; map at every position. */
static void fold_row(Ctx *x, Mode md)
{
	Machine *m = x->m;
	RunData *d = x->d;
	Vals *v = &x->v[md];
	eval_identity(m, md, x->s, x->se);
	memset(x->sr, 0, m->sw * sizeof *x->sr);
	for (int j = 0; j < d->len; j++) {
		eval_step_exact(m, md, x->row, j, x->s, x->se, x->sr, x->l);
		if (d->scan) {
			size_t at = (size_t)j * m->finw;
			eval_finalize_exact(m, md, x->row, x->s, x->se, x->sr, v->fin + at, v->fine + at, v->finr + at);
		}
	}
	if (d->scan)
		return;
	eval_finalize_exact(m, md, x->row, x->s, x->se, x->sr, v->fin, v->fine, v->finr);
	for (int j = 0; j < d->len && m->c->nmap; j++) {
		size_t at = (size_t)j * m->mapw;
		eval_map_exact(m, md, x->row, j, x->s, x->se, x->sr, v->map + at, v->mape + at, v->mapr + at);
	}
}

/* The unit roundoff and half the smallest subnormal of f16, bf16 or
 * f8e4m3: the rounding of p moves it by at most max(u p, eta).  For e4m3
 * (4 significant bits, subnormals of 2^-9) u is 2^-4 and eta 2^-10: P in
 * (0, 1] never reaches its saturation at 448, and below 2^-6 a weight
 * moves by up to half a subnormal step, not by u of itself. */
static double round_in(int kind, double p, double *u, double *eta)
{
	switch (kind) {
	case TY_BF16: *u = 0x1p-8, *eta = 0x1p-134; return run_bf16_value(run_bf16_bits(p));
	case TY_F8E4M3: *u = 0x1p-4, *eta = 0x1p-10; return run_f8e4m3_value(run_f8e4m3_bits(p));
	default: *u = 0x1p-11, *eta = 0x1p-25; return run_f16_value(run_f16_bits(p));
	}
}

/* o + and - its bound dv through the finalize into pfin and pfine (in
 * units of float32's unit roundoff), the rest of the state s as it is. */
static void finalize_rounded(Ctx *x, double *s, int fo, int w)
{
	Machine *m = x->m;
	double *zero = x->te, *scre = x->pscr + m->finw;
	memset(zero, 0, m->sw * sizeof *zero);
	memcpy(s + fo, x->pv, w * sizeof *s);
	eval_finalize(m, MODE_F32, x->row, s, zero, x->pfin, scre);
	memset(x->pfine, 0, m->finw * sizeof *x->pfine);
	for (int sg = -1; sg <= 1; sg += 2) {
		for (int t = 0; t < w; t++)
			s[fo + t] = x->pv[t] + sg * x->dv[t];
		eval_finalize(m, MODE_F32, x->row, s, zero, x->pscr, scre);
		for (int k = 0; k < m->finw; k++)
			x->pfine[k] = fmax(x->pfine[k], fabs(x->pscr[k] - x->pfin[k]) / 0x1p-24);
	}
}

/* The naive weighted sum with P rounded: the carrier's float32 fold (its
 * merge is a sum), o's terms w_j v_j unrounded, and the bound of rounding
 * each w_j, sum max(u |w_j v_j|, eta |v_j|), carried through the finalize
 * as naive_rounded_p's. */
static void naive_rounded_sum(Ctx *x)
{
	Machine *m = x->m;
	RunData *d = x->d;
	int fo = m->soff[d->p_round.o], w = d->c->state[d->p_round.o].ty.len ? d->c->state[d->p_round.o].ty.len : 1;
	const double *vc = x->row->colv + m->coloff[d->p_round.v];
	double u, eta;
	round_in(d->p_round.kind, 0, &u, &eta);
	eval_identity(m, MODE_F32, x->s, x->se);
	memset(x->dv, 0, w * sizeof *x->dv);
	for (int j = 0; j < d->len; j++) {
		if (eval_masked(m, x->row, j))
			continue;
		eval_lift(m, MODE_F32, x->row, j, x->l, x->le);
		memcpy(x->t, x->s, m->sw * sizeof *x->t);
		memcpy(x->te, x->se, m->sw * sizeof *x->te);
		eval_merge(m, MODE_F32, x->t, x->te, x->l, x->le, x->s, x->se);
		for (int t = 0; t < w; t++)
			x->dv[t] += fmax(u * fabs(x->l[fo + t]), eta * fabs(vc[(size_t)j * m->colw + t]));
	}
	memcpy(x->t, x->s, m->sw * sizeof *x->t);
	memcpy(x->pv, x->s + fo, w * sizeof *x->pv);
	finalize_rounded(x, x->t, fo, w);
}

/* The naive attention with P rounded, as the state (max s, sum p, sum
 * round(p) v) with p_j = e^(s_j - max s) in (0, 1] (the weights before the
 * division by l, as the kernel rounds them), finalized in float32.  The
 * bound of P's rounding in o, sum max(u p_j, eta) |v_j|, is carried through
 * the finalize by evaluating it at o + and - that bound, in units of
 * float32's unit roundoff. */
static void naive_rounded_p(Ctx *x)
{
	Machine *m = x->m;
	RunData *d = x->d;
	if (d->p_round.m < 0) {
		naive_rounded_sum(x);
		return;
	}
	int fm = m->soff[d->p_round.m], fl = m->soff[d->p_round.l], fo = m->soff[d->p_round.o];
	int w = d->c->state[d->p_round.o].ty.len ? d->c->state[d->p_round.o].ty.len : 1;
	double mx = -INFINITY, l = 0, u, eta;
	for (int j = 0; j < d->len; j++)
		if (!eval_masked(m, x->row, j)) {
			eval_lift(m, MODE_F32, x->row, j, x->l, x->le);
			mx = fmax(mx, x->l[fm]);
		}
	memset(x->pv, 0, w * sizeof *x->pv);
	memset(x->dv, 0, w * sizeof *x->dv);
	for (int j = 0; j < d->len && mx > -INFINITY; j++) {
		if (eval_masked(m, x->row, j))
			continue;
		eval_lift(m, MODE_F32, x->row, j, x->l, x->le);
		double p = (float)exp((float)(x->l[fm] - mx)), pr = round_in(d->p_round.kind, p, &u, &eta);
		l = (float)(l + p);
		for (int t = 0; t < w; t++) {
			x->pv[t] = (float)(x->pv[t] + pr * x->l[fo + t]);
			x->dv[t] += fmax(u * p, eta) * fabs(x->l[fo + t]);
		}
	}
	double *s = x->t;
	eval_identity(m, MODE_F32, s, x->te);
	if (mx > -INFINITY) /* else the identity, o 0 (pv) within 0 (dv) */
		s[fm] = mx, s[fl] = l;
	finalize_rounded(x, s, fo, w);
}

/* The reference of row in mode md into x->v[md]; in float64, whether it
 * overflowed or underflowed on the way, into x->ref_range. */
static void reference_of(Ctx *x, Mode md, const Row *row)
{
	Vals *v = &x->v[md];
	feclearexcept(FE_OVERFLOW | FE_UNDERFLOW);
	eval_reference_exact(x->m, md, row, v->refv, v->refe, v->refr, v->posv, v->pose, v->posr);
	if (md == MODE_F64)
		x->ref_range = fetestexcept(FE_OVERFLOW | FE_UNDERFLOW) != 0;
}

/* The row's reference and left folds, which depend on its inputs alone
 * (a RunChecker that keeps rows stores them); the naive attention with P
 * rounded depends on the device's p_round too, and is computed apart. */
static void row_values(Ctx *x)
{
	Machine *m = x->m;
	x->folded[MODE_F64] = x->folded[MODE_F32] = x->need_fold;
	for (int md = 0; md < 2; md++) {
		if (m->c->nref && !x->d->scan)
			reference_of(x, (Mode)md, x->row);
		if (x->need_fold)
			fold_row(x, (Mode)md);
	}
}

/* Gather one output of the row, in both modes, into want/naive/bound
 * (and want's rests). */
enum { GET_VAL, GET_ERR, GET_REST };
static void gather(Ctx *x, int q, int npos, int w, const double *(*src)(const Vals *, int what, size_t at),
		   int o_off, int stride, int ref_stride)
{
	for (int p = 0; p < npos; p++)
		for (int t = 0; t < w; t++) {
			size_t k = (size_t)p * w + t;
			size_t at = q >= 0 ? (size_t)p * ref_stride + x->m->refoff[q] + t : (size_t)p * stride + o_off + t;
			x->want[k] = *src(&x->v[MODE_F64], GET_VAL, at);
			x->wante[k] = *src(&x->v[MODE_F64], GET_ERR, at);
			x->wantr[k] = *src(&x->v[MODE_F64], GET_REST, at);
			x->naive[k] = *src(&x->v[MODE_F32], GET_VAL, at);
			x->bound[k] = *src(&x->v[MODE_F32], GET_ERR, at);
		}
}

static const double *from_ref(const Vals *v, int what, size_t at)
{
	return (what == GET_ERR ? v->refe : what == GET_REST ? v->refr : v->refv) + at;
}
static const double *from_pos(const Vals *v, int what, size_t at)
{
	return (what == GET_ERR ? v->pose : what == GET_REST ? v->posr : v->posv) + at;
}
static const double *from_fin(const Vals *v, int what, size_t at)
{
	return (what == GET_ERR ? v->fine : what == GET_REST ? v->finr : v->fin) + at;
}
static const double *from_map(const Vals *v, int what, size_t at)
{
	return (what == GET_ERR ? v->mape : what == GET_REST ? v->mapr : v->map) + at;
}

static void check_outputs(Ctx *x, RunCheck *rc, int r)
{
	Machine *m = x->m;
	Carrier *c = m->c;
	RunData *d = x->d;
	int byref = c->nref && !d->scan, npos = d->scan ? d->len : 1;
	for (int o = 0; o < c->nfinal; o++) {
		int w = d->fin[o].width, q = byref ? ref_of(c, c->finalize[o].name, 1) : -1;
		gather(x, q, npos, w, q >= 0 ? from_ref : from_fin, m->finoff[o], m->finw, 0);
		x->capped = x->pfin && c->finalize[o].e->ty.len;
		/* Where the reference's naive float32 evaluation overflowed and
		 * float64's did not (softmax over scores past 88), the carrier's
		 * own float32 fold, which rescales as it goes, is the naive
		 * version: it rounds the scores as a float32 kernel does, which
		 * the running bound alone leaves out. */
		for (int k = 0; q >= 0 && npos == 1 && !(x->pfin && c->finalize[o].e->ty.len) && k < w; k++) {
			if (isfinite(x->naive[k]) || !isfinite(x->want[k]))
				continue;
			if (!x->folded[MODE_F32])
				fold_row(x, MODE_F32), x->folded[MODE_F32] = 1;
			if (!isfinite(x->v[MODE_F32].fin[m->finoff[o] + k]))
				continue;
			x->naive[k] = x->v[MODE_F32].fin[m->finoff[o] + k];
			x->bound[k] = FOLD_NAIVE; /* the fold's running bound, over e^380, means nothing here */
		}
		for (int k = 0; x->pfin && c->finalize[o].e->ty.len && k < w; k++) { /* outputs of o: P rounded */
			x->naive[k] = x->pfin[m->finoff[o] + k];
			x->bound[k] += x->pfine[m->finoff[o] + k];
		}
		FoldAt fa = {0, m->finoff[o], 0, w};
		compare_row(x, &rc->out[o], &d->fin[o], (size_t)r * npos, npos, w, !ty_is_float(c->finalize[o].e->ty),
			    q >= 0 ? &fa : NULL);
		x->capped = 0;
	}
	for (int o = 0; o < c->nmap && !d->scan; o++) {
		int w = d->map[o].width, q = byref ? ref_of(c, c->map[o].name, 0) : -1;
		gather(x, q, d->len, w, q >= 0 ? from_pos : from_map, m->mapoff[o], m->mapw, m->refw);
		FoldAt fa = {1, m->mapoff[o], m->mapw, w};
		compare_row(x, &rc->out[c->nfinal + o], &d->map[o], (size_t)r * d->len, d->len, w,
			    !ty_is_float(c->map[o].e->ty), q >= 0 ? &fa : NULL);
	}
}

/* Scans: the reference over the prefix 0..j at up to SCAN_PREFIXES
 * positions j of the row (the last among them), each held to the rule
 * above, as the spec defines a scan's reference; every position is also
 * held to the float64 left fold (check_outputs). */
#define SCAN_PREFIXES 16 /* a macro: the basis of scan outputs (outputs_init) names it */
#define STR_OF(x) #x
#define STR(x) STR_OF(x)

static void check_scan_prefixes(Ctx *x, RunCheck *rc, int r)
{
	Machine *m = x->m;
	Carrier *c = m->c;
	RunData *d = x->d;
	int n = d->len < SCAN_PREFIXES ? d->len : SCAN_PREFIXES;
	for (int s = 0; s < n; s++) {
		int j = d->len - 1 - (int)((long long)s * d->len / n);
		Row pre = *x->row;
		pre.len = j + 1;
		pre.len_name = x->row->len; /* len is the row's, as the carrier has it */
		for (int md = 0; md < 2; md++)
			reference_of(x, (Mode)md, &pre);
		for (int o = 0; o < c->nfinal; o++) {
			int q = ref_of(c, c->finalize[o].name, 1), w = d->fin[o].width;
			if (q < 0)
				continue;
			const double *want = x->v[MODE_F64].refv + m->refoff[q], *naive = x->v[MODE_F32].refv + m->refoff[q],
				     *bound = x->v[MODE_F32].refe + m->refoff[q], *wantr = x->v[MODE_F64].refr + m->refoff[q];
			double scale = scale_of(want, w);
			size_t at = ((size_t)r * d->len + j) * w;
			for (int t = 0; t < w; t++) {
				double gr, g = run_buffer_get_exact(&d->fin[o], at + t, &gr);
				double share = value_share(pre.len, bound[t], want[t]);
				compare_value(&rc->out[o], g, gr, want[t], wantr[t], naive[t], bound[t], 0, share, scale,
					      !ty_is_float(c->finalize[o].e->ty), x->ref_range, 0, j < x->first, at + t);
			}
		}
	}
}

static void vals_alloc(Vals *v, const Machine *m, size_t L)
{
	v->refv = xcalloc(m->refw, sizeof(double)), v->refe = xcalloc(m->refw, sizeof(double));
	v->posv = xcalloc(L * m->refw, sizeof(double)), v->pose = xcalloc(L * m->refw, sizeof(double));
	v->fin = xcalloc(L * m->finw, sizeof(double)), v->fine = xcalloc(L * m->finw, sizeof(double));
	v->map = xcalloc(L * m->mapw, sizeof(double)), v->mape = xcalloc(L * m->mapw, sizeof(double));
	v->refr = xcalloc(m->refw, sizeof(double)), v->posr = xcalloc(L * m->refw, sizeof(double));
	v->finr = xcalloc(L * m->finw, sizeof(double)), v->mapr = xcalloc(L * m->mapw, sizeof(double));
}

static void vals_free(Vals *v)
{
	double *all[] = {v->refv, v->refe, v->posv, v->pose, v->fin, v->fine, v->map, v->mape,
			 v->refr, v->posr, v->finr, v->mapr};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i]);
}

/* A row's values kept by a RunChecker (runchecker_keep): both modes'
 * Vals end to end, which of its folds are done, and whether its float64
 * reference overflowed. */
typedef struct {
	double *vals;
	int folded[2], ref_range;
} KeptRow;

/* Copy both modes' Vals to (save) or from kept vals, in vals_alloc's sizes. */
static void vals_copy(Vals *v, double *kept, const Machine *m, size_t L, int save)
{
	size_t R = m->refw, P = L * m->refw, F = L * m->finw, M = L * m->mapw;
	for (int md = 0; md < 2; md++) {
		double *all[] = {v[md].refv, v[md].refe, v[md].refr, v[md].posv, v[md].pose, v[md].posr,
				 v[md].fin,  v[md].fine, v[md].finr, v[md].map,  v[md].mape, v[md].mapr};
		size_t size[] = {R, R, R, P, P, P, F, F, F, M, M, M};
		for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
			memcpy(save ? kept : all[i], save ? all[i] : kept, size[i] * sizeof *kept);
			kept += size[i];
		}
	}
}

static size_t vals_size(const Machine *m, size_t L)
{
	return 2 * 3 * (m->refw + L * (m->refw + m->finw + m->mapw));
}

static void outputs_init(Ctx *x, RunCheck *rc)
{
	Carrier *c = x->d->c;
	memset(rc, 0, sizeof *rc);
	rc->nout = c->nfinal + (x->d->scan ? 0 : c->nmap);
	rc->out = xcalloc(rc->nout, sizeof *rc->out);
	x->need_fold = !c->nref || x->d->scan;
	for (int o = 0; o < rc->nout; o++) {
		rc->out[o].name = strdup(o < c->nfinal ? c->finalize[o].name : c->map[o - c->nfinal].name);
		int has_ref = c->nref && ref_of(c, rc->out[o].name, o < c->nfinal) >= 0, fold = !has_ref || x->d->scan;
		rc->out[o].basis = !fold ? "the float64 reference"
			: has_ref ? "the carrier folded left to right in float64, and the float64 reference over " STR(SCAN_PREFIXES)
				    " prefixes a row"
				  : "the carrier folded left to right in float64";
		x->need_fold |= fold;
	}
}

/* Fold the check of one head into the whole: worst cases, with flat
 * indices into the whole arrays. */
static void merge_head(RunCheck *all, const RunCheck *one, const RunData *d, int h)
{
	for (int o = 0; o < all->nout; o++) {
		OutCheck *a = &all->out[o];
		const OutCheck *x = &one->out[o];
		const Buffer *b = o < d->c->nfinal ? &d->fin[o] : &d->map[o - d->c->nfinal];
		size_t per = b->n / d->heads * b->width;
		if (!a->nan_mismatch && (x->nan_mismatch || x->worst_ratio > a->worst_ratio))
			a->at = x->at + h * per;
		a->worst_ratio = fmax(a->worst_ratio, x->worst_ratio);
		a->max_abs = fmax(a->max_abs, x->max_abs);
		a->max_rel = fmax(a->max_rel, x->max_rel);
		a->nan_mismatch += x->nan_mismatch;
		a->out_of_range += x->out_of_range;
		a->nan_both += x->nan_both;
		a->inf_both += x->inf_both;
		a->empty_nan += x->empty_nan;
		if (x->naive_worst > a->naive_worst)
			a->naive_worst = x->naive_worst, a->naive_at = x->naive_at + h * per;
		if (x->bound_worst > a->bound_worst)
			a->bound_worst = x->bound_worst, a->bound_at = x->bound_at + h * per;
		a->want_scale = fmax(a->want_scale, x->want_scale);
		a->compared += x->compared;
	}
	all->ok &= one->ok;
}

static void check_one(Machine *m, RunData *d, RunCheck *rc, Row **cols, KeptRow *kept);

/* One evaluation machine for every check of a carrier: a batch of
 * sequences (paged.c) or the heads of a run would otherwise build the
 * carrier's programs once each. */
struct RunChecker {
	Machine m;
	/* runchecker_keep: the inputs of the run checked last (inputs_of) and
	 * its rows' values, by head and row */
	int keep;
	unsigned char *in;
	size_t nin;
	KeptRow *rows;
	int nrows, reused;
};

static void kept_drop(RunChecker *k)
{
	for (int r = 0; r < k->nrows; r++)
		free(k->rows[r].vals);
	free(k->rows), free(k->in);
	k->rows = NULL, k->in = NULL, k->nrows = 0, k->nin = 0;
}

static void put(unsigned char **at, const void *p, size_t bytes)
{
	if (*at)
		memcpy(*at, p, bytes), *at += bytes;
}

/* d's inputs end to end into at (NULL: only counted): its shape, params
 * and input arrays, all that a row's reference and folds read. */
static size_t inputs_of(const RunData *d, unsigned char *at)
{
	const Carrier *c = d->c;
	int shape[] = {d->rows, d->len, d->qpos, d->heads, d->kv_heads, d->scan};
	unsigned char *start = at;
	size_t n = sizeof shape + c->nparams * sizeof *d->params;
	put(&at, shape, sizeof shape);
	put(&at, d->params, c->nparams * sizeof *d->params);
	const Buffer *bufs[] = {d->row, d->col, d->elem};
	int nbuf[] = {c->nrow, c->ncol, c->nelem};
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < nbuf[s]; k++) {
			size_t bytes = bufs[s][k].n * bufs[s][k].width * run_kind_size(bufs[s][k].kind);
			put(&at, bufs[s][k].p, bytes);
			n += bytes;
		}
	return start ? (size_t)(at - start) : n;
}

/* The kept rows for d: those of the last run where d has its inputs
 * (their values reused), else fresh ones; NULL where d is paged (its
 * columns live in a pool that inputs_of does not read). */
static KeptRow *kept_for(RunChecker *k, const RunData *d)
{
	if (d->page.size)
		return NULL;
	size_t n = inputs_of(d, NULL);
	unsigned char *in = xcalloc(n, 1);
	inputs_of(d, in);
	int rows = d->rows * (d->heads > 1 ? d->heads : 1);
	if (k->in && k->nin == n && k->nrows == rows && !memcmp(k->in, in, n)) {
		free(in);
		return k->rows;
	}
	kept_drop(k);
	k->in = in, k->nin = n, k->nrows = rows;
	k->rows = xcalloc(rows, sizeof *k->rows);
	return k->rows;
}

void runchecker_keep(RunChecker *k) { k->keep = 1; }

int runchecker_reused(const RunChecker *k) { return k->reused; }

RunChecker *runchecker_new(Carrier *c)
{
	RunChecker *k = xcalloc(1, sizeof *k);
	eval_init(&k->m, c);
	/* the carrier's float64 truth rounds what the carrier itself rounds: f32(k) of an integer */
	eval_int_rounding(&k->m, 1);
	return k;
}

void runchecker_free(RunChecker *k)
{
	if (!k)
		return;
	kept_drop(k);
	eval_free(&k->m);
	free(k);
}

void runchecker_run(RunChecker *k, RunData *d, RunCheck *rc)
{
	if (d->c != k->m.c) {
		fputs("assoc: runchecker_run: a run of another carrier\n", stderr);
		abort();
	}
	KeptRow *kept = k->keep ? kept_for(k, d) : NULL;
	k->reused = 0;
	for (int r = 0; kept && r < k->nrows; r++)
		k->reused += kept[r].vals != NULL;
	if (d->heads <= 1) {
		check_one(&k->m, d, rc, NULL, kept);
		return;
	}
	/* a key/value head's columns loaded once for its query heads */
	Row *cols = NULL;
	for (int h = 0, g = d->heads / d->kv_heads; h < d->heads; h++) {
		if (h % g == 0)
			eval_row_free(cols), cols = NULL;
		RunData *v = rundata_head_view(d, h);
		RunCheck one;
		check_one(&k->m, v, &one, &cols, kept ? kept + (size_t)h * d->rows : NULL);
		if (h == 0)
			*rc = one; /* the first head's check is the start of the whole */
		else {
			merge_head(rc, &one, d, h);
			runcheck_free(&one);
		}
		rundata_view_free(v);
	}
	eval_row_free(cols);
}

void runcheck_run(RunData *d, RunCheck *rc)
{
	RunChecker *k = runchecker_new(d->c);
	runchecker_run(k, d, rc);
	runchecker_free(k);
}

/* cols: NULL; or where the Row of d's columns goes, kept for the next
 * call, which finds them loaded when it is not NULL.  kept: NULL, or
 * d's rows' values, reused where a row has them, stored where not. */
static void check_one(Machine *m, RunData *d, RunCheck *rc, Row **cols, KeptRow *kept)
{
	Carrier *c = d->c;
	Ctx x = {.m = m, .d = d};
	memcpy(m->params, d->params, c->nparams * sizeof *d->params);
	size_t L = d->len ? d->len : 1, W = m->refw + m->finw + m->mapw + 1;
	x.row = cols && *cols ? *cols : eval_row_new(m, d->len);
	if (!cols || !*cols)
		rundata_load_cols(d, m, x.row);
	x.want = xcalloc(L * W, sizeof(double));
	x.wante = xcalloc(L * W, sizeof(double));
	x.wantr = xcalloc(L * W, sizeof(double));
	x.naive = xcalloc(L * W, sizeof(double));
	x.bound = xcalloc(L * W, sizeof(double));
	double *st = xcalloc(8 * (size_t)m->sw, sizeof(double));
	x.s = st, x.se = st + m->sw, x.sr = st + 2 * m->sw, x.t = st + 3 * m->sw, x.te = st + 4 * m->sw;
	x.l = st + 5 * m->sw, x.le = st + 6 * m->sw;
	for (int md = 0; md < 2; md++)
		vals_alloc(&x.v[md], m, L);
	outputs_init(&x, rc);
	if (d->p_round.kind == TY_F16 || d->p_round.kind == TY_BF16 || d->p_round.kind == TY_F8E4M3) {
		x.pfin = xcalloc(4 * (size_t)m->finw, sizeof(double));
		x.pfine = x.pfin + m->finw, x.pscr = x.pfin + 2 * (size_t)m->finw;
		x.pv = xcalloc(2 * (size_t)m->sw, sizeof(double));
		x.dv = x.pv + m->sw;
	}
	for (int r = 0; r < d->rows; r++) {
		rundata_load_row(d, m, r, x.row);
		for (x.first = 0; x.first < d->len && eval_masked(m, x.row, x.first); x.first++)
			;
		KeptRow *kr = kept ? &kept[r] : NULL;
		if (kr && kr->vals) {
			vals_copy(x.v, kr->vals, m, L, 0);
			x.folded[MODE_F64] = kr->folded[MODE_F64], x.folded[MODE_F32] = kr->folded[MODE_F32];
			x.ref_range = kr->ref_range;
		} else
			row_values(&x);
		if (x.pfin)
			naive_rounded_p(&x);
		check_outputs(&x, rc, r);
		/* after check_outputs: the folds it took are kept too */
		if (kr && (!kr->vals || kr->folded[MODE_F64] != x.folded[MODE_F64] ||
			   kr->folded[MODE_F32] != x.folded[MODE_F32])) {
			if (!kr->vals)
				kr->vals = xcalloc(vals_size(m, L), sizeof(double));
			vals_copy(x.v, kr->vals, m, L, 1);
			kr->folded[MODE_F64] = x.folded[MODE_F64], kr->folded[MODE_F32] = x.folded[MODE_F32];
			kr->ref_range = x.ref_range;
		}
		if (d->scan && c->nref)
			check_scan_prefixes(&x, rc, r);
	}
	rc->ok = 1;
	for (int o = 0; o < rc->nout; o++)
		rc->ok &= rc->out[o].worst_ratio <= 1 && !rc->out[o].nan_mismatch;
	for (int md = 0; md < 2; md++)
		vals_free(&x.v[md]);
	free(x.want), free(x.wante), free(x.wantr), free(x.naive), free(x.bound), free(st), free(x.pfin), free(x.pv);
	if (cols)
		*cols = x.row;
	else
		eval_row_free(x.row);
}

void runcheck_round_p(RunData *d, int kind, int m, int l, int o)
{
	d->p_round.kind = kind, d->p_round.m = m, d->p_round.l = l, d->p_round.o = o, d->p_round.v = 0;
}

void runcheck_round_p_sum(RunData *d, int kind, int o, int v)
{
	d->p_round.kind = kind, d->p_round.m = -1, d->p_round.l = -1, d->p_round.o = o, d->p_round.v = v;
}

void runcheck_notes(const OutCheck *x, char *buf, size_t n)
{
	size_t at = 0;
	buf[0] = 0;
#define NOTE(...) (at += (size_t)snprintf(buf + (at < n ? at : n), at < n ? n - at : 0, __VA_ARGS__))
	if (x->nan_both)
		NOTE(", %zu of %zu values NaN in both", x->nan_both, x->compared);
	if (x->inf_both)
		NOTE(", %zu of %zu the same infinity in both", x->inf_both, x->compared);
	if (x->nan_both || x->inf_both)
		NOTE(" (not compared by size)");
	if (x->empty_nan)
		NOTE(", %zu on empty rows not compared (the reference is NaN there)", x->empty_nan);
	if (x->out_of_range)
		NOTE(", %zu not compared (the float64 reference overflows or underflows there)", x->out_of_range);
	/* the naive float32 two-pass variance of rows of mean 1e4 and spread
	 * 1 is off by 50 times the variance: held to that, one 20 times too
	 * large passes.  Against the output's largest value, not each
	 * value's: a running mean that crosses 0 is a small value, not a
	 * lost one. */
	if (x->want_scale > 0 && x->naive_worst > x->want_scale)
		NOTE(", the naive float32 reference is off by up to %.3g times the output's largest value (at flat"
		     " index %zu), so the tolerance cannot tell a value wrong by as much",
		     x->naive_worst / x->want_scale, x->naive_at);
	/* a running mean merged as a.mu + (b.mu - a.mu) * r counts a.mu's
	 * bound twice a position: past 1e185 times the values at 1000
	 * positions, while the naive fold was off by 3e-7 */
	else if (x->want_scale > 0 && x->bound_worst > x->want_scale)
		NOTE(", the running error bound of the naive float32 reference reaches %.3g times the output's largest"
		     " value (at flat index %zu), so the tolerance cannot tell a value wrong by as much",
		     x->bound_worst / x->want_scale, x->bound_at);
#undef NOTE
}

size_t runcheck_sized(const OutCheck *x)
{
	size_t not = (size_t)x->nan_mismatch + x->nan_both + x->inf_both + x->empty_nan + x->out_of_range;
	return x->compared > not ? x->compared - not : 0;
}

int runcheck_any_sized(const RunCheck *rc)
{
	size_t all = 0;
	for (int o = 0; o < rc->nout; o++) {
		if (runcheck_sized(&rc->out[o]))
			return 1;
		all += rc->out[o].compared;
	}
	return all == 0;
}

int runcheck_any_compared(const RunCheck *rc)
{
	for (int o = 0; o < rc->nout; o++)
		if (rc->out[o].compared)
			return 1;
	return 0;
}

void runcheck_free(RunCheck *rc)
{
	for (int o = 0; o < rc->nout; o++)
		free(rc->out[o].name);
	free(rc->out);
	memset(rc, 0, sizeof *rc);
}
