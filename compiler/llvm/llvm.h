/* llvm.h: the CPU backend's compiler: a carrier lowered to LLVM IR through
 * the LLVM C API, optimized for the host, and JIT-compiled with ORC into
 * the functions of a CpuKernel (runtime/cpu.h). */
#ifndef ASSOC_LLVM_H
#define ASSOC_LLVM_H

#include <stdio.h>

#include "compiler/devices/run.h"
#include "runtime/cpu.h"
#include "compiler/front/spec.h"

/* The widest vector (row, column, element input or state field) the CPU
 * backend compiles, and the most components over all of them: its code
 * holds each component as its own value, and past these the compile time
 * grows to minutes (llvm.c, unsupported). */
enum { LLVM_MAX_WIDTH = 1024, LLVM_MAX_COMPONENTS = 4096 };
/* The most inputs, outputs and params a kernel takes, each. */
enum { LLVM_MAX_ARRAYS = 256 };
/* An input read only by float32 dot products with another such input is
 * read by loops over its memory (kern_wide_dot, dots_loop), not held as
 * values: it may have up to this many components and counts in neither
 * limit above. */
enum { LLVM_MAX_DOT_WIDTH = 1 << 16 };

typedef struct {
	int lanes; /* positions per vector: 0 picks the host's widest float vector */
	int accs;  /* independent accumulators in the reduce loop: 0 picks the default */
	int tile;  /* vectors folded per accumulator and iteration: 0 picks the default */
	int rows;  /* rows side by side as lanes (assoc_reduce_rows): 0 picks the host's lanes, 1 none */
	int unroll; /* and there loops over components unrolled this many times: 0 picks by the
		     * host, -1 none (every component's vector unrolled) */
	int fit_rows; /* 0, or the rows of each view the kernel will run (cpu_view_rows): where
		       * rows picks the default, no more rows side by side than these */
	int wide_positions; /* top-k candidates' positions kept as 32-bit lanes where the host would
			     * compress 16-bit ones (what a host without AVX-512 VBMI2 runs) */
	int key_stride; /* 0: a column input's keys one after another; n: a paged pool of n key/value
			 * heads ([pages][page_size][n][width]) read in place, key j at element j * n,
			 * and the functions that read a row's keys page by page (reduce_pages) */
	int tf;    /* the transported fold in the vector lanes' tiles (llvm_tf.c): 0 where the
		    * carrier allows it, -1 never, 1 asked for (an error where it cannot be) */
} LlvmOpts;

typedef struct LlvmJit LlvmJit;

typedef struct {
	CpuKernel k;
	int lanes, accs;  /* what the reduce loop uses (1 and 1 for vector states) */
	int ordered;      /* or lanes of the ordered fold (a merge not known to commute), else 0 */
	int tile;         /* vectors per tile (1: a running fold) */
	int rows;         /* rows a reduce_rows call takes as its lanes (1: no such function) */
	int rows_tile;    /* and positions per tile there */
	int unroll;       /* and its loops over components unrolled this many times (0: none) */
	int max_rescale;  /* tiles, or ordered lanes' vectors, fold by the n-ary max-rescale merge (llvm_tile.c) */
	int two_pass;     /* and rows of up to TWO_PASS_BYTES (llvm_int.h) reduce in two passes */
	long kept;        /* 1 + the node id of the map's g(lift.m - m), which the rowmap's pass 2
			   * keeps for it (the map multiplies instead of an exp), else 0 */
	int scan_lanes;   /* a scan in vectors of this many positions (scan_lanes in llvm_kern.c), else 0 */
	int scan_tiles;   /* and in tiles of scan_lanes^2 positions (scan_tile in llvm_kern.c) */
	int apart;        /* topk lists kept apart from the lanes, one sorted list a range (kern_lists_apart), else 0 */
	int select;       /* topk lists chosen from a few candidates a range (kern_selects), else 0 */
	int key_stride;   /* LlvmOpts.key_stride: 0, or the paged pool's key/value heads */
	char one_lane[120]; /* why the reduce folds one position at a time in one lane, or "" */
	char order[400];  /* why the merge may take positions in any order (lanes), or why not (ordered) */
	int lift_chains;  /* a tile's chains start at their first lift, not the identity (kern_fold_chains) */
	char chain_why[400]; /* how e+a = a is known there, or why not; "" where no tile folds by chains */
	int tf;           /* the vector lanes' tiles fold transported (llvm_tf.c) */
	char tf_why[240]; /* and what that does, or why they do not */
	char target[64];    /* the CPU compiled for where ASSOC_CPU names one, or "" (the host) */
	LlvmJit *jit;
	int keys;         /* one row, and groups of fewer than 16 (rows), take keys as lanes (llvm_keys.c) */
} LlvmKernel;

/* The CPU device's --config, "lanes=N,accs=N,tile=N" in any order and
 * subset, into o (dev_cpu.c); lanes, accs and rows powers of two, no key
 * twice.  0, or -1 with msg. */
int cpu_parse_config(const char *cfg, LlvmOpts *o, char *msg, size_t n);

/* How k's reduce folds a range, in a few words (run --verbose, bench). */
static inline const char *llvm_fold_name(const LlvmKernel *k)
{
	return k->scan_tiles ? "scan in tiles of blocks" : k->scan_lanes ? "scan in vectors"
	     : k->select ? "top-k candidates" : k->ordered > 1 ? "ordered lanes" : k->max_rescale ? "max-rescale tiles"
	     : k->tf ? "transported tiles" : "tree of merges";
}
/* The executor's view of d: in and out hold d's pointers in the kernel
 * ABI's order (dev_cpu.c). */
void cpu_args(RunData *d, CpuArgs *a, const void **in, void **out);
/* The views of d that rt_cpu_run takes, and what holds them until
 * cpu_heads_free.  pack 0: the cpu_args of each head (a view of its
 * key/value head's columns).  pack 1: where query heads share key/value
 * heads, one view a key/value head, its query heads' rows one after
 * another (CpuArgs.period), so that rows side by side as lanes load each
 * key and value once for all of them (decoding's one row a head). */
typedef struct {
	CpuArgs *a;
	const void **in;
	void **out;
	int n;
} CpuHeads;
void cpu_heads(RunData *d, int pack, CpuHeads *h);
void cpu_heads_free(CpuHeads *h);
/* Rows of each view cpu_heads(d, 1, ...) makes, at most INT_MAX
 * (LlvmOpts.fit_rows). */
int cpu_view_rows(const RunData *d);

/* A paged batch (RunBatch) on the CPU, its keys read in place
 * (rt_cpu_run_paged): cpu_batch_opts sets what the kernel must be
 * compiled for (the pool's key stride, the rows of its widest view);
 * cpu_batch_run runs every sequence of rb through kernel k (compiled so)
 * on pool, writing rb->fin where set, else each sequence's own outputs.
 * 0, or -1 with msg (dev_cpu.c). */
void cpu_batch_opts(const RunBatch *rb, LlvmOpts *lo);
int cpu_batch_run(RtPool *pool, const LlvmKernel *k, RunBatch *rb, int split, char *msg, size_t n);

/* What the command line and its CPU backend plugin (compiler/cli/llvm_load.c)
 * must agree on: the layouts of the structs that cross between them.  The
 * plugin exports llvm_abi, which writes this text; a plugin from another
 * build of assoc writes another and is refused. */
static inline void llvm_abi_text(char *b, size_t n)
{
	snprintf(b, n, "assoc cpu backend 1: %zu %zu %zu %zu %zu %zu %zu %zu", sizeof(LlvmKernel), sizeof(CpuKernel),
		 sizeof(CpuArgs), sizeof(LlvmOpts), sizeof(Carrier), sizeof(Expr), sizeof(Var), sizeof(RunData));
}
int llvm_abi(char *b, size_t n);

/* 1 when the host target can be initialized; otherwise 0 with the reason. */
int llvm_available(char *why, size_t n);

/* Compile c for the host.  0, or -1 with msg. */
int llvm_compile(Carrier *c, const LlvmOpts *o, LlvmKernel **out, char *msg, size_t n);
void llvm_kernel_free(LlvmKernel *k);

/* The optimized module as LLVM IR text (asm == 0) or host assembly. */
int llvm_emit(Carrier *c, const LlvmOpts *o, int asm_, FILE *out, char *msg, size_t n);

/* A kernel of one float32 math function (EXPR_EXP, EXPR_EXP2, EXPR_LOG),
 * y[t] = f(x[t]) for t < n, in the given lanes; for tests and benchmarks. */
typedef void (*LlvmMathFn)(const float *x, float *y, int64_t n);
int llvm_math_kernel(int op, int lanes, LlvmKernel **out, LlvmMathFn *fn, char *msg, size_t n);

#endif
