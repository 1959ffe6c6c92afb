/* fakenvrtc.c: a stand-in for an NVRTC older than the options assoc asks
 * for first: it knows only the options below and refuses any other with
 * NVRTC_ERROR_INVALID_OPTION, as NVRTC does.  Its "PTX" names the options
 * it compiled with, so a test can see what was asked, and the target.  With FAKENVRTC=entry
 * it also holds a ".entry" line, which the fake driver (fakecuda.c) loads
 * as a module of kernels that do nothing when launched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Prog {
	char ptx[1024];
} Prog;

static const char *const known[] = {"-std=c++14", "--fmad=true"};

const char *nvrtcGetErrorString(int r) { return r == 5 ? "NVRTC_ERROR_INVALID_OPTION" : r ? "NVRTC_ERROR" : "NVRTC_SUCCESS"; }
int nvrtcVersion(int *major, int *minor)
{
	*major = 12, *minor = 0;
	return 0;
}
int nvrtcCreateProgram(Prog **p, const char *src, const char *name, int nh, const char *const *h, const char *const *in)
{
	(void)src, (void)name, (void)nh, (void)h, (void)in;
	*p = calloc(1, sizeof **p);
	return *p ? 0 : 1;
}
int nvrtcCompileProgram(Prog *p, int n, const char *const *opts)
{
	size_t l = (size_t)snprintf(p->ptx, sizeof p->ptx, "// fake PTX, options:");
	for (int i = 0; i < n; i++) {
		int ok = !strncmp(opts[i], "--gpu-architecture=", 19);
		for (size_t k = 0; k < sizeof known / sizeof *known; k++)
			ok |= !strcmp(opts[i], known[k]);
		if (!ok)
			return 5;
		l += (size_t)snprintf(p->ptx + l, sizeof p->ptx - l, " %s", opts[i]);
	}
	for (int i = 0; i < n; i++) /* the target, as NVRTC's PTX names it */
		if (!strncmp(opts[i], "--gpu-architecture=compute_", 27))
			l += (size_t)snprintf(p->ptx + l, sizeof p->ptx - l, "\n.target sm_%s", opts[i] + 27);
	const char *e = getenv("FAKENVRTC");
	if (e && strstr(e, "entry"))
		snprintf(p->ptx + l, sizeof p->ptx - l, "\n.entry fake\n");
	return 0;
}
int nvrtcGetProgramLogSize(Prog *p, size_t *n)
{
	(void)p;
	*n = 1;
	return 0;
}
int nvrtcGetProgramLog(Prog *p, char *log)
{
	(void)p;
	*log = 0;
	return 0;
}
int nvrtcGetPTXSize(Prog *p, size_t *n)
{
	*n = strlen(p->ptx) + 1;
	return 0;
}
int nvrtcGetPTX(Prog *p, char *ptx)
{
	memcpy(ptx, p->ptx, strlen(p->ptx) + 1);
	return 0;
}
int nvrtcDestroyProgram(Prog **p)
{
	free(*p);
	*p = NULL;
	return 0;
}
