/* libassoc_int.h: the handles of libassoc (assoc.h), for the files of the
 * library that act on them (libassoc.c, assoc_mpi.c). */
#ifndef ASSOC_LIBASSOC_INT_H
#define ASSOC_LIBASSOC_INT_H

#include <stdatomic.h>

#include "compiler/lib/assoc.h"
#include "compiler/check/eval.h"
#include "compiler/devices/gpu.h"
#include "compiler/llvm/llvm.h"

struct AssocSpec {
	Carrier *c;
	/* the text and dims c was loaded from: each kernel loads a carrier of
	 * its own from them, since a run plans and judges into its carrier's
	 * IR (a hash-consed DAG that grows), which kernels on other threads,
	 * and the spec's own checks, must not share */
	char *src;
	size_t srclen;
	Define *defs;
	int ndefs;
	char err[2048];
	char verdict[2048]; /* the line on the last assoc_spec_check (assoc_spec_verdict) */
	char warnings[2048]; /* its warnings, one a line (assoc_spec_warnings) */
	AssocArray *arr;
	int narr;
	int judged; /* its verdict reached (1: holds, -1: fails, 0: not yet): assoc_compile takes it */
	char judged_why[2048]; /* why it failed */
	int trusted; /* assoc_spec_trust_merge: compiled whatever its verdict */
	/* the caller's handle and each kernel's: the carrier a kernel runs
	 * stays until the last of them is freed, in whichever order */
	atomic_int refs;
};

/* assoc_run_device's workspace on one context and stream, and g's module
 * loaded in a context of the caller's other than the primary one. */
typedef struct {
	void *ctx, *stream;
	GpuBufs b;
} AssocStreamWs;

typedef struct {
	void *ctx;
	RtModule *mod;
	unsigned gen;
} AssocCtxModule;

struct AssocKernel {
	AssocSpec *s;
	Carrier *c;         /* the kernel's own, loaded as s->c was (NULL where the compile failed first) */
	int trusted;        /* s->trusted at assoc_compile: runs take any params */
	atomic_int refs;    /* the caller's, and one an MPI handle of assoc_mpi_kernel holds */
	AssocStatus failed; /* a failed assoc_compile's status (its reason in err); ASSOC_OK for a kernel that runs */
	const Device *dev;  /* emu, interp, gpu: runs on a RunData over the caller's arrays; NULL: the CPU backend */
	Gpu *gpu;           /* gpu: the driver and the carrier's module, opened once */
	AssocStreamWs *ws;  /* gpu: assoc_run_device's workspaces, one a context and stream */
	int nws;
	AssocCtxModule *mods;
	int nmods;
	Gpu *pgpu;          /* gpu: assoc_run_paged_device's module, for pages of pgpu->page_size keys */
	AssocStreamWs *pws; /* and its workspaces and modules in other contexts, as ws and mods */
	int npws;
	AssocCtxModule *pmods;
	int npmods;
	/* gpu, emu: the inputs (a bit an array index) that the attention
	 * kernels load two 16-bit elements at a time, from 4-byte aligned
	 * addresses only (the template's loads without cp.async) */
	unsigned word_in;
	LlvmKernel *k;      /* cpu: the compiled carrier, NULL elsewhere */
	LlvmKernel *narrow[2]; /* compiled on demand: 4 and 8 rows as lanes (LlvmOpts.fit_rows) */
	LlvmKernel *paged;  /* compiled on demand for assoc_run_paged: keys paged_opts.key_stride apart */
	LlvmOpts paged_opts;
	RtPool *pool;
	int threads;
	/* params whose values a run's verdict held at (lib_judge_params): the
	 * last LIB_JUDGED sets, each the spec's nparams values */
	double *judged_pv;
	int njudged, judged_next;
	int params_in_laws; /* 1: the laws read a param, -1: none (set by assoc_compile) */
	/* 1: the prover proves the laws with the params free, so a new value
	 * is checked against assume alone; -1: not; 0: not asked yet (it is
	 * after the first verdict at a run's values holds) */
	int params_laws_proved;
	Machine *assume_m; /* where it is 1: the assume evaluated at each new value, built once */
	int64_t verdicts; /* the verdicts runs reached at new values (assoc_kernel_verdicts) */
	char err[1024];
};

enum { LIB_JUDGED = 16 };

/* The verdict on k's carrier with its params at pv (the spec's order), as
 * `assoc run --param` reaches it: a merge may be lawful only for some
 * values; ASSOC_ELAWS with the reason in k->err where it fails.  Each set
 * that holds is kept, and not judged again. */
AssocStatus lib_judge_params(AssocKernel *k, const double *pv);

/* Another holder of k (an MPI handle), which lets it go with assoc_kernel_free. */
void lib_kernel_ref(AssocKernel *k);

/* assoc_run_heads with row 0 at position qpos (the spec's i of row r is
 * qpos + r): a paged sequence's queries are its last positions
 * (assoc_paged.c). */
AssocStatus lib_run_heads_at(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
			       int64_t qpos, const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams);

/* The workspace of a context and a stream in *ws (n of them), added on
 * first use; NULL when out of memory. */
GpuBufs *lib_stream_ws(AssocStreamWs **ws, int *n, void *ctx, void *stream);
/* The module slot of a context in *mods (n of them), added on first use;
 * NULL when out of memory. */
AssocCtxModule *lib_ctx_module(AssocCtxModule **mods, int *n, void *ctx);
/* 1 with why in err where nbufs and bufs are no buffer list, or rows x
 * len no shape (each from 0 to INT32_MAX); assoc_run's and an MPI
 * handle's refusal alike. */
int lib_bad_shape(int64_t rows, int64_t len, const AssocBuffer *bufs, int nbufs, char *err, size_t n);
/* The first of bufs whose name is no array of s (err says so, with the
 * array it may mean, or the arrays there are); -1 when all name one. */
int lib_stray_buffer(const AssocSpec *s, const AssocBuffer *bufs, int nbufs, char *err, size_t n);
/* Whether a buffer of bufs lies at an address that is no multiple of its
 * element's size, or of 4 bytes for the inputs in words (bits by array
 * index: AssocKernel.word_in) (err says which): 1, or 0. */
int lib_misaligned(const AssocSpec *s, unsigned words, const AssocBuffer *bufs, int nbufs, char *err, size_t n);
/* The inputs of k that need 4-byte alignment (lib_misaligned's words) in
 * a run on the caller's device memory (device_memory) or host arrays. */
unsigned lib_word_in(const AssocKernel *k, int device_memory);
/* Whether an output of bufs shares a byte with another buffer (err
 * names the two): 1, or 0 where each output has memory of its own. */
int lib_overlapping(const AssocSpec *s, const AssocBuffer *bufs, int nbufs, char *err, size_t n);
/* params by name into out (the spec's order); k->err says what is wrong. */
AssocStatus lib_params_of(AssocKernel *k, const AssocValue *p, int np, double *out);
/* k's paged module closed, with its workspaces and its modules in other
 * contexts (waiting for the work that reads them). */
void lib_release_paged(AssocKernel *k);
/* ASSOC_TUNE=off: the rule's variant, not the tuning cache's. */
int lib_tune_off(void);

/* Whether the prover proves c's merge commutative with the params at
 * these values (c's order): the commute flag of an MPI op (assoc_mpi.c). */
int lib_mpi_commutes(Carrier *c, const double *params);

#endif
