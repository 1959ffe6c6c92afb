/* test_gpu.c: the GPU device.  With the fake driver (tests/fake/fakecuda.c)
 * the whole path runs on any machine: NVRTC, module load, uploads, the
 * launch plan, downloads, the tuning cache's frozen choice; the fake runs no
 * kernels, so its results must fail the check.  Where a real GPU is present,
 * every bundled spec runs on it against the float64 reference; elsewhere
 * those tests skip. */
#include <dlfcn.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/devices/gpu.h"
#include "cudatest.h"
#include "testutil.h"

#define FAKE "build/libfakecuda.so"

static char msg[8192];

static int have_nvrtc(void)
{
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, sizeof msg))
		return 0;
	nvrtc_close(nv);
	return 1;
}

/* The fake driver with a tuning cache of its own in dir (a mkdtemp
 * template); fake_done closes and frees what such a test opened. */
static void fake_with_cache(char *dir)
{
	test_tmpdir(dir);
	test_xdg_cache(dir);
	setenv("ASSOC_LIBCUDA", FAKE, 1);
	setenv("FAKECUDA", "", 1);
}

static void fake_done(Gpu *g, RunData *d, Carrier *c)
{
	gpu_close(g);
	rundata_free(d);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
	unsetenv("XDG_CACHE_HOME");
}

/* An attention spec at head dims d = dv. */
static Carrier *load_dims(const char *path, const char *d)
{
	Define defs[2] = {{"d", d}, {"dv", d}};
	return load_defs(path, defs, 2);
}

/* The output of a shell command line (stdout and what it redirects). */
static void shell(const char *cmd, char *out, size_t size)
{
	FILE *f = popen(cmd, "r");
	cr_assert(f, "%s", cmd);
	size_t n = fread(out, 1, size - 1, f);
	out[n] = 0;
	pclose(f);
}

static RunData *drawn(Carrier *c, int rows, int len)
{
	RunData *d = rundata_new(c, rows, len);
	cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	return d;
}

/* A run's device check (Device.available) makes no context: `assoc run
 * --device gpu` creates the primary context once, in the run's open,
 * rather than creating it in the check, resetting it there and creating
 * it again. */
Test(gpu, a_run_creates_the_primary_context_once, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	void *lib = dlopen(FAKE, RTLD_NOW);
	void (*primary)(int *, int *) = (void (*)(int *, int *))dlsym(lib, "fakecuda_primary");
	cr_assert(primary);
	const Device *dv = run_device_find("gpu");
	int refs, made;
	cr_assert(dv->available(msg, sizeof msg), "%s", msg);
	primary(&refs, &made);
	cr_expect(refs == 0 && made == 0, "the check: %d references, %d made", refs, made);
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = drawn(c, 3, 100);
	cr_assert_eq(dv->run(d, &(RunOpts){0}, msg, sizeof msg), 0, "%s", msg);
	primary(&refs, &made);
	cr_expect(refs == 0 && made == 1, "the run: %d references, %d made", refs, made);
	dlclose(lib);
	rundata_free(d);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
	unsetenv("XDG_CACHE_HOME");
}

/* bench checks the timed launch's outputs on a sample of rows: right
 * outputs (the interpreter's) pass, with each sampled row at its own
 * position (a causal mask reads it), and a wrong last row of the last
 * head is found and named. */
Test(gpu, a_sample_of_the_timed_shape_is_checked, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	Carrier *c = load_dims("tests/attention/causal_bf16.yaml", "64");
	RunData *d = rundata_new_heads(c, 130, 300, 4, 2);
	cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	Gpu g;
	int v, split;
	char why[512];
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){0}, &v, &split, why, sizeof why), 0, "%s", why);
	cr_assert_eq(run_device_find("interp")->run(d, &(RunOpts){0}, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(gpu_check_sample(&g, d, v, msg, sizeof msg), 0, "%s", msg);
	Buffer *out = &d->fin[0];
	size_t last = out->n * out->width - 1;
	run_buffer_set(out, last, run_buffer_get(out, last) + 100);
	cr_assert_eq(gpu_check_sample(&g, d, v, msg, sizeof msg), 1);
	cr_expect(strstr(msg, "at 130 rows x 300, row 129 of head 3: wrong result"), "%s", msg);
	fake_done(&g, d, c);
}

Test(gpu, no_driver_is_a_clear_condition)
{
	setenv("ASSOC_LIBCUDA", "build/no-such-libcuda.so.1", 1);
	const Device *g = run_device_find("gpu");
	cr_assert_not_null(g);
	cr_assert_eq(g->available(msg, sizeof msg), 0);
	cr_assert(strstr(msg, "no CUDA driver"), "%s", msg);
	Carrier *c = load_ok("specs/sum.yaml");
	RunData *d = drawn(c, 2, 10);
	cr_assert_eq(g->run(d, &(RunOpts){0}, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "no CUDA driver"), "%s", msg);
	rundata_free(d);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
}

Test(gpu, fake_driver_runs_the_whole_path)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	setenv("ASSOC_LIBCUDA", FAKE, 1);
	setenv("FAKECUDA", "", 1);
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = drawn(c, 3, 100);
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_str_eq(g.arch, "sm_90a", "the fake is a compute capability 9.0 device, whose target is sm_90a");
	GpuBufs b;
	cr_assert_eq(gpu_upload(&g, d, &b, msg, sizeof msg), 0, "%s", msg);
	float back[300];
	cr_assert_eq(rt_download(g.rt, back, b.in[0], sizeof back, msg, sizeof msg), 0);
	cr_assert_arr_eq(back, d->elem[0].p, sizeof back, "inputs reach device memory intact");
	void *lib = dlopen(FAKE, RTLD_NOW);
	int (*launches)(void) = (int (*)(void))dlsym(lib, "fakecuda_launches");
	int before = launches();
	int v, split;
	char why[128];
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.deterministic = 1}, &v, &split, why, sizeof why), 0);
	cr_assert(strstr(why, "--deterministic"), "%s", why);
	CudaPlan p;
	cuda_plan(&g.m, v, d->rows, d->len, split, &p);
	cr_assert_eq(gpu_launch(&g, &b, v, split, d->rows, d->len, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(launches() - before, p.nk, "one launch per kernel of the plan");
	cr_assert_eq(gpu_download(&g, d, &b, msg, sizeof msg), 0, "%s", msg);
	RunCheck rc;
	runcheck_run(d, &rc);
	cr_assert_not(rc.ok, "the fake runs no kernel: all-zero outputs must fail the check");
	runcheck_free(&rc);
	gpu_free_bufs(&g, &b);
	gpu_close(&g);
	dlclose(lib);
	rundata_free(d);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
}

/* A row longer than a variant keeps on chip is refused before any launch:
 * the kernel would write past its shared-memory stash. */
Test(gpu, rows_past_the_on_chip_capacity_are_refused)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = drawn(c, 2, 4097);
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	int v, split;
	char why[256];
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.config = "rowmap:nt=256,acc=2,vec=4,items=16"}, &v, &split, why,
				sizeof why),
		     0, "%s", why);
	GpuBufs b;
	cr_assert_eq(gpu_upload(&g, d, &b, msg, sizeof msg), 0, "%s", msg);
	void *lib = dlopen(FAKE, RTLD_NOW);
	int (*launches)(void) = (int (*)(void))dlsym(lib, "fakecuda_launches");
	int before = launches();
	msg[0] = 0;
	cr_expect_neq(gpu_launch(&g, &b, v, split, d->rows, 4097, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "rows of 4097 do not fit on chip") && strstr(msg, "at most 4096"), "%s", msg);
	cr_expect_eq(launches(), before, "nothing launched");
	cr_expect_eq(gpu_launch(&g, &b, v, split, d->rows, 4096, msg, sizeof msg), 0, "%s", msg);
	cr_expect_gt(launches(), before, "a row that fits is launched");
	gpu_free_bufs(&g, &b);
	dlclose(lib);
	fake_done(&g, d, c);
}

/* Attention's K and V tiles, two stages at head dim 128, take 68 KB of
 * dynamic shared memory (decoding's, three stages of 128 keys, 204 KB):
 * the launch carries the bytes and the kernel opts in first; a device that
 * allows less refuses the launch with the reason, and its limit sizes
 * decoding's variant (99 KB: two stages of 64 keys). */
Test(gpu, attention_launch_takes_dynamic_shared_memory)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	setenv("ASSOC_LIBCUDA", FAKE, 1);
	setenv("FAKECUDA", "", 1);
	Carrier *c = load_dims("specs/attention.yaml", "128");
	RunData *d = drawn(c, 100, 200);
	void *lib = dlopen(FAKE, RTLD_NOW);
	void (*smem)(unsigned *, int *, int *) = (void (*)(unsigned *, int *, int *))dlsym(lib, "fakecuda_smem");
	Gpu g;
	GpuBufs b;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(g.m.smem_max, 227 << 10, "the device's opt-in limit");
	cr_assert_eq(gpu_upload(&g, d, &b, msg, sizeof msg), 0, "%s", msg);
	for (int v = 0; v < g.m.nvar; v++) {
		unsigned launch;
		int grant, grants;
		/* 2 stages of 64 keys x (128 + 128) halves, padded; with 32 query
		 * rows a warp, Q's 128 rows stay there too; decoding's: 3 of 128;
		 * the Hopper template's (the fake is sm_90): Q's 128 rows, 2
		 * stages of 128 keys, 5 mbarriers and the alignment's slack */
		unsigned want = g.m.var[v].wg ? 32768 + 131072 + 40 + 1024
				: g.m.var[v].ks > 1 ? 208896 : g.m.var[v].mt == 2 ? 104448 : 69632;
		cr_assert_eq(cuda_smem(&g.m, v), want, "variant %d (mt %d)", v, g.m.var[v].mt);
		cr_assert_eq(gpu_launch(&g, &b, v, 1, d->rows, d->len, msg, sizeof msg), 0, "%s", msg);
		smem(&launch, &grant, &grants);
		cr_assert_eq(launch, want);
		cr_assert_eq(grant, want, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) before the launch");
	}
	gpu_free_bufs(&g, &b);
	gpu_close(&g);
	setenv("FAKECUDA", "optin=65536", 1);
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	char why[256];
	cr_assert_not(cuda_fits(&g.m, 0, why, sizeof why));
	cr_assert(strstr(why, "needs 69632 bytes of shared memory per block; the device allows 65536"), "%s", why);
	cr_assert_eq(gpu_upload(&g, d, &b, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(gpu_launch(&g, &b, 0, 1, d->rows, d->len, msg, sizeof msg), -1);
	cr_assert(strstr(msg, "69632 bytes of dynamic shared memory; Fake GPU 0 allows at most 65536 per block"), "%s", msg);
	gpu_free_bufs(&g, &b);
	gpu_close(&g);
	setenv("FAKECUDA", "optin=101376", 1);
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	int dec = cuda_pick(&g.m, 4, 1000, 1);
	cr_assert_gt(g.m.var[dec].ks, 1);
	cr_expect_eq(cuda_smem(&g.m, dec), 69632, "decoding's on a device of 99 KB: two stages of 64 keys");
	gpu_close(&g);
	dlclose(lib);
	rundata_free(d);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
}

/* Attention's split counters (after the partial states in the workspace)
 * are zeroed before the first launch of a layout, and not again while
 * launches keep it: the kernels leave them at zero (the fake runs none,
 * so what was written into them stays).  Another split count moves them:
 * zeroed again. */
Test(gpu, split_counters_are_zeroed_once_per_layout)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	setenv("ASSOC_LIBCUDA", FAKE, 1);
	setenv("FAKECUDA", "", 1);
	Carrier *c = load_dims("specs/attention.yaml", "64");
	RunData *d = rundata_new_heads(c, 1, 1000, 4, 1);
	cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	Gpu g;
	GpuBufs b;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	int v = cuda_find_variant(&g.m, c, "attention:nt=128,mt=1,bn=64,st=2");
	cr_assert_geq(v, 0);
	cr_assert_eq(gpu_upload(&g, d, &b, msg, sizeof msg), 0, "%s", msg);
	/* the larger workspace first, filled with what the counters must not start from */
	cr_assert_eq(gpu_launch(&g, &b, v, 5, 1, 1000, msg, sizeof msg), 0, "%s", msg);
	memset((void *)(size_t)b.ws, 0x5a, b.ws_bytes); /* the fake's memory is the host's */
	static const int splits[] = {3, 5};
	for (int s = 0; s < 2; s++) {
		CudaPlan p;
		cuda_plan_h(&g.m, v, 4, 1000, 1, splits[s], &p); /* 4 query heads on one: a run of 4 rows */
		cr_assert_gt(p.zero_bytes, 0);
		cr_assert_eq(gpu_launch(&g, &b, v, splits[s], 1, 1000, msg, sizeof msg), 0, "%s", msg);
		unsigned char *ctr = (unsigned char *)(size_t)b.ws + p.zero_at;
		for (size_t k = 0; k < p.zero_bytes; k++)
			cr_assert_eq(ctr[k], 0, "split %d: counter byte %zu zeroed before the layout's first launch", splits[s], k);
		memset(ctr, 0x5a, p.zero_bytes);
		cr_assert_eq(gpu_launch(&g, &b, v, splits[s], 1, 1000, msg, sizeof msg), 0, "%s", msg);
		cr_expect_eq(ctr[0], 0x5a, "split %d: the same layout is not zeroed again", splits[s]);
	}
	gpu_free_bufs(&g, &b);
	gpu_close(&g);
	rundata_free(d);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
}

/* A tuning candidate is checked on a small problem of the same heads
 * layout: at most two key/value heads, each with its query heads, so that
 * the float64 reference every candidate pays for stays short. */
Test(gpu, validation_keeps_two_key_value_heads)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	setenv("ASSOC_LIBCUDA", FAKE, 1);
	setenv("FAKECUDA", "", 1);
	Carrier *c = load_dims("specs/attention.yaml", "64");
	void *lib = dlopen(FAKE, RTLD_NOW);
	unsigned (*grid)(void) = (unsigned (*)(void))dlsym(lib, "fakecuda_grid");
	cr_assert(grid);
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	int v = cuda_find_variant(&g.m, c, "attention:nt=128,mt=1,bn=64,st=2"); /* 64 query rows a block */
	cr_assert_geq(v, 0);
	static const struct {
		int heads, kv;
		unsigned grid;
	} cases[] = {{16, 16, 2}, {16, 4, 2 * 4}, {2, 1, 2}, {3, 3, 2}};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		RunData *d = rundata_new_heads(c, 100, 300, cases[k].heads, cases[k].kv);
		cr_assert_eq(gpu_validate(&g, d, v, 1, msg, sizeof msg), 1, "the fake computes nothing");
		cr_expect(strstr(msg, "wrong result"), "%s", msg);
		cr_expect_eq(grid(), cases[k].grid, "%d heads on %d: %u blocks of 64 rows", cases[k].heads,
			     cases[k].kv, grid());
		rundata_free(d);
	}
	gpu_close(&g);
	dlclose(lib);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
}

Test(gpu, tuned_choice_is_frozen_in_the_cache)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	Carrier *c = load_ok("specs/logsumexp.yaml");
	RunData *d = drawn(c, 8, 5000);
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	int v, split;
	char why[128], key[1024], cfg[200], err[256];
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){0}, &v, &split, why, sizeof why), 0);
	cr_assert(strstr(why, "not tuned"), "%s", why);
	int other = 0; /* a split kernel the rule did not pick: its split count is the tuned one */
	while (other < g.m.nvar && (other == v || g.m.var[other].fam != FAM_SPLITK))
		other++;
	cr_assert_lt(other, g.m.nvar);
	variant_str(&g.m.var[other], cfg, sizeof cfg);
	strcat(cfg, ",split=4");
	gpu_tune_key(&g, d, key, sizeof key);
	cr_assert(strstr(key, "device=Fake GPU 0;cc=9.0;sms=132;driver=13000;"), "%s", key);
	cr_assert(strstr(key, ";rows=8;len=8192"), "shapes are bucketed: %s", key);
	/* the templates' text is in the key: choices tuned with other templates are not reused */
	static const char *tpl[] = {"common", "blocks", "rowreduce", "rowmap", "splitk", "scan", "attention", "hopper",
				    "attention_sm90", "rowcluster", "rowbulk"};
	uint64_t h = CUDA_FNV0;
	for (int t = 0; t < 11; t++)
		h = cuda_fnv(h, blob_find(tpl[t])->text, blob_find(tpl[t])->len);
	char want[64];
	snprintf(want, sizeof want, ";template=rowreduce/%016llx;", (unsigned long long)h);
	cr_assert(strstr(key, want), "%s in %s", want, key);
	TuneCache tc;
	cr_assert_eq(tc_open(&tc, NULL, err, sizeof err), 0, "%s", err);
	cr_assert_eq(tc_put(&tc, key, cfg, err, sizeof err), 0, "%s", err);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(gpu_choose(&g, d, &(RunOpts){0}, &v, &split, why, sizeof why), 0);
		cr_assert_str_eq(why, "tuned (cache)");
		cr_assert_eq(v, other);
		cr_assert_eq(split, 4);
	}
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.deterministic = 1}, &v, &split, why, sizeof why), 0);
	cr_assert_neq(v, other, "--deterministic ignores the tuned choice");
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.split = 2}, &v, &split, why, sizeof why), 0);
	cr_assert_eq(v, other);
	cr_assert_eq(split, 2, "an explicit --split stands over the tuned one");
	/* damaged entries, and entries of the older "config split=K" format
	 * or without a split, are misses that leave the split alone */
	static const char *const bad[] = {",split=-3", ",split=99999999999", ",split=4x", " split=4", ""};
	for (int i = 0; i < 5; i++) {
		variant_str(&g.m.var[other], cfg, sizeof cfg);
		strcat(cfg, bad[i]);
		cr_assert_eq(tc_put(&tc, key, cfg, err, sizeof err), 0, "%s", err);
		cr_assert_eq(gpu_choose(&g, d, &(RunOpts){0}, &v, &split, why, sizeof why), 0);
		cr_expect(strstr(why, "not tuned"), "%s: %s", bad[i], why);
		cr_expect_eq(split, 1, "%s", bad[i]);
	}
	/* a grid holds 2^31 - 1 blocks: rows x splits past it take fewer splits */
	int sk = 0;
	while (sk < g.m.nvar && g.m.var[sk].fam != FAM_SPLITK)
		sk++;
	cr_assert_lt(sk, g.m.nvar);
	CudaPlan p;
	cuda_plan(&g.m, sk, 131072, 1 << 20, 32768, &p);
	/* and then no more than the chunks of 68 positions those need */
	cr_expect_eq(p.split, 15421);
	cr_expect_eq(p.chunk, 68);
	cr_expect_eq(p.k[0].grid, 131072u * 15421u);
	fake_done(&g, d, c);
}

/* A candidate whose static shared memory, beside its dynamic bytes,
 * passes the device's opt-in limit is ruled out with that reason before
 * any launch (cuda_fits sees the dynamic bytes alone). */
Test(gpu, tuning_counts_static_shared_memory, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	setenv("FAKECUDA", "static=240000", 1);
	Carrier *c = load_ok("specs/logsumexp.yaml");
	RunData *d = drawn(c, 16, 4096);
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 1, msg, sizeof msg), 0, "%s", msg);
	static GpuTuning t;
	cr_assert_eq(gpu_tune(&g, d, NULL, NULL, &t, msg, sizeof msg), 1, "%s", msg);
	int found = 0;
	for (int i = 0; i < t.res.n; i++)
		found |= strstr(t.res.cand[i].why, "shared memory per block, static and dynamic; the device allows 232448") != NULL;
	cr_expect(found, "a candidate ruled out by its static shared memory");
	setenv("FAKECUDA", "", 1);
	fake_done(&g, d, c);
}

/* The library tunes (gpu_tune): every candidate comes back with its split
 * and its reason, the progress hook hears of each one decided, and with
 * none correct (the fake computes nothing) nothing is cached. */
static void count_progress(void *ctx, int done, int total)
{
	int *seen = ctx;
	seen[0]++;
	seen[1] = done == total;
}

Test(gpu, tuning_from_the_library, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	Carrier *c = load_ok("specs/logsumexp.yaml");
	RunData *d = drawn(c, 16, 4096);
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 1, msg, sizeof msg), 0, "%s", msg);
	static GpuTuning t;
	int seen[2] = {0, 0};
	cr_assert_eq(gpu_tune(&g, d, count_progress, seen, &t, msg, sizeof msg), 1, "none runs correctly on the fake");
	cr_assert_gt(t.ncand, g.m.nvar, "the split kernels come with several split counts");
	cr_expect_eq(t.res.n, t.ncand, "every candidate is reported");
	cr_expect_eq(t.res.best, -1);
	cr_expect(seen[0] > 0 && seen[1], "progress heard %d, the last %d", seen[0], seen[1]);
	int splits = 0;
	for (int i = 0; i < t.res.n; i++) {
		const Variant *x = &t.res.cand[i].var;
		char text[256];
		variant_str(x, text, sizeof text);
		cr_expect_geq(x->split, 1, "%s", text);
		splits += x->split > 1;
		cr_expect_geq(cuda_find_variant(&g.m, c, text), 0, "%s is a variant of the module", text);
		cr_expect(t.res.cand[i].why[0], "%s: ruled out with a reason", text);
	}
	cr_expect_gt(splits, 0);
	cr_expect_not(t.stored);
	char key[1024], val[256], why[256], err[256];
	TuneCache tc;
	gpu_tune_key(&g, d, key, sizeof key);
	cr_assert_eq(tc_open(&tc, NULL, err, sizeof err), 0, "%s", err);
	cr_expect_eq(tc_get(&tc, key, val, sizeof val, why, sizeof why), 0, "nothing cached: %s", val);
	fake_done(&g, d, c);
}

/* A tuned choice from the wider tuning space (another number of pipeline
 * stages, fewer keys per tile) is not among the default variants: run
 * builds it alone.  So does --config; a configuration out of range says so. */
Test(gpu, configurations_outside_the_defaults_are_built_alone, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	Carrier *c = load_dims("specs/attention.yaml", "64");
	RunData *d = drawn(c, 100, 300);
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	int v, split, ndef = g.m.nvar;
	char why[512], key[1024], cfg[200], err[256];
	static const char tuned[] = "attention:nt=128,mt=1,bn=32,pv=1,st=3";
	cr_assert_lt(cuda_find_variant(&g.m, c, tuned), 0, "not a default variant");
	gpu_tune_key(&g, d, key, sizeof key);
	TuneCache tc;
	cr_assert_eq(tc_open(&tc, NULL, err, sizeof err), 0, "%s", err);
	snprintf(cfg, sizeof cfg, "%s,split=2", tuned);
	cr_assert_eq(tc_put(&tc, key, cfg, err, sizeof err), 0, "%s", err);
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){0}, &v, &split, why, sizeof why), 0, "%s", why);
	cr_expect_str_eq(why, "tuned (cache)");
	cr_expect_eq(g.m.nvar, 1, "the tuned variant alone, not the %d defaults", ndef);
	variant_str(&g.m.var[v], cfg, sizeof cfg);
	cr_expect_str_eq(cfg, tuned);
	cr_expect_eq(split, 2);
	cr_expect(g.vmod && g.vmod[v], "and loaded");
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.config = "attention:nt=128,mt=1,bn=64,st=1"}, &v, &split, why, sizeof why),
		     0, "%s", why);
	variant_str(&g.m.var[v], cfg, sizeof cfg);
	cr_expect_str_eq(cfg, "attention:nt=128,mt=1,bn=64,pv=1,st=1");
	cr_expect_eq(split, 1, "--config without a split: one block a row of keys");
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.config = "attention:nt=128,mt=1,bn=64,st=1,split=3"}, &v, &split, why,
				sizeof why), 0, "%s", why);
	cr_expect_eq(split, 3, "the split a configuration names");
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.config = "attention:nt=128,mt=1,bn=64,st=1,split=3", .split = 2}, &v,
				&split, why, sizeof why), 0, "%s", why);
	cr_expect_eq(split, 2, "an explicit --split stands over it");
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.deterministic = 1}, &v, &split, why, sizeof why), 0, "%s", why);
	cr_expect_eq(g.m.nvar, ndef, "the rule chooses among the defaults again, not in one configuration's module");
	cr_expect_str_eq(why, "fixed (--deterministic)");
	cr_expect_neq(gpu_choose(&g, d, &(RunOpts){.config = "attention:nt=128,st=9"}, &v, &split, why, sizeof why), 0);
	cr_expect(strstr(why, "out of range") && strstr(why, "st 1-3"), "%s", why);
	cr_expect(g.nmods > 0 && g.m.nvar == ndef, "a configuration that does not parse keeps the module");
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.deterministic = 1}, &v, &split, why, sizeof why), 0, "%s", why);
	cr_expect_eq(g.m.nvar, ndef);
	/* a configuration named whose kernels take local memory (the fake's
	 * local=24): the choice says so, where the rule's never would */
	RunOpts named = {.config = "attention:nt=128,mt=1,bn=64,st=1"};
	cr_assert_eq(gpu_choose(&g, d, &named, &v, &split, why, sizeof why), 0, "%s", why);
	cr_expect_str_eq(why, "--config");
	setenv("FAKECUDA", "local=24", 1);
	cr_assert_eq(gpu_choose(&g, d, &named, &v, &split, why, sizeof why), 0, "%s", why);
	cr_expect(strstr(why, "--config; it takes 24 bytes of local memory a thread (spills or a stack)"), "%s", why);
	setenv("FAKECUDA", "", 1);
	fake_done(&g, d, c);
}

/* A row across a thread-block cluster launches rows * cl blocks in
 * clusters of cl through cuLaunchKernelEx (the fake records the cluster),
 * and a cluster of 16 after allowing non-portable sizes. */
Test(gpu, cluster_variants_launch_in_clusters, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	void *lib = dlopen(FAKE, RTLD_NOW);
	void (*cluster)(unsigned *, int *) = (void (*)(unsigned *, int *))dlsym(lib, "fakecuda_cluster");
	unsigned (*grid)(void) = (unsigned (*)(void))dlsym(lib, "fakecuda_grid");
	cr_assert(cluster && grid);
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = drawn(c, 3, 1000);
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	static const char *const cfgs[] = {"rowmap:nt=256,acc=2,vec=4,items=16,cl=4", "rowmap:nt=64,acc=2,vec=4,items=1,cl=16"};
	static const unsigned cl[] = {4, 16};
	for (int k = 0; k < 2; k++) {
		int v, split;
		char why[512];
		cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.config = cfgs[k]}, &v, &split, why, sizeof why), 0, "%s", why);
		cr_assert_eq(g.m.var[v].cl, (int)cl[k]);
		cr_assert_eq(gpu_validate(&g, d, v, 1, msg, sizeof msg), 1, "the fake computes nothing");
		unsigned dims[3];
		int nonportable;
		cluster(dims, &nonportable);
		cr_expect(dims[0] == cl[k] && dims[1] == 1 && dims[2] == 1, "%s: cluster %u x %u x %u", cfgs[k], dims[0],
			  dims[1], dims[2]);
		cr_expect_eq(grid() % cl[k], 0, "%s: %u blocks", cfgs[k], grid());
		cr_expect_eq(nonportable, k == 1, "non-portable sizes allowed only for 16");
	}
	dlclose(lib);
	fake_done(&g, d, c);
}

/* A generic template asked for by --config on an attention carrier has no
 * heads: the run goes head by head, as it does for any other carrier (one
 * launch each), rather than computing the first head alone. */
Test(gpu, generic_config_on_heads_runs_head_by_head, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	setenv("ASSOC_LIBCUDA", FAKE, 1);
	setenv("FAKECUDA", "", 1);
	Carrier *c = load_dims("tests/attention/full.yaml", "32");
	void *lib = dlopen(FAKE, RTLD_NOW);
	int (*launches)(void) = (int (*)(void))dlsym(lib, "fakecuda_launches");
	cr_assert(launches);
	RunData *d = rundata_new_heads(c, 5, 40, 3, 1);
	cr_assert_eq(rundata_draw(d, 3, NULL, 0, msg, sizeof msg), 0, "%s", msg);
	int before = launches();
	RunOpts o = {.config = "rowreduce:nt=64,acc=1,vec=1,warp=0,items=0"};
	cr_assert_eq(run_device_find("gpu")->run(d, &o, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(launches() - before, 3, "one launch a head");
	rundata_free(d);
	dlclose(lib);
	spec_carrier_free(c);
	unsetenv("ASSOC_LIBCUDA");
}

/* assoc tune searches the wider space: attention variants with one to
 * three pipeline stages and with half the keys per tile, each one run
 * (none pruned by the memory model) and timed or ruled out with its
 * reason (the fake driver computes nothing); decoding's key slices where
 * a kv head's query rows are few, and only there. */
Test(gpu, tune_searches_stages_and_key_tiles, .timeout = 300)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char out[32768];
	shell("XDG_CACHE_HOME=$PWD/build/tunecli ASSOC_LIBCUDA=" FAKE " FAKECUDA= build/asan/assoc tune "
	      "specs/attention.yaml -D d=64 -D dv=64 --rows 100 --len 300 2>&1; echo \"exit $?\"", out, sizeof out);
	/* the fake is sm_90: the mma.sync template's 8 and the Hopper template's 4, and its warp-specialized
	 * schedules' 4 (ws 1 and 2, two and three stages), unsplit and split 2 */
	cr_assert(strstr(out, "32 candidates"), "%s", out);
	static const char *want[] = {"attention:nt=128,mt=1,bn=64,pv=1,st=1", "attention:nt=128,mt=1,bn=64,pv=1,st=2",
				     "attention:nt=128,mt=1,bn=64,pv=1,st=3", "attention:nt=128,mt=1,bn=32,pv=1,st=2",
				     "attention:nt=128,mt=2,bn=32,pv=1,st=2", "attention:nt=128,mt=2,bn=64,pv=1,st=3",
				     "attention:nt=256,mt=1,bn=128,pv=1,st=2,wg=2", "attention:nt=256,mt=1,bn=128,pv=1,st=3,wg=2",
				     "attention:nt=256,mt=1,bn=64,pv=1,st=2,wg=2", "attention:nt=384,mt=1,bn=128,pv=1,st=2,wg=2,ws=1",
				     "attention:nt=384,mt=1,bn=128,pv=1,st=3,wg=2,ws=1", "attention:nt=384,mt=1,bn=128,pv=1,st=2,wg=2,ws=2",
				     "attention:nt=384,mt=1,bn=128,pv=1,st=3,wg=2,ws=2"};
	for (size_t k = 0; k < sizeof want / sizeof *want; k++)
		cr_expect(strstr(out, want[k]), "%s missing: %s", want[k], out);
	cr_expect(!strstr(out, "not timed"), "the memory model does not rank attention: every candidate runs: %s", out);
	cr_expect(!strstr(out, "ks="), "100 rows a kv head take no key slices: %s", out);
	shell("XDG_CACHE_HOME=$PWD/build/tunecli ASSOC_LIBCUDA=" FAKE " FAKECUDA= build/asan/assoc tune "
	      "specs/attention.yaml -D d=64 -D dv=64 --rows 1 --len 300 --heads 4 --kv-heads 1 2>&1; echo \"exit $?\"", out,
	      sizeof out);
	cr_assert(strstr(out, "26 candidates"), "decoding: 13 variants, unsplit and split 2: %s", out);
	static const char *slices[] = {"attention:nt=128,mt=1,bn=128,pv=1,st=3,ks=4,split=1 ", "attention:nt=128,mt=1,bn=128,pv=1,st=1,ks=4",
				       "attention:nt=128,mt=1,bn=128,pv=1,st=2,ks=4", "attention:nt=128,mt=1,bn=128,pv=1,st=3,ks=2",
				       "attention:nt=128,mt=1,bn=64,pv=1,st=3,ks=4"};
	for (size_t k = 0; k < sizeof slices / sizeof *slices; k++)
		cr_expect(strstr(out, slices[k]), "%s missing: %s", slices[k], out);
}

/* ---- on a real GPU ---- */

static int real_gpu(void)
{
	unsetenv("ASSOC_LIBCUDA");
	return run_device_find("gpu")->available(msg, sizeof msg);
}

Test(gpu, every_bundled_spec_on_the_device, .timeout = 600)
{
	if (!real_gpu())
		cr_skip_test("no CUDA device: %s", msg);
	glob_t gl;
	cr_assert_eq(glob("specs/*.yaml", 0, NULL, &gl), 0);
	/* each run opens the driver and loads the module: the grid is kept to
	 * what the device check's time allows (the emulator tests cover more) */
	static const int rows[] = {1, 64}, lens[] = {0, 1, 33, 4099}, splits[] = {1, 2, 3, 7};
	for (size_t s = 0; s < gl.gl_pathc; s++) {
		Carrier *c = load_ok(gl.gl_pathv[s]);
		for (size_t r = 0; r < 2; r++)
			for (size_t l = 0; l < 4; l++)
				for (size_t k = 0; k < 4; k++) {
					if (splits[k] > 1 && (lens[l] < 4099 || rows[r] > 1))
						continue;
					RunData *d = drawn(c, rows[r], lens[l]);
					RunOpts o = {.split = splits[k], .deterministic = 1};
					cr_assert_eq(run_device_find("gpu")->run(d, &o, msg, sizeof msg), 0, "%s: %s", gl.gl_pathv[s], msg);
					RunCheck rc;
					runcheck_run(d, &rc);
					for (int q = 0; q < rc.nout; q++)
						cr_expect(rc.out[q].worst_ratio <= 1 && !rc.out[q].nan_mismatch,
							  "%s rows %d len %d split %d: %s at %g of tolerance", gl.gl_pathv[s],
							  rows[r], lens[l], splits[k], rc.out[q].name, rc.out[q].worst_ratio);
					runcheck_free(&rc);
					rundata_free(d);
				}
		spec_carrier_free(c);
	}
	globfree(&gl);
}

/* On an sm_90 device, the Hopper attention template (the rule's for
 * prefill there) against the float64 reference: head dims 64, 128 and
 * 256, causal and not, f16 and bf16, sigmoid attention, fully masked rows,
 * grouped heads, split keys, no keys, lengths off the tile. */
Test(gpu, hopper_attention_on_the_device, .timeout = 600)
{
	if (!real_gpu())
		cr_skip_test("no CUDA device: %s", msg);
	static const struct {
		const char *path, *d;
		int rows, len, heads, kv, split;
	} runs[] = {{"specs/attention.yaml", "64", 130, 300, 1, 1, 1},
		    {"specs/attention.yaml", "128", 200, 4099, 2, 1, 1},
		    {"specs/attention.yaml", "256", 130, 333, 1, 1, 1},
		    {"tests/attention/full_bf16.yaml", "128", 129, 33, 4, 2, 1},
		    {"tests/attention/full_bf16.yaml", "64", 65, 4099, 2, 2, 3},
		    {"tests/attention/full_bf16.yaml", "128", 130, 0, 1, 1, 1},
		    {"tests/attention/causal_bf16.yaml", "128", 1000, 1000, 1, 1, 1},
		    {"specs/sigmoid_attention.yaml", "64", 130, 300, 2, 1, 1},
		    {"tests/attention/empty_rows.yaml", "64", 70, 40, 1, 1, 1},
		    /* e4m3's wgmma sums with fewer bits than the emulator's double */
		    {"tests/attention/fp8_descale.yaml", "128", 300, 4099, 2, 1, 1}};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
		Carrier *c = load_dims(runs[k].path, runs[k].d);
		Gpu g;
		cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
		if (strcmp(g.arch, "sm_90a")) {
			char arch[16];
			snprintf(arch, sizeof arch, "%s", g.arch);
			gpu_close(&g);
			spec_carrier_free(c);
			cr_skip_test("a device of %s: the Hopper template is sm_90a's", arch);
		}
		int v = cuda_pick(&g.m, runs[k].rows * (runs[k].heads / runs[k].kv), runs[k].len, runs[k].split);
		cr_expect_gt(g.m.var[v].wg, 0, "%s d=%s: the rule takes the Hopper template", runs[k].path, runs[k].d);
		gpu_close(&g);
		RunData *d = rundata_new_heads(c, runs[k].rows, runs[k].len, runs[k].heads, runs[k].kv);
		cr_assert_eq(rundata_draw(d, 7, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		RunOpts o = {.split = runs[k].split, .deterministic = 1};
		cr_assert_eq(run_device_find("gpu")->run(d, &o, msg, sizeof msg), 0, "%s: %s", runs[k].path, msg);
		RunCheck rc;
		runcheck_run(d, &rc);
		for (int q = 0; q < rc.nout; q++)
			cr_expect(rc.out[q].worst_ratio <= 1 && !rc.out[q].nan_mismatch,
				  "%s d=%s, %d rows x %d, %d/%d heads, split %d: %s at %g of tolerance", runs[k].path, runs[k].d,
				  runs[k].rows, runs[k].len, runs[k].heads, runs[k].kv, runs[k].split, rc.out[q].name,
				  rc.out[q].worst_ratio);
		runcheck_free(&rc);
		rundata_free(d);
		spec_carrier_free(c);
	}
}

Test(gpu, tune_logs_every_candidate)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char out[16384];
	shell("XDG_CACHE_HOME=$PWD/build/tunecli ASSOC_LIBCUDA=" FAKE " FAKECUDA= build/asan/assoc tune "
	      "specs/logsumexp.yaml --rows 16 --len 4096 2>&1; echo \"exit $?\"",
	      out, sizeof out);
	cr_assert(strstr(out, "on Fake GPU 0 (sm_90a), 16 rows x 4096"), "%s", out);
	cr_assert(strstr(out, "infinity: wrong result: lse off by"), "the fake computes nothing: %s", out);
	cr_assert(strstr(out, "no candidate ran correctly") && strstr(out, "exit 1"), "%s", out);
}

/* The tuning space of the row templates adds blocks of 512 and 1024
 * threads with 4 accumulators, and the model keeps them among the timed
 * candidates for long rows (on the fake each is run, and fails its check). */
Test(gpu, tune_tries_wider_row_blocks)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char out[16384];
	shell("XDG_CACHE_HOME=$PWD/build/tunecli ASSOC_LIBCUDA=" FAKE " FAKECUDA= build/asan/assoc tune "
	      "specs/online_softmax.yaml --rows 1024 --len 32768 2>&1; echo \"exit $?\"", out, sizeof out);
	static const char *want[] = {"rowmap:nt=256,acc=4,vec=4,warp=0,items=0,split=1 ",
				     "rowmap:nt=512,acc=4,vec=4,warp=0,items=0,split=1 ",
				     "rowmap:nt=1024,acc=4,vec=4,warp=0,items=0,split=1 "};
	for (int k = 0; k < 3; k++) {
		const char *at = strstr(out, want[k]);
		cr_expect(at, "%s missing: %s", want[k], out);
		const char *eol = at ? strchr(at, '\n') : NULL;
		cr_expect(at && eol && memmem(at, eol - at, "wrong result", 12), "%s run, not pruned: %s", want[k], out);
	}
}

Test(gpu, auto_falls_back_with_a_reason)
{
	char out[16384];
	shell("ASSOC_LIBCUDA=build/no-such-libcuda.so.1 build/asan/assoc run specs/sum.yaml --rows 2 --len 9 "
	      "2>&1; echo \"exit $?\"", out, sizeof out);
	cr_assert(strstr(out, "gpu device not usable (no CUDA driver"), "%s", out);
	cr_assert(strstr(out, "exit 0"), "the next device runs it: %s", out);
}

/* A variant over the device's shared memory per block is left out of
 * tuning with the reason (head dim 256: 128 query rows take 66 KB). */
Test(gpu, tune_skips_variants_over_the_shared_memory_limit)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char out[16384];
	shell("XDG_CACHE_HOME=$PWD/build/tunecli ASSOC_LIBCUDA=" FAKE " FAKECUDA=optin=49152 build/asan/assoc tune "
	      "specs/attention.yaml -D d=256 -D dv=256 --rows 200 --len 300 2>&1; echo \"exit $?\"", out, sizeof out);
	cr_assert(strstr(out, "attention:nt=256,mt=1,bn=16,pv=1") &&
		  strstr(out, "needs 67584 bytes of shared memory per block; the device allows 49152"), "%s", out);
}

/* A run compiles the variant it takes, alone: nothing at gpu_open, the
 * chosen variant's kernels at gpu_choose, another variant only when it is
 * launched, and each once.  The PTX cache is keyed by the variants a
 * program holds: the same variant comes from it next time, another one
 * does not. */
Test(gpu, a_run_compiles_only_the_variant_it_takes, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	void *lib = dlopen(FAKE, RTLD_NOW);
	int (*entries)(void) = (int (*)(void))dlsym(lib, "fakecuda_entries");
	Carrier *c = load_ok("specs/online_softmax.yaml");
	RunData *d = drawn(c, 3, 100);
	Gpu g;
	int before = entries();
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_gt(g.m.nvar, 2, "online softmax has several default variants");
	cr_expect_eq(entries(), before, "nothing is compiled before a variant is chosen");
	int v, split;
	char why[256], names[3][64];
	cr_assert_eq(gpu_choose(&g, d, &(RunOpts){.deterministic = 1}, &v, &split, why, sizeof why), 0, "%s", why);
	int nk = cuda_kernel_names(&g.m, v, names);
	cr_expect_eq(entries() - before, nk, "the chosen variant's %d kernels alone, of %d variants", nk, g.m.nvar);
	cr_expect_eq(g.compiled, nk);
	cr_expect_eq(g.nmods, 1);
	cr_expect_not(g.ptx_cached, "a fresh cache");
	int w = v == 0 ? 1 : 0, nw = cuda_kernel_names(&g.m, w, names);
	cr_expect_null(g.vmod[w]);
	GpuBufs b;
	cr_assert_eq(gpu_upload(&g, d, &b, msg, sizeof msg), 0, "%s", msg);
	int mid = entries();
	cr_assert_eq(gpu_launch(&g, &b, w, 1, d->rows, d->len, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(entries() - mid, nw, "another variant is compiled when it is launched");
	cr_assert_eq(gpu_launch(&g, &b, w, 1, d->rows, d->len, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(gpu_launch(&g, &b, v, 1, d->rows, d->len, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(entries() - mid, nw, "and once");
	cr_expect_eq(g.nmods, 2);
	gpu_free_bufs(&g, &b);
	gpu_close(&g);
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(gpu_ready(&g, v, msg, sizeof msg), 0, "%s", msg);
	cr_expect(g.ptx_cached, "the variant compiled before comes from the PTX cache");
	gpu_close(&g);
	int u = 0;
	while (u == v || u == w)
		u++;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(gpu_ready(&g, u, msg, sizeof msg), 0, "%s", msg);
	cr_expect_not(g.ptx_cached, "a variant never compiled is not found under another's key");
	cr_expect_neq(gpu_ready(&g, g.m.nvar, msg, sizeof msg), 0);
	cr_expect(strstr(msg, "no variant"), "%s", msg);
	dlclose(lib);
	fake_done(&g, d, c);
}

/* Tuning opens the whole space: every variant is compiled and loaded
 * before the first candidate is timed; under a shared-memory limit the
 * variants past it (ruled out before they are timed) are not compiled. */
Test(gpu, tuning_loads_every_variant_the_device_fits, .timeout = 120)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	void *lib = dlopen(FAKE, RTLD_NOW);
	int (*entries)(void) = (int (*)(void))dlsym(lib, "fakecuda_entries");
	Carrier *c = load_ok("specs/online_softmax.yaml");
	Gpu g;
	int before = entries();
	cr_assert_eq(gpu_open(&g, c, 1, msg, sizeof msg), 0, "%s", msg);
	int kernels = cuda_count(g.m.src, NULL, "extern \"C\" __global__");
	cr_expect_eq(entries() - before, kernels, "the %d kernels of the tuning space", kernels);
	for (int v = 0; v < g.m.nvar; v++)
		cr_expect_not_null(g.vmod[v], "variant %d loaded", v);
	CudaModule def;
	cr_assert_eq(cuda_module_for(c, NULL, "sm_90", 0, &def, msg, sizeof msg), 0, "%s", msg);
	cr_expect_gt(g.m.nvar, def.nvar, "the space holds more than the defaults");
	cuda_module_free(&def);
	gpu_close(&g);
	spec_carrier_free(c);

	setenv("FAKECUDA", "optin=49152", 1);
	c = load_dims("specs/attention.yaml", "256");
	before = entries();
	cr_assert_eq(gpu_open(&g, c, 1, msg, sizeof msg), 0, "%s", msg);
	int fit = 0, unfit = 0, want = 0;
	char seen[64][64];
	for (int v = 0; v < g.m.nvar; v++) {
		char why[160], names[3][64];
		if (cuda_fits(&g.m, v, why, sizeof why)) {
			fit++;
			/* the variants share their split combine */
			for (int k = 0, nk = cuda_kernel_names(&g.m, v, names); k < nk; k++) {
				int dup = 0;
				for (int q = 0; q < want; q++)
					dup |= !strcmp(seen[q], names[k]);
				if (!dup && want < 64)
					strcpy(seen[want++], names[k]);
			}
			cr_expect_not_null(g.vmod[v], "variant %d fits and is loaded", v);
		} else {
			unfit++;
			cr_expect_null(g.vmod[v], "variant %d (%s) is not compiled", v, why);
		}
	}
	cr_expect(fit > 0 && unfit > 0, "head dim 256 under 48 KB: %d variants fit, %d do not", fit, unfit);
	cr_expect_eq(entries() - before, want, "the %d kernels of the %d variants that fit", want, fit);
	setenv("FAKECUDA", "", 1);
	dlclose(lib);
	fake_done(&g, NULL, c);
}

/* bench --device gpu's copy baseline times the driver's copy and the copy
 * kernel, each WARMUP + TIMED times, and its lines name the faster and the
 * nominal bandwidth from the memory's clock and bus width. */
Test(gpu, bench_copy_times_both_copies)
{
	if (!have_nvrtc())
		cr_skip_test("no NVRTC here: %s", msg);
	char dir[] = "build/gpucache.XXXXXX";
	fake_with_cache(dir);
	void *lib = dlopen(FAKE, RTLD_NOW);
	int (*copies)(void) = (int (*)(void))dlsym(lib, "fakecuda_copies");
	int (*launches)(void) = (int (*)(void))dlsym(lib, "fakecuda_launches");
	unsigned (*grid)(void) = (unsigned (*)(void))dlsym(lib, "fakecuda_grid");
	Carrier *c = load_ok("specs/sum.yaml");
	Gpu g;
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	RtPtr src, dst, flush;
	size_t bytes = 1 << 20;
	cr_assert_eq(rt_alloc(g.rt, bytes, &src, msg, sizeof msg) || rt_alloc(g.rt, bytes, &dst, msg, sizeof msg) ||
			     rt_alloc(g.rt, 4096, &flush, msg, sizeof msg),
		     0, "%s", msg);
	int c0 = copies(), l0 = launches();
	GpuCopy t;
	cr_assert_eq(gpu_copy_time(&g, src, dst, bytes, flush, 4096, 3, 11, &t, msg, sizeof msg), 0, "%s", msg);
	cr_expect_eq(copies() - c0, 14, "the driver's copy, 3 warm-up and 11 timed runs");
	cr_expect_eq(launches() - l0, 14, "and the copy kernel's");
	cr_expect_eq(grid(), 256u, "a block for every 256 words of 16 bytes");
	cr_expect_eq(cuda_copy_grid(132, 2048, 1ull << 30), 132u * 2048 / 256, "at most a full wave of blocks");
	cr_expect_eq(cuda_copy_grid(132, 2048, 7), 1u);
	cr_expect_float_eq(t.driver_ms, 0.25, 1e-6);
	cr_expect_float_eq(t.kernel_ms, 0.25, 1e-6);
	cr_expect_float_eq(t.nominal_gbps, 3201e6 * 768 * 2 / 1e9, 1e-6, "%f", t.nominal_gbps);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	t.kernel_ms = 0.2;
	gpu_copy_lines(f, rt_device(g.rt), 2.0 * bytes, &t);
	fclose(f);
	cr_expect(strstr(text, "driver's copy (0.2500 ms)") && strstr(text, "copy kernel (0.2000 ms): 0.2000 ms, 10.5 GB/s"),
		  "%s", text);
	cr_expect(strstr(text, "nominal 4916.7 GB/s (3201 MHz x 6144 bits x 2, from the driver)"), "%s", text);
	free(text);
	rt_free(g.rt, src);
	rt_free(g.rt, dst);
	rt_free(g.rt, flush);
	gpu_close(&g);
	setenv("FAKECUDA", "memclock=0", 1);
	cr_assert_eq(gpu_open(&g, c, 0, msg, sizeof msg), 0, "%s", msg);
	t.nominal_gbps = rt_nominal_gbps(rt_device(g.rt));
	cr_expect_float_eq(t.nominal_gbps, 0, 1e-9);
	f = open_memstream(&text, &len);
	gpu_copy_lines(f, rt_device(g.rt), 2.0 * bytes, &t);
	fclose(f);
	cr_expect(strstr(text, "nominal bandwidth not known"), "%s", text);
	free(text);
	dlclose(lib);
	fake_done(&g, NULL, c);
}
