/* fakellvm.c: a CPU backend plugin of another build of assoc: every entry
 * point of assoc-llvm.so, and a different layout text (llvm_abi). */
#include <stdio.h>

int llvm_abi(char *b, size_t n)
{
	snprintf(b, n, "assoc cpu backend 0: another build");
	return 0;
}

int llvm_available(char *why, size_t n)
{
	(void)why, (void)n;
	return 1;
}

int llvm_compile(void *c, const void *o, void **out, char *msg, size_t n)
{
	(void)c, (void)o, (void)out, (void)msg, (void)n;
	return -1;
}

void llvm_kernel_free(void *k) { (void)k; }

int llvm_emit(void *c, const void *o, int asm_, FILE *out, char *msg, size_t n)
{
	(void)c, (void)o, (void)asm_, (void)out, (void)msg, (void)n;
	return -1;
}

int llvm_math_kernel(int op, int lanes, void **out, void *fn, char *msg, size_t n)
{
	(void)op, (void)lanes, (void)out, (void)fn, (void)msg, (void)n;
	return -1;
}
