/* accuracy.c: the carrier in the spec's types against the float64
 * reference, held to the tolerance `assoc run` holds a device to.
 *
 * The soundness rows compare the carrier folded in float64, where a
 * carrier exact over the reals passes however it rounds.  The devices fold
 * in the spec's types: a naive standard deviation sqrt(q/n - (s/n)^2) is
 * exact over the reals, and in float32 a row of one value repeated gives
 * q/n below (s/n)^2, and NaN.  So each soundness row, and a few rows of
 * the kinds real data has that break float32 formulas (one large value
 * repeated, a large offset plus small noise, values over many orders of
 * magnitude, up to 1024 positions), is folded in MODE_F32 as devices group it:
 * the soundness rows in their own random trees, the hard rows left to
 * right (a thread, or `run`'s own fold) and in blocks merged pairwise
 * (threads of a block, then a tree).
 *
 * `run` holds a value to check_tolerance, from the naive float32
 * evaluation of the reference on the rows it is given, and a NaN or an
 * infinity where the reference is finite fails at any tolerance.  So a
 * carrier that gives NaN on a row of finite values fails here, as `run`
 * would fail it on such a row whatever the data around it; one whose
 * finite value is beyond the tolerance gets a warning with the row: the
 * rule is `run`'s own, but it weighs the rows `run` is given, and a
 * carrier that loses accuracy only at magnitudes its data never reaches
 * (o_lse's lse, kept in float32, of hundreds) runs on the data it has.  The row is
 * shrunk (shorter, keeping its values) while it still fails alike. */
#include <stdlib.h>
#include <string.h>

#include "compiler/check/check_int.h"

typedef enum { G_LEFT, G_BLOCKS, G_TREE, NGROUP } Grouping;

static const char *const grouping_name[NGROUP] = {"folded left to right", "in 8 blocks merged pairwise",
						  "folded in a random tree"};

enum { BLOCKS = 8, HARD_LEN = 1024, HARD_KINDS = 3, SHORT_ROW = 24 };

/* Each hard row's length: the value repeated longest, where a running sum
 * of squares loses its last bits past 2^24 */
static const int hard_len[HARD_KINDS] = {HARD_LEN, HARD_LEN / 2, HARD_LEN / 4};

static const char *const hard_name[HARD_KINDS] = {"1000.5 repeated", "a large offset plus small noise",
						  "values over many orders of magnitude"};

/* A value beyond tolerance: the worst of a row, of each kind. */
typedef struct {
	const Def *out;
	int is_map, comp, pos;
	Grouping g;
	double got, want, naive, tol, ratio;
	double gotr, wantr; /* an integer output's rests (ir_int_exact) */
} Loss;

/* What a row shows: NONFINITE, a NaN or an infinity where the reference
 * is finite (a failure); BEYOND, a finite value beyond tolerance (a
 * warning).  Slots by kind. */
enum { NONFINITE, BEYOND, NKIND };

struct Accuracy {
	Machine *m;
	int cap;                      /* positions the buffers hold */
	double *refv, *refe, *posv, *pose, *ref32, *ref32e, *pos32, *pos32e;
	double *st[NGROUP], *e, *l, *blk, *blke; /* l: a lift's values, bounds and rests */
	double *fin[NGROUP], *fine, *map, *mape;
	/* the rests of the integers (ir_int_exact) of refv and posv, st, blk,
	 * fin and map: integers stay exact through the folds */
	double *refr, *posr, *str[NGROUP], *blkr, *finr[NGROUP], *mapr, *own_str[2];
	/* the carrier's own left folds by Mode, with their bounds, finalized
	 * (own_fin) and mapped at every position (own_map); own_row: they are
	 * the row's now */
	double *own_st[2], *own_ste[2], *own_fin[2], *own_fine[2], *own_map[2], *own_mape[2];
	int own_row;
	Sample *witness[NKIND];       /* the shrunk row of each kind, NULL while none */
	const char *kind[NKIND];      /* what row it is */
	Loss loss[NKIND];
	double *wst[NKIND];           /* the state the loss was folded to */
};

Accuracy *check_accuracy_new(Ck *k, int maxlen)
{
	Machine *m = k->m;
	Accuracy *a = calloc(1, sizeof *a);
	if (!a)
		abort();
	a->m = m;
	a->cap = maxlen > HARD_LEN ? maxlen : HARD_LEN;
	size_t L = (size_t)a->cap;
	a->refv = check_doubles(m->refw), a->refe = check_doubles(m->refw);
	a->ref32 = check_doubles(m->refw), a->ref32e = check_doubles(m->refw);
	a->posv = check_doubles(L * m->refw), a->pose = check_doubles(L * m->refw);
	a->pos32 = check_doubles(L * m->refw), a->pos32e = check_doubles(L * m->refw);
	for (int g = 0; g < NGROUP; g++)
		a->st[g] = check_doubles(m->sw), a->fin[g] = check_doubles(m->finw);
	a->e = check_doubles(m->sw), a->l = check_doubles(3 * (size_t)m->sw);
	a->blk = check_doubles((size_t)BLOCKS * m->sw), a->blke = check_doubles((size_t)BLOCKS * m->sw);
	a->fine = check_doubles(m->finw), a->map = check_doubles(m->mapw), a->mape = check_doubles(m->mapw);
	for (int i = 0; i < NKIND; i++)
		a->wst[i] = check_doubles(m->sw);
	a->refr = check_doubles(m->refw), a->posr = check_doubles(L * m->refw);
	for (int g = 0; g < NGROUP; g++)
		a->str[g] = check_doubles(m->sw), a->finr[g] = check_doubles(m->finw);
	a->blkr = check_doubles((size_t)BLOCKS * m->sw);
	a->mapr = check_doubles(m->mapw);
	for (int md = 0; md < 2; md++) {
		a->own_str[md] = check_doubles(m->sw);
		a->own_st[md] = check_doubles(m->sw), a->own_ste[md] = check_doubles(m->sw);
		a->own_fin[md] = check_doubles(m->finw), a->own_fine[md] = check_doubles(m->finw);
		a->own_map[md] = check_doubles(L * m->mapw), a->own_mape[md] = check_doubles(L * m->mapw);
	}
	return a;
}

void check_accuracy_free(Accuracy *a)
{
	if (!a)
		return;
	double *all[] = {a->refv, a->refe, a->posv, a->pose, a->ref32, a->ref32e, a->pos32, a->pos32e, a->e, a->l,
			 a->blk, a->blke, a->fine, a->map, a->mape, a->refr, a->posr, a->blkr, a->mapr, a->own_str[0], a->own_str[1]};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i]);
	for (int g = 0; g < NGROUP; g++)
		free(a->st[g]), free(a->fin[g]), free(a->str[g]), free(a->finr[g]);
	for (int i = 0; i < NKIND; i++)
		draw_sample_free(a->witness[i]), free(a->wst[i]);
	for (int md = 0; md < 2; md++) {
		free(a->own_st[md]), free(a->own_ste[md]), free(a->own_fin[md]), free(a->own_fine[md]);
		free(a->own_map[md]), free(a->own_mape[md]);
	}
	free(a);
}

/* ---- folds in the spec's types ---- */

/* Positions [lo, hi) left to right from the identity into v (with its
 * bounds ve and rests vr), in md. */
static void fold_left_in(Accuracy *a, Mode md, const Row *r, int lo, int hi, double *v, double *ve, double *vr)
{
	Machine *m = a->m;
	eval_identity(m, md, v, ve);
	memset(vr, 0, m->sw * sizeof *vr);
	for (int j = lo; j < hi; j++)
		eval_step_exact(m, md, r, j, v, ve, vr, a->l);
}

/* In the spec's types, as the devices fold. */
static void fold_left(Accuracy *a, const Row *r, int lo, int hi, double *v, double *ve, double *vr)
{
	fold_left_in(a, MODE_F32, r, lo, hi, v, ve, vr);
}

/* BLOCKS contiguous blocks folded left to right, then merged pairwise,
 * neighbours first, as a block's threads and then a tree combine them. */
static void fold_blocks(Accuracy *a, const Row *r, double *v, double *vr)
{
	Machine *m = a->m;
	int sw = m->sw, n = BLOCKS;
	for (int b = 0; b < n; b++)
		fold_left(a, r, (int)((long long)b * r->len / n), (int)((long long)(b + 1) * r->len / n), a->blk + b * sw,
			  a->blke + b * sw, a->blkr + b * sw);
	for (int step = 1; step < n; step *= 2)
		for (int b = 0; b + step < n; b += 2 * step) {
			double *l = a->blk + b * sw, *le = a->blke + b * sw, *lr = a->blkr + b * sw;
			eval_merge_exact(m, MODE_F32, l, le, lr, l + step * sw, le + step * sw, lr + step * sw, l, le, lr);
		}
	memcpy(v, a->blk, sw * sizeof *v);
	memcpy(vr, a->blkr, sw * sizeof *vr);
}

/* ---- one row against the reference ---- */

static int unmasked(Machine *m, const Row *r)
{
	for (int j = 0; j < r->len; j++)
		if (!eval_masked(m, r, j))
			return 1;
	return 0;
}

/* The carrier's own float32 error at component t of finalize output o, or
 * of map output o at position j (check_own_error), against the float64
 * reference want (with its bound wante): from its left folds in both
 * modes, folded once a row and only for a row with a value beyond the
 * naive float32 evaluation's tolerance. */
static double own_error(Accuracy *a, const Row *r, int is_map, int o, int t, int j, double want, double wante,
			double share)
{
	Machine *m = a->m;
	for (int md = 0; !a->own_row && md < 2; md++) {
		fold_left_in(a, (Mode)md, r, 0, r->len, a->own_st[md], a->own_ste[md], a->own_str[md]);
		eval_finalize(m, (Mode)md, r, a->own_st[md], a->own_ste[md], a->own_fin[md], a->own_fine[md]);
		for (int p = 0; m->map && p < r->len; p++)
			eval_map(m, (Mode)md, r, p, a->own_st[md], a->own_ste[md], a->own_map[md] + (size_t)p * m->mapw,
				 a->own_mape[md] + (size_t)p * m->mapw);
	}
	a->own_row = 1;
	if (is_map) {
		size_t at = (size_t)j * m->mapw + m->mapoff[o] + t;
		return check_own_error(a->own_map[MODE_F64][at], a->own_mape[MODE_F64][at], want, wante,
				       a->own_mape[MODE_F32][at], share);
	}
	int at = m->finoff[o] + t;
	return check_own_error(a->own_fin[MODE_F64][at], a->own_fine[MODE_F64][at], want, wante, a->own_fine[MODE_F32][at],
			       share);
}

/* The kind of loss of got against want (-1: none), as `run` judges it:
 * naive is the reference in float32 with its running bound; where it
 * overflowed, fold (the carrier's own float32 fold, for finalize outputs;
 * NAN for none) stands in, as in runcheck.c.  own: the carrier's own
 * float32 error (own_error), 0 where not taken.  An integer output
 * (exact) is held to the reference exactly, with the rests gotr and wantr
 * (ir_int_exact) of an i64 past 2^53. */
static int judge(double got, double gotr, double want, double wantr, double naive, double bound, double fold,
		 double own, double share, double scale, int exact, Loss *l)
{
	if (!isfinite(want))
		return -1; /* the float64 reference overflowed: `run` compares nothing there */
	l->gotr = gotr, l->wantr = wantr;
	if (!isfinite(got)) {
		l->got = got, l->want = want, l->naive = naive, l->tol = 0, l->ratio = INFINITY;
		return NONFINITE;
	}
	int by_fold = !isfinite(naive) && isfinite(fold);
	double ne = fmax(check_naive_error(want, by_fold ? fold : naive, bound, share, scale, by_fold), own);
	double tol = exact ? 0 : check_tolerance(ne, scale);
	double err = exact ? check_int_distance(got, gotr, want, wantr) : fabs(got - want);
	if (!(err > tol))
		return -1;
	l->got = got, l->want = want, l->naive = naive, l->tol = tol, l->ratio = tol > 0 ? err / tol : INFINITY;
	return BEYOND;
}

static double scale_of(const double *v, size_t n, size_t stride)
{
	double s = 0;
	for (size_t k = 0; k < n; k++)
		if (isfinite(v[k * stride]))
			s = fmax(s, fabs(v[k * stride]));
	return s;
}

/* Keep the worse loss of its kind; bit kind of *found set. */
static void keep(Loss *worst, unsigned *found, int kind, const Loss *l)
{
	if (kind < 0)
		return;
	if (!(*found & 1u << kind) || l->ratio > worst[kind].ratio)
		worst[kind] = *l;
	*found |= 1u << kind;
}

/* The finalize and map outputs of state st (grouping g; str its rests)
 * against the references in refs. */
static void judge_state(Accuracy *a, const Row *r, const AccRefs *refs, Grouping g, const double *st,
			const double *str, const double *left, double share, Loss *worst, unsigned *found)
{
	Machine *m = a->m;
	Carrier *c = m->c;
	memset(a->e, 0, m->sw * sizeof *a->e);
	eval_finalize_exact(m, MODE_F32, r, st, a->e, str, a->fin[g], a->fine, a->finr[g]);
	for (int o = 0; o < c->nfinal; o++) {
		int q = check_ref_index(c, c->finalize[o].name, 1);
		if (q < 0)
			continue;
		int w = m->finoff[o + 1] - m->finoff[o], exact = !ty_is_float(c->finalize[o].e->ty), ro = m->refoff[q];
		double scale = scale_of(refs->refv + ro, w, 1);
		for (int t = 0; t < w; t++) {
			Loss l = {&c->finalize[o], 0, t, -1, g, 0, 0, 0, 0, 0, 0, 0};
			double fold = left ? left[m->finoff[o] + t] : NAN, got = a->fin[g][m->finoff[o] + t];
			double gotr = a->finr[g][m->finoff[o] + t], wantr = refs->refr[ro + t];
			double want = refs->refv[ro + t], naive = refs->ref32[ro + t], bound = refs->ref32e[ro + t];
			int kind = judge(got, gotr, want, wantr, naive, bound, fold, 0, share, scale, exact, &l);
			/* where the fold stands in for an overflowed naive, it is the
			 * naive version already (runcheck.c) */
			if (kind == BEYOND && (isfinite(naive) || !isfinite(fold)))
				kind = judge(got, gotr, want, wantr, naive, bound, fold,
					     own_error(a, r, 0, o, t, -1, want, refs->refe[ro + t], share), share, scale, exact, &l);
			keep(worst, found, kind, &l);
		}
	}
	for (int o = 0; o < c->nmap; o++) {
		int q = check_ref_index(c, c->map[o].name, 0);
		if (q < 0)
			continue;
		int w = m->mapoff[o + 1] - m->mapoff[o], exact = !ty_is_float(c->map[o].e->ty);
		double scale = 0;
		for (int t = 0; t < w; t++)
			scale = fmax(scale, scale_of(refs->posv + m->refoff[q] + t, (size_t)r->len, m->refw));
		for (int j = 0; j < r->len; j++) {
			eval_map_exact(m, MODE_F32, r, j, st, a->e, str, a->map, a->mape, a->mapr);
			size_t at = (size_t)j * m->refw + m->refoff[q];
			for (int t = 0; t < w; t++) {
				Loss l = {&c->map[o], 1, t, j, g, 0, 0, 0, 0, 0, 0, 0};
				double got = a->map[m->mapoff[o] + t], want = refs->posv[at + t];
				double gotr = a->mapr[m->mapoff[o] + t], wantr = refs->posr[at + t];
				int kind = judge(got, gotr, want, wantr, refs->pos32[at + t], refs->pos32e[at + t], NAN, 0, share,
						 scale, exact, &l);
				if (kind == BEYOND)
					kind = judge(got, gotr, want, wantr, refs->pos32[at + t], refs->pos32e[at + t], NAN,
						     own_error(a, r, 1, o, t, j, want, refs->pose[at + t], share), share, scale,
						     exact, &l);
				keep(worst, found, kind, &l);
			}
		}
	}
}

/* Row r folded in the groupings of gmask (G_TREE: the state tree, folded
 * by the caller), against refs or, where NULL, the references computed
 * here: the kinds of loss found, as bits, and the worst of each. */
static unsigned row_losses(Accuracy *a, const Row *r, unsigned gmask, const double *tree, const double *treer,
			   const AccRefs *refs, Loss *worst)
{
	Machine *m = a->m;
	if (!unmasked(m, r))
		return 0; /* an empty row's value is the soundness check's, by its own rule */
	AccRefs own = {a->refv, a->refe, a->ref32, a->ref32e, a->posv, a->pose, a->pos32, a->pos32e, a->refr, a->posr};
	if (!refs) {
		eval_reference_exact(m, MODE_F64, r, a->refv, a->refe, a->refr, a->posv, a->pose, a->posr);
		eval_reference(m, MODE_F32, r, a->ref32, a->ref32e, a->pos32, a->pos32e);
		refs = &own;
	}
	double share = check_bound_share(r->len);
	unsigned found = 0;
	a->own_row = 0;
	/* the left fold first: where the naive float32 reference overflowed,
	 * its outputs stand in for it, as in `run` */
	const double *left = NULL;
	int overflowed = 0; /* the naive reference of a finalize output overflowed where float64's did not */
	for (int q = 0; q < m->c->nref; q++)
		for (int t = m->refoff[q]; m->c->ref[q].per_row && t < m->refoff[q + 1]; t++)
			overflowed |= isfinite(refs->refv[t]) && !isfinite(refs->ref32[t]);
	if (gmask & 1u << G_LEFT || overflowed) {
		fold_left(a, r, 0, r->len, a->st[G_LEFT], a->e, a->str[G_LEFT]);
		if (gmask & 1u << G_LEFT)
			judge_state(a, r, refs, G_LEFT, a->st[G_LEFT], a->str[G_LEFT], NULL, share, worst, &found);
		else {
			memset(a->e, 0, m->sw * sizeof *a->e);
			eval_finalize_exact(m, MODE_F32, r, a->st[G_LEFT], a->e, a->str[G_LEFT], a->fin[G_LEFT], a->fine,
					    a->finr[G_LEFT]);
		}
		left = a->fin[G_LEFT];
	}
	if (gmask & 1u << G_BLOCKS) {
		fold_blocks(a, r, a->st[G_BLOCKS], a->str[G_BLOCKS]);
		judge_state(a, r, refs, G_BLOCKS, a->st[G_BLOCKS], a->str[G_BLOCKS], left, share, worst, &found);
	}
	if (gmask & 1u << G_TREE) {
		memcpy(a->st[G_TREE], tree, m->sw * sizeof *tree);
		memcpy(a->str[G_TREE], treer, m->sw * sizeof *treer);
		judge_state(a, r, refs, G_TREE, a->st[G_TREE], a->str[G_TREE], left, share, worst, &found);
	}
	return found;
}

/* ---- shrinking ---- */

static unsigned sample_losses(Accuracy *a, Sample *s, unsigned gmask, Loss *worst)
{
	return row_losses(a, s->row, gmask, s->v[MODE_F32], s->rest[MODE_F32], NULL, worst);
}

/* s with positions [lo, hi) only; its random tree's states recomputed
 * where tree is set (NULL where they cannot be). */
static Sample *cut(Machine *m, const Sample *s, int lo, int hi, int tree)
{
	Sample *t = draw_sample_clone(m, s);
	Row *r = t->row;
	memmove(r->colv, r->colv + (size_t)lo * m->colw, (size_t)(hi - lo) * m->colw * sizeof(double));
	memmove(r->elemv, r->elemv + (size_t)lo * m->elemw, (size_t)(hi - lo) * m->elemw * sizeof(double));
	if (r->colrest)
		memmove(r->colrest, r->colrest + (size_t)lo * m->colw, (size_t)(hi - lo) * m->colw * sizeof(double));
	if (r->elemrest)
		memmove(r->elemrest, r->elemrest + (size_t)lo * m->elemw, (size_t)(hi - lo) * m->elemw * sizeof(double));
	r->len = hi - lo;
	t->lo = 0, t->hi = hi - lo;
	if (tree && draw_sample_eval(m, t)) {
		draw_sample_free(t);
		return NULL;
	}
	return t;
}

/* Whether s cut to [lo, hi) still shows a loss of this kind; where it
 * does, *s is the cut row. */
static int cut_fails(Accuracy *a, Sample **s, int lo, int hi, unsigned gmask, int kind)
{
	Loss l[NKIND];
	Sample *t = cut(a->m, *s, lo, hi, gmask & 1u << G_TREE);
	if (!t || !(sample_losses(a, t, gmask, l) & 1u << kind)) {
		draw_sample_free(t);
		return 0;
	}
	draw_sample_free(*s);
	*s = t;
	return 1;
}

/* A shorter row of the same values that still shows a loss of this kind:
 * the shortest prefix that does, by bisection (the losses grow with the
 * row, mostly), then on short rows a position at either end at a time. */
static Sample *shrink(Accuracy *a, Sample *s, unsigned gmask, int kind)
{
	int lo = 0, hi = s->row->len; /* a prefix of hi positions fails */
	while (hi - lo > 1) {
		int mid = lo + (hi - lo) / 2;
		if (cut_fails(a, &s, 0, mid, gmask, kind))
			hi = mid;
		else
			lo = mid;
	}
	for (int tries = 0; s->row->len > 1 && s->row->len <= SHORT_ROW && tries < 2 * SHORT_ROW; tries++)
		cut_fails(a, &s, tries % 2, s->row->len - 1 + tries % 2, gmask, kind);
	return s;
}

/* Keep a shrunk copy of s for each kind of loss it shows that has none. */
static void witness(Accuracy *a, const Sample *s, unsigned found, unsigned gmask, const char *kind)
{
	for (int x = 0; x < NKIND; x++) {
		if (!(found & 1u << x) || a->witness[x])
			continue;
		Sample *w = shrink(a, draw_sample_clone(a->m, s), gmask, x);
		Loss l[NKIND];
		sample_losses(a, w, gmask, l);
		a->witness[x] = w;
		a->kind[x] = kind;
		a->loss[x] = l[x];
		memcpy(a->wst[x], a->st[l[x].g], a->m->sw * sizeof *a->wst[x]);
	}
}

/* ---- rows ---- */

void check_accuracy_row(Ck *k, Accuracy *a, const Sample *s, const char *kind, const AccRefs *refs)
{
	(void)k;
	if (a->witness[NONFINITE] || s->row->len > a->cap)
		return;
	Loss l[NKIND];
	unsigned found = row_losses(a, s->row, 1u << G_TREE, s->v[MODE_F32], s->rest[MODE_F32], refs, l);
	if (found & ~(a->witness[BEYOND] ? 1u << BEYOND : 0))
		witness(a, s, found, 1u << G_TREE, kind);
}

/* Float element and column inputs set to the values of a hard row of
 * this kind; integers (labels, positions) as drawn. */
static void put_hard(const Decl *d, int n, const int *off, int width, double *v, int len, int kind, uint64_t *rng)
{
	for (int k = 0; k < n; k++) {
		if (!ty_is_float(d[k].ty))
			continue;
		for (int j = 0; j < len; j++)
			for (int t = off[k]; t < off[k + 1]; t++) {
				double x = kind == 0 ? 1000.5 : kind == 1 ? 1e4 + rng_normal(rng)
					 : (rng_next(rng) & 1 ? -1 : 1) * pow(10, 12 * rng_unit(rng) - 6);
				v[(size_t)j * width + t] = ir_round(d[k].storage, x);
			}
	}
}

void check_accuracy_hard_rows(Ck *k, Accuracy *a)
{
	Machine *m = k->m;
	Carrier *c = m->c;
	/* a stream of their own: the rows drawn after them stay the seed's */
	uint64_t rng = k->rng ^ 0x5eed0fa11ed0f32dull;
	unsigned two = 1u << G_LEFT | 1u << G_BLOCKS;
	for (int kind = 0; kind < HARD_KINDS && !a->witness[NONFINITE]; kind++) {
		Sample *s = draw_sample_row(m, DRAW_NORMAL, hard_len[kind], &rng);
		if (!s)
			continue;
		put_hard(c->elem, c->nelem, m->elemoff, m->elemw, s->row->elemv, s->row->len, kind, &rng);
		put_hard(c->col, c->ncol, m->coloff, m->colw, s->row->colv, s->row->len, kind, &rng);
		int ok = 1;
		for (int j = 0; ok && j < s->row->len; j++)
			ok = eval_assume(m, s->row, j);
		Loss l[NKIND];
		unsigned found = ok ? row_losses(a, s->row, two, NULL, NULL, NULL, l) : 0;
		if (found)
			witness(a, s, found, two, hard_name[kind]);
		draw_sample_free(s);
	}
}

/* ---- the report ---- */

void check_accuracy_report(Ck *k, Accuracy *a, CheckResult *r)
{
	int x = a->witness[NONFINITE] ? NONFINITE : BEYOND;
	r->accuracy = r->sound == VERDICT_HOLDS ? VERDICT_HOLDS : VERDICT_NA;
	if (!a->witness[x] || r->sound != VERDICT_HOLDS)
		return;
	Machine *m = k->m;
	const Loss *l = &a->loss[x];
	const Row *row = a->witness[x]->row;
	Buf d = {0}, b = {0}, j = {0};
	/* an integer output is no float32 value: it is computed in the spec's
	 * types (its f32 fields in float32), shown in full, and held to the
	 * reference exactly */
	int integer = !ty_is_float(l->out->e->ty);
	const char *types = integer ? "the spec's types" : "float32";
	buf_puts(&d, l->out->name);
	if (l->out->e->ty.len)
		buf_printf(&d, "[%d]", l->comp);
	if (l->is_map)
		buf_printf(&d, " at position %d", l->pos);
	buf_puts(&d, " is ");
	cex_value(&d, integer, l->got, l->gotr, 9);
	buf_printf(&d, " in %s (%s) but the reference gives ", types, grouping_name[l->g]);
	cex_value(&d, integer, l->want, l->wantr, 9);
	buf_printf(&d, " (%s, row of length %d): ", a->kind[x], row->len);
	if (x == BEYOND && integer)
		buf_printf(&d, "off by %.17g, where assoc run holds an integer output to the reference exactly; ",
			   check_int_distance(l->got, l->gotr, l->want, l->wantr));
	else if (x == BEYOND)
		/* just past 1 reads as more than 1 */
		buf_printf(&d, l->ratio < 1.01 ? "off by %.2g, %.4f times the tolerance of assoc run; "
					       : "off by %.2g, %.3g times the tolerance of assoc run; ",
			   fabs(l->got - l->want), l->ratio);
	else
		buf_puts(&d, "assoc run fails a value that is not finite where the reference is; ");
	buf_printf(&d, "the reference evaluated in %s ", types);
	if (isfinite(l->naive))
		buf_printf(&d, "is off by %.2g", fabs(l->naive - l->want));
	else
		buf_puts(&d, "overflows");
	cex_params_line(&b, m);
	if (row->len > SHORT_ROW / 2)
		buf_printf(&b, "    a row of %d positions (%s), not shown", row->len, a->kind[x]);
	else {
		cex_row(&b, m, row);
	}
	buf_printf(&b, "\n    state = ");
	cex_state(&b, m, a->wst[x], -1);
	buf_printf(&b, "   (float32, %s)\n", grouping_name[l->g]);
	buf_puts(&j, "{");
	cex_params_json(&j, m);
	buf_printf(&j, "\"mode\": \"float32\", \"grouping\": \"%s\", \"row\": \"%s\", \"length\": %d, \"output\": ",
		   grouping_name[l->g], a->kind[x], row->len);
	buf_json_str(&j, l->out->name);
	buf_printf(&j, ", \"component\": %d, \"position\": %d, \"got\": ", l->comp, l->pos);
	buf_json_num(&j, l->got);
	buf_puts(&j, ", \"want\": ");
	buf_json_num(&j, l->want);
	buf_puts(&j, ", \"naive\": ");
	buf_json_num(&j, l->naive);
	buf_puts(&j, ", \"tolerance\": ");
	buf_json_num(&j, l->tol);
	buf_puts(&j, ", \"state\": ");
	cex_state_json(&j, m, a->wst[x]);
	buf_puts(&j, "}");
	if (x == BEYOND) {
		r->accuracy = VERDICT_FAILS;
		r->acc_detail = buf_take(&d), r->acc_cex = buf_take(&b), r->acc_json = buf_take(&j);
		return;
	}
	r->accuracy = VERDICT_NA; /* the soundness verdict says it */
	r->sound = VERDICT_FAILS;
	r->sound_empty = 0;
	r->sound_detail = buf_take(&d), r->sound_cex = buf_take(&b), r->sound_json = buf_take(&j);
}
