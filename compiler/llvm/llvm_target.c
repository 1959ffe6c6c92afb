/* llvm_target.c: the CPU the backend compiles for.  By default the host's
 * (its name and features as LLVM detects them); ASSOC_CPU names another
 * (haswell, x86-64-v2, ...), so that the code paths of hosts without
 * AVX-512 are built, run and tested on one that has it.  A named CPU takes
 * LLVM's own features for the name, and is refused where it has one this
 * host lacks: its code would stop with an illegal instruction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "compiler/llvm/llvm.h"
#include "compiler/llvm/llvm_int.h"

char *llvm_cpu_features(const char *triple, const char *cpu, const char *names); /* cpu_features.cc */

/* Instructions of these only intrinsics emit, and the backend calls none:
 * a host that hides them (virtual machines often hide pku, rtm, invpcid)
 * still runs the named CPU's code. */
static const char *const UNUSED_FEATURES[] = {
	"pku", "invpcid", "rtm", "tsxldtrk", "xsave", "xsaveopt", "xsavec", "xsaves", "fsgsbase", "rdrnd",
	"rdseed", "rdpid", "sgx", "ptwrite", "waitpkg", "shstk", "serialize", "movdiri", "movdir64b",
	"cldemote", "enqcmd", "uintr", "hreset", "kl", "widekl", "clflushopt", "clwb", "wbnoinvd",
};

static int unused_feature(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof UNUSED_FEATURES / sizeof *UNUSED_FEATURES; i++)
		if (strlen(UNUSED_FEATURES[i]) == len && !memcmp(UNUSED_FEATURES[i], name, len))
			return 1;
	return 0;
}

/* The entry "+name" or "-name" of a feature list, or NULL. */
static const char *feature_entry(const char *list, const char *name, size_t len)
{
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");
		if (l == len + 1 && !memcmp(p + 1, name, len))
			return p;
		p += l + (p[l] == ',');
	}
	return NULL;
}

/* The features t has and host lacks, as "a, b, c" in msg; 0 where none. */
static int missing_features(const char *t, const char *host, char *msg, size_t n)
{
	size_t w = 0;
	int count = 0;
	msg[0] = 0;
	for (const char *p = t; *p;) {
		size_t l = strcspn(p, ",");
		const char *h = *p == '+' && l > 1 && !unused_feature(p + 1, l - 1) ? feature_entry(host, p + 1, l - 1) : NULL;
		if (h && *h == '-' && w < n) {
			int k = snprintf(msg + w, n - w, "%s%.*s", count ? ", " : "", (int)(l - 1), p + 1);
			w += k > 0 ? (size_t)k : 0;
			count++;
		}
		p += l + (p[l] == ',');
	}
	return count;
}

static int cpu_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= 64)
		return 0;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') && !(*s >= '0' && *s <= '9') && !strchr("._-", *s))
			return 0;
	return 1;
}

static char *copy(const char *s)
{
	char *c = strdup(s);
	if (!c)
		abort();
	return c;
}

int cpu_target(CpuTarget *t, char *msg, size_t n)
{
	memset(t, 0, sizeof *t);
	const char *name = getenv("ASSOC_CPU");
	if (!llvm_available(msg, n)) /* the target registry, which names the CPUs */
		return -1;
	char *hcpu = LLVMGetHostCPUName(), *hfeat = LLVMGetHostCPUFeatures();
	int rc = 0;
	if (!name || !*name) {
		t->cpu = copy(hcpu), t->feat = copy(hfeat);
	} else if (!cpu_name_ok(name)) {
		snprintf(msg, n, "ASSOC_CPU is not a CPU name (up to 63 letters, digits, '.', '_' and '-')");
		rc = -1;
	} else {
		char *triple = LLVMGetDefaultTargetTriple();
		char *feat = llvm_cpu_features(triple, name, hfeat);
		char missing[512];
		if (!feat) {
			snprintf(msg, n, "ASSOC_CPU=%s: LLVM %s knows no CPU of that name for %s (`llvm-mc --mcpu=help` lists them)",
				 name, LLVM_VERSION_STRING, triple);
			rc = -1;
		} else if (missing_features(feat, hfeat, missing, sizeof missing)) {
			snprintf(msg, n, "ASSOC_CPU=%s: this host (%s) lacks %s, which its code may use", name, hcpu, missing);
			free(feat);
			rc = -1;
		} else {
			t->cpu = copy(name), t->feat = feat, t->named = 1;
		}
		LLVMDisposeMessage(triple);
	}
	LLVMDisposeMessage(hcpu);
	LLVMDisposeMessage(hfeat);
	return rc;
}

void cpu_target_free(CpuTarget *t)
{
	free(t->cpu);
	free(t->feat);
	t->cpu = t->feat = NULL;
}

int cpu_target_has(const CpuTarget *t, const char *feature)
{
	const char *e = *feature == '+' ? feature_entry(t->feat, feature + 1, strlen(feature + 1)) : NULL;
	return e && *e == '+';
}

int lower_host_has(const char *feature)
{
	CpuTarget t;
	char msg[8];
	/* an ASSOC_CPU that is refused has failed the compile before anything
	 * asks (llvm.c checks it first) */
	if (cpu_target(&t, msg, sizeof msg))
		return 0;
	int yes = cpu_target_has(&t, feature);
	cpu_target_free(&t);
	return yes;
}
