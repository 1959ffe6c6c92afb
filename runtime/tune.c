/* tune.c: the performance model and the selection. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

enum { KEEP_TIMED = 8, INFLIGHT_TARGET = 32 << 10 };

/* The shape of a variant's blocks: threads a row, rows a block (a warp a
 * row: 32 threads, nt / 32 rows). */
static int row_threads(const Variant *v) { return v->warp ? 32 : v->nt; }
static int block_rows(const Variant *v) { return v->warp ? v->nt / 32 : 1; }
static int splits(const Variant *v) { return v->split > 0 ? v->split : 1; }

static double occupancy(const TuneProblem *p, const Variant *c, const TuneResources *r)
{
	const RtDevice *d = &p->dev;
	int tpb = row_threads(c) * block_rows(c), warps = (tpb + 31) / 32;
	if (tpb > 1024 || (d->smem_per_block_optin && r->smem > d->smem_per_block_optin))
		return 0;
	int blocks = d->max_threads_per_sm / (warps * 32);
	if (d->max_blocks_per_sm && blocks > d->max_blocks_per_sm)
		blocks = d->max_blocks_per_sm;
	/* registers are allocated per warp in units of 256 */
	int regs_per_warp = ((r->regs > 0 ? r->regs : 1) * 32 + 255) / 256 * 256;
	if (d->regs_per_sm && regs_per_warp * warps > 0) {
		int by_regs = d->regs_per_sm / (regs_per_warp * warps);
		blocks = by_regs < blocks ? by_regs : blocks;
	}
	if (r->smem > 0 && d->smem_per_sm) {
		int by_smem = d->smem_per_sm / r->smem;
		blocks = by_smem < blocks ? by_smem : blocks;
	}
	return d->max_threads_per_sm ? (double)(blocks * warps * 32) / d->max_threads_per_sm : 0;
}

/* Memory-bound kernels want enough bytes in flight per SM (Little's law),
 * every thread busy, and enough blocks to fill every SM in balanced waves. */
static double model(const TuneProblem *p, const Variant *c, const TuneResources *r)
{
	if (r->local > 0)
		return 0; /* spills disqualify */
	double occ = occupancy(p, c, r);
	if (occ <= 0)
		return 0;
	if (p->fam == FAM_ATTN) /* the candidates' order, all kept */
		return 1;
	const RtDevice *d = &p->dev;
	double resident = occ * d->max_threads_per_sm;
	double inflight = resident * c->vec * c->acc * p->elem_bytes;
	double mem = fmin(1.0, inflight / INFLIGHT_TARGET);
	double per_row = (double)row_threads(c) * c->vec * splits(c);
	double busy = p->len > 0 ? fmin(1.0, (double)p->len / per_row) : 1;
	double blocks = ceil((double)p->rows / block_rows(c)) * splits(c);
	double slots = d->sms * fmax(1.0, floor(resident / (row_threads(c) * block_rows(c))));
	double waves = blocks / slots, balance = waves >= 1 ? waves / ceil(waves) : waves;
	return mem * busy * balance + 1e-9 * occ;
}

typedef struct {
	int i;
	double score;
} Ranked;

static int by_score(const void *a, const void *b)
{
	const Ranked *x = a, *y = b;
	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return x->i - y->i; /* stable: the candidates' order breaks ties */
}

/* Keep the best `keep` candidates by model score, in score order. */
static int prune(const TuneProblem *p, Variant *c, const TuneResources *res, int n, int keep)
{
	Ranked *r = calloc(n ? n : 1, sizeof *r);
	Variant *copy = malloc((n ? n : 1) * sizeof *copy);
	if (!r || !copy)
		abort();
	int m = 0;
	for (int i = 0; i < n; i++) {
		double s = model(p, &c[i], &res[i]);
		if (s > 0)
			r[m++] = (Ranked){i, s};
	}
	qsort(r, m, sizeof *r, by_score);
	memcpy(copy, c, n * sizeof *copy);
	int k = m < keep ? m : keep;
	/* rows streamed by bulk copies (bk) are timed whatever their score:
	 * the model counts the bytes the threads' loads keep in flight, not
	 * those the copies into the ring hold */
	for (int i = k; i < m; i++)
		if (c[r[i].i].bk > 0) {
			Ranked t = r[i];
			memmove(&r[k + 1], &r[k], (size_t)(i - k) * sizeof *r);
			r[k++] = t;
		}
	for (int i = 0; i < k; i++)
		c[i] = copy[r[i].i];
	free(r);
	free(copy);
	return k;
}

static void decide(TuneResult *res, const TuneHooks *h, int i, int total, double ms, const char *why)
{
	TuneCandidate *c = &res->cand[i];
	c->ms = ms;
	snprintf(c->why, sizeof c->why, "%s", why ? why : "");
	if (h->progress)
		h->progress(h->ctx, i + 1, total, &c->var, ms, c->why);
}

/* Candidates that never reach timing (no kernel, or spills) are logged after the timed ones. */
static void log_excluded(TuneResult *res, const Variant *c, const char why[256])
{
	if (res->n == TUNE_MAX_CANDIDATES)
		return;
	TuneCandidate *t = &res->cand[res->n++];
	t->var = *c;
	t->ms = INFINITY;
	memcpy(t->why, why, sizeof t->why);
	t->why[sizeof t->why - 1] = 0;
}

int tune_select_list(const TuneProblem *p, Variant *space, int n, const TuneHooks *h, TuneResult *res)
{
	Variant dropped[TUNE_MAX_CANDIDATES];
	TuneResources rsc[TUNE_MAX_CANDIDATES] = {{0, 0, 0}};
	char why[256], reasons[TUNE_MAX_CANDIDATES][256];
	int ndrop = 0;
	if (n > TUNE_MAX_CANDIDATES)
		n = TUNE_MAX_CANDIDATES;
	memset(res, 0, sizeof *res);
	res->best = -1;
	/* resources first (compile), so the model sees real register counts */
	for (int i = 0; i < n; i++) {
		int failed = h->resources(h->ctx, &space[i], &rsc[i], why, sizeof why);
		if (failed || rsc[i].local > 0) {
			if (!failed)
				snprintf(why, sizeof why, "spills %d bytes per thread", rsc[i].local);
			dropped[ndrop] = space[i];
			memcpy(reasons[ndrop++], why, sizeof why);
			rsc[i] = (TuneResources){0, 0, 1};
		}
	}
	Variant all[TUNE_MAX_CANDIDATES];
	memcpy(all, space, n * sizeof *all);
	int k = prune(p, space, rsc, n, p->fam == FAM_ATTN ? TUNE_MAX_CANDIDATES : KEEP_TIMED);
	for (int i = 0; i < n; i++) {
		int kept = rsc[i].local != 0; /* dropped above, logged with its own reason */
		for (int j = 0; j < k && !kept; j++)
			kept = !memcmp(&all[i], &space[j], sizeof *all);
		if (!kept && ndrop < TUNE_MAX_CANDIDATES) {
			dropped[ndrop] = all[i];
			if (p->fam == FAM_ATTN) /* every one that fits is timed */
				snprintf(reasons[ndrop++], sizeof reasons[0], "not timed: no block of it fits on an SM");
			else
				snprintf(reasons[ndrop++], sizeof reasons[0], "not timed: the model ranks %d others above it", k);
		}
	}
	const char *env = getenv("ASSOC_TUNE");
	res->timed = !(env && !strcmp(env, "off"));
	res->n = k;
	for (int i = 0; i < k; i++) {
		res->cand[i].var = space[i];
		if (h->validate(h->ctx, &space[i], why, sizeof why)) {
			decide(res, h, i, k, INFINITY, why);
			continue;
		}
		if (!res->timed) {
			decide(res, h, i, k, NAN, "model's pick (ASSOC_TUNE=off)");
			res->best = i;
			res->n = i + 1;
			break;
		}
		why[0] = 0;
		double ms = h->time(h->ctx, &space[i], why, sizeof why);
		decide(res, h, i, k, ms, isfinite(ms) ? NULL : why);
		if (isfinite(ms) && (res->best < 0 || ms < res->cand[res->best].ms))
			res->best = i;
	}
	for (int i = 0; i < ndrop; i++)
		log_excluded(res, &dropped[i], reasons[i]);
	return res->best >= 0 ? 0 : -1;
}
