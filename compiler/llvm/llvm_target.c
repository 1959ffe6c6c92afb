/* llvm_target.c: the CPU the backend compiles for.  By default the host's
 * (its name and features as LLVM detects them); ASSOC_CPU names another
 * (haswell, x86-64-v2, ...), so that the code paths of hosts without
 * AVX-512 are built, run and tested on one that has it.  LLVM derives a
 * named CPU's code from its name; the features the backend asks about,
 * and the host's check, come from the table below (LLVM's C API names
 * only the host's features).  A CPU is refused where it has a feature
 * this host lacks: its code would stop with an illegal instruction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "compiler/llvm/llvm.h"
#include "compiler/llvm/llvm_int.h"

/* The x86-64 levels and the CPUs their users run, each with what it adds
 * to the one before it in the table (base: 0) as LLVM names features. */
#define V2 "sse3,ssse3,sse4.1,sse4.2,popcnt,cx16,sahf"
#define V3 V2 ",avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe"
#define V4 V3 ",avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
#define ICX V4 ",avx512vbmi,avx512vbmi2,avx512vnni,avx512bitalg,avx512vpopcntdq,gfni,vaes,vpclmulqdq"
#define ZEN ",sse4a,clzero,mwaitx"
static const struct {
	const char *name, *features;
} CPUS[] = {
	{"x86-64", "sse,sse2"},
	{"x86-64-v2", "sse,sse2," V2},
	{"x86-64-v3", "sse,sse2," V3},
	{"x86-64-v4", "sse,sse2," V4},
	{"haswell", "sse,sse2," V3},
	{"skylake", "sse,sse2," V3},
	{"skylake-avx512", "sse,sse2," V4},
	{"icelake-server", "sse,sse2," ICX},
	{"sapphirerapids", "sse,sse2," ICX ",avx512bf16,avx512fp16"},
	{"znver2", "sse,sse2," V3 ZEN},
	{"znver3", "sse,sse2," V3 ZEN},
	{"znver4", "sse,sse2," ICX ZEN ",avx512bf16"},
};

static int in_list(const char *list, const char *name, size_t len)
{
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");
		if (l == len && !memcmp(p, name, len))
			return 1;
		p += l + (p[l] == ',');
	}
	return 0;
}

/* The host's feature names (LLVM's list names every x86 feature it
 * knows), each signed by whether cpu has it (malloc'd); NULL where the
 * table has no cpu of that name. */
static char *cpu_features(const char *cpu, const char *host)
{
	const char *have = NULL;
	for (size_t i = 0; i < sizeof CPUS / sizeof *CPUS; i++)
		if (!strcmp(CPUS[i].name, cpu))
			have = CPUS[i].features;
	if (!have)
		return NULL;
	char *out = malloc(strlen(host) + 1), *w = out;
	if (!out)
		abort();
	*w = 0;
	for (const char *p = host; *p;) {
		size_t l = strcspn(p, ",");
		if (l > 1 && (*p == '+' || *p == '-'))
			w += sprintf(w, "%s%c%.*s", w == out ? "" : ",", in_list(have, p + 1, l - 1) ? '+' : '-', (int)(l - 1),
				     p + 1);
		p += l + (p[l] == ',');
	}
	return out;
}

/* "x86-64, x86-64-v2, ..." */
static void cpu_names(char *b, size_t n)
{
	size_t w = 0;
	for (size_t i = 0; i < sizeof CPUS / sizeof *CPUS && w < n; i++) {
		int k = snprintf(b + w, n - w, "%s%s", i ? ", " : "", CPUS[i].name);
		w += k > 0 ? (size_t)k : 0;
	}
}

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
		char *feat = cpu_features(name, hfeat);
		char missing[512];
		if (!feat) {
			char names[400];
			cpu_names(names, sizeof names);
			snprintf(msg, n, "ASSOC_CPU=%s: assoc knows no CPU of that name (it knows %s)", name, names);
			rc = -1;
		} else if (missing_features(feat, hfeat, missing, sizeof missing)) {
			snprintf(msg, n, "ASSOC_CPU=%s: this host (%s) lacks %s, which its code may use", name, hcpu, missing);
			free(feat);
			rc = -1;
		} else {
			t->cpu = copy(name), t->feat = feat, t->named = 1;
		}
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
