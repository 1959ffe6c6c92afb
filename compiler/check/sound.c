/* sound.c: does the carrier compute what the reference says?  Rows of many
 * lengths (empty, one, primes, around powers of two) are folded in random
 * tree shapes, finalized and mapped, and compared with the naive float64
 * evaluation of `reference`; the same rows in float32 give the error report. */
#include <stdlib.h>
#include <string.h>

#include "compiler/check/check_int.h"

static const int lens[] = {0, 1, 2, 3, 5, 7, 13, 31, 32, 33, 64, 97, 128, 257};
/* and a few long rows, one family each: run's default length (1000) and
 * one past a few thousand, where a finalize that reads the count (a mean
 * divided by where(n > 1100, ...)) is wrong only there */
static const int long_lens[] = {1000, 4099};
static const DrawFamily long_fams[] = {DRAW_NORMAL, DRAW_GRID};
/* the spec's constants last: a lift that switches at |x| > 1e9 differs
 * from the reference only on rows that reach it */
static const DrawFamily row_fams[] = {DRAW_NORMAL, DRAW_GRID, DRAW_SPREAD, DRAW_WIDE, DRAW_MEAN, DRAW_CONSTS};

typedef struct {
	double *sv, *se, *s32, *fin, *fine, *fin32, *map, *mape, *map32;
	double *refv, *refe, *posv, *pose, *ref32, *pos32;
	double *ref32e, *pos32e; /* the float32 reference's bounds, unused: not the float64 ones */
	/* rests of the integers (ir_int_exact) of sv, s32, fin, fin32, map,
	 * map32, refv and posv: exact from the inputs to the comparison */
	double *sr, *s32r, *finr, *fin32r, *mapr, *map32r, *refr, *posr;
	double *scale; /* each map output's scale on the row (pos_scale) */
	int cap;
} Work;

typedef struct {
	const Def *out;
	int is_map, comp, pos;
	double got, want;
	Mode mode;
	double gotr, wantr; /* their rests, where integers */
} Miss;

static void work_init(Work *w, Machine *m, int maxlen)
{
	w->sv = check_doubles(m->sw), w->se = check_doubles(m->sw), w->s32 = check_doubles(m->sw);
	w->fin = check_doubles(m->finw), w->fine = check_doubles(m->finw), w->fin32 = check_doubles(m->finw);
	w->map = check_doubles(m->mapw), w->mape = check_doubles(m->mapw), w->map32 = check_doubles(m->mapw);
	w->refv = check_doubles(m->refw), w->refe = check_doubles(m->refw);
	w->posv = check_doubles((size_t)maxlen * m->refw), w->pose = check_doubles((size_t)maxlen * m->refw);
	w->ref32 = check_doubles(m->refw), w->pos32 = check_doubles((size_t)maxlen * m->refw);
	w->ref32e = check_doubles(m->refw), w->pos32e = check_doubles((size_t)maxlen * m->refw);
	w->sr = check_doubles(m->sw), w->s32r = check_doubles(m->sw);
	w->finr = check_doubles(m->finw), w->fin32r = check_doubles(m->finw);
	w->mapr = check_doubles(m->mapw), w->map32r = check_doubles(m->mapw);
	w->refr = check_doubles(m->refw), w->posr = check_doubles((size_t)maxlen * m->refw);
	w->scale = check_doubles(m->c->nmap);
	w->cap = maxlen;
}

static void work_free(Work *w)
{
	double *all[] = {w->sv, w->se, w->s32, w->fin, w->fine, w->fin32, w->map, w->mape, w->map32,
			 w->refv, w->refe, w->posv, w->pose, w->ref32, w->pos32, w->ref32e, w->pos32e,
			 w->sr, w->s32r, w->finr, w->fin32r, w->mapr, w->map32r, w->refr, w->posr, w->scale};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i]);
}

int check_ref_index(Carrier *c, const char *name, int per_row)
{
	for (int k = 0; k < c->nref; k++)
		if (c->ref[k].per_row == per_row && !strcmp(c->ref[k].name, name))
			return k;
	return -1;
}

static int unmasked(Machine *m, const Row *r)
{
	int n = 0;
	for (int j = 0; j < r->len; j++)
		n += !eval_masked(m, r, j);
	return n;
}

static ErrOutcome *err_slot(CheckResult *r, const char *name)
{
	for (int i = 0; i < r->nerr; i++)
		if (!strcmp(r->err[i].name, name))
			return &r->err[i];
	return NULL;
}

static double rel_err(double got, double want)
{
	return isfinite(got) ? (want ? fabs(got - want) / fabs(want) : 0) : INFINITY;
}

/* Relative error, except that a map output is measured against the row's
 * largest value of it: a probability of 1e-40 that float32 flushes to zero
 * is an absolute error of 1e-40, not a relative error of 1. */
static void note_f32(CheckResult *r, const char *name, double got, double naive, double want, double scale,
		     DrawFamily f)
{
	ErrOutcome *e = err_slot(r, name);
	if (!e || !isfinite(want) || (want == 0 && scale == 0))
		return;
	double den = fmax(fabs(want), scale);
	double rel = rel_err(got, want) * fabs(want) / den, nrel = rel_err(naive, want) * fabs(want) / den;
	if (want == 0)
		rel = fabs(got) / den, nrel = fabs(naive) / den;
	if (!e->defined || rel > e->rel)
		e->rel = rel, e->family = draw_family_name[f];
	if (!e->defined || nrel > e->naive)
		e->naive = nrel;
	e->defined = 1;
}

static void note_empty(CheckResult *r, const char *name, double got, double want)
{
	char msg[200], g[40], w[40];
	for (int i = 0; i < r->nnotes; i++)
		if (!strncmp(r->notes[i], name, strlen(name)) && r->notes[i][strlen(name)] == ' ')
			return;
	ir_fmt_num(got, g, sizeof g);
	ir_fmt_num(want, w, sizeof w);
	if (isnan(got) && isnan(want))
		snprintf(msg, sizeof msg, "%s is NaN on an empty row, as is the reference", name);
	else if (isnan(got))
		snprintf(msg, sizeof msg, "%s is NaN on an empty row; the reference gives %s", name, w);
	else if (isnan(want))
		snprintf(msg, sizeof msg, "%s is %s on an empty row, where the reference is undefined (NaN)", name, g);
	else
		snprintf(msg, sizeof msg, "%s is %s on an empty row, as is the reference", name, g);
	r->notes = realloc(r->notes, (r->nnotes + 1) * sizeof *r->notes);
	if (!r->notes || !(r->notes[r->nnotes++] = strdup(msg)))
		abort();
}

/* Compare one output's components; an empty row only makes notes. */
typedef struct {
	const double *got, *ge, *g32; /* the carrier in float64 (with error bounds) and float32 */
	const double *want, *we, *w32; /* the reference likewise */
	double scale;                  /* map outputs: the row's largest |value| */
	const double *gotr, *wantr;    /* the rests of got's and want's integers */
} Sides;

static int compare(CheckResult *r, const Def *out, int is_map, int pos, Sides s, int w, int empty, DrawFamily f,
		   Miss *miss)
{
	for (int t = 0; t < w; t++) {
		double got = s.got[t], want = s.want[t];
		if (empty) {
			/* the reduction over no positions is a value too (a sum's 0),
			 * and a mask may empty every row drawn; held to run's rule
			 * (check_special_agree), so that a NaN where the reference
			 * gives a number fails here as it fails `assoc run --len 0` */
			int special = check_special_agree(got, want);
			if (!special) {
				*miss = (Miss){out, is_map, t, pos, got, want, MODE_F64, s.gotr[t], s.wantr[t]};
				return 1;
			}
			ErrOutcome *e = r && !isnan(got) && !isnan(want) ? err_slot(r, out->name) : NULL;
			if (e)
				e->compared_empty++;
			if (r && !is_map && (special == 1 || got == want)) {
				note_empty(r, out->name, got, want);
				continue;
			}
			if (special == 1)
				continue;
		} else if (!isfinite(want)) {
			continue; /* the naive reference overflowed: nothing to compare with */
		} else if (r) {
			ErrOutcome *e = err_slot(r, out->name);
			if (e)
				e->compared++;
			note_f32(r, out->name, s.g32[t], s.w32[t], want, s.scale, f);
		}
		/* an integer output is held to an integer reference exactly, an
		 * i64 past 2^53 as the integer it is (its rest beside it) */
		int integer = !ty_is_float(out->e->ty) && isfinite(want) && want == trunc(want);
		if (integer ? check_int_distance(got, s.gotr[t], want, s.wantr[t]) != 0
			    : !check_values_agree(got, s.ge[t], want, s.we[t], check_unit_roundoff(MODE_F64))) {
			*miss = (Miss){out, is_map, t, pos, got, want, MODE_F64, s.gotr[t], s.wantr[t]};
			return 1;
		}
	}
	return 0;
}

static double pos_scale(Machine *m, Work *w, int len, int q)
{
	double s = 0;
	for (int j = 0; j < len; j++)
		for (int t = m->refoff[q]; t < m->refoff[q + 1]; t++)
			if (isfinite(w->posv[(size_t)j * m->refw + t]))
				s = fmax(s, fabs(w->posv[(size_t)j * m->refw + t]));
	return s;
}

/* 1 when the row disagrees with the reference (first disagreement in *miss). */
static int row_check(Ck *k, Work *w, Sample *s, CheckResult *r, Miss *miss)
{
	Machine *m = k->m;
	Carrier *c = m->c;
	const Row *row = s->row;
	uint64_t rng = s->seed;
	int empty = unmasked(m, row) == 0;
	/* a scan writes an output at each position, from a prefix that
	 * holds that position: a row of none has no output to hold */
	if (c->tpl == FAM_SCAN && !row->len)
		return 0;
	eval_fold_exact(m, MODE_F64, row, 0, row->len, s->shape, &rng, w->sv, w->se, w->sr);
	memcpy(w->s32, s->v[MODE_F32], m->sw * sizeof *w->s32);
	memcpy(w->s32r, s->rest[MODE_F32], m->sw * sizeof *w->s32r);
	eval_finalize_exact(m, MODE_F64, row, w->sv, w->se, w->sr, w->fin, w->fine, w->finr);
	eval_finalize_exact(m, MODE_F32, row, w->s32, w->se, w->s32r, w->fin32, NULL, w->fin32r);
	eval_reference_exact(m, MODE_F64, row, w->refv, w->refe, w->refr, w->posv, w->pose, w->posr);
	if (r)
		eval_reference(m, MODE_F32, row, w->ref32, w->ref32e, w->pos32, w->pos32e);
	for (int o = 0; o < c->nfinal; o++) {
		int q = check_ref_index(c, c->finalize[o].name, 1), at = m->finoff[o], rat = m->refoff[q < 0 ? 0 : q];
		Sides sd = {w->fin + at, w->fine + at, w->fin32 + at, w->refv + rat, w->refe + rat, w->ref32 + rat, 0,
			    w->finr + at, w->refr + rat};
		if (q >= 0 && compare(r, &c->finalize[o], 0, -1, sd, m->finoff[o + 1] - at, empty, s->fam, miss))
			return 1;
	}
	/* each map output's scale is the row's largest |value| of it: found
	 * once a row, not once a position (that made a check quadratic in
	 * the row's length) */
	for (int o = 0; m->map && o < c->nmap; o++) {
		int q = check_ref_index(c, c->map[o].name, 0);
		w->scale[o] = q >= 0 ? pos_scale(m, w, row->len, q) : 0;
	}
	for (int j = 0; m->map && j < row->len; j++) {
		eval_map_exact(m, MODE_F64, row, j, w->sv, w->se, w->sr, w->map, w->mape, w->mapr);
		eval_map_exact(m, MODE_F32, row, j, w->s32, w->se, w->s32r, w->map32, NULL, w->map32r);
		for (int o = 0; o < c->nmap; o++) {
			int q = check_ref_index(c, c->map[o].name, 0), mo = m->mapoff[o];
			size_t at = (size_t)j * m->refw + m->refoff[q >= 0 ? q : 0];
			Sides sd = {w->map + mo, w->mape + mo, w->map32 + mo, w->posv + at, w->pose + at, w->pos32 + at,
				    w->scale[o], w->mapr + mo, w->posr + at};
			if (q >= 0 && compare(r, &c->map[o], 1, j, sd, m->mapoff[o + 1] - mo, empty, s->fam, miss))
				return 1;
		}
	}
	return 0;
}

static int sound_fails(Ck *k, Trial *t, Sample **s)
{
	Miss miss;
	(void)t;
	return row_check(k, k->work, s[0], NULL, &miss);
}

static void describe_miss(Ck *k, CheckResult *r, Sample *s, const double *state, const Miss *miss,
			  const char *kind)
{
	Machine *m = k->m;
	Buf b = {0}, d = {0}, j = {0};
	buf_puts(&d, miss->out->name);
	if (miss->out->e->ty.len)
		buf_printf(&d, "[%d]", miss->comp);
	if (miss->is_map)
		buf_printf(&d, " at position %d", miss->pos);
	int integer = !ty_is_float(miss->out->e->ty);
	buf_puts(&d, " is ");
	cex_value(&d, integer, miss->got, miss->gotr, 9);
	int live = unmasked(m, s->row);
	if (!live && s->row->len)
		buf_printf(&d, " on a fully masked row (length %d, every position masked)", s->row->len);
	else if (!live)
		buf_puts(&d, " on an empty row (length 0)");
	buf_puts(&d, " but the reference gives ");
	cex_value(&d, integer, miss->want, miss->wantr, 9);
	if (live)
		buf_printf(&d, " (%s%srow of length %d, float64)", kind ? kind : "", kind ? ", " : "", s->row->len);
	r->sound_empty = !live;
	cex_row(&b, m, s->row);
	buf_puts(&b, "\n    state = ");
	cex_state(&b, m, state, -1);
	buf_puts(&b, "\n");
	buf_puts(&j, "{");
	cex_params_json(&j, m);
	buf_printf(&j, "\"length\": %d, \"output\": ", s->row->len);
	buf_json_str(&j, miss->out->name);
	buf_printf(&j, ", \"component\": %d, \"position\": %d, \"got\": ", miss->comp, miss->pos);
	buf_json_num(&j, miss->got);
	buf_puts(&j, ", \"want\": ");
	buf_json_num(&j, miss->want);
	buf_puts(&j, ", \"state\": ");
	cex_state_json(&j, m, state);
	buf_puts(&j, "}");
	r->sound_detail = buf_take(&d);
	r->sound_cex = buf_take(&b);
	r->sound_json = buf_take(&j);
}

static void add_err_slots(CheckResult *r, Carrier *c)
{
	r->err = calloc(c->nfinal + c->nmap + 1, sizeof *r->err);
	if (!r->err)
		abort();
	for (int o = 0; o < c->nfinal; o++)
		if (check_ref_index(c, c->finalize[o].name, 1) >= 0)
			r->err[r->nerr++].name = strdup(c->finalize[o].name);
	for (int o = 0; o < c->nmap; o++)
		if (check_ref_index(c, c->map[o].name, 0) >= 0)
			r->err[r->nerr++].name = strdup(c->map[o].name);
}

enum { MASKED_ROWS = 4, MASKED_TRIES = 64 };

/* ---- integers of large magnitude ----
 *
 * The families draw integers in [-100, 100], where a carrier that holds
 * an integer input in a float field (an i32 kept in an f32 maximum, whose
 * neighbours tie past 2^24) or wraps where the reference does not (past
 * 2^31) is never seen.  These rows set every integer input that is not a
 * position near where float32 (2^24), i32 (its limits) or a double (2^53,
 * and an i64's limits where a double holds them) stops holding integers
 * one apart, a few apart from each other; and four more next to 2^24 and
 * 2^53 alone (large_rows).  A loss of the spec's float32
 * typing is the accuracy check's warning; a reference that disagrees in
 * float64 fails. */
static const int large_lens[] = {2, 3, 7, 33};
enum { TIE_LEN = 7 };

static const char *const large_kind = "integers of large magnitude";

static double large_int(TyKind storage, uint64_t *rng)
{
	double d = rng_int(rng, 0, 3), sign = rng_next(rng) & 1 ? -1 : 1;
	switch (rng_int(rng, 0, storage == TY_I32 ? 2 : 3)) {
	case 0: return sign * (0x1p24 + d);
	case 1: return storage == TY_I32 ? 0x1p31 - 1 - d : sign * (0x1p53 - d);
	case 2: return storage == TY_I32 ? -0x1p31 + d : -0x1p63;
	default: return 0x1p63 - 1024 * (1 + d); /* below INT64_MAX, where doubles are 1024 apart */
	}
}

/* 2^bits + d at position j of len: one of 2^bits - 1, 2^bits, 2^bits + 1,
 * 2^bits first and 2^bits + 1 last (the reverse where rev), so that the
 * two that a float of bits significant bits holds as one meet in both
 * orders over a row and its reverse. */
static double tie_int(int bits, int j, int len, int rev, uint64_t *rng)
{
	int d = j == 0 ? rev : j == len - 1 ? !rev : rng_int(rng, -1, 1);
	return ldexp(1, bits) + d;
}

/* Integer inputs of d (span: the place of d[0] among all inputs) that are
 * not positions set large in v; 1 where there was one.  With bits, next
 * to 2^bits (tie_int), where the type holds that. */
static int put_large(Machine *m, const Decl *d, int n, int span, const int *off, int width, double *v, int len,
		     int bits, int rev, uint64_t *rng)
{
	const unsigned char *index = draw_index_inputs(m);
	int put = 0;
	for (int i = 0; i < n; i++) {
		if (!ty_is_int(d[i].ty) || index[span + i] || (bits > 31 && d[i].storage == TY_I32))
			continue;
		for (int j = 0; j < len; j++)
			for (int t = off[i]; t < off[i + 1]; t++)
				v[(size_t)j * width + t] = bits ? tie_int(bits, j, len, rev, rng) : large_int(d[i].storage, rng);
		put = 1;
	}
	return put;
}

/* A row of the integer grid with its integer inputs large (with bits,
 * next to 2^bits, as put_large puts them); NULL where the carrier has
 * none or assume refuses them. */
static Sample *large_row(Machine *m, int len, int bits, int rev, uint64_t *rng)
{
	Carrier *c = m->c;
	Sample *s = draw_sample_row(m, DRAW_GRID, len, rng);
	if (!s)
		return NULL;
	Row *r = s->row;
	int put = put_large(m, c->elem, c->nelem, 0, m->elemoff, m->elemw, r->elemv, len, bits, rev, rng);
	put |= put_large(m, c->col, c->ncol, c->nelem, m->coloff, m->colw, r->colv, len, bits, rev, rng);
	put |= put_large(m, c->row, c->nrow, c->nelem + c->ncol, m->rowoff, m->roww, r->rowv, 1, bits, rev, rng);
	int ok = put;
	for (int j = 0; ok && j < len; j++)
		ok = eval_assume(m, r, j);
	if (!ok || draw_sample_eval(m, s)) {
		draw_sample_free(s);
		return NULL;
	}
	return s;
}

static int sound_row(Ck *k, Work *w, Sample *s, CheckResult *r, Accuracy *acc, const char *kind);

/* 1 where a large row fails (r says how).  After the rows of magnitudes
 * drawn position by position, rows next to 2^24 and (for an i64) 2^53
 * alone, in both orders: neighbours there that tie once converted to a
 * float pick the wrong one of two where a merge keeps the left one (or
 * the right one) of a tie. */
static int large_rows(Ck *k, Work *w, CheckResult *r, Accuracy *acc)
{
	for (size_t li = 0; li < sizeof large_lens / sizeof *large_lens; li++) {
		Sample *s = large_row(k->m, large_lens[li], 0, 0, &k->rng);
		if (s && sound_row(k, w, s, r, acc, large_kind))
			return 1;
	}
	static const int tie_bits[] = {24, 53};
	for (int b = 0; b < 2; b++)
		for (int rev = 0; rev < 2; rev++) {
			Sample *s = large_row(k->m, TIE_LEN, tie_bits[b], rev, &k->rng);
			if (s && sound_row(k, w, s, r, acc, large_kind))
				return 1;
		}
	return 0;
}

/* Compare one drawn row (and free it); 1 when it fails, with the shrunk
 * row described in r.  With acc, the row is held in the spec's types to
 * run's tolerance too (check_accuracy_row), which reports only after
 * every row has held in float64. */
static int sound_row(Ck *k, Work *w, Sample *s, CheckResult *r, Accuracy *acc, const char *kind)
{
	Machine *m = k->m;
	Miss miss;
	int live = unmasked(m, s->row);
	if (m->c->tpl == FAM_SCAN && !s->row->len) {
		draw_sample_free(s); /* no output to compare (row_check) */
		return 0;
	}
	r->rows++;
	r->empty_rows += !s->row->len;
	r->masked_rows += s->row->len && !live;
	r->max_len = s->row->len > r->max_len ? s->row->len : r->max_len;
	if (row_check(k, w, s, r, &miss)) {
		Trial t = {.kind = T_SOUND};
		k->work = w;
		check_shrink(k, &t, &s, sound_fails);
		row_check(k, w, s, NULL, &miss);
		r->sound = VERDICT_FAILS;
		describe_miss(k, r, s, w->sv, &miss, kind);
		draw_sample_free(s);
		return 1;
	}
	if (acc) {
		AccRefs refs = {w->refv, w->refe, w->ref32, w->ref32e, w->posv, w->pose, w->pos32, w->pos32e, w->refr, w->posr};
		check_accuracy_row(k, acc, s, kind ? kind : draw_family_name[s->fam], &refs);
	}
	draw_sample_free(s);
	return 0;
}

int check_sound_row(Ck *k, Sample *s, CheckResult *r)
{
	Work w;
	work_init(&w, k->m, s->row->len);
	int bad = sound_row(k, &w, s, r, NULL, NULL);
	if (bad)
		r->sound = VERDICT_FAILS;
	work_free(&w);
	return bad;
}

void check_soundness(Ck *k, CheckResult *r)
{
	Machine *m = k->m;
	Carrier *c = m->c;
	r->sound = VERDICT_NA;
	if (!c->nref)
		return;
	add_err_slots(r, c);
	/* the reference is exact where the spec's float32 constants are not
	 * (a let's log2(e) rounded to float32): their rounding is allowed for */
	eval_const_rounding(m, 1);
	Work w;
	work_init(&w, m, long_lens[sizeof long_lens / sizeof *long_lens - 1]);
	Accuracy *acc = check_accuracy_new(k, lens[sizeof lens / sizeof *lens - 1]);
	/* the hard rows first: a NaN there (a naive variance on one value
	 * repeated) is the plainest witness */
	check_accuracy_hard_rows(k, acc);
	r->sound = VERDICT_HOLDS;
	/* rows drawn with an unmasked position; with positions, all masked;
	 * rows that could not be drawn where assume holds */
	int nonempty = 0, masked = 0, undrawn = 0, nconsts;
	draw_spec_constants(m, &nconsts);
	size_t nfams = sizeof row_fams / sizeof *row_fams - !nconsts;
	/* the constants' rows from a stream of their own: the other rows, and
	 * whatever is drawn after them, stay those of the seed */
	uint64_t crng = k->rng ^ 0xc0a5c0a5c0a5c0a5ull;
	for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
		for (size_t fi = 0; fi < nfams; fi++) {
			Sample *s = draw_sample_row(m, row_fams[fi], lens[li], row_fams[fi] == DRAW_CONSTS ? &crng : &k->rng);
			if (!s) {
				undrawn++;
				continue;
			}
			int live = unmasked(m, s->row);
			nonempty += live > 0, masked += s->row->len > 0 && !live;
			if (sound_row(k, &w, s, r, acc, NULL)) {
				work_free(&w);
				check_accuracy_free(acc);
				eval_const_rounding(m, 0);
				return;
			}
		}
	if (large_rows(k, &w, r, acc)) {
		work_free(&w);
		check_accuracy_free(acc);
		eval_const_rounding(m, 0);
		return;
	}
	for (size_t li = 0; li < sizeof long_lens / sizeof *long_lens; li++) {
		Sample *s = draw_sample_row(m, long_fams[li], long_lens[li], &k->rng);
		if (!s)
			continue;
		nonempty += unmasked(m, s->row) > 0;
		if (sound_row(k, &w, s, r, NULL, NULL)) {
			work_free(&w);
			check_accuracy_free(acc);
			eval_const_rounding(m, 0);
			return;
		}
	}
	/* a mask that keeps some position of every row drawn above leaves
	 * fully masked rows untried, which a run meets (a padding mask over a
	 * short row): short rows are drawn until some are */
	for (int tries = 0; c->mask && masked < MASKED_ROWS && tries < MASKED_TRIES; tries++) {
		Sample *s = draw_sample_row(m, row_fams[tries % (sizeof row_fams / sizeof *row_fams - 1)], 1 + tries % 4, &k->rng);
		if (!s)
			continue;
		if (unmasked(m, s->row)) {
			draw_sample_free(s);
			continue;
		}
		masked++;
		if (sound_row(k, &w, s, r, NULL, NULL)) {
			work_free(&w);
			check_accuracy_free(acc);
			eval_const_rounding(m, 0);
			return;
		}
	}
	work_free(&w);
	eval_const_rounding(m, 0);
	/* a reference that is never finite would pass without a comparison */
	for (int i = 0; i < r->nerr; i++) {
		const ErrOutcome *e = &r->err[i];
		if (e->compared || (!nonempty && masked && e->compared_empty))
			continue;
		Buf d = {0};
		if (undrawn)
			buf_printf(&d, "inputs where 'assume' holds could not be drawn for %d of the %d rows tried, and "
				       "%s was compared on none of the others", undrawn, undrawn + r->rows, e->name);
		else if (nonempty)
			buf_printf(&d, "the reference for %s is infinite or NaN on every row drawn that is not empty, "
				       "so it was never compared", e->name);
		else
			buf_printf(&d, "the mask leaves no position in any row drawn, and on such a row %s or its "
				       "reference is NaN, so it was never compared", e->name);
		r->sound = VERDICT_FAILS;
		r->sound_detail = buf_take(&d);
		if (!(r->sound_cex = strdup("")) || !(r->sound_json = strdup("null")))
			abort();
		check_accuracy_free(acc);
		return;
	}
	check_accuracy_report(k, acc, r);
	check_accuracy_free(acc);
}
