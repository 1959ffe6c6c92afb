/* cudatest.h: helpers for the CUDA generator and emulator suites. */
#ifndef ASSOC_CUDATEST_H
#define ASSOC_CUDATEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"

/* Emulator builds go to build/cache, not the user's cache. */
static inline void cuda_test_cache(void)
{
	char here[4096], at[4200];
	if (!getcwd(here, sizeof here)) /* absolute: a relative XDG_CACHE_HOME is no cache folder */
		abort();
	snprintf(at, sizeof at, "%s/build/cache", here);
	setenv("XDG_CACHE_HOME", at, 1);
}

/* Occurrences of w that start in [s, end) (end NULL: all of s), such as
 * instructions in a kernel's PTX or calls in a generated hook. */
static inline int cuda_count(const char *s, const char *end, const char *w)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, w)) && (!end || p < end); p += strlen(w))
		n++;
	return n;
}

/* ptxas's statistics of each kernel in ptx for arch, each expected to
 * spill nothing and keep no stack (what names the module in messages).
 * Returns the number of kernels, their statistics in ks (up to max) where
 * ks is not NULL; -1 where ptxas is not found, msg saying so, for the
 * caller to free what it holds and skip. */
static inline int cuda_expect_unspilled(const char *ptx, const char *arch, const char *what, CudaKStat *ks, int max,
					char *msg, size_t cap)
{
	CudaKStat own[64];
	if (!ks) {
		ks = own;
		max = 64;
	}
	int n = cuda_ptxas_stats(ptx, arch, ks, max, msg, cap);
	if (n < 0 && strstr(msg, "not found"))
		return -1;
	/* NVRTC without ptxas beside it is no toolkit the checks can trust */
	cr_assert_gt(n, 0, "%s: ptxas gave no kernels: %s", what, msg);
	for (int k = 0; k < n; k++)
		cr_expect(ks[k].spill_st + ks[k].spill_ld == 0 && ks[k].stack == 0,
			  "%s %s: %d registers, %d/%d bytes spilled, %d of stack", what, ks[k].name, ks[k].regs,
			  ks[k].spill_st, ks[k].spill_ld, ks[k].stack);
	return n;
}

/* A module's source compiled by NVRTC for arch, each kernel expected to
 * spill nothing (cuda_expect_unspilled); -1 where NVRTC or ptxas is not
 * found, msg saying so, for the caller to free what it holds and skip. */
static inline int cuda_src_unspilled(const char *src, const char *arch, const char *what, char *msg, size_t cap)
{
	Nvrtc *nv;
	if (nvrtc_open(&nv, msg, cap))
		return -1;
	char *ptx;
	int cached;
	cr_assert_eq(nvrtc_ptx(nv, src, arch, &ptx, &cached, msg, cap), 0, "%s", msg);
	int n = cuda_expect_unspilled(ptx, arch, what, NULL, 0, msg, cap);
	free(ptx);
	nvrtc_close(nv);
	return n;
}

#endif
