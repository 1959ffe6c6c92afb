/* tune.c: candidate spaces, the performance model and the selection. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

enum { KEEP_TIMED = 8, INFLIGHT_TARGET = 32 << 10 };

void tune_config_str(const TuneConfig *c, char *buf, size_t n)
{
	snprintf(buf, n, "threads=%d rows=%d vec=%d acc=%d split=%d chunk=%d", c->threads, c->rows_per_block, c->vec,
		 c->acc, c->split, c->chunk);
}

int tune_config_parse(const char *s, TuneConfig *c)
{
	TuneConfig t = {0};
	if (sscanf(s, "threads=%d rows=%d vec=%d acc=%d split=%d chunk=%d", &t.threads, &t.rows_per_block, &t.vec,
		   &t.acc, &t.split, &t.chunk) != 6)
		return -1;
	if (t.threads < 1 || t.threads > 1024 || t.rows_per_block < 1 || t.vec < 1 || t.acc < 1 || t.split < 1 ||
	    t.chunk < 0 || t.threads * t.rows_per_block > 1024)
		return -1;
	*c = t;
	return 0;
}

static int add(TuneConfig *out, int n, int max, TuneConfig c)
{
	if (n < max)
		out[n] = c;
	return n + 1;
}

int tune_space(const TuneProblem *p, TuneConfig *out, int max)
{
	static const int threads[] = {32, 64, 128, 256, 512, 1024}, vecs[] = {1, 2, 4, 8}, accs[] = {1, 2, 4};
	int n = 0;
	switch (p->tpl) {
	case TUNE_ROWREDUCE:
	case TUNE_ROWMAP:
		for (size_t t = 0; t < 6; t++)
			for (int rows = 1; rows <= (threads[t] == 32 ? 8 : 1); rows *= 2)
				for (size_t v = 0; v < 4; v++)
					for (size_t a = 0; a < 3; a++)
						if (vecs[v] * p->elem_bytes <= 16) /* one 16-byte load at most */
							n = add(out, n, max, (TuneConfig){threads[t], rows, vecs[v], accs[a], 1, 0, 0});
		break;
	case TUNE_SPLITK:
		for (size_t t = 2; t < 5; t++)
			for (int split = 2; split <= 64; split *= 2)
				for (size_t a = 0; a < 3; a++)
					n = add(out, n, max, (TuneConfig){threads[t], 1, 16 / p->elem_bytes > 0 ? 16 / p->elem_bytes : 1,
									  accs[a], split, 0, 0});
		break;
	case TUNE_SCAN:
		for (size_t t = 2; t < 6; t++)
			for (int chunk = 1024; chunk <= 8192; chunk *= 2)
				if (chunk >= threads[t])
					n = add(out, n, max, (TuneConfig){threads[t], 1, 1, 1, 1, chunk, 0});
		break;
	case TUNE_ATTN: /* the module's variants are the space (cuda_module_space) */
		break;
	}
	return n < max ? n : max;
}

double tune_occupancy(const TuneProblem *p, const TuneConfig *c, const TuneResources *r)
{
	const RtDevice *d = &p->dev;
	int tpb = c->threads * c->rows_per_block, warps = (tpb + 31) / 32;
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
double tune_model(const TuneProblem *p, const TuneConfig *c, const TuneResources *r)
{
	if (r->local > 0)
		return 0; /* spills disqualify */
	double occ = tune_occupancy(p, c, r);
	if (occ <= 0)
		return 0;
	if (p->tpl == TUNE_ATTN) /* the space's order, all kept */
		return 1;
	const RtDevice *d = &p->dev;
	double resident = occ * d->max_threads_per_sm;
	double inflight = resident * c->vec * c->acc * p->elem_bytes;
	double mem = fmin(1.0, inflight / INFLIGHT_TARGET);
	double per_row = (double)c->threads * c->vec * c->split;
	double busy = p->len > 0 ? fmin(1.0, (double)p->len / per_row) : 1;
	double blocks = ceil((double)p->rows / c->rows_per_block) * c->split;
	double slots = d->sms * fmax(1.0, floor(resident / (c->threads * c->rows_per_block)));
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
	return x->i - y->i; /* stable: the space's order breaks ties */
}

int tune_prune(const TuneProblem *p, TuneConfig *c, const TuneResources *res, int n, int keep)
{
	Ranked *r = calloc(n ? n : 1, sizeof *r);
	TuneConfig *copy = malloc((n ? n : 1) * sizeof *copy);
	if (!r || !copy)
		abort();
	int m = 0;
	for (int i = 0; i < n; i++) {
		double s = tune_model(p, &c[i], &res[i]);
		if (s > 0)
			r[m++] = (Ranked){i, s};
	}
	qsort(r, m, sizeof *r, by_score);
	memcpy(copy, c, n * sizeof *copy);
	int k = m < keep ? m : keep;
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
		h->progress(h->ctx, i + 1, total, &c->cfg, ms, c->why);
}

/* Candidates that never reach timing (no kernel, or spills) are logged after the timed ones. */
static void log_excluded(TuneResult *res, const TuneConfig *c, const char why[256])
{
	if (res->n == TUNE_MAX_CANDIDATES)
		return;
	TuneCandidate *t = &res->cand[res->n++];
	t->cfg = *c;
	t->ms = INFINITY;
	memcpy(t->why, why, sizeof t->why);
	t->why[sizeof t->why - 1] = 0;
}

int tune_select(const TuneProblem *p, const TuneHooks *h, TuneResult *res)
{
	TuneConfig space[TUNE_MAX_CANDIDATES];
	int n = tune_space(p, space, TUNE_MAX_CANDIDATES);
	return tune_select_list(p, space, n, h, res);
}

int tune_select_list(const TuneProblem *p, TuneConfig *space, int n, const TuneHooks *h, TuneResult *res)
{
	TuneConfig dropped[TUNE_MAX_CANDIDATES];
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
	TuneConfig all[TUNE_MAX_CANDIDATES];
	memcpy(all, space, n * sizeof *all);
	int k = tune_prune(p, space, rsc, n, p->tpl == TUNE_ATTN ? TUNE_MAX_CANDIDATES : KEEP_TIMED);
	for (int i = 0; i < n; i++) {
		int kept = rsc[i].local != 0; /* dropped above, logged with its own reason */
		for (int j = 0; j < k && !kept; j++)
			kept = !memcmp(&all[i], &space[j], sizeof *all);
		if (!kept && ndrop < TUNE_MAX_CANDIDATES) {
			dropped[ndrop] = all[i];
			if (p->tpl == TUNE_ATTN) /* every one that fits is timed */
				snprintf(reasons[ndrop++], sizeof reasons[0], "not timed: no block of it fits on an SM");
			else
				snprintf(reasons[ndrop++], sizeof reasons[0], "not timed: the model ranks %d others above it", k);
		}
	}
	const char *env = getenv("ASSOC_TUNE");
	res->timed = !(env && !strcmp(env, "off"));
	res->n = k;
	for (int i = 0; i < k; i++) {
		res->cand[i].cfg = space[i];
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
