/* cmd_tune.c: `assoc tune SPEC --rows R --len N`: the carrier's tuning
 * space on the GPU (gpu_tune), every candidate's line, and where the
 * choice is cached for `assoc run --device gpu`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compiler/cli/cli.h"
#include "compiler/devices/gpu.h"
#include "compiler/devices/paged.h"

/* The progress line, on a terminal. */
static void progress(void *ctx, int done, int total)
{
	(void)ctx;
	int w = 30, k = total ? done * w / total : w;
	fprintf(stderr, "\r  tuning [%.*s%*s] %d/%d", k, "==============================", w - k, "", done, total);
	if (done == total)
		fprintf(stderr, "\r%*s\r", w + 30, "");
}

static void report(const TuneResult *r, double bytes)
{
	for (int i = 0; i < r->n; i++) {
		const TuneCandidate *k = &r->cand[i];
		char cfg[128];
		variant_str(&k->var, cfg, sizeof cfg);
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

static int tune(Carrier *c, RunData *d)
{
	Gpu g;
	char msg[2048];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (gpu_open(&g, c, 1, msg, sizeof msg)) {
		fprintf(stderr, "assoc: tune needs a GPU: %s\n", msg);
		return EXIT_UNABLE;
	}
	GpuTuning t;
	int rc = gpu_tune(&g, d, isatty(2) ? progress : NULL, NULL, &t, msg, sizeof msg);
	if (rc < 0) {
		fprintf(stderr, "assoc: %s\n", msg);
		gpu_close(&g);
		return EXIT_UNABLE;
	}
	const RtDevice *dev = rt_device(g.rt);
	printf("%s: carrier %s on %s (%s), %d rows x %d, %d candidates\n", c->file, c->name, dev->name, g.arch,
	       d->rows, d->len, t.ncand);
	report(&t.res, t.bytes);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
	int status = EXIT_FAIL; /* every candidate failed the reference */
	if (rc > 0) {
		printf("  no candidate ran correctly\n");
	} else if (!t.stored) {
		fprintf(stderr, "assoc: the choice is not cached: %s\n", t.store_err);
		status = EXIT_UNABLE;
	} else {
		printf("  cached for %s\n", t.key);
		printf("  tuned in %.2f s (module %s in %.0f ms)\n", s, g.ptx_cached ? "from the PTX cache" : "compiled",
		       g.compile_ms);
		status = EXIT_OK;
	}
	gpu_close(&g);
	return status;
}

int cmd_tune(Opts *o)
{
	if (cli_bench_shape(o))
		return EXIT_USAGE;
	Carrier *c = cli_load(o, o->specs[0]);
	if (!c)
		return EXIT_USAGE;
	char msg[512];
	if (o->page_size && paged_carrier_ok(c, msg, sizeof msg)) {
		spec_carrier_free(c);
		return usage_error("--page-size: %s", msg);
	}
	/* the choice a tuned run takes is only as sound as the merge it
	 * splits: the verdict run, emit and bench reach comes first */
	int rc = cli_run_verdict_as(c, o, "tuning", "tune it");
	if (rc) {
		spec_carrier_free(c);
		return rc;
	}
	/* a paged batch runs each sequence on these kernels, their tiles
	 * loaded through the block table: the shape tuned is a sequence's,
	 * and paged runs find the choice under the unpaged module's key */
	if (o->page_size)
		printf("%s: paged keys in pages of %d: tuning a sequence of %d queries and %d keys (paged runs take the "
		       "choice, the Hopper template's aside)\n",
		       c->file, o->page_size, o->rows, o->len);
	RunData *d = cli_drawn(o, c);
	rc = d ? tune(c, d) : EXIT_USAGE;
	rundata_free(d);
	spec_carrier_free(c);
	return rc;
}
