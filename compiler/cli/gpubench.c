/* gpubench.c: `assoc bench SPEC --device gpu`: the chosen kernel's
 * throughput, beside its ceiling measured in the same run (a copy moving
 * the same number of bytes: the faster of the driver's device-to-device
 * copy and a copy kernel of 16-byte loads and stores, cuda_copy.c), and the
 * memory's nominal bandwidth from the driver.  Each time is the median of
 * several event-timed runs after warm-up, with L2 flushed before each run.
 * Bytes are the arrays' sizes: every input read once, every output written
 * once.  The run is checked against the reference before it is timed, on
 * a small problem of its spec, and the timed launch's own outputs after, on
 * a sample of rows (gpu_check_sample): the shape's later query tiles, keys
 * and split take code the small problem does not.
 * With --page-size, a paged batch in one launch (its keys the bytes the
 * sequences read), beside a copy of as many bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/buf.h"
#include "compiler/cli/cli.h"
#include "compiler/check/draw.h"
#include "compiler/devices/gpu.h"
#include "compiler/devices/paged.h"

enum { WARMUP = 3, TIMED = 11 };

typedef struct {
	Gpu *g;
	GpuBufs *b;
	RunData *d;
	int v, split;
	RtPtr src, dst;
	size_t copy_bytes;
} Bench;

static int run_kernel(void *ctx, char *msg, size_t n)
{
	Bench *x = ctx;
	return gpu_launch(x->g, x->b, x->v, x->split, x->d->rows, x->d->len, msg, n);
}

static int check_once(Bench *x, char *msg, size_t n)
{
	return gpu_validate(x->g, x->d, x->v, x->split, msg, n);
}

static double attention_flops(Bench *x)
{
	const CudaAttn *at = &x->g->m.attn;
	return x->g->m.base == FAM_ATTN ? rundata_attention_flops(x->d, at->d, at->dv) : 0;
}

static void print(const Opts *o, Bench *x, double ms, const GpuCopy *cp, double bytes, const char *why)
{
	double copy_ms = gpu_copy_ms(cp);
	Carrier *c = x->d->c;
	char cfg[160];
	variant_str(&x->g->m.var[x->v], cfg, sizeof cfg);
	double gbps = bytes / (ms * 1e6), copy = bytes / (copy_ms * 1e6), tflops = attention_flops(x) / (ms * 1e9);
	if (o->json) {
		Buf b = {0};
		buf_puts(&b, "{\"spec\": ");
		buf_json_str(&b, c->file);
		buf_printf(&b, ", \"carrier\": \"%s\", \"device\": \"gpu\", \"gpu\": ", c->name);
		buf_json_str(&b, rt_device(x->g->rt)->name);
		buf_printf(&b, ", \"rows\": %d, \"len\": %d, \"config\": \"%s split=%d\", \"choice\": ", x->d->rows,
			   x->d->len, cfg, x->split);
		buf_json_str(&b, why);
		buf_printf(&b, ", \"ms\": %.5f, "
			       "\"gbps\": %.2f, \"copy_gbps\": %.2f, \"ratio_to_copy\": %.4f, \"module_ms\": %.2f, "
			       "\"module_cached\": %s, \"tflops\": %.2f, \"copy_driver_ms\": %.5f, \"copy_kernel_ms\": %.5f, "
			       "\"nominal_gbps\": %.1f}",
			   ms, gbps, copy, gbps / copy, x->g->compile_ms,
			   x->g->ptx_cached ? "true" : "false", tflops, cp->driver_ms, cp->kernel_ms, cp->nominal_gbps);
		char *s = buf_take(&b);
		puts(s);
		free(s);
		return;
	}
	printf("%s: carrier %s on %s, %d rows x %d\n", c->file, c->name, rt_device(x->g->rt)->name, x->d->rows,
	       x->d->len);
	printf("  kernel  %s split=%d (%s): %.4f ms, %.1f GB/s\n", cfg, x->split, why, ms, gbps);
	if (tflops > 0) {
		/* compute-bound: a copy's bandwidth is no yardstick (its ratio reads 0.00) */
		printf("  attention %.1f TFLOP/s (pairs the mask keeps); module %s in %.1f ms\n", tflops,
		       x->g->ptx_cached ? "from the PTX cache" : "compiled", x->g->compile_ms);
		return;
	}
	gpu_copy_lines(stdout, rt_device(x->g->rt), bytes, cp);
	printf("  ratio   %.3f of copy bandwidth; module %s in %.1f ms\n", gbps / copy,
	       x->g->ptx_cached ? "from the PTX cache" : "compiled", x->g->compile_ms);
}

static int gpu_bench(Opts *o, Carrier *c, RunData *d)
{
	Gpu g;
	GpuBufs b = {0};
	char msg[2048], why[512];
	if (gpu_open(&g, c, 0, msg, sizeof msg)) {
		fprintf(stderr, "assoc: bench --device gpu: %s\n", msg);
		return EXIT_UNABLE;
	}
	Bench x = {.g = &g, .b = &b, .d = d};
	double bytes = rundata_bytes(d);
	/* a copy of half the bytes reads and writes as many bytes as the kernel */
	x.copy_bytes = (size_t)(bytes / 2) & ~(size_t)15;
	size_t flush_bytes = 2 * (size_t)(rt_device(g.rt)->l2_bytes > 0 ? rt_device(g.rt)->l2_bytes : 64 << 20);
	RtPtr flush = 0;
	int rc = EXIT_UNABLE;
	double ms = -1;
	GpuCopy cp;
	if (gpu_choose(&g, d, &o->run, &x.v, &x.split, why, sizeof why) || x.v < 0) {
		fprintf(stderr, "assoc: bench --device gpu: %s\n", why);
		goto out;
	}
	if (d->heads > 1 && g.m.var[x.v].fam != FAM_ATTN) { /* the kernel would run the first head only */
		fprintf(stderr, "assoc: bench --device gpu: --heads needs the attention template; this runs %s\n",
			variant_family_name(g.m.var[x.v].fam));
		goto out;
	}
	int wrong = 0;
	if (gpu_upload(&g, d, &b, msg, sizeof msg) || rt_alloc(g.rt, flush_bytes, &flush, msg, sizeof msg) ||
	    rt_alloc(g.rt, x.copy_bytes, &x.src, msg, sizeof msg) || rt_alloc(g.rt, x.copy_bytes, &x.dst, msg, sizeof msg) ||
	    (wrong = check_once(&x, msg, sizeof msg)) || (ms = gpu_median_ms(&g, run_kernel, &x, flush, flush_bytes, WARMUP, TIMED, msg, sizeof msg)) < 0 ||
	    gpu_download(&g, d, &b, msg, sizeof msg) || (wrong = gpu_check_sample(&g, d, x.v, msg, sizeof msg)) ||
	    gpu_copy_time(&g, x.src, x.dst, x.copy_bytes, flush, flush_bytes, WARMUP, TIMED, &cp, msg, sizeof msg)) {
		fprintf(stderr, "assoc: bench --device gpu: %s\n", msg);
		rc = wrong > 0 ? EXIT_FAIL : EXIT_UNABLE; /* the kernel's result failed the reference, or it did not run */
		goto out;
	}
	print(o, &x, ms, &cp, bytes, why);
	if (o->run.verbose)
		gpu_print_said(&g, stderr);
	rc = EXIT_OK;
out:
	if (flush)
		rt_free(g.rt, flush);
	if (x.src)
		rt_free(g.rt, x.src);
	if (x.dst)
		rt_free(g.rt, x.dst);
	gpu_free_bufs(&g, &b);
	gpu_close(&g);
	return rc;
}

int cmd_bench_gpu(Opts *o)
{
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	Npy arr[MAX_FILES] = {0}; /* real data where --input gives it */
	RunData *d = NULL;
	int rc = cli_inputs_read(o, c, arr);
	if (!rc)
		rc = cli_bench_shape(o);
	if (!rc && !(d = cli_drawn(o, c)))
		rc = EXIT_USAGE;
	if (!rc)
		rc = cli_inputs_load(o, d, arr);
	if (!rc) {
		cli_split_fit(o, d->len);
		rc = gpu_bench(o, c, d);
	}
	cli_inputs_free(arr);
	rundata_free(d);
	spec_carrier_free(c);
	return rc;
}

/* ---- bench --page-size --device gpu ---- */

typedef struct {
	Gpu *g;
	GpuPaged pd;
	GpuBufs b;
	int v, split;
} PagedBench;

/* One launch of the whole batch (the workspace zeroed once before). */
static int run_batch(void *ctx, char *msg, size_t n)
{
	PagedBench *x = ctx;
	RtModule *none = NULL;
	unsigned gen = 0;
	return gpu_paged_enqueue(x->g, &x->pd, x->v, x->split, 0, &x->b, rt_primary_ctx(x->g->rt), &none, &gen, msg, n);
}

/* Device arrays of the batch: the pool, each sequence's queries as the
 * kernels read them, the layout, and the outputs; -1 with msg. */
static int upload_batch(Gpu *g, const Paged *p, RunBatch *rb, RtPtr *own, int *nown, GpuPaged *pd, char *msg, size_t n)
{
	Carrier *c = p->c;
	RtPtr x;
#define TAKE(bytes) (rt_alloc(g->rt, (bytes) + 16, &x, msg, n) ? -1 : (own[(*nown)++] = x, 0))
	for (int k = 0; k < c->ncol; k++) {
		size_t sz = p->col[k].n * p->col[k].width * run_kind_size(p->col[k].kind);
		if (TAKE(sz) || rt_upload(g->rt, x, p->col[k].p, sz, msg, n))
			return -1;
		pd->col[k] = x;
	}
	for (int k = 0; k < c->nrow; k++) {
		size_t sz = run_batch_row_bytes(rb, k);
		void *all = run_batch_rows(rb, k);
		int bad = TAKE(sz) || rt_upload(g->rt, x, all, sz, msg, n);
		free(all);
		if (bad)
			return -1;
		pd->row[k] = x;
	}
	const void *lay[3] = {p->table, p->lens, p->cu};
	size_t lay_bytes[3] = {(size_t)p->batch * p->max_pages * 4, (size_t)p->batch * 4, (size_t)(p->batch + 1) * 4};
	RtPtr *to[3] = {&pd->table, &pd->lens, &pd->cu};
	for (int k = 0; k < 3 - run_batch_uniform(rb); k++) { /* no cu_seqlens_q where every sequence has as many queries */
		if (TAKE(lay_bytes[k]) || rt_upload(g->rt, x, lay[k], lay_bytes[k], msg, n))
			return -1;
		*to[k] = x;
	}
	for (int k = 0; k < c->nfinal; k++) {
		if (TAKE(run_batch_fin_bytes(rb, k)))
			return -1;
		pd->fin[k] = x;
	}
#undef TAKE
	return 0;
}

int cmd_paged_bench_gpu(Opts *o, Paged *p)
{
	Carrier *c = p->c;
	const Device *dv = run_device_find("gpu");
	char msg[2048], why[512];
	if (!dv || !dv->available(msg, sizeof msg)) {
		fprintf(stderr, "assoc: the gpu device is not usable here: %s\n", dv ? msg : "not in this build");
		return EXIT_UNABLE;
	}
	/* a checked run first, the batch through the device as run does */
	RunCheck chk = {0};
	if (paged_run(p, dv, &o->run, &chk, NULL, msg, sizeof msg)) {
		fprintf(stderr, "assoc: gpu: %s\n", msg);
		return EXIT_UNABLE;
	}
	Gpu g;
	if (gpu_open_paged(&g, c, p->page_size, msg, sizeof msg)) {
		fprintf(stderr, "assoc: bench --device gpu: %s\n", msg);
		runcheck_free(&chk);
		return EXIT_UNABLE;
	}
	PagedBench x = {.g = &g};
	RunBatch rb;
	paged_batch(p, &rb);
	int rows = 0, kmax = 0;
	long long keys = 0;
	for (int b = 0; b < p->batch; b++) {
		keys += p->lens[b];
		rows = p->cu[b + 1] - p->cu[b] > rows ? p->cu[b + 1] - p->cu[b] : rows;
		kmax = p->lens[b] > kmax ? p->lens[b] : kmax;
	}
	x.pd = (GpuPaged){.c = c, .heads = p->heads, .kv_heads = p->kv_heads, .batch = p->batch,
			  .page_size = p->page_size, .max_pages = p->max_pages, .rows = rows, .params = p->params};
	RtPtr own[3 * CUDA_MAXIN + 8], flush = 0, src = 0, dst = 0;
	int nown = 0, rc = EXIT_UNABLE;
	/* as the other benchmarks: every array read or written once, the keys
	 * those the sequences read; a copy of half as many bytes moves as many */
	double bytes = paged_bytes(p), ms = -1;
	size_t copy_bytes = (size_t)(bytes / 2) & ~(size_t)15;
	size_t flush_bytes = 2 * (size_t)(rt_device(g.rt)->l2_bytes > 0 ? rt_device(g.rt)->l2_bytes : 64 << 20);
	GpuCopy cp;
	if (gpu_paged_choose(&g, &x.pd, &o->run, &x.v, &x.split, why, sizeof why)) {
		fprintf(stderr, "assoc: bench --device gpu: %s\n", why);
		goto out;
	}
	if (upload_batch(&g, p, &rb, own, &nown, &x.pd, msg, sizeof msg) ||
	    gpu_paged_enqueue(&g, &x.pd, x.v, x.split, 1, &x.b, rt_primary_ctx(g.rt), NULL, NULL, msg, sizeof msg) ||
	    rt_sync(g.rt, msg, sizeof msg) || rt_alloc(g.rt, flush_bytes, &flush, msg, sizeof msg) ||
	    rt_alloc(g.rt, copy_bytes + 16, &src, msg, sizeof msg) || rt_alloc(g.rt, copy_bytes + 16, &dst, msg, sizeof msg) ||
	    (ms = gpu_median_ms(&g, run_batch, &x, flush, flush_bytes, WARMUP, TIMED, msg, sizeof msg)) < 0 ||
	    gpu_copy_time(&g, src, dst, copy_bytes, flush, flush_bytes, WARMUP, TIMED, &cp, msg, sizeof msg)) {
		fprintf(stderr, "assoc: bench --device gpu: %s\n", msg);
		goto out;
	}
	char cfg[160];
	variant_str(&g.m.var[x.v], cfg, sizeof cfg);
	double copy_ms = gpu_copy_ms(&cp), gbps = bytes / (ms * 1e6), copy = bytes / (copy_ms * 1e6);
	if (o->json) {
		Buf b = {0};
		buf_puts(&b, "{\"spec\": ");
		buf_json_str(&b, c->file);
		buf_printf(&b, ", \"carrier\": \"%s\", \"device\": \"gpu\", \"gpu\": ", c->name);
		buf_json_str(&b, rt_device(g.rt)->name);
		buf_printf(&b,
			   ", \"batch\": %d, \"page_size\": %d, \"heads\": %d, \"kv_heads\": %d, \"rows\": %d, \"len\": %d, "
			   "\"keys\": %lld, \"queries\": %d, \"config\": \"%s split=%d\", \"choice\": \"%s\", \"launches\": 1, \"ms\": %.5f, "
			   "\"bytes\": %.0f, \"kv_bytes\": %.0f, \"gbps\": %.2f, \"copy_gbps\": %.2f, \"ratio_to_copy\": %.4f, "
			   "\"module_ms\": %.2f, \"module_cached\": %s, \"copy_driver_ms\": %.5f, \"copy_kernel_ms\": %.5f, "
			   "\"nominal_gbps\": %.1f, \"match\": %s}",
			   p->batch, p->page_size, p->heads, p->kv_heads, rows, kmax, keys, p->cu[p->batch], cfg, x.split, why, ms,
			   bytes, paged_kv_bytes(p), gbps, copy, gbps / copy, g.compile_ms, g.ptx_cached ? "true" : "false",
			   cp.driver_ms, cp.kernel_ms, cp.nominal_gbps, chk.ok ? "true" : "false");
		char *s = buf_take(&b);
		puts(s);
		free(s);
	} else {
		char heads[64];
		printf("%s: carrier %s on %s, %d sequence%s of up to %d keys in pages of %d%s\n", c->file, c->name,
		       rt_device(g.rt)->name, p->batch, p->batch > 1 ? "s" : "", kmax, p->page_size,
		       cli_heads_clause(heads, sizeof heads, p->heads, p->kv_heads));
		printf("  kernel  %s split=%d (%s), the batch in one launch: %.4f ms, %.1f GB/s (K and V read %.2f MB)\n",
		       cfg, x.split, why, ms, gbps, paged_kv_bytes(p) / 1e6);
		gpu_copy_lines(stdout, rt_device(g.rt), bytes, &cp);
		printf("  ratio   %.3f of copy bandwidth; module %s in %.1f ms\n", gbps / copy,
		       g.ptx_cached ? "from the PTX cache" : "compiled", g.compile_ms);
		printf("  results %s the float64 reference\n", chk.ok ? "match" : "do NOT match");
	}
	rc = chk.ok ? EXIT_OK : EXIT_FAIL;
out:
	for (int k = 0; k < nown; k++)
		rt_free(g.rt, own[k]);
	if (flush)
		rt_free(g.rt, flush);
	if (src)
		rt_free(g.rt, src);
	if (dst)
		rt_free(g.rt, dst);
	gpu_free_bufs(&g, &x.b);
	gpu_close(&g);
	paged_batch_free(&rb);
	runcheck_free(&chk);
	return rc;
}
