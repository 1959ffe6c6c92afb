/* cudatest.h: helpers for the CUDA generator and emulator suites. */
#ifndef ASSOC_CUDATEST_H
#define ASSOC_CUDATEST_H

#include <stdlib.h>
#include <string.h>

/* Emulator builds go to build/cache, not the user's cache. */
static inline void cuda_test_cache(void) { setenv("XDG_CACHE_HOME", "build/cache", 1); }

/* Occurrences of w that start in [s, end) (end NULL: all of s), such as
 * instructions in a kernel's PTX or calls in a generated hook. */
static inline int cuda_count(const char *s, const char *end, const char *w)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, w)) && (!end || p < end); p += strlen(w))
		n++;
	return n;
}

#endif
