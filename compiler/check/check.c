/* check.c: randomized law trials (identity, associativity, commutativity)
 * with minimized counterexamples.  Soundness against the reference is in
 * sound.c. */
#include "compiler/check/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/util/buf.h"
#include "compiler/check/check_int.h"
#include "compiler/prove/prove.h"

enum { POOL = 96, SHRINK_TRIES = 400, TOL_K = 16, TYPED_EVERY = 16 };

void check_defaults(CheckOpts *o)
{
	memset(o, 0, sizeof *o);
	o->seed = 1;
	o->trials = 20000;
	o->id_trials = 2000;
	o->special_rows = 150;
}

/* ---- comparing states ---- */

double check_int_distance(double got, double gotr, double want, double wantr)
{
	if (!isfinite(got) || want != trunc(want) || fabs(want) > 0x1p63)
		return fabs(got - want);
	int64_t g = ir_int_exact(got, gotr), w = ir_int_exact(want, wantr);
	return g >= w ? (double)((uint64_t)g - (uint64_t)w) : (double)((uint64_t)w - (uint64_t)g);
}

double check_unit_roundoff(Mode mode) { return mode == MODE_F32 ? 0x1p-24 : 0x1p-53; }

int check_values_agree(double x, double ex, double y, double ey, double u)
{
	if (isnan(x) || isnan(y))
		return isnan(x) && isnan(y);
	if (isinf(x) || isinf(y))
		return x == y;
	return fabs(x - y) <= TOL_K * u * (ex + ey) + 1e-300;
}

int check_special_match(double got, double want)
{
	if (isfinite(got) && isfinite(want))
		return -1;
	return (isnan(got) && isnan(want)) || got == want;
}

int check_special_agree(double got, double want) { return isnan(want) ? 1 : check_special_match(got, want); }

double check_tolerance(double naive_err, double scale) { return 2 * naive_err + 32 * 0x1p-23 * scale; }

double check_naive_error(double want, double naive, double bound, double share, double scale, int fold)
{
	double err = fabs(naive - want);
	if (fold)
		return fmin(err, 0x1p-10 * scale);
	if (!isfinite(naive))
		return isfinite(bound) ? 0x1p-24 * bound : 0;
	return err >= 0x1p-24 * bound * share ? err : 0x1p-24 * bound * share;
}

double check_own_error(double fold, double folde, double want, double wante, double fold32e, double share)
{
	double u = check_unit_roundoff(MODE_F64);
	if (fabs(want) > TOL_K * u * wante || !isfinite(fold32e) || !check_values_agree(fold, folde, want, wante, u))
		return 0;
	return 0x1p-24 * fold32e * share;
}

double check_bound_share(int n) { return n > 36 ? 6 / sqrt((double)n) : 1; }

double check_value_share(int n, double bound, double want)
{
	double k = 2 * bound / fabs(want);
	if (isfinite(k) && k > 0 && k < n)
		n = (int)ceil(k);
	return check_bound_share(n);
}

/* Both sides overflowed, or one did where the other is near the top of
 * the range (top: 1e290 in float64, 1e37 for a float32 field in the
 * spec's types): a limit of floating point, not of the algebra. */
static int overflowed(double x, double y, double top)
{
	return x != y && ( (isinf(x) && !isnan(y) && (isinf(y) || fabs(y) > top)) ||
	       (isinf(y) && !isnan(x) && fabs(x) > top));
}

/* First component where the states differ, -1 when they agree, -2 when a
 * side overflowed.  Integers are compared whole, their rests (lr, rr)
 * with them: an i64 past 2^53 is as exact as the devices' and wraps as
 * theirs do. */
static int states_differ(Machine *m, const double *l, const double *le, const double *lr, const double *r,
			 const double *re, const double *rr, Mode mode)
{
	Carrier *c = m->c;
	for (int f = 0; f < c->nstate; f++) {
		int exact = !ty_is_float(c->state[f].ty);
		double top = mode == MODE_F32 && c->state[f].ty.kind == TY_F32 ? 1e37 : 1e290;
		for (int k = m->soff[f]; k < m->soff[f + 1]; k++) {
			if (overflowed(l[k], r[k], top))
				return -2;
			if (exact ? !(l[k] == r[k] && lr[k] == rr[k])
				  : !check_values_agree(l[k], le[k], r[k], re[k], check_unit_roundoff(mode)))
				return k;
		}
	}
	return -1;
}

/* ---- one trial ---- */

/* The sides differ because the merges left the float range: a finite
 * intermediate overflowed (a product of two states near 1e200), or one
 * underflowed to zero and was then divided by.  The proofs are over the
 * reals, where neither happens; a wrong merge differs on the trials
 * that stay in range.  Infinities the states already held (a mask's
 * -inf) are no such event: their trials are still compared. */
static int left_range(Machine *m, const Trial *t)
{
	unsigned r = m->range;
	if (!(r & PROG_OVERFLOW) && !((r & PROG_UNDERFLOW) && (r & PROG_ZERO_DIVIDE)))
		return 0;
	for (int k = 0; k < m->sw; k++)
		if (!isfinite(t->l[k]) || !isfinite(t->r[k]))
			return 1;
	return 0;
}

static const char *const bracket[NTRIAL][2] = {
	[T_ASSOC] = {"(a+b)+c", "a+(b+c)"}, [T_COMM] = {"a+b", "b+a"}, [T_ID_LEFT] = {"e+a", "a"},
	[T_ID_RIGHT] = {"a+e", "a"},       [T_ID_SELF] = {"e+e", "e"},
};

/* Evaluate both sides of a trial into t->l, t->r (their rests into k->lr,
 * k->rr); returns what states_differ does. */
int check_trial_eval(Ck *k, Trial *t, Sample **s)
{
	Machine *m = k->m;
	int sw = m->sw;
	Mode md = t->mode;
	m->range = 0;
	double *z = k->zero, *e = m->ident[md];
	double *x = k->tmp, *xe = x + sw, *y = x + 2 * sw, *ye = x + 3 * sw, *xr = k->rr + sw, *yr = xr + sw;
	const double *v[3], *r[3];
	for (int i = 0; i < check_trial_arity(t->kind); i++)
		v[i] = s[i]->v[md], r[i] = s[i]->rest[md];
	switch (t->kind) {
	case T_ASSOC:
		eval_merge_exact(m, md, v[0], z, r[0], v[1], z, r[1], x, xe, xr);
		eval_merge_exact(m, md, x, xe, xr, v[2], z, r[2], t->l, t->le, k->lr);
		eval_merge_exact(m, md, v[1], z, r[1], v[2], z, r[2], y, ye, yr);
		eval_merge_exact(m, md, v[0], z, r[0], y, ye, yr, t->r, t->re, k->rr);
		break;
	case T_COMM:
		eval_merge_exact(m, md, v[0], z, r[0], v[1], z, r[1], t->l, t->le, k->lr);
		eval_merge_exact(m, md, v[1], z, r[1], v[0], z, r[0], t->r, t->re, k->rr);
		break;
	case T_ID_LEFT:
	case T_ID_RIGHT:
		if (t->kind == T_ID_LEFT)
			eval_merge_exact(m, md, e, z, z, v[0], z, r[0], t->l, t->le, k->lr);
		else
			eval_merge_exact(m, md, v[0], z, r[0], e, z, z, t->l, t->le, k->lr);
		memcpy(t->r, v[0], sw * sizeof *t->r);
		memcpy(k->rr, r[0], sw * sizeof *k->rr);
		memset(t->re, 0, sw * sizeof *t->re);
		break;
	default:
		eval_merge_exact(m, md, e, z, z, e, z, z, t->l, t->le, k->lr);
		memcpy(t->r, e, sw * sizeof *t->r);
		memset(k->rr, 0, sw * sizeof *k->rr);
		memset(t->re, 0, sw * sizeof *t->re);
		break;
	}
	int d = states_differ(m, t->l, t->le, k->lr, t->r, t->re, k->rr, md);
	return d >= 0 && left_range(m, t) ? -2 : d;
}

int check_trial_arity(TrialKind kind)
{
	return kind == T_ASSOC ? 3 : kind == T_COMM ? 2 : kind == T_ID_SELF ? 0 : 1;
}

/* ---- shrinking ---- */

static double simpler(double v, uint64_t *rng)
{
	double c[] = {0, 1, -1, nearbyint(v), trunc(v / 2), v / 2};
	return c[rng_int(rng, 0, 5)];
}

/* Whether assume holds at every position of r: a row input, or a value
 * replaced wherever it occurs, reaches them all. */
static int assume_holds(Machine *m, const Row *r)
{
	for (int j = 0; j < r->len; j++)
		if (!eval_assume(m, r, j))
			return 0;
	return 1;
}

static void simplify_inputs(Machine *m, Sample *s, uint64_t *rng)
{
	Carrier *c = m->c;
	Row *r = s->row;
	if (s->hi > s->lo && (m->colw + m->elemw) && rng_int(rng, 0, 3)) {
		int j = rng_int(rng, s->lo, s->hi - 1), col = rng_int(rng, 0, m->colw + m->elemw - 1);
		double *slot = col < m->colw ? r->colv + (size_t)j * m->colw + col
					     : r->elemv + (size_t)j * m->elemw + (col - m->colw);
		const Decl *d = col < m->colw ? c->col : c->elem;
		int n = col < m->colw ? c->ncol : c->nelem, base = col < m->colw ? col : col - m->colw;
		const int *off = col < m->colw ? m->coloff : m->elemoff;
		int which = 0;
		while (which + 1 < n && off[which + 1] <= base)
			which++;
		/* the simpler value is what its double holds: its rest is 0 */
		double *rest = col < m->colw ? (r->colrest ? r->colrest + (slot - r->colv) : NULL)
					     : (r->elemrest ? r->elemrest + (slot - r->elemv) : NULL);
		double old = *slot, oldrest = rest ? *rest : 0;
		*slot = ir_round(d[which].storage, simpler(old, rng));
		if (rest)
			*rest = 0;
		if (!eval_assume(m, r, j)) {
			*slot = old;
			if (rest)
				*rest = oldrest;
		}
	} else if (m->roww) {
		int col = rng_int(rng, 0, m->roww - 1), which = 0;
		while (which + 1 < c->nrow && m->rowoff[which + 1] <= col)
			which++;
		double old = r->rowv[col], oldrest = r->rowrest ? r->rowrest[col] : 0;
		r->rowv[col] = ir_round(c->row[which].storage, simpler(old, rng));
		if (r->rowrest)
			r->rowrest[col] = 0;
		if (!assume_holds(m, r)) {
			r->rowv[col] = old;
			if (r->rowrest)
				r->rowrest[col] = oldrest;
		}
	}
}

/* Remove position p: later positions move down by one. */
static void drop_position(Machine *m, Sample *s, int p)
{
	Row *r = s->row;
	size_t after = (size_t)(r->len - p - 1);
	memmove(r->colv + (size_t)p * m->colw, r->colv + (size_t)(p + 1) * m->colw, after * m->colw * sizeof(double));
	memmove(r->elemv + (size_t)p * m->elemw, r->elemv + (size_t)(p + 1) * m->elemw,
		after * m->elemw * sizeof(double));
	if (r->colrest)
		memmove(r->colrest + (size_t)p * m->colw, r->colrest + (size_t)(p + 1) * m->colw,
			after * m->colw * sizeof(double));
	if (r->elemrest)
		memmove(r->elemrest + (size_t)p * m->elemw, r->elemrest + (size_t)(p + 1) * m->elemw,
			after * m->elemw * sizeof(double));
	r->len--;
	s->hi--;
}

static void mutate(Machine *m, Sample *s, uint64_t *rng)
{
	switch (rng_int(rng, 0, 7)) {
	case 0: if (s->hi > s->lo) drop_position(m, s, rng_int(rng, s->lo, s->hi - 1)); break;
	case 1: if (s->hi > s->lo) drop_position(m, s, s->lo); break;
	case 2: s->shape = SHAPE_LEFT; break;
	case 3: if (s->doublings) s->doublings--; break;
	case 4: s->row->i -= (s->row->i > 0) - (s->row->i < 0); break;
	default: simplify_inputs(m, s, rng); break;
	}
}

/* Replace one input value everywhere it occurs in the trial's rows, so
 * that ties between states survive the simplification; 0, with no
 * candidates, where the rows would break assume (a witness must be an
 * input the spec is meant for). */
static int replace_everywhere(Ck *k, Sample **s, Sample **cand, int n)
{
	Machine *m = k->m;
	Sample *src = s[rng_int(&k->rng, 0, n - 1)];
	int w = m->colw + m->elemw;
	if (!w || src->hi <= src->lo)
		return 0;
	int j = rng_int(&k->rng, src->lo, src->hi - 1), col = rng_int(&k->rng, 0, w - 1);
	size_t at = col < m->colw ? (size_t)j * m->colw + col : (size_t)j * m->elemw + col - m->colw;
	const double *vs = col < m->colw ? src->row->colv : src->row->elemv;
	const double *rs = col < m->colw ? src->row->colrest : src->row->elemrest;
	double v = vs[at], vr = rs ? rs[at] : 0;
	double to = nearbyint(v) != v ? nearbyint(v) : trunc(v / 2);
	/* the integer whole (an i64 past 2^53 is its double and a rest), and
	 * the simpler value is what its double holds: its rest is 0 */
	for (int i = 0; i < n; i++) {
		cand[i] = draw_sample_clone(m, s[i]);
		Row *r = cand[i]->row;
		for (size_t x = 0; x < (size_t)r->len * m->colw; x++)
			if (r->colv[x] == v && (r->colrest ? r->colrest[x] : 0) == vr) {
				r->colv[x] = to;
				if (r->colrest)
					r->colrest[x] = 0;
			}
		for (size_t x = 0; x < (size_t)r->len * m->elemw; x++)
			if (r->elemv[x] == v && (r->elemrest ? r->elemrest[x] : 0) == vr) {
				r->elemv[x] = to;
				if (r->elemrest)
					r->elemrest[x] = 0;
			}
	}
	for (int i = 0; i < n; i++)
		if (!assume_holds(m, cand[i]->row)) {
			for (int k = 0; k < n; k++)
				draw_sample_free(cand[k]);
			return 0;
		}
	return 1;
}

/* Put cand in place of s when every candidate state is usable and the
 * trial still fails with them; free whichever set is not kept. */
static void try_candidates(Ck *k, Trial *t, Sample **s, Sample **cand, int n,
			   int (*still_fails)(Ck *, Trial *, Sample **))
{
	Sample *old[3];
	int ok = 1;
	for (int i = 0; i < n; i++)
		ok &= draw_sample_eval(k->m, cand[i]) == 0;
	memcpy(old, s, n * sizeof *s);
	memcpy(s, cand, n * sizeof *s);
	Sample **drop = ok && still_fails(k, t, s) ? old : cand;
	if (drop == cand)
		memcpy(s, old, n * sizeof *s);
	for (int i = 0; i < n; i++)
		draw_sample_free(drop[i]);
}

/* Keep any change to the states under which the trial still fails. */
void check_shrink(Ck *k, Trial *t, Sample **s, int (*still_fails)(Ck *, Trial *, Sample **))
{
	int n = check_trial_arity(t->kind);
	for (int tries = 0; n && tries < SHRINK_TRIES; tries++) {
		Sample *cand[3];
		if (rng_int(&k->rng, 0, 3) || !replace_everywhere(k, s, cand, n)) {
			for (int i = 0; i < n; i++)
				cand[i] = draw_sample_clone(k->m, s[i]);
			mutate(k->m, cand[rng_int(&k->rng, 0, n - 1)], &k->rng);
		}
		try_candidates(k, t, s, cand, n, still_fails);
	}
}

/* A trial in the spec's types fails where its float64 twin holds: a
 * shrink that broke float64 too would blame the wrong arithmetic. */
static int trial_fails(Ck *k, Trial *t, Sample **s)
{
	if (t->typed_only) {
		Trial t64 = *t;
		t64.mode = MODE_F64, t64.typed_only = 0;
		if (check_trial_eval(k, &t64, s) >= 0)
			return 0;
	}
	return check_trial_eval(k, t, s) >= 0;
}

/* ---- the laws ---- */

static Sample *pick(Ck *k, DrawFamily f)
{
	if (rng_int(&k->rng, 0, 9) == 0)
		f = (DrawFamily)rng_int(&k->rng, 0, NDRAW - 1);
	if (!k->npool[f])
		f = k->fams[rng_int(&k->rng, 0, k->nfams - 1)];
	return k->pool[f][rng_int(&k->rng, 0, k->npool[f] - 1)];
}

static void fill_pools(Ck *k)
{
	int nconsts;
	draw_spec_constants(k->m, &nconsts);
	for (int f = 0; f < NDRAW; f++) {
		k->pool[f] = calloc(POOL, sizeof(Sample *));
		if (!k->pool[f])
			abort();
		for (int tries = 0; tries < 4 * POOL && k->npool[f] < POOL && (f != DRAW_CONSTS || nconsts); tries++) {
			Sample *s = draw_sample_new(k->m, (DrawFamily)f, &k->rng);
			if (s)
				k->pool[f][k->npool[f]++] = s;
			k->nonempty += s && s->hi > s->lo;
			if (s && s->hi >= k->span)
				k->span = s->hi + 1;
		}
		if (k->npool[f])
			k->fams[k->nfams++] = (DrawFamily)f;
	}
}

void check_fail_law(Ck *k, LawOutcome *o, Trial *t, Sample **s)
{
	Sample *own[3] = {0};
	int n = check_trial_arity(t->kind);
	for (int i = 0; i < n; i++)
		own[i] = draw_sample_clone(k->m, s[i]);
	check_shrink(k, t, own, trial_fails);
	int at = check_trial_eval(k, t, own);
	o->v = VERDICT_FAILS;
	cex_describe(k, o, t, own, at, bracket[t->kind]);
	for (int i = 0; i < n; i++)
		draw_sample_free(own[i]);
}

/* A trial drawn again: count it, and keep the smallest magnitude of the
 * largest operand at which the merges left the range. */
static void note_range(Machine *m, LawOutcome *o, Sample **s, int n)
{
	double big = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m->sw; k++)
			if (isfinite(s[i]->v[MODE_F64][k]))
				big = fmax(big, fabs(s[i]->v[MODE_F64][k]));
	if (!o->skipped || big < o->range_at)
		o->range_at = big;
	o->skipped++;
}

static int law_at_limits(Ck *k, LawOutcome *o, TrialKind kind);

/* Where a state depends on the positions it folds (draw_reads_position),
 * a binary law's operands are states of disjoint runs of positions, as
 * every fold merges them: two argmax states of one position, tied in m
 * and idx with different values, are merged by no fold, and a tie-break
 * on idx alone commutes on every pair a fold meets.  An operand that
 * shares a position with one placed before it moves past the last of
 * them, its inputs as drawn.  In the order a, b, c where the merge is not
 * claimed commutative (a fold merges a run with the next one), right after
 * the last; in a drawn order where it is, at the operand's slot t of span
 * positions (lanes merge runs with gaps between them), a copy kept with
 * the pool's sample: a fold of the sample again at every trial took three
 * quarters of a check's time.  own: the copies to free after; -1 (none
 * left to free) where one is not usable where it moved. */
static Sample *placed_at_slot(Ck *k, Sample *s, int t)
{
	if (!s->placed[t - 1] && !s->placed_bad[t - 1])
		s->placed_bad[t - 1] = !(s->placed[t - 1] = draw_sample_at(k->m, s, t * k->span));
	return s->placed[t - 1];
}

static int place_apart(Ck *k, TrialKind kind, Sample **s, Sample **own, uint64_t *rng)
{
	int n = check_trial_arity(kind), order[3] = {0, 1, 2}, end = 0;
	own[0] = own[1] = own[2] = NULL;
	if (n < 2 || !draw_reads_position(k->m))
		return 0;
	int commutes = (k->m->c->laws & LAW_COMMUTATIVE) != 0;
	for (int i = n - 1; commutes && i > 0; i--) {
		int r = rng_int(rng, 0, i), t = order[i];
		order[i] = order[r], order[r] = t;
	}
	for (int t = 0; t < n; t++) {
		int w = order[t], clash = !commutes && s[w]->lo < s[w]->hi && s[w]->lo < end;
		for (int u = 0; u < t; u++)
			clash |= draw_samples_overlap(s[w], s[order[u]]);
		/* a slot holds the sample where every one of the pool's ends
		 * before span (the limits' samples may not) */
		int slot = commutes && t > 0 && k->span > 0 && s[w]->hi < k->span;
		if (clash && !(s[w] = slot ? placed_at_slot(k, s[w], t) : (own[w] = draw_sample_at(k->m, s[w], end)))) {
			for (int i = 0; i < n; i++)
				draw_sample_free(own[i]);
			return -1;
		}
		if (s[w]->hi > s[w]->lo && s[w]->hi > end)
			end = s[w]->hi;
	}
	return 0;
}

static void free_placed(Sample **own, int n)
{
	for (int i = 0; i < n; i++)
		draw_sample_free(own[i]);
}

static void run_binary_law(Ck *k, LawOutcome *o, TrialKind kind, int trials)
{
	Trial t = {.kind = kind, .mode = MODE_F64, .l = k->l, .le = k->le, .r = k->r, .re = k->re};
	Trial typed = t;
	typed.mode = MODE_F32, typed.typed_only = 1;
	/* a trial that leaves the float range is drawn again, up to as many
	 * times again as there are trials */
	for (int i = 0; o->trials < trials && i < 2 * trials; i++) {
		DrawFamily f = k->fams[i % k->nfams];
		Sample *s[3] = {pick(k, f), pick(k, f), pick(k, f)}, *own[3];
		if (place_apart(k, kind, s, own, &k->rng))
			continue;
		int d = check_trial_eval(k, &t, s);
		if (d == -2) {
			note_range(k->m, o, s, 3);
			free_placed(own, 3);
			continue;
		}
		o->trials++;
		if (d >= 0) {
			check_fail_law(k, o, &t, s);
			free_placed(own, 3);
			return;
		}
		/* every TYPED_EVERY-th trial again in the spec's types, as the
		 * devices compute: a law exact over the reals may break where a
		 * float32 field rounds (two sums of one input, one in float64 and
		 * one in float32, compared for equality); the same tolerance,
		 * in float32's unit roundoff, lets rounding noise pass */
		if (!k->typed || o->trials % TYPED_EVERY) {
			free_placed(own, 3);
			continue;
		}
		d = check_trial_eval(k, &typed, s);
		o->typed_trials += d != -2;
		if (d >= 0)
			check_fail_law(k, o, &typed, s);
		free_placed(own, 3);
		if (d >= 0)
			return;
	}
	if (law_at_limits(k, o, kind))
		return;
	o->v = VERDICT_HOLDS;
}

/* A state drawn with the identity's own infinite value (a lift
 * where(x > 0, x, -inf) beside an identity of m = -inf) where e+a or a+e
 * differs from it: the exception edge.c names, not a failure. */
static void note_tie(Ck *k, LawOutcome *o, Mode mode, const Sample *s)
{
	if (o->except)
		return;
	Buf b = {0};
	buf_puts(&b, "holds except at states that hold the identity's infinite value: e+a or a+e differs from a = ");
	cex_state_exact(&b, k->m, s->v[mode], s->rest[mode], -1);
	if (k->m->c->nparams) {
		buf_puts(&b, "; ");
		cex_params(&b, k->m);
	}
	o->except = buf_take(&b);
	buf_puts(&b, "{");
	cex_params_json(&b, k->m);
	buf_puts(&b, "\"a\": ");
	cex_state_json_exact(&b, k->m, s->v[mode], s->rest[mode]);
	buf_puts(&b, "}");
	o->except_json = buf_take(&b);
}

enum { LIMIT_SAMPLES = 64 };

/* The identity at states folded from integer inputs at their type's
 * limits (draw_sample_limits), where an identity such as a minimum's
 * INT32_MAX - 1 fails and the families' [-100, 100] never reach; in both
 * modes, from a copy of the generator, so that the trials after draw
 * what they drew before.  Sides that a merge takes out of the float range
 * decide nothing and are not counted.  1 where a trial fails (o says how). */
static int identity_at_limits(Ck *k, LawOutcome *o)
{
	Sample *pool[4 * LIMIT_SAMPLES];
	int n = 0, want = draw_limit_inputs(k->m) > 1 ? 4 * LIMIT_SAMPLES : LIMIT_SAMPLES;
	uint64_t rng = k->rng;
	/* several integer inputs: pairs such as (INT64_MIN, 0) are rarer */
	for (int t = 0; t < 4 * want && n < want; t++) {
		Sample *s = draw_sample_limits(k->m, &rng);
		if (s)
			pool[n++] = s;
	}
	int failed = 0;
	for (int mode = MODE_F64; !failed && mode <= MODE_F32; mode++) {
		Trial t = {.mode = (Mode)mode, .l = k->l, .le = k->le, .r = k->r, .re = k->re};
		for (int i = 0; !failed && i < n; i++)
			for (t.kind = T_ID_LEFT; !failed && t.kind <= T_ID_RIGHT; t.kind++) {
				int d = check_trial_eval(k, &t, &pool[i]);
				if (d == -2)
					continue;
				o->trials++;
				if (d >= 0 && check_identity_tie(k->m, t.mode, pool[i]->v[mode]))
					note_tie(k, o, t.mode, pool[i]);
				else if (d >= 0)
					check_fail_law(k, o, &t, &pool[i]), failed = 1;
			}
	}
	for (int i = 0; i < n; i++)
		draw_sample_free(pool[i]);
	return failed;
}

/* Trials of a binary law on operands drawn from pool[0..n), each
 * operand once first; 1 where one fails (o says how). */
static int law_on_pool(Ck *k, LawOutcome *o, TrialKind kind, Sample **pool, int n, uint64_t *rng)
{
	for (int mode = MODE_F64; mode <= MODE_F32; mode++) {
		Trial t = {.kind = kind, .mode = (Mode)mode, .l = k->l, .le = k->le, .r = k->r, .re = k->re};
		for (int i = 0; i < 2 * n; i++) {
			Sample *s[3] = {pool[i % n], pool[rng_int(rng, 0, n - 1)], pool[rng_int(rng, 0, n - 1)]}, *own[3];
			if (place_apart(k, kind, s, own, rng))
				continue;
			int d = check_trial_eval(k, &t, s);
			if (d != -2)
				o->trials++;
			if (d >= 0)
				check_fail_law(k, o, &t, s);
			free_placed(own, 3);
			if (d >= 0)
				return 1;
		}
	}
	return 0;
}

/* A binary law at states folded from integer inputs at their type's
 * limits and just past their square roots (draw_sample_limits); and,
 * where lift or merge converts an integer to a float, next to 2^24
 * (2^53 for f64), where neighbours convert to one float and an order on
 * them ties (draw_sample_near): the families' [-100, 100] reach neither.
 * In both modes, float32 rounding the conversions as the devices do; from
 * a copy of the generator, so that the trials after draw what they drew
 * before.  1 where a trial fails (o says how). */
static int law_at_limits(Ck *k, LawOutcome *o, TrialKind kind)
{
	Machine *m = k->m;
	if (!draw_limit_inputs(m))
		return 0;
	int bits = draw_rounding_bits(m), failed = 0;
	uint64_t rng = k->rng;
	Sample *pool[LIMIT_SAMPLES];
	for (int pass = 0; pass < (bits ? 2 : 1) && !failed; pass++) {
		int n = 0;
		for (int t = 0; t < 4 * LIMIT_SAMPLES && n < LIMIT_SAMPLES; t++) {
			Sample *s = pass ? draw_sample_near(m, bits, &rng) : draw_sample_limits(m, &rng);
			if (s)
				pool[n++] = s;
		}
		failed = n && law_on_pool(k, o, kind, pool, n, &rng);
		for (int i = 0; i < n; i++)
			draw_sample_free(pool[i]);
	}
	return failed;
}

static void run_identity(Ck *k, LawOutcome *o, int trials)
{
	for (int mode = MODE_F64; mode <= MODE_F32; mode++) {
		Trial t = {.kind = T_ID_SELF, .mode = (Mode)mode, .l = k->l, .le = k->le, .r = k->r, .re = k->re};
		o->trials++;
		if (check_trial_eval(k, &t, NULL) >= 0)
			return check_fail_law(k, o, &t, NULL);
		for (int i = 0; i < trials; i++) {
			Sample *s = pick(k, k->fams[i % k->nfams]);
			for (t.kind = T_ID_LEFT; t.kind <= T_ID_RIGHT; t.kind++) {
				int d = check_trial_eval(k, &t, &s);
				if (d == -2) {
					note_range(k->m, o, &s, 1);
					continue;
				}
				o->trials++;
				if (d >= 0 && check_identity_tie(k->m, t.mode, s->v[mode])) {
					note_tie(k, o, t.mode, s);
					continue;
				}
				if (d >= 0)
					return check_fail_law(k, o, &t, &s);
			}
		}
	}
	if (identity_at_limits(k, o))
		return;
	o->v = VERDICT_HOLDS;
	/* lifts of infinite inputs, which no draw makes: on a copy of the
	 * generator, so that the trials after draw what they drew before */
	uint64_t rng = k->rng;
	char *detail, *json;
	if (check_identity_edge(k->m, &rng, &detail, &json)) {
		free(o->except);
		free(o->except_json);
		o->except = detail, o->except_json = json;
	}
}

static void ck_free(Ck *k)
{
	for (int f = 0; f < NDRAW; f++) {
		for (int i = 0; i < k->npool[f]; i++)
			draw_sample_free(k->pool[f][i]);
		free(k->pool[f]);
	}
	free(k->tmp);
}

/* Which params the overrides fix (by param), the caller's alone or with
 * the case's bool params. */
static void params_fixed(const Carrier *c, const CheckOpts *o, int with_case, unsigned char *fixed)
{
	memset(fixed, 0, c->nparams + 1);
	for (int i = 0; i < o->nparams - (with_case ? 0 : o->case_params); i++)
		for (int p = 0; p < c->nparams; p++)
			fixed[p] |= !strcmp(c->params[p].name, o->params[i].name);
}

/* Why no sample folds a position (check_run): no row can be drawn where
 * assume holds (input_assume), or rows can, and every state folded from
 * them held NaN or an infinity (draw.c's usable); a param that is not
 * finite is named, as what most likely made them so. */
static void no_samples(Machine *m, uint64_t *rng, CheckResult *r)
{
	Carrier *c = m->c;
	Row *row = eval_row_new(m, 4);
	int drawn = 0;
	for (int f = 0; f < NDRAW && !drawn; f++)
		drawn = f != DRAW_COUNTS && draw_row(m, (DrawFamily)f, row, rng) == 0;
	eval_row_free(row);
	r->input_assume = !drawn;
	if (!drawn) {
		r->input_error = strdup("could not draw inputs where 'assume' holds");
		return;
	}
	Buf b = {0};
	buf_puts(&b, "every state folded from the inputs drawn holds NaN or an infinity");
	int odd = 0;
	for (int p = 0; p < c->nparams; p++)
		odd += !isfinite(m->params[m->poff[p]]);
	for (int p = 0, k = 0; p < c->nparams; p++) {
		double v = m->params[m->poff[p]];
		if (isfinite(v))
			continue;
		buf_printf(&b, "%s%s = %s", k++ ? ", " : odd > 1 ? ", at params " : ", at param ", c->params[p].name,
			   isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
	}
	r->input_error = buf_take(&b);
}

int check_run(Carrier *c, const CheckOpts *o, CheckResult *r, char *msg, size_t n)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(r, 0, sizeof *r);
	r->accuracy = VERDICT_NA; /* until the soundness rows say */
	Machine m;
	eval_init(&m, c);
	Ck k = {.m = &m, .o = o, .rng = rng_stream(o->seed, RNG_CHECK_TRIALS)};
	if (draw_params(&m, o->params, o->nparams, &k.rng, msg, n)) {
		eval_free(&m);
		return -1;
	}
	/* A part of assume over params alone, false at values given: the
	 * caller's are a usage error, as `run` has them; a case's bool params
	 * are a case the assume rules out (check_run_cases). */
	unsigned char *fixed = calloc(c->nparams + 1, 1);
	char why[512];
	if (!fixed)
		abort();
	params_fixed(c, o, 0, fixed);
	int caller = draw_params_break_assume(&m, fixed, msg, n);
	params_fixed(c, o, 1, fixed);
	int by_case = !caller && draw_params_break_assume(&m, fixed, why, sizeof why);
	free(fixed);
	if (caller || by_case) {
		eval_free(&m);
		if (caller)
			return -1;
		r->input_error = strdup(why);
		r->input_assume = 1;
		return 0;
	}
	/* two merged states and their bounds, zeros, the trial's sides and
	 * bounds, their rests, and the merged states' rests (after rr) */
	k.tmp = calloc(13 * (size_t)m.sw, sizeof(double));
	if (!k.tmp)
		abort();
	k.zero = k.tmp + 4 * m.sw, k.l = k.zero + m.sw, k.le = k.l + m.sw, k.r = k.le + m.sw, k.re = k.r + m.sw;
	k.lr = k.re + m.sw, k.rr = k.lr + m.sw;
	fill_pools(&k);
	/* the soundness rows (and their float32 accuracy) from a stream of
	 * their own: their verdicts do not change with --trials (the library
	 * runs fewer) */
	uint64_t rows_rng = rng_stream(o->seed, RNG_CHECK_ROWS);
	for (int f = 0; f < c->nstate; f++)
		k.typed |= c->state[f].ty.kind == TY_F32;
	/* a float32 constant that a literal did not write exactly (log(2))
	 * stands rounded inside the float64 trials: its rounding is allowed
	 * for, as the soundness trials allow for it (they turn it off after) */
	eval_const_rounding(&m, 1);
	if (!k.nonempty) {
		no_samples(&m, &k.rng, r);
	} else {
		r->law[r->nlaw++] = (LawOutcome){.law = "identity"};
		run_identity(&k, &r->law[0], o->id_trials / 2);
		r->law[r->nlaw++] = (LawOutcome){.law = "associative"};
		run_binary_law(&k, &r->law[1], T_ASSOC, o->trials);
		if (c->laws & LAW_COMMUTATIVE) {
			r->law[r->nlaw++] = (LawOutcome){.law = "commutative"};
			run_binary_law(&k, &r->law[2], T_COMM, o->trials);
		}
		uint64_t trials_rng = k.rng;
		k.rng = rows_rng;
		if (o->no_sound)
			r->sound = VERDICT_NA;
		else
			check_soundness(&k, r);
		k.rng = trials_rng; /* the special values' rows draw on after the trials */
		check_specials(&k, r);
	}
	ck_free(&k);
	eval_free(&m);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->seconds = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
	return 0;
}

static int case_pairs(int nfree) { return nfree <= CASES_PAIRS ? nfree * (nfree - 1) / 2 : 0; }

int check_case_count(int nfree) { return nfree <= CASES_ALL ? 1 << nfree : nfree + case_pairs(nfree) + 2; }

uint32_t check_case_mask(int at, int nfree)
{
	uint32_t all = (uint32_t)((1ull << nfree) - 1);
	if (nfree <= CASES_ALL)
		return (uint32_t)at;
	if (at == 0)
		return all;
	if (at <= nfree)
		return all & ~(1u << (at - 1));
	at -= nfree + 1;
	for (int i = 0; i < nfree && at < case_pairs(nfree); i++)
		for (int j = i + 1; j < nfree; j++, at--)
			if (!at)
				return all & ~(1u << i) & ~(1u << j);
	return 0;
}

/* "f2=false, f4=false" (those false, given or free; "the others true"
 * where some free one is true), or every free one's value where none is
 * false. */
static void case_text(Carrier *c, const Define *d, int nd, int nfree, char *what, size_t n)
{
	size_t at = 0;
	int nfalse = 0, ntrue = 0;
	what[0] = 0;
	for (int i = 0; i < nd; i++) {
		int flag = 0;
		for (int p = 0; p < c->nparams; p++)
			flag |= c->params[p].storage == TY_BOOL && !strcmp(c->params[p].name, d[i].name);
		if (!flag || draw_param_value(d[i].value, NULL) != 0) {
			ntrue += flag && i >= nd - nfree;
			continue;
		}
		at += snprintf(what + at, at < n ? n - at : 0, "%s%s=false", nfalse++ ? ", " : "", d[i].name);
	}
	for (int i = nd - nfree; !nfalse && i < nd; i++)
		at += snprintf(what + at, at < n ? n - at : 0, "%s%s=%s", i > nd - nfree ? ", " : "", d[i].name,
			       d[i].value);
	if (nfalse && ntrue)
		snprintf(what + at, at < n ? n - at : 0, ", the others true");
}

/* The trials draw a bool param true unless --param fixes it, so a law
 * that fails only where it is false would pass them: each assignment of
 * the free ones gets its own trials (check_case_mask).  r is the first
 * case that fails, else the last; cases says which ran. */
int check_run_cases(Carrier *c, const CheckOpts *base, CheckResult *r, char *cases, size_t ncases, char *msg,
		    size_t n)
{
	int nd = base->nparams, free_p[CASES_FREE_MAX], nfree = 0;
	*cases = 0;
	int rest = 0; /* free bool params past CASES_FREE_MAX: drawn true */
	for (int p = 0; p < c->nparams; p++) {
		int given = 0;
		for (int k = 0; k < base->nparams; k++)
			given |= !strcmp(base->params[k].name, c->params[p].name);
		if (c->params[p].storage != TY_BOOL || given)
			continue;
		if (nfree < CASES_FREE_MAX)
			free_p[nfree++] = p;
		else
			rest++;
	}
	if (!nfree)
		return check_run(c, base, r, msg, n);
	Define *defs = malloc((nd + nfree) * sizeof *defs);
	if (!defs)
		abort();
	if (nd)
		memcpy(defs, base->params, nd * sizeof *defs);
	CheckOpts o = *base;
	o.params = defs;
	o.nparams = nd + nfree;
	o.case_params = nfree;
	int have = 0, excluded = 0, ncase = check_case_count(nfree);
	double seconds = 0; /* every case's, in the one reported */
	const char *plural = nfree > 1 ? "s" : "";
	for (int k = 0; k < ncase; k++) {
		char what[224];
		uint32_t mask = check_case_mask(k, nfree);
		for (int i = 0; i < nfree; i++)
			defs[nd + i] = (Define){c->params[free_p[i]].name, (mask >> i) & 1 ? "true" : "false"};
		case_text(c, defs, nd + nfree, nfree, what, sizeof what);
		CheckResult rk;
		if (check_run(c, &o, &rk, msg, n)) {
			if (have)
				check_result_free(r);
			free(defs);
			return -1;
		}
		seconds += rk.seconds;
		rk.seconds = seconds;
		if (rk.input_error && rk.input_assume) { /* a case the assume rules out */
			if (!have && k == ncase - 1) {
				*r = rk;
				snprintf(cases, ncases, "the assume holds in none of the %d cases of the bool param%s", ncase,
					 plural);
				free(defs);
				return 0;
			}
			excluded++;
			check_result_free(&rk);
			continue;
		}
		if (have)
			check_result_free(r);
		*r = rk, have = 1;
		if (!check_ok(r)) {
			snprintf(cases, ncases, "with %s, the first of %d cases of the bool param%s that fails", what, ncase,
				 plural);
			free(defs);
			return 0;
		}
	}
	free(defs);
	const char *others = rest ? ", the others true" : "";
	const char *some = nfree > CASES_PAIRS ? " (all true, each false alone, all false)"
			   : nfree > CASES_ALL ? " (all true, each false alone, each pair false, all false)" : "";
	/* the assignments between those, which no trial ran: an `ok` says nothing of them */
	char untried[128] = "";
	if (nfree > CASES_ALL) {
		int lo = nfree > CASES_PAIRS ? 2 : 3, hi = nfree - 1;
		long long left = (1ll << nfree) - ncase;
		snprintf(untried, sizeof untried, "; not tried: the %lld cases with %d %s %d of the %d false", left, lo,
			 hi > lo + 1 ? "to" : "or", hi, nfree);
	}
	if (ncase - excluded == 1)
		snprintf(cases, ncases, "in the one case of the bool param%s that the assume admits%s", plural, others);
	else
		snprintf(cases, ncases, "in each of the %d cases of the bool param%s%s%s%s%s", ncase - excluded, plural,
			 some, excluded ? " that the assume admits" : "", others, untried);
	return 0;
}

int check_ok(const CheckResult *r)
{
	if (r->input_error || r->sound == VERDICT_FAILS)
		return 0;
	for (int i = 0; i < r->nlaw; i++)
		if (r->law[i].v == VERDICT_FAILS)
			return 0;
	return 1;
}

void check_result_free(CheckResult *r)
{
	for (int i = 0; i < r->nlaw; i++) {
		free(r->law[i].detail);
		free(r->law[i].cex);
		free(r->law[i].json);
		free(r->law[i].except);
		free(r->law[i].except_json);
	}
	free(r->sound_detail);
	free(r->sound_cex);
	free(r->sound_json);
	for (int i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	for (int i = 0; i < r->nerr; i++)
		free(r->err[i].name);
	free(r->err);
	free(r->input_error);
	free(r->special.group_detail);
	free(r->special.group_cex);
	free(r->special.group_json);
	free(r->special.ref_detail);
	free(r->special.ref_cex);
	free(r->special.ref_json);
	free(r->acc_detail);
	free(r->acc_cex);
	free(r->acc_json);
	memset(r, 0, sizeof *r);
}
