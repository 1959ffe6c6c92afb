/* mask_live.h: whether a carrier's mask can hold in a block of a row's
 * positions (interval arithmetic, mask_live.c), for the CPU executor. */
#ifndef ASSOC_MASK_LIVE_H
#define ASSOC_MASK_LIVE_H

#include "runtime/cpu.h"
#include "compiler/front/spec.h"

typedef struct LiveProg LiveProg;

/* The mask as a program of intervals; NULL when there is no mask, or it
 * reads an input or a vector, or does not read j (no block to rule out). */
LiveProg *mask_live_compile(const Carrier *c);
void mask_live_free(LiveProg *p);
/* 0 when the mask is false at row i for every j in [j0, j1); 1 when it
 * may hold at one of them.  prog is a LiveProg (CpuKernel's live_ctx). */
int mask_live_eval(const void *prog, const CpuArgs *a, int64_t i, int64_t j0, int64_t j1);

#endif
