/* runcheck.c: a device's outputs against the float64 reference.
 *
 * Tolerance (FlashAttention's rule, with a floor): a value may be off from
 * the float64 reference by twice the error of a naive float32 evaluation
 * of the same value, plus 32 float32 ulps of the output's scale in its row
 * (its largest magnitude there).  Integer outputs must match exactly. */
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "run.h"

enum { SCAN_PREFIXES_ALL = 1024 };

typedef struct {
	Machine m;
	RunData *d;
	Row *row;
	double *want, *naive; /* per output: values for one row (positions x width) */
	double *st, *se, *s32, *tmp;
	int need_fold; /* some output has no reference: compare it with the float64 fold */
} Ctx;

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p)
		abort();
	return p;
}

static void compare_value(OutCheck *oc, double got, double want, double naive, double scale, int exact,
			  size_t at)
{
	oc->compared++;
	if (isnan(want))
		return; /* the reference is undefined here (an empty row's 0/0): any value will do */
	if (isnan(got) || isinf(got) || isinf(want)) {
		if (!(got == want || (isnan(got) && isnan(want))))
			oc->nan_mismatch++, oc->at = at;
		return;
	}
	double err = fabs(got - want);
	double tol = exact ? 0 : 2 * fabs(naive - want) + 32 * 0x1p-23 * scale;
	double ratio = err == 0 ? 0 : tol > 0 ? err / tol : INFINITY;
	if (err > oc->max_abs)
		oc->max_abs = err;
	if (want != 0 && err / fabs(want) > oc->max_rel)
		oc->max_rel = err / fabs(want);
	if (ratio > oc->worst_ratio)
		oc->worst_ratio = ratio, oc->at = at;
}

/* Compare positions [0, npos) of one output of one row: got at flat index base. */
static void compare_row(OutCheck *oc, const Buffer *got, size_t base, const double *want, const double *naive,
			int npos, int w, int exact)
{
	double scale = 0;
	for (int k = 0; k < npos * w; k++)
		if (isfinite(want[k]))
			scale = fmax(scale, fabs(want[k]));
	for (int k = 0; k < npos * w; k++)
		compare_value(oc, buffer_get(got, base * w + k), want[k], naive[k], scale, exact, base * w + k);
}

static int ref_of(Carrier *c, const char *name, int per_row)
{
	for (int q = 0; q < c->nref; q++)
		if (c->ref[q].per_row == per_row && !strcmp(c->ref[q].name, name))
			return q;
	return -1;
}

/* Values of the reference (or the left fold) for one row, in both modes:
 * finalize outputs into want/naive at [o][pos][t] with pos 0 (or each
 * position for scans), map outputs at each position. */
static void row_values(Ctx *x, double *refv[2], double *posv[2], double *fin[2], double *map[2])
{
	Machine *m = &x->m;
	Carrier *c = m->c;
	RunData *d = x->d;
	if (c->nref && !d->scan) {
		for (int md = 0; md < 2; md++)
			m_reference(m, (Mode)md, x->row, refv[md], x->tmp, posv[md], x->tmp + m->refw);
		if (!x->need_fold)
			return;
	}
	/* left fold: finalize after the whole row, or after every position for scans */
	for (int md = 0; md < 2; md++) {
		double *s = md ? x->s32 : x->st;
		m_identity(m, (Mode)md, s, x->se);
		for (int j = 0; j < d->len; j++) {
			if (!m_masked(m, x->row, j)) {
				m_lift(m, (Mode)md, x->row, j, x->tmp, x->tmp + m->sw);
				memcpy(x->tmp + 2 * m->sw, s, m->sw * sizeof *s);
				m_merge(m, (Mode)md, x->tmp + 2 * m->sw, x->se, x->tmp, x->se, s, x->tmp + 3 * m->sw);
			}
			if (d->scan)
				m_finalize(m, (Mode)md, x->row, s, x->se, fin[md] + (size_t)j * m->finw, NULL);
		}
		if (!d->scan) {
			m_finalize(m, (Mode)md, x->row, s, x->se, fin[md], NULL);
			for (int j = 0; j < d->len && c->nmap; j++)
				m_map(m, (Mode)md, x->row, j, s, x->se, map[md] + (size_t)j * m->mapw, NULL);
		}
	}
}

static void check_outputs(Ctx *x, RunCheck *rc, int r, double *refv[2], double *posv[2], double *fin[2],
			  double *map[2])
{
	Machine *m = &x->m;
	Carrier *c = m->c;
	RunData *d = x->d;
	int byref = c->nref && !d->scan, npos = d->scan ? d->len : 1;
	for (int o = 0; o < c->nfinal; o++) {
		int w = d->fin[o].width, q = byref ? ref_of(c, c->finalize[o].name, 1) : -1;
		for (int md = 0; md < 2; md++)
			for (int p = 0; p < npos; p++)
				for (int t = 0; t < w; t++)
					(md ? x->naive : x->want)[p * w + t] =
						q >= 0 ? refv[md][m->refoff[q] + t] : fin[md][(size_t)p * m->finw + m->finoff[o] + t];
		compare_row(&rc->out[o], &d->fin[o], (size_t)r * npos, x->want, x->naive, npos, w,
			    !ty_is_float(c->finalize[o].e->ty));
	}
	for (int o = 0; o < c->nmap && !d->scan; o++) {
		int w = d->map[o].width, q = byref ? ref_of(c, c->map[o].name, 0) : -1;
		for (int md = 0; md < 2; md++)
			for (int j = 0; j < d->len; j++)
				for (int t = 0; t < w; t++)
					(md ? x->naive : x->want)[(size_t)j * w + t] =
						q >= 0 ? posv[md][(size_t)j * m->refw + m->refoff[q] + t]
						      : map[md][(size_t)j * m->mapw + m->mapoff[o] + t];
		compare_row(&rc->out[c->nfinal + o], &d->map[o], (size_t)r * d->len, x->want, x->naive, d->len, w,
			    !ty_is_float(c->map[o].e->ty));
	}
}

void run_check(RunData *d, RunCheck *rc)
{
	Carrier *c = d->c;
	Ctx x = {.d = d};
	machine_init(&x.m, c);
	Machine *m = &x.m;
	memcpy(m->params, d->params, c->nparams * sizeof *d->params);
	size_t L = d->len ? d->len : 1, W = m->refw + m->finw + m->mapw + 4 * m->sw + 1;
	x.row = row_new(m, d->len);
	x.want = xcalloc(L * W, sizeof(double));
	x.naive = xcalloc(L * W, sizeof(double));
	x.st = xcalloc(m->sw, sizeof(double)), x.se = xcalloc(m->sw, sizeof(double));
	x.s32 = xcalloc(m->sw, sizeof(double)), x.tmp = xcalloc(4 * m->sw + L * W, sizeof(double));
	double *refv[2], *posv[2], *fin[2], *map[2];
	for (int md = 0; md < 2; md++) {
		refv[md] = xcalloc(m->refw, sizeof(double));
		posv[md] = xcalloc(L * m->refw, sizeof(double));
		fin[md] = xcalloc(L * m->finw, sizeof(double));
		map[md] = xcalloc(L * m->mapw, sizeof(double));
	}
	memset(rc, 0, sizeof *rc);
	rc->nout = c->nfinal + (d->scan ? 0 : c->nmap);
	rc->out = xcalloc(rc->nout, sizeof *rc->out);
	for (int o = 0; o < rc->nout; o++)
		rc->out[o].name = strdup(o < c->nfinal ? c->finalize[o].name : c->map[o - c->nfinal].name);
	x.need_fold = !c->nref || d->scan;
	for (int o = 0; o < rc->nout; o++) {
		int fold = !c->nref || d->scan || ref_of(c, rc->out[o].name, o < c->nfinal) < 0;
		rc->out[o].basis = fold ? "the carrier folded left to right in float64" : "the float64 reference";
		x.need_fold |= fold;
	}
	for (int r = 0; r < d->rows; r++) {
		rundata_load_row(d, m, r, x.row);
		row_values(&x, refv, posv, fin, map);
		check_outputs(&x, rc, r, refv, posv, fin, map);
	}
	rc->ok = 1;
	for (int o = 0; o < rc->nout; o++)
		rc->ok &= rc->out[o].worst_ratio <= 1 && !rc->out[o].nan_mismatch;
	for (int md = 0; md < 2; md++) {
		free(refv[md]);
		free(posv[md]);
		free(fin[md]);
		free(map[md]);
	}
	free(x.want), free(x.naive), free(x.st), free(x.se), free(x.s32), free(x.tmp);
	row_free(x.row);
	machine_free(m);
}

void runcheck_free(RunCheck *rc)
{
	for (int o = 0; o < rc->nout; o++)
		free(rc->out[o].name);
	free(rc->out);
	memset(rc, 0, sizeof *rc);
}

