/* gpu.h: carriers on a CUDA GPU: the carrier's module through NVRTC, loaded
 * with the driver API (runtime/driver.h), run on device copies of a RunData,
 * with the variant chosen by the tuning cache, by --config, or by rule. */
#ifndef ASSOC_GPU_H
#define ASSOC_GPU_H

#include <stdio.h>

#include "compiler/cuda/cuda.h"
#include "compiler/cuda/nvrtc.h"
#include "compiler/devices/run.h"
#include "runtime/driver.h"
#include "runtime/tune.h"

typedef struct {
	Rt *rt;
	Nvrtc *nv;
	CudaModule m;
	/* per variant of m, the loaded module that holds its kernels; NULL
	 * until the variant is first needed (gpu_ready) */
	RtModule **vmod;
	RtModule **mods; /* every module loaded for m (at most one a variant) */
	int nmods;
	Carrier *c;
	char arch[16];
	int ptx_cached;    /* every compile so far came from the PTX cache */
	double compile_ms; /* spent compiling and loading for m so far */
	int compiled;      /* kernels of variants compiled for m so far */
	int custom; /* the module is one configuration's (gpu_choose), not the defaults or the tuning space */
	int page_size; /* gpu_open_paged: the attention kernels read K and V from pages of this many keys */
	unsigned gen; /* counts the modules lowered: a copy in another context is of this one while equal */
	char *said; /* NVRTC's warnings while compiling for m, or NULL (malloc'd; --verbose prints them) */
} Gpu;

/* Open the driver and lower c for the device's architecture: its default
 * variants, compiled one at a time as a run first needs each (gpu_ready),
 * or with space the whole tuning space (cuda_module_space), compiled and
 * loaded now, as tuning times every variant. */
int gpu_open(Gpu *g, Carrier *c, int space, char *msg, size_t n);
/* gpu_open with a module whose attention kernels read paged K and V
 * (cuda_module_paged), for runs over paged columns (RunData.page) of
 * pages of page_size keys. */
int gpu_open_paged(Gpu *g, Carrier *c, int page_size, char *msg, size_t n);
/* gpu_open (page_size 0: no tuning space) or gpu_open_paged for a
 * library: the calling thread's current context is left as it was
 * (rt_open_aside); a run on host arrays makes g's own (the primary
 * context) current for itself. */
int gpu_open_aside(Gpu *g, Carrier *c, int page_size, char *msg, size_t n);
/* NVRTC's warnings while compiling g's module (Gpu.said), for --verbose;
 * nothing where it said nothing. */
void gpu_print_said(const Gpu *g, FILE *f);
void gpu_close(Gpu *g);
/* Compile variant v of g->m alone (through the PTX cache) and load it,
 * unless it is loaded; 0, or -1 with msg. */
int gpu_ready(Gpu *g, int v, char *msg, size_t n);
/* Kernel `name` of variant v, loaded first where it is not. */
int gpu_function(Gpu *g, int v, const char *name, void **fn, char *msg, size_t n);
/* What variant v's kernels take, the most of each (registers, shared
 * memory with the first kernel's dynamic part, local memory a thread:
 * spills); 0, or -1 with msg. */
int gpu_resources(Gpu *g, int v, TuneResources *r, char *msg, size_t n);

/* Device copies of a RunData's arrays, and the kernels' argument block. */
typedef struct {
	RtPtr in[CUDA_MAXIN], out[CUDA_MAXOUT], ws;
	size_t ws_bytes;
	size_t zeroed_at, zeroed_bytes; /* the plan's zero region, zeroed and left so by the last launch */
	int stream_ws; /* ws grows in the order of rt_on_stream's stream (rt_alloc_async) */
	CudaArgs a;
} GpuBufs;

int gpu_upload(Gpu *g, RunData *d, GpuBufs *b, char *msg, size_t n);
int gpu_download(Gpu *g, RunData *d, GpuBufs *b, char *msg, size_t n);
void gpu_free_bufs(Gpu *g, GpuBufs *b);
/* Enqueue variant v with a split count (workspace grown as needed). */
int gpu_launch(Gpu *g, GpuBufs *b, int v, int split, int rows, int len, char *msg, size_t n);

/* `assoc run --device gpu` on g, opened for d's carrier: the variant
 * gpu_choose picks, d's inputs uploaded, its outputs downloaded (heads
 * one at a time where the module's template has none); -1 with msg. */
int gpu_run_open(Gpu *g, RunData *d, const RunOpts *o, char *msg, size_t n);

/* libassoc's assoc_run_device: d's buffers hold device pointers of the
 * caller's; the variant gpu_choose picks is enqueued with b's workspace
 * (b a context's and stream's, kept by the caller; rt_on_stream set) with
 * no copy and no wait.  ctx: the current context (rt_enter_ctx); where it
 * is not g's primary one, g's module is loaded there into *mod (kept by
 * the caller, reloaded when *gen falls behind g's). */
/* Every sequence of a paged batch on g (opened by gpu_open_paged) in one
 * launch: the pool uploaded once; 0, -1 with msg, or 1 where g's kernels
 * run a sequence at a time (Device.run_batch). */
int gpu_run_batch_open(Gpu *g, RunBatch *rb, const RunOpts *o, char *msg, size_t n);
int gpu_run_device(Gpu *g, RunData *d, const RunOpts *o, GpuBufs *b, void *ctx, RtModule **mod, unsigned *gen,
		   char *msg, size_t n);

/* A paged batch on device memory of the caller's (libassoc's
 * assoc_run_paged_device): row inputs and finalize outputs as the paged
 * kernels read them, [rows][heads][width], sequence after sequence;
 * column inputs the pool [pages][page_size][kv_heads][width]; the block
 * table [batch][max_pages], seq_lens [batch] and cu_seqlens_q [batch + 1]
 * (0: rows queries each) int32.  rows: the most queries of a sequence;
 * the keys planned for, max_pages x page_size. */
typedef struct {
	const Carrier *c;
	int heads, kv_heads, batch, page_size, max_pages, rows;
	RtPtr row[CUDA_MAXIN], col[CUDA_MAXIN], fin[CUDA_MAXOUT];
	RtPtr table, lens, cu;
	const double *params;
} GpuPaged;
/* pd on g (opened by gpu_open_paged for its page size) in one launch,
 * enqueued with b's workspace (zeroed on the stream first: its counters'
 * places follow the sequences' query counts, which the host does not
 * read), no copy, no wait; ctx, mod and gen as gpu_run_device's.  -1
 * with msg where g's kernels take no batch (a sequence a launch would
 * read seq_lens on the host). */
int gpu_run_paged_device(Gpu *g, const GpuPaged *pd, const RunOpts *o, GpuBufs *b, void *ctx, RtModule **mod,
			 unsigned *gen, char *msg, size_t n);
/* gpu_run_paged_device's two steps: the variant and split (gpu_choose's,
 * or the rule's among those that take a batch; why says which, or why
 * none), in g's primary context; then the launch, the workspace zeroed
 * first with zero (or where it grew: a run of launches of one layout
 * needs it once, the kernels putting their counters back). */
int gpu_paged_choose(Gpu *g, const GpuPaged *pd, const RunOpts *o, int *v, int *split, char *why, size_t n);
int gpu_paged_enqueue(Gpu *g, const GpuPaged *pd, int v, int split, int zero, GpuBufs *b, void *ctx, RtModule **mod,
		      unsigned *gen, char *msg, size_t n);

/* Run variant v (with split) on a problem of d's spec and heads (two
 * key/value heads at most, each with its query heads), at most 64 rows of
 * 2048 with fresh inputs (the interpreter's reference costs far more than
 * the kernel), and compare with the reference: 0; 1 with why where the
 * result is wrong, -1 with why where it did not run. */
int gpu_validate(Gpu *g, const RunData *d, int v, int split, char *msg, size_t n);
/* The same for many variants on one problem (a tuner's candidates): its
 * inputs drawn at the first call and kept in *small, and k (made by the
 * caller, runchecker_keep'd) evaluates their reference once.  Free *small
 * with rundata_free. */
int gpu_validate_kept(Gpu *g, const RunData *d, int v, int split, RunData **small, RunChecker *k, char *msg, size_t n);
/* d's outputs, as variant v wrote them at d's own shape, compared with the
 * float64 reference on a sample of rows: GPU_SAMPLE_ROWS spread over
 * each of the first, a middle and the last head (so over query tiles,
 * with the first and the last row).  0; 1 with the row and why where one
 * is wrong. */
enum { GPU_SAMPLE_ROWS = 8 };
int gpu_check_sample(const Gpu *g, RunData *d, int v, char *msg, size_t n);
/* Median milliseconds of `runs` (at most 32) event-timed calls of fn after
 * `warmup` untimed ones, writing `flush` (a buffer larger than L2) before
 * each timed call so that no run finds its inputs in cache; -1 with msg. */
double gpu_median_ms(Gpu *g, int (*fn)(void *, char *, size_t), void *ctx, RtPtr flush, size_t flush_bytes, int warmup, int runs,
		     char *msg, size_t n);
/* The tuning cache key of a problem on this device. */
void gpu_tune_key(Gpu *g, const RunData *d, char *key, size_t n);
/* The variant and split for a shape: --config, then the tuning cache (a
 * frozen choice), then the rules.  A configuration outside g's module is
 * compiled alone and replaces it.  -1 with the reason in why. */
int gpu_choose(Gpu *g, const RunData *d, const RunOpts *o, int *v, int *split, char *why, size_t n);

/* bench --device gpu's copy baseline (gpu_copy.c): bytes from src to dst
 * by the driver's copy and by the copy kernel (cuda_copy.c, compiled
 * through NVRTC and the PTX cache), each the median of `runs` event-timed
 * runs after `warmup` (gpu_median_ms, flush written before each), and the
 * device's nominal memory bandwidth (0: not known). */
typedef struct {
	double driver_ms, kernel_ms;
	double nominal_gbps;
} GpuCopy;
int gpu_copy_time(Gpu *g, RtPtr src, RtPtr dst, size_t bytes, RtPtr flush, size_t flush_bytes, int warmup, int runs,
		  GpuCopy *t, char *msg, size_t n);
/* The faster copy's time. */
double gpu_copy_ms(const GpuCopy *t);
/* The report's lines of the copy and the nominal bandwidth for bytes moved. */
void gpu_copy_lines(FILE *f, const RtDevice *dev, double bytes, const GpuCopy *t);

/* A tuning's outcome: every candidate (res), and whether the choice is in
 * the tuning cache. */
typedef struct {
	TuneResult res;
	int ncand;           /* candidates searched */
	double bytes;        /* bytes one run moves (for GB/s) */
	char key[1024];      /* the tuning cache key of the problem */
	int stored;          /* the choice is cached under key */
	char store_err[512]; /* why not, when a candidate won */
} GpuTuning;

/* Tune g's module (opened with space) for d's shape: every variant that
 * runs it, the split kernels and attention with split counts, validated
 * against the reference and timed with driver events after warm-up
 * (median of several runs, L2 flushed between runs); the fastest is
 * stored in the tuning cache, where gpu_choose finds it.  progress (or
 * NULL) hears of each candidate as it is decided.  0 when a candidate ran
 * correctly (out->res.best), 1 when none did, -1 with msg when the device
 * failed. */
int gpu_tune(Gpu *g, RunData *d, void (*progress)(void *ctx, int done, int total), void *ctx, GpuTuning *out,
	     char *msg, size_t n);

#endif
