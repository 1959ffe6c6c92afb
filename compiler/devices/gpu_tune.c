/* gpu_tune.c: the tuning of a carrier's module on the GPU for a shape
 * (see gpu.h): the candidates, the tuner's hooks on the device, and the
 * choice stored in the tuning cache. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/devices/gpu.h"

enum { WARMUP = 2, TIMED = 7 };

typedef struct {
	Gpu *g;
	const RunData *d;
	GpuBufs b;
	RtPtr flush;
	size_t flush_bytes;
	int cur; /* the variant being timed: its index in the module */
	int split;
	void (*progress)(void *ctx, int done, int total);
	void *ctx;
	/* every candidate validated on one draw, its reference evaluated once */
	RunData *small;
	RunChecker *check;
} Tuner;

/* The module's variant that candidate c launches (c less its split). */
static int index_of(const CudaModule *m, const Variant *c)
{
	Variant k = *c;
	k.split = 0;
	for (int v = 0; v < m->nvar; v++)
		if (!memcmp(&m->var[v], &k, sizeof k))
			return v;
	return -1;
}

static int resources(void *ctx, const Variant *c, TuneResources *r, char *why, size_t n)
{
	Tuner *t = ctx;
	int v = index_of(&t->g->m, c);
	*r = (TuneResources){0, 0, 0};
	if (v < 0) {
		snprintf(why, n, "not a variant of the module");
		return -1;
	}
	if (!cuda_fits(&t->g->m, v, why, n) || gpu_resources(t->g, v, r, why, n))
		return -1;
	/* cuda_fits counts the dynamic bytes alone: the compiled kernel's
	 * static ones come out of the same opt-in limit */
	int max = t->g->m.smem_max;
	if (max && r->smem > max) {
		snprintf(why, n, "needs %d bytes of shared memory per block, static and dynamic; the device allows %d",
			 r->smem, max);
		return -1;
	}
	return 0;
}

int gpu_resources(Gpu *g, int v, TuneResources *r, char *msg, size_t n)
{
	char names[3][64];
	int nk = cuda_kernel_names(&g->m, v, names);
	*r = (TuneResources){0, 0, 0};
	for (int k = 0; k < nk; k++) {
		void *fn;
		RtFuncAttrs a;
		if (gpu_function(g, v, names[k], &fn, msg, n) || rt_func_attrs(g->rt, fn, &a, msg, n))
			return -1;
		r->regs = a.regs > r->regs ? a.regs : r->regs;
		int smem = a.smem + (k == 0 ? (int)cuda_smem(&g->m, v) : 0); /* static and dynamic */
		r->smem = smem > r->smem ? smem : r->smem;
		r->local = a.local > r->local ? a.local : r->local;
	}
	return 0;
}

static int validate(void *ctx, const Variant *c, char *why, size_t n)
{
	Tuner *t = ctx;
	if (!t->check) {
		t->check = runchecker_new(t->d->c);
		runchecker_keep(t->check);
	}
	return gpu_validate_kept(t->g, t->d, index_of(&t->g->m, c), c->split, &t->small, t->check, why, n);
}

static int enqueue(void *ctx, char *msg, size_t n)
{
	Tuner *t = ctx;
	return gpu_launch(t->g, &t->b, t->cur, t->split, t->d->rows, t->d->len, msg, n);
}

/* Median of TIMED event-timed runs after WARMUP, L2 flushed before each. */
static double time_one(void *ctx, const Variant *c, char *why, size_t n)
{
	Tuner *t = ctx;
	t->cur = index_of(&t->g->m, c);
	t->split = c->split;
	double ms = gpu_median_ms(t->g, enqueue, t, t->flush, t->flush_bytes, WARMUP, TIMED, why, n);
	return ms < 0 ? INFINITY : ms;
}

static void progress(void *ctx, int done, int total, const Variant *c, double ms, const char *why)
{
	Tuner *t = ctx;
	(void)c, (void)ms, (void)why;
	if (t->progress)
		t->progress(t->ctx, done, total);
}

/* The module's variants that can run this shape, in the order the model's
 * ties keep: a row a block or a warp first (the defaults, then the wider
 * blocks of the tuning space), then the split kernels with their split
 * counts. */
static int candidates(const Gpu *g, const RunData *d, Variant *out, int max)
{
	int n = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int v = 0; v < g->m.nvar && n < max; v++) {
			Variant c = g->m.var[v];
			char why[128];
			if ((c.fam == FAM_SPLITK || c.fam == FAM_SCAN) != pass ||
			    !cuda_takes_len(&g->m, v, d->len, why, sizeof why))
				continue;
			c.split = 1;
			if (c.fam == FAM_ATTN) {
				/* key slices pay where a kv head's query rows are few, as in
				 * decoding; past the 64 rows of a block without them they
				 * only read the keys again for more blocks */
				long run = (long)d->rows * (d->kv_heads > 0 ? d->heads / d->kv_heads : 1);
				if (c.ks > 1 && run > 64)
					continue;
				/* the Hopper template is prefill's: 64 rows a warpgroup,
				 * which decoding's few rows would leave mostly empty */
				if (c.wg && run <= 64)
					continue;
				/* query blocks x key splits: splitting the keys pays when few query blocks fill few SMs */
				out[n++] = c;
				for (int split = 2; split <= 64 && n < max && d->rows <= 256; split *= 2)
					if (d->len / split >= 128)
						c.split = split, out[n++] = c;
				continue;
			}
			/* a row across a cluster: for rows long enough that a
			 * block a row leaves too few bytes in flight an SM, on a
			 * driver and device that launch clusters */
			if (c.cl && (d->len < 16384 || !rt_has_clusters(g->rt)))
				continue;
			/* bulk copies into a ring of stages: for rows of several
			 * stages (shorter ones take the ordinary loads anyway) */
			if (c.bk && d->len < 4096)
				continue;
			if (c.fam != FAM_SPLITK && c.fam != FAM_SCAN) {
				out[n++] = c;
				continue;
			}
			for (int split = 2; split <= 64 && n < max; split *= 2)
				if (d->len / split >= 256 || split == 2)
					c.split = split, out[n++] = c;
		}
	return n;
}

/* The choice, as its text, under the problem's key. */
static void store(Gpu *g, const RunData *d, GpuTuning *t)
{
	TuneCache tc;
	char val[256];
	variant_str(&t->res.cand[t->res.best].var, val, sizeof val);
	gpu_tune_key(g, d, t->key, sizeof t->key);
	t->stored = !tc_open(&tc, NULL, t->store_err, sizeof t->store_err) &&
		    !tc_put(&tc, t->key, val, t->store_err, sizeof t->store_err);
}

int gpu_tune(Gpu *g, RunData *d, void (*prog)(void *ctx, int done, int total), void *ctx, GpuTuning *out,
	     char *msg, size_t n)
{
	Variant cand[TUNE_MAX_CANDIDATES];
	memset(out, 0, sizeof *out);
	out->res.best = -1;
	Tuner t = {.g = g, .d = d, .progress = prog, .ctx = ctx};
	const RtDevice *dev = rt_device(g->rt);
	t.flush_bytes = 2 * (size_t)(dev->l2_bytes > 0 ? dev->l2_bytes : 64 << 20);
	out->ncand = candidates(g, d, cand, TUNE_MAX_CANDIDATES);
	out->bytes = rundata_bytes(d);
	TuneProblem p = {.fam = g->m.base, .rows = d->rows, .len = d->len, .elem_bytes = rundata_position_bytes(d), .dev = *dev};
	TuneHooks h = {&t, resources, validate, time_one, progress, out->bytes};
	int rc = -1;
	if (gpu_upload(g, d, &t.b, msg, n) || rt_alloc(g->rt, t.flush_bytes, &t.flush, msg, n))
		goto out;
	rc = 1;
	if (tune_select_list(&p, cand, out->ncand, &h, &out->res) == 0) {
		store(g, d, out);
		rc = 0;
	}
out:
	if (t.flush)
		rt_free(g->rt, t.flush);
	gpu_free_bufs(g, &t.b);
	rundata_free(t.small);
	runchecker_free(t.check);
	return rc;
}
