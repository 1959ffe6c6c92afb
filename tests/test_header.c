/* test_header.c: `assoc emit --target cuda --header`: kernels named after
 * the carrier, and a header that is their whole launch contract.  A host
 * program built against the header alone launches every variant on the
 * emulator and its results meet the reference; its plans are cuda_plan_h's. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "compiler/cuda/cuda.h"
#include "compiler/devices/emu.h"
#include "compiler/util/cache.h"
#include "testutil.h"

static char msg[8192];

/* The status of a shell command line, its output in out. */
static int shell(const char *cmd, char *out, size_t size)
{
	FILE *f = popen(cmd, "r");
	cr_assert(f, "%s", cmd);
	size_t n = fread(out, 1, size - 1, f);
	out[n] = 0;
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* emit SPEC's module and header under build/header/NAME.{cu,h}. */
static void emit(const char *spec, const char *name)
{
	char cmd[1024], out[8192];
	snprintf(cmd, sizeof cmd, "mkdir -p build/header && build/asan/assoc emit %s --target cuda --header "
				  "build/header/%s.h -o build/header/%s.cu 2>&1", spec, name, name);
	cr_assert_eq(shell(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
}

/* The header compiles alone as C11 without a warning, and names every
 * kernel of the carrier's module, which the module defines. */
Test(cuda, header_compiles_and_names_the_carriers_kernels, .timeout = 120)
{
	const char *specs[][2] = {{"specs/online_softmax.yaml", "online_softmax"},
				  {"specs/linear_recurrence.yaml", "linear_recurrence"},
				  {"specs/sum.yaml", "sum"},
				  {"specs/attention.yaml", "attention"}};
	for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
		emit(specs[i][0], specs[i][1]);
		char cmd[512], out[8192];
		snprintf(cmd, sizeof cmd, "cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -x c build/header/%s.h 2>&1",
			 specs[i][1]);
		cr_assert_eq(shell(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
		Carrier *c = load_ok(specs[i][0]);
		CudaModule m;
		cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(cuda_module_name(&m, c->name, msg, sizeof msg), 0, "%s", msg);
		char path[256];
		snprintf(path, sizeof path, "build/header/%s.h", specs[i][1]);
		char *h = cache_read(path, NULL);
		snprintf(path, sizeof path, "build/header/%s.cu", specs[i][1]);
		char *cu = cache_read(path, NULL);
		cr_assert(h && cu);
		char hashed[64];
		snprintf(hashed, sizeof hashed, "%s_", m.prefix);
		cr_assert_not(strstr(cu, hashed), "no hash-named kernel is left in the module");
		for (int v = 0; v < m.nvar; v++) {
			char names[3][64], def[128];
			int nk = cuda_kernel_names(&m, v, names);
			cr_assert(!strncmp(names[0], c->name, strlen(c->name)), "%s starts with the carrier's name", names[0]);
			for (int k = 0; k < nk; k++) {
				snprintf(def, sizeof def, "\"%s\"", names[k]);
				cr_assert(strstr(h, def), "the header names %s", names[k]);
				snprintf(def, sizeof def, " %s(ASC_PARAM Args A)", names[k]);
				cr_assert(strstr(cu, def), "the module defines %s", names[k]);
			}
		}
		free(h);
		free(cu);
		cuda_module_free(&m);
		spec_carrier_free(c);
	}
	char out[1024];
	cr_assert_neq(shell("build/asan/assoc emit specs/sum.yaml --target llvm --header build/header/x.h 2>&1", out,
			    sizeof out), 0);
	cr_assert(strstr(out, "--header is an option of emit --target cuda and ptx only"), "%s", out);
}

typedef struct {
	EmuLib *lib;
	char err[4096];
} Emu;

static int emu_launch(void *ctx, const char *kernel, unsigned grid, unsigned block, unsigned smem, const void *args)
{
	Emu *e = ctx;
	unsigned long long bytes[2] = {0, 0};
	return emu_launch_kernel(e->lib, kernel, grid, block, smem, args, bytes, e->err, sizeof e->err);
}

typedef int (*Launch)(void *, const char *, unsigned, unsigned, unsigned, const void *);

/* The host program against spec's header: every variant's plan is
 * cuda_plan_h's, and every variant run on the emulator meets the
 * reference. */
static void host_program(const char *spec, const char *name, int rows, int len)
{
	char why[512];
	if (!emu_available(why, sizeof why))
		cr_skip("no host C++ compiler for the emulator: %s", why);
	emit(spec, name);
	char cmd[1024], out[8192], so[256];
	snprintf(so, sizeof so, "build/header/host_%s.so", name);
	snprintf(cmd, sizeof cmd, "cc -std=c11 -Wall -Wextra -Werror -shared -fPIC '-DHEADER=\"build/header/%s.h\"' "
				  "-DCARRIER=%s -I. -o %s tests/example/launch_header.c 2>&1", name, name, so);
	cr_assert_eq(shell(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
	void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	int (*variants)(void) = (int (*)(void))dlsym(h, "host_variants");
	const char *(*config)(int) = (const char *(*)(int))dlsym(h, "host_config");
	int (*plan)(int, int, int, int, int, int, char *, size_t) =
		(int (*)(int, int, int, int, int, int, char *, size_t))dlsym(h, "host_plan");
	int (*run)(Launch, void *, int, int, int, int, const void *const *, void *const *, const double *) =
		(int (*)(Launch, void *, int, int, int, int, const void *const *, void *const *, const double *))dlsym(
			h, "host_run");
	cr_assert(variants && config && plan && run);

	Carrier *c = load_ok(spec);
	CudaModule m;
	cr_assert_eq(cuda_module(c, NULL, &m, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(cuda_module_name(&m, c->name, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(variants(), m.nvar);
	char *src = NULL;
	snprintf(cmd, sizeof cmd, "build/header/%s.cu", name);
	src = cache_read(cmd, NULL);
	cr_assert(src);
	Emu e = {0};
	cr_assert_eq(emu_open(src, &e.lib, msg, sizeof msg), 0, "%s", msg);
	const int shapes[][3] = {{1, 1, 1}, {3, 300, 4}, {70, 5000, 3}, {0, 17, 2}, {9, 1, 64}};
	for (int v = 0; v < m.nvar; v++) {
		char cfg[160];
		variant_str(&m.var[v], cfg, sizeof cfg);
		cr_assert_str_eq(config(v), cfg);
		int splits = m.var[v].fam == FAM_SPLITK || m.var[v].fam == FAM_SCAN;
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			int r = shapes[s][0], l = shapes[s][1], sp = splits ? shapes[s][2] : 1;
			char got[1024], want[1024];
			int takes = cuda_takes_len(&m, v, l, NULL, 0);
			cr_assert_eq(plan(v, r, l, 1, 1, sp, got, sizeof got), takes ? 0 : -1, "%s at %d x %d", cfg, r, l);
			if (!takes)
				continue;
			CudaPlan p;
			cuda_plan_h(&m, v, r, l, 1, sp, &p);
			int at = snprintf(want, sizeof want, "%d %d %zu %zu %zu", p.split, p.chunk, p.ws_bytes, p.zero_at,
					  p.zero_bytes);
			for (int k = 0; k < p.nk; k++)
				at += snprintf(want + at, sizeof want - at, ";%s %u %u %u", p.k[k].name,
					       p.k[k].grid ? p.k[k].grid : 1, p.k[k].block, p.k[k].smem);
			cr_assert_str_eq(got, want, "%s at %d x %d split %d", cfg, r, l, sp);
		}
		RunData *d = rundata_new(c, rows, len);
		cr_assert_eq(rundata_draw(d, 5, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		const void *in[CUDA_MAXIN];
		void *outs[CUDA_MAXOUT];
		rundata_pointers(d, in, outs);
		if (!cuda_takes_len(&m, v, len, NULL, 0)) {
			rundata_free(d);
			continue;
		}
		cr_assert_eq(run(emu_launch, &e, v, rows, len, splits ? 3 : 1, in, outs, d->params), 0, "%s: %s", cfg, e.err);
		RunCheck rc;
		runcheck_run(d, &rc);
		for (int o = 0; o < rc.nout; o++)
			cr_expect(rc.out[o].worst_ratio <= 1 && !rc.out[o].nan_mismatch, "%s: %s off by %g", cfg,
				  rc.out[o].name, rc.out[o].max_abs);
		cr_assert(rc.ok, "%s meets the reference", cfg);
		runcheck_free(&rc);
		rundata_free(d);
	}
	emu_close(e.lib);
	free(src);
	cuda_module_free(&m);
	spec_carrier_free(c);
	dlclose(h);
}

Test(cuda, host_program_launches_softmax_from_the_header, .timeout = 600)
{
	host_program("specs/online_softmax.yaml", "online_softmax", 5, 200);
}

Test(cuda, host_program_launches_a_scan_from_the_header, .timeout = 600)
{
	host_program("specs/linear_recurrence.yaml", "linear_recurrence", 4, 333);
}
