/* test_cpuhost.c: the CPU backend compiled for CPUs other than the host
 * (ASSOC_CPU, compiler/llvm/llvm_target.c): the AVX2 paths (haswell: 8
 * lanes, FMA, F16C) and the SSE ones (x86-64-v2: 4 lanes, no AVX) that
 * hosts without AVX-512 run, each against the float64 reference at odd
 * shapes; the code really for that CPU; and the names refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/devices/paged.h"
#include "compiler/devices/run.h"
#include "compiler/llvm/llvm.h"
#include "compiler/llvm/llvm_int.h"
#include "cputest.h"
#include "mathtest.h"
#include "testutil.h"

extern const Device dev_cpu; /* a strong reference links the device in */

/* Compile for cpu from here on, or skip where this host cannot run its code. */
static void target(const char *cpu)
{
	setenv("ASSOC_CPU", cpu, 1);
	CpuTarget t;
	char msg[600];
	if (cpu_target(&t, msg, sizeof msg) && strstr(msg, " lacks "))
		cr_skip_test("%s", msg);
	cr_assert(t.cpu, "%s", msg);
	cr_assert(t.named && !strcmp(t.cpu, cpu));
	cpu_target_free(&t);
}


/* Rows 1 and 2 of d's first float32 element input: -inf at every third
 * position and a NaN, then a +inf (the paths that guard the rescale). */
static void special_rows(RunData *d, int len)
{
	if (len < 4 || d->rows < 3 || d->c->nelem < 1 || d->c->elem[0].ty.kind != TY_F32 || d->c->elem[0].ty.len)
		return;
	float *x = d->elem[0].p;
	for (int j = 0; j < len; j += 3)
		x[(size_t)len + j] = -INFINITY;
	x[(size_t)len + len / 2] = NAN;
	x[(size_t)2 * len + len / 3] = INFINITY;
}

static const int LENS[] = {0, 1, 17, 257, 1000};

/* c compiled for the target, on 1 and 3 rows of every length in LENS,
 * with and without a forced split, against the reference; special adds
 * infinities and a NaN to the 3-row runs.  The kernel, which the caller
 * frees, says which paths ran. */
static LlvmKernel *rows_ok(Carrier *c, const LlvmOpts *o, int special, const char *what)
{
	LlvmKernel *k = compiled(c, o);
	RtPool *p;
	char msg[300];
	cr_assert_eq(rt_pool_open(&p, 2, msg, sizeof msg), 0, "%s", msg);
	int n = 0;
	for (int rows = 1; rows <= 3; rows += 2)
		for (size_t l = 0; l < sizeof LENS / sizeof *LENS; l++, n++) {
			RunData *d = rundata_new(c, rows, LENS[l]);
			cr_assert_eq(rundata_draw(d, 3 + n, NULL, 0, msg, sizeof msg), 0, "%s", msg);
			if (special)
				special_rows(d, LENS[l]);
			const void *in[64];
			void *out[64];
			CpuArgs a;
			cpu_args(d, &a, in, out);
			cr_assert_eq(rt_cpu_run(p, &k->k, &a, 1, n % 2 ? 3 : 0, msg, sizeof msg), 0, "%s", msg);
			char w[200];
			snprintf(w, sizeof w, "%s for %s: %d rows x %d", what, getenv("ASSOC_CPU"), rows, LENS[l]);
			expect_ok(d, w);
			rundata_free(d);
		}
	rt_pool_close(p);
	return k;
}

static void spec_rows_ok(const char *path, int special)
{
	Carrier *c = load_ok(path);
	LlvmKernel *k = rows_ok(c, NULL, special, path);
	cr_expect_str_eq(k->target, getenv("ASSOC_CPU"), "the kernel says what it was compiled for");
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* lanes: the float32 lanes the CPU's widest vectors hold */
static void row_carriers(const char *cpu, int lanes)
{
	target(cpu);
	static const char *specs[] = {"specs/online_softmax.yaml", "specs/logsumexp.yaml", "specs/welford.yaml",
				      "specs/layer_norm.yaml", "specs/cross_entropy.yaml",
				      "specs/nan_aware_stats.yaml", "specs/argmax.yaml"};
	for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
		spec_rows_ok(specs[s], strstr(specs[s], "softmax") || strstr(specs[s], "logsumexp") ||
					       strstr(specs[s], "nan_aware"));
	Carrier *c = load_ok("specs/logsumexp.yaml");
	LlvmKernel *k = compiled(c, NULL);
	cr_expect_eq(k->lanes, lanes, "%s: the lanes of its widest vector", cpu);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* Top-k lists: MoE routing (without AVX-512 VBMI2 its candidates are not
 * compressed, reduce_selected is not built) and a list beside lanes. */
static void topk(const char *cpu)
{
	target(cpu);
	spec_rows_ok("specs/moe_topk_routing.yaml", 1);
	Carrier *c = load_ok("specs/moe_topk_routing.yaml");
	cr_expect(!kern_selects(c), "%s: no selected candidates without AVX-512", cpu);
	spec_carrier_free(c);
	c = load_ok("tests/rows/topk_beside_lanes.yaml");
	LlvmKernel *k = rows_ok(c, NULL, 0, "topk beside lanes");
	cr_expect_gt(k->lanes, 1, "%s: the softmax in lanes beside the list", cpu);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* A merge that does not commute folds in ordered lanes (the AVX-512 hosts
 * load 16 x 16 blocks half transposed; these load their own widths). */
static void ordered(const char *cpu)
{
	target(cpu);
	Carrier *c = load_ok("bench/carriers/argmax_first.yaml");
	LlvmKernel *k = rows_ok(c, NULL, 1, "argmax_first");
	cr_expect_eq(k->lanes, 1, "%s: no commutative lanes", cpu);
	cr_expect_gt(k->ordered, 1, "%s: ordered lanes", cpu);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

static void scans(const char *cpu)
{
	target(cpu);
	spec_rows_ok("specs/linear_recurrence.yaml", 0);
	spec_rows_ok("specs/selective_scan.yaml", 0);
}

/* Causal attention, f16 inputs at d = 64, grouped heads, through the
 * device (rows side by side as lanes, tiles of keys); the shape of no
 * keys included. */
static void attention(const char *cpu)
{
	target(cpu);
	Carrier *c = load_ok("specs/attention.yaml");
	static const int shape[][4] = {{17, 17, 4, 2}, {3, 257, 2, 1}, {1, 0, 2, 1}, {33, 100, 3, 3}};
	for (size_t s = 0; s < sizeof shape / sizeof *shape; s++) {
		RunData *d = rundata_new_heads(c, shape[s][0], shape[s][1], shape[s][2], shape[s][3]);
		char msg[300];
		cr_assert_eq(rundata_draw(d, 5 + s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(dev_cpu.run(d, &(RunOpts){.threads = 2, .split = s % 2 ? 3 : 0}, msg, sizeof msg), 0,
			     "%s", msg);
		char what[100];
		snprintf(what, sizeof what, "attention for %s: %d rows x %d keys, %d/%d heads", cpu, shape[s][0],
			 shape[s][1], shape[s][2], shape[s][3]);
		expect_ok(d, what);
		rundata_free(d);
	}
	spec_carrier_free(c);
}

/* Decoding: one query row a head, its key/value head's query heads side
 * by side, keys in chunks; contiguous and read in place from pages. */
static void decoding(const char *cpu)
{
	target(cpu);
	Carrier *c = load_ok("tests/attention/full.yaml");
	static const int shape[][3] = {{1000, 8, 2}, {257, 4, 1}, {17, 2, 2}};
	for (size_t s = 0; s < sizeof shape / sizeof *shape; s++) {
		RunData *d = rundata_new_heads(c, 1, shape[s][0], shape[s][1], shape[s][2]);
		char msg[300];
		cr_assert_eq(rundata_draw(d, 9 + s, NULL, 0, msg, sizeof msg), 0, "%s", msg);
		cr_assert_eq(dev_cpu.run(d, &(RunOpts){.threads = 2, .split = s ? 0 : 4}, msg, sizeof msg), 0, "%s", msg);
		char what[100];
		snprintf(what, sizeof what, "decoding for %s: %d keys, %d/%d heads", cpu, shape[s][0], shape[s][1],
			 shape[s][2]);
		expect_ok(d, what);
		rundata_free(d);
	}
	char msg[512];
	Paged *p = paged_drawn(c, 8, 2, 3, 1, 1000, 32, 11, NULL, 0, msg, sizeof msg);
	cr_assert(p, "%s", msg);
	RunCheck rc;
	cr_assert_eq(paged_run(p, &dev_cpu, &(RunOpts){.threads = 2, .split = 4}, &rc, NULL, msg, sizeof msg), 0, "%s",
		     msg);
	for (int k = 0; k < rc.nout; k++)
		cr_expect(rc.out[k].worst_ratio <= 1 && !rc.out[k].nan_mismatch,
			  "paged decoding for %s: %s at %.3g of tolerance, %d NaN mismatches", cpu, rc.out[k].name,
			  rc.out[k].worst_ratio, rc.out[k].nan_mismatch);
	runcheck_free(&rc);
	paged_free(p);
	spec_carrier_free(c);
}

/* exp, exp2, log, expm1, log1p and tanh by the portable paths, within
 * the bounds of compiler/llvm/llvm_math.c: with FMA (haswell) and without
 * (x86-64-v2, where each fused step is a multiply and an add), in the
 * CPU's lanes. */
static void math(const char *cpu)
{
	target(cpu);
	static const struct {
		int op;
		double (*ref)(double);
		const char *name;
		double bound;
	} fs[] = {{EXPR_EXP, exp, "exp", 1.5},       {EXPR_EXP2, exp2, "exp2", 1.5},     {EXPR_LOG, log, "log", 1.5},
		  {EXPR_EXPM1, expm1, "expm1", 2}, {EXPR_LOG1P, log1p, "log1p", 2}, {EXPR_TANH, tanh, "tanh", 2}};
	for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) {
		Err e = sweep(fs[i].op, 0, 127, fs[i].ref);
		cr_log_info("%s for %s: worst %.3f ulp at %a", fs[i].name, cpu, e.worst, e.at);
		cr_expect_leq(e.worst, fs[i].bound, "%s for %s: %.3f ulp at %a", fs[i].name, cpu, e.worst, e.at);
	}
}

/* The assembly `emit --target asm` prints for c. */
static char *assembly(Carrier *c)
{
	char *text = NULL, msg[600];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert(f);
	cr_assert_eq(llvm_emit(c, NULL, 1, f, msg, sizeof msg), 0, "%s", msg);
	fclose(f);
	return text;
}

#define HOST_TESTS(name, cpu, lanes) \
	Test(cpuhost, name##_row_carriers, .timeout = 120) { row_carriers(cpu, lanes); } \
	Test(cpuhost, name##_topk, .timeout = 120) { topk(cpu); } \
	Test(cpuhost, name##_ordered_lanes, .timeout = 120) { ordered(cpu); } \
	Test(cpuhost, name##_scans, .timeout = 120) { scans(cpu); } \
	Test(cpuhost, name##_causal_f16_attention, .timeout = 120) { attention(cpu); } \
	Test(cpuhost, name##_decoding, .timeout = 120) { decoding(cpu); } \
	Test(cpuhost, name##_math, .timeout = 120) { math(cpu); }

HOST_TESTS(haswell, "haswell", 8)
HOST_TESTS(x86_64_v2, "x86-64-v2", 4)

/* The code is for the named CPU: AVX2 registers (ymm) but no AVX-512 ones
 * (zmm) for haswell, with F16C's conversions for f16 inputs; neither for
 * x86-64-v2, whose f16 loads convert without F16C.  (A sum of f16
 * elements: attention's assembly takes seconds to build under the
 * sanitizers.) */
Test(cpuhost, code_is_for_the_named_cpu)
{
	Carrier *c = text_ok("carrier: half_sum\nelement: {x: f16}\nstate: {s: f32}\nidentity: {s: 0}\n"
			     "lift: {s: x}\nmerge: {s: a.s + b.s}\n");
	target("haswell");
	char *a = assembly(c);
	cr_expect(strstr(a, "%ymm"), "haswell: AVX2 registers");
	cr_expect(!strstr(a, "%zmm"), "haswell: no AVX-512 registers");
	cr_expect(strstr(a, "vcvtph2ps"), "haswell: F16C converts the f16 inputs");
	free(a);
	target("x86-64-v2");
	a = assembly(c);
	cr_expect(!strstr(a, "%ymm") && !strstr(a, "%zmm"), "x86-64-v2: no AVX registers");
	cr_expect(!strstr(a, "vcvtph2ps"), "x86-64-v2: no F16C");
	cr_expect(strstr(a, "%xmm"), "x86-64-v2: SSE registers");
	free(a);
	spec_carrier_free(c);
}

/* A scan in vectors moves its lanes up over the identity; over zeros (a
 * sum's, y = a*y + x's) LLVM would take vexpandps and vexpandpd, which a
 * Zen 5 core runs at a third of the speed of the two-source permutes it
 * takes for any other fill (docs/performance.md).  The scan's code holds
 * none; the lanes still move (vpermt2ps). */
Test(cpuhost, scan_lanes_move_up_without_expands)
{
	Carrier *c = load_ok("specs/linear_recurrence.yaml");
	target("skylake-avx512");
	char *a = assembly(c), *scan = strstr(a, "assoc_scan:");
	cr_assert(scan, "an assoc_scan function");
	cr_expect(!strstr(scan, "vexpand"), "no expands in the scan");
	cr_expect(strstr(scan, "vpermt2p"), "lanes moved by permutes");
	free(a);
	spec_carrier_free(c);
}

/* A kernel built for one CPU is kept apart from the host's in the cache:
 * two objects, each loaded for its own CPU. */
Test(cpuhost, cache_keeps_each_cpu_apart)
{
	char dir[] = "/tmp/assoc-cpuhost-XXXXXX";
	test_tmpdir(dir);
	test_xdg_cache(dir);
	unsetenv("ASSOC_NO_CPU_CACHE");
	Carrier *c = load_ok("specs/online_softmax.yaml");
	unsetenv("ASSOC_CPU");
	LlvmKernel *k = compiled(c, NULL);
	cr_expect_str_eq(k->target, "", "the host's kernel names no target");
	llvm_kernel_free(k);
	target("x86-64-v2");
	llvm_kernel_free(compiled(c, NULL));
	char cmd[200], out[64];
	snprintf(cmd, sizeof cmd, "ls %s/assoc/cpu/*.o | wc -l", dir);
	cr_assert_eq(sh(cmd, out, sizeof out, 0), 0);
	cr_expect_eq(atoi(out), 2, "one object for each CPU, not one for both");
	k = compiled(c, NULL); /* from the cache, for x86-64-v2 */
	cr_expect_eq(k->lanes, 4);
	llvm_kernel_free(k);
	spec_carrier_free(c);
}

/* ASSOC_CPU that names no CPU, or one with features this host lacks, is
 * refused with the reason, before any code is built. */
static void refused(const char *cpu, const char *says)
{
	setenv("ASSOC_CPU", cpu, 1);
	Carrier *c = load_ok("specs/sum.yaml");
	LlvmKernel *k = NULL;
	char msg[600] = "";
	cr_expect_neq(llvm_compile(c, NULL, &k, msg, sizeof msg), 0, "ASSOC_CPU=%s", cpu);
	cr_expect_null(k);
	cr_expect(strstr(msg, says), "ASSOC_CPU=%s: \"%s\" in \"%s\"", cpu, says, msg);
	FILE *f = tmpfile();
	cr_expect_neq(llvm_emit(c, NULL, 1, f, msg, sizeof msg), 0);
	cr_expect_eq(ftell(f), 0, "no partial output");
	fclose(f);
	spec_carrier_free(c);
}

Test(cpuhost, names_refused)
{
	refused("pentium-9000", "knows no CPU of that name");
	refused("has space", "is not a CPU name");
	refused("haswell;rm", "is not a CPU name");
	/* an Intel host lacks AMD's sse4a, an AMD one Intel's AVX-512 (or both) */
	unsetenv("ASSOC_CPU");
	if (!lower_host_has("+sse4a"))
		refused("znver3", "sse4a");
	else if (!lower_host_has("+avx512f"))
		refused("skylake-avx512", "lacks avx512f");
	else
		cr_skip_test("this host has both sse4a and avx512f");
}

/* The command line says the CPU it compiled for where it is not the host,
 * and a refused one is an error of one line with nothing run. */
Test(cpuhost, commands_say_the_target)
{
	char out[4096];
	cr_assert_eq(sh("ASSOC_CPU=x86-64-v2 build/assoc run specs/sum.yaml --device cpu --rows 2 --len 100 --verbose", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "compiled for x86-64-v2 (ASSOC_CPU)"), "%s", out);
	cr_expect(strstr(out, "lanes=4"), "%s", out);
	cr_assert_eq(sh("build/assoc run specs/sum.yaml --device cpu --rows 2 --len 100 --verbose", out, sizeof out, 1), 0,
		     "%s", out);
	cr_expect(!strstr(out, "compiled for"), "the host goes unsaid: %s", out);
	cr_assert_eq(sh("ASSOC_CPU=haswell build/assoc bench specs/sum.yaml --device cpu --rows 2 --len 1000", out,
			sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "on cpu (compiled for haswell, ASSOC_CPU)"), "%s", out);
	cr_assert_eq(sh("ASSOC_CPU=haswell build/assoc run specs/attention.yaml --device cpu --page-size 16 --batch 2 "
			"--len 40 --verbose",
			out, sizeof out, 1),
		     0, "%s", out);
	cr_expect(strstr(out, "read in place from pages") && strstr(out, "compiled for haswell (ASSOC_CPU)"), "%s", out);
	cr_assert_neq(sh("ASSOC_CPU=pentium-9000 build/assoc run specs/sum.yaml --device cpu", out, sizeof out, 1), 0);
	cr_expect(strstr(out, "knows no CPU of that name") && !strstr(out, "ok"), "%s", out);
}
