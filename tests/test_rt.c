/* test_rt.c: the CUDA driver layer against a fake driver that fails on
 * demand (tests/fake/fakecuda.c), and against the toolkit's stub library. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/driver.h"
#include "testutil.h"

#define FAKE "build/libfakecuda.so"

static char err[16384];

static Rt *open_fake(const char *behaviour)
{
	setenv("FAKECUDA", behaviour, 1);
	Rt *rt;
	int rc = rt_open(&rt, FAKE, 0, err, sizeof err);
	cr_assert_eq(rc, RT_OK, "%s", err);
	return rt;
}

static const char ptx[] = "//\n.version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";

Test(rt, no_driver_library)
{
	Rt *rt;
	cr_assert_eq(rt_open(&rt, "build/no-such-libcuda.so", 0, err, sizeof err), RT_NO_LIBRARY);
	cr_assert_null(rt);
	cr_assert(strstr(err, "no CUDA driver: cannot load build/no-such-libcuda.so"), "%s", err);
}

Test(rt, toolkit_stub_library)
{
	const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
	if (access(stub, R_OK))
		cr_skip_test("no CUDA toolkit stub library here");
	Rt *rt;
	cr_assert_eq(rt_open(&rt, stub, 0, err, sizeof err), RT_STUB, "%s", err);
	cr_assert(strstr(err, "stub library, not a driver"), "%s", err);
}

Test(rt, stub_reported_by_cuinit)
{
	setenv("FAKECUDA", "init=34", 1);
	Rt *rt;
	cr_assert_eq(rt_open(&rt, FAKE, 0, err, sizeof err), RT_STUB);
	cr_assert(strstr(err, "stub library"), "%s", err);
}

Test(rt, no_device)
{
	setenv("FAKECUDA", "init=100", 1);
	Rt *rt;
	cr_assert_eq(rt_open(&rt, FAKE, 0, err, sizeof err), RT_NO_DEVICE);
	cr_assert(strstr(err, "found no GPU"), "%s", err);
	setenv("FAKECUDA", "count=0", 1);
	cr_assert_eq(rt_open(&rt, FAKE, 0, err, sizeof err), RT_NO_DEVICE);
	cr_assert(strstr(err, "no CUDA device 0 (the driver sees 0)"), "%s", err);
}

Test(rt, device_properties)
{
	Rt *rt = open_fake("driver=12040");
	const RtDevice *d = rt_device(rt);
	cr_assert_str_eq(d->name, "Fake GPU 0");
	cr_assert_eq(d->major * 10 + d->minor, 90);
	cr_assert_eq(d->sms, 132);
	cr_assert_eq(d->driver, 12040);
	cr_assert_eq(d->l2_bytes, 50 << 20);
	cr_assert_eq(d->mem_clock_khz, 3201000);
	cr_assert_eq(d->mem_bus_bits, 6144);
	/* 3201 MHz, double data rate, 768 bytes a transfer */
	cr_assert_float_eq(rt_nominal_gbps(d), 3201e6 * 2 * 768 / 1e9, 1e-6);
	rt_close(rt);
	rt = open_fake("memclock=0");
	cr_assert_float_eq(rt_nominal_gbps(rt_device(rt)), 0, 1e-12, "no clock, no nominal bandwidth");
	rt_close(rt);
}

static int enqueue_nothing(void *ctx, char *err, size_t n)
{
	(void)ctx, (void)err, (void)n;
	return 0;
}

/* What fails inside a timed region says why through rt_time's message. */
static int enqueue_failing(void *ctx, char *err, size_t n)
{
	(void)ctx;
	snprintf(err, n, "cuLaunchKernel refused the launch");
	return RT_ERR;
}

Test(rt, memory_round_trip_and_launch)
{
	Rt *rt = open_fake("");
	RtPtr p;
	cr_assert_eq(rt_alloc(rt, 64, &p, err, sizeof err), 0, "%s", err);
	char in[64], out[64];
	for (int i = 0; i < 64; i++)
		in[i] = (char)i;
	cr_assert_eq(rt_upload(rt, p, in, 64, err, sizeof err), 0);
	cr_assert_eq(rt_download(rt, out, p, 64, err, sizeof err), 0);
	cr_assert_arr_eq(in, out, 64);
	RtModule *m;
	cr_assert_eq(rt_load_ptx(rt, ptx, &m, err, sizeof err), 0, "%s", err);
	void *fn;
	cr_assert_eq(rt_function(rt, m, "k", &fn, err, sizeof err), 0);
	cr_assert_eq(rt_function(rt, m, "missing", &fn, err, sizeof err), RT_ERR);
	cr_assert(strstr(err, "cuModuleGetFunction") && strstr(err, "CUDA_ERROR_NOT_FOUND"), "%s", err);
	cr_assert(strstr(err, "runtime/driver.c:"), "the error names the source line: %s", err);
	unsigned g[3] = {1, 1, 1}, b[3] = {32, 1, 1};
	cr_assert_eq(rt_launch(rt, fn, g, b, 0, NULL, err, sizeof err), 0);
	float ms;
	cr_assert_eq(rt_time(rt, enqueue_nothing, NULL, &ms, err, sizeof err), RT_OK, "%s", err);
	err[0] = 0;
	cr_assert_eq(rt_time(rt, enqueue_failing, NULL, &ms, err, sizeof err), RT_ERR);
	cr_assert_str_eq(err, "cuLaunchKernel refused the launch");
	cr_assert_float_eq(ms, 0.25f, 1e-6, "the fake's event time");
	rt_unload(rt, m);
	rt_free(rt, p);
	rt_close(rt);
}

Test(rt, jit_log_in_error)
{
	Rt *rt = open_fake("");
	RtModule *m;
	cr_assert_eq(rt_load_ptx(rt, ".version 9.0\n.target sm_90\n", &m, err, sizeof err), RT_ERR);
	cr_assert(strstr(err, "CUDA_ERROR_INVALID_PTX") && strstr(err, "JIT log:\nptxas application ptx input"), "%s",
		  err);
	rt_close(rt);
}

Test(rt, old_driver_retries_with_older_isa)
{
	Rt *rt = open_fake("driver=12040,ptx_max=8.4");
	RtModule *m;
	cr_assert_eq(rt_load_ptx(rt, ptx, &m, err, sizeof err), RT_OK, "retried at ISA 8.4: %s", err);
	rt_unload(rt, m);
	rt_close(rt);
	rt = open_fake("driver=12040,ptx_max=7.0");
	cr_assert_eq(rt_load_ptx(rt, ptx, &m, err, sizeof err), RT_OLD_DRIVER);
	cr_assert(strstr(err, "too old for this PTX, even at ISA 8.4") && strstr(err, "update the NVIDIA driver"), "%s", err);
	cr_assert(strstr(err, "Unsupported .version"), "the JIT log is kept: %s", err);
	rt_close(rt);
	/* the retry at the older ISA fails for a reason of its own: that reason is told, not the driver's age */
	rt = open_fake("driver=12040,ptx_max=8.4");
	cr_assert_eq(rt_load_ptx(rt, "//\n.version 9.0\n.target sm_90\n", &m, err, sizeof err), RT_ERR);
	cr_assert(strstr(err, "cuModuleLoadDataEx") && strstr(err, "no kernel") && !strstr(err, "too old"), "%s", err);
	rt_close(rt);
}

/* Out of memory fails the one allocation: the earlier ones stay valid for
 * their holders (a tuner goes on timing other candidates in them) until
 * freed, and the context stays usable. */
Test(rt, out_of_memory_keeps_earlier_allocations)
{
	void *lib = dlopen(FAKE, RTLD_NOW);
	int (*live)(void) = (int (*)(void))dlsym(lib, "fakecuda_live");
	Rt *rt = open_fake("oom_after=4");
	int before = live();
	RtPtr p[3], q;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(rt_alloc(rt, 1024, &p[i], err, sizeof err), 0);
	cr_assert_eq(live(), before + 3);
	cr_assert_eq(rt_alloc(rt, 1 << 20, &q, err, sizeof err), RT_OOM);
	cr_assert(strstr(err, "CUDA_ERROR_OUT_OF_MEMORY"), "%s", err);
	cr_assert_eq(live(), before + 3, "the three earlier allocations are still there");
	cr_assert(rt_usable(rt), "out of memory is not sticky");
	char host[1024] = {1};
	cr_assert_eq(rt_upload(rt, p[2], host, sizeof host, err, sizeof err), 0, "%s", err);
	for (int i = 0; i < 3; i++)
		rt_free(rt, p[i]);
	cr_assert_eq(live(), before);
	rt_close(rt);
	dlclose(lib);
}

Test(rt, sticky_fault_fails_fast)
{
	Rt *rt = open_fake("sync=700");
	unsigned g[3] = {1, 1, 1}, b[3] = {32, 1, 1};
	cr_assert_eq(rt_launch(rt, (void *)"k", g, b, 0, NULL, err, sizeof err), 0);
	cr_assert_eq(rt_sync(rt, err, sizeof err), RT_FAULT);
	cr_assert(strstr(err, "CUDA_ERROR_ILLEGAL_ADDRESS"), "%s", err);
	cr_assert_not(rt_usable(rt));
	RtPtr p;
	cr_assert_eq(rt_alloc(rt, 16, &p, err, sizeof err), RT_FAULT);
	cr_assert(strstr(err, "unusable after an earlier kernel fault") && strstr(err, "ILLEGAL_ADDRESS"), "%s", err);
	cr_assert_eq(rt_launch(rt, (void *)"k", g, b, 0, NULL, err, sizeof err), RT_FAULT);
	rt_close(rt);
}

/* Which failures end the context, per cuda.h: a launch timeout (702), a
 * device assert (710), the kernel faults 714-719, an external device's
 * fault (911) and an uncorrectable ECC error (214) do; peer access and
 * host registration errors (711-713) are the call's alone. */
Test(rt, sticky_codes_are_the_drivers)
{
	static const struct {
		const char *sync;
		int sticky;
	} t[] = {{"sync=702", 1}, {"sync=710", 1}, {"sync=714", 1}, {"sync=719", 1}, {"sync=911", 1},
		 {"sync=214", 1}, {"sync=711", 0}, {"sync=712", 0}, {"sync=713", 0}, {"sync=1", 0}};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		Rt *rt = open_fake(t[i].sync);
		cr_expect_eq(rt_sync(rt, err, sizeof err), t[i].sticky ? RT_FAULT : RT_ERR, "%s", t[i].sync);
		cr_expect_eq(rt_usable(rt), !t[i].sticky, "%s", t[i].sync);
		rt_close(rt);
	}
}

Test(rt, ptx_isa_table)
{
	cr_assert_str_eq(rt_ptx_isa_for_driver(13000), "9.0");
	cr_assert_str_eq(rt_ptx_isa_for_driver(12040), "8.4");
	cr_assert_str_eq(rt_ptx_isa_for_driver(12060), "8.5");
	cr_assert_str_eq(rt_ptx_isa_for_driver(11080), "7.8");
}

/* A launch in clusters goes through cuLaunchKernelEx with the cluster's
 * dimension; over 8 blocks the function first allows non-portable sizes;
 * a grid of part of a cluster is refused before any launch; a driver
 * without cuLaunchKernelEx has no clusters and says so. */
Test(rt, cluster_launches)
{
	void *lib = dlopen(FAKE, RTLD_NOW);
	void (*cluster)(unsigned *, int *) = (void (*)(unsigned *, int *))dlsym(lib, "fakecuda_cluster");
	cr_assert(cluster);
	Rt *rt = open_fake("");
	cr_assert(rt_has_clusters(rt), "the fake is sm_90 with cuLaunchKernelEx");
	unsigned g[3] = {12, 1, 1}, b[3] = {128, 1, 1}, dims[3];
	int np;
	cr_assert_eq(rt_launch_cluster(rt, (void *)"k", g, b, 0, 4, NULL, err, sizeof err), 0, "%s", err);
	cluster(dims, &np);
	cr_expect(dims[0] == 4 && dims[1] == 1 && dims[2] == 1 && !np, "%u %u %u, %d", dims[0], dims[1], dims[2], np);
	cr_assert_eq(rt_launch_cluster(rt, (void *)"k", g, b, 0, 1, NULL, err, sizeof err), 0, "%s", err);
	cluster(dims, &np);
	cr_expect_eq(dims[0], 0, "a cluster of one: a plain launch");
	g[0] = 32;
	cr_assert_eq(rt_launch_cluster(rt, (void *)"k", g, b, 0, 16, NULL, err, sizeof err), 0, "%s", err);
	cluster(dims, &np);
	cr_expect(dims[0] == 16 && np, "16 blocks, non-portable sizes allowed: %u, %d", dims[0], np);
	g[0] = 30;
	cr_assert_eq(rt_launch_cluster(rt, (void *)"k", g, b, 0, 16, NULL, err, sizeof err), RT_ERR);
	cr_expect(strstr(err, "a grid of 30 blocks is not a whole number of clusters of 16"), "%s", err);
	rt_close(rt);
	dlclose(lib);
	setenv("FAKECUDA", "", 1);
	cr_assert_eq(rt_open(&rt, "build/libfakecuda-old.so", 0, err, sizeof err), RT_OK, "%s", err);
	cr_expect(!rt_has_clusters(rt));
	g[0] = 8;
	cr_assert_eq(rt_launch_cluster(rt, (void *)"k", g, b, 0, 2, NULL, err, sizeof err), RT_OLD_DRIVER);
	cr_expect(strstr(err, "cuLaunchKernelEx, which the CUDA driver library lacks"), "%s", err);
	rt_close(rt);
}

/* A module loaded after another's unload may give its kernel the freed
 * kernel's address (the fake gives it): the new kernel has not allowed
 * non-portable cluster sizes, so a cluster of 16 allows them again rather
 * than being refused as a grant of the unloaded one. */
Test(rt, cluster_grant_ends_with_its_module)
{
	Rt *rt = open_fake("");
	RtModule *a, *b;
	void *fa, *fb;
	unsigned g[3] = {32, 1, 1}, bl[3] = {128, 1, 1};
	cr_assert_eq(rt_load_ptx(rt, ptx, &a, err, sizeof err), 0, "%s", err);
	cr_assert_eq(rt_function(rt, a, "k", &fa, err, sizeof err), 0, "%s", err);
	cr_assert_eq(rt_launch_cluster(rt, fa, g, bl, 0, 16, NULL, err, sizeof err), 0, "%s", err);
	rt_unload(rt, a);
	cr_assert_eq(rt_load_ptx(rt, ptx, &b, err, sizeof err), 0, "%s", err);
	cr_assert_eq(rt_function(rt, b, "k", &fb, err, sizeof err), 0, "%s", err);
	cr_assert_eq(fb, fa, "the fake reuses the freed handle");
	cr_assert_eq(rt_launch_cluster(rt, fb, g, bl, 0, 16, NULL, err, sizeof err), 0, "%s", err);
	/* and the unloaded one's handle is no function to launch */
	rt_unload(rt, b);
	cr_assert_eq(rt_launch(rt, fb, g, bl, 0, NULL, err, sizeof err), RT_ERR);
	cr_assert(strstr(err, "CUDA_ERROR_INVALID_HANDLE"), "%s", err);
	rt_close(rt);
}

/* rt_probe finds the driver and the device and says why not as rt_open
 * does, with no context: the primary one is neither created nor reset,
 * and the thread's current one stays.  rt_open_aside retains the primary
 * context without making it current; rt_open makes it current. */
Test(rt, probe_and_aside_leave_the_current_context)
{
	void *lib = dlopen(FAKE, RTLD_NOW);
	void (*primary)(int *, int *) = (void (*)(int *, int *))dlsym(lib, "fakecuda_primary");
	int (*set_ctx)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
	int (*get_ctx)(void **) = (int (*)(void **))dlsym(lib, "cuCtxGetCurrent");
	cr_assert(primary && set_ctx && get_ctx);
	int refs, made;
	void *cur;
	setenv("FAKECUDA", "", 1);
	set_ctx((void *)0x77);
	cr_assert_eq(rt_probe(FAKE, 0, err, sizeof err), RT_OK, "%s", err);
	primary(&refs, &made);
	get_ctx(&cur);
	cr_expect(refs == 0 && made == 0, "the probe made no context: %d references, %d made", refs, made);
	cr_expect_eq(cur, (void *)0x77);
	cr_assert_eq(rt_probe(FAKE, 1, err, sizeof err), RT_NO_DEVICE);
	cr_assert(strstr(err, "no CUDA device 1 (the driver sees 1)"), "%s", err);
	setenv("FAKECUDA", "init=100", 1);
	cr_assert_eq(rt_probe(FAKE, 0, err, sizeof err), RT_NO_DEVICE);
	cr_assert_eq(rt_probe("build/no-such-libcuda.so", 0, err, sizeof err), RT_NO_LIBRARY);
	setenv("FAKECUDA", "", 1);
	Rt *rt;
	cr_assert_eq(rt_open_aside(&rt, FAKE, 0, err, sizeof err), RT_OK, "%s", err);
	primary(&refs, &made);
	get_ctx(&cur);
	cr_expect(refs == 1 && made == 1, "%d references, %d made", refs, made);
	cr_expect_eq(cur, (void *)0x77, "the caller's context is still current");
	cr_assert_eq(rt_get_ctx(rt, &cur, err, sizeof err), 0, "%s", err);
	cr_expect_eq(cur, (void *)0x77);
	Rt *cli;
	cr_assert_eq(rt_open(&cli, FAKE, 0, err, sizeof err), RT_OK, "%s", err);
	get_ctx(&cur);
	cr_expect_eq(cur, rt_primary_ctx(cli), "rt_open makes the primary context current");
	rt_close(cli);
	rt_close(rt);
	primary(&refs, &made);
	cr_expect(refs == 0 && made == 1, "created once: %d references, %d made", refs, made);
	dlclose(lib);
}

/* Dynamic shared memory: up to 48 KB a launch takes it as is; over that the
 * function opts in first (once while it keeps the grant), up to the
 * device's limit; a driver without cuFuncSetAttribute says so. */
Test(rt, dynamic_shared_memory_over_48_kb)
{
	void *lib = dlopen(FAKE, RTLD_NOW);
	void (*smem)(unsigned *, int *, int *) = (void (*)(unsigned *, int *, int *))dlsym(lib, "fakecuda_smem");
	Rt *rt = open_fake("optin=102400");
	unsigned g[3] = {1, 1, 1}, b[3] = {128, 1, 1}, launch;
	int grant, grants, before;
	smem(&launch, &grant, &before);
	cr_assert_eq(rt_launch(rt, (void *)"k", g, b, 48 * 1024, NULL, err, sizeof err), 0, "%s", err);
	smem(&launch, &grant, &grants);
	cr_assert_eq(launch, 48 * 1024);
	cr_assert_eq(grants, before, "no opt-in at 48 KB");
	cr_assert_eq(rt_launch(rt, (void *)"k", g, b, 69632, NULL, err, sizeof err), 0, "%s", err);
	smem(&launch, &grant, &grants);
	cr_assert_eq(launch, 69632);
	cr_assert_eq(grant, 69632, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, 69632)");
	cr_assert_eq(grants, before + 1);
	cr_assert_eq(rt_launch(rt, (void *)"k", g, b, 69632, NULL, err, sizeof err), 0, "%s", err);
	smem(&launch, &grant, &grants);
	cr_assert_eq(grants, before + 1, "the grant is kept for the same function");
	cr_assert_eq(rt_launch(rt, (void *)"k", g, b, 102401, NULL, err, sizeof err), RT_ERR);
	cr_assert(strstr(err, "102401 bytes of dynamic shared memory; Fake GPU 0 allows at most 102400 per block"), "%s",
		  err);
	cr_assert(rt_usable(rt));
	rt_close(rt);
	/* a kernel with 4 KB of static shared memory: the limit holds both,
	 * refused with the reason before the driver's bare invalid value */
	rt = open_fake("optin=102400,static=4096");
	cr_assert_eq(rt_launch(rt, (void *)"k2", g, b, 98304, NULL, err, sizeof err), 0, "%s", err);
	cr_assert_eq(rt_launch(rt, (void *)"k3", g, b, 98305, NULL, err, sizeof err), RT_ERR);
	cr_assert(strstr(err, "98305 bytes of dynamic shared memory beside the kernel's 4096 bytes of static shared "
			      "memory; Fake GPU 0 allows at most 102400 per block"), "%s", err);
	rt_close(rt);
	dlclose(lib);
	setenv("FAKECUDA", "", 1);
	cr_assert_eq(rt_open(&rt, "build/libfakecuda-old.so", 0, err, sizeof err), RT_OK, "%s", err);
	cr_assert_eq(rt_launch(rt, (void *)"k", g, b, 40 * 1024, NULL, err, sizeof err), 0, "%s", err);
	cr_assert_eq(rt_launch(rt, (void *)"k", g, b, 69632, NULL, err, sizeof err), RT_OLD_DRIVER);
	cr_assert(strstr(err, "lacks cuFuncSetAttribute") && strstr(err, "69632 bytes of dynamic shared memory"), "%s", err);
	rt_close(rt);
}
