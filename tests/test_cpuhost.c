/* test_cpuhost.c: the CPU backend compiled for CPUs other than the host
 * (ASSOC_CPU, compiler/llvm/llvm_target.c): the code really for that CPU,
 * kept apart in the cache, and the names refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/devices/run.h"
#include "compiler/llvm/llvm.h"
#include "compiler/llvm/llvm_int.h"
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

static LlvmKernel *compiled(Carrier *c, const LlvmOpts *o)
{
	LlvmKernel *k;
	char msg[600];
	cr_assert_eq(llvm_compile(c, o, &k, msg, sizeof msg), 0, "%s: %s", c->name, msg);
	return k;
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

/* The code is for the named CPU: AVX2 registers (ymm) but no AVX-512 ones
 * (zmm) for haswell, with F16C's conversions for f16 inputs; neither for
 * x86-64-v2, whose f16 loads convert without F16C. */
Test(cpuhost, code_is_for_the_named_cpu)
{
	Carrier *c = load_ok("specs/attention.yaml");
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

/* A kernel built for one CPU is kept apart from the host's in the cache:
 * two objects, each loaded for its own CPU. */
Test(cpuhost, cache_keeps_each_cpu_apart)
{
	char dir[] = "/tmp/assoc-cpuhost-XXXXXX";
	cr_assert(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1);
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
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
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
	cr_assert_neq(sh("ASSOC_CPU=pentium-9000 build/assoc run specs/sum.yaml --device cpu", out, sizeof out, 1), 0);
	cr_expect(strstr(out, "knows no CPU of that name") && !strstr(out, "ok"), "%s", out);
}
