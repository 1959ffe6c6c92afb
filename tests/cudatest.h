/* cudatest.h: helpers for the CUDA generator and emulator suites. */
#ifndef ASSOC_CUDATEST_H
#define ASSOC_CUDATEST_H

#include <stdlib.h>

/* Emulator builds go to build/cache, not the user's cache. */
static inline void cuda_test_cache(void) { setenv("XDG_CACHE_HOME", "build/cache", 1); }

#endif
