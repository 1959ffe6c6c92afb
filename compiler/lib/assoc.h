/* assoc.h: the libassoc C API: load a carrier spec, check its laws,
 * compile it for a device, run it on caller-owned arrays.
 *
 * Every function returns an AssocStatus; none exits or prints.  A handle
 * keeps the message of its last failure (assoc_spec_error,
 * assoc_kernel_error); a failed assoc_spec_load still returns a handle
 * holding the diagnostic, to be freed like any other, except on
 * ASSOC_EINVAL, where it sets *out to NULL (every function takes NULL
 * handles).  Running out of memory aborts the process in places deep in
 * the loader and the checker; ASSOC_ENOMEM comes from the rest.  A
 * handle is used by one thread at a time, and handles of different
 * threads run at once (on "emu", one launch at a time in the process: its
 * emulated device is one); a kernel runs on its own threads.  The kernels
 * of one spec are handles apart: each plans and judges its runs on a
 * carrier of its own, so siblings run at once on different threads, one
 * may be freed while another runs, and the spec's own thread may check
 * the spec or compile more kernels meanwhile.  Processes share the cache
 * folders: a file is written whole under a temporary name and renamed
 * into place, and read only where its seal holds.  The emulator builds its
 * modules in a private folder under $TMPDIR (or /tmp): the first build
 * gives SIGINT, SIGTERM and SIGHUP, where their action is still the
 * default, a handler that removes such folders and then ends the process
 * as the signal would have; the folders of processes killed outright
 * (SIGKILL) are removed by a later build, ten minutes on.
 *
 * Arrays (docs/spec-format.md's layout, row-major, in the spec's storage
 * types, f16/bf16 as 16-bit patterns, f8e4m3 as 8-bit ones):
 *   element inputs [rows][len][width]   column inputs [len][width]
 *   row inputs [rows][width]            finalize outputs [rows][width]
 *   map outputs, and finalize outputs of a scan, [rows][len][width]
 * assoc_array_info lists them all, inputs first, with the byte count a
 * shape needs. */
#ifndef ASSOC_H
#define ASSOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	ASSOC_OK = 0,
	ASSOC_EINVAL,   /* a NULL handle or pointer, an unknown name, rows or len under 0 or past 2^31 - 1, params that leave nothing to check */
	ASSOC_ESPEC,    /* the spec does not load (syntax, scopes, types) */
	ASSOC_ELAWS,    /* assoc_spec_check, assoc_compile, a run at params: a law or the reference does not hold */
	ASSOC_EDEVICE,  /* the device is unknown or not usable here */
	ASSOC_ECOMPILE, /* code generation failed */
	ASSOC_ESIZE,    /* a buffer's size does not fit the shape */
	ASSOC_ENOMEM
} AssocStatus;

typedef struct AssocSpec AssocSpec;
typedef struct AssocKernel AssocKernel;

typedef enum { ASSOC_ELEMENT, ASSOC_COLUMN, ASSOC_ROW, ASSOC_FINALIZE, ASSOC_MAP } AssocRole;

typedef struct {
	const char *name;
	AssocRole role;
	const char *type; /* "f32", "f16", "bf16", "f8e4m3", "f64", "i32", "i64", "bool" */
	int width;        /* components per element (the vector length, or 1) */
	int is_output;
} AssocArray;

/* A caller-owned array bound by name. */
typedef struct {
	const char *name;
	void *data;
	size_t bytes;
} AssocBuffer;

/* A name=value pair: a dim override at load, a param value at run. */
typedef struct {
	const char *name;
	double value;
} AssocValue;

const char *assoc_strerror(AssocStatus s);

/* A spec from its file (a regular file, or standard input by its name,
 * /dev/stdin or /dev/fd/N: a named pipe or a device is refused, not
 * waited on), or from len bytes of text; either past 1 MiB is refused
 * (ASSOC_ESPEC) before it is copied. */
AssocStatus assoc_spec_load(AssocSpec **out, const char *path, const AssocValue *dims, int ndims);
AssocStatus assoc_spec_load_text(AssocSpec **out, const char *text, size_t len, const AssocValue *dims,
				 int ndims);
const char *assoc_spec_error(const AssocSpec *s);
const char *assoc_spec_name(const AssocSpec *s);
/* The verdict of the command line's `assoc check`: identity,
 * associativity, claimed commutativity and the certificate by the prover
 * and by randomized trials (trials of associativity and commutativity; 0:
 * 20000; negative: ASSOC_EINVAL), and the results against the reference, empty and fully masked
 * rows included.  ASSOC_ELAWS when a law or the reference fails, with the
 * line that says which in assoc_spec_error; a law the prover leaves
 * unknown does not fail. */
AssocStatus assoc_spec_check(AssocSpec *s, int trials, uint64_t seed);
/* One line on the verdict last reached on s (by assoc_spec_check, or by
 * assoc_compile before it compiles), as `assoc check` says it: "NAME: ok
 * (...)" naming the laws proved, those the prover leaves unknown (held in
 * the trials only), and whether the results were checked against a
 * reference or there is none, and, where they do, that on rows holding NaN
 * or infinities the groupings of the fold disagree (devices may give
 * different results there) or the outputs disagree with the reference,
 * where the identity holds except at lifts of infinite inputs that tie
 * with its own infinity ("identity holds except at lifts where m = -inf
 * ..."), and where a float32 value is beyond the tolerance of a run on
 * some row ("float32 accuracy: ..."), each a warning: the carrier is still
 * accepted; or "NAME: FAILED (...)" with
 * the failure.
 * "" before any verdict. */
const char *assoc_spec_verdict(const AssocSpec *s);
/* The warnings of that verdict, one a line, each ending in a newline and
 * opening with what it is about, as `assoc check` names it ("identity:
 * holds except at lifts where ...", "special values: grouping: ...",
 * "special values: reference: ...", "float32 accuracy: ..."), with the
 * witness's detail; "" where there is none, or
 * where the verdict fails, or before any verdict. */
const char *assoc_spec_warnings(const AssocSpec *s);
/* trust nonzero: assoc_compile compiles the carrier whatever its verdict
 * (the command line's --trust-merge), and the runs of the kernels it
 * compiles meanwhile take any params (a kernel keeps the setting it was
 * compiled under); 0 (the
 * default): assoc_compile takes the verdict assoc_spec_check reached,
 * held or failed, or else reaches it on `assoc run`'s few trials (2000
 * where the prover leaves a law to the trials alone), and refuses with
 * ASSOC_ELAWS where it fails.  A spec whose identity, lift, merge or
 * mask reads a param is judged at the values a run gives instead, as
 * `assoc run --param` judges it (a merge may be lawful for some values
 * only, and disproved at others): the first run at new values reaches
 * that verdict (milliseconds), and a run where it fails gives ASSOC_ELAWS
 * and runs nothing; the kernel keeps the last 16 sets of values that
 * held.  Where that first verdict holds and the prover proves every law
 * with the params left free, later values reach no verdict: they are
 * only held to the part of assume over params alone (a value that is not
 * finite is still judged).  Values at which nothing can be checked give ASSOC_EINVAL
 * instead: a param that breaks a part of assume over params alone ("param
 * temp = -1 breaks 'assume' (temp > 0)", whatever the laws read), or one
 * at which every state folded from drawn inputs is NaN. */
AssocStatus assoc_spec_trust_merge(AssocSpec *s, int trust);
int assoc_array_count(const AssocSpec *s);
AssocStatus assoc_array_info(const AssocSpec *s, int i, AssocArray *info);
/* Bytes array i needs for rows x len; 0 for a bad index or a negative
 * shape, SIZE_MAX for a shape whose bytes a size_t cannot count. */
size_t assoc_array_bytes(const AssocSpec *s, int i, int64_t rows, int64_t len);
void assoc_spec_free(AssocSpec *s);
/* The spec's params in declaration order: their count, and the name and
 * storage type ("f32", "bool", ...) of param i (NULL for a bad index), as
 * assoc_run takes them by name. */
int assoc_param_count(const AssocSpec *s);
const char *assoc_param_name(const AssocSpec *s, int i);
const char *assoc_param_type(const AssocSpec *s, int i);

/* device: "cpu" (the LLVM backend, on the caller's arrays in place),
 * "gpu" (CUDA through the driver: each run copies the arrays to the
 * device and the outputs back), "emu" (the CUDA kernels on the CUDA
 * emulator, on CPU threads), "interp" (the IR interpreter: slow, the
 * baseline), or "auto": the first of gpu, cpu, emu, interp that compiles
 * it.  threads (cpu) 0: every core the process may use (its affinity
 * mask, a cgroup v2 quota); at most 1024.  A carrier whose verdict fails
 * is refused (ASSOC_ELAWS; see assoc_spec_trust_merge).
 * A failed compile still returns a kernel handle, unless out, s or device
 * is NULL: its assoc_kernel_error says why (for instance "gpu: no CUDA
 * driver: ..."), it runs nothing (ASSOC_EINVAL), and it is freed like any
 * other.  A kernel keeps its spec's carrier: assoc_spec_free may come
 * before assoc_kernel_free, and the spec is freed with the last of them
 * (the spec's handle is not to be used after its assoc_spec_free). */
AssocStatus assoc_compile(AssocSpec *s, const char *device, int threads, AssocKernel **out);
const char *assoc_kernel_error(const AssocKernel *k);
/* Every input and output of the spec bound once by name; params by name
 * (each param of the spec given once), each rounded to its declared type
 * where it is taken, as `assoc run --param` has it (an f32 0.7 is
 * 0.699999988 on every device, in the assume check and in the verdict at
 * it).  Outputs are overwritten; an
 * output that shares memory with an input or another output (in place
 * included), or a buffer at an address that is no multiple of its
 * element's size (on "emu", and in device memory on "gpu", of 4 bytes
 * for the 16-bit q, k and v of the attention kernels, which load two
 * elements at a time), is refused with ASSOC_EINVAL, as in every run
 * below.  Where
 * the kernel takes rows side by side as lanes (attention: 16 on AVX2 and
 * AVX-512 hosts) and a run has 4 to 15 rows (a view's, with heads), its
 * first such run compiles a narrower variant, kept with the kernel for
 * later runs (ASSOC_ECOMPILE if that fails).  Where the spec has an
 * assume, the inputs are checked against it first (by the interpreter, a
 * pass over every position): data that breaks it runs nothing and gives
 * ASSOC_EINVAL, assoc_kernel_error naming the head, row, position and
 * the values of the inputs assume reads. */
AssocStatus assoc_run(AssocKernel *k, int64_t rows, int64_t len, const AssocBuffer *bufs, int nbufs,
		      const AssocValue *params, int nparams);
/* Heads, as attention has them: the arrays hold heads query heads one
 * after another (element, row and output arrays [heads][...] as above),
 * over kv_heads key/value heads (column inputs [kv_heads][len][width]);
 * query head h reads key/value head h / (heads / kv_heads), heads a
 * multiple of kv_heads.  All heads run in one pass over the kernel's
 * threads, a view a key/value head: its query heads' rows one after
 * another, side by side where the kernel takes rows as lanes, so that
 * decoding's few rows load each key once (a view's rows are what the
 * narrower variant above counts).  The spec's i is the row within its
 * head.  assoc_run is heads = kv_heads = 1.  heads x rows at most 2^31 - 1. */
AssocStatus assoc_run_heads(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
			    const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams);
/* assoc_run_heads on device memory, for a kernel compiled for "gpu"
 * (ASSOC_EDEVICE with the reason for any other): bufs[i].data holds a
 * CUdeviceptr cast to void *, bytes its size (checked as assoc_run_heads
 * checks them); stream is a CUstream (NULL: the legacy default stream).
 * The launches are enqueued on stream and the call returns: no host copy,
 * no wait, as a CUDA library call on a stream.  It runs in the calling
 * thread's current CUDA context, where the kernel loads its module the
 * first time (the context must be on the kernel's device), or, with none
 * current, in the device's primary context, which it makes current (as the
 * CUDA runtime does): PyTorch's, CuPy's and the runtime's own context.
 * The variant is the tuning cache's choice for the shape (assoc_tune,
 * `assoc tune`) unless ASSOC_TUNE=off, the rule's otherwise.  Variants
 * that split the work keep partials in a workspace of device memory the
 * kernel owns, one for each context and stream it has run on, grown on
 * that stream with cuMemAllocAsync/cuMemFreeAsync where the driver has
 * them (with cuMemAlloc/cuMemFree, which waits for the device, where not):
 * launches on different streams never share one, and each stream's own
 * order keeps its reuse safe.  They stay until assoc_kernel_free, which
 * waits for each context that holds one (cuCtxSynchronize) and frees
 * them: a program that makes a stream for each call should reuse streams,
 * as PyTorch's and CuPy's pools do, or free the kernel now and then. */
AssocStatus assoc_run_device(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
			     const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams, void *stream);
/* Time the variants of a "gpu" kernel for this shape on the device, as
 * `assoc tune` does (inputs drawn, each candidate checked against the
 * reference, then timed), and store the fastest in the tuning cache
 * ($XDG_CACHE_HOME/assoc/tune), where every later run of a shape of its
 * bucket (rows and len rounded up to powers of two, the same heads) finds
 * it, in this process or another.  Leaves the calling thread's current
 * context as it was (where none was, the primary one, as
 * assoc_run_device).  ASSOC_EDEVICE for a kernel of another device, or
 * when no variant runs correctly (with the reason). */
AssocStatus assoc_tune(AssocKernel *k, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len,
		       const AssocValue *params, int nparams);
/* A batch of sequences over a paged key/value cache, as vLLM and
 * FlashAttention's paged attention keep one (docs/spec-format.md, "Paged
 * keys and values"): sequence b's key j is slot j % page_size of page
 * block_table[b * max_pages + j / page_size] of the pool; it has
 * seq_lens[b] keys (0 to max_pages x page_size) and, with cu_seqlens_q,
 * the queries cu_seqlens_q[b] to cu_seqlens_q[b + 1] - 1 (FlashAttention's
 * varlen offsets, batch + 1 of them, from 0, never decreasing), else rows
 * queries each.  page_size is a power of two from 16 to 256.  Entries of
 * the table past a sequence's last page are not read. */
typedef struct {
	int64_t batch, page_size, pages, max_pages;
	const int32_t *block_table; /* [batch][max_pages] */
	const int32_t *seq_lens;    /* [batch] */
	const int32_t *cu_seqlens_q; /* [batch + 1], or NULL */
	int64_t rows;               /* queries a sequence where cu_seqlens_q is NULL */
} AssocPaged;
/* Attention over a paged batch, on host arrays, for a carrier whose keys
 * are column inputs (no element inputs, map outputs or scan): column
 * inputs are the pool [pages][page_size][kv_heads][width], row inputs
 * [rows][heads][width] and finalize outputs [rows][heads][width], rows
 * the total of the queries, sequence after sequence.  Within a sequence
 * j counts its keys and len is its key count, and its queries are its
 * last positions (the causal mask aligned bottom-right, as serving
 * systems align it): query r of q is at i = len - q + r, below 0 for the
 * first ones where q > len.  On "gpu" and "emu" the whole batch runs in
 * one launch of the paged kernels (on gpu the pool, the layout's arrays
 * and the rows copied to the device once, the outputs back once), and on
 * "cpu" in one call that reads the keys in place through the table;
 * where no kernel of the carrier takes a batch (the row templates on gpu
 * and emu), and on "interp", each sequence's keys are gathered from the
 * pages and it runs as assoc_run_heads runs it, its outputs written into
 * the batch's.  On gpu and emu there a carrier that reads i (a causal
 * mask, a window) is refused (ASSOC_EDEVICE, saying so) for a sequence
 * whose queries are not its first positions: those kernels count i from
 * 0.  A buffer of 0
 * bytes may be NULL.  A sequence of no keys gives the finalize of the
 * identity.
 * A table entry outside the pool where a sequence reads, a length past
 * its row of the table, offsets that decrease: ASSOC_EINVAL
 * with the entry in assoc_kernel_error, nothing read or written; a buffer
 * of the wrong size: ASSOC_ESIZE.  Where a sequence gathered apart would
 * not fit this machine's memory (a table that reads one page over and
 * over makes a sequence of 2^31 keys out of a small pool): ASSOC_ENOMEM,
 * saying how much it needs, before anything runs. */
AssocStatus assoc_run_paged(AssocKernel *k, int64_t heads, int64_t kv_heads, const AssocPaged *paged,
			    const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams);
/* assoc_run_paged on device memory, for a kernel compiled for "gpu"
 * (ASSOC_EDEVICE with the reason for any other), as assoc_run_device runs
 * an unpaged one: every buffer's data a CUdeviceptr cast to void *, and
 * block_table, seq_lens and cu_seqlens_q of paged device pointers too,
 * none of them read on the host.  The batch runs in one launch enqueued
 * on stream (NULL: the legacy default stream), after an asynchronous
 * memset of the kernel's workspace: no host copy, no wait.  The layout is
 * the host form's, as serving systems keep it: column inputs the pool
 * [pages][page_size][kv_heads][width], row inputs and finalize outputs
 * [rows][heads][width], sequence after sequence (chunked prefill, several
 * queries a sequence, as well as decoding's one).
 * paged->rows is the most queries of any sequence (FlashAttention's
 * max_seqlen_q; with cu_seqlens_q NULL, the queries of each); the keys of
 * a sequence, at most max_pages x page_size, are planned for as that
 * many.  The row buffers' bytes give the queries in all (a whole number
 * of [heads][width] rows; batch x rows without cu_seqlens_q), and the
 * outputs' bytes must match them.  Values on the device (table entries,
 * lengths, offsets) are not checked: entries outside the pool, or offsets
 * past the queries, read or write outside the buffers, as in
 * FlashAttention.  ASSOC_EDEVICE also where no kernel of the carrier
 * takes a batch in one launch (a sequence a launch would read seq_lens on
 * the host). */
AssocStatus assoc_run_paged_device(AssocKernel *k, int64_t heads, int64_t kv_heads, const AssocPaged *paged,
				   const AssocBuffer *bufs, int nbufs, const AssocValue *params, int nparams,
				   void *stream);
/* assoc_array_bytes for the heads of assoc_run_heads; 0 also for heads
 * that are not a positive multiple of kv_heads. */
size_t assoc_array_bytes_heads(const AssocSpec *s, int i, int64_t heads, int64_t kv_heads, int64_t rows, int64_t len);
void assoc_kernel_free(AssocKernel *k);
/* The device a kernel runs on ("cpu", "gpu", "emu" or "interp": the one
 * "auto" picked); NULL for a failed compile. */
const char *assoc_kernel_device(const AssocKernel *k);
/* How many verdicts k's runs (and its MPI handles) have reached at param
 * values not judged before (assoc_spec_trust_merge says when a run
 * judges its params); 0 for NULL. */
int64_t assoc_kernel_verdicts(const AssocKernel *k);

#ifdef __cplusplus
}
#endif

#endif
