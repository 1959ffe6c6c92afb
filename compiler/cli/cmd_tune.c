/* cmd_tune.c: `assoc tune SPEC --rows R --len N`: every variant of the
 * carrier's tuning space (cuda_module_space; and split counts for the
 * split kernels) on the GPU,
 * validated against the reference, timed with driver events after warm-up
 * (median of several runs, L2 flushed between runs), the fastest stored in
 * the tuning cache, where `assoc run --device gpu` finds it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compiler/cli/cli.h"
#include "compiler/devices/gpu.h"

enum { WARMUP = 2, TIMED = 7 };

typedef struct {
	Gpu *g;
	RunData *d;
	GpuBufs b;
	RtPtr flush;
	size_t flush_bytes;
	const TuneConfig *cur;
	int tty;
} Tuner;

static int split_of(const TuneConfig *c) { return c->split; }

static int resources(void *ctx, const TuneConfig *c, TuneResources *r, char *why, size_t n)
{
	Tuner *t = ctx;
	char names[3][64];
	int nk = cuda_kernel_names(&t->g->m, c->id, names);
	*r = (TuneResources){0, 0, 0};
	if (!cuda_fits(&t->g->m, c->id, why, n))
		return -1;
	for (int k = 0; k < nk; k++) {
		void *fn;
		RtFuncAttrs a;
		if (rt_function(t->g->rt, t->g->mod, names[k], &fn, why, n) || rt_func_attrs(t->g->rt, fn, &a, why, n))
			return -1;
		r->regs = a.regs > r->regs ? a.regs : r->regs;
		int smem = a.smem + (k == 0 ? (int)cuda_smem(&t->g->m, c->id) : 0); /* static and dynamic */
		r->smem = smem > r->smem ? smem : r->smem;
		r->local = a.local > r->local ? a.local : r->local;
	}
	return 0;
}

static int validate(void *ctx, const TuneConfig *c, char *why, size_t n)
{
	Tuner *t = ctx;
	return gpu_validate(t->g, t->d, c->id, split_of(c), why, n);
}

static int enqueue(void *ctx, char *msg, size_t n)
{
	Tuner *t = ctx;
	return gpu_launch(t->g, &t->b, t->cur->id, split_of(t->cur), t->d->rows, t->d->len, msg, n);
}

/* Median of TIMED event-timed runs after WARMUP, L2 flushed before each. */
static double time_one(void *ctx, const TuneConfig *c, char *why, size_t n)
{
	Tuner *t = ctx;
	t->cur = c;
	double ms = gpu_median_ms(t->g, enqueue, t, t->flush, t->flush_bytes, WARMUP, TIMED, why, n);
	return ms < 0 ? INFINITY : ms;
}

static void progress(void *ctx, int done, int total, const TuneConfig *c, double ms, const char *why)
{
	Tuner *t = ctx;
	(void)c, (void)ms, (void)why;
	if (!t->tty)
		return;
	int w = 30, k = total ? done * w / total : w;
	fprintf(stderr, "\r  tuning [%.*s%*s] %d/%d", k, "==============================", w - k, "", done, total);
	if (done == total)
		fprintf(stderr, "\r%*s\r", w + 30, "");
}

/* The module's variants that can run this shape, in the order the model's
 * ties keep: a row a block or a warp first (the defaults, then the wider
 * blocks of the tuning space), then the split kernels with their split
 * counts. */
static int candidates(Gpu *g, const RunData *d, TuneConfig *out, int max)
{
	int n = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int v = 0; v < g->m.nvar && n < max; v++) {
			const CudaVariant *x = &g->m.var[v];
			int threads = x->warp ? 32 : x->nt;
			char why[128];
			if ((x->fam == FAM_SPLITK || x->fam == FAM_SCAN) != pass ||
			    !cuda_takes_len(&g->m, v, d->len, why, sizeof why))
				continue;
			TuneConfig c = {threads, x->warp ? x->nt / 32 : 1, x->vec ? 4 : 1, x->acc, 1, x->items, v};
			if (x->fam == FAM_ATTN) {
				/* key slices pay where a kv head's query rows are few, as in
				 * decoding; past the 64 rows of a block without them they
				 * only read the keys again for more blocks */
				long run = (long)d->rows * (d->kv_heads > 0 ? d->heads / d->kv_heads : 1);
				if (x->ks > 1 && run > 64)
					continue;
				/* query blocks x key splits: splitting the keys pays when few query blocks fill few SMs */
				out[n++] = c;
				for (int split = 2; split <= 64 && n < max && d->rows <= 256; split *= 2)
					if (d->len / split >= 128)
						c.split = split, out[n++] = c;
				continue;
			}
			if (x->fam != FAM_SPLITK && x->fam != FAM_SCAN) {
				out[n++] = c;
				continue;
			}
			for (int split = 2; split <= 64 && n < max; split *= 2)
				if (d->len / split >= 256 || split == 2)
					c.split = split, out[n++] = c;
		}
	return n;
}

static void report(const Tuner *t, const TuneResult *r, double bytes)
{
	for (int i = 0; i < r->n; i++) {
		const TuneCandidate *k = &r->cand[i];
		char cfg[128];
		cuda_config_str(&t->g->m.var[k->cfg.id], cfg, sizeof cfg);
		if (k->cfg.split > 1)
			snprintf(cfg + strlen(cfg), sizeof cfg - strlen(cfg), " split=%d", k->cfg.split);
		if (isfinite(k->ms))
			printf("  %-48s %9.4f ms %8.1f GB/s%s\n", cfg, k->ms, bytes / (k->ms * 1e6), i == r->best ? "  <- best" : "");
		else if (isnan(k->ms))
			printf("  %-48s  (%s)%s\n", cfg, k->why, i == r->best ? "  <- chosen" : "");
		else if (!strncmp(k->why, "not timed", 9))
			printf("  %-48s  %s\n", cfg, k->why);
		else
			printf("  %-48s  infinity: %s\n", cfg, k->why);
	}
}

static int store(Tuner *t, const TuneResult *r)
{
	TuneCache tc;
	char key[1024], val[256], err[512];
	const TuneConfig *c = &r->cand[r->best].cfg;
	cuda_config_str(&t->g->m.var[c->id], val, sizeof val);
	snprintf(val + strlen(val), sizeof val - strlen(val), " split=%d", c->split);
	gpu_tune_key(t->g, t->d, key, sizeof key);
	if (tc_open(&tc, NULL, err, sizeof err) || tc_put(&tc, key, val, err, sizeof err)) {
		fprintf(stderr, "assoc: the choice is not cached: %s\n", err);
		return -1;
	}
	printf("  cached for %s\n", key);
	return 0;
}

static int tune(Opts *o, Carrier *c, RunData *d)
{
	Gpu g;
	char msg[2048];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (gpu_open(&g, c, 1, msg, sizeof msg)) {
		fprintf(stderr, "assoc: tune needs a GPU: %s\n", msg);
		return EXIT_FAIL;
	}
	Tuner t = {.g = &g, .d = d, .tty = isatty(2)};
	const RtDevice *dev = rt_device(g.rt);
	t.flush_bytes = 2 * (size_t)(dev->l2_bytes > 0 ? dev->l2_bytes : 64 << 20);
	int rc = EXIT_FAIL;
	TuneConfig cand[TUNE_MAX_CANDIDATES];
	int n = candidates(&g, d, cand, TUNE_MAX_CANDIDATES);
	TuneProblem p = {.tpl = g.m.base == FAM_ATTN ? TUNE_ATTN : TUNE_ROWREDUCE, .rows = d->rows, .len = d->len,
			 .elem_bytes = 4, .dev = *dev};
	TuneHooks h = {&t, resources, validate, time_one, progress, rundata_bytes(d)};
	TuneResult r;
	if (gpu_upload(&g, d, &t.b, msg, sizeof msg) || rt_alloc(g.rt, t.flush_bytes, &t.flush, msg, sizeof msg)) {
		fprintf(stderr, "assoc: %s\n", msg);
		goto out;
	}
	printf("%s: carrier %s on %s (%s), %d rows x %d, %d candidates\n", c->file, c->name, dev->name, g.arch,
	       d->rows, d->len, n);
	int found = tune_select_list(&p, cand, n, &h, &r) == 0;
	report(&t, &r, h.bytes);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
	if (found && !store(&t, &r)) {
		printf("  tuned in %.2f s (module %s in %.0f ms)\n", s, g.ptx_cached ? "from the PTX cache" : "compiled",
		       g.compile_ms);
		rc = EXIT_OK;
	} else if (!found) {
		printf("  no candidate ran correctly\n");
	}
	(void)o;
out:
	if (t.flush)
		rt_free(g.rt, t.flush);
	gpu_free_bufs(&g, &t.b);
	gpu_close(&g);
	return rc;
}

int cmd_tune(Opts *o)
{
	if (cli_bench_shape(o))
		return EXIT_USAGE;
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	RunData *d = cli_drawn(o, c);
	int rc = d ? tune(o, c, d) : EXIT_USAGE;
	rundata_free(d);
	spec_carrier_free(c);
	return rc;
}
