/* llvm_load.c: the CPU backend as a plugin of the command line.  Loading
 * and initializing LLVM's shared library takes about 20 ms, on every
 * command, where most commands (check, emit for CUDA, explore, run on a
 * GPU) never use it.  So build/assoc does not link LLVM: the backend
 * (compiler/llvm*.c) is assoc-llvm.so, opened the first time it is asked
 * for, from ASSOC_LLVM_PLUGIN, next to the executable (the build tree), or
 * in ../lib/assoc/ from it (an installed tree).  The library (libassoc)
 * and the test binaries link the backend directly. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/llvm/llvm.h"

static struct {
	int tried;
	void *h;
	char why[2 * PATH_MAX + 512];
	int (*available)(char *, size_t);
	int (*compile)(Carrier *, const LlvmOpts *, LlvmKernel **, char *, size_t);
	void (*kernel_free)(LlvmKernel *);
	int (*emit)(Carrier *, const LlvmOpts *, int, FILE *, char *, size_t);
	int (*math_kernel)(int, int, LlvmKernel **, LlvmMathFn *, char *, size_t);
} P;

static int try_open(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(P.why, sizeof P.why, "the CPU backend could not be loaded: %s", e ? e : path);
		return 0;
	}
	/* looked up in the plugin itself (linked with -Bsymbolic), not in this
	 * executable, which defines the same names */
	*(void **)&P.available = dlsym(h, "llvm_available");
	*(void **)&P.compile = dlsym(h, "llvm_compile");
	*(void **)&P.kernel_free = dlsym(h, "llvm_kernel_free");
	*(void **)&P.emit = dlsym(h, "llvm_emit");
	*(void **)&P.math_kernel = dlsym(h, "llvm_math_kernel");
	int (*abi)(char *, size_t);
	*(void **)&abi = dlsym(h, "llvm_abi");
	if (!abi || !P.available || !P.compile || !P.kernel_free || !P.emit || !P.math_kernel ||
	    (void *)P.available == (void *)llvm_available) {
		snprintf(P.why, sizeof P.why, "%s is not assoc's CPU backend (its entry points are missing)", path);
		dlclose(h);
		return 0;
	}
	/* its kernels are read here: the same struct layouts, or nothing */
	char want[160], got[160] = "";
	llvm_abi_text(want, sizeof want);
	abi(got, sizeof got);
	if (strcmp(want, got)) {
		snprintf(P.why, sizeof P.why,
			 "%s is the CPU backend of another build of assoc (\"%s\", this one needs \"%s\"); "
			 "rebuild or reinstall both",
			 path, got, want);
		dlclose(h);
		return 0;
	}
	P.h = h;
	return 1;
}

static int load(void)
{
	if (P.tried)
		return P.h != NULL;
	P.tried = 1;
	const char *env = getenv("ASSOC_LLVM_PLUGIN");
	if (env && *env)
		return try_open(env);
	char exe[PATH_MAX], near[PATH_MAX + 32], inst[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		snprintf(P.why, sizeof P.why, "the CPU backend assoc-llvm.so is looked for beside the executable, "
					      "whose path is unknown here; set ASSOC_LLVM_PLUGIN to it");
		return 0;
	}
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(near, sizeof near, "%s/assoc-llvm.so", exe);
	snprintf(inst, sizeof inst, "%s/../lib/assoc/assoc-llvm.so", exe);
	const char *path = access(near, F_OK) == 0 ? near : access(inst, F_OK) == 0 ? inst : NULL;
	if (!path) {
		snprintf(P.why, sizeof P.why,
			 "the CPU backend assoc-llvm.so is neither at %s nor at %s (make builds it beside "
			 "build/assoc, make install puts it in PREFIX/lib/assoc; or set ASSOC_LLVM_PLUGIN)",
			 near, inst);
		return 0;
	}
	return try_open(path);
}

/* 1 with the plugin loaded, or 0 with the reason in msg. */
static int loaded(char *msg, size_t n)
{
	if (load())
		return 1;
	snprintf(msg, n, "%s", P.why);
	return 0;
}

int llvm_available(char *why, size_t n) { return loaded(why, n) && P.available(why, n); }

int llvm_compile(Carrier *c, const LlvmOpts *o, LlvmKernel **out, char *msg, size_t n)
{
	*out = NULL;
	return loaded(msg, n) ? P.compile(c, o, out, msg, n) : -1;
}

void llvm_kernel_free(LlvmKernel *k)
{
	if (k && P.h) /* only the plugin makes kernels */
		P.kernel_free(k);
}

int llvm_emit(Carrier *c, const LlvmOpts *o, int asm_, FILE *out, char *msg, size_t n)
{
	return loaded(msg, n) ? P.emit(c, o, asm_, out, msg, n) : -1;
}

int llvm_math_kernel(int op, int lanes, LlvmKernel **out, LlvmMathFn *fn, char *msg, size_t n)
{
	*out = NULL;
	return loaded(msg, n) ? P.math_kernel(op, lanes, out, fn, msg, n) : -1;
}
