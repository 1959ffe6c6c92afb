/* emu.h: the CUDA emulator's host side: generated CUDA C built with the
 * host C++ compiler against emu.hpp into a shared object (cached by source
 * hash), loaded with dlopen, kernels launched on CPU fibers. */
#ifndef ASSOC_EMU_H
#define ASSOC_EMU_H

#include <stddef.h>

#include "compiler/devices/run.h"

typedef struct EmuLib EmuLib;

/* 1 when a host C++ compiler is found (ASSOC_CXX, g++, c++, clang++). */
int emu_available(char *why, size_t n);
/* Build (or load from the cache) the module src; 0, or -1 with msg (the
 * compiler's log included). */
int emu_open(const char *src, EmuLib **lib, char *msg, size_t n);
void emu_close(EmuLib *lib);
/* The vector loads (8 or 16 bytes in one access, as a row template's
 * group of 4 elements) of every launch since lib was loaded. */
unsigned long long emu_vec_loads_of(EmuLib *lib);
/* Launch `kernel` on grid x block threads with smem bytes of dynamic shared
 * memory and args (the kernel's Args); bytes[0..1] accumulate the global
 * bytes loaded and stored.  A grid of 0 blocks is refused, as the driver
 * refuses it (CUDA_ERROR_INVALID_VALUE): a caller skips a launch with
 * nothing to do, as it must on a GPU. */
int emu_launch_kernel(EmuLib *lib, const char *kernel, unsigned grid, unsigned block, unsigned smem, const void *args,
		      unsigned long long bytes[2], char *msg, size_t n);
/* emu_launch_kernel on a grid of grid x gy blocks. */
int emu_launch_grid(EmuLib *lib, const char *kernel, unsigned grid, unsigned gy, unsigned block, unsigned smem,
		    const void *args, unsigned long long bytes[2], char *msg, size_t n);
/* emu_launch_grid in clusters of `cluster` blocks in x (1: none; up to 16,
 * dividing grid), which run together (runtime/emu/emu.hpp). */
int emu_launch_cluster(EmuLib *lib, const char *kernel, unsigned grid, unsigned gy, unsigned block, unsigned smem,
		       unsigned cluster, const void *args, unsigned long long bytes[2], char *msg, size_t n);

/* What a run on the emulator did. */
typedef struct {
	char config[128];          /* the variant that ran */
	unsigned long long bytes[2]; /* global loads, stores */
	unsigned long long vec_loads; /* of them, vector loads (emu_vec_loads_of) */
	double plan_loads, plan_stores;
	int launches;                /* emu_run_batch: the launches of the batch */
} EmuStats;

/* dev_emu's run, with what it did in st (may be NULL). */
int emu_run_data(RunData *d, const RunOpts *o, EmuStats *st, char *msg, size_t n);
/* Every sequence of a paged batch in one launch of the paged attention
 * kernels (grid.y: the sequence; a launch per PAGED_LAUNCH_SEQS of them
 * past that), as Device.run_batch; st->launches counts the launches (a
 * split's merge may be a second kernel of each). */
int emu_run_batch(RunBatch *rb, const RunOpts *o, EmuStats *st, char *msg, size_t n);

#endif
