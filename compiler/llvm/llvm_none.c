/* llvm_none.c: the CPU backend's entry points in a build without LLVM
 * (make NO_LLVM=1, for machines that lack LLVM's development files, such
 * as a registry-less GPU machine): the cpu device and the llvm and asm
 * targets say they are unavailable, and everything else works. */
#ifdef ASSOC_NO_LLVM
#include <stdio.h>

#include "compiler/llvm/llvm.h"

static const char why_none[] = "this assoc was built without LLVM (make NO_LLVM=1): no CPU backend";

int llvm_available(char *why, size_t n)
{
	snprintf(why, n, "%s", why_none);
	return 0;
}

int llvm_compile(Carrier *c, const LlvmOpts *o, LlvmKernel **out, char *msg, size_t n)
{
	(void)c, (void)o;
	*out = NULL;
	snprintf(msg, n, "%s", why_none);
	return -1;
}

void llvm_kernel_free(LlvmKernel *k) { (void)k; }

int llvm_emit(Carrier *c, const LlvmOpts *o, int asm_, FILE *out, char *msg, size_t n)
{
	(void)c, (void)o, (void)asm_, (void)out;
	snprintf(msg, n, "%s", why_none);
	return -1;
}

int llvm_math_kernel(int op, int lanes, LlvmKernel **out, LlvmMathFn *fn, char *msg, size_t n)
{
	(void)op, (void)lanes, (void)fn;
	*out = NULL;
	snprintf(msg, n, "%s", why_none);
	return -1;
}
#else
typedef int llvm_none_unused; /* ISO C wants something in a translation unit */
#endif
