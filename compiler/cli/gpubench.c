/* gpubench.c: `assoc bench SPEC --device gpu`: the chosen kernel's
 * throughput, beside its ceiling measured in the same run (a copy moving
 * the same number of bytes: the faster of the driver's device-to-device
 * copy and a copy kernel of 16-byte loads and stores, cuda_copy.c), and the
 * memory's nominal bandwidth from the driver.  Each time is the median of
 * several event-timed runs after warm-up, with L2 flushed before each run.
 * Bytes are the arrays' sizes: every input read once, every output written
 * once.  The run is checked against the reference before it is timed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/util/buf.h"
#include "compiler/cli/cli.h"
#include "compiler/check/draw.h"
#include "compiler/devices/gpu.h"

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

double cmd_bench_attention_flops(const RunData *d)
{
	Carrier *c = d->c;
	if (!c->nrow || d->rows < 1 || d->len < 1)
		return 0;
	Machine m;
	eval_init(&m, c);
	memcpy(m.params, d->params, c->nparams * sizeof *m.params);
	Row *r = eval_row_new(&m, d->len);
	uint64_t rng = 12345;
	int kept = 0, tries = 4096;
	for (int t = 0; t < tries; t++) {
		r->i = rng_int(&rng, 0, d->rows - 1);
		kept += !eval_masked(&m, r, rng_int(&rng, 0, d->len - 1));
	}
	eval_row_free(r);
	eval_free(&m);
	double dim = spec_decl_width(&c->row[0]);
	return 4.0 * d->rows * d->len * dim * kept / tries * (d->heads > 0 ? d->heads : 1);
}

static double attention_flops(Bench *x) { return x->g->m.base == FAM_ATTN ? cmd_bench_attention_flops(x->d) : 0; }

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
		buf_printf(&b, ", \"rows\": %d, \"len\": %d, \"config\": \"%s split=%d\", \"choice\": \"%s\", \"ms\": %.5f, "
			       "\"gbps\": %.2f, \"copy_gbps\": %.2f, \"ratio_to_copy\": %.4f, \"module_ms\": %.2f, "
			       "\"module_cached\": %s, \"tflops\": %.2f, \"copy_driver_ms\": %.5f, \"copy_kernel_ms\": %.5f, "
			       "\"nominal_gbps\": %.1f}",
			   x->d->rows, x->d->len, cfg, x->split, why, ms, gbps, copy, gbps / copy, x->g->compile_ms,
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
		return EXIT_FAIL;
	}
	Bench x = {.g = &g, .b = &b, .d = d};
	double bytes = rundata_bytes(d);
	/* a copy of half the bytes reads and writes as many bytes as the kernel */
	x.copy_bytes = (size_t)(bytes / 2) & ~(size_t)15;
	size_t flush_bytes = 2 * (size_t)(rt_device(g.rt)->l2_bytes > 0 ? rt_device(g.rt)->l2_bytes : 64 << 20);
	RtPtr flush = 0;
	int rc = EXIT_FAIL;
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
	if (gpu_upload(&g, d, &b, msg, sizeof msg) || rt_alloc(g.rt, flush_bytes, &flush, msg, sizeof msg) ||
	    rt_alloc(g.rt, x.copy_bytes, &x.src, msg, sizeof msg) || rt_alloc(g.rt, x.copy_bytes, &x.dst, msg, sizeof msg) ||
	    check_once(&x, msg, sizeof msg) || (ms = gpu_median_ms(&g, run_kernel, &x, flush, flush_bytes, WARMUP, TIMED, msg, sizeof msg)) < 0 ||
	    gpu_copy_time(&g, x.src, x.dst, x.copy_bytes, flush, flush_bytes, WARMUP, TIMED, &cp, msg, sizeof msg)) {
		fprintf(stderr, "assoc: bench --device gpu: %s\n", msg);
		goto out;
	}
	print(o, &x, ms, &cp, bytes, why);
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
	if (!rc)
		rc = gpu_bench(o, c, d);
	cli_inputs_free(arr);
	rundata_free(d);
	spec_carrier_free(c);
	return rc;
}
