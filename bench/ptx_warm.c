/* ptx_warm.c: spec to PTX inside one process where NVRTC is already loaded
 * and has compiled once (a program that generates kernels as it goes, or a
 * library user): the steps of `assoc emit --target ptx` (load the spec,
 * randomized law trials and the prover, the CUDA module, NVRTC), each run
 * with an empty PTX cache.  Prints the median and the best of RUNS, and
 * where the median run's time went.
 * Usage: ptx_warm SPEC [RUNS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/check/check.h"
#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/prove/prove.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static Carrier *load(const char *path)
{
	Diag d;
	diag_init(&d, path);
	Carrier *c = spec_load_file(path, NULL, 0, &d);
	if (!c)
		fprintf(stderr, "%s", d.text ? d.text : "load failed\n");
	diag_free(&d);
	return c;
}

/* As `assoc emit` holds a carrier to its laws before generating code. */
static int laws(Carrier *c)
{
	CheckOpts co = {.seed = 1, .trials = 2000, .id_trials = 200};
	CheckResult r;
	char why[512];
	if (check_run(c, &co, &r, why, sizeof why)) {
		fprintf(stderr, "%s\n", why);
		return -1;
	}
	check_result_free(&r);
	ProofReport pr;
	if (prove_carrier(c, 0, &pr) == 0)
		prove_report_free(&pr);
	return 0;
}

typedef struct {
	double total, front, nvrtc;
} Run;

static int cmp(const void *a, const void *b)
{
	double x = ((const Run *)a)->total, y = ((const Run *)b)->total;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *spec = argc > 1 ? argv[1] : "specs/online_softmax.yaml";
	int runs = argc > 2 ? atoi(argv[2]) : 9;
	if (runs < 1 || runs > 1000) {
		fprintf(stderr, "usage: ptx_warm SPEC [RUNS]\n");
		return 2;
	}
	char dir[] = "/tmp/assoc-ptx-warm-XXXXXX", sub[64];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg)) {
		fprintf(stderr, "%s\n", msg);
		return 1;
	}
	Run *r = calloc((size_t)runs + 1, sizeof *r);
	int nvar = 0, nkern = 0;
	for (int k = 0; k <= runs; k++) { /* run 0 warms NVRTC */
		snprintf(sub, sizeof sub, "%s/%d", dir, k);
		setenv("XDG_CACHE_HOME", sub, 1);
		double t0 = now();
		Carrier *c = load(spec);
		if (!c || laws(c))
			return 1;
		CudaModule m;
		if (cuda_module(c, NULL, &m, msg, sizeof msg)) {
			fprintf(stderr, "%s\n", msg);
			return 1;
		}
		double t1 = now();
		char *ptx;
		int cached;
		if (nvrtc_ptx(nv, m.src, "sm_90", &ptx, &cached, msg, sizeof msg) || cached) {
			fprintf(stderr, "%s\n", cached ? "PTX came from a cache that should be empty" : msg);
			return 1;
		}
		double t2 = now();
		nvar = m.nvar;
		nkern = 0;
		for (const char *p = ptx; (p = strstr(p, ".entry ")); p++)
			nkern++;
		free(ptx);
		cuda_module_free(&m);
		spec_carrier_free(c);
		if (k)
			r[k - 1] = (Run){t2 - t0, t1 - t0, t2 - t1};
	}
	qsort(r, (size_t)runs, sizeof *r, cmp);
	Run med = r[(runs - 1) / 2];
	printf("spec to PTX in a warm process, %s (%d variants, %d kernels in one NVRTC program):\n", spec, nvar,
	       nkern);
	printf("  median %.1f ms, best %.1f ms of %d runs\n", med.total * 1e3, r[0].total * 1e3, runs);
	printf("  the median run: %.1f ms spec, laws and CUDA C; %.1f ms NVRTC\n", med.front * 1e3, med.nvrtc * 1e3);
	free(r);
	nvrtc_close(nv);
	char rm[128];
	snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
	return system(rm) ? 1 : 0;
}
