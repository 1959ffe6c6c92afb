/* ptx_spills.c: ptxas's registers, spills and stack for every kernel of
 * each spec's tuning space on one target, as the tuner compiles it (all
 * variants in one NVRTC program) or, with --alone, each variant in a
 * module of its own, as a run compiles it.  A line a kernel:
 *   spec arch space|alone variant kernel registers spill-stores spill-loads stack
 * and a line "skip" for a file that is no carrier (a spec that does not
 * load, a loop without a merge).  Exits 1 where a kernel spills or keeps
 * a stack.  Not a test: a space takes NVRTC seconds (bench/ptx_spills.sh
 * runs it over every spec).
 * Usage: ptx_spills [--alone] ARCH SPEC... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"

static Carrier *load(const char *path)
{
	Diag d;
	diag_init(&d, path);
	Carrier *c = spec_load_file(path, NULL, 0, &d);
	diag_free(&d);
	if (c && !c->merge) { /* a loop for explore to derive a merge of */
		spec_carrier_free(c);
		return NULL;
	}
	return c;
}

/* The lines of the kernels of m's variants in want (NULL: all) that ptxas
 * found in ptx; 1 where one spills or keeps a stack, -1 where ptxas fails. */
static int report(const char *spec, const char *arch, const char *mode, const CudaModule *m,
		  const unsigned char *want, const char *ptx)
{
	CudaKStat ks[256];
	char msg[4096];
	int n = cuda_ptxas_stats(ptx, arch, ks, 256, msg, sizeof msg), bad = 0;
	if (n < 0) {
		fprintf(stderr, "ptx_spills: %s %s: %s\n", spec, arch, msg);
		return -1;
	}
	for (int v = 0; v < m->nvar; v++) {
		if (want && !want[v])
			continue;
		char names[3][64], cfg[128];
		int nk = cuda_kernel_names(m, v, names);
		variant_str(&m->var[v], cfg, sizeof cfg);
		for (int k = 0; k < nk; k++)
			for (int j = 0; j < n; j++)
				if (!strcmp(ks[j].name, names[k])) {
					printf("%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", spec, arch, mode, cfg, names[k],
					       ks[j].regs, ks[j].spill_st, ks[j].spill_ld, ks[j].stack);
					bad |= ks[j].spill_st + ks[j].spill_ld + ks[j].stack > 0;
				}
	}
	fflush(stdout);
	return bad;
}

/* One NVRTC program of m's variants in want (NULL: all). */
static int sweep_module(Nvrtc *nv, const char *spec, const char *arch, const char *mode, const CudaModule *m,
			const unsigned char *want)
{
	char msg[8192], *src = want ? cuda_module_src_of(m, want) : NULL, *ptx;
	int cached, rc = nvrtc_ptx(nv, src ? src : m->src, arch, &ptx, &cached, msg, sizeof msg);
	free(src);
	if (rc) {
		fprintf(stderr, "ptx_spills: %s %s: %s\n", spec, arch, msg);
		return -1;
	}
	rc = report(spec, arch, mode, m, want, ptx);
	free(ptx);
	return rc;
}

static int sweep_spec(Nvrtc *nv, const char *spec, const char *arch, int alone)
{
	Carrier *c = load(spec);
	if (!c) {
		printf("%s\t%s\tskip\n", spec, arch);
		return 0;
	}
	CudaModule m;
	char msg[4096];
	if (cuda_module_space_for(c, arch, 0, &m, msg, sizeof msg)) {
		fprintf(stderr, "ptx_spills: %s %s: %s\n", spec, arch, msg);
		spec_carrier_free(c);
		return -1;
	}
	int worst = 0;
	if (!alone)
		worst = sweep_module(nv, spec, arch, "space", &m, NULL);
	for (int v = 0; alone && v < m.nvar; v++) {
		unsigned char want[256] = {0};
		want[v] = 1;
		int rc = sweep_module(nv, spec, arch, "alone", &m, want);
		worst = rc < 0 || worst < 0 ? -1 : rc > worst ? rc : worst;
	}
	cuda_module_free(&m);
	spec_carrier_free(c);
	return worst;
}

int main(int argc, char **argv)
{
	int a = 1, alone = argc > 1 && !strcmp(argv[1], "--alone");
	a += alone;
	if (argc - a < 2) {
		fprintf(stderr, "usage: ptx_spills [--alone] ARCH SPEC...\n");
		return 2;
	}
	const char *arch = argv[a++];
	Nvrtc *nv;
	char msg[8192];
	if (nvrtc_open(&nv, msg, sizeof msg)) {
		fprintf(stderr, "ptx_spills: %s\n", msg);
		return 2;
	}
	int worst = 0;
	for (; a < argc; a++) {
		int rc = sweep_spec(nv, argv[a], arch, alone);
		worst = rc < 0 || worst < 0 ? -1 : rc > worst ? rc : worst;
	}
	nvrtc_close(nv);
	return worst < 0 ? 2 : worst;
}
